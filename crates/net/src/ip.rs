//! IP header building and parsing for raw sockets: pure functions over byte slices, no I/O.
//!
//! - IPv4: the header we prepend with `IP_HDRINCL` ([`build_ipv4_header`]) and the header the
//!   kernel hands a raw IPv4 socket on receive ([`parse_ipv4`]), including the Router Alert option
//!   (RFC 2113).
//! - IPv6: the hop-by-hop extension header carrying Router Alert (RFC 2711) that we pass as
//!   `IPV6_HOPOPTS` ancillary data ([`hop_by_hop_router_alert`]), the parser for hop-by-hop
//!   options ([`parse_hop_by_hop`]) and the parser for the whole IPv6 packets the kernel hands an
//!   `IPV6_ROUTER_ALERT` socket for intercepted transit packets ([`parse_ipv6`]).
//!
//! Parsers never panic: malformed input yields a [`DropReason`].

use std::net::{Ipv4Addr, Ipv6Addr};

/// Why a received packet was dropped instead of being handed out (see `RawStats`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// The datagram did not fit the receive buffer (`MSG_TRUNC`); raise `RawConfig::max_datagram`.
    Truncated,
    /// Shorter than the fixed IP header.
    ShortHeader,
    /// The IP version nibble did not match the socket's family.
    BadVersion,
    /// IPv4 IHL below 5 or beyond the packet.
    BadHeaderLength,
    /// The IP total / payload length disagrees with what was received.
    BadTotalLength,
    /// A malformed IPv4 option or IPv6 extension header / option.
    BadOptions,
    /// An intercepted IPv6 packet whose upper-layer protocol is not the socket's.
    WrongProtocol,
    /// An intercepted IPv6 fragment (transit fragments are not reassembled by the kernel).
    Fragment,
    /// Ancillary data the socket asked for (arrival interface, destination) was missing.
    MissingMetadata,
}

impl DropReason {
    /// Every reason, in a fixed order (index of [`DropReason::index`]).
    pub const ALL: [DropReason; 9] = [
        DropReason::Truncated,
        DropReason::ShortHeader,
        DropReason::BadVersion,
        DropReason::BadHeaderLength,
        DropReason::BadTotalLength,
        DropReason::BadOptions,
        DropReason::WrongProtocol,
        DropReason::Fragment,
        DropReason::MissingMetadata,
    ];

    /// Position of this reason in [`DropReason::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// A stable snake_case name, for counters and metrics.
    pub const fn name(self) -> &'static str {
        match self {
            DropReason::Truncated => "truncated",
            DropReason::ShortHeader => "short_header",
            DropReason::BadVersion => "bad_version",
            DropReason::BadHeaderLength => "bad_header_length",
            DropReason::BadTotalLength => "bad_total_length",
            DropReason::BadOptions => "bad_options",
            DropReason::WrongProtocol => "wrong_protocol",
            DropReason::Fragment => "fragment",
            DropReason::MissingMetadata => "missing_metadata",
        }
    }
}

/// IPv4 option type of Router Alert (copied flag set, class 0, number 20).
pub const IPOPT_RA: u8 = 0x94;
/// IPv6 hop-by-hop option type of Router Alert (RFC 2711).
pub const IPV6_OPT_RA: u8 = 0x05;
/// RFC 2711 Router Alert value for RSVP.
pub const IPV6_RA_RSVP: u16 = 1;

/// Length of the IPv4 header [`build_ipv4_header`] writes: 20, or 24 with Router Alert.
pub const fn ipv4_header_len(router_alert: bool) -> usize {
    if router_alert { 24 } else { 20 }
}

/// Largest payload an IPv4 datagram with this header can carry.
pub const fn ipv4_max_payload(router_alert: bool) -> usize {
    u16::MAX as usize - ipv4_header_len(router_alert)
}

/// What [`build_ipv4_header`] needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4HeaderSpec {
    /// Source address; `0.0.0.0` lets the kernel fill in the outgoing interface's address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// IP protocol number.
    pub protocol: u8,
    /// Time to live.
    pub ttl: u8,
    /// Type of service / DSCP+ECN byte.
    pub tos: u8,
    /// Append the Router Alert option (RFC 2113 §2.1) with this value.
    pub router_alert: Option<u16>,
    /// Length of the payload that follows the header.
    pub payload_len: usize,
}

/// Writes an IPv4 header into `out` and returns its length (20 or 24 bytes), or `None` when the
/// payload is too large for an IPv4 datagram.
///
/// Identification is left 0 so the kernel fills it in; DF is clear so routers may fragment. The
/// checksum is computed (the kernel recomputes it for `IP_HDRINCL` sockets anyway).
pub fn build_ipv4_header(spec: &Ipv4HeaderSpec, out: &mut [u8; 24]) -> Option<usize> {
    let hlen = ipv4_header_len(spec.router_alert.is_some());
    let total = u16::try_from(hlen + spec.payload_len).ok()?;
    out.fill(0);
    out[0] = 0x40 | (hlen / 4) as u8;
    out[1] = spec.tos;
    out[2..4].copy_from_slice(&total.to_be_bytes());
    // [4..6] identification: 0, the kernel picks one; [6..8] flags/fragment offset: 0.
    out[8] = spec.ttl;
    out[9] = spec.protocol;
    out[12..16].copy_from_slice(&spec.src.octets());
    out[16..20].copy_from_slice(&spec.dst.octets());
    if let Some(value) = spec.router_alert {
        let v = value.to_be_bytes();
        out[20..24].copy_from_slice(&[IPOPT_RA, 4, v[0], v[1]]);
    }
    let sum = ipv4_checksum(&out[..hlen]);
    out[10..12].copy_from_slice(&sum.to_be_bytes());
    Some(hlen)
}

/// The Internet checksum (RFC 1071), as every pathwise codec computes it.
pub use pathwise_core::wire::internet_checksum as ipv4_checksum;

/// The facts [`parse_ipv4`] extracts from a received IPv4 packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4Packet {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// TTL as received.
    pub ttl: u8,
    /// Protocol number.
    pub protocol: u8,
    /// The value of the Router Alert option, if one is present.
    pub router_alert: Option<u16>,
    /// Offset of the payload (the header length).
    pub payload_start: usize,
    /// End of the payload (the IP total length).
    pub payload_end: usize,
}

/// Parses the IPv4 header at the start of `pkt` (as a raw IPv4 socket receives it).
pub fn parse_ipv4(pkt: &[u8]) -> Result<Ipv4Packet, DropReason> {
    if pkt.len() < 20 {
        return Err(DropReason::ShortHeader);
    }
    if pkt[0] >> 4 != 4 {
        return Err(DropReason::BadVersion);
    }
    let hlen = usize::from(pkt[0] & 0x0f) * 4;
    if hlen < 20 || hlen > pkt.len() {
        return Err(DropReason::BadHeaderLength);
    }
    let total = usize::from(u16::from_be_bytes([pkt[2], pkt[3]]));
    if total < hlen || total > pkt.len() {
        return Err(DropReason::BadTotalLength);
    }
    let router_alert = ipv4_router_alert(&pkt[20..hlen])?;
    Ok(Ipv4Packet {
        src: Ipv4Addr::new(pkt[12], pkt[13], pkt[14], pkt[15]),
        dst: Ipv4Addr::new(pkt[16], pkt[17], pkt[18], pkt[19]),
        ttl: pkt[8],
        protocol: pkt[9],
        router_alert,
        payload_start: hlen,
        payload_end: total,
    })
}

/// Walks IPv4 options; the value of the Router Alert option (type 148, length 4; RFC 2113
/// §2.1), if one is present.
pub fn ipv4_router_alert(mut opts: &[u8]) -> Result<Option<u16>, DropReason> {
    let mut ra = None;
    while let Some(&kind) = opts.first() {
        match kind {
            0 => break,             // end of option list
            1 => opts = &opts[1..], // no-operation
            _ => {
                let len = usize::from(*opts.get(1).ok_or(DropReason::BadOptions)?);
                if len < 2 || len > opts.len() {
                    return Err(DropReason::BadOptions);
                }
                if kind == IPOPT_RA {
                    if len != 4 {
                        return Err(DropReason::BadOptions);
                    }
                    ra = Some(u16::from_be_bytes([opts[2], opts[3]]));
                }
                opts = &opts[len..];
            }
        }
    }
    Ok(ra)
}

/// The IPv6 hop-by-hop extension header holding one Router Alert option with `value`, as
/// `IPV6_HOPOPTS` ancillary data wants it (the kernel fills in the next-header byte).
pub fn hop_by_hop_router_alert(value: u16) -> [u8; 8] {
    let v = value.to_be_bytes();
    // next header, hdr ext len (0 = 8 bytes), RA option (type 5, len 2, value), PadN (len 0).
    [0, 0, IPV6_OPT_RA, 2, v[0], v[1], 1, 0]
}

/// Parses a hop-by-hop options header (next header, length, options) and returns the value of
/// its Router Alert option, if any.
pub fn parse_hop_by_hop(hdr: &[u8]) -> Result<Option<u16>, DropReason> {
    if hdr.len() < 2 {
        return Err(DropReason::BadOptions);
    }
    let len = (usize::from(hdr[1]) + 1) * 8;
    if len > hdr.len() {
        return Err(DropReason::BadOptions);
    }
    let mut opts = &hdr[2..len];
    let mut ra = None;
    while let Some(&kind) = opts.first() {
        if kind == 0 {
            opts = &opts[1..]; // Pad1
            continue;
        }
        let olen = usize::from(*opts.get(1).ok_or(DropReason::BadOptions)?);
        let data = opts.get(2..2 + olen).ok_or(DropReason::BadOptions)?;
        if kind == IPV6_OPT_RA {
            let [a, b] = data else {
                return Err(DropReason::BadOptions);
            };
            ra = Some(u16::from_be_bytes([*a, *b]));
        }
        opts = &opts[2 + olen..];
    }
    Ok(ra)
}

/// The facts [`parse_ipv6`] extracts from a whole IPv6 packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv6Packet {
    /// Source address.
    pub src: Ipv6Addr,
    /// Destination address.
    pub dst: Ipv6Addr,
    /// Hop limit as received.
    pub hop_limit: u8,
    /// The upper-layer protocol after the extension headers.
    pub protocol: u8,
    /// The Router Alert value from the hop-by-hop header, if present.
    pub router_alert: Option<u16>,
    /// Offset of the upper-layer payload.
    pub payload_start: usize,
    /// End of the packet (40 + payload length).
    pub payload_end: usize,
}

/// Parses a whole IPv6 packet (fixed header and extension headers).
///
/// Linux hands an `IPV6_ROUTER_ALERT` socket intercepted transit packets in this form (locally
/// delivered packets come without the IPv6 header).
pub fn parse_ipv6(pkt: &[u8]) -> Result<Ipv6Packet, DropReason> {
    if pkt.len() < 40 {
        return Err(DropReason::ShortHeader);
    }
    if pkt[0] >> 4 != 6 {
        return Err(DropReason::BadVersion);
    }
    let end = 40 + usize::from(u16::from_be_bytes([pkt[4], pkt[5]]));
    if end > pkt.len() {
        return Err(DropReason::BadTotalLength);
    }
    let pkt = &pkt[..end];
    let mut next = pkt[6];
    let mut off = 40;
    let mut router_alert = None;
    loop {
        match next {
            // hop-by-hop, routing, destination options: (len + 1) * 8 bytes.
            0 | 43 | 60 => {
                let hdr = pkt.get(off..).ok_or(DropReason::BadOptions)?;
                let len = (usize::from(*hdr.get(1).ok_or(DropReason::BadOptions)?) + 1) * 8;
                if len > hdr.len() {
                    return Err(DropReason::BadOptions);
                }
                if next == 0 {
                    if off != 40 {
                        return Err(DropReason::BadOptions); // hop-by-hop must come first
                    }
                    router_alert = parse_hop_by_hop(&hdr[..len])?;
                }
                next = hdr[0];
                off += len;
            }
            // authentication header: (len + 2) * 4 bytes.
            51 => {
                let hdr = pkt.get(off..).ok_or(DropReason::BadOptions)?;
                let len = (usize::from(*hdr.get(1).ok_or(DropReason::BadOptions)?) + 2) * 4;
                if len > hdr.len() {
                    return Err(DropReason::BadOptions);
                }
                next = hdr[0];
                off += len;
            }
            44 => return Err(DropReason::Fragment),
            _ => break,
        }
    }
    let mut src = [0u8; 16];
    let mut dst = [0u8; 16];
    src.copy_from_slice(&pkt[8..24]);
    dst.copy_from_slice(&pkt[24..40]);
    Ok(Ipv6Packet {
        src: Ipv6Addr::from(src),
        dst: Ipv6Addr::from(dst),
        hop_limit: pkt[7],
        protocol: next,
        router_alert,
        payload_start: off,
        payload_end: end,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(router_alert: Option<u16>, payload_len: usize) -> Ipv4HeaderSpec {
        Ipv4HeaderSpec {
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 1, 2),
            protocol: 46,
            ttl: 63,
            tos: 0xc0,
            router_alert,
            payload_len,
        }
    }

    #[test]
    fn ipv4_header_with_router_alert_round_trips() {
        let mut h = [0u8; 24];
        let n = build_ipv4_header(&spec(Some(0x0102), 8), &mut h).unwrap();
        assert_eq!(n, 24);
        assert_eq!(h[0], 0x46);
        assert_eq!(&h[2..4], &32u16.to_be_bytes());
        assert_eq!(&h[20..24], &[0x94, 0x04, 0x01, 0x02]);
        assert_eq!(ipv4_checksum(&h[..24]), 0, "checksum verifies");
        let mut pkt = h.to_vec();
        pkt.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        let p = parse_ipv4(&pkt).unwrap();
        assert_eq!(p.src, Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(p.dst, Ipv4Addr::new(10, 0, 1, 2));
        assert_eq!((p.ttl, p.protocol, p.router_alert), (63, 46, Some(0x0102)));
        assert_eq!(
            &pkt[p.payload_start..p.payload_end],
            &[1, 2, 3, 4, 5, 6, 7, 8]
        );
    }

    #[test]
    fn ipv4_header_without_router_alert() {
        let mut h = [0u8; 24];
        let n = build_ipv4_header(&spec(None, 0), &mut h).unwrap();
        assert_eq!(n, 20);
        assert_eq!(h[0], 0x45);
        assert_eq!(h[1], 0xc0);
        assert_eq!(ipv4_checksum(&h[..20]), 0);
        let p = parse_ipv4(&h[..20]).unwrap();
        assert_eq!(p.router_alert, None);
        assert_eq!((p.payload_start, p.payload_end), (20, 20));
    }

    #[test]
    fn ipv4_payload_too_large_is_refused() {
        let mut h = [0u8; 24];
        assert!(build_ipv4_header(&spec(Some(0), ipv4_max_payload(true)), &mut h).is_some());
        assert!(build_ipv4_header(&spec(Some(0), ipv4_max_payload(true) + 1), &mut h).is_none());
        assert!(build_ipv4_header(&spec(None, ipv4_max_payload(false) + 1), &mut h).is_none());
    }

    #[test]
    fn checksum_matches_rfc1071_example() {
        // Classic example header from RFC 1071 discussions / Wikipedia.
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(ipv4_checksum(&h), 0xb861);
        assert_eq!(ipv4_checksum(&[0xff]), !0xff00);
    }

    #[test]
    fn ipv4_parse_rejects_bad_input() {
        let mut h = [0u8; 24];
        build_ipv4_header(&spec(Some(0), 4), &mut h).unwrap();
        let mut pkt = h.to_vec();
        pkt.extend_from_slice(&[0; 4]);
        assert_eq!(parse_ipv4(&pkt[..19]), Err(DropReason::ShortHeader));
        assert_eq!(parse_ipv4(&[]), Err(DropReason::ShortHeader));
        let mut v = pkt.clone();
        v[0] = 0x66;
        assert_eq!(parse_ipv4(&v), Err(DropReason::BadVersion));
        let mut v = pkt.clone();
        v[0] = 0x44; // IHL 4
        assert_eq!(parse_ipv4(&v), Err(DropReason::BadHeaderLength));
        let mut v = pkt.clone();
        v[0] = 0x4f; // IHL 15 = 60 bytes > 28
        assert_eq!(parse_ipv4(&v), Err(DropReason::BadHeaderLength));
        let mut v = pkt.clone();
        v[2..4].copy_from_slice(&29u16.to_be_bytes()); // longer than received
        assert_eq!(parse_ipv4(&v), Err(DropReason::BadTotalLength));
        v[2..4].copy_from_slice(&20u16.to_be_bytes()); // shorter than header
        assert_eq!(parse_ipv4(&v), Err(DropReason::BadTotalLength));
        // Trailing bytes beyond the total length are ignored.
        let mut v = pkt.clone();
        v.extend_from_slice(&[9, 9]);
        assert_eq!(parse_ipv4(&v).unwrap().payload_end, 28);
    }

    #[test]
    fn ipv4_options_walk() {
        assert_eq!(ipv4_router_alert(&[]), Ok(None));
        assert_eq!(ipv4_router_alert(&[1, 1, 0x94, 4, 0, 0]), Ok(Some(0)));
        assert_eq!(ipv4_router_alert(&[0x94, 4, 0, 42]), Ok(Some(42)));
        assert_eq!(
            ipv4_router_alert(&[0, 0x94, 4, 0, 0]),
            Ok(None),
            "after EOL"
        );
        // A timestamp-like option then RA.
        assert_eq!(
            ipv4_router_alert(&[0x44, 4, 5, 0, 0x94, 4, 0, 0]),
            Ok(Some(0))
        );
        // Truncated: type without length, length beyond the end, length < 2, RA of wrong size.
        assert_eq!(ipv4_router_alert(&[0x94]), Err(DropReason::BadOptions));
        assert_eq!(
            ipv4_router_alert(&[0x94, 4, 0]),
            Err(DropReason::BadOptions)
        );
        assert_eq!(
            ipv4_router_alert(&[0x44, 1, 0, 0]),
            Err(DropReason::BadOptions)
        );
        assert_eq!(
            ipv4_router_alert(&[0x94, 3, 0, 1]),
            Err(DropReason::BadOptions)
        );
    }

    #[test]
    fn hop_by_hop_router_alert_round_trips() {
        let h = hop_by_hop_router_alert(IPV6_RA_RSVP);
        assert_eq!(h, [0, 0, 5, 2, 0, 1, 1, 0]);
        assert_eq!(parse_hop_by_hop(&h), Ok(Some(1)));
        assert_eq!(parse_hop_by_hop(&[0, 0, 1, 4, 0, 0, 0, 0]), Ok(None)); // PadN only
        assert_eq!(parse_hop_by_hop(&[0, 0, 0, 0, 0, 0, 0, 0]), Ok(None)); // Pad1s
        assert_eq!(parse_hop_by_hop(&[0]), Err(DropReason::BadOptions));
        assert_eq!(
            parse_hop_by_hop(&[0, 1, 5, 2, 0, 1, 1, 0]),
            Err(DropReason::BadOptions)
        );
        assert_eq!(
            parse_hop_by_hop(&[0, 0, 5, 9, 0, 1, 1, 0]),
            Err(DropReason::BadOptions)
        );
        assert_eq!(
            parse_hop_by_hop(&[0, 0, 5, 1, 0, 1, 0, 0]),
            Err(DropReason::BadOptions)
        );
    }

    fn v6_packet(next: u8, ext: &[u8], payload: &[u8]) -> Vec<u8> {
        let mut p = vec![0x60, 0, 0, 0];
        p.extend_from_slice(&((ext.len() + payload.len()) as u16).to_be_bytes());
        p.push(next);
        p.push(17);
        p.extend_from_slice(&"fd00::1".parse::<Ipv6Addr>().unwrap().octets());
        p.extend_from_slice(&"fd00:1::2".parse::<Ipv6Addr>().unwrap().octets());
        p.extend_from_slice(ext);
        p.extend_from_slice(payload);
        p
    }

    #[test]
    fn ipv6_packet_with_hop_by_hop_router_alert() {
        let mut hbh = hop_by_hop_router_alert(1);
        hbh[0] = 46;
        let p = v6_packet(0, &hbh, &[0x10, 1, 2, 3]);
        let v = parse_ipv6(&p).unwrap();
        assert_eq!(v.src, "fd00::1".parse::<Ipv6Addr>().unwrap());
        assert_eq!(v.dst, "fd00:1::2".parse::<Ipv6Addr>().unwrap());
        assert_eq!((v.hop_limit, v.protocol, v.router_alert), (17, 46, Some(1)));
        assert_eq!(&p[v.payload_start..v.payload_end], &[0x10, 1, 2, 3]);
        // Destination options after hop-by-hop are skipped.
        let mut ext = hbh.to_vec();
        ext[0] = 60;
        ext.extend_from_slice(&[46, 0, 1, 4, 0, 0, 0, 0]);
        let p = v6_packet(0, &ext, &[9]);
        let v = parse_ipv6(&p).unwrap();
        assert_eq!((v.protocol, v.payload_start), (46, 56));
    }

    #[test]
    fn ipv6_parse_rejects_bad_input() {
        let mut hbh = hop_by_hop_router_alert(1);
        hbh[0] = 46;
        let p = v6_packet(0, &hbh, &[1, 2]);
        assert_eq!(parse_ipv6(&p[..39]), Err(DropReason::ShortHeader));
        let mut v = p.clone();
        v[0] = 0x40;
        assert_eq!(parse_ipv6(&v), Err(DropReason::BadVersion));
        assert_eq!(
            parse_ipv6(&p[..p.len() - 1]),
            Err(DropReason::BadTotalLength)
        );
        // Extension header running past the end.
        let mut v = p.clone();
        v[41] = 3;
        assert_eq!(parse_ipv6(&v), Err(DropReason::BadOptions));
        // Fragment header.
        let v = v6_packet(44, &[46, 0, 0, 1, 0, 0, 0, 1], &[1]);
        assert_eq!(parse_ipv6(&v), Err(DropReason::Fragment));
        // Hop-by-hop not first.
        let v = v6_packet(60, &[0, 0, 1, 4, 0, 0, 0, 0, 46, 0, 1, 4, 0, 0, 0, 0], &[]);
        assert_eq!(parse_ipv6(&v), Err(DropReason::BadOptions));
        // Extension header with no length byte.
        let v = v6_packet(60, &[], &[]);
        assert_eq!(parse_ipv6(&v), Err(DropReason::BadOptions));
    }

    #[test]
    fn drop_reasons_index_their_table() {
        for (i, r) in DropReason::ALL.iter().enumerate() {
            assert_eq!(r.index(), i);
            assert!(!r.name().is_empty());
        }
    }

    #[test]
    fn parsers_never_panic_on_arbitrary_bytes() {
        // A cheap deterministic sweep (the fuzz targets go further).
        let mut x: u32 = 0x1234_5678;
        for len in 0..200usize {
            for _ in 0..50 {
                let mut buf = vec![0u8; len];
                for b in &mut buf {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    *b = x as u8;
                }
                if let Some(b) = buf.first_mut() {
                    *b = if len % 2 == 0 {
                        0x40 | (*b & 0x0f)
                    } else {
                        0x60
                    };
                }
                let _ = parse_ipv4(&buf);
                let _ = parse_ipv6(&buf);
                let _ = parse_hop_by_hop(&buf);
                let _ = ipv4_router_alert(&buf);
            }
        }
    }
}
