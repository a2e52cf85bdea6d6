//! RSVP-TE load in simulation: many LSPs across seed 004's R0 – R1 – R2, and what keeping them
//! alive costs on the wire, with and without refresh reduction (RFC 2961). The figures are
//! counts of simulated messages and bytes, so they are exact and repeatable.

use crate::rsvp::sim::{node_config, sim_engine_config};
use pathwise_core::time::{Duration, Instant};
use pathwise_rsvp::engine::te::{LspRole, LspSpec, LspStatus};
use pathwise_rsvp::{Config, RsvpEngine};
use pathwise_sim::{Direction, NodeSetup, Sim, SimConfig, testbeds};

/// What keeping LSPs alive cost over a window of steady state.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RefreshLoad {
    /// LSPs up at the head end at the end.
    pub lsps_up: usize,
    /// RSVP messages per second on both links, both directions.
    pub messages_per_s: f64,
    /// Their bytes (IP payload) per second.
    pub bytes_per_s: f64,
    /// Path and Resv state that timed out anywhere during the run.
    pub timeouts: u64,
    /// Messages (Bundle sub-messages included) any node dropped during the whole run, by
    /// reason.
    pub drops: std::collections::BTreeMap<&'static str, u64>,
    /// Packets the links lost (loss, queue overflow) during the whole run.
    pub lost: u64,
}

/// Set up `lsps` LSPs from R0 to R2 (1 kbit/s each) with refresh period `refresh`, let them
/// settle for two periods, then count what crosses the links during `periods` periods.
pub fn refresh_load(
    lsps: usize,
    refresh_reduction: bool,
    refresh: Duration,
    periods: u32,
) -> RefreshLoad {
    refresh_load_on(
        testbeds::seed004_r0_r2(),
        ("R0", "R2"),
        lsps,
        refresh_reduction,
        refresh,
        periods,
    )
}

/// [`refresh_load`] on any topology, from the head end to the tail end named.
pub(crate) fn refresh_load_on(
    topology: pathwise_sim::Topology,
    (head, tail): (&str, &str),
    lsps: usize,
    refresh_reduction: bool,
    refresh: Duration,
    periods: u32,
) -> RefreshLoad {
    let base = Config {
        refresh_reduction,
        expected_sessions: lsps,
        ..sim_engine_config(refresh)
    };
    let mut sim = Sim::new(
        topology,
        SimConfig::seeded(2961),
        move |setup: &NodeSetup| {
            let cfg = node_config(setup, &base, &|_, _| Default::default());
            Some(RsvpEngine::with_memory_tc(cfg, Instant::ZERO))
        },
    );
    let r0 = sim.node(head).expect("head end");
    let r2 = sim.node(tail).expect("tail end");
    let to = sim.topology().loopbacks(r2)[0];
    sim.schedule_call(
        Instant::from_millis(1),
        r0,
        move |e: &mut RsvpEngine, now| {
            for i in 0..lsps {
                let spec = LspSpec::new(format!("lsp{i}"), to, 1000);
                e.open_lsp(now, spec).expect("LSP opens");
            }
        },
    );
    let links: Vec<_> = sim.topology().link_ids().collect();
    let count = |sim: &Sim<RsvpEngine>| {
        links
            .iter()
            .flat_map(|&l| [Direction::AToB, Direction::BToA].map(|d| sim.link_stats(l, d)))
            .fold((0u64, 0u64), |(m, b), s| (m + s.sent, b + s.sent_bytes))
    };
    let start = Instant::ZERO + refresh * 2;
    sim.run_until(start);
    let before = count(&sim);
    let window = refresh * periods;
    sim.run_until(start + window);
    let after = count(&sim);
    let secs = window.as_secs_f64();
    let lsps_up = sim
        .engine(r0)
        .map(|e| {
            e.lsps()
                .iter()
                .filter(|v| v.role == LspRole::HeadEnd && v.status == LspStatus::Up)
                .count()
        })
        .unwrap_or(0);
    let timeouts = sim
        .topology()
        .node_ids()
        .filter_map(|n| sim.engine(n))
        .map(|e| e.counters().path_timeouts + e.counters().resv_timeouts)
        .sum();
    let mut drops = std::collections::BTreeMap::new();
    for e in sim.topology().node_ids().filter_map(|n| sim.engine(n)) {
        for (reason, n) in &e.counters().drops {
            *drops.entry(*reason).or_insert(0) += n;
        }
    }
    let lost = links
        .iter()
        .flat_map(|&l| [Direction::AToB, Direction::BToA].map(|d| sim.link_stats(l, d)))
        .map(|s| s.drops.total())
        .sum();
    RefreshLoad {
        drops,
        lost,
        lsps_up,
        messages_per_s: (after.0 - before.0) as f64 / secs,
        bytes_per_s: (after.1 - before.1) as f64 / secs,
        timeouts,
    }
}

/// `pathwise bench rsvp-refresh`: the same LSPs with full refresh and with refresh reduction.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RefreshReport {
    /// LSPs.
    pub lsps: usize,
    /// Refresh period R, seconds.
    pub refresh_s: f64,
    /// Periods counted.
    pub periods: u32,
    /// Full refresh (RFC 2205).
    pub full: RefreshLoad,
    /// Refresh reduction (RFC 2961).
    pub refresh_reduction: RefreshLoad,
}

/// Run [`refresh_load`] both ways.
pub fn refresh_report(lsps: usize, refresh: Duration, periods: u32) -> RefreshReport {
    RefreshReport {
        lsps,
        refresh_s: refresh.as_secs_f64(),
        periods,
        full: refresh_load(lsps, false, refresh, periods),
        refresh_reduction: refresh_load(lsps, true, refresh, periods),
    }
}

/// The report as a table.
pub fn render_refresh(r: &RefreshReport) -> String {
    use std::fmt::Write as _;
    let mut out = format!(
        "{} LSPs over R0 - R1 - R2 (2 links, both directions), R = {} s, {} periods\n",
        r.lsps, r.refresh_s, r.periods
    );
    let _ = writeln!(
        out,
        "{:<20} {:>12} {:>12} {:>8} {:>9}",
        "", "messages/s", "bytes/s", "LSPs up", "timeouts"
    );
    for (name, l) in [
        ("full refresh", &r.full),
        ("refresh reduction", &r.refresh_reduction),
    ] {
        let _ = writeln!(
            out,
            "{name:<20} {:>12.1} {:>12.0} {:>8} {:>9}",
            l.messages_per_s, l.bytes_per_s, l.lsps_up, l.timeouts
        );
    }
    for (name, l) in [
        ("full refresh", &r.full),
        ("refresh reduction", &r.refresh_reduction),
    ] {
        let total: u64 = l.drops.values().sum();
        let _ = writeln!(out, "{name}: {total} messages dropped {:?}", l.drops);
    }
    let _ = writeln!(
        out,
        "ratio (full / reduced): {:.1}x messages, {:.1}x bytes",
        r.full.messages_per_s / r.refresh_reduction.messages_per_s,
        r.full.bytes_per_s / r.refresh_reduction.bytes_per_s
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue #21: with refresh reduction on, nodes dropped sub-messages of their neighbours'
    /// Bundles while many LSPs were set up at once.
    #[test]
    fn refresh_reduction_drops_nothing_while_lsps_come_up() {
        let l = refresh_load(2000, true, Duration::from_secs(30), 1);
        assert_eq!(l.lsps_up, 2000);
        assert_eq!(l.timeouts, 0);
        assert!(l.drops.is_empty(), "dropped: {:?}", l.drops);
    }

    /// The same over a longer chain (seed 001's R0 – R1 – R2 – R3) losing 2 % of the packets
    /// on every link, so Bundles, Acks and Srefreshes are lost and retransmitted while the
    /// LSPs come up and are kept: still nothing dropped and nothing timed out.
    #[test]
    fn refresh_reduction_over_a_lossy_chain_drops_nothing() {
        let text = testbeds::KOM_LATENCY.replace("mtu = 1500", "mtu = 1500\nloss = 0.02");
        let topo = pathwise_sim::Topology::from_toml(&text).expect("testbed parses");
        let l = refresh_load_on(topo, ("R0", "R3"), 2000, true, Duration::from_secs(30), 2);
        assert!(l.lost > 100, "the links lost only {} packets", l.lost);
        assert_eq!(l.lsps_up, 2000);
        assert_eq!(l.timeouts, 0);
        assert!(l.drops.is_empty(), "dropped: {:?}", l.drops);
    }
}
