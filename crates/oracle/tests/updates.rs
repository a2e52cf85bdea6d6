//! Live updates: a snapshot reached by updates answers exactly as one built from scratch from
//! its dump, and as the reference does.

mod common;

use common::{address, config, prefix, ranking, reference_rank};
use ipnet::IpNet;
use pathwise_oracle::model::{
    ExternalNetwork, LinkConfig, NicConfig, OracleConfig, RouterConfig, SourceNetwork, State,
};
use pathwise_oracle::{TopologySnapshot, Update};
use proptest::prelude::*;
use std::net::{IpAddr, Ipv4Addr};

/// An update described by indices, resolved against the current configuration.
#[derive(Clone, Debug)]
enum Op {
    AddSource(IpNet, usize),
    RemoveSource(usize),
    AddExternal(IpNet, usize, u32, u16),
    RemoveExternal(usize),
    RemovePrefix(usize),
    SetLink(usize, usize, Option<(u32, f64)>),
    NicState(usize, usize, bool),
    RouterState(usize, bool),
    RemoveRouter(usize),
    AddRouter(u8, usize, u32),
    Ranking(String),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (prefix(), any::<usize>()).prop_map(|(p, r)| Op::AddSource(p, r)),
        2 => any::<usize>().prop_map(Op::RemoveSource),
        3 => (prefix(), any::<usize>(), 1u32..5, 0u16..4).prop_map(|(p, r, a, d)| Op::AddExternal(p, r, a, d)),
        2 => any::<usize>().prop_map(Op::RemoveExternal),
        1 => any::<usize>().prop_map(Op::RemovePrefix),
        2 => (any::<usize>(), any::<usize>(), prop::option::of((0u32..4, prop_oneof![Just(10.0), Just(100.0)])))
            .prop_map(|(r, n, l)| Op::SetLink(r, n, l)),
        1 => (any::<usize>(), any::<usize>(), any::<bool>()).prop_map(|(r, n, s)| Op::NicState(r, n, s)),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(r, s)| Op::RouterState(r, s)),
        1 => any::<usize>().prop_map(Op::RemoveRouter),
        1 => (100u8..110, any::<usize>(), 0u32..4).prop_map(|(a, r, w)| Op::AddRouter(a, r, w)),
        1 => ranking().prop_map(Op::Ranking),
    ]
}

fn resolve(op: &Op, cfg: &OracleConfig) -> Vec<Update> {
    let router = |i: usize| {
        cfg.routers
            .get(i % cfg.routers.len().max(1))
            .map(|r| r.address)
    };
    let pick = |v: usize, len: usize| (len > 0).then(|| v % len);
    let Some(any_router) = router(0) else {
        return Vec::new();
    };
    match op {
        Op::AddSource(p, r) => vec![Update::AddSourceNetwork(SourceNetwork {
            prefix: *p,
            router: router(*r).unwrap_or(any_router),
            nic: 0,
        })],
        Op::RemoveSource(i) => pick(*i, cfg.source_networks.len())
            .map(|i| {
                let n = cfg.source_networks[i];
                Update::RemoveSourceNetwork {
                    prefix: n.prefix,
                    router: n.router,
                }
            })
            .into_iter()
            .collect(),
        Op::AddExternal(p, r, a, d) => vec![Update::AddExternalNetwork(ExternalNetwork {
            prefix: *p,
            router: router(*r).unwrap_or(any_router),
            nic: 0,
            as_number: *a,
            as_distance: *d,
        })],
        Op::RemoveExternal(i) => pick(*i, cfg.external_networks.len())
            .map(|i| {
                let n = cfg.external_networks[i];
                Update::RemoveExternalNetwork {
                    prefix: n.prefix,
                    router: n.router,
                }
            })
            .into_iter()
            .collect(),
        Op::RemovePrefix(i) => pick(*i, cfg.external_networks.len())
            .map(|i| Update::RemovePrefix(cfg.external_networks[i].prefix))
            .into_iter()
            .collect(),
        Op::SetLink(r, n, l) => {
            let rc = &cfg.routers[r % cfg.routers.len()];
            pick(*n, rc.nics.len())
                .map(|n| Update::SetLink {
                    router: rc.address,
                    nic: rc.nics[n].index,
                    link: l.map(|(weight, bandwidth)| LinkConfig {
                        bandwidth,
                        latency: 1.5,
                        weight,
                        congestion: 0.0,
                    }),
                })
                .into_iter()
                .collect()
        }
        Op::NicState(r, n, up) => {
            let rc = &cfg.routers[r % cfg.routers.len()];
            pick(*n, rc.nics.len())
                .map(|n| Update::SetNicState {
                    router: rc.address,
                    nic: rc.nics[n].index,
                    state: if *up { State::Up } else { State::Down },
                })
                .into_iter()
                .collect()
        }
        Op::RouterState(r, up) => vec![Update::SetRouterState {
            router: router(*r).unwrap_or(any_router),
            state: if *up { State::Up } else { State::Down },
        }],
        Op::RemoveRouter(r) => vec![Update::RemoveRouter(router(*r).unwrap_or(any_router))],
        Op::AddRouter(a, r, w) => {
            let peer = &cfg.routers[r % cfg.routers.len()];
            let spare = peer.nic_count.saturating_sub(1) as u8;
            let link = Some(LinkConfig {
                bandwidth: 100.0,
                latency: 2.0,
                weight: *w,
                congestion: 0.0,
            });
            let (mine, theirs) = (
                IpAddr::V4(Ipv4Addr::new(172, 31, *a, 2)),
                IpAddr::V4(Ipv4Addr::new(172, 31, *a, 1)),
            );
            vec![
                Update::AddRouter(RouterConfig {
                    address: IpAddr::V4(Ipv4Addr::new(10, 0, 0, *a)),
                    nic_count: 2,
                    state: State::Up,
                    nics: vec![NicConfig {
                        index: 0,
                        local: mine,
                        peer: theirs,
                        state: State::Up,
                        link,
                    }],
                    routes: Vec::new(),
                }),
                Update::SetNic {
                    router: peer.address,
                    nic: NicConfig {
                        index: spare,
                        local: theirs,
                        peer: mine,
                        state: State::Up,
                        link,
                    },
                },
            ]
        }
        Op::Ranking(r) => vec![Update::SetRanking(r.clone())],
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn updated_snapshots_answer_like_fresh_builds(
        cfg in config(),
        ops in prop::collection::vec(op(), 1..12),
        queries in prop::collection::vec((any::<usize>(), any::<u8>(), prop::collection::vec(address(), 0..30)), 1..6),
    ) {
        let mut snap = TopologySnapshot::build(&cfg).expect("valid");
        for op in &ops {
            let updates = resolve(op, &snap.to_config());
            // Refused updates leave the snapshot as it was; that is part of the contract.
            if let Ok((next, report)) = snap.apply(&updates) {
                let only_networks = updates.iter().all(|u| matches!(u,
                    Update::AddSourceNetwork(_) | Update::AddExternalNetwork(_)
                    | Update::RemoveSourceNetwork { .. } | Update::RemoveExternalNetwork { .. }
                    | Update::RemovePrefix(_) | Update::SetRanking(_)));
                if only_networks {
                    prop_assert!(!report.paths_recomputed);
                    prop_assert!(next.shares_paths_with(&snap));
                }
                snap = next;
            }
        }
        let dumped = snap.to_config();
        let fresh = TopologySnapshot::build(&dumped).expect("a dump always builds");
        prop_assert_eq!(&fresh.to_config(), &dumped);
        for (si, host, candidates) in queries {
            let source = match dumped.source_networks.get(si % dumped.source_networks.len().max(1)) {
                Some(n) => match n.prefix {
                    IpNet::V4(p) => IpAddr::V4(Ipv4Addr::from(u32::from(p.network()) | (u32::from(host) & !u32::from(p.netmask())))),
                    IpNet::V6(p) => IpAddr::V6(p.network()),
                },
                None => IpAddr::V4(Ipv4Addr::new(20, 0, 0, host)),
            };
            let (mut a, mut b) = (candidates.clone(), candidates.clone());
            snap.rank(source, &mut a);
            fresh.rank(source, &mut b);
            prop_assert_eq!(&a, &b);
            prop_assert_eq!(&a, &reference_rank(&dumped, source, &candidates));
        }
    }
}

/// Readers answering through a `SharedSnapshot` while a writer keeps updating it: every query is
/// answered, from a complete snapshot (the old or the new one, never a mix), and generations only
/// move forward.
#[test]
fn readers_never_wait_or_see_half_built_snapshots() {
    use pathwise_oracle::SharedSnapshot;
    use pathwise_oracle::generate::seed_network;
    use pathwise_oracle::proxidor::{Outcome, answer, query};
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

    let shared = SharedSnapshot::new(TopologySnapshot::build(&seed_network(1)).unwrap());
    // 100.64/10 is outside every generated external prefix.
    let probe: IpAddr = "100.64.200.9".parse().unwrap();
    let client: IpAddr = "130.149.221.7".parse().unwrap();
    let mut q = Vec::new();
    query(1, &[probe, "130.149.5.1".parse().unwrap()]).emit(&mut q);
    let stop = AtomicBool::new(false);
    // Readers that have answered once, and answers given: the writer waits for both readers
    // before its first update and for a new answer before each next one, so that answers and
    // updates interleave however the threads are scheduled (on a loaded machine the 40 updates
    // could otherwise all be done before a reader's first answer).
    let (started, answers) = (AtomicU32::new(0), AtomicU32::new(0));
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let mut out = Vec::new();
                let mut last = 0;
                let mut answered = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    let snap = shared.load();
                    assert!(snap.generation() >= last);
                    last = snap.generation();
                    out.clear();
                    let outcome = answer(&snap, client, &q, &mut out);
                    // Odd generations hold the probe prefix, even ones do not.
                    let placed = if last % 2 == 1 { 2 } else { 1 };
                    assert_eq!(
                        outcome,
                        Outcome::Answered {
                            addresses: 2,
                            placed
                        }
                    );
                    answered += 1;
                    if answered == 1 {
                        started.fetch_add(1, Ordering::Relaxed);
                    }
                    answers.fetch_add(1, Ordering::Relaxed);
                }
                assert!(answered > 0);
            });
        }
        let prefix: IpNet = "100.64.200.0/24".parse().unwrap();
        while started.load(Ordering::Relaxed) < 2 {
            std::thread::yield_now();
        }
        for i in 0..40 {
            let seen = answers.load(Ordering::Relaxed);
            while answers.load(Ordering::Relaxed) == seen {
                std::thread::yield_now();
            }
            let u = if i % 2 == 0 {
                Update::AddExternalNetwork(ExternalNetwork {
                    prefix,
                    router: "10.3.2.1".parse().unwrap(),
                    nic: 0,
                    as_number: 64_500,
                    as_distance: 1,
                })
            } else {
                Update::RemovePrefix(prefix)
            };
            shared.update(&[u]).unwrap();
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert_eq!(shared.load().generation(), 40);
}
