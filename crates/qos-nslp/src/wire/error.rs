//! Parse errors, typed so the engine can answer a malformed RESERVE or QUERY with a RESPONSE
//! carrying the right INFO-SPEC (RFC 5974 §5.1.3.6 error classes and codes, §5.2.3, §5.3.5).

use super::header::object_type;
use super::info_spec::{ErrorClass, code};
use super::qspec::{QspecError, QspecErrorKind};

/// What is wrong inside an object body whose length is right.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueFault {
    /// An INFO-SPEC's ESI-Length runs past the end of the object.
    EsiLength {
        /// ESI-Length as received, in words.
        words: u8,
    },
    /// An INFO-SPEC with ESI Type 0 ("no ESI") and a non-zero ESI-Length (§5.1.3.6: "If no
    /// Error Source Identifier is included, the Error Source Identifier Type field must be
    /// zero").
    EsiTypeZeroWithLength {
        /// ESI-Length as received, in words.
        words: u8,
    },
    /// An ESI of type IPv4 (1) or IPv6 (2) whose length is not one or four words.
    EsiAddressLength {
        /// ESI Type.
        esi_type: u8,
        /// ESI-Length as received, in words.
        words: u8,
    },
    /// An FQDN ESI (type 3) that is not UTF-8.
    EsiFqdnNotUtf8,
}

/// Why a message could not be parsed. Each kind names the INFO-SPEC a RESPONSE would carry
/// ([`ParseErrorKind::info_spec`]).
///
/// Where RFC 5974 is unclear, we read it so:
/// - "Wrong message length" (0x02): the common header has no length field (GIST's NSLP-Data
///   delimits the message), so it is used for a message shorter than the header and for bytes
///   after the last object that cannot be an object.
/// - "Bad flags value" (0x03, 0x04): §5.1.1 says undefined bits "MUST be ignored on receiving",
///   so undefined bits are never an error and 0x04 is never raised; the one "combination of
///   flags" the text rules out (ACK-REQ with an RII, a lowercase "must not") is 0x03.
/// - An RSN-LIST without a SESSION-ID-LIST is reported as the missing list (0x05) rather than
///   as an illegal RSN-LIST (0x06): the grammar nests the one in the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum ParseErrorKind {
    /// Shorter than the common header (Protocol Error 0x02, Wrong message length).
    #[error("message of {len} bytes is shorter than the common header")]
    Truncated {
        /// Bytes present.
        len: usize,
    },
    /// One to three bytes after the last object, too few for an object header (0x02).
    #[error("{len} bytes after the last object")]
    TrailingBytes {
        /// Bytes left over.
        len: usize,
    },
    /// Unknown Message Type (0x01, Illegal message type).
    #[error("unknown message type {0}")]
    UnknownMessageType(u8),
    /// An invalid combination of generic flags (0x03): ACK-REQ on a RESERVE that carries an
    /// RII (§5.1.1: "The ACK-REQ flag must not be set for RESERVE messages that already include
    /// an RII object").
    #[error("generic flags {0:#06x}: ACK-REQ with an RII")]
    BadGenericFlags(u16),
    /// A mandatory object is missing (0x05): the RSN of a RESERVE, the QSPEC of a QUERY, the
    /// INFO-SPEC of a RESPONSE or NOTIFY, or the SESSION-ID-LIST an RSN-LIST depends on.
    #[error("mandatory object {0:#05x} missing")]
    MissingObject(u16),
    /// A known object the message's grammar does not allow (0x06, Illegal object present),
    /// including one of two alternatives when the other is present (RII / RSN in a RESPONSE,
    /// MSG-ID / BOUND-MSG-ID in a RESERVE) and a PACKET-CLASSIFIER without a QSPEC.
    #[error("object {0:#05x} not allowed here")]
    IllegalObject(u16),
    /// An object of unknown type with AB=00, "Mandatory" (0x07, Unknown object present).
    #[error("unknown mandatory object type {0:#05x}")]
    UnknownObject(u16),
    /// The object's length does not match its data (0x08): a fixed-length object of another
    /// length, a list that is not a whole number of entries, or an object running past the
    /// end of the message.
    #[error("object {object_type:#05x} with length {length_words} words")]
    WrongObjectLength {
        /// The object's type.
        object_type: u16,
        /// Length field as received, in words.
        length_words: u16,
    },
    /// A second copy of an object the grammar allows once (0x0b, Duplicate object present).
    #[error("duplicate object {0:#05x}")]
    DuplicateObject(u16),
    /// An erroneous value in an object's value field (0x0e).
    #[error("bad value in object {object_type:#05x}: {fault:?}")]
    ObjectValue {
        /// The object's type.
        object_type: u16,
        /// What is wrong.
        fault: ValueFault,
    },
    /// The QSPEC object does not parse (0x0c Malformed QSPEC, or 0x0f Incompatible QSPEC for
    /// a version this node does not speak: RFC 5975 §3.2, §4.2.3).
    #[error("QSPEC: {0}")]
    Qspec(QspecError),
}

impl ParseErrorKind {
    /// The INFO-SPEC error class and code (RFC 5974 §5.1.3.6) a RESPONSE to this message
    /// would carry. All of them are in the Protocol Error class.
    pub fn info_spec(&self) -> (ErrorClass, u8) {
        use ParseErrorKind as K;
        let c = match *self {
            K::Truncated { .. } | K::TrailingBytes { .. } => code::protocol::WRONG_MESSAGE_LENGTH,
            K::UnknownMessageType(_) => code::protocol::ILLEGAL_MESSAGE_TYPE,
            K::BadGenericFlags(_) => code::protocol::BAD_GENERIC_FLAGS,
            K::MissingObject(_) => code::protocol::MANDATORY_OBJECT_MISSING,
            K::IllegalObject(_) => code::protocol::ILLEGAL_OBJECT_PRESENT,
            K::UnknownObject(_) => code::protocol::UNKNOWN_OBJECT_PRESENT,
            K::WrongObjectLength { .. } => code::protocol::WRONG_OBJECT_LENGTH,
            K::DuplicateObject(_) => code::protocol::DUPLICATE_OBJECT_PRESENT,
            K::ObjectValue { .. } => code::protocol::ERRONEOUS_TLV_VALUE,
            K::Qspec(QspecError {
                kind: QspecErrorKind::UnsupportedVersion(_),
                ..
            }) => code::protocol::INCOMPATIBLE_QSPEC,
            K::Qspec(_) => code::protocol::MALFORMED_QSPEC,
        };
        (ErrorClass::ProtocolError, c)
    }

    /// The object type the error is about, for the INFO-SPEC's Object Type Info (§5.1.3.6).
    pub fn object_type(&self) -> Option<u16> {
        use ParseErrorKind as K;
        match *self {
            K::MissingObject(t)
            | K::IllegalObject(t)
            | K::UnknownObject(t)
            | K::DuplicateObject(t)
            | K::WrongObjectLength { object_type: t, .. }
            | K::ObjectValue { object_type: t, .. } => Some(t),
            K::Qspec(_) => Some(object_type::QSPEC),
            _ => None,
        }
    }

    /// A stable snake_case name (drop counters, logs).
    pub fn name(&self) -> &'static str {
        use ParseErrorKind as K;
        match self {
            K::Truncated { .. } => "truncated",
            K::TrailingBytes { .. } => "trailing_bytes",
            K::UnknownMessageType(_) => "unknown_message_type",
            K::BadGenericFlags(_) => "bad_generic_flags",
            K::MissingObject(_) => "missing_object",
            K::IllegalObject(_) => "illegal_object",
            K::UnknownObject(_) => "unknown_object",
            K::WrongObjectLength { .. } => "wrong_object_length",
            K::DuplicateObject(_) => "duplicate_object",
            K::ObjectValue { .. } => "object_value",
            K::Qspec(_) => "malformed_qspec",
        }
    }
}

/// A parse error and where it was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[error("{kind} (at byte {offset})")]
pub struct ParseError {
    /// What is wrong.
    pub kind: ParseErrorKind,
    /// Byte offset within the message of the offending object's header (0 for header
    /// errors, the message length for a missing object), so an INFO-SPEC's Object Value Info
    /// can quote the object.
    pub offset: usize,
}

impl ParseError {
    pub(crate) fn at(kind: ParseErrorKind, offset: usize) -> Self {
        ParseError { kind, offset }
    }
}

/// Why an object body did not parse; the message parser adds the object's type and position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BodyError {
    /// The body's length is wrong for the object.
    Length,
    /// A field value is wrong.
    Value(ValueFault),
    /// The QSPEC object's value does not parse.
    Qspec(QspecError),
}

impl From<pathwise_core::wire::Truncated> for BodyError {
    fn from(_: pathwise_core::wire::Truncated) -> Self {
        BodyError::Length
    }
}
