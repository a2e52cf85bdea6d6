//! Boosters inserted and removed while the tunnel runs as fast as it can (issue #19: "insertion
//! and removal during a multi-gigabit transfer lose nothing"): an unshaped link with every
//! offload on, one TCP stream of a known byte sequence for a few seconds, and the chain changed
//! under it every 300 ms. Host B checks every byte as it arrives. Needs root, `ip`, `tc`,
//! `ping` and /dev/net/tun; the test prints why and passes when something is missing.
//! Namespaces are deleted at the end.

mod common;

use common::booster::{bin, in_netns};
use pathwise::booster::netns::{self, GA, GB, HA, HB, LinkShape, Testbed};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// The transfer's bytes: an xorshift stream, so no compression shortens it by luck and any
/// lost, repeated or reordered piece shows at its offset.
struct Stream(u64);

impl Stream {
    fn new() -> Self {
        Stream(0x2545_f491_4f6c_dd1d)
    }

    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            chunk.copy_from_slice(&self.0.to_le_bytes()[..chunk.len()]);
        }
    }
}

/// Drops of `stats` by reason, without the one a change causes by design.
fn drops_but_unencrypted(stats: &Value) -> Vec<(String, u64)> {
    stats["drops"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| *k != "unencrypted")
        .filter_map(|(k, v)| Some((k.clone(), v.as_u64()?)))
        .filter(|(_, n)| *n > 0)
        .collect()
}

#[test]
fn inserting_and_removing_boosters_at_full_speed_loses_nothing() {
    if let Some(why) = netns::unavailable(&["ping"]) {
        println!("skipping inserting_and_removing_boosters_at_full_speed: {why}");
        return;
    }
    let mut tb = Testbed::new(LinkShape::default()).unwrap();
    tb.start_gateways(bin(), &[], false, "chain_grace_ms = 300")
        .unwrap();
    let _ = netns::ping(&tb, 100, 1, "0.2");

    let listener = in_netns(tb.ns[HB].clone(), || {
        std::net::TcpListener::bind((netns::HOST_B, 5598)).unwrap()
    })
    .join()
    .unwrap();
    // Host B: compare every byte with the stream; count what matched.
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let (mut expect, mut got, mut want) = (Stream::new(), vec![0u8; 1 << 16], Vec::new());
        let mut matched = 0u64;
        loop {
            let n = s.read(&mut got).unwrap();
            if n == 0 {
                return matched;
            }
            // The stream in 8-byte words: refill what the read consumed, keeping the rest.
            while want.len() < n {
                let mut w = [0u8; 8];
                expect.fill(&mut w);
                want.extend_from_slice(&w);
            }
            assert!(
                got[..n] == want[..n],
                "host B got other bytes at offset {matched}"
            );
            want.drain(..n);
            matched += n as u64;
        }
    });
    let seconds = 4;
    let client = in_netns(tb.ns[HA].clone(), move || {
        let mut s = std::net::TcpStream::connect((netns::HOST_B, 5598)).unwrap();
        let (mut stream, mut buf) = (Stream::new(), vec![0u8; 1 << 16]);
        let (start, mut sent) = (Instant::now(), 0u64);
        while start.elapsed() < Duration::from_secs(seconds) {
            stream.fill(&mut buf);
            s.write_all(&buf).unwrap();
            sent += buf.len() as u64;
        }
        s.shutdown(std::net::Shutdown::Write).unwrap();
        (sent, start.elapsed())
    });
    // Each change goes to both gateways, one right after the other, well within the grace
    // period: a receiver accepts only the chains its own policy allows.
    let steps: &[(&str, &str)] = &[
        ("insert", "null"),
        ("insert", "lz4"),
        ("insert", "fec:4:1"),
        ("remove", "lz4"),
        ("insert", "dumb"),
        ("remove", "null"),
        ("insert", "encrypt"),
        ("remove", "fec"),
        ("remove", "dumb"),
        ("remove", "encrypt"),
    ];
    for (verb, booster) in steps {
        std::thread::sleep(Duration::from_millis(300));
        for g in [GA, GB] {
            tb.manage(g, verb, json!({"booster": booster})).unwrap();
        }
    }
    let (sent, took) = client.join().unwrap();
    let matched = server.join().unwrap();
    assert_eq!(matched, sent, "host B checked fewer bytes than host A sent");
    // Nothing dropped but, by design, the plaintext a gateway refuses once its policy
    // encrypts and before its peer does (docs/booster-wire.md, "Admission").
    let mut unencrypted = 0;
    for g in [GA, GB] {
        let stats = tb.manage(g, "stats", Value::Null).unwrap();
        assert_eq!(drops_but_unencrypted(&stats), vec![], "{}", stats["drops"]);
        unencrypted += stats["drops"]["unencrypted"].as_u64().unwrap_or(0);
        let show = tb.manage(g, "show", Value::Null).unwrap();
        assert_eq!(show["policies"][0]["chain"], json!([]));
    }
    println!(
        "{} MiB checked in {took:?} ({:.0} Mbit/s) across {} changes; plaintext refused \
         while encryption went in: {unencrypted}",
        sent >> 20,
        sent as f64 * 8.0 / took.as_secs_f64() / 1e6,
        steps.len()
    );
}
