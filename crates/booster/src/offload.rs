//! TUN offloads as pure code: the `virtio_net_hdr` that precedes every packet on a TUN device
//! opened with `IFF_VNET_HDR`, splitting the kernel's TCP and UDP super-segments into packets
//! the chain can carry (TSO/USO done in user space), completing partial checksums, and
//! coalescing consecutive in-order TCP segments of one flow back into a super-segment the
//! kernel takes whole (GRO done in user space). No sockets, no clock.
//!
//! Driven by the gateway: egress reads `header + packet` from the device and calls
//! [`split`], which appends MTU-sized packets with correct IP and TCP/UDP headers and
//! checksums to a queue from the [`PacketPool`]; ingress feeds every deboosted packet to a
//! [`Coalescer`], which calls back with `header + packet` frames to write to the device.
//!
//! The header (virtio 1.1 §5.1.6, `struct virtio_net_hdr` in `<linux/virtio_net.h>`) is ten
//! bytes in the host's byte order for a legacy (non-`TUNSETVNETLE`) TUN device, which is what
//! the gateway opens. No accessor here panics on any input: lengths are checked before use.
//! Checksums are the Internet checksum (RFC 1071) over the IPv4 header (RFC 791 §3.1) and over
//! the pseudo-header and segment for TCP (RFC 9293 §3.1) and UDP (RFC 768); IPv6 pseudo-header
//! per RFC 8200 §8.1. Those five texts (RFC 768, 791, 1071, 8200, 9293) are missing from the
//! project's RFC library (/work/shared/rfcs, checked 2026-11-24), so these section references
//! are not checked against the texts; the tests check the checksums against a byte-by-byte
//! RFC 1071 reference instead.

use crate::packet::{MAX_PAYLOAD, Packet, PacketPool};

/// Size of `struct virtio_net_hdr` (no `num_buffers`: the TUN default `TUNSETVNETHDRSZ`).
pub const VNET_HDR_LEN: usize = 10;
/// Largest IP packet a super-segment can be (the IPv4 total length field).
pub const MAX_SUPER: usize = 65535;

/// `VIRTIO_NET_HDR_F_NEEDS_CSUM`: the checksum from `csum_start` on is to be completed.
pub const F_NEEDS_CSUM: u8 = 1;
/// `VIRTIO_NET_HDR_F_DATA_VALID`: the checksum was verified.
pub const F_DATA_VALID: u8 = 2;

const IPPROTO_TCP: u8 = 6;
const IPPROTO_UDP: u8 = 17;

/// `gso_type` of the header (`VIRTIO_NET_HDR_GSO_*`; the ECN bit 0x80 kept apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GsoType {
    /// Not a super-segment.
    None,
    /// TCP over IPv4.
    TcpV4,
    /// UDP fragmentation offload (never offered by the gateway).
    Udp,
    /// TCP over IPv6.
    TcpV6,
    /// UDP segmentation (USO), either IP version.
    UdpL4,
    /// Anything else, kept for error reports.
    Unknown(u8),
}

impl GsoType {
    fn from_u8(v: u8) -> Self {
        match v {
            0 => GsoType::None,
            1 => GsoType::TcpV4,
            3 => GsoType::Udp,
            4 => GsoType::TcpV6,
            5 => GsoType::UdpL4,
            n => GsoType::Unknown(n),
        }
    }

    fn to_u8(self) -> u8 {
        match self {
            GsoType::None => 0,
            GsoType::TcpV4 => 1,
            GsoType::Udp => 3,
            GsoType::TcpV6 => 4,
            GsoType::UdpL4 => 5,
            GsoType::Unknown(n) => n,
        }
    }
}

/// `struct virtio_net_hdr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VirtioNetHdr {
    /// `F_NEEDS_CSUM`, `F_DATA_VALID`.
    pub flags: u8,
    /// Segmentation requested.
    pub gso_type: GsoType,
    /// `VIRTIO_NET_HDR_GSO_ECN`: the super-segment carries CWR on its first segment only.
    pub ecn: bool,
    /// Bytes of headers (IP + transport) before the payload (a hint; recomputed here).
    pub hdr_len: u16,
    /// Payload bytes per segment.
    pub gso_size: u16,
    /// Where the checksum to complete starts (the transport header).
    pub csum_start: u16,
    /// Offset of the checksum field from `csum_start`.
    pub csum_offset: u16,
}

impl VirtioNetHdr {
    /// A header that asks for nothing: a whole packet with its checksums complete.
    pub const PLAIN: VirtioNetHdr = VirtioNetHdr {
        flags: 0,
        gso_type: GsoType::None,
        ecn: false,
        hdr_len: 0,
        gso_size: 0,
        csum_start: 0,
        csum_offset: 0,
    };

    /// Parse the first [`VNET_HDR_LEN`] bytes of `frame`; `None` if it is shorter.
    pub fn parse(frame: &[u8]) -> Option<VirtioNetHdr> {
        let b: &[u8; VNET_HDR_LEN] = frame.get(..VNET_HDR_LEN)?.try_into().ok()?;
        let u16_at = |i: usize| u16::from_ne_bytes([b[i], b[i + 1]]);
        Some(VirtioNetHdr {
            flags: b[0],
            gso_type: GsoType::from_u8(b[1] & 0x7f),
            ecn: b[1] & 0x80 != 0,
            hdr_len: u16_at(2),
            gso_size: u16_at(4),
            csum_start: u16_at(6),
            csum_offset: u16_at(8),
        })
    }

    /// Write the header into `out` (at least [`VNET_HDR_LEN`] bytes; `None` if shorter).
    pub fn emit(&self, out: &mut [u8]) -> Option<()> {
        let b = out.get_mut(..VNET_HDR_LEN)?;
        b[0] = self.flags;
        b[1] = self.gso_type.to_u8() | if self.ecn { 0x80 } else { 0 };
        b[2..4].copy_from_slice(&self.hdr_len.to_ne_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_ne_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_ne_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_ne_bytes());
        Some(())
    }
}

/// Why a frame from the device could not be turned into packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OffloadError {
    /// Shorter than the virtio header, or than the headers it describes.
    #[error("truncated frame ({0} bytes)")]
    Truncated(usize),
    /// A segmentation type the gateway did not offer.
    #[error("unsupported gso_type {0}")]
    UnsupportedGso(u8),
    /// The packet does not match what the header says (IP version, protocol, offsets).
    #[error("header and packet disagree")]
    Inconsistent,
    /// A segment size of zero, or one whose packets would not fit a buffer.
    #[error("bad gso_size {0}")]
    BadGsoSize(u16),
    /// A whole packet larger than a packet buffer.
    #[error("packet of {0} bytes too large")]
    TooLarge(usize),
}

/// RFC 1071 one's complement sum of `data` added to `sum` (not folded, not complemented).
pub fn sum_bytes(mut sum: u64, data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        sum += u64::from(u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
    }
    let rest = chunks.remainder();
    let mut i = 0;
    while i + 1 < rest.len() {
        sum += u64::from(u16::from_be_bytes([rest[i], rest[i + 1]]));
        i += 2;
    }
    if i < rest.len() {
        sum += u64::from(rest[i]) << 8;
    }
    sum
}

/// Fold a sum to 16 bits (RFC 1071 §4.1), not complemented.
pub fn fold(mut sum: u64) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Sum of the TCP/UDP pseudo-header of an IP packet whose transport part is `l4_len` bytes.
fn pseudo_sum(ip: &[u8], proto: u8, l4_len: usize) -> u64 {
    let addrs = if ip[0] >> 4 == 4 {
        &ip[12..20]
    } else {
        &ip[8..40]
    };
    sum_bytes(0, addrs) + u64::from(proto) + l4_len as u64
}

/// Set the IPv4 header checksum of `ip` (header of `ihl` bytes).
fn set_ipv4_checksum(ip: &mut [u8], ihl: usize) {
    ip[10..12].fill(0);
    let c = !fold(sum_bytes(0, &ip[..ihl]));
    ip[10..12].copy_from_slice(&c.to_be_bytes());
}

/// Set the full TCP or UDP checksum of `pkt` (IP header of `l3` bytes, transport from there).
fn set_l4_checksum(pkt: &mut [u8], l3: usize, proto: u8) {
    let off = l3 + if proto == IPPROTO_TCP { 16 } else { 6 };
    pkt[off..off + 2].fill(0);
    let l4_len = pkt.len() - l3;
    let mut c = !fold(sum_bytes(pseudo_sum(pkt, proto, l4_len), &pkt[l3..]));
    if proto == IPPROTO_UDP && c == 0 {
        c = 0xffff; // RFC 768: a computed zero is sent as all ones
    }
    pkt[off..off + 2].copy_from_slice(&c.to_be_bytes());
}

/// Whether the TCP/UDP checksum of a whole packet verifies.
fn l4_checksum_ok(pkt: &[u8], l3: usize, proto: u8) -> bool {
    let l4_len = pkt.len() - l3;
    fold(sum_bytes(pseudo_sum(pkt, proto, l4_len), &pkt[l3..])) == 0xffff
}

/// Length of the IP header of `pkt` and its transport protocol, for IPv4 without fragments and
/// IPv6 without extension headers; `None` otherwise.
fn l3_of(pkt: &[u8]) -> Option<(usize, u8)> {
    match pkt.first()? >> 4 {
        4 => {
            let ihl = usize::from(pkt[0] & 0x0f) * 4;
            if ihl < 20 || pkt.len() < ihl {
                return None;
            }
            let frag = u16::from_be_bytes([pkt[6], pkt[7]]);
            if frag & 0x3fff != 0 {
                return None; // MF or an offset: a fragment
            }
            let total = usize::from(u16::from_be_bytes([pkt[2], pkt[3]]));
            (total == pkt.len()).then_some((ihl, pkt[9]))
        }
        6 if pkt.len() >= 40 => {
            let plen = usize::from(u16::from_be_bytes([pkt[4], pkt[5]]));
            (plen + 40 == pkt.len()).then_some((40, pkt[6]))
        }
        _ => None,
    }
}

/// Set the IP length field of a packet of `len` bytes (header of `l3` bytes) and, for IPv4,
/// the identification `id` and header checksum.
fn set_ip_len(pkt: &mut [u8], l3: usize, id: Option<u16>) {
    let len = pkt.len();
    if pkt[0] >> 4 == 4 {
        pkt[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        if let Some(id) = id {
            pkt[4..6].copy_from_slice(&id.to_be_bytes());
        }
        set_ipv4_checksum(pkt, l3);
    } else {
        pkt[4..6].copy_from_slice(&((len - 40) as u16).to_be_bytes());
    }
}

/// Turn one frame read from the device (`virtio_net_hdr` + IP packet) into whole packets in
/// buffers from `pool`, appended to `out`; returns how many. A packet that is not a
/// super-segment is copied as is, its checksum completed if the header asks for it; a TCP or
/// UDP super-segment is cut into `gso_size`-byte payloads, each with its own IP and transport
/// header: IPv4 identification counting up from the first, TCP sequence numbers advanced, FIN
/// and PSH on the last segment only, CWR on the first only (the kernel's `tcp_gso_segment`
/// does the same), every checksum complete. Nothing is appended on error.
pub fn split(
    frame: &[u8],
    pool: &mut PacketPool,
    out: &mut Vec<Packet>,
) -> Result<usize, OffloadError> {
    let hdr = VirtioNetHdr::parse(frame).ok_or(OffloadError::Truncated(frame.len()))?;
    let pkt = &frame[VNET_HDR_LEN..];
    match hdr.gso_type {
        GsoType::None => {
            if pkt.len() > MAX_PAYLOAD {
                return Err(OffloadError::TooLarge(pkt.len()));
            }
            let mut p = pool.get();
            // Length checked above: it fits.
            let _ = p.set_payload(pkt);
            if hdr.flags & F_NEEDS_CSUM != 0 {
                let start = usize::from(hdr.csum_start);
                let field = start + usize::from(hdr.csum_offset);
                let body = p.payload_mut();
                if field + 2 > body.len() || start > body.len() {
                    pool.put(p);
                    return Err(OffloadError::Inconsistent);
                }
                // The field holds the pseudo-header sum: summing over it completes it.
                let c = !fold(sum_bytes(0, &body[start..]));
                body[field..field + 2].copy_from_slice(&c.to_be_bytes());
            }
            out.push(p);
            Ok(1)
        }
        GsoType::TcpV4 | GsoType::TcpV6 | GsoType::UdpL4 => split_gso(&hdr, pkt, pool, out),
        other => Err(OffloadError::UnsupportedGso(other.to_u8())),
    }
}

fn split_gso(
    hdr: &VirtioNetHdr,
    pkt: &[u8],
    pool: &mut PacketPool,
    out: &mut Vec<Packet>,
) -> Result<usize, OffloadError> {
    let version = pkt.first().ok_or(OffloadError::Truncated(0))? >> 4;
    // The IP length field of a super-segment is the whole packet (or 0 above 64 KiB for
    // IPv6 jumbograms, which are refused); l3_of checks it against what was read.
    let (l3, proto) = l3_of(pkt).ok_or(OffloadError::Inconsistent)?;
    let want = match hdr.gso_type {
        GsoType::TcpV4 => (4, IPPROTO_TCP),
        GsoType::TcpV6 => (6, IPPROTO_TCP),
        _ => (version, IPPROTO_UDP),
    };
    if (version, proto) != want {
        return Err(OffloadError::Inconsistent);
    }
    let l4_hdr = if proto == IPPROTO_TCP {
        let doff = usize::from(pkt.get(l3 + 12).ok_or(OffloadError::Truncated(pkt.len()))? >> 4);
        doff * 4
    } else {
        8
    };
    let headers = l3 + l4_hdr;
    let min_l4 = if proto == IPPROTO_TCP { 20 } else { 8 };
    if l4_hdr < min_l4 || pkt.len() < headers {
        return Err(OffloadError::Truncated(pkt.len()));
    }
    let mss = usize::from(hdr.gso_size);
    if mss == 0 || headers + mss > MAX_PAYLOAD {
        return Err(OffloadError::BadGsoSize(hdr.gso_size));
    }
    let payload = &pkt[headers..];
    let n = payload.len().div_ceil(mss).max(1);
    let id0 = u16::from_be_bytes([pkt[4], pkt[5]]);
    let seq0 = (proto == IPPROTO_TCP)
        .then(|| u32::from_be_bytes([pkt[l3 + 4], pkt[l3 + 5], pkt[l3 + 6], pkt[l3 + 7]]));
    for (i, chunk) in payload
        .chunks(mss)
        .chain((payload.is_empty()).then_some(&[][..]))
        .enumerate()
    {
        let mut p = pool.get();
        let len = headers + chunk.len();
        let Some(buf) = p.push_back(len) else {
            pool.put(p);
            return Err(OffloadError::BadGsoSize(hdr.gso_size));
        };
        buf[..headers].copy_from_slice(&pkt[..headers]);
        buf[headers..].copy_from_slice(chunk);
        let ipv4_id = (version == 4).then(|| id0.wrapping_add(i as u16));
        set_ip_len(buf, l3, ipv4_id);
        match seq0 {
            Some(seq0) => {
                let seq = seq0.wrapping_add((i * mss) as u32);
                buf[l3 + 4..l3 + 8].copy_from_slice(&seq.to_be_bytes());
                let flags = &mut buf[l3 + 13];
                if i + 1 < n {
                    *flags &= !(0x01 | 0x08); // FIN, PSH: last segment only
                }
                if i > 0 {
                    *flags &= !0x80; // CWR: first segment only
                }
            }
            None => {
                let ulen = (len - l3) as u16;
                buf[l3 + 4..l3 + 6].copy_from_slice(&ulen.to_be_bytes());
            }
        }
        set_l4_checksum(buf, l3, proto);
        out.push(p);
    }
    Ok(n)
}

/// The super-segment being built by a [`Coalescer`].
#[derive(Debug, Clone, Copy)]
struct Pending {
    /// IP header length.
    l3: usize,
    /// TCP or UDP.
    proto: u8,
    /// IP + TCP (UDP) header length.
    headers: usize,
    /// Payload bytes of the first segment (every one but the last has as many).
    mss: usize,
    /// Segments in it.
    segments: usize,
    /// Sequence number the next segment must carry (TCP).
    next_seq: u32,
    /// No further segment may join (the last was short or carried PSH).
    closed: bool,
}

/// Datagrams in one UDP super-segment at most: what a sender may put in one `UDP_SEGMENT`
/// send on older kernels (their `UDP_MAX_SEGMENTS`), so no receiver meets a larger run than a
/// local sender could make. The 64 KiB bound alone keeps 1300-byte datagrams to 50.
const MAX_UDP_SEGMENTS: usize = 64;

/// Coalesces consecutive in-order TCP segments of one flow into one super-segment written with
/// a GSO `virtio_net_hdr` (what the kernel's GRO does on a NIC). Segments join only when
/// everything but the IP length, identification and checksum and the TCP sequence number and
/// checksum is equal — addresses, ports, TOS/traffic class, TTL, ACK number, window, options
/// (timestamps included) — their sequence numbers follow on, only ACK (and PSH, which closes
/// the super-segment) is set, every earlier segment is `mss` bytes long, and each segment's TCP
/// checksum verifies (the kernel will not check a coalesced one again). Anything else is
/// written on its own with a header that asks for nothing, after the pending super-segment:
/// the order of packets is kept exactly.
///
/// With [`Coalescer::with_udp`], consecutive UDP datagrams of one flow are coalesced the same
/// way into a USO super-segment (`VIRTIO_NET_HDR_GSO_UDP_L4`, which the kernel takes from
/// Linux 6.2 and cuts back into the datagrams with `__udp_gso_segment`): IP headers agreeing
/// as for TCP, the same ports, every earlier datagram as long as the first (a shorter one
/// ends the run), each one's UDP checksum present and verifying, at most
/// [`MAX_UDP_SEGMENTS`]. What the receiver gets back is each datagram's bytes with the IPv4
/// identification counting up from the first's, as after any GSO.
#[derive(Debug)]
pub struct Coalescer {
    buf: Vec<u8>,
    pending: Option<Pending>,
    enabled: bool,
    udp: bool,
}

impl Coalescer {
    /// A coalescer of TCP segments; with `enabled` false every packet is written on its own.
    pub fn new(enabled: bool) -> Self {
        Coalescer {
            buf: Vec::with_capacity(VNET_HDR_LEN + MAX_SUPER),
            pending: None,
            enabled,
            udp: false,
        }
    }

    /// Coalesce UDP datagrams too (when `udp` and the coalescer is enabled): only for a device
    /// that took the USO offload flags, the sign that its kernel knows USO frames.
    pub fn with_udp(mut self, udp: bool) -> Self {
        self.udp = udp && self.enabled;
        self
    }

    /// Offer the next packet. Frames ready to be written (virtio header + packet) are passed to
    /// `write` with the number of packets in them.
    pub fn push(&mut self, pkt: &[u8], write: &mut impl FnMut(&[u8], usize)) {
        if self.enabled && self.try_append(pkt) {
            return;
        }
        self.flush(write);
        if self.enabled
            && let Some(p) = self.start(pkt)
        {
            self.buf.clear();
            self.buf.extend_from_slice(&[0; VNET_HDR_LEN]);
            self.buf.extend_from_slice(pkt);
            self.pending = Some(p);
            return;
        }
        self.buf.clear();
        self.buf.extend_from_slice(&[0; VNET_HDR_LEN]);
        self.buf.extend_from_slice(pkt);
        write(&self.buf, 1);
        self.buf.clear();
    }

    /// Write the pending super-segment, if any.
    pub fn flush(&mut self, write: &mut impl FnMut(&[u8], usize)) {
        let Some(p) = self.pending.take() else {
            return;
        };
        if p.segments > 1 {
            let pkt = &mut self.buf[VNET_HDR_LEN..];
            let v4 = pkt[0] >> 4 == 4;
            set_ip_len(pkt, p.l3, None);
            let l4_len = pkt.len() - p.l3;
            let (gso_type, csum_offset) = if p.proto == IPPROTO_UDP {
                // The UDP length of the whole run: the kernel's segmentation rewrites it per
                // datagram and adjusts the checksum by the difference.
                pkt[p.l3 + 4..p.l3 + 6].copy_from_slice(&(l4_len as u16).to_be_bytes());
                (GsoType::UdpL4, 6)
            } else if v4 {
                (GsoType::TcpV4, 16)
            } else {
                (GsoType::TcpV6, 16)
            };
            // CHECKSUM_PARTIAL: the field holds the pseudo-header sum, uncomplemented.
            let ps = fold(pseudo_sum(pkt, p.proto, l4_len));
            let field = p.l3 + csum_offset;
            pkt[field..field + 2].copy_from_slice(&ps.to_be_bytes());
            let hdr = VirtioNetHdr {
                flags: F_NEEDS_CSUM,
                gso_type,
                ecn: false,
                hdr_len: p.headers as u16,
                gso_size: p.mss as u16,
                csum_start: p.l3 as u16,
                csum_offset: csum_offset as u16,
            };
            let _ = hdr.emit(&mut self.buf);
        }
        write(&self.buf, p.segments);
        self.buf.clear();
    }

    /// The state of a super-segment that `pkt` can start, if it can start one.
    fn start(&self, pkt: &[u8]) -> Option<Pending> {
        let (l3, proto) = l3_of(pkt)?;
        if pkt[0] >> 4 == 4 && l3 != 20 {
            return None;
        }
        match proto {
            IPPROTO_TCP => Self::start_tcp(pkt, l3),
            IPPROTO_UDP if self.udp => Self::start_udp(pkt, l3),
            _ => None,
        }
    }

    /// A UDP datagram with a payload, a UDP length that is the packet's, and a checksum that
    /// is present (an IPv4 zero means none, and a run's would be computed) and verifies.
    fn start_udp(pkt: &[u8], l3: usize) -> Option<Pending> {
        let headers = l3 + 8;
        let ulen = usize::from(u16::from_be_bytes([*pkt.get(l3 + 4)?, *pkt.get(l3 + 5)?]));
        if pkt.len() <= headers
            || ulen != pkt.len() - l3
            || pkt[l3 + 6..l3 + 8] == [0, 0]
            || !l4_checksum_ok(pkt, l3, IPPROTO_UDP)
        {
            return None;
        }
        Some(Pending {
            l3,
            proto: IPPROTO_UDP,
            headers,
            mss: pkt.len() - headers,
            segments: 1,
            next_seq: 0,
            closed: false,
        })
    }

    fn start_tcp(pkt: &[u8], l3: usize) -> Option<Pending> {
        let headers = l3 + usize::from(*pkt.get(l3 + 12)? >> 4) * 4;
        if headers < l3 + 20 || pkt.len() <= headers {
            return None;
        }
        let flags = pkt[l3 + 13];
        // ACK alone, or ACK|PSH (then nothing may follow).
        if flags & !0x08 != 0x10 || !l4_checksum_ok(pkt, l3, IPPROTO_TCP) {
            return None;
        }
        let mss = pkt.len() - headers;
        let seq = u32::from_be_bytes([pkt[l3 + 4], pkt[l3 + 5], pkt[l3 + 6], pkt[l3 + 7]]);
        Some(Pending {
            l3,
            proto: IPPROTO_TCP,
            headers,
            mss,
            segments: 1,
            next_seq: seq.wrapping_add(mss as u32),
            closed: flags & 0x08 != 0,
        })
    }

    /// Append `pkt` to the pending super-segment if it belongs there.
    fn try_append(&mut self, pkt: &[u8]) -> bool {
        let Some(mut p) = self.pending else {
            return false;
        };
        if p.closed {
            return false;
        }
        let Some(q) = self.start(pkt) else {
            return false;
        };
        // `start` saw at least one payload byte after q.headers.
        let head = &self.buf[VNET_HDR_LEN..VNET_HDR_LEN + p.headers];
        if q.proto != p.proto
            || q.headers != p.headers
            || q.mss > p.mss
            || self.buf.len() - VNET_HDR_LEN + q.mss > MAX_SUPER
        {
            return false;
        }
        if p.proto == IPPROTO_UDP {
            if p.segments >= MAX_UDP_SEGMENTS || !same_udp_flow(head, pkt, p.l3) {
                return false;
            }
            self.buf.extend_from_slice(&pkt[p.headers..]);
            p.segments += 1;
            p.closed = q.mss < p.mss;
            self.pending = Some(p);
            return true;
        }
        if !same_flow_headers(head, pkt, p.l3) {
            return false;
        }
        let seq = u32::from_be_bytes([pkt[p.l3 + 4], pkt[p.l3 + 5], pkt[p.l3 + 6], pkt[p.l3 + 7]]);
        if seq != p.next_seq {
            return false;
        }
        self.buf.extend_from_slice(&pkt[p.headers..]);
        p.segments += 1;
        p.next_seq = seq.wrapping_add(q.mss as u32);
        // A short segment or PSH ends it; PSH is carried on the super-segment.
        p.closed = q.mss < p.mss || q.closed;
        if q.closed {
            self.buf[VNET_HDR_LEN + p.l3 + 13] |= 0x08;
        }
        self.pending = Some(p);
        true
    }
}

/// Whether two IP headers (`a` the pending super-segment's, `b` the new packet's) agree in
/// everything that must be equal to coalesce their packets.
fn same_ip_header(a: &[u8], b: &[u8]) -> bool {
    if a[0] >> 4 == 4 {
        // Version/IHL, TOS; flags (DF) and TTL, protocol; addresses.
        a[0..2] == b[0..2] && a[6..10] == b[6..10] && a[12..20] == b[12..20]
    } else {
        // Version, traffic class, flow label; next header, hop limit; addresses.
        a[0..4] == b[0..4] && a[6..40] == b[6..40]
    }
}

/// Whether two UDP datagrams are of one flow: IP headers as [`same_ip_header`], same ports.
fn same_udp_flow(a: &[u8], b: &[u8], l3: usize) -> bool {
    same_ip_header(a, b) && a[l3..l3 + 4] == b[l3..l3 + 4]
}

/// Whether two TCP segments' headers (`a` the pending one's, `b` the new packet) agree in
/// everything that must be equal to coalesce them.
fn same_flow_headers(a: &[u8], b: &[u8], l3: usize) -> bool {
    let t = l3;
    let headers = a.len();
    // Ports; ACK number; data offset, flags except PSH; window; urgent pointer; options.
    same_ip_header(a, b)
        && a[t..t + 4] == b[t..t + 4]
        && a[t + 8..t + 13] == b[t + 8..t + 13]
        && a[t + 13] & !0x08 == b[t + 13] & !0x08
        && a[t + 14..t + 16] == b[t + 14..t + 16]
        && a[t + 18..headers] == b[t + 18..headers]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 1071 the slow way, byte pairs one at a time: the reference the fast sum is checked
    /// against.
    fn reference_checksum(parts: &[&[u8]]) -> u16 {
        let bytes: Vec<u8> = parts.concat();
        let mut sum: u32 = 0;
        for pair in bytes.chunks(2) {
            let word = u32::from(pair[0]) << 8 | u32::from(*pair.get(1).unwrap_or(&0));
            sum += word;
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    /// Verify `pkt`'s IPv4 header checksum and TCP/UDP checksum with the reference.
    fn verify(pkt: &[u8]) -> (usize, u8) {
        let (l3, proto) = l3_of(pkt).expect("well-formed IP");
        if pkt[0] >> 4 == 4 {
            assert_eq!(reference_checksum(&[&pkt[..l3]]), 0, "IPv4 header checksum");
        }
        let l4 = &pkt[l3..];
        let len = (l4.len() as u32).to_be_bytes();
        let pseudo: Vec<u8> = if pkt[0] >> 4 == 4 {
            [&pkt[12..20], &[0, proto], &len[2..]].concat()
        } else {
            [&pkt[8..40], &len[..], &[0, 0, 0, proto]].concat()
        };
        assert_eq!(
            reference_checksum(&[&pseudo, l4]),
            0,
            "transport checksum of a {proto} segment"
        );
        (l3, proto)
    }

    fn tcp_packet(v6: bool, seq: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
        tcp_packet_id(v6, 0x1234, seq, flags, payload)
    }

    fn tcp_packet_id(v6: bool, id: u16, seq: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
        let mut tcp = vec![0u8; 32];
        tcp[0..4].copy_from_slice(&[0x9c, 0x40, 0x14, 0x51]); // 40000 → 5201
        tcp[4..8].copy_from_slice(&seq.to_be_bytes());
        tcp[8..12].copy_from_slice(&77u32.to_be_bytes());
        tcp[12] = 8 << 4; // 32 bytes: 12 of options
        tcp[13] = flags;
        tcp[14..16].copy_from_slice(&502u16.to_be_bytes());
        tcp[20..32].copy_from_slice(&[1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 7]); // NOP NOP TS
        tcp.extend_from_slice(payload);
        let mut p = ip_header(v6, IPPROTO_TCP, tcp.len());
        let l3 = p.len();
        p.extend_from_slice(&tcp);
        if !v6 {
            p[4..6].copy_from_slice(&id.to_be_bytes());
            set_ipv4_checksum(&mut p, 20);
        }
        set_l4_checksum(&mut p, l3, IPPROTO_TCP);
        p
    }

    fn ip_header(v6: bool, proto: u8, l4_len: usize) -> Vec<u8> {
        if v6 {
            let mut h = vec![0x60, 0, 0, 0];
            h.extend_from_slice(&(l4_len as u16).to_be_bytes());
            h.extend_from_slice(&[proto, 64]);
            h.extend_from_slice(&[0x20, 1, 0xd, 0xb8].repeat(4));
            h.extend_from_slice(&[0x20, 1, 0xd, 0xb9].repeat(4));
            h
        } else {
            let total = (20 + l4_len) as u16;
            let mut h = vec![0x45, 0];
            h.extend_from_slice(&total.to_be_bytes());
            h.extend_from_slice(&[0x12, 0x34, 0x40, 0, 64, proto, 0, 0]);
            h.extend_from_slice(&[10, 77, 1, 2, 10, 77, 2, 2]);
            h
        }
    }

    /// `pkt` behind the virtio-net header `hdr`, as the TUN device hands it over.
    fn framed(hdr: VirtioNetHdr, pkt: &[u8]) -> Vec<u8> {
        let mut frame = vec![0u8; VNET_HDR_LEN];
        hdr.emit(&mut frame).unwrap();
        frame.extend_from_slice(pkt);
        frame
    }

    fn payload(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    /// A super-segment as the kernel hands it over: IP length of the whole, TCP checksum field
    /// holding the pseudo-header sum (CHECKSUM_PARTIAL).
    fn super_segment(v6: bool, mss: u16, flags: u8, data: &[u8]) -> Vec<u8> {
        let mut pkt = tcp_packet(v6, 1000, flags, data);
        let l3 = if v6 { 40 } else { 20 };
        let ps = fold(pseudo_sum(&pkt, IPPROTO_TCP, pkt.len() - l3));
        pkt[l3 + 16..l3 + 18].copy_from_slice(&ps.to_be_bytes());
        framed(
            VirtioNetHdr {
                flags: F_NEEDS_CSUM,
                gso_type: if v6 { GsoType::TcpV6 } else { GsoType::TcpV4 },
                ecn: false,
                hdr_len: (l3 + 32) as u16,
                gso_size: mss,
                csum_start: l3 as u16,
                csum_offset: 16,
            },
            &pkt,
        )
    }

    #[test]
    fn header_round_trip_and_byte_layout() {
        let h = VirtioNetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GsoType::TcpV4,
            ecn: true,
            hdr_len: 52,
            gso_size: 1348,
            csum_start: 20,
            csum_offset: 16,
        };
        let mut b = [0xa5u8; 12];
        h.emit(&mut b).unwrap();
        assert_eq!(b[0], 1);
        assert_eq!(b[1], 0x81);
        assert_eq!(&b[4..6], &1348u16.to_ne_bytes());
        assert_eq!(&b[10..], &[0xa5, 0xa5], "nothing written past the header");
        assert_eq!(VirtioNetHdr::parse(&b), Some(h));
        assert_eq!(VirtioNetHdr::parse(&b[..9]), None);
        assert!(h.emit(&mut [0u8; 9]).is_none());
        let mut u = b;
        u[1] = 9;
        assert_eq!(
            VirtioNetHdr::parse(&u).unwrap().gso_type,
            GsoType::Unknown(9)
        );
        assert_eq!(
            GsoType::from_u8(GsoType::Unknown(9).to_u8()),
            GsoType::Unknown(9)
        );
    }

    #[test]
    fn fast_sum_matches_the_reference_on_odd_lengths() {
        for n in [0usize, 1, 2, 3, 5, 7, 64, 1399, 1400] {
            let d = payload(n);
            assert_eq!(!fold(sum_bytes(0, &d)), reference_checksum(&[&d]), "{n}");
        }
    }

    fn check_split(v6: bool, mss: u16, flags: u8, n: usize) {
        let data = payload(n);
        let frame = super_segment(v6, mss, flags, &data);
        let mut pool = PacketPool::with_capacity(4);
        let mut out = Vec::new();
        let count = split(&frame, &mut pool, &mut out).unwrap();
        assert_eq!(count, out.len());
        assert_eq!(count, n.div_ceil(usize::from(mss)).max(1));
        let mut joined = Vec::new();
        for (i, p) in out.iter().enumerate() {
            let pkt = p.payload();
            let (l3, _) = verify(pkt);
            assert!(pkt.len() - l3 - 32 <= usize::from(mss));
            let seq = u32::from_be_bytes(pkt[l3 + 4..l3 + 8].try_into().unwrap());
            assert_eq!(seq, 1000 + (i * usize::from(mss)) as u32);
            let f = pkt[l3 + 13];
            let last = i + 1 == count;
            assert_eq!(
                f & 0x09 != 0,
                last && flags & 0x09 != 0,
                "FIN/PSH on the last"
            );
            assert_eq!(
                f & 0x80 != 0,
                i == 0 && flags & 0x80 != 0,
                "CWR on the first"
            );
            if !v6 {
                let id = u16::from_be_bytes([pkt[4], pkt[5]]);
                assert_eq!(id, 0x1234u16.wrapping_add(i as u16));
            }
            assert_eq!(
                &pkt[l3 + 20..l3 + 32],
                &frame[VNET_HDR_LEN + l3 + 20..][..12]
            );
            joined.extend_from_slice(&pkt[l3 + 32..]);
        }
        assert_eq!(joined, data);
    }

    #[test]
    fn split_cuts_tcp_super_segments_with_valid_checksums() {
        check_split(false, 1348, 0x18, 65_000 - 52);
        check_split(false, 1348, 0x10, 1348 * 3);
        check_split(false, 536, 0x19 | 0x80, 5000);
        check_split(true, 1328, 0x18, 40_000);
        check_split(true, 1328, 0x11, 100);
    }

    #[test]
    fn split_cuts_udp_super_segments() {
        let data = payload(5000);
        let mut pkt = ip_header(false, IPPROTO_UDP, 8 + data.len());
        pkt.extend_from_slice(&[0x1f, 0x40, 0x1f, 0x41, 0, 0, 0, 0]);
        pkt.extend_from_slice(&data);
        let frame = framed(
            VirtioNetHdr {
                gso_type: GsoType::UdpL4,
                gso_size: 1200,
                flags: F_NEEDS_CSUM,
                csum_start: 20,
                csum_offset: 6,
                ..VirtioNetHdr::PLAIN
            },
            &pkt,
        );
        let mut pool = PacketPool::default();
        let mut out = Vec::new();
        assert_eq!(split(&frame, &mut pool, &mut out), Ok(5));
        let mut joined = Vec::new();
        for p in &out {
            let pkt = p.payload();
            verify(pkt);
            let ulen = u16::from_be_bytes([pkt[24], pkt[25]]);
            assert_eq!(usize::from(ulen), pkt.len() - 20);
            joined.extend_from_slice(&pkt[28..]);
        }
        assert_eq!(joined, data);
    }

    #[test]
    fn split_completes_a_partial_checksum_and_refuses_nonsense() {
        let mut pkt = tcp_packet(false, 5, 0x18, b"hello");
        let ps = fold(pseudo_sum(&pkt, IPPROTO_TCP, pkt.len() - 20));
        pkt[36..38].copy_from_slice(&ps.to_be_bytes());
        let frame = framed(
            VirtioNetHdr {
                flags: F_NEEDS_CSUM,
                csum_start: 20,
                csum_offset: 16,
                ..VirtioNetHdr::PLAIN
            },
            &pkt,
        );
        let mut pool = PacketPool::default();
        let mut out = Vec::new();
        assert_eq!(split(&frame, &mut pool, &mut out), Ok(1));
        verify(out[0].payload());
        // Truncated, checksum beyond the end, unsupported and inconsistent requests.
        assert!(split(&frame[..5], &mut pool, &mut out).is_err());
        let mut bad = frame.clone();
        bad[6..8].copy_from_slice(&4000u16.to_ne_bytes());
        assert_eq!(
            split(&bad, &mut pool, &mut out),
            Err(OffloadError::Inconsistent)
        );
        let mut ufo = super_segment(false, 1000, 0x10, &payload(3000));
        ufo[1] = 3;
        assert_eq!(
            split(&ufo, &mut pool, &mut out),
            Err(OffloadError::UnsupportedGso(3))
        );
        let mut v6_as_v4 = super_segment(true, 1000, 0x10, &payload(3000));
        v6_as_v4[1] = 1;
        assert_eq!(
            split(&v6_as_v4, &mut pool, &mut out),
            Err(OffloadError::Inconsistent)
        );
        let mut zero = super_segment(false, 1000, 0x10, &payload(3000));
        zero[4..6].fill(0);
        assert_eq!(
            split(&zero, &mut pool, &mut out),
            Err(OffloadError::BadGsoSize(0))
        );
        let short = super_segment(false, 1000, 0x10, &payload(3000));
        assert_eq!(
            split(&short[..short.len() - 1], &mut pool, &mut out),
            Err(OffloadError::Inconsistent),
            "IP length disagrees with what was read"
        );
        assert_eq!(out.len(), 1, "nothing appended on error");
        // Every prefix of every frame: an error or packets, never a panic.
        for f in [&frame, &ufo, &short] {
            for n in 0..f.len() {
                let _ = split(&f[..n], &mut pool, &mut out);
            }
        }
    }

    fn coalesce(c: &mut Coalescer, pkts: &[Vec<u8>]) -> Vec<(Vec<u8>, usize)> {
        let mut frames = Vec::new();
        let mut w = |f: &[u8], n: usize| frames.push((f.to_vec(), n));
        for p in pkts {
            c.push(p, &mut w);
        }
        c.flush(&mut w);
        frames
    }

    /// Split a coalesced frame back with [`split`]: what the kernel does with it.
    fn resplit(frame: &[u8]) -> Vec<Vec<u8>> {
        let mut pool = PacketPool::default();
        let mut out = Vec::new();
        split(frame, &mut pool, &mut out).unwrap();
        out.iter().map(|p| p.payload().to_vec()).collect()
    }

    #[test]
    fn coalescing_joins_in_order_segments_and_splits_back_to_the_same_packets() {
        for v6 in [false, true] {
            let mss = 1300;
            let data = payload(mss * 5 + 100);
            let segs: Vec<Vec<u8>> = data
                .chunks(mss)
                .enumerate()
                .map(|(i, c)| {
                    let last = (i + 1) * mss >= data.len();
                    let flags = if last { 0x18 } else { 0x10 };
                    tcp_packet_id(v6, 0x1234 + i as u16, 1000 + (i * mss) as u32, flags, c)
                })
                .collect();
            let frames = coalesce(&mut Coalescer::new(true), &segs);
            assert_eq!(frames.len(), 1);
            assert_eq!(frames[0].1, 6);
            let hdr = VirtioNetHdr::parse(&frames[0].0).unwrap();
            assert_eq!(hdr.gso_size as usize, mss);
            assert_eq!(hdr.flags, F_NEEDS_CSUM);
            let back = resplit(&frames[0].0);
            for (a, b) in back.iter().zip(&segs) {
                assert_eq!(a, b, "segment differs after split (v6 {v6})");
            }
            assert_eq!(back.len(), segs.len());
            // Disabled: one plain frame per packet, unchanged.
            let plain = coalesce(&mut Coalescer::new(false), &segs);
            assert_eq!(plain.len(), segs.len());
            for ((f, n), s) in plain.iter().zip(&segs) {
                assert_eq!((&f[VNET_HDR_LEN..], *n), (&s[..], 1));
                assert_eq!(VirtioNetHdr::parse(f), Some(VirtioNetHdr::PLAIN));
            }
        }
    }

    /// A UDP datagram from 10.77.1.2 (2001:db8::…) port `sport` to port 8001 with IPv4
    /// identification `id` and every checksum complete.
    fn udp_packet(v6: bool, id: u16, sport: u16, data: &[u8]) -> Vec<u8> {
        let mut p = ip_header(v6, IPPROTO_UDP, 8 + data.len());
        let l3 = p.len();
        p.extend_from_slice(&sport.to_be_bytes());
        p.extend_from_slice(&[0x1f, 0x41]);
        p.extend_from_slice(&((8 + data.len()) as u16).to_be_bytes());
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(data);
        if !v6 {
            p[4..6].copy_from_slice(&id.to_be_bytes());
            set_ipv4_checksum(&mut p, 20);
        }
        set_l4_checksum(&mut p, l3, IPPROTO_UDP);
        p
    }

    #[test]
    fn udp_datagrams_of_a_flow_coalesce_into_a_uso_frame_that_splits_back() {
        for v6 in [false, true] {
            let l3 = if v6 { 40 } else { 20 };
            // Five of 1300 bytes and a shorter last one, different payloads, IDs counting up.
            let dgrams: Vec<Vec<u8>> = (0..6)
                .map(|i| {
                    let n = if i == 5 { 700 } else { 1300 };
                    let mut d = payload(n);
                    d[0] = i as u8;
                    udp_packet(v6, 0x2000 + i as u16, 7000, &d)
                })
                .collect();
            let frames = coalesce(&mut Coalescer::new(true).with_udp(true), &dgrams);
            assert_eq!(frames.len(), 1, "v6 {v6}");
            assert_eq!(frames[0].1, 6);
            let hdr = VirtioNetHdr::parse(&frames[0].0).unwrap();
            assert_eq!(
                (hdr.gso_type, hdr.gso_size, hdr.flags, hdr.hdr_len),
                (GsoType::UdpL4, 1300, F_NEEDS_CSUM, (l3 + 8) as u16)
            );
            assert_eq!((hdr.csum_start, hdr.csum_offset), (l3 as u16, 6));
            let pkt = &frames[0].0[VNET_HDR_LEN..];
            let ulen = u16::from_be_bytes([pkt[l3 + 4], pkt[l3 + 5]]);
            assert_eq!(
                usize::from(ulen),
                pkt.len() - l3,
                "UDP length of the whole run"
            );
            assert_eq!(resplit(&frames[0].0), dgrams, "v6 {v6}");
            // Without with_udp (a device without USO) each goes on its own, unchanged.
            let plain = coalesce(&mut Coalescer::new(true), &dgrams);
            assert_eq!(plain.len(), 6);
            assert!(
                plain
                    .iter()
                    .zip(&dgrams)
                    .all(|((f, _), d)| &f[VNET_HDR_LEN..] == d)
            );
            // Nor when coalescing is off altogether.
            assert_eq!(
                coalesce(&mut Coalescer::new(false).with_udp(true), &dgrams).len(),
                6
            );
        }
    }

    #[test]
    fn udp_runs_break_where_the_datagrams_differ() {
        let d = |id: u16, sport: u16, n: usize| udp_packet(false, id, sport, &payload(n));
        let mut no_sum = d(5, 7000, 1000);
        no_sum[26..28].fill(0);
        let mut bad_sum = d(6, 7000, 1000);
        bad_sum[40] ^= 1;
        let mut other_tos = d(9, 7000, 1000);
        other_tos[1] = 0x10;
        set_ipv4_checksum(&mut other_tos, 20);
        let pkts = vec![
            d(1, 7000, 1000),
            d(2, 7000, 1000),
            d(3, 7001, 1000), // another flow
            d(4, 7001, 1200), // longer than the run's first
            no_sum,           // no checksum (IPv4 zero)
            bad_sum,          // a checksum that fails
            d(7, 7000, 1000),
            d(8, 7000, 500), // shorter: joins, and ends the run
            d(10, 7000, 500),
            other_tos,
            tcp_packet(false, 1, 0x10, &payload(1000)), // TCP after UDP: its own start
        ];
        let frames = coalesce(&mut Coalescer::new(true).with_udp(true), &pkts);
        let counts: Vec<usize> = frames.iter().map(|f| f.1).collect();
        assert_eq!(counts, [2, 1, 1, 1, 1, 2, 1, 1, 1]);
        let back: Vec<Vec<u8>> = frames.iter().flat_map(|(f, _)| resplit(f)).collect();
        assert_eq!(back, pkts, "every packet, in order, as it was");
    }

    #[test]
    fn a_udp_run_holds_at_most_max_udp_segments() {
        let pkts: Vec<Vec<u8>> = (0..MAX_UDP_SEGMENTS + 10)
            .map(|i| udp_packet(false, i as u16, 7000, &payload(200)))
            .collect();
        let frames = coalesce(&mut Coalescer::new(true).with_udp(true), &pkts);
        let counts: Vec<usize> = frames.iter().map(|f| f.1).collect();
        assert_eq!(counts, [MAX_UDP_SEGMENTS, 10]);
        let back: Vec<Vec<u8>> = frames.iter().flat_map(|(f, _)| resplit(f)).collect();
        assert_eq!(back, pkts);
    }

    #[test]
    fn coalescing_keeps_order_and_refuses_what_must_not_join() {
        let a = |seq: u32, flags: u8, n: usize| tcp_packet(false, seq, flags, &payload(n));
        // A gap, a different ACK, SYN, a longer segment after a short one, a bad checksum, a
        // non-TCP packet: each starts over, and the order out is the order in.
        let mut bad_sum = a(4000, 0x10, 1000);
        bad_sum[60] ^= 1;
        let mut other_ack = a(5000, 0x10, 1000);
        other_ack[28] = 9;
        set_l4_checksum(&mut other_ack, 20, IPPROTO_TCP);
        let udp = {
            let mut p = ip_header(false, IPPROTO_UDP, 12);
            p.extend_from_slice(&[0, 1, 0, 2, 0, 12, 0, 0, 1, 2, 3, 4]);
            set_ipv4_checksum(&mut p, 20);
            p
        };
        let pkts = vec![
            a(1000, 0x10, 1000),
            a(2000, 0x10, 1000), // joins
            a(3500, 0x10, 1000), // gap
            bad_sum,             // seq 4500 expected anyway: refused for its checksum
            other_ack,
            a(6000, 0x02, 0),    // SYN
            a(7000, 0x10, 500),  // short
            a(7500, 0x10, 1000), // longer than the first: new start
            udp.clone(),
            a(8500, 0x10, 1000),
            a(9500, 0x18, 1000), // PSH joins and closes
            a(10500, 0x10, 1000),
        ];
        let frames = coalesce(&mut Coalescer::new(true), &pkts);
        let counts: Vec<usize> = frames.iter().map(|f| f.1).collect();
        assert_eq!(counts, vec![2, 1, 1, 1, 1, 1, 1, 1, 2, 1]);
        let flat: Vec<Vec<u8>> = frames
            .iter()
            .flat_map(|(f, n)| {
                if *n == 1 {
                    vec![f[VNET_HDR_LEN..].to_vec()]
                } else {
                    resplit(f)
                }
            })
            .collect();
        assert_eq!(flat.len(), pkts.len());
        for (x, y) in flat.iter().zip(&pkts) {
            // The identification counts up in re-split segments; addresses on are the same.
            assert_eq!((&x[..4], &x[12..]), (&y[..4], &y[12..]));
        }
        // The PSH-closed pair carries PSH.
        let pair = &frames[8].0[VNET_HDR_LEN..];
        assert_eq!(pair[33] & 0x08, 0x08);
        // Nothing garbled panics the coalescer.
        let mut c = Coalescer::new(true);
        let mut sink = |_: &[u8], _: usize| {};
        for p in &pkts {
            for n in 0..p.len() {
                c.push(&p[..n], &mut sink);
            }
        }
    }

    /// The packets of a first split, of the split after coalescing, and the packets counted.
    type Splits = (Vec<Vec<u8>>, Vec<Vec<u8>>, usize);

    /// Split `frame`, coalesce the pieces and split every coalesced frame again: the packets
    /// of both splits, and the count of packets the coalescer reported.
    fn split_coalesce_split(frame: &[u8]) -> Option<Splits> {
        let mut pool = PacketPool::default();
        let mut out = Vec::new();
        split(frame, &mut pool, &mut out).ok()?;
        let first: Vec<Vec<u8>> = out.iter().map(|p| p.payload().to_vec()).collect();
        let frames = coalesce(&mut Coalescer::new(true).with_udp(true), &first);
        let counted = frames.iter().map(|f| f.1).sum();
        let again = frames
            .iter()
            .flat_map(|(f, n)| {
                if *n == 1 {
                    vec![f[VNET_HDR_LEN..].to_vec()]
                } else {
                    resplit(f)
                }
            })
            .collect();
        Some((first, again, counted))
    }

    proptest::proptest! {
        /// A TCP super-segment split, coalesced and split again gives the same packets, byte
        /// for byte; ACK-only segments of one super-segment coalesce into one frame.
        #[test]
        fn split_then_coalesce_round_trips(
            v6 in proptest::bool::ANY,
            mss in 1u16..1400,
            len in 0usize..20_000,
            psh in proptest::bool::ANY,
        ) {
            let data = payload(len);
            let frame = super_segment(v6, mss, if psh { 0x18 } else { 0x10 }, &data);
            let (first, again, counted) = split_coalesce_split(&frame).unwrap();
            proptest::prop_assert_eq!(counted, first.len());
            proptest::prop_assert_eq!(&again, &first);
            let frames = coalesce(&mut Coalescer::new(true), &first);
            if len > 0 {
                proptest::prop_assert_eq!(frames.len(), 1);
            }
        }

        /// The same for a UDP super-segment: split, coalesced (into as few USO frames as the
        /// bounds allow) and split again, the same datagrams byte for byte.
        #[test]
        fn udp_split_then_coalesce_round_trips(
            v6 in proptest::bool::ANY,
            mss in 1u16..1400,
            len in 1usize..20_000,
        ) {
            let data = payload(len);
            let mut pkt = ip_header(v6, IPPROTO_UDP, 8 + data.len());
            let l3 = pkt.len();
            pkt.extend_from_slice(&[0x1f, 0x40, 0x1f, 0x41]);
            pkt.extend_from_slice(&((8 + data.len()) as u16).to_be_bytes());
            pkt.extend_from_slice(&[0, 0]);
            pkt.extend_from_slice(&data);
            let hdr = VirtioNetHdr {
                gso_type: GsoType::UdpL4,
                gso_size: mss,
                flags: F_NEEDS_CSUM,
                csum_start: l3 as u16,
                csum_offset: 6,
                ..VirtioNetHdr::PLAIN
            };
            let (first, again, counted) = split_coalesce_split(&framed(hdr, &pkt)).unwrap();
            proptest::prop_assert_eq!(counted, first.len());
            proptest::prop_assert_eq!(&again, &first);
            let frames = coalesce(&mut Coalescer::new(true).with_udp(true), &first);
            let per_frame = MAX_UDP_SEGMENTS.min((MAX_SUPER - l3 - 8) / usize::from(mss));
            proptest::prop_assert_eq!(frames.len(), first.len().div_ceil(per_frame));
        }

        /// Arbitrary bytes as a frame from the device: an error or packets, never a panic;
        /// what splits round-trips through the coalescer.
        #[test]
        fn split_never_panics_on_arbitrary_frames(
            frame in proptest::collection::vec(proptest::num::u8::ANY, 0..2000),
        ) {
            if let Some((first, again, counted)) = split_coalesce_split(&frame) {
                proptest::prop_assert_eq!(counted, first.len());
                proptest::prop_assert_eq!(again, first);
            }
        }

        /// Arbitrary packets into the coalescer: never a panic, every packet accounted for,
        /// and every coalesced frame splits into as many packets as it holds.
        #[test]
        fn coalescer_never_panics_and_counts_every_packet(
            pkts in proptest::collection::vec(
                proptest::collection::vec(proptest::num::u8::ANY, 0..120), 0..12),
            base in 0usize..4,
        ) {
            // Mutations of real segments (TCP, or UDP datagrams with base 3) reach deeper than
            // random bytes alone.
            let real: Vec<Vec<u8>> = (0..4u32)
                .map(|i| if base == 3 {
                    udp_packet(false, i as u16, 7000, &payload(100))
                } else {
                    tcp_packet(base == 1, 1000 + 100 * i, 0x10, &payload(100))
                })
                .collect();
            let mut all = Vec::new();
            for (i, p) in pkts.iter().enumerate() {
                if base > 0 && i % 2 == 0 {
                    let mut r = real[i % 4].clone();
                    for (k, b) in p.iter().enumerate().take(4) {
                        let at = usize::from(*b) % r.len();
                        r[at] ^= 1 << (k % 8);
                    }
                    all.push(r);
                }
                all.push(p.clone());
            }
            let frames = coalesce(&mut Coalescer::new(true).with_udp(true), &all);
            proptest::prop_assert_eq!(frames.iter().map(|f| f.1).sum::<usize>(), all.len());
            for (f, n) in &frames {
                if *n > 1 {
                    proptest::prop_assert_eq!(resplit(f).len(), *n);
                }
            }
        }
    }
}
