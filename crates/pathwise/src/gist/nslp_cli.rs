//! `pathwise gist send` and `pathwise gist listen`: any NSLPID from the command line, over the
//! daemon's IPC NSLP API (`[gist] ipc_socket`, `pathwise_gist::ipc`), for testing against other
//! GIST implementations (NSIS-ka's test NSLP uses NSLPID 42).
//!
//! - `send` registers the NSLPID, sends a payload towards DEST along the path (path-coupled
//!   MRI of the flow from this node to DEST, RFC 5971 §5.8.1), asks GIST to report each
//!   message's dispatch (B.3 MessageStatus), and prints the statuses and every message that
//!   comes back in the session (B.2 RecvMessage). Exits non-zero unless every message was
//!   dispatched.
//! - `listen` registers the NSLPID, peers with every Query (the Routing-State-Check answered
//!   "peer", B.2 and §4.3.2 option 1) and prints every upcall; with `--echo` it sends each
//!   payload back to its sender in the session, in the Response when it came in a Query (§4.3.2
//!   option 1: "the application MAY provide an NSLP payload … which GIST will transfer in the
//!   Response"), else as a message in the reverse direction of its MRI.
//!
//! GIST carries NSLP data as whole 32-bit words and leaves padding to the NSLP (A.3.10), so
//! `send` pads the payload with zero bytes to a word boundary and both commands show a payload
//! as text without up to three trailing zero bytes.

use super::service::{hex, parse_hex};
use clap::ValueEnum;
use pathwise_core::time::Instant;
use pathwise_gist::ipc::{IpcGist, Upcall};
use pathwise_gist::nslp::{
    DeliveryError, GistApi, MessageHandle, MessageStatus, NetworkNotification, NotificationKind,
    RecvMessage, RoutingDecision, SendMessage, TransferAttributes,
};
use pathwise_gist::wire::{Mri, PathCoupledMri};
use serde_json::{Value, json};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The daemon's IPC socket unless told otherwise.
const DEFAULT_IPC_SOCKET: &str = "/run/pathwise/gist.sock";

/// How GIST is to carry the messages (RFC 5971 B.1 Transfer-Attributes).
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Transport {
    /// D-mode: the first message rides the Query (unreliable).
    Udp,
    /// Reliable: C-mode over a TCP messaging association.
    Tcp,
    /// Reliable and secure: C-mode over TLS (RFC 5971 §5.7.3).
    Tls,
}

impl Transport {
    fn attributes(self) -> TransferAttributes {
        TransferAttributes {
            reliable: !matches!(self, Transport::Udp),
            secure: matches!(self, Transport::Tls),
            setup_state: true,
        }
    }
}

/// Arguments of `pathwise gist send`.
#[derive(Debug, clap::Args)]
pub struct SendArgs {
    /// NSLPID to register and send under (1–65535; one the daemon serves in process, such as
    /// the Ping NSLP's or a relayed one, is handed to this command while it runs).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    nslpid: u16,
    /// Destination of the flow the message travels along.
    dest: IpAddr,
    /// Payload as text.
    #[arg(long, group = "payload")]
    data: Option<String>,
    /// Payload as hex digits.
    #[arg(long, group = "payload")]
    data_hex: Option<String>,
    /// Payload read from a file.
    #[arg(long, group = "payload")]
    data_file: Option<PathBuf>,
    /// How GIST carries the messages.
    #[arg(long, value_enum, default_value = "udp")]
    transport: Transport,
    /// Session ID (32 hex digits) to send in; default: a new random one.
    #[arg(long)]
    session: Option<String>,
    /// Messages to send in the session.
    #[arg(long, short = 'c', default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    count: u32,
    /// How long to wait for the messages' statuses and for messages coming back (ends early
    /// once every message has its status and as many came back as were delivered).
    #[arg(long, default_value = "3s", value_parser = super::cli::duration)]
    wait: Duration,
    /// The daemon's IPC socket (`[gist] ipc_socket`).
    #[arg(long, default_value = DEFAULT_IPC_SOCKET)]
    ipc_socket: PathBuf,
}

/// Arguments of `pathwise gist listen`.
#[derive(Debug, clap::Args)]
pub struct ListenArgs {
    /// NSLPID to register.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    nslpid: u16,
    /// Send every payload back to its sender in the same session.
    #[arg(long)]
    echo: bool,
    /// Stop after this many messages with a payload.
    #[arg(long, short = 'c')]
    count: Option<u64>,
    /// Stop after this long (default: run until interrupted or the daemon goes).
    #[arg(long, value_parser = super::cli::duration)]
    duration: Option<Duration>,
    /// The daemon's IPC socket (`[gist] ipc_socket`).
    #[arg(long, default_value = DEFAULT_IPC_SOCKET)]
    ipc_socket: PathBuf,
}

fn connect(socket: &Path, nslpid: u16) -> anyhow::Result<IpcGist> {
    IpcGist::connect(socket, nslpid).map_err(|e| anyhow::anyhow!("{}: {e}", socket.display()))
}

/// The payload of `send`, padded to a word boundary (A.3.10), and how many bytes were added.
fn payload(a: &SendArgs) -> anyhow::Result<(Vec<u8>, usize)> {
    let mut d = match (&a.data, &a.data_hex, &a.data_file) {
        (Some(t), _, _) => t.as_bytes().to_vec(),
        (_, Some(h), _) => from_hex(h)?,
        (_, _, Some(f)) => {
            std::fs::read(f).map_err(|e| anyhow::anyhow!("--data-file {}: {e}", f.display()))?
        }
        _ => Vec::new(),
    };
    let pad = (4 - d.len() % 4) % 4;
    d.resize(d.len() + pad, 0);
    Ok((d, pad))
}

fn from_hex(s: &str) -> anyhow::Result<Vec<u8>> {
    let s: String = s
        .chars()
        .filter(|c| !c.is_whitespace() && *c != ':')
        .collect();
    anyhow::ensure!(
        s.len().is_multiple_of(2),
        "--data-hex: an odd number of hex digits"
    );
    (0..s.len())
        .step_by(2)
        .map(|i| {
            s.get(i..i + 2)
                .and_then(|d| u8::from_str_radix(d, 16).ok())
                .ok_or_else(|| anyhow::anyhow!("--data-hex: {:?} is not hex", &s[i..]))
        })
        .collect()
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The payload as text, if it is printable once up to three bytes of zero padding are off.
fn as_text(b: &[u8]) -> Option<&str> {
    let pad = b.iter().rev().take(3).take_while(|&&x| x == 0).count();
    let s = std::str::from_utf8(&b[..b.len() - pad]).ok()?;
    (!s.is_empty() && s.chars().all(|c| !c.is_control() || c == '\n' || c == '\t')).then_some(s)
}

fn show_payload(b: &[u8]) -> String {
    match as_text(b) {
        Some(t) => format!("{t:?}"),
        None if b.is_empty() => "(none)".into(),
        None => format!("0x{}", to_hex(b)),
    }
}

fn mri_json(m: &Mri) -> Value {
    json!({
        "source": m.source().map(|a| a.to_string()),
        "destination": m.destination().map(|a| a.to_string()),
        "upstream": m.is_upstream(),
    })
}

fn mri_text(m: &Mri) -> String {
    format!(
        "{} > {}{}",
        m.source().map_or("?".into(), |a| a.to_string()),
        m.destination().map_or("?".into(), |a| a.to_string()),
        if m.is_upstream() { " (upstream)" } else { "" }
    )
}

fn transfer_name(t: TransferAttributes) -> &'static str {
    match (t.reliable, t.secure) {
        (_, true) => "tls",
        (true, false) => "tcp",
        _ => "udp",
    }
}

fn error_text(e: DeliveryError) -> String {
    match e {
        DeliveryError::NoRoutingState => "no routing state".into(),
        DeliveryError::NoPeer => {
            "no GIST peer found on the path (Query unanswered or end of the path reached)".into()
        }
        DeliveryError::PeerError { class, code } => {
            format!("the peer answered with a GIST Error (class {class}, code {code})")
        }
        DeliveryError::MessageTooLarge => "message too large".into(),
        DeliveryError::QueueFull => "queue full while routing state was being set up".into(),
        DeliveryError::Unsupported => {
            "transfer attributes not supported (no TLS on this node or its peer)".into()
        }
        DeliveryError::Refused(e) => format!("refused by GIST: {e}"),
        DeliveryError::UnknownSiiHandle => "no such GIST peer (unknown SII-Handle)".into(),
    }
}

fn recv_json(m: &RecvMessage) -> Value {
    json!({
        "event": "recv",
        "nslpid": m.nslpid,
        "session": hex(&m.session_id),
        "peer": m.sii_handle.map(|p| p.0.to_string()),
        "mri": mri_json(&m.mri),
        "query": m.routing_state_check,
        "transfer": transfer_name(m.transfer),
        "gist_hops": m.gist_hops,
        "ip_ttl": m.ip_ttl,
        "payload_hex": to_hex(&m.nslp_data),
        "text": as_text(&m.nslp_data),
    })
}

fn recv_text(m: &RecvMessage) -> String {
    format!(
        "recv from {} session {} flow {}{}: {} ({} bytes)",
        m.sii_handle.map_or("?".into(), |p| p.0.to_string()),
        hex(&m.session_id),
        mri_text(&m.mri),
        if m.routing_state_check {
            " in a Query"
        } else {
            ""
        },
        show_payload(&m.nslp_data),
        m.nslp_data.len()
    )
}

fn status_json(s: &MessageStatus) -> Value {
    json!({
        "event": "status",
        "handle": s.handle.0,
        "session": hex(&s.session_id),
        "delivered": s.error.is_none(),
        "transfer": s.transfer.map(transfer_name),
        "error": s.error.map(error_text),
    })
}

fn status_text(s: &MessageStatus) -> String {
    match s.error {
        None => format!(
            "message {} dispatched ({})",
            s.handle.0,
            s.transfer.map_or("?", transfer_name)
        ),
        Some(e) => format!("message {} failed: {}", s.handle.0, error_text(e)),
    }
}

fn notify_json(n: &NetworkNotification) -> Value {
    let (kind, detail) = notify_detail(&n.kind);
    json!({
        "event": "notification",
        "nslpid": n.nslpid,
        "session": hex(&n.session_id),
        "mri": mri_json(&n.mri),
        "kind": kind,
        "detail": detail,
    })
}

fn notify_detail(k: &NotificationKind) -> (&'static str, String) {
    match k {
        NotificationKind::LastNode => ("last_node", String::new()),
        NotificationKind::RoutingStatusChange {
            direction,
            peer,
            changed,
        } => (
            "routing_status_change",
            format!(
                "{direction:?} peer {}{}",
                peer.0,
                if *changed { " (changed)" } else { "" }
            ),
        ),
        NotificationKind::RoutingStateLost { direction } => {
            ("routing_state_lost", format!("{direction:?}"))
        }
        NotificationKind::CommunicationFailure { direction, peer } => (
            "communication_failure",
            format!("{direction:?} peer {}", peer.0),
        ),
    }
}

fn notify_text(n: &NetworkNotification) -> String {
    let (kind, detail) = notify_detail(&n.kind);
    format!(
        "notification session {} flow {}: {kind} {detail}",
        hex(&n.session_id),
        mri_text(&n.mri)
    )
}

/// Print one event: a JSON line, or text.
fn emit(json_out: bool, v: &Value, text: impl FnOnce() -> String) {
    if json_out {
        println!("{v}");
    } else {
        println!("{}", text());
    }
}

/// The source address the kernel uses towards `dest` (the flow's source).
fn source_towards(dest: IpAddr) -> std::io::Result<IpAddr> {
    let any: IpAddr = if dest.is_ipv4() {
        std::net::Ipv4Addr::UNSPECIFIED.into()
    } else {
        std::net::Ipv6Addr::UNSPECIFIED.into()
    };
    let s = std::net::UdpSocket::bind((any, 0))?;
    s.connect((dest, pathwise_gist::wire::GIST_PORT))?;
    Ok(s.local_addr()?.ip())
}

/// `pathwise gist send`.
pub fn send(a: &SendArgs, json_out: bool) -> anyhow::Result<()> {
    let (data, pad) = payload(a)?;
    let source =
        source_towards(a.dest).map_err(|e| anyhow::anyhow!("no route to {}: {e}", a.dest))?;
    let mut gist = connect(&a.ipc_socket, a.nslpid)?;
    let sid = match &a.session {
        Some(s) => parse_hex(s).ok_or_else(|| anyhow::anyhow!("--session: 32 hex digits"))?,
        None => gist.new_session_id(),
    };
    let mri = Mri::PathCoupled(PathCoupledMri::flow(source, a.dest));
    if !json_out {
        println!(
            "GIST send NSLPID {} session {} flow {source} > {} over {}: {} ({} bytes{})",
            a.nslpid,
            hex(&sid),
            a.dest,
            transfer_name(a.transport.attributes()),
            show_payload(&data),
            data.len(),
            if pad > 0 {
                format!(", {pad} of them zero padding (RFC 5971 A.3.10)")
            } else {
                String::new()
            }
        );
    }
    let now = Instant::ZERO; // GIST's API over IPC ignores the client's time
    let mut handles = Vec::new();
    for _ in 0..a.count {
        let mut m = SendMessage::new(a.nslpid, sid, mri.clone(), data.clone());
        m.transfer = a.transport.attributes();
        m.report_dispatch = true;
        let h = gist
            .send_message(now, m)
            .map_err(|e| anyhow::anyhow!("SendMessage: {e}"))?;
        handles.push(h);
    }
    let deadline = std::time::Instant::now() + a.wait;
    let mut statuses: Vec<(MessageHandle, MessageStatus)> = Vec::new();
    let mut received = Vec::new();
    let mut notifications = Vec::new();
    loop {
        let delivered = statuses.iter().filter(|(_, s)| s.error.is_none()).count();
        if statuses.len() == handles.len() && received.len() >= delivered {
            break;
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            break;
        }
        let Some(u) = gist
            .next_upcall(Some(left))
            .map_err(|e| anyhow::anyhow!("IPC: {e}"))?
        else {
            break;
        };
        match u {
            Upcall::Recv { upcall, msg, .. } => {
                if upcall != 0 {
                    // A Query for this NSLPID reached this node: peer, as a listener would.
                    gist.decide(upcall, RoutingDecision::ACCEPT)
                        .map_err(|e| anyhow::anyhow!("IPC: {e}"))?;
                }
                if msg.session_id != sid || msg.nslp_data.is_empty() {
                    continue;
                }
                if !json_out {
                    println!("{}", recv_text(&msg));
                }
                received.push(recv_json(&msg));
            }
            Upcall::Status { status, .. } => {
                if !handles.contains(&status.handle)
                    || statuses.iter().any(|(h, _)| *h == status.handle)
                {
                    continue;
                }
                if !json_out {
                    println!("{}", status_text(&status));
                }
                statuses.push((status.handle, status));
            }
            Upcall::Notify { notification, .. } => {
                if notification.session_id != sid {
                    continue;
                }
                if !json_out {
                    println!("{}", notify_text(&notification));
                }
                notifications.push(notify_json(&notification));
            }
        }
    }
    let delivered = statuses.iter().filter(|(_, s)| s.error.is_none()).count();
    let failed = statuses.len() - delivered;
    let unknown = handles.len() - statuses.len();
    if json_out {
        let messages: Vec<Value> = handles
            .iter()
            .map(|h| match statuses.iter().find(|(x, _)| x == h) {
                Some((_, s)) => status_json(s),
                None => json!({ "event": "status", "handle": h.0, "delivered": Value::Null,
                                "error": "no status within --wait" }),
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "nslpid": a.nslpid,
                "session": hex(&sid),
                "source": source.to_string(),
                "destination": a.dest.to_string(),
                "transport": transfer_name(a.transport.attributes()),
                "payload_hex": to_hex(&data),
                "messages": messages,
                "received": received,
                "notifications": notifications,
                "summary": { "sent": handles.len(), "delivered": delivered, "failed": failed,
                             "unknown": unknown, "received": received.len() },
            }))?
        );
    } else {
        println!(
            "--- {} sent, {delivered} dispatched, {failed} failed, {unknown} without a status, {} came back",
            handles.len(),
            received.len()
        );
    }
    anyhow::ensure!(
        failed == 0 && unknown == 0,
        "{failed} of {} messages failed, {unknown} without a status within {:?}",
        handles.len(),
        a.wait
    );
    Ok(())
}

/// `pathwise gist listen`.
pub fn listen(a: &ListenArgs, json_out: bool) -> anyhow::Result<()> {
    let mut gist = connect(&a.ipc_socket, a.nslpid)?;
    emit(
        json_out,
        &json!({ "event": "registered", "nslpid": a.nslpid,
                 "socket": a.ipc_socket.display().to_string(),
                 "local": gist.local_addresses().iter().map(|x| x.to_string()).collect::<Vec<_>>() }),
        || {
            format!(
                "NSLPID {} registered on {} (node {:?}){}",
                a.nslpid,
                a.ipc_socket.display(),
                gist.local_addresses(),
                if a.echo { ", echoing" } else { "" }
            )
        },
    );
    let deadline = a.duration.map(|d| std::time::Instant::now() + d);
    let mut messages = 0u64;
    // Echoes sent as messages, by handle: their statuses are shown as the echo's.
    let mut echoes: Vec<MessageHandle> = Vec::new();
    loop {
        if a.count.is_some_and(|c| messages >= c) {
            break;
        }
        let wait = match deadline {
            None => None,
            Some(d) => {
                let left = d.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                Some(left)
            }
        };
        let u = match gist.next_upcall(wait) {
            Ok(Some(u)) => u,
            Ok(None) => continue,
            Err(e) => anyhow::bail!("IPC: {e}"),
        };
        match u {
            Upcall::Recv { upcall, msg, .. } => {
                emit(json_out, &recv_json(&msg), || recv_text(&msg));
                let has_data = !msg.nslp_data.is_empty();
                messages += u64::from(has_data);
                let echo = a.echo && has_data;
                if upcall != 0 {
                    // §4.3.2 option 1: peer, and carry the echo in the Response.
                    let response_data = echo.then(|| msg.nslp_data.clone());
                    gist.decide(upcall, RoutingDecision::Accept { response_data })
                        .map_err(|e| anyhow::anyhow!("IPC: {e}"))?;
                    if echo {
                        emit(
                            json_out,
                            &json!({ "event": "echo", "session": hex(&msg.session_id), "in": "response" }),
                            || "echoed in the Response".into(),
                        );
                    }
                } else if echo {
                    let back = msg.mri.with_direction(!msg.mri.is_upstream());
                    let mut m = SendMessage::new(a.nslpid, msg.session_id, back, msg.nslp_data);
                    m.transfer.reliable = msg.transfer.reliable;
                    m.transfer.secure = msg.transfer.secure;
                    m.report_dispatch = true;
                    match gist.send_message(Instant::ZERO, m) {
                        Ok(h) => echoes.push(h),
                        Err(e) => anyhow::bail!("IPC: echo not sent: {e}"),
                    }
                    if echoes.len() > 4096 {
                        echoes.drain(..2048);
                    }
                }
            }
            Upcall::Status { status, .. } => {
                let mut v = status_json(&status);
                let echo = echoes.contains(&status.handle);
                v["echo"] = json!(echo);
                emit(json_out, &v, || {
                    format!(
                        "{}{}",
                        if echo { "echo: " } else { "" },
                        status_text(&status)
                    )
                });
            }
            Upcall::Notify { notification, .. } => {
                emit(json_out, &notify_json(&notification), || {
                    notify_text(&notification)
                });
            }
        }
    }
    Ok(())
}

/// Relay NSLPs' counters for `gist show counters` (one object per relayed NSLPID).
pub fn relay_json(engine: &mut pathwise_gist::GistEngine, now: Instant) -> Value {
    use pathwise_gist::nslp::relay::RelayNslp;
    let ids: Vec<u16> = engine.registered().collect();
    let mut out = serde_json::Map::new();
    for n in ids {
        let st = engine
            .with_nslpid(now, n, |p, _| {
                p.as_any_mut()
                    .downcast_mut::<RelayNslp>()
                    .map(|r| r.stats())
            })
            .flatten();
        let Some(st) = st else { continue };
        out.insert(
            n.to_string(),
            json!({
                "peered": st.peered,
                "forwarded_downstream": st.forwarded_downstream,
                "forwarded_upstream": st.forwarded_upstream,
                "network_failures": st.network_failures,
                "drops": st.drops().iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
            }),
        );
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_show_as_text_without_padding_else_as_hex() {
        assert_eq!(as_text(b"hello\0\0\0"), Some("hello"));
        assert_eq!(as_text(b"hell"), Some("hell"));
        assert_eq!(as_text(b"hi\0\0\0\0"), None, "more than padding");
        assert_eq!(as_text(&[0xff, 1, 2, 3]), None);
        assert_eq!(as_text(b""), None);
        assert_eq!(show_payload(&[1, 2]), "0x0102");
        assert_eq!(show_payload(b"ok\0\0"), "\"ok\"");
        assert_eq!(from_hex("de:ad be ef").unwrap(), [0xde, 0xad, 0xbe, 0xef]);
        assert!(from_hex("abc").is_err());
        assert!(from_hex("zz").is_err());
    }
}
