//! Writes the seeds of the `gist_message` and `gist_ipc_frame` fuzz targets: the captured
//! messages of [`wire::vectors::CAPTURES`](pathwise_gist::wire::vectors::CAPTURES) as
//! `capture_NAME.bin`, the hand-built Queries as `query.bin` and `query_cmode.bin` (datagrams),
//! and each frame of [`ipc::vectors::frames`](pathwise_gist::ipc::vectors::frames) as
//! `NAME.bin`, then all of them in one `stream.bin`, and the version 2 encodings of
//! [`ipc::vectors::v2_frames`](pathwise_gist::ipc::vectors::v2_frames) as `v2_NAME.bin`.
//!
//! `fuzz/run.sh --seeds` runs this (and the other crates' `fuzz_seeds` examples); by hand, from
//! the repository root:
//!
//! ```sh
//! cargo run -q -p pathwise-gist --example fuzz_seeds -- fuzz/seeds
//! ```
//!
//! creates `fuzz/seeds/gist_message/` and `fuzz/seeds/gist_ipc_frame/`, writes the seeds there
//! and lists each file it wrote.

use pathwise_core::fuzz_seeds::SeedDir;
use std::path::Path;
use std::process::ExitCode;

use pathwise_gist::{ipc, wire};

const USAGE: &str =
    "usage: fuzz_seeds SEEDS_DIR   (writes SEEDS_DIR/gist_message/ and SEEDS_DIR/gist_ipc_frame/)";

fn main() -> ExitCode {
    pathwise_core::fuzz_seeds::main(USAGE, write_seeds)
}

fn write_seeds(root: &Path) -> Result<(), String> {
    let dir = SeedDir::create(root, "gist_message")?;
    for (name, bytes) in wire::vectors::CAPTURES {
        dir.write(&format!("capture_{name}.bin"), bytes)?;
    }
    dir.write("query.bin", &wire::vectors::query().to_datagram())?;
    dir.write(
        "query_cmode.bin",
        &wire::vectors::query_cmode().to_datagram(),
    )?;

    let dir = SeedDir::create(root, "gist_ipc_frame")?;
    let mut stream = Vec::new();
    for (name, frame) in ipc::vectors::frames() {
        dir.write(&format!("{name}.bin"), &frame.to_bytes())?;
        frame.encode(&mut stream);
    }
    for (name, bytes) in ipc::vectors::v2_frames() {
        dir.write(&format!("{name}.bin"), &bytes)?;
    }
    dir.write("stream.bin", &stream)
}
