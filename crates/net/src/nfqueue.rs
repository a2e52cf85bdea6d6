//! Netfilter queueing of GIST Q-mode packets in transit, whatever their Router Alert value.
//!
//! RFC 5971 §5.3.2 gives each NSLP its own Router Alert value ("The option value depends on the
//! NSLP being signalled for", §5.8.1.1), but Linux's IPv4 `IP_ROUTER_ALERT` diverts only value
//! 0 (the kernel recognises no other value as Router Alert), and `IPV6_ROUTER_ALERT` only the
//! one value a socket names. RFC 5971 §5.3.2.1 allows the interception decision to rest on the
//! transport header alone ("A node MAY make the initial interception decision based purely on
//! IP-Protocol number transport header analysis"), and §5.3.2.3 wants every IP/UDP packet for
//! the GIST port filtered out, checked, and the ones that are not GIST "forwarded towards the IP
//! packet's destination as a normal IP datagram".
//!
//! So [`InterceptRules`] asks netfilter (iptables/ip6tables, mangle PREROUTING, before the
//! forwarding decision) to queue exactly the packets that carry IP options (IPv4) or a
//! hop-by-hop header (IPv6), are UDP to the GIST port and are not addressed to this node, and
//! an [`NfQueue`] reads them from the kernel's queue over `NETLINK_NETFILTER`. The daemon then
//! gives each one a [`Verdict`]: [`Verdict::Drop`] for what GIST took off the path (it sends
//! what it must onwards itself), [`Verdict::Accept`] for the rest, which the kernel forwards as
//! if nothing had looked. Packets that never match the rule cost nothing; while no program
//! listens on the queue (`--queue-bypass`), or when the queue overflows (fail-open), packets
//! pass as if the rule were not there.
//!
//! The nfnetlink_queue messages are encoded and parsed here (the `nfq` crate does the same but
//! hides its socket, so it cannot join the daemon's `poll(2)` loop). [`parse_packets`] is the
//! parser: it never panics and reports what it cannot read.

use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_NETFILTER};
use pathwise_core::io::{IfIndex, Received, Transport};
use std::io;
use std::net::IpAddr;
use std::ops::Range;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::process::Command;

/// nfnetlink subsystem of the queue (`NFNL_SUBSYS_QUEUE`).
const SUBSYS_QUEUE: u16 = 3;
/// `NFQNL_MSG_PACKET`, `NFQNL_MSG_VERDICT`, `NFQNL_MSG_CONFIG`.
const MSG_PACKET: u16 = 0;
const MSG_VERDICT: u16 = 1;
const MSG_CONFIG: u16 = 2;
/// `NLMSG_ERROR`: the kernel's answer to a request with `NLM_F_ACK`.
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
/// Attributes of a queued packet (`enum nfqnl_attr_type`).
const NFQA_PACKET_HDR: u16 = 1;
const NFQA_VERDICT_HDR: u16 = 2;
const NFQA_IFINDEX_INDEV: u16 = 5;
const NFQA_PAYLOAD: u16 = 10;
/// Configuration attributes (`enum nfqnl_attr_config`).
const NFQA_CFG_CMD: u16 = 1;
const NFQA_CFG_PARAMS: u16 = 2;
const NFQA_CFG_QUEUE_MAXLEN: u16 = 3;
const NFQA_CFG_MASK: u16 = 4;
const NFQA_CFG_FLAGS: u16 = 5;
const CMD_BIND: u8 = 1;
const COPY_PACKET: u8 = 2;
/// Accept the packet when the queue is full instead of dropping it.
const CFG_F_FAIL_OPEN: u32 = 1;
const NLMSG_HDR: usize = 16;
const NFGEN_HDR: usize = 4;

/// What happens to a queued packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Taken off the path: the kernel discards its copy.
    Drop = 0,
    /// Let through: the kernel goes on as if it had not been queued.
    Accept = 1,
}

/// A packet the kernel queued: its id (for the verdict), the interface it came in on and its
/// bytes from the IP header on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueuedPacket<'a> {
    /// The kernel's id of the packet, to name it in the verdict.
    pub id: u32,
    /// The interface it arrived on (0: not given).
    pub indev: u32,
    /// The packet, from the IP header on.
    pub payload: &'a [u8],
}

/// Why part of a netlink batch from the queue could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NfqError {
    /// A netlink message header, or a length in it, that does not fit the batch.
    #[error("truncated netlink message")]
    Truncated,
    /// An attribute whose length runs past its message.
    #[error("malformed attribute")]
    BadAttribute,
    /// A packet message without a packet header (no id to give a verdict for).
    #[error("packet without NFQA_PACKET_HDR")]
    MissingHeader,
    /// The kernel reported an error (errno).
    #[error("kernel error {0}")]
    Kernel(i32),
}

/// The packets in one netlink batch read from the queue socket, in order. Messages that are not
/// packets (acknowledgements) are skipped; a batch that stops making sense ends the iteration
/// with one error. Never panics.
pub fn parse_packets(batch: &[u8]) -> impl Iterator<Item = Result<QueuedPacket<'_>, NfqError>> {
    let mut rest = batch;
    std::iter::from_fn(move || {
        loop {
            if rest.len() < NLMSG_HDR {
                return None;
            }
            let len = u32::from_ne_bytes(rest[0..4].try_into().ok()?) as usize;
            let kind = u16::from_ne_bytes(rest[4..6].try_into().ok()?);
            if len < NLMSG_HDR || len > rest.len() {
                rest = &[];
                return Some(Err(NfqError::Truncated));
            }
            let msg = &rest[NLMSG_HDR..len];
            rest = rest.get(align4(len)..).unwrap_or(&[]);
            if kind == NLMSG_ERROR {
                let errno = msg
                    .get(..4)
                    .map_or(0, |b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
                if errno != 0 {
                    // The kernel sends a negative errno; a hostile or broken one may send i32::MIN.
                    return Some(Err(NfqError::Kernel(errno.saturating_neg())));
                }
                continue;
            }
            if kind != (SUBSYS_QUEUE << 8 | MSG_PACKET) {
                continue;
            }
            return Some(parse_packet(msg));
        }
    })
}

/// One `NFQNL_MSG_PACKET` after its netlink header: the nfgenmsg, then attributes.
fn parse_packet(msg: &[u8]) -> Result<QueuedPacket<'_>, NfqError> {
    let mut attrs = msg.get(NFGEN_HDR..).ok_or(NfqError::Truncated)?;
    let (mut id, mut indev, mut payload) = (None, 0, &[][..]);
    while attrs.len() >= 4 {
        let len = usize::from(u16::from_ne_bytes([attrs[0], attrs[1]]));
        // The top bits of the type are flags (nested, byte order).
        let kind = u16::from_ne_bytes([attrs[2], attrs[3]]) & 0x3fff;
        if len < 4 || len > attrs.len() {
            return Err(NfqError::BadAttribute);
        }
        let value = &attrs[4..len];
        match kind {
            NFQA_PACKET_HDR => {
                let b = value.get(..4).ok_or(NfqError::BadAttribute)?;
                id = Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
            }
            NFQA_IFINDEX_INDEV => {
                let b = value.get(..4).ok_or(NfqError::BadAttribute)?;
                indev = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
            }
            NFQA_PAYLOAD => payload = value,
            _ => {}
        }
        attrs = attrs.get(align4(len)..).unwrap_or(&[]);
    }
    Ok(QueuedPacket {
        id: id.ok_or(NfqError::MissingHeader)?,
        indev,
        payload,
    })
}

const fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// Appends one attribute (padded to four bytes).
fn put_attr(out: &mut Vec<u8>, kind: u16, value: &[u8]) {
    let len = 4 + value.len();
    out.extend_from_slice(&(len as u16).to_ne_bytes());
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(value);
    out.resize(align4(out.len()), 0);
}

/// A netlink message of the queue subsystem for queue `queue`: header, nfgenmsg, attributes
/// written by `attrs`.
fn queue_message(
    kind: u16,
    flags: u16,
    seq: u32,
    queue: u16,
    attrs: impl FnOnce(&mut Vec<u8>),
) -> Vec<u8> {
    let mut m = vec![0; NLMSG_HDR];
    m.extend_from_slice(&[libc::AF_UNSPEC as u8, 0]); // family, NFNETLINK_V0
    m.extend_from_slice(&queue.to_be_bytes());
    attrs(&mut m);
    let len = m.len() as u32;
    m[0..4].copy_from_slice(&len.to_ne_bytes());
    m[4..6].copy_from_slice(&(SUBSYS_QUEUE << 8 | kind).to_ne_bytes());
    m[6..8].copy_from_slice(&(NLM_F_REQUEST | flags).to_ne_bytes());
    m[8..12].copy_from_slice(&seq.to_ne_bytes());
    m
}

/// The verdict message for packet `id` of queue `queue`.
pub fn verdict_message(queue: u16, id: u32, verdict: Verdict) -> Vec<u8> {
    queue_message(MSG_VERDICT, 0, 0, queue, |m| {
        let mut hdr = [0u8; 8];
        hdr[0..4].copy_from_slice(&(verdict as u32).to_be_bytes());
        hdr[4..8].copy_from_slice(&id.to_be_bytes());
        put_attr(m, NFQA_VERDICT_HDR, &hdr);
    })
}

/// A queued packet as [`NfQueue::recv_batch`] gives it: id, incoming interface, and where
/// its bytes are in [`NfQueue::bytes`].
pub type Queued = (u32, u32, Range<usize>);

/// A bound netfilter queue. Non-blocking: read it when `poll(2)` says it is readable.
#[derive(Debug)]
pub struct NfQueue {
    socket: Socket,
    queue: u16,
    buf: Vec<u8>,
    seq: u32,
}

impl NfQueue {
    /// Binds queue `queue` in this network namespace, asking for whole packets (up to 64 KiB),
    /// a queue of `max_len` packets, and fail-open when it is full (needs `CAP_NET_ADMIN`).
    pub fn open(queue: u16, max_len: u32) -> io::Result<NfQueue> {
        let mut socket = Socket::new(NETLINK_NETFILTER)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        // An overflowing socket buffer loses packets the queue already holds (they wait for a
        // verdict that never comes until the kernel drops them); ENOBUFS would only say so.
        socket.set_no_enobufs(true)?;
        let _ = socket.set_rx_buf_sz(4 << 20);
        let mut q = NfQueue {
            socket,
            queue,
            buf: vec![0; 256 * 1024],
            seq: 0,
        };
        q.configure(|m| put_attr(m, NFQA_CFG_CMD, &[CMD_BIND, 0, 0, 0]))?;
        q.configure(|m| {
            let mut params = [0u8; 5];
            params[0..4].copy_from_slice(&0xffffu32.to_be_bytes());
            params[4] = COPY_PACKET;
            put_attr(m, NFQA_CFG_PARAMS, &params);
            put_attr(m, NFQA_CFG_QUEUE_MAXLEN, &max_len.to_be_bytes());
            put_attr(m, NFQA_CFG_FLAGS, &CFG_F_FAIL_OPEN.to_be_bytes());
            put_attr(m, NFQA_CFG_MASK, &CFG_F_FAIL_OPEN.to_be_bytes());
        })?;
        q.socket.set_non_blocking(true)?;
        Ok(q)
    }

    /// The queue number.
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// Sends a configuration request and waits for the kernel's acknowledgement.
    fn configure(&mut self, attrs: impl FnOnce(&mut Vec<u8>)) -> io::Result<()> {
        self.seq += 1;
        let m = queue_message(MSG_CONFIG, NLM_F_ACK, self.seq, self.queue, attrs);
        self.socket.send(&m, 0)?;
        loop {
            let n = self.socket.recv(&mut &mut self.buf[..], 0)?;
            for r in parse_packets(&self.buf[..n.min(self.buf.len())]) {
                if let Err(NfqError::Kernel(errno)) = r {
                    return Err(io::Error::from_raw_os_error(errno));
                }
            }
            // An acknowledgement is an NLMSG_ERROR with errno 0 (skipped by the parser).
            if self.buf.get(4..6) == Some(&NLMSG_ERROR.to_ne_bytes()) {
                return Ok(());
            }
        }
    }

    /// Reads what the kernel has queued (empty when nothing is waiting): each packet's id,
    /// incoming interface and the range of its bytes in [`NfQueue::bytes`]; errors in the
    /// batch are returned in place, to be counted.
    pub fn recv_batch(&mut self) -> io::Result<Vec<Result<Queued, NfqError>>> {
        let n = match self.socket.recv(&mut &mut self.buf[..], 0) {
            Ok(n) => n.min(self.buf.len()),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let base = self.buf.as_ptr() as usize;
        Ok(parse_packets(&self.buf[..n])
            .map(|r| {
                r.map(|p| {
                    let start = p.payload.as_ptr() as usize - base;
                    (p.id, p.indev, start..start + p.payload.len())
                })
            })
            .collect())
    }

    /// The bytes of the last batch read (index with the ranges [`NfQueue::recv_batch`] gave).
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Gives packet `id` its verdict.
    pub fn verdict(&self, id: u32, verdict: Verdict) -> io::Result<()> {
        self.socket
            .send(&verdict_message(self.queue, id, verdict), 0)
            .map(|_| ())
    }
}

impl AsFd for NfQueue {
    fn as_fd(&self) -> BorrowedFd<'_> {
        // SAFETY-free: the netlink socket owns its descriptor for as long as `self` lives.
        self.socket.as_fd()
    }
}

impl AsRawFd for NfQueue {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.socket.as_raw_fd()
    }
}

/// The netfilter rules that send GIST Q-mode candidates in transit to a queue; removed again
/// when dropped (by a thread in the network namespace they were installed in; elsewhere they
/// are left alone). See the module documentation for what they match.
#[derive(Debug)]
pub struct InterceptRules {
    installed: Vec<(&'static str, Vec<String>)>,
    /// The network namespace they were installed in (its inode), so that they are never
    /// "removed" from another one by a thread that moved.
    netns: Option<u64>,
}

/// The calling thread's network namespace (inode of `/proc/thread-self/ns/net`).
fn current_netns() -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/thread-self/ns/net")
        .ok()
        .map(|m| m.ino())
}

impl InterceptRules {
    /// The rule for `family` ("iptables" or "ip6tables") as arguments after `-A`/`-D`.
    fn rule(tool: &str, port: u16, queue: u16) -> Vec<String> {
        let mut r: Vec<String> = ["PREROUTING", "-p", "udp", "--dport"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        r.push(port.to_string());
        if tool == "iptables" {
            // IHL above 5: the header carries options (Router Alert among them, checked by the
            // reader: RFC 2113 §2.1 lets it stand anywhere among the options).
            r.extend(["-m", "u32", "--u32", "0>>24&0xF=6:15"].map(String::from));
        } else {
            // RFC 2711: the Router Alert option travels in the hop-by-hop header.
            r.extend(["-m", "ipv6header", "--header", "hop-by-hop", "--soft"].map(String::from));
        }
        r.extend(
            [
                "-m",
                "addrtype",
                "!",
                "--dst-type",
                "LOCAL",
                "-j",
                "NFQUEUE",
                "--queue-num",
            ]
            .map(String::from),
        );
        r.push(queue.to_string());
        r.push("--queue-bypass".into());
        r
    }

    /// Installs the rules for IPv4 and/or IPv6 in this network namespace (needs
    /// `CAP_NET_ADMIN` and the `iptables` package). Fails, removing what it added, if either
    /// cannot be installed.
    pub fn install(port: u16, queue: u16, v4: bool, v6: bool) -> io::Result<InterceptRules> {
        let mut rules = InterceptRules {
            installed: Vec::new(),
            netns: current_netns(),
        };
        for (tool, on) in [("iptables", v4), ("ip6tables", v6)] {
            if !on {
                continue;
            }
            let rule = Self::rule(tool, port, queue);
            xtables(tool, "-A", &rule)?;
            rules.installed.push((tool, rule));
        }
        Ok(rules)
    }
}

impl Drop for InterceptRules {
    fn drop(&mut self) {
        if current_netns() != self.netns {
            tracing::warn!(
                "GIST interception rules dropped outside their network namespace: left in place"
            );
            return;
        }
        for (tool, rule) in &self.installed {
            if let Err(e) = xtables(tool, "-D", rule) {
                tracing::warn!(%tool, error = %e, "removing the GIST interception rule");
            }
        }
    }
}

/// Runs `tool -w -t mangle OP rule…`.
fn xtables(tool: &str, op: &str, rule: &[String]) -> io::Result<()> {
    let out = Command::new(tool)
        .args(["-w", "-t", "mangle", op])
        .args(rule)
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("{tool}: {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "{tool} {op} {}: {}",
            rule.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// What became of the packets a [`TransitQueue`] read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransitStats {
    /// Packets read from the queue.
    pub queued: u64,
    /// Handed out as GIST Q-mode candidates (UDP to the port with Router Alert).
    pub candidates: u64,
    /// Let through without a look by GIST: no Router Alert among the options, not UDP to the
    /// port, or a UDP header that does not verify (RFC 5971 §5.3.2.3: forwarded "as a normal
    /// IP datagram").
    pub passed: u64,
    /// Unreadable netlink messages from the queue (no verdict possible; fail-open).
    pub unreadable: u64,
}

/// UDP datagrams for one port with Router Alert in transit through this node, read from a
/// netfilter queue its [`InterceptRules`] fill. See the module documentation.
#[derive(Debug)]
pub struct TransitQueue {
    queue: NfQueue,
    _rules: InterceptRules,
    port: u16,
    stats: TransitStats,
}

impl TransitQueue {
    /// Binds queue `queue` and installs the rules that fill it with UDP datagrams to `port`
    /// in transit (IPv4 and IPv6).
    pub fn open(port: u16, queue: u16) -> io::Result<TransitQueue> {
        // Bind first: with --queue-bypass the rules pass packets on while nothing listens.
        let nfq = NfQueue::open(queue, 4096)?;
        let rules = InterceptRules::install(port, queue, true, true)?;
        Ok(TransitQueue {
            queue: nfq,
            _rules: rules,
            port,
            stats: TransitStats::default(),
        })
    }

    /// What it has read so far.
    pub fn stats(&self) -> TransitStats {
        self.stats
    }

    /// Reads a batch: each packet's id (for [`TransitQueue::verdict`]) and, for a GIST
    /// candidate, the datagram as [`Received`] with [`Transport::Udp`] and the UDP payload.
    /// Packets that are no candidate are accepted at once.
    pub fn recv_batch(&mut self) -> io::Result<Vec<(u32, Received<'_>)>> {
        let batch = self.queue.recv_batch()?;
        let mut out = Vec::with_capacity(batch.len());
        let mut accept = Vec::new();
        for item in batch {
            self.stats.queued += 1;
            let Ok((id, indev, range)) = item else {
                self.stats.unreadable += 1;
                continue;
            };
            match transit_datagram(&self.queue.bytes()[range], indev, self.port) {
                Some(d) => {
                    self.stats.candidates += 1;
                    out.push((id, d));
                }
                None => {
                    self.stats.passed += 1;
                    accept.push(id);
                }
            }
        }
        for id in accept {
            self.queue.verdict(id, Verdict::Accept)?;
        }
        Ok(out)
    }

    /// Gives packet `id` its verdict.
    pub fn verdict(&self, id: u32, verdict: Verdict) -> io::Result<()> {
        self.queue.verdict(id, verdict)
    }
}

impl AsFd for TransitQueue {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.queue.as_fd()
    }
}

/// The UDP datagram to `port` with Router Alert in the IP packet `pkt` (IPv4 or IPv6, as the
/// queue hands it over), if it is one: addresses, TTL, Router Alert value, the UDP header
/// checked (checksum included) and removed. Never panics.
pub fn transit_datagram(pkt: &[u8], indev: u32, port: u16) -> Option<Received<'_>> {
    type Fields<'a> = (IpAddr, IpAddr, u8, u8, Option<u16>, &'a [u8]);
    let (src, dst, ttl, protocol, router_alert, body): Fields<'_> = match pkt.first()? >> 4 {
        4 => {
            let p = crate::ip::parse_ipv4(pkt).ok()?;
            let body = pkt.get(p.payload_start..p.payload_end)?;
            (
                p.src.into(),
                p.dst.into(),
                p.ttl,
                p.protocol,
                p.router_alert,
                body,
            )
        }
        6 => {
            let p = crate::ip::parse_ipv6(pkt).ok()?;
            let body = pkt.get(p.payload_start..p.payload_end)?;
            (
                p.src.into(),
                p.dst.into(),
                p.hop_limit,
                p.protocol,
                p.router_alert,
                body,
            )
        }
        _ => return None,
    };
    if protocol != crate::udp_ra::IPPROTO_UDP || router_alert.is_none() {
        return None;
    }
    let r = Received {
        src,
        dst,
        ifindex: IfIndex(indev),
        transport: Transport::Raw(crate::udp_ra::IPPROTO_UDP),
        router_alert,
        ttl,
        payload: body,
    };
    let (src_port, dst_port, payload) = crate::udp_ra::parse_udp(&r)?;
    (dst_port == port).then_some(Received {
        transport: Transport::Udp { src_port, dst_port },
        payload,
        ..r
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A packet message as the kernel sends it: header, nfgenmsg, packet header, indev,
    /// payload.
    fn packet_message(id: u32, indev: u32, payload: &[u8]) -> Vec<u8> {
        let mut m = queue_message(MSG_PACKET, 0, 0, 270, |m| {
            let mut hdr = [0u8; 7];
            hdr[0..4].copy_from_slice(&id.to_be_bytes());
            hdr[4..6].copy_from_slice(&0x0800u16.to_be_bytes());
            hdr[6] = 0; // NF_INET_PRE_ROUTING
            put_attr(m, NFQA_PACKET_HDR, &hdr);
            put_attr(m, NFQA_IFINDEX_INDEV, &indev.to_be_bytes());
            put_attr(m, NFQA_PAYLOAD, payload);
        });
        // The kernel's packet messages are not requests.
        m[6..8].copy_from_slice(&0u16.to_ne_bytes());
        m
    }

    #[test]
    fn packets_of_a_batch_parse_in_order() {
        let mut batch = packet_message(7, 3, b"\x45abcde");
        batch.extend(packet_message(8, 4, b"\x60xyz"));
        let got: Vec<_> = parse_packets(&batch).collect();
        assert_eq!(
            got,
            vec![
                Ok(QueuedPacket {
                    id: 7,
                    indev: 3,
                    payload: b"\x45abcde"
                }),
                Ok(QueuedPacket {
                    id: 8,
                    indev: 4,
                    payload: b"\x60xyz"
                }),
            ]
        );
    }

    #[test]
    fn verdicts_name_the_packet_and_the_queue() {
        let m = verdict_message(270, 0x0102_0304, Verdict::Accept);
        assert_eq!(
            u32::from_ne_bytes(m[0..4].try_into().unwrap()) as usize,
            m.len()
        );
        assert_eq!(u16::from_ne_bytes([m[4], m[5]]), 3 << 8 | 1);
        assert_eq!(&m[18..20], &270u16.to_be_bytes());
        // Attribute: len 12, NFQA_VERDICT_HDR, verdict 1 (NF_ACCEPT), id.
        assert_eq!(u16::from_ne_bytes([m[20], m[21]]), 12);
        assert_eq!(u16::from_ne_bytes([m[22], m[23]]), NFQA_VERDICT_HDR);
        assert_eq!(&m[24..32], &[0, 0, 0, 1, 1, 2, 3, 4]);
    }

    #[test]
    fn broken_batches_end_with_one_error() {
        let good = packet_message(1, 1, b"x");
        let mut long = good.clone();
        long[0..4].copy_from_slice(&1000u32.to_ne_bytes());
        assert_eq!(
            parse_packets(&long).collect::<Vec<_>>(),
            vec![Err(NfqError::Truncated)]
        );
        // No packet header: nothing to give a verdict for.
        let no_hdr = queue_message(MSG_PACKET, 0, 0, 1, |m| put_attr(m, NFQA_PAYLOAD, b"x"));
        assert_eq!(
            parse_packets(&no_hdr).collect::<Vec<_>>(),
            vec![Err(NfqError::MissingHeader)]
        );
        // An attribute running past its message.
        let mut bad_attr = good.clone();
        bad_attr[20..22].copy_from_slice(&200u16.to_ne_bytes());
        assert_eq!(
            parse_packets(&bad_attr).collect::<Vec<_>>(),
            vec![Err(NfqError::BadAttribute)]
        );
        // A kernel error answer.
        let mut err = vec![0u8; 36];
        err[0..4].copy_from_slice(&36u32.to_ne_bytes());
        err[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        err[16..20].copy_from_slice(&(-1i32).to_ne_bytes());
        assert_eq!(
            parse_packets(&err).collect::<Vec<_>>(),
            vec![Err(NfqError::Kernel(1))]
        );
        // Found by fuzzing: an errno of i32::MIN must not overflow when negated.
        err[16..20].copy_from_slice(&i32::MIN.to_ne_bytes());
        assert_eq!(
            parse_packets(&err).collect::<Vec<_>>(),
            vec![Err(NfqError::Kernel(i32::MAX))]
        );
    }

    #[test]
    fn rules_match_options_or_hop_by_hop_udp_to_the_port_not_for_us() {
        let v4 = InterceptRules::rule("iptables", 270, 7).join(" ");
        assert_eq!(
            v4,
            "PREROUTING -p udp --dport 270 -m u32 --u32 0>>24&0xF=6:15 -m addrtype ! \
             --dst-type LOCAL -j NFQUEUE --queue-num 7 --queue-bypass"
        );
        let v6 = InterceptRules::rule("ip6tables", 270, 7).join(" ");
        assert!(
            v6.contains("-m ipv6header --header hop-by-hop --soft"),
            "{v6}"
        );
    }

    proptest! {
        #[test]
        fn parser_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            for _ in parse_packets(&bytes) {}
        }

        #[test]
        fn packets_round_trip(id: u32, indev: u32, payload in proptest::collection::vec(any::<u8>(), 0..300)) {
            let m = packet_message(id, indev, &payload);
            let got: Vec<_> = parse_packets(&m).collect();
            prop_assert_eq!(got, vec![Ok(QueuedPacket { id, indev, payload: &payload })]);
        }
    }
}
