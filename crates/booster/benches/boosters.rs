//! Per-packet cost of each booster (boost on the sending side, deboost on the receiving side,
//! encapsulation included, through [`Loopback`]), FEC's Galois-field kernels side by side, and
//! the cost of building and swapping a policy snapshot.
//!
//! `cargo bench -p pathwise-booster --bench boosters`

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pathwise_booster::boosters::Gf256;
use pathwise_booster::loopback::{self, Loopback};
use pathwise_booster::pipeline::Sender;
use pathwise_booster::policy::PolicySnapshot;
use pathwise_booster::stats::Counters;
use pathwise_booster::{BoosterSpec, Packet, vectors};
use pathwise_core::time::Instant;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

fn snapshot(chain: &[&str]) -> PolicySnapshot {
    vectors::snapshot(1, chain).unwrap()
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
        let data = loopback::sample(loopback::MTU, 0, text);
        for &name in CHAINS {
            let mut l = Loopback::new(&loopback::chain(name)).unwrap();
            g.bench_function(BenchmarkId::from_parameter(name), |b| {
                b.iter(|| black_box(l.round_trip(&data)))
            });
        }
        g.finish();
    }
    // Receive side alone: each iteration deboosts a fresh datagram (boosted, untimed, in the
    // setup) so replay windows and FEC groups see a live stream, as a gateway's ingress does.
    let mut g = c.benchmark_group("deboost/text");
    let data = loopback::sample(loopback::MTU, 0, true);
    for &name in CHAINS {
        let mut l = Loopback::new(&loopback::chain(name)).unwrap();
        // Two handles on one pair: the setup boosts, the routine deboosts.
        let l = std::cell::RefCell::new(&mut l);
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter_batched(
                || l.borrow_mut().boosted(&data),
                |datagrams| black_box(l.borrow_mut().deboost(&datagrams)),
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
    // Boost side alone, so the two halves can be told apart.
    let mut g = c.benchmark_group("boost/text");
    for &name in CHAINS {
        let mut l = Loopback::new(&loopback::chain(name)).unwrap();
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| black_box(l.boost(&data)))
        });
    }
    g.finish();
}

/// FEC's Galois-field kernels side by side: encoding one 10:3 group of 1350-byte shards with
/// reed-solomon-erasure's portable arithmetic (`galois_8`, what FEC used before) and with
/// pathwise's run-time-dispatched one (`Gf256`, AVX2 where the CPU has it); the same code, the
/// same parity bytes.
fn galois(c: &mut Criterion) {
    let mut g = c.benchmark_group("fec 10:3 encode one group");
    g.throughput(Throughput::Bytes(10 * 1350));
    let mut shards: Vec<Vec<u8>> = (0..13)
        .map(|i| loopback::sample(1350, i, i % 2 == 0))
        .collect();
    let portable = reed_solomon_erasure::galois_8::ReedSolomon::new(10, 3).unwrap();
    g.bench_function("galois_8 (portable)", |b| {
        b.iter(|| portable.encode(black_box(&mut shards)).unwrap())
    });
    let dispatched = reed_solomon_erasure::ReedSolomon::<Gf256>::new(10, 3).unwrap();
    g.bench_function("Gf256 (run-time dispatch)", |b| {
        b.iter(|| dispatched.encode(black_box(&mut shards)).unwrap())
    });
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
    let data = loopback::sample(loopback::MTU, 0, true);
    let a = snapshot(&["encrypt"]);
    let bsnap = a.with_inserted("default", BoosterSpec::Lz4, None).unwrap();
    let mut tx = Sender::new(
        vectors::env(1),
        loopback::MTU,
        Arc::new(Counters::default()),
    );
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
    targets = per_packet, galois, insertion
}
criterion_main!(benches);
