//! `pathwise bench booster cpu`: what each booster costs per packet and per byte (issue #19),
//! in memory — a sending and a receiving pipeline back to back
//! ([`pathwise_booster::loopback`]), no device, socket or namespace, so no root.
//!
//! For each chain and kind of payload (text, random) it times boost + deboost — the work of
//! both gateways for one packet — at IP packet sizes from 64 to 1400 bytes, as this thread's
//! CPU time (not wall time: on a shared machine wall time counts waiting for a core) over
//! batches of at least [`BATCH_NS`], and fits `ns = fixed + per_byte · size` by least squares
//! per run. Reported: ns per packet at each size, the fit's fixed ns per packet and ns per
//! byte, and the Gbit/s one core would carry at 1400 bytes. Packets differ from one another
//! (64 of them, cycled), so stream compression does not see one packet repeated.

use super::bench::{Experiment, Options, Point};
use crate::qos::bench::meter::{clock_overhead_ns, thread_cpu_ns};
use pathwise_booster::loopback::{self, Loopback};
use std::hint::black_box;

/// Chains measured: none (the framework and encapsulation alone), each booster alone, and the
/// usual stack.
pub const CHAINS: [&str; 10] = [
    "none",
    "null",
    "lz4",
    "zstd",
    "zstd-stream",
    "dumb",
    "encrypt",
    "fec:10:3",
    "fec:10:3:4",
    "lz4,encrypt",
];

/// IP packet sizes, bytes.
pub const SIZES: [usize; 5] = [64, 256, 576, 1024, 1400];

/// A timed batch lasts at least this long (CPU time), so the clock's own cost is small.
const BATCH_NS: u128 = 20_000_000;

/// Distinct packets per size and payload kind.
const DISTINCT: u32 = 64;

/// Least-squares line through `(x, y)`: `(intercept, slope)`.
pub fn fit(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let sxx: f64 = points.iter().map(|(x, _)| (x - mx) * (x - mx)).sum();
    let sxy: f64 = points.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (my - slope * mx, slope)
}

/// CPU ns per boost + deboost of `packets`, cycled, over one batch.
fn time_batch(l: &mut Loopback, packets: &[Vec<u8>], overhead: f64) -> f64 {
    let mut count = 0u64;
    let start = thread_cpu_ns();
    let mut now = start;
    while now - start < BATCH_NS {
        for p in packets {
            black_box(l.round_trip(p));
        }
        count += packets.len() as u64;
        now = thread_cpu_ns();
    }
    ((now - start) as f64 - overhead) / count as f64
}

/// The `cpu` experiment.
pub fn cpu(opt: &Options) -> anyhow::Result<Experiment> {
    let overhead = clock_overhead_ns();
    let mut points = Vec::new();
    for chain in CHAINS {
        let specs = loopback::chain(chain);
        for text in [true, false] {
            let setup = format!("{chain} ({})", if text { "text" } else { "random" });
            // ns per packet by run, then by size.
            let mut per_size = vec![Vec::new(); SIZES.len()];
            let mut l = Loopback::new(&specs)?;
            let batches: Vec<Vec<Vec<u8>>> = SIZES
                .iter()
                .map(|&len| {
                    (0..DISTINCT)
                        .map(|n| loopback::sample(len, n, text))
                        .collect()
                })
                .collect();
            // Warm up: pools filled, FEC groups and compression contexts built.
            for b in &batches {
                for p in b {
                    black_box(l.round_trip(p));
                }
            }
            for _ in 0..opt.runs {
                for (s, b) in batches.iter().enumerate() {
                    per_size[s].push(time_batch(&mut l, b, overhead));
                }
            }
            let drops = l.receiver_drops();
            anyhow::ensure!(
                drops == 0,
                "{setup}: the receiver dropped {drops} datagrams"
            );
            let (mut fixed, mut per_byte, mut gbit) = (Vec::new(), Vec::new(), Vec::new());
            for run in 0..opt.runs {
                let line: Vec<(f64, f64)> = SIZES
                    .iter()
                    .zip(&per_size)
                    .map(|(&size, ns)| (size as f64, ns[run]))
                    .collect();
                let (a, b) = fit(&line);
                fixed.push(a);
                per_byte.push(b);
                let at_mtu = per_size[SIZES.len() - 1][run];
                gbit.push(SIZES[SIZES.len() - 1] as f64 * 8.0 / at_mtu);
            }
            for (size, ns) in SIZES.iter().zip(&per_size) {
                points.push(Point::of(&setup, format!("ns/pkt at {size} B"), ns));
            }
            points.push(Point::of(&setup, "fit: fixed ns/pkt", &fixed));
            points.push(Point::of(&setup, "fit: ns/byte", &per_byte));
            points.push(Point::of(&setup, "Gbit/s per core at 1400 B", &gbit));
        }
    }
    Ok(Experiment {
        name: "CPU per packet and per byte of each booster: boost + deboost in memory (issue #19)"
            .into(),
        unit: "as named".into(),
        notes: vec![format!(
            "this thread's CPU time (CLOCK_THREAD_CPUTIME_ID, {overhead:.0} ns per reading pair \
             taken off) over batches of ≥ {} ms of {DISTINCT} distinct packets cycled; boost + \
             deboost is both gateways' work for one packet, encapsulation and the copy into \
             the receiver's buffer included, no device or socket; fit: least squares of ns per \
             packet against IP packet size ({}) per run; Gbit/s per core: 1400-byte packets \
             through both halves on one core",
            BATCH_NS / 1_000_000,
            SIZES.map(|s| s.to_string()).join(", "),
        )],
        points,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fit_recovers_a_line_and_its_slope() {
        let line: Vec<(f64, f64)> = SIZES
            .iter()
            .map(|&s| (s as f64, 150.0 + 0.25 * s as f64))
            .collect();
        let (a, b) = fit(&line);
        assert!(
            (a - 150.0).abs() < 1e-9 && (b - 0.25).abs() < 1e-12,
            "{a} {b}"
        );
        // Noise above and below the line cancels.
        let noisy: Vec<(f64, f64)> = line
            .iter()
            .enumerate()
            .map(|(i, (x, y))| (*x, y + if i % 2 == 0 { 3.0 } else { -3.0 }))
            .collect();
        let (_, b) = fit(&noisy);
        assert!((b - 0.25).abs() < 0.01, "{b}");
    }

    /// One run end to end: every chain, both payloads, every column, finite numbers, and a
    /// packet costs something.
    #[test]
    fn one_run_measures_every_chain() {
        let opt = Options {
            runs: 1,
            seconds: 1,
            pings: 1,
            binary: "pathwise".into(),
        };
        let e = cpu(&opt).unwrap();
        assert_eq!(e.points.len(), CHAINS.len() * 2 * (SIZES.len() + 3));
        let at = |setup: &str, x: &str| {
            e.points
                .iter()
                .find(|p| p.setup == setup && p.x == x)
                .unwrap()
                .median
        };
        for p in &e.points {
            assert!(p.median.is_finite(), "{p:?}");
        }
        assert!(at("null (random)", "ns/pkt at 64 B") > 0.0);
        assert!(at("fec:10:3 (random)", "Gbit/s per core at 1400 B") > 0.0);
    }
}
