//! `pathwise loadgen rsvp`: KOM's churn load generator (seed 001 §IV) on raw sockets.

use super::driver::{self, RunOptions};
use super::rsvp::{LoadConfig, ReceiverConfig, SenderConfig};
use crate::gist::cli::duration;
use clap::{Args as ClapArgs, Subcommand, ValueEnum};
use pathwise_core::timer::WheelConfig;
use pathwise_core::units::Bandwidth;
use pathwise_rsvp::wire::{FlowSpec, StyleKind, TokenBucket};
use std::net::IpAddr;
use std::time::Duration;

/// The load generators.
#[derive(Debug, Subcommand)]
pub enum Loadgen {
    /// RSVP end hosts with KOM's churn (seed 001 §IV): senders create flows at random intervals
    /// up to a bound until n exist, then create and delete to keep the count in [n−10, n];
    /// receivers reserve as soon as a Path arrives. Runs until --duration or SIGINT/SIGTERM,
    /// then tears every flow down and reports.
    Rsvp(RsvpArgs),
}

/// Which hosts this process plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Role {
    /// The senders (Path, PathTear).
    Sender,
    /// The receivers (Resv in answer to each Path).
    Receiver,
    /// Both.
    Both,
}

/// Reservation style of the receivers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Style {
    /// Fixed-Filter: one reservation per sender.
    Ff,
    /// Wildcard-Filter: one reservation per session.
    Wf,
}

/// `pathwise loadgen rsvp`.
#[derive(Debug, ClapArgs)]
pub struct RsvpArgs {
    /// Which hosts to play.
    #[arg(long, value_enum, default_value = "both")]
    role: Role,
    /// The senders' address (a local address; SENDER_TEMPLATE and RSVP_HOP). Required for
    /// the sender role.
    #[arg(long)]
    src: Option<IpAddr>,
    /// Session destination(s), comma separated; flows are spread over them. Required for the
    /// sender role.
    #[arg(long, value_delimiter = ',')]
    dest: Vec<IpAddr>,
    /// The target number of flows n.
    #[arg(long, default_value_t = 1000)]
    flows: u64,
    /// Upper bound of the randomized interval between creations and between deletions
    /// (the average flow lifetime is n · max / 2; seed 001 §V.A used 25ms).
    #[arg(long, default_value = "25ms", value_parser = duration)]
    max_interval: Duration,
    /// Upper bound of the interval while ramping up to n (default: --max-interval).
    #[arg(long, value_parser = duration)]
    ramp_interval: Option<Duration>,
    /// Refresh period R (TIME_VALUES; refreshes at 0.5–1.5 R, RFC 2205 §3.7).
    #[arg(long, default_value = "30s", value_parser = duration)]
    refresh: Duration,
    /// Stop after this long (default: run until SIGINT/SIGTERM).
    #[arg(long, value_parser = duration)]
    duration: Option<Duration>,
    /// Token rate of every flow's SENDER_TSPEC and FLOWSPEC (Controlled-Load), e.g. 1kbit.
    #[arg(long, default_value = "1kbit")]
    rate: Bandwidth,
    /// Reservation style of the receivers.
    #[arg(long, value_enum, default_value = "ff")]
    style: Style,
    /// Receivers ask for a ResvConf with each new reservation.
    #[arg(long)]
    confirm: bool,
    /// Send at most this many messages per second (default: no limit).
    #[arg(long)]
    max_rate: Option<u32>,
    /// Send at most this many messages per second while tearing the flows down at the end, so
    /// the routers' receive buffers do not overflow (0: no limit but --max-rate).
    #[arg(long, default_value_t = 10_000)]
    teardown_rate: u32,
    /// First destination port of the sessions (and first source port of the senders).
    #[arg(long, default_value_t = 1024)]
    port_base: u16,
    /// Seed of the churn and refresh jitter (default: random).
    #[arg(long)]
    seed: Option<u64>,
    /// How long the teardown may take.
    #[arg(long, default_value = "60s", value_parser = duration)]
    teardown_limit: Duration,
    /// Print a progress line to stderr this often.
    #[arg(long, value_parser = duration)]
    progress: Option<Duration>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

impl RsvpArgs {
    /// The generator's configuration.
    pub fn config(&self) -> anyhow::Result<LoadConfig> {
        let bytes_per_s = self.rate.0 as f32 / 8.0;
        let bucket = TokenBucket {
            rate: bytes_per_s,
            bucket: 1500.0,
            peak: f32::INFINITY,
            min_policed: 64,
            max_packet: 1500,
        };
        let sender = match self.role {
            Role::Receiver => None,
            Role::Sender | Role::Both => {
                let Some(src) = self.src else {
                    anyhow::bail!("--src is required for the sender role");
                };
                if self.dest.is_empty() {
                    anyhow::bail!("--dest is required for the sender role");
                }
                Some(SenderConfig {
                    src,
                    dests: self.dest.clone(),
                    flows: self.flows,
                    max_interval: self.max_interval,
                    ramp_interval: self.ramp_interval.unwrap_or(self.max_interval),
                    protocol: 17,
                    dst_port_base: self.port_base,
                    src_port_base: self.port_base,
                    tspec: bucket,
                })
            }
        };
        let receiver = match self.role {
            Role::Sender => None,
            Role::Receiver | Role::Both => Some(ReceiverConfig {
                style: match self.style {
                    Style::Ff => StyleKind::Ff,
                    Style::Wf => StyleKind::Wf,
                },
                flowspec: FlowSpec::ControlledLoad(bucket),
                confirm: self.confirm,
            }),
        };
        Ok(LoadConfig {
            seed: self.seed.unwrap_or_else(pathwise_core::rand::random),
            sender,
            receiver,
            refresh: self.refresh,
            keep_multiplier: 3,
            max_rate: self.max_rate,
            teardown_rate: (self.teardown_rate > 0).then_some(self.teardown_rate),
            // 10 ms slots (the seed's tuned wheel, §V.B), fuzzy: refreshes need no finer.
            wheel: WheelConfig {
                slot_width: Duration::from_millis(10),
                slots: 1024,
                levels: 3,
                fuzzy: true,
            },
        })
    }
}

/// Run `pathwise loadgen …`.
pub fn run(what: Loadgen) -> anyhow::Result<()> {
    match what {
        Loadgen::Rsvp(a) => {
            let cfg = a.config()?;
            let report = driver::run(
                cfg,
                &RunOptions {
                    duration: a.duration,
                    teardown_limit: a.teardown_limit,
                    progress: a.progress,
                    recv_buffer: 32 << 20,
                },
            )?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", report.table());
            }
            Ok(())
        }
    }
}
