//! `pathwise bench gist-chain`: GIST daemons on the five-node namespace chain (root), the load
//! client (seed 000 §4.1.5) run from H1 towards H2 over UDP (D-mode), TCP and TLS (C-mode): session
//! setup time (end to end and per hop, seed 000 §4.4.3), steady RTTs, and the CPU time the
//! daemons spent (from /proc: user + system ticks before and after the run), per session.

use crate::gist_chain::{self, H1, H2_V4, NODES, Options, R2};
use serde_json::{Value, json};
use std::path::Path;

/// CPU ticks (user + system) of a process.
fn ticks(pid: u32) -> anyhow::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    Ok(f.get(10).copied().unwrap_or(0) + f.get(11).copied().unwrap_or(0))
}

fn ms_per_tick() -> f64 {
    // /proc reports in USER_HZ, 100 on every Linux architecture pathwise runs on.
    10.0
}

/// One load run on a fresh chain over `transport`.
fn one(
    bin: &Path,
    transport: &str,
    sessions: u32,
    rate: f64,
    steady_s: f64,
) -> anyhow::Result<Value> {
    let lab = gist_chain::build(
        bin,
        &Options {
            tls: true,
            ..Options::default()
        },
    )?;
    let pids: Vec<u32> = NODES
        .iter()
        .map(|n| lab.pid(n).ok_or_else(|| anyhow::anyhow!("no pid for {n}")))
        .collect::<Result<_, _>>()?;
    let before: Vec<u64> = pids.iter().map(|&p| ticks(p)).collect::<Result<_, _>>()?;
    let sock = gist_chain::socket(&lab, H1);
    let (n, r, d) = (
        sessions.to_string(),
        rate.to_string(),
        format!("{}ms", (steady_s * 1000.0) as u64),
    );
    let out = lab.exec_ok(
        H1,
        &[
            &bin.to_string_lossy(),
            "gist",
            "--json",
            "--socket",
            &sock.to_string_lossy(),
            "ping",
            H2_V4,
            "--transport",
            transport,
            "--sessions",
            &n,
            "--initial-rate",
            &r,
            "--steady-rate",
            &r,
            "--duration",
            &d,
        ],
    )?;
    let after: Vec<u64> = pids.iter().map(|&p| ticks(p)).collect::<Result<_, _>>()?;
    let mut v: Value = serde_json::from_str(&out)?;
    let tick = ms_per_tick();
    let cpu: Vec<f64> = before
        .iter()
        .zip(&after)
        .map(|(b, a)| (a - b) as f64 * tick)
        .collect();
    v["cpu_ms"] = json!(
        NODES
            .iter()
            .zip(&cpu)
            .map(|(n, c)| (n.to_string(), json!(c)))
            .collect::<serde_json::Map<_, _>>()
    );
    v["r2_cpu_us_per_session"] = json!(cpu[R2] * 1000.0 / f64::from(sessions));
    v["all_cpu_us_per_session"] = json!(cpu.iter().sum::<f64>() * 1000.0 / f64::from(sessions));
    v["setup_per_hop_ms"] = json!(v["setup_ms"]["median"].as_f64().map(|m| m / 4.0));
    Ok(v)
}

/// Run `runs` rounds of UDP, TCP and TLS, alternating; each round on fresh chains.
pub fn run(sessions: u32, rate: f64, runs: usize) -> anyhow::Result<Value> {
    if let Some(why) = crate::netns::unavailable(&["openssl"]) {
        anyhow::bail!("gist-chain needs network namespaces and openssl: {why}");
    }
    let bin = std::env::current_exe()?;
    // The steady phase pings each session once more (an NSLP refresh).
    let steady_s = f64::from(sessions) / rate;
    let mut out = serde_json::Map::new();
    for t in ["udp", "tcp", "tls"] {
        out.insert(t.into(), json!([]));
    }
    for _ in 0..runs {
        for t in ["udp", "tcp", "tls"] {
            let v = one(&bin, t, sessions, rate, steady_s)?;
            if let Some(a) = out.get_mut(t).and_then(Value::as_array_mut) {
                a.push(v);
            }
        }
    }
    let median = |t: &str, f: &dyn Fn(&Value) -> Option<f64>| {
        let mut xs: Vec<f64> = out[t]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(f)
            .collect();
        xs.sort_by(f64::total_cmp);
        xs.get(xs.len().saturating_sub(1) / 2).copied()
    };
    let summary: serde_json::Map<String, Value> = ["udp", "tcp", "tls"]
        .iter()
        .map(|t| {
            (
                t.to_string(),
                json!({
                    "setup_median_ms": median(t, &|v| v["setup_ms"]["median"].as_f64()),
                    "setup_p99_ms": median(t, &|v| v["setup_ms"]["p99"].as_f64()),
                    "setup_per_hop_ms": median(t, &|v| v["setup_per_hop_ms"].as_f64()),
                    "rtt_median_ms": median(t, &|v| v["rtt_ms"]["median"].as_f64()),
                    "rtt_p99_ms": median(t, &|v| v["rtt_ms"]["p99"].as_f64()),
                    "r2_cpu_us_per_session": median(t, &|v| v["r2_cpu_us_per_session"].as_f64()),
                    "all_cpu_us_per_session": median(t, &|v| v["all_cpu_us_per_session"].as_f64()),
                }),
            )
        })
        .collect();
    Ok(
        json!({ "sessions": sessions, "rate": rate, "runs": runs, "summary": summary, "runs_detail": out }),
    )
}

/// The summary as a table.
pub fn render(v: &Value) -> String {
    let mut s = format!(
        "GIST chain H1 > R1 > R2 > R3 > H2: {} sessions at {}/s, then one ping each; medians of {} runs\n",
        v["sessions"], v["rate"], v["runs"]
    );
    s += "transport  setup med ms  setup p99 ms  per hop ms  rtt med ms  rtt p99 ms  R2 CPU us/session  all CPU us/session\n";
    for t in ["udp", "tcp", "tls"] {
        let x = &v["summary"][t];
        let f = |k: &str| x[k].as_f64().map_or("-".into(), |n| format!("{n:.3}"));
        s += &format!(
            "{t:<10} {:>12}  {:>12}  {:>10}  {:>10}  {:>10}  {:>17}  {:>18}\n",
            f("setup_median_ms"),
            f("setup_p99_ms"),
            f("setup_per_hop_ms"),
            f("rtt_median_ms"),
            f("rtt_p99_ms"),
            f("r2_cpu_us_per_session"),
            f("all_cpu_us_per_session"),
        );
    }
    s
}
