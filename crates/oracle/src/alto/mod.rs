//! ALTO (RFC 7285) over the oracle's database, as pure code: the resources' JSON, request
//! validation with RFC 7285 §8.5 errors, version tags, and the JSON merge patches of update
//! streams (RFC 8895). The `pathwise` binary serves it over HTTP (`oracle serve --alto`).
//!
//! How it is used: [`AltoMaps::build`] computes the PIDs, the network map and the PID-to-PID
//! metrics of a snapshot once (the server keeps one per snapshot); the map resources answer
//! from it ([`AltoMaps::network_map`], [`AltoMaps::cost_map`],
//! [`AltoMaps::filtered_cost_map`]); the endpoint services answer from the snapshot directly
//! ([`endpoint_cost`], [`endpoint_properties`]); request bodies go through the parsers in
//! [`request`]; [`Directory::ird`] is the information resource directory (§9); [`patch::diff`]
//! turns one map into the next for an update stream.
//!
//! See docs/alto.md for the PIDs, the cost metrics and the resource URIs.

mod endpoint;
mod error;
mod maps;
pub mod patch;
pub mod request;
pub mod shape;
pub mod types;

#[cfg(test)]
mod rfc_tests;
#[cfg(test)]
mod tests;

pub use endpoint::{PATH_PROPERTIES, endpoint_cost, endpoint_properties, is_supported_property};
pub use error::{AltoError, ERROR_MEDIA_TYPE, ErrorCode};
pub use maps::{AltoMaps, DEFAULT_PID, Pid};
pub use request::{
    AddUpdate, CostMapFilter, EndpointCostRequest, EndpointPropRequest, NetworkMapFilter,
    UpdateStreamRequest,
};
pub use types::{CostMetric, CostMode, CostType};

use serde_json::{Map, Value, json};

/// Media type of the information resource directory (§9.2.1).
pub const DIRECTORY: &str = "application/alto-directory+json";
/// Media type of network maps (§11.2.1.1).
pub const NETWORK_MAP: &str = "application/alto-networkmap+json";
/// Media type of a filtered network map's input (§11.3.1.3).
pub const NETWORK_MAP_FILTER: &str = "application/alto-networkmapfilter+json";
/// Media type of cost maps (§11.2.3.1).
pub const COST_MAP: &str = "application/alto-costmap+json";
/// Media type of a filtered cost map's input (§11.3.2.3).
pub const COST_MAP_FILTER: &str = "application/alto-costmapfilter+json";
/// Media type of endpoint properties (§11.4.1.1).
pub const ENDPOINT_PROP: &str = "application/alto-endpointprop+json";
/// Media type of an endpoint property request (§11.4.1.3).
pub const ENDPOINT_PROP_PARAMS: &str = "application/alto-endpointpropparams+json";
/// Media type of endpoint costs (§11.5.1.1).
pub const ENDPOINT_COST: &str = "application/alto-endpointcost+json";
/// Media type of an endpoint cost request (§11.5.1.3).
pub const ENDPOINT_COST_PARAMS: &str = "application/alto-endpointcostparams+json";
/// Media type of an update stream (RFC 8895 §6.1).
pub const EVENT_STREAM: &str = "text/event-stream";
/// Media type of an update stream request and of stream control requests (RFC 8895 §6.5, §7.5).
pub const UPDATE_STREAM_PARAMS: &str = "application/alto-updatestreamparams+json";
/// Media type of control update messages (RFC 8895 §5.3).
pub const UPDATE_STREAM_CONTROL: &str = "application/alto-updatestreamcontrol+json";
/// Media type of JSON merge patches (RFC 7396; RFC 8895 §5.2).
pub const MERGE_PATCH: &str = "application/merge-patch+json";

/// Resource ID of the network map (the only one, so the IRD's default, §9.2.2).
pub const NETWORK_MAP_ID: &str = "networkmap";
/// Resource ID of the filtered network map.
pub const FILTERED_NETWORK_MAP_ID: &str = "networkmap-filtered";
/// Resource ID of the filtered cost map.
pub const FILTERED_COST_MAP_ID: &str = "costmap-filtered";
/// Resource ID of the endpoint property service.
pub const ENDPOINT_PROP_ID: &str = "endpoint-property";
/// Resource ID of the endpoint cost service.
pub const ENDPOINT_COST_ID: &str = "endpoint-cost";
/// Resource ID of the update stream service.
pub const UPDATE_STREAM_ID: &str = "update-stream";
/// The resource-specific `pid` property of the network map (§7.1.1, §10.8.1).
pub const PID_PROPERTY: &str = "networkmap.pid";

/// Resource ID of the full cost map of `cost` (`costmap-num-routingcost`, …).
pub fn cost_map_id(cost: CostType) -> String {
    format!("costmap-{}", cost.name())
}

/// Path (below the directory's base) of the full cost map of `cost`: `costmap/num/routingcost`.
pub fn cost_map_path(cost: CostType) -> String {
    let mode = match cost.mode {
        CostMode::Numerical => "num",
        CostMode::Ordinal => "ord",
    };
    format!("costmap/{mode}/{}", cost.metric.as_str())
}

/// Which resources a directory lists, and where.
#[derive(Clone, Debug)]
pub struct Directory {
    /// The base URI every resource URI is relative to, e.g. `/alto` (the IRD itself is there).
    pub base: String,
    /// Whether update streams (RFC 8895) are offered.
    pub update_stream: bool,
}

/// One resource of the directory, as the server routes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Resource {
    /// The IRD (§9).
    Directory,
    /// The network map (§11.2.1).
    NetworkMap,
    /// A full cost map (§11.2.3).
    CostMap(CostType),
    /// The filtered network map (§11.3.1).
    FilteredNetworkMap,
    /// The filtered cost map (§11.3.2).
    FilteredCostMap,
    /// The endpoint property service (§11.4.1).
    EndpointProperty,
    /// The endpoint cost service (§11.5.1).
    EndpointCost,
    /// The update stream service (RFC 8895 §6).
    UpdateStream,
}

impl Resource {
    /// A short name for counters and logs.
    pub fn name(self) -> &'static str {
        match self {
            Resource::Directory => "directory",
            Resource::NetworkMap => "networkmap",
            Resource::CostMap(_) => "costmap",
            Resource::FilteredNetworkMap => "networkmap_filtered",
            Resource::FilteredCostMap => "costmap_filtered",
            Resource::EndpointProperty => "endpoint_property",
            Resource::EndpointCost => "endpoint_cost",
            Resource::UpdateStream => "update_stream",
        }
    }

    /// Every resource name, for counters.
    pub const NAMES: [&'static str; 8] = [
        "directory",
        "networkmap",
        "costmap",
        "networkmap_filtered",
        "costmap_filtered",
        "endpoint_property",
        "endpoint_cost",
        "update_stream",
    ];
}

impl Directory {
    /// Every resource with its path below `base`, its media type and its input media type
    /// (`None`: GET).
    pub fn resources(&self) -> Vec<(Resource, String, &'static str, Option<&'static str>)> {
        let mut v = vec![
            (Resource::Directory, String::new(), DIRECTORY, None),
            (
                Resource::NetworkMap,
                "networkmap".to_owned(),
                NETWORK_MAP,
                None,
            ),
        ];
        for (_, t) in CostType::ALL {
            v.push((Resource::CostMap(t), cost_map_path(t), COST_MAP, None));
        }
        v.extend([
            (
                Resource::FilteredNetworkMap,
                "networkmap/filtered".to_owned(),
                NETWORK_MAP,
                Some(NETWORK_MAP_FILTER),
            ),
            (
                Resource::FilteredCostMap,
                "costmap/filtered".to_owned(),
                COST_MAP,
                Some(COST_MAP_FILTER),
            ),
            (
                Resource::EndpointProperty,
                "endpointprop/lookup".to_owned(),
                ENDPOINT_PROP,
                Some(ENDPOINT_PROP_PARAMS),
            ),
            (
                Resource::EndpointCost,
                "endpointcost/lookup".to_owned(),
                ENDPOINT_COST,
                Some(ENDPOINT_COST_PARAMS),
            ),
        ]);
        if self.update_stream {
            v.push((
                Resource::UpdateStream,
                "updates".to_owned(),
                EVENT_STREAM,
                Some(UPDATE_STREAM_PARAMS),
            ));
        }
        v
    }

    /// The URI of a path below the base.
    pub fn uri(&self, path: &str) -> String {
        let base = self.base.trim_end_matches('/');
        if path.is_empty() {
            if base.is_empty() {
                "/".into()
            } else {
                base.into()
            }
        } else {
            format!("{base}/{path}")
        }
    }

    /// The IRD (§9.2.2): `cost-types` naming the four cost types, `default-alto-network-map`,
    /// and one entry per resource with its `uri`, `media-type`, `accepts`, `capabilities` and
    /// `uses`.
    pub fn ird(&self) -> Value {
        let mut cost_types = Map::new();
        for (name, t) in CostType::ALL {
            cost_types.insert(name.into(), t.to_json());
        }
        let all_names: Vec<&str> = CostType::ALL.iter().map(|(n, _)| *n).collect();
        let mut resources = Map::new();
        for (r, path, media, accepts) in self.resources() {
            if r == Resource::Directory {
                continue;
            }
            let mut e = Map::new();
            e.insert("uri".into(), json!(self.uri(&path)));
            e.insert("media-type".into(), json!(media));
            if let Some(a) = accepts {
                e.insert("accepts".into(), json!(a));
            }
            let id = match r {
                Resource::NetworkMap => NETWORK_MAP_ID.to_owned(),
                Resource::CostMap(t) => {
                    // §11.2.3.4: exactly one cost type; §11.2.3.5: uses the network map.
                    e.insert(
                        "capabilities".into(),
                        json!({ "cost-type-names": [t.name()] }),
                    );
                    e.insert("uses".into(), json!([NETWORK_MAP_ID]));
                    cost_map_id(t)
                }
                Resource::FilteredNetworkMap => {
                    e.insert("uses".into(), json!([NETWORK_MAP_ID]));
                    FILTERED_NETWORK_MAP_ID.to_owned()
                }
                Resource::FilteredCostMap => {
                    e.insert(
                        "capabilities".into(),
                        json!({ "cost-type-names": all_names, "cost-constraints": true }),
                    );
                    e.insert("uses".into(), json!([NETWORK_MAP_ID]));
                    FILTERED_COST_MAP_ID.to_owned()
                }
                Resource::EndpointProperty => {
                    let mut props = vec![PID_PROPERTY];
                    props.extend(PATH_PROPERTIES);
                    e.insert("capabilities".into(), json!({ "prop-types": props }));
                    ENDPOINT_PROP_ID.to_owned()
                }
                Resource::EndpointCost => {
                    // §11.5.1.5: ECS MUST NOT have "uses".
                    e.insert(
                        "capabilities".into(),
                        json!({ "cost-type-names": all_names, "cost-constraints": true }),
                    );
                    ENDPOINT_COST_ID.to_owned()
                }
                Resource::UpdateStream => {
                    let mut uses = vec![NETWORK_MAP_ID.to_owned()];
                    let mut incremental = Map::new();
                    incremental.insert(NETWORK_MAP_ID.into(), json!(MERGE_PATCH));
                    for (_, t) in CostType::ALL {
                        uses.push(cost_map_id(t));
                        incremental.insert(cost_map_id(t), json!(MERGE_PATCH));
                    }
                    // RFC 8895 §6.3, §6.4.
                    e.insert(
                        "capabilities".into(),
                        json!({
                            "incremental-change-media-types": incremental,
                            "support-stream-control": true,
                        }),
                    );
                    e.insert("uses".into(), json!(uses));
                    UPDATE_STREAM_ID.to_owned()
                }
                Resource::Directory => continue,
            };
            resources.insert(id, Value::Object(e));
        }
        json!({
            "meta": {
                "cost-types": cost_types,
                "default-alto-network-map": NETWORK_MAP_ID,
            },
            "resources": resources,
        })
    }
}
