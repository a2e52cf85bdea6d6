use crate::toy::{Toy, lo4, udp};
use pathwise_core::rand::Rng;
use pathwise_core::rng::seeded;
use pathwise_core::time::{Duration, Instant};
use pathwise_sim::{Control, EventRecord, PacketRecord, Sim, SimConfig, testbeds};

use crate::toy::ToyEvent;

/// A busy, lossy run on the KOM testbed with a crash and a link flap.
fn run(seed: u64) -> (Vec<PacketRecord>, Vec<EventRecord<ToyEvent>>) {
    let mut sim = Sim::new(
        testbeds::kom_rsvp(),
        SimConfig::seeded(seed).with_trace(),
        |s| {
            let mut t = Toy::new(s);
            t.echo = true;
            Some(t)
        },
    );
    for l in sim.topology().link_ids().collect::<Vec<_>>() {
        sim.update_link(l, None, |p| {
            p.loss = 0.05;
            p.duplicate = 0.02;
            p.reorder = 0.1;
            p.reorder_jitter = Duration::from_millis(3);
        });
    }
    let senders = ["N1", "N2"].map(|n| sim.node(n).unwrap());
    let dsts = [lo4(&sim, "N5"), lo4(&sim, "N6")];
    for (k, s) in senders.into_iter().enumerate() {
        // Each engine's own randomness comes from its NodeSetup seed.
        let mut rng = seeded(sim.engine(s).unwrap().setup.seed);
        let mut at = Instant::ZERO;
        for i in 0..500u32 {
            at += Duration::from_micros(rng.random_range(100..2_000));
            let dst = dsts[(i as usize + k) % 2];
            sim.schedule_call(at, s, move |e, _| e.send(udp(dst, &i.to_be_bytes())));
        }
    }
    let n4 = sim.node("N4").unwrap();
    let l34 = sim.link_between(sim.node("N3").unwrap(), n4).unwrap();
    sim.schedule(Instant::from_millis(200), Control::LinkDown(l34));
    sim.schedule(Instant::from_millis(230), Control::LinkUp(l34));
    sim.schedule(Instant::from_millis(400), Control::Crash(n4));
    sim.schedule(Instant::from_millis(450), Control::Restart(n4));
    sim.run_until(Instant::from_secs(3));
    (sim.take_trace(), sim.drain_events())
}

#[test]
fn same_seed_same_run() {
    let (trace_a, events_a) = run(1234);
    let (trace_b, events_b) = run(1234);
    assert!(trace_a.len() > 1_000);
    assert_eq!(trace_a, trace_b);
    assert_eq!(events_a, events_b);
}

#[test]
fn different_seed_different_run() {
    let (trace_a, _) = run(1);
    let (trace_b, _) = run(2);
    assert_ne!(trace_a, trace_b);
}
