//! The RSVP-TE and refresh-reduction object codecs (`pathwise_rsvp::wire::te`), each on
//! arbitrary bodies under an arbitrary C-Type — including those (MESSAGE_ID, MESSAGE_ID_ACK/NACK,
//! MESSAGE_ID_LIST) that no message carries yet, so `rsvp_message` cannot reach them: parsing
//! never panics, and what parses emits `buffer_len()` bytes that parse back to the same value.
//! GMPLS's (RFC 3473) Generalized LABEL and the RSVP_HOP, whose IF_ID C-Types 3 and 4 carry
//! TLVs, are here too. Input: one byte choosing the object, one byte of C-Type, then the body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathwise_core::wire::Writer;
use pathwise_rsvp::wire::RsvpHop;
use pathwise_rsvp::wire::te::{
    ExplicitRoute, GeneralizedLabel, Hello, Label, LabelRequest, MessageId, MessageIdAck,
    MessageIdList, RecordRoute, SessionAttribute,
};

/// Parse, and check the round trip of whatever parses.
macro_rules! round_trip {
    ($ty:ty, $ctype:expr, $body:expr) => {
        if let Ok(x) = <$ty>::parse($ctype, $body) {
            let mut out = Vec::with_capacity(x.buffer_len());
            x.emit(&mut Writer::new(&mut out));
            assert_eq!(out.len(), x.buffer_len());
            let again = <$ty>::parse(out[3], &out[4..]).expect("re-emitted object parses");
            assert_eq!(again, x);
        }
    };
}

fuzz_target!(|data: &[u8]| {
    let [which, ctype, body @ ..] = data else {
        return;
    };
    match which % 11 {
        0 => round_trip!(ExplicitRoute, *ctype, body),
        1 => round_trip!(RecordRoute, *ctype, body),
        2 => round_trip!(LabelRequest, *ctype, body),
        3 => round_trip!(Label, *ctype, body),
        4 => round_trip!(SessionAttribute, *ctype, body),
        5 => round_trip!(Hello, *ctype, body),
        6 => round_trip!(MessageId, *ctype, body),
        7 => round_trip!(MessageIdAck, *ctype, body),
        8 => round_trip!(GeneralizedLabel, *ctype, body),
        9 => round_trip!(RsvpHop, *ctype, body),
        _ => round_trip!(MessageIdList, *ctype, body),
    }
});
