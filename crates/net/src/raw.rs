//! Raw IP sockets for one protocol (RSVP = 46), IPv4 and IPv6, with Router Alert on send,
//! receive and transit interception, and batched I/O (`recvmmsg` / `sendmmsg`).

use crate::cmsg;
use crate::ip::{self, DropReason};
use crate::sys::{self, OutMsg, RecvMsg, RecvSlots};
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags};
use pathwise_core::io::{IfIndex, Received, Transmit, Transport};
use socket2::{Domain, InterfaceIndexOrAddress, Protocol, Socket, Type};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::ops::Range;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// `IPV6_ROUTER_ALERT_ISOLATE` (Linux 5.1+; libc only defines it for uclibc).
const IPV6_ROUTER_ALERT_ISOLATE: libc::c_int = 30;

/// The IP version of a [`RawSocket`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// IPv4 (`AF_INET`).
    V4,
    /// IPv6 (`AF_INET6`).
    V6,
}

/// What a [`RawSocket`] is for. Tuning beyond these lives in [`RawOptions`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawConfig {
    /// The IP protocol number (RSVP is 46).
    pub protocol: u8,
    /// IPv4 or IPv6.
    pub family: Family,
    /// Intercept transit packets of this protocol carrying Router Alert (`IP_ROUTER_ALERT`, or
    /// `IPV6_ROUTER_ALERT` with [`RawOptions::ipv6_router_alert_value`]) instead of letting the
    /// kernel forward them. Only takes effect on a node with forwarding enabled.
    pub intercept_router_alert: bool,
    /// Datagrams fetched per `recvmmsg` (the batch size of [`RawSocket::recv_batch`]).
    pub recv_batch: usize,
}

impl RawConfig {
    /// `protocol` over `family`, no interception, batches of 32.
    pub fn new(protocol: u8, family: Family) -> Self {
        RawConfig {
            protocol,
            family,
            intercept_router_alert: false,
            recv_batch: 32,
        }
    }

    /// RSVP (protocol 46) over `family`, intercepting Router Alert transit packets.
    pub fn rsvp(family: Family) -> Self {
        RawConfig {
            intercept_router_alert: true,
            ..RawConfig::new(pathwise_core::io::IPPROTO_RSVP, family)
        }
    }
}

/// Tuning for [`RawSocket::open_with`]; [`RawSocket::open`] uses the defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawOptions {
    /// Largest datagram payload accepted on receive; larger ones are dropped as
    /// [`DropReason::Truncated`]. Memory held is about `recv_batch * (max_datagram + 512)`.
    /// Default 9216.
    pub max_datagram: usize,
    /// TOS / traffic class byte of sent packets. Default `0xc0` (DSCP CS6, "network control"),
    /// so signaling is not starved by the data it reserves for.
    pub traffic_class: u8,
    /// RFC 2711 Router Alert value intercepted on IPv6 (`IPV6_ROUTER_ALERT`). Default 1 (RSVP).
    pub ipv6_router_alert_value: u16,
    /// Deliver our own multicast transmissions back to local sockets. Default off.
    pub multicast_loop: bool,
    /// Kernel receive buffer, bytes (`SO_RCVBUFFORCE` when privileged, else `SO_RCVBUF`
    /// within `net.core.rmem_max`). Signaling arrives in bursts — a router passing on thousands
    /// of Paths at once — and what overflows the buffer is lost until the next refresh.
    /// Default 4 MiB.
    pub recv_buffer: usize,
}

impl Default for RawOptions {
    fn default() -> Self {
        RawOptions {
            max_datagram: 9216,
            traffic_class: 0xc0,
            ipv6_router_alert_value: ip::IPV6_RA_RSVP,
            multicast_loop: false,
            recv_buffer: 4 << 20,
        }
    }
}

/// Counters of a [`RawSocket`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawStats {
    /// Datagrams handed out by [`RawSocket::recv_batch`].
    pub received: u64,
    /// Datagrams the kernel accepted for sending.
    pub sent: u64,
    /// Send calls that failed (invalid [`Transmit`] or a kernel error).
    pub send_errors: u64,
    /// Received datagrams dropped, indexed by [`DropReason::index`].
    pub drops: [u64; DropReason::ALL.len()],
    /// Datagrams the kernel dropped because the receive buffer was full (`SO_RXQ_OVFL`), as
    /// last reported.
    pub kernel_drops: u64,
}

impl RawStats {
    /// Datagrams dropped for `reason`.
    pub fn dropped(&self, reason: DropReason) -> u64 {
        self.drops[reason.index()]
    }

    /// Datagrams dropped for any reason.
    pub fn total_drops(&self) -> u64 {
        self.drops.iter().sum()
    }
}

/// Where a parsed datagram sits in the receive slots, and its IP facts.
#[derive(Clone, Copy, Debug)]
struct Parsed {
    slot: usize,
    start: usize,
    end: usize,
    src: IpAddr,
    dst: IpAddr,
    ifindex: u32,
    ttl: u8,
    router_alert: Option<u16>,
}

/// A raw IP socket for one protocol. See the crate documentation for how to drive it.
#[derive(Debug)]
pub struct RawSocket {
    socket: Socket,
    options: RawOptions,
    /// IPv6 interception: Linux grants `IPV6_ROUTER_ALERT` only to `IPPROTO_RAW` sockets, which
    /// receive the intercepted packets whole (IPv6 header included).
    interceptor: Option<Socket>,
    /// With an interceptor, an epoll set over both sockets: the one descriptor to poll.
    epoll: Option<Epoll>,
    config: RawConfig,
    slots: RecvSlots,
    parsed: Vec<Parsed>,
    stats: RawStats,
    /// The kernel's overflow counts of the main socket and the interceptor.
    overflows: [u32; 2],
    sent: AtomicU64,
    send_errors: AtomicU64,
    scratch: Mutex<Vec<u8>>,
}

impl RawSocket {
    /// Opens a non-blocking raw socket with default [`RawOptions`] (needs `CAP_NET_RAW`;
    /// `intercept_router_alert` needs nothing more).
    pub fn open(config: RawConfig) -> io::Result<RawSocket> {
        RawSocket::open_with(config, RawOptions::default())
    }

    /// Opens a non-blocking raw socket with explicit tuning.
    pub fn open_with(config: RawConfig, options: RawOptions) -> io::Result<RawSocket> {
        let domain = match config.family {
            Family::V4 => Domain::IPV4,
            Family::V6 => Domain::IPV6,
        };
        let socket = Socket::new(
            domain,
            Type::RAW,
            Some(Protocol::from(i32::from(config.protocol))),
        )?;
        socket.set_nonblocking(true)?;
        let fd = socket.as_fd();
        receive_buffer(fd, &options)?;
        let ctrl_len = match config.family {
            Family::V4 => {
                socket.set_header_included_v4(true)?;
                sys::setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_PKTINFO, 1)?;
                socket.set_multicast_loop_v4(options.multicast_loop)?;
                if config.intercept_router_alert {
                    sys::setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_ROUTER_ALERT, 1)?;
                }
                // IP_PKTINFO (32 bytes with its header) and SO_RXQ_OVFL (24), with room.
                128
            }
            Family::V6 => {
                sys::setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO, 1)?;
                sys::setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVHOPLIMIT, 1)?;
                sys::setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVHOPOPTS, 1)?;
                socket.set_tclass_v6(u32::from(options.traffic_class))?;
                socket.set_multicast_loop_v6(options.multicast_loop)?;
                // Lets IPV6_PKTINFO carry a source address this node does not own.
                socket.set_freebind_v6(true)?;
                1024
            }
        };
        let interceptor = match config.family {
            Family::V6 if config.intercept_router_alert => Some(open_v6_interceptor(&options)?),
            _ => None,
        };
        let epoll = match &interceptor {
            Some(icpt) => {
                let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
                epoll.add(&socket, EpollEvent::new(EpollFlags::EPOLLIN, 0))?;
                epoll.add(icpt, EpollEvent::new(EpollFlags::EPOLLIN, 1))?;
                Some(epoll)
            }
            None => None,
        };
        let batch = config.recv_batch.max(1);
        let slots = RecvSlots::new(batch, options.max_datagram.saturating_add(512), ctrl_len);
        Ok(RawSocket {
            socket,
            interceptor,
            epoll,
            slots,
            parsed: Vec::with_capacity(batch),
            stats: RawStats::default(),
            overflows: [0; 2],
            sent: AtomicU64::new(0),
            send_errors: AtomicU64::new(0),
            scratch: Mutex::new(Vec::new()),
            config,
            options,
        })
    }

    /// The configuration the socket was opened with.
    pub fn config(&self) -> &RawConfig {
        &self.config
    }

    /// The tuning the socket was opened with.
    pub fn options(&self) -> &RawOptions {
        &self.options
    }

    /// The socket's address family.
    pub fn family(&self) -> Family {
        self.config.family
    }

    /// Whether this is an IPv4 socket.
    pub fn is_ipv4(&self) -> bool {
        self.config.family == Family::V4
    }

    /// The underlying socket, for options this type does not cover (buffer sizes, marks, ...).
    pub fn socket(&self) -> &Socket {
        &self.socket
    }

    /// Counters so far.
    pub fn stats(&self) -> RawStats {
        RawStats {
            sent: self.sent.load(Ordering::Relaxed),
            send_errors: self.send_errors.load(Ordering::Relaxed),
            ..self.stats
        }
    }

    /// Joins multicast `group` on interface `ifindex` (RSVP multicast sessions).
    pub fn join_multicast(&self, group: IpAddr, ifindex: IfIndex) -> io::Result<()> {
        match (self.config.family, group) {
            (Family::V4, IpAddr::V4(g)) => self
                .socket
                .join_multicast_v4_n(&g, &InterfaceIndexOrAddress::Index(ifindex.0)),
            (Family::V6, IpAddr::V6(g)) => self.socket.join_multicast_v6(&g, ifindex.0),
            _ => Err(invalid("multicast group of the wrong address family")),
        }
    }

    /// Leaves multicast `group` on interface `ifindex`.
    pub fn leave_multicast(&self, group: IpAddr, ifindex: IfIndex) -> io::Result<()> {
        match (self.config.family, group) {
            (Family::V4, IpAddr::V4(g)) => self
                .socket
                .leave_multicast_v4_n(&g, &InterfaceIndexOrAddress::Index(ifindex.0)),
            (Family::V6, IpAddr::V6(g)) => self.socket.leave_multicast_v6(&g, ifindex.0),
            _ => Err(invalid("multicast group of the wrong address family")),
        }
    }

    /// Receives up to `recv_batch` datagrams with one `recvmmsg`, without blocking (nothing
    /// pending yields an empty iterator). Malformed datagrams are skipped and counted in
    /// [`RawSocket::stats`]. The items borrow the socket's receive buffers.
    pub fn recv_batch(&mut self) -> io::Result<impl Iterator<Item = Received<'_>> + '_> {
        self.parsed.clear();
        // Intercepted transit packets first (they are on the forwarding path), then local ones.
        let intercepted = match &self.interceptor {
            Some(icpt) => recv_or_empty(self.slots.recv(icpt.as_fd(), 0))?,
            None => 0,
        };
        let n = intercepted + recv_or_empty(self.slots.recv(self.socket.as_fd(), intercepted))?;
        for slot in 0..n {
            let msg = self.slots.msg(slot);
            if let Some(count) = overflow_count(msg.ctrl) {
                // Cumulative per socket: keep the latest of each, report their sum.
                self.overflows[usize::from(slot < intercepted)] = count;
                self.stats.kernel_drops = self.overflows.iter().map(|&c| u64::from(c)).sum();
            }
            let protocol = self.config.protocol;
            let parsed = match self.config.family {
                Family::V4 => parse_v4(slot, &msg, protocol),
                Family::V6 if slot < intercepted => parse_v6_intercepted(slot, &msg, protocol),
                Family::V6 => parse_v6(slot, &msg),
            };
            match parsed {
                Ok(p) => self.parsed.push(p),
                Err(reason) => self.stats.drops[reason.index()] += 1,
            }
        }
        self.stats.received += self.parsed.len() as u64;
        let protocol = self.config.protocol;
        let slots = &self.slots;
        Ok(self.parsed.iter().map(move |p| Received {
            src: p.src,
            dst: p.dst,
            ifindex: IfIndex(p.ifindex),
            transport: Transport::Raw(protocol),
            router_alert: p.router_alert,
            ttl: p.ttl,
            payload: &slots.msg(p.slot).data[p.start..p.end],
        }))
    }

    /// Sends one datagram.
    pub fn send(&self, transmit: &Transmit) -> io::Result<()> {
        self.send_batch(std::slice::from_ref(transmit)).map(drop)
    }

    /// Sends datagrams in order with `sendmmsg`, returning how many the kernel took. Sending
    /// stops at the first one that is invalid (wrong family or transport, oversize) or that the
    /// kernel refuses; that error is returned only when nothing at all was sent, so the caller
    /// retries from the returned count (e.g. after `WouldBlock`) or drops the offender.
    pub fn send_batch(&self, transmits: &[Transmit]) -> io::Result<usize> {
        let mut scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let mut total = 0;
        for chunk in transmits.chunks(32) {
            scratch.clear();
            let mut layout: [MsgLayout; 32] = Default::default();
            let mut ready = 0;
            let mut error = None;
            for (t, l) in chunk.iter().zip(layout.iter_mut()) {
                match self.encode(t, &mut scratch) {
                    Ok(m) => {
                        *l = m;
                        ready += 1;
                    }
                    Err(e) => {
                        error = Some(e);
                        break;
                    }
                }
            }
            let buf = scratch.as_slice();
            // Unused entries keep empty default ranges; only the first `ready` are sent.
            let msgs: [OutMsg<'_>; 32] = std::array::from_fn(|i| {
                let l = &layout[i];
                let payload = chunk.get(i).map_or(&[][..], |t| t.payload.as_slice());
                OutMsg {
                    name: &buf[l.name.clone()],
                    parts: [&buf[l.header.clone()], payload],
                    ctrl: &buf[l.ctrl.clone()],
                }
            });
            let sent = if ready > 0 {
                sys::sendmmsg(self.socket.as_fd(), &msgs[..ready])
            } else {
                Ok(0)
            };
            match sent {
                Ok(n) => {
                    self.sent.fetch_add(n as u64, Ordering::Relaxed);
                    total += n;
                    if n < ready {
                        self.send_errors.fetch_add(1, Ordering::Relaxed);
                        return Ok(total);
                    }
                }
                Err(e) => {
                    self.send_errors.fetch_add(1, Ordering::Relaxed);
                    return if total == 0 { Err(e) } else { Ok(total) };
                }
            }
            if let Some(e) = error {
                self.send_errors.fetch_add(1, Ordering::Relaxed);
                return if total == 0 { Err(e) } else { Ok(total) };
            }
        }
        Ok(total)
    }

    /// Appends the header, address and control data of `t` to `buf`.
    fn encode(&self, t: &Transmit, buf: &mut Vec<u8>) -> io::Result<MsgLayout> {
        if t.transport != Transport::Raw(self.config.protocol) {
            return Err(invalid("transport is not this socket's raw protocol"));
        }
        match (self.config.family, t.dst) {
            (Family::V4, IpAddr::V4(dst)) => {
                let src = match t.src {
                    None => Ipv4Addr::UNSPECIFIED,
                    Some(IpAddr::V4(s)) => s,
                    Some(IpAddr::V6(_)) => return Err(invalid("IPv6 source on an IPv4 socket")),
                };
                let spec = ip::Ipv4HeaderSpec {
                    src,
                    dst,
                    protocol: self.config.protocol,
                    ttl: t.ttl,
                    tos: self.options.traffic_class,
                    router_alert: t.router_alert,
                    payload_len: t.payload.len(),
                };
                let mut hdr = [0u8; 24];
                let hlen = ip::build_ipv4_header(&spec, &mut hdr)
                    .ok_or_else(|| invalid("payload too large for IPv4"))?;
                let header = append(buf, &hdr[..hlen]);
                let name = append(buf, &cmsg::sockaddr_in(dst));
                let start = buf.len();
                if let Some(ifindex) = t.ifindex {
                    // IP_PKTINFO picks the outgoing interface; it works with IP_HDRINCL, for
                    // unicast and multicast alike, and leaves the header's source alone.
                    let info = cmsg::in_pktinfo(ifindex.0, Ipv4Addr::UNSPECIFIED);
                    cmsg::push(buf, libc::IPPROTO_IP, libc::IP_PKTINFO, &info);
                }
                Ok(MsgLayout {
                    header,
                    name,
                    ctrl: start..buf.len(),
                })
            }
            (Family::V6, IpAddr::V6(dst)) => {
                let src = match t.src {
                    None => None,
                    Some(IpAddr::V6(s)) => Some(s),
                    Some(IpAddr::V4(_)) => return Err(invalid("IPv4 source on an IPv6 socket")),
                };
                let scope = match t.ifindex {
                    Some(i) if needs_scope(&dst) => i.0,
                    _ => 0,
                };
                let name = append(buf, &cmsg::sockaddr_in6(dst, scope));
                let start = buf.len();
                if src.is_some() || t.ifindex.is_some() {
                    let info = cmsg::in6_pktinfo(
                        src.unwrap_or(Ipv6Addr::UNSPECIFIED),
                        t.ifindex.map_or(0, |i| i.0),
                    );
                    cmsg::push(buf, libc::IPPROTO_IPV6, libc::IPV6_PKTINFO, &info);
                }
                let hops = libc::c_int::from(t.ttl).to_ne_bytes();
                cmsg::push(buf, libc::IPPROTO_IPV6, libc::IPV6_HOPLIMIT, &hops);
                if let Some(value) = t.router_alert {
                    let hbh = ip::hop_by_hop_router_alert(value);
                    cmsg::push(buf, libc::IPPROTO_IPV6, libc::IPV6_HOPOPTS, &hbh);
                }
                if t.payload.len() > u16::MAX as usize {
                    return Err(invalid("payload too large for IPv6 without jumbograms"));
                }
                Ok(MsgLayout {
                    header: 0..0,
                    name,
                    ctrl: start..buf.len(),
                })
            }
            _ => Err(invalid("destination of the wrong address family")),
        }
    }
}

/// Where one encoded message's pieces sit in the send scratch buffer.
#[derive(Clone, Debug, Default)]
struct MsgLayout {
    header: Range<usize>,
    name: Range<usize>,
    ctrl: Range<usize>,
}

fn append(buf: &mut Vec<u8>, bytes: &[u8]) -> Range<usize> {
    let start = buf.len();
    buf.extend_from_slice(bytes);
    start..buf.len()
}

fn invalid(msg: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// Link-local unicast and interface/link-local multicast need a scope (interface) id.
fn needs_scope(a: &Ipv6Addr) -> bool {
    let s = a.segments()[0];
    (s & 0xffc0) == 0xfe80 || (a.is_multicast() && (s & 0x000f) <= 2)
}

fn parse_v4(slot: usize, msg: &RecvMsg<'_>, protocol: u8) -> Result<Parsed, DropReason> {
    if msg.truncated {
        return Err(DropReason::Truncated);
    }
    let p = ip::parse_ipv4(msg.data)?;
    if p.protocol != protocol {
        return Err(DropReason::WrongProtocol);
    }
    let ifindex = cmsg::iter(msg.ctrl)
        .find(|(level, kind, _)| *level == libc::IPPROTO_IP && *kind == libc::IP_PKTINFO)
        .and_then(|(_, _, data)| cmsg::parse_in_pktinfo(data))
        .map(|(ifindex, _)| ifindex)
        .ok_or(DropReason::MissingMetadata)?;
    Ok(Parsed {
        slot,
        start: p.payload_start,
        end: p.payload_end,
        src: p.src.into(),
        dst: p.dst.into(),
        ifindex,
        ttl: p.ttl,
        router_alert: p.router_alert,
    })
}

fn parse_v6(slot: usize, msg: &RecvMsg<'_>) -> Result<Parsed, DropReason> {
    if msg.truncated {
        return Err(DropReason::Truncated);
    }
    let src = cmsg::parse_sockaddr_in6(msg.name).ok_or(DropReason::MissingMetadata)?;
    let (mut pktinfo, mut hops, mut ra) = (None, None, None);
    for (level, kind, data) in cmsg::iter(msg.ctrl) {
        if level != libc::IPPROTO_IPV6 {
            continue;
        }
        match kind {
            libc::IPV6_PKTINFO => pktinfo = cmsg::parse_in6_pktinfo(data),
            libc::IPV6_HOPLIMIT => hops = cmsg::parse_int(data),
            libc::IPV6_HOPOPTS => ra = ip::parse_hop_by_hop(data)?,
            _ => {}
        }
    }
    let (ifindex, dst) = pktinfo.ok_or(DropReason::MissingMetadata)?;
    let ttl = hops
        .and_then(|h| u8::try_from(h).ok())
        .ok_or(DropReason::MissingMetadata)?;
    Ok(Parsed {
        slot,
        start: 0,
        end: msg.data.len(),
        src: src.into(),
        dst: dst.into(),
        ifindex,
        ttl,
        router_alert: ra,
    })
}

/// A transit packet intercepted by the IPv6 `IPPROTO_RAW` socket: the whole packet, IPv6
/// header and extension headers included.
fn parse_v6_intercepted(
    slot: usize,
    msg: &RecvMsg<'_>,
    protocol: u8,
) -> Result<Parsed, DropReason> {
    if msg.truncated {
        return Err(DropReason::Truncated);
    }
    let p = ip::parse_ipv6(msg.data)?;
    if p.protocol != protocol {
        return Err(DropReason::WrongProtocol);
    }
    let (ifindex, _) = cmsg::iter(msg.ctrl)
        .find(|(level, kind, _)| *level == libc::IPPROTO_IPV6 && *kind == libc::IPV6_PKTINFO)
        .and_then(|(_, _, data)| cmsg::parse_in6_pktinfo(data))
        .ok_or(DropReason::MissingMetadata)?;
    Ok(Parsed {
        slot,
        start: p.payload_start,
        end: p.payload_end,
        src: p.src.into(),
        dst: p.dst.into(),
        ifindex,
        ttl: p.hop_limit,
        router_alert: p.router_alert,
    })
}

/// The `IPPROTO_RAW` socket that intercepts IPv6 transit packets carrying Router Alert with
/// the configured value.
fn open_v6_interceptor(options: &RawOptions) -> io::Result<Socket> {
    let socket = Socket::new(
        Domain::IPV6,
        Type::RAW,
        Some(Protocol::from(libc::IPPROTO_RAW)),
    )?;
    socket.set_nonblocking(true)?;
    let fd = socket.as_fd();
    receive_buffer(fd, options)?;
    sys::setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO, 1)?;
    let value = libc::c_int::from(options.ipv6_router_alert_value);
    sys::setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_ROUTER_ALERT, value)?;
    // The IPv6 router-alert chain is global to the host: without isolation this socket would
    // also receive packets forwarded in other network namespaces.
    sys::setsockopt_int(fd, libc::IPPROTO_IPV6, IPV6_ROUTER_ALERT_ISOLATE, 1)?;
    Ok(socket)
}

/// Size the receive buffer and ask for the kernel's overflow count with every datagram.
fn receive_buffer(fd: std::os::fd::BorrowedFd<'_>, options: &RawOptions) -> io::Result<()> {
    let size = libc::c_int::try_from(options.recv_buffer).unwrap_or(libc::c_int::MAX);
    if sys::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, size).is_err() {
        // Unprivileged: the kernel caps this at net.core.rmem_max.
        sys::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, size)?;
    }
    sys::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RXQ_OVFL, 1)
}

/// The kernel's count of datagrams dropped on a full receive buffer, if `ctrl` carries it.
fn overflow_count(ctrl: &[u8]) -> Option<u32> {
    cmsg::iter(ctrl)
        .find(|(level, kind, _)| *level == libc::SOL_SOCKET && *kind == libc::SO_RXQ_OVFL)
        .and_then(|(_, _, data)| cmsg::parse_int(data))
        .map(|n| n as u32)
}

fn recv_or_empty(r: io::Result<usize>) -> io::Result<usize> {
    match r {
        Ok(n) => Ok(n),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
            ) =>
        {
            Ok(0)
        }
        Err(e) => Err(e),
    }
}

/// The descriptor to poll for readability: the socket itself, or (IPv6 with interception) an
/// epoll set over the socket and the interceptor. Level-triggered: it stays readable while
/// anything is pending, so call [`RawSocket::recv_batch`] until it comes back empty.
impl AsFd for RawSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match &self.epoll {
            Some(epoll) => epoll.0.as_fd(),
            None => self.socket.as_fd(),
        }
    }
}

impl AsRawFd for RawSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.as_fd().as_raw_fd()
    }
}
