//! MESSAGE_ID (RFC 2961 §4.2), MESSAGE_ID_ACK and MESSAGE_ID_NACK (§4.3) and MESSAGE_ID_LIST
//! in its five forms (§5.1: LIST, IPv4/IPv6 SRC_LIST, IPv4/IPv6 MCAST_LIST).
//!
//! The Epoch is a 24-bit field: only the low 24 bits of an `epoch` are written.

use pathwise_core::wire::{Reader, Truncated, Writer};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::{class, ctype};
use crate::wire::ParseErrorKind;
use crate::wire::objects::ObjectHeader;

/// MESSAGE_ID (RFC 2961 §4.2, C-Type 1): identifies a message for acknowledgement and, once
/// acknowledged, for summary refresh.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MessageId {
    /// Flags: [`MessageId::ACK_DESIRED`]; other bits kept as received.
    pub flags: u8,
    /// Epoch (24 bits): changes when the sender restarts its Message_Identifier sequence.
    pub epoch: u32,
    /// Message_Identifier: increases with every new or changed message from the sender.
    pub message_id: u32,
}

impl MessageId {
    /// Flag ACK_Desired: the sender asks for a MESSAGE_ID_ACK.
    pub const ACK_DESIRED: u8 = 0x01;
}

/// Whether a [`MessageIdAck`] acknowledges or refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AckKind {
    /// MESSAGE_ID_ACK (C-Type 1): the message was received.
    Ack,
    /// MESSAGE_ID_NACK (C-Type 2): an Srefresh named state the receiver does not have; send
    /// the full message again.
    Nack,
}

/// MESSAGE_ID_ACK or MESSAGE_ID_NACK (RFC 2961 §4.3), both in class 24.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MessageIdAck {
    /// Ack (C-Type 1) or Nack (C-Type 2).
    pub kind: AckKind,
    /// Flags (none defined).
    pub flags: u8,
    /// Epoch (24 bits) of the MESSAGE_ID answered.
    pub epoch: u32,
    /// Message_Identifier of the MESSAGE_ID answered.
    pub message_id: u32,
}

/// MESSAGE_ID_LIST (RFC 2961 §5.1): the Message_Identifiers an Srefresh refreshes, all of one
/// Epoch, in one of the class's five forms ([`MessageIds`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MessageIdList {
    /// Flags (none defined).
    pub flags: u8,
    /// Epoch (24 bits) shared by the listed identifiers.
    pub epoch: u32,
    /// The identifiers, and for multicast Path state their senders (and groups).
    pub ids: MessageIds,
}

/// A Message_Identifier of a MESSAGE_ID SRC_LIST (RFC 2961 §5.1, C-Types 2 and 3): Path state
/// of a multicast session, named with its sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SourceMessageId<A> {
    /// Message_Identifier of the Path that advertised the state.
    pub message_id: u32,
    /// Source_IP_Address: the sender of that Path state.
    pub source: A,
}

/// A Message_Identifier of a MESSAGE_ID MCAST_LIST (RFC 2961 §5.1, C-Types 4 and 5): Path
/// state of a multicast session, named with its sender and the session's destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MulticastMessageId<A> {
    /// Message_Identifier of the Path that advertised the state.
    pub message_id: u32,
    /// Source_IP_Address: the sender of that Path state.
    pub source: A,
    /// Destination_IP_Address: the session's (group) address.
    pub destination: A,
}

/// The five forms of MESSAGE_ID_LIST (RFC 2961 §5.1), one per C-Type. A list holds one address
/// family, as the C-Type says.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MessageIds {
    /// MESSAGE_ID LIST (C-Type 1): Resv state and Path state of unicast sessions.
    List(Vec<u32>),
    /// IPv4/MESSAGE_ID SRC_LIST (C-Type 2): multicast Path state, in Srefreshes sent to the
    /// session's group address.
    Ipv4SrcList(Vec<SourceMessageId<Ipv4Addr>>),
    /// IPv6/MESSAGE_ID SRC_LIST (C-Type 3).
    Ipv6SrcList(Vec<SourceMessageId<Ipv6Addr>>),
    /// IPv4/MESSAGE_ID MCAST_LIST (C-Type 4): multicast Path state, in Srefreshes sent to the
    /// RSVP next hop.
    Ipv4McastList(Vec<MulticastMessageId<Ipv4Addr>>),
    /// IPv6/MESSAGE_ID MCAST_LIST (C-Type 5).
    Ipv6McastList(Vec<MulticastMessageId<Ipv6Addr>>),
}

/// One listed identifier, whatever the form: for SRC_LIST and MCAST_LIST the sender, and for
/// MCAST_LIST the group too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ListedId {
    /// Message_Identifier.
    pub message_id: u32,
    /// The Path state's sender (SRC_LIST, MCAST_LIST).
    pub source: Option<IpAddr>,
    /// The session's destination (MCAST_LIST).
    pub destination: Option<IpAddr>,
}

impl MessageIds {
    /// The C-Type of this form.
    pub fn ctype(&self) -> u8 {
        match self {
            MessageIds::List(_) => ctype::MESSAGE_ID_LIST,
            MessageIds::Ipv4SrcList(_) => ctype::MESSAGE_ID_SRC_LIST_IPV4,
            MessageIds::Ipv6SrcList(_) => ctype::MESSAGE_ID_SRC_LIST_IPV6,
            MessageIds::Ipv4McastList(_) => ctype::MESSAGE_ID_MCAST_LIST_IPV4,
            MessageIds::Ipv6McastList(_) => ctype::MESSAGE_ID_MCAST_LIST_IPV6,
        }
    }

    /// Bytes per listed identifier (RFC 2961 §5.1): the identifier and its addresses.
    fn entry_len(ctype: u8) -> Option<usize> {
        match ctype {
            ctype::MESSAGE_ID_LIST => Some(4),
            ctype::MESSAGE_ID_SRC_LIST_IPV4 => Some(8),
            ctype::MESSAGE_ID_SRC_LIST_IPV6 => Some(20),
            ctype::MESSAGE_ID_MCAST_LIST_IPV4 => Some(12),
            ctype::MESSAGE_ID_MCAST_LIST_IPV6 => Some(36),
            _ => None,
        }
    }

    /// How many identifiers are listed.
    pub fn len(&self) -> usize {
        match self {
            MessageIds::List(v) => v.len(),
            MessageIds::Ipv4SrcList(v) => v.len(),
            MessageIds::Ipv6SrcList(v) => v.len(),
            MessageIds::Ipv4McastList(v) => v.len(),
            MessageIds::Ipv6McastList(v) => v.len(),
        }
    }

    /// Whether no identifier is listed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether this is a SRC_LIST (C-Types 2, 3), which §5.2 does not let share an Srefresh
    /// with the other forms.
    pub fn is_src_list(&self) -> bool {
        matches!(
            self,
            MessageIds::Ipv4SrcList(_) | MessageIds::Ipv6SrcList(_)
        )
    }

    /// The `i`th listed identifier with the addresses its form carries.
    pub fn get(&self, i: usize) -> Option<ListedId> {
        let (message_id, source, destination) = match self {
            MessageIds::List(v) => (*v.get(i)?, None, None),
            MessageIds::Ipv4SrcList(v) => v
                .get(i)
                .map(|e| (e.message_id, Some(e.source.into()), None))?,
            MessageIds::Ipv6SrcList(v) => v
                .get(i)
                .map(|e| (e.message_id, Some(e.source.into()), None))?,
            MessageIds::Ipv4McastList(v) => v.get(i).map(|e| {
                (
                    e.message_id,
                    Some(e.source.into()),
                    Some(e.destination.into()),
                )
            })?,
            MessageIds::Ipv6McastList(v) => v.get(i).map(|e| {
                (
                    e.message_id,
                    Some(e.source.into()),
                    Some(e.destination.into()),
                )
            })?,
        };
        Some(ListedId {
            message_id,
            source,
            destination,
        })
    }

    /// Every listed identifier with the addresses its form carries.
    pub fn iter(&self) -> impl Iterator<Item = ListedId> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }
}

/// Read the `Flags | Epoch` word common to the three classes.
fn read_flags_epoch(r: &mut Reader<'_>) -> Result<(u8, u32), ParseErrorKind> {
    Ok((r.u8()?, r.u24()?))
}

fn write_flags_epoch(w: &mut Writer<'_>, flags: u8, epoch: u32) {
    w.u8(flags);
    w.u24(epoch);
}

impl MessageId {
    /// Parse a MESSAGE_ID body (RFC 2961 §4.2):
    ///
    /// ```text
    /// Class = 23, C-Type = 1
    /// +-------------+-------------+-------------+-------------+
    /// |    Flags    |                  Epoch                  |
    /// +-------------+-------------+-------------+-------------+
    /// |                  Message_Identifier                   |
    /// +-------------+-------------+-------------+-------------+
    /// ```
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        if ctype != ctype::MESSAGE_ID {
            return Err(ParseErrorKind::unknown_ctype(class::MESSAGE_ID, ctype));
        }
        if body.len() != 8 {
            return Err(ParseErrorKind::bad_object(class::MESSAGE_ID, ctype));
        }
        let mut r = Reader::new(body);
        let (flags, epoch) = read_flags_epoch(&mut r)?;
        Ok(MessageId {
            flags,
            epoch,
            message_id: r.u32()?,
        })
    }

    /// C-Type: always 1.
    pub fn ctype(&self) -> u8 {
        ctype::MESSAGE_ID
    }

    /// Object length in bytes, header included.
    pub fn buffer_len(&self) -> usize {
        ObjectHeader::LEN + 8
    }

    /// Write the object, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        ObjectHeader::emit(w, class::MESSAGE_ID, ctype::MESSAGE_ID, 8);
        write_flags_epoch(w, self.flags, self.epoch);
        w.u32(self.message_id);
    }
}

impl MessageIdAck {
    /// Parse a MESSAGE_ID_ACK or MESSAGE_ID_NACK body (RFC 2961 §4.3):
    ///
    /// ```text
    /// MESSAGE_ID_ACK: Class = 24, C-Type = 1; MESSAGE_ID_NACK: Class = 24, C-Type = 2
    /// +-------------+-------------+-------------+-------------+
    /// |    Flags    |                  Epoch                  |
    /// +-------------+-------------+-------------+-------------+
    /// |                  Message_Identifier                   |
    /// +-------------+-------------+-------------+-------------+
    /// ```
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        let kind = match ctype {
            ctype::MESSAGE_ID_ACK => AckKind::Ack,
            ctype::MESSAGE_ID_NACK => AckKind::Nack,
            _ => return Err(ParseErrorKind::unknown_ctype(class::MESSAGE_ID_ACK, ctype)),
        };
        if body.len() != 8 {
            return Err(ParseErrorKind::bad_object(class::MESSAGE_ID_ACK, ctype));
        }
        let mut r = Reader::new(body);
        let (flags, epoch) = read_flags_epoch(&mut r)?;
        Ok(MessageIdAck {
            kind,
            flags,
            epoch,
            message_id: r.u32()?,
        })
    }

    /// C-Type: 1 for an Ack, 2 for a Nack.
    pub fn ctype(&self) -> u8 {
        match self.kind {
            AckKind::Ack => ctype::MESSAGE_ID_ACK,
            AckKind::Nack => ctype::MESSAGE_ID_NACK,
        }
    }

    /// Object length in bytes, header included.
    pub fn buffer_len(&self) -> usize {
        ObjectHeader::LEN + 8
    }

    /// Write the object, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        ObjectHeader::emit(w, class::MESSAGE_ID_ACK, self.ctype(), 8);
        write_flags_epoch(w, self.flags, self.epoch);
        w.u32(self.message_id);
    }
}

impl MessageIdList {
    /// Parse a MESSAGE_ID_LIST body (RFC 2961 §5.1): the `Flags | Epoch` word, then one or more
    /// entries whose form the C-Type gives (an empty list is accepted and ignored):
    ///
    /// ```text
    /// C-Type 1 (LIST):        Message_Identifier
    /// C-Type 2 (IPv4 SRC):    Message_Identifier, Source_IP_Address (4)
    /// C-Type 3 (IPv6 SRC):    Message_Identifier, Source_IP_Address (16)
    /// C-Type 4 (IPv4 MCAST):  Message_Identifier, Source_IP_Address (4), Destination (4)
    /// C-Type 5 (IPv6 MCAST):  Message_Identifier, Source_IP_Address (16), Destination (16)
    /// ```
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        let Some(entry) = MessageIds::entry_len(ctype) else {
            return Err(ParseErrorKind::unknown_ctype(class::MESSAGE_ID_LIST, ctype));
        };
        if body.len() < 4 || !(body.len() - 4).is_multiple_of(entry) {
            return Err(ParseErrorKind::bad_object(class::MESSAGE_ID_LIST, ctype));
        }
        let mut r = Reader::new(body);
        let (flags, epoch) = read_flags_epoch(&mut r)?;
        let n = r.remaining() / entry;
        fn many<T>(
            n: usize,
            r: &mut Reader<'_>,
            mut one: impl FnMut(&mut Reader<'_>) -> Result<T, Truncated>,
        ) -> Result<Vec<T>, Truncated> {
            (0..n).map(|_| one(r)).collect()
        }
        let ids = match ctype {
            ctype::MESSAGE_ID_LIST => MessageIds::List(many(n, &mut r, |r| r.u32())?),
            ctype::MESSAGE_ID_SRC_LIST_IPV4 => MessageIds::Ipv4SrcList(many(n, &mut r, |r| {
                Ok(SourceMessageId {
                    message_id: r.u32()?,
                    source: r.ipv4()?,
                })
            })?),
            ctype::MESSAGE_ID_SRC_LIST_IPV6 => MessageIds::Ipv6SrcList(many(n, &mut r, |r| {
                Ok(SourceMessageId {
                    message_id: r.u32()?,
                    source: r.ipv6()?,
                })
            })?),
            ctype::MESSAGE_ID_MCAST_LIST_IPV4 => MessageIds::Ipv4McastList(many(n, &mut r, |r| {
                Ok(MulticastMessageId {
                    message_id: r.u32()?,
                    source: r.ipv4()?,
                    destination: r.ipv4()?,
                })
            })?),
            _ => MessageIds::Ipv6McastList(many(n, &mut r, |r| {
                Ok(MulticastMessageId {
                    message_id: r.u32()?,
                    source: r.ipv6()?,
                    destination: r.ipv6()?,
                })
            })?),
        };
        Ok(MessageIdList { flags, epoch, ids })
    }

    /// C-Type: that of the list's form.
    pub fn ctype(&self) -> u8 {
        self.ids.ctype()
    }

    /// Object length in bytes, header included (a list too long for the 16-bit object Length
    /// is written as [`ObjectHeader::emit`] says).
    pub fn buffer_len(&self) -> usize {
        let entry = MessageIds::entry_len(self.ctype()).unwrap_or(4);
        ObjectHeader::LEN + 4 + entry * self.ids.len()
    }

    /// Write the object, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        ObjectHeader::emit(
            w,
            class::MESSAGE_ID_LIST,
            self.ctype(),
            self.buffer_len() - ObjectHeader::LEN,
        );
        write_flags_epoch(w, self.flags, self.epoch);
        match &self.ids {
            MessageIds::List(v) => v.iter().for_each(|id| w.u32(*id)),
            MessageIds::Ipv4SrcList(v) => v.iter().for_each(|e| {
                w.u32(e.message_id);
                w.bytes(&e.source.octets());
            }),
            MessageIds::Ipv6SrcList(v) => v.iter().for_each(|e| {
                w.u32(e.message_id);
                w.bytes(&e.source.octets());
            }),
            MessageIds::Ipv4McastList(v) => v.iter().for_each(|e| {
                w.u32(e.message_id);
                w.bytes(&e.source.octets());
                w.bytes(&e.destination.octets());
            }),
            MessageIds::Ipv6McastList(v) => v.iter().for_each(|e| {
                w.u32(e.message_id);
                w.bytes(&e.source.octets());
                w.bytes(&e.destination.octets());
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::te::emitted;

    #[test]
    fn message_id() {
        let obj = [
            0x00, 0x0c, 0x17, 0x01, // length 12, MESSAGE_ID, C-Type 1
            0x01, // Flags: ACK_Desired
            0x0a, 0x0b, 0x0c, // Epoch
            0x00, 0x00, 0x01, 0x00, // Message_Identifier 256
        ];
        let m = MessageId {
            flags: MessageId::ACK_DESIRED,
            epoch: 0x0a0b0c,
            message_id: 256,
        };
        assert_eq!(MessageId::parse(1, &obj[4..]), Ok(m));
        assert_eq!(m.buffer_len(), 12);
        assert_eq!(emitted(|w| m.emit(w)), obj);
        // Only 24 bits of Epoch travel.
        let wide = MessageId {
            epoch: 0xff0a_0b0c,
            ..m
        };
        assert_eq!(emitted(|w| wide.emit(w)), obj);
    }

    #[test]
    fn message_id_ack_and_nack() {
        let obj = [
            0x00, 0x0c, 0x18, 0x01, // length 12, MESSAGE_ID_ACK, C-Type 1 (ACK)
            0x00, // Flags
            0x00, 0x00, 0x07, // Epoch 7
            0xff, 0xff, 0xff, 0xfe, // Message_Identifier
        ];
        let a = MessageIdAck {
            kind: AckKind::Ack,
            flags: 0,
            epoch: 7,
            message_id: 0xffff_fffe,
        };
        assert_eq!(MessageIdAck::parse(1, &obj[4..]), Ok(a));
        assert_eq!(emitted(|w| a.emit(w)), obj);
        let mut nack = obj;
        nack[3] = 2; // C-Type 2 (NACK)
        let n = MessageIdAck {
            kind: AckKind::Nack,
            ..a
        };
        assert_eq!(MessageIdAck::parse(2, &nack[4..]), Ok(n));
        assert_eq!(n.buffer_len(), 12);
        assert_eq!(emitted(|w| n.emit(w)), nack);
    }

    #[test]
    fn message_id_list() {
        let obj = [
            0x00, 0x14, 0x19, 0x01, // length 20, MESSAGE_ID_LIST, C-Type 1
            0x00, // Flags
            0x00, 0x00, 0x2a, // Epoch 42
            0x00, 0x00, 0x00, 0x01, // Message_Identifier 1
            0x00, 0x00, 0x00, 0x02, // Message_Identifier 2
            0x80, 0x00, 0x00, 0x00, // Message_Identifier 2^31
        ];
        let l = MessageIdList {
            flags: 0,
            epoch: 42,
            ids: MessageIds::List(vec![1, 2, 0x8000_0000]),
        };
        assert_eq!(MessageIdList::parse(1, &obj[4..]), Ok(l.clone()));
        assert_eq!(l.buffer_len(), obj.len());
        assert_eq!(emitted(|w| l.emit(w)), obj);
        let empty = MessageIdList {
            flags: 0,
            epoch: 42,
            ids: MessageIds::List(vec![]),
        };
        assert_eq!(MessageIdList::parse(1, &obj[4..8]), Ok(empty));
    }

    #[test]
    fn message_id_src_list() {
        let v4 = [
            0x00, 0x18, 0x19, 0x02, // length 24, MESSAGE_ID_LIST, C-Type 2 (IPv4 SRC_LIST)
            0x00, 0x00, 0x00, 0x2a, // Flags, Epoch 42
            0x00, 0x00, 0x00, 0x07, // Message_Identifier 7
            0x0a, 0x00, 0x00, 0x01, // Source_IP_Address 10.0.0.1
            0xff, 0xff, 0xff, 0xff, // Message_Identifier 2^32 - 1
            0x0a, 0x00, 0x00, 0x02, // Source_IP_Address 10.0.0.2
        ];
        let l = MessageIdList {
            flags: 0,
            epoch: 42,
            ids: MessageIds::Ipv4SrcList(vec![
                SourceMessageId {
                    message_id: 7,
                    source: Ipv4Addr::new(10, 0, 0, 1),
                },
                SourceMessageId {
                    message_id: u32::MAX,
                    source: Ipv4Addr::new(10, 0, 0, 2),
                },
            ]),
        };
        assert_eq!(MessageIdList::parse(2, &v4[4..]), Ok(l.clone()));
        assert_eq!((l.buffer_len(), l.ctype()), (v4.len(), 2));
        assert_eq!(emitted(|w| l.emit(w)), v4);
        assert!(l.ids.is_src_list());
        assert_eq!(
            l.ids
                .iter()
                .map(|e| (e.message_id, e.source))
                .collect::<Vec<_>>(),
            vec![
                (7, Some(IpAddr::from([10, 0, 0, 1]))),
                (u32::MAX, Some(IpAddr::from([10, 0, 0, 2])))
            ]
        );

        let mut v6 = vec![0x00, 0x1c, 0x19, 0x03, 0x00, 0x00, 0x00, 0x01];
        v6.extend_from_slice(&[0, 0, 0, 9]);
        v6.extend_from_slice(&Ipv6Addr::LOCALHOST.octets());
        let l = MessageIdList {
            flags: 0,
            epoch: 1,
            ids: MessageIds::Ipv6SrcList(vec![SourceMessageId {
                message_id: 9,
                source: Ipv6Addr::LOCALHOST,
            }]),
        };
        assert_eq!(MessageIdList::parse(3, &v6[4..]), Ok(l.clone()));
        assert_eq!((l.buffer_len(), l.ctype()), (v6.len(), 3));
        assert_eq!(emitted(|w| l.emit(w)), v6);
    }

    #[test]
    fn message_id_mcast_list() {
        let v4 = [
            0x00, 0x14, 0x19, 0x04, // length 20, MESSAGE_ID_LIST, C-Type 4 (IPv4 MCAST_LIST)
            0x00, 0x00, 0x01, 0x00, // Flags, Epoch 256
            0x00, 0x00, 0x01, 0x02, // Message_Identifier 258
            0x0a, 0x00, 0x00, 0x01, // Source_IP_Address 10.0.0.1
            0xe0, 0x01, 0x01, 0x01, // Destination_IP_Address 224.1.1.1
        ];
        let l = MessageIdList {
            flags: 0,
            epoch: 256,
            ids: MessageIds::Ipv4McastList(vec![MulticastMessageId {
                message_id: 258,
                source: Ipv4Addr::new(10, 0, 0, 1),
                destination: Ipv4Addr::new(224, 1, 1, 1),
            }]),
        };
        assert_eq!(MessageIdList::parse(4, &v4[4..]), Ok(l.clone()));
        assert_eq!((l.buffer_len(), l.ctype()), (v4.len(), 4));
        assert_eq!(emitted(|w| l.emit(w)), v4);
        assert!(!l.ids.is_src_list());
        assert_eq!(
            l.ids.get(0),
            Some(ListedId {
                message_id: 258,
                source: Some(IpAddr::from([10, 0, 0, 1])),
                destination: Some(IpAddr::from([224, 1, 1, 1])),
            })
        );
        assert_eq!(l.ids.get(1), None);

        let group: Ipv6Addr = "ff0e::1".parse().unwrap();
        let mut v6 = vec![0x00, 0x2c, 0x19, 0x05, 0x00, 0x00, 0x00, 0x01];
        v6.extend_from_slice(&[0, 0, 0, 9]);
        v6.extend_from_slice(&Ipv6Addr::LOCALHOST.octets());
        v6.extend_from_slice(&group.octets());
        let l = MessageIdList {
            flags: 0,
            epoch: 1,
            ids: MessageIds::Ipv6McastList(vec![MulticastMessageId {
                message_id: 9,
                source: Ipv6Addr::LOCALHOST,
                destination: group,
            }]),
        };
        assert_eq!(MessageIdList::parse(5, &v6[4..]), Ok(l.clone()));
        assert_eq!((l.buffer_len(), l.ctype()), (v6.len(), 5));
        assert_eq!(emitted(|w| l.emit(w)), v6);
    }

    #[test]
    fn errors() {
        assert_eq!(
            MessageId::parse(2, &[0; 8]),
            Err(ParseErrorKind::UnknownCType {
                class: 23,
                ctype: 2
            })
        );
        assert_eq!(
            MessageIdAck::parse(3, &[0; 8]),
            Err(ParseErrorKind::UnknownCType {
                class: 24,
                ctype: 3
            })
        );
        for ctype in [0, 6, 255] {
            assert_eq!(
                MessageIdList::parse(ctype, &[0; 12]),
                Err(ParseErrorKind::UnknownCType { class: 25, ctype })
            );
        }
        // Each form's entries are whole: the body after Flags/Epoch is a multiple of 4, 8,
        // 20, 12 or 36 bytes.
        for (ctype, entry) in [(2u8, 8usize), (3, 20), (4, 12), (5, 36)] {
            assert!(MessageIdList::parse(ctype, &vec![0; 4 + entry]).is_ok());
            for len in [0, 2, 8, 4 + entry - 4, 4 + entry + 4] {
                assert_eq!(
                    MessageIdList::parse(ctype, &vec![0; len]),
                    Err(ParseErrorKind::BadObject { class: 25, ctype }),
                    "C-Type {ctype}, {len} bytes"
                );
            }
        }
        for len in [0, 4, 12] {
            assert_eq!(
                MessageId::parse(1, &vec![0; len]),
                Err(ParseErrorKind::BadObject {
                    class: 23,
                    ctype: 1
                })
            );
            assert_eq!(
                MessageIdAck::parse(2, &vec![0; len]),
                Err(ParseErrorKind::BadObject {
                    class: 24,
                    ctype: 2
                })
            );
        }
        for len in [0, 2, 6, 9] {
            assert_eq!(
                MessageIdList::parse(1, &vec![0; len]),
                Err(ParseErrorKind::BadObject {
                    class: 25,
                    ctype: 1
                })
            );
        }
    }
}
