use crate::toy::{Toy, ToyEvent, heard, heard_at, lo4, plain, raw, udp};
use pathwise_core::time::{Duration, Instant};
use pathwise_sim::{
    Control, Direction, DropReason, LinkParams, NodeSpec, Sim, SimConfig, Topology, ip_len,
};

/// Two hosts on one link with `params` from A to B.
fn pair(params: LinkParams) -> Sim<Toy> {
    let mut b = Topology::builder();
    let a = b.host("A");
    let h = b.host("B");
    b.link(a, h, params);
    plain(b.build().unwrap(), SimConfig::seeded(42))
}

/// Send `n` numbered datagrams from A to B, one per millisecond.
fn stream(sim: &mut Sim<Toy>, n: u32) {
    let a = sim.node("A").unwrap();
    let dst = lo4(sim, "B");
    for i in 0..n {
        sim.schedule_call(Instant::from_millis(u64::from(i)), a, move |e, _| {
            e.send(udp(dst, &i.to_be_bytes()))
        });
    }
    sim.run_until(Instant::from_millis(u64::from(n) + 1000));
}

fn seqs(sim: &Sim<Toy>) -> Vec<u32> {
    heard(sim, "B")
        .iter()
        .map(|e| match e {
            ToyEvent::Heard { payload, .. } => u32::from_be_bytes(payload[..4].try_into().unwrap()),
            _ => unreachable!(),
        })
        .collect()
}

const N: u32 = 20_000;

#[test]
fn loss_rate_is_as_configured() {
    let mut sim = pair(LinkParams::default().loss(0.1));
    stream(&mut sim, N);
    let got = seqs(&sim).len() as f64;
    // Binomial: mean 18,000, sd ~42.
    assert!((got - 18_000.0).abs() < 300.0, "{got}");
    let l = sim
        .link_between(sim.node("A").unwrap(), sim.node("B").unwrap())
        .unwrap();
    let st = sim.link_stats(l, Direction::AToB);
    assert_eq!(st.sent, u64::from(N));
    assert_eq!(st.drops.get(DropReason::Loss) + st.arrived, u64::from(N));
    assert_eq!(sim.drops().total(), st.drops.get(DropReason::Loss));
}

#[test]
fn duplication_rate_is_as_configured() {
    let mut sim = pair(LinkParams::default().duplicate(0.05));
    stream(&mut sim, N);
    let s = seqs(&sim);
    assert!((s.len() as f64 - 21_000.0).abs() < 300.0, "{}", s.len());
    let dups = s.windows(2).filter(|w| w[0] == w[1]).count();
    assert_eq!(dups, s.len() - N as usize);
}

#[test]
fn reordering_is_as_configured() {
    // 20% of packets held back by up to 5 ms while one leaves every 1 ms.
    let mut sim = pair(LinkParams::default().reorder(0.2, Duration::from_millis(5)));
    stream(&mut sim, N);
    let s = seqs(&sim);
    assert_eq!(s.len(), N as usize);
    let l = sim
        .link_between(sim.node("A").unwrap(), sim.node("B").unwrap())
        .unwrap();
    let held = sim.link_stats(l, Direction::AToB).reordered as f64;
    assert!((held - 4_000.0).abs() < 300.0, "{held}");
    // A packet arrives late if some later-sent packet arrived before it.
    let mut max = 0;
    let late = s
        .iter()
        .filter(|&&x| {
            let late = x < max;
            max = max.max(x);
            late
        })
        .count() as f64;
    // Held back by more than 1 ms => overtaken: about 0.2 * 0.8 of all packets.
    assert!(
        late > 0.1 * f64::from(N) && late < 0.2 * f64::from(N),
        "{late}"
    );
}

#[test]
fn serialization_delay_is_exact() {
    // 1 Mbit/s, 1 ms: a 125-byte packet takes exactly 1 ms to serialize.
    let mut sim = pair(
        LinkParams::default()
            .bandwidth(1_000_000)
            .delay(Duration::from_millis(1)),
    );
    let a = sim.node("A").unwrap();
    let dst = lo4(&sim, "B");
    assert_eq!(ip_len(dst, raw(dst, 105).transport, false, 105), 125);
    sim.with_engine(a, |e, _| {
        for _ in 0..3 {
            e.send(raw(dst, 105));
        }
    });
    sim.run_for(Duration::from_secs(1));
    assert_eq!(
        heard_at(&sim, "B"),
        [2, 3, 4].map(Instant::from_millis).to_vec()
    );
    // A packet after the queue drained is not delayed by it.
    sim.schedule_call(Instant::from_secs(2), a, move |e, _| e.send(raw(dst, 105)));
    sim.run_for(Duration::from_secs(2));
    assert_eq!(
        heard_at(&sim, "B")[3],
        Instant::from_secs(2) + Duration::from_millis(2)
    );
}

#[test]
fn queue_and_mtu_limits_drop() {
    let mut sim = pair(
        LinkParams::default()
            .bandwidth(1_000_000)
            .queue_bytes(Some(1_000))
            .mtu(600),
    );
    let a = sim.node("A").unwrap();
    let dst = lo4(&sim, "B");
    sim.with_engine(a, |e, _| {
        e.send(raw(dst, 581)); // 601 bytes > MTU
        for _ in 0..4 {
            e.send(raw(dst, 480)); // 500 bytes: one on the wire, one waiting, two dropped
        }
    });
    sim.run_for(Duration::from_secs(1));
    let l = sim.link_between(a, sim.node("B").unwrap()).unwrap();
    let st = sim.link_stats(l, Direction::AToB);
    assert_eq!(st.drops.get(DropReason::MtuExceeded), 1);
    assert_eq!(st.drops.get(DropReason::QueueFull), 2);
    assert_eq!(heard(&sim, "B").len(), 2);
}

#[test]
fn packets_in_flight_die_when_the_link_goes_down() {
    let mut sim = pair(LinkParams::default().delay(Duration::from_millis(10)));
    let a = sim.node("A").unwrap();
    let dst = lo4(&sim, "B");
    sim.with_engine(a, |e, _| e.send(udp(dst, b"doomed")));
    let l = sim.link_between(a, sim.node("B").unwrap()).unwrap();
    sim.schedule(Instant::from_millis(5), Control::LinkDown(l));
    sim.schedule(Instant::from_millis(6), Control::LinkUp(l));
    sim.run_for(Duration::from_secs(1));
    assert!(heard(&sim, "B").is_empty());
    assert_eq!(
        sim.link_stats(l, Direction::AToB)
            .drops
            .get(DropReason::LinkDown),
        1
    );
}

#[test]
fn per_direction_parameters_and_parameter_changes() {
    let mut b = Topology::builder();
    let a = b.node(NodeSpec::new("A", pathwise_sim::NodeRole::Host));
    let h = b.host("B");
    let l = b.link(a, h, LinkParams::default().bandwidth(0));
    b.link_mut(l).b_to_a = LinkParams::default()
        .bandwidth(0)
        .delay(Duration::from_millis(7));
    let mut sim = Sim::new(b.build().unwrap(), SimConfig::seeded(1), |s| {
        let mut t = Toy::new(s);
        t.echo = true;
        Some(t)
    });
    let dst = lo4(&sim, "B");
    sim.with_engine(a, |e, _| e.send(udp(dst, b"x")));
    sim.run_for(Duration::from_secs(1));
    assert_eq!(heard_at(&sim, "B"), [Instant::from_millis(1)]);
    assert_eq!(heard_at(&sim, "A"), [Instant::from_millis(8)]);
    // Make A->B lossy for a while.
    let lossy = sim.link_params(l, Direction::AToB).clone().loss(1.0);
    sim.apply(Control::SetLinkParams {
        link: l,
        direction: Some(Direction::AToB),
        params: lossy,
    });
    sim.with_engine(a, |e, _| e.send(udp(dst, b"y")));
    sim.run_for(Duration::from_secs(1));
    assert_eq!(heard(&sim, "B").len(), 1);
}
