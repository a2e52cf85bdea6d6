//! The basic data types of RFC 7285 §10: PID names, resource IDs, typed endpoint addresses,
//! cost modes, metrics and types, and cost constraints (§11.3.2.3).

use serde_json::{Value, json};
use std::net::IpAddr;

/// Whether `s` is a PIDName (§10.1) or a ResourceID (§10.2, same format): at most 64
/// characters of US-ASCII alphanumerics, `-`, `:`, `@`, `_` (the `.` is reserved).
pub fn is_pid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b':' | b'@' | b'_'))
}

/// Whether `s` is a valid version tag string (§10.3): 1 to 64 characters within U+0021–U+007E.
pub fn is_vtag(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

/// Parse a TypedEndpointAddr (§10.4.1): `ipv4:192.0.2.1` or `ipv6:2001:db8::1`. The address
/// must be of the named type.
pub fn parse_typed_addr(s: &str) -> Option<IpAddr> {
    let (kind, addr) = s.split_once(':')?;
    match (kind, addr.parse::<IpAddr>().ok()?) {
        ("ipv4", a @ IpAddr::V4(_)) => Some(a),
        ("ipv6", a @ IpAddr::V6(_)) => Some(a),
        _ => None,
    }
}

/// A TypedEndpointAddr for `addr` (§10.4.3: IPv6 in RFC 5952 form, which `Display` writes).
pub fn typed_addr(addr: IpAddr) -> String {
    match addr {
        IpAddr::V4(a) => format!("ipv4:{a}"),
        IpAddr::V6(a) => format!("ipv6:{a}"),
    }
}

/// The address type of `addr` (§10.4.2).
pub fn address_type(addr: IpAddr) -> &'static str {
    match addr {
        IpAddr::V4(_) => "ipv4",
        IpAddr::V6(_) => "ipv6",
    }
}

/// A cost mode (§6.1.2, §10.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CostMode {
    /// Costs as numbers (§6.1.2.1).
    Numerical,
    /// Costs as ranks: non-negative integers, lower preferred, relative to the whole map
    /// (§6.1.2.2, §6.2).
    Ordinal,
}

impl CostMode {
    /// Its name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            CostMode::Numerical => "numerical",
            CostMode::Ordinal => "ordinal",
        }
    }

    /// From its name on the wire.
    pub fn parse(s: &str) -> Option<CostMode> {
        match s {
            "numerical" => Some(CostMode::Numerical),
            "ordinal" => Some(CostMode::Ordinal),
            _ => None,
        }
    }
}

/// The cost metrics this server offers (§6.1.1, §14.2's registry).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CostMetric {
    /// `routingcost` (§6.1.1.1): the oracle's ranking cost, the number Proxidor sorts by.
    RoutingCost,
    /// `hopcount`: internal router hops of the path (to the exit for an external destination).
    HopCount,
}

impl CostMetric {
    /// Its name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            CostMetric::RoutingCost => "routingcost",
            CostMetric::HopCount => "hopcount",
        }
    }

    /// From its name on the wire.
    pub fn parse(s: &str) -> Option<CostMetric> {
        match s {
            "routingcost" => Some(CostMetric::RoutingCost),
            "hopcount" => Some(CostMetric::HopCount),
            _ => None,
        }
    }
}

/// A cost type (§10.7): metric and mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CostType {
    /// The metric.
    pub metric: CostMetric,
    /// The mode.
    pub mode: CostMode,
}

impl CostType {
    /// The four cost types offered, with their IRD names (§9.2.2 `cost-types`).
    pub const ALL: [(&'static str, CostType); 4] = [
        (
            "num-routingcost",
            CostType {
                metric: CostMetric::RoutingCost,
                mode: CostMode::Numerical,
            },
        ),
        (
            "ord-routingcost",
            CostType {
                metric: CostMetric::RoutingCost,
                mode: CostMode::Ordinal,
            },
        ),
        (
            "num-hopcount",
            CostType {
                metric: CostMetric::HopCount,
                mode: CostMode::Numerical,
            },
        ),
        (
            "ord-hopcount",
            CostType {
                metric: CostMetric::HopCount,
                mode: CostMode::Ordinal,
            },
        ),
    ];

    /// Its IRD name.
    pub fn name(self) -> &'static str {
        CostType::ALL
            .iter()
            .find(|(_, t)| *t == self)
            .map_or("num-routingcost", |(n, _)| n)
    }

    /// As a JSON CostType object.
    pub fn to_json(self) -> Value {
        json!({ "cost-mode": self.mode.as_str(), "cost-metric": self.metric.as_str() })
    }
}

/// A cost constraint (§11.3.2.3): an operator and a target value, ANDed with the others.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Constraint {
    /// `gt`, `lt`, `ge`, `le` or `eq`.
    pub op: ConstraintOp,
    /// The target cost, in the units of the requested metric (and mode).
    pub value: f64,
}

/// A constraint's operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConstraintOp {
    /// Greater than.
    Gt,
    /// Less than.
    Lt,
    /// Greater than or equal to.
    Ge,
    /// Less than or equal to.
    Le,
    /// Equal to.
    Eq,
}

impl Constraint {
    /// Parse `"le 10"`: an operator and a number separated by whitespace.
    pub fn parse(s: &str) -> Option<Constraint> {
        let mut it = s.split_whitespace();
        let op = match it.next()? {
            "gt" => ConstraintOp::Gt,
            "lt" => ConstraintOp::Lt,
            "ge" => ConstraintOp::Ge,
            "le" => ConstraintOp::Le,
            "eq" => ConstraintOp::Eq,
            _ => return None,
        };
        let value: f64 = it.next()?.parse().ok()?;
        if it.next().is_some() || !value.is_finite() {
            return None;
        }
        Some(Constraint { op, value })
    }

    /// Whether `cost` meets it.
    pub fn holds(&self, cost: f64) -> bool {
        match self.op {
            ConstraintOp::Gt => cost > self.value,
            ConstraintOp::Lt => cost < self.value,
            ConstraintOp::Ge => cost >= self.value,
            ConstraintOp::Le => cost <= self.value,
            ConstraintOp::Eq => cost == self.value,
        }
    }
}

/// FNV-1a, 128 bits: a stable content hash for version tags (§10.3 recommends "a hash of the
/// data contents"; this one is the same on every platform and run).
pub(crate) fn fnv1a_128(bytes: &[u8]) -> u128 {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013b;
    let mut h = OFFSET;
    for &b in bytes {
        h ^= u128::from(b);
        h = h.wrapping_mul(PRIME);
    }
    h
}
