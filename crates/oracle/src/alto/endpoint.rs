//! The endpoint cost service (RFC 7285 §11.5.1) and the endpoint property service (§11.4.1).

use super::maps::{AltoMaps, cost_json, metric_value, mode_values};
use super::request::{EndpointCostRequest, EndpointPropRequest};
use super::types::typed_addr;
use super::{NETWORK_MAP_ID, PID_PROPERTY};
use crate::TopologySnapshot;
use serde_json::{Map, Value, json};
use std::net::IpAddr;

/// The global endpoint properties offered besides `<network map>.pid` (private-use names,
/// §10.8.2, since none is registered; in the spirit of RFC 9240's entity properties). Each is
/// a property of the path from the requesting client's address to the endpoint, as the oracle
/// places both (omitted for an endpoint it cannot place, §11.4.1.6); values are strings.
pub const PATH_PROPERTIES: [&str; 7] = [
    "priv:pathwise-routingcost",
    "priv:pathwise-hops",
    "priv:pathwise-latency-ms",
    "priv:pathwise-bandwidth-mbps",
    "priv:pathwise-as-number",
    "priv:pathwise-as-distance",
    "priv:pathwise-prefix",
];

/// Whether the endpoint property resource offers `name`.
pub fn is_supported_property(name: &str) -> bool {
    name == PID_PROPERTY || PATH_PROPERTIES.contains(&name)
}

/// Answer an endpoint cost request (§11.5.1.6) from `client` (whose address stands in for an
/// empty source or destination list, §11.5.1.3). `routingcost` is the ranking cost the
/// Proxidor server sorts by, so sorting a source's destinations by it (ties in request order)
/// is the Proxidor answer for the same candidates. Costs the oracle cannot define (an endpoint
/// it cannot place) are omitted; ordinal costs rank every returned pair (§6.2).
pub fn endpoint_cost(
    snapshot: &TopologySnapshot,
    req: &EndpointCostRequest,
    client: IpAddr,
) -> Value {
    let me = [client];
    let srcs: &[IpAddr] = if req.srcs.is_empty() { &me } else { &req.srcs };
    let dsts: &[IpAddr] = if req.dsts.is_empty() { &me } else { &req.dsts };
    let ranking = snapshot.ranking();
    let mut entries: Vec<(usize, usize, f64)> = Vec::with_capacity(srcs.len() * dsts.len());
    for (i, &s) in srcs.iter().enumerate() {
        for (j, m) in snapshot.metrics_to_each(s, dsts).iter().enumerate() {
            if let Some(c) = m
                .as_ref()
                .and_then(|m| metric_value(req.cost_type.metric, m, ranking))
            {
                entries.push((i, j, c));
            }
        }
    }
    let values = mode_values(req.cost_type.mode, entries.iter().map(|e| e.2));
    let dst_names: Vec<String> = dsts.iter().map(|&d| typed_addr(d)).collect();
    let mut rows: Vec<Map<String, Value>> = vec![Map::new(); srcs.len()];
    for ((i, j, _), v) in entries.iter().zip(values) {
        if !req.constraints.iter().all(|c| c.holds(v)) {
            continue;
        }
        if let (Some(row), Some(d)) = (rows.get_mut(*i), dst_names.get(*j)) {
            row.insert(d.clone(), cost_json(req.cost_type, v));
        }
    }
    let map: Map<String, Value> = srcs
        .iter()
        .zip(rows)
        .map(|(&s, row)| (typed_addr(s), Value::Object(row)))
        .collect();
    json!({
        "meta": { "cost-type": req.cost_type.to_json() },
        "endpoint-cost-map": map,
    })
}

/// Answer an endpoint property request (§11.4.1.6): one member per endpoint, each requested
/// property the server defines for it (`dependent-vtags` names the network map when `pid` is
/// asked for).
pub fn endpoint_properties(maps: &AltoMaps, req: &EndpointPropRequest, client: IpAddr) -> Value {
    let snapshot = maps.snapshot();
    let mut out = Map::new();
    for &e in &req.endpoints {
        let mut props = Map::new();
        let metrics = snapshot.metrics(client, e);
        for p in &req.properties {
            let value = match p.as_str() {
                PID_PROPERTY => maps.pid_of(e).map(|pid| pid.name.clone()),
                "priv:pathwise-prefix" => snapshot.locate(e).map(|l| l.prefix.to_string()),
                other => metrics.as_ref().and_then(|m| match other {
                    "priv:pathwise-routingcost" => Some(snapshot.ranking().cost(m))
                        .filter(|c| c.is_finite())
                        .map(|c| c.to_string()),
                    "priv:pathwise-hops" => Some(m.hops.to_string()),
                    "priv:pathwise-latency-ms" => Some(m.latency.to_string()),
                    "priv:pathwise-bandwidth-mbps" => Some(m.bandwidth)
                        .filter(|b| b.is_finite())
                        .map(|b| b.to_string()),
                    "priv:pathwise-as-number" => Some(m.as_number.to_string()),
                    "priv:pathwise-as-distance" => Some(m.as_distance.to_string()),
                    _ => None,
                }),
            };
            if let Some(v) = value {
                props.insert(p.clone(), Value::String(v));
            }
        }
        out.insert(typed_addr(e), Value::Object(props));
    }
    // §11.4.1.6: "MUST be an array that includes the version tags of all ALTO network maps
    // whose "pid" is queried" (empty when none is).
    let deps: Vec<Value> = if req.properties.iter().any(|p| p == PID_PROPERTY) {
        vec![json!({ "resource-id": NETWORK_MAP_ID, "tag": maps.vtag() })]
    } else {
        Vec::new()
    };
    json!({ "meta": { "dependent-vtags": deps }, "endpoint-properties": out })
}
