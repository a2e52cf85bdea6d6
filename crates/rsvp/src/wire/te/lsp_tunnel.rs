//! LSP_TUNNEL_IPv4 and LSP_TUNNEL_IPv6 SESSION (RFC 3209 §4.6.1), SENDER_TEMPLATE (§4.6.2) and
//! FILTER_SPEC (§4.6.3).

use std::net::{IpAddr, Ipv4Addr};

use pathwise_core::wire::{Reader, Writer};

use super::ctype;
use crate::wire::ParseErrorKind;
use crate::wire::objects::{ObjectHeader, class};

/// An LSP tunnel's SESSION (RFC 3209 §4.6.1): the tunnel's egress and the identifiers that
/// stay constant over the tunnel's life. LSP_TUNNEL_IPv4 (C-Type 7) or LSP_TUNNEL_IPv6
/// (C-Type 8) by the family of `endpoint`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LspTunnelSession {
    /// Tunnel end point address: the egress node.
    pub endpoint: IpAddr,
    /// Tunnel ID.
    pub tunnel_id: u16,
    /// Extended Tunnel ID: normally zero; an ingress that wants to narrow the session to the
    /// ingress–egress pair puts its own address here. 4 bytes in the IPv4 form, 16 in the IPv6
    /// form. Written in `endpoint`'s family: an IPv4 value in an IPv6 session as the
    /// IPv4-mapped address `::ffff:a.b.c.d`, an IPv6 value in an IPv4 session as its last four
    /// bytes.
    pub extended_tunnel_id: IpAddr,
}

/// An LSP tunnel's SENDER_TEMPLATE (RFC 3209 §4.6.2) or FILTER_SPEC (§4.6.3), which share their
/// format: LSP_TUNNEL_IPv4 (C-Type 7) or LSP_TUNNEL_IPv6 (C-Type 8) by the family of `sender`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LspTunnelSender {
    /// Tunnel sender address: the ingress node.
    pub sender: IpAddr,
    /// LSP ID, changed by the sender to share resources with itself (make-before-break).
    pub lsp_id: u16,
}

/// The LSP_TUNNEL C-Type naming `addr`'s family.
fn lsp_tunnel_ctype(addr: IpAddr) -> u8 {
    match addr {
        IpAddr::V4(_) => ctype::LSP_TUNNEL_IPV4,
        IpAddr::V6(_) => ctype::LSP_TUNNEL_IPV6,
    }
}

/// Bytes of an address of `addr`'s family.
fn addr_len(addr: IpAddr) -> usize {
    if addr.is_ipv4() { 4 } else { 16 }
}

/// Check an LSP_TUNNEL body against its C-Type: `v4_len` bytes for C-Type 7, `v6_len` for 8.
/// Returns whether it is the IPv6 form.
fn check_body(
    class: u8,
    ctype: u8,
    body: &[u8],
    v4_len: usize,
    v6_len: usize,
) -> Result<bool, ParseErrorKind> {
    let (want, v6) = match ctype {
        ctype::LSP_TUNNEL_IPV4 => (v4_len, false),
        ctype::LSP_TUNNEL_IPV6 => (v6_len, true),
        _ => return Err(ParseErrorKind::unknown_ctype(class, ctype)),
    };
    if body.len() == want {
        Ok(v6)
    } else {
        Err(ParseErrorKind::bad_object(class, ctype))
    }
}

fn read_addr(r: &mut Reader<'_>, v6: bool) -> Result<IpAddr, ParseErrorKind> {
    Ok(if v6 {
        IpAddr::V6(r.ipv6()?)
    } else {
        IpAddr::V4(r.ipv4()?)
    })
}

/// Write `addr` as an address of the IPv6 (`v6`) or IPv4 family; see
/// [`LspTunnelSession::extended_tunnel_id`] for the conversions.
fn write_in_family(w: &mut Writer<'_>, addr: IpAddr, v6: bool) {
    match (addr, v6) {
        (IpAddr::V4(a), false) => w.bytes(&a.octets()),
        (IpAddr::V6(a), true) => w.bytes(&a.octets()),
        (IpAddr::V4(a), true) => w.bytes(&a.to_ipv6_mapped().octets()),
        (IpAddr::V6(a), false) => {
            let [.., a0, a1, a2, a3] = a.octets();
            w.bytes(&Ipv4Addr::new(a0, a1, a2, a3).octets());
        }
    }
}

impl LspTunnelSession {
    /// Parse an LSP_TUNNEL SESSION body (RFC 3209 §4.6.1.1, §4.6.1.2):
    ///
    /// ```text
    /// LSP_TUNNEL_IPv4 SESSION: Class = 1, C-Type = 7
    /// +-------------+-------------+-------------+-------------+
    /// |           IPv4 tunnel end point address               |
    /// +-------------+-------------+-------------+-------------+
    /// |        MUST be zero       |         Tunnel ID         |
    /// +-------------+-------------+-------------+-------------+
    /// |                  Extended Tunnel ID                   |
    /// +-------------+-------------+-------------+-------------+
    /// LSP_TUNNEL_IPv6 SESSION: Class = 1, C-Type = 8 — a 16-byte end point address and a 16-byte
    /// Extended Tunnel ID.
    /// ```
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        let v6 = check_body(class::SESSION, ctype, body, 12, 36)?;
        let mut r = Reader::new(body);
        let endpoint = read_addr(&mut r, v6)?;
        r.skip(2)?;
        Ok(LspTunnelSession {
            endpoint,
            tunnel_id: r.u16()?,
            extended_tunnel_id: read_addr(&mut r, v6)?,
        })
    }

    /// C-Type: 7 for an IPv4 end point, 8 for IPv6.
    pub fn ctype(&self) -> u8 {
        lsp_tunnel_ctype(self.endpoint)
    }

    /// Object length in bytes, header included.
    pub fn buffer_len(&self) -> usize {
        ObjectHeader::LEN + 2 * addr_len(self.endpoint) + 4
    }

    /// Write the object, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        ObjectHeader::emit(
            w,
            class::SESSION,
            self.ctype(),
            self.buffer_len() - ObjectHeader::LEN,
        );
        w.ip(self.endpoint);
        w.u16(0);
        w.u16(self.tunnel_id);
        write_in_family(w, self.extended_tunnel_id, self.endpoint.is_ipv6());
    }
}

impl LspTunnelSender {
    /// Parse a SENDER_TEMPLATE body; see [`LspTunnelSender::parse_as`].
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        Self::parse_as(class::SENDER_TEMPLATE, ctype, body)
    }

    /// Parse an LSP_TUNNEL SENDER_TEMPLATE or FILTER_SPEC body (`class` names which, for
    /// errors; RFC 3209 §4.6.2.1, §4.6.2.2, §4.6.3):
    ///
    /// ```text
    /// LSP_TUNNEL_IPv4 SENDER_TEMPLATE: Class = 11, C-Type = 7 (FILTER_SPEC: Class = 10)
    /// +-------------+-------------+-------------+-------------+
    /// |             IPv4 tunnel sender address                |
    /// +-------------+-------------+-------------+-------------+
    /// |        MUST be zero       |           LSP ID          |
    /// +-------------+-------------+-------------+-------------+
    /// LSP_TUNNEL_IPv6 SENDER_TEMPLATE: C-Type = 8 — a 16-byte sender address.
    /// ```
    pub fn parse_as(class: u8, ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        let v6 = check_body(class, ctype, body, 8, 20)?;
        let mut r = Reader::new(body);
        let sender = read_addr(&mut r, v6)?;
        r.skip(2)?;
        Ok(LspTunnelSender {
            sender,
            lsp_id: r.u16()?,
        })
    }

    /// C-Type: 7 for an IPv4 sender, 8 for IPv6.
    pub fn ctype(&self) -> u8 {
        lsp_tunnel_ctype(self.sender)
    }

    /// Object length in bytes, header included.
    pub fn buffer_len(&self) -> usize {
        ObjectHeader::LEN + addr_len(self.sender) + 4
    }

    /// Write the object as a SENDER_TEMPLATE, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        self.emit_as(class::SENDER_TEMPLATE, w);
    }

    /// Write the object with Class-Num `class` (SENDER_TEMPLATE or FILTER_SPEC), header
    /// included.
    pub fn emit_as(&self, class: u8, w: &mut Writer<'_>) {
        ObjectHeader::emit(
            w,
            class,
            self.ctype(),
            self.buffer_len() - ObjectHeader::LEN,
        );
        w.ip(self.sender);
        w.u16(0);
        w.u16(self.lsp_id);
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv6Addr;

    use super::*;
    use crate::wire::te::emitted;

    const V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x10);
    const V6_BYTES: [u8; 16] = [
        0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
    ];

    #[test]
    fn session_v4() {
        let obj = [
            0x00, 0x10, 0x01, 0x07, // length 16, SESSION, LSP_TUNNEL_IPv4
            192, 0, 2, 9, // IPv4 tunnel end point address
            0x00, 0x00, // MUST be zero
            0x00, 0x2a, // Tunnel ID 42
            198, 51, 100, 1, // Extended Tunnel ID: the ingress's address
        ];
        let s = LspTunnelSession {
            endpoint: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 9)),
            tunnel_id: 42,
            extended_tunnel_id: IpAddr::V4(Ipv4Addr::new(198, 51, 100, 1)),
        };
        assert_eq!(LspTunnelSession::parse(7, &obj[4..]), Ok(s));
        assert_eq!(s.buffer_len(), obj.len());
        assert_eq!(emitted(|w| s.emit(w)), obj);
        // "MUST be zero" is ignored on receipt.
        let mut dirty = obj;
        dirty[8] = 0xff;
        assert_eq!(LspTunnelSession::parse(7, &dirty[4..]), Ok(s));
    }

    #[test]
    fn session_v6() {
        let mut obj = vec![0x00, 0x28, 0x01, 0x08]; // length 40, SESSION, LSP_TUNNEL_IPv6
        obj.extend_from_slice(&V6_BYTES); // IPv6 tunnel end point address
        obj.extend_from_slice(&[0x00, 0x00, 0xff, 0xff]); // MUST be zero, Tunnel ID 65535
        obj.extend_from_slice(&[0; 16]); // Extended Tunnel ID, all zeros
        let s = LspTunnelSession {
            endpoint: IpAddr::V6(V6),
            tunnel_id: 0xffff,
            extended_tunnel_id: IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        };
        assert_eq!(LspTunnelSession::parse(8, &obj[4..]), Ok(s));
        assert_eq!(s.buffer_len(), 40);
        assert_eq!(emitted(|w| s.emit(w)), obj);
    }

    #[test]
    fn session_extended_id_of_the_other_family() {
        let s = LspTunnelSession {
            endpoint: IpAddr::V6(V6),
            tunnel_id: 1,
            extended_tunnel_id: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
        };
        let b = emitted(|w| s.emit(w));
        assert_eq!(b.len(), s.buffer_len());
        assert_eq!(
            LspTunnelSession::parse(8, &b[4..]).map(|s| s.extended_tunnel_id),
            Ok(IpAddr::V6(Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped()))
        );
        let s = LspTunnelSession {
            endpoint: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            tunnel_id: 1,
            extended_tunnel_id: IpAddr::V6(V6),
        };
        let b = emitted(|w| s.emit(w));
        assert_eq!(b.len(), s.buffer_len());
        assert_eq!(&b[12..], &[0, 0, 0, 0x10]);
    }

    #[test]
    fn session_errors() {
        assert_eq!(
            LspTunnelSession::parse(1, &[0; 12]),
            Err(ParseErrorKind::UnknownCType { class: 1, ctype: 1 })
        );
        for (ctype, len) in [(7, 8), (7, 36), (8, 12), (8, 32)] {
            assert_eq!(
                LspTunnelSession::parse(ctype, &vec![0; len]),
                Err(ParseErrorKind::BadObject { class: 1, ctype }),
                "C-Type {ctype}, {len} bytes"
            );
        }
    }

    #[test]
    fn sender_template_and_filter_spec() {
        let obj = [
            0x00, 0x0c, 0x0b, 0x07, // length 12, SENDER_TEMPLATE, LSP_TUNNEL_IPv4
            198, 51, 100, 1, // IPv4 tunnel sender address
            0x00, 0x00, // MUST be zero
            0x00, 0x03, // LSP ID 3
        ];
        let s = LspTunnelSender {
            sender: IpAddr::V4(Ipv4Addr::new(198, 51, 100, 1)),
            lsp_id: 3,
        };
        assert_eq!(LspTunnelSender::parse(7, &obj[4..]), Ok(s));
        assert_eq!(s.buffer_len(), 12);
        assert_eq!(emitted(|w| s.emit(w)), obj);
        // The FILTER_SPEC form (§4.6.3) differs only in its class.
        let mut filter = obj;
        filter[2] = 10;
        assert_eq!(emitted(|w| s.emit_as(class::FILTER_SPEC, w)), filter);
        assert_eq!(
            LspTunnelSender::parse_as(class::FILTER_SPEC, 7, &filter[4..]),
            Ok(s)
        );
        // IPv6: length 24, C-Type 8.
        let mut obj = vec![0x00, 0x18, 0x0b, 0x08];
        obj.extend_from_slice(&V6_BYTES);
        obj.extend_from_slice(&[0x00, 0x00, 0x12, 0x34]);
        let s = LspTunnelSender {
            sender: IpAddr::V6(V6),
            lsp_id: 0x1234,
        };
        assert_eq!(LspTunnelSender::parse(8, &obj[4..]), Ok(s));
        assert_eq!(emitted(|w| s.emit(w)), obj);
    }

    #[test]
    fn sender_errors() {
        assert_eq!(
            LspTunnelSender::parse_as(class::FILTER_SPEC, 2, &[0; 20]),
            Err(ParseErrorKind::UnknownCType {
                class: 10,
                ctype: 2
            })
        );
        assert_eq!(
            LspTunnelSender::parse(7, &[0; 20]),
            Err(ParseErrorKind::BadObject {
                class: 11,
                ctype: 7
            })
        );
        assert_eq!(
            LspTunnelSender::parse(8, &[0; 8]),
            Err(ParseErrorKind::BadObject {
                class: 11,
                ctype: 8
            })
        );
    }
}
