//! The engine's view of routing: a FIB mirror and multicast trees kept current by the driver,
//! and local repair when they change (RFC 2205 §3.6).

use super::state::{Oi, Oifs, SessionId};
use super::{RsvpEngine, TrafficControl};
use crate::wire::Session;
use crate::wire::error::error_code;
use pathwise_core::io::IfIndex;
use pathwise_core::route::RouteChange;
use pathwise_core::time::Instant;
use smallvec::SmallVec;
use std::net::IpAddr;

impl<T: TrafficControl> RsvpEngine<T> {
    /// Where data from `sender` to the session's destination leaves this node (RFC 2205 §3.9
    /// "Route_Query"): the unicast route's interface, the multicast tree's downstream interfaces,
    /// and `None` for delivery to this node. Never back out of the interface it came in on.
    pub(super) fn route_oifs(
        &self,
        session: &Session,
        sender: IpAddr,
        iif: Option<IfIndex>,
    ) -> Oifs {
        let mut out: SmallVec<[Oi; 4]> = SmallVec::new();
        if session.dest.is_multicast() {
            if let Some(m) = self.mcast.get(&(sender, session.dest)) {
                out.extend(m.oifs.iter().copied().filter(|o| Some(*o) != iif).map(Some));
                if m.local_member {
                    out.push(None);
                }
            }
        } else if self.is_local(session.dest) {
            out.push(None);
        } else if let Some((_, r)) = self.fib.lookup(session.dest)
            && Some(r.ifindex) != iif
        {
            out.push(Some(r.ifindex));
        }
        out.into_iter().collect()
    }

    pub(super) fn on_route_change(&mut self, now: Instant, change: RouteChange) {
        let affects: Box<dyn Fn(&Session) -> bool> = match change {
            RouteChange::Add(r) => {
                let prefix = r.prefix;
                self.fib.insert(r.prefix, r);
                Box::new(move |s: &Session| prefix.contains(&s.dest))
            }
            RouteChange::Remove(prefix) => {
                self.fib.remove(&prefix);
                Box::new(move |s: &Session| prefix.contains(&s.dest))
            }
            RouteChange::AddMulticast(m) => {
                let group = m.group;
                self.mcast.insert((m.source, m.group), m);
                Box::new(move |s: &Session| s.dest == group)
            }
            RouteChange::RemoveMulticast { source, group } => {
                self.mcast.remove(&(source, group));
                Box::new(move |s: &Session| s.dest == group)
            }
        };
        let affected: Vec<SessionId> = self
            .sessions
            .iter()
            .map(|(sid, _)| sid)
            .filter(|&sid| affects(&self.session_key(sid)))
            .collect();
        let at = now + self.cfg.local_repair_delay;
        for sid in affected {
            let r = self.repairs.entry(sid).or_insert(at);
            *r = (*r).min(at);
            self.schedule_session(sid);
        }
    }

    /// Local repair (RFC 2205 §3.6): re-route every sender of the session; where the route
    /// moved, Path goes out on the new branch at once, and the reservations follow.
    pub(super) fn local_repair(&mut self, sid: SessionId) {
        let session = self.session_key(sid);
        let psbs: SmallVec<[_; 4]> = self.psbs_of(sid).collect();
        let mut repaired = false;
        for id in psbs {
            let p = &self.psbs[id];
            let oifs = match p.te() {
                // An LSP follows its explicit route again; one that cannot is reported
                // towards its head end and keeps its old route until torn down.
                Some(t) => match self.lsp_oifs(&session, p.sender.src(), t, p.iif()) {
                    Ok((oifs, ero_out)) => {
                        self.psbs[id].te_mut().unwrap().ero_out = ero_out;
                        oifs
                    }
                    Err(value) => {
                        self.path_err_upstream(id, error_code::ROUTING_PROBLEM, value);
                        continue;
                    }
                },
                None => self.route_oifs(&session, p.sender.src(), p.iif()),
            };
            let p = &self.psbs[id];
            if oifs != p.oifs {
                repaired = true;
                self.path_changed(id, oifs, false);
            }
        }
        if repaired {
            self.counters.local_repairs += 1;
        }
    }
}
