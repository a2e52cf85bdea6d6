//! HELLO REQUEST and HELLO ACK (RFC 3209 §5.2), carried by the Hello message (§5.1,
//! [`msg_type::HELLO`](super::msg_type::HELLO)).

use pathwise_core::wire::{Reader, Writer};

use super::{class, ctype};
use crate::wire::ParseErrorKind;
use crate::wire::objects::ObjectHeader;

/// Which HELLO object (RFC 3209 §5.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HelloKind {
    /// HELLO REQUEST (C-Type 1).
    Request,
    /// HELLO ACK (C-Type 2).
    Ack,
}

/// HELLO REQUEST or HELLO ACK (RFC 3209 §5.2): the instance numbers two neighbours exchange to
/// detect a lost link or a restarted node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Hello {
    /// Request or Ack.
    pub kind: HelloKind,
    /// Src_Instance: the sender's instance for this neighbour; it changes when the sender
    /// resets or loses the neighbour, and MUST NOT be zero (not checked here).
    pub src_instance: u32,
    /// Dst_Instance: the last Src_Instance received from the neighbour, zero if none yet.
    pub dst_instance: u32,
}

impl Hello {
    /// Parse a HELLO body (RFC 3209 §5.2.1, §5.2.2):
    ///
    /// ```text
    /// HELLO REQUEST: Class = 22, C-Type = 1; HELLO ACK: Class = 22, C-Type = 2
    /// +-------------+-------------+-------------+-------------+
    /// |                     Src_Instance                      |
    /// +-------------+-------------+-------------+-------------+
    /// |                     Dst_Instance                      |
    /// +-------------+-------------+-------------+-------------+
    /// ```
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        let kind = match ctype {
            ctype::HELLO_REQUEST => HelloKind::Request,
            ctype::HELLO_ACK => HelloKind::Ack,
            _ => return Err(ParseErrorKind::unknown_ctype(class::HELLO, ctype)),
        };
        if body.len() != 8 {
            return Err(ParseErrorKind::bad_object(class::HELLO, ctype));
        }
        let mut r = Reader::new(body);
        Ok(Hello {
            kind,
            src_instance: r.u32()?,
            dst_instance: r.u32()?,
        })
    }

    /// C-Type: 1 for a Request, 2 for an Ack.
    pub fn ctype(&self) -> u8 {
        match self.kind {
            HelloKind::Request => ctype::HELLO_REQUEST,
            HelloKind::Ack => ctype::HELLO_ACK,
        }
    }

    /// Object length in bytes, header included.
    pub fn buffer_len(&self) -> usize {
        ObjectHeader::LEN + 8
    }

    /// Write the object, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        ObjectHeader::emit(w, class::HELLO, self.ctype(), 8);
        w.u32(self.src_instance);
        w.u32(self.dst_instance);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::te::emitted;

    #[test]
    fn request_and_ack() {
        let obj = [
            0x00, 0x0c, 0x16, 0x01, // length 12, HELLO, C-Type 1 (REQUEST)
            0x12, 0x34, 0x56, 0x78, // Src_Instance
            0x00, 0x00, 0x00, 0x00, // Dst_Instance: nothing heard from the neighbour yet
        ];
        let h = Hello {
            kind: HelloKind::Request,
            src_instance: 0x1234_5678,
            dst_instance: 0,
        };
        assert_eq!(Hello::parse(1, &obj[4..]), Ok(h));
        assert_eq!(h.buffer_len(), 12);
        assert_eq!(emitted(|w| h.emit(w)), obj);
        let ack = Hello {
            kind: HelloKind::Ack,
            src_instance: 9,
            dst_instance: 0x1234_5678,
        };
        let obj = [
            0x00, 0x0c, 0x16, 0x02, // length 12, HELLO, C-Type 2 (ACK)
            0x00, 0x00, 0x00, 0x09, // Src_Instance
            0x12, 0x34, 0x56, 0x78, // Dst_Instance: the request's Src_Instance
        ];
        assert_eq!(Hello::parse(2, &obj[4..]), Ok(ack));
        assert_eq!(emitted(|w| ack.emit(w)), obj);
    }

    #[test]
    fn errors() {
        assert_eq!(
            Hello::parse(3, &[0; 8]),
            Err(ParseErrorKind::UnknownCType {
                class: 22,
                ctype: 3
            })
        );
        for len in [0, 4, 12] {
            assert_eq!(
                Hello::parse(2, &vec![0; len]),
                Err(ParseErrorKind::BadObject {
                    class: 22,
                    ctype: 2
                })
            );
        }
    }
}
