//! What ranking needs per (path-cache row, exit router), computed once per row instead of once
//! per candidate: the exit-choice key (internal weight, router rank) and the part of the cost
//! that depends only on the internal path.
//!
//! Eq. 3 (seed §4.5.5), `8·as_distance + 0.5·hops + 10/bandwidth`, splits into a per-exit term
//! (`8·as_distance`) and per-path terms (`0.5·hops`, `10/bandwidth`); a candidate then costs
//! `(8·as_distance + a) + b`, the same floating-point operations in the same order as the full
//! formula, so the ranking is bit for bit the one the formula gives. The other built-ins, and
//! any expression that reads no exit property (`as_distance`, `as_number`, `total_hops`,
//! `external`, `internal`), are entirely per path; other expressions are evaluated per
//! candidate as before.
//!
//! Rows of terms are built on first use (a row is read only by queries from its source routers)
//! and kept for the life of the path cache and ranking they were built from. A reader never
//! waits for another: two readers meeting an empty row both compute it and one result is kept.

use super::paths::{PathEntry, UNREACHABLE};
use crate::rank::{PathMetrics, Ranking, Var};
use std::sync::OnceLock;

/// How a ranking's cost splits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `(8·as_distance + a) + b` (eq. 3).
    Seed,
    /// `a + as_distance` (`fewest-hops`).
    PlusAsDistance,
    /// `a`.
    PathOnly,
    /// Evaluated per candidate from the full metrics.
    PerCandidate,
}

impl Shape {
    pub fn of(ranking: &Ranking) -> Shape {
        match ranking {
            Ranking::Seed => Shape::Seed,
            Ranking::FewestHops => Shape::PlusAsDistance,
            Ranking::LatencyFirst | Ranking::LowestWeight | Ranking::WidestBandwidth => {
                Shape::PathOnly
            }
            Ranking::Expression(e) => {
                let per_exit = [
                    Var::AsDistance,
                    Var::AsNumber,
                    Var::TotalHops,
                    Var::External,
                    Var::Internal,
                ];
                if per_exit.iter().any(|&v| e.reads(v)) {
                    Shape::PerCandidate
                } else {
                    Shape::PathOnly
                }
            }
        }
    }
}

/// One (row, exit router) entry: 24 bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Term {
    /// Internal weight to the router; [`UNREACHABLE`] when there is no path.
    pub weight: u32,
    /// The router's rank by address (the last tie-breaker of the exit choice).
    pub rank: u32,
    pub a: f64,
    pub b: f64,
}

impl Term {
    const NONE: Term = Term {
        weight: UNREACHABLE,
        rank: u32::MAX,
        a: 0.0,
        b: 0.0,
    };

    #[inline]
    pub fn reachable(&self) -> bool {
        self.weight != UNREACHABLE
    }

    /// The cost through this exit with AS distance `as_distance` (not for
    /// [`Shape::PerCandidate`]).
    #[inline]
    pub fn cost(&self, shape: Shape, as_distance: u16) -> f64 {
        match shape {
            Shape::Seed => 8.0 * f64::from(as_distance) + self.a + self.b,
            Shape::PlusAsDistance => self.a + f64::from(as_distance),
            Shape::PathOnly | Shape::PerCandidate => self.a,
        }
    }
}

/// Terms for every row of one path cache under one ranking, built on first use.
#[derive(Debug, Default)]
pub(crate) struct RowTerms {
    rows: Box<[OnceLock<Box<[Term]>>]>,
}

impl RowTerms {
    /// Empty rows for a cache of `rows` rows.
    pub fn new(rows: usize) -> RowTerms {
        RowTerms {
            rows: (0..rows).map(|_| OnceLock::new()).collect(),
        }
    }

    /// The terms of row `index` (whose entries are `row`).
    #[inline]
    pub fn row(
        &self,
        index: usize,
        row: &[PathEntry],
        rank: &[u32],
        ranking: &Ranking,
        local_as: u32,
    ) -> Option<&[Term]> {
        let slot = self.rows.get(index)?;
        if let Some(t) = slot.get() {
            return Some(t);
        }
        let built = build_row(row, rank, ranking, local_as);
        // Another reader may have filled it meanwhile; either result is the same.
        let _ = slot.set(built);
        slot.get().map(|t| &t[..])
    }

    /// Bytes held by the rows built so far.
    pub fn heap_bytes(&self) -> usize {
        self.rows.len() * std::mem::size_of::<OnceLock<Box<[Term]>>>()
            + self
                .rows
                .iter()
                .filter_map(OnceLock::get)
                .map(|r| r.len() * std::mem::size_of::<Term>())
                .sum::<usize>()
    }
}

fn build_row(row: &[PathEntry], rank: &[u32], ranking: &Ranking, local_as: u32) -> Box<[Term]> {
    let shape = Shape::of(ranking);
    row.iter()
        .enumerate()
        .map(|(r, p)| {
            if !p.reachable() {
                return Term::NONE;
            }
            let (a, b) = match shape {
                Shape::Seed => (
                    0.5 * f64::from(u32::from(p.hops)),
                    10.0 / f64::from(p.bandwidth),
                ),
                Shape::PlusAsDistance => (f64::from(u32::from(p.hops)), 0.0),
                Shape::PathOnly => {
                    // No exit property is read: any will do.
                    let m = PathMetrics {
                        bandwidth: f64::from(p.bandwidth),
                        latency: f64::from(p.latency),
                        hops: u32::from(p.hops),
                        weight: u64::from(p.weight),
                        as_number: local_as,
                        as_distance: 0,
                        congestion: f64::from(p.congestion) / 10_000.0,
                        external: false,
                    };
                    (ranking.cost(&m), 0.0)
                }
                Shape::PerCandidate => (0.0, 0.0),
            };
            Term {
                weight: p.weight,
                rank: rank.get(r).copied().unwrap_or(u32::MAX),
                a,
                b,
            }
        })
        .collect()
}
