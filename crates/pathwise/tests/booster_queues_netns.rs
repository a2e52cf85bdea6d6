//! The booster gateway with lanes (`queues = 2`: a multi-queue TUN device, one socket and two
//! threads per queue; docs/booster-wire.md, "Lanes") on real networks: a file crosses the
//! encrypted tunnel byte-identical, many UDP flows sent at full speed each arrive in order
//! (the kernel keeps a flow on one queue, and a lane on the peer's same lane), both lanes carry
//! traffic, a datagram of one lane replayed into another lane's port is dropped as a replay,
//! and a device made without multi-queue support is refused with a clear error.
//! Needs root, `ip`, `tc`, `ping`, `iperf3` and /dev/net/tun; each test prints why and passes
//! when something is missing. Namespaces are deleted at the end.

mod common;

use common::booster::{available, bin, echo_b_to_a, in_netns, keyed_sender, total_drops};
use pathwise::booster::netns::{self, GA, GB, HA, HB, LinkShape, Testbed};
use serde_json::Value;
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Per-lane counts of gateway `g` (`booster show`): (tun_in, udp_out, udp_in, tun_out) per lane.
fn lanes(tb: &Testbed, g: usize) -> Vec<[u64; 4]> {
    let show = tb.manage(g, "show", Value::Null).unwrap();
    show["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| ["tun_in", "udp_out", "udp_in", "tun_out"].map(|k| l[k].as_u64().unwrap()))
        .collect()
}

/// Send `data` from host A to host B over TCP through the tunnel (one flow, so one lane);
/// what host B received.
fn send_file(tb: &Testbed, data: Arc<Vec<u8>>) -> Vec<u8> {
    let listener = in_netns(tb.ns[HB].clone(), || {
        std::net::TcpListener::bind((netns::HOST_B, 5598)).unwrap()
    })
    .join()
    .unwrap();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).unwrap();
        got
    });
    in_netns(tb.ns[HA].clone(), move || {
        let mut s = std::net::TcpStream::connect((netns::HOST_B, 5598)).unwrap();
        s.write_all(&data).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
    })
    .join()
    .unwrap();
    server.join().unwrap()
}

/// An ICMP echo request host B → host A encrypted as lane `lane` of a gateway with sender id
/// 3 holding the test bed's key: a datagram gateway A's lane `lane` accepts.
fn lane_datagram(lane: u8) -> Vec<u8> {
    let (mut sender, snap) = keyed_sender(2, lane);
    let mut p = sender.pool().get();
    p.set_payload(&echo_b_to_a()).unwrap();
    let mut out = Vec::new();
    sender.boost(pathwise_core::time::Instant::ZERO, &snap, p, &mut out);
    out[0].payload().to_vec()
}

/// FNV-1a, 64 bits: the file's checksum.
fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Flows (source ports) of the order test, and datagrams per flow.
const FLOWS: u16 = 16;
const PER_FLOW: u32 = 2000;
/// Every this many datagrams host B sends one back on the flow, so each gateway's device also
/// sees the flow written in the other direction (the kernel's flow table steers by what it
/// last wrote).
const ECHO_EVERY: u32 = 50;

/// What host B saw of the flows.
#[derive(Debug, Default)]
struct Arrivals {
    /// Datagrams received, per flow.
    received: Vec<u32>,
    /// Datagrams that came after a higher sequence number of their flow, per flow.
    backwards: Vec<u32>,
}

/// Host A sends [`PER_FLOW`] sequence-numbered datagrams on each of [`FLOWS`] UDP flows,
/// round-robin, in bursts as fast as its socket takes them; host B checks each flow's
/// sequence and echoes some back. The datagrams are 300 bytes: the flow, the sequence, filler.
fn udp_flows(tb: &Testbed) -> Arrivals {
    let receiver = in_netns(tb.ns[HB].clone(), || {
        let s = std::net::UdpSocket::bind((netns::HOST_B, 6000)).unwrap();
        let _ = nix::sys::socket::setsockopt(&s, nix::sys::socket::sockopt::RcvBuf, &(8 << 20));
        s
    })
    .join()
    .unwrap();
    let rx = std::thread::spawn(move || {
        receiver
            .set_read_timeout(Some(Duration::from_millis(1500)))
            .unwrap();
        let mut a = Arrivals {
            received: vec![0; FLOWS as usize],
            backwards: vec![0; FLOWS as usize],
        };
        let mut last: Vec<Option<u32>> = vec![None; FLOWS as usize];
        let mut buf = [0u8; 2048];
        while let Ok((n, from)) = receiver.recv_from(&mut buf) {
            if n < 6 {
                continue;
            }
            let flow = usize::from(u16::from_be_bytes([buf[0], buf[1]]));
            let seq = u32::from_be_bytes([buf[2], buf[3], buf[4], buf[5]]);
            if flow >= FLOWS as usize {
                continue;
            }
            a.received[flow] += 1;
            if last[flow].is_some_and(|l| seq < l) {
                a.backwards[flow] += 1;
            }
            last[flow] = Some(last[flow].map_or(seq, |l| l.max(seq)));
            if seq % ECHO_EVERY == 0 {
                let _ = receiver.send_to(&buf[..64], from);
            }
        }
        a
    });
    std::thread::sleep(Duration::from_millis(200));
    in_netns(tb.ns[HA].clone(), || {
        let sockets: Vec<std::net::UdpSocket> = (0..FLOWS)
            .map(|i| {
                let s = std::net::UdpSocket::bind(("10.77.1.2", 41000 + i)).unwrap();
                s.connect((netns::HOST_B, 6000)).unwrap();
                s.set_nonblocking(true).unwrap();
                s
            })
            .collect();
        let mut d = [0x5au8; 300];
        for seq in 0..PER_FLOW {
            for (flow, s) in sockets.iter().enumerate() {
                d[..2].copy_from_slice(&(flow as u16).to_be_bytes());
                d[2..6].copy_from_slice(&seq.to_be_bytes());
                let _ = s.send(&d);
                // Drain the echoes (their order is not checked: few, and on the way back).
                let _ = s.recv(&mut [0u8; 128]);
            }
            // Bursts of 16 × 2 datagrams, about 20,000 a second: enough to keep both lanes
            // busy, few enough for a debug build's gateways to carry most of them.
            if seq % 2 == 1 {
                std::thread::sleep(Duration::from_micros(1500));
            }
        }
    })
    .join()
    .unwrap();
    rx.join().unwrap()
}

#[test]
fn two_lanes_deliver_a_file_intact_keep_each_flow_in_order_and_both_carry_traffic() {
    if !available("two_lanes_keep_each_flow_in_order", &["ping", "iperf3"]) {
        return;
    }
    let mut tb = Testbed::new(LinkShape::default()).unwrap();
    // A device made without multi-queue support is refused, and the error says what to do.
    let cfg = tb.gateway_config(GA, &["encrypt"], "queues = 2").unwrap();
    let out = tb
        .exec_for(
            GA,
            &[
                &bin().to_string_lossy(),
                "booster",
                "gateway",
                "--config",
                &cfg.to_string_lossy(),
            ],
            Duration::from_secs(20),
        )
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("without multi-queue support") && err.contains("multi_queue"),
        "{err}"
    );

    tb.tun_multi_queue(true).unwrap();
    tb.start_gateways(bin(), &["encrypt"], false, "queues = 2")
        .unwrap();
    assert_eq!(netns::ping(&tb, 200, 3, "0.2").unwrap().len(), 3);
    let show = tb.manage(GA, "show", Value::Null).unwrap();
    assert_eq!(show["queues"], 2, "{show}");
    assert_eq!(show["lanes"][1]["listen"], "192.168.77.1:7001", "{show}");
    assert_eq!(show["lanes"][1]["peer"], "192.168.77.2:7001", "{show}");
    assert_eq!(show["lanes"][1]["sender_id"], 0x0100_0001, "{show}");

    // (1) A file through the encrypted tunnel arrives byte-identical.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let data: Arc<Vec<u8>> = Arc::new(
        (0..4 << 20)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect(),
    );
    let t = Instant::now();
    let got = send_file(&tb, data.clone());
    assert_eq!(got.len(), data.len());
    assert_eq!(fnv(&got), fnv(&data), "host B got other bytes");
    println!(
        "4 MiB through two encrypted lanes in {:.2} s, checksum {:016x}",
        t.elapsed().as_secs_f64(),
        fnv(&got)
    );

    // (2) Each UDP flow's sequence never goes backwards.
    let before = (lanes(&tb, GA), lanes(&tb, GB));
    let a = udp_flows(&tb);
    let total: u32 = a.received.iter().sum();
    let sent = u32::from(FLOWS) * PER_FLOW;
    println!(
        "{total} of {sent} datagrams delivered; per flow {:?}; out of order per flow {:?}",
        a.received, a.backwards
    );
    assert!(
        a.backwards.iter().all(|&b| b == 0),
        "a flow was reordered: {:?}",
        a.backwards
    );
    // UDP may be lost (a debug build's gateway lane falls behind and its TUN queue
    // overflows), but every flow must get through in good part.
    assert!(
        a.received.iter().all(|&r| r > PER_FLOW / 10),
        "every flow delivered in part: {:?}",
        a.received
    );

    // (3) Both lanes carried traffic, each lane of A to the same lane of B.
    let after = (lanes(&tb, GA), lanes(&tb, GB));
    println!("lanes of A before {:?} after {:?}", before.0, after.0);
    println!("lanes of B before {:?} after {:?}", before.1, after.1);
    for lane in 0..2 {
        let a_out = after.0[lane][1] - before.0[lane][1];
        let b_in = after.1[lane][2] - before.1[lane][2];
        let b_tun = after.1[lane][3] - before.1[lane][3];
        assert!(
            a_out > 1000 && b_in > 1000 && b_tun > 1000,
            "lane {lane}: A sent {a_out}, B received {b_in}, wrote {b_tun}"
        );
        // The echoes come back on the lanes of their flows too.
        let b_out = after.1[lane][1] - before.1[lane][1];
        assert!(b_out > 0, "lane {lane}: B sent nothing back");
    }
    let (sa, sb) = (
        tb.manage(GA, "stats", Value::Null).unwrap(),
        tb.manage(GB, "stats", Value::Null).unwrap(),
    );
    // No replay drop although the lanes' counters interleave: each lane has its own window.
    assert_eq!(total_drops(&sa) + total_drops(&sb), 0, "{sa} {sb}");
    assert!(
        sb["boosters"]["encrypt"]["deboosted"].as_u64().unwrap() > u64::from(total),
        "{sb}"
    );

    // A datagram of one lane replayed into the other lane's port is a replay: the replay
    // windows are per sender id, shared by the receiving lanes. The datagram is genuine, of
    // lane 1 of a third key holder (sender id 3, so 3 | 1 << 24 on lane 1).
    let replay_before = sa["drops"]["replay"].as_u64().unwrap();
    let tun_before = sa["tun_out"].as_u64().unwrap();
    let d = lane_datagram(1);
    tb.inject_on(7001, vec![d.clone()], Duration::ZERO).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    tb.inject_on(7000, vec![d.clone()], Duration::ZERO).unwrap();
    tb.inject_on(7001, vec![d], Duration::ZERO).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let sa = tb.manage(GA, "stats", Value::Null).unwrap();
    assert_eq!(
        sa["drops"]["replay"].as_u64().unwrap() - replay_before,
        2,
        "{}",
        sa["drops"]
    );
    assert!(sa["tun_out"].as_u64().unwrap() > tun_before, "{sa}");

    // The plain forwarder (no framework) runs lanes the same way.
    tb.start_gateways(bin(), &[], true, "queues = 2").unwrap();
    assert_eq!(netns::ping(&tb, 200, 2, "0.2").unwrap().len(), 2);
    let a = udp_flows(&tb);
    println!(
        "plain: per flow {:?}; out of order per flow {:?}; lanes of B {:?}",
        a.received,
        a.backwards,
        lanes(&tb, GB)
    );
    assert!(a.backwards.iter().all(|&b| b == 0), "{:?}", a.backwards);
    assert!(
        a.received.iter().all(|&r| r > PER_FLOW / 10),
        "{:?}",
        a.received
    );
    assert!(
        lanes(&tb, GB).iter().all(|l| l[2] > 1000),
        "{:?}",
        lanes(&tb, GB)
    );

    // Back to single-queue devices: a gateway without lanes runs as before.
    tb.tun_multi_queue(false).unwrap();
    tb.start_gateways(bin(), &["encrypt"], false, "").unwrap();
    assert_eq!(netns::ping(&tb, 200, 2, "0.2").unwrap().len(), 2);
    let show = tb.manage(GA, "show", Value::Null).unwrap();
    assert_eq!(show["queues"], 1, "{show}");
}
