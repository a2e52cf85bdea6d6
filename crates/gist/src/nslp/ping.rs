//! The NSIS Ping NSLP (seed 000 §4.1.2): a diagnostic signalling application like ICMP ping
//! and traceroute over GIST.
//!
//! The client sends a ping request along a flow's path; every node running this NSLP appends
//! its address and a timestamp and forwards it in the same direction; the flow's destination
//! turns it into a reply, which travels back hop by hop to the client, who learns the path of
//! NSIS-aware nodes and the round-trip time. The NSLP keeps no per-session state of its own at
//! intermediate nodes (GIST's routing state, refreshed by GIST, is what the pings exercise);
//! the client keeps its outstanding pings in a [`SessionTable`].
//!
//! ```text
//!  0: version (1) | kind (1 request, 2 reply) | hop count (16)
//!  4: sequence number (32)
//!  8: time the client sent it, ns (64)
//! 16: per hop: family (4 or 6) | 3 reserved | address (4 or 16) | timestamp, ns (64)
//! ```
//! Every field is a whole number of words, so the message needs no GIST padding.
//!
//! # Example
//!
//! ```
//! use pathwise_core::engine::Engine;
//! use pathwise_core::io::IfIndex;
//! use pathwise_core::time::Instant;
//! use pathwise_gist::nslp::ping::{PingConfig, PingNslp};
//! use pathwise_gist::{Config, GistEngine, InterfaceConfig};
//!
//! let me = "10.0.0.1".parse().unwrap();
//! let cfg = Config {
//!     interfaces: vec![InterfaceConfig { ifindex: IfIndex(1), addrs: vec![me] }],
//!     ..Config::default()
//! };
//! let mut gist = GistEngine::new(cfg, Instant::ZERO);
//! gist.register(Box::new(PingNslp::new(PingConfig::default())));
//! let now = Instant::from_millis(5);
//! let sid = gist
//!     .with_nslp::<PingNslp, _>(now, |ping, api| ping.ping(api, now, me, "10.0.9.9".parse().unwrap()))
//!     .unwrap()
//!     .unwrap();
//! // The ping rides the Query that discovers the next GIST node of the Ping NSLP.
//! let query = gist.poll_transmit().unwrap();
//! assert!(query.router_alert.is_some());
//! # let _ = sid;
//! // Replies arrive as GistEvent::Nslp(NslpEvent::Ping(PingEvent::Reply { path, rtt, .. })).
//! ```

use super::{
    ApiError, DeliveryError, GistApi, MessageHandle, MessageStatus, Nslp, NslpEvent, RecvMessage,
    RoutingDecision, SendMessage, SessionTable, TransferAttributes,
};
use crate::wire::{Mri, PathCoupledMri, SessionId};
use core::any::Any;
use pathwise_core::table::{KeyedMap, keyed_map};
use pathwise_core::time::{Duration, Instant};
use pathwise_core::wire::{Reader, Writer};
use std::net::IpAddr;

/// The Ping NSLP's NSLPID: the first of the private/experimental range (IANA 32704–32767).
pub const NSLPID: u16 = 32704;
const VERSION: u8 = 1;

/// Request or reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PingKind {
    /// Travelling towards the flow's destination.
    Request,
    /// Travelling back to the client.
    Reply,
}

/// One NSIS-aware node the ping passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PingHop {
    /// The node's address.
    pub addr: IpAddr,
    /// When it handled the request.
    pub timestamp: Instant,
}

/// A ping message.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PingMessage {
    /// Request or reply.
    pub kind: PingKind,
    /// Sequence number within the session.
    pub seq: u32,
    /// When the client sent it.
    pub sent_at: Instant,
    /// The nodes passed on the way to the destination (the destination last).
    pub hops: Vec<PingHop>,
}

impl PingMessage {
    /// Parse; `None` if malformed.
    pub fn parse(b: &[u8]) -> Option<Self> {
        let mut r = Reader::new(b);
        if r.u8().ok()? != VERSION {
            return None;
        }
        let kind = match r.u8().ok()? {
            1 => PingKind::Request,
            2 => PingKind::Reply,
            _ => return None,
        };
        let n = r.u16().ok()?;
        let seq = r.u32().ok()?;
        let sent_at = Instant::from_nanos(r.u64().ok()?);
        let mut hops = Vec::with_capacity(usize::from(n).min(64));
        for _ in 0..n {
            let fam = r.u8().ok()?;
            r.skip(3).ok()?;
            let addr = match fam {
                4 => IpAddr::V4(r.ipv4().ok()?),
                6 => IpAddr::V6(r.ipv6().ok()?),
                _ => return None,
            };
            hops.push(PingHop {
                addr,
                timestamp: Instant::from_nanos(r.u64().ok()?),
            });
        }
        Some(PingMessage {
            kind,
            seq,
            sent_at,
            hops,
        })
    }

    /// Encode.
    pub fn emit(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(16 + self.hops.len() * 28);
        let w = &mut Writer::new(&mut v);
        w.u8(VERSION);
        w.u8(match self.kind {
            PingKind::Request => 1,
            PingKind::Reply => 2,
        });
        let n = self.hops.len().min(usize::from(u16::MAX));
        w.u16(n as u16);
        w.u32(self.seq);
        w.u64(self.sent_at.as_nanos());
        for h in &self.hops[..n] {
            w.u8(if h.addr.is_ipv4() { 4 } else { 6 });
            w.zeros(3);
            w.ip(h.addr);
            w.u64(h.timestamp.as_nanos());
        }
        v
    }
}

/// What the Ping NSLP reports to its client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PingEvent {
    /// A reply came back.
    Reply {
        /// The session.
        session_id: SessionId,
        /// The ping's sequence number.
        seq: u32,
        /// The destination pinged.
        destination: IpAddr,
        /// The NSIS-aware nodes on the way, in order, the destination last.
        path: Vec<PingHop>,
        /// Round-trip time.
        rtt: Duration,
    },
    /// GIST could not deliver a ping the client sent.
    Failed {
        /// The session.
        session_id: SessionId,
        /// The ping's sequence number.
        seq: u32,
        /// Why.
        error: DeliveryError,
    },
}

/// Ping NSLP configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PingConfig {
    /// NSLPID served.
    pub nslpid: u16,
    /// The address this node records in pings; `None`: GIST's local address of the flow's
    /// family.
    pub record_addr: Option<IpAddr>,
    /// How long the client waits for a reply before forgetting the ping.
    pub timeout: Duration,
    /// Ask GIST for reliable transfer (C-mode over a messaging association).
    pub reliable: bool,
    /// Seed of the session table's hash keys.
    pub seed: u64,
}

impl Default for PingConfig {
    fn default() -> Self {
        PingConfig {
            nslpid: NSLPID,
            record_addr: None,
            timeout: Duration::from_secs(60),
            reliable: false,
            seed: 0,
        }
    }
}

/// An outstanding ping of the client.
#[derive(Clone, Debug)]
struct Outstanding {
    destination: IpAddr,
    seq: u32,
}

/// Counters of the Ping NSLP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PingStats {
    /// Pings this node sent as a client.
    pub sent: u64,
    /// Requests forwarded towards the destination.
    pub forwarded: u64,
    /// Requests turned into replies here (this node was the destination).
    pub answered: u64,
    /// Replies forwarded back towards the client.
    pub replies_forwarded: u64,
    /// Replies received by the client.
    pub replies: u64,
    /// Messages that did not parse.
    pub malformed: u64,
    /// Messages not forwarded because their GIST hop count ran out (RFC 5971 §4.3.2: the
    /// NSLP preserves the incoming hop count, decremented, as loop control).
    pub hop_limit: u64,
    /// Messages GIST refused to send on (an MRI naming no routable flow, …).
    pub refused: u64,
}

/// The Ping NSLP: daemon (forward, answer) and client (send, collect) in one.
#[derive(Debug)]
pub struct PingNslp {
    cfg: PingConfig,
    outstanding: SessionTable<Outstanding>,
    handles: KeyedMap<MessageHandle, (SessionId, u32)>,
    next_seq: u32,
    stats: PingStats,
}

impl PingNslp {
    /// A Ping NSLP.
    pub fn new(cfg: PingConfig) -> Self {
        let mut rng = pathwise_core::rng::seeded(cfg.seed);
        PingNslp {
            outstanding: SessionTable::new(&mut rng),
            handles: keyed_map(&mut rng),
            next_seq: 1,
            stats: PingStats::default(),
            cfg,
        }
    }

    /// Counters.
    pub fn stats(&self) -> PingStats {
        self.stats
    }

    /// Pings awaiting replies.
    pub fn outstanding(&self) -> usize {
        self.outstanding.len()
    }

    /// Ping `destination` along the flow from `source` in a new session; its replies arrive as
    /// [`PingEvent::Reply`] reports.
    pub fn ping(
        &mut self,
        gist: &mut dyn GistApi,
        now: Instant,
        source: IpAddr,
        destination: IpAddr,
    ) -> Result<SessionId, ApiError> {
        let sid = gist.new_session_id();
        self.ping_session(gist, now, sid, source, destination)?;
        Ok(sid)
    }

    /// Ping again in an existing session (the thesis's periodic NSLP refresh: GIST reuses the
    /// session's routing state). Returns the sequence number.
    pub fn ping_session(
        &mut self,
        gist: &mut dyn GistApi,
        now: Instant,
        session_id: SessionId,
        source: IpAddr,
        destination: IpAddr,
    ) -> Result<u32, ApiError> {
        let reliable = self.cfg.reliable;
        self.ping_session_with(gist, now, session_id, source, destination, reliable)
    }

    /// [`PingNslp::ping_session`], asking GIST for reliable transfer (C-mode over a messaging
    /// association) or not, whatever the configuration says. The nodes on the way forward the
    /// ping, and the destination its reply, the way it reached them.
    pub fn ping_session_with(
        &mut self,
        gist: &mut dyn GistApi,
        now: Instant,
        session_id: SessionId,
        source: IpAddr,
        destination: IpAddr,
        reliable: bool,
    ) -> Result<u32, ApiError> {
        let transfer = TransferAttributes {
            reliable,
            ..TransferAttributes::default()
        };
        self.ping_session_transfer(gist, now, session_id, source, destination, transfer)
    }

    /// [`PingNslp::ping_session`] with these transfer attributes: `secure` asks for C-mode over
    /// TLS (RFC 5971 §5.7.3) on every hop, the reply included.
    pub fn ping_session_transfer(
        &mut self,
        gist: &mut dyn GistApi,
        now: Instant,
        session_id: SessionId,
        source: IpAddr,
        destination: IpAddr,
        transfer: TransferAttributes,
    ) -> Result<u32, ApiError> {
        self.outstanding.expire(now);
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        let msg = PingMessage {
            kind: PingKind::Request,
            seq,
            sent_at: now,
            hops: Vec::new(),
        };
        let mri = Mri::PathCoupled(PathCoupledMri::flow(source, destination));
        let mut send = SendMessage::new(self.cfg.nslpid, session_id, mri, msg.emit());
        send.transfer.reliable = transfer.reliable;
        send.transfer.secure = transfer.secure;
        let h = gist.send_message(now, send)?;
        self.handles.insert(h, (session_id, seq));
        if self.handles.len() > 4096 {
            self.handles.clear(); // only failures need them; bound the memory
        }
        self.outstanding.insert(
            session_id,
            now + self.cfg.timeout,
            Outstanding { destination, seq },
        );
        self.stats.sent += 1;
        Ok(seq)
    }

    fn here(&self, gist: &dyn GistApi, like: IpAddr) -> Option<IpAddr> {
        self.cfg.record_addr.or_else(|| gist.local_address(like))
    }

    fn send(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        m: &RecvMessage,
        mri: Mri,
        data: Vec<u8>,
    ) {
        // RFC 5971 §4.3.2: the incoming hop count, one less, goes on with the message; at
        // zero the message stops here (a loop, or too small an initial count).
        let hops = m.gist_hops.saturating_sub(1);
        if hops == 0 {
            self.stats.hop_limit += 1;
            return;
        }
        let mut s = SendMessage::new(self.cfg.nslpid, m.session_id, mri, data);
        s.gist_hops = Some(hops);
        s.transfer.reliable = self.cfg.reliable || m.transfer.reliable;
        s.transfer.secure = m.transfer.secure;
        if let Err(e) = gist.send_message(now, s) {
            self.stats.refused += 1;
            tracing::debug!(error = %e, "ping not forwarded");
        }
    }
}

impl Nslp for PingNslp {
    fn nslpid(&self) -> u16 {
        self.cfg.nslpid
    }

    fn recv_message(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        m: RecvMessage,
    ) -> RoutingDecision {
        if m.nslp_data.is_empty() {
            return RoutingDecision::ACCEPT; // a refresh Query: keep peering
        }
        let Some(mut p) = PingMessage::parse(&m.nslp_data) else {
            self.stats.malformed += 1;
            return RoutingDecision::ACCEPT;
        };
        let (Some(src), Some(dst)) = (m.mri.source(), m.mri.destination()) else {
            return RoutingDecision::ACCEPT;
        };
        match p.kind {
            PingKind::Request => {
                if let Some(addr) = self.here(gist, dst) {
                    p.hops.push(PingHop {
                        addr,
                        timestamp: now,
                    });
                }
                if gist.is_local(dst) {
                    // The destination: turn it back (seed 000 §4.1.2).
                    p.kind = PingKind::Reply;
                    self.stats.answered += 1;
                    if m.routing_state_check {
                        // No state here yet: the reply rides the Response.
                        return RoutingDecision::Accept {
                            response_data: Some(p.emit()),
                        };
                    }
                    self.send(now, gist, &m, m.mri.with_direction(true), p.emit());
                } else {
                    self.stats.forwarded += 1;
                    self.send(now, gist, &m, m.mri.with_direction(false), p.emit());
                }
            }
            PingKind::Reply => {
                let mine = gist.is_local(src)
                    && self
                        .outstanding
                        .get(&m.session_id)
                        .is_some_and(|o| o.seq == p.seq);
                if mine {
                    self.stats.replies += 1;
                    let destination = self
                        .outstanding
                        .remove(&m.session_id)
                        .map_or(dst, |o| o.destination);
                    gist.report(NslpEvent::Ping(PingEvent::Reply {
                        session_id: m.session_id,
                        seq: p.seq,
                        destination,
                        rtt: now.saturating_duration_since(p.sent_at),
                        path: p.hops,
                    }));
                } else if !gist.is_local(src) {
                    self.stats.replies_forwarded += 1;
                    self.send(
                        now,
                        gist,
                        &m,
                        m.mri.with_direction(true),
                        m.nslp_data.clone(),
                    );
                }
            }
        }
        RoutingDecision::ACCEPT
    }

    fn message_status(&mut self, _now: Instant, gist: &mut dyn GistApi, status: MessageStatus) {
        let (Some(error), Some((session_id, seq))) =
            (status.error, self.handles.remove(&status.handle))
        else {
            return;
        };
        self.outstanding.remove(&session_id);
        gist.report(NslpEvent::Ping(PingEvent::Failed {
            session_id,
            seq,
            error,
        }));
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn ping_message_round_trips() {
        let m = PingMessage {
            kind: PingKind::Reply,
            seq: 7,
            sent_at: Instant::from_millis(3),
            hops: vec![
                PingHop {
                    addr: IpAddr::V4(Ipv4Addr::new(10, 255, 0, 3)),
                    timestamp: Instant::from_millis(4),
                },
                PingHop {
                    addr: "fd00::1".parse().unwrap(),
                    timestamp: Instant::from_millis(5),
                },
            ],
        };
        let b = m.emit();
        assert_eq!(b.len() % 4, 0);
        assert_eq!(PingMessage::parse(&b), Some(m));
        assert_eq!(PingMessage::parse(&b[..b.len() - 1]), None);
        assert_eq!(PingMessage::parse(&[]), None);
    }
}
