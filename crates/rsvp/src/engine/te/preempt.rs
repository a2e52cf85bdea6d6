//! Preemption (RFC 3209 §4.7.1): an LSP that does not fit on a link may take the place of LSPs
//! whose holding priority is lower (numerically greater) than its setup priority.

use crate::engine::state::{OutIsbRef, PsbId, RsbId, SessionId};
use crate::engine::tc::AdmissionError;
use crate::engine::{RsvpEngine, TrafficControl};
use crate::few::Few;
use crate::wire::error::error_code;
use crate::wire::{ErrorSpec, FlowDescriptor};
use pathwise_core::io::IfIndex;
use smallvec::SmallVec;

impl<T: TrafficControl> RsvpEngine<T> {
    /// Admit a reservation through traffic control; when it does not fit and it serves LSPs,
    /// preempt installed LSP reservations on the interface, worst holding priority first, for
    /// as long as that helps.
    pub(crate) fn admit<R>(
        &mut self,
        sid: SessionId,
        ifindex: IfIndex,
        psbs: &[PsbId],
        mut attempt: impl FnMut(&mut T) -> Result<R, AdmissionError>,
    ) -> Result<R, AdmissionError> {
        loop {
            match attempt(&mut self.tc) {
                Err(e) => {
                    let setup = psbs
                        .iter()
                        .filter_map(|&p| self.psbs[p].te().map(|t| t.setup_priority()))
                        .min();
                    match setup.and_then(|s| self.preemption_victim(sid, ifindex, s)) {
                        Some((victim, oid)) => self.preempt(victim, oid),
                        None => return Err(e),
                    }
                }
                ok => return ok,
            }
        }
    }

    /// The installed reservation on `ifindex` to give up for a request at `setup` priority:
    /// one of another session that serves only LSPs, all with a holding priority worse than
    /// `setup`; the worst first.
    fn preemption_victim(
        &self,
        sid: SessionId,
        ifindex: IfIndex,
        setup: u8,
    ) -> Option<(SessionId, OutIsbRef)> {
        let blocks = self
            .out_isbs
            .iter()
            .map(|(oid, o)| (o.session, OutIsbRef::Block(oid), o.installed.ifindex));
        let held = self.psbs.iter().filter_map(|(p, psb)| {
            let o = psb.ff_installed.as_ref()?;
            Some((psb.session, OutIsbRef::InPsb(p), o.ifindex))
        });
        blocks
            .chain(held)
            .filter(|&(s, _, i)| i == ifindex && s != sid)
            .filter_map(|(s, oid, _)| {
                let mut hold = None::<u8>;
                for p in self.psbs_served(oid) {
                    let h = self.psbs[p].te()?.holding_priority();
                    hold = Some(hold.map_or(h, |x| x.min(h)));
                }
                hold.filter(|&h| h > setup).map(|h| (h, s, oid))
            })
            .max_by_key(|&(h, _, _)| h)
            .map(|(_, s, o)| (s, o))
    }

    /// Take an installed reservation away: its requests on that interface are refused
    /// downstream (ResvErr "Service preempted", RFC 2205 code 12) and forgotten, and its LSPs'
    /// head ends are told by PathErr with the same code.
    fn preempt(&mut self, victim: SessionId, oid: OutIsbRef) {
        self.counters.preemptions += 1;
        let ifindex = self.installed(oid).ifindex;
        let served: SmallVec<[PsbId; 2]> = self.psbs_served(oid).collect();
        self.remove_out_isb(victim, oid);
        let node = self.iface_addr(Some(ifindex), self.session_dest(victim).addr);
        let rsbs: SmallVec<[RsbId; 2]> = self
            .rsbs_of(victim)
            .filter(|&r| self.rsbs[r].oi() == Some(ifindex))
            .collect();
        for r in rsbs {
            let rsb = &self.rsbs[r];
            let desc = FlowDescriptor::new(
                Some(*self.flowspecs.get(rsb.flowspec)),
                rsb.filters().to_vec(),
            );
            let error = ErrorSpec {
                node,
                flags: 0,
                code: error_code::SERVICE_PREEMPTED,
                value: 0,
            };
            self.send_resv_err(victim, r, error, Few::One(desc));
            self.remove_rsb(victim, r);
        }
        for p in served {
            self.path_err_upstream(p, error_code::SERVICE_PREEMPTED, 0);
        }
        self.pending_updates.push(victim);
    }
}
