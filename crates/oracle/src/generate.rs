//! Deterministic networks for tests, benchmarks and the demo: the seed's test network (§5.2) and
//! synthetic networks of any size. The same seed gives the same configuration.

use crate::model::{
    CacheScope, ExternalNetwork, LinkConfig, NicConfig, OracleConfig, RouteMode, RouterConfig,
    SourceNetwork, State,
};
use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use pathwise_core::rand::Rng;
use pathwise_core::rng::seeded;
use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// External prefixes in the seed network (§5.2: "about 67,000 routes").
pub const SEED_EXTERNAL_PREFIXES: usize = 67_000;
/// The seed network's query source router (§5.2).
pub const SEED_SOURCE_ROUTER: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 1);
/// The source network all the seed's queries came from (§5.2).
pub const SEED_SOURCE_NETWORK: &str = "130.149.221.0/24";
/// The seed network's AS (the 130.149/16 client networks are TU Berlin's, in DFN's AS 680).
pub const SEED_LOCAL_AS: u32 = 680;
/// The three exit routers of the seed network.
pub const SEED_EXITS: [Ipv4Addr; 3] = [
    Ipv4Addr::new(10, 3, 2, 1),
    Ipv4Addr::new(10, 6, 2, 2),
    Ipv4Addr::new(10, 9, 2, 1),
];

/// Builds routers and the point-to-point links between them.
struct Net {
    routers: Vec<RouterConfig>,
    links: u32,
}

impl Net {
    fn router(&mut self, address: Ipv4Addr) -> usize {
        self.routers.push(RouterConfig {
            address: address.into(),
            nic_count: 0,
            state: State::Up,
            nics: Vec::new(),
            routes: Vec::new(),
        });
        self.routers.len() - 1
    }

    /// A bidirectional link with the same properties both ways; addresses from 172.16/12 (/30s).
    fn link(&mut self, a: usize, b: usize, link: LinkConfig) {
        let base = u32::from(Ipv4Addr::new(172, 16, 0, 0)) + 4 * self.links;
        self.links += 1;
        let (ia, ib) = (Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2));
        for (r, local, peer) in [(a, ia, ib), (b, ib, ia)] {
            let router = &mut self.routers[r];
            router.nics.push(NicConfig {
                index: router.nics.len() as u8,
                local: local.into(),
                peer: peer.into(),
                state: State::Up,
                link: Some(link),
            });
        }
    }

    /// Give every router its link NICs plus `extra` more (for attached networks); returns the
    /// index of the first extra NIC per router.
    fn finish(&mut self, extra: impl Fn(usize) -> u16) -> Vec<u8> {
        self.routers
            .iter_mut()
            .enumerate()
            .map(|(i, r)| {
                r.nic_count = r.nics.len() as u16 + extra(i);
                r.nics.len() as u8
            })
            .collect()
    }
}

fn link(bandwidth: f64, latency: f64, weight: u32) -> LinkConfig {
    LinkConfig {
        bandwidth,
        latency,
        weight,
        congestion: 0.0,
    }
}

/// The seed's test network (§5.2, Fig. 18): 216 routers in 9 hubs. Each hub `h` has 12 client
/// routers `10.h.0.1–12` (outer ring), 10 intermediate routers `10.h.1.1–10` and 2
/// backbone/uplink routers `10.h.2.1–2`. Each client links to two intermediates, each
/// intermediate to both backbone routers (primary: weight 1; backup: weight 2, less bandwidth,
/// more latency); the hubs form a binary tree (hub `h` under hub `h/2`) with a primary line
/// between their first backbone routers and a secondary one between their second. Each client
/// router holds one `130.149.x.0/24` (108 in all) and `10.1.0.1` also holds the query source
/// network `130.149.221.0/24`. Three exits ([`SEED_EXITS`]) know 67,000 random external
/// prefixes, each at all three with its own AS distance; `seed` drives only those.
pub fn seed_network(seed: u64) -> OracleConfig {
    let mut net = Net {
        routers: Vec::new(),
        links: 0,
    };
    let (mut clients, mut inter, mut backbone) = (Vec::new(), Vec::new(), Vec::new());
    for h in 1..=9u8 {
        clients.push(
            (1..=12)
                .map(|n| net.router(Ipv4Addr::new(10, h, 0, n)))
                .collect::<Vec<_>>(),
        );
        inter.push(
            (1..=10)
                .map(|n| net.router(Ipv4Addr::new(10, h, 1, n)))
                .collect::<Vec<_>>(),
        );
        backbone.push([1, 2].map(|n| net.router(Ipv4Addr::new(10, h, 2, n))));
    }
    for h in 0..9 {
        for (c, &client) in clients[h].iter().enumerate() {
            net.link(client, inter[h][c % 10], link(1_000.0, 1.0, 1));
            net.link(client, inter[h][(c + 1) % 10], link(100.0, 5.0, 2));
        }
        for (i, &im) in inter[h].iter().enumerate() {
            net.link(im, backbone[h][i % 2], link(10_000.0, 0.5, 1));
            net.link(im, backbone[h][(i + 1) % 2], link(1_000.0, 3.0, 2));
        }
        net.link(backbone[h][0], backbone[h][1], link(10_000.0, 0.2, 1));
        if h > 0 {
            let parent = (h - 1) / 2;
            net.link(backbone[h][0], backbone[parent][0], link(10_000.0, 4.0, 1));
            net.link(backbone[h][1], backbone[parent][1], link(2_500.0, 8.0, 2));
        }
    }
    let is_client = |i: usize| clients.iter().any(|c| c.contains(&i));
    let first_extra = net.finish(|i| u16::from(is_client(i)) + 1);
    let nic_of = |addr: Ipv4Addr| {
        net.routers
            .iter()
            .position(|r| r.address == IpAddr::V4(addr))
            .map_or(0, |i| first_extra[i])
    };

    let mut cfg = OracleConfig::default();
    cfg.oracle.max_routers = 1_000;
    cfg.oracle.threads = 2;
    cfg.oracle.routing = RouteMode::Computed;
    cfg.oracle.local_as = SEED_LOCAL_AS;
    for h in 0..9u8 {
        for n in 0..12u8 {
            let router = Ipv4Addr::new(10, h + 1, 0, n + 1);
            let x = h * 12 + n + 1;
            cfg.source_networks.push(SourceNetwork {
                prefix: IpNet::V4(Ipv4Net::new_assert(Ipv4Addr::new(130, 149, x, 0), 24)),
                router: router.into(),
                nic: nic_of(router),
            });
        }
    }
    cfg.source_networks.push(SourceNetwork {
        prefix: IpNet::V4(Ipv4Net::new_assert(Ipv4Addr::new(130, 149, 221, 0), 24)),
        router: SEED_SOURCE_ROUTER.into(),
        nic: nic_of(SEED_SOURCE_ROUTER),
    });
    let mut rng = seeded(seed);
    for prefix in random_prefixes(&mut rng, SEED_EXTERNAL_PREFIXES) {
        let origin = rng.random_range(1..64_000u32);
        let base: u16 = rng.random_range(1..=6);
        for exit in SEED_EXITS {
            cfg.external_networks.push(ExternalNetwork {
                prefix,
                router: exit.into(),
                nic: nic_of(exit),
                as_number: origin,
                as_distance: base + rng.random_range(0..=2u16),
            });
        }
    }
    cfg.routers = net.routers;
    cfg
}

/// `n` distinct random IPv4 prefixes, /8 to /24 (mostly /24, like a BGP table), outside
/// 0/8, 10/8, 100.64/10, 127/8, 130.149/16 and 224/3.
pub fn random_prefixes(rng: &mut impl Rng, n: usize) -> Vec<IpNet> {
    let reserved: [Ipv4Net; 5] = [
        Ipv4Net::new_assert(Ipv4Addr::new(0, 0, 0, 0), 8),
        Ipv4Net::new_assert(Ipv4Addr::new(10, 0, 0, 0), 8),
        Ipv4Net::new_assert(Ipv4Addr::new(100, 64, 0, 0), 10),
        Ipv4Net::new_assert(Ipv4Addr::new(127, 0, 0, 0), 8),
        Ipv4Net::new_assert(Ipv4Addr::new(130, 149, 0, 0), 16),
    ];
    let mut seen = HashSet::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let len: u8 = match rng.random_range(0..100u32) {
            0..60 => 24,
            60..95 => rng.random_range(16..24),
            _ => rng.random_range(8..16),
        };
        let addr = Ipv4Addr::from(rng.random_range(1u32 << 24..224u32 << 24));
        let Ok(net) = Ipv4Net::new(addr, len).map(|n| n.trunc()) else {
            continue;
        };
        if reserved
            .iter()
            .any(|r| r.contains(&net.network()) || net.contains(&r.network()))
        {
            continue;
        }
        if seen.insert(net) {
            out.push(IpNet::V4(net));
        }
    }
    out
}

/// `n` distinct random IPv6 prefixes in 2000::/3, /19 to /48 (about half /48 and a sixth /32,
/// the shape of the global IPv6 table).
pub fn random_prefixes_v6(rng: &mut impl Rng, n: usize) -> Vec<IpNet> {
    let mut seen = HashSet::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let len: u8 = match rng.random_range(0..100u32) {
            0..45 => 48,
            45..60 => 32,
            60..90 => rng.random_range(33..48),
            _ => rng.random_range(19..32),
        };
        let bits = (rng.random::<u128>() >> 3) | (1u128 << 125);
        let Ok(net) = Ipv6Net::new(Ipv6Addr::from(bits), len).map(|n| n.trunc()) else {
            continue;
        };
        if seen.insert(net) {
            out.push(IpNet::V6(net));
        }
    }
    out
}

/// Parameters of a synthetic network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyntheticSpec {
    /// Routers (`10.x.y.z` loopbacks).
    pub routers: usize,
    /// External IPv4 prefixes.
    pub prefixes: usize,
    /// External IPv6 prefixes (as in [`random_prefixes_v6`]), with exits like the IPv4 ones.
    pub prefixes_v6: usize,
    /// Exits per external prefix, drawn from a pool of `exits + 5` border routers.
    pub exits: usize,
    /// Source `/24`s in 100.64/10, spread round-robin over the routers.
    pub source_networks: usize,
    /// Which path-cache rows to keep.
    pub cache: CacheScope,
    /// RNG seed.
    pub seed: u64,
}

impl SyntheticSpec {
    /// `routers` routers, `prefixes` prefixes with `exits` exits each, one source network per
    /// router, all-pairs cache, seed 1.
    pub fn new(routers: usize, prefixes: usize, exits: usize) -> Self {
        SyntheticSpec {
            routers,
            prefixes,
            prefixes_v6: 0,
            exits,
            source_networks: routers,
            cache: CacheScope::AllPairs,
            seed: 1,
        }
    }
}

/// A synthetic network: a ring with one random chord per router (so every router has degree at
/// least 2 and diameters stay small), random link properties (bandwidth 100/1,000/10,000 Mbit/s,
/// latency 0.1–20 ms, weight 1–20), external prefixes as in [`random_prefixes`] with random
/// origin AS and AS distances 1–8, and source `/24`s from 100.64.0.0/10.
pub fn synthetic(spec: &SyntheticSpec) -> OracleConfig {
    let mut rng = seeded(spec.seed);
    let n = spec.routers.max(1);
    let mut net = Net {
        routers: Vec::new(),
        links: 0,
    };
    for i in 0..n {
        let a = u32::from(Ipv4Addr::new(10, 0, 0, 0)) + 1 + i as u32;
        net.router(Ipv4Addr::from(a));
    }
    let props = |rng: &mut pathwise_core::rng::SeededRng| {
        link(
            [100.0, 1_000.0, 10_000.0][rng.random_range(0..3usize)],
            f64::from(rng.random_range(1..=200u32)) / 10.0,
            rng.random_range(1..=20),
        )
    };
    if n > 1 {
        for i in 0..n {
            let l = props(&mut rng);
            if n > 2 || i == 0 {
                net.link(i, (i + 1) % n, l);
            }
        }
        for i in 0..n {
            let j = rng.random_range(0..n);
            if j != i && net.routers[i].nics.len() < 250 && net.routers[j].nics.len() < 250 {
                let l = props(&mut rng);
                net.link(i, j, l);
            }
        }
    }
    let pool: Vec<usize> = (0..(spec.exits + 5).min(n))
        .map(|k| k * n / (spec.exits + 5).min(n))
        .collect();
    let first_extra = net.finish(|_| 1);
    let mut cfg = OracleConfig::default();
    cfg.oracle.max_routers = n as u32;
    cfg.oracle.routing = RouteMode::Computed;
    cfg.oracle.path_cache = spec.cache;
    cfg.oracle.local_as = 64_512;
    for k in 0..spec.source_networks.min(1 << 14) {
        let r = k % n;
        let base = u32::from(Ipv4Addr::new(100, 64, 0, 0)) + ((k as u32) << 8);
        cfg.source_networks.push(SourceNetwork {
            prefix: IpNet::V4(Ipv4Net::new_assert(Ipv4Addr::from(base), 24)),
            router: net.routers[r].address,
            nic: first_extra[r],
        });
    }
    let exits = spec.exits.min(pool.len());
    cfg.external_networks.reserve(spec.prefixes * exits);
    let v4 = random_prefixes(&mut rng, spec.prefixes);
    // Drawn after the IPv4 ones, so that adding IPv6 leaves the IPv4 part unchanged.
    let v6 = if spec.prefixes_v6 > 0 {
        random_prefixes_v6(&mut rng, spec.prefixes_v6)
    } else {
        Vec::new()
    };
    for prefix in v4.into_iter().chain(v6) {
        let origin = rng.random_range(1..64_000u32);
        let start = rng.random_range(0..pool.len().max(1));
        for k in 0..exits {
            let r = pool[(start + k) % pool.len()];
            cfg.external_networks.push(ExternalNetwork {
                prefix,
                router: net.routers[r].address,
                nic: first_extra[r],
                as_number: origin,
                as_distance: rng.random_range(1..=8),
            });
        }
    }
    cfg.routers = net.routers;
    cfg
}
