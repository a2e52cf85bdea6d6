//! MESSAGE_ID (RFC 2961 §4.2), MESSAGE_ID_ACK and MESSAGE_ID_NACK (§4.3) and MESSAGE_ID_LIST
//! (§5.1).
//!
//! The Epoch is a 24-bit field: only the low 24 bits of an `epoch` are written.

use pathwise_core::wire::{Reader, Writer};

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

/// MESSAGE_ID_LIST (RFC 2961 §5.1, C-Type 1): the Message_Identifiers an Srefresh refreshes.
///
/// Only C-Type 1 is decoded. RFC 2961 §5.1 defines C-Types 2 and 3 (IPv4 and IPv6 MESSAGE_ID
/// SRC_LIST: Message_Identifier and sender address pairs) and 4 and 5 (IPv4 and IPv6 MESSAGE_ID
/// MCAST_LIST: the same with the session's destination), which §5 uses for the Path state of
/// multicast sessions. This node does not summary-refresh multicast Path state, so it never
/// sends them; received, they are refused as unknown C-Types (error 14), which a sender
/// answers by refreshing that state with full Path messages.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MessageIdList {
    /// Flags (none defined).
    pub flags: u8,
    /// Epoch (24 bits) shared by the listed identifiers.
    pub epoch: u32,
    /// Message_Identifiers (may be empty).
    pub message_ids: Vec<u32>,
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
    /// Parse a MESSAGE_ID_LIST body (RFC 2961 §5.1):
    ///
    /// ```text
    /// Class = 25, C-Type = 1
    /// +-------------+-------------+-------------+-------------+
    /// |    Flags    |                  Epoch                  |
    /// +-------------+-------------+-------------+-------------+
    /// |                  Message_Identifier                   |
    /// +-------------+-------------+-------------+-------------+
    /// //                          ...                        //
    /// +-------------+-------------+-------------+-------------+
    /// |                  Message_Identifier                   |
    /// +-------------+-------------+-------------+-------------+
    /// ```
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        if ctype != ctype::MESSAGE_ID_LIST {
            return Err(ParseErrorKind::unknown_ctype(class::MESSAGE_ID_LIST, ctype));
        }
        if body.len() < 4 || !body.len().is_multiple_of(4) {
            return Err(ParseErrorKind::bad_object(class::MESSAGE_ID_LIST, ctype));
        }
        let mut r = Reader::new(body);
        let (flags, epoch) = read_flags_epoch(&mut r)?;
        let mut message_ids = Vec::with_capacity(r.remaining() / 4);
        while !r.is_empty() {
            message_ids.push(r.u32()?);
        }
        Ok(MessageIdList {
            flags,
            epoch,
            message_ids,
        })
    }

    /// C-Type: always 1.
    pub fn ctype(&self) -> u8 {
        ctype::MESSAGE_ID_LIST
    }

    /// Object length in bytes, header included (a list too long for the 16-bit object Length
    /// is written as [`ObjectHeader::emit`] says).
    pub fn buffer_len(&self) -> usize {
        ObjectHeader::LEN + 4 + 4 * self.message_ids.len()
    }

    /// Write the object, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        ObjectHeader::emit(
            w,
            class::MESSAGE_ID_LIST,
            ctype::MESSAGE_ID_LIST,
            self.buffer_len() - ObjectHeader::LEN,
        );
        write_flags_epoch(w, self.flags, self.epoch);
        for id in &self.message_ids {
            w.u32(*id);
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
            message_ids: vec![1, 2, 0x8000_0000],
        };
        assert_eq!(MessageIdList::parse(1, &obj[4..]), Ok(l.clone()));
        assert_eq!(l.buffer_len(), obj.len());
        assert_eq!(emitted(|w| l.emit(w)), obj);
        let empty = MessageIdList {
            flags: 0,
            epoch: 42,
            message_ids: vec![],
        };
        assert_eq!(MessageIdList::parse(1, &obj[4..8]), Ok(empty));
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
        // The source- and multicast-list forms are not decoded (see MessageIdList).
        for ctype in 2..=5 {
            assert_eq!(
                MessageIdList::parse(ctype, &[0; 12]),
                Err(ParseErrorKind::UnknownCType { class: 25, ctype })
            );
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
