//! Heap held by a snapshot, measured with a counting global allocator (this bench binary only):
//! the seed network, a synthetic 1,000 routers × 1,000,000 prefixes × 3 exits, a full table
//! of 1,000,000 IPv4 + 200,000 IPv6 prefixes × 4 exits, and the 10,000-router network of the
//! size benchmark. Also prints build time and the peak heap
//! during the build (configuration included).
//!
//! `cargo bench -p pathwise-oracle --bench memory` (add `-- NAME` to run one case). Not a
//! criterion benchmark: each case runs once; repeat the command for medians.
#![allow(unsafe_code)]

use pathwise_oracle::generate::{SyntheticSpec, seed_network, synthetic};
use pathwise_oracle::model::{CacheScope, OracleConfig};
use pathwise_oracle::{TopologySnapshot, Update};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Counts live heap bytes and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grow(n: usize) {
    let now = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call forwards to the system allocator unchanged; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract, which we pass on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grow(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grow(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator with this layout.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller upholds `realloc`'s contract, which we pass on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            grow(new_size);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn mib(b: usize) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

fn case(name: &str, make: impl FnOnce() -> OracleConfig) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let cfg = make();
    let config_bytes = LIVE.load(Ordering::Relaxed) - base;
    let (source, mut probes) = probes(&cfg);
    let t = Instant::now();
    let snap = TopologySnapshot::build(&cfg).expect("builds");
    let build = t.elapsed();
    drop(cfg);
    let held = LIVE.load(Ordering::Relaxed).saturating_sub(base);
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(base);
    // A one-prefix update: what the new snapshot adds on top of the old (shared) one.
    let before = LIVE.load(Ordering::Relaxed);
    let t = Instant::now();
    let (next, _) = snap
        .apply(&[Update::RemovePrefix(
            snap.to_config_prefix_sample().expect("has prefixes"),
        )])
        .expect("applies");
    let update = t.elapsed();
    let update_bytes = LIVE.load(Ordering::Relaxed).saturating_sub(before);
    drop(next);
    // One query from the source network touching every shard: the sort keys of one path row
    // for the whole table (what queries from one source router build over time).
    let before = LIVE.load(Ordering::Relaxed);
    let t = Instant::now();
    let placed = source.map_or(0, |s| snap.rank(s, &mut probes));
    let fill = t.elapsed();
    let keys_bytes = LIVE.load(Ordering::Relaxed).saturating_sub(before);
    println!(
        "{name:<32} routers {:>6} prefixes {:>9} exits {:>9} rows {:>5} | snapshot {:>9.1} MiB \
         (path cache {:>7.1} MiB, prefix table {:>7.1} MiB, {:>5.1} B/exit) | config {:>7.1} MiB | build peak {:>8.1} MiB | \
         build {:>8.1} ms | prefix update {:>6.2} ms, +{:.2} MiB | sort keys of one row {:>6.1} MiB \
         ({:.1} B/prefix; {:.1} MiB as the snapshot counts it), {placed} of {} probes placed, built in {:.1} ms",
        snap.router_count(),
        snap.prefix_count(),
        snap.exit_count(),
        snap.path_rows(),
        mib(held),
        mib(snap.path_cache_bytes()),
        mib(snap.prefix_table_bytes()),
        held.saturating_sub(snap.path_cache_bytes()) as f64 / snap.exit_count() as f64,
        mib(config_bytes),
        mib(peak),
        build.as_secs_f64() * 1e3,
        update.as_secs_f64() * 1e3,
        mib(update_bytes),
        mib(keys_bytes),
        keys_bytes as f64 / snap.prefix_count() as f64,
        mib(snap.prefix_costs_bytes()),
        probes.len(),
        fill.as_secs_f64() * 1e3,
    );
    drop(snap);
}

/// A query source (inside the first source network) and one candidate per prefix-table shard
/// (first octet of IPv4 prefixes /8 and longer, first 16 bits of IPv6 ones /16 and longer).
fn probes(cfg: &OracleConfig) -> (Option<std::net::IpAddr>, Vec<std::net::IpAddr>) {
    use ipnet::IpNet;
    let source = cfg.source_networks.first().map(|n| match n.prefix {
        IpNet::V4(p) => std::net::IpAddr::V4((u32::from(p.network()) | 1).into()),
        IpNet::V6(p) => std::net::IpAddr::V6((u128::from(p.network()) | 1).into()),
    });
    let mut seen = std::collections::BTreeMap::new();
    let nets = cfg
        .source_networks
        .iter()
        .map(|n| n.prefix)
        .chain(cfg.external_networks.iter().map(|n| n.prefix));
    for p in nets {
        let shard = match p {
            IpNet::V4(n) if n.prefix_len() >= 8 => u32::from(n.network()) >> 24,
            IpNet::V4(_) => 256,
            IpNet::V6(n) if n.prefix_len() >= 16 => {
                0x1_0000 + (u128::from(n.network()) >> 112) as u32
            }
            IpNet::V6(_) => 257,
        };
        seen.entry(shard).or_insert_with(|| p.network());
    }
    (source, seen.into_values().collect())
}

/// One prefix of a snapshot, for the update measurement.
trait Sample {
    fn to_config_prefix_sample(&self) -> Option<ipnet::IpNet>;
}

impl Sample for TopologySnapshot {
    fn to_config_prefix_sample(&self) -> Option<ipnet::IpNet> {
        self.locate("1.2.3.4".parse().ok()?)
            .map(|l| l.prefix)
            .or_else(|| self.locate("130.149.1.1".parse().ok()?).map(|l| l.prefix))
            .or_else(|| self.locate("100.64.0.1".parse().ok()?).map(|l| l.prefix))
    }
}

fn main() {
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let run = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
    if run("seed-network") {
        case("seed-network", || seed_network(1));
    }
    if run("synthetic-1000x1M") {
        case("synthetic-1000x1Mx3", || {
            synthetic(&SyntheticSpec::new(1_000, 1_000_000, 3))
        });
    }
    if run("synthetic-1000x1Mv4") {
        // Issue #16 part 4: a full table, 1,000,000 IPv4 + 200,000 IPv6 prefixes × 4 exits.
        case("synthetic-1000x1Mv4+200kv6x4", || {
            let mut s = SyntheticSpec::new(1_000, 1_000_000, 4);
            s.prefixes_v6 = 200_000;
            synthetic(&s)
        });
    }
    if run("synthetic-10000") {
        case("synthetic-10000x67kx3-src1000", || {
            let mut s = SyntheticSpec::new(10_000, 67_000, 3);
            s.source_networks = 1_000;
            s.cache = CacheScope::SourceRouters;
            synthetic(&s)
        });
    }
}
