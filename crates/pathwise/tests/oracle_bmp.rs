//! The BMP listener on loopback (no root, no FRR): a router's BMP stream written by the test
//! (`pathwise_oracle::bgp::wire`) changes the live ranking; peer down, session end, unknown
//! routers, `show bgp` and the metrics. The real-router version is `oracle_bgp_netns.rs`.

mod common;

use common::bgp::{EXIT1, bgp, database, order, peering};
use pathwise::oracle::bmp::{BmpOptions, BmpRouter};
use pathwise::oracle::console::{DAEMON, Show};
use pathwise::oracle::server::UdpOptions;
use pathwise::oracle::{OracleServer, ServeOptions};
use pathwise_oracle::bgp::wire::{self, Peer};
use pathwise_oracle::config;
use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("pathwise-bmp-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn start(dir: &Scratch, routers: Vec<BmpRouter>) -> (OracleServer, SocketAddr) {
    let cfg = database([
        vec![peering(1, "192.0.2.2", "192.0.2.1")],
        vec![peering(1, "198.18.0.2", "198.18.0.1")],
    ]);
    let path = dir.0.join("oracle.toml");
    std::fs::write(&path, config::to_toml_string(&cfg).unwrap()).unwrap();
    let mut server = OracleServer::start(&ServeOptions {
        config: path,
        udp: UdpOptions {
            address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            workers: 1,
            ..UdpOptions::default()
        },
        socket: dir.0.join("oracle.sock"),
        metrics: None,
        socket_group: None,
        alto: None,
    })
    .expect("server starts");
    let bmp = server
        .start_bmp(&BmpOptions {
            listen: "127.0.0.1:0".parse().unwrap(),
            routers,
            interval: Duration::from_millis(10),
        })
        .expect("BMP listener starts");
    (server, bmp)
}

/// Poll until `check` holds (at most 10 s).
fn until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn net(s: &str) -> ipnet::IpNet {
    s.parse().unwrap()
}

#[test]
fn bmp_routes_rank_live_and_peer_down_and_session_end_remove_them() {
    let dir = Scratch::new("live");
    let (server, bmp) = start(
        &dir,
        vec![BmpRouter {
            source: ip("127.0.0.1"),
            router: ip(EXIT1),
        }],
    );
    let sock = server.socket().to_path_buf();
    let (a, b) = (ip("203.0.113.7"), ip("198.51.100.7"));
    // Nothing placed yet.
    assert!(order(&sock, &[a, b]).iter().all(|(_, p)| p.is_none()));
    let up1 = Peer::global(ip("192.0.2.1"), 64510);
    let mut s = TcpStream::connect(bmp).unwrap();
    let mut first = wire::initiation("exit1", "test router");
    first.extend(wire::peer_up(&up1, ip("192.0.2.2"), 64500));
    first.extend(wire::route_monitoring(
        &up1,
        &wire::update(&[net("203.0.113.0/24")], &[64510], &[]),
    ));
    first.extend(wire::route_monitoring(
        &up1,
        &wire::update(&[net("198.51.100.0/24")], &[64510, 64520, 64530], &[]),
    ));
    s.write_all(&first).unwrap();
    let e1 = ip(EXIT1);
    until("both prefixes ranked through exit 1", || {
        order(&sock, &[b, a]) == vec![(a, Some((e1, 1))), (b, Some((e1, 3)))]
    });
    // A prepend on the shorter route turns the answer round.
    s.write_all(&wire::route_monitoring(
        &up1,
        &wire::update(
            &[net("203.0.113.0/24")],
            &[64510, 64510, 64510, 64510, 64510],
            &[],
        ),
    ))
    .unwrap();
    until("the prepend reversing the order", || {
        order(&sock, &[a, b]) == vec![(b, Some((e1, 3))), (a, Some((e1, 5)))]
    });
    // show bgp: the session, the peer (on NIC 1, whose peer address it is), the prefixes.
    let v = bgp(&sock);
    assert_eq!(v.sessions.len(), 1);
    assert_eq!(v.sessions[0].exit, Some(e1));
    assert_eq!(v.sessions[0].sys_name.as_deref(), Some("exit1"));
    assert_eq!(v.peers.len(), 1);
    assert_eq!(
        (v.peers[0].asn, v.peers[0].nic, v.peers[0].routes),
        (64510, 1, 2)
    );
    assert_eq!(v.exits[0].prefixes, 2);
    assert!(v.updates_applied >= 3, "{v:?}");
    assert_eq!(v.messages["route_monitoring"], 3);
    assert_eq!(v.messages["peer_up"], 1);
    assert!(v.last_batch_latency_ms > 0.0);
    // The metrics page carries the bmp families.
    let page =
        pathwise::mgmt::request(&sock, DAEMON, "show", serde_json::json!(Show::Metrics)).unwrap();
    let page = page.as_str().unwrap();
    assert!(
        page.contains("pathwise_oracle_bmp_messages_total{type=\"route_monitoring\"} 3"),
        "{page}"
    );
    assert!(page.contains("pathwise_oracle_bmp_prefixes 2"), "{page}");
    // A withdrawal: that prefix is no longer placed.
    s.write_all(&wire::route_monitoring(
        &up1,
        &wire::update(&[], &[], &[net("198.51.100.0/24")]),
    ))
    .unwrap();
    until("the withdrawal", || {
        order(&sock, &[b, a]) == vec![(a, Some((e1, 5))), (b, None)]
    });
    // Peer down: its routes go.
    s.write_all(&wire::peer_down(&up1)).unwrap();
    until("peer down removing the routes", || {
        order(&sock, &[a]) == vec![(a, None)]
    });
    // A second peer, then the session ends: everything it brought goes.
    let up2 = Peer::global(ip("192.0.2.5"), 64511);
    s.write_all(&wire::route_monitoring(
        &up2,
        &wire::update(&[net("203.0.113.0/24")], &[64511, 64512], &[]),
    ))
    .unwrap();
    until("the second peer's route", || {
        order(&sock, &[a]) == vec![(a, Some((e1, 2)))]
    });
    drop(s);
    until("the session end removing the routes", || {
        order(&sock, &[a]) == vec![(a, None)] && bgp(&sock).sessions.is_empty()
    });
    let v = bgp(&sock);
    assert_eq!(v.sessions_closed, 1);
    assert!(v.peers.is_empty());
}

#[test]
fn a_session_from_no_known_router_is_counted_and_ignored() {
    let dir = Scratch::new("unknown");
    // 127.0.0.1 maps to a router the database lacks: its messages are counted and ignored.
    let (server, bmp) = start(
        &dir,
        vec![BmpRouter {
            source: ip("127.0.0.1"),
            router: ip("10.9.9.9"),
        }],
    );
    let sock = server.socket().to_path_buf();
    let up = Peer::global(ip("192.0.2.1"), 64510);
    let mut s = TcpStream::connect(bmp).unwrap();
    let mut msgs = wire::peer_up(&up, ip("192.0.2.2"), 64500);
    msgs.extend(wire::route_monitoring(
        &up,
        &wire::update(&[net("203.0.113.0/24")], &[64510], &[]),
    ));
    s.write_all(&msgs).unwrap();
    until("the messages counted as unknown_router", || {
        bgp(&sock).drops["unknown_router"] == 2
    });
    let v = bgp(&sock);
    assert_eq!(v.sessions[0].exit, None);
    assert!(v.peers.is_empty());
    assert_eq!(v.updates_applied, 0);
    // A broken stream (not BMP version 3) is counted and closed.
    s.write_all(&[1, 0, 0, 0, 6, 0]).unwrap();
    until("the broken stream", || {
        bgp(&sock).drops["broken_stream"] == 1
    });
    drop(server);
    // Without a mapping, a session from an address that is neither a router's nor a NIC's
    // (mapping by NIC address is what oracle_bgp_netns.rs uses) belongs to no exit.
    let dir2 = Scratch::new("nic");
    let (server, bmp) = start(&dir2, Vec::new());
    let _s = TcpStream::connect(bmp).unwrap();
    until("the session listed", || {
        !bgp(server.socket()).sessions.is_empty()
    });
    assert_eq!(bgp(server.socket()).sessions[0].exit, None);
}

#[test]
fn an_mrt_dump_imported_into_the_running_server_places_its_prefixes() {
    let dir = Scratch::new("mrt");
    let (server, _bmp) = start(&dir, Vec::new());
    let sock = server.socket().to_path_buf();
    let peer = ip("198.18.0.1");
    let mut mrt = Vec::new();
    for (prefixes, path) in [
        (
            vec![net("203.0.113.0/24"), net("2001:db8:5::/48")],
            vec![64600, 64601],
        ),
        (
            vec![net("198.51.100.0/24")],
            vec![64600, 64602, 64603, 64604],
        ),
    ] {
        mrt.extend(wire::mrt_bgp4mp(
            peer,
            64600,
            ip("198.18.0.2"),
            64500,
            &wire::update(&prefixes, &path, &[]),
        ));
    }
    let file = dir.0.join("exit2.mrt");
    std::fs::write(&file, &mrt).unwrap();
    let import = pathwise::oracle::mrt::Import::Mrt {
        file: file.clone(),
        router: ip(common::bgp::EXIT2),
    };
    let v = pathwise::mgmt::request(
        &sock,
        DAEMON,
        "import",
        serde_json::to_value(&import).unwrap(),
    )
    .expect("import");
    let r: pathwise::oracle::mrt::ImportReport = serde_json::from_value(v).unwrap();
    assert_eq!((r.records, r.updates, r.networks), (2, 2, 3));
    let e2 = ip(common::bgp::EXIT2);
    let (a, b, c) = (ip("203.0.113.7"), ip("198.51.100.7"), ip("2001:db8:5::1"));
    assert_eq!(
        order(&sock, &[b, c, a]),
        vec![(c, Some((e2, 2))), (a, Some((e2, 2))), (b, Some((e2, 4)))]
    );
    // The networks leave through the NIC facing the dump's peer.
    let cfg = pathwise_oracle::config::from_toml_str(
        pathwise::mgmt::request(&sock, DAEMON, "dump", serde_json::Value::Null).unwrap()["toml"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert!(
        cfg.external_networks
            .iter()
            .all(|n| n.nic == 1 && n.router == e2)
    );
    // A router the database lacks, and a file that is not there, are refused with a reason.
    let bad = pathwise::oracle::mrt::Import::Mrt {
        file,
        router: ip("10.9.9.9"),
    };
    let e = pathwise::mgmt::request(&sock, DAEMON, "import", serde_json::to_value(&bad).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("no router 10.9.9.9"), "{e}");
    let missing = pathwise::oracle::mrt::Import::Mrt {
        file: dir.0.join("nope.mrt"),
        router: e2,
    };
    let e = pathwise::mgmt::request(
        &sock,
        DAEMON,
        "import",
        serde_json::to_value(&missing).unwrap(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("nope.mrt"), "{e}");
}

#[test]
fn changes_the_database_no_longer_accepts_are_counted_and_the_rest_applied() {
    let dir = Scratch::new("refused");
    let (server, bmp) = start(
        &dir,
        vec![BmpRouter {
            source: ip("127.0.0.1"),
            router: ip(EXIT1),
        }],
    );
    let sock = server.socket().to_path_buf();
    let up = Peer::global(ip("192.0.2.1"), 64510);
    let mut s = TcpStream::connect(bmp).unwrap();
    s.write_all(&wire::route_monitoring(
        &up,
        &wire::update(
            &[net("203.0.113.0/24"), net("198.51.100.0/24")],
            &[64510],
            &[],
        ),
    ))
    .unwrap();
    until("the routes applied", || bgp(&sock).updates_applied == 2);
    // By hand, the operator removes one of the exit's networks.
    pathwise::mgmt::request(
        &sock,
        DAEMON,
        "delete",
        serde_json::json!({"object": "external-network", "prefix": "203.0.113.0/24", "router": EXIT1}),
    )
    .unwrap();
    // The router withdraws it (not there any more) and announces another prefix in the same
    // batch: the withdrawal is refused and counted, the announcement applied.
    let mut m = wire::route_monitoring(&up, &wire::update(&[], &[], &[net("203.0.113.0/24")]));
    m.extend(wire::route_monitoring(
        &up,
        &wire::update(&[net("192.0.2.0/25")], &[64510, 1], &[]),
    ));
    s.write_all(&m).unwrap();
    until("the refusal counted", || {
        bgp(&sock).drops["update_refused"] == 1
    });
    let e1 = ip(EXIT1);
    assert_eq!(
        order(&sock, &[ip("192.0.2.9")]),
        vec![(ip("192.0.2.9"), Some((e1, 2)))]
    );
}

#[test]
fn after_a_reload_the_feed_puts_its_routes_back() {
    let dir = Scratch::new("reload");
    let (server, bmp) = start(
        &dir,
        vec![BmpRouter {
            source: ip("127.0.0.1"),
            router: ip(EXIT1),
        }],
    );
    let sock = server.socket().to_path_buf();
    let up = Peer::global(ip("192.0.2.1"), 64510);
    let mut s = TcpStream::connect(bmp).unwrap();
    s.write_all(&wire::route_monitoring(
        &up,
        &wire::update(&[net("203.0.113.0/24")], &[64510, 64511], &[]),
    ))
    .unwrap();
    let (a, e1) = (ip("203.0.113.7"), ip(EXIT1));
    until("the route", || {
        order(&sock, &[a]) == vec![(a, Some((e1, 2)))]
    });
    // The file has no external networks: a reload drops the route, the feed re-sends it.
    server.reload().expect("reload");
    until("the route back after the reload", || {
        order(&sock, &[a]) == vec![(a, Some((e1, 2)))]
    });
    assert!(bgp(&sock).updates_applied >= 2);
}
