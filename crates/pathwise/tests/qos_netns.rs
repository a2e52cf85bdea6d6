//! The QoS NSLP on a real Linux network (issue 17): the five-namespace chain H1 – R1 – R2 – R3
//! – H2, every node a `pathwise daemon` with `[rsvp]` (in-memory traffic control, 10 Mbit/s
//! reservable per interface), `[gist]` and `[qos_nslp]`, driven through `pathwise qos`.
//! Needs root, `ip` and `iptables` (GIST takes the QoS NSLP's Router Alert values off the path
//! through netfilter); skipped with a message otherwise. The namespaces go when the test ends.
//! The HTB tests use `traffic_control = "htb"`; the data-plane proof runs on RSVP's data-plane
//! chain (R2 → R3 10 Mbit/s) with iperf3, as `rsvp_netns.rs` does.

mod common;

use common::flood::median_of_three;
use common::netns::{bin, capture, serial, skip};
use pathwise::gist::chain::{self as gist_chain, H1, H2_V4, NODES, Options, R2};
use pathwise::netns::{Lab, wait_for};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

fn rsvp_section(i: usize, tc: &str) -> String {
    let ifaces: &[&str] = match i {
        0 => &["e0"],
        4 => &["w0"],
        _ => &["w0", "e0"],
    };
    let mut s = format!("\n[rsvp]\ntraffic_control = {tc:?}\n");
    for name in ifaces {
        s += &format!(
            "\n[[rsvp.interface]]\nname = \"{name}\"\nbandwidth = \"100Mbit\"\nreservable = \"10Mbit\"\n"
        );
    }
    s
}

fn chain(tc: &str) -> Lab {
    chain_with((0..5).map(|i| rsvp_section(i, tc)).collect())
}

/// RSVP's data-plane chain (`pathwise::rsvp::chain`): R2 → R3 a 10 Mbit/s link, the others
/// 1 Gbit/s, 80 % of each reservable, HTB.
fn bottleneck_section(i: usize) -> String {
    let ifaces: &[&str] = match i {
        0 => &["e0"],
        4 => &["w0"],
        _ => &["w0", "e0"],
    };
    let mut s = "\n[rsvp]\ntraffic_control = \"htb\"\n".to_string();
    for name in ifaces {
        let bw = if i == R2 && *name == "e0" { 10 } else { 1000 };
        s += &format!(
            "\n[[rsvp.interface]]\nname = \"{name}\"\nbandwidth = \"{bw}Mbit\"\nreservable = \"{}Mbit\"\n",
            bw * 8 / 10
        );
    }
    s
}

fn chain_with(rsvp: Vec<String>) -> Lab {
    let sections: Vec<String> = rsvp
        .iter()
        .map(|r| format!("\n[qos_nslp]\nrefresh_period = \"5s\"\n{r}"))
        .collect();
    let o = Options {
        refresh: "10s",
        extra: "interception = \"netfilter\"\n".into(),
        node_extra: [
            &sections[0],
            &sections[1],
            &sections[2],
            &sections[3],
            &sections[4],
        ],
        ..Options::default()
    };
    gist_chain::build(Path::new(bin()), &o).expect("build the chain")
}

/// `pathwise qos --json …` against node `i`'s daemon; the JSON and whether it exited 0.
fn qos(lab: &Lab, i: usize, args: &[&str]) -> (Value, bool) {
    let sock = gist_chain::socket(lab, i);
    let mut argv = vec![bin(), "qos", "--json", "--socket", sock.to_str().unwrap()];
    argv.extend_from_slice(args);
    let out = lab.exec(i, &argv).expect("run pathwise qos");
    let text = String::from_utf8_lossy(&out.stdout);
    let v = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "pathwise qos {args:?}: {e}\nstdout: {text}\nstderr: {}\nlogs:\n{}",
            String::from_utf8_lossy(&out.stderr),
            logs(lab)
        )
    });
    (v, out.status.success())
}

fn logs(lab: &Lab) -> String {
    NODES
        .iter()
        .map(|n| {
            let l = lab.log(n);
            let v: Vec<&str> = l.lines().collect();
            format!("--- {n}\n{}\n", v[v.len().saturating_sub(20)..].join("\n"))
        })
        .collect()
}

fn sessions(lab: &Lab, i: usize) -> Vec<Value> {
    qos(lab, i, &["show"]).0["sessions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn reserve_show_refuse_and_release_through_the_cli() {
    let test = "reserve_show_refuse_and_release_through_the_cli";
    if skip(test, &["ip", "iptables"]) {
        return;
    }
    let _g = serial();
    let lab = chain("memory");

    // A sender-initiated reservation H1 -> H2 of 4 Mbit/s, confirmed by the QNR.
    let (v, ok) = qos(
        &lab,
        H1,
        &[
            "reserve",
            H2_V4,
            "--rate",
            "4Mbit",
            "--protocol",
            "17",
            "--dport",
            "5001",
        ],
    );
    assert!(ok, "{v:#}\n{}", logs(&lab));
    assert_eq!(v["outcome"], "reserved", "{v:#}\n{}", logs(&lab));
    assert_eq!(v["qspec"]["reserved"]["rate_bps"], 4_000_000);
    let session = v["session"].as_str().unwrap().to_string();

    // Every router holds it on its interface towards H2, as a QNE; H2 is the QNR.
    for (r, name) in NODES.iter().enumerate().take(4).skip(1) {
        let s = sessions(&lab, r);
        assert_eq!(s.len(), 1, "{name}: {s:?}");
        assert_eq!(s[0]["session"], session.as_str());
        assert_eq!(s[0]["role"], "QNE");
        assert_eq!(s[0]["interface"], "e0");
        assert_eq!(s[0]["rate_bps"], 4_000_000);
    }
    assert_eq!(sessions(&lab, 4)[0]["role"], "QNR");

    // 7 Mbit/s more does not fit in the 10 reservable: refused at the first hop (H1's own
    // interface), nothing sent; the CLI exits non-zero.
    let sock = gist_chain::socket(&lab, H1);
    let out = lab
        .exec(
            H1,
            &[
                bin(),
                "qos",
                "--socket",
                sock.to_str().unwrap(),
                "reserve",
                H2_V4,
                "--rate",
                "7Mbit",
            ],
        )
        .unwrap();
    assert!(
        !out.status.success(),
        "a reservation beyond the budget is refused"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("admission refused"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(sessions(&lab, R2).len(), 1, "nothing new on the path");

    // The counters are in `gist show counters` too.
    let sock = gist_chain::socket(&lab, R2);
    let c = lab
        .exec_ok(
            R2,
            &[
                bin(),
                "gist",
                "--json",
                "--socket",
                sock.to_str().unwrap(),
                "show",
                "counters",
            ],
        )
        .unwrap();
    let c: Value = serde_json::from_str(&c).unwrap();
    assert_eq!(c["qos_nslp"]["admitted"], 1, "{c:#}");

    // A query reserves nothing and says what the path could give.
    let (v, ok) = qos(&lab, H1, &["query", H2_V4, "--rate", "1Mbit"]);
    assert!(ok && v["outcome"] == "answered", "{v:#}");
    assert!(v["qspec"]["available"]["path_latency_us"].is_u64(), "{v:#}");
    assert_eq!(sessions(&lab, R2).len(), 1);

    // Receiver-initiated: H2 becomes the QNI and reserves back along the path.
    let (v, ok) = qos(
        &lab,
        H1,
        &["reserve", H2_V4, "--rate", "1Mbit", "--receiver-initiated"],
    );
    assert!(ok && v["outcome"] == "requested", "{v:#}");
    let rx = v["session"].as_str().unwrap().to_string();
    wait_for(
        Duration::from_secs(5),
        "the receiver-initiated reservation",
        || {
            let s = sessions(&lab, 4);
            s.iter()
                .any(|s| {
                    s["session"] == rx.as_str()
                        && s["role"] == "QNI"
                        && s["initiation"] == "receiver"
                })
                .then_some(())
        },
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", logs(&lab)));
    let on_r2: Vec<Value> = sessions(&lab, R2)
        .into_iter()
        .filter(|s| s["session"] == rx.as_str())
        .collect();
    assert_eq!(on_r2.len(), 1);
    assert_eq!(
        (
            on_r2[0]["interface"].as_str(),
            on_r2[0]["rate_bps"].as_u64()
        ),
        (Some("e0"), Some(1_000_000))
    );
    // Its initiator is H2: release it there.
    let (v, ok) = qos(&lab, 4, &["release", &rx]);
    assert!(ok && v["outcome"] == "released", "{v:#}");

    // Released: gone from every node within a second.
    let (v, ok) = qos(&lab, H1, &["release", &session]);
    assert!(ok && v["outcome"] == "released", "{v:#}");
    wait_for(Duration::from_secs(5), "the tear to reach H2", || {
        (0..5).all(|i| sessions(&lab, i).is_empty()).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", logs(&lab)));
}

/// `qos reserve --bound-to SESSION:dependent` (RFC 5974 §5.1.3.4, §5.4.1): the reservation
/// carries the BOUND-SESSION-ID hop by hop, and when the session it depends on is released
/// every node holding both tells its QNI by a NOTIFY — H1's `qos show` lists one from each of
/// the five nodes (its own, and four received from R1, R2, R3 and H2).
#[test]
fn a_dependent_reservation_is_notified_when_its_bound_session_goes() {
    let test = "a_dependent_reservation_is_notified_when_its_bound_session_goes";
    if skip(test, &["ip", "iptables"]) {
        return;
    }
    let _g = serial();
    let lab = chain("memory");
    let reserve = |extra: &[&str]| {
        let mut args = vec!["reserve", H2_V4, "--rate", "1Mbit", "--protocol", "17"];
        args.extend_from_slice(extra);
        let (v, ok) = qos(&lab, H1, &args);
        assert!(ok && v["outcome"] == "reserved", "{v:#}\n{}", logs(&lab));
        v["session"].as_str().unwrap().to_string()
    };
    let a = reserve(&["--dport", "5001"]);
    let bound = format!("{a}:dependent");
    let b = reserve(&["--dport", "5002", "--bound-to", &bound]);
    for i in 0..5 {
        let s = sessions(&lab, i);
        let held = s.iter().find(|s| s["session"] == b.as_str()).unwrap();
        assert_eq!(
            held["bound"],
            serde_json::json!([{ "session": a, "code": 4 }]),
            "node {i}: {held:#}"
        );
    }
    let notices = || qos(&lab, H1, &["show"]).0["notifications"].clone();
    assert_eq!(
        notices(),
        serde_json::json!([]),
        "nothing before the release"
    );

    let (v, ok) = qos(&lab, H1, &["release", &a]);
    assert!(ok && v["outcome"] == "released", "{v:#}");
    let got = wait_for(Duration::from_secs(5), "a NOTIFY from every node", || {
        let n = notices();
        (n.as_array().map_or(0, Vec::len) >= 5).then_some(n)
    })
    .unwrap_or_else(|e| panic!("{e}\n{:#}\n{}", notices(), logs(&lab)));
    let got = got.as_array().unwrap();
    assert_eq!(got.len(), 5, "{got:#?}");
    let mut sources: Vec<&str> = got
        .iter()
        .map(|n| {
            assert_eq!(n["session"], b.as_str(), "{n:#}");
            // §5.1.3.6: Informational 0x01, "Unknown BOUND-SESSION-ID".
            assert_eq!(
                (n["info"]["class"].as_str(), n["info"]["code"].as_u64()),
                (Some("Informational"), Some(1)),
                "{n:#}"
            );
            n["info"]["source"].as_str().unwrap()
        })
        .collect();
    sources.sort_unstable();
    sources.dedup();
    assert_eq!(sources.len(), 5, "one from each node: {sources:?}");
    // The dependent reservation itself is the QNI's to release (§5.4.4), and still held.
    assert!(
        sessions(&lab, R2)
            .iter()
            .any(|s| s["session"] == b.as_str())
    );
    let (v, ok) = qos(&lab, H1, &["release", &b]);
    assert!(ok && v["outcome"] == "released", "{v:#}");
}

/// `qos reserve --count`: one request starts a reservation per destination port and answers
/// with their tally once every one is answered; those refused at this node's admission are
/// counted apart and make the command fail.
#[test]
fn reserve_many_flows_with_one_request() {
    let test = "reserve_many_flows_with_one_request";
    if skip(test, &["ip", "iptables"]) {
        return;
    }
    let _g = serial();
    let lab = chain("memory");
    let flows = |rate: &str, dport: &str, count: &str| {
        let args = [
            "reserve",
            H2_V4,
            "--rate",
            rate,
            "--protocol",
            "17",
            "--dport",
            dport,
            "--count",
            count,
        ];
        qos(&lab, H1, &args)
    };
    let (v, ok) = flows("100kbit", "6000", "20");
    assert!(ok, "{v:#}\n{}", logs(&lab));
    assert_eq!(
        (
            &v["outcome"],
            &v["count"],
            &v["reserved"],
            &v["failed"],
            &v["refused"],
            &v["pending"]
        ),
        (
            &"reserved".into(),
            &20.into(),
            &20.into(),
            &0.into(),
            &0.into(),
            &0.into()
        ),
        "{v:#}"
    );
    let ids: std::collections::BTreeSet<&str> = v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(ids.len(), 20, "one session per flow: {v:#}");
    for (r, name) in NODES.iter().enumerate().take(4).skip(1) {
        let s = sessions(&lab, r);
        assert_eq!(s.len(), 20, "{name}: {s:?}");
        assert!(
            s.iter()
                .all(|s| s["role"] == "QNE" && s["rate_bps"] == 100_000)
        );
    }
    assert_eq!(sessions(&lab, 4).len(), 20);

    // 10 × 1 Mbit/s more: 8 fit the 10 Mbit/s reservable beside the 2 held; H1 refuses the
    // last two before sending anything, and the command fails.
    let (v, ok) = flows("1Mbit", "7000", "10");
    assert!(!ok, "{v:#}");
    assert_eq!(
        (&v["outcome"], &v["reserved"], &v["refused"], &v["failed"]),
        (&"failed".into(), &8.into(), &2.into(), &0.into()),
        "{v:#}"
    );
    assert!(
        v["error"].as_str().is_some_and(|e| e.contains("admission")),
        "{v:#}"
    );
    assert_eq!(sessions(&lab, R2).len(), 28);
}

/// HTB classes of `dev` on node `i` (tc's text).
fn classes(lab: &Lab, i: usize, dev: &str) -> String {
    lab.exec_ok(i, &["tc", "class", "show", "dev", dev])
        .unwrap_or_default()
}

#[test]
fn a_reservation_installs_an_htb_class_at_every_hop_and_its_release_removes_them() {
    let test = "a_reservation_installs_an_htb_class_at_every_hop_and_its_release_removes_them";
    if skip(test, &["ip", "iptables", "tc"]) {
        return;
    }
    let _g = serial();
    let lab = chain("htb");
    // GIST's messaging associations (C-mode, TCP port 30000 by default) are in the signalling
    // class on every managed interface, both ways, like its datagrams (UDP 270).
    for (i, name) in NODES.iter().enumerate().take(4) {
        let f = lab
            .exec_ok(i, &["tc", "filter", "show", "dev", "e0"])
            .unwrap_or_default();
        let to_signalling = |port_match: &str| {
            f.split("filter ").any(|rule| {
                rule.contains("flowid 5057:fffd")
                    && rule.contains("match 00060000/00ff0000 at 8")
                    && rule.contains(port_match)
            })
        };
        // u32 keys: the ports are the first 32 bits after a 20-byte IPv4 header.
        for port_match in [
            "match 00007530/0000ffff at 20",
            "match 75300000/ffff0000 at 20",
        ] {
            assert!(to_signalling(port_match), "{name}: {port_match} in\n{f}");
        }
    }
    let (v, ok) = qos(
        &lab,
        H1,
        &[
            "reserve",
            H2_V4,
            "--rate",
            "4Mbit",
            "--protocol",
            "17",
            "--dport",
            "5001",
        ],
    );
    assert!(ok && v["outcome"] == "reserved", "{v:#}\n{}", logs(&lab));
    let session = v["session"].as_str().unwrap().to_string();
    // H1, R1, R2, R3 each hold a 4 Mbit/s class on the interface towards H2 (RSVP's HTB
    // layout: 5057:2 is the first reservation's class).
    for (i, name) in NODES.iter().enumerate().take(4) {
        let c = classes(&lab, i, "e0");
        assert!(
            c.lines()
                .any(|l| l.contains("5057:2 ") && l.contains("rate 4Mbit")),
            "{name}: {c}"
        );
    }
    let (v, ok) = qos(&lab, H1, &["release", &session]);
    assert!(ok && v["outcome"] == "released", "{v:#}");
    wait_for(Duration::from_secs(5), "the classes to go", || {
        (0..4)
            .all(|i| !classes(&lab, i, "e0").contains("5057:2 "))
            .then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", logs(&lab)));
}

#[test]
fn a_reserved_flow_keeps_its_rate_under_a_flood() {
    let test = "a_reserved_flow_keeps_its_rate_under_a_flood";
    if skip(test, &["ip", "iptables", "tc", "iperf3"]) {
        return;
    }
    let _g = serial();
    let mut lab = chain_with((0..5).map(bottleneck_section).collect());
    lab.spawn("iperf-flow", 4, &["iperf3", "-s", "-p", "5001", "-J"])
        .unwrap();
    lab.spawn("iperf-flood", 4, &["iperf3", "-s", "-p", "5202"])
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let without = median_of_three(&mut lab, H1, H2_V4, "without").unwrap();
    // A QoS NSLP reservation of 4 Mbit/s for the flow (UDP to port 5001), as an operator
    // makes it.
    let (v, ok) = qos(
        &lab,
        H1,
        &[
            "reserve",
            H2_V4,
            "--rate",
            "4Mbit",
            "--protocol",
            "17",
            "--dport",
            "5001",
        ],
    );
    assert!(ok && v["outcome"] == "reserved", "{v:#}\n{}", logs(&lab));
    let session = v["session"].as_str().unwrap().to_string();
    let with = median_of_three(&mut lab, H1, H2_V4, "with").unwrap();
    // The reservation outlived the flood (its refreshes are in the signalling class) and is
    // still in R2's class towards the bottleneck.
    let on_r2 = sessions(&lab, R2);
    assert!(
        on_r2.iter().any(|s| s["session"] == session.as_str()
            && s["interface"] == "e0"
            && s["rate_bps"] == 4_000_000),
        "{on_r2:#?}"
    );
    assert!(
        classes(&lab, R2, "e0")
            .lines()
            .any(|l| l.contains("5057:2 ") && l.contains("rate 4Mbit")),
        "{}",
        classes(&lab, R2, "e0")
    );
    println!(
        "4 Mbit/s UDP flow under a 40 Mbit/s UDP flood (median of 3): {:.2} Mbit/s without, {:.2} Mbit/s with the QoS NSLP reservation",
        without / 1e6,
        with / 1e6
    );
    assert!(with >= 0.9 * 4e6, "with the reservation: {with} bit/s");
    assert!(
        without < 0.9 * 4e6,
        "without the reservation: {without} bit/s"
    );
}

/// `tshark -n -X lua_script:gist.lua -X lua_script:qos_nslp.lua -r PCAP ARGS…` at R2, with the
/// lab directory as HOME (no personal plug-ins or preferences); fails on a Lua error, a
/// dissector bug or a malformed packet on stdout or stderr.
fn tshark_at_r2(lab: &Lab, pcap: &str, args: &[&str]) -> String {
    let lua = |name: &str| {
        format!(
            "lua_script:{}",
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../contrib/wireshark")
                .join(name)
                .display()
        )
    };
    let home = format!("HOME={}", lab.path("").display());
    let (gist, qos) = (lua("gist.lua"), lua("qos_nslp.lua"));
    let mut argv = vec![
        "env", &home, "tshark", "-n", "-X", &gist, "-X", &qos, "-r", pcap,
    ];
    argv.extend_from_slice(args);
    let out = lab.exec(R2, &argv).expect("run tshark");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "tshark {args:?}: {stderr}");
    for bad in [
        "Lua Error",
        "Lua: Error",
        "Dissector bug",
        "Malformed Packet",
    ] {
        assert!(
            !stderr.contains(bad) && !stdout.contains(bad),
            "tshark {args:?}: {bad}:\n{stderr}\n{stdout}"
        );
    }
    stdout
}

#[test]
fn tshark_decodes_every_qos_nslp_message_on_the_path() {
    let test = "tshark_decodes_every_qos_nslp_message_on_the_path";
    if skip(test, &["ip", "iptables", "tshark"]) {
        return;
    }
    let _g = serial();
    let mut lab = chain("memory");
    // GIST at R2, both ways: datagrams (UDP 270, Queries with a Router Alert) and messaging
    // associations (TCP).
    let pcap = capture(
        &mut lab,
        "tshark",
        R2,
        &["w0", "e0"],
        "udp or tcp",
        "r2.pcap",
    )
    .unwrap()
    .to_string_lossy()
    .into_owned();

    // Sender-initiated: RESERVE down, RESPONSE up; then its refreshes (refresh_period 5 s).
    let (v, ok) = qos(&lab, H1, &["reserve", H2_V4, "--rate", "1Mbit"]);
    assert!(ok && v["outcome"] == "reserved", "{v:#}\n{}", logs(&lab));
    let sent = v["session"].as_str().unwrap().to_string();
    // A QUERY for what the path could give, answered by a RESPONSE.
    let (v, ok) = qos(&lab, H1, &["query", H2_V4, "--rate", "1Mbit"]);
    assert!(ok && v["outcome"] == "answered", "{v:#}");
    // Receiver-initiated: H1's reserve-init QUERY down, H2's RESERVE back up.
    let (v, ok) = qos(
        &lab,
        H1,
        &["reserve", H2_V4, "--rate", "1Mbit", "--receiver-initiated"],
    );
    assert!(ok && v["outcome"] == "requested", "{v:#}");
    let rx = v["session"].as_str().unwrap().to_string();
    wait_for(
        Duration::from_secs(5),
        "the receiver-initiated RESERVE",
        || {
            sessions(&lab, 4)
                .iter()
                .any(|s| s["session"] == rx.as_str() && s["role"] == "QNI")
                .then_some(())
        },
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", logs(&lab)));
    // Long enough for a refresh of both.
    std::thread::sleep(Duration::from_secs(7));
    // Tearing RESERVEs from both initiators.
    let (v, ok) = qos(&lab, 4, &["release", &rx]);
    assert!(ok && v["outcome"] == "released", "{v:#}");
    let (v, ok) = qos(&lab, H1, &["release", &sent]);
    assert!(ok && v["outcome"] == "released", "{v:#}");
    wait_for(
        Duration::from_secs(5),
        "the tears to reach the far end",
        || (0..5).all(|i| sessions(&lab, i).is_empty()).then_some(()),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", logs(&lab)));
    std::thread::sleep(Duration::from_secs(1));
    lab.terminate("tshark", Duration::from_secs(5)).unwrap();

    // Every QoS NSLP message decoded, by type and flags.
    let fields = tshark_at_r2(
        &lab,
        &pcap,
        &[
            "-Y",
            "qos_nslp",
            "-T",
            "fields",
            "-E",
            "occurrence=f",
            "-e",
            "qos_nslp.type",
            "-e",
            "qos_nslp.flags.tear",
            "-e",
            "qos_nslp.flags.reserve_init",
        ],
    );
    let rows: Vec<Vec<&str>> = fields
        .lines()
        .map(|l| l.split('\t').collect())
        .filter(|r: &Vec<&str>| r.len() == 3)
        .collect();
    let count = |f: &dyn Fn(&[&str]) -> bool| rows.iter().filter(|r| f(r)).count();
    let truthy = |x: &str| x == "1" || x == "True";
    // RFC 5974 §5.1.1: RESERVE 1, QUERY 2, RESPONSE 3.
    let reserves = count(&|r| r[0] == "1" && !truthy(r[1]));
    let tears = count(&|r| r[0] == "1" && truthy(r[1]));
    let queries = count(&|r| r[0] == "2" && !truthy(r[2]));
    let reserve_init = count(&|r| r[0] == "2" && truthy(r[2]));
    let responses = count(&|r| r[0] == "3");
    println!(
        "at R2: {reserves} RESERVEs, {tears} tearing, {queries} QUERYs, {reserve_init} reserve-init QUERYs, {responses} RESPONSEs"
    );
    // Each direction at R2 sees the message once per interface it crosses.
    assert!(
        reserves >= 4,
        "RESERVEs (two reservations, refreshed): {reserves}\n{fields}"
    );
    assert!(tears >= 2, "tearing RESERVEs: {tears}\n{fields}");
    assert!(queries >= 1, "QUERYs: {queries}\n{fields}");
    assert!(
        reserve_init >= 1,
        "reserve-init QUERYs: {reserve_init}\n{fields}"
    );
    assert!(responses >= 2, "RESPONSEs: {responses}\n{fields}");

    // Nothing malformed, no expert warning or error from GIST or the QoS NSLP.
    let flagged = tshark_at_r2(
        &lab,
        &pcap,
        &[
            "-Y",
            "_ws.malformed || _ws.expert.severity >= warning",
            "-T",
            "fields",
            "-e",
            "frame.number",
            "-e",
            "_ws.expert.message",
        ],
    );
    let experts = tshark_at_r2(&lab, &pcap, &["-q", "-z", "expert,warn"]);
    for line in experts.lines() {
        let protocol = line.split_whitespace().nth(2).unwrap_or_default();
        assert!(
            !["GIST", "QOS_NSLP", "QoS"].contains(&protocol),
            "expert warning: {line}\n{experts}"
        );
    }
    assert!(!experts.contains("Errors ("), "{experts}");
    assert!(
        flagged.trim().is_empty(),
        "frames with warnings or errors:\n{flagged}"
    );
}
