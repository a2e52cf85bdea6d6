//! Parse errors, typed so the engine can answer with the right GIST Error (RFC 5971 A.4.4) or
//! count the drop by reason.

use super::error_object::{ErrorClass, error_code};
use super::header::{CommonHeader, object_type};
use super::mri::Mri;
use super::objects::{Nli, SessionId};
use core::ops::Range;

/// What is wrong inside an object body (the subcodes of Object Value Error, A.4.4.10).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueFault {
    /// 0: the object's length does not match its contents.
    IncorrectLength,
    /// 1: a field value this node does not support (an unknown MRM or IP version).
    ValueNotSupported,
    /// 2: an invalid combination of flags and fields (path-coupled MRI).
    InvalidFlagFieldCombination,
    /// 3: a Stack-Proposal whose profiles are empty.
    EmptyList,
    /// 4: a cookie the node cannot verify (raised by the engine, not the codec).
    InvalidCookie,
    /// 5: Stack-Proposal and Stack-Configuration-Data disagree (raised by the engine).
    StackMismatch,
}

impl ValueFault {
    /// The Object Value Error subcode.
    pub fn subcode(self) -> u8 {
        self as u8
    }
}

/// An object body that failed to parse: what and where (byte offset within the body).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ObjectFault {
    /// What is wrong.
    pub fault: ValueFault,
    /// Byte offset within the object body at which the problem was found.
    pub offset: usize,
}

impl ObjectFault {
    pub(crate) fn at(fault: ValueFault, offset: usize) -> Self {
        ObjectFault { fault, offset }
    }
    pub(crate) fn length(offset: usize) -> Self {
        Self::at(ValueFault::IncorrectLength, offset)
    }
}

/// Why a message could not be parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum ParseErrorKind {
    /// Shorter than the magic number or the common header: dropped silently.
    #[error("truncated")]
    Truncated,
    /// A D-mode message without the magic number (§5.4.1): not GIST, dropped silently.
    #[error("bad magic number {0:#010x}")]
    BadMagic(u32),
    /// Common Header Parse Error, Unknown Version (A.4.4.1 subcode 0).
    #[error("unknown version {0}")]
    UnknownVersion(u8),
    /// Common Header Parse Error, Unknown Type (subcode 1).
    #[error("unknown message type {0}")]
    UnknownType(u8),
    /// Common Header Parse Error, Invalid R-flag (subcode 2).
    #[error("R flag inconsistent with the message type")]
    InvalidRFlag,
    /// Common Header Parse Error, Incorrect Message Length (subcode 3); the calculated length
    /// in words goes in the Message Length Info.
    #[error("message length {declared} words, {calculated} calculated")]
    IncorrectLength {
        /// Length field as received, in words.
        declared: u16,
        /// Length calculated from the bytes and objects present, in words.
        calculated: u16,
    },
    /// Common Header Parse Error, Invalid E-flag (subcode 4).
    #[error("E flag set on a message other than Data")]
    InvalidEFlag,
    /// Object Type Error, Duplicate Object (A.4.4.9 subcode 0).
    #[error("duplicate object {0}")]
    DuplicateObject(u16),
    /// Object Type Error, Unrecognised Object (subcode 1): unknown type with AB=00.
    #[error("unrecognised mandatory object {0}")]
    UnrecognisedObject(u16),
    /// Object Type Error, Missing Object (subcode 2).
    #[error("missing object {0}")]
    MissingObject(u16),
    /// Object Type Error, Invalid Object Type (subcode 3): known, but not in this message type.
    #[error("object {0} not valid in this message type")]
    InvalidObjectType(u16),
    /// Object Type Error, Invalid Extensibility Flags (subcode 5): AB=11.
    #[error("object {0} with extensibility flags AB=11")]
    InvalidExtensibilityFlags(u16),
    /// Object Value Error (A.4.4.10) with its subcode.
    #[error("bad value in object {object_type}: {fault:?}")]
    ObjectValue {
        /// The object's type.
        object_type: u16,
        /// What is wrong.
        fault: ValueFault,
    },
}

impl ParseErrorKind {
    /// The GIST Error to answer with as (class, code, subcode), or `None` when the message is
    /// dropped silently (not recognisably GIST).
    pub fn error_code(&self) -> Option<(ErrorClass, u16, u8)> {
        use ParseErrorKind as K;
        let pe = ErrorClass::ProtocolError;
        let hdr = error_code::COMMON_HEADER_PARSE_ERROR;
        let ot = error_code::OBJECT_TYPE_ERROR;
        Some(match *self {
            K::Truncated | K::BadMagic(_) => return None,
            K::UnknownVersion(_) => (pe, hdr, 0),
            K::UnknownType(_) => (pe, hdr, 1),
            K::InvalidRFlag => (pe, hdr, 2),
            K::IncorrectLength { .. } => (pe, hdr, 3),
            K::InvalidEFlag => (pe, hdr, 4),
            K::DuplicateObject(_) => (pe, ot, 0),
            K::UnrecognisedObject(_) => (pe, ot, 1),
            K::MissingObject(_) => (pe, ot, 2),
            K::InvalidObjectType(_) => (pe, ot, 3),
            K::InvalidExtensibilityFlags(_) => (pe, ot, 5),
            K::ObjectValue { fault, .. } => (pe, error_code::OBJECT_VALUE_ERROR, fault.subcode()),
        })
    }

    /// The object type an Object Type Info / Object Value Info names, if any.
    pub fn object_type(&self) -> Option<u16> {
        use ParseErrorKind as K;
        match *self {
            K::DuplicateObject(t)
            | K::UnrecognisedObject(t)
            | K::MissingObject(t)
            | K::InvalidObjectType(t)
            | K::InvalidExtensibilityFlags(t) => Some(t),
            K::ObjectValue { object_type, .. } => Some(object_type),
            _ => None,
        }
    }

    /// A stable snake_case reason for the drop counters.
    pub fn reason(&self) -> &'static str {
        use ParseErrorKind as K;
        match self {
            K::Truncated => "truncated",
            K::BadMagic(_) => "bad_magic",
            K::UnknownVersion(_) => "unknown_version",
            K::UnknownType(_) => "unknown_type",
            K::InvalidRFlag => "invalid_r_flag",
            K::IncorrectLength { .. } => "incorrect_length",
            K::InvalidEFlag => "invalid_e_flag",
            K::DuplicateObject(_) => "duplicate_object",
            K::UnrecognisedObject(_) => "unrecognised_object",
            K::MissingObject(_) => "missing_object",
            K::InvalidObjectType(_) => "invalid_object_type",
            K::InvalidExtensibilityFlags(_) => "invalid_extensibility_flags",
            K::ObjectValue { fault, .. } => match fault {
                ValueFault::IncorrectLength => "object_incorrect_length",
                ValueFault::ValueNotSupported => "object_value_not_supported",
                ValueFault::InvalidFlagFieldCombination => "object_invalid_flags",
                ValueFault::EmptyList => "object_empty_list",
                ValueFault::InvalidCookie => "invalid_cookie",
                ValueFault::StackMismatch => "stack_mismatch",
            },
        }
    }
}

/// A message that did not parse, with what was learnt before the failure: enough to address
/// and fill in the GIST Error that answers it (A.4.1).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind}")]
pub struct ParseError {
    /// What went wrong.
    pub kind: ParseErrorKind,
    /// The common header, if it was readable.
    pub header: Option<CommonHeader>,
    /// The offending object (header included), as a byte range of the buffer that was parsed
    /// (after the magic number, for a D-mode message).
    pub object: Option<Range<usize>>,
    /// Byte offset within the offending object at which the error was found (Object Value
    /// Info).
    pub offset_in_object: usize,
    /// The MRI, if one was parsed before the error (boxed: errors are the cold path).
    pub mri: Option<Box<Mri>>,
    /// The Session ID, if parsed.
    pub session_id: Option<SessionId>,
    /// The NLI, if parsed: where to send the Error.
    pub nli: Option<Box<Nli>>,
}

impl ParseError {
    pub(crate) fn new(kind: ParseErrorKind) -> Self {
        ParseError {
            kind,
            header: None,
            object: None,
            offset_in_object: 0,
            mri: None,
            session_id: None,
            nli: None,
        }
    }

    /// The message type of the failed message, if its header was readable.
    pub fn msg_type(&self) -> Option<super::MsgType> {
        self.header.and_then(|h| h.kind())
    }

    /// A short label for logs: the reason and the object type involved.
    pub fn label(&self) -> (&'static str, &'static str) {
        (
            self.kind.reason(),
            self.kind.object_type().map_or("", object_type::name),
        )
    }
}

impl From<pathwise_core::wire::Truncated> for ObjectFault {
    fn from(t: pathwise_core::wire::Truncated) -> Self {
        ObjectFault::length(t.offset)
    }
}
