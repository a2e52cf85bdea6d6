//! RSVP message integrity end to end in simulation (RFC 2747): reservations with `require` on
//! every link, an on-link attacker that forges and replays Path, Resv, PathTear and ResvTear,
//! key rollover under a long-lived reservation, and a restarted router that recovers through
//! the challenge/response handshake.

mod common;

use common::rsvp::*;
use pathwise::rsvp::sim::{Scenario, rsvp_sim_with, sim_engine_config};
use pathwise_auth::{Algorithm, Key, KeyChain, Lifetime, Mode, Policy};
use pathwise_core::io::Transmit;
use pathwise_core::time::{Duration, Instant};
use pathwise_rsvp::wire::integrity::{Signed, sign};
use pathwise_rsvp::wire::{FlowDescriptor, Message, MsgType, Session, StyleKind};
use pathwise_rsvp::{Config, RsvpEngine};
use pathwise_sim::{Captured, NodeId, Outcome, SimConfig, testbeds};

const R: Duration = Duration::from_secs(3);
/// Unix time at simulated time zero.
const T0: u64 = 1_800_000_000;
const SECRET: &[u8] = b"the R0-R1-R2 shared secret";

fn key(id: u64, alg: Algorithm, send: Lifetime, accept: Lifetime) -> Key {
    Key::new(id, alg, SECRET)
        .unwrap()
        .with_send(send)
        .with_accept(accept)
}

fn require(keys: Vec<Key>) -> Policy {
    let mut chain = KeyChain::new();
    for k in keys {
        chain.insert(k).unwrap();
    }
    Policy::new(Mode::Require, chain)
}

/// Seed 004's R0 - R1 - R2 with `policy` on every interface and every packet captured.
fn seed004(policy: Policy) -> Scenario {
    let base = Config {
        wall_clock_at_zero: T0,
        ..sim_engine_config(R)
    };
    Scenario::new(rsvp_sim_with(
        testbeds::seed004_r0_r2(),
        SimConfig::seeded(4).with_capture(),
        base,
        Box::new(move |_, _| policy.clone()),
    ))
}

fn one_key() -> Policy {
    require(vec![key(
        1,
        Algorithm::HmacSha256,
        Lifetime::ALWAYS,
        Lifetime::ALWAYS,
    )])
}

struct Net {
    sc: Scenario,
    r0: NodeId,
    r1: NodeId,
    r2: NodeId,
}

impl Net {
    fn new(policy: Policy) -> Net {
        let sc = seed004(policy);
        let (r0, r1, r2) = (node(&sc, "R0"), node(&sc, "R1"), node(&sc, "R2"));
        Net { sc, r0, r1, r2 }
    }

    fn session(&self, port: u16) -> Session {
        udp(v4(&self.sc, self.r2), port)
    }

    /// R0 sends on `s`; R2 reserves `kbps` for it (FF) a little later.
    fn reserve(&mut self, at: Instant, s: Session, kbps: f32) {
        let r0 = self.r0;
        register_v4(&mut self.sc, at, r0, s, 9000, kbps);
        self.resv(at + Duration::from_millis(500), s, kbps);
    }

    /// R2 (re)requests `kbps` for R0's sender on `s`.
    fn resv(&mut self, at: Instant, s: Session, kbps: f32) {
        let sender = filter(v4(&self.sc, self.r0), 9000);
        self.sc
            .sim
            .schedule_call(at, self.r2, move |e: &mut RsvpEngine, now| {
                let flows = vec![FlowDescriptor {
                    flowspec: Some(cl(kbps)),
                    filters: vec![sender].into(),
                    te: Vec::new(),
                }];
                e.reserve(now, s, StyleKind::Ff, flows, true).unwrap();
            });
    }

    fn installed_at_r1(&self, s: &Session) -> f64 {
        installed_kbps(&self.sc, self.r1, s)
    }

    fn sessions_at_r1(&self) -> usize {
        self.sc.sim.engine(self.r1).unwrap().sessions().len()
    }

    fn drops_at(&self, n: NodeId, reason: &str) -> u64 {
        let c = self.sc.sim.engine(n).unwrap().counters();
        c.drops.get(reason).copied().unwrap_or(0)
    }

    /// Genuine messages of type `t` for `s` delivered to R1, as captured on the wire.
    fn captured_to_r1(&self, t: MsgType, s: &Session) -> Vec<Captured> {
        self.sc
            .sim
            .captures()
            .iter()
            .filter(|c| {
                c.record.to == Some(self.r1)
                    && matches!(c.record.outcome, Outcome::Delivered | Outcome::Intercepted)
            })
            .filter(|c| match Message::parse(&c.payload) {
                Ok((h, m)) => h.msg_type == t && m.session() == Some(s),
                Err(_) => false,
            })
            .cloned()
            .collect()
    }

    /// Send `payload` to R1 exactly as `like` was sent: same neighbour, interface, addresses.
    fn inject(&mut self, like: &Captured, payload: Vec<u8>) {
        let r = like.record;
        self.sc.sim.send(
            r.from,
            Transmit {
                src: Some(r.src),
                dst: r.dst,
                ifindex: Some(r.from_ifindex),
                transport: like.transport,
                router_alert: r.router_alert,
                ttl: r.ttl,
                payload,
            },
        );
        self.sc.run_for(Duration::from_millis(50));
    }
}

/// The message in `c` changed by `f`, re-emitted unsigned.
fn altered(c: &Captured, f: impl FnOnce(&mut Message)) -> Vec<u8> {
    let (h, mut m) = Message::parse(&c.payload).unwrap();
    strip(&mut m);
    f(&mut m);
    let mut out = Vec::new();
    m.emit(h.send_ttl, &mut out);
    out
}

fn strip(m: &mut Message) {
    if let Some(slot) = m.integrity_slot() {
        *slot = None;
    }
}

#[test]
fn reservation_with_integrity_required_on_every_link() {
    let mut net = Net::new(one_key());
    let s = net.session(5000);
    net.reserve(Instant::from_millis(1), s, 1000.0);
    net.sc.run_until(Instant::from_secs(30));
    assert_eq!(net.installed_at_r1(&s), 1000.0);
    assert_eq!(installed_kbps(&net.sc, net.r0, &s), 1000.0);
    for n in [net.r0, net.r1, net.r2] {
        let c = net.sc.sim.engine(n).unwrap().counters();
        assert!(c.integrity.signed > 0 && c.integrity.verified > 0, "{c:?}");
        // Only the first message of each fresh neighbour waits for the handshake.
        let waiting = net.drops_at(n, "integrity_awaiting_challenge");
        assert_eq!(c.total_drops(), waiting, "{:?}", c.drops);
        assert!(waiting <= 2, "{:?}", c.drops);
    }
    let c1 = net.sc.sim.engine(net.r1).unwrap().counters();
    assert_eq!(
        c1.integrity.handshakes, 2,
        "R1 challenged R0 and R2 once each"
    );
    // Every RSVP message on the wire carries an INTEGRITY object but the challenges.
    for c in net.sc.sim.captures() {
        let (h, _) = Message::parse(&c.payload).unwrap();
        let signed = Signed::locate(&c.payload).unwrap().is_some();
        assert_eq!(signed, h.msg_type != MsgType::IntegrityChallenge, "{h:?}");
    }
}

#[test]
fn attacker_can_neither_create_change_nor_tear_down() {
    let mut net = Net::new(one_key());
    let s1 = net.session(5001);
    let s2 = net.session(5002);
    let gone = net.session(5003);
    net.reserve(Instant::from_millis(1), s1, 1000.0);
    net.reserve(Instant::from_millis(1), s2, 200.0);
    net.reserve(Instant::from_millis(1), gone, 300.0);
    net.sc.run_until(Instant::from_secs(5));
    // `gone` is torn down properly, and s2 torn down and set up again: their genuine teardown
    // messages are now on record for replaying.
    let sender = filter(v4(&net.sc, net.r0), 9000);
    for s in [gone, s2] {
        net.sc.sim.schedule_call(
            Instant::from_secs(5),
            net.r2,
            move |e: &mut RsvpEngine, now| e.release(now, s).unwrap(),
        );
        net.sc.sim.schedule_call(
            Instant::from_secs(6),
            net.r0,
            move |e: &mut RsvpEngine, now| e.unregister_sender(now, s, sender).unwrap(),
        );
    }
    net.sc.run_until(Instant::from_secs(8));
    assert_eq!(net.sessions_at_r1(), 1);
    net.reserve(Instant::from_secs(8), s2, 200.0);
    // s1's receiver lowers its request: the old, larger Resv is on record.
    net.resv(Instant::from_secs(9), s1, 500.0);
    net.sc.run_until(Instant::from_secs(12));
    assert_eq!(net.installed_at_r1(&s1), 500.0);
    assert_eq!(net.installed_at_r1(&s2), 200.0);
    assert_eq!(net.sessions_at_r1(), 2);

    let check = |net: &Net, what: &str| {
        assert_eq!(
            net.sessions_at_r1(),
            2,
            "{what}: a session was created or removed"
        );
        assert_eq!(net.installed_at_r1(&net.session(5001)), 500.0, "{what}");
        assert_eq!(net.installed_at_r1(&net.session(5002)), 200.0, "{what}");
        assert_eq!(
            installed_kbps(&net.sc, net.r1, &net.session(5003)),
            0.0,
            "{what}"
        );
    };

    // Replays of genuine, signed messages: the Path and Resv of the torn-down session, the old
    // larger Resv, and the PathTear and ResvTear of s2's first life.
    let mut replays = Vec::new();
    replays.extend(net.captured_to_r1(MsgType::Path, &gone));
    replays.extend(net.captured_to_r1(MsgType::Resv, &gone));
    let old_resv: Vec<_> = net
        .captured_to_r1(MsgType::Resv, &s1)
        .into_iter()
        .filter(|c| c.record.time < Instant::from_secs(9))
        .collect();
    replays.extend(old_resv);
    replays.extend(net.captured_to_r1(MsgType::PathTear, &s2));
    replays.extend(net.captured_to_r1(MsgType::ResvTear, &s2));
    let kinds: std::collections::BTreeSet<_> = replays
        .iter()
        .map(|c| format!("{:?}", Message::parse(&c.payload).unwrap().0.msg_type))
        .collect();
    assert_eq!(
        kinds.len(),
        4,
        "Path, Resv, PathTear and ResvTear on record: {kinds:?}"
    );
    let before = net.drops_at(net.r1, "integrity_replayed");
    for c in &replays {
        net.inject(c, c.payload.clone());
        check(&net, "replay");
    }
    assert!(net.drops_at(net.r1, "integrity_replayed") - before >= replays.len() as u64);

    // Forgeries, built from genuine messages: unsigned, signed with a guessed secret under the
    // real key id, and signed under an unknown key id.
    let path = net.captured_to_r1(MsgType::Path, &s1).pop().unwrap();
    let resv = net.captured_to_r1(MsgType::Resv, &s1).pop().unwrap();
    let tear = net.captured_to_r1(MsgType::PathTear, &s2).pop().unwrap();
    let rtear = net.captured_to_r1(MsgType::ResvTear, &s2).pop().unwrap();
    let new_session = altered(&path, |m| {
        if let Message::Path(p) = m {
            p.session.dst_port = 6666;
        }
    });
    let bigger = altered(&resv, |m| {
        if let Message::Resv(r) = m {
            r.flows[0].flowspec = Some(cl(5000.0));
        }
    });
    let tear_s1 = altered(&tear, |m| {
        if let Message::PathTear(t) = m {
            t.session = net.session(5001);
        }
    });
    let rtear_s1 = altered(&rtear, |m| {
        if let Message::ResvTear(t) = m {
            t.session = net.session(5001);
        }
    });
    let guessed = Key::new(1, Algorithm::HmacSha256, b"guess").unwrap();
    let unknown = Key::new(77, Algorithm::HmacSha256, SECRET).unwrap();
    let now_seq = (T0 + 100) << 32;
    for (like, unsigned) in [
        (&path, new_session),
        (&resv, bigger),
        (&tear, tear_s1),
        (&rtear, rtear_s1),
    ] {
        net.inject(like, unsigned.clone());
        check(&net, "unsigned");
        for k in [&guessed, &unknown] {
            let mut forged = unsigned.clone();
            sign(&mut forged, k, now_seq, 1);
            net.inject(like, forged);
            check(&net, "forged");
        }
    }
    for reason in [
        "integrity_missing",
        "integrity_bad_digest",
        "integrity_unknown_key",
    ] {
        assert_eq!(net.drops_at(net.r1, reason), 4, "{reason}");
    }
    // And all of it changed nothing for good: the state lives on through refreshes.
    net.sc.run_until(Instant::from_secs(40));
    check(&net, "after refreshes");
}

#[test]
fn key_rollover_keeps_a_long_lived_reservation() {
    // Key 1 signs until T0+60 and is accepted until T0+90; key 2 signs from T0+60 and is
    // accepted from T0+30: both ends accept both during the overlap.
    let old = key(
        1,
        Algorithm::HmacMd5,
        Lifetime::new(0, T0 + 60),
        Lifetime::new(0, T0 + 90),
    );
    let new = key(
        2,
        Algorithm::HmacSha256,
        Lifetime::new(T0 + 60, u64::MAX),
        Lifetime::new(T0 + 30, u64::MAX),
    );
    let mut net = Net::new(require(vec![old, new]));
    let s = net.session(5100);
    net.reserve(Instant::from_millis(1), s, 700.0);
    let mut checked = 0;
    for t in (5..=200).step_by(5) {
        net.sc.run_until(Instant::from_secs(t));
        assert_eq!(net.installed_at_r1(&s), 700.0, "at {t} s");
        assert_eq!(installed_kbps(&net.sc, net.r0, &s), 700.0, "at {t} s");
        checked += 1;
    }
    assert_eq!(checked, 40);
    // Before the switch everything was signed with key 1, after it with key 2.
    for c in net.sc.sim.captures() {
        let Ok(Some(signed)) = Signed::locate(&c.payload) else {
            continue;
        };
        let ms = c.record.time.as_nanos() / 1_000_000;
        if ms.abs_diff(60_000) < 10 {
            continue; // sent just before the switch, seen just after
        }
        let (secs, want) = (ms / 1000, if ms < 60_000 { 1 } else { 2 });
        assert_eq!(signed.presented().key_id, want, "at {secs} s");
    }
    for n in [net.r0, net.r1, net.r2] {
        let c = net.sc.sim.engine(n).unwrap().counters();
        let waiting = net.drops_at(n, "integrity_awaiting_challenge");
        assert_eq!(c.total_drops(), waiting, "{:?}", c.drops);
    }
    assert!(net.drops_at(net.r1, "integrity_expired_key") == 0);
}

#[test]
fn restarted_router_recovers_through_the_challenge() {
    let mut net = Net::new(one_key());
    let s = net.session(5200);
    let gone = net.session(5201);
    net.reserve(Instant::from_millis(1), s, 400.0);
    net.reserve(Instant::from_millis(1), gone, 100.0);
    net.sc.run_until(Instant::from_secs(3));
    let sender = filter(v4(&net.sc, net.r0), 9000);
    net.sc.sim.schedule_call(
        Instant::from_secs(3),
        net.r0,
        move |e: &mut RsvpEngine, now| e.unregister_sender(now, gone, sender).unwrap(),
    );
    net.sc.run_until(Instant::from_secs(10));
    assert_eq!(net.installed_at_r1(&s), 400.0);
    let old_path = net.captured_to_r1(MsgType::Path, &gone).pop().unwrap();

    // R1 restarts with no state at all, sequence windows included.
    net.sc.sim.crash(net.r1);
    net.sc.run_until(Instant::from_secs(11));
    net.sc.sim.restart(net.r1);
    // The first thing it hears is a replayed Path of a session that no longer exists. Without
    // the handshake it would trust the first sequence number and install it.
    net.inject(&old_path, old_path.payload.clone());
    let r1 = net.sc.sim.engine(net.r1).unwrap();
    assert!(r1.session(&gone).is_none(), "replayed Path installed");
    assert!(net.drops_at(net.r1, "integrity_awaiting_challenge") >= 1);
    // R0 answers the challenge and refreshes at once, so path state is back within a round
    // trip; R1 challenges R2 on its next Resv refresh (due within 1.5 R), and R2 answers and
    // refreshes at once. State would otherwise have had to wait for R0's refresh timer.
    net.sc
        .run_until(Instant::from_secs(11) + Duration::from_millis(100));
    assert_eq!(
        net.sessions_at_r1(),
        1,
        "path state back after one round trip"
    );
    net.sc
        .run_until(Instant::from_secs(11) + R.mul_f64(1.5) + Duration::from_millis(100));
    assert_eq!(net.installed_at_r1(&s), 400.0);
    assert_eq!(net.sessions_at_r1(), 1, "the replayed session stays gone");
    let c1 = net.sc.sim.engine(net.r1).unwrap().counters();
    assert_eq!(c1.integrity.handshakes, 2, "{c1:?}");
    assert!(
        net.sc
            .sim
            .engine(net.r0)
            .unwrap()
            .counters()
            .integrity
            .responses_sent
            >= 2
    );
}
