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

    /// Run one seed within the default [`Budget`].
    pub fn run_seed(self, seed: u64) -> SeedRun {
        self.run_seed_within(seed, Budget::default())
    }

    /// Run one seed; the watchdog ends it as a failure once it exceeds `budget`.
    pub fn run_seed_within(self, seed: u64, budget: Budget) -> SeedRun {
        match self {
            Protocol::Rsvp => crate::rsvp::campaign::run_seed(seed, false, budget),
            Protocol::RsvpTe => crate::rsvp::campaign::run_seed(seed, true, budget),
            Protocol::Gist => crate::gist::campaign::run_seed(seed, budget),
            Protocol::Qos => crate::qos::campaign::run_seed(seed, budget),
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
    /// Watchdog: simulator events (packets delivered, timers fired) one seed may take; a seed
    /// stuck at one virtual instant (a livelock, a message storm) fails instead of hanging.
    #[arg(long, default_value_t = Budget::default().events)]
    pub max_events: u64,
    /// Watchdog: wall-clock seconds one seed may take.
    #[arg(long, default_value_t = Budget::default().wall.as_secs_f64())]
    pub seed_timeout: f64,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// What one seed may use before the watchdog ends it as a failure. Virtual time needs no
/// budget of its own: each phase has a fixed length, so a run that stops advancing it shows
/// as events piling up at one instant, which `events` bounds; `wall` bounds the rest, even a
/// seed stuck inside one engine call (see [`run_guarded`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Budget {
    /// Simulator events per seed.
    pub events: u64,
    /// Wall-clock time per seed.
    pub wall: std::time::Duration,
}

impl Default for Budget {
    /// Far above what a seed takes: in a release build the busiest of 1,000 GIST seeds took
    /// 14,325 events and the slowest 0.09 s (the report's `max_events_per_seed` and
    /// `max_wall_per_seed_s`); a debug build is ten to twenty times slower.
    fn default() -> Self {
        Budget {
            events: 50_000_000,
            wall: std::time::Duration::from_secs(300),
        }
    }
}

/// Keeps a seed within its [`Budget`] while [`drive`] runs it.
#[derive(Debug)]
pub struct Watchdog {
    budget: Budget,
    start: std::time::Instant,
    events: u64,
}

impl Watchdog {
    /// Start watching.
    pub fn new(budget: Budget) -> Self {
        Watchdog {
            budget,
            start: std::time::Instant::now(),
            events: 0,
        }
    }

    /// Simulator events so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// [`Sim::run_until`] `to`, one event at a time, within the budget.
    pub fn run_until<E: Engine>(&mut self, sim: &mut Sim<E>, to: Instant) -> Result<(), Violation> {
        while sim.next_event_at().is_some_and(|at| at <= to) {
            sim.step();
            self.events += 1;
            if self.events > self.budget.events {
                return Err(Violation::new(
                    Invariant::Watchdog,
                    sim.now(),
                    "-",
                    format!(
                        "more than {} simulator events by t = {:.6} s (on the way to {:.3} s): \
                         a livelock or a storm",
                        self.budget.events,
                        sim.now().as_nanos() as f64 / 1e9,
                        to.as_nanos() as f64 / 1e9
                    ),
                ));
            }
            if self.events.is_multiple_of(4096) {
                self.check_wall(sim.now())?;
            }
        }
        sim.run_until(to);
        self.check_wall(sim.now())
    }

    fn check_wall(&self, now: Instant) -> Result<(), Violation> {
        let spent = self.start.elapsed();
        if spent > self.budget.wall {
            return Err(Violation::new(
                Invariant::Watchdog,
                now,
                "-",
                format!(
                    "{:.3} s of wall-clock time by t = {:.3} s, over the budget of {:.3} s \
                     ({} simulator events)",
                    spent.as_secs_f64(),
                    now.as_nanos() as f64 / 1e9,
                    self.budget.wall.as_secs_f64(),
                    self.events
                ),
            ));
        }
        Ok(())
    }
}

/// Run `f` on its own thread and wait at most `limit` for it. A seed stuck inside one engine
/// call never returns to [`Watchdog`]; this reports it instead of hanging the campaign. Its
/// thread cannot be stopped and is left behind (the process ends it on exit). A panic is
/// reported too, as `Err` with its message.
pub fn run_guarded<T: Send + 'static>(
    limit: std::time::Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("campaign-seed".into())
        .stack_size(32 << 20)
        .spawn(move || {
            let _ = tx.send(f());
        });
    if let Err(e) = spawned {
        return Err(format!("cannot start the seed's thread: {e}"));
    }
    match rx.recv_timeout(limit) {
        Ok(v) => Ok(v),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(format!(
            "no result after {:.3} s of wall-clock time: stuck inside one call (thread left behind)",
            limit.as_secs_f64()
        )),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            Err("the seed panicked (message on stderr)".into())
        }
    }
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
    /// Simulator events processed.
    pub events: u64,
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
    /// The watchdog's budget per seed.
    pub budget: Budget,
    /// Simulator events, all seeds.
    pub events: u64,
    /// Simulator events of the busiest seed.
    pub max_events_per_seed: u64,
    /// Wall time of the slowest seed, seconds.
    pub max_wall_per_seed_s: f64,
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

/// The command that replays `seed` (with the watchdog's budget when it is not the default).
pub fn replay_command(protocol: Protocol, seed: u64, budget: Budget) -> String {
    let mut cmd = format!(
        "pathwise sim campaign {} --seeds 1 --first-seed {seed}",
        protocol.name()
    );
    let default = Budget::default();
    if budget.events != default.events {
        cmd += &format!(" --max-events {}", budget.events);
    }
    if budget.wall != default.wall {
        cmd += &format!(" --seed-timeout {}", budget.wall.as_secs_f64());
    }
    cmd
}

/// Run `seeds` seeds from `first_seed` within the default [`Budget`]; `progress` is told of
/// each failure as it happens.
pub fn campaign(
    protocol: Protocol,
    first_seed: u64,
    seeds: u64,
    progress: impl FnMut(&Failure),
) -> Report {
    campaign_within(protocol, first_seed, seeds, Budget::default(), progress)
}

/// [`campaign`] with the watchdog's `budget` per seed: a seed over it fails (invariant
/// `watchdog`) with its replay command, and the campaign goes on.
pub fn campaign_within(
    protocol: Protocol,
    first_seed: u64,
    seeds: u64,
    budget: Budget,
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
        budget,
        events: 0,
        max_events_per_seed: 0,
        max_wall_per_seed_s: 0.0,
    };
    // The cooperative checks in [`Watchdog`] fire first; the guard only catches a seed that
    // never gets back to them.
    let guard = budget.wall + budget.wall / 2 + std::time::Duration::from_secs(1);
    for i in 0..seeds {
        let seed = first_seed.wrapping_add(i);
        let seed_start = std::time::Instant::now();
        let run = run_guarded(guard, move || protocol.run_seed_within(seed, budget))
            .unwrap_or_else(|detail| SeedRun {
                violation: Some(Violation::new(
                    Invariant::Watchdog,
                    Instant::ZERO,
                    "-",
                    detail,
                )),
                drawn: "(not known: the seed did not finish)".into(),
                ..SeedRun::default()
            });
        report.max_wall_per_seed_s = report
            .max_wall_per_seed_s
            .max(seed_start.elapsed().as_secs_f64());
        report.events += run.events;
        report.max_events_per_seed = report.max_events_per_seed.max(run.events);
        report.virtual_time_s += run.virtual_time.as_secs_f64();
        report.checks.add(&run.checks);
        for (k, v) in &run.activity.0 {
            report.activity.add(k, *v);
        }
        if let Some(violation) = run.violation {
            let f = Failure {
                seed,
                replay: replay_command(protocol, seed, budget),
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
    let _ = writeln!(
        out,
        "simulator events {} (busiest seed {}), slowest seed {:.3} s; watchdog: {} events, {:.0} s per seed",
        r.events,
        r.max_events_per_seed,
        r.max_wall_per_seed_s,
        r.budget.events,
        r.budget.wall.as_secs_f64()
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
    anyhow::ensure!(
        a.seed_timeout.is_finite() && a.seed_timeout > 0.0,
        "--seed-timeout must be a positive number of seconds"
    );
    let budget = Budget {
        events: a.max_events,
        wall: std::time::Duration::from_secs_f64(a.seed_timeout),
    };
    let report = campaign_within(a.protocol, first_seed, a.seeds, budget, |f| {
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
#[allow(clippy::too_many_arguments)]
pub fn run_plan<W: Workload>(
    sim: &mut Sim<W::Engine>,
    w: &mut W,
    plan: &faults::FaultPlan,
    original: &pathwise_sim::Topology,
    phases: Phases,
    budget: Budget,
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
    let mut watch = Watchdog::new(budget);
    let violation = drive(
        sim,
        w,
        &plan.timed,
        faults::FaultPlan::restore(original),
        phases,
        &mut watch,
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
        events: watch.events(),
    }
}

/// Run a workload through the three phases: faults (from `timed`, applied at their instants),
/// settling (after `restore` turned them off), quiescence (after teardown), the simulator
/// advanced by `watch`. Stops at the first violation, or when the watchdog fires.
#[allow(clippy::too_many_arguments)]
pub fn drive<W: Workload>(
    sim: &mut Sim<W::Engine>,
    w: &mut W,
    timed: &[(Instant, Control)],
    restore: Vec<Control>,
    phases: Phases,
    watch: &mut Watchdog,
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
                watch.run_until(sim, next)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_stuck_inside_a_call_is_reported_not_waited_for() {
        let start = std::time::Instant::now();
        let r: Result<(), String> = run_guarded(std::time::Duration::from_millis(50), || {
            loop {
                std::thread::sleep(std::time::Duration::from_secs(1));
            }
        });
        assert!(r.unwrap_err().contains("stuck inside one call"));
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn a_panicking_seed_is_reported() {
        let r: Result<(), String> =
            run_guarded(std::time::Duration::from_secs(5), || panic!("engine bug"));
        assert!(r.unwrap_err().contains("panicked"));
    }

    #[test]
    fn replay_command_carries_a_budget_that_is_not_the_default() {
        assert_eq!(
            replay_command(Protocol::Gist, 5, Budget::default()),
            "pathwise sim campaign gist --seeds 1 --first-seed 5"
        );
        let b = Budget {
            events: 10,
            wall: std::time::Duration::from_millis(1500),
        };
        assert_eq!(
            replay_command(Protocol::Rsvp, 5, b),
            "pathwise sim campaign rsvp --seeds 1 --first-seed 5 --max-events 10 --seed-timeout 1.5"
        );
    }
}
