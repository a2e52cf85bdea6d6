//! Routing of sessions and datagrams to shards, label ranges, the configuration check, and
//! admission across shards (concurrent reservations never over-commit an interface).

use super::*;
use pathwise_core::engine::Engine;
use pathwise_core::tc::SharedTrafficControl;
use pathwise_core::time::Instant;
use pathwise_rsvp::RsvpEngine;
use pathwise_rsvp::engine::MemoryTrafficControl;
use pathwise_rsvp::testing::{
    DOWN, NHOP, PHOP, UP, bytes, ff, path, received, resv, route, router_config, sender, session,
};
use pathwise_rsvp::wire::{MsgType, Packet, StyleKind};
use proptest::prelude::*;

fn check(text: &str) -> Vec<String> {
    match NodeConfig::parse_all("node.toml", text) {
        Ok(_) => Vec::new(),
        Err(errs) => errs.iter().map(|e| e.to_string()).collect(),
    }
}

/// `[daemon] threads` absent: one shard per core, at most one per label of `rsvp.labels`;
/// present: as written.
#[test]
fn shards_default_to_one_per_core() {
    let parse = |text: &str| NodeConfig::parse_all("node.toml", text).unwrap();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let base = "[rsvp]\n[[rsvp.interface]]\nname = \"eth0\"\nbandwidth = \"10Mbit\"\n";
    assert_eq!(parse(base).rsvp_shards(), cores.min(MAX_SHARDS));
    assert_eq!(
        parse(&format!("[daemon]\nthreads = 1\n{base}")).rsvp_shards(),
        1
    );
    assert_eq!(
        parse(&format!("[daemon]\nthreads = 3\n{base}")).rsvp_shards(),
        3
    );
    let one_label =
        "[rsvp]\nlabels = [16, 16]\n[[rsvp.interface]]\nname = \"eth0\"\nbandwidth = \"10Mbit\"\n";
    assert_eq!(parse(one_label).rsvp_shards(), 1);
}

#[test]
fn the_check_refuses_what_shards_cannot_keep_correct_yet() {
    let base = "[rsvp]\n[[rsvp.interface]]\nname = \"eth0\"\nbandwidth = \"10Mbit\"\n";
    assert!(check(&format!("[daemon]\nthreads = 2\n{base}")).is_empty());
    let rr = "[rsvp]\nrefresh_reduction = true\n[[rsvp.interface]]\nname = \"eth0\"\nbandwidth = \"10Mbit\"\n";
    assert!(check(&format!("[daemon]\nthreads = 1\n{rr}")).is_empty());
    // Refresh reduction runs sharded (identifiers routed by the dispatcher).
    assert!(check(&format!("[daemon]\nthreads = 2\n{rr}")).is_empty());
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
    // Hello and integrity run sharded (every shard handed every Hello and Challenge, the
    // shards signing from one sequence per key).
    assert!(e.is_empty(), "{e:?}");
    // LSPs headed by this node run sharded (each on the shard its name picks).
    let e = check(&format!(
        "[daemon]\nthreads = 2\n{base}[[rsvp.lsp]]\nname = \"a\"\nto = \"10.0.0.9\"\n"
    ));
    assert!(e.is_empty(), "{e:?}");
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

/// A neighbour two shards track is listed once, its state blocks summed, the latest Hello
/// kept; one only a shard tracks as it is.
#[test]
fn merged_neighbours_list_each_neighbour_once() {
    let a = serde_json::json!({"instance": 9, "neighbors": [
        {"interface": "e0", "address": "10.0.0.2", "instance": 5, "heard_ms_ago": 40, "state_blocks": 2},
        {"interface": "w0", "address": "10.0.1.1", "instance": 6, "heard_ms_ago": null, "state_blocks": 1},
    ]});
    let b = serde_json::json!({"instance": 9, "neighbors": [
        {"interface": "e0", "address": "10.0.0.2", "instance": 7, "heard_ms_ago": 10, "state_blocks": 3},
    ]});
    assert_eq!(
        runtime::merge_neighbors(vec![a, b]),
        serde_json::json!({"instance": 9, "neighbors": [
            {"interface": "e0", "address": "10.0.0.2", "instance": 7, "heard_ms_ago": 10, "state_blocks": 5},
            {"interface": "w0", "address": "10.0.1.1", "instance": 6, "heard_ms_ago": null, "state_blocks": 1},
        ]})
    );
}

use serde_json::Value;

/// One sharded router admitting concurrently: each shard's engine on its own thread, all
/// through one traffic control.
fn admit_concurrently(shards: usize, rates: &[u32], reservable_bps: u64) -> (Vec<bool>, f64) {
    let cfg = pathwise_rsvp::Config {
        seed: 7,
        ..router_config(reservable_bps)
    };
    let tc = SharedTrafficControl::new(cfg.memory_tc());
    let map = ShardMap::new(shards, cfg.seed);
    let engines: Vec<(
        usize,
        RsvpEngine<SharedTrafficControl<MemoryTrafficControl>>,
    )> = {
        let configs = shard_configs(&cfg, &map);
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
                    let (s, f) = (session(port), sender(port));
                    e.handle_datagram(now, received(PHOP, UP, 63, &bytes(&path(s, f), 63)));
                    let r = resv(s, StyleKind::Ff, ff(rate as f32, f));
                    e.handle_datagram(now, received(NHOP, DOWN, 63, &bytes(&r, 63)));
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
