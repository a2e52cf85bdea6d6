//! `pathwise bench gist-scale` (issue #21 part 7): the thesis's CPU-against-sessions curve
//! (seed 000 §4.4: 60,000 sessions at 85 % of a 533 MHz CPU) carried on towards a million, on
//! the five-node namespace chain.
//!
//! Only the end hosts run GIST (H1 the load client, H2 the responder); R1 – R3 forward IP, so
//! H1's Query reaches H2 over three plain routers and H2 is H1's GIST peer. What is measured is
//! the responder; with five GIST daemons on a two-core machine the routers' share of the cores
//! would decide how far it goes (with GIST on every node, a run towards 1,000,000 sessions at
//! 8,000 a second kept both cores busy and never reached its steady phase). Logging at `info`.
//!
//! Per number of sessions N, on a fresh chain (GIST `refresh_period` 180 s, UDP, D-mode), the
//! load client in H1 opens N sessions towards H2 at `--setup-rate`, then pings each once every
//! `--nslp-refresh` seconds (round robin, N / refresh pings a second: the NSLP refresh of
//! the thesis), as `bench gist-api` does with the Ping NSLP inside H2's daemon ([`super::api`],
//! whose run this is). Over a window of the steady phase H2's daemon's CPU is read from
//! `/proc/PID/task/*/schedstat`, and its resident memory before the first session and at the
//! window's end. A row is *held* when every session opened and every ping of the run was
//! answered; larger N are not tried after one that was not held (or whose run stalled).

use super::api::{self, ApiChoice};
use serde_json::{Value, json};

/// The runs of `bench gist-scale`: `bench gist-api`'s, one per N, with the Ping NSLP inside
/// H2's daemon, GIST on the end hosts only (see above) and logging at `info`.
pub fn params(
    sessions: Vec<u32>,
    setup_rate: f64,
    nslp_refresh_s: f64,
    window_s: f64,
) -> api::Params {
    api::Params {
        sessions,
        setup_rate,
        nslp_refresh_s,
        window_s,
        runs: 1,
        api: ApiChoice::Plugin,
        gist_on_routers: false,
        log: "info",
        receive_hold: None,
    }
}

/// One row of the report from one `api::one` run (or why there is none).
fn row(n: u32, run: anyhow::Result<Value>) -> Value {
    let v = match run {
        Ok(v) => v,
        Err(e) => return json!({ "sessions": n, "held": false, "note": e.to_string() }),
    };
    let (lost, failed) = (v["lost"].as_u64(), v["failed"].as_u64());
    let held = lost == Some(0) && failed == Some(0);
    let kib = |k: &str| v[k].as_u64().unwrap_or(0);
    let grown = kib("h2_rss_kib").saturating_sub(kib("h2_rss_idle_kib"));
    json!({
        "sessions": n,
        "held": held,
        "note": (!held).then(|| format!("{} pings unanswered, {} sessions failed",
            lost.unwrap_or(0), failed.unwrap_or(0))),
        // 1 ms of CPU per second is 0.1 % of one core.
        "h2_cpu_percent": v["daemon_cpu_ms_per_s"].as_f64().map(|ms| ms / 10.0),
        "h2_cpu_us_per_refresh": v["node_cpu_us_per_refresh"],
        "h2_idle_cpu_percent": v["idle_cpu_ms_per_s"].as_f64().map(|ms| ms / 10.0),
        "refreshes_per_s": v["steady_refreshes"].as_f64()
            .zip(v["steady_window_s"].as_f64())
            .map(|(r, s)| r / s),
        "setup_s": v["setup_s"],
        "setup_cpu_us_per_session": v["setup_cpu_us_per_session"],
        "h2_rss_idle_kib": v["h2_rss_idle_kib"],
        "h2_rss_kib": v["h2_rss_kib"],
        "h2_bytes_per_session": (grown as f64 * 1024.0) / f64::from(n),
        "lost": lost,
        "failed": failed,
    })
}

/// Run every N of `p` ([`params`]) in turn, stopping after the first not held.
pub fn run(p: &api::Params) -> anyhow::Result<Value> {
    if let Some(why) = crate::netns::unavailable(&[]) {
        anyhow::bail!("gist-scale needs network namespaces: {why}");
    }
    anyhow::ensure!(!p.sessions.is_empty(), "--sessions: at least one N");
    anyhow::ensure!(
        p.sessions.iter().all(|&n| (1..=1_000_000).contains(&n)),
        "--sessions: each N from 1 to 1,000,000"
    );
    anyhow::ensure!(
        p.setup_rate > 0.0 && p.nslp_refresh_s > 0.0 && p.window_s > 0.0,
        "rates and times must be positive"
    );
    let bin = std::env::current_exe()?;
    let mut rows = Vec::new();
    for &n in &p.sessions {
        let r = row(n, api::one(&bin, "plugin", n, p));
        let held = r["held"] == true;
        rows.push(r);
        if !held {
            break;
        }
    }
    let most_held = rows
        .iter()
        .filter(|r| r["held"] == true)
        .filter_map(|r| r["sessions"].as_u64())
        .max();
    Ok(json!({
        "setup_rate": p.setup_rate,
        "nslp_refresh_s": p.nslp_refresh_s,
        "window_s": p.window_s,
        "receive_hold": p.receive_hold.map(|h| h.to_string()),
        "rows": rows,
        "most_held": most_held,
        "load_average": std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim(),
    }))
}

/// The report as a table.
pub fn render(v: &Value) -> String {
    let f = |x: &Value, d: usize| x.as_f64().map_or("-".into(), |n| format!("{n:.d$}"));
    let mut s = format!(
        "GIST responder H2 (plug-in Ping NSLP), UDP, GIST refresh 180 s, NSLP refresh {} s, \
         setup {}/s, window {} s, receive hold {}\n",
        v["nslp_refresh_s"],
        v["setup_rate"],
        v["window_s"],
        v["receive_hold"].as_str().unwrap_or("default")
    );
    s += "sessions  held  CPU % core  us/refresh  refreshes/s  setup s  RSS idle→end KiB  B/session  lost  failed\n";
    for r in v["rows"].as_array().into_iter().flatten() {
        // serde_json's Display ignores widths: numbers go through `to_string` first.
        let t = |x: &Value| x.to_string();
        s += &format!(
            "{:>8}  {:>4}  {:>10}  {:>10}  {:>11}  {:>7}  {:>16}  {:>9}  {:>4}  {:>6}\n",
            t(&r["sessions"]),
            if r["held"] == true { "yes" } else { "no" },
            f(&r["h2_cpu_percent"], 2),
            f(&r["h2_cpu_us_per_refresh"], 1),
            f(&r["refreshes_per_s"], 0),
            f(&r["setup_s"], 1),
            format!("{}→{}", r["h2_rss_idle_kib"], r["h2_rss_kib"]),
            f(&r["h2_bytes_per_session"], 0),
            t(&r["lost"]),
            t(&r["failed"]),
        );
        if let Some(note) = r["note"].as_str() {
            s += &format!("{:>8}  {note}\n", "");
        }
    }
    s += &format!(
        "most sessions held: {}\n",
        v["most_held"]
            .as_u64()
            .map_or("none".into(), |n| n.to_string())
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row reads the keys `api::one` writes; a run with losses, or one that failed, is not
    /// held.
    #[test]
    fn rows_follow_the_run() {
        let run = |lost: u64| {
            json!({
                "lost": lost, "failed": 0, "daemon_cpu_ms_per_s": 55.0,
                "node_cpu_us_per_refresh": 82.6, "idle_cpu_ms_per_s": 0.1,
                "steady_refreshes": 13_334, "steady_window_s": 20.0, "setup_s": 4.0,
                "setup_cpu_us_per_session": 37.0, "h2_rss_idle_kib": 8000, "h2_rss_kib": 12000,
            })
        };
        let r = row(20_000, Ok(run(0)));
        assert_eq!(r["held"], true);
        assert_eq!(r["h2_cpu_percent"], 5.5);
        assert_eq!(r["refreshes_per_s"], 666.7);
        assert_eq!(r["h2_bytes_per_session"], 4000.0 * 1024.0 / 20_000.0);
        let r = row(20_000, Ok(run(3)));
        assert_eq!(r["held"], false);
        assert_eq!(r["note"], "3 pings unanswered, 0 sessions failed");
        let r = row(1_000_000, Err(anyhow::anyhow!("load run stalled")));
        assert_eq!(
            (r["held"].clone(), r["note"].clone()),
            (json!(false), json!("load run stalled"))
        );
        let text = render(&json!({
            "nslp_refresh_s": 30.0, "setup_rate": 5000.0, "window_s": 20.0,
            "rows": [row(20_000, Ok(run(0)))], "most_held": 20_000,
        }));
        assert!(text.contains("most sessions held: 20000"), "{text}");
        assert!(text.contains("   20000   yes        5.50"), "{text}");
    }
}
