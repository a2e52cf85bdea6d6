//! RESERVE and RESPONSE processing (RFC 5974 §5.4.1, §5.4.3), tear, and the summary lists
//! (§5.3.6, §5.3.7).

use super::state::{Initiation, OwnRequest, Reservation, Role, TimerKind, rsn_cmp};
use super::{QosEvent, QosNslp, refresh_period, rmf};
use crate::wire::{
    Answers, Body, ErrorClass, GenericFlags, InfoSpec, Message, Reserve, Response, Rii, Rsn,
    RsnList, SessionIdList, code,
};
use core::cmp::Ordering;
use pathwise_core::tc::TrafficControl;
use pathwise_core::time::Instant;
use pathwise_gist::nslp::{ApiError, Direction, GistApi, RecvMessage};
use pathwise_gist::wire::{PathCoupledMri, SessionId};

/// Whether an INFO-SPEC reports an error that ends the reservation (RFC 5975 §4.2.3: "QNEs
/// receiving the RESPONSE message MUST remove the corresponding reservation"; RFC 5974 §5.3.5
/// classes 3–5), as opposed to success, information, or a request for a full refresh.
fn ends_reservation(info: &InfoSpec) -> bool {
    match info.class {
        ErrorClass::ProtocolError | ErrorClass::PermanentFailure => true,
        // §5.3.5: for the other transient failures "the default action is that the QNE that
        // receives this INFO-SPEC object SHOULD re-trigger the retransmission".
        ErrorClass::TransientFailure => info.code == code::transient::RESERVATION_FAILURE,
        _ => false,
    }
}

impl<T: TrafficControl> QosNslp<T> {
    /// Send the session's RESERVE towards the QNR: full (with QSPEC) or reduced (RSN only,
    /// §3.2.5). `rii`: an RII to carry, `own` if this node inserted it (then it waits for the
    /// RESPONSE and retransmits, §5.2.4).
    pub(super) fn send_reserve(
        &mut self,
        gist: &mut dyn GistApi,
        now: Instant,
        sid: SessionId,
        rii: Option<Rii>,
        own: bool,
        full: bool,
    ) -> Result<(), ApiError> {
        let Some(s) = self.sessions.get(&sid) else {
            return Ok(());
        };
        let mut r = Reserve::new(self.own_rsn(s.rsn_out));
        r.replace = true;
        r.rii = rii;
        r.refresh_period = Some(refresh_period(self.cfg.refresh_period));
        r.bound_sessions = s.bound.clone();
        if full {
            r.packet_classifier = s.packet_classifier;
            r.qspec = Some(s.qspec.clone());
        }
        let mut msg = Message::new(Body::Reserve(r));
        msg.flags.break_ = s.break_flag;
        let (flow, dir) = (s.flow, s.initiation.toward_qnr());
        let bytes = msg.to_bytes();
        if own && let Some(rii) = rii {
            let req = OwnRequest {
                rii,
                bytes: bytes.clone(),
                direction: dir,
                first_sent: now,
                wait: self.cfg.request_retry,
            };
            if let Some(s) = self.sessions.get_mut(&sid) {
                s.own_request = Some(req);
            }
            self.set_timer(sid, TimerKind::Retry, Some(now + self.cfg.request_retry));
        }
        if let Some(s) = self.sessions.get_mut(&sid) {
            s.full_refresh &= !full;
        }
        let sent = self.dispatch(
            gist,
            now,
            sid,
            &flow,
            dir,
            crate::wire::MsgType::Reserve,
            bytes,
            None,
        );
        if sent == Err(ApiError::NoRoutingState) {
            self.no_reverse_path(sid);
        }
        sent?;
        let mut mri = flow;
        mri.upstream = dir == Direction::Upstream;
        // B.5: keep the routing state towards the QNR for as long as the reservation lives.
        gist.set_state_lifetime(
            now,
            self.cfg.nslpid,
            sid,
            &pathwise_gist::wire::Mri::PathCoupled(mri),
            dir,
            Self::lifetime(self.cfg.refresh_period),
        );
        Ok(())
    }

    /// A receiver-initiated QNE whose RESERVE GIST cannot send on towards the QNR (no
    /// routing state that way: no QUERY passes here; refused at once, or reported by a
    /// MessageStatus once GIST gave up waiting for it) is off the reverse path (§4.3), as when
    /// GIST reports that state lost (`RoutingStateLost`): refreshes no longer extend its state,
    /// which goes at its lifetime unless GIST finds a peer that way again. Without this, a
    /// state installed after that report — a full RESERVE from a downstream peer whose GIST
    /// still routes to this node, because this node keeps querying it to keep its reverse
    /// path — is refreshed by that peer for ever (QoS campaign finding 4, seed
    /// 5861785519592049).
    pub(super) fn no_reverse_path(&mut self, sid: SessionId) {
        if let Some(s) = self.sessions.get_mut(&sid)
            && s.initiation == Initiation::Receiver
            && s.role == Role::Qne
            && !s.reverse_lost
        {
            s.reverse_lost = true;
            self.counters.reverse_path_lost += 1;
        }
    }

    /// RFC 5974 §4.3: a receiver-initiated reservation's RESERVEs travel the reverse path,
    /// which lives as long as each node keeps its downstream routing state (B.5); keep it for
    /// the reservation's lifetime whenever the reservation is refreshed.
    pub(super) fn keep_reverse_path(
        &mut self,
        gist: &mut dyn GistApi,
        now: Instant,
        sid: SessionId,
    ) {
        let Some(s) = self.sessions.get(&sid) else {
            return;
        };
        if s.initiation != Initiation::Receiver || s.reverse_lost {
            return;
        }
        let mut mri = s.flow;
        mri.upstream = false;
        gist.set_state_lifetime(
            now,
            self.cfg.nslpid,
            sid,
            &pathwise_gist::wire::Mri::PathCoupled(mri),
            Direction::Downstream,
            Self::lifetime(s.refresh_in),
        );
    }

    /// A RESPONSE towards whoever sent `m` (the reverse of the way it came).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn respond(
        &mut self,
        gist: &mut dyn GistApi,
        now: Instant,
        m: &RecvMessage,
        flow: &PathCoupledMri,
        answers: Option<Answers>,
        mut info: InfoSpec,
        qspec: Option<crate::wire::Qspec>,
        break_flag: bool,
    ) {
        if !info.is_success() && info.source == crate::wire::ErrorSource::None {
            info.source = self.error_source(gist, flow);
        }
        let error = !info.is_success();
        let mut resp = Response::new(info);
        resp.answers = answers;
        resp.qspec = qspec;
        let mut msg = Message::new(Body::Response(resp));
        msg.flags.break_ = break_flag;
        // An error goes to the peer that asked, explicitly routed, to end the state on the
        // path the request came by (§5.4.3, `fail_upstream`). By routing state it would follow
        // the route as it is now, which after a route change leads elsewhere — QoS campaign
        // seed 8341147331591390: a QNR refusing a RESERVE that came up the old path sent its
        // error down the new one, and the old path's reservations, never told, were kept by
        // the QNI's refreshes. A success only informs: by routing state, as GIST would.
        let peer = m.sii_handle.filter(|_| error);
        let _ = self.send_via(
            gist,
            now,
            m.session_id,
            flow,
            Self::reply_direction(&m.mri),
            &msg,
            peer,
        );
    }

    /// Whether this node ends a RESERVE's path travelling `dir`: the flow's destination
    /// downstream (§4.1), the flow's source upstream (§4.3).
    pub(super) fn is_qnr(gist: &dyn GistApi, flow: &PathCoupledMri, dir: Direction) -> bool {
        match dir {
            Direction::Downstream => gist.is_local(flow.destination),
            Direction::Upstream => gist.is_local(flow.source),
        }
    }

    pub(super) fn on_reserve(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        m: &RecvMessage,
        flow: PathCoupledMri,
        flags: GenericFlags,
        r: Reserve,
    ) {
        let sid = m.session_id;
        let dir = Self::travelled(&m.mri);
        if r.tear {
            self.on_tear(now, gist, m, &r);
            return;
        }
        if let Some(until) = self.orphaned.get_mut(&sid)
            && *until > now
        {
            // Dropped without an answer (§5.4: silently, by default): an answer would keep
            // this node's routing state towards the sender alive, and with it the sender's
            // belief that this node is its peer. The refusal lasts while RESERVEs still come.
            *until = now + Self::lifetime(self.cfg.refresh_period);
            self.counters.drop("no_reverse_path");
            return;
        }
        let answers = Some(r.rii.map_or(Answers::Rsn(r.rsn), Answers::Rii));
        let existing = self.sessions.get(&sid);
        if let Some(s) = existing
            && s.role == Role::Qni
        {
            // §5.4.1: RESERVEs go only towards the QNR; one reaching its QNI looped or came
            // from the wrong direction.
            self.counters.drop("reserve_at_qni");
            return;
        }
        if let Some(s) = existing
            && dir != s.initiation.toward_qnr()
        {
            // §4.1, §4.3: a session's RESERVEs travel one way — downstream when
            // sender-initiated, upstream when receiver-initiated. One travelling the other way
            // (a replay with its direction turned, or another reservation under the same
            // SESSION-ID) must not refresh this state: the state would be kept alive by the
            // refreshes of a reservation it is not, and send its own back the way they came.
            self.counters.drop("reserve_wrong_direction");
            return;
        }
        if let Some(s) = existing
            && m.sii_handle.is_some()
            && m.sii_handle != s.prev_peer
            && m.sii_handle == s.abandoned_peer
            && r.rii.is_none()
        {
            // §5.2.5.4: after an upstream route change, the old upstream peer's refreshes do
            // not win the state back (only a re-routing RESERVE, which carries an RII, does).
            self.counters.drop("reserve_from_old_peer");
            return;
        }
        let peer_changed = existing.is_some_and(|s| {
            m.sii_handle.is_some() && s.prev_peer.is_some() && m.sii_handle != s.prev_peer
        });
        let order = match existing.and_then(|s| s.rsn_in) {
            None => Ordering::Greater,
            // §5.3.1: a new Epoch Identifier (the peer restarted), or another peer (§3.2.12):
            // an updated reservation whatever the RSN says.
            Some(old) if old.epoch != r.rsn.epoch || peer_changed => Ordering::Greater,
            Some(old) => rsn_cmp(r.rsn.rsn, old.rsn),
        };
        match (existing.is_some(), order) {
            (_, Ordering::Less) => {
                // §5.3.1: "an out-of-order message, and the RESERVE message MUST be discarded".
                self.counters.drop("rsn_out_of_order");
            }
            (true, Ordering::Equal) => self.on_refresh(now, gist, m, flow, flags, r),
            (_, _) if r.qspec.is_none() => {
                // §5.4.1: an unknown session refreshed without QSPEC, or §5.3.1 a reduced
                // refresh with a greater RSN: "Full QSPEC required".
                self.counters.drop("reduced_refresh_without_state");
                let info = InfoSpec::new(
                    ErrorClass::TransientFailure,
                    code::transient::FULL_QSPEC_REQUIRED,
                );
                self.respond(
                    gist,
                    now,
                    m,
                    &flow,
                    Some(Answers::Rsn(r.rsn)),
                    info,
                    None,
                    false,
                );
            }
            _ => self.install(now, gist, m, flow, dir, flags, r, answers),
        }
    }

    /// A RESERVE with the RSN already held: a refresh (§5.3.1 "the current state MUST be
    /// refreshed"), with its summary list (§5.3.6, §5.3.7).
    fn on_refresh(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        m: &RecvMessage,
        flow: PathCoupledMri,
        flags: GenericFlags,
        r: Reserve,
    ) {
        let sid = m.session_id;
        let r_in = self.peer_refresh_period(r.refresh_period);
        let Some(s) = self.sessions.get_mut(&sid) else {
            return;
        };
        s.refresh_in = r_in;
        // §3.2.12: the QNR sends no refreshes of its own, so it looks at the flow's outgoing
        // interface when refreshed (the data sender of a receiver-initiated reservation).
        if s.role == Role::Qnr && !self.readmit(now, gist, sid) {
            return;
        }
        let Some(s) = self.sessions.get(&sid) else {
            return;
        };
        let (role, extend) = (s.role, !s.reverse_lost);
        if extend {
            self.set_timer(sid, TimerKind::Expire, Some(now + Self::lifetime(r_in)));
        }
        self.keep_reverse_path(gist, now, sid);
        if let Some(rii) = r.rii {
            // A retransmission of a request (§5.2.4: the same RSN): pass it on towards the
            // QNR again, or answer it here.
            if role == Role::Qnr {
                let q = self
                    .sessions
                    .get(&sid)
                    .map(|s| rmf::response_qspec(&s.qspec));
                let info =
                    InfoSpec::new(ErrorClass::Success, code::success::RESERVATION_SUCCESSFUL);
                self.respond(gist, now, m, &flow, Some(Answers::Rii(rii)), info, q, false);
            } else {
                // §5.2.4: a request is retransmitted QOSNSLP_REQUEST_RETRY apart at the least,
                // so the same RII again within half that — or this node's own — is the request
                // coming round a routing loop (GIST states pointing at each other): forwarding
                // it would send it round for ever.
                let retry = self.cfg.request_retry / 2;
                let looped = self.sessions.get(&sid).is_some_and(|s| {
                    s.own_request.as_ref().is_some_and(|o| o.rii == rii)
                        || s.rii_forwarded_at
                            .is_some_and(|(x, t)| x == rii && now < t + retry)
                });
                if looped {
                    self.counters.drop("rii_looped");
                    return;
                }
                if let Some(s) = self.sessions.get_mut(&sid) {
                    if !s.forwarded_riis.contains(&rii) {
                        s.forwarded_riis.push(rii);
                    }
                    s.rii_forwarded_at = Some((rii, now));
                }
                let _ = self.send_reserve(gist, now, sid, Some(rii), false, true);
            }
        } else if flags.ack_req {
            // §5.4.1: acknowledge a refresh that asked for it.
            let info = InfoSpec::new(ErrorClass::Success, code::success::ACKNOWLEDGEMENT);
            self.respond(
                gist,
                now,
                m,
                &flow,
                Some(Answers::Rsn(r.rsn)),
                info,
                None,
                false,
            );
        }
        if let Some(list) = r.session_id_list {
            self.on_summary(now, gist, m, &flow, r.rsn, list, r.rsn_list);
        }
    }

    /// Install or modify a reservation from a full RESERVE; pass it on or answer it.
    #[allow(clippy::too_many_arguments)]
    fn install(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        m: &RecvMessage,
        flow: PathCoupledMri,
        dir: Direction,
        flags: GenericFlags,
        r: Reserve,
        answers: Option<Answers>,
    ) {
        let sid = m.session_id;
        let Some(mut qspec) = r.qspec.clone() else {
            return;
        };
        let qnr = Self::is_qnr(gist, &flow, dir);
        let oif = self.outgoing_interface(gist, &flow);
        if oif.is_none() && !gist.is_local(flow.destination) {
            // No route for the flow: nothing to admit on (RFC 5974 §5.3.5 Permanent Failure).
            self.counters.drop("no_route");
            let info = InfoSpec::new(
                ErrorClass::PermanentFailure,
                code::permanent::INTERNAL_ERROR,
            );
            self.respond(gist, now, m, &flow, answers, info, None, flags.break_);
            return;
        }
        let existing = self.sessions.get(&sid).and_then(|s| s.tc);
        let cls = super::state::classifier(&flow, r.packet_classifier);
        match rmf::admit(&mut qspec, &mut self.tc, oif, existing, cls) {
            Err(refusal) => {
                if refusal.admission {
                    self.counters.admission_failures += 1;
                }
                self.counters.drop("reservation_refused");
                // RFC 5975 §4.2.4: the RESPONSE carries the QSPEC with the failed parameters
                // flagged. A modification that fails keeps the old reservation — unless the
                // flow has moved to another interface: the old one no longer serves it, and
                // the RESPONSE ends the reservation upstream (§4.2.3), so it ends here too.
                let moved = existing.is_some_and(|(i, _)| Some(i) != oif);
                let refusal_info = refusal.info.clone();
                let break_ = flags.break_;
                self.respond(
                    gist,
                    now,
                    m,
                    &flow,
                    answers,
                    refusal.info,
                    Some(qspec),
                    break_,
                );
                if moved && ends_reservation(&refusal_info) {
                    self.tear_session(gist, now, sid);
                }
            }
            Ok(admitted) => {
                self.counters.admitted += 1;
                let r_in = self.peer_refresh_period(r.refresh_period);
                let is_new = !self.sessions.contains_key(&sid);
                let s = self.sessions.entry(sid).or_insert_with(|| Reservation {
                    flow,
                    role: if qnr { Role::Qnr } else { Role::Qne },
                    initiation: Initiation::of(dir),
                    prev_peer: None,
                    abandoned_peer: None,
                    notified_peer: None,
                    next_peer: None,
                    abandoned_next: None,
                    old_branch: None,
                    rsn_in: None,
                    rsn_out: 0,
                    refresh_in: r_in,
                    qspec: qspec.clone(),
                    requested: r.qspec.clone().unwrap_or_else(|| qspec.clone()),
                    packet_classifier: None,
                    bound: Vec::new(),
                    tc: None,
                    rate: 0.0,
                    full_refresh: true,
                    own_request: None,
                    forwarded_riis: Vec::new(),
                    rii_forwarded_at: None,
                    reverse_lost: false,
                    break_flag: false,
                    refresh_at: None,
                    expires_at: None,
                    retry_at: None,
                });
                if !is_new {
                    // §5.3.1: the node's own RSN goes up with every changed reservation.
                    s.rsn_out = s.rsn_out.wrapping_add(1);
                }
                s.flow = flow;
                if m.sii_handle.is_some() && s.prev_peer.is_some() && m.sii_handle != s.prev_peer {
                    s.abandoned_peer = s.prev_peer;
                }
                s.prev_peer = m.sii_handle.or(s.prev_peer);
                s.rsn_in = Some(r.rsn);
                s.refresh_in = r_in;
                s.qspec = qspec.clone();
                if let Some(q) = &r.qspec {
                    s.requested = q.clone();
                }
                s.packet_classifier = r.packet_classifier;
                // §5.3.3: BOUND-SESSION-IDs are stored and copied on.
                let old_bound = std::mem::replace(&mut s.bound, r.bound_sessions.clone());
                s.tc = admitted.tc;
                s.rate = admitted.rate;
                s.full_refresh = true;
                // §5.4.1: BREAK received, BREAK sent.
                s.break_flag = flags.break_;
                if old_bound != s.bound {
                    let new_bound = s.bound.clone();
                    self.index_bindings(sid, &old_bound, &new_bound);
                }
                if !self.sessions.get(&sid).is_some_and(|s| s.reverse_lost) {
                    self.set_timer(sid, TimerKind::Expire, Some(now + Self::lifetime(r_in)));
                }
                self.keep_reverse_path(gist, now, sid);
                if qnr {
                    if is_new {
                        self.events
                            .push_back(QosEvent::Installed { session_id: sid });
                    }
                    if let Some(rii) = r.rii {
                        // §5.4.1: the QNR answers an RII; RFC 5975 §4.3.1: with QoS Reserved.
                        let info = InfoSpec::new(
                            ErrorClass::Success,
                            code::success::RESERVATION_SUCCESSFUL,
                        );
                        let q = rmf::response_qspec(&qspec);
                        self.respond(
                            gist,
                            now,
                            m,
                            &flow,
                            Some(Answers::Rii(rii)),
                            info,
                            Some(q),
                            flags.break_,
                        );
                    } else if flags.ack_req {
                        let info =
                            InfoSpec::new(ErrorClass::Success, code::success::ACKNOWLEDGEMENT);
                        self.respond(
                            gist,
                            now,
                            m,
                            &flow,
                            Some(Answers::Rsn(r.rsn)),
                            info,
                            None,
                            flags.break_,
                        );
                    }
                } else {
                    if let Some(rii) = r.rii
                        && let Some(s) = self.sessions.get_mut(&sid)
                        && !s.forwarded_riis.contains(&rii)
                    {
                        s.forwarded_riis.push(rii);
                    }
                    // §5.4.1: "A new resource setup was done": a new RESERVE to the next peer.
                    if self
                        .send_reserve(gist, now, sid, r.rii, false, true)
                        .is_err()
                    {
                        self.counters.drop("not_forwarded");
                    }
                    if is_new {
                        self.schedule_refresh(now, sid);
                    }
                }
                if let Some(list) = r.session_id_list {
                    self.on_summary(now, gist, m, &flow, r.rsn, list, r.rsn_list);
                }
            }
        }
    }

    /// A tearing RESERVE (§5.4.1).
    fn on_tear(&mut self, now: Instant, gist: &mut dyn GistApi, m: &RecvMessage, r: &Reserve) {
        let sid = m.session_id;
        if self.tear_allowed(m, sid, r.rsn) {
            self.counters.torn += 1;
            self.events.push_back(QosEvent::Torn { session_id: sid });
            self.tear_session(gist, now, sid);
        }
        // §3.2.6 summary tear: "The downstream stateful QNE must silently ignore any unknown
        // SESSION-IDs."
        if let (Some(list), Some(rsns)) = (&r.session_id_list, &r.rsn_list)
            && list.0.len() == rsns.rsns.len()
        {
            for (other, rsn) in list.0.iter().zip(&rsns.rsns) {
                let rsn = Rsn {
                    rsn: *rsn,
                    epoch: rsns.epoch,
                };
                if self.sessions.contains_key(other) && self.tear_allowed(m, *other, rsn) {
                    self.counters.torn += 1;
                    self.events.push_back(QosEvent::Torn { session_id: *other });
                    self.tear_session(gist, now, *other);
                }
            }
        }
    }

    /// Whether a tear for `sid` with `rsn` from `m`'s sender may remove the state.
    fn tear_allowed(&mut self, m: &RecvMessage, sid: SessionId, rsn: Rsn) -> bool {
        let Some(s) = self.sessions.get(&sid) else {
            self.counters.drop("tear_unknown_session");
            return false;
        };
        if s.role == Role::Qni {
            self.counters.drop("reserve_at_qni");
            return false;
        }
        if Self::travelled(&m.mri) != s.initiation.toward_qnr() {
            // §4.1, §4.3, as in `on_reserve`: a tear from the wrong direction is not this
            // reservation's.
            self.counters.drop("reserve_wrong_direction");
            return false;
        }
        // §5.2.5.2, §5.4.1: a tear "that does not come from the current peer QNE (identified
        // by its SII) MUST be ignored and MUST NOT be forwarded".
        if m.sii_handle.is_some() && s.prev_peer.is_some() && m.sii_handle != s.prev_peer {
            self.counters.drop("tear_not_from_peer");
            return false;
        }
        // §5.3.6: "RSN values MUST be interpreted ... whether it is referring to an old state".
        if let Some(old) = s.rsn_in
            && old.epoch == rsn.epoch
            && rsn_cmp(rsn.rsn, old.rsn) == Ordering::Less
        {
            self.counters.drop("rsn_out_of_order");
            return false;
        }
        true
    }

    /// Remove a session here and, unless this is its QNR, send the tear on towards the QNR
    /// (with an RSN above the last one sent, §5.3.1).
    pub(super) fn tear_session(&mut self, gist: &mut dyn GistApi, now: Instant, sid: SessionId) {
        let Some(s) = self.sessions.get(&sid) else {
            return;
        };
        if s.role != Role::Qnr {
            let mut r = Reserve::new(self.own_rsn(s.rsn_out.wrapping_add(1)));
            r.tear = true;
            r.bound_sessions = s.bound.clone();
            let msg = Message::new(Body::Reserve(r));
            let (flow, dir) = (s.flow, s.initiation.toward_qnr());
            self.counters.tears_sent += 1;
            // §5.2.4: "Retransmissions SHOULD be disabled for tear messages."
            let _ = self.send(gist, now, sid, &flow, dir, &msg);
        }
        self.remove_session(gist, now, sid);
    }

    /// RFC 5974 §5.2.5.2: "When the QNE receives the RESPONSE message that relates to the
    /// RESERVE message sent down the new path, it SHOULD send a RESERVE message with the TEAR
    /// flag sent down the old path. To do so, it MUST request GIST to use its explicit routing
    /// mechanism, and the QoS NSLP MUST supply an SII-Handle relating to the old peer QNE",
    /// with RSN[current] − 1 (RSN[current] unchanged). §3.2.12 puts it at the node whose path
    /// towards the QNR changed: the divergence point of a sender-initiated reservation, the
    /// convergence point (in the data's direction) of a receiver-initiated one, which sends
    /// the RESERVE up the new path. The old peer tears its state and sends the tear on towards
    /// the QNR, where the node the branches meet ignores it (not from its current peer,
    /// §5.4.1). A node whose GIST named the old peer again meanwhile (a spurious change or a
    /// route back, §3.2.12.2: `old_branch` is cleared then), or whose RESPONSE came back from
    /// the old peer (the old path still carries the session), sends nothing; the RSN keeps a
    /// tear that reaches a node already refreshed along the new path from acting (§5.2.5.2).
    /// Like any tear it is not retransmitted (§5.2.4): if it is lost, or GIST no longer knows
    /// the handle (a MessageStatus then says so), the old branch times out as before.
    pub(super) fn tear_old_branch(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        sid: SessionId,
        answered_by: Option<pathwise_gist::nslp::SiiHandle>,
    ) {
        let Some(s) = self.sessions.get_mut(&sid) else {
            return;
        };
        let Some(old) = s.old_branch.take() else {
            return;
        };
        if Some(old) == answered_by {
            return;
        }
        let mut r = Reserve::new(Rsn {
            rsn: s.rsn_out.wrapping_sub(1),
            epoch: self.epoch,
        });
        r.tear = true;
        r.bound_sessions = s.bound.clone();
        let msg = Message::new(Body::Reserve(r));
        let (flow, dir) = (s.flow, s.initiation.toward_qnr());
        self.counters.tears_sent += 1;
        self.send_to_peer(gist, now, sid, &flow, dir, &msg, old);
    }

    /// SESSION-ID-LIST and RSN-LIST of a refreshing RESERVE (§5.3.6, §5.3.7): refresh each
    /// session in step; report unknown sessions and mismatched RSNs back in one informational
    /// RESPONSE each.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn on_summary(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        m: &RecvMessage,
        flow: &PathCoupledMri,
        primary: Rsn,
        list: SessionIdList,
        rsns: Option<RsnList>,
    ) {
        let Some(rsns) = rsns.filter(|l| l.rsns.len() == list.0.len()) else {
            // §5.3.7: a count mismatch is "a protocol error indicating a bad value".
            self.counters.drop("summary_list_mismatch");
            let info = InfoSpec::new(
                ErrorClass::ProtocolError,
                code::protocol::ERRONEOUS_TLV_VALUE,
            )
            .object_type_info(crate::wire::object_type::RSN_LIST);
            self.respond(
                gist,
                now,
                m,
                flow,
                Some(Answers::Rsn(primary)),
                info,
                None,
                false,
            );
            return;
        };
        let (mut unknown, mut stale) = (Vec::new(), (Vec::new(), Vec::new()));
        for (sid, rsn) in list.0.iter().zip(&rsns.rsns) {
            let ok = match self.sessions.get(sid) {
                None => {
                    unknown.push(*sid);
                    continue;
                }
                Some(s) => {
                    s.rsn_in
                        == Some(Rsn {
                            rsn: *rsn,
                            epoch: rsns.epoch,
                        })
                        && (m.sii_handle.is_none() || s.prev_peer == m.sii_handle)
                }
            };
            if ok
                && self.sessions.get(sid).is_some_and(|s| s.role == Role::Qnr)
                && !self.readmit(now, gist, *sid)
            {
                continue; // §3.2.12, as in `on_refresh`
            }
            if ok && self.sessions.get(sid).is_some_and(|s| !s.reverse_lost) {
                let r_in = self
                    .sessions
                    .get(sid)
                    .map(|s| s.refresh_in)
                    .unwrap_or_default();
                self.set_timer(*sid, TimerKind::Expire, Some(now + Self::lifetime(r_in)));
                self.keep_reverse_path(gist, now, *sid);
            } else {
                stale.0.push(*sid);
                stale.1.push(*rsn);
            }
        }
        if !unknown.is_empty() {
            self.counters.drop("summary_unknown_session");
            let info = InfoSpec::new(
                ErrorClass::Informational,
                code::informational::UNKNOWN_SESSION_ID_IN_LIST,
            );
            let mut resp = Response::new(info);
            resp.session_id_list = Some(SessionIdList(unknown));
            let msg = Message::new(Body::Response(resp));
            let _ = self.send(
                gist,
                now,
                m.session_id,
                flow,
                Self::reply_direction(&m.mri),
                &msg,
            );
        }
        if !stale.0.is_empty() {
            self.counters.drop("summary_rsn_mismatch");
            let info = InfoSpec::new(
                ErrorClass::Informational,
                code::informational::MISMATCHING_RSN_IN_LIST,
            );
            let mut resp = Response::new(info);
            resp.session_id_list = Some(SessionIdList(stale.0));
            resp.rsn_list = Some(RsnList {
                epoch: rsns.epoch,
                rsns: stale.1,
            });
            let msg = Message::new(Body::Response(resp));
            let _ = self.send(
                gist,
                now,
                m.session_id,
                flow,
                Self::reply_direction(&m.mri),
                &msg,
            );
        }
    }

    pub(super) fn on_response(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        m: &RecvMessage,
        flow: PathCoupledMri,
        r: Response,
    ) {
        let sid = m.session_id;
        // §5.3.6, §5.3.7: sessions of our summary the peer did not know or had out of step:
        // send them in full.
        if r.info_spec.class == ErrorClass::Informational
            && matches!(
                r.info_spec.code,
                code::informational::UNKNOWN_SESSION_ID_IN_LIST
                    | code::informational::MISMATCHING_RSN_IN_LIST
            )
            && let Some(list) = &r.session_id_list
        {
            for other in &list.0 {
                if self.sessions.contains_key(other) {
                    let _ = self.send_reserve(gist, now, *other, None, false, true);
                }
            }
            return;
        }
        // The peer towards the QNR, if GIST has not named it yet (its Routing Status Change
        // can come before this node held the session): whoever answers from that side.
        if let Some(s) = self.sessions.get_mut(&sid)
            && s.next_peer.is_none()
            && Self::travelled(&m.mri) == super::state::reverse(s.initiation.toward_qnr())
        {
            s.next_peer = m.sii_handle;
        }
        match r.answers {
            Some(Answers::Rii(rii)) => self.on_rii_response(now, gist, m, flow, rii, r),
            Some(Answers::Rsn(rsn)) => {
                let Some(s) = self.sessions.get(&sid) else {
                    self.counters.drop("response_unknown_session");
                    return;
                };
                // §5.2.5.4: after a route change, what the old peer towards the QNR says
                // about our RSN is about a branch left behind.
                if s.next_peer.is_some() && m.sii_handle.is_some() && m.sii_handle != s.next_peer {
                    self.counters.drop("response_from_old_peer");
                    return;
                }
                // §5.4.3: "If there is no match for RSN, the message SHOULD be silently dropped."
                if rsn != self.own_rsn(s.rsn_out) {
                    self.counters.drop("response_rsn_mismatch");
                    return;
                }
                let info = &r.info_spec;
                if info.class == ErrorClass::TransientFailure
                    && info.code == code::transient::FULL_QSPEC_REQUIRED
                    || info.class == ErrorClass::Informational
                        && info.code == code::informational::REDUCED_REFRESHES_NOT_SUPPORTED
                {
                    // §5.4.1: "The upstream peer SHOULD send a complete RESERVE"; §3.2.5:
                    // stop reduced refreshes to a peer that lacks them.
                    let _ = self.send_reserve(gist, now, sid, None, false, true);
                    return;
                }
                if ends_reservation(info) {
                    self.fail_upstream(now, gist, m, flow, r);
                } else if info.class == ErrorClass::TransientFailure {
                    // §5.3.5: try again — the next refresh carries the full QSPEC.
                    if let Some(s) = self.sessions.get_mut(&sid) {
                        s.full_refresh = true;
                    }
                }
            }
            None => {
                // §5.4.3: "MUST NOT be forwarded further"; an error still ends the state.
                if ends_reservation(&r.info_spec) && self.sessions.contains_key(&sid) {
                    self.fail_upstream(now, gist, m, flow, r);
                } else {
                    self.counters.drop("response_absorbed");
                }
            }
        }
    }

    /// An error RESPONSE: the reservation here goes (RFC 5975 §4.2.3), and the RESPONSE goes
    /// on towards the QNI carrying the RSN the previous peer sent (§5.4.3), or is reported
    /// here at the QNI.
    fn fail_upstream(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        m: &RecvMessage,
        flow: PathCoupledMri,
        mut r: Response,
    ) {
        let sid = m.session_id;
        let Some(s) = self.sessions.get(&sid) else {
            return;
        };
        let (role, rsn_in, dir, prev) = (s.role, s.rsn_in, Self::travelled(&m.mri), s.prev_peer);
        self.remove_session(gist, now, sid);
        if role == Role::Qni {
            self.events.push_back(QosEvent::Failed {
                session_id: sid,
                info: r.info_spec,
                qspec: r.qspec,
            });
            return;
        }
        if matches!(r.answers, Some(Answers::Rsn(_))) {
            r.answers = rsn_in.map(Answers::Rsn);
        }
        // §5.4.3: "forward the RESPONSE message further along the path towards the QNI" —
        // the path the reservation came by, whose nodes hold the state the error ends: to the
        // peer its RESERVEs came from.
        let msg = Message::new(Body::Response(r));
        let _ = self.send_via(gist, now, sid, &flow, dir, &msg, prev);
    }

    fn on_rii_response(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        m: &RecvMessage,
        flow: PathCoupledMri,
        rii: Rii,
        r: Response,
    ) {
        let sid = m.session_id;
        if self.queries.get(&sid).is_some_and(|q| q.rii == rii) {
            self.queries.remove(&sid);
            self.events.push_back(QosEvent::QueryAnswered {
                session_id: sid,
                info: r.info_spec,
                qspec: r.qspec,
            });
            return;
        }
        let own = self
            .sessions
            .get(&sid)
            .and_then(|s| s.own_request.as_ref())
            .is_some_and(|o| o.rii == rii);
        if own {
            // §5.3.2: the node that inserted the RII consumes its RESPONSE.
            let role = self.sessions.get(&sid).map(|s| s.role);
            if let Some(s) = self.sessions.get_mut(&sid) {
                s.own_request = None;
            }
            self.set_timer(sid, TimerKind::Retry, None);
            if ends_reservation(&r.info_spec) {
                self.fail_upstream(now, gist, m, flow, r);
                return;
            }
            self.tear_old_branch(now, gist, sid, m.sii_handle);
            if role == Some(Role::Qni) {
                if r.info_spec.is_success() {
                    self.events.push_back(QosEvent::Reserved {
                        session_id: sid,
                        qspec: r.qspec,
                    });
                }
            } else {
                self.counters.drop("response_absorbed");
            }
            return;
        }
        let Some(s) = self.sessions.get_mut(&sid) else {
            // No state (a QUERY's RESPONSE passing a node that keeps none): on towards the QNI.
            if gist.is_local(flow.source) || gist.is_local(flow.destination) {
                self.counters.drop("response_unmatched");
                return;
            }
            self.pass_on_response(now, gist, m, flow, r);
            return;
        };
        s.forwarded_riis.retain(|x| *x != rii);
        if s.role == Role::Qni {
            self.counters.drop("response_unmatched");
            return;
        }
        // §5.4.3: an RII this node did not insert: forward the RESPONSE towards the QNI; an
        // error ends the reservation here first.
        if ends_reservation(&r.info_spec) {
            self.fail_upstream(now, gist, m, flow, r);
        } else {
            self.pass_on_response(now, gist, m, flow, r);
        }
    }

    /// A RESPONSE this node did not ask for goes on the way it travelled (§5.4.3), with the
    /// GIST hop count it arrived with less one (RFC 5971 §4.3.2, as for a QUERY passed on):
    /// QoS campaign seed 387330153904033 had two nodes whose routing states pointed at each
    /// other pass one RESPONSE back and forth 1.1 million times.
    fn pass_on_response(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        m: &RecvMessage,
        flow: PathCoupledMri,
        r: Response,
    ) {
        let dir = Self::travelled(&m.mri);
        let msg = Message::new(Body::Response(r));
        let hops = m.gist_hops.saturating_sub(1);
        self.pass_on(gist, now, m.session_id, &flow, dir, &msg, hops);
    }
}
