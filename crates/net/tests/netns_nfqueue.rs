//! Netfilter queueing of Q-mode datagrams in transit (`pathwise_net::TransitQueue`) over real
//! network namespaces A — R — B (root, the `iptables` package and the kernel's NFQUEUE target;
//! skipped with a message otherwise): R sees UDP datagrams to port 270 carrying Router Alert
//! whatever the value — 42, which Linux's `IP_ROUTER_ALERT` never diverts, as well as 0 — and
//! its verdict decides whether B gets them; datagrams without Router Alert, for another port or
//! addressed to R itself are never queued; the rules go when the queue is dropped.

mod common;

use common::*;
use pathwise_core::io::{Transmit, Transport};
use pathwise_net::{Family, RaUdpSocket, RawOptions, TransitQueue, Verdict};
use std::process::Command;
use std::time::{Duration, Instant};

const GIST_PORT: u16 = 270;
const QUEUE: u16 = 4270;

fn udp(src: &str, dst: &str, dst_port: u16, ra: Option<u16>, payload: &[u8]) -> Transmit {
    Transmit {
        src: Some(addr(src)),
        dst: addr(dst),
        ifindex: None,
        transport: Transport::Udp {
            src_port: 40_000,
            dst_port,
        },
        router_alert: ra,
        ttl: 64,
        payload: payload.to_vec(),
    }
}

/// Payloads B's socket received with `marker`, waiting up to `timeout` for `want` of them.
fn at_b(sock: &mut RaUdpSocket, marker: &[u8], want: usize, timeout: Duration) -> Vec<Vec<u8>> {
    let deadline = Instant::now() + timeout;
    let mut got = Vec::new();
    loop {
        for r in sock.recv_batch().expect("recv_batch") {
            if r.payload.starts_with(marker) {
                got.push(r.payload.to_vec());
            }
        }
        if got.len() >= want || Instant::now() >= deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Datagrams R's queue handed out with `marker`, answered with `verdict`: (Router Alert value,
/// TTL, payload) of each.
fn at_r(
    q: &mut TransitQueue,
    marker: &[u8],
    want: usize,
    timeout: Duration,
    verdict: Verdict,
) -> Vec<(Option<u16>, u8, Vec<u8>)> {
    let deadline = Instant::now() + timeout;
    let mut got = Vec::new();
    loop {
        let mut ids = Vec::new();
        for (id, d) in q.recv_batch().expect("queue recv") {
            if d.payload.starts_with(marker) {
                got.push((d.router_alert, d.ttl, d.payload.to_vec()));
            }
            ids.push(id);
        }
        for id in ids {
            q.verdict(id, verdict).expect("verdict");
        }
        if got.len() >= want || Instant::now() >= deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn iptables_missing() -> Option<String> {
    ["iptables", "ip6tables"]
        .into_iter()
        .find(|t| Command::new(t).arg("--version").output().is_err())
        .map(|t| format!("{t} is not installed"))
}

fn run(family: Family, a_addr: &str, b_addr: &str, r_addr: &str, tag: &str) {
    let c = Chain::new(tag);
    let open = |ns: &Netns| {
        ns.run(|| RaUdpSocket::open(family, GIST_PORT, RawOptions::default(), false))
            .expect("open UDP socket")
    };
    let a = open(&c.a);
    let mut b = open(&c.b);
    let mut q = match c.r.run(|| TransitQueue::open(GIST_PORT, QUEUE)) {
        Ok(q) => q,
        Err(e) => {
            eprintln!("SKIPPED {tag}: netfilter queueing unavailable here ({e})");
            return;
        }
    };

    // Router Alert 42 (NSIS-ka's NSLPID 42): queued at R, as sent; dropped there, B never
    // sees it.
    a.send(&udp(a_addr, b_addr, GIST_PORT, Some(42), b"q42-drop"))
        .expect("send");
    let got = at_r(&mut q, b"q42-drop", 1, ARRIVES, Verdict::Drop);
    assert_eq!(got.len(), 1, "R's queue holds the value-42 Query");
    assert_eq!((got[0].0, got[0].1), (Some(42), 64));
    assert!(at_b(&mut b, b"q42-drop", 1, ABSENT).is_empty());

    // Accepted: the kernel forwards it, B gets it once with the TTL one less.
    a.send(&udp(a_addr, b_addr, GIST_PORT, Some(42), b"q42-pass"))
        .expect("send");
    assert_eq!(
        at_r(&mut q, b"q42-pass", 1, ARRIVES, Verdict::Accept).len(),
        1
    );
    assert_eq!(at_b(&mut b, b"q42-pass", 2, ABSENT * 3).len(), 1);

    // Value 0 goes the same way (no socket takes it off the path first).
    a.send(&udp(a_addr, b_addr, GIST_PORT, Some(0), b"q0"))
        .expect("send");
    assert_eq!(at_r(&mut q, b"q0", 1, ARRIVES, Verdict::Drop)[0].0, Some(0));

    // Not queued: no Router Alert (D-mode Data), another port, or addressed to R itself.
    let before = q.stats().queued;
    a.send(&udp(a_addr, b_addr, GIST_PORT, None, b"plain"))
        .expect("send");
    assert_eq!(at_b(&mut b, b"plain", 1, ARRIVES).len(), 1);
    a.send(&udp(a_addr, r_addr, GIST_PORT, Some(42), b"to-r"))
        .expect("send");
    assert!(at_r(&mut q, b"to-r", 1, ABSENT, Verdict::Accept).is_empty());
    assert_eq!(q.stats().queued, before, "nothing else was queued");

    // Dropped queue (in R, where its rules are): the rules go with it, and value-42 datagrams
    // cross R untouched.
    c.r.run(move || drop(q));
    a.send(&udp(a_addr, b_addr, GIST_PORT, Some(42), b"after"))
        .expect("send");
    assert_eq!(at_b(&mut b, b"after", 1, ARRIVES).len(), 1);
    let rules = c.r.run(|| {
        Command::new(if family == Family::V4 {
            "iptables-save"
        } else {
            "ip6tables-save"
        })
        .output()
    });
    let rules = String::from_utf8_lossy(&rules.expect("iptables-save").stdout).to_string();
    assert!(!rules.contains("NFQUEUE"), "rules left behind:\n{rules}");
}

#[test]
fn transit_queue_ipv4_any_router_alert_value() {
    if !available("transit_queue_ipv4_any_router_alert_value") {
        return;
    }
    if let Some(why) = iptables_missing() {
        eprintln!("SKIPPED transit_queue_ipv4_any_router_alert_value: {why}");
        return;
    }
    run(Family::V4, A4, B4, RA4, "nfq4");
}

#[test]
fn transit_queue_ipv6_any_router_alert_value() {
    if !available("transit_queue_ipv6_any_router_alert_value") {
        return;
    }
    if let Some(why) = iptables_missing() {
        eprintln!("SKIPPED transit_queue_ipv6_any_router_alert_value: {why}");
        return;
    }
    run(Family::V6, A6, B6, RA6, "nfq6");
}
