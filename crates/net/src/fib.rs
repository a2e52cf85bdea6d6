//! A mirror of the kernel's links, addresses and main-table unicast routes, kept current over
//! rtnetlink without a syscall per lookup (ARCHITECTURE.md, "Route lookups").
//!
//! [`FibMirror::open`] subscribes to the link, IPv4/IPv6 address and IPv4/IPv6 route multicast
//! groups *before* dumping the current state over a second, short-lived socket, so no change
//! falls between the dump and the notifications; replaying notifications that the dump already
//! reflected changes nothing (the mirror reports only differences). If the kernel drops
//! notifications (`ENOBUFS` on the subscription), the next [`FibMirror::drain`] re-dumps and
//! reports the difference, so the consumer's view never silently diverges.

use crate::mirror::{LinkInfo, RouteInfo, Snapshot, State, Update};
use ipnet::IpNet;
use netlink_packet_core::{
    NLM_F_DUMP, NLM_F_DUMP_INTR, NLM_F_REPLACE, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage,
    NetlinkPayload,
};
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteFlags, RouteHeader, RouteMessage, RouteType, RouteVia,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_ROUTE};
use pathwise_core::io::IfIndex;
use pathwise_core::route::{Route, RouteChange};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::time::Duration;

/// A change to the node's interfaces, addresses or routes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetEvent {
    /// The best main-table unicast route for a prefix changed (`Add`) or the prefix has no
    /// route left (`Remove`). Only [`RouteChange::Add`] and [`RouteChange::Remove`] occur.
    Route(RouteChange),
    /// A link appeared or changed name, state or MTU.
    Link {
        /// Kernel ifindex.
        ifindex: IfIndex,
        /// Interface name.
        name: String,
        /// Administratively up *and* running (carrier, operational state up).
        up: bool,
        /// MTU in bytes.
        mtu: u32,
    },
    /// A link was deleted.
    LinkRemoved {
        /// Kernel ifindex it had.
        ifindex: IfIndex,
        /// Interface name it had.
        name: String,
    },
    /// An address was added to or removed from an interface.
    Address {
        /// The interface.
        ifindex: IfIndex,
        /// The address with its prefix length.
        addr: IpNet,
        /// `true` when added, `false` when removed.
        added: bool,
    },
}

/// One interface with its addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterfaceInfo {
    /// Kernel ifindex.
    pub ifindex: IfIndex,
    /// Interface name.
    pub name: String,
    /// IPv4 and IPv6 addresses with prefix lengths.
    pub addrs: Vec<IpNet>,
    /// MTU in bytes.
    pub mtu: u32,
    /// Administratively up and running.
    pub up: bool,
}

/// Receive buffer for netlink: dumps come in skbs of at most 32 KiB.
const RECV_BUF: usize = 64 * 1024;
/// Bound on every blocking wait for a dump answer.
const DUMP_TIMEOUT: Duration = Duration::from_secs(5);

/// The kernel's links, addresses and main-table unicast routes, mirrored over rtnetlink.
#[derive(Debug)]
pub struct FibMirror {
    sock: Socket,
    buf: Vec<u8>,
    state: State,
    pending: Vec<NetEvent>,
    resyncs: u64,
    decode_errors: u64,
    /// The last read failed: the events it held back wait in `pending`.
    failed: bool,
}

impl FibMirror {
    /// Subscribes to link, address and route changes and dumps the current state, which the
    /// first [`FibMirror::drain`] reports. Works unprivileged.
    pub fn open() -> io::Result<FibMirror> {
        let mut sock = Socket::new(NETLINK_ROUTE)?;
        sock.bind_auto()?;
        for group in [
            libc::RTNLGRP_LINK,
            libc::RTNLGRP_IPV4_IFADDR,
            libc::RTNLGRP_IPV6_IFADDR,
            libc::RTNLGRP_IPV4_ROUTE,
            libc::RTNLGRP_IPV6_ROUTE,
        ] {
            sock.add_membership(group)?;
        }
        // Best effort: a larger queue makes overruns (and re-dumps) rarer; capped by rmem_max.
        let _ = sock.set_rx_buf_sz(4 << 20);
        sock.set_non_blocking(true)?;
        let mut mirror = FibMirror {
            sock,
            buf: Vec::with_capacity(RECV_BUF),
            state: State::default(),
            pending: Vec::new(),
            resyncs: 0,
            decode_errors: 0,
            failed: false,
        };
        let snap = snapshot(true)?;
        mirror.state.resync(snap, &mut mirror.pending);
        Ok(mirror)
    }

    /// Reads every pending notification without blocking and returns the resulting changes
    /// (the initial state on the first call). On an overrun it re-dumps and reports the
    /// difference.
    pub fn drain(&mut self) -> io::Result<Vec<NetEvent>> {
        let got = self.read_all();
        self.failed = got.is_err();
        got
    }

    /// [`FibMirror::drain`] when poll(2) found the socket `readable`, or at once, without
    /// waiting for it, when the last read failed and held events back; otherwise nothing (an
    /// idle routing feed costs no system call).
    pub fn drain_ready(&mut self, readable: bool) -> io::Result<Vec<NetEvent>> {
        if readable || self.failed {
            self.drain()
        } else {
            Ok(Vec::new())
        }
    }

    fn read_all(&mut self) -> io::Result<Vec<NetEvent>> {
        let mut out = std::mem::take(&mut self.pending);
        let mut overrun = false;
        loop {
            self.buf.clear();
            self.buf.reserve(RECV_BUF);
            match self.sock.recv(&mut self.buf, libc::MSG_TRUNC) {
                Ok(n) if n > self.buf.capacity() => overrun = true,
                Ok(_) => {
                    let state = &mut self.state;
                    self.decode_errors += for_each_message(&self.buf, |header, payload| {
                        if let NetlinkPayload::InnerMessage(msg) = payload
                            && let Some(update) = decode(msg, header.flags)
                        {
                            state.apply(update, &mut out);
                        }
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => overrun = true,
                Err(e) => {
                    self.pending = out;
                    return Err(e);
                }
            }
        }
        if overrun {
            match snapshot(true) {
                Ok(snap) => {
                    self.state.resync(snap, &mut out);
                    self.resyncs += 1;
                }
                Err(e) => {
                    self.pending = out;
                    return Err(e);
                }
            }
        }
        Ok(out)
    }

    /// Interfaces and addresses as of the last [`FibMirror::drain`].
    pub fn interfaces(&self) -> Vec<InterfaceInfo> {
        self.state.interfaces()
    }

    /// The best route of every prefix as of the last [`FibMirror::drain`].
    pub fn routes(&self) -> Vec<Route> {
        self.state.routes()
    }

    /// How many times lost notifications forced a re-dump.
    pub fn resyncs(&self) -> u64 {
        self.resyncs
    }

    /// Netlink messages that could not be decoded (skipped).
    pub fn decode_errors(&self) -> u64 {
        self.decode_errors
    }
}

/// The subscription socket: readable when notifications are pending.
impl AsFd for FibMirror {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }
}

impl AsRawFd for FibMirror {
    fn as_raw_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}

/// The interfaces of this network namespace with their addresses, by ifindex (one dump).
pub fn interfaces() -> io::Result<Vec<InterfaceInfo>> {
    let mut state = State::default();
    state.resync(snapshot(false)?, &mut Vec::new());
    Ok(state.interfaces())
}

/// The ifindex of the interface called `name`, if there is one.
pub fn ifindex_by_name(name: &str) -> io::Result<Option<IfIndex>> {
    Ok(interfaces()?
        .into_iter()
        .find(|i| i.name == name)
        .map(|i| i.ifindex))
}

/// Dumps links, addresses and (with `routes`) routes, retrying dumps the kernel marks as
/// interrupted by concurrent changes.
fn snapshot(routes: bool) -> io::Result<Snapshot> {
    let mut sock = Socket::new(NETLINK_ROUTE)?;
    sock.bind_auto()?;
    sock.connect(&SocketAddr::new(0, 0))?;
    socket2::SockRef::from(&sock).set_read_timeout(Some(DUMP_TIMEOUT))?;
    let mut buf = Vec::with_capacity(RECV_BUF);
    let mut snap = Snapshot::default();
    let mut requests = vec![
        RouteNetlinkMessage::GetLink(LinkMessage::default()),
        RouteNetlinkMessage::GetAddress(AddressMessage::default()),
    ];
    if routes {
        requests.push(RouteNetlinkMessage::GetRoute(RouteMessage::default()));
    }
    for (seq, req) in (1u32..).zip(requests) {
        let mut attempts = 0;
        loop {
            let mut part = Vec::new();
            let interrupted = dump(&sock, req.clone(), seq * 16 + attempts, &mut buf, |m| {
                if let Some(u) = decode(m, 0) {
                    part.push(u);
                }
            })?;
            attempts += 1;
            if interrupted && attempts < 5 {
                continue;
            }
            for u in part {
                match u {
                    Update::NewLink(l) => snap.links.push(l),
                    Update::NewAddr(i, a) => snap.addrs.push((i, a)),
                    Update::NewRoute { route, .. } => snap.routes.push(route),
                    _ => {}
                }
            }
            break;
        }
    }
    Ok(snap)
}

/// Sends one dump request and feeds every answer to `f`; returns whether the kernel flagged
/// the dump as interrupted (`NLM_F_DUMP_INTR`).
fn dump(
    sock: &Socket,
    req: RouteNetlinkMessage,
    seq: u32,
    buf: &mut Vec<u8>,
    mut f: impl FnMut(RouteNetlinkMessage),
) -> io::Result<bool> {
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | NLM_F_DUMP;
    header.sequence_number = seq;
    let mut msg = NetlinkMessage::new(header, NetlinkPayload::from(req));
    msg.finalize();
    let mut bytes = vec![0; msg.buffer_len()];
    msg.serialize(&mut bytes);
    sock.send(&bytes, 0)?;
    let mut interrupted = false;
    loop {
        buf.clear();
        buf.reserve(RECV_BUF);
        let n = sock.recv(buf, libc::MSG_TRUNC)?;
        if n > buf.capacity() {
            return Err(io::Error::other(
                "netlink dump message larger than the receive buffer",
            ));
        }
        let mut done = None;
        for_each_message(buf, |h, payload| {
            if h.sequence_number != seq || done.is_some() {
                return;
            }
            interrupted |= h.flags & NLM_F_DUMP_INTR != 0;
            match payload {
                NetlinkPayload::InnerMessage(m) => f(m),
                NetlinkPayload::Done(_) => done = Some(Ok(())),
                NetlinkPayload::Error(e) if e.code.is_some() => done = Some(Err(e.to_io())),
                _ => {}
            }
        });
        match done {
            Some(Ok(())) => return Ok(interrupted),
            Some(Err(e)) => return Err(e),
            None => {}
        }
    }
}

/// Calls `f` for every well-formed message in a netlink datagram; returns how many messages
/// failed to decode.
fn for_each_message(
    bytes: &[u8],
    mut f: impl FnMut(&NetlinkHeader, NetlinkPayload<RouteNetlinkMessage>),
) -> u64 {
    let mut errors = 0;
    let mut off = 0;
    while let Some(word) = bytes.get(off..off + 4) {
        let len = u32::from_ne_bytes([word[0], word[1], word[2], word[3]]) as usize;
        let Some(one) = bytes.get(off..off + len).filter(|_| len >= 16) else {
            errors += 1;
            break;
        };
        match NetlinkMessage::<RouteNetlinkMessage>::deserialize(one) {
            Ok(m) => f(&m.header, m.payload),
            Err(_) => errors += 1,
        }
        off += (len + 3) & !3;
    }
    errors
}

/// The update a kernel message means for the mirror, if any.
fn decode(msg: RouteNetlinkMessage, nl_flags: u16) -> Option<Update> {
    match msg {
        // Bridge (AF_BRIDGE) link messages describe bridge ports, not links coming and going.
        RouteNetlinkMessage::NewLink(m) if m.header.interface_family == AddressFamily::Unspec => {
            Some(Update::NewLink(link_info(&m)))
        }
        RouteNetlinkMessage::DelLink(m) if m.header.interface_family == AddressFamily::Unspec => {
            Some(Update::DelLink(m.header.index))
        }
        RouteNetlinkMessage::NewAddress(m) => addr_info(&m).map(|(i, a)| Update::NewAddr(i, a)),
        RouteNetlinkMessage::DelAddress(m) => addr_info(&m).map(|(i, a)| Update::DelAddr(i, a)),
        RouteNetlinkMessage::NewRoute(m) => route_info(&m).map(|route| Update::NewRoute {
            route,
            replace: nl_flags & NLM_F_REPLACE != 0,
        }),
        RouteNetlinkMessage::DelRoute(m) => route_info(&m).map(Update::DelRoute),
        _ => None,
    }
}

fn link_info(m: &LinkMessage) -> LinkInfo {
    let mut name = None;
    let mut mtu = 0;
    for a in &m.attributes {
        match a {
            LinkAttribute::IfName(n) => name = Some(n.clone()),
            LinkAttribute::Mtu(v) => mtu = *v,
            _ => {}
        }
    }
    let admin_up = m.header.flags.contains(LinkFlags::Up);
    LinkInfo {
        ifindex: m.header.index,
        name: name.unwrap_or_else(|| format!("if{}", m.header.index)),
        admin_up,
        up: admin_up && m.header.flags.contains(LinkFlags::Running),
        mtu,
    }
}

fn addr_info(m: &AddressMessage) -> Option<(u32, IpNet)> {
    let (mut local, mut address) = (None, None);
    for a in &m.attributes {
        match a {
            AddressAttribute::Local(ip) => local = Some(*ip),
            AddressAttribute::Address(ip) => address = Some(*ip),
            _ => {}
        }
    }
    // IFA_LOCAL is the interface's own address; IFA_ADDRESS is the peer on point-to-point links.
    let ip = local.or(address)?;
    let net = IpNet::new(ip, m.header.prefix_len).ok()?;
    Some((m.header.index, net))
}

fn route_addr(a: &RouteAddress) -> Option<IpAddr> {
    match a {
        RouteAddress::Inet(v4) => Some(IpAddr::V4(*v4)),
        RouteAddress::Inet6(v6) => Some(IpAddr::V6(*v6)),
        _ => None,
    }
}

/// A main-table unicast route with an outgoing interface (multipath: its first next hop).
fn route_info(m: &RouteMessage) -> Option<RouteInfo> {
    let h: &RouteHeader = &m.header;
    let unspecified = match h.address_family {
        AddressFamily::Inet => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        AddressFamily::Inet6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        _ => return None,
    };
    if h.kind != RouteType::Unicast
        || h.flags.contains(RouteFlags::Cloned)
        || h.source_prefix_length != 0
    {
        return None;
    }
    let mut table = u32::from(h.table);
    let (mut dst, mut gateway, mut oif, mut metric, mut first_hop) = (None, None, None, 0, None);
    for a in &m.attributes {
        match a {
            RouteAttribute::Table(t) => table = *t,
            RouteAttribute::Destination(d) => dst = route_addr(d),
            RouteAttribute::Gateway(g) => gateway = route_addr(g),
            RouteAttribute::Via(RouteVia::Inet(g)) => gateway = Some(IpAddr::V4(*g)),
            RouteAttribute::Via(RouteVia::Inet6(g)) => gateway = Some(IpAddr::V6(*g)),
            RouteAttribute::Oif(i) => oif = Some(*i),
            RouteAttribute::Priority(p) => metric = *p,
            RouteAttribute::MultiPath(hops) => first_hop = hops.first(),
            _ => {}
        }
    }
    if table != u32::from(RouteHeader::RT_TABLE_MAIN) {
        return None;
    }
    if let (None, Some(hop)) = (oif, first_hop) {
        oif = Some(hop.interface_index);
        for a in &hop.attributes {
            match a {
                RouteAttribute::Gateway(g) => gateway = route_addr(g),
                RouteAttribute::Via(RouteVia::Inet6(g)) => gateway = Some(IpAddr::V6(*g)),
                _ => {}
            }
        }
    }
    let prefix = IpNet::new(dst.unwrap_or(unspecified), h.destination_prefix_length)
        .ok()?
        .trunc();
    Some(RouteInfo {
        prefix,
        tos: h.tos,
        metric,
        ifindex: oif?,
        gateway,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_route::route::RouteProtocol;

    fn route_msg(family: AddressFamily, dst: RouteAddress, len: u8) -> RouteMessage {
        let mut m = RouteMessage::default();
        m.header.address_family = family;
        m.header.destination_prefix_length = len;
        m.header.table = RouteHeader::RT_TABLE_MAIN;
        m.header.kind = RouteType::Unicast;
        m.header.protocol = RouteProtocol::Static;
        m.attributes = vec![RouteAttribute::Destination(dst), RouteAttribute::Oif(3)];
        m
    }

    #[test]
    fn decodes_main_table_unicast_routes_only() {
        let mut m = route_msg(
            AddressFamily::Inet,
            RouteAddress::Inet(Ipv4Addr::new(10, 9, 1, 7)),
            16,
        );
        m.attributes
            .push(RouteAttribute::Gateway(RouteAddress::Inet(Ipv4Addr::new(
                10, 0, 0, 1,
            ))));
        m.attributes.push(RouteAttribute::Priority(7));
        let r = route_info(&m).unwrap();
        assert_eq!(
            r.prefix,
            "10.9.0.0/16".parse::<IpNet>().unwrap(),
            "host bits cleared"
        );
        assert_eq!((r.ifindex, r.metric), (3, 7));
        assert_eq!(r.gateway, Some("10.0.0.1".parse().unwrap()));
        let mut local = m.clone();
        local.header.table = 255;
        assert!(route_info(&local).is_none());
        let mut big_table = m.clone();
        big_table.attributes.push(RouteAttribute::Table(1000));
        assert!(route_info(&big_table).is_none());
        let mut blackhole = m.clone();
        blackhole.header.kind = RouteType::BlackHole;
        assert!(route_info(&blackhole).is_none());
        let mut no_oif = m.clone();
        no_oif
            .attributes
            .retain(|a| !matches!(a, RouteAttribute::Oif(_)));
        assert!(route_info(&no_oif).is_none());
        // Default route: no destination attribute.
        let mut dflt = route_msg(
            AddressFamily::Inet6,
            RouteAddress::Inet6(Ipv6Addr::UNSPECIFIED),
            0,
        );
        dflt.attributes
            .retain(|a| !matches!(a, RouteAttribute::Destination(_)));
        assert_eq!(
            route_info(&dflt).unwrap().prefix,
            "::/0".parse::<IpNet>().unwrap()
        );
        let mut mpls = m;
        mpls.header.address_family = AddressFamily::Mpls;
        assert!(route_info(&mpls).is_none());
    }

    #[test]
    fn decodes_links_and_addresses() {
        let mut l = LinkMessage::default();
        l.header.index = 4;
        l.header.flags = LinkFlags::Up | LinkFlags::Running;
        l.attributes = vec![
            LinkAttribute::IfName("eth0".into()),
            LinkAttribute::Mtu(9000),
        ];
        let info = link_info(&l);
        assert_eq!(
            (
                info.ifindex,
                info.name.as_str(),
                info.up,
                info.admin_up,
                info.mtu
            ),
            (4, "eth0", true, true, 9000)
        );
        l.header.flags = LinkFlags::Up;
        assert!(!link_info(&l).up, "no carrier");
        let mut a = AddressMessage::default();
        a.header.index = 4;
        a.header.prefix_len = 24;
        a.attributes = vec![
            AddressAttribute::Address("10.0.0.2".parse().unwrap()),
            AddressAttribute::Local("10.0.0.1".parse().unwrap()),
        ];
        assert_eq!(addr_info(&a), Some((4, "10.0.0.1/24".parse().unwrap())));
        a.header.prefix_len = 99;
        assert_eq!(addr_info(&a), None);
    }

    #[test]
    fn message_walk_survives_garbage() {
        for bytes in [
            &[][..],
            &[1, 2, 3],
            &[255, 255, 255, 255, 0, 0],
            &[16, 0, 0, 0, 1, 2, 3, 4],
        ] {
            let _ = for_each_message(bytes, |_, _| {});
        }
        assert_eq!(for_each_message(&[8, 0, 0, 0, 0, 0, 0, 0], |_, _| {}), 1);
    }
}
