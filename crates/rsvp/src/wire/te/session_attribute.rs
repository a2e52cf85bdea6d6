//! SESSION_ATTRIBUTE (RFC 3209 §4.7).

use pathwise_core::wire::{Reader, Writer};

use super::{class, ctype};
use crate::wire::ParseErrorKind;
use crate::wire::objects::ObjectHeader;

/// SESSION_ATTRIBUTE (RFC 3209 §4.7): the tunnel's priorities, what it asks of transit nodes,
/// and its name. LSP_TUNNEL_RA (C-Type 1) when it carries resource affinities, LSP_TUNNEL
/// (C-Type 7) when not.
///
/// The session name is kept as bytes: RFC 3209 calls it a "display string" without naming a
/// character set, and bytes survive a round trip whatever the sender put there. A name longer
/// than 255 bytes (what Name Length can count) is written cut to 255.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SessionAttribute {
    /// Resource affinities (C-Type 1), or `None` (C-Type 7).
    pub affinities: Option<ResourceAffinities>,
    /// Setup Priority: 0 (highest) to 7, for taking resources. Kept as received; the range is
    /// the engine's to check.
    pub setup_priority: u8,
    /// Holding Priority: 0 (highest) to 7, for keeping resources.
    pub holding_priority: u8,
    /// Flags: [`SessionAttribute::LOCAL_PROTECTION_DESIRED`],
    /// [`SessionAttribute::LABEL_RECORDING_DESIRED`], [`SessionAttribute::SE_STYLE_DESIRED`];
    /// other bits kept as received.
    pub flags: u8,
    /// Session Name, without its padding.
    pub name: Vec<u8>,
}

/// Resource affinities (RFC 3209 §4.7.2): 32-bit sets of link attributes (colours) a link is
/// tested against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct ResourceAffinities {
    /// Exclude-any: a link with any of these attributes is unacceptable.
    pub exclude_any: u32,
    /// Include-any: a link needs at least one of these (an empty set always passes).
    pub include_any: u32,
    /// Include-all: a link needs all of these (an empty set always passes).
    pub include_all: u32,
}

impl SessionAttribute {
    /// Flag: transit nodes may repair the LSP locally, even against the EXPLICIT_ROUTE.
    pub const LOCAL_PROTECTION_DESIRED: u8 = 0x01;
    /// Flag: record labels in the RECORD_ROUTE.
    pub const LABEL_RECORDING_DESIRED: u8 = 0x02;
    /// Flag: the ingress may reroute without tearing down; the egress SHOULD answer with SE.
    pub const SE_STYLE_DESIRED: u8 = 0x04;
    /// The longest name Name Length can describe.
    pub const MAX_NAME_LEN: usize = 255;

    /// Parse a SESSION_ATTRIBUTE body (RFC 3209 §4.7.1, §4.7.2):
    ///
    /// ```text
    /// LSP_TUNNEL_RA: Class = 207, C-Type = 1
    /// +-------------+-------------+-------------+-------------+
    /// |                      Exclude-any                      |
    /// +-------------+-------------+-------------+-------------+
    /// |                      Include-any                      |
    /// +-------------+-------------+-------------+-------------+
    /// |                      Include-all                      |
    /// +-------------+-------------+-------------+-------------+
    /// LSP_TUNNEL: Class = 207, C-Type = 7 — the above without the first three words:
    /// +-------------+-------------+-------------+-------------+
    /// | Setup Prio  |Holding Prio |    Flags    | Name Length |
    /// +-------------+-------------+-------------+-------------+
    /// //       Session Name (NULL padded display string)     //
    /// +-------------+-------------+-------------+-------------+
    /// ```
    ///
    /// Name Length is the length before padding; the name is padded to a multiple of 4 bytes,
    /// so the body must be exactly the fixed words plus Name Length rounded up to 4. The padding
    /// is ignored on receipt and written as zeros.
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        let ra = match ctype {
            ctype::SESSION_ATTRIBUTE_RA => true,
            ctype::SESSION_ATTRIBUTE => false,
            _ => {
                return Err(ParseErrorKind::unknown_ctype(
                    class::SESSION_ATTRIBUTE,
                    ctype,
                ));
            }
        };
        let bad = || ParseErrorKind::bad_object(class::SESSION_ATTRIBUTE, ctype);
        let mut r = Reader::new(body);
        let affinities = if ra {
            Some(ResourceAffinities {
                exclude_any: r.u32().map_err(|_| bad())?,
                include_any: r.u32().map_err(|_| bad())?,
                include_all: r.u32().map_err(|_| bad())?,
            })
        } else {
            None
        };
        let [setup_priority, holding_priority, flags, name_len] = r.array().map_err(|_| bad())?;
        let name_len = usize::from(name_len);
        if r.remaining() != name_len.next_multiple_of(4) {
            return Err(bad());
        }
        Ok(SessionAttribute {
            affinities,
            setup_priority,
            holding_priority,
            flags,
            name: r.bytes(name_len)?.to_vec(),
        })
    }

    /// C-Type: 1 with resource affinities, 7 without.
    pub fn ctype(&self) -> u8 {
        if self.affinities.is_some() {
            ctype::SESSION_ATTRIBUTE_RA
        } else {
            ctype::SESSION_ATTRIBUTE
        }
    }

    /// The name as written: at most [`SessionAttribute::MAX_NAME_LEN`] bytes.
    fn written_name(&self) -> &[u8] {
        &self.name[..self.name.len().min(Self::MAX_NAME_LEN)]
    }

    /// Object length in bytes, header included.
    pub fn buffer_len(&self) -> usize {
        let affinities = if self.affinities.is_some() { 12 } else { 0 };
        ObjectHeader::LEN + affinities + 4 + self.written_name().len().next_multiple_of(4)
    }

    /// Write the object, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        ObjectHeader::emit(
            w,
            class::SESSION_ATTRIBUTE,
            self.ctype(),
            self.buffer_len() - ObjectHeader::LEN,
        );
        if let Some(a) = self.affinities {
            w.u32(a.exclude_any);
            w.u32(a.include_any);
            w.u32(a.include_all);
        }
        let name = self.written_name();
        w.u8(self.setup_priority);
        w.u8(self.holding_priority);
        w.u8(self.flags);
        w.u8(name.len() as u8); // at most MAX_NAME_LEN
        w.bytes(name);
        w.zeros(name.len().next_multiple_of(4) - name.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::te::emitted;

    #[test]
    fn lsp_tunnel_without_affinities() {
        let obj = [
            0x00, 0x10, 0xcf, 0x07, // length 16, SESSION_ATTRIBUTE, LSP_TUNNEL C-Type 7
            0x07, 0x00, // Setup Prio 7, Holding Prio 0
            0x06, 0x05, // Flags: label recording, SE style; Name Length 5
            b'c', b'o', b'r', b'e', // Session Name
            b'1', 0x00, 0x00, 0x00, // … and NULL padding to 4 bytes
        ];
        let a = SessionAttribute {
            affinities: None,
            setup_priority: 7,
            holding_priority: 0,
            flags: SessionAttribute::LABEL_RECORDING_DESIRED | SessionAttribute::SE_STYLE_DESIRED,
            name: b"core1".to_vec(),
        };
        assert_eq!(SessionAttribute::parse(7, &obj[4..]), Ok(a.clone()));
        assert_eq!(a.buffer_len(), obj.len());
        assert_eq!(emitted(|w| a.emit(w)), obj);
        // Padding is ignored on receipt.
        let mut dirty = obj;
        dirty[15] = b'x';
        assert_eq!(SessionAttribute::parse(7, &dirty[4..]), Ok(a));
    }

    #[test]
    fn lsp_tunnel_ra_with_affinities() {
        let obj = [
            0x00, 0x18, 0xcf, 0x01, // length 24, SESSION_ATTRIBUTE, LSP_TUNNEL_RA C-Type 1
            0x00, 0x00, 0x00, 0x01, // Exclude-any
            0x00, 0x00, 0x00, 0x06, // Include-any
            0x80, 0x00, 0x00, 0x00, // Include-all
            0x03, 0x03, // Setup Prio 3, Holding Prio 3
            0x01, 0x04, // Flags: local protection; Name Length 4
            0xff, 0xfe, b'T', 0x00, // Session Name: not UTF-8, with a NUL inside; no padding
        ];
        let a = SessionAttribute {
            affinities: Some(ResourceAffinities {
                exclude_any: 1,
                include_any: 6,
                include_all: 0x8000_0000,
            }),
            setup_priority: 3,
            holding_priority: 3,
            flags: SessionAttribute::LOCAL_PROTECTION_DESIRED,
            name: vec![0xff, 0xfe, b'T', 0],
        };
        assert_eq!(SessionAttribute::parse(1, &obj[4..]), Ok(a.clone()));
        assert_eq!(a.buffer_len(), obj.len());
        assert_eq!(emitted(|w| a.emit(w)), obj);
    }

    #[test]
    fn empty_and_overlong_names() {
        let empty = SessionAttribute {
            affinities: None,
            setup_priority: 0,
            holding_priority: 0,
            flags: 0,
            name: vec![],
        };
        assert_eq!(emitted(|w| empty.emit(w)), [0, 8, 0xcf, 7, 0, 0, 0, 0]);
        assert_eq!(SessionAttribute::parse(7, &[0, 0, 0, 0]), Ok(empty));
        let long = SessionAttribute {
            affinities: None,
            setup_priority: 1,
            holding_priority: 1,
            flags: 0,
            name: vec![b'a'; 300],
        };
        let b = emitted(|w| long.emit(w));
        assert_eq!(b.len(), long.buffer_len());
        assert_eq!(b.len(), 4 + 4 + 256);
        assert_eq!(b[7], 255);
        let back = SessionAttribute::parse(7, &b[4..]).unwrap();
        assert_eq!(back.name, vec![b'a'; 255]);
    }

    #[test]
    fn errors() {
        assert_eq!(
            SessionAttribute::parse(2, &[0; 4]),
            Err(ParseErrorKind::UnknownCType {
                class: 207,
                ctype: 2
            })
        );
        let bad = |ctype| Err(ParseErrorKind::BadObject { class: 207, ctype });
        for body in [
            &[][..],                                  // no fixed word
            &[0, 0, 0, 5, b'a', b'b', 0, 0],          // Name Length 5 in 4 bytes
            &[0, 0, 0, 1, b'a', 0, 0, 0, 0, 0, 0, 0], // a name of 1 padded to 8
            &[0, 0, 0, 4],                            // Name Length 4, no name
        ] {
            assert_eq!(SessionAttribute::parse(7, body), bad(7), "{body:?}");
        }
        // C-Type 1 needs the three affinity words first.
        assert_eq!(SessionAttribute::parse(1, &[0, 0, 0, 0]), bad(1));
        assert_eq!(SessionAttribute::parse(1, &[0; 12]), bad(1));
        assert!(SessionAttribute::parse(1, &[0; 16]).is_ok());
    }
}
