//! ALTO (RFC 7285, RFC 8895) from a real `pathwise oracle serve --alto` on loopback (no root
//! needed): every resource through our client and through curl (skipped with a message if curl
//! is missing), the refusals with their exact status and §8.5.2 code, vtags, an endpoint-cost
//! ranking equal to the Proxidor answer of the same server, an update stream that sees the merge
//! patch of a console change, the command-line client, and TLS with basic authentication.

use pathwise::oracle::alto::client::{Client, HttpUrl, json_body};
use pathwise_oracle::alto::{self, patch, shape};
use pathwise_oracle::generate::{SyntheticSpec, synthetic};
use pathwise_oracle::{OracleConfig, config, proxidor};
use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader};
use std::net::{IpAddr, Ipv4Addr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_pathwise");

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("pathwise-alto-{name}-{}", std::process::id()));
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

/// A running `pathwise oracle serve`, killed on drop.
struct Served {
    child: Child,
    alto: String,
    udp: std::net::SocketAddr,
    socket: PathBuf,
    metrics: Option<String>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn small_config() -> OracleConfig {
    let mut cfg = synthetic(&SyntheticSpec::new(12, 400, 3));
    cfg.oracle.max_routers = 100;
    cfg
}

/// Start the binary with `extra` ALTO arguments; wait for the lines that say where it listens.
fn serve(dir: &Scratch, cfg: &OracleConfig, extra: &[&str]) -> Served {
    let path = dir.path("oracle.toml");
    std::fs::write(&path, config::to_toml_string(cfg).expect("toml")).expect("write config");
    let socket = dir.path("oracle.sock");
    let mut child = Command::new(BIN)
        .args([
            "oracle",
            "serve",
            "--address",
            "127.0.0.1",
            "--port",
            "0",
            "--alto",
            "127.0.0.1:0",
        ])
        .arg("--config")
        .arg(&path)
        .arg("--socket")
        .arg(&socket)
        .args(extra)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("pathwise runs");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let (mut alto, mut udp, mut metrics) = (None, None, None);
    while alto.is_none() {
        let Some(Ok(line)) = lines.next() else {
            let _ = child.kill();
            panic!("the server stopped before announcing ALTO");
        };
        if let Some(rest) = line.split("serving udp ").nth(1) {
            udp = rest.split(' ').next().and_then(|a| a.parse().ok());
        }
        if let Some(url) = line.split("metrics on ").nth(1) {
            metrics = Some(url.trim().to_owned());
        }
        if let Some(url) = line.split("ALTO directory on ").nth(1) {
            alto = Some(url.trim().to_owned());
        }
    }
    // Keep draining stderr so the server never blocks on it.
    std::thread::spawn(move || for _ in lines {});
    Served {
        child,
        alto: alto.expect("alto url"),
        udp: udp
            .map(|a: std::net::SocketAddr| {
                std::net::SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), a.port())
            })
            .expect("udp address"),
        socket,
        metrics,
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A raw request: status, media type, body.
fn raw(
    client: &Client,
    url: &HttpUrl,
    method: &str,
    content_type: Option<&str>,
    accept: Option<&str>,
    body: &str,
) -> (u16, String, String) {
    rt().block_on(async {
        let mut c = client.connect(url).await.expect("connect");
        let method = axum::http::Method::from_bytes(method.as_bytes()).unwrap();
        let r = c
            .request(
                method,
                &url.path,
                content_type,
                accept.unwrap_or("*/*"),
                body.to_string().into(),
            )
            .await
            .expect("response");
        let status = r.status().as_u16();
        let media = r
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        use http_body_util::BodyExt as _;
        let body = r.into_body().collect().await.unwrap().to_bytes();
        (status, media, String::from_utf8_lossy(&body).into_owned())
    })
}

fn get(client: &Client, url: &HttpUrl, media: &str) -> Value {
    let (m, v) = rt().block_on(client.get(url, media)).expect("GET");
    assert_eq!(m, media, "{url}");
    v
}

fn post(client: &Client, url: &HttpUrl, input: &str, media: &str, body: &Value) -> Value {
    let (m, v) = rt()
        .block_on(client.post(url, input, media, body))
        .expect("POST");
    assert_eq!(m, media, "{url}");
    v
}

fn typed(a: IpAddr) -> String {
    alto::types::typed_addr(a)
}

/// 100 candidates from the database's networks (and two it cannot place).
fn candidates(cfg: &OracleConfig) -> Vec<IpAddr> {
    let mut v: Vec<IpAddr> = cfg
        .external_networks
        .iter()
        .step_by(13)
        .map(|n| n.prefix.network())
        .collect();
    v.dedup();
    v.truncate(90);
    v.extend(
        cfg.source_networks
            .iter()
            .take(8)
            .map(|n| match n.prefix.network() {
                IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(u32::from(a) + 5)),
                other => other,
            }),
    );
    v.push(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 7)));
    v.push(IpAddr::V4(Ipv4Addr::new(0, 0, 0, 1)));
    assert_eq!(v.len(), 100);
    v
}

fn proxidor_order(udp: std::net::SocketAddr, source: IpAddr, cands: &[IpAddr]) -> Vec<IpAddr> {
    let mut m = proxidor::query(42, cands);
    if let IpAddr::V4(a) = source {
        m.source_v4 = Some((a, 32));
    }
    let mut q = Vec::new();
    m.emit(&mut q);
    let s = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.send_to(&q, udp).unwrap();
    let mut buf = vec![0u8; 4096];
    let n = s.recv(&mut buf).expect("a Proxidor reply");
    proxidor::Message::parse(&buf[..n])
        .unwrap()
        .tlvs
        .iter()
        .flat_map(|t| match &t.payload {
            proxidor::Payload::Ipv4(a) => a.iter().map(|&a| IpAddr::V4(a)).collect::<Vec<_>>(),
            proxidor::Payload::Ipv6(a) => a.iter().map(|&a| IpAddr::V6(a)).collect(),
            proxidor::Payload::Unknown(..) => Vec::new(),
        })
        .collect()
}

const SOURCE: IpAddr = IpAddr::V4(Ipv4Addr::new(100, 64, 0, 9));

fn ecs_body(srcs: &[IpAddr], dsts: &[IpAddr]) -> Value {
    json!({
        "cost-type": {"cost-mode": "numerical", "cost-metric": "routingcost"},
        "endpoints": {
            "srcs": srcs.iter().map(|a| typed(*a)).collect::<Vec<_>>(),
            "dsts": dsts.iter().map(|a| typed(*a)).collect::<Vec<_>>(),
        },
    })
}

#[test]
fn alto_serves_every_resource_from_the_proxidor_snapshot() {
    let dir = Scratch::new("resources");
    let cfg = small_config();
    let s = serve(&dir, &cfg, &["--metrics", "127.0.0.1:0"]);
    let client = Client::new(None, None).unwrap();
    let base = HttpUrl::parse(&s.alto).unwrap();
    let at = |p: &str| base.join(p).unwrap();

    let ird = get(&client, &base, alto::DIRECTORY);
    shape::directory(&ird, true).unwrap();
    let nm = get(&client, &at("/alto/networkmap"), alto::NETWORK_MAP);
    shape::network_map(&nm).unwrap();
    let vtag = nm["meta"]["vtag"]["tag"].as_str().unwrap().to_owned();
    // Every IRD entry answers with its media type (GET ones here, POST ones below).
    for (id, e) in ird["resources"].as_object().unwrap() {
        if e.get("accepts").is_none() {
            let v = get(
                &client,
                &at(e["uri"].as_str().unwrap()),
                e["media-type"].as_str().unwrap(),
            );
            if e["media-type"] == alto::COST_MAP {
                shape::cost_map(&v).unwrap();
                // §11.2.3.6: the network map's vtag as the one dependent vtag.
                assert_eq!(
                    v["meta"]["dependent-vtags"][0]["tag"],
                    vtag.as_str(),
                    "{id}"
                );
            }
        }
    }

    // The endpoint cost service ranks as the Proxidor server does, from the same snapshot.
    let cands = candidates(&cfg);
    let ecs_url = at("/alto/endpointcost/lookup");
    let v = post(
        &client,
        &ecs_url,
        alto::ENDPOINT_COST_PARAMS,
        alto::ENDPOINT_COST,
        &ecs_body(&[SOURCE], &cands),
    );
    shape::endpoint_cost(&v).unwrap();
    let row = v["endpoint-cost-map"][typed(SOURCE)].as_object().unwrap();
    assert_eq!(row.len(), 98, "the two unplaceable candidates have no cost");
    let mut ranked: Vec<(f64, usize, IpAddr)> = cands
        .iter()
        .enumerate()
        .map(|(i, a)| {
            (
                row.get(&typed(*a))
                    .and_then(Value::as_f64)
                    .unwrap_or(f64::INFINITY),
                i,
                *a,
            )
        })
        .collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let ours: Vec<IpAddr> = ranked.iter().map(|r| r.2).collect();
    assert_eq!(ours, proxidor_order(s.udp, SOURCE, &cands));

    // Filtered maps; unknown PIDs are ignored (§11.3.1.6), not refused.
    let pids: Vec<&String> = nm["network-map"].as_object().unwrap().keys().collect();
    let src_pid = pids.iter().find(|p| p.starts_with("src-")).unwrap();
    let f = post(
        &client,
        &at("/alto/networkmap/filtered"),
        alto::NETWORK_MAP_FILTER,
        alto::NETWORK_MAP,
        &json!({"pids": [src_pid, "no-such-pid"]}),
    );
    assert_eq!(f["network-map"].as_object().unwrap().len(), 1);
    assert_eq!(
        f["network-map"][src_pid.as_str()],
        nm["network-map"][src_pid.as_str()]
    );
    assert_eq!(f["meta"]["vtag"]["tag"], vtag.as_str());
    let fc = post(
        &client,
        &at("/alto/costmap/filtered"),
        alto::COST_MAP_FILTER,
        alto::COST_MAP,
        &json!({"cost-type": {"cost-mode": "ordinal", "cost-metric": "hopcount"},
                "pids": {"srcs": [src_pid], "dsts": []}, "constraints": ["le 2"]}),
    );
    shape::cost_map(&fc).unwrap();
    let fc_row = fc["cost-map"][src_pid.as_str()].as_object().unwrap();
    assert!(!fc_row.is_empty() && fc_row.values().all(|c| c.as_u64().unwrap() <= 2));

    // Endpoint properties: the PID from the network map, the path from the source.
    let eps = post(
        &client,
        &at("/alto/endpointprop/lookup"),
        alto::ENDPOINT_PROP_PARAMS,
        alto::ENDPOINT_PROP,
        &json!({"properties": ["networkmap.pid", "priv:pathwise-hops"], "endpoints": [typed(SOURCE), "ipv4:127.0.0.7"]}),
    );
    shape::endpoint_properties(&eps).unwrap();
    assert_eq!(eps["meta"]["dependent-vtags"][0]["tag"], vtag.as_str());
    assert_eq!(
        eps["endpoint-properties"][typed(SOURCE)]["networkmap.pid"],
        src_pid.as_str()
    );
    assert_eq!(
        eps["endpoint-properties"]["ipv4:127.0.0.7"]["networkmap.pid"],
        "default"
    );

    // Refusals: status, media type and §8.5.2 code exactly.
    let err = |(status, media, body): (u16, String, String)| -> (u16, Value) {
        if status == 400 || status == 415 {
            assert_eq!(media, alto::ERROR_MEDIA_TYPE);
        }
        (status, serde_json::from_str(&body).unwrap_or(Value::Null))
    };
    let (st, e) = err(raw(
        &client,
        &ecs_url,
        "POST",
        Some(alto::ENDPOINT_COST_PARAMS),
        None,
        "{\"cost-type\":",
    ));
    assert_eq!((st, e["meta"]["code"].as_str()), (400, Some("E_SYNTAX")));
    assert!(
        e["meta"]["syntax-error"]
            .as_str()
            .unwrap()
            .contains("line 1")
    );
    let (st, e) = err(raw(
        &client,
        &ecs_url,
        "POST",
        Some("application/json"),
        None,
        "{}",
    ));
    assert_eq!((st, e["meta"]["code"].as_str()), (415, Some("E_SYNTAX")));
    let (st, e) = err(raw(
        &client,
        &ecs_url,
        "POST",
        Some(alto::ENDPOINT_COST_PARAMS),
        None,
        r#"{"cost-type": {"cost-mode": "numerical", "cost-metric": "delay"}, "endpoints": {"dsts": ["ipv4:1.2.3.4"]}}"#,
    ));
    assert_eq!(st, 400);
    assert_eq!(
        e,
        json!({"meta": {"code": "E_INVALID_FIELD_VALUE", "field": "cost-type/cost-metric", "value": "delay"}})
    );
    let (st, e) = err(raw(
        &client,
        &ecs_url,
        "POST",
        Some(alto::ENDPOINT_COST_PARAMS),
        None,
        r#"{"cost-type": {"cost-mode": "numerical", "cost-metric": "hopcount"}}"#,
    ));
    assert_eq!(st, 400);
    assert_eq!(
        e,
        json!({"meta": {"code": "E_MISSING_FIELD", "field": "endpoints"}})
    );
    let (st, e) = err(raw(
        &client,
        &at("/alto/networkmap/filtered"),
        "POST",
        Some(alto::NETWORK_MAP_FILTER),
        None,
        r#"{"pids": "PID1"}"#,
    ));
    assert_eq!(st, 400);
    assert_eq!(
        e,
        json!({"meta": {"code": "E_INVALID_FIELD_TYPE", "field": "pids"}})
    );
    let (st, _, _) = raw(
        &client,
        &at("/alto/networkmap"),
        "GET",
        None,
        Some("application/alto-costmap+json"),
        "",
    );
    assert_eq!(st, 406);
    let (st, _, _) = raw(&client, &at("/alto/nothing"), "GET", None, None, "");
    assert_eq!(st, 404);
    let (st, _, _) = raw(
        &client,
        &at("/alto/costmap/num/delay"),
        "GET",
        None,
        None,
        "",
    );
    assert_eq!(st, 404);
    let (st, _, _) = raw(&client, &ecs_url, "GET", None, None, "");
    assert_eq!(st, 405);

    // The console counts what happened.
    let out = Command::new(BIN)
        .args(["oracle", "show", "counters", "--socket"])
        .arg(&s.socket)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("resource endpoint_cost"), "{text}");
    let counted = |reason: &str| {
        text.lines()
            .find_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
                ["reason", r, n] if r == reason => n.parse::<u64>().ok(),
                _ => None,
            })
            .unwrap_or(0)
    };
    for (reason, n) in [
        ("E_SYNTAX", 1),
        ("E_INVALID_FIELD_VALUE", 1),
        ("E_MISSING_FIELD", 1),
        ("E_INVALID_FIELD_TYPE", 1),
        ("unsupported_media_type", 1),
        ("not_acceptable", 1),
        ("not_found", 2),
        ("method_not_allowed", 1),
    ] {
        assert_eq!(counted(reason), n, "{reason}: {text}");
    }
    // And the metrics page.
    let metrics = HttpUrl::parse(s.metrics.as_deref().expect("metrics served")).unwrap();
    let (st, _, page) = raw(&client, &metrics, "GET", None, Some("text/plain"), "");
    assert_eq!(st, 200);
    for line in [
        "pathwise_oracle_alto_requests_total{resource=\"endpoint_cost\"} 5",
        "pathwise_oracle_alto_refusals_total{reason=\"E_SYNTAX\"} 1",
        "pathwise_oracle_alto_refusals_total{reason=\"unsupported_media_type\"} 1",
        "pathwise_oracle_alto_streams_open 0",
    ] {
        assert!(page.contains(line), "{line} not in\n{page}");
    }

    // The same through curl, when it is there.
    if Command::new("curl").arg("--version").output().is_err() {
        eprintln!("SKIPPED the curl part: curl is not installed");
        return;
    }
    let out = Command::new("curl")
        .args([
            "-sS",
            "-H",
            &format!("Content-Type: {}", alto::ENDPOINT_COST_PARAMS),
        ])
        .args([
            "-H",
            &format!("Accept: {},{}", alto::ENDPOINT_COST, alto::ERROR_MEDIA_TYPE),
        ])
        .args([
            "-d",
            &ecs_body(&[SOURCE], &cands).to_string(),
            ecs_url.to_string().as_str(),
        ])
        .output()
        .unwrap();
    let curl_v: Value = serde_json::from_slice(&out.stdout).expect("curl got JSON");
    assert_eq!(curl_v, v);
    let out = Command::new("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code} %{content_type}",
        ])
        .args([
            "-H",
            "Content-Type: application/alto-endpointcostparams+json",
            "-d",
            "[]",
            ecs_url.to_string().as_str(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "400 application/alto-error+json"
    );
}

#[test]
fn the_command_line_client_queries_the_server() {
    let dir = Scratch::new("cli");
    let cfg = small_config();
    let s = serve(&dir, &cfg, &[]);
    let cands = candidates(&cfg);
    let run = |args: &[&str]| {
        let out = Command::new(BIN)
            .args(["oracle", "alto"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let mut args = vec![
        "ecs".to_string(),
        s.alto.clone(),
        "--src".into(),
        SOURCE.to_string(),
    ];
    args.extend(cands.iter().map(|a| a.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let text = run(&refs);
    // The listed order is the Proxidor order.
    let listed: Vec<IpAddr> = text
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter_map(alto::types::parse_typed_addr)
        .collect();
    assert_eq!(listed, proxidor_order(s.udp, SOURCE, &cands), "{text}");
    let nm: Value = serde_json::from_str(&run(&["map", &s.alto, "--json"])).unwrap();
    shape::network_map(&nm).unwrap();
    let text = run(&["map", &s.alto]);
    assert!(text.starts_with("network map networkmap (vtag "), "{text}");
    assert!(text.contains("default "), "{text}");
    let cm: Value = serde_json::from_str(&run(&[
        "cost",
        &s.alto,
        "--metric",
        "hopcount",
        "--ordinal",
        "--json",
    ]))
    .unwrap();
    shape::cost_map(&cm).unwrap();
    assert_eq!(
        cm["meta"]["cost-type"],
        json!({"cost-mode": "ordinal", "cost-metric": "hopcount"})
    );
    // A server that is not there: an error, not a panic.
    let out = Command::new(BIN)
        .args(["oracle", "alto", "map", "http://127.0.0.1:1/alto"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("connecting to 127.0.0.1:1"));
}

#[test]
fn an_update_stream_sees_the_merge_patch_of_a_console_change() {
    let dir = Scratch::new("sse");
    let cfg = small_config();
    let s = serve(&dir, &cfg, &[]);
    let client = Client::new(None, None).unwrap();
    let base = HttpUrl::parse(&s.alto).unwrap();
    let updates = base.join("/alto/updates").unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<(String, String)>();
    let watcher = {
        let (client, updates) = (client.clone(), updates.clone());
        std::thread::spawn(move || {
            rt().block_on(client.watch(
                &updates,
                &json!({"add": {"n": {"resource-id": "networkmap"},
                                "c": {"resource-id": "costmap-num-routingcost"}}}),
                |e, d| tx.send((e.to_owned(), d.to_owned())).is_ok(),
            ))
        })
    };
    let next = || rx.recv_timeout(Duration::from_secs(10)).expect("an event");
    let (e, d) = next();
    assert_eq!(e, alto::UPDATE_STREAM_CONTROL, "§6.7.1: control first");
    let control_uri = serde_json::from_str::<Value>(&d).unwrap()["control-uri"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut docs = std::collections::HashMap::new();
    for _ in 0..2 {
        let (e, d) = next();
        let (media, sid) = e.split_once(',').unwrap();
        assert!(media == alto::NETWORK_MAP || media == alto::COST_MAP, "{e}");
        docs.insert(sid.to_owned(), serde_json::from_str::<Value>(&d).unwrap());
    }
    // A second stream whose client has the current network map (§6.5: no first full
    // replacement) and wants full replacements, not patches.
    let vtag = docs["n"]["meta"]["vtag"]["tag"]
        .as_str()
        .unwrap()
        .to_owned();
    let (tx2, rx2) = std::sync::mpsc::channel::<(String, String)>();
    let _full_watcher = {
        let (client, updates) = (client.clone(), updates.clone());
        std::thread::spawn(move || {
            rt().block_on(client.watch(
                &updates,
                &json!({"add": {"m": {"resource-id": "networkmap", "tag": vtag,
                                      "incremental-changes": false}}}),
                |e, d| tx2.send((e.to_owned(), d.to_owned())).is_ok(),
            ))
        })
    };
    let next2 = || rx2.recv_timeout(Duration::from_secs(10)).expect("an event");
    assert_eq!(next2().0, alto::UPDATE_STREAM_CONTROL);
    // The stream is registered once the control event came; wait until the server counts it.
    let t = Instant::now();
    while !String::from_utf8_lossy(
        &Command::new(BIN)
            .args(["oracle", "show", "counters", "--socket"])
            .arg(&s.socket)
            .output()
            .unwrap()
            .stdout,
    )
    .contains("2 opened, 2 open")
    {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "the second stream never opened"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // A change through the console: a new external network at an exit.
    let exit = cfg.external_networks[0].router.to_string();
    let out = Command::new(BIN)
        .args([
            "oracle",
            "create",
            "external-network",
            "203.0.113.0/24",
            &exit,
            "0",
            "64500",
            "1",
            "--socket",
        ])
        .arg(&s.socket)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // §6.7.1: the network map's patch before the cost map's.
    let (e, d) = next();
    assert_eq!(e, format!("{},n", alto::MERGE_PATCH));
    patch::apply(
        docs.get_mut("n").unwrap(),
        &serde_json::from_str(&d).unwrap(),
    );
    let (e, d) = next();
    assert_eq!(e, format!("{},c", alto::MERGE_PATCH));
    patch::apply(
        docs.get_mut("c").unwrap(),
        &serde_json::from_str(&d).unwrap(),
    );
    // The patched documents are the server's current ones.
    let nm = get(
        &client,
        &base.join("/alto/networkmap").unwrap(),
        alto::NETWORK_MAP,
    );
    assert_eq!(docs["n"], nm);
    assert!(nm.to_string().contains("203.0.113.0/24"));
    let cm = get(
        &client,
        &base.join("/alto/costmap/num/routingcost").unwrap(),
        alto::COST_MAP,
    );
    assert_eq!(docs["c"], cm);
    // The second stream got the new map whole, and nothing before it.
    let (e, d) = next2();
    assert_eq!(e, format!("{},m", alto::NETWORK_MAP));
    assert_eq!(serde_json::from_str::<Value>(&d).unwrap(), nm);

    // Stream control (§7): an unknown substream is refused, removing both closes the stream.
    let control = base.join(&control_uri).unwrap();
    let (st, _, body) = raw(
        &client,
        &control,
        "POST",
        Some(alto::UPDATE_STREAM_PARAMS),
        None,
        r#"{"remove": ["zz"]}"#,
    );
    assert_eq!(st, 400);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"meta": {"code": "E_INVALID_FIELD_VALUE", "field": "remove", "value": "[\"zz\"]"}})
    );
    let (st, _, _) = raw(
        &client,
        &control,
        "POST",
        Some(alto::UPDATE_STREAM_PARAMS),
        None,
        r#"{"remove": ["n", "c"]}"#,
    );
    assert_eq!(st, 204);
    let (e, d) = next();
    assert_eq!(e, alto::UPDATE_STREAM_CONTROL);
    assert_eq!(
        serde_json::from_str::<Value>(&d).unwrap()["stopped"],
        json!(["n", "c"])
    );
    watcher.join().unwrap().expect("the stream ends cleanly");
    let t = Instant::now();
    loop {
        let (st, _, _) = raw(
            &client,
            &control,
            "POST",
            Some(alto::UPDATE_STREAM_PARAMS),
            None,
            r#"{"remove": []}"#,
        );
        if st == 404 {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "the control URI outlived its stream"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Opening without "add" is E_MISSING_FIELD "add" (RFC 8895 §6.6).
    let (st, _, body) = raw(
        &client,
        &updates,
        "POST",
        Some(alto::UPDATE_STREAM_PARAMS),
        None,
        "{}",
    );
    assert_eq!(
        (st, serde_json::from_str::<Value>(&body).unwrap()),
        (
            400,
            json!({"meta": {"code": "E_MISSING_FIELD", "field": "add"}})
        )
    );
    let (st, _, body) = raw(
        &client,
        &updates,
        "POST",
        Some(alto::UPDATE_STREAM_PARAMS),
        None,
        r#"{"add": {"x": {"resource-id": "endpoint-cost"}}}"#,
    );
    assert_eq!(st, 400);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["meta"]["field"],
        "add/x/resource-id"
    );
}

fn openssl_cert(dir: &Scratch) -> Option<(PathBuf, PathBuf)> {
    let (cert, key) = (dir.path("cert.pem"), dir.path("key.pem"));
    let ok = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-addext",
            "basicConstraints=critical,CA:FALSE",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some((cert, key))
}

#[test]
fn tls_and_basic_authentication_guard_the_server() {
    let dir = Scratch::new("tls");
    let Some((cert, key)) = openssl_cert(&dir) else {
        eprintln!("SKIPPED: openssl is not installed (it makes the test certificate)");
        return;
    };
    let users = dir.path("users");
    std::fs::write(
        &users,
        format!("alice:{}\n", bcrypt::hash("s3cret", 4).unwrap()),
    )
    .unwrap();
    let cfg = small_config();
    let path = |p: &Path| p.to_str().unwrap().to_owned();
    let s = serve(
        &dir,
        &cfg,
        &[
            "--alto-tls-cert",
            &path(&cert),
            "--alto-tls-key",
            &path(&key),
            "--alto-auth",
            &path(&users),
        ],
    );
    assert!(s.alto.starts_with("https://127.0.0.1:"), "{}", s.alto);
    let base = HttpUrl::parse(&s.alto).unwrap();
    let good = Client::new(Some(&cert), Some("alice:s3cret")).unwrap();
    let ird = get(&good, &base, alto::DIRECTORY);
    shape::directory(&ird, true).unwrap();
    for (who, client) in [
        ("nobody", Client::new(Some(&cert), None).unwrap()),
        (
            "a wrong password",
            Client::new(Some(&cert), Some("alice:guess")).unwrap(),
        ),
    ] {
        let (st, _, _) = raw(&client, &base, "GET", None, None, "");
        assert_eq!(st, 401, "{who}");
    }
    // A client that does not trust the certificate does not get through.
    let untrusting = Client::new(None, Some("alice:s3cret")).unwrap();
    assert!(
        rt().block_on(untrusting.get(&base, alto::DIRECTORY))
            .is_err()
    );
    // Plain HTTP to the TLS port gets no HTTP answer.
    let plain = HttpUrl {
        tls: false,
        ..base.clone()
    };
    assert!(
        rt().block_on(async {
            let mut c = good.connect(&plain).await?;
            let r = c
                .request(
                    axum::http::Method::GET,
                    "/alto",
                    None,
                    "*/*",
                    Default::default(),
                )
                .await?;
            json_body(&plain, r).await
        })
        .is_err()
    );
    // The command-line client over https with the CA and the credentials.
    let out = Command::new(BIN)
        .args([
            "oracle",
            "alto",
            "map",
            &s.alto,
            "--json",
            "--user",
            "alice:s3cret",
            "--cacert",
        ])
        .arg(&cert)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    shape::network_map(&serde_json::from_slice(&out.stdout).unwrap()).unwrap();
}
