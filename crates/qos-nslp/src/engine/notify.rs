//! NOTIFY (RFC 5974 §5.4.4) — received, and sent for an upstream route change (§5.2.5.3) and
//! for reservations bound to a session that went (§5.4.1, §3.2.8) — and GIST's
//! NetworkNotifications (RFC 5971 B.4): route changes (§3.2.12, §5.2.5).

use super::state::{Initiation, Role, reverse};
use super::{QosEvent, QosNslp};
use crate::wire::{BindingCode, Body, ErrorClass, InfoSpec, Message, Notify, Query, Rii, code};
use pathwise_core::tc::TrafficControl;
use pathwise_core::time::Instant;
use pathwise_gist::nslp::{
    Direction, GistApi, NetworkNotification, NotificationKind, RecvMessage, SiiHandle,
};
use pathwise_gist::wire::{Mri, PathCoupledMri, SessionId};
use rand::Rng;

/// Whether an INFO-SPEC is the Informational "Route Change" (§5.1.3.6: "possible route change
/// occurred on downstream path").
fn is_route_change(info: &InfoSpec) -> bool {
    info.class == ErrorClass::Informational && info.code == code::informational::ROUTE_CHANGE
}

impl<T: TrafficControl> QosNslp<T> {
    /// After a route change the flow may leave by another interface: the reservation moves
    /// there (admitted anew from the QSPEC as it reached this node). RFC 5974 §3.2.12 names
    /// "observing the changes in the outgoing interface" as a way to detect a reroute, so this
    /// is asked at every route change GIST reports and at every refresh. A refusal on the new
    /// interface is an admission failure like any other (§5.4.1; RFC 5975 §4.2.3): the old
    /// interface's reservation no longer serves the flow, so it goes with the state here, and
    /// the QNI learns of it (an error RESPONSE towards it, or [`QosEvent::Failed`] at the QNI
    /// itself). Returns whether the session is still held.
    pub(super) fn readmit(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        sid: pathwise_gist::wire::SessionId,
    ) -> bool {
        let Some(s) = self.sessions.get(&sid) else {
            return false;
        };
        let oif = self.outgoing_interface(gist, &s.flow);
        if oif == s.tc.map(|(i, _)| i) {
            return true;
        }
        if oif.is_none() && !gist.is_local(s.flow.destination) {
            // No route for the flow right now: keep what is held until one returns.
            return true;
        }
        let mut q = s.requested.clone();
        let (existing, cls) = (s.tc, s.classifier());
        match super::rmf::admit(&mut q, &mut self.tc, oif, existing, cls) {
            Ok(a) => {
                if oif.is_none()
                    && let Some((_, h)) = existing
                {
                    self.tc.release(h);
                }
                if let Some(s) = self.sessions.get_mut(&sid) {
                    s.tc = a.tc;
                    s.rate = a.rate;
                    s.qspec = q;
                    // The next RESERVE towards the QNR carries the QSPEC admitted here.
                    s.full_refresh = true;
                }
                self.counters.admitted += 1;
                self.counters.readmitted += 1;
                true
            }
            Err(refusal) => {
                if refusal.admission {
                    self.counters.admission_failures += 1;
                }
                self.counters.readmission_failures += 1;
                self.reservation_failed_here(now, gist, sid, refusal.info, q);
                false
            }
        }
    }

    /// This node can no longer hold a reservation (its new outgoing interface refused it): the
    /// state goes here and towards the QNR (a tearing RESERVE), and the QNI is told — by an
    /// error RESPONSE carrying the RSN last received from the previous peer (§5.4.3), which
    /// each node on the way removes its state for (RFC 5975 §4.2.3), or as
    /// [`QosEvent::Failed`] when this is the QNI.
    fn reservation_failed_here(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        sid: pathwise_gist::wire::SessionId,
        mut info: crate::wire::InfoSpec,
        qspec: crate::wire::Qspec,
    ) {
        let Some(s) = self.sessions.get(&sid) else {
            return;
        };
        let (role, flow, rsn_in, toward_qni) =
            (s.role, s.flow, s.rsn_in, reverse(s.initiation.toward_qnr()));
        self.tear_session(gist, now, sid);
        if role == Role::Qni {
            self.events.push_back(QosEvent::Failed {
                session_id: sid,
                info,
                qspec: Some(qspec),
            });
            return;
        }
        if info.source == crate::wire::ErrorSource::None {
            info.source = self.error_source(gist, &flow);
        }
        let mut resp = crate::wire::Response::new(info);
        resp.answers = rsn_in.map(crate::wire::Answers::Rsn);
        resp.qspec = Some(qspec);
        let msg = Message::new(Body::Response(resp));
        let _ = self.send(gist, now, sid, &flow, toward_qni, &msg);
    }

    /// §5.4.4: "NOTIFY messages do not cause any state to be installed"; one about a session
    /// held here is reported ([`QosEvent::Notified`]) and passed on the way it travelled until
    /// the end of the session's path that way — the QNI, for the NOTIFYs this engine sends
    /// (§5.2.5.3: "propagated back to the QNI or QNR"; §5.4.4: the QNI decides what to do) —
    /// spending the GIST hop count like a QUERY. One about a session not held here informs of
    /// nothing and has nowhere to go (`notify_unknown_session`).
    ///
    /// A Route Change (§5.2.5.3: "On receiving such a NOTIFY message, the QoS NSLP SHOULD use
    /// the InvalidateRoutingState API call to inform GIST that routing state may be out of
    /// date"): the change lies the way the NOTIFY came from, so GIST re-runs its handshake
    /// that way at once (B.6 Urgent). It tears nothing, so a spurious one (§3.2.12.2: the
    /// "old" peer was the same node) costs a handshake, not a reservation.
    pub(super) fn on_notify(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        m: &RecvMessage,
        flow: PathCoupledMri,
        n: Notify,
    ) {
        let sid = m.session_id;
        let Some(s) = self.sessions.get(&sid) else {
            self.counters.drop("notify_unknown_session");
            return;
        };
        let dir = Self::travelled(&m.mri);
        let end = if dir == s.initiation.toward_qnr() {
            s.role == Role::Qnr
        } else {
            s.role == Role::Qni
        };
        if is_route_change(&n.info_spec) {
            let towards = reverse(dir);
            let mut mri = flow;
            mri.upstream = towards == Direction::Upstream;
            gist.invalidate_routing_state(
                now,
                self.cfg.nslpid,
                sid,
                &Mri::PathCoupled(mri),
                towards,
                true,
            );
            self.counters.routing_state_invalidated += 1;
        }
        self.events.push_back(QosEvent::Notified {
            session_id: sid,
            info: n.info_spec.clone(),
        });
        if !end {
            let msg = Message::new(Body::Notify(n));
            self.pass_on(
                gist,
                now,
                sid,
                &flow,
                dir,
                &msg,
                m.gist_hops.saturating_sub(1),
            );
        }
    }

    /// RFC 5974 §5.2.5.3: "GIST may notify the QoS NSLP that a possible upstream route change
    /// has occurred over the GIST API. On receiving such a notification, the QoS NSLP SHOULD
    /// send a NOTIFY message with Informational code 0x02 ... If this is sent, it MUST be sent
    /// to the old peer using the GIST explicit routing mechanism through the use of the
    /// SII-Handle." §3.2.12: "If the old path is upstream, the QNE can send a NOTIFY with the
    /// code for 'Route Change'. This is forwarded upstream until it hits a QNE that can issue
    /// a tearing RESERVE downstream" — the divergence point, which does so on its own once
    /// the new path answers (`tear_old_branch`); the NOTIFY gets the old branch re-checked by
    /// GIST and tells the QNI.
    ///
    /// Upstream is towards the QNI of a sender-initiated reservation only; a
    /// receiver-initiated one's upstream is towards its QNR, where a route change is repaired
    /// by the full RESERVE of §5.2.5.2 (`on_network_notification`). The old peer is the one
    /// RESERVEs came from — or, when the new peer's RESERVE arrived first (riding GIST's
    /// Query, before the Confirm that makes GIST report the change), the one this node moved
    /// away from. Nothing is sent when GIST names that abandoned peer (§5.2.5.4: its GIST
    /// refreshing the state it still holds, not a route change), nor twice to the same old
    /// peer while GIST alternates between the two.
    fn notify_upstream_route_change(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        sid: SessionId,
        peer: SiiHandle,
        changed: bool,
    ) {
        let Some(s) = self.sessions.get_mut(&sid) else {
            return;
        };
        if !changed && s.prev_peer.is_none_or(|p| p == peer) {
            return; // first peering, or the same peer: no route change
        }
        if s.abandoned_peer == Some(peer) {
            return;
        }
        let old = match s.prev_peer {
            Some(p) if p != peer => Some(p),
            _ => s.abandoned_peer,
        };
        let Some(old) = old.filter(|o| *o != peer && s.notified_peer != Some(*o)) else {
            return;
        };
        s.notified_peer = Some(old);
        let flow = s.flow;
        let mut info = InfoSpec::new(ErrorClass::Informational, code::informational::ROUTE_CHANGE);
        info.source = self.error_source(gist, &flow);
        let msg = Message::new(Body::Notify(Notify {
            info_spec: info,
            qspec: None,
            unknown: Vec::new(),
        }));
        self.counters.route_change_notifies += 1;
        self.send_to_peer(gist, now, sid, &flow, Direction::Upstream, &msg, old);
    }

    /// RFC 5974 §5.4.1: "If the QNE has reservations that are bound and dependent to this
    /// session (they contain the SESSION-ID of this session in their BOUND-SESSION-ID object
    /// and use Binding Code 0x04), it MUST send a NOTIFY message for each of the reservations
    /// with an appropriate INFO-SPEC." Called whenever a session's state goes here — torn,
    /// timed out, failed, released (§3.2.8: "if the bound session ... is terminated, the
    /// binding session ... must be terminated also"). The NOTIFY goes towards each dependent
    /// reservation's QNI, which decides (§5.4.4: "It is up to the QNI to decide what to do";
    /// §5.3.5: by default "the QNI that receives the INFO-SPEC object SHOULD NOT trigger any
    /// other QoS NSLP procedure") — so it is reported to the application, which may release
    /// it; at the QNI itself the report is made here.
    ///
    /// The RFC names no INFO-SPEC for it; the one its registry has about a binding is
    /// Informational 0x01 "Unknown BOUND-SESSION-ID" ("the message refers to an unknown
    /// SESSION-ID in its BOUND-SESSION-ID object") — what the dependent reservation's
    /// BOUND-SESSION-ID now does here — with the BOUND-SESSION-ID quoted as Object Value Info
    /// (§5.1.3.6), as a reservation may be bound to several sessions, and this node as ESI.
    ///
    /// Bindings 0x01–0x03 (tunnel, bidirectional, aggregate) get no NOTIFY: §5.4.1 makes it a
    /// MAY, and §3.2.8, §5.3.3 call such a binding "purely informative in nature" and "only
    /// indicative"; nor does 0x05 (preemption), which §5.4.1 does not name.
    pub(super) fn notify_dependents(
        &mut self,
        gist: &mut dyn GistApi,
        now: Instant,
        gone: SessionId,
    ) {
        let dependents: Vec<(SessionId, crate::wire::BoundSessionId)> = self
            .dependents
            .range((gone, SessionId([0; 16]))..=(gone, SessionId([0xff; 16])))
            .filter(|(_, sid)| *sid != gone)
            .filter_map(|&(_, sid)| {
                let s = self.sessions.get(&sid)?;
                let b = s
                    .bound
                    .iter()
                    .find(|b| b.session_id == gone && b.code == BindingCode::DEPENDENT)?;
                Some((sid, *b))
            })
            .collect();
        for (sid, binding) in dependents {
            let Some(s) = self.sessions.get(&sid) else {
                continue;
            };
            let (flow, role, toward_qni) = (s.flow, s.role, reverse(s.initiation.toward_qnr()));
            let mut info = InfoSpec::new(
                ErrorClass::Informational,
                code::informational::UNKNOWN_BOUND_SESSION_ID,
            );
            info.source = self.error_source(gist, &flow);
            let info = info.object_value_info(&binding.to_object_bytes(), 0);
            self.counters.bound_notifies += 1;
            if role == Role::Qni {
                self.events.push_back(QosEvent::Notified {
                    session_id: sid,
                    info,
                });
                continue;
            }
            let msg = Message::new(Body::Notify(Notify {
                info_spec: info,
                qspec: None,
                unknown: Vec::new(),
            }));
            let _ = self.send(gist, now, sid, &flow, toward_qni, &msg);
        }
    }

    pub(super) fn on_network_notification(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        n: NetworkNotification,
    ) {
        let sid = n.session_id;
        let Some(s) = self.sessions.get_mut(&sid) else {
            return;
        };
        match n.kind {
            NotificationKind::RoutingStatusChange {
                direction,
                peer,
                changed,
            } if direction == s.initiation.toward_qnr() => {
                s.reverse_lost = false;
                if direction == Direction::Downstream && s.old_branch == Some(peer) {
                    // GIST's Query towards the flow's destination found the old peer again:
                    // the route may have come back, so it is not torn. (Upstream, GIST's latest
                    // peer is just whoever queried last — the old peer too, until its state
                    // goes, RFC 5971 §7.1.4 — which says nothing of the route.)
                    s.old_branch = None;
                }
                if direction == Direction::Upstream
                    && s.abandoned_next == Some(peer)
                    && s.next_peer.is_some()
                {
                    // §5.2.5.4: GIST's latest upstream peer may be the old one refreshing its
                    // state; no falling back to it. Downstream, GIST names the peer that
                    // answered this node's own Query along the route as it is: a route that
                    // went back is followed back — QoS campaign seed 7993882420324183, where
                    // the next peer stayed the abandoned branch's, which then stayed reserved,
                    // refreshed by summaries grouped by that peer.
                    return;
                }
                let old = s.next_peer.replace(peer);
                let moved = changed || old.is_some_and(|o| o != peer);
                if moved {
                    s.abandoned_next = old.filter(|o| *o != peer);
                }
                if moved && s.role != Role::Qnr {
                    if !self.readmit(now, gist, sid) {
                        return;
                    }
                    let Some(s) = self.sessions.get_mut(&sid) else {
                        return;
                    };
                    // §5.2.5.2: a full RESERVE with RSN + 2 and an RII, routed by GIST to the
                    // new peer ("An SII-Handle MUST NOT be specified"). Once its RESPONSE
                    // arrives, the old branch is torn by the old peer's SII-Handle
                    // (`tear_old_branch`); the convergence point ignores the old peer's
                    // refreshes meanwhile (§5.2.5.4).
                    if let Some(o) = old.filter(|o| *o != peer) {
                        s.old_branch = Some(o);
                    }
                    s.rsn_out = s.rsn_out.wrapping_add(2);
                    s.full_refresh = true;
                    self.counters.route_changes += 1;
                    let own = s.own_request.is_none();
                    let rii = s
                        .own_request
                        .as_ref()
                        .map_or_else(|| Rii(self.rng.random()), |o| o.rii);
                    let _ = self.send_reserve(gist, now, sid, Some(rii), own, true);
                }
            }
            NotificationKind::RoutingStatusChange {
                direction: Direction::Upstream,
                peer,
                changed,
            } if s.initiation == Initiation::Sender => {
                self.notify_upstream_route_change(now, gist, sid, peer, changed);
            }
            NotificationKind::RoutingStatusChange {
                direction: Direction::Downstream,
                changed: true,
                ..
            } if s.initiation == Initiation::Receiver => {
                // §3.2.12: receiver-initiated, the divergence point sends a QUERY with the R
                // flag down the new path; the convergence point answers with a RESERVE.
                self.counters.route_changes += 1;
                let mut q = Query::new(s.qspec.clone());
                q.reserve_init = true;
                q.packet_classifier = s.packet_classifier;
                let flow = s.flow;
                let msg = Message::new(Body::Query(q));
                let _ = self.send(gist, now, sid, &flow, Direction::Downstream, &msg);
            }
            NotificationKind::RoutingStateLost { direction }
                if direction == s.initiation.toward_qnr()
                    && s.initiation == Initiation::Receiver
                    && s.role == Role::Qne =>
            {
                // §4.3: a receiver-initiated RESERVE follows the QUERY's path back. With the
                // routing state towards the QNR gone this node may have left the path: its
                // state is no longer extended by refreshes (nor its reverse path kept), and
                // goes at its lifetime unless GIST finds a peer that way again (a convergence
                // point after a route change does, at the next QUERY from the new branch).
                s.reverse_lost = true;
                self.counters.reverse_path_lost += 1;
            }
            NotificationKind::CommunicationFailure { .. } => {
                // Messages to the peer may have been lost: the next refresh goes in full.
                s.full_refresh = true;
            }
            _ => {}
        }
    }
}
