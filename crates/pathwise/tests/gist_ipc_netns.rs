//! GIST's IPC NSLP API, `gist send` / `gist listen` / `[gist] relay` for any NSLPID, and the
//! attacker tool on a real Linux network (seed 000 §3.7, §4.5.1):
//! the five-namespace chain of `gist_netns.rs` (H1 – R1 – R2 – R3 – H2). Needs root and `ip`;
//! each test prints why and passes when something is missing. Every namespace is deleted when
//! its test ends.

mod common;

use common::netns::{bin, json_cli, serial, skip};
use pathwise::gist::chain::{self as gist_chain, H1, H2, H2_V4, NODES, Options, R1, R2, R3};
use pathwise::netns::{Lab, wait_for};
use pathwise_gist::ipc::{ClientError, Frame, IpcGist, Refusal};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn cli(lab: &Lab, i: usize, args: &[&str]) -> anyhow::Result<Value> {
    json_cli(lab, i, "gist", &gist_chain::socket(lab, i), args)
}

fn logs(lab: &Lab) -> String {
    NODES
        .iter()
        .chain(&["nslp", "attack", "listen"])
        .map(|n| {
            let l = lab.log(n);
            let v: Vec<&str> = l.lines().collect();
            format!("--- {n}\n{}\n", v[v.len().saturating_sub(30)..].join("\n"))
        })
        .collect()
}

/// Ping H2 from H1 `count` times in one session; the replies (all must come back).
fn ping(lab: &Lab, count: u32) -> Vec<Value> {
    let n = count.to_string();
    let v = cli(
        lab,
        H1,
        &["ping", H2_V4, "--count", &n, "--interval", "100ms"],
    )
    .unwrap_or_else(|e| panic!("ping: {e}\nlogs:\n{}", logs(lab)));
    assert_eq!(v["summary"]["received"], count, "{v:#}\n{}", logs(lab));
    v["replies"].as_array().cloned().unwrap_or_default()
}

fn counters(lab: &Lab, i: usize) -> Value {
    cli(lab, i, &["show", "counters"]).expect("gist show counters")
}

fn last_hop(reply: &Value) -> Option<usize> {
    let path = reply["path"].as_array()?;
    let a: IpAddr = path.last()?.as_str()?.parse().ok()?;
    gist_chain::owner(a)
}

fn ipc_socket(lab: &Lab, node: usize) -> PathBuf {
    lab.path(&format!("{}-ipc.sock", NODES[node]))
}

#[test]
fn ping_nslp_out_of_process_over_ipc() {
    let _g = serial();
    if skip("ping_nslp_out_of_process_over_ipc", &["sysctl"]) {
        return;
    }
    let mut lab = gist_chain::build(
        Path::new(bin()),
        &Options {
            extra: "ipc_socket = \"{lab}{node}-ipc.sock\"\n".into(),
            ..Options::default()
        },
    )
    .expect("build the GIST chain");
    let sock = ipc_socket(&lab, H2);
    let sock_s = sock.to_string_lossy().into_owned();
    lab.spawn(
        "nslp",
        H2,
        &[bin(), "gist", "nslp-ping", "--ipc-socket", &sock_s],
    )
    .unwrap();
    wait_for(Duration::from_secs(10), "the NSLP to register", || {
        lab.log("nslp").contains("registered").then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", logs(&lab)));

    // H2's Ping NSLP is the out-of-process one: the first ping rides the Query (the client
    // answers the Routing-State-Check with the reply), the others are Data it answers with
    // SendMessage.
    let replies = ping(&lab, 3);
    for r in &replies {
        assert_eq!(last_hop(r), Some(H2), "{r:#}");
    }
    let c = counters(&lab, H2);
    let ipc = &c["ipc"];
    assert_eq!(ipc["clients"], 1, "{c:#}");
    assert_eq!(ipc["registered"], serde_json::json!([32704]), "{c:#}");
    assert!(ipc["decisions"].as_u64() >= Some(1), "{c:#}");
    assert!(ipc["upcalls"].as_u64() >= Some(3), "{c:#}");
    assert!(ipc["api_calls"].as_u64() >= Some(2), "{c:#}");
    assert_eq!(
        c["ping"]["answered"], 0,
        "the in-process NSLP stood aside: {c:#}"
    );

    // A second client for the same NSLPID is refused; the first keeps it.
    match IpcGist::connect(&sock, 32704) {
        Err(ClientError::Refused(Refusal::NslpidTaken)) => {}
        other => panic!("second registration: {other:?}"),
    }

    // Garbage on the socket: counted, answered, dropped; the daemon carries on.
    let mut s = std::os::unix::net::UnixStream::connect(&sock).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"\x00\x00\x00\x06\x01\x42garbage!").unwrap();
    let mut back = Vec::new();
    s.read_to_end(&mut back)
        .expect("the daemon closes the connection");
    assert_eq!(
        Frame::decode(&back).ok().flatten().map(|(f, _)| f),
        Some(Frame::Refused {
            reason: Refusal::Malformed
        })
    );
    // Not a frame at all (an absurd length).
    let mut s = std::os::unix::net::UnixStream::connect(&sock).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let _ = s.read_to_end(&mut Vec::new());
    let c = counters(&lab, H2);
    assert_eq!(c["ipc"]["malformed"], 2, "{c:#}");
    assert_eq!(ping(&lab, 1).len(), 1);

    // The NSLP process goes: unregistered, and the in-process Ping NSLP answers again.
    lab.kill("nslp");
    let c = wait_for(
        Duration::from_secs(5),
        "the client to be unregistered",
        || {
            let c = counters(&lab, H2);
            (c["ipc"]["clients"] == 0).then_some(c)
        },
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", logs(&lab)));
    assert_eq!(c["ipc"]["registered"], serde_json::json!([]), "{c:#}");
    assert!(c["ipc"]["disconnects"].as_u64() >= Some(4), "{c:#}");
    let replies = ping(&lab, 2);
    assert_eq!(last_hop(&replies[1]), Some(H2));
    let c = counters(&lab, H2);
    assert!(c["ping"]["answered"].as_u64() >= Some(1), "{c:#}");
}

fn owner_of(v: &Value) -> Option<usize> {
    gist_chain::owner(v.as_str()?.parse().ok()?)
}

/// `gist send` from H1 over its IPC socket; the JSON summary and whether it exited 0.
fn send(lab: &Lab, args: &[&str]) -> (Value, bool) {
    let sock = ipc_socket(lab, H1);
    let mut argv = vec![
        bin(),
        "gist",
        "--json",
        "send",
        "--ipc-socket",
        sock.to_str().unwrap_or_default(),
    ];
    argv.extend_from_slice(args);
    let out = lab.exec(H1, &argv).expect("run gist send");
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "gist send printed no JSON ({e}): {}\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            logs(lab)
        )
    });
    (v, out.status.success())
}

/// The routing states of NSLPID `nslpid` a node shows.
fn states(lab: &Lab, node: usize, nslpid: u16) -> Vec<Value> {
    let v = cli(lab, node, &["show", "mrs"]).expect("gist show mrs");
    v.as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["nslpid"] == nslpid)
        .cloned()
        .collect()
}

/// NSLPID 42 end to end, as against NSIS-ka's test NSLP: H2 listens and echoes, R2 relays,
/// R1 and R3 (GIST, no NSLP 42) let it through, H1 sends.
#[test]
fn any_nslpid_sent_listened_to_and_relayed() {
    let _g = serial();
    if skip("any_nslpid_sent_listened_to_and_relayed", &["sysctl"]) {
        return;
    }
    let mut node_extra = [""; 5];
    node_extra[R2] = "relay = [42]";
    let mut lab = gist_chain::build(
        Path::new(bin()),
        &Options {
            extra: "ipc_socket = \"{lab}{node}-ipc.sock\"\n".into(),
            node_extra,
            ..Options::default()
        },
    )
    .expect("build the GIST chain");
    let sock = ipc_socket(&lab, H2);
    let sock_s = sock.to_string_lossy().into_owned();
    lab.spawn(
        "listen",
        H2,
        &[
            bin(),
            "gist",
            "--json",
            "listen",
            "--nslpid",
            "42",
            "--echo",
            "--ipc-socket",
            &sock_s,
        ],
    )
    .unwrap();
    wait_for(Duration::from_secs(10), "the listener to register", || {
        lab.log("listen").contains("\"registered\"").then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", logs(&lab)));

    // One message: it rides H1's Query to R2, R2 passes it on in its own Query to H2, H2's
    // echo rides the Response back to R2, which sends it on to H1.
    let (v, ok) = send(
        &lab,
        &[H2_V4, "--nslpid", "42", "--data", "hello", "--wait", "10s"],
    );
    assert!(ok, "{v:#}\n{}", logs(&lab));
    assert_eq!(v["summary"]["delivered"], 1, "{v:#}");
    assert_eq!(
        v["payload_hex"], "68656c6c6f000000",
        "padded to a word (A.3.10)"
    );
    let back = &v["received"][0];
    assert_eq!(back["text"], "hello", "the echo came back: {v:#}");
    assert_eq!(owner_of(&back["peer"]), Some(R2), "from the relay: {v:#}");
    assert_eq!(back["mri"]["upstream"], true, "{v:#}");
    let session = v["session"].as_str().expect("a session").to_string();

    // H2 got it from R2 (not R3: R3 does not serve 42 and let the Query through).
    let got = wait_for(Duration::from_secs(5), "H2 to print the message", || {
        lab.log("listen")
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| e["event"] == "recv" && e["text"] == "hello")
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", logs(&lab)));
    assert_eq!(got["session"], session.as_str(), "{got:#}");
    assert_eq!(owner_of(&got["peer"]), Some(R2), "{got:#}");
    assert_eq!(got["query"], true, "it came in R2's Query: {got:#}");

    // R2 is on the path with routing state both ways; R1 and R3 hold none for NSLPID 42.
    let r2 = states(&lab, R2, 42);
    assert_eq!(r2.len(), 1, "{r2:#?}");
    assert_eq!(r2[0]["session"], session.as_str());
    assert_eq!(owner_of(&r2[0]["downstream"]["peer"]), Some(H2), "{r2:#?}");
    assert_eq!(owner_of(&r2[0]["upstream"]["peer"]), Some(H1), "{r2:#?}");
    for r in [R1, R3] {
        assert!(
            states(&lab, r, 42).is_empty(),
            "{} is transparent",
            NODES[r]
        );
    }
    let h1 = states(&lab, H1, 42);
    assert_eq!(owner_of(&h1[0]["downstream"]["peer"]), Some(R2), "{h1:#?}");

    // Two more in the same session: Data messages over the state set up, echoed upstream.
    let (v, ok) = send(
        &lab,
        &[
            H2_V4,
            "--nslpid",
            "42",
            "--data-hex",
            "00010203",
            "--count",
            "2",
            "--session",
            &session,
            "--wait",
            "10s",
        ],
    );
    assert!(ok, "{v:#}\n{}", logs(&lab));
    assert_eq!(v["summary"]["delivered"], 2, "{v:#}");
    assert_eq!(v["summary"]["received"], 2, "{v:#}");
    for r in v["received"].as_array().unwrap() {
        assert_eq!(r["payload_hex"], "00010203", "{r:#}");
        assert_eq!(r["text"], Value::Null, "not printable: shown as hex");
        assert_eq!(r["query"], false, "{r:#}");
    }
    let c = counters(&lab, R2);
    let relay = &c["relay"]["42"];
    assert_eq!(relay["peered"], 1, "{c:#}");
    assert_eq!(relay["forwarded_downstream"], 3, "{c:#}");
    assert_eq!(relay["forwarded_upstream"], 3, "{c:#}");
    assert!(
        relay["drops"].as_object().unwrap().values().all(|n| n == 0),
        "{c:#}"
    );

    // An NSLPID nobody serves at the far end: the message fails, and so does the command.
    let (v, ok) = send(
        &lab,
        &[H2_V4, "--nslpid", "43", "--data", "nobody", "--wait", "3s"],
    );
    assert!(!ok, "{v:#}");
    assert_eq!(v["summary"]["delivered"], 0, "{v:#}");
}

/// Run the attacker in R1 (which runs no daemon) and wait for its summary.
fn attack(lab: &mut Lab, mode: &str, rate: u32, secs: u32) -> Value {
    let (rate, dur) = (rate.to_string(), format!("{secs}s"));
    lab.spawn(
        "attack",
        R1,
        &[
            bin(),
            "gist",
            "--json",
            "attack",
            H2_V4,
            "--mode",
            mode,
            "--rate",
            &rate,
            "--duration",
            &dur,
        ],
    )
    .unwrap();
    // Legitimate pings go on while the attack runs.
    std::thread::sleep(Duration::from_millis(300));
    let replies = ping(lab, 3);
    assert_eq!(replies.len(), 3);
    let v = wait_for(
        Duration::from_secs(u64::from(secs) + 10),
        "the attacker's summary",
        || serde_json::from_str::<Value>(&lab.log("attack")).ok(),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", logs(lab)));
    lab.kill("attack");
    v
}

#[test]
fn query_flood_leaves_no_state_with_hash_cookies_and_pings_go_on() {
    let _g = serial();
    if skip(
        "query_flood_leaves_no_state_with_hash_cookies_and_pings_go_on",
        &["sysctl"],
    ) {
        return;
    }
    let mut lab = gist_chain::build(
        Path::new(bin()),
        &Options {
            gist: [true, false, false, false, true],
            cookie_mode: "hash",
            ..Options::default()
        },
    )
    .expect("build the GIST chain");
    let before = counters(&lab, H2);
    let a = attack(&mut lab, "query", 2000, 3);
    assert!(a["queries"].as_u64() >= Some(3000), "{a:#}");
    assert!(a["responses"].as_u64() >= Some(3000), "{a:#}");
    let c = counters(&lab, H2);
    let q_in = c["messages_in"]["Query"].as_u64().unwrap_or(0)
        - before["messages_in"]["Query"].as_u64().unwrap_or(0);
    assert!(
        q_in >= a["queries"].as_u64().unwrap() * 9 / 10,
        "{c:#}\n{a:#}"
    );
    assert!(c["cookies_minted"].as_u64() >= Some(q_in), "{c:#}");
    // Only the legitimate ping session holds state: no per-Query state with hash cookies.
    assert!(c["routing_states"].as_u64() <= Some(1), "{c:#}");

    // Queries answered by Confirms: every completed handshake installs state (Table 4.2 (4)).
    let a = attack(&mut lab, "query-confirm", 1000, 2);
    assert!(a["confirms"].as_u64() >= Some(500), "{a:#}");
    let c = counters(&lab, H2);
    assert!(
        c["routing_states"].as_u64() >= Some(a["confirms"].as_u64().unwrap() * 9 / 10),
        "{c:#}\n{a:#}"
    );
    assert!(
        c["messages_in"]["Confirm"].as_u64() >= a["confirms"].as_u64(),
        "{c:#}"
    );
}

#[test]
fn query_flood_with_random_cookies_expires_its_state_without_busy_waiting() {
    let _g = serial();
    if skip(
        "query_flood_with_random_cookies_expires_its_state_without_busy_waiting",
        &["sysctl"],
    ) {
        return;
    }
    let mut lab = gist_chain::build(
        Path::new(bin()),
        &Options {
            gist: [true, false, false, false, true],
            cookie_mode: "random",
            ..Options::default()
        },
    )
    .expect("build the GIST chain");
    let before = counters(&lab, H2);
    let a = attack(&mut lab, "query", 1000, 3);
    assert!(a["responses"].as_u64() >= Some(1500), "{a:#}");
    // Every Query's state waits `confirm_wait` (2 s) for a Confirm that never comes, then goes.
    let c = wait_for(
        Duration::from_secs(10),
        "the Queries' state to expire",
        || {
            let c = counters(&lab, H2);
            (c["routing_states"].as_u64() <= Some(1)).then_some(c)
        },
    )
    .unwrap_or_else(|e| panic!("{e}\n{:#}", counters(&lab, H2)));
    let delta = |k: &str| c[k].as_u64().unwrap_or(0) - before[k].as_u64().unwrap_or(0);
    let q_in = c["messages_in"]["Query"].as_u64().unwrap_or(0)
        - before["messages_in"]["Query"].as_u64().unwrap_or(0);
    assert!(delta("cookies_minted") >= q_in, "{c:#}");
    // Work per Query, not time: one wake-up for its arrival at most and one for its expiry. A
    // loop that polls with a 0 ms timeout while a deadline is under 1 ms away wakes tens of
    // thousands of times a second instead (Table 4.2 (1) at 25 % of a core), and counts those
    // as early wake-ups.
    assert_eq!(c["early_wakeups"], 0, "{c:#}");
    assert!(delta("wakeups") <= 2 * q_in + 500, "{q_in} Queries\n{c:#}");
}
