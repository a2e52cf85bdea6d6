//! Writes the seeds of the `rsvp_message` fuzz target: every message of
//! [`vectors::ALL`](pathwise_rsvp::wire::message::vectors::ALL), one file each, and the KOM/DRAGON
//! messages of [`vectors::kom::ALL`](pathwise_rsvp::wire::message::vectors::kom::ALL).
//!
//! `fuzz/run.sh --seeds` runs this (and the other crates' `fuzz_seeds` examples); by hand, from
//! the repository root:
//!
//! ```sh
//! cargo run -q -p pathwise-rsvp --example fuzz_seeds -- fuzz/seeds
//! ```
//!
//! creates `fuzz/seeds/rsvp_message/`, writes `NAME.bin` there and lists each file it wrote.

use pathwise_core::fuzz_seeds::SeedDir;
use std::path::Path;
use std::process::ExitCode;

use pathwise_rsvp::wire::message::vectors::{ALL, kom};

const USAGE: &str = "usage: fuzz_seeds SEEDS_DIR   (writes SEEDS_DIR/rsvp_message/)";

fn main() -> ExitCode {
    pathwise_core::fuzz_seeds::main(USAGE, write_seeds)
}

fn write_seeds(root: &Path) -> Result<(), String> {
    let dir = SeedDir::create(root, "rsvp_message")?;
    for (name, bytes) in ALL {
        dir.write(&format!("{name}.bin"), bytes)?;
    }
    // Another implementation's messages (KOM/DRAGON's GMPLS RSVP-TE, captured).
    for (name, frame) in kom::ALL {
        dir.write(&format!("kom-{}.bin", name.to_lowercase()), frame.rsvp)?;
    }
    Ok(())
}
