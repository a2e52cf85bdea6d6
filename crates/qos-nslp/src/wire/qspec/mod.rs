//! The QSPEC (RFC 5975 §5): the common QSPEC header (§5.1.1), QSPEC objects (§3.2, §5.1.2) and
//! their parameters ([`param`], §5.2), carried in the QoS NSLP's QSPEC object (RFC 5974
//! §5.1.3.11).
//!
//! General rules applied by the parser (§5.1): lengths are in words and exclude headers;
//! reserved bits are written as zero and ignored on receipt; "Empty QSPECs and empty QSPEC
//! Objects MUST NOT be used"; "Duplicate objects, duplicate parameters, and/or multiple
//! occurrences of a parameter MUST NOT be used". A QSPEC that breaks them is a Malformed QSPEC
//! (RFC 5974 Protocol Error 0x0c); a version other than 0 is an Incompatible QSPEC (0x0f,
//! §3.2). Parameters the codec does not know are kept ([`ParamValue::Unknown`]) with their M,
//! E and N flags for the RMF to apply §4.2.2 ([`Qspec::mark_unknown_parameters`]).

pub mod param;

pub use param::{
    ExcessTreatment, NotSupported, ParamFlags, ParamValue, Parameter, PathJitter, Phb, Tmod,
    parameter_id,
};

use pathwise_core::wire::{Reader, Writer};

/// Bits of the common QSPEC header (§5.1.1).
///
/// ```text
///  |  Vers.|I|QSPECType|r|r|  QSPEC Proc.  |        Length         |
/// ```
mod field {
    pub const VERSION_SHIFT: u32 = 28;
    pub const LOCAL: u32 = 0x0800_0000;
    pub const TYPE_SHIFT: u32 = 22;
    pub const TYPE_MASK: u32 = 0x1f;
    pub const PROC_SHIFT: u32 = 12;
    pub const PROC_MASK: u32 = 0xff;
    pub const LENGTH_MASK: u32 = 0x0fff;
}

/// Bits of the QSPEC object header (§5.1.2).
///
/// ```text
///  |E|r|r|r|       Object Type     |r|r|r|r|         Length        |
/// ```
mod object_field {
    pub const E: u32 = 0x8000_0000;
    pub const TYPE_SHIFT: u32 = 16;
    pub const TYPE_MASK: u32 = 0x0fff;
    pub const LENGTH_MASK: u32 = 0x0fff;
}

/// The only QSPEC version this codec speaks (§5.1.1, IANA §7: "0: Version 0 QSPEC").
pub const VERSION: u8 = 0;
/// Length of the common QSPEC header and of a QSPEC object header.
pub const HEADER_LEN: usize = 4;

/// QSPEC Types (§5.1.1, IANA §7).
pub mod qspec_type {
    /// 0: default.
    pub const DEFAULT: u8 = 0;
    /// 1: Y.1541-QOSM (RFC 5976).
    pub const Y1541_QOSM: u8 = 1;
    /// 2: RMD-QOSM (RFC 5977).
    pub const RMD_QOSM: u8 = 2;
}

/// The QSPEC Procedure: message sequence and object combination (§4.3, §5.1.1), kept as
/// received. §5.1.1 says the Object Combination "can take the values between 1 and 3" but then
/// lists 0, 1 and 2, as do the tables of §4.3 and IANA §7; we follow the tables (0-based).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct QspecProcedure {
    /// Message Sequence (4 bits): 0 sender-initiated (two-way), 1 receiver-initiated
    /// (three-way), 2 resource queries.
    pub message_sequence: u8,
    /// Object Combination (4 bits), per the message sequence's table.
    pub object_combination: u8,
}

impl QspecProcedure {
    fn from_byte(b: u8) -> Self {
        QspecProcedure {
            message_sequence: b >> 4,
            object_combination: b & 0x0f,
        }
    }

    fn byte(self) -> u8 {
        (self.message_sequence << 4) | (self.object_combination & 0x0f)
    }

    /// Whether §4.3 / IANA §7 assign this combination.
    pub fn is_assigned(self) -> bool {
        matches!(
            (self.message_sequence, self.object_combination),
            (0 | 1, 0..=2) | (2, 0)
        )
    }
}

/// QSPEC object types (§5.1.2, IANA §7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QspecObjectType {
    /// 0: QoS Desired (read-only).
    QosDesired,
    /// 1: QoS Available (read-write).
    QosAvailable,
    /// 2: QoS Reserved (read-only).
    QosReserved,
    /// 3: Minimum QoS (read-only).
    MinimumQos,
    /// Any other 12-bit type (64–67 are private/experimental); its body is read as parameters,
    /// the format §5.1.1 gives all QSPEC objects.
    Other(u16),
}

impl QspecObjectType {
    /// From the 12-bit field.
    pub fn from_number(n: u16) -> Self {
        match n & 0x0fff {
            0 => QspecObjectType::QosDesired,
            1 => QspecObjectType::QosAvailable,
            2 => QspecObjectType::QosReserved,
            3 => QspecObjectType::MinimumQos,
            n => QspecObjectType::Other(n),
        }
    }

    /// The 12-bit field.
    pub fn number(self) -> u16 {
        match self {
            QspecObjectType::QosDesired => 0,
            QspecObjectType::QosAvailable => 1,
            QspecObjectType::QosReserved => 2,
            QspecObjectType::MinimumQos => 3,
            QspecObjectType::Other(n) => n & 0x0fff,
        }
    }
}

/// One QSPEC object: QoS Desired, QoS Available, QoS Reserved or Minimum QoS (§3.2, §5.1.2).
#[derive(Clone, Debug, PartialEq)]
pub struct QspecObject {
    /// E: an error occurred at object level (§4.2.1).
    pub error: bool,
    /// Which object.
    pub object_type: QspecObjectType,
    /// Its parameters, in order; never empty on the wire.
    pub params: Vec<Parameter>,
}

impl QspecObject {
    /// An object without the E flag.
    pub fn new(object_type: QspecObjectType, params: Vec<Parameter>) -> Self {
        QspecObject {
            error: false,
            object_type,
            params,
        }
    }

    /// Length on the wire, header included.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.params.iter().map(Parameter::buffer_len).sum::<usize>()
    }

    /// The parameter with this ID.
    pub fn param(&self, id: u16) -> Option<&Parameter> {
        self.params.iter().find(|p| p.value.id() == id)
    }

    /// The `<TMOD-1>` of this object, if any.
    pub fn tmod1(&self) -> Option<&Tmod> {
        match self.param(parameter_id::TMOD_1).map(|p| &p.value) {
            Some(ParamValue::Tmod1(t)) => Some(t),
            _ => None,
        }
    }

    fn emit(&self, w: &mut Writer<'_>) {
        let words = ((self.buffer_len() - HEADER_LEN) / 4) as u32 & object_field::LENGTH_MASK;
        w.u32(
            (u32::from(self.error) * object_field::E)
                | (u32::from(self.object_type.number()) & object_field::TYPE_MASK)
                    << object_field::TYPE_SHIFT
                | words,
        );
        for p in &self.params {
            p.emit(w);
        }
    }
}

/// Why a QSPEC did not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum QspecErrorKind {
    /// Fewer bytes than a header.
    #[error("truncated")]
    Truncated,
    /// A QSPEC version other than 0 (§3.2: answered with Incompatible QSPEC).
    #[error("QSPEC version {0} not supported")]
    UnsupportedVersion(u8),
    /// The common header's Length disagrees with the bytes present.
    #[error("QSPEC length {declared_words} words, {available_words} present")]
    Length {
        /// Length field, in words.
        declared_words: u16,
        /// Words present after the common header.
        available_words: usize,
    },
    /// A QSPEC without objects (§5.1).
    #[error("empty QSPEC")]
    Empty,
    /// A QSPEC object without parameters (§5.1).
    #[error("empty QSPEC object {0}")]
    EmptyObject(u16),
    /// A QSPEC object whose length runs past the QSPEC.
    #[error("QSPEC object {object_type} with length {length_words} words")]
    ObjectLength {
        /// Object type.
        object_type: u16,
        /// Length field, in words.
        length_words: u16,
    },
    /// Two QSPEC objects of the same type (§5.1).
    #[error("duplicate QSPEC object {0}")]
    DuplicateObject(u16),
    /// A parameter whose length is wrong for its ID or runs past its object.
    #[error("parameter {parameter_id} with length {length_words} words")]
    ParameterLength {
        /// Parameter ID.
        parameter_id: u16,
        /// Length field (or, for a fixed-length parameter, the body present), in words.
        length_words: u16,
    },
    /// Two parameters with the same ID in one object (§5.1).
    #[error("duplicate parameter {0}")]
    DuplicateParameter(u16),
    /// A floating-point value the parameter's definition prohibits (§5.2.1: negative, below
    /// one, NaN; §5.2.5/§5.2.6: negative, infinite, NaN).
    #[error("parameter {parameter_id}: prohibited float {bits:#010x}")]
    BadFloat {
        /// Parameter ID.
        parameter_id: u16,
        /// The value's bits.
        bits: u32,
    },
    /// Bytes after an Initiator QSPEC's objects, or a Local QSPEC encapsulated in a Local
    /// QSPEC (§4.1: a Local QSPEC encapsulates the Initiator QSPEC).
    #[error("unexpected encapsulated QSPEC")]
    UnexpectedEncapsulation,
}

/// A QSPEC parse error and where: the byte offset within the QSPEC object's value of the
/// header (common, object or parameter) at fault, so the RMF can raise the E flags of §4.2.1
/// there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[error("{kind} (at QSPEC byte {offset})")]
pub struct QspecError {
    /// What is wrong.
    pub kind: QspecErrorKind,
    /// Byte offset within the QSPEC.
    pub offset: usize,
}

/// A QSPEC (§5.1): the common header and its objects, and for a Local QSPEC the Initiator
/// QSPEC it encapsulates (§4.1, Figure 3).
///
/// Figure 3 draws the encapsulated Initiator QSPEC after the Local QSPEC's parameters but does
/// not say whether the Local QSPEC's Length covers it. We take Length to cover the Local
/// QSPEC's own objects only ("the total length of the QSPEC ... excluding the common header"),
/// so a Local QSPEC's encapsulated Initiator QSPEC is whatever follows them in the QoS NSLP
/// object.
#[derive(Clone, Debug, PartialEq)]
pub struct Qspec {
    /// QSPEC version (4 bits); only [`VERSION`] parses.
    pub version: u8,
    /// I: a Local QSPEC (`true`) or the Initiator QSPEC (`false`).
    pub local: bool,
    /// QSPEC Type (5 bits), see [`qspec_type`].
    pub qspec_type: u8,
    /// QSPEC Procedure.
    pub procedure: QspecProcedure,
    /// The QSPEC objects, in order.
    pub objects: Vec<QspecObject>,
    /// For a Local QSPEC, the Initiator QSPEC it carries.
    pub encapsulated: Option<Box<Qspec>>,
}

impl Qspec {
    /// An Initiator QSPEC of version 0 and the default type.
    pub fn new(procedure: QspecProcedure, objects: Vec<QspecObject>) -> Self {
        Qspec {
            version: VERSION,
            local: false,
            qspec_type: qspec_type::DEFAULT,
            procedure,
            objects,
            encapsulated: None,
        }
    }

    /// Length on the wire (the QoS NSLP QSPEC object's value).
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.objects_len() + self.encapsulated.as_ref().map_or(0, |q| q.buffer_len())
    }

    fn objects_len(&self) -> usize {
        self.objects.iter().map(QspecObject::buffer_len).sum()
    }

    /// The object of this type.
    pub fn object(&self, t: QspecObjectType) -> Option<&QspecObject> {
        self.objects.iter().find(|o| o.object_type == t)
    }

    /// Parse a QSPEC (the value of a QoS NSLP QSPEC object).
    pub fn parse(buf: &[u8]) -> Result<Self, QspecError> {
        Self::parse_at(buf, 0, 0)
    }

    fn parse_at(buf: &[u8], base: usize, depth: u8) -> Result<Self, QspecError> {
        let err = |kind, offset: usize| QspecError {
            kind,
            offset: base + offset,
        };
        let mut r = Reader::new(buf);
        let h = r.u32().map_err(|_| err(QspecErrorKind::Truncated, 0))?;
        let version = (h >> field::VERSION_SHIFT) as u8;
        if version != VERSION {
            return Err(err(QspecErrorKind::UnsupportedVersion(version), 0));
        }
        let local = h & field::LOCAL != 0;
        let declared_words = (h & field::LENGTH_MASK) as u16;
        let objects_buf = r.bytes(usize::from(declared_words) * 4).map_err(|_| {
            err(
                QspecErrorKind::Length {
                    declared_words,
                    available_words: (buf.len() - HEADER_LEN) / 4,
                },
                0,
            )
        })?;
        let objects = parse_objects(objects_buf, base + HEADER_LEN)?;
        if objects.is_empty() {
            return Err(err(QspecErrorKind::Empty, 0));
        }
        let rest = r.rest();
        let encapsulated = if rest.is_empty() {
            None
        } else if local && depth == 0 {
            let at = buf.len() - rest.len();
            let inner = Self::parse_at(rest, base + at, depth + 1)?;
            if inner.local {
                return Err(err(QspecErrorKind::UnexpectedEncapsulation, at));
            }
            Some(Box::new(inner))
        } else {
            return Err(err(
                QspecErrorKind::UnexpectedEncapsulation,
                buf.len() - rest.len(),
            ));
        };
        Ok(Qspec {
            version,
            local,
            qspec_type: ((h >> field::TYPE_SHIFT) & field::TYPE_MASK) as u8,
            procedure: QspecProcedure::from_byte(
                ((h >> field::PROC_SHIFT) & field::PROC_MASK) as u8,
            ),
            objects,
            encapsulated,
        })
    }

    /// Write the QSPEC; reserved bits are zero.
    pub fn emit(&self, w: &mut Writer<'_>) {
        let words = (self.objects_len() / 4) as u32 & field::LENGTH_MASK;
        w.u32(
            (u32::from(self.version & 0x0f) << field::VERSION_SHIFT)
                | (u32::from(self.local) * field::LOCAL)
                | (u32::from(self.qspec_type) & field::TYPE_MASK) << field::TYPE_SHIFT
                | u32::from(self.procedure.byte()) << field::PROC_SHIFT
                | words,
        );
        for o in &self.objects {
            o.emit(w);
        }
        if let Some(q) = &self.encapsulated {
            q.emit(w);
        }
    }

    /// The QSPEC as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.buffer_len());
        self.emit(&mut Writer::new(&mut v));
        v
    }

    /// Applies RFC 5975 §4.2.2 to every parameter this codec does not know (those an RMF
    /// built on it cannot interpret): sets their N flag, and reports
    /// [`NotSupported::ReservationFailure`] if any of them has M set. The encapsulated
    /// Initiator QSPEC is left alone: interior nodes of a local domain "need only process the
    /// Local QSPEC" (§3.3).
    pub fn mark_unknown_parameters(&mut self) -> NotSupported {
        let mut outcome = NotSupported::Continue;
        for p in self.objects.iter_mut().flat_map(|o| o.params.iter_mut()) {
            if !p.is_known() && p.mark_not_supported() == NotSupported::ReservationFailure {
                outcome = NotSupported::ReservationFailure;
            }
        }
        outcome
    }
}

fn parse_objects(mut buf: &[u8], base: usize) -> Result<Vec<QspecObject>, QspecError> {
    let start_len = buf.len();
    let mut objects: Vec<QspecObject> = Vec::new();
    while !buf.is_empty() {
        let at = base + start_len - buf.len();
        let err = |kind, offset| QspecError { kind, offset };
        let mut r = Reader::new(buf);
        let h = r.u32().map_err(|_| err(QspecErrorKind::Truncated, at))?;
        let number = ((h >> object_field::TYPE_SHIFT) & object_field::TYPE_MASK) as u16;
        let length_words = (h & object_field::LENGTH_MASK) as u16;
        let body = r.bytes(usize::from(length_words) * 4).map_err(|_| {
            err(
                QspecErrorKind::ObjectLength {
                    object_type: number,
                    length_words,
                },
                at,
            )
        })?;
        buf = r.rest();
        let object_type = QspecObjectType::from_number(number);
        if objects.iter().any(|o| o.object_type == object_type) {
            return Err(err(QspecErrorKind::DuplicateObject(number), at));
        }
        let mut params: Vec<Parameter> = Vec::new();
        let mut rest = body;
        while !rest.is_empty() {
            let p_at = at + HEADER_LEN + body.len() - rest.len();
            let (p, next) = Parameter::parse(rest).map_err(|k| err(k, p_at))?;
            if params.iter().any(|q| q.value.id() == p.value.id()) {
                return Err(err(QspecErrorKind::DuplicateParameter(p.value.id()), p_at));
            }
            params.push(p);
            rest = next;
        }
        if params.is_empty() {
            return Err(err(QspecErrorKind::EmptyObject(number), at));
        }
        objects.push(QspecObject {
            error: h & object_field::E != 0,
            object_type,
            params,
        });
    }
    Ok(objects)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A controlled-load-like sender-initiated QSPEC (§4.3.1, message sequence 0, object
    /// combination 1): QoS Desired with `<TMOD-1>` (M) and `<Path Latency>`, QoS Available with
    /// `<TMOD-1>` and `<Path Latency>` to be collected on the way.
    #[rustfmt::skip]
    pub(crate) const CONTROLLED_LOAD: [u8; 76] = [
        // Common QSPEC header: version 0, I=0, type 0, procedure 0/1, length 18 words.
        0x00, 0x00, 0x10, 0x12,
        // QoS Desired (type 0), 8 words.
        0x00, 0x00, 0x00, 0x08,
        0x80, 0x01, 0x00, 0x05,
        0x47, 0xf4, 0x24, 0x00, 0x45, 0x3b, 0x80, 0x00, 0x7f, 0x80, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x05, 0xdc,
        0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x4e, 0x20,
        // QoS Available (type 1), 8 words.
        0x00, 0x01, 0x00, 0x08,
        0x80, 0x01, 0x00, 0x05,
        0x47, 0xf4, 0x24, 0x00, 0x45, 0x3b, 0x80, 0x00, 0x7f, 0x80, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x05, 0xdc,
        0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
    ];

    pub(crate) fn controlled_load() -> Qspec {
        let tmod = Parameter::new(
            ParamFlags::MANDATORY,
            ParamValue::Tmod1(Tmod {
                rate: 125_000.0,
                bucket_size: 3000.0,
                peak_rate: f32::INFINITY,
                min_policed_unit: 64,
                max_packet_size: 1500,
            }),
        );
        let latency = |us| Parameter::new(ParamFlags::default(), ParamValue::PathLatency(us));
        Qspec::new(
            QspecProcedure {
                message_sequence: 0,
                object_combination: 1,
            },
            vec![
                QspecObject::new(
                    QspecObjectType::QosDesired,
                    vec![tmod.clone(), latency(20_000)],
                ),
                QspecObject::new(QspecObjectType::QosAvailable, vec![tmod, latency(0)]),
            ],
        )
    }

    fn kind(b: &[u8]) -> (QspecErrorKind, usize) {
        let e = Qspec::parse(b).unwrap_err();
        (e.kind, e.offset)
    }

    #[test]
    fn deconstruct() {
        let q = Qspec::parse(&CONTROLLED_LOAD).unwrap();
        assert_eq!(q, controlled_load());
        assert_eq!(q.procedure.message_sequence, 0);
        assert_eq!(q.procedure.object_combination, 1);
        assert!(q.procedure.is_assigned());
        let desired = q.object(QspecObjectType::QosDesired).unwrap();
        assert_eq!(desired.tmod1().unwrap().rate, 125_000.0);
        assert_eq!(
            desired.param(parameter_id::PATH_LATENCY).unwrap().value,
            ParamValue::PathLatency(20_000)
        );
        assert!(q.object(QspecObjectType::MinimumQos).is_none());
    }

    #[test]
    fn construct_pre_filled() {
        let q = controlled_load();
        let mut v = vec![0xa5; 5];
        q.emit(&mut Writer::new(&mut v));
        assert_eq!(v[..5], [0xa5; 5]);
        assert_eq!(v[5..], CONTROLLED_LOAD);
        assert_eq!(q.buffer_len(), CONTROLLED_LOAD.len());
    }

    #[test]
    fn header_fields() {
        // Version 0, I=1, type 2 (RMD-QOSM), both reserved bits set, procedure 2/0, length 3;
        // QoS Available with E set holding <DSTE Class Type> 3.
        let b = [
            0x08, 0xb2, 0x00, 0x03, 0x80, 0x01, 0x00, 0x02, 0x00, 0x0d, 0x00, 0x01, 0x03, 0, 0, 0,
        ];
        let q = Qspec::parse(&b).unwrap();
        assert!(q.local);
        assert_eq!(q.qspec_type, qspec_type::RMD_QOSM);
        assert_eq!(
            q.procedure,
            QspecProcedure {
                message_sequence: 2,
                object_combination: 0
            }
        );
        let o = &q.objects[0];
        assert!(o.error);
        assert_eq!(o.object_type, QspecObjectType::QosAvailable);
        assert_eq!(o.params[0].value, ParamValue::DsteClassType(3));
        // Reserved bits come back as zero.
        assert_eq!(q.to_bytes()[..4], [0x08, 0x82, 0x00, 0x03]);
        assert_eq!(q.to_bytes()[4..], b[4..]);
    }

    #[test]
    fn impossible_lengths() {
        assert_eq!(kind(&[0, 0]), (QspecErrorKind::Truncated, 0));
        // Declares 18 words, 17 present.
        assert_eq!(
            kind(&CONTROLLED_LOAD[..72]),
            (
                QspecErrorKind::Length {
                    declared_words: 18,
                    available_words: 17
                },
                0
            )
        );
        // An Initiator QSPEC followed by more words.
        let mut b = CONTROLLED_LOAD.to_vec();
        b.extend([0; 4]);
        assert_eq!(kind(&b), (QspecErrorKind::UnexpectedEncapsulation, 76));
        // QoS Desired claiming 9 words.
        let mut b = CONTROLLED_LOAD;
        b[7] = 9;
        // The object now swallows QoS Available's header, read as a parameter of ID 1 and
        // 8 words that runs past the object.
        assert_eq!(
            kind(&b),
            (
                QspecErrorKind::ParameterLength {
                    parameter_id: 1,
                    length_words: 8
                },
                40
            )
        );
        let mut b = CONTROLLED_LOAD;
        b[3] = 9;
        b[7] = 10;
        assert_eq!(
            kind(&b[..40]),
            (
                QspecErrorKind::ObjectLength {
                    object_type: 0,
                    length_words: 10
                },
                4
            )
        );
    }

    #[test]
    fn template_rules() {
        // Version 1: Incompatible QSPEC.
        let mut b = CONTROLLED_LOAD;
        b[0] = 0x10;
        assert_eq!(kind(&b), (QspecErrorKind::UnsupportedVersion(1), 0));
        // Empty QSPEC.
        assert_eq!(kind(&[0, 0, 0x10, 0]), (QspecErrorKind::Empty, 0));
        // Empty object.
        assert_eq!(
            kind(&[0, 0, 0x10, 1, 0, 3, 0, 0]),
            (QspecErrorKind::EmptyObject(3), 4)
        );
        // Two QoS Desired objects.
        let mut b = CONTROLLED_LOAD;
        b[41] = 0x00;
        assert_eq!(kind(&b), (QspecErrorKind::DuplicateObject(0), 40));
        // Two Path Latency parameters in QoS Desired.
        let mut q = controlled_load();
        let lat = q.objects[0].params[1].clone();
        q.objects[0].params.push(lat);
        assert_eq!(
            kind(&q.to_bytes()),
            (QspecErrorKind::DuplicateParameter(3), 40)
        );
        // A prohibited float is reported at its parameter.
        let mut b = CONTROLLED_LOAD;
        b[12] = 0xc7;
        assert_eq!(
            kind(&b),
            (
                QspecErrorKind::BadFloat {
                    parameter_id: 1,
                    bits: 0xc7f4_2400
                },
                8
            )
        );
    }

    #[test]
    fn local_qspec_encapsulates_the_initiator_qspec() {
        // RFC 5975 §4.1, Figure 3.
        let mut local = Qspec::new(
            QspecProcedure::default(),
            vec![QspecObject::new(
                QspecObjectType::QosDesired,
                vec![Parameter::new(
                    ParamFlags::MANDATORY,
                    ParamValue::Unknown {
                        id: 0x101,
                        body: vec![0, 0, 0, 1],
                    },
                )],
            )],
        );
        local.local = true;
        local.qspec_type = qspec_type::RMD_QOSM;
        local.encapsulated = Some(Box::new(controlled_load()));
        let b = local.to_bytes();
        assert_eq!(b.len(), local.buffer_len());
        assert_eq!(
            b[..4],
            [0x08, 0x80, 0x00, 0x03],
            "length covers the local objects"
        );
        assert_eq!(b[16..], CONTROLLED_LOAD);
        assert_eq!(Qspec::parse(&b).unwrap(), local);
        // A Local QSPEC inside a Local QSPEC is refused.
        let mut inner = local.clone();
        inner.encapsulated = None;
        local.encapsulated = Some(Box::new(inner));
        assert_eq!(
            kind(&local.to_bytes()),
            (QspecErrorKind::UnexpectedEncapsulation, 16)
        );
    }

    #[test]
    fn unknown_parameters_are_marked_not_supported() {
        let mut q = controlled_load();
        q.objects[1].params.push(Parameter::new(
            ParamFlags::default(),
            ParamValue::Unknown {
                id: 300,
                body: vec![],
            },
        ));
        let mut q = Qspec::parse(&q.to_bytes()).unwrap();
        assert_eq!(q.mark_unknown_parameters(), NotSupported::Continue);
        assert!(q.objects[1].params[2].flags.not_supported);
        assert!(
            !q.objects[0].params[0].flags.not_supported,
            "known: untouched"
        );
        q.objects[0].params.push(Parameter::new(
            ParamFlags::MANDATORY,
            ParamValue::Unknown {
                id: 301,
                body: vec![9, 9, 9, 9],
            },
        ));
        assert_eq!(
            q.mark_unknown_parameters(),
            NotSupported::ReservationFailure
        );
    }
}
