use super::request::*;
use super::types::{CostMetric, CostMode, CostType, typed_addr};
use super::*;
use crate::generate::{SEED_SOURCE_NETWORK, SyntheticSpec, seed_network, synthetic};
use crate::model::ExternalNetwork;
use crate::{TopologySnapshot, Update};
use ipnet::IpNet;
use proptest::prelude::*;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

fn small() -> Arc<TopologySnapshot> {
    let mut spec = SyntheticSpec::new(24, 300, 2);
    spec.prefixes_v6 = 40;
    Arc::new(TopologySnapshot::build(&synthetic(&spec)).unwrap())
}

const NUM_ROUTING: CostType = CostType {
    metric: CostMetric::RoutingCost,
    mode: CostMode::Numerical,
};

/// An address whose longest match is `prefix` itself, if the prefix has one not covered by a
/// more specific prefix of the table.
fn address_in(snapshot: &TopologySnapshot, prefix: IpNet) -> Option<IpAddr> {
    prefix
        .hosts()
        .take(64)
        .chain(std::iter::once(prefix.network()))
        .find(|&a| snapshot.locate(a).is_some_and(|l| l.prefix == prefix))
}

#[test]
fn the_network_map_is_complete_and_non_overlapping() {
    let snap = small();
    let maps = AltoMaps::build(snap.clone());
    let nm = maps.network_map(None);
    shape::network_map(&nm).unwrap();
    // §11.2.2: every prefix in exactly one PID, and the whole address space covered.
    let mut seen: HashMap<IpNet, &str> = HashMap::new();
    for pid in maps.pids() {
        assert!(types::is_pid_name(&pid.name), "{}", pid.name);
        for &p in &pid.prefixes {
            assert!(seen.insert(p, &pid.name).is_none(), "{p} in two PIDs");
        }
    }
    assert_eq!(seen.len(), snap.prefix_count() + 2);
    assert_eq!(seen[&"0.0.0.0/0".parse::<IpNet>().unwrap()], DEFAULT_PID);
    assert_eq!(seen[&"::/0".parse::<IpNet>().unwrap()], DEFAULT_PID);
    // Prefixes of one PID share their exits (and so their metrics from anywhere).
    for pid in maps.pids().iter().filter(|p| p.name != DEFAULT_PID) {
        let exits = snap.locate(pid.prefixes[0].network()).map(|l| l.prefix);
        assert!(exits.is_some());
    }
    // The JSON lists the same prefixes.
    let total: usize = nm["network-map"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|g| g.as_object().unwrap().values())
        .map(|a| a.as_array().unwrap().len())
        .sum();
    assert_eq!(total, seen.len());
}

#[test]
fn source_networks_are_in_their_routers_pids_and_the_rest_is_default() {
    let snap = small();
    let maps = AltoMaps::build(snap.clone());
    let client: IpAddr = "100.64.0.7".parse().unwrap();
    let router = snap.source_router(client).unwrap();
    let pid = maps.pid_of(client).unwrap();
    assert_eq!(
        pid.name,
        format!("src-{}", router.to_string().replace('.', "-"))
    );
    assert_eq!(
        maps.pid_of("127.0.0.1".parse().unwrap()).unwrap().name,
        DEFAULT_PID
    );
    assert_eq!(
        maps.pid_of("fe80::1".parse().unwrap()).unwrap().name,
        DEFAULT_PID
    );
    for pid in maps.pids().iter().filter(|p| p.name != DEFAULT_PID) {
        for &p in pid.prefixes.iter().take(3) {
            if let Some(a) = address_in(&snap, p) {
                assert_eq!(maps.pid_of(a).unwrap().name, pid.name, "{a}");
            }
        }
    }
}

#[test]
fn cost_map_entries_are_the_endpoint_costs_of_their_pids() {
    let snap = small();
    let maps = AltoMaps::build(snap.clone());
    for (_, cost) in CostType::ALL
        .iter()
        .filter(|(_, t)| t.mode == CostMode::Numerical)
    {
        let cm = maps.cost_map(*cost);
        shape::cost_map(&cm).unwrap();
        assert_eq!(cm["meta"]["dependent-vtags"][0]["tag"], maps.vtag());
        assert_eq!(cm["meta"]["cost-type"], cost.to_json());
        let mut checked = 0;
        for (src, row) in cm["cost-map"].as_object().unwrap() {
            let src_pid = maps.pids().iter().find(|p| &p.name == src).unwrap();
            let Some(s) = address_in(&snap, src_pid.prefixes[0]) else {
                continue;
            };
            for (dst, c) in row.as_object().unwrap().iter().take(40) {
                let dst_pid = maps.pids().iter().find(|p| &p.name == dst).unwrap();
                let Some(d) = dst_pid.prefixes.iter().find_map(|&p| address_in(&snap, p)) else {
                    continue;
                };
                let req = EndpointCostRequest {
                    cost_type: *cost,
                    constraints: vec![],
                    srcs: vec![s],
                    dsts: vec![d],
                };
                let ecs = endpoint_cost(&snap, &req, s);
                assert_eq!(
                    &ecs["endpoint-cost-map"][typed_addr(s)][typed_addr(d)],
                    c,
                    "{src} -> {dst}"
                );
                checked += 1;
            }
        }
        assert!(checked > 100, "{checked}");
    }
}

/// The addresses of a Proxidor reply, in order.
fn proxidor_order(snap: &TopologySnapshot, source: IpAddr, candidates: &[IpAddr]) -> Vec<IpAddr> {
    let mut q = Vec::new();
    crate::proxidor::query(7, candidates).emit(&mut q);
    let mut out = Vec::new();
    let outcome = crate::answer(snap, source, &q, &mut out);
    assert!(
        matches!(outcome, crate::Outcome::Answered { .. }),
        "{outcome:?}"
    );
    let reply = crate::proxidor::Message::parse(&out).unwrap();
    reply
        .tlvs
        .iter()
        .flat_map(|t| match &t.payload {
            crate::proxidor::Payload::Ipv4(v) => v.iter().map(|a| IpAddr::V4(*a)).collect(),
            crate::proxidor::Payload::Ipv6(v) => v.iter().map(|a| IpAddr::V6(*a)).collect(),
            _ => Vec::<IpAddr>::new(),
        })
        .collect()
}

#[test]
fn endpoint_routingcost_ranks_as_proxidor_answers_on_the_seed_network() {
    let cfg = seed_network(1);
    let snap = TopologySnapshot::build(&cfg).unwrap();
    let source: IpAddr = SEED_SOURCE_NETWORK
        .parse::<IpNet>()
        .unwrap()
        .hosts()
        .nth(4)
        .unwrap();
    // 100 candidates: external and client networks, and a few the oracle cannot place.
    let mut candidates: Vec<IpAddr> = cfg
        .external_networks
        .iter()
        .step_by(997)
        .map(|n| n.prefix.hosts().next().unwrap_or(n.prefix.network()))
        .take(80)
        .collect();
    candidates.extend(
        cfg.source_networks
            .iter()
            .take(15)
            .map(|n| n.prefix.network()),
    );
    candidates.extend((1..=5).map(|i| IpAddr::V4(Ipv4Addr::new(127, 0, 0, i))));
    candidates.dedup();
    assert_eq!(candidates.len(), 100);
    let req = EndpointCostRequest {
        cost_type: NUM_ROUTING,
        constraints: vec![],
        srcs: vec![source],
        dsts: candidates.clone(),
    };
    let ecs = endpoint_cost(&snap, &req, source);
    shape::endpoint_cost(&ecs).unwrap();
    let row = ecs["endpoint-cost-map"][typed_addr(source)]
        .as_object()
        .unwrap();
    assert_eq!(row.len(), 95, "the 5 loopback candidates have no cost");
    // Sort by ECS cost, ties and uncosted candidates in request order.
    let mut ranked: Vec<(f64, usize, IpAddr)> = candidates
        .iter()
        .enumerate()
        .map(|(i, &a)| {
            let c = row.get(&typed_addr(a)).and_then(Value::as_f64);
            (c.unwrap_or(f64::INFINITY), i, a)
        })
        .collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let ours: Vec<IpAddr> = ranked.into_iter().map(|(_, _, a)| a).collect();
    assert_eq!(ours, proxidor_order(&snap, source, &candidates));
    // Ordinal mode: the same order, as dense ranks from 1.
    let ord = endpoint_cost(
        &snap,
        &EndpointCostRequest {
            cost_type: CostType {
                metric: CostMetric::RoutingCost,
                mode: CostMode::Ordinal,
            },
            ..req
        },
        source,
    );
    let ranks = ord["endpoint-cost-map"][typed_addr(source)]
        .as_object()
        .unwrap();
    let mut last = 0;
    for a in ours.iter().take(95) {
        let r = ranks[&typed_addr(*a)].as_u64().unwrap();
        assert!(r == last || r == last + 1, "{r} after {last}");
        last = r;
    }
    assert_eq!(ranks[&typed_addr(ours[0])], json!(1));
}

#[test]
fn endpoint_cost_defaults_to_the_client_and_applies_constraints() {
    let snap = small();
    let client: IpAddr = "100.64.0.9".parse().unwrap();
    let dsts: Vec<IpAddr> = ["100.64.1.1", "100.64.2.1", "100.64.3.1", "100.64.4.1"]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    let req = EndpointCostRequest::parse(
        json!({
            "cost-type": {"cost-mode": "numerical", "cost-metric": "hopcount"},
            "endpoints": {"dsts": dsts.iter().map(|d| typed_addr(*d)).collect::<Vec<_>>()},
        })
        .to_string()
        .as_bytes(),
    )
    .unwrap();
    let v = endpoint_cost(&snap, &req, client);
    let row = v["endpoint-cost-map"][typed_addr(client)]
        .as_object()
        .unwrap();
    assert_eq!(row.len(), 4, "{v}");
    for d in &dsts {
        let hops = snap.metrics(client, *d).unwrap().hops;
        assert_eq!(row[&typed_addr(*d)], json!(hops));
    }
    let max = row.values().filter_map(Value::as_u64).max().unwrap();
    let constrained = EndpointCostRequest {
        constraints: vec![types::Constraint::parse(&format!("lt {max}")).unwrap()],
        ..req
    };
    let v = endpoint_cost(&snap, &constrained, client);
    let row2 = v["endpoint-cost-map"][typed_addr(client)]
        .as_object()
        .unwrap();
    assert!(row2.len() < row.len());
    assert!(row2.values().all(|c| c.as_u64().unwrap() < max));
}

#[test]
fn ordinal_values_are_dense_ranks_over_the_whole_map() {
    let v = maps::mode_values(CostMode::Ordinal, [5.0, 1.5, 5.0, 0.0, 9.0].into_iter());
    assert_eq!(v, [3.0, 2.0, 3.0, 1.0, 4.0]);
    let snap = small();
    let maps = AltoMaps::build(snap);
    let ord = maps.cost_map(CostType {
        metric: CostMetric::RoutingCost,
        mode: CostMode::Ordinal,
    });
    shape::cost_map(&ord).unwrap();
    let num = maps.cost_map(NUM_ROUTING);
    // Ranks follow costs across the whole map (§6.2), not per row.
    let mut pairs: Vec<(f64, u64)> = Vec::new();
    for (s, row) in num["cost-map"].as_object().unwrap() {
        for (d, c) in row.as_object().unwrap() {
            pairs.push((c.as_f64().unwrap(), ord["cost-map"][s][d].as_u64().unwrap()));
        }
    }
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(pairs.windows(2).all(|w| w[0].1 <= w[1].1));
    assert_eq!(pairs[0].1, 1);
}

#[test]
fn filtered_maps_keep_what_was_asked_and_ignore_unknown_pids() {
    let snap = small();
    let maps = AltoMaps::build(snap);
    let names: Vec<String> = maps.pids().iter().map(|p| p.name.clone()).collect();
    let src = names
        .iter()
        .find(|n| n.starts_with("src-"))
        .unwrap()
        .clone();
    let ext = names
        .iter()
        .find(|n| n.starts_with("ext-"))
        .unwrap()
        .clone();
    // §11.3.1.6: unknown PIDs and address types as if absent, duplicates once, full vtag.
    let f = NetworkMapFilter::parse(
        json!({"pids": [src, ext, src, "no-such-pid"], "address-types": ["ipv4", "foo"]})
            .to_string()
            .as_bytes(),
    )
    .unwrap();
    let v = maps.network_map(Some(&f));
    shape::network_map(&v).unwrap();
    let got: Vec<&String> = v["network-map"].as_object().unwrap().keys().collect();
    let mut want = vec![&ext, &src];
    want.sort();
    assert_eq!(got, want);
    assert_eq!(v["meta"]["vtag"]["tag"], maps.vtag());
    let f =
        NetworkMapFilter::parse(br#"{"pids": ["default"], "address-types": ["ipv6"]}"#).unwrap();
    assert_eq!(
        maps.network_map(Some(&f))["network-map"],
        json!({"default": {"ipv6": ["::/0"]}})
    );
    let f = NetworkMapFilter::parse(br#"{"pids": []}"#).unwrap();
    assert_eq!(maps.network_map(Some(&f)), maps.network_map(None));

    let f = CostMapFilter::parse(
        json!({
            "cost-type": {"cost-mode": "numerical", "cost-metric": "routingcost"},
            "pids": {"srcs": [src, "nope"], "dsts": [ext, src]},
        })
        .to_string()
        .as_bytes(),
    )
    .unwrap();
    let v = maps.filtered_cost_map(&f).unwrap();
    shape::cost_map(&v).unwrap();
    let full = maps.cost_map(NUM_ROUTING);
    assert_eq!(
        v["cost-map"],
        json!({ &src: { &ext: full["cost-map"][&src][&ext], &src: full["cost-map"][&src][&src] } })
    );
    // No "pids": the whole map.
    let f = CostMapFilter::parse(
        br#"{"cost-type": {"cost-mode": "numerical", "cost-metric": "routingcost"}}"#,
    )
    .unwrap();
    assert_eq!(
        maps.filtered_cost_map(&f).unwrap()["cost-map"],
        full["cost-map"]
    );
}

#[test]
fn requests_are_refused_with_the_error_of_section_8_5_2() {
    type Case = (
        &'static str,
        ErrorCode,
        Option<&'static str>,
        Option<&'static str>,
    );
    let ecs: &[Case] = &[
        ("{", ErrorCode::Syntax, None, None),
        ("[1]", ErrorCode::Syntax, None, None),
        (
            r#"{"endpoints": {"dsts": ["ipv4:1.2.3.4"]}}"#,
            ErrorCode::MissingField,
            Some("cost-type"),
            None,
        ),
        (
            r#"{"cost-type": 3, "endpoints": {}}"#,
            ErrorCode::InvalidFieldType,
            Some("cost-type"),
            None,
        ),
        (
            r#"{"cost-type": {"cost-metric": "routingcost"}, "endpoints": {}}"#,
            ErrorCode::MissingField,
            Some("cost-type/cost-mode"),
            None,
        ),
        (
            r#"{"cost-type": {"cost-mode": 1, "cost-metric": "routingcost"}}"#,
            ErrorCode::InvalidFieldType,
            Some("cost-type/cost-mode"),
            None,
        ),
        (
            r#"{"cost-type": {"cost-mode": "foo", "cost-metric": "routingcost"}}"#,
            ErrorCode::InvalidFieldValue,
            Some("cost-type/cost-mode"),
            Some("foo"),
        ),
        (
            r#"{"cost-type": {"cost-mode": "ordinal", "cost-metric": "bandwidth"}}"#,
            ErrorCode::InvalidFieldValue,
            Some("cost-type/cost-metric"),
            Some("bandwidth"),
        ),
        (
            r#"{"cost-type": {"cost-mode": "ordinal", "cost-metric": "hopcount"}}"#,
            ErrorCode::MissingField,
            Some("endpoints"),
            None,
        ),
        (
            r#"{"cost-type": {"cost-mode": "ordinal", "cost-metric": "hopcount"}, "endpoints": []}"#,
            ErrorCode::InvalidFieldType,
            Some("endpoints"),
            None,
        ),
        (
            r#"{"cost-type": {"cost-mode": "ordinal", "cost-metric": "hopcount"}, "endpoints": {"srcs": "ipv4:1.2.3.4"}}"#,
            ErrorCode::InvalidFieldType,
            Some("endpoints/srcs"),
            None,
        ),
        (
            r#"{"cost-type": {"cost-mode": "ordinal", "cost-metric": "hopcount"}, "endpoints": {"dsts": ["ipv4:1.2.3.400"]}}"#,
            ErrorCode::InvalidFieldValue,
            Some("endpoints/dsts"),
            Some("ipv4:1.2.3.400"),
        ),
        (
            r#"{"cost-type": {"cost-mode": "ordinal", "cost-metric": "hopcount"}, "endpoints": {"dsts": ["ipv6:1.2.3.4"]}}"#,
            ErrorCode::InvalidFieldValue,
            Some("endpoints/dsts"),
            Some("ipv6:1.2.3.4"),
        ),
        // §8.5.2: an array element of the wrong type is an invalid value, sent as a string.
        (
            r#"{"cost-type": {"cost-mode": "ordinal", "cost-metric": "hopcount"}, "endpoints": {"dsts": [7]}}"#,
            ErrorCode::InvalidFieldValue,
            Some("endpoints/dsts"),
            Some("7"),
        ),
        (
            r#"{"cost-type": {"cost-mode": "ordinal", "cost-metric": "hopcount"}, "endpoints": {"srcs": [], "dsts": []}}"#,
            ErrorCode::InvalidFieldValue,
            Some("endpoints"),
            None,
        ),
        (
            r#"{"cost-type": {"cost-mode": "ordinal", "cost-metric": "hopcount"}, "constraints": ["lt"], "endpoints": {"dsts": ["ipv4:1.2.3.4"]}}"#,
            ErrorCode::InvalidFieldValue,
            Some("constraints"),
            Some("lt"),
        ),
    ];
    for (body, code, field, value) in ecs {
        let e = EndpointCostRequest::parse(body.as_bytes()).unwrap_err();
        assert_eq!(e.code, *code, "{body}: {e}");
        assert_eq!(e.field.as_deref(), *field, "{body}");
        if value.is_some() {
            assert_eq!(e.value.as_deref(), *value, "{body}");
        }
        shape::error(&e.to_json()).unwrap();
    }
    // Unknown fields are ignored (§8.3.7); "description" too (§11.5.1.3).
    EndpointCostRequest::parse(
        br#"{"x": 1, "cost-type": {"cost-mode": "ordinal", "cost-metric": "hopcount",
            "description": "d"}, "endpoints": {"dsts": ["ipv6:2001:db8::1"], "y": 2}}"#,
    )
    .unwrap();

    let e = NetworkMapFilter::parse(br#"{"address-types": []}"#).unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::MissingField, Some("pids"))
    );
    let e = NetworkMapFilter::parse(br#"{"pids": ["a.b"]}"#).unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref(), e.value.as_deref()),
        (ErrorCode::InvalidFieldValue, Some("pids"), Some("a.b"))
    );
    let e = CostMapFilter::parse(
        br#"{"cost-type": {"cost-mode": "numerical", "cost-metric": "routingcost"}, "pids": {"srcs": []}}"#,
    )
    .unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::MissingField, Some("pids/dsts"))
    );
    let e = EndpointPropRequest::parse(
        br#"{"properties": [], "endpoints": ["ipv4:1.2.3.4"]}"#,
        is_supported_property,
    )
    .unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::InvalidFieldValue, Some("properties"))
    );
    let e = EndpointPropRequest::parse(
        br#"{"properties": ["networkmap.pid"]}"#,
        is_supported_property,
    )
    .unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::MissingField, Some("endpoints"))
    );
    let e = UpdateStreamRequest::parse(br#"{"add": {"1": {"tag": "x"}}}"#).unwrap_err();
    assert_eq!(
        (e.code, e.field.as_deref()),
        (ErrorCode::MissingField, Some("add/1/resource-id"))
    );
}

#[test]
fn endpoint_properties_give_the_pid_and_the_path_from_the_client() {
    let snap = small();
    let maps = AltoMaps::build(snap.clone());
    let client: IpAddr = "100.64.0.9".parse().unwrap();
    let eps: Vec<IpAddr> = vec!["100.64.3.3".parse().unwrap(), "127.0.0.1".parse().unwrap()];
    let mut props = vec![PID_PROPERTY.to_owned()];
    props.extend(PATH_PROPERTIES.iter().map(|s| s.to_string()));
    let req = EndpointPropRequest {
        properties: props,
        endpoints: eps.clone(),
    };
    let v = endpoint_properties(&maps, &req, client);
    shape::endpoint_properties(&v).unwrap();
    assert_eq!(v["meta"]["dependent-vtags"][0]["tag"], maps.vtag());
    let p = &v["endpoint-properties"][typed_addr(eps[0])];
    let m = snap.metrics(client, eps[0]).unwrap();
    assert_eq!(p[PID_PROPERTY], maps.pid_of(eps[0]).unwrap().name.as_str());
    assert_eq!(p["priv:pathwise-hops"], m.hops.to_string());
    assert_eq!(
        p["priv:pathwise-routingcost"],
        snap.cost(client, eps[0]).unwrap().to_string()
    );
    assert_eq!(
        p["priv:pathwise-prefix"],
        snap.locate(eps[0]).unwrap().prefix.to_string()
    );
    // An endpoint the oracle cannot place: only its PID (§11.4.1.6: omit what is undefined).
    assert_eq!(
        v["endpoint-properties"][typed_addr(eps[1])],
        json!({ PID_PROPERTY: DEFAULT_PID })
    );
}

#[test]
fn the_vtag_follows_the_network_map_content() {
    let snap = small();
    let a = AltoMaps::build(snap.clone());
    assert_eq!(a.vtag().len(), 32);
    assert!(types::is_vtag(a.vtag()));
    // The same content, rebuilt: the same tag.
    assert_eq!(AltoMaps::build(snap.clone()).vtag(), a.vtag());
    // Another ranking changes costs, not PIDs.
    let (s2, _) = snap
        .apply(&[Update::SetRanking("latency-first".into())])
        .unwrap();
    let b = AltoMaps::build(Arc::new(s2));
    assert_eq!(b.vtag(), a.vtag());
    assert_ne!(
        b.cost_map(NUM_ROUTING)["cost-map"],
        a.cost_map(NUM_ROUTING)["cost-map"]
    );
    assert_ne!(
        b.cost_map(NUM_ROUTING)["meta"]["vtag"],
        a.cost_map(NUM_ROUTING)["meta"]["vtag"]
    );
    // A new external prefix changes the map and its tag.
    let exit = snap.router_addresses().next().unwrap();
    let (s3, _) = snap
        .apply(&[Update::AddExternalNetwork(ExternalNetwork {
            prefix: "203.0.113.0/24".parse().unwrap(),
            router: exit,
            nic: 0,
            as_number: 64_500,
            as_distance: 9,
        })])
        .unwrap();
    let c = AltoMaps::build(Arc::new(s3));
    assert_ne!(c.vtag(), a.vtag());
}

#[test]
fn the_directory_lists_every_resource_in_the_shape_of_section_9() {
    let d = Directory {
        base: "/alto".into(),
        update_stream: true,
    };
    let ird = d.ird();
    shape::directory(&ird, true).unwrap();
    let res = ird["resources"].as_object().unwrap();
    assert_eq!(res.len(), 10, "{ird:#}");
    assert_eq!(res[NETWORK_MAP_ID]["uri"], "/alto/networkmap");
    assert_eq!(
        res["costmap-ord-hopcount"]["uri"],
        "/alto/costmap/ord/hopcount"
    );
    assert_eq!(
        res["costmap-ord-hopcount"]["capabilities"]["cost-type-names"],
        json!(["ord-hopcount"])
    );
    assert!(res[ENDPOINT_COST_ID].get("uses").is_none(), "§11.5.1.5");
    assert_eq!(res[ENDPOINT_COST_ID]["accepts"], ENDPOINT_COST_PARAMS);
    // Every cost-type name a resource uses is defined in meta (§9.2.2).
    for (_, e) in res {
        for n in e["capabilities"]["cost-type-names"]
            .as_array()
            .into_iter()
            .flatten()
        {
            assert!(
                ird["meta"]["cost-types"].get(n.as_str().unwrap()).is_some(),
                "{n}"
            );
        }
    }
    let no_sse = Directory {
        base: "".into(),
        update_stream: false,
    }
    .ird();
    assert!(no_sse["resources"].get(UPDATE_STREAM_ID).is_none());
    assert_eq!(no_sse["resources"][NETWORK_MAP_ID]["uri"], "/networkmap");
}

#[test]
fn merge_patches_carry_a_live_network_from_one_map_to_the_next() {
    // What an update stream client sees: the first maps in full, then a patch per change.
    let snap = small();
    let first = AltoMaps::build(snap.clone());
    let (mut net, mut cost) = (first.network_map(None), first.cost_map(NUM_ROUTING));
    let exit = snap.router_addresses().nth(3).unwrap();
    let updates = [
        vec![Update::SetRanking("latency-first".into())],
        vec![Update::AddExternalNetwork(ExternalNetwork {
            prefix: "198.51.100.0/24".parse().unwrap(),
            router: exit,
            nic: 0,
            as_number: 64_501,
            as_distance: 2,
        })],
        vec![Update::RemovePrefix("198.51.100.0/24".parse().unwrap())],
        vec![Update::SetRanking("fewest-hops".into())],
    ];
    let mut current = snap;
    for u in &updates {
        let (next, _) = current.apply(u).unwrap();
        current = Arc::new(next);
        let maps = AltoMaps::build(current.clone());
        let (n2, c2) = (maps.network_map(None), maps.cost_map(NUM_ROUTING));
        if let Some(p) = patch::diff(&net, &n2) {
            patch::apply(&mut net, &p);
        }
        if let Some(p) = patch::diff(&cost, &c2) {
            patch::apply(&mut cost, &p);
        }
        assert_eq!(net, n2);
        assert_eq!(cost, c2);
    }
}

#[test]
fn merge_patch_follows_the_rfc_7396_examples() {
    // RFC 7396 Appendix A (the same table is in RFC 7386).
    let cases = [
        (json!({"a":"b"}), json!({"a":"c"}), json!({"a":"c"})),
        (json!({"a":"b"}), json!({"b":"c"}), json!({"a":"b","b":"c"})),
        (json!({"a":"b"}), json!({"a":null}), json!({})),
        (
            json!({"a":"b","b":"c"}),
            json!({"a":null}),
            json!({"b":"c"}),
        ),
        (json!({"a":["b"]}), json!({"a":"c"}), json!({"a":"c"})),
        (json!({"a":"c"}), json!({"a":["b"]}), json!({"a":["b"]})),
        (
            json!({"a":{"b":"c"}}),
            json!({"a":{"b":"d","c":null}}),
            json!({"a":{"b":"d"}}),
        ),
        (json!({"a":[{"b":"c"}]}), json!({"a":[1]}), json!({"a":[1]})),
        (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
        (json!({"a":"b"}), json!(["c"]), json!(["c"])),
        (json!({"a":"foo"}), json!(null), json!(null)),
        (json!({"a":"foo"}), json!("bar"), json!("bar")),
        (json!({"e":null}), json!({"a":1}), json!({"e":null,"a":1})),
        (json!([1, 2]), json!({"a":"b","c":null}), json!({"a":"b"})),
        (
            json!({}),
            json!({"a":{"bb":{"ccc":null}}}),
            json!({"a":{"bb":{}}}),
        ),
    ];
    for (target, p, want) in cases {
        let mut t = target.clone();
        patch::apply(&mut t, &p);
        assert_eq!(t, want, "{target} + {p}");
    }
}

/// ALTO-shaped documents without nulls: object-maps of object-maps of numbers or string arrays.
fn alto_doc() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        (0u32..20).prop_map(|n| json!(n)),
        prop::collection::vec("[a-c]{1,2}", 0..3).prop_map(|v| json!(v)),
    ];
    let row = prop::collection::btree_map("[a-e]", leaf, 0..5)
        .prop_map(|m| Value::Object(m.into_iter().collect()));
    prop::collection::btree_map("[p-t]", row, 0..5).prop_map(
        |m| json!({ "meta": { "n": m.len() }, "map": Value::Object(m.into_iter().collect()) }),
    )
}

proptest! {
    #[test]
    fn applying_every_patch_to_the_first_map_gives_the_current_map(
        docs in prop::collection::vec(alto_doc(), 1..8)
    ) {
        let mut client = docs[0].clone();
        for w in docs.windows(2) {
            match patch::diff(&w[0], &w[1]) {
                Some(p) => patch::apply(&mut client, &p),
                None => prop_assert_eq!(&w[0], &w[1]),
            }
            prop_assert_eq!(&client, &w[1]);
        }
    }

    #[test]
    fn request_parsers_never_panic(body in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = EndpointCostRequest::parse(&body);
        let _ = EndpointPropRequest::parse(&body, is_supported_property);
        let _ = NetworkMapFilter::parse(&body);
        let _ = CostMapFilter::parse(&body);
        let _ = UpdateStreamRequest::parse(&body);
    }

    #[test]
    fn typed_addresses_round_trip(a in any::<std::net::Ipv4Addr>(), b in any::<std::net::Ipv6Addr>()) {
        for ip in [IpAddr::V4(a), IpAddr::V6(b)] {
            prop_assert_eq!(types::parse_typed_addr(&typed_addr(ip)), Some(ip));
        }
    }
}
