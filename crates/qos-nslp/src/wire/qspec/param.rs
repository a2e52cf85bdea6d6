//! QSPEC parameters (RFC 5975 §5.1.2 parameter header, §5.2 parameter codings) and the rules
//! for parameters a QNE cannot interpret (§3.3, §4.2.1, §4.2.2).

use super::QspecErrorKind;
use crate::wire::info_spec::{ErrorClass, code};
use pathwise_core::wire::{Reader, Writer};

/// Bits of the parameter header's first word (§5.1.2).
///
/// ```text
///  |M|E|N|r|     Parameter ID      |r|r|r|r|         Length        |
/// ```
mod field {
    pub const M: u32 = 0x8000_0000;
    pub const E: u32 = 0x4000_0000;
    pub const N: u32 = 0x2000_0000;
    pub const ID_SHIFT: u32 = 16;
    pub const ID_MASK: u32 = 0x0fff;
    pub const LENGTH_MASK: u32 = 0x0fff;
}

/// Parameter IDs (§5.2, IANA §7).
pub mod parameter_id {
    /// `<TMOD-1>` (§5.2.1).
    pub const TMOD_1: u16 = 1;
    /// `<TMOD-2>` (§5.2.2).
    pub const TMOD_2: u16 = 2;
    /// `<Path Latency>` (§5.2.3).
    pub const PATH_LATENCY: u16 = 3;
    /// `<Path Jitter>` (§5.2.4).
    pub const PATH_JITTER: u16 = 4;
    /// `<Path PLR>` (§5.2.5).
    pub const PATH_PLR: u16 = 5;
    /// `<Path PER>` (§5.2.6).
    pub const PATH_PER: u16 = 6;
    /// `<Slack Term>` (§5.2.7).
    pub const SLACK_TERM: u16 = 7;
    /// `<Preemption Priority>` and `<Defending Priority>` (§5.2.8).
    pub const PREEMPTION_PRIORITY: u16 = 8;
    /// `<Admission Priority>` (§5.2.9).
    pub const ADMISSION_PRIORITY: u16 = 9;
    /// `<RPH Priority>` (§5.2.10).
    pub const RPH_PRIORITY: u16 = 10;
    /// `<Excess Treatment>` (§5.2.11).
    pub const EXCESS_TREATMENT: u16 = 11;
    /// `<PHB Class>` (§5.2.12).
    pub const PHB_CLASS: u16 = 12;
    /// `<DSTE Class Type>` (§5.2.13).
    pub const DSTE_CLASS_TYPE: u16 = 13;
    /// `<Y.1541 QoS Class>` (§5.2.14).
    pub const Y1541_QOS_CLASS: u16 = 14;
}

/// The M, E and N flags of a parameter header (§5.1.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ParamFlags {
    /// M: the parameter MUST be interpreted; a QNE that cannot fails the reservation.
    pub mandatory: bool,
    /// E: the parameter could not be met (reservation failure) or was in error (§4.2.1).
    pub error: bool,
    /// N: some QNE on the path could not interpret the parameter (§4.2.2).
    pub not_supported: bool,
}

impl ParamFlags {
    /// Flags with only M set: what a QNI sets on `<TMOD-1>` (§5.2.1 shows `|1|E|0|r|`).
    pub const MANDATORY: ParamFlags = ParamFlags {
        mandatory: true,
        error: false,
        not_supported: false,
    };
}

/// A traffic model, `<TMOD-1>` or `<TMOD-2>` (§3.3.1, §5.2.1, §5.2.2): a token bucket after
/// RFC 2212. Rates and bucket size are IEEE single-precision floats; `peak_rate` may be
/// infinity ("If the peak rate is unknown or unspecified, then p MUST be set to infinity").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tmod {
    /// r: token rate, octets per second.
    pub rate: f32,
    /// b: bucket depth, octets.
    pub bucket_size: f32,
    /// p: peak rate, octets per second.
    pub peak_rate: f32,
    /// m: minimum policed unit, octets.
    pub min_policed_unit: u32,
    /// MPS: maximum packet size, octets.
    pub max_packet_size: u32,
}

impl Tmod {
    const LEN: usize = 20;

    /// Whether `bits` is a value §5.2.1 allows for r, b or p: sign bit zero, exponent at least
    /// 127 (so the value is at least 1; "Exponents less than 127 (i.e., 0) are prohibited"),
    /// and not a NaN; infinity (exponent 255, mantissa zero) is allowed.
    pub fn valid_float(bits: u32) -> bool {
        let sign = bits >> 31;
        let exponent = (bits >> 23) & 0xff;
        let mantissa = bits & 0x007f_ffff;
        sign == 0 && exponent >= 127 && !(exponent == 255 && mantissa != 0)
    }
}

/// `<Path Jitter>` (§5.2.4): four statistics in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PathJitter {
    /// STAT1: variance.
    pub variance: u32,
    /// STAT2: 99.9 percentile.
    pub percentile_99_9: u32,
    /// STAT3: minimum latency.
    pub min_latency: u32,
    /// STAT4: reserved, kept as received.
    pub reserved: u32,
}

/// `<Excess Treatment>` values (§5.2.11, IANA §7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExcessTreatment {
    /// 0: drop.
    Drop,
    /// 1: shape.
    Shape,
    /// 2: re-mark.
    Remark,
    /// 3: no metering or policing is permitted.
    NoMetering,
    /// Any other value (4–63 unassigned), kept.
    Other(u8),
}

impl ExcessTreatment {
    fn from_number(n: u8) -> Self {
        match n {
            0 => ExcessTreatment::Drop,
            1 => ExcessTreatment::Shape,
            2 => ExcessTreatment::Remark,
            3 => ExcessTreatment::NoMetering,
            n => ExcessTreatment::Other(n),
        }
    }

    fn number(self) -> u8 {
        match self {
            ExcessTreatment::Drop => 0,
            ExcessTreatment::Shape => 1,
            ExcessTreatment::Remark => 2,
            ExcessTreatment::NoMetering => 3,
            ExcessTreatment::Other(n) => n,
        }
    }
}

/// The 16-bit PHB Field of `<PHB Class>` (§5.2.12, RFC 3140 §2), decoded by
/// [`ParamValue::phb`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phb {
    /// A single PHB by DSCP.
    Dscp(u8),
    /// A set of PHBs (a PHB scheduling class) by DSCP.
    DscpSet(u8),
    /// A single non-standard PHB by its 12-bit ID code.
    Code(u16),
    /// A set of non-standard PHBs by its 12-bit ID code.
    CodeSet(u16),
}

/// A parameter's value.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    /// `<TMOD-1>` (ID 1).
    Tmod1(Tmod),
    /// `<TMOD-2>` (ID 2).
    Tmod2(Tmod),
    /// `<Path Latency>` (ID 3): microseconds; 2^32-1 is "indeterminate".
    PathLatency(u32),
    /// `<Path Jitter>` (ID 4).
    PathJitter(PathJitter),
    /// `<Path PLR>` (ID 5): a loss ratio (IEEE float, non-negative, finite).
    PathPlr(f32),
    /// `<Path PER>` (ID 6): an error ratio (IEEE float, non-negative, finite).
    PathPer(f32),
    /// `<Slack Term>` (ID 7): microseconds.
    SlackTerm(u32),
    /// `<Preemption Priority>` and `<Defending Priority>` (ID 8).
    PreemptionPriority {
        /// Preemption priority of the new flow.
        preemption: u16,
        /// Defending priority once admitted.
        defending: u16,
    },
    /// `<Admission Priority>` (ID 9).
    AdmissionPriority {
        /// Y.2171 admission priority: 0 best effort, 1 normal, 2 high; 255 ("all ones") when
        /// the locally significant field is used instead.
        y2171: u8,
        /// Admission priority.
        admission: u8,
    },
    /// `<RPH Priority>` (ID 10).
    RphPriority {
        /// RPH namespace (RFC 4412 registry).
        namespace: u16,
        /// RPH priority.
        priority: u8,
    },
    /// `<Excess Treatment>` (ID 11).
    ExcessTreatment {
        /// What to do with out-of-profile traffic.
        treatment: ExcessTreatment,
        /// DSCP to re-mark to (6 bits).
        remark: u8,
    },
    /// `<PHB Class>` (ID 12): the PHB Field as received.
    PhbClass(u16),
    /// `<DSTE Class Type>` (ID 13): 0–7 allowed; other values kept for the RMF to judge.
    DsteClassType(u8),
    /// `<Y.1541 QoS Class>` (ID 14): 0–7 allowed; other values kept for the RMF to judge.
    Y1541QosClass(u8),
    /// A parameter this codec does not know, its body kept as received.
    Unknown {
        /// Parameter ID.
        id: u16,
        /// Body, a whole number of words.
        body: Vec<u8>,
    },
}

impl ParamValue {
    /// The parameter ID.
    pub fn id(&self) -> u16 {
        use parameter_id as id;
        match self {
            ParamValue::Tmod1(_) => id::TMOD_1,
            ParamValue::Tmod2(_) => id::TMOD_2,
            ParamValue::PathLatency(_) => id::PATH_LATENCY,
            ParamValue::PathJitter(_) => id::PATH_JITTER,
            ParamValue::PathPlr(_) => id::PATH_PLR,
            ParamValue::PathPer(_) => id::PATH_PER,
            ParamValue::SlackTerm(_) => id::SLACK_TERM,
            ParamValue::PreemptionPriority { .. } => id::PREEMPTION_PRIORITY,
            ParamValue::AdmissionPriority { .. } => id::ADMISSION_PRIORITY,
            ParamValue::RphPriority { .. } => id::RPH_PRIORITY,
            ParamValue::ExcessTreatment { .. } => id::EXCESS_TREATMENT,
            ParamValue::PhbClass(_) => id::PHB_CLASS,
            ParamValue::DsteClassType(_) => id::DSTE_CLASS_TYPE,
            ParamValue::Y1541QosClass(_) => id::Y1541_QOS_CLASS,
            ParamValue::Unknown { id, .. } => *id & 0x0fff,
        }
    }

    /// Body length.
    pub fn buffer_len(&self) -> usize {
        match self {
            ParamValue::Tmod1(_) | ParamValue::Tmod2(_) => Tmod::LEN,
            ParamValue::PathJitter(_) => 16,
            ParamValue::Unknown { body, .. } => crate::wire::pad4(body.len()),
            _ => 4,
        }
    }

    /// The PHB of a `<PHB Class>` parameter in one of the four forms of §5.2.12, or `None` for
    /// another parameter or a PHB Field that matches none of them.
    pub fn phb(&self) -> Option<Phb> {
        let ParamValue::PhbClass(f) = *self else {
            return None;
        };
        let low = f & 0x3ff;
        match (f & 0xf, low) {
            (_, 0) => Some(Phb::Dscp((f >> 10) as u8)),
            (_, 0b10) => Some(Phb::DscpSet((f >> 10) as u8)),
            (0b0001, _) => Some(Phb::Code(f >> 4)),
            (0b0011, _) => Some(Phb::CodeSet(f >> 4)),
            _ => None,
        }
    }

    fn parse(id: u16, body: &[u8]) -> Result<Self, QspecErrorKind> {
        use parameter_id as pid;
        let length = |expected: usize| {
            if body.len() == expected {
                Ok(())
            } else {
                Err(QspecErrorKind::ParameterLength {
                    parameter_id: id,
                    length_words: (body.len() / 4) as u16,
                })
            }
        };
        let mut r = Reader::new(body);
        let trunc = |_| QspecErrorKind::ParameterLength {
            parameter_id: id,
            length_words: (body.len() / 4) as u16,
        };
        let float = |bits: u32, ok: fn(u32) -> bool| {
            if ok(bits) {
                Ok(f32::from_bits(bits))
            } else {
                Err(QspecErrorKind::BadFloat {
                    parameter_id: id,
                    bits,
                })
            }
        };
        Ok(match id {
            pid::TMOD_1 | pid::TMOD_2 => {
                length(Tmod::LEN)?;
                let t = Tmod {
                    rate: float(r.u32().map_err(trunc)?, Tmod::valid_float)?,
                    bucket_size: float(r.u32().map_err(trunc)?, Tmod::valid_float)?,
                    peak_rate: float(r.u32().map_err(trunc)?, Tmod::valid_float)?,
                    min_policed_unit: r.u32().map_err(trunc)?,
                    max_packet_size: r.u32().map_err(trunc)?,
                };
                if id == pid::TMOD_1 {
                    ParamValue::Tmod1(t)
                } else {
                    ParamValue::Tmod2(t)
                }
            }
            pid::PATH_JITTER => {
                length(16)?;
                ParamValue::PathJitter(PathJitter {
                    variance: r.u32().map_err(trunc)?,
                    percentile_99_9: r.u32().map_err(trunc)?,
                    min_latency: r.u32().map_err(trunc)?,
                    reserved: r.u32().map_err(trunc)?,
                })
            }
            pid::PATH_LATENCY..=pid::Y1541_QOS_CLASS => {
                length(4)?;
                let w = r.u32().map_err(trunc)?;
                let [b0, b1, _, _] = w.to_be_bytes();
                match id {
                    pid::PATH_LATENCY => ParamValue::PathLatency(w),
                    // A ratio: non-negative and finite (§5.2.5, §5.2.6 clamp it to 10^-1).
                    pid::PATH_PLR => ParamValue::PathPlr(float(w, valid_ratio)?),
                    pid::PATH_PER => ParamValue::PathPer(float(w, valid_ratio)?),
                    pid::SLACK_TERM => ParamValue::SlackTerm(w),
                    pid::PREEMPTION_PRIORITY => ParamValue::PreemptionPriority {
                        preemption: (w >> 16) as u16,
                        defending: w as u16,
                    },
                    pid::ADMISSION_PRIORITY => ParamValue::AdmissionPriority {
                        y2171: b0,
                        admission: b1,
                    },
                    pid::RPH_PRIORITY => ParamValue::RphPriority {
                        namespace: (w >> 16) as u16,
                        priority: (w >> 8) as u8,
                    },
                    pid::EXCESS_TREATMENT => ParamValue::ExcessTreatment {
                        treatment: ExcessTreatment::from_number(b0),
                        remark: b1 >> 2,
                    },
                    pid::PHB_CLASS => ParamValue::PhbClass((w >> 16) as u16),
                    pid::DSTE_CLASS_TYPE => ParamValue::DsteClassType(b0),
                    _ => ParamValue::Y1541QosClass(b0),
                }
            }
            _ => ParamValue::Unknown {
                id,
                body: body.to_vec(),
            },
        })
    }

    fn emit(&self, w: &mut Writer<'_>) {
        let word = |w: &mut Writer<'_>, b: [u8; 4]| w.bytes(&b);
        match self {
            ParamValue::Tmod1(t) | ParamValue::Tmod2(t) => {
                w.f32(t.rate);
                w.f32(t.bucket_size);
                w.f32(t.peak_rate);
                w.u32(t.min_policed_unit);
                w.u32(t.max_packet_size);
            }
            ParamValue::PathJitter(j) => {
                w.u32(j.variance);
                w.u32(j.percentile_99_9);
                w.u32(j.min_latency);
                w.u32(j.reserved);
            }
            ParamValue::PathLatency(v) | ParamValue::SlackTerm(v) => w.u32(*v),
            ParamValue::PathPlr(v) | ParamValue::PathPer(v) => w.f32(*v),
            ParamValue::PreemptionPriority {
                preemption,
                defending,
            } => {
                w.u16(*preemption);
                w.u16(*defending);
            }
            ParamValue::AdmissionPriority { y2171, admission } => {
                word(w, [*y2171, *admission, 0, 0])
            }
            ParamValue::RphPriority {
                namespace,
                priority,
            } => {
                w.u16(*namespace);
                w.u8(*priority);
                w.u8(0);
            }
            ParamValue::ExcessTreatment { treatment, remark } => {
                word(w, [treatment.number(), (remark & 0x3f) << 2, 0, 0])
            }
            ParamValue::PhbClass(f) => {
                w.u16(*f);
                w.u16(0);
            }
            ParamValue::DsteClassType(v) | ParamValue::Y1541QosClass(v) => word(w, [*v, 0, 0, 0]),
            ParamValue::Unknown { body, .. } => {
                crate::wire::write_padded(w, body);
            }
        }
    }
}

/// A `<Path PLR>` or `<Path PER>` value: sign bit zero, neither infinite nor NaN.
fn valid_ratio(bits: u32) -> bool {
    bits >> 31 == 0 && (bits >> 23) & 0xff != 0xff
}

/// What a QNE that cannot interpret a parameter must do (§3.3, §4.2.2, §4.2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NotSupported {
    /// M clear: the N flag is set and the message forwarded; the reservation does not fail.
    Continue,
    /// M set: the reservation fails (INFO-SPEC Transient Failure / Reservation failure).
    ReservationFailure,
}

impl NotSupported {
    /// The INFO-SPEC a RESPONSE reports when the reservation fails (§4.2.3: "Reservation
    /// Failure ... when a QSPEC parameter with M flag set could not be interpreted").
    pub fn info_spec(self) -> Option<(ErrorClass, u8)> {
        match self {
            NotSupported::Continue => None,
            NotSupported::ReservationFailure => Some((
                ErrorClass::TransientFailure,
                code::transient::RESERVATION_FAILURE,
            )),
        }
    }
}

/// One QSPEC parameter: its flags and value (§5.1.2).
#[derive(Clone, Debug, PartialEq)]
pub struct Parameter {
    /// M, E, N.
    pub flags: ParamFlags,
    /// The value (which names the parameter ID).
    pub value: ParamValue,
}

impl Parameter {
    /// Header length.
    pub const HEADER_LEN: usize = 4;

    /// A parameter with `flags`.
    pub fn new(flags: ParamFlags, value: ParamValue) -> Self {
        Parameter { flags, value }
    }

    /// Length on the wire, header included.
    pub fn buffer_len(&self) -> usize {
        Self::HEADER_LEN + self.value.buffer_len()
    }

    /// Whether this codec decoded the parameter (as opposed to keeping it as
    /// [`ParamValue::Unknown`]).
    pub fn is_known(&self) -> bool {
        !matches!(self.value, ParamValue::Unknown { .. })
    }

    /// Applies §4.2.2 to a parameter this QNE cannot interpret: sets the N flag and says
    /// whether the reservation fails (M set) or continues (M clear).
    pub fn mark_not_supported(&mut self) -> NotSupported {
        self.flags.not_supported = true;
        if self.flags.mandatory {
            NotSupported::ReservationFailure
        } else {
            NotSupported::Continue
        }
    }

    /// Parse one parameter at the start of `buf`, returning it and the bytes after it.
    pub(crate) fn parse(buf: &[u8]) -> Result<(Self, &[u8]), QspecErrorKind> {
        let mut r = Reader::new(buf);
        let header = r.u32().map_err(|_| QspecErrorKind::Truncated)?;
        let id = ((header >> field::ID_SHIFT) & field::ID_MASK) as u16;
        let words = (header & field::LENGTH_MASK) as u16;
        let body =
            r.bytes(usize::from(words) * 4)
                .map_err(|_| QspecErrorKind::ParameterLength {
                    parameter_id: id,
                    length_words: words,
                })?;
        let flags = ParamFlags {
            mandatory: header & field::M != 0,
            error: header & field::E != 0,
            not_supported: header & field::N != 0,
        };
        let value = ParamValue::parse(id, body)?;
        Ok((Parameter { flags, value }, r.rest()))
    }

    /// Write the parameter; reserved bits are zero.
    pub fn emit(&self, w: &mut Writer<'_>) {
        let f = self.flags;
        let words = (self.value.buffer_len() / 4) as u32 & field::LENGTH_MASK;
        w.u32(
            (u32::from(f.mandatory) * field::M)
                | (u32::from(f.error) * field::E)
                | (u32::from(f.not_supported) * field::N)
                | (u32::from(self.value.id()) & field::ID_MASK) << field::ID_SHIFT
                | words,
        );
        self.value.emit(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parameter_id as pid;

    fn parse(b: &[u8]) -> Result<Parameter, QspecErrorKind> {
        let (p, rest) = Parameter::parse(b)?;
        assert!(rest.is_empty());
        Ok(p)
    }

    fn emitted(p: &Parameter) -> Vec<u8> {
        let mut v = vec![0xa5; 3];
        p.emit(&mut Writer::new(&mut v));
        assert_eq!(v.len() - 3, p.buffer_len());
        v.split_off(3)
    }

    /// RFC 5975 §5.2.1: `|1|E|0|r| 1 |r|r|r|r| 5 |`, then r, b, p as floats, m and MPS as
    /// integers. A controlled-load-like request: r = 125000 octets/s (1 Mbit/s), b = 3000,
    /// p = infinity, m = 64, MPS = 1500.
    const TMOD_1: [u8; 24] = [
        0x80, 0x01, 0x00, 0x05, // M, ID 1, length 5
        0x47, 0xf4, 0x24, 0x00, // 125000.0
        0x45, 0x3b, 0x80, 0x00, // 3000.0
        0x7f, 0x80, 0x00, 0x00, // +infinity
        0x00, 0x00, 0x00, 0x40, // 64
        0x00, 0x00, 0x05, 0xdc, // 1500
    ];

    fn tmod() -> Tmod {
        Tmod {
            rate: 125_000.0,
            bucket_size: 3000.0,
            peak_rate: f32::INFINITY,
            min_policed_unit: 64,
            max_packet_size: 1500,
        }
    }

    #[test]
    fn tmod_1_deconstruct_and_construct() {
        let p = parse(&TMOD_1).unwrap();
        assert_eq!(p.flags, ParamFlags::MANDATORY);
        assert_eq!(p.value, ParamValue::Tmod1(tmod()));
        assert_eq!(p.value.id(), pid::TMOD_1);
        assert_eq!(emitted(&p), TMOD_1);
        let t2 = Parameter::new(ParamFlags::default(), ParamValue::Tmod2(tmod()));
        let b = emitted(&t2);
        assert_eq!(&b[..4], &[0x00, 0x02, 0x00, 0x05]);
        assert_eq!(parse(&b).unwrap(), t2);
    }

    #[test]
    fn tmod_floats_the_rfc_prohibits() {
        // §5.2.1: sign bit must be zero; exponents below 127 prohibited; NaN is no value.
        for (at, bits) in [
            (4, 0xc7f4_2400u32), // -125000
            (4, 0x3f00_0000),    // 0.5 (exponent 126)
            (8, 0x0000_0000),    // 0
            (12, 0x7fc0_0000),   // NaN
        ] {
            let mut b = TMOD_1;
            b[at..at + 4].copy_from_slice(&bits.to_be_bytes());
            assert_eq!(
                parse(&b),
                Err(QspecErrorKind::BadFloat {
                    parameter_id: 1,
                    bits
                })
            );
        }
        assert!(Tmod::valid_float(1.0f32.to_bits()));
        assert!(Tmod::valid_float(f32::INFINITY.to_bits()));
    }

    #[test]
    fn path_latency_layout() {
        // §5.2.3: `|M|E|N|r| 3 |r|r|r|r| 1 |` then a 32-bit integer; E and N set here.
        let b = [0x60, 0x03, 0x00, 0x01, 0x00, 0x00, 0x27, 0x10];
        let p = parse(&b).unwrap();
        assert_eq!(
            p.flags,
            ParamFlags {
                mandatory: false,
                error: true,
                not_supported: true
            }
        );
        assert_eq!(p.value, ParamValue::PathLatency(10_000));
        assert_eq!(emitted(&p), b);
    }

    #[test]
    fn every_one_word_parameter_layout() {
        let cases: [([u8; 4], u16, ParamValue); 11] = [
            ([0, 0, 0, 0], pid::PATH_PLR, ParamValue::PathPlr(0.0)),
            (
                1e-3f32.to_bits().to_be_bytes(),
                pid::PATH_PER,
                ParamValue::PathPer(1e-3),
            ),
            ([0, 1, 0, 0], pid::SLACK_TERM, ParamValue::SlackTerm(65536)),
            (
                [0, 2, 0, 3],
                pid::PREEMPTION_PRIORITY,
                ParamValue::PreemptionPriority {
                    preemption: 2,
                    defending: 3,
                },
            ),
            (
                [2, 2, 0, 0],
                pid::ADMISSION_PRIORITY,
                ParamValue::AdmissionPriority {
                    y2171: 2,
                    admission: 2,
                },
            ),
            (
                [0, 4, 7, 0],
                pid::RPH_PRIORITY,
                ParamValue::RphPriority {
                    namespace: 4,
                    priority: 7,
                },
            ),
            (
                [2, 46 << 2, 0, 0],
                pid::EXCESS_TREATMENT,
                ParamValue::ExcessTreatment {
                    treatment: ExcessTreatment::Remark,
                    remark: 46,
                },
            ),
            (
                [0xb8, 0, 0, 0],
                pid::PHB_CLASS,
                ParamValue::PhbClass(0xb800),
            ),
            (
                [5, 0, 0, 0],
                pid::DSTE_CLASS_TYPE,
                ParamValue::DsteClassType(5),
            ),
            (
                [1, 0, 0, 0],
                pid::Y1541_QOS_CLASS,
                ParamValue::Y1541QosClass(1),
            ),
            (
                [0xff, 0xff, 0xff, 0xff],
                pid::PATH_LATENCY,
                ParamValue::PathLatency(u32::MAX),
            ),
        ];
        for (body, id, value) in cases {
            let mut b = vec![0x00, id as u8, 0x00, 0x01];
            b.extend(body);
            let p = parse(&b).unwrap();
            assert_eq!(p.value, value, "parameter {id}");
            assert_eq!(emitted(&p), b, "parameter {id}");
        }
    }

    #[test]
    fn reserved_bits_ignored_and_zeroed() {
        // Reserved header bits (r) and reserved value bits set.
        let b = [0x10, 0x0d, 0xf0, 0x01, 0x07, 0xff, 0xff, 0xff];
        let p = parse(&b).unwrap();
        assert_eq!(p.value, ParamValue::DsteClassType(7));
        assert_eq!(emitted(&p), [0x00, 0x0d, 0x00, 0x01, 0x07, 0, 0, 0]);
    }

    #[test]
    fn path_jitter_layout() {
        let mut b = vec![0x00, 0x04, 0x00, 0x04];
        for v in [1u32, 2, 3, 0] {
            b.extend(v.to_be_bytes());
        }
        let p = parse(&b).unwrap();
        assert_eq!(
            p.value,
            ParamValue::PathJitter(PathJitter {
                variance: 1,
                percentile_99_9: 2,
                min_latency: 3,
                reserved: 0
            })
        );
        assert_eq!(emitted(&p), b);
    }

    #[test]
    fn phb_forms() {
        // RFC 5975 §5.2.12 (RFC 3140): single DSCP, set by DSCP, non-standard single and set.
        let phb = |f| ParamValue::PhbClass(f).phb();
        assert_eq!(phb(46 << 10), Some(Phb::Dscp(46)));
        assert_eq!(phb((10 << 10) | 0b10), Some(Phb::DscpSet(10)));
        assert_eq!(phb((0x123 << 4) | 0b0001), Some(Phb::Code(0x123)));
        assert_eq!(phb((0x123 << 4) | 0b0011), Some(Phb::CodeSet(0x123)));
        assert_eq!(phb(0b0101), None);
        assert_eq!(ParamValue::SlackTerm(0).phb(), None);
    }

    #[test]
    fn impossible_lengths() {
        // TMOD-1 declaring four words.
        let mut b = TMOD_1[..20].to_vec();
        b[3] = 4;
        assert_eq!(
            parse(&b),
            Err(QspecErrorKind::ParameterLength {
                parameter_id: 1,
                length_words: 4
            })
        );
        // Path Latency declaring two words.
        assert_eq!(
            parse(&[0, 3, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1]),
            Err(QspecErrorKind::ParameterLength {
                parameter_id: 3,
                length_words: 2
            })
        );
        // A length running past the buffer.
        assert_eq!(
            Parameter::parse(&[0, 3, 0, 1, 0, 0]).map(|_| ()),
            Err(QspecErrorKind::ParameterLength {
                parameter_id: 3,
                length_words: 1
            })
        );
        assert_eq!(
            Parameter::parse(&[0, 3]).map(|_| ()),
            Err(QspecErrorKind::Truncated)
        );
        // Negative PLR, infinite PER.
        assert!(matches!(
            parse(&[0, 5, 0, 1, 0x80, 0, 0, 1]),
            Err(QspecErrorKind::BadFloat {
                parameter_id: 5,
                ..
            })
        ));
        assert!(matches!(
            parse(&[0, 6, 0, 1, 0x7f, 0x80, 0, 0]),
            Err(QspecErrorKind::BadFloat {
                parameter_id: 6,
                ..
            })
        ));
    }

    #[test]
    fn unknown_parameters_by_their_m_flag() {
        // RFC 5975 §3.3, §4.2.2: an uninterpretable parameter gets N; with M the reservation
        // fails (Transient Failure / Reservation failure), without it the message goes on.
        let b = [0x80, 0xff, 0x00, 0x01, 1, 2, 3, 4];
        let mut p = parse(&b).unwrap();
        assert!(!p.is_known());
        assert_eq!(
            p.value,
            ParamValue::Unknown {
                id: 0xff,
                body: vec![1, 2, 3, 4]
            }
        );
        assert_eq!(emitted(&p), b);
        let outcome = p.mark_not_supported();
        assert_eq!(outcome, NotSupported::ReservationFailure);
        assert_eq!(
            outcome.info_spec(),
            Some((ErrorClass::TransientFailure, 0x07))
        );
        assert_eq!(emitted(&p)[0], 0xa0, "M and N");
        let mut p = parse(&[0x00, 0x20, 0x00, 0x00]).unwrap();
        assert_eq!(p.mark_not_supported(), NotSupported::Continue);
        assert_eq!(NotSupported::Continue.info_spec(), None);
        assert_eq!(emitted(&p), [0x20, 0x20, 0x00, 0x00]);
    }
}
