//! Proxidor queries for tests and fuzz seeds: candidate lists of any length and one query of
//! each shape the codec knows. The `fuzz_seeds` example writes [`queries`] to
//! `fuzz/seeds/proxidor_query/`.

use super::{MAX_IPV4, Message, query};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// `n` IPv4 candidates, always the same ones: every fifth in one of the seed network's
/// `130.149.x.0/24` client networks (so the oracle places it), the others spread over the whole
/// address space (mostly external, some unplaceable).
pub fn candidates(n: usize) -> Vec<IpAddr> {
    (0..n)
        .map(|i| {
            let x = (i as u32).wrapping_mul(2_654_435_761);
            if i % 5 == 0 {
                IpAddr::V4(Ipv4Addr::new(130, 149, (i % 108) as u8 + 1, 9))
            } else {
                IpAddr::V4(Ipv4Addr::from(x))
            }
        })
        .collect()
}

/// Named queries, identifications 1 to 5: `empty` (no candidates), `ten`, `max`
/// ([`MAX_IPV4`] candidates, as many as one datagram carries), `mixed` (an IPv4 and an IPv6
/// list) and `extensions` (authentication block, both source extensions and a 128-bit
/// attribute on the candidate list).
pub fn queries() -> Vec<(&'static str, Message)> {
    let mixed: Vec<IpAddr> = candidates(8)
        .into_iter()
        .chain([IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 7))])
        .collect();
    let mut extensions = query(5, &candidates(20));
    extensions.auth = Some([1; 8]);
    extensions.source_v4 = Some((Ipv4Addr::new(130, 149, 221, 7), 24));
    extensions.source_v6 = Some((Ipv6Addr::LOCALHOST, 128));
    // Emitting sets these flags from the fields anyway; set here, the value is what parsing
    // its bytes gives back.
    extensions.header.authenticated = true;
    extensions.header.ipv4_source = true;
    extensions.header.ipv6_source = true;
    if let Some(list) = extensions.tlvs.first_mut() {
        list.attribute = vec![0; 16];
    }
    vec![
        ("empty", query(1, &[])),
        ("ten", query(2, &candidates(10))),
        ("max", query(3, &candidates(MAX_IPV4))),
        ("mixed", query(4, &mixed)),
        ("extensions", extensions),
    ]
}
