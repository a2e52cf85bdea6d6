//! Request bodies of the POST resources, parsed and validated with the exact RFC 7285 §8.5.2
//! error for each fault: E_SYNTAX when the body is not JSON, E_MISSING_FIELD for a required
//! field that is absent, E_INVALID_FIELD_TYPE for a field of the wrong JSON type, and
//! E_INVALID_FIELD_VALUE for a bad value — including an array element of the wrong type, which
//! §8.5.2 calls an invalid value, not an invalid type. Unknown fields are ignored (§8.3.7).
//! Entries appearing several times count once (§11.3.1.3, §11.4.1.3, §11.5.1.3). Never panics.

use super::error::AltoError;
use super::types::{Constraint, CostMetric, CostMode, CostType, is_pid_name, parse_typed_addr};
use serde_json::{Map, Value};
use std::net::IpAddr;

/// ReqFilteredNetworkMap (§11.3.1.3).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NetworkMapFilter {
    /// PIDs to include (empty: all).
    pub pids: Vec<String>,
    /// Address types to include (empty: all).
    pub address_types: Vec<String>,
}

/// ReqFilteredCostMap (§11.3.2.3).
#[derive(Clone, Debug, PartialEq)]
pub struct CostMapFilter {
    /// The cost type.
    pub cost_type: CostType,
    /// Constraints, ANDed.
    pub constraints: Vec<Constraint>,
    /// Source PIDs (empty: all).
    pub srcs: Vec<String>,
    /// Destination PIDs (empty: all).
    pub dsts: Vec<String>,
}

/// ReqEndpointCostMap (§11.5.1.3).
#[derive(Clone, Debug, PartialEq)]
pub struct EndpointCostRequest {
    /// The cost type.
    pub cost_type: CostType,
    /// Constraints, ANDed.
    pub constraints: Vec<Constraint>,
    /// Sources in request order, duplicates dropped (empty: the client's address).
    pub srcs: Vec<IpAddr>,
    /// Destinations in request order, duplicates dropped (empty: the client's address).
    pub dsts: Vec<IpAddr>,
}

/// ReqEndpointProp (§11.4.1.3).
#[derive(Clone, Debug, PartialEq)]
pub struct EndpointPropRequest {
    /// Properties asked for, duplicates dropped.
    pub properties: Vec<String>,
    /// Endpoints, duplicates dropped.
    pub endpoints: Vec<IpAddr>,
}

/// AddUpdateReq (RFC 8895 §6.5).
#[derive(Clone, Debug, PartialEq)]
pub struct AddUpdate {
    /// The resource to follow.
    pub resource_id: String,
    /// The version the client already has.
    pub tag: Option<String>,
    /// Whether the client accepts incremental changes (default true).
    pub incremental_changes: bool,
    /// The resource's POST input, if it has one.
    pub input: Option<Value>,
}

/// UpdateStreamReq (RFC 8895 §6.5).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UpdateStreamRequest {
    /// Substreams to add, by substream-id, in request order.
    pub add: Vec<(String, AddUpdate)>,
    /// Substreams to remove (stream control only, §7.5).
    pub remove: Option<Vec<String>>,
}

/// Parse a request body as a JSON object (E_SYNTAX with line and column otherwise).
pub fn parse_object(body: &[u8]) -> Result<Map<String, Value>, AltoError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(AltoError::syntax("the request body must be a JSON object")),
        Err(e) => Err(AltoError::syntax(format!(
            "line {} column {}: {e}",
            e.line(),
            e.column()
        ))),
    }
}

fn field<'a>(obj: &'a Map<String, Value>, name: &str, path: &str) -> Result<&'a Value, AltoError> {
    obj.get(name).ok_or_else(|| AltoError::missing(path))
}

fn object<'a>(v: &'a Value, path: &str) -> Result<&'a Map<String, Value>, AltoError> {
    v.as_object().ok_or_else(|| AltoError::bad_type(path))
}

fn array<'a>(v: &'a Value, path: &str) -> Result<&'a Vec<Value>, AltoError> {
    v.as_array().ok_or_else(|| AltoError::bad_type(path))
}

fn string<'a>(v: &'a Value, path: &str) -> Result<&'a str, AltoError> {
    v.as_str().ok_or_else(|| AltoError::bad_type(path))
}

/// The elements of an array of strings each passing `check`, duplicates dropped in order; a
/// non-string element or one failing `check` is E_INVALID_FIELD_VALUE on the array.
fn strings<T: PartialEq>(
    v: &Value,
    path: &str,
    check: impl Fn(&str) -> Option<T>,
) -> Result<Vec<T>, AltoError> {
    let mut out: Vec<T> = Vec::new();
    for e in array(v, path)? {
        let t = e
            .as_str()
            .and_then(&check)
            .ok_or_else(|| AltoError::bad_value(path, e))?;
        if !out.contains(&t) {
            out.push(t);
        }
    }
    Ok(out)
}

/// A CostType object (§10.7) at `path`; `description` is ignored (§11.3.2.3).
pub fn cost_type(obj: &Map<String, Value>, path: &str) -> Result<CostType, AltoError> {
    let ct = object(field(obj, "cost-type", path)?, path)?;
    let mode_path = format!("{path}/cost-mode");
    let metric_path = format!("{path}/cost-metric");
    let mode_v = field(ct, "cost-mode", &mode_path)?;
    let mode = CostMode::parse(string(mode_v, &mode_path)?)
        .ok_or_else(|| AltoError::bad_value(&mode_path, mode_v))?;
    let metric_v = field(ct, "cost-metric", &metric_path)?;
    let metric = CostMetric::parse(string(metric_v, &metric_path)?)
        .ok_or_else(|| AltoError::bad_value(&metric_path, metric_v))?;
    Ok(CostType { metric, mode })
}

fn constraints(obj: &Map<String, Value>) -> Result<Vec<Constraint>, AltoError> {
    match obj.get("constraints") {
        None => Ok(Vec::new()),
        Some(v) => strings(v, "constraints", Constraint::parse),
    }
}

fn pid_list(v: Option<&Value>, path: &str) -> Result<Vec<String>, AltoError> {
    match v {
        None => Ok(Vec::new()),
        Some(v) => strings(v, path, |s| is_pid_name(s).then(|| s.to_owned())),
    }
}

fn addr_list(v: Option<&Value>, path: &str) -> Result<Vec<IpAddr>, AltoError> {
    match v {
        None => Ok(Vec::new()),
        Some(v) => strings(v, path, parse_typed_addr),
    }
}

impl NetworkMapFilter {
    /// Parse an `application/alto-networkmapfilter+json` body.
    pub fn parse(body: &[u8]) -> Result<NetworkMapFilter, AltoError> {
        Self::from_object(&parse_object(body)?)
    }

    /// From an already parsed object (an update stream's `input`).
    pub fn from_object(obj: &Map<String, Value>) -> Result<NetworkMapFilter, AltoError> {
        let pids = pid_list(Some(field(obj, "pids", "pids")?), "pids")?;
        let address_types = match obj.get("address-types") {
            None => Vec::new(),
            Some(v) => strings(v, "address-types", |s| {
                // §10.4.2: US-ASCII alphanumerics; unknown types are ignored (§11.3.1.6).
                (!s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric()))
                    .then(|| s.to_owned())
            })?,
        };
        Ok(NetworkMapFilter {
            pids,
            address_types,
        })
    }
}

impl CostMapFilter {
    /// Parse an `application/alto-costmapfilter+json` body.
    pub fn parse(body: &[u8]) -> Result<CostMapFilter, AltoError> {
        Self::from_object(&parse_object(body)?)
    }

    /// From an already parsed object.
    pub fn from_object(obj: &Map<String, Value>) -> Result<CostMapFilter, AltoError> {
        let cost_type = cost_type(obj, "cost-type")?;
        let constraints = constraints(obj)?;
        let (srcs, dsts) = match obj.get("pids") {
            None => (Vec::new(), Vec::new()),
            Some(p) => {
                let p = object(p, "pids")?;
                (
                    pid_list(Some(field(p, "srcs", "pids/srcs")?), "pids/srcs")?,
                    pid_list(Some(field(p, "dsts", "pids/dsts")?), "pids/dsts")?,
                )
            }
        };
        Ok(CostMapFilter {
            cost_type,
            constraints,
            srcs,
            dsts,
        })
    }
}

impl EndpointCostRequest {
    /// Parse an `application/alto-endpointcostparams+json` body.
    pub fn parse(body: &[u8]) -> Result<EndpointCostRequest, AltoError> {
        Self::from_object(&parse_object(body)?)
    }

    /// From an already parsed object.
    pub fn from_object(obj: &Map<String, Value>) -> Result<EndpointCostRequest, AltoError> {
        let cost_type = cost_type(obj, "cost-type")?;
        let constraints = constraints(obj)?;
        let endpoints_v = field(obj, "endpoints", "endpoints")?;
        let endpoints = object(endpoints_v, "endpoints")?;
        let srcs = addr_list(endpoints.get("srcs"), "endpoints/srcs")?;
        let dsts = addr_list(endpoints.get("dsts"), "endpoints/dsts")?;
        // §11.5.1.3: "The source and destination endpoint lists MUST NOT be both empty."
        if srcs.is_empty() && dsts.is_empty() {
            return Err(AltoError::bad_value("endpoints", endpoints_v));
        }
        Ok(EndpointCostRequest {
            cost_type,
            constraints,
            srcs,
            dsts,
        })
    }
}

impl EndpointPropRequest {
    /// Parse an `application/alto-endpointpropparams+json` body; `supported` says which
    /// property names this resource offers (§11.4.1.3: each requested one MUST be among them).
    pub fn parse(
        body: &[u8],
        supported: impl Fn(&str) -> bool,
    ) -> Result<EndpointPropRequest, AltoError> {
        Self::from_object(&parse_object(body)?, supported)
    }

    /// From an already parsed object.
    pub fn from_object(
        obj: &Map<String, Value>,
        supported: impl Fn(&str) -> bool,
    ) -> Result<EndpointPropRequest, AltoError> {
        let props_v = field(obj, "properties", "properties")?;
        let properties = strings(props_v, "properties", |s| {
            supported(s).then(|| s.to_owned())
        })?;
        // `properties<1..*>`, `endpoints<1..*>`.
        if properties.is_empty() {
            return Err(AltoError::bad_value("properties", props_v));
        }
        let eps_v = field(obj, "endpoints", "endpoints")?;
        let endpoints = addr_list(Some(eps_v), "endpoints")?;
        if endpoints.is_empty() {
            return Err(AltoError::bad_value("endpoints", eps_v));
        }
        Ok(EndpointPropRequest {
            properties,
            endpoints,
        })
    }
}

impl UpdateStreamRequest {
    /// Parse an `application/alto-updatestreamparams+json` body (RFC 8895 §6.5). Whether the
    /// resources exist and the inputs are valid is checked by the caller, which knows them.
    pub fn parse(body: &[u8]) -> Result<UpdateStreamRequest, AltoError> {
        let obj = parse_object(body)?;
        let mut req = UpdateStreamRequest::default();
        if let Some(add) = obj.get("add") {
            for (id, entry) in object(add, "add")? {
                let path = format!("add/{id}");
                if !is_pid_name(id) {
                    return Err(AltoError::bad_value("add", &Value::String(id.clone())));
                }
                let e = object(entry, &path)?;
                let rid_path = format!("{path}/resource-id");
                let resource_id = string(field(e, "resource-id", &rid_path)?, &rid_path)?;
                let tag = match e.get("tag") {
                    None => None,
                    Some(t) => Some(string(t, &format!("{path}/tag"))?.to_owned()),
                };
                let incremental_changes = match e.get("incremental-changes") {
                    None => true,
                    Some(b) => b.as_bool().ok_or_else(|| {
                        AltoError::bad_type(format!("{path}/incremental-changes"))
                    })?,
                };
                let input = match e.get("input") {
                    None => None,
                    Some(i) => {
                        object(i, &format!("{path}/input"))?;
                        Some(i.clone())
                    }
                };
                req.add.push((
                    id.clone(),
                    AddUpdate {
                        resource_id: resource_id.to_owned(),
                        tag,
                        incremental_changes,
                        input,
                    },
                ));
            }
        }
        if let Some(r) = obj.get("remove") {
            req.remove = Some(strings(r, "remove", |s| {
                is_pid_name(s).then(|| s.to_owned())
            })?);
        }
        Ok(req)
    }
}
