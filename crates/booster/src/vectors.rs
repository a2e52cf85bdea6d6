//! Sample traffic for tests and fuzz seeds: the chains the pipeline tests run, IPv4 packets to
//! push through them, and the key both ends of a test link share. The `fuzz_seeds` example
//! boosts [`ipv4`] packets through every one of [`CHAINS`] as sender 1 (the `booster_encap`
//! fuzz target's receiver is sender 2 with the same [`KEY`]).

use crate::adaptive::AdaptiveConfig;
use crate::admission::{DEFAULT_GRACE, PolicyEpochs};
use crate::booster::{BoosterSpec, SpecError};
use crate::boosters::{BoosterEnv, CryptoContext};
use crate::policy::{MetaPolicy, Policy, PolicyError, PolicySnapshot};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;

/// The UDP address of the sending gateway of a test link (the receiver's configured peer).
pub const PEER: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 1), 7000));

/// The ChaCha20-Poly1305 key of every test gateway.
pub const KEY: [u8; 32] = [7; 32];

/// Where the encryption counter of [`env()`] starts. A real gateway starts at the wall-clock time
/// in nanoseconds; a fixed start makes boosted datagrams the same on every run.
pub const COUNTER_START: u64 = 1_000_000;

/// A gateway's environment with [`KEY`], sending as `sender_id`.
pub fn env(sender_id: u32) -> BoosterEnv {
    BoosterEnv {
        crypto: Some(Arc::new(CryptoContext::new(&KEY, sender_id, COUNTER_START))),
    }
}

/// Booster chains as configuration writes them: none, each booster alone, and stacks of
/// compression, encryption and FEC in either order.
pub const CHAINS: &[&[&str]] = &[
    &[],
    &["null"],
    &["lz4"],
    &["zstd"],
    &["zstd:9"],
    &["dumb"],
    &["encrypt"],
    &["fec:4:1"],
    &["lz4", "encrypt"],
    &["zstd", "encrypt", "fec:3:2"],
    &["fec:4:1", "encrypt"],
    &["null", "lz4", "encrypt", "fec"],
];

/// Why [`snapshot`] could not build a snapshot.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// A booster spec did not parse.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The chain breaks the default meta-policy.
    #[error(transparent)]
    Policy(#[from] PolicyError),
}

/// A snapshot of one policy, `default`: everything to 10.2.0.0/16 (where [`ipv4`] sends)
/// through `chain`, under the default meta-policy, with a key.
pub fn snapshot(generation: u64, chain: &[&str]) -> Result<PolicySnapshot, SnapshotError> {
    let chain = chain
        .iter()
        .map(|s| s.parse::<BoosterSpec>())
        .collect::<Result<Vec<_>, _>>()?;
    let policy = Policy {
        name: "default".into(),
        dst: ipnet::IpNet::V4(ipnet::Ipv4Net::new_assert([10, 2, 0, 0].into(), 16)),
        src: None,
        chain,
    };
    Ok(PolicySnapshot::build(
        generation,
        vec![policy],
        MetaPolicy::default(),
        true,
    )?)
}

/// The receiving gateway's own snapshot for the traffic of [`snapshot`]: policy `default`
/// towards 10.1.0.0/16 (where [`ipv4`] comes from) through `chain`. Admission matches policies
/// mirrored, so this is the policy that accepts what [`snapshot`] sends.
pub fn peer_snapshot(generation: u64, chain: &[&str]) -> Result<PolicySnapshot, SnapshotError> {
    let mut snap = snapshot(generation, chain)?.policies().to_vec();
    for p in &mut snap {
        p.dst = ipnet::IpNet::V4(ipnet::Ipv4Net::new_assert([10, 1, 0, 0].into(), 16));
    }
    Ok(PolicySnapshot::build(
        generation,
        snap,
        MetaPolicy::default(),
        true,
    )?)
}

/// [`peer_snapshot`] as the receiver's policies in force, with the default grace period and no
/// adaptive policy.
pub fn peer_policies(chain: &[&str]) -> Result<PolicyEpochs, SnapshotError> {
    Ok(PolicyEpochs::new(
        Arc::new(peer_snapshot(1, chain)?),
        DEFAULT_GRACE,
        &AdaptiveConfig::default(),
    ))
}

/// A packet of `len` bytes (at least 24) from 10.1.0.1 to 10.2.0.1 with `n` after the IPv4
/// header, whose other fields are zero; the payload is English text if `text` (compressible),
/// else pseudo-random bytes seeded by `n`.
pub fn ipv4(len: usize, n: u32, text: bool) -> Vec<u8> {
    let mut p = vec![0u8; len.max(24)];
    p[0] = 0x45;
    p[12..16].copy_from_slice(&[10, 1, 0, 1]);
    p[16..20].copy_from_slice(&[10, 2, 0, 1]);
    p[20..24].copy_from_slice(&n.to_be_bytes());
    let mut x = n.wrapping_mul(2654435761) | 1;
    for (i, b) in p[24..].iter_mut().enumerate() {
        *b = if text {
            b"the quick brown fox jumps over the lazy dog "[i % 44]
        } else {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        };
    }
    p
}
