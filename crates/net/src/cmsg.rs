//! Ancillary data (`cmsg`) and socket addresses as plain bytes, in safe code.
//!
//! The kernel copies control buffers and socket addresses between user and kernel memory byte by
//! byte, so user buffers need no particular alignment; only the layout matters: a `cmsghdr`
//! (`cmsg_len` as a native `size_t`, then `cmsg_level` and `cmsg_type` as native `int`s), its data
//! at `CMSG_ALIGN(sizeof(cmsghdr))`, the next header at `CMSG_ALIGN(cmsg_len)`, with
//! `CMSG_ALIGN` rounding up to `sizeof(size_t)`. The assertions below pin that layout to libc's.

use std::mem::{offset_of, size_of};
use std::net::{Ipv4Addr, Ipv6Addr};

const WORD: usize = size_of::<usize>();
pub(crate) const HDR: usize = size_of::<libc::cmsghdr>();

// The layout this module writes and reads: cmsg_len in the first word, then level and type.
const _: () = assert!(offset_of!(libc::cmsghdr, cmsg_level) == WORD);
const _: () = assert!(offset_of!(libc::cmsghdr, cmsg_type) == WORD + 4);
const _: () = assert!(HDR == WORD + 8);
const _: () = assert!(size_of::<libc::in_pktinfo>() == 12);
const _: () = assert!(size_of::<libc::in6_pktinfo>() == 20);
const _: () = assert!(size_of::<libc::sockaddr_in>() == SOCKADDR_IN_LEN);
const _: () = assert!(size_of::<libc::sockaddr_in6>() == SOCKADDR_IN6_LEN);

/// `CMSG_ALIGN`.
pub(crate) const fn align(len: usize) -> usize {
    (len + WORD - 1) & !(WORD - 1)
}

/// `CMSG_SPACE(data_len)`: bytes a control message with `data_len` bytes of data occupies.
pub(crate) const fn space(data_len: usize) -> usize {
    align(HDR) + align(data_len)
}

/// Appends one control message to `buf`.
pub(crate) fn push(buf: &mut Vec<u8>, level: libc::c_int, kind: libc::c_int, data: &[u8]) {
    let start = buf.len();
    buf.extend_from_slice(&(align(HDR) + data.len()).to_ne_bytes());
    buf.extend_from_slice(&level.to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.resize(start + align(HDR), 0);
    buf.extend_from_slice(data);
    buf.resize(start + space(data.len()), 0);
}

/// Iterates `(level, type, data)` over a received control buffer; stops at the first malformed
/// header.
pub(crate) fn iter(buf: &[u8]) -> impl Iterator<Item = (libc::c_int, libc::c_int, &[u8])> {
    let mut rest = buf;
    std::iter::from_fn(move || {
        let word: [u8; WORD] = rest.get(..WORD)?.try_into().ok()?;
        let len = usize::from_ne_bytes(word);
        let level = libc::c_int::from_ne_bytes(rest.get(WORD..WORD + 4)?.try_into().ok()?);
        let kind = libc::c_int::from_ne_bytes(rest.get(WORD + 4..WORD + 8)?.try_into().ok()?);
        let data = rest.get(align(HDR)..len)?;
        rest = rest.get(align(len)..).unwrap_or(&[]);
        Some((level, kind, data))
    })
}

/// `struct in_pktinfo { int ipi_ifindex; struct in_addr ipi_spec_dst, ipi_addr; }`.
pub(crate) fn in_pktinfo(ifindex: u32, spec_dst: Ipv4Addr) -> [u8; 12] {
    let mut b = [0u8; 12];
    b[..4].copy_from_slice(&ifindex.to_ne_bytes());
    b[4..8].copy_from_slice(&spec_dst.octets());
    b
}

/// Decodes `in_pktinfo` into (ifindex, header destination address).
pub(crate) fn parse_in_pktinfo(data: &[u8]) -> Option<(u32, Ipv4Addr)> {
    let ifindex = u32::from_ne_bytes(data.get(..4)?.try_into().ok()?);
    let addr: [u8; 4] = data.get(8..12)?.try_into().ok()?;
    Some((ifindex, Ipv4Addr::from(addr)))
}

/// `struct in6_pktinfo { struct in6_addr ipi6_addr; int ipi6_ifindex; }`.
pub(crate) fn in6_pktinfo(addr: Ipv6Addr, ifindex: u32) -> [u8; 20] {
    let mut b = [0u8; 20];
    b[..16].copy_from_slice(&addr.octets());
    b[16..].copy_from_slice(&ifindex.to_ne_bytes());
    b
}

/// Decodes `in6_pktinfo` into (ifindex, destination address).
pub(crate) fn parse_in6_pktinfo(data: &[u8]) -> Option<(u32, Ipv6Addr)> {
    let addr: [u8; 16] = data.get(..16)?.try_into().ok()?;
    let ifindex = u32::from_ne_bytes(data.get(16..20)?.try_into().ok()?);
    Some((ifindex, Ipv6Addr::from(addr)))
}

/// Decodes a native `int` (e.g. `IPV6_HOPLIMIT`).
pub(crate) fn parse_int(data: &[u8]) -> Option<libc::c_int> {
    Some(libc::c_int::from_ne_bytes(data.get(..4)?.try_into().ok()?))
}

/// Size of `sockaddr_in`.
pub(crate) const SOCKADDR_IN_LEN: usize = 16;
/// Size of `sockaddr_in6`.
pub(crate) const SOCKADDR_IN6_LEN: usize = 28;

/// `sockaddr_in` for `addr`, port 0.
pub(crate) fn sockaddr_in(addr: Ipv4Addr) -> [u8; SOCKADDR_IN_LEN] {
    let mut b = [0u8; SOCKADDR_IN_LEN];
    b[..2].copy_from_slice(&(libc::AF_INET as libc::sa_family_t).to_ne_bytes());
    b[4..8].copy_from_slice(&addr.octets());
    b
}

/// `sockaddr_in6` for `addr`, port 0, with `scope_id`.
pub(crate) fn sockaddr_in6(addr: Ipv6Addr, scope_id: u32) -> [u8; SOCKADDR_IN6_LEN] {
    let mut b = [0u8; SOCKADDR_IN6_LEN];
    b[..2].copy_from_slice(&(libc::AF_INET6 as libc::sa_family_t).to_ne_bytes());
    b[8..24].copy_from_slice(&addr.octets());
    b[24..].copy_from_slice(&scope_id.to_ne_bytes());
    b
}

/// The address of a received `sockaddr_in6`.
pub(crate) fn parse_sockaddr_in6(name: &[u8]) -> Option<Ipv6Addr> {
    let family = libc::sa_family_t::from_ne_bytes(name.get(..2)?.try_into().ok()?);
    if libc::c_int::from(family) != libc::AF_INET6 {
        return None;
    }
    let addr: [u8; 16] = name.get(8..24)?.try_into().ok()?;
    Some(Ipv6Addr::from(addr))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_then_iter_round_trips() {
        let mut buf = Vec::new();
        push(
            &mut buf,
            libc::IPPROTO_IP,
            libc::IP_PKTINFO,
            &in_pktinfo(7, Ipv4Addr::UNSPECIFIED),
        );
        push(
            &mut buf,
            libc::IPPROTO_IPV6,
            libc::IPV6_HOPLIMIT,
            &5i32.to_ne_bytes(),
        );
        push(&mut buf, 1, 2, &[9; 5]);
        assert_eq!(buf.len(), space(12) + space(4) + space(5));
        let v: Vec<_> = iter(&buf).collect();
        assert_eq!(v.len(), 3);
        assert_eq!((v[0].0, v[0].1), (libc::IPPROTO_IP, libc::IP_PKTINFO));
        assert_eq!(parse_in_pktinfo(v[0].2).unwrap().0, 7);
        assert_eq!(parse_int(v[1].2), Some(5));
        assert_eq!(v[2].2, &[9; 5]);
        // Truncated buffers end the walk instead of panicking.
        for cut in 0..buf.len() {
            let _ = iter(&buf[..cut]).count();
        }
        let mut bad = buf.clone();
        bad[..WORD].copy_from_slice(&usize::MAX.to_ne_bytes());
        assert_eq!(iter(&bad).count(), 0);
    }

    #[test]
    fn pktinfo_and_sockaddr_codecs() {
        let a6: Ipv6Addr = "fd00::5".parse().unwrap();
        assert_eq!(parse_in6_pktinfo(&in6_pktinfo(a6, 3)), Some((3, a6)));
        assert_eq!(parse_sockaddr_in6(&sockaddr_in6(a6, 2)), Some(a6));
        assert_eq!(parse_sockaddr_in6(&sockaddr_in(Ipv4Addr::LOCALHOST)), None);
        assert_eq!(parse_sockaddr_in6(&[]), None);
        let s = sockaddr_in(Ipv4Addr::new(1, 2, 3, 4));
        assert_eq!(&s[4..8], &[1, 2, 3, 4]);
    }
}
