//! Messaging-association streams over datagrams, for drivers that only carry datagrams (the
//! simulator).
//!
//! [`StreamAdapter`] wraps a [`GistEngine`] and is itself an [`Engine`]: it turns the engine's
//! stream requests ([`GistEngine::poll_stream`]) into segments sent as UDP datagrams to
//! [`SEGMENT_PORT`], and segments it receives into [`StreamInput`]s. It stands where TCP stands
//! under the Linux driver and is TCP-like in what matters to someone injecting segments, on or
//! off the path:
//!
//! - each connection starts at an initial sequence number drawn from the adapter's generator,
//!   seeded from the engine's seed (so from the simulation's: a run replays exactly; a
//!   restarted node has a new seed, so new numbers);
//! - every segment carries a sequence and an acknowledgment number; data is accepted only
//!   inside the receive window, an acknowledgment only for what was sent (RFC 5961 §5.2);
//! - a CRC-32C over the segment: a corrupted segment is dropped;
//! - a three-way opening (a SYN-ACK must acknowledge our SYN), simultaneous opening, a reset
//!   for a segment of an unknown connection, and resets and SYNs handled as RFC 5961 §3.2 and
//!   §4.2 recommend (only an exactly matching reset closes; an in-window one, or a SYN on an
//!   open connection, gets a challenge ACK);
//! - a FIN on close.
//!
//! Every segment received is either accepted or dropped and counted by reason
//! ([`StreamStats`]). What it is not: sequence numbers count segments, not bytes; the window is
//! a fixed [`WINDOW`] segments; no congestion control; everything unacknowledged is sent again
//! on a doubling timeout. A "TLS" stream is a second stream to the same peer (no cryptography:
//! the simulator checks the engine's negotiation, not TLS).
//!
//! RFC 5961 is not among the texts in the project's RFC folder; the rules here follow its
//! sections 3.2 (resets), 4.2 (SYNs) and 5.2 (acknowledgments) as published, and RFC 9293
//! (TCP) §3.10.7 for the rest, also not in the folder.

use crate::engine::{GistEngine, GistEvent, MaTransport, StreamInput, StreamOp};
use pathwise_core::engine::Engine;
use pathwise_core::io::{Received, Transmit, Transport};
use pathwise_core::rand::Rng;
use pathwise_core::rng::SeededRng;
use pathwise_core::route::RouteChange;
use pathwise_core::time::{Duration, Instant};
use std::collections::{BTreeMap, VecDeque};
use std::net::IpAddr;

/// UDP port the segments travel on.
pub const SEGMENT_PORT: u16 = 30000;
/// Segments a receiver accepts ahead of the next one it expects, and a sender has outstanding.
pub const WINDOW: u32 = 64;
const MAX_SEGMENT: usize = 1200;
const RTO: Duration = Duration::from_millis(200);
const RTO_MAX: Duration = Duration::from_secs(4);
const MAX_TRIES: u32 = 12;
/// Mixed into the engine's seed for the adapter's own generator.
const ISN_SEED: u64 = 0x0074_6370_5f69_736e;

/// Segment layout: `kind (1) | transport (1) | reserved (2) | seq (4) | ack (4) | crc (4) |
/// payload`.
mod field {
    use std::ops::Range;
    pub const KIND: usize = 0;
    pub const TRANSPORT: usize = 1;
    pub const SEQ: Range<usize> = 4..8;
    pub const ACK: Range<usize> = 8..12;
    pub const CRC: Range<usize> = 12..16;
    pub const PAYLOAD: usize = 16;
}

/// Length of a segment's header.
pub const HEADER_LEN: usize = field::PAYLOAD;

/// What a segment is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentKind {
    /// Opens a connection; `seq` is the initial sequence number.
    Syn,
    /// Answers a SYN: `seq` is the answerer's initial sequence number, `ack` the SYN's plus one.
    SynAck,
    /// One data segment (one sequence number).
    Data,
    /// An acknowledgment alone.
    Ack,
    /// The sender closed the connection.
    Fin,
    /// Reset: the connection is gone.
    Rst,
}

impl SegmentKind {
    const ALL: [SegmentKind; 6] = [
        SegmentKind::Syn,
        SegmentKind::SynAck,
        SegmentKind::Data,
        SegmentKind::Ack,
        SegmentKind::Fin,
        SegmentKind::Rst,
    ];

    fn code(self) -> u8 {
        match self {
            SegmentKind::Syn => 1,
            SegmentKind::SynAck => 2,
            SegmentKind::Data => 3,
            SegmentKind::Ack => 4,
            SegmentKind::Fin => 5,
            SegmentKind::Rst => 6,
        }
    }

    fn from_code(c: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.code() == c)
    }

    /// A kind drawn at random (for hostile nodes forging segments).
    pub fn random(rng: &mut impl Rng) -> Self {
        Self::ALL[rng.random_range(0..Self::ALL.len())]
    }
}

/// Why a segment could not be parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SegmentError {
    /// Shorter than the header.
    #[error("segment of {0} bytes, shorter than its header")]
    Truncated(usize),
    /// The CRC-32C does not match the bytes.
    #[error("checksum {found:#010x}, computed {computed:#010x}")]
    BadChecksum {
        /// In the segment.
        found: u32,
        /// Over the segment.
        computed: u32,
    },
    /// Not a kind this adapter knows.
    #[error("unknown segment kind {0}")]
    UnknownKind(u8),
    /// Neither TCP (0) nor TLS (1).
    #[error("unknown transport {0}")]
    UnknownTransport(u8),
}

/// A segment, parsed. Parsing never panics; [`Segment::emit`] computes the checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment<'a> {
    /// What it is.
    pub kind: SegmentKind,
    /// Which of the two streams to the peer.
    pub transport: MaTransport,
    /// Sequence number (of the data, or the sender's next one).
    pub seq: u32,
    /// The next sequence number the sender expects from us.
    pub ack: u32,
    /// Data (on [`SegmentKind::Data`]).
    pub payload: &'a [u8],
}

impl<'a> Segment<'a> {
    /// Parse `bytes`: the checksum first, so a corrupted kind or length reads as corruption.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, SegmentError> {
        if bytes.len() < HEADER_LEN {
            return Err(SegmentError::Truncated(bytes.len()));
        }
        let found = u32::from_be_bytes(bytes[field::CRC].try_into().expect("4 bytes"));
        let computed = checksum(bytes);
        if found != computed {
            return Err(SegmentError::BadChecksum { found, computed });
        }
        let kind = SegmentKind::from_code(bytes[field::KIND])
            .ok_or(SegmentError::UnknownKind(bytes[field::KIND]))?;
        let transport = match bytes[field::TRANSPORT] {
            0 => MaTransport::Tcp,
            1 => MaTransport::Tls,
            t => return Err(SegmentError::UnknownTransport(t)),
        };
        let word =
            |r: std::ops::Range<usize>| u32::from_be_bytes(bytes[r].try_into().expect("4 bytes"));
        Ok(Segment {
            kind,
            transport,
            seq: word(field::SEQ),
            ack: word(field::ACK),
            payload: &bytes[field::PAYLOAD..],
        })
    }

    /// Bytes on the wire.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload.len()
    }

    /// The segment's bytes, checksum included.
    pub fn emit(&self) -> Vec<u8> {
        let mut v = vec![0; self.buffer_len()];
        v[field::KIND] = self.kind.code();
        v[field::TRANSPORT] = u8::from(self.transport == MaTransport::Tls);
        v[field::SEQ].copy_from_slice(&self.seq.to_be_bytes());
        v[field::ACK].copy_from_slice(&self.ack.to_be_bytes());
        v[field::PAYLOAD..].copy_from_slice(self.payload);
        let c = checksum(&v);
        v[field::CRC].copy_from_slice(&c.to_be_bytes());
        v
    }
}

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) — SCTP's checksum, chosen over TCP's
/// 16-bit ones'-complement sum (RFC 9293 §3.1) because the campaigns inject hundreds of
/// thousands of corrupted segments, and one in 65,536 would pass a 16-bit sum.
const CRC_TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82F6_3B78
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// Continue a CRC-32C over `bytes` (start from 0).
fn crc32c_update(crc: u32, bytes: &[u8]) -> u32 {
    let mut c = !crc;
    for &b in bytes {
        c = CRC_TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

/// The CRC-32C of a segment with its checksum field read as zero.
fn checksum(seg: &[u8]) -> u32 {
    let c = crc32c_update(0, &seg[..field::CRC.start]);
    let c = crc32c_update(c, &[0; 4]);
    crc32c_update(c, &seg[field::CRC.end..])
}

/// Where a connection is in its life (RFC 9293 §3.3.2 names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamState {
    /// Our SYN is out, unanswered.
    SynSent,
    /// The peer's SYN is here, our SYN-ACK out; not yet acknowledged.
    SynReceived,
    /// Both initial sequence numbers acknowledged.
    Established,
}

#[derive(Debug)]
struct Conn {
    state: StreamState,
    /// We opened it (the engine hears `Connected`; otherwise `Accepted`).
    initiator: bool,
    iss: u32,
    /// Oldest unacknowledged sequence number (the SYN's until it is acknowledged).
    snd_una: u32,
    /// Data waiting for acknowledgment, in order; the first has sequence number `base`.
    unacked: VecDeque<Vec<u8>>,
    base: u32,
    /// How many of `unacked` went out at least once (the send window limits it).
    sent: u32,
    irs: u32,
    rcv_nxt: u32,
    /// Received ahead of `rcv_nxt`, by offset from `irs`.
    held: BTreeMap<u32, Vec<u8>>,
    rto: Duration,
    tries: u32,
    retransmit_at: Option<Instant>,
    /// CRC-32C chained over the data the peer acknowledged, and over the data delivered.
    acked_digest: u32,
    delivered_digest: u32,
}

impl Conn {
    fn new(state: StreamState, initiator: bool, iss: u32) -> Self {
        Conn {
            state,
            initiator,
            iss,
            snd_una: iss,
            unacked: VecDeque::new(),
            base: iss.wrapping_add(1),
            sent: 0,
            irs: 0,
            rcv_nxt: 0,
            held: BTreeMap::new(),
            rto: RTO,
            tries: 0,
            retransmit_at: None,
            acked_digest: 0,
            delivered_digest: 0,
        }
    }

    fn snd_nxt(&self) -> u32 {
        if self.state == StreamState::SynSent {
            self.iss.wrapping_add(1)
        } else {
            self.base.wrapping_add(self.sent)
        }
    }

    /// Whether the engine has heard of this connection (so must hear of its end).
    fn engine_knows(&self) -> bool {
        self.initiator || self.state == StreamState::Established
    }

    /// RFC 5961 §5.2: acceptable if `SND.UNA - MAX.SND.WND <= SEG.ACK <= SND.NXT`.
    fn ack_acceptable(&self, ack: u32) -> bool {
        let nxt = self.snd_nxt();
        nxt.wrapping_sub(ack) <= nxt.wrapping_sub(self.snd_una) + WINDOW
    }

    /// Drop what `ack` acknowledges; whether it acknowledged anything new.
    fn take_ack(&mut self, ack: u32) -> bool {
        let newly = ack.wrapping_sub(self.base).min(self.sent);
        if ack.wrapping_sub(self.snd_una) as i32 <= 0 || newly == 0 {
            return false;
        }
        for _ in 0..newly {
            if let Some(b) = self.unacked.pop_front() {
                self.acked_digest = crc32c_update(self.acked_digest, &b);
            }
        }
        self.base = self.base.wrapping_add(newly);
        self.sent -= newly;
        self.snd_una = self.base;
        true
    }
}

/// Segments dropped, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SegmentDrops {
    /// Shorter than a header, of an unknown kind or transport.
    pub malformed: u64,
    /// The checksum did not match: corrupted.
    pub bad_checksum: u64,
    /// No connection with the sender (answered with a reset unless a reset).
    pub no_connection: u64,
    /// Sequence number outside the receive window (a blind guess, or a stale connection's).
    pub out_of_window: u64,
    /// Sequence number within a window behind the next expected: a retransmission or a
    /// replay (answered with an ACK, as TCP does).
    pub duplicate: u64,
    /// Acknowledges what was never sent (RFC 5961 §5.2), or not our SYN while opening.
    pub bad_ack: u64,
    /// A reset in the window but not exactly at its start: challenged (RFC 5961 §3.2).
    pub rst_challenged: u64,
    /// A SYN on an open connection with another initial number: challenged (RFC 5961 §4.2).
    pub syn_challenged: u64,
}

impl SegmentDrops {
    /// All drops.
    pub fn total(&self) -> u64 {
        self.malformed
            + self.bad_checksum
            + self.no_connection
            + self.out_of_window
            + self.duplicate
            + self.bad_ack
            + self.rst_challenged
            + self.syn_challenged
    }
}

/// Counters of the adapter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamStats {
    /// Segments sent (first transmissions and retransmissions).
    pub segments_sent: u64,
    /// Segments retransmitted.
    pub retransmitted: u64,
    /// Connections given up after too many retransmissions.
    pub aborted: u64,
    /// Segments received.
    pub received: u64,
    /// Segments received and acted on.
    pub accepted: u64,
    /// Segments received and dropped, by reason: `received == accepted + drops.total()`.
    pub drops: SegmentDrops,
    /// Connections closed by a valid reset.
    pub resets_accepted: u64,
    /// Resets sent (for segments of unknown connections, or unacceptable openings).
    pub resets_sent: u64,
    /// Challenge ACKs sent (RFC 5961 §3.2, §4.2).
    pub challenge_acks: u64,
}

/// One connection as [`StreamAdapter::streams`] shows it: enough for a driver to check that
/// both ends agree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamView {
    /// The peer.
    pub peer: IpAddr,
    /// Which stream.
    pub transport: MaTransport,
    /// Its state.
    pub state: StreamState,
    /// Our initial sequence number.
    pub iss: u32,
    /// The peer's (once known).
    pub irs: u32,
    /// Oldest sequence number we sent that the peer has not acknowledged.
    pub snd_una: u32,
    /// Next sequence number we expect.
    pub rcv_nxt: u32,
    /// CRC-32C chained over every data segment the peer acknowledged, in order.
    pub acked_digest: u32,
    /// CRC-32C chained over every data segment delivered to the engine, in order.
    pub delivered_digest: u32,
}

/// A stream: peer and stack.
type Key = (IpAddr, MaTransport);

/// A [`GistEngine`] whose messaging associations run over datagrams.
#[derive(Debug)]
pub struct StreamAdapter {
    inner: GistEngine,
    rng: SeededRng,
    conns: BTreeMap<Key, Conn>,
    out: VecDeque<Transmit>,
    stats: StreamStats,
}

impl StreamAdapter {
    /// Wrap an engine; initial sequence numbers come from a generator seeded from its seed.
    pub fn new(inner: GistEngine) -> Self {
        let rng = pathwise_core::rng::seeded(inner.config().seed ^ ISN_SEED);
        StreamAdapter {
            inner,
            rng,
            conns: BTreeMap::new(),
            out: VecDeque::new(),
            stats: StreamStats::default(),
        }
    }

    /// The engine.
    pub fn inner(&self) -> &GistEngine {
        &self.inner
    }

    /// The engine, mutably (drain it afterwards: the simulator's `poll_engine`).
    pub fn inner_mut(&mut self) -> &mut GistEngine {
        &mut self.inner
    }

    /// [`GistEngine::with_nslp`], then move any stream requests it caused onto the wire.
    pub fn with_nslp<T: crate::nslp::Nslp + 'static, R>(
        &mut self,
        now: Instant,
        f: impl FnOnce(&mut T, &mut dyn crate::nslp::GistApi) -> R,
    ) -> Option<R> {
        let r = self.inner.with_nslp(now, f);
        self.pump(now);
        r
    }

    /// Counters.
    pub fn stats(&self) -> StreamStats {
        self.stats
    }

    /// Streams currently open or opening.
    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// Every stream open or opening.
    pub fn streams(&self) -> impl Iterator<Item = StreamView> + '_ {
        self.conns.iter().map(|(&(peer, transport), c)| StreamView {
            peer,
            transport,
            state: c.state,
            iss: c.iss,
            irs: c.irs,
            snd_una: c.snd_una,
            rcv_nxt: c.rcv_nxt,
            acked_digest: c.acked_digest,
            delivered_digest: c.delivered_digest,
        })
    }

    fn send(&mut self, (peer, transport): Key, kind: SegmentKind, seq: u32, ack: u32, data: &[u8]) {
        let payload = Segment {
            kind,
            transport,
            seq,
            ack,
            payload: data,
        }
        .emit();
        self.stats.segments_sent += 1;
        self.out.push_back(Transmit {
            src: None,
            dst: peer,
            ifindex: None,
            transport: Transport::Udp {
                src_port: SEGMENT_PORT,
                dst_port: SEGMENT_PORT,
            },
            router_alert: None,
            ttl: 64,
            payload,
        });
    }

    /// An ACK of where `key` stands (also the challenge ACK of RFC 5961 §3.2 and §4.2).
    fn send_ack(&mut self, key: Key) {
        if let Some(c) = self.conns.get(&key) {
            let (seq, ack) = (c.snd_nxt(), c.rcv_nxt);
            self.send(key, SegmentKind::Ack, seq, ack, &[]);
        }
    }

    /// RFC 9293 §3.10.7.1: a reset answering a segment that carried `ack`.
    fn send_rst(&mut self, key: Key, ack: u32) {
        self.stats.resets_sent += 1;
        self.send(key, SegmentKind::Rst, ack, 0, &[]);
    }

    /// Send what the window allows of data not sent yet; arm the timer.
    fn flush(&mut self, now: Instant, key: Key) {
        let Some(c) = self.conns.get_mut(&key) else {
            return;
        };
        let mut sends = Vec::new();
        if c.state == StreamState::Established {
            while c.sent < WINDOW && (c.sent as usize) < c.unacked.len() {
                let seq = c.base.wrapping_add(c.sent);
                sends.push((seq, c.unacked[c.sent as usize].clone()));
                c.sent += 1;
            }
        }
        let ack = c.rcv_nxt;
        for (seq, b) in sends {
            self.send(key, SegmentKind::Data, seq, ack, &b);
        }
        self.arm(now, key);
    }

    fn arm(&mut self, now: Instant, key: Key) {
        if let Some(c) = self.conns.get_mut(&key) {
            let pending = c.sent > 0 || c.state != StreamState::Established;
            c.retransmit_at = pending.then(|| now + c.rto);
        }
    }

    /// Forget `key`; tell the engine if it knew of it.
    fn close(&mut self, now: Instant, key: Key) {
        if let Some(c) = self.conns.remove(&key)
            && c.engine_knows()
        {
            self.inner
                .handle_stream_on(now, key.1, StreamInput::Closed { peer: key.0 });
        }
    }

    /// Move the engine's stream requests onto the wire; repeat while feeding it produces more.
    fn pump(&mut self, now: Instant) {
        while let Some(st) = self.inner.poll_stream() {
            self.stream_op(now, (st.peer, st.transport), st.op);
        }
    }

    fn stream_op(&mut self, now: Instant, key: Key, op: StreamOp) {
        match op {
            StreamOp::Open => {
                let iss = self.rng.random();
                self.conns
                    .insert(key, Conn::new(StreamState::SynSent, true, iss));
                self.send(key, SegmentKind::Syn, iss, 0, &[]);
                self.arm(now, key);
            }
            StreamOp::Send(bytes) => {
                let Some(c) = self.conns.get_mut(&key) else {
                    return;
                };
                for chunk in bytes.chunks(MAX_SEGMENT) {
                    c.unacked.push_back(chunk.to_vec());
                }
                self.flush(now, key);
            }
            StreamOp::Close => {
                if let Some(c) = self.conns.remove(&key) {
                    let (seq, ack) = (c.snd_nxt(), c.rcv_nxt);
                    self.send(key, SegmentKind::Fin, seq, ack, &[]);
                }
            }
        }
    }

    fn on_segment(&mut self, now: Instant, from: IpAddr, bytes: &[u8]) {
        self.stats.received += 1;
        let seg = match Segment::parse(bytes) {
            Ok(s) => s,
            Err(SegmentError::BadChecksum { .. }) => {
                self.stats.drops.bad_checksum += 1;
                return;
            }
            Err(_) => {
                self.stats.drops.malformed += 1;
                return;
            }
        };
        let key = (from, seg.transport);
        let accepted = match self.conns.get(&key).map(|c| c.state) {
            None => self.on_closed(now, key, &seg),
            Some(StreamState::SynSent) => self.on_syn_sent(now, key, &seg),
            Some(_) => self.on_synchronized(now, key, &seg),
        };
        if accepted {
            self.stats.accepted += 1;
        }
    }

    /// RFC 9293 §3.10.7.1–2: no connection. A SYN opens one (SYN-RECEIVED; the engine hears
    /// of it once the peer acknowledges our SYN-ACK); anything else but a reset is answered
    /// with a reset.
    fn on_closed(&mut self, now: Instant, key: Key, seg: &Segment<'_>) -> bool {
        match seg.kind {
            SegmentKind::Syn => {
                let iss = self.rng.random();
                let mut c = Conn::new(StreamState::SynReceived, false, iss);
                c.irs = seg.seq;
                c.rcv_nxt = seg.seq.wrapping_add(1);
                let ack = c.rcv_nxt;
                self.conns.insert(key, c);
                self.send(key, SegmentKind::SynAck, iss, ack, &[]);
                self.arm(now, key);
                true
            }
            SegmentKind::Rst => {
                self.stats.drops.no_connection += 1;
                false
            }
            _ => {
                self.stats.drops.no_connection += 1;
                self.send_rst(key, seg.ack);
                false
            }
        }
    }

    /// RFC 9293 §3.10.7.3: our SYN is out.
    fn on_syn_sent(&mut self, now: Instant, key: Key, seg: &Segment<'_>) -> bool {
        let iss = self.conns[&key].iss;
        let acks_syn = seg.ack == iss.wrapping_add(1);
        match seg.kind {
            SegmentKind::SynAck if acks_syn => {
                self.establish(now, key, seg.seq, true);
                true
            }
            // Both ends opened at once: answer as the peer will (simultaneous open).
            SegmentKind::Syn => {
                let c = self.conns.get_mut(&key).expect("looked up");
                c.state = StreamState::SynReceived;
                c.irs = seg.seq;
                c.rcv_nxt = seg.seq.wrapping_add(1);
                let ack = c.rcv_nxt;
                self.send(key, SegmentKind::SynAck, iss, ack, &[]);
                self.arm(now, key);
                true
            }
            // A reset is acceptable here only if it acknowledges our SYN.
            SegmentKind::Rst if acks_syn => {
                self.stats.resets_accepted += 1;
                self.close(now, key);
                true
            }
            SegmentKind::Rst => {
                self.stats.drops.out_of_window += 1;
                false
            }
            _ => {
                self.stats.drops.bad_ack += 1;
                self.send_rst(key, seg.ack);
                false
            }
        }
    }

    /// Both initial numbers known; `answer` (the peer's SYN-ACK came) acknowledges it at once
    /// if no data does.
    fn establish(&mut self, now: Instant, key: Key, irs: u32, answer: bool) {
        let c = self.conns.get_mut(&key).expect("caller looked up");
        c.state = StreamState::Established;
        c.irs = irs;
        c.rcv_nxt = irs.wrapping_add(1);
        c.snd_una = c.base;
        c.tries = 0;
        c.rto = RTO;
        let (initiator, queued) = (c.initiator, !c.unacked.is_empty());
        if answer && !queued {
            self.send_ack(key);
        }
        self.flush(now, key);
        let input = if initiator {
            StreamInput::Connected { peer: key.0 }
        } else {
            StreamInput::Accepted { peer: key.0 }
        };
        self.inner.handle_stream_on(now, key.1, input);
    }

    /// SYN-RECEIVED and ESTABLISHED (RFC 9293 §3.10.7.4, with RFC 5961's checks).
    fn on_synchronized(&mut self, now: Instant, key: Key, seg: &Segment<'_>) -> bool {
        let c = &self.conns[&key];
        let (state, iss, irs, rcv_nxt) = (c.state, c.iss, c.irs, c.rcv_nxt);
        let ahead = seg.seq.wrapping_sub(rcv_nxt);
        let behind = rcv_nxt.wrapping_sub(seg.seq);
        match seg.kind {
            // RFC 5961 §4.2: a SYN on a synchronized connection is never obeyed; the peer's
            // own retransmitted SYN gets our SYN-ACK again, any other a challenge ACK (a
            // restarted peer answers it with a reset that then matches exactly).
            SegmentKind::Syn => {
                if seg.seq == irs && state == StreamState::SynReceived {
                    self.send(key, SegmentKind::SynAck, iss, rcv_nxt, &[]);
                    self.stats.drops.duplicate += 1;
                } else {
                    self.stats.challenge_acks += 1;
                    self.stats.drops.syn_challenged += 1;
                    self.send_ack(key);
                }
                false
            }
            // RFC 5961 §3.2: exactly RCV.NXT resets; elsewhere in the window, a challenge ACK;
            // outside it, silently dropped.
            SegmentKind::Rst => {
                if ahead == 0 {
                    self.stats.resets_accepted += 1;
                    self.close(now, key);
                    true
                } else if ahead < WINDOW {
                    self.stats.challenge_acks += 1;
                    self.stats.drops.rst_challenged += 1;
                    self.send_ack(key);
                    false
                } else {
                    self.stats.drops.out_of_window += 1;
                    false
                }
            }
            // Our SYN-ACK's answer, resent while ours went missing, or after both SYNs crossed.
            SegmentKind::SynAck => {
                if state == StreamState::SynReceived && seg.ack == iss.wrapping_add(1) {
                    if seg.seq != irs && !self.conns[&key].initiator {
                        self.stats.drops.bad_ack += 1;
                        return false;
                    }
                    self.establish(now, key, seg.seq, true);
                    true
                } else if seg.seq == irs && self.conns[&key].ack_acceptable(seg.ack) {
                    self.stats.drops.duplicate += 1;
                    self.send_ack(key);
                    false
                } else {
                    self.stats.drops.out_of_window += 1;
                    false
                }
            }
            SegmentKind::Data | SegmentKind::Ack | SegmentKind::Fin => {
                // Sequence number first (RFC 9293 §3.10.7.4, first check): data must fall in
                // the window, an ACK or FIN (the sender's next number) at most at its end.
                let limit = if seg.kind == SegmentKind::Data {
                    WINDOW
                } else {
                    WINDOW + 1
                };
                if ahead >= limit {
                    if behind <= WINDOW {
                        // A retransmission, a late copy or a replay: TCP acknowledges it.
                        self.stats.drops.duplicate += 1;
                        if seg.kind == SegmentKind::Data && state == StreamState::Established {
                            self.send_ack(key);
                        }
                    } else {
                        self.stats.drops.out_of_window += 1;
                    }
                    return false;
                }
                if state == StreamState::SynReceived {
                    // The ACK of our SYN-ACK completes the opening (RFC 9293 §3.10.7.4, fifth
                    // check); any other is answered with a reset.
                    if seg.ack != iss.wrapping_add(1) {
                        self.stats.drops.bad_ack += 1;
                        self.send_rst(key, seg.ack);
                        return false;
                    }
                    self.establish(now, key, irs, false);
                } else if !self.conns[&key].ack_acceptable(seg.ack) {
                    // RFC 5961 §5.2: acknowledges what we never sent.
                    self.stats.drops.bad_ack += 1;
                    return false;
                }
                self.on_acceptable(now, key, seg);
                true
            }
        }
    }

    /// An acceptable DATA, ACK or FIN on an established connection.
    fn on_acceptable(&mut self, now: Instant, key: Key, seg: &Segment<'_>) {
        let c = self.conns.get_mut(&key).expect("caller looked up");
        if c.take_ack(seg.ack) {
            c.tries = 0;
            c.rto = RTO;
        }
        match seg.kind {
            SegmentKind::Fin => self.close(now, key),
            SegmentKind::Data => {
                c.held
                    .entry(seg.seq.wrapping_sub(c.irs))
                    .or_insert_with(|| seg.payload.to_vec());
                let mut ready = Vec::new();
                while let Some(b) = c.held.remove(&c.rcv_nxt.wrapping_sub(c.irs)) {
                    c.delivered_digest = crc32c_update(c.delivered_digest, &b);
                    ready.extend_from_slice(&b);
                    c.rcv_nxt = c.rcv_nxt.wrapping_add(1);
                }
                self.send_ack(key);
                self.flush(now, key);
                if !ready.is_empty() {
                    self.inner.handle_stream_on(
                        now,
                        key.1,
                        StreamInput::Data {
                            peer: key.0,
                            bytes: &ready,
                        },
                    );
                }
            }
            _ => self.flush(now, key),
        }
    }

    fn retransmit(&mut self, now: Instant) {
        let due: Vec<Key> = self
            .conns
            .iter()
            .filter(|(_, c)| c.retransmit_at.is_some_and(|t| t <= now))
            .map(|(p, _)| *p)
            .collect();
        for key in due {
            let Some(c) = self.conns.get_mut(&key) else {
                continue;
            };
            c.tries += 1;
            if c.tries > MAX_TRIES {
                self.stats.aborted += 1;
                self.close(now, key);
                continue;
            }
            c.rto = (c.rto * 2).min(RTO_MAX);
            let (iss, ack) = (c.iss, c.rcv_nxt);
            match c.state {
                StreamState::SynSent => self.send(key, SegmentKind::Syn, iss, 0, &[]),
                StreamState::SynReceived => self.send(key, SegmentKind::SynAck, iss, ack, &[]),
                StreamState::Established => {
                    let base = c.base;
                    let segs: Vec<Vec<u8>> =
                        c.unacked.iter().take(c.sent as usize).cloned().collect();
                    self.stats.retransmitted += segs.len() as u64;
                    for (i, b) in segs.iter().enumerate() {
                        let seq = base.wrapping_add(i as u32);
                        self.send(key, SegmentKind::Data, seq, ack, b);
                    }
                }
            }
            self.arm(now, key);
        }
    }
}

impl Engine for StreamAdapter {
    type Event = GistEvent;

    fn handle_datagram(&mut self, now: Instant, dgram: Received<'_>) {
        match dgram.transport {
            Transport::Udp {
                dst_port: SEGMENT_PORT,
                ..
            } => self.on_segment(now, dgram.src, dgram.payload),
            _ => self.inner.handle_datagram(now, dgram),
        }
        self.pump(now);
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.retransmit(now);
        if self.inner.poll_timeout().is_some_and(|t| t <= now) {
            self.inner.handle_timeout(now);
        }
        self.pump(now);
    }

    fn handle_route_change(&mut self, now: Instant, change: RouteChange) {
        self.inner.handle_route_change(now, change);
        self.pump(now);
    }

    fn poll_transmit(&mut self) -> Option<Transmit> {
        self.out.pop_front().or_else(|| self.inner.poll_transmit())
    }

    fn poll_event(&mut self) -> Option<GistEvent> {
        self.inner.poll_event()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let own = self.conns.values().filter_map(|c| c.retransmit_at).min();
        match (own, self.inner.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn wants_router_alert(&self, dgram: &Received<'_>) -> bool {
        self.inner.wants_router_alert(dgram)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, GistEngine};
    use pathwise_core::io::IfIndex;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));
    const TCP: MaTransport = MaTransport::Tcp;
    /// A GIST common header announcing a long message: the engine buffers what follows
    /// instead of parsing it.
    const LONG_MESSAGE: [u8; 4] = [1, 0, 0x10, 0];

    fn adapter(seed: u64) -> StreamAdapter {
        let cfg = Config {
            seed,
            ..Config::default()
        };
        StreamAdapter::new(GistEngine::new(cfg, Instant::ZERO))
    }

    /// The segments `x` sent, with their destinations.
    fn sent(x: &mut StreamAdapter) -> Vec<(IpAddr, Vec<u8>)> {
        std::iter::from_fn(|| x.out.pop_front())
            .map(|t| (t.dst, t.payload))
            .collect()
    }

    fn deliver(to: &mut StreamAdapter, now: Instant, from: IpAddr, at: IpAddr, bytes: &[u8]) {
        to.handle_datagram(
            now,
            Received {
                src: from,
                dst: at,
                ifindex: IfIndex(1),
                transport: Transport::Udp {
                    src_port: SEGMENT_PORT,
                    dst_port: SEGMENT_PORT,
                },
                router_alert: None,
                ttl: 64,
                payload: bytes,
            },
        );
    }

    /// Carry segments both ways until both are quiet.
    fn shuttle(a: &mut StreamAdapter, b: &mut StreamAdapter, now: Instant) {
        loop {
            let (from_a, from_b) = (sent(a), sent(b));
            if from_a.is_empty() && from_b.is_empty() {
                return;
            }
            for (_, p) in from_a {
                deliver(b, now, A, B, &p);
            }
            for (_, p) in from_b {
                deliver(a, now, B, A, &p);
            }
        }
    }

    fn view(x: &StreamAdapter, peer: IpAddr) -> StreamView {
        x.streams().find(|v| v.peer == peer).expect("a stream")
    }

    /// A opened a stream to B, both established.
    fn pair() -> (StreamAdapter, StreamAdapter) {
        let (mut a, mut b) = (adapter(1), adapter(2));
        a.stream_op(Instant::ZERO, (B, TCP), StreamOp::Open);
        shuttle(&mut a, &mut b, Instant::ZERO);
        (a, b)
    }

    fn seg(kind: SegmentKind, seq: u32, ack: u32, payload: &[u8]) -> Vec<u8> {
        Segment {
            kind,
            transport: TCP,
            seq,
            ack,
            payload,
        }
        .emit()
    }

    fn kinds(out: &[(IpAddr, Vec<u8>)]) -> Vec<SegmentKind> {
        out.iter()
            .map(|(_, p)| Segment::parse(p).expect("ours parse").kind)
            .collect()
    }

    #[test]
    fn crc32c_check_value() {
        // The CRC-32C check value (the CRC of the ASCII digits 1 to 9).
        assert_eq!(crc32c_update(0, b"123456789"), 0xe306_9283);
    }

    #[test]
    fn segment_round_trip() {
        let s = Segment {
            kind: SegmentKind::Data,
            transport: MaTransport::Tls,
            seq: 0xdead_beef,
            ack: 7,
            payload: b"abc",
        };
        let bytes = s.emit();
        assert_eq!(bytes.len(), s.buffer_len());
        assert_eq!(Segment::parse(&bytes), Ok(s));
    }

    #[test]
    fn corrupted_segments_fail_the_checksum() {
        let bytes = seg(SegmentKind::Data, 1, 2, b"payload");
        for i in 0..bytes.len() {
            for flip in [0x01, 0x80, 0xff] {
                let mut m = bytes.clone();
                m[i] ^= flip;
                assert!(
                    matches!(Segment::parse(&m), Err(SegmentError::BadChecksum { .. })),
                    "byte {i} ^ {flip:#x}"
                );
            }
        }
        assert_eq!(
            Segment::parse(&bytes[..HEADER_LEN - 1]),
            Err(SegmentError::Truncated(HEADER_LEN - 1))
        );
        let mut unknown = bytes.clone();
        unknown[field::KIND] = 9;
        let c = checksum(&unknown);
        unknown[field::CRC].copy_from_slice(&c.to_be_bytes());
        assert_eq!(Segment::parse(&unknown), Err(SegmentError::UnknownKind(9)));
    }

    #[test]
    fn initial_sequence_numbers_come_from_the_seed() {
        let iss = |seed| {
            let mut x = adapter(seed);
            x.stream_op(Instant::ZERO, (B, TCP), StreamOp::Open);
            x.stream_op(Instant::ZERO, (A, TCP), StreamOp::Open);
            (view(&x, B).iss, view(&x, A).iss)
        };
        let (first, second) = iss(5);
        assert_eq!(iss(5), (first, second), "the same seed replays");
        assert_ne!(first, second, "one per connection");
        assert_ne!(iss(6).0, first, "another seed, other numbers");
    }

    #[test]
    fn three_way_opening() {
        let (mut a, mut b) = (adapter(1), adapter(2));
        a.stream_op(Instant::ZERO, (B, TCP), StreamOp::Open);
        let syn = sent(&mut a);
        assert_eq!(kinds(&syn), [SegmentKind::Syn]);
        deliver(&mut b, Instant::ZERO, A, B, &syn[0].1);
        assert_eq!(view(&b, A).state, StreamState::SynReceived);
        assert_eq!(
            b.inner().state_stats().mas,
            0,
            "not accepted before the ACK"
        );
        let syn_ack = sent(&mut b);
        assert_eq!(kinds(&syn_ack), [SegmentKind::SynAck]);
        deliver(&mut a, Instant::ZERO, B, A, &syn_ack[0].1);
        assert_eq!(view(&a, B).state, StreamState::Established);
        shuttle(&mut a, &mut b, Instant::ZERO);
        let (va, vb) = (view(&a, B), view(&b, A));
        assert_eq!(vb.state, StreamState::Established);
        assert_eq!((va.irs, vb.irs), (vb.iss, va.iss));
        assert_eq!(b.inner().state_stats().mas, 1, "accepted");
        assert_eq!(a.stats().drops.total() + b.stats().drops.total(), 0);
    }

    #[test]
    fn data_arrives_in_order_through_loss_and_reordering() {
        let (mut a, mut b) = pair();
        let mut data = LONG_MESSAGE.to_vec();
        data.extend((0..3000u32).map(|i| i as u8));
        a.stream_op(Instant::ZERO, (B, TCP), StreamOp::Send(data.clone()));
        let mut segs = sent(&mut a);
        assert_eq!(segs.len(), 3);
        segs.swap(0, 2);
        segs.remove(1); // lost
        for (_, p) in &segs {
            deliver(&mut b, Instant::ZERO, A, B, p);
        }
        assert_eq!(view(&b, A).rcv_nxt, view(&b, A).irs.wrapping_add(2));
        shuttle(&mut a, &mut b, Instant::ZERO);
        a.handle_timeout(Instant::ZERO + RTO);
        assert_eq!(
            a.stats().retransmitted,
            2,
            "both unacknowledged segments again"
        );
        shuttle(&mut a, &mut b, Instant::ZERO + RTO);
        let (va, vb) = (view(&a, B), view(&b, A));
        assert_eq!(vb.rcv_nxt, va.iss.wrapping_add(4));
        assert_eq!(va.snd_una, vb.rcv_nxt);
        assert_eq!(va.acked_digest, crc32c_digest(&data));
        assert_eq!(vb.delivered_digest, va.acked_digest);
        assert_eq!(
            b.stats().drops.duplicate,
            1,
            "the retransmitted first segment"
        );
    }

    fn crc32c_digest(data: &[u8]) -> u32 {
        data.chunks(MAX_SEGMENT).fold(0, crc32c_update)
    }

    #[test]
    fn corrupted_segment_is_dropped_and_counted() {
        let (mut a, mut b) = pair();
        a.stream_op(
            Instant::ZERO,
            (B, TCP),
            StreamOp::Send(LONG_MESSAGE.to_vec()),
        );
        let mut s = sent(&mut a).remove(0).1;
        let last = s.len() - 1;
        s[last] ^= 0x20;
        let before = view(&b, A);
        deliver(&mut b, Instant::ZERO, A, B, &s);
        assert_eq!(b.stats().drops.bad_checksum, 1);
        assert_eq!(view(&b, A), before);
        assert!(sent(&mut b).is_empty(), "not even acknowledged");
    }

    #[test]
    fn data_outside_the_window_is_dropped_and_counted() {
        let (a, mut b) = pair();
        let v = view(&b, A);
        let ack = view(&a, B).rcv_nxt;
        for seq in [
            v.rcv_nxt.wrapping_add(WINDOW),
            v.rcv_nxt.wrapping_add(0x8000_0000),
            v.rcv_nxt.wrapping_sub(WINDOW + 1),
        ] {
            deliver(
                &mut b,
                Instant::ZERO,
                A,
                B,
                &seg(SegmentKind::Data, seq, ack, b"x"),
            );
        }
        assert_eq!(b.stats().drops.out_of_window, 3);
        assert_eq!(view(&b, A), v);
        assert!(sent(&mut b).is_empty(), "no answer to a blind guess");
        // The last sequence number in the window is accepted (held back).
        let (accepted, edge) = (b.stats().accepted, v.rcv_nxt.wrapping_add(WINDOW - 1));
        deliver(
            &mut b,
            Instant::ZERO,
            A,
            B,
            &seg(SegmentKind::Data, edge, ack, b"x"),
        );
        assert_eq!(b.stats().accepted, accepted + 1);
    }

    #[test]
    fn replayed_data_is_acknowledged_not_delivered() {
        let (mut a, mut b) = pair();
        a.stream_op(
            Instant::ZERO,
            (B, TCP),
            StreamOp::Send(LONG_MESSAGE.to_vec()),
        );
        let captured = sent(&mut a).remove(0).1;
        deliver(&mut b, Instant::ZERO, A, B, &captured);
        shuttle(&mut a, &mut b, Instant::ZERO);
        let v = view(&b, A);
        deliver(&mut b, Instant::ZERO, A, B, &captured);
        assert_eq!(b.stats().drops.duplicate, 1);
        assert_eq!(view(&b, A), v, "nothing delivered twice");
        assert_eq!(kinds(&sent(&mut b)), [SegmentKind::Ack]);
    }

    #[test]
    fn acknowledgment_of_unsent_data_is_dropped() {
        let (a, mut b) = pair();
        let v = view(&b, A);
        let bogus = view(&a, B).rcv_nxt.wrapping_add(5);
        deliver(
            &mut b,
            Instant::ZERO,
            A,
            B,
            &seg(SegmentKind::Data, v.rcv_nxt, bogus, b"x"),
        );
        assert_eq!(b.stats().drops.bad_ack, 1);
        assert_eq!(view(&b, A), v);
    }

    #[test]
    fn exact_reset_closes_cleanly() {
        let (_a, mut b) = pair();
        assert_eq!(b.inner().state_stats().mas, 1);
        let v = view(&b, A);
        deliver(
            &mut b,
            Instant::ZERO,
            A,
            B,
            &seg(SegmentKind::Rst, v.rcv_nxt, 0, &[]),
        );
        assert_eq!(b.connections(), 0);
        assert_eq!(b.stats().resets_accepted, 1);
        assert_eq!(
            b.inner().state_stats().mas,
            0,
            "the engine closed its association"
        );
        assert!(sent(&mut b).is_empty());
    }

    #[test]
    fn reset_in_window_is_challenged() {
        let (mut a, mut b) = pair();
        let v = view(&b, A);
        let rst = seg(SegmentKind::Rst, v.rcv_nxt.wrapping_add(1), 0, &[]);
        deliver(&mut b, Instant::ZERO, A, B, &rst);
        assert_eq!(b.connections(), 1);
        assert_eq!(b.stats().drops.rst_challenged, 1);
        let out = sent(&mut b);
        assert_eq!(kinds(&out), [SegmentKind::Ack]);
        // The challenge ACK is an ordinary duplicate ACK to the real peer: nothing changes.
        deliver(&mut a, Instant::ZERO, B, A, &out[0].1);
        assert_eq!(a.stats().drops.total(), 0);
        assert!(sent(&mut a).is_empty());
    }

    #[test]
    fn reset_outside_the_window_is_ignored() {
        let (_, mut b) = pair();
        let v = view(&b, A);
        for seq in [v.rcv_nxt.wrapping_add(WINDOW), v.rcv_nxt.wrapping_sub(1)] {
            deliver(
                &mut b,
                Instant::ZERO,
                A,
                B,
                &seg(SegmentKind::Rst, seq, 0, &[]),
            );
        }
        assert_eq!(b.stats().drops.out_of_window, 2);
        assert_eq!(b.connections(), 1);
        assert!(sent(&mut b).is_empty());
    }

    #[test]
    fn syn_on_an_open_connection_is_challenged_and_a_restarted_peer_reconnects() {
        let (mut a, _b) = pair();
        // B restarts (a new seed) and opens again: A challenges, B resets, A closes, B's
        // retransmitted SYN opens anew (RFC 5961 §4).
        let mut b2 = adapter(3);
        b2.stream_op(Instant::ZERO, (A, TCP), StreamOp::Open);
        let syn = sent(&mut b2);
        deliver(&mut a, Instant::ZERO, B, A, &syn[0].1);
        assert_eq!(a.stats().drops.syn_challenged, 1);
        assert_eq!(view(&a, B).state, StreamState::Established, "not obeyed");
        let challenge = sent(&mut a);
        assert_eq!(kinds(&challenge), [SegmentKind::Ack]);
        deliver(&mut b2, Instant::ZERO, A, B, &challenge[0].1);
        assert_eq!(b2.stats().drops.bad_ack, 1);
        let rst = sent(&mut b2);
        assert_eq!(kinds(&rst), [SegmentKind::Rst]);
        deliver(&mut a, Instant::ZERO, B, A, &rst[0].1);
        assert_eq!(a.connections(), 0);
        b2.handle_timeout(Instant::ZERO + RTO);
        shuttle(&mut a, &mut b2, Instant::ZERO + RTO);
        assert_eq!(view(&a, B).state, StreamState::Established);
        assert_eq!(view(&b2, A).state, StreamState::Established);
    }

    #[test]
    fn segment_of_an_unknown_connection_is_reset() {
        let mut b = adapter(2);
        deliver(
            &mut b,
            Instant::ZERO,
            A,
            B,
            &seg(SegmentKind::Data, 10, 99, b"x"),
        );
        assert_eq!(b.stats().drops.no_connection, 1);
        let out = sent(&mut b);
        assert_eq!(kinds(&out), [SegmentKind::Rst]);
        assert_eq!(Segment::parse(&out[0].1).map(|s| s.seq), Ok(99));
        // Never a reset for a reset.
        deliver(
            &mut b,
            Instant::ZERO,
            A,
            B,
            &seg(SegmentKind::Rst, 10, 0, &[]),
        );
        assert!(sent(&mut b).is_empty());
    }

    #[test]
    fn syn_ack_must_acknowledge_our_syn() {
        let (mut a, mut b) = (adapter(1), adapter(2));
        a.stream_op(Instant::ZERO, (B, TCP), StreamOp::Open);
        let iss = view(&a, B).iss;
        let forged = seg(SegmentKind::SynAck, 1234, iss.wrapping_add(2), &[]);
        deliver(&mut a, Instant::ZERO, B, A, &forged);
        assert_eq!(a.stats().drops.bad_ack, 1);
        assert_eq!(view(&a, B).state, StreamState::SynSent);
        // A reset that does not acknowledge our SYN is ignored too.
        deliver(
            &mut a,
            Instant::ZERO,
            B,
            A,
            &seg(SegmentKind::Rst, 0, iss, &[]),
        );
        assert_eq!(a.stats().drops.out_of_window, 1);
        assert_eq!(view(&a, B).state, StreamState::SynSent);
        shuttle(&mut a, &mut b, Instant::ZERO);
        assert_eq!(view(&a, B).state, StreamState::Established);
    }

    #[test]
    fn half_open_from_a_replayed_syn_is_reset_by_the_peer() {
        let (mut a, mut b) = (adapter(1), adapter(2));
        // An old SYN "from A" reaches B; A has no such connection and resets B's answer.
        deliver(
            &mut b,
            Instant::ZERO,
            A,
            B,
            &seg(SegmentKind::Syn, 77, 0, &[]),
        );
        shuttle(&mut a, &mut b, Instant::ZERO);
        assert_eq!(a.stats().drops.no_connection, 1);
        assert_eq!(b.stats().resets_accepted, 1);
        assert_eq!((a.connections(), b.connections()), (0, 0));
        assert_eq!(b.inner().state_stats().mas, 0, "never accepted");
    }

    #[test]
    fn simultaneous_open() {
        let (mut a, mut b) = (adapter(1), adapter(2));
        a.stream_op(Instant::ZERO, (B, TCP), StreamOp::Open);
        b.stream_op(Instant::ZERO, (A, TCP), StreamOp::Open);
        shuttle(&mut a, &mut b, Instant::ZERO);
        let (va, vb) = (view(&a, B), view(&b, A));
        assert_eq!(
            (va.state, vb.state),
            (StreamState::Established, StreamState::Established)
        );
        assert_eq!((va.irs, vb.irs), (vb.iss, va.iss));
    }

    #[test]
    fn fin_closes_and_every_segment_is_counted() {
        let (mut a, mut b) = pair();
        a.stream_op(Instant::ZERO, (B, TCP), StreamOp::Close);
        shuttle(&mut a, &mut b, Instant::ZERO);
        assert_eq!((a.connections(), b.connections()), (0, 0));
        for x in [&a, &b] {
            let s = x.stats();
            assert_eq!(s.received, s.accepted + s.drops.total());
        }
    }
}
