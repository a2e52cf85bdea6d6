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
    &["zstd-stream"],
    &["dumb"],
    &["encrypt"],
    &["fec:4:1"],
    &["lz4", "encrypt"],
    &["zstd", "encrypt", "fec:3:2"],
    &["fec:4:1", "encrypt"],
    &["null", "lz4", "encrypt", "fec"],
    &["zstd-stream:1:4", "encrypt"],
    &["lz4", "fec:2:1:2"],
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

/// A TCP segment from 10.1.0.1:40000 to 10.2.0.1:5201 (or 2001:db8::1 to 2001:db8::2 if `v6`)
/// with sequence number `seq`, TCP `flags` and `payload`, every checksum complete.
pub fn tcp(v6: bool, seq: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let l4_len = 20 + payload.len();
    let mut p = if v6 {
        let mut h = vec![0x60, 0, 0, 0];
        h.extend_from_slice(&(l4_len as u16).to_be_bytes());
        h.extend_from_slice(&[6, 64]);
        h.extend_from_slice(&[0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        h.extend_from_slice(&[0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        h
    } else {
        let mut h = vec![0x45, 0];
        h.extend_from_slice(&((20 + l4_len) as u16).to_be_bytes());
        h.extend_from_slice(&[0x12, 0x34, 0x40, 0, 64, 6, 0, 0, 10, 1, 0, 1, 10, 2, 0, 1]);
        let c = !crate::offload::fold(crate::offload::sum_bytes(0, &h));
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h
    };
    let l3 = p.len();
    p.extend_from_slice(&[0x9c, 0x40, 0x14, 0x51]);
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend_from_slice(&[0, 0, 0, 77, 5 << 4, flags, 0x01, 0xf6, 0, 0, 0, 0]);
    p.extend_from_slice(payload);
    let addrs = if v6 { &p[8..40] } else { &p[12..20] };
    let pseudo = crate::offload::sum_bytes(0, addrs) + 6 + l4_len as u64;
    let c = !crate::offload::fold(crate::offload::sum_bytes(pseudo, &p[l3..]));
    p[l3 + 16..l3 + 18].copy_from_slice(&c.to_be_bytes());
    p
}

/// A frame as a TUN device with offloads hands it over: a `virtio_net_hdr` asking for TCP
/// segmentation at `mss` and a [`tcp`] super-segment carrying `payload`.
pub fn tcp_super_frame(v6: bool, mss: u16, payload: &[u8]) -> Vec<u8> {
    use crate::offload::{F_NEEDS_CSUM, GsoType, VNET_HDR_LEN, VirtioNetHdr};
    let pkt = tcp(v6, 1000, 0x18, payload);
    let l3: u16 = if v6 { 40 } else { 20 };
    let mut frame = vec![0u8; VNET_HDR_LEN];
    let hdr = VirtioNetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: if v6 { GsoType::TcpV6 } else { GsoType::TcpV4 },
        ecn: false,
        hdr_len: l3 + 20,
        gso_size: mss,
        csum_start: l3,
        csum_offset: 16,
    };
    // VNET_HDR_LEN bytes: room for the header.
    let _ = hdr.emit(&mut frame);
    frame.extend_from_slice(&pkt);
    frame
}
