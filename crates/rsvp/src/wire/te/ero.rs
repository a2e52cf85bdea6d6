//! EXPLICIT_ROUTE (RFC 3209 §4.3).

use std::net::{Ipv4Addr, Ipv6Addr};

use pathwise_core::wire::{Reader, Writer};

use super::{class, ctype, raw_subobject_len, read_subobject, write_raw_contents};
use crate::wire::ParseErrorKind;
use crate::wire::objects::ObjectHeader;

/// EXPLICIT_ROUTE (RFC 3209 §4.3, C-Type 1): the abstract nodes the LSP must pass, in order.
///
/// Only the wire format is checked here; the processing rules of §4.3.4 (the first subobject
/// must name this node, a strict hop must be adjacent, …) and their "Routing Problem" answers
/// belong to the engine. An empty list is written as an empty body, which [`parse`] refuses
/// (§4.3.4.1: "If there is no first subobject, the message is also in error").
///
/// [`parse`]: ExplicitRoute::parse
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ExplicitRoute {
    /// The subobjects, first hop first.
    pub subobjects: Vec<EroSubobject>,
}

/// One EXPLICIT_ROUTE subobject (RFC 3209 §4.3.3).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EroSubobject {
    /// The L bit: a loose hop (the path from the previous abstract node may cross other nodes);
    /// clear for a strict hop (§4.3.3.1).
    pub loose: bool,
    /// What the subobject names.
    pub node: AbstractNode,
}

/// The abstract node an EXPLICIT_ROUTE subobject names (RFC 3209 §4.3.3.2–§4.3.3.4).
///
/// Prefix addresses are kept as received: §4.3.3.2 says bits beyond the prefix are ignored on
/// receipt, so they are left for the user to ignore rather than cleared.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AbstractNode {
    /// Type 1, IPv4 prefix (Length 8); `prefix_len` at most 32 (32 names a single node).
    Ipv4Prefix {
        /// IPv4 address, treated as a prefix.
        addr: Ipv4Addr,
        /// Prefix length in bits.
        prefix_len: u8,
    },
    /// Type 2, IPv6 prefix (Length 20); `prefix_len` at most 128.
    Ipv6Prefix {
        /// IPv6 address, treated as a prefix.
        addr: Ipv6Addr,
        /// Prefix length in bits.
        prefix_len: u8,
    },
    /// Type 32, Autonomous System number (Length 4): the nodes of a 16-bit AS.
    AutonomousSystem(u16),
    /// A subobject type this codec does not interpret (e.g. RFC 3477's unnumbered interface,
    /// RFC 3473's label), kept so it round-trips. Only the low 7 bits of `subobject_type`
    /// are written; `contents` (the bytes after Type and Length) are zero-padded so the
    /// subobject is a multiple of 4 bytes, and cut at 250 bytes.
    Other {
        /// Type (7 bits).
        subobject_type: u8,
        /// The subobject after its 2-byte L/Type/Length header.
        contents: Vec<u8>,
    },
}

impl AbstractNode {
    /// Type of an IPv4 prefix subobject.
    pub const IPV4_PREFIX: u8 = 1;
    /// Type of an IPv6 prefix subobject.
    pub const IPV6_PREFIX: u8 = 2;
    /// Type of an Autonomous System number subobject.
    pub const AUTONOMOUS_SYSTEM: u8 = 32;

    /// The subobject's Type.
    pub fn subobject_type(&self) -> u8 {
        match self {
            AbstractNode::Ipv4Prefix { .. } => Self::IPV4_PREFIX,
            AbstractNode::Ipv6Prefix { .. } => Self::IPV6_PREFIX,
            AbstractNode::AutonomousSystem(_) => Self::AUTONOMOUS_SYSTEM,
            AbstractNode::Other { subobject_type, .. } => subobject_type & TYPE_MASK,
        }
    }
}

const LOOSE_BIT: u8 = 0x80;
const TYPE_MASK: u8 = 0x7f;

impl EroSubobject {
    /// Subobject length in bytes (its Length field).
    pub fn buffer_len(&self) -> usize {
        match &self.node {
            AbstractNode::Ipv4Prefix { .. } => 8,
            AbstractNode::Ipv6Prefix { .. } => 20,
            AbstractNode::AutonomousSystem(_) => 4,
            AbstractNode::Other { contents, .. } => raw_subobject_len(2, contents),
        }
    }

    /// Decode one subobject from its first byte and its contents after the Length; `None` if
    /// a known type has the wrong length or an impossible prefix length.
    fn decode(first: u8, contents: &[u8]) -> Option<Self> {
        let loose = first & LOOSE_BIT != 0;
        let subobject_type = first & TYPE_MASK;
        let mut r = Reader::new(contents);
        let node = match (subobject_type, contents.len()) {
            (AbstractNode::IPV4_PREFIX, 6) => AbstractNode::Ipv4Prefix {
                addr: r.ipv4().ok()?,
                prefix_len: r.u8().ok().filter(|&p| p <= 32)?,
            },
            (AbstractNode::IPV6_PREFIX, 18) => AbstractNode::Ipv6Prefix {
                addr: r.ipv6().ok()?,
                prefix_len: r.u8().ok().filter(|&p| p <= 128)?,
            },
            (AbstractNode::AUTONOMOUS_SYSTEM, 2) => AbstractNode::AutonomousSystem(r.u16().ok()?),
            (
                AbstractNode::IPV4_PREFIX
                | AbstractNode::IPV6_PREFIX
                | AbstractNode::AUTONOMOUS_SYSTEM,
                _,
            ) => return None,
            _ => AbstractNode::Other {
                subobject_type,
                contents: contents.to_vec(),
            },
        };
        Some(EroSubobject { loose, node })
    }

    fn emit(&self, w: &mut Writer<'_>) {
        let len = self.buffer_len();
        let loose = if self.loose { LOOSE_BIT } else { 0 };
        w.u8(loose | self.node.subobject_type());
        w.u8(len as u8); // at most MAX_SUBOBJECT_LEN
        match &self.node {
            AbstractNode::Ipv4Prefix { addr, prefix_len } => {
                w.bytes(&addr.octets());
                w.u8(*prefix_len);
                w.u8(0);
            }
            AbstractNode::Ipv6Prefix { addr, prefix_len } => {
                w.bytes(&addr.octets());
                w.u8(*prefix_len);
                w.u8(0);
            }
            AbstractNode::AutonomousSystem(asn) => w.u16(*asn),
            AbstractNode::Other { contents, .. } => write_raw_contents(w, len, 2, contents),
        }
    }
}

impl ExplicitRoute {
    /// Parse an EXPLICIT_ROUTE body (RFC 3209 §4.3.2, §4.3.3): a non-empty series of
    /// subobjects, each
    ///
    /// ```text
    /// +-+-----------+-------------+-------------//-------------+
    /// |L|   Type    |   Length    |     (Subobject contents)    |
    /// +-+-----------+-------------+-------------//-------------+
    /// IPv4 prefix (Type 1, Length 8)
    /// +-+-----------+-------------+-------------+-------------+
    /// |L|   Type    |   Length    | IPv4 address (4 bytes)    |
    /// +-+-----------+-------------+-------------+-------------+
    /// | IPv4 address (continued)  |Prefix Length|    Resvd    |
    /// +-------------+-------------+-------------+-------------+
    /// IPv6 prefix (Type 2, Length 20): the same with a 16-byte address.
    /// Autonomous System number (Type 32, Length 4)
    /// +-+-----------+-------------+-------------+-------------+
    /// |L|   Type    |   Length    |    AS number (2 bytes)    |
    /// +-+-----------+-------------+-------------+-------------+
    /// ```
    ///
    /// Length counts the whole subobject and "MUST be at least 4, and MUST be a multiple of 4"
    /// (§4.3.3); the subobjects must fill the body exactly. A known type with another length,
    /// a prefix length over 32 (IPv4) or 128 (IPv6), or an empty list is
    /// [`ParseErrorKind::BadObject`].
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        if ctype != ctype::EXPLICIT_ROUTE {
            return Err(ParseErrorKind::unknown_ctype(class::EXPLICIT_ROUTE, ctype));
        }
        let bad = || ParseErrorKind::bad_object(class::EXPLICIT_ROUTE, ctype);
        let mut r = Reader::new(body);
        let mut subobjects = Vec::new();
        while !r.is_empty() {
            let (first, contents) = read_subobject(&mut r).ok_or_else(bad)?;
            subobjects.push(EroSubobject::decode(first, contents).ok_or_else(bad)?);
        }
        if subobjects.is_empty() {
            return Err(bad());
        }
        Ok(ExplicitRoute { subobjects })
    }

    /// C-Type: always 1.
    pub fn ctype(&self) -> u8 {
        ctype::EXPLICIT_ROUTE
    }

    /// Object length in bytes, header included.
    pub fn buffer_len(&self) -> usize {
        ObjectHeader::LEN
            + self
                .subobjects
                .iter()
                .map(EroSubobject::buffer_len)
                .sum::<usize>()
    }

    /// Write the object, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        ObjectHeader::emit(
            w,
            class::EXPLICIT_ROUTE,
            ctype::EXPLICIT_ROUTE,
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

    fn hop(loose: bool, node: AbstractNode) -> EroSubobject {
        EroSubobject { loose, node }
    }

    #[test]
    fn three_kinds_of_subobject() {
        let mut obj = vec![
            0x00, 0x24, 0x14, 0x01, // length 36, EXPLICIT_ROUTE, C-Type 1
            0x01, 0x08, // L = 0 (strict), Type 1 IPv4 prefix, Length 8
            192, 0, 2, 1, // IPv4 address
            0x20, 0x00, // Prefix Length 32, Resvd
            0xa0, 0x04, // L = 1 (loose), Type 32 AS number, Length 4
            0xfd, 0xe8, // AS 65000
            0x82, 0x14, // L = 1, Type 2 IPv6 prefix, Length 20
        ];
        obj.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        obj.extend_from_slice(&[0x30, 0x00]); // Prefix Length 48, Resvd
        let ero = ExplicitRoute {
            subobjects: vec![
                hop(
                    false,
                    AbstractNode::Ipv4Prefix {
                        addr: Ipv4Addr::new(192, 0, 2, 1),
                        prefix_len: 32,
                    },
                ),
                hop(true, AbstractNode::AutonomousSystem(65000)),
                hop(
                    true,
                    AbstractNode::Ipv6Prefix {
                        addr: Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 0),
                        prefix_len: 48,
                    },
                ),
            ],
        };
        assert_eq!(ExplicitRoute::parse(1, &obj[4..]), Ok(ero.clone()));
        assert_eq!(ero.buffer_len(), obj.len());
        assert_eq!(emitted(|w| ero.emit(w)), obj);
        // Resvd is ignored on receipt.
        let mut dirty = obj.clone();
        dirty[11] = 0xff;
        assert_eq!(ExplicitRoute::parse(1, &dirty[4..]), Ok(ero));
    }

    #[test]
    fn unknown_subobject_kept_raw() {
        let obj = [
            0x00, 0x14, 0x14, 0x01, // length 20, EXPLICIT_ROUTE, C-Type 1
            0x04, 0x0c, // L = 0, Type 4 (RFC 3477 unnumbered interface), Length 12
            0x00, 0x00, // Reserved
            10, 0, 0, 1, // Router ID
            0x00, 0x00, 0x00, 0x07, // Interface ID
            0x81, 0x04, // L = 1, Type 1 … with Length 4: wrong for an IPv4 prefix
            0x00, 0x00,
        ];
        assert_eq!(
            ExplicitRoute::parse(1, &obj[4..]),
            Err(ParseErrorKind::BadObject {
                class: 20,
                ctype: 1
            })
        );
        let ero = ExplicitRoute {
            subobjects: vec![hop(
                false,
                AbstractNode::Other {
                    subobject_type: 4,
                    contents: obj[6..16].to_vec(),
                },
            )],
        };
        let mut first = obj[..16].to_vec();
        first[1] = 16;
        assert_eq!(ExplicitRoute::parse(1, &first[4..]), Ok(ero.clone()));
        assert_eq!(emitted(|w| ero.emit(w)), first);
    }

    #[test]
    fn bad_subobject_lengths() {
        let bad = Err(ParseErrorKind::BadObject {
            class: 20,
            ctype: 1,
        });
        for body in [
            &[][..],                           // no subobject at all
            &[0x01, 0x00, 0, 0],               // Length 0
            &[0x01, 0x02, 0, 0],               // Length 2: below 4
            &[0x05, 0x06, 0, 0, 0, 0, 0, 0],   // Length 6: not a multiple of 4
            &[0x05, 0x0c, 0, 0, 0, 0, 0, 0],   // Length 12 past the body's end
            &[0x20, 0x08, 0, 0, 0, 0, 0, 0],   // AS number of Length 8
            &[0x01, 0x08, 10, 0, 0, 1, 33, 0], // IPv4 prefix length 33
            &[0x01, 0x08, 10, 0, 0, 1, 32],    // body cut inside a subobject
        ] {
            assert_eq!(ExplicitRoute::parse(1, body), bad, "{body:?}");
        }
        let mut v6 = vec![0x02, 20];
        v6.extend_from_slice(&[0; 16]);
        v6.extend_from_slice(&[129, 0]); // IPv6 prefix length 129
        assert_eq!(ExplicitRoute::parse(1, &v6), bad);
        v6[18] = 128;
        assert!(ExplicitRoute::parse(1, &v6).is_ok());
        assert_eq!(
            ExplicitRoute::parse(2, &v6),
            Err(ParseErrorKind::UnknownCType {
                class: 20,
                ctype: 2
            })
        );
    }

    #[test]
    fn other_contents_are_padded_and_cut() {
        let ero = ExplicitRoute {
            subobjects: vec![
                hop(
                    true,
                    AbstractNode::Other {
                        subobject_type: 0xff, // only the low 7 bits are written
                        contents: vec![1, 2, 3],
                    },
                ),
                hop(
                    false,
                    AbstractNode::Other {
                        subobject_type: 5,
                        contents: vec![9; 300],
                    },
                ),
            ],
        };
        let b = emitted(|w| ero.emit(w));
        assert_eq!(b.len(), ero.buffer_len());
        assert_eq!(b.len(), 4 + 8 + 252);
        assert_eq!(&b[4..12], &[0xff, 8, 1, 2, 3, 0, 0, 0]);
        assert_eq!(&b[12..14], &[5, 252]);
        let back = ExplicitRoute::parse(1, &b[4..]).unwrap();
        assert_eq!(
            back.subobjects[0].node,
            AbstractNode::Other {
                subobject_type: 0x7f,
                contents: vec![1, 2, 3, 0, 0, 0]
            }
        );
    }
}
