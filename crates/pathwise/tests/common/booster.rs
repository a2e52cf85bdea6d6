//! What the booster gateway's namespace tests share: the binary, skipping where the test bed
//! cannot run, running code inside a namespace, summing
//! drops, and datagrams as a third gateway holding the test bed's key would send them.

use pathwise::booster::netns;
use pathwise_booster::boosters::{BoosterEnv, CryptoContext};
use pathwise_booster::pipeline::Sender;
use pathwise_booster::policy::{MetaPolicy, Policy, PolicySnapshot};
use pathwise_booster::stats::Counters;
use serde_json::Value;
use std::sync::Arc;

/// The `pathwise` binary cargo built for these tests (the gateways run it).
pub fn bin() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_BIN_EXE_pathwise"))
}

/// Whether the booster test bed can run here (root, `tc`, TUN and `tools`); says why not.
pub fn available(test: &str, tools: &[&str]) -> bool {
    match netns::unavailable(tools) {
        Some(why) => {
            println!("skipping {test}: {why}");
            false
        }
        None => true,
    }
}

/// Run `f` on a thread inside namespace `ns`.
pub fn in_netns<T: Send + 'static>(
    ns: String,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    std::thread::spawn(move || {
        let file = std::fs::File::open(format!("/var/run/netns/{ns}")).unwrap();
        nix::sched::setns(file, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
        f()
    })
}

/// Every drop of a gateway's `stats`, all reasons.
pub fn total_drops(stats: &Value) -> u64 {
    stats["drops"]
        .as_object()
        .unwrap()
        .values()
        .filter_map(Value::as_u64)
        .sum()
}

/// A sender with the test bed's key as sender id 3 (neither gateway's), on `lane` of `lanes`,
/// and its policy: encrypt everything to host A's network.
pub fn keyed_sender(lanes: u8, lane: u8) -> (Sender, PolicySnapshot) {
    let key = pathwise::booster::config::parse_key(netns::PSK).unwrap();
    let ctx = CryptoContext::new(&key, 3, 1).with_lanes(lanes).unwrap();
    let env = BoosterEnv {
        crypto: Some(Arc::new(ctx)),
    };
    let sender = Sender::new(env, 1400, Arc::new(Counters::default())).on_lane(lane);
    let snap = PolicySnapshot::build(
        1,
        vec![Policy {
            name: "p".into(),
            dst: "10.77.1.0/24".parse().unwrap(),
            src: None,
            chain: vec!["encrypt".parse().unwrap()],
        }],
        MetaPolicy::default(),
        true,
    )
    .unwrap();
    (sender, snap)
}

/// An 84-byte ICMP echo request from host B to host A (checksums left zero).
pub fn echo_b_to_a() -> Vec<u8> {
    let mut ip = vec![
        0x45, 0, 0, 84, 0, 0, 0x40, 0, 64, 1, 0, 0, 10, 77, 2, 2, 10, 77, 1, 2,
    ];
    ip.extend_from_slice(&[8, 0, 0, 0, 0, 1, 0, 1]);
    ip.resize(84, b'x');
    ip
}
