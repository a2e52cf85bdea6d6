//! ALTO request bodies (`pathwise_oracle::alto::request`): the first byte picks the resource
//! (endpoint cost, endpoint property, filtered network map, filtered cost map, update stream),
//! the rest is the body. Parsing never panics; a refused body gives an error resource of RFC 7285
//! §8.5.2's shape; an accepted one is answered from a small database, and the answer has the
//! shape RFC 7285 defines for its resource.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathwise_oracle::TopologySnapshot;
use pathwise_oracle::alto::{
    self, AltoError, AltoMaps, CostMapFilter, EndpointCostRequest, EndpointPropRequest,
    NetworkMapFilter, UpdateStreamRequest, shape,
};
use pathwise_oracle::generate::{SyntheticSpec, synthetic};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, OnceLock};

fn maps() -> &'static AltoMaps {
    static MAPS: OnceLock<AltoMaps> = OnceLock::new();
    MAPS.get_or_init(|| {
        let mut spec = SyntheticSpec::new(8, 60, 2);
        spec.prefixes_v6 = 10;
        let snap = TopologySnapshot::build(&synthetic(&spec)).expect("the database builds");
        AltoMaps::build(Arc::new(snap))
    })
}

fn refused(e: AltoError) {
    shape::error(&e.to_json()).expect("an error resource of §8.5.2's shape");
}

const CLIENT: IpAddr = IpAddr::V4(Ipv4Addr::new(100, 64, 0, 9));

fuzz_target!(|data: &[u8]| {
    let Some((&which, body)) = data.split_first() else {
        return;
    };
    let maps = maps();
    match which % 5 {
        0 => match EndpointCostRequest::parse(body) {
            Ok(r) => {
                let v = alto::endpoint_cost(maps.snapshot(), &r, CLIENT);
                shape::endpoint_cost(&v).expect("ECS answer shape");
            }
            Err(e) => refused(e),
        },
        1 => match EndpointPropRequest::parse(body, alto::is_supported_property) {
            Ok(r) => {
                let v = alto::endpoint_properties(maps, &r, CLIENT);
                shape::endpoint_properties(&v).expect("EPS answer shape");
            }
            Err(e) => refused(e),
        },
        2 => match NetworkMapFilter::parse(body) {
            Ok(f) => shape::network_map(&maps.network_map(Some(&f))).expect("network map shape"),
            Err(e) => refused(e),
        },
        3 => match CostMapFilter::parse(body).and_then(|f| maps.filtered_cost_map(&f)) {
            Ok(v) => shape::cost_map(&v).expect("cost map shape"),
            Err(e) => refused(e),
        },
        _ => {
            if let Err(e) = UpdateStreamRequest::parse(body) {
                refused(e);
            }
        }
    }
});
