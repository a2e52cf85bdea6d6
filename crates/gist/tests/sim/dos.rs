//! The thesis's denial-of-service experiment (seed 000 §4.5.1, Table 4.2) in simulation: an
//! attacker (N1) floods the responder (N3) with Queries for fresh sessions, optionally
//! answering each Response with a Confirm. With hash cookies the responder keeps nothing for a
//! Query; with random cookies it keeps every Query's cookie until the Confirm wait (2 s)
//! runs out. Once the attacker completes handshakes, both modes hold the installed state
//! (30 s, the attacker's validity time) and the difference disappears.

use super::common::config;
use pathwise_core::engine::Engine;
use pathwise_core::io::{Received, Transmit, Transport};
use pathwise_core::rand::Rng;
use pathwise_core::rng::SeededRng;
use pathwise_core::route::RouteChange;
use pathwise_core::time::{Duration, Instant};
use pathwise_gist::wire::{
    Body, Confirm, Cookie, GIST_PORT, Message, Mri, Nli, PathCoupledMri, Query, SessionId,
};
use pathwise_gist::{CookieMode, GistEngine, GistEvent};
use pathwise_sim::{Sim, SimConfig, testbeds};
use std::collections::VecDeque;
use std::net::IpAddr;

const NSLPID: u16 = 42;

/// Pre-built Queries with a fresh Session ID each, at a fixed rate; Confirms for Responses.
struct Attacker {
    src: IpAddr,
    target: IpAddr,
    interval: Duration,
    next: Instant,
    until: Instant,
    confirm: bool,
    rng: SeededRng,
    out: VecDeque<Transmit>,
}

impl Attacker {
    fn nli(&self) -> Nli {
        Nli {
            ip_ttl: 64,
            rs_validity_ms: 30_000,
            peer_identity: vec![0xee; 16].into(),
            interface_address: self.src,
        }
    }

    fn send(&mut self, msg: &Message, ra: bool) {
        self.out.push_back(Transmit {
            src: Some(self.src),
            dst: self.target,
            ifindex: None,
            transport: Transport::Udp {
                src_port: GIST_PORT,
                dst_port: GIST_PORT,
            },
            router_alert: ra.then_some(0),
            ttl: 64,
            payload: msg.to_datagram(),
        });
    }
}

impl Engine for Attacker {
    type Event = GistEvent;

    fn handle_datagram(&mut self, _now: Instant, d: Received<'_>) {
        let Ok(m) = Message::parse_datagram(d.payload) else {
            return;
        };
        let Body::Response(r) = m.body else { return };
        if !self.confirm {
            return;
        }
        let c = Message {
            gist_hops: 32,
            nslpid: NSLPID,
            c_flag: false,
            s_flag: true,
            r_flag: false,
            e_flag: false,
            body: Body::Confirm(Confirm {
                mri: r.mri.with_direction(false),
                session_id: r.session_id,
                nli: self.nli(),
                responder_cookie: r.responder_cookie,
                ..Confirm::default()
            }),
        };
        self.send(&c, false);
    }

    fn handle_timeout(&mut self, now: Instant) {
        while self.next <= now && self.next < self.until {
            let mut sid = [0u8; 16];
            self.rng.fill(&mut sid);
            let q = Message {
                gist_hops: 32,
                nslpid: NSLPID,
                c_flag: true,
                s_flag: true,
                r_flag: true,
                e_flag: false,
                body: Body::Query(Query {
                    mri: Mri::PathCoupled(PathCoupledMri::flow(self.src, self.target)),
                    session_id: SessionId(sid),
                    nli: self.nli(),
                    query_cookie: Cookie(self.rng.random::<u32>().to_be_bytes()[..].into()),
                    ..Query::default()
                }),
            };
            self.send(&q, true);
            self.next += self.interval;
        }
    }

    fn handle_route_change(&mut self, _: Instant, _: RouteChange) {}
    fn poll_transmit(&mut self) -> Option<Transmit> {
        self.out.pop_front()
    }
    fn poll_event(&mut self) -> Option<GistEvent> {
        None
    }
    fn poll_timeout(&self) -> Option<Instant> {
        (self.next < self.until).then_some(self.next)
    }
    fn wants_router_alert(&self, _: &Received<'_>) -> bool {
        false
    }
}

enum Node {
    Gist(Box<GistEngine>),
    Attacker(Box<Attacker>),
}

impl Engine for Node {
    type Event = GistEvent;
    fn handle_datagram(&mut self, now: Instant, d: Received<'_>) {
        match self {
            Node::Gist(e) => e.handle_datagram(now, d),
            Node::Attacker(a) => a.handle_datagram(now, d),
        }
    }
    fn handle_timeout(&mut self, now: Instant) {
        match self {
            Node::Gist(e) => e.handle_timeout(now),
            Node::Attacker(a) => a.handle_timeout(now),
        }
    }
    fn handle_route_change(&mut self, now: Instant, c: RouteChange) {
        if let Node::Gist(e) = self {
            e.handle_route_change(now, c)
        }
    }
    fn poll_transmit(&mut self) -> Option<Transmit> {
        match self {
            Node::Gist(e) => e.poll_transmit(),
            Node::Attacker(a) => a.poll_transmit(),
        }
    }
    fn poll_event(&mut self) -> Option<GistEvent> {
        match self {
            Node::Gist(e) => e.poll_event(),
            Node::Attacker(_) => None,
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Node::Gist(e) => e.poll_timeout(),
            Node::Attacker(a) => a.poll_timeout(),
        }
    }
    fn wants_router_alert(&self, d: &Received<'_>) -> bool {
        match self {
            Node::Gist(e) => e.wants_router_alert(d),
            Node::Attacker(_) => false,
        }
    }
}

/// Peak memory of the responder's routing state, and the messages it handled.
#[derive(Debug)]
struct Outcome {
    baseline: usize,
    peak_bytes: usize,
    peak_states: usize,
    queries: u64,
    confirms: u64,
    cookies: u64,
}

fn attack(mode: CookieMode, confirm: bool) -> Outcome {
    const ATTACK: u64 = 40;
    let mut sim = Sim::new(testbeds::gist_thesis(), SimConfig::seeded(31), move |s| {
        let lo = IpAddr::V4(s.router_id());
        match s.name.as_str() {
            "N1" => Some(Node::Attacker(Box::new(Attacker {
                src: lo,
                target: IpAddr::V4("10.255.0.3".parse().unwrap()),
                // ~500 messages/s: all Queries, or half Queries and half Confirms (§4.5.1).
                interval: Duration::from_micros(if confirm { 4000 } else { 2000 }),
                next: Instant::from_secs(1),
                until: Instant::from_secs(1 + ATTACK),
                confirm,
                rng: pathwise_core::rng::seeded(s.seed),
                out: VecDeque::new(),
            }))),
            "N3" => {
                let mut c = config(s);
                c.nslpids = vec![NSLPID];
                c.cookie_mode = mode;
                c.confirm_wait = Duration::from_secs(2);
                Some(Node::Gist(Box::new(GistEngine::new(c, Instant::ZERO))))
            }
            _ => None,
        }
    });
    let n3 = sim.node("N3").unwrap();
    let victim = |sim: &Sim<Node>| match sim.engine(n3) {
        Some(Node::Gist(e)) => e.state_stats(),
        _ => unreachable!(),
    };
    let baseline = victim(&sim).bytes;
    let (mut peak_bytes, mut peak_states) = (0, 0);
    for _ in 0..(ATTACK + 5) * 4 {
        sim.run_for(Duration::from_millis(250));
        sim.drain_events();
        let s = victim(&sim);
        peak_bytes = peak_bytes.max(s.bytes);
        peak_states = peak_states.max(s.routing_states);
    }
    let Some(Node::Gist(e)) = sim.engine(n3) else {
        unreachable!()
    };
    let c = e.counters();
    use pathwise_gist::wire::MsgType;
    Outcome {
        baseline,
        peak_bytes,
        peak_states,
        queries: c.received(MsgType::Query),
        confirms: c.received(MsgType::Confirm),
        cookies: c.cookies_minted,
    }
}

#[test]
fn query_flood_leaves_hash_cookie_memory_flat_and_fills_random_cookie_memory() {
    let rows = [
        (
            "(1) random Cookie(R), Query only",
            attack(CookieMode::Random, false),
        ),
        (
            "(2) random Cookie(R), Query + Confirm",
            attack(CookieMode::Random, true),
        ),
        (
            "(3) hash Cookie(R), Query only",
            attack(CookieMode::Hash, false),
        ),
        (
            "(4) hash Cookie(R), Query + Confirm",
            attack(CookieMode::Hash, true),
        ),
    ];
    eprintln!(
        "| scenario | Queries | Confirms | peak routing states | peak state memory (bytes above idle) |"
    );
    eprintln!("|---|---:|---:|---:|---:|");
    for (name, o) in &rows {
        eprintln!(
            "| {name} | {} | {} | {} | {} |",
            o.queries,
            o.confirms,
            o.peak_states,
            o.peak_bytes - o.baseline
        );
    }
    let [(_, r1), (_, r2), (_, h1), (_, h2)] = &rows;
    // Every Query was answered with a fresh cookie in every mode.
    for (_, o) in &rows {
        assert_eq!(o.cookies, o.queries);
    }
    // (3): hash cookies keep nothing per Query: memory flat.
    assert_eq!(h1.peak_states, 0);
    assert_eq!(
        h1.peak_bytes, h1.baseline,
        "hash cookies, Query flood: flat"
    );
    // (1): random cookies keep ~rate x Confirm wait = 500/s x 2 s of state.
    assert!((900..=1100).contains(&r1.peak_states), "{r1:?}");
    assert!(r1.peak_bytes > r1.baseline + 100_000, "{r1:?}");
    // (2), (4): completed handshakes install state for 30 s either way; the modes converge.
    assert!(r2.peak_states > 5 * r1.peak_states && h2.peak_states > 5 * r1.peak_states);
    let (a, b) = (r2.peak_bytes as f64, h2.peak_bytes as f64);
    assert!((a / b - 1.0).abs() < 0.25, "{r2:?} vs {h2:?}");
}
