//! `pathwise rsvp …`: talk to a running daemon's RSVP service over its management socket.

use crate::daemon::verbs::{ReserveReq, SenderArg, SenderReq, SessionArg, TrafficArg};
use clap::Subcommand;
use pathwise_core::units::Bandwidth;
use serde_json::{Value, json};
use std::net::IpAddr;
use std::path::PathBuf;

/// Arguments of `pathwise rsvp`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The daemon's management socket.
    #[arg(long, global = true, default_value_os_t = crate::daemon::config::default_socket())]
    socket: PathBuf,
    /// Print JSON.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

/// A session on the command line.
#[derive(Debug, Clone, clap::Args)]
struct SessionOpts {
    /// Destination address of the data flow.
    #[arg(long)]
    dest: IpAddr,
    /// Destination port (0: none).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// IP protocol of the data flow: udp, tcp or a number.
    #[arg(long, default_value = "udp", value_parser = protocol)]
    proto: u8,
}

impl SessionOpts {
    fn arg(&self) -> SessionArg {
        SessionArg {
            dest: self.dest,
            port: self.port,
            protocol: self.proto,
        }
    }
}

fn protocol(s: &str) -> Result<u8, String> {
    match s {
        "udp" => Ok(17),
        "tcp" => Ok(6),
        n => n
            .parse()
            .map_err(|_| format!("{s:?}: udp, tcp or a protocol number")),
    }
}

/// Traffic on the command line.
#[derive(Debug, Clone, clap::Args)]
struct TrafficOpts {
    /// Rate, e.g. 4Mbit.
    #[arg(long)]
    rate: Bandwidth,
    /// Token bucket depth in bytes (default: one second at the rate).
    #[arg(long)]
    bucket: Option<u32>,
    /// Largest packet, bytes.
    #[arg(long, default_value_t = 1500)]
    max_packet: u32,
}

impl TrafficOpts {
    fn arg(&self) -> TrafficArg {
        TrafficArg {
            rate_bps: self.rate.0,
            bucket_bytes: self.bucket,
            max_packet: self.max_packet,
        }
    }
}

fn sender(s: &str) -> Result<SenderArg, String> {
    if let Ok(src) = s.parse::<IpAddr>() {
        return Ok(SenderArg { src, sport: 0 });
    }
    let sa: std::net::SocketAddr = s
        .parse()
        .map_err(|_| format!("{s:?}: ADDRESS or ADDRESS:PORT ([v6]:PORT)"))?;
    Ok(SenderArg {
        src: sa.ip(),
        sport: sa.port(),
    })
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Register or withdraw a local sender.
    Sender {
        #[command(subcommand)]
        op: SenderOp,
    },
    /// Request a reservation as a local receiver (replaces this receiver's earlier request).
    Reserve {
        #[command(flatten)]
        session: SessionOpts,
        /// Reservation style: ff (fixed filter), se (shared explicit) or wf (wildcard filter).
        #[arg(long, default_value = "ff")]
        style: String,
        #[command(flatten)]
        traffic: TrafficOpts,
        /// A sender to reserve for, ADDRESS[:PORT] (repeat for several; not for wf).
        #[arg(long = "sender", value_parser = sender)]
        senders: Vec<SenderArg>,
        /// Ask for a confirmation (ResvConf).
        #[arg(long)]
        confirm: bool,
    },
    /// Withdraw this receiver's reservation.
    Release {
        #[command(flatten)]
        session: SessionOpts,
    },
    /// Show state.
    Show {
        /// What to show.
        #[arg(value_enum)]
        what: ShowWhat,
    },
}

#[derive(Debug, Subcommand)]
enum SenderOp {
    /// Register a local sender: its Path goes out and is refreshed.
    Add {
        #[command(flatten)]
        session: SessionOpts,
        /// This node's sending address.
        #[arg(long)]
        src: IpAddr,
        /// Source port (0: any).
        #[arg(long, default_value_t = 0)]
        sport: u16,
        #[command(flatten)]
        traffic: TrafficOpts,
    },
    /// Withdraw a local sender (PathTear).
    Del {
        #[command(flatten)]
        session: SessionOpts,
        /// The sending address.
        #[arg(long)]
        src: IpAddr,
        /// Source port.
        #[arg(long, default_value_t = 0)]
        sport: u16,
    },
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ShowWhat {
    /// Every session with its path and reservation state.
    Sessions,
    /// Path state only.
    Path,
    /// Reservation state only.
    Resv,
    /// RSVP interfaces and what is reserved on them.
    Interfaces,
    /// Message, drop and state counters.
    Counters,
    /// The latest upcalls (path, resv, errors, confirmations).
    Events,
    /// Hello neighbours (RFC 3209 §5): address, interface, instance, when last heard.
    Neighbors,
}

/// Run one verb against the daemon and print the answer.
pub fn run(a: Args) -> anyhow::Result<()> {
    let keep = match a.cmd {
        Cmd::Show {
            what: ShowWhat::Path,
        } => Some("paths"),
        Cmd::Show {
            what: ShowWhat::Resv,
        } => Some("resvs"),
        _ => None,
    };
    let (verb, args) = match a.cmd {
        Cmd::Sender {
            op:
                SenderOp::Add {
                    session,
                    src,
                    sport,
                    traffic,
                },
        } => (
            "rsvp.sender.add",
            serde_json::to_value(SenderReq {
                session: session.arg(),
                sender: SenderArg { src, sport },
                traffic: Some(traffic.arg()),
            })?,
        ),
        Cmd::Sender {
            op:
                SenderOp::Del {
                    session,
                    src,
                    sport,
                },
        } => (
            "rsvp.sender.del",
            serde_json::to_value(SenderReq {
                session: session.arg(),
                sender: SenderArg { src, sport },
                traffic: None,
            })?,
        ),
        Cmd::Reserve {
            session,
            style,
            traffic,
            senders,
            confirm,
        } => (
            "rsvp.reserve",
            serde_json::to_value(ReserveReq {
                session: session.arg(),
                style,
                traffic: traffic.arg(),
                senders,
                confirm,
            })?,
        ),
        Cmd::Release { session } => ("rsvp.release", serde_json::to_value(session.arg())?),
        Cmd::Show { what } => match what {
            ShowWhat::Sessions | ShowWhat::Path | ShowWhat::Resv => {
                ("rsvp.show.sessions", json!({}))
            }
            ShowWhat::Interfaces => ("rsvp.show.interfaces", json!({})),
            ShowWhat::Counters => ("rsvp.show.counters", json!({})),
            ShowWhat::Events => ("rsvp.show.events", json!({})),
            ShowWhat::Neighbors => ("rsvp.show.neighbors", json!({})),
        },
    };
    let answer = crate::mgmt::request(&a.socket, "pathwise daemon", verb, args)?;
    let answer = match keep {
        Some(keep) => project(answer, keep),
        None => answer,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
    } else {
        print!("{}", render(&answer));
    }
    Ok(())
}

fn project(v: Value, keep: &str) -> Value {
    match v {
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|s| json!({ "session": s.get("session").cloned().unwrap_or(Value::Null), keep: s.get(keep).cloned().unwrap_or(Value::Null) }))
                .collect(),
        ),
        other => other,
    }
}

/// Plain text: strings as they are, anything else as indented JSON.
fn render(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s}\n"),
        other => format!(
            "{}\n",
            serde_json::to_string_pretty(other).unwrap_or_default()
        ),
    }
}
