//! The oracle server on loopback (no root needed): round trips through the real sockets,
//! malformed queries, live updates under load, the console verbs, the clients and the command
//! line. Every test is bounded in time.

use pathwise::mgmt;
use pathwise::oracle::clients::{
    CandidatePool, ClosedLoopOptions, FloodOptions, Limits, QueryOptions, closed_loop, flood,
};
use pathwise::oracle::console::{Create, DAEMON, Delete, NetworkKind, Set, Show, StateArg};
use pathwise::oracle::counters::CounterReport;
use pathwise::oracle::server::{Service, UdpOptions, UdpServer};
use pathwise::oracle::views::{ChangeReport, PrefixView, RankView, RouterView, Summary};
use pathwise::oracle::{OracleServer, ServeOptions};
use pathwise_oracle::generate::{SyntheticSpec, synthetic};
use pathwise_oracle::proxidor::{self, Message, Payload, Rcode};
use pathwise_oracle::{OracleConfig, TopologySnapshot, Update, config};
use serde_json::{Value, json};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("pathwise-oracle-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    fn path(&self, f: &str) -> PathBuf {
        self.0.join(f)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A small synthetic network: 12 routers, 400 external prefixes × 3 exits, a source /24 per
/// router in 100.64.0.0/10.
fn small_config() -> OracleConfig {
    let mut cfg = synthetic(&SyntheticSpec::new(12, 400, 3));
    cfg.oracle.max_routers = 100;
    cfg
}

/// The source network of router 0.
const SOURCE: IpAddr = IpAddr::V4(Ipv4Addr::new(100, 64, 0, 9));

fn start(dir: &Scratch, cfg: &OracleConfig, workers: usize) -> OracleServer {
    let path = dir.path("oracle.toml");
    std::fs::write(&path, config::to_toml_string(cfg).expect("toml")).expect("write config");
    OracleServer::start(&ServeOptions {
        config: path,
        udp: UdpOptions {
            address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            workers,
            batch: 16,
            ..UdpOptions::default()
        },
        socket: dir.path("oracle.sock"),
        metrics: None,
        socket_group: None,
        alto: None,
    })
    .expect("server starts")
}

fn client(server: SocketAddr) -> UdpSocket {
    let s = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
    s.connect(server).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    s
}

/// Send `q` and return the reply, or `None` if none comes within `wait`.
fn exchange(s: &UdpSocket, q: &[u8], wait: Duration) -> Option<Vec<u8>> {
    s.set_read_timeout(Some(wait)).expect("timeout");
    s.send(q).expect("send");
    let mut buf = vec![0u8; 4096];
    match s.recv(&mut buf) {
        Ok(n) => {
            buf.truncate(n);
            Some(buf)
        }
        Err(_) => None,
    }
}

fn query_bytes(id: u32, candidates: &[IpAddr], source: Option<IpAddr>) -> Vec<u8> {
    let mut m = proxidor::query(id, candidates);
    if let Some(IpAddr::V4(a)) = source {
        m.source_v4 = Some((a, 32));
    }
    let mut out = Vec::new();
    m.emit(&mut out);
    out
}

/// The addresses of a reply, in order.
fn reply_order(reply: &[u8]) -> Vec<IpAddr> {
    let m = Message::parse(reply).expect("reply parses");
    m.tlvs
        .iter()
        .flat_map(|t| match &t.payload {
            Payload::Ipv4(a) => a.iter().map(|&a| IpAddr::V4(a)).collect::<Vec<_>>(),
            Payload::Ipv6(a) => a.iter().map(|&a| IpAddr::V6(a)).collect(),
            Payload::Unknown(..) => Vec::new(),
        })
        .collect()
}

fn candidates(cfg: &OracleConfig, n: usize, seed: u64) -> Vec<IpAddr> {
    let pool = CandidatePool::from_config(cfg);
    let mut rng = pathwise_core::rng::seeded(seed);
    let mut v: Vec<IpAddr> = (0..n).map(|_| pool.draw(&mut rng)).collect();
    // Two the oracle cannot place.
    v.push(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 7)));
    v.push(IpAddr::V4(Ipv4Addr::new(0, 0, 0, 1)));
    v
}

fn console(sock: &Path, verb: &str, args: Value) -> anyhow::Result<Value> {
    mgmt::request(sock, DAEMON, verb, args)
}

fn counters(sock: &Path) -> CounterReport {
    let v = console(sock, "show", json!(Show::Counters)).expect("show counters");
    serde_json::from_value(v).expect("counter report")
}

/// The counters once `ready` holds (a worker adds a batch's counts after sending its replies,
/// so a client can see a reply a moment before its count); at most 5 s.
fn counters_when(sock: &Path, ready: impl Fn(&CounterReport) -> bool) -> CounterReport {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let c = counters(sock);
        if ready(&c) || Instant::now() > deadline {
            return c;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn expected(snap: &TopologySnapshot, source: IpAddr, c: &[IpAddr]) -> Vec<IpAddr> {
    let mut v = c.to_vec();
    snap.rank(source, &mut v);
    v
}

#[test]
fn query_answer_round_trip_through_the_real_server() {
    let dir = Scratch::new("roundtrip");
    let cfg = small_config();
    let server = start(&dir, &cfg, 2);
    let snap = TopologySnapshot::build(&cfg).expect("builds");
    let s = client(server.local_addr());
    let cands = candidates(&cfg, 40, 1);

    // Ranked from the source extension.
    let reply = exchange(
        &s,
        &query_bytes(0xdead_beef, &cands, Some(SOURCE)),
        Duration::from_secs(5),
    )
    .expect("a reply");
    let m = Message::parse(&reply).expect("parses");
    assert!(m.header.response);
    assert_eq!(m.header.id, 0xdead_beef);
    assert_eq!(m.header.rcode, Rcode::NoError);
    assert_eq!(m.header.ttl, 60);
    assert!(m.source_v4.is_none() && m.auth.is_none());
    let order = reply_order(&reply);
    assert_eq!(order, expected(&snap, SOURCE, &cands));
    let mut sorted = order.clone();
    sorted.sort();
    let mut input = cands.clone();
    input.sort();
    assert_eq!(sorted, input, "the reply is a permutation of the query");
    assert_ne!(order, cands, "the ranking reorders");

    // Without a source extension the server ranks from the datagram's address, 127.0.0.1,
    // which is in no source network: nothing is placed and the order is kept.
    let reply = exchange(&s, &query_bytes(7, &cands, None), Duration::from_secs(5)).expect("reply");
    assert_eq!(reply_order(&reply), cands);

    // IPv4 and IPv6 lists in one query: one TLV each in the reply, IPv4 first.
    let mixed = vec![
        cands[0],
        IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
        cands[1],
    ];
    let reply = exchange(
        &s,
        &query_bytes(8, &mixed, Some(SOURCE)),
        Duration::from_secs(5),
    )
    .expect("reply");
    let m = Message::parse(&reply).expect("parses");
    assert_eq!(m.tlvs.len(), 2);
    assert!(matches!(m.tlvs[0].payload, Payload::Ipv4(ref a) if a.len() == 2));
    assert!(matches!(m.tlvs[1].payload, Payload::Ipv6(ref a) if a.len() == 1));

    let c = counters_when(server.socket(), |c| c.sent >= 3);
    assert_eq!(c.received, 3);
    assert_eq!(c.answered, 3);
    assert_eq!(c.sent, 3);
    assert_eq!(c.addresses, 2 * cands.len() as u64 + 3);
}

/// A hostile-input defect: a query from UDP source port 0 was counted as answered although no
/// reply can go to port 0. Sent as such a datagram (a raw socket writing the IP and UDP
/// headers; root), it is dropped and counted under its own reason, and nothing is "answered".
#[test]
fn a_query_from_source_port_zero_is_dropped_and_counted() {
    if let Some(why) = pathwise::netns::unavailable(&[]) {
        println!("skipping a_query_from_source_port_zero_is_dropped_and_counted: {why}");
        return;
    }
    let dir = Scratch::new("port0");
    let cfg = small_config();
    let server = start(&dir, &cfg, 1);
    let q = query_bytes(7, &candidates(&cfg, 4, 1), Some(SOURCE));
    // IPv4 header (no options, TTL 64, UDP) and a UDP header from port 0 with no checksum
    // (0 is allowed over IPv4, RFC 768).
    let (total, udp_len) = ((20 + 8 + q.len()) as u16, (8 + q.len()) as u16);
    let mut pkt = vec![
        0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1,
    ];
    pkt[2..4].copy_from_slice(&total.to_be_bytes());
    pkt.extend_from_slice(&[0, 0]);
    pkt.extend_from_slice(&server.local_addr().port().to_be_bytes());
    pkt.extend_from_slice(&udp_len.to_be_bytes());
    pkt.extend_from_slice(&[0, 0]);
    pkt.extend_from_slice(&q);
    let raw = socket2::Socket::new(
        socket2::Domain::IPV4,
        socket2::Type::RAW,
        Some(socket2::Protocol::from(libc_ipproto_raw())),
    )
    .expect("raw socket");
    let to: SocketAddr = (Ipv4Addr::LOCALHOST, 0).into();
    raw.send_to(&pkt, &to.into()).expect("send");
    let c = counters_when(server.socket(), |c| c.received >= 1);
    assert_eq!(c.dropped_by_reason["source_port_zero"], 1, "{c:?}");
    assert_eq!((c.answered, c.sent, c.send_errors), (0, 0, 0), "{c:?}");
    assert_eq!(c.received, c.answered + c.rejected + c.dropped, "{c:?}");
}

/// IPPROTO_RAW: the socket writes whole IP packets (IP_HDRINCL implied).
fn libc_ipproto_raw() -> i32 {
    255
}

#[test]
fn malformed_queries_never_crash_the_server_and_are_counted() {
    let dir = Scratch::new("malformed");
    let cfg = small_config();
    let server = start(&dir, &cfg, 2);
    let s = client(server.local_addr());
    let good = query_bytes(0x0102_0304, &candidates(&cfg, 10, 2), Some(SOURCE));
    let quick = Duration::from_millis(300);
    let long = Duration::from_secs(5);
    let rcode_of = |reply: &[u8]| {
        let info = pathwise::oracle::clients::reply_info(reply).expect("a Proxidor reply");
        assert_eq!(info.id, 0x0102_0304, "the identification is echoed");
        assert_eq!(info.ttl, 0, "errors carry TTL 0");
        assert_eq!(reply.len(), 12, "an error reply is the header alone");
        info.rcode
    };

    // Short: nothing to echo, dropped.
    assert!(exchange(&s, &[0, 0, 0, 0, 1], quick).is_none());
    // Wrong version.
    let mut q = good.clone();
    q[0] = 1;
    assert_eq!(
        rcode_of(&exchange(&s, &q, long).expect("reply")),
        Rcode::BadVersion
    );
    // Bad flags: a reserved bit.
    let mut q = good.clone();
    q[3] |= 0x10;
    assert_eq!(
        rcode_of(&exchange(&s, &q, long).expect("reply")),
        Rcode::FormatError
    );
    // Bad TLV size: smaller than the TLV header (the TLV follows the 5-byte IPv4 source).
    let mut q = good.clone();
    let tlv = 12 + 5;
    q[tlv + 2..tlv + 4].copy_from_slice(&3u16.to_be_bytes());
    assert_eq!(
        rcode_of(&exchange(&s, &q, long).expect("reply")),
        Rcode::FormatError
    );
    // Bad TLV size: larger than the datagram.
    let mut q = good.clone();
    q[tlv + 2..tlv + 4].copy_from_slice(&4000u16.to_be_bytes());
    assert_eq!(
        rcode_of(&exchange(&s, &q, long).expect("reply")),
        Rcode::FormatError
    );
    // An unknown TLV type.
    let mut q = good.clone();
    q[tlv] = 9;
    assert_eq!(
        rcode_of(&exchange(&s, &q, long).expect("reply")),
        Rcode::NotImplemented
    );
    // Too many addresses: 364 IPv4.
    let many: Vec<IpAddr> = (0..364u32)
        .map(|i| IpAddr::V4(Ipv4Addr::from(0x0b00_0000 + i)))
        .collect();
    let q = query_bytes(0x0102_0304, &many, None);
    assert_eq!(
        rcode_of(&exchange(&s, &q, long).expect("reply")),
        Rcode::TooManyAddresses
    );
    // A reply sent to the server (QR set): dropped, never answered.
    let mut q = good.clone();
    q[2] |= 0x80;
    assert!(exchange(&s, &q, quick).is_none());
    // Larger than any query may be: truncated by the kernel into the 2 KiB buffer, dropped.
    assert!(exchange(&s, &vec![0u8; 3000], quick).is_none());

    let c = counters_when(server.socket(), |c| c.received >= 9 && c.sent >= 6);
    assert_eq!(c.received, 9);
    assert_eq!(c.answered, 0);
    assert_eq!(c.rejected, 6);
    assert_eq!(c.rejected_by_reason["version"], 1);
    assert_eq!(c.rejected_by_reason["flags"], 1);
    assert_eq!(c.rejected_by_reason["malformed"], 2);
    assert_eq!(c.rejected_by_reason["tlv_type"], 1);
    assert_eq!(c.rejected_by_reason["too_many_addresses"], 1);
    assert_eq!(c.rejected_by_rcode["format_error"], 3);
    assert_eq!(c.rejected_by_rcode["bad_version"], 1);
    assert_eq!(c.dropped_by_reason["too_short"], 1);
    assert_eq!(c.dropped_by_reason["not_a_query"], 1);
    assert_eq!(c.dropped_by_reason["oversize"], 1);
    assert_eq!(c.sent, 6);

    // Garbage and mutated queries: the server survives them and keeps answering.
    let mut rng = pathwise_core::rng::seeded(99);
    use pathwise_core::rand::Rng as _;
    let flood_sock = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
    for i in 0..2_000 {
        if i % 100 == 0 {
            // Paced, so that the kernel queue seldom overflows (a drop there is not an error,
            // just not a test of the server).
            std::thread::sleep(Duration::from_millis(2));
        }
        let d: Vec<u8> = if i % 2 == 0 {
            let len = rng.random_range(0..1600usize);
            (0..len).map(|_| rng.random()).collect()
        } else {
            let mut q = good.clone();
            let at = rng.random_range(0..q.len());
            q[at] = rng.random();
            q.truncate(rng.random_range(0..=q.len()));
            q
        };
        let _ = flood_sock.send_to(&d, server.local_addr());
    }
    let reply = exchange(&s, &good, long).expect("still answering");
    assert_eq!(
        pathwise::oracle::clients::reply_info(&reply).map(|i| i.rcode),
        Some(Rcode::NoError)
    );
    // Everything that reached the server is accounted for exactly once (read once the
    // counters have settled).
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = counters(server.socket());
    let c = loop {
        std::thread::sleep(Duration::from_millis(200));
        let c = counters(server.socket());
        if c == last || Instant::now() > deadline {
            break c;
        }
        last = c;
    };
    assert!(
        c.received > 9 + 1_000,
        "most of the garbage reached the server: {c:?}"
    );
    assert_eq!(c.received, c.answered + c.rejected + c.dropped, "{c:?}");
    assert_eq!(c.sent + c.send_errors, c.answered + c.rejected, "{c:?}");
}

/// One client thread: sequential queries, each must be answered with one of `allowed`.
fn checking_client(
    server: SocketAddr,
    cands: Vec<IpAddr>,
    allowed: Arc<Vec<Vec<IpAddr>>>,
    stop: Arc<AtomicBool>,
) -> (u64, u64, Vec<usize>) {
    let s = client(server);
    let (mut sent, mut answered) = (0u64, 0u64);
    let mut seen = vec![0usize; allowed.len()];
    let mut id = 0u32;
    while !stop.load(Relaxed) {
        id += 1;
        sent += 1;
        let Some(reply) = exchange(
            &s,
            &query_bytes(id, &cands, Some(SOURCE)),
            Duration::from_secs(5),
        ) else {
            continue;
        };
        let info = pathwise::oracle::clients::reply_info(&reply).expect("a reply");
        assert_eq!(info.id, id, "replies come in order, one per query");
        answered += 1;
        let order = reply_order(&reply);
        let Some(k) = allowed.iter().position(|a| *a == order) else {
            panic!(
                "query {id} was answered from a snapshot that is neither before nor after an update: {order:?}"
            );
        };
        seen[k] += 1;
    }
    (sent, answered, seen)
}

#[test]
fn live_updates_under_load_lose_no_query_and_never_serve_a_half_built_snapshot() {
    let dir = Scratch::new("live");
    let cfg = small_config();
    let server = start(&dir, &cfg, 2);
    let before = TopologySnapshot::build(&cfg).expect("builds");
    // Take out a router that is an exit and lies on paths: its networks, its links and every
    // path through it go in one update.
    let victim = before
        .router_addresses()
        .filter(|&r| r != before.source_router(SOURCE).expect("source router"))
        .max_by_key(|&r| {
            cfg.external_networks
                .iter()
                .filter(|n| n.router == r)
                .count()
        })
        .expect("a router");
    let (after, _) = before
        .apply(&[Update::RemoveRouter(victim)])
        .expect("removal applies");
    let mut cands = candidates(&cfg, 60, 3);
    // Addresses behind the victim: its own source network, so that the two rankings differ.
    let own = cfg
        .source_networks
        .iter()
        .find(|n| n.router == victim)
        .expect("a source network");
    cands.push(own.prefix.hosts().next().expect("host"));
    let rank_before = expected(&before, SOURCE, &cands);
    let rank_after = expected(&after, SOURCE, &cands);
    assert_ne!(rank_before, rank_after, "the update must change the answer");
    let allowed = Arc::new(vec![rank_before, rank_after]);

    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..2)
        .map(|_| {
            let (c, a, st) = (cands.clone(), allowed.clone(), stop.clone());
            let addr = server.local_addr();
            std::thread::spawn(move || checking_client(addr, c, a, st))
        })
        .collect();
    let sock = server.socket().to_path_buf();
    let mut generations = Vec::new();
    for _ in 0..6 {
        std::thread::sleep(Duration::from_millis(30));
        let v = console(&sock, "delete", json!(Delete::Router { address: victim }))
            .expect("delete router");
        let r: ChangeReport = serde_json::from_value(v).expect("change report");
        assert!(r.paths_recomputed);
        generations.push(r.generation);
        std::thread::sleep(Duration::from_millis(30));
        // Back to the configuration file: a whole new snapshot, swapped in at once.
        console(&sock, "reload", Value::Null).expect("reload");
    }
    std::thread::sleep(Duration::from_millis(30));
    stop.store(true, Relaxed);
    let mut seen = [0usize; 2];
    let (mut sent, mut answered) = (0, 0);
    for c in clients {
        let (s, a, k) = c.join().expect("client thread");
        sent += s;
        answered += a;
        seen[0] += k[0];
        seen[1] += k[1];
    }
    assert_eq!(sent, answered, "no query was lost");
    assert!(sent > 20, "the clients kept querying ({sent})");
    assert!(
        seen[0] > 0 && seen[1] > 0,
        "both snapshots served: {seen:?}"
    );
    assert!(
        generations.iter().all(|&g| g == 1),
        "each delete applies to a fresh reload"
    );
    let c = counters_when(&sock, |c| c.answered >= answered);
    assert_eq!(c.received, c.answered, "{c:?}");
    assert_eq!(c.answered, answered);
}

fn change(sock: &Path, verb: &str, args: Value) -> ChangeReport {
    let v = console(sock, verb, args).unwrap_or_else(|e| panic!("{verb}: {e}"));
    let r: ChangeReport = serde_json::from_value(v).expect("change report");
    assert!(
        r.message.starts_with("operation successful"),
        "{}",
        r.message
    );
    r
}

fn error(sock: &Path, verb: &str, args: Value) -> String {
    match console(sock, verb, args) {
        Ok(v) => panic!("{verb} should fail, answered {v}"),
        Err(e) => e.to_string(),
    }
}

fn summary(sock: &Path) -> Summary {
    serde_json::from_value(console(sock, "show", json!(Show::Summary)).expect("summary"))
        .expect("summary value")
}

#[test]
fn console_verbs_work_and_report_errors_clearly() {
    let dir = Scratch::new("console");
    let cfg = small_config();
    let server = start(&dir, &cfg, 1);
    let sock = server.socket().to_path_buf();
    let snap = TopologySnapshot::build(&cfg).expect("builds");

    let s0 = summary(&sock);
    assert_eq!(s0.routers, 12);
    assert_eq!(s0.prefixes, snap.prefix_count());
    assert_eq!(s0.workers, 1);
    assert_eq!(s0.ranking, "seed");

    // show: router, prefix, rank, networks, counters, metrics.
    let r0 = cfg.routers[0].address;
    let v: RouterView = serde_json::from_value(
        console(&sock, "show", json!(Show::Router { address: r0 })).unwrap(),
    )
    .unwrap();
    assert_eq!(v.router.address, r0);
    assert!(v.render().contains(&format!("router {r0}")));
    let inside = IpAddr::V4(Ipv4Addr::new(100, 64, 1, 20));
    let v: PrefixView = serde_json::from_value(
        console(
            &sock,
            "show",
            json!(Show::Prefix {
                address: inside,
                source: Some(SOURCE)
            }),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(v.prefix, "100.64.1.0/24");
    assert_eq!(v.exits.len(), 1);
    assert!(v.from_source.is_some());
    let cands = candidates(&cfg, 8, 4);
    let v: RankView = serde_json::from_value(
        console(
            &sock,
            "show",
            json!(Show::Rank {
                source: SOURCE,
                candidates: cands.clone()
            }),
        )
        .unwrap(),
    )
    .unwrap();
    let order: Vec<IpAddr> = v.candidates.iter().map(|c| c.address).collect();
    assert_eq!(order, expected(&snap, SOURCE, &cands));
    assert!(v.candidates.last().unwrap().metrics.is_none());
    let v = console(
        &sock,
        "show",
        json!(Show::Networks {
            kind: NetworkKind::Source,
            limit: 2
        }),
    )
    .unwrap();
    assert_eq!(v["total"], 12);
    assert_eq!(v["networks"].as_array().map(Vec::len), Some(2));
    let m = console(&sock, "show", json!(Show::Metrics)).unwrap();
    assert!(
        m.as_str()
            .unwrap()
            .contains("pathwise_oracle_answered_total 0\n")
    );
    assert!(m.as_str().unwrap().contains("pathwise_build_info{"), "{m}");
    let e = error(
        &sock,
        "show",
        json!(Show::Router {
            address: "10.99.99.99".parse().unwrap()
        }),
    );
    assert_eq!(e, "no router 10.99.99.99 (`show routers` lists them)");
    let e = error(
        &sock,
        "show",
        json!(Show::Prefix {
            address: "0.0.0.1".parse().unwrap(),
            source: None
        }),
    );
    assert!(e.contains("no prefix contains 0.0.0.1"), "{e}");
    let e = error(
        &sock,
        "show",
        json!(Show::Rank {
            source: "127.0.0.1".parse().unwrap(),
            candidates: cands.clone()
        }),
    );
    assert!(e.contains("not inside a source network"), "{e}");

    // create / set / delete a router with a link and networks.
    let new: IpAddr = "10.250.0.1".parse().unwrap();
    change(
        &sock,
        "create",
        json!(Create::Router {
            address: new,
            nics: 4
        }),
    );
    assert_eq!(summary(&sock).routers, 13);
    let e = error(
        &sock,
        "create",
        json!(Create::Router {
            address: new,
            nics: 4
        }),
    );
    assert_eq!(e, "create router: router 10.250.0.1 already exists");
    let link = Create::Link {
        router: new,
        nic: 0,
        local: "172.31.0.1".parse().unwrap(),
        peer: "172.31.0.2".parse().unwrap(),
        bandwidth: 100.0,
        latency: 2.0,
        weight: 1,
        congestion: 0.0,
    };
    change(&sock, "create", json!(link));
    let e = error(&sock, "create", json!(link));
    assert!(e.contains("already has NIC 0"), "{e}");
    let e = error(
        &sock,
        "create",
        json!(Create::Link {
            router: new,
            nic: 9,
            local: "172.31.0.5".parse().unwrap(),
            peer: "172.31.0.6".parse().unwrap(),
            bandwidth: 100.0,
            latency: 2.0,
            weight: 1,
            congestion: 0.0,
        }),
    );
    assert!(
        e.contains("NIC 9 is out of range (the router has 4 NICs)"),
        "{e}"
    );
    let set_link = |bandwidth, weight, state| Set::Link {
        router: new,
        nic: 0,
        bandwidth,
        latency: None,
        weight,
        congestion: None,
        state,
    };
    change(
        &sock,
        "set",
        json!(set_link(None, Some(5), Some(StateArg::Down))),
    );
    let v: RouterView = serde_json::from_value(
        console(&sock, "show", json!(Show::Router { address: new })).unwrap(),
    )
    .unwrap();
    assert_eq!(v.router.nics[0].link.map(|l| l.weight), Some(5));
    assert!(!v.router.nics[0].state.is_up());
    let e = error(&sock, "set", json!(set_link(None, None, None)));
    assert!(e.starts_with("set link: nothing to change"), "{e}");
    let e = error(&sock, "set", json!(set_link(Some(-1.0), None, None)));
    assert!(e.contains("router 10.250.0.1: link on NIC 0"), "{e}");
    let net: ipnet::IpNet = "100.99.0.0/24".parse().unwrap();
    change(
        &sock,
        "create",
        json!(Create::SourceNetwork {
            prefix: net,
            router: new,
            nic: 1
        }),
    );
    let e = error(
        &sock,
        "create",
        json!(Create::SourceNetwork {
            prefix: net,
            router: new,
            nic: 1
        }),
    );
    assert!(e.contains("already attached"), "{e}");
    let ext: ipnet::IpNet = "203.0.113.0/24".parse().unwrap();
    change(
        &sock,
        "create",
        json!(Create::ExternalNetwork {
            prefix: ext,
            router: new,
            nic: 2,
            as_number: 64_999,
            as_distance: 2
        }),
    );
    let v: PrefixView = serde_json::from_value(
        console(
            &sock,
            "show",
            json!(Show::Prefix {
                address: "203.0.113.9".parse().unwrap(),
                source: None
            }),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!((v.exits[0].router, v.exits[0].as_number), (new, 64_999));
    change(
        &sock,
        "delete",
        json!(Delete::ExternalNetwork {
            prefix: ext,
            router: new
        }),
    );
    let e = error(
        &sock,
        "delete",
        json!(Delete::ExternalNetwork {
            prefix: ext,
            router: new
        }),
    );
    assert_eq!(
        e,
        "delete external-network: 203.0.113.0/24 is not reached through exit 10.250.0.1"
    );
    let e = error(&sock, "delete", json!(Delete::Prefix { prefix: ext }));
    assert_eq!(e, "delete prefix: no prefix 203.0.113.0/24 in the database");
    let e = error(
        &sock,
        "create",
        json!(Create::SourceNetwork {
            prefix: net,
            router: "10.9.9.9".parse().unwrap(),
            nic: 1
        }),
    );
    assert_eq!(e, "no router 10.9.9.9 (`show routers` lists them)");
    change(
        &sock,
        "delete",
        json!(Delete::Link {
            router: new,
            nic: 0
        }),
    );
    let e = error(
        &sock,
        "delete",
        json!(Delete::Link {
            router: new,
            nic: 0
        }),
    );
    assert_eq!(e, "delete link: router 10.250.0.1 has no NIC 0");
    let r = change(&sock, "delete", json!(Delete::Router { address: new }));
    assert_eq!(r.prefixes_changed, 1, "its source network went with it");
    assert_eq!(summary(&sock).routers, 12);

    // Router state, ranking, TTL.
    change(
        &sock,
        "set",
        json!(Set::Router {
            address: r0,
            state: StateArg::Down
        }),
    );
    change(
        &sock,
        "set",
        json!(Set::Router {
            address: r0,
            state: StateArg::Up
        }),
    );
    change(
        &sock,
        "set",
        json!(Set::Ranking {
            ranking: "latency + 8 * as_distance".into()
        }),
    );
    assert_eq!(summary(&sock).ranking, "latency + 8 * as_distance");
    let e = error(
        &sock,
        "set",
        json!(Set::Ranking {
            ranking: "latency +".into()
        }),
    );
    assert!(
        e.starts_with("set ranking: cost expression, column 10"),
        "{e}"
    );
    let e = error(
        &sock,
        "set",
        json!(Set::Ranking {
            ranking: "bandwith".into()
        }),
    );
    assert!(e.contains("bandwith"), "{e}");
    change(&sock, "set", json!(Set::Ttl { seconds: 33 }));
    let s = client(server.local_addr());
    let reply = exchange(
        &s,
        &query_bytes(1, &cands, Some(SOURCE)),
        Duration::from_secs(5),
    )
    .unwrap();
    assert_eq!(
        pathwise::oracle::clients::reply_info(&reply).unwrap().ttl,
        33
    );
    let gen_before_reload = summary(&sock).generation;
    assert!(gen_before_reload >= 10);

    // dump: a TOML file that loads and builds to the running database.
    let v = console(&sock, "dump", Value::Null).unwrap();
    let dumped = config::from_toml_str(v["toml"].as_str().unwrap()).expect("dump parses");
    let rebuilt = TopologySnapshot::build(&dumped).expect("dump builds");
    assert_eq!(rebuilt.router_count(), 12);
    assert_eq!(rebuilt.prefix_count(), snap.prefix_count());
    assert_eq!(rebuilt.settings().ttl, 33);

    // reload: errors leave the database alone; success restores the file's database.
    let e = error(
        &sock,
        "reload",
        json!({ "config": dir.path("missing.toml") }),
    );
    assert!(
        e.starts_with("reload: ") && e.contains("missing.toml"),
        "{e}"
    );
    let bad = dir.path("bad.toml");
    std::fs::write(&bad, "[oracle]\nttl = \"soon\"\n").unwrap();
    let e = error(&sock, "reload", json!({ "config": bad }));
    assert!(e.contains("bad.toml") && e.contains("ttl"), "{e}");
    assert_eq!(
        summary(&sock).generation,
        gen_before_reload,
        "a failed reload changes nothing"
    );
    let r = change(&sock, "reload", Value::Null);
    assert_eq!(r.generation, 0);
    let s1 = summary(&sock);
    assert_eq!((s1.ttl, s1.ranking.as_str()), (60, "seed"));
    assert!(s1.config.ends_with("oracle.toml"));

    // Unknown verbs and bad arguments.
    let e = error(&sock, "print", Value::Null);
    assert!(e.starts_with("unknown command \"print\""), "{e}");
    let e = error(&sock, "show", json!({ "what": "everything" }));
    assert!(
        e.starts_with("show: bad arguments: unknown variant `everything`"),
        "{e}"
    );
    let e = error(&sock, "create", json!({ "object": "router" }));
    assert!(e.contains("missing field `address`"), "{e}");

    // No server.
    let e = console(&dir.path("nobody.sock"), "show", Value::Null)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("no oracle server (`pathwise oracle serve`) is running"),
        "{e}"
    );
}

#[test]
fn clients_count_replies_and_the_echo_server_answers() {
    let dir = Scratch::new("clients");
    let cfg = small_config();
    let server = start(&dir, &cfg, 2);
    let query = QueryOptions {
        size: 50,
        source: Some(SOURCE),
        pool: Arc::new(CandidatePool::from_config(&cfg)),
        seed: 5,
    };
    let stop = AtomicBool::new(false);
    let r = closed_loop(
        &ClosedLoopOptions {
            server: server.local_addr(),
            threads: 3,
            limits: Limits {
                count: Some(40),
                duration: Some(Duration::from_secs(20)),
            },
            delay: Duration::ZERO,
            timeout: Duration::from_secs(2),
            sync_start: true,
            sync_stop: true,
            query: query.clone(),
        },
        &stop,
        &|_| {},
    )
    .expect("multi runs");
    assert_eq!(r.mode, "multi");
    assert_eq!(r.per_thread.len(), 3);
    assert!(r.sent >= 40 && r.sent <= 120, "{r:?}");
    assert_eq!(r.replies, r.sent);
    assert_eq!(r.lost, 0);
    let rtt = r.rtt.as_ref().expect("rtts");
    assert!(rtt.min_ms <= rtt.median_ms && rtt.median_ms <= rtt.p99_ms);

    for service in [None, Some(Service::Echo)] {
        let echo = service.map(|s| {
            UdpServer::start(
                &UdpOptions {
                    address: IpAddr::V4(Ipv4Addr::LOCALHOST),
                    port: 0,
                    workers: 2,
                    batch: 16,
                    ..UdpOptions::default()
                },
                s,
            )
            .expect("echo server")
        });
        let target = echo
            .as_ref()
            .map_or(server.local_addr(), UdpServer::local_addr);
        let r = flood(
            &FloodOptions {
                server: target,
                limits: Limits {
                    count: Some(3_000),
                    duration: Some(Duration::from_secs(20)),
                },
                window: 32,
                timeout: Duration::from_secs(2),
                batch: 16,
                sockets: 16,
                query: query.clone(),
            },
            &stop,
        )
        .expect("flood runs");
        assert_eq!(r.sent, 3_000);
        assert_eq!(r.replies, 3_000, "{r:?}");
        assert_eq!(r.rtt.as_ref().map(|x| x.samples), Some(3_000));
    }
    let c = counters(server.socket());
    assert!(
        c.received_per_worker.iter().all(|&n| n > 0),
        "SO_REUSEPORT spread the flows: {c:?}"
    );

    // Too many addresses per query is refused before anything is sent.
    let mut q = query.clone();
    q.size = 364;
    let e = flood(
        &FloodOptions {
            server: server.local_addr(),
            limits: Limits {
                count: Some(1),
                duration: None,
            },
            window: 1,
            timeout: Duration::from_millis(100),
            batch: 1,
            sockets: 1,
            query: q,
        },
        &stop,
    )
    .unwrap_err();
    assert!(e.to_string().contains("--size 364"), "{e}");
}

fn free_port() -> u16 {
    UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

#[test]
fn command_line_generate_serve_ping_show() {
    let dir = Scratch::new("cli");
    let bin = env!("CARGO_BIN_EXE_pathwise");
    let cfg = dir.path("net.toml");
    let out = std::process::Command::new(bin)
        .args([
            "oracle",
            "generate",
            "--routers",
            "8",
            "--prefixes",
            "200",
            "--exits",
            "2",
            "-o",
        ])
        .arg(&cfg)
        .output()
        .expect("generate runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let port = free_port().to_string();
    let sock = dir.path("o.sock");
    let server = std::process::Command::new(bin)
        .args([
            "oracle",
            "serve",
            "--address",
            "127.0.0.1",
            "--port",
            &port,
            "--workers",
            "2",
            "--config",
        ])
        .arg(&cfg)
        .arg("--socket")
        .arg(&sock)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("serve starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !sock.exists() {
        assert!(Instant::now() < deadline, "the server did not come up");
        std::thread::sleep(Duration::from_millis(50));
    }
    let run = |args: &[&str]| {
        let out = std::process::Command::new(bin)
            .args(args)
            .output()
            .expect("runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let cfg_s = cfg.to_str().unwrap();
    let sock_s = sock.to_str().unwrap();
    let (ok, stdout, stderr) = run(&[
        "oracle",
        "ping",
        "--port",
        &port,
        "--count",
        "3",
        "--delay",
        "10",
        "--source",
        "100.64.0.9",
        "--pick-from",
        cfg_s,
        "--json",
    ]);
    assert!(ok, "{stderr}");
    let v: Value = serde_json::from_str(&stdout).expect("ping --json");
    assert_eq!(
        (v["sent"].as_u64(), v["replies"].as_u64()),
        (Some(3), Some(3))
    );
    let (ok, stdout, _) = run(&["oracle", "show", "--socket", sock_s]);
    assert!(ok && stdout.contains("8 routers"), "{stdout}");
    let (ok, stdout, _) = run(&["oracle", "show", "counters", "--socket", sock_s]);
    assert!(ok && stdout.contains("answered 3"), "{stdout}");
    let (ok, stdout, _) = run(&["oracle", "set", "ttl", "20", "--socket", sock_s]);
    assert!(ok && stdout.starts_with("operation successful"), "{stdout}");
    let (ok, _, stderr) = run(&["oracle", "delete", "router", "10.9.9.9", "--socket", sock_s]);
    assert!(!ok && stderr.contains("no router 10.9.9.9"), "{stderr}");
    let dump = dir.path("dump.toml");
    let (ok, _, stderr) = run(&[
        "oracle",
        "dump",
        "--socket",
        sock_s,
        "-o",
        dump.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    assert!(config::load_file(&dump).is_ok());

    let killed = std::process::Command::new("kill")
        .args(["-INT", &server.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let out = server.wait_with_output().expect("server exits");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("stopped") && stderr.contains("answered 3"),
        "{stderr}"
    );
    assert!(!sock.exists(), "the management socket is removed");
}
