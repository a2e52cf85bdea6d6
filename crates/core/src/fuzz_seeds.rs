//! Writing fuzz seeds. Each crate with a parser keeps an `examples/fuzz_seeds.rs` that writes
//! the seeds of its fuzz targets from the byte vectors its tests use; `fuzz/run.sh --seeds` runs
//! them all. This is what they share: the one argument (the seeds directory), a directory per
//! target, every file listed as it is written, and exit codes (2 for a bad argument, 1 when
//! writing fails) instead of panics.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Runs `write` on the seeds directory named by the program's only argument and turns the
/// outcome into an exit code; `usage` is printed when the argument is missing, extra or an
/// option.
pub fn main(usage: &str, write: impl FnOnce(&Path) -> Result<(), String>) -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let root: PathBuf = match (args.next(), args.next()) {
        (Some(dir), None) if !dir.is_empty() && !dir.to_string_lossy().starts_with('-') => {
            dir.into()
        }
        _ => {
            eprintln!("{usage}");
            return ExitCode::from(2);
        }
    };
    match write(&root) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fuzz_seeds: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One fuzz target's seed directory.
#[derive(Debug)]
pub struct SeedDir(PathBuf);

impl SeedDir {
    /// `root/target`, created if need be.
    pub fn create(root: &Path, target: &str) -> Result<SeedDir, String> {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(SeedDir(dir))
    }

    /// Writes one seed and lists it on standard output; a closed stdout is an error, not a
    /// panic.
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<(), String> {
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
