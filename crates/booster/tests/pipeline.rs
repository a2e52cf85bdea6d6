//! Sender → Receiver through every booster and chain, with losses, swaps, forgeries and
//! replays: the pipeline contract without sockets.

use pathwise_booster::Packet;
use pathwise_booster::admission::PolicyEpochs;
use pathwise_booster::pipeline::{Receiver, Sender};
use pathwise_booster::policy::PolicySnapshot;
use pathwise_booster::stats::{Counters, DropReason};
use pathwise_booster::vectors::{self, CHAINS, PEER, env, ipv4, peer_policies};
use pathwise_core::time::Instant;
use std::sync::Arc;

struct Link {
    tx: Sender,
    rx: Receiver,
    /// What the receiving side accepts (its own policies, matched mirrored).
    policies: PolicyEpochs,
    tx_counters: Arc<Counters>,
    rx_counters: Arc<Counters>,
    now: Instant,
}

impl Link {
    /// A link whose two ends are both configured with `chain`.
    fn new(chain: &[&str]) -> Self {
        let tx_counters = Arc::new(Counters::default());
        let rx_counters = Arc::new(Counters::default());
        Link {
            tx: Sender::new(env(1), 1400, tx_counters.clone()),
            rx: Receiver::new(env(2), &[PEER], rx_counters.clone()),
            policies: peer_policies(chain).unwrap(),
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
        self.rx
            .deboost(self.now, PEER, &self.policies, p, &mut out, |_| {});
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
        let mut link = Link::new(chain);
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
    let mut link = Link::new(&["lz4"]);
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
        let mut link = Link::new(chain);
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
    let mut link = Link::new(&["fec:4:1"]);
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

/// Send 400 packets through `chain`, losing 12 consecutive datagrams in every other block of
/// 10:3 groups interleaved 4 deep (52 datagrams); return what was sent and what arrived.
fn burst_loss(chain: &[&str]) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let snap = snapshot(1, chain);
    let mut link = Link::new(chain);
    let (mut sent, mut got) = (Vec::new(), Vec::new());
    let mut i = 0usize;
    for n in 0..400u32 {
        let pkt = ipv4(100 + (n as usize * 13) % 1200, n, n % 3 == 0);
        sent.push(pkt.clone());
        for d in link.boost(&snap, &pkt) {
            // The burst starts somewhere else in each block it hits.
            let start = (i / 104) * 7 % 40;
            if !(start..start + 12).contains(&(i % 104)) {
                got.extend(link.deliver(&d));
            }
            i += 1;
        }
    }
    let mut out = Vec::new();
    link.tx.handle_timeout(Instant::from_secs(2), &mut out);
    for d in link.collect_tx(out) {
        got.extend(link.deliver(&d));
    }
    assert_eq!(link.rx_counters.report().total_drops(), 0);
    sent.sort();
    got.sort();
    (sent, got)
}

#[test]
fn interleaved_fec_repairs_bursts_that_plain_fec_cannot() {
    let (sent, got) = burst_loss(&["fec:10:3:4"]);
    assert_eq!(got, sent);
    let (sent, got) = burst_loss(&["encrypt", "fec:10:3:4"]);
    assert_eq!(got, sent);
    let (sent, got) = burst_loss(&["fec:10:3"]);
    assert!(
        got.len() < sent.len() - 20,
        "{} of {}",
        got.len(),
        sent.len()
    );
}

#[test]
fn malformed_fec_headers_are_dropped_and_counted_with_interleaving() {
    let snap = snapshot(1, &["fec:10:3:4"]);
    let mut link = Link::new(&["fec:10:3:4"]);
    let pkt = ipv4(600, 1, true);
    let d = link.boost(&snap, &pkt).remove(0);
    assert_eq!(link.deliver(&d), vec![pkt.clone()]);
    // Behind the 9-byte encapsulation header: group (4), index, K, M, count.
    let mut bad = Vec::new();
    // K = 0, K = 33, M = 9, index past K + M, a parity index with a count of 0.
    for (at, v) in [(14, 0u8), (14, 33), (15, 9), (13, 13), (13, 11)] {
        let mut f = d.clone();
        f[at] = v;
        bad.push(f);
    }
    bad.push(d[..12].to_vec());
    bad.push(forged(&[6], &[0, 0, 0, 9, 12, 10, 3, 0]));
    for b in &bad {
        assert!(link.deliver(b).is_empty(), "{b:?}");
    }
    assert_eq!(
        link.rx_counters.drops(DropReason::FecMalformed),
        bad.len() as u64
    );
    // The stream goes on.
    let pkt2 = ipv4(700, 2, false);
    let d2 = link.boost(&snap, &pkt2).remove(0);
    assert_eq!(link.deliver(&d2), vec![pkt2]);
}

#[test]
fn swapping_chains_mid_stream_drops_and_reorders_nothing() {
    let snaps: Vec<_> = CHAINS
        .iter()
        .enumerate()
        .map(|(g, c)| snapshot(g as u64 + 1, c))
        .collect();
    let mut link = Link::new(&[]);
    // The receiving gateway went through the same changes just as quickly: every chain is
    // within its grace period. It ends on the empty chain, since once the current policy
    // encrypts, plaintext from the peer is refused whatever the grace period.
    for c in CHAINS[1..].iter().chain([&CHAINS[0]]) {
        let peer = vectors::peer_snapshot(2, c).unwrap();
        link.policies = link.policies.switched(link.now, Arc::new(peer));
    }
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
    let mut link = Link::new(&["lz4", "encrypt"]);
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
    let mut own = Link::new(&["lz4", "encrypt"]);
    let mine = own.boost(&snap, &pkt).remove(0);
    let mut rx_self = Receiver::new(env(1), &[PEER], Arc::new(Counters::default()));
    let mut p = rx_self.pool().get();
    p.set_payload(&mine).unwrap();
    let mut out = Vec::new();
    rx_self.deboost(link.now, PEER, &link.policies, p, &mut out, |_| {});
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
    let mut link = Link::new(&["zstd", "encrypt", "fec:4:1"]);
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
                link.rx
                    .deboost(link.now, PEER, &link.policies, r, &mut delivered, |_| {});
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

/// An encapsulated data datagram naming `ids` (no booster headers: what a forger without the
/// key can send), carrying `inner`.
fn forged(ids: &[u8], inner: &[u8]) -> Vec<u8> {
    let mut d = vec![0x10, ids.len() as u8, 0, 0, 0, 0, 0, 9];
    d.extend_from_slice(ids);
    d.extend_from_slice(inner);
    d
}

#[test]
fn datagrams_from_anyone_but_the_peer_are_dropped_control_included() {
    let snap = snapshot(1, &["lz4", "encrypt"]);
    let mut link = Link::new(&["lz4", "encrypt"]);
    let pkt = ipv4(600, 1, true);
    let genuine = link.boost(&snap, &pkt).remove(0);
    let mut control = Vec::new();
    pathwise_booster::pipeline::encode_control(
        &[pathwise_booster::control::Control::LossReport {
            received: 1,
            expected: 100,
        }],
        &mut control,
    );
    let stranger: std::net::SocketAddr = "192.0.2.99:7000".parse().unwrap();
    let other_port: std::net::SocketAddr = "192.0.2.1:7001".parse().unwrap();
    let mapped: std::net::SocketAddr = "[::ffff:192.0.2.1]:7000".parse().unwrap();
    let mut reports = 0;
    for from in [stranger, other_port] {
        for d in [&genuine, &control] {
            let mut p = link.rx.pool().get();
            p.set_payload(d).unwrap();
            let mut out = Vec::new();
            link.rx
                .deboost(link.now, from, &link.policies, p, &mut out, |_| {
                    reports += 1
                });
            assert!(out.is_empty());
        }
    }
    assert_eq!(reports, 0);
    assert_eq!(link.rx_counters.drops(DropReason::UnknownPeer), 4);
    // The peer itself, also as an IPv4-mapped address (a socket bound to [::]).
    let mut p = link.rx.pool().get();
    p.set_payload(&genuine).unwrap();
    let mut out = Vec::new();
    link.rx
        .deboost(link.now, mapped, &link.policies, p, &mut out, |_| {});
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].payload(), &pkt[..]);
    assert_eq!(link.rx_counters.report().total_drops(), 4);
}

#[test]
fn plaintext_chains_are_refused_where_the_policy_encrypts_and_counted_by_reason() {
    let mut link = Link::new(&["lz4", "encrypt"]);
    let pkt = ipv4(200, 1, false);
    // Empty chain, null, dumb (all carry the packet as is), and lz4.
    let mut lz4 = vec![0u8; 400];
    let n = lz4_flex::block::compress_into(&pkt, &mut lz4).unwrap();
    for d in [
        forged(&[], &pkt),
        forged(&[1], &pkt),
        forged(&[4], &pkt),
        forged(&[2], &lz4[..n]),
        forged(&[0x82], &pkt),
    ] {
        assert!(link.deliver(&d).is_empty(), "{:02x?}", &d[..10]);
    }
    assert_eq!(link.rx_counters.drops(DropReason::Unencrypted), 5);
    // Nothing was decompressed for them: refused before deboosting.
    assert_eq!(link.rx_counters.report().boosters["lz4"].deboosted, 0);
    // A plaintext policy refuses other chains, and an encrypted chain it does not have.
    let mut plain = Link::new(&["lz4"]);
    assert!(plain.deliver(&forged(&[1], &pkt)).is_empty());
    assert!(plain.deliver(&forged(&[], &pkt)).is_empty());
    assert_eq!(plain.rx_counters.drops(DropReason::ChainNotAllowed), 2);
    assert_eq!(plain.deliver(&forged(&[0x82], &pkt)), vec![pkt.clone()]);
    // The inner packet must match the policy: the same chain from a network the policy does
    // not cover is refused after deboosting.
    let mut stray = pkt.clone();
    stray[12..16].copy_from_slice(&[192, 0, 2, 1]);
    assert!(plain.deliver(&forged(&[0x82], &stray)).is_empty());
    assert_eq!(plain.rx_counters.drops(DropReason::NoPolicy), 1);
}

#[test]
fn an_encrypted_datagram_is_checked_again_after_decryption() {
    // A key holder (sender 1) encrypts a packet from a network the receiver's policy does not
    // cover; the chain is right, the inner packet is not.
    let mut link = Link::new(&["lz4", "encrypt"]);
    let wide = {
        let p = pathwise_booster::policy::Policy {
            name: "default".into(),
            dst: "0.0.0.0/0".parse().unwrap(),
            src: None,
            chain: vec!["lz4".parse().unwrap(), "encrypt".parse().unwrap()],
        };
        PolicySnapshot::build(
            1,
            vec![p],
            pathwise_booster::policy::MetaPolicy::default(),
            true,
        )
        .unwrap()
    };
    let mut stray = ipv4(300, 1, true);
    stray[12..16].copy_from_slice(&[192, 0, 2, 1]);
    let d = link.boost(&wide, &stray).remove(0);
    assert!(link.deliver(&d).is_empty());
    assert_eq!(link.rx_counters.drops(DropReason::NoPolicy), 1);
    assert_eq!(
        link.rx_counters.report().boosters["encrypt"].deboosted,
        1,
        "refused after decryption"
    );
    let ok = ipv4(300, 2, true);
    let d = link.boost(&wide, &ok).remove(0);
    assert_eq!(link.deliver(&d), vec![ok]);
}

/// The encryption booster's bytes against an independent implementation: the sender id ‖
/// counter nonce, ciphertext and Poly1305 tag of one packet as OpenSSL's ChaCha20-Poly1305
/// computes them (Python `cryptography` 48.0.0, 2026-12-07: key [`vectors::KEY`], nonce
/// `00000001 ‖ 1,000,000`, associated data `01 05 00…00` — a one-stage chain of booster 5, no
/// marks; docs/booster-wire.md "Encryption booster"), then decrypted back. Fails if the cipher
/// (or the nonce or associated data layout) changes on the wire.
#[test]
fn encryption_matches_an_independent_chacha20_poly1305() {
    const EXPECTED: &str = concat!(
        "0000000100000000000f4240a545279d2469646cb356b8ad21c2e40ed8605650",
        "dc24f9f3868e822292eccdc353ef1c594b16791ea0d8651b9ef538d520ba0c76",
        "f3e354fc59888e00c39a44ccb5228299393422084c219ccdcefce3ef",
    );
    let snap = snapshot(1, &["encrypt"]);
    let mut link = Link::new(&["encrypt"]);
    let pkt = ipv4(64, 1, true);
    let datagrams = link.boost(&snap, &pkt);
    assert_eq!(datagrams.len(), 1);
    let d = &datagrams[0];
    let tail: String = d[d.len() - EXPECTED.len() / 2..]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(tail, EXPECTED);
    assert_eq!(link.deliver(d), vec![pkt]);
}

/// `zstd-stream` (docs/booster-wire.md): text shrinks well beyond per-packet zstd, a lost
/// packet costs exactly the rest of its run (counted as `history_gap`), the next run decodes
/// again, and packets it cannot shrink pass as they are.
#[test]
fn zstd_stream_uses_its_history_and_a_loss_costs_the_rest_of_its_run() {
    let text: Vec<Vec<u8>> = (0..64u32).map(|n| ipv4(1400, n, true)).collect();
    let bytes = |chain: &[&str]| -> usize {
        let snap = snapshot(1, chain);
        let mut link = Link::new(chain);
        let mut n = 0;
        for p in &text {
            for d in link.boost(&snap, p) {
                n += d.len();
                assert_eq!(link.deliver(&d), vec![p.clone()]);
            }
        }
        n
    };
    let (per_packet, with_history) = (bytes(&["zstd:3"]), bytes(&["zstd-stream:3:16"]));
    assert!(
        with_history * 2 < per_packet,
        "zstd-stream {with_history} B against zstd {per_packet} B"
    );

    // Runs of 8: packet 11 (index 3 of the second run) is lost; 12–15 cannot be decoded.
    let snap = snapshot(1, &["zstd-stream:3:8"]);
    let mut link = Link::new(&["zstd-stream:3:8"]);
    let mut delivered = Vec::new();
    for (n, p) in text.iter().enumerate().take(32) {
        for d in link.boost(&snap, p) {
            if n != 11 {
                delivered.extend(link.deliver(&d));
            }
        }
    }
    let expect: Vec<Vec<u8>> = (0..32)
        .filter(|n| !(11..16).contains(n))
        .map(|n| text[n].clone())
        .collect();
    assert_eq!(delivered, expect);
    assert_eq!(link.rx_counters.drops(DropReason::HistoryGap), 4);

    // Incompressible packets are sent as they are and end the run; all arrive.
    let mut link = Link::new(&["zstd-stream"]);
    let snap = snapshot(1, &["zstd-stream"]);
    for n in 0..40u32 {
        let p = ipv4(1400, n, n % 3 != 0);
        for d in link.boost(&snap, &p) {
            assert_eq!(link.deliver(&d), vec![p.clone()], "packet {n}");
        }
    }
    assert_eq!(link.rx_counters.drops(DropReason::HistoryGap), 0);
}

/// Whatever follows a `zstd-stream` header, the receiver drops or delivers; it never panics,
/// and a valid run decodes again afterwards.
#[test]
fn zstd_stream_survives_garbage_between_valid_runs() {
    let chain = &["zstd-stream:3:4"];
    let snap = snapshot(1, chain);
    let mut link = Link::new(chain);
    let mut x: u32 = 0x1234_5678;
    for n in 0..200u32 {
        let p = ipv4(600, n, true);
        let datagrams = link.boost(&snap, &p);
        for d in &datagrams {
            // Every 5th datagram is corrupted after the encapsulation and run headers.
            let mut d = d.clone();
            if n % 5 == 2 {
                let from = d.len().min(16);
                for b in d.iter_mut().skip(from) {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    *b = x as u8;
                }
            }
            let _ = link.deliver(&d);
        }
    }
    // A whole run after the garbage decodes, each packet through the history of the last.
    for n in 200..204u32 {
        let p = ipv4(600, n, true);
        for d in link.boost(&snap, &p) {
            assert_eq!(link.deliver(&d), vec![p.clone()], "packet {n}");
        }
    }
    assert!(
        link.rx_counters.drops(DropReason::Decompress)
            + link.rx_counters.drops(DropReason::HistoryGap)
            > 0
    );
}
