//! Writes the seeds of the `booster_encap` fuzz target: four packets (text and random, 60 to
//! 660 bytes) boosted through each of [`vectors::CHAINS`] by a fresh sender, every datagram that
//! comes out (FEC parity included) in a file `NNN-CHAIN.bin`, and a control message with a loss
//! report. Datagrams are encrypted with the key the fuzz target's receiver holds.
//!
//! `fuzz/run.sh --seeds` runs this (and the other crates' `fuzz_seeds` examples); by hand, from
//! the repository root:
//!
//! ```sh
//! cargo run -q -p pathwise-booster --example fuzz_seeds -- fuzz/seeds
//! ```
//!
//! creates `fuzz/seeds/booster_encap/`, writes the seeds there and lists each file it wrote.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use pathwise_booster::control::Control;
use pathwise_booster::pipeline::{Sender, encode_control};
use pathwise_booster::stats::Counters;
use pathwise_booster::vectors::{self, CHAINS};
use pathwise_core::time::Instant;

const USAGE: &str = "usage: fuzz_seeds SEEDS_DIR   (writes SEEDS_DIR/booster_encap/)";

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
    let dir = SeedDir::create(root, "booster_encap")?;
    let now = Instant::from_secs(1);
    let mut n = 0;
    for chain in CHAINS {
        let name = chain.join("-");
        let snap = vectors::snapshot(1, chain).map_err(|e| format!("chain [{name}]: {e}"))?;
        // A fresh sender per chain, so sequence numbers and FEC groups start over each time.
        let mut tx = Sender::new(vectors::env(1), 1400, Arc::new(Counters::default()));
        for k in 0..4u32 {
            let mut p = tx.pool().get();
            p.set_payload(&vectors::ipv4(60 + 200 * k as usize, k, k % 2 == 0))
                .ok_or("sample packet larger than a packet buffer")?;
            let mut out = Vec::new();
            tx.boost(now, &snap, p, &mut out);
            for d in out {
                dir.write(&format!("{n:03}-{name}.bin"), d.payload())?;
                n += 1;
                tx.recycle(d);
            }
        }
    }
    let mut control = Vec::new();
    encode_control(
        &[Control::LossReport {
            received: 9,
            expected: 10,
        }],
        &mut control,
    );
    dir.write("control.bin", &control)
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
