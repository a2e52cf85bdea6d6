//! The oracle's seed-format database importer (`pathwise_oracle::config::seed::import_with`):
//! the input up to its first NUL byte is the main file, the rest every router's file. Importing
//! never panics; what imports is written as TOML that reads back equal.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathwise_oracle::config::{from_toml_str, seed::import_with, to_toml_string};

fuzz_target!(|data: &[u8]| {
    let (main, router) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let (Ok(main), Ok(router)) = (std::str::from_utf8(main), std::str::from_utf8(router)) else {
        return;
    };
    let Ok(cfg) = import_with(main, "oracle.conf", |dir, addr| {
        Some((format!("{dir}/{addr}"), router.to_owned()))
    }) else {
        return;
    };
    if let Ok(text) = to_toml_string(&cfg) {
        match from_toml_str(&text) {
            Ok(back) => assert_eq!(back, cfg, "{text}"),
            Err(e) => panic!("written TOML does not read back: {e}\n{text}"),
        }
    }
});
