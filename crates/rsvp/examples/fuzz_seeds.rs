//! Writes the seeds of the `rsvp_message` fuzz target: every message of
//! [`vectors::ALL`](pathwise_rsvp::wire::message::vectors::ALL), one file each, and the KOM/DRAGON
//! messages of [`vectors::kom::ALL`](pathwise_rsvp::wire::message::vectors::kom::ALL), and
//! signed messages a sharded node's dispatcher cuts (acknowledgements for three shards), under
//! the target's key, so the fuzzer starts from messages whose parts are verified and signed
//! again.
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
    for (name, bytes) in signed_cuts() {
        dir.write(&format!("{name}.bin"), &bytes)?;
    }
    Ok(())
}

/// Signed messages carrying acknowledgements of identifiers that shards 0, 1 and 2 of a
/// three-shard node chose (the shard in the low bits, `MessageIdSpace`): an Ack, and a Path
/// of the vectors with them piggybacked. Signed with the fuzz target's key (id 1, HMAC-MD5,
/// "fuzz").
fn signed_cuts() -> Vec<(&'static str, Vec<u8>)> {
    use pathwise_rsvp::wire::message::{Ack, Refresh};
    use pathwise_rsvp::wire::te::{AckKind, MessageIdAck};
    use pathwise_rsvp::wire::{Message, integrity::sign};
    let key = pathwise_auth::Key::new(1, pathwise_auth::Algorithm::HmacMd5, b"fuzz")
        .expect("a valid key");
    let acks: Vec<MessageIdAck> = (0..3)
        .map(|s| MessageIdAck {
            kind: AckKind::Ack,
            flags: 0,
            epoch: 7,
            message_id: (9 << 2) | s,
        })
        .collect();
    let refresh = Refresh {
        acks,
        message_id: None,
    };
    let path = ALL
        .iter()
        .find_map(|(_, b)| match Message::parse(b) {
            Ok((_, m @ Message::Path(_))) => Some(m),
            _ => None,
        })
        .expect("a Path among the vectors");
    let mut out = Vec::new();
    for (name, msg) in [
        (
            "signed-ack-three-shards",
            Message::Ack(Ack { integrity: None }),
        ),
        ("signed-path-acks-three-shards", path),
    ] {
        let mut b = Vec::new();
        msg.emit_with(1, 0, &refresh, &mut b);
        sign(&mut b, &key, 1 << 32, 1);
        out.push((name, b));
    }
    out
}
