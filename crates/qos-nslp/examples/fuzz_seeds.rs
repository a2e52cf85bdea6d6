//! Writes the seeds of the `qos_nslp_message` fuzz target: each sample message of
//! [`wire::vectors::all`](pathwise_qos_nslp::wire::vectors::all) as `NAME.bin`, and the
//! RFC-layout RESERVE [`wire::vectors::RESERVE_INITIAL`] as `reserve_initial_rfc.bin`.
//!
//! `fuzz/run.sh --seeds` runs this (and the other crates' `fuzz_seeds` examples); by hand, from
//! the repository root:
//!
//! ```sh
//! cargo run -q -p pathwise-qos-nslp --example fuzz_seeds -- fuzz/seeds
//! ```
//!
//! creates `fuzz/seeds/qos_nslp_message/`, writes the seeds there and lists each file it wrote.

use pathwise_core::fuzz_seeds::SeedDir;
use pathwise_qos_nslp::wire::{Message, vectors};
use std::path::Path;
use std::process::ExitCode;

const USAGE: &str = "usage: fuzz_seeds SEEDS_DIR   (writes SEEDS_DIR/qos_nslp_message/)";

fn main() -> ExitCode {
    pathwise_core::fuzz_seeds::main(USAGE, write_seeds)
}

fn write_seeds(root: &Path) -> Result<(), String> {
    let dir = SeedDir::create(root, "qos_nslp_message")?;
    for (name, msg) in vectors::all() {
        dir.write(&format!("{name}.bin"), &msg.to_bytes())?;
    }
    Message::parse(&vectors::RESERVE_INITIAL)
        .map_err(|e| format!("RESERVE_INITIAL does not parse: {e}"))?;
    dir.write("reserve_initial_rfc.bin", &vectors::RESERVE_INITIAL)
}
