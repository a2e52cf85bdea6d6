//! Zstandard with a history across packets (`zstd-stream`): each packet is compressed as the
//! next block of a frame that began a few packets earlier, so it can refer back to what those
//! packets carried. Text that compresses 2.5× packet by packet compresses about 3.6× with 16
//! packets of history (docs/BENCHMARKS.md); what it costs is loss: a packet can only be
//! decompressed after every earlier packet of its run.
//!
//! The history is bounded by *runs*: the sender starts a new frame every `run` packets (and
//! after any packet it could not shrink), so one lost packet costs at most the rest of its
//! run — no feedback from the receiver is needed (PPP's stateful compressors instead ask the
//! sender to reset, RFC 1962 §2.2's Reset-Request; a run bound keeps the receiver silent and
//! the damage bounded even when the request would be lost too).
//!
//! Booster header, then the zstd block(s) of this packet:
//!
//! ```text
//! +-------------------------------+---------------+
//! | run (16)                      | index (8)     |
//! +-------------------------------+---------------+
//! ```
//!
//! Index 0 starts a run: a new zstd frame (its frame header is in this packet). Index `i > 0`
//! continues run `run`; the receiver decompresses it only right after index `i − 1` of the same
//! run, and otherwise drops it (`history_gap`) and every later packet of that run. A packet the
//! compressor could not shrink is sent as is with the stage's "passed" mark, like the other
//! compressors, and the run ends with it. The window is 2^17 bytes (enough for a run of 64
//! full packets); the receiver refuses frames that ask for more (`decompress`), so a forged
//! frame cannot make it allocate. Driven by the pipeline; nothing is allocated per packet once
//! the two contexts exist.

use crate::booster::{Booster, StageCtx, StageIo, Verdict};
use crate::packet::{MAX_PAYLOAD, Packet};
use crate::stats::DropReason;
use crate::wire::BoosterId;
use zstd::stream::raw::{Decoder, Encoder, InBuffer, Operation, OutBuffer};
use zstd::zstd_safe::{CParameter, DParameter};

/// Header length: run (2) and index (1).
pub const STREAM_HEADER: usize = 3;
/// Longest run a spec may ask for (the index is one byte; the window holds 64 full packets).
pub const MAX_RUN: u8 = 64;
/// log2 of the history window, both ends.
const WINDOW_LOG: u32 = 17;

/// The sending and receiving halves' state: a zstd context each, made on first use.
pub struct ZstdStream {
    level: i32,
    run_len: u8,
    encoder: Option<Encoder<'static>>,
    /// Run number of the packets being sent, and the index of the next one (0: start a run).
    tx: (u16, u8),
    decoder: Option<Decoder<'static>>,
    /// The run and index the receiver can decompress next, if its history is intact.
    rx_next: Option<(u16, u8)>,
}

impl std::fmt::Debug for ZstdStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZstdStream")
            .field("level", &self.level)
            .field("run_len", &self.run_len)
            .field("tx", &self.tx)
            .field("rx_next", &self.rx_next)
            .finish()
    }
}

impl ZstdStream {
    /// A booster at zstd `level` starting a new run every `run_len` packets (1..=[`MAX_RUN`]).
    pub fn new(level: i32, run_len: u8) -> Self {
        ZstdStream {
            level,
            run_len: run_len.clamp(1, MAX_RUN),
            encoder: None,
            tx: (0, 0),
            decoder: None,
            rx_next: None,
        }
    }

    fn encoder(&mut self) -> Option<&mut Encoder<'static>> {
        if self.encoder.is_none() {
            let mut e = Encoder::new(self.level).ok()?;
            e.set_parameter(CParameter::WindowLog(WINDOW_LOG)).ok()?;
            e.set_parameter(CParameter::ContentSizeFlag(false)).ok()?;
            e.set_parameter(CParameter::ChecksumFlag(false)).ok()?;
            e.set_parameter(CParameter::DictIdFlag(false)).ok()?;
            self.encoder = Some(e);
        }
        self.encoder.as_mut()
    }

    fn decoder(&mut self) -> Option<&mut Decoder<'static>> {
        if self.decoder.is_none() {
            let mut d = Decoder::new().ok()?;
            d.set_parameter(DParameter::WindowLogMax(WINDOW_LOG)).ok()?;
            self.decoder = Some(d);
        }
        self.decoder.as_mut()
    }
}

/// Feed all of `input` to `op` and flush it into `out`; the bytes written, or `None` if they
/// did not fit or the codec failed.
fn pump(op: &mut impl Operation, input: &[u8], out: &mut [u8], flush: bool) -> Option<usize> {
    let total = input.len();
    let mut input = InBuffer::around(input);
    let mut output = OutBuffer::around(out);
    while input.pos() < total {
        op.run(&mut input, &mut output).ok()?;
        if output.pos() == output.capacity() && input.pos() < total {
            return None;
        }
    }
    if flush {
        while op.flush(&mut output).ok()? > 0 {
            if output.pos() == output.capacity() {
                return None;
            }
        }
    } else if op.flush(&mut output).ok()? > 0 {
        // A decoder holding more output than a packet: not a packet we sent.
        return None;
    }
    Some(output.pos())
}

impl Booster for ZstdStream {
    fn id(&self) -> BoosterId {
        BoosterId::ZstdStream
    }

    fn overhead(&self) -> usize {
        STREAM_HEADER
    }

    fn boost(
        &mut self,
        cx: &StageCtx<'_>,
        pkt: &mut Packet,
        io: &mut StageIo<'_>,
    ) -> Result<Verdict, DropReason> {
        let (run_len, (mut run, mut index)) = (self.run_len, self.tx);
        let Some(enc) = self.encoder() else {
            pkt.marks |= 1 << cx.stage;
            return Ok(Verdict::Forward);
        };
        if index == 0 || index >= run_len {
            if enc.reinit().is_err() {
                pkt.marks |= 1 << cx.stage;
                return Ok(Verdict::Forward);
            }
            run = run.wrapping_add(1);
            index = 0;
        }
        let len = pkt.len();
        let mut out = io.pool.get();
        let room = &mut out.writable_tail()[..MAX_PAYLOAD];
        room[..2].copy_from_slice(&run.to_be_bytes());
        room[2] = index;
        match pump(enc, pkt.payload(), &mut room[STREAM_HEADER..], true) {
            Some(n) if n + STREAM_HEADER < len => {
                out.set_len(n + STREAM_HEADER);
                out.marks = pkt.marks;
                std::mem::swap(pkt, &mut out);
                self.tx = (run, index + 1);
            }
            // Sent as is: the compressor has taken the packet into its history, the receiver
            // will not, so the run ends here.
            _ => {
                pkt.marks |= 1 << cx.stage;
                self.tx = (run, 0);
            }
        }
        io.pool.put(out);
        Ok(Verdict::Forward)
    }

    fn deboost(
        &mut self,
        _: &StageCtx<'_>,
        pkt: &mut Packet,
        io: &mut StageIo<'_>,
    ) -> Result<Verdict, DropReason> {
        let Some(&[r0, r1, index]) = pkt.payload().get(..STREAM_HEADER) else {
            return Err(DropReason::Decompress);
        };
        let run = u16::from_be_bytes([r0, r1]);
        if index != 0 && self.rx_next != Some((run, index)) {
            // A packet before this one in its run never arrived (or failed): its history is
            // gone until the next run starts.
            self.rx_next = None;
            return Err(DropReason::HistoryGap);
        }
        let Some(dec) = self.decoder() else {
            return Err(DropReason::Decompress);
        };
        if index == 0 && dec.reinit().is_err() {
            self.rx_next = None;
            return Err(DropReason::Decompress);
        }
        let mut out = io.pool.get();
        let r = pump(
            dec,
            &pkt.payload()[STREAM_HEADER..],
            &mut out.writable_tail()[..MAX_PAYLOAD],
            false,
        );
        let r = match r {
            Some(n) => {
                out.set_len(n);
                out.marks = pkt.marks;
                std::mem::swap(pkt, &mut out);
                self.rx_next = index.checked_add(1).map(|i| (run, i));
                Ok(Verdict::Forward)
            }
            None => {
                self.rx_next = None;
                Err(DropReason::Decompress)
            }
        };
        io.pool.put(out);
        r
    }
}
