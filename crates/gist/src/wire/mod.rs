//! GIST wire format (RFC 5971 §5.1, §5.2 and Appendix A).
//!
//! Two layers, after smoltcp's wire modules:
//!
//! - the fixed-layout headers as small `Copy` values with named field offsets: [`CommonHeader`]
//!   (A.1) and [`ObjectHeader`] (A.2), the latter a [`TlvHeader`](pathwise_core::wire::TlvHeader)
//!   so [`TlvIter`](pathwise_core::wire::TlvIter) walks a message's objects;
//! - owned representations of every object and message, each with `parse`, `emit` and
//!   `buffer_len`: [`Mri`] (path-coupled and loose-end, A.3.1), [`SessionId`] (A.3.2), [`Nli`]
//!   (A.3.3), [`StackProposal`] (A.3.4), [`StackConfigData`] (A.3.5), cookies (A.3.6, A.3.7),
//!   [`ErrorObject`] (A.4.1), [`Message`] with its six bodies (§5.1).
//!
//! D-mode messages (UDP) begin with the magic number [`MAGIC`] (§5.4); messages in an MA (C-mode)
//! do not. [`Message::parse_datagram`]/[`Message::emit_datagram`] handle the former,
//! [`Message::parse`]/[`Message::emit`] the latter, and [`frame_len`] cuts a byte stream into
//! messages.
//!
//! No-panic contract: parsing any byte string returns a value or a typed [`ParseError`] that says
//! which GIST Error to answer with ([`ParseErrorKind::error_code`], A.4.4) and carries the
//! offending object's position, so the Error can include it; emitting never panics and writes
//! exactly `buffer_len()` bytes. Lengths the wire cannot carry (an object over 4095 words) are
//! refused earlier, by the engine's API ([`MAX_OBJECT_BODY`]); the codec itself truncates the
//! length field to its 12 bits rather than panic.
//!
//! Objects with an unknown type are handled by their extensibility flags (§5.2, A.2.1):
//! AB=00 rejects the message (Object Type Error, Unrecognised Object), AB=01 drops the object,
//! AB=10 keeps it ([`UnknownObject`]) so it is forwarded unchanged, AB=11 is an error (Invalid
//! Extensibility Flags).

mod error;
mod error_object;
mod header;
mod message;
mod mri;
mod objects;
#[cfg(test)]
pub(crate) mod proptests;
#[cfg(test)]
mod tests;
pub mod vectors;

pub use error::{ObjectFault, ParseError, ParseErrorKind, ValueFault};
pub use error_object::{AdditionalInfo, ErrorClass, ErrorObject, error_code};
pub use header::{CommonHeader, Extensibility, MsgType, ObjectHeader, object_type};
pub use message::{Body, Confirm, Data, ErrorMsg, MaHello, Message, Query, Response, frame_len};
pub use mri::{LooseEndMri, Mri, PathCoupledMri, mrm};
pub use objects::{
    Cookie, MaProtocolOptions, Nli, SessionId, ShortBytes, StackConfigData, StackProposal,
    UnknownObject, ma_protocol,
};
pub use pathwise_core::spare::SpareBuffers;

/// The magic number that begins every D-mode message (RFC 5971 §5.4.1).
pub const MAGIC: u32 = 0x4e04_bda5;
/// The GIST UDP port (RFC 5971 §9, IANA).
pub const GIST_PORT: u16 = 270;
/// The GIST version this codec speaks (A.1).
pub const VERSION: u8 = 1;
/// Largest object body the 12-bit word length can describe (A.2): 4095 words.
pub const MAX_OBJECT_BODY: usize = 4095 * 4;
/// The common header's length (A.1).
pub const HEADER_LEN: usize = 8;

/// `n` rounded up to a whole number of 32-bit words.
pub(crate) const fn pad4(n: usize) -> usize {
    (n + 3) & !3
}
