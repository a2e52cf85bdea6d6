//! QoS NSLP messages (`pathwise_qos_nslp::wire::Message`) and QSPECs
//! (`pathwise_qos_nslp::wire::Qspec`): parse arbitrary bytes; whatever parses must emit exactly
//! `buffer_len()` bytes that parse back to the same value, and emitting is deterministic. Every
//! parse error maps to a Protocol Error INFO-SPEC.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathwise_qos_nslp::wire::{ErrorClass, Message, Qspec};

fuzz_target!(|data: &[u8]| {
    match Message::parse(data) {
        Ok(msg) => {
            let out = msg.to_bytes();
            assert_eq!(out.len(), msg.buffer_len());
            let again = match Message::parse(&out) {
                Ok(m) => m,
                Err(e) => panic!("re-emitted message does not parse: {e:?}\n{msg:?}"),
            };
            assert_eq!(again, msg);
            assert_eq!(again.to_bytes(), out);
        }
        Err(e) => assert_eq!(e.kind.info_spec().0, ErrorClass::ProtocolError),
    }
    if let Ok(q) = Qspec::parse(data) {
        let out = q.to_bytes();
        assert_eq!(out.len(), q.buffer_len());
        assert_eq!(Qspec::parse(&out).as_ref(), Ok(&q));
    }
});
