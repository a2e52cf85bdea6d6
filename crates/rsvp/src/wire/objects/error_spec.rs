//! ERROR_SPEC (§A.5), SCOPE (§A.6) and STYLE (§A.7).

use std::net::IpAddr;

use pathwise_core::wire::{Reader, Writer};

use super::{
    ErrorSpec, ObjectHeader, Scope, Style, StyleKind, addr_len, check_family_body, class, ctype,
    family_ctype, read_addr,
};
use crate::wire::ParseErrorKind;

impl ErrorSpec {
    /// Parse an ERROR_SPEC body (RFC 2205 §A.5):
    ///
    /// ```text
    /// IPv4 ERROR_SPEC object: Class = 6, C-Type = 1
    /// +-------------+-------------+-------------+-------------+
    /// |            IPv4 Error Node Address (4 bytes)          |
    /// +-------------+-------------+-------------+-------------+
    /// |    Flags    |  Error Code |        Error Value        |
    /// +-------------+-------------+-------------+-------------+
    /// IPv6 ERROR_SPEC object: Class = 6, C-Type = 2 — a 16-byte address.
    /// ```
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        check_family_body(class::ERROR_SPEC, ctype, body, 8)?;
        let mut r = Reader::new(body);
        Ok(ErrorSpec {
            node: read_addr(&mut r, ctype)?,
            flags: r.u8()?,
            code: r.u8()?,
            value: r.u16()?,
        })
    }

    /// C-Type: 1 for an IPv4 error node, 2 for IPv6.
    pub fn ctype(&self) -> u8 {
        family_ctype(self.node)
    }

    /// Object length in bytes, header included.
    pub fn buffer_len(&self) -> usize {
        ObjectHeader::LEN + addr_len(self.node) + 4
    }

    /// Write the object, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        ObjectHeader::emit(
            w,
            class::ERROR_SPEC,
            self.ctype(),
            self.buffer_len() - ObjectHeader::LEN,
        );
        w.ip(self.node);
        w.u8(self.flags);
        w.u8(self.code);
        w.u16(self.value);
    }
}

impl Scope {
    /// Parse a SCOPE body (RFC 2205 §A.6): a list of IPv4 (C-Type 1) or IPv6 (C-Type 2) sender
    /// addresses. An empty list is [`ParseErrorKind::BadObject`]: it names no sender.
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        let size = match ctype {
            ctype::IPV4 => 4,
            ctype::IPV6 => 16,
            _ => return Err(ParseErrorKind::unknown_ctype(class::SCOPE, ctype)),
        };
        if body.is_empty() || !body.len().is_multiple_of(size) {
            return Err(ParseErrorKind::bad_object(class::SCOPE, ctype));
        }
        let mut r = Reader::new(body);
        let mut addrs = Vec::with_capacity(body.len() / size);
        while !r.is_empty() {
            addrs.push(read_addr(&mut r, ctype)?);
        }
        Ok(Scope { addrs })
    }

    /// C-Type: the family of the first address (1 for IPv4, also for an empty list).
    pub fn ctype(&self) -> u8 {
        self.addrs.first().map_or(ctype::IPV4, |a| family_ctype(*a))
    }

    /// The addresses that are emitted: those of the first address's family. A SCOPE carries one
    /// family only, so addresses of the other family cannot be represented and are left out.
    fn emitted(&self) -> impl Iterator<Item = IpAddr> + '_ {
        let ctype = self.ctype();
        self.addrs
            .iter()
            .copied()
            .filter(move |a| family_ctype(*a) == ctype)
    }

    /// Object length in bytes, header included.
    pub fn buffer_len(&self) -> usize {
        ObjectHeader::LEN + self.emitted().map(addr_len).sum::<usize>()
    }

    /// Write the object, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        ObjectHeader::emit(
            w,
            class::SCOPE,
            self.ctype(),
            self.buffer_len() - ObjectHeader::LEN,
        );
        for a in self.emitted() {
            w.ip(a);
        }
    }
}

/// Option vector bits (RFC 2205 §A.7): sharing control in bits 4–3 (01 distinct, 10 shared),
/// sender selection in bits 2–0 (001 wildcard, 010 explicit).
mod vector {
    pub const WF: u32 = 0b10_001;
    pub const FF: u32 = 0b01_010;
    pub const SE: u32 = 0b10_010;
    /// The option vector is 24 bits wide.
    pub const MASK: u32 = 0x00ff_ffff;
}

impl StyleKind {
    /// The style an option vector names; anything but the exact WF, FF or SE vectors is
    /// [`StyleKind::Other`].
    pub fn from_option_vector(v: u32) -> StyleKind {
        match v & vector::MASK {
            vector::WF => StyleKind::Wf,
            vector::FF => StyleKind::Ff,
            vector::SE => StyleKind::Se,
            other => StyleKind::Other(other),
        }
    }

    /// The 24-bit option vector (`Other` values are truncated to 24 bits).
    pub fn option_vector(&self) -> u32 {
        match *self {
            StyleKind::Wf => vector::WF,
            StyleKind::Ff => vector::FF,
            StyleKind::Se => vector::SE,
            StyleKind::Other(v) => v & vector::MASK,
        }
    }
}

impl Style {
    /// Wildcard-Filter with no flags.
    pub const WF: Style = Style {
        flags: 0,
        kind: StyleKind::Wf,
    };
    /// Fixed-Filter with no flags.
    pub const FF: Style = Style {
        flags: 0,
        kind: StyleKind::Ff,
    };
    /// Shared-Explicit with no flags.
    pub const SE: Style = Style {
        flags: 0,
        kind: StyleKind::Se,
    };

    /// Parse a STYLE body (RFC 2205 §A.7, Class = 8, C-Type = 1):
    ///
    /// ```text
    /// +-------------+-------------+-------------+-------------+
    /// |   Flags     |              Option Vector              |
    /// +-------------+-------------+-------------+-------------+
    /// ```
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        if ctype != ctype::DEFAULT {
            return Err(ParseErrorKind::unknown_ctype(class::STYLE, ctype));
        }
        let word: [u8; 4] = body
            .try_into()
            .map_err(|_| ParseErrorKind::bad_object(class::STYLE, ctype))?;
        let word = u32::from_be_bytes(word);
        Ok(Style {
            flags: word.to_be_bytes()[0],
            kind: StyleKind::from_option_vector(word),
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
        ObjectHeader::emit(w, class::STYLE, ctype::DEFAULT, 4);
        w.u8(self.flags);
        w.u24(self.kind.option_vector());
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

    #[test]
    fn error_spec_v4_v6() {
        // §A.5 IPv4 ERROR_SPEC: length 12, class 6, C-Type 1; node 10.0.0.1, InPlace, code 1
        // (admission control failure), value 2 (bandwidth unavailable).
        let obj = [0x00, 0x0c, 0x06, 0x01, 10, 0, 0, 1, 0x01, 0x01, 0x00, 0x02];
        let e = ErrorSpec {
            node: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            flags: ErrorSpec::IN_PLACE,
            code: 1,
            value: 2,
        };
        assert_eq!(ErrorSpec::parse(1, &obj[4..]), Ok(e));
        assert_eq!(e.buffer_len(), 12);
        assert_eq!(emitted(|w| e.emit(w)), obj);
        // IPv6 ERROR_SPEC: length 24, C-Type 2; NotGuilty, code 13, value 0x4201.
        let mut obj = vec![0x00, 0x18, 0x06, 0x02];
        obj.extend_from_slice(&Ipv6Addr::LOCALHOST.octets());
        obj.extend_from_slice(&[0x02, 13, 0x42, 0x01]);
        let e = ErrorSpec {
            node: IpAddr::V6(Ipv6Addr::LOCALHOST),
            flags: ErrorSpec::NOT_GUILTY,
            code: 13,
            value: 0x4201,
        };
        assert_eq!(ErrorSpec::parse(2, &obj[4..]), Ok(e));
        assert_eq!(emitted(|w| e.emit(w)), obj);
        assert_eq!(
            ErrorSpec::parse(4, &obj[4..]),
            Err(ParseErrorKind::UnknownCType { class: 6, ctype: 4 })
        );
        assert_eq!(
            ErrorSpec::parse(2, &obj[8..]),
            Err(ParseErrorKind::BadObject { class: 6, ctype: 2 })
        );
    }

    #[test]
    fn scope_v4_v6() {
        // §A.6 IPv4 SCOPE: length 12, class 7, C-Type 1; two senders.
        let obj = [0x00, 0x0c, 0x07, 0x01, 10, 0, 0, 1, 10, 0, 0, 2];
        let s = Scope {
            addrs: vec![
                IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
                IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            ],
        };
        assert_eq!(Scope::parse(1, &obj[4..]), Ok(s.clone()));
        assert_eq!(s.buffer_len(), 12);
        assert_eq!(emitted(|w| s.emit(w)), obj);
        // IPv6 SCOPE: length 20, C-Type 2; one sender.
        let mut obj = vec![0x00, 0x14, 0x07, 0x02];
        obj.extend_from_slice(&Ipv6Addr::LOCALHOST.octets());
        let s = Scope {
            addrs: vec![IpAddr::V6(Ipv6Addr::LOCALHOST)],
        };
        assert_eq!(Scope::parse(2, &obj[4..]), Ok(s.clone()));
        assert_eq!(emitted(|w| s.emit(w)), obj);
    }

    #[test]
    fn scope_errors_and_mixed_families() {
        assert_eq!(
            Scope::parse(1, &[]),
            Err(ParseErrorKind::BadObject { class: 7, ctype: 1 })
        );
        assert_eq!(
            Scope::parse(2, &[0; 20]),
            Err(ParseErrorKind::BadObject { class: 7, ctype: 2 })
        );
        assert_eq!(
            Scope::parse(3, &[0; 4]),
            Err(ParseErrorKind::UnknownCType { class: 7, ctype: 3 })
        );
        // Only the first address's family is representable.
        let s = Scope {
            addrs: vec![
                IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
                IpAddr::V6(Ipv6Addr::LOCALHOST),
            ],
        };
        let bytes = emitted(|w| s.emit(w));
        assert_eq!(bytes, [0x00, 0x08, 0x07, 0x01, 10, 0, 0, 1]);
        assert_eq!(s.buffer_len(), bytes.len());
    }

    #[test]
    fn style_vectors() {
        // §A.7 STYLE: length 8, class 8, C-Type 1; option vectors WF 10001b, FF 01010b,
        // SE 10010b.
        for (kind, vector) in [
            (StyleKind::Wf, 0x11),
            (StyleKind::Ff, 0x0a),
            (StyleKind::Se, 0x12),
            (StyleKind::Other(0x00_0013), 0x13),
        ] {
            let obj = [0x00, 0x08, 0x08, 0x01, 0x00, 0x00, 0x00, vector];
            let s = Style { flags: 0, kind };
            assert_eq!(Style::parse(1, &obj[4..]), Ok(s));
            assert_eq!(s.buffer_len(), 8);
            assert_eq!(emitted(|w| s.emit(w)), obj);
        }
        // Flags and the full 24-bit vector survive.
        let s = Style::parse(1, &[0x80, 0x12, 0x34, 0x56]);
        assert_eq!(
            s,
            Ok(Style {
                flags: 0x80,
                kind: StyleKind::Other(0x12_3456)
            })
        );
        assert_eq!(
            Style::parse(2, &[0; 4]),
            Err(ParseErrorKind::UnknownCType { class: 8, ctype: 2 })
        );
        assert_eq!(
            Style::parse(1, &[0; 8]),
            Err(ParseErrorKind::BadObject { class: 8, ctype: 1 })
        );
        assert_eq!(StyleKind::Other(0xff_000011).option_vector(), 0x11);
    }
}
