//! `pathwise bench gist-api`: the thesis's plug-in against IPC comparison (seed 000 §4.3.2,
//! Fig. 4.4) measured its way — the responder node's CPU while it keeps a number of concurrent
//! flows alive — on the five-node namespace chain of `bench gist-chain`.
//!
//! Per run, on a fresh chain with GIST's `refresh_period` at 180 s (UDP, D-mode), the load
//! client in H1 opens N sessions towards H2, then pings each one every `nslp_refresh` seconds
//! (the NSLP refresh: round robin at N / `nslp_refresh` pings per second). H2's Ping NSLP is
//! either the daemon's own (plug-in) or `pathwise gist nslp-ping` in H2's namespace over
//! `[gist] ipc_socket` (IPC). The node's CPU — the daemon, plus the NSLP process with IPC — is
//! read from `/proc/PID/task/*/schedstat` over a window of the steady phase, after every
//! session is open; the setup phase's CPU is kept beside it. Plug-in and IPC alternate within
//! each round and load level, so the ratio of a pair shares the machine's load of the moment.

use super::chain::{IDLE, cpu_ns, median_of};
use crate::bench::plot::{Axis, Figure, Legend, Series};
use crate::gist::chain::{self as gist_chain, H1, H2, H2_V4, NODES, Options};
use crate::netns::{Lab, wait_for};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// Which NSLP API(s) to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ApiChoice {
    /// The Ping NSLP inside the daemon.
    Plugin,
    /// The Ping NSLP as its own process over the IPC NSLP API.
    Ipc,
    /// Both, alternating.
    Both,
}

impl ApiChoice {
    fn apis(self) -> &'static [&'static str] {
        match self {
            ApiChoice::Plugin => &["plugin"],
            ApiChoice::Ipc => &["ipc"],
            ApiChoice::Both => &["plugin", "ipc"],
        }
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Params {
    /// Load levels: concurrent flows (sessions).
    pub sessions: Vec<u32>,
    /// Sessions opened per second in the setup phase.
    pub setup_rate: f64,
    /// Seconds between two pings of one session (the NSLP refresh; the thesis's 30 s).
    pub nslp_refresh_s: f64,
    /// Seconds of the steady phase measured.
    pub window_s: f64,
    /// Rounds.
    pub runs: usize,
    /// APIs.
    pub api: ApiChoice,
    /// Whether R1, R2 and R3 run GIST too (each a GIST hop) or only forward IP, so the
    /// machine's cores go to the load client and the responder (`bench gist-scale`).
    pub gist_on_routers: bool,
    /// The daemons' log level.
    pub log: &'static str,
    /// The daemons' `[daemon] receive_hold` (`None`: the daemon's default).
    pub receive_hold: Option<pathwise_core::units::TimeSpan>,
}

/// GIST's refresh period in the thesis's experiment.
const GIST_REFRESH: &str = "180s";
/// Steady phase beyond the window: time to see it begin, and slack at its end.
const MARGIN: Duration = Duration::from_secs(3);

/// On-CPU nanoseconds of each process.
fn cpu(pids: &[u32]) -> anyhow::Result<Vec<u64>> {
    pids.iter().map(|&p| cpu_ns(p)).collect()
}

fn load(sock: &Path, verb: &str, args: Value) -> anyhow::Result<Value> {
    crate::mgmt::request(sock, "pathwise daemon", verb, args)
}

/// Poll the load run until `f` accepts its progress, or fail after `limit`.
fn until(sock: &Path, limit: Duration, f: impl Fn(&Value) -> bool) -> anyhow::Result<Value> {
    let end = Instant::now() + limit;
    loop {
        let r = load(sock, "gist.load.result", json!({}))?;
        if f(&r) {
            return Ok(r);
        }
        anyhow::ensure!(Instant::now() < end, "load run stalled: {r}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Start the Ping NSLP in H2's namespace over the daemon's IPC socket; wait for it to register.
fn start_nslp(lab: &mut Lab, bin: &Path) -> anyhow::Result<u32> {
    let sock = lab.path(&format!("{}-ipc.sock", NODES[H2]));
    lab.spawn(
        "nslp",
        H2,
        &[
            &bin.to_string_lossy(),
            "gist",
            "nslp-ping",
            "--ipc-socket",
            &sock.to_string_lossy(),
        ],
    )?;
    wait_for(Duration::from_secs(10), "the NSLP to register", || {
        lab.log("nslp").contains("registered").then_some(())
    })?;
    lab.pid("nslp")
        .ok_or_else(|| anyhow::anyhow!("no pid for the NSLP"))
}

/// One run with `sessions` flows and H2's Ping NSLP behind `api`, on a fresh chain; H2's
/// daemon's resident memory too, idle and at the end of the window (`bench gist-scale`).
pub(crate) fn one(bin: &Path, api: &str, sessions: u32, p: &Params) -> anyhow::Result<Value> {
    let ipc = api == "ipc";
    let r = p.gist_on_routers;
    let mut lab = gist_chain::build(
        bin,
        &Options {
            gist: [true, r, r, r, true],
            log: p.log,
            receive_hold: p.receive_hold,
            refresh: GIST_REFRESH,
            extra: if ipc {
                "ipc_socket = \"{lab}{node}-ipc.sock\"\n".into()
            } else {
                String::new()
            },
            ..Options::default()
        },
    )?;
    let mut pids = vec![
        lab.pid(NODES[H2])
            .ok_or_else(|| anyhow::anyhow!("no pid for H2"))?,
    ];
    if ipc {
        pids.push(start_nslp(&mut lab, bin)?);
    }
    let rss = |pid| crate::rsvp::bench::chain::proc_usage(pid).map(|(kib, _)| kib);
    let rss_idle = rss(pids[0])?;
    let idle0 = cpu(&pids)?;
    std::thread::sleep(IDLE);
    let c0 = cpu(&pids)?;
    let sock = gist_chain::socket(&lab, H1);
    let n = f64::from(sessions);
    let window = Duration::from_secs_f64(p.window_s);
    let setup = Duration::from_secs_f64(n / p.setup_rate);
    let t0 = Instant::now();
    load(
        &sock,
        "gist.load.start",
        json!({
            "dest": H2_V4,
            "sessions": sessions,
            "initial_rate": p.setup_rate,
            "steady_rate": n / p.nslp_refresh_s,
            "duration_ms": (window + MARGIN).as_millis() as u64,
            "transport": "udp",
        }),
    )?;
    // The steady phase has begun once a steady ping came back.
    let p1 = until(&sock, setup * 3 + Duration::from_secs(30), |r| {
        r["steady_replies"].as_u64() > Some(0)
    })?;
    let (c1, t1) = (cpu(&pids)?, Instant::now());
    std::thread::sleep(window);
    let p2 = load(&sock, "gist.load.result", json!({}))?;
    let (c2, t2) = (cpu(&pids)?, Instant::now());
    let rss_end = rss(pids[0])?;
    let mut v = until(&sock, window + MARGIN * 4, |r| r["done"] == true)?;
    anyhow::ensure!(
        p2["done"] != true,
        "the steady phase ended inside the window"
    );

    let ms = |a: &[u64], b: &[u64]| -> Vec<f64> {
        a.iter()
            .zip(b)
            .map(|(a, b)| a.saturating_sub(*b) as f64 / 1e6)
            .collect()
    };
    let idle_ms_per_s: f64 = ms(&c0, &idle0).iter().sum::<f64>() / IDLE.as_secs_f64();
    let setup_ms = ms(&c1, &c0);
    let steady_ms = ms(&c2, &c1);
    let steady_s = (t2 - t1).as_secs_f64();
    let setup_s = (t1 - t0).as_secs_f64();
    let refreshes =
        p2["steady_replies"].as_u64().unwrap_or(0) - p1["steady_replies"].as_u64().unwrap_or(0);
    let steady_total: f64 = steady_ms.iter().sum();
    let ms_per_s = steady_total / steady_s;
    v["h2_rss_idle_kib"] = json!(rss_idle);
    v["h2_rss_kib"] = json!(rss_end);
    v["setup_s"] = json!(setup_s);
    v["api"] = json!(api);
    v["flows"] = json!(sessions);
    v["idle_cpu_ms_per_s"] = json!(idle_ms_per_s);
    v["steady_window_s"] = json!(steady_s);
    v["steady_refreshes"] = json!(refreshes);
    v["node_cpu_ms_per_s"] = json!(ms_per_s);
    v["node_net_cpu_ms_per_s"] = json!((ms_per_s - idle_ms_per_s).max(0.0));
    v["daemon_cpu_ms_per_s"] = json!(steady_ms[0] / steady_s);
    v["nslp_cpu_ms_per_s"] = json!(steady_ms.get(1).map_or(0.0, |c| c / steady_s));
    v["node_cpu_us_per_flow_s"] = json!(ms_per_s * 1000.0 / n);
    v["node_cpu_us_per_refresh"] = json!(steady_total * 1000.0 / refreshes.max(1) as f64);
    v["setup_cpu_us_per_session"] =
        json!((setup_ms.iter().sum::<f64>() - idle_ms_per_s * setup_s).max(0.0) * 1000.0 / n);
    Ok(v)
}

/// Median, min, max and every run's figure (sorted).
fn spread(mut xs: Vec<f64>) -> Value {
    xs.sort_by(f64::total_cmp);
    json!({ "median": median_of(&xs), "min": xs.first(), "max": xs.last(), "runs": xs })
}

/// Run `p.runs` rounds; in each, every load level with each API, alternating which goes first.
pub fn run(p: &Params) -> anyhow::Result<Value> {
    if let Some(why) = crate::netns::unavailable(&[]) {
        anyhow::bail!("gist-api needs network namespaces: {why}");
    }
    anyhow::ensure!(
        p.setup_rate > 0.0 && p.nslp_refresh_s > 0.0 && p.window_s > 0.0,
        "rates and times must be positive"
    );
    let bin = std::env::current_exe()?;
    let mut detail: Vec<Value> = Vec::new();
    for round in 0..p.runs {
        for (li, &n) in p.sessions.iter().enumerate() {
            let mut apis = p.api.apis().to_vec();
            if (round + li) % 2 == 1 {
                apis.reverse();
            }
            for api in apis {
                let mut v = one(&bin, api, n, p)?;
                v["round"] = json!(round);
                detail.push(v);
            }
        }
    }
    let pick = |api: &str, n: u32, k: &str| -> Vec<f64> {
        detail
            .iter()
            .filter(|v| v["api"] == api && v["flows"] == n)
            .filter_map(|v| v[k].as_f64())
            .collect()
    };
    let mut summary = serde_json::Map::new();
    for &n in &p.sessions {
        let mut level = serde_json::Map::new();
        for &api in p.api.apis() {
            let keys = [
                "node_cpu_ms_per_s",
                "node_net_cpu_ms_per_s",
                "daemon_cpu_ms_per_s",
                "nslp_cpu_ms_per_s",
                "node_cpu_us_per_flow_s",
                "node_cpu_us_per_refresh",
                "setup_cpu_us_per_session",
                "idle_cpu_ms_per_s",
            ];
            let mut s: serde_json::Map<String, Value> = keys
                .iter()
                .map(|k| (k.to_string(), spread(pick(api, n, k))))
                .collect();
            s.insert(
                "lost".into(),
                json!(pick(api, n, "lost").iter().sum::<f64>() as u64),
            );
            s.insert(
                "failed".into(),
                json!(pick(api, n, "failed").iter().sum::<f64>() as u64),
            );
            level.insert(api.into(), Value::Object(s));
        }
        if p.api == ApiChoice::Both {
            // IPC over plug-in within each round: the pair ran back to back.
            let ratio = |k: &str| {
                let (a, b) = (pick("ipc", n, k), pick("plugin", n, k));
                spread(a.iter().zip(&b).map(|(a, b)| a / b).collect())
            };
            level.insert(
                "ipc_over_plugin".into(),
                json!({
                    "node_cpu": ratio("node_cpu_ms_per_s"),
                    "node_net_cpu": ratio("node_net_cpu_ms_per_s"),
                    "setup_cpu": ratio("setup_cpu_us_per_session"),
                }),
            );
        }
        summary.insert(n.to_string(), Value::Object(level));
    }
    Ok(json!({
        "sessions": p.sessions,
        "setup_rate": p.setup_rate,
        "gist_refresh": GIST_REFRESH,
        "nslp_refresh_s": p.nslp_refresh_s,
        "window_s": p.window_s,
        "runs": p.runs,
        "summary": summary,
        "runs_detail": detail,
    }))
}

/// The summary as a table.
pub fn render(v: &Value) -> String {
    let mut s = format!(
        "GIST NSLP API at H2 (daemon + NSLP process), UDP, GIST refresh {}, NSLP refresh {} s; \
         medians of {} runs (min-max)\n",
        v["gist_refresh"].as_str().unwrap_or("?"),
        v["nslp_refresh_s"],
        v["runs"]
    );
    s += "flows  api     node CPU ms/s (min-max)   net ms/s  daemon ms/s  nslp ms/s  us/flow/s  us/refresh  setup us/session  lost  failed\n";
    let f = |x: &Value| x.as_f64().map_or("-".into(), |n| format!("{n:.3}"));
    let sessions = v["sessions"].as_array().cloned().unwrap_or_default();
    for n in &sessions {
        let level = &v["summary"][n.to_string()];
        for api in ["plugin", "ipc"] {
            let x = &level[api];
            if x.is_null() {
                continue;
            }
            let c = &x["node_cpu_ms_per_s"];
            s += &format!(
                "{n:>5}  {api:<6}  {:>24}  {:>8}  {:>11}  {:>9}  {:>9}  {:>10}  {:>16}  {:>4}  {:>6}\n",
                format!("{} ({}-{})", f(&c["median"]), f(&c["min"]), f(&c["max"])),
                f(&x["node_net_cpu_ms_per_s"]["median"]),
                f(&x["daemon_cpu_ms_per_s"]["median"]),
                f(&x["nslp_cpu_ms_per_s"]["median"]),
                f(&x["node_cpu_us_per_flow_s"]["median"]),
                f(&x["node_cpu_us_per_refresh"]["median"]),
                f(&x["setup_cpu_us_per_session"]["median"]),
                x["lost"],
                x["failed"],
            );
        }
        let r = &level["ipc_over_plugin"];
        if !r.is_null() {
            let c = &r["node_cpu"];
            s += &format!(
                "{n:>5}  IPC / plug-in, node CPU: {} ({}-{}), net {}, setup {}\n",
                f(&c["median"]),
                f(&c["min"]),
                f(&c["max"]),
                f(&r["node_net_cpu"]["median"]),
                f(&r["setup_cpu"]["median"]),
            );
        }
    }
    s
}

/// `--plot`: seed 000 Fig. 4.4 from this run — H2's CPU against the concurrent flows, plug-in
/// against IPC (IPC also split into the daemon's and the NSLP process's share), and the ratio
/// IPC / plug-in against the thesis's "approx. 1.6" (seed 000 §4.3.2, the text beside Fig.
/// 4.4, which printed no other numbers).
pub fn figures(v: &Value) -> Vec<Figure> {
    let flows: Vec<u64> = v["sessions"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    // Median of a figure at each load level, ms/s of CPU → % of one core.
    let curve = |path: &[&str], scale: f64| -> Vec<(f64, f64)> {
        flows
            .iter()
            .filter_map(|n| {
                let mut x = &v["summary"][n.to_string()];
                for p in path {
                    x = &x[*p];
                }
                Some((*n as f64, x["median"].as_f64()? * scale))
            })
            .collect()
    };
    let pct = 0.1; // 1 ms of CPU per s is 0.1 % of one core
    let mut cpu = Figure::new(
        "GIST responder H2: CPU against concurrent flows, NSLP plug-in vs IPC (seed 000 Fig. 4.4)",
        Axis::linear("concurrent flows (sessions)"),
        Axis::linear("CPU, % of one core (median)"),
    );
    let named = [
        (["plugin", "node_cpu_ms_per_s"], "plug-in: daemon"),
        (["ipc", "node_cpu_ms_per_s"], "IPC: daemon + NSLP process"),
        (["ipc", "daemon_cpu_ms_per_s"], "IPC: daemon alone"),
        (["ipc", "nslp_cpu_ms_per_s"], "IPC: NSLP process alone"),
    ];
    for (path, name) in named {
        let pts = curve(&path, pct);
        if !pts.is_empty() {
            cpu = cpu.with(Series::measured(name, pts));
        }
    }
    let mut figs = Vec::new();
    if !cpu.series.is_empty() {
        figs.push(cpu);
    }
    let ratio = curve(&["ipc_over_plugin", "node_cpu"], 1.0);
    if !ratio.is_empty() {
        let thesis = flows.iter().map(|&n| (n as f64, 1.6)).collect();
        figs.push(
            Figure::new(
                "GIST responder H2: IPC / plug-in CPU, median of back-to-back pairs",
                Axis::linear("concurrent flows (sessions)"),
                Axis::linear("IPC CPU / plug-in CPU"),
            )
            .with(Series::measured("pathwise", ratio))
            .with(Series::reference(
                "thesis: approx. 1.6 (seed 000 §4.3.2, Fig. 4.4)",
                thesis,
            ))
            .legend(Legend::LowerRight),
        );
    }
    figs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::plot::{render, tests::texts};

    /// The figures read the keys `run` writes (a summary shaped like its output).
    #[test]
    fn figures_follow_the_report() {
        let level = |plugin: f64, ipc: f64| {
            json!({
                "plugin": { "node_cpu_ms_per_s": { "median": plugin } },
                "ipc": {
                    "node_cpu_ms_per_s": { "median": ipc },
                    "daemon_cpu_ms_per_s": { "median": ipc * 0.8 },
                    "nslp_cpu_ms_per_s": { "median": ipc * 0.2 },
                },
                "ipc_over_plugin": { "node_cpu": { "median": ipc / plugin } },
            })
        };
        let v = json!({
            "sessions": [1000, 5000],
            "summary": { "1000": level(1.45, 3.47), "5000": level(6.67, 15.64) },
        });
        let figs = figures(&v);
        assert_eq!(figs.len(), 2);
        assert_eq!(figs[0].series.len(), 4);
        // ms/s to % of one core.
        assert_eq!(
            figs[0].series[0].points,
            vec![(1000.0, 0.145), (5000.0, 0.667)]
        );
        assert!(figs[1].series[1].reference);
        let t = texts(&render(&figs).unwrap().0);
        for want in [
            "plug-in: daemon",
            "IPC: daemon + NSLP process",
            "thesis: approx. 1.6 (seed 000 §4.3.2, Fig. 4.4)",
            "concurrent flows (sessions)",
        ] {
            assert!(t.iter().any(|s| s == want), "{want} missing");
        }
        // Plug-in only: no ratio figure, one series.
        let v = json!({
            "sessions": [1000],
            "summary": { "1000": { "plugin": { "node_cpu_ms_per_s": { "median": 1.0 } } } },
        });
        let figs = figures(&v);
        assert_eq!(figs.len(), 1);
        assert_eq!(figs[0].series.len(), 1);
    }
}
