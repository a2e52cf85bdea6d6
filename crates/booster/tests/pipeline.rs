//! Sender → Receiver through every booster and chain, with losses, swaps, forgeries and
//! replays: the pipeline contract without sockets.

use pathwise_booster::Packet;
use pathwise_booster::pipeline::{Receiver, Sender};
use pathwise_booster::policy::PolicySnapshot;
use pathwise_booster::stats::{Counters, DropReason};
use pathwise_booster::vectors::{self, CHAINS, env, ipv4};
use pathwise_core::time::Instant;
use std::sync::Arc;

struct Link {
    tx: Sender,
    rx: Receiver,
    tx_counters: Arc<Counters>,
    rx_counters: Arc<Counters>,
    now: Instant,
}

impl Link {
    fn new() -> Self {
        let tx_counters = Arc::new(Counters::default());
        let rx_counters = Arc::new(Counters::default());
        Link {
            tx: Sender::new(env(1), 1400, tx_counters.clone()),
            rx: Receiver::new(env(2), rx_counters.clone()),
            tx_counters,
            rx_counters,
            now: Instant::from_secs(1),
        }
    }

    /// Boost `pkt`; return the datagrams.
    fn boost(&mut self, snap: &PolicySnapshot, pkt: &[u8]) -> Vec<Vec<u8>> {
        let mut p = self.tx.pool().get();
        p.set_payload(pkt).unwrap();
        let mut out = Vec::new();
        self.tx.boost(self.now, snap, p, &mut out);
        self.collect_tx(out)
    }

    fn collect_tx(&mut self, out: Vec<Packet>) -> Vec<Vec<u8>> {
        out.into_iter()
            .map(|p| {
                let v = p.payload().to_vec();
                self.tx.recycle(p);
                v
            })
            .collect()
    }

    /// Deliver a datagram; return the packets written to the tunnel.
    fn deliver(&mut self, d: &[u8]) -> Vec<Vec<u8>> {
        let mut p = self.rx.pool().get();
        p.set_payload(d).unwrap();
        let mut out = Vec::new();
        self.rx.deboost(self.now, p, &mut out, |_| {});
        out.into_iter()
            .map(|p| {
                let v = p.payload().to_vec();
                self.rx.recycle(p);
                v
            })
            .collect()
    }
}

/// [`vectors::snapshot`] of a chain the test knows to be valid.
fn snapshot(generation: u64, chain: &[&str]) -> PolicySnapshot {
    vectors::snapshot(generation, chain).unwrap()
}

#[test]
fn every_chain_round_trips_in_order_without_loss() {
    for chain in CHAINS {
        let snap = snapshot(1, chain);
        let mut link = Link::new();
        let mut delivered = Vec::new();
        let mut sent = Vec::new();
        for n in 0..200u32 {
            let pkt = ipv4(60 + (n as usize * 37) % 1340, n, n % 2 == 0);
            sent.push(pkt.clone());
            for d in link.boost(&snap, &pkt) {
                delivered.extend(link.deliver(&d));
            }
        }
        assert_eq!(delivered, sent, "chain {chain:?}");
        let r = link.rx_counters.report();
        assert_eq!(r.total_drops(), 0, "chain {chain:?}: {:?}", r.drops);
    }
}

#[test]
fn compression_shrinks_text_and_passes_noise_marked() {
    let snap = snapshot(1, &["lz4"]);
    let mut link = Link::new();
    let text = ipv4(1400, 1, true);
    let noise = ipv4(1400, 2, false);
    let d_text = link.boost(&snap, &text);
    let d_noise = link.boost(&snap, &noise);
    assert!(
        d_text[0].len() < 400,
        "text compressed to {}",
        d_text[0].len()
    );
    // Not shrunk: sent as is behind a 9-byte header whose single entry is marked "passed".
    assert_eq!(d_noise[0].len(), noise.len() + 9);
    assert_eq!(d_noise[0][8], 0x80 | 2);
    assert_eq!(link.deliver(&d_noise[0]), vec![noise]);
    assert_eq!(link.deliver(&d_text[0]), vec![text]);
    let lz4 = &link.tx_counters.report().boosters["lz4"];
    assert_eq!((lz4.boosted, lz4.passed), (1, 1));
}

#[test]
fn fec_recovers_one_loss_per_group_of_k_plus_one() {
    for chain in [
        &["fec:4:1"][..],
        &["lz4", "encrypt", "fec:4:1"],
        &["fec:4:2", "encrypt"],
    ] {
        let snap = snapshot(1, chain);
        let mut link = Link::new();
        let mut got = Vec::new();
        let mut sent = Vec::new();
        let mut i = 0;
        for n in 0..400u32 {
            let pkt = ipv4(100 + (n as usize * 13) % 1200, n, n % 3 == 0);
            sent.push(pkt.clone());
            for d in link.boost(&snap, &pkt) {
                // Lose every fifth datagram: exactly one per group of 4 + 1.
                if i % 5 != 2 {
                    got.extend(link.deliver(&d));
                }
                i += 1;
            }
        }
        got.sort();
        sent.sort();
        assert_eq!(got, sent, "chain {chain:?}");
        assert!(link.rx_counters.report().boosters["fec"].recovered > 0);
    }
}

#[test]
fn fec_flush_timer_protects_a_partial_group() {
    let snap = snapshot(1, &["fec:4:1"]);
    let mut link = Link::new();
    let a = link.boost(&snap, &ipv4(300, 1, true));
    let b = link.boost(&snap, &ipv4(500, 2, false));
    assert_eq!((a.len(), b.len()), (1, 1));
    let t = link
        .tx
        .poll_timeout()
        .expect("a partial group waits for its flush");
    link.now = t;
    let mut out = Vec::new();
    link.tx.handle_timeout(t, &mut out);
    let parity = link.collect_tx(out);
    assert_eq!(parity.len(), 1);
    assert!(link.tx.poll_timeout().is_none());
    // Lose the first data packet: the parity rebuilds it.
    assert_eq!(link.deliver(&b[0]), vec![ipv4(500, 2, false)]);
    assert_eq!(link.deliver(&parity[0]), vec![ipv4(300, 1, true)]);
}

#[test]
fn swapping_chains_mid_stream_drops_and_reorders_nothing() {
    let snaps: Vec<_> = CHAINS
        .iter()
        .enumerate()
        .map(|(g, c)| snapshot(g as u64 + 1, c))
        .collect();
    let mut link = Link::new();
    let mut in_flight = Vec::new();
    let mut sent = Vec::new();
    for n in 0..2000u32 {
        // A new snapshot every 7 packets while datagrams of older chains are still in flight.
        let snap = &snaps[(n as usize / 7) % snaps.len()];
        let pkt = ipv4(80 + (n as usize * 31) % 1300, n, n % 2 == 1);
        sent.push(pkt.clone());
        in_flight.extend(link.boost(snap, &pkt));
    }
    let mut t = link.now;
    while let Some(next) = link.tx.poll_timeout() {
        t = t.max(next);
        let mut out = Vec::new();
        link.tx.handle_timeout(t, &mut out);
        in_flight.extend(link.collect_tx(out));
    }
    let mut delivered = Vec::new();
    for d in &in_flight {
        delivered.extend(link.deliver(d));
    }
    assert_eq!(delivered, sent);
    assert_eq!(link.rx_counters.report().total_drops(), 0);
    assert!(link.tx_counters.report().snapshot_switches > 200);
}

#[test]
fn forged_truncated_replayed_and_garbage_datagrams_are_dropped_and_counted() {
    let snap = snapshot(1, &["lz4", "encrypt"]);
    let mut link = Link::new();
    let pkt = ipv4(600, 1, true);
    let d = link.boost(&snap, &pkt).remove(0);
    assert_eq!(link.deliver(&d), vec![pkt.clone()]);
    // Replayed.
    assert!(link.deliver(&d).is_empty());
    // Forged: one ciphertext bit flipped.
    let d2 = link.boost(&snap, &pkt).remove(0);
    let mut forged = d2.clone();
    let last = forged.len() - 20;
    forged[last] ^= 1;
    assert!(link.deliver(&forged).is_empty());
    // Flipping the "passed" mark of the compression stage fails authentication too.
    let mut marked = d2.clone();
    marked[8] ^= 0x80;
    assert!(link.deliver(&marked).is_empty());
    // Truncated header, truncated crypto payload, bad version, unknown booster, garbage.
    assert!(link.deliver(&d2[..5]).is_empty());
    assert!(link.deliver(&d2[..20]).is_empty());
    let mut v = d2.clone();
    v[0] = 0x70;
    assert!(link.deliver(&v).is_empty());
    assert!(
        link.deliver(&[0x10, 1, 0, 0, 0, 0, 0, 0, 0x55, 1, 2, 3])
            .is_empty()
    );
    assert!(link.deliver(&[0xde, 0xad, 0xbe, 0xef]).is_empty());
    // A reflected packet (our own sender id) is refused.
    let mut own = Link::new();
    let mine = own.boost(&snap, &pkt).remove(0);
    let mut rx_self = Receiver::new(env(1), Arc::new(Counters::default()));
    let mut p = rx_self.pool().get();
    p.set_payload(&mine).unwrap();
    let mut out = Vec::new();
    rx_self.deboost(link.now, p, &mut out, |_| {});
    assert!(out.is_empty());
    // The genuine one still goes through.
    assert_eq!(link.deliver(&d2), vec![pkt]);
    let c = &link.rx_counters;
    for (reason, n) in [
        (DropReason::Replay, 1),
        (DropReason::AuthFailed, 2),
        (DropReason::HeaderTruncated, 1),
        (DropReason::CryptoTruncated, 1),
        (DropReason::HeaderVersion, 2),
        (DropReason::UnknownBooster, 1),
    ] {
        assert_eq!(c.drops(reason), n, "{}", reason.name());
    }
}

#[test]
fn steady_state_allocates_no_buffers() {
    let snap = snapshot(1, &["zstd", "encrypt", "fec:4:1"]);
    let mut link = Link::new();
    let run = |link: &mut Link, count: u32| {
        for n in 0..count {
            let mut p = link.tx.pool().get();
            p.set_payload(&ipv4(1200, n, n % 2 == 0)).unwrap();
            let mut out = Vec::new();
            link.tx.boost(link.now, &snap, p, &mut out);
            for d in out {
                let mut r = link.rx.pool().get();
                r.set_payload(d.payload()).unwrap();
                link.tx.recycle(d);
                let mut delivered = Vec::new();
                link.rx.deboost(link.now, r, &mut delivered, |_| {});
                for p in delivered {
                    link.rx.recycle(p);
                }
            }
        }
    };
    run(&mut link, 100);
    let (tx, rx) = (link.tx.pool().allocations(), link.rx.pool().allocations());
    run(&mut link, 2000);
    assert_eq!(
        (link.tx.pool().allocations(), link.rx.pool().allocations()),
        (tx, rx)
    );
}
