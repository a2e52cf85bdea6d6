//! RSVP objects other than the IntServ ones (RFC 2205 §A).
//!
//! TYPES ARE FIXED (the engine uses them); codec to be implemented: per object `parse(ctype, body)`
//! and `emit(&self, w)` plus `buffer_len()`, each citing its RFC 2205 §A.x figure.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Class numbers (RFC 2205 §A).
pub mod class {
    /// NULL (§A.0), ignored on receipt.
    pub const NULL: u8 = 0;
    /// SESSION (§A.1).
    pub const SESSION: u8 = 1;
    /// RSVP_HOP (§A.2).
    pub const RSVP_HOP: u8 = 3;
    /// INTEGRITY (§A.3, RFC 2747).
    pub const INTEGRITY: u8 = 4;
    /// TIME_VALUES (§A.4).
    pub const TIME_VALUES: u8 = 5;
    /// ERROR_SPEC (§A.5).
    pub const ERROR_SPEC: u8 = 6;
    /// SCOPE (§A.6).
    pub const SCOPE: u8 = 7;
    /// STYLE (§A.7).
    pub const STYLE: u8 = 8;
    /// FLOWSPEC (§A.8).
    pub const FLOWSPEC: u8 = 9;
    /// FILTER_SPEC (§A.9).
    pub const FILTER_SPEC: u8 = 10;
    /// SENDER_TEMPLATE (§A.10).
    pub const SENDER_TEMPLATE: u8 = 11;
    /// SENDER_TSPEC (§A.11).
    pub const SENDER_TSPEC: u8 = 12;
    /// ADSPEC (§A.12).
    pub const ADSPEC: u8 = 13;
    /// POLICY_DATA (§A.13).
    pub const POLICY_DATA: u8 = 14;
    /// RESV_CONFIRM (§A.14).
    pub const RESV_CONFIRM: u8 = 15;
}

/// SESSION (§A.1): IPv4 (C-Type 1) or IPv6 (C-Type 2) by the address family of `dest`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Session {
    /// DestAddress: unicast or multicast destination of the data flow.
    pub dest: IpAddr,
    /// Protocol Id of the data flow (e.g. 17 for UDP).
    pub protocol_id: u8,
    /// Flags; 0x01 is E_Police.
    pub flags: u8,
    /// DstPort (0 if the protocol has no ports).
    pub dst_port: u16,
}

/// RSVP_HOP (§A.2): the address of the node that sent the message, and its logical interface
/// handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RsvpHop {
    /// Previous/next hop address.
    pub addr: IpAddr,
    /// Logical Interface Handle.
    pub lih: u32,
}

/// TIME_VALUES (§A.4): the sender's refresh period R.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimeValues {
    /// Refresh period in milliseconds.
    pub refresh_ms: u32,
}

/// ERROR_SPEC (§A.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ErrorSpec {
    /// Error node address.
    pub node: IpAddr,
    /// Flags: 0x01 InPlace, 0x02 NotGuilty.
    pub flags: u8,
    /// Error code (RFC 2205 App. B).
    pub code: u8,
    /// Error value.
    pub value: u16,
}

/// SCOPE (§A.6): a list of sender addresses, all of one family.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Scope {
    /// Sender host addresses.
    pub addrs: Vec<IpAddr>,
}

/// The reservation style named by a STYLE object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StyleKind {
    /// Wildcard-Filter (option vector 10001b).
    Wf,
    /// Fixed-Filter (01010b).
    Ff,
    /// Shared-Explicit (10010b).
    Se,
    /// Any other option vector (answered with "Unknown reservation style").
    Other(u32),
}

/// STYLE (§A.7, C-Type 1): 8 bits of flags and a 24-bit option vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Style {
    /// Flags (none defined).
    pub flags: u8,
    /// The style named by the option vector.
    pub kind: StyleKind,
}

/// FILTER_SPEC (§A.9) and SENDER_TEMPLATE (§A.10), which share their formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FilterSpec {
    /// IPv4 (C-Type 1): source address and port.
    V4 {
        /// SrcAddress.
        src: Ipv4Addr,
        /// SrcPort (0 for none).
        src_port: u16,
    },
    /// IPv6 (C-Type 2): source address and port.
    V6 {
        /// SrcAddress.
        src: Ipv6Addr,
        /// SrcPort (0 for none).
        src_port: u16,
    },
    /// IPv6 flow label (C-Type 3).
    V6FlowLabel {
        /// SrcAddress.
        src: Ipv6Addr,
        /// 20-bit flow label.
        flow_label: u32,
    },
}

impl FilterSpec {
    /// The sender's address.
    pub fn src(&self) -> IpAddr {
        match *self {
            FilterSpec::V4 { src, .. } => IpAddr::V4(src),
            FilterSpec::V6 { src, .. } | FilterSpec::V6FlowLabel { src, .. } => IpAddr::V6(src),
        }
    }
}

/// RESV_CONFIRM (§A.14): where to send the ResvConf.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ResvConfirm {
    /// Receiver address.
    pub receiver: IpAddr,
}

/// An object carried without being interpreted: POLICY_DATA, INTEGRITY (until its own issue),
/// and unknown objects of class 11bbbbbb that RFC 2205 §3.10 says to forward unexamined.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Opaque {
    /// Class-Num.
    pub class: u8,
    /// C-Type.
    pub ctype: u8,
    /// The body (after the 4-byte object header), a multiple of 4 bytes.
    pub body: Vec<u8>,
}
