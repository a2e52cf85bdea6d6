//! Fixtures for tests of this crate and of the programs built on it (feature `testing`): one
//! transit router with an upstream and a downstream interface, a route through it, its
//! sessions, senders, Path and Resv messages and their bytes.

use crate::few::Few;
use crate::wire::{
    Adspec, FilterSpec, FlowDescriptor, FlowSpec, Message, Path, PathTear, Resv, ResvTear, RsvpHop,
    SenderDescriptor, SenderTspec, Session, Style, StyleKind, TimeValues, TokenBucket,
};
use crate::{Config, InterfaceConfig};
use pathwise_core::io::{IPPROTO_RSVP, IfIndex, Received, Transport};
use pathwise_core::route::{Route, RouteChange};
use pathwise_core::time::Duration;
use std::net::{IpAddr, Ipv4Addr};

/// The router's upstream interface (towards the senders).
pub const UP: IfIndex = IfIndex(1);
/// Its downstream interface (towards 20.0.0.0/8, the receivers).
pub const DOWN: IfIndex = IfIndex(2);
/// The previous hop, on [`UP`].
pub const PHOP: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 1);
/// The next hop, on [`DOWN`].
pub const NHOP: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 2);
/// Where every [`session`] goes.
pub const DEST: Ipv4Addr = Ipv4Addr::new(20, 0, 0, 1);

/// The router: 10 Mbit/s links, `reservable_bps` reservable on each.
pub fn router_config(reservable_bps: u64) -> Config {
    let iface = |ifindex, a: [u8; 4]| InterfaceConfig {
        ifindex,
        addrs: vec![IpAddr::V4(a.into())],
        bandwidth_bps: 10_000_000,
        reservable_bps,
        mtu: 1500,
        latency: Duration::from_micros(50),
        integrity: Default::default(),
        hello: None,
    };
    Config {
        interfaces: vec![iface(UP, [10, 0, 1, 2]), iface(DOWN, [10, 0, 2, 1])],
        ..Config::default()
    }
}

/// 20.0.0.0/8 through [`NHOP`] on [`DOWN`].
pub fn route() -> RouteChange {
    RouteChange::Add(Route {
        prefix: "20.0.0.0/8".parse().expect("a prefix"),
        next_hop: Some(NHOP.into()),
        ifindex: DOWN,
        metric: 1,
    })
}

/// UDP to [`DEST`], port `port`.
pub fn session(port: u16) -> Session {
    Session::ip(IpAddr::V4(DEST), 17, port)
}

/// The sender 30.0.0.1, source port `port`.
pub fn sender(port: u16) -> FilterSpec {
    FilterSpec::ip(IpAddr::V4(Ipv4Addr::new(30, 0, 0, 1)), port)
}

/// A token bucket of `rate` bytes/s, 1000-byte bucket, no peak.
pub fn tb(rate: f32) -> TokenBucket {
    TokenBucket {
        rate,
        bucket: 1000.0,
        peak: f32::INFINITY,
        min_policed: 64,
        max_packet: 1500,
    }
}

/// A Path from [`PHOP`] for `s` from sender `f` (1000 bytes/s).
pub fn path(s: Session, f: FilterSpec) -> Message {
    Message::Path(Path {
        integrity: None,
        session: s,
        hop: RsvpHop::new(PHOP.into(), 7),
        time_values: TimeValues { refresh_ms: 30_000 },
        explicit_route: None,
        label_request: None,
        session_attribute: None,
        policy: Vec::new(),
        sender: SenderDescriptor {
            template: f,
            tspec: SenderTspec(tb(1000.0)),
            adspec: Some(Adspec::new_at_sender(true, true)),
            record_route: None,
        },
        forward: Vec::new(),
    })
}

/// A Resv from [`NHOP`] for `s` in `style`.
pub fn resv(s: Session, style: StyleKind, flows: impl Into<Few<FlowDescriptor>>) -> Message {
    Message::Resv(Resv {
        integrity: None,
        session: s,
        hop: RsvpHop::new(NHOP.into(), DOWN.0),
        time_values: TimeValues { refresh_ms: 30_000 },
        confirm: None,
        scope: None,
        policy: Vec::new(),
        style: Style {
            flags: 0,
            kind: style,
        },
        flows: flows.into(),
        forward: Vec::new(),
    })
}

/// One FF flow descriptor: `rate` bytes/s controlled load for sender `f`.
pub fn ff(rate: f32, f: FilterSpec) -> Few<FlowDescriptor> {
    Few::One(FlowDescriptor {
        flowspec: Some(FlowSpec::ControlledLoad(tb(rate))),
        filters: Few::One(f),
        te: Vec::new(),
    })
}

/// The previous hop's PathTear of [`sender`]`(1)` in `s`.
pub fn path_tear(s: Session) -> Message {
    Message::PathTear(PathTear {
        integrity: None,
        session: s,
        hop: RsvpHop::new(PHOP.into(), 7),
        sender_template: Some(sender(1)),
        sender_tspec: None,
        forward: Vec::new(),
    })
}

/// The next hop's FF ResvTear of [`sender`]`(1)`'s reservation in `s`.
pub fn resv_tear(s: Session) -> Message {
    Message::ResvTear(ResvTear {
        integrity: None,
        session: s,
        hop: RsvpHop::new(NHOP.into(), DOWN.0),
        scope: None,
        style: Style {
            flags: 0,
            kind: StyleKind::Ff,
        },
        flows: ff(10.0, sender(1)),
        forward: Vec::new(),
    })
}

/// `m` on the wire, sent with TTL `send_ttl`.
pub fn bytes(m: &Message, send_ttl: u8) -> Vec<u8> {
    let mut v = Vec::new();
    m.emit(send_ttl, &mut v);
    v
}

/// `payload` as received from `from` on `ifindex` with TTL `ttl`, addressed to [`DEST`].
pub fn received(from: Ipv4Addr, ifindex: IfIndex, ttl: u8, payload: &[u8]) -> Received<'_> {
    Received {
        src: from.into(),
        dst: IpAddr::V4(DEST),
        ifindex,
        transport: Transport::Raw(IPPROTO_RSVP),
        router_alert: Some(0),
        ttl,
        payload,
    }
}
