//! Zstandard with a history across packets (`zstd-stream`): each packet is compressed as the
//! next block of a frame that began a few packets earlier, so it can refer back to what those
//! packets carried. Text that compresses 2.5× packet by packet compresses about 3.6× with 16
//! packets of history (docs/BENCHMARKS.md); what it costs is loss: a packet can only be
//! decompressed after every earlier packet of its run.
//!
//! The history is bounded by *runs*: the sender starts a new frame every `run` packets (and
//! after any packet it could not shrink), so one lost packet costs at most the rest of its
//! run — no feedback from the receiver is needed (a receiver could instead ask the sender to
//! reset, as PPP's compression control does; a run bound keeps the receiver silent and the
//! damage bounded even when such a request would be lost too). No RFC defines this booster:
//! the format is ours (docs/booster-wire.md), zstd's frames and blocks are the library's.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::PacketPool;
    use crate::wire::Chain;
    use pathwise_core::time::Instant;
    use proptest::prelude::*;

    fn chain() -> Chain {
        Chain::new(&[BoosterId::ZstdStream]).unwrap()
    }

    fn cx(chain: &Chain) -> StageCtx<'_> {
        StageCtx {
            now: Instant::ZERO,
            mtu: 1400,
            chain,
            stage: 0,
        }
    }

    /// Text of `len` bytes that says which packet it is.
    fn packet(n: u32, len: usize) -> Vec<u8> {
        let words = b"the booster keeps a history across the packets of a run ";
        let mut p: Vec<u8> = (0..len)
            .map(|i| words[(i + n as usize) % words.len()])
            .collect();
        p[..4].copy_from_slice(&n.to_be_bytes());
        p
    }

    /// What leaves the sender for each packet: its bytes, and whether it passed unshrunk.
    fn send(run: u8, packets: &[Vec<u8>]) -> Vec<(Vec<u8>, bool)> {
        let chain = chain();
        let mut z = ZstdStream::new(3, run);
        let (mut pool, mut extra) = (PacketPool::with_capacity(4), Vec::new());
        packets
            .iter()
            .map(|p| {
                let mut pkt = pool.get();
                pkt.set_payload(p).unwrap();
                let mut io = StageIo {
                    pool: &mut pool,
                    extra: &mut extra,
                };
                assert_eq!(
                    z.boost(&cx(&chain), &mut pkt, &mut io),
                    Ok(Verdict::Forward)
                );
                (pkt.payload().to_vec(), pkt.marks & 1 != 0)
            })
            .collect()
    }

    /// Deboost `datagrams` (those that passed are delivered as the pipeline would: the stage
    /// skipped) in one receiver: what each gave.
    fn receive(datagrams: &[(Vec<u8>, bool)]) -> Vec<Result<Vec<u8>, DropReason>> {
        let chain = chain();
        let mut z = ZstdStream::new(3, 16);
        let (mut pool, mut extra) = (PacketPool::with_capacity(4), Vec::new());
        datagrams
            .iter()
            .map(|(d, passed)| {
                if *passed {
                    return Ok(d.clone());
                }
                let mut pkt = pool.get();
                pkt.set_payload(d).unwrap();
                let mut io = StageIo {
                    pool: &mut pool,
                    extra: &mut extra,
                };
                z.deboost(&cx(&chain), &mut pkt, &mut io)
                    .map(|_| pkt.payload().to_vec())
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Whatever is lost, a packet comes out exactly when it arrived and the packet before
        /// it in its run came out (a run starts at index 0), and then byte for byte.
        #[test]
        fn a_packet_decodes_exactly_when_its_run_before_it_did(
            run in 1u8..=12,
            lens in proptest::collection::vec(60usize..1400, 1..80),
            lost in proptest::collection::vec(any::<bool>(), 80),
        ) {
            let packets: Vec<Vec<u8>> =
                lens.iter().enumerate().map(|(n, &l)| packet(n as u32, l)).collect();
            let wire = send(run, &packets);
            let arrived: Vec<usize> = (0..wire.len()).filter(|&i| !lost[i] || i == 0).collect();
            let got = receive(&arrived.iter().map(|&i| wire[i].clone()).collect::<Vec<_>>());
            // The model: (run, index) of the last packet decoded, per the wire's headers.
            let mut last: Option<(u16, u8)> = None;
            for (&i, g) in arrived.iter().zip(&got) {
                let (d, passed) = &wire[i];
                let header = (!passed).then(|| (u16::from_be_bytes([d[0], d[1]]), d[2]));
                let decodes = match header {
                    None => true,
                    Some((_, 0)) => true,
                    Some((r, x)) => last == Some((r, x - 1)),
                };
                if let Some(h) = header {
                    last = decodes.then_some(h);
                }
                if decodes {
                    prop_assert_eq!(g.as_ref().ok(), Some(&packets[i]), "packet {}", i);
                } else {
                    prop_assert_eq!(g.as_ref().err(), Some(&DropReason::HistoryGap), "packet {}", i);
                }
            }
        }

        /// Arbitrary bytes, alone or behind a header that continues a live run, are dropped or
        /// delivered; nothing panics, and the next run decodes again.
        #[test]
        fn deboosting_arbitrary_bytes_never_panics(
            junk in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 0..32),
        ) {
            let packets: Vec<Vec<u8>> = (0..6).map(|n| packet(n, 600)).collect();
            let wire = send(3, &packets);
            let mut mixed = vec![wire[0].clone()];
            for j in &junk {
                mixed.push((j.clone(), false));
                // Index 1 of the first run, then the junk as its block.
                let mut h = wire[0].0[..2].to_vec();
                h.push(1);
                h.extend_from_slice(j);
                mixed.push((h, false));
            }
            // The second run (packets 3–5) starts afresh.
            mixed.extend_from_slice(&wire[3..]);
            let got = receive(&mixed);
            let n = got.len();
            for (g, p) in got[n - 3..].iter().zip(&packets[3..]) {
                prop_assert_eq!(g.as_ref().ok(), Some(p));
            }
        }
    }
}
