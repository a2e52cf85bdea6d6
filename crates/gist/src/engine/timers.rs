//! Routing-state timers (RFC 5971 §6.2, §6.3; RFC 5972 §5.3 spells them T_No_Response,
//! T_Refresh_QNode, T_Inactive_QNode, T_Expire_RNode, T_No_Confirm): Query retransmission with
//! binary exponential back-off from T1 = 500 ms up to T2 = 64 T1 (No_Response, §5.3.3), refresh
//! (Refresh_QNode), NSLP inactivity (Inactive_QNode), upstream expiry (Expire_RNode) and the
//! random-cookie Confirm wait (No_Confirm; no Response retransmission: §5.3.3 makes it a MAY).

use super::GistEngine;
use super::state::{QueryingState, RespondingState};
use crate::nslp::{DeliveryError, Direction, NotificationKind};
use pathwise_core::time::Instant;

impl GistEngine {
    /// Routing state `idx`'s timer fired.
    pub(super) fn on_mrs_timer(&mut self, now: Instant, idx: u32) {
        let Some(s) = self.mrs.get_mut(idx as usize) else {
            return;
        };
        s.timer = None;
        let key = s.key.key();

        // Upstream messages that waited in vain for a Confirm.
        if s.pending_up.as_ref().is_some_and(|p| p.deadline <= now) {
            let pending = s.pending_up.take().map(|p| p.msgs).unwrap_or_default();
            for p in pending {
                self.fail(&key, p.handle, DeliveryError::NoRoutingState);
            }
        }

        // Responding-Node half.
        let up_expired = self.mrs[idx as usize]
            .up
            .as_ref()
            .is_some_and(|u| u.expires <= now);
        if up_expired && let Some(up) = self.take_up(idx) {
            let established = up.state == RespondingState::Established;
            self.release_up(up);
            if established {
                self.counters.upstream_expiries += 1;
                self.notify(
                    &key,
                    NotificationKind::RoutingStateLost {
                        direction: Direction::Upstream,
                    },
                );
            }
        }

        // Querying-Node half.
        if let Some(d) = self.mrs[idx as usize].down.as_ref() {
            match d.state {
                // RFC 5971 §6.2 Rule 6: to_Inactive_QNode ends the machine "from all states";
                // Awaiting Refresh is a substate of Established, so unused state lapses there
                // too instead of living on through the whole No_Response back-off (the state a
                // hostile node's injected message made, whose NSLP never uses it again, held a
                // peer that never saw our Confirm: GIST campaign seed 3182916611534347).
                QueryingState::Established | QueryingState::AwaitingRefresh if d.expires <= now => {
                    // The NSLP no longer uses the state: let it lapse.
                    if let Some(d) = self.mrs[idx as usize].down.take() {
                        self.counters.downstream_lapses += 1;
                        self.release_down(&key, *d, DeliveryError::NoRoutingState);
                    }
                }
                QueryingState::AwaitingResponse | QueryingState::AwaitingRefresh
                    if d.deadline <= now =>
                {
                    let next_rto = u64::from(d.rto_ms) * 2;
                    let max = u64::try_from(self.cfg.query_rto_max.as_millis()).unwrap_or(u64::MAX);
                    if next_rto <= max {
                        if let Some(d) = self.mrs[idx as usize].down.as_mut() {
                            d.rto_ms = next_rto as u32;
                        }
                        self.counters.query_retransmits += 1;
                        self.send_query(now, idx);
                    } else {
                        // No_Response exhausted: no peer answers (any more). State that had
                        // a peer (a refresh, or a restart after the peer's Error) is lost; a
                        // first handshake found the end of the path.
                        let refreshing =
                            d.state == QueryingState::AwaitingRefresh || d.restarts > 0;
                        if let Some(d) = self.mrs[idx as usize].down.take() {
                            self.counters.handshake_failures += 1;
                            self.release_down(&key, *d, DeliveryError::NoPeer);
                        }
                        self.notify(
                            &key,
                            if refreshing {
                                NotificationKind::RoutingStateLost {
                                    direction: Direction::Downstream,
                                }
                            } else {
                                NotificationKind::LastNode
                            },
                        );
                    }
                }
                QueryingState::Established if d.deadline <= now => {
                    // The state lived through a refresh period without the peer rejecting it.
                    if let Some(d) = self.mrs[idx as usize].down.as_mut() {
                        d.restarts = 0;
                    }
                    self.start_refresh(now, idx)
                }
                _ => {}
            }
        }
        self.reap_mrs(idx);
    }
}
