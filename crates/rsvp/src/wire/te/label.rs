//! LABEL (RFC 3209 §4.1) and LABEL_REQUEST (§4.2).

use pathwise_core::wire::{Reader, Writer};

use super::generalized::GeneralizedLabelRequest;
use super::{class, ctype};
use crate::wire::ParseErrorKind;
use crate::wire::objects::ObjectHeader;

/// LABEL (RFC 3209 §4.1, C-Type 1): the label the downstream node allocated for the LSP.
///
/// RFC 3473's Generalized LABEL (C-Type 2) is [`GeneralizedLabel`](super::GeneralizedLabel);
/// its Waveband Switching label (C-Type 3) is an unknown C-Type here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Label {
    /// The 32-bit label, right-justified; for MPLS only the low 20 bits are meaningful
    /// ([`Label::MPLS_MASK`]), but the whole word is kept so it travels unchanged.
    pub label: u32,
}

impl Label {
    /// The bits of [`Label::label`] an MPLS label occupies.
    pub const MPLS_MASK: u32 = 0x000f_ffff;

    /// Parse a LABEL body (RFC 3209 §4.1):
    ///
    /// ```text
    /// Class = 16, C-Type = 1
    /// +-------------+-------------+-------------+-------------+
    /// |                       (top label)                     |
    /// +-------------+-------------+-------------+-------------+
    /// ```
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        if ctype != ctype::LABEL {
            return Err(ParseErrorKind::unknown_ctype(class::LABEL, ctype));
        }
        let label: [u8; 4] = body
            .try_into()
            .map_err(|_| ParseErrorKind::bad_object(class::LABEL, ctype))?;
        Ok(Label {
            label: u32::from_be_bytes(label),
        })
    }

    /// C-Type: always 1.
    pub fn ctype(&self) -> u8 {
        ctype::LABEL
    }

    /// Object length in bytes, header included.
    pub fn buffer_len(&self) -> usize {
        ObjectHeader::LEN + 4
    }

    /// Write the object, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        ObjectHeader::emit(w, class::LABEL, ctype::LABEL, 4);
        w.u32(self.label);
    }
}

/// LABEL_REQUEST (RFC 3209 §4.2): asks the downstream node for a label, says which layer 3
/// protocol the LSP carries and, for ATM and Frame Relay, which labels the sender can use; or
/// RFC 3473's Generalized LABEL_REQUEST (§2.1), which asks for a GMPLS LSP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LabelRequest {
    /// L3PID: the Ethertype of the layer 3 protocol carried (0x0800 for IPv4); in a
    /// Generalized LABEL_REQUEST, the G-PID in the same 16 bits (RFC 3471 §3.1.1: an Ethertype
    /// for packet and Ethernet LSPs).
    pub l3pid: u16,
    /// What the C-Type adds to the L3PID: `None` for C-Type 1 (without label range), a label
    /// range for C-Types 2 and 3, the encoding and switching types for C-Type 4.
    pub range: Option<LabelRange>,
}

/// What a LABEL_REQUEST's C-Type adds to the L3PID (RFC 3209 §4.2.2, §4.2.3; RFC 3473 §2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LabelRange {
    /// ATM label range (C-Type 2, §4.2.2).
    Atm(AtmLabelRange),
    /// Frame Relay label range (C-Type 3, §4.2.3).
    FrameRelay(FrameRelayLabelRange),
    /// Generalized LABEL_REQUEST (C-Type 4, RFC 3473 §2.1): not a range, but the LSP encoding
    /// and switching types, in the 16 bits RFC 3209's C-Types reserve.
    Generalized(GeneralizedLabelRequest),
}

/// An ATM label range (RFC 3209 §4.2.2): the VPI/VCI block the originating switch supports.
/// VPIs are 12 bits, written masked to them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AtmLabelRange {
    /// M: the node can merge in the data plane.
    pub merge: bool,
    /// Minimum VPI (12 bits).
    pub min_vpi: u16,
    /// Minimum VCI.
    pub min_vci: u16,
    /// Maximum VPI (12 bits).
    pub max_vpi: u16,
    /// Maximum VCI.
    pub max_vci: u16,
}

/// A Frame Relay label range (RFC 3209 §4.2.3): the DLCI block the originating switch supports.
/// DLI is 2 bits and DLCIs 23 bits, written masked to them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FrameRelayLabelRange {
    /// DLI, the DLCI Length Indicator: [`FrameRelayLabelRange::DLI_10_BITS`] or
    /// [`FrameRelayLabelRange::DLI_23_BITS`] (other values are kept as received).
    pub dli: u8,
    /// Minimum DLCI, right-justified.
    pub min_dlci: u32,
    /// Maximum DLCI, right-justified.
    pub max_dlci: u32,
}

impl FrameRelayLabelRange {
    /// DLI for 10-bit DLCIs.
    pub const DLI_10_BITS: u8 = 0;
    /// DLI for 23-bit DLCIs.
    pub const DLI_23_BITS: u8 = 2;
}

const VPI_MASK: u16 = 0x0fff;
const MERGE_BIT: u16 = 0x8000;
const DLCI_MASK: u32 = 0x007f_ffff;
const DLI_SHIFT: u32 = 23;
const DLI_MASK: u8 = 0x03;

impl LabelRequest {
    /// Parse a LABEL_REQUEST body (RFC 3209 §4.2.1–§4.2.3):
    ///
    /// ```text
    /// Without label range: Class = 19, C-Type = 1
    /// +-------------+-------------+-------------+-------------+
    /// |          Reserved         |           L3PID           |
    /// +-------------+-------------+-------------+-------------+
    /// With ATM label range: Class = 19, C-Type = 2 — the word above, then
    /// +-+-----+-----+-------------+-------------+-------------+
    /// |M| Res |    Minimum VPI    |        Minimum VCI        |
    /// +-+-----+-----+-------------+-------------+-------------+
    /// |  Res  |    Maximum VPI    |        Maximum VCI        |
    /// +-------+-----+-------------+-------------+-------------+
    /// With Frame Relay label range: Class = 19, C-Type = 3 — the first word, then
    /// +-------------+---+---------+-------------+-------------+
    /// |  Reserved   |DLI|            Minimum DLCI             |
    /// +-------------+---+---------+-------------+-------------+
    /// |   Reserved      |            Maximum DLCI             |
    /// +-----------------+---------+-------------+-------------+
    /// ```
    ///
    /// (M: 1 bit, Res: 3 then 4 bits, VPI: 12 bits; Reserved: 7 then 9 bits, DLI: 2 bits,
    /// DLCI: 23 bits.)
    ///
    /// And the Generalized LABEL_REQUEST (RFC 3473 §2.1):
    ///
    /// ```text
    /// Class = 19, C-Type = 4
    /// +-------------+-------------+-------------+-------------+
    /// |LSP Enc. Type|Switching Typ|           G-PID           |
    /// +-------------+-------------+-------------+-------------+
    /// ```
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        let want = match ctype {
            ctype::LABEL_REQUEST | ctype::LABEL_REQUEST_GENERALIZED => 4,
            ctype::LABEL_REQUEST_ATM | ctype::LABEL_REQUEST_FRAME_RELAY => 12,
            _ => return Err(ParseErrorKind::unknown_ctype(class::LABEL_REQUEST, ctype)),
        };
        if body.len() != want {
            return Err(ParseErrorKind::bad_object(class::LABEL_REQUEST, ctype));
        }
        let mut r = Reader::new(body);
        let (encoding, switching) = (r.u8()?, r.u8()?);
        let l3pid = r.u16()?;
        let range = match ctype {
            // RFC 3473 §2.1.
            ctype::LABEL_REQUEST_GENERALIZED => {
                Some(LabelRange::Generalized(GeneralizedLabelRequest {
                    encoding,
                    switching,
                }))
            }
            ctype::LABEL_REQUEST_ATM => {
                let min = r.u16()?;
                let min_vci = r.u16()?;
                let max = r.u16()?;
                Some(LabelRange::Atm(AtmLabelRange {
                    merge: min & MERGE_BIT != 0,
                    min_vpi: min & VPI_MASK,
                    min_vci,
                    max_vpi: max & VPI_MASK,
                    max_vci: r.u16()?,
                }))
            }
            ctype::LABEL_REQUEST_FRAME_RELAY => {
                let min = r.u32()?;
                let max = r.u32()?;
                Some(LabelRange::FrameRelay(FrameRelayLabelRange {
                    dli: ((min >> DLI_SHIFT) as u8) & DLI_MASK,
                    min_dlci: min & DLCI_MASK,
                    max_dlci: max & DLCI_MASK,
                }))
            }
            _ => None,
        };
        Ok(LabelRequest { l3pid, range })
    }

    /// A Generalized LABEL_REQUEST (RFC 3473 §2.1) for G-PID `gpid`.
    pub fn generalized_request(request: GeneralizedLabelRequest, gpid: u16) -> Self {
        LabelRequest {
            l3pid: gpid,
            range: Some(LabelRange::Generalized(request)),
        }
    }

    /// The encoding and switching types, when this is a Generalized LABEL_REQUEST.
    pub fn generalized(&self) -> Option<GeneralizedLabelRequest> {
        match self.range {
            Some(LabelRange::Generalized(g)) => Some(g),
            _ => None,
        }
    }

    /// C-Type: 1 without a label range, 2 with an ATM range, 3 with a Frame Relay range, 4 for
    /// a Generalized LABEL_REQUEST.
    pub fn ctype(&self) -> u8 {
        match self.range {
            None => ctype::LABEL_REQUEST,
            Some(LabelRange::Atm(_)) => ctype::LABEL_REQUEST_ATM,
            Some(LabelRange::FrameRelay(_)) => ctype::LABEL_REQUEST_FRAME_RELAY,
            Some(LabelRange::Generalized(_)) => ctype::LABEL_REQUEST_GENERALIZED,
        }
    }

    /// Object length in bytes, header included.
    pub fn buffer_len(&self) -> usize {
        ObjectHeader::LEN
            + match self.range {
                None | Some(LabelRange::Generalized(_)) => 4,
                Some(_) => 12,
            }
    }

    /// Write the object, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        ObjectHeader::emit(
            w,
            class::LABEL_REQUEST,
            self.ctype(),
            self.buffer_len() - ObjectHeader::LEN,
        );
        match self.range {
            Some(LabelRange::Generalized(g)) => {
                w.u8(g.encoding);
                w.u8(g.switching);
            }
            _ => w.u16(0),
        }
        w.u16(self.l3pid);
        match self.range {
            None | Some(LabelRange::Generalized(_)) => {}
            Some(LabelRange::Atm(a)) => {
                let merge = if a.merge { MERGE_BIT } else { 0 };
                w.u16(merge | (a.min_vpi & VPI_MASK));
                w.u16(a.min_vci);
                w.u16(a.max_vpi & VPI_MASK);
                w.u16(a.max_vci);
            }
            Some(LabelRange::FrameRelay(f)) => {
                w.u32((u32::from(f.dli & DLI_MASK) << DLI_SHIFT) | (f.min_dlci & DLCI_MASK));
                w.u32(f.max_dlci & DLCI_MASK);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::te::emitted;

    #[test]
    fn label() {
        let obj = [
            0x00, 0x08, 0x10, 0x01, // length 8, LABEL, C-Type 1
            0x00, 0x01, 0x86, 0xa0, // label 100000
        ];
        let l = Label { label: 100_000 };
        assert_eq!(Label::parse(1, &obj[4..]), Ok(l));
        assert_eq!(l.buffer_len(), 8);
        assert_eq!(emitted(|w| l.emit(w)), obj);
        // All 32 bits are kept, not only the 20 of an MPLS label.
        let wide = Label { label: 0xfff0_0003 };
        assert_eq!(Label::parse(1, &[0xff, 0xf0, 0x00, 0x03]), Ok(wide));
        assert_eq!(wide.label & Label::MPLS_MASK, 3);
    }

    #[test]
    fn label_errors() {
        assert_eq!(
            Label::parse(2, &[0; 4]),
            Err(ParseErrorKind::UnknownCType {
                class: 16,
                ctype: 2
            })
        );
        for len in [0, 8] {
            assert_eq!(
                Label::parse(1, &vec![0; len]),
                Err(ParseErrorKind::BadObject {
                    class: 16,
                    ctype: 1
                })
            );
        }
    }

    #[test]
    fn label_request_without_range() {
        let obj = [
            0x00, 0x08, 0x13, 0x01, // length 8, LABEL_REQUEST, C-Type 1
            0x00, 0x00, // Reserved
            0x08, 0x00, // L3PID: IPv4
        ];
        let l = LabelRequest {
            l3pid: 0x0800,
            range: None,
        };
        assert_eq!(LabelRequest::parse(1, &obj[4..]), Ok(l));
        assert_eq!(l.buffer_len(), 8);
        assert_eq!(emitted(|w| l.emit(w)), obj);
        // Reserved is ignored on receipt.
        assert_eq!(LabelRequest::parse(1, &[0xff, 0xff, 0x08, 0x00]), Ok(l));
    }

    #[test]
    fn label_request_atm() {
        let obj = [
            0x00, 0x10, 0x13, 0x02, // length 16, LABEL_REQUEST, C-Type 2
            0x00, 0x00, 0x08, 0x00, // Reserved, L3PID IPv4
            0x80, 0x01, // M = 1, Res = 0, Minimum VPI 1
            0x00, 0x20, // Minimum VCI 32
            0x0f, 0xff, // Res = 0, Maximum VPI 4095
            0xff, 0xff, // Maximum VCI 65535
        ];
        let l = LabelRequest {
            l3pid: 0x0800,
            range: Some(LabelRange::Atm(AtmLabelRange {
                merge: true,
                min_vpi: 1,
                min_vci: 32,
                max_vpi: 4095,
                max_vci: 0xffff,
            })),
        };
        assert_eq!(LabelRequest::parse(2, &obj[4..]), Ok(l));
        assert_eq!(l.buffer_len(), 16);
        assert_eq!(emitted(|w| l.emit(w)), obj);
        // The Res bits are ignored on receipt.
        let mut dirty = obj;
        dirty[8] |= 0x70;
        dirty[12] |= 0xf0;
        assert_eq!(LabelRequest::parse(2, &dirty[4..]), Ok(l));
    }

    #[test]
    fn label_request_frame_relay() {
        let obj = [
            0x00, 0x10, 0x13, 0x03, // length 16, LABEL_REQUEST, C-Type 3
            0x00, 0x00, 0x86, 0xdd, // Reserved, L3PID IPv6
            0x01, 0x00, 0x00, 0x10, // Reserved 0, DLI 2 (23-bit DLCIs), Minimum DLCI 16
            0x00, 0x7f, 0xff, 0xff, // Reserved 0, Maximum DLCI 2^23 - 1
        ];
        let l = LabelRequest {
            l3pid: 0x86dd,
            range: Some(LabelRange::FrameRelay(FrameRelayLabelRange {
                dli: FrameRelayLabelRange::DLI_23_BITS,
                min_dlci: 16,
                max_dlci: 0x7f_ffff,
            })),
        };
        assert_eq!(LabelRequest::parse(3, &obj[4..]), Ok(l));
        assert_eq!(emitted(|w| l.emit(w)), obj);
        let mut dirty = obj;
        dirty[8] |= 0xfe;
        dirty[12] |= 0xff;
        dirty[13] |= 0x80;
        assert_eq!(LabelRequest::parse(3, &dirty[4..]), Ok(l));
    }

    #[test]
    fn label_request_errors() {
        assert_eq!(
            LabelRequest::parse(5, &[0; 4]),
            Err(ParseErrorKind::UnknownCType {
                class: 19,
                ctype: 5
            })
        );
        for (ctype, len) in [(1, 12), (1, 0), (2, 4), (2, 16), (3, 8)] {
            assert_eq!(
                LabelRequest::parse(ctype, &vec![0; len]),
                Err(ParseErrorKind::BadObject { class: 19, ctype }),
                "C-Type {ctype}, {len} bytes"
            );
        }
    }

    #[test]
    fn out_of_range_fields_are_masked() {
        let l = LabelRequest {
            l3pid: 1,
            range: Some(LabelRange::FrameRelay(FrameRelayLabelRange {
                dli: 0xff,
                min_dlci: u32::MAX,
                max_dlci: u32::MAX,
            })),
        };
        let b = emitted(|w| l.emit(w));
        assert_eq!(&b[8..], &[0x01, 0xff, 0xff, 0xff, 0x00, 0x7f, 0xff, 0xff]);
        let l = LabelRequest {
            l3pid: 1,
            range: Some(LabelRange::Atm(AtmLabelRange {
                merge: false,
                min_vpi: 0xffff,
                min_vci: 0,
                max_vpi: 0xffff,
                max_vci: 0,
            })),
        };
        let b = emitted(|w| l.emit(w));
        assert_eq!(&b[8..], &[0x0f, 0xff, 0, 0, 0x0f, 0xff, 0, 0]);
    }
}
