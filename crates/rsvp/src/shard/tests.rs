//! Routing of sessions and datagrams to shards, and label ranges.

use super::*;
use crate::testing::{bytes, ff, path, resv, sender, session};
use crate::wire::StyleKind;
use crate::wire::message::refresh::emit_bundle;
use proptest::prelude::*;

fn path_bytes(s: Session, f: crate::wire::FilterSpec) -> Vec<u8> {
    bytes(&path(s, f), 63)
}

fn resv_bytes(s: Session, f: crate::wire::FilterSpec) -> Vec<u8> {
    bytes(&resv(s, StyleKind::Ff, ff(1000.0, f)), 63)
}

#[test]
fn a_message_goes_to_its_sessions_shard_whatever_its_flags() {
    let map = ShardMap::new(4, 1);
    let mut seen = [false; 4];
    for port in 1..200 {
        let s = session(port);
        let shard = map.of_session(&s);
        seen[shard] = true;
        assert_eq!(map.of_message(&path_bytes(s, sender(port))), shard);
        assert_eq!(map.of_message(&resv_bytes(s, sender(port))), shard);
        // E_Police does not move a session (RFC 2205 §A.1).
        let policed = Session {
            flags: Session::E_POLICE,
            ..s
        };
        assert_eq!(map.of_session(&policed), shard);
        assert_eq!(
            session_of(&path_bytes(policed, sender(port))),
            Some(policed)
        );
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
    let (p0, p1) = (path_bytes(s0, sender(1)), path_bytes(s1, sender(2)));
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
    let cfg = Config::default();
    let shards = shard_configs(&cfg, 3);
    assert_eq!(shards.len(), 3);
    assert_ne!(shards[0].seed, shards[1].seed);
    assert_eq!(shards.iter().map(|c| c.label_range).collect::<Vec<_>>(), r);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever arrives, dispatching never panics, hands out only pieces of the datagram, and
    /// loses nothing uncounted: the datagram whole once, or every sub-message of a Bundle either
    /// handed to a shard or counted as dropped.
    #[test]
    fn dispatch_hands_out_every_piece_or_counts_it(
        shards in 1usize..=8,
        seed in any::<u64>(),
        payload in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let map = ShardMap::new(shards, seed);
        let mut got = Vec::new();
        let bad = map.dispatch(&payload, |i, b| got.push((i, b.len())));
        prop_assert!(got.iter().all(|&(i, _)| i < shards));
        prop_assert!(!got.is_empty() || bad > 0);
        if bad == 0 && got.len() == 1 {
            prop_assert_eq!(got[0].1, payload.len());
        }
    }

    /// A Bundle of Paths and Resvs of random sessions: each sub-message reaches the shard of
    /// its session, whole Bundle or split, and every sub-message arrives exactly once.
    #[test]
    fn every_sub_message_reaches_its_sessions_shard(
        shards in 1usize..=8,
        seed in any::<u64>(),
        msgs in proptest::collection::vec((1u16..2000, any::<bool>()), 1..12),
    ) {
        let map = ShardMap::new(shards, seed);
        let subs: Vec<Vec<u8>> = msgs
            .iter()
            .map(|&(port, is_path)| {
                if is_path {
                    path_bytes(session(port), sender(port))
                } else {
                    resv_bytes(session(port), sender(port))
                }
            })
            .collect();
        let mut bundle = Vec::new();
        emit_bundle(0, subs.iter().map(Vec::as_slice), &mut bundle);
        let mut got: Vec<(usize, Vec<u8>)> = Vec::new();
        prop_assert_eq!(map.dispatch(&bundle, |i, b| got.push((i, b.to_vec()))), 0);
        let mut delivered: Vec<(usize, Vec<u8>)> = Vec::new();
        for (i, b) in got {
            if b == bundle {
                for sub in bundle_messages(&b) {
                    delivered.push((i, sub.expect("our own Bundle").to_vec()));
                }
            } else {
                delivered.push((i, b));
            }
        }
        let mut want: Vec<(usize, Vec<u8>)> = msgs
            .iter()
            .zip(&subs)
            .map(|(&(port, _), b)| (map.of_session(&session(port)), b.clone()))
            .collect();
        delivered.sort();
        want.sort();
        prop_assert_eq!(delivered, want);
    }
}
