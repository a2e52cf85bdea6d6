//! Oracle micro-benchmarks on the seed network (§5.2): ranking per query against IPs per query
//! (the seed's 10–363), `answer()` end to end (parse, rank, emit), snapshot build and live
//! updates, and ranking on a small (10-router) against a 10,000-router network (seed Fig. 28).
//!
//! `cargo bench -p pathwise-oracle --bench oracle`. Candidates are random IPv4 addresses with one
//! in five inside the AS (the 130.149/16 client networks), queried from the seed's source network;
//! buffers are reused, so per-query figures measure work, not allocation.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pathwise_oracle::generate::{SyntheticSpec, seed_network, synthetic};
use pathwise_oracle::model::{CacheScope, ExternalNetwork};
use pathwise_oracle::proxidor::{answer, query};
use pathwise_oracle::{RankScratch, TopologySnapshot, Update};
use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

const SIZES: [usize; 6] = [10, 50, 100, 200, 300, 363];

/// `n` candidates; every fifth is `internal.x.9` with `x` in `1..=nets`.
fn candidates(n: usize, seed: u32, internal: [u8; 2], nets: u32) -> Vec<IpAddr> {
    (0..n as u32)
        .map(|i| {
            let x = (i ^ seed).wrapping_mul(2_654_435_761).rotate_left(7);
            if i % 5 == 0 {
                IpAddr::V4(Ipv4Addr::new(
                    internal[0],
                    internal[1],
                    (x % nets) as u8 + 1,
                    9,
                ))
            } else {
                IpAddr::V4(Ipv4Addr::from(x))
            }
        })
        .collect()
}

fn source() -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(130, 149, 221, 7))
}

fn ranking(c: &mut Criterion) {
    let snap = TopologySnapshot::build(&seed_network(1)).expect("builds");
    let mut g = c.benchmark_group("rank_seed_network");
    for n in SIZES {
        let base = candidates(n, 1, [130, 149], 108);
        let mut work = base.clone();
        let mut scratch = RankScratch::default();
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                work.copy_from_slice(&base);
                black_box(snap.rank_with(source(), &mut work, &mut scratch))
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("answer_seed_network");
    for n in SIZES {
        let mut q = Vec::new();
        query(7, &candidates(n, 2, [130, 149], 108)).emit(&mut q);
        let mut out = Vec::with_capacity(1500);
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                out.clear();
                black_box(answer(&snap, source(), black_box(&q), &mut out))
            })
        });
    }
    g.finish();
}

fn build_and_update(c: &mut Criterion) {
    let cfg = seed_network(1);
    let snap = TopologySnapshot::build(&cfg).expect("builds");
    let mut g = c.benchmark_group("snapshot_seed_network");
    g.sample_size(10);
    g.bench_function("build", |b| {
        b.iter(|| TopologySnapshot::build(black_box(&cfg)))
    });
    let add = [Update::AddExternalNetwork(ExternalNetwork {
        prefix: "203.0.113.0/24".parse().expect("prefix"),
        router: IpAddr::V4(Ipv4Addr::new(10, 3, 2, 1)),
        nic: 0,
        as_number: 64_500,
        as_distance: 2,
    })];
    g.bench_function("update_add_prefix", |b| {
        b.iter(|| snap.apply(black_box(&add)))
    });
    let link = [Update::SetNicState {
        router: IpAddr::V4(Ipv4Addr::new(10, 1, 0, 1)),
        nic: 0,
        state: pathwise_oracle::model::State::Down,
    }];
    g.bench_function("update_link_down", |b| {
        b.iter(|| snap.apply(black_box(&link)))
    });
    g.finish();
}

fn network_size(c: &mut Criterion) {
    // Seed Fig. 19's small network has 10 routers; both carry the seed's 67,000 routes × 3.
    let mut small = SyntheticSpec::new(10, 67_000, 3);
    small.source_networks = 10;
    let mut big = SyntheticSpec::new(10_000, 67_000, 3);
    big.source_networks = 1_000;
    big.cache = CacheScope::SourceRouters;
    let mut g = c.benchmark_group("rank_100_by_network_size");
    for (name, spec) in [("10_routers", small), ("10000_routers", big)] {
        let snap = TopologySnapshot::build(&synthetic(&spec)).expect("builds");
        let base = candidates(100, 3, [100, 64], 9);
        let mut work = base.clone();
        let mut scratch = RankScratch::default();
        let src = IpAddr::V4(Ipv4Addr::new(100, 64, 0, 7));
        g.throughput(Throughput::Elements(100));
        g.bench_function(name, |b| {
            b.iter(|| {
                work.copy_from_slice(&base);
                black_box(snap.rank_with(src, &mut work, &mut scratch))
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500));
    targets = ranking, build_and_update, network_size
}
criterion_main!(benches);
