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

use pathwise_core::fuzz_seeds::SeedDir;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use pathwise_booster::control::Control;
use pathwise_booster::pipeline::{Sender, encode_control};
use pathwise_booster::stats::Counters;
use pathwise_booster::vectors::{self, CHAINS};
use pathwise_core::time::Instant;

const USAGE: &str = "usage: fuzz_seeds SEEDS_DIR   (writes SEEDS_DIR/booster_encap/)";

fn main() -> ExitCode {
    pathwise_core::fuzz_seeds::main(USAGE, write_seeds)
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
