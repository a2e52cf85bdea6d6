//! Counters: every packet a pipeline handles is counted, and every drop by its reason (the
//! seed's prototype counted nothing; its §5 measured from outside with ping and netperf, which
//! these counters let us cross-check).
//!
//! The datapath threads increment relaxed atomics (one writer per counter in practice, so no
//! contention); the management side reads a [`StatsReport`] at any time without stopping them.

use crate::wire::{BoosterId, EncapError};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

macro_rules! drop_reasons {
    ($($(#[$doc:meta])* $name:ident => $text:literal,)*) => {
        /// Why a packet was dropped.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum DropReason { $($(#[$doc])* $name,)* }
        impl DropReason {
            /// Every reason, in counter order.
            pub const ALL: &'static [DropReason] = &[$(DropReason::$name,)*];
            /// The name shown in `booster stats`.
            pub fn name(self) -> &'static str {
                match self { $(DropReason::$name => $text,)* }
            }
        }
    };
}

drop_reasons! {
    /// The datagram is shorter than the encapsulation header it announces.
    HeaderTruncated => "header_truncated",
    /// Unsupported encapsulation version.
    HeaderVersion => "header_version",
    /// Chain longer than the header allows.
    HeaderChainTooLong => "header_chain_too_long",
    /// Message type not known.
    UnknownMessageType => "unknown_message_type",
    /// The chain names a booster this gateway does not have.
    UnknownBooster => "unknown_booster",
    /// The receiver already tracks the maximum number of distinct chains.
    TooManyChains => "too_many_chains",
    /// Compressed data that does not decompress.
    Decompress => "decompress",
    /// A `zstd-stream` packet whose predecessor in its run is missing (lost or dropped): its
    /// history is gone (docs/booster-wire.md).
    HistoryGap => "history_gap",
    /// Compression or decompression output would not fit a packet buffer.
    TooLarge => "too_large",
    /// Encrypted payload shorter than nonce and tag.
    CryptoTruncated => "crypto_truncated",
    /// Authentication failed (forged, corrupted, or wrong key).
    AuthFailed => "auth_failed",
    /// Counter already seen or left of the replay window.
    Replay => "replay",
    /// The nonce carries this gateway's own sender id (a reflected packet).
    Reflected => "reflected",
    /// Encryption requested but no key configured.
    NoKey => "no_key",
    /// FEC header malformed or inconsistent with its group.
    FecMalformed => "fec_malformed",
    /// A packet from the tunnel device, or one deboosted from the peer, that is not IPv4 or
    /// IPv6.
    NotIp => "not_ip",
    /// A datagram whose UDP source is not a configured peer gateway (data and control alike).
    UnknownPeer => "unknown_peer",
    /// A datagram whose chain no policy in force accepts for its inner packet (or for any
    /// traffic, checked before deboosting).
    ChainNotAllowed => "chain_not_allowed",
    /// A datagram whose chain lacks `encrypt` for traffic an encrypting policy covers.
    Unencrypted => "unencrypted",
    /// A deboosted packet that no policy covers (policies are matched mirrored: see
    /// [`crate::admission`]).
    NoPolicy => "no_policy",
    /// A control message that does not parse.
    ControlMalformed => "control_malformed",
    /// Booster output exceeded the packet buffer.
    NoRoom => "no_room",
    /// The socket or device refused the packet.
    Io => "io",
    /// A frame from the tunnel device whose `virtio_net_hdr` is malformed or asks for a
    /// segmentation the gateway did not offer ([`crate::offload`]).
    Offload => "offload",
}

impl From<EncapError> for DropReason {
    fn from(e: EncapError) -> Self {
        match e {
            EncapError::Truncated(_) => DropReason::HeaderTruncated,
            EncapError::Version(_) => DropReason::HeaderVersion,
            EncapError::ChainTooLong(_) => DropReason::HeaderChainTooLong,
        }
    }
}

/// Per-booster counters.
#[derive(Debug, Default)]
pub struct BoosterCounters {
    /// Packets boosted (changed).
    pub boosted: AtomicU64,
    /// Packets passed unchanged and marked so (compression that did not shrink).
    pub passed: AtomicU64,
    /// Bytes into the booster on boost.
    pub bytes_in: AtomicU64,
    /// Bytes out of the booster on boost.
    pub bytes_out: AtomicU64,
    /// Extra packets emitted on boost (FEC parity).
    pub extra: AtomicU64,
    /// Packets deboosted.
    pub deboosted: AtomicU64,
    /// Packets recovered on deboost (FEC).
    pub recovered: AtomicU64,
}

/// Number of known booster ids (1..=6).
const KNOWN_BOOSTERS: usize = 7;

/// All counters of one gateway (both directions).
#[derive(Debug)]
pub struct Counters {
    /// Packets taken from the tunnel device.
    pub tun_in: AtomicU64,
    /// Datagrams sent to the peer.
    pub udp_out: AtomicU64,
    /// Bytes of datagrams sent to the peer.
    pub udp_out_bytes: AtomicU64,
    /// Bytes taken from the tunnel device.
    pub tun_in_bytes: AtomicU64,
    /// Datagrams received from the peer.
    pub udp_in: AtomicU64,
    /// Packets written to the tunnel device.
    pub tun_out: AtomicU64,
    /// Control messages received.
    pub control_in: AtomicU64,
    /// Boosted datagrams larger than the link MTU (sent; the kernel fragments them).
    pub over_mtu: AtomicU64,
    /// Policy snapshots the datapath switched to.
    pub snapshot_switches: AtomicU64,
    /// Super-segments (TSO/USO) read from the tunnel device and split into packets.
    pub tun_in_super: AtomicU64,
    /// Coalesced super-segments written to the tunnel device (GRO).
    pub tun_out_super: AtomicU64,
    boosters: [BoosterCounters; KNOWN_BOOSTERS],
    drops: Vec<AtomicU64>,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            tun_in: AtomicU64::new(0),
            udp_out: AtomicU64::new(0),
            udp_out_bytes: AtomicU64::new(0),
            tun_in_bytes: AtomicU64::new(0),
            udp_in: AtomicU64::new(0),
            tun_out: AtomicU64::new(0),
            control_in: AtomicU64::new(0),
            over_mtu: AtomicU64::new(0),
            snapshot_switches: AtomicU64::new(0),
            tun_in_super: AtomicU64::new(0),
            tun_out_super: AtomicU64::new(0),
            boosters: Default::default(),
            drops: DropReason::ALL.iter().map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl Counters {
    /// Count a drop.
    pub fn count_drop(&self, reason: DropReason) {
        if let Some(c) = self.drops.get(reason as usize) {
            c.fetch_add(1, Relaxed);
        }
    }

    /// Drops so far for `reason`.
    pub fn drops(&self, reason: DropReason) -> u64 {
        self.drops
            .get(reason as usize)
            .map_or(0, |c| c.load(Relaxed))
    }

    /// The counters of booster `id` (unknown ids share slot 0).
    pub fn booster(&self, id: BoosterId) -> &BoosterCounters {
        let i = usize::from(id.to_u8());
        &self.boosters[if i < KNOWN_BOOSTERS { i } else { 0 }]
    }

    /// A consistent-enough copy for display (each counter read once).
    pub fn report(&self) -> StatsReport {
        let boosters = (1..KNOWN_BOOSTERS as u8)
            .map(BoosterId::from_u8)
            .map(|id| {
                let c = self.booster(id);
                let l = |a: &AtomicU64| a.load(Relaxed);
                (
                    crate::booster::BoosterSpec::for_id(id)
                        .map(|s| s.to_string().split(':').next().unwrap_or("").to_string())
                        .unwrap_or_default(),
                    BoosterReport {
                        boosted: l(&c.boosted),
                        passed: l(&c.passed),
                        bytes_in: l(&c.bytes_in),
                        bytes_out: l(&c.bytes_out),
                        extra: l(&c.extra),
                        deboosted: l(&c.deboosted),
                        recovered: l(&c.recovered),
                    },
                )
            })
            .collect();
        let drops = DropReason::ALL
            .iter()
            .map(|&r| (r.name().to_string(), self.drops(r)))
            .collect();
        StatsReport {
            tun_in: self.tun_in.load(Relaxed),
            tun_in_bytes: self.tun_in_bytes.load(Relaxed),
            udp_out: self.udp_out.load(Relaxed),
            udp_out_bytes: self.udp_out_bytes.load(Relaxed),
            udp_in: self.udp_in.load(Relaxed),
            tun_out: self.tun_out.load(Relaxed),
            control_in: self.control_in.load(Relaxed),
            over_mtu: self.over_mtu.load(Relaxed),
            snapshot_switches: self.snapshot_switches.load(Relaxed),
            tun_in_super: self.tun_in_super.load(Relaxed),
            tun_out_super: self.tun_out_super.load(Relaxed),
            boosters,
            drops,
        }
    }
}

/// One booster's counters, copied.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct BoosterReport {
    /// Packets boosted.
    pub boosted: u64,
    /// Packets sent as is and marked.
    pub passed: u64,
    /// Bytes in on boost.
    pub bytes_in: u64,
    /// Bytes out on boost.
    pub bytes_out: u64,
    /// Extra packets (FEC parity).
    pub extra: u64,
    /// Packets deboosted.
    pub deboosted: u64,
    /// Packets recovered (FEC).
    pub recovered: u64,
}

/// All counters, copied; what `booster stats --json` prints.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct StatsReport {
    /// Packets from the tunnel device.
    pub tun_in: u64,
    /// Bytes from the tunnel device.
    pub tun_in_bytes: u64,
    /// Datagrams to the peer.
    pub udp_out: u64,
    /// Bytes of datagrams to the peer.
    pub udp_out_bytes: u64,
    /// Datagrams from the peer.
    pub udp_in: u64,
    /// Packets to the tunnel device.
    pub tun_out: u64,
    /// Control messages from the peer.
    pub control_in: u64,
    /// Datagrams above the link MTU.
    pub over_mtu: u64,
    /// Policy snapshots switched to.
    pub snapshot_switches: u64,
    /// Super-segments read from the tunnel device and split.
    #[serde(default)]
    pub tun_in_super: u64,
    /// Coalesced super-segments written to the tunnel device.
    #[serde(default)]
    pub tun_out_super: u64,
    /// Per booster, by name.
    pub boosters: BTreeMap<String, BoosterReport>,
    /// Drops by reason.
    pub drops: BTreeMap<String, u64>,
}

impl StatsReport {
    /// Total drops.
    pub fn total_drops(&self) -> u64 {
        self.drops.values().sum()
    }
}
