//! Fault campaigns (testing tier 4), a few seeds per protocol from a fresh starting seed each
//! run: what CI runs. A failure names the command that replays the failing seed.

use pathwise::sim::{Protocol, campaign, fresh_seed, render};

/// Seeds per protocol: the whole test stays well under a minute on two cores.
const SEEDS: u64 = 50;

fn run(protocol: Protocol) {
    let first = std::env::var("PATHWISE_CAMPAIGN_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(fresh_seed);
    println!("{} campaign: first seed {first}", protocol.name());
    let report = campaign(protocol, first, SEEDS, |f| {
        println!(
            "seed {} failed: {}\n  replay: {}",
            f.seed, f.violation, f.replay
        );
    });
    print!("{}", render(&report));
    assert!(
        report.failures.is_empty(),
        "failing seeds; replay with: {}",
        report
            .failures
            .iter()
            .map(|f| f.replay.as_str())
            .collect::<Vec<_>>()
            .join(" ; ")
    );
    assert!(
        report.checks.0.values().sum::<u64>() > 0,
        "something was checked"
    );
}

#[test]
fn rsvp_campaign() {
    run(Protocol::Rsvp);
}

#[test]
fn rsvp_te_campaign() {
    run(Protocol::RsvpTe);
}

#[test]
fn gist_campaign() {
    run(Protocol::Gist);
}

/// Ignored until the QoS NSLP engine bugs the campaign found are fixed (about 1.5 % of seeds
/// fail, so 50 seeds fail most runs; seeds and findings in docs/CAMPAIGNS.md). Run with
/// `cargo test -p pathwise --test sim_campaign -- --ignored qos_campaign`.
#[test]
#[ignore = "open QoS NSLP engine bugs found by the campaign: docs/CAMPAIGNS.md"]
fn qos_campaign() {
    run(Protocol::Qos);
}

/// Gist seed 2485318213037986 hung: a messaging association still connecting after its hold
/// time, that had heard from its peer meanwhile, re-armed its timer at the passed deadline and
/// fired for ever inside one `handle_timeout` (fixed in `GistEngine::on_ma_timer`). Run on a
/// thread so a regression fails instead of hanging.
#[test]
fn gist_seed_2485318213037986_does_not_livelock() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(Protocol::Gist.run_seed(2485318213037986));
    });
    let run = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the seed finishes");
    assert!(run.violation.is_none(), "{:?}", run.violation);
}
