//! `pathwise bench qos`: the QoS NSLP measured side by side with RSVP in the same run — the
//! comparison seed 000 §7.2 promised. The same reservations over both protocols across seed
//! 004's R0 – R1 – R2 in the simulator: bytes on the wire per reservation per refresh period
//! with full and with reduced refresh, the transit R1's engine CPU per reservation per refresh
//! period and its heap per reservation ([`sim`]); what is counted is in [`meter`]. The same
//! comparison between real daemons on the network-namespace chain is `bench qos-chain`
//! ([`chain`]).

pub mod chain;
pub mod meter;
pub mod sim;

use crate::bench::print_report;
use pathwise_core::time::Duration;
use serde::Serialize;
use sim::{Mode, ModeRun, SimParams};
use std::fmt::Write as _;

/// What `pathwise bench qos` runs.
#[derive(Clone, Copy, Debug, clap::Args)]
pub struct QosBenchArgs {
    /// Reservations R0 → R2, held by the transit R1 (1 to 64,512: each its own destination
    /// port, 1024 and up, on R2's one address).
    #[arg(long, default_value_t = 10_000, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=sim::MAX_SESSIONS as u64))]
    pub sessions: usize,
    /// Refresh period R of both protocols, seconds.
    #[arg(long, default_value_t = 30)]
    pub refresh: u64,
    /// Refresh periods counted, after two to settle (the default 12 spans two of GIST's
    /// 180 s routing-state refreshes, so those count too).
    #[arg(long, default_value_t = 12)]
    pub periods: u32,
    /// Repetitions, the modes interleaved; the CPU and memory figures are medians.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One protocol and refresh mode over the runs.
#[derive(Clone, Debug, Serialize)]
pub struct ModeSummary {
    /// The first run's figures, with the CPU and memory figures replaced by the medians.
    #[serde(flatten)]
    pub figures: ModeRun,
    /// R1's engine time per reservation per refresh period in each run, nanoseconds.
    pub cpu_runs_ns: Vec<f64>,
    /// R1's heap per reservation in each run, bytes.
    pub memory_runs: Vec<f64>,
    /// Whether every run sent the same datagrams and bytes (the simulation is seeded).
    pub bytes_repeatable: bool,
}

/// Result of `pathwise bench qos`.
#[derive(Clone, Debug, Serialize)]
pub struct QosBenchReport {
    /// Reservations.
    pub sessions: usize,
    /// Refresh period R, seconds.
    pub refresh_s: f64,
    /// Periods counted.
    pub periods: u32,
    /// Runs.
    pub runs: usize,
    /// What the byte figures count.
    pub bytes_counted: &'static str,
    /// Per protocol and refresh mode.
    pub modes: Vec<ModeSummary>,
}

const BYTES_COUNTED: &str = "every datagram sent by R0, R1 and R2 during the window (both links, both \
     directions): IPv4 header 20 bytes (24 with Router Alert), UDP header 8 for GIST, then the \
     RSVP message or the GIST message with its NSLP data; no link-layer framing; GIST's own \
     routing-state refreshes (Query/Response/Confirm) included";

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// Run every mode `runs` times, interleaved.
pub fn run_report(a: QosBenchArgs) -> QosBenchReport {
    let p = SimParams {
        sessions: a.sessions,
        refresh: Duration::from_secs(a.refresh.max(1)),
        periods: a.periods.max(1),
    };
    let runs = a.runs.max(1);
    let mut all: Vec<Vec<ModeRun>> = vec![Vec::new(); Mode::ALL.len()];
    for _ in 0..runs {
        for (m, out) in Mode::ALL.iter().zip(all.iter_mut()) {
            out.push(sim::run_mode(*m, p));
        }
    }
    let modes = all
        .into_iter()
        .map(|rs| {
            let cpu: Vec<f64> = rs
                .iter()
                .map(|r| r.transit_cpu_ns_per_session_period)
                .collect();
            let mem: Vec<f64> = rs.iter().map(|r| r.transit_bytes_per_reservation).collect();
            let bytes_repeatable = rs.iter().all(|r| r.window == rs[0].window);
            let mut figures = rs[0].clone();
            figures.transit_cpu_ns_per_session_period = median(&cpu);
            figures.transit_bytes_per_reservation = median(&mem);
            ModeSummary {
                figures,
                cpu_runs_ns: cpu,
                memory_runs: mem,
                bytes_repeatable,
            }
        })
        .collect();
    QosBenchReport {
        sessions: a.sessions,
        refresh_s: p.refresh.as_secs_f64(),
        periods: p.periods,
        runs,
        bytes_counted: BYTES_COUNTED,
        modes,
    }
}

/// The report as a table.
pub fn render(r: &QosBenchReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "QoS NSLP and RSVP side by side: {} reservations R0 -> R1 -> R2 (seed 004 chain, simulated), \
         R = {} s, {} periods counted, {} runs",
        r.sessions, r.refresh_s, r.periods, r.runs
    );
    let _ = writeln!(
        out,
        "{:<26} {:>8} {:>12} {:>12} {:>14} {:>12}",
        "protocol, refresh",
        "held@R1",
        "dgrams/res/R",
        "bytes/res/R",
        "R1 CPU ns/res/R",
        "R1 B/res"
    );
    for m in &r.modes {
        let f = &m.figures;
        let _ = writeln!(
            out,
            "{:<26} {:>8} {:>12.2} {:>12.1} {:>14.0} {:>12.0}{}",
            f.mode.label(),
            f.reservations_at_transit,
            f.datagrams_per_session_period,
            f.bytes_per_session_period,
            f.transit_cpu_ns_per_session_period,
            f.transit_bytes_per_reservation,
            if m.bytes_repeatable {
                ""
            } else {
                "  (bytes differed between runs)"
            }
        );
    }
    let _ = writeln!(
        out,
        "res/R: per reservation per refresh period; bytes: {}",
        r.bytes_counted
    );
    out
}

/// Run `pathwise bench qos` and print its report.
pub fn run(a: QosBenchArgs) -> anyhow::Result<()> {
    print_report(a.json, &run_report(a), render)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One destination port per reservation: more than the ports there are is refused with the
    /// bound, not found out by a panic deep in a run.
    #[test]
    fn sessions_beyond_the_ports_are_refused() {
        use clap::Parser as _;
        let parse = |n: &str| {
            crate::cli::Cli::try_parse_from(["pathwise", "bench", "qos", "--sessions", n])
        };
        assert!(parse("64512").is_ok());
        for n in ["0", "64513"] {
            let e = parse(n).unwrap_err().to_string();
            assert!(e.contains("1..=64512"), "{e}");
        }
    }

    /// A short run: every mode reported once, every reservation held at the transit, bytes
    /// counted by the meter equal to what the simulator's links carried, full refresh costing
    /// more bytes than reduced refresh for both protocols.
    #[test]
    fn short_run_reports_every_mode_sanely() {
        let r = run_report(QosBenchArgs {
            sessions: 20,
            refresh: 30,
            periods: 2,
            runs: 1,
            json: false,
        });
        assert_eq!(r.modes.len(), Mode::ALL.len());
        for (m, mode) in r.modes.iter().zip(Mode::ALL) {
            let f = &m.figures;
            assert_eq!(f.mode, mode);
            assert_eq!(f.reservations_at_transit, 20, "{mode:?}");
            assert!(f.window.datagrams > 0, "{mode:?} sent nothing");
            assert_eq!(f.window.bytes, f.link_bytes, "{mode:?}: meter vs links");
            assert!(m.bytes_repeatable);
            assert_eq!(m.cpu_runs_ns.len(), 1);
        }
        let bytes = |mode| {
            r.modes
                .iter()
                .find(|m| m.figures.mode == mode)
                .map(|m| m.figures.bytes_per_session_period)
                .unwrap_or_default()
        };
        assert!(bytes(Mode::RsvpFull) > bytes(Mode::RsvpSummary));
        assert!(bytes(Mode::QosFull) > bytes(Mode::QosRsnOnly));
        assert!(bytes(Mode::QosRsnOnly) > bytes(Mode::QosSummary));
        let table = render(&r);
        for mode in Mode::ALL {
            assert!(table.contains(mode.label()), "{table}");
        }
        let json = serde_json::to_value(&r).expect("serializes");
        assert_eq!(json["modes"].as_array().map(Vec::len), Some(5));
        assert!(json["modes"][0]["bytes_per_session_period"].is_number());
    }
}
