//! Ranking: a cost per candidate from its path metrics, lower first.
//!
//! The default is the seed's eq. 3, `8·as_distance + 0.5·hops + 10/bandwidth` (§4.5.5). Other
//! built-ins and operator-defined [`CostExpr`]essions are chosen by name in the configuration
//! (`ranking = "…"`). [`TopologySnapshot::rank`](crate::TopologySnapshot::rank) applies a ranking
//! to a candidate list: the output is always a permutation of the input, ties keep their input
//! order, and candidates the oracle cannot place go last in their input order.

pub mod expr;

pub use expr::{CostExpr, ExprError, ExprErrorKind, Var};

/// Aggregated properties of the path from a query's source to one candidate (seed §4.5.5's
/// `networkPathProperties`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathMetrics {
    /// Smallest bandwidth along the internal path, Mbit/s; infinite for a zero-hop path.
    pub bandwidth: f64,
    /// Sum of link latencies along the internal path, ms.
    pub latency: f64,
    /// Internal hops.
    pub hops: u32,
    /// Sum of link weights along the internal path.
    pub weight: u64,
    /// The destination's AS (the oracle's own AS for internal destinations).
    pub as_number: u32,
    /// AS hops beyond the exit router (0 inside the AS).
    pub as_distance: u16,
    /// Largest congestion along the internal path, as a fraction of capacity.
    pub congestion: f64,
    /// Whether the destination is outside the AS (reached through an external network).
    pub external: bool,
}

/// How candidates are ordered.
#[derive(Clone, Debug, PartialEq)]
pub enum Ranking {
    /// Seed eq. 3: `8·as_distance + 0.5·hops + 10/bandwidth` (`seed`).
    Seed,
    /// Internal latency (`latency-first`).
    LatencyFirst,
    /// Internal hops plus AS distance (`fewest-hops`).
    FewestHops,
    /// Internal weight, the IGP's own view (`lowest-weight`).
    LowestWeight,
    /// `1/bandwidth`: the widest bottleneck first (`widest-bandwidth`).
    WidestBandwidth,
    /// An operator-defined cost expression.
    Expression(CostExpr),
}

/// The built-in rankings by configuration name.
pub const BUILT_IN: &[(&str, Ranking)] = &[
    ("seed", Ranking::Seed),
    ("latency-first", Ranking::LatencyFirst),
    ("fewest-hops", Ranking::FewestHops),
    ("lowest-weight", Ranking::LowestWeight),
    ("widest-bandwidth", Ranking::WidestBandwidth),
];

impl Ranking {
    /// A built-in by name, or else `text` compiled as a cost expression.
    pub fn parse(text: &str) -> Result<Ranking, ExprError> {
        let name = text.trim();
        if let Some((_, r)) = BUILT_IN.iter().find(|(n, _)| *n == name) {
            return Ok(r.clone());
        }
        CostExpr::compile(text).map(Ranking::Expression)
    }

    /// The configuration text this ranking was parsed from (a name or the expression).
    pub fn text(&self) -> &str {
        match self {
            Ranking::Expression(e) => e.source(),
            other => BUILT_IN
                .iter()
                .find(|(_, r)| r == other)
                .map_or("seed", |(n, _)| n),
        }
    }

    /// The cost of one path; lower ranks first.
    #[inline]
    pub fn cost(&self, m: &PathMetrics) -> f64 {
        match self {
            Ranking::Seed => {
                8.0 * f64::from(m.as_distance) + 0.5 * f64::from(m.hops) + 10.0 / m.bandwidth
            }
            Ranking::LatencyFirst => m.latency,
            Ranking::FewestHops => f64::from(m.hops) + f64::from(m.as_distance),
            Ranking::LowestWeight => m.weight as f64,
            Ranking::WidestBandwidth => 1.0 / m.bandwidth,
            Ranking::Expression(e) => e.eval(m),
        }
    }
}

/// A sort key: placed candidates by cost (NaN as +∞), then the unplaceable ones.
#[inline]
pub(crate) fn order_key(cost: Option<f64>) -> u64 {
    match cost {
        None => u64::MAX,
        Some(c) => {
            let c = if c.is_nan() { f64::INFINITY } else { c };
            // -0.0 and 0.0 tie.
            let c = if c == 0.0 { 0.0 } else { c };
            let bits = c.to_bits();
            // The IEEE 754 total-order trick: flip negatives entirely, set the sign of positives.
            if bits >> 63 == 1 {
                !bits
            } else {
                bits | 1 << 63
            }
        }
    }
}

/// Put into `order` the indices `0..keys.len()` sorted by `(keys[i], i)`: lower key first,
/// ties in index order (`order` at least as long as `keys`; the rest is left alone).
///
/// A query's keys are mostly a few distinct costs (a path-cache row has few: the seed
/// network's row of the bench's source has 18, a query of 100 candidates meets about 14), so
/// they are counted first ([`count_few`]); past [`FEW`] distinct keys the candidates are
/// sorted ([`sort_packed`]), after the counting sort gave up (typically within its first 40
/// keys).
pub(crate) fn sort_order(keys: &[u64], order: &mut [u64]) {
    let n = keys.len();
    let Some(order) = order.get_mut(..n) else {
        return;
    };
    if !count_few(keys, order) {
        sort_packed(keys, order);
    }
}

/// Most distinct keys [`count_few`] takes.
const FEW: usize = 32;

/// Most candidates [`count_few`] takes (a datagram holds at most 363).
const FEW_CANDIDATES: usize = 512;

/// A counting sort for keys of at most [`FEW`] distinct values: each key gets the id of its
/// value from a small hash table (one probe for most), the distinct values are sorted, and
/// every index is placed at its value's next free position, in index order, so ties keep it.
/// Returns `false`, `order` unspecified, for more keys or values than it takes.
fn count_few(keys: &[u64], order: &mut [u64]) -> bool {
    const SLOTS: usize = 8 * FEW;
    const EMPTY: u8 = u8::MAX;
    if keys.len() > FEW_CANDIDATES {
        return false;
    }
    // The table: a value's slot (multiplicative hashing, linear probing) holds its id.
    let mut slot_key = [0u64; SLOTS];
    let mut slot_id = [EMPTY; SLOTS];
    let mut values = [0u64; FEW];
    let mut d = 0usize;
    let mut ids = [0u8; FEW_CANDIDATES];
    let ids = &mut ids[..keys.len()];
    for (id, &k) in ids.iter_mut().zip(keys) {
        let mut s = (k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize;
        loop {
            // `s` < SLOTS (8 bits of hash, then masked).
            let si = slot_id[s];
            if slot_key[s] == k && si != EMPTY {
                *id = si;
                break;
            }
            if si == EMPTY {
                if d == FEW {
                    return false;
                }
                values[d] = k;
                slot_key[s] = k;
                slot_id[s] = d as u8;
                *id = d as u8;
                d += 1;
                break;
            }
            s = (s + 1) & (SLOTS - 1);
        }
    }
    // The ids in value order: each value's rank is the count of the smaller ones (distinct
    // values, so the ranks are a permutation). Comparisons without branches, where an
    // insertion sort of the ids mispredicted about once per id.
    let values = &values[..d];
    let mut by_value = [0u8; FEW];
    for (id, &v) in values.iter().enumerate() {
        let rank = values.iter().filter(|&&u| u < v).count();
        by_value[rank & (FEW - 1)] = id as u8;
    }
    let by_value = &by_value[..d];
    // Where each id's indices go next in `order`: first the counts of the lower values.
    let mut next = [0u16; FEW];
    for &id in ids.iter() {
        next[usize::from(id & (FEW as u8 - 1))] += 1;
    }
    let mut at = 0u16;
    for &i in by_value.iter() {
        let c = &mut next[usize::from(i & (FEW as u8 - 1))];
        let count = *c;
        *c = at;
        at += count;
    }
    for (i, &id) in ids.iter().enumerate() {
        let c = &mut next[usize::from(id & (FEW as u8 - 1))];
        if let Some(o) = order.get_mut(usize::from(*c)) {
            *o = i as u64;
        }
        *c += 1;
    }
    true
}

/// The comparison sort behind [`sort_order`].
///
/// Sorts one `u64` per candidate, its key with the index in the low bits (9 bits for a
/// datagram's 363 addresses), instead of `(key, index)` pairs: half the bytes moved and one
/// compare per step, about half the time. Two keys that differ only in those low bits would
/// then tie; a pass over the result finds that and sorts the pairs instead.
fn sort_packed(keys: &[u64], order: &mut [u64]) {
    let n = keys.len();
    let bits = usize::BITS - n.saturating_sub(1).leading_zeros();
    let mask = (1u64 << bits) - 1;
    for (i, (o, &k)) in order.iter_mut().zip(keys).enumerate() {
        *o = (k & !mask) | i as u64;
    }
    order.sort_unstable();
    let key = |p: u64| keys.get((p & mask) as usize).copied().unwrap_or(u64::MAX);
    // Within a run of equal high bits the order is by index; it is the right one only if the
    // full keys do not decrease along it.
    let exact = order
        .windows(2)
        .all(|w| (w[0] ^ w[1]) & !mask != 0 || key(w[0]) <= key(w[1]));
    if exact {
        for o in order.iter_mut() {
            *o &= mask;
        }
    } else {
        for (i, o) in order.iter_mut().enumerate() {
            *o = i as u64;
        }
        order.sort_unstable_by_key(|&i| (keys.get(i as usize).copied().unwrap_or(u64::MAX), i));
    }
}

#[cfg(test)]
mod tests;
