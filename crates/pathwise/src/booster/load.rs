//! Sequenced UDP load for `pathwise bench booster fec-rate`: a paced sender and a counting
//! receiver, cheap per datagram, so that on a small machine the CPU goes to the gateways under
//! test rather than to the load. (iperf3 3.12 makes one system call per datagram on one
//! thread; at a gigabit its client and server each needed most of a CPU on a 2-vCPU machine,
//! and even without a gateway it delivered only about 70 % of the offered rate.)
//!
//! Driven by [`run`], which the benchmark calls once per offered rate: it binds the receiver's
//! socket in host B's namespace and the sender's in host A's, runs [`receive`] and [`send`] on
//! threads inside those namespaces ([`Testbed::spawn_in_namespace`]) while the calling thread
//! only waits, tells the receiver when the sender has finished, and returns both sides' counts
//! ([`Report`]). [`send`] and [`receive`] take plain sockets, so the unit tests drive them over
//! loopback.
//!
//! - The sender writes datagrams of [`Load::len`] bytes of UDP payload, each beginning with its
//!   64-bit sequence number (big-endian, from 0) followed by incompressible filler, in GSO runs
//!   of [`Load::run`] datagrams: one `sendmmsg` message with `UDP_SEGMENT` per run
//!   ([`GsoSender`]). It sleeps between runs so that the *average* UDP payload rate is
//!   [`Load::payload_mbit`]; within a run the datagrams leave back to back (a burst of one run).
//!   A sender held up (descheduled) catches up by at most [`Load::max_lag`] of the schedule; beyond
//!   that the deficit is dropped, so a starved sender shows as a sent rate below the offered
//!   one instead of as one long burst.
//! - The receiver reads with `UDP_GRO` and `recvmmsg` ([`GroReceiver`]) on a socket with a
//!   large receive buffer ([`RECEIVE_BUFFER`]), marks each sequence number in a bitmap
//!   ([`SequenceSet`]), counts duplicates, and stops [`Load::drain`] after it is told the sender
//!   finished (datagrams still queued in the gateways arrive in that time).
//!
//! Both sides measure their own thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), so the report
//! shows what the load itself cost.

use super::netns::{self, Testbed};
use super::udp::{self, GRO_BUFFER, GroReceiver, GsoSender};
use crate::qos::bench::meter::thread_cpu_ns;
use anyhow::Context as _;
use nix::sys::socket::{setsockopt, sockopt};
use pathwise_booster::packet::{Packet, PacketPool};
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Bytes of the sequence number at the start of every datagram.
pub const SEQUENCE_LEN: usize = 8;
/// Receive buffer asked for the receiver's socket, bytes: about 30 ms of a gigabit, so a
/// receiver descheduled on a busy machine does not drop what the tunnel delivered.
/// `SO_RCVBUFFORCE` (root) goes past `net.core.rmem_max`.
pub const RECEIVE_BUFFER: usize = 4 << 20;
/// The highest sequence number the receiver tracks: 2^28 datagrams, 46 minutes at a gigabit of
/// 1300-byte datagrams, in a bitmap of at most 32 MiB. Anything above is a stray datagram.
const SEQUENCE_LIMIT: u64 = 1 << 28;
/// Messages per `recvmmsg` (each up to [`GRO_BUFFER`] bytes with GRO).
const RECEIVE_BATCH: usize = 32;
/// How long one `recvmmsg` waits before the receiver checks whether it should stop.
const RECEIVE_POLL: Duration = Duration::from_millis(20);

/// What to send.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    /// Offered rate, Mbit/s of UDP payload (as iperf3's `-b` counts).
    pub payload_mbit: f64,
    /// UDP payload per datagram, bytes (at least [`SEQUENCE_LEN`]).
    pub len: usize,
    /// How long to send.
    pub duration: Duration,
    /// Datagrams per GSO run (one `sendmmsg` message).
    pub run: usize,
    /// How long the receiver keeps reading after the sender finished.
    pub drain: Duration,
    /// How far behind its schedule the sender may fall and still catch up (sending the missed
    /// runs back to back). Larger: bigger bursts after a stall; smaller: a busy machine's
    /// scheduling delays turn into a lower sent rate.
    pub max_lag: Duration,
}

impl Load {
    /// Time between the starts of two runs at the offered rate.
    pub fn run_interval(&self) -> Duration {
        let bits = (self.run * self.len * 8) as f64;
        Duration::from_secs_f64(bits / (self.payload_mbit * 1e6))
    }

    fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.len >= SEQUENCE_LEN && self.len <= udp::GSO_MAX_BYTES,
            "datagrams of {} bytes cannot carry a sequence number",
            self.len
        );
        anyhow::ensure!(
            self.run >= 1 && self.run <= udp::GSO_MAX_SEGMENTS,
            "a GSO run of {} datagrams",
            self.run
        );
        anyhow::ensure!(
            self.payload_mbit > 0.0 && self.payload_mbit.is_finite(),
            "offered rate {} Mbit/s",
            self.payload_mbit
        );
        Ok(())
    }
}

/// What the sender did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SenderReport {
    /// Datagrams the kernel took (sequence numbers 0.. with the `failed` ones missing).
    pub datagrams: u64,
    /// Their UDP payload bytes.
    pub bytes: u64,
    /// Datagrams the kernel refused (their sequence numbers are never seen).
    pub failed: u64,
    /// Messages that carried more than one datagram (GSO in use).
    pub gso_messages: u64,
    /// From the first run to the end of the last run's slot in the schedule.
    pub elapsed: Duration,
    /// The sender thread's user + system time.
    pub cpu: Duration,
}

/// What the receiver saw.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReceiverReport {
    /// Distinct sequence numbers received.
    pub unique: u64,
    /// Datagrams whose sequence number had already been received.
    pub duplicates: u64,
    /// Datagrams too short for a sequence number, or numbered past [`SEQUENCE_LIMIT`].
    pub foreign: u64,
    /// UDP payload bytes of the distinct datagrams.
    pub bytes: u64,
    /// From the first datagram's arrival to the last's (to within one batch).
    pub span: Duration,
    /// The receiver thread's user + system time.
    pub cpu: Duration,
    /// The receive buffer the kernel granted, bytes (`SO_RCVBUF` as read back).
    pub receive_buffer: usize,
}

/// Both sides of one run of the load.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Report {
    /// The sender's counts.
    pub sent: SenderReport,
    /// The receiver's counts.
    pub received: ReceiverReport,
}

impl Report {
    /// Datagrams sent and not received, percent of those sent.
    pub fn residual_loss_pct(&self) -> f64 {
        let sent = self.sent.datagrams as f64;
        100.0 * (sent - self.received.unique as f64) / sent
    }

    /// Mbit/s of UDP payload sent, over the sender's schedule.
    pub fn sent_mbit(&self) -> f64 {
        self.sent.bytes as f64 * 8.0 / self.sent.elapsed.as_secs_f64() / 1e6
    }

    /// Mbit/s of distinct UDP payload received, over the receiver's first-to-last arrival.
    pub fn received_mbit(&self) -> f64 {
        self.received.bytes as f64 * 8.0 / self.received.span.as_secs_f64() / 1e6
    }

    /// Sender CPU time per datagram sent, µs.
    pub fn sender_cpu_us(&self) -> f64 {
        self.sent.cpu.as_secs_f64() * 1e6 / self.sent.datagrams as f64
    }

    /// Receiver CPU time per distinct datagram received, µs.
    pub fn receiver_cpu_us(&self) -> f64 {
        self.received.cpu.as_secs_f64() * 1e6 / self.received.unique as f64
    }
}

/// What [`SequenceSet::insert`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// First time this sequence number arrived.
    New,
    /// It had arrived before.
    Duplicate,
    /// Past [`SEQUENCE_LIMIT`]: not tracked.
    OutOfRange,
}

/// The sequence numbers received: one bit each, grown as higher numbers arrive.
#[derive(Debug, Default, Clone)]
pub struct SequenceSet {
    words: Vec<u64>,
    len: u64,
}

impl SequenceSet {
    /// Room for sequence numbers below `n` without growing.
    pub fn with_capacity(n: u64) -> Self {
        SequenceSet {
            words: Vec::with_capacity(n.min(SEQUENCE_LIMIT).div_ceil(64) as usize),
            len: 0,
        }
    }

    /// Record `seq`.
    pub fn insert(&mut self, seq: u64) -> Mark {
        if seq >= SEQUENCE_LIMIT {
            return Mark::OutOfRange;
        }
        let (word, bit) = ((seq / 64) as usize, seq % 64);
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        let w = &mut self.words[word];
        if *w & (1u64 << bit) != 0 {
            return Mark::Duplicate;
        }
        *w |= 1u64 << bit;
        self.len += 1;
        Mark::New
    }

    /// Distinct sequence numbers recorded.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether none was recorded.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `seq` was recorded.
    pub fn contains(&self, seq: u64) -> bool {
        self.words
            .get((seq / 64) as usize)
            .is_some_and(|w| w & (1u64 << (seq % 64)) != 0)
    }
}

/// The calling thread's CPU time so far.
fn thread_cpu() -> Duration {
    Duration::from_nanos(thread_cpu_ns() as u64)
}

/// Filler that no compressor shrinks (xorshift64), so the load is the same to any booster
/// chain; generated once, not per datagram.
fn filler(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 56) as u8
        })
        .collect()
}

/// Send `load` from `socket` to `to` (see the module documentation): sequence numbers from 0,
/// paced to the offered average rate.
pub fn send(socket: &UdpSocket, to: SocketAddr, load: &Load) -> anyhow::Result<SenderReport> {
    load.check()?;
    let cpu_before = thread_cpu();
    let gso = udp::probe_gso(socket, true).on;
    let mut tx = GsoSender::new(to, gso);
    let mut pool = PacketPool::default();
    let fill = filler(load.len);
    // One run's packets, filled once: per datagram only the sequence number is written.
    let mut run: Vec<Packet> = (0..load.run)
        .map(|_| {
            let mut p = pool.get();
            p.set_payload(&fill)
                .context("a datagram larger than a booster packet")?;
            Ok(p)
        })
        .collect::<anyhow::Result<_>>()?;
    let interval = load.run_interval();
    let mut report = SenderReport::default();
    let start = Instant::now();
    let end = start + load.duration;
    let mut due = start;
    let mut seq = 0u64;
    while due < end {
        let now = Instant::now();
        if now < due {
            std::thread::sleep(due - now);
        } else if now - due > load.max_lag {
            due = now - load.max_lag;
        }
        for p in &mut run {
            p.payload_mut()[..SEQUENCE_LEN].copy_from_slice(&seq.to_be_bytes());
            seq += 1;
        }
        let sent = tx.send(socket, &run);
        report.datagrams += sent.datagrams;
        report.bytes += sent.bytes;
        report.failed += sent.failed;
        report.gso_messages += sent.gso_messages;
        due += interval;
    }
    report.elapsed = due.max(Instant::now()) - start;
    report.cpu = thread_cpu().saturating_sub(cpu_before);
    Ok(report)
}

/// Make `socket`'s receive buffer `bytes` large, past `net.core.rmem_max` when allowed; returns
/// what the kernel granted.
pub fn set_receive_buffer(socket: &UdpSocket, bytes: usize) -> usize {
    // SO_RCVBUFFORCE needs CAP_NET_ADMIN; without it SO_RCVBUF gives what rmem_max allows.
    if setsockopt(socket, sockopt::RcvBufForce, &bytes).is_err() {
        let _ = setsockopt(socket, sockopt::RcvBuf, &bytes);
    }
    nix::sys::socket::getsockopt(socket, sockopt::RcvBuf).unwrap_or(0)
}

/// Count the datagrams arriving on `socket` (see the module documentation) until `drain` after
/// `sender_done` is set.
pub fn receive(
    socket: &UdpSocket,
    sender_done: &AtomicBool,
    drain: Duration,
) -> anyhow::Result<ReceiverReport> {
    let cpu_before = thread_cpu();
    let mut report = ReceiverReport {
        receive_buffer: nix::sys::socket::getsockopt(socket, sockopt::RcvBuf).unwrap_or(0),
        ..ReceiverReport::default()
    };
    udp::enable_gro(socket, true);
    socket.set_read_timeout(Some(RECEIVE_POLL))?;
    let mut rx = GroReceiver::new(RECEIVE_BATCH, GRO_BUFFER);
    let mut seen = SequenceSet::default();
    let (mut first, mut last) = (None, None);
    let mut done_at = None;
    loop {
        match rx.receive(socket) {
            Ok(n) => {
                let now = Instant::now();
                first.get_or_insert(now);
                last = Some(now);
                for i in 0..n {
                    for d in rx.datagrams(i) {
                        let Some(head) = d.first_chunk::<SEQUENCE_LEN>() else {
                            report.foreign += 1;
                            continue;
                        };
                        match seen.insert(u64::from_be_bytes(*head)) {
                            Mark::New => report.bytes += d.len() as u64,
                            Mark::Duplicate => report.duplicates += 1,
                            Mark::OutOfRange => report.foreign += 1,
                        }
                    }
                }
            }
            Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e).context("receiving the load"),
        }
        if done_at.is_none() && sender_done.load(Ordering::Acquire) {
            done_at = Some(Instant::now());
        }
        if done_at.is_some_and(|t| t.elapsed() >= drain) {
            break;
        }
    }
    report.unique = seen.len();
    report.span = last.zip(first).map_or(Duration::ZERO, |(l, f)| l - f);
    report.cpu = thread_cpu().saturating_sub(cpu_before);
    Ok(report)
}

/// Run `load` from host A to host B in the test bed (see the module documentation).
pub fn run(tb: &Testbed, load: Load) -> anyhow::Result<Report> {
    load.check()?;
    let done = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let receiver = {
        let done = Arc::clone(&done);
        tb.spawn_in_namespace(netns::HB, move || -> anyhow::Result<ReceiverReport> {
            // A fresh port per run: datagrams still in flight from the previous run are
            // refused instead of counted.
            let socket = UdpSocket::bind((netns::HOST_B, 0)).context("binding on host B")?;
            set_receive_buffer(&socket, RECEIVE_BUFFER);
            let _ = ready_tx.send(socket.local_addr()?);
            receive(&socket, &done, load.drain)
        })?
    };
    let Ok(to) = ready_rx.recv_timeout(Duration::from_secs(10)) else {
        // The receiver failed before binding (or hangs): its error says why.
        done.store(true, Ordering::Release);
        let why = join(receiver).err();
        return Err(why.unwrap_or_else(|| anyhow::anyhow!("the receiver never became ready")));
    };
    let sender = tb.spawn_in_namespace(netns::HA, move || -> anyhow::Result<SenderReport> {
        let socket = UdpSocket::bind("0.0.0.0:0").context("binding on host A")?;
        send(&socket, to, &load)
    });
    // Whatever became of the sender, the receiver is told, so that it ends.
    let sent = sender.and_then(join);
    done.store(true, Ordering::Release);
    let received = join(receiver);
    Ok(Report {
        sent: sent?,
        received: received?,
    })
}

/// The result of a thread from [`Testbed::spawn_in_namespace`].
fn join<T>(h: std::thread::JoinHandle<anyhow::Result<anyhow::Result<T>>>) -> anyhow::Result<T> {
    h.join()
        .map_err(|_| anyhow::anyhow!("the load's thread panicked"))??
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(datagrams: usize) -> Load {
        let run = 32;
        let len = 1300;
        // 200 Mbit/s: fast enough to need GSO runs, slow enough for a loaded test machine.
        let payload_mbit = 200.0;
        let l = Load {
            payload_mbit,
            len,
            duration: Duration::ZERO,
            run,
            drain: Duration::from_millis(300),
            // Never drop a deficit: the count sent is exact however loaded the machine is.
            max_lag: Duration::from_secs(3600),
        };
        // Exactly `datagrams / run` runs.
        Load {
            duration: l.run_interval() * (datagrams / run) as u32 - Duration::from_micros(1),
            ..l
        }
    }

    /// Receive on loopback (on a thread) what `send_through` delivers to it; returns the report.
    fn over_loopback(
        load: Load,
        send_through: impl FnOnce(SocketAddr) -> SenderReport + Send + 'static,
    ) -> Report {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert!(set_receive_buffer(&rx, RECEIVE_BUFFER) > 0);
        let to = rx.local_addr().unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let receiver = {
            let done = Arc::clone(&done);
            std::thread::spawn(move || receive(&rx, &done, load.drain).unwrap())
        };
        let sent = send_through(to);
        done.store(true, Ordering::Release);
        Report {
            sent,
            received: receiver.join().unwrap(),
        }
    }

    #[test]
    fn sequence_set_marks_new_duplicate_and_out_of_range() {
        let mut s = SequenceSet::with_capacity(10);
        assert_eq!(s.insert(5), Mark::New);
        assert_eq!(s.insert(64), Mark::New);
        assert_eq!(s.insert(5), Mark::Duplicate);
        assert_eq!(s.insert(0), Mark::New);
        assert_eq!(s.insert(SEQUENCE_LIMIT), Mark::OutOfRange);
        assert_eq!(s.len(), 3);
        assert!(s.contains(64) && s.contains(0) && !s.contains(63) && !s.contains(1 << 40));
    }

    /// Every datagram sent over loopback is received once: nothing lost, nothing doubled, the
    /// sent count is what the schedule asked for, and GSO was used.
    #[test]
    fn loopback_load_arrives_whole() {
        let load = load(3200);
        let r = over_loopback(load, move |to| {
            let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
            send(&tx, to, &load).unwrap()
        });
        assert_eq!((r.sent.datagrams, r.sent.failed), (3200, 0), "{r:?}");
        assert_eq!(r.sent.bytes, 3200 * 1300);
        assert_eq!(r.received.unique, 3200, "{r:?}");
        assert_eq!((r.received.duplicates, r.received.foreign), (0, 0));
        assert_eq!(r.received.bytes, r.sent.bytes);
        assert_eq!(r.residual_loss_pct(), 0.0);
        if udp::probe_gso(&UdpSocket::bind("127.0.0.1:0").unwrap(), true).on {
            assert_eq!(r.sent.gso_messages, 100, "{r:?}");
        }
        // Paced: 3200 datagrams at 200 Mbit/s take about 166 ms, not a burst.
        assert!(r.sent.elapsed >= Duration::from_millis(150), "{r:?}");
        assert!(r.sent_mbit() < 220.0, "{r:?}");
    }

    /// Datagrams a lossy relay drops are counted as lost, and those it sends twice as
    /// duplicates: the receiver's counts follow what arrived, not what was sent.
    #[test]
    fn loopback_load_counts_loss_and_duplicates() {
        let load = load(3200);
        let r = over_loopback(load, move |to| {
            // The sender sends to the relay; the relay (this thread's socket, no GRO, so one
            // datagram per read) forwards each datagram to the receiver, except every tenth,
            // and sends every tenth but one twice.
            let relay = UdpSocket::bind("127.0.0.1:0").unwrap();
            set_receive_buffer(&relay, RECEIVE_BUFFER);
            relay
                .set_read_timeout(Some(Duration::from_millis(300)))
                .unwrap();
            let relay_addr = relay.local_addr().unwrap();
            let sender = std::thread::spawn(move || {
                let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
                send(&tx, relay_addr, &load).unwrap()
            });
            let mut buf = [0u8; 2048];
            while let Ok(n) = relay.recv(&mut buf) {
                let seq = u64::from_be_bytes(buf[..8].try_into().unwrap());
                let copies = match seq % 10 {
                    3 => 0,
                    7 => 2,
                    _ => 1,
                };
                for _ in 0..copies {
                    relay.send_to(&buf[..n], to).unwrap();
                }
            }
            sender.join().unwrap()
        });
        assert_eq!(r.sent.datagrams, 3200, "{r:?}");
        assert_eq!(r.received.unique, 2880, "{r:?}");
        assert_eq!(r.received.duplicates, 320, "{r:?}");
        assert!((r.residual_loss_pct() - 10.0).abs() < 1e-9, "{r:?}");
    }
}
