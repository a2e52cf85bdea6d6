//! Neighbour liveness with Hello messages (RFC 3209 §5), per interface where
//! [`InterfaceConfig::hello`](super::InterfaceConfig::hello) is set.
//!
//! The neighbours tracked are the RSVP neighbours this node has state with over a Hello-enabled
//! interface: previous hops of path state and next hops of reservations, keyed by (interface,
//! address). A neighbour is taken up when the first such state appears — a HELLO REQUEST goes
//! out at once — and forgotten when the last goes.
//!
//! Per neighbour the engine keeps the neighbour's last Src_Instance, when a Hello was last heard
//! and one timer, due at the earlier of the next REQUEST and the dead deadline. Our own
//! Src_Instance is one non-zero number per engine start (§5.3: it changes when the node
//! restarts), drawn from a generator seeded from [`Config::seed`](super::Config::seed) apart
//! from the engine's main one so that enabling Hello leaves every other random draw unchanged.
//!
//! Procedures (§5.3): a REQUEST every `interval` to each neighbour, unicast over the interface
//! with TTL 1 and no Router Alert; every REQUEST is answered with an ACK (Src = ours, Dst =
//! theirs), tracked neighbour or not. A neighbour whose Src_Instance changes, or which names a
//! non-zero Dst_Instance other than ours, has restarted; one silent for `failure_multiplier ×
//! interval` after it was first heard has failed. A neighbour never heard is taken not to speak
//! Hello and is never declared failed (the RFC leaves Hello optional per neighbour).
//!
//! On failure or restart the state that depended on the neighbour goes at once, as it would on
//! timeout: path state whose previous hop it was (PathTear downstream) and reservations whose
//! next hop it was (re-merged, so upstream learns by refresh or ResvTear); after a restart the
//! Path state sent towards it is refreshed right away so it is re-signalled within a round trip.
//! Finding that state scans the sessions: a rare event pays, not the message path.

use super::state::{PsbId, RsbId, SessionId};
use super::{RsvpEngine, TrafficControl};
use crate::wire::{Hello, HelloKind, HelloObject, Message};
use pathwise_core::io::{IfIndex, Received};
use pathwise_core::rand::Rng;
use pathwise_core::table::{KeyedMap, keyed_map};
use pathwise_core::time::{Duration, Instant};
use pathwise_core::timer::{TimerHandle, TimerWheel, WheelConfig};
use smallvec::SmallVec;
use std::net::IpAddr;

/// Hello settings of one interface (RFC 3209 §5.3).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HelloConfig {
    /// hello_interval: time between HELLO REQUESTs to each neighbour (RFC 3209 §5.3: default
    /// 5 ms).
    pub interval: Duration,
    /// A neighbour not heard for this many intervals has failed (RFC 3209 §5.3: default 3.5).
    pub failure_multiplier: f64,
}

impl Default for HelloConfig {
    fn default() -> Self {
        HelloConfig {
            interval: Duration::from_millis(5),
            failure_multiplier: 3.5,
        }
    }
}

impl HelloConfig {
    /// How long a neighbour may stay silent before it is declared failed.
    pub fn dead_interval(&self) -> Duration {
        self.interval.mul_f64(self.failure_multiplier.max(1.0))
    }
}

/// What Hello did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HelloCounters {
    /// Hello messages sent (REQUESTs and ACKs).
    pub sent: u64,
    /// Hello messages received and processed.
    pub received: u64,
    /// Neighbours declared failed: no Hello for the dead interval.
    pub neighbor_failures: u64,
    /// Neighbours found restarted: a new Src_Instance, or a Dst_Instance not ours.
    pub neighbor_restarts: u64,
}

/// A neighbour: our interface towards it and its address.
pub(super) type NeighborKey = (IfIndex, IpAddr);

#[derive(Debug)]
struct Neighbor {
    /// State blocks that depend on it (PSBs through their PHOP, RSBs).
    refs: u32,
    /// Its last Src_Instance (0: none heard yet).
    theirs: u32,
    /// When a Hello from it last arrived.
    heard: Option<Instant>,
    /// When the next REQUEST is due.
    next_request: Instant,
    timer: Option<TimerHandle>,
}

/// A neighbour as Hello sees it (for inspection).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HelloNeighbor {
    /// Our interface towards it.
    pub ifindex: IfIndex,
    /// Its address.
    pub addr: IpAddr,
    /// Its Src_Instance as last heard (0: nothing heard yet).
    pub instance: u32,
    /// When a Hello from it last arrived.
    pub heard: Option<Instant>,
    /// Path and reservation state blocks that depend on it.
    pub state_blocks: u32,
}

/// The Hello state of an engine.
#[derive(Debug)]
pub(super) struct HelloState {
    /// Our Src_Instance.
    instance: u32,
    neighbors: KeyedMap<NeighborKey, Neighbor>,
    timers: TimerWheel<NeighborKey>,
}

/// Mixed into the engine seed for the Hello generator.
const HELLO_SEED: u64 = 0x4845_4c4c_4f5f_3230; // "HELLO_20"

impl HelloState {
    /// `instance`: the node's, when it is given (a shard's); else drawn from `seed`.
    pub(super) fn new(seed: u64, instance: Option<u32>, wheel: WheelConfig, now: Instant) -> Self {
        let mut rng = pathwise_core::rng::seeded(seed ^ HELLO_SEED);
        let drawn = rng.random::<u32>().max(1);
        HelloState {
            instance: instance.filter(|&i| i != 0).unwrap_or(drawn),
            neighbors: keyed_map(&mut rng),
            timers: TimerWheel::new(wheel, now),
        }
    }

    /// Our Src_Instance.
    pub(super) fn instance(&self) -> u32 {
        self.instance
    }

    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.timers.next_deadline()
    }
}

impl<T: TrafficControl> RsvpEngine<T> {
    /// The Hello settings of `ifindex`, if Hello is on there.
    fn hello_config(&self, ifindex: IfIndex) -> Option<HelloConfig> {
        self.cfg
            .interfaces
            .iter()
            .find(|i| i.ifindex == ifindex)
            .and_then(|i| i.hello)
    }

    /// Our Src_Instance (RFC 3209 §5.3).
    pub fn hello_instance(&self) -> u32 {
        self.hello.instance()
    }

    /// The neighbours Hello tracks.
    pub fn hello_neighbors(&self) -> impl Iterator<Item = HelloNeighbor> + '_ {
        self.hello
            .neighbors
            .iter()
            .map(|(&(ifindex, addr), n)| HelloNeighbor {
                ifindex,
                addr,
                instance: n.theirs,
                heard: n.heard,
                state_blocks: n.refs,
            })
    }

    /// State towards `key` appeared: track the neighbour, greeting it at once if it is new.
    pub(super) fn hello_acquire(&mut self, ifindex: IfIndex, addr: IpAddr) {
        let Some(cfg) = self.hello_config(ifindex) else {
            return;
        };
        if self.is_local(addr) {
            return;
        }
        let key = (ifindex, addr);
        if let Some(n) = self.hello.neighbors.get_mut(&key) {
            n.refs += 1;
            return;
        }
        let now = self.now;
        self.hello.neighbors.insert(
            key,
            Neighbor {
                refs: 1,
                theirs: 0,
                heard: None,
                next_request: now + cfg.interval,
                timer: None,
            },
        );
        tracing::debug!(ifindex = ifindex.0, neighbor = %addr, "hello: tracking neighbour");
        self.send_hello(key, HelloKind::Request, 0);
        self.arm_hello(key, cfg);
    }

    /// State towards `key` went: forget the neighbour with the last of it.
    pub(super) fn hello_release(&mut self, ifindex: IfIndex, addr: IpAddr) {
        let key = (ifindex, addr);
        let Some(n) = self.hello.neighbors.get_mut(&key) else {
            return;
        };
        n.refs = n.refs.saturating_sub(1);
        if n.refs == 0 {
            if let Some(h) = n.timer {
                self.hello.timers.cancel(h);
            }
            self.hello.neighbors.remove(&key);
            tracing::debug!(ifindex = ifindex.0, neighbor = %addr, "hello: neighbour forgotten");
        }
    }

    /// Set the neighbour's timer to the earlier of its next REQUEST and its dead deadline.
    fn arm_hello(&mut self, key: NeighborKey, cfg: HelloConfig) {
        let Some(n) = self.hello.neighbors.get_mut(&key) else {
            return;
        };
        let dead = n.heard.map_or(Instant::MAX, |h| h + cfg.dead_interval());
        let at = n.next_request.min(dead);
        if let Some(h) = n.timer.take() {
            self.hello.timers.cancel(h);
        }
        n.timer = Some(self.hello.timers.insert(at, key));
    }

    fn send_hello(&mut self, key: NeighborKey, kind: HelloKind, dst_instance: u32) {
        let (ifindex, to) = key;
        let msg = Message::Hello(Hello {
            integrity: None,
            object: HelloObject {
                kind,
                src_instance: self.hello.instance,
                dst_instance,
            },
        });
        let src = self.iface_addr(Some(ifindex), to);
        self.counters.hello.sent += 1;
        // RFC 3209 §5.1: Hellos go to the neighbour only, IP TTL 1.
        self.transmit(&msg, Some(src), to, Some(ifindex), false, 1);
    }

    /// Expire due Hello timers.
    pub(super) fn on_hello_timers(&mut self, now: Instant) {
        while let Some((_, key)) = self.hello.timers.expire(now) {
            self.on_hello_timer(now, key);
        }
    }

    fn on_hello_timer(&mut self, now: Instant, key: NeighborKey) {
        let Some(cfg) = self.hello_config(key.0) else {
            return;
        };
        let Some(n) = self.hello.neighbors.get_mut(&key) else {
            return;
        };
        n.timer = None;
        if n.heard.is_some_and(|h| h + cfg.dead_interval() <= now) {
            // RFC 3209 §5.3: no Hello for the dead interval — the link or the node failed.
            n.heard = None;
            n.theirs = 0;
            self.counters.hello.neighbor_failures += 1;
            tracing::warn!(
                ifindex = key.0.0,
                neighbor = %key.1,
                "rsvp hello: neighbour failed, tearing down its state"
            );
            self.hello_tear_down(key, false);
            if !self.hello.neighbors.contains_key(&key) {
                return;
            }
        }
        let Some(n) = self.hello.neighbors.get_mut(&key) else {
            return;
        };
        if n.next_request <= now {
            n.next_request = now + cfg.interval;
            let theirs = n.theirs;
            self.send_hello(key, HelloKind::Request, theirs);
        }
        self.arm_hello(key, cfg);
    }

    /// Whether this engine answers for the node what every shard is handed (Hello REQUESTs,
    /// Integrity Challenges) and counts it: an unsharded one, or shard 0 of a sharded node.
    /// Every shard is handed every Hello ([`crate::shard`]) and takes its neighbours' liveness
    /// and Src_Instance from it, and every Challenge; one of them speaks for the node, so a
    /// neighbour gets one ACK per REQUEST and one Response per Challenge, and the node's
    /// counters count each once.
    pub(super) fn speaks_for_node(&self) -> bool {
        self.cfg.shard.as_ref().is_none_or(|s| s.index == 0)
    }

    /// A Hello message arrived (after integrity checks).
    pub(super) fn on_hello(&mut self, now: Instant, rx: &Received<'_>, h: Hello) {
        let answers = self.speaks_for_node();
        let Some(cfg) = self.hello_config(rx.ifindex) else {
            if answers {
                self.drop_msg("hello_disabled");
            }
            return;
        };
        let o = h.object;
        if o.src_instance == 0 {
            if answers {
                self.drop_msg("hello_zero_instance"); // §5.2: MUST NOT be zero
            }
            return;
        }
        if answers {
            self.counters.hello.received += 1;
        }
        let key = (rx.ifindex, rx.src);
        let ours = self.hello.instance;
        let restarted = match self.hello.neighbors.get_mut(&key) {
            Some(n) => {
                // §5.3: a changed Src_Instance, or a Dst_Instance that is set but not ours.
                let restarted = (n.theirs != 0 && n.theirs != o.src_instance)
                    || (o.dst_instance != 0 && o.dst_instance != ours);
                n.theirs = o.src_instance;
                n.heard = Some(now);
                restarted
            }
            None => false,
        };
        if o.kind == HelloKind::Request && answers {
            self.send_hello(key, HelloKind::Ack, o.src_instance);
        }
        if restarted {
            self.counters.hello.neighbor_restarts += 1;
            tracing::warn!(
                ifindex = key.0.0,
                neighbor = %key.1,
                instance = o.src_instance,
                "rsvp hello: neighbour restarted, re-signalling"
            );
            self.hello_tear_down(key, true);
            if let Some(n) = self.hello.neighbors.get_mut(&key) {
                n.theirs = o.src_instance;
                n.heard = Some(now);
            }
        }
        if self.hello.neighbors.contains_key(&key) {
            self.arm_hello(key, cfg);
        }
    }

    /// Remove the state that depended on a failed or restarted neighbour (RFC 3209 §5.3), as a
    /// timeout would; after a restart, send it our Path state again at once.
    fn hello_tear_down(&mut self, key: NeighborKey, restarted: bool) {
        let (ifindex, addr) = key;
        let sids: Vec<SessionId> = self.sessions.iter().map(|(id, _)| id).collect();
        for sid in sids {
            if !self.sessions.contains(sid) {
                continue;
            }
            let psbs: SmallVec<[PsbId; 2]> = self
                .psbs_of(sid)
                .filter(|&p| {
                    self.psbs[p].phop().is_some_and(|ph| {
                        let ph = &self.phops[ph];
                        ph.ifindex == ifindex && ph.hop.addr == addr
                    })
                })
                .collect();
            let rsbs: SmallVec<[RsbId; 2]> = self
                .rsbs_of(sid)
                .filter(|&r| {
                    let r = &self.rsbs[r];
                    r.oi() == Some(ifindex)
                        && r.nhop().is_some_and(|h| self.hops.get(h).addr == addr)
                })
                .collect();
            for &p in &psbs {
                self.remove_psb(p, true);
            }
            for &r in &rsbs {
                self.remove_rsb(sid, r);
            }
            if !psbs.is_empty() || !rsbs.is_empty() {
                self.after_path_removal(sid);
            }
            if restarted && self.sessions.contains(sid) {
                let towards: SmallVec<[PsbId; 2]> = self
                    .psbs_of(sid)
                    .filter(|&p| self.psbs[p].oifs.contains(&Some(ifindex)))
                    .collect();
                for p in towards {
                    self.send_path(p, &[Some(ifindex)]);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_defaults() {
        let c = HelloConfig::default();
        assert_eq!(c.interval, Duration::from_millis(5));
        assert_eq!(c.dead_interval(), Duration::from_micros(17_500));
    }

    #[test]
    fn instance_is_non_zero_and_follows_the_seed() {
        let now = Instant::ZERO;
        let a = HelloState::new(1, None, WheelConfig::default(), now);
        let b = HelloState::new(1, None, WheelConfig::default(), now);
        let c = HelloState::new(2, None, WheelConfig::default(), now);
        assert_ne!(a.instance(), 0);
        assert_eq!(a.instance(), b.instance());
        assert_ne!(a.instance(), c.instance());
    }
}
