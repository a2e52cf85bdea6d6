//! RSVP on a real Linux network (issue 3): five namespaces H1 – R1 – R2 – R3 – H2 with
//! forwarding on, a `pathwise daemon` in each, driven through the CLI. Needs root, `ip` and `tc`
//! (and `tshark`, `iperf3`, `python3` for the tests that use them); each test prints why and
//! passes when something is missing. Every namespace is deleted when its test ends.

mod common;

use common::flood::median_of_three;
use common::netns::{
    assert_tshark_finds_nothing_malformed, bin, capture_rsvp, json_cli, rsvp_types, serial, skip,
};
use pathwise::netns::{Lab, unavailable, wait_for};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

use pathwise::rsvp::chain::{H1, H2, NODES, R1, R2, R3, RECEIVER, SENDER};

fn chain(tc: &str) -> anyhow::Result<Lab> {
    pathwise::rsvp::chain::build(Path::new(bin()), tc, "1s")
}

/// Run `pathwise rsvp --json …` against node `i`'s daemon.
fn cli(lab: &Lab, i: usize, args: &[&str]) -> anyhow::Result<Value> {
    json_cli(lab, i, "rsvp", &pathwise::rsvp::chain::socket(lab, i), args)
}

fn sessions(lab: &Lab, i: usize) -> Vec<Value> {
    cli(lab, i, &["show", "sessions"])
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}

fn installed_kbps(lab: &Lab, i: usize) -> f64 {
    sessions(lab, i)
        .iter()
        .flat_map(|s| s["installed"].as_array().cloned().unwrap_or_default())
        .filter_map(|x| x["kbps"].as_f64())
        .sum()
}

/// H1 sends to H2 UDP port 5001, H2 reserves `kbit` for it (FF), and waits until the
/// reservation has reached H1. Both waits are `pathwise rsvp wait`, which the daemons (one
/// engine or several shards) answer when their state changes.
fn setup_reservation(lab: &Lab, kbit: u32) -> anyhow::Result<()> {
    let rate = format!("{kbit}kbit");
    let session = ["--dest", RECEIVER, "--port", "5001"];
    let mut add = vec!["sender", "add", "--src", SENDER, "--rate", &rate];
    add.extend_from_slice(&session);
    cli(lab, H1, &add)?;
    let mut wait_path = vec!["wait", "--for", "path", "--timeout", "5s"];
    wait_path.extend_from_slice(&session);
    let reached = cli(lab, H2, &wait_path)?;
    assert_eq!(reached["reached"], "path", "{reached}");
    let mut reserve = vec![
        "reserve",
        "--style",
        "ff",
        "--sender",
        SENDER,
        "--rate",
        &rate,
        "--confirm",
    ];
    reserve.extend_from_slice(&session);
    cli(lab, H2, &reserve)?;
    let mut wait_resv = vec!["wait", "--for", "resv", "--timeout", "5s"];
    wait_resv.extend_from_slice(&session);
    let reached = cli(lab, H1, &wait_resv)?;
    assert_eq!(reached["reached"], "resv", "{reached}");
    // What reached the sender is this request's.
    let resv_at_sender = || {
        let ev = cli(lab, H1, &["show", "events"]).ok()?;
        ev.as_array()?
            .iter()
            .any(|e| e["event"]["resv"]["kbps"].as_f64() == Some(f64::from(kbit)))
            .then_some(())
    };
    wait_for(
        Duration::from_secs(5),
        "the reservation at the sender",
        resv_at_sender,
    )
}

fn tc_classes(lab: &Lab, i: usize, dev: &str) -> String {
    lab.exec_ok(i, &["tc", "class", "show", "dev", dev])
        .unwrap_or_default()
}

#[test]
fn reservation_across_the_chain_and_teardown() -> anyhow::Result<()> {
    if skip("reservation_across_the_chain_and_teardown", &["tc"]) {
        return Ok(());
    }
    let _serial = serial();
    let lab = chain("htb")?;
    setup_reservation(&lab, 4000)?;
    // Path was intercepted and processed at every router (Router Alert), and each installed
    // the reservation on its interface towards H2 as an HTB class.
    for r in [R1, R2, R3] {
        let s = sessions(&lab, r);
        assert_eq!(s.len(), 1, "{}: {s:?}", NODES[r]);
        assert_eq!(
            s[0]["paths"][0]["phop"].as_str(),
            Some(format!("10.91.{r}.1").as_str()),
            "previous hop at {}",
            NODES[r]
        );
        assert_eq!(installed_kbps(&lab, r), 4000.0);
        let classes = tc_classes(&lab, r, "e0");
        assert!(classes.contains("rate 4Mbit"), "{}: {classes}", NODES[r]);
    }
    let confirmed = cli(&lab, H2, &["show", "events"])?;
    assert!(confirmed.to_string().contains("confirmed"), "{confirmed}");
    // Teardown: receiver releases, sender withdraws; nothing is left anywhere.
    cli(&lab, H2, &["release", "--dest", RECEIVER, "--port", "5001"])?;
    cli(
        &lab,
        H1,
        &[
            "sender", "del", "--dest", RECEIVER, "--port", "5001", "--src", SENDER,
        ],
    )?;
    for (i, node) in NODES.iter().enumerate() {
        wait_for(
            Duration::from_secs(5),
            &format!("no state at {node}"),
            || sessions(&lab, i).is_empty().then_some(()),
        )?;
    }
    for r in [R1, R2, R3] {
        let classes = tc_classes(&lab, r, "e0");
        assert!(!classes.contains("rate 4Mbit"), "{}: {classes}", NODES[r]);
    }
    Ok(())
}

/// `bench rsvp-chain`'s per-hop figures: packet sockets in R1, R2 and R3 time every session's
/// first Path and first Resv through each router from kernel timestamps.
#[test]
fn kernel_timestamps_time_both_legs_at_every_router() -> anyhow::Result<()> {
    use pathwise::rsvp::bench::capture::{Direction, Transit, transit_times};
    use pathwise::rsvp::bench::chain::{PerHop, timed_setups};
    use pathwise_rsvp::wire::MsgType;
    if skip("kernel_timestamps_time_both_legs_at_every_router", &["tc"]) {
        return Ok(());
    }
    let _serial = serial();
    // R = 30 s: no refresh comes in the few seconds the test takes.
    let lab = pathwise::rsvp::chain::build(Path::new(bin()), "htb", "30s")?;
    let n = 5;
    let t = timed_setups(&lab, n)?;
    let nodes: Vec<&str> = t.routers.iter().map(|r| r.node.as_str()).collect();
    assert_eq!(nodes, ["r1", "r2", "r3"]);
    for r in &t.routers {
        for msg in [MsgType::Path, MsgType::Resv] {
            let times = transit_times(&r.records, msg);
            assert_eq!(times.len(), n, "{} {msg:?}: {times:?}", r.node);
            for (session, transit) in &times {
                let Transit::Forwarded(d) = transit else {
                    panic!("{}: the {msg:?} of {session:?} never left", r.node);
                };
                assert!(
                    *d > Duration::ZERO && *d < Duration::from_secs(1),
                    "{} {msg:?} of {session:?}: {d:?}",
                    r.node
                );
            }
        }
        // RFC 2205 §2.1: a Path comes in from upstream (w0) and leaves downstream (e0), a
        // Resv the other way; the capture tells sent from received.
        for rec in r.records.iter().filter(|x| x.msg_type == MsgType::Path) {
            let want = if rec.direction == Direction::Arrived {
                "w0"
            } else {
                "e0"
            };
            assert_eq!(rec.interface, want, "{}: {rec:?}", r.node);
        }
        for rec in r.records.iter().filter(|x| x.msg_type == MsgType::Resv) {
            let want = if rec.direction == Direction::Arrived {
                "e0"
            } else {
                "w0"
            };
            assert_eq!(rec.interface, want, "{}: {rec:?}", r.node);
        }
    }
    // Both ends of a veth link stamp a frame with the same clock, the sender first: a Path
    // leaves R1 before it reaches R2, a Resv leaves R2 before it reaches R1. A stamp taken when
    // the capture thread read the frame instead would break this now and then.
    let first = |node: usize, msg: MsgType, dir: Direction| {
        let mut at: Vec<_> = t.routers[node]
            .records
            .iter()
            .filter(|r| r.msg_type == msg && r.direction == dir)
            .map(|r| (r.session, r.at))
            .collect();
        at.sort();
        at.dedup_by_key(|(s, _)| *s);
        at
    };
    for (msg, from, to) in [(MsgType::Path, 0, 1), (MsgType::Resv, 1, 0)] {
        let sent = first(from, msg, Direction::Departed);
        let received = first(to, msg, Direction::Arrived);
        assert_eq!(sent.len(), n);
        for ((s, out), (r, inn)) in sent.iter().zip(&received) {
            assert_eq!(s, r);
            let link = inn.checked_sub(*out);
            assert!(
                link.is_some_and(|d| d < Duration::from_secs(1)),
                "{msg:?} of {s:?}: left at {out:?}, arrived at {inn:?}"
            );
        }
    }
    let per_hop = PerHop::of("htb", &t.routers);
    for h in &per_hop.hops {
        let want = if h.hop == "all" { 3 * n } else { n };
        assert_eq!((h.sessions, h.missing), (want, 0), "{h:?}");
        assert!(h.setup_us.is_some_and(|q| q.median > 0.0), "{h:?}");
    }
    assert_eq!((per_hop.untimed, per_hop.capture_drops), (0, 0));
    Ok(())
}

/// H2's receiver requests, from `rsvp show requests`.
fn requests(lab: &Lab) -> Vec<Value> {
    cli(lab, H2, &["show", "requests"])
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}

/// The status of H2's one request ("waiting", "installed", …).
fn request_status(lab: &Lab) -> Option<String> {
    match requests(lab).as_slice() {
        [r] => r["status"].as_str().map(str::to_string),
        _ => None,
    }
}

/// Reservation events of `kbit` that reached the sender H1 so far.
fn resv_events_at_sender(lab: &Lab, kbit: f64) -> usize {
    cli(lab, H1, &["show", "events"])
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter(|e| e["event"]["resv"]["kbps"].as_f64() == Some(kbit))
        .count()
}

/// RFC 2205 §3.11.1: a receiver may reserve before any Path has arrived. H2 reserves first;
/// the daemon says the request waits for path state and keeps it; once H1 registers the
/// sender, H2's engine sends the Resv as the Path arrives, and it reaches H1 with an HTB class
/// on every router.
#[test]
fn a_reservation_made_before_the_path_reaches_the_sender() -> anyhow::Result<()> {
    if skip(
        "a_reservation_made_before_the_path_reaches_the_sender",
        &["tc"],
    ) {
        return Ok(());
    }
    let _serial = serial();
    let lab = chain("htb")?;
    let socket = pathwise::rsvp::chain::socket(&lab, H2)
        .display()
        .to_string();
    let session = ["--dest", RECEIVER, "--port", "5001"];
    let mut reserve = vec![
        "reserve", "--style", "ff", "--sender", SENDER, "--rate", "4000kbit",
    ];
    reserve.extend_from_slice(&session);
    let answer = cli(&lab, H2, &reserve)?;
    assert!(
        answer
            .as_str()
            .is_some_and(|a| a.contains("waiting for path state")),
        "{answer}"
    );
    assert_eq!(request_status(&lab).as_deref(), Some("waiting"));
    assert!(sessions(&lab, H1).is_empty(), "nothing signalled yet");
    // Waiting for what does not come ends with an error that says what did not come.
    let argv = [
        bin(),
        "rsvp",
        "--socket",
        &socket,
        "wait",
        "--for",
        "path",
        "--timeout",
        "300ms",
        "--dest",
        RECEIVER,
        "--port",
        "5001",
    ];
    let started = std::time::Instant::now();
    let out = lab.exec(H2, &argv)?;
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no path state for session") && err.contains("300 ms"),
        "{err}"
    );
    assert!(started.elapsed() >= Duration::from_millis(300));
    let counters = cli(&lab, H2, &["show", "counters"])?;
    assert_eq!(counters["receiver_requests"], 1, "{counters}");
    let mut add = vec!["sender", "add", "--src", SENDER, "--rate", "4000kbit"];
    add.extend_from_slice(&session);
    cli(&lab, H1, &add)?;
    wait_for(
        Duration::from_secs(5),
        "the reservation at the sender",
        || (resv_events_at_sender(&lab, 4000.0) >= 1).then_some(()),
    )?;
    for r in [R1, R2, R3] {
        assert_eq!(installed_kbps(&lab, r), 4000.0, "{}", NODES[r]);
        let classes = tc_classes(&lab, r, "e0");
        assert!(classes.contains("rate 4Mbit"), "{}: {classes}", NODES[r]);
    }
    assert_eq!(request_status(&lab).as_deref(), Some("installed"));
    // Released like any other; the request is gone.
    cli(&lab, H2, &["release", "--dest", RECEIVER, "--port", "5001"])?;
    assert!(requests(&lab).is_empty());
    wait_for(Duration::from_secs(5), "R1's reservation gone", || {
        (installed_kbps(&lab, R1) == 0.0).then_some(())
    })?;
    Ok(())
}

/// The hostile-input defect "reservation not restored after a PathTear": H1 withdraws its
/// sender (PathTear all the way to H2) and registers it again. H2's request outlives the path
/// state (RFC 2205 §3.11.1), so when the Path comes back the reservation is back at every
/// hop, with nothing more asked of H2. A request made with no path state can be released too.
#[test]
fn a_reservation_comes_back_with_the_path_after_a_path_tear() -> anyhow::Result<()> {
    if skip(
        "a_reservation_comes_back_with_the_path_after_a_path_tear",
        &["tc"],
    ) {
        return Ok(());
    }
    let _serial = serial();
    let lab = chain("memory")?;
    setup_reservation(&lab, 1000)?;
    assert_eq!(request_status(&lab).as_deref(), Some("installed"));
    let sender = ["--dest", RECEIVER, "--port", "5001", "--src", SENDER];
    let mut del = vec!["sender", "del"];
    del.extend_from_slice(&sender);
    cli(&lab, H1, &del)?;
    // The PathTear took path and reservation state everywhere; H2 keeps its request.
    for (i, node) in NODES.iter().enumerate() {
        wait_for(
            Duration::from_secs(5),
            &format!("no path state at {node}"),
            || {
                sessions(&lab, i)
                    .iter()
                    .all(|s| s["paths"].as_array().is_none_or(Vec::is_empty))
                    .then_some(())
            },
        )?;
    }
    assert_eq!(installed_kbps(&lab, R1), 0.0);
    assert_eq!(request_status(&lab).as_deref(), Some("waiting"));
    let before = resv_events_at_sender(&lab, 1000.0);
    let mut add = vec!["sender", "add", "--rate", "1000kbit"];
    add.extend_from_slice(&sender);
    cli(&lab, H1, &add)?;
    wait_for(
        Duration::from_secs(5),
        "the reservation back at the sender",
        || (resv_events_at_sender(&lab, 1000.0) > before).then_some(()),
    )?;
    for r in [R1, R2, R3] {
        assert_eq!(installed_kbps(&lab, r), 1000.0, "{}", NODES[r]);
    }
    assert_eq!(request_status(&lab).as_deref(), Some("installed"));
    // Torn down again, the request can still be released without path state.
    cli(&lab, H1, &del)?;
    wait_for(Duration::from_secs(5), "H2's path state gone", || {
        (request_status(&lab).as_deref() == Some("waiting")).then_some(())
    })?;
    let answer = cli(&lab, H2, &["release", "--dest", RECEIVER, "--port", "5001"])?;
    assert_eq!(answer, "reservation released");
    assert!(requests(&lab).is_empty());
    let counters = cli(&lab, H2, &["show", "counters"])?;
    assert_eq!(counters["receiver_requests"], 0, "{counters}");
    Ok(())
}

/// Killing R2's daemon (SIGKILL, no teardown) leaves R2 a plain forwarding router: R1's Path
/// refreshes now reach R3 across a non-RSVP hop, so R3's previous hop becomes R1, and R1 times
/// out the reservation state R2 used to refresh; the reservation itself survives, requested by
/// R3 directly. Nothing of R2 remains in its neighbours' state.
#[test]
fn a_dead_routers_state_is_timed_out_by_its_neighbours() -> anyhow::Result<()> {
    if skip(
        "a_dead_routers_state_is_timed_out_by_its_neighbours",
        &["tc"],
    ) {
        return Ok(());
    }
    let _serial = serial();
    let mut lab = chain("memory")?;
    setup_reservation(&lab, 1000)?;
    let phop_at_r3 = |lab: &Lab| {
        sessions(lab, R3)
            .first()
            .and_then(|s| s["paths"][0]["phop"].as_str().map(str::to_string))
    };
    assert_eq!(phop_at_r3(&lab).as_deref(), Some("10.91.3.1"));
    lab.kill("r2");
    // R = 1 s: lifetime L = (K + 0.5) · 1.5 · R = 5.25 s.
    wait_for(
        Duration::from_secs(12),
        "R3's previous hop becoming R1",
        || (phop_at_r3(&lab).as_deref() == Some("10.91.2.1")).then_some(()),
    )?;
    let resv_timeouts = |lab: &Lab| {
        cli(lab, R1, &["show", "counters"])
            .ok()
            .and_then(|c| c["resv_timeouts"].as_u64())
    };
    wait_for(
        Duration::from_secs(12),
        "R1 timing out R2's reservation state",
        || resv_timeouts(&lab).filter(|&n| n >= 1),
    )?;
    let nhops: Vec<String> = sessions(&lab, R1)
        .iter()
        .flat_map(|s| s["resvs"].as_array().cloned().unwrap_or_default())
        .filter_map(|r| r["nhop"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        nhops,
        vec!["10.91.3.2".to_string()],
        "R1's reservation now comes from R3 only"
    );
    assert_eq!(installed_kbps(&lab, R1), 1000.0);
    Ok(())
}

#[test]
fn bad_input_is_dropped_and_counted_and_service_continues() -> anyhow::Result<()> {
    if skip(
        "bad_input_is_dropped_and_counted_and_service_continues",
        &["tc", "python3"],
    ) {
        return Ok(());
    }
    let _serial = serial();
    let lab = chain("memory")?;
    setup_reservation(&lab, 1000)?;
    // From H1, raw IP protocol 46 datagrams to R2: truncated, bad checksum, wrong length,
    // unknown object class (0x42), oversize, garbage.
    let script = r#"
import socket, struct
def csum(b):
    if len(b) % 2: b += b'\0'
    s = sum(struct.unpack('!%dH' % (len(b)//2), b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff
def msg(objs, length=None):
    body = b''.join(objs)
    n = 8 + len(body) if length is None else length
    h = struct.pack('!BBHBBH', 0x10, 1, 0, 64, 0, n) + body
    return h[:2] + struct.pack('!H', csum(h)) + h[4:]
session = struct.pack('!HBB4sBBH', 12, 1, 1, socket.inet_aton('10.91.4.2'), 17, 0, 5001)
hop = struct.pack('!HBB4sI', 12, 3, 1, socket.inet_aton('10.91.1.1'), 1)
good = msg([session, hop])
bad_sum = bytearray(good); bad_sum[2] ^= 0xff
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, 46)
for p in [good[:6], bytes(bad_sum), msg([session, hop], length=400), msg([session, hop, struct.pack('!HBB4s', 8, 0x42, 1, b'xxxx')]), b'\x10\x01' + b'\xff' * 9000, b'garbage!' * 8]:
    s.sendto(p, ('10.91.2.2', 0))
"#;
    lab.exec_ok(H1, &["python3", "-c", script])?;
    let drops = || {
        cli(&lab, R2, &["show", "counters"]).ok().map(|c| {
            c["drops"]
                .as_object()
                .map_or(0, |d| d.values().filter_map(Value::as_u64).sum::<u64>())
                + c["socket_drops"].as_u64().unwrap_or(0)
        })
    };
    let n = wait_for(Duration::from_secs(5), "R2 counting the drops", || {
        drops().filter(|&n| n >= 5)
    })?;
    assert!(n >= 5, "dropped {n}");
    // Still serving, and the reservation is untouched.
    assert_eq!(installed_kbps(&lab, R2), 1000.0);
    assert_eq!(sessions(&lab, R2).len(), 1);
    Ok(())
}

/// Start capturing RSVP on both of R2's interfaces into `file` in the lab directory.
fn capture_at_r2(lab: &mut Lab, file: &str) -> anyhow::Result<std::path::PathBuf> {
    capture_rsvp(lab, "tshark", R2, &["e0", "w0"], file)
}

/// tshark finds no malformed packet and raises no expert error in R2's capture.
fn assert_nothing_malformed(lab: &Lab, pcap: &str) -> anyhow::Result<()> {
    assert_tshark_finds_nothing_malformed(lab, R2, pcap)
}

#[test]
fn tshark_decodes_every_message_we_send() -> anyhow::Result<()> {
    if skip("tshark_decodes_every_message_we_send", &["tc", "tshark"]) {
        return Ok(());
    }
    let _serial = serial();
    let mut lab = chain("memory")?;
    let pcap = capture_at_r2(&mut lab, "r2.pcap")?;
    let pcap_s = pcap.to_str().unwrap_or_default().to_string();
    setup_reservation(&lab, 1000)?;
    cli(&lab, H2, &["release", "--dest", RECEIVER, "--port", "5001"])?;
    cli(
        &lab,
        H1,
        &[
            "sender", "del", "--dest", RECEIVER, "--port", "5001", "--src", SENDER,
        ],
    )?;
    std::thread::sleep(Duration::from_secs(2));
    lab.terminate("tshark", Duration::from_secs(5))?;
    let types = rsvp_types(&lab, R2, &pcap_s, "rsvp")?;
    for t in ["1", "2", "5", "6", "7"] {
        assert!(types.contains(t), "message type {t} not seen: {types:?}");
    }
    assert_nothing_malformed(&lab, &pcap_s)?;
    assert!(Path::new(&pcap).exists());
    Ok(())
}

#[test]
fn integrity_required_on_every_link_hop_by_hop() -> anyhow::Result<()> {
    if skip(
        "integrity_required_on_every_link_hop_by_hop",
        &["tc", "tshark"],
    ) {
        return Ok(());
    }
    let _serial = serial();
    let options = pathwise::rsvp::chain::Options {
        refresh: "1s",
        integrity: Some(pathwise_auth::Algorithm::HmacSha256),
        ..Default::default()
    };
    let mut lab = pathwise::rsvp::chain::build_with(Path::new(bin()), &options)?;
    let pcap = capture_at_r2(&mut lab, "r2-integrity.pcap")?;
    let pcap_s = pcap.to_str().unwrap_or_default().to_string();
    setup_reservation(&lab, 1000)?;
    for i in [R1, R2, R3] {
        assert_eq!(installed_kbps(&lab, i), 1000.0, "node {i}");
    }
    // Several refresh periods (R = 1 s) of signed refreshes, then teardown.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(installed_kbps(&lab, R2), 1000.0);
    cli(&lab, H2, &["release", "--dest", RECEIVER, "--port", "5001"])?;
    cli(
        &lab,
        H1,
        &[
            "sender", "del", "--dest", RECEIVER, "--port", "5001", "--src", SENDER,
        ],
    )?;
    std::thread::sleep(Duration::from_secs(2));
    lab.terminate("tshark", Duration::from_secs(5))?;
    for i in [H1, R1, R2, R3, H2] {
        let c = cli(&lab, i, &["show", "counters"])?;
        let integrity = &c["integrity"];
        assert!(integrity["verified"].as_u64() > Some(0), "node {i}: {c}");
        assert!(integrity["signed"].as_u64() > Some(0), "node {i}: {c}");
        // The only drops: each fresh neighbour's first message, held for the handshake.
        let drops = c["drops"].as_object().cloned().unwrap_or_default();
        for (reason, n) in drops.iter().filter(|(_, n)| **n != 0) {
            assert_eq!(
                reason, "integrity_awaiting_challenge",
                "node {i}: {n} dropped"
            );
        }
    }
    // On the wire: every message but the challenges carries a 32-byte HMAC-SHA-256 digest
    // under key 1, and tshark finds nothing malformed.
    let fields = lab.exec_ok(
        R2,
        &[
            "tshark",
            "-r",
            &pcap_s,
            "-Y",
            "rsvp",
            "-T",
            "fields",
            "-E",
            "separator=;",
            "-e",
            "rsvp.msg",
            "-e",
            "rsvp.integrity.key_identifier",
            "-e",
            "rsvp.integrity.hash",
        ],
    )?;
    let mut types = std::collections::BTreeSet::new();
    for line in fields.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split(';').collect();
        types.insert(f[0].to_string());
        if f[0] == "25" {
            continue; // Integrity Challenge: no INTEGRITY object by definition
        }
        let key = f.get(1).copied().unwrap_or_default().replace(':', "");
        assert_eq!(key, "000000000001", "{line}");
        let hash = f.get(2).copied().unwrap_or_default().replace(':', "");
        assert_eq!(hash.len(), 64, "{line}");
    }
    for t in ["1", "2", "5", "6", "7", "25", "26"] {
        assert!(types.contains(t), "message type {t} not seen: {types:?}");
    }
    assert_nothing_malformed(&lab, &pcap_s)?;
    Ok(())
}

#[test]
fn hello_detects_a_dead_link_long_before_state_times_out() -> anyhow::Result<()> {
    hello_finds_a_dead_link("hello_detects_a_dead_link_long_before_state_times_out", 1)
}

/// The same on daemons of two shards (`[daemon] threads = 2`): every shard is handed every
/// Hello, shard 0 answers for the node, the shard holding the reservation finds the link dead,
/// and `show neighbors` lists each neighbour once.
#[test]
fn hello_on_two_shards_detects_a_dead_link() -> anyhow::Result<()> {
    hello_finds_a_dead_link("hello_on_two_shards_detects_a_dead_link", 2)
}

fn hello_finds_a_dead_link(test: &str, threads: usize) -> anyhow::Result<()> {
    if skip(test, &["tc"]) {
        return Ok(());
    }
    let _serial = serial();
    // R = 30 s: without Hello the reservation would outlive the link by L ≈ 157 s.
    let options = pathwise::rsvp::chain::Options {
        hello: Some("100ms"),
        threads,
        ..Default::default()
    };
    let lab = pathwise::rsvp::chain::build_with(Path::new(bin()), &options)?;
    setup_reservation(&lab, 1000)?;
    assert_eq!(installed_kbps(&lab, R1), 1000.0);
    std::thread::sleep(Duration::from_secs(1));
    let c = cli(&lab, R2, &["show", "counters"])?;
    assert!(c["hello"]["received"].as_u64() > Some(5), "{c}");
    assert_eq!(c["hello"]["neighbor_failures"].as_u64(), Some(0), "{c}");
    let n = cli(&lab, R2, &["show", "neighbors"])?;
    let mut seen: Vec<(String, String)> = n["neighbors"]
        .as_array()
        .map(|a| a.as_slice())
        .unwrap_or_default()
        .iter()
        .filter(|x| x["instance"].as_u64() > Some(0) && x["heard_ms_ago"].as_u64() < Some(1000))
        .map(|x| (x["interface"].to_string(), x["address"].to_string()))
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("\"e0\"".to_string(), "\"10.91.3.2\"".to_string()),
            ("\"w0\"".to_string(), "\"10.91.2.1\"".to_string())
        ],
        "{n}"
    );
    // The R2 – R3 link dies (R2's side goes down; R3 keeps its address).
    lab.exec_ok(R2, &["ip", "link", "set", "e0", "down"])?;
    let started = std::time::Instant::now();
    wait_for(Duration::from_secs(5), "R1's reservation to go", || {
        (installed_kbps(&lab, R1) == 0.0).then_some(())
    })?;
    let took = started.elapsed();
    let c = cli(&lab, R2, &["show", "counters"])?;
    assert!(c["hello"]["neighbor_failures"].as_u64() >= Some(1), "{c}");
    assert!(took < Duration::from_secs(3), "took {took:?}");
    println!("reservation gone upstream {took:?} after the link went down (Hello 100 ms × 3.5)");
    Ok(())
}

#[test]
fn a_reserved_flow_keeps_its_rate_under_a_flood() -> anyhow::Result<()> {
    if skip(
        "a_reserved_flow_keeps_its_rate_under_a_flood",
        &["tc", "iperf3"],
    ) {
        return Ok(());
    }
    let _serial = serial();
    let mut lab = chain("htb")?;
    lab.spawn("iperf-flow", H2, &["iperf3", "-s", "-p", "5001", "-J"])?;
    lab.spawn("iperf-flood", H2, &["iperf3", "-s", "-p", "5202"])?;
    std::thread::sleep(Duration::from_millis(500));
    let without = median_of_three(&mut lab, H1, RECEIVER, "without")?;
    setup_reservation(&lab, 4000)?;
    let with = median_of_three(&mut lab, H1, RECEIVER, "with")?;
    // The reservation survived the flood: signaling has its own class.
    assert_eq!(installed_kbps(&lab, R2), 4000.0);
    println!(
        "4 Mbit/s UDP flow under a 40 Mbit/s UDP flood (median of 3): {:.2} Mbit/s without, {:.2} Mbit/s with the reservation",
        without / 1e6,
        with / 1e6
    );
    assert!(with >= 0.9 * 4e6, "with the reservation: {with} bit/s");
    assert!(
        without < 0.9 * 4e6,
        "without the reservation: {without} bit/s"
    );
    Ok(())
}

/// A daemon killed outright leaves its HTB classes behind; started again, it removes them
/// before doing anything else (its root qdisc is replaced), so a restart leaves nothing stale.
#[test]
fn a_restarted_daemon_cleans_up_what_it_owned() -> anyhow::Result<()> {
    if skip("a_restarted_daemon_cleans_up_what_it_owned", &["tc"]) {
        return Ok(());
    }
    let _serial = serial();
    let mut lab = chain("htb")?;
    setup_reservation(&lab, 2000)?;
    assert!(tc_classes(&lab, R2, "e0").contains("rate 2Mbit"));
    lab.kill("r2");
    assert!(
        tc_classes(&lab, R2, "e0").contains("rate 2Mbit"),
        "left behind by the crash"
    );
    let sock = pathwise::rsvp::chain::socket(&lab, R2);
    let _ = std::fs::remove_file(&sock);
    let config = lab.path("r2.toml");
    lab.spawn(
        "r2",
        R2,
        &[
            bin(),
            "daemon",
            "--config",
            config.to_str().unwrap_or_default(),
        ],
    )?;
    wait_for(Duration::from_secs(10), "R2's daemon again", || {
        sock.exists().then_some(())
    })?;
    let classes = tc_classes(&lab, R2, "e0");
    assert!(
        !classes.contains("rate 2Mbit"),
        "stale class after restart: {classes}"
    );
    assert!(
        classes.contains("5057:fffe"),
        "the new run installed its own layout: {classes}"
    );
    Ok(())
}

/// `rsvp show lsp --json` at node `i`.
fn lsps(lab: &Lab, i: usize) -> Vec<Value> {
    cli(lab, i, &["show", "lsp"])
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}

/// `rsvp show labels --json` at node `i`.
fn labels(lab: &Lab, i: usize) -> Value {
    cli(lab, i, &["show", "labels"]).unwrap_or(Value::Null)
}

/// The LSP called `name` at node `i`.
fn lsp(lab: &Lab, i: usize, name: &str) -> Option<Value> {
    lsps(lab, i).into_iter().find(|l| l["name"] == name)
}

/// Whether `addr` is one of node `n`'s addresses on the chain (.2 on link n, .1 on link n + 1).
fn owned_by(addr: &str, n: usize) -> bool {
    addr == format!("10.91.{n}.2") || addr == format!("10.91.{}.1", n + 1)
}

/// `pathwise rsvp …` at node `i` expected to fail: its error output.
fn cli_err(lab: &Lab, i: usize, args: &[&str]) -> anyhow::Result<String> {
    let sock = pathwise::rsvp::chain::socket(lab, i);
    let mut argv = vec![bin(), "rsvp", "--socket", sock.to_str().unwrap_or_default()];
    argv.extend_from_slice(args);
    let out = lab.exec(i, &argv)?;
    anyhow::ensure!(!out.status.success(), "{args:?} succeeded");
    Ok(String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn lsp_across_the_chain_with_integrity_labels_hop_by_hop() -> anyhow::Result<()> {
    let test = "lsp_across_the_chain_with_integrity_labels_hop_by_hop";
    if skip(test, &[]) {
        return Ok(());
    }
    let tshark = match unavailable(&["tshark"]) {
        Some(why) => {
            println!("{test}: not checking the capture: {why}");
            false
        }
        None => true,
    };
    let _serial = serial();
    // Each node allocates labels from a range of its own (R1 2000…, R2 3000…), so a label
    // matching the next node's proves the binding rather than two counters that agree.
    // Refresh reduction on every node: after the first refresh, Srefresh and Bundles. One
    // shard per daemon: with the few LSPs here spread over shards, no engine would have two
    // messages for a neighbour at once, and the Bundles tshark is to decode would not form
    // (sharded integrity: tests/rsvp_shard_netns.rs).
    let options = pathwise::rsvp::chain::Options {
        refresh: "1s",
        integrity: Some(pathwise_auth::Algorithm::HmacSha256),
        label_block: Some(1000),
        refresh_reduction: true,
        threads: 1,
        ..Default::default()
    };
    let mut lab = pathwise::rsvp::chain::build_with(Path::new(bin()), &options)?;
    let pcap = if tshark {
        Some(capture_at_r2(&mut lab, "r2-lsp.pcap")?)
    } else {
        None
    };

    // H1 heads an LSP to H2: strict through R1 and R2, then loose to H2 (R2 expands it).
    cli(
        &lab,
        H1,
        &[
            "lsp",
            "add",
            "t1",
            "--to",
            RECEIVER,
            "--ero",
            "10.91.1.2,10.91.2.2,~10.91.4.2",
            "--bandwidth",
            "2Mbit",
        ],
    )?;
    let head = wait_for(Duration::from_secs(10), "LSP t1 up at H1", || {
        lsp(&lab, H1, "t1").filter(|l| l["status"] == "up")
    })?;
    assert_eq!(head["role"], "head-end", "{head}");
    assert_eq!(head["from"], SENDER, "{head}");
    assert_eq!(head["bandwidth_bps"], 2_000_000, "{head}");
    assert_eq!(
        (&head["setup_priority"], &head["hold_priority"]),
        (&Value::from(7), &Value::from(0))
    );
    assert!(head["error"].is_null(), "{head}");

    // Every node downstream is Up, and the labels chain: each node's out label is the next
    // node's in label, ending in implicit null (3) from H2, so R3 pops.
    let mut views = vec![head.clone()];
    for n in [R1, R2, R3, H2] {
        let v = wait_for(
            Duration::from_secs(5),
            &format!("t1 up at {}", NODES[n]),
            || lsp(&lab, n, "t1").filter(|l| l["status"] == "up"),
        )?;
        let role = if n == H2 { "egress" } else { "transit" };
        assert_eq!(v["role"], role, "{}: {v}", NODES[n]);
        views.push(v);
    }
    for n in H1..H2 {
        assert_eq!(
            views[n]["out_label"],
            views[n + 1]["in_label"],
            "{} → {}",
            NODES[n],
            NODES[n + 1]
        );
        assert_eq!(
            views[n]["next_hop"]["address"],
            format!("10.91.{}.2", n + 1),
            "{}",
            NODES[n]
        );
        assert_eq!(views[n]["next_hop"]["interface"], "e0", "{}", NODES[n]);
    }
    assert_eq!(views[H2]["in_label"], 3, "H2 advertises implicit null");
    for r in [R1, R2, R3] {
        let l = views[r]["in_label"].as_u64().unwrap_or_default();
        let first = 1000 * (r as u64 + 1);
        assert!(
            (first..first + 1000).contains(&l),
            "{}'s label {l}",
            NODES[r]
        );
    }

    // The head end's recorded route: R1, R2, R3 and H2, first hop first, each with the label
    // it gave.
    let rro = head["record_route"].as_array().cloned().unwrap_or_default();
    assert_eq!(rro.len(), 4, "{head}");
    for (k, hop) in rro.iter().enumerate() {
        let n = k + 1;
        let addr = hop["address"].as_str().unwrap_or_default();
        assert!(owned_by(addr, n), "hop {k} {addr} is not {}'s", NODES[n]);
        assert_eq!(hop["label"], views[n]["in_label"], "label of {}", NODES[n]);
    }

    // `show labels`: H1 pushes R1's label; R1 and R2 swap; R3 pops towards H2.
    let h1 = labels(&lab, H1);
    let ingress = h1["ingress"].as_array().cloned().unwrap_or_default();
    assert_eq!(ingress.len(), 1, "{h1}");
    assert_eq!(ingress[0]["to"], RECEIVER);
    assert_eq!(ingress[0]["push"], views[R1]["in_label"], "{h1}");
    assert_eq!(ingress[0]["next_hop"]["address"], "10.91.1.2");
    for r in [R1, R2, R3] {
        let t = labels(&lab, r);
        let entries = t["entries"].as_array().cloned().unwrap_or_default();
        assert_eq!(entries.len(), 1, "{}: {t}", NODES[r]);
        let e = &entries[0];
        assert_eq!(e["in_label"], views[r]["in_label"], "{}: {t}", NODES[r]);
        if r == R3 {
            assert_eq!(e["op"], "pop", "{t}");
        } else {
            assert_eq!(e["op"], "swap", "{}: {t}", NODES[r]);
            assert_eq!(
                e["out_label"],
                views[r + 1]["in_label"],
                "{}: {t}",
                NODES[r]
            );
        }
        assert_eq!(e["next_hop"]["address"], format!("10.91.{}.2", r + 1));
        assert_eq!(t["labels_in_use"], 1, "{}: {t}", NODES[r]);
    }
    // The text forms print the same.
    let sock = pathwise::rsvp::chain::socket(&lab, H1);
    let text = lab.exec_ok(
        H1,
        &[
            bin(),
            "rsvp",
            "--socket",
            sock.to_str().unwrap_or_default(),
            "show",
            "lsp",
        ],
    )?;
    assert!(text.contains("t1  head-end  up"), "{text}");
    assert!(text.contains("recorded route: 10.91."), "{text}");

    // A strict hop that is not adjacent: refused at once by the head end …
    let err = cli_err(
        &lab,
        H1,
        &["lsp", "add", "bad", "--to", RECEIVER, "--ero", "10.91.3.2"],
    )?;
    assert!(err.contains("Bad strict node"), "{err}");
    assert!(lsp(&lab, H1, "bad").is_none());
    // … or reported by R1, where it is not adjacent either: the LSP fails with the error in words.
    cli(
        &lab,
        H1,
        &[
            "lsp",
            "add",
            "bad2",
            "--to",
            RECEIVER,
            "--ero",
            "10.91.1.2,10.91.3.2",
        ],
    )?;
    let failed = wait_for(Duration::from_secs(5), "LSP bad2 failed", || {
        lsp(&lab, H1, "bad2").filter(|l| l["status"] == "failed")
    })?;
    assert_eq!(
        failed["error"]["meaning"], "Routing problem: Bad strict node",
        "{failed}"
    );
    let node = failed["error"]["node"].as_str().unwrap_or_default();
    assert!(owned_by(node, R1), "the error comes from R1: {failed}");
    cli(&lab, H1, &["lsp", "del", "bad2"])?;
    let err = cli_err(&lab, H1, &["lsp", "del", "bad2"])?;
    assert!(err.contains("no LSP named \"bad2\""), "{err}");

    // Refreshes go on, signed, until every node has refreshed by summary (RFC 2961: capability
    // comes with the first messages, identifiers with the next refresh, summaries once they are
    // acknowledged — a few refresh periods); the LSP stays up with the same labels.
    wait_for(
        Duration::from_secs(15),
        "summary refreshes from every node",
        || {
            [H1, R1, R2, R3]
                .iter()
                .all(|&n| {
                    cli(&lab, n, &["show", "counters"])
                        .is_ok_and(|c| c["refresh_reduction"]["summarized"].as_u64() > Some(0))
                })
                .then_some(())
        },
    )?;
    assert_eq!(
        lsp(&lab, R2, "t1").map(|l| l["in_label"].clone()),
        Some(views[R2]["in_label"].clone())
    );

    // Teardown removes every label everywhere.
    cli(&lab, H1, &["lsp", "del", "t1"])?;
    wait_for(Duration::from_secs(5), "no labels left", || {
        [H1, R1, R2, R3, H2]
            .iter()
            .all(|&n| {
                let t = labels(&lab, n);
                t["entries"].as_array().is_some_and(Vec::is_empty)
                    && t["ingress"].as_array().is_some_and(Vec::is_empty)
                    && t["labels_in_use"] == 0
                    && lsps(&lab, n).is_empty()
            })
            .then_some(())
    })?;
    for n in [H1, R1, R2, R3, H2] {
        let c = cli(&lab, n, &["show", "counters"])?;
        assert!(
            c["integrity"]["verified"].as_u64() > Some(0),
            "{}: {c}",
            NODES[n]
        );
        assert_eq!(c["dataplane_errors"], 0, "{}: {c}", NODES[n]);
        assert_eq!(c["label_allocation_failures"], 0, "{}: {c}", NODES[n]);
        assert_eq!(c["preemptions"], 0, "{}: {c}", NODES[n]);
        // RFC 2961 between every pair of neighbours: identified messages acknowledged, and
        // unchanged state refreshed by summary.
        let rr = &c["refresh_reduction"];
        assert!(rr["acks_received"].as_u64() > Some(0), "{}: {c}", NODES[n]);
        if n != H2 {
            assert!(rr["summarized"].as_u64() > Some(0), "{}: {c}", NODES[n]);
        }
    }

    let Some(pcap) = pcap else { return Ok(()) };
    std::thread::sleep(Duration::from_secs(1));
    lab.terminate("tshark", Duration::from_secs(5))?;
    let pcap_s = pcap.to_str().unwrap_or_default().to_string();
    // tshark decodes the RSVP-TE objects: Path with LABEL_REQUEST, EXPLICIT_ROUTE, RECORD_ROUTE
    // and SESSION_ATTRIBUTE, Resv with LABEL and RECORD_ROUTE, all with INTEGRITY.
    let count = |filter: &str| -> anyhow::Result<usize> {
        let out = lab.exec_ok(R2, &["tshark", "-r", &pcap_s, "-Y", filter])?;
        Ok(out.lines().filter(|l| !l.trim().is_empty()).count())
    };
    for filter in [
        "rsvp.msg == 1 && rsvp.label_request && rsvp.explicit_route && rsvp.record_route \
         && rsvp.session_attribute && rsvp.integrity && rsvp.session_attribute.name == \"t1\"",
        "rsvp.msg == 2 && rsvp.label && rsvp.record_route && rsvp.integrity",
        "rsvp.msg == 5 && rsvp.integrity",
        // RFC 2961: identified Paths, Acks and Srefreshes (signed), Bundles of them.
        "rsvp.msg == 1 && rsvp.msgid",
        "rsvp.msgid_ack && rsvp.integrity",
        "rsvp.msg == 15 && rsvp.msgid_list && rsvp.integrity",
        "rsvp.msg == 12",
    ] {
        assert!(count(filter)? > 0, "nothing matches {filter}");
    }
    // The labels on the wire are those R2 and R3 gave.
    let on_wire = lab.exec_ok(
        R2,
        &[
            "tshark",
            "-r",
            &pcap_s,
            "-Y",
            "rsvp.msg == 2",
            "-T",
            "fields",
            "-e",
            "rsvp.label.label",
        ],
    )?;
    let wire: std::collections::BTreeSet<u64> = on_wire
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok())
        .collect();
    for n in [R2, R3] {
        let l = views[n]["in_label"].as_u64().unwrap_or_default();
        assert!(
            wire.contains(&l),
            "label {l} of {} not seen: {wire:?}",
            NODES[n]
        );
    }
    assert_nothing_malformed(&lab, &pcap_s)?;
    Ok(())
}

#[test]
fn lsp_from_the_configuration_with_explicit_null_at_the_egress() -> anyhow::Result<()> {
    if skip(
        "lsp_from_the_configuration_with_explicit_null_at_the_egress",
        &[],
    ) {
        return Ok(());
    }
    let _serial = serial();
    // H1 heads an LSP of its configuration, routed hop by hop (no ERO); H2 asks for explicit
    // null, so R3 swaps to label 0 instead of popping.
    let extra = [
        (
            H1,
            "[[rsvp.lsp]]\nname = \"cfg\"\nto = \"10.91.4.2\"\nbandwidth = \"1Mbit\"\nsetup_priority = 4\nhold_priority = 2\n",
        ),
        (H2, "explicit_null = true"),
    ];
    let options = pathwise::rsvp::chain::Options {
        refresh: "1s",
        extra: &extra,
        ..Default::default()
    };
    let lab = pathwise::rsvp::chain::build_with(Path::new(bin()), &options)?;
    let head = wait_for(Duration::from_secs(10), "LSP cfg up at H1", || {
        lsp(&lab, H1, "cfg").filter(|l| l["status"] == "up")
    })?;
    assert_eq!(
        (&head["setup_priority"], &head["hold_priority"]),
        (&Value::from(4), &Value::from(2)),
        "{head}"
    );
    assert!(head["ero"].is_null(), "{head}");
    let egress = wait_for(Duration::from_secs(5), "cfg up at H2", || {
        lsp(&lab, H2, "cfg").filter(|l| l["status"] == "up")
    })?;
    assert_eq!(egress["in_label"], 0, "IPv4 explicit null: {egress}");
    // The daemons start together: a Path H1 sent before R3's daemon ran crossed R3 as a plain
    // packet, so R3 joins the LSP at the next refresh (R = 1 s).
    let r3 = wait_for(Duration::from_secs(5), "R3's binding", || {
        let t = labels(&lab, R3);
        (!t["entries"][0].is_null()).then_some(t)
    })?;
    let e = &r3["entries"][0];
    assert_eq!(
        (&e["op"], &e["out_label"]),
        (&Value::from("swap"), &Value::from(0)),
        "{r3}"
    );
    cli(&lab, H1, &["lsp", "del", "cfg"])?;
    wait_for(Duration::from_secs(5), "no labels left", || {
        [H1, R1, R2, R3, H2]
            .iter()
            .all(|&n| labels(&lab, n)["labels_in_use"] == 0 && lsps(&lab, n).is_empty())
            .then_some(())
    })?;
    Ok(())
}

/// A GMPLS LSP (RFC 3473) across the chain, as `rsvp lsp add --gmpls` signals it: a Generalized
/// LABEL_REQUEST (§2.1) from H1, Generalized LABELs (§2.3) back hop by hop, labels chained and
/// popped at R3 as for RFC 3209, and tshark decodes every message at R2 — the GMPLS objects
/// with the fields we set — with nothing malformed.
#[test]
fn gmpls_lsp_across_the_chain_decoded_by_tshark() -> anyhow::Result<()> {
    let test = "gmpls_lsp_across_the_chain_decoded_by_tshark";
    if skip(test, &["tshark"]) {
        return Ok(());
    }
    let _serial = serial();
    let options = pathwise::rsvp::chain::Options {
        refresh: "1s",
        label_block: Some(1000),
        ..Default::default()
    };
    let mut lab = pathwise::rsvp::chain::build_with(Path::new(bin()), &options)?;
    let pcap = capture_at_r2(&mut lab, "r2-gmpls.pcap")?;
    let pcap_s = pcap.to_str().unwrap_or_default().to_string();
    cli(
        &lab,
        H1,
        &[
            "lsp",
            "add",
            "g1",
            "--to",
            RECEIVER,
            "--gmpls",
            "--switching",
            "2",
            "--gpid",
            "0x0800",
        ],
    )?;
    let mut views = Vec::new();
    for n in [H1, R1, R2, R3, H2] {
        let v = wait_for(
            Duration::from_secs(10),
            &format!("g1 up at {}", NODES[n]),
            || lsp(&lab, n, "g1").filter(|l| l["status"] == "up"),
        )?;
        assert_eq!(
            (
                &v["gmpls"]["encoding"],
                &v["gmpls"]["switching"],
                &v["l3pid"]
            ),
            (&Value::from(1), &Value::from(2), &Value::from(0x0800)),
            "{}: {v}",
            NODES[n]
        );
        views.push(v);
    }
    for n in H1..H2 {
        assert_eq!(
            views[n]["out_label"],
            views[n + 1]["in_label"],
            "{} → {}",
            NODES[n],
            NODES[n + 1]
        );
    }
    assert_eq!(views[H2]["in_label"], 3, "implicit null from the egress");
    let shown = lab.exec_ok(
        H1,
        &[
            bin(),
            "rsvp",
            "--socket",
            pathwise::rsvp::chain::socket(&lab, H1)
                .to_str()
                .unwrap_or_default(),
            "show",
            "lsp",
        ],
    )?;
    assert!(
        shown.contains("GMPLS (RFC 3473): encoding 1, switching 2, G-PID 0x0800"),
        "{shown}"
    );
    // A refresh or two, then tear it down, so the capture holds PathTear too.
    std::thread::sleep(Duration::from_millis(1500));
    cli(&lab, H1, &["lsp", "del", "g1"])?;
    wait_for(Duration::from_secs(5), "g1 gone at H2", || {
        lsp(&lab, H2, "g1").is_none().then_some(())
    })?;
    std::thread::sleep(Duration::from_millis(300));
    lab.terminate("tshark", Duration::from_secs(5))?;
    let fields = lab.exec_ok(
        R2,
        &[
            "tshark",
            "-r",
            &pcap_s,
            "-T",
            "fields",
            "-E",
            "separator=;",
            "-e",
            "rsvp.msg",
            "-e",
            "rsvp.label_request.lsp_encoding_type",
            "-e",
            "rsvp.label_request.switching_type",
            "-e",
            "rsvp.label_request.g_pid",
            "-e",
            "rsvp.label.generalized_label",
        ],
    )?;
    let rows: Vec<Vec<&str>> = fields.lines().map(|l| l.split(';').collect()).collect();
    // Paths (type 1) carry the Generalized LABEL_REQUEST, Resvs (2) a Generalized LABEL.
    assert!(
        rows.iter()
            .any(|r| r[0] == "1" && r[1] == "1" && r[2] == "2" && r[3] == "0x0800"),
        "no Path with the Generalized LABEL_REQUEST: {rows:?}"
    );
    assert!(
        rows.iter().any(|r| r[0] == "2" && !r[4].is_empty()),
        "no Resv with a Generalized LABEL: {rows:?}"
    );
    assert!(rows.iter().any(|r| r[0] == "5"), "no PathTear: {rows:?}");
    assert_nothing_malformed(&lab, &pcap_s)?;
    Ok(())
}
