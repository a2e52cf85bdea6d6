//! `pathwise qos nslp`: the QoS NSLP (RFC 5974) as its own process over GIST's IPC NSLP API
//! (`pathwise_gist::ipc`), like `pathwise gist nslp-ping` for the Ping NSLP — the same sans-IO
//! engine the daemon runs in process (`[qos_nslp]`), here on a node whose daemon has `[gist]`
//! with an `ipc_socket` and no `[qos_nslp]`.
//!
//! - It admits through its own traffic control (`--traffic-control memory|htb` on the
//!   `--interface`s given), built by the daemon's code ([`DataPlane::build`]).
//! - The link a flow leaves by comes from the kernel's routes (a [`FibMirror`] brought up to
//!   date at each lookup), handed to [`IpcGist::with_outgoing_interface`]: the process runs on
//!   GIST's node, so its routes are GIST's.
//! - Time is this process's own clock, for every call (upcalls carry GIST's time, which
//!   started elsewhere): the engine's refresh and lifetime timers need one time line.
//! - On SIGINT or SIGTERM it releases every reservation it initiated (a RESERVE with TEAR,
//!   RFC 5974 §5.4.1) and every one it is the QNI of, then exits; HTB classes go with it.

use super::cli::TrafficOpts;
use super::verbs::{ReserveArgs, hex, info_json, qspec_json};
use crate::rsvp::config::TrafficControlKind;
use crate::rsvp::service::{DataPlane, TcLink};
use anyhow::Context as _;
use pathwise_core::fib::Fib;
use pathwise_core::io::IfIndex;
use pathwise_core::route::RouteChange;
use pathwise_core::time::Instant;
use pathwise_core::units::Bandwidth;
use pathwise_gist::ipc::{ClientError, IpcGist, OutgoingInterfaceLookup, Upcall};
use pathwise_gist::nslp::Nslp;
use pathwise_net::{FibMirror, NetEvent};
use pathwise_qos_nslp::{NSLPID, QosConfig, QosEvent, QosNslp, Role};
use serde_json::{Value, json};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How long one wait for GIST lasts at most: a signal is noticed within it.
const POLL: Duration = Duration::from_millis(200);

/// Arguments of `pathwise qos nslp`.
#[derive(Debug, clap::Args)]
pub struct NslpArgs {
    /// The daemon's IPC socket (`[gist] ipc_socket`).
    #[arg(long, default_value = "/run/pathwise/gist.sock")]
    ipc_socket: PathBuf,
    /// Where admitted reservations go.
    #[arg(long, value_enum, default_value = "memory")]
    traffic_control: TrafficControlKind,
    /// An interface reservations are admitted on, as NAME:BANDWIDTH[:RESERVABLE] (e.g.
    /// e0:100Mbit:10Mbit; RESERVABLE defaults to BANDWIDTH). A flow leaving by an interface
    /// not given is refused.
    #[arg(long = "interface", value_name = "NAME:BANDWIDTH[:RESERVABLE]", value_parser = link_spec)]
    interfaces: Vec<LinkSpec>,
    /// TCP ports of GIST's messaging associations, kept in HTB's signalling class.
    #[arg(long, default_values_t = [30000u16, 30001])]
    signalling_tcp_port: Vec<u16>,
    /// Reserve for a flow from this node to DEST (repeatable; one reservation each), with the
    /// traffic given by --rate and the options beside it.
    #[arg(long = "reserve", value_name = "DEST", requires = "rate")]
    reserve: Vec<IpAddr>,
    /// Rate to reserve (<TMOD-1> r), e.g. 4Mbit.
    #[arg(long, requires = "reserve")]
    rate: Option<Bandwidth>,
    #[command(flatten)]
    traffic: TrafficOpts,
    /// Receiver-initiated (RFC 5974 §4.3): a QUERY asks each DEST to reserve back towards this
    /// node (DEST is the QNI and releases it).
    #[arg(long, requires = "reserve")]
    receiver_initiated: bool,
    /// The refresh period R (RFC 5974 §5.3.4).
    #[arg(long, default_value = "30s", value_parser = crate::gist::cli::duration)]
    refresh_period: Duration,
}

/// `--interface NAME:BANDWIDTH[:RESERVABLE]`.
#[derive(Clone, Debug)]
struct LinkSpec {
    name: String,
    bandwidth: Bandwidth,
    reservable: Bandwidth,
}

fn link_spec(s: &str) -> Result<LinkSpec, String> {
    let mut parts = s.split(':');
    let name = parts.next().filter(|n| !n.is_empty());
    let bw = parts.next();
    let (Some(name), Some(bw)) = (name, bw) else {
        return Err("NAME:BANDWIDTH[:RESERVABLE], e.g. e0:100Mbit:10Mbit".into());
    };
    let bandwidth: Bandwidth = bw.parse().map_err(|e| format!("{bw:?}: {e}"))?;
    let reservable = match parts.next() {
        Some(r) => r.parse().map_err(|e| format!("{r:?}: {e}"))?,
        None => bandwidth,
    };
    if parts.next().is_some() {
        return Err(format!("{s:?}: at most NAME:BANDWIDTH:RESERVABLE"));
    }
    if reservable.0 > bandwidth.0 {
        return Err(format!("{s:?}: more reservable than the link's bandwidth"));
    }
    Ok(LinkSpec {
        name: name.to_string(),
        bandwidth,
        reservable,
    })
}

/// The kernel's main-table routes as an outgoing-interface lookup: a netlink mirror, its
/// pending changes applied before each lookup (a lookup is per QoS NSLP message, not per
/// packet).
fn kernel_routes() -> anyhow::Result<OutgoingInterfaceLookup> {
    let mut mirror = FibMirror::open().context("opening rtnetlink")?;
    let mut fib: Fib<IfIndex> = Fib::new();
    Ok(Box::new(move |destination| {
        match mirror.drain() {
            Ok(events) => {
                for e in events {
                    match e {
                        NetEvent::Route(RouteChange::Add(r)) => {
                            fib.insert(r.prefix, r.ifindex);
                        }
                        NetEvent::Route(RouteChange::Remove(p)) => {
                            fib.remove(&p);
                        }
                        _ => {}
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "reading the kernel's routes"),
        }
        fib.lookup(destination).map(|(_, i)| *i)
    }))
}

/// One QoS NSLP event as a JSON object.
fn event_json(e: &QosEvent) -> Value {
    let (event, sid) = match e {
        QosEvent::Reserved { session_id, .. } => ("reserved", session_id),
        QosEvent::Failed { session_id, .. } => ("failed", session_id),
        QosEvent::Installed { session_id } => ("installed", session_id),
        QosEvent::Torn { session_id } => ("torn", session_id),
        QosEvent::Expired { session_id } => ("expired", session_id),
        QosEvent::QueryAnswered { session_id, .. } => ("answered", session_id),
        QosEvent::NoResponse { session_id } => ("no_response", session_id),
        QosEvent::Notified { session_id, .. } => ("notified", session_id),
    };
    let mut v = json!({ "event": event, "session": hex(sid) });
    match e {
        QosEvent::Reserved { qspec, .. } => {
            v["qspec"] = json!(qspec.as_ref().map(qspec_json));
        }
        QosEvent::Failed { info, qspec, .. } | QosEvent::QueryAnswered { info, qspec, .. } => {
            v["info"] = info_json(info);
            v["qspec"] = json!(qspec.as_ref().map(qspec_json));
        }
        QosEvent::Notified { info, .. } => v["info"] = info_json(info),
        _ => {}
    }
    v
}

fn event_text(v: &Value) -> String {
    let mut s = format!(
        "session {}: {}",
        v["session"].as_str().unwrap_or("-"),
        v["event"].as_str().unwrap_or("?")
    );
    if let Some(r) = v["qspec"]["reserved"]["rate_bps"].as_u64() {
        s += &format!(" {}", Bandwidth(r));
    }
    if let Some(i) = v.get("info").filter(|i| !i.is_null()) {
        s += &format!(
            " (INFO-SPEC {} code {:#04x})",
            i["class"].as_str().unwrap_or("?"),
            i["code"].as_u64().unwrap_or(0)
        );
    }
    if let Some(e) = v["error"].as_str() {
        s += &format!(": {e}");
    }
    s
}

fn emit(json_out: bool, v: &Value) {
    if json_out {
        println!("{v}");
    } else {
        println!("{}", event_text(v));
    }
}

type Qos = QosNslp<DataPlane>;

/// Hand one upcall to the engine at `now` (this process's time), answering a
/// Routing-State-Check with its decision (RFC 5971 B.2).
fn serve(q: &mut Qos, gist: &mut IpcGist, now: Instant, u: Upcall) -> Result<(), ClientError> {
    match u {
        Upcall::Recv { upcall, msg, .. } => {
            let d = q.recv_message(now, gist, msg);
            if upcall != 0 {
                gist.decide(upcall, d)?;
            }
        }
        Upcall::Status { status, .. } => q.message_status(now, gist, status),
        Upcall::Notify { notification, .. } => q.network_notification(now, gist, notification),
    }
    Ok(())
}

/// Print the engine's events; whether one of them is a failure of a reservation of ours.
fn report(q: &mut Qos, json_out: bool, ours: &[pathwise_gist::wire::SessionId]) -> bool {
    let mut failed = false;
    while let Some(e) = q.poll_event() {
        if let QosEvent::Failed { session_id, .. } | QosEvent::NoResponse { session_id } = &e {
            failed |= ours.contains(session_id);
        }
        emit(json_out, &event_json(&e));
    }
    failed
}

/// `pathwise qos nslp`.
pub fn run(a: &NslpArgs, json_out: bool) -> anyhow::Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    let kernel = pathwise_net::interfaces().context("listing interfaces")?;
    let mut links = Vec::new();
    for l in &a.interfaces {
        let k = kernel
            .iter()
            .find(|k| k.name == l.name)
            .ok_or_else(|| anyhow::anyhow!("--interface: no interface {:?} here", l.name))?;
        links.push(TcLink {
            ifindex: k.ifindex,
            name: k.name.clone(),
            bandwidth_bps: l.bandwidth.0,
            reservable_bps: l.reservable.0,
            mtu: k.mtu,
        });
    }
    let tc = DataPlane::build(a.traffic_control, &links, &a.signalling_tcp_port);
    let mut q = Qos::new(
        QosConfig {
            refresh_period: a.refresh_period,
            seed: pathwise_core::rand::random(),
            ..QosConfig::default()
        },
        tc,
    );
    let mut gist = IpcGist::connect(&a.ipc_socket, NSLPID)
        .map_err(|e| anyhow::anyhow!("{}: {e}", a.ipc_socket.display()))?
        .with_outgoing_interface(kernel_routes()?);
    emit(
        json_out,
        &json!({
            "event": "registered",
            "nslpid": NSLPID,
            "socket": a.ipc_socket.display().to_string(),
            "local": gist.local_addresses().iter().map(|x| x.to_string()).collect::<Vec<_>>(),
            "interfaces": links.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(),
        }),
    );
    let epoch = std::time::Instant::now();
    let clock = || Instant::ZERO + epoch.elapsed();

    let mut ours = Vec::new();
    let mut failed = false;
    for &dest in &a.reserve {
        let Some(rate) = a.rate else { break };
        let mut m = a.traffic.args(dest, rate);
        m.insert("receiver_initiated".into(), json!(a.receiver_initiated));
        let args: ReserveArgs = serde_json::from_value(Value::Object(m))?;
        let source = crate::gist::service::source_towards(dest)
            .map_err(|e| anyhow::anyhow!("no route to {dest}: {e}"))?;
        let req = args.request(source).map_err(anyhow::Error::msg)?;
        let now = clock();
        let started = if a.receiver_initiated {
            q.reserve_receiver_initiated(&mut gist, now, &req)
        } else {
            q.reserve(&mut gist, now, &req)
        };
        match started {
            Ok(sid) => {
                ours.push(sid);
                emit(
                    json_out,
                    &json!({ "event": "requested", "session": hex(&sid),
                             "destination": dest.to_string(),
                             "receiver_initiated": a.receiver_initiated }),
                );
            }
            Err(e) => {
                failed = true;
                emit(
                    json_out,
                    &json!({ "event": "refused", "session": Value::Null,
                             "destination": dest.to_string(), "error": e.to_string() }),
                );
            }
        }
    }

    let mut ended = None;
    while !stop.load(Ordering::Relaxed) {
        let now = clock();
        if q.poll_timeout().is_some_and(|t| t <= now) {
            q.handle_timeout(now, &mut gist);
        }
        failed |= report(&mut q, json_out, &ours);
        let wait = q
            .poll_timeout()
            .map_or(POLL, |t| t.saturating_duration_since(clock()).min(POLL));
        match gist.next_upcall(Some(wait)) {
            Ok(Some(u)) => {
                if let Err(e) = serve(&mut q, &mut gist, clock(), u) {
                    ended = Some(e);
                    break;
                }
            }
            Ok(None) => {}
            Err(e) => {
                ended = Some(e);
                break;
            }
        }
    }
    if let Some(e) = ended {
        report(&mut q, json_out, &ours);
        anyhow::bail!("GIST's IPC connection ended: {e}");
    }

    // RFC 5974 §5.4.1: tear down what this node initiated (a RESERVE with TEAR), releasing
    // it here first.
    let qni: Vec<_> = q
        .sessions()
        .filter(|(_, s)| s.role == Role::Qni)
        .map(|(sid, _)| *sid)
        .collect();
    let now = clock();
    for sid in qni {
        let v = match q.release(&mut gist, now, sid) {
            Ok(()) => json!({ "event": "released", "session": hex(&sid) }),
            Err(e) => {
                json!({ "event": "release_failed", "session": hex(&sid), "error": e.to_string() })
            }
        };
        emit(json_out, &v);
    }
    report(&mut q, json_out, &ours);
    gist.flush()
        .map_err(|e| anyhow::anyhow!("IPC: the tears were not sent: {e}"))?;
    anyhow::ensure!(!failed, "a reservation asked for failed");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_specs_parse_and_bad_ones_are_refused() {
        let l = link_spec("e0:100Mbit:10Mbit").unwrap();
        assert_eq!(
            (l.name.as_str(), l.bandwidth.0, l.reservable.0),
            ("e0", 100_000_000, 10_000_000)
        );
        let l = link_spec("w0:1Gbit").unwrap();
        assert_eq!(l.reservable.0, 1_000_000_000);
        for bad in [
            "e0",
            ":1Mbit",
            "e0:fast",
            "e0:1Mbit:2Mbit",
            "e0:1Mbit:1Mbit:x",
        ] {
            assert!(link_spec(bad).is_err(), "{bad}");
        }
    }
}
