//! The rtnetlink backend: each [`TcOp`] as the message `tc` itself would send for the same
//! command line (iproute2 `tc/q_htb.c`, `tc/f_u32.c`, `tc/tc_{qdisc,class,filter}.c`), all of
//! one batch written in one `sendmsg` with `NLM_F_ACK` on each, then every ACK read and checked
//! (the kernel handles the messages of one datagram one by one, each with its own answer, so a
//! failing one does not stop the rest — as with one `tc` process per line).
//!
//! Structures the crate has no type for are laid out here from the kernel's uapi headers:
//! `struct tc_htb_glob`, `struct tc_htb_opt`, `struct tc_ratespec` (linux/pkt_sched.h),
//! `struct tc_fifo_qopt` (same). HTB's rate tables (`TCA_HTB_RTAB`/`CTAB`) are not sent: since
//! Linux 3.8 (`sch_htb.c`, `htb_change_class`) the kernel computes rates itself
//! (`psched_ratecfg_precompute`) and reads the table only for a rate spec whose link layer is
//! `TC_LINKLAYER_UNAWARE`; ours say `TC_LINKLAYER_ETHERNET`, as iproute2's do.

use super::{Dev, Mode, ROOT, TcBackend, TcOp, U32Match};
use netlink_packet_core::{
    DefaultNla, NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE, NLM_F_REQUEST, NetlinkHeader,
    NetlinkMessage, NetlinkPayload,
};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::tc::{
    TcAttribute, TcFilterU32Option, TcHandle, TcMessage, TcOption, TcU32Key, TcU32Selector,
    TcU32SelectorFlags,
};
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_ROUTE};
use std::io;
use std::net::IpAddr;
use std::time::Duration;

// linux/pkt_sched.h, enum TCA_HTB_*.
const TCA_HTB_PARMS: u16 = 1;
const TCA_HTB_INIT: u16 = 2;
const TCA_HTB_RATE64: u16 = 6;
const TCA_HTB_CEIL64: u16 = 7;
// linux/rtnetlink.h, TCA_OPTIONS.
const TCA_OPTIONS: u16 = 2;
// linux/pkt_sched.h: TC_HTB_PROTOVER, TC_LINKLAYER_ETHERNET.
const TC_HTB_PROTOVER: u32 = 3;
const TC_LINKLAYER_ETHERNET: u8 = 1;
// linux/netlink.h: NLMSG_ERROR.
const NLMSG_ERROR: u16 = 2;
const ETH_P_IP: u16 = 0x0800;
const ETH_P_IPV6: u16 = 0x86dd;
/// `tc`'s default MTU for an HTB class's burst (`q_htb.c`: `mtu = 1600`).
const HTB_MTU: u64 = 1600;
/// How long to wait for the kernel's answers.
const ACK_TIMEOUT: Duration = Duration::from_secs(5);

/// Traffic control over rtnetlink (see the module doc).
#[derive(Debug)]
pub struct Netlink {
    sock: Socket,
    seq: u32,
    clock: PschedClock,
    out: Vec<u8>,
    buf: Vec<u8>,
}

/// The kernel's packet-scheduler clock as `tc` reads it from `/proc/net/psched`
/// (iproute2 `tc/tc_core.c`, `tc_core_init`; `lib/utils.c`, `get_hz`): burst times are given to
/// HTB in these ticks, so the same rate gives the same burst as `tc`'s.
#[derive(Clone, Copy, Debug, PartialEq)]
struct PschedClock {
    tick_in_usec: f64,
    hz: u64,
}

impl PschedClock {
    fn parse(text: &str) -> Option<PschedClock> {
        let f: Vec<u32> = text
            .split_whitespace()
            .map(|w| u32::from_str_radix(w, 16))
            .collect::<Result<_, _>>()
            .ok()?;
        let (&[mut t2us, us2t, clock_res, denom], _) = f.split_first_chunk::<4>()?;
        if us2t == 0 {
            return None;
        }
        if clock_res == 1_000_000_000 {
            t2us = us2t;
        }
        let tick_in_usec = f64::from(t2us) / f64::from(us2t) * (f64::from(clock_res) / 1e6);
        let hz = if clock_res == 1_000_000 && denom != 0 {
            u64::from(denom)
        } else {
            // get_hz(): `nom == 1000000` compares the third field, clock_res.
            100
        };
        Some(PschedClock { tick_in_usec, hz })
    }

    /// `tc_calc_xmittime(rate, size)`: the time to send `size` bytes at `rate` bytes/s, in
    /// ticks.
    /// As `tc` computes it, whole microseconds first (`tc_core_time2tick` takes an
    /// `unsigned int`).
    fn xmittime(&self, rate_bytes: u64, size: u64) -> u32 {
        let usec = (1e6 * size as f64 / rate_bytes.max(1) as f64) as u32;
        (f64::from(usec) * self.tick_in_usec) as u32
    }

    /// HTB's default burst for a rate (`q_htb.c`: `rate / get_hz() + mtu`), in ticks.
    fn burst(&self, rate_bytes: u64) -> u32 {
        self.xmittime(rate_bytes, rate_bytes / self.hz.max(1) + HTB_MTU)
    }
}

impl Netlink {
    /// Opens the rtnetlink socket and reads the scheduler clock.
    pub fn open() -> io::Result<Netlink> {
        let mut sock = Socket::new(NETLINK_ROUTE)?;
        sock.bind_auto()?;
        sock.connect(&SocketAddr::new(0, 0))?;
        socket2::SockRef::from(&sock).set_read_timeout(Some(ACK_TIMEOUT))?;
        let text = std::fs::read_to_string("/proc/net/psched")?;
        let clock = PschedClock::parse(&text).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidData, "cannot parse /proc/net/psched")
        })?;
        Ok(Netlink {
            sock,
            seq: 0,
            clock,
            out: Vec::new(),
            buf: Vec::with_capacity(64 * 1024),
        })
    }

    fn send_batch(&mut self, ops: &[TcOp]) -> io::Result<Vec<(usize, String)>> {
        self.out.clear();
        let first = self.seq.wrapping_add(1);
        for op in ops {
            self.seq = self.seq.wrapping_add(1);
            let (flags, payload) = message(op, &self.clock);
            let mut header = NetlinkHeader::default();
            header.flags = NLM_F_REQUEST | NLM_F_ACK | flags;
            header.sequence_number = self.seq;
            let mut msg = NetlinkMessage::new(header, NetlinkPayload::from(payload));
            msg.finalize();
            let at = self.out.len();
            self.out.resize(at + msg.buffer_len(), 0);
            msg.serialize(&mut self.out[at..]);
        }
        self.sock.send(&self.out, 0)?;
        let mut failures = Vec::new();
        let mut pending = ops.len();
        while pending > 0 {
            self.buf.clear();
            self.buf.reserve(64 * 1024);
            let n = self.sock.recv(&mut self.buf, 0)?;
            let mut off = 0;
            while let Some(h) = self.buf.get(off..off + 16) {
                let len = u32::from_ne_bytes([h[0], h[1], h[2], h[3]]) as usize;
                if len < 16 || off + len > n {
                    break;
                }
                let kind = u16::from_ne_bytes([h[4], h[5]]);
                let seq = u32::from_ne_bytes([h[8], h[9], h[10], h[11]]);
                let index = seq.wrapping_sub(first) as usize;
                if kind == NLMSG_ERROR && index < ops.len() {
                    pending -= 1;
                    if let Some(c) = self.buf.get(off + 16..off + 20) {
                        let code = i32::from_ne_bytes([c[0], c[1], c[2], c[3]]);
                        if code != 0 {
                            let e = io::Error::from_raw_os_error(-code);
                            failures.push((index, e.to_string()));
                        }
                    }
                }
                off += (len + 3) & !3;
            }
        }
        failures.sort_by_key(|f| f.0);
        Ok(failures)
    }
}

impl TcBackend for Netlink {
    fn apply(&mut self, ops: &[TcOp]) -> Vec<(usize, String)> {
        if ops.is_empty() {
            return Vec::new();
        }
        match self.send_batch(ops) {
            Ok(f) => f,
            // The socket failed: every operation of the batch is counted as failed.
            Err(e) => (0..ops.len()).map(|i| (i, e.to_string())).collect(),
        }
    }
}

fn handle(major: u16, minor: u16) -> TcHandle {
    TcHandle { major, minor }
}

fn tc_message(dev: &Dev, parent: TcHandle, handle: TcHandle, info: u32) -> TcMessage {
    let mut m = TcMessage::with_index(dev.ifindex.0 as i32);
    m.header.parent = parent;
    m.header.handle = handle;
    m.header.info = info;
    m
}

/// The `nlmsg_flags` `tc` uses for a verb (`tc_class.c`, `tc_filter.c`).
fn flags(mode: Mode) -> u16 {
    match mode {
        Mode::Add => NLM_F_EXCL | NLM_F_CREATE,
        Mode::Replace => NLM_F_CREATE,
        Mode::Change => 0,
    }
}

/// `struct tc_ratespec` (linux/pkt_sched.h) as `tc_calc_rtable` fills it for the default MTU:
/// cell_log 3 (2047 >> 3 ≤ 255), link layer Ethernet, cell_align −1.
fn ratespec(rate_bytes: u64, out: &mut Vec<u8>) {
    out.push(3); // cell_log
    out.push(TC_LINKLAYER_ETHERNET);
    out.extend_from_slice(&0u16.to_ne_bytes()); // overhead
    out.extend_from_slice(&(-1i16).to_ne_bytes()); // cell_align
    out.extend_from_slice(&0u16.to_ne_bytes()); // mpu
    // Rates of 2^32 bytes/s and more go in TCA_HTB_RATE64/CEIL64 (`q_htb.c`).
    out.extend_from_slice(&(rate_bytes.min(u64::from(u32::MAX)) as u32).to_ne_bytes());
}

/// The kernel message (and its flags) doing `op`.
fn message(op: &TcOp, clock: &PschedClock) -> (u16, RouteNetlinkMessage) {
    let root = handle(ROOT, 0);
    match op {
        TcOp::DelRoot(dev) => (
            0,
            RouteNetlinkMessage::DelQueueDiscipline(tc_message(dev, TcHandle::ROOT, root, 0)),
        ),
        TcOp::HtbRoot { dev, default } => {
            let mut m = tc_message(dev, TcHandle::ROOT, root, 0);
            // struct tc_htb_glob: version, rate2quantum, defcls, debug, direct_pkts.
            let glob: Vec<u8> = [TC_HTB_PROTOVER, 10, u32::from(*default), 0, 0]
                .iter()
                .flat_map(|v| v.to_ne_bytes())
                .collect();
            m.attributes.push(TcAttribute::Kind("htb".into()));
            m.attributes.push(TcAttribute::Options(vec![TcOption::Other(
                DefaultNla::new(TCA_HTB_INIT, glob),
            )]));
            (
                NLM_F_CREATE | NLM_F_REPLACE,
                RouteNetlinkMessage::NewQueueDiscipline(m),
            )
        }
        TcOp::Class {
            dev,
            mode,
            parent,
            minor,
            rate_bps,
            ceil_bps,
            prio,
        } => {
            let rate = (*rate_bps).max(8) / 8;
            let ceil = (*ceil_bps).max(8) / 8;
            let mut m = tc_message(dev, handle(ROOT, *parent), handle(ROOT, *minor), 0);
            // struct tc_htb_opt: rate, ceil, buffer, cbuffer, quantum, level, prio.
            let mut opt = Vec::with_capacity(44);
            ratespec(rate, &mut opt);
            ratespec(ceil, &mut opt);
            for v in [
                clock.burst(rate),
                clock.burst(ceil),
                0,
                0,
                prio.unwrap_or(0),
            ] {
                opt.extend_from_slice(&v.to_ne_bytes());
            }
            let mut opts = Vec::new();
            if rate > u64::from(u32::MAX) {
                opts.push(TcOption::Other(DefaultNla::new(
                    TCA_HTB_RATE64,
                    rate.to_ne_bytes().to_vec(),
                )));
            }
            if ceil > u64::from(u32::MAX) {
                opts.push(TcOption::Other(DefaultNla::new(
                    TCA_HTB_CEIL64,
                    ceil.to_ne_bytes().to_vec(),
                )));
            }
            opts.push(TcOption::Other(DefaultNla::new(TCA_HTB_PARMS, opt)));
            m.attributes.push(TcAttribute::Kind("htb".into()));
            m.attributes.push(TcAttribute::Options(opts));
            (flags(*mode), RouteNetlinkMessage::NewTrafficClass(m))
        }
        TcOp::Pfifo { dev, minor, limit } => {
            let mut m = tc_message(dev, handle(ROOT, *minor), handle(*minor, 0), 0);
            m.attributes.push(TcAttribute::Kind("pfifo".into()));
            // struct tc_fifo_qopt { __u32 limit; }, not nested.
            m.attributes.push(TcAttribute::Other(DefaultNla::new(
                TCA_OPTIONS,
                limit.to_ne_bytes().to_vec(),
            )));
            (
                NLM_F_CREATE | NLM_F_REPLACE,
                RouteNetlinkMessage::NewQueueDiscipline(m),
            )
        }
        TcOp::Filter {
            dev,
            mode,
            ipv6,
            prio,
            matches,
            flowid,
        } => {
            let proto = if *ipv6 { ETH_P_IPV6 } else { ETH_P_IP };
            // tcm_info = TC_H_MAKE(prio << 16, htons(protocol)).
            let info = (u32::from(*prio) << 16) | u32::from(proto.to_be());
            let mut m = tc_message(dev, root, handle(0, 0), info);
            m.attributes.push(TcAttribute::Kind("u32".into()));
            m.attributes.push(TcAttribute::Options(vec![
                TcOption::U32(TcFilterU32Option::ClassId(handle(ROOT, *flowid))),
                TcOption::U32(TcFilterU32Option::Selector(selector(*ipv6, matches))),
            ]));
            (flags(*mode), RouteNetlinkMessage::NewTrafficFilter(m))
        }
        TcOp::DelFilters { dev, prio } => (
            0,
            RouteNetlinkMessage::DelTrafficFilter(tc_message(
                dev,
                root,
                handle(0, 0),
                u32::from(*prio) << 16,
            )),
        ),
        TcOp::DelClass { dev, minor } => (
            0,
            RouteNetlinkMessage::DelTrafficClass(tc_message(
                dev,
                handle(0, 0),
                handle(ROOT, *minor),
                0,
            )),
        ),
    }
}

/// Adds a 32-bit key as `tc`'s `pack_key` does (`f_u32.c`): a key at an offset that has one
/// already merges into it. `val` and `mask` are in network byte order as numbers (the crate
/// writes them big-endian).
fn pack_key(keys: &mut Vec<TcU32Key>, val: u32, mask: u32, off: i32) {
    if let Some(k) = keys.iter_mut().find(|k| k.off == off && k.offmask == 0) {
        k.val |= val & mask;
        k.mask |= mask;
        return;
    }
    let mut k = TcU32Key::default();
    k.val = val & mask;
    k.mask = mask;
    k.off = off;
    keys.push(k);
}

/// A 16-bit field at `off` (`pack_key16`).
fn pack16(keys: &mut Vec<TcU32Key>, val: u16, off: i32) {
    let shift = if off & 3 == 0 { 16 } else { 0 };
    pack_key(keys, u32::from(val) << shift, 0xffff << shift, off & !3);
}

/// An 8-bit field at `off` (`pack_key8`).
fn pack8(keys: &mut Vec<TcU32Key>, val: u8, off: i32) {
    let shift = 24 - (off & 3) * 8;
    pack_key(keys, u32::from(val) << shift, 0xff << shift, off & !3);
}

fn pack_addr(keys: &mut Vec<TcU32Key>, a: IpAddr, off4: i32, off6: i32) {
    match a {
        IpAddr::V4(a) => pack_key(keys, u32::from(a), u32::MAX, off4),
        IpAddr::V6(a) => {
            for (i, w) in a.octets().chunks_exact(4).enumerate() {
                let w = u32::from_be_bytes([w[0], w[1], w[2], w[3]]);
                pack_key(keys, w, u32::MAX, off6 + 4 * i as i32);
            }
        }
    }
}

/// The u32 selector of `tc`'s `match` clauses (`f_u32.c`, `parse_ip`/`parse_ip6`: offsets in
/// the IPv4 header with no options, and in the fixed IPv6 header), terminal as `flowid` makes
/// it.
fn selector(ipv6: bool, matches: &[U32Match]) -> TcU32Selector {
    let mut keys = Vec::new();
    for m in matches {
        match *m {
            U32Match::Src(a) => pack_addr(&mut keys, a, 12, 8),
            U32Match::Dst(a) => pack_addr(&mut keys, a, 16, 24),
            U32Match::Protocol(p) => pack8(&mut keys, p, if ipv6 { 6 } else { 9 }),
            U32Match::Sport(p) => pack16(&mut keys, p, if ipv6 { 40 } else { 20 }),
            U32Match::Dport(p) => pack16(&mut keys, p, if ipv6 { 42 } else { 22 }),
            U32Match::FlowLabel(l) => pack_key(&mut keys, l, 0x000f_ffff, 0),
            U32Match::U8 { value, at } => pack8(&mut keys, value, i32::from(at)),
        }
    }
    let mut sel = TcU32Selector::default();
    sel.flags = TcU32SelectorFlags::Terminal;
    sel.nkeys = keys.len() as u8;
    sel.keys = keys;
    sel
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psched_clock_as_tc_reads_it() {
        // A high-resolution-timer kernel's /proc/net/psched.
        let c = PschedClock::parse("000003e8 00000040 000f4240 3b9aca00\n").unwrap();
        assert_eq!(c.hz, 1_000_000_000);
        assert_eq!(c.tick_in_usec, 1000.0 / 64.0);
        // tc shows `burst 1600b` for a 10 Mbit/s class: 1600 bytes at 1.25 MB/s is 1280 µs.
        assert_eq!(c.burst(1_250_000), 20_000);
        // 19 Mbit/s: 673.7 µs, taken as 673 (tc shows `burst 1596b`, not 1598b).
        assert_eq!(c.burst(2_375_000), 10_515);
        assert_eq!(PschedClock::parse("000003e8 00000000 1 1"), None);
        assert_eq!(PschedClock::parse("zz"), None);
    }

    #[test]
    fn keys_merge_like_tcs() {
        // `match ip protocol 17 0xff match ip dport 270 0xffff match ip sport 9 0xffff`.
        let s = selector(
            false,
            &[
                U32Match::Protocol(17),
                U32Match::Dport(270),
                U32Match::Sport(9),
            ],
        );
        assert_eq!(s.nkeys, 2);
        assert_eq!(
            (s.keys[0].val, s.keys[0].mask, s.keys[0].off),
            (0x0011_0000, 0x00ff_0000, 8)
        );
        assert_eq!(
            (s.keys[1].val, s.keys[1].mask, s.keys[1].off),
            (0x0009_010e, u32::MAX, 20)
        );
        // `match u8 0 0xff at 6` (IPv6 next header is hop-by-hop).
        let s = selector(true, &[U32Match::U8 { value: 0, at: 6 }]);
        assert_eq!(
            (s.keys[0].val, s.keys[0].mask, s.keys[0].off),
            (0, 0x0000_ff00, 4)
        );
        let s = selector(true, &[U32Match::Dst("2001:db8::1".parse().unwrap())]);
        assert_eq!(s.nkeys, 4);
        assert_eq!(s.keys[3].val, 1);
        assert_eq!(s.keys[3].off, 36);
    }
}
