//! Messaging-association streams over datagrams, for drivers that only carry datagrams (the
//! simulator).
//!
//! [`StreamAdapter`] wraps a [`GistEngine`] and is itself an [`Engine`]: it turns the engine's
//! stream requests ([`GistEngine::poll_stream`]) into segments sent as UDP datagrams to
//! [`SEGMENT_PORT`], and segments it receives into [`StreamInput`]s. A minimal ARQ makes the
//! stream reliable and in order over lossy links: a SYN/SYN-ACK opening, numbered data
//! segments acknowledged cumulatively, out-of-order segments held back, retransmission of
//! everything unacknowledged with a doubling timeout, FIN on close. It stands where TCP stands
//! under the Linux driver; it is not TCP (no windows, no congestion control).
//!
//! Segment: `kind (1) | transport (1: 0 TCP, 1 TLS) | 2 reserved | seq (4) | ack (4) | payload`;
//! a "TLS" stream is a second stream to the same peer (no cryptography: the simulator checks
//! the engine's negotiation, not TLS).

use crate::engine::{GistEngine, GistEvent, MaTransport, StreamInput, StreamOp};
use pathwise_core::engine::Engine;
use pathwise_core::io::{Received, Transmit, Transport};
use pathwise_core::route::RouteChange;
use pathwise_core::time::{Duration, Instant};
use pathwise_core::wire::{Reader, Writer};
use std::collections::{BTreeMap, VecDeque};
use std::net::IpAddr;

/// UDP port the segments travel on.
pub const SEGMENT_PORT: u16 = 30000;
const SYN: u8 = 1;
const SYN_ACK: u8 = 2;
const DATA: u8 = 3;
const ACK: u8 = 4;
const FIN: u8 = 5;
const MAX_SEGMENT: usize = 1200;
const RTO: Duration = Duration::from_millis(200);
const RTO_MAX: Duration = Duration::from_secs(4);
const MAX_TRIES: u32 = 12;

#[derive(Debug)]
struct Conn {
    initiator: bool,
    established: bool,
    next_seq: u32,
    unacked: BTreeMap<u32, Vec<u8>>,
    recv_next: u32,
    held: BTreeMap<u32, Vec<u8>>,
    rto: Duration,
    tries: u32,
    retransmit_at: Option<Instant>,
}

impl Conn {
    fn new(initiator: bool) -> Self {
        Conn {
            initiator,
            established: !initiator,
            next_seq: 0,
            unacked: BTreeMap::new(),
            recv_next: 0,
            held: BTreeMap::new(),
            rto: RTO,
            tries: 0,
            retransmit_at: None,
        }
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
}

/// A stream: peer and stack.
type Key = (IpAddr, MaTransport);

/// A [`GistEngine`] whose messaging associations run over datagrams.
#[derive(Debug)]
pub struct StreamAdapter {
    inner: GistEngine,
    conns: BTreeMap<Key, Conn>,
    out: VecDeque<Transmit>,
    stats: StreamStats,
}

impl StreamAdapter {
    /// Wrap an engine.
    pub fn new(inner: GistEngine) -> Self {
        StreamAdapter {
            inner,
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

    fn segment(&mut self, (peer, t): Key, kind: u8, seq: u32, ack: u32, payload: &[u8]) {
        let mut v = Vec::with_capacity(12 + payload.len());
        let w = &mut Writer::new(&mut v);
        w.u8(kind);
        w.u8(u8::from(t == MaTransport::Tls));
        w.zeros(2);
        w.u32(seq);
        w.u32(ack);
        w.bytes(payload);
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
            payload: v,
        });
    }

    /// Move the engine's stream requests onto the wire; repeat while feeding it produces more.
    fn pump(&mut self, now: Instant) {
        while let Some(st) = self.inner.poll_stream() {
            let peer = (st.peer, st.transport);
            match st.op {
                StreamOp::Open => {
                    self.conns.insert(peer, Conn::new(true));
                    self.segment(peer, SYN, 0, 0, &[]);
                    self.arm(now, peer);
                }
                StreamOp::Send(bytes) => {
                    let Some(c) = self.conns.get_mut(&peer) else {
                        continue;
                    };
                    let established = c.established;
                    let mut sends = Vec::new();
                    for chunk in bytes.chunks(MAX_SEGMENT) {
                        let seq = c.next_seq;
                        c.next_seq = c.next_seq.wrapping_add(1);
                        c.unacked.insert(seq, chunk.to_vec());
                        if established {
                            sends.push((seq, chunk.to_vec()));
                        }
                    }
                    let ack = c.recv_next;
                    for (seq, chunk) in sends {
                        self.segment(peer, DATA, seq, ack, &chunk);
                    }
                    self.arm(now, peer);
                }
                StreamOp::Close => {
                    if self.conns.remove(&peer).is_some() {
                        self.segment(peer, FIN, 0, 0, &[]);
                    }
                }
            }
        }
    }

    fn arm(&mut self, now: Instant, peer: Key) {
        if let Some(c) = self.conns.get_mut(&peer) {
            let pending = !c.unacked.is_empty() || !c.established;
            c.retransmit_at = pending.then(|| now + c.rto);
        }
    }

    fn on_segment(&mut self, now: Instant, from: IpAddr, payload: &[u8]) {
        let mut r = Reader::new(payload);
        let (Ok(kind), Ok(t), Ok(_), Ok(seq), Ok(ack)) =
            (r.u8(), r.u8(), r.skip(2), r.u32(), r.u32())
        else {
            return;
        };
        let transport = if t == 1 {
            MaTransport::Tls
        } else {
            MaTransport::Tcp
        };
        let peer = (from, transport);
        let body = r.rest();
        match kind {
            SYN => {
                let fresh = self.conns.get(&peer).is_none_or(|c| c.initiator);
                if fresh {
                    self.conns.insert(peer, Conn::new(false));
                    self.inner.handle_stream_on(
                        now,
                        transport,
                        StreamInput::Accepted { peer: from },
                    );
                }
                self.segment(peer, SYN_ACK, 0, 0, &[]);
            }
            SYN_ACK => {
                let Some(c) = self.conns.get_mut(&peer) else {
                    return;
                };
                if c.established {
                    return;
                }
                c.established = true;
                c.tries = 0;
                c.rto = RTO;
                let ack = c.recv_next;
                let queued: Vec<(u32, Vec<u8>)> =
                    c.unacked.iter().map(|(s, b)| (*s, b.clone())).collect();
                for (s, b) in queued {
                    self.segment(peer, DATA, s, ack, &b);
                }
                self.arm(now, peer);
                self.inner
                    .handle_stream_on(now, transport, StreamInput::Connected { peer: from });
            }
            DATA => {
                let Some(c) = self.conns.get_mut(&peer) else {
                    return;
                };
                if seq.wrapping_sub(c.recv_next) < 1 << 31 {
                    c.held.insert(seq, body.to_vec());
                }
                let mut ready = Vec::new();
                while let Some(b) = c.held.remove(&c.recv_next) {
                    ready.extend_from_slice(&b);
                    c.recv_next = c.recv_next.wrapping_add(1);
                }
                let ack_now = c.recv_next;
                self.segment(peer, ACK, 0, ack_now, &[]);
                if !ready.is_empty() {
                    self.inner.handle_stream_on(
                        now,
                        transport,
                        StreamInput::Data {
                            peer: from,
                            bytes: &ready,
                        },
                    );
                }
            }
            ACK => {
                let Some(c) = self.conns.get_mut(&peer) else {
                    return;
                };
                let before = c.unacked.len();
                c.unacked
                    .retain(|&s, _| ack.wrapping_sub(s).wrapping_sub(1) >= 1 << 31);
                if c.unacked.len() < before {
                    c.tries = 0;
                    c.rto = RTO;
                }
                self.arm(now, peer);
            }
            FIN if self.conns.remove(&peer).is_some() => {
                self.inner
                    .handle_stream_on(now, transport, StreamInput::Closed { peer: from });
            }
            _ => {}
        }
    }

    fn retransmit(&mut self, now: Instant) {
        let due: Vec<Key> = self
            .conns
            .iter()
            .filter(|(_, c)| c.retransmit_at.is_some_and(|t| t <= now))
            .map(|(p, _)| *p)
            .collect();
        for peer in due {
            let Some(c) = self.conns.get_mut(&peer) else {
                continue;
            };
            c.tries += 1;
            if c.tries > MAX_TRIES {
                self.conns.remove(&peer);
                self.stats.aborted += 1;
                self.inner
                    .handle_stream_on(now, peer.1, StreamInput::Closed { peer: peer.0 });
                continue;
            }
            c.rto = (c.rto * 2).min(RTO_MAX);
            if !c.established {
                self.segment(peer, SYN, 0, 0, &[]);
            } else {
                let ack = c.recv_next;
                let segs: Vec<(u32, Vec<u8>)> =
                    c.unacked.iter().map(|(s, b)| (*s, b.clone())).collect();
                self.stats.retransmitted += segs.len() as u64;
                for (s, b) in segs {
                    self.segment(peer, DATA, s, ack, &b);
                }
            }
            self.arm(now, peer);
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
