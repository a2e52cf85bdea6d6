//! The path cache (seed §4.5.1, §3.1 requirement 2): aggregated properties of the path between
//! router pairs, so ranking never walks the network.
//!
//! Computed routes (seed `-iroutes impl`) are shortest paths over link weights. Among paths of
//! equal weight the one with fewer hops wins; among those, each router's predecessor is the
//! neighbour with the lowest address (then the lowest NIC index). That makes every path — and so
//! its bandwidth and latency — a function of the configuration alone, not of slot numbers or
//! update history. Explicit routes (`-iroutes expl`) follow each router's `route` entries hop by
//! hop; a missing route, a route through a NIC without a usable link, or a loop leaves the pair
//! unreachable.

use super::routers::{Edge, Graph, RouterIdx};
use crate::model::{CacheScope, RouteMode};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

/// One cached path: 16 bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PathEntry {
    /// Sum of link weights, saturating below [`UNREACHABLE`].
    pub weight: u32,
    pub latency: f32,
    pub bandwidth: f32,
    pub hops: u16,
    /// Largest congestion along the path, 1/10,000 of capacity.
    pub congestion: u16,
}

/// The weight that marks "no path".
pub(crate) const UNREACHABLE: u32 = u32::MAX;

impl PathEntry {
    pub const NONE: PathEntry = PathEntry {
        weight: UNREACHABLE,
        latency: 0.0,
        bandwidth: 0.0,
        hops: 0,
        congestion: 0,
    };

    pub const ZERO: PathEntry = PathEntry {
        weight: 0,
        latency: 0.0,
        bandwidth: f32::INFINITY,
        hops: 0,
        congestion: 0,
    };

    pub fn reachable(&self) -> bool {
        self.weight != UNREACHABLE
    }

    /// This path extended by one link.
    fn then(&self, e: &Edge) -> PathEntry {
        PathEntry {
            weight: self.weight.saturating_add(e.weight).min(UNREACHABLE - 1),
            latency: self.latency + e.latency,
            bandwidth: self.bandwidth.min(e.bandwidth),
            hops: self.hops.saturating_add(1),
            congestion: self.congestion.max(e.congestion),
        }
    }
}

/// Rows of the router-pair cache. Rows are shared between snapshots until the topology changes.
#[derive(Clone, Debug, Default)]
pub(crate) struct PathCache {
    /// Router slot → row index, or `u32::MAX` when the router has no row.
    pub row_of: Vec<u32>,
    pub rows: Vec<Arc<[PathEntry]>>,
}

impl PathCache {
    /// Rows for `sources` (all routers when `None`).
    pub fn build(g: &Graph, mode: RouteMode, sources: &[RouterIdx]) -> PathCache {
        let mut c = PathCache {
            row_of: vec![u32::MAX; g.len()],
            rows: Vec::with_capacity(sources.len()),
        };
        for &s in sources {
            c.add_row(g, mode, s);
        }
        c
    }

    /// Add a row for `src` if it has none.
    pub fn add_row(&mut self, g: &Graph, mode: RouteMode, src: RouterIdx) {
        if self.row_of.len() < g.len() {
            self.row_of.resize(g.len(), u32::MAX);
        }
        if self.row_of.get(src as usize).is_none_or(|&r| r != u32::MAX) {
            return;
        }
        self.row_of[src as usize] = self.rows.len() as u32;
        self.rows.push(compute_row(g, mode, src).into());
    }

    pub fn row(&self, src: RouterIdx) -> Option<&[PathEntry]> {
        let r = *self.row_of.get(src as usize)?;
        self.rows.get(r as usize).map(|r| &r[..])
    }

    pub fn heap_bytes(&self) -> usize {
        self.row_of.capacity() * 4
            + self
                .rows
                .iter()
                .map(|r| r.len() * std::mem::size_of::<PathEntry>())
                .sum::<usize>()
    }
}

/// The rows a scope asks for: every router, or routers with a source network attached.
pub(crate) fn row_sources(
    g: &Graph,
    scope: CacheScope,
    has_source: impl Fn(RouterIdx) -> bool,
    exists: impl Fn(RouterIdx) -> bool,
) -> Vec<RouterIdx> {
    (0..g.len() as RouterIdx)
        .filter(|&r| exists(r) && (scope == CacheScope::AllPairs || has_source(r)))
        .collect()
}

/// Paths from `src` to every router.
pub(crate) fn compute_row(g: &Graph, mode: RouteMode, src: RouterIdx) -> Vec<PathEntry> {
    match mode {
        RouteMode::Computed => shortest_row(g, src),
        RouteMode::Explicit => explicit_row(g, src),
    }
}

fn shortest_row(g: &Graph, src: RouterIdx) -> Vec<PathEntry> {
    let n = g.len();
    let mut row = vec![PathEntry::NONE; n];
    if !g.up.get(src as usize).copied().unwrap_or(false) {
        return row;
    }
    // (weight, hops) is strictly increasing along every edge, so every predecessor that
    // reaches a router at its final distance is settled before that router is.
    let mut dist: Vec<(u64, u32)> = vec![(u64::MAX, u32::MAX); n];
    // Best predecessor so far: (its address rank, NIC, its slot, the edge).
    let mut pred: Vec<Option<(u32, u8, RouterIdx, Edge)>> = vec![None; n];
    let mut done = vec![false; n];
    let mut heap = BinaryHeap::new();
    dist[src as usize] = (0, 0);
    heap.push(Reverse((0u64, 0u32, src)));
    while let Some(Reverse((w, h, u))) = heap.pop() {
        let ui = u as usize;
        if done[ui] || (w, h) != dist[ui] {
            continue;
        }
        done[ui] = true;
        row[ui] = match pred[ui] {
            None => PathEntry::ZERO,
            Some((_, _, p, e)) => row[p as usize].then(&e),
        };
        let urank = g.rank[ui];
        for e in g.out(u) {
            let vi = e.to as usize;
            if done[vi] {
                continue;
            }
            let cand = (w + u64::from(e.weight), h + 1);
            let better = match cand.cmp(&dist[vi]) {
                std::cmp::Ordering::Less => true,
                std::cmp::Ordering::Equal => {
                    pred[vi].is_none_or(|(r, nic, _, _)| (urank, e.nic) < (r, nic))
                }
                std::cmp::Ordering::Greater => false,
            };
            if better {
                if cand < dist[vi] {
                    dist[vi] = cand;
                    heap.push(Reverse((cand.0, cand.1, e.to)));
                }
                pred[vi] = Some((urank, e.nic, u, *e));
            }
        }
    }
    row
}

fn explicit_row(g: &Graph, src: RouterIdx) -> Vec<PathEntry> {
    let n = g.len();
    let mut row = vec![PathEntry::NONE; n];
    if !g.up.get(src as usize).copied().unwrap_or(false) {
        return row;
    }
    row[src as usize] = PathEntry::ZERO;
    for dest in 0..n as RouterIdx {
        if dest == src || !g.up[dest as usize] {
            continue;
        }
        let mut at = src;
        let mut acc = PathEntry::ZERO;
        // A path longer than the number of routers has looped.
        for _ in 0..n {
            let Some(e) = g.explicit_next(at, dest) else {
                break;
            };
            acc = acc.then(e);
            at = e.to;
            if at == dest {
                row[dest as usize] = acc;
                break;
            }
        }
    }
    row
}
