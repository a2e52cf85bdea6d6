//! Forward error correction (seed §1.1–1.2: "a forward error correction code might be used over
//! a wireless data link", a *transparent* booster that sends FEC packets in addition to the data
//! packets): systematic Reed-Solomon over GF(2^8) across groups of `k` packets with `m` parity
//! packets (`m = 1` is plain XOR-like parity; any `m` lost packets of a group are recovered).
//!
//! Every packet gets an 8-byte booster header; data packets are otherwise unchanged and are
//! delivered at once (no added delay); parity packets are absorbed by the debooster.
//!
//! ```text
//! +-------------------------------+-------+-------+-------+-------+
//! | group (32 bits)               | index |   k   |   m   | count |
//! +-------------------------------+-------+-------+-------+-------+
//! ```
//!
//! `index` < `k` is a data packet, `k..k+m` a parity packet. `count` (parity only) is how many
//! data packets the group really holds: a group cut short by the flush timer is completed with
//! empty packets. A shard is `[marks, length (16 bits), packet]`, zero-padded to the longest in
//! the group; the marks let a recovered packet resume deboosting at the earlier stages.
//!
//! Interleaving (`depth` D > 1): the sender opens a *block* of D groups with consecutive ids and
//! deals packets to them round-robin; when the block is full (D·k packets) or its timer fires it
//! closes every group at once and sends the parity round-robin as well (the first parity packet
//! of each group, then the second…). Packets of the stream then cycle through the D groups
//! without a break, data and parity alike, so any D·m consecutive losses cost each group at
//! most `m` packets and are repaired; without interleaving a burst of `m + 1` is not. This is
//! block interleaving, as 1-D interleaved parity codes do with XOR columns (RFC 6015 describes
//! one; its text is not in ../shared/rfcs and was not checked here), with Reed-Solomon groups in
//! place of the columns. The
//! wire does not change: the group id says which group a packet belongs to, so the receiver,
//! which keeps [`GROUP_SLOTS`] recent groups by id, handles several open groups whatever the
//! sender's depth.
//!
//! Driven by the pipeline: `boost` per packet; `poll_timeout`/`handle_timeout` flush a partial
//! block [`FLUSH_AFTER`] after its first packet so a pause in traffic does not leave its tail
//! unprotected (every group of the block got its first packet at that time or later, so each
//! is closed within [`FLUSH_AFTER`] of its own first packet). The sender encodes into buffers it
//! keeps; the receiver allocates only when it first fills a slot and when it rebuilds a lost
//! packet.

use super::galois::ReedSolomon;
use crate::booster::{Booster, FEC_MAX_DEPTH, StageCtx, StageIo, Verdict};
use crate::packet::{MAX_PAYLOAD, Packet};
use crate::stats::DropReason;
use crate::wire::BoosterId;
use pathwise_core::time::{Duration, Instant};
use pathwise_core::wire::Reader;

/// Booster header length.
pub const HEADER_LEN: usize = 8;
/// Shard prefix: marks and length.
const SHARD_PREFIX: usize = 3;
/// Largest shard.
const SHARD_CAP: usize = SHARD_PREFIX + MAX_PAYLOAD;
/// A partial group is closed this long after its first packet.
pub const FLUSH_AFTER: Duration = Duration::from_millis(10);
/// Groups the receiver keeps for recovery: two blocks of the deepest interleaving, twice over,
/// so a block's groups are still held when the next block's packets arrive.
pub const GROUP_SLOTS: usize = 32;
const _: () = assert!(GROUP_SLOTS >= 2 * FEC_MAX_DEPTH as usize);
/// A packet whose group is older than the one holding its slot by at most this many groups
/// is late: it must not evict a live group (data still goes on). Further back counts as a new
/// group (the sender restarted its ids, or the ids wrapped).
const LATE_GROUPS: u32 = 4 * GROUP_SLOTS as u32;

#[derive(Debug, Clone, Copy)]
struct FecHeader {
    group: u32,
    index: u8,
    k: u8,
    m: u8,
    count: u8,
}

impl FecHeader {
    fn parse(b: &[u8]) -> Result<FecHeader, DropReason> {
        let mut r = Reader::new(b);
        let h = (|| {
            Ok::<_, pathwise_core::wire::Truncated>(FecHeader {
                group: r.u32()?,
                index: r.u8()?,
                k: r.u8()?,
                m: r.u8()?,
                count: r.u8()?,
            })
        })()
        .map_err(|_| DropReason::FecMalformed)?;
        let valid = (1..=crate::booster::FEC_MAX_K).contains(&h.k)
            && (1..=crate::booster::FEC_MAX_M).contains(&h.m)
            && h.index < h.k + h.m
            && (h.index < h.k || (1..=h.k).contains(&h.count));
        if valid {
            Ok(h)
        } else {
            Err(DropReason::FecMalformed)
        }
    }

    fn write(&self, out: &mut [u8]) {
        out[..4].copy_from_slice(&self.group.to_be_bytes());
        out[4] = self.index;
        out[5] = self.k;
        out[6] = self.m;
        out[7] = self.count;
    }
}

/// Reed-Solomon codecs by (k, m), built on first use (building one inverts a matrix).
#[derive(Default)]
struct Codecs(Vec<((u8, u8), ReedSolomon)>);

impl Codecs {
    fn get(&mut self, k: u8, m: u8) -> Option<&ReedSolomon> {
        let i = match self.0.iter().position(|(km, _)| *km == (k, m)) {
            Some(i) => i,
            None => {
                let rs = ReedSolomon::new(usize::from(k), usize::from(m)).ok()?;
                self.0.push(((k, m), rs));
                self.0.len() - 1
            }
        };
        Some(&self.0[i].1)
    }
}

impl std::fmt::Debug for Codecs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(km, _)| km))
            .finish()
    }
}

/// One group's shards on either side.
#[derive(Debug)]
struct Group {
    id: u32,
    k: u8,
    m: u8,
    /// Shards `0..k+m`, each [`SHARD_CAP`] long; `len[i]` bytes are meaningful.
    shards: Vec<Vec<u8>>,
    len: Vec<usize>,
    present: Vec<bool>,
    /// Data packets in the group (sender: so far; receiver: from a parity header).
    count: Option<u8>,
    done: bool,
    started: Instant,
}

impl Group {
    fn new(k: u8, m: u8) -> Self {
        let n = usize::from(k) + usize::from(m);
        Group {
            id: 0,
            k,
            m,
            shards: (0..n).map(|_| vec![0; SHARD_CAP]).collect(),
            len: vec![0; n],
            present: vec![false; n],
            count: None,
            done: true,
            started: Instant::ZERO,
        }
    }

    fn reset(&mut self, id: u32, k: u8, m: u8, now: Instant) {
        if (k, m) != (self.k, self.m) {
            *self = Group::new(k, m);
        }
        self.id = id;
        self.len.iter_mut().for_each(|l| *l = 0);
        self.present.iter_mut().for_each(|p| *p = false);
        self.count = None;
        self.done = false;
        self.started = now;
    }

    fn store_data(&mut self, index: usize, marks: u8, packet: &[u8]) {
        let s = &mut self.shards[index];
        s[0] = marks;
        s[1..3].copy_from_slice(&(packet.len() as u16).to_be_bytes());
        s[3..3 + packet.len()].copy_from_slice(packet);
        self.len[index] = SHARD_PREFIX + packet.len();
        self.present[index] = true;
    }
}

/// Reed-Solomon FEC over groups of `k` packets with `m` parity packets, `depth` groups
/// interleaved.
#[derive(Debug)]
pub struct Fec {
    k: u8,
    m: u8,
    next_group: u32,
    /// Sender: the open block, `depth` groups; its `n`-th packet joins group `n % depth`.
    open: Vec<Group>,
    /// Sender: the group of the block the next packet joins.
    turn: usize,
    /// Sender: no block is open (the next packet opens one).
    closed: bool,
    /// Receiver: recent groups, by group id modulo the slot count.
    slots: Vec<Option<Group>>,
    codecs: Codecs,
}

impl Fec {
    /// A booster sending `m` parity packets for every `k` data packets, over `depth` groups
    /// filled round-robin (1: no interleaving; clamped to 1..=[`FEC_MAX_DEPTH`]).
    pub fn new(k: u8, m: u8, depth: u8) -> Self {
        let depth = depth.clamp(1, FEC_MAX_DEPTH);
        Fec {
            k,
            m,
            next_group: 0,
            open: (0..depth).map(|_| Group::new(k, m)).collect(),
            turn: 0,
            closed: true,
            slots: (0..GROUP_SLOTS).map(|_| None).collect(),
            codecs: Codecs::default(),
        }
    }

    /// Close the open block: compute every group's parity, then emit the parity packets
    /// round-robin across the groups (parity 0 of each group, then parity 1…), continuing the
    /// data's rotation so a burst over the block's end still spreads over its groups.
    fn flush(&mut self, io: &mut StageIo<'_>) {
        if self.closed {
            return;
        }
        self.closed = true;
        // Per group: shard width and data packets, or None when there is nothing to send.
        let mut encoded = [None; FEC_MAX_DEPTH as usize];
        for (g, e) in self.open.iter_mut().zip(encoded.iter_mut()) {
            g.done = true;
            let k = usize::from(g.k);
            let count = g.present[..k].iter().filter(|p| **p).count();
            if count == 0 {
                continue;
            }
            let width = g.len[..k].iter().copied().max().unwrap_or(0);
            for i in 0..k {
                let l = if g.present[i] { g.len[i] } else { 0 };
                g.shards[i][l..width].fill(0);
            }
            let Some(rs) = self.codecs.get(g.k, g.m) else {
                continue;
            };
            let mut views: Vec<&mut [u8]> = g.shards.iter_mut().map(|s| &mut s[..width]).collect();
            if rs.encode(&mut views).is_ok() {
                *e = Some((width, count));
            }
        }
        for p in 0..usize::from(self.m) {
            for (g, e) in self.open.iter().zip(encoded) {
                let Some((width, count)) = e else {
                    continue;
                };
                let k = usize::from(g.k);
                let mut pkt = io.pool.get();
                let Some(body) = pkt.push_back(HEADER_LEN + width) else {
                    io.pool.put(pkt);
                    continue;
                };
                FecHeader {
                    group: g.id,
                    index: (k + p) as u8,
                    k: g.k,
                    m: g.m,
                    count: count as u8,
                }
                .write(&mut body[..HEADER_LEN]);
                body[HEADER_LEN..].copy_from_slice(&g.shards[k + p][..width]);
                io.extra.push(pkt);
            }
        }
    }

    /// Try to rebuild the missing data packets of the group in `slot`.
    fn recover(&mut self, slot: usize, io: &mut StageIo<'_>) -> Result<usize, DropReason> {
        let Some(g) = self.slots[slot].as_mut() else {
            return Ok(0);
        };
        let (k, m) = (usize::from(g.k), usize::from(g.m));
        let Some(count) = g.count.map(usize::from) else {
            return Ok(0);
        };
        let missing = (0..count).filter(|&i| !g.present[i]).count();
        let have = g.present.iter().filter(|p| **p).count() + (k - count);
        if g.done || missing == 0 || have < k {
            return Ok(0);
        }
        let width = (k..k + m)
            .find(|&i| g.present[i])
            .map(|i| g.len[i])
            .ok_or(DropReason::FecMalformed)?;
        if (0..k).any(|i| g.present[i] && g.len[i] > width) {
            return Err(DropReason::FecMalformed);
        }
        // Data shards beyond `count` are the empty padding packets: all zero.
        for i in 0..k {
            if i >= count || g.present[i] {
                let l = if i < count { g.len[i].min(width) } else { 0 };
                g.shards[i][l..width].fill(0);
            }
        }
        let mut views: Vec<(&mut [u8], bool)> = g
            .shards
            .iter_mut()
            .enumerate()
            .map(|(i, s)| (&mut s[..width], i >= count && i < k || g.present[i]))
            .collect();
        let rs = self.codecs.get(g.k, g.m).ok_or(DropReason::FecMalformed)?;
        rs.reconstruct_data(&mut views)
            .map_err(|_| DropReason::FecMalformed)?;
        drop(views);
        let mut rebuilt = 0;
        for i in 0..count {
            if g.present[i] {
                continue;
            }
            let s = &g.shards[i];
            let len = usize::from(u16::from_be_bytes([s[1], s[2]]));
            if SHARD_PREFIX + len > width {
                return Err(DropReason::FecMalformed);
            }
            let mut pkt = io.pool.get();
            if pkt.set_payload(&s[3..3 + len]).is_none() {
                io.pool.put(pkt);
                continue;
            }
            pkt.marks = s[0];
            g.present[i] = true;
            io.extra.push(pkt);
            rebuilt += 1;
        }
        g.done = true;
        Ok(rebuilt)
    }
}

impl Booster for Fec {
    fn id(&self) -> BoosterId {
        BoosterId::Fec
    }

    fn overhead(&self) -> usize {
        HEADER_LEN + SHARD_PREFIX
    }

    fn boost(
        &mut self,
        cx: &StageCtx<'_>,
        pkt: &mut Packet,
        io: &mut StageIo<'_>,
    ) -> Result<Verdict, DropReason> {
        if pkt.len() > MAX_PAYLOAD - SHARD_PREFIX {
            return Err(DropReason::TooLarge);
        }
        if self.closed {
            for g in &mut self.open {
                g.reset(self.next_group, self.k, self.m, cx.now);
                self.next_group = self.next_group.wrapping_add(1);
            }
            self.turn = 0;
            self.closed = false;
        }
        let turn = self.turn;
        let g = &mut self.open[turn];
        let k = usize::from(g.k);
        let index = g.present[..k].iter().filter(|p| **p).count();
        let earlier = pkt.marks & ((1u16 << cx.stage.min(8)) - 1) as u8;
        g.store_data(index, earlier, pkt.payload());
        FecHeader {
            group: g.id,
            index: index as u8,
            k: g.k,
            m: g.m,
            count: 0,
        }
        .write(pkt.push_front(HEADER_LEN).ok_or(DropReason::NoRoom)?);
        self.turn = (turn + 1) % self.open.len();
        // Round-robin fills the groups evenly: the last one filling closes the block.
        if self.turn == 0 && index + 1 == k {
            self.flush(io);
        }
        Ok(Verdict::Forward)
    }

    fn deboost(
        &mut self,
        cx: &StageCtx<'_>,
        pkt: &mut Packet,
        io: &mut StageIo<'_>,
    ) -> Result<Verdict, DropReason> {
        let h = FecHeader::parse(pkt.payload())?;
        pkt.pull_front(HEADER_LEN);
        let slot = h.group as usize % GROUP_SLOTS;
        let is_data = h.index < h.k;
        let fresh = match &self.slots[slot] {
            Some(g)
                if g.id != h.group && (1..=LATE_GROUPS).contains(&g.id.wrapping_sub(h.group)) =>
            {
                // Late for a group long replaced: deliver data, absorb parity.
                return Ok(if is_data {
                    Verdict::Forward
                } else {
                    Verdict::Consume
                });
            }
            Some(g) => g.id != h.group || (g.k, g.m) != (h.k, h.m),
            None => true,
        };
        if fresh {
            let mut g = self.slots[slot]
                .take()
                .unwrap_or_else(|| Group::new(h.k, h.m));
            g.reset(h.group, h.k, h.m, cx.now);
            self.slots[slot] = Some(g);
        }
        let Some(g) = self.slots[slot].as_mut() else {
            return Err(DropReason::FecMalformed);
        };
        let index = usize::from(h.index);
        if g.done || g.present[index] {
            // Group already complete or recovered, or a duplicate: data still goes on.
            return Ok(if is_data {
                Verdict::Forward
            } else {
                Verdict::Consume
            });
        }
        if is_data {
            if pkt.len() > MAX_PAYLOAD - SHARD_PREFIX {
                return Err(DropReason::TooLarge);
            }
            // Only the earlier stages' marks: the sender's shard had no others.
            let earlier = pkt.marks & ((1u16 << cx.stage.min(8)) - 1) as u8;
            g.store_data(index, earlier, pkt.payload());
        } else {
            if pkt.len() < SHARD_PREFIX
                || g.count.is_some_and(|c| c != h.count)
                || (0..usize::from(h.k)).any(|i| g.present[i] && g.len[i] > pkt.len())
                || (usize::from(h.k)..g.present.len())
                    .any(|i| g.present[i] && g.len[i] != pkt.len())
            {
                return Err(DropReason::FecMalformed);
            }
            g.count = Some(h.count);
            g.shards[index][..pkt.len()].copy_from_slice(pkt.payload());
            g.len[index] = pkt.len();
            g.present[index] = true;
        }
        self.recover(slot, io)?;
        Ok(if is_data {
            Verdict::Forward
        } else {
            Verdict::Consume
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.closed {
            None
        } else {
            // The block's first packet went to its first group.
            self.open.first()?.started.checked_add(FLUSH_AFTER)
        }
    }

    fn handle_timeout(&mut self, cx: &StageCtx<'_>, io: &mut StageIo<'_>) {
        if self.poll_timeout().is_some_and(|t| t <= cx.now) {
            self.flush(io);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::PacketPool;
    use crate::wire::Chain;
    use proptest::prelude::*;

    fn chain() -> Chain {
        Chain::new(&[BoosterId::Fec]).unwrap()
    }

    fn cx(chain: &Chain, now: Instant) -> StageCtx<'_> {
        StageCtx {
            now,
            mtu: 1400,
            chain,
            stage: 0,
        }
    }

    /// A packet that says which one it is, `len` bytes long.
    fn packet(n: usize, len: usize) -> Vec<u8> {
        let mut p: Vec<u8> = (0..len.max(4)).map(|i| (i * 7 + n * 13) as u8).collect();
        p[..4].copy_from_slice(&(n as u32).to_be_bytes());
        p
    }

    /// Boost `packets` through a sender of `k:m:depth` and close the last block with the
    /// timer: the datagrams in the order they leave.
    fn send(k: u8, m: u8, depth: u8, packets: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let chain = chain();
        let mut fec = Fec::new(k, m, depth);
        let mut pool = PacketPool::with_capacity(4);
        let mut extra = Vec::new();
        let mut wire = Vec::new();
        let now = Instant::from_secs(1);
        for p in packets {
            let mut pkt = pool.get();
            pkt.set_payload(p).unwrap();
            let mut io = StageIo {
                pool: &mut pool,
                extra: &mut extra,
            };
            assert_eq!(
                fec.boost(&cx(&chain, now), &mut pkt, &mut io),
                Ok(Verdict::Forward)
            );
            wire.push(pkt.payload().to_vec());
            wire.extend(extra.drain(..).map(|e| e.payload().to_vec()));
        }
        if let Some(t) = fec.poll_timeout() {
            let mut io = StageIo {
                pool: &mut pool,
                extra: &mut extra,
            };
            fec.handle_timeout(&cx(&chain, t), &mut io);
            wire.extend(extra.drain(..).map(|e| e.payload().to_vec()));
        }
        assert!(fec.poll_timeout().is_none());
        wire
    }

    /// Deboost `datagrams` in a fresh receiver: the packets it delivers and what it refused.
    fn receive<'a>(
        datagrams: impl IntoIterator<Item = &'a Vec<u8>>,
    ) -> (Vec<Vec<u8>>, Vec<DropReason>) {
        let chain = chain();
        let mut fec = Fec::new(1, 1, 1);
        let mut pool = PacketPool::with_capacity(4);
        let mut extra = Vec::new();
        let (mut got, mut refused) = (Vec::new(), Vec::new());
        for d in datagrams {
            let mut pkt = pool.get();
            pkt.set_payload(d).unwrap();
            let mut io = StageIo {
                pool: &mut pool,
                extra: &mut extra,
            };
            match fec.deboost(&cx(&chain, Instant::from_secs(1)), &mut pkt, &mut io) {
                Ok(Verdict::Forward) => got.push(pkt.payload().to_vec()),
                Ok(Verdict::Consume) => {}
                Err(r) => refused.push(r),
            }
            got.extend(extra.drain(..).map(|e| e.payload().to_vec()));
        }
        (got, refused)
    }

    fn group_of(d: &[u8]) -> u32 {
        u32::from_be_bytes([d[0], d[1], d[2], d[3]])
    }

    fn sorted(mut v: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        v.sort();
        v
    }

    fn stream(n: usize) -> Vec<Vec<u8>> {
        (0..n).map(|i| packet(i, 40 + (i * 97) % 1300)).collect()
    }

    /// Whether losing `lost` (indices into `wire`, what the sender sent for `packets`) still
    /// delivers every packet, once.
    fn survives(wire: &[Vec<u8>], packets: &[Vec<u8>], lost: impl Fn(usize) -> bool) -> bool {
        let kept = wire
            .iter()
            .enumerate()
            .filter(|(i, _)| !lost(*i))
            .map(|(_, d)| d);
        let (got, refused) = receive(kept);
        assert!(refused.is_empty(), "{refused:?}");
        let got = sorted(got);
        let mut dedup = got.clone();
        dedup.dedup();
        assert_eq!(got, dedup, "a packet was delivered twice");
        got == sorted(packets.to_vec())
    }

    #[test]
    fn interleaving_sends_data_and_parity_round_robin_over_the_block() {
        let wire = send(3, 2, 4, &stream(12));
        let groups: Vec<u32> = wire.iter().map(|d| group_of(d)).collect();
        // 12 data packets dealt to groups 0..4, then parity 0 of each, then parity 1 of each.
        let cycle: Vec<u32> = (0..20).map(|i| i % 4).collect();
        assert_eq!(groups, cycle);
        assert!(
            wire[12..].iter().all(|d| d[4] >= 3),
            "parity after the data"
        );
        // The next block takes the next ids.
        let wire = send(3, 2, 4, &stream(13));
        assert_eq!(group_of(&wire[20]), 4);
    }

    #[test]
    fn a_burst_of_depth_times_m_is_repaired_with_interleaving_and_not_without() {
        let packets = stream(10 * 4 * 5);
        let burst = |at: usize, len: usize| move |i: usize| (at..at + len).contains(&i);
        let interleaved = send(10, 3, 4, &packets);
        // Every position of a 12-datagram burst, across blocks, data and parity.
        for at in 0..=interleaved.len() - 12 {
            assert!(
                survives(&interleaved, &packets, burst(at, 12)),
                "burst at {at}"
            );
        }
        // One more than depth × m is too many for some group.
        assert!(!survives(&interleaved, &packets, burst(0, 13)));
        // Without interleaving the same burst takes 10 packets of one group; m + 1 is too many.
        let plain = send(10, 3, 1, &packets);
        assert!(!survives(&plain, &packets, burst(0, 12)));
        assert!(!survives(&plain, &packets, burst(0, 4)));
        assert!(survives(&plain, &packets, burst(0, 3)));
    }

    #[test]
    fn a_partial_block_closed_by_the_timer_is_protected() {
        // 6 packets over 4 groups of up to 5: counts 2, 2, 1, 1.
        let packets = stream(6);
        let wire = send(5, 1, 4, &packets);
        assert_eq!(wire.len(), 6 + 4);
        for lost in 0..6 {
            assert!(survives(&wire, &packets, |i| i == lost), "lost {lost}");
        }
    }

    #[test]
    fn malformed_and_inconsistent_headers_are_refused() {
        let good = send(2, 2, 1, &stream(2));
        let (d0, d1, p0, p1) = (&good[0], &good[1], &good[2], &good[3]);
        let with = |d: &Vec<u8>, at: usize, v: u8| {
            let mut d = d.clone();
            d[at] = v;
            d
        };
        for bad in [
            vec![0, 0, 0, 0, 0, 2, 2], // truncated
            with(d0, 5, 0),            // k = 0
            with(d0, 5, 33),           // k > 32
            with(d0, 6, 0),            // m = 0
            with(d0, 6, 9),            // m > 8
            with(d0, 4, 4),            // index past k + m
            with(p0, 7, 0),            // parity of an empty group
            with(p0, 7, 3),            // parity claiming more data than k
        ] {
            assert_eq!(receive([&bad]).1, vec![DropReason::FecMalformed], "{bad:?}");
        }
        // Inconsistent with what the group already holds.
        let wrong_count = with(p1, 7, 1);
        assert_eq!(
            receive([p0, &wrong_count]).1,
            vec![DropReason::FecMalformed]
        );
        let mut short = p1.clone();
        short.pop();
        assert_eq!(receive([p0, &short]).1, vec![DropReason::FecMalformed]);
        let mut long = d1.clone();
        long.resize(p0.len() + 10, 0);
        assert_eq!(receive([p0, &long]).1, vec![DropReason::FecMalformed]);
        // A parity shard shorter than its prefix.
        assert_eq!(
            receive([&p0[..HEADER_LEN + 2].to_vec()]).1,
            vec![DropReason::FecMalformed]
        );
    }

    #[test]
    fn a_late_packet_does_not_evict_a_live_group() {
        let packets = stream(2 * (GROUP_SLOTS + 1));
        let wire = send(2, 1, 1, &packets);
        // Groups of 2 data and 1 parity. Group 0's first packet arrives after group
        // GROUP_SLOTS took its slot (its parity is lost, so nothing rebuilt it before): it is
        // delivered, and does not evict the live group.
        let late = 0;
        let live = 3 * GROUP_SLOTS; // first data packet of group GROUP_SLOTS
        assert_eq!(group_of(&wire[live]), GROUP_SLOTS as u32);
        let order: Vec<&Vec<u8>> = wire[..live]
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != late && *i != 2)
            .map(|(_, d)| d)
            .chain([&wire[live], &wire[late], &wire[live + 2]])
            .collect();
        let (got, refused) = receive(order);
        assert!(refused.is_empty());
        // Group GROUP_SLOTS lost its second packet; its parity rebuilt it after the late one.
        assert_eq!(got.len(), 2 * GROUP_SLOTS + 2);
        assert!(got.contains(&packets[2 * GROUP_SLOTS + 1]));
        assert!(got.contains(&packets[0]));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn any_m_losses_per_group_are_repaired(
            k in 1u8..=12,
            m in 1u8..=4,
            depth in 1u8..=FEC_MAX_DEPTH,
            lens in proptest::collection::vec(1usize..1500, 1..120),
            coins in proptest::collection::vec(any::<bool>(), 300),
        ) {
            let packets: Vec<Vec<u8>> =
                lens.iter().enumerate().map(|(i, &l)| packet(i, l)).collect();
            let wire = send(k, m, depth, &packets);
            // Lose each datagram on a coin flip while its group has lost fewer than m.
            let mut lost_per_group = std::collections::HashMap::<u32, u8>::new();
            let lost: Vec<bool> = wire
                .iter()
                .zip(coins.iter().cycle())
                .map(|(d, &coin)| {
                    let n = lost_per_group.entry(group_of(d)).or_default();
                    let lose = coin && *n < m;
                    *n += u8::from(lose);
                    lose
                })
                .collect();
            prop_assert!(survives(&wire, &packets, |i| lost[i]));
        }

        #[test]
        fn bursts_up_to_depth_times_m_are_repaired(
            k in 1u8..=10,
            m in 1u8..=3,
            depth in 2u8..=FEC_MAX_DEPTH,
            blocks in 1usize..4,
            at in 0usize..1000,
        ) {
            let packets = stream(usize::from(k) * usize::from(depth) * blocks);
            let wire = send(k, m, depth, &packets);
            let len = usize::from(depth) * usize::from(m);
            let at = at % (wire.len() - len + 1);
            prop_assert!(survives(&wire, &packets, |i| (at..at + len).contains(&i)));
        }

        #[test]
        fn deboosting_arbitrary_bytes_never_panics(
            datagrams in proptest::collection::vec(
                proptest::collection::vec(any::<u8>(), 0..64), 0..64),
            headers in proptest::collection::vec((0u32..40, 0u8..12, 0u8..10, 0u8..10, 0u8..12), 64),
        ) {
            // Random bytes, and random bytes behind headers that are nearly valid.
            let mixed: Vec<Vec<u8>> = datagrams
                .iter()
                .zip(&headers)
                .flat_map(|(d, &(g, i, k, m, c))| {
                    let mut h = g.to_be_bytes().to_vec();
                    h.extend([i, k, m, c]);
                    h.extend_from_slice(d);
                    [d.clone(), h]
                })
                .collect();
            let _ = receive(&mixed);
        }
    }
}
