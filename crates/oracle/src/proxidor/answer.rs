//! One datagram in, at most one datagram out: the function every server worker calls.

use super::header::{HEADER_LEN, Header, Opcode, Rcode};
use super::message::{DatagramView, TLV_HEADER_LEN, TlvType, WireError};
use crate::TopologySnapshot;
use crate::rank::sort_order;
use pathwise_core::wire::Writer;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use thiserror::Error;

/// Bytes of candidate addresses one query may carry: 1500 (the seed's datagram budget) − 12
/// (fixed header) − 8 (authentication block) − 4 (one TLV header) − 22 (the source extensions:
/// 4 + 1 for IPv4, 16 + 1 for IPv6) = 1454. See docs/proxidor.md.
pub const MAX_ADDRESS_BYTES: usize = 1500 - HEADER_LEN - 8 - TLV_HEADER_LEN - 22;
/// Most IPv4 candidates per query: ⌊1454 / 4⌋ = 363.
pub const MAX_IPV4: usize = MAX_ADDRESS_BYTES / 4;
/// Most IPv6 candidates per query: ⌊1454 / 16⌋ = 90.
pub const MAX_IPV6: usize = MAX_ADDRESS_BYTES / 16;

/// The protocol version this implementation speaks.
pub const VERSION: u8 = 0;

/// What [`answer`] did with a datagram; the server counts by this.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A ranked reply is in `out`.
    Answered {
        /// Candidate addresses ranked.
        addresses: usize,
        /// Of those, how many the oracle could place (the rest went last).
        placed: usize,
    },
    /// An error reply (header only, the Rcode set) is in `out`.
    Rejected {
        /// The Rcode sent.
        rcode: Rcode,
        /// Why.
        reason: Malformed,
    },
    /// Nothing to send; `out` is untouched.
    Dropped(DropReason),
}

/// Why a query was answered with an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum Malformed {
    /// Version other than 0.
    #[error("version {0}")]
    Version(u8),
    /// Reserved flag bits or an Rcode set in a query.
    #[error("bad flags {0:#06x}")]
    Flags(u16),
    /// An opcode other than COQ.
    #[error("opcode {0}")]
    Opcode(u8),
    /// A servcode other than 0.
    #[error("servcode {0}")]
    Servcode(u8),
    /// A service category other than 0.
    #[error("service category {0}")]
    ServiceCategory(u8),
    /// A TLV type other than the address lists.
    #[error("TLV type {0}")]
    TlvType(u8),
    /// Structurally malformed.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// More addresses than [`MAX_ADDRESS_BYTES`] allows.
    #[error("{ipv4} IPv4 and {ipv6} IPv6 candidates exceed one datagram")]
    TooManyAddresses {
        /// IPv4 candidates.
        ipv4: usize,
        /// IPv6 candidates.
        ipv6: usize,
    },
}

impl Malformed {
    /// The Rcode this error is answered with.
    pub fn rcode(&self) -> Rcode {
        match self {
            Malformed::Version(_) => Rcode::BadVersion,
            Malformed::Flags(_) | Malformed::Wire(_) => Rcode::FormatError,
            Malformed::Opcode(_)
            | Malformed::Servcode(_)
            | Malformed::ServiceCategory(_)
            | Malformed::TlvType(_) => Rcode::NotImplemented,
            Malformed::TooManyAddresses { .. } => Rcode::TooManyAddresses,
        }
    }
}

/// Why a datagram got no reply at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum DropReason {
    /// Shorter than the fixed header: nothing to echo an identification from.
    #[error("{0} bytes, shorter than the 12-byte header")]
    TooShort(usize),
    /// QR is set: a reply sent to the server. Answering could start a loop between two servers.
    #[error("a reply, not a query")]
    NotAQuery,
}

/// Answer one Proxidor query from `peer` (the datagram's source address) against `snapshot`,
/// appending the reply to `out` (which the caller clears and reuses).
///
/// The ranking source is the query's IPv4 source extension if present and placeable, else its
/// IPv6 one, else `peer`. The reply echoes the identification, sets QR and the snapshot's TTL,
/// carries no authentication block or source extension, and holds one IPv4 list TLV and/or one
/// IPv6 list TLV: every list of a family in the query merged, ranked, attributes dropped (seed
/// §4.8.1). Never panics. A server answers through [`answer_with`], which reuses its buffers.
pub fn answer(
    snapshot: &TopologySnapshot,
    peer: IpAddr,
    query: &[u8],
    out: &mut Vec<u8>,
) -> Outcome {
    answer_with(snapshot, peer, query, out, &mut AnswerScratch::default())
}

/// Reusable buffers for [`answer_with`]: the query's addresses, their sort keys and their
/// order. A worker keeps one, so that answering allocates nothing once warm and writes no more
/// than the query's addresses (arrays sized for the largest query were 10 KiB of `memset` per
/// datagram, 7 % of the oracle worker's user time; docs/BENCHMARKS.md).
#[derive(Clone, Debug, Default)]
pub struct AnswerScratch {
    v4: Vec<Ipv4Addr>,
    v6: Vec<Ipv6Addr>,
    k4: Vec<u64>,
    k6: Vec<u64>,
    o4: Vec<u64>,
    o6: Vec<u64>,
}

/// [`answer`] with caller-held buffers: allocation-free once `scratch` and `out` have grown
/// (and, once per snapshot and source row, its ranking terms are built).
pub fn answer_with(
    snapshot: &TopologySnapshot,
    peer: IpAddr,
    query: &[u8],
    out: &mut Vec<u8>,
    scratch: &mut AnswerScratch,
) -> Outcome {
    if query.len() < HEADER_LEN {
        return Outcome::Dropped(DropReason::TooShort(query.len()));
    }
    let view = match DatagramView::parse(query) {
        Ok(v) => v,
        Err(e) => {
            // The fixed header is there; answer with its identification.
            let Ok(header) = Header::parse(&mut pathwise_core::wire::Reader::new(query)) else {
                return Outcome::Dropped(DropReason::TooShort(query.len()));
            };
            if header.response {
                return Outcome::Dropped(DropReason::NotAQuery);
            }
            return reject(
                &header,
                check_header(&header).err().unwrap_or(e.into()),
                out,
            );
        }
    };
    let h = view.header;
    if h.response {
        return Outcome::Dropped(DropReason::NotAQuery);
    }
    if let Err(m) = check_header(&h) {
        return reject(&h, m, out);
    }
    let (mut n4, mut n6) = (0usize, 0usize);
    for t in view.tlvs().flatten() {
        match t.kind {
            TlvType::Ipv4List => n4 += t.payload.len() / 4,
            TlvType::Ipv6List => n6 += t.payload.len() / 16,
            TlvType::Unknown(n) => return reject(&h, Malformed::TlvType(n), out),
        }
    }
    if 4 * n4 + 16 * n6 > MAX_ADDRESS_BYTES {
        return reject(&h, Malformed::TooManyAddresses { ipv4: n4, ipv6: n6 }, out);
    }

    let sources = [
        view.source_v4.map(|(a, _)| IpAddr::V4(a)),
        view.source_v6.map(|(a, _)| IpAddr::V6(a)),
        Some(peer),
    ];
    let row = sources
        .into_iter()
        .flatten()
        .find_map(|s| snapshot.source_view(s));

    // At most `MAX_ADDRESS_BYTES` of addresses (checked above).
    let AnswerScratch {
        v4,
        v6,
        k4,
        k6,
        o4,
        o6,
    } = scratch;
    v4.clear();
    v6.clear();
    for t in view.tlvs().flatten() {
        match t.kind {
            TlvType::Ipv4List => v4.extend(
                t.payload
                    .chunks_exact(4)
                    .map(|c| Ipv4Addr::new(c[0], c[1], c[2], c[3])),
            ),
            TlvType::Ipv6List => v6.extend(
                t.payload
                    .chunks_exact(16)
                    .filter_map(|c| <[u8; 16]>::try_from(c).ok())
                    .map(Ipv6Addr::from),
            ),
            TlvType::Unknown(_) => {}
        }
    }
    let (i4, i6) = (v4.len(), v6.len());
    for (keys, order, n) in [(&mut *k4, &mut *o4, i4), (&mut *k6, &mut *o6, i6)] {
        keys.clear();
        keys.resize(n, 0);
        order.clear();
        order.resize(n, 0);
    }
    let placed = snapshot.keys_v4(row.as_ref(), v4, k4) + snapshot.keys_v6(row.as_ref(), v6, k6);
    sort_order(k4, o4);
    sort_order(k6, o6);

    let reply = Header {
        version: VERSION,
        servcode: 0,
        response: true,
        opcode: Opcode::Coq,
        authenticated: false,
        ipv4_source: false,
        ipv6_source: false,
        reserved: 0,
        rcode: Rcode::NoError,
        id: h.id,
        ttl: snapshot.settings().ttl,
        service_category: 0,
        auth_type: 0,
    };
    out.reserve(HEADER_LEN + 2 * TLV_HEADER_LEN + 4 * i4 + 16 * i6);
    reply.emit(&mut Writer::new(out));
    if i4 > 0 {
        emit_list_header(&mut Writer::new(out), TlvType::Ipv4List, i6 > 0, 4 * i4);
        emit_in_order(out, v4, o4, Ipv4Addr::octets);
    }
    if i6 > 0 {
        emit_list_header(&mut Writer::new(out), TlvType::Ipv6List, false, 16 * i6);
        emit_in_order(out, v6, o6, Ipv6Addr::octets);
    }
    Outcome::Answered {
        addresses: i4 + i6,
        placed,
    }
}

/// Append the addresses `addrs[order[0]]`, `addrs[order[1]]`, … to `out`: the list grown once
/// and filled in place, not one append (and one update of the list's length in memory) per
/// address, which was a third of `answer`'s samples.
fn emit_in_order<A: Copy, const N: usize>(
    out: &mut Vec<u8>,
    addrs: &[A],
    order: &[u64],
    octets: fn(&A) -> [u8; N],
) {
    let start = out.len();
    out.resize(start + N * order.len(), 0);
    let Some(list) = out.get_mut(start..) else {
        return;
    };
    for (to, &i) in list.chunks_exact_mut(N).zip(order) {
        if let Some(a) = addrs.get(i as usize) {
            to.copy_from_slice(&octets(a));
        }
    }
}

fn emit_list_header(w: &mut Writer<'_>, kind: TlvType, next: bool, payload: usize) {
    w.u8(kind.into());
    w.u8(u8::from(next) << 7);
    w.u16(u16::try_from(TLV_HEADER_LEN + payload).unwrap_or(u16::MAX));
}

fn check_header(h: &Header) -> Result<(), Malformed> {
    if h.version != VERSION {
        return Err(Malformed::Version(h.version));
    }
    if h.reserved != 0 || h.rcode != Rcode::NoError {
        return Err(Malformed::Flags(h.flags()));
    }
    if h.opcode != Opcode::Coq {
        return Err(Malformed::Opcode(h.opcode.into()));
    }
    if h.servcode != 0 {
        return Err(Malformed::Servcode(h.servcode));
    }
    if h.service_category != 0 {
        return Err(Malformed::ServiceCategory(h.service_category));
    }
    Ok(())
}

fn reject(h: &Header, reason: Malformed, out: &mut Vec<u8>) -> Outcome {
    let rcode = reason.rcode();
    let reply = Header {
        version: VERSION,
        response: true,
        authenticated: false,
        ipv4_source: false,
        ipv6_source: false,
        reserved: 0,
        rcode,
        ttl: 0,
        auth_type: 0,
        ..*h
    };
    reply.emit(&mut Writer::new(out));
    Outcome::Rejected { rcode, reason }
}
