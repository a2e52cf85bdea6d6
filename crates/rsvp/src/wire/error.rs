//! Parse errors, typed so the engine can answer with the right ERROR_SPEC (RFC 2205 App. B,
//! RFC 3209 §4.5) or count the drop by reason.
//!
//! Every variant carries the offending value. [`ParseErrorKind::error_code`] says which
//! ERROR_SPEC (code, value) a node answers with — `None` means the message is dropped silently
//! (and counted under [`ParseErrorKind::reason`]). The engine must still never answer an error
//! message (PathErr, ResvErr) or a ResvConf with another error message (RFC 2205 §3.7).

use super::message::MsgType;
use super::objects::{RsvpHop, Session, Style};

pub mod error_code;

/// What is wrong inside an IntServ object body (RFC 2210 §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum IntServFault {
    /// A length field (message, service or parameter header) disagrees with the bytes present.
    #[error("length {declared} bytes declared, {available} available")]
    BadLength {
        /// Bytes the header declared (header excluded).
        declared: usize,
        /// Bytes actually there.
        available: usize,
    },
    /// Message format version other than 0.
    #[error("message format version {0}")]
    BadVersion(u8),
    /// A service number this object cannot carry (e.g. a FLOWSPEC for neither Controlled-Load nor
    /// Guaranteed).
    #[error("unsupported service {0}")]
    UnsupportedService(u8),
    /// The same service fragment twice.
    #[error("duplicate service {0}")]
    DuplicateService(u8),
    /// A required service fragment is absent (the ADSPEC's default general parameters; 0 when
    /// a SENDER_TSPEC or FLOWSPEC carries no fragment at all).
    #[error("missing service {0}")]
    MissingService(u8),
    /// A second service fragment in a SENDER_TSPEC or FLOWSPEC, which carry exactly one.
    #[error("extra service fragment {0}")]
    ExtraService(u8),
    /// A parameter this service fragment does not define.
    #[error("unknown parameter {param} in service {service}")]
    UnknownParameter {
        /// Service number of the fragment.
        service: u8,
        /// Parameter ID.
        param: u8,
    },
    /// A parameter with the wrong length, or present twice.
    #[error("malformed parameter {param} in service {service}")]
    BadParameter {
        /// Service number of the fragment.
        service: u8,
        /// Parameter ID.
        param: u8,
    },
    /// A required parameter is absent.
    #[error("missing parameter {param} in service {service}")]
    MissingParameter {
        /// Service number of the fragment.
        service: u8,
        /// Parameter ID.
        param: u8,
    },
    /// A value the parameter's definition rules out (NaN, negative, infinite where a finite value
    /// is required, m > M).
    #[error("invalid value {bits:#010x} of parameter {param} in service {service}")]
    InvalidValue {
        /// Service number of the fragment.
        service: u8,
        /// Parameter ID.
        param: u8,
        /// The raw 32-bit word (an IEEE 754 float for rates and sizes).
        bits: u32,
    },
}

/// Why a message could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    /// Shorter than its common header or than its RSVP Length says.
    #[error("truncated")]
    Truncated,
    /// Vers other than 1 (RFC 2205 §3.1.1).
    #[error("version {0}")]
    BadVersion(u8),
    /// A message type this codec does not know.
    #[error("unknown message type {0}")]
    UnknownMsgType(u8),
    /// RSVP Length below the common header's 8 bytes or not a multiple of 4.
    #[error("RSVP length {0}")]
    BadLength(u16),
    /// The checksum does not verify (RFC 2205 §3.1.1).
    #[error("bad checksum {received:#06x}")]
    BadChecksum {
        /// Checksum field as received.
        received: u16,
    },
    /// An object length below 4, not a multiple of 4, or running past the message end
    /// (RFC 2205 §3.1.2).
    #[error("object {class}/{ctype}: bad length {length}")]
    BadObjectLength {
        /// Class-Num.
        class: u8,
        /// C-Type.
        ctype: u8,
        /// Object length field.
        length: u16,
    },
    /// Unknown class of the form 0bbbbbbb: reject the message (RFC 2205 §3.10); answered with
    /// error 13.
    #[error("unknown object class {class} (C-Type {ctype})")]
    UnknownObjectClass {
        /// Class-Num.
        class: u8,
        /// C-Type.
        ctype: u8,
    },
    /// Known class with an unknown C-Type (RFC 2205 §3.10); answered with error 14.
    #[error("unknown C-Type {ctype} of class {class}")]
    UnknownCType {
        /// Class-Num.
        class: u8,
        /// C-Type.
        ctype: u8,
    },
    /// An object body that does not match its C-Type's format (wrong size, empty SCOPE).
    #[error("malformed object {class}/{ctype}")]
    BadObject {
        /// Class-Num.
        class: u8,
        /// C-Type.
        ctype: u8,
    },
    /// An object of another address family than the SESSION.
    #[error("object {class}/{ctype} does not match the session's address family")]
    FamilyMismatch {
        /// Class-Num.
        class: u8,
        /// C-Type.
        ctype: u8,
    },
    /// A SENDER_TEMPLATE or FILTER_SPEC of the LSP_TUNNEL C-Types (RFC 3209 §4.6.2, §4.6.3)
    /// in an IP session, or of an IP C-Type in an LSP_TUNNEL session: it cannot name a sender
    /// of that session. RFC 3209 names no error for it; dropped.
    #[error("object {class}/{ctype} does not match the session's C-Type")]
    SessionTypeMismatch {
        /// Class-Num.
        class: u8,
        /// C-Type.
        ctype: u8,
    },
    /// A mandatory object is absent.
    #[error("missing object of class {class}")]
    MissingObject {
        /// Class-Num of the missing object.
        class: u8,
    },
    /// An object that may appear once appears twice (or a Path carries two sender descriptors).
    #[error("duplicate object of class {class}")]
    DuplicateObject {
        /// Class-Num.
        class: u8,
    },
    /// A known object that this message type's BNF (RFC 2205 §3.1.3–§3.1.9) does not allow.
    #[error("object {class}/{ctype} not allowed in this message type")]
    UnexpectedObject {
        /// Class-Num.
        class: u8,
        /// C-Type.
        ctype: u8,
    },
    /// The flow descriptor list breaks its style's grammar (RFC 2205 §3.1.4): the object at
    /// which it went wrong.
    #[error("flow descriptor list broken at class {class}")]
    BadFlowDescriptor {
        /// Class-Num of the object that did not fit (FLOWSPEC or FILTER_SPEC).
        class: u8,
    },
    /// A STYLE whose option vector names no known style (answered with error 6).
    #[error("unknown reservation style {style:?}")]
    UnknownStyle {
        /// The STYLE as received.
        style: Style,
    },
    /// An INTEGRITY object anywhere but first after the common header (RFC 2747 §3).
    #[error("INTEGRITY object not directly after the common header")]
    MisplacedIntegrity,
    /// A SENDER_TSPEC the IntServ rules reject (answered with error 21, value 4).
    #[error("bad Tspec: {0}")]
    BadTspec(IntServFault),
    /// A FLOWSPEC the IntServ rules reject (error 21, value 3; value 2 for an unsupported
    /// service).
    #[error("bad flowspec: {0}")]
    BadFlowspec(IntServFault),
    /// An ADSPEC the IntServ rules reject (error 21, value 5).
    #[error("bad Adspec: {0}")]
    BadAdspec(IntServFault),
}

impl From<pathwise_core::wire::Truncated> for ParseErrorKind {
    fn from(_: pathwise_core::wire::Truncated) -> Self {
        ParseErrorKind::Truncated
    }
}

impl ParseErrorKind {
    /// The ERROR_SPEC (error code, error value) to answer this failure with (RFC 2205 App. B,
    /// §3.10), or `None` when the message is just dropped.
    pub fn error_code(&self) -> Option<(u8, u16)> {
        use error_code as ec;
        let class_ctype = |class: u8, ctype: u8| u16::from(class) << 8 | u16::from(ctype);
        match *self {
            ParseErrorKind::UnknownObjectClass { class, ctype } => {
                Some((ec::UNKNOWN_OBJECT_CLASS, class_ctype(class, ctype)))
            }
            ParseErrorKind::UnknownCType { class, ctype } => {
                Some((ec::UNKNOWN_OBJECT_CTYPE, class_ctype(class, ctype)))
            }
            ParseErrorKind::UnknownStyle { .. } => Some((ec::UNKNOWN_RESERVATION_STYLE, 0)),
            // RFC 3209 §4.3.4.1, §4.3.6: a Path whose EXPLICIT_ROUTE cannot be read (no
            // subobject, a subobject of the wrong length) is answered "Bad EXPLICIT_ROUTE
            // object". Only a Path may carry one.
            ParseErrorKind::BadObject {
                class: super::te::class::EXPLICIT_ROUTE,
                ..
            } => Some((ec::ROUTING_PROBLEM, ec::routing::BAD_EXPLICIT_ROUTE_OBJECT)),
            ParseErrorKind::BadTspec(_) => {
                Some((ec::TRAFFIC_CONTROL_ERROR, ec::traffic_control::BAD_TSPEC))
            }
            ParseErrorKind::BadFlowspec(IntServFault::UnsupportedService(_)) => Some((
                ec::TRAFFIC_CONTROL_ERROR,
                ec::traffic_control::SERVICE_UNSUPPORTED,
            )),
            ParseErrorKind::BadFlowspec(_) => {
                Some((ec::TRAFFIC_CONTROL_ERROR, ec::traffic_control::BAD_FLOWSPEC))
            }
            ParseErrorKind::BadAdspec(_) => {
                Some((ec::TRAFFIC_CONTROL_ERROR, ec::traffic_control::BAD_ADSPEC))
            }
            ParseErrorKind::Truncated
            | ParseErrorKind::BadVersion(_)
            | ParseErrorKind::UnknownMsgType(_)
            | ParseErrorKind::BadLength(_)
            | ParseErrorKind::BadChecksum { .. }
            | ParseErrorKind::BadObjectLength { .. }
            | ParseErrorKind::BadObject { .. }
            | ParseErrorKind::FamilyMismatch { .. }
            | ParseErrorKind::SessionTypeMismatch { .. }
            | ParseErrorKind::MissingObject { .. }
            | ParseErrorKind::DuplicateObject { .. }
            | ParseErrorKind::UnexpectedObject { .. }
            | ParseErrorKind::BadFlowDescriptor { .. }
            | ParseErrorKind::MisplacedIntegrity => None,
        }
    }

    /// A short, stable snake_case label for drop counters.
    pub fn reason(&self) -> &'static str {
        match self {
            ParseErrorKind::Truncated => "truncated",
            ParseErrorKind::BadVersion(_) => "bad_version",
            ParseErrorKind::UnknownMsgType(_) => "unknown_msg_type",
            ParseErrorKind::BadLength(_) => "bad_length",
            ParseErrorKind::BadChecksum { .. } => "bad_checksum",
            ParseErrorKind::BadObjectLength { .. } => "bad_object_length",
            ParseErrorKind::UnknownObjectClass { .. } => "unknown_class",
            ParseErrorKind::UnknownCType { .. } => "unknown_ctype",
            ParseErrorKind::BadObject { .. } => "bad_object",
            ParseErrorKind::FamilyMismatch { .. } => "family_mismatch",
            ParseErrorKind::SessionTypeMismatch { .. } => "session_type_mismatch",
            ParseErrorKind::MissingObject { .. } => "missing_object",
            ParseErrorKind::DuplicateObject { .. } => "duplicate_object",
            ParseErrorKind::UnexpectedObject { .. } => "unexpected_object",
            ParseErrorKind::BadFlowDescriptor { .. } => "bad_flow_descriptor",
            ParseErrorKind::UnknownStyle { .. } => "unknown_style",
            ParseErrorKind::MisplacedIntegrity => "integrity_misplaced",
            ParseErrorKind::BadTspec(_) => "bad_tspec",
            ParseErrorKind::BadFlowspec(IntServFault::UnsupportedService(_)) => {
                "unsupported_service"
            }
            ParseErrorKind::BadFlowspec(_) => "bad_flowspec",
            ParseErrorKind::BadAdspec(_) => "bad_adspec",
        }
    }

    /// The kind for a known class carrying an unknown C-Type.
    pub(crate) fn unknown_ctype(class: u8, ctype: u8) -> Self {
        ParseErrorKind::UnknownCType { class, ctype }
    }

    /// The kind for a body that does not fit its C-Type.
    pub(crate) fn bad_object(class: u8, ctype: u8) -> Self {
        ParseErrorKind::BadObject { class, ctype }
    }
}

/// A parse failure, with whatever the parser could learn of the message before it failed so the
/// engine can address an error message (PathErr/ResvErr) back.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind}")]
pub struct ParseError {
    /// What was wrong.
    pub kind: ParseErrorKind,
    /// The message type from the common header, if it was readable.
    pub msg_type: Option<MsgType>,
    /// The SESSION object, if it was found and valid.
    pub session: Option<Session>,
    /// The RSVP_HOP object, if it was found and valid.
    pub hop: Option<RsvpHop>,
    /// The STYLE object, if it was found and valid (a ResvErr must name one).
    pub style: Option<Style>,
}

impl ParseError {
    /// An error with no context.
    pub fn new(kind: ParseErrorKind) -> Self {
        ParseError {
            kind,
            msg_type: None,
            session: None,
            hop: None,
            style: None,
        }
    }
}

impl From<ParseErrorKind> for ParseError {
    fn from(kind: ParseErrorKind) -> Self {
        ParseError::new(kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};

    #[test]
    fn error_codes_match_rfc2205_appendix_b() {
        use error_code::*;
        // RFC 2205 App. B numbers, spelled out once more so a typo in the table above shows.
        let table = [
            (CONFIRMATION, 0),
            (ADMISSION_CONTROL_FAILURE, 1),
            (POLICY_CONTROL_FAILURE, 2),
            (NO_PATH_INFORMATION, 3),
            (NO_SENDER_INFORMATION, 4),
            (CONFLICTING_RESERVATION_STYLE, 5),
            (UNKNOWN_RESERVATION_STYLE, 6),
            (CONFLICTING_DEST_PORTS, 7),
            (CONFLICTING_SENDER_PORTS, 8),
            (SERVICE_PREEMPTED, 12),
            (UNKNOWN_OBJECT_CLASS, 13),
            (UNKNOWN_OBJECT_CTYPE, 14),
            (API_ERROR, 20),
            (TRAFFIC_CONTROL_ERROR, 21),
            (TRAFFIC_CONTROL_SYSTEM_ERROR, 22),
            (RSVP_SYSTEM_ERROR, 23),
            // RFC 3209 §4.5.
            (ROUTING_PROBLEM, 24),
            (NOTIFY, 25),
        ];
        for (constant, rfc) in table {
            assert_eq!(constant, rfc);
        }
        assert_eq!(
            (
                admission::DELAY_BOUND,
                admission::BANDWIDTH_UNAVAILABLE,
                admission::MTU_TOO_BIG
            ),
            (1, 2, 3)
        );
        assert_eq!(
            [
                traffic_control::SERVICE_CONFLICT,
                traffic_control::SERVICE_UNSUPPORTED,
                traffic_control::BAD_FLOWSPEC,
                traffic_control::BAD_TSPEC,
                traffic_control::BAD_ADSPEC
            ],
            [1, 2, 3, 4, 5]
        );
        assert_eq!(
            [
                routing::BAD_EXPLICIT_ROUTE_OBJECT,
                routing::BAD_STRICT_NODE,
                routing::BAD_LOOSE_NODE,
                routing::BAD_INITIAL_SUBOBJECT,
                routing::NO_ROUTE_AVAILABLE,
                routing::UNACCEPTABLE_LABEL_VALUE,
                routing::RRO_INDICATED_ROUTING_LOOPS,
                routing::NON_RSVP_CAPABLE_ROUTER,
                routing::LABEL_ALLOCATION_FAILURE,
                routing::UNSUPPORTED_L3PID
            ],
            [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
        );
        assert_eq!(
            [
                notify::RRO_TOO_LARGE_FOR_MTU,
                notify::RRO_NOTIFICATION,
                notify::TUNNEL_LOCALLY_REPAIRED
            ],
            [1, 2, 3]
        );
    }

    #[test]
    fn answers_and_reasons() {
        let k = ParseErrorKind::UnknownObjectClass {
            class: 0x42,
            ctype: 7,
        };
        assert_eq!(k.error_code(), Some((13, 0x4207)));
        assert_eq!(k.reason(), "unknown_class");
        let k = ParseErrorKind::UnknownCType { class: 1, ctype: 9 };
        assert_eq!(k.error_code(), Some((14, 0x0109)));
        let fault = IntServFault::BadVersion(3);
        assert_eq!(ParseErrorKind::BadTspec(fault).error_code(), Some((21, 4)));
        assert_eq!(
            ParseErrorKind::BadFlowspec(fault).error_code(),
            Some((21, 3))
        );
        assert_eq!(
            ParseErrorKind::BadFlowspec(IntServFault::UnsupportedService(3)).error_code(),
            Some((21, 2))
        );
        assert_eq!(ParseErrorKind::BadAdspec(fault).error_code(), Some((21, 5)));
        let style = Style {
            flags: 0,
            kind: crate::wire::StyleKind::Other(0x1f),
        };
        assert_eq!(
            ParseErrorKind::UnknownStyle { style }.error_code(),
            Some((6, 0))
        );
        // RFC 3209 §4.3.4.1: a malformed EXPLICIT_ROUTE is "Routing Problem / Bad
        // EXPLICIT_ROUTE object"; other malformed objects are dropped.
        let bad_ero = ParseErrorKind::BadObject {
            class: 20,
            ctype: 1,
        };
        assert_eq!(bad_ero.error_code(), Some((24, 1)));
        assert_eq!(bad_ero.reason(), "bad_object");
        let k = ParseErrorKind::SessionTypeMismatch {
            class: 11,
            ctype: 7,
        };
        assert_eq!(k.reason(), "session_type_mismatch");
        for silent in [
            k,
            ParseErrorKind::BadObject {
                class: 21,
                ctype: 1,
            },
            ParseErrorKind::Truncated,
            ParseErrorKind::BadChecksum { received: 1 },
            ParseErrorKind::BadVersion(2),
            ParseErrorKind::MissingObject { class: 1 },
        ] {
            assert_eq!(silent.error_code(), None, "{silent:?}");
        }
        assert_eq!(
            ParseErrorKind::BadChecksum { received: 1 }.reason(),
            "bad_checksum"
        );
        let e = ParseError {
            kind: ParseErrorKind::Truncated,
            msg_type: Some(MsgType::Path),
            session: Some(Session::ip(IpAddr::V4(Ipv4Addr::LOCALHOST), 17, 1)),
            hop: None,
            style: None,
        };
        assert_eq!(e.to_string(), "truncated");
    }
}
