//! SESSION (§A.1, and the LSP_TUNNEL forms of RFC 3209 §4.6.1), RSVP_HOP (§A.2), TIME_VALUES
//! (§A.4) and RESV_CONFIRM (§A.14).

use std::net::IpAddr;
use std::sync::Arc;

use pathwise_core::wire::{Reader, Writer};

use super::{
    IfIdTlv, ObjectHeader, ResvConfirm, RsvpHop, Session, TimeValues, addr_len, check_family_body,
    class, ctype, family_ctype, read_addr,
};
use crate::wire::{ParseErrorKind, te};

/// Body lengths of the LSP_TUNNEL SESSION forms (RFC 3209 §4.6.1.1, §4.6.1.2): end point,
/// a "MUST be zero" half-word and the Tunnel ID, Extended Tunnel ID.
const LSP_TUNNEL_V4_LEN: usize = 12;
const LSP_TUNNEL_V6_LEN: usize = 36;

impl Session {
    /// Parse a SESSION body of any of the four C-Types (RFC 2205 §A.1, RFC 3209 §4.6.1):
    ///
    /// ```text
    /// IPv4/UDP SESSION object: Class = 1, C-Type = 1
    /// +-------------+-------------+-------------+-------------+
    /// |             IPv4 DestAddress (4 bytes)                |
    /// +-------------+-------------+-------------+-------------+
    /// | Protocol Id |    Flags    |          DstPort          |
    /// +-------------+-------------+-------------+-------------+
    /// IPv6/UDP SESSION object: Class = 1, C-Type = 2 — the same with a 16-byte DestAddress.
    ///
    /// LSP_TUNNEL_IPv4 SESSION object: Class = 1, C-Type = 7
    /// +-------------+-------------+-------------+-------------+
    /// |           IPv4 tunnel end point address               |
    /// +-------------+-------------+-------------+-------------+
    /// |        MUST be zero       |         Tunnel ID         |
    /// +-------------+-------------+-------------+-------------+
    /// |                  Extended Tunnel ID                   |
    /// +-------------+-------------+-------------+-------------+
    /// LSP_TUNNEL_IPv6 SESSION object: Class = 1, C-Type = 8 — a 16-byte end point address and
    /// a 16-byte Extended Tunnel ID.
    /// ```
    ///
    /// "MUST be zero" is ignored on receipt; an LSP tunnel gets `protocol_id` and `flags` 0.
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        let v6 = match ctype {
            te::ctype::LSP_TUNNEL_IPV4 => false,
            te::ctype::LSP_TUNNEL_IPV6 => true,
            _ => {
                check_family_body(class::SESSION, ctype, body, 8)?;
                let mut r = Reader::new(body);
                return Ok(Session {
                    dest: read_addr(&mut r, ctype)?,
                    protocol_id: r.u8()?,
                    flags: r.u8()?,
                    dst_port: r.u16()?,
                    extended_tunnel_id: None,
                });
            }
        };
        let want = if v6 {
            LSP_TUNNEL_V6_LEN
        } else {
            LSP_TUNNEL_V4_LEN
        };
        if body.len() != want {
            return Err(ParseErrorKind::bad_object(class::SESSION, ctype));
        }
        let mut r = Reader::new(body);
        let end_point = read_lsp_tunnel_addr(&mut r, v6)?;
        r.skip(2)?;
        let tunnel_id = r.u16()?;
        let extended_tunnel_id = read_lsp_tunnel_addr(&mut r, v6)?;
        Ok(Session::lsp_tunnel(
            end_point,
            tunnel_id,
            extended_tunnel_id,
        ))
    }

    /// C-Type: 1 for an IPv4 destination, 2 for IPv6; 7 and 8 for an LSP tunnel.
    pub fn ctype(&self) -> u8 {
        match (self.extended_tunnel_id, self.dest) {
            (None, dest) => family_ctype(dest),
            (Some(_), IpAddr::V4(_)) => te::ctype::LSP_TUNNEL_IPV4,
            (Some(_), IpAddr::V6(_)) => te::ctype::LSP_TUNNEL_IPV6,
        }
    }

    /// Object length in bytes, header included.
    pub fn buffer_len(&self) -> usize {
        let extended = if self.is_lsp_tunnel() {
            addr_len(self.dest)
        } else {
            0
        };
        ObjectHeader::LEN + addr_len(self.dest) + 4 + extended
    }

    /// Write the object, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        ObjectHeader::emit(
            w,
            class::SESSION,
            self.ctype(),
            self.buffer_len() - ObjectHeader::LEN,
        );
        w.ip(self.dest);
        match self.extended_tunnel_id {
            None => {
                w.u8(self.protocol_id);
                w.u8(self.flags);
                w.u16(self.dst_port);
            }
            Some(id) => {
                w.u16(0);
                w.u16(self.dst_port);
                write_in_family(w, id, self.dest.is_ipv6());
            }
        }
    }
}

/// An address of an LSP_TUNNEL object: IPv6 when `v6`, else IPv4.
pub(super) fn read_lsp_tunnel_addr(r: &mut Reader<'_>, v6: bool) -> Result<IpAddr, ParseErrorKind> {
    Ok(if v6 {
        IpAddr::V6(r.ipv6()?)
    } else {
        IpAddr::V4(r.ipv4()?)
    })
}

/// Write `addr` as an address of the IPv6 (`v6`) or IPv4 family; see
/// [`Session::extended_tunnel_id`] for the conversions.
fn write_in_family(w: &mut Writer<'_>, addr: IpAddr, v6: bool) {
    match (addr, v6) {
        (IpAddr::V4(a), false) => w.bytes(&a.octets()),
        (IpAddr::V6(a), true) => w.bytes(&a.octets()),
        (IpAddr::V4(a), true) => w.bytes(&a.to_ipv6_mapped().octets()),
        (IpAddr::V6(a), false) => {
            let [.., a0, a1, a2, a3] = a.octets();
            w.bytes(&[a0, a1, a2, a3]);
        }
    }
}

impl RsvpHop {
    /// An RFC 2205 RSVP_HOP (C-Type 1 or 2, by the family of `addr`).
    pub fn new(addr: IpAddr, lih: u32) -> Self {
        RsvpHop {
            addr,
            lih,
            if_id: None,
        }
    }

    /// The hop without its IF_ID TLVs: what identifies it.
    pub fn plain(&self) -> Self {
        RsvpHop::new(self.addr, self.lih)
    }

    /// Parse an RSVP_HOP body (RFC 2205 §A.2; RFC 3473 §8.1.1 for C-Types 3 and 4):
    ///
    /// ```text
    /// IPv4 RSVP_HOP object: Class = 3, C-Type = 1
    /// +-------------+-------------+-------------+-------------+
    /// |             IPv4 Next/Previous Hop Address            |
    /// +-------------+-------------+-------------+-------------+
    /// |                 Logical Interface Handle              |
    /// +-------------+-------------+-------------+-------------+
    /// IPv6 RSVP_HOP object: Class = 3, C-Type = 2 — a 16-byte address.
    /// IPv4 IF_ID RSVP_HOP object: Class = 3, C-Type = 3 — as C-Type 1, then
    /// +-------------+-------------+-------------+-------------+
    /// ~                          TLVs                         ~
    /// +-------------+-------------+-------------+-------------+
    /// IPv6 IF_ID RSVP_HOP object: Class = 3, C-Type = 4 — as C-Type 2, then the TLVs.
    /// ```
    ///
    /// The TLVs are [`IfIdTlv`]s (RFC 3471 §9.1.1); TLVs that do not fill the rest of the body
    /// exactly make the object bad.
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        let (family, fixed) = match ctype {
            ctype::IF_ID_IPV4 => (ctype::IPV4, 8),
            ctype::IF_ID_IPV6 => (ctype::IPV6, 20),
            _ => {
                check_family_body(class::RSVP_HOP, ctype, body, 8)?;
                (ctype, body.len())
            }
        };
        let bad = || ParseErrorKind::bad_object(class::RSVP_HOP, ctype);
        if body.len() < fixed {
            return Err(bad());
        }
        let mut r = Reader::new(body);
        let addr = read_addr(&mut r, family)?;
        let lih = r.u32()?;
        let if_id = match ctype {
            ctype::IF_ID_IPV4 | ctype::IF_ID_IPV6 => {
                Some(Arc::new(IfIdTlv::parse_all(r.rest()).ok_or_else(bad)?))
            }
            _ => None,
        };
        Ok(RsvpHop { addr, lih, if_id })
    }

    /// C-Type: 1 for an IPv4 hop, 2 for IPv6; 3 and 4 for their IF_ID forms.
    pub fn ctype(&self) -> u8 {
        match (self.if_id.is_some(), self.addr) {
            (false, addr) => family_ctype(addr),
            (true, IpAddr::V4(_)) => ctype::IF_ID_IPV4,
            (true, IpAddr::V6(_)) => ctype::IF_ID_IPV6,
        }
    }

    /// Object length in bytes, header included. TLVs past the 65535-byte object are not
    /// written.
    pub fn buffer_len(&self) -> usize {
        ObjectHeader::LEN
            + addr_len(self.addr)
            + 4
            + self.tlvs_written().map(IfIdTlv::buffer_len).sum::<usize>()
    }

    /// The TLVs that fit a 65535-byte object, in order.
    fn tlvs_written(&self) -> impl Iterator<Item = &IfIdTlv> {
        let room = 0xfffc - ObjectHeader::LEN - addr_len(self.addr) - 4;
        let mut used = 0;
        self.if_id
            .iter()
            .flat_map(|v| v.iter())
            .take_while(move |t| {
                used += t.buffer_len();
                used <= room
            })
    }

    /// Write the object, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        ObjectHeader::emit(
            w,
            class::RSVP_HOP,
            self.ctype(),
            self.buffer_len() - ObjectHeader::LEN,
        );
        w.ip(self.addr);
        w.u32(self.lih);
        for t in self.tlvs_written() {
            t.emit(w);
        }
    }
}

impl TimeValues {
    /// Parse a TIME_VALUES body (RFC 2205 §A.4, Class = 5, C-Type = 1): one 32-bit Refresh
    /// Period R in milliseconds.
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        if ctype != ctype::DEFAULT {
            return Err(ParseErrorKind::unknown_ctype(class::TIME_VALUES, ctype));
        }
        let refresh: [u8; 4] = body
            .try_into()
            .map_err(|_| ParseErrorKind::bad_object(class::TIME_VALUES, ctype))?;
        Ok(TimeValues {
            refresh_ms: u32::from_be_bytes(refresh),
        })
    }

    /// C-Type: always 1.
    pub fn ctype(&self) -> u8 {
        ctype::DEFAULT
    }

    /// Object length in bytes, header included.
    pub fn buffer_len(&self) -> usize {
        ObjectHeader::LEN + 4
    }

    /// Write the object, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        ObjectHeader::emit(w, class::TIME_VALUES, ctype::DEFAULT, 4);
        w.u32(self.refresh_ms);
    }
}

impl ResvConfirm {
    /// Parse a RESV_CONFIRM body (RFC 2205 §A.14): the IPv4 (C-Type 1) or IPv6 (C-Type 2)
    /// receiver address.
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        check_family_body(class::RESV_CONFIRM, ctype, body, 4)?;
        Ok(ResvConfirm {
            receiver: read_addr(&mut Reader::new(body), ctype)?,
        })
    }

    /// C-Type: 1 for an IPv4 receiver, 2 for IPv6.
    pub fn ctype(&self) -> u8 {
        family_ctype(self.receiver)
    }

    /// Object length in bytes, header included.
    pub fn buffer_len(&self) -> usize {
        ObjectHeader::LEN + addr_len(self.receiver)
    }

    /// Write the object, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        ObjectHeader::emit(
            w,
            class::RESV_CONFIRM,
            self.ctype(),
            addr_len(self.receiver),
        );
        w.ip(self.receiver);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    fn emitted(f: impl FnOnce(&mut Writer<'_>)) -> Vec<u8> {
        // Pre-fill so a write before the object's start (a bad patch) would show.
        let mut v = vec![0xa5; 3];
        f(&mut Writer::new(&mut v));
        assert_eq!(&v[..3], &[0xa5; 3]);
        v.split_off(3)
    }

    const V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x10);
    const V6_BYTES: [u8; 16] = [
        0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
    ];

    #[test]
    fn session_v4() {
        // §A.1 IPv4/UDP SESSION: length 12, class 1, C-Type 1; 10.0.0.9, UDP (17), E_Police,
        // port 5004.
        let obj = [0x00, 0x0c, 0x01, 0x01, 10, 0, 0, 9, 17, 0x01, 0x13, 0x8c];
        let s = Session {
            dest: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 9)),
            protocol_id: 17,
            flags: Session::E_POLICE,
            dst_port: 5004,
            extended_tunnel_id: None,
        };
        assert_eq!(Session::parse(1, &obj[4..]), Ok(s));
        assert_eq!(s.buffer_len(), obj.len());
        assert_eq!(emitted(|w| s.emit(w)), obj);
    }

    #[test]
    fn session_v6() {
        // §A.1 IPv6/UDP SESSION: length 24, class 1, C-Type 2.
        let mut obj = vec![0x00, 0x18, 0x01, 0x02];
        obj.extend_from_slice(&V6_BYTES);
        obj.extend_from_slice(&[6, 0x00, 0x00, 0x50]);
        let s = Session::ip(IpAddr::V6(V6), 6, 80);
        assert_eq!(Session::parse(2, &obj[4..]), Ok(s));
        assert_eq!(s.buffer_len(), obj.len());
        assert_eq!(emitted(|w| s.emit(w)), obj);
    }

    #[test]
    fn lsp_tunnel_session_v4() {
        let obj = [
            0x00, 0x10, 0x01,
            0x07, // length 16, SESSION, LSP_TUNNEL_IPv4 (RFC 3209 §4.6.1.1)
            192, 0, 2, 9, // IPv4 tunnel end point address
            0x00, 0x00, // MUST be zero
            0x00, 0x2a, // Tunnel ID 42
            198, 51, 100, 1, // Extended Tunnel ID: the ingress's address
        ];
        let s = Session::lsp_tunnel(
            IpAddr::V4(Ipv4Addr::new(192, 0, 2, 9)),
            42,
            IpAddr::V4(Ipv4Addr::new(198, 51, 100, 1)),
        );
        assert_eq!(Session::parse(7, &obj[4..]), Ok(s));
        assert_eq!((s.ctype(), s.buffer_len()), (7, obj.len()));
        assert_eq!(emitted(|w| s.emit(w)), obj);
        // "MUST be zero" is ignored on receipt, and the fields it replaces are not written.
        let mut dirty = obj;
        dirty[8] = 0xff;
        assert_eq!(Session::parse(7, &dirty[4..]), Ok(s));
        let odd = Session {
            protocol_id: 17,
            flags: Session::E_POLICE,
            ..s
        };
        assert_eq!(emitted(|w| odd.emit(w)), obj);
    }

    #[test]
    fn lsp_tunnel_session_v6() {
        let mut obj = vec![0x00, 0x28, 0x01, 0x08]; // length 40, SESSION, LSP_TUNNEL_IPv6
        obj.extend_from_slice(&V6_BYTES); // IPv6 tunnel end point address
        obj.extend_from_slice(&[0x00, 0x00, 0xff, 0xff]); // MUST be zero, Tunnel ID 65535
        obj.extend_from_slice(&[0; 16]); // Extended Tunnel ID, all zeros
        let s = Session::lsp_tunnel(IpAddr::V6(V6), 0xffff, IpAddr::V6(Ipv6Addr::UNSPECIFIED));
        assert_eq!(Session::parse(8, &obj[4..]), Ok(s));
        assert_eq!((s.ctype(), s.buffer_len()), (8, 40));
        assert_eq!(emitted(|w| s.emit(w)), obj);
    }

    #[test]
    fn lsp_tunnel_extended_id_of_the_other_family() {
        let v4 = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
        let s = Session::lsp_tunnel(IpAddr::V6(V6), 1, v4);
        let b = emitted(|w| s.emit(w));
        assert_eq!(b.len(), s.buffer_len());
        assert_eq!(
            Session::parse(8, &b[4..]).map(|s| s.extended_tunnel_id),
            Ok(Some(IpAddr::V6(
                Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped()
            )))
        );
        let s = Session::lsp_tunnel(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), 1, IpAddr::V6(V6));
        let b = emitted(|w| s.emit(w));
        assert_eq!(b.len(), s.buffer_len());
        assert_eq!(&b[12..], &[0, 0, 0, 0x10]);
    }

    #[test]
    fn session_errors() {
        assert_eq!(
            Session::parse(3, &[0; 8]),
            Err(ParseErrorKind::UnknownCType { class: 1, ctype: 3 })
        );
        for (ctype, len) in [(7, 8), (7, 36), (8, 12), (8, 32)] {
            assert_eq!(
                Session::parse(ctype, &vec![0; len]),
                Err(ParseErrorKind::BadObject { class: 1, ctype }),
                "C-Type {ctype}, {len} bytes"
            );
        }
        // A C-Type 1 body of IPv6 size, and a short one.
        assert_eq!(
            Session::parse(1, &[0; 20]),
            Err(ParseErrorKind::BadObject { class: 1, ctype: 1 })
        );
        assert_eq!(
            Session::parse(2, &[0; 8]),
            Err(ParseErrorKind::BadObject { class: 1, ctype: 2 })
        );
    }

    #[test]
    fn rsvp_hop_v4_v6() {
        // §A.2 IPv4 RSVP_HOP: length 12, class 3, C-Type 1; 192.0.2.1, LIH 7.
        let obj = [0x00, 0x0c, 0x03, 0x01, 192, 0, 2, 1, 0, 0, 0, 7];
        let h = RsvpHop::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)), 7);
        assert_eq!(RsvpHop::parse(1, &obj[4..]), Ok(h.clone()));
        assert_eq!(emitted(|w| h.emit(w)), obj);
        // IPv6 RSVP_HOP: length 24, class 3, C-Type 2.
        let mut obj = vec![0x00, 0x18, 0x03, 0x02];
        obj.extend_from_slice(&V6_BYTES);
        obj.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        let h = RsvpHop::new(IpAddr::V6(V6), 0xdead_beef);
        assert_eq!(RsvpHop::parse(2, &obj[4..]), Ok(h.clone()));
        assert_eq!(h.buffer_len(), 24);
        assert_eq!(emitted(|w| h.emit(w)), obj);
        assert_eq!(
            RsvpHop::parse(9, &obj[4..]),
            Err(ParseErrorKind::UnknownCType { class: 3, ctype: 9 })
        );
        assert_eq!(
            RsvpHop::parse(1, &obj[4..]),
            Err(ParseErrorKind::BadObject { class: 3, ctype: 1 })
        );
    }

    #[test]
    fn if_id_rsvp_hop_v4() {
        // RFC 3473 §8.1.1 IPv4 IF_ID RSVP_HOP, as KOM sends it (kom-head-end-path-if-id-hop.pcap,
        // frame 1): length 20, class 3, C-Type 3; 10.200.0.1, LIH 1, TLV IPv4 0.0.0.0.
        let obj = [
            0x00, 0x14, 0x03, 0x03, 10, 200, 0, 1, 0, 0, 0, 1, // address, LIH
            0x00, 0x01, 0x00, 0x08, 0, 0, 0, 0, // TLV type 1, length 8
        ];
        let h = RsvpHop {
            addr: IpAddr::V4(Ipv4Addr::new(10, 200, 0, 1)),
            lih: 1,
            if_id: Some(Arc::new(vec![IfIdTlv::Ipv4(Ipv4Addr::UNSPECIFIED)])),
        };
        assert_eq!(RsvpHop::parse(3, &obj[4..]), Ok(h.clone()));
        assert_eq!(h.ctype(), 3);
        assert_eq!(h.buffer_len(), 20);
        assert_eq!(emitted(|w| h.emit(w)), obj);
        assert_eq!(h.plain(), RsvpHop::new(h.addr, 1));
        // Without TLVs (RFC 3473 §8.1.2 says it SHOULD NOT be sent so, but it parses).
        let bare = RsvpHop {
            if_id: Some(Arc::new(Vec::new())),
            ..h.clone()
        };
        assert_eq!(RsvpHop::parse(3, &obj[4..12]), Ok(bare.clone()));
        assert_eq!(
            emitted(|w| bare.emit(w)),
            [&[0, 12, 3, 3][..], &obj[4..12]].concat()
        );
    }

    #[test]
    fn if_id_rsvp_hop_v6() {
        // C-Type 4: 16-byte address, LIH, then an IF_INDEX TLV.
        let mut obj = vec![0x00, 0x24, 0x03, 0x04];
        obj.extend_from_slice(&V6_BYTES);
        obj.extend_from_slice(&[0, 0, 0, 5, 0, 3, 0, 12, 10, 0, 0, 1, 0, 0, 0, 42]);
        let h = RsvpHop {
            addr: IpAddr::V6(V6),
            lih: 5,
            if_id: Some(Arc::new(vec![IfIdTlv::IfIndex {
                addr: Ipv4Addr::new(10, 0, 0, 1),
                id: 42,
            }])),
        };
        assert_eq!(RsvpHop::parse(4, &obj[4..]), Ok(h.clone()));
        assert_eq!(h.ctype(), 4);
        assert_eq!(emitted(|w| h.emit(w)), obj);
    }

    #[test]
    fn if_id_rsvp_hop_impossible_lengths() {
        let bad = |ctype, body: &[u8]| {
            assert_eq!(
                RsvpHop::parse(ctype, body),
                Err(ParseErrorKind::BadObject { class: 3, ctype }),
                "C-Type {ctype}, {body:?}"
            );
        };
        bad(3, &[10, 0, 0, 1]); // no LIH
        bad(3, &[10, 0, 0, 1, 0, 0, 0, 1, 0, 1, 0, 8]); // TLV cut
        bad(3, &[10, 0, 0, 1, 0, 0, 0, 1, 0, 1, 0, 2]); // TLV Length below 4
        bad(4, &[0; 16]); // IPv6 address, no LIH
        bad(4, &[0; 12]);
        // The RFC 2205 forms keep their exact sizes.
        bad(1, &[0; 12]);
        bad(2, &[0; 24]);
    }

    #[test]
    fn time_values() {
        // §A.4 TIME_VALUES: length 8, class 5, C-Type 1; R = 30 s.
        let obj = [0x00, 0x08, 0x05, 0x01, 0x00, 0x00, 0x75, 0x30];
        let t = TimeValues { refresh_ms: 30_000 };
        assert_eq!(TimeValues::parse(1, &obj[4..]), Ok(t));
        assert_eq!(t.buffer_len(), 8);
        assert_eq!(emitted(|w| t.emit(w)), obj);
        assert_eq!(
            TimeValues::parse(2, &obj[4..]),
            Err(ParseErrorKind::UnknownCType { class: 5, ctype: 2 })
        );
        assert_eq!(
            TimeValues::parse(1, &[0; 8]),
            Err(ParseErrorKind::BadObject { class: 5, ctype: 1 })
        );
    }

    #[test]
    fn resv_confirm() {
        // §A.14 IPv4 RESV_CONFIRM: length 8, class 15, C-Type 1.
        let obj = [0x00, 0x08, 0x0f, 0x01, 10, 1, 2, 3];
        let c = ResvConfirm {
            receiver: IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3)),
        };
        assert_eq!(ResvConfirm::parse(1, &obj[4..]), Ok(c));
        assert_eq!(emitted(|w| c.emit(w)), obj);
        // IPv6: length 20, C-Type 2.
        let mut obj = vec![0x00, 0x14, 0x0f, 0x02];
        obj.extend_from_slice(&V6_BYTES);
        let c = ResvConfirm {
            receiver: IpAddr::V6(V6),
        };
        assert_eq!(ResvConfirm::parse(2, &obj[4..]), Ok(c));
        assert_eq!(c.buffer_len(), 20);
        assert_eq!(emitted(|w| c.emit(w)), obj);
        assert_eq!(
            ResvConfirm::parse(1, &[0; 5]),
            Err(ParseErrorKind::BadObject {
                class: 15,
                ctype: 1
            })
        );
    }
}
