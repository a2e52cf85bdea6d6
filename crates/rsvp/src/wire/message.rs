//! RSVP messages (RFC 2205 §3.1): common header and the seven message types, as owned
//! representations with the objects each one carries.
//!
//! TYPES ARE FIXED (the engine uses them); codec to be implemented.

use super::intserv::{Adspec, FlowSpec, SenderTspec};
use super::objects::{
    ErrorSpec, FilterSpec, Opaque, ResvConfirm, RsvpHop, Scope, Session, Style, TimeValues,
};

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
    /// Any other value.
    Unknown(u8),
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

/// A sender descriptor: SENDER_TEMPLATE, SENDER_TSPEC and optional ADSPEC (RFC 2205 §3.1.3).
#[derive(Clone, Debug, PartialEq)]
pub struct SenderDescriptor {
    /// Which sender.
    pub template: FilterSpec,
    /// Its traffic.
    pub tspec: SenderTspec,
    /// The path's characteristics accumulated so far.
    pub adspec: Option<Adspec>,
}

/// One flow descriptor of a Resv-family message (RFC 2205 §3.1.4).
///
/// The style decides the shape: WF has one descriptor and no filter specs; SE one descriptor with
/// one or more filter specs; FF one descriptor per filter spec (a FLOWSPEC omitted on the wire is
/// filled in from the previous descriptor when parsing a Resv). `flowspec` is `None` only in
/// ResvTear, where RFC 2205 §3.1.7 allows it to be omitted.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowDescriptor {
    /// The reservation.
    pub flowspec: Option<FlowSpec>,
    /// The senders it applies to.
    pub filters: Vec<FilterSpec>,
}

/// Path (RFC 2205 §3.1.3).
#[derive(Clone, Debug, PartialEq)]
pub struct Path {
    /// INTEGRITY, carried opaquely.
    pub integrity: Option<Opaque>,
    /// SESSION.
    pub session: Session,
    /// RSVP_HOP: the previous hop.
    pub hop: RsvpHop,
    /// TIME_VALUES.
    pub time_values: TimeValues,
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
    /// INTEGRITY, carried opaquely.
    pub integrity: Option<Opaque>,
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
    pub flows: Vec<FlowDescriptor>,
    /// Unknown objects of class 11bbbbbb.
    pub forward: Vec<Opaque>,
}

/// PathTear (RFC 2205 §3.1.5). Tspec and Adspec of the sender descriptor are ignored and may be
/// absent.
#[derive(Clone, Debug, PartialEq)]
pub struct PathTear {
    /// INTEGRITY, carried opaquely.
    pub integrity: Option<Opaque>,
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
    /// INTEGRITY, carried opaquely.
    pub integrity: Option<Opaque>,
    /// SESSION.
    pub session: Session,
    /// RSVP_HOP: the next hop.
    pub hop: RsvpHop,
    /// SCOPE.
    pub scope: Option<Scope>,
    /// STYLE.
    pub style: Style,
    /// Flow descriptors (flowspecs may be absent).
    pub flows: Vec<FlowDescriptor>,
    /// Unknown objects of class 11bbbbbb.
    pub forward: Vec<Opaque>,
}

/// PathErr (RFC 2205 §3.1.7).
#[derive(Clone, Debug, PartialEq)]
pub struct PathErr {
    /// INTEGRITY, carried opaquely.
    pub integrity: Option<Opaque>,
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
    /// INTEGRITY, carried opaquely.
    pub integrity: Option<Opaque>,
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
    pub flows: Vec<FlowDescriptor>,
    /// Unknown objects of class 11bbbbbb.
    pub forward: Vec<Opaque>,
}

/// ResvConf (RFC 2205 §3.1.9).
#[derive(Clone, Debug, PartialEq)]
pub struct ResvConf {
    /// INTEGRITY, carried opaquely.
    pub integrity: Option<Opaque>,
    /// SESSION.
    pub session: Session,
    /// ERROR_SPEC (code 0: confirmation), naming the node that confirmed.
    pub error: ErrorSpec,
    /// RESV_CONFIRM: the receiver the confirmation is for.
    pub confirm: ResvConfirm,
    /// STYLE.
    pub style: Style,
    /// The flow descriptors that were confirmed.
    pub flows: Vec<FlowDescriptor>,
    /// Unknown objects of class 11bbbbbb.
    pub forward: Vec<Opaque>,
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
}
