//! Writes the seeds of the `booster_encap` fuzz target: four packets (text and random, 60 to
//! 660 bytes) boosted through each of [`vectors::CHAINS`] by a fresh sender, every datagram that
//! comes out (FEC parity included) in a file `NNN-CHAIN.bin`, and a control message with a loss
//! report. Datagrams are encrypted with the key the fuzz target's receiver holds. And the seeds
//! of `booster_offload`: TUN frames, a run of segments and a `UDP_GRO` control buffer.
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
use pathwise_booster::gro;
use pathwise_booster::offload::{VNET_HDR_LEN, split};
use pathwise_booster::packet::PacketPool;
use pathwise_booster::pipeline::{Sender, encode_control};
use pathwise_booster::stats::Counters;
use pathwise_booster::vectors::{self, CHAINS};
use pathwise_core::time::Instant;

const USAGE: &str = "usage: fuzz_seeds SEEDS_DIR   (writes SEEDS_DIR/booster_encap/ and SEEDS_DIR/booster_offload/)";

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
    dir.write("control.bin", &control)?;
    offload_seeds(root)
}

/// `booster_offload`: frames as the TUN device hands them over (TCP super-segments over IPv4
/// and IPv6, a whole packet), a run of two coalescable segments in the target's
/// length-prefixed form, and a `UDP_GRO` control buffer.
fn offload_seeds(root: &Path) -> Result<(), String> {
    let dir = SeedDir::create(root, "booster_offload")?;
    let text = vectors::ipv4(4000, 0, true);
    let mut frames = vec![
        (
            "tcp4-super.bin",
            vectors::tcp_super_frame(false, 1000, &text[..3500]),
        ),
        (
            "tcp6-super.bin",
            vectors::tcp_super_frame(true, 1200, &text),
        ),
        (
            "tcp4-small.bin",
            vectors::tcp_super_frame(false, 100, &text[..250]),
        ),
    ];
    let mut plain = vec![0u8; VNET_HDR_LEN];
    plain.extend_from_slice(&vectors::tcp(false, 5, 0x10, b"hello"));
    frames.push(("tcp4-whole.bin", plain));
    for (name, frame) in &frames {
        let mut out = Vec::new();
        split(frame, &mut PacketPool::default(), &mut out)
            .map_err(|e| format!("seed {name} does not split: {e}"))?;
        dir.write(name, frame)?;
    }
    let mut run = Vec::new();
    for seq in [1000u32, 1100] {
        let seg = vectors::tcp(false, seq, 0x10, &text[..100]);
        run.push(u8::try_from(seg.len()).map_err(|_| "segment longer than 255 bytes")?);
        run.extend_from_slice(&seg);
    }
    dir.write("run-two-segments.bin", &run)?;
    let mut control = Vec::new();
    gro::emit_segment_size(1448, &mut control);
    dir.write("gro-control.bin", &control)
}
