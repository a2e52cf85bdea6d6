//! RSVP v1 wire format (RFC 2205 §3.1, §A; IntServ objects per RFC 2210).
//!
//! Two layers: the owned representations here ([`Message`] and its objects) with `parse`/`emit`,
//! and the object-level reader used by the parsers. No-panic contract: parsing any byte string
//! returns a value or a typed [`ParseError`]; emitting never panics.

pub mod error;
pub mod intserv;
pub mod message;
pub mod objects;

pub use error::{ParseError, ParseErrorKind};
pub use intserv::{Adspec, FlowSpec, SenderTspec, TokenBucket};
pub use message::{
    CommonHeader, FlowDescriptor, Message, MsgType, Path, PathErr, PathTear, Resv, ResvConf,
    ResvErr, ResvTear, SenderDescriptor,
};
pub use objects::{
    ErrorSpec, FilterSpec, Opaque, ResvConfirm, RsvpHop, Scope, Session, Style, StyleKind,
    TimeValues,
};
