//! The QoS NSLP's management verbs, served by the GIST service (the engine is its plug-in):
//!
//! - `qos.reserve` {destination, rate_bps, bucket?, peak_bps?, max_packet?, min_policed?,
//!   protocol?, dport?, sport?, receiver_initiated?, minimum_bps?, max_latency_us?, count?,
//!   bound?: [{session, code}]}: a
//!   sender-initiated reservation answered when the QNR's RESPONSE (or an error) comes back,
//!   or "pending" after 5 s; receiver-initiated: answered once the QUERY is sent. With
//!   `count` (sender-initiated, a `dport` given) one request starts that many reservations,
//!   one per destination port from `dport` up, and is answered with their tally when every
//!   one has its answer, or 5 s after the last answer came;
//! - `qos.release` {session}: tear down a reservation this node initiated;
//! - `qos.query` {destination, rate_bps, …}: what the path could give (QoS Available);
//! - `qos.show`: every session with state here, the counters, and the last NOTIFYs this node
//!   received as QNI or QNE (RFC 5974 §5.4.4; at most [`NOTICES`]).

use crate::daemon::Reply;
use crate::rsvp::service::DataPlane;
use pathwise_core::tc::SharedTrafficControl;
use pathwise_core::time::Instant;
use pathwise_gist::GistEngine;
use pathwise_gist::wire::SessionId;
use pathwise_qos_nslp::wire::qspec::{ParamValue, Tmod, parameter_id};
use pathwise_qos_nslp::wire::{BindingCode, InfoSpec, Qspec, QspecObjectType};
use pathwise_qos_nslp::{QosEvent, QosNslp, Reservation, ReserveRequest};
use serde::Deserialize;
use serde_json::{Value, json};
use std::net::IpAddr;

/// The traffic control the QoS NSLP shares with RSVP.
pub type SharedDataPlane = SharedTrafficControl<DataPlane>;
/// The QoS NSLP as the daemon runs it.
pub type DaemonQos = QosNslp<SharedDataPlane>;

/// How long a verb waits for the RESPONSE before answering "pending".
const WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The most reservations one `qos.reserve` starts (`count`).
pub const MAX_COUNT: u32 = 1000;

/// How many of the last NOTIFYs `qos.show` lists.
pub const NOTICES: usize = 64;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReserveArgs {
    destination: IpAddr,
    rate_bps: u64,
    #[serde(default)]
    bucket: Option<u32>,
    #[serde(default)]
    peak_bps: Option<u64>,
    #[serde(default)]
    max_packet: Option<u32>,
    #[serde(default)]
    min_policed: Option<u32>,
    #[serde(default)]
    protocol: Option<u8>,
    #[serde(default)]
    dport: Option<u16>,
    #[serde(default)]
    sport: Option<u16>,
    #[serde(default)]
    receiver_initiated: bool,
    #[serde(default)]
    minimum_bps: Option<u64>,
    #[serde(default)]
    max_latency_us: Option<u32>,
    #[serde(default)]
    count: Option<u32>,
    /// Sessions the reservation is bound to (BOUND-SESSION-ID, RFC 5974 §5.1.3.4).
    #[serde(default)]
    bound: Vec<BoundArg>,
}

/// A BOUND-SESSION-ID asked for: the session (32 hex digits) and the Binding Code.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BoundArg {
    session: String,
    code: u8,
}

impl ReserveArgs {
    fn tmod(&self, rate_bps: u64) -> Tmod {
        Tmod {
            rate: rate_bps as f32 / 8.0,
            bucket_size: self.bucket.unwrap_or(15_000) as f32,
            peak_rate: self.peak_bps.map_or(f32::INFINITY, |p| p as f32 / 8.0),
            min_policed_unit: self.min_policed.unwrap_or(64),
            max_packet_size: self.max_packet.unwrap_or(1500),
        }
    }

    /// The request for the flow from `source`; an error names a bound session that is not
    /// a Session ID or a Binding Code of 0.
    pub(crate) fn request(&self, source: IpAddr) -> Result<ReserveRequest, String> {
        let mut r = ReserveRequest::new(source, self.destination, self.tmod(self.rate_bps));
        r.protocol = self.protocol;
        r.dest_port = self.dport;
        r.source_port = self.sport;
        r.minimum = self.minimum_bps.map(|m| self.tmod(m));
        r.max_latency_us = self.max_latency_us;
        // RFC 5971 A.3.1.1: "If P=0, the A/B flags MUST both be zero" — a port alone is no
        // flow GIST can name (GIST would refuse to send it).
        if (self.dport.is_some() || self.sport.is_some()) && self.protocol.is_none() {
            return Err(
                "dport/sport need protocol (RFC 5971 A.3.1.1: ports only with the protocol)".into(),
            );
        }
        for b in &self.bound {
            let sid = parse_hex(&b.session).ok_or_else(|| {
                format!("bound: {:?} is not a session (32 hex digits)", b.session)
            })?;
            // §5.1.3.4, registry §6.3: 0 is reserved.
            if b.code == 0 {
                return Err("bound: Binding Code 0 is reserved (RFC 5974 §6.3)".into());
            }
            r = r.bound_to(sid, BindingCode(b.code));
        }
        Ok(r)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Waiting {
    Reserve,
    Query,
}

#[derive(Debug)]
struct Pending {
    session: SessionId,
    what: Waiting,
    deadline: std::time::Instant,
    reply: Reply,
}

/// A `qos.reserve` with a `count`: its reservations and their answers so far.
#[derive(Debug)]
struct Batch {
    /// Every session started, in port order.
    sessions: Vec<SessionId>,
    /// Those still waiting for their RESPONSE.
    waiting: std::collections::HashSet<SessionId>,
    reserved: usize,
    failed: usize,
    /// Refused here before anything was sent (e.g. admission at this node), with the first
    /// reason.
    refused: usize,
    first_error: Option<String>,
    deadline: std::time::Instant,
    reply: Reply,
}

impl Batch {
    fn answer(&self) -> Value {
        let pending = self.waiting.len();
        let outcome = if self.failed + self.refused > 0 {
            "failed"
        } else if pending > 0 {
            "pending"
        } else {
            "reserved"
        };
        json!({
            "outcome": outcome,
            "count": self.sessions.len() + self.refused,
            "reserved": self.reserved,
            "failed": self.failed,
            "refused": self.refused,
            "pending": pending,
            "error": self.first_error,
            "sessions": self.sessions.iter().map(hex).collect::<Vec<_>>(),
        })
    }

    /// Send the tally.
    fn finish(self) {
        let answer = self.answer();
        let _ = self.reply.send(Ok(answer));
    }
}

/// The verbs' state: requests waiting for their RESPONSE.
#[derive(Debug, Default)]
pub struct QosVerbs {
    pending: Vec<Pending>,
    batches: Vec<Batch>,
    /// The last NOTIFYs received (session, INFO-SPEC as JSON), newest last.
    notices: std::collections::VecDeque<Value>,
}

/// A Session ID as hex.
pub fn hex(s: &SessionId) -> String {
    s.0.iter().map(|b| format!("{b:02x}")).collect()
}

fn parse_hex(s: &str) -> Option<SessionId> {
    let s = s.trim();
    if s.len() != 32 || !s.is_ascii() {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(SessionId(out))
}

pub(crate) fn info_json(i: &InfoSpec) -> Value {
    use pathwise_qos_nslp::wire::ErrorSource;
    json!({
        "class": format!("{:?}", i.class),
        "code": i.code,
        // ESI (RFC 5974 §5.1.3.6): null when the INFO-SPEC names no source.
        "source": match &i.source {
            ErrorSource::None => Value::Null,
            ErrorSource::Ipv4(a) => json!(a.to_string()),
            ErrorSource::Ipv6(a) => json!(a.to_string()),
            ErrorSource::Fqdn(name) => json!(name),
            other => json!(format!("{other:?}")),
        },
    })
}

/// The QSPEC objects as rates (bit/s) and path latency (µs).
pub(crate) fn qspec_json(q: &Qspec) -> Value {
    let mut m = serde_json::Map::new();
    for o in &q.objects {
        let name = match o.object_type {
            QspecObjectType::QosDesired => "desired",
            QspecObjectType::QosAvailable => "available",
            QspecObjectType::QosReserved => "reserved",
            QspecObjectType::MinimumQos => "minimum",
            QspecObjectType::Other(_) => continue,
        };
        let latency = o
            .param(parameter_id::PATH_LATENCY)
            .and_then(|p| match p.value {
                ParamValue::PathLatency(l) => Some(l),
                _ => None,
            });
        m.insert(
            name.into(),
            json!({
                "rate_bps": o.tmod1().map(|t| (f64::from(t.rate) * 8.0).round() as u64),
                "path_latency_us": latency,
                "error": o.error,
            }),
        );
    }
    Value::Object(m)
}

fn session_json(
    sid: &SessionId,
    s: &Reservation,
    now: Instant,
    ifname: &dyn Fn(u32) -> String,
) -> Value {
    let left = |t: Option<Instant>| t.map(|t| t.saturating_duration_since(now).as_millis() as u64);
    json!({
        "session": hex(sid),
        "source": s.flow.source.to_string(),
        "destination": s.flow.destination.to_string(),
        "role": format!("{:?}", s.role).to_uppercase(),
        "initiation": format!("{:?}", s.initiation).to_lowercase(),
        "interface": s.tc.map(|(i, _)| ifname(i.0)),
        "rate_bps": (s.rate * 8.0).round() as u64,
        "rsn_in": s.rsn_in.map(|r| r.rsn),
        "rsn_out": s.rsn_out,
        "previous_peer": s.prev_peer.map(|p| p.0.to_string()),
        "next_peer": s.next_peer.map(|p| p.0.to_string()),
        "refresh_in_ms": left(s.refresh_at),
        "expires_in_ms": left(s.expires_at),
        "qspec": qspec_json(&s.qspec),
        "bound": s.bound.iter().map(|b| json!({ "session": hex(&b.session_id), "code": b.code.0 })).collect::<Vec<_>>(),
    })
}

impl QosVerbs {
    /// When a waiting verb times out.
    pub fn deadline(&self) -> Option<std::time::Instant> {
        self.pending
            .iter()
            .map(|p| p.deadline)
            .chain(self.batches.iter().map(|b| b.deadline))
            .min()
    }

    /// `qos.reserve` with a `count`: start the reservations, one per port from `dport` up.
    fn start_batch(
        &mut self,
        engine: &mut GistEngine,
        now: Instant,
        a: &ReserveArgs,
        count: u32,
        source: IpAddr,
        reply: Reply,
    ) {
        let refuse = |why: String| {
            let _ = reply.send(Err(why));
        };
        if count == 0 || count > MAX_COUNT {
            return refuse(format!("count: 1 to {MAX_COUNT} reservations per request"));
        }
        if a.receiver_initiated {
            return refuse("count: sender-initiated reservations only".into());
        }
        let Some(first) = a.dport else {
            return refuse("count: give the first destination port (dport)".into());
        };
        if u32::from(first) + count - 1 > u32::from(u16::MAX) {
            return refuse(format!(
                "count: ports {first} + {count} go beyond {}",
                u16::MAX
            ));
        }
        let mut req = match a.request(source) {
            Ok(r) => r,
            Err(e) => return refuse(e),
        };
        let mut batch = Batch {
            sessions: Vec::with_capacity(count as usize),
            waiting: std::collections::HashSet::with_capacity(count as usize),
            reserved: 0,
            failed: 0,
            refused: 0,
            first_error: None,
            deadline: std::time::Instant::now() + WAIT,
            reply,
        };
        let started = engine.with_nslp::<DaemonQos, _>(now, |q, g| {
            for port in first..=first + (count - 1) as u16 {
                req.dest_port = Some(port);
                match q.reserve(g, now, &req) {
                    Ok(sid) => {
                        batch.sessions.push(sid);
                        batch.waiting.insert(sid);
                    }
                    Err(e) => {
                        batch.refused += 1;
                        batch.first_error.get_or_insert_with(|| e.to_string());
                    }
                }
            }
        });
        if started.is_none() {
            let _ = batch
                .reply
                .send(Err("the QoS NSLP is not running".to_string()));
        } else if batch.waiting.is_empty() {
            batch.finish();
        } else {
            self.batches.push(batch);
        }
    }

    /// Serve `verb`; `now` is the engine's time. Replies now, or once the RESPONSE comes.
    pub fn handle(
        &mut self,
        engine: &mut GistEngine,
        now: Instant,
        verb: &str,
        args: &Value,
        reply: Reply,
        ifname: &dyn Fn(u32) -> String,
    ) {
        let result = match verb {
            "qos.reserve" | "qos.query" => {
                let a: ReserveArgs = match serde_json::from_value(args.clone()) {
                    Ok(a) => a,
                    Err(e) => {
                        let _ = reply.send(Err(format!("bad arguments for {verb}: {e}")));
                        return;
                    }
                };
                let source = match crate::gist::service::source_towards(a.destination) {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = reply.send(Err(format!("no route to {}: {e}", a.destination)));
                        return;
                    }
                };
                if let Some(count) = a.count {
                    if verb != "qos.reserve" {
                        let _ = reply.send(Err("count: for qos.reserve only".into()));
                        return;
                    }
                    return self.start_batch(engine, now, &a, count, source, reply);
                }
                let req = match a.request(source) {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = reply.send(Err(e));
                        return;
                    }
                };
                let started = engine
                    .with_nslp::<DaemonQos, _>(now, |q, g| {
                        if verb == "qos.query" {
                            q.query(g, now, &req).map(|s| (s, Waiting::Query))
                        } else if a.receiver_initiated {
                            q.reserve_receiver_initiated(g, now, &req)
                                .map(|s| (s, Waiting::Reserve))
                        } else {
                            q.reserve(g, now, &req).map(|s| (s, Waiting::Reserve))
                        }
                    })
                    .ok_or_else(|| "the QoS NSLP is not running".to_string());
                match started {
                    Ok(Ok((session, _))) if a.receiver_initiated && verb == "qos.reserve" => {
                        Ok(json!({ "session": hex(&session), "outcome": "requested" }))
                    }
                    Ok(Ok((session, what))) => {
                        self.pending.push(Pending {
                            session,
                            what,
                            deadline: std::time::Instant::now() + WAIT,
                            reply,
                        });
                        return;
                    }
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(e) => Err(e),
                }
            }
            "qos.release" => {
                let sid = args
                    .get("session")
                    .and_then(Value::as_str)
                    .and_then(parse_hex)
                    .ok_or_else(|| "qos.release needs a session (32 hex digits)".to_string());
                match sid {
                    Ok(sid) => engine
                        .with_nslp::<DaemonQos, _>(now, |q, g| q.release(g, now, sid))
                        .ok_or_else(|| "the QoS NSLP is not running".to_string())
                        .and_then(|r| r.map_err(|e| e.to_string()))
                        .map(|()| json!({ "session": hex(&sid), "outcome": "released" })),
                    Err(e) => Err(e),
                }
            }
            "qos.show" => {
                let notices: Vec<&Value> = self.notices.iter().collect();
                engine.with_nslp::<DaemonQos, _>(now, |q, _| {
                    let mut sessions: Vec<Value> = q
                        .sessions()
                        .map(|(sid, s)| session_json(sid, s, now, ifname))
                        .collect();
                    sessions.sort_by(|a, b| a["session"].as_str().cmp(&b["session"].as_str()));
                    json!({ "sessions": sessions, "counters": super::counters::counters_json(q.counters(), &super::counters::StateCounts::of(q)), "notifications": notices })
                })
                .ok_or_else(|| "the QoS NSLP is not running".to_string())
            }
            _ => Err(format!("unknown verb {verb:?}")),
        };
        let _ = reply.send(result);
    }

    /// Answer waiting verbs from the engine's events, and those whose wait is over.
    pub fn poll(&mut self, engine: &mut GistEngine, now: Instant) {
        let events: Vec<QosEvent> = engine
            .with_nslp::<DaemonQos, _>(now, |q, _| std::iter::from_fn(|| q.poll_event()).collect())
            .unwrap_or_default();
        for e in events {
            let (session, answer) = match e {
                QosEvent::Reserved { session_id, qspec } => (
                    session_id,
                    Ok(json!({
                        "session": hex(&session_id),
                        "outcome": "reserved",
                        "qspec": qspec.as_ref().map(qspec_json),
                    })),
                ),
                QosEvent::Failed {
                    session_id,
                    info,
                    qspec,
                } => (
                    session_id,
                    Ok(json!({
                        "session": hex(&session_id),
                        "outcome": "failed",
                        "info": info_json(&info),
                        "qspec": qspec.as_ref().map(qspec_json),
                    })),
                ),
                QosEvent::QueryAnswered {
                    session_id,
                    info,
                    qspec,
                } => (
                    session_id,
                    Ok(json!({
                        "session": hex(&session_id),
                        "outcome": "answered",
                        "info": info_json(&info),
                        "qspec": qspec.as_ref().map(qspec_json),
                    })),
                ),
                QosEvent::Notified { session_id, info } => {
                    // §5.4.4: a NOTIFY answers no request; it is told to the operator (the log
                    // and `qos show`), who decides, as the RFC leaves it to the QNI.
                    tracing::info!(
                        session = %hex(&session_id),
                        class = ?info.class,
                        code = info.code,
                        "QoS NSLP NOTIFY received"
                    );
                    if self.notices.len() == NOTICES {
                        self.notices.pop_front();
                    }
                    self.notices.push_back(json!({
                        "session": hex(&session_id),
                        "info": info_json(&info),
                    }));
                    continue;
                }
                other => {
                    tracing::debug!(event = ?other, "QoS NSLP");
                    continue;
                }
            };
            if let Some(i) = self.pending.iter().position(|p| p.session == session) {
                let p = self.pending.swap_remove(i);
                let _ = p.reply.send(answer);
            } else if let Some(i) = self
                .batches
                .iter()
                .position(|b| b.waiting.contains(&session))
            {
                let b = &mut self.batches[i];
                b.waiting.remove(&session);
                match answer.as_ref().ok().and_then(|v| v["outcome"].as_str()) {
                    Some("reserved") => b.reserved += 1,
                    _ => b.failed += 1,
                }
                // An answer came: wait up to WAIT more for the rest.
                b.deadline = std::time::Instant::now() + WAIT;
                if b.waiting.is_empty() {
                    self.batches.swap_remove(i).finish();
                }
            }
        }
        let wall = std::time::Instant::now();
        let (late, waiting): (Vec<_>, Vec<_>) =
            self.pending.drain(..).partition(|p| p.deadline <= wall);
        self.pending = waiting;
        let (late_batches, waiting): (Vec<_>, Vec<_>) =
            self.batches.drain(..).partition(|b| b.deadline <= wall);
        self.batches = waiting;
        late_batches.into_iter().for_each(Batch::finish);
        for p in late {
            let _ = p.reply.send(match p.what {
                Waiting::Reserve => Ok(json!({
                    "session": hex(&p.session),
                    "outcome": "pending",
                })),
                Waiting::Query => Err(format!(
                    "no answer to the query of session {}",
                    hex(&p.session)
                )),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_round_trip_as_hex() {
        let s = SessionId([0xab; 16]);
        assert_eq!(parse_hex(&hex(&s)), Some(s));
        assert_eq!(parse_hex("xyz"), None);
    }

    fn args(bound: Value) -> ReserveArgs {
        serde_json::from_value(json!({
            "destination": "10.0.0.2", "rate_bps": 1_000_000, "bound": bound,
        }))
        .unwrap()
    }

    #[test]
    fn bound_sessions_reach_the_request_and_bad_ones_are_refused() {
        let src: IpAddr = "10.0.0.1".parse().unwrap();
        let sid = SessionId([0x5a; 16]);
        let r =
            args(json!([{ "session": hex(&sid), "code": 4 }, { "session": hex(&sid), "code": 2 }]))
                .request(src)
                .unwrap();
        let got: Vec<_> = r
            .bound_sessions
            .iter()
            .map(|b| (b.session_id, b.code))
            .collect();
        assert_eq!(
            got,
            [
                (sid, BindingCode::DEPENDENT),
                (sid, BindingCode::BIDIRECTIONAL)
            ]
        );
        let e = args(json!([{ "session": "zz", "code": 4 }]))
            .request(src)
            .unwrap_err();
        assert!(e.contains("not a session"), "{e}");
        let e = args(json!([{ "session": hex(&sid), "code": 0 }]))
            .request(src)
            .unwrap_err();
        assert!(e.contains("reserved"), "{e}");
        assert!(
            args(json!([]))
                .request(src)
                .unwrap()
                .bound_sessions
                .is_empty()
        );
    }

    #[test]
    fn a_port_without_the_protocol_is_refused() {
        let src: IpAddr = "10.0.0.1".parse().unwrap();
        let a = |v: Value| {
            serde_json::from_value::<ReserveArgs>(v)
                .unwrap()
                .request(src)
        };
        let e = a(json!({ "destination": "10.0.0.2", "rate_bps": 1, "dport": 5001 })).unwrap_err();
        assert!(e.contains("need protocol"), "{e}");
        assert!(a(json!({ "destination": "10.0.0.2", "rate_bps": 1, "sport": 1 })).is_err());
        let r =
            a(json!({ "destination": "10.0.0.2", "rate_bps": 1, "dport": 5001, "protocol": 17 }));
        assert_eq!(r.unwrap().dest_port, Some(5001));
    }
}
