//! The seed's configuration files import; TOML loads, dumps and loads back equal.

use pathwise_oracle::config::{self, seed};
use pathwise_oracle::model::{LinkConfig, RouteMode, State};
use pathwise_oracle::{TopologySnapshot, Update};
use std::net::IpAddr;
use std::path::Path;

fn example(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn seed_files_import() {
    let cfg = config::load_file(&example("seed-config/oracle.conf")).unwrap();
    assert_eq!(cfg.oracle.max_routers, 40);
    assert_eq!(cfg.oracle.threads, 2);
    assert_eq!(cfg.oracle.routing, RouteMode::Explicit);
    assert_eq!(cfg.routers.len(), 6);
    assert_eq!(cfg.source_networks.len(), 4);
    assert_eq!(cfg.external_networks.len(), 2);
    let r4 = cfg
        .routers
        .iter()
        .find(|r| r.address == ip("10.0.0.4"))
        .unwrap();
    assert_eq!(r4.nic_count, 15);
    assert_eq!(r4.state, State::Up);
    assert_eq!(r4.nics.len(), 4);
    assert_eq!(r4.nics[0].local, ip("10.0.1.4"));
    assert_eq!(
        r4.nics[0].link,
        Some(LinkConfig {
            latency: 35.0,
            bandwidth: 100.0,
            congestion: 0.0,
            weight: 1
        })
    );
    assert_eq!(r4.routes.len(), 5);
    let e = &cfg.external_networks[1];
    assert_eq!((e.as_number, e.as_distance, e.nic), (2778, 6, 14));

    let s = TopologySnapshot::build(&cfg).unwrap();
    assert_eq!(s.router_count(), 6);
    // Fig. 11 routes 10.8.0.x through NIC 4, which has no `nic` line: unusable explicitly.
    assert!(s.path(ip("10.0.0.4"), ip("10.8.0.1")).is_none());
    assert!(s.path(ip("10.0.0.4"), ip("10.0.0.3")).is_some());
    assert_eq!(s.source_router(ip("192.168.4.4")), Some(ip("10.0.0.4")));
    // Computed routes find 10.8.0.1 through NIC 2.
    let (t, _) = s.apply(&[]).unwrap();
    let mut computed = t.to_config();
    computed.oracle.routing = RouteMode::Computed;
    let c = TopologySnapshot::build(&computed).unwrap();
    let p = c.path(ip("10.0.0.4"), ip("10.8.0.1")).unwrap();
    assert_eq!((p.hops, p.latency, p.bandwidth), (1, 40.0, 10.0));
    // 0.0.0.0/4 (more specific) is only at 10.8.0.2.
    let m = c.metrics(ip("192.168.0.1"), ip("1.2.3.4")).unwrap();
    assert_eq!((m.as_number, m.as_distance), (2778, 6));
    let m = c.metrics(ip("192.168.0.1"), ip("33.0.0.1")).unwrap();
    assert_eq!((m.as_number, m.as_distance), (1, 5));
}

#[test]
fn seed_errors_name_file_line_and_column() {
    let files = |_: &str, _: IpAddr| None;
    let e = seed::import_with("routers 40\nrouter 10.0.0.1 x15\n", "main", files).unwrap_err();
    assert_eq!((e.line, e.column), (2, 17));
    assert_eq!(e.to_string(), "main:2:17: `x15` is not a NIC count");
    let e = seed::import_with("  enetwork 1.0.0.0/8 10.0.0.1 14 5\n", "m", files).unwrap_err();
    assert_eq!((e.line, e.column), (1, 35));
    assert!(e.message.contains("missing an AS distance"));
    let e = seed::import_with("frobnicate 3", "m", files).unwrap_err();
    assert_eq!(e.column, 1);
    let e = seed::import_with("threads 2 3 # comment", "m", files).unwrap_err();
    assert_eq!((e.column, e.message.as_str()), (11, "unexpected `3`"));
    let e = seed::import_with("router 10.0.0.1 3", "m", |_, _| {
        Some((
            "r1".into(),
            "nic 0 1.1.1.1 1.1.1.2 UP\nlink 1 1 1 0 1\n".into(),
        ))
    })
    .unwrap_err();
    assert_eq!((e.file.as_str(), e.line, e.column), ("r1", 2, 6));
    // A router without a file is down and unconnected (§4.6).
    let cfg = seed::import_with("router 10.0.0.1 3\niroutes impl\n", "m", files).unwrap();
    assert_eq!(cfg.routers[0].state, State::Down);
    assert_eq!(cfg.oracle.routing, RouteMode::Computed);
}

#[test]
fn toml_example_is_the_dump_of_the_seed_files() {
    let cfg = config::load_file(&example("seed-config/oracle.conf")).unwrap();
    let dump = config::dump(&TopologySnapshot::build(&cfg).unwrap()).unwrap();
    let path = example("seed-config.toml");
    if std::env::var_os("PATHWISE_REGENERATE").is_some() {
        std::fs::write(&path, &dump).unwrap();
    }
    let shipped = std::fs::read_to_string(&path).unwrap();
    assert_eq!(shipped, dump, "regenerate with PATHWISE_REGENERATE=1");
    let loaded = config::load_file(&path).unwrap();
    assert_eq!(
        TopologySnapshot::build(&loaded).unwrap().to_config(),
        loaded
    );
}

#[test]
fn toml_errors_and_live_dump() {
    let e = config::from_toml_str("[oracle]\nthreads = \"two\"\n").unwrap_err();
    assert!(e.to_string().contains("line 2"), "{e}");
    let e = config::from_toml_str("[oracle]\nranking_typo = 1\n").unwrap_err();
    assert!(e.to_string().contains("unknown field"), "{e}");
    let cfg = config::load_file(&example("seed-config/oracle.conf")).unwrap();
    let s = TopologySnapshot::build(&cfg).unwrap();
    let (t, _) = s
        .apply(&[Update::SetRanking("latency + 8 * as_distance".into())])
        .unwrap();
    let back = config::from_toml_str(&config::dump(&t).unwrap()).unwrap();
    assert_eq!(back.oracle.ranking, "latency + 8 * as_distance");
    assert_eq!(back, t.to_config());
}
