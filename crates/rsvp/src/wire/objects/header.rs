//! The object header (RFC 2205 §3.1.2):
//!
//! ```text
//!     0             1              2             3
//! +-------------+-------------+-------------+-------------+
//! |       Length (bytes)      |  Class-Num  |   C-Type    |
//! +-------------+-------------+-------------+-------------+
//! |                  (Object contents)                    |
//! ```
//!
//! Length counts the header and "must always be a multiple of 4, and at least 4".

use pathwise_core::wire::{Reader, TlvHeader, TlvIter, Writer};

use crate::wire::ParseErrorKind;

/// An object header as read from the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ObjectHeader {
    /// Total object length in bytes, header included.
    pub length: u16,
    /// Class-Num.
    pub class: u8,
    /// C-Type.
    pub ctype: u8,
}

impl ObjectHeader {
    /// Bytes in an object header.
    pub const LEN: usize = 4;

    /// Iterate over the objects in `buf` (the message body after the common header), yielding
    /// each header and its body. The first malformed object ends the iteration with
    /// [`ParseErrorKind::BadObjectLength`].
    pub fn iter(buf: &[u8]) -> TlvIter<'_, ObjectHeader> {
        TlvIter::new(buf)
    }

    /// Write a header for an object of `body_len` bytes. A body too long for the 16-bit length
    /// field is written with length 65535 (such an object cannot be represented; callers keep
    /// bodies under 65532 bytes).
    pub fn emit(w: &mut Writer<'_>, class: u8, ctype: u8, body_len: usize) {
        let length = u16::try_from(body_len.saturating_add(Self::LEN)).unwrap_or(u16::MAX);
        w.u16(length);
        w.u8(class);
        w.u8(ctype);
    }
}

impl TlvHeader for ObjectHeader {
    type Error = ParseErrorKind;

    fn read(r: &mut Reader<'_>) -> Result<Self, ParseErrorKind> {
        let length = r.u16()?;
        let class = r.u8()?;
        let ctype = r.u8()?;
        let len = usize::from(length);
        if len < Self::LEN || !len.is_multiple_of(4) || len - Self::LEN > r.remaining() {
            return Err(ParseErrorKind::BadObjectLength {
                class,
                ctype,
                length,
            });
        }
        Ok(ObjectHeader {
            length,
            class,
            ctype,
        })
    }

    fn body_len(&self) -> usize {
        usize::from(self.length).saturating_sub(Self::LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deconstruct_two_objects() {
        // TIME_VALUES (length 8, class 5, C-Type 1, R = 30000 ms) then a NULL object (length 4).
        let bytes = [
            0x00, 0x08, 0x05, 0x01, 0x00, 0x00, 0x75, 0x30, //
            0x00, 0x04, 0x00, 0x07,
        ];
        let objs: Vec<_> = ObjectHeader::iter(&bytes).collect();
        assert_eq!(
            objs,
            vec![
                Ok((
                    ObjectHeader {
                        length: 8,
                        class: 5,
                        ctype: 1
                    },
                    &bytes[4..8]
                )),
                Ok((
                    ObjectHeader {
                        length: 4,
                        class: 0,
                        ctype: 7
                    },
                    &bytes[12..12]
                )),
            ]
        );
    }

    #[test]
    fn impossible_lengths() {
        for (bytes, length) in [
            (&[0x00, 0x00, 0x01, 0x01][..], 0),              // below 4
            (&[0x00, 0x06, 0x01, 0x01, 0, 0][..], 6),        // not a multiple of 4
            (&[0x00, 0x0c, 0x01, 0x01, 0, 0, 0, 0][..], 12), // runs past the end
        ] {
            let first = ObjectHeader::iter(bytes).next();
            assert_eq!(
                first,
                Some(Err(ParseErrorKind::BadObjectLength {
                    class: 1,
                    ctype: 1,
                    length
                }))
            );
        }
        // Fewer than 4 bytes left for a header.
        assert_eq!(
            ObjectHeader::iter(&[0, 4]).next(),
            Some(Err(ParseErrorKind::Truncated))
        );
    }

    #[test]
    fn construct() {
        let mut v = vec![0xa5; 2];
        ObjectHeader::emit(&mut Writer::new(&mut v), 8, 1, 4);
        assert_eq!(v, [0xa5, 0xa5, 0x00, 0x08, 0x08, 0x01]);
        let mut v = Vec::new();
        ObjectHeader::emit(&mut Writer::new(&mut v), 14, 1, 70_000);
        assert_eq!(v, [0xff, 0xff, 14, 1]);
    }
}
