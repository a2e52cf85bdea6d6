//! The Linux adapters' packet parsers (`pathwise_net`): IPv4 headers and options (Router Alert
//! values), IPv6 headers and extension headers (hop-by-hop Router Alert), the UDP header and
//! checksum of a Q-mode datagram in transit, and the nfnetlink_queue messages the kernel sends.
//! None of them panics on any input; what parses is consistent with the bytes it came from.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathwise_core::io::Transport;
use pathwise_net::ip;
use pathwise_net::nfqueue::{parse_packets, transit_datagram};

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = ip::parse_ipv4(data) {
        assert!(p.payload_start <= p.payload_end && p.payload_end <= data.len());
    }
    if let Ok(p) = ip::parse_ipv6(data) {
        assert!(p.payload_start <= p.payload_end && p.payload_end <= data.len());
    }
    let _ = ip::ipv4_router_alert(data);
    let _ = ip::parse_hop_by_hop(data);
    if let Some(d) = transit_datagram(data, 1, 270) {
        assert!(d.router_alert.is_some());
        assert!(matches!(d.transport, Transport::Udp { dst_port: 270, .. }));
        assert!(d.payload.len() + 8 <= data.len());
    }
    // A packet's bytes lie within the batch (a message without NFQA_PAYLOAD has none).
    for p in parse_packets(data).flatten().filter(|p| !p.payload.is_empty()) {
        let start = (p.payload.as_ptr() as usize).wrapping_sub(data.as_ptr() as usize);
        assert!(start <= data.len() && p.payload.len() <= data.len() - start);
    }
});
