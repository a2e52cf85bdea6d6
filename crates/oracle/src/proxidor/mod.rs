//! Proxidor v0.2 over UDP (seed §4.8.1, Tables 1–2): the codec and the per-datagram
//! [`answer`] function. The exact bit layout is in docs/proxidor.md.
//!
//! A query is a fixed [`Header`], an optional 8-byte authentication block (AD), optional source
//! address extensions (the IPv4 and IPv6 flags), and TLVs chained by NH carrying candidate
//! address lists (type 1: IPv4, type 2: IPv6). The server's port is [`PORT`].

mod answer;
mod header;
mod message;
pub mod vectors;

#[cfg(test)]
mod tests;

pub use answer::{
    AnswerScratch, DropReason, MAX_ADDRESS_BYTES, MAX_IPV4, MAX_IPV6, Malformed, Outcome, VERSION,
    answer, answer_with,
};
pub use header::{HEADER_LEN, Header, Opcode, Rcode};
pub use message::{
    AUTH_LEN, DatagramView, Message, Payload, SOURCE_V4_LEN, SOURCE_V6_LEN, TLV_HEADER_LEN, Tlv,
    TlvIter, TlvType, TlvView, WireError,
};

/// The seed server's UDP port.
pub const PORT: u16 = 8899;

/// Build a query for `candidates` (IPv4 ones in one type-1 TLV, IPv6 ones in one type-2 TLV),
/// the way the load clients do.
pub fn query(id: u32, candidates: &[std::net::IpAddr]) -> Message {
    let mut v4 = Vec::new();
    let mut v6 = Vec::new();
    for a in candidates {
        match a {
            std::net::IpAddr::V4(a) => v4.push(*a),
            std::net::IpAddr::V6(a) => v6.push(*a),
        }
    }
    let mut tlvs = Vec::new();
    if !v4.is_empty() {
        tlvs.push(Tlv::ipv4(v4));
    }
    if !v6.is_empty() {
        tlvs.push(Tlv::ipv6(v6));
    }
    Message {
        header: Header::query(id),
        auth: None,
        source_v4: None,
        source_v6: None,
        tlvs,
    }
}
