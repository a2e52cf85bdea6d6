//! Routing of sessions and datagrams to shards, label ranges, the configuration check, and
//! admission across shards (concurrent reservations never over-commit an interface).

use super::sim::memory_tc;
use super::*;
use pathwise_core::engine::Engine;
use pathwise_core::io::{IPPROTO_RSVP, IfIndex, Received, Transport};
use pathwise_core::route::{Route, RouteChange};
use pathwise_core::tc::SharedTrafficControl;
use pathwise_core::time::{Duration, Instant};
use pathwise_rsvp::engine::MemoryTrafficControl;
use pathwise_rsvp::wire::message::refresh::emit_bundle;
use pathwise_rsvp::wire::{
    Adspec, FilterSpec, FlowDescriptor, FlowSpec, Message, Path, Resv, RsvpHop, SenderDescriptor,
    SenderTspec, Style, StyleKind, TimeValues, TokenBucket,
};
use pathwise_rsvp::{InterfaceConfig, RsvpEngine};
use proptest::prelude::*;
use std::net::{IpAddr, Ipv4Addr};

const UP: IfIndex = IfIndex(1);
const DOWN: IfIndex = IfIndex(2);
const PHOP: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 1);
const NHOP: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 2);

fn session(port: u16) -> Session {
    Session::ip(IpAddr::V4(Ipv4Addr::new(20, 0, 0, 1)), 17, port)
}

fn sender(port: u16) -> FilterSpec {
    FilterSpec::V4 {
        src: Ipv4Addr::new(30, 0, 0, 1),
        src_port: port,
    }
}

fn tb(rate: f32) -> TokenBucket {
    TokenBucket {
        rate,
        bucket: 1000.0,
        peak: f32::INFINITY,
        min_policed: 64,
        max_packet: 1500,
    }
}

fn path(s: Session, f: FilterSpec) -> Vec<u8> {
    bytes(&Message::Path(Path {
        integrity: None,
        session: s,
        hop: RsvpHop::new(PHOP.into(), 7),
        time_values: TimeValues { refresh_ms: 30_000 },
        explicit_route: None,
        label_request: None,
        session_attribute: None,
        policy: Vec::new(),
        sender: SenderDescriptor {
            template: f,
            tspec: SenderTspec(tb(1000.0)),
            adspec: Some(Adspec::new_at_sender(true, true)),
            record_route: None,
        },
        forward: Vec::new(),
    }))
}

fn resv(s: Session, f: FilterSpec, rate: f32) -> Vec<u8> {
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
            flowspec: Some(FlowSpec::ControlledLoad(tb(rate))),
            filters: vec![f],
            te: Vec::new(),
        }],
        forward: Vec::new(),
    }))
}

fn bytes(m: &Message) -> Vec<u8> {
    let mut v = Vec::new();
    m.emit(63, &mut v);
    v
}

fn received(from: Ipv4Addr, ifindex: IfIndex, payload: &[u8]) -> Received<'_> {
    Received {
        src: from.into(),
        dst: IpAddr::V4(Ipv4Addr::new(20, 0, 0, 1)),
        ifindex,
        transport: Transport::Raw(IPPROTO_RSVP),
        router_alert: Some(0),
        ttl: 63,
        payload,
    }
}

/// A router with an upstream and a downstream interface (8 Mbit/s reservable downstream).
fn router_config(reservable_bps: u64) -> pathwise_rsvp::Config {
    let iface = |ifindex, a: [u8; 4]| InterfaceConfig {
        ifindex,
        addrs: vec![IpAddr::V4(a.into())],
        bandwidth_bps: 10_000_000,
        reservable_bps,
        mtu: 1500,
        latency: Duration::from_micros(50),
        integrity: Default::default(),
        hello: None,
    };
    pathwise_rsvp::Config {
        seed: 7,
        interfaces: vec![iface(UP, [10, 0, 1, 2]), iface(DOWN, [10, 0, 2, 1])],
        ..pathwise_rsvp::Config::default()
    }
}

fn route() -> RouteChange {
    RouteChange::Add(Route {
        prefix: "20.0.0.0/8".parse().unwrap(),
        next_hop: Some(NHOP.into()),
        ifindex: DOWN,
        metric: 1,
    })
}

#[test]
fn a_message_goes_to_its_sessions_shard_whatever_its_flags() {
    let map = ShardMap::new(4, 1);
    let mut seen = [false; 4];
    for port in 1..200 {
        let s = session(port);
        let shard = map.of_session(&s);
        seen[shard] = true;
        assert_eq!(map.of_message(&path(s, sender(port))), shard);
        assert_eq!(map.of_message(&resv(s, sender(port), 1000.0)), shard);
        // E_Police does not move a session (RFC 2205 §A.1).
        let policed = Session {
            flags: Session::E_POLICE,
            ..s
        };
        assert_eq!(map.of_session(&policed), shard);
        assert_eq!(session_of(&path(policed, sender(port))), Some(policed));
    }
    assert_eq!(seen, [true; 4], "200 sessions reach every one of 4 shards");
    // No SESSION to read: shard 0.
    assert_eq!(map.of_message(&[0x10, 20, 0, 0, 63, 0, 0, 8]), 0);
    assert_eq!(map.of_message(&[]), 0);
    assert_eq!(ShardMap::new(1, 1).of_session(&session(9)), 0);
}

/// Sessions whose shards under `map` are `a` and `b`.
fn sessions_on(map: &ShardMap, a: usize, b: usize) -> (Session, Session) {
    let on = |i| (1..).map(session).find(|s| map.of_session(s) == i).unwrap();
    (on(a), on(b))
}

#[test]
fn a_bundle_goes_whole_to_one_shard_or_split_per_sub_message() {
    let map = ShardMap::new(2, 3);
    let (s0, s1) = sessions_on(&map, 0, 1);
    let (p0, p1) = (path(s0, sender(1)), path(s1, sender(2)));
    let mut same = Vec::new();
    emit_bundle(0, [p1.as_slice(), p1.as_slice()], &mut same);
    let mut got = Vec::new();
    assert_eq!(map.dispatch(&same, |i, b| got.push((i, b.to_vec()))), 0);
    assert_eq!(got, vec![(1, same.clone())], "one shard: the Bundle whole");
    let mut mixed = Vec::new();
    emit_bundle(0, [p0.as_slice(), p1.as_slice()], &mut mixed);
    got.clear();
    assert_eq!(map.dispatch(&mixed, |i, b| got.push((i, b.to_vec()))), 0);
    assert_eq!(got, vec![(0, p0.clone()), (1, p1.clone())]);
    // A Bundle with a bad checksum is one message, for shard 0 to drop and count.
    mixed[2] ^= 0xff;
    got.clear();
    map.dispatch(&mixed, |i, b| got.push((i, b.to_vec())));
    assert_eq!(got, vec![(0, mixed.clone())]);
}

#[test]
fn label_ranges_are_disjoint_and_cover_the_range() {
    assert_eq!(
        label_ranges((16, 115), 4),
        vec![(16, 40), (41, 65), (66, 90), (91, 115)]
    );
    assert_eq!(label_ranges((100, 102), 2), vec![(100, 101), (102, 102)]);
    // Clamped as the engine clamps (RFC 3032 §2.1 reserves 0–15).
    assert_eq!(label_ranges((0, 17), 2), vec![(16, 16), (17, 17)]);
    let r = label_ranges((16, pathwise_core::mpls::MAX_LABEL), 3);
    assert_eq!(r[0].0, 16);
    assert_eq!(r[2].1, pathwise_core::mpls::MAX_LABEL);
    assert!(r.windows(2).all(|w| w[0].1 + 1 == w[1].0));
    let cfg = pathwise_rsvp::Config::default();
    let shards = shard_configs(&cfg, 3);
    assert_eq!(shards.len(), 3);
    assert_ne!(shards[0].seed, shards[1].seed);
    assert_eq!(shards.iter().map(|c| c.label_range).collect::<Vec<_>>(), r);
}

fn check(text: &str) -> Vec<String> {
    match NodeConfig::parse_all("node.toml", text) {
        Ok(_) => Vec::new(),
        Err(errs) => errs.iter().map(|e| e.to_string()).collect(),
    }
}

#[test]
fn the_check_refuses_what_shards_cannot_keep_correct_yet() {
    let base = "[rsvp]\n[[rsvp.interface]]\nname = \"eth0\"\nbandwidth = \"10Mbit\"\n";
    assert!(check(&format!("[daemon]\nthreads = 2\n{base}")).is_empty());
    let rr = "[rsvp]\nrefresh_reduction = true\n[[rsvp.interface]]\nname = \"eth0\"\nbandwidth = \"10Mbit\"\n";
    assert!(check(&format!("[daemon]\nthreads = 1\n{rr}")).is_empty());
    assert_eq!(check(&format!("[daemon]\nthreads = 2\n{rr}")).len(), 1);
    let e = check(&format!("[daemon]\nthreads = 0\n{base}"));
    assert_eq!(e.len(), 1);
    assert!(
        e[0].contains("node.toml:2: daemon.threads: 0: 1 to 64"),
        "{e:?}"
    );
    let e = check(
        "[daemon]\nthreads = 2\n[rsvp]\nrefresh_reduction = true\n[[rsvp.interface]]\n\
         name = \"eth0\"\nbandwidth = \"10Mbit\"\nhello = { interval = \"5ms\" }\n\
         integrity = { mode = \"accept\", keys = \"1 hmac-md5 0102\" }\n",
    );
    assert_eq!(e.len(), 3, "{e:?}");
    assert!(e[0].contains("rsvp.refresh_reduction yet"), "{e:?}");
    assert!(e[1].contains("rsvp.interface[0].hello yet"), "{e:?}");
    assert!(e[2].contains("rsvp.interface[0].integrity yet"), "{e:?}");
    assert!(
        e.iter()
            .all(|m| m.starts_with("node.toml:2: daemon.threads:")),
        "{e:?}"
    );
    let e = check(&format!(
        "[daemon]\nthreads = 2\n{base}[[rsvp.lsp]]\nname = \"a\"\nto = \"10.0.0.9\"\n"
    ));
    assert!(e.iter().any(|m| m.contains("[[rsvp.lsp]] yet")), "{e:?}");
}

#[test]
fn merged_views_sum_counts_and_concatenate_lists() {
    let mut acc = Value::Null;
    runtime::merge(
        &mut acc,
        serde_json::json!({"a": 1, "d": {"x": 2}, "l": [1], "f": 0.5}),
    );
    runtime::merge(
        &mut acc,
        serde_json::json!({"a": 2, "d": {"x": 3, "y": 1}, "l": [2], "f": 1}),
    );
    assert_eq!(
        acc,
        serde_json::json!({"a": 3, "d": {"x": 5, "y": 1}, "l": [1, 2], "f": 1.5})
    );
}

use serde_json::Value;

/// One sharded router admitting concurrently: each shard's engine on its own thread, all
/// through one traffic control.
fn admit_concurrently(shards: usize, rates: &[u32], reservable_bps: u64) -> (Vec<bool>, f64) {
    let cfg = router_config(reservable_bps);
    let tc = SharedTrafficControl::new(memory_tc(&cfg));
    let map = ShardMap::new(shards, cfg.seed);
    let engines: Vec<(
        usize,
        RsvpEngine<SharedTrafficControl<MemoryTrafficControl>>,
    )> = {
        let configs = shard_configs(&cfg, shards);
        configs
            .into_iter()
            .enumerate()
            .map(|(i, c)| (i, RsvpEngine::new(c, tc.clone(), Instant::ZERO)))
            .collect()
    };
    let rates = rates.to_vec();
    let handles: Vec<_> = engines
        .into_iter()
        .map(|(i, mut e)| {
            let map = map.clone();
            let rates = rates.clone();
            let tc = tc.clone();
            std::thread::spawn(move || {
                e.handle_route_change(Instant::ZERO, route());
                let mut refused = Vec::new();
                for (n, &rate) in rates.iter().enumerate() {
                    let port = n as u16 + 1;
                    if map.of_session(&session(port)) != i {
                        continue;
                    }
                    let now = Instant::from_millis(n as u64);
                    e.handle_datagram(now, received(PHOP, UP, &path(session(port), sender(port))));
                    e.handle_datagram(
                        now,
                        received(NHOP, DOWN, &resv(session(port), sender(port), rate as f32)),
                    );
                    let errs = std::iter::from_fn(|| e.poll_transmit())
                        .filter(|t| {
                            Packet::new_checked(&t.payload[..])
                                .is_ok_and(|p| p.msg_type() == MsgType::ResvErr)
                        })
                        .count();
                    refused.push((n, errs > 0));
                    // Never more than the budget, whatever the other shards are doing.
                    let now_reserved = tc.lock().reserved(DOWN);
                    assert!(now_reserved <= reservable_bps as f64 / 8.0 + 1e-6);
                }
                refused
            })
        })
        .collect();
    let mut refused = vec![false; rates.len()];
    for h in handles {
        for (n, r) in h.join().expect("a shard thread panicked") {
            refused[n] = r;
        }
    }
    let reserved = tc.lock().reserved(DOWN);
    (refused, reserved)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Admission across shards never over-commits an interface: what the shards admitted
    /// (no ResvErr) adds up to what traffic control holds, which is within the budget; and
    /// when everything fits, nothing is refused.
    #[test]
    fn admission_across_shards_never_over_commits(
        shards in 2usize..=4,
        rates in proptest::collection::vec(1u32..=40, 1..60),
    ) {
        // Rates in units of 10 kB/s against 1 MB/s (8 Mbit/s) reservable: exact in f32/f64.
        let rates: Vec<u32> = rates.iter().map(|r| r * 10_000).collect();
        let reservable_bps = 8_000_000;
        let (refused, reserved) = admit_concurrently(shards, &rates, reservable_bps);
        let admitted: f64 = rates
            .iter()
            .zip(&refused)
            .filter(|(_, r)| !**r)
            .map(|(&rate, _)| f64::from(rate))
            .sum();
        prop_assert!(reserved <= reservable_bps as f64 / 8.0 + 1e-6);
        prop_assert!((admitted - reserved).abs() < 1e-3, "admitted {admitted}, reserved {reserved}");
        let total: f64 = rates.iter().map(|&r| f64::from(r)).sum();
        if total <= reservable_bps as f64 / 8.0 {
            prop_assert!(refused.iter().all(|r| !r));
        } else {
            prop_assert!(refused.iter().any(|r| *r));
        }
    }
}
