//! The RSVP-TE management verbs (RFC 3209): LSPs opened and closed by name, `show lsp` and
//! `show labels` as JSON, and routing problems in words. Shared by the daemon (which answers
//! them), the configuration (`[[rsvp.lsp]]`) and the CLI (which builds them), so all three read
//! explicit-route hops the same way.
//!
//! A hop is written `ADDR` (strict), `~ADDR` (loose), either with an optional `/LEN` prefix
//! length: `10.0.0.1`, `~10.0.0.5`, `~10.1.0.0/16`.

use pathwise_core::io::IfIndex;
use pathwise_core::mpls::{LabelOp, MemoryLfib, NextHop};
use pathwise_rsvp::engine::te::{LspRole, LspSpec, LspStatus, LspView};
use pathwise_rsvp::wire::error::error_code;
use pathwise_rsvp::wire::te::{
    AbstractNode, EroSubobject, ExplicitRoute, RecordRoute, RroSubobject,
};
use pathwise_rsvp::wire::{ErrorSpec, FilterSpec};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::net::IpAddr;

/// Setup priority when none is given: the lowest (RFC 3209 §4.7.1).
pub const DEFAULT_SETUP_PRIORITY: u8 = 7;
/// Holding priority when none is given: the highest, so the LSP is never preempted.
pub const DEFAULT_HOLD_PRIORITY: u8 = 0;

/// One explicit-route hop from its text: `ADDR`, `~ADDR`, with an optional `/LEN`.
pub fn parse_hop(s: &str) -> Result<EroSubobject, String> {
    let (loose, rest) = match s.trim().strip_prefix('~') {
        Some(r) => (true, r),
        None => (false, s.trim()),
    };
    let bad = || {
        format!("bad hop {s:?}: ADDRESS (strict), ~ADDRESS (loose), optionally with /PREFIX-LENGTH")
    };
    let (addr, len) = match rest.split_once('/') {
        Some((a, l)) => (a, Some(l.parse::<u8>().map_err(|_| bad())?)),
        None => (rest, None),
    };
    let node = match addr.parse::<IpAddr>().map_err(|_| bad())? {
        IpAddr::V4(addr) => AbstractNode::Ipv4Prefix {
            addr,
            prefix_len: len.unwrap_or(32),
        },
        IpAddr::V6(addr) => AbstractNode::Ipv6Prefix {
            addr,
            prefix_len: len.unwrap_or(128),
        },
    };
    match node {
        AbstractNode::Ipv4Prefix { prefix_len, .. } if prefix_len > 32 => Err(format!(
            "bad hop {s:?}: an IPv4 prefix length is at most 32"
        )),
        AbstractNode::Ipv6Prefix { prefix_len, .. } if prefix_len > 128 => Err(format!(
            "bad hop {s:?}: an IPv6 prefix length is at most 128"
        )),
        node => Ok(EroSubobject { loose, node }),
    }
}

/// A hop as `parse_hop` reads it (`/LEN` only when it is not a single address).
pub fn hop_text(h: &EroSubobject) -> String {
    let tilde = if h.loose { "~" } else { "" };
    match &h.node {
        AbstractNode::Ipv4Prefix { addr, prefix_len } if *prefix_len == 32 => {
            format!("{tilde}{addr}")
        }
        AbstractNode::Ipv6Prefix { addr, prefix_len } if *prefix_len == 128 => {
            format!("{tilde}{addr}")
        }
        AbstractNode::Ipv4Prefix { addr, prefix_len } => format!("{tilde}{addr}/{prefix_len}"),
        AbstractNode::Ipv6Prefix { addr, prefix_len } => format!("{tilde}{addr}/{prefix_len}"),
        AbstractNode::AutonomousSystem(n) => format!("{tilde}AS{n}"),
        AbstractNode::Other { subobject_type, .. } => format!("{tilde}type-{subobject_type}"),
    }
}

fn hop_family_is_v4(h: &EroSubobject) -> Option<bool> {
    match h.node {
        AbstractNode::Ipv4Prefix { .. } => Some(true),
        AbstractNode::Ipv6Prefix { .. } => Some(false),
        _ => None,
    }
}

/// `rsvp.lsp.add`: an LSP as the CLI and the configuration give it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LspReq {
    /// Its name (1 to 255 bytes).
    pub name: String,
    /// The tunnel end point.
    pub to: IpAddr,
    /// The head end's address (default: the address of the interface towards `to`).
    #[serde(default)]
    pub from: Option<IpAddr>,
    /// Explicit route, in `parse_hop` syntax; empty: follow routing.
    #[serde(default)]
    pub ero: Vec<String>,
    /// Bandwidth, bit/s.
    #[serde(default)]
    pub bandwidth_bps: u64,
    /// Setup priority 0 (highest) to 7.
    #[serde(default = "default_setup")]
    pub setup_priority: u8,
    /// Holding priority 0 (highest) to 7, not numerically above the setup priority.
    #[serde(default)]
    pub hold_priority: u8,
    /// Record the route and the labels (RECORD_ROUTE with label recording).
    #[serde(default = "yes")]
    pub record_route: bool,
    /// Signal the LSP in the GMPLS flavour (RFC 3473); absent: RFC 3209.
    #[serde(default)]
    pub gmpls: Option<GmplsReq>,
}

/// The GMPLS flavour of an LSP request: the Generalized LABEL_REQUEST's fields (RFC 3473 §2.1,
/// RFC 3471 §3.1.1), each defaulting to a packet LSP on packet-switch capable links (encoding
/// Packet, switching PSC-1, the G-PID of the tunnel end point's family).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct GmplsReq {
    /// LSP Encoding Type (1: Packet).
    #[serde(default)]
    pub encoding: Option<u8>,
    /// Switching Type (1 to 4: PSC-1 to PSC-4).
    #[serde(default)]
    pub switching: Option<u8>,
    /// Generalized PID (an Ethertype for packet LSPs).
    #[serde(default)]
    pub gpid: Option<u16>,
}

fn default_setup() -> u8 {
    DEFAULT_SETUP_PRIORITY
}

fn yes() -> bool {
    true
}

impl LspReq {
    /// The engine's LSP; an error names a bad hop or a family mismatch.
    pub fn spec(&self) -> Result<LspSpec, String> {
        let hops = self
            .ero
            .iter()
            .map(|h| parse_hop(h))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(h) = hops
            .iter()
            .find(|h| hop_family_is_v4(h) != Some(self.to.is_ipv4()))
        {
            return Err(format!(
                "hop {:?} is not of the address family of the end point {}",
                hop_text(h),
                self.to
            ));
        }
        if let Some(from) = self.from
            && from.is_ipv4() != self.to.is_ipv4()
        {
            return Err(format!(
                "from {from} and to {} are of different address families",
                self.to
            ));
        }
        Ok(LspSpec {
            name: self.name.clone(),
            to: self.to,
            from: self.from,
            ero: (!hops.is_empty()).then_some(ExplicitRoute { subobjects: hops }),
            bandwidth_bps: self.bandwidth_bps,
            setup_priority: self.setup_priority,
            hold_priority: self.hold_priority,
            record_route: self.record_route,
            label_recording: self.record_route,
            gmpls: self.gmpls.map(|g| pathwise_rsvp::engine::te::GmplsRequest {
                encoding: g.encoding,
                switching: g.switching,
                gpid: g.gpid,
            }),
        })
    }
}

/// `rsvp.lsp.del`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LspName {
    /// The LSP's name.
    pub name: String,
}

/// An RFC 3209 Routing Problem value (error code 24) in words.
pub fn routing_problem(value: u16) -> &'static str {
    error_code::routing::describe(value)
}

/// An ERROR_SPEC's code and value in words (RFC 2205 App. B, RFC 3209 §4.5, §4.7, and the
/// engine's API errors).
pub fn error_words(code: u8, value: u16) -> String {
    use error_code::*;
    match code {
        ROUTING_PROBLEM => format!("Routing problem: {}", routing_problem(value)),
        SERVICE_PREEMPTED => "Service preempted".into(),
        ADMISSION_CONTROL_FAILURE => match value & 0x00ff {
            admission::DELAY_BOUND => "Admission control failure: delay bound cannot be met".into(),
            admission::BANDWIDTH_UNAVAILABLE => {
                "Admission control failure: requested bandwidth unavailable".into()
            }
            admission::MTU_TOO_BIG => {
                "Admission control failure: MTU in flowspec larger than interface MTU".into()
            }
            _ => "Admission control failure".into(),
        },
        POLICY_CONTROL_FAILURE => "Policy control failure".into(),
        NO_PATH_INFORMATION => "No path information for this Resv".into(),
        NO_SENDER_INFORMATION => "No sender information for this Resv".into(),
        CONFLICTING_RESERVATION_STYLE => "Conflicting reservation style".into(),
        UNKNOWN_RESERVATION_STYLE => "Unknown reservation style".into(),
        CONFLICTING_DEST_PORTS => "Conflicting destination ports".into(),
        CONFLICTING_SENDER_PORTS => "Conflicting sender ports".into(),
        UNKNOWN_OBJECT_CLASS => "Unknown object class".into(),
        UNKNOWN_OBJECT_CTYPE => "Unknown object C-Type".into(),
        // Code 20 is "Reserved for API" (RFC 2205 App. B); the engine's head end uses value 1
        // when it gives an LSP up for want of a label (`Config::lsp_setup_timeout`).
        API_ERROR => match value {
            api::LSP_SETUP_TIMED_OUT => "LSP setup timed out".into(),
            _ => "API error".into(),
        },
        TRAFFIC_CONTROL_ERROR => "Traffic control error".into(),
        TRAFFIC_CONTROL_SYSTEM_ERROR => "Traffic control system error".into(),
        RSVP_SYSTEM_ERROR => "RSVP system error".into(),
        NOTIFY => "Notify".into(),
        other => format!("error code {other}"),
    }
}

/// Why the engine refused an LSP command, in words.
pub fn api_error(name: &str, e: &pathwise_rsvp::engine::api::ApiError) -> String {
    use pathwise_rsvp::engine::api::ApiError;
    match e {
        ApiError::Route(v) => format!(
            "LSP {name:?} cannot be routed: {} (RFC 3209 routing problem {v})",
            routing_problem(*v)
        ),
        ApiError::Unknown => format!("no LSP named {name:?}"),
        ApiError::NotLocal(a) => format!("LSP {name:?}: {a} is not an address of this node"),
        other => format!("LSP {name:?}: {other}"),
    }
}

fn role(r: LspRole) -> &'static str {
    match r {
        LspRole::HeadEnd => "head-end",
        LspRole::Transit => "transit",
        LspRole::Egress => "egress",
    }
}

fn error_json(e: &ErrorSpec) -> Value {
    json!({
        "code": e.code,
        "value": e.value,
        "node": e.node.to_string(),
        "meaning": error_words(e.code, e.value),
    })
}

fn next_hop_json(h: &NextHop, ifname: &dyn Fn(IfIndex) -> String) -> Value {
    json!({ "address": h.addr.to_string(), "interface": ifname(h.ifindex) })
}

/// A recorded route, first hop first: each address with the label recorded with it.
pub fn record_route_json(rro: &RecordRoute) -> Value {
    let mut hops: Vec<Value> = Vec::new();
    for s in &rro.subobjects {
        match s {
            RroSubobject::Ipv4 { addr, .. } => hops.push(json!({ "address": addr.to_string() })),
            RroSubobject::Ipv6 { addr, .. } => hops.push(json!({ "address": addr.to_string() })),
            RroSubobject::Label { .. } => {
                let label = s.label();
                match hops.last_mut() {
                    Some(h) if h.get("label").is_none() => {
                        h["label"] = json!(label);
                    }
                    _ => hops.push(json!({ "label": label })),
                }
            }
            RroSubobject::Other { subobject_type, .. } => {
                hops.push(json!({ "subobject_type": subobject_type }));
            }
        }
    }
    Value::Array(hops)
}

/// One LSP for `show lsp`; `ifname` names interfaces.
pub fn lsp_json(v: &LspView, ifname: &dyn Fn(IfIndex) -> String) -> Value {
    let (sender, lsp_id) = match v.sender {
        Some(FilterSpec::LspTunnelV4 { src, lsp_id }) => (Some(IpAddr::V4(src)), Some(lsp_id)),
        Some(FilterSpec::LspTunnelV6 { src, lsp_id }) => (Some(IpAddr::V6(src)), Some(lsp_id)),
        Some(other) => (Some(other.src()), None),
        None => (None, None),
    };
    let (status, error) = match &v.status {
        LspStatus::Up => ("up", Value::Null),
        LspStatus::Signalling => ("signalling", Value::Null),
        LspStatus::Failed(e) => ("failed", error_json(e)),
    };
    json!({
        "name": v.name,
        "role": role(v.role),
        "status": status,
        "error": error,
        "to": v.session.dest.to_string(),
        "tunnel_id": v.session.dst_port,
        "extended_tunnel_id": v.session.extended_tunnel_id.map(|a| a.to_string()),
        "from": sender.map(|a| a.to_string()),
        "lsp_id": lsp_id,
        "in_label": v.in_label,
        "out_label": v.out.map(|(l, _)| l),
        "next_hop": v.out.map(|(_, h)| next_hop_json(&h, ifname)),
        "ero": v.ero.as_ref().map(|e| e.subobjects.iter().map(hop_text).collect::<Vec<_>>()),
        "record_route": v.record_route.as_ref().map(record_route_json),
        "bandwidth_bps": v.bandwidth_bps,
        "setup_priority": v.priorities.0,
        "hold_priority": v.priorities.1,
        // RFC 3473 §2.1: the Generalized LABEL_REQUEST of a GMPLS LSP; its G-PID is the L3PID.
        "gmpls": v.gmpls.map(|g| json!({"encoding": g.encoding, "switching": g.switching})),
        "l3pid": v.l3pid,
    })
}

/// The LFIB for `show labels`: incoming-label entries and ingress bindings.
pub fn labels_json(lfib: &MemoryLfib, in_use: usize, ifname: &dyn Fn(IfIndex) -> String) -> Value {
    json!({
        "entries": lfib.entries().map(|e| json!({
            "in_label": e.in_label,
            "op": match e.op { LabelOp::Swap(_) => "swap", LabelOp::Pop => "pop" },
            "out_label": match e.op { LabelOp::Swap(l) => Some(l), LabelOp::Pop => None },
            "next_hop": next_hop_json(&e.next_hop, ifname),
        })).collect::<Vec<_>>(),
        "ingress": lfib.ftns().map(|f| json!({
            "to": f.dest.to_string(),
            "tunnel_id": f.tunnel_id,
            "push": f.push,
            "next_hop": next_hop_json(&f.next_hop, ifname),
        })).collect::<Vec<_>>(),
        "labels_in_use": in_use,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hops_parse_and_print_back() {
        for s in [
            "10.0.0.1",
            "~10.0.0.5",
            "~10.1.0.0/16",
            "2001:db8::1",
            "~2001:db8::/32",
        ] {
            assert_eq!(hop_text(&parse_hop(s).unwrap()), s);
        }
        assert!(parse_hop("~10.0.0.5").unwrap().loose);
        assert!(!parse_hop("10.0.0.1/32").unwrap().loose);
        for bad in [
            "",
            "~",
            "10.0.0",
            "10.0.0.1/33",
            "::1/129",
            "10.0.0.1/x",
            "host",
        ] {
            let e = parse_hop(bad).unwrap_err();
            assert!(e.contains("hop"), "{bad}: {e}");
        }
    }

    #[test]
    fn requests_become_specs() {
        let req = LspReq {
            name: "t1".into(),
            to: "10.0.0.9".parse().unwrap(),
            from: None,
            ero: vec!["10.0.0.1".into(), "~10.0.0.9".into()],
            bandwidth_bps: 10_000_000,
            setup_priority: 7,
            hold_priority: 0,
            record_route: true,
            gmpls: None,
        };
        let s = req.spec().unwrap();
        assert_eq!(s.ero.unwrap().subobjects.len(), 2);
        assert!(s.label_recording);
        assert!(s.gmpls.is_none());
        // RFC 3473 §2.1: the GMPLS flavour's fields, unset ones left to the engine's defaults.
        let g: LspReq = serde_json::from_value(
            json!({"name": "g", "to": "10.0.0.9", "gmpls": {"switching": 2, "gpid": 2048}}),
        )
        .unwrap();
        let g = g.spec().unwrap().gmpls.unwrap();
        assert_eq!(
            (g.encoding, g.switching, g.gpid),
            (None, Some(2), Some(2048))
        );
        assert!(
            serde_json::from_value::<LspReq>(
                json!({"name": "g", "to": "10.0.0.9", "gmpls": {"lambda": 1}})
            )
            .is_err()
        );
        let v6 = LspReq {
            ero: vec!["2001:db8::1".into()],
            ..req.clone()
        };
        assert!(v6.spec().unwrap_err().contains("address family"));
        let defaults: LspReq =
            serde_json::from_value(json!({"name": "x", "to": "10.0.0.9"})).unwrap();
        assert_eq!(
            (
                defaults.setup_priority,
                defaults.hold_priority,
                defaults.record_route
            ),
            (7, 0, true)
        );
    }

    #[test]
    fn routing_problems_in_words() {
        assert_eq!(routing_problem(2), "Bad strict node");
        assert_eq!(routing_problem(9), "MPLS label allocation failure");
        assert_eq!(
            error_words(24, 5),
            "Routing problem: No route available toward destination"
        );
        assert_eq!(error_words(12, 0), "Service preempted");
        assert_eq!(
            error_words(error_code::API_ERROR, error_code::api::LSP_SETUP_TIMED_OUT),
            "LSP setup timed out"
        );
        assert_eq!(error_words(20, 1), "LSP setup timed out");
        assert_eq!(error_words(20, 7), "API error");
    }

    #[test]
    fn a_timed_out_lsp_shows_failed_with_its_error_in_words() {
        let head = "10.0.0.1".parse().unwrap();
        let error = ErrorSpec {
            node: head,
            flags: 0,
            code: error_code::API_ERROR,
            value: error_code::api::LSP_SETUP_TIMED_OUT,
        };
        let v = LspView {
            name: "to-h2".into(),
            role: LspRole::HeadEnd,
            session: pathwise_rsvp::wire::Session::lsp_tunnel("10.0.0.9".parse().unwrap(), 1, head),
            sender: Some(FilterSpec::LspTunnelV4 {
                src: "10.0.0.1".parse().unwrap(),
                lsp_id: 2,
            }),
            status: LspStatus::Failed(error),
            in_label: None,
            out: None,
            ero: None,
            record_route: None,
            bandwidth_bps: 0,
            priorities: (7, 0),
            gmpls: None,
            l3pid: 0x0800,
        };
        let j = lsp_json(&v, &|i| i.0.to_string());
        assert_eq!((&j["gmpls"], &j["l3pid"]), (&Value::Null, &json!(0x0800)));
        assert_eq!(j["status"], "failed");
        assert_eq!(
            j["error"],
            json!({"code": 20, "value": 1, "node": "10.0.0.1", "meaning": "LSP setup timed out"})
        );
    }
}
