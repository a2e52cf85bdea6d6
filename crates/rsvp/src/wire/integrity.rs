//! Signing and checking whole messages with the INTEGRITY object (RFC 2747 §3, §4).
//!
//! The digest covers the entire RSVP message with the INTEGRITY object in place right after the
//! common header, its Keyed Message Digest field set to zero, and the RSVP checksum set to zero
//! (RFC 2747 §3.1 steps 1–4, §4.2 step 4); the checksum is computed last, over the message with
//! the digest filled in (§3.1 step 5).
//!
//! - [`sign`] turns an emitted, unsigned message into a signed one in place: it inserts the
//!   object, fixes RSVP Length, digests, and re-computes the checksum. One code path signs
//!   every message type, the handshake's Integrity Response included.
//! - [`Signed::locate`] finds the object of a received message without parsing the rest, and
//!   [`Signed::digested`] hands out the message as it was digested — slices over the received
//!   bytes with zeros standing in for the checksum and digest — so verifying copies nothing
//!   and happens before the message is parsed or can change any state.

use pathwise_auth::{Key, MAX_DIGEST_LEN, Presented};

use super::ParseErrorKind;
use super::message::{CommonHeader, Packet};
use super::objects::integrity::{INTEGRITY_FIXED, fixed_fields, leading_bytes};
use super::objects::{ObjectHeader, RsvpHop, class, ctype};

/// Zeros standing in for the checksum and the digest while digesting.
static ZEROS: [u8; MAX_DIGEST_LEN] = [0; MAX_DIGEST_LEN];

/// Offset of the digest inside a message whose INTEGRITY object leads.
const DIGEST_AT: usize = CommonHeader::LEN + ObjectHeader::LEN + INTEGRITY_FIXED;

/// Bytes an INTEGRITY object with a `digest_len`-byte digest adds to a message.
pub fn overhead(digest_len: usize) -> usize {
    ObjectHeader::LEN + INTEGRITY_FIXED + digest_len.next_multiple_of(4)
}

/// Sign the complete message `msg` in place with `key`, `seq` and `flags` (RFC 2747 §3.1).
/// `msg` must hold exactly one emitted message (as [`super::Message::emit`] writes it); an
/// INTEGRITY object it already leads with (a forwarded message's, from the previous hop) is
/// replaced, since integrity is hop by hop. A buffer without a valid header is left alone.
pub fn sign(msg: &mut Vec<u8>, key: &Key, seq: u64, flags: u8) {
    let Ok(p) = Packet::new_checked(&msg[..]) else {
        return;
    };
    msg.truncate(usize::from(p.length()));
    if let Some(Ok((h, body))) = ObjectHeader::iter(&msg[CommonHeader::LEN..]).next()
        && h.class == class::INTEGRITY
    {
        let end = CommonHeader::LEN + ObjectHeader::LEN + body.len();
        msg.drain(CommonHeader::LEN..end);
    }
    // Every algorithm's digest is a multiple of 4 bytes (16, 20, 32, 48, 64).
    let digest_len = key.algorithm().digest_len();
    let leading = leading_bytes(flags, key.id(), seq, digest_len);
    let zeros = std::iter::repeat_n(0u8, digest_len);
    msg.splice(
        CommonHeader::LEN..CommonHeader::LEN,
        leading.iter().copied().chain(zeros),
    );
    let length = u16::try_from(msg.len()).unwrap_or(u16::MAX);
    let Ok(mut p) = Packet::new_header(&mut msg[..]) else {
        return;
    };
    p.set_length(length);
    p.set_checksum(0);
    let digest = key.digest(&[&msg[..usize::from(length)]]);
    let d = digest.as_bytes();
    msg[DIGEST_AT..DIGEST_AT + d.len()].copy_from_slice(d);
    if let Ok(mut p) = Packet::new_header(&mut msg[..]) {
        p.fill_checksum();
    }
}

/// A received message whose first object is INTEGRITY.
#[derive(Clone, Debug)]
pub struct Signed<'a> {
    /// The message, RSVP Length bytes.
    msg: &'a [u8],
    flags: u8,
    key_id: u64,
    seq: u64,
    /// Where the digest lies in `msg`.
    digest: core::ops::Range<usize>,
}

impl<'a> Signed<'a> {
    /// Find the INTEGRITY object of a received message: `Ok(None)` if the first object is
    /// something else (the message is unsigned; an INTEGRITY object further on is rejected by
    /// the parser), an error if the header or the object is malformed.
    pub fn locate(buf: &'a [u8]) -> Result<Option<Self>, ParseErrorKind> {
        let len = usize::from(Packet::new_checked(buf)?.length());
        let msg = &buf[..len];
        let Some(first) = ObjectHeader::iter(&msg[CommonHeader::LEN..]).next() else {
            return Ok(None);
        };
        let (h, body) = first?;
        if h.class != class::INTEGRITY {
            return Ok(None);
        }
        let (flags, key_id, seq) = fixed_fields(h.ctype, body)?;
        let start = DIGEST_AT;
        let end = CommonHeader::LEN + ObjectHeader::LEN + body.len();
        if end - start > MAX_DIGEST_LEN {
            // No algorithm has a digest this long.
            return Err(ParseErrorKind::bad_object(class::INTEGRITY, ctype::TYPE_1));
        }
        Ok(Some(Signed {
            msg,
            flags,
            key_id,
            seq,
            digest: start..end,
        }))
    }

    /// The object's fields for [`pathwise_auth::Receiver`].
    pub fn presented(&self) -> Presented<'a> {
        Presented {
            flags: self.flags,
            key_id: self.key_id,
            seq: self.seq,
            digest: &self.msg[self.digest.clone()],
        }
    }

    /// The message as it was digested: checksum and digest fields read as zeros.
    pub fn digested(&self) -> [&'a [u8]; 5] {
        let m = self.msg;
        [
            &m[..2],
            &ZEROS[..2],
            &m[4..self.digest.start],
            &ZEROS[..self.digest.len()],
            &m[self.digest.end..],
        ]
    }
}

/// The "sending system" whose sequence numbers a receive window tracks (RFC 2747 §4.2): the
/// neighbour named by the message's RSVP_HOP — a Path keeps the data sender's IP source
/// address hop by hop — else, for messages without one, the IP source `src`.
pub fn sending_system(buf: &[u8], src: std::net::IpAddr) -> std::net::IpAddr {
    rsvp_hop(buf).map_or(src, |h| h.addr)
}

/// The RSVP_HOP of a message, read without parsing the rest: the neighbour that sent a Path,
/// PathTear, Resv, ResvTear or ResvErr (whose IP source may be the data sender's, not the
/// neighbour's). Malformed input gives `None`.
pub fn rsvp_hop(buf: &[u8]) -> Option<RsvpHop> {
    let p = Packet::new_checked(buf).ok()?;
    ObjectHeader::iter(p.objects())
        .map_while(Result::ok)
        .find(|(h, _)| h.class == class::RSVP_HOP)
        .and_then(|(h, body)| RsvpHop::parse(h.ctype, body).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Message;
    use pathwise_auth::{Algorithm, Presented};
    use std::net::{IpAddr, Ipv4Addr};

    /// The IPv4 Path vector, unsigned.
    fn path_bytes() -> Vec<u8> {
        let (_, mut msg) = Message::parse(crate::wire::message::vectors::PATH_V4).unwrap();
        if let Message::Path(p) = &mut msg {
            p.integrity = None;
        }
        let mut out = Vec::new();
        msg.emit(63, &mut out);
        out
    }

    fn key(alg: Algorithm) -> Key {
        Key::new(0x0a0b_0c0d_0e0f, alg, b"pathwise-test-key").unwrap()
    }

    fn verify(buf: &[u8], key: &Key) -> bool {
        let s = Signed::locate(buf).unwrap().unwrap();
        key.verify(&s.digested(), s.presented().digest)
    }

    #[test]
    fn signed_messages_verify_parse_and_carry_the_object() {
        for alg in Algorithm::ALL {
            let key = key(alg);
            let mut buf = path_bytes();
            let unsigned = buf.len();
            sign(&mut buf, &key, 77, crate::wire::Integrity::HANDSHAKE);
            assert_eq!(buf.len(), unsigned + overhead(alg.digest_len()), "{alg:?}");
            assert!(verify(&buf, &key), "{alg:?}");
            let (hdr, m) = Message::parse(&buf).unwrap();
            assert_eq!(usize::from(hdr.length), buf.len());
            let Message::Path(p) = m else { panic!() };
            let i = p.integrity.unwrap();
            assert_eq!((i.flags, i.key_id, i.seq), (1, key.id(), 77));
            assert_eq!(i.digest.len(), alg.digest_len());
            let s = Signed::locate(&buf).unwrap().unwrap();
            let Presented { key_id, seq, .. } = s.presented();
            assert_eq!((key_id, seq), (key.id(), 77));
        }
    }

    #[test]
    fn digest_is_over_the_message_with_checksum_and_digest_zeroed() {
        // RFC 2747 §3.1, recomputed independently of `Signed::digested`.
        let key = key(Algorithm::HmacMd5);
        let mut buf = path_bytes();
        sign(&mut buf, &key, 1, 0);
        let mut zeroed = buf.clone();
        zeroed[2..4].fill(0);
        zeroed[DIGEST_AT..DIGEST_AT + 16].fill(0);
        assert_eq!(
            key.digest(&[&zeroed]).as_bytes(),
            &buf[DIGEST_AT..DIGEST_AT + 16]
        );
        assert!(Packet::new_checked(&buf[..]).unwrap().verify_checksum());
    }

    #[test]
    fn flipping_any_byte_fails() {
        let key = key(Algorithm::HmacSha256);
        let mut buf = path_bytes();
        sign(&mut buf, &key, 9, 0);
        for i in 0..buf.len() {
            if (2..4).contains(&i) {
                continue; // the checksum is outside the digest by design; it fails parsing
            }
            let mut bad = buf.clone();
            bad[i] ^= 0x40;
            let ok = match Signed::locate(&bad) {
                Ok(Some(s)) => key.verify(&s.digested(), s.presented().digest),
                _ => false,
            };
            assert!(!ok, "flipped byte {i} still verifies");
        }
        let mut bad = buf.clone();
        bad[2] ^= 1;
        assert!(Message::parse(&bad).is_err());
    }

    #[test]
    fn signing_a_signed_message_replaces_its_object() {
        let key = key(Algorithm::HmacSha1);
        let mut once = path_bytes();
        sign(&mut once, &key, 1, 0);
        let mut twice = once.clone();
        sign(&mut twice, &key, 2, 0);
        assert_eq!(twice.len(), once.len());
        assert!(verify(&twice, &key));
        let Ok((_, Message::Path(p))) = Message::parse(&twice) else {
            panic!()
        };
        assert_eq!(p.integrity.unwrap().seq, 2);
    }

    #[test]
    fn wrong_key_fails_and_unsigned_is_none() {
        let mut buf = path_bytes();
        assert!(Signed::locate(&buf).unwrap().is_none());
        sign(&mut buf, &key(Algorithm::HmacSha1), 1, 0);
        let other = Key::new(0x0a0b_0c0d_0e0f, Algorithm::HmacSha1, b"other").unwrap();
        assert!(!verify(&buf, &other));
    }

    #[test]
    fn misplaced_integrity_is_rejected() {
        let key = key(Algorithm::HmacMd5);
        let mut buf = path_bytes();
        sign(&mut buf, &key, 1, 0);
        // Move the INTEGRITY object behind the SESSION object.
        let obj_len = overhead(16);
        let object: Vec<u8> = buf[8..8 + obj_len].to_vec();
        let session_len = 12;
        let mut moved = buf[..8].to_vec();
        moved.extend_from_slice(&buf[8 + obj_len..8 + obj_len + session_len]);
        moved.extend_from_slice(&object);
        moved.extend_from_slice(&buf[8 + obj_len + session_len..]);
        Packet::new_header(&mut moved[..]).unwrap().fill_checksum();
        assert!(Signed::locate(&moved).unwrap().is_none());
        assert_eq!(
            Message::parse(&moved).unwrap_err().kind,
            ParseErrorKind::MisplacedIntegrity
        );
    }

    #[test]
    fn rsvp_hop_is_found_without_parsing() {
        let buf = path_bytes();
        let hop = rsvp_hop(&buf).unwrap();
        assert_eq!(hop.addr, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)));
        assert!(rsvp_hop(&buf[..6]).is_none());
    }
}
