//! Ping NSLP messages (`pathwise_gist::nslp::ping::PingMessage`): parse arbitrary bytes;
//! whatever parses re-emits to bytes that parse back equal, deterministically.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathwise_gist::nslp::ping::PingMessage;

fuzz_target!(|data: &[u8]| {
    if let Some(m) = PingMessage::parse(data) {
        let out = m.emit();
        assert_eq!(PingMessage::parse(&out).as_ref(), Some(&m), "{m:?}");
        assert_eq!(m.emit(), out);
    }
});
