//! The Interface_ID TLVs of the IF_ID RSVP_HOP object (RFC 3473 §8.1.1; their format is RFC 3471
//! §9.1.1): which data channel(s) an LSP uses when control and data channels are not one to one.
//!
//! ```text
//!  0                   1                   2                   3
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |              Type             |             Length            |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ~                             Value                             ~
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Length is 4 + the length of the Value, which is zero-padded to a multiple of 4 (RFC 3471
//! §9.1.1). Types 1 (IPv4, Length 8), 2 (IPv6, Length 20), 3 (IF_INDEX), 4
//! (COMPONENT_IF_DOWNSTREAM) and 5 (COMPONENT_IF_UPSTREAM) — the last three Length 12, an IPv4
//! address then a 32-bit Interface ID — are read into their fields; other types are kept as
//! received, so a node returns them unchanged (RFC 3473 §8.1.2).
//!
//! No-panic contract: [`IfIdTlv::parse_all`] returns the TLVs or `None` for any input;
//! [`IfIdTlv::emit`] writes exactly [`IfIdTlv::buffer_len`] bytes.

use std::net::{Ipv4Addr, Ipv6Addr};

use pathwise_core::wire::{Reader, Writer};

/// TLV type numbers (RFC 3471 §9.1.1).
pub mod tlv_type {
    /// IPv4 address of the data interface.
    pub const IPV4: u16 = 1;
    /// IPv6 address of the data interface.
    pub const IPV6: u16 = 2;
    /// IF_INDEX: an (unnumbered) interface index with an address of its router or link.
    pub const IF_INDEX: u16 = 3;
    /// COMPONENT_IF_DOWNSTREAM: a bundled component link, downstream direction.
    pub const COMPONENT_IF_DOWNSTREAM: u16 = 4;
    /// COMPONENT_IF_UPSTREAM: a bundled component link, upstream direction.
    pub const COMPONENT_IF_UPSTREAM: u16 = 5;
}

/// One Interface_ID TLV (RFC 3471 §9.1.1).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum IfIdTlv {
    /// Type 1: an IPv4 interface address.
    Ipv4(Ipv4Addr),
    /// Type 2: an IPv6 interface address.
    Ipv6(Ipv6Addr),
    /// Type 3: IF_INDEX.
    IfIndex {
        /// An address of the link or of the router (its router address TLV in routing).
        addr: Ipv4Addr,
        /// The interface identifier.
        id: u32,
    },
    /// Type 4: COMPONENT_IF_DOWNSTREAM.
    ComponentDownstream {
        /// An address of the link or of the router.
        addr: Ipv4Addr,
        /// The component link; [`IfIdTlv::ALL_COMPONENTS`] for all of them.
        id: u32,
    },
    /// Type 5: COMPONENT_IF_UPSTREAM.
    ComponentUpstream {
        /// An address of the link or of the router.
        addr: Ipv4Addr,
        /// The component link; [`IfIdTlv::ALL_COMPONENTS`] for all of them.
        id: u32,
    },
    /// Any other type, its Value as received (without the padding). Written with the Length
    /// `4 + value.len()` and padded; a Value too long for the 16-bit Length is cut.
    Unknown {
        /// Type.
        kind: u16,
        /// Value, unpadded.
        value: Vec<u8>,
    },
}

/// Longest Value a 16-bit Length can describe once padded.
const MAX_VALUE_LEN: usize = 0xfffc - 4;

impl IfIdTlv {
    /// Interface ID "the same label is valid across all component links" (RFC 3471 §9.1.1).
    pub const ALL_COMPONENTS: u32 = 0xffff_ffff;

    /// Read every TLV of `body`, which they must fill exactly. `None` when a Length is below 4,
    /// runs (padded) past the body, or does not fit its type.
    pub fn parse_all(body: &[u8]) -> Option<Vec<IfIdTlv>> {
        let mut r = Reader::new(body);
        let mut out = Vec::new();
        while !r.is_empty() {
            let kind = r.u16().ok()?;
            let length = usize::from(r.u16().ok()?);
            let value_len = length.checked_sub(4)?;
            let value = r.bytes(value_len).ok()?;
            r.skip(value_len.next_multiple_of(4) - value_len).ok()?;
            let mut v = Reader::new(value);
            let addr_id = |v: &mut Reader<'_>| -> Option<(Ipv4Addr, u32)> {
                Some((v.ipv4().ok()?, v.u32().ok()?))
            };
            let fixed = |want: usize| (value_len == want).then_some(());
            out.push(match kind {
                tlv_type::IPV4 => {
                    fixed(4)?;
                    IfIdTlv::Ipv4(v.ipv4().ok()?)
                }
                tlv_type::IPV6 => {
                    fixed(16)?;
                    IfIdTlv::Ipv6(v.ipv6().ok()?)
                }
                tlv_type::IF_INDEX => {
                    fixed(8)?;
                    let (addr, id) = addr_id(&mut v)?;
                    IfIdTlv::IfIndex { addr, id }
                }
                tlv_type::COMPONENT_IF_DOWNSTREAM => {
                    fixed(8)?;
                    let (addr, id) = addr_id(&mut v)?;
                    IfIdTlv::ComponentDownstream { addr, id }
                }
                tlv_type::COMPONENT_IF_UPSTREAM => {
                    fixed(8)?;
                    let (addr, id) = addr_id(&mut v)?;
                    IfIdTlv::ComponentUpstream { addr, id }
                }
                kind => IfIdTlv::Unknown {
                    kind,
                    value: value.to_vec(),
                },
            });
        }
        Some(out)
    }

    /// The TLV's Type.
    pub fn kind(&self) -> u16 {
        match self {
            IfIdTlv::Ipv4(_) => tlv_type::IPV4,
            IfIdTlv::Ipv6(_) => tlv_type::IPV6,
            IfIdTlv::IfIndex { .. } => tlv_type::IF_INDEX,
            IfIdTlv::ComponentDownstream { .. } => tlv_type::COMPONENT_IF_DOWNSTREAM,
            IfIdTlv::ComponentUpstream { .. } => tlv_type::COMPONENT_IF_UPSTREAM,
            IfIdTlv::Unknown { kind, .. } => *kind,
        }
    }

    /// Length of the Value as written, unpadded.
    fn value_len(&self) -> usize {
        match self {
            IfIdTlv::Ipv4(_) => 4,
            IfIdTlv::Ipv6(_) => 16,
            IfIdTlv::IfIndex { .. }
            | IfIdTlv::ComponentDownstream { .. }
            | IfIdTlv::ComponentUpstream { .. } => 8,
            IfIdTlv::Unknown { value, .. } => value.len().min(MAX_VALUE_LEN),
        }
    }

    /// Bytes [`IfIdTlv::emit`] writes: the 4-byte header and the padded Value.
    pub fn buffer_len(&self) -> usize {
        4 + self.value_len().next_multiple_of(4)
    }

    /// Write the TLV, padding included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        let n = self.value_len();
        w.u16(self.kind());
        // n <= MAX_VALUE_LEN, so 4 + n fits 16 bits.
        w.u16((4 + n) as u16);
        match self {
            IfIdTlv::Ipv4(a) => w.bytes(&a.octets()),
            IfIdTlv::Ipv6(a) => w.bytes(&a.octets()),
            IfIdTlv::IfIndex { addr, id }
            | IfIdTlv::ComponentDownstream { addr, id }
            | IfIdTlv::ComponentUpstream { addr, id } => {
                w.bytes(&addr.octets());
                w.u32(*id);
            }
            IfIdTlv::Unknown { value, .. } => w.bytes(&value[..n]),
        }
        w.zeros(n.next_multiple_of(4) - n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn emitted(tlv: &IfIdTlv) -> Vec<u8> {
        let mut v = vec![0xa5; 3];
        tlv.emit(&mut Writer::new(&mut v));
        assert_eq!(&v[..3], &[0xa5; 3]);
        let b = v.split_off(3);
        assert_eq!(b.len(), tlv.buffer_len());
        b
    }

    #[test]
    fn each_type() {
        let cases: [(&[u8], IfIdTlv); 6] = [
            // Type 1, Length 8: as KOM sends it (kom-head-end-path-if-id-hop.pcap).
            (
                &[0, 1, 0, 8, 0, 0, 0, 0],
                IfIdTlv::Ipv4(Ipv4Addr::UNSPECIFIED),
            ),
            (
                &[
                    0, 2, 0, 20, 0x20, 1, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
                ],
                IfIdTlv::Ipv6("2001:db8::1".parse().unwrap()),
            ),
            (
                &[0, 3, 0, 12, 10, 0, 0, 1, 0, 0, 0, 7],
                IfIdTlv::IfIndex {
                    addr: Ipv4Addr::new(10, 0, 0, 1),
                    id: 7,
                },
            ),
            (
                &[0, 4, 0, 12, 10, 0, 0, 1, 0xff, 0xff, 0xff, 0xff],
                IfIdTlv::ComponentDownstream {
                    addr: Ipv4Addr::new(10, 0, 0, 1),
                    id: IfIdTlv::ALL_COMPONENTS,
                },
            ),
            (
                &[0, 5, 0, 12, 10, 0, 0, 1, 0, 0, 0, 9],
                IfIdTlv::ComponentUpstream {
                    addr: Ipv4Addr::new(10, 0, 0, 1),
                    id: 9,
                },
            ),
            // An unknown type with a 3-byte Value: Length 7, one byte of padding.
            (
                &[0x12, 0x34, 0, 7, 1, 2, 3, 0],
                IfIdTlv::Unknown {
                    kind: 0x1234,
                    value: vec![1, 2, 3],
                },
            ),
        ];
        for (bytes, tlv) in &cases {
            assert_eq!(
                IfIdTlv::parse_all(bytes),
                Some(vec![tlv.clone()]),
                "{tlv:?}"
            );
            assert_eq!(emitted(tlv), *bytes);
        }
        // All of them in one body, in order.
        let all: Vec<u8> = cases.iter().flat_map(|(b, _)| b.iter().copied()).collect();
        let tlvs: Vec<IfIdTlv> = cases.iter().map(|(_, t)| t.clone()).collect();
        assert_eq!(IfIdTlv::parse_all(&all), Some(tlvs));
        assert_eq!(IfIdTlv::parse_all(&[]), Some(Vec::new()));
    }

    #[test]
    fn impossible_lengths() {
        for bad in [
            &[0, 1, 0, 3][..],                      // Length below 4
            &[0, 1, 0, 12, 0, 0, 0, 0],             // past the body
            &[0, 1, 0, 12, 0, 0, 0, 0, 0, 0, 0, 0], // IPv4 of 8 bytes
            &[0, 3, 0, 8, 0, 0, 0, 0],              // IF_INDEX of 4 bytes
            &[0x12, 0x34, 0, 5, 1],                 // padding missing
            &[0, 1, 0],                             // a cut header
        ] {
            assert_eq!(IfIdTlv::parse_all(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn long_unknown_values_are_cut() {
        let t = IfIdTlv::Unknown {
            kind: 9,
            value: vec![7; 70_000],
        };
        let b = emitted(&t);
        assert_eq!(b.len(), 0xfffc);
        assert_eq!(u16::from_be_bytes([b[2], b[3]]), 0xfffc);
    }
}
