//! Writes the seeds of the `net_packets` fuzz target: a Q-mode datagram in transit as the
//! netfilter queue hands it over — IPv4 with Router Alert 42 and IPv6 with a hop-by-hop Router
//! Alert, each UDP to port 270 with a valid checksum — and the same IPv4 packet inside an
//! nfnetlink_queue packet message, each checked to parse as a transit datagram.
//!
//! `fuzz/run.sh --seeds` runs this (and the other crates' `fuzz_seeds` examples); by hand, from
//! the repository root:
//!
//! ```sh
//! cargo run -q -p pathwise-net --example fuzz_seeds -- fuzz/seeds
//! ```

use pathwise_core::fuzz_seeds::SeedDir;
use pathwise_core::wire::internet_checksum;
use pathwise_net::ip;
use pathwise_net::nfqueue::{parse_packets, transit_datagram};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::process::ExitCode;

const USAGE: &str = "usage: fuzz_seeds SEEDS_DIR   (writes SEEDS_DIR/net_packets/)";

/// A GIST-looking payload: the magic number (RFC 5971 §5.3.1), then anything.
const PAYLOAD: &[u8] = b"\x4e\x04\xbd\xa5GIST query";

fn main() -> ExitCode {
    pathwise_core::fuzz_seeds::main(USAGE, write_seeds)
}

/// A UDP header and `payload` from port 270 to 270, its checksum over `pseudo` (RFC 768, RFC
/// 8200 §8.1).
fn udp(pseudo: &[u8], payload: &[u8]) -> Vec<u8> {
    let len = (8 + payload.len()) as u16;
    let mut d = vec![1, 14, 1, 14];
    d.extend_from_slice(&len.to_be_bytes());
    d.extend_from_slice(&[0, 0]);
    d.extend_from_slice(payload);
    let mut all = pseudo.to_vec();
    all.extend_from_slice(&d);
    let sum = internet_checksum(&all);
    d[6..8].copy_from_slice(&sum.to_be_bytes());
    d
}

fn ipv4_query() -> Vec<u8> {
    let (src, dst) = (Ipv4Addr::new(10, 210, 0, 1), Ipv4Addr::new(10, 210, 1, 2));
    let mut pseudo = [src.octets(), dst.octets()].concat();
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&((8 + PAYLOAD.len()) as u16).to_be_bytes());
    let d = udp(&pseudo, PAYLOAD);
    let spec = ip::Ipv4HeaderSpec {
        src,
        dst,
        protocol: 17,
        ttl: 64,
        tos: 0,
        router_alert: Some(42),
        payload_len: d.len(),
    };
    let mut h = [0u8; 24];
    let n = ip::build_ipv4_header(&spec, &mut h).unwrap_or(0);
    [&h[..n], &d[..]].concat()
}

fn ipv6_query() -> Vec<u8> {
    let src = Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1);
    let dst = Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2);
    let mut pseudo = [src.octets(), dst.octets()].concat();
    pseudo.extend_from_slice(&((8 + PAYLOAD.len()) as u32).to_be_bytes());
    pseudo.extend_from_slice(&[0, 0, 0, 17]);
    let d = udp(&pseudo, PAYLOAD);
    let mut hbh = ip::hop_by_hop_router_alert(65503);
    hbh[0] = 17; // next header: UDP
    let mut p = vec![0x60, 0, 0, 0];
    p.extend_from_slice(&((hbh.len() + d.len()) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 64]); // next header: hop-by-hop; hop limit
    p.extend_from_slice(&src.octets());
    p.extend_from_slice(&dst.octets());
    [&p[..], &hbh[..], &d[..]].concat()
}

/// An nfnetlink_queue packet message (NFQNL_MSG_PACKET) carrying `pkt`: netlink header,
/// nfgenmsg (queue 270), packet header (id 7, IPv4), incoming interface 3, payload.
fn queue_message(pkt: &[u8]) -> Vec<u8> {
    fn attr(m: &mut Vec<u8>, kind: u16, value: &[u8]) {
        m.extend_from_slice(&((4 + value.len()) as u16).to_ne_bytes());
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(value);
        m.resize(m.len().div_ceil(4) * 4, 0);
    }
    let mut m = vec![0u8; 16];
    m.extend_from_slice(&[0, 0, 1, 14]);
    attr(&mut m, 1, &[0, 0, 0, 7, 8, 0, 0]);
    attr(&mut m, 5, &3u32.to_be_bytes());
    attr(&mut m, 10, pkt);
    let len = m.len() as u32;
    m[0..4].copy_from_slice(&len.to_ne_bytes());
    m[4..6].copy_from_slice(&(3u16 << 8).to_ne_bytes());
    m
}

fn write_seeds(root: &Path) -> Result<(), String> {
    let dir = SeedDir::create(root, "net_packets")?;
    let (v4, v6) = (ipv4_query(), ipv6_query());
    for (name, p) in [
        ("ipv4-ra42-udp270.bin", &v4),
        ("ipv6-hbh-ra-udp270.bin", &v6),
    ] {
        // A seed that does not parse only exercises the error paths.
        transit_datagram(p, 1, 270).ok_or(format!("{name} does not parse"))?;
        dir.write(name, p)?;
    }
    let q = queue_message(&v4);
    match parse_packets(&q).next() {
        Some(Ok(p)) if p.payload == &v4[..] => {}
        other => return Err(format!("nfq-packet.bin does not parse: {other:?}")),
    }
    dir.write("nfq-packet.bin", &q)
}
