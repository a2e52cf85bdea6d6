//! The prefix table grouped by exits: what the ALTO network map's PIDs are made of
//! ([`crate::alto`]). Prefixes with the same exits (router, kind, AS distance, and AS number when
//! the ranking reads it) have the same path metrics from any source, so they can share a PID and
//! a cost-map entry.

use super::TopologySnapshot;
use super::paths::compute_row;
use super::prefixes::Exit;
use crate::rank::{PathMetrics, Ranking, Var};
use ipnet::IpNet;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// One exit of a prefix as the ALTO PIDs see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExitKey {
    /// The exit router.
    pub router: IpAddr,
    /// A source network attached to `router` rather than an external network behind it.
    pub source: bool,
    /// AS hops beyond the exit (0 for a source network).
    pub as_distance: u16,
    /// The network's AS, kept only when the ranking reads `as_number` (0 otherwise), so that
    /// prefixes whose costs cannot differ fall into one group.
    pub as_number: u32,
}

/// Whether the ranking's cost depends on the destination's AS number.
pub(crate) fn ranking_reads_as_number(r: &Ranking) -> bool {
    matches!(r, Ranking::Expression(e) if e.reads(Var::AsNumber))
}

impl TopologySnapshot {
    /// Every prefix of the table grouped by its exits (sorted), groups in key order, prefixes
    /// in table order.
    pub fn prefixes_by_exits(&self) -> BTreeMap<Vec<ExitKey>, Vec<IpNet>> {
        let keep_as = ranking_reads_as_number(&self.ranking);
        let mut groups: BTreeMap<Vec<ExitKey>, Vec<IpNet>> = BTreeMap::new();
        for (prefix, exits) in self.prefixes.iter() {
            let mut key: Vec<ExitKey> = exits
                .iter()
                .filter_map(|e| {
                    Some(ExitKey {
                        router: self.routers.get(e.router)?.address,
                        source: e.source,
                        as_distance: e.as_distance,
                        as_number: if keep_as { e.as_number } else { 0 },
                    })
                })
                .collect();
            key.sort_unstable();
            key.dedup();
            groups.entry(key).or_default().push(prefix);
        }
        groups
    }

    /// Path metrics from any address of a group with exits `from` to any address of a group
    /// with exits `to` — what [`metrics`](Self::metrics) gives for one address of each (the
    /// source router is the lowest-addressed router of `from`'s source exits; the exit towards
    /// `to` is chosen as in §3.2.3). `None` when `from` has no source exit or `to` no
    /// reachable exit. For groups whose keys dropped the AS number (the ranking does not read
    /// it) the metrics' `as_number` is 0.
    pub fn metrics_between(&self, from: &[ExitKey], to: &[ExitKey]) -> Option<PathMetrics> {
        let src = from
            .iter()
            .filter(|e| e.source)
            .filter_map(|e| self.routers.index_of(&e.router))
            .min_by_key(|&r| self.graph.rank.get(r as usize).copied())?;
        let exits: Vec<Exit> = to
            .iter()
            .filter_map(|k| {
                Some(Exit {
                    router: self.routers.index_of(&k.router)?,
                    as_number: if k.source {
                        self.settings.local_as
                    } else {
                        k.as_number
                    },
                    as_distance: k.as_distance,
                    nic: 0,
                    source: k.source,
                })
            })
            .collect();
        match self.paths.row(src) {
            Some(row) => self.metrics_of_exits(row, &exits),
            None => {
                let row = compute_row(&self.graph, self.settings.routing, src);
                self.metrics_of_exits(&row, &exits)
            }
        }
    }
}
