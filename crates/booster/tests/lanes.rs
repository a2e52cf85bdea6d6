//! Lanes (multi-queue gateways, docs/booster-wire.md "Lanes"): each lane's sender seals under
//! its own sender id, drawn from the one counter of the gateway's shared context; the
//! receiving lanes share one context, so a datagram of one lane replayed into another is still
//! a replay, while lanes whose counters drift far apart lose nothing. Without sockets.

use pathwise_booster::Packet;
use pathwise_booster::admission::PolicyEpochs;
use pathwise_booster::boosters::{
    BoosterEnv, CryptoContext, LaneError, MAX_LANE_BASE_ID, MAX_LANES, REPLAY_WINDOW,
    lane_sender_id,
};
use pathwise_booster::pipeline::{Receiver, Sender};
use pathwise_booster::policy::PolicySnapshot;
use pathwise_booster::stats::{Counters, DropReason};
use pathwise_booster::vectors::{COUNTER_START, KEY, PEER, ipv4, peer_policies, snapshot};
use pathwise_core::time::Instant;
use std::net::SocketAddr;
use std::sync::Arc;

/// A gateway's environment sending as `id` on `lanes` lanes.
fn env(id: u32, lanes: u8) -> BoosterEnv {
    BoosterEnv {
        crypto: Some(Arc::new(
            CryptoContext::new(&KEY, id, COUNTER_START)
                .with_lanes(lanes)
                .unwrap(),
        )),
    }
}

/// The peer's address on lane `lane`: its port plus the lane.
fn peer_on(lane: u8) -> SocketAddr {
    SocketAddr::new(PEER.ip(), PEER.port() + u16::from(lane))
}

/// Gateway A (sender id 1) sending on two lanes to gateway B (sender id 2) receiving on two,
/// both with `encrypt`.
struct Lanes {
    tx: Vec<Sender>,
    rx: Vec<Receiver>,
    policies: PolicyEpochs,
    snap: PolicySnapshot,
    rx_counters: Arc<Counters>,
    now: Instant,
}

impl Lanes {
    fn new(a_lanes: u8, b_lanes: u8) -> Self {
        let (a, b) = (env(1, a_lanes), env(2, b_lanes));
        let rx_counters = Arc::new(Counters::default());
        Lanes {
            tx: (0..a_lanes)
                .map(|l| Sender::new(a.clone(), 1400, Arc::default()).on_lane(l))
                .collect(),
            rx: (0..b_lanes)
                .map(|l| Receiver::new(b.clone(), &[peer_on(l)], rx_counters.clone()))
                .collect(),
            policies: peer_policies(&["encrypt"]).unwrap(),
            snap: snapshot(1, &["encrypt"]).unwrap(),
            rx_counters,
            now: Instant::from_secs(1),
        }
    }

    /// Boost packet `n` on lane `lane`: its one datagram.
    fn boost(&mut self, lane: usize, n: u32) -> Vec<u8> {
        let tx = &mut self.tx[lane];
        let mut p = tx.pool().get();
        p.set_payload(&ipv4(200, n, false)).unwrap();
        let mut out: Vec<Packet> = Vec::new();
        tx.boost(self.now, &self.snap, p, &mut out);
        assert_eq!(out.len(), 1);
        let d = out[0].payload().to_vec();
        out.drain(..).for_each(|p| tx.recycle(p));
        d
    }

    /// Deliver `d` to receiving lane `lane` from `from`: how many packets came out.
    fn deliver_from(&mut self, lane: usize, from: SocketAddr, d: &[u8]) -> usize {
        let rx = &mut self.rx[lane];
        let mut p = rx.pool().get();
        p.set_payload(d).unwrap();
        let mut out = Vec::new();
        rx.deboost(self.now, from, &self.policies, p, &mut out, |_| {});
        let n = out.len();
        out.drain(..).for_each(|p| rx.recycle(p));
        n
    }

    /// Deliver `d` to receiving lane `lane` from the peer's address on that lane.
    fn deliver(&mut self, lane: usize, d: &[u8]) -> usize {
        self.deliver_from(lane, peer_on(lane as u8), d)
    }
}

/// The nonce's sender id in a datagram of the `encrypt` chain (after the 9-byte header).
fn sender_of(d: &[u8]) -> u32 {
    u32::from_be_bytes([d[9], d[10], d[11], d[12]])
}

#[test]
fn each_lane_seals_under_its_own_sender_id_with_the_lane_in_the_top_byte() {
    assert_eq!(lane_sender_id(2, 0), 2);
    assert_eq!(lane_sender_id(2, 1), 0x0100_0002);
    assert_eq!(lane_sender_id(MAX_LANE_BASE_ID, 15), 0x0fff_ffff);
    let mut l = Lanes::new(2, 2);
    let d0 = l.boost(0, 1);
    let d1 = l.boost(1, 2);
    assert_eq!((sender_of(&d0), sender_of(&d1)), (1, 0x0100_0001));
    // One lane is the wire of a gateway without lanes: the configured id itself.
    let mut one = Lanes::new(1, 1);
    assert_eq!(sender_of(&one.boost(0, 1)), 1);
    // Counters come from the one shared counter: never the same nonce twice across lanes.
    let c = |d: &[u8]| u64::from_be_bytes(d[13..21].try_into().unwrap());
    assert_eq!(c(&d1), c(&d0) + 1);
}

#[test]
fn lane_counts_and_configured_ids_that_leave_no_room_for_the_lane_are_refused() {
    let ctx = || CryptoContext::new(&KEY, 5, 0);
    assert_eq!(ctx().with_lanes(0).unwrap_err(), LaneError::Count(0));
    assert_eq!(
        ctx().with_lanes(MAX_LANES + 1).unwrap_err(),
        LaneError::Count(MAX_LANES + 1)
    );
    assert!(ctx().with_lanes(MAX_LANES).is_ok());
    let big = MAX_LANE_BASE_ID + 1;
    assert_eq!(
        CryptoContext::new(&KEY, big, 0).with_lanes(2).unwrap_err(),
        LaneError::SenderId(big)
    );
    // Without lanes any id is fine, as before.
    assert!(CryptoContext::new(&KEY, u32::MAX, 0).with_lanes(1).is_ok());
}

#[test]
fn a_datagram_of_one_lane_replayed_into_another_lane_is_dropped() {
    let mut l = Lanes::new(2, 2);
    let d0 = l.boost(0, 1);
    let d1 = l.boost(1, 2);
    assert_eq!(l.deliver(0, &d0), 1);
    assert_eq!(l.deliver(1, &d1), 1);
    // An attacker on the link sends each again to the other lane's port, from the address
    // that lane accepts.
    assert_eq!(l.deliver(1, &d0), 0);
    assert_eq!(l.deliver(0, &d1), 0);
    // And to its own lane.
    assert_eq!(l.deliver(0, &d0), 0);
    assert_eq!(l.rx_counters.drops(DropReason::Replay), 3);
    // A lane accepts only the peer's port of that lane.
    let d = l.boost(0, 3);
    assert_eq!(l.deliver_from(1, peer_on(0), &d), 0);
    assert_eq!(l.rx_counters.drops(DropReason::UnknownPeer), 1);
    assert_eq!(l.deliver(0, &d), 1);
    assert_eq!(l.rx_counters.report().total_drops(), 4);
}

#[test]
fn lanes_whose_counters_drift_far_apart_lose_nothing() {
    let mut l = Lanes::new(2, 2);
    // Lane 1 seals one packet, then lane 0 draws ten windows' worth of counters, then lane 1
    // another; lane 0's arrive first, as when lane 1's socket or thread lags behind.
    let early = l.boost(1, 0);
    let busy: Vec<Vec<u8>> = (1..=10 * REPLAY_WINDOW as u32)
        .map(|n| l.boost(0, n))
        .collect();
    let late = l.boost(1, u32::MAX);
    for d in &busy {
        assert_eq!(l.deliver(0, d), 1);
    }
    assert_eq!(l.deliver(1, &early), 1, "lane 1's first packet");
    assert_eq!(l.deliver(1, &late), 1, "lane 1's second packet");
    assert_eq!(l.rx_counters.report().total_drops(), 0);
    // The same traffic under one sender id is what the per-lane ids avoid: the early packet
    // is now left of the window.
    let mut one = Lanes::new(1, 1);
    let early = one.boost(0, 0);
    for n in 1..=10 * REPLAY_WINDOW as u32 {
        let d = one.boost(0, n);
        assert_eq!(one.deliver(0, &d), 1);
    }
    assert_eq!(one.deliver(0, &early), 0);
    assert_eq!(one.rx_counters.drops(DropReason::Replay), 1);
}

#[test]
fn a_datagram_carrying_any_of_our_own_lane_ids_is_a_reflection() {
    // Gateway B's own lane 1 sends; B's lane 0 receives it as if from the peer.
    let b = env(2, 2);
    let mut own = Sender::new(b.clone(), 1400, Arc::default()).on_lane(1);
    let snap = snapshot(1, &["encrypt"]).unwrap();
    let mut p = own.pool().get();
    p.set_payload(&ipv4(200, 1, false)).unwrap();
    let mut out = Vec::new();
    own.boost(Instant::from_secs(1), &snap, p, &mut out);
    assert_eq!(sender_of(out[0].payload()), 0x0100_0002);
    let counters = Arc::new(Counters::default());
    let mut rx = Receiver::new(b, &[PEER], counters.clone());
    let mut q = rx.pool().get();
    q.set_payload(out[0].payload()).unwrap();
    let mut got = Vec::new();
    let policies = peer_policies(&["encrypt"]).unwrap();
    rx.deboost(Instant::from_secs(1), PEER, &policies, q, &mut got, |_| {});
    assert!(got.is_empty());
    assert_eq!(counters.drops(DropReason::Reflected), 1);
    // The peer's lane 1 id (1 | 1 << 24) is not ours: a gateway with lanes still takes it.
    let mut l = Lanes::new(2, 2);
    let d = l.boost(1, 7);
    assert_eq!(l.deliver(1, &d), 1);
}
