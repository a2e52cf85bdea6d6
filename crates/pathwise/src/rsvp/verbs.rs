//! The RSVP management verbs: JSON arguments in, the end-host API and inspection out. Shared by
//! the daemon (which answers them) and the CLI (which builds them), so both agree on the names.

use pathwise_rsvp::engine::inspect::SessionView;
use pathwise_rsvp::wire::{
    FilterSpec, FlowDescriptor, FlowSpec, SenderTspec, Session, StyleKind, TokenBucket,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::net::IpAddr;

/// A session as the CLI names it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct SessionArg {
    /// Destination address.
    pub dest: IpAddr,
    /// Destination port (0: none).
    #[serde(default)]
    pub port: u16,
    /// IP protocol of the data (17 = UDP).
    #[serde(default = "udp")]
    pub protocol: u8,
}

fn udp() -> u8 {
    17
}

impl From<SessionArg> for Session {
    fn from(s: SessionArg) -> Session {
        Session::ip(s.dest, s.protocol, s.port)
    }
}

/// A sender as the CLI names it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct SenderArg {
    /// Source address.
    pub src: IpAddr,
    /// Source port (0: any).
    #[serde(default)]
    pub sport: u16,
}

impl From<SenderArg> for FilterSpec {
    fn from(s: SenderArg) -> FilterSpec {
        match s.src {
            IpAddr::V4(src) => FilterSpec::V4 {
                src,
                src_port: s.sport,
            },
            IpAddr::V6(src) => FilterSpec::V6 {
                src,
                src_port: s.sport,
            },
        }
    }
}

/// A token bucket as the CLI gives it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct TrafficArg {
    /// Rate, bit/s.
    pub rate_bps: u64,
    /// Bucket, bytes (default: one second of traffic at `rate`, at least one MTU).
    pub bucket_bytes: Option<u32>,
    /// Largest packet, bytes.
    #[serde(default = "mtu")]
    pub max_packet: u32,
}

fn mtu() -> u32 {
    1500
}

impl TrafficArg {
    /// The token bucket (rates in bytes per second, as RFC 2210 has them).
    pub fn bucket(&self) -> TokenBucket {
        let rate = self.rate_bps as f32 / 8.0;
        TokenBucket {
            rate,
            bucket: self
                .bucket_bytes
                .map_or(rate.max(self.max_packet as f32), |b| b as f32),
            peak: f32::INFINITY,
            min_policed: 64.min(self.max_packet),
            max_packet: self.max_packet,
        }
    }
}

/// `rsvp.sender.add` / `rsvp.sender.del`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SenderReq {
    /// Session.
    pub session: SessionArg,
    /// Sender.
    pub sender: SenderArg,
    /// Traffic (add only).
    pub traffic: Option<TrafficArg>,
}

/// `rsvp.reserve`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReserveReq {
    /// Session.
    pub session: SessionArg,
    /// "ff", "se" or "wf".
    pub style: String,
    /// What to reserve (Controlled-Load).
    pub traffic: TrafficArg,
    /// Senders (FF: one reservation each; SE: shared by these; WF: ignored).
    #[serde(default)]
    pub senders: Vec<SenderArg>,
    /// Ask for a confirmation.
    #[serde(default)]
    pub confirm: bool,
}

impl ReserveReq {
    /// The style and flow descriptors for the engine.
    pub fn descriptors(&self) -> Result<(StyleKind, Vec<FlowDescriptor>), String> {
        let fs = Some(FlowSpec::ControlledLoad(self.traffic.bucket()));
        let senders: Vec<FilterSpec> = self.senders.iter().map(|s| (*s).into()).collect();
        match self.style.to_ascii_lowercase().as_str() {
            "ff" if !senders.is_empty() => Ok((
                StyleKind::Ff,
                senders
                    .iter()
                    .map(|s| FlowDescriptor {
                        flowspec: fs,
                        filters: vec![*s].into(),
                        te: Vec::new(),
                    })
                    .collect(),
            )),
            "se" if !senders.is_empty() => Ok((
                StyleKind::Se,
                vec![FlowDescriptor {
                    flowspec: fs,
                    filters: senders.into(),
                    te: Vec::new(),
                }],
            )),
            "ff" | "se" => Err(format!("style {} needs at least one --sender", self.style)),
            "wf" => Ok((
                StyleKind::Wf,
                vec![FlowDescriptor {
                    flowspec: fs,
                    filters: Vec::new().into(),
                    te: Vec::new(),
                }],
            )),
            other => Err(format!("unknown style {other:?}: ff, se or wf")),
        }
    }
}

/// Where a local receiver's request stands. The engine keeps a request made before any Path
/// arrived and after path state went (RFC 2205 §3.11.1: a RAPI receiver's reservation lasts
/// as long as its session, path state comes and goes), so a request may be installed for some
/// senders and waiting for the others' path state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestState {
    /// Senders it is installed for (WF: `*`, any sender).
    pub installed: Vec<String>,
    /// Senders whose path state has not reached this receiver (or has gone).
    pub waiting: Vec<String>,
    /// Senders with path state here but no reservation: refused (a ResvError event says why).
    pub refused: Vec<String>,
}

impl RequestState {
    /// What the request amounts to in the engine's state of its session (`None`: the engine
    /// has no state for the session at all).
    pub fn of(req: &ReserveReq, view: Option<&SessionView>) -> RequestState {
        // Path state that ends here (local delivery), and reservations this receiver made.
        let local_paths: Vec<FilterSpec> = view
            .iter()
            .flat_map(|v| &v.paths)
            .filter(|p| p.oifs.contains(&None))
            .map(|p| p.sender)
            .collect();
        let local_resvs: Vec<_> = view
            .iter()
            .flat_map(|v| &v.resvs)
            .filter(|r| r.nhop.is_none())
            .collect();
        let mut state = RequestState::default();
        if req.style.eq_ignore_ascii_case("wf") {
            let list = if !local_resvs.is_empty() {
                &mut state.installed
            } else if local_paths.is_empty() {
                &mut state.waiting
            } else {
                &mut state.refused
            };
            list.push("*".into());
            return state;
        }
        for s in &req.senders {
            let f = FilterSpec::from(*s);
            let list = if local_resvs.iter().any(|r| r.filters.contains(&f)) {
                &mut state.installed
            } else if !local_paths.contains(&f) {
                &mut state.waiting
            } else {
                &mut state.refused
            };
            list.push(filter_text(&f));
        }
        state
    }

    /// The reply to `rsvp.reserve`.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        let all = self.waiting.len() + self.refused.len() + self.installed.len();
        if self.installed.len() == all {
            return "reservation installed".into();
        }
        if self.waiting.len() == all {
            return "reservation kept, waiting for path state (it is sent when the Path \
                    arrives)"
                .into();
        }
        if !self.installed.is_empty() {
            parts.push(format!("installed for {}", self.installed.join(", ")));
        }
        if !self.waiting.is_empty() {
            parts.push(format!(
                "waiting for path state of {}",
                self.waiting.join(", ")
            ));
        }
        if !self.refused.is_empty() {
            parts.push(format!(
                "refused for {} (see rsvp show events)",
                self.refused.join(", ")
            ));
        }
        format!("reservation {}", parts.join("; "))
    }
}

/// A kept receiver request for `rsvp show requests`.
pub fn request_json(req: &ReserveReq, state: &RequestState) -> Value {
    let status = if state.waiting.is_empty() && state.refused.is_empty() {
        "installed"
    } else if state.installed.is_empty() && state.refused.is_empty() {
        "waiting"
    } else if state.installed.is_empty() && state.waiting.is_empty() {
        "refused"
    } else {
        "partial"
    };
    json!({
        "session": format!("{}:{} proto {}", req.session.dest, req.session.port, req.session.protocol),
        "style": req.style.to_uppercase(),
        "kbps": req.traffic.rate_bps as f64 / 1000.0,
        "confirm": req.confirm,
        "status": status,
        "installed": state.installed,
        "waiting": state.waiting,
        "refused": state.refused,
    })
}

/// The sender TSpec of a `rsvp.sender.add`.
pub fn tspec(t: &TrafficArg) -> SenderTspec {
    SenderTspec(t.bucket())
}

fn kbps(f: &FlowSpec) -> f64 {
    f64::from(f.reserved_rate()) * 8.0 / 1000.0
}

fn filter_text(f: &FilterSpec) -> String {
    match f {
        FilterSpec::V4 { src, src_port } => format!("{src}:{src_port}"),
        FilterSpec::V6 { src, src_port } => format!("[{src}]:{src_port}"),
        FilterSpec::V6FlowLabel { src, flow_label } => format!("[{src}] flow {flow_label:#x}"),
        FilterSpec::LspTunnelV4 { src, lsp_id } => format!("{src} lsp {lsp_id}"),
        FilterSpec::LspTunnelV6 { src, lsp_id } => format!("[{src}] lsp {lsp_id}"),
    }
}

/// A session as JSON for `show`.
pub fn session_json(s: &SessionView) -> Value {
    json!({
        "session": format!("{}:{} proto {}", s.session.dest, s.session.dst_port, s.session.protocol_id),
        "paths": s.paths.iter().map(|p| json!({
            "sender": filter_text(&p.sender),
            "tspec_kbps": f64::from(p.tspec.0.rate) * 8.0 / 1000.0,
            "phop": p.phop.map(|a| a.to_string()),
            "in": p.iif.map(|i| i.0),
            "out": p.oifs.iter().map(|o| o.map_or("local".to_string(), |i| i.0.to_string())).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "resvs": s.resvs.iter().map(|r| json!({
            "nhop": r.nhop.map_or("local".to_string(), |a| a.to_string()),
            "out": r.oi.map(|i| i.0),
            "style": format!("{:?}", r.style).to_uppercase(),
            "kbps": kbps(&r.flowspec),
            "senders": r.filters.iter().map(filter_text).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "installed": s.installed.iter().map(|i| json!({
            "out": i.ifindex.0,
            "kbps": kbps(&i.flowspec),
            "senders": i.senders.iter().map(filter_text).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathwise_rsvp::engine::inspect::{PathView, ResvView};

    const H1: &str = "10.0.0.1";
    const H3: &str = "10.0.0.3";

    fn sender(a: &str) -> SenderArg {
        SenderArg {
            src: a.parse().unwrap(),
            sport: 0,
        }
    }

    fn req(style: &str, senders: &[&str]) -> ReserveReq {
        ReserveReq {
            session: SessionArg {
                dest: "10.0.0.2".parse().unwrap(),
                port: 5001,
                protocol: 17,
            },
            style: style.into(),
            traffic: TrafficArg {
                rate_bps: 1_000_000,
                bucket_bytes: None,
                max_packet: 1500,
            },
            senders: senders.iter().map(|s| sender(s)).collect(),
            confirm: false,
        }
    }

    /// The receiver's view of the session: path state from `paths` ending here, and its own
    /// reservation naming `reserved`.
    fn view(r: &ReserveReq, paths: &[&str], reserved: &[&str]) -> SessionView {
        let fs = FlowSpec::ControlledLoad(r.traffic.bucket());
        SessionView {
            session: r.session.into(),
            paths: paths
                .iter()
                .map(|p| PathView {
                    sender: sender(p).into(),
                    tspec: tspec(&r.traffic),
                    phop: Some("10.0.0.9".parse().unwrap()),
                    iif: None,
                    oifs: vec![None],
                })
                .collect(),
            resvs: (!reserved.is_empty())
                .then(|| ResvView {
                    nhop: None,
                    oi: None,
                    style: StyleKind::Ff,
                    flowspec: fs,
                    filters: reserved.iter().map(|s| sender(s).into()).collect(),
                })
                .into_iter()
                .collect(),
            installed: Vec::new(),
        }
    }

    #[test]
    fn a_request_before_the_path_is_waiting() {
        let r = req("ff", &[H1]);
        let s = RequestState::of(&r, None);
        assert_eq!(s.waiting, vec!["10.0.0.1:0"]);
        assert!(s.summary().contains("waiting for path state"), "{s:?}");
        assert_eq!(request_json(&r, &s)["status"], "waiting");
        let wf = req("wf", &[]);
        let s = RequestState::of(&wf, Some(&view(&wf, &[], &[])));
        assert_eq!(request_json(&wf, &s)["status"], "waiting");
    }

    #[test]
    fn installed_waiting_and_refused_senders() {
        let r = req("ff", &[H1]);
        let s = RequestState::of(&r, Some(&view(&r, &[H1], &[H1])));
        assert_eq!(s.summary(), "reservation installed");
        let both = req("ff", &[H1, H3]);
        let s = RequestState::of(&both, Some(&view(&both, &[H1], &[H1])));
        assert_eq!(
            s.summary(),
            "reservation installed for 10.0.0.1:0; waiting for path state of 10.0.0.3:0"
        );
        assert_eq!(request_json(&both, &s)["status"], "partial");
        // Path state from H3 but no reservation for it: refused (admission, style).
        let s = RequestState::of(&both, Some(&view(&both, &[H1, H3], &[H1])));
        assert_eq!(s.refused, vec!["10.0.0.3:0"]);
        assert!(s.summary().contains("refused for 10.0.0.3:0"), "{s:?}");
        let wf = req("wf", &[]);
        let s = RequestState::of(&wf, Some(&view(&wf, &[H1], &[])));
        assert_eq!(request_json(&wf, &s)["status"], "refused");
        let s = RequestState::of(&wf, Some(&view(&wf, &[H1], &[H3])));
        assert_eq!(request_json(&wf, &s)["status"], "installed");
    }
}
