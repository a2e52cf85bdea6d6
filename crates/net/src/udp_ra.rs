//! UDP datagrams that carry the IP Router Alert option, over a raw socket: how GIST sends its
//! D-mode Queries so that every GIST-aware router on the path takes them off the forwarding
//! path (RFC 5971 §5.3.2 and §4.4.1 — "Queries are sent … with the Router Alert Option").
//!
//! A [`RaUdpSocket`] is a [`RawSocket`] for IP protocol 17 that intercepts Router Alert transit
//! packets, with the UDP header written and read here: [`RaUdpSocket::send`] takes a
//! [`Transmit`] whose transport is [`Transport::Udp`] and adds the header with its checksum
//! (RFC 768, over the RFC 768 / RFC 8200 §8.1 pseudo-header); [`RaUdpSocket::recv_batch`]
//! yields the datagrams for one destination port — intercepted in transit or addressed to this
//! node — with the UDP header checked and removed (a checksum that the sender's kernel left for
//! the network card to finish, as between namespaces over veth, is accepted like an ordinary UDP
//! socket would).
//!
//! Intercepting Router Alert catches every such UDP datagram in transit, whatever its port:
//! those for other ports are sent on unchanged but for the TTL, as the kernel would have
//! forwarded them ([`RaUdpSocket::forwarded`] counts them).
//!
//! A raw UDP socket also receives a copy of every UDP datagram the node delivers locally. So
//! that the port's datagrams arrive once, and the kernel does not answer them with ICMP
//! "port unreachable", [`RaUdpSocket::open`] also binds an ordinary UDP socket to the port and
//! attaches a socket filter that discards everything on it: it claims the port; the raw socket
//! reads.

use crate::raw::{Family, RawConfig, RawOptions, RawSocket};
use crate::sys;
use pathwise_core::io::{Received, Transmit, Transport};
use pathwise_core::wire::internet_checksum;
use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsFd, BorrowedFd};

/// IP protocol number of UDP.
pub const IPPROTO_UDP: u8 = 17;
/// Bytes of the UDP header.
pub const UDP_HEADER: usize = 8;

/// UDP with Router Alert on one port. See the module documentation.
#[derive(Debug)]
pub struct RaUdpSocket {
    raw: RawSocket,
    /// Sends on what was intercepted for other ports (a second raw socket, so that can happen
    /// while the received batch is still borrowed; it discards everything it would receive).
    relay: RawSocket,
    /// Holds the port (and discards what reaches it) so the raw socket's copy is the only one.
    _claim: Socket,
    port: u16,
    /// This node's addresses: a datagram for another port addressed to one of them was
    /// delivered locally, one addressed elsewhere was intercepted in transit.
    local: Vec<IpAddr>,
    /// Datagrams dropped for a bad UDP header or checksum.
    bad_udp: u64,
    /// Intercepted datagrams for other ports sent on.
    forwarded: u64,
}

impl RaUdpSocket {
    /// Opens the socket for destination port `port` on `family` (needs `CAP_NET_RAW`; binding a
    /// port below 1024, like GIST's 270, needs `CAP_NET_BIND_SERVICE`). `options` tunes the raw
    /// socket (for IPv6, its `ipv6_router_alert_value` is the value intercepted; what is sent
    /// carries the value each transmit names). With `intercept` false the socket takes nothing
    /// off the forwarding path (a [`crate::nfqueue::TransitQueue`] does that instead) and only
    /// sends and receives what is addressed to this node.
    pub fn open(
        family: Family,
        port: u16,
        options: RawOptions,
        intercept: bool,
    ) -> io::Result<RaUdpSocket> {
        let config = RawConfig {
            intercept_router_alert: intercept,
            ..RawConfig::new(IPPROTO_UDP, family)
        };
        let raw = RawSocket::open_with(config, options.clone())?;
        let relay = RawSocket::open_with(RawConfig::new(IPPROTO_UDP, family), options)?;
        sys::attach_drop_all_filter(relay.as_fd())?;
        let (domain, any): (Domain, IpAddr) = match family {
            Family::V4 => (Domain::IPV4, IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)),
            Family::V6 => (Domain::IPV6, IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)),
        };
        let claim = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
        if family == Family::V6 {
            claim.set_only_v6(true)?;
        }
        claim.bind(&SocketAddr::new(any, port).into())?;
        sys::attach_drop_all_filter(claim.as_fd())?;
        let mut s = RaUdpSocket {
            raw,
            relay,
            _claim: claim,
            port,
            local: Vec::new(),
            bad_udp: 0,
            forwarded: 0,
        };
        s.refresh_local_addrs()?;
        Ok(s)
    }

    /// Re-read this node's addresses (after they change), which tell intercepted datagrams
    /// from locally delivered ones.
    pub fn refresh_local_addrs(&mut self) -> io::Result<()> {
        self.local = crate::fib::interfaces()?
            .iter()
            .flat_map(|i| i.addrs.iter().map(|n| n.addr()))
            .collect();
        Ok(())
    }

    /// Intercepted datagrams for other ports sent on so far.
    pub fn forwarded(&self) -> u64 {
        self.forwarded
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The raw socket underneath (its counters, its family).
    pub fn raw(&self) -> &RawSocket {
        &self.raw
    }

    /// Datagrams for the port dropped because their UDP header or checksum was bad.
    pub fn bad_udp(&self) -> u64 {
        self.bad_udp
    }

    /// Sends `t` (transport [`Transport::Udp`]) with the UDP header added; `t.router_alert`
    /// says whether the IP header carries Router Alert. The checksum needs the source address:
    /// without `t.src` an IPv4 datagram is sent without one (0, RFC 768) and an IPv6 one is
    /// refused (RFC 8200 §8.1 makes it mandatory).
    pub fn send(&self, t: &Transmit) -> io::Result<()> {
        let Transport::Udp { src_port, dst_port } = t.transport else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a UDP transmit",
            ));
        };
        let payload = udp_datagram(t.src, t.dst, src_port, dst_port, &t.payload)?;
        self.raw.send(&Transmit {
            transport: Transport::Raw(IPPROTO_UDP),
            payload,
            ..t.clone()
        })
    }

    /// The datagrams received since the last call that are for this socket's port, with a
    /// valid UDP header, as [`Received`] with [`Transport::Udp`] and the UDP payload.
    pub fn recv_batch(&mut self) -> io::Result<Vec<Received<'_>>> {
        let (port, local) = (self.port, &self.local);
        let (mut bad, mut forwarded) = (0, 0);
        let mut mine = Vec::new();
        for r in self.raw.recv_batch()? {
            match parse_udp(&r) {
                Some((src_port, dst_port, payload)) if dst_port == port => mine.push(Received {
                    transport: Transport::Udp { src_port, dst_port },
                    payload,
                    ..r
                }),
                // Intercepted in transit for another port: on its way, as the kernel would.
                _ if r.router_alert.is_some() && !local.contains(&r.dst) => {
                    if r.ttl > 1 {
                        let t = Transmit {
                            src: Some(r.src),
                            dst: r.dst,
                            ifindex: None,
                            transport: Transport::Raw(IPPROTO_UDP),
                            router_alert: r.router_alert,
                            ttl: r.ttl - 1,
                            payload: r.payload.to_vec(),
                        };
                        forwarded += u64::from(self.relay.send(&t).is_ok());
                    }
                }
                Some(_) => {} // another port's datagram, copied to every raw UDP socket
                None => bad += 1,
            }
        }
        self.bad_udp += bad;
        self.forwarded += forwarded;
        Ok(mine)
    }
}

impl AsFd for RaUdpSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.raw.as_fd()
    }
}

/// The pseudo-header sum input: source, destination, protocol and UDP length (RFC 768; RFC 8200
/// §8.1 for IPv6).
fn pseudo_header(src: IpAddr, dst: IpAddr, udp_len: usize) -> Vec<u8> {
    let mut p = Vec::with_capacity(40);
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            p.extend_from_slice(&s.octets());
            p.extend_from_slice(&d.octets());
            p.extend_from_slice(&[0, IPPROTO_UDP]);
            p.extend_from_slice(&(udp_len as u16).to_be_bytes());
        }
        _ => {
            let v6 = |a: IpAddr| match a {
                IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
                IpAddr::V6(a) => a.octets(),
            };
            p.extend_from_slice(&v6(src));
            p.extend_from_slice(&v6(dst));
            p.extend_from_slice(&(udp_len as u32).to_be_bytes());
            p.extend_from_slice(&[0, 0, 0, IPPROTO_UDP]);
        }
    }
    p
}

/// The one's-complement checksum of `datagram` under its pseudo-header: the value to send when
/// the datagram's checksum field is zero, and zero when a received datagram's field is right.
fn udp_checksum(src: IpAddr, dst: IpAddr, datagram: &[u8]) -> u16 {
    let mut all = pseudo_header(src, dst, datagram.len());
    all.extend_from_slice(datagram);
    internet_checksum(&all)
}

/// What the checksum field holds when the sender's kernel left the checksum to be finished by
/// the network card (`CHECKSUM_PARTIAL`): the folded pseudo-header sum, not complemented.
/// Between network namespaces (veth) and on loopback no card finishes it, and a raw socket
/// sees the datagram as sent; an ordinary UDP socket would accept it, so this does too.
fn partial_checksum(src: IpAddr, dst: IpAddr, udp_len: usize) -> u16 {
    !internet_checksum(&pseudo_header(src, dst, udp_len))
}

/// Header and payload of a UDP datagram from `src` to `dst`.
fn udp_datagram(
    src: Option<IpAddr>,
    dst: IpAddr,
    src_port: u16,
    dst_port: u16,
    payload: &[u8],
) -> io::Result<Vec<u8>> {
    let len = UDP_HEADER + payload.len();
    let len16 = u16::try_from(len)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "UDP datagram too long"))?;
    let mut d = Vec::with_capacity(len);
    d.extend_from_slice(&src_port.to_be_bytes());
    d.extend_from_slice(&dst_port.to_be_bytes());
    d.extend_from_slice(&len16.to_be_bytes());
    d.extend_from_slice(&[0, 0]);
    d.extend_from_slice(payload);
    let sum = match (src, dst) {
        (Some(s), _) => udp_checksum(s, dst, &d),
        (None, IpAddr::V4(_)) => return Ok(d), // checksum 0: none computed (RFC 768)
        (None, IpAddr::V6(_)) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "an IPv6 UDP checksum needs the source address",
            ));
        }
    };
    // A computed zero is sent as all ones: zero means "no checksum" (RFC 768).
    let sum = if sum == 0 { 0xffff } else { sum };
    d[6..8].copy_from_slice(&sum.to_be_bytes());
    Ok(d)
}

/// Source port, destination port and payload of the UDP datagram in `r`, if its header is
/// consistent and its checksum verifies (a zero IPv4 checksum means none was sent; IPv6 must
/// have one).
pub(crate) fn parse_udp<'a>(r: &Received<'a>) -> Option<(u16, u16, &'a [u8])> {
    let d = r.payload;
    let header = d.get(..UDP_HEADER)?;
    let src_port = u16::from_be_bytes([header[0], header[1]]);
    let dst_port = u16::from_be_bytes([header[2], header[3]]);
    let len = usize::from(u16::from_be_bytes([header[4], header[5]]));
    let sum = u16::from_be_bytes([header[6], header[7]]);
    if len < UDP_HEADER || len > d.len() {
        return None;
    }
    let d = &d[..len];
    let checked = match r.dst {
        IpAddr::V4(_) if sum == 0 => true,
        IpAddr::V6(_) if sum == 0 => false,
        // Summed with its own checksum field, a valid datagram sums to zero (RFC 1071).
        _ => udp_checksum(r.src, r.dst, d) == 0 || sum == partial_checksum(r.src, r.dst, len),
    };
    checked.then(|| (src_port, dst_port, &d[UDP_HEADER..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathwise_core::io::IfIndex;

    fn received<'a>(src: &str, dst: &str, payload: &'a [u8]) -> Received<'a> {
        Received {
            src: src.parse().unwrap(),
            dst: dst.parse().unwrap(),
            ifindex: IfIndex(1),
            transport: Transport::Raw(IPPROTO_UDP),
            router_alert: Some(0),
            ttl: 64,
            payload,
        }
    }

    #[test]
    fn datagrams_round_trip_with_valid_checksums() {
        for (s, d) in [("10.0.0.1", "10.0.0.2"), ("fd00::1", "fd00::2")] {
            let dg = udp_datagram(
                Some(s.parse().unwrap()),
                d.parse().unwrap(),
                4000,
                270,
                b"gist",
            )
            .unwrap();
            assert_eq!(&dg[..6], &[0x0f, 0xa0, 0x01, 0x0e, 0, 12]);
            let r = received(s, d, &dg);
            assert_eq!(parse_udp(&r), Some((4000, 270, &b"gist"[..])));
            // Any flipped byte fails the checksum (or the length check).
            for i in 0..dg.len() {
                let mut bad = dg.clone();
                bad[i] ^= 0x10;
                assert_eq!(parse_udp(&received(s, d, &bad)), None, "byte {i}");
            }
        }
    }

    #[test]
    fn partial_checksums_from_local_senders_are_accepted() {
        for (s, d) in [("10.0.0.1", "10.0.0.2"), ("fd00::1", "fd00::2")] {
            let (src, dst) = (s.parse().unwrap(), d.parse().unwrap());
            let mut dg = udp_datagram(Some(src), dst, 4000, 270, b"gist").unwrap();
            let len = dg.len();
            dg[6..8].copy_from_slice(&partial_checksum(src, dst, len).to_be_bytes());
            assert_eq!(
                parse_udp(&received(s, d, &dg)),
                Some((4000, 270, &b"gist"[..]))
            );
            // A partial checksum for another length is still wrong.
            dg[6..8].copy_from_slice(&partial_checksum(src, dst, len + 2).to_be_bytes());
            assert_eq!(parse_udp(&received(s, d, &dg)), None);
        }
    }

    #[test]
    fn known_checksum() {
        // RFC 1071 arithmetic done apart from the code: 10.0.0.1 → 10.0.0.2, ports 1 → 2,
        // payload 0x0102: pseudo-header 0a00+0001+0a00+0002+0011+000a, header
        // 0001+0002+000a+0000, data 0102, folded sum 0x152d → checksum !0x152d = 0xead2.
        let dg = udp_datagram(
            Some("10.0.0.1".parse().unwrap()),
            "10.0.0.2".parse().unwrap(),
            1,
            2,
            &[1, 2],
        )
        .unwrap();
        assert_eq!(&dg[6..8], &[0xea, 0xd2]);
    }

    #[test]
    fn missing_checksums_and_bad_headers() {
        let dg = udp_datagram(None, "10.0.0.2".parse().unwrap(), 1, 270, b"x").unwrap();
        assert_eq!(&dg[6..8], &[0, 0]);
        assert!(parse_udp(&received("10.0.0.1", "10.0.0.2", &dg)).is_some());
        assert!(udp_datagram(None, "fd00::2".parse().unwrap(), 1, 2, b"x").is_err());
        let mut v6 = udp_datagram(
            Some("fd00::1".parse().unwrap()),
            "fd00::2".parse().unwrap(),
            1,
            2,
            b"x",
        )
        .unwrap();
        v6[6..8].copy_from_slice(&[0, 0]);
        assert_eq!(parse_udp(&received("fd00::1", "fd00::2", &v6)), None);
        for short in [
            &[][..],
            &[0, 1, 0, 2, 0, 4, 0, 0][..],
            &[0, 1, 0, 2, 0, 20, 0, 0][..],
        ] {
            assert_eq!(parse_udp(&received("10.0.0.1", "10.0.0.2", short)), None);
        }
    }

    proptest::proptest! {
        /// Any bytes from any addresses: parsing never panics.
        #[test]
        fn parse_never_panics(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..80),
            v6 in proptest::prelude::any::<bool>(),
        ) {
            let (s, d) = if v6 { ("fd00::1", "fd00::2") } else { ("10.0.0.1", "10.0.0.2") };
            let _ = parse_udp(&received(s, d, &bytes));
        }

        /// Whatever is built parses back to its ports and payload.
        #[test]
        fn built_datagrams_parse_back(
            sp in proptest::prelude::any::<u16>(),
            dp in proptest::prelude::any::<u16>(),
            payload in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
            v6 in proptest::prelude::any::<bool>(),
        ) {
            let (s, d) = if v6 { ("fd00::1", "fd00::2") } else { ("10.0.0.1", "10.0.0.2") };
            let dg = udp_datagram(Some(s.parse().unwrap()), d.parse().unwrap(), sp, dp, &payload)
                .unwrap();
            proptest::prop_assert_eq!(
                parse_udp(&received(s, d, &dg)),
                Some((sp, dp, &payload[..]))
            );
        }
    }
}
