//! A shard of a sharded node as a head end: the Tunnel IDs it picks name sessions it holds
//! (`Config::shard`, `crate::shard`), so every LSP's messages reach the shard that heads it
//! and no two shards pick the same session.

use super::kom::{ip, node_with};
use super::*;
use crate::engine::te::LspSpec;
use crate::shard::{ShardMap, shard_configs};

#[test]
fn a_shard_picks_only_tunnel_ids_of_sessions_it_holds() {
    let map = ShardMap::new(3, 7);
    let mut seen = std::collections::HashSet::new();
    for (i, c) in shard_configs(&Config::default(), &map)
        .into_iter()
        .enumerate()
    {
        let mut head = node_with(&[(1, "10.0.0.1")], &[("0.0.0.0/0", Some("10.0.0.2"), 1)], c);
        // Every shard is asked for the same names and end points: only the session hash keeps
        // them apart.
        for k in 0..20 {
            let spec = LspSpec::new(format!("lsp{k}"), ip("10.0.0.9"), 1000);
            head.open_lsp(Instant::ZERO, spec).unwrap();
        }
        let views = head.lsps();
        assert_eq!(views.len(), 20);
        for v in views {
            assert_eq!(map.of_session(&v.session), i, "{:?}", v.session);
            assert!(seen.insert(v.session), "{:?} picked twice", v.session);
        }
    }
    // Unsharded, the Tunnel IDs are 1, 2, 3, …
    let mut one = node_with(
        &[(1, "10.0.0.1")],
        &[("0.0.0.0/0", Some("10.0.0.2"), 1)],
        Config::default(),
    );
    for k in 0..3 {
        one.open_lsp(
            Instant::ZERO,
            LspSpec::new(format!("lsp{k}"), ip("10.0.0.9"), 1000),
        )
        .unwrap();
    }
    let mut ids: Vec<u16> = one.lsps().iter().map(|v| v.session.dst_port).collect();
    ids.sort_unstable();
    assert_eq!(ids, [1, 2, 3]);
}

/// RFC 2747 §4.3 on a sharded node: every shard is handed a neighbour's Integrity Challenge.
/// Shard 0 answers it at once; another shard resends and refreshes what it sent that way only
/// `CHALLENGE_FOLLOW_DELAY` later, so the Response reaches the challenger first and the other
/// shard's numbers are drawn after the Response's (which starts the challenger's window).
#[test]
fn shard_0_answers_a_challenge_and_the_others_follow_up_after_it() {
    use crate::wire::objects::Challenge;
    use crate::wire::{IntegrityChallenge, Message, MsgType, Packet};
    let mut keys = pathwise_auth::KeyChain::new();
    keys.insert(pathwise_auth::Key::new(1, pathwise_auth::Algorithm::HmacSha256, b"k").unwrap())
        .unwrap();
    let policy = pathwise_auth::Policy::new(pathwise_auth::Mode::Require, keys);
    let map = ShardMap::new(2, 7);
    let mut challenge = Vec::new();
    Message::IntegrityChallenge(IntegrityChallenge {
        challenge: Challenge {
            key_id: 1,
            cookie: 77,
        },
    })
    .emit(1, &mut challenge);
    let t0 = Instant::from_secs(5);
    let types = |e: &mut RsvpEngine| -> Vec<MsgType> {
        std::iter::from_fn(|| e.poll_transmit())
            .map(|t| Packet::new_checked(&t.payload[..]).unwrap().msg_type())
            .collect()
    };
    for (i, c) in shard_configs(&Config::default(), &map)
        .into_iter()
        .enumerate()
    {
        let mut e = node_with(&[(1, "10.0.0.1")], &[("0.0.0.0/0", Some("10.0.0.2"), 1)], c);
        assert!(e.set_integrity(IfIndex(1), policy.clone()));
        e.open_lsp(Instant::ZERO, LspSpec::new("lsp", ip("10.0.0.9"), 1000))
            .unwrap();
        let _ = types(&mut e);
        e.handle_datagram(
            t0,
            received(Ipv4Addr::new(10, 0, 0, 2), IfIndex(1), 1, &challenge),
        );
        let now = types(&mut e);
        let c = e.counters().integrity;
        if i == 0 {
            assert_eq!(now.first(), Some(&MsgType::IntegrityResponse), "{now:?}");
            assert!(
                now.contains(&MsgType::Path),
                "shard 0 refreshes at once: {now:?}"
            );
            assert_eq!(c.responses_sent, 1);
        } else {
            assert!(
                now.is_empty(),
                "shard {i} sent {now:?} before the Response could"
            );
            assert_eq!(c.responses_sent, 0);
            let due = t0 + super::super::integrity::CHALLENGE_FOLLOW_DELAY;
            assert!(e.poll_timeout().is_some_and(|t| t <= due));
            e.handle_timeout(due);
            let later = types(&mut e);
            assert!(
                later.contains(&MsgType::Path),
                "shard {i} follows up: {later:?}"
            );
            assert!(!later.contains(&MsgType::IntegrityResponse));
        }
    }
}
