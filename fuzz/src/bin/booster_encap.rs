//! Booster encapsulation (`pathwise_booster::wire::Header::parse`) and the whole receive path
//! behind it (`pathwise_booster::pipeline::Receiver::deboost`: every debooster, FEC recovery,
//! control messages, admission of the peer's chains and inner packets): parsing never panics,
//! what parses re-emits to the same header bytes, and deboosting arbitrary datagrams never
//! panics, only drops (counted) or delivers IP packets.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathwise_booster::adaptive::AdaptiveConfig;
use pathwise_booster::admission::{DEFAULT_GRACE, PolicyEpochs};
use pathwise_booster::boosters::{BoosterEnv, CryptoContext};
use pathwise_booster::pipeline::{Receiver, ip_addresses};
use pathwise_booster::policy::{MetaPolicy, Policy, PolicySnapshot};
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
        Mutex::new(Receiver::new(
            env,
            &[vectors::PEER],
            Arc::new(Counters::default()),
        ))
    })
}

/// What the receiver admits: one policy per sample chain, each for its own network, so every
/// debooster stays reachable and admission itself is fuzzed (the seeds' packets come from
/// 10.1.0.1, covered by the first chain's policy; the others refuse them after deboosting).
fn policies() -> &'static PolicyEpochs {
    static P: OnceLock<PolicyEpochs> = OnceLock::new();
    P.get_or_init(|| {
        let policies = vectors::CHAINS
            .iter()
            .enumerate()
            .map(|(i, chain)| Policy {
                name: format!("p{i}"),
                dst: format!("10.{}.0.0/16", i + 1).parse().unwrap(),
                src: None,
                chain: chain.iter().map(|s| s.parse().unwrap()).collect(),
            })
            .collect();
        let snap = PolicySnapshot::build(1, policies, MetaPolicy::default(), true).unwrap();
        PolicyEpochs::new(Arc::new(snap), DEFAULT_GRACE, &AdaptiveConfig::default())
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
    rx.deboost(
        Instant::ZERO,
        vectors::PEER,
        policies(),
        p,
        &mut delivered,
        |_| {},
    );
    for p in delivered {
        assert!(ip_addresses(p.payload()).is_some());
        rx.recycle(p);
    }
});
