//! Reservation-side processing: Resv, ResvTear, ResvErr and ResvConf (RFC 2209 §3 "RESV MESSAGE
//! ARRIVES" and following), merging requests into installed reservations (OutISBs) and into the
//! requests sent to each previous hop.

use super::merge::{exceeds, lub, lub_all};
use super::state::{Oi, OiatPsb, OutIsb, PhopId, PsbId, Rsb, RsbId, SessionId, Upstream};
use super::tc::{AdmissionError, TcRequest};
use super::{Event, RsvpEngine, Timer, TrafficControl};
use crate::wire::error::error_code;
use crate::wire::{
    ErrorSpec, FilterSpec, FlowDescriptor, FlowSpec, Message, Opaque, Resv, ResvConf, ResvConfirm,
    ResvErr, ResvTear, RsvpHop, Scope, Style, StyleKind, TimeValues,
};
use pathwise_core::io::{IfIndex, Received};
use pathwise_core::time::{Duration, Instant};
use smallvec::SmallVec;

/// A reservation request, from a Resv message or from a local receiver.
#[derive(Debug)]
pub(super) struct ResvRequest {
    pub nhop: Option<RsvpHop>,
    pub oi: Oi,
    pub style: Style,
    pub flows: Vec<FlowDescriptor>,
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

/// Traffic control refused one reservation unit.
#[derive(Debug, Clone, Copy)]
struct Refused {
    ifindex: IfIndex,
    ff_sender: Option<FilterSpec>,
    err: AdmissionError,
}

/// An error to report for one flow descriptor of a request.
type DescriptorError = ((u8, u16), FlowDescriptor);

impl<T: TrafficControl> RsvpEngine<T> {
    /// RFC 2209 §3 "RESV MESSAGE ARRIVES".
    pub(super) fn on_resv(&mut self, now: Instant, rx: &Received<'_>, r: Resv) {
        // The LIH we put in our Path names the outgoing interface the Resv is for (RFC 2205
        // §A.2); fall back to the arrival interface for a LIH we did not issue.
        let oi = Some(IfIndex(r.hop.lih))
            .filter(|i| self.has_interface(*i))
            .unwrap_or(rx.ifindex);
        let Some(&sid) = self.session_index.get(&r.session) else {
            self.drop_msg("no_path_state");
            let flows = r.flows.clone();
            self.resv_err_to(
                r.session,
                r.hop,
                Some(oi),
                r.style,
                flows,
                (error_code::NO_PATH_INFORMATION, 0),
                0,
            );
            return;
        };
        let req = ResvRequest {
            nhop: Some(r.hop),
            oi: Some(oi),
            style: r.style,
            flows: r.flows,
            confirm: r.confirm,
            scope: r.scope,
            carried: r.policy.into_iter().chain(r.forward).collect(),
            lifetime: Some(self.lifetime(r.time_values.refresh_ms)),
        };
        let errors = self.process_resv(now, sid, req.nhop, &req);
        for ((code, value), flow) in errors {
            self.drop_msg("resv_refused");
            self.resv_err_to(
                r.session,
                r.hop,
                Some(oi),
                r.style,
                vec![flow],
                (code, value),
                0,
            );
        }
    }

    /// A ResvErr to a neighbour that is not (or not yet) an RSB of ours.
    #[allow(clippy::too_many_arguments)]
    fn resv_err_to(
        &mut self,
        session: crate::wire::Session,
        to: RsvpHop,
        oi: Oi,
        style: Style,
        flows: Vec<FlowDescriptor>,
        (code, value): (u8, u16),
        flags: u8,
    ) {
        let node = self.iface_addr(oi, session.dest);
        let msg = Message::ResvErr(ResvErr {
            integrity: None,
            session,
            hop: RsvpHop {
                addr: node,
                lih: to.lih,
            },
            error: ErrorSpec {
                node,
                flags,
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

    /// Install or update the RSBs a request asks for, admit the merged reservations, and pass
    /// the change upstream. Returns the errors to report for descriptors that were refused;
    /// admission failures are reported here directly, to the RSB's next hop.
    pub(super) fn process_resv(
        &mut self,
        now: Instant,
        sid: SessionId,
        nhop: Option<RsvpHop>,
        req: &ResvRequest,
    ) -> Vec<DescriptorError> {
        let mut errors = Vec::new();
        let style = req.style.kind;
        if let StyleKind::Other(_) = style {
            for f in &req.flows {
                errors.push(((error_code::UNKNOWN_RESERVATION_STYLE, 0), f.clone()));
            }
            return errors;
        }
        let conflicting = self.sessions[sid]
            .rsbs
            .iter()
            .any(|&id| self.rsbs[id].style != style);
        if conflicting {
            for f in &req.flows {
                errors.push(((error_code::CONFLICTING_RESERVATION_STYLE, 0), f.clone()));
            }
            return errors;
        }
        // (filter for FF, flowspec, filters) per RSB to install.
        let mut wanted: Vec<(
            Option<FilterSpec>,
            FlowSpec,
            SmallVec<[FilterSpec; 1]>,
            FlowDescriptor,
        )> = Vec::new();
        for f in &req.flows {
            let Some(fs) = f.flowspec else {
                errors.push(((error_code::TRAFFIC_CONTROL_ERROR, 3), f.clone()));
                continue;
            };
            let known = |s: &FilterSpec| {
                self.sessions[sid]
                    .psbs
                    .iter()
                    .any(|&p| super::state::filter_matches(s, &self.psbs[p].sender))
            };
            match style {
                StyleKind::Ff => {
                    for filt in &f.filters {
                        let d = FlowDescriptor {
                            flowspec: Some(fs),
                            filters: vec![*filt],
                        };
                        if known(filt) {
                            wanted.push((Some(*filt), fs, SmallVec::from_elem(*filt, 1), d));
                        } else {
                            errors.push(((error_code::NO_SENDER_INFORMATION, 0), d));
                        }
                    }
                }
                StyleKind::Se => {
                    if f.filters.iter().any(known) {
                        wanted.push((None, fs, f.filters.iter().copied().collect(), f.clone()));
                    } else {
                        errors.push(((error_code::NO_SENDER_INFORMATION, 0), f.clone()));
                    }
                }
                _ => wanted.push((None, fs, SmallVec::new(), f.clone())),
            }
        }
        // Apply, remembering the previous state of each RSB so a refused one can be undone.
        let mut touched: Vec<(
            RsbId,
            Option<(FlowSpec, SmallVec<[FilterSpec; 1]>)>,
            FlowDescriptor,
        )> = Vec::new();
        let mut changed = false;
        for (ff, fs, filters, desc) in wanted {
            let existing = self.sessions[sid].rsbs.iter().copied().find(|&id| {
                let r = &self.rsbs[id];
                r.nhop.map(|h| h.addr) == nhop.map(|h| h.addr)
                    && r.oi == req.oi
                    && (style != StyleKind::Ff || r.filters.first() == ff.as_ref())
            });
            let id = match existing {
                Some(id) => {
                    let r = &mut self.rsbs[id];
                    let old = (r.flowspec, r.filters.clone());
                    if r.flowspec != fs || r.filters != filters {
                        changed = true;
                        touched.push((id, Some(old), desc));
                    }
                    r.flowspec = fs;
                    r.filters = filters;
                    r.nhop = nhop;
                    id
                }
                None => {
                    changed = true;
                    let id = self.rsbs.insert(Rsb {
                        session: sid,
                        nhop,
                        oi: req.oi,
                        style,
                        flowspec: fs,
                        filters,
                        scope: None,
                        confirm: None,
                        carried: Vec::new(),
                        cleanup: None,
                    });
                    self.sessions[sid].rsbs.push(id);
                    touched.push((id, None, desc));
                    id
                }
            };
            let r = &mut self.rsbs[id];
            if req.scope != r.scope.as_deref().cloned() {
                r.scope = req.scope.clone().map(Box::new);
                changed = true;
            }
            r.carried.clone_from(&req.carried);
            if req.confirm.is_some() {
                r.confirm = req.confirm;
            }
            if let Some(h) = r.cleanup.take() {
                self.timers.cancel(h);
            }
            if let Some(l) = req.lifetime {
                self.rsbs[id].cleanup = Some(self.timers.insert(now + l, Timer::ResvCleanup(id)));
            }
        }
        if changed {
            let refused = self.apply_reservations(sid);
            if !refused.is_empty() {
                self.undo_refused(sid, &refused, touched);
                self.apply_reservations(sid);
            }
        }
        self.refresh_upstream(now, sid, false);
        errors
    }

    /// Admission failed for some units: undo the RSB changes of this request that fed them and
    /// tell their next hops (ResvErr code 1, InPlace when an older reservation remains).
    fn undo_refused(
        &mut self,
        sid: SessionId,
        refused: &[Refused],
        touched: Vec<(
            RsbId,
            Option<(FlowSpec, SmallVec<[FilterSpec; 1]>)>,
            FlowDescriptor,
        )>,
    ) {
        for (id, old, desc) in touched {
            let r = &self.rsbs[id];
            let Some(fail) = refused.iter().find(|f| {
                Some(f.ifindex) == r.oi && f.ff_sender.is_none_or(|s| r.filters.first() == Some(&s))
            }) else {
                continue;
            };
            self.counters.admission_failures += 1;
            let (code, value) = fail.err.error_code();
            let node = self.iface_addr(r.oi, self.sessions[sid].key.dest);
            let flags = if old.is_some() {
                ErrorSpec::IN_PLACE
            } else {
                0
            };
            let error = ErrorSpec {
                node,
                flags,
                code,
                value,
            };
            self.send_resv_err(id, error, vec![desc]);
            match old {
                Some((fs, filters)) => {
                    let r = &mut self.rsbs[id];
                    r.flowspec = fs;
                    r.filters = filters;
                    r.confirm = None;
                }
                None => self.remove_rsb(id),
            }
        }
    }

    /// The reservation units the session's RSBs ask for on each outgoing interface
    /// (RFC 2205 §3.4): FF one per sender, WF/SE one shared, flowspecs merged to their LUB.
    fn desired_units(&self, sid: SessionId) -> Vec<Unit> {
        let s = &self.sessions[sid];
        let mut units: Vec<Unit> = Vec::new();
        for &rid in &s.rsbs {
            let r = &self.rsbs[rid];
            let Some(ifindex) = r.oi else { continue };
            for &pid in &s.psbs {
                let p = &self.psbs[pid];
                if !p.oifs.contains(&r.oi) || !r.covers(&p.sender) {
                    continue;
                }
                let ff_sender = (r.style == StyleKind::Ff).then_some(p.sender);
                match units
                    .iter_mut()
                    .find(|u| u.ifindex == ifindex && u.ff_sender == ff_sender)
                {
                    Some(u) => {
                        u.flowspec = lub(&u.flowspec, &r.flowspec);
                        if !u.psbs.contains(&pid) {
                            u.psbs.push(pid);
                        }
                    }
                    None => units.push(Unit {
                        ifindex,
                        ff_sender,
                        flowspec: r.flowspec,
                        psbs: SmallVec::from_elem(pid, 1),
                    }),
                }
            }
        }
        units
    }

    /// Make the installed reservations (OutISBs) match what the RSBs ask for, through traffic
    /// control. Units traffic control refuses keep their previous reservation (or none).
    fn apply_reservations(&mut self, sid: SessionId) -> Vec<Refused> {
        let mut units = self.desired_units(sid);
        let mut refused = Vec::new();
        let session = self.sessions[sid].key;
        let existing = self.sessions[sid].out_isbs.clone();
        for oid in existing {
            let (ifindex, ff) = (self.out_isbs[oid].ifindex, self.out_isbs[oid].ff_sender);
            match units
                .iter()
                .position(|u| u.ifindex == ifindex && u.ff_sender == ff)
            {
                Some(pos) => {
                    let u = units.swap_remove(pos);
                    let o = &self.out_isbs[oid];
                    let linked: SmallVec<[PsbId; 2]> =
                        o.oiat.iter().map(|&x| self.oiats[x].psb).collect();
                    let same_psbs =
                        linked.len() == u.psbs.len() && u.psbs.iter().all(|p| linked.contains(p));
                    if o.flowspec != u.flowspec || !same_psbs {
                        let filters: Vec<FilterSpec> =
                            u.psbs.iter().map(|&p| self.psbs[p].sender).collect();
                        let req = TcRequest {
                            session: &session,
                            flowspec: &u.flowspec,
                            filters: &filters,
                        };
                        match self.tc.modify(o.tc, req) {
                            Ok(()) => {
                                self.out_isbs[oid].flowspec = u.flowspec;
                                self.relink(oid, &u.psbs);
                            }
                            Err(err) => refused.push(Refused {
                                ifindex,
                                ff_sender: ff,
                                err,
                            }),
                        }
                    }
                }
                None => self.remove_out_isb(sid, oid),
            }
        }
        for u in units {
            let filters: Vec<FilterSpec> = u.psbs.iter().map(|&p| self.psbs[p].sender).collect();
            let req = TcRequest {
                session: &session,
                flowspec: &u.flowspec,
                filters: &filters,
            };
            match self.tc.reserve(u.ifindex, req) {
                Ok(tc) => {
                    let oid = self.out_isbs.insert(OutIsb {
                        session: sid,
                        ifindex: u.ifindex,
                        ff_sender: u.ff_sender,
                        flowspec: u.flowspec,
                        tc,
                        oiat: SmallVec::new(),
                    });
                    self.sessions[sid].out_isbs.push(oid);
                    self.relink(oid, &u.psbs);
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

    /// Point an OutISB's OIatPSB relations at exactly `psbs`.
    fn relink(&mut self, oid: usize, psbs: &[PsbId]) {
        let current = self.out_isbs[oid].oiat.clone();
        for x in current {
            let p = self.oiats[x].psb;
            if !psbs.contains(&p) {
                self.oiats.remove(x);
                self.out_isbs[oid].oiat.retain(|y| *y != x);
                self.psbs[p].oiat.retain(|y| *y != x);
            }
        }
        for &p in psbs {
            let present = self.out_isbs[oid]
                .oiat
                .iter()
                .any(|&x| self.oiats[x].psb == p);
            if !present {
                let x = self.oiats.insert(OiatPsb {
                    out_isb: oid,
                    psb: p,
                });
                self.out_isbs[oid].oiat.push(x);
                self.psbs[p].oiat.push(x);
            }
        }
    }

    fn remove_out_isb(&mut self, sid: SessionId, oid: usize) {
        let o = self.out_isbs.remove(oid);
        self.tc.release(o.tc);
        for x in o.oiat {
            let rel = self.oiats.remove(x);
            if let Some(p) = self.psbs.get_mut(rel.psb) {
                p.oiat.retain(|y| *y != x);
            }
        }
        self.sessions[sid].out_isbs.retain(|x| *x != oid);
    }

    /// Delete an RSB (its reservation is re-merged by the caller).
    pub(super) fn remove_rsb(&mut self, id: RsbId) {
        let r = self.rsbs.remove(id);
        if let Some(h) = r.cleanup {
            self.timers.cancel(h);
        }
        if let Some(s) = self.sessions.get_mut(r.session) {
            s.rsbs.retain(|x| *x != id);
        }
    }

    /// Re-merge after any change of path or reservation state: installed reservations, the
    /// requests to previous hops, and what local senders are told.
    pub(super) fn update_reservations(&mut self, now: Instant, sid: SessionId) {
        let refused = self.apply_reservations(sid);
        for f in refused {
            // Path changes moved a reservation somewhere it does not fit: the requests that fed
            // it learn by ResvErr; the reservation stays off until they change or go.
            let rsbs: Vec<RsbId> = self.sessions[sid]
                .rsbs
                .iter()
                .copied()
                .filter(|&id| self.rsbs[id].oi == Some(f.ifindex))
                .collect();
            for id in rsbs {
                self.counters.admission_failures += 1;
                let (code, value) = f.err.error_code();
                let r = &self.rsbs[id];
                let node = self.iface_addr(r.oi, self.sessions[sid].key.dest);
                let desc = FlowDescriptor {
                    flowspec: Some(r.flowspec),
                    filters: r.filters.to_vec(),
                };
                self.send_resv_err(
                    id,
                    ErrorSpec {
                        node,
                        flags: 0,
                        code,
                        value,
                    },
                    vec![desc],
                );
            }
        }
        self.refresh_upstream(now, sid, false);
    }

    /// What this node asks of the senders behind one previous hop (`None`: the local senders),
    /// merged per style (RFC 2205 §3.4), and the RSBs that contributed.
    fn request_for(
        &self,
        sid: SessionId,
        phop: Option<PhopId>,
    ) -> (Option<StyleKind>, Vec<FlowDescriptor>, SmallVec<[RsbId; 2]>) {
        let s = &self.sessions[sid];
        let senders: SmallVec<[PsbId; 2]> = s
            .psbs
            .iter()
            .copied()
            .filter(|&p| self.psbs[p].phop == phop)
            .collect();
        let Some(&first) = s.rsbs.first() else {
            return (None, Vec::new(), SmallVec::new());
        };
        let style = self.rsbs[first].style;
        let mut contributing: SmallVec<[RsbId; 2]> = SmallVec::new();
        // Does RSB `r` ask for sender `p` on a path the sender's data actually takes?
        let serves = |r: &Rsb, p: PsbId| {
            let psb = &self.psbs[p];
            psb.oifs.contains(&r.oi) && r.covers(&psb.sender) && !(phop.is_none() && r.oi.is_none())
        };
        let mut flows = Vec::new();
        match style {
            StyleKind::Ff => {
                for &p in &senders {
                    let rs: SmallVec<[RsbId; 2]> = s
                        .rsbs
                        .iter()
                        .copied()
                        .filter(|&r| serves(&self.rsbs[r], p))
                        .collect();
                    if let Some(fs) = lub_all(rs.iter().map(|&r| &self.rsbs[r].flowspec)) {
                        flows.push(FlowDescriptor {
                            flowspec: Some(fs),
                            filters: vec![self.psbs[p].sender],
                        });
                        contributing.extend(
                            rs.into_iter()
                                .filter(|r| !contributing.contains(r))
                                .collect::<Vec<_>>(),
                        );
                    }
                }
            }
            _ => {
                let rs: SmallVec<[RsbId; 2]> = s
                    .rsbs
                    .iter()
                    .copied()
                    .filter(|&r| senders.iter().any(|&p| serves(&self.rsbs[r], p)))
                    .collect();
                if let Some(fs) = lub_all(rs.iter().map(|&r| &self.rsbs[r].flowspec)) {
                    let filters = if style == StyleKind::Se {
                        senders
                            .iter()
                            .map(|&p| self.psbs[p].sender)
                            .filter(|snd| rs.iter().any(|&r| self.rsbs[r].covers(snd)))
                            .collect()
                    } else {
                        Vec::new()
                    };
                    flows.push(FlowDescriptor {
                        flowspec: Some(fs),
                        filters,
                    });
                    contributing = rs;
                }
            }
        }
        (Some(style), flows, contributing)
    }

    /// Send each previous hop the merged request for its senders when it changed (or always,
    /// on refresh); tear requests that vanished; answer or forward confirmations; tell local
    /// senders about their reservations.
    pub(super) fn refresh_upstream(&mut self, now: Instant, sid: SessionId, force: bool) {
        let _ = now;
        let mut phops: SmallVec<[Option<PhopId>; 2]> = SmallVec::new();
        for &p in &self.sessions[sid].psbs {
            let ph = self.psbs[p].phop;
            if !phops.contains(&ph) {
                phops.push(ph);
            }
        }
        for u in &self.sessions[sid].upstream {
            if !phops.contains(&Some(u.phop)) {
                phops.push(Some(u.phop));
            }
        }
        let session = self.sessions[sid].key;
        for ph in phops {
            let (style, flows, contributing) = self.request_for(sid, ph);
            let Some(ph) = ph else {
                self.notify_local_senders(sid);
                self.confirm_here(sid, &contributing, style, &flows);
                continue;
            };
            let pos = self.sessions[sid]
                .upstream
                .iter()
                .position(|u| u.phop == ph);
            let previous = pos.map(|i| self.sessions[sid].upstream[i].clone());
            if flows.is_empty() {
                if let (Some(i), Some(prev)) = (pos, previous) {
                    self.sessions[sid].upstream.remove(i);
                    self.send_resv_tear(session, ph, &prev);
                    self.phop_release(ph);
                }
                continue;
            }
            let style = style.unwrap_or(StyleKind::Wf);
            let grew = previous
                .as_ref()
                .is_none_or(|p| p.style != style || request_grew(&p.flows, &flows));
            let changed = previous
                .as_ref()
                .is_none_or(|p| p.style != style || p.flows != flows);
            if !changed && !force {
                // Nothing new travels upstream: confirmations are answered here.
                self.confirm_here(sid, &contributing, Some(style), &flows);
                continue;
            }
            // A request that grows carries one confirmation upstream (the sender side answers
            // it); one that does not grow is confirmed here (RFC 2205 §3.1.4 / §3.6).
            let confirm = if grew {
                self.take_confirm(&contributing)
            } else {
                None
            };
            if !grew {
                self.confirm_here(sid, &contributing, Some(style), &flows);
            }
            let entry = Upstream {
                phop: ph,
                style,
                flows: flows.clone(),
            };
            match pos {
                Some(i) => self.sessions[sid].upstream[i] = entry,
                None => {
                    self.phops[ph].refs += 1;
                    self.sessions[sid].upstream.push(entry);
                }
            }
            self.send_resv(sid, ph, style, flows, confirm, &contributing);
        }
    }

    fn take_confirm(&mut self, contributing: &[RsbId]) -> Option<ResvConfirm> {
        contributing
            .iter()
            .find_map(|&r| self.rsbs[r].confirm.take())
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
            if let Some(c) = self.rsbs[r].confirm.take() {
                self.send_resv_conf(sid, c, Style { flags: 0, kind }, flows.to_vec());
            }
        }
    }

    fn send_resv(
        &mut self,
        sid: SessionId,
        ph: PhopId,
        style: StyleKind,
        flows: Vec<FlowDescriptor>,
        confirm: Option<ResvConfirm>,
        contributing: &[RsbId],
    ) {
        let session = self.sessions[sid].key;
        let (hop, ifx) = (self.phops[ph].hop, self.phops[ph].ifindex);
        // Wildcard requests name the senders they are for when several previous hops feed the
        // session, so they are not looped back to senders elsewhere (RFC 2205 §3.4 SCOPE).
        let scope =
            (style == StyleKind::Wf && self.sessions[sid].upstream.len() > 1).then(|| Scope {
                addrs: self.sessions[sid]
                    .psbs
                    .iter()
                    .filter(|&&p| self.psbs[p].phop == Some(ph))
                    .map(|&p| self.psbs[p].sender.src())
                    .collect(),
            });
        let mut forward: Vec<Opaque> = Vec::new();
        for &r in contributing {
            for o in &self.rsbs[r].carried {
                if o.class != crate::wire::objects::class::POLICY_DATA && !forward.contains(o) {
                    forward.push(o.clone());
                }
            }
        }
        let msg = Message::Resv(Resv {
            integrity: None,
            session,
            hop: RsvpHop {
                addr: self.iface_addr(Some(ifx), session.dest),
                lih: hop.lih,
            },
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
        self.transmit(&msg, Some(src), hop.addr, Some(ifx), false, self.cfg.ttl);
    }

    fn send_resv_tear(&mut self, session: crate::wire::Session, ph: PhopId, prev: &Upstream) {
        let (hop, ifx) = (self.phops[ph].hop, self.phops[ph].ifindex);
        let msg = Message::ResvTear(ResvTear {
            integrity: None,
            session,
            hop: RsvpHop {
                addr: self.iface_addr(Some(ifx), session.dest),
                lih: hop.lih,
            },
            scope: None,
            style: Style {
                flags: 0,
                kind: prev.style,
            },
            flows: prev.flows.clone(),
            forward: Vec::new(),
        });
        let src = self.iface_addr(Some(ifx), hop.addr);
        self.transmit(&msg, Some(src), hop.addr, Some(ifx), false, self.cfg.ttl);
    }

    /// RESV_EVENT to each local sender whose reservation changed.
    fn notify_local_senders(&mut self, sid: SessionId) {
        let session = self.sessions[sid].key;
        let locals: SmallVec<[PsbId; 2]> = self.sessions[sid]
            .psbs
            .iter()
            .copied()
            .filter(|&p| self.psbs[p].phop.is_none())
            .collect();
        for p in locals {
            let sender = self.psbs[p].sender;
            let fs = lub_all(
                self.sessions[sid]
                    .rsbs
                    .iter()
                    .map(|&r| &self.rsbs[r])
                    .filter(|r| {
                        r.oi.is_some() && self.psbs[p].oifs.contains(&r.oi) && r.covers(&sender)
                    })
                    .map(|r| &r.flowspec),
            );
            let before = self.reported.get(&p).copied();
            if fs != before {
                match fs {
                    Some(f) => self.reported.insert(p, f),
                    None => self.reported.remove(&p),
                };
                self.events.push_back(Event::ResvState {
                    session,
                    sender,
                    flowspec: fs,
                });
            }
        }
    }

    /// RFC 2209 §3 "RESVTEAR MESSAGE ARRIVES".
    pub(super) fn on_resv_tear(&mut self, now: Instant, rx: &Received<'_>, t: ResvTear) {
        let oi = Some(IfIndex(t.hop.lih))
            .filter(|i| self.has_interface(*i))
            .unwrap_or(rx.ifindex);
        let Some(&sid) = self.session_index.get(&t.session) else {
            self.drop_msg("unknown_session");
            return;
        };
        let n = self.tear_requests(sid, Some(t.hop.addr), Some(oi), t.style.kind, &t.flows);
        if n == 0 {
            self.drop_msg("no_matching_resv_state");
            return;
        }
        self.update_reservations(now, sid);
    }

    /// Delete the RSBs of one next hop that a teardown names; returns how many went.
    pub(super) fn tear_requests(
        &mut self,
        sid: SessionId,
        nhop: Option<std::net::IpAddr>,
        oi: Oi,
        style: StyleKind,
        flows: &[FlowDescriptor],
    ) -> usize {
        let victims: SmallVec<[RsbId; 2]> = self.sessions[sid]
            .rsbs
            .iter()
            .copied()
            .filter(|&id| {
                let r = &self.rsbs[id];
                r.nhop.map(|h| h.addr) == nhop
                    && r.oi == oi
                    && (style == StyleKind::Wf
                        || flows
                            .iter()
                            .flat_map(|f| &f.filters)
                            .any(|f| r.filters.contains(f)))
            })
            .collect();
        for &id in &victims {
            let r = &mut self.rsbs[id];
            if style == StyleKind::Se {
                // SE: drop just the named senders; the request goes when none is left.
                r.filters
                    .retain(|f| !flows.iter().flat_map(|d| &d.filters).any(|x| x == f));
                if !r.filters.is_empty() {
                    continue;
                }
            }
            self.remove_rsb(id);
        }
        victims.len()
    }

    /// RFC 2209 §3 "RESVERR MESSAGE ARRIVES": pass it to every next hop whose request it is
    /// about, or to the local receiver.
    pub(super) fn on_resv_err(&mut self, now: Instant, e: ResvErr) {
        let Some(&sid) = self.session_index.get(&e.session) else {
            self.drop_msg("unknown_session");
            return;
        };
        let named: Vec<FilterSpec> = e
            .flows
            .iter()
            .flat_map(|f| f.filters.iter().copied())
            .collect();
        let mut seen: SmallVec<[(Option<std::net::IpAddr>, Oi); 2]> = SmallVec::new();
        let targets: SmallVec<[RsbId; 2]> = self.sessions[sid]
            .rsbs
            .iter()
            .copied()
            .filter(|&id| {
                let r = &self.rsbs[id];
                let hit = named.is_empty()
                    || r.style == StyleKind::Wf
                    || named.iter().any(|f| r.filters.contains(f));
                let key = (r.nhop.map(|h| h.addr), r.oi);
                hit && !seen.contains(&key) && {
                    seen.push(key);
                    true
                }
            })
            .collect();
        if targets.is_empty() {
            self.drop_msg("no_matching_resv_state");
            return;
        }
        for id in targets {
            self.send_resv_err(id, e.error, e.flows.clone());
        }
        let _ = now;
    }

    /// A ResvErr reached the receiver: tell the application, and withdraw a request that could
    /// not be admitted end to end (see `Config::release_on_admission_failure`).
    pub(super) fn receiver_error(
        &mut self,
        sid: SessionId,
        error: ErrorSpec,
        flows: Vec<FlowDescriptor>,
    ) {
        let session = self.sessions[sid].key;
        let release = self.cfg.release_on_admission_failure
            && error.code == error_code::ADMISSION_CONTROL_FAILURE
            && error.flags & ErrorSpec::IN_PLACE == 0;
        if release {
            let locals: SmallVec<[RsbId; 2]> = self.sessions[sid]
                .rsbs
                .iter()
                .copied()
                .filter(|&r| self.rsbs[r].nhop.is_none())
                .collect();
            for r in locals {
                self.remove_rsb(r);
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
        let msg = Message::ResvConf(c.clone());
        let ttl = rx.ttl.saturating_sub(1);
        if ttl == 0 {
            self.drop_msg("ttl_expired");
            return;
        }
        self.transmit(&msg, Some(rx.src), c.confirm.receiver, None, true, ttl);
    }
}

/// Whether `new` asks upstream for anything `old` did not.
fn request_grew(old: &[FlowDescriptor], new: &[FlowDescriptor]) -> bool {
    new.iter().any(|n| {
        let matching = old.iter().find(|o| o.filters == n.filters);
        match (matching.and_then(|o| o.flowspec), n.flowspec) {
            (Some(o), Some(f)) => exceeds(&f, &o),
            (None, Some(_)) => true,
            _ => false,
        }
    })
}
