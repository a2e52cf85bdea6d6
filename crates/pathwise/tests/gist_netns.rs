//! GIST on a real Linux network (issue 6): five namespaces H1 – R1 – R2 – R3 – H2 with
//! forwarding on (IPv4 and IPv6), a `pathwise daemon` with `[gist]` on the nodes a test picks,
//! driven through the CLI (`pathwise gist ping`, `pathwise gist show`). Needs root and `ip`
//! (and `tshark` for the dissector check, skipped with a message without it); each test prints
//! why and passes when something is missing. Every namespace is deleted when its test ends.

mod common;

use common::netns::{bin, capture, json_cli, serial, skip};
use pathwise::gist::chain::{self as gist_chain, H1, H2, H2_V4, H2_V6, NODES, Options, R1, R2, R3};
use pathwise::netns::{Lab, unavailable, wait_for};
use serde_json::Value;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn chain(o: &Options<'_>) -> Lab {
    gist_chain::build(Path::new(bin()), o).expect("build the GIST chain")
}

/// `pathwise gist --json …` against node `i`'s daemon, run in node `i`.
fn cli(lab: &Lab, i: usize, args: &[&str]) -> anyhow::Result<Value> {
    json_cli(lab, i, "gist", &gist_chain::socket(lab, i), args)
}

/// Ping `dest` from H1 `count` times over UDP; the replies (a lost ping fails the call).
fn ping(lab: &Lab, dest: &str, count: u32) -> Vec<Value> {
    ping_over(lab, dest, count, "udp")
}

/// Ping `dest` from H1 `count` times in one session over `transport`.
fn ping_over(lab: &Lab, dest: &str, count: u32, transport: &str) -> Vec<Value> {
    let n = count.to_string();
    let v = cli(
        lab,
        H1,
        &[
            "ping",
            dest,
            "--count",
            &n,
            "--interval",
            "100ms",
            "--transport",
            transport,
        ],
    )
    .unwrap_or_else(|e| panic!("ping {dest}: {e}\nlogs:\n{}", logs(lab)));
    let replies = v["replies"].as_array().cloned().unwrap_or_default();
    assert_eq!(v["summary"]["received"], count, "{v:#}\n{}", logs(lab));
    replies
}

/// A load run from H1 to H2 over UDP unless `args` say otherwise (`gist ping H2 --sessions …`),
/// which must finish; its report.
fn load_run(lab: &Lab, args: &[&str]) -> Value {
    let all = [&["ping", H2_V4][..], args].concat();
    let v = cli(lab, H1, &all).unwrap_or_else(|e| panic!("{args:?}: {e}\n{}", logs(lab)));
    assert_eq!(v["done"], true, "{v:#}");
    v
}

/// The nodes a reply's path names.
fn path_nodes(reply: &Value) -> Vec<&'static str> {
    reply["path"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            let a: IpAddr = a.as_str().unwrap().parse().unwrap();
            gist_chain::owner(a).map_or("?", |n| NODES[n])
        })
        .collect()
}

fn logs(lab: &Lab) -> String {
    NODES
        .iter()
        .map(|n| format!("--- {n}\n{}", tail(&lab.log(n), 30)))
        .collect()
}

fn tail(s: &str, lines: usize) -> String {
    let v: Vec<&str> = s.lines().collect();
    v[v.len().saturating_sub(lines)..].join("\n")
}

fn counters(lab: &Lab, i: usize) -> Value {
    cli(lab, i, &["show", "counters"]).expect("gist show counters")
}

/// tshark capturing GIST (UDP and TCP) on both interfaces of router `i`, into the lab's
/// scratch directory; `None` (with a message) without tshark.
fn start_capture(lab: &mut Lab, i: usize) -> Option<PathBuf> {
    if unavailable(&["tshark"]).is_some() {
        println!("tshark is not installed: the dissector check is skipped");
        return None;
    }
    let pcap = capture(lab, "tshark", i, &["w0", "e0"], "udp or tcp", "gist.pcapng")
        .expect("tshark started");
    Some(pcap)
}

/// Decode `pcap` with contrib/wireshark/gist.lua: every GIST packet (UDP or TCP port 270, and
/// what the dissector's heuristics claim) decodes with no malformed packet and no expert error
/// or GIST warning. Returns the number of GIST messages seen.
fn check_capture(lab: &mut Lab, pcap: &Path) -> usize {
    std::thread::sleep(Duration::from_millis(300));
    lab.terminate("tshark", Duration::from_secs(10))
        .expect("stop tshark");
    let lua = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contrib/wireshark/gist.lua");
    let home = lab.path("tshark-home");
    std::fs::create_dir_all(&home).unwrap();
    let run = |args: &[&str]| -> String {
        let out = std::process::Command::new("tshark")
            .env("HOME", &home)
            .env_remove("XDG_CONFIG_HOME")
            .args(["-n", "-X", &format!("lua_script:{}", lua.display()), "-r"])
            .arg(pcap)
            .args(args)
            .output()
            .expect("run tshark");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "tshark {args:?}: {stderr}");
        for bad in ["Lua Error", "Lua: Error", "Dissector bug", "Malformed"] {
            assert!(!stderr.contains(bad), "tshark stderr has {bad:?}: {stderr}");
            assert!(!stdout.contains(bad), "tshark output has {bad:?}");
        }
        stdout
    };
    let verbose = run(&["-V"]);
    let messages = verbose
        .lines()
        .filter(|l| l.starts_with("General Internet Signalling Transport"))
        .count();
    // Every frame to or from port 270 carries at least one GIST message the dissector shows.
    let frames = run(&[
        "-Y",
        "udp.port == 270 && !gist",
        "-T",
        "fields",
        "-e",
        "frame.number",
    ]);
    assert!(
        frames.trim().is_empty(),
        "UDP 270 frames without GIST: {frames}"
    );
    let experts = run(&["-q", "-z", "expert,error", "-z", "expert,warn"]);
    assert!(!experts.contains("Errors ("), "expert errors:\n{experts}");
    for line in experts.lines() {
        let protocol = line.split_whitespace().nth(2).unwrap_or_default();
        assert!(
            protocol != "GIST" && protocol != "NSLP_PING",
            "expert warning: {line}"
        );
    }
    messages
}

#[test]
fn ping_over_udp_records_every_aware_node_ipv4_and_ipv6() {
    let test = "ping_over_udp_records_every_aware_node_ipv4_and_ipv6";
    if skip(test, &["sysctl"]) {
        return;
    }
    let _g = serial();
    let mut lab = chain(&Options::default());
    let pcap = start_capture(&mut lab, R2);
    for dest in [H2_V4, H2_V6] {
        let replies = ping(&lab, dest, 3);
        for r in &replies {
            assert_eq!(
                path_nodes(r),
                ["r1", "r2", "r3", "h2"],
                "{dest}: {r}\n{}",
                logs(&lab)
            );
            assert!(r["rtt_ms"].as_f64().unwrap() > 0.0);
        }
        // Later pings ride the state the first set up: same session.
        assert_eq!(replies[0]["session"], replies[2]["session"]);
    }
    // Every aware node holds routing state for both sessions; R2 peers with R1 and R3.
    let mrs = cli(&lab, R2, &["show", "mrs"]).unwrap();
    let mrs = mrs.as_array().unwrap();
    assert_eq!(mrs.len(), 2, "{mrs:?}");
    for s in mrs {
        assert_eq!(s["downstream"]["state"], "Established", "{s}");
        assert_eq!(s["upstream"]["state"], "Established", "{s}");
        let owner = |v: &Value| {
            v.as_str()
                .and_then(|a| a.parse().ok())
                .and_then(gist_chain::owner)
        };
        assert_eq!(owner(&s["upstream"]["peer"]), Some(R1), "{s}");
        assert_eq!(owner(&s["downstream"]["peer"]), Some(R3), "{s}");
    }
    let c = counters(&lab, R2);
    assert!(c["messages_in"]["Query"].as_u64().unwrap() >= 2, "{c:#}");
    assert_eq!(c["mas"], 0);
    if let Some(pcap) = pcap {
        let n = check_capture(&mut lab, &pcap);
        // Two handshakes (Query, Response, Confirm) on each of R2's links, plus the pings.
        assert!(n >= 12, "only {n} GIST messages captured");
    }
}

/// The Router Alert values tshark saw on GIST's UDP port in `pcap` (IPv4 and IPv6; MLD's own
/// Router Alert packets aside), one per packet that had one.
fn router_alert_values(pcap: &Path) -> Vec<u16> {
    let out = std::process::Command::new("tshark")
        .args(["-n", "-r"])
        .arg(pcap)
        .args(["-Y", "udp.port == 270", "-T", "fields"])
        .args(["-e", "ip.opt.ra", "-e", "ipv6.opt.router_alert"])
        .output()
        .expect("run tshark");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .flat_map(|f| f.split(','))
        .filter_map(|v| v.parse().ok())
        .collect()
}

/// RFC 5971 §5.3.2: a Query carries the Router Alert value of its NSLP. With the Ping NSLP's
/// NSLPID mapped to 42 on every node (NSIS-ka's convention for its test NSLP), every pathwise
/// router still takes the Queries off the path over IPv4 and IPv6 — Linux's Router Alert
/// sockets would divert only IPv4 value 0 — through the netfilter queue; with
/// `interception = "socket"` the same Queries cross the routers unseen.
#[test]
fn queries_with_router_alert_42_are_intercepted_through_netfilter() {
    let test = "queries_with_router_alert_42_are_intercepted_through_netfilter";
    if skip(test, &["sysctl", "iptables", "ip6tables"]) {
        return;
    }
    let _g = serial();
    let mut lab = chain(&Options {
        extra: "interception = \"netfilter\"\nrouter_alert = { 32704 = 42 }".into(),
        ..Options::default()
    });
    let pcap = start_capture(&mut lab, R2);
    for dest in [H2_V4, H2_V6] {
        for r in ping(&lab, dest, 2) {
            assert_eq!(
                path_nodes(&r),
                ["r1", "r2", "r3", "h2"],
                "{dest}: {r}\n{}",
                logs(&lab)
            );
        }
    }
    let c = counters(&lab, R2);
    assert_eq!(c["interception"], "netfilter", "{c:#}");
    assert!(
        c["transit"]["intercepted"].as_u64().unwrap() >= 2,
        "one Query per family at least: {c:#}"
    );
    if let Some(pcap) = pcap {
        check_capture(&mut lab, &pcap);
        let values = router_alert_values(&pcap);
        assert!(
            !values.is_empty() && values.iter().all(|&v| v == 42),
            "every Router Alert on R2's links is 42: {values:?}"
        );
    }
    drop(lab);

    let lab = chain(&Options {
        extra: "interception = \"socket\"\nrouter_alert = { 32704 = 42 }".into(),
        ..Options::default()
    });
    for dest in [H2_V4, H2_V6] {
        for r in ping(&lab, dest, 1) {
            assert_eq!(path_nodes(&r), ["h2"], "{dest}: routers skipped: {r}");
        }
    }
    assert_eq!(counters(&lab, R2)["interception"], "socket");
}

#[test]
fn a_router_without_gist_forwards_queries_transparently() {
    let test = "a_router_without_gist_forwards_queries_transparently";
    if skip(test, &["sysctl"]) {
        return;
    }
    let _g = serial();
    let mut gist = [true; 5];
    gist[R2] = false;
    let lab = chain(&Options {
        gist,
        ..Options::default()
    });
    for dest in [H2_V4, H2_V6] {
        for r in ping(&lab, dest, 2) {
            assert_eq!(path_nodes(&r), ["r1", "r3", "h2"], "{dest}: {r}");
        }
    }
    // R1's downstream peer is R3, two IP hops away.
    let mrs = cli(&lab, R1, &["show", "mrs"]).unwrap();
    for s in mrs.as_array().unwrap() {
        let peer: IpAddr = s["downstream"]["peer"].as_str().unwrap().parse().unwrap();
        assert_eq!(gist_chain::owner(peer), Some(R3), "{s}");
    }
}

/// `[gist] expected_sessions` gives the engine its tables' room at start-up: H2, told to
/// expect 100,000 sessions, holds their room (`state_bytes`) before the first one, and the
/// sessions still work; H1, told nothing, holds next to nothing.
#[test]
fn expected_sessions_make_the_tables_room_at_start_up() {
    let test = "expected_sessions_make_the_tables_room_at_start_up";
    if skip(test, &["sysctl"]) {
        return;
    }
    let _g = serial();
    let mut node_extra = [""; 5];
    node_extra[H2] = "expected_sessions = 100000";
    let lab = chain(&Options {
        node_extra,
        ..Options::default()
    });
    let bytes = |i: usize| counters(&lab, i)["state_bytes"].as_u64().unwrap();
    assert!(bytes(H2) > 100_000 * 100, "H2 holds {} B", bytes(H2));
    assert!(bytes(H1) < 1_000_000, "H1 holds {} B", bytes(H1));
    for r in ping(&lab, H2_V4, 2) {
        assert_eq!(path_nodes(&r), ["r1", "r2", "r3", "h2"], "{r}");
    }
}

/// Under load a daemon holds off between wake-ups (`[daemon] receive_hold`) and must then read
/// everything that arrived meanwhile, not one `recvmmsg` batch (32 datagrams) per wake-up: at
/// 8,000 pings a second and the longest hold, 5 ms, 40 arrive per hold in each direction, and a
/// daemon reading one batch per wake-up falls behind and loses pings to its full socket. (The
/// Ping NSLP keeps one outstanding ping per session, so each session is pinged only every
/// 250 ms, far longer than a round trip through two holding daemons.)
#[test]
fn a_holding_daemon_reads_everything_that_arrived_during_the_hold() {
    let test = "a_holding_daemon_reads_everything_that_arrived_during_the_hold";
    if skip(test, &["sysctl"]) {
        return;
    }
    let _g = serial();
    let lab = chain(&Options {
        // The routers forward IP only: the pings' two ends hold.
        gist: [true, false, false, false, true],
        log: "info",
        receive_hold: Some("5ms".parse().unwrap()),
        ..Options::default()
    });
    let v = load_run(
        &lab,
        &[
            "--sessions",
            "2000",
            "--initial-rate",
            "2000",
            "--steady-rate",
            "8000",
            "--duration",
            "2s",
        ],
    );
    assert_eq!(v["sessions"], 2000, "{v:#}");
    assert_eq!(v["lost"], 0, "{v:#}");
    let steady = v["rtt_ms"]["count"].as_u64().unwrap_or(0);
    assert!(steady >= 15_000, "{steady} steady pings answered: {v:#}");
}

/// Sends `payloads` from H1 to `dest` port 270 over plain UDP.
fn send_udp(lab: &Lab, dest: &str, payloads: &[Vec<u8>]) {
    use nix::sched::{CloneFlags, setns};
    let ns = format!("/run/netns/{}", lab.ns[H1]);
    std::thread::scope(|s| {
        s.spawn(|| {
            let f = std::fs::File::open(&ns).expect("open netns");
            setns(&f, CloneFlags::CLONE_NEWNET).expect("setns");
            let any = if dest.contains(':') {
                "[::]:0"
            } else {
                "0.0.0.0:0"
            };
            let sock = std::net::UdpSocket::bind(any).unwrap();
            for p in payloads {
                sock.send_to(p, (dest, 270)).expect("send");
            }
        })
        .join()
        .unwrap();
    });
}

#[test]
fn garbage_truncated_and_oversize_datagrams_are_counted_and_pings_continue() {
    let test = "garbage_truncated_and_oversize_datagrams_are_counted_and_pings_continue";
    if skip(test, &["sysctl"]) {
        return;
    }
    let _g = serial();
    let lab = chain(&Options::default());
    ping(&lab, H2_V4, 1);
    let before = counters(&lab, R1);
    // A real Query's first bytes: magic number and common header, cut short.
    let mut truncated = vec![0x4e, 0x04, 0xbd, 0xa5, 0x01, 0x20, 0x00, 0x10];
    truncated.extend_from_slice(&[0x7f, 0xc0, 0x80, 0x00, 0x00, 0x00]);
    let garbage: Vec<u8> = (0..200u32).map(|i| (i * 37 % 251) as u8).collect();
    let oversize = vec![0x4e; 10_000];
    send_udp(&lab, "10.91.1.2", &[garbage, truncated, oversize]);
    let later = ping(&lab, H2_V4, 2);
    assert_eq!(path_nodes(&later[1]), ["r1", "r2", "r3", "h2"]);
    let after = wait_for(Duration::from_secs(5), "three drops at R1", || {
        let c = counters(&lab, R1);
        let total = |c: &Value| -> u64 {
            c["drops"]
                .as_object()
                .map_or(0, |d| d.values().filter_map(Value::as_u64).sum())
        };
        (total(&c) >= total(&before) + 3).then_some(c)
    })
    .unwrap_or_else(|e| panic!("{e}: {:#}", counters(&lab, R1)));
    // Each by its reason: the engine's (no magic number, a length the datagram does not
    // have) and the socket's (bigger than any GIST datagram it accepts).
    let drops = after["drops"].as_object().unwrap();
    for reason in ["bad_magic", "incorrect_length", "oversize"] {
        let n = |c: &Value| c["drops"][reason].as_u64().unwrap_or(0);
        assert_eq!(n(&after), n(&before) + 1, "{reason}: {drops:?}");
    }
    // The bad datagrams left no state: one routing state per ping session.
    assert_eq!(after["routing_states"], 2, "{after:#}");
}

/// The messaging associations of node `i`: peer node → users.
fn associations(lab: &Lab, i: usize) -> Vec<(&'static str, u64)> {
    let v = cli(lab, i, &["show", "ma"]).expect("gist show ma");
    let mut out: Vec<(&'static str, u64)> = v["associations"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            let peer: IpAddr = m["peer"].as_str().unwrap().parse().unwrap();
            (
                gist_chain::owner(peer).map_or("?", |n| NODES[n]),
                m["users"].as_u64().unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn ping_over_tcp_many_sessions_share_one_association_per_peer() {
    let test = "ping_over_tcp_many_sessions_share_one_association_per_peer";
    if skip(test, &["sysctl"]) {
        return;
    }
    let _g = serial();
    let mut lab = chain(&Options::default());
    let pcap = start_capture(&mut lab, R2);
    const SESSIONS: u64 = 4;
    for _ in 0..SESSIONS {
        for r in ping_over(&lab, H2_V4, 2, "tcp") {
            assert_eq!(path_nodes(&r), ["r1", "r2", "r3", "h2"], "{r}");
        }
    }
    // One association per neighbour, used by every session (each session holds one half on
    // it at the ends, two at the routers: upstream and downstream).
    assert_eq!(associations(&lab, H1), [("r1", SESSIONS)]);
    assert_eq!(associations(&lab, R2), [("r1", SESSIONS), ("r3", SESSIONS)]);
    assert_eq!(associations(&lab, H2), [("r3", SESSIONS)]);
    let ma = cli(&lab, R2, &["show", "ma"]).unwrap();
    assert_eq!(ma["tcp"]["open"], 2, "{ma:#}");
    assert_eq!(
        ma["tcp"]["opened"].as_u64().unwrap() + ma["tcp"]["accepted"].as_u64().unwrap(),
        2,
        "{ma:#}"
    );
    // Every session's state on R2 runs over the associations.
    let mrs = cli(&lab, R2, &["show", "mrs"]).unwrap();
    for s in mrs.as_array().unwrap() {
        assert!(!s["downstream"]["ma"].is_null(), "{s}");
        assert!(!s["upstream"]["ma"].is_null(), "{s}");
    }
    // And over IPv6: associations of their own, one per neighbour.
    for r in ping_over(&lab, H2_V6, 2, "tcp") {
        assert_eq!(path_nodes(&r), ["r1", "r2", "r3", "h2"], "{r}");
    }
    assert_eq!(associations(&lab, H1), [("r1", 1), ("r1", SESSIONS)]);
    if let Some(pcap) = pcap {
        check_capture(&mut lab, &pcap);
    }
}

/// The messaging associations of node `i` over `transport`: peer node → users.
fn associations_over(lab: &Lab, i: usize, transport: &str) -> Vec<(&'static str, u64)> {
    let v = cli(lab, i, &["show", "ma"]).expect("gist show ma");
    let mut out: Vec<(&'static str, u64)> = v["associations"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["transport"] == transport)
        .map(|m| {
            let peer: IpAddr = m["peer"].as_str().unwrap().parse().unwrap();
            (
                gist_chain::owner(peer).map_or("?", |n| NODES[n]),
                m["users"].as_u64().unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

fn tls_chain_or_skip(test: &str, untrusted: [bool; 5]) -> Option<Lab> {
    if skip(test, &["sysctl"]) {
        return None;
    }
    if let Some(why) = unavailable(&["openssl"]) {
        println!("skipping {test}: {why} (TLS test certificates)");
        return None;
    }
    Some(chain(&Options {
        tls: true,
        untrusted,
        ..Options::default()
    }))
}

#[test]
fn ping_over_tls_many_sessions_share_one_tls_association_per_peer() {
    let test = "ping_over_tls_many_sessions_share_one_tls_association_per_peer";
    let _g = serial();
    let Some(mut lab) = tls_chain_or_skip(test, [false; 5]) else {
        return;
    };
    let pcap = start_capture(&mut lab, R2);
    const SESSIONS: u64 = 3;
    for _ in 0..SESSIONS {
        for r in ping_over(&lab, H2_V4, 2, "tls") {
            assert_eq!(path_nodes(&r), ["r1", "r2", "r3", "h2"], "{r}");
        }
    }
    // One TLS association per neighbour for every session; no plain TCP one.
    assert_eq!(associations_over(&lab, H1, "tls"), [("r1", SESSIONS)]);
    assert_eq!(
        associations_over(&lab, R2, "tls"),
        [("r1", SESSIONS), ("r3", SESSIONS)]
    );
    assert_eq!(associations_over(&lab, H2, "tls"), [("r3", SESSIONS)]);
    assert_eq!(associations_over(&lab, R2, "tcp"), []);
    let ma = cli(&lab, R2, &["show", "ma"]).unwrap();
    assert_eq!(ma["tls"]["open"], 2, "{ma:#}");
    assert_eq!(ma["tls"]["handshakes"], 2, "{ma:#}");
    assert_eq!(ma["tls"]["handshake_failures"], 0, "{ma:#}");
    // The pings crossed R2 inside TLS: its NSLP saw them, the wire did not.
    let c = counters(&lab, R2);
    assert_eq!(c["ping"]["forwarded"], 2 * SESSIONS, "{c:#}");
    assert_eq!(c["tls_refused_by_peer"], 0, "{c:#}");
    if let Some(pcap) = pcap {
        // D-mode Queries and Responses still decode (each session's Query on both links; the
        // first Responses D-mode, later ones over the open association); TLS is opaque.
        let n = check_capture(&mut lab, &pcap);
        assert!(
            n >= 2 * SESSIONS as usize,
            "only {n} GIST messages captured"
        );
    }
}

#[test]
fn a_peer_with_an_untrusted_certificate_is_refused() {
    let test = "a_peer_with_an_untrusted_certificate_is_refused";
    let _g = serial();
    let mut untrusted = [false; 5];
    untrusted[R1] = true;
    let Some(lab) = tls_chain_or_skip(test, untrusted) else {
        return;
    };
    let r = cli(
        &lab,
        H1,
        &["ping", H2_V4, "--transport", "tls", "--timeout", "2s"],
    );
    assert!(r.is_err(), "a ping over an untrusted hop came back: {r:?}");
    // H1 checked R1's certificate and refused it; R1 heard the alert.
    let h1 = cli(&lab, H1, &["show", "ma"]).unwrap();
    assert!(
        h1["tls"]["handshake_failures"].as_u64().unwrap() >= 1,
        "{h1:#}"
    );
    assert!(
        h1["tls"]["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("UnknownIssuer") || e.contains("issuer")),
        "{h1:#}"
    );
    let r1 = cli(&lab, R1, &["show", "ma"]).unwrap();
    assert!(
        r1["tls"]["handshake_failures"].as_u64().unwrap() >= 1,
        "{r1:#}"
    );
    assert_eq!(associations_over(&lab, H1, "tls"), []);
    // Nothing of the ping reached R1's NSLP, in the clear or otherwise.
    assert_eq!(counters(&lab, R1)["ping"]["forwarded"], 0);
    // Plain D-mode across the same hop still works.
    ping(&lab, H2_V4, 1);
}

#[test]
fn load_client_opens_sessions_then_pings_across_them() {
    let test = "load_client_opens_sessions_then_pings_across_them";
    let _g = serial();
    let Some(mut lab) = tls_chain_or_skip(test, [false; 5]) else {
        return;
    };
    for transport in ["udp", "tcp", "tls"] {
        let v = load_run(
            &lab,
            &[
                "--transport",
                transport,
                "--sessions",
                "20",
                "--initial-rate",
                "50",
                "--steady-rate",
                "100",
                "--duration",
                "1s",
            ],
        );
        assert_eq!(v["sessions"], 20, "{transport}: {v:#}");
        assert_eq!(v["setup_ms"]["count"], 20, "{transport}: {v:#}");
        let steady = v["rtt_ms"]["count"].as_u64().unwrap();
        assert!((90..=101).contains(&steady), "{transport}: {v:#}");
        assert_eq!(v["lost"], 0, "{transport}: {v:#}");
        let d = &v["setup_ms"];
        for k in ["min", "median", "p90", "p99", "max"] {
            assert!(d[k].as_f64().unwrap() > 0.0, "{transport} {k}: {v:#}");
        }
        assert!(d["min"].as_f64() <= d["median"].as_f64());
        assert!(d["p99"].as_f64() <= d["max"].as_f64());
    }
    // Every session of the C-mode runs shares the one association per peer.
    assert_eq!(associations_over(&lab, H1, "tcp"), [("r1", 20)]);
    assert_eq!(associations_over(&lab, H1, "tls"), [("r1", 20)]);
    // Churn (seed 001 §IV): once the 20 sessions are open, the oldest end and new ones open at
    // intervals up to 20 ms, so 10–20 stay open; a lifetime of 20 · 20 ms / 2 = 0.2 s.
    // Queries H2 has received: one per new session's routing-state setup (RFC 5971 §4.4.1).
    let queries_at_h2 = |lab: &Lab| {
        cli(lab, H2, &["show", "counters"]).expect("gist show counters")["messages_in"]["Query"]
            .as_u64()
            .unwrap_or(0)
    };
    let before = queries_at_h2(&lab);
    let v = load_run(
        &lab,
        &[
            "--sessions",
            "20",
            "--initial-rate",
            "100",
            "--steady-rate",
            "100",
            "--duration",
            "3s",
            "--churn",
            "20ms",
        ],
    );
    let c = &v["churn"];
    let ended = c["sessions_ended"].as_u64().unwrap_or(0);
    assert!((150..=450).contains(&ended), "{v:#}");
    assert!(c["min_sessions"].as_u64().unwrap_or(0) >= 10, "{v:#}");
    assert_eq!(c["max_sessions"], 20, "{v:#}");
    assert!(
        c["avg_lifetime_s"]
            .as_f64()
            .is_some_and(|l| l > 0.1 && l < 0.4),
        "{v:#}"
    );
    // Each session the churn opened is a new GIST session, set up along the path: its first
    // ping answered, and a Query of its own at H2 (refreshes of the 60 sessions of the runs
    // before add at most 60). A client that pinged old sessions again, or never sent a new
    // session's first ping, fails here.
    let opened = c["sessions_opened"].as_u64().unwrap_or(0);
    assert!((150..=450).contains(&opened), "{v:#}");
    let setups = v["setup_ms"]["count"].as_u64().unwrap_or(0);
    assert!(setups * 10 >= (20 + opened) * 9, "{v:#}");
    let queries = queries_at_h2(&lab).saturating_sub(before);
    assert!(
        queries * 10 >= (20 + opened) * 9,
        "{queries} Queries at H2: {v:#}"
    );
    // The churn is counted over its own phase: setups/s is what was opened in it over its
    // length, not over the wait for the last replies after it.
    let churn_s = c["churn_s"].as_f64().unwrap_or(0.0);
    assert!((2.9..=3.1).contains(&churn_s), "{v:#}");
    let rate = c["setups_per_s"].as_f64().unwrap_or(0.0);
    assert!((rate - opened as f64 / churn_s).abs() < 1e-6, "{v:#}");
    // The management socket stays free while a run goes on: the run answers later.
    let sock = gist_chain::socket(&lab, H1);
    let sock = sock.to_str().unwrap_or_default();
    lab.spawn(
        "load",
        H1,
        &[
            bin(),
            "gist",
            "--socket",
            sock,
            "ping",
            H2_V4,
            "--sessions",
            "5",
            "--initial-rate",
            "5",
            "--duration",
            "1s",
        ],
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let t = std::time::Instant::now();
    assert!(cli(&lab, H1, &["show", "counters"]).is_ok());
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
    wait_for(Duration::from_secs(10), "the load run", || {
        lab.log("load").contains("session setup").then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}: {}", lab.log("load")));
}

/// The chain nodes node `i`'s routing state names as peers.
fn peers(lab: &Lab, i: usize) -> Vec<&'static str> {
    let v = cli(lab, i, &["show", "mrs"]).expect("gist show mrs");
    let mut out: Vec<&'static str> = v
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| [&s["upstream"]["peer"], &s["downstream"]["peer"]])
        .filter_map(|p| p.as_str()?.parse().ok())
        .map(|a: IpAddr| gist_chain::owner(a).map_or("?", |n| NODES[n]))
        .collect();
    out.sort();
    out.dedup();
    out
}

#[test]
fn killing_a_node_expires_its_peers_state() {
    let test = "killing_a_node_expires_its_peers_state";
    if skip(test, &["sysctl"]) {
        return;
    }
    let _g = serial();
    let mut lab = chain(&Options {
        refresh: "1s",
        ..Options::default()
    });
    ping_over(&lab, H2_V4, 1, "udp");
    ping_over(&lab, H2_V4, 1, "tcp");
    assert_eq!(peers(&lab, H2), ["r3"]);
    assert_eq!(peers(&lab, R2), ["r1", "r3"]);
    assert_eq!(associations(&lab, R2), [("r1", 1), ("r3", 1)]);
    lab.kill("r3"); // SIGKILL: no teardown of any kind
    // R3 now forwards GIST like any router. Its neighbours' state with it goes: R2's
    // association with R3 closes with R3's sockets; refreshes find R2 and H2 adjacent (RFC 5971
    // §7.1.2) and H2's half with R3 lapses once R3's validity (3 refresh periods) has passed.
    wait_for(Duration::from_secs(20), "no state naming R3", || {
        (peers(&lab, H2) == ["r2"] && peers(&lab, R2) == ["h2", "r1"]).then_some(())
    })
    .unwrap_or_else(|e| {
        panic!(
            "{e}: H2 {:?} R2 {:?}\n{}",
            peers(&lab, H2),
            peers(&lab, R2),
            logs(&lab)
        )
    });
    wait_for(
        Duration::from_secs(10),
        "R2's association with R3 to close",
        || {
            associations(&lab, R2)
                .iter()
                .all(|(p, _)| *p != "r3")
                .then_some(())
        },
    )
    .unwrap_or_else(|e| panic!("{e}: {:?}", associations(&lab, R2)));
    assert!(counters(&lab, R2)["peer_changes"].as_u64().unwrap() >= 1);
    for r in ping_over(&lab, H2_V4, 1, "udp") {
        assert_eq!(path_nodes(&r), ["r1", "r2", "h2"], "{r}");
    }
}

/// `nsiska-query-rao-42-transit.pcap`: NSIS-ka's Query for its NSLP 42 carries IPv4 Router
/// Alert 42, and a GIST-aware pathwise router on the path never saw it. The exact IP packet of
/// that capture (frame 1, `tests/data/nsiska-query-rao-42.ip`) is sent from a host with
/// NSIS-ka's address through a pathwise router with NSIS-ka's addresses that relays NSLPID 42:
/// with netfilter interception the router takes it off the path and answers it; with the Router
/// Alert socket (what pathwise did when the capture was made) it crosses unseen.
#[test]
fn nsiska_query_with_router_alert_42_is_intercepted() {
    let test = "nsiska_query_with_router_alert_42_is_intercepted";
    if skip(test, &["sysctl", "iptables", "python3"]) {
        return;
    }
    let _g = serial();
    let packet = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/nsiska-query-rao-42.ip");
    for (interception, seen) in [("netfilter", true), ("socket", false)] {
        let mut lab = Lab::new(&["h1", "r1", "h2"]).expect("lab");
        lab.link((0, "e0", "10.210.0.1/24"), (1, "w0", "10.210.0.2/24"))
            .unwrap();
        lab.link((1, "e0", "10.210.1.1/24"), (2, "w0", "10.210.1.2/24"))
            .unwrap();
        lab.exec_ok(0, &["ip", "route", "add", "default", "via", "10.210.0.2"])
            .unwrap();
        lab.exec_ok(2, &["ip", "route", "add", "default", "via", "10.210.1.1"])
            .unwrap();
        lab.forward(1).unwrap();
        let sock = lab.path("r1.sock");
        let cfg = lab.path("r1.toml");
        std::fs::write(
            &cfg,
            format!(
                "[daemon]\nsocket = \"{}\"\n\n[gist]\ninterfaces = [\"w0\", \"e0\"]\n\
                 transports = [\"udp\"]\ninterception = \"{interception}\"\nrelay = [42]\n",
                sock.display()
            ),
        )
        .unwrap();
        lab.spawn(
            "r1",
            1,
            &[bin(), "daemon", "--config", &cfg.to_string_lossy()],
        )
        .unwrap();
        wait_for(Duration::from_secs(10), "r1's daemon", || {
            sock.exists().then_some(())
        })
        .unwrap();
        let counters = || -> Value {
            let out = lab
                .exec_ok(
                    1,
                    &[
                        bin(),
                        "gist",
                        "--json",
                        "--socket",
                        &sock.to_string_lossy(),
                        "show",
                        "counters",
                    ],
                )
                .unwrap();
            serde_json::from_str(&out).unwrap()
        };
        // Sent as captured: header with Router Alert 42, UDP, GIST, checksums and all.
        lab.exec_ok(
            0,
            &[
                "python3",
                "-c",
                "import socket, sys; \
                 s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW); \
                 s.sendto(open(sys.argv[1], 'rb').read(), ('10.210.1.2', 0))",
                &packet.to_string_lossy(),
            ],
        )
        .unwrap();
        let answered = wait_for(Duration::from_secs(3), "R1 answers the Query", || {
            let c = counters();
            (c["messages_out"]["Response"].as_u64() >= Some(1)).then_some(c)
        });
        if seen {
            let c = answered.unwrap_or_else(|e| panic!("{e}\n{}", lab.log("r1")));
            assert_eq!(c["messages_in"]["Query"], 1, "{c:#}");
            assert_eq!(c["transit"]["intercepted"], 1, "{c:#}");
            assert_eq!(c["interception"], "netfilter");
        } else {
            assert!(answered.is_err(), "the socket cannot see value 42");
            assert_eq!(counters()["messages_in"]["Query"], 0);
        }
    }
}

/// A Ping NSLP Query (or Q-mode Data) from H1 for the flow H1 → `dst`, as an attacker on the
/// link sends it.
fn ping_towards(src: &str, dst: &str, sid: u32, data: bool) -> Vec<u8> {
    use pathwise_core::time::Instant;
    use pathwise_gist::nslp::ping::{NSLPID, PingKind, PingMessage};
    use pathwise_gist::wire::{
        Body, Cookie, Data, Message, Mri, Nli, PathCoupledMri, Query, SessionId,
    };
    let (src, dst): (IpAddr, IpAddr) = (src.parse().unwrap(), dst.parse().unwrap());
    let mri = Mri::PathCoupled(PathCoupledMri::flow(src, dst));
    let mut session = [0x5a; 16];
    session[..4].copy_from_slice(&sid.to_be_bytes());
    let nli = Nli {
        ip_ttl: 64,
        rs_validity_ms: 30_000,
        peer_identity: vec![0xa7; 16].into(),
        interface_address: src,
    };
    let payload = PingMessage {
        kind: PingKind::Request,
        seq: sid,
        sent_at: Instant::ZERO,
        hops: Vec::new(),
    }
    .emit();
    let body = if data {
        Body::Data(Data {
            mri,
            session_id: SessionId(session),
            nli: Some(nli),
            nslp_data: payload,
            ..Data::default()
        })
    } else {
        Body::Query(Query {
            mri,
            session_id: SessionId(session),
            nli,
            query_cookie: Cookie(sid.to_be_bytes()[..].into()),
            nslp_data: Some(payload),
            ..Query::default()
        })
    };
    Message {
        gist_hops: 32,
        nslpid: NSLPID,
        c_flag: true,
        s_flag: true,
        r_flag: !data,
        e_flag: false,
        body,
    }
    .to_datagram()
}

fn count(c: &Value, path: &[&str]) -> u64 {
    path.iter().fold(c, |v, k| &v[*k]).as_u64().unwrap_or(0)
}

/// The forwarding loop: Queries and Data whose MRI points at loopback or the unspecified
/// address used to make R1 send each to itself about 600 times. Now each is refused once with
/// MRI Validation Failure and counted, nothing is sent on, and pings go on working.
#[test]
fn queries_towards_loopback_are_refused_not_looped() {
    let test = "queries_towards_loopback_are_refused_not_looped";
    if skip(test, &["sysctl"]) {
        return;
    }
    let _g = serial();
    let lab = chain(&Options::default());
    ping(&lab, H2_V4, 1);
    let before = counters(&lab, R1);
    let mut v4 = Vec::new();
    let mut v6 = Vec::new();
    for i in 0..200u32 {
        let (dst4, dst6) = match i % 4 {
            0 | 1 => ("127.0.0.1", "::1"),
            2 => ("0.0.0.0", "::"),
            _ => ("127.1.2.3", "::1"),
        };
        v4.push(ping_towards("10.91.1.1", dst4, i, i % 5 == 4));
        v6.push(ping_towards("fd00:91:1::1", dst6, i, i % 5 == 4));
    }
    send_udp(&lab, "10.91.1.2", &v4);
    send_udp(&lab, "fd00:91:1::2", &v6);
    let bad = |c: &Value| {
        ["mri_loopback", "mri_unspecified"]
            .iter()
            .map(|r| count(c, &["drops", r]))
            .sum::<u64>()
    };
    let after = wait_for(Duration::from_secs(10), "400 refusals at R1", || {
        let c = counters(&lab, R1);
        (bad(&c) >= bad(&before) + 400).then_some(c)
    })
    .unwrap_or_else(|e| panic!("{e}: {:#}", counters(&lab, R1)));
    assert_eq!(bad(&after), bad(&before) + 400, "{after:#}");
    // Nothing was sent on, and nothing came back to R1 from itself.
    for t in ["Query", "Data"] {
        assert_eq!(
            count(&after, &["messages_out", t]),
            count(&before, &["messages_out", t]),
            "{t}: {after:#}"
        );
    }
    assert_eq!(count(&after, &["drops", "from_self"]), 0, "{after:#}");
    assert_eq!(count(&after, &["drops", "own_message"]), 0, "{after:#}");
    // One MRI Validation Failure (code 12) per message, to H1.
    assert_eq!(
        count(&after, &["errors_sent", "12"]),
        count(&before, &["errors_sent", "12"]) + 400
    );
    // A second later the node is idle: no message is still going round.
    std::thread::sleep(Duration::from_secs(1));
    let idle = counters(&lab, R1);
    assert_eq!(idle["messages_in"], after["messages_in"], "{idle:#}");
    for r in ping(&lab, H2_V4, 2) {
        assert_eq!(path_nodes(&r), ["r1", "r2", "r3", "h2"], "{r}");
    }
    ping(&lab, H2_V6, 1);
}

/// A TCP client in node `i` from `src` to `dst`:`port` that sends `n` zero bytes and reads
/// until the stream ends; prints the bytes it got and how the stream ended ("eof", "reset"
/// or "timeout" after `wait` seconds).
fn zeros_over_tcp(lab: &Lab, i: usize, src: &str, dst: &str, n: usize, wait: u32) -> (u64, String) {
    let script = "import socket, sys\n\
        src, dst, n, wait = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])\n\
        s = socket.socket(socket.AF_INET6 if ':' in dst else socket.AF_INET, socket.SOCK_STREAM)\n\
        s.bind((src, 0))\n\
        s.connect((dst, 30000))\n\
        s.settimeout(wait)\n\
        try:\n    s.sendall(bytes(n))\nexcept OSError:\n    pass\n\
        got, end = 0, 'timeout'\n\
        try:\n    while True:\n        b = s.recv(65536)\n        if not b:\n            end = 'eof'\n            break\n        got += len(b)\n\
        except ConnectionResetError:\n    end = 'reset'\n\
        except socket.timeout:\n    end = 'timeout'\n\
        print(got, end)\n";
    let (n, wait) = (n.to_string(), wait.to_string());
    let out = lab
        .exec_ok(i, &["python3", "-c", script, src, dst, &n, &wait])
        .unwrap_or_else(|e| panic!("tcp client: {e}"));
    let mut it = out.split_whitespace();
    let got = it.next().and_then(|x| x.parse().ok()).unwrap_or(u64::MAX);
    (got, it.next().unwrap_or("").to_string())
}

/// 64 KiB of zeros on a messaging-association stream used to be answered with 8,192 Errors
/// while the stream stayed open: now at most one Error, and the stream is closed.
#[test]
fn zeros_on_an_association_stream_get_one_error_and_a_close() {
    let test = "zeros_on_an_association_stream_get_one_error_and_a_close";
    if skip(test, &["sysctl", "python3"]) {
        return;
    }
    let _g = serial();
    let lab = chain(&Options::default());
    let before = counters(&lab, R1);
    let (got, end) = zeros_over_tcp(&lab, H1, "10.91.1.1", "10.91.1.2", 64 * 1024, 10);
    assert!(
        end == "eof" || end == "reset",
        "the stream stays open: {end}"
    );
    assert!(got < 256, "{got} bytes back for 64 KiB of zeros");
    let after = wait_for(
        Duration::from_secs(5),
        "R1 counts the refused stream",
        || {
            let c = counters(&lab, R1);
            (count(&c, &["streams_refused"]) > count(&before, &["streams_refused"])).then_some(c)
        },
    )
    .unwrap_or_else(|e| panic!("{e}: {:#}", counters(&lab, R1)));
    assert_eq!(count(&after, &["streams_refused"]), 1, "{after:#}");
    assert_eq!(
        count(&after, &["messages_out", "Error"]),
        count(&before, &["messages_out", "Error"]) + 1,
        "{after:#}"
    );
    assert_eq!(count(&after, &["drops", "unknown_version"]), 1, "{after:#}");
    assert_eq!(count(&after, &["mas"]), 0, "{after:#}");
    // The stream is gone on R1 too.
    let ma = cli(&lab, R1, &["show", "ma"]).unwrap();
    assert_eq!(ma["tcp"]["open"], 0, "{ma:#}");
    for r in ping_over(&lab, H2_V4, 1, "tcp") {
        assert_eq!(path_nodes(&r), ["r1", "r2", "r3", "h2"], "{r}");
    }
}

/// A second TCP connection to R2 from R1's address used to replace R1's working association.
/// Now it is held until its first message proves it (a Confirm with R2's cookie); garbage is
/// refused, the association stays and pings over it go on.
#[test]
fn a_second_connection_from_a_peer_does_not_take_its_association_over() {
    let test = "a_second_connection_from_a_peer_does_not_take_its_association_over";
    if skip(test, &["sysctl", "python3"]) {
        return;
    }
    let _g = serial();
    let lab = chain(&Options::default());
    for r in ping_over(&lab, H2_V4, 2, "tcp") {
        assert_eq!(path_nodes(&r), ["r1", "r2", "r3", "h2"], "{r}");
    }
    assert_eq!(associations(&lab, R2), [("r1", 1), ("r3", 1)]);
    let r1_before = counters(&lab, R1);
    let r2_before = counters(&lab, R2);
    // From R1's namespace and address, as an attacker with R1's address would.
    let (got, end) = zeros_over_tcp(&lab, R1, "10.91.2.1", "10.91.2.2", 64, 10);
    assert!(
        end == "eof" || end == "reset",
        "the candidate stays open: {end}"
    );
    assert_eq!(got, 0, "a refused candidate is answered with nothing");
    let r2 = wait_for(Duration::from_secs(5), "R2 refuses the candidate", || {
        let c = counters(&lab, R2);
        (count(&c, &["streams", "takeovers_refused"]) >= 1).then_some(c)
    })
    .unwrap_or_else(|e| panic!("{e}: {:#}", counters(&lab, R2)));
    assert_eq!(count(&r2, &["streams", "takeover_candidates"]), 1, "{r2:#}");
    assert_eq!(count(&r2, &["streams", "takeovers"]), 0, "{r2:#}");
    assert_eq!(count(&r2, &["drops", "ma_takeover_malformed"]), 1, "{r2:#}");
    assert_eq!(r2["mas_closed"], r2_before["mas_closed"], "{r2:#}");
    // R1 never saw its association go.
    let r1 = counters(&lab, R1);
    assert_eq!(r1["mas_closed"], r1_before["mas_closed"], "{r1:#}");
    assert_eq!(associations(&lab, R2), [("r1", 1), ("r3", 1)]);
    // A new session over the same association.
    for r in ping_over(&lab, H2_V4, 2, "tcp") {
        assert_eq!(path_nodes(&r), ["r1", "r2", "r3", "h2"], "{r}");
    }
    assert_eq!(associations(&lab, R2), [("r1", 2), ("r3", 2)]);
    let ma = cli(&lab, R2, &["show", "ma"]).unwrap();
    assert_eq!(
        ma["tcp"]["opened"].as_u64().unwrap() + ma["tcp"]["accepted"].as_u64().unwrap(),
        2,
        "the first two streams serve: {ma:#}"
    );
}
