//! Ranking from precomputed (row, exit) terms and block lookups against the per-candidate code
//! it replaced, kept here as the reference: `cost()` (longest-prefix match, exit choice,
//! `PathMetrics`, `Ranking::cost`) for each candidate, then a stable sort.

use super::*;
use crate::generate::{SyntheticSpec, synthetic};
use crate::model::ExternalNetwork;
use crate::proxidor::{self, Outcome};
use crate::rank::order_key;
use proptest::prelude::*;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

const RANKINGS: [&str; 8] = [
    "seed",
    "latency-first",
    "fewest-hops",
    "lowest-weight",
    "widest-bandwidth",
    "if(external, 100 + as_distance, latency) - bandwidth / 1000",
    "max(hops, 2) * congestion + weight % 3",
    "hops / 3 + 10 / bandwidth + 8 * total_hops",
];

/// A 40-router network with 3,000 IPv4 and 300 IPv6 external prefixes.
fn base() -> &'static TopologySnapshot {
    static SNAP: OnceLock<TopologySnapshot> = OnceLock::new();
    SNAP.get_or_init(|| {
        let mut spec = SyntheticSpec::new(40, 3_000, 3);
        spec.source_networks = 40;
        let mut cfg = synthetic(&spec);
        let exits: Vec<IpAddr> = cfg.routers.iter().step_by(7).map(|r| r.address).collect();
        for k in 0..300u16 {
            for (j, &router) in exits.iter().enumerate().take(3) {
                cfg.external_networks.push(ExternalNetwork {
                    prefix: IpNet::new(
                        IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, k, 0, 0, 0, 0, 0)),
                        if k % 5 == 0 { 32 } else { 48 },
                    )
                    .expect("length")
                    .trunc(),
                    router,
                    nic: 0,
                    as_number: 64_000 + u32::from(k),
                    as_distance: (k + j as u16) % 4,
                });
            }
        }
        cfg.external_networks.sort_by_key(|n| (n.prefix, n.router));
        cfg.external_networks.dedup_by_key(|n| (n.prefix, n.router));
        TopologySnapshot::build(&cfg).expect("builds")
    })
}

fn old_rank(snap: &TopologySnapshot, source: IpAddr, candidates: &[IpAddr]) -> Vec<IpAddr> {
    let mut keyed: Vec<(u64, usize, IpAddr)> = candidates
        .iter()
        .enumerate()
        .map(|(i, &a)| (order_key(snap.cost(source, a)), i, a))
        .collect();
    keyed.sort();
    keyed.into_iter().map(|k| k.2).collect()
}

fn candidate() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        4 => any::<u32>().prop_map(|a| IpAddr::V4(Ipv4Addr::from(a))),
        2 => (0u32..64, any::<u8>())
            .prop_map(|(x, h)| IpAddr::V4(Ipv4Addr::new(100, 64, x as u8, h))),
        2 => (0u16..310, any::<u16>())
            .prop_map(|(k, h)| IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, k, 0, 0, 0, 0, h))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]

    #[test]
    fn ranking_matches_the_per_candidate_code(
        ranking in 0usize..RANKINGS.len(),
        source in 0u8..48,
        candidates in prop::collection::vec(candidate(), 0..120),
    ) {
        let (snap, _) = base()
            .apply(&[Update::SetRanking(RANKINGS[ranking].to_owned())])
            .expect("ranking compiles");
        let source = IpAddr::V4(Ipv4Addr::new(100, 64, source, 9));
        let want = old_rank(&snap, source, &candidates);
        let mut got = candidates.clone();
        snap.rank(source, &mut got);
        prop_assert_eq!(&got, &want);

        // The server path: one query per family (at most a datagram's worth).
        let v4: Vec<IpAddr> = candidates.iter().copied().filter(IpAddr::is_ipv4).collect();
        let v6: Vec<IpAddr> = candidates.iter().copied().filter(IpAddr::is_ipv6).take(60).collect();
        for family in [v4, v6] {
            let mut q = Vec::new();
            proxidor::query(9, &family).emit(&mut q);
            let mut out = Vec::new();
            let outcome = proxidor::answer(&snap, source, &q, &mut out);
            prop_assert!(matches!(outcome, Outcome::Answered { .. }), "{:?}", outcome);
            let reply = proxidor::Message::parse(&out).expect("reply parses");
            let ranked: Vec<IpAddr> = reply
                .tlvs
                .iter()
                .flat_map(|t| match &t.payload {
                    proxidor::Payload::Ipv4(a) => a.iter().map(|&a| IpAddr::V4(a)).collect(),
                    proxidor::Payload::Ipv6(a) => a.iter().map(|&a| IpAddr::V6(a)).collect(),
                    proxidor::Payload::Unknown(..) => Vec::new(),
                })
                .collect();
            prop_assert_eq!(ranked, old_rank(&snap, source, &family));
        }
    }
}
