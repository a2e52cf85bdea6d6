//! `pathwise qos …`: the QoS NSLP (RFC 5974) on a running daemon (`[qos_nslp]`) over its
//! management socket — reserve along a path, release, query what the path could give, show.

use clap::Subcommand;
use pathwise_core::units::Bandwidth;
use serde_json::{Value, json};
use std::net::IpAddr;

/// Arguments of `pathwise qos`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    daemon: crate::cli::DaemonArgs,
    #[command(subcommand)]
    cmd: Cmd,
}

/// The flow and its traffic.
#[derive(Debug, Clone, clap::Args)]
struct FlowOpts {
    /// Destination of the flow (this node is its source).
    dest: IpAddr,
    /// Rate to reserve (<TMOD-1> r), e.g. 4Mbit.
    #[arg(long)]
    rate: Bandwidth,
    #[command(flatten)]
    traffic: TrafficOpts,
}

/// The traffic of a flow besides its rate, and what classifies it besides its addresses.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct TrafficOpts {
    /// Token bucket depth b, bytes.
    #[arg(long, default_value_t = 15_000)]
    bucket: u32,
    /// Peak rate p (default: unspecified, infinity).
    #[arg(long)]
    peak: Option<Bandwidth>,
    /// Largest packet (MPS), bytes.
    #[arg(long, default_value_t = 1500)]
    max_packet: u32,
    /// IP protocol of the flow (classifies it with the addresses).
    #[arg(long)]
    protocol: Option<u8>,
    /// Destination port of the flow (with --protocol: RFC 5971 A.3.1.1 carries ports only
    /// with the protocol).
    #[arg(long, requires = "protocol")]
    dport: Option<u16>,
    /// Source port of the flow (with --protocol).
    #[arg(long, requires = "protocol")]
    sport: Option<u16>,
}

impl FlowOpts {
    fn args(&self) -> serde_json::Map<String, Value> {
        self.traffic.args(self.dest, self.rate)
    }
}

impl TrafficOpts {
    /// The arguments of `qos.reserve` for a flow to `dest` at `rate`.
    pub(crate) fn args(&self, dest: IpAddr, rate: Bandwidth) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        m.insert("destination".into(), json!(dest));
        m.insert("rate_bps".into(), json!(rate.0));
        m.insert("bucket".into(), json!(self.bucket));
        m.insert("max_packet".into(), json!(self.max_packet));
        for (k, v) in [
            ("peak_bps", self.peak.map(|p| json!(p.0))),
            ("protocol", self.protocol.map(|p| json!(p))),
            ("dport", self.dport.map(|p| json!(p))),
            ("sport", self.sport.map(|p| json!(p))),
        ] {
            if let Some(v) = v {
                m.insert(k.into(), v);
            }
        }
        m
    }
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Reserve for a flow from this node to DEST (RFC 5974 §4.1, sender-initiated): waits for
    /// the QNR's RESPONSE and prints what was reserved, or why it failed (INFO-SPEC). With
    /// --receiver-initiated (§4.3) a QUERY asks DEST to reserve back towards this node.
    Reserve {
        #[command(flatten)]
        flow: FlowOpts,
        /// The least acceptable rate (Minimum QoS): hops short of the rate reserve this much.
        #[arg(long)]
        minimum: Option<Bandwidth>,
        /// The largest acceptable path latency, microseconds (Minimum QoS).
        #[arg(long)]
        max_latency_us: Option<u32>,
        /// Receiver-initiated: DEST becomes the QNI and sends the RESERVE.
        #[arg(long, conflicts_with = "count")]
        receiver_initiated: bool,
        /// Reserve for N flows at once, one per destination port from --dport up (at most
        /// 1000): waits until every one is answered and prints how many were reserved.
        #[arg(long, value_name = "N", requires = "dport", value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::qos::verbs::MAX_COUNT)))]
        count: Option<u32>,
        /// Bind the reservation to another session (BOUND-SESSION-ID, RFC 5974 §5.1.3.4):
        /// SESSION as `reserve` printed it, CODE one of tunnel, bidirectional, aggregate,
        /// dependent (the default) or a number 1–255. With `dependent`, every node holding both
        /// sends this node a NOTIFY when SESSION goes (§5.4.1), shown by `qos show`. Repeat to
        /// bind to several sessions.
        #[arg(long, value_name = "SESSION[:CODE]", value_parser = bound_session)]
        bound_to: Vec<(String, u8)>,
    },
    /// Tear down a reservation this node initiated (a RESERVE with TEAR).
    Release {
        /// The session, as `reserve` printed it (32 hex digits).
        session: String,
    },
    /// Ask the path what it could give (a QUERY; RFC 5974 §4.2): QoS Available and the path
    /// latency, reserving nothing.
    Query {
        #[command(flatten)]
        flow: FlowOpts,
    },
    /// Every session with QoS NSLP state on this node, and the counters.
    Show,
    /// Run the QoS NSLP as its own process over the daemon's IPC NSLP API (`[gist]
    /// ipc_socket`) on a node whose daemon has no `[qos_nslp]`: it registers NSLPID 1, admits
    /// through its own traffic control on the interfaces given, makes the reservations asked
    /// for, prints every outcome, refreshes until SIGINT or SIGTERM, then releases them.
    Nslp(super::ipc::NslpArgs),
}

/// Run the command.
pub fn run(a: Args) -> anyhow::Result<()> {
    let (verb, args) = match &a.cmd {
        Cmd::Reserve {
            flow,
            minimum,
            max_latency_us,
            receiver_initiated,
            count,
            bound_to,
        } => {
            let mut m = flow.args();
            if !bound_to.is_empty() {
                let bound: Vec<Value> = bound_to
                    .iter()
                    .map(|(session, code)| json!({ "session": session, "code": code }))
                    .collect();
                m.insert("bound".into(), json!(bound));
            }
            m.insert("receiver_initiated".into(), json!(receiver_initiated));
            if let Some(n) = count {
                m.insert("count".into(), json!(n));
            }
            if let Some(b) = minimum {
                m.insert("minimum_bps".into(), json!(b.0));
            }
            if let Some(l) = max_latency_us {
                m.insert("max_latency_us".into(), json!(l));
            }
            ("qos.reserve", Value::Object(m))
        }
        Cmd::Release { session } => ("qos.release", json!({ "session": session })),
        Cmd::Query { flow } => ("qos.query", Value::Object(flow.args())),
        Cmd::Show => ("qos.show", json!({})),
        Cmd::Nslp(n) => return super::ipc::run(n, a.daemon.json),
    };
    let v = crate::mgmt::request(&a.daemon.socket, "pathwise daemon", verb, args)?;
    if a.daemon.json {
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", render(&a.cmd, &v));
    }
    if v["outcome"] == "failed" {
        anyhow::bail!("the reservation failed");
    }
    Ok(())
}

/// `SESSION[:CODE]` of `--bound-to`: 32 hex digits, and a Binding Code by its name in RFC
/// 5974 §5.1.3.4 or its number (0 is reserved).
fn bound_session(s: &str) -> Result<(String, u8), String> {
    let (sid, code) = s.split_once(':').unwrap_or((s, "dependent"));
    if sid.len() != 32 || !sid.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("{sid:?} is not a session (32 hex digits)"));
    }
    let code = match code {
        "tunnel" => 0x01,
        "bidirectional" => 0x02,
        "aggregate" => 0x03,
        "dependent" => 0x04,
        n => match n.parse::<u8>() {
            Ok(c) if c > 0 => c,
            _ => {
                return Err(format!(
                    "{n:?}: tunnel, bidirectional, aggregate, dependent or 1-255"
                ));
            }
        },
    };
    Ok((sid.to_ascii_lowercase(), code))
}

fn rate(v: &Value) -> String {
    v.as_u64()
        .map_or_else(|| "-".into(), |b| Bandwidth(b).to_string())
}

/// An INFO-SPEC as `info_json` gave it: `CLASS code 0xNN[ from ESI]`.
fn info_spec(i: &Value) -> String {
    format!(
        "{} code {:#04x}{}",
        i["class"].as_str().unwrap_or("?"),
        i["code"].as_u64().unwrap_or(0),
        i["source"]
            .as_str()
            .map(|s| format!(" from {s}"))
            .unwrap_or_default()
    )
}

fn render(cmd: &Cmd, v: &Value) -> String {
    let mut out = String::new();
    match cmd {
        Cmd::Show => {
            let sessions = v["sessions"].as_array().cloned().unwrap_or_default();
            for s in &sessions {
                out += &format!(
                    "{} {} > {}  {} {}  {} on {}  rsn {}/{}\n",
                    s["session"].as_str().unwrap_or("?"),
                    s["source"].as_str().unwrap_or("?"),
                    s["destination"].as_str().unwrap_or("?"),
                    s["role"].as_str().unwrap_or("?"),
                    s["initiation"].as_str().unwrap_or("?"),
                    rate(&s["rate_bps"]),
                    s["interface"].as_str().unwrap_or("-"),
                    s["rsn_in"],
                    s["rsn_out"],
                );
            }
            out += &format!("{} sessions\n", sessions.len());
            for n in v["notifications"].as_array().into_iter().flatten() {
                out += &format!(
                    "NOTIFY {}: {}\n",
                    n["session"].as_str().unwrap_or("?"),
                    info_spec(&n["info"])
                );
            }
            out += &format!(
                "counters: {}\n",
                serde_json::to_string(&v["counters"]).unwrap_or_default()
            );
        }
        _ if v.get("count").is_some() => {
            out += &format!(
                "{} reservations: {} reserved, {} failed, {} refused here, {} pending\n",
                v["count"], v["reserved"], v["failed"], v["refused"], v["pending"]
            );
            if let Some(e) = v["error"].as_str() {
                out += &format!("  first refusal: {e}\n");
            }
        }
        _ => {
            out += &format!(
                "session {}: {}\n",
                v["session"].as_str().unwrap_or("?"),
                v["outcome"].as_str().unwrap_or("?")
            );
            if let Some(i) = v.get("info").filter(|i| !i.is_null()) {
                out += &format!("  INFO-SPEC {}\n", info_spec(i));
            }
            for (name, o) in v["qspec"].as_object().into_iter().flatten() {
                out += &format!(
                    "  {name}: {}{}{}\n",
                    rate(&o["rate_bps"]),
                    o["path_latency_us"]
                        .as_u64()
                        .map(|l| format!("  path latency {l} us"))
                        .unwrap_or_default(),
                    if o["error"] == true { "  (E)" } else { "" }
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::bound_session;

    #[test]
    fn bound_to_takes_a_session_and_a_binding_code() {
        let sid = "00112233445566778899AABBCCDDEEFF";
        let low = sid.to_ascii_lowercase();
        assert_eq!(bound_session(sid), Ok((low.clone(), 4)));
        assert_eq!(
            bound_session(&format!("{sid}:tunnel")),
            Ok((low.clone(), 1))
        );
        assert_eq!(
            bound_session(&format!("{sid}:aggregate")),
            Ok((low.clone(), 3))
        );
        assert_eq!(bound_session(&format!("{sid}:200")), Ok((low, 200)));
        assert!(bound_session(&format!("{sid}:0")).is_err());
        assert!(bound_session(&format!("{sid}:linked")).is_err());
        assert!(bound_session("0011").is_err());
    }
}
