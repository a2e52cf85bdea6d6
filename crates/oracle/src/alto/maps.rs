//! The network map (RFC 7285 §11.2.1) and cost maps (§11.2.3) of one snapshot, and their
//! filtered forms (§11.3).
//!
//! PIDs (docs/alto.md): every prefix of the oracle's table belongs to the PID of its exits —
//! prefixes whose exits (router, source or external, AS distance, and AS number when the
//! ranking reads it) are the same have the same path metrics from anywhere, so one PID and one
//! cost-map entry stand for all of them. A prefix attached to one router as a source network is
//! in `src-<router>`; an external prefix in `ext-<exit>@d<distance>[_…]`; a prefix with both
//! kinds of exits in `mix-…`; a name longer than §10.1's 64 characters becomes `<kind>-h<hash>`.
//! The rest of the address space is `default` (`0.0.0.0/0` and `::/0`), so that the map is
//! complete (§11.2.2) and non-overlapping (each prefix is in exactly one PID).

use super::error::AltoError;
use super::request::{CostMapFilter, NetworkMapFilter};
use super::types::{CostMetric, CostMode, CostType, fnv1a_128};
use super::{NETWORK_MAP_ID, cost_map_id};
use crate::rank::PathMetrics;
use crate::snapshot::{ExitKey, TopologySnapshot};
use ipnet::IpNet;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;

/// The PID of the address space no prefix of the database covers.
pub const DEFAULT_PID: &str = "default";

/// One PID: its name, the exits its prefixes share, its prefixes.
#[derive(Clone, Debug, PartialEq)]
pub struct Pid {
    /// The PID name (§10.1).
    pub name: String,
    /// The exits (empty for [`DEFAULT_PID`]).
    pub exits: Vec<ExitKey>,
    /// Its prefixes, in table order.
    pub prefixes: Vec<IpNet>,
}

/// Everything the map services answer from, computed once per snapshot: the PIDs, the network
/// map and its version tag, and the path metrics between every source PID and every PID.
#[derive(Debug)]
pub struct AltoMaps {
    snapshot: Arc<TopologySnapshot>,
    pids: Vec<Pid>,
    by_name: HashMap<String, usize>,
    by_prefix: HashMap<IpNet, usize>,
    default_pid: Option<usize>,
    network_map: Value,
    vtag: String,
    /// `metrics[i][j]`: from PID `i` (a row only for PIDs with a source exit) to PID `j`.
    metrics: Vec<Option<Vec<Option<PathMetrics>>>>,
}

impl AltoMaps {
    /// Compute the PIDs, the network map and the PID-to-PID metrics of `snapshot`.
    pub fn build(snapshot: Arc<TopologySnapshot>) -> AltoMaps {
        let mut pids: Vec<Pid> = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        let (mut has_v4_default, mut has_v6_default) = (false, false);
        for (exits, prefixes) in snapshot.prefixes_by_exits() {
            for p in &prefixes {
                has_v4_default |= *p == IpNet::V4(Default::default());
                has_v6_default |= *p == IpNet::V6(Default::default());
            }
            let mut name = pid_name(&exits);
            // Two hashed names colliding is a 2^-64 event; keep names unique anyway.
            let base = name.clone();
            let mut n = 2;
            while !seen.insert(name.clone()) {
                name = format!("{}-{n}", &base[..base.len().min(56)]);
                n += 1;
            }
            pids.push(Pid {
                name,
                exits,
                prefixes,
            });
        }
        let mut default = Vec::new();
        if !has_v4_default {
            default.push(IpNet::V4(Default::default()));
        }
        if !has_v6_default {
            default.push(IpNet::V6(Default::default()));
        }
        if !default.is_empty() {
            pids.push(Pid {
                name: DEFAULT_PID.to_owned(),
                exits: Vec::new(),
                prefixes: default,
            });
        }
        pids.sort_by(|a, b| a.name.cmp(&b.name));
        let by_name = pids
            .iter()
            .enumerate()
            .map(|(i, p)| (p.name.clone(), i))
            .collect();
        let mut by_prefix = HashMap::new();
        let mut default_pid = None;
        for (i, p) in pids.iter().enumerate() {
            if p.exits.is_empty() {
                default_pid = Some(i);
                continue;
            }
            for &prefix in &p.prefixes {
                by_prefix.insert(prefix, i);
            }
        }
        let network_map = network_map_data(&pids, None);
        let vtag = format!(
            "{:032x}",
            fnv1a_128(&serde_json::to_vec(&network_map).unwrap_or_default())
        );
        let metrics = pids
            .iter()
            .map(|from| {
                from.exits.iter().any(|e| e.source).then(|| {
                    pids.iter()
                        .map(|to| snapshot.metrics_between(&from.exits, &to.exits))
                        .collect()
                })
            })
            .collect();
        AltoMaps {
            snapshot,
            pids,
            by_name,
            by_prefix,
            default_pid,
            network_map,
            vtag,
            metrics,
        }
    }

    /// The snapshot these maps were computed from.
    pub fn snapshot(&self) -> &Arc<TopologySnapshot> {
        &self.snapshot
    }

    /// The PIDs, sorted by name.
    pub fn pids(&self) -> &[Pid] {
        &self.pids
    }

    /// The network map's version tag (§10.3): a hash of its content, so that equal maps have
    /// equal tags across snapshots and restarts, and any change changes it (§6.3).
    pub fn vtag(&self) -> &str {
        &self.vtag
    }

    /// The network map's VersionTag object.
    pub fn vtag_json(&self) -> Value {
        json!({ "resource-id": NETWORK_MAP_ID, "tag": self.vtag })
    }

    /// The PID an address falls in: longest-prefix match over the map's prefixes (§11.2.2).
    pub fn pid_of(&self, addr: IpAddr) -> Option<&Pid> {
        let i = match self.snapshot.locate(addr) {
            Some(l) => self.by_prefix.get(&l.prefix).copied(),
            None => self.default_pid,
        }?;
        self.pids.get(i)
    }

    /// The network map response (§11.2.1.6), or the filtered one (§11.3.1.6: only the PIDs and
    /// address types asked for, unknown ones ignored; the vtag of the full map).
    pub fn network_map(&self, filter: Option<&NetworkMapFilter>) -> Value {
        let data = match filter {
            None => self.network_map.clone(),
            Some(f) => {
                let wanted: Vec<&Pid> = if f.pids.is_empty() {
                    self.pids.iter().collect()
                } else {
                    let mut v: Vec<&Pid> = f
                        .pids
                        .iter()
                        .filter_map(|n| self.by_name.get(n).and_then(|&i| self.pids.get(i)))
                        .collect();
                    v.sort_by(|a, b| a.name.cmp(&b.name));
                    v.dedup_by(|a, b| a.name == b.name);
                    v
                };
                let types: Vec<&str> = f.address_types.iter().map(String::as_str).collect();
                network_map_data(wanted, Some(&types))
            }
        };
        json!({
            "meta": { "vtag": self.vtag_json() },
            "network-map": data,
        })
    }

    /// The full cost map of `cost` (§11.2.3.6), with its own vtag (a hash of its content).
    pub fn cost_map(&self, cost: CostType) -> Value {
        let data = self.cost_map_data(cost, None, None, &[]);
        let tag = format!(
            "{:032x}",
            fnv1a_128(&serde_json::to_vec(&data).unwrap_or_default())
        );
        json!({
            "meta": {
                "vtag": { "resource-id": cost_map_id(cost), "tag": tag },
                "dependent-vtags": [self.vtag_json()],
                "cost-type": cost.to_json(),
            },
            "cost-map": data,
        })
    }

    /// A filtered cost map (§11.3.2.6): only the source and destination PIDs asked for
    /// (empty: all; unknown names ignored), only the costs meeting every constraint.
    pub fn filtered_cost_map(&self, f: &CostMapFilter) -> Result<Value, AltoError> {
        let pick = |names: &[String]| -> Option<Vec<usize>> {
            if names.is_empty() {
                return None;
            }
            let mut v: Vec<usize> = names
                .iter()
                .filter_map(|n| self.by_name.get(n).copied())
                .collect();
            v.sort_unstable();
            v.dedup();
            Some(v)
        };
        let data = self.cost_map_data(
            f.cost_type,
            pick(&f.srcs).as_deref(),
            pick(&f.dsts).as_deref(),
            &f.constraints,
        );
        Ok(json!({
            "meta": {
                "dependent-vtags": [self.vtag_json()],
                "cost-type": f.cost_type.to_json(),
            },
            "cost-map": data,
        }))
    }

    fn cost_map_data(
        &self,
        cost: CostType,
        srcs: Option<&[usize]>,
        dsts: Option<&[usize]>,
        constraints: &[super::types::Constraint],
    ) -> Value {
        let all: Vec<usize> = (0..self.pids.len()).collect();
        let (srcs, dsts) = (srcs.unwrap_or(&all), dsts.unwrap_or(&all));
        let ranking = self.snapshot.ranking();
        let mut entries: Vec<(usize, usize, f64)> = Vec::new();
        for &s in srcs {
            let Some(Some(row)) = self.metrics.get(s) else {
                continue;
            };
            for &d in dsts {
                if let Some(Some(m)) = row.get(d)
                    && let Some(c) = metric_value(cost.metric, m, ranking)
                {
                    entries.push((s, d, c));
                }
            }
        }
        let values = mode_values(cost.mode, entries.iter().map(|e| e.2));
        let mut out: BTreeMap<&str, Map<String, Value>> = BTreeMap::new();
        for ((s, d, _), v) in entries.iter().zip(values) {
            if !constraints.iter().all(|c| c.holds(v)) {
                continue;
            }
            let (Some(src), Some(dst)) = (self.pids.get(*s), self.pids.get(*d)) else {
                continue;
            };
            out.entry(src.name.as_str())
                .or_default()
                .insert(dst.name.clone(), cost_json(cost, v));
        }
        json!(out)
    }
}

/// The value of `metric` for a path, `None` when it is not a finite number (JSON has no
/// infinities; §11.2.3.6 lets a server omit costs it does not define).
pub(crate) fn metric_value(
    metric: CostMetric,
    m: &PathMetrics,
    ranking: &crate::Ranking,
) -> Option<f64> {
    let v = match metric {
        CostMetric::RoutingCost => ranking.cost(m),
        CostMetric::HopCount => f64::from(m.hops),
    };
    v.is_finite().then_some(v)
}

/// The values a map reports for `costs` in `mode`: themselves (numerical) or their dense ranks
/// from 1 over the whole map (ordinal, §6.1.2.2, §6.2: equal costs share a rank).
pub(crate) fn mode_values(mode: CostMode, costs: impl Iterator<Item = f64>) -> Vec<f64> {
    let costs: Vec<f64> = costs.collect();
    match mode {
        CostMode::Numerical => costs,
        CostMode::Ordinal => {
            let mut sorted = costs.clone();
            sorted.sort_by(f64::total_cmp);
            sorted.dedup();
            costs
                .iter()
                .map(|c| {
                    let i = sorted.partition_point(|x| x.total_cmp(c).is_lt());
                    (i + 1) as f64
                })
                .collect()
        }
    }
}

/// A cost as JSON: an integer when the metric or mode makes it one.
pub(crate) fn cost_json(cost: CostType, v: f64) -> Value {
    if cost.mode == CostMode::Ordinal || cost.metric == CostMetric::HopCount {
        json!(v as u64)
    } else {
        json!(v)
    }
}

/// NetworkMapData (§11.2.1.6) of `pids`, limited to `types` when given (an empty list: all).
fn network_map_data<'a>(pids: impl IntoIterator<Item = &'a Pid>, types: Option<&[&str]>) -> Value {
    let keep = |t: &str| types.is_none_or(|ts| ts.is_empty() || ts.contains(&t));
    let mut out = Map::new();
    for p in pids {
        let mut v4: Vec<String> = Vec::new();
        let mut v6: Vec<String> = Vec::new();
        for prefix in &p.prefixes {
            match prefix {
                IpNet::V4(n) => v4.push(n.to_string()),
                IpNet::V6(n) => v6.push(n.to_string()),
            }
        }
        let mut group = Map::new();
        if !v4.is_empty() && keep("ipv4") {
            group.insert("ipv4".into(), json!(v4));
        }
        if !v6.is_empty() && keep("ipv6") {
            group.insert("ipv6".into(), json!(v6));
        }
        out.insert(p.name.clone(), Value::Object(group));
    }
    Value::Object(out)
}

/// The PID name of a group of prefixes with these exits (module docs).
pub(crate) fn pid_name(exits: &[ExitKey]) -> String {
    let kind = match (
        exits.iter().all(|e| e.source),
        exits.iter().all(|e| !e.source),
    ) {
        (true, _) => "src",
        (_, true) => "ext",
        _ => "mix",
    };
    let parts: Vec<String> = exits
        .iter()
        .map(|e| {
            // §10.1: '.' is reserved, so IPv4 dots become '-'; IPv6 colons are allowed.
            let router = e.router.to_string().replace('.', "-");
            match (e.source, e.as_number) {
                (true, _) => router,
                (false, 0) => format!("{router}@d{}", e.as_distance),
                (false, asn) => format!("{router}@d{}as{asn}", e.as_distance),
            }
        })
        .collect();
    let name = format!("{kind}-{}", parts.join("_"));
    if name.len() <= 64 {
        name
    } else {
        format!("{kind}-h{:016x}", fnv1a_128(name.as_bytes()) as u64)
    }
}
