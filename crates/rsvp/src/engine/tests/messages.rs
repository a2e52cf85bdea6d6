//! The messages the state-layout tests ([`super::ff_in_psb`], [`super::compact_state`]) feed a
//! transit node: Paths and PathTears from a previous hop upstream, Resvs and ResvTears from a
//! next hop downstream (fed with [`super::from_upstream`] and [`super::from_downstream`]).

use super::*;
use crate::few::Few;
use crate::wire::{FlowDescriptor, FlowSpec, ResvTear};

/// A second sender, beside [`sender`]`(1)`.
pub(super) fn sender_b() -> FilterSpec {
    FilterSpec::ip(IpAddr::V4(Ipv4Addr::new(30, 0, 0, 2)), 1)
}

/// [`sender`]`(1)`'s Path in `s` from [`PHOP`], and [`NHOP`]'s FF request for it at 10 kB/s:
/// the reservation held in the sender's PSB.
pub(super) fn held_ff_reservation(e: &mut RsvpEngine, s: Session) {
    from_upstream(e, &path_of(s, sender(1)));
    from_downstream(
        e,
        &resv_from(s, StyleKind::Ff, ff(10.0, sender(1)), down(NHOP)),
        NHOP,
    );
}

/// `f`'s Path in `s` from [`PHOP`].
pub(super) fn path_of(s: Session, f: FilterSpec) -> Vec<u8> {
    bytes(&path(s, f), 63)
}

/// `f`'s Path in `s` from `phop`, Logical Interface Handle `lih`.
pub(super) fn path_from(s: Session, f: FilterSpec, phop: Ipv4Addr, lih: u32) -> Vec<u8> {
    let Message::Path(mut p) = path(s, f) else {
        panic!()
    };
    p.hop = RsvpHop::new(phop.into(), lih);
    bytes(&Message::Path(p), 63)
}

/// `f`'s PathTear in `s` from [`PHOP`].
pub(super) fn path_tear_of(s: Session, f: FilterSpec) -> Vec<u8> {
    path_tear_from(s, f, PHOP, 7)
}

/// `f`'s PathTear in `s` from `phop`, Logical Interface Handle `lih`.
pub(super) fn path_tear_from(s: Session, f: FilterSpec, phop: Ipv4Addr, lih: u32) -> Vec<u8> {
    let Message::PathTear(mut t) = path_tear(s) else {
        panic!()
    };
    t.sender_template = Some(f);
    t.hop = RsvpHop::new(phop.into(), lih);
    bytes(&Message::PathTear(t), 63)
}

/// A Resv in `s` from the next hop `hop`.
pub(super) fn resv_from(
    s: Session,
    style: StyleKind,
    flows: Few<FlowDescriptor>,
    hop: RsvpHop,
) -> Vec<u8> {
    let Message::Resv(mut r) = resv(s, style, flows) else {
        panic!()
    };
    r.hop = hop;
    bytes(&Message::Resv(r), 64)
}

/// A ResvTear in `s` from [`NHOP`].
pub(super) fn resv_tear_of(s: Session, style: StyleKind, flows: Few<FlowDescriptor>) -> Vec<u8> {
    resv_tear_from(s, style, flows, down(NHOP))
}

/// A ResvTear in `s` from the next hop `hop`.
pub(super) fn resv_tear_from(
    s: Session,
    style: StyleKind,
    flows: Few<FlowDescriptor>,
    hop: RsvpHop,
) -> Vec<u8> {
    let Message::ResvTear(t) = resv_tear(s) else {
        panic!()
    };
    bytes(
        &Message::ResvTear(ResvTear {
            hop,
            style: Style {
                flags: 0,
                kind: style,
            },
            flows,
            ..t
        }),
        64,
    )
}

/// One WF flow descriptor (every sender).
pub(super) fn wf(rate: f32) -> Few<FlowDescriptor> {
    Few::One(FlowDescriptor {
        flowspec: Some(FlowSpec::ControlledLoad(tb(rate))),
        filters: Few::default(),
        te: Vec::new(),
    })
}

/// One SE flow descriptor naming `senders`.
pub(super) fn se(rate: f32, senders: &[FilterSpec]) -> Few<FlowDescriptor> {
    Few::One(FlowDescriptor {
        flowspec: Some(FlowSpec::ControlledLoad(tb(rate))),
        filters: senders.to_vec().into(),
        te: Vec::new(),
    })
}

/// The RSVP_HOP of a next hop on [`DOWN`].
pub(super) fn down(addr: Ipv4Addr) -> RsvpHop {
    RsvpHop::new(addr.into(), DOWN.0)
}
