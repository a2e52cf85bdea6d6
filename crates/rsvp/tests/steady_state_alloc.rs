//! The steady state allocates nothing of its own (issue #21, "zero allocation on the receive
//! and send paths in steady state"): at a transit holding FF reservations, an unchanged Path
//! refresh costs no heap allocation at all, and neither does an unchanged Resv refresh (its
//! flow descriptor and filter lists hold their one entry inline), nor the node's own refreshes
//! sent. Counted by this test binary's own global allocator, per thread, so the harness's
//! other threads do not count.

use pathwise_core::engine::Engine;
use pathwise_core::io::IfIndex;
use pathwise_core::time::Instant;
use pathwise_rsvp::RsvpEngine;
use pathwise_rsvp::testing::{
    DOWN, NHOP, PHOP, UP, bytes, ff, path, received, resv, resv_tear, route, router_config, sender,
    session,
};
use pathwise_rsvp::wire::{Message, StyleKind};
use std::net::Ipv4Addr;

#[path = "../../core/tests/support/per_thread_alloc.rs"]
mod per_thread_alloc;

/// Allocations `f` makes on this thread.
fn allocations(f: impl FnOnce()) -> usize {
    let before = per_thread_alloc::calls();
    f();
    per_thread_alloc::calls() - before
}

const SESSIONS: u16 = 64;

/// The crate's transit router (`testing`): PHOP upstream on UP, NHOP downstream on DOWN.
fn transit() -> RsvpEngine {
    let mut e = RsvpEngine::with_memory_tc(router_config(10_000_000), Instant::ZERO);
    e.handle_route_change(Instant::ZERO, route());
    e
}

fn path_bytes(i: u16) -> Vec<u8> {
    bytes(&path(session(1000 + i), sender(2000 + i)), 64)
}

fn resv_bytes(i: u16) -> Vec<u8> {
    let f = ff(1000.0, sender(2000 + i));
    bytes(&resv(session(1000 + i), StyleKind::Ff, f), 64)
}

/// Hand `msgs` to the engine as from `from` on `ifindex`; every message it sends, counted.
fn feed(
    e: &mut RsvpEngine,
    now: Instant,
    msgs: &[Vec<u8>],
    from: Ipv4Addr,
    ifindex: IfIndex,
) -> usize {
    let mut sent = 0;
    for m in msgs {
        e.handle_datagram(now, received(from, ifindex, 63, m));
        while e.poll_transmit().is_some() {
            sent += 1;
        }
    }
    sent
}

#[test]
fn unchanged_refreshes_at_a_transit_allocate_nothing_of_their_own() {
    // Every figure below is a zero: first, the counter counts.
    assert_eq!(
        allocations(|| drop(std::hint::black_box(Vec::<u8>::with_capacity(8)))),
        1,
        "the counting allocator counts this thread's allocations"
    );
    let paths: Vec<Vec<u8>> = (0..SESSIONS).map(path_bytes).collect();
    let resvs: Vec<Vec<u8>> = (0..SESSIONS).map(resv_bytes).collect();
    let mut e = transit();
    let t1 = Instant::from_secs(1);
    assert_eq!(
        feed(&mut e, t1, &paths, PHOP, UP),
        paths.len(),
        "each Path forwarded"
    );
    assert_eq!(
        feed(&mut e, t1, &resvs, NHOP, DOWN),
        resvs.len(),
        "each Resv forwarded"
    );
    assert_eq!(e.state_stats().out_isbs, usize::from(SESSIONS));

    // The same messages again, 10 s later: refreshes that change nothing (RFC 2205 §3.1.3,
    // §3.1.4: state refreshed, nothing forwarded until the node's own refresh timer).
    let t2 = Instant::from_secs(11);
    let mut sent = 0;
    let on_paths = allocations(|| sent += feed(&mut e, t2, &paths, PHOP, UP));
    let on_resvs = allocations(|| sent += feed(&mut e, t2, &resvs, NHOP, DOWN));
    assert_eq!(sent, 0, "an unchanged refresh is not forwarded");
    let parsing = allocations(|| {
        for m in &resvs {
            drop(Message::parse(m).expect("parses"));
        }
    });
    assert_eq!(
        on_paths, 0,
        "Path refreshes: {on_paths} allocations for {SESSIONS}"
    );
    assert_eq!(
        parsing, 0,
        "parsing {SESSIONS} FF Resvs: {parsing} allocations"
    );
    assert_eq!(
        on_resvs, 0,
        "Resv refreshes: {on_resvs} allocations for {SESSIONS}"
    );
    // Still all there.
    assert_eq!(e.state_stats().out_isbs, usize::from(SESSIONS));

    // The node's own refreshes (RFC 2205 §3.7: within 1.5 R of the last), sent by a driver
    // that hands each payload back once sent (`RsvpEngine::recycle`), cost nothing. A first
    // round of refreshes warms up (the timer wheel's scratch space, the recycled buffers);
    // the second is counted. The states, refreshed at 11 s, live past both (L ≥ 3.5 R).
    let run_timers = |e: &mut RsvpEngine, until: Instant| {
        let (mut paths, mut resvs) = (0, 0);
        while let Some(due) = e.poll_timeout().filter(|&t| t <= until) {
            e.handle_timeout(due);
            while let Some(t) = e.poll_transmit() {
                match t.payload.get(1) {
                    Some(1) => paths += 1,
                    Some(2) => resvs += 1,
                    other => panic!("a refresh, not message type {other:?}"),
                }
                e.recycle(t.payload);
            }
        }
        (paths, resvs)
    };
    run_timers(&mut e, Instant::from_secs(47));
    let mut sent = (0, 0);
    let on_timers = allocations(|| sent = run_timers(&mut e, Instant::from_secs(92)));
    let (paths_sent, resvs_sent) = sent;
    assert!(
        paths_sent >= usize::from(SESSIONS),
        "{paths_sent} Path refreshes"
    );
    assert!(
        resvs_sent >= usize::from(SESSIONS),
        "{resvs_sent} Resv refreshes"
    );
    assert_eq!(e.state_stats().out_isbs, usize::from(SESSIONS));
    assert_eq!(
        on_timers, 0,
        "{on_timers} allocations while {paths_sent} Paths and {resvs_sent} Resvs were sent"
    );
}

/// Hand `msgs` to the engine, giving back every payload it sends (`RsvpEngine::recycle`) and
/// taking its events, as the daemon does; the messages sent.
fn feed_recycling(e: &mut RsvpEngine, msgs: &[Vec<u8>], from: Ipv4Addr, ifindex: IfIndex) -> usize {
    let mut sent = 0;
    for m in msgs {
        e.handle_datagram(Instant::from_secs(1), received(from, ifindex, 63, m));
        while let Some(t) = e.poll_transmit() {
            sent += 1;
            e.recycle(t.payload);
        }
        while e.poll_event().is_some() {}
    }
    sent
}

/// A new FF reservation for a sender whose Path is held allocates nothing of its own once the
/// tables have room (a million flows set up at churn is a million of them, issue #21): the
/// request's units, classifiers and undo list stay inline, the RSB and traffic control reuse
/// freed slots, the forwarded Resv a recycled buffer. Torn down and made again, counted. One
/// reservation stays throughout: the first holder of a flowspec value interns it (its key is
/// allocated once per distinct value, not per reservation).
#[test]
fn a_new_ff_reservation_at_a_transit_allocates_nothing_of_its_own() {
    let paths: Vec<Vec<u8>> = (0..SESSIONS).map(path_bytes).collect();
    let resvs: Vec<Vec<u8>> = (0..SESSIONS).map(resv_bytes).collect();
    let tears: Vec<Vec<u8>> = (1..SESSIONS)
        .map(|i| {
            let mut t = resv_tear(session(1000 + i));
            if let Message::ResvTear(t) = &mut t {
                t.flows = ff(1000.0, sender(2000 + i));
            }
            bytes(&t, 64)
        })
        .collect();
    let mut e = transit();
    feed_recycling(&mut e, &paths, PHOP, UP);
    let (kept, churned) = resvs.split_at(1);
    assert_eq!(feed_recycling(&mut e, kept, NHOP, DOWN), 1);
    // Made and torn down twice: every table and buffer pool has reached its size.
    for _ in 0..2 {
        assert_eq!(feed_recycling(&mut e, churned, NHOP, DOWN), churned.len());
        assert_eq!(e.state_stats().out_isbs, usize::from(SESSIONS));
        feed_recycling(&mut e, &tears, NHOP, DOWN);
        assert_eq!(e.state_stats().rsbs, 1, "torn down but one");
    }
    let mut sent = 0;
    let made = allocations(|| sent = feed_recycling(&mut e, churned, NHOP, DOWN));
    assert_eq!(sent, churned.len(), "each new Resv forwarded");
    assert_eq!(e.state_stats().out_isbs, usize::from(SESSIONS));
    assert_eq!(
        made,
        0,
        "{made} allocations for {} new reservations",
        churned.len()
    );
}
