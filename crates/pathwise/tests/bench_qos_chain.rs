//! `pathwise bench qos-chain` on the five-namespace chain (root, `ip`, `tc`, `iptables`),
//! small: 20 reservations of each protocol for the setup times, 200 held, short windows. The
//! report's structure is checked, not its timings.

mod common;

use common::netns::{bin, serial, skip};
use serde_json::Value;

#[test]
fn bench_qos_chain_reports_setup_and_holding_for_both_protocols() {
    let test = "bench_qos_chain_reports_setup_and_holding_for_both_protocols";
    if skip(test, &["ip", "tc", "iptables"]) {
        return;
    }
    let _g = serial();
    let out = std::process::Command::new(bin())
        .args([
            "bench",
            "qos-chain",
            "--sessions",
            "20",
            "--hold",
            "200",
            "--refresh",
            "5",
            "--periods",
            "2",
            "--json",
        ])
        .output()
        .expect("run pathwise bench qos-chain");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(r["sessions"], 20);
    assert_eq!(r["hold"], 200);
    let setup = r["setup"].as_array().expect("setup rows");
    let mut seen: Vec<(&str, &str)> = setup
        .iter()
        .map(|s| {
            (
                s["protocol"].as_str().unwrap(),
                s["traffic_control"].as_str().unwrap(),
            )
        })
        .collect();
    seen.sort_unstable();
    assert_eq!(
        seen,
        [
            ("qos-nslp", "htb"),
            ("qos-nslp", "memory"),
            ("rsvp", "htb"),
            ("rsvp", "memory")
        ]
    );
    for s in setup {
        assert_eq!(s["samples"], 20, "{s}");
        let e = &s["end_to_end_ms"];
        let (min, med, p99, max) = (
            e["min"].as_f64().unwrap(),
            e["median"].as_f64().unwrap(),
            e["p99"].as_f64().unwrap(),
            e["max"].as_f64().unwrap(),
        );
        assert!(0.0 < min && min <= med && med <= p99 && p99 <= max, "{s}");
        assert!(s["per_hop_ms"].as_f64().unwrap() > 0.0, "{s}");
        // RSVP's two legs are timed apart; the QoS NSLP's answer is the RESPONSE at H1.
        let rsvp = s["protocol"] == "rsvp";
        assert_eq!(s["path_ms"].is_object(), rsvp, "{s}");
        assert_eq!(s["resv_ms"].is_object(), rsvp, "{s}");
    }
    let holding = r["holding"].as_array().expect("holding rows");
    let modes: Vec<&str> = holding
        .iter()
        .map(|h| h["mode"].as_str().unwrap())
        .collect();
    assert_eq!(
        modes,
        ["rsvp-full", "rsvp-summary", "qos-full", "qos-summary"]
    );
    for h in holding {
        // Every reservation still held at R2 when the window closed.
        assert_eq!(h["held_at_end"], serde_json::json!([200]), "{h}");
        assert!(h["window_s"][0].as_f64().unwrap() >= 10.0, "{h}");
        assert!(h["r2_rss_held_kib"][0].as_u64().unwrap() > 0, "{h}");
        assert!(h["cpu_ns_per_reservation_period"].as_f64().unwrap() >= 0.0);
        assert!(h["rss_bytes_per_reservation"].is_number(), "{h}");
    }
}

#[test]
fn bench_qos_chain_refuses_sizes_it_cannot_hold() {
    // Checked before anything is built: no root needed.
    let out = std::process::Command::new(bin())
        .args(["bench", "qos-chain", "--hold", "20000"])
        .output()
        .expect("run pathwise bench qos-chain");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--hold: 1 to 15000"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
