//! A sending and a receiving gateway's pipelines back to back in memory, with no socket or
//! tunnel device between them: what CPU benchmarks time (criterion's per-packet figures in
//! `benches/boosters.rs`, `pathwise bench booster cpu`'s per-byte fit), so both measure the
//! same work. Each datagram crosses into the receiver's pool by a copy, as a socket would copy
//! it. Time stands still ([`Instant::ZERO`]): no flush timer fires, so FEC parity goes out
//! when a group fills, as under load.

use crate::packet::Packet;
use crate::pipeline::{Receiver, Sender};
use crate::vectors::{self, PEER, SnapshotError};
use crate::{Counters, PolicyEpochs, PolicySnapshot};
use pathwise_core::time::Instant;
use std::sync::Arc;

/// The largest packet [`Loopback`] takes: the test link's tunnel MTU.
pub const MTU: usize = 1400;

/// Sender and receiver of one chain, back to back.
#[derive(Debug)]
pub struct Loopback {
    tx: Sender,
    rx: Receiver,
    rx_counters: Arc<Counters>,
    snap: PolicySnapshot,
    policies: PolicyEpochs,
    out: Vec<Packet>,
    delivered: Vec<Packet>,
}

impl Loopback {
    /// Pipelines for `chain` (booster specs as configuration writes them; empty: no booster),
    /// sender 1 to sender 2 with [`vectors::KEY`], for traffic from 10.1.0.0/16 to
    /// 10.2.0.0/16 ([`sample`] packets).
    pub fn new(chain: &[&str]) -> Result<Loopback, SnapshotError> {
        let rx_counters = Arc::new(Counters::default());
        Ok(Loopback {
            tx: Sender::new(vectors::env(1), MTU, Arc::default()),
            rx: Receiver::new(vectors::env(2), &[PEER], rx_counters.clone()),
            rx_counters,
            snap: vectors::snapshot(1, chain)?,
            policies: vectors::peer_policies(chain)?,
            out: Vec::with_capacity(8),
            delivered: Vec::with_capacity(8),
        })
    }

    /// Boost `packet` and deboost every datagram that comes out; the bytes delivered.
    pub fn round_trip(&mut self, packet: &[u8]) -> usize {
        self.boost_into_out(packet);
        for d in std::mem::take(&mut self.out) {
            let mut r = self.rx.pool().get();
            r.set_payload(d.payload());
            self.tx.recycle(d);
            self.deboost_one(r);
        }
        self.drain_delivered()
    }

    /// Boost `packet` only; the bytes of the datagrams sent (then recycled).
    pub fn boost(&mut self, packet: &[u8]) -> usize {
        self.boost_into_out(packet);
        let mut bytes = 0;
        for d in self.out.drain(..) {
            bytes += d.len();
            self.tx.recycle(d);
        }
        bytes
    }

    /// The datagrams boosting `packet` sends, as bytes: what [`Loopback::deboost`] takes, made
    /// outside the timed part of a benchmark.
    pub fn boosted(&mut self, packet: &[u8]) -> Vec<Vec<u8>> {
        self.boost_into_out(packet);
        let datagrams = self.out.iter().map(|d| d.payload().to_vec()).collect();
        for d in self.out.drain(..) {
            self.tx.recycle(d);
        }
        datagrams
    }

    /// Deboost `datagrams` in order; the bytes delivered.
    pub fn deboost(&mut self, datagrams: &[Vec<u8>]) -> usize {
        for d in datagrams {
            let mut r = self.rx.pool().get();
            r.set_payload(d);
            self.deboost_one(r);
        }
        self.drain_delivered()
    }

    /// What the receiver dropped so far, all reasons.
    pub fn receiver_drops(&self) -> u64 {
        self.rx_counters.report().drops.values().sum()
    }

    fn boost_into_out(&mut self, packet: &[u8]) {
        let mut p = self.tx.pool().get();
        p.set_payload(packet);
        self.tx.boost(Instant::ZERO, &self.snap, p, &mut self.out);
    }

    fn deboost_one(&mut self, datagram: Packet) {
        let mut delivered = std::mem::take(&mut self.delivered);
        self.rx.deboost(
            Instant::ZERO,
            PEER,
            &self.policies,
            datagram,
            &mut delivered,
            |_| {},
        );
        self.delivered = delivered;
    }

    fn drain_delivered(&mut self) -> usize {
        let mut bytes = 0;
        for p in self.delivered.drain(..) {
            bytes += p.len();
            self.rx.recycle(p);
        }
        bytes
    }
}

/// The specs of a chain named as benchmarks name it: `none` (no booster) or comma-separated
/// specs (`lz4,encrypt`).
pub fn chain(name: &str) -> Vec<&str> {
    if name == "none" {
        Vec::new()
    } else {
        name.split(',').collect()
    }
}

/// A `len`-byte IPv4 packet (20 ≤ `len` ≤ [`MTU`]) from 10.1.0.1 to 10.2.0.1 whose payload is
/// text with some variety (words at shifting offsets: compressible, not trivially) or
/// pseudo-random bytes (incompressible), different for each `n`: the packets booster
/// benchmarks send.
pub fn sample(len: usize, n: u32, text: bool) -> Vec<u8> {
    let mut p = vec![0u8; len.clamp(20, MTU)];
    p[0] = 0x45;
    p[12..16].copy_from_slice(&[10, 1, 0, 1]);
    p[16..20].copy_from_slice(&[10, 2, 0, 1]);
    let mut x: u32 = 0x1234_5678 ^ n.wrapping_mul(2_654_435_761);
    let words = b"the protocol booster compresses packets on a slow link between two gateways ";
    for (i, b) in p[20..].iter_mut().enumerate() {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *b = if text {
            words[(i + (x as usize % 3)) % words.len()]
        } else {
            x as u8
        };
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every sample chain delivers what it was given, at every size, with nothing dropped.
    #[test]
    fn every_chain_delivers_every_size_whole() {
        for chain in vectors::CHAINS {
            let mut l = Loopback::new(chain).unwrap();
            let mut delivered = 0;
            let mut sent = 0;
            for len in [20, 64, 576, 1000, MTU] {
                for text in [true, false] {
                    // Enough packets to fill FEC groups, so parity is sent and absorbed.
                    for n in 0..24 {
                        sent += len;
                        delivered += l.round_trip(&sample(len, n, text));
                    }
                }
            }
            assert_eq!((delivered, l.receiver_drops()), (sent, 0), "{chain:?}");
        }
    }

    #[test]
    fn boosted_datagrams_deboost_to_the_packet() {
        let mut l = Loopback::new(&["lz4", "encrypt"]).unwrap();
        let p = sample(MTU, 0, true);
        let d = l.boosted(&p);
        assert_eq!(d.len(), 1);
        assert!(d[0].len() < p.len(), "text compresses");
        assert_eq!(l.deboost(&d), p.len());
        // Replayed: the receiver's window drops it.
        assert_eq!(l.deboost(&d), 0);
        assert_eq!(l.receiver_drops(), 1);
    }
}
