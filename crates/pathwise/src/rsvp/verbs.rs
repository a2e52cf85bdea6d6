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
                        filters: vec![*s],
                        te: Vec::new(),
                    })
                    .collect(),
            )),
            "se" if !senders.is_empty() => Ok((
                StyleKind::Se,
                vec![FlowDescriptor {
                    flowspec: fs,
                    filters: senders,
                    te: Vec::new(),
                }],
            )),
            "ff" | "se" => Err(format!("style {} needs at least one --sender", self.style)),
            "wf" => Ok((
                StyleKind::Wf,
                vec![FlowDescriptor {
                    flowspec: fs,
                    filters: Vec::new(),
                    te: Vec::new(),
                }],
            )),
            other => Err(format!("unknown style {other:?}: ff, se or wf")),
        }
    }
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
