//! INTEGRITY (RFC 2747 §2.1, RSVP class 4) and CHALLENGE (RFC 2747 §2.2, class 64).

use pathwise_core::wire::{Reader, Writer};

use super::{Challenge, Integrity, ObjectHeader, class, ctype};
use crate::wire::ParseErrorKind;

/// Bytes of the INTEGRITY body before the digest: flags, reserved, key id, sequence number.
pub const INTEGRITY_FIXED: usize = 16;

/// Bytes of a CHALLENGE body.
const CHALLENGE_BODY: usize = 16;

/// Read a 48-bit key identifier behind 16 bits that are flags+reserved or reserved.
fn read_key_id(r: &mut Reader<'_>) -> Result<u64, ParseErrorKind> {
    let hi = u64::from(r.u16()?);
    let lo = u64::from(r.u32()?);
    Ok(hi << 32 | lo)
}

fn write_key_id(w: &mut Writer<'_>, key_id: u64) {
    // Only the low 48 bits travel; a larger id cannot be configured (auth::MAX_KEY_ID).
    w.u16((key_id >> 32) as u16);
    w.u32(key_id as u32);
}

/// Check an INTEGRITY body and read its fixed fields (flags, key id, sequence number); the
/// digest is the rest. Shared by [`Integrity::parse`] and the allocation-free
/// [`crate::wire::integrity::Signed::locate`].
pub(crate) fn fixed_fields(ctype: u8, body: &[u8]) -> Result<(u8, u64, u64), ParseErrorKind> {
    if ctype != ctype::TYPE_1 {
        return Err(ParseErrorKind::unknown_ctype(class::INTEGRITY, ctype));
    }
    if body.len() <= INTEGRITY_FIXED || !body.len().is_multiple_of(4) {
        return Err(ParseErrorKind::bad_object(class::INTEGRITY, ctype));
    }
    let mut r = Reader::new(body);
    let flags = r.u8()?;
    r.skip(1)?;
    Ok((flags, read_key_id(&mut r)?, r.u64()?))
}

/// The object header and fixed fields of an INTEGRITY object whose digest is `digest_len`
/// bytes (a multiple of 4): what precedes the digest on the wire.
pub(crate) fn leading_bytes(
    flags: u8,
    key_id: u64,
    seq: u64,
    digest_len: usize,
) -> [u8; ObjectHeader::LEN + INTEGRITY_FIXED] {
    let mut out = [0u8; ObjectHeader::LEN + INTEGRITY_FIXED];
    let len = u16::try_from(ObjectHeader::LEN + INTEGRITY_FIXED + digest_len).unwrap_or(0);
    out[..2].copy_from_slice(&len.to_be_bytes());
    out[2] = class::INTEGRITY;
    out[3] = ctype::TYPE_1;
    out[4] = flags;
    // Only the low 48 bits of the key id travel (auth::MAX_KEY_ID).
    out[6..12].copy_from_slice(&key_id.to_be_bytes()[2..]);
    out[12..20].copy_from_slice(&seq.to_be_bytes());
    out
}

impl Integrity {
    /// Parse an INTEGRITY body (RFC 2747 §2.1):
    ///
    /// ```text
    /// Keyed Message Digest INTEGRITY Object: Class = 4, C-Type = 1
    /// +-------------+-------------+-------------+-------------+
    /// |    Flags    | 0 (Reserved)|                           |
    /// +-------------+-------------+                           +
    /// |                    Key Identifier                     |
    /// +-------------+-------------+-------------+-------------+
    /// |                   Sequence Number                     |
    /// +-------------+-------------+-------------+-------------+
    /// |                                                       |
    /// +                   Keyed Message Digest                +
    /// |                                                       |
    /// +-------------+-------------+-------------+-------------+
    /// ```
    ///
    /// The digest is a non-empty multiple of 4 bytes (16 for HMAC-MD5); its length is checked
    /// against the key's algorithm when verifying, not here.
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        let (flags, key_id, seq) = fixed_fields(ctype, body)?;
        Ok(Integrity {
            flags,
            key_id,
            seq,
            digest: body[INTEGRITY_FIXED..].to_vec(),
        })
    }

    /// C-Type: always 1 (one format for IPv4 and IPv6).
    pub fn ctype(&self) -> u8 {
        ctype::TYPE_1
    }

    /// Object length in bytes, header included (the digest padded to a multiple of 4).
    pub fn buffer_len(&self) -> usize {
        ObjectHeader::LEN + INTEGRITY_FIXED + self.digest.len().next_multiple_of(4)
    }

    /// Write the object, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        let padded = self.digest.len().next_multiple_of(4);
        w.bytes(&leading_bytes(self.flags, self.key_id, self.seq, padded));
        w.bytes(&self.digest);
        w.zeros(self.digest.len().next_multiple_of(4) - self.digest.len());
    }
}

impl Challenge {
    /// Parse a CHALLENGE body (RFC 2747 §2.2):
    ///
    /// ```text
    /// CHALLENGE Object: Class = 64, C-Type = 1
    /// +-------------+-------------+-------------+-------------+
    /// |          0 (Reserved)     |                           |
    /// +-------------+-------------+                           +
    /// |                    Key Identifier                     |
    /// +-------------+-------------+-------------+-------------+
    /// |                    Challenge Cookie                   |
    /// +                                                       +
    /// |                                                       |
    /// +-------------+-------------+-------------+-------------+
    /// ```
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        if ctype != ctype::TYPE_1 {
            return Err(ParseErrorKind::unknown_ctype(class::CHALLENGE, ctype));
        }
        if body.len() != CHALLENGE_BODY {
            return Err(ParseErrorKind::bad_object(class::CHALLENGE, ctype));
        }
        let mut r = Reader::new(body);
        r.skip(2)?;
        Ok(Challenge {
            key_id: read_key_id(&mut r)?,
            cookie: r.u64()?,
        })
    }

    /// C-Type: always 1.
    pub fn ctype(&self) -> u8 {
        ctype::TYPE_1
    }

    /// Object length in bytes, header included.
    pub fn buffer_len(&self) -> usize {
        ObjectHeader::LEN + CHALLENGE_BODY
    }

    /// Write the object, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        ObjectHeader::emit(w, class::CHALLENGE, ctype::TYPE_1, CHALLENGE_BODY);
        w.u16(0);
        write_key_id(w, self.key_id);
        w.u64(self.cookie);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn emitted(f: impl FnOnce(&mut Writer<'_>)) -> Vec<u8> {
        let mut v = Vec::new();
        f(&mut Writer::new(&mut v));
        v
    }

    #[test]
    fn integrity_layout() {
        let i = Integrity {
            flags: 0x01,
            key_id: 0x0102_0304_0506,
            seq: 0x1112_1314_1516_1718,
            digest: vec![0xaa; 16],
        };
        let b = emitted(|w| i.emit(w));
        assert_eq!(b.len(), i.buffer_len());
        assert_eq!(&b[..4], &[0, 36, 4, 1]);
        assert_eq!(&b[4..12], &[1, 0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(
            &b[12..20],
            &[0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18]
        );
        assert_eq!(Integrity::parse(1, &b[4..]), Ok(i));
    }

    #[test]
    fn integrity_rejects_bad_bodies() {
        let body = [0u8; 20];
        assert!(matches!(
            Integrity::parse(2, &body),
            Err(ParseErrorKind::UnknownCType { class: 4, ctype: 2 })
        ));
        for len in [0, 16, 18] {
            assert!(matches!(
                Integrity::parse(1, &body[..len]),
                Err(ParseErrorKind::BadObject { class: 4, .. })
            ));
        }
    }

    #[test]
    fn challenge_layout() {
        let c = Challenge {
            key_id: 0xa0b0_c0d0_e0f0,
            cookie: 42,
        };
        let b = emitted(|w| c.emit(w));
        assert_eq!(&b[..4], &[0, 20, 64, 1]);
        assert_eq!(&b[4..12], &[0, 0, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0]);
        assert_eq!(Challenge::parse(1, &b[4..]), Ok(c));
        assert!(Challenge::parse(1, &b[4..16]).is_err());
        assert!(Challenge::parse(3, &b[4..]).is_err());
    }
}
