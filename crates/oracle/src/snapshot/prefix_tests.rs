//! The prefix table's longest-prefix match (DIR-24-8, flattened IPv6 ranges, copy-on-write
//! shards) against the binary trie it replaced (`pathwise_core::fib::Fib`, kept here as the
//! reference), over random overlapping prefix sets with interleaved adds, removals and seals.

use super::prefixes::{Exit, PrefixTable};
use ipnet::IpNet;
use pathwise_core::fib::Fib;
use proptest::prelude::*;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

#[derive(Clone, Debug)]
enum Op {
    /// Set a prefix's exits (none: remove it).
    Set(IpNet, u8),
    /// Seal, then compare lookups; `keep` snapshots the table first (copy on write).
    Check { keep: bool },
}

/// A few base addresses so that prefixes overlap, nest and sit at the edges of the space.
const BASES4: [u32; 6] = [
    0x0a00_0000,
    0x0a01_0200,
    0xc0a8_01ff,
    0xffff_ffff,
    0x0000_0000,
    0x0aff_ff00,
];
const BASES6: [u128; 4] = [
    0x2001_0db8_0000_0000_0000_0000_0000_0000,
    0x2001_0db8_0001_0000_0000_0000_0000_00ff,
    0xffff_ffff_ffff_ffff_ffff_ffff_ffff_ffff,
    0,
];

fn addr4() -> impl Strategy<Value = u32> {
    (0usize..BASES4.len(), any::<u32>(), 0u32..33)
        .prop_map(|(b, noise, keep)| BASES4[b] ^ (noise.checked_shr(keep).unwrap_or(0)))
}

fn addr6() -> impl Strategy<Value = u128> {
    (0usize..BASES6.len(), any::<u128>(), 0u32..129)
        .prop_map(|(b, noise, keep)| BASES6[b] ^ (noise.checked_shr(keep).unwrap_or(0)))
}

fn len4() -> impl Strategy<Value = u8> {
    prop_oneof![1 => Just(0u8), 1 => 1u8..8, 6 => 8u8..=24, 3 => 25u8..32, 1 => Just(32)]
}

fn len6() -> impl Strategy<Value = u8> {
    prop_oneof![1 => Just(0u8), 1 => 1u8..16, 6 => 16u8..=64, 2 => 65u8..128, 1 => Just(128)]
}

fn prefix() -> impl Strategy<Value = IpNet> {
    prop_oneof![
        3 => (addr4(), len4()).prop_map(|(a, l)| {
            IpNet::new(IpAddr::V4(Ipv4Addr::from(a)), l).expect("length").trunc()
        }),
        2 => (addr6(), len6()).prop_map(|(a, l)| {
            IpNet::new(IpAddr::V6(Ipv6Addr::from(a)), l).expect("length").trunc()
        }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (prefix(), 0u8..4).prop_map(|(p, n)| Op::Set(p, n)),
        1 => any::<bool>().prop_map(|keep| Op::Check { keep }),
    ]
}

/// Distinct exits per (prefix, generation), so a stale span shows.
fn exits(n: u8, tag: u32) -> Vec<Exit> {
    (0..n)
        .map(|k| Exit {
            router: u32::from(k),
            as_number: tag,
            as_distance: u16::from(k),
            nic: k,
            source: k % 2 == 0,
        })
        .collect()
}

/// Addresses at and around every prefix's edges, plus the random ones.
fn probes(prefixes: &[IpNet], extra: &[IpAddr]) -> Vec<IpAddr> {
    let mut out: Vec<IpAddr> = extra.to_vec();
    for p in prefixes {
        match p {
            IpNet::V4(n) => {
                let (lo, hi) = (u32::from(n.network()), u32::from(n.broadcast()));
                for a in [lo, hi, lo.wrapping_sub(1), hi.wrapping_add(1), lo | 1] {
                    out.push(IpAddr::V4(a.into()));
                }
            }
            IpNet::V6(n) => {
                let (lo, hi) = (u128::from(n.network()), u128::from(n.broadcast()));
                for a in [lo, hi, lo.wrapping_sub(1), hi.wrapping_add(1), lo | 1] {
                    out.push(IpAddr::V6(a.into()));
                }
            }
        }
    }
    out
}

fn check(t: &PrefixTable, reference: &Fib<Vec<Exit>>, probes: &[IpAddr]) -> Result<(), String> {
    for &a in probes {
        let got = t.lookup(a).map(|(p, e)| (p, e.to_vec()));
        let want = reference.lookup(a).map(|(p, e)| (p, e.clone()));
        if got != want {
            return Err(format!("{a}: got {got:?}, want {want:?}"));
        }
        if t.exits(a).map(<[Exit]>::to_vec) != want.as_ref().map(|w| w.1.clone()) {
            return Err(format!("{a}: exits() differs from lookup()"));
        }
    }
    let v4: Vec<Ipv4Addr> = probes
        .iter()
        .filter_map(|a| match a {
            IpAddr::V4(a) => Some(*a),
            IpAddr::V6(_) => None,
        })
        .collect();
    let mut block = vec![None; v4.len()];
    t.exits_v4_block(&v4, &mut block);
    for (a, got) in v4.iter().zip(&block) {
        if got.map(<[Exit]>::to_vec) != reference.lookup(IpAddr::V4(*a)).map(|(_, e)| e.clone()) {
            return Err(format!("{a}: exits_v4_block differs"));
        }
    }
    if t.len() != reference.len() {
        return Err(format!("len {} != {}", t.len(), reference.len()));
    }
    let mut listed: Vec<(IpNet, Vec<Exit>)> = t.iter().map(|(p, e)| (p, e.to_vec())).collect();
    let mut want: Vec<(IpNet, Vec<Exit>)> = reference.iter().map(|(p, e)| (p, e.clone())).collect();
    listed.sort_by_key(|x| x.0);
    want.sort_by_key(|x| x.0);
    if listed != want {
        return Err("iter() differs".to_owned());
    }
    for (p, e) in &want {
        if t.get(p) != Some(&e[..]) {
            return Err(format!("get({p}) differs"));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn lookups_match_the_trie_through_updates(
        ops in prop::collection::vec(op(), 1..120),
        extra4 in prop::collection::vec(addr4(), 0..40),
        extra6 in prop::collection::vec(addr6(), 0..40),
    ) {
        let extra: Vec<IpAddr> = extra4
            .into_iter()
            .map(|a| IpAddr::V4(a.into()))
            .chain(extra6.into_iter().map(|a| IpAddr::V6(a.into())))
            .collect();
        let mut t = PrefixTable::default();
        let mut reference: Fib<Vec<Exit>> = Fib::new();
        let mut touched: Vec<IpNet> = Vec::new();
        // Older snapshots and what they must still answer.
        let mut kept: Vec<(PrefixTable, Fib<Vec<Exit>>)> = Vec::new();
        for (tag, op) in ops.into_iter().chain([Op::Check { keep: false }]).enumerate() {
            match op {
                Op::Set(p, n) => {
                    let e = exits(n, tag as u32);
                    t.set(p, &e);
                    if e.is_empty() {
                        reference.remove(&p);
                    } else {
                        reference.insert(p, e);
                    }
                    touched.push(p);
                }
                Op::Check { keep } => {
                    t.seal();
                    let probes = probes(&touched, &extra);
                    check(&t, &reference, &probes).map_err(TestCaseError::fail)?;
                    if keep {
                        kept.push((t.clone(), reference.clone()));
                    }
                }
            }
        }
        let probes = probes(&touched, &extra);
        for (old, r) in &kept {
            check(old, r, &probes).map_err(TestCaseError::fail)?;
        }
    }
}

#[test]
fn a_full_octet_and_host_routes() {
    // /8 under a /0, a /24 with /25–/32 inside it, and a /32 at the very top of the space.
    let mut t = PrefixTable::default();
    let mut reference: Fib<Vec<Exit>> = Fib::new();
    let nets = [
        "0.0.0.0/0",
        "10.0.0.0/8",
        "10.1.2.0/24",
        "10.1.2.128/25",
        "10.1.2.200/32",
        "10.1.2.201/32",
        "255.255.255.255/32",
        "::/0",
        "2001:db8::/32",
        "2001:db8::1/128",
        "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128",
    ];
    for (i, n) in nets.iter().enumerate() {
        let p: IpNet = n.parse().expect("prefix");
        t.set(p, &exits(1 + (i % 3) as u8, i as u32));
        reference.insert(p, exits(1 + (i % 3) as u8, i as u32));
    }
    t.seal();
    let parsed: Vec<IpNet> = nets.iter().map(|n| n.parse().expect("prefix")).collect();
    check(&t, &reference, &probes(&parsed, &[])).expect("matches");
    let hit = t
        .lookup("10.1.2.201".parse().expect("address"))
        .expect("found");
    assert_eq!(hit.0, "10.1.2.201/32".parse::<IpNet>().expect("prefix"));
    let hit = t
        .lookup("10.1.2.202".parse().expect("address"))
        .expect("found");
    assert_eq!(hit.0, "10.1.2.128/25".parse::<IpNet>().expect("prefix"));
    let hit = t
        .lookup("11.0.0.1".parse().expect("address"))
        .expect("found");
    assert_eq!(hit.0, "0.0.0.0/0".parse::<IpNet>().expect("prefix"));
}
