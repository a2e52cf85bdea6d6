//! What the BGP feed tests share: an oracle database with two exit routers behind one core
//! router, and reading the live ranking through the console.

use pathwise::mgmt;
use pathwise::oracle::bmp::BgpView;
use pathwise::oracle::console::{DAEMON, Show};
use pathwise::oracle::views::RankView;
use pathwise_oracle::OracleConfig;
use pathwise_oracle::model::{LinkConfig, NicConfig, RouterConfig, SourceNetwork, State};
use serde_json::json;
use std::net::IpAddr;
use std::path::Path;

/// The core router: queries come from its source network.
pub const CORE: &str = "10.255.0.3";
/// The exit routers.
pub const EXIT1: &str = "10.255.0.1";
/// The second exit.
pub const EXIT2: &str = "10.255.0.2";
/// A query source inside the core's source network 100.64.0.0/24.
pub const SOURCE: &str = "100.64.0.9";

fn ip(s: &str) -> IpAddr {
    s.parse().expect("address")
}

fn link() -> Option<LinkConfig> {
    Some(LinkConfig {
        bandwidth: 1000.0,
        latency: 1.0,
        weight: 10,
        congestion: 0.0,
    })
}

fn nic(index: u8, local: &str, peer: &str, link: Option<LinkConfig>) -> NicConfig {
    NicConfig {
        index,
        local: ip(local),
        peer: ip(peer),
        state: State::Up,
        link,
    }
}

fn router(address: &str, nics: Vec<NicConfig>) -> RouterConfig {
    RouterConfig {
        address: ip(address),
        nic_count: 8,
        state: State::Up,
        nics,
        routes: Vec::new(),
    }
}

/// Core — exit1 and core — exit2 with equal links, so only the AS distance tells the exits
/// apart. `exit_nics[i]` are extra NICs of exit i+1 (their BGP peerings, their BMP source),
/// without links.
pub fn database(exit_nics: [Vec<NicConfig>; 2]) -> OracleConfig {
    let [n1, n2] = exit_nics;
    let mut e1 = vec![nic(0, "10.254.1.2", "10.254.1.1", link())];
    e1.extend(n1);
    let mut e2 = vec![nic(0, "10.254.2.2", "10.254.2.1", link())];
    e2.extend(n2);
    OracleConfig {
        routers: vec![
            router(
                CORE,
                vec![
                    nic(0, "10.254.1.1", "10.254.1.2", link()),
                    nic(1, "10.254.2.1", "10.254.2.2", link()),
                ],
            ),
            router(EXIT1, e1),
            router(EXIT2, e2),
        ],
        source_networks: vec![SourceNetwork {
            prefix: "100.64.0.0/24".parse().expect("prefix"),
            router: ip(CORE),
            nic: 2,
        }],
        ..OracleConfig::default()
    }
}

/// An extra NIC of an exit: `local` its address, `peer` the far side's.
pub fn peering(index: u8, local: &str, peer: &str) -> NicConfig {
    nic(index, local, peer, None)
}

/// The running server's ranking of `candidates` for a query from [`SOURCE`].
pub fn rank(sock: &Path, candidates: &[IpAddr]) -> RankView {
    let v = mgmt::request(
        sock,
        DAEMON,
        "show",
        json!(Show::Rank {
            source: ip(SOURCE),
            candidates: candidates.to_vec()
        }),
    )
    .expect("show rank");
    serde_json::from_value(v).expect("rank view")
}

/// The ranked addresses, first first, with the exit and AS distance of each placed one.
pub fn order(sock: &Path, candidates: &[IpAddr]) -> Vec<(IpAddr, Option<(IpAddr, u16)>)> {
    rank(sock, candidates)
        .candidates
        .into_iter()
        .map(|c| {
            let placed = c.via.zip(c.metrics.map(|m| m.as_distance));
            (c.address, placed)
        })
        .collect()
}

/// `show bgp`.
pub fn bgp(sock: &Path) -> BgpView {
    let v = mgmt::request(sock, DAEMON, "show", json!(Show::Bgp)).expect("show bgp");
    serde_json::from_value(v).expect("bgp view")
}
