//! The engine benchmarks (`pathwise bench rsvp`, `pathwise bench gist-engine`) with `--json`,
//! briefly: they report heap allocations per message in steady state from the binary's
//! counting allocator (figures are for docs/BENCHMARKS.md, not checked here).

use serde_json::Value;
use std::process::Command;

/// `pathwise bench ARGS --json`, which must succeed: its first report.
fn first_report(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_pathwise"))
        .arg("bench")
        .args(args)
        .arg("--json")
        .output()
        .expect("pathwise runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reports: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    reports.get(0).cloned().unwrap_or(reports)
}

#[test]
fn bench_rsvp_reports_allocations_per_message_for_every_phase() {
    let r = first_report(&["rsvp", "--sessions", "300", "--runs", "1"]);
    let phases = r["phases"].as_array().expect("phases");
    let names: Vec<&str> = phases.iter().filter_map(|p| p["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "Path (new session)",
            "Resv (new reservation)",
            "Path (refresh)",
            "Resv (refresh)",
            "refresh sent (timer)"
        ]
    );
    let allocs: Vec<f64> = phases
        .iter()
        .map(|p| {
            p["allocations_per_msg"]
                .as_f64()
                .expect("allocations_per_msg")
        })
        .collect();
    assert!(
        allocs.iter().all(|a| a.is_finite() && *a >= 0.0),
        "{allocs:?}"
    );
    // The counter is live in the binary: 300 new sessions grow tables that start empty (not
    // presized), which allocates. (A new FF reservation itself allocates nothing since
    // 8dfdf27, so its phase may be all but zero.)
    assert!(allocs[0] > 0.0, "{allocs:?}");
}

#[test]
fn bench_gist_engine_reports_its_steady_state() {
    let r = first_report(&["gist-engine", "--sessions", "40", "--runs", "1"]);
    let num = |k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{k} in {r}"));
    // Every session's NSLP message crosses each round: at least one datagram per session.
    assert!(num("steady_messages_per_session") >= 1.0, "{r}");
    let allocs = num("steady_allocations_per_message");
    assert!(allocs.is_finite() && allocs >= 0.0, "{r}");
    assert!(num("steady_allocations") >= 0.0, "{r}");
    assert!(num("steady_heap_growth").is_finite(), "{r}");
    assert!(
        num("querier_bytes") > 0.0 && num("responder_bytes") > 0.0,
        "{r}"
    );
}
