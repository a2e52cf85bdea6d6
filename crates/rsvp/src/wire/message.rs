//! RSVP messages (RFC 2205 §3.1): common header and the seven message types, as owned
//! representations with the objects each one carries, RSVP-TE's (RFC 3209 §3) included, and the
//! non-session messages: the integrity handshake (RFC 2747 §2.3) and Hello (RFC 3209 §5.1).
//!
//! [`Message::parse`] takes the RSVP message (the IP payload) and returns its common header and
//! contents; [`Message::emit`] appends a complete message, checksum included. [`Packet`] is the
//! zero-copy view of the common header both use.
//!
//! Parsing rules (RFC 2205 §3.1, §3.10; RFC 3209 §3.1.1, §3.2.1):
//!
//! - Vers must be 1; RSVP Length at least 8, a multiple of 4 and no larger than the buffer.
//!   Bytes after RSVP Length are ignored: RSVP Length defines the message (as the IP Total
//!   Length defines a datagram, and link padding is not part of it), and the checksum covers
//!   RSVP Length bytes only.
//! - A non-zero checksum must verify; zero means none was sent.
//! - Objects are accepted in any order (§3.1: "accept the objects in any permissible order"),
//!   except that FLOWSPEC and FILTER_SPEC objects are read as the flow descriptor list in the
//!   order they come, and a LABEL or RECORD_ROUTE there belongs to the FILTER_SPEC before it.
//! - Unknown classes: 0bbbbbbb rejects the message ([`ParseErrorKind::UnknownObjectClass`],
//!   error 13), 10bbbbbb is dropped silently, 11bbbbbb is kept in `forward` and re-emitted
//!   unexamined. A known class with an unknown C-Type is [`ParseErrorKind::UnknownCType`]
//!   (error 14). NULL objects are skipped.
//! - A known object the message type's BNF does not list rejects a Path or Resv
//!   ([`ParseErrorKind::UnexpectedObject`]). In PathErr, ResvErr, PathTear, ResvTear and ResvConf
//!   (§3.1.5–§3.1.9), which install no state and are never answered with an error, it is
//!   skipped unread and listed in [`Parsed::skipped`], so the error or teardown still gets
//!   through (KOM's PathErr carries LABEL_REQUEST); so is POLICY_DATA in any message (RFC 2750
//!   lets policy ride on more messages). ADSPEC and RECORD_ROUTE in PathTear are part of its
//!   sender descriptor and ignored there (§3.1.5). SESSION_ATTRIBUTE (class 207, 11bbbbbb)
//!   outside a Path is forwarded unexamined as before RSVP-TE.
//! - Objects that may appear once must appear once ([`ParseErrorKind::DuplicateObject`]), but
//!   of several EXPLICIT_ROUTE, SESSION_ATTRIBUTE or sender-descriptor RECORD_ROUTE objects, or
//!   RECORD_ROUTE objects after one FILTER_SPEC, the first counts and the others are dropped
//!   unread (RFC 3209 §4.3, §4.4, §4.7); the mandatory ones must be there
//!   ([`ParseErrorKind::MissingObject`]), LABEL_REQUEST in a Path of an LSP_TUNNEL session
//!   among them (the §3.1.1 BNF); every address-carrying object must be of the SESSION's
//!   family ([`ParseErrorKind::FamilyMismatch`]), and SENDER_TEMPLATE and FILTER_SPEC of its
//!   kind, LSP_TUNNEL or IP ([`ParseErrorKind::SessionTypeMismatch`]).
//! - The flow descriptor list follows the STYLE's grammar (§3.1.4): WF one FLOWSPEC and no
//!   FILTER_SPEC; FF one or more `[FLOWSPEC] FILTER_SPEC` pairs, an omitted FLOWSPEC meaning the
//!   previous one (in ResvTear it stays `None`); SE one FLOWSPEC then one or more FILTER_SPECs.
//!   ResvTear may omit every FLOWSPEC (§3.1.6); ResvErr may omit its error flow descriptor
//!   (§3.1.8). An unknown style is [`ParseErrorKind::UnknownStyle`] (error 6). RFC 3209
//!   §3.2.1 binds at most one LABEL and RECORD_ROUTE to each FILTER_SPEC, which must directly
//!   precede them ([`ParseErrorKind::BadFlowDescriptor`] otherwise, or for a second LABEL);
//!   they are accepted in every message with a flow descriptor list (Resv, ResvErr, ResvTear,
//!   ResvConf), whose grammars RFC 3209 extends through the flow descriptors, and are
//!   optional: whether a LABEL must be there is for the engine to say.
//!
//! On failure the [`ParseError`] carries the message type and, found by a second look over the
//! objects if the first pass had not reached them, the SESSION and RSVP_HOP, so the engine can
//! address a PathErr or ResvErr.
//!
//! Emitting writes the objects in the order of the RFC 2205 §3.1.x BNF with RFC 3209's
//! additions (INTEGRITY first after the header; in a Path EXPLICIT_ROUTE, LABEL_REQUEST and
//! SESSION_ATTRIBUTE after TIME_VALUES, RECORD_ROUTE last in the sender descriptor; LABEL and
//! RECORD_ROUTE after their FILTER_SPEC); `forward` objects go after the fixed objects, before
//! the sender descriptor or the STYLE and flow descriptor list (which §3.1.4 requires last).
//! Every FLOWSPEC is written (none is elided), so a parsed Resv round-trips to the same value.
//! Emitting never panics; a message longer than 65535 bytes cannot be represented and gets
//! RSVP Length 65535.

use super::intserv::{Adspec, FlowSpec, SenderTspec};
use super::objects::{
    Challenge, ErrorSpec, FilterSpec, Integrity, Opaque, ResvConfirm, RsvpHop, Scope, Session,
    Style, TimeValues,
};
use super::te::{
    ExplicitRoute, GeneralizedLabel, Label, LabelRequest, RecordRoute, SessionAttribute,
};
#[allow(unused_imports)] // for rustdoc links
use super::{ParseError, ParseErrorKind};
use crate::few::Few;

mod emit;
mod flows;
mod grammar;
mod header;
mod parse;
pub mod refresh;
#[cfg(test)]
mod tests;
pub mod vectors;

pub use super::te::{Hello as HelloObject, HelloKind};
pub use header::Packet;
pub use parse::{Parsed, SkippedObject};
pub use refresh::{Ack, Refresh, Srefresh};

/// Message types (RFC 2205 §3.1.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MsgType {
    /// Path (1).
    Path,
    /// Resv (2).
    Resv,
    /// PathErr (3).
    PathErr,
    /// ResvErr (4).
    ResvErr,
    /// PathTear (5).
    PathTear,
    /// ResvTear (6).
    ResvTear,
    /// ResvConf (7).
    ResvConf,
    /// Hello (20; RFC 3209 §5.1).
    Hello,
    /// Bundle (12; RFC 2961 §3.1): whole messages one after another, split before parsing with
    /// [`refresh::bundle_messages`].
    Bundle,
    /// Ack (13; RFC 2961 §4.4).
    Ack,
    /// Srefresh (15; RFC 2961 §5.1).
    Srefresh,
    /// Integrity Challenge (25; RFC 2747 §2.3 with the number RFC 3097 assigned).
    IntegrityChallenge,
    /// Integrity Response (26; RFC 2747 §2.3, RFC 3097).
    IntegrityResponse,
    /// Any other value.
    Unknown(u8),
}

impl From<u8> for MsgType {
    fn from(v: u8) -> Self {
        match v {
            1 => MsgType::Path,
            2 => MsgType::Resv,
            3 => MsgType::PathErr,
            4 => MsgType::ResvErr,
            5 => MsgType::PathTear,
            6 => MsgType::ResvTear,
            7 => MsgType::ResvConf,
            12 => MsgType::Bundle,
            13 => MsgType::Ack,
            15 => MsgType::Srefresh,
            20 => MsgType::Hello,
            25 => MsgType::IntegrityChallenge,
            26 => MsgType::IntegrityResponse,
            other => MsgType::Unknown(other),
        }
    }
}

impl From<MsgType> for u8 {
    fn from(t: MsgType) -> u8 {
        match t {
            MsgType::Path => 1,
            MsgType::Resv => 2,
            MsgType::PathErr => 3,
            MsgType::ResvErr => 4,
            MsgType::PathTear => 5,
            MsgType::ResvTear => 6,
            MsgType::ResvConf => 7,
            MsgType::Bundle => 12,
            MsgType::Ack => 13,
            MsgType::Srefresh => 15,
            MsgType::Hello => 20,
            MsgType::IntegrityChallenge => 25,
            MsgType::IntegrityResponse => 26,
            MsgType::Unknown(v) => v,
        }
    }
}

/// The common header (RFC 2205 §3.1.1), as parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommonHeader {
    /// Flags (4 bits; none defined by RFC 2205).
    pub flags: u8,
    /// Message type.
    pub msg_type: MsgType,
    /// Checksum as received (0: none was sent).
    pub checksum: u16,
    /// Send_TTL: the IP TTL the message was sent with.
    pub send_ttl: u8,
    /// RSVP Length: total message length in bytes.
    pub length: u16,
}

impl CommonHeader {
    /// Bytes in the common header.
    pub const LEN: usize = 8;
    /// The protocol version this codec speaks (Vers).
    pub const VERSION: u8 = 1;
}

/// A sender descriptor: SENDER_TEMPLATE, SENDER_TSPEC and optional ADSPEC (RFC 2205 §3.1.3),
/// and RSVP-TE's optional RECORD_ROUTE (RFC 3209 §3.1.1).
#[derive(Clone, Debug, PartialEq)]
pub struct SenderDescriptor {
    /// Which sender.
    pub template: FilterSpec,
    /// Its traffic.
    pub tspec: SenderTspec,
    /// The path's characteristics accumulated so far.
    pub adspec: Option<Adspec>,
    /// The route the Path has taken so far (RFC 3209 §4.4).
    pub record_route: Option<RecordRoute>,
}

/// One flow descriptor of a Resv-family message (RFC 2205 §3.1.4; RFC 3209 §3.2.1).
///
/// The style decides the shape: WF has one descriptor and no filter specs; SE one descriptor with
/// one or more filter specs; FF one descriptor per filter spec (a FLOWSPEC omitted on the wire is
/// filled in from the previous descriptor when parsing a Resv). `flowspec` is `None` only in
/// ResvTear, where RFC 2205 §3.1.7 allows it to be omitted.
///
/// `te[i]` holds the LABEL and RECORD_ROUTE bound to `filters[i]`. `te` is empty when no filter
/// spec has either (so RFC 2205 messages build as before, with [`FlowDescriptor::new`]), and as
/// long as `filters` otherwise; [`FlowDescriptor::filters_with_te`] pairs them up. Parsing
/// produces exactly these two shapes; emitting reads a missing entry as "neither".
#[derive(Clone, Debug, PartialEq)]
pub struct FlowDescriptor {
    /// The reservation.
    pub flowspec: Option<FlowSpec>,
    /// The senders it applies to (one inline: an FF descriptor allocates nothing).
    pub filters: Few<FilterSpec>,
    /// The RSVP-TE objects bound to each of `filters`, by index; empty when there are none.
    pub te: Vec<FilterTe>,
}

/// The RSVP-TE objects bound to one FILTER_SPEC of a flow descriptor (RFC 3209 §3.2.1:
/// "LABEL and RECORD_ROUTE (if present), are bound to the preceding FILTER_SPEC").
///
/// The label is a LABEL (RFC 3209 §4.1) or a Generalized LABEL (RFC 3473 §2.3), never both
/// (§2.3.1: "a protocol error and should [be] treated as a malformed message").
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FilterTe {
    /// The label the downstream node allocated for this sender's LSP (§4.1).
    pub label: Option<Label>,
    /// The route recorded on the way upstream (§4.4).
    pub record_route: Option<RecordRoute>,
    /// The label as a Generalized LABEL (RFC 3473 §2.3), in place of `label`.
    pub generalized_label: Option<GeneralizedLabel>,
}

impl FilterTe {
    /// Whether none of the objects is there.
    pub fn is_empty(&self) -> bool {
        self.label.is_none() && self.record_route.is_none() && self.generalized_label.is_none()
    }

    /// The 32-bit label given, whichever its object: a LABEL's, or a Generalized LABEL's when
    /// it is one word (an MPLS label is right-justified in it, RFC 3471 §3.2.1.2). `None`
    /// without a label or with a longer generalized one.
    pub fn label_value(&self) -> Option<u32> {
        match (&self.label, &self.generalized_label) {
            (Some(l), _) => Some(l.label),
            (None, Some(g)) => g.as_u32(),
            (None, None) => None,
        }
    }
}

impl FlowDescriptor {
    /// A flow descriptor without RSVP-TE objects.
    pub fn new(flowspec: Option<FlowSpec>, filters: impl Into<Few<FilterSpec>>) -> Self {
        FlowDescriptor {
            flowspec,
            filters: filters.into(),
            te: Vec::new(),
        }
    }

    /// Each filter spec with the RSVP-TE objects bound to it (`None` when there are none).
    pub fn filters_with_te(&self) -> impl Iterator<Item = (&FilterSpec, Option<&FilterTe>)> {
        self.filters
            .iter()
            .enumerate()
            .map(|(i, f)| (f, self.te.get(i).filter(|t| !t.is_empty())))
    }
}

/// Path (RFC 2205 §3.1.3; RFC 3209 §3.1.1 for the RSVP-TE objects).
#[derive(Clone, Debug, PartialEq)]
pub struct Path {
    /// INTEGRITY (RFC 2747), when the message was signed.
    pub integrity: Option<Integrity>,
    /// SESSION.
    pub session: Session,
    /// RSVP_HOP: the previous hop.
    pub hop: RsvpHop,
    /// TIME_VALUES.
    pub time_values: TimeValues,
    /// EXPLICIT_ROUTE: the abstract nodes the LSP must pass (RFC 3209 §4.3).
    pub explicit_route: Option<ExplicitRoute>,
    /// LABEL_REQUEST: asks for a label binding (RFC 3209 §4.2); required in an LSP_TUNNEL
    /// session.
    pub label_request: Option<LabelRequest>,
    /// SESSION_ATTRIBUTE: priorities, flags and name of the tunnel (RFC 3209 §4.7).
    pub session_attribute: Option<SessionAttribute>,
    /// POLICY_DATA objects.
    pub policy: Vec<Opaque>,
    /// The sender descriptor.
    pub sender: SenderDescriptor,
    /// Unknown objects of class 11bbbbbb, forwarded unexamined (RFC 2205 §3.10).
    pub forward: Vec<Opaque>,
}

/// Resv (RFC 2205 §3.1.4).
#[derive(Clone, Debug, PartialEq)]
pub struct Resv {
    /// INTEGRITY (RFC 2747), when the message was signed.
    pub integrity: Option<Integrity>,
    /// SESSION.
    pub session: Session,
    /// RSVP_HOP: the next hop that sent it.
    pub hop: RsvpHop,
    /// TIME_VALUES.
    pub time_values: TimeValues,
    /// RESV_CONFIRM: the receiver asks for a ResvConf.
    pub confirm: Option<ResvConfirm>,
    /// SCOPE (wildcard style only).
    pub scope: Option<Scope>,
    /// POLICY_DATA objects.
    pub policy: Vec<Opaque>,
    /// STYLE.
    pub style: Style,
    /// Flow descriptors.
    pub flows: Few<FlowDescriptor>,
    /// Unknown objects of class 11bbbbbb.
    pub forward: Vec<Opaque>,
}

/// PathTear (RFC 2205 §3.1.5). Tspec, Adspec and RSVP-TE's RECORD_ROUTE of the sender
/// descriptor are ignored and may be absent.
#[derive(Clone, Debug, PartialEq)]
pub struct PathTear {
    /// INTEGRITY (RFC 2747), when the message was signed.
    pub integrity: Option<Integrity>,
    /// SESSION.
    pub session: Session,
    /// RSVP_HOP: the previous hop.
    pub hop: RsvpHop,
    /// SENDER_TEMPLATE of the sender whose path state goes; `None` tears all senders of `hop`.
    pub sender_template: Option<FilterSpec>,
    /// SENDER_TSPEC if present (ignored).
    pub sender_tspec: Option<SenderTspec>,
    /// Unknown objects of class 11bbbbbb.
    pub forward: Vec<Opaque>,
}

/// ResvTear (RFC 2205 §3.1.6).
#[derive(Clone, Debug, PartialEq)]
pub struct ResvTear {
    /// INTEGRITY (RFC 2747), when the message was signed.
    pub integrity: Option<Integrity>,
    /// SESSION.
    pub session: Session,
    /// RSVP_HOP: the next hop.
    pub hop: RsvpHop,
    /// SCOPE.
    pub scope: Option<Scope>,
    /// STYLE.
    pub style: Style,
    /// Flow descriptors (flowspecs may be absent).
    pub flows: Few<FlowDescriptor>,
    /// Unknown objects of class 11bbbbbb.
    pub forward: Vec<Opaque>,
}

/// PathErr (RFC 2205 §3.1.7). RSVP-TE adds only what the sender descriptor carries.
#[derive(Clone, Debug, PartialEq)]
pub struct PathErr {
    /// INTEGRITY (RFC 2747), when the message was signed.
    pub integrity: Option<Integrity>,
    /// SESSION.
    pub session: Session,
    /// ERROR_SPEC.
    pub error: ErrorSpec,
    /// POLICY_DATA objects.
    pub policy: Vec<Opaque>,
    /// The sender descriptor of the Path in error.
    pub sender: Option<SenderDescriptor>,
    /// Unknown objects of class 11bbbbbb.
    pub forward: Vec<Opaque>,
}

/// ResvErr (RFC 2205 §3.1.8).
#[derive(Clone, Debug, PartialEq)]
pub struct ResvErr {
    /// INTEGRITY (RFC 2747), when the message was signed.
    pub integrity: Option<Integrity>,
    /// SESSION.
    pub session: Session,
    /// RSVP_HOP: the node sending the error.
    pub hop: RsvpHop,
    /// ERROR_SPEC.
    pub error: ErrorSpec,
    /// SCOPE.
    pub scope: Option<Scope>,
    /// POLICY_DATA objects.
    pub policy: Vec<Opaque>,
    /// STYLE.
    pub style: Style,
    /// The error flow descriptor(s).
    pub flows: Few<FlowDescriptor>,
    /// Unknown objects of class 11bbbbbb.
    pub forward: Vec<Opaque>,
}

/// ResvConf (RFC 2205 §3.1.9).
#[derive(Clone, Debug, PartialEq)]
pub struct ResvConf {
    /// INTEGRITY (RFC 2747), when the message was signed.
    pub integrity: Option<Integrity>,
    /// SESSION.
    pub session: Session,
    /// ERROR_SPEC (code 0: confirmation), naming the node that confirmed.
    pub error: ErrorSpec,
    /// RESV_CONFIRM: the receiver the confirmation is for.
    pub confirm: ResvConfirm,
    /// STYLE.
    pub style: Style,
    /// The flow descriptors that were confirmed.
    pub flows: Few<FlowDescriptor>,
    /// Unknown objects of class 11bbbbbb.
    pub forward: Vec<Opaque>,
}

/// Integrity Challenge (RFC 2747 §2.3, type 25 per RFC 3097): a receiver without sequence
/// state for a sender's key asks it to prove the key and a fresh sequence number.
///
/// `<Integrity Challenge message> ::= <Common Header> <CHALLENGE>`
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntegrityChallenge {
    /// The key and cookie.
    pub challenge: Challenge,
}

/// Integrity Response (RFC 2747 §2.3, type 26 per RFC 3097): the answer, signed, echoing the
/// CHALLENGE.
///
/// `<Integrity Response message> ::= <Common Header> <INTEGRITY> <CHALLENGE>`
///
/// `integrity` is required on receipt; a sender emits the message without it and signs it
/// through [`crate::wire::integrity::sign`], which inserts the object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntegrityResponse {
    /// INTEGRITY.
    pub integrity: Option<Integrity>,
    /// The CHALLENGE being answered, copied from the challenge.
    pub challenge: Challenge,
}

/// Hello (RFC 3209 §5.1): neighbour liveness between two adjacent RSVP nodes, carrying a
/// HELLO REQUEST or a HELLO ACK with the two instance numbers (§5.2).
///
/// `<Hello Message> ::= <Common Header> [ <INTEGRITY> ] <HELLO>`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    /// INTEGRITY (RFC 2747), when the message was signed.
    pub integrity: Option<Integrity>,
    /// HELLO REQUEST or HELLO ACK.
    pub object: HelloObject,
}

/// Any RSVP message.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// Path.
    Path(Path),
    /// Resv.
    Resv(Resv),
    /// PathErr.
    PathErr(PathErr),
    /// ResvErr.
    ResvErr(ResvErr),
    /// PathTear.
    PathTear(PathTear),
    /// ResvTear.
    ResvTear(ResvTear),
    /// ResvConf.
    ResvConf(ResvConf),
    /// Hello (RFC 3209 §5).
    Hello(Hello),
    /// Ack (RFC 2961 §4.4).
    Ack(Ack),
    /// Srefresh (RFC 2961 §5.1).
    Srefresh(Srefresh),
    /// Integrity Challenge.
    IntegrityChallenge(IntegrityChallenge),
    /// Integrity Response.
    IntegrityResponse(IntegrityResponse),
}
