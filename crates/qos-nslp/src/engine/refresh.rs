//! Timers: refreshes towards the QNR — full, reduced (RFC 5974 §3.2.5) or summarised
//! (§3.2.6) — the state lifetime (§5.3.4), and retransmission of requests awaiting a RESPONSE
//! (§5.2.4).

use super::state::TimerKind;
use super::{QosEvent, QosNslp, refresh_period};
use crate::wire::{Body, Message, Reserve, RsnList, SessionIdList};
use pathwise_core::tc::TrafficControl;
use pathwise_core::time::Instant;
use pathwise_gist::nslp::{Direction, GistApi, SiiHandle};
use pathwise_gist::wire::SessionId;

impl<T: TrafficControl> QosNslp<T> {
    /// Arm the next refresh, jittered around R.
    pub(super) fn schedule_refresh(&mut self, now: Instant, sid: SessionId) {
        let d = self.jittered(self.cfg.refresh_period);
        self.set_timer(sid, TimerKind::Refresh, Some(now + d));
    }

    /// Take a fired timer off its session.
    fn fired(&mut self, sid: SessionId, kind: TimerKind) {
        if let Some(s) = self.sessions.get_mut(&sid) {
            match kind {
                TimerKind::Refresh => s.refresh_at = None,
                TimerKind::Expire => s.expires_at = None,
                TimerKind::Retry => s.retry_at = None,
            }
        }
    }

    pub(super) fn on_timeout(&mut self, now: Instant, gist: &mut dyn GistApi) {
        let mut due = Vec::new();
        while let Some(&(t, sid, kind)) = self.timers.first()
            && t <= now
        {
            self.timers.pop_first();
            self.fired(sid, kind);
            match kind {
                TimerKind::Refresh => due.push(sid),
                TimerKind::Expire => {
                    // §5.3.4 / RFC 2205 §3.7: no refresh within L, the state goes. One that
                    // lost its reverse path refuses the RESERVEs still coming its way.
                    if let Some(s) = self.sessions.get(&sid)
                        && s.reverse_lost
                    {
                        let until = now + Self::lifetime(s.refresh_in);
                        self.orphaned.retain(|_, t| *t > now);
                        self.orphaned.insert(sid, until);
                    }
                    self.counters.expired += 1;
                    self.events.push_back(QosEvent::Expired { session_id: sid });
                    // RFC 2205 §3.1.5 (whose timer management §5.3.4 adopts): a teardown is
                    // also "initiated ... by a router as the result of state timeout" and
                    // forwarded hop by hop without delay. Otherwise the state this node kept
                    // refreshing towards the QNR would outlive it by a lifetime per hop. A
                    // node the flow moved away from is not its peer's current previous peer
                    // any more, so its tear is ignored there (§5.2.5.2).
                    self.tear_session(gist, now, sid);
                }
                TimerKind::Retry => self.retransmit(now, gist, sid),
            }
        }
        if !due.is_empty() {
            self.refresh(now, gist, due);
        }
    }

    /// §5.2.4: resend unchanged, waits doubling, until QOSNSLP_RETRY_MAX has passed.
    fn retransmit(&mut self, now: Instant, gist: &mut dyn GistApi, sid: SessionId) {
        let Some(s) = self.sessions.get_mut(&sid) else {
            return;
        };
        let Some(req) = s.own_request.as_mut() else {
            return;
        };
        if now.saturating_duration_since(req.first_sent) >= self.cfg.retry_max {
            s.own_request = None;
            self.counters.request_timeouts += 1;
            self.events
                .push_back(QosEvent::NoResponse { session_id: sid });
            return;
        }
        req.wait *= 2;
        let (bytes, dir, wait, flow) = (req.bytes.clone(), req.direction, req.wait, s.flow);
        self.counters.retransmissions += 1;
        self.counters
            .count_sent(crate::wire::MsgType::Reserve, bytes.len());
        let _ = self.send_bytes(gist, now, sid, &flow, dir, bytes, None);
        self.set_timer(sid, TimerKind::Retry, Some(now + wait));
    }

    /// Refresh the sessions whose timers fired. Those needing their QSPEC go in full; the rest
    /// reduced, and — with the reduced refreshes of other sessions to the same next peer due
    /// within a quarter period — folded into summaries (§3.2.6: "The SII-Handle identifies a
    /// peer and should be the same for all sessions whose downstream peer is the same").
    fn refresh(&mut self, now: Instant, gist: &mut dyn GistApi, due: Vec<SessionId>) {
        let mut groups: Vec<((SiiHandle, Direction), Vec<SessionId>)> = Vec::new();
        for sid in due {
            let Some(s) = self.sessions.get(&sid) else {
                continue;
            };
            if s.refresh_at.is_some() {
                continue; // already refreshed in a summary this round
            }
            // §3.2.12: a flow now leaving by another interface is a reroute, whether or not
            // GIST reported a new peer (the same peer behind another link, or a route that
            // changed back); a refusal there ends the reservation.
            if !self.readmit(now, gist, sid) {
                continue;
            }
            let Some(s) = self.sessions.get(&sid) else {
                continue;
            };
            let full = s.full_refresh || !self.cfg.reduced_refresh;
            let key = s.next_peer.map(|p| (p, s.initiation.toward_qnr()));
            self.schedule_refresh(now, sid);
            match key {
                Some(k) if !full && self.cfg.summary_refresh => {
                    match groups.iter_mut().find(|(g, _)| *g == k) {
                        Some((_, v)) => v.push(sid),
                        None => groups.push((k, vec![sid])),
                    }
                }
                _ => {
                    if full {
                        self.counters.full_refreshes += 1;
                    } else {
                        self.counters.reduced_refreshes += 1;
                    }
                    let _ = self.send_reserve(gist, now, sid, None, false, full);
                }
            }
        }
        let window = now + self.cfg.refresh_period / 4;
        for ((peer, dir), mut sids) in groups {
            // Sessions to the same peer due soon ride along.
            let early: Vec<SessionId> = self
                .timers
                .range(..(window, SessionId([0xff; 16]), TimerKind::Retry))
                .filter(|(_, sid, k)| *k == TimerKind::Refresh && !sids.contains(sid))
                .map(|(_, sid, _)| *sid)
                .filter(|sid| {
                    self.sessions.get(sid).is_some_and(|s| {
                        !s.full_refresh
                            && s.next_peer == Some(peer)
                            && s.initiation.toward_qnr() == dir
                    })
                })
                .take(self.cfg.summary_max)
                .collect();
            for sid in early {
                self.schedule_refresh(now, sid);
                sids.push(sid);
            }
            for chunk in sids.chunks(self.cfg.summary_max.max(1) + 1) {
                self.send_summary(now, gist, chunk);
            }
        }
    }

    /// One reduced refresh of `sids[0]` carrying the others in SESSION-ID-LIST and RSN-LIST.
    fn send_summary(&mut self, now: Instant, gist: &mut dyn GistApi, sids: &[SessionId]) {
        let Some((&primary, rest)) = sids.split_first() else {
            return;
        };
        if rest.is_empty() {
            self.counters.reduced_refreshes += 1;
            let _ = self.send_reserve(gist, now, primary, None, false, false);
            return;
        }
        let Some(p) = self.sessions.get(&primary) else {
            return;
        };
        let mut r = Reserve::new(self.own_rsn(p.rsn_out));
        r.replace = true;
        r.refresh_period = Some(refresh_period(self.cfg.refresh_period));
        r.bound_sessions = p.bound.clone();
        let (flow, dir) = (p.flow, p.initiation.toward_qnr());
        let rsns = rest
            .iter()
            .map(|s| self.sessions.get(s).map_or(0, |s| s.rsn_out))
            .collect();
        r.session_id_list = Some(SessionIdList(rest.to_vec()));
        r.rsn_list = Some(RsnList {
            epoch: self.epoch,
            rsns,
        });
        self.counters.summary_refreshes += 1;
        self.counters.summarised_sessions += rest.len() as u64;
        let msg = Message::new(Body::Reserve(r));
        if self.send(gist, now, primary, &flow, dir, &msg)
            == Err(pathwise_gist::nslp::ApiError::NoRoutingState)
        {
            for sid in sids {
                self.no_reverse_path(*sid);
            }
        }
    }
}
