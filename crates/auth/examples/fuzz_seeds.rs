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

use std::io::Write;
use std::path::{Path, PathBuf};
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
    // A seed that does not load only exercises the error paths.
    parse_key_file(SAMPLE_KEYS).map_err(|e| format!("sample.keys: {e}"))?;
    SeedDir::create(root, "auth_keyfile")?.write("sample.keys", SAMPLE_KEYS.as_bytes())
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
