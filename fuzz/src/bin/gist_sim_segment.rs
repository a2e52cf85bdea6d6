//! The simulator's stream-adapter segments (`pathwise_gist::sim_stream::Segment`): parse
//! arbitrary bytes; whatever parses re-emits to `buffer_len()` bytes that parse back equal.
//! Then the input, cut into segments (two length bytes each; an odd first byte makes the rest
//! a segment with a valid checksum from its fields, so the fuzzer gets past the CRC), is fed to
//! one `StreamAdapter` from one peer with time moving on: it never panics, and every segment it
//! receives is accepted or dropped by reason.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathwise_core::engine::Engine;
use pathwise_core::io::{IfIndex, Received, Transport};
use pathwise_core::time::{Duration, Instant};
use pathwise_gist::sim_stream::{SEGMENT_PORT, Segment, SegmentKind, StreamAdapter};
use pathwise_gist::{Config, GistEngine, MaTransport};

const KINDS: [SegmentKind; 6] = [
    SegmentKind::Syn,
    SegmentKind::SynAck,
    SegmentKind::Data,
    SegmentKind::Ack,
    SegmentKind::Fin,
    SegmentKind::Rst,
];

fn word(b: &[u8]) -> u32 {
    let mut w = [0u8; 4];
    for (d, s) in w.iter_mut().zip(b) {
        *d = *s;
    }
    u32::from_be_bytes(w)
}

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = Segment::parse(data) {
        let out = s.emit();
        assert_eq!(out.len(), s.buffer_len());
        assert_eq!(Segment::parse(&out), Ok(s));
    }
    let mut a = StreamAdapter::new(GistEngine::new(Config::default(), Instant::ZERO));
    let mut now = Instant::ZERO;
    let mut rest = data;
    while rest.len() >= 2 {
        let n = usize::from(u16::from_be_bytes([rest[0], rest[1]])).min(rest.len() - 2);
        let chunk = &rest[2..2 + n];
        rest = &rest[2 + n..];
        let bytes = match chunk.split_first() {
            Some((&b, fields)) if b & 1 == 1 => Segment {
                kind: KINDS[usize::from(b >> 1) % KINDS.len()],
                transport: if b & 0x80 != 0 {
                    MaTransport::Tls
                } else {
                    MaTransport::Tcp
                },
                seq: word(fields),
                ack: word(fields.get(4..).unwrap_or_default()),
                payload: fields.get(8..).unwrap_or_default(),
            }
            .emit(),
            _ => chunk.to_vec(),
        };
        a.handle_datagram(
            now,
            Received {
                src: "10.0.0.1".parse().unwrap(),
                dst: "10.0.0.2".parse().unwrap(),
                ifindex: IfIndex(1),
                transport: Transport::Udp {
                    src_port: SEGMENT_PORT,
                    dst_port: SEGMENT_PORT,
                },
                router_alert: None,
                ttl: 64,
                payload: &bytes,
            },
        );
        while a.poll_transmit().is_some() {}
        now += Duration::from_millis(150);
        if a.poll_timeout().is_some_and(|t| t <= now) {
            a.handle_timeout(now);
        }
        while a.poll_transmit().is_some() {}
    }
    let s = a.stats();
    assert_eq!(s.received, s.accepted + s.drops.total(), "{s:?}");
});
