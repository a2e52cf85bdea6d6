//! The booster pipeline: the sending side ([`Sender`]) boosts packets through the chain its
//! policy snapshot selects and encapsulates them; the receiving side ([`Receiver`]) reads the
//! chain from the encapsulation header and deboosts in reverse order (seed §4.2.2–4.2.3: the PB
//! output routine boosts, the PB input routine deboosts).
//!
//! Driven by the gateway, one `Sender` on the thread that reads the tunnel device and one
//! `Receiver` on the thread that reads the socket: `boost(now, &snapshot, packet, &mut out)`
//! per packet, `poll_timeout`/`handle_timeout(now, …)` for booster timers (FEC flush), and
//! `deboost(now, from, &policies, datagram, &mut out, on_control)` per datagram. Neither reads a
//! clock or touches a socket.
//!
//! Runtime insertion and removal (seed §5.3): the sender takes the snapshot as an argument and
//! notices a new generation on the next packet, keeping the instances of chains that did not
//! change (so encryption counters and FEC groups carry on). In-flight packets are never
//! dropped or reordered by a swap: each packet is boosted under exactly one snapshot, and the
//! receiver deboosts by the chain written in each packet's header; what it delivers is
//! admitted by its own policies ([`crate::admission`]: source, chain, inner packet), which
//! accept the previous chains for a grace period so the peers can switch without loss. Buffers come from a
//! [`PacketPool`]: after warm-up nothing is allocated per packet.

use crate::admission::PolicyEpochs;
use crate::booster::{Booster, BoosterSpec, StageCtx, StageIo, Verdict};
use crate::boosters::{BoosterEnv, BuildError, instantiate_on_lane};
use crate::control::Control;
use crate::packet::{Packet, PacketPool};
use crate::policy::PolicySnapshot;
use crate::stats::{Counters, DropReason};
use crate::wire::{BoosterId, Chain, Header, MessageType};
use pathwise_core::time::Instant;
use pathwise_core::wire::Writer;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

/// Most distinct chains a receiver keeps deboosting state for (least recently used goes).
pub const MAX_RECEIVE_CHAINS: usize = 32;

/// Source and destination of an IPv4 or IPv6 packet.
pub fn ip_addresses(pkt: &[u8]) -> Option<(IpAddr, IpAddr)> {
    match pkt.first()? >> 4 {
        4 if pkt.len() >= 20 => {
            let a = <[u8; 4]>::try_from(&pkt[12..16]).ok()?;
            let b = <[u8; 4]>::try_from(&pkt[16..20]).ok()?;
            Some((Ipv4Addr::from(a).into(), Ipv4Addr::from(b).into()))
        }
        6 if pkt.len() >= 40 => {
            let a = <[u8; 16]>::try_from(&pkt[8..24]).ok()?;
            let b = <[u8; 16]>::try_from(&pkt[24..40]).ok()?;
            Some((Ipv6Addr::from(a).into(), Ipv6Addr::from(b).into()))
        }
        _ => None,
    }
}

/// Boosters of one chain on one side.
#[derive(Debug)]
struct ChainInstance {
    specs: Vec<BoosterSpec>,
    wire: Chain,
    stages: Vec<Box<dyn Booster>>,
    last_used: u64,
}

impl ChainInstance {
    fn empty() -> Self {
        ChainInstance {
            specs: Vec::new(),
            wire: Chain::default(),
            stages: Vec::new(),
            last_used: 0,
        }
    }

    fn build(specs: Vec<BoosterSpec>, env: &BoosterEnv, lane: u8) -> Result<Self, BuildError> {
        let stages = specs
            .iter()
            .map(|&s| instantiate_on_lane(s, env, lane))
            .collect::<Result<Vec<_>, _>>()?;
        let ids: Vec<_> = specs.iter().map(|s| s.id()).collect();
        Ok(ChainInstance {
            wire: Chain::new(&ids).unwrap_or_default(),
            specs,
            stages,
            last_used: 0,
        })
    }
}

/// The index in `new` of an instance for `specs`: already there, moved over from `old` (so its
/// state carries on), or built.
fn take_chain(
    specs: &[BoosterSpec],
    old: &mut Vec<ChainInstance>,
    new: &mut Vec<ChainInstance>,
    env: &BoosterEnv,
    lane: u8,
) -> usize {
    if let Some(i) = new.iter().position(|c| c.specs == specs) {
        return i;
    }
    let inst = match old.iter().position(|c| c.specs == specs) {
        Some(i) => old.swap_remove(i),
        // Policies were validated against the same key, so this does not fail; an empty chain
        // (tunnel unboosted) is the fallback if it ever did.
        None => ChainInstance::build(specs.to_vec(), env, lane)
            .unwrap_or_else(|_| ChainInstance::empty()),
    };
    new.push(inst);
    new.len() - 1
}

/// Scratch shared by both sides: packet queues reused for every packet.
#[derive(Debug, Default)]
struct Queues {
    work: Vec<Packet>,
    next: Vec<Packet>,
    extra: Vec<Packet>,
}

/// Run `work` through stages `range` of `chain` (boosting when `boost`, else deboosting in the
/// order given), leaving the results in `q.work`.
#[allow(clippy::too_many_arguments)]
fn run_stages(
    chain: &mut ChainInstance,
    stages: impl Iterator<Item = usize>,
    boost: bool,
    now: Instant,
    mtu: usize,
    pool: &mut PacketPool,
    q: &mut Queues,
    counters: &Counters,
) {
    let wire = chain.wire;
    for stage in stages {
        let Some(b) = chain.stages.get_mut(stage) else {
            continue;
        };
        let c = counters.booster(b.id());
        q.next.clear();
        for mut pkt in q.work.drain(..) {
            if !boost && pkt.marks & (1 << stage) != 0 {
                // Passed on the way in: nothing to undo.
                q.next.push(pkt);
                continue;
            }
            let cx = StageCtx {
                now,
                mtu,
                chain: &wire,
                stage,
            };
            let before = pkt.len();
            let mut io = StageIo {
                pool,
                extra: &mut q.extra,
            };
            let r = if boost {
                b.boost(&cx, &mut pkt, &mut io)
            } else {
                b.deboost(&cx, &mut pkt, &mut io)
            };
            match r {
                Ok(v) => {
                    if boost {
                        if pkt.marks & (1 << stage) != 0 {
                            c.passed.fetch_add(1, Relaxed);
                        } else {
                            c.boosted.fetch_add(1, Relaxed);
                        }
                        c.bytes_in.fetch_add(before as u64, Relaxed);
                        c.bytes_out.fetch_add(pkt.len() as u64, Relaxed);
                        c.extra.fetch_add(q.extra.len() as u64, Relaxed);
                    } else {
                        c.deboosted.fetch_add(1, Relaxed);
                        c.recovered.fetch_add(q.extra.len() as u64, Relaxed);
                    }
                    match v {
                        Verdict::Forward => q.next.push(pkt),
                        Verdict::Consume => pool.put(pkt),
                    }
                }
                Err(reason) => {
                    counters.count_drop(reason);
                    pool.put(pkt);
                }
            }
            q.next.append(&mut q.extra);
        }
        std::mem::swap(&mut q.work, &mut q.next);
    }
}

/// The sending side of a gateway.
#[derive(Debug)]
pub struct Sender {
    env: BoosterEnv,
    /// The lane (multi-queue) this sender feeds: its encryption sends under the lane's id.
    lane: u8,
    mtu: usize,
    sequence: u32,
    pool: PacketPool,
    generation: Option<u64>,
    /// Policy index → index into `chains`; the unboosted chain when no policy matches.
    slots: Vec<usize>,
    chains: Vec<ChainInstance>,
    q: Queues,
    header: Vec<u8>,
    counters: Arc<Counters>,
    sample_every: u32,
    sample_countdown: u32,
    sampled: (u64, u64),
}

impl Sender {
    /// A sender for a link of `mtu` bytes (encapsulation excluded), counting into `counters`.
    pub fn new(env: BoosterEnv, mtu: usize, counters: Arc<Counters>) -> Self {
        Sender {
            env,
            lane: 0,
            mtu,
            sequence: 0,
            pool: PacketPool::with_capacity(256),
            generation: None,
            slots: Vec::new(),
            chains: Vec::new(),
            q: Queues {
                work: Vec::with_capacity(64),
                next: Vec::with_capacity(64),
                extra: Vec::with_capacity(16),
            },
            header: Vec::with_capacity(crate::wire::MAX_HEADER_LEN),
            counters,
            sample_every: 0,
            sample_countdown: 0,
            sampled: (0, 0),
        }
    }

    /// The same sender feeding lane `lane` of a gateway with several (docs/booster-wire.md,
    /// "Lanes"): its encryption stages send under that lane's sender id. Call before the first
    /// packet; chains already built keep the lane they were built for.
    pub fn on_lane(mut self, lane: u8) -> Self {
        self.lane = lane;
        self
    }

    /// Compress every `n`-th packet with LZ4 to estimate compressibility for the adaptive
    /// policy (0: never).
    pub fn sample_compressibility(&mut self, n: u32) {
        self.sample_every = n;
        self.sample_countdown = n;
    }

    /// Bytes sampled and their LZ4-compressed size since the last call.
    pub fn take_compressibility(&mut self) -> (u64, u64) {
        std::mem::take(&mut self.sampled)
    }

    /// The pool packets come from and go back to (the driver reads into its packets).
    pub fn pool(&mut self) -> &mut PacketPool {
        &mut self.pool
    }

    /// Point the policy slots at chain instances for `snap`, reusing unchanged ones.
    fn adopt(&mut self, snap: &PolicySnapshot) {
        if self.generation == Some(snap.generation()) && !self.chains.is_empty() {
            return;
        }
        if self.generation.is_some() {
            self.counters.snapshot_switches.fetch_add(1, Relaxed);
        }
        self.generation = Some(snap.generation());
        let mut old = std::mem::take(&mut self.chains);
        let mut chains = Vec::new();
        take_chain(&[], &mut old, &mut chains, &self.env, self.lane);
        self.slots = snap
            .policies()
            .iter()
            .map(|p| take_chain(&p.chain, &mut old, &mut chains, &self.env, self.lane))
            .collect();
        // Retired chains with pending work (an FEC group to close) stay until it is done.
        chains.extend(
            old.into_iter()
                .filter(|c| c.stages.iter().any(|s| s.poll_timeout().is_some())),
        );
        self.chains = chains;
    }

    /// Boost one packet read from the tunnel device under `snap`; datagrams to send to the
    /// peer are appended to `out` (zero, one, or several with FEC parity).
    pub fn boost(
        &mut self,
        now: Instant,
        snap: &PolicySnapshot,
        pkt: Packet,
        out: &mut Vec<Packet>,
    ) {
        self.counters.tun_in.fetch_add(1, Relaxed);
        self.counters
            .tun_in_bytes
            .fetch_add(pkt.len() as u64, Relaxed);
        let Some((src, dst)) = ip_addresses(pkt.payload()) else {
            self.counters.count_drop(DropReason::NotIp);
            self.pool.put(pkt);
            return;
        };
        self.adopt(snap);
        if self.sample_every > 0 {
            self.sample_countdown -= 1;
            if self.sample_countdown == 0 {
                self.sample_countdown = self.sample_every;
                let mut scratch = self.pool.get();
                let n = lz4_flex::block::compress_into(pkt.payload(), scratch.writable_tail())
                    .unwrap_or(pkt.len());
                self.sampled.0 += pkt.len() as u64;
                self.sampled.1 += n.min(pkt.len()) as u64;
                self.pool.put(scratch);
            }
        }
        let ci = snap
            .lookup(src, dst)
            .and_then(|i| self.slots.get(i).copied())
            .unwrap_or(0);
        self.q.work.push(pkt);
        self.run(ci, 0, now, out);
    }

    fn run(&mut self, ci: usize, first_stage: usize, now: Instant, out: &mut Vec<Packet>) {
        let Some(chain) = self.chains.get_mut(ci) else {
            self.q.work.drain(..).for_each(|p| self.pool.put(p));
            return;
        };
        let n = chain.stages.len();
        run_stages(
            chain,
            first_stage..n,
            true,
            now,
            self.mtu,
            &mut self.pool,
            &mut self.q,
            &self.counters,
        );
        let mut wire = chain.wire;
        for mut pkt in self.q.work.drain(..) {
            wire.marks = pkt.marks;
            let h = Header::data(self.sequence, wire);
            self.sequence = self.sequence.wrapping_add(1);
            self.header.clear();
            h.emit(&mut Writer::new(&mut self.header));
            match pkt.push_front(self.header.len()) {
                Some(front) => front.copy_from_slice(&self.header),
                None => {
                    self.counters.count_drop(DropReason::NoRoom);
                    self.pool.put(pkt);
                    continue;
                }
            }
            if pkt.len() > self.mtu + self.header.len() {
                self.counters.over_mtu.fetch_add(1, Relaxed);
            }
            out.push(pkt);
        }
    }

    /// Earliest booster timer.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.chains
            .iter()
            .flat_map(|c| c.stages.iter().filter_map(|s| s.poll_timeout()))
            .min()
    }

    /// Run due booster timers; datagrams they produce are appended to `out`.
    pub fn handle_timeout(&mut self, now: Instant, out: &mut Vec<Packet>) {
        for ci in 0..self.chains.len() {
            for stage in 0..self.chains[ci].stages.len() {
                let chain = &mut self.chains[ci];
                if chain.stages[stage].poll_timeout().is_none_or(|t| t > now) {
                    continue;
                }
                let wire = chain.wire;
                let cx = StageCtx {
                    now,
                    mtu: self.mtu,
                    chain: &wire,
                    stage,
                };
                let mut io = StageIo {
                    pool: &mut self.pool,
                    extra: &mut self.q.extra,
                };
                chain.stages[stage].handle_timeout(&cx, &mut io);
                self.counters
                    .booster(chain.stages[stage].id())
                    .extra
                    .fetch_add(self.q.extra.len() as u64, Relaxed);
                self.q.work.append(&mut self.q.extra);
                self.run(ci, stage + 1, now, out);
            }
        }
    }

    /// Give a sent datagram's buffer back.
    pub fn recycle(&mut self, pkt: Packet) {
        self.pool.put(pkt);
    }
}

/// Encode a control datagram (header with an empty chain, then `messages`) into `out`.
pub fn encode_control(messages: &[Control], out: &mut Vec<u8>) {
    out.clear();
    let mut w = Writer::new(out);
    Header {
        message_type: MessageType::Control,
        flags: 0,
        reserved: 0,
        sequence: 0,
        chain: Chain::default(),
    }
    .emit(&mut w);
    for m in messages {
        m.emit(&mut w);
    }
}

/// Loss seen on the incoming link, from the gaps in the link sequence numbers.
#[derive(Debug, Default, Clone, Copy)]
struct LossMeter {
    first: Option<u32>,
    highest: u32,
    received: u32,
}

impl LossMeter {
    fn observe(&mut self, seq: u32) {
        match self.first {
            None => {
                self.first = Some(seq);
                self.highest = seq;
            }
            Some(_) => {
                // Ahead by less than half the space: newer.
                let ahead = seq.wrapping_sub(self.highest);
                if ahead != 0 && ahead < u32::MAX / 2 {
                    self.highest = seq;
                }
            }
        }
        self.received = self.received.saturating_add(1);
    }

    fn take(&mut self) -> Option<(u32, u32)> {
        let first = self.first?;
        let expected = self.highest.wrapping_sub(first).wrapping_add(1);
        let r = (self.received.min(expected), expected);
        *self = LossMeter {
            first: Some(self.highest.wrapping_add(1)),
            highest: self.highest,
            received: 0,
        };
        Some(r)
    }
}

/// `addr` with an IPv4-mapped IPv6 address written as IPv4, so a socket bound to `[::]` sees
/// the same peer as the configuration names.
fn canonical(addr: SocketAddr) -> SocketAddr {
    SocketAddr::new(addr.ip().to_canonical(), addr.port())
}

/// The receiving side of a gateway.
#[derive(Debug)]
pub struct Receiver {
    env: BoosterEnv,
    peers: Vec<SocketAddr>,
    pool: PacketPool,
    chains: Vec<ChainInstance>,
    q: Queues,
    counters: Arc<Counters>,
    loss: LossMeter,
    clock: u64,
}

impl Receiver {
    /// A receiver accepting datagrams from the peer gateways at `peers` (UDP source address
    /// and port) only, counting into `counters`.
    pub fn new(env: BoosterEnv, peers: &[SocketAddr], counters: Arc<Counters>) -> Self {
        Receiver {
            env,
            peers: peers.iter().copied().map(canonical).collect(),
            pool: PacketPool::with_capacity(256),
            chains: Vec::new(),
            q: Queues {
                work: Vec::with_capacity(64),
                next: Vec::with_capacity(64),
                extra: Vec::with_capacity(16),
            },
            counters,
            loss: LossMeter::default(),
            clock: 0,
        }
    }

    /// The pool packets come from and go back to.
    pub fn pool(&mut self) -> &mut PacketPool {
        &mut self.pool
    }

    /// Give a delivered packet's buffer back.
    pub fn recycle(&mut self, pkt: Packet) {
        self.pool.put(pkt);
    }

    /// Datagrams received and expected on the incoming link since the last call.
    pub fn take_loss_report(&mut self) -> Option<Control> {
        let (received, expected) = self.loss.take()?;
        (expected > 0).then_some(Control::LossReport { received, expected })
    }

    fn chain_for(&mut self, sig: Chain) -> Result<usize, DropReason> {
        self.clock += 1;
        if let Some(i) = self.chains.iter().position(|c| c.wire == sig) {
            self.chains[i].last_used = self.clock;
            return Ok(i);
        }
        let specs = sig
            .ids()
            .iter()
            .map(|&id| BoosterSpec::for_id(id).ok_or(DropReason::UnknownBooster))
            .collect::<Result<Vec<_>, _>>()?;
        // Lane 0: a receiver seals nothing, so its lane does not matter.
        let inst = ChainInstance::build(specs, &self.env, 0).map_err(|_| DropReason::NoKey)?;
        if self.chains.len() >= MAX_RECEIVE_CHAINS {
            let lru = (0..self.chains.len())
                .min_by_key(|&i| self.chains[i].last_used)
                .unwrap_or(0);
            self.chains.swap_remove(lru);
        }
        self.chains.push(ChainInstance {
            last_used: self.clock,
            ..inst
        });
        Ok(self.chains.len() - 1)
    }

    /// Deboost one datagram that arrived from UDP source `from`, admitting it under `policies`
    /// ([`crate::admission`]: source, chain before deboosting, inner packet after). Original
    /// packets to write to the tunnel device are appended to `out`; control TLVs go to
    /// `control`. Drops are counted by reason.
    pub fn deboost(
        &mut self,
        now: Instant,
        from: SocketAddr,
        policies: &PolicyEpochs,
        mut datagram: Packet,
        out: &mut Vec<Packet>,
        mut control: impl FnMut(Control),
    ) {
        self.counters.udp_in.fetch_add(1, Relaxed);
        if !self.peers.contains(&canonical(from)) {
            self.counters.count_drop(DropReason::UnknownPeer);
            self.pool.put(datagram);
            return;
        }
        let (header, header_len) = match Header::parse(datagram.payload()) {
            Ok((h, rest)) => (h, datagram.len() - rest.len()),
            Err(e) => {
                self.counters.count_drop(e.into());
                self.pool.put(datagram);
                return;
            }
        };
        datagram.pull_front(header_len);
        match header.message_type {
            MessageType::Data => {}
            MessageType::Control => {
                self.counters.control_in.fetch_add(1, Relaxed);
                if Control::parse_all(datagram.payload(), &mut control).is_err() {
                    self.counters.count_drop(DropReason::ControlMalformed);
                }
                self.pool.put(datagram);
                return;
            }
            MessageType::Unknown(_) => {
                self.counters.count_drop(DropReason::UnknownMessageType);
                self.pool.put(datagram);
                return;
            }
        }
        let sig = header.chain.signature();
        let admitted = if sig
            .ids()
            .iter()
            .any(|id| matches!(id, BoosterId::Unknown(_)))
        {
            Err(DropReason::UnknownBooster)
        } else {
            policies.admit_chain(now, &sig)
        };
        if let Err(r) = admitted {
            self.counters.count_drop(r);
            self.pool.put(datagram);
            return;
        }
        let ci = match self.chain_for(sig) {
            Ok(ci) => ci,
            Err(r) => {
                self.counters.count_drop(r);
                self.pool.put(datagram);
                return;
            }
        };
        self.loss.observe(header.sequence);
        datagram.marks = header.chain.marks;
        self.q.work.push(datagram);
        let chain = &mut self.chains[ci];
        let n = chain.stages.len();
        run_stages(
            chain,
            (0..n).rev(),
            false,
            now,
            0,
            &mut self.pool,
            &mut self.q,
            &self.counters,
        );
        // Every packet out of the chain (FEC rebuilds included) is checked against the policy
        // of its own addresses, after decryption where the chain encrypts.
        for pkt in self.q.work.drain(..) {
            match policies.admit_packet(now, &sig, pkt.payload()) {
                Ok(()) => out.push(pkt),
                Err(r) => {
                    self.counters.count_drop(r);
                    self.pool.put(pkt);
                }
            }
        }
    }
}
