//! Path-side processing: Path, PathTear and PathErr (RFC 2209 §3 "PATH MESSAGE ARRIVES",
//! "PATHTEAR MESSAGE ARRIVES", "PATHERR MESSAGE ARRIVES") and path state removal.

use super::state::{Oi, PhopId, Psb, PsbId, SessionId, SessionState};
use super::{Event, RsvpEngine, Timer, TrafficControl};
use crate::wire::error::error_code;
use crate::wire::{CommonHeader, FilterSpec, Path, PathErr, PathTear, RsvpHop, Session};
use pathwise_core::io::{IfIndex, Received};
use pathwise_core::time::Instant;
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

impl<T: TrafficControl> RsvpEngine<T> {
    /// The session for `key`, created if new. Refused with "Conflicting Dest Ports" (code 7) when
    /// another session to the same destination and protocol has a zero port where this one has
    /// not, or the other way round (RFC 2209 §3).
    pub(super) fn session_for(&mut self, key: Session) -> Result<SessionId, (u8, u16)> {
        if let Some(&sid) = self.session_index.get(&key) {
            return Ok(sid);
        }
        let conflict = self.session_index.keys().any(|k| {
            k.dest == key.dest
                && k.protocol_id == key.protocol_id
                && k.dst_port != key.dst_port
                && (k.dst_port == 0 || key.dst_port == 0)
        });
        if conflict {
            return Err((error_code::CONFLICTING_DEST_PORTS, 0));
        }
        let sid = self.sessions.insert(SessionState {
            key,
            psbs: SmallVec::new(),
            rsbs: SmallVec::new(),
            out_isbs: SmallVec::new(),
            upstream: Vec::new(),
            refresh: None,
            repair: None,
        });
        self.session_index.insert(key, sid);
        Ok(sid)
    }

    pub(super) fn find_psb(&self, sid: SessionId, sender: &FilterSpec) -> Option<PsbId> {
        self.sessions[sid]
            .psbs
            .iter()
            .copied()
            .find(|&id| self.psbs[id].sender == *sender)
    }

    pub(super) fn phop_acquire(&mut self, hop: RsvpHop, ifindex: IfIndex) -> PhopId {
        let id = match self.phop_index.get(&(hop.addr, hop.lih)) {
            Some(&id) => id,
            None => {
                let id = self.phops.insert(super::state::PhopSb {
                    hop,
                    ifindex,
                    refs: 0,
                });
                self.phop_index.insert((hop.addr, hop.lih), id);
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
            self.phop_index.remove(&key);
            self.phops.remove(id);
        }
    }

    /// RFC 2209 §3 "PATH MESSAGE ARRIVES".
    pub(super) fn on_path(&mut self, now: Instant, rx: &Received<'_>, hdr: &CommonHeader, p: Path) {
        let sid = match self.session_for(p.session) {
            Ok(sid) => sid,
            Err((code, value)) => {
                self.drop_msg("conflicting_dest_ports");
                let sender = Some(p.sender.clone());
                self.send_path_err_raw(p.session, p.hop.addr, rx.ifindex, code, value, sender);
                return;
            }
        };
        let template = p.sender.template;
        let conflict = self.sessions[sid]
            .psbs
            .iter()
            .any(|&id| sender_ports_conflict(&self.psbs[id].sender, &template));
        if conflict {
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
            self.forget_session_if_empty(sid);
            return;
        }
        // A Send_TTL different from the IP TTL means non-RSVP routers forwarded the message
        // (RFC 2205 §3.8): the ADSPEC's break bit says the path is not fully IntServ-capable.
        let non_rsvp = hdr.send_ttl != rx.ttl;
        let mut adspec = p.sender.adspec.map(Box::new);
        if non_rsvp && let Some(a) = adspec.as_mut() {
            a.set_break_bit();
        }
        let mut carried = p.policy;
        carried.extend(p.forward);
        let lifetime = self.lifetime(p.time_values.refresh_ms);
        let phop = self.phop_acquire(p.hop, rx.ifindex);
        let (id, changed) = match self.find_psb(sid, &template) {
            Some(id) => {
                let old = &self.psbs[id];
                let changed = old.phop != Some(phop)
                    || old.iif != Some(rx.ifindex)
                    || old.tspec != p.sender.tspec
                    || old.adspec != adspec
                    || old.carried != carried
                    || old.non_rsvp != non_rsvp;
                let old_phop = old.phop;
                let cleanup = old.cleanup;
                if let Some(h) = cleanup {
                    self.timers.cancel(h);
                }
                if let Some(ph) = old_phop {
                    self.phop_release(ph);
                }
                let psb = &mut self.psbs[id];
                psb.phop = Some(phop);
                psb.iif = Some(rx.ifindex);
                psb.tspec = p.sender.tspec;
                psb.adspec = adspec;
                psb.carried = carried;
                psb.refresh_ms = p.time_values.refresh_ms;
                psb.ttl = rx.ttl.saturating_sub(1);
                psb.non_rsvp = non_rsvp;
                (id, changed)
            }
            None => {
                let id = self.psbs.insert(Psb {
                    session: sid,
                    sender: template,
                    tspec: p.sender.tspec,
                    adspec,
                    phop: Some(phop),
                    iif: Some(rx.ifindex),
                    oifs: SmallVec::new(),
                    carried,
                    refresh_ms: p.time_values.refresh_ms,
                    ttl: rx.ttl.saturating_sub(1),
                    non_rsvp,
                    cleanup: None,
                    oiat: SmallVec::new(),
                });
                self.sessions[sid].psbs.push(id);
                (id, true)
            }
        };
        self.psbs[id].cleanup = Some(self.timers.insert(now + lifetime, Timer::PathCleanup(id)));
        let oifs = self.route_oifs(&p.session, template.src(), Some(rx.ifindex));
        self.path_changed(now, id, oifs, changed);
    }

    /// Bring a PSB's outgoing interfaces up to date, and if anything changed, forward the Path
    /// at once (RFC 2209 "Path_Refresh_Needed"), tell local receivers, and update reservations.
    pub(super) fn path_changed(
        &mut self,
        now: Instant,
        id: PsbId,
        oifs: SmallVec<[Oi; 1]>,
        changed: bool,
    ) {
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
            if oifs.contains(&None) {
                let p = &self.psbs[id];
                self.events.push_back(Event::PathState {
                    session: self.sessions[sid].key,
                    sender: p.sender,
                    tspec: p.tspec,
                    adspec: p.adspec.as_deref().cloned(),
                });
            }
            self.update_reservations(now, sid);
        }
        self.ensure_refresh(now, sid);
    }

    fn path_gone_event(&mut self, id: PsbId) {
        let p = &self.psbs[id];
        self.events.push_back(Event::PathGone {
            session: self.sessions[p.session].key,
            sender: p.sender,
        });
    }

    /// RFC 2209 §3 "PATHTEAR MESSAGE ARRIVES": only the previous hop that installed the state
    /// may tear it (a PathTear from a hop we no longer route through is stale).
    pub(super) fn on_path_tear(&mut self, now: Instant, _rx: &Received<'_>, t: PathTear) {
        let Some(&sid) = self.session_index.get(&t.session) else {
            self.drop_msg("unknown_session");
            return;
        };
        let targets: SmallVec<[PsbId; 2]> = self.sessions[sid]
            .psbs
            .iter()
            .copied()
            .filter(|&id| {
                let p = &self.psbs[id];
                p.phop
                    .is_some_and(|ph| self.phops[ph].hop.addr == t.hop.addr)
                    && t.sender_template.is_none_or(|s| s == p.sender)
            })
            .collect();
        if targets.is_empty() {
            self.drop_msg("no_matching_path_state");
            return;
        }
        for id in targets {
            self.remove_psb(now, id, true);
        }
        self.after_path_removal(now, sid);
    }

    /// RFC 2209 §3 "PATHERR MESSAGE ARRIVES": pass it towards the sender, unchanged.
    pub(super) fn on_path_err(&mut self, e: PathErr) {
        let Some(&sid) = self.session_index.get(&e.session) else {
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
            .phop
            .map(|ph| (self.phops[ph].hop.addr, self.phops[ph].ifindex))
        {
            Some((addr, ifx)) => {
                let msg = crate::wire::Message::PathErr(e);
                let src = self.iface_addr(Some(ifx), addr);
                self.transmit(&msg, Some(src), addr, Some(ifx), false, self.cfg.ttl);
            }
            None => self.events.push_back(Event::PathError {
                session: e.session,
                sender: e.sender.map(|s| s.template),
                error: e.error,
            }),
        }
    }

    /// Delete a PSB and its relations; with `tear`, send PathTear downstream first.
    pub(super) fn remove_psb(&mut self, _now: Instant, id: PsbId, tear: bool) {
        let oifs = self.psbs[id].oifs.clone();
        if tear {
            self.send_path_tear(id, &oifs);
        }
        if oifs.contains(&None) {
            self.path_gone_event(id);
        }
        let p = self.psbs.remove(id);
        if let Some(h) = p.cleanup {
            self.timers.cancel(h);
        }
        if let Some(ph) = p.phop {
            self.phop_release(ph);
        }
        for oiat in p.oiat {
            let rel = self.oiats.remove(oiat);
            if let Some(o) = self.out_isbs.get_mut(rel.out_isb) {
                o.oiat.retain(|x| *x != oiat);
            }
        }
        self.reported.remove(&id);
        let s = &mut self.sessions[p.session];
        s.psbs.retain(|x| *x != id);
        // Requests naming only this sender have nothing left to reserve for (RFC 2209 §3,
        // PathTear: "delete ... RSBs ... that no longer match any PSB").
        let sid = p.session;
        let rsbs = self.sessions[sid].rsbs.clone();
        for rid in rsbs {
            let remaining: SmallVec<[FilterSpec; 1]> = self.rsbs[rid]
                .filters
                .iter()
                .copied()
                .filter(|f| {
                    self.sessions[sid]
                        .psbs
                        .iter()
                        .any(|&q| super::state::filter_matches(f, &self.psbs[q].sender))
                })
                .collect();
            let r = &mut self.rsbs[rid];
            if r.style != crate::wire::StyleKind::Wf && remaining.len() != r.filters.len() {
                if remaining.is_empty() {
                    self.remove_rsb(rid);
                } else {
                    r.filters = remaining;
                }
            }
        }
    }

    /// After path state went: drop the session if nothing is left, else re-merge reservations.
    pub(super) fn after_path_removal(&mut self, now: Instant, sid: SessionId) {
        if self.sessions[sid].psbs.is_empty() {
            self.remove_session(sid);
        } else {
            self.update_reservations(now, sid);
        }
    }

    fn forget_session_if_empty(&mut self, sid: SessionId) {
        if self.sessions[sid].psbs.is_empty() && self.sessions[sid].rsbs.is_empty() {
            self.remove_session(sid);
        }
    }

    /// Remove a session and everything in it.
    pub(super) fn remove_session(&mut self, sid: SessionId) {
        let psbs = self.sessions[sid].psbs.clone();
        for id in psbs {
            let p = self.psbs.remove(id);
            if let Some(h) = p.cleanup {
                self.timers.cancel(h);
            }
            if let Some(ph) = p.phop {
                self.phop_release(ph);
            }
            for oiat in p.oiat {
                self.oiats.remove(oiat);
            }
            self.reported.remove(&id);
        }
        let rsbs = self.sessions[sid].rsbs.clone();
        for id in rsbs {
            self.remove_rsb(id);
        }
        let out = self.sessions[sid].out_isbs.clone();
        for id in out {
            let o = self.out_isbs.remove(id);
            self.tc.release(o.tc);
            for oiat in o.oiat {
                if self.oiats.contains(oiat) {
                    self.oiats.remove(oiat);
                }
            }
        }
        let s = self.sessions.remove(sid);
        for u in s.upstream {
            self.phop_release(u.phop);
        }
        for h in [s.refresh, s.repair].into_iter().flatten() {
            self.timers.cancel(h);
        }
        self.session_index.remove(&s.key);
    }
}
