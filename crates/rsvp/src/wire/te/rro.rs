//! RECORD_ROUTE (RFC 3209 §4.4).

use std::net::{Ipv4Addr, Ipv6Addr};

use pathwise_core::wire::{Reader, Writer};

use super::{class, ctype, raw_subobject_len, read_subobject, write_raw_contents};
use crate::wire::ParseErrorKind;
use crate::wire::objects::ObjectHeader;

/// RECORD_ROUTE (RFC 3209 §4.4, C-Type 1): the route an LSP actually took, most recent hop
/// first (§4.4.1: subobjects form a last-in-first-out stack, a new one added at the top).
///
/// An empty list is written as an empty body, which [`parse`](RecordRoute::parse) refuses
/// (§4.4.1: "An empty RRO with no subobjects is considered illegal").
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RecordRoute {
    /// The subobjects, top (most recently added) first.
    pub subobjects: Vec<RroSubobject>,
}

/// One RECORD_ROUTE subobject (RFC 3209 §4.4.1.1–§4.4.1.3).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RroSubobject {
    /// Type 1, IPv4 address (Length 8). `prefix_len` is 32 per §4.4.1.1; other values up to 32
    /// are kept as received rather than refused.
    Ipv4 {
        /// A unicast host address of the recording node.
        addr: Ipv4Addr,
        /// Prefix length (32).
        prefix_len: u8,
        /// [`RroSubobject::LOCAL_PROTECTION_AVAILABLE`],
        /// [`RroSubobject::LOCAL_PROTECTION_IN_USE`]; other bits kept as received.
        flags: u8,
    },
    /// Type 2, IPv6 address (Length 20). `prefix_len` is 128 per §4.4.1.2.
    Ipv6 {
        /// A unicast host address of the recording node.
        addr: Ipv6Addr,
        /// Prefix length (128).
        prefix_len: u8,
        /// The same flags as the IPv4 form.
        flags: u8,
    },
    /// Type 3, Label (§4.4.1.3): a copy of a LABEL object's C-Type and contents.
    Label {
        /// [`RroSubobject::GLOBAL_LABEL`]; other bits kept as received.
        flags: u8,
        /// C-Type of the LABEL object copied (1 for RFC 3209's 32-bit label).
        ctype: u8,
        /// The LABEL object's contents: 4 bytes for C-Type 1, longer for RFC 3473's
        /// generalized labels. Zero-padded to a multiple of 4 and cut at 248 bytes when written.
        contents: Vec<u8>,
    },
    /// A subobject type this codec does not interpret, kept so it round-trips; `contents` (the
    /// bytes after Type and Length) are zero-padded so the subobject is a multiple of 4 bytes,
    /// and cut at 250 bytes.
    Other {
        /// Type.
        subobject_type: u8,
        /// The subobject after its 2-byte Type/Length header.
        contents: Vec<u8>,
    },
}

impl RroSubobject {
    /// Type of an IPv4 address subobject.
    pub const IPV4: u8 = 1;
    /// Type of an IPv6 address subobject.
    pub const IPV6: u8 = 2;
    /// Type of a Label subobject.
    pub const LABEL: u8 = 3;
    /// Address flag: the recording node can protect the LSP locally (a backup path exists).
    pub const LOCAL_PROTECTION_AVAILABLE: u8 = 0x01;
    /// Address flag: local protection is in use (the LSP is on the backup path).
    pub const LOCAL_PROTECTION_IN_USE: u8 = 0x02;
    /// Label flag: the label is understood on any interface.
    pub const GLOBAL_LABEL: u8 = 0x01;

    /// The subobject's Type.
    pub fn subobject_type(&self) -> u8 {
        match self {
            RroSubobject::Ipv4 { .. } => Self::IPV4,
            RroSubobject::Ipv6 { .. } => Self::IPV6,
            RroSubobject::Label { .. } => Self::LABEL,
            RroSubobject::Other { subobject_type, .. } => *subobject_type,
        }
    }

    /// The 32-bit label of a Label subobject copied from a C-Type 1 LABEL.
    pub fn label(&self) -> Option<u32> {
        match self {
            RroSubobject::Label {
                ctype: ctype::LABEL,
                contents,
                ..
            } => contents.as_slice().try_into().ok().map(u32::from_be_bytes),
            _ => None,
        }
    }

    /// Subobject length in bytes (its Length field).
    pub fn buffer_len(&self) -> usize {
        match self {
            RroSubobject::Ipv4 { .. } => 8,
            RroSubobject::Ipv6 { .. } => 20,
            RroSubobject::Label { contents, .. } => raw_subobject_len(4, contents),
            RroSubobject::Other { contents, .. } => raw_subobject_len(2, contents),
        }
    }

    /// Decode one subobject from its Type and its contents after the Length; `None` if a known
    /// type has the wrong length or an impossible prefix length.
    fn decode(subobject_type: u8, contents: &[u8]) -> Option<Self> {
        let mut r = Reader::new(contents);
        Some(match (subobject_type, contents.len()) {
            (Self::IPV4, 6) => {
                let addr = r.ipv4().ok()?;
                let prefix_len = r.u8().ok().filter(|&p| p <= 32)?;
                RroSubobject::Ipv4 {
                    addr,
                    prefix_len,
                    flags: r.u8().ok()?,
                }
            }
            (Self::IPV6, 18) => {
                let addr = r.ipv6().ok()?;
                let prefix_len = r.u8().ok().filter(|&p| p <= 128)?;
                RroSubobject::Ipv6 {
                    addr,
                    prefix_len,
                    flags: r.u8().ok()?,
                }
            }
            // A LABEL object has at least one word of contents.
            (Self::LABEL, n) if n >= 6 => RroSubobject::Label {
                flags: r.u8().ok()?,
                ctype: r.u8().ok()?,
                contents: r.rest().to_vec(),
            },
            (Self::IPV4 | Self::IPV6 | Self::LABEL, _) => return None,
            _ => RroSubobject::Other {
                subobject_type,
                contents: contents.to_vec(),
            },
        })
    }

    fn emit(&self, w: &mut Writer<'_>) {
        let len = self.buffer_len();
        w.u8(self.subobject_type());
        w.u8(len as u8); // at most MAX_SUBOBJECT_LEN
        match self {
            RroSubobject::Ipv4 {
                addr,
                prefix_len,
                flags,
            } => {
                w.bytes(&addr.octets());
                w.u8(*prefix_len);
                w.u8(*flags);
            }
            RroSubobject::Ipv6 {
                addr,
                prefix_len,
                flags,
            } => {
                w.bytes(&addr.octets());
                w.u8(*prefix_len);
                w.u8(*flags);
            }
            RroSubobject::Label {
                flags,
                ctype,
                contents,
            } => {
                w.u8(*flags);
                w.u8(*ctype);
                write_raw_contents(w, len, 4, contents);
            }
            RroSubobject::Other { contents, .. } => write_raw_contents(w, len, 2, contents),
        }
    }
}

impl RecordRoute {
    /// Parse a RECORD_ROUTE body (RFC 3209 §4.4.1): a non-empty series of subobjects, each
    /// a Type byte, a Length byte counting the whole subobject ("MUST always be a multiple of
    /// 4, and at least 4") and its contents:
    ///
    /// ```text
    /// IPv4 address (Type 1, Length 8)
    /// +-------------+-------------+-------------+-------------+
    /// |    Type     |   Length    | IPv4 address (4 bytes)    |
    /// +-------------+-------------+-------------+-------------+
    /// | IPv4 address (continued)  |Prefix Length|    Flags    |
    /// +-------------+-------------+-------------+-------------+
    /// IPv6 address (Type 2, Length 20): the same with a 16-byte address.
    /// Label (Type 3)
    /// +-------------+-------------+-------------+-------------+
    /// |    Type     |   Length    |    Flags    |   C-Type    |
    /// +-------------+-------------+-------------+-------------+
    /// |               Contents of Label Object                |
    /// +-------------+-------------+-------------+-------------+
    /// ```
    ///
    /// The subobjects must fill the body exactly. A known type with another length (a Label
    /// with no contents among them), a prefix length over 32 or 128, or an empty list is
    /// [`ParseErrorKind::BadObject`].
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        if ctype != ctype::RECORD_ROUTE {
            return Err(ParseErrorKind::unknown_ctype(class::RECORD_ROUTE, ctype));
        }
        let bad = || ParseErrorKind::bad_object(class::RECORD_ROUTE, ctype);
        let mut r = Reader::new(body);
        let mut subobjects = Vec::new();
        while !r.is_empty() {
            let (subobject_type, contents) = read_subobject(&mut r).ok_or_else(bad)?;
            subobjects.push(RroSubobject::decode(subobject_type, contents).ok_or_else(bad)?);
        }
        if subobjects.is_empty() {
            return Err(bad());
        }
        Ok(RecordRoute { subobjects })
    }

    /// C-Type: always 1.
    pub fn ctype(&self) -> u8 {
        ctype::RECORD_ROUTE
    }

    /// Object length in bytes, header included.
    pub fn buffer_len(&self) -> usize {
        ObjectHeader::LEN
            + self
                .subobjects
                .iter()
                .map(RroSubobject::buffer_len)
                .sum::<usize>()
    }

    /// Write the object, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        ObjectHeader::emit(
            w,
            class::RECORD_ROUTE,
            ctype::RECORD_ROUTE,
            self.buffer_len() - ObjectHeader::LEN,
        );
        for s in &self.subobjects {
            s.emit(w);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::te::emitted;

    #[test]
    fn address_and_label_subobjects() {
        let mut obj = vec![
            0x00, 0x28, 0x15, 0x01, // length 40, RECORD_ROUTE, C-Type 1
            0x03, 0x08, // Type 3 Label, Length 8
            0x01, 0x01, // Flags: global label; C-Type 1
            0x00, 0x00, 0x00, 0x10, // label 16
            0x01, 0x08, // Type 1 IPv4 address, Length 8
            10, 0, 0, 2, // IPv4 address
            0x20, 0x03, // Prefix Length 32; Flags: local protection available and in use
            0x02, 0x14, // Type 2 IPv6 address, Length 20
        ];
        obj.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        obj.extend_from_slice(&[0x80, 0x00]); // Prefix Length 128, Flags 0
        let rro = RecordRoute {
            subobjects: vec![
                RroSubobject::Label {
                    flags: RroSubobject::GLOBAL_LABEL,
                    ctype: 1,
                    contents: vec![0, 0, 0, 0x10],
                },
                RroSubobject::Ipv4 {
                    addr: Ipv4Addr::new(10, 0, 0, 2),
                    prefix_len: 32,
                    flags: RroSubobject::LOCAL_PROTECTION_AVAILABLE
                        | RroSubobject::LOCAL_PROTECTION_IN_USE,
                },
                RroSubobject::Ipv6 {
                    addr: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2),
                    prefix_len: 128,
                    flags: 0,
                },
            ],
        };
        assert_eq!(RecordRoute::parse(1, &obj[4..]), Ok(rro.clone()));
        assert_eq!(rro.buffer_len(), obj.len());
        assert_eq!(emitted(|w| rro.emit(w)), obj);
        assert_eq!(rro.subobjects[0].label(), Some(16));
        assert_eq!(rro.subobjects[1].label(), None);
    }

    #[test]
    fn generalized_label_and_unknown_subobject_kept() {
        let obj = [
            0x00, 0x18, 0x15, 0x01, // length 24, RECORD_ROUTE, C-Type 1
            0x03, 0x0c, // Type 3 Label, Length 12
            0x00, 0x03, // Flags 0; C-Type 3 (RFC 3473 waveband label)
            0, 0, 0, 1, 0, 0, 0, 2, // its contents
            0x04, 0x08, // Type 4 (RFC 3477 unnumbered interface), Length 8
            0, 0, 0, 0, 0, 9,
        ];
        let rro = RecordRoute {
            subobjects: vec![
                RroSubobject::Label {
                    flags: 0,
                    ctype: 3,
                    contents: vec![0, 0, 0, 1, 0, 0, 0, 2],
                },
                RroSubobject::Other {
                    subobject_type: 4,
                    contents: vec![0, 0, 0, 0, 0, 9],
                },
            ],
        };
        assert_eq!(RecordRoute::parse(1, &obj[4..]), Ok(rro.clone()));
        assert_eq!(emitted(|w| rro.emit(w)), obj);
        assert_eq!(rro.subobjects[0].label(), None);
    }

    #[test]
    fn bad_bodies() {
        let bad = Err(ParseErrorKind::BadObject {
            class: 21,
            ctype: 1,
        });
        for body in [
            &[][..],                              // empty RRO: illegal
            &[0x01, 0x03, 0, 0],                  // Length 3
            &[0x01, 0x0c, 10, 0, 0, 1, 32, 0],    // IPv4 address of Length 12, past the end
            &[0x01, 0x04, 10, 0],                 // IPv4 address of Length 4
            &[0x03, 0x04, 0x01, 0x01],            // Label with no contents
            &[0x01, 0x08, 10, 0, 0, 1, 40, 0],    // prefix length 40
            &[0x01, 0x08, 10, 0, 0, 1, 32, 0, 1], // a byte left over
        ] {
            assert_eq!(RecordRoute::parse(1, body), bad, "{body:?}");
        }
        assert_eq!(
            RecordRoute::parse(0, &[0x01, 0x08, 10, 0, 0, 1, 32, 0]),
            Err(ParseErrorKind::UnknownCType {
                class: 21,
                ctype: 0
            })
        );
    }
}
