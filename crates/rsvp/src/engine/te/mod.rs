//! RSVP-TE (RFC 3209) on the RSVP engine: LSP tunnels whose Path follows an EXPLICIT_ROUTE,
//! whose Resv carries labels bound downstream-on-demand, and whose bindings make up the node's
//! label-forwarding table.
//!
//! An LSP is an RSVP sender of an LSP_TUNNEL session; its path state (PSB) carries a [`PsbTe`].
//! The RFC 2205 machinery is reused as it is — merging, admission, refresh, teardown — and
//! these modules add what RFC 3209 changes:
//!
//! - [`ero`]: where the Path goes (§4.3.4): the explicit route, strict and loose hops, loose
//!   hops expanded from the routing table.
//! - [`labels`]: labels (§4.1): the label space, the binding of each LSP's incoming label to the
//!   label and next hop its downstream neighbour gave, the LFIB and ingress bindings, and the
//!   LABEL/RECORD_ROUTE objects sent upstream.
//! - [`preempt`]: preemption by setup and holding priority (§4.7.1).
//! - [`lsp`]: the head end: LSPs opened, re-routed make-before-break (§2.5, §4.6.4) and closed
//!   by name; the egress answers on its own.
//!
//! GMPLS (RFC 3471, RFC 3473) is a second flavour of LSP on packet-switch capable links with
//! MPLS labels: a Path with a Generalized LABEL_REQUEST ([`PsbTe::is_gmpls`], checked per
//! RFC 3473 §2.1.1) is answered with Generalized LABELs (§2.3); the TLVs of an IF_ID RSVP_HOP
//! (§8.1) are returned in the Resv to the hop that sent them; a head end opens one with
//! [`LspSpec::gmpls`].

pub mod ero;
pub mod labels;
pub mod lsp;
pub mod preempt;

pub use labels::LabelSpace;
pub use lsp::{GmplsRequest, LspRole, LspSpec, LspStatus, LspView};

use crate::wire::objects::IfIdTlv;
use crate::wire::te::{
    ExplicitRoute, LabelRequest, RecordRoute, SessionAttribute, lsp_encoding, switching,
};
use pathwise_core::mpls::NextHop;

/// The RSVP-TE part of one LSP's path state.
#[derive(Clone, Debug, PartialEq)]
pub struct PsbTe {
    /// LABEL_REQUEST, passed on unchanged (§4.2).
    pub label_request: LabelRequest,
    /// SESSION_ATTRIBUTE, passed on unchanged (§4.7).
    pub session_attribute: Option<SessionAttribute>,
    /// EXPLICIT_ROUTE as received (at the head end: as configured); processed again when
    /// routes change.
    pub ero: Option<ExplicitRoute>,
    /// EXPLICIT_ROUTE passed downstream: this node's subobjects removed, a loose hop's route
    /// inserted (§4.3.4). `None` when the route ended here or there was none.
    pub ero_out: Option<ExplicitRoute>,
    /// RECORD_ROUTE of the Path as received (empty at a head end that asks for recording);
    /// `None` when nobody asked for the route to be recorded (§4.4.3).
    pub rro: Option<RecordRoute>,
    /// The label this node allocated and advertised upstream (at the egress: a null label).
    pub in_label: Option<u32>,
    /// The binding downstream in use: the label the next hop gave and where it is.
    pub out: Option<(u32, NextHop)>,
    /// Creation order at the head end: the newest bound LSP of a tunnel carries its traffic.
    pub seq: u64,
    /// A digest of the LABEL and RECORD_ROUTE last sent upstream, to send again when they
    /// change.
    pub sent_up: Option<u64>,
    /// At a head end: when the LSP is given up if no label has come from downstream by then
    /// (`Config::lsp_setup_timeout`); `None` elsewhere, and once the LSP is up.
    pub setup_by: Option<pathwise_core::time::Instant>,
    /// The Interface_ID TLVs of the previous hop's IF_ID RSVP_HOP (RFC 3473 §8.1.2: "saves
    /// their values and returns them in the HOP objects of subsequent Resv messages"); `None`
    /// when its Path came with none.
    pub phop_if_id: Option<std::sync::Arc<Vec<IfIdTlv>>>,
}

impl PsbTe {
    /// TE state for a Path's objects.
    pub fn new(
        label_request: LabelRequest,
        session_attribute: Option<SessionAttribute>,
        ero: Option<ExplicitRoute>,
        rro: Option<RecordRoute>,
    ) -> Self {
        PsbTe {
            label_request,
            session_attribute,
            ero,
            ero_out: None,
            rro,
            in_label: None,
            out: None,
            seq: 0,
            sent_up: None,
            setup_by: None,
            phop_if_id: None,
        }
    }

    /// Whether the LSP is of the GMPLS flavour: its Path carried a Generalized LABEL_REQUEST
    /// (RFC 3473 §2.1), so its label goes upstream as a Generalized LABEL (§2.3).
    pub fn is_gmpls(&self) -> bool {
        self.label_request.generalized().is_some()
    }

    /// RFC 3473 §2.1.1 at a transit or egress node: the Routing Problem value to refuse a
    /// Generalized LABEL_REQUEST with, if this node cannot switch it. This node is an MPLS
    /// LSR: it carries packet LSPs (encoding Packet) on packet-switch capable links (PSC-1 to
    /// PSC-4) — "Unsupported Encoding" (14) otherwise, then "Switching Type" (12). The G-PID
    /// is the egress's to check, as an L3PID ([`PsbTe::l3pid_supported`]).
    pub fn generalized_refusal(&self) -> Option<u16> {
        use crate::wire::error::error_code::routing;
        let g = self.label_request.generalized()?;
        if g.encoding != lsp_encoding::PACKET {
            Some(routing::UNSUPPORTED_ENCODING)
        } else if !switching::is_psc(g.switching) {
            Some(routing::SWITCHING_TYPE)
        } else {
            None
        }
    }

    /// Setup priority (§4.7.1): 7, the lowest, without SESSION_ATTRIBUTE.
    pub fn setup_priority(&self) -> u8 {
        self.session_attribute
            .as_ref()
            .map_or(7, |s| s.setup_priority.min(7))
    }

    /// Holding priority: 0, the highest, without SESSION_ATTRIBUTE (such an LSP is never
    /// preempted).
    pub fn holding_priority(&self) -> u8 {
        self.session_attribute
            .as_ref()
            .map_or(0, |s| s.holding_priority.min(7))
    }

    /// Whether the SESSION_ATTRIBUTE carries `flag`.
    pub fn has_flag(&self, flag: u8) -> bool {
        self.session_attribute
            .as_ref()
            .is_some_and(|s| s.flags & flag != 0)
    }

    /// Whether the transport above carries the label's payload: IPv4, IPv6 or MPLS (§4.2.1,
    /// L3PID is an Ethertype; so is the G-PID of a packet LSP, RFC 3471 §3.1.1).
    pub fn l3pid_supported(&self) -> bool {
        matches!(self.label_request.l3pid, 0x0800 | 0x86dd | 0x8847)
    }
}

impl PsbTe {
    /// Heap bytes this state holds beyond its own size.
    pub fn heap_bytes(&self) -> usize {
        use crate::wire::te::{EroSubobject, RroSubobject};
        use std::mem::size_of;
        let ero = |e: &Option<ExplicitRoute>| {
            e.as_ref()
                .map_or(0, |e| e.subobjects.capacity() * size_of::<EroSubobject>())
        };
        ero(&self.ero)
            + ero(&self.ero_out)
            + self
                .rro
                .as_ref()
                .map_or(0, |r| r.subobjects.capacity() * size_of::<RroSubobject>())
            + self
                .session_attribute
                .as_ref()
                .map_or(0, |a| a.name.capacity())
            + self
                .phop_if_id
                .as_ref()
                .map_or(0, |t| t.capacity() * size_of::<IfIdTlv>())
    }
}
