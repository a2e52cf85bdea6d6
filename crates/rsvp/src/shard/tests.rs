//! Routing of sessions and datagrams to shards, and label ranges.

use super::*;
use crate::testing::{bytes, ff, path, resv, sender, session};
use crate::wire::StyleKind;
use crate::wire::message::refresh::emit_bundle;
use proptest::prelude::*;
use std::net::Ipv4Addr;

/// The neighbour datagrams come from.
const SRC: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));

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
    let mut map = ShardMap::new(2, 3);
    let (s0, s1) = sessions_on(&map, 0, 1);
    let (p0, p1) = (path_bytes(s0, sender(1)), path_bytes(s1, sender(2)));
    let mut same = Vec::new();
    emit_bundle(0, [p1.as_slice(), p1.as_slice()], &mut same);
    let mut got = Vec::new();
    assert_eq!(
        map.dispatch(Instant::ZERO, (SRC, IfIndex(1)), &same, |i, b, _| got
            .push((i, b.to_vec()))),
        0
    );
    assert_eq!(got, vec![(1, same.clone())], "one shard: the Bundle whole");
    let mut mixed = Vec::new();
    emit_bundle(0, [p0.as_slice(), p1.as_slice()], &mut mixed);
    got.clear();
    assert_eq!(
        map.dispatch(Instant::ZERO, (SRC, IfIndex(1)), &mixed, |i, b, _| got
            .push((i, b.to_vec()))),
        0
    );
    assert_eq!(got, vec![(0, p0.clone()), (1, p1.clone())]);
    // A Bundle with a bad checksum is one message, for shard 0 to drop and count.
    mixed[2] ^= 0xff;
    got.clear();
    map.dispatch(Instant::ZERO, (SRC, IfIndex(1)), &mixed, |i, b, _| {
        got.push((i, b.to_vec()))
    });
    assert_eq!(got, vec![(0, mixed.clone())]);
}

/// A Hello (RFC 3209 §5) names no session: every shard gets it unchanged, alone or out of a
/// Bundle, so each sees its neighbours' liveness and Src_Instance.
#[test]
fn a_hello_goes_to_every_shard() {
    use crate::wire::{Hello, HelloKind, HelloObject};
    let mut map = ShardMap::new(3, 3);
    let mut hello = Vec::new();
    Message::Hello(Hello {
        integrity: None,
        object: HelloObject {
            kind: HelloKind::Request,
            src_instance: 7,
            dst_instance: 0,
        },
    })
    .emit(1, &mut hello);
    let mut got = Vec::new();
    map.dispatch(Instant::ZERO, (SRC, IfIndex(1)), &hello, |i, b, _| {
        got.push((i, b.to_vec()))
    });
    assert_eq!(
        got,
        vec![(0, hello.clone()), (1, hello.clone()), (2, hello.clone())]
    );
    let (s1, _) = sessions_on(&map, 1, 2);
    let p1 = path_bytes(s1, sender(1));
    let mut bundle = Vec::new();
    emit_bundle(0, [hello.as_slice(), p1.as_slice()], &mut bundle);
    got.clear();
    map.dispatch(Instant::ZERO, (SRC, IfIndex(1)), &bundle, |i, b, _| {
        got.push((i, b.to_vec()))
    });
    assert_eq!(
        got,
        vec![(0, hello.clone()), (1, hello.clone()), (2, hello), (1, p1)]
    );
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
    let map = ShardMap::new(3, 1);
    let shards = shard_configs(&cfg, &map);
    assert_eq!(shards.len(), 3);
    assert_ne!(shards[0].seed, shards[1].seed);
    assert_eq!(shards.iter().map(|c| c.label_range).collect::<Vec<_>>(), r);
    // Each shard knows itself by the node's session hash.
    for (i, c) in shards.iter().enumerate() {
        let own = c.shard.as_ref().unwrap();
        assert_eq!(own.index, i);
        for k in 0..50 {
            assert_eq!(own.holds(&session(k)), map.of_session(&session(k)) == i);
        }
    }
    assert!(shard_configs(&cfg, &ShardMap::new(1, 1))[0].shard.is_none());
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
        let mut map = ShardMap::new(shards, seed);
        let mut got = Vec::new();
        let bad = map.dispatch(Instant::ZERO, (SRC, IfIndex(1)), &payload, |i, b, _| got.push((i, b.len())));
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
        let mut map = ShardMap::new(shards, seed);
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
        prop_assert_eq!(map.dispatch(Instant::ZERO, (SRC, IfIndex(1)), &bundle, |i, b, _| got.push((i, b.to_vec()))), 0);
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

#[test]
fn shards_share_the_epoch_and_their_identifiers_name_them() {
    use crate::engine::MessageIdSpace;
    let cfg = Config {
        refresh_reduction: true,
        ..Config::default()
    };
    for n in [1usize, 2, 3, 5, 8] {
        let shards = shard_configs(&cfg, &ShardMap::new(n, 1));
        if n == 1 {
            // Unsharded: the engine's own Epoch and counter, identifiers 1, 2, 3, …
            let mut local = 1;
            let ids: Vec<u32> = (0..3)
                .map(|_| shards[0].message_ids.next(&mut local))
                .collect();
            assert_eq!(ids, vec![1, 2, 3]);
            assert_eq!(shards[0].message_ids.epoch(), None);
            continue;
        }
        // RFC 2961 §4.5: one Epoch for the node.
        let epoch = shards[0].message_ids.epoch();
        assert!(epoch.is_some());
        assert!(shards.iter().all(|c| c.message_ids.epoch() == epoch));
        // Drawn in any interleaving, identifiers increase across the node and carry their
        // shard.
        let mut last = 0;
        let mut local = [1u32; 8];
        for k in 0..100usize {
            let s = (k * 7 + k / 3) % n;
            let id = shards[s].message_ids.next(&mut local[s]);
            assert!(id > last, "{id} after {last}");
            last = id;
            assert_eq!(MessageIdSpace::owner(id, n), Some(s));
            assert_eq!(ShardMap::new(n, 1).of_our_id(id), Some(s));
        }
    }
    // An identifier no shard of three could have made (low bits 3).
    assert_eq!(MessageIdSpace::owner(0b111, 3), None);
}

mod rr {
    //! Routing of RFC 2961 identifiers: acknowledgements to the shard that sent the message,
    //! Srefresh identifiers to the shard the neighbour's message installed state in.
    use super::*;
    use crate::engine::MessageIdSpace;
    use crate::wire::Message;
    use crate::wire::message::{Refresh, Srefresh};
    use crate::wire::te::{AckKind, MessageId, MessageIdAck, MessageIdList, MessageIds};
    use std::collections::BTreeMap;

    const EPOCH: u32 = 0x00ab_cdef;

    fn identified(m: &Message, acks: Vec<MessageIdAck>, id: Option<u32>) -> Vec<u8> {
        let mut out = Vec::new();
        let refresh = Refresh {
            acks,
            message_id: id.map(|message_id| MessageId {
                flags: MessageId::ACK_DESIRED,
                epoch: EPOCH,
                message_id,
            }),
        };
        m.emit_with(
            63,
            crate::wire::te::REFRESH_REDUCTION_CAPABLE,
            &refresh,
            &mut out,
        );
        out
    }

    fn ack(kind: AckKind, id: u32) -> MessageIdAck {
        MessageIdAck {
            kind,
            flags: 0,
            epoch: 7,
            message_id: id,
        }
    }

    /// Every message a shard was handed, Bundles opened, parsed.
    fn opened(got: &[(usize, Vec<u8>, IpAddr)]) -> Vec<(usize, Message, Refresh, IpAddr)> {
        let mut out = Vec::new();
        for (i, b, src) in got {
            let subs: Vec<&[u8]> = if b[1] == 12 {
                bundle_messages(b)
                    .map(|s| s.expect("valid sub-message"))
                    .collect()
            } else {
                vec![b.as_slice()]
            };
            for s in subs {
                let (_, m, r) = Message::parse_refresh(s).expect("a message the shard can read");
                out.push((*i, m, r, *src));
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Identified Paths and Resvs of random sessions from a neighbour install state in
        /// their sessions' shards; then an Srefresh naming some of them (and identifiers never
        /// sent), MESSAGE_ID_ACKs and NACKs of identifiers the shards sent (alone in an Ack,
        /// piggybacked on a Path, in the Srefresh), alone or in one Bundle: every listed
        /// identifier reaches exactly once the shard that holds its state (shard 0 when none
        /// does), keeping its list's Epoch; every acknowledgement reaches the shard that sent
        /// the message, from the neighbour; the Srefresh's own MESSAGE_ID reaches one shard.
        #[test]
        fn every_identifier_reaches_the_shard_that_owns_it(
            shards in 2usize..=8,
            seed in any::<u64>(),
            installed in proptest::collection::btree_map(1u16..3000, any::<bool>(), 1..20),
            listed in proptest::collection::vec(any::<prop::sample::Index>(), 0..30),
            unknown in proptest::collection::vec(100_000u32..200_000, 0..4),
            acks in proptest::collection::vec((0usize..8, 1u32..1000, any::<bool>()), 1..12),
            bundled in any::<bool>(),
            signed in any::<bool>(),
        ) {
            let mut map = ShardMap::new(shards, seed);
            // With integrity (RFC 2747), what the dispatcher cuts it signs again.
            let key = signing::key();
            if signed {
                map.set_integrity(IfIndex(1), signing::policy());
            }
            let nbr = SRC;
            // The neighbour's identified messages: identifier 10 + port.
            let mut owner: BTreeMap<u32, usize> = BTreeMap::new();
            for (&port, &is_path) in &installed {
                let (s, f) = (session(port), sender(port));
                let m = if is_path { path(s, f) } else { resv(s, StyleKind::Ff, ff(1000.0, f)) };
                let mut m = m;
                // The generator's address is in the RSVP_HOP (RFC 2961 §4.5).
                match &mut m {
                    Message::Path(p) => p.hop.addr = nbr,
                    Message::Resv(r) => r.hop.addr = nbr,
                    _ => unreachable!(),
                }
                let id = 10 + u32::from(port);
                let b = identified(&m, Vec::new(), Some(id));
                let mut to = Vec::new();
                map.dispatch(Instant::ZERO, (IpAddr::V4(Ipv4Addr::new(30, 0, 0, 1)), IfIndex(1)), &b, |i, _, _| to.push(i));
                prop_assert_eq!(to, vec![map_of(&session(port), shards, seed)]);
                owner.insert(id, map.of_session(&s));
            }
            let known: Vec<u32> = owner.keys().copied().collect();
            let mut ids: Vec<u32> = listed.iter().map(|i| known[i.index(known.len())]).collect();
            ids.extend(&unknown);
            ids.sort_unstable();
            ids.dedup();
            // Acknowledgements of identifiers this node's shards chose, each once (the same
            // acknowledgement carried by two messages rightly reaches its owner twice).
            let bits = shards.next_power_of_two().trailing_zeros();
            let mut distinct = std::collections::BTreeSet::new();
            let acks: Vec<(MessageIdAck, usize)> = acks
                .iter()
                .map(|&(s, c, nack)| (s % shards, c, nack))
                .filter(|&k| distinct.insert(k))
                .map(|(s, c, nack)| {
                    let kind = if nack { AckKind::Nack } else { AckKind::Ack };
                    (ack(kind, (c << bits) | s as u32), s)
                })
                .collect();
            prop_assert!(acks.iter().all(|(a, s)| MessageIdSpace::owner(a.message_id, shards) == Some(*s)));
            let third = acks.len() / 3;
            let (in_ack, rest) = acks.split_at(third);
            let (in_path, in_sref) = rest.split_at(rest.len() / 2);
            let strip = |v: &[(MessageIdAck, usize)]| v.iter().map(|a| a.0).collect::<Vec<_>>();
            let mut msgs = Vec::new();
            if !in_ack.is_empty() {
                msgs.push(identified(&Message::Ack(crate::wire::message::Ack { integrity: None }), strip(in_ack), None));
            }
            let carrier = session(4000);
            let mut p = path(carrier, sender(4000));
            let hop = IpAddr::V4(Ipv4Addr::new(10, 9, 9, 9));
            if let Message::Path(x) = &mut p {
                x.hop.addr = hop;
            }
            msgs.push(identified(&p, strip(in_path), None));
            let sref = Message::Srefresh(Srefresh {
                integrity: None,
                lists: vec![MessageIdList { flags: 0, epoch: EPOCH, ids: MessageIds::List(ids.clone()) }],
            });
            if !ids.is_empty() {
                msgs.push(identified(&sref, strip(in_sref), Some(77)));
            } else if !in_sref.is_empty() {
                msgs.push(identified(&Message::Ack(crate::wire::message::Ack { integrity: None }), strip(in_sref), None));
            }
            if signed {
                for (k, m) in msgs.iter_mut().enumerate() {
                    crate::wire::integrity::sign(m, &key, 1000 + k as u64, pathwise_auth::integrity::HANDSHAKE);
                }
            }
            let mut got: Vec<(usize, Vec<u8>, IpAddr)> = Vec::new();
            let mut bad = 0;
            if bundled {
                let mut b = Vec::new();
                emit_bundle(crate::wire::te::REFRESH_REDUCTION_CAPABLE, msgs.iter().map(Vec::as_slice), &mut b);
                bad += map.dispatch(Instant::ZERO, (nbr, IfIndex(1)), &b, |i, b, s| got.push((i, b.to_vec(), s)));
            } else {
                for m in &msgs {
                    bad += map.dispatch(Instant::ZERO, (nbr, IfIndex(1)), m, |i, b, s| got.push((i, b.to_vec(), s)));
                }
            }
            prop_assert_eq!(bad, 0);
            prop_assert!(got.iter().all(|g| g.0 < shards));
            if signed {
                // Every message a shard is handed verifies under the key, with the sequence
                // number of the message it is (part of), each number once per shard.
                let mut numbers = std::collections::BTreeSet::new();
                for (i, b, _) in &got {
                    let subs: Vec<&[u8]> = if b[1] == 12 {
                        bundle_messages(b).map(Result::unwrap).collect()
                    } else {
                        vec![b.as_slice()]
                    };
                    for sub in subs {
                        let seq = signing::verified(&key, sub);
                        prop_assert!(seq.is_some_and(|q| (1000..1000 + msgs.len() as u64).contains(&q)));
                        prop_assert!(numbers.insert((*i, seq)), "number twice at shard {}", i);
                    }
                }
            }
            let opened = opened(&got);
            // Listed identifiers: each exactly once, at its owner (0 when unknown), from the
            // neighbour, in a list of the neighbour's Epoch.
            let mut seen: Vec<(u32, usize)> = Vec::new();
            let mut mids = 0;
            for (i, m, r, src) in &opened {
                if let Message::Srefresh(s) = m {
                    prop_assert_eq!(*src, nbr);
                    mids += usize::from(r.message_id.is_some());
                    for l in &s.lists {
                        prop_assert_eq!(l.epoch, EPOCH);
                        seen.extend(l.ids.iter().map(|e| (e.message_id, *i)));
                    }
                }
            }
            seen.sort_unstable();
            let want: Vec<(u32, usize)> = ids.iter().map(|id| (*id, owner.get(id).copied().unwrap_or(0))).collect();
            prop_assert_eq!(seen, want);
            prop_assert_eq!(mids, usize::from(!ids.is_empty()));
            // Acknowledgements: each at its owner; elsewhere only on the Path that carried it.
            for (a, s) in &acks {
                let at_owner = opened.iter().filter(|(i, _, r, _)| i == s && r.acks.contains(a)).count();
                prop_assert_eq!(at_owner, 1, "{:?} at shard {}", a, s);
                for (i, m, r, src) in &opened {
                    if !r.acks.contains(a) {
                        continue;
                    }
                    if i != s {
                        prop_assert!(matches!(m, Message::Path(_)), "{:?} at shard {} in {:?}", a, i, m.msg_type());
                    } else if !matches!(m, Message::Path(_)) {
                                // From the neighbour that sent it: the carrier Path's RSVP_HOP.
                        let from = if strip(in_path).contains(a) { hop } else { nbr };
                        prop_assert_eq!(*src, from);
                    }
                }
            }
        }
    }

    /// The shard of `s` under a map built like the test's.
    fn map_of(s: &Session, shards: usize, seed: u64) -> usize {
        ShardMap::new(shards, seed).of_session(s)
    }

    /// A neighbour's identifier not named for two generations is forgotten (bounded memory), and
    /// then goes to shard 0; one named each period stays known.
    #[test]
    fn listed_identifiers_are_forgotten_when_no_longer_named() {
        let mut map = ShardMap::new(4, 5);
        let (a, b) = (
            (1..).map(session).find(|s| map.of_session(s) == 2).unwrap(),
            (1..).map(session).find(|s| map.of_session(s) == 3).unwrap(),
        );
        for (s, id) in [(a, 1u32), (b, 2)] {
            let mut m = path(s, sender(1));
            if let Message::Path(p) = &mut m {
                p.hop.addr = SRC;
            }
            map.dispatch(
                Instant::ZERO,
                (SRC, IfIndex(1)),
                &identified(&m, Vec::new(), Some(id)),
                |_, _, _| {},
            );
        }
        assert_eq!(map.listed_ids().0, 2);
        let sref = |id: u32| {
            identified(
                &Message::Srefresh(Srefresh {
                    integrity: None,
                    lists: vec![MessageIdList {
                        flags: 0,
                        epoch: EPOCH,
                        ids: MessageIds::List(vec![id]),
                    }],
                }),
                Vec::new(),
                None,
            )
        };
        let to = |map: &mut ShardMap, at: u64, id: u32| {
            let mut got = Vec::new();
            map.dispatch(
                Instant::ZERO + pathwise_core::time::Duration::from_secs(at),
                (SRC, IfIndex(1)),
                &sref(id),
                |i, _, _| got.push(i),
            );
            got
        };
        // R = 30 s (the Paths' TIME_VALUES): generations of 92 s. Identifier 1 is named every
        // 40 s, identifier 2 never again.
        for k in 1..=6 {
            assert_eq!(to(&mut map, 40 * k, 1), vec![2]);
        }
        assert_eq!(
            to(&mut map, 250, 2),
            vec![0],
            "forgotten: shard 0 answers (NACK)"
        );
        assert_eq!(map.listed_ids().0, 1);
    }
}

/// Found by the `rsvp_message` fuzzer's CPU-hour (2026-11-28): a message whose RSVP_HOP is
/// 0.0.0.0 and whose acknowledgements belong to other shards had them handed on "from" the
/// unspecified address.
#[test]
fn acknowledgements_moved_to_other_shards_never_come_from_the_unspecified_address() {
    let data: &[u8] = &[
        0x11, 0x06, 0x00, 0x00, 0x3f, 0x00, 0x00, 0xc8, 0x00, 0x10, 0x01, 0x07, 0x0a, 0xc8, 0x03,
        0x02, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0xc8, 0x0a, 0x00, 0x14, 0x03, 0x03, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x00, 0x81, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x08, 0x05, 0x01, 0x00, 0x00, 0x75, 0x2c, 0x00, 0x08, 0x13, 0x01, 0x00, 0x00, 0x08, 0x00,
        0x00, 0x24, 0x14, 0x01, 0x01, 0x08, 0x0a, 0xc8, 0x00, 0x02, 0x1f, 0xf9, 0x01, 0x08, 0x0a,
        0xc8, 0x01, 0x02, 0x20, 0x00, 0x01, 0x08, 0x08, 0x3a, 0x00, 0x00, 0x75, 0x2c, 0x00, 0x08,
        0x13, 0x01, 0x00, 0x28, 0x08, 0x00, 0x00, 0x24, 0x14, 0x01, 0x01, 0x08, 0x0a, 0xc8, 0x00,
        0x02, 0x1f, 0xf9, 0x01, 0x08, 0x0a, 0xc8, 0x01, 0x02, 0x20, 0x00, 0x01, 0x08, 0x08, 0x3a,
        0x02, 0x02, 0x20, 0x00, 0x31, 0x75, 0x00, 0x00, 0x03, 0x02, 0x20, 0x00, 0x00, 0x0c, 0xcf,
        0x07, 0xfe, 0xff, 0x00, 0x04, 0x74, 0x6f, 0x68, 0x31, 0x00, 0x0c, 0x18, 0x01, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x24, 0x0c, 0x02, 0x00, 0x00, 0x00, 0x07, 0x01,
        0x00, 0x00, 0x06, 0x7f, 0x00, 0x00, 0x05, 0xfe, 0x02, 0x03, 0x00, 0x46, 0x74, 0x24, 0x00,
        0xf4, 0x47, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x08, 0x08,
        0x01, 0x00, 0x00, 0x00, 0x11, 0x00, 0x00, 0xc8, 0x08, 0x00, 0x00, 0x0a, 0xff, 0xff, 0xff,
        0xff,
    ];
    let mut map = ShardMap::new(3, 1);
    let src = IpAddr::from([10, 0, 0, 1]);
    let mut froms = Vec::new();
    map.dispatch(Instant::ZERO, (src, IfIndex(1)), data, |_, _, from| {
        froms.push(from)
    });
    assert!(!froms.is_empty());
    assert!(froms.iter().all(|f| !f.is_unspecified()), "{froms:?}");
}

/// Integrity (RFC 2747) at the dispatcher.
mod signing {
    use super::*;
    use crate::wire::integrity::{Signed, sign};
    use crate::wire::{IntegrityChallenge, IntegrityResponse};
    use pathwise_auth::{Algorithm, Key, KeyChain, Mode, Policy};

    pub(super) fn key() -> Key {
        Key::new(1, Algorithm::HmacSha256, b"shard test key").unwrap()
    }

    pub(super) fn policy() -> Policy {
        let mut keys = KeyChain::new();
        keys.insert(key()).unwrap();
        Policy::new(Mode::Require, keys)
    }

    /// The sequence number of `msg` if it is signed and its digest verifies under `key`.
    pub(super) fn verified(key: &Key, msg: &[u8]) -> Option<u64> {
        let s = Signed::locate(msg).ok()??;
        let p = s.presented();
        key.verify(&s.digested(), p.digest).then_some(p.seq)
    }

    /// An Ack whose acknowledgements belong to every shard, signed.
    fn ack_for_every_shard(map: &ShardMap) -> Vec<u8> {
        let bits = map.len().next_power_of_two().trailing_zeros();
        let acks = (0..map.len() as u32)
            .map(|s| crate::wire::te::MessageIdAck {
                kind: crate::wire::te::AckKind::Ack,
                flags: 0,
                epoch: 7,
                message_id: (5 << bits) | s,
            })
            .collect();
        let mut out = Vec::new();
        Message::Ack(crate::wire::message::Ack { integrity: None }).emit_with(
            1,
            0,
            &crate::wire::message::Refresh {
                acks,
                message_id: None,
            },
            &mut out,
        );
        sign(&mut out, &key(), 42, 0);
        out
    }

    /// A signed Ack naming three shards' messages is cut into one Ack per shard, each signed
    /// again with its key and sequence number; tampered with, or with no key for it, it goes
    /// uncut to shard 0, whose engine refuses it and counts why; on an interface without
    /// integrity it is cut and the parts go unsigned.
    #[test]
    fn a_cut_signed_message_is_verified_and_its_parts_signed_again() {
        let mut map = ShardMap::new(3, 5);
        map.set_integrity(IfIndex(1), policy());
        let ack = ack_for_every_shard(&map);
        let mut got = Vec::new();
        map.dispatch(Instant::ZERO, (SRC, IfIndex(1)), &ack, |i, b, _| {
            got.push((i, b.to_vec()))
        });
        assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), [0, 1, 2]);
        for (_, part) in &got {
            assert_eq!(verified(&key(), part), Some(42));
            assert_ne!(part, &ack);
        }
        assert_eq!(map.signed_parts(), 3);
        let mut tampered = ack.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        let other = Policy::new(Mode::Require, KeyChain::new());
        for (bytes, iface) in [(&tampered, 1), (&ack, 2)] {
            map.set_integrity(IfIndex(2), other.clone());
            got.clear();
            map.dispatch(Instant::ZERO, (SRC, IfIndex(iface)), bytes, |i, b, _| {
                got.push((i, b.to_vec()))
            });
            assert_eq!(got, vec![(0, bytes.clone())], "uncut, to shard 0");
        }
        map.set_integrity(IfIndex(2), Policy::default());
        got.clear();
        map.dispatch(Instant::ZERO, (SRC, IfIndex(2)), &ack, |i, b, _| {
            got.push((i, b.to_vec()))
        });
        assert_eq!(got.len(), 3);
        assert!(
            got.iter()
                .all(|(_, b)| Signed::locate(b).unwrap().is_none())
        );
        assert_eq!(map.signed_parts(), 3);
    }

    /// RFC 2747 §4.3 on a sharded node: a Challenge goes to every shard (each resends what it
    /// sent, shard 0 answers); a Response goes to the shard its cookie names, the one that
    /// challenged ([`OwnShard::cookie`]), or to shard 0 when the cookie names none.
    #[test]
    fn a_challenge_goes_to_every_shard_and_a_response_to_the_challenger() {
        let mut map = ShardMap::new(3, 5);
        let challenge = crate::wire::objects::Challenge {
            key_id: 1,
            cookie: 0x1234_5678_9abc_de00,
        };
        let mut c = Vec::new();
        Message::IntegrityChallenge(IntegrityChallenge { challenge }).emit(1, &mut c);
        let mut got = Vec::new();
        map.dispatch(Instant::ZERO, (SRC, IfIndex(1)), &c, |i, _, _| got.push(i));
        assert_eq!(got, [0, 1, 2]);
        for index in 0..3 {
            let own = OwnShard {
                sessions: map.sessions().clone(),
                index,
            };
            let cookie = own.cookie(0xffff_ffff_ffff_ffff);
            let mut r = Vec::new();
            Message::IntegrityResponse(IntegrityResponse {
                integrity: None,
                challenge: crate::wire::objects::Challenge { key_id: 1, cookie },
            })
            .emit(1, &mut r);
            sign(&mut r, &key(), 9, 0);
            got.clear();
            map.dispatch(Instant::ZERO, (SRC, IfIndex(1)), &r, |i, _, _| got.push(i));
            assert_eq!(got, [index], "cookie {cookie:#x}");
        }
        let mut r = Vec::new();
        Message::IntegrityResponse(IntegrityResponse {
            integrity: None,
            challenge: crate::wire::objects::Challenge {
                key_id: 1,
                cookie: 0x77,
            },
        })
        .emit(1, &mut r);
        got.clear();
        map.dispatch(Instant::ZERO, (SRC, IfIndex(1)), &r, |i, _, _| got.push(i));
        assert_eq!(got, [0], "a cookie naming no shard");
    }
}
