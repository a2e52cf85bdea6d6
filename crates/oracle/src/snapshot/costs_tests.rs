//! The per-(row, prefix) sort keys (`snapshot/costs.rs`) against recomputation with the
//! per-candidate code (exit choice over the path row, `PathMetrics`, `Ranking::cost`), through
//! random sequences of updates: prefixes added and removed (IPv6 shards appearing and going, so
//! slots move), links going down, the ranking changing, rows added.

use super::costs::PrefixCosts;
use super::*;
use crate::generate::{SyntheticSpec, synthetic};
use crate::model::{ExternalNetwork, State};
use crate::rank::order_key;
use proptest::prelude::*;
use std::net::{Ipv4Addr, Ipv6Addr};

const RANKINGS: [&str; 4] = [
    "seed",
    "fewest-hops",
    "latency-first",
    "if(external, 100 + as_distance, latency) - bandwidth / 1000",
];

/// A 24-router network with 600 IPv4 external prefixes and some IPv6 ones.
fn base_config() -> OracleConfig {
    let mut spec = SyntheticSpec::new(24, 600, 3);
    spec.source_networks = 24;
    let mut cfg = synthetic(&spec);
    let exits: Vec<IpAddr> = cfg.routers.iter().step_by(5).map(|r| r.address).collect();
    for k in 0..40u16 {
        for (j, &router) in exits.iter().enumerate().take(2) {
            cfg.external_networks.push(ExternalNetwork {
                prefix: v6_prefix(k, 48),
                router,
                nic: 0,
                as_number: 64_000 + u32::from(k),
                as_distance: (k + j as u16) % 4,
            });
        }
    }
    cfg
}

/// `2001:db8:k::/len` for even `k`, `(0x3000 + k)::/len` (its own IPv6 shard) for odd `k`.
fn v6_prefix(k: u16, len: u8) -> IpNet {
    let a = if k.is_multiple_of(2) {
        Ipv6Addr::new(0x2001, 0xdb8, k, 0, 0, 0, 0, 0)
    } else {
        Ipv6Addr::new(0x3000 + k, 0, 0, 0, 0, 0, 0, 0)
    };
    IpNet::new(IpAddr::V6(a), len).expect("length").trunc()
}

#[derive(Clone, Debug)]
enum Op {
    /// An external prefix at the `r`-th router (IPv4 `a.b.c.0/len`, or IPv6 shard `k`).
    AddV4([u8; 3], u8, usize, u16),
    AddV6(u16, u8, usize, u16),
    /// Remove the prefix covering this address, if any.
    Remove(IpAddr),
    /// A NIC of the `r`-th router goes down or up.
    Nic(usize, bool),
    Ranking(usize),
    /// Rank from these sources (fills their rows' keys).
    Query(Vec<u8>),
}

fn addr() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        3 => any::<u32>().prop_map(|a| IpAddr::V4(Ipv4Addr::from(a))),
        3 => (0u8..3, any::<u16>()).prop_map(|(x, h)| IpAddr::V4(Ipv4Addr::new(
            [1, 100, 203][x as usize], 64, (h >> 8) as u8, h as u8))),
        2 => (0u16..48, any::<u16>()).prop_map(|(k, h)| {
            let p = v6_prefix(k, 48);
            match p {
                IpNet::V6(n) => IpAddr::V6(Ipv6Addr::from(u128::from(n.network()) | u128::from(h))),
                IpNet::V4(_) => unreachable!("an IPv6 prefix"),
            }
        }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<[u8; 3]>(), 8u8..=28, 0usize..24, 0u16..6)
            .prop_map(|(a, l, r, d)| Op::AddV4([[1, 100, 203][usize::from(a[0] % 3)], a[1], a[2]], l, r, d)),
        2 => (0u16..48, 16u8..=64, 0usize..24, 0u16..6).prop_map(|(k, l, r, d)| Op::AddV6(k, l, r, d)),
        3 => addr().prop_map(Op::Remove),
        1 => (0usize..24, any::<bool>()).prop_map(|(r, up)| Op::Nic(r, up)),
        1 => (0usize..RANKINGS.len()).prop_map(Op::Ranking),
        4 => prop::collection::vec(0u8..30, 1..3).prop_map(Op::Query),
    ]
}

/// Every key array the snapshot holds against the per-candidate code.
fn check_keys(snap: &TopologySnapshot) -> Result<usize, String> {
    let built = snap.costs.built();
    for (index, slot, keys) in &built {
        let row = snap.paths.rows.get(*index).ok_or("no such row")?;
        let want: Vec<u64> = snap
            .prefixes
            .slot_exits(*slot)
            .into_iter()
            .map(|e| order_key(snap.metrics_of_exits(row, e).map(|m| snap.ranking.cost(&m))))
            .collect();
        if keys[..] != want[..] {
            return Err(format!("row {index} slot {slot}: stale keys"));
        }
    }
    Ok(built.len())
}

fn source(s: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(100, 64, s, 9))
}

fn rank_reference(snap: &TopologySnapshot, source: IpAddr, candidates: &[IpAddr]) -> Vec<IpAddr> {
    let mut keyed: Vec<(u64, usize, IpAddr)> = candidates
        .iter()
        .enumerate()
        .map(|(i, &a)| (order_key(snap.cost(source, a)), i, a))
        .collect();
    keyed.sort();
    keyed.into_iter().map(|k| k.2).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn prefix_keys_equal_recomputation_through_updates(
        ops in prop::collection::vec(op(), 1..30),
        candidates in prop::collection::vec(addr(), 1..80),
    ) {
        let cfg = base_config();
        let routers: Vec<IpAddr> = cfg.routers.iter().map(|r| r.address).collect();
        let mut snap = TopologySnapshot::build(&cfg).expect("builds");
        for op in ops {
            let updates = match op {
                Op::AddV4(a, len, r, d) => vec![Update::AddExternalNetwork(ExternalNetwork {
                    prefix: IpNet::new(IpAddr::V4(Ipv4Addr::new(a[0], a[1], a[2], 0)), len)
                        .expect("length")
                        .trunc(),
                    router: routers[r % routers.len()],
                    nic: 0,
                    as_number: 65_000,
                    as_distance: d,
                })],
                Op::AddV6(k, len, r, d) => vec![Update::AddExternalNetwork(ExternalNetwork {
                    prefix: v6_prefix(k, len),
                    router: routers[r % routers.len()],
                    nic: 0,
                    as_number: 65_001,
                    as_distance: d,
                })],
                Op::Remove(a) => match snap.locate(a) {
                    Some(l) => vec![Update::RemovePrefix(l.prefix)],
                    None => continue,
                },
                Op::Nic(r, up) => vec![Update::SetNicState {
                    router: routers[r % routers.len()],
                    nic: 0,
                    state: if up { State::Up } else { State::Down },
                }],
                Op::Ranking(k) => vec![Update::SetRanking(RANKINGS[k].to_owned())],
                Op::Query(sources) => {
                    for s in sources {
                        let mut got = candidates.clone();
                        snap.rank(source(s), &mut got);
                        prop_assert_eq!(got, rank_reference(&snap, source(s), &candidates));
                    }
                    check_keys(&snap).map_err(TestCaseError::fail)?;
                    continue;
                }
            };
            let before = snap.costs.built();
            let Ok((next, report)) = snap.apply(&updates) else {
                // A NIC the router does not have: nothing changed.
                continue;
            };
            // Carried over: only arrays of untouched shards, and only when the terms stay.
            let after = next.costs.built();
            if report.paths_recomputed || report.rows_added > 0 || matches!(updates[0], Update::SetRanking(_)) {
                prop_assert!(after.is_empty());
            } else {
                // Each changed prefix drops at most its own shard's array, in every row.
                for row in 0..snap.paths.rows.len() {
                    let n = |v: &[(usize, u32, Arc<[u64]>)]| v.iter().filter(|x| x.0 == row).count();
                    prop_assert!(n(&after) + report.prefixes_changed >= n(&before));
                }
                for (_, _, k) in &after {
                    prop_assert!(before.iter().any(|(_, _, b)| Arc::ptr_eq(b, k)));
                }
            }
            check_keys(&next).map_err(TestCaseError::fail)?;
            snap = next;
        }
        check_keys(&snap).map_err(TestCaseError::fail)?;
    }
}

#[test]
fn over_the_budget_keys_are_computed_from_the_exits() {
    let mut snap = TopologySnapshot::build(&base_config()).expect("builds");
    let candidates: Vec<IpAddr> = (0..300u32)
        .map(|i| {
            let x = i.wrapping_mul(2_654_435_761);
            if i % 3 == 0 {
                IpAddr::V4(Ipv4Addr::new(100, 64, (x >> 8) as u8, x as u8))
            } else {
                IpAddr::V4(Ipv4Addr::from(x))
            }
        })
        .collect();
    // Room for a few hundred keys: some shards get theirs, the others are costed as before.
    snap.costs = Arc::new(PrefixCosts::with_budget(snap.paths.rows.len(), 2_000));
    for s in [0u8, 1, 7] {
        let mut got = candidates.clone();
        snap.rank(source(s), &mut got);
        assert_eq!(got, rank_reference(&snap, source(s), &candidates));
    }
    assert!(snap.costs.held() <= 2_000);
    assert!(check_keys(&snap).expect("keys match") > 0);

    snap.costs = Arc::new(PrefixCosts::with_budget(snap.paths.rows.len(), 0));
    let mut got = candidates.clone();
    snap.rank(source(3), &mut got);
    assert_eq!(got, rank_reference(&snap, source(3), &candidates));
    assert!(snap.costs.built().is_empty());
}

#[test]
fn a_prefix_update_keeps_the_keys_of_the_other_shards() {
    let snap = TopologySnapshot::build(&base_config()).expect("builds");
    let candidates: Vec<IpAddr> = (0..=255u8)
        .map(|o| IpAddr::V4(Ipv4Addr::new(o, 64, 1, 1)))
        .chain((0..48).map(|k| match v6_prefix(k, 48) {
            IpNet::V6(n) => IpAddr::V6(n.network()),
            IpNet::V4(_) => unreachable!("an IPv6 prefix"),
        }))
        .collect();
    let mut work = candidates.clone();
    snap.rank(source(2), &mut work);
    let before = snap.costs.built();
    assert!(before.len() > 5, "keys built for several shards");
    let (next, _) = snap
        .apply(&[Update::RemovePrefix(v6_prefix(1, 48))])
        .expect("applies");
    let after = next.costs.built();
    // The removed prefix's shard (its own 16-bit key) is gone; every other array is shared.
    assert_eq!(after.len() + 1, before.len());
    check_keys(&next).expect("keys match");
    assert!(next.prefix_costs_bytes() > 0);
}

/// [`base_config`] with two dense first octets (1 and 203: DIR-24-8 shards, /9 to /30, so
/// runs split by level-2 chunks too) and a /4 in the short-prefix shard under octet 1.
fn dense_config(seed: u64) -> OracleConfig {
    let mut cfg = base_config();
    let routers: Vec<IpAddr> = cfg.routers.iter().map(|r| r.address).collect();
    let mut x = seed | 1;
    let mut next = move || {
        // xorshift64: deterministic, no dependency.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for k in 0..160u64 {
        let r = next();
        let octet = if k % 2 == 0 { 1 } else { 203 };
        let len = 9 + (r % 22) as u8;
        let a = Ipv4Addr::from((octet << 24) | ((r >> 8) as u32 & 0x00ff_ffff));
        cfg.external_networks.push(ExternalNetwork {
            prefix: IpNet::new(IpAddr::V4(a), len).expect("length").trunc(),
            router: routers[(r >> 40) as usize % routers.len()],
            nic: 0,
            as_number: 65_010,
            as_distance: (r >> 50) as u16 % 6,
        });
    }
    cfg.external_networks.push(ExternalNetwork {
        prefix: "0.0.0.0/4".parse().expect("prefix"),
        router: routers[3],
        nic: 0,
        as_number: 65_011,
        as_distance: 2,
    });
    cfg.external_networks.sort_by_key(|n| (n.prefix, n.router));
    cfg.external_networks.dedup_by_key(|n| (n.prefix, n.router));
    cfg
}

/// Every run key held against the per-candidate code: a run's key, where it has one, is the
/// key of every address in the run; a run no single prefix covers has none.
fn check_run_keys(snap: &TopologySnapshot) -> Result<usize, String> {
    let mut runs = 0;
    for (index, slot, keys) in snap.costs.built_keys() {
        let row = snap.paths.rows.get(index).ok_or("no such row")?;
        let leaves = snap.prefixes.slot_run_leaves(slot);
        if keys.runs.len() != leaves.len() || keys.runs.len() != snap.prefixes.slot_runs(slot) {
            return Err(format!(
                "row {index} slot {slot}: {} run keys",
                keys.runs.len()
            ));
        }
        let exits = snap.prefixes.slot_exits(slot);
        for (r, (&k, &leaf)) in keys.runs.iter().zip(&leaves).enumerate() {
            let want = match leaf.checked_sub(1) {
                None => u64::MAX,
                Some(l) => order_key(
                    snap.metrics_of_exits(row, exits[l as usize])
                        .map(|m| snap.ranking.cost(&m)),
                ),
            };
            if k != want {
                return Err(format!("row {index} slot {slot} run {r}: stale key"));
            }
        }
        runs += keys.runs.len();
        check_entries(slot, &keys, snap.prefixes.slot_blocks(slot).unwrap_or(&[]))
            .map_err(|e| format!("row {index} slot {slot}: {e}"))?;
    }
    Ok(runs)
}

/// A shard's block entries against its run keys: one entry per level-1 block; an entry that
/// names keys gives every address of the block its run's key, and names the key itself exactly
/// when the block's runs all have one key.
fn check_entries(slot: u32, keys: &costs::ShardKeys, blocks: &[lpm::Block]) -> Result<(), String> {
    if keys.blocks.len() != blocks.len() {
        return Err(format!(
            "{} entries for {} blocks",
            keys.blocks.len(),
            blocks.len()
        ));
    }
    for (b, (&entry, block)) in keys.blocks.iter().zip(blocks).enumerate() {
        let run_key = |i: u32| {
            let run = block.base() + (block.starts() & (u64::MAX >> (63 - i))).count_ones() - 1;
            keys.runs.get(run as usize).copied()
        };
        if entry == costs::NO_ENTRY {
            // Only a block of more key runs than a line holds goes without (the shards here
            // have few keys).
            if (block.starts().count_ones() as usize) <= costs::LINE_RUNS {
                return Err(format!("block {b}: no entry for a block of few runs"));
            }
            continue;
        }
        let one_key = (1..64).all(|i| run_key(i) == run_key(0));
        if one_key != (entry & costs::LINE == 0) {
            return Err(format!("block {b}: entry {entry:#06x}, one key {one_key}"));
        }
        // Every entry of the block: the key through the entry is the key of the entry's run.
        for i in 0..64u32 {
            let addr = (slot << 24) | ((b as u32) << 14) | (i << 8);
            let got = keys
                .key_through_entries(addr)
                .ok_or(format!("block {b} entry {i}: no key through the entry"))?;
            if Some(got) != run_key(i) {
                return Err(format!("block {b} entry {i}: entry key is not the run key"));
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Run keys through random updates: after every step every run key held equals
    /// recomputation, and for random addresses the key read through the address's run (where
    /// the run has one) is the address's own key, else the whole lookup is (the rank equals the
    /// reference).
    #[test]
    fn run_keys_equal_recomputation_through_updates(
        seed in any::<u64>(),
        ops in prop::collection::vec(op(), 1..20),
        probes in prop::collection::vec((0u8..2, any::<u32>()), 1..120),
    ) {
        let cfg = dense_config(seed);
        let routers: Vec<IpAddr> = cfg.routers.iter().map(|r| r.address).collect();
        let mut snap = TopologySnapshot::build(&cfg).expect("builds");
        let probes: Vec<Ipv4Addr> = probes
            .iter()
            .map(|&(o, h)| Ipv4Addr::from((u32::from([1u8, 203][usize::from(o)]) << 24) | (h & 0x00ff_ffff)))
            .collect();
        let mut checked = 0;
        let mut through_entries = 0;
        for op in ops.into_iter().chain([Op::Query(vec![0, 5])]) {
            let updates = match op {
                Op::AddV4(a, len, r, d) => vec![Update::AddExternalNetwork(ExternalNetwork {
                    prefix: IpNet::new(IpAddr::V4(Ipv4Addr::new(a[0], a[1], a[2], 0)), len)
                        .expect("length")
                        .trunc(),
                    router: routers[r % routers.len()],
                    nic: 0,
                    as_number: 65_000,
                    as_distance: d,
                })],
                Op::AddV6(..) => continue,
                Op::Remove(a) => match snap.locate(a) {
                    Some(l) => vec![Update::RemovePrefix(l.prefix)],
                    None => continue,
                },
                Op::Nic(r, up) => vec![Update::SetNicState {
                    router: routers[r % routers.len()],
                    nic: 0,
                    state: if up { State::Up } else { State::Down },
                }],
                Op::Ranking(k) => vec![Update::SetRanking(RANKINGS[k].to_owned())],
                Op::Query(sources) => {
                    for s in sources {
                        let cands: Vec<IpAddr> = probes.iter().map(|&a| IpAddr::V4(a)).collect();
                        let mut got = cands.clone();
                        snap.rank(source(s), &mut got);
                        prop_assert_eq!(got, rank_reference(&snap, source(s), &cands));
                        // Each probe's run key, where its run has one, is its own key.
                        let mut hits = vec![prefixes::Hit::NONE; probes.len()];
                        snap.prefixes.runs_v4_block(&probes, &mut hits);
                        let keys = snap.costs.built_keys();
                        let Some(router) = snap.source_idx(source(s)) else { continue };
                        let row = snap.paths.row_of[router as usize] as usize;
                        for (&a, h) in probes.iter().zip(&hits) {
                            let Some(run) = h.leaf.checked_sub(prefixes::RUN) else { continue };
                            let Some((_, _, k)) = keys.iter().find(|(i, sl, _)| *i == row && *sl == h.slot) else { continue };
                            let key = k.runs[run as usize];
                            if key != u64::MAX {
                                prop_assert_eq!(key, order_key(snap.cost(source(s), IpAddr::V4(a))));
                                checked += 1;
                            }
                            // The key through the probe's block entry is its run key.
                            if let Some(through) = k.key_through_entries(u32::from(a)) {
                                prop_assert_eq!(through, key);
                                through_entries += 1;
                            }
                        }
                    }
                    check_run_keys(&snap).map_err(TestCaseError::fail)?;
                    continue;
                }
            };
            let Ok((next, _)) = snap.apply(&updates) else { continue };
            check_run_keys(&next).map_err(TestCaseError::fail)?;
            check_keys(&next).map_err(TestCaseError::fail)?;
            snap = next;
        }
        prop_assert!(checked > 0, "no probe was ranked through a run key");
        prop_assert!(through_entries > 0, "no probe was ranked through a block entry");
    }
}

/// The entries of hand-made blocks: prefix runs of equal keys are one key run; one key is the
/// key's id; past `LINE_RUNS` key runs, or a second key run whose id does not fit a byte, no
/// entry.
#[test]
fn block_entries_merge_runs_of_one_key_and_give_up_where_a_line_cannot_hold_them() {
    use costs::{EntryBuilder, LINE, NO_ENTRY};
    let mut b = EntryBuilder::default();
    // Block 0: three prefix runs (entries 0, 10, 20), all key 7: one key.
    b.push(Some((1 | 1 << 10 | 1 << 20, &[7, 7, 7])));
    // Block 1: runs at 0, 5, 9 with keys 7, 9, 9: two key runs (0 and 5).
    b.push(Some((1 | 1 << 5 | 1 << 9, &[7, 9, 9])));
    // Block 2: nine runs of alternating keys: more key runs than a line holds.
    let nine: Vec<u64> = (0..9).map(|i| 7 + 2 * (i % 2)).collect();
    b.push(Some(((1u64 << 9) - 1, &nine)));
    // Block 3: eight key runs, every entry its own key 0–7 from a new table position.
    let eight: Vec<u64> = (100..108).collect();
    b.push(Some(((1u64 << 8) - 1, &eight)));
    // Block 4: the runs are unknown; block 5: keys that do not match the bitmap.
    b.push(None);
    b.push(Some((0b11, &[1])));
    let keys = b.finish(Vec::new(), Vec::new());
    let (blocks, lines, table) = (keys.blocks, keys.lines, keys.line_keys);
    assert_eq!(&table[..], &[7, 9, 100, 101, 102, 103, 104, 105, 106, 107]);
    assert_eq!(blocks[0], 0, "one key: its id");
    assert_eq!(blocks[1], LINE, "two key runs: the first line");
    assert_eq!(lines[0].id(1 << 8), Some(0));
    assert_eq!(lines[0].id(4 << 8), Some(0));
    assert_eq!(lines[0].id(5 << 8), Some(1));
    assert_eq!(lines[0].id(63 << 8), Some(1));
    assert_eq!(blocks[2], NO_ENTRY, "nine key runs");
    assert_eq!(blocks[3], LINE | 1, "eight key runs fit");
    assert_eq!(lines[1].id(7 << 8), Some(9));
    assert_eq!(lines[1].id(40 << 8), Some(9));
    assert_eq!(&blocks[4..], &[NO_ENTRY, NO_ENTRY]);

    // Ids past a byte: a block of one such key still has its entry, a line with one does not.
    let mut b = EntryBuilder::default();
    let many: Vec<u64> = (0..64).collect();
    for chunk in many
        .chunks(8)
        .chain(many.chunks(8))
        .chain(many.chunks(8))
        .chain(many.chunks(8))
    {
        b.push(Some(((1u64 << chunk.len()) - 1, chunk)));
    }
    b.push(Some((1, &[1000])));
    let wide: Vec<u64> = (0..300).collect();
    for chunk in wide.chunks(4) {
        b.push(Some(((1u64 << chunk.len()) - 1, chunk)));
    }
    let keys = b.finish(Vec::new(), Vec::new());
    let (blocks, table) = (keys.blocks, keys.line_keys);
    assert_eq!(blocks[32], 64, "a single key past 255 is its id");
    assert_eq!(table[64], 1000);
    let last = *blocks.last().expect("entries");
    assert_eq!(last, NO_ENTRY, "a line naming ids past 255 is not kept");
}
