use super::*;
use crate::generate::{SEED_EXITS, SEED_SOURCE_ROUTER, SyntheticSpec, seed_network, synthetic};
use crate::model::{LinkConfig, NicConfig, RouteMode, RouterConfig, State};
use std::net::Ipv4Addr;

fn v4(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(a, b, c, d))
}

fn net(s: &str) -> IpNet {
    s.parse().unwrap()
}

fn link(weight: u32, bandwidth: f64, latency: f64) -> Option<LinkConfig> {
    Some(LinkConfig {
        bandwidth,
        latency,
        weight,
        congestion: 0.0,
    })
}

/// A line A — B — C with a slow shortcut A — C; networks at A, external prefix at B and C.
///
/// ```text
///   A(10.0.0.1) --w1,100M,1ms-- B(10.0.0.2) --w1,1000M,2ms-- C(10.0.0.3)
///        \_____________ w5, 10M, 20ms ___________________________/
/// ```
fn triangle() -> OracleConfig {
    let mut cfg = OracleConfig::default();
    let pairs = [
        (0, 1, 1, 100.0, 1.0),
        (1, 2, 1, 1000.0, 2.0),
        (0, 2, 5, 10.0, 20.0),
    ];
    cfg.routers = (1..=3)
        .map(|i| RouterConfig {
            address: v4(10, 0, 0, i),
            nic_count: 4,
            state: State::Up,
            nics: Vec::new(),
            routes: Vec::new(),
        })
        .collect();
    for (k, &(a, b, w, bw, lat)) in pairs.iter().enumerate() {
        let (la, lb) = (v4(172, 16, k as u8, 1), v4(172, 16, k as u8, 2));
        for (r, local, peer) in [(a, la, lb), (b, lb, la)] {
            let router: &mut RouterConfig = &mut cfg.routers[r];
            let index = router.nics.len() as u8;
            router.nics.push(NicConfig {
                index,
                local,
                peer,
                state: State::Up,
                link: link(w, bw, lat),
            });
        }
    }
    cfg.source_networks = vec![
        SourceNetwork {
            prefix: net("192.168.1.0/24"),
            router: v4(10, 0, 0, 1),
            nic: 3,
        },
        SourceNetwork {
            prefix: net("192.168.3.0/24"),
            router: v4(10, 0, 0, 3),
            nic: 3,
        },
    ];
    cfg.external_networks = vec![
        ExternalNetwork {
            prefix: net("8.0.0.0/8"),
            router: v4(10, 0, 0, 2),
            nic: 3,
            as_number: 1,
            as_distance: 4,
        },
        ExternalNetwork {
            prefix: net("8.0.0.0/8"),
            router: v4(10, 0, 0, 3),
            nic: 3,
            as_number: 1,
            as_distance: 1,
        },
        ExternalNetwork {
            prefix: net("8.8.0.0/16"),
            router: v4(10, 0, 0, 3),
            nic: 3,
            as_number: 15169,
            as_distance: 1,
        },
    ];
    cfg
}

#[test]
fn paths_follow_weights_and_aggregate() {
    let s = TopologySnapshot::build(&triangle()).unwrap();
    assert_eq!(s.router_count(), 3);
    assert_eq!(s.link_count(), 6);
    let p = s.path(v4(10, 0, 0, 1), v4(10, 0, 0, 3)).unwrap();
    // A→B→C (weight 2) beats the shortcut (weight 5).
    assert_eq!(
        (p.weight, p.hops, p.bandwidth, p.latency),
        (2, 2, 100.0, 3.0)
    );
    let same = s.path(v4(10, 0, 0, 2), v4(10, 0, 0, 2)).unwrap();
    assert_eq!((same.hops, same.bandwidth), (0, f64::INFINITY));
}

#[test]
fn routing_abstraction_picks_the_lowest_internal_weight_exit() {
    let s = TopologySnapshot::build(&triangle()).unwrap();
    let src = v4(192, 168, 1, 10);
    assert_eq!(s.source_router(src), Some(v4(10, 0, 0, 1)));
    // 8/8 is at B (weight 1, 4 AS hops) and C (weight 2, 1 AS hop): B wins on internal weight.
    let m = s.metrics(src, v4(8, 1, 2, 3)).unwrap();
    assert_eq!(
        (m.weight, m.as_distance, m.as_number, m.external),
        (1, 4, 1, true)
    );
    // 8.8/16 is more specific and only at C.
    let m = s.metrics(src, v4(8, 8, 8, 8)).unwrap();
    assert_eq!((m.weight, m.as_distance, m.as_number), (2, 1, 15169));
    // Internal destination.
    let m = s.metrics(src, v4(192, 168, 3, 1)).unwrap();
    assert_eq!(
        (m.as_distance, m.as_number, m.external, m.hops),
        (0, 0, false, 2)
    );
    // Unknown addresses and unknown sources cannot be placed.
    assert_eq!(s.metrics(src, v4(9, 9, 9, 9)), None);
    assert_eq!(s.metrics(v4(8, 8, 8, 8), v4(192, 168, 3, 1)), None);
    let mut c = vec![
        v4(9, 9, 9, 9),
        v4(8, 1, 2, 3),
        v4(8, 8, 8, 8),
        v4(192, 168, 3, 1),
        v4(8, 1, 1, 1),
    ];
    assert_eq!(s.rank(src, &mut c), 4);
    // seed eq. 3: internal 0+1+0.1=1.1; 8.8.8.8: 8+1+0.1=9.1; 8/8 via B: 32+0.5+0.1=32.6 (twice,
    // input order kept); 9.9.9.9 last.
    assert_eq!(
        c,
        [
            v4(192, 168, 3, 1),
            v4(8, 8, 8, 8),
            v4(8, 1, 2, 3),
            v4(8, 1, 1, 1),
            v4(9, 9, 9, 9)
        ]
    );
}

#[test]
fn down_links_and_explicit_routes() {
    let mut cfg = triangle();
    cfg.routers[1].state = State::Down;
    let s = TopologySnapshot::build(&cfg).unwrap();
    let p = s.path(v4(10, 0, 0, 1), v4(10, 0, 0, 3)).unwrap();
    assert_eq!((p.weight, p.hops), (5, 1));
    // Explicit mode without routes: nothing but itself is reachable.
    let mut cfg = triangle();
    cfg.oracle.routing = RouteMode::Explicit;
    let s = TopologySnapshot::build(&cfg).unwrap();
    assert!(s.path(v4(10, 0, 0, 1), v4(10, 0, 0, 3)).is_none());
    // Route A→C over the shortcut (NIC 1 of A).
    cfg.routers[0].routes.push(crate::model::RouteConfig {
        nic: 1,
        destination: v4(10, 0, 0, 3),
    });
    let s = TopologySnapshot::build(&cfg).unwrap();
    assert_eq!(s.path(v4(10, 0, 0, 1), v4(10, 0, 0, 3)).unwrap().weight, 5);
}

#[test]
fn configuration_errors() {
    let mut cfg = triangle();
    cfg.routers.push(cfg.routers[0].clone());
    assert_eq!(
        TopologySnapshot::build(&cfg).unwrap_err(),
        BuildError::DuplicateRouter(v4(10, 0, 0, 1))
    );
    let mut cfg = triangle();
    cfg.source_networks[0].router = v4(10, 9, 9, 9);
    assert!(matches!(
        TopologySnapshot::build(&cfg),
        Err(BuildError::UnknownRouter { .. })
    ));
    let mut cfg = triangle();
    cfg.external_networks.push(cfg.external_networks[0]);
    assert!(matches!(
        TopologySnapshot::build(&cfg),
        Err(BuildError::DuplicateNetwork { .. })
    ));
    let mut cfg = triangle();
    cfg.routers[0].nics[0].link = link(1, -1.0, 0.0);
    let e = TopologySnapshot::build(&cfg).unwrap_err();
    assert!(
        e.to_string().contains("bandwidth -1 must be positive"),
        "{e}"
    );
    let mut cfg = triangle();
    cfg.oracle.ranking = "hops +".into();
    assert!(matches!(
        TopologySnapshot::build(&cfg),
        Err(BuildError::Ranking(_))
    ));
    let mut cfg = triangle();
    cfg.oracle.max_routers = 2;
    assert_eq!(
        TopologySnapshot::build(&cfg).unwrap_err(),
        BuildError::TooManyRouters(2)
    );
    let mut cfg = triangle();
    cfg.routers[1].nics[0].local = cfg.routers[0].nics[1].local;
    assert!(matches!(
        TopologySnapshot::build(&cfg),
        Err(BuildError::DuplicateNicAddress { .. })
    ));
}

#[test]
fn network_updates_share_paths_and_untouched_shards() {
    let s = TopologySnapshot::build(&triangle()).unwrap();
    let (t, report) = s
        .apply(&[Update::AddExternalNetwork(ExternalNetwork {
            prefix: net("9.9.0.0/16"),
            router: v4(10, 0, 0, 3),
            nic: 3,
            as_number: 3,
            as_distance: 2,
        })])
        .unwrap();
    assert!(!report.paths_recomputed);
    assert!(t.shares_paths_with(&s));
    assert!(t.prefixes.shares_shard_with(&s.prefixes, &net("8.0.0.0/8")));
    assert!(!t.prefixes.shares_shard_with(&s.prefixes, &net("9.0.0.0/8")));
    assert_eq!(
        t.metrics(v4(192, 168, 1, 1), v4(9, 9, 1, 1))
            .unwrap()
            .as_distance,
        2
    );
    assert_eq!(
        s.metrics(v4(192, 168, 1, 1), v4(9, 9, 1, 1)),
        None,
        "the old snapshot is unchanged"
    );
    assert_eq!(t.generation(), 1);
    // A link change recomputes paths.
    let (u, report) = t
        .apply(&[Update::SetLink {
            router: v4(10, 0, 0, 1),
            nic: 0,
            link: link(10, 100.0, 1.0),
        }])
        .unwrap();
    assert!(report.paths_recomputed);
    assert_eq!(u.path(v4(10, 0, 0, 1), v4(10, 0, 0, 3)).unwrap().weight, 5);
    // Refused updates change nothing.
    assert!(matches!(
        u.apply(&[Update::RemovePrefix(net("1.0.0.0/8"))]),
        Err(BuildError::NoSuchPrefix(_))
    ));
    // Removing a router takes its networks along.
    let (w, _) = u.apply(&[Update::RemoveRouter(v4(10, 0, 0, 3))]).unwrap();
    assert_eq!(w.router_count(), 2);
    assert!(
        w.locate(v4(8, 8, 8, 8))
            .unwrap()
            .exits
            .iter()
            .all(|e| e.router != v4(10, 0, 0, 3))
    );
    assert!(w.locate(v4(192, 168, 3, 1)).is_none());
}

#[test]
fn seed_network_matches_section_5_2() {
    let cfg = seed_network(1);
    assert_eq!(cfg, seed_network(1), "deterministic");
    assert_ne!(cfg.external_networks, seed_network(2).external_networks);
    let s = TopologySnapshot::build(&cfg).unwrap();
    assert_eq!(s.router_count(), 216);
    assert_eq!(cfg.source_networks.len(), 109);
    assert_eq!(s.prefix_count(), 67_000 + 109);
    assert_eq!(s.exit_count(), 3 * 67_000 + 109);
    assert_eq!(s.path_rows(), 216);
    // Every router is reachable from the source router.
    let src = IpAddr::V4(SEED_SOURCE_ROUTER);
    for r in &cfg.routers {
        assert!(s.path(src, r.address).is_some(), "{}", r.address);
    }
    for e in SEED_EXITS {
        assert!(s.path(src, e.into()).is_some());
    }
    // Backup links carry traffic when a primary fails.
    let c = IpAddr::V4(Ipv4Addr::new(10, 1, 0, 1));
    let (t, _) = s
        .apply(&[Update::SetNicState {
            router: c,
            nic: 0,
            state: State::Down,
        }])
        .unwrap();
    let before = s.path(src, IpAddr::V4(Ipv4Addr::new(10, 1, 2, 1))).unwrap();
    let after = t.path(src, IpAddr::V4(Ipv4Addr::new(10, 1, 2, 1))).unwrap();
    assert!(after.weight > before.weight);
}

#[test]
fn source_router_scope_keeps_only_needed_rows() {
    let mut spec = SyntheticSpec::new(50, 1_000, 3);
    spec.source_networks = 5;
    spec.cache = CacheScope::SourceRouters;
    let cfg = synthetic(&spec);
    let s = TopologySnapshot::build(&cfg).unwrap();
    assert_eq!(s.path_rows(), 5);
    let mut all = cfg.clone();
    all.oracle.path_cache = CacheScope::AllPairs;
    let full = TopologySnapshot::build(&all).unwrap();
    assert_eq!(full.path_rows(), 50);
    // Same answers; paths from routers without a row are computed on demand.
    let a = cfg.routers[7].address;
    let b = cfg.routers[31].address;
    assert_eq!(s.path(a, b), full.path(a, b));
    let src = v4(100, 64, 3, 9);
    let mut x: Vec<IpAddr> = (0..200u32)
        .map(|i| IpAddr::V4(Ipv4Addr::from(i.wrapping_mul(0x9e37_79b9))))
        .collect();
    let mut y = x.clone();
    s.rank(src, &mut x);
    full.rank(src, &mut y);
    assert_eq!(x, y);
    // A source network on a router without a row adds exactly one row.
    let (t, report) = s
        .apply(&[Update::AddSourceNetwork(SourceNetwork {
            prefix: net("100.65.0.0/24"),
            router: a,
            nic: 0,
        })])
        .unwrap();
    assert_eq!(
        (report.rows_added, report.paths_recomputed, t.path_rows()),
        (1, false, 6)
    );
}

#[test]
fn dump_and_load_round_trip() {
    for cfg in [triangle(), seed_network(3)] {
        let s = TopologySnapshot::build(&cfg).unwrap();
        let dumped = s.to_config();
        let text = crate::config::to_toml_string(&dumped).unwrap();
        let back = crate::config::from_toml_str(&text).unwrap();
        assert_eq!(back, dumped);
        let again = TopologySnapshot::build(&back).unwrap().to_config();
        assert_eq!(again, dumped);
    }
}
