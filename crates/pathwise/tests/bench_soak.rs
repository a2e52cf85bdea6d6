//! `pathwise bench soak`, briefly: it samples, reports and ends on time (figures are for
//! docs/BENCHMARKS.md, not checked here).

use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn soak_reports_and_terminates() {
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_pathwise"))
        .args([
            "bench",
            "soak",
            "--duration",
            "3s",
            "--sample-every",
            "500ms",
            "--sessions",
            "20",
            "--json",
        ])
        .output()
        .expect("pathwise runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Bounded: three seconds of soak and the slowest step of a debug build, not more.
    assert!(start.elapsed() < Duration::from_secs(60));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    let samples = r["samples"].as_array().expect("samples");
    assert!(samples.len() >= 4, "{} samples", samples.len());
    let last = samples.last().unwrap();
    assert!(last["wall_s"].as_f64().unwrap() >= 3.0);
    assert!(last["rss_kib"].as_u64().unwrap() > 0, "RSS read");
    assert!(
        last["heap_bytes"].as_u64().unwrap() > 0,
        "counting allocator"
    );
    assert!(last["cpu_s"].as_f64().unwrap() > 0.0, "CPU time read");
    assert!(last["messages"].as_u64().unwrap() > 0);
    for proto in ["rsvp_state", "gist_state"] {
        let nodes = last[proto].as_array().unwrap();
        assert_eq!(nodes.len(), 5, "{proto}: one entry per node");
        assert!(
            nodes.iter().all(|n| n[0].as_u64().unwrap() > 0),
            "{proto}: state on every node of the chain: {nodes:?}"
        );
    }
    assert!(r["flat"].is_boolean(), "a verdict with this many samples");
    assert!(r["rss_growth_kib"].is_i64());
    assert!(r["rss_flat"].is_boolean());
    assert!(
        r["heap_flat"].is_boolean(),
        "a heap verdict: the counting allocator is installed"
    );
    assert!(r["heap_growth_bytes"].is_i64());
}

#[test]
fn soak_table_ends_with_the_verdict() {
    let out = Command::new(env!("CARGO_BIN_EXE_pathwise"))
        .args([
            "bench",
            "soak",
            "--duration",
            "1s",
            "--sample-every",
            "200ms",
            "--sessions",
            "10",
        ])
        .output()
        .expect("pathwise runs");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("  wall s"), "{text}");
    let verdict: Vec<&str> = text.lines().rev().take(2).collect();
    assert!(verdict[1].starts_with("RSS: "), "{text}");
    assert!(verdict[0].starts_with("heap: "), "{text}");
}
