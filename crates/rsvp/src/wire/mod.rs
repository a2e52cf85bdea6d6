//! RSVP v1 wire format (RFC 2205 §3.1, Appendix A; IntServ objects per RFC 2210; error codes per
//! RFC 2205 Appendix B; RSVP-TE objects per RFC 3209 §4; the GMPLS label objects and IF_ID
//! RSVP_HOP of RFC 3473 §2.1, §2.3 and §8.1).
//!
//! Two layers, after smoltcp's wire modules:
//!
//! - views over bytes: [`Packet`] for the common header (field getters and setters, a checked
//!   constructor), [`ObjectHeader`] with its iterator over a message's objects;
//! - owned representations: [`Message`] and its objects, each with `parse`, `emit` and
//!   `buffer_len`. [`Message::parse`] documents what is accepted and rejected.
//!
//! No-panic contract: parsing any byte string returns a value or a typed [`ParseError`] that
//! says which ERROR_SPEC to answer with ([`ParseErrorKind::error_code`]) or why the message was
//! dropped ([`ParseErrorKind::reason`]); emitting never panics, and writes exactly
//! `buffer_len()` bytes. Values the wire cannot carry (a SCOPE mixing families, a flow label
//! wider than 20 bits, a message over 65535 bytes) are written in a defined, documented way
//! rather than refused.
//!
//! Module map: [`objects`] (SESSION … RESV_CONFIRM, by RFC 2205 §A section, with the LSP_TUNNEL
//! forms of RFC 3209 §4.6), [`intserv`] (SENDER_TSPEC, FLOWSPEC, ADSPEC), [`te`] (the other
//! RSVP-TE objects, RFC 3209 §4, and the refresh-reduction ones, RFC 2961), [`message`] (common
//! header, the seven messages, the integrity handshake and Hello), [`integrity`] (RFC 2747 signing and checking), [`error`]
//! (parse errors, the Appendix B error codes and RFC 3209's).

pub mod error;
pub mod integrity;
pub mod intserv;
pub mod message;
pub mod objects;
#[cfg(test)]
mod proptests;
pub mod te;

pub use error::{IntServFault, ParseError, ParseErrorKind, error_code};
pub use intserv::{
    Adspec, ControlledLoadAdspec, ErrorTerms, FlowSpec, GeneralParameters, GuaranteedAdspec,
    HopCharacteristics, IntServParam, Overrides, SenderTspec, ServiceFragment, TokenBucket,
};
pub use message::{
    CommonHeader, FilterTe, FlowDescriptor, Hello, HelloKind, HelloObject, IntegrityChallenge,
    IntegrityResponse, Message, MsgType, Packet, Parsed, Path, PathErr, PathTear, Resv, ResvConf,
    ResvErr, ResvTear, SenderDescriptor, SkippedObject,
};
pub use objects::{
    Challenge, ErrorSpec, FilterSpec, IfIdTlv, Integrity, ObjectHeader, Opaque, ResvConfirm,
    RsvpHop, Scope, Session, Style, StyleKind, TimeValues,
};
pub use te::{
    ExplicitRoute, GeneralizedLabel, GeneralizedLabelRequest, Label, LabelRequest, RecordRoute,
    SessionAttribute,
};
