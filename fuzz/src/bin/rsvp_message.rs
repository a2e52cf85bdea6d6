//! RSVP messages (`pathwise_rsvp::wire::Message`): parse arbitrary bytes; whatever parses must
//! emit exactly `buffer_len()` bytes that parse back to the same message, and emitting is
//! deterministic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathwise_rsvp::wire::Message;

fuzz_target!(|data: &[u8]| {
    let Ok((header, msg)) = Message::parse(data) else {
        return;
    };
    let mut out = Vec::with_capacity(msg.buffer_len());
    msg.emit(header.send_ttl, &mut out);
    assert_eq!(out.len(), msg.buffer_len());
    let (again_header, again) = match Message::parse(&out) {
        Ok(parsed) => parsed,
        Err(e) => panic!("re-emitted message does not parse: {e:?}\n{msg:?}"),
    };
    assert_eq!(again, msg);
    assert_eq!(again_header.send_ttl, header.send_ttl);
    assert_eq!(usize::from(again_header.length), out.len());
    let mut twice = Vec::with_capacity(out.len());
    again.emit(header.send_ttl, &mut twice);
    assert_eq!(twice, out);
});
