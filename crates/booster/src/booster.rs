//! The booster interface (seed §4.2.4) and the names, classes and parameters of boosters.
//!
//! The seed's kernel called a booster through two function pointers, `boost` (given the packet,
//! a 32 KB playground and the outgoing MTU) and `deboost`, and let it return a list of packets
//! (seed §4.2.4, Fig. 4–5). [`Booster`] is that interface: [`Booster::boost`] transforms a packet
//! in place, may absorb it, and may emit extra packets (a transparent FEC booster adds parity,
//! seed §1.2); [`Booster::deboost`] undoes it on the far side of a partitioned booster. Each
//! instance owns its state (the seed's playground). The pipeline drives boosters; a booster
//! never reads a clock — `now` arrives in the [`StageCtx`] — and asks for a wake-up through
//! [`Booster::poll_timeout`].

use crate::packet::{Packet, PacketPool};
use crate::stats::DropReason;
use crate::wire::{BoosterId, Chain};
use pathwise_core::time::Instant;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;
use thiserror::Error;

/// What the pipeline tells a booster about the packet it hands over.
#[derive(Clone, Copy, Debug)]
pub struct StageCtx<'a> {
    /// The driver's current time.
    pub now: Instant,
    /// MTU of the outgoing link, encapsulation excluded (seed §2.3: boosters that need whole
    /// packets are told the MTU "so it can act appropriately").
    pub mtu: usize,
    /// The chain the packet travels (marks of earlier stages included on deboost).
    pub chain: &'a Chain,
    /// This booster's position in the chain.
    pub stage: usize,
}

impl StageCtx<'_> {
    /// Associated data binding a packet to its chain: the booster ids and the "passed" marks
    /// (`marks`, the packet's) of the stages before this one, known to both sides here.
    pub fn binding(&self, marks: u8) -> [u8; 10] {
        let mut aad = [0u8; 10];
        aad[0] = self.chain.len() as u8;
        for (i, id) in self.chain.ids().iter().enumerate() {
            aad[1 + i] = id.to_u8();
        }
        aad[9] = marks & ((1u16 << self.stage.min(8)) - 1) as u8;
        aad
    }
}

/// What became of the packet handed to a booster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It continues (possibly transformed) to the next stage.
    Forward,
    /// The booster absorbed it (an FEC parity packet on deboost); the pipeline recycles it.
    Consume,
}

/// Where a booster takes scratch buffers from and puts extra packets.
#[derive(Debug)]
pub struct StageIo<'a> {
    /// Buffers to take and give back.
    pub pool: &'a mut PacketPool,
    /// Extra packets this stage emits; they continue at the next stage, after the packet that
    /// caused them.
    pub extra: &'a mut Vec<Packet>,
}

/// A protocol booster: one instance per direction per chain, owning its state.
pub trait Booster: Send + fmt::Debug {
    /// Its wire identifier.
    fn id(&self) -> BoosterId;
    /// The most bytes it adds to a packet (headers, tags); used to size the tunnel MTU.
    fn overhead(&self) -> usize {
        0
    }
    /// Boost one packet on the sending side.
    fn boost(
        &mut self,
        cx: &StageCtx<'_>,
        pkt: &mut Packet,
        io: &mut StageIo<'_>,
    ) -> Result<Verdict, DropReason>;
    /// Deboost one packet on the receiving side.
    fn deboost(
        &mut self,
        cx: &StageCtx<'_>,
        pkt: &mut Packet,
        io: &mut StageIo<'_>,
    ) -> Result<Verdict, DropReason>;
    /// When the booster wants [`Booster::handle_timeout`] called (FEC flushes a partial group).
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    /// Timer work; extra packets go to `io.extra` as for [`Booster::boost`].
    fn handle_timeout(&mut self, _cx: &StageCtx<'_>, _io: &mut StageIo<'_>) {}
}

/// Booster families, the unit of meta-policy rules (seed §1.1: "compression before
/// encryption").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// Null booster.
    Null,
    /// LZ4, zstd and the dumb LZ4 booster.
    Compression,
    /// AEAD encryption.
    Encryption,
    /// Forward error correction.
    Fec,
}

impl Class {
    /// Name used in rules.
    pub fn name(self) -> &'static str {
        match self {
            Class::Null => "null",
            Class::Compression => "compression",
            Class::Encryption => "encryption",
            Class::Fec => "fec",
        }
    }
}

impl FromStr for Class {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, SpecError> {
        Ok(match s {
            "null" => Class::Null,
            "compression" | "compress" => Class::Compression,
            "encryption" | "encrypt" => Class::Encryption,
            "fec" => Class::Fec,
            _ => return Err(SpecError::UnknownClass(s.to_string())),
        })
    }
}

/// Default zstd level for packets (fast; packets are small).
pub const ZSTD_DEFAULT_LEVEL: i32 = 1;
/// Default `zstd-stream` level: with a history, level 3 gains 7 % over level 1 on text
/// (docs/BENCHMARKS.md) and the link this booster is for is slow.
pub const ZSTD_STREAM_DEFAULT_LEVEL: i32 = 3;
/// Default packets per `zstd-stream` run: 16 keep 88 % of an unbounded history's gain and
/// bound what one loss costs to 15 packets.
pub const ZSTD_STREAM_DEFAULT_RUN: u8 = 16;
/// Default FEC group: this many data packets …
pub const FEC_DEFAULT_K: u8 = 4;
/// … protected by this many parity packets.
pub const FEC_DEFAULT_M: u8 = 1;
/// Largest FEC group (data packets).
pub const FEC_MAX_K: u8 = 32;
/// Most parity packets per group.
pub const FEC_MAX_M: u8 = 8;
/// Deepest FEC interleaving: groups filled round-robin at once, so a burst of up to
/// `depth × M` consecutive losses costs each group at most `M` packets. The receiver keeps
/// [`crate::boosters::GROUP_SLOTS`] groups, room for two blocks of this many.
pub const FEC_MAX_DEPTH: u8 = 8;

/// A booster with its parameters, as policies name it: `null`, `lz4`, `zstd[:LEVEL]`,
/// `zstd-stream[:LEVEL[:RUN]]`, `dumb`, `encrypt`, `fec[:K:M[:D]]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BoosterSpec {
    /// [`crate::boosters::Null`].
    Null,
    /// [`crate::boosters::Lz4`].
    Lz4,
    /// [`crate::boosters::Zstd`] at a level.
    Zstd {
        /// zstd compression level.
        level: i32,
    },
    /// [`crate::boosters::ZstdStream`] at a level, starting a new history every `run` packets.
    ZstdStream {
        /// zstd compression level.
        level: i32,
        /// Packets per run (1..=[`crate::boosters::MAX_RUN`]).
        run: u8,
    },
    /// [`crate::boosters::DumbLz4`].
    DumbLz4,
    /// [`crate::boosters::Encrypt`].
    Encrypt,
    /// [`crate::boosters::Fec`] with `k` data and `m` parity packets per group, `depth`
    /// groups interleaved (1: none).
    Fec {
        /// Data packets per group.
        k: u8,
        /// Parity packets per group.
        m: u8,
        /// Groups open at once, packets dealt to them round-robin.
        depth: u8,
    },
}

impl BoosterSpec {
    /// Its wire identifier.
    pub fn id(self) -> BoosterId {
        match self {
            BoosterSpec::Null => BoosterId::Null,
            BoosterSpec::Lz4 => BoosterId::Lz4,
            BoosterSpec::Zstd { .. } => BoosterId::Zstd,
            BoosterSpec::ZstdStream { .. } => BoosterId::ZstdStream,
            BoosterSpec::DumbLz4 => BoosterId::DumbLz4,
            BoosterSpec::Encrypt => BoosterId::ChaCha20Poly1305,
            BoosterSpec::Fec { .. } => BoosterId::Fec,
        }
    }

    /// The spec a receiver uses for a wire identifier (deboosting needs no parameters: they
    /// travel in each booster's own header). `None` for unknown identifiers.
    pub fn for_id(id: BoosterId) -> Option<Self> {
        Some(match id {
            BoosterId::Null => BoosterSpec::Null,
            BoosterId::Lz4 => BoosterSpec::Lz4,
            BoosterId::Zstd => BoosterSpec::Zstd {
                level: ZSTD_DEFAULT_LEVEL,
            },
            BoosterId::ZstdStream => BoosterSpec::ZstdStream {
                level: ZSTD_STREAM_DEFAULT_LEVEL,
                run: ZSTD_STREAM_DEFAULT_RUN,
            },
            BoosterId::DumbLz4 => BoosterSpec::DumbLz4,
            BoosterId::ChaCha20Poly1305 => BoosterSpec::Encrypt,
            BoosterId::Fec => BoosterSpec::Fec {
                k: FEC_DEFAULT_K,
                m: FEC_DEFAULT_M,
                depth: 1,
            },
            BoosterId::Unknown(_) => return None,
        })
    }

    /// Its family.
    pub fn class(self) -> Class {
        match self {
            BoosterSpec::Null => Class::Null,
            BoosterSpec::Lz4
            | BoosterSpec::Zstd { .. }
            | BoosterSpec::ZstdStream { .. }
            | BoosterSpec::DumbLz4 => Class::Compression,
            BoosterSpec::Encrypt => Class::Encryption,
            BoosterSpec::Fec { .. } => Class::Fec,
        }
    }

    /// Whether the far side must run a debooster (seed §1.2: non-transparent boosters are
    /// partitioned). FEC and dumb compression leave data packets as they are.
    pub fn transparent(self) -> bool {
        matches!(
            self,
            BoosterSpec::Null | BoosterSpec::DumbLz4 | BoosterSpec::Fec { .. }
        )
    }
}

impl fmt::Display for BoosterSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BoosterSpec::Null => f.write_str("null"),
            BoosterSpec::Lz4 => f.write_str("lz4"),
            BoosterSpec::Zstd { level } if *level == ZSTD_DEFAULT_LEVEL => f.write_str("zstd"),
            BoosterSpec::Zstd { level } => write!(f, "zstd:{level}"),
            BoosterSpec::ZstdStream { level, run }
                if *level == ZSTD_STREAM_DEFAULT_LEVEL && *run == ZSTD_STREAM_DEFAULT_RUN =>
            {
                f.write_str("zstd-stream")
            }
            BoosterSpec::ZstdStream { level, run } => write!(f, "zstd-stream:{level}:{run}"),
            BoosterSpec::DumbLz4 => f.write_str("dumb"),
            BoosterSpec::Encrypt => f.write_str("encrypt"),
            BoosterSpec::Fec { k, m, depth: 1 } => write!(f, "fec:{k}:{m}"),
            BoosterSpec::Fec { k, m, depth } => write!(f, "fec:{k}:{m}:{depth}"),
        }
    }
}

impl Serialize for BoosterSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for BoosterSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A booster name or its parameters did not parse.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum SpecError {
    /// Not a booster this gateway has.
    #[error(
        "unknown booster {0:?} (known: null, lz4, zstd[:LEVEL], zstd-stream[:LEVEL[:RUN]], dumb, encrypt, fec[:K:M[:D]])"
    )]
    UnknownBooster(String),
    /// Parameter missing, extra or out of range.
    #[error("bad parameters for {booster}: {reason}")]
    BadParameter {
        /// The booster.
        booster: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// Not a booster class.
    #[error("unknown booster class {0:?} (known: null, compression, encryption, fec)")]
    UnknownClass(String),
}

impl FromStr for BoosterSpec {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, SpecError> {
        let mut parts = s.trim().split(':');
        let name = parts.next().unwrap_or_default();
        let params: Vec<&str> = parts.collect();
        let bad =
            |booster: &'static str, reason: String| SpecError::BadParameter { booster, reason };
        let no_params = |booster: &'static str, spec: BoosterSpec| {
            if params.is_empty() {
                Ok(spec)
            } else {
                Err(bad(booster, "takes no parameters".into()))
            }
        };
        match name {
            "null" => no_params("null", BoosterSpec::Null),
            "lz4" => no_params("lz4", BoosterSpec::Lz4),
            "dumb" | "dumb-lz4" => no_params("dumb", BoosterSpec::DumbLz4),
            "encrypt" | "chacha20poly1305" => no_params("encrypt", BoosterSpec::Encrypt),
            "zstd" => match params.as_slice() {
                [] => Ok(BoosterSpec::Zstd {
                    level: ZSTD_DEFAULT_LEVEL,
                }),
                [l] => match l.parse::<i32>() {
                    Ok(level) if (-7..=22).contains(&level) && level != 0 => {
                        Ok(BoosterSpec::Zstd { level })
                    }
                    _ => Err(bad(
                        "zstd",
                        format!("level {l:?} is not in -7..=22 (not 0)"),
                    )),
                },
                _ => Err(bad("zstd", "expected zstd or zstd:LEVEL".into())),
            },
            "zstd-stream" => {
                let level = match params.first() {
                    None => ZSTD_STREAM_DEFAULT_LEVEL,
                    Some(l) => match l.parse::<i32>() {
                        Ok(level) if (-7..=22).contains(&level) && level != 0 => level,
                        _ => {
                            return Err(bad(
                                "zstd-stream",
                                format!("level {l:?} is not in -7..=22 (not 0)"),
                            ));
                        }
                    },
                };
                let run = match params.get(1) {
                    None => ZSTD_STREAM_DEFAULT_RUN,
                    Some(r) => match r.parse::<u8>() {
                        Ok(run) if (1..=crate::boosters::MAX_RUN).contains(&run) => run,
                        _ => {
                            return Err(bad(
                                "zstd-stream",
                                format!(
                                    "run {r:?} is not in 1..={} packets",
                                    crate::boosters::MAX_RUN
                                ),
                            ));
                        }
                    },
                };
                if params.len() > 2 {
                    return Err(bad(
                        "zstd-stream",
                        "expected zstd-stream[:LEVEL[:RUN]]".into(),
                    ));
                }
                Ok(BoosterSpec::ZstdStream { level, run })
            }
            "fec" => {
                let range = |what: &str, v: &str, max: u8| match v.parse::<u8>() {
                    Ok(n) if (1..=max).contains(&n) => Ok(n),
                    _ => Err(bad(
                        "fec",
                        format!("{what} must be in 1..={max}, got {v:?}"),
                    )),
                };
                match params.as_slice() {
                    [] => Ok(BoosterSpec::Fec {
                        k: FEC_DEFAULT_K,
                        m: FEC_DEFAULT_M,
                        depth: 1,
                    }),
                    [k, m] | [k, m, _] => Ok(BoosterSpec::Fec {
                        k: range("K", k, FEC_MAX_K)?,
                        m: range("M", m, FEC_MAX_M)?,
                        depth: match params.get(2) {
                            Some(d) => range("D (interleaving depth)", d, FEC_MAX_DEPTH)?,
                            None => 1,
                        },
                    }),
                    _ => Err(bad("fec", "expected fec, fec:K:M or fec:K:M:D".into())),
                }
            }
            _ => Err(SpecError::UnknownBooster(s.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_round_trip_through_text() {
        for s in [
            "null",
            "lz4",
            "zstd",
            "zstd:5",
            "dumb",
            "encrypt",
            "fec:4:1",
            "fec:8:2",
            "fec:10:3:4",
            "fec:32:8:8",
        ] {
            let spec: BoosterSpec = s.parse().unwrap();
            assert_eq!(spec.to_string(), s);
            assert_eq!(
                BoosterSpec::for_id(spec.id()).map(|x| x.id()),
                Some(spec.id())
            );
        }
        assert_eq!("fec".parse::<BoosterSpec>().unwrap().to_string(), "fec:4:1");
        // Depth 1 is no interleaving, written the short way.
        assert_eq!(
            "fec:10:3:1".parse::<BoosterSpec>().unwrap().to_string(),
            "fec:10:3"
        );
        for bad in [
            "",
            "gzip",
            "fec:0:1",
            "fec:4",
            "zstd:99",
            "lz4:1",
            "fec:4:9",
            "fec:10:3:0",
            "fec:10:3:9",
            "fec:10:3:x",
            "fec:10:3:4:1",
            "fec:33:1",
        ] {
            assert!(bad.parse::<BoosterSpec>().is_err(), "{bad}");
        }
    }
}
