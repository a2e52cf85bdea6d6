//! `pathwise sim campaign`: fault campaigns (testing tier 4). Each seed draws a network, a
//! workload and faults, runs them on the simulator checking invariants at sampled instants,
//! turns the faults off, tears everything down and checks that nothing is left. A failing
//! seed prints the one command that replays it.
//!
//! What is shared lives here: the command line and the seed loop ([`run`]), the phases of a
//! run ([`drive`]), the invariant checkers and report types ([`invariants`]), the network,
//! faults and hostile nodes ([`faults`]). Each protocol's workload and checks live in its own
//! folder: `rsvp::campaign`, `gist::campaign`, `qos::campaign`.

pub mod faults;
pub mod invariants;

use invariants::{Checks, Invariant, Violation};
use pathwise_core::engine::Engine;
use pathwise_core::time::{Duration, Instant};
use pathwise_sim::{Control, NodeId, Sim};
use serde::Serialize;
use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher};

/// `pathwise sim …`.
#[derive(Debug, clap::Subcommand)]
pub enum SimCommand {
    /// Run a fault campaign: per seed a random network (or a seed paper's testbed), workload
    /// and faults (loss, duplication, reordering, link flaps, crashes, route changes, hostile
    /// nodes), invariants checked throughout and after teardown. Exits non-zero if any seed
    /// fails, printing the command that replays it.
    Campaign(CampaignArgs),
}

/// The protocols a campaign runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// RSVP: senders and receivers, FF/SE/WF reservations.
    Rsvp,
    /// RSVP-TE: LSPs with strict, loose or no explicit routes, and priorities.
    RsvpTe,
    /// GIST with the Ping NSLP: sessions pinging over D-mode (UDP) and C-mode.
    Gist,
    /// The QoS NSLP on GIST: sender- and receiver-initiated reservations, queries, releases.
    Qos,
}

impl Protocol {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Rsvp => "rsvp",
            Protocol::RsvpTe => "rsvp-te",
            Protocol::Gist => "gist",
            Protocol::Qos => "qos",
        }
    }

    /// Run one seed.
    pub fn run_seed(self, seed: u64) -> SeedRun {
        match self {
            Protocol::Rsvp => crate::rsvp::campaign::run_seed(seed, false),
            Protocol::RsvpTe => crate::rsvp::campaign::run_seed(seed, true),
            Protocol::Gist => crate::gist::campaign::run_seed(seed),
            Protocol::Qos => crate::qos::campaign::run_seed(seed),
        }
    }
}

/// `pathwise sim campaign`.
#[derive(Debug, clap::Args)]
pub struct CampaignArgs {
    /// Which protocol.
    #[arg(value_enum)]
    pub protocol: Protocol,
    /// How many seeds.
    #[arg(long, default_value_t = 100)]
    pub seeds: u64,
    /// The first seed (the others follow it); without it, a fresh random one, printed.
    #[arg(long)]
    pub first_seed: Option<u64>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// What one seed did.
#[derive(Clone, Debug, Default)]
pub struct SeedRun {
    /// Virtual time simulated.
    pub virtual_time: Duration,
    /// What was checked.
    pub checks: Checks,
    /// The first violation, which ends the run.
    pub violation: Option<Violation>,
    /// A short description of what was drawn (network, workload, faults).
    pub drawn: String,
    /// What happened, to show the run exercised something (see [`Workload::activity`]).
    pub activity: Activity,
}

/// Named counts of what happened in runs: reservations up, timeouts, injected messages, …
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Activity(pub BTreeMap<&'static str, u64>);

impl Activity {
    /// Add `n` to `what`.
    pub fn add(&mut self, what: &'static str, n: u64) {
        *self.0.entry(what).or_insert(0) += n;
    }
}

/// A failed seed in the report.
#[derive(Clone, Debug, Serialize)]
pub struct Failure {
    /// The seed.
    pub seed: u64,
    /// The command that replays it.
    pub replay: String,
    /// What was drawn.
    pub drawn: String,
    /// What was violated, when and where.
    pub violation: Violation,
}

/// The campaign's report.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The protocol.
    pub protocol: Protocol,
    /// The first seed.
    pub first_seed: u64,
    /// Seeds run.
    pub seeds: u64,
    /// Seeds that failed.
    pub failures: Vec<Failure>,
    /// Virtual time simulated, seconds, all seeds.
    pub virtual_time_s: f64,
    /// Wall time, seconds.
    pub wall_time_s: f64,
    /// Checks made, per invariant.
    pub checks: Checks,
    /// What happened, summed over seeds.
    pub activity: Activity,
}

/// A fresh random seed (no generator state to carry between runs: the process's hash keys).
pub fn fresh_seed() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    // Seeds stay below 2^53 so JSON readers keep them exact.
    h.finish() >> 11
}

/// The command that replays `seed`.
pub fn replay_command(protocol: Protocol, seed: u64) -> String {
    format!(
        "pathwise sim campaign {} --seeds 1 --first-seed {seed}",
        protocol.name()
    )
}

/// Run `seeds` seeds from `first_seed`; `progress` is told of each failure as it happens.
pub fn campaign(
    protocol: Protocol,
    first_seed: u64,
    seeds: u64,
    mut progress: impl FnMut(&Failure),
) -> Report {
    let start = std::time::Instant::now();
    let mut report = Report {
        protocol,
        first_seed,
        seeds,
        failures: Vec::new(),
        virtual_time_s: 0.0,
        wall_time_s: 0.0,
        checks: Checks::default(),
        activity: Activity::default(),
    };
    for i in 0..seeds {
        let seed = first_seed.wrapping_add(i);
        let run = protocol.run_seed(seed);
        report.virtual_time_s += run.virtual_time.as_secs_f64();
        report.checks.add(&run.checks);
        for (k, v) in &run.activity.0 {
            report.activity.add(k, *v);
        }
        if let Some(violation) = run.violation {
            let f = Failure {
                seed,
                replay: replay_command(protocol, seed),
                drawn: run.drawn,
                violation,
            };
            progress(&f);
            report.failures.push(f);
        }
    }
    report.wall_time_s = start.elapsed().as_secs_f64();
    report
}

/// The report as a table.
pub fn render(r: &Report) -> String {
    use std::fmt::Write as _;
    let mut out = format!(
        "{} campaign: {} seeds from {}, {} failed\nvirtual time {:.0} s, wall time {:.1} s\n",
        r.protocol.name(),
        r.seeds,
        r.first_seed,
        r.failures.len(),
        r.virtual_time_s,
        r.wall_time_s
    );
    let _ = writeln!(out, "{:<22} {:>12}", "invariant", "checks");
    for inv in Invariant::ALL {
        let n = r.checks.get(inv);
        if n > 0 {
            let _ = writeln!(out, "{:<22} {:>12}", inv.name(), n);
        }
    }
    let _ = writeln!(out, "{:<42} {:>12}", "activity (all seeds)", "count");
    for (k, v) in &r.activity.0 {
        let _ = writeln!(out, "{k:<42} {v:>12}");
    }
    for f in &r.failures {
        let _ = writeln!(
            out,
            "FAILED seed {}: {}\n  replay: {}",
            f.seed, f.violation, f.replay
        );
    }
    out
}

/// `pathwise sim …`.
pub fn run(cmd: SimCommand) -> anyhow::Result<()> {
    let SimCommand::Campaign(a) = cmd;
    let first_seed = match a.first_seed {
        Some(s) => s,
        None => {
            let s = fresh_seed();
            eprintln!("first seed {s} (random)");
            s
        }
    };
    let report = campaign(a.protocol, first_seed, a.seeds, |f| {
        // The replay command is printed once, in the report.
        eprintln!(
            "seed {} failed: {}\n  drawn: {}",
            f.seed, f.violation, f.drawn
        );
    });
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report));
    }
    if report.failures.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("{} of {} seeds failed", report.failures.len(), report.seeds)
    }
}

/// Which checks apply at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// During faults (and while settling): what holds at every instant.
    Running,
    /// Faults off for long enough that soft state has converged: also what holds once stable.
    Settled,
    /// After teardown and a state lifetime or two: nothing may be left.
    Quiescent,
}

/// A protocol's workload on the simulator.
pub trait Workload {
    /// The engine every node runs.
    type Engine: Engine;
    /// Let applications react to what their engines reported (and drain the event log).
    fn react(&mut self, sim: &mut Sim<Self::Engine>);
    /// A crashed node came back: its applications start again.
    fn restarted(&mut self, sim: &mut Sim<Self::Engine>, node: NodeId);
    /// Check the invariants that apply at `stage`, counting each check.
    fn check(
        &self,
        sim: &Sim<Self::Engine>,
        stage: Stage,
        checks: &mut Checks,
    ) -> Result<(), Violation>;
    /// Every application leaves: senders withdraw, receivers release, LSPs close.
    fn teardown(&mut self, sim: &mut Sim<Self::Engine>);
    /// What the engines did, counted once the run has settled (before teardown).
    fn activity(&self, sim: &Sim<Self::Engine>, out: &mut Activity);
}

/// How long each phase lasts and how often invariants are sampled.
#[derive(Clone, Copy, Debug)]
pub struct Phases {
    /// Faults on.
    pub faults: Duration,
    /// Faults off, applications still active, until soft state converges.
    pub settle: Duration,
    /// After teardown, until everything must be gone.
    pub quiesce: Duration,
    /// Applications react this often.
    pub step: Duration,
    /// Invariants are checked every this many steps.
    pub check_every: u32,
}

/// Run a drawn seed: note the fault plan in `drawn`, impair the links it names, let `start`
/// prepare the nodes, then [`drive`] the phases (restoring `original` for the quiet one).
pub fn run_plan<W: Workload>(
    sim: &mut Sim<W::Engine>,
    w: &mut W,
    plan: &faults::FaultPlan,
    original: &pathwise_sim::Topology,
    phases: Phases,
    mut drawn: String,
    start: impl FnOnce(&mut Sim<W::Engine>, &mut W),
) -> SeedRun {
    use std::fmt::Write as _;
    let _ = write!(
        drawn,
        " {} impaired links, {} timed faults, {} hostile",
        plan.impaired.len(),
        plan.timed.len(),
        plan.hostile.len()
    );
    for (l, p) in &plan.impaired {
        sim.apply(Control::SetLinkParams {
            link: *l,
            direction: None,
            params: p.clone(),
        });
    }
    start(sim, w);
    let mut checks = Checks::default();
    let mut activity = Activity::default();
    let violation = drive(
        sim,
        w,
        &plan.timed,
        faults::FaultPlan::restore(original),
        phases,
        &mut checks,
        &mut activity,
    )
    .err();
    SeedRun {
        virtual_time: sim.now() - Instant::ZERO,
        checks,
        violation,
        drawn,
        activity,
    }
}

/// Run a workload through the three phases: faults (from `timed`, applied at their instants),
/// settling (after `restore` turned them off), quiescence (after teardown). Stops at the first
/// violation.
pub fn drive<W: Workload>(
    sim: &mut Sim<W::Engine>,
    w: &mut W,
    timed: &[(Instant, Control)],
    restore: Vec<Control>,
    phases: Phases,
    checks: &mut Checks,
    activity: &mut Activity,
) -> Result<(), Violation> {
    let mut pending = timed.iter().peekable();
    let mut steps = 0u32;
    let mut run_to =
        |sim: &mut Sim<W::Engine>,
         w: &mut W,
         end: Instant,
         pending: &mut std::iter::Peekable<std::slice::Iter<'_, (Instant, Control)>>,
         checks: &mut Checks|
         -> Result<(), Violation> {
            while sim.now() < end {
                let mut next = (sim.now() + phases.step).min(end);
                if let Some((at, _)) = pending.peek() {
                    next = next.min(*at);
                }
                sim.run_until(next);
                while let Some((_, c)) = pending.next_if(|(at, _)| *at <= sim.now()) {
                    let restart = match c {
                        Control::Restart(n) if !sim.is_up(*n) => Some(*n),
                        _ => None,
                    };
                    sim.apply(c.clone());
                    if let Some(n) = restart {
                        w.restarted(sim, n);
                    }
                }
                w.react(sim);
                steps += 1;
                if steps.is_multiple_of(phases.check_every) {
                    w.check(sim, Stage::Running, checks)?;
                }
            }
            Ok(())
        };
    let fault_end = sim.now() + phases.faults;
    run_to(sim, w, fault_end, &mut pending, checks)?;
    for c in restore {
        let restart = match c {
            Control::Restart(n) if !sim.is_up(n) => Some(n),
            _ => None,
        };
        sim.apply(c);
        if let Some(n) = restart {
            w.restarted(sim, n);
        }
    }
    let mut none = [].iter().peekable();
    let settle_end = sim.now() + phases.settle;
    run_to(sim, w, settle_end, &mut none, checks)?;
    w.check(sim, Stage::Settled, checks)?;
    w.activity(sim, activity);
    activity.add("packets lost on links", sim.drops().total());
    w.teardown(sim);
    let quiet_end = sim.now() + phases.quiesce;
    run_to(sim, w, quiet_end, &mut none, checks)?;
    w.check(sim, Stage::Quiescent, checks)
}
