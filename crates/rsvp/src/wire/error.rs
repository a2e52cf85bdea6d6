//! Parse errors, typed so the engine can answer with the right ERROR_SPEC (RFC 2205 App. B) or
//! count the drop by reason. TO BE COMPLETED by the codec.

use super::message::MsgType;
use super::objects::{RsvpHop, Session};

/// Why a message could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    /// Shorter than its header or its length field says.
    #[error("truncated")]
    Truncated,
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
}
