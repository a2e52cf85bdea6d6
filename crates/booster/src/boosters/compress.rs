//! Compression boosters (seed §3.1): LZ4, zstd, and the seed's "dumb" variant.
//!
//! Each packet is compressed on its own (no state across packets, so a lost packet costs only
//! itself). A packet whose compressed form is not smaller is sent as is and its chain entry is
//! marked "passed" (see [`crate::wire`]), so the far side does not try to decompress it.
//! [`DumbLz4`] does all the compression work and then sends the original packet, which bounds the
//! cost of compression from above (seed §5.1–5.2, "Dumb-Lempel-Ziv"). Driven by the pipeline;
//! the output goes to a scratch buffer from the pool that then replaces the packet, so nothing is
//! allocated per packet.

use crate::booster::{Booster, StageCtx, StageIo, Verdict};
use crate::packet::{MAX_PAYLOAD, Packet, PacketPool};
use crate::stats::DropReason;
use crate::wire::BoosterId;

/// Compress `pkt` with `compress(input, output) -> Option<len>` into a scratch buffer (LZ4
/// wants room for its worst case, so the whole buffer is offered); swap it in if it shrank,
/// else mark the stage passed.
fn shrink_or_pass(
    cx: &StageCtx<'_>,
    pkt: &mut Packet,
    pool: &mut PacketPool,
    compress: impl FnOnce(&[u8], &mut [u8]) -> Option<usize>,
) {
    let len = pkt.len();
    let mut out = pool.get();
    match compress(pkt.payload(), &mut out.writable_tail()[..MAX_PAYLOAD]) {
        Some(n) if n < len => {
            out.set_len(n);
            out.marks = pkt.marks;
            std::mem::swap(pkt, &mut out);
        }
        _ => pkt.marks |= 1 << cx.stage,
    }
    pool.put(out);
}

/// Decompress `pkt` into a scratch buffer and swap it in.
fn expand(
    pkt: &mut Packet,
    pool: &mut PacketPool,
    decompress: impl FnOnce(&[u8], &mut [u8]) -> Result<usize, DropReason>,
) -> Result<Verdict, DropReason> {
    let mut out = pool.get();
    let r = decompress(pkt.payload(), &mut out.writable_tail()[..MAX_PAYLOAD]);
    if let Ok(n) = r {
        out.set_len(n);
        out.marks = pkt.marks;
        std::mem::swap(pkt, &mut out);
    }
    pool.put(out);
    r.map(|_| Verdict::Forward)
}

/// LZ4 block compression per packet.
#[derive(Debug, Default)]
pub struct Lz4;

impl Booster for Lz4 {
    fn id(&self) -> BoosterId {
        BoosterId::Lz4
    }
    fn boost(
        &mut self,
        cx: &StageCtx<'_>,
        pkt: &mut Packet,
        io: &mut StageIo<'_>,
    ) -> Result<Verdict, DropReason> {
        shrink_or_pass(cx, pkt, io.pool, |i, o| {
            lz4_flex::block::compress_into(i, o).ok()
        });
        Ok(Verdict::Forward)
    }
    fn deboost(
        &mut self,
        _: &StageCtx<'_>,
        pkt: &mut Packet,
        io: &mut StageIo<'_>,
    ) -> Result<Verdict, DropReason> {
        expand(pkt, io.pool, |i, o| {
            lz4_flex::block::decompress_into(i, o).map_err(|_| DropReason::Decompress)
        })
    }
}

/// The seed's "dumb" Lempel-Ziv booster: compresses with LZ4, then sends the original packet.
/// Deboosting is the identity.
#[derive(Debug, Default)]
pub struct DumbLz4 {
    /// Total compressed bytes produced (kept so the work cannot be optimised away).
    pub compressed_bytes: u64,
}

impl Booster for DumbLz4 {
    fn id(&self) -> BoosterId {
        BoosterId::DumbLz4
    }
    fn boost(
        &mut self,
        _: &StageCtx<'_>,
        pkt: &mut Packet,
        io: &mut StageIo<'_>,
    ) -> Result<Verdict, DropReason> {
        let mut out = io.pool.get();
        let n = lz4_flex::block::compress_into(pkt.payload(), out.writable_tail()).unwrap_or(0);
        self.compressed_bytes = self.compressed_bytes.wrapping_add(n as u64);
        io.pool.put(out);
        Ok(Verdict::Forward)
    }
    fn deboost(
        &mut self,
        _: &StageCtx<'_>,
        _: &mut Packet,
        _: &mut StageIo<'_>,
    ) -> Result<Verdict, DropReason> {
        Ok(Verdict::Forward)
    }
}

/// Zstandard per packet, with reused compression and decompression contexts. Frames omit the
/// content size, checksum and dictionary id to keep the per-packet overhead small.
pub struct Zstd {
    level: i32,
    compressor: Option<zstd::bulk::Compressor<'static>>,
    decompressor: Option<zstd::bulk::Decompressor<'static>>,
}

impl std::fmt::Debug for Zstd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zstd").field("level", &self.level).finish()
    }
}

impl Zstd {
    /// A zstd booster at `level` (contexts are created on first use).
    pub fn new(level: i32) -> Self {
        Zstd {
            level,
            compressor: None,
            decompressor: None,
        }
    }

    fn compressor(&mut self) -> Option<&mut zstd::bulk::Compressor<'static>> {
        if self.compressor.is_none() {
            let mut c = zstd::bulk::Compressor::new(self.level).ok()?;
            use zstd::zstd_safe::CParameter as P;
            c.set_parameter(P::ContentSizeFlag(false)).ok()?;
            c.set_parameter(P::ChecksumFlag(false)).ok()?;
            c.set_parameter(P::DictIdFlag(false)).ok()?;
            self.compressor = Some(c);
        }
        self.compressor.as_mut()
    }
}

impl Booster for Zstd {
    fn id(&self) -> BoosterId {
        BoosterId::Zstd
    }
    fn boost(
        &mut self,
        cx: &StageCtx<'_>,
        pkt: &mut Packet,
        io: &mut StageIo<'_>,
    ) -> Result<Verdict, DropReason> {
        match self.compressor() {
            Some(c) => shrink_or_pass(cx, pkt, io.pool, |i, o| c.compress_to_buffer(i, o).ok()),
            None => pkt.marks |= 1 << cx.stage,
        }
        Ok(Verdict::Forward)
    }
    fn deboost(
        &mut self,
        _: &StageCtx<'_>,
        pkt: &mut Packet,
        io: &mut StageIo<'_>,
    ) -> Result<Verdict, DropReason> {
        if self.decompressor.is_none() {
            self.decompressor = zstd::bulk::Decompressor::new().ok();
        }
        let Some(d) = self.decompressor.as_mut() else {
            return Err(DropReason::Decompress);
        };
        expand(pkt, io.pool, |i, o| {
            d.decompress_to_buffer(i, o)
                .map_err(|_| DropReason::Decompress)
        })
    }
}
