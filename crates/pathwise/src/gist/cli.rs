//! `pathwise gist …`: talk to a running daemon's GIST service over its management socket —
//! ping along a path with the Ping NSLP, show routing state, messaging associations, counters —
//! or over its IPC NSLP API (`nslp-ping`; `send` and `listen` in [`super::nslp_cli`]).

use clap::Subcommand;
use serde_json::{Value, json};
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `pathwise gist`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    daemon: crate::cli::DaemonArgs,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Ping DEST with the Ping NSLP (seed 000 §4.1.2): every GIST-aware node on the path
    /// records itself; prints each reply's RTT and the path. The first ping sets up routing
    /// state hop by hop; the following reuse it.
    Ping {
        /// Destination of the flow to ping along (a node running GIST).
        dest: IpAddr,
        /// How GIST carries the pings.
        #[arg(long, value_enum, default_value = "udp")]
        transport: Transport,
        /// Pings to send.
        #[arg(long, short = 'c', default_value_t = 1)]
        count: u32,
        /// Time between pings.
        #[arg(long, default_value = "1s", value_parser = duration)]
        interval: Duration,
        /// How long to wait for each reply (at most 9s).
        #[arg(long, default_value = "3s", value_parser = duration)]
        timeout: Duration,
        /// Load client (seed 000 §4.1.5): open this many sessions, then ping across them;
        /// reports session setup times and the RTT distribution.
        #[arg(long)]
        sessions: Option<u32>,
        /// Load client: sessions opened per second.
        #[arg(long, default_value_t = 100.0, requires = "sessions")]
        initial_rate: f64,
        /// Load client: pings per second across the sessions once all are open.
        #[arg(long, default_value_t = 100.0, requires = "sessions")]
        steady_rate: f64,
        /// Load client: length of the steady phase.
        #[arg(long, default_value = "10s", value_parser = duration, requires = "sessions")]
        duration: Duration,
        /// Load client churn (seed 001 §IV, as `pathwise loadgen rsvp`): in the steady phase,
        /// end the oldest session and open new ones at random intervals up to this bound, so
        /// the count stays in [n−10, n] (average lifetime n · bound / 2); reports the lifetime
        /// and the setups and teardowns per second.
        #[arg(long, value_parser = duration, requires = "sessions")]
        churn: Option<Duration>,
    },
    /// Run the Ping NSLP as its own process over the daemon's IPC NSLP API (`[gist]
    /// ipc_socket`; seed 000 §3.7): it registers the NSLPID and forwards and answers pings
    /// until the daemon goes. While it runs, the daemon's in-process Ping NSLP stands aside.
    NslpPing {
        /// The daemon's IPC socket.
        #[arg(long, default_value = "/run/pathwise/gist.sock")]
        ipc_socket: PathBuf,
        /// NSLPID to register.
        #[arg(long, default_value_t = pathwise_gist::nslp::ping::NSLPID)]
        nslpid: u16,
        /// The address recorded in pings (default: the daemon's of the flow's family).
        #[arg(long)]
        record_address: Option<IpAddr>,
    },
    /// Send an NSLP payload of any NSLPID towards DEST along the path, over the daemon's IPC
    /// NSLP API (`[gist] ipc_socket`): prints each message's MessageStatus (dispatched or why
    /// not) and every message that comes back in the session. Exits non-zero unless every
    /// message was dispatched.
    Send(super::nslp_cli::SendArgs),
    /// Serve any NSLPID over the daemon's IPC NSLP API: peer with every Query, print every
    /// message, notification and status; `--echo` sends each payload back to its sender.
    Listen(super::nslp_cli::ListenArgs),
    /// Flood a GIST node with Queries, or Queries answered by Confirms (the thesis's attacker,
    /// seed 000 §4.5.1). FOR TEST NETWORKS ONLY: it is a denial-of-service tool; never point it
    /// at a network you do not own. Each Query names a fresh session, flow source and Peer
    /// Identity.
    Attack(super::attack::AttackArgs),
    /// Show state.
    Show {
        /// What to show.
        #[arg(value_enum)]
        what: ShowWhat,
    },
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Transport {
    /// D-mode: UDP port 270, Queries with Router Alert.
    Udp,
    /// C-mode: over a TCP messaging association per peer, shared by every session.
    Tcp,
    /// C-mode over TLS (RFC 5971 §5.7.3): secure transfer, a TLS association per peer.
    Tls,
}

impl Transport {
    fn name(self) -> &'static str {
        match self {
            Transport::Udp => "udp",
            Transport::Tcp => "tcp",
            Transport::Tls => "tls",
        }
    }
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ShowWhat {
    /// Message routing state: per session, each half's state, peer and association.
    Mrs,
    /// Messaging associations (C-mode): peer, state, users.
    Ma,
    /// Messages in and out by type, drops by reason, errors, handshakes, state sizes.
    Counters,
}

/// A command-line duration (`10s`, `500ms`).
pub(crate) fn duration(s: &str) -> Result<Duration, String> {
    s.parse::<pathwise_core::units::TimeSpan>().map(|t| t.0)
}

/// Run the command.
pub fn run(a: Args) -> anyhow::Result<()> {
    match a.cmd {
        Cmd::Show { what } => {
            let verb = match what {
                ShowWhat::Mrs => "gist.show.mrs",
                ShowWhat::Ma => "gist.show.ma",
                ShowWhat::Counters => "gist.show.counters",
            };
            let v = crate::mgmt::request(&a.daemon.socket, "pathwise daemon", verb, json!({}))?;
            if a.daemon.json {
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                print!("{}", render_show(what, &v));
            }
            Ok(())
        }
        Cmd::Ping {
            dest,
            transport,
            sessions: Some(sessions),
            initial_rate,
            steady_rate,
            duration,
            churn,
            ..
        } => load(
            &a.daemon.socket,
            a.daemon.json,
            json!({
                "dest": dest,
                "sessions": sessions,
                "initial_rate": initial_rate,
                "steady_rate": steady_rate,
                "duration_ms": duration.as_millis() as u64,
                "transport": transport.name(),
                "churn_max_interval_us": churn.map(|c| c.as_micros() as u64),
            }),
        ),
        Cmd::Ping {
            dest,
            transport,
            count,
            interval,
            timeout,
            ..
        } => ping(
            &a.daemon.socket,
            a.daemon.json,
            dest,
            transport,
            count,
            interval,
            timeout,
        ),
        Cmd::Attack(args) => super::attack::run(&args, a.daemon.json),
        Cmd::Send(args) => super::nslp_cli::send(&args, a.daemon.json),
        Cmd::Listen(args) => super::nslp_cli::listen(&args, a.daemon.json),
        Cmd::NslpPing {
            ipc_socket,
            nslpid,
            record_address,
        } => nslp_ping(&ipc_socket, nslpid, record_address),
    }
}

fn nslp_ping(socket: &std::path::Path, nslpid: u16, record: Option<IpAddr>) -> anyhow::Result<()> {
    use pathwise_gist::nslp::ping::{PingConfig, PingNslp};
    let mut gist = pathwise_gist::ipc::IpcGist::connect(socket, nslpid)
        .map_err(|e| anyhow::anyhow!("{}: {e}", socket.display()))?;
    println!(
        "Ping NSLP {nslpid} registered on {} (node {:?})",
        socket.display(),
        gist.local_addresses()
    );
    let mut ping = PingNslp::new(PingConfig {
        nslpid,
        record_addr: record,
        seed: pathwise_core::rand::random(),
        ..PingConfig::default()
    });
    let e = gist.serve(&mut ping);
    let st = ping.stats();
    println!(
        "connection ended ({e}): forwarded {} answered {} replies forwarded {} malformed {}",
        st.forwarded, st.answered, st.replies_forwarded, st.malformed
    );
    Ok(())
}

fn ping(
    socket: &std::path::Path,
    json_out: bool,
    dest: IpAddr,
    transport: Transport,
    count: u32,
    interval: Duration,
    timeout: Duration,
) -> anyhow::Result<()> {
    let mut session: Option<String> = None;
    let mut replies = Vec::new();
    let mut rtts = Vec::new();
    if !json_out {
        println!("GIST PING {dest} over {}", transport.name());
    }
    for i in 0..count {
        if i > 0 {
            std::thread::sleep(interval);
        }
        let args = json!({
            "dest": dest,
            "session": session,
            "transport": transport.name(),
            "timeout_ms": timeout.as_millis() as u64,
        });
        match crate::mgmt::request(socket, "pathwise daemon", "gist.ping", args) {
            Ok(r) => {
                if session.is_none() {
                    session = r["session"].as_str().map(str::to_string);
                }
                let rtt = r["rtt_ms"].as_f64().unwrap_or(f64::NAN);
                rtts.push(rtt);
                if !json_out {
                    let path: Vec<&str> = r["path"]
                        .as_array()
                        .map(|p| p.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    println!(
                        "reply from {dest}: seq={} rtt={rtt:.3} ms path={}",
                        r["seq"],
                        path.join(" > ")
                    );
                }
                replies.push(r);
            }
            Err(e) => {
                if !json_out {
                    println!("ping {}: {e}", i + 1);
                }
                replies.push(json!({ "error": e.to_string() }));
            }
        }
    }
    let received = rtts.len();
    let summary = json!({
        "sent": count,
        "received": received,
        "loss_pct": if count == 0 { 0.0 } else { 100.0 * f64::from(count - received as u32) / f64::from(count) },
        "rtt_min_ms": rtts.iter().copied().reduce(f64::min),
        "rtt_avg_ms": (received > 0).then(|| rtts.iter().sum::<f64>() / received as f64),
        "rtt_max_ms": rtts.iter().copied().reduce(f64::max),
    });
    if json_out {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({ "replies": replies, "summary": summary }))?
        );
    } else {
        println!(
            "--- {dest} GIST ping: {count} sent, {received} received{}",
            match (
                summary["rtt_min_ms"].as_f64(),
                summary["rtt_avg_ms"].as_f64(),
                summary["rtt_max_ms"].as_f64()
            ) {
                (Some(a), Some(b), Some(c)) => format!(", rtt min/avg/max {a:.3}/{b:.3}/{c:.3} ms"),
                _ => String::new(),
            }
        );
    }
    if received == 0 && count > 0 {
        anyhow::bail!("no reply from {dest}");
    }
    Ok(())
}

/// The load client: start the run in the daemon, poll for its result.
fn load(socket: &std::path::Path, json_out: bool, args: Value) -> anyhow::Result<()> {
    let started = crate::mgmt::request(socket, "pathwise daemon", "gist.load.start", args.clone())?;
    if !json_out {
        println!(
            "GIST load to {} over {}: {} sessions at {}/s, then {}/s for {} ms (run {})",
            args["dest"].as_str().unwrap_or("?"),
            args["transport"].as_str().unwrap_or("?"),
            args["sessions"],
            args["initial_rate"],
            args["steady_rate"],
            args["duration_ms"],
            started["id"]
        );
    }
    let r = loop {
        std::thread::sleep(Duration::from_millis(250));
        let r = crate::mgmt::request(socket, "pathwise daemon", "gist.load.result", json!({}))?;
        if r["done"].as_bool() == Some(true) {
            break r;
        }
    };
    if json_out {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(());
    }
    println!(
        "{} sent, {} setup replies, {} steady replies, {} lost, {} failed, {:.1} s",
        r["sent"],
        r["setup_replies"],
        r["steady_replies"],
        r["lost"],
        r["failed"],
        r["elapsed_s"].as_f64().unwrap_or(0.0)
    );
    for (name, key) in [("session setup", "setup_ms"), ("rtt", "rtt_ms")] {
        let d = &r[key];
        if d["count"] == 0 {
            println!("{name:<14} no replies");
            continue;
        }
        let f = |k: &str| d[k].as_f64().unwrap_or(f64::NAN);
        println!(
            "{name:<14} ms: min {:.3}  median {:.3}  p90 {:.3}  p99 {:.3}  max {:.3}  ({} replies)",
            f("min"),
            f("median"),
            f("p90"),
            f("p99"),
            f("max"),
            d["count"]
        );
    }
    let c = &r["churn"];
    if c.is_object() {
        let f = |k: &str| c[k].as_f64().unwrap_or(f64::NAN);
        println!(
            "churn          {} opened, {} ended ({:.1}/s, {:.1}/s); sessions {}–{}; lifetime {:.2} s (n·max/2 = {:.2} s)",
            c["sessions_opened"],
            c["sessions_ended"],
            f("setups_per_s"),
            f("teardowns_per_s"),
            c["min_sessions"],
            c["max_sessions"],
            f("avg_lifetime_s"),
            f("implied_lifetime_s"),
        );
    }
    Ok(())
}

fn render_show(what: ShowWhat, v: &Value) -> String {
    let mut out = String::new();
    match what {
        ShowWhat::Mrs => {
            let rows = v.as_array().cloned().unwrap_or_default();
            out += &format!(
                "{:<32} {:>6} {:<30} {:<34} {:<34}\n",
                "session", "nslpid", "flow", "downstream", "upstream"
            );
            let half = |h: &Value| {
                if h.is_null() {
                    "-".to_string()
                } else {
                    format!(
                        "{} {}{}",
                        h["state"].as_str().unwrap_or("?"),
                        h["peer"].as_str().unwrap_or("-"),
                        if h["ma"].is_null() { "" } else { " (MA)" }
                    )
                }
            };
            for r in &rows {
                out += &format!(
                    "{:<32} {:>6} {:<30} {:<34} {:<34}\n",
                    r["session"].as_str().unwrap_or(""),
                    r["nslpid"],
                    format!(
                        "{} > {}",
                        r["source"].as_str().unwrap_or("?"),
                        r["destination"].as_str().unwrap_or("?")
                    ),
                    half(&r["downstream"]),
                    half(&r["upstream"])
                );
            }
            out += &format!("{} routing states\n", rows.len());
        }
        ShowWhat::Ma => {
            out += &format!("{} messaging associations\n", v["count"]);
            for m in v["associations"].as_array().into_iter().flatten() {
                out += &format!(
                    "  {:<40} {:<4} {:<12} {} users\n",
                    m["peer"].as_str().unwrap_or(""),
                    m["transport"].as_str().unwrap_or("tcp"),
                    m["state"].as_str().unwrap_or(""),
                    m["users"]
                );
            }
        }
        ShowWhat::Counters => {
            out += &format!("{}\n", serde_json::to_string_pretty(v).unwrap_or_default());
        }
    }
    out
}
