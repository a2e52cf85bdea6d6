//! Digest time per algorithm for 64, 256 and 1,500-byte messages.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pathwise_auth::{Algorithm, digest};
use std::hint::black_box;
use std::time::Duration;

fn bench_digest(c: &mut Criterion) {
    let key = [0x5a_u8; 16];
    let mut group = c.benchmark_group("digest");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    for len in [64usize, 256, 1500] {
        let msg: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        group.throughput(Throughput::Bytes(len as u64));
        for alg in Algorithm::ALL {
            group.bench_with_input(BenchmarkId::new(alg.name(), len), &msg, |b, msg| {
                b.iter(|| digest(black_box(alg), black_box(&key), &[black_box(msg)]))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_digest);
criterion_main!(benches);
