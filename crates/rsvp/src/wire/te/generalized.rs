//! GMPLS label objects (RFC 3473 §2.1, §2.3; parameters in RFC 3471 §3.1.1, §3.2.1): the
//! Generalized LABEL_REQUEST (class 19, C-Type 4), carried as the
//! [`LabelRange::Generalized`](super::LabelRange::Generalized) form of a
//! [`LabelRequest`](super::LabelRequest), and the Generalized LABEL (class 16, C-Type 2).
//!
//! The Waveband Switching label (C-Type 3, RFC 3473 §2.4) is not implemented: an unknown C-Type.

use smallvec::SmallVec;

use pathwise_core::wire::Writer;

use super::{class, ctype};
use crate::wire::ParseErrorKind;
use crate::wire::objects::ObjectHeader;

/// LSP Encoding Types (RFC 3471 §3.1.1).
pub mod lsp_encoding {
    /// Packet.
    pub const PACKET: u8 = 1;
    /// Ethernet.
    pub const ETHERNET: u8 = 2;
    /// ANSI/ETSI PDH.
    pub const PDH: u8 = 3;
    /// SDH ITU-T G.707 / SONET ANSI T1.105.
    pub const SDH_SONET: u8 = 5;
    /// Digital Wrapper.
    pub const DIGITAL_WRAPPER: u8 = 7;
    /// Lambda (photonic).
    pub const LAMBDA: u8 = 8;
    /// Fiber.
    pub const FIBER: u8 = 9;
    /// FiberChannel.
    pub const FIBER_CHANNEL: u8 = 11;
}

/// Switching Types (RFC 3471 §3.1.1).
pub mod switching {
    /// Packet-Switch Capable-1 (PSC-1).
    pub const PSC_1: u8 = 1;
    /// PSC-2.
    pub const PSC_2: u8 = 2;
    /// PSC-3.
    pub const PSC_3: u8 = 3;
    /// PSC-4.
    pub const PSC_4: u8 = 4;
    /// Layer-2 Switch Capable (L2SC).
    pub const L2SC: u8 = 51;
    /// Time-Division-Multiplex Capable (TDM).
    pub const TDM: u8 = 100;
    /// Lambda-Switch Capable (LSC).
    pub const LSC: u8 = 150;
    /// Fiber-Switch Capable (FSC).
    pub const FSC: u8 = 200;

    /// Whether `t` is one of the packet-switch capable types, PSC-1 to PSC-4.
    pub fn is_psc(t: u8) -> bool {
        (PSC_1..=PSC_4).contains(&t)
    }
}

/// What a Generalized LABEL_REQUEST (RFC 3473 §2.1, C-Type 4) adds to the L3PID's place, which
/// holds its G-PID: the LSP's encoding and the switching asked for on the link.
///
/// ```text
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// | LSP Enc. Type |Switching Type |             G-PID             |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// ```
///
/// The G-PID (RFC 3471 §3.1.1) is an Ethertype for packet and Ethernet LSPs — the L3PID of
/// RFC 3209's LABEL_REQUEST, in the same 16 bits — so it is
/// [`LabelRequest::l3pid`](super::LabelRequest::l3pid).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GeneralizedLabelRequest {
    /// LSP Encoding Type ([`lsp_encoding`]).
    pub encoding: u8,
    /// Switching Type ([`switching`]).
    pub switching: u8,
}

impl GeneralizedLabelRequest {
    /// A packet LSP over packet-switch capable (PSC-1) links: what an MPLS LSR asks for.
    pub const PSC: Self = GeneralizedLabelRequest {
        encoding: lsp_encoding::PACKET,
        switching: switching::PSC_1,
    };
}

/// Generalized LABEL (RFC 3473 §2.3, class 16, C-Type 2): a label of a length and meaning the
/// link's type gives (RFC 3471 §3.2.1). An MPLS label is right-justified in 32 bits (RFC 3471
/// §3.2.1.2); other labels are kept as bytes.
///
/// ```text
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                             Label                             |
/// |                              ...                              |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GeneralizedLabel {
    /// The label's bytes: at least 4, a multiple of 4 (an object body). Written zero-padded to
    /// a multiple of 4, and as 4 zero bytes when empty; cut at the largest object body.
    pub label: SmallVec<[u8; 4]>,
}

/// Largest body of an object (65535 bytes, a multiple of 4, less the header).
const MAX_BODY: usize = 0xfffc - ObjectHeader::LEN;

impl GeneralizedLabel {
    /// A generalized label carrying the 32-bit label `label` (an MPLS label, right-justified).
    pub fn from_u32(label: u32) -> Self {
        GeneralizedLabel {
            label: SmallVec::from_slice(&label.to_be_bytes()),
        }
    }

    /// The label as one 32-bit word, when it is exactly 4 bytes (MPLS, Frame Relay, port and
    /// wavelength labels: RFC 3471 §3.2.1.1, §3.2.1.2).
    pub fn as_u32(&self) -> Option<u32> {
        let b: [u8; 4] = self.label.as_slice().try_into().ok()?;
        Some(u32::from_be_bytes(b))
    }

    /// Parse a Generalized LABEL body (RFC 3473 §2.3): at least one 32-bit word.
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        if ctype != ctype::GENERALIZED_LABEL {
            return Err(ParseErrorKind::unknown_ctype(class::LABEL, ctype));
        }
        if body.len() < 4 || !body.len().is_multiple_of(4) {
            return Err(ParseErrorKind::bad_object(class::LABEL, ctype));
        }
        Ok(GeneralizedLabel {
            label: SmallVec::from_slice(body),
        })
    }

    /// C-Type: always 2.
    pub fn ctype(&self) -> u8 {
        ctype::GENERALIZED_LABEL
    }

    fn body_len(&self) -> usize {
        self.label.len().next_multiple_of(4).clamp(4, MAX_BODY)
    }

    /// Object length in bytes, header included.
    pub fn buffer_len(&self) -> usize {
        ObjectHeader::LEN + self.body_len()
    }

    /// Write the object, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        let n = self.body_len();
        ObjectHeader::emit(w, class::LABEL, ctype::GENERALIZED_LABEL, n);
        let take = self.label.len().min(n);
        w.bytes(&self.label[..take]);
        w.zeros(n - take);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{LabelRange, LabelRequest};
    use super::*;
    use crate::wire::te::emitted;

    #[test]
    fn generalized_label_request() {
        // RFC 3473 §2.1: length 8, class 19, C-Type 4; Packet, PSC-1, G-PID IPv4.
        let obj = [0x00, 0x08, 0x13, 0x04, 0x01, 0x01, 0x08, 0x00];
        let l = LabelRequest {
            l3pid: 0x0800,
            range: Some(LabelRange::Generalized(GeneralizedLabelRequest::PSC)),
        };
        assert_eq!(LabelRequest::parse(4, &obj[4..]), Ok(l));
        assert_eq!(l.ctype(), 4);
        assert_eq!(l.buffer_len(), 8);
        assert_eq!(emitted(|w| l.emit(w)), obj);
        assert_eq!(l.generalized(), Some(GeneralizedLabelRequest::PSC));
        // Lambda, LSC, G-PID 37 (Lambda).
        let l = LabelRequest::parse(4, &[8, 150, 0, 37]).unwrap();
        assert_eq!(
            l.generalized(),
            Some(GeneralizedLabelRequest {
                encoding: lsp_encoding::LAMBDA,
                switching: switching::LSC,
            })
        );
        assert_eq!(l.l3pid, 37);
        for len in [0, 8, 12] {
            assert_eq!(
                LabelRequest::parse(4, &vec![0; len]),
                Err(ParseErrorKind::BadObject {
                    class: 19,
                    ctype: 4
                }),
                "{len} bytes"
            );
        }
    }

    #[test]
    fn generalized_label() {
        // RFC 3473 §2.3: length 8, class 16, C-Type 2; MPLS label 16, as KOM sends it
        // (kom-lsp-setup-and-resvtear.pcap, frame 2).
        let obj = [0x00, 0x08, 0x10, 0x02, 0x00, 0x00, 0x00, 0x10];
        let l = GeneralizedLabel::from_u32(16);
        assert_eq!(GeneralizedLabel::parse(2, &obj[4..]), Ok(l.clone()));
        assert_eq!(l.as_u32(), Some(16));
        assert_eq!(l.buffer_len(), 8);
        assert_eq!(emitted(|w| l.emit(w)), obj);
        // A longer label (two words) is kept, but is no 32-bit label.
        let long = GeneralizedLabel::parse(2, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
        assert_eq!(long.as_u32(), None);
        assert_eq!(emitted(|w| long.emit(w))[4..], [1, 2, 3, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn generalized_label_errors() {
        assert_eq!(
            GeneralizedLabel::parse(3, &[0; 4]),
            Err(ParseErrorKind::UnknownCType {
                class: 16,
                ctype: 3
            })
        );
        for len in [0, 2, 6] {
            assert_eq!(
                GeneralizedLabel::parse(2, &vec![0; len]),
                Err(ParseErrorKind::BadObject {
                    class: 16,
                    ctype: 2
                }),
                "{len} bytes"
            );
        }
    }

    #[test]
    fn unaligned_and_empty_labels_are_padded() {
        let odd = GeneralizedLabel {
            label: SmallVec::from_slice(&[9, 9, 9, 9, 9]),
        };
        assert_eq!(
            emitted(|w| odd.emit(w)),
            [0, 12, 16, 2, 9, 9, 9, 9, 9, 0, 0, 0]
        );
        let empty = GeneralizedLabel {
            label: SmallVec::new(),
        };
        assert_eq!(emitted(|w| empty.emit(w)), [0, 8, 16, 2, 0, 0, 0, 0]);
    }
}
