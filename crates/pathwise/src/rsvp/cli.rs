//! `pathwise rsvp …`: talk to a running daemon's RSVP service over its management socket.

use crate::rsvp::te::{
    DEFAULT_HOLD_PRIORITY, DEFAULT_SETUP_PRIORITY, GmplsReq, LspName, LspReq, hop_text, parse_hop,
};
use crate::rsvp::verbs::{ReserveReq, SenderArg, SenderReq, SessionArg, TrafficArg};
use clap::Subcommand;
use pathwise_core::units::Bandwidth;
use serde_json::{Value, json};
use std::net::IpAddr;

/// Arguments of `pathwise rsvp`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    daemon: crate::cli::DaemonArgs,
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
    /// The request is kept until released: made before the sender's Path arrives it waits for
    /// it, and it comes back after a PathTear (RFC 2205 §3.11.1); the answer says which.
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
    /// Withdraw this receiver's reservation, installed or still waiting for path state.
    Release {
        #[command(flatten)]
        session: SessionOpts,
    },
    /// RSVP-TE LSPs (RFC 3209) this node heads: set up, re-route, tear down.
    Lsp {
        #[command(subcommand)]
        op: LspOp,
    },
    /// Wait until this node has path state for a session (`--for path`) or a reservation for
    /// it from a next hop (`--for resv`); fails if it does not come within the timeout. The
    /// daemon answers when its state changes: nothing is polled.
    Wait {
        #[command(flatten)]
        session: SessionOpts,
        /// What to wait for.
        #[arg(long = "for", value_enum)]
        until: crate::rsvp::wait::Until,
        /// How long to wait at most (250ms, 30s, 2m …).
        #[arg(long, default_value = "5s", value_parser = crate::bench::soak::parse_duration)]
        timeout: std::time::Duration,
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

#[derive(Debug, Subcommand)]
enum LspOp {
    /// Set up an LSP from this node (the head end), or change one: a new route, bandwidth or
    /// priority is signalled make-before-break.
    Add {
        /// Its name (SESSION_ATTRIBUTE session name).
        name: String,
        /// The tunnel end point (the egress).
        #[arg(long)]
        to: IpAddr,
        /// This node's address to start from (default: the interface towards --to).
        #[arg(long)]
        from: Option<IpAddr>,
        /// Explicit route, first hop first: ADDR is a strict hop, ~ADDR a loose one, each with
        /// an optional /PREFIX-LENGTH (e.g. 10.0.1.2,~10.0.4.2).
        #[arg(long, value_delimiter = ',', value_parser = hop)]
        ero: Vec<String>,
        /// Bandwidth to reserve along the LSP, e.g. 10Mbit.
        #[arg(long, default_value = "0")]
        bandwidth: Bandwidth,
        /// Setup priority, 0 (highest) to 7.
        #[arg(long, default_value_t = DEFAULT_SETUP_PRIORITY, value_parser = clap::value_parser!(u8).range(0..=7))]
        setup_priority: u8,
        /// Holding priority, 0 (highest) to 7; not numerically above the setup priority.
        #[arg(long, default_value_t = DEFAULT_HOLD_PRIORITY, value_parser = clap::value_parser!(u8).range(0..=7))]
        hold_priority: u8,
        /// Do not ask for the route and the labels to be recorded (RECORD_ROUTE).
        #[arg(long)]
        no_record_route: bool,
        /// Signal a GMPLS LSP (RFC 3473): Generalized LABEL_REQUEST and LABELs, as GMPLS nodes
        /// such as KOM/DRAGON expect.
        #[arg(long)]
        gmpls: bool,
        /// GMPLS LSP Encoding Type (RFC 3471 §3.1.1; 1 = Packet, the default).
        #[arg(long, requires = "gmpls")]
        encoding: Option<u8>,
        /// GMPLS Switching Type (1 to 4 = PSC-1 to PSC-4; default 1).
        #[arg(long, requires = "gmpls")]
        switching: Option<u8>,
        /// GMPLS G-PID (default: the Ethertype of the end point's family, 0x0800 or 0x86dd).
        #[arg(long, requires = "gmpls", value_parser = gpid)]
        gpid: Option<u16>,
    },
    /// Tear an LSP down (PathTear) and forget it.
    Del {
        /// Its name.
        name: String,
    },
}

/// A G-PID, decimal or 0x-hexadecimal (Ethertypes are usually written in hex).
fn gpid(s: &str) -> Result<u16, String> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u16::from_str_radix(h, 16),
        None => s.parse(),
    }
    .map_err(|_| format!("{s:?} is not a G-PID (0 to 65535, or 0x0000 to 0xffff)"))
}

/// One explicit-route hop, checked here so a typo never reaches the daemon.
fn hop(s: &str) -> Result<String, String> {
    parse_hop(s).map(|h| hop_text(&h))
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ShowWhat {
    /// Every session with its path and reservation state.
    Sessions,
    /// Path state only.
    Path,
    /// Reservation state only.
    Resv,
    /// This node's receiver requests (`rsvp reserve`): installed, or waiting for path state.
    Requests,
    /// RSVP interfaces and what is reserved on them.
    Interfaces,
    /// Message, drop and state counters.
    Counters,
    /// The latest upcalls (path, resv, errors, confirmations).
    Events,
    /// Hello neighbours (RFC 3209 §5): address, interface, instance, when last heard.
    Neighbors,
    /// RSVP-TE LSPs at this node: role, status (a failure in words), labels in and out, next
    /// hop, explicit and recorded route.
    Lsp,
    /// The label-forwarding table: incoming labels (swap or pop, next hop) and ingress bindings.
    Labels,
}

/// Run one verb against the daemon and print the answer.
pub fn run(a: Args) -> anyhow::Result<()> {
    if let Cmd::Wait {
        session,
        until,
        timeout,
    } = &a.cmd
    {
        let answer = wait(&a.daemon.socket, session.arg(), *until, *timeout)?;
        if a.daemon.json {
            println!("{}", serde_json::to_string_pretty(&answer)?);
        } else {
            print!("{}", render(&answer));
        }
        return Ok(());
    }
    let text: fn(&Value) -> String = match a.cmd {
        Cmd::Show {
            what: ShowWhat::Lsp,
        } => render_lsps,
        Cmd::Show {
            what: ShowWhat::Labels,
        } => render_labels,
        Cmd::Show {
            what: ShowWhat::Requests,
        } => render_requests,
        _ => render,
    };
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
        Cmd::Wait { .. } => unreachable!("answered above"),
        Cmd::Lsp {
            op:
                LspOp::Add {
                    name,
                    to,
                    from,
                    ero,
                    bandwidth,
                    setup_priority,
                    hold_priority,
                    no_record_route,
                    gmpls,
                    encoding,
                    switching,
                    gpid,
                },
        } => (
            "rsvp.lsp.add",
            serde_json::to_value(LspReq {
                name,
                to,
                from,
                ero,
                bandwidth_bps: bandwidth.0,
                setup_priority,
                hold_priority,
                record_route: !no_record_route,
                gmpls: gmpls.then_some(GmplsReq {
                    encoding,
                    switching,
                    gpid,
                }),
            })?,
        ),
        Cmd::Lsp {
            op: LspOp::Del { name },
        } => ("rsvp.lsp.del", serde_json::to_value(LspName { name })?),
        Cmd::Show { what } => match what {
            ShowWhat::Sessions | ShowWhat::Path | ShowWhat::Resv => {
                ("rsvp.show.sessions", json!({}))
            }
            ShowWhat::Requests => ("rsvp.show.requests", json!({})),
            ShowWhat::Interfaces => ("rsvp.show.interfaces", json!({})),
            ShowWhat::Counters => ("rsvp.show.counters", json!({})),
            ShowWhat::Events => ("rsvp.show.events", json!({})),
            ShowWhat::Neighbors => ("rsvp.show.neighbors", json!({})),
            ShowWhat::Lsp => ("rsvp.show.lsp", json!({})),
            ShowWhat::Labels => ("rsvp.show.labels", json!({})),
        },
    };
    let answer = crate::mgmt::request(&a.daemon.socket, "pathwise daemon", verb, args)?;
    let answer = match keep {
        Some(keep) => project(answer, keep),
        None => answer,
    };
    if a.daemon.json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
    } else {
        print!("{}", text(&answer));
    }
    Ok(())
}

/// `rsvp wait`: one `rsvp.wait` request per [`MAX_WAIT`](crate::rsvp::wait::MAX_WAIT) (the
/// longest the daemon takes one) until the state comes or `timeout` has passed.
fn wait(
    socket: &std::path::Path,
    session: SessionArg,
    until: crate::rsvp::wait::Until,
    timeout: std::time::Duration,
) -> anyhow::Result<Value> {
    use crate::rsvp::wait::{MAX_WAIT, WaitReq};
    let mut client = crate::mgmt::Client::connect(socket, "pathwise daemon")?;
    let end = std::time::Instant::now() + timeout;
    loop {
        let left = end.saturating_duration_since(std::time::Instant::now());
        let this = left.min(MAX_WAIT);
        let req = WaitReq {
            session,
            until,
            timeout_ms: Some(this.as_millis() as u64),
        };
        match client.request("rsvp.wait", req.args()) {
            Err(e) if this < left && crate::rsvp::wait::is_expiry(&e.to_string()) => continue,
            Err(e) if crate::rsvp::wait::is_expiry(&e.to_string()) => anyhow::bail!(
                "no {} state for session {}:{} proto {} within {} ms",
                until.name(),
                session.dest,
                session.port,
                session.protocol,
                timeout.as_millis()
            ),
            other => return other,
        }
    }
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

fn or_dash(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn next_hop_text(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        h => format!("{} ({})", or_dash(&h["address"]), or_dash(&h["interface"])),
    }
}

fn bandwidth_text(v: &Value) -> String {
    v.as_u64()
        .map_or_else(|| "-".into(), |b| Bandwidth(b).to_string())
}

/// `show lsp` as text: one block per LSP.
fn render_lsps(v: &Value) -> String {
    use std::fmt::Write as _;
    let Some(lsps) = v.as_array() else {
        return render(v);
    };
    if lsps.is_empty() {
        return "no LSPs\n".into();
    }
    let mut out = String::new();
    for l in lsps {
        let _ = writeln!(
            out,
            "{}  {}  {}  {} → {}  tunnel {} lsp {}  {}  priorities {}/{}",
            or_dash(&l["name"]),
            or_dash(&l["role"]),
            or_dash(&l["status"]),
            or_dash(&l["from"]),
            or_dash(&l["to"]),
            or_dash(&l["tunnel_id"]),
            or_dash(&l["lsp_id"]),
            bandwidth_text(&l["bandwidth_bps"]),
            or_dash(&l["setup_priority"]),
            or_dash(&l["hold_priority"]),
        );
        if let Some(g) = l["gmpls"].as_object() {
            let _ = writeln!(
                out,
                "  GMPLS (RFC 3473): encoding {}, switching {}, G-PID {:#06x}",
                or_dash(&g["encoding"]),
                or_dash(&g["switching"]),
                l["l3pid"].as_u64().unwrap_or(0),
            );
        }
        if !l["error"].is_null() {
            let e = &l["error"];
            let _ = writeln!(
                out,
                "  error: {} (code {}, value {}) from {}",
                or_dash(&e["meaning"]),
                or_dash(&e["code"]),
                or_dash(&e["value"]),
                or_dash(&e["node"]),
            );
        }
        let _ = writeln!(
            out,
            "  labels: in {}, out {} via {}",
            or_dash(&l["in_label"]),
            or_dash(&l["out_label"]),
            next_hop_text(&l["next_hop"]),
        );
        if let Some(ero) = l["ero"].as_array() {
            let hops: Vec<String> = ero.iter().map(or_dash).collect();
            let _ = writeln!(out, "  explicit route: {}", hops.join(" "));
        }
        if let Some(rro) = l["record_route"].as_array() {
            let hops: Vec<String> = rro
                .iter()
                .map(|h| match (&h["address"], &h["label"]) {
                    (Value::Null, l) => format!("label {}", or_dash(l)),
                    (a, Value::Null) => or_dash(a),
                    (a, l) => format!("{} (label {})", or_dash(a), or_dash(l)),
                })
                .collect();
            let _ = writeln!(out, "  recorded route: {}", hops.join(", "));
        }
    }
    out
}

/// `show requests` as text: one line per request, then the senders it waits for.
fn render_requests(v: &Value) -> String {
    use std::fmt::Write as _;
    let Some(requests) = v.as_array() else {
        return render(v);
    };
    if requests.is_empty() {
        return "no reservation requests\n".into();
    }
    let list = |v: &Value| {
        v.as_array()
            .map(|a| a.iter().map(or_dash).collect::<Vec<_>>().join(", "))
            .unwrap_or_default()
    };
    let mut out = String::new();
    for r in requests {
        let _ = write!(
            out,
            "{}  {}  {} kbit/s  {}",
            or_dash(&r["session"]),
            or_dash(&r["style"]),
            or_dash(&r["kbps"]),
            or_dash(&r["status"]),
        );
        for (key, what) in [
            ("installed", "installed for"),
            ("waiting", "waiting for path state of"),
            ("refused", "refused for"),
        ] {
            let senders = list(&r[key]);
            if !senders.is_empty() {
                let _ = write!(out, "; {what} {senders}");
            }
        }
        out.push('\n');
    }
    out
}

/// `show labels` as text: the LFIB, then the ingress bindings.
fn render_labels(v: &Value) -> String {
    use std::fmt::Write as _;
    let (Some(entries), Some(ingress)) = (v["entries"].as_array(), v["ingress"].as_array()) else {
        return render(v);
    };
    let mut out = String::new();
    let _ = writeln!(out, "{:<9} {:<12} next hop", "in label", "operation");
    for e in entries {
        let op = match e["op"].as_str() {
            Some("swap") => format!("swap {}", or_dash(&e["out_label"])),
            other => other.unwrap_or("-").to_string(),
        };
        let _ = writeln!(
            out,
            "{:<9} {:<12} {}",
            or_dash(&e["in_label"]),
            op,
            next_hop_text(&e["next_hop"])
        );
    }
    if entries.is_empty() {
        let _ = writeln!(out, "(no incoming labels)");
    }
    for f in ingress {
        let push = match &f["push"] {
            Value::Null => "no label (implicit null)".to_string(),
            l => format!("push {l}"),
        };
        let _ = writeln!(
            out,
            "ingress: to {} tunnel {}: {push} via {}",
            or_dash(&f["to"]),
            or_dash(&f["tunnel_id"]),
            next_hop_text(&f["next_hop"])
        );
    }
    let _ = writeln!(out, "labels in use: {}", or_dash(&v["labels_in_use"]));
    out
}
