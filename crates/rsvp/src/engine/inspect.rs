//! Read-only views of an engine's state, for `show` commands, the demo and tests.

use super::counters::StateStats;
use super::state::SessionId;
use super::{RsvpEngine, TrafficControl};
use crate::wire::{FilterSpec, FlowSpec, Opaque, SenderTspec, Session, StyleKind};
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
        self.sessions
            .iter()
            .map(|(sid, _)| self.session_view(sid))
            .collect()
    }

    /// A view of one session.
    pub fn session(&self, key: &Session) -> Option<SessionView> {
        self.find_session(key).map(|sid| self.session_view(sid))
    }

    fn session_view(&self, sid: SessionId) -> SessionView {
        SessionView {
            session: self.session_key(sid),
            paths: self
                .psbs_of(sid)
                .map(|p| {
                    let p = &self.psbs[p];
                    PathView {
                        sender: p.sender,
                        tspec: *self.tspecs.get(p.tspec),
                        phop: p.phop().map(|h| self.phops[h].hop.addr),
                        iif: p.iif(),
                        oifs: p.oifs.to_vec(),
                    }
                })
                .collect(),
            resvs: self
                .rsbs_of(sid)
                .map(|r| {
                    let r = &self.rsbs[r];
                    ResvView {
                        nhop: r.nhop().map(|h| self.hops.get(h).addr),
                        oi: r.oi(),
                        style: r.style().kind(),
                        flowspec: *self.flowspecs.get(r.flowspec),
                        filters: r.filters().to_vec(),
                    }
                })
                .collect(),
            installed: self
                .out_isbs_of(sid)
                .map(|o| InstalledView {
                    ifindex: self.installed(o).ifindex,
                    flowspec: *self.flowspecs.get(self.installed(o).flowspec),
                    senders: self.psbs_served(o).map(|p| self.psbs[p].sender).collect(),
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
            out_isbs: self.out_isbs.len() + self.out_isbs_in_psbs,
            // Each OutISB held in a PSB stands for the one OIatPSB relating the two.
            oiats: self.oiats.len() + self.out_isbs_in_psbs,
            timers: self.timers.len(),
        }
    }

    /// Whether the engine holds no session state at all (interned values included: a leaked
    /// reference shows here).
    pub fn is_idle(&self) -> bool {
        let s = self.state_stats();
        s.sessions + s.psbs + s.rsbs + s.phops + s.out_isbs + s.oiats + s.timers == 0
            && self.adspecs.is_empty()
            && self.flowspecs.is_empty()
            && self.hops.is_empty()
            && self.tspecs.is_empty()
            && self.dests.is_empty()
            && self.session_index.is_empty()
            && self.dest_ports.is_empty()
            && self.repairs.is_empty()
    }

    /// An estimate of the heap the engine's protocol state occupies, in bytes: arena and table
    /// capacity plus the out-of-line parts of blocks. `pathwise bench rsvp` cross-checks it
    /// against a counting allocator.
    pub fn state_bytes(&self) -> usize {
        fn map_bytes<K, V, S>(m: &std::collections::HashMap<K, V, S>) -> usize {
            m.capacity() * (size_of::<(K, V)>() + 1)
        }
        /// Heap used by a SmallVec that outgrew its inline storage.
        fn carried(c: &super::state::Carried) -> usize {
            c.as_ref().map_or(0, |v| {
                size_of::<Vec<Opaque>>()
                    + v.iter()
                        .map(|x| size_of::<Opaque>() + x.body.capacity())
                        .sum::<usize>()
            })
        }
        let tables = self.sessions.heap_bytes()
            + self.psbs.heap_bytes()
            + self.phops.heap_bytes()
            + self.rsbs.heap_bytes()
            + self.out_isbs.heap_bytes()
            + self.oiats.heap_bytes()
            + self.session_index.capacity() * (size_of::<SessionId>() + 1)
            + map_bytes(&self.phop_index)
            + map_bytes(&self.reported)
            + map_bytes(&self.dest_ports)
            + map_bytes(&self.repairs)
            + self.adspecs.heap_bytes()
            + self.flowspecs.heap_bytes()
            + self.hops.heap_bytes()
            + self.tspecs.heap_bytes()
            + self.dests.heap_bytes()
            + self.timers.heap_bytes();
        let psbs: usize = self
            .psbs
            .iter()
            .map(|(_, p)| {
                p.oifs.heap_bytes()
                    + p.extra.as_ref().map_or(0, |e| {
                        size_of::<super::state::PsbExtra>()
                            + carried(&e.carried)
                            + e.te.as_ref().map_or(0, super::te::PsbTe::heap_bytes)
                    })
            })
            .sum();
        let rsbs: usize = self
            .rsbs
            .iter()
            .map(|(_, r)| {
                r.selection.heap_bytes()
                    + r.extra.as_ref().map_or(0, |e| {
                        size_of::<super::state::RsbExtra>()
                            + e.carried
                                .iter()
                                .map(|x| size_of::<Opaque>() + x.body.capacity())
                                .sum::<usize>()
                            + e.scope
                                .as_ref()
                                .map_or(0, |s| s.addrs.capacity() * size_of::<IpAddr>())
                            + e.te.capacity() * size_of::<crate::wire::FilterTe>()
                            + e.te
                                .iter()
                                .filter_map(|t| t.record_route.as_ref())
                                .map(|r| {
                                    r.subobjects.capacity()
                                        * size_of::<crate::wire::te::RroSubobject>()
                                })
                                .sum::<usize>()
                    })
            })
            .sum();
        // The LFIB (a B-tree: entries plus roughly a pointer each of node overhead) and what
        // refresh reduction remembers per identified message.
        let lfib = self.lfib.len() * (size_of::<pathwise_core::mpls::LfibEntry>() + 16);
        tables + psbs + rsbs + lfib + self.rr.heap_bytes() + self.spare.heap_bytes()
    }
}
