//! Labels (RFC 3209 §4.1): allocated downstream-on-demand — a node binds a label for an LSP when
//! the Resv from its next hop brings that hop's label — and installed in the label-forwarding
//! table; the head end binds the tunnel's traffic to its newest LSP that has a label.

use super::PsbTe;
use crate::engine::state::{PsbId, RsbId, SessionId, filter_matches};
use crate::engine::{Event, RsvpEngine, TrafficControl};
use crate::wire::error::error_code;
use crate::wire::te::{GeneralizedLabel, Label, RecordRoute, RroSubobject, SessionAttribute};
use crate::wire::{FilterSpec, FilterTe, FlowDescriptor};
use pathwise_core::mpls::{
    self, FtnEntry, IMPLICIT_NULL, IPV4_EXPLICIT_NULL, IPV6_EXPLICIT_NULL, LabelOp, LfibChange,
    LfibEntry, NextHop,
};
use smallvec::SmallVec;
use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::net::IpAddr;

/// The labels a node hands out: a range, allocated in order, freed ones reused oldest first
/// (so a label just released is not at once given to another LSP while packets may still
/// carry it).
#[derive(Clone, Debug)]
pub struct LabelSpace {
    next: u32,
    last: u32,
    free: VecDeque<u32>,
    in_use: usize,
}

impl LabelSpace {
    /// Labels `first..=last`, clamped to the allocatable ones (16 to 2^20 − 1).
    pub fn new(first: u32, last: u32) -> Self {
        LabelSpace {
            next: first.max(mpls::FIRST_UNRESERVED),
            last: last.min(mpls::MAX_LABEL),
            free: VecDeque::new(),
            in_use: 0,
        }
    }

    /// A free label, or `None` when the space is exhausted.
    pub fn allocate(&mut self) -> Option<u32> {
        let l = self.free.pop_front().or_else(|| {
            (self.next <= self.last).then(|| {
                self.next += 1;
                self.next - 1
            })
        })?;
        self.in_use += 1;
        Some(l)
    }

    /// Give a label back.
    pub fn release(&mut self, l: u32) {
        self.in_use -= 1;
        self.free.push_back(l);
    }

    /// Labels allocated now.
    pub fn in_use(&self) -> usize {
        self.in_use
    }
}

/// The Label subobject recording `label` (§4.4.1.3).
fn label_subobject(label: u32) -> RroSubobject {
    RroSubobject::Label {
        flags: 0,
        ctype: crate::wire::te::ctype::LABEL,
        contents: label.to_be_bytes().to_vec(),
    }
}

/// The address subobject recording `addr` (§4.4.1.1, §4.4.1.2).
pub fn address_subobject(addr: IpAddr) -> RroSubobject {
    match addr {
        IpAddr::V4(addr) => RroSubobject::Ipv4 {
            addr,
            prefix_len: 32,
            flags: 0,
        },
        IpAddr::V6(addr) => RroSubobject::Ipv6 {
            addr,
            prefix_len: 128,
            flags: 0,
        },
    }
}

/// `rro` with `subs` pushed on top (§4.4.1: the most recent hop first).
pub fn pushed(
    rro: Option<&RecordRoute>,
    subs: impl IntoIterator<Item = RroSubobject>,
) -> RecordRoute {
    let mut subobjects: Vec<RroSubobject> = subs.into_iter().collect();
    subobjects.extend(rro.iter().flat_map(|r| r.subobjects.iter().cloned()));
    RecordRoute { subobjects }
}

/// The label and route a Resv from downstream gave one LSP.
pub(crate) struct Binding {
    pub label: u32,
    pub next_hop: NextHop,
    pub rro: Option<RecordRoute>,
}

impl<T: TrafficControl> RsvpEngine<T> {
    /// Apply a change to the LFIB and, if it changed anything, tell the driver's dataplane.
    pub(crate) fn lfib_apply(&mut self, change: LfibChange) {
        if self.lfib.update(&change) {
            self.events.push_back(Event::Lfib(change));
        }
    }

    /// The label the egress advertises (§4.1.1.1): implicit null, so the penultimate hop pops,
    /// or, configured, the explicit null of the LSP's layer 3 protocol.
    fn egress_label(&self, te: &PsbTe) -> u32 {
        match (self.cfg.explicit_null, te.label_request.l3pid) {
            (false, _) => IMPLICIT_NULL,
            (true, 0x86dd) => IPV6_EXPLICIT_NULL,
            (true, _) => IPV4_EXPLICIT_NULL,
        }
    }

    /// The downstream binding of an LSP: the request from the next hop on its outgoing
    /// interface that names it, with the label bound to that FILTER_SPEC.
    pub(crate) fn downstream_binding(&self, p: PsbId) -> Option<Binding> {
        let psb = &self.psbs[p];
        let oi = psb.oifs.first().copied().flatten()?;
        self.rsbs_of(psb.session).find_map(|r: RsbId| {
            let rsb = &self.rsbs[r];
            if rsb.oi() != Some(oi) {
                return None;
            }
            let i = rsb
                .filters()
                .iter()
                .position(|f| filter_matches(f, &psb.sender))?;
            let te = rsb.te().get(i)?;
            Some(Binding {
                label: te.label_value()?,
                next_hop: NextHop {
                    ifindex: oi,
                    addr: self.hops.get(rsb.nhop()?).addr,
                },
                rro: te.record_route.clone(),
            })
        })
    }

    /// Why the label a Resv gives the LSP of `sender` is unacceptable, as a Routing Problem
    /// value; `None` when it is fine.
    pub(crate) fn label_refusal(
        &self,
        sid: SessionId,
        sender: &FilterSpec,
        te: Option<&FilterTe>,
    ) -> Option<u16> {
        use error_code::routing;
        let label = te.and_then(FilterTe::label_value);
        let generalized = te.is_some_and(|t| t.label.is_none() && t.generalized_label.is_some());
        match label {
            // RFC 3473 §2.3.1.
            None if generalized => Some(routing::LABEL_ALLOCATION_FAILURE),
            Some(l) if !pathwise_core::mpls::is_valid_out_label(l) => Some(if generalized {
                routing::LABEL_ALLOCATION_FAILURE
            } else {
                routing::UNACCEPTABLE_LABEL_VALUE
            }),
            None => Some(routing::UNACCEPTABLE_LABEL_VALUE),
            // RFC 3473 §2.1.1: asked to pop (PHP) for a packet LSP, the penultimate hop checks
            // the stored G-PID, and refuses one it cannot carry with "Unacceptable label value".
            Some(l) if l == pathwise_core::mpls::IMPLICIT_NULL => self
                .psbs_of(sid)
                .filter(|&p| filter_matches(sender, &self.psbs[p].sender))
                .filter_map(|p| self.psbs[p].te())
                .any(|t| t.is_gmpls() && !t.l3pid_supported())
                .then_some(routing::UNACCEPTABLE_LABEL_VALUE),
            Some(_) => None,
        }
    }

    /// Release an LSP's incoming label and its LFIB entry.
    pub(crate) fn drop_in_label(&mut self, p: PsbId) {
        let Some(te) = self.psbs[p].te_mut() else {
            return;
        };
        te.out = None;
        if let Some(l) = te.in_label.take()
            && mpls::is_allocatable(l)
        {
            self.labels.release(l);
            self.lfib_apply(LfibChange::Remove(l));
        }
    }

    /// Bring the session's label bindings in line with its path and reservation state: a
    /// transit LSP whose next hop gave a label gets one of ours and an LFIB entry (swap, or pop
    /// for implicit null); the egress advertises its null label; an LSP whose binding went
    /// releases its label. Label exhaustion is answered with PathErr "MPLS label allocation
    /// failure" (§4.5). Then the head end's binding.
    pub(crate) fn sync_labels(&mut self, sid: SessionId) {
        let psbs: SmallVec<[PsbId; 4]> = self.psbs_of(sid).collect();
        for p in psbs {
            let Some(te) = self.psbs[p].te() else {
                continue;
            };
            if self.psbs[p].non_rsvp {
                // A router without RSVP stands between us and the previous hop: nothing to bind
                // (it was told, PathErr 24/8).
                self.drop_in_label(p);
                continue;
            }
            if self.psbs[p].oifs.contains(&None) {
                let l = self.egress_label(te);
                if te.in_label != Some(l) {
                    self.drop_in_label(p);
                    self.psbs[p].te_mut().unwrap().in_label = Some(l);
                }
                continue;
            }
            let Some(b) = self.downstream_binding(p) else {
                self.drop_in_label(p);
                continue;
            };
            let transit = self.psbs[p].phop().is_some();
            let have = self.psbs[p].te().and_then(|t| t.in_label);
            let label = match (transit, have) {
                (false, _) => None,
                (true, Some(l)) if mpls::is_allocatable(l) => Some(l),
                (true, _) => match self.labels.allocate() {
                    Some(l) => Some(l),
                    None => {
                        self.counters.label_allocation_failures += 1;
                        self.drop_in_label(p);
                        self.path_err_upstream(
                            p,
                            error_code::ROUTING_PROBLEM,
                            error_code::routing::LABEL_ALLOCATION_FAILURE,
                        );
                        continue;
                    }
                },
            };
            if let Some(l) = label {
                let op = if b.label == IMPLICIT_NULL {
                    LabelOp::Pop
                } else {
                    LabelOp::Swap(b.label)
                };
                self.lfib_apply(LfibChange::Install(LfibEntry {
                    in_label: l,
                    op,
                    next_hop: b.next_hop,
                }));
            }
            let te = self.psbs[p].te_mut().unwrap();
            te.in_label = label;
            te.out = Some((b.label, b.next_hop));
        }
        self.sync_head_end(sid);
    }

    /// At the head end, the tunnel's traffic enters its newest LSP that has a label (§2.5
    /// make-before-break: the new LSP takes over once it is up); older LSPs of the tunnel are
    /// then torn down.
    fn sync_head_end(&mut self, sid: SessionId) {
        let session = self.session_key(sid);
        let mut newest: Option<(u64, PsbId)> = None;
        let mut heads: SmallVec<[(u64, PsbId); 2]> = SmallVec::new();
        for p in self.psbs_of(sid) {
            let psb = &self.psbs[p];
            let Some(te) = psb.te().filter(|_| psb.phop().is_none()) else {
                continue;
            };
            heads.push((te.seq, p));
            if te.out.is_some() && newest.is_none_or(|(s, _)| te.seq > s) {
                newest = Some((te.seq, p));
            }
        }
        if heads.is_empty() {
            return;
        }
        let Some((seq, p)) = newest else {
            self.lfib_apply(LfibChange::RemoveFtn {
                dest: session.dest,
                tunnel_id: session.dst_port,
            });
            return;
        };
        let (label, next_hop) = self.psbs[p].te().and_then(|t| t.out).unwrap();
        self.lfib_apply(LfibChange::InstallFtn(FtnEntry {
            dest: session.dest,
            tunnel_id: session.dst_port,
            push: (label != IMPLICIT_NULL).then_some(label),
            next_hop,
        }));
        for (s, old) in heads {
            if s < seq {
                self.superseded.push((session, self.psbs[old].sender));
            }
        }
    }

    /// The LABEL and RECORD_ROUTE this node sends upstream for an LSP (§4.1, §4.4.3): its
    /// incoming label, and — when the Path asked for a record — the route from downstream with
    /// this node's address (the interface towards the head end) and, when label recording is
    /// desired, its label on top.
    fn upstream_te(&self, p: PsbId) -> FilterTe {
        let psb = &self.psbs[p];
        let Some(te) = psb.te() else {
            return FilterTe::default();
        };
        let record_route = te.rro.as_ref().map(|_| {
            let addr = self.iface_addr(psb.iif(), self.session_dest(psb.session).addr);
            let below = if psb.oifs.contains(&None) {
                None
            } else {
                self.downstream_binding(p).and_then(|b| b.rro)
            };
            let label = te
                .in_label
                .filter(|_| te.has_flag(SessionAttribute::LABEL_RECORDING_DESIRED));
            pushed(
                below.as_ref(),
                std::iter::once(address_subobject(addr)).chain(label.map(label_subobject)),
            )
        });
        // RFC 3473 §2.3: the label goes upstream in the flavour the Path asked for — a
        // Generalized LABEL, the MPLS label right-justified in 32 bits (RFC 3471 §3.2.1.2),
        // when it came with a Generalized LABEL_REQUEST.
        let generalized = te.label_request.generalized().is_some();
        FilterTe {
            label: te
                .in_label
                .filter(|_| !generalized)
                .map(|label| Label { label }),
            record_route,
            generalized_label: te
                .in_label
                .filter(|_| generalized)
                .map(GeneralizedLabel::from_u32),
        }
    }

    /// Bind the LABEL and RECORD_ROUTE of each LSP to its FILTER_SPEC in flow descriptors going
    /// upstream, remembering a digest of what was sent; returns whether any of it changed since
    /// last time.
    pub(crate) fn attach_te(&mut self, sid: SessionId, flows: &mut [FlowDescriptor]) -> bool {
        let mut changed = false;
        for f in flows {
            f.te.clear();
            for s in &f.filters {
                let Some(p) = self.find_psb(sid, s) else {
                    f.te.push(FilterTe::default());
                    continue;
                };
                let te = self.upstream_te(p);
                let digest = self.session_hasher.hash_one(&te);
                if let Some(t) = self.psbs[p].te_mut()
                    && t.sent_up != Some(digest)
                {
                    t.sent_up = Some(digest);
                    changed = true;
                }
                f.te.push(te);
            }
        }
        changed
    }

    /// The RECORD_ROUTE this node reports upstream for an LSP.
    pub(crate) fn upstream_record_route(&self, p: PsbId) -> Option<RecordRoute> {
        self.upstream_te(p).record_route
    }

    /// Whether an LSP can be asked for upstream: it has a label to give.
    pub(crate) fn has_upstream_label(&self, p: PsbId) -> bool {
        self.psbs[p].te().is_none_or(|t| t.in_label.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_space_allocates_in_order_and_reuses_oldest_first() {
        let mut s = LabelSpace::new(0, 18);
        assert_eq!(s.allocate(), Some(16));
        assert_eq!(s.allocate(), Some(17));
        assert_eq!(s.allocate(), Some(18));
        assert_eq!(s.allocate(), None);
        s.release(17);
        s.release(16);
        assert_eq!(s.in_use(), 1);
        assert_eq!(s.allocate(), Some(17));
        assert_eq!(s.allocate(), Some(16));
        assert_eq!(s.allocate(), None);
        let mut top = LabelSpace::new(mpls::MAX_LABEL, u32::MAX);
        assert_eq!(top.allocate(), Some(mpls::MAX_LABEL));
        assert_eq!(top.allocate(), None);
    }

    #[test]
    fn recorded_routes_stack_newest_first() {
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let r = pushed(None, [address_subobject(b), label_subobject(3)]);
        let r = pushed(Some(&r), [address_subobject(a), label_subobject(16)]);
        assert_eq!(r.subobjects[0], address_subobject(a));
        assert_eq!(r.subobjects[1].label(), Some(16));
        assert_eq!(r.subobjects[2], address_subobject(b));
        assert_eq!(r.subobjects[3].label(), Some(3));
    }
}
