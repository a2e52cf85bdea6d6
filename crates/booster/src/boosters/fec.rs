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
//! Driven by the pipeline: `boost` per packet; `poll_timeout`/`handle_timeout` flush a partial
//! group [`FLUSH_AFTER`] after its first packet so a pause in traffic does not leave its tail
//! unprotected. The sender encodes into buffers it keeps; the receiver keeps [`GROUP_SLOTS`]
//! recent groups and allocates only when it rebuilds a lost packet.

use crate::booster::{Booster, StageCtx, StageIo, Verdict};
use crate::packet::{MAX_PAYLOAD, Packet};
use crate::stats::DropReason;
use crate::wire::BoosterId;
use pathwise_core::time::{Duration, Instant};
use pathwise_core::wire::Reader;
use reed_solomon_erasure::galois_8::ReedSolomon;

/// Booster header length.
pub const HEADER_LEN: usize = 8;
/// Shard prefix: marks and length.
const SHARD_PREFIX: usize = 3;
/// Largest shard.
const SHARD_CAP: usize = SHARD_PREFIX + MAX_PAYLOAD;
/// A partial group is closed this long after its first packet.
pub const FLUSH_AFTER: Duration = Duration::from_millis(10);
/// Groups the receiver keeps for recovery.
pub const GROUP_SLOTS: usize = 16;

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

/// Reed-Solomon FEC over groups of `k` packets with `m` parity packets.
#[derive(Debug)]
pub struct Fec {
    k: u8,
    m: u8,
    next_group: u32,
    /// Sender: the group being filled.
    open: Group,
    /// Receiver: recent groups, by group id modulo the slot count.
    slots: Vec<Option<Group>>,
    codecs: Codecs,
}

impl Fec {
    /// A booster sending `m` parity packets for every `k` data packets.
    pub fn new(k: u8, m: u8) -> Self {
        Fec {
            k,
            m,
            next_group: 0,
            open: Group::new(k, m),
            slots: (0..GROUP_SLOTS).map(|_| None).collect(),
            codecs: Codecs::default(),
        }
    }

    /// Close the open group: compute and emit its parity packets.
    fn flush(&mut self, io: &mut StageIo<'_>) {
        let g = &mut self.open;
        let count = g
            .present
            .iter()
            .take(usize::from(g.k))
            .filter(|p| **p)
            .count();
        if g.done || count == 0 {
            g.done = true;
            return;
        }
        let (k, m) = (usize::from(g.k), usize::from(g.m));
        let width = g.len[..k].iter().copied().max().unwrap_or(0);
        for i in 0..k {
            let l = if g.present[i] { g.len[i] } else { 0 };
            g.shards[i][l..width].fill(0);
        }
        let Some(rs) = self.codecs.get(g.k, g.m) else {
            g.done = true;
            return;
        };
        let mut views: Vec<&mut [u8]> = g.shards.iter_mut().map(|s| &mut s[..width]).collect();
        if rs.encode(&mut views).is_ok() {
            for p in 0..m {
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
        g.done = true;
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
        if self.open.done {
            let id = self.next_group;
            self.next_group = self.next_group.wrapping_add(1);
            self.open.reset(id, self.k, self.m, cx.now);
        }
        let index = self.open.present[..usize::from(self.k)]
            .iter()
            .filter(|p| **p)
            .count();
        let earlier = pkt.marks & ((1u16 << cx.stage.min(8)) - 1) as u8;
        self.open.store_data(index, earlier, pkt.payload());
        FecHeader {
            group: self.open.id,
            index: index as u8,
            k: self.k,
            m: self.m,
            count: 0,
        }
        .write(pkt.push_front(HEADER_LEN).ok_or(DropReason::NoRoom)?);
        if index + 1 == usize::from(self.k) {
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
        let fresh = match &self.slots[slot] {
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
        let is_data = h.index < h.k;
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
        if self.open.done {
            None
        } else {
            self.open.started.checked_add(FLUSH_AFTER)
        }
    }

    fn handle_timeout(&mut self, cx: &StageCtx<'_>, io: &mut StageIo<'_>) {
        if self.poll_timeout().is_some_and(|t| t <= cx.now) {
            self.flush(io);
        }
    }
}
