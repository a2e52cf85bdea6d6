//! Writes the seeds of the `rsvp_message` fuzz target: every message of
//! [`vectors::ALL`](pathwise_rsvp::wire::message::vectors::ALL), one file each.
//!
//! `fuzz/run.sh --seeds` runs this (and the other crates' `fuzz_seeds` examples); by hand, from
//! the repository root:
//!
//! ```sh
//! cargo run -q -p pathwise-rsvp --example fuzz_seeds -- fuzz/seeds
//! ```
//!
//! creates `fuzz/seeds/rsvp_message/`, writes `NAME.bin` there and lists each file it wrote.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use pathwise_rsvp::wire::message::vectors::ALL;

const USAGE: &str = "usage: fuzz_seeds SEEDS_DIR   (writes SEEDS_DIR/rsvp_message/)";

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
    let dir = SeedDir::create(root, "rsvp_message")?;
    for (name, bytes) in ALL {
        dir.write(&format!("{name}.bin"), bytes)?;
    }
    Ok(())
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
