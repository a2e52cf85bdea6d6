//! Cost expressions (`pathwise_oracle::rank`): compiling arbitrary text never panics, and a
//! compiled expression evaluates without panicking on ordinary and extreme path metrics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathwise_oracle::{PathMetrics, Ranking};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(ranking) = Ranking::parse(text) else {
        return;
    };
    let ordinary = PathMetrics {
        bandwidth: 100.0,
        latency: 12.5,
        hops: 4,
        weight: 9,
        as_number: 680,
        as_distance: 2,
        congestion: 0.25,
        external: true,
    };
    let extreme = PathMetrics {
        bandwidth: f64::INFINITY,
        latency: 0.0,
        hops: u32::MAX,
        weight: u64::MAX,
        as_number: u32::MAX,
        as_distance: u16::MAX,
        congestion: 1.0,
        external: false,
    };
    for m in [ordinary, extreme] {
        let _ = ranking.cost(&m);
    }
    assert_eq!(Ranking::parse(ranking.text()).ok(), Some(ranking));
});
