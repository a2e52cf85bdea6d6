//! Reservation-side processing: Resv, ResvTear, ResvErr and ResvConf (RFC 2209 §3 "RESV MESSAGE
//! ARRIVES" and following), merging requests into installed reservations (OutISBs) and into the
//! requests sent to each previous hop.

use super::list;
use super::merge::{exceeds, lub};
use super::state::{
    Blockade, Downstream, Installed, Oi, OiatPsb, OutIsb, OutIsbRef, PhopId, PsbId, RequestFlow,
    Rsb, RsbId, Selection, SentStyle, SessionId, descriptors, filter_matches,
};
use super::tc::{AdmissionError, TcRequest, admission_error_code, classifier, flowspec_request};
use super::{Event, RsvpEngine, TrafficControl};
use crate::few::Few;
use crate::wire::error::error_code;
use crate::wire::{
    ErrorSpec, FilterSpec, FilterTe, FlowDescriptor, FlowSpec, Message, Opaque, Resv, ResvConf,
    ResvConfirm, ResvErr, ResvTear, RsvpHop, Scope, Session, Style, StyleKind, TimeValues,
};
use pathwise_core::io::{IfIndex, Received};
use pathwise_core::tc::FlowClassifier;
use pathwise_core::time::{Duration, Instant};
use smallvec::SmallVec;

/// A reservation request, from a Resv message or from a local receiver.
#[derive(Debug)]
pub(super) struct ResvRequest {
    pub nhop: Option<RsvpHop>,
    pub oi: Oi,
    pub style: Style,
    pub flows: Few<FlowDescriptor>,
    pub confirm: Option<ResvConfirm>,
    pub scope: Option<Scope>,
    pub carried: Vec<Opaque>,
    pub lifetime: Option<Duration>,
}

/// One reservation to install on an interface: what the RSBs at that interface ask for.
#[derive(Debug)]
struct Unit {
    ifindex: IfIndex,
    ff_sender: Option<FilterSpec>,
    flowspec: FlowSpec,
    psbs: SmallVec<[PsbId; 2]>,
}

/// A session's units: one for an FF reservation of one sender out of one interface, the most
/// common case, without a heap allocation (a new reservation made none of its own before it).
type Units = SmallVec<[Unit; 1]>;

/// The RSBs a request touched, with what to undo: one for an FF request for one sender.
type Touched = SmallVec<[(RsbId, Undo, FlowDescriptor); 1]>;

/// Traffic control refused one reservation unit.
#[derive(Debug, Clone, Copy)]
struct Refused {
    ifindex: IfIndex,
    ff_sender: Option<FilterSpec>,
    err: AdmissionError,
}

/// One RSB a request asks for: the FF sender (if FF), the flowspec, the filters (the request's
/// own, so that comparing an unchanged refresh with the RSB allocates nothing), and where in
/// the request it came from (for error reports and undo).
type WantedRsb<'a> = (Option<FilterSpec>, FlowSpec, &'a [FilterSpec], FromRequest);

/// Where a wanted RSB came from in its request: flow descriptor `flow`, and for FF its filter
/// `filter`. The descriptor itself is built only when it is reported or recorded for undo, so
/// an unchanged refresh allocates none (issue #21's steady state).
#[derive(Clone, Copy, Debug)]
struct FromRequest {
    flow: usize,
    filter: Option<usize>,
}

impl FromRequest {
    /// The flow descriptor this RSB stands for: FF, one per filter with its own LABEL and
    /// RECORD_ROUTE (RFC 3209 §3.2.1); otherwise the request's descriptor.
    fn descriptor(self, req: &ResvRequest) -> FlowDescriptor {
        let f = &req.flows[self.flow];
        match self.filter {
            Some(i) => FlowDescriptor {
                flowspec: f.flowspec,
                filters: Few::One(f.filters[i]),
                te: f.te.get(i).cloned().into_iter().collect(),
            },
            None => f.clone(),
        }
    }

    /// The LABEL and RECORD_ROUTE per filter of that descriptor, without building it.
    fn te(self, req: &ResvRequest) -> &[FilterTe] {
        let f = &req.flows[self.flow];
        match self.filter {
            Some(i) => f.te.get(i).map_or(&[], std::slice::from_ref),
            None => &f.te,
        }
    }
}

/// What this node asks of one previous hop: the style, the flowspec per sender, and the RSBs
/// that contributed.
type Request = (
    Option<StyleKind>,
    SmallVec<[(PsbId, FlowSpec); 2]>,
    SmallVec<[RsbId; 2]>,
);

/// A session's senders grouped by previous hop (`None`: local senders).
type SendersByHop = SmallVec<[(Option<PhopId>, SmallVec<[PsbId; 2]>); 2]>;

/// An error to report for one flow descriptor of a request.
type DescriptorError = ((u8, u16), FlowDescriptor);

/// The state of an RSB before a request changed it: `None` if the request created it.
type Undo = Option<(FlowSpec, Selection)>;

impl<T: TrafficControl> RsvpEngine<T> {
    /// The outgoing interface a Resv (or ResvTear) from downstream is about: the LIH we put in
    /// our Path names it (RFC 2205 §A.2); fall back to the arrival interface for a LIH we did
    /// not issue.
    pub(super) fn resv_oi(&self, hop: &RsvpHop, rx: &Received<'_>) -> IfIndex {
        Some(IfIndex(hop.lih))
            .filter(|i| self.has_interface(*i))
            .unwrap_or(rx.ifindex)
    }

    /// RFC 2209 §3 "RESV MESSAGE ARRIVES".
    pub(super) fn on_resv(&mut self, now: Instant, rx: &Received<'_>, r: Resv) {
        // The next hop is where this node's ResvErr, ResvConf and the hop's state go: a martian
        // one (see `super::martian`) leaves nowhere to answer, and the Resv is dropped.
        if let Some(m) = super::martian::Martian::of(r.hop.addr, self.is_local(r.hop.addr)) {
            self.drop_msg(m.hop_reason());
            return;
        }
        let oi = self.resv_oi(&r.hop, rx);
        let Some(sid) = self.find_session(&r.session) else {
            self.drop_msg("no_path_state");
            let flows = r.flows.clone();
            self.resv_err_to(
                r.session,
                r.hop.plain(),
                Some(oi),
                r.style,
                flows,
                (error_code::NO_PATH_INFORMATION, 0),
            );
            return;
        };
        let req = ResvRequest {
            // The next hop is known by its address and LIH (RFC 3473 §8.1.2).
            nhop: Some(r.hop.plain()),
            oi: Some(oi),
            style: r.style,
            flows: r.flows,
            confirm: r.confirm,
            scope: r.scope,
            carried: r.policy.into_iter().chain(r.forward).collect(),
            lifetime: Some(self.lifetime(r.time_values.refresh_ms)),
        };
        for ((code, value), flow) in self.process_resv(now, sid, &req) {
            self.drop_msg("resv_refused");
            self.resv_err_to(
                r.session,
                r.hop.plain(),
                Some(oi),
                r.style,
                Few::One(flow),
                (code, value),
            );
        }
    }

    /// A ResvErr to a neighbour that is not (or not yet) an RSB of ours.
    pub(super) fn resv_err_to(
        &mut self,
        session: Session,
        to: RsvpHop,
        oi: Oi,
        style: Style,
        flows: Few<FlowDescriptor>,
        (code, value): (u8, u16),
    ) {
        let node = self.iface_addr(oi, session.dest);
        let msg = Message::ResvErr(ResvErr {
            integrity: None,
            session,
            hop: RsvpHop::new(node, to.lih),
            error: ErrorSpec {
                node,
                flags: 0,
                code,
                value,
            },
            scope: None,
            policy: Vec::new(),
            style,
            flows,
            forward: Vec::new(),
        });
        let src = self.iface_addr(oi, to.addr);
        self.transmit(&msg, Some(src), to.addr, oi, false, self.cfg.ttl);
    }

    /// The RSB of this next hop and outgoing interface (and, for FF, this sender).
    fn find_rsb(
        &self,
        sid: SessionId,
        nhop: Option<&RsvpHop>,
        oi: Oi,
        ff: Option<&FilterSpec>,
    ) -> Option<RsbId> {
        self.rsbs_of(sid).find(|&id| {
            let r = &self.rsbs[id];
            r.nhop().map(|h| self.hops.get(h).addr) == nhop.map(|h| h.addr)
                && r.oi() == oi
                && (ff.is_none() || r.filters().first() == ff)
        })
    }

    /// Install or update the RSBs a request asks for, admit the merged reservations, and pass
    /// the change upstream. Returns the errors to report for descriptors that were refused;
    /// admission failures are reported here directly, to the RSB's next hop.
    pub(super) fn process_resv(
        &mut self,
        now: Instant,
        sid: SessionId,
        req: &ResvRequest,
    ) -> Vec<DescriptorError> {
        let style = req.style.kind;
        let refuse_all = |code| req.flows.iter().map(|f| ((code, 0), f.clone())).collect();
        let Some(held_style) = SentStyle::of(style) else {
            return refuse_all(error_code::UNKNOWN_RESERVATION_STYLE);
        };
        if self
            .rsbs_of(sid)
            .any(|id| self.rsbs[id].style() != held_style)
        {
            return refuse_all(error_code::CONFLICTING_RESERVATION_STYLE);
        }
        let mut errors = Vec::new();
        // (FF sender, flowspec, filters, the descriptor it came from) per RSB to install.
        let mut wanted: SmallVec<[WantedRsb<'_>; 1]> = SmallVec::new();
        let lsp = self.is_lsp_session(sid);
        for (fi, f) in req.flows.iter().enumerate() {
            // RFC 3209 §4.1.2: a label this node cannot use is refused with "Unacceptable
            // label value"; a Generalized LABEL with "MPLS label allocation failure" (RFC 3473
            // §2.3.1). A local (egress) request carries none.
            if lsp
                && req.nhop.is_some()
                && let Some(value) = f
                    .filters
                    .iter()
                    .enumerate()
                    .find_map(|(i, s)| self.label_refusal(sid, s, f.te.get(i)))
            {
                errors.push(((error_code::ROUTING_PROBLEM, value), f.clone()));
                continue;
            }
            let Some(fs) = f.flowspec else {
                errors.push(((error_code::TRAFFIC_CONTROL_ERROR, 3), f.clone()));
                continue;
            };
            let known = |s: &FilterSpec| {
                self.psbs_of(sid)
                    .any(|p| filter_matches(s, &self.psbs[p].sender))
            };
            let whole = FromRequest {
                flow: fi,
                filter: None,
            };
            match style {
                StyleKind::Ff => {
                    for (i, filt) in f.filters.iter().enumerate() {
                        let from = FromRequest {
                            flow: fi,
                            filter: Some(i),
                        };
                        if known(filt) {
                            wanted.push((Some(*filt), fs, std::slice::from_ref(filt), from));
                        } else {
                            errors.push((
                                (error_code::NO_SENDER_INFORMATION, 0),
                                from.descriptor(req),
                            ));
                        }
                    }
                }
                StyleKind::Se if !f.filters.iter().any(known) => {
                    errors.push(((error_code::NO_SENDER_INFORMATION, 0), f.clone()))
                }
                StyleKind::Se => wanted.push((None, fs, &f.filters[..], whole)),
                _ => wanted.push((None, fs, &[], whole)),
            }
        }
        // Apply, remembering each RSB's previous state so a refused one can be undone.
        let mut touched = Touched::new();
        let mut scope_changed = false;
        let expires = req.lifetime.map_or(Instant::MAX, |l| now + l);
        // What a wanted RSB selects: its FF sender, the SE list, or WF's every sender.
        let selection = |ff: Option<FilterSpec>, filters: &[FilterSpec]| match (ff, held_style) {
            (Some(f), _) => Selection::Ff(f),
            (None, SentStyle::Se) => Selection::Se(filters.into()),
            (None, _) => Selection::Wf,
        };
        for (ff, fs, filters, from) in wanted {
            let desc_te = from.te(req);
            let id = match self.find_rsb(sid, req.nhop.as_ref(), req.oi, ff.as_ref()) {
                Some(id) => {
                    let r = &self.rsbs[id];
                    let old_fs = *self.flowspecs.get(r.flowspec);
                    if old_fs != fs || r.filters() != filters {
                        let old = r.selection.clone();
                        touched.push((id, Some((old_fs, old)), from.descriptor(req)));
                        let mut slot = r.flowspec;
                        self.flowspecs.replace(&mut slot, fs);
                        let r = &mut self.rsbs[id];
                        r.flowspec = slot;
                        r.selection = selection(ff, filters);
                    }
                    id
                }
                None => {
                    // A next hop's request names its outgoing interface; a local receiver's
                    // neither.
                    let downstream = match (&req.nhop, req.oi) {
                        (Some(h), Some(oi)) => Some(Downstream {
                            nhop: self.hops.acquire(h.clone()),
                            oi,
                        }),
                        _ => None,
                    };
                    let flowspec = self.flowspecs.acquire(fs);
                    let id = self.rsbs.insert(Rsb {
                        next: None,
                        downstream,
                        selection: selection(ff, filters),
                        flowspec,
                        extra: None,
                        expires,
                    });
                    list::push(&mut self.rsbs, &mut self.sessions[sid].rsbs, id, |r| {
                        &mut r.next
                    });
                    if let (Some(h), Some(oi)) = (&req.nhop, req.oi) {
                        self.hello_acquire(oi, h.addr);
                    }
                    touched.push((id, None, from.descriptor(req)));
                    id
                }
            };
            let r = &mut self.rsbs[id];
            if req.scope.as_ref() != r.scope()
                || r.carried() != req.carried.as_slice()
                || r.te() != desc_te
                || req.confirm.is_some()
            {
                scope_changed |= req.scope.as_ref() != r.scope();
                r.with_extra(|e| {
                    e.scope.clone_from(&req.scope);
                    e.carried.clone_from(&req.carried);
                    e.te.clear();
                    e.te.extend_from_slice(desc_te);
                    if req.confirm.is_some() {
                        e.confirm = req.confirm;
                    }
                });
            }
            r.expires = expires;
        }
        self.schedule_session(sid);
        if !touched.is_empty() || scope_changed {
            let refused = self.apply_reservations(sid);
            if !refused.is_empty() {
                self.undo_refused(sid, &refused, touched);
                self.apply_reservations(sid);
            }
        }
        self.refresh_upstream(sid, false);
        errors
    }

    /// Admission failed for some units: undo the RSB changes of this request that fed them and
    /// tell their next hops (ResvErr code 1, InPlace when an older reservation remains).
    fn undo_refused(&mut self, sid: SessionId, refused: &[Refused], touched: Touched) {
        for (id, old, desc) in touched {
            if !self.rsbs.contains(id) {
                continue;
            }
            let r = &self.rsbs[id];
            let Some(fail) = refused.iter().find(|f| {
                Some(f.ifindex) == r.oi()
                    && f.ff_sender.is_none_or(|s| r.filters().first() == Some(&s))
            }) else {
                continue;
            };
            self.counters.admission_failures += 1;
            let (code, value) = admission_error_code(fail.err);
            let node = self.iface_addr(r.oi(), self.session_dest(sid).addr);
            let flags = if old.is_some() {
                ErrorSpec::IN_PLACE
            } else {
                0
            };
            self.send_resv_err(
                sid,
                id,
                ErrorSpec {
                    node,
                    flags,
                    code,
                    value,
                },
                Few::One(desc),
            );
            match old {
                Some((fs, selection)) => {
                    let mut slot = self.rsbs[id].flowspec;
                    self.flowspecs.replace(&mut slot, fs);
                    let r = &mut self.rsbs[id];
                    r.flowspec = slot;
                    r.selection = selection;
                    r.with_extra(|e| e.confirm = None);
                }
                None => self.remove_rsb(sid, id),
            }
        }
    }

    /// The reservation units the session's RSBs ask for on each outgoing interface
    /// (RFC 2205 §3.4): FF one per sender, WF/SE one shared, flowspecs merged to their LUB.
    fn desired_units(&self, sid: SessionId) -> Units {
        let mut units = Units::new();
        for rid in self.rsbs_of(sid) {
            let r = &self.rsbs[rid];
            let Some(ifindex) = r.oi() else { continue };
            let fs = *self.flowspecs.get(r.flowspec);
            for pid in self.psbs_of(sid) {
                let p = &self.psbs[pid];
                if !p.oifs.contains(&r.oi()) || !r.covers(&p.sender) {
                    continue;
                }
                let ff_sender = (r.style() == SentStyle::Ff).then_some(p.sender);
                match units
                    .iter_mut()
                    .find(|u| u.ifindex == ifindex && u.ff_sender == ff_sender)
                {
                    Some(u) => {
                        u.flowspec = lub(&u.flowspec, &fs);
                        if !u.psbs.contains(&pid) {
                            u.psbs.push(pid);
                        }
                    }
                    None => units.push(Unit {
                        ifindex,
                        ff_sender,
                        flowspec: fs,
                        psbs: SmallVec::from_elem(pid, 1),
                    }),
                }
            }
        }
        units
    }

    /// What traffic control classifies a unit's packets by: its senders' filters in the
    /// session (one for FF, kept inline).
    fn classifiers(&self, session: &Session, psbs: &[PsbId]) -> SmallVec<[FlowClassifier; 1]> {
        psbs.iter()
            .map(|&p| classifier(session, &self.psbs[p].sender))
            .collect()
    }

    /// The FF sender an OutISB is for (its one OIatPSB), or `None` for a shared reservation.
    fn ff_sender(&self, oid: OutIsbRef) -> Option<FilterSpec> {
        if !self.is_ff(oid) {
            return None;
        }
        self.psbs_served(oid).next().map(|p| self.psbs[p].sender)
    }

    /// Make the installed reservations (OutISBs) match what the RSBs ask for, through traffic
    /// control. Units traffic control refuses keep their previous reservation (or none).
    fn apply_reservations(&mut self, sid: SessionId) -> Vec<Refused> {
        let mut units = self.desired_units(sid);
        let mut refused = Vec::new();
        let session = self.session_key(sid);
        let existing: SmallVec<[OutIsbRef; 4]> = self.out_isbs_of(sid).collect();
        for oid in existing {
            let (ifindex, ff) = (self.installed(oid).ifindex, self.ff_sender(oid));
            let Some(pos) = units
                .iter()
                .position(|u| u.ifindex == ifindex && u.ff_sender == ff)
            else {
                self.remove_out_isb(sid, oid);
                continue;
            };
            let u = units.swap_remove(pos);
            let linked: SmallVec<[PsbId; 2]> = self.psbs_served(oid).collect();
            let same_psbs =
                linked.len() == u.psbs.len() && u.psbs.iter().all(|p| linked.contains(p));
            let o = *self.installed(oid);
            if *self.flowspecs.get(o.flowspec) == u.flowspec && same_psbs {
                continue;
            }
            let classifiers = self.classifiers(&session, &u.psbs);
            let (tspec, rate) = flowspec_request(&u.flowspec);
            let req = TcRequest {
                tspec,
                rate,
                classifiers: &classifiers,
            };
            let handle = o.tc;
            match self.admit(sid, ifindex, &u.psbs, |tc| tc.modify(handle, req)) {
                Ok(()) => {
                    let mut slot = o.flowspec;
                    self.flowspecs.replace(&mut slot, u.flowspec);
                    self.installed_mut(oid).flowspec = slot;
                    self.relink(oid, &u.psbs);
                }
                Err(err) => refused.push(Refused {
                    ifindex,
                    ff_sender: ff,
                    err,
                }),
            }
        }
        for u in units {
            let classifiers = self.classifiers(&session, &u.psbs);
            let (tspec, rate) = flowspec_request(&u.flowspec);
            let req = TcRequest {
                tspec,
                rate,
                classifiers: &classifiers,
            };
            match self.admit(sid, u.ifindex, &u.psbs, |tc| tc.reserve(u.ifindex, req)) {
                Ok(tc) => {
                    let installed = Installed {
                        ifindex: u.ifindex,
                        flowspec: self.flowspecs.acquire(u.flowspec),
                        tc,
                    };
                    // An FF unit serves the one PSB of its sender (RFC 2205 §3.4), which holds
                    // the reservation unless it holds one on another interface already.
                    if let (Some(_), &[p]) = (u.ff_sender, u.psbs.as_slice())
                        && self.psbs[p].ff_installed.is_none()
                    {
                        self.psbs[p].ff_installed = Some(installed);
                        self.out_isbs_in_psbs += 1;
                        continue;
                    }
                    let oid = self.out_isbs.insert(OutIsb {
                        session: sid,
                        next: None,
                        ff: u.ff_sender.is_some(),
                        installed,
                        oiats: None,
                    });
                    list::push(
                        &mut self.out_isbs,
                        &mut self.sessions[sid].out_isbs,
                        oid,
                        |o| &mut o.next,
                    );
                    self.relink(OutIsbRef::Block(oid), &u.psbs);
                }
                Err(err) => refused.push(Refused {
                    ifindex: u.ifindex,
                    ff_sender: u.ff_sender,
                    err,
                }),
            }
        }
        refused
    }

    /// Point an OutISB's OIatPSB relations at exactly `psbs`. One held in a PSB serves that
    /// PSB and no other: its unit's senders never change (see `apply_reservations`).
    fn relink(&mut self, oid: OutIsbRef, psbs: &[PsbId]) {
        let OutIsbRef::Block(oid) = oid else {
            debug_assert_eq!(
                psbs,
                &[match oid {
                    OutIsbRef::InPsb(p) => p,
                    OutIsbRef::Block(_) => unreachable!(),
                }]
            );
            return;
        };
        let current: SmallVec<[_; 2]> =
            list::iter(&self.oiats, self.out_isbs[oid].oiats, |x| x.next_of_out).collect();
        for x in current {
            let p = self.oiats[x].psb;
            if !psbs.contains(&p) {
                self.unlink_oiat(x);
            }
        }
        for &p in psbs {
            if !self.psbs_served(OutIsbRef::Block(oid)).any(|q| q == p) {
                let x = self.oiats.insert(OiatPsb {
                    out_isb: oid,
                    psb: p,
                    next_of_out: None,
                    next_of_psb: None,
                });
                list::push(&mut self.oiats, &mut self.out_isbs[oid].oiats, x, |r| {
                    &mut r.next_of_out
                });
                list::push(&mut self.oiats, &mut self.psbs[p].oiats, x, |r| {
                    &mut r.next_of_psb
                });
            }
        }
    }

    /// Take an OIatPSB off both its lists and free it.
    fn unlink_oiat(&mut self, x: super::state::OiatId) {
        let OiatPsb { out_isb, psb, .. } = self.oiats[x];
        list::unlink(&mut self.oiats, &mut self.out_isbs[out_isb].oiats, x, |r| {
            &mut r.next_of_out
        });
        list::unlink(&mut self.oiats, &mut self.psbs[psb].oiats, x, |r| {
            &mut r.next_of_psb
        });
        self.oiats.remove(x);
    }

    /// Release an installed reservation.
    pub(super) fn remove_out_isb(&mut self, sid: SessionId, oid: OutIsbRef) {
        let oid = match oid {
            OutIsbRef::InPsb(p) => {
                let o = self.psbs[p]
                    .ff_installed
                    .take()
                    .expect("an OutIsbRef::InPsb names a PSB holding a reservation");
                self.out_isbs_in_psbs -= 1;
                self.tc.release(o.tc);
                self.flowspecs.release(o.flowspec);
                return;
            }
            OutIsbRef::Block(b) => b,
        };
        let rels: SmallVec<[_; 2]> =
            list::iter(&self.oiats, self.out_isbs[oid].oiats, |x| x.next_of_out).collect();
        for x in rels {
            self.unlink_oiat(x);
        }
        list::unlink(
            &mut self.out_isbs,
            &mut self.sessions[sid].out_isbs,
            oid,
            |o| &mut o.next,
        );
        let o = self.out_isbs.remove(oid).installed;
        self.tc.release(o.tc);
        self.flowspecs.release(o.flowspec);
    }

    /// Delete an RSB (its reservation is re-merged by the caller).
    pub(super) fn remove_rsb(&mut self, sid: SessionId, id: RsbId) {
        list::unlink(&mut self.rsbs, &mut self.sessions[sid].rsbs, id, |r| {
            &mut r.next
        });
        let r = self.rsbs.remove(id);
        self.flowspecs.release(r.flowspec);
        if let Some(d) = r.downstream {
            let addr = self.hops.get(d.nhop).addr;
            self.hello_release(d.oi, addr);
            self.hops.release(d.nhop);
            self.forget_resv_from(sid, addr);
        }
    }

    /// Re-merge after any change of path or reservation state: installed reservations, the
    /// requests to previous hops, and what local senders are told.
    pub(super) fn update_reservations(&mut self, sid: SessionId) {
        for f in self.apply_reservations(sid) {
            // Path changes moved a reservation somewhere it does not fit: the requests that fed
            // it learn by ResvErr; the reservation stays off until they change or go.
            let rsbs: SmallVec<[RsbId; 2]> = self
                .rsbs_of(sid)
                .filter(|&id| self.rsbs[id].oi() == Some(f.ifindex))
                .collect();
            for id in rsbs {
                self.counters.admission_failures += 1;
                let (code, value) = admission_error_code(f.err);
                let r = &self.rsbs[id];
                let node = self.iface_addr(r.oi(), self.session_dest(sid).addr);
                let desc = FlowDescriptor {
                    flowspec: Some(*self.flowspecs.get(r.flowspec)),
                    filters: r.filters().iter().copied().collect(),
                    te: Vec::new(),
                };
                self.send_resv_err(
                    sid,
                    id,
                    ErrorSpec {
                        node,
                        flags: 0,
                        code,
                        value,
                    },
                    Few::One(desc),
                );
            }
        }
        self.refresh_upstream(sid, false);
    }

    /// What this node asks, for each of `senders`, of the previous hop they share (`None`: local
    /// senders), merged per style (RFC 2205 §3.4); and the RSBs that contributed.
    fn request_for(&self, sid: SessionId, senders: &[PsbId], local: bool) -> Request {
        let Some(first) = self.sessions[sid].rsbs else {
            return (None, SmallVec::new(), SmallVec::new());
        };
        let style = self.rsbs[first].style();
        // RSB `r` asks for sender `p` on a path the sender's data actually takes (a local
        // receiver's request for a local sender needs nothing from the network).
        let serves = |r: &Rsb, p: PsbId| {
            let psb = &self.psbs[p];
            psb.oifs.contains(&r.oi()) && r.covers(&psb.sender) && !(local && r.oi().is_none())
        };
        let mut per_sender: SmallVec<[(PsbId, FlowSpec); 2]> = SmallVec::new();
        let mut contributing: SmallVec<[RsbId; 2]> = SmallVec::new();
        if style == SentStyle::Ff {
            for &p in senders {
                let mut merged: Option<FlowSpec> = None;
                let serving = self
                    .rsbs_of(sid)
                    .filter(|&r| serves(&self.rsbs[r], p))
                    .collect();
                for r in self.unblockaded(serving, self.psbs[p].blockade()) {
                    let fs = self.flowspecs.get(self.rsbs[r].flowspec);
                    merged = Some(merged.map_or(*fs, |m| lub(&m, fs)));
                    if !contributing.contains(&r) {
                        contributing.push(r);
                    }
                }
                per_sender.extend(merged.map(|m| (p, m)));
            }
        } else {
            // One shared reservation: the LUB of every request that serves any of the senders,
            // applied to the senders some request covers (all of them for WF).
            let serving = self
                .rsbs_of(sid)
                .filter(|&r| senders.iter().any(|&p| serves(&self.rsbs[r], p)))
                .collect();
            let blockade = senders.iter().find_map(|&p| self.psbs[p].blockade());
            contributing = self.unblockaded(serving, blockade);
            let merged = contributing
                .iter()
                .map(|&r| self.flowspecs.get(self.rsbs[r].flowspec))
                .fold(None, |acc: Option<FlowSpec>, f| {
                    Some(acc.map_or(*f, |a| lub(&a, f)))
                });
            if let Some(m) = merged {
                for &p in senders {
                    if contributing
                        .iter()
                        .any(|&r| self.rsbs[r].covers(&self.psbs[p].sender))
                    {
                        per_sender.push((p, m));
                    }
                }
            }
        }
        (Some(style.kind()), per_sender, contributing)
    }

    /// Blockade (RFC 2205 §3.5): requests at least as large as the flowspec Qb that failed
    /// upstream are left out of the merge, so smaller requests get through instead of failing
    /// with the "killer" — unless every request is that large, when all are merged as usual.
    fn unblockaded(
        &self,
        rsbs: SmallVec<[RsbId; 2]>,
        blockade: Option<&Blockade>,
    ) -> SmallVec<[RsbId; 2]> {
        let Some(b) = blockade else { return rsbs };
        let below: SmallVec<[RsbId; 2]> = rsbs
            .iter()
            .copied()
            .filter(|&r| exceeds(&b.flowspec, self.flowspecs.get(self.rsbs[r].flowspec)))
            .collect();
        if below.is_empty() { rsbs } else { below }
    }

    /// The request (flattened) that `per_sender` makes in `style`.
    fn request_flows(
        &self,
        style: StyleKind,
        per_sender: &[(PsbId, FlowSpec)],
    ) -> SmallVec<[RequestFlow; 2]> {
        match style {
            StyleKind::Wf => per_sender
                .first()
                .map(|&(_, flowspec)| RequestFlow {
                    flowspec,
                    filter: None,
                })
                .into_iter()
                .collect(),
            _ => per_sender
                .iter()
                .map(|&(p, flowspec)| RequestFlow {
                    flowspec,
                    filter: Some(self.psbs[p].sender),
                })
                .collect(),
        }
    }

    /// What was last asked of a previous hop for `senders`, from their `sent` records.
    fn sent_flows(&self, style: StyleKind, senders: &[PsbId]) -> SmallVec<[RequestFlow; 2]> {
        let per_sender: SmallVec<[(PsbId, FlowSpec); 2]> = senders
            .iter()
            .filter_map(|&p| self.psbs[p].sent.map(|s| (p, *self.flowspecs.get(s))))
            .collect();
        self.request_flows(style, &per_sender)
    }

    /// Record what was asked of each sender's previous hop.
    fn set_sent(&mut self, senders: &[PsbId], per_sender: &[(PsbId, FlowSpec)]) {
        for &p in senders {
            let want = per_sender.iter().find(|(q, _)| *q == p).map(|&(_, f)| f);
            let have = self.psbs[p].sent;
            match (have, want) {
                (Some(mut slot), Some(f)) => {
                    self.flowspecs.replace(&mut slot, f);
                    self.psbs[p].sent = Some(slot);
                }
                (None, Some(f)) => self.psbs[p].sent = Some(self.flowspecs.acquire(f)),
                (Some(slot), None) => {
                    self.flowspecs.release(slot);
                    self.psbs[p].sent = None;
                }
                (None, None) => {}
            }
        }
    }

    /// Send each previous hop the merged request for its senders when it changed (or always,
    /// on refresh); tear requests that vanished; answer or forward confirmations; tell local
    /// senders about their reservations.
    pub(super) fn refresh_upstream(&mut self, sid: SessionId, force: bool) {
        let lsp = self.is_lsp_session(sid);
        if lsp {
            self.sync_labels(sid);
        }
        let mut groups: SendersByHop = SmallVec::new();
        for p in self.psbs_of(sid) {
            let ph = self.psbs[p].phop();
            match groups.iter_mut().find(|(g, _)| *g == ph) {
                Some((_, v)) => v.push(p),
                None => groups.push((ph, SmallVec::from_elem(p, 1))),
            }
        }
        for (ph, senders) in groups {
            let (style, mut per_sender, contributing) =
                self.request_for(sid, &senders, ph.is_none());
            // An LSP is asked for upstream only with a label of ours to give (RFC 3209 §4.1).
            per_sender.retain(|(p, _)| self.has_upstream_label(*p));
            let Some(ph) = ph else {
                self.notify_local_senders(sid, &senders, &per_sender);
                if let Some(s) = style.filter(|_| self.confirm_pending(&contributing)) {
                    let flows = descriptors(s, &self.request_flows(s, &per_sender));
                    self.confirm_here(sid, &contributing, style, &flows);
                }
                continue;
            };
            let prev_style = self.sessions[sid].upstream_style.map(SentStyle::kind);
            let prev = prev_style
                .map(|s| self.sent_flows(s, &senders))
                .unwrap_or_default();
            let Some(style) = style.filter(|_| !per_sender.is_empty()) else {
                if let (Some(s), false) = (prev_style, prev.is_empty()) {
                    self.send_resv_tear(sid, ph, s, descriptors(s, &prev));
                    self.set_sent(&senders, &[]);
                }
                continue;
            };
            let now_flows = self.request_flows(style, &per_sender);
            let same_style = prev_style == Some(style);
            let grew = !same_style || request_grew(&prev, &now_flows);
            // The descriptors are built only for what uses them: an LSP's labels and recorded
            // routes (which travel with their FILTER_SPECs; a new one is news), a message to
            // send, a confirmation to answer. An unchanged refresh builds none.
            let mut flows = lsp.then(|| descriptors(style, &now_flows));
            let te_changed = match &mut flows {
                Some(f) => self.attach_te(sid, f),
                None => false,
            };
            let changed = !same_style || prev != now_flows || te_changed;
            if !changed && !force {
                // Nothing new travels upstream: confirmations are answered here.
                if self.confirm_pending(&contributing) {
                    let flows = flows.unwrap_or_else(|| descriptors(style, &now_flows));
                    self.confirm_here(sid, &contributing, Some(style), &flows);
                }
                continue;
            }
            let flows = flows.unwrap_or_else(|| descriptors(style, &now_flows));
            // A request that grows carries one confirmation upstream (the sender side answers
            // it); one that does not grow is confirmed here (RFC 2205 §3.1.4).
            let confirm = if grew {
                self.take_confirm(&contributing)
            } else {
                None
            };
            if !grew {
                self.confirm_here(sid, &contributing, Some(style), &flows);
            }
            self.set_sent(&senders, &per_sender);
            self.sessions[sid].upstream_style = SentStyle::of(style);
            self.send_resv(sid, ph, style, flows, confirm, &contributing);
        }
    }

    /// A sender moves away from its previous hop (route change upstream): tear down what we
    /// asked of that hop for it, unless (wildcard) other senders behind the hop still need it.
    pub(super) fn withdraw_upstream(&mut self, psb: PsbId) {
        let (Some(sent), Some(ph)) = (self.psbs[psb].sent, self.psbs[psb].phop()) else {
            return;
        };
        let sid = self.psbs[psb].session;
        let Some(style) = self.sessions[sid].upstream_style.map(SentStyle::kind) else {
            return;
        };
        let others_need_it = style == StyleKind::Wf
            && self.psbs_of(sid).any(|q| {
                q != psb && self.psbs[q].phop() == Some(ph) && self.psbs[q].sent.is_some()
            });
        if !others_need_it {
            let flow = RequestFlow {
                flowspec: *self.flowspecs.get(sent),
                filter: (style != StyleKind::Wf).then_some(self.psbs[psb].sender),
            };
            self.send_resv_tear(sid, ph, style, descriptors(style, &[flow]));
        }
        self.flowspecs.release(sent);
        self.psbs[psb].sent = None;
    }

    /// Whether any of `contributing` waits for a confirmation.
    fn confirm_pending(&self, contributing: &[RsbId]) -> bool {
        contributing.iter().any(|&r| self.rsbs[r].confirm_pending())
    }

    fn take_confirm(&mut self, contributing: &[RsbId]) -> Option<ResvConfirm> {
        contributing
            .iter()
            .find_map(|&r| self.rsbs[r].with_extra(|e| e.confirm.take()))
    }

    /// Answer the pending confirmations of `contributing` with ResvConf from this node.
    fn confirm_here(
        &mut self,
        sid: SessionId,
        contributing: &[RsbId],
        style: Option<StyleKind>,
        flows: &[FlowDescriptor],
    ) {
        let Some(kind) = style else { return };
        for &r in contributing {
            if let Some(c) = self.rsbs[r].with_extra(|e| e.confirm.take()) {
                self.send_resv_conf(
                    sid,
                    c,
                    Style { flags: 0, kind },
                    flows.iter().cloned().collect(),
                );
            }
        }
    }

    fn send_resv(
        &mut self,
        sid: SessionId,
        ph: PhopId,
        style: StyleKind,
        flows: Few<FlowDescriptor>,
        confirm: Option<ResvConfirm>,
        contributing: &[RsbId],
    ) {
        let session = self.session_key(sid);
        let (hop, ifx) = (self.phops[ph].hop.clone(), self.phops[ph].ifindex);
        // Wildcard requests name the senders they are for when several previous hops feed the
        // session, so they are not looped back to senders elsewhere (RFC 2205 §3.4 SCOPE).
        let several = self
            .psbs_of(sid)
            .any(|p| self.psbs[p].phop().is_some_and(|q| q != ph));
        let scope = (style == StyleKind::Wf && several).then(|| Scope {
            addrs: self
                .psbs_of(sid)
                .filter(|&p| self.psbs[p].phop() == Some(ph))
                .map(|p| self.psbs[p].sender.src())
                .collect(),
        });
        let mut forward: Vec<Opaque> = Vec::new();
        for &r in contributing {
            for o in self.rsbs[r].carried() {
                if o.class != crate::wire::objects::class::POLICY_DATA && !forward.contains(o) {
                    forward.push(o.clone());
                }
            }
        }
        let msg = Message::Resv(Resv {
            integrity: None,
            session,
            hop: self.hop_towards_phop(sid, ph),
            time_values: TimeValues {
                refresh_ms: self.refresh_ms(),
            },
            confirm,
            scope,
            policy: Vec::new(),
            style: Style {
                flags: 0,
                kind: style,
            },
            flows,
            forward,
        });
        let src = self.iface_addr(Some(ifx), hop.addr);
        let key = super::refresh::OutKey::Resv(sid, hop.addr);
        let to = (Some(src), hop.addr, Some(ifx), false, self.cfg.ttl);
        self.transmit_keyed(&msg, to, Some(key));
    }

    /// Our RSVP_HOP in a Resv or ResvTear to the previous hop `ph`: the address of our
    /// interface towards it and its LIH (RFC 2205 §3.1.4); in the IF_ID form with the TLVs of
    /// the session's LSPs from that hop when their Path carried some (RFC 3473 §8.1.2: a node
    /// "saves their values and returns them in the HOP objects of subsequent Resv messages").
    /// The ResvTear takes them too: it names the same hop as the Resv it removes.
    fn hop_towards_phop(&self, sid: SessionId, ph: PhopId) -> RsvpHop {
        let session = self.session_key(sid);
        let (lih, ifx) = (self.phops[ph].hop.lih, self.phops[ph].ifindex);
        let mut hop = RsvpHop::new(self.iface_addr(Some(ifx), session.dest), lih);
        hop.if_id = self
            .psbs_of(sid)
            .filter(|&p| self.psbs[p].phop() == Some(ph))
            .find_map(|p| self.psbs[p].te().and_then(|t| t.phop_if_id.clone()));
        hop
    }

    fn send_resv_tear(
        &mut self,
        sid: SessionId,
        ph: PhopId,
        style: StyleKind,
        flows: Few<FlowDescriptor>,
    ) {
        let session = self.session_key(sid);
        let (hop, ifx) = (self.phops[ph].hop.clone(), self.phops[ph].ifindex);
        self.forget_resv(sid, hop.addr);
        let msg = Message::ResvTear(ResvTear {
            integrity: None,
            session,
            hop: self.hop_towards_phop(sid, ph),
            scope: None,
            style: Style {
                flags: 0,
                kind: style,
            },
            flows,
            forward: Vec::new(),
        });
        let src = self.iface_addr(Some(ifx), hop.addr);
        self.transmit(&msg, Some(src), hop.addr, Some(ifx), false, self.cfg.ttl);
    }

    /// RESV_EVENT to each local sender whose reservation changed.
    fn notify_local_senders(
        &mut self,
        sid: SessionId,
        senders: &[PsbId],
        per_sender: &[(PsbId, FlowSpec)],
    ) {
        let session = self.session_key(sid);
        for &p in senders {
            let fs = per_sender.iter().find(|(q, _)| *q == p).map(|&(_, f)| f);
            if fs != self.reported.get(&p).copied() {
                match fs {
                    Some(f) => self.reported.insert(p, f),
                    None => self.reported.remove(&p),
                };
                self.events.push_back(Event::ResvState {
                    session,
                    sender: self.psbs[p].sender,
                    flowspec: fs,
                });
            }
        }
    }

    /// RFC 2209 §3 "RESVTEAR MESSAGE ARRIVES".
    pub(super) fn on_resv_tear(&mut self, rx: &Received<'_>, t: ResvTear) {
        let oi = self.resv_oi(&t.hop, rx);
        let Some(sid) = self.find_session(&t.session) else {
            // Nothing left to tear (RFC 2209 §3, RTEAR processing finds no state): most often
            // a receiver's ResvTear crossing its sender's PathTear, which removed the session
            // here first. Counted apart from the other unknown-session drops, which would
            // point at lost state rather than at a race of two tears.
            self.drop_msg("resv_tear_unknown_session");
            return;
        };
        if self.tear_requests(sid, Some(t.hop.addr), Some(oi), t.style.kind, &t.flows) == 0 {
            self.drop_msg("no_matching_resv_state");
            return;
        }
        self.update_reservations(sid);
    }

    /// Delete the RSBs of one next hop that a teardown names; returns how many it named.
    pub(super) fn tear_requests(
        &mut self,
        sid: SessionId,
        nhop: Option<std::net::IpAddr>,
        oi: Oi,
        style: StyleKind,
        flows: &[FlowDescriptor],
    ) -> usize {
        let named = |r: &Rsb| {
            flows
                .iter()
                .flat_map(|f| &f.filters)
                .any(|f| r.filters().contains(f))
        };
        let victims: SmallVec<[RsbId; 2]> = self
            .rsbs_of(sid)
            .filter(|&id| {
                let r = &self.rsbs[id];
                r.nhop().map(|h| self.hops.get(h).addr) == nhop
                    && r.oi() == oi
                    && (style == StyleKind::Wf || named(r))
            })
            .collect();
        for &id in &victims {
            if style == StyleKind::Se {
                // SE: drop just the named senders; the request goes when none is left.
                let named = |f: &FilterSpec| flows.iter().flat_map(|d| &d.filters).any(|x| x == f);
                if self.rsbs[id].selection.retain(|f| !named(f)) {
                    continue;
                }
            }
            self.remove_rsb(sid, id);
        }
        victims.len()
    }

    /// RFC 2209 §3 "RESVERR MESSAGE ARRIVES": pass it to every next hop whose request it is
    /// about, or to the local receiver.
    pub(super) fn on_resv_err(&mut self, now: Instant, e: ResvErr) {
        let Some(sid) = self.find_session(&e.session) else {
            self.drop_msg("unknown_session");
            return;
        };
        let named: SmallVec<[FilterSpec; 2]> = e
            .flows
            .iter()
            .flat_map(|f| f.filters.iter().copied())
            .collect();
        let mut seen: SmallVec<[(Option<std::net::IpAddr>, Oi); 2]> = SmallVec::new();
        let mut targets: SmallVec<[RsbId; 2]> = SmallVec::new();
        for id in self.rsbs_of(sid) {
            let r = &self.rsbs[id];
            let hit = named.is_empty()
                || r.style() == SentStyle::Wf
                || named.iter().any(|f| r.filters().contains(f));
            let key = (r.nhop().map(|h| self.hops.get(h).addr), r.oi());
            if hit && !seen.contains(&key) {
                seen.push(key);
                targets.push(id);
            }
        }
        if targets.is_empty() {
            self.drop_msg("no_matching_resv_state");
            return;
        }
        // An admission failure upstream puts the senders it concerns under blockade (RFC 2205
        // §3.5): those named, behind the previous hop that reported it.
        let admission = e.error.code == error_code::ADMISSION_CONTROL_FAILURE;
        let qe = e
            .flows
            .iter()
            .find_map(|f| f.flowspec)
            .filter(|_| admission);
        if let Some(qe) = qe {
            let expires = now + self.cfg.refresh * self.cfg.blockade_multiplier;
            let blocked: SmallVec<[PsbId; 2]> = self
                .psbs_of(sid)
                .filter(|&p| {
                    let psb = &self.psbs[p];
                    psb.phop()
                        .is_some_and(|ph| self.phops[ph].hop.addr == e.hop.addr)
                        && (named.is_empty()
                            || named.iter().any(|f| filter_matches(f, &psb.sender)))
                })
                .collect();
            for p in blocked {
                self.psbs[p].set_blockade(Some(Blockade {
                    flowspec: qe,
                    expires,
                }));
            }
        }
        for id in targets {
            // Next hops whose own request is smaller than the one that failed did not cause it.
            let mut error = e.error;
            if qe.is_some_and(|q| exceeds(&q, self.flowspecs.get(self.rsbs[id].flowspec))) {
                error.flags |= ErrorSpec::NOT_GUILTY;
            }
            self.send_resv_err(sid, id, error, e.flows.clone());
        }
        if qe.is_some() {
            self.schedule_session(sid);
            self.refresh_upstream(sid, false);
        }
    }

    /// A ResvErr reached the receiver: tell the application, and withdraw a request that could
    /// not be admitted end to end (see `Config::release_on_admission_failure`).
    pub(super) fn receiver_error(
        &mut self,
        sid: SessionId,
        error: ErrorSpec,
        flows: Few<FlowDescriptor>,
    ) {
        let session = self.session_key(sid);
        let release = self.cfg.release_on_admission_failure
            && error.code == error_code::ADMISSION_CONTROL_FAILURE
            && error.flags & (ErrorSpec::IN_PLACE | ErrorSpec::NOT_GUILTY) == 0;
        if release {
            // Released on the application's behalf: its kept request goes too, or the next
            // Path would send it again.
            self.receivers.remove(&session.identity());
            let locals: SmallVec<[RsbId; 2]> = self
                .rsbs_of(sid)
                .filter(|&r| self.rsbs[r].nhop().is_none())
                .collect();
            for r in locals {
                self.remove_rsb(sid, r);
            }
            self.pending_updates.push(sid);
        }
        self.events.push_back(Event::ResvError {
            session,
            error,
            flows,
            released: release,
        });
    }

    /// RFC 2209 §3 "RESVCONF MESSAGE ARRIVES": deliver it if it is for a local receiver, else
    /// pass it on towards the receiver.
    pub(super) fn on_resv_conf(&mut self, rx: &Received<'_>, c: ResvConf) {
        if self.is_local(c.confirm.receiver) {
            self.events.push_back(Event::Confirmed {
                session: c.session,
                from: c.error.node,
                flows: c.flows,
            });
            return;
        }
        let ttl = rx.ttl.saturating_sub(1);
        if ttl == 0 {
            self.drop_msg("ttl_expired");
            return;
        }
        // Sent from our own address, as every hop-by-hop message is: the next hop identifies
        // its neighbour by the source of a message without RSVP_HOP (RFC 2747 §4.2).
        let to = c.confirm.receiver;
        let src = self.iface_addr(None, to);
        self.transmit(&Message::ResvConf(c), Some(src), to, None, true, ttl);
    }
}

/// Whether `new` asks upstream for anything `old` did not.
fn request_grew(old: &[RequestFlow], new: &[RequestFlow]) -> bool {
    new.iter()
        .any(|n| match old.iter().find(|o| o.filter == n.filter) {
            Some(o) => exceeds(&n.flowspec, &o.flowspec),
            None => true,
        })
}
