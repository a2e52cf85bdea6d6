//! Checks that a JSON document has the shape RFC 7285 defines for a response (the object
//! definitions of §8.4, §9.2.2, §10, §11): required fields present and of the right JSON
//! type, names of the right syntax. The client checks what a server sends with these; the
//! tests check what ours sends and the RFC's own examples. Unknown fields are allowed (§8.3.7).

use super::types::{is_pid_name, is_vtag, parse_typed_addr};
use ipnet::IpNet;
use serde_json::{Map, Value};

type Check = Result<(), String>;

fn obj<'a>(v: &'a Value, what: &str) -> Result<&'a Map<String, Value>, String> {
    v.as_object()
        .ok_or_else(|| format!("{what}: not an object"))
}

fn get<'a>(o: &'a Map<String, Value>, k: &str, what: &str) -> Result<&'a Value, String> {
    o.get(k).ok_or_else(|| format!("{what}: no \"{k}\""))
}

fn meta(v: &Value) -> Result<&Map<String, Value>, String> {
    obj(get(obj(v, "response")?, "meta", "response")?, "meta")
}

/// VersionTag (§10.3).
pub fn version_tag(v: &Value) -> Check {
    let o = obj(v, "vtag")?;
    let rid = get(o, "resource-id", "vtag")?.as_str().unwrap_or("");
    if !is_pid_name(rid) {
        return Err(format!("vtag: bad resource-id {rid:?}"));
    }
    let tag = get(o, "tag", "vtag")?.as_str().unwrap_or("");
    if !is_vtag(tag) {
        return Err(format!("vtag: bad tag {tag:?}"));
    }
    Ok(())
}

/// CostType (§10.7).
pub fn cost_type(v: &Value) -> Check {
    let o = obj(v, "cost-type")?;
    let mode = get(o, "cost-mode", "cost-type")?.as_str();
    if !matches!(mode, Some("numerical" | "ordinal")) {
        return Err(format!("cost-type: bad cost-mode {mode:?}"));
    }
    let metric = get(o, "cost-metric", "cost-type")?.as_str().unwrap_or("");
    if metric.is_empty() || metric.len() > 32 {
        return Err(format!("cost-type: bad cost-metric {metric:?}"));
    }
    Ok(())
}

fn dependent_vtags(m: &Map<String, Value>, exactly_one: bool) -> Check {
    let d = get(m, "dependent-vtags", "meta")?
        .as_array()
        .ok_or("meta: dependent-vtags is not an array")?;
    if exactly_one && d.len() != 1 {
        return Err(format!("meta: {} dependent-vtags, want 1", d.len()));
    }
    d.iter().try_for_each(version_tag)
}

/// EndpointAddrGroup (§10.4.5): address type → array of prefixes.
pub fn endpoint_addr_group(v: &Value) -> Check {
    for (t, prefixes) in obj(v, "EndpointAddrGroup")? {
        let list = prefixes
            .as_array()
            .ok_or_else(|| format!("{t}: not an array"))?;
        for p in list {
            let s = p
                .as_str()
                .ok_or_else(|| format!("{t}: {p} is not a string"))?;
            let ok = match (t.as_str(), s.parse::<IpNet>()) {
                ("ipv4", Ok(IpNet::V4(_))) | ("ipv6", Ok(IpNet::V6(_))) => true,
                ("ipv4" | "ipv6", _) => false,
                // Other address types are not ours to check (§11.2.1.7).
                _ => true,
            };
            if !ok {
                return Err(format!("{t}: bad prefix {s:?}"));
            }
        }
    }
    Ok(())
}

/// InfoResourceDirectory (§9.2.2). A root IRD names `default-alto-network-map`.
pub fn directory(v: &Value, root: bool) -> Check {
    let m = meta(v)?;
    if let Some(ct) = m.get("cost-types") {
        for (_, t) in obj(ct, "cost-types")? {
            cost_type(t)?;
        }
    }
    if root {
        get(m, "default-alto-network-map", "meta")?
            .as_str()
            .ok_or("meta: default-alto-network-map is not a string")?;
    }
    for (id, e) in obj(get(obj(v, "IRD")?, "resources", "IRD")?, "resources")? {
        if !is_pid_name(id) {
            return Err(format!("resources: bad resource ID {id:?}"));
        }
        let e = obj(e, id)?;
        for k in ["uri", "media-type"] {
            get(e, k, id)?
                .as_str()
                .ok_or_else(|| format!("{id}: {k} is not a string"))?;
        }
        if let Some(a) = e.get("accepts") {
            a.as_str()
                .ok_or_else(|| format!("{id}: accepts is not a string"))?;
        }
        if let Some(c) = e.get("capabilities") {
            obj(c, id)?;
        }
        if let Some(u) = e.get("uses") {
            u.as_array()
                .ok_or_else(|| format!("{id}: uses is not an array"))?
                .iter()
                .all(|r| r.as_str().is_some_and(is_pid_name))
                .then_some(())
                .ok_or_else(|| format!("{id}: bad uses"))?;
        }
    }
    Ok(())
}

/// InfoResourceNetworkMap (§11.2.1.6): a vtag, PIDName → EndpointAddrGroup.
pub fn network_map(v: &Value) -> Check {
    version_tag(get(meta(v)?, "vtag", "meta")?)?;
    for (pid, group) in obj(
        get(obj(v, "response")?, "network-map", "response")?,
        "network-map",
    )? {
        if !is_pid_name(pid) {
            return Err(format!("network-map: bad PID name {pid:?}"));
        }
        endpoint_addr_group(group).map_err(|e| format!("{pid}: {e}"))?;
    }
    Ok(())
}

/// InfoResourceCostMap (§11.2.3.6): one dependent vtag, a cost type, PID → PID → number.
pub fn cost_map(v: &Value) -> Check {
    let m = meta(v)?;
    dependent_vtags(m, true)?;
    cost_type(get(m, "cost-type", "meta")?)?;
    for (src, row) in obj(
        get(obj(v, "response")?, "cost-map", "response")?,
        "cost-map",
    )? {
        if !is_pid_name(src) {
            return Err(format!("cost-map: bad PID name {src:?}"));
        }
        for (dst, c) in obj(row, src)? {
            if !is_pid_name(dst) || !c.is_number() {
                return Err(format!("cost-map: {src} -> {dst}: {c}"));
            }
        }
    }
    Ok(())
}

/// InfoResourceEndpointProperties (§11.4.1.6): TypedEndpointAddr → property → string.
pub fn endpoint_properties(v: &Value) -> Check {
    dependent_vtags(meta(v)?, false)?;
    let data = get(obj(v, "response")?, "endpoint-properties", "response")?;
    for (ep, props) in obj(data, "endpoint-properties")? {
        if parse_typed_addr(ep).is_none() {
            return Err(format!("endpoint-properties: bad endpoint {ep:?}"));
        }
        for (p, val) in obj(props, ep)? {
            if !val.is_string() {
                return Err(format!("{ep}: {p} is not a string"));
            }
        }
    }
    Ok(())
}

/// InfoResourceEndpointCostMap (§11.5.1.6): a cost type, endpoint → endpoint → number.
pub fn endpoint_cost(v: &Value) -> Check {
    cost_type(get(meta(v)?, "cost-type", "meta")?)?;
    let data = get(obj(v, "response")?, "endpoint-cost-map", "response")?;
    for (src, row) in obj(data, "endpoint-cost-map")? {
        if parse_typed_addr(src).is_none() {
            return Err(format!("endpoint-cost-map: bad endpoint {src:?}"));
        }
        for (dst, c) in obj(row, src)? {
            if parse_typed_addr(dst).is_none() || !c.is_number() {
                return Err(format!("endpoint-cost-map: {src} -> {dst}: {c}"));
            }
        }
    }
    Ok(())
}

/// An ALTO error resource (§8.5.2): `meta.code` one of Table 1's codes; `value` only with
/// `field`, and a string.
pub fn error(v: &Value) -> Check {
    let m = meta(v)?;
    let code = get(m, "code", "meta")?.as_str();
    if !matches!(
        code,
        Some("E_SYNTAX" | "E_MISSING_FIELD" | "E_INVALID_FIELD_TYPE" | "E_INVALID_FIELD_VALUE")
    ) {
        return Err(format!("meta: bad code {code:?}"));
    }
    if let Some(val) = m.get("value") {
        if !m.contains_key("field") {
            return Err("meta: value without field".into());
        }
        if !val.is_string() {
            return Err("meta: value is not a string".into());
        }
    }
    Ok(())
}
