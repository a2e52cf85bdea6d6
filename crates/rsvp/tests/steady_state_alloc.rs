//! The steady state allocates nothing of its own (issue #21, "zero allocation on the receive
//! and send paths in steady state"): at a transit holding FF reservations, an unchanged Path
//! refresh costs no heap allocation at all, and an unchanged Resv refresh none beyond what
//! parsing the message into its owned form takes. Counted by this test binary's own global
//! allocator, per thread, so the harness's other threads do not count.

use pathwise_core::engine::Engine;
use pathwise_core::io::{IPPROTO_RSVP, IfIndex, Received, Transport};
use pathwise_core::route::{Route, RouteChange};
use pathwise_core::time::{Duration, Instant};
use pathwise_rsvp::engine::{Config, InterfaceConfig, RsvpEngine};
use pathwise_rsvp::wire::{
    Adspec, FilterSpec, FlowDescriptor, FlowSpec, Message, Path, Resv, RsvpHop, SenderDescriptor,
    SenderTspec, Session, Style, StyleKind, TimeValues, TokenBucket,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::net::{IpAddr, Ipv4Addr};

struct PerThread;

thread_local! {
    static CALLS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    let _ = CALLS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: every call is forwarded unchanged to `System`; only a thread-local count is kept.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for PerThread {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: PerThread = PerThread;

/// Allocations `f` makes on this thread.
fn allocations(f: impl FnOnce()) -> usize {
    let before = CALLS.with(Cell::get);
    f();
    CALLS.with(Cell::get) - before
}

const UP: IfIndex = IfIndex(1);
const DOWN: IfIndex = IfIndex(2);
const PHOP: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 1);
const NHOP: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 2);
const SESSIONS: u16 = 64;

fn transit() -> RsvpEngine {
    let iface = |ifindex, a: [u8; 4]| InterfaceConfig {
        ifindex,
        addrs: vec![IpAddr::V4(a.into())],
        bandwidth_bps: 1_000_000_000,
        reservable_bps: 1_000_000_000,
        mtu: 1500,
        latency: Duration::from_micros(50),
        integrity: Default::default(),
        hello: None,
    };
    let cfg = Config {
        interfaces: vec![iface(UP, [10, 0, 1, 2]), iface(DOWN, [10, 0, 2, 1])],
        expected_sessions: usize::from(SESSIONS),
        ..Config::default()
    };
    let mut e = RsvpEngine::with_memory_tc(cfg, Instant::ZERO);
    e.handle_route_change(
        Instant::ZERO,
        RouteChange::Add(Route {
            prefix: "20.0.0.0/8".parse().expect("prefix"),
            next_hop: Some(NHOP.into()),
            ifindex: DOWN,
            metric: 1,
        }),
    );
    e
}

fn tb() -> TokenBucket {
    TokenBucket {
        rate: 1000.0,
        bucket: 1000.0,
        peak: f32::INFINITY,
        min_policed: 64,
        max_packet: 1500,
    }
}

fn session(i: u16) -> (Session, FilterSpec) {
    (
        Session::ip(IpAddr::V4(Ipv4Addr::new(20, 0, 0, 1)), 17, 1000 + i),
        FilterSpec::ip(IpAddr::V4(Ipv4Addr::new(30, 0, 0, 1)), 2000 + i),
    )
}

fn path(i: u16) -> Vec<u8> {
    let (s, f) = session(i);
    bytes(&Message::Path(Path {
        integrity: None,
        session: s,
        hop: RsvpHop::new(PHOP.into(), UP.0),
        time_values: TimeValues { refresh_ms: 30_000 },
        explicit_route: None,
        label_request: None,
        session_attribute: None,
        policy: Vec::new(),
        sender: SenderDescriptor {
            template: f,
            tspec: SenderTspec(tb()),
            adspec: Some(Adspec::new_at_sender(true, true)),
            record_route: None,
        },
        forward: Vec::new(),
    }))
}

fn resv(i: u16) -> Vec<u8> {
    let (s, f) = session(i);
    bytes(&Message::Resv(Resv {
        integrity: None,
        session: s,
        hop: RsvpHop::new(NHOP.into(), DOWN.0),
        time_values: TimeValues { refresh_ms: 30_000 },
        confirm: None,
        scope: None,
        policy: Vec::new(),
        style: Style {
            flags: 0,
            kind: StyleKind::Ff,
        },
        flows: vec![FlowDescriptor {
            flowspec: Some(FlowSpec::ControlledLoad(tb())),
            filters: vec![f],
            te: Vec::new(),
        }],
        forward: Vec::new(),
    }))
}

fn bytes(m: &Message) -> Vec<u8> {
    let mut v = Vec::new();
    m.emit(64, &mut v);
    v
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
        e.handle_datagram(
            now,
            Received {
                src: from.into(),
                dst: IpAddr::V4(Ipv4Addr::new(20, 0, 0, 1)),
                ifindex,
                transport: Transport::Raw(IPPROTO_RSVP),
                router_alert: Some(0),
                ttl: 63,
                payload: m,
            },
        );
        while e.poll_transmit().is_some() {
            sent += 1;
        }
    }
    sent
}

#[test]
fn unchanged_refreshes_at_a_transit_allocate_nothing_of_their_own() {
    let paths: Vec<Vec<u8>> = (0..SESSIONS).map(path).collect();
    let resvs: Vec<Vec<u8>> = (0..SESSIONS).map(resv).collect();
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
        on_resvs, parsing,
        "Resv refreshes: {on_resvs} allocations for {SESSIONS}, of them {parsing} parsing"
    );
    // Still all there.
    assert_eq!(e.state_stats().out_isbs, usize::from(SESSIONS));

    // The node's own refreshes (RFC 2205 §3.7: within 1.5 R of the last), sent by a driver
    // that hands each payload back once sent (`RsvpEngine::recycle`): a Path costs nothing; a
    // Resv only the flow descriptor list and filter list of the message it builds. A first
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
    assert!(
        on_timers <= 2 * resvs_sent,
        "{on_timers} allocations while {paths_sent} Paths and {resvs_sent} Resvs were sent"
    );
}
