//! A brute-force reference oracle over the configuration model, written independently of the
//! snapshot code: Bellman-Ford instead of Dijkstra, a linear scan instead of the prefix trie.
#![allow(dead_code, clippy::needless_range_loop)]

use ipnet::IpNet;
use pathwise_oracle::model::{OracleConfig, RouteMode};
use pathwise_oracle::{PathMetrics, Ranking};
use proptest::prelude::*;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

#[derive(Clone, Copy, Debug)]
struct RefEdge {
    from: usize,
    to: usize,
    nic: u8,
    weight: u32,
    bandwidth: f32,
    latency: f32,
    congestion: u16,
}

#[derive(Clone, Copy, Debug)]
struct RefPath {
    weight: u64,
    hops: u32,
    latency: f32,
    bandwidth: f32,
    congestion: u16,
}

fn edges(cfg: &OracleConfig) -> Vec<RefEdge> {
    let mut out = Vec::new();
    for (i, r) in cfg.routers.iter().enumerate() {
        if !r.state.is_up() {
            continue;
        }
        for nic in r.nics.iter().filter(|n| n.state.is_up()) {
            let Some(link) = nic.link else { continue };
            for (j, p) in cfg.routers.iter().enumerate() {
                if j == i || !p.state.is_up() {
                    continue;
                }
                if p.nics
                    .iter()
                    .any(|pn| pn.local == nic.peer && pn.state.is_up())
                {
                    out.push(RefEdge {
                        from: i,
                        to: j,
                        nic: nic.index,
                        weight: link.weight,
                        bandwidth: link.bandwidth as f32,
                        latency: link.latency as f32,
                        congestion: (link.congestion * 10_000.0).round() as u16,
                    });
                }
            }
        }
    }
    out
}

fn extend(p: RefPath, e: &RefEdge) -> RefPath {
    RefPath {
        weight: p.weight + u64::from(e.weight),
        hops: p.hops + 1,
        latency: p.latency + e.latency,
        bandwidth: p.bandwidth.min(e.bandwidth),
        congestion: p.congestion.max(e.congestion),
    }
}

const ZERO: RefPath = RefPath {
    weight: 0,
    hops: 0,
    latency: 0.0,
    bandwidth: f32::INFINITY,
    congestion: 0,
};

/// Paths from router `src` to every router.
fn paths_from(cfg: &OracleConfig, src: usize) -> Vec<Option<RefPath>> {
    let n = cfg.routers.len();
    let es = edges(cfg);
    let mut out = vec![None; n];
    if !cfg.routers[src].state.is_up() {
        return out;
    }
    match cfg.oracle.routing {
        RouteMode::Computed => {
            let mut dist: Vec<Option<(u64, u32)>> = vec![None; n];
            dist[src] = Some((0, 0));
            for _ in 0..n {
                for e in &es {
                    if let Some((w, h)) = dist[e.from] {
                        let c = (w + u64::from(e.weight), h + 1);
                        if dist[e.to].is_none_or(|d| c < d) {
                            dist[e.to] = Some(c);
                        }
                    }
                }
            }
            // Parent: among edges reaching v at its distance, the lowest (address, nic).
            let parent = |v: usize| {
                es.iter()
                    .filter(|e| {
                        e.to == v
                            && dist[e.from].is_some_and(|(w, h)| {
                                Some((w + u64::from(e.weight), h + 1)) == dist[v]
                            })
                    })
                    .min_by_key(|e| (cfg.routers[e.from].address, e.nic))
                    .copied()
            };
            for v in 0..n {
                if dist[v].is_none() {
                    continue;
                }
                let mut chain = Vec::new();
                let mut at = v;
                while at != src {
                    let Some(e) = parent(at) else { break };
                    chain.push(e);
                    at = e.from;
                }
                let mut p = ZERO;
                for e in chain.iter().rev() {
                    p = extend(p, e);
                }
                out[v] = Some(p);
            }
        }
        RouteMode::Explicit => {
            out[src] = Some(ZERO);
            for d in 0..n {
                if d == src || !cfg.routers[d].state.is_up() {
                    continue;
                }
                let dest = cfg.routers[d].address;
                let mut at = src;
                let mut p = ZERO;
                for _ in 0..n {
                    let Some(route) = cfg.routers[at]
                        .routes
                        .iter()
                        .find(|r| r.destination == dest)
                    else {
                        break;
                    };
                    let Some(e) = es.iter().find(|e| e.from == at && e.nic == route.nic) else {
                        break;
                    };
                    p = extend(p, e);
                    at = e.to;
                    if at == d {
                        out[d] = Some(p);
                        break;
                    }
                }
            }
        }
    }
    out
}

/// (router index, source?, as_number, as_distance) of the most specific prefix covering `a`.
fn lpm(cfg: &OracleConfig, a: IpAddr) -> Vec<(usize, bool, u32, u16)> {
    let idx = |addr: IpAddr| cfg.routers.iter().position(|r| r.address == addr);
    let mut best: Option<IpNet> = None;
    let nets = cfg
        .source_networks
        .iter()
        .map(|n| n.prefix.trunc())
        .chain(cfg.external_networks.iter().map(|n| n.prefix.trunc()));
    for p in nets {
        if p.contains(&a) && best.is_none_or(|b| p.prefix_len() > b.prefix_len()) {
            best = Some(p);
        }
    }
    let Some(best) = best else { return Vec::new() };
    let mut out = Vec::new();
    for n in cfg
        .source_networks
        .iter()
        .filter(|n| n.prefix.trunc() == best)
    {
        out.extend(idx(n.router).map(|r| (r, true, cfg.oracle.local_as, 0)));
    }
    for n in cfg
        .external_networks
        .iter()
        .filter(|n| n.prefix.trunc() == best)
    {
        out.extend(idx(n.router).map(|r| (r, false, n.as_number, n.as_distance)));
    }
    out
}

/// The reference ranking.
pub fn reference_rank(cfg: &OracleConfig, source: IpAddr, candidates: &[IpAddr]) -> Vec<IpAddr> {
    let ranking = Ranking::parse(&cfg.oracle.ranking).expect("ranking compiles");
    let src = lpm(cfg, source)
        .into_iter()
        .filter(|e| e.1)
        .min_by_key(|e| cfg.routers[e.0].address)
        .map(|e| e.0);
    let paths = src.map(|s| paths_from(cfg, s));
    let mut keyed: Vec<(Option<f64>, usize, IpAddr)> = candidates
        .iter()
        .enumerate()
        .map(|(i, &a)| {
            let cost = paths.as_ref().and_then(|paths| {
                lpm(cfg, a)
                    .into_iter()
                    .filter_map(|(r, source, asn, asd)| paths[r].map(|p| (p, r, source, asn, asd)))
                    .min_by_key(|(p, r, source, _, asd)| {
                        (p.weight, *asd, cfg.routers[*r].address, !*source)
                    })
                    .map(|(p, _, source, asn, asd)| {
                        ranking.cost(&PathMetrics {
                            bandwidth: f64::from(p.bandwidth),
                            latency: f64::from(p.latency),
                            hops: p.hops,
                            weight: p.weight,
                            as_number: asn,
                            as_distance: asd,
                            congestion: f64::from(p.congestion) / 10_000.0,
                            external: !source,
                        })
                    })
            });
            (
                cost.map(|c| if c.is_nan() { f64::INFINITY } else { c }),
                i,
                a,
            )
        })
        .collect();
    keyed.sort_by(|a, b| match (a.0, b.0) {
        (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    keyed.into_iter().map(|k| k.2).collect()
}

/// Addresses in the small universe the random configurations use.
pub fn address() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        8 => (0u8..4, 0u8..4, 0u8..255).prop_map(|(a, b, c)| IpAddr::V4(Ipv4Addr::new(20, a, b, c))),
        1 => Just(IpAddr::V4(Ipv4Addr::new(30, 0, 0, 1))),
        1 => any::<u8>().prop_map(|c| IpAddr::V4(Ipv4Addr::new(20, 9, 9, c))),
        3 => (0u16..4, 0u16..4, 0u16..6)
            .prop_map(|(a, b, c)| IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, a, b, 0, 0, 0, c))),
    ]
}

/// Prefixes in that universe: 20/8, 20.a/16, 20.a.b/24, 20.a.b.c/28 and /32, 0/0; IPv6
/// 2001::/16, 2001:db8::/32, 2001:db8:a::/48, 2001:db8:a:b::/64, /127 and /128, ::/0.
pub fn prefix() -> impl Strategy<Value = IpNet> {
    let v4 = (
        0u8..4,
        0u8..4,
        any::<u8>(),
        prop_oneof![
            1 => Just(0u8),
            3 => Just(8),
            4 => Just(16),
            8 => Just(24),
            1 => Just(28),
            1 => Just(32)
        ],
    )
        .prop_map(|(a, b, c, len)| {
            IpNet::new(IpAddr::V4(Ipv4Addr::new(20, a, b, c)), len)
                .expect("valid length")
                .trunc()
        });
    let v6 = (
        0u16..4,
        0u16..4,
        0u16..6,
        prop_oneof![
            1 => Just(0u8),
            1 => Just(16),
            2 => Just(32),
            2 => Just(48),
            3 => Just(64),
            1 => Just(127),
            1 => Just(128)
        ],
    )
        .prop_map(|(a, b, c, len)| {
            IpNet::new(
                IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, a, b, 0, 0, 0, c)),
                len,
            )
            .expect("valid length")
            .trunc()
        });
    prop_oneof![3 => v4, 1 => v6]
}

/// A ranking: the built-ins and a few expressions.
pub fn ranking() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("seed".to_owned()),
        Just("latency-first".to_owned()),
        Just("fewest-hops".to_owned()),
        Just("lowest-weight".to_owned()),
        Just("widest-bandwidth".to_owned()),
        Just("if(external, 100 + as_distance, latency) - bandwidth / 1000".to_owned()),
        Just("max(hops, 2) * congestion + weight % 3".to_owned()),
    ]
}

use pathwise_oracle::model::{
    ExternalNetwork, LinkConfig, NicConfig, RouteConfig, RouterConfig, SourceNetwork, State,
};

fn link_props() -> impl Strategy<Value = LinkConfig> {
    (0u32..4, 0usize..3, 0usize..3, 0usize..3).prop_map(|(weight, b, l, c)| LinkConfig {
        weight,
        bandwidth: [10.0, 100.0, 1000.0][b],
        latency: [0.5, 1.0, 2.5][l],
        congestion: [0.0, 0.25, 0.5][c],
    })
}

type LinkSpec = (usize, usize, LinkConfig, LinkConfig, bool, bool);

/// A random small database: up to 6 routers with shuffled addresses, parallel and asymmetric
/// links with tied weights (0 included), some routers and NICs down, random explicit routes,
/// overlapping source and external prefixes.
pub fn config() -> impl Strategy<Value = OracleConfig> {
    let routers = prop::sample::subsequence((1u8..=30).collect::<Vec<_>>(), 1..=6).prop_shuffle();
    routers
        .prop_flat_map(|addrs| {
            let n = addrs.len();
            let links = prop::collection::vec(
                (
                    0..n,
                    0..n,
                    link_props(),
                    link_props(),
                    prop::bool::weighted(0.9),
                    prop::bool::weighted(0.9),
                ),
                0..12,
            );
            let routes = prop::collection::vec((0..n, 0..n, 0usize..4), 0..20);
            let states = prop::collection::vec(prop::bool::weighted(0.9), n);
            let sources = prop::collection::vec((prefix(), 0..n), 1..5);
            let externals = prop::collection::vec((prefix(), 0..n, 1u32..5, 0u16..4), 0..6);
            let explicit = prop::bool::weighted(0.3);
            (
                Just(addrs),
                links,
                routes,
                states,
                sources,
                externals,
                explicit,
                ranking(),
            )
        })
        .prop_map(
            |(addrs, links, routes, states, sources, externals, explicit, ranking)| {
                build_config(
                    &addrs, &links, &routes, &states, &sources, &externals, explicit, ranking,
                )
            },
        )
}

#[allow(clippy::too_many_arguments)]
fn build_config(
    addrs: &[u8],
    links: &[LinkSpec],
    routes: &[(usize, usize, usize)],
    states: &[bool],
    sources: &[(IpNet, usize)],
    externals: &[(IpNet, usize, u32, u16)],
    explicit: bool,
    ranking: String,
) -> OracleConfig {
    let mut cfg = OracleConfig::default();
    cfg.oracle.routing = if explicit {
        RouteMode::Explicit
    } else {
        RouteMode::Computed
    };
    cfg.oracle.ranking = ranking;
    cfg.oracle.local_as = 7;
    let addr = |i: usize| IpAddr::V4(Ipv4Addr::new(10, 0, 0, addrs[i]));
    cfg.routers = (0..addrs.len())
        .map(|i| RouterConfig {
            address: addr(i),
            nic_count: 0,
            state: if states[i] { State::Up } else { State::Down },
            nics: Vec::new(),
            routes: Vec::new(),
        })
        .collect();
    for (k, &(a, b, ab, ba, up_a, up_b)) in links.iter().enumerate() {
        if a == b {
            continue;
        }
        let (la, lb) = (
            IpAddr::V4(Ipv4Addr::new(172, 16, k as u8, 1)),
            IpAddr::V4(Ipv4Addr::new(172, 16, k as u8, 2)),
        );
        for (r, local, peer, link, up) in [(a, la, lb, ab, up_a), (b, lb, la, ba, up_b)] {
            let router = &mut cfg.routers[r];
            router.nics.push(NicConfig {
                index: router.nics.len() as u8,
                local,
                peer,
                state: if up { State::Up } else { State::Down },
                link: Some(link),
            });
        }
    }
    for r in &mut cfg.routers {
        r.nic_count = r.nics.len() as u16 + 1;
    }
    for &(r, d, nic) in routes {
        let count = cfg.routers[r].nic_count;
        let dest = addr(d);
        cfg.routers[r].routes.push(RouteConfig {
            nic: (nic as u16 % count) as u8,
            destination: dest,
        });
    }
    for &(prefix, r) in sources {
        let n = SourceNetwork {
            prefix,
            router: addr(r),
            nic: 0,
        };
        if !cfg
            .source_networks
            .iter()
            .any(|s| s.prefix == n.prefix && s.router == n.router)
        {
            cfg.source_networks.push(n);
        }
    }
    for &(prefix, r, as_number, as_distance) in externals {
        let n = ExternalNetwork {
            prefix,
            router: addr(r),
            nic: 0,
            as_number,
            as_distance,
        };
        if !cfg
            .external_networks
            .iter()
            .any(|s| s.prefix == n.prefix && s.router == n.router)
        {
            cfg.external_networks.push(n);
        }
    }
    cfg
}

/// A query: a source (usually inside a source network) and candidates.
pub fn query(cfg: &OracleConfig) -> impl Strategy<Value = (IpAddr, Vec<IpAddr>)> + use<> {
    let sources: Vec<IpNet> = cfg.source_networks.iter().map(|n| n.prefix).collect();
    let source = (prop::sample::select(sources), any::<u8>()).prop_map(|(p, host)| match p {
        IpNet::V4(p) => IpAddr::V4(Ipv4Addr::from(
            u32::from(p.network()) | (u32::from(host) & !u32::from(p.netmask())),
        )),
        IpNet::V6(p) => IpAddr::V6(p.network()),
    });
    (
        prop_oneof![9 => source, 1 => address()],
        prop::collection::vec(address(), 0..40),
    )
}
