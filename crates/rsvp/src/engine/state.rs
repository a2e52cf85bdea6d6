//! RSVP state blocks (seed 001 §III.A, Fig. 1; RFC 2209 §1).
//!
//! - [`SessionState`] owns everything of one session (the synchronisation point per session).
//! - [`Psb`] (Path State Block): one sender's Path state.
//! - [`PhopSb`] (Previous Hop State Block): the neighbour a Path came from, shared by its PSBs.
//! - [`Rsb`] (Reservation State Block): one downstream request.
//! - [`OutIsb`] (Outgoing Interface State Block): a reservation installed on one interface.
//! - [`OiatPsb`] (Outgoing Interface at PSB): the N:M relation between OutISBs and the PSBs they
//!   serve, kept as two 1:N relations (each side lists its OIatPSBs).
//!
//! Blocks live in slabs and refer to each other by index; a block is always removed from every
//! list that names it, and its timers cancelled, before its slot is freed.

use crate::wire::{
    Adspec, FilterSpec, FlowSpec, Opaque, ResvConfirm, RsvpHop, Scope, SenderTspec, Session,
    StyleKind,
};
use pathwise_core::io::IfIndex;
use pathwise_core::timer::TimerHandle;
use smallvec::SmallVec;

/// Index of a [`SessionState`].
pub type SessionId = usize;
/// Index of a [`Psb`].
pub type PsbId = usize;
/// Index of a [`PhopSb`].
pub type PhopId = usize;
/// Index of an [`Rsb`].
pub type RsbId = usize;
/// Index of an [`OutIsb`].
pub type OutIsbId = usize;
/// Index of an [`OiatPsb`].
pub type OiatId = usize;

/// Where a sender's data leaves this node: an outgoing interface, or `None` for delivery to a
/// local receiver application.
pub type Oi = Option<IfIndex>;

/// All state of one session.
#[derive(Debug)]
pub struct SessionState {
    /// The SESSION object.
    pub key: Session,
    /// Path state, one per sender (and previous hop).
    pub psbs: SmallVec<[PsbId; 1]>,
    /// Reservation requests from downstream.
    pub rsbs: SmallVec<[RsbId; 1]>,
    /// Reservations installed on outgoing interfaces.
    pub out_isbs: SmallVec<[OutIsbId; 1]>,
    /// The reservation last sent to each previous hop, to send only changes and tear what goes.
    pub upstream: Vec<Upstream>,
    /// Refresh timer (Path and Resv refreshes of this session).
    pub refresh: Option<TimerHandle>,
    /// Pending local-repair timer (RFC 2205 §3.6).
    pub repair: Option<TimerHandle>,
}

/// What this node last asked of one previous hop.
#[derive(Debug, Clone, PartialEq)]
pub struct Upstream {
    /// The previous hop.
    pub phop: PhopId,
    /// The style of the request.
    pub style: StyleKind,
    /// The merged flow descriptors sent.
    pub flows: Vec<crate::wire::FlowDescriptor>,
}

/// Path State Block: one sender of a session as announced by its previous hop.
#[derive(Debug)]
pub struct Psb {
    /// Owning session.
    pub session: SessionId,
    /// SENDER_TEMPLATE.
    pub sender: FilterSpec,
    /// SENDER_TSPEC.
    pub tspec: SenderTspec,
    /// ADSPEC as received (composed with each outgoing link when forwarded).
    pub adspec: Option<Box<Adspec>>,
    /// Previous hop; `None` for a sender registered locally through the API.
    pub phop: Option<PhopId>,
    /// Incoming interface; `None` for a local sender.
    pub iif: Option<IfIndex>,
    /// Where the sender's data goes from here (route lookup result).
    pub oifs: SmallVec<[Oi; 1]>,
    /// POLICY_DATA and unknown-but-forwarded objects, passed on downstream.
    pub carried: Vec<Opaque>,
    /// Refresh period R of the previous hop, milliseconds.
    pub refresh_ms: u32,
    /// IP TTL to forward Path with (received TTL − 1).
    pub ttl: u8,
    /// A non-RSVP hop lies between the previous hop and us (IP TTL ≠ Send_TTL, RFC 2205 §3.8).
    pub non_rsvp: bool,
    /// State lifetime timer; `None` for local senders, which live until the API removes them.
    pub cleanup: Option<TimerHandle>,
    /// OIatPSB relations to the reservations serving this sender.
    pub oiat: SmallVec<[OiatId; 1]>,
}

/// Previous Hop State Block: a neighbour Paths come from.
#[derive(Debug)]
pub struct PhopSb {
    /// The neighbour's RSVP_HOP (address and the LIH it gave us).
    pub hop: RsvpHop,
    /// Our interface towards it.
    pub ifindex: IfIndex,
    /// Number of PSBs naming it.
    pub refs: u32,
}

/// Reservation State Block: one reservation request received from a next hop (or a local
/// receiver) for one outgoing interface.
#[derive(Debug)]
pub struct Rsb {
    /// Owning session.
    pub session: SessionId,
    /// The next hop that sent it; `None` for a local receiver.
    pub nhop: Option<RsvpHop>,
    /// The outgoing interface it reserves on (`None`: local delivery).
    pub oi: Oi,
    /// Reservation style.
    pub style: StyleKind,
    /// Requested flowspec.
    pub flowspec: FlowSpec,
    /// Senders it applies to: one for FF, one or more for SE, none (all) for WF.
    pub filters: SmallVec<[FilterSpec; 1]>,
    /// SCOPE (WF).
    pub scope: Option<Box<Scope>>,
    /// A confirmation requested and not yet answered.
    pub confirm: Option<ResvConfirm>,
    /// POLICY_DATA and unknown-but-forwarded objects.
    pub carried: Vec<Opaque>,
    /// State lifetime timer; `None` for local receivers.
    pub cleanup: Option<TimerHandle>,
}

impl Rsb {
    /// Whether this request applies to `sender` (style semantics, RFC 2205 §1.3).
    pub fn covers(&self, sender: &FilterSpec) -> bool {
        match self.style {
            StyleKind::Wf => self
                .scope
                .as_ref()
                .is_none_or(|s| s.addrs.contains(&sender.src())),
            _ => self.filters.iter().any(|f| filter_matches(f, sender)),
        }
    }
}

/// Whether a FILTER_SPEC selects the sender named by a SENDER_TEMPLATE. A port or flow label of
/// zero in the filter is a wildcard (RFC 2205 §A.9).
pub fn filter_matches(filter: &FilterSpec, sender: &FilterSpec) -> bool {
    match (filter, sender) {
        (
            FilterSpec::V4 {
                src: a,
                src_port: p,
            },
            FilterSpec::V4 {
                src: b,
                src_port: q,
            },
        ) => a == b && (*p == 0 || p == q),
        (
            FilterSpec::V6 {
                src: a,
                src_port: p,
            },
            FilterSpec::V6 {
                src: b,
                src_port: q,
            },
        ) => a == b && (*p == 0 || p == q),
        (
            FilterSpec::V6FlowLabel {
                src: a,
                flow_label: l,
            },
            FilterSpec::V6FlowLabel {
                src: b,
                flow_label: m,
            },
        ) => a == b && (*l == 0 || l == m),
        _ => false,
    }
}

/// Outgoing Interface State Block: one reservation installed on one interface.
#[derive(Debug)]
pub struct OutIsb {
    /// Owning session.
    pub session: SessionId,
    /// The interface.
    pub ifindex: IfIndex,
    /// For FF, the one sender it is for; `None` for a shared (WF/SE) reservation.
    pub ff_sender: Option<FilterSpec>,
    /// The merged flowspec installed.
    pub flowspec: FlowSpec,
    /// Traffic control's handle.
    pub tc: crate::engine::tc::TcHandle,
    /// OIatPSB relations to the senders it serves.
    pub oiat: SmallVec<[OiatId; 1]>,
}

/// Outgoing Interface at PSB: "this reservation serves this sender".
#[derive(Debug, Clone, Copy)]
pub struct OiatPsb {
    /// The reservation.
    pub out_isb: OutIsbId,
    /// The sender's path state.
    pub psb: PsbId,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn zero_port_filter_is_wildcard() {
        let s = FilterSpec::V4 {
            src: Ipv4Addr::new(10, 0, 0, 1),
            src_port: 5000,
        };
        assert!(filter_matches(
            &FilterSpec::V4 {
                src: Ipv4Addr::new(10, 0, 0, 1),
                src_port: 0
            },
            &s
        ));
        assert!(filter_matches(&s, &s));
        assert!(!filter_matches(
            &FilterSpec::V4 {
                src: Ipv4Addr::new(10, 0, 0, 1),
                src_port: 1
            },
            &s
        ));
        assert!(!filter_matches(
            &FilterSpec::V4 {
                src: Ipv4Addr::new(10, 0, 0, 2),
                src_port: 0
            },
            &s
        ));
    }

    #[test]
    fn state_blocks_stay_small() {
        // Bytes per session is a published figure; these guard against accidental growth.
        assert!(
            std::mem::size_of::<Psb>() <= 192,
            "Psb is {}",
            std::mem::size_of::<Psb>()
        );
        assert!(
            std::mem::size_of::<Rsb>() <= 160,
            "Rsb is {}",
            std::mem::size_of::<Rsb>()
        );
    }
}
