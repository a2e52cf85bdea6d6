//! `--plot FILE.svg` on the benchmarks that need neither root nor minutes: `bench rsvp` and
//! `bench oracle` with tiny sizes write an SVG whose axes and series are named.

use std::path::PathBuf;
use std::process::Command;

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("pathwise-plot-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Run `pathwise ARGS`, expect success; the SVG it wrote.
fn bench_svg(args: &[&str], svg: &std::path::Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_pathwise"))
        .args(args)
        .arg("--plot")
        .arg(svg)
        .output()
        .expect("run pathwise");
    assert!(
        out.status.success(),
        "pathwise {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(svg).expect("the SVG was written")
}

/// Minimal well-formedness: the document is one `<svg …>` element, every element closed in
/// order; returns the trimmed contents of its `<text>` elements.
fn well_formed_texts(svg: &str) -> Vec<String> {
    let body = svg.trim_start();
    assert!(body.starts_with("<svg"), "starts with <svg");
    let mut stack: Vec<&str> = Vec::new();
    let mut texts = Vec::new();
    let mut rest = body;
    while let Some(open) = rest.find('<') {
        let close = rest[open..].find('>').expect("tag closed") + open;
        let tag = &rest[open + 1..close];
        rest = &rest[close + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop(), Some(name.trim()), "closing </{name}>");
        } else if !tag.ends_with('/') {
            let name = tag.split_whitespace().next().expect("tag name");
            if name == "text" {
                texts.push(
                    rest[..rest.find('<').expect("text closed")]
                        .trim()
                        .to_string(),
                );
            }
            stack.push(name);
        }
        if stack.is_empty() {
            assert!(rest.trim().is_empty(), "content after </svg>");
            return texts;
        }
    }
    panic!("unclosed elements: {stack:?}");
}

fn assert_has(texts: &[String], want: &[&str]) {
    for w in want {
        assert!(texts.iter().any(|t| t == w), "{w:?} missing from {texts:?}");
    }
}

#[test]
fn bench_rsvp_plots_cost_and_state_against_sessions() {
    let dir = Scratch::new("rsvp");
    let svg = dir.0.join("rsvp.svg");
    let text = bench_svg(
        &["bench", "rsvp", "--sessions", "50,500", "--runs", "1"],
        &svg,
    );
    let texts = well_formed_texts(&text);
    assert_has(
        &texts,
        &[
            "sessions held (log)",
            "ns per message (median)",
            "bytes per session",
            "Path (new session)",
            "Resv (refresh)",
            "counting allocator",
            "engine estimate",
            "tuned KOM rsvpd, (memory - idle) / flows, seed 001 Table II",
        ],
    );
    // Two measured session counts: two markers per measured series (5 phases + 2 state
    // series), one for the KOM row at 2,500 flows and its legend marker.
    assert_eq!(text.matches("<circle").count(), 7 * 2 + 2);
}

#[test]
fn bench_oracle_plots_replies_and_rtt_against_query_size() {
    let dir = Scratch::new("oracle");
    let svg = dir.0.join("oracle.svg");
    let text = bench_svg(
        &[
            "bench",
            "oracle",
            "--runs",
            "1",
            "--seconds",
            "0.2",
            "--sizes",
            "10,50",
            "--workers",
            "1,2",
            "--no-network-size",
            "--json",
        ],
        &svg,
    );
    let texts = well_formed_texts(&text);
    assert_has(
        &texts,
        &[
            "IPs per query",
            "replies per second (median)",
            "mean RTT, ms (median of runs)",
            "RTT standard deviation, ms",
            "worker threads",
            "oracle, 1 worker",
            "oracle, 2 workers",
            "UDP echo, 2 workers",
            "one in flight, 1 worker",
            "10 IPs per query",
        ],
    );
}

#[test]
fn an_unwritable_plot_path_fails_before_measuring() {
    let out = Command::new(env!("CARGO_BIN_EXE_pathwise"))
        .args(["bench", "rsvp", "--sessions", "10", "--runs", "1", "--plot"])
        .arg("/nonexistent-dir/x.svg")
        .output()
        .expect("run pathwise");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--plot /nonexistent-dir/x.svg"), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing measured");
}

#[test]
fn a_failed_check_leaves_no_plot_file_behind() {
    let dir = Scratch::new("nofile");
    let svg = dir.0.join("never.svg");
    // Zero sessions is refused after the plot path was checked.
    let out = Command::new(env!("CARGO_BIN_EXE_pathwise"))
        .args(["bench", "rsvp", "--sessions", "0", "--plot"])
        .arg(&svg)
        .output()
        .expect("run pathwise");
    assert!(!out.status.success());
    assert!(!svg.exists(), "an empty plot file was left behind");
}
