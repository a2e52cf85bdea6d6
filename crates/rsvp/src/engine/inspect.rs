//! Read-only views of an engine's state, for `show` commands, the demo and tests.

use super::counters::StateStats;
use super::{RsvpEngine, TrafficControl};
use crate::wire::{FilterSpec, FlowSpec, SenderTspec, Session, StyleKind};
use pathwise_core::io::IfIndex;
use std::mem::size_of;
use std::net::IpAddr;

/// One sender's path state.
#[derive(Clone, Debug, PartialEq)]
pub struct PathView {
    /// The sender.
    pub sender: FilterSpec,
    /// Its TSpec.
    pub tspec: SenderTspec,
    /// The previous hop (`None`: a local sender).
    pub phop: Option<IpAddr>,
    /// Incoming interface.
    pub iif: Option<IfIndex>,
    /// Outgoing interfaces (`None`: local delivery).
    pub oifs: Vec<Option<IfIndex>>,
}

/// One reservation request received.
#[derive(Clone, Debug, PartialEq)]
pub struct ResvView {
    /// The next hop (`None`: a local receiver).
    pub nhop: Option<IpAddr>,
    /// The outgoing interface (`None`: local).
    pub oi: Option<IfIndex>,
    /// Its style.
    pub style: StyleKind,
    /// Its flowspec.
    pub flowspec: FlowSpec,
    /// The senders it names.
    pub filters: Vec<FilterSpec>,
}

/// One reservation installed on an interface.
#[derive(Clone, Debug, PartialEq)]
pub struct InstalledView {
    /// The interface.
    pub ifindex: IfIndex,
    /// The merged flowspec.
    pub flowspec: FlowSpec,
    /// The senders it serves.
    pub senders: Vec<FilterSpec>,
}

/// Everything about one session.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionView {
    /// The session.
    pub session: Session,
    /// Path state.
    pub paths: Vec<PathView>,
    /// Reservation requests.
    pub resvs: Vec<ResvView>,
    /// Installed reservations.
    pub installed: Vec<InstalledView>,
}

impl<T: TrafficControl> RsvpEngine<T> {
    /// A view of every session, in no particular order.
    pub fn sessions(&self) -> Vec<SessionView> {
        self.session_ids()
            .map(|sid| self.session_view(sid))
            .collect()
    }

    /// A view of one session.
    pub fn session(&self, key: &Session) -> Option<SessionView> {
        self.session_index
            .get(key)
            .map(|&sid| self.session_view(sid))
    }

    fn session_view(&self, sid: usize) -> SessionView {
        let s = &self.sessions[sid];
        SessionView {
            session: s.key,
            paths: s
                .psbs
                .iter()
                .map(|&p| {
                    let p = &self.psbs[p];
                    PathView {
                        sender: p.sender,
                        tspec: p.tspec,
                        phop: p.phop.map(|h| self.phops[h].hop.addr),
                        iif: p.iif,
                        oifs: p.oifs.to_vec(),
                    }
                })
                .collect(),
            resvs: s
                .rsbs
                .iter()
                .map(|&r| {
                    let r = &self.rsbs[r];
                    ResvView {
                        nhop: r.nhop.map(|h| h.addr),
                        oi: r.oi,
                        style: r.style,
                        flowspec: r.flowspec,
                        filters: r.filters.to_vec(),
                    }
                })
                .collect(),
            installed: s
                .out_isbs
                .iter()
                .map(|&o| {
                    let o = &self.out_isbs[o];
                    InstalledView {
                        ifindex: o.ifindex,
                        flowspec: o.flowspec,
                        senders: o
                            .oiat
                            .iter()
                            .map(|&x| self.psbs[self.oiats[x].psb].sender)
                            .collect(),
                    }
                })
                .collect(),
        }
    }

    /// Counts of state blocks and timers.
    pub fn state_stats(&self) -> StateStats {
        StateStats {
            sessions: self.sessions.len(),
            psbs: self.psbs.len(),
            rsbs: self.rsbs.len(),
            phops: self.phops.len(),
            out_isbs: self.out_isbs.len(),
            oiats: self.oiats.len(),
            timers: self.timers.len(),
        }
    }

    /// Whether the engine holds no session state at all.
    pub fn is_idle(&self) -> bool {
        let s = self.state_stats();
        s.sessions + s.psbs + s.rsbs + s.phops + s.out_isbs + s.oiats == 0
    }

    /// An estimate of the heap the engine's protocol state occupies, in bytes: slab and table
    /// capacity plus the out-of-line parts of each block. The bench cross-checks it against a
    /// counting allocator.
    pub fn state_bytes(&self) -> usize {
        fn slab_bytes<V>(s: &slab::Slab<V>) -> usize {
            s.capacity() * (size_of::<V>() + size_of::<usize>())
        }
        fn map_bytes<K, V, S>(m: &std::collections::HashMap<K, V, S>) -> usize {
            m.capacity() * (size_of::<(K, V)>() + 1)
        }
        let mut n = slab_bytes(&self.sessions)
            + slab_bytes(&self.psbs)
            + slab_bytes(&self.phops)
            + slab_bytes(&self.rsbs)
            + slab_bytes(&self.out_isbs)
            + slab_bytes(&self.oiats)
            + map_bytes(&self.session_index)
            + map_bytes(&self.phop_index)
            + map_bytes(&self.reported)
            + self.timers.heap_bytes();
        for (_, s) in &self.sessions {
            n += s
                .psbs
                .spilled()
                .then(|| s.psbs.capacity() * size_of::<usize>())
                .unwrap_or(0);
            n += s
                .rsbs
                .spilled()
                .then(|| s.rsbs.capacity() * size_of::<usize>())
                .unwrap_or(0);
            n += s
                .out_isbs
                .spilled()
                .then(|| s.out_isbs.capacity() * size_of::<usize>())
                .unwrap_or(0);
            n += s.upstream.capacity() * size_of::<super::state::Upstream>();
            n += s
                .upstream
                .iter()
                .map(|u| {
                    u.flows.capacity() * size_of::<crate::wire::FlowDescriptor>()
                        + u.flows
                            .iter()
                            .map(|f| f.filters.capacity() * size_of::<FilterSpec>())
                            .sum::<usize>()
                })
                .sum::<usize>();
        }
        for (_, p) in &self.psbs {
            n += p
                .adspec
                .as_ref()
                .map_or(0, |_| size_of::<crate::wire::Adspec>());
            n += p
                .carried
                .iter()
                .map(|o| size_of::<crate::wire::Opaque>() + o.body.capacity())
                .sum::<usize>();
            n += p
                .oifs
                .spilled()
                .then(|| p.oifs.capacity() * size_of::<Option<IfIndex>>())
                .unwrap_or(0);
            n += p
                .oiat
                .spilled()
                .then(|| p.oiat.capacity() * size_of::<usize>())
                .unwrap_or(0);
        }
        for (_, r) in &self.rsbs {
            n += r
                .filters
                .spilled()
                .then(|| r.filters.capacity() * size_of::<FilterSpec>())
                .unwrap_or(0);
            n += r.scope.as_ref().map_or(0, |s| {
                size_of::<crate::wire::Scope>() + s.addrs.capacity() * size_of::<IpAddr>()
            });
        }
        n
    }
}
