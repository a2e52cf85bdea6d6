//! NOTIFY (RFC 5974 §5.4.4) and GIST's NetworkNotifications (RFC 5971 B.4): route changes
//! (§3.2.12, §5.2.5).

use super::state::{Initiation, Role, reverse};
use super::{QosEvent, QosNslp};
use crate::wire::{Body, Message, Notify, Query, Rii};
use pathwise_core::tc::TrafficControl;
use pathwise_core::time::Instant;
use pathwise_gist::nslp::{Direction, GistApi, NetworkNotification, NotificationKind, RecvMessage};
use rand::Rng;

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

    /// §5.4.4: a NOTIFY installs no state; it is reported, and passed on towards the QNI by a
    /// node that is not it.
    pub(super) fn on_notify(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        m: &RecvMessage,
        n: Notify,
    ) {
        let sid = m.session_id;
        self.events.push_back(QosEvent::Notified {
            session_id: sid,
            info: n.info_spec.clone(),
        });
        if let Some(s) = self.sessions.get(&sid)
            && s.role != Role::Qni
        {
            let (flow, dir) = (s.flow, reverse(s.initiation.toward_qnr()));
            let msg = Message::new(Body::Notify(n));
            let _ = self.send(gist, now, sid, &flow, dir, &msg);
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
                if s.abandoned_next == Some(peer) && s.next_peer.is_some() {
                    // §5.2.5.4: GIST's latest peer may be the old one refreshing its state;
                    // no falling back to it.
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
