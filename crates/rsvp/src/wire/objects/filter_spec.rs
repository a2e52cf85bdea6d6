//! FILTER_SPEC (§A.9) / SENDER_TEMPLATE (§A.10) with their LSP_TUNNEL forms (RFC 3209 §4.6.2,
//! §4.6.3), and objects carried opaquely (POLICY_DATA §A.13, unknown classes forwarded per
//! §3.10).

use pathwise_core::wire::{Reader, Writer};

use super::{FilterSpec, ObjectHeader, Opaque, class, ctype};
use crate::wire::{ParseErrorKind, te};

/// The 20-bit IPv6 flow label inside its 24-bit field.
const FLOW_LABEL_MASK: u32 = 0x000f_ffff;

impl FilterSpec {
    /// Parse a FILTER_SPEC body; see [`FilterSpec::parse_as`].
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        Self::parse_as(class::FILTER_SPEC, ctype, body)
    }

    /// Parse a FILTER_SPEC or SENDER_TEMPLATE body (`class` names which, for errors;
    /// RFC 2205 §A.9, §A.10; RFC 3209 §4.6.2, §4.6.3):
    ///
    /// ```text
    /// IPv4 FILTER_SPEC object: Class = 10, C-Type = 1
    /// +-------------+-------------+-------------+-------------+
    /// |               IPv4 SrcAddress (4 bytes)               |
    /// +-------------+-------------+-------------+-------------+
    /// |    //////   |    //////   |          SrcPort          |
    /// +-------------+-------------+-------------+-------------+
    /// IPv6 FILTER_SPEC object: Class = 10, C-Type = 2 — a 16-byte SrcAddress.
    /// IPv6 Flow-label FILTER_SPEC object: Class = 10, C-Type = 3
    /// +-------------+-------------+-------------+-------------+
    /// |               IPv6 SrcAddress (16 bytes)              |
    /// +-------------+-------------+-------------+-------------+
    /// |   ///////   |         Flow Label (24 bits)            |
    /// +-------------+-------------+-------------+-------------+
    /// LSP_TUNNEL_IPv4 SENDER_TEMPLATE: Class = 11, C-Type = 7 (FILTER_SPEC: Class = 10)
    /// +-------------+-------------+-------------+-------------+
    /// |             IPv4 tunnel sender address                |
    /// +-------------+-------------+-------------+-------------+
    /// |        MUST be zero       |           LSP ID          |
    /// +-------------+-------------+-------------+-------------+
    /// LSP_TUNNEL_IPv6 SENDER_TEMPLATE: C-Type = 8 — a 16-byte sender address.
    /// ```
    ///
    /// The flow label is 20 bits; the top 4 bits of its 24-bit field are ignored, as are the
    /// reserved and "MUST be zero" fields.
    pub fn parse_as(class: u8, ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        let want = match ctype {
            ctype::IPV4 | te::ctype::LSP_TUNNEL_IPV4 => 8,
            ctype::IPV6 | ctype::IPV6_FLOW_LABEL | te::ctype::LSP_TUNNEL_IPV6 => 20,
            _ => return Err(ParseErrorKind::unknown_ctype(class, ctype)),
        };
        if body.len() != want {
            return Err(ParseErrorKind::bad_object(class, ctype));
        }
        let mut r = Reader::new(body);
        Ok(match ctype {
            ctype::IPV4 => {
                let src = r.ipv4()?;
                r.skip(2)?;
                FilterSpec::V4 {
                    src,
                    src_port: r.u16()?,
                }
            }
            ctype::IPV6 => {
                let src = r.ipv6()?;
                r.skip(2)?;
                FilterSpec::V6 {
                    src,
                    src_port: r.u16()?,
                }
            }
            te::ctype::LSP_TUNNEL_IPV4 => {
                let src = r.ipv4()?;
                r.skip(2)?;
                FilterSpec::LspTunnelV4 {
                    src,
                    lsp_id: r.u16()?,
                }
            }
            te::ctype::LSP_TUNNEL_IPV6 => {
                let src = r.ipv6()?;
                r.skip(2)?;
                FilterSpec::LspTunnelV6 {
                    src,
                    lsp_id: r.u16()?,
                }
            }
            _ => {
                let src = r.ipv6()?;
                r.skip(1)?;
                FilterSpec::V6FlowLabel {
                    src,
                    flow_label: r.u24()? & FLOW_LABEL_MASK,
                }
            }
        })
    }

    /// C-Type: 1 (IPv4), 2 (IPv6), 3 (IPv6 flow label), 7 (LSP_TUNNEL_IPv4) or 8
    /// (LSP_TUNNEL_IPv6).
    pub fn ctype(&self) -> u8 {
        match self {
            FilterSpec::V4 { .. } => ctype::IPV4,
            FilterSpec::V6 { .. } => ctype::IPV6,
            FilterSpec::V6FlowLabel { .. } => ctype::IPV6_FLOW_LABEL,
            FilterSpec::LspTunnelV4 { .. } => te::ctype::LSP_TUNNEL_IPV4,
            FilterSpec::LspTunnelV6 { .. } => te::ctype::LSP_TUNNEL_IPV6,
        }
    }

    /// Object length in bytes, header included.
    pub fn buffer_len(&self) -> usize {
        ObjectHeader::LEN
            + match self {
                FilterSpec::V4 { .. } | FilterSpec::LspTunnelV4 { .. } => 8,
                FilterSpec::V6 { .. }
                | FilterSpec::V6FlowLabel { .. }
                | FilterSpec::LspTunnelV6 { .. } => 20,
            }
    }

    /// Write the object as a FILTER_SPEC, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        self.emit_as(class::FILTER_SPEC, w);
    }

    /// Write the object with Class-Num `class` (FILTER_SPEC or SENDER_TEMPLATE), header included.
    pub fn emit_as(&self, class: u8, w: &mut Writer<'_>) {
        ObjectHeader::emit(
            w,
            class,
            self.ctype(),
            self.buffer_len() - ObjectHeader::LEN,
        );
        match *self {
            FilterSpec::V4 { src, src_port } => {
                w.bytes(&src.octets());
                w.u16(0);
                w.u16(src_port);
            }
            FilterSpec::V6 { src, src_port } => {
                w.bytes(&src.octets());
                w.u16(0);
                w.u16(src_port);
            }
            FilterSpec::V6FlowLabel { src, flow_label } => {
                w.bytes(&src.octets());
                w.u8(0);
                w.u24(flow_label & FLOW_LABEL_MASK);
            }
            FilterSpec::LspTunnelV4 { src, lsp_id } => {
                w.bytes(&src.octets());
                w.u16(0);
                w.u16(lsp_id);
            }
            FilterSpec::LspTunnelV6 { src, lsp_id } => {
                w.bytes(&src.octets());
                w.u16(0);
                w.u16(lsp_id);
            }
        }
    }
}

impl Opaque {
    /// Keep an object uninterpreted. `body` is a whole object body, so a multiple of 4 bytes.
    pub fn parse(class: u8, ctype: u8, body: &[u8]) -> Self {
        Opaque {
            class,
            ctype,
            body: body.to_vec(),
        }
    }

    /// C-Type as received.
    pub fn ctype(&self) -> u8 {
        self.ctype
    }

    /// Object length in bytes, header included (the body is padded to a multiple of 4).
    pub fn buffer_len(&self) -> usize {
        ObjectHeader::LEN + self.body.len().next_multiple_of(4)
    }

    /// Write the object, header included, padding the body with zeros to a multiple of 4.
    pub fn emit(&self, w: &mut Writer<'_>) {
        ObjectHeader::emit(
            w,
            self.class,
            self.ctype,
            self.buffer_len() - ObjectHeader::LEN,
        );
        w.bytes(&self.body);
        w.zeros(self.body.len().next_multiple_of(4) - self.body.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn emitted(f: impl FnOnce(&mut Writer<'_>)) -> Vec<u8> {
        let mut v = vec![0xa5; 3];
        f(&mut Writer::new(&mut v));
        assert_eq!(&v[..3], &[0xa5; 3]);
        v.split_off(3)
    }

    const V6: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1);

    #[test]
    fn filter_spec_v4() {
        // §A.9 IPv4 FILTER_SPEC: length 12, class 10, C-Type 1; 10.0.0.1 port 4000. The reserved
        // bytes are ignored on receipt (0xa5 here) and written as zero.
        let received = [0x00, 0x0c, 0x0a, 0x01, 10, 0, 0, 1, 0xa5, 0xa5, 0x0f, 0xa0];
        let f = FilterSpec::V4 {
            src: Ipv4Addr::new(10, 0, 0, 1),
            src_port: 4000,
        };
        assert_eq!(FilterSpec::parse(1, &received[4..]), Ok(f));
        assert_eq!(f.buffer_len(), 12);
        assert_eq!(
            emitted(|w| f.emit(w)),
            [0x00, 0x0c, 0x0a, 0x01, 10, 0, 0, 1, 0, 0, 0x0f, 0xa0]
        );
        // §A.10: SENDER_TEMPLATE shares the format, with class 11.
        assert_eq!(
            emitted(|w| f.emit_as(class::SENDER_TEMPLATE, w)),
            [0x00, 0x0c, 0x0b, 0x01, 10, 0, 0, 1, 0, 0, 0x0f, 0xa0]
        );
    }

    #[test]
    fn filter_spec_v6_and_flow_label() {
        // §A.9 IPv6 FILTER_SPEC: length 24, class 10, C-Type 2.
        let mut obj = vec![0x00, 0x18, 0x0a, 0x02];
        obj.extend_from_slice(&V6.octets());
        obj.extend_from_slice(&[0, 0, 0x13, 0x88]);
        let f = FilterSpec::V6 {
            src: V6,
            src_port: 5000,
        };
        assert_eq!(FilterSpec::parse(2, &obj[4..]), Ok(f));
        assert_eq!(emitted(|w| f.emit(w)), obj);
        // IPv6 flow-label FILTER_SPEC: length 24, C-Type 3, flow label 0xabcde.
        let mut obj = vec![0x00, 0x18, 0x0a, 0x03];
        obj.extend_from_slice(&V6.octets());
        obj.extend_from_slice(&[0, 0x0a, 0xbc, 0xde]);
        let f = FilterSpec::V6FlowLabel {
            src: V6,
            flow_label: 0xabcde,
        };
        assert_eq!(FilterSpec::parse(3, &obj[4..]), Ok(f));
        assert_eq!(f.buffer_len(), 24);
        assert_eq!(emitted(|w| f.emit(w)), obj);
        // The top nibble of the 24-bit field is not part of the label.
        obj[21] = 0xfa;
        assert_eq!(FilterSpec::parse(3, &obj[4..]), Ok(f));
    }

    #[test]
    fn lsp_tunnel_sender_template_and_filter_spec() {
        let obj = [
            0x00, 0x0c, 0x0b,
            0x07, // length 12, SENDER_TEMPLATE, LSP_TUNNEL_IPv4 (RFC 3209 §4.6.2.1)
            198, 51, 100, 1, // IPv4 tunnel sender address
            0xa5, 0xa5, // MUST be zero (ignored on receipt)
            0x00, 0x03, // LSP ID 3
        ];
        let s = FilterSpec::LspTunnelV4 {
            src: Ipv4Addr::new(198, 51, 100, 1),
            lsp_id: 3,
        };
        assert_eq!(
            FilterSpec::parse_as(class::SENDER_TEMPLATE, 7, &obj[4..]),
            Ok(s)
        );
        assert_eq!((s.ctype(), s.buffer_len()), (7, 12));
        assert!(s.is_lsp_tunnel());
        let mut clean = obj;
        clean[8..10].fill(0);
        assert_eq!(emitted(|w| s.emit_as(class::SENDER_TEMPLATE, w)), clean);
        // The FILTER_SPEC form (§4.6.3) differs only in its class.
        clean[2] = class::FILTER_SPEC;
        assert_eq!(emitted(|w| s.emit(w)), clean);
        assert_eq!(FilterSpec::parse(7, &clean[4..]), Ok(s));
        // LSP_TUNNEL_IPv6 (§4.6.2.2): length 24, C-Type 8.
        let mut obj = vec![0x00, 0x18, 0x0b, 0x08];
        obj.extend_from_slice(&V6.octets());
        obj.extend_from_slice(&[0x00, 0x00, 0x12, 0x34]);
        let s = FilterSpec::LspTunnelV6 {
            src: V6,
            lsp_id: 0x1234,
        };
        assert_eq!(
            FilterSpec::parse_as(class::SENDER_TEMPLATE, 8, &obj[4..]),
            Ok(s)
        );
        assert_eq!(s.src(), std::net::IpAddr::V6(V6));
        assert_eq!(emitted(|w| s.emit_as(class::SENDER_TEMPLATE, w)), obj);
    }

    #[test]
    fn filter_spec_errors() {
        assert_eq!(
            FilterSpec::parse(4, &[0; 8]),
            Err(ParseErrorKind::UnknownCType {
                class: 10,
                ctype: 4
            })
        );
        assert_eq!(
            FilterSpec::parse_as(class::SENDER_TEMPLATE, 9, &[0; 8]),
            Err(ParseErrorKind::UnknownCType {
                class: 11,
                ctype: 9
            })
        );
        for (ctype, len) in [(7, 20), (8, 8)] {
            assert_eq!(
                FilterSpec::parse_as(class::SENDER_TEMPLATE, ctype, &vec![0; len]),
                Err(ParseErrorKind::BadObject { class: 11, ctype }),
                "C-Type {ctype}, {len} bytes"
            );
        }
        assert_eq!(
            FilterSpec::parse(3, &[0; 8]),
            Err(ParseErrorKind::BadObject {
                class: 10,
                ctype: 3
            })
        );
    }

    #[test]
    fn opaque_round_trip_and_padding() {
        // A POLICY_DATA object (§A.13, class 14, C-Type 1) with 8 bytes of policy data.
        let obj = [0x00, 0x0c, 0x0e, 0x01, 1, 2, 3, 4, 5, 6, 7, 8];
        let o = Opaque::parse(14, 1, &obj[4..]);
        assert_eq!(o.body, obj[4..]);
        assert_eq!(o.buffer_len(), 12);
        assert_eq!(emitted(|w| o.emit(w)), obj);
        // A body that is not a multiple of 4 is padded.
        let o = Opaque {
            class: 0xc0,
            ctype: 9,
            body: vec![1, 2, 3, 4, 5],
        };
        assert_eq!(o.buffer_len(), 12);
        assert_eq!(
            emitted(|w| o.emit(w)),
            [0x00, 0x0c, 0xc0, 0x09, 1, 2, 3, 4, 5, 0, 0, 0]
        );
    }
}
