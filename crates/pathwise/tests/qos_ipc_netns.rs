//! The QoS NSLP out of process (issue 17): on the five-namespace chain H1 – R1 – R2 – R3 – H2
//! of `qos_netns.rs`, the transit daemons and H2's run `[qos_nslp]` in process, while H1's
//! daemon has none: `pathwise qos nslp --ipc-socket` runs the QoS NSLP on H1 as its own process
//! over GIST's IPC NSLP API, admitting on H1's interface towards H2 (found in the kernel's
//! routes). Needs root, `ip` and `iptables`; skipped with a message otherwise. The namespaces
//! go when the test ends.

mod common;

use common::netns::{bin, serial, skip};
use pathwise::gist::chain::{self as gist_chain, H1, H2, H2_V4, NODES, Options, R2};
use pathwise::netns::{Lab, wait_for};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// `[rsvp]` (memory, 10 Mbit/s reservable) and `[qos_nslp]` on every node but H1; every
/// daemon's GIST has an IPC socket `{lab}{node}-ipc.sock`.
fn chain() -> Lab {
    let sections: Vec<String> = (0..5)
        .map(|i| {
            let ifaces: &[&str] = match i {
                H1 => return String::new(),
                H2 => &["w0"],
                _ => &["w0", "e0"],
            };
            let mut s = "\n[qos_nslp]\nrefresh_period = \"5s\"\n\n[rsvp]\ntraffic_control = \"memory\"\n".to_string();
            for name in ifaces {
                s += &format!(
                    "\n[[rsvp.interface]]\nname = \"{name}\"\nbandwidth = \"100Mbit\"\nreservable = \"10Mbit\"\n"
                );
            }
            s
        })
        .collect();
    let o = Options {
        refresh: "10s",
        extra: "interception = \"netfilter\"\nipc_socket = \"{lab}{node}-ipc.sock\"\n".into(),
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

fn logs(lab: &Lab) -> String {
    NODES
        .iter()
        .chain(&["qosnslp"])
        .map(|n| {
            let l = lab.log(n);
            let v: Vec<&str> = l.lines().collect();
            format!("--- {n}\n{}\n", v[v.len().saturating_sub(20)..].join("\n"))
        })
        .collect()
}

/// `pathwise qos --json show` at node `i`: its sessions.
fn sessions(lab: &Lab, i: usize) -> Vec<Value> {
    let sock = gist_chain::socket(lab, i);
    let out = lab
        .exec_ok(
            i,
            &[
                bin(),
                "qos",
                "--json",
                "--socket",
                sock.to_str().unwrap(),
                "show",
            ],
        )
        .unwrap_or_else(|e| panic!("qos show at {}: {e}\n{}", NODES[i], logs(lab)));
    let v: Value = serde_json::from_str(&out).expect("qos show --json");
    v["sessions"].as_array().cloned().unwrap_or_default()
}

/// The JSON lines the out-of-process NSLP printed so far.
fn events(lab: &Lab) -> Vec<Value> {
    lab.log("qosnslp")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn qos_nslp_out_of_process_reserves_along_the_path_and_releases_when_killed() {
    let test = "qos_nslp_out_of_process_reserves_along_the_path_and_releases_when_killed";
    if skip(test, &["ip", "iptables"]) {
        return;
    }
    let _g = serial();
    let mut lab = chain();
    let sock = lab
        .path(&format!("{}-ipc.sock", NODES[H1]))
        .to_string_lossy()
        .into_owned();
    // Two flows of 4 Mbit/s where H1's e0 has 6 Mbit/s to give: the second is refused at H1,
    // which only an admission on the flow's outgoing link (the route lookup over IPC) does.
    lab.spawn(
        "qosnslp",
        H1,
        &[
            bin(),
            "qos",
            "nslp",
            "--json",
            "--ipc-socket",
            &sock,
            "--interface",
            "e0:100Mbit:6Mbit",
            "--refresh-period",
            "5s",
            "--rate",
            "4Mbit",
            "--protocol",
            "17",
            "--dport",
            "5001",
            "--reserve",
            H2_V4,
            "--reserve",
            H2_V4,
        ],
    )
    .unwrap();
    let ev = wait_for(Duration::from_secs(10), "the reservation", || {
        let ev = events(&lab);
        ev.iter().any(|e| e["event"] == "reserved").then_some(ev)
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", logs(&lab)));
    assert_eq!(ev[0]["event"], "registered", "{ev:#?}");
    let requested: Vec<&Value> = ev.iter().filter(|e| e["event"] == "requested").collect();
    assert_eq!(requested.len(), 1, "{ev:#?}");
    let session = requested[0]["session"].as_str().unwrap().to_string();
    let refused: Vec<&Value> = ev.iter().filter(|e| e["event"] == "refused").collect();
    assert_eq!(refused.len(), 1, "{ev:#?}");
    assert!(
        refused[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("admission")),
        "{ev:#?}"
    );
    let reserved = ev.iter().find(|e| e["event"] == "reserved").unwrap();
    assert_eq!(reserved["session"], session.as_str());
    assert_eq!(reserved["qspec"]["reserved"]["rate_bps"], 4_000_000);

    // The routers hold it as QNEs on their interface towards H2; H2 is the QNR.
    for (r, name) in NODES.iter().enumerate().take(4).skip(1) {
        let s = sessions(&lab, r);
        assert_eq!(s.len(), 1, "{name}: {s:#?}");
        assert_eq!(s[0]["session"], session.as_str());
        assert_eq!(s[0]["role"], "QNE");
        assert_eq!(s[0]["interface"], "e0");
        assert_eq!(s[0]["rate_bps"], 4_000_000);
    }
    let at_h2 = sessions(&lab, H2);
    assert_eq!(at_h2.len(), 1, "{at_h2:#?}");
    assert_eq!(at_h2[0]["role"], "QNR");

    // Refreshed from H1 (R = 5 s, each refresh within 1.5 R of the last, RFC 5974 §5.3.4):
    // R2's state lifetime starts again, so 8 s on it has lost less than 8 s.
    let expires = |lab: &Lab| {
        sessions(lab, R2)
            .iter()
            .find(|s| s["session"] == session.as_str())
            .and_then(|s| s["expires_in_ms"].as_u64())
            .unwrap_or_else(|| panic!("R2 lost the reservation\n{}", logs(lab)))
    };
    let before = expires(&lab);
    std::thread::sleep(Duration::from_secs(8));
    let after = expires(&lab);
    assert!(
        after + 8_000 > before + 200,
        "not refreshed: {before} ms then {after} ms\n{}",
        logs(&lab)
    );

    // SIGTERM: the NSLP tears its reservation down before it exits.
    lab.terminate("qosnslp", Duration::from_secs(5)).unwrap();
    assert!(
        events(&lab)
            .iter()
            .any(|e| e["event"] == "released" && e["session"] == session.as_str()),
        "{}",
        logs(&lab)
    );
    wait_for(Duration::from_secs(5), "the tear to reach H2", || {
        (1..5).all(|i| sessions(&lab, i).is_empty()).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", logs(&lab)));
}

/// Receiver-initiated (RFC 5974 §4.3) from the out-of-process NSLP: its QUERY with RESERVE-INIT
/// makes H2 the QNI, whose RESERVE comes back up the path to H1, the QNR, which admits it on
/// its own link towards H2 and reports it installed; H2 releases it and H1 hears the tear.
#[test]
fn qos_nslp_out_of_process_asks_for_a_receiver_initiated_reservation() {
    let test = "qos_nslp_out_of_process_asks_for_a_receiver_initiated_reservation";
    if skip(test, &["ip", "iptables"]) {
        return;
    }
    let _g = serial();
    let mut lab = chain();
    let sock = lab
        .path(&format!("{}-ipc.sock", NODES[H1]))
        .to_string_lossy()
        .into_owned();
    lab.spawn(
        "qosnslp",
        H1,
        &[
            bin(),
            "qos",
            "nslp",
            "--json",
            "--ipc-socket",
            &sock,
            "--interface",
            "e0:100Mbit:10Mbit",
            "--receiver-initiated",
            "--rate",
            "1Mbit",
            "--reserve",
            H2_V4,
        ],
    )
    .unwrap();
    let ev = wait_for(Duration::from_secs(10), "the RESERVE back at H1", || {
        let ev = events(&lab);
        ev.iter().any(|e| e["event"] == "installed").then_some(ev)
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", logs(&lab)));
    let session = ev
        .iter()
        .find(|e| e["event"] == "requested")
        .and_then(|e| e["session"].as_str())
        .unwrap_or_else(|| panic!("{ev:#?}"))
        .to_string();
    let installed = ev.iter().find(|e| e["event"] == "installed").unwrap();
    assert_eq!(installed["session"], session.as_str(), "{ev:#?}");
    let at_h2 = sessions(&lab, H2);
    assert!(
        at_h2.iter().any(|s| s["session"] == session.as_str()
            && s["role"] == "QNI"
            && s["initiation"] == "receiver"),
        "{at_h2:#?}"
    );
    let at_r2 = sessions(&lab, R2);
    assert!(
        at_r2.iter().any(|s| s["session"] == session.as_str()
            && s["interface"] == "e0"
            && s["rate_bps"] == 1_000_000),
        "{at_r2:#?}"
    );

    // Its QNI releases it; the tear reaches H1's out-of-process NSLP.
    let h2 = gist_chain::socket(&lab, H2);
    lab.exec_ok(
        H2,
        &[
            bin(),
            "qos",
            "--json",
            "--socket",
            h2.to_str().unwrap(),
            "release",
            &session,
        ],
    )
    .unwrap_or_else(|e| panic!("release at H2: {e}\n{}", logs(&lab)));
    wait_for(Duration::from_secs(5), "the tear to reach H1", || {
        events(&lab)
            .iter()
            .any(|e| e["event"] == "torn" && e["session"] == session.as_str())
            .then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", logs(&lab)));
    assert!(
        (1..5).all(|i| sessions(&lab, i).is_empty()),
        "{}",
        logs(&lab)
    );
    lab.terminate("qosnslp", Duration::from_secs(5)).unwrap();
}
