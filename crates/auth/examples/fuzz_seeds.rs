//! Writes the seed of the `auth_keyfile` fuzz target: a key file with a comment, a key without
//! lifetimes and one with all four (a hexadecimal id, `inf`), checked to load.
//!
//! `fuzz/run.sh --seeds` runs this (and the other crates' `fuzz_seeds` examples); by hand, from
//! the repository root:
//!
//! ```sh
//! cargo run -q -p pathwise-auth --example fuzz_seeds -- fuzz/seeds
//! ```
//!
//! creates `fuzz/seeds/auth_keyfile/`, writes `sample.keys` there and lists the file it wrote.

use pathwise_core::fuzz_seeds::SeedDir;
use std::path::Path;
use std::process::ExitCode;

use pathwise_auth::parse_key_file;

const USAGE: &str = "usage: fuzz_seeds SEEDS_DIR   (writes SEEDS_DIR/auth_keyfile/)";

/// The key file format (`pathwise_auth::load_key_file`) by example, every field kind once.
const SAMPLE_KEYS: &str = "\
# id alg secret
1 hmac-md5 00112233445566778899aabbccddeeff
0x2a hmac-sha256 6b6579 1700000000 1800000000 1699990000 inf
";

fn main() -> ExitCode {
    pathwise_core::fuzz_seeds::main(USAGE, write_seeds)
}

fn write_seeds(root: &Path) -> Result<(), String> {
    // A seed that does not load only exercises the error paths.
    parse_key_file(SAMPLE_KEYS).map_err(|e| format!("sample.keys: {e}"))?;
    SeedDir::create(root, "auth_keyfile")?.write("sample.keys", SAMPLE_KEYS.as_bytes())
}
