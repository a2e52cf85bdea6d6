//! QUERY processing (RFC 5974 §5.4.2): resource queries (§4.2) and the QUERY with
//! RESERVE-INIT of a receiver-initiated reservation (§4.3).

use super::state::{Initiation, Role};
use super::{QosNslp, rmf};
use crate::wire::qspec::ParamValue;
use crate::wire::{Answers, Body, ErrorClass, GenericFlags, InfoSpec, Message, Query, Rii, code};
use pathwise_core::tc::TrafficControl;
use pathwise_core::time::Instant;
use pathwise_gist::nslp::{GistApi, RecvMessage};
use pathwise_gist::wire::PathCoupledMri;
use rand::Rng;

impl<T: TrafficControl> QosNslp<T> {
    pub(super) fn on_query(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        m: &RecvMessage,
        flow: PathCoupledMri,
        flags: GenericFlags,
        mut q: Query,
    ) {
        let sid = m.session_id;
        let dir = Self::travelled(&m.mri);
        // §5.4.2: "the QSPEC is passed to the RMF", which may modify it (QoS Available).
        let oif = self.outgoing_interface(gist, &flow);
        rmf::query_hop(&mut q.qspec, &self.tc, oif);
        let at_end = gist.is_local(flow.destination);
        if q.reserve_init {
            if let Some(s) = self.sessions.get_mut(&sid)
                && s.initiation == Initiation::Receiver
                && s.role != Role::Qnr
            {
                // §3.2.12: a QUERY with RESERVE-INIT reaching a node that holds the
                // reservation (the convergence point after a route change): a full RESERVE
                // back up the new path, not the QUERY further down; RSN + 2 and an RII
                // (§5.2.5.2), whose RESPONSE lets this node tear the branch it sent its
                // RESERVEs along before (`tear_old_branch`) — a QUERY from another peer than
                // the one towards the QNR means that branch was left.
                s.rsn_out = s.rsn_out.wrapping_add(2);
                if let Some(o) = s
                    .next_peer
                    .filter(|o| m.sii_handle.is_some_and(|p| p != *o))
                {
                    s.old_branch = Some(o);
                }
                let (rii, own) = match &s.own_request {
                    Some(o) => (o.rii, false),
                    None => (Rii(self.rng.random()), true),
                };
                let _ = self.send_reserve(gist, now, sid, Some(rii), own, true);
                return;
            }
            if !at_end {
                self.forward_query(
                    now,
                    gist,
                    sid,
                    &flow,
                    dir,
                    flags,
                    q,
                    m.gist_hops.saturating_sub(1),
                );
                return;
            }
            if !self.cfg.accept_reserve_init {
                // §5.4.2: "If this node was not expecting to perform a receiver-initiated
                // reservation, then an error MUST be sent back along the path."
                self.counters.drop("reserve_init_refused");
                let info = InfoSpec::new(
                    ErrorClass::PermanentFailure,
                    code::permanent::AUTHORIZATION_FAILURE,
                );
                self.respond(gist, now, m, &flow, None, info, None, false);
                return;
            }
            if self.sessions.contains_key(&sid) {
                self.counters.drop("reserve_init_duplicate");
                return;
            }
            // §4.3: the QNI builds its RESERVE from the QUERY's QSPEC; QoS Available starts
            // collecting latency afresh along the RESERVE's path.
            let mut qspec = q.qspec;
            qspec.procedure.message_sequence = 1;
            for o in &mut qspec.objects {
                for p in &mut o.params {
                    if o.object_type == crate::wire::QspecObjectType::QosAvailable
                        && let ParamValue::PathLatency(l) = &mut p.value
                    {
                        *l = 0;
                    }
                }
            }
            if rmf::desired(&qspec).is_none() {
                let info =
                    InfoSpec::new(ErrorClass::ProtocolError, code::protocol::MALFORMED_QSPEC);
                self.respond(gist, now, m, &flow, None, info, None, false);
                return;
            }
            // A refusal here (or GIST's) is counted; §4.3 gives this QUERY no RESPONSE, so
            // the QNR learns of it only by the missing RESERVE.
            // §5.3.3: "a QNE MUST copy the BOUND-SESSION-ID object into all messages it sends
            // for the same session".
            let bound = core::mem::take(&mut q.bound_sessions);
            if self
                .initiate(
                    gist,
                    now,
                    sid,
                    flow,
                    qspec,
                    bound,
                    true,
                    Initiation::Receiver,
                )
                .is_err()
            {
                self.counters.drop("reserve_init_failed");
            }
            return;
        }
        // §5.4.2: the QNR (or a scoped QUERY's next hop) answers with the QSPEC collected;
        // others pass the QUERY on with the RII unchanged.
        if at_end || flags.scoping {
            let info = InfoSpec::new(ErrorClass::Success, code::success::ACKNOWLEDGEMENT);
            let answers = q.rii.map(Answers::Rii);
            self.respond(
                gist,
                now,
                m,
                &flow,
                answers,
                info,
                Some(q.qspec),
                flags.break_,
            );
        } else {
            self.forward_query(
                now,
                gist,
                sid,
                &flow,
                dir,
                flags,
                q,
                m.gist_hops.saturating_sub(1),
            );
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn forward_query(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        sid: pathwise_gist::wire::SessionId,
        flow: &PathCoupledMri,
        dir: pathwise_gist::nslp::Direction,
        flags: GenericFlags,
        q: Query,
        hops: u8,
    ) {
        let mut msg = Message::new(Body::Query(q));
        msg.flags.break_ = flags.break_;
        self.pass_on(gist, now, sid, flow, dir, &msg, hops);
    }
}
