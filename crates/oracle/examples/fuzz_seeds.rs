//! Writes the seeds of the `proxidor_query`, `cost_expression`, `oracle_seed_db` and
//! `alto_request` fuzz targets: the queries of
//! [`proxidor::vectors::queries`](pathwise_oracle::proxidor::vectors::queries), and one cost
//! expression of each kind (built-in name, functions, `if`, the seed's eq. 3), each checked to
//! compile; the seed paper's sample database (`examples/seed-config/`) as the main file, a NUL
//! byte and one router's file, for each router file; RFC 7285's example request bodies and a
//! few of ours, each behind the byte that picks its resource.
//!
//! `fuzz/run.sh --seeds` runs this (and the other crates' `fuzz_seeds` examples); by hand, from
//! the repository root:
//!
//! ```sh
//! cargo run -q -p pathwise-oracle --example fuzz_seeds -- fuzz/seeds
//! ```
//!
//! creates `fuzz/seeds/proxidor_query/`, `cost_expression/` and `oracle_seed_db/`, writes one
//! file per
//! seed there and lists each file it wrote.

use pathwise_core::fuzz_seeds::SeedDir;
use std::path::Path;
use std::process::ExitCode;

use pathwise_oracle::Ranking;
use pathwise_oracle::proxidor::vectors;

const USAGE: &str = "usage: fuzz_seeds SEEDS_DIR   (writes SEEDS_DIR/proxidor_query/, \
                     SEEDS_DIR/cost_expression/, SEEDS_DIR/oracle_seed_db/ and \
                     SEEDS_DIR/alto_request/)";

/// ALTO request bodies by seed name, behind the `alto_request` target's resource byte (0 ECS,
/// 1 EPS, 2 filtered network map, 3 filtered cost map, 4 update stream).
const ALTO_REQUESTS: &[(&str, u8, &str)] = &[
    (
        "rfc7285-ecs",
        0,
        include_str!("../src/alto/rfc7285/endpointcost-request.json"),
    ),
    (
        "rfc7285-eps",
        1,
        include_str!("../src/alto/rfc7285/endpointprop-request.json"),
    ),
    (
        "rfc7285-networkmap-filter",
        2,
        include_str!("../src/alto/rfc7285/networkmapfilter-request.json"),
    ),
    (
        "rfc7285-costmap-filter",
        3,
        include_str!("../src/alto/rfc7285/costmapfilter-request.json"),
    ),
    (
        "ecs-constraints-v6",
        0,
        r#"{"cost-type": {"cost-mode": "numerical", "cost-metric": "hopcount"}, "constraints": ["le 3", "gt 0"], "endpoints": {"srcs": ["ipv4:100.64.0.9"], "dsts": ["ipv4:100.64.1.1", "ipv6:2001:db8::1"]}}"#,
    ),
    (
        "eps-ours",
        1,
        r#"{"properties": ["networkmap.pid", "priv:pathwise-hops", "priv:pathwise-prefix"], "endpoints": ["ipv4:100.64.0.9", "ipv6:::1"]}"#,
    ),
    (
        "networkmap-filter-types",
        2,
        r#"{"pids": ["default"], "address-types": ["ipv6"]}"#,
    ),
    (
        "updates",
        4,
        r#"{"add": {"1": {"resource-id": "networkmap", "tag": "x", "incremental-changes": false}, "2": {"resource-id": "costmap-num-routingcost", "input": {}}}, "remove": ["3"]}"#,
    ),
];

/// The seed paper's sample database: the main file and each router's file.
const SEED_DB_MAIN: &str = include_str!("seed-config/oracle.conf");
const SEED_DB_ROUTERS: [(&str, &str); 6] = [
    ("10.0.0.1", include_str!("seed-config/routers/10.0.0.1")),
    ("10.0.0.2", include_str!("seed-config/routers/10.0.0.2")),
    ("10.0.0.3", include_str!("seed-config/routers/10.0.0.3")),
    ("10.0.0.4", include_str!("seed-config/routers/10.0.0.4")),
    ("10.8.0.1", include_str!("seed-config/routers/10.8.0.1")),
    ("10.8.0.2", include_str!("seed-config/routers/10.8.0.2")),
];

/// Cost expressions by seed name. The grammar is text, so these are written by hand to reach
/// every part of it: names, operators, functions, comparisons and logic.
const COST_EXPRESSIONS: &[(&str, &str)] = &[
    ("builtin", "latency-first"),
    (
        "funcs",
        "clamp(sqrt(weight) * ln(1 + hops), 0, 10^3) + if(congestion > 0.5 || !internal, 50, 0)",
    ),
    (
        "if",
        "if(external and as_distance >= 2, 100 + latency, min(latency, 5)) - bandwidth / 1000",
    ),
    ("seed", "8*as_distance + 0.5*hops + 10/bandwidth"),
];

fn main() -> ExitCode {
    pathwise_core::fuzz_seeds::main(USAGE, write_seeds)
}

fn write_seeds(root: &Path) -> Result<(), String> {
    let dir = SeedDir::create(root, "proxidor_query")?;
    for (name, query) in vectors::queries() {
        let mut bytes = Vec::new();
        query.emit(&mut bytes);
        dir.write(name, &bytes)?;
    }
    let dir = SeedDir::create(root, "cost_expression")?;
    for (name, text) in COST_EXPRESSIONS {
        // A seed that does not compile only exercises the error paths.
        Ranking::parse(text).map_err(|e| format!("cost expression seed {name}: {e}"))?;
        dir.write(name, text.as_bytes())?;
    }
    let dir = SeedDir::create(root, "oracle_seed_db")?;
    for (router, text) in SEED_DB_ROUTERS {
        let mut bytes = SEED_DB_MAIN.as_bytes().to_vec();
        bytes.push(0);
        bytes.extend_from_slice(text.as_bytes());
        dir.write(&format!("{router}.bin"), &bytes)?;
    }
    let dir = SeedDir::create(root, "alto_request")?;
    for (name, resource, body) in ALTO_REQUESTS {
        let mut bytes = vec![*resource];
        bytes.extend_from_slice(body.as_bytes());
        dir.write(name, &bytes)?;
    }
    bmp_seeds(root)
}

/// `bmp_message`: a read size byte, then a BMP stream: the FRR 8.4 session recorded in
/// `tests/data/`, and one written here with IPv4 and IPv6 announcements, a withdrawal, a peer
/// down and a termination.
fn bmp_seeds(root: &Path) -> Result<(), String> {
    use pathwise_oracle::bgp::wire::{self, Peer};
    let dir = SeedDir::create(root, "bmp_message")?;
    let mut frr = vec![64];
    frr.extend_from_slice(include_bytes!("../tests/data/frr-8.4-bmp-session.bin"));
    dir.write("frr-8.4.bin", &frr)?;
    let net = |s: &str| s.parse::<ipnet::IpNet>().map_err(|e| e.to_string());
    let peer = Peer::global("10.1.1.1".parse().map_err(|e| format!("{e}"))?, 65001);
    let mut s = vec![255];
    s.extend(wire::initiation("exit", "seed"));
    s.extend(wire::peer_up(
        &peer,
        "10.1.1.2".parse().map_err(|e| format!("{e}"))?,
        65000,
    ));
    s.extend(wire::route_monitoring(
        &peer,
        &wire::update(
            &[net("203.0.113.0/24")?, net("2001:db8::/32")?],
            &[65001, 65002],
            &[],
        ),
    ));
    s.extend(wire::route_monitoring(
        &peer,
        &wire::update(&[], &[], &[net("2001:db8::/32")?]),
    ));
    s.extend(wire::peer_down(&peer));
    s.extend(wire::termination());
    dir.write("written.bin", &s)
}
