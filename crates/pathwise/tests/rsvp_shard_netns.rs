//! Sharded RSVP daemons on a real network (issue #21): the five-namespace chain H1 – R1 – R2 –
//! R3 – H2 with `[daemon] threads = 2` on every node and HTB traffic control. Flows churn for a
//! bounded time; at every check the path and reservation state counts agree at every node
//! (summed over both shards, and with the sessions the node lists), the sessions are spread over
//! both shards, and after teardown no state, HTB class or label is left anywhere. Needs root,
//! `ip` and `tc`; skips with the reason otherwise.

mod common;

use common::netns::{bin, json_cli, serial, skip};
use pathwise::netns::{Lab, wait_for};
use pathwise::rsvp::chain::{H1, H2, NODES, R1, R2, R3, RECEIVER, SENDER};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// Flows: enough that both shards of every node get some.
const FLOWS: u16 = 20;
const KBIT: u32 = 100;

fn cli(lab: &Lab, i: usize, args: &[&str]) -> anyhow::Result<Value> {
    json_cli(lab, i, "rsvp", &pathwise::rsvp::chain::socket(lab, i), args)
}

fn counters(lab: &Lab, i: usize) -> Value {
    cli(lab, i, &["show", "counters"]).unwrap_or_default()
}

fn sessions(lab: &Lab, i: usize) -> usize {
    cli(lab, i, &["show", "sessions"])
        .ok()
        .and_then(|v| v.as_array().map(Vec::len))
        .unwrap_or(usize::MAX)
}

fn port(k: u16) -> String {
    (5001 + k).to_string()
}

fn open(lab: &Lab, k: u16) -> anyhow::Result<()> {
    let (p, rate) = (port(k), format!("{KBIT}kbit"));
    cli(
        lab,
        H1,
        &[
            "sender", "add", "--src", SENDER, "--rate", &rate, "--dest", RECEIVER, "--port", &p,
        ],
    )?;
    cli(
        lab,
        H2,
        &[
            "reserve", "--style", "ff", "--sender", SENDER, "--rate", &rate, "--dest", RECEIVER,
            "--port", &p,
        ],
    )?;
    Ok(())
}

fn close(lab: &Lab, k: u16) -> anyhow::Result<()> {
    let p = port(k);
    cli(lab, H2, &["release", "--dest", RECEIVER, "--port", &p])?;
    cli(
        lab,
        H1,
        &[
            "sender", "del", "--dest", RECEIVER, "--port", &p, "--src", SENDER,
        ],
    )?;
    Ok(())
}

/// Node `i` holds `n` sessions, each with its path state and its reservation: counters summed over the shards agree with each other, with the shards'
/// own figures and with the sessions the node lists.
fn consistent(lab: &Lab, i: usize, n: u64) -> Option<()> {
    let c = counters(lab, i);
    let shards = c["shards"].as_array()?;
    let sum = |k: &str| shards.iter().filter_map(|s| s[k].as_u64()).sum::<u64>();
    // The receiver's own request is a reservation state block too (RFC 2205 §3.11.1).
    let resv = n;
    (shards.len() == 2
        && c["sessions"].as_u64() == Some(n)
        && c["path_states"].as_u64() == Some(n)
        && c["resv_states"].as_u64() == Some(resv)
        && sum("sessions") == n
        && sum("path_states") == n
        && sum("resv_states") == resv
        && sessions(lab, i) == n as usize)
        .then_some(())
}

fn all_consistent(lab: &Lab, n: u64, what: &str) -> anyhow::Result<()> {
    for (i, node) in NODES.iter().enumerate() {
        wait_for(
            Duration::from_secs(10),
            &format!("{what} at {node}"),
            || consistent(lab, i, n),
        )
        .map_err(|e| anyhow::anyhow!("{e}: {}", counters(lab, i)))?;
    }
    Ok(())
}

/// The HTB classes on `i`'s `e0`, one per line, sorted (tc lists them in hash order).
fn classes(lab: &Lab, i: usize) -> String {
    let out = lab
        .exec_ok(i, &["tc", "class", "show", "dev", "e0"])
        .unwrap_or_default();
    let mut lines: Vec<&str> = out.lines().filter(|l| !l.trim().is_empty()).collect();
    lines.sort_unstable();
    lines.join("\n")
}

/// LSPs headed by H1's two shards (RFC 3209; `rsvp lsp add` goes to the shard the name picks,
/// which picks a Tunnel ID of its own sessions): all come up with a label from R1, are listed
/// once each by `show lsp` (gathered from both shards), and `rsvp lsp del` tears each down.
fn lsps_headed_by_two_shards(lab: &Lab) -> anyhow::Result<()> {
    const LSPS: usize = 6;
    let names: Vec<String> = (0..LSPS).map(|k| format!("t{k}")).collect();
    for name in &names {
        cli(
            lab,
            H1,
            &[
                "lsp",
                "add",
                name,
                "--to",
                RECEIVER,
                "--bandwidth",
                "100kbit",
            ],
        )?;
    }
    let heads = |lab: &Lab| -> Vec<Value> {
        cli(lab, H1, &["show", "lsp"])
            .ok()
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
            .into_iter()
            .filter(|l| l["role"] == "head-end")
            .collect()
    };
    let up = wait_for(Duration::from_secs(10), "every LSP up at H1", || {
        let h = heads(lab);
        (h.len() == LSPS && h.iter().all(|l| l["status"] == "up")).then_some(h)
    })
    .map_err(|e| anyhow::anyhow!("{e}: {:?}", heads(lab)))?;
    let mut listed: Vec<&str> = up.iter().filter_map(|l| l["name"].as_str()).collect();
    listed.sort_unstable();
    assert_eq!(listed, names.iter().map(String::as_str).collect::<Vec<_>>());
    for name in &names {
        cli(lab, H1, &["lsp", "del", name])?;
    }
    wait_for(Duration::from_secs(10), "no LSP at H1", || {
        heads(lab).is_empty().then_some(())
    })
}

#[test]
fn two_shards_with_churning_flows_leave_nothing_behind() -> anyhow::Result<()> {
    churn_on_two_shards(
        "two_shards_with_churning_flows_leave_nothing_behind",
        false,
        None,
    )
}

/// The same with message integrity (RFC 2747) required on every interface and refresh
/// reduction: the shards sign from one sequence per key, the dispatcher signs again the
/// parts of what it cuts, each shard challenges its neighbours and gets its own Response.
/// Nothing is refused but what waited for a handshake (and stale copies resent after a
/// Challenge, RFC 2961 §4.5).
#[test]
fn two_shards_with_integrity_leave_nothing_behind() -> anyhow::Result<()> {
    churn_on_two_shards(
        "two_shards_with_integrity_leave_nothing_behind",
        true,
        Some(pathwise_auth::Algorithm::HmacSha256),
    )
}

/// The same with refresh reduction (RFC 2961) on every node: identified messages acknowledged
/// by the shard that sent them, state kept by Srefresh, one Epoch per node.
#[test]
fn two_shards_with_refresh_reduction_leave_nothing_behind() -> anyhow::Result<()> {
    churn_on_two_shards(
        "two_shards_with_refresh_reduction_leave_nothing_behind",
        true,
        None,
    )
}

fn churn_on_two_shards(
    name: &str,
    refresh_reduction: bool,
    integrity: Option<pathwise_auth::Algorithm>,
) -> anyhow::Result<()> {
    if skip(name, &["tc"]) {
        return Ok(());
    }
    let _serial = serial();
    let lab = pathwise::rsvp::chain::build_with(
        Path::new(bin()),
        &pathwise::rsvp::chain::Options {
            tc: "htb",
            refresh: "1s",
            threads: 2,
            refresh_reduction,
            integrity,
            ..Default::default()
        },
    )?;
    let before: Vec<String> = [R1, R2, R3].iter().map(|&r| classes(&lab, r)).collect();
    for k in 0..FLOWS {
        open(&lab, k)?;
    }
    all_consistent(&lab, u64::from(FLOWS), "every flow")?;
    lsps_headed_by_two_shards(&lab)?;
    all_consistent(&lab, u64::from(FLOWS), "every flow, the LSPs gone")?;
    // The sessions are spread: both shards of every router hold some, and both read messages.
    for (n, r) in [R1, R2, R3].into_iter().enumerate() {
        let c = counters(&lab, r);
        for s in c["shards"].as_array().into_iter().flatten() {
            assert!(s["sessions"].as_u64() > Some(0), "{}: {c}", NODES[r]);
            assert!(s["messages_in"].as_u64() > Some(0), "{}: {c}", NODES[r]);
        }
        let installed: f64 = cli(&lab, r, &["show", "sessions"])?
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|s| s["installed"].as_array().cloned().unwrap_or_default())
            .filter_map(|x| x["kbps"].as_f64())
            .sum();
        assert_eq!(
            installed,
            f64::from(KBIT) * f64::from(FLOWS),
            "{}",
            NODES[r]
        );
        let with = classes(&lab, r);
        assert!(
            with.lines().count() > before[n].lines().count(),
            "{}: {with}",
            NODES[r]
        );
    }
    // Churn for a bounded time: close half the flows, open them again, the other half next.
    let until = Instant::now() + Duration::from_secs(20);
    let mut round = 0u16;
    while Instant::now() < until && round < 4 {
        let half: Vec<u16> = (0..FLOWS).filter(|k| k % 2 == round % 2).collect();
        for &k in &half {
            close(&lab, k)?;
        }
        all_consistent(&lab, u64::from(FLOWS) - half.len() as u64, "half the flows")?;
        for &k in &half {
            open(&lab, k)?;
        }
        all_consistent(&lab, u64::from(FLOWS), "every flow again")?;
        round += 1;
    }
    assert!(round >= 1, "no churn round finished in time");
    for k in 0..FLOWS {
        close(&lab, k)?;
    }
    all_consistent(&lab, 0, "no flow")?;
    for (i, node) in NODES.iter().enumerate() {
        let c = counters(&lab, i);
        assert_eq!(c["reservations"].as_u64(), Some(0), "{node}: {c}");
        assert_eq!(c["labels_in_use"].as_u64(), Some(0), "{node}: {c}");
        assert_eq!(c["receiver_requests"].as_u64(), Some(0), "{node}: {c}");
        assert_eq!(
            c["drops"]["shard_queue_full"].as_u64(),
            Some(0),
            "{node}: {c}"
        );
        if refresh_reduction {
            let rr = &c["refresh_reduction"];
            // One Epoch per node (RFC 2961 §4.5): no neighbour saw a shard's as a restart.
            assert_eq!(rr["epoch_changes"].as_u64(), Some(0), "{node}: {c}");
            // Every message of every node carries the capable flag (RFC 2961 §2).
            assert_eq!(rr["capability_lost"].as_u64(), Some(0), "{node}: {c}");
            assert!(rr["acks_received"].as_u64() > Some(0), "{node}: {c}");
            // With integrity, a shard's first messages from a neighbour wait for its
            // handshake (RFC 2747 §4.3), and a copy resent after a Challenge that is older
            // than what arrived since is out of order (RFC 2961 §4.5). `close` releases at the
            // receiver and deletes the sender at once, so a ResvTear may cross the PathTear
            // that already removed the session upstream.
            let expected = |reason: &str| {
                reason == "resv_tear_unknown_session"
                    || integrity.is_some()
                        && matches!(reason, "integrity_awaiting_challenge" | "out_of_order")
            };
            assert!(
                c["drops"]
                    .as_object()
                    .is_some_and(|d| d.iter().all(|(r, n)| n == 0 || expected(r))),
                "{node}: {c}"
            );
        }
        if integrity.is_some() {
            let i = &c["integrity"];
            assert!(i["verified"].as_u64() > Some(0), "{node}: {c}");
            assert!(i["signed"].as_u64() > Some(0), "{node}: {c}");
            assert!(i["handshakes"].as_u64() > Some(0), "{node}: {c}");
        }
    }
    if refresh_reduction {
        // The routers kept state by summary refresh (1 s refreshes over the run).
        for r in [R1, R2, R3] {
            let c = counters(&lab, r);
            assert!(
                c["refresh_reduction"]["summarized"].as_u64() > Some(0),
                "{}: {c}",
                NODES[r]
            );
        }
    }
    // No HTB class is left of those the reservations installed.
    for (n, r) in [R1, R2, R3].into_iter().enumerate() {
        wait_for(Duration::from_secs(5), "the classes removed", || {
            (classes(&lab, r) == before[n]).then_some(())
        })
        .map_err(|e| {
            anyhow::anyhow!(
                "{e}: {} has {}, had {}",
                NODES[r],
                classes(&lab, r),
                before[n]
            )
        })?;
    }
    Ok(())
}

/// `[[rsvp.lsp]]` on a head end with two shards follows a SIGHUP reload: an LSP added to the
/// file comes up end to end (headed by the shard its name hashes to), one removed from it is
/// torn down at every node, and one left as it was is left alone (same LSP ID, still up).
#[test]
fn a_reload_adds_and_removes_the_configured_lsps_of_a_sharded_head_end() -> anyhow::Result<()> {
    let test = "a_reload_adds_and_removes_the_configured_lsps_of_a_sharded_head_end";
    if skip(test, &[]) {
        return Ok(());
    }
    let _serial = serial();
    let lsp_table = |name: &str| {
        format!("[[rsvp.lsp]]\nname = {name:?}\nto = {RECEIVER:?}\nbandwidth = \"100kbit\"\n")
    };
    let before = lsp_table("keep") + &lsp_table("gone");
    let extra = [(H1, before.as_str())];
    let options = pathwise::rsvp::chain::Options {
        refresh: "1s",
        extra: &extra,
        threads: 2,
        ..Default::default()
    };
    let lab = pathwise::rsvp::chain::build_with(Path::new(bin()), &options)?;
    let named = |lab: &Lab, i: usize, name: &str| -> Option<Value> {
        cli(lab, i, &["show", "lsp"])
            .ok()?
            .as_array()?
            .iter()
            .find(|l| l["name"] == name)
            .cloned()
    };
    let up_everywhere = |lab: &Lab, name: &str| {
        wait_for(
            Duration::from_secs(10),
            &format!("{name} up end to end"),
            || {
                (named(lab, H1, name)?["status"] == "up" && named(lab, H2, name)?["status"] == "up")
                    .then_some(())
            },
        )
    };
    up_everywhere(&lab, "keep")?;
    up_everywhere(&lab, "gone")?;
    let kept = named(&lab, H1, "keep").unwrap_or_default();
    assert!(kept["lsp_id"].is_u64(), "{kept}");

    // The file now names "keep" and "new": reload.
    let config = lab.path(&format!("{}.toml", NODES[H1]));
    let text = std::fs::read_to_string(&config)?;
    assert!(
        text.contains(&before),
        "the LSPs are in {}",
        config.display()
    );
    std::fs::write(
        &config,
        text.replace(&before, &(lsp_table("keep") + &lsp_table("new"))),
    )?;
    let pid = lab
        .pid(NODES[H1])
        .ok_or_else(|| anyhow::anyhow!("no pid for H1"))?;
    let hup = std::process::Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .status()?;
    assert!(hup.success());

    up_everywhere(&lab, "new").map_err(|e| anyhow::anyhow!("{e}; log: {}", lab.log(NODES[H1])))?;
    wait_for(
        Duration::from_secs(10),
        "gone torn down at every node",
        || {
            [H1, R1, R2, R3, H2]
                .iter()
                .all(|&n| named(&lab, n, "gone").is_none())
                .then_some(())
        },
    )?;
    let still = named(&lab, H1, "keep").unwrap_or_default();
    assert_eq!(still["status"], "up", "{still}");
    assert_eq!(
        still["lsp_id"], kept["lsp_id"],
        "keep left alone: {kept} then {still}"
    );
    Ok(())
}
