//! RSVP messages (`pathwise_rsvp::wire::Message`): parse arbitrary bytes; whatever parses must
//! emit exactly `buffer_len()` bytes that parse back to the same message, and emitting is
//! deterministic. The integrity layer (`pathwise_rsvp::wire::integrity`) gets the same bytes:
//! locating the INTEGRITY object and digesting never panics and digests exactly the message,
//! and a parsed message, signed, verifies and parses with its object first. A sharded node's
//! dispatcher (`pathwise_rsvp::shard`) gets them too: reading the SESSION and handing the
//! datagram or its Bundle's sub-messages to shards never panics, hands out only pieces of the
//! datagram to existing shards, and counts what it cannot hand out; with integrity on the
//! interface, every part it cut from a signed message and signed again verifies.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathwise_auth::{Algorithm, Key};
use pathwise_core::io::IfIndex;
use pathwise_core::time::Instant;
use pathwise_rsvp::shard::{ShardMap, session_of};
use pathwise_rsvp::wire::integrity::{Signed, rsvp_hop, sign};
use pathwise_rsvp::wire::message::refresh::bundle_messages;
use pathwise_rsvp::wire::{Message, MsgType};

fuzz_target!(|data: &[u8]| {
    let key = Key::new(1, Algorithm::HmacMd5, b"fuzz").unwrap();
    let _ = rsvp_hop(data);
    if let Ok(Some(s)) = Signed::locate(data) {
        let digested: usize = s.digested().iter().map(|p| p.len()).sum();
        let length = usize::from(u16::from_be_bytes([data[6], data[7]]));
        assert_eq!(digested, length);
        let _ = key.verify(&s.digested(), s.presented().digest);
    }
    for sub in bundle_messages(data).flatten() {
        assert!(sub.len() >= 8 && sub.len() <= data.len());
    }
    let mut map = ShardMap::new(3, 1);
    let mut chain = pathwise_auth::KeyChain::new();
    chain.insert(key.clone()).unwrap();
    map.set_integrity(
        IfIndex(1),
        pathwise_auth::Policy::new(pathwise_auth::Mode::Require, chain),
    );
    let src = std::net::IpAddr::from([10, 0, 0, 1]);
    for ifindex in [IfIndex(0), IfIndex(1)] {
        let mut handed = 0;
        let mut pieces = Vec::new();
        let before = map.signed_parts();
        let bad = map.dispatch(Instant::ZERO, (src, ifindex), data, |shard, piece, from| {
            // A piece is the datagram (an unreadable one goes to shard 0 as it is, to be
            // counted there), one of its Bundle's sub-messages, or a part the dispatcher cut
            // from it (an Srefresh's identifiers of one shard, acknowledgements in an Ack of
            // their own): never longer than what came in plus one common header.
            assert!(shard < 3 && piece.len() <= data.len() + 8);
            assert!(!from.is_unspecified());
            handed += 1;
            pieces.push(piece.to_vec());
        });
        assert!(handed > 0 || bad > 0);
        if map.signed_parts() > before {
            // Parts signed again carry the key's digest; the datagram's own may be forged.
            let verified = pieces
                .iter()
                .filter(|p| {
                    Signed::locate(p)
                        .ok()
                        .flatten()
                        .is_some_and(|s| key.verify(&s.digested(), s.presented().digest))
                })
                .count() as u64;
            assert!(verified >= map.signed_parts() - before);
        }
    }
    if let Some(s) = session_of(data) {
        assert!(map.of_session(&s) < 3);
    }
    let Ok((header, msg, refresh)) = Message::parse_refresh(data) else {
        return;
    };
    let mut out = Vec::with_capacity(msg.buffer_len());
    msg.emit_with(header.send_ttl, header.flags, &refresh, &mut out);
    assert_eq!(out.len(), msg.buffer_len() + refresh.buffer_len());
    let (again_header, again, again_refresh) = match Message::parse_refresh(&out) {
        Ok(parsed) => parsed,
        Err(e) => panic!("re-emitted message does not parse: {e:?}\n{msg:?}"),
    };
    assert_eq!((&again, &again_refresh), (&msg, &refresh));
    assert_eq!(again_header.send_ttl, header.send_ttl);
    assert_eq!(usize::from(again_header.length), out.len());
    let mut twice = Vec::with_capacity(out.len());
    again.emit_with(header.send_ttl, header.flags, &refresh, &mut twice);
    assert_eq!(twice, out);
    // Signing replaces any INTEGRITY object; the result verifies and parses.
    if msg.msg_type() != MsgType::IntegrityChallenge && out.len() + 36 <= usize::from(u16::MAX) {
        sign(&mut out, &key, 7, 1);
        let s = Signed::locate(&out).unwrap().unwrap();
        assert!(key.verify(&s.digested(), s.presented().digest));
        assert!(Message::parse_refresh(&out).is_ok());
    }
});
