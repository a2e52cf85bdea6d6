//! Booster encapsulation (`pathwise_booster::wire::Header::parse`) and the whole receive path
//! behind it (`pathwise_booster::pipeline::Receiver::deboost`: every debooster, FEC recovery,
//! control messages): parsing never panics, what parses re-emits to the same header bytes, and
//! deboosting arbitrary datagrams never panics, only drops (counted) or delivers IP packets.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathwise_booster::boosters::{BoosterEnv, CryptoContext};
use pathwise_booster::pipeline::{Receiver, ip_addresses};
use pathwise_booster::stats::Counters;
use pathwise_booster::vectors;
use pathwise_booster::wire::Header;
use pathwise_core::time::Instant;
use pathwise_core::wire::Writer;
use std::sync::{Arc, Mutex, OnceLock};

fn receiver() -> &'static Mutex<Receiver> {
    static R: OnceLock<Mutex<Receiver>> = OnceLock::new();
    R.get_or_init(|| {
        // The key the seeds were encrypted with (fuzz/seeds/booster_encap, sender 1).
        let env = BoosterEnv {
            crypto: Some(Arc::new(CryptoContext::new(&vectors::KEY, 2, 1))),
        };
        Mutex::new(Receiver::new(env, Arc::new(Counters::default())))
    })
}

fuzz_target!(|data: &[u8]| {
    if let Ok((h, rest)) = Header::parse(data) {
        let mut out = Vec::new();
        h.emit(&mut Writer::new(&mut out));
        assert_eq!(out.len(), h.buffer_len());
        assert_eq!(&data[..out.len()], &out[..]);
        assert_eq!(out.len() + rest.len(), data.len());
    }
    // The receiver keeps state across inputs (FEC groups, replay windows), like a live gateway.
    let mut rx = receiver().lock().unwrap();
    let mut p = rx.pool().get();
    if p.set_payload(data).is_none() {
        rx.recycle(p);
        return;
    }
    let mut delivered = Vec::new();
    rx.deboost(Instant::ZERO, p, &mut delivered, |_| {});
    for p in delivered {
        assert!(ip_addresses(p.payload()).is_some());
        rx.recycle(p);
    }
});
