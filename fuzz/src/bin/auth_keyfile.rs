//! Key files (`pathwise_auth::parse_key_file`): any text parses to a key chain or a located
//! error, never a panic; every key parsed has a 48-bit id, a non-empty secret and lifetimes
//! that are not empty, and an error about a secret never echoes it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathwise_auth::{KeyFileError, MAX_KEY_ID, parse_key_file};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_key_file(text) {
        Ok(chain) => {
            for k in chain.iter() {
                assert!(k.id() <= MAX_KEY_ID);
                assert!(!k.secret().is_empty());
                assert!(k.send.start < k.send.end && k.accept.start < k.accept.end);
            }
        }
        Err(KeyFileError::Parse {
            field: "secret",
            reason,
            ..
        }) => {
            // An error about a secret describes it with fixed words and numbers; it never
            // repeats any of its characters.
            let fixed = [
                "odd number of hex digits (",
                "invalid hex digit near position ",
            ];
            let rest = fixed
                .iter()
                .find_map(|f| reason.strip_prefix(f))
                .map(|r| r.trim_end_matches(')'));
            let described = rest.is_some_and(|r| r.bytes().all(|b| b.is_ascii_digit()))
                || reason == "key secret is empty";
            assert!(described, "{reason}");
        }
        Err(_) => {}
    }
});
