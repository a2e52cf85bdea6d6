//! Protocol boosters on real networks: two hosts behind two gateways in network namespaces,
//! joined by a link shaped with tc to 10 Mbit/s (see `pathwise::booster::netns` for the
//! topology). Needs root, `ip`, `tc`, `ping`, `iperf3` and /dev/net/tun; each test prints why
//! and passes when something is missing. Every namespace is deleted when its test ends.

mod common;

use common::booster::{available, bin};
use pathwise::booster::netns::{self, GA, GB, HA, LinkShape, Payload, Testbed};
use pathwise_booster::boosters::{BoosterEnv, CryptoContext};
use pathwise_booster::pipeline::Sender;
use pathwise_booster::policy::{MetaPolicy, Policy, PolicySnapshot};
use pathwise_booster::stats::Counters;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

fn shaped() -> LinkShape {
    LinkShape {
        rate_mbit: Some(10),
        ..LinkShape::default()
    }
}

fn drops(tb: &Testbed, g: usize) -> Value {
    tb.manage(g, "stats", Value::Null).unwrap()["drops"].clone()
}

#[test]
fn ping_and_iperf3_through_every_booster_and_chains() {
    if !available(
        "ping_and_iperf3_through_every_booster_and_chains",
        &["ping", "iperf3"],
    ) {
        return;
    }
    let mut tb = Testbed::new(shaped()).unwrap();
    let chains: &[&[&str]] = &[
        &[],
        &["null"],
        &["lz4"],
        &["zstd"],
        &["dumb"],
        &["encrypt"],
        &["fec:4:1"],
        &["lz4", "encrypt"],
        &["zstd:3", "encrypt", "fec:4:2"],
    ];
    for chain in chains {
        tb.start_gateways(bin(), chain, false, "").unwrap();
        // One ping first, not counted: on a loaded machine the first packet through freshly
        // started gateways (neighbour resolution on the underlay) may come after ping gives up.
        let _ = netns::ping(&tb, 100, 1, "0.2");
        let rtts = netns::ping(&tb, 1000, 3, "0.2").unwrap();
        assert_eq!(rtts.len(), 3, "chain {chain:?}: ping lost packets");
        let payload = if chain.first() == Some(&"lz4") {
            Payload::Text
        } else {
            Payload::Random
        };
        let mbit = netns::iperf3(&mut tb, 2, payload).unwrap();
        assert!(mbit > 1.0, "chain {chain:?}: {mbit} Mbit/s");
        let stats = tb.manage(GA, "stats", Value::Null).unwrap();
        for c in chain.iter() {
            let name = c.split(':').next().unwrap();
            let b = &stats["boosters"][name];
            assert!(
                b["boosted"].as_u64().unwrap() + b["passed"].as_u64().unwrap() > 0,
                "{name}: {b}"
            );
        }
        assert_eq!(
            stats["drops"]
                .as_object()
                .unwrap()
                .values()
                .filter_map(Value::as_u64)
                .sum::<u64>(),
            0,
            "chain {chain:?}: {}",
            stats["drops"]
        );
        println!("chain {chain:?}: ping {rtts:?} ms, iperf3 {mbit:.2} Mbit/s");
    }
}

#[test]
fn inserting_and_removing_boosters_during_a_transfer_does_not_break_it() {
    if !available(
        "inserting_and_removing_boosters_during_a_transfer",
        &["iperf3"],
    ) {
        return;
    }
    let mut tb = Testbed::new(shaped()).unwrap();
    tb.start_gateways(bin(), &[], false, "chain_grace_ms = 300")
        .unwrap();
    tb.spawn(
        "iperf3-server",
        netns::HB,
        &["iperf3", "-s", "-1", "-B", netns::HOST_B],
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let out = tb.dir.join("iperf3.json");
    let out_s = out.to_string_lossy().into_owned();
    tb.spawn(
        "iperf3-client",
        HA,
        &[
            "iperf3",
            "-c",
            netns::HOST_B,
            "-t",
            "6",
            "-J",
            "--logfile",
            &out_s,
        ],
    )
    .unwrap();
    // Each change goes to both gateways, one right after the other (well within the grace
    // period of 300 ms): a receiver accepts only the chains its own policy allows.
    let steps: &[(&str, &str)] = &[
        ("insert", "lz4"),
        ("insert", "encrypt"),
        ("insert", "fec:4:1"),
        ("remove", "lz4"),
        ("insert", "zstd"),
        ("remove", "encrypt"),
        ("remove", "fec"),
        ("insert", "null"),
    ];
    let mut swaps = Vec::new();
    for (verb, booster) in steps {
        std::thread::sleep(Duration::from_millis(400));
        for g in [GA, GB] {
            let r = tb.manage(g, verb, json!({"booster": booster})).unwrap();
            swaps.push(r["swap_ns"].as_u64().unwrap());
        }
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let v: Value = loop {
        if let Ok(t) = std::fs::read_to_string(&out)
            && let Ok(v) = serde_json::from_str::<Value>(&t)
        {
            break v;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "iperf3 did not finish"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(v.get("error").is_none(), "iperf3: {}", v["error"]);
    let mbit = v["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap()
        / 1e6;
    assert!(mbit > 2.0, "{mbit} Mbit/s");
    // Nothing is lost to a chain change, except by design when encryption is inserted: from
    // then on a gateway refuses the plaintext its peer still sends for one grace period.
    let mut unencrypted = 0;
    for g in [GA, GB] {
        let d = drops(&tb, g);
        unencrypted += d["unencrypted"].as_u64().unwrap();
        assert_eq!(
            d.as_object()
                .unwrap()
                .iter()
                .filter(|(k, _)| *k != "unencrypted")
                .filter_map(|(_, v)| v.as_u64())
                .sum::<u64>(),
            0,
            "{d}"
        );
    }
    for g in [GA, GB] {
        let show = tb.manage(g, "show", Value::Null).unwrap();
        assert_eq!(show["policies"][0]["chain"], json!(["zstd", "null"]));
    }
    println!("plaintext refused while encryption was inserted: {unencrypted}");
    println!(
        "transfer {mbit:.2} Mbit/s across {} swaps, swap_ns {swaps:?}",
        steps.len()
    );
}

/// Datagrams injected on the link go 5 ms apart.
const INJECT_GAP: Duration = Duration::from_millis(5);

/// Send `datagrams` to gateway A's UDP port from `from`, an address of gateway B's namespace
/// that is not the configured peer.
fn send_from(tb: &Testbed, from: &'static str, datagrams: Vec<Vec<u8>>) {
    tb.in_namespace(GB, move || {
        let s = std::net::UdpSocket::bind(from).unwrap();
        for d in datagrams {
            s.send_to(&d, "192.168.77.1:7000").unwrap();
            std::thread::sleep(Duration::from_millis(5));
        }
    })
    .unwrap();
}

#[test]
fn garbage_truncated_forged_and_replayed_datagrams_are_dropped_and_counted() {
    if !available("garbage_truncated_forged_and_replayed_datagrams", &["ping"]) {
        return;
    }
    let mut tb = Testbed::new(LinkShape::default()).unwrap();
    tb.start_gateways(bin(), &["lz4", "encrypt"], false, "")
        .unwrap();
    assert_eq!(netns::ping(&tb, 200, 2, "0.2").unwrap().len(), 2);
    // Genuine datagrams from a third sender (id 3) holding the key: what an attacker who
    // recorded traffic could replay or tamper with.
    let key = pathwise::booster::config::parse_key(netns::PSK).unwrap();
    let env = BoosterEnv {
        crypto: Some(Arc::new(CryptoContext::new(&key, 3, 1))),
    };
    let mut sender = Sender::new(env, 1400, Arc::new(Counters::default()));
    let snap = PolicySnapshot::build(
        1,
        vec![Policy {
            name: "p".into(),
            dst: "10.77.1.0/24".parse().unwrap(),
            src: None,
            chain: vec!["lz4".parse().unwrap(), "encrypt".parse().unwrap()],
        }],
        MetaPolicy::default(),
        true,
    )
    .unwrap();
    // An ICMP echo request host B → host A, valid enough for the kernel to take.
    let mut ip = vec![
        0x45, 0, 0, 84, 0, 0, 0x40, 0, 64, 1, 0, 0, 10, 77, 2, 2, 10, 77, 1, 2,
    ];
    ip.extend_from_slice(&[8, 0, 0, 0, 0, 1, 0, 1]);
    ip.resize(84, b'x');
    let mut out = Vec::new();
    for _ in 0..2 {
        let mut p = sender.pool().get();
        p.set_payload(&ip).unwrap();
        sender.boost(pathwise_core::time::Instant::ZERO, &snap, p, &mut out);
    }
    let genuine = out[0].payload().to_vec();
    // A forgery of a packet not seen yet (a seen counter is refused as a replay before any
    // cryptography).
    let mut forged = out[1].payload().to_vec();
    let n = forged.len();
    forged[n - 3] ^= 0x40;
    let before = tb.manage(GA, "stats", Value::Null).unwrap();
    tb.inject(
        vec![
            genuine.clone(),
            genuine.clone(),        // replayed
            forged,                 // forged
            genuine[..6].to_vec(),  // truncated header
            genuine[..20].to_vec(), // truncated ciphertext
            b"\x7fgarbage, not a booster datagram".to_vec(),
            vec![0x10, 1, 0, 0, 0, 0, 0, 1, 0x63, 1, 2, 3], // unknown booster
        ],
        INJECT_GAP,
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let d = drops(&tb, GA);
    for (reason, n) in [
        ("replay", 1),
        ("auth_failed", 1),
        ("header_truncated", 1),
        ("crypto_truncated", 1),
        ("header_version", 1),
        ("unknown_booster", 1),
    ] {
        assert_eq!(d[reason].as_u64(), Some(n), "{reason}: {d}");
    }
    let after = tb.manage(GA, "stats", Value::Null).unwrap();
    // Less the peer's loss reports: one may arrive in the meantime (every 500 ms).
    let delta = |k: &str| after[k].as_u64().unwrap() - before[k].as_u64().unwrap();
    assert_eq!(delta("udp_in") - delta("control_in"), 7);
    assert_eq!(
        after["tun_out"].as_u64().unwrap() - before["tun_out"].as_u64().unwrap(),
        1
    );
    // The tunnel still works.
    assert_eq!(netns::ping(&tb, 200, 2, "0.2").unwrap().len(), 2);
    let stats = std::process::Command::new(bin())
        .args(["booster", "stats", "--socket"])
        .arg(tb.socket(GA))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&stats.stdout);
    assert!(
        text.contains("replay") && text.contains("auth_failed"),
        "{text}"
    );
}

#[test]
fn a_chain_violating_the_meta_policy_is_refused_with_a_clear_error() {
    if !available("a_chain_violating_the_meta_policy_is_refused", &[]) {
        return;
    }
    let mut tb = Testbed::new(LinkShape::default()).unwrap();
    // At start-up: the configuration is refused.
    let cfg = tb.gateway_config(GA, &["encrypt", "lz4"], "").unwrap();
    let out = std::process::Command::new(bin())
        .args(["booster", "gateway", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("violates meta-policy rule \"compression before encryption\""),
        "{err}"
    );
    // At run time: the insertion is refused and the chain is unchanged.
    tb.start_gateways(bin(), &["encrypt"], false, "").unwrap();
    let out = std::process::Command::new(bin())
        .args(["booster", "insert", "lz4", "--position", "1", "--socket"])
        .arg(tb.socket(GA))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("chain [encrypt, lz4] of policy \"default\" violates meta-policy rule \"compression before encryption\""),
        "{err}"
    );
    let show = tb.manage(GA, "show", Value::Null).unwrap();
    assert_eq!(show["policies"][0]["chain"], json!(["encrypt"]));
    // Without a position the meta-policy places it.
    let r = tb.manage(GA, "insert", json!({"booster": "lz4"})).unwrap();
    assert_eq!(r["chain"], "lz4, encrypt");
    // And the management client says clearly when no gateway runs.
    tb.stop_gateways();
    let out = std::process::Command::new(bin())
        .args(["booster", "show", "--socket"])
        .arg(tb.socket(GA))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no booster gateway is running"), "{err}");
}

#[test]
fn fec_recovers_packets_lost_on_the_link() {
    // Loss comes from sch_netem where the kernel has it, else from nftables.
    if !available("fec_recovers_packets_lost_on_the_link", &["ping", "nft"]) {
        return;
    }
    let mut tb = Testbed::new(LinkShape {
        loss_pct: Some(5.0),
        ..LinkShape::default()
    })
    .unwrap();
    tb.start_gateways(bin(), &["fec:4:2"], false, "").unwrap();
    let rtts = netns::ping(&tb, 500, 200, "0.01").unwrap();
    let recovered = tb.manage(GB, "stats", Value::Null).unwrap()["boosters"]["fec"]["recovered"]
        .as_u64()
        .unwrap();
    println!(
        "5% loss each way, fec:4:2: {} of 200 pings answered, {recovered} packets rebuilt at B",
        rtts.len()
    );
    assert!(recovered > 0);
    assert!(rtts.len() >= 185, "only {} of 200 answered", rtts.len());
}

#[test]
fn interleaved_fec_rebuilds_what_the_link_loses_during_a_transfer() {
    if !available(
        "interleaved_fec_rebuilds_what_the_link_loses_during_a_transfer",
        &["ping", "iperf3", "nft"],
    ) {
        return;
    }
    let mut tb = Testbed::new(LinkShape {
        loss_pct: Some(5.0),
        ..LinkShape::default()
    })
    .unwrap();
    // Four groups of 10 + 3 open at once: the receiving gateway learns that only from the
    // group ids, and must keep them all.
    tb.start_gateways(bin(), &["fec:10:3:4"], false, "")
        .unwrap();
    let show = tb.manage(GA, "show", Value::Null).unwrap();
    assert_eq!(show["policies"][0]["chain"], json!(["fec:10:3:4"]));
    let _ = netns::ping(&tb, 100, 1, "0.2");
    let mbit = netns::iperf3(&mut tb, 2, Payload::Random).unwrap();
    let stats = tb.manage(GB, "stats", Value::Null).unwrap();
    let count = |path: &[&str]| {
        path.iter()
            .fold(&stats, |v, k| &v[k])
            .as_u64()
            .unwrap_or_else(|| panic!("no {path:?} in {stats}"))
    };
    let (deboosted, rebuilt) = (
        count(&["boosters", "fec", "deboosted"]),
        count(&["boosters", "fec", "recovered"]),
    );
    println!(
        "5% loss each way, fec:10:3:4: {mbit:.0} Mbit/s, {rebuilt} of {deboosted} packets rebuilt at B"
    );
    assert!(mbit > 1.0, "{mbit} Mbit/s");
    // About 5 % of the data is lost on the link and nearly all of it rebuilt.
    assert!(
        rebuilt * 100 > deboosted * 2,
        "{rebuilt} rebuilt of {deboosted}"
    );
    assert_eq!(count(&["drops", "fec_malformed"]), 0);
}

/// The test bed's lossy link loses datagrams one by one on arrival, as a wire does, and the
/// sender never learns of it: runs of datagrams sent as UDP GSO messages arrive with single
/// datagrams missing, and no send fails. (Issue #19: the loss was applied in the sender's
/// postrouting hook, where a refused `sendmmsg` message was sent again and a GSO run was lost
/// whole, so the adaptive policy saw a fraction of the loss with the gateway's offloads on.)
#[test]
fn the_lossy_link_drops_datagrams_one_by_one_unseen_by_the_sender() {
    use pathwise::booster::udp::{GsoSender, probe_gso};
    use pathwise_booster::packet::PacketPool;
    use std::net::UdpSocket;
    if !available("the_lossy_link_drops_datagrams_one_by_one", &["nft"]) {
        return;
    }
    const RUNS: usize = 200;
    const RUN: usize = 10;
    let tb = Testbed::new(LinkShape {
        loss_pct: Some(30.0),
        ..LinkShape::default()
    })
    .unwrap();
    let rx = tb
        .in_namespace(GB, || UdpSocket::bind("192.168.77.2:7100"))
        .unwrap()
        .unwrap();
    let tx = tb
        .in_namespace(GA, || UdpSocket::bind("192.168.77.1:0"))
        .unwrap()
        .unwrap();
    rx.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let receiver = std::thread::spawn(move || {
        let mut seen = vec![false; RUNS * RUN];
        let mut buf = [0u8; 2048];
        while let Ok(n) = rx.recv(&mut buf) {
            if n >= 4 {
                let i = u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize;
                if let Some(s) = seen.get_mut(i) {
                    *s = true;
                }
            }
        }
        seen
    });
    let gso = probe_gso(&tx, true).on;
    let mut sender = GsoSender::new("192.168.77.2:7100".parse().unwrap(), gso);
    let mut pool = PacketPool::default();
    let mut failed = 0;
    for r in 0..RUNS {
        let run: Vec<_> = (0..RUN)
            .map(|k| {
                let mut d = vec![0x5a; 1000];
                d[..4].copy_from_slice(&((r * RUN + k) as u32).to_be_bytes());
                let mut p = pool.get();
                p.set_payload(&d).unwrap();
                p
            })
            .collect();
        failed += sender.send(&tx, &run).failed;
        run.into_iter().for_each(|p| pool.put(p));
        std::thread::sleep(Duration::from_millis(1));
    }
    let seen = receiver.join().unwrap();
    let got = seen.iter().filter(|&&s| s).count();
    let partial = seen
        .chunks(RUN)
        .filter(|run| run.iter().any(|&s| s) && !run.iter().all(|&s| s))
        .count();
    println!(
        "lossy link: {got} of {} datagrams arrived, {partial} of {RUNS} runs in part, \
         {failed} sends failed (GSO {gso})",
        RUNS * RUN
    );
    assert_eq!(failed, 0, "the sender saw the link's loss");
    // 30 % of 2,000: far from both ends whatever the draw.
    assert!((1000..1800).contains(&got), "{got} arrived");
    // Lost whole, runs would arrive entirely or not at all.
    assert!(partial > RUNS / 2, "{partial} runs arrived in part");
}

#[test]
fn the_adaptive_policy_inserts_compression_for_text_and_fec_under_loss() {
    if !available(
        "the_adaptive_policy_inserts_compression_and_fec",
        &["iperf3", "nft"],
    ) {
        return;
    }
    let mut tb = Testbed::new(LinkShape {
        rate_mbit: Some(10),
        loss_pct: Some(3.0),
        ..LinkShape::default()
    })
    .unwrap();
    let adaptive = "[adaptive]\nenabled = true\ninterval_ms = 300\nfec = \"fec:4:2\"\n";
    tb.start_gateways(bin(), &["encrypt"], false, adaptive)
        .unwrap();
    let mbit = netns::iperf3(&mut tb, 5, Payload::Text).unwrap();
    // The adaptive policy evaluates every 300 ms; loss reports come every 500 ms.
    let want = json!(["lz4", "encrypt", "fec:4:2"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let show = loop {
        let show = tb.manage(GA, "show", Value::Null).unwrap();
        if show["policies"][0]["chain"] == want || std::time::Instant::now() > deadline {
            break show;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    println!(
        "adaptive: {mbit:.2} Mbit/s, chain {}, state {}, drops at A {}, at B {}",
        show["policies"][0]["chain"],
        show["adaptive"]["state"],
        drops(&tb, GA),
        drops(&tb, GB)
    );
    assert_eq!(show["policies"][0]["chain"], want);
    assert!(show["adaptive"]["state"]["ratio"].as_f64().unwrap() < 0.8);
    assert!(show["adaptive"]["state"]["loss"].as_f64().unwrap() > 0.01);
}

#[test]
fn congestion_aware_compression_switches_on_under_a_saturating_transfer_and_off_after() {
    if !available(
        "congestion_aware_compression_switches_on_and_off",
        &["iperf3", "ping"],
    ) {
        return;
    }
    let mut tb = Testbed::new(shaped()).unwrap();
    // FEC never: only compression is under test.
    let adaptive = "[adaptive]\nenabled = true\ninterval_ms = 300\nfec_on = 2.0\n\
                    compress_when = \"congested\"\ncongestion_hold_ms = 1000\n";
    tb.start_gateways(bin(), &["encrypt"], false, adaptive)
        .unwrap();
    let chain = |tb: &Testbed| tb.manage(GA, "show", Value::Null).unwrap();
    // Light traffic first: the link is not congested, nothing is inserted.
    netns::ping(&tb, 1000, 10, "0.2").unwrap();
    let show = chain(&tb);
    assert_eq!(show["policies"][0]["chain"], json!(["encrypt"]), "{show}");
    assert_eq!(
        show["adaptive"]["state"]["congested"],
        json!(false),
        "{show}"
    );
    assert!(
        show["adaptive"]["state"]["probes"][1].as_u64().unwrap() > 0,
        "{show}"
    );
    // A saturating text transfer: the queue builds, compression goes in.
    let mbit = netns::iperf3(&mut tb, 6, Payload::Text).unwrap();
    let during = chain(&tb);
    // After it: the queue drains, compression comes out (bounded wait).
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let after = loop {
        let show = chain(&tb);
        if show["policies"][0]["chain"] == json!(["encrypt"])
            || std::time::Instant::now() > deadline
        {
            break show;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    println!(
        "congestion-aware: {mbit:.2} Mbit/s, state during {}, after {}",
        during["adaptive"]["state"], after["adaptive"]["state"]
    );
    let state = &after["adaptive"]["state"];
    assert!(state["compress_inserts"].as_u64().unwrap() >= 1, "{after}");
    assert!(state["congestion_onsets"].as_u64().unwrap() >= 1, "{after}");
    assert_eq!(after["policies"][0]["chain"], json!(["encrypt"]), "{after}");
    assert!(state["compress_removals"].as_u64().unwrap() >= 1, "{after}");
    assert_eq!(state["congested"], json!(false), "{after}");
}

/// The Internet checksum (RFC 1071).
fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An ICMP echo request from `src` to `dst` with correct checksums, which the host at `dst`
/// answers if it is delivered. The payload is zeros, so LZ4 really compresses it.
fn icmp_echo(src: [u8; 4], dst: [u8; 4], seq: u16) -> Vec<u8> {
    let mut p = vec![0x45, 0, 0, 84, 0, 0, 0x40, 0, 64, 1, 0, 0];
    p.extend_from_slice(&src);
    p.extend_from_slice(&dst);
    let c = checksum(&p);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    let mut icmp = vec![8, 0, 0, 0, 0x70, 0x77];
    icmp.extend_from_slice(&seq.to_be_bytes());
    icmp.resize(64, 0);
    let c = checksum(&icmp);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    p.extend_from_slice(&icmp);
    p
}

/// Encapsulate `packet` through `chain` as a gateway with `env` would (whoever holds the
/// environment's key, if any).
fn boosted(env: &BoosterEnv, chain: &[&str], packet: &[u8]) -> Vec<u8> {
    let mut sender = Sender::new(env.clone(), 1400, Arc::new(Counters::default()));
    let snap = PolicySnapshot::build(
        1,
        vec![Policy {
            name: "p".into(),
            dst: "0.0.0.0/0".parse().unwrap(),
            src: None,
            chain: chain.iter().map(|c| c.parse().unwrap()).collect(),
        }],
        MetaPolicy::default(),
        true,
    )
    .unwrap();
    let mut p = sender.pool().get();
    p.set_payload(packet).unwrap();
    let mut out = Vec::new();
    sender.boost(pathwise_core::time::Instant::ZERO, &snap, p, &mut out);
    assert_eq!(out.len(), 1);
    out[0].payload().to_vec()
}

/// Packets the kernel took from gateway `g`'s TUN device (what the gateway wrote to it).
fn tun_rx_packets(tb: &Testbed, g: usize) -> u64 {
    let out = tb
        .exec_ok(g, &["ip", "-j", "-s", "link", "show", "dev", netns::TUN])
        .unwrap();
    let v: Value = serde_json::from_str(&out).unwrap();
    v[0]["stats64"]["rx"]["packets"].as_u64().unwrap()
}

fn counter(v: &Value, path: &[&str]) -> u64 {
    path.iter()
        .fold(v, |v, k| &v[*k])
        .as_u64()
        .unwrap_or_else(|| panic!("{path:?} in {v}"))
}

#[test]
fn unprotected_datagrams_and_strangers_never_reach_the_tun_and_live_changes_lose_nothing() {
    if !available(
        "unprotected_datagrams_and_strangers_never_reach_the_tun",
        &["ping"],
    ) {
        return;
    }
    let mut tb = Testbed::new(LinkShape::default()).unwrap();
    tb.start_gateways(bin(), &["lz4", "encrypt"], false, "chain_grace_ms = 500")
        .unwrap();
    // The link works, and a third address on gateway B's side of the link.
    let _ = netns::ping(&tb, 200, 1, "0.2");
    assert_eq!(netns::ping(&tb, 200, 2, "0.2").unwrap().len(), 2);
    tb.exec_ok(GB, &["ip", "addr", "add", "192.168.77.3/24", "dev", "gl1"])
        .unwrap();
    // An ICMP echo request host B → host A, as gateway B would deliver it to gateway A.
    let echo = |seq| icmp_echo([10, 77, 2, 2], [10, 77, 1, 2], seq);
    let plain = BoosterEnv { crypto: None };
    let key = pathwise::booster::config::parse_key(netns::PSK).unwrap();
    // A key holder (sender id 3, so its counters do not collide with gateway B's).
    let keyed = BoosterEnv {
        crypto: Some(Arc::new(CryptoContext::new(&key, 3, 1))),
    };
    let unprotected: Vec<Vec<u8>> = [&[][..], &["null"], &["dumb"], &["lz4"]]
        .iter()
        .zip(1..)
        .map(|(chain, seq)| boosted(&plain, chain, &echo(seq)))
        .collect();
    // lz4 really compressed (no "passed" mark): the header is 9 bytes, the packet shrank.
    assert_eq!(unprotected[3][8], 2);
    assert!(unprotected[3].len() < 84);
    let mut loss_report = Vec::new();
    pathwise_booster::pipeline::encode_control(
        &[pathwise_booster::control::Control::LossReport {
            received: 0,
            expected: 1000,
        }],
        &mut loss_report,
    );

    let before = tb.manage(GA, "stats", Value::Null).unwrap();
    let tun_before = tun_rx_packets(&tb, GA);
    // From a third address: everything refused, even a datagram the key holder made.
    let mut strangers = unprotected.clone();
    strangers.push(boosted(&keyed, &["lz4", "encrypt"], &echo(10)));
    strangers.push(loss_report);
    send_from(&tb, "192.168.77.3:7000", strangers);
    // With gateway B's own address and port: the plaintext chains, an encrypted chain that is
    // not the policy's, and an encrypted packet from a network no policy covers.
    let mut forged = unprotected.clone();
    forged.push(boosted(&keyed, &["encrypt"], &echo(20)));
    forged.push(boosted(
        &keyed,
        &["lz4", "encrypt"],
        &icmp_echo([192, 0, 2, 1], [10, 77, 1, 2], 21),
    ));
    tb.inject(forged, INJECT_GAP).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let after = tb.manage(GA, "stats", Value::Null).unwrap();
    let delta = |path: &[&str]| counter(&after, path) - counter(&before, path);
    for (reason, n) in [
        ("unknown_peer", 6),
        ("unencrypted", 4),
        ("chain_not_allowed", 1),
        ("no_policy", 1),
    ] {
        assert_eq!(delta(&["drops", reason]), n, "{reason}: {}", after["drops"]);
    }
    // Besides gateway B's own loss reports (control, every 500 ms), the twelve sent here.
    assert_eq!(delta(&["udp_in"]) - delta(&["control_in"]), 6 + 6);
    // Nothing was written to the TUN device, so host A answered nothing: no echo reply came
    // back into gateway A's TUN device (it would be read as tun_in) and none was sent.
    assert_eq!(delta(&["tun_out"]), 0);
    assert_eq!(tun_rx_packets(&tb, GA), tun_before);
    assert_eq!(delta(&["tun_in"]), 0);

    // The same echo, properly protected and from the peer's address, is delivered and answered:
    // the forged ones above were refused for what they were, not for being malformed.
    tb.inject(
        vec![boosted(&keyed, &["lz4", "encrypt"], &echo(30))],
        INJECT_GAP,
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let answered = tb.manage(GA, "stats", Value::Null).unwrap();
    assert_eq!(
        counter(&answered, &["tun_out"]) - counter(&after, &["tun_out"]),
        1
    );
    assert_eq!(tun_rx_packets(&tb, GA), tun_before + 1);
    assert_eq!(
        counter(&answered, &["tun_in"]) - counter(&after, &["tun_in"]),
        1
    );

    // The text view names the reasons.
    let text = std::process::Command::new(bin())
        .args(["booster", "stats", "--socket"])
        .arg(tb.socket(GA))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    for reason in [
        "unknown_peer",
        "unencrypted",
        "chain_not_allowed",
        "no_policy",
    ] {
        assert!(text.contains(reason), "{text}");
    }

    // Legitimate traffic flows, and live changes on both gateways lose nothing: 300 pings at
    // 10 ms while fec:4:1 is inserted and lz4 removed.
    assert_eq!(netns::ping(&tb, 200, 2, "0.2").unwrap().len(), 2);
    let drops_before: Vec<Value> = [GA, GB].iter().map(|&g| drops(&tb, g)).collect();
    let rtts = std::thread::scope(|s| {
        let pings = s.spawn(|| netns::ping(&tb, 600, 300, "0.01").unwrap());
        for (verb, booster) in [("insert", "fec:4:1"), ("remove", "lz4")] {
            std::thread::sleep(Duration::from_millis(800));
            for g in [GA, GB] {
                tb.manage(g, verb, json!({"booster": booster})).unwrap();
            }
        }
        pings.join().unwrap()
    });
    assert_eq!(rtts.len(), 300, "pings lost across the live changes");
    for (i, g) in [GA, GB].into_iter().enumerate() {
        assert_eq!(drops(&tb, g), drops_before[i], "gateway {g}");
        let stats = tb.manage(g, "stats", Value::Null).unwrap();
        assert!(counter(&stats, &["boosters", "fec", "boosted"]) > 0);
        let show = tb.manage(g, "show", Value::Null).unwrap();
        assert_eq!(show["policies"][0]["chain"], json!(["encrypt", "fec:4:1"]));
    }
}
