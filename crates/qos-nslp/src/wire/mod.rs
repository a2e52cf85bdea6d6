//! QoS NSLP wire format (RFC 5974 §5.1) with the QSPEC template (RFC 5975 §5).
//!
//! After smoltcp's wire modules, and the house GIST codec:
//!
//! - fixed-layout headers as small `Copy` values with named field offsets: [`CommonHeader`]
//!   (§5.1.1) and [`ObjectHeader`] (§5.1.3), the latter a
//!   [`TlvHeader`](pathwise_core::wire::TlvHeader) so
//!   [`TlvIter`](pathwise_core::wire::TlvIter) walks a message's objects;
//! - owned representations of every object and message, each with `parse`, `emit` and
//!   `buffer_len`: [`Rii`], [`Rsn`], [`RefreshPeriod`], [`BoundSessionId`],
//!   [`PacketClassifier`], [`InfoSpec`], [`SessionIdList`], [`RsnList`], [`MessageBinding`]
//!   (MSG-ID, BOUND-MSG-ID), [`Qspec`] (RFC 5975), and [`Message`] with its four bodies.
//!
//! No-panic contract: parsing any byte string returns a value or a typed [`ParseError`] whose
//! [`ParseErrorKind::info_spec`] names the INFO-SPEC (class, code) a RESPONSE about it would
//! carry and whose offset locates the offending object; emitting never panics and writes
//! exactly `buffer_len()` bytes. Lengths the 12-bit word fields cannot carry (an object over
//! [`MAX_OBJECT_BODY`]) are the sender's to avoid; the codec truncates the field rather than
//! panic.
//!
//! Unknown objects follow their AB flags (§5.1.3): AB=00 rejects the message
//! ([`ParseErrorKind::UnknownObject`], Protocol Error 0x07); the others are kept as
//! [`UnknownObject`]s with their [`Extensibility`], which tells the engine whether to drop
//! (Ignore), forward (Forward) or also store and refresh (Refresh) them. Unknown QSPEC
//! parameters are kept with their M/E/N flags ([`qspec::ParamValue::Unknown`],
//! [`Qspec::mark_unknown_parameters`]).

mod error;
mod header;
mod info_spec;
mod message;
mod objects;
#[cfg(test)]
mod proptests;
pub mod qspec;
pub mod vectors;

pub use error::{ParseError, ParseErrorKind, ValueFault};
pub use header::{
    CommonHeader, Extensibility, GenericFlags, HEADER_LEN, MAX_OBJECT_BODY, MsgType,
    OBJECT_HEADER_LEN, ObjectHeader, object_type, query_flags, reserve_flags,
};
pub use info_spec::{ErrorClass, ErrorSource, InfoSpec, code};
pub use message::{Answers, Body, Message, Notify, Query, Reserve, Response};
pub use objects::{
    BindingCode, BindingType, BoundSessionId, MessageBinding, PacketClassifier, RefreshPeriod, Rii,
    Rsn, RsnList, SessionIdList, UnknownObject,
};
pub use pathwise_gist::wire::SessionId;
pub use qspec::{Qspec, QspecError, QspecErrorKind, QspecObject, QspecObjectType, QspecProcedure};

/// Writes `bytes` and zeros up to a whole number of words. (Not `Writer::pad_to`, which aligns
/// the whole buffer: the object may not start on a word boundary of it.)
pub(crate) fn write_padded(w: &mut pathwise_core::wire::Writer<'_>, bytes: &[u8]) {
    w.bytes(bytes);
    w.zeros(pad4(bytes.len()) - bytes.len());
}

/// `n` rounded up to a whole number of 32-bit words.
pub(crate) const fn pad4(n: usize) -> usize {
    (n + 3) & !3
}
