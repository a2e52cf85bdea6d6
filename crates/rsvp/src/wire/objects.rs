//! RSVP objects other than the IntServ ones (RFC 2205 §3.1.2, §A), with the RSVP-TE forms of
//! SESSION, SENDER_TEMPLATE and FILTER_SPEC (LSP_TUNNEL_IPv4/IPv6, RFC 3209 §4.6). The other
//! RSVP-TE objects are in [`te`](super::te).
//!
//! Every object has the same codec surface:
//!
//! - `parse(ctype, body)`: the body after the 4-byte object header (which [`ObjectHeader`] reads),
//!   checked against the format its C-Type names; a known class with an unknown C-Type is
//!   [`ParseErrorKind::UnknownCType`](super::ParseErrorKind::UnknownCType) (RFC 2205 §3.10), a body
//!   of the wrong size [`ParseErrorKind::BadObject`](super::ParseErrorKind::BadObject);
//! - `ctype()`: the C-Type the value is emitted with (the address family picks it: IPv4 → 1,
//!   IPv6 → 2; for the RSVP-TE LSP_TUNNEL forms of SESSION, SENDER_TEMPLATE and FILTER_SPEC,
//!   IPv4 → 7, IPv6 → 8);
//! - `emit(&self, w)`: the whole object, header included; `buffer_len()`: its length in bytes.
//!
//! Reserved fields are ignored on receipt and written as zero.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

mod error_spec;
mod filter_spec;
mod header;
pub mod if_id;
pub mod integrity;
mod session;

pub use header::ObjectHeader;
pub use if_id::IfIdTlv;

/// C-Type numbers shared by several classes (RFC 2205 §A).
pub mod ctype {
    /// The IPv4 form of SESSION, RSVP_HOP, ERROR_SPEC, SCOPE, FILTER_SPEC, SENDER_TEMPLATE and
    /// RESV_CONFIRM; the only form of TIME_VALUES, STYLE, INTEGRITY and POLICY_DATA.
    pub const IPV4: u8 = 1;
    /// The IPv6 form of the address-carrying classes.
    pub const IPV6: u8 = 2;
    /// FILTER_SPEC and SENDER_TEMPLATE keyed by IPv6 flow label (§A.9).
    pub const IPV6_FLOW_LABEL: u8 = 3;
    /// IPv4 IF_ID RSVP_HOP (RFC 3473 §8.1.1).
    pub const IF_ID_IPV4: u8 = 3;
    /// IPv6 IF_ID RSVP_HOP (RFC 3473 §8.1.1).
    pub const IF_ID_IPV6: u8 = 4;
    /// The single C-Type of TIME_VALUES (§A.4) and STYLE (§A.7).
    pub const DEFAULT: u8 = 1;
    /// Integrated Services FLOWSPEC, SENDER_TSPEC and ADSPEC (§A.8, §A.11, §A.12; RFC 2210).
    pub const INTSERV: u8 = 2;
    /// INTEGRITY (RFC 2747 §4.1) and Type 1 POLICY_DATA (RFC 2750 §3).
    pub const TYPE_1: u8 = 1;
}

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
    /// CHALLENGE (RFC 2747 §2.2), in Integrity Challenge and Integrity Response messages.
    pub const CHALLENGE: u8 = 64;
}

/// SESSION (§A.1; RFC 3209 §4.6.1): what a reservation is for.
///
/// Two kinds share the type, told apart by `extended_tunnel_id`:
///
/// - `None`: the RFC 2205 IP session, IPv4/UDP (C-Type 1) or IPv6/UDP (C-Type 2) by the family
///   of `dest`;
/// - `Some(id)`: an RSVP-TE LSP tunnel, LSP_TUNNEL_IPv4 (C-Type 7) or LSP_TUNNEL_IPv6 (C-Type 8)
///   by the family of `dest`, the tunnel end point. Its 16-bit Tunnel ID travels in `dst_port`,
///   and `protocol_id` and `flags` have no place on the wire (a "MUST be zero" field takes
///   theirs): they are 0 when parsed and not written.
///
/// Build them with [`Session::ip`] and [`Session::lsp_tunnel`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Session {
    /// DestAddress: unicast or multicast destination of the data flow; in an LSP tunnel, the
    /// tunnel end point address (the egress node).
    pub dest: IpAddr,
    /// Protocol Id of the data flow (e.g. 17 for UDP); 0 in an LSP tunnel (not on the wire).
    pub protocol_id: u8,
    /// Flags; 0x01 is E_Police. 0 in an LSP tunnel (not on the wire).
    pub flags: u8,
    /// DstPort (0 if the protocol has no ports); in an LSP tunnel, the Tunnel ID, which stays
    /// the same over the tunnel's life.
    pub dst_port: u16,
    /// `None` for an IP session; for an LSP tunnel, the Extended Tunnel ID (RFC 3209
    /// §4.6.1.1): normally zero, or the ingress's address to narrow the session to the
    /// ingress–egress pair. 4 bytes in the IPv4 form, 16 in the IPv6 form: a value of the
    /// other family than `dest` is written in `dest`'s, an IPv4 value in an IPv6 session as the
    /// IPv4-mapped address `::ffff:a.b.c.d`, an IPv6 value in an IPv4 session as its last four
    /// bytes.
    pub extended_tunnel_id: Option<IpAddr>,
}

impl Session {
    /// Flag E_Police (§A.1): police the flow at the first hop where it enters the network.
    pub const E_POLICE: u8 = 0x01;

    /// What identifies the session: the object with its Flags cleared. RFC 2205 §3.2 defines a
    /// session by "the triple: (DestAddress, ProtocolId, DstPort)" (§A.1, and RFC 3209 §4.6.1
    /// adds the Extended Tunnel ID); the Flags byte only carries E_Police, which "the first node
    /// whose RSVP is capable of traffic policing will ... turn ... off" on the way (§A.1), so
    /// the same session arrives with different flags at different hops and over time.
    pub fn identity(&self) -> Session {
        Session { flags: 0, ..*self }
    }

    /// An RFC 2205 IP session (flags 0): the data flow to `dest` of protocol `protocol_id`,
    /// to port `dst_port` (0 if the protocol has none).
    pub fn ip(dest: IpAddr, protocol_id: u8, dst_port: u16) -> Self {
        Session {
            dest,
            protocol_id,
            flags: 0,
            dst_port,
            extended_tunnel_id: None,
        }
    }

    /// An LSP_TUNNEL session (RFC 3209 §4.6.1) to the tunnel end point `end_point`.
    pub fn lsp_tunnel(end_point: IpAddr, tunnel_id: u16, extended_tunnel_id: IpAddr) -> Self {
        Session {
            dest: end_point,
            protocol_id: 0,
            flags: 0,
            dst_port: tunnel_id,
            extended_tunnel_id: Some(extended_tunnel_id),
        }
    }

    /// Whether this is an LSP_TUNNEL session (RFC 3209) rather than an IP one.
    pub fn is_lsp_tunnel(&self) -> bool {
        self.extended_tunnel_id.is_some()
    }
}

/// RSVP_HOP (§A.2): the address of the node that sent the message, and its logical interface
/// handle; in its IF_ID form (RFC 3473 §8.1.1, C-Types 3 and 4), also the Interface_ID TLVs
/// naming the data channel(s) when control and data channels are not one to one.
///
/// The hop address and LIH are used as in RFC 2205 whatever the form (RFC 3473 §8.1.2), so the
/// hop's identity is `(addr, lih)`: [`RsvpHop::plain`] drops the TLVs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RsvpHop {
    /// Previous/next hop address.
    pub addr: IpAddr,
    /// Logical Interface Handle.
    pub lih: u32,
    /// `None`: the RFC 2205 form (C-Type 1 or 2). `Some`: the IF_ID form (C-Type 3 or 4, by the
    /// family of `addr`) with its TLVs, in wire order (possibly none). Behind one thin pointer,
    /// so the hop (and every message and parse error naming one) grows by a pointer only, and
    /// a node keeping the TLVs to return them (RFC 3473 §8.1.2) shares them.
    pub if_id: Option<Arc<Vec<IfIdTlv>>>,
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

impl ErrorSpec {
    /// Flag InPlace (§A.5): the reservation in error is still in place at the failure point.
    pub const IN_PLACE: u8 = 0x01;
    /// Flag NotGuilty (§A.5): the flowspec that failed was not the one the receiver asked for.
    pub const NOT_GUILTY: u8 = 0x02;
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

/// FILTER_SPEC (§A.9) and SENDER_TEMPLATE (§A.10), which share their formats; the LSP_TUNNEL
/// forms name the sender of an RSVP-TE LSP tunnel (RFC 3209 §4.6.2, §4.6.3) and go with an
/// LSP_TUNNEL [`Session`], the others with an IP one.
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
    /// LSP_TUNNEL_IPv4 (C-Type 7, RFC 3209 §4.6.2.1): the tunnel's ingress and LSP ID.
    LspTunnelV4 {
        /// Tunnel sender address.
        src: Ipv4Addr,
        /// LSP ID, which the ingress changes to share resources with itself
        /// (make-before-break, RFC 3209 §4.6.4).
        lsp_id: u16,
    },
    /// LSP_TUNNEL_IPv6 (C-Type 8, RFC 3209 §4.6.2.2).
    LspTunnelV6 {
        /// Tunnel sender address.
        src: Ipv6Addr,
        /// LSP ID.
        lsp_id: u16,
    },
}

impl FilterSpec {
    /// The FILTER_SPEC (or SENDER_TEMPLATE) of the sender at `addr`, source port `port`
    /// (RFC 2205 §A.9, C-Type 1 or 2 by the address family).
    pub fn ip(addr: IpAddr, port: u16) -> Self {
        match addr {
            IpAddr::V4(src) => FilterSpec::V4 {
                src,
                src_port: port,
            },
            IpAddr::V6(src) => FilterSpec::V6 {
                src,
                src_port: port,
            },
        }
    }

    /// The sender's address.
    pub fn src(&self) -> IpAddr {
        match *self {
            FilterSpec::V4 { src, .. } | FilterSpec::LspTunnelV4 { src, .. } => IpAddr::V4(src),
            FilterSpec::V6 { src, .. }
            | FilterSpec::V6FlowLabel { src, .. }
            | FilterSpec::LspTunnelV6 { src, .. } => IpAddr::V6(src),
        }
    }

    /// Whether this names the sender of an LSP tunnel (C-Type 7 or 8).
    pub fn is_lsp_tunnel(&self) -> bool {
        matches!(
            self,
            FilterSpec::LspTunnelV4 { .. } | FilterSpec::LspTunnelV6 { .. }
        )
    }
}

/// RESV_CONFIRM (§A.14): where to send the ResvConf.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ResvConfirm {
    /// Receiver address.
    pub receiver: IpAddr,
}

/// INTEGRITY (RFC 2747 §2.1): hop-by-hop authentication of the message it leads. The engine
/// signs and verifies through [`crate::wire::integrity`]; this is the parsed form.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Integrity {
    /// Flags; 0x01 is the handshake flag (the sender answers Integrity Challenges).
    pub flags: u8,
    /// 48-bit key identifier (unique per sender).
    pub key_id: u64,
    /// 64-bit sequence number, strictly increasing per key.
    pub seq: u64,
    /// Keyed message digest, a multiple of 4 bytes (16 for HMAC-MD5).
    pub digest: Vec<u8>,
}

impl Integrity {
    /// The handshake flag (RFC 2747 §2.1).
    pub const HANDSHAKE: u8 = 0x01;
}

/// CHALLENGE (RFC 2747 §2.2): which key a receiver wants a sender to prove, and the cookie it
/// must echo.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Challenge {
    /// 48-bit key identifier the challenged sender signs the response with.
    pub key_id: u64,
    /// Challenge cookie, echoed in the Integrity Response.
    pub cookie: u64,
}

/// An object carried without being interpreted: POLICY_DATA and unknown objects of class 11bbbbbb that RFC 2205 §3.10 says to forward unexamined.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Opaque {
    /// Class-Num.
    pub class: u8,
    /// C-Type.
    pub ctype: u8,
    /// The body (after the 4-byte object header), a multiple of 4 bytes.
    pub body: Vec<u8>,
}

/// The C-Type that names `addr`'s family in the address-carrying classes.
fn family_ctype(addr: IpAddr) -> u8 {
    match addr {
        IpAddr::V4(_) => ctype::IPV4,
        IpAddr::V6(_) => ctype::IPV6,
    }
}

/// Bytes of `addr` on the wire.
fn addr_len(addr: IpAddr) -> usize {
    match addr {
        IpAddr::V4(_) => 4,
        IpAddr::V6(_) => 16,
    }
}

/// Check that an address-carrying object body has the size its C-Type names: `v4_len` bytes for
/// C-Type 1, `v4_len + 12` for C-Type 2 (the address grows from 4 to 16 bytes).
fn check_family_body(
    class: u8,
    ctype: u8,
    body: &[u8],
    v4_len: usize,
) -> Result<(), crate::wire::ParseErrorKind> {
    let want = match ctype {
        ctype::IPV4 => v4_len,
        ctype::IPV6 => v4_len + 12,
        _ => return Err(crate::wire::ParseErrorKind::unknown_ctype(class, ctype)),
    };
    if body.len() == want {
        Ok(())
    } else {
        Err(crate::wire::ParseErrorKind::bad_object(class, ctype))
    }
}

/// Read the address of the family C-Type `ctype` names (1: IPv4, otherwise IPv6); the caller has
/// checked the body length.
fn read_addr(
    r: &mut pathwise_core::wire::Reader<'_>,
    ctype: u8,
) -> Result<IpAddr, crate::wire::ParseErrorKind> {
    Ok(if ctype == ctype::IPV4 {
        IpAddr::V4(r.ipv4()?)
    } else {
        IpAddr::V6(r.ipv6()?)
    })
}
