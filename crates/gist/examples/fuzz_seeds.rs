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

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use pathwise_gist::{ipc, wire};

const USAGE: &str =
    "usage: fuzz_seeds SEEDS_DIR   (writes SEEDS_DIR/gist_message/ and SEEDS_DIR/gist_ipc_frame/)";

fn main() -> ExitCode {
    let Some(root) = seeds_dir() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    match write_seeds(&root) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fuzz_seeds: {e}");
            ExitCode::FAILURE
        }
    }
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

/// The only argument: a directory, not an option.
fn seeds_dir() -> Option<PathBuf> {
    let mut args = std::env::args_os().skip(1);
    match (args.next(), args.next()) {
        (Some(dir), None) if !dir.is_empty() && !dir.to_string_lossy().starts_with('-') => {
            Some(dir.into())
        }
        _ => None,
    }
}

/// One fuzz target's seed directory.
struct SeedDir(PathBuf);

impl SeedDir {
    fn create(root: &Path, target: &str) -> Result<SeedDir, String> {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(SeedDir(dir))
    }

    /// Writes one seed and lists it; a closed stdout is an error, not a panic.
    fn write(&self, name: &str, bytes: &[u8]) -> Result<(), String> {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        writeln!(
            std::io::stdout(),
            "{} ({} bytes)",
            path.display(),
            bytes.len()
        )
        .map_err(|e| format!("stdout: {e}"))
    }
}
