//! RSVP state blocks (seed 001 §III.A, Fig. 1; RFC 2209 §1).
//!
//! - [`SessionState`] owns everything of one session (the synchronisation point per session).
//! - [`Psb`] (Path State Block): one sender's Path state.
//! - [`PhopSb`] (Previous Hop State Block): the neighbour a Path came from, shared by its PSBs.
//! - [`Rsb`] (Reservation State Block): one downstream request.
//! - [`OutIsb`] (Outgoing Interface State Block): a reservation installed on one interface.
//! - [`OiatPsb`] (Outgoing Interface at PSB): the N:M relation between OutISBs and the PSBs they
//!   serve, kept as two 1:N relations — each OIatPSB is on its PSB's list and its OutISB's list.
//!
//! Blocks live in typed arenas and refer to each other by 4-byte ids; a session's blocks are
//! chained through intrusive lists (`engine::list`, private); values many blocks share (ADSPECs,
//! flowspecs, next hops) are interned ([`super::intern`]). A block is taken off every list that
//! names it, and its shared values released, before it is freed.

use super::intern::{Encode, Interned};
use crate::few::Few;
use crate::wire::{
    Adspec, FilterSpec, FilterTe, FlowDescriptor, FlowSpec, Opaque, ResvConfirm, RsvpHop, Scope,
    SenderTspec, Session, StyleKind,
};
use pathwise_core::arena::Id;
use pathwise_core::io::IfIndex;
use pathwise_core::time::Instant;
use pathwise_core::timer::TimerHandle;
use pathwise_core::wire::Writer;
use std::net::IpAddr;

/// Id of a [`SessionState`].
pub type SessionId = Id<SessionState>;
/// Id of a [`Psb`].
pub type PsbId = Id<Psb>;
/// Id of a [`PhopSb`].
pub type PhopId = Id<PhopSb>;
/// Id of an [`Rsb`].
pub type RsbId = Id<Rsb>;
/// Id of an [`OutIsb`].
pub type OutIsbId = Id<OutIsb>;
/// Id of an [`OiatPsb`].
pub type OiatId = Id<OiatPsb>;
/// An interned ADSPEC.
pub type AdspecRef = Interned<Adspec>;
/// An interned flowspec.
pub type FlowSpecRef = Interned<FlowSpec>;
/// An interned RSVP_HOP (a next hop).
pub type HopRef = Interned<RsvpHop>;
/// An interned SENDER_TSPEC: senders of one application announce the same few.
pub type TspecRef = Interned<SenderTspec>;

/// Where a sender's data leaves this node: an outgoing interface, or `None` for delivery to a
/// local receiver application.
pub type Oi = Option<IfIndex>;

/// A PSB's outgoing interfaces: one but for multicast.
pub type Oifs = crate::few::Few<Oi>;

/// Objects carried without being interpreted (POLICY_DATA, unknown class 11bbbbbb); almost
/// always none, so one pointer.
pub type Carried = Option<Box<Vec<Opaque>>>;

/// `Carried` from a list of objects.
pub fn carried(v: Vec<Opaque>) -> Carried {
    (!v.is_empty()).then(|| Box::new(v))
}

/// The objects of a `Carried`.
pub fn carried_slice(c: &Carried) -> &[Opaque] {
    c.as_deref().map_or(&[], Vec::as_slice)
}

/// Where a session goes: its SESSION's DestAddress (an LSP tunnel's end point) and, for an
/// LSP tunnel, its Extended Tunnel ID (RFC 2205 §A.1, RFC 3209 §4.6.1). Interned
/// ([`SessionDestRef`]): the sessions to one host share it, as do the LSPs of one ingress to
/// one end point, and every session holds four bytes where the address inline took 17 and the
/// Extended Tunnel ID a reference of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionDest {
    /// DestAddress, or an LSP tunnel's end point address.
    pub addr: IpAddr,
    /// An LSP tunnel's Extended Tunnel ID; `None` for an IP session.
    pub ext_tunnel_id: Option<IpAddr>,
}

/// An interned [`SessionDest`].
pub type SessionDestRef = Interned<SessionDest>;

/// All state of one session.
#[derive(Debug)]
pub struct SessionState {
    /// The SESSION object, its destination interned
    /// ([`RsvpEngine::session_key`](super::RsvpEngine::session_key) puts it together).
    pub key: SessionKey,
    /// Style of the requests this node last sent upstream (for their teardown).
    pub upstream_style: Option<SentStyle>,
    /// Path state, one per sender.
    pub psbs: Option<PsbId>,
    /// Reservation requests from downstream.
    pub rsbs: Option<RsbId>,
    /// Reservations installed on outgoing interfaces.
    pub out_isbs: Option<OutIsbId>,
    /// The session's one timer. State lifetimes, refresh and local repair share it; it is due
    /// at the earliest of them and moved only when something falls due earlier (a refresh that
    /// extends a lifetime touches no timer).
    pub timer: Option<TimerHandle>,
    /// When Path and Resv state is next refreshed (RFC 2205 §3.7). When local repair is due
    /// after a route change is kept beside the sessions (`RsvpEngine::repairs`): it is rare.
    pub refresh_at: Instant,
}

/// The fields of a SESSION object (RFC 2205 §A.1, RFC 3209 §4.6.1) as every session holds
/// them: the destination and Extended Tunnel ID interned, the rest inline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionKey {
    /// DestAddress (an LSP tunnel's end point) and Extended Tunnel ID.
    pub dest: SessionDestRef,
    /// Protocol Id (0 in an LSP tunnel).
    pub protocol_id: u8,
    /// Flags: E_Police, as the latest Path carried them.
    pub flags: u8,
    /// DstPort, or an LSP tunnel's Tunnel ID.
    pub dst_port: u16,
}

impl SessionKey {
    /// The SESSION object, given the destination `dest` names.
    pub fn session(self, dest: &SessionDest) -> Session {
        Session {
            dest: dest.addr,
            protocol_id: self.protocol_id,
            flags: self.flags,
            dst_port: self.dst_port,
            extended_tunnel_id: dest.ext_tunnel_id,
        }
    }
}

/// The style of requests sent upstream: WF, FF or SE, the only styles that make state (any
/// other is refused with "Unknown reservation style", RFC 2205 Appendix B error code 06). One byte
/// where [`StyleKind`] takes eight, in every session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SentStyle {
    /// Wildcard-Filter.
    Wf,
    /// Fixed-Filter.
    Ff,
    /// Shared-Explicit.
    Se,
}

impl SentStyle {
    /// The held form of a style; `None` for one that makes no state.
    pub fn of(kind: StyleKind) -> Option<Self> {
        match kind {
            StyleKind::Wf => Some(SentStyle::Wf),
            StyleKind::Ff => Some(SentStyle::Ff),
            StyleKind::Se => Some(SentStyle::Se),
            StyleKind::Other(_) => None,
        }
    }

    /// The style.
    pub fn kind(self) -> StyleKind {
        match self {
            SentStyle::Wf => StyleKind::Wf,
            SentStyle::Ff => StyleKind::Ff,
            SentStyle::Se => StyleKind::Se,
        }
    }
}

/// Path State Block: one sender of a session as announced by its previous hop.
#[derive(Debug)]
pub struct Psb {
    /// Owning session.
    pub session: SessionId,
    /// Next PSB of the session.
    pub next: Option<PsbId>,
    /// SENDER_TEMPLATE.
    pub sender: FilterSpec,
    /// SENDER_TSPEC (interned: [`RsvpEngine::tspec`](super::RsvpEngine::tspec)).
    pub tspec: TspecRef,
    /// ADSPEC as received (composed with each outgoing link when forwarded).
    pub adspec: Option<AdspecRef>,
    /// Previous hop and incoming interface ([`Psb::phop`], [`Psb::iif`]); `None` for a sender
    /// registered locally through the API.
    pub upstream: Option<Upstream>,
    /// Where the sender's data goes from here (route lookup result).
    pub oifs: Oifs,
    /// IP TTL to forward Path with (received TTL − 1).
    pub ttl: u8,
    /// A non-RSVP hop lies between the previous hop and us (IP TTL ≠ Send_TTL, RFC 2205 §3.8).
    pub non_rsvp: bool,
    /// When the state times out unless refreshed ([`Instant::MAX`] for local senders, which
    /// live until the API removes them).
    pub expires: Instant,
    /// A fixed-filter reservation installed for this sender alone (an FF OutISB, RFC 2205
    /// §3.4), held here: such a reservation serves exactly this PSB, so its OutISB block and
    /// OIatPSB relation would only repeat what the PSB says. It is the first FF reservation of
    /// the sender; further ones (the sender's data leaves by several interfaces) are blocks.
    /// The engine reaches both forms through [`OutIsbRef`].
    pub ff_installed: Option<Installed>,
    /// OIatPSB relations to the reservations in blocks serving this sender.
    pub oiats: Option<OiatId>,
    /// The flowspec this node last asked the previous hop to reserve for this sender.
    pub sent: Option<FlowSpecRef>,
    /// What few senders have, out of line: blockade and RSVP-TE state.
    pub extra: Option<Box<PsbExtra>>,
}

/// Where a sender's Path reaches this node from (RFC 2209 §1: a PSB's PHOP and
/// IncInterface): a sender has both or, registered locally, neither. One field, so the pair
/// takes eight bytes in every PSB where two `Option`s took twelve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Upstream {
    /// The previous hop.
    pub phop: PhopId,
    /// Our interface the Path arrived on.
    pub iif: IfIndex,
}

/// The rarely present parts of a PSB, in one box so that a plain sender pays one pointer.
#[derive(Debug, Default)]
pub struct PsbExtra {
    /// POLICY_DATA and unknown-but-forwarded objects, passed on downstream: rare outside
    /// policy-controlled networks, so here rather than a pointer in every PSB.
    pub carried: Carried,
    /// Blockade state (RFC 2205 §3.5): a request upstream failed admission, so requests at
    /// least this large are left out of merging until it expires.
    pub blockade: Option<Blockade>,
    /// RSVP-TE state of an LSP (RFC 3209).
    pub te: Option<super::te::PsbTe>,
}

impl PsbExtra {
    /// The box for an LSP's TE state and objects carried on, or none when there are neither.
    pub fn with(te: Option<super::te::PsbTe>, carried: Carried) -> Option<Box<PsbExtra>> {
        (te.is_some() || carried.is_some()).then(|| {
            Box::new(PsbExtra {
                carried,
                blockade: None,
                te,
            })
        })
    }
}

impl Psb {
    /// Previous hop; `None` for a local sender.
    pub fn phop(&self) -> Option<PhopId> {
        self.upstream.map(|u| u.phop)
    }

    /// Incoming interface; `None` for a local sender.
    pub fn iif(&self) -> Option<IfIndex> {
        self.upstream.map(|u| u.iif)
    }

    /// RSVP-TE state, for an LSP.
    pub fn te(&self) -> Option<&super::te::PsbTe> {
        self.extra.as_ref()?.te.as_ref()
    }

    /// RSVP-TE state, to change.
    pub fn te_mut(&mut self) -> Option<&mut super::te::PsbTe> {
        self.extra.as_mut()?.te.as_mut()
    }

    /// Replace the RSVP-TE state.
    pub fn set_te(&mut self, te: Option<super::te::PsbTe>) {
        self.update_extra(|e| e.te = te);
    }

    /// POLICY_DATA and unknown-but-forwarded objects to pass on downstream.
    pub fn carried(&self) -> &[Opaque] {
        self.extra
            .as_ref()
            .map_or(&[], |e| carried_slice(&e.carried))
    }

    /// Replace the objects carried on.
    pub fn set_carried(&mut self, c: Carried) {
        self.update_extra(|e| e.carried = c);
    }

    /// Blockade state, if any.
    pub fn blockade(&self) -> Option<&Blockade> {
        self.extra.as_ref()?.blockade.as_ref()
    }

    /// Set or lift the blockade.
    pub fn set_blockade(&mut self, b: Option<Blockade>) {
        self.update_extra(|e| e.blockade = b);
    }

    fn update_extra(&mut self, f: impl FnOnce(&mut PsbExtra)) {
        change_boxed(
            &mut self.extra,
            |e| e.blockade.is_none() && e.te.is_none() && e.carried.is_none(),
            f,
        );
    }
}

/// Change a rarely present part kept out of line. The box is made only when `f` leaves
/// something in it and goes when `f` empties it, so a change that leaves nothing (a refresh
/// setting "no TE state", taking a confirmation that is not there) costs no allocation.
fn change_boxed<T: Default, R>(
    slot: &mut Option<Box<T>>,
    is_empty: impl Fn(&T) -> bool,
    f: impl FnOnce(&mut T) -> R,
) -> R {
    match slot {
        Some(b) => {
            let r = f(b);
            if is_empty(b) {
                *slot = None;
            }
            r
        }
        None => {
            let mut v = T::default();
            let r = f(&mut v);
            if !is_empty(&v) {
                *slot = Some(Box::new(v));
            }
            r
        }
    }
}

/// Blockade State Block (RFC 2209 §1 "BSB"), kept with the sender it concerns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Blockade {
    /// Qb: the flowspec that failed admission upstream.
    pub flowspec: FlowSpec,
    /// When the blockade lapses (Tb = Kb · R).
    pub expires: Instant,
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
    /// Next RSB of the session (whose id every caller has at hand: no back reference).
    pub next: Option<RsbId>,
    /// The next hop that sent it and the outgoing interface it reserves on ([`Rsb::nhop`],
    /// [`Rsb::oi`]); `None` for a local receiver.
    pub downstream: Option<Downstream>,
    /// Reservation style and the senders it applies to ([`Rsb::style`], [`Rsb::filters`]).
    pub selection: Selection,
    /// Requested flowspec.
    pub flowspec: FlowSpecRef,
    /// What few requests carry (SCOPE, a pending confirmation, forwarded objects), out of line.
    pub extra: Option<Box<RsbExtra>>,
    /// When the state times out unless refreshed ([`Instant::MAX`] for local receivers).
    pub expires: Instant,
}

/// Where a request comes from (RFC 2209 §1: an RSB's NHOP and OI): a next hop and the
/// outgoing interface it reserves on, or, for a local receiver, neither. One field, so the
/// pair takes eight bytes in every RSB where two `Option`s took twelve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Downstream {
    /// The next hop.
    pub nhop: HopRef,
    /// The outgoing interface.
    pub oi: IfIndex,
}

/// An RSB's reservation style with the senders it selects (RFC 2205 §1.3, §3.1.2: "Style"
/// and "Filter_spec_list"): WF, FF or SE, the only styles that make state. One enum, so the
/// style costs no byte of its own and a fixed filter is held inline.
#[derive(Debug, Clone, PartialEq)]
pub enum Selection {
    /// Wildcard-Filter: every sender (upstream of SCOPE, if the request has one).
    Wf,
    /// Fixed-Filter: one sender (each sender of an FF request is an RSB of its own).
    Ff(FilterSpec),
    /// Shared-Explicit: the senders listed, one or more.
    Se(Box<[FilterSpec]>),
}

impl Selection {
    /// The style.
    pub fn style(&self) -> SentStyle {
        match self {
            Selection::Wf => SentStyle::Wf,
            Selection::Ff(_) => SentStyle::Ff,
            Selection::Se(_) => SentStyle::Se,
        }
    }

    /// The filters: one for FF, one or more for SE, none (all senders) for WF.
    pub fn filters(&self) -> &[FilterSpec] {
        match self {
            Selection::Wf => &[],
            Selection::Ff(f) => core::slice::from_ref(f),
            Selection::Se(fs) => fs,
        }
    }

    /// Heap bytes held (an SE list).
    pub fn heap_bytes(&self) -> usize {
        match self {
            Selection::Se(fs) => core::mem::size_of_val::<[FilterSpec]>(fs),
            _ => 0,
        }
    }

    /// Keep only the filters `keep` accepts. Returns whether the selection still selects
    /// anything: WF always does; FF and SE do while a filter remains.
    pub fn retain(&mut self, mut keep: impl FnMut(&FilterSpec) -> bool) -> bool {
        match self {
            Selection::Wf => true,
            Selection::Ff(f) => keep(f),
            Selection::Se(fs) => {
                if !fs.iter().all(&mut keep) {
                    *fs = fs.iter().copied().filter(|f| keep(f)).collect();
                }
                !fs.is_empty()
            }
        }
    }
}

/// The rarely present parts of an RSB.
#[derive(Debug, Default, PartialEq)]
pub struct RsbExtra {
    /// SCOPE (WF with several previous hops).
    pub scope: Option<Scope>,
    /// A confirmation requested and not yet answered.
    pub confirm: Option<ResvConfirm>,
    /// POLICY_DATA and unknown-but-forwarded objects.
    pub carried: Vec<Opaque>,
    /// The LABEL and RECORD_ROUTE bound to each of the RSB's filters, by index (RFC 3209
    /// §3.2.1); empty outside LSP sessions.
    pub te: Vec<FilterTe>,
}

impl Rsb {
    /// The next hop that sent it; `None` for a local receiver.
    pub fn nhop(&self) -> Option<HopRef> {
        self.downstream.map(|d| d.nhop)
    }

    /// The outgoing interface it reserves on (`None`: local delivery).
    pub fn oi(&self) -> Oi {
        self.downstream.map(|d| d.oi)
    }

    /// Reservation style.
    pub fn style(&self) -> SentStyle {
        self.selection.style()
    }

    /// Senders it applies to: one for FF, one or more for SE, none (all) for WF.
    pub fn filters(&self) -> &[FilterSpec] {
        self.selection.filters()
    }

    /// SCOPE, if the request has one.
    pub fn scope(&self) -> Option<&Scope> {
        self.extra.as_ref().and_then(|e| e.scope.as_ref())
    }

    /// The LABEL and RECORD_ROUTE per filter.
    pub fn te(&self) -> &[FilterTe] {
        self.extra.as_ref().map_or(&[], |e| e.te.as_slice())
    }

    /// Objects carried with the request.
    pub fn carried(&self) -> &[Opaque] {
        self.extra.as_ref().map_or(&[], |e| e.carried.as_slice())
    }

    /// Change the rare parts; the box goes when they are all empty again.
    pub fn with_extra<R>(&mut self, f: impl FnOnce(&mut RsbExtra) -> R) -> R {
        change_boxed(&mut self.extra, |e| *e == RsbExtra::default(), f)
    }

    /// Whether a confirmation is waiting to be answered (RFC 2205 §3.1.4).
    pub fn confirm_pending(&self) -> bool {
        self.extra.as_ref().is_some_and(|e| e.confirm.is_some())
    }

    /// Whether this request applies to `sender` (style semantics, RFC 2205 §1.3).
    pub fn covers(&self, sender: &FilterSpec) -> bool {
        match &self.selection {
            Selection::Wf => self.scope().is_none_or(|s| s.addrs.contains(&sender.src())),
            s => s.filters().iter().any(|f| filter_matches(f, sender)),
        }
    }
}

/// Whether a FILTER_SPEC selects the sender named by a SENDER_TEMPLATE. A port or flow label of
/// zero in the filter is a wildcard (RFC 2205 §A.9); an LSP ID is not.
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
        // An LSP tunnel's FILTER_SPEC names one LSP of its sender (RFC 3209 §4.6.3): the LSP ID
        // is no wildcard, not even 0.
        (FilterSpec::LspTunnelV4 { .. }, FilterSpec::LspTunnelV4 { .. })
        | (FilterSpec::LspTunnelV6 { .. }, FilterSpec::LspTunnelV6 { .. }) => filter == sender,
        _ => false,
    }
}

/// What an OutISB holds in either form ([`OutIsbRef`]): a reservation installed on one
/// interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Installed {
    /// The interface.
    pub ifindex: IfIndex,
    /// The merged flowspec installed.
    pub flowspec: FlowSpecRef,
    /// Traffic control's handle.
    pub tc: crate::engine::tc::TcHandle,
}

/// Outgoing Interface State Block in a block of its own: a shared (WF, SE) reservation, or a
/// fixed-filter one its sender's PSB does not hold ([`Psb::ff_installed`]).
#[derive(Debug)]
pub struct OutIsb {
    /// Owning session.
    pub session: SessionId,
    /// Next OutISB of the session.
    pub next: Option<OutIsbId>,
    /// A fixed-filter reservation for the one sender on its OIatPSB list; otherwise shared.
    pub ff: bool,
    /// Where, what, and traffic control's handle.
    pub installed: Installed,
    /// OIatPSB relations to the senders it serves.
    pub oiats: Option<OiatId>,
}

/// An OutISB, in whichever of its two forms it is: held in the PSB of the one sender a
/// fixed-filter reservation serves, or a block of its own. Every reader and writer of
/// installed reservations goes through this, so the forms differ only in where the bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutIsbRef {
    /// The FF reservation held in this PSB ([`Psb::ff_installed`]).
    InPsb(PsbId),
    /// A block.
    Block(OutIsbId),
}

/// Outgoing Interface at PSB: "this reservation serves this sender".
#[derive(Debug, Clone, Copy)]
pub struct OiatPsb {
    /// The reservation.
    pub out_isb: OutIsbId,
    /// The sender's path state.
    pub psb: PsbId,
    /// Next relation of the same OutISB.
    pub next_of_out: Option<OiatId>,
    /// Next relation of the same PSB.
    pub next_of_psb: Option<OiatId>,
}

/// One flowspec of a request and the sender it names (`None` for wildcard): the compact form in
/// which requests are compared.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestFlow {
    /// The flowspec.
    pub flowspec: FlowSpec,
    /// The sender, for FF and SE.
    pub filter: Option<FilterSpec>,
}

/// Back to flow descriptors of `style`: one per entry for FF, one shared otherwise.
pub fn descriptors(style: StyleKind, flows: &[RequestFlow]) -> Few<FlowDescriptor> {
    match style {
        StyleKind::Ff => flows
            .iter()
            .map(|f| FlowDescriptor {
                flowspec: Some(f.flowspec),
                filters: f.filter.into_iter().collect(),
                te: Vec::new(),
            })
            .collect(),
        _ => flows
            .first()
            .map(|first| FlowDescriptor {
                flowspec: Some(first.flowspec),
                filters: flows.iter().filter_map(|f| f.filter).collect(),
                te: Vec::new(),
            })
            .into_iter()
            .collect(),
    }
}

impl Encode for Adspec {
    fn encode(&self, out: &mut Vec<u8>) {
        self.emit(&mut Writer::new(out));
    }
}

impl Encode for FlowSpec {
    fn encode(&self, out: &mut Vec<u8>) {
        self.emit(&mut Writer::new(out));
    }
}

impl Encode for SenderTspec {
    /// Bit-exact, so a value is shared only with one that sends the same bytes.
    fn encode(&self, out: &mut Vec<u8>) {
        let t = &self.0;
        for w in [
            t.rate.to_bits(),
            t.bucket.to_bits(),
            t.peak.to_bits(),
            t.min_policed,
            t.max_packet,
        ] {
            out.extend_from_slice(&w.to_be_bytes());
        }
    }
}

impl Encode for SessionDest {
    /// The address family of each address, then the addresses' bytes.
    fn encode(&self, out: &mut Vec<u8>) {
        let family = |a: Option<&IpAddr>| match a {
            None => 0,
            Some(IpAddr::V4(_)) => 4,
            Some(IpAddr::V6(_)) => 6,
        };
        out.push((family(Some(&self.addr)) << 4) | family(self.ext_tunnel_id.as_ref()));
        for a in core::iter::once(&self.addr).chain(&self.ext_tunnel_id) {
            match a {
                IpAddr::V4(a) => out.extend_from_slice(&a.octets()),
                IpAddr::V6(a) => out.extend_from_slice(&a.octets()),
            }
        }
    }
}

impl Encode for RsvpHop {
    fn encode(&self, out: &mut Vec<u8>) {
        self.emit(&mut Writer::new(out));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smallvec::SmallVec;
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

    /// Flatten flow descriptors (the inverse of [`descriptors`]) into one entry per (flowspec, sender).
    fn flatten(flows: &[FlowDescriptor]) -> SmallVec<[RequestFlow; 2]> {
        let mut out = SmallVec::new();
        for d in flows {
            let Some(flowspec) = d.flowspec else { continue };
            if d.filters.is_empty() {
                out.push(RequestFlow {
                    flowspec,
                    filter: None,
                });
            }
            out.extend(d.filters.iter().map(|f| RequestFlow {
                flowspec,
                filter: Some(*f),
            }));
        }
        out
    }

    #[test]
    fn flatten_and_back() {
        let fs = FlowSpec::ControlledLoad(crate::wire::TokenBucket {
            rate: 1.0,
            bucket: 1.0,
            peak: 1.0,
            min_policed: 1,
            max_packet: 1,
        });
        let a = FilterSpec::V4 {
            src: Ipv4Addr::new(10, 0, 0, 1),
            src_port: 1,
        };
        let b = FilterSpec::V4 {
            src: Ipv4Addr::new(10, 0, 0, 2),
            src_port: 1,
        };
        let se = vec![FlowDescriptor {
            flowspec: Some(fs),
            filters: vec![a, b].into(),
            te: Vec::new(),
        }];
        assert_eq!(descriptors(StyleKind::Se, &flatten(&se)), se);
        let ff = vec![
            FlowDescriptor {
                flowspec: Some(fs),
                filters: vec![a].into(),
                te: Vec::new(),
            },
            FlowDescriptor {
                flowspec: Some(fs),
                filters: vec![b].into(),
                te: Vec::new(),
            },
        ];
        assert_eq!(descriptors(StyleKind::Ff, &flatten(&ff)), ff);
        let wf = vec![FlowDescriptor {
            flowspec: Some(fs),
            filters: vec![].into(),
            te: Vec::new(),
        }];
        assert_eq!(descriptors(StyleKind::Wf, &flatten(&wf)), wf);
    }

    #[test]
    fn state_blocks_stay_small() {
        // Bytes per session is a published figure; these guard against accidental growth.
        use std::mem::size_of;
        // 88 since SESSION grew an RSVP-TE Extended Tunnel ID (RFC 3209 §4.6.1); 80 since the
        // local-repair deadline moved out; 72 since the upstream style is one byte; 56 since
        // the Extended Tunnel ID is interned; 40 since the destination is interned with it.
        assert!(
            size_of::<SessionState>() <= 40,
            "SessionState is {}",
            size_of::<SessionState>()
        );
        // 112 since the SENDER_TSPEC is interned; 104 since the outgoing interfaces are a
        // `Few` (the Rsb's 72 since its filters are); 96 since carried objects are with the
        // other rare parts; 112 since it holds its sender's FF reservation (16 bytes where the
        // OutISB and OIatPSB blocks took 48); 104 since traffic control's handle is four
        // bytes and the previous hop and incoming interface are one field.
        assert!(size_of::<Psb>() <= 104, "Psb is {}", size_of::<Psb>());
        assert!(
            size_of::<Option<Upstream>>() <= 8,
            "Option<Upstream> is {}",
            size_of::<Option<Upstream>>()
        );
        assert!(
            size_of::<Option<Installed>>() <= 12,
            "Option<Installed> is {}",
            size_of::<Option<Installed>>()
        );
        // The Rsb's 64 since its style is one byte and it names no session; 56 since the style
        // is its filters' enum and the next hop and outgoing interface are one field.
        assert!(size_of::<Rsb>() <= 56, "Rsb is {}", size_of::<Rsb>());
        assert!(
            size_of::<Selection>() <= 24,
            "Selection is {}",
            size_of::<Selection>()
        );
        assert!(
            size_of::<OutIsb>() <= 28,
            "OutIsb is {}",
            size_of::<OutIsb>()
        );
        assert!(
            size_of::<OiatPsb>() <= 16,
            "OiatPsb is {}",
            size_of::<OiatPsb>()
        );
    }
}
