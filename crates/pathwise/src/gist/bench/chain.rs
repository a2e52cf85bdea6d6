//! `pathwise bench gist-chain`: GIST daemons on the five-node namespace chain (root), the load
//! client (seed 000 §4.1.5) run from H1 towards H2 over UDP (D-mode), TCP and TLS (C-mode): session
//! setup time (end to end and per hop, seed 000 §4.4.3), steady RTTs, and the CPU time the
//! daemons spent per session.
//!
//! CPU is each daemon's on-CPU time over the run, summed over its threads from
//! `/proc/PID/task/*/schedstat` (nanoseconds; the 10 ms ticks of `/proc/PID/stat` are kept as a
//! cross-check). A quiet window before the load gives the daemon's idle rate (timers, refreshes
//! of nothing), reported beside the load figure and subtracted in the net one.

use crate::bench::plot::{Axis, Figure, Series};
use crate::gist::chain::{self as gist_chain, H1, H2_V4, NODES, Options, R2};
use serde_json::{Value, json};
use std::path::Path;

/// CPU ticks (user + system) of a process.
pub(crate) fn ticks(pid: u32) -> anyhow::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    Ok(f.get(10).copied().unwrap_or(0) + f.get(11).copied().unwrap_or(0))
}

pub(crate) fn ms_per_tick() -> f64 {
    // /proc reports in USER_HZ, 100 on every Linux architecture pathwise runs on.
    10.0
}

/// On-CPU nanoseconds of a process, summed over its threads (schedstat's first field).
pub(crate) fn cpu_ns(pid: u32) -> anyhow::Result<u64> {
    let mut total = 0;
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let s = std::fs::read_to_string(t?.path().join("schedstat"))?;
        total += s
            .split_whitespace()
            .next()
            .and_then(|x| x.parse::<u64>().ok())
            .ok_or_else(|| anyhow::anyhow!("/proc/{pid}/task/*/schedstat unreadable"))?;
    }
    Ok(total)
}

/// Both CPU measures (schedstat ns, ticks) of every process.
pub(crate) fn sample(pids: &[u32]) -> anyhow::Result<Vec<(u64, u64)>> {
    pids.iter().map(|&p| Ok((cpu_ns(p)?, ticks(p)?))).collect()
}

/// How long to watch the daemons idle before the load.
pub(crate) const IDLE: std::time::Duration = std::time::Duration::from_secs(2);

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
    let idle0 = sample(&pids)?;
    std::thread::sleep(IDLE);
    let before = sample(&pids)?;
    let t0 = std::time::Instant::now();
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
    let after = sample(&pids)?;
    let run_s = t0.elapsed().as_secs_f64();
    let mut v: Value = serde_json::from_str(&out)?;
    let ms = |a: &(u64, u64), b: &(u64, u64)| (a.0.saturating_sub(b.0)) as f64 / 1e6;
    let cpu: Vec<f64> = after.iter().zip(&before).map(|(a, b)| ms(a, b)).collect();
    let idle_ms_per_s: Vec<f64> = before
        .iter()
        .zip(&idle0)
        .map(|(a, b)| ms(a, b) / IDLE.as_secs_f64())
        .collect();
    let tick_ms: Vec<f64> = after
        .iter()
        .zip(&before)
        .map(|(a, b)| a.1.saturating_sub(b.1) as f64 * ms_per_tick())
        .collect();
    let per_node = |xs: &[f64]| {
        NODES
            .iter()
            .zip(xs)
            .map(|(n, c)| (n.to_string(), json!(c)))
            .collect::<serde_json::Map<_, _>>()
    };
    v["run_s"] = json!(run_s);
    v["cpu_ms"] = json!(per_node(&cpu));
    v["cpu_ticks_ms"] = json!(per_node(&tick_ms));
    v["idle_cpu_ms_per_s"] = json!(per_node(&idle_ms_per_s));
    let n = f64::from(sessions);
    v["r2_cpu_us_per_session"] = json!(cpu[R2] * 1000.0 / n);
    v["r2_cpu_ticks_us_per_session"] = json!(tick_ms[R2] * 1000.0 / n);
    v["r2_net_cpu_us_per_session"] =
        json!((cpu[R2] - idle_ms_per_s[R2] * run_s).max(0.0) * 1000.0 / n);
    v["all_cpu_us_per_session"] = json!(cpu.iter().sum::<f64>() * 1000.0 / n);
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
    let sorted = |t: &str, f: &dyn Fn(&Value) -> Option<f64>| {
        let mut xs: Vec<f64> = out[t]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(f)
            .collect();
        xs.sort_by(f64::total_cmp);
        xs
    };
    let median = |t: &str, f: &dyn Fn(&Value) -> Option<f64>| median_of(&sorted(t, f));
    // Median, and the spread: every run's figure (sorted), min and max.
    let spread = |t: &str, k: &str| {
        let xs = sorted(t, &|v| v[k].as_f64());
        json!({
            "median": median_of(&xs),
            "min": xs.first(),
            "max": xs.last(),
            "runs": xs,
        })
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
                    "r2_cpu_us_per_session": spread(t, "r2_cpu_us_per_session"),
                    "r2_net_cpu_us_per_session": spread(t, "r2_net_cpu_us_per_session"),
                    "r2_cpu_ticks_us_per_session": spread(t, "r2_cpu_ticks_us_per_session"),
                    "r2_idle_cpu_ms_per_s": median(t, &|v| v["idle_cpu_ms_per_s"][NODES[R2]].as_f64()),
                    "all_cpu_us_per_session": median(t, &|v| v["all_cpu_us_per_session"].as_f64()),
                    "lost": median(t, &|v| v["lost"].as_f64()),
                    "failed": median(t, &|v| v["failed"].as_f64()),
                }),
            )
        })
        .collect();
    Ok(
        json!({ "sessions": sessions, "rate": rate, "runs": runs, "summary": summary, "runs_detail": out }),
    )
}

/// The median of sorted figures (the lower middle one for an even count).
pub(crate) fn median_of(xs: &[f64]) -> Option<f64> {
    xs.get(xs.len().saturating_sub(1) / 2).copied()
}

/// The summary as a table.
pub fn render(v: &Value) -> String {
    let mut s = format!(
        "GIST chain H1 > R1 > R2 > R3 > H2: {} sessions at {}/s, then one ping each; medians of {} runs\n",
        v["sessions"], v["rate"], v["runs"]
    );
    s += "transport  setup med ms  setup p99 ms  per hop ms  rtt med ms  rtt p99 ms  R2 CPU us/session (min-max)  R2 net  R2 idle ms/s  all CPU us/session\n";
    for t in ["udp", "tcp", "tls"] {
        let x = &v["summary"][t];
        let f = |x: &Value| x.as_f64().map_or("-".into(), |n| format!("{n:.3}"));
        let r2 = &x["r2_cpu_us_per_session"];
        s += &format!(
            "{t:<10} {:>12}  {:>12}  {:>10}  {:>10}  {:>10}  {:>27}  {:>6}  {:>12}  {:>18}\n",
            f(&x["setup_median_ms"]),
            f(&x["setup_p99_ms"]),
            f(&x["setup_per_hop_ms"]),
            f(&x["rtt_median_ms"]),
            f(&x["rtt_p99_ms"]),
            format!("{} ({}-{})", f(&r2["median"]), f(&r2["min"]), f(&r2["max"])),
            f(&x["r2_net_cpu_us_per_session"]["median"]),
            f(&x["r2_idle_cpu_ms_per_s"]),
            f(&x["all_cpu_us_per_session"]),
        );
    }
    s
}

/// `--plot`: per transport (UDP, TCP, TLS), session setup time and RTT (seed 000 §4.4.3 set up
/// sessions over each), and the daemons' CPU per session, from the summary.
pub fn figures(v: &Value) -> Vec<Figure> {
    let transports = ["udp", "tcp", "tls"];
    let names = transports
        .iter()
        .map(|t| t.to_uppercase())
        .collect::<Vec<_>>();
    let series = |name: &str, f: &dyn Fn(&Value) -> Option<f64>| {
        let pts: Vec<(f64, f64)> = transports
            .iter()
            .enumerate()
            .filter_map(|(i, t)| Some((i as f64, f(&v["summary"][t]).filter(|y| y.is_finite())?)))
            .collect();
        (!pts.is_empty()).then(|| Series::measured(name, pts))
    };
    let title = |what: &str| {
        format!(
            "GIST on the five-node chain: {what}, {} sessions at {}/s",
            v["sessions"], v["rate"]
        )
    };
    let mut times = Figure::new(
        title("setup time and RTT per transport"),
        Axis::categories("transport", names.clone()),
        Axis::linear("ms (median of runs)"),
    );
    let mut cpu = Figure::new(
        title("daemons' CPU per session"),
        Axis::categories("transport", names),
        Axis::linear("CPU per session, µs (median of runs)"),
    );
    let time_series = [
        ("setup, median", "setup_median_ms"),
        ("setup, p99", "setup_p99_ms"),
        ("setup per hop", "setup_per_hop_ms"),
        ("RTT, median", "rtt_median_ms"),
        ("RTT, p99", "rtt_p99_ms"),
    ];
    for (name, key) in time_series {
        times.series.extend(series(name, &|x| x[key].as_f64()));
    }
    let cpu_series = [
        ("R2", "/r2_cpu_us_per_session/median"),
        ("R2, net of idle", "/r2_net_cpu_us_per_session/median"),
        ("all five daemons", "/all_cpu_us_per_session"),
    ];
    for (name, at) in cpu_series {
        cpu.series
            .extend(series(name, &|x| x.pointer(at).and_then(Value::as_f64)));
    }
    [times, cpu]
        .into_iter()
        .filter(|f| !f.series.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_follow_the_summary() {
        let t = |setup: f64, cpu: f64| {
            json!({
                "setup_median_ms": setup, "setup_p99_ms": setup * 2.0, "setup_per_hop_ms": setup / 4.0,
                "rtt_median_ms": 0.3, "rtt_p99_ms": 0.9,
                "r2_cpu_us_per_session": { "median": cpu }, "r2_net_cpu_us_per_session": { "median": cpu - 1.0 },
                "all_cpu_us_per_session": cpu * 5.0,
            })
        };
        let v = json!({
            "sessions": 2000, "rate": 500.0, "runs": 1,
            "summary": { "udp": t(1.0, 20.0), "tcp": t(2.0, 30.0), "tls": { "setup_median_ms": null } },
        });
        let figs = figures(&v);
        assert_eq!(figs.len(), 2);
        assert_eq!(figs[0].x.categories, ["UDP", "TCP", "TLS"]);
        // TLS has no figures: left out, not drawn at zero.
        assert_eq!(figs[0].series[0].points, vec![(0.0, 1.0), (1.0, 2.0)]);
        assert_eq!(figs[1].series[2].points, vec![(0.0, 100.0), (1.0, 150.0)]);
        crate::bench::plot::render(&figs).unwrap();
    }
}
