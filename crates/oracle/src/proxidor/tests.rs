use super::vectors::candidates;
use super::*;
use crate::TopologySnapshot;
use crate::generate::{SEED_SOURCE_NETWORK, seed_network};
use pathwise_core::wire::{Reader, Writer};
use proptest::prelude::*;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

/// A query header with every field distinct, and its bytes.
const HEADER_BYTES: [u8; 12] = [
    0x00, 0x00, // version, servcode
    0x07, 0x00, // QR=0 opcode=0 AD=1 IPv4=1 IPv6=1, reserved 0, rcode 0
    0xde, 0xad, 0xbe, 0xef, // identification
    0x00, 0x3c, // TTL 60
    0x00, 0x05, // service category 0, auth type 5
];

#[test]
fn header_deconstruct() {
    let h = Header::parse(&mut Reader::new(&HEADER_BYTES)).unwrap();
    assert_eq!(h.version, 0);
    assert!(!h.response);
    assert_eq!(h.opcode, Opcode::Coq);
    assert!(h.authenticated && h.ipv4_source && h.ipv6_source);
    assert_eq!(h.reserved, 0);
    assert_eq!(h.rcode, Rcode::NoError);
    assert_eq!(h.id, 0xdead_beef);
    assert_eq!(h.ttl, 60);
    assert_eq!(h.auth_type, 5);
}

#[test]
fn header_construct_writes_every_byte() {
    let h = Header::parse(&mut Reader::new(&HEADER_BYTES)).unwrap();
    let mut buf = vec![0xa5; 3];
    h.emit(&mut Writer::new(&mut buf));
    assert_eq!(&buf[3..], &HEADER_BYTES);
    let all = Header {
        response: true,
        opcode: Opcode::Unknown(0xf),
        reserved: 0xf,
        rcode: Rcode::Unknown(0xf),
        ..h
    };
    assert_eq!(all.flags(), 0xffff);
}

#[test]
fn tlv_layout_and_attribute_skipping() {
    // One IPv4 TLV with a 64-bit attribute (AL=2, AT=3), NH=1, then an IPv6 TLV, NH=0.
    let mut q = HEADER_BYTES.to_vec();
    q[2] = 0x00; // no AD, no source extensions
    q.extend_from_slice(&[1, 0x80 | 2 << 5 | 3, 0, 20]);
    q.extend_from_slice(&[9; 8]);
    q.extend_from_slice(&[192, 0, 2, 1, 192, 0, 2, 2]);
    q.extend_from_slice(&[2, 0, 0, 20]);
    q.extend_from_slice(&Ipv6Addr::LOCALHOST.octets());
    let m = Message::parse(&q).unwrap();
    assert_eq!(m.tlvs.len(), 2);
    assert_eq!(m.tlvs[0].attribute, vec![9; 8]);
    assert_eq!(m.tlvs[0].attr_type, 3);
    assert_eq!(
        m.tlvs[0].payload,
        Payload::Ipv4(vec![
            Ipv4Addr::new(192, 0, 2, 1),
            Ipv4Addr::new(192, 0, 2, 2)
        ])
    );
    assert_eq!(m.tlvs[1].payload, Payload::Ipv6(vec![Ipv6Addr::LOCALHOST]));
    let mut out = Vec::new();
    m.emit(&mut out);
    assert_eq!(out, q);
    assert_eq!(m.buffer_len(), q.len());
}

#[test]
fn the_limits_are_363_and_90() {
    assert_eq!(MAX_ADDRESS_BYTES, 1454);
    assert_eq!(MAX_IPV4, 363);
    assert_eq!(MAX_IPV6, 90);
    // The largest reply fits an unfragmented 1500-byte IPv4 packet: 1500 - 20 - 8.
    const { assert!(HEADER_LEN + 2 * TLV_HEADER_LEN + MAX_ADDRESS_BYTES / 4 * 4 <= 1472) };
}

fn seed() -> &'static TopologySnapshot {
    static S: OnceLock<TopologySnapshot> = OnceLock::new();
    S.get_or_init(|| TopologySnapshot::build(&seed_network(1)).unwrap())
}

fn client() -> IpAddr {
    let net: ipnet::IpNet = SEED_SOURCE_NETWORK.parse().unwrap();
    match net {
        ipnet::IpNet::V4(n) => IpAddr::V4(Ipv4Addr::from(u32::from(n.network()) + 7)),
        ipnet::IpNet::V6(_) => unreachable!(),
    }
}

fn bytes(m: &Message) -> Vec<u8> {
    let mut v = Vec::new();
    m.emit(&mut v);
    v
}

#[test]
fn answers_rank_like_the_snapshot_and_merge_tlvs() {
    let snap = seed();
    let cands = candidates(120);
    // Split the IPv4 candidates over three TLVs, with an attribute on the middle one.
    let mut q = query(42, &[]);
    for chunk in cands.chunks(50) {
        let v4 = chunk
            .iter()
            .filter_map(|a| match a {
                IpAddr::V4(a) => Some(*a),
                IpAddr::V6(_) => None,
            })
            .collect();
        q.tlvs.push(Tlv::ipv4(v4));
    }
    q.tlvs[1].attribute = vec![1, 2, 3, 4];
    q.auth = Some([7; 8]);
    let mut out = Vec::new();
    let outcome = answer(snap, client(), &bytes(&q), &mut out);
    let Outcome::Answered { addresses, placed } = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(addresses, 120);
    assert!(placed > 100, "{placed}");
    let reply = Message::parse(&out).unwrap();
    assert!(reply.header.response);
    assert_eq!(reply.header.id, 42);
    assert_eq!(reply.header.ttl, 60);
    assert_eq!(reply.auth, None);
    assert_eq!(reply.tlvs.len(), 1, "merged into one TLV");
    assert!(reply.tlvs[0].attribute.is_empty(), "attributes dropped");
    let mut want = cands.clone();
    snap.rank(client(), &mut want);
    let got: Vec<IpAddr> = match &reply.tlvs[0].payload {
        Payload::Ipv4(a) => a.iter().map(|&a| a.into()).collect(),
        other => panic!("{other:?}"),
    };
    assert_eq!(got, want);
    // Internal candidates (130.149/16) rank before external ones.
    assert!(matches!(got[0], IpAddr::V4(a) if a.octets()[..2] == [130, 149]));
}

#[test]
fn mixed_families_and_source_extension() {
    let snap = seed();
    let mut cands = candidates(10);
    cands.push("2001:db8::1".parse().unwrap());
    let mut q = query(7, &cands);
    // The datagram comes from elsewhere, but names the client as its source.
    q.source_v4 = match client() {
        IpAddr::V4(a) => Some((a, 24)),
        IpAddr::V6(_) => None,
    };
    let mut out = Vec::new();
    let outcome = answer(snap, "192.0.2.99".parse().unwrap(), &bytes(&q), &mut out);
    assert!(
        matches!(outcome, Outcome::Answered { addresses: 11, placed } if (5..=10).contains(&placed)),
        "{outcome:?}"
    );
    let reply = Message::parse(&out).unwrap();
    assert_eq!(reply.tlvs.len(), 2);
    assert!(matches!(&reply.tlvs[1].payload, Payload::Ipv6(v) if v.len() == 1));
    // Without the extension, from an unknown peer, nothing is placed but all come back.
    q.source_v4 = None;
    out.clear();
    let outcome = answer(snap, "192.0.2.99".parse().unwrap(), &bytes(&q), &mut out);
    assert_eq!(
        outcome,
        Outcome::Answered {
            addresses: 11,
            placed: 0
        }
    );
}

fn rejected(q: &[u8]) -> (Rcode, Malformed, Header) {
    let mut out = Vec::new();
    match answer(seed(), client(), q, &mut out) {
        Outcome::Rejected { rcode, reason } => {
            assert_eq!(out.len(), HEADER_LEN);
            let h = Header::parse(&mut Reader::new(&out)).unwrap();
            assert!(h.response);
            assert_eq!(h.rcode, rcode);
            (rcode, reason, h)
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn malformed_queries() {
    let good = bytes(&query(9, &candidates(5)));
    let mut out = Vec::new();
    // Short: dropped, nothing written.
    for n in 0..HEADER_LEN {
        assert_eq!(
            answer(seed(), client(), &good[..n], &mut out),
            Outcome::Dropped(DropReason::TooShort(n))
        );
        assert!(out.is_empty());
    }
    // A reply: dropped.
    let mut reply = good.clone();
    reply[2] |= 0x80;
    assert_eq!(
        answer(seed(), client(), &reply, &mut out),
        Outcome::Dropped(DropReason::NotAQuery)
    );
    // Wrong version.
    let mut q = good.clone();
    q[0] = 1;
    let (rcode, reason, h) = rejected(&q);
    assert_eq!((rcode, reason), (Rcode::BadVersion, Malformed::Version(1)));
    assert_eq!(h.id, 9);
    assert_eq!(h.version, 0);
    // Bad flags: a reserved bit, or an Rcode in a query.
    for (byte, bits) in [(3, 0x10u8), (3, 0x01)] {
        let mut q = good.clone();
        q[byte] |= bits;
        assert_eq!(rejected(&q).0, Rcode::FormatError);
    }
    // Unknown opcode, servcode, service category.
    let mut q = good.clone();
    q[2] |= 0x08;
    assert_eq!(rejected(&q).1, Malformed::Opcode(1));
    let mut q = good.clone();
    q[1] = 4;
    assert_eq!(rejected(&q).1, Malformed::Servcode(4));
    let mut q = good.clone();
    q[10] = 2;
    assert_eq!(rejected(&q).1, Malformed::ServiceCategory(2));
    // Bad TLV sizes: below the header, past the end, not a whole number of addresses.
    for size in [3u16, 4 + 21, 4 + 19] {
        let mut q = good.clone();
        q[14..16].copy_from_slice(&size.to_be_bytes());
        let (rcode, reason, _) = rejected(&q);
        assert_eq!(rcode, Rcode::FormatError, "{size}: {reason}");
        assert!(matches!(reason, Malformed::Wire(_)));
    }
    // NH set with nothing after; bytes after the last TLV.
    let mut q = good.clone();
    q[13] |= 0x80;
    assert!(matches!(
        rejected(&q).1,
        Malformed::Wire(WireError::MissingTlv { .. })
    ));
    let mut q = good.clone();
    q.push(0);
    assert!(matches!(
        rejected(&q).1,
        Malformed::Wire(WireError::TrailingBytes { count: 1, .. })
    ));
    // AD set but no room for the authentication block.
    let mut q = good[..HEADER_LEN].to_vec();
    q[2] |= 0x04;
    assert!(matches!(
        rejected(&q).1,
        Malformed::Wire(WireError::Truncated(_))
    ));
    // Unknown TLV type.
    let mut q = good.clone();
    q[12] = 9;
    assert_eq!(rejected(&q).1, Malformed::TlvType(9));
    // Too many addresses: 364 IPv4, or 91 IPv6, or a mix over the budget.
    for cands in [
        candidates(364),
        (0..91)
            .map(|i| IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, i)))
            .collect(),
        candidates(300)
            .into_iter()
            .chain((0..16).map(|i| IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, i))))
            .collect(),
    ] {
        let (rcode, reason, _) = rejected(&bytes(&query(1, &cands)));
        assert_eq!(rcode, Rcode::TooManyAddresses, "{reason}");
    }
    // 363 is fine, and so is an empty query.
    for n in [363, 0] {
        out.clear();
        let outcome = answer(
            seed(),
            client(),
            &bytes(&query(1, &candidates(n))),
            &mut out,
        );
        assert!(
            matches!(outcome, Outcome::Answered { addresses, .. } if addresses == n),
            "{outcome:?}"
        );
        assert!(out.len() <= 1472);
    }
}

fn tlv() -> impl Strategy<Value = Tlv> {
    let attr = prop_oneof![Just(0usize), Just(4), Just(8), Just(16)]
        .prop_flat_map(|n| prop::collection::vec(any::<u8>(), n));
    let payload = prop_oneof![
        prop::collection::vec(any::<[u8; 4]>().prop_map(Ipv4Addr::from), 0..20)
            .prop_map(Payload::Ipv4),
        prop::collection::vec(any::<[u8; 16]>().prop_map(Ipv6Addr::from), 0..5)
            .prop_map(Payload::Ipv6),
        (3u8..=255, prop::collection::vec(any::<u8>(), 0..40))
            .prop_map(|(t, b)| Payload::Unknown(t, b)),
    ];
    (0u8..32, attr, payload).prop_map(|(attr_type, attribute, payload)| Tlv {
        attr_type,
        attribute,
        payload,
    })
}

fn message() -> impl Strategy<Value = Message> {
    (
        any::<[u8; 12]>(),
        prop::option::of(any::<[u8; 8]>()),
        prop::option::of((any::<[u8; 4]>(), 0u8..=32)),
        prop::option::of((any::<[u8; 16]>(), 0u8..=128)),
        prop::collection::vec(tlv(), 0..5),
    )
        .prop_map(|(h, auth, v4, v6, tlvs)| {
            let mut header = Header::parse(&mut Reader::new(&h)).unwrap();
            header.authenticated = auth.is_some();
            header.ipv4_source = v4.is_some();
            header.ipv6_source = v6.is_some();
            Message {
                header,
                auth,
                source_v4: v4.map(|(a, l)| (Ipv4Addr::from(a), l)),
                source_v6: v6.map(|(a, l)| (Ipv6Addr::from(a), l)),
                tlvs,
            }
        })
}

#[test]
fn vector_queries_round_trip_and_are_answered() {
    for (name, q) in super::vectors::queries() {
        let b = bytes(&q);
        assert_eq!(Message::parse(&b).as_ref(), Ok(&q), "{name}");
        let mut out = Vec::new();
        let outcome = answer(seed(), client(), &b, &mut out);
        assert!(
            matches!(outcome, Outcome::Answered { .. }),
            "{name}: {outcome:?}"
        );
    }
}

proptest! {
    #[test]
    fn message_round_trips(m in message()) {
        let b = bytes(&m);
        prop_assert_eq!(b.len(), m.buffer_len());
        prop_assert_eq!(Message::parse(&b).unwrap(), m);
    }

    #[test]
    fn parse_and_answer_never_panic(data in prop::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(m) = Message::parse(&data) {
            prop_assert_eq!(bytes(&m), data.clone());
        }
        let mut out = Vec::new();
        let _ = answer(seed(), client(), &data, &mut out);
        prop_assert!(out.len() <= 1472);
    }

    #[test]
    fn answers_are_permutations(n in 0usize..=363, salt in any::<u32>()) {
        let cands: Vec<IpAddr> = candidates(n).into_iter().map(|a| match a {
            IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(u32::from(a) ^ (salt & 0xff))),
            v6 => v6,
        }).collect();
        let mut out = Vec::new();
        answer(seed(), client(), &bytes(&query(3, &cands)), &mut out);
        let reply = Message::parse(&out).unwrap();
        let mut got: Vec<IpAddr> = reply.tlvs.iter().flat_map(|t| match &t.payload {
            Payload::Ipv4(a) => a.iter().map(|&a| IpAddr::V4(a)).collect::<Vec<_>>(),
            _ => Vec::new(),
        }).collect();
        let mut want = cands.clone();
        got.sort();
        want.sort();
        prop_assert_eq!(got, want);
    }
}
