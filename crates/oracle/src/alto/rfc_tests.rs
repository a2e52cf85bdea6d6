//! RFC 7285's example bodies (copied from the RFC text into `rfc7285/`): the requests parse with
//! our parsers, and the responses pass the shape checks our own responses are held to.

use super::request::{CostMapFilter, EndpointCostRequest, EndpointPropRequest, NetworkMapFilter};
use super::types::{ConstraintOp, CostMetric, CostMode};
use super::{AltoError, ErrorCode, shape};
use serde_json::Value;

const IRD: &str = include_str!("rfc7285/ird.json");
const NETWORK_MAP: &str = include_str!("rfc7285/networkmap.json");
const COST_MAP: &str = include_str!("rfc7285/costmap.json");
const NETWORK_MAP_FILTER: &str = include_str!("rfc7285/networkmapfilter-request.json");
const NETWORK_MAP_FILTERED: &str = include_str!("rfc7285/networkmap-filtered.json");
const COST_MAP_FILTER: &str = include_str!("rfc7285/costmapfilter-request.json");
const COST_MAP_FILTERED: &str = include_str!("rfc7285/costmap-filtered.json");
const EPS_REQUEST: &str = include_str!("rfc7285/endpointprop-request.json");
const EPS: &str = include_str!("rfc7285/endpointprop.json");
const ECS_REQUEST: &str = include_str!("rfc7285/endpointcost-request.json");
const ECS: &str = include_str!("rfc7285/endpointcost.json");

fn json(s: &str) -> Value {
    serde_json::from_str(s).expect("example parses")
}

#[test]
fn the_rfc_ird_example_has_a_trailing_comma_and_is_a_valid_ird_without_it() {
    // §9.2.3 as published: `"capabilities" : {...},` closes the "endpoint-property" entry with
    // a comma before `}`, which no JSON parser accepts.
    assert!(serde_json::from_str::<Value>(IRD).is_err());
    let fixed = IRD.replacen("        },\n     },", "        }\n     },", 1);
    let ird = json(&fixed);
    shape::directory(&ird, true).unwrap();
    assert_eq!(ird["resources"].as_object().unwrap().len(), 6);
    assert_eq!(
        ird["meta"]["default-alto-network-map"],
        "my-default-network-map"
    );
}

#[test]
fn the_rfc_response_examples_pass_the_shape_checks() {
    shape::network_map(&json(NETWORK_MAP)).unwrap();
    shape::network_map(&json(NETWORK_MAP_FILTERED)).unwrap();
    shape::cost_map(&json(COST_MAP)).unwrap();
    shape::cost_map(&json(COST_MAP_FILTERED)).unwrap();
    shape::endpoint_properties(&json(EPS)).unwrap();
    shape::endpoint_cost(&json(ECS)).unwrap();
}

#[test]
fn the_shape_checks_refuse_what_the_rfc_forbids() {
    let mut v = json(NETWORK_MAP);
    v["meta"].as_object_mut().unwrap().remove("vtag");
    assert!(shape::network_map(&v).is_err(), "no vtag (§11.2.1.6)");
    let mut v = json(NETWORK_MAP);
    v["network-map"]["PID.1"] = v["network-map"]["PID1"].clone();
    assert!(shape::network_map(&v).is_err(), "'.' in a PID name (§10.1)");
    let mut v = json(NETWORK_MAP);
    v["network-map"]["PID1"]["ipv4"][0] = "2001:db8::/32".into();
    assert!(shape::network_map(&v).is_err(), "IPv6 prefix as ipv4");
    let mut v = json(COST_MAP);
    v["cost-map"]["PID1"]["PID2"] = "5".into();
    assert!(shape::cost_map(&v).is_err(), "a cost that is not a number");
    let mut v = json(COST_MAP);
    v["meta"]["dependent-vtags"] = serde_json::json!([]);
    assert!(
        shape::cost_map(&v).is_err(),
        "§11.2.3.6: a single-element array"
    );
    let mut v = json(ECS);
    v["endpoint-cost-map"]["ipv4:192.0.2.2"]["ipv6:192.0.2.89"] = 1.into();
    assert!(shape::endpoint_cost(&v).is_err(), "mistyped endpoint");
    let mut v = json(EPS);
    v["endpoint-properties"]["ipv4:192.0.2.34"]["priv:ietf-example-prop"] = 1.into();
    assert!(
        shape::endpoint_properties(&v).is_err(),
        "a property that is not a string"
    );
    let e = serde_json::json!({ "meta": { "code": "E_SYNTAX", "value": "x" } });
    assert!(shape::error(&e).is_err(), "§8.5.2: value needs field");
}

#[test]
fn the_rfc_request_examples_parse() {
    let f = NetworkMapFilter::parse(NETWORK_MAP_FILTER.as_bytes()).unwrap();
    assert_eq!(f.pids, ["PID1", "PID2"]);
    assert!(f.address_types.is_empty());

    let f = CostMapFilter::parse(COST_MAP_FILTER.as_bytes()).unwrap();
    assert_eq!(f.cost_type.mode, CostMode::Numerical);
    assert_eq!(f.cost_type.metric, CostMetric::RoutingCost);
    assert_eq!(f.srcs, ["PID1"]);
    assert_eq!(f.dsts, ["PID1", "PID2", "PID3"]);

    let r = EndpointCostRequest::parse(ECS_REQUEST.as_bytes()).unwrap();
    assert_eq!(r.cost_type.mode, CostMode::Ordinal);
    assert_eq!(r.srcs, ["192.0.2.2".parse::<std::net::IpAddr>().unwrap()]);
    assert_eq!(r.dsts.len(), 3);

    // The example asks for "my-default-networkmap.pid" and a private property; a server
    // offering both accepts it, ours (offering neither name) refuses it with the value at fault.
    let r = EndpointPropRequest::parse(EPS_REQUEST.as_bytes(), |_| true).unwrap();
    assert_eq!(r.properties.len(), 2);
    assert_eq!(r.endpoints.len(), 2);
    let e = EndpointPropRequest::parse(EPS_REQUEST.as_bytes(), super::is_supported_property)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidFieldValue);
    assert_eq!(e.field.as_deref(), Some("properties"));
    assert_eq!(e.value.as_deref(), Some("my-default-networkmap.pid"));
}

#[test]
fn constraints_parse_as_section_11_3_2_3_says() {
    use super::types::Constraint;
    let c = Constraint::parse("le 10").unwrap();
    assert_eq!((c.op, c.value), (ConstraintOp::Le, 10.0));
    assert!(c.holds(10.0) && !c.holds(10.5));
    let c = Constraint::parse("gt\t2.5").unwrap();
    assert!(c.holds(3.0) && !c.holds(2.5));
    for bad in ["", "le", "le x", "lte 3", "le 3 4", "le inf", "eq NaN"] {
        assert_eq!(Constraint::parse(bad), None, "{bad:?}");
    }
}

#[test]
fn error_resources_carry_the_fields_of_section_8_5_2() {
    let e = AltoError::bad_value("cost-type/cost-mode", &Value::String("foo".into()));
    let v = e.to_json();
    shape::error(&v).unwrap();
    assert_eq!(
        v,
        serde_json::json!({ "meta": {
            "code": "E_INVALID_FIELD_VALUE", "field": "cost-type/cost-mode", "value": "foo"
        }})
    );
    // A non-string invalid value is sent as a string.
    let v = AltoError::bad_value("endpoints/srcs", &serde_json::json!(42)).to_json();
    assert_eq!(v["meta"]["value"], "42");
    let v = AltoError::syntax("line 1 column 2: EOF").to_json();
    assert_eq!(v["meta"]["code"], "E_SYNTAX");
    assert_eq!(v["meta"]["syntax-error"], "line 1 column 2: EOF");
    assert_eq!(AltoError::missing("endpoints").http_status(), 400);
}
