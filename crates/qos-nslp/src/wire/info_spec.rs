//! INFO-SPEC (RFC 5974 §5.1.3.6): error class, error code, Error Source Identifier and the
//! optional error-specific information; the class and code registries (§5.1.3.6, §6.4).

use super::error::{BodyError, ValueFault};
use pathwise_core::wire::{Reader, Writer};
use std::net::{Ipv4Addr, Ipv6Addr};

/// Field offsets of the INFO-SPEC's first word (§5.1.3.6).
mod field {
    pub const RESERVED: usize = 0;
    pub const ERROR_CODE: usize = 1;
    /// E-Class in the top four bits, ESI Type in the low four.
    pub const CLASS_ESI_TYPE: usize = 2;
    pub const ESI_LENGTH: usize = 3;
    pub const FIRST_WORD: usize = 4;
}

/// Error classes (§5.1.3.6, §6.4). Unassigned values are kept as `Other`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// 1.
    Informational,
    /// 2.
    Success,
    /// 3.
    ProtocolError,
    /// 4.
    TransientFailure,
    /// 5.
    PermanentFailure,
    /// 6.
    QosModelError,
    /// 7: Signaling session failure (RFC 5973, via RFC 5974 §6.4).
    SignalingSessionFailure,
    /// Any other 4-bit value (0 and 8–15 are reserved).
    Other(u8),
}

impl ErrorClass {
    /// From the 4-bit field.
    pub fn from_number(n: u8) -> Self {
        match n & 0x0f {
            1 => ErrorClass::Informational,
            2 => ErrorClass::Success,
            3 => ErrorClass::ProtocolError,
            4 => ErrorClass::TransientFailure,
            5 => ErrorClass::PermanentFailure,
            6 => ErrorClass::QosModelError,
            7 => ErrorClass::SignalingSessionFailure,
            n => ErrorClass::Other(n),
        }
    }

    /// The 4-bit field.
    pub fn number(self) -> u8 {
        match self {
            ErrorClass::Informational => 1,
            ErrorClass::Success => 2,
            ErrorClass::ProtocolError => 3,
            ErrorClass::TransientFailure => 4,
            ErrorClass::PermanentFailure => 5,
            ErrorClass::QosModelError => 6,
            ErrorClass::SignalingSessionFailure => 7,
            ErrorClass::Other(n) => n & 0x0f,
        }
    }
}

/// Error codes within each class (§5.1.3.6).
pub mod code {
    /// Informational (class 1).
    pub mod informational {
        /// Unknown BOUND-SESSION-ID.
        pub const UNKNOWN_BOUND_SESSION_ID: u8 = 0x01;
        /// Route Change: possible route change on the downstream path.
        pub const ROUTE_CHANGE: u8 = 0x02;
        /// Reduced refreshes not supported; full QSPEC required.
        pub const REDUCED_REFRESHES_NOT_SUPPORTED: u8 = 0x03;
        /// Congestion situation on the downstream path.
        pub const CONGESTION: u8 = 0x04;
        /// Unknown SESSION-ID in SESSION-ID-LIST.
        pub const UNKNOWN_SESSION_ID_IN_LIST: u8 = 0x05;
        /// Mismatching RSN in RSN-LIST.
        pub const MISMATCHING_RSN_IN_LIST: u8 = 0x06;
    }
    /// Success (class 2).
    pub mod success {
        /// Reservation successful.
        pub const RESERVATION_SUCCESSFUL: u8 = 0x01;
        /// Teardown successful.
        pub const TEARDOWN_SUCCESSFUL: u8 = 0x02;
        /// Acknowledgement.
        pub const ACKNOWLEDGEMENT: u8 = 0x03;
        /// Refresh successful.
        pub const REFRESH_SUCCESSFUL: u8 = 0x04;
    }
    /// Protocol Error (class 3).
    pub mod protocol {
        /// Illegal message type.
        pub const ILLEGAL_MESSAGE_TYPE: u8 = 0x01;
        /// Wrong message length.
        pub const WRONG_MESSAGE_LENGTH: u8 = 0x02;
        /// Bad flags value in the generic flags.
        pub const BAD_GENERIC_FLAGS: u8 = 0x03;
        /// Bad flags value in the message-specific flags.
        pub const BAD_MESSAGE_FLAGS: u8 = 0x04;
        /// Mandatory object missing.
        pub const MANDATORY_OBJECT_MISSING: u8 = 0x05;
        /// Illegal object present.
        pub const ILLEGAL_OBJECT_PRESENT: u8 = 0x06;
        /// Unknown object present.
        pub const UNKNOWN_OBJECT_PRESENT: u8 = 0x07;
        /// Wrong object length.
        pub const WRONG_OBJECT_LENGTH: u8 = 0x08;
        /// RESERVE received from wrong direction.
        pub const RESERVE_FROM_WRONG_DIRECTION: u8 = 0x09;
        /// Unknown object field value.
        pub const UNKNOWN_OBJECT_FIELD_VALUE: u8 = 0x0a;
        /// Duplicate object present.
        pub const DUPLICATE_OBJECT_PRESENT: u8 = 0x0b;
        /// Malformed QSPEC.
        pub const MALFORMED_QSPEC: u8 = 0x0c;
        /// Unknown MRI.
        pub const UNKNOWN_MRI: u8 = 0x0d;
        /// Erroneous value in the TLV object's value field.
        pub const ERRONEOUS_TLV_VALUE: u8 = 0x0e;
        /// Incompatible QSPEC.
        pub const INCOMPATIBLE_QSPEC: u8 = 0x0f;
    }
    /// Transient Failure (class 4).
    pub mod transient {
        /// No GIST reverse-path forwarding state.
        pub const NO_REVERSE_PATH_STATE: u8 = 0x01;
        /// No path state for RESERVE (receiver-oriented reservation).
        pub const NO_PATH_STATE_FOR_RESERVE: u8 = 0x02;
        /// RII conflict.
        pub const RII_CONFLICT: u8 = 0x03;
        /// Full QSPEC required.
        pub const FULL_QSPEC_REQUIRED: u8 = 0x04;
        /// Mismatch synchronization between end-to-end and intra-domain RESERVE.
        pub const SYNCHRONIZATION_MISMATCH: u8 = 0x05;
        /// Reservation preempted.
        pub const RESERVATION_PREEMPTED: u8 = 0x06;
        /// Reservation failure.
        pub const RESERVATION_FAILURE: u8 = 0x07;
        /// Path truncated - next peer dead.
        pub const PATH_TRUNCATED: u8 = 0x08;
    }
    /// Permanent Failure (class 5).
    pub mod permanent {
        /// Internal or system error.
        pub const INTERNAL_ERROR: u8 = 0x01;
        /// Authorization failure.
        pub const AUTHORIZATION_FAILURE: u8 = 0x02;
    }
}

/// Error Source Identifier (§5.1.3.6, types §6.5).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum ErrorSource {
    /// Type 0: none.
    #[default]
    None,
    /// Type 1: IPv4 address.
    Ipv4(Ipv4Addr),
    /// Type 2: IPv6 address.
    Ipv6(Ipv6Addr),
    /// Type 3: FQDN in UTF-8, zero-padded to a word on the wire (trailing zero bytes are
    /// padding, so a name cannot end in NUL).
    Fqdn(String),
    /// Any other type (4–15; 14 and 15 are experimental), its words kept as received.
    Other {
        /// ESI Type.
        esi_type: u8,
        /// The identifier, a whole number of words.
        bytes: Vec<u8>,
    },
}

impl ErrorSource {
    /// The 4-bit ESI Type.
    pub fn esi_type(&self) -> u8 {
        match self {
            ErrorSource::None => 0,
            ErrorSource::Ipv4(_) => 1,
            ErrorSource::Ipv6(_) => 2,
            ErrorSource::Fqdn(_) => 3,
            ErrorSource::Other { esi_type, .. } => esi_type & 0x0f,
        }
    }

    /// Length of the identifier on the wire, padding included.
    pub fn buffer_len(&self) -> usize {
        match self {
            ErrorSource::None => 0,
            ErrorSource::Ipv4(_) => 4,
            ErrorSource::Ipv6(_) => 16,
            ErrorSource::Fqdn(s) => super::pad4(s.len()),
            ErrorSource::Other { bytes, .. } => super::pad4(bytes.len()),
        }
    }

    fn parse(esi_type: u8, bytes: &[u8]) -> Result<Self, ValueFault> {
        let words = (bytes.len() / 4) as u8;
        Ok(match esi_type {
            0 if bytes.is_empty() => ErrorSource::None,
            0 => return Err(ValueFault::EsiTypeZeroWithLength { words }),
            1 => match <[u8; 4]>::try_from(bytes) {
                Ok(a) => ErrorSource::Ipv4(a.into()),
                Err(_) => return Err(ValueFault::EsiAddressLength { esi_type, words }),
            },
            2 => match <[u8; 16]>::try_from(bytes) {
                Ok(a) => ErrorSource::Ipv6(a.into()),
                Err(_) => return Err(ValueFault::EsiAddressLength { esi_type, words }),
            },
            3 => {
                let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
                let name =
                    core::str::from_utf8(&bytes[..end]).map_err(|_| ValueFault::EsiFqdnNotUtf8)?;
                ErrorSource::Fqdn(name.to_owned())
            }
            _ => ErrorSource::Other {
                esi_type,
                bytes: bytes.to_vec(),
            },
        })
    }

    fn emit(&self, w: &mut Writer<'_>) {
        match self {
            ErrorSource::None => {}
            ErrorSource::Ipv4(a) => w.bytes(&a.octets()),
            ErrorSource::Ipv6(a) => w.bytes(&a.octets()),
            ErrorSource::Fqdn(s) => {
                super::write_padded(w, s.as_bytes());
            }
            ErrorSource::Other { bytes, .. } => {
                super::write_padded(w, bytes);
            }
        }
    }
}

/// INFO-SPEC (type 0x006, §5.1.3.6).
///
/// ```text
///  |    Reserved   |  Error Code   |E-Class|ESI Typ|   ESI-Length  |
///  //                   Error Source Identifier                   //
///  //             Optional error-specific information             //
/// ```
///
/// The error-specific information is kept as the words received: the RFC defines two forms
/// (Object Type Info and Object Value Info) but gives them no tag, so a receiver cannot tell
/// which follows, or where one ends when several Object Value Infos are present (their "Real
/// Object Length" does not say whether it counts bytes or words). [`InfoSpec::object_type_info`]
/// and [`InfoSpec::object_value_info`] build them for sending.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InfoSpec {
    /// Error class.
    pub class: ErrorClass,
    /// Error code within the class.
    pub code: u8,
    /// Who generated it.
    pub source: ErrorSource,
    /// Optional error-specific information, a whole number of words on the wire.
    pub error_specific: Vec<u8>,
}

impl InfoSpec {
    /// An INFO-SPEC with no error source and no error-specific information.
    pub fn new(class: ErrorClass, code: u8) -> Self {
        InfoSpec {
            class,
            code,
            source: ErrorSource::None,
            error_specific: Vec::new(),
        }
    }

    /// Body length.
    pub fn buffer_len(&self) -> usize {
        field::FIRST_WORD + self.source.buffer_len() + super::pad4(self.error_specific.len())
    }

    /// Parse the body.
    pub(crate) fn parse(body: &[u8]) -> Result<Self, BodyError> {
        let mut r = Reader::new(body);
        let first: [u8; field::FIRST_WORD] = r.array()?;
        let class = ErrorClass::from_number(first[field::CLASS_ESI_TYPE] >> 4);
        let esi_type = first[field::CLASS_ESI_TYPE] & 0x0f;
        let words = first[field::ESI_LENGTH];
        let esi = r
            .bytes(usize::from(words) * 4)
            .map_err(|_| BodyError::Value(ValueFault::EsiLength { words }))?;
        let source = ErrorSource::parse(esi_type, esi).map_err(BodyError::Value)?;
        Ok(InfoSpec {
            class,
            code: first[field::ERROR_CODE],
            source,
            error_specific: r.rest().to_vec(),
        })
    }

    /// Write the body.
    pub(crate) fn emit(&self, w: &mut Writer<'_>) {
        let mut first = [0u8; field::FIRST_WORD];
        first[field::RESERVED] = 0;
        first[field::ERROR_CODE] = self.code;
        first[field::CLASS_ESI_TYPE] = (self.class.number() << 4) | self.source.esi_type();
        first[field::ESI_LENGTH] = (self.source.buffer_len() / 4) as u8;
        w.bytes(&first);
        self.source.emit(w);
        super::write_padded(w, &self.error_specific);
    }

    /// Appends an Object Type Info (§5.1.3.6): the type of the object that caused the error.
    pub fn object_type_info(mut self, object_type: u16) -> Self {
        self.error_specific
            .extend_from_slice(&object_type.to_be_bytes());
        self.error_specific.extend_from_slice(&[0, 0]);
        self
    }

    /// Appends an Object Value Info (§5.1.3.6) quoting `object` (header included) from byte
    /// `offset` on. The 12-bit Real Object Length is taken to count bytes, header included —
    /// the RFC does not give the unit — and the quoted object is zero-padded to a word.
    pub fn object_value_info(mut self, object: &[u8], offset: u16) -> Self {
        let real_len = (object.len().min(0x0fff)) as u16;
        self.error_specific
            .extend_from_slice(&real_len.to_be_bytes());
        self.error_specific.extend_from_slice(&offset.to_be_bytes());
        let quoted = object.get(usize::from(offset)..).unwrap_or(&[]);
        self.error_specific.extend_from_slice(quoted);
        let padded = super::pad4(self.error_specific.len());
        self.error_specific.resize(padded, 0);
        self
    }

    /// Whether this reports success (class 2).
    pub fn is_success(&self) -> bool {
        self.class == ErrorClass::Success
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(b: &[u8]) -> Result<InfoSpec, BodyError> {
        InfoSpec::parse(b)
    }

    #[test]
    fn deconstruct_ipv4_source() {
        // Protocol Error (3) / Mandatory object missing (0x05), ESI type 1, length 1 word,
        // then an Object Type Info naming RSN (0x002).
        let b = [0x00, 0x05, 0x31, 0x01, 192, 0, 2, 1, 0x00, 0x02, 0x00, 0x00];
        let i = parse(&b).unwrap();
        assert_eq!(i.class, ErrorClass::ProtocolError);
        assert_eq!(i.code, code::protocol::MANDATORY_OBJECT_MISSING);
        assert_eq!(i.source, ErrorSource::Ipv4(Ipv4Addr::new(192, 0, 2, 1)));
        assert_eq!(i.error_specific, [0x00, 0x02, 0x00, 0x00]);
        assert_eq!(
            i,
            InfoSpec {
                source: ErrorSource::Ipv4(Ipv4Addr::new(192, 0, 2, 1)),
                ..InfoSpec::new(ErrorClass::ProtocolError, 0x05)
            }
            .object_type_info(0x002)
        );
    }

    #[test]
    fn construct_pre_filled() {
        let i = InfoSpec {
            source: ErrorSource::Fqdn("qne1.example".into()),
            ..InfoSpec::new(ErrorClass::Success, code::success::RESERVATION_SUCCESSFUL)
        };
        let mut v = vec![0xa5; 3];
        let mut w = Writer::new(&mut v);
        i.emit(&mut w);
        assert_eq!(v.len() - 3, i.buffer_len());
        assert_eq!(&v[3..7], &[0x00, 0x01, 0x23, 0x03]);
        assert_eq!(&v[7..19], b"qne1.example");
        assert_eq!(parse(&v[3..]).unwrap(), i);
        // An FQDN that is not a multiple of four is zero-padded, and the padding stripped.
        let i = InfoSpec {
            source: ErrorSource::Fqdn("a.b".into()),
            ..InfoSpec::new(ErrorClass::Informational, 0x02)
        };
        let mut v = vec![0xa5; 1];
        i.emit(&mut Writer::new(&mut v));
        assert_eq!(&v[1..], &[0x00, 0x02, 0x13, 0x01, b'a', b'.', b'b', 0x00]);
        assert_eq!(parse(&v[1..]).unwrap(), i);
    }

    #[test]
    fn ipv6_and_other_sources_round_trip() {
        for source in [
            ErrorSource::Ipv6("2001:db8::1".parse().unwrap()),
            ErrorSource::Other {
                esi_type: 14,
                bytes: vec![1, 2, 3, 4, 5, 6, 7, 8],
            },
            ErrorSource::None,
        ] {
            let i = InfoSpec {
                source,
                ..InfoSpec::new(ErrorClass::Other(9), 0x80)
            };
            let mut v = Vec::new();
            i.emit(&mut Writer::new(&mut v));
            assert_eq!(v.len(), i.buffer_len());
            assert_eq!(parse(&v).unwrap(), i);
        }
    }

    #[test]
    fn impossible_lengths_and_values() {
        assert_eq!(parse(&[0, 1, 0x20]), Err(BodyError::Length));
        // ESI-Length 2 words with only one present.
        assert_eq!(
            parse(&[0, 1, 0x21, 0x02, 1, 2, 3, 4]),
            Err(BodyError::Value(ValueFault::EsiLength { words: 2 }))
        );
        // IPv4 ESI of two words.
        assert_eq!(
            parse(&[0, 1, 0x21, 0x02, 1, 2, 3, 4, 5, 6, 7, 8]),
            Err(BodyError::Value(ValueFault::EsiAddressLength {
                esi_type: 1,
                words: 2
            }))
        );
        // ESI type 0 with a length.
        assert_eq!(
            parse(&[0, 1, 0x20, 0x01, 1, 2, 3, 4]),
            Err(BodyError::Value(ValueFault::EsiTypeZeroWithLength {
                words: 1
            }))
        );
        // FQDN that is not UTF-8.
        assert_eq!(
            parse(&[0, 1, 0x23, 0x01, 0xff, 0xfe, 0, 0]),
            Err(BodyError::Value(ValueFault::EsiFqdnNotUtf8))
        );
    }

    #[test]
    fn object_value_info_layout() {
        let quoted = [0x00, 0x02, 0x00, 0x01, 0xde, 0xad, 0xbe, 0xef];
        let i = InfoSpec::new(
            ErrorClass::ProtocolError,
            code::protocol::WRONG_OBJECT_LENGTH,
        )
        .object_value_info(&quoted, 0);
        assert_eq!(
            i.error_specific,
            [
                0x00, 0x08, 0x00, 0x00, 0x00, 0x02, 0x00, 0x01, 0xde, 0xad, 0xbe, 0xef
            ]
        );
        let i = InfoSpec::new(ErrorClass::ProtocolError, 0x0e).object_value_info(&quoted, 5);
        assert_eq!(
            i.error_specific,
            [0x00, 0x08, 0x00, 0x05, 0xad, 0xbe, 0xef, 0x00]
        );
    }

    #[test]
    fn classes() {
        for n in 0..16 {
            assert_eq!(ErrorClass::from_number(n).number(), n);
        }
        assert_eq!(ErrorClass::from_number(3), ErrorClass::ProtocolError);
    }
}
