//! How long each router of the namespace chain holds a Path and a Resv, from packet timestamps
//! the kernel takes — outside the daemons and without polling them (`bench rsvp-chain`).
//!
//! [`Capture`] opens one packet socket (AF_PACKET, SOCK_DGRAM, ETH_P_ALL) per router, on a
//! thread that entered the router's namespace (a socket keeps the namespace it was made in),
//! and reads until [`Capture::stop`]. A packet socket sees its interfaces' frames in both
//! directions (RFC 2205 §2.1, Figure 9: a Path comes in on the incoming interface and leaves
//! on the outgoing one, a Resv the other way). The kernel stamps a received frame when the
//! device hands it to the stack (`netif_rx`, before IP delivers it to the daemon) and a sent one
//! when the device transmits it (`dev_queue_xmit_nit`, after the qdisc), both on
//! CLOCK_REALTIME; SO_TIMESTAMPNS hands the stamp over. ETH_P_ALL rather than
//! ETH_P_IP because only ETH_P_ALL taps see outgoing frames. So that capturing costs the
//! routers as little as possible while they are being timed, the threads read their sockets
//! every few milliseconds instead of blocking on them (a blocked reader is woken for every
//! frame, on the receive path being timed), and keep the RSVP frames (IP protocol 46, RFC 2205
//! §3.3) raw, parsing them only when stopped.
//!
//! [`transit_times`] pairs the records of one router into per-session durations: the first
//! arrival of a message type for a session, then the first departure after it. RFC 2205 §2.3
//! has a node forward a state change "immediately" and a refresh later, at its own refresh
//! timer, so only the first of each counts; a message that arrived and never left is
//! [`Transit::NeverLeft`], not a duration.

use anyhow::Context as _;
use nix::sys::socket::{
    AddressFamily, ControlMessageOwned, LinkAddr, MsgFlags, SockFlag, SockProtocol, SockType,
    recvmsg, setsockopt, socket, sockopt,
};
use pathwise_rsvp::wire::message::refresh::bundle_messages;
use pathwise_rsvp::wire::{Message, MsgType, Session};
use std::collections::BTreeMap;
use std::io::IoSliceMut;
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// IP protocol number of RSVP (RFC 2205 §3.3).
const IPPROTO_RSVP: u8 = 46;
/// `sll_pkttype` of a frame the host sent (linux/if_packet.h).
const PACKET_OUTGOING: u8 = 4;
/// `sll_pkttype` of a frame for another host, seen only in promiscuous mode: not ours.
const PACKET_OTHERHOST: u8 = 3;
/// How often a capture thread reads what its socket queued. It never blocks on the socket: a
/// waiting reader is woken for every frame, by the softirq that delivers it, on the router's
/// receive path between the arrival stamp and the daemon, and would then compete with the
/// daemon for a CPU. The stamps are the kernel's, so reading later changes none of them.
const READ_EVERY: Duration = Duration::from_millis(10);
/// The kernel enables receive timestamps from a work item once the first socket asks
/// (`net_enable_timestamp`); until then a frame is stamped when read, not when it came.
const TIMESTAMPS_SETTLE: Duration = Duration::from_millis(20);
/// Receive buffer per capture socket: what a router sends and receives in [`READ_EVERY`] (one
/// Path and one Resv per session, in and out), with room for the thread to wait for a CPU on
/// a busy machine, must not be dropped.
const RECEIVE_BUFFER: usize = 4 << 20;

/// Which way a message crossed the router's interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Received from a neighbour.
    Arrived,
    /// Sent by the router.
    Departed,
}

/// One RSVP message seen at a router.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The kernel's timestamp (CLOCK_REALTIME, since the Unix epoch).
    pub at: Duration,
    /// The interface it crossed.
    pub interface: String,
    /// In or out.
    pub direction: Direction,
    /// Its type.
    pub msg_type: MsgType,
    /// Its SESSION (RFC 2205 §A.1), flags cleared ([`Session::identity`]).
    pub session: Session,
}

/// What one router's capture saw.
#[derive(Clone, Debug)]
pub struct NodeRecords {
    /// The router's name ("r1").
    pub node: String,
    /// Its RSVP messages, in the order the socket read them.
    pub records: Vec<Record>,
    /// RSVP frames that did not parse as RSVP messages with a SESSION (Hello, integrity
    /// handshakes, or malformed).
    pub unparsed: usize,
    /// Frames that came without a kernel timestamp, dropped.
    pub untimed: usize,
    /// Frames the kernel dropped because the capture socket's buffer was full
    /// (`PACKET_STATISTICS`): any of them may be a message this router's times miss.
    pub dropped: u64,
}

/// An RSVP frame as the capture thread keeps it: parsed after the runs.
#[derive(Debug)]
struct Frame {
    at: Duration,
    interface: usize,
    direction: Direction,
    rsvp: Vec<u8>,
}

/// What a capture thread hands back.
#[derive(Debug)]
struct Captured {
    interfaces: Vec<String>,
    frames: Vec<Frame>,
    untimed: usize,
    dropped: u64,
}

/// Packet capture running in the routers' namespaces; [`Capture::stop`] ends it.
#[derive(Debug)]
pub struct Capture {
    stop: Arc<AtomicBool>,
    threads: Vec<(String, JoinHandle<anyhow::Result<Captured>>)>,
}

impl Capture {
    /// Start capturing RSVP on `interfaces` of each node in `nodes` (its name, and its
    /// namespace under /var/run/netns). Returns once every socket is open and timestamping.
    pub fn start(nodes: &[(&str, &str)], interfaces: &[&str]) -> anyhow::Result<Capture> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut capture = Capture {
            stop: stop.clone(),
            threads: Vec::new(),
        };
        let mut ready = Vec::new();
        for &(node, netns) in nodes {
            let path = Path::new("/var/run/netns").join(netns);
            let ns = std::fs::File::open(&path)
                .with_context(|| format!("opening {}", path.display()))?;
            let (tx, rx) = std::sync::mpsc::sync_channel(1);
            let interfaces: Vec<String> = interfaces.iter().map(|s| s.to_string()).collect();
            let stop = stop.clone();
            let thread = std::thread::Builder::new()
                .name(format!("capture-{node}"))
                .spawn(move || {
                    let opened = nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWNET)
                        .context("entering the namespace")
                        .and_then(|()| open(&interfaces));
                    match opened {
                        Ok((fd, ifindex)) => {
                            let _ = tx.send(Ok(()));
                            read_until(&fd, &ifindex, interfaces, &stop)
                        }
                        Err(e) => {
                            let _ = tx.send(Err(format!("{e:#}")));
                            Err(e)
                        }
                    }
                })?;
            capture.threads.push((node.to_string(), thread));
            ready.push((node, rx));
        }
        for (node, rx) in ready {
            match rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => anyhow::bail!("capture at {node}: {e}"),
                Err(_) => anyhow::bail!("capture at {node}: the thread ended"),
            }
        }
        std::thread::sleep(TIMESTAMPS_SETTLE);
        Ok(capture)
    }

    /// Stop, read what is still queued, and parse every node's frames.
    pub fn stop(mut self) -> anyhow::Result<Vec<NodeRecords>> {
        self.stop.store(true, Ordering::Relaxed);
        std::mem::take(&mut self.threads)
            .into_iter()
            .map(|(node, thread)| {
                let captured = thread
                    .join()
                    .map_err(|_| anyhow::anyhow!("capture at {node} panicked"))?
                    .with_context(|| format!("capture at {node}"))?;
                Ok(parse(node, captured))
            })
            .collect()
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        // A capture dropped on an error path must not leave its threads reading forever.
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// In the router's namespace: the packet socket, timestamping, and the index of each of
/// `interfaces` (frames on other interfaces, loopback among them, are not kept).
fn open(interfaces: &[String]) -> anyhow::Result<(OwnedFd, Vec<u32>)> {
    let ifindex = interfaces
        .iter()
        .map(|name| {
            nix::net::if_::if_nametoindex(name.as_str())
                .with_context(|| format!("interface {name}"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let fd = socket(
        AddressFamily::Packet,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::EthAll,
    )
    .context("opening a packet socket")?;
    setsockopt(&fd, sockopt::ReceiveTimestampns, &true)?;
    // Root may exceed net.core.rmem_max; fall back to the ordinary limit otherwise.
    if setsockopt(&fd, sockopt::RcvBufForce, &RECEIVE_BUFFER).is_err() {
        setsockopt(&fd, sockopt::RcvBuf, &RECEIVE_BUFFER)?;
    }
    Ok((fd, ifindex))
}

/// Read what is queued every [`READ_EVERY`] until told to stop, then once more; keep the RSVP
/// frames.
fn read_until(
    fd: &OwnedFd,
    ifindex: &[u32],
    interfaces: Vec<String>,
    stop: &AtomicBool,
) -> anyhow::Result<Captured> {
    let mut captured = Captured {
        interfaces,
        frames: Vec::new(),
        untimed: 0,
        dropped: 0,
    };
    let mut buf = vec![0u8; 65_536];
    let mut cmsg = nix::cmsg_space!(nix::sys::time::TimeSpec);
    loop {
        // Looked at before the pass, so the last pass reads every frame sent before the stop.
        let last = stop.load(Ordering::Relaxed);
        loop {
            let mut iov = [IoSliceMut::new(&mut buf)];
            let flags = MsgFlags::MSG_DONTWAIT;
            let (len, from, at) =
                match recvmsg::<LinkAddr>(fd.as_raw_fd(), &mut iov, Some(&mut cmsg), flags) {
                    Ok(m) => {
                        let at = m.cmsgs().ok().and_then(|mut c| {
                            c.find_map(|c| match c {
                                ControlMessageOwned::ScmTimestampns(ts) => {
                                    Some(Duration::new(ts.tv_sec() as u64, ts.tv_nsec() as u32))
                                }
                                _ => None,
                            })
                        });
                        (m.bytes, m.address, at)
                    }
                    Err(nix::errno::Errno::EAGAIN) => break,
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(e) => return Err(e).context("reading the packet socket"),
                };
            if let Some(from) = from {
                keep(&mut captured, ifindex, &from, at, &buf[..len]);
            }
        }
        if last {
            captured.dropped = drops(fd)?;
            return Ok(captured);
        }
        std::thread::sleep(READ_EVERY);
    }
}

use nix::{getsockopt_impl, sockopt_impl};

sockopt_impl!(
    /// `PACKET_STATISTICS` (linux/if_packet.h): frames a packet socket received and dropped
    /// since the option was last read.
    PacketStatistics,
    GetOnly,
    libc::SOL_PACKET,
    libc::PACKET_STATISTICS,
    libc::tpacket_stats
);

/// How many frames the kernel dropped for want of room in the socket's buffer since it was
/// opened (read once: reading `PACKET_STATISTICS` resets it).
fn drops(fd: &OwnedFd) -> anyhow::Result<u64> {
    let stats = nix::sys::socket::getsockopt(fd, PacketStatistics)
        .context("reading the packet socket's drops")?;
    Ok(u64::from(stats.tp_drops))
}

/// Keep a frame `from` an interface of `ifindex` if it is RSVP.
fn keep(
    captured: &mut Captured,
    ifindex: &[u32],
    from: &LinkAddr,
    at: Option<Duration>,
    frame: &[u8],
) {
    let Some(interface) = ifindex.iter().position(|&i| i as usize == from.ifindex()) else {
        return;
    };
    let direction = match from.pkttype() {
        PACKET_OUTGOING => Direction::Departed,
        PACKET_OTHERHOST => return,
        _ => Direction::Arrived,
    };
    let Some(rsvp) = rsvp_payload(u16::from_be(from.protocol()), frame) else {
        return;
    };
    let Some(at) = at else {
        captured.untimed += 1;
        return;
    };
    captured.frames.push(Frame {
        at,
        interface,
        direction,
        rsvp: rsvp.to_vec(),
    });
}

/// The RSVP message in an IP packet of EtherType `ethertype`, if it carries one (RFC 2205
/// §3.3: raw IP datagrams of protocol 46, IPv4 or IPv6).
fn rsvp_payload(ethertype: u16, packet: &[u8]) -> Option<&[u8]> {
    let (protocol, range) = match ethertype {
        0x0800 => {
            let p = pathwise_net::ip::parse_ipv4(packet).ok()?;
            (p.protocol, p.payload_start..p.payload_end)
        }
        0x86dd => {
            let p = pathwise_net::ip::parse_ipv6(packet).ok()?;
            (p.protocol, p.payload_start..p.payload_end)
        }
        _ => return None,
    };
    (protocol == IPPROTO_RSVP)
        .then(|| packet.get(range))
        .flatten()
}

/// A node's frames as records: every message with a SESSION, those of a Bundle (RFC 2961
/// §3.1) one by one.
fn parse(node: String, captured: Captured) -> NodeRecords {
    let mut out = NodeRecords {
        node,
        records: Vec::new(),
        unparsed: 0,
        untimed: captured.untimed,
        dropped: captured.dropped,
    };
    for f in &captured.frames {
        let bundled = matches!(
            Message::parse_header(&f.rsvp),
            Ok(h) if h.msg_type == MsgType::Bundle
        );
        let messages: Vec<&[u8]> = if bundled {
            bundle_messages(&f.rsvp).filter_map(Result::ok).collect()
        } else {
            vec![&f.rsvp]
        };
        for m in messages {
            match Message::parse(m) {
                Ok((header, message)) => match message.session() {
                    Some(s) => out.records.push(Record {
                        at: f.at,
                        interface: captured.interfaces[f.interface].clone(),
                        direction: f.direction,
                        msg_type: header.msg_type,
                        session: s.identity(),
                    }),
                    None => out.unparsed += 1,
                },
                Err(_) => out.unparsed += 1,
            }
        }
    }
    out
}

/// What a router did with the first message of a type for one session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transit {
    /// It sent it on this long after it arrived.
    Forwarded(Duration),
    /// It arrived and no message of its type for its session left after it.
    NeverLeft,
}

impl Transit {
    /// How long the router held it, if it left.
    pub fn forwarded(self) -> Option<Duration> {
        match self {
            Transit::Forwarded(d) => Some(d),
            Transit::NeverLeft => None,
        }
    }
}

/// Per session, at one router: from the first arrival of a `msg_type` message to the first
/// departure of one after it. Records are taken by their timestamps, not their order; sessions
/// whose `msg_type` never arrived (the node originated it, or it never came) are not listed.
pub fn transit_times(records: &[Record], msg_type: MsgType) -> BTreeMap<Session, Transit> {
    let of_type = || records.iter().filter(|r| r.msg_type == msg_type);
    let mut first_in: BTreeMap<Session, Duration> = BTreeMap::new();
    for r in of_type().filter(|r| r.direction == Direction::Arrived) {
        let at = first_in.entry(r.session.identity()).or_insert(r.at);
        *at = (*at).min(r.at);
    }
    let mut first_out: BTreeMap<Session, Duration> = BTreeMap::new();
    for r in of_type().filter(|r| r.direction == Direction::Departed) {
        let session = r.session.identity();
        // A departure before the first arrival is not this arrival's (the router's own, or the
        // capture began late): skip it.
        if first_in.get(&session).is_none_or(|&arrived| r.at < arrived) {
            continue;
        }
        let at = first_out.entry(session).or_insert(r.at);
        *at = (*at).min(r.at);
    }
    first_in
        .into_iter()
        .map(|(s, arrived)| {
            let t = match first_out.get(&s) {
                Some(&left) => Transit::Forwarded(left - arrived),
                None => Transit::NeverLeft,
            };
            (s, t)
        })
        .collect()
}

/// One router's share of each session's setup (RFC 2205 §2.1): its Path time plus its Resv
/// time, for the sessions it forwarded both of.
pub fn setup_times(
    path: &BTreeMap<Session, Transit>,
    resv: &BTreeMap<Session, Transit>,
) -> BTreeMap<Session, Duration> {
    path.iter()
        .filter_map(|(s, p)| Some((*s, p.forwarded()? + resv.get(s)?.forwarded()?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};

    fn session(port: u16) -> Session {
        Session::ip(IpAddr::V4(Ipv4Addr::new(10, 91, 4, 2)), 17, port)
    }

    /// A capture socket whose buffer overflows reports the frames it lost, once (the kernel
    /// resets the count when it is read). Root only: a namespace of its own with `lo` up.
    #[test]
    fn a_full_capture_buffer_is_counted_as_drops() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped a_full_capture_buffer_is_counted_as_drops: needs root");
            return;
        }
        std::thread::spawn(|| {
            // This thread alone enters the namespace; `ip` forked from it is in it too.
            nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
            let up = std::process::Command::new("ip")
                .args(["link", "set", "lo", "up"])
                .status()
                .unwrap();
            assert!(up.success());
            let (fd, _) = open(&["lo".to_string()]).unwrap();
            // The smallest buffer the kernel allows holds a few frames.
            setsockopt(&fd, sockopt::RcvBuf, &0).unwrap();
            let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            for _ in 0..100 {
                udp.send_to(&[0u8; 1000], "127.0.0.1:9").unwrap();
            }
            let lost = drops(&fd).unwrap();
            assert!(lost > 0, "{lost}");
            assert_eq!(drops(&fd).unwrap(), 0, "read once");
        })
        .join()
        .unwrap();
    }

    fn rec(us: u64, direction: Direction, msg_type: MsgType, port: u16) -> Record {
        Record {
            at: Duration::from_micros(us),
            interface: if direction == Direction::Arrived {
                "w0"
            } else {
                "e0"
            }
            .into(),
            direction,
            msg_type,
            session: session(port),
        }
    }

    use Direction::{Arrived, Departed};
    use MsgType::{Path, Resv};

    #[test]
    fn each_session_is_timed_from_its_first_arrival_to_its_first_departure() {
        let records = [
            rec(1_000, Arrived, Path, 1),
            rec(1_040, Departed, Path, 1),
            rec(2_000, Arrived, Path, 2),
            rec(2_100, Departed, Path, 2),
            rec(3_000, Arrived, Resv, 1),
            rec(3_070, Departed, Resv, 1),
        ];
        let path = transit_times(&records, Path);
        assert_eq!(
            path,
            BTreeMap::from([
                (session(1), Transit::Forwarded(Duration::from_micros(40))),
                (session(2), Transit::Forwarded(Duration::from_micros(100))),
            ])
        );
        let resv = transit_times(&records, Resv);
        assert_eq!(
            resv,
            BTreeMap::from([(session(1), Transit::Forwarded(Duration::from_micros(70)))])
        );
        assert_eq!(
            setup_times(&path, &resv),
            BTreeMap::from([(session(1), Duration::from_micros(110))])
        );
    }

    #[test]
    fn refreshes_count_for_nothing_in_any_order() {
        // Read out of order (two interfaces, one socket): refreshes of the Path in and out
        // after the first pair, listed before it, change nothing.
        let records = [
            rec(31_000_060, Departed, Path, 1),
            rec(31_000_000, Arrived, Path, 1),
            rec(1_000, Arrived, Path, 1),
            rec(1_050, Departed, Path, 1),
            rec(30_000_000, Departed, Path, 1),
        ];
        assert_eq!(
            transit_times(&records, Path),
            BTreeMap::from([(session(1), Transit::Forwarded(Duration::from_micros(50)))])
        );
    }

    #[test]
    fn a_message_that_never_left_is_missing_not_zero() {
        let records = [
            rec(1_000, Arrived, Path, 1),
            rec(1_030, Departed, Path, 1),
            rec(2_000, Arrived, Resv, 1),
            // A Resv out before the Resv came in is not its departure.
            rec(1_500, Departed, Resv, 1),
        ];
        let path = transit_times(&records, Path);
        let resv = transit_times(&records, Resv);
        assert_eq!(resv, BTreeMap::from([(session(1), Transit::NeverLeft)]));
        assert!(setup_times(&path, &resv).is_empty());
    }

    #[test]
    fn messages_the_router_only_sent_and_other_types_are_not_listed() {
        let records = [
            rec(1_000, Departed, Path, 1),
            rec(1_100, Arrived, MsgType::PathTear, 1),
            rec(1_200, Departed, MsgType::PathTear, 1),
        ];
        assert!(transit_times(&records, Path).is_empty());
        assert_eq!(
            transit_times(&records, MsgType::PathTear),
            BTreeMap::from([(session(1), Transit::Forwarded(Duration::from_micros(100)))])
        );
    }

    #[test]
    fn flags_do_not_split_a_session() {
        // E_Police is turned off on the way (RFC 2205 §A.1): the same session either side.
        let mut policed = rec(1_000, Arrived, Path, 1);
        policed.session.flags = Session::E_POLICE;
        let records = [policed, rec(1_020, Departed, Path, 1)];
        assert_eq!(
            transit_times(&records, Path),
            BTreeMap::from([(session(1), Transit::Forwarded(Duration::from_micros(20)))])
        );
    }

    #[test]
    fn rsvp_is_found_in_ipv4_and_ipv6_and_nothing_else() {
        let rsvp = [0x10, 0x01, 0, 0, 0x40, 0, 0, 8];
        let spec = pathwise_net::ip::Ipv4HeaderSpec {
            src: Ipv4Addr::new(10, 91, 1, 1),
            dst: Ipv4Addr::new(10, 91, 4, 2),
            protocol: IPPROTO_RSVP,
            ttl: 64,
            tos: 0,
            router_alert: Some(0),
            payload_len: rsvp.len(),
        };
        let mut hdr = [0u8; 24];
        let hlen = pathwise_net::ip::build_ipv4_header(&spec, &mut hdr).unwrap();
        let v4 = [&hdr[..hlen], &rsvp].concat();
        assert_eq!(rsvp_payload(0x0800, &v4), Some(&rsvp[..]));
        assert_eq!(rsvp_payload(0x0806, &v4), None);
        let mut udp = v4.clone();
        udp[9] = 17;
        assert_eq!(rsvp_payload(0x0800, &udp), None);
        // IPv6 with a hop-by-hop header carrying Router Alert (RFC 2711), then RSVP.
        let mut v6 = vec![0x60, 0, 0, 0, 0, 16, 0, 64];
        v6.extend_from_slice(&[0; 32]);
        let mut hbh = pathwise_net::ip::hop_by_hop_router_alert(1);
        hbh[0] = IPPROTO_RSVP;
        v6.extend_from_slice(&hbh);
        v6.extend_from_slice(&rsvp);
        assert_eq!(rsvp_payload(0x86dd, &v6), Some(&rsvp[..]));
    }
}
