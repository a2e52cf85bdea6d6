//! `pathwise bench gist-interception`: what it costs a GIST router to take Q-mode packets off
//! the path (root). On the five-node namespace chain with a daemon on R2 only, H1 floods Queries
//! towards H2 with the IP Router Alert option (`pathwise gist attack --router-alert`), once for
//! the NSLP R2 serves (the Ping NSLP: intercepted, answered with a Response) and once for an
//! NSLPID it does not serve (passed on towards H2), under each interception mechanism:
//!
//! - `netfilter`: iptables queues the datagrams in transit to the daemon (every Router Alert
//!   value; the kernel forwards what the daemon accepts);
//! - `socket`: `IP_ROUTER_ALERT` diverts value-0 datagrams to the daemon, which sends on what
//!   it does not want itself.
//!
//! The figure is R2's daemon CPU (schedstat, all threads, the idle rate measured before the
//! flood subtracted) per Query sent. Kernel work done outside the daemon's system calls (the
//! netfilter hook, forwarding) is not in it. Value 0 is used for both mechanisms so the two are
//! comparable; `netfilter` is what also sees other values.

use super::chain::{IDLE, cpu_ns, median_of};
use crate::gist::chain::{self as gist_chain, H1, H2_V4, Options, R2};
use crate::netns::Lab;
use serde_json::{Value, json};
use std::path::Path;

/// What `bench gist-interception` runs.
#[derive(Debug, Clone)]
pub struct Params {
    /// Queries per second from H1.
    pub rate: u32,
    /// Seconds per flood.
    pub seconds: f64,
    /// Rounds (each mechanism once per round, alternating); medians reported.
    pub runs: usize,
}

/// An NSLPID R2 does not serve.
const UNSERVED_NSLPID: u16 = 4242;

/// One flood of `nslpid` Queries from H1 through R2; R2's net CPU per Query (ns) and its GIST
/// counters after.
fn flood(lab: &Lab, bin: &Path, p: &Params, nslpid: u16, pid: u32) -> anyhow::Result<Value> {
    let idle0 = cpu_ns(pid)?;
    std::thread::sleep(IDLE);
    let before = cpu_ns(pid)?;
    let idle_ns_per_s = (before.saturating_sub(idle0)) as f64 / IDLE.as_secs_f64();
    let t0 = std::time::Instant::now();
    let out = lab.exec_ok(
        H1,
        &[
            &bin.to_string_lossy(),
            "gist",
            "--json",
            "attack",
            H2_V4,
            "--router-alert",
            "0",
            "--nslpid",
            &nslpid.to_string(),
            "--rate",
            &p.rate.to_string(),
            "--duration",
            &format!("{}ms", (p.seconds * 1000.0) as u64),
        ],
    )?;
    let after = cpu_ns(pid)?;
    let secs = t0.elapsed().as_secs_f64();
    let sent: Value = serde_json::from_str(&out)?;
    let queries = sent["queries"].as_u64().unwrap_or(0).max(1) as f64;
    let net_ns = (after.saturating_sub(before)) as f64 - idle_ns_per_s * secs;
    let sock = gist_chain::socket(lab, R2);
    let counters: Value = serde_json::from_str(&lab.exec_ok(
        R2,
        &[
            &bin.to_string_lossy(),
            "gist",
            "--json",
            "--socket",
            &sock.to_string_lossy(),
            "show",
            "counters",
        ],
    )?)?;
    Ok(json!({
        "queries": sent["queries"],
        "responses": sent["responses"],
        "ns_per_query": (net_ns / queries).max(0.0),
        "idle_ns_per_s": idle_ns_per_s,
        "interception": counters["interception"],
        "transit": counters["transit"],
        "transit_forwarded": counters["transit_forwarded"],
        "queries_in": counters["messages_in"]["Query"],
    }))
}

/// Both floods on a fresh chain whose R2 intercepts with `mechanism`.
fn one(bin: &Path, p: &Params, mechanism: &str) -> anyhow::Result<Value> {
    let mut gist = [false; 5];
    gist[R2] = true;
    let lab = gist_chain::build(
        bin,
        &Options {
            gist,
            extra: format!("interception = \"{mechanism}\""),
            ..Options::default()
        },
    )?;
    let pid = lab
        .pid("r2")
        .ok_or_else(|| anyhow::anyhow!("no pid for r2"))?;
    let served = flood(&lab, bin, p, pathwise_gist::nslp::ping::NSLPID, pid)?;
    let passed = flood(&lab, bin, p, UNSERVED_NSLPID, pid)?;
    Ok(json!({ "intercepted": served, "passed": passed }))
}

/// Run `p.runs` rounds of both mechanisms, alternating, each on fresh chains.
pub fn run(p: &Params) -> anyhow::Result<Value> {
    if let Some(why) = crate::netns::unavailable(&["iptables", "ip6tables"]) {
        anyhow::bail!("bench gist-interception needs root, network namespaces and iptables: {why}");
    }
    let bin = std::env::current_exe()?;
    let mechanisms = ["netfilter", "socket"];
    let mut runs: Vec<Value> = Vec::new();
    for _ in 0..p.runs.max(1) {
        for m in mechanisms {
            let mut v = one(&bin, p, m)?;
            v["mechanism"] = json!(m);
            runs.push(v);
        }
    }
    let mut summary = serde_json::Map::new();
    for m in mechanisms {
        let mut row = serde_json::Map::new();
        for kind in ["intercepted", "passed"] {
            let mut xs: Vec<f64> = runs
                .iter()
                .filter(|r| r["mechanism"] == m)
                .filter_map(|r| r[kind]["ns_per_query"].as_f64())
                .collect();
            xs.sort_by(f64::total_cmp);
            row.insert(
                kind.into(),
                json!({
                    "median_ns": median_of(&xs),
                    "min_ns": xs.first(),
                    "max_ns": xs.last(),
                }),
            );
        }
        summary.insert(m.into(), Value::Object(row));
    }
    Ok(json!({
        "rate": p.rate,
        "seconds": p.seconds,
        "runs": p.runs,
        "summary": summary,
        "runs_detail": runs,
    }))
}

/// The summary as a table.
pub fn render(v: &Value) -> String {
    let mut s = format!(
        "GIST interception at R2 (H1 > R1 > R2 > R3 > H2, daemon on R2 only): Queries with Router \
         Alert 0 at {}/s for {} s; R2 daemon CPU per Query, medians of {} runs\n",
        v["rate"], v["seconds"], v["runs"]
    );
    s += "mechanism   intercepted ns/Query (min-max)   passed ns/Query (min-max)\n";
    let f = |x: &Value| x.as_f64().map_or("-".into(), |n| format!("{n:.0}"));
    for m in ["netfilter", "socket"] {
        let row = &v["summary"][m];
        let cell = |k: &str| {
            let c = &row[k];
            format!(
                "{} ({}-{})",
                f(&c["median_ns"]),
                f(&c["min_ns"]),
                f(&c["max_ns"])
            )
        };
        s += &format!(
            "{m:<11} {:>32}   {:>25}\n",
            cell("intercepted"),
            cell("passed")
        );
    }
    s
}
