//! Every service's metrics page, scraped over HTTP as Prometheus would: the oracle (in-process
//! and `oracle serve --metrics`, no root needed), the daemon running RSVP and GIST, and the
//! booster gateway (both in network namespaces, as root). Each page is checked for its content
//! type, its families and labels, and given to `promtool check metrics` in the text format it
//! reads (skipped with a message where promtool is not installed: Debian's `prometheus`
//! package has it; CI installs it).

mod common;

use common::netns::{bin, serial, skip};
use pathwise::netns::{Lab, wait_for};
use pathwise::oracle::server::UdpOptions;
use pathwise::oracle::{OracleServer, ServeOptions};
use pathwise_oracle::config;
use pathwise_oracle::generate::{SyntheticSpec, synthetic};
use pathwise_oracle::proxidor;
use std::io::{Read as _, Write as _};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A response: status line, lower-cased headers, body.
struct Response {
    status: String,
    head: String,
    body: String,
}

/// `GET path` with an `Accept` header (none if empty).
fn get(addr: SocketAddr, path: &str, accept: &str) -> std::io::Result<Response> {
    let mut c = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    c.set_read_timeout(Some(Duration::from_secs(5)))?;
    let accept = if accept.is_empty() {
        String::new()
    } else {
        format!("Accept: {accept}\r\n")
    };
    write!(
        c,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{accept}\r\n"
    )?;
    let mut out = String::new();
    c.read_to_string(&mut out)?;
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    let (status, head) = head.split_once("\r\n").unwrap_or((head, ""));
    Ok(Response {
        status: status.to_string(),
        head: head.to_ascii_lowercase(),
        body: body.to_string(),
    })
}

/// The page in both formats, checked for what every page has; returns the OpenMetrics one.
fn scrape(addr: SocketAddr, test: &str) -> String {
    let om = get(addr, "/metrics", "").expect("scrape");
    assert_eq!(om.status, "HTTP/1.1 200 OK", "{}", om.body);
    assert!(
        om.head
            .contains(&format!("content-type: {OPENMETRICS}").to_ascii_lowercase()),
        "{}",
        om.head
    );
    assert!(om.body.ends_with("# EOF\n"), "{}", om.body);
    let b = pathwise::build_info();
    assert!(
        om.body.contains(&format!(
            "pathwise_build_info{{version=\"{}\",commit=\"{}\"}} 1\n",
            b.version, b.commit
        )),
        "{}",
        om.body
    );
    // What Prometheus sends: OpenMetrics preferred.
    let prom = get(
        addr,
        "/metrics",
        "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
    )
    .expect("scrape");
    assert!(prom.body.ends_with("# EOF\n"));
    let text = get(addr, "/metrics", "text/plain").expect("scrape");
    assert!(
        text.head.contains(&format!("content-type: {TEXT}")),
        "{}",
        text.head
    );
    assert!(!text.body.contains("# EOF"), "{}", text.body);
    promtool(&text.body, test);
    let other = get(addr, "/", "").expect("request");
    assert_eq!(other.status, "HTTP/1.1 404 Not Found");
    om.body
}

/// `promtool check metrics` passes `page` with no lint warning.
fn promtool(page: &str, test: &str) {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("promtool").is_file()));
    if !found {
        println!(
            "{test}: promtool check skipped: `promtool` is not installed (Debian package \
             `prometheus`)"
        );
        return;
    }
    let mut child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(page.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool check metrics: {said}\n{page}"
    );
}

/// The samples of family `name` (full series name), as (labels, value) lines.
fn samples<'a>(page: &'a str, series: &str) -> Vec<&'a str> {
    page.lines()
        .filter(|l| {
            l.strip_prefix(series)
                .is_some_and(|r| r.starts_with('{') || r.starts_with(' '))
        })
        .collect()
}

/// The value of the sample written exactly `series{labels}`.
fn value(page: &str, sample: &str) -> Option<u64> {
    page.lines()
        .find_map(|l| l.strip_prefix(sample)?.strip_prefix(' ')?.parse().ok())
}

/// Exactly one `# TYPE` line per family and the type given.
fn assert_family(page: &str, family: &str, kind: &str) {
    let line = format!("# TYPE {family} {kind}\n");
    assert_eq!(page.matches(&line).count(), 1, "{line}in\n{page}");
    assert!(page.contains(&format!("# HELP {family} ")), "{family}");
}

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("pw-metrics-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn oracle_database(dir: &Scratch) -> PathBuf {
    let path = dir.0.join("oracle.toml");
    let cfg = synthetic(&SyntheticSpec::new(8, 100, 2));
    std::fs::write(&path, config::to_toml_string(&cfg).unwrap()).unwrap();
    path
}

#[test]
fn oracle_metrics_count_queries_drops_and_rejections_and_pass_promtool() {
    let test = "oracle_metrics_count_queries_drops_and_rejections_and_pass_promtool";
    let dir = Scratch::new("oracle");
    let server = OracleServer::start(&ServeOptions {
        config: oracle_database(&dir),
        udp: UdpOptions {
            address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            workers: 2,
            batch: 8,
            ..UdpOptions::default()
        },
        socket: dir.0.join("oracle.sock"),
        metrics: Some("127.0.0.1:0".parse().unwrap()),
        socket_group: None,
        alto: None,
    })
    .expect("server starts");
    let addr = server.metrics_addr().expect("metrics served");
    let client = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    // A query (answered), the same with a wrong version (rejected), two datagrams too short
    // to be a query (dropped).
    let mut good = Vec::new();
    proxidor::query(7, &[IpAddr::V4(Ipv4Addr::new(100, 64, 0, 9))]).emit(&mut good);
    let mut bad_version = good.clone();
    bad_version[0] = 1;
    for d in [
        &good[..],
        &bad_version[..],
        &[0, 0, 0, 0, 1][..],
        &[1u8][..],
    ] {
        client.send_to(d, server.local_addr()).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    // Every counter asserted below, not only the datagrams: the page is the one to check once
    // all of them are there (fresh-clone CI of d839198 caught a page with the datagrams counted
    // and the drops not yet; since 119cff3 a worker's batch is never read in part).
    let expected = [
        ("pathwise_oracle_datagrams_total{direction=\"received\"}", 4),
        ("pathwise_oracle_datagrams_total{direction=\"sent\"}", 2),
        ("pathwise_oracle_drops_total{reason=\"too_short\"}", 2),
        ("pathwise_oracle_rejections_total{reason=\"version\"}", 1),
        ("pathwise_oracle_answered_total", 1),
    ];
    let page = loop {
        let page = scrape(addr, test);
        if expected.iter().all(|(k, v)| value(&page, k) == Some(*v)) {
            break page;
        }
        assert!(
            Instant::now() < deadline,
            "4 datagrams never all counted:\n{page}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_family(&page, "pathwise_oracle_drops", "counter");
    assert_family(&page, "pathwise_oracle_rejections", "counter");
    assert_family(&page, "pathwise_oracle_datagram_bytes", "counter");
    assert!(
        page.contains("# UNIT pathwise_oracle_datagram_bytes bytes\n"),
        "{page}"
    );
    assert_eq!(
        value(&page, "pathwise_oracle_drops_total{reason=\"too_short\"}"),
        Some(2),
        "{page}"
    );
    let drops = samples(&page, "pathwise_oracle_drops_total");
    assert_eq!(drops.len(), pathwise::oracle::counters::DROP_REASONS.len());
    assert_eq!(
        value(
            &page,
            "pathwise_oracle_rejections_total{reason=\"version\"}"
        ),
        Some(1),
        "{page}"
    );
    let rejected: u64 = samples(&page, "pathwise_oracle_rejections_total")
        .iter()
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum();
    assert_eq!(rejected, 1, "{page}");
    assert_eq!(value(&page, "pathwise_oracle_answered_total"), Some(1));
    assert_eq!(value(&page, "pathwise_oracle_workers"), Some(2));
    assert_eq!(value(&page, "pathwise_oracle_routers"), Some(8));
    drop(server);
    assert!(
        TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err(),
        "the metrics server outlived the oracle"
    );
}

#[test]
fn oracle_serve_takes_a_metrics_address() {
    let test = "oracle_serve_takes_a_metrics_address";
    let dir = Scratch::new("oracle-cli");
    let db = oracle_database(&dir);
    let free = || {
        std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .unwrap()
            .local_addr()
            .unwrap()
    };
    let metrics = free();
    let udp = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = udp.local_addr().unwrap().port().to_string();
    drop(udp);
    let mut child = std::process::Command::new(bin())
        .args(["oracle", "serve", "--address", "127.0.0.1", "--port", &port])
        .arg("--config")
        .arg(&db)
        .arg("--socket")
        .arg(dir.0.join("o.sock"))
        .args(["--metrics", &metrics.to_string()])
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("serve starts");
    let page = wait_for(Duration::from_secs(30), "the metrics page", || {
        get(metrics, "/metrics", "")
            .ok()
            .filter(|r| r.status.contains("200"))
    });
    let _ = child.kill();
    let _ = child.wait();
    let page = page.unwrap().body;
    assert!(
        page.contains("pathwise_oracle_answered_total 0\n"),
        "{page}"
    );
    assert!(page.contains("pathwise_build_info{"), "{test}: {page}");
}

#[test]
fn daemon_metrics_label_rsvp_and_gist_messages_and_drops_and_pass_promtool() {
    let test = "daemon_metrics_label_rsvp_and_gist_messages_and_drops_and_pass_promtool";
    if skip(test, &["sysctl"]) {
        return;
    }
    let _g = serial();
    let mut lab = Lab::new(&["a", "b"]).unwrap();
    lab.link((0, "e0", "10.213.0.1/24"), (1, "e0", "10.213.0.2/24"))
        .unwrap();
    for (i, node) in ["a", "b"].into_iter().enumerate() {
        let sock = lab.path(&format!("{node}.sock"));
        let cfg = lab.path(&format!("{node}.toml"));
        std::fs::write(
            &cfg,
            format!(
                "[daemon]\nsocket = \"{}\"\nmetrics = \"127.0.0.1:9464\"\n\n\
                 [rsvp]\ntraffic_control = \"memory\"\n[[rsvp.interface]]\nname = \"e0\"\n\
                 bandwidth = \"10Mbit\"\n\n\
                 [gist]\ninterfaces = [\"e0\"]\ntransports = [\"udp\"]\ninterception = \"socket\"\n\n\
                 [qos_nslp]\n",
                sock.display()
            ),
        )
        .unwrap();
        lab.spawn(
            node,
            i,
            &[bin(), "daemon", "--config", &cfg.to_string_lossy()],
        )
        .unwrap();
        wait_for(Duration::from_secs(10), "the daemon", || {
            sock.exists().then_some(())
        })
        .unwrap_or_else(|e| panic!("{e}: {}", lab.log(node)));
    }
    // A GIST ping from A to B: Query, Response, Confirm, Data on both.
    let out = lab
        .exec_ok(
            0,
            &[
                bin(),
                "gist",
                "--json",
                "--socket",
                &lab.path("a.sock").to_string_lossy(),
                "ping",
                "10.213.0.2",
                "--count",
                "1",
                "--transport",
                "udp",
            ],
        )
        .unwrap_or_else(|e| panic!("ping: {e}\n{}\n{}", lab.log("a"), lab.log("b")));
    assert!(out.contains("\"received\": 1"), "{out}");
    // A QoS NSLP reservation from A to B: RESERVE out, RESPONSE back.
    let out = lab
        .exec_ok(
            0,
            &[
                bin(),
                "qos",
                "--json",
                "--socket",
                &lab.path("a.sock").to_string_lossy(),
                "reserve",
                "10.213.0.2",
                "--rate",
                "1Mbit",
            ],
        )
        .unwrap_or_else(|e| panic!("qos reserve: {e}\n{}\n{}", lab.log("a"), lab.log("b")));
    assert!(out.contains("\"reserved\""), "{out}");
    let ns = lab.ns[0].clone();
    let addr: SocketAddr = "127.0.0.1:9464".parse().unwrap();
    // The loop publishes once a second.
    let deadline = Instant::now() + Duration::from_secs(10);
    let page = loop {
        let page = in_netns(&ns, move || scrape(addr, test));
        if value(
            &page,
            "pathwise_gist_messages_total{direction=\"received\",type=\"Response\"}",
        )
        .is_some_and(|n| n >= 1)
            && value(
                &page,
                "pathwise_qos_nslp_messages_total{direction=\"received\",type=\"response\"}",
            )
            .is_some_and(|n| n >= 1)
        {
            break page;
        }
        assert!(Instant::now() < deadline, "the ping never showed:\n{page}");
        std::thread::sleep(Duration::from_millis(200));
    };
    // The management socket is the daemon's: its refusals on a page of their own.
    assert_eq!(
        value(&page, "pathwise_daemon_management_refused_total"),
        Some(0),
        "{page}"
    );
    // The QoS NSLP: messages by direction and type, drops in one family, state gauges.
    assert_family(&page, "pathwise_qos_nslp_messages", "counter");
    assert_family(&page, "pathwise_qos_nslp_drops", "counter");
    assert_family(&page, "pathwise_qos_nslp_sessions", "gauge");
    assert_family(&page, "pathwise_qos_nslp_reservations", "gauge");
    assert_family(&page, "pathwise_qos_nslp_sent_bytes", "counter");
    for (sample, n) in [
        (
            "pathwise_qos_nslp_messages_total{direction=\"sent\",type=\"reserve\"}",
            1,
        ),
        ("pathwise_qos_nslp_admitted_total", 1),
        ("pathwise_qos_nslp_sessions", 1),
        ("pathwise_qos_nslp_reservations", 1),
    ] {
        assert!(
            value(&page, sample).is_some_and(|v| v >= n),
            "{sample} >= {n}:\n{page}"
        );
    }
    for service in ["rsvp", "gist", "qos_nslp"] {
        assert_family(&page, &format!("pathwise_{service}_messages"), "counter");
        assert_family(&page, &format!("pathwise_{service}_drops"), "counter");
        if service != "qos_nslp" {
            // The sockets are GIST's: the QoS NSLP sees what GIST delivers.
            assert_family(&page, &format!("pathwise_{service}_state_bytes"), "gauge");
            assert!(
                value(
                    &page,
                    &format!("pathwise_{service}_drops_total{{reason=\"kernel_receive_buffer\"}}")
                )
                .is_some(),
                "{page}"
            );
        }
        // Every message sample names a direction and a type.
        let messages = samples(&page, &format!("pathwise_{service}_messages_total"));
        assert!(!messages.is_empty());
        for m in messages {
            assert!(
                m.contains("{direction=\"received\",type=\"")
                    || m.contains("{direction=\"sent\",type=\""),
                "{m}"
            );
        }
    }
    assert!(
        value(
            &page,
            "pathwise_gist_messages_total{direction=\"sent\",type=\"Query\"}"
        )
        .is_some_and(|n| n >= 1),
        "{page}"
    );
    assert_eq!(
        value(
            &page,
            "pathwise_rsvp_messages_total{direction=\"received\",type=\"Path\"}"
        ),
        Some(0),
        "{page}"
    );
    // Queries in transit not sent on are drops too.
    assert_eq!(
        value(
            &page,
            "pathwise_gist_drops_total{reason=\"transit_ttl_expired\"}"
        ),
        Some(0),
        "{page}"
    );
    // The watched integrity reasons are listed from zero.
    assert_eq!(
        value(
            &page,
            "pathwise_rsvp_drops_total{reason=\"martian_sender_loopback\"}"
        ),
        Some(0),
        "{page}"
    );
}

#[test]
fn gateway_metrics_count_packets_per_link_and_booster_and_pass_promtool() {
    use pathwise::booster::netns::{self as bnetns, GA, LinkShape, Testbed};
    let test = "gateway_metrics_count_packets_per_link_and_booster_and_pass_promtool";
    if let Some(why) = bnetns::unavailable(&["ping"]) {
        println!("skipping {test}: {why}");
        return;
    }
    let _g = serial();
    let mut tb = Testbed::new(LinkShape::default()).unwrap();
    tb.start_gateways(
        std::path::Path::new(bin()),
        &["lz4"],
        false,
        "metrics = \"127.0.0.1:9465\"",
    )
    .unwrap();
    assert_eq!(bnetns::ping(&tb, 200, 3, "0.2").unwrap().len(), 3);
    let ns = tb.ns[GA].clone();
    let addr: SocketAddr = "127.0.0.1:9465".parse().unwrap();
    let page = in_netns(&ns, move || scrape(addr, test));
    for (family, kind) in [
        ("pathwise_booster_packets", "counter"),
        ("pathwise_booster_packet_bytes", "counter"),
        ("pathwise_booster_drops", "counter"),
        ("pathwise_booster_booster_packets", "counter"),
        ("pathwise_booster_policy_generation", "gauge"),
        ("pathwise_booster_last_policy_swap_seconds", "gauge"),
        ("pathwise_booster_management_refused", "counter"),
    ] {
        assert_family(&page, family, kind);
    }
    let n = |s: &str| value(&page, s).unwrap_or_else(|| panic!("{s} in\n{page}"));
    assert!(n("pathwise_booster_packets_total{link=\"tun\",direction=\"received\"}") >= 3);
    assert!(n("pathwise_booster_packets_total{link=\"peer\",direction=\"received\"}") >= 3);
    assert!(
        n("pathwise_booster_booster_packets_total{booster=\"lz4\",event=\"boosted\"}")
            + n("pathwise_booster_booster_packets_total{booster=\"lz4\",event=\"passed\"}")
            >= 3
    );
    let drops = samples(&page, "pathwise_booster_drops_total");
    assert_eq!(drops.len(), pathwise_booster::stats::DropReason::ALL.len());
}

/// Run `f` on a thread inside namespace `ns` (the namespaces' loopback is their own).
fn in_netns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path).expect("open netns");
        nix::sched::setns(file, nix::sched::CloneFlags::CLONE_NEWNET).expect("setns");
        f()
    })
    .join()
    .unwrap()
}

#[test]
fn gateway_check_knows_the_metrics_key() {
    let dir = Scratch::new("gw-check");
    let check = |metrics: &str| {
        let path = dir.0.join("gw.toml");
        std::fs::write(
            &path,
            format!(
                "tun = \"pwb0\"\nlisten = \"192.168.77.1:7000\"\npeer = \"192.168.77.2:7000\"\n\
                 metrics = {metrics}\n"
            ),
        )
        .unwrap();
        let out = std::process::Command::new(bin())
            .args(["booster", "gateway", "--check"])
            .arg(&path)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stdout, stderr) = check("\"127.0.0.1:9466\"");
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("gw.toml: OK"), "{stdout}");
    let (code, _, stderr) = check("\"localhost\"");
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("gw.toml:4: metrics: "), "{stderr}");
}

/// A management connection refused (uid 65534 on a socket whose mode was widened by hand, so
/// that only the credential check stops it) shows in `show counters` and on the page as
/// `pathwise_oracle_management_refused_total`. Needs root and `setpriv`.
#[test]
fn oracle_management_refusals_are_counted_on_the_page_and_pass_promtool() {
    use std::os::unix::fs::PermissionsExt as _;
    let test = "oracle_management_refusals_are_counted_on_the_page_and_pass_promtool";
    let dir = Scratch::new("refused");
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o755)).unwrap();
    let socket = dir.0.join("oracle.sock");
    let server = OracleServer::start(&ServeOptions {
        config: oracle_database(&dir),
        udp: UdpOptions {
            address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            workers: 1,
            batch: 8,
            ..UdpOptions::default()
        },
        socket: socket.clone(),
        metrics: Some("127.0.0.1:0".parse().unwrap()),
        socket_group: None,
        alto: None,
    })
    .expect("server starts");
    let addr = server.metrics_addr().expect("metrics served");
    let refused = |what: &str| {
        let page = scrape(addr, test);
        let shown = pathwise::mgmt::request(
            &socket,
            "oracle server",
            "show",
            serde_json::json!({"what": "counters"}),
        )
        .unwrap();
        assert_family(&page, "pathwise_oracle_management_refused", "counter");
        let on_page = value(&page, "pathwise_oracle_management_refused_total");
        assert_eq!(
            on_page,
            shown["management_refused"].as_u64(),
            "{what}: {shown}\n{page}"
        );
        on_page
    };
    assert_eq!(refused("at start"), Some(0));
    let as_nobody = |args: &[&str]| {
        std::process::Command::new("setpriv")
            .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
            .arg(bin())
            .args(args)
            .env("RUST_BACKTRACE", "0")
            .output()
    };
    if !nix::unistd::geteuid().is_root()
        || !as_nobody(&["--version"]).is_ok_and(|o| o.status.success())
    {
        println!(
            "{test}: refusal half skipped: needs root, setpriv and a binary uid 65534 can run"
        );
        return;
    }
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let o = as_nobody(&["oracle", "show", "--socket", socket.to_str().unwrap()]).unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("permission denied: uid 65534"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(refused("after a refusal"), Some(1));
    assert_eq!(server.mgmt_refused(), 1);
}
