//! GIST messages (`pathwise_gist::wire::Message`): parse arbitrary bytes as a D-mode datagram
//! and as a C-mode message; whatever parses must emit exactly `buffer_len()` bytes that parse
//! back to the same message, deterministically. Also drives a GIST engine with the bytes, which
//! must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathwise_core::engine::Engine;
use pathwise_core::io::{IfIndex, Received, Transport};
use pathwise_core::time::Instant;
use pathwise_gist::wire::{Message, frame_len};
use pathwise_gist::{Config, GistEngine, InterfaceConfig};

fn check(msg: &Message) {
    let out = msg.to_datagram();
    assert_eq!(out.len(), 4 + msg.buffer_len());
    let again = match Message::parse_datagram(&out) {
        Ok(m) => m,
        Err(e) => panic!("re-emitted message does not parse: {e:?}\n{msg:?}"),
    };
    assert_eq!(&again, msg);
    assert_eq!(again.to_datagram(), out);
    let mut stream = Vec::new();
    msg.emit(&mut stream);
    assert_eq!(frame_len(&stream), Some(stream.len()));
}

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = Message::parse_datagram(data) {
        check(&m);
    }
    if let Ok(m) = Message::parse(data) {
        check(&m);
    }
    let addr = "10.0.0.2".parse().unwrap();
    let mut e = GistEngine::new(
        Config {
            interfaces: vec![InterfaceConfig {
                ifindex: IfIndex(1),
                addrs: vec![addr],
            }],
            nslpids: vec![42, 32704],
            ..Config::default()
        },
        Instant::ZERO,
    );
    e.handle_datagram(
        Instant::from_secs(1),
        Received {
            src: "10.0.0.1".parse().unwrap(),
            dst: addr,
            ifindex: IfIndex(1),
            transport: Transport::Udp {
                src_port: 270,
                dst_port: 270,
            },
            router_alert: None,
            ttl: 64,
            payload: data,
        },
    );
    while e.poll_transmit().is_some() {}
    e.handle_stream(
        Instant::from_secs(1),
        pathwise_gist::StreamInput::Accepted {
            peer: "10.0.0.1".parse().unwrap(),
        },
    );
    let peer = "10.0.0.1".parse().unwrap();
    // A second stream's first bytes, judged without side effects.
    let _ = e.vet_replacement_stream(
        Instant::from_secs(1),
        peer,
        pathwise_gist::MaTransport::Tcp,
        data,
    );
    assert_eq!(e.state_stats().routing_states, 0);
    e.handle_stream(
        Instant::from_secs(1),
        pathwise_gist::StreamInput::Data { peer, bytes: data },
    );
    // Whatever came over the stream, the engine answers with few messages (a framing error
    // closes the stream after one Error; each well-framed message gets at most one answer).
    let answers = std::iter::from_fn(|| e.poll_stream())
        .filter(|s| matches!(s.op, pathwise_gist::StreamOp::Send(_)))
        .count();
    assert!(answers <= data.len() / 8 + 1, "{answers} answers");
});
