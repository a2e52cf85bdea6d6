//! Path-side processing: Path, PathTear and PathErr (RFC 2209 §3 "PATH MESSAGE ARRIVES",
//! "PATHTEAR MESSAGE ARRIVES", "PATHERR MESSAGE ARRIVES") and path state removal.

use super::list;
use super::state::{
    Oi, Oifs, PhopId, Psb, PsbId, SessionDest, SessionId, SessionKey, SessionState, Upstream,
    carried, filter_matches,
};
use super::te::PsbTe;
use super::{Event, RsvpEngine, TrafficControl};
use crate::wire::error::error_code;
use crate::wire::{
    CommonHeader, FilterSpec, ObjectHeader, Opaque, Path, PathErr, PathTear, RsvpHop, Session,
    SessionAttribute, te,
};
use pathwise_core::io::{IfIndex, Received};
use pathwise_core::time::Instant;
use pathwise_core::wire::Writer;
use smallvec::SmallVec;

/// Whether two senders conflict in their ports: same address, one with a port of zero and the
/// other without (RFC 2209 §3, "Conflicting Sender Ports", error code 8).
fn sender_ports_conflict(a: &FilterSpec, b: &FilterSpec) -> bool {
    match (a, b) {
        (
            FilterSpec::V4 {
                src: x,
                src_port: p,
            },
            FilterSpec::V4 {
                src: y,
                src_port: q,
            },
        ) => x == y && p != q && (*p == 0 || *q == 0),
        (
            FilterSpec::V6 {
                src: x,
                src_port: p,
            },
            FilterSpec::V6 {
                src: y,
                src_port: q,
            },
        ) => x == y && p != q && (*p == 0 || *q == 0),
        _ => false,
    }
}

/// A SESSION_ATTRIBUTE as an uninterpreted object, to be forwarded as received.
fn carried_session_attribute(sa: &SessionAttribute) -> Opaque {
    let mut b = Vec::with_capacity(sa.buffer_len());
    sa.emit(&mut Writer::new(&mut b));
    Opaque::parse(
        te::class::SESSION_ATTRIBUTE,
        sa.ctype(),
        b.get(ObjectHeader::LEN..).unwrap_or(&[]),
    )
}

/// What a Path says about an LSP, to tell whether a refresh changed it.
fn path_inputs(t: &PsbTe) -> impl PartialEq + '_ {
    (
        &t.label_request,
        &t.session_attribute,
        &t.ero,
        &t.rro,
        &t.phop_if_id,
    )
}

impl<T: TrafficControl> RsvpEngine<T> {
    /// The TE state of an LSP's Path and where it goes from here: a RECORD_ROUTE naming this
    /// node is a loop (§4.4.3), a Generalized LABEL_REQUEST must be of a kind this node
    /// switches (RFC 3473 §2.1.1), the EXPLICIT_ROUTE is processed (§4.3.4), and the egress
    /// must carry the L3PID or G-PID asked for (§4.2.1; RFC 3473 §2.1.1). Errors are Routing
    /// Problem values.
    fn path_te(
        &self,
        p: &Path,
        label_request: te::LabelRequest,
        iif: IfIndex,
    ) -> Result<(PsbTe, Oifs), u16> {
        let rro = p.sender.record_route.clone();
        if rro.iter().flat_map(|r| &r.subobjects).any(|s| match s {
            te::RroSubobject::Ipv4 { addr, .. } => self.is_local((*addr).into()),
            te::RroSubobject::Ipv6 { addr, .. } => self.is_local((*addr).into()),
            _ => false,
        }) {
            return Err(error_code::routing::RRO_INDICATED_ROUTING_LOOPS);
        }
        let mut t = PsbTe::new(
            label_request,
            p.session_attribute.clone(),
            p.explicit_route.clone(),
            rro,
        );
        // RFC 3473 §2.1.1: the encoding and switching types are checked at every hop.
        if let Some(value) = t.generalized_refusal() {
            return Err(value);
        }
        // RFC 3473 §8.1.2: the TLVs of an IF_ID hop are returned in our Resv.
        t.phop_if_id = p.hop.if_id.clone().filter(|tlvs| !tlvs.is_empty());
        let (oifs, ero_out) = self.lsp_oifs(&p.session, p.sender.template.src(), &t, Some(iif))?;
        if oifs.contains(&None) && !t.l3pid_supported() {
            return Err(error_code::routing::UNSUPPORTED_L3PID);
        }
        t.ero_out = ero_out;
        Ok((t, oifs))
    }

    /// The session for `key`, created if new. Refused with "Conflicting Dest Ports" (code 7) when
    /// another session to the same destination and protocol has a zero port where this one has
    /// not, or the other way round (RFC 2209 §3). LSP tunnels are exempt: their `dst_port` is a
    /// Tunnel ID, not a port (RFC 3209 §4.6.1), and 0 is as good a tunnel id as any.
    pub(super) fn session_for(
        &mut self,
        now: Instant,
        key: Session,
    ) -> Result<SessionId, (u8, u16)> {
        if let Some(sid) = self.find_session(&key) {
            return Ok(sid);
        }
        if !key.is_lsp_tunnel() {
            let nonzero = usize::from(key.dst_port != 0);
            let counts = self
                .dest_ports
                .entry((key.dest, key.protocol_id))
                .or_insert([0, 0]);
            if counts[1 - nonzero] > 0 {
                return Err((error_code::CONFLICTING_DEST_PORTS, 0));
            }
            counts[nonzero] += 1;
        }
        let refresh_at = now + self.refresh_interval();
        let dest = self.dests.acquire(SessionDest {
            addr: key.dest,
            ext_tunnel_id: key.extended_tunnel_id,
        });
        let sid = self.sessions.insert(SessionState {
            key: SessionKey {
                dest,
                protocol_id: key.protocol_id,
                flags: key.flags,
                dst_port: key.dst_port,
            },
            upstream_style: None,
            psbs: None,
            rsbs: None,
            out_isbs: None,
            timer: None,
            refresh_at,
        });
        self.index_session(sid);
        Ok(sid)
    }

    /// A reference to the shared copy of an ADSPEC.
    pub(super) fn intern_adspec(&mut self, a: crate::wire::Adspec) -> super::state::AdspecRef {
        self.adspecs.acquire(a)
    }

    pub(super) fn find_psb(&self, sid: SessionId, sender: &FilterSpec) -> Option<PsbId> {
        self.psbs_of(sid)
            .find(|&id| self.psbs[id].sender == *sender)
    }

    /// Add a PSB to its session.
    pub(super) fn insert_psb(&mut self, psb: Psb) -> PsbId {
        let sid = psb.session;
        self.te_psbs += usize::from(psb.te().is_some());
        let id = self.psbs.insert(psb);
        list::push(&mut self.psbs, &mut self.sessions[sid].psbs, id, |p| {
            &mut p.next
        });
        id
    }

    pub(super) fn phop_acquire(&mut self, hop: RsvpHop, ifindex: IfIndex) -> PhopId {
        // RFC 3473 §8.1.2: an IF_ID hop's address and LIH are used as RFC 2205's; its TLVs
        // are the LSP's (PsbTe::phop_if_id), not the neighbour's.
        let hop = hop.plain();
        let id = match self.phop_index.get(&(hop.addr, hop.lih)) {
            Some(&id) => {
                let old = self.phops[id].ifindex;
                if old != ifindex {
                    self.hello_release(old, hop.addr);
                    self.hello_acquire(ifindex, hop.addr);
                }
                id
            }
            None => {
                let key = (hop.addr, hop.lih);
                let id = self.phops.insert(super::state::PhopSb {
                    hop,
                    ifindex,
                    refs: 0,
                });
                self.phop_index.insert(key, id);
                self.hello_acquire(ifindex, key.0);
                id
            }
        };
        self.phops[id].refs += 1;
        self.phops[id].ifindex = ifindex;
        id
    }

    pub(super) fn phop_release(&mut self, id: PhopId) {
        let ph = &mut self.phops[id];
        ph.refs -= 1;
        if ph.refs == 0 {
            let key = (ph.hop.addr, ph.hop.lih);
            let ifindex = ph.ifindex;
            self.phop_index.remove(&key);
            self.phops.remove(id);
            self.hello_release(ifindex, key.0);
        }
    }

    /// RFC 2209 §3 "PATH MESSAGE ARRIVES".
    pub(super) fn on_path(&mut self, now: Instant, rx: &Received<'_>, hdr: &CommonHeader, p: Path) {
        if !self.path_addresses_ok(&p, rx.ifindex) {
            return;
        }
        let sid = match self.session_for(now, p.session) {
            Ok(sid) => sid,
            Err((code, value)) => {
                self.drop_msg("conflicting_dest_ports");
                let sender = Some(p.sender.clone());
                self.send_path_err_raw(p.session, p.hop.addr, rx.ifindex, code, value, sender);
                return;
            }
        };
        // The Flags (E_Police) are the Path's to pass on, not part of the session (RFC 2205
        // §A.1): the latest Path's go downstream, at once when they changed.
        let flags_changed = self.sessions[sid].key.flags != p.session.flags;
        self.sessions[sid].key.flags = p.session.flags;
        let template = p.sender.template;
        if self
            .psbs_of(sid)
            .any(|id| sender_ports_conflict(&self.psbs[id].sender, &template))
        {
            self.drop_msg("conflicting_sender_ports");
            let sender = Some(p.sender.clone());
            self.send_path_err_raw(
                p.session,
                p.hop.addr,
                rx.ifindex,
                error_code::CONFLICTING_SENDER_PORTS,
                0,
                sender,
            );
            if self.sessions[sid].psbs.is_none() {
                self.remove_session(sid);
            }
            return;
        }
        // An LSP (RFC 3209): its route comes from the EXPLICIT_ROUTE; a Path this node cannot
        // carry on is answered with PathErr "Routing Problem" (§4.5) and not kept.
        let te = match p.label_request.filter(|_| p.session.is_lsp_tunnel()) {
            Some(lr) => match self.path_te(&p, lr, rx.ifindex) {
                Ok(x) => Some(x),
                Err(value) => {
                    self.drop_msg("routing_problem");
                    let sender = Some(p.sender.clone());
                    let code = error_code::ROUTING_PROBLEM;
                    self.send_path_err_raw(p.session, p.hop.addr, rx.ifindex, code, value, sender);
                    if self.sessions[sid].psbs.is_none() {
                        self.remove_session(sid);
                    }
                    return;
                }
            },
            None => None,
        };
        // A Send_TTL different from the IP TTL means non-RSVP routers forwarded the message
        // (RFC 2205 §3.8): the ADSPEC's break bit says the path is not fully IntServ-capable.
        let non_rsvp = hdr.send_ttl != rx.ttl;
        if non_rsvp && te.is_some() {
            // RFC 3209 §4.5: labels cannot be bound across a router that does not speak RSVP
            // (the label's next hop would not be adjacent). The path state is kept, unbound,
            // so the LSP comes up once every hop on the way takes part.
            let value = error_code::routing::NON_RSVP_CAPABLE_ROUTER;
            let sender = Some(p.sender.clone());
            let code = error_code::ROUTING_PROBLEM;
            self.send_path_err_raw(p.session, p.hop.addr, rx.ifindex, code, value, sender);
        }
        let mut adspec = p.sender.adspec;
        if non_rsvp && let Some(a) = adspec.as_mut() {
            a.set_break_bit();
        }
        let adspec = adspec.map(|a| self.intern_adspec(a));
        let mut objects = p.policy;
        objects.extend(p.forward);
        if te.is_none() {
            // SESSION_ATTRIBUTE outside an LSP session goes on unmodified, as the unknown
            // class-11bbbbbb object it is to plain RSVP.
            objects.extend(p.session_attribute.as_ref().map(carried_session_attribute));
        }
        let (te, te_oifs) = match te {
            Some((t, oifs)) => (Some(t), Some(oifs)),
            None => (None, None),
        };
        let expires = now + self.lifetime(p.time_values.refresh_ms);
        let phop = self.phop_acquire(p.hop, rx.ifindex);
        let ttl = rx.ttl.saturating_sub(1);
        let (id, changed) = match self.find_psb(sid, &template) {
            Some(id) => {
                let old = &self.psbs[id];
                let te = te.map(|mut t| {
                    if let Some(o) = old.te() {
                        t.in_label = o.in_label;
                        t.out = o.out;
                        t.seq = o.seq;
                        t.sent_up = o.sent_up;
                    }
                    t
                });
                let te_changed = old.te().map(path_inputs) != te.as_ref().map(path_inputs);
                let changed = te_changed
                    || flags_changed
                    || old.phop() != Some(phop)
                    || old.iif() != Some(rx.ifindex)
                    || *self.tspecs.get(old.tspec) != p.sender.tspec
                    || old.adspec != adspec
                    || old.carried() != objects.as_slice()
                    || old.non_rsvp != non_rsvp;
                let (old_phop, old_adspec) = (old.phop(), old.adspec);
                if old_phop != Some(phop) {
                    // The sender now reaches us through another neighbour: withdraw what we asked
                    // of the old one.
                    self.withdraw_upstream(id);
                }
                if let Some(ph) = old_phop {
                    self.phop_release(ph);
                }
                if let Some(a) = old_adspec {
                    self.adspecs.release(a);
                }
                let psb = &mut self.psbs[id];
                psb.expires = expires;
                psb.upstream = Some(Upstream {
                    phop,
                    iif: rx.ifindex,
                });
                Self::set_tspec(&mut self.tspecs, &mut psb.tspec, p.sender.tspec);
                psb.adspec = adspec;
                psb.ttl = ttl;
                psb.non_rsvp = non_rsvp;
                if changed {
                    psb.set_carried(carried(objects));
                }
                self.te_psbs -= usize::from(psb.te().is_some());
                self.te_psbs += usize::from(te.is_some());
                psb.set_te(te);
                (id, changed)
            }
            None => {
                let tspec = self.tspecs.acquire(p.sender.tspec);
                let id = self.insert_psb(Psb {
                    session: sid,
                    next: None,
                    sender: template,
                    tspec,
                    adspec,
                    upstream: Some(Upstream {
                        phop,
                        iif: rx.ifindex,
                    }),
                    oifs: Oifs::default(),
                    ttl,
                    non_rsvp,
                    expires,
                    ff_installed: None,
                    oiats: None,
                    sent: None,
                    extra: super::state::PsbExtra::with(te, carried(objects)),
                });
                (id, true)
            }
        };
        let oifs = te_oifs
            .unwrap_or_else(|| self.route_oifs(&p.session, template.src(), Some(rx.ifindex)));
        self.path_changed(id, oifs, changed);
    }

    /// A Path's previous hop and sender must be addresses a neighbour and a data sender can
    /// have (see [`super::martian`]). A martian previous hop leaves nowhere to send an error
    /// to: the Path is dropped. A martian sender with a sound previous hop is refused with
    /// PathErr "Policy Control failure" (RFC 2205 App. B code 2: "path message has been
    /// rejected for administrative reasons", value 0 as the code's values are "to be determined
    /// in the future"): accepting it would have this node send Path refreshes with that address
    /// as IP source (§3.1.3) for as long as the state lives.
    fn path_addresses_ok(&mut self, p: &Path, ifindex: IfIndex) -> bool {
        use super::martian::Martian;
        if let Some(m) = Martian::of(p.hop.addr, self.is_local(p.hop.addr)) {
            self.drop_msg(m.hop_reason());
            return false;
        }
        let src = p.sender.template.src();
        let Some(m) = Martian::of(src, self.is_local(src)) else {
            return true;
        };
        self.drop_msg(m.sender_reason());
        let sender = Some(p.sender.clone());
        let code = error_code::POLICY_CONTROL_FAILURE;
        self.send_path_err_raw(p.session, p.hop.addr, ifindex, code, 0, sender);
        false
    }

    /// Bring a PSB's outgoing interfaces up to date, and if anything changed, forward the Path
    /// at once (RFC 2209 "Path_Refresh_Needed"), tell local receivers, and update reservations.
    pub(super) fn path_changed(&mut self, id: PsbId, oifs: Oifs, changed: bool) {
        let old = std::mem::replace(&mut self.psbs[id].oifs, oifs.clone());
        let removed: SmallVec<[Oi; 1]> =
            old.iter().copied().filter(|o| !oifs.contains(o)).collect();
        let sid = self.psbs[id].session;
        if !removed.is_empty() {
            // The old branch learns at once rather than after a state lifetime.
            self.send_path_tear(id, &removed);
            if removed.contains(&None) {
                self.path_gone_event(id);
            }
        }
        if changed || old != oifs {
            self.send_path(id, &oifs);
            if oifs.contains(&None) && self.psbs[id].te().is_some() {
                self.egress_reserve(sid);
            }
            if oifs.contains(&None) {
                let p = &self.psbs[id];
                self.events.push_back(Event::PathState {
                    session: self.session_key(sid),
                    sender: p.sender,
                    tspec: *self.tspecs.get(p.tspec),
                    adspec: p.adspec.map(|a| Box::new(self.adspecs.get(a).clone())),
                });
                // A receiver's kept request goes out as soon as there is a sender to reserve
                // for (RFC 2205 §3.11.1).
                let now = self.now;
                self.apply_receiver_request(now, sid, false);
            }
            self.update_reservations(sid);
        }
        self.schedule_session(sid);
    }

    fn path_gone_event(&mut self, id: PsbId) {
        let p = &self.psbs[id];
        self.events.push_back(Event::PathGone {
            session: self.session_key(p.session),
            sender: p.sender,
        });
    }

    /// RFC 2209 §3 "PATHTEAR MESSAGE ARRIVES": only the previous hop that installed the state
    /// may tear it (a PathTear from a hop we no longer route through is stale).
    pub(super) fn on_path_tear(&mut self, t: PathTear) {
        let Some(sid) = self.find_session(&t.session) else {
            self.drop_msg("unknown_session");
            return;
        };
        let targets: SmallVec<[PsbId; 2]> = self
            .psbs_of(sid)
            .filter(|&id| {
                let p = &self.psbs[id];
                p.phop()
                    .is_some_and(|ph| self.phops[ph].hop.addr == t.hop.addr)
                    && t.sender_template.is_none_or(|s| s == p.sender)
            })
            .collect();
        if targets.is_empty() {
            self.drop_msg("no_matching_path_state");
            return;
        }
        for id in targets {
            self.remove_psb(id, true);
        }
        self.after_path_removal(sid);
    }

    /// RFC 2209 §3 "PATHERR MESSAGE ARRIVES": pass it towards the sender, unchanged.
    pub(super) fn on_path_err(&mut self, e: PathErr) {
        let Some(sid) = self.find_session(&e.session) else {
            self.drop_msg("unknown_session");
            return;
        };
        let Some(id) = e
            .sender
            .as_ref()
            .and_then(|s| self.find_psb(sid, &s.template))
        else {
            self.drop_msg("no_matching_path_state");
            return;
        };
        match self.psbs[id]
            .phop()
            .map(|ph| (self.phops[ph].hop.addr, self.phops[ph].ifindex))
        {
            Some((addr, ifx)) => {
                let msg = crate::wire::Message::PathErr(e);
                let src = self.iface_addr(Some(ifx), addr);
                self.transmit(&msg, Some(src), addr, Some(ifx), false, self.cfg.ttl);
            }
            None => self.head_end_error(id, e.error),
        }
    }

    /// Delete a PSB and its relations; with `tear`, send PathTear downstream first.
    pub(super) fn remove_psb(&mut self, id: PsbId, tear: bool) {
        let oifs = self.psbs[id].oifs.clone();
        if tear {
            self.send_path_tear(id, &oifs);
        }
        if oifs.contains(&None) {
            self.path_gone_event(id);
        }
        let sid = self.psbs[id].session;
        list::unlink(&mut self.psbs, &mut self.sessions[sid].psbs, id, |p| {
            &mut p.next
        });
        if self.psbs[id].ff_installed.is_some() {
            // The FF reservation held for this sender has no one left to serve; it goes with
            // the PSB (RFC 2209 §3 "PATH TEAR MESSAGE ARRIVES": update traffic control).
            self.remove_out_isb(sid, super::state::OutIsbRef::InPsb(id));
        }
        let rels: SmallVec<[_; 2]> =
            list::iter(&self.oiats, self.psbs[id].oiats, |x| x.next_of_psb).collect();
        for x in rels {
            let out = self.oiats[x].out_isb;
            list::unlink(&mut self.oiats, &mut self.out_isbs[out].oiats, x, |r| {
                &mut r.next_of_out
            });
            self.oiats.remove(x);
        }
        self.free_psb(id);
        // Requests naming only this sender have nothing left to reserve for (RFC 2209 §3,
        // PathTear: "delete ... RSBs ... that no longer match any PSB").
        let rsbs: SmallVec<[_; 4]> = self.rsbs_of(sid).collect();
        for rid in rsbs {
            let (psbs, sessions) = (&self.psbs, &self.sessions);
            let matched = self.rsbs[rid].selection.retain(|f| {
                list::iter(psbs, sessions[sid].psbs, |p| p.next)
                    .any(|q| filter_matches(f, &psbs[q].sender))
            });
            if !matched {
                self.remove_rsb(sid, rid);
            }
        }
    }

    /// Free a PSB that is on no list any more, releasing what it shares.
    fn free_psb(&mut self, id: PsbId) {
        self.drop_in_label(id);
        self.forget_path(id);
        let p = self.psbs.remove(id);
        debug_assert!(p.ff_installed.is_none(), "reservation left in a freed PSB");
        self.te_psbs -= usize::from(p.te().is_some());
        self.tspecs.release(p.tspec);
        if let Some(r) = p.sent {
            self.flowspecs.release(r);
        }
        if let Some(a) = p.adspec {
            self.adspecs.release(a);
        }
        if let Some(ph) = p.phop() {
            self.phop_release(ph);
        }
        self.reported.remove(&id);
    }

    /// After path state went: drop the session if nothing is left, else re-merge reservations.
    pub(super) fn after_path_removal(&mut self, sid: SessionId) {
        if self.sessions[sid].psbs.is_none() {
            self.remove_session(sid);
        } else {
            self.update_reservations(sid);
        }
    }

    /// Remove a session and everything in it.
    pub(super) fn remove_session(&mut self, sid: SessionId) {
        let out: SmallVec<[_; 4]> = self.out_isbs_of(sid).collect();
        for o in out {
            self.remove_out_isb(sid, o);
        }
        let psbs: SmallVec<[_; 4]> = self.psbs_of(sid).collect();
        for id in psbs {
            self.free_psb(id);
        }
        let rsbs: SmallVec<[_; 4]> = self.rsbs_of(sid).collect();
        for id in rsbs {
            self.remove_rsb(sid, id);
        }
        if let Some(h) = self.sessions[sid].timer {
            self.timers.cancel(h);
        }
        self.forget_session(sid);
        self.unindex_session(sid);
        self.repairs.remove(&sid);
        let s = self.sessions.remove(sid);
        let dest = *self.dests.get(s.key.dest);
        self.dests.release(s.key.dest);
        let slot = (dest.addr, s.key.protocol_id);
        if dest.ext_tunnel_id.is_some() {
            self.lfib_apply(pathwise_core::mpls::LfibChange::RemoveFtn {
                dest: dest.addr,
                tunnel_id: s.key.dst_port,
            });
            return;
        }
        if let Some(c) = self.dest_ports.get_mut(&slot) {
            let i = usize::from(s.key.dst_port != 0);
            c[i] = c[i].saturating_sub(1);
            if *c == [0, 0] {
                self.dest_ports.remove(&slot);
            }
        }
    }
}
