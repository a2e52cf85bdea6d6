//! Proxidor v0.2 datagrams (`pathwise_oracle::proxidor`): parsing arbitrary bytes never panics
//! and whatever parses re-emits to the same bytes; `answer` never panics, drops (writing
//! nothing), rejects with a 12-byte header, or answers with a reply that parses, echoes the
//! identification and carries a permutation of the query's candidates in at most 1472 bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathwise_oracle::TopologySnapshot;
use pathwise_oracle::generate::{SyntheticSpec, synthetic};
use pathwise_oracle::proxidor::{HEADER_LEN, Message, Outcome, Payload, answer};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::OnceLock;

fn snapshot() -> &'static TopologySnapshot {
    static S: OnceLock<TopologySnapshot> = OnceLock::new();
    S.get_or_init(|| {
        TopologySnapshot::build(&synthetic(&SyntheticSpec::new(20, 2_000, 3))).expect("builds")
    })
}

fn addresses(m: &Message) -> Vec<IpAddr> {
    let mut v: Vec<IpAddr> = m
        .tlvs
        .iter()
        .flat_map(|t| match &t.payload {
            Payload::Ipv4(a) => a.iter().map(|&a| IpAddr::V4(a)).collect::<Vec<_>>(),
            Payload::Ipv6(a) => a.iter().map(|&a| IpAddr::V6(a)).collect(),
            Payload::Unknown(..) => Vec::new(),
        })
        .collect();
    v.sort();
    v
}

fuzz_target!(|data: &[u8]| {
    let parsed = Message::parse(data);
    if let Ok(m) = &parsed {
        let mut out = Vec::with_capacity(m.buffer_len());
        m.emit(&mut out);
        assert_eq!(out, data);
    }
    let peer = IpAddr::V4(Ipv4Addr::new(100, 64, 1, 7));
    let mut out = Vec::new();
    match answer(snapshot(), peer, data, &mut out) {
        Outcome::Dropped(_) => assert!(out.is_empty()),
        Outcome::Rejected { .. } => assert_eq!(out.len(), HEADER_LEN),
        Outcome::Answered {
            addresses: n,
            placed,
        } => {
            assert!(placed <= n);
            assert!(out.len() <= 1472);
            let query = parsed.expect("an answered query parses");
            let reply = Message::parse(&out).expect("a reply parses");
            assert!(reply.header.response);
            assert_eq!(reply.header.id, query.header.id);
            let got = addresses(&reply);
            assert_eq!(got.len(), n);
            assert_eq!(got, addresses(&query));
        }
    }
});
