use crate::toy::{Toy, ToyEvent, chain};
use pathwise_core::time::{Duration, Instant};
use pathwise_sim::{LinkParams, Sim, SimConfig};

fn ticks(sim: &Sim<Toy>, name: &str) -> Vec<Instant> {
    let n = sim.node(name).unwrap();
    sim.events_of(n)
        .filter_map(|e| match e {
            ToyEvent::Tick(t) => Some(*t),
            _ => None,
        })
        .collect()
}

#[test]
fn wake_ups_fire_exactly_at_the_engine_deadline() {
    let topo = chain(&["H1", "H2"], LinkParams::default());
    let mut sim = Sim::new(topo, SimConfig::seeded(1), |s| {
        Some(Toy::new(s).ticking(Instant::from_millis(100), Duration::from_millis(100), None))
    });
    sim.run_until(Instant::from_secs(1));
    let expect: Vec<_> = (1..=10).map(|i| Instant::from_millis(100 * i)).collect();
    assert_eq!(ticks(&sim, "H1"), expect);
    assert_eq!(ticks(&sim, "H2"), expect);
    // Engines with timers never go idle.
    assert!(!sim.run_until_idle(Duration::from_secs(1)));
    assert_eq!(sim.now(), Instant::from_secs(2));
}

#[test]
fn a_moved_deadline_replaces_the_old_wake_up() {
    let topo = chain(&["H1", "H2"], LinkParams::default());
    let mut sim = Sim::new(topo, SimConfig::seeded(1), |s| {
        Some(Toy::new(s).ticking(Instant::from_millis(100), Duration::from_millis(100), None))
    });
    let h1 = sim.node("H1").unwrap();
    // Postpone H1's first tick to 250 ms: nothing may happen at 100 ms or 200 ms.
    sim.with_engine(h1, |e, _| e.next_tick = Some(Instant::from_millis(250)));
    sim.run_until(Instant::from_millis(400));
    assert_eq!(
        ticks(&sim, "H1"),
        [250, 350].map(Instant::from_millis).to_vec()
    );
    // Bring it forward again through engine_mut + poll_engine.
    sim.engine_mut(h1).unwrap().next_tick = Some(Instant::from_millis(420));
    sim.poll_engine(h1);
    sim.run_until(Instant::from_millis(500));
    assert_eq!(ticks(&sim, "H1")[2..], [Instant::from_millis(420)]);
    // Cancelled altogether.
    sim.with_engine(h1, |e, _| e.next_tick = None);
    sim.run_until(Instant::from_secs(2));
    assert_eq!(ticks(&sim, "H1").len(), 3);
}

#[test]
fn step_processes_one_event_at_a_time() {
    let topo = chain(&["H1", "H2"], LinkParams::default());
    let mut sim = Sim::new(topo, SimConfig::seeded(1), |s| {
        Some(Toy::new(s).ticking(Instant::from_millis(5), Duration::from_millis(5), None))
    });
    assert_eq!(sim.next_event_at(), Some(Instant::from_millis(5)));
    assert!(sim.step());
    assert_eq!(sim.now(), Instant::from_millis(5));
    assert_eq!(ticks(&sim, "H1").len() + ticks(&sim, "H2").len(), 1);
}
