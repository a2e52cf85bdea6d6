use crate::toy::{Toy, ToyEvent, chain, heard, heard_at, lo4, udp};
use pathwise_core::route::RouteChange;
use pathwise_core::time::{Duration, Instant};
use pathwise_sim::{Control, DropReason, LinkParams, NodeSetup, Sim, SimConfig, Topology};
use std::cell::RefCell;
use std::rc::Rc;

#[test]
fn crash_drops_state_and_restart_recreates_with_fresh_routes() {
    let topo = chain(&["H1", "R1", "H2"], LinkParams::default());
    let setups: Rc<RefCell<Vec<NodeSetup>>> = Rc::default();
    let log = setups.clone();
    let mut sim = Sim::new(topo, SimConfig::seeded(9), move |s| {
        log.borrow_mut().push(s.clone());
        Some(Toy::new(s))
    });
    let (h1, r1) = (sim.node("H1").unwrap(), sim.node("R1").unwrap());
    let h2_addr = lo4(&sim, "H2");
    let start_routes = sim.engine(r1).unwrap().route_log.len();
    sim.with_engine(r1, |e, _| e.counter = 77);

    sim.schedule(Instant::from_secs(1), Control::Crash(r1));
    sim.schedule_call(Instant::from_secs(1), r1, |e, _| e.counter += 1); // after the crash: skipped
    sim.run_until(Instant::from_secs(1));
    assert!(sim.engine(r1).is_none());
    assert!(!sim.is_up(r1));
    // H1 lost every route through R1; only its connected subnet is left.
    assert_eq!(sim.routes(h1).count(), 2);
    assert!(sim.engine(h1).unwrap().fib.lookup(h2_addr).is_none());
    // A packet pushed at the dead router by interface dies there.
    let mut t = udp(h2_addr, b"x");
    t.ifindex = Some(pathwise_core::io::IfIndex(1));
    sim.with_engine(h1, |e, _| e.send(t));
    sim.run_for(Duration::from_millis(500));
    assert_eq!(sim.node_stats(r1).drops.get(DropReason::NodeDown), 1);

    sim.schedule(Instant::from_secs(2), Control::Restart(r1));
    sim.run_until(Instant::from_secs(2));
    let fresh = sim.engine(r1).unwrap();
    assert_eq!(fresh.counter, 0, "state did not survive the crash");
    assert_eq!(
        fresh.route_log.len(),
        start_routes,
        "full table pushed again"
    );
    assert!(
        fresh
            .route_log
            .iter()
            .all(|c| matches!(c, RouteChange::Add(_)))
    );
    // The factory saw the restart as a new incarnation with a new seed.
    let setups = setups.borrow();
    let r1_setups: Vec<_> = setups.iter().filter(|s| s.id == r1).collect();
    assert_eq!(r1_setups.len(), 2);
    assert_eq!((r1_setups[0].incarnation, r1_setups[1].incarnation), (0, 1));
    assert_ne!(r1_setups[0].seed, r1_setups[1].seed);
    // And traffic flows again.
    sim.with_engine(h1, |e, _| e.send(udp(h2_addr, b"back")));
    sim.run_for(Duration::from_secs(1));
    assert_eq!(heard(&sim, "H2").len(), 1);
    assert!(sim.engine(h1).unwrap().fib.lookup(h2_addr).is_some());
}

#[test]
fn crash_discards_queued_cpu_work() {
    let mut b = Topology::builder();
    let h1 = b.host("H1");
    let h2 = b.host("H2");
    b.node_mut(h2).processing_delay = Duration::from_millis(10);
    b.link(h1, h2, LinkParams::default().bandwidth(0));
    let mut sim = Sim::new(b.build().unwrap(), SimConfig::seeded(1), |s| {
        Some(Toy::new(s))
    });
    let dst = lo4(&sim, "H2");
    sim.with_engine(h1, |e, _| {
        for _ in 0..3 {
            e.send(udp(dst, b"x"));
        }
    });
    // Arrive at 1 ms; processed one after another at 11, 21, 31 ms.
    sim.run_for(Duration::from_millis(25));
    assert_eq!(
        heard_at(&sim, "H2"),
        [11, 21].map(Instant::from_millis).to_vec()
    );
    sim.crash(h2);
    sim.restart(h2);
    sim.run_for(Duration::from_secs(1));
    assert_eq!(heard(&sim, "H2").len(), 2);
}

#[test]
fn scheduled_calls_run_at_their_time() {
    let topo = chain(&["H1", "H2"], LinkParams::default().bandwidth(0));
    let mut sim = Sim::new(topo, SimConfig::seeded(1), |s| Some(Toy::new(s)));
    let h1 = sim.node("H1").unwrap();
    let dst = lo4(&sim, "H2");
    for ms in [30, 10, 20] {
        sim.schedule_call(Instant::from_millis(ms), h1, move |e, now| {
            assert_eq!(now, Instant::from_millis(ms));
            e.send(udp(dst, b"x"));
        });
    }
    sim.run_for(Duration::from_secs(1));
    assert_eq!(
        heard_at(&sim, "H2"),
        [11, 21, 31].map(Instant::from_millis).to_vec()
    );
    assert!(sim.events_of(h1).all(|e| matches!(e, ToyEvent::Route(_))));
    assert_eq!(sim.now(), Instant::from_secs(1));
}
