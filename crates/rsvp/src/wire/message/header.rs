//! The common header (RFC 2205 §3.1.1) as a zero-copy view:
//!
//! ```text
//!     0             1              2             3
//! +-------------+-------------+-------------+-------------+
//! | Vers | Flags|  Msg Type   |       RSVP Checksum       |
//! +-------------+-------------+-------------+-------------+
//! |  Send_TTL   | (Reserved)  |        RSVP Length        |
//! +-------------+-------------+-------------+-------------+
//! ```
//!
//! No-panic contract: both constructors check that the 8 header bytes are there, so no accessor
//! can index past the buffer; [`Packet::new_checked`] also checks RSVP Length against the buffer,
//! and [`Packet::message`] never reaches past either.

use pathwise_core::wire::internet_checksum;

use super::{CommonHeader, MsgType};
use crate::wire::ParseErrorKind;

/// Field offsets of the common header.
mod field {
    use core::ops::Range;

    pub const VERS_FLAGS: usize = 0;
    pub const MSG_TYPE: usize = 1;
    pub const CHECKSUM: Range<usize> = 2..4;
    pub const SEND_TTL: usize = 4;
    pub const RESERVED: usize = 5;
    pub const LENGTH: Range<usize> = 6..8;
    pub const OBJECTS: usize = 8;
}

/// A read/write view of an RSVP message's common header over a byte buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// A view over a buffer that holds at least the 8 header bytes (for reading a header before
    /// trusting its length, or for writing one).
    pub fn new_header(buffer: T) -> Result<Self, ParseErrorKind> {
        if buffer.as_ref().len() < field::OBJECTS {
            return Err(ParseErrorKind::Truncated);
        }
        Ok(Packet { buffer })
    }

    /// A view over a whole message: the header is there, RSVP Length is at least 8 and a multiple
    /// of 4 ([`ParseErrorKind::BadLength`]) and no longer than the buffer
    /// ([`ParseErrorKind::Truncated`]).
    pub fn new_checked(buffer: T) -> Result<Self, ParseErrorKind> {
        let p = Self::new_header(buffer)?;
        let length = p.length();
        if usize::from(length) < field::OBJECTS || !length.is_multiple_of(4) {
            return Err(ParseErrorKind::BadLength(length));
        }
        if usize::from(length) > p.buffer.as_ref().len() {
            return Err(ParseErrorKind::Truncated);
        }
        Ok(p)
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn byte(&self, i: usize) -> u8 {
        self.buffer.as_ref().get(i).copied().unwrap_or(0)
    }

    fn word(&self, i: usize) -> u16 {
        u16::from_be_bytes([self.byte(i), self.byte(i + 1)])
    }

    /// Vers (4 bits).
    pub fn version(&self) -> u8 {
        self.byte(field::VERS_FLAGS) >> 4
    }

    /// Flags (4 bits).
    pub fn flags(&self) -> u8 {
        self.byte(field::VERS_FLAGS) & 0x0f
    }

    /// Msg Type.
    pub fn msg_type(&self) -> MsgType {
        MsgType::from(self.byte(field::MSG_TYPE))
    }

    /// RSVP Checksum.
    pub fn checksum(&self) -> u16 {
        self.word(field::CHECKSUM.start)
    }

    /// Send_TTL.
    pub fn send_ttl(&self) -> u8 {
        self.byte(field::SEND_TTL)
    }

    /// RSVP Length.
    pub fn length(&self) -> u16 {
        self.word(field::LENGTH.start)
    }

    /// The message: the first RSVP Length bytes (fewer if the buffer is shorter).
    pub fn message(&self) -> &[u8] {
        let buf = self.buffer.as_ref();
        &buf[..usize::from(self.length()).min(buf.len())]
    }

    /// The objects after the common header, up to RSVP Length.
    pub fn objects(&self) -> &[u8] {
        self.message().get(field::OBJECTS..).unwrap_or(&[])
    }

    /// Whether the checksum verifies (RFC 2205 §3.1.1: one's complement of the one's complement
    /// sum of the message); an all-zero checksum means none was sent and verifies.
    pub fn verify_checksum(&self) -> bool {
        self.checksum() == 0 || internet_checksum(self.message()) == 0
    }

    /// The header fields as an owned value.
    pub fn header(&self) -> CommonHeader {
        CommonHeader {
            flags: self.flags(),
            msg_type: self.msg_type(),
            checksum: self.checksum(),
            send_ttl: self.send_ttl(),
            length: self.length(),
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_byte(&mut self, i: usize, v: u8) {
        if let Some(b) = self.buffer.as_mut().get_mut(i) {
            *b = v;
        }
    }

    fn set_word(&mut self, i: usize, v: u16) {
        let [a, b] = v.to_be_bytes();
        self.set_byte(i, a);
        self.set_byte(i + 1, b);
    }

    /// Set Vers (low 4 bits of `v`).
    pub fn set_version(&mut self, v: u8) {
        let flags = self.flags();
        self.set_byte(field::VERS_FLAGS, (v << 4) | flags);
    }

    /// Set Flags (low 4 bits of `v`).
    pub fn set_flags(&mut self, v: u8) {
        let vers = self.byte(field::VERS_FLAGS) & 0xf0;
        self.set_byte(field::VERS_FLAGS, vers | (v & 0x0f));
    }

    /// Set Msg Type.
    pub fn set_msg_type(&mut self, t: MsgType) {
        self.set_byte(field::MSG_TYPE, u8::from(t));
    }

    /// Set RSVP Checksum.
    pub fn set_checksum(&mut self, v: u16) {
        self.set_word(field::CHECKSUM.start, v);
    }

    /// Set Send_TTL.
    pub fn set_send_ttl(&mut self, v: u8) {
        self.set_byte(field::SEND_TTL, v);
    }

    /// Clear the reserved byte.
    pub fn clear_reserved(&mut self) {
        self.set_byte(field::RESERVED, 0);
    }

    /// Set RSVP Length.
    pub fn set_length(&mut self, v: u16) {
        self.set_word(field::LENGTH.start, v);
    }

    /// Compute and store the checksum over the first RSVP Length bytes (RFC 2205 §3.1.1: with
    /// the checksum field zero while summing). A sum whose complement is zero is sent as 0xffff,
    /// the other one's-complement zero, since 0 would mean "no checksum".
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let sum = internet_checksum(self.message());
        self.set_checksum(if sum == 0 { 0xffff } else { sum });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ResvConf-typed header with RSVP Length 12 and a 4-byte NULL object. Checksum: the
    /// one's-complement sum of 0x1007, 0x0000, 0x4000, 0x000c, 0x0004, 0x0000 is 0x5017, whose
    /// complement is 0xafe8.
    const BYTES: [u8; 12] = [
        0x10, 0x07, 0xaf, 0xe8, 0x40, 0x00, 0x00, 0x0c, 0x00, 0x04, 0x00, 0x00,
    ];

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(p.version(), 1);
        assert_eq!(p.flags(), 0);
        assert_eq!(p.msg_type(), MsgType::ResvConf);
        assert_eq!(p.checksum(), 0xafe8);
        assert_eq!(p.send_ttl(), 64);
        assert_eq!(p.length(), 12);
        assert_eq!(p.objects(), &BYTES[8..]);
        assert!(p.verify_checksum());
        assert_eq!(
            p.header(),
            CommonHeader {
                flags: 0,
                msg_type: MsgType::ResvConf,
                checksum: 0xafe8,
                send_ttl: 64,
                length: 12
            }
        );
    }

    #[test]
    fn construct() {
        let mut buf = [0xa5u8; 12];
        buf[8..].copy_from_slice(&BYTES[8..]);
        let mut p = Packet::new_header(&mut buf[..]).unwrap();
        p.set_version(1);
        p.set_flags(0);
        p.set_msg_type(MsgType::ResvConf);
        p.set_send_ttl(64);
        p.clear_reserved();
        p.set_length(12);
        p.fill_checksum();
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn checksum_detects_a_flip_and_zero_means_none() {
        let mut bad = BYTES;
        bad[9] ^= 0x01;
        assert!(!Packet::new_checked(&bad[..]).unwrap().verify_checksum());
        bad[2] = 0;
        bad[3] = 0;
        assert!(Packet::new_checked(&bad[..]).unwrap().verify_checksum());
    }

    #[test]
    fn impossible_lengths() {
        assert_eq!(
            Packet::new_checked(&BYTES[..7]),
            Err(ParseErrorKind::Truncated)
        );
        // RSVP Length 16 with 12 bytes present.
        let mut long = BYTES;
        long[7] = 16;
        assert_eq!(
            Packet::new_checked(&long[..]),
            Err(ParseErrorKind::Truncated)
        );
        for bad in [4u8, 10] {
            let mut b = BYTES;
            b[7] = bad;
            assert_eq!(
                Packet::new_checked(&b[..]),
                Err(ParseErrorKind::BadLength(u16::from(bad)))
            );
        }
        // A longer buffer is fine: the message is the first RSVP Length bytes.
        let mut padded = BYTES.to_vec();
        padded.extend_from_slice(&[0xff; 4]);
        let p = Packet::new_checked(&padded[..]).unwrap();
        assert_eq!(p.message(), &BYTES[..]);
        assert!(p.verify_checksum());
    }
}
