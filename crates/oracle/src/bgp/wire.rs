//! A small BMP, BGP UPDATE and MRT BGP4MP writer: what a router's BMP session sends, for tests, the
//! `pathwise bench oracle-bgp` feed and fuzz seeds. Parsing goes through `bgpkit-parser`; this
//! writer is independent of it, so tests cross-check the two.
//!
//! AS numbers are written as 4 octets (the per-peer header's A flag clear, RFC 7854 §4.2; RFC
//! 6793 sessions).

use std::net::IpAddr;

use ipnet::IpNet;

/// The BMP peer a message is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peer {
    /// Its address.
    pub address: IpAddr,
    /// Its AS.
    pub asn: u32,
    /// Its BGP Identifier.
    pub bgp_id: [u8; 4],
    /// Per-peer flags beyond V (RFC 7854 §4.2: 0x40 L post-policy; RFC 8671: 0x10 O).
    pub flags: u8,
    /// Peer type (0 global instance).
    pub peer_type: u8,
}

impl Peer {
    /// A global-instance peer, pre-policy.
    pub fn global(address: IpAddr, asn: u32) -> Peer {
        Peer {
            address,
            asn,
            bgp_id: match address {
                IpAddr::V4(a) => a.octets(),
                IpAddr::V6(_) => [192, 0, 2, 1],
            },
            flags: 0,
            peer_type: 0,
        }
    }
}

fn bmp(kind: u8, body: &[u8]) -> Vec<u8> {
    // RFC 7854 §4.1: version, length of the whole message, type.
    let mut m = Vec::with_capacity(6 + body.len());
    m.push(3);
    m.extend_from_slice(&((6 + body.len()) as u32).to_be_bytes());
    m.push(kind);
    m.extend_from_slice(body);
    m
}

fn addr16(a: IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V4(a) => {
            let mut b = [0; 16];
            b[12..].copy_from_slice(&a.octets());
            b
        }
        IpAddr::V6(a) => a.octets(),
    }
}

/// RFC 7854 §4.2 per-peer header (42 bytes).
fn per_peer(p: &Peer, out: &mut Vec<u8>) {
    out.push(p.peer_type);
    let v = if p.address.is_ipv6() { 0x80 } else { 0 };
    out.push(p.flags | v);
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&addr16(p.address));
    out.extend_from_slice(&p.asn.to_be_bytes());
    out.extend_from_slice(&p.bgp_id);
    out.extend_from_slice(&[0; 8]);
}

fn tlv(kind: u16, value: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&kind.to_be_bytes());
    out.extend_from_slice(&(value.len() as u16).to_be_bytes());
    out.extend_from_slice(value);
}

/// Initiation (RFC 7854 §4.3) with sysDescr and sysName.
pub fn initiation(sys_name: &str, sys_descr: &str) -> Vec<u8> {
    let mut b = Vec::new();
    tlv(1, sys_descr.as_bytes(), &mut b);
    tlv(2, sys_name.as_bytes(), &mut b);
    bmp(4, &b)
}

/// Termination (RFC 7854 §4.5), reason 0 (administratively closed).
pub fn termination() -> Vec<u8> {
    let mut b = Vec::new();
    tlv(1, &0u16.to_be_bytes(), &mut b);
    bmp(5, &b)
}

fn bgp(kind: u8, body: &[u8]) -> Vec<u8> {
    // RFC 4271 §4.1: marker, length, type.
    let mut m = vec![0xff; 16];
    m.extend_from_slice(&((19 + body.len()) as u16).to_be_bytes());
    m.push(kind);
    m.extend_from_slice(body);
    m
}

fn open(asn: u32, id: [u8; 4]) -> Vec<u8> {
    // RFC 4271 §4.2 with the 4-octet AS capability (RFC 6793 §3).
    let mut b = vec![4];
    b.extend_from_slice(&u16::try_from(asn).unwrap_or(23456).to_be_bytes());
    b.extend_from_slice(&90u16.to_be_bytes());
    b.extend_from_slice(&id);
    let cap = [2, 6, 65, 4];
    b.push(cap.len() as u8 + 4);
    b.extend_from_slice(&cap);
    b.extend_from_slice(&asn.to_be_bytes());
    bgp(1, &b)
}

/// Peer Up (RFC 7854 §4.10): the exit (`local`, `local_asn`) and the peer.
pub fn peer_up(p: &Peer, local: IpAddr, local_asn: u32) -> Vec<u8> {
    let mut b = Vec::new();
    per_peer(p, &mut b);
    b.extend_from_slice(&addr16(local));
    b.extend_from_slice(&179u16.to_be_bytes());
    b.extend_from_slice(&40000u16.to_be_bytes());
    b.extend_from_slice(&open(local_asn, [10, 0, 0, 1]));
    b.extend_from_slice(&open(p.asn, p.bgp_id));
    bmp(3, &b)
}

/// Peer Down (RFC 7854 §4.9), reason 4: the remote system closed the session without data.
pub fn peer_down(p: &Peer) -> Vec<u8> {
    let mut b = Vec::new();
    per_peer(p, &mut b);
    b.push(4);
    bmp(2, &b)
}

fn nlri(p: &IpNet, out: &mut Vec<u8>) {
    // RFC 4271 §4.3: length in bits, then the prefix in as few octets as hold it.
    let len = p.prefix_len();
    out.push(len);
    let n = usize::from(len).div_ceil(8);
    match p.network() {
        IpAddr::V4(a) => out.extend_from_slice(&a.octets()[..n]),
        IpAddr::V6(a) => out.extend_from_slice(&a.octets()[..n]),
    }
}

fn attr(flags: u8, kind: u8, value: &[u8], out: &mut Vec<u8>) {
    if value.len() > 255 {
        out.push(flags | 0x10);
        out.push(kind);
        out.extend_from_slice(&(value.len() as u16).to_be_bytes());
    } else {
        out.push(flags);
        out.push(kind);
        out.push(value.len() as u8);
    }
    out.extend_from_slice(value);
}

/// A BGP UPDATE (RFC 4271 §4.3; IPv6 in MP_REACH_NLRI / MP_UNREACH_NLRI, RFC 4760 §3–4):
/// `announced` with the AS path `as_path` (an AS_SEQUENCE), and `withdrawn`.
pub fn update(announced: &[IpNet], as_path: &[u32], withdrawn: &[IpNet]) -> Vec<u8> {
    let (a4, a6): (Vec<&IpNet>, Vec<&IpNet>) =
        announced.iter().partition(|p| matches!(p, IpNet::V4(_)));
    let (w4, w6): (Vec<&IpNet>, Vec<&IpNet>) =
        withdrawn.iter().partition(|p| matches!(p, IpNet::V4(_)));
    let mut w = Vec::new();
    for p in &w4 {
        nlri(p, &mut w);
    }
    let mut attrs = Vec::new();
    if !announced.is_empty() {
        attr(0x40, 1, &[0], &mut attrs);
        let mut path = Vec::new();
        for seg in as_path.chunks(255) {
            path.push(2);
            path.push(seg.len() as u8);
            for a in seg {
                path.extend_from_slice(&a.to_be_bytes());
            }
        }
        attr(0x40, 2, &path, &mut attrs);
        if !a4.is_empty() {
            attr(0x40, 3, &[192, 0, 2, 1], &mut attrs);
        }
        if !a6.is_empty() {
            let mut v = vec![0, 2, 1, 16];
            v.extend_from_slice(
                &"2001:db8::1"
                    .parse::<std::net::Ipv6Addr>()
                    .map_or([0; 16], |a| a.octets()),
            );
            v.push(0);
            for p in &a6 {
                nlri(p, &mut v);
            }
            attr(0x80, 14, &v, &mut attrs);
        }
    }
    if !w6.is_empty() {
        let mut v = vec![0, 2, 1];
        for p in &w6 {
            nlri(p, &mut v);
        }
        attr(0x80, 15, &v, &mut attrs);
    }
    let mut body = Vec::new();
    body.extend_from_slice(&(w.len() as u16).to_be_bytes());
    body.extend_from_slice(&w);
    body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    body.extend_from_slice(&attrs);
    for p in &a4 {
        nlri(p, &mut body);
    }
    bgp(2, &body)
}

/// Route Monitoring (RFC 7854 §4.6) carrying one BGP message (e.g. from [`update`]).
pub fn route_monitoring(p: &Peer, bgp_message: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(42 + bgp_message.len());
    per_peer(p, &mut b);
    b.extend_from_slice(bgp_message);
    bmp(0, &b)
}

/// An MRT BGP4MP_MESSAGE_AS4 record (RFC 6396 §2, §4.4.3) carrying `bgp_message` (e.g. from
/// [`update`]) received from `peer` by `local`, with timestamp 0.
pub fn mrt_bgp4mp(
    peer: IpAddr,
    peer_as: u32,
    local: IpAddr,
    local_as: u32,
    bgp_message: &[u8],
) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&peer_as.to_be_bytes());
    body.extend_from_slice(&local_as.to_be_bytes());
    body.extend_from_slice(&0u16.to_be_bytes());
    match (peer, local) {
        (IpAddr::V4(p), IpAddr::V4(l)) => {
            body.extend_from_slice(&1u16.to_be_bytes());
            body.extend_from_slice(&p.octets());
            body.extend_from_slice(&l.octets());
        }
        _ => {
            body.extend_from_slice(&2u16.to_be_bytes());
            body.extend_from_slice(&addr16(peer));
            body.extend_from_slice(&addr16(local));
        }
    }
    body.extend_from_slice(bgp_message);
    let mut r = Vec::with_capacity(12 + body.len());
    r.extend_from_slice(&0u32.to_be_bytes());
    r.extend_from_slice(&16u16.to_be_bytes());
    r.extend_from_slice(&4u16.to_be_bytes());
    r.extend_from_slice(&(body.len() as u32).to_be_bytes());
    r.extend_from_slice(&body);
    r
}
