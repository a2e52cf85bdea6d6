//! A BMP stream (`pathwise_oracle::bgp`): arbitrary bytes, cut into reads at arbitrary places,
//! through the session's framing (RFC 7854 §4.1), `bgpkit-parser` and our conversion never
//! panic; every batch the RIB produces applies to a snapshot (no removal of what is not there),
//! the networks installed equal the RIB's own from-scratch view, and the session's end leaves
//! none.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathwise_oracle::TopologySnapshot;
use pathwise_oracle::bgp::{BgpRib, BmpSession, ExitNic};
use pathwise_oracle::model::{OracleConfig, RouterConfig, State};
use std::net::IpAddr;
use std::sync::OnceLock;

const EXIT: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 255, 0, 1));

fn snapshot() -> &'static TopologySnapshot {
    static S: OnceLock<TopologySnapshot> = OnceLock::new();
    S.get_or_init(|| {
        let cfg = OracleConfig {
            routers: vec![RouterConfig {
                address: EXIT,
                nic_count: 4,
                state: State::Up,
                nics: Vec::new(),
                routes: Vec::new(),
            }],
            ..OracleConfig::default()
        };
        TopologySnapshot::build(&cfg).expect("builds")
    })
}

fuzz_target!(|data: &[u8]| {
    // The first byte picks the read size, so frames straddle reads.
    let (step, stream) = match data.split_first() {
        Some((&s, rest)) => (usize::from(s).max(1), rest),
        None => return,
    };
    let nic = ExitNic {
        index: 1,
        local: "10.1.1.2".parse().unwrap(),
        peer: "10.1.1.1".parse().unwrap(),
    };
    let mut session = BmpSession::new(EXIT, vec![nic]);
    let mut rib = BgpRib::new();
    let mut snap = snapshot().clone();
    for chunk in stream.chunks(step) {
        let r = session.handle_bytes(chunk, &mut rib);
        let updates = rib.take_updates();
        snap = snap.apply(&updates).expect("a batch applies").0;
        if r.is_err() {
            break;
        }
    }
    let mut installed = snap.to_config().external_networks;
    let mut derived = rib.external_networks();
    installed.sort_by_key(|n| (n.prefix, n.router));
    derived.sort_by_key(|n| (n.prefix, n.router));
    assert_eq!(installed, derived);
    session.end(&mut rib);
    let snap = snap.apply(&rib.take_updates()).expect("the end applies").0;
    assert!(snap.to_config().external_networks.is_empty());
});
