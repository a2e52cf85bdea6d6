//! Writes the seeds of the `gist_message`, `gist_ipc_frame`, `gist_sim_segment` and
//! `gist_ping_message` fuzz targets: the captured
//! messages of [`wire::vectors::CAPTURES`](pathwise_gist::wire::vectors::CAPTURES) as
//! `capture_NAME.bin`, the hand-built Queries as `query.bin` and `query_cmode.bin` (datagrams),
//! and each frame of [`ipc::vectors::frames`](pathwise_gist::ipc::vectors::frames) as
//! `NAME.bin`, then all of them in one `stream.bin`, and the version 2 encodings of
//! [`ipc::vectors::v2_frames`](pathwise_gist::ipc::vectors::v2_frames) as `v2_NAME.bin`;
//! one stream-adapter segment of each kind as `KIND.bin`, and an opening, data and a reset from
//! one peer in the target's length-prefixed form as `exchange.bin`; a ping request and a reply
//! with hops as `request.bin` and `reply.bin`.
//!
//! `fuzz/run.sh --seeds` runs this (and the other crates' `fuzz_seeds` examples); by hand, from
//! the repository root:
//!
//! ```sh
//! cargo run -q -p pathwise-gist --example fuzz_seeds -- fuzz/seeds
//! ```
//!
//! creates `fuzz/seeds/gist_message/`, `gist_ipc_frame/`, `gist_sim_segment/` and
//! `gist_ping_message/`, writes the seeds there
//! and lists each file it wrote.

use pathwise_core::fuzz_seeds::SeedDir;
use std::path::Path;
use std::process::ExitCode;

use pathwise_gist::{ipc, wire};

const USAGE: &str = "usage: fuzz_seeds SEEDS_DIR   (writes SEEDS_DIR/gist_message/, \
                     gist_ipc_frame/, gist_sim_segment/ and gist_ping_message/)";

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
    dir.write("stream.bin", &stream)?;

    use pathwise_gist::MaTransport;
    use pathwise_gist::sim_stream::{Segment, SegmentKind};
    let dir = SeedDir::create(root, "gist_sim_segment")?;
    let seg = |kind, seq, ack, payload| {
        Segment {
            kind,
            transport: MaTransport::Tcp,
            seq,
            ack,
            payload,
        }
        .emit()
    };
    let kinds = [
        ("syn", SegmentKind::Syn),
        ("syn_ack", SegmentKind::SynAck),
        ("data", SegmentKind::Data),
        ("ack", SegmentKind::Ack),
        ("fin", SegmentKind::Fin),
        ("rst", SegmentKind::Rst),
    ];
    for (name, kind) in kinds {
        let payload: &[u8] = if kind == SegmentKind::Data {
            b"\x01\x00\x00\x01gist"
        } else {
            &[]
        };
        dir.write(&format!("{name}.bin"), &seg(kind, 1000, 2000, payload))?;
    }
    // The target's form: two length bytes per segment; a first byte 2k+1 builds kind k with a
    // valid checksum from the fields that follow (seq, ack, payload).
    let mut exchange = Vec::new();
    for (kind, seq, ack, payload) in [
        (0u8, 1000u32, 0u32, &b""[..]),
        (3, 1001, 0, b""),
        (2, 1001, 0, b"\x01\x00\x00\x01gist"),
        (5, 1002, 0, b""),
    ] {
        let mut chunk = vec![2 * kind + 1];
        chunk.extend_from_slice(&seq.to_be_bytes());
        chunk.extend_from_slice(&ack.to_be_bytes());
        chunk.extend_from_slice(payload);
        exchange.extend_from_slice(&(chunk.len() as u16).to_be_bytes());
        exchange.extend_from_slice(&chunk);
    }
    dir.write("exchange.bin", &exchange)?;

    use pathwise_core::time::Instant;
    use pathwise_gist::nslp::ping::{PingHop, PingKind, PingMessage};
    let dir = SeedDir::create(root, "gist_ping_message")?;
    let request = PingMessage {
        kind: PingKind::Request,
        seq: 1,
        sent_at: Instant::from_millis(5),
        hops: Vec::new(),
    };
    dir.write("request.bin", &request.emit())?;
    let reply = PingMessage {
        kind: PingKind::Reply,
        hops: vec![
            PingHop {
                addr: "10.0.0.1".parse().expect("address"),
                timestamp: Instant::from_millis(6),
            },
            PingHop {
                addr: "fd00::2".parse().expect("address"),
                timestamp: Instant::from_millis(7),
            },
        ],
        ..request
    };
    dir.write("reply.bin", &reply.emit())
}
