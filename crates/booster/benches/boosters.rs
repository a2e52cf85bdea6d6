//! Per-packet cost of each booster (boost on the sending side, deboost on the receiving side,
//! encapsulation included), and the cost of building and swapping a policy snapshot.
//!
//! `cargo bench -p pathwise-booster --bench boosters`

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pathwise_booster::adaptive::AdaptiveConfig;
use pathwise_booster::admission::{DEFAULT_GRACE, PolicyEpochs};
use pathwise_booster::boosters::{BoosterEnv, CryptoContext};
use pathwise_booster::pipeline::{Receiver, Sender};
use pathwise_booster::policy::{MetaPolicy, Policy, PolicySnapshot};
use pathwise_booster::stats::Counters;
use pathwise_booster::vectors::PEER;
use pathwise_booster::{BoosterSpec, Packet};
use pathwise_core::time::Instant;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

fn snapshot(chain: &[&str]) -> PolicySnapshot {
    snapshot_to("10.2.0.0/16", chain)
}

/// What the receiving gateway is configured with: the same chain towards the sender's network
/// (admission matches it mirrored).
fn receiver_policies(chain: &[&str]) -> PolicyEpochs {
    PolicyEpochs::new(
        Arc::new(snapshot_to("10.1.0.0/16", chain)),
        DEFAULT_GRACE,
        &AdaptiveConfig::default(),
    )
}

fn snapshot_to(dst: &str, chain: &[&str]) -> PolicySnapshot {
    PolicySnapshot::build(
        1,
        vec![Policy {
            name: "default".into(),
            dst: dst.parse().unwrap(),
            src: None,
            chain: chain
                .iter()
                .map(|s| s.parse::<BoosterSpec>().unwrap())
                .collect(),
        }],
        MetaPolicy::default(),
        true,
    )
    .unwrap()
}

fn env(id: u32) -> BoosterEnv {
    BoosterEnv {
        crypto: Some(Arc::new(CryptoContext::new(&[9; 32], id, 1))),
    }
}

/// A 1400-byte IPv4 packet: text (compressible) or pseudo-random.
fn packet(text: bool) -> Vec<u8> {
    let mut p = vec![0u8; 1400];
    p[0] = 0x45;
    p[12..16].copy_from_slice(&[10, 1, 0, 1]);
    p[16..20].copy_from_slice(&[10, 2, 0, 1]);
    let mut x: u32 = 0x1234_5678;
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

const CHAINS: &[&str] = &[
    "none",
    "null",
    "lz4",
    "zstd",
    "dumb",
    "encrypt",
    "fec:4:1",
    // Issue #19's FEC figure: 10 data and 3 parity per group, alone and interleaved 4 deep
    // (the parity of a group, once per 10 packets, is part of each iteration's average).
    "fec:10:3",
    "fec:10:3:4",
    "lz4,encrypt",
];

fn per_packet(c: &mut Criterion) {
    for text in [true, false] {
        let mut g = c.benchmark_group(if text {
            "boost+deboost/text"
        } else {
            "boost+deboost/random"
        });
        g.throughput(Throughput::Elements(1));
        let data = packet(text);
        for &name in CHAINS {
            let chain: Vec<&str> = if name == "none" {
                vec![]
            } else {
                name.split(',').collect()
            };
            let snap = snapshot(&chain);
            let mut tx = Sender::new(env(1), 1400, Arc::new(Counters::default()));
            let mut rx = Receiver::new(env(2), &[PEER], Arc::new(Counters::default()));
            let policies = receiver_policies(&chain);
            let mut out: Vec<Packet> = Vec::with_capacity(8);
            let mut delivered: Vec<Packet> = Vec::with_capacity(8);
            g.bench_function(BenchmarkId::from_parameter(name), |b| {
                b.iter(|| {
                    let mut p = tx.pool().get();
                    p.set_payload(&data);
                    tx.boost(Instant::ZERO, &snap, p, &mut out);
                    for d in out.drain(..) {
                        // The datagram crosses to the receiver's pool, as a socket would copy it.
                        let mut r = rx.pool().get();
                        r.set_payload(d.payload());
                        tx.recycle(d);
                        rx.deboost(Instant::ZERO, PEER, &policies, r, &mut delivered, |_| {});
                    }
                    for p in delivered.drain(..) {
                        black_box(p.len());
                        rx.recycle(p);
                    }
                })
            });
        }
        g.finish();
    }
    // Receive side alone: each iteration deboosts a fresh datagram (boosted, untimed, in the
    // setup) so replay windows and FEC groups see a live stream, as a gateway's ingress does.
    let mut g = c.benchmark_group("deboost/text");
    let data = packet(true);
    for &name in CHAINS {
        let chain: Vec<&str> = if name == "none" {
            vec![]
        } else {
            name.split(',').collect()
        };
        let snap = snapshot(&chain);
        let mut tx = Sender::new(env(1), 1400, Arc::new(Counters::default()));
        let mut rx = Receiver::new(env(2), &[PEER], Arc::new(Counters::default()));
        let policies = receiver_policies(&chain);
        let mut out: Vec<Packet> = Vec::with_capacity(8);
        let mut delivered: Vec<Packet> = Vec::with_capacity(8);
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter_batched(
                || {
                    let mut p = tx.pool().get();
                    p.set_payload(&data);
                    tx.boost(Instant::ZERO, &snap, p, &mut out);
                    let d: Vec<Vec<u8>> = out.iter().map(|d| d.payload().to_vec()).collect();
                    for d in out.drain(..) {
                        tx.recycle(d);
                    }
                    d
                },
                |datagrams| {
                    for d in &datagrams {
                        let mut r = rx.pool().get();
                        r.set_payload(d);
                        rx.deboost(Instant::ZERO, PEER, &policies, r, &mut delivered, |_| {});
                    }
                    for p in delivered.drain(..) {
                        black_box(p.len());
                        rx.recycle(p);
                    }
                    datagrams
                },
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
    // Boost side alone, so the two halves can be told apart.
    let mut g = c.benchmark_group("boost/text");
    let data = packet(true);
    for &name in CHAINS {
        let chain: Vec<&str> = if name == "none" {
            vec![]
        } else {
            name.split(',').collect()
        };
        let snap = snapshot(&chain);
        let mut tx = Sender::new(env(1), 1400, Arc::new(Counters::default()));
        let mut out: Vec<Packet> = Vec::with_capacity(8);
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                let mut p = tx.pool().get();
                p.set_payload(&data);
                tx.boost(Instant::ZERO, &snap, p, &mut out);
                for d in out.drain(..) {
                    black_box(d.len());
                    tx.recycle(d);
                }
            })
        });
    }
    g.finish();
}

fn insertion(c: &mut Criterion) {
    let mut g = c.benchmark_group("policy");
    let base = snapshot(&["encrypt"]);
    let swap = arc_swap::ArcSwap::from_pointee(snapshot(&["encrypt"]));
    g.bench_function("insert lz4 (build + validate + swap)", |b| {
        b.iter(|| {
            let new = base
                .with_inserted("default", BoosterSpec::Lz4, None)
                .unwrap();
            swap.store(Arc::new(new));
        })
    });
    g.bench_function("remove lz4 (build + validate + swap)", |b| {
        let with = base
            .with_inserted("default", BoosterSpec::Lz4, None)
            .unwrap();
        b.iter(|| {
            let new = with.with_removed("default", BoosterSpec::Lz4).unwrap();
            swap.store(Arc::new(new));
        })
    });
    g.bench_function("datapath load of the current snapshot", |b| {
        b.iter(|| black_box(swap.load().generation()))
    });
    // A sender switching chains: the first packet after a swap builds the new instances.
    let data = packet(true);
    let a = snapshot(&["encrypt"]);
    let bsnap = a.with_inserted("default", BoosterSpec::Lz4, None).unwrap();
    let mut tx = Sender::new(env(1), 1400, Arc::new(Counters::default()));
    let mut out: Vec<Packet> = Vec::with_capacity(8);
    let mut flip = false;
    g.bench_function("first packet after a swap (alternating chains)", |b| {
        b.iter(|| {
            flip = !flip;
            let mut p = tx.pool().get();
            p.set_payload(&data);
            tx.boost(Instant::ZERO, if flip { &a } else { &bsnap }, p, &mut out);
            for d in out.drain(..) {
                tx.recycle(d);
            }
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(1));
    targets = per_packet, insertion
}
criterion_main!(benches);
