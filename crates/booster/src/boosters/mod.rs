//! The boosters (seed §3: the compression and encryption boosters; §1.1–1.2: FEC as the
//! transparent booster), and [`instantiate`], which makes one from its [`BoosterSpec`]. Each
//! is driven by the pipeline ([`crate::pipeline`]) through the [`Booster`] trait; state a
//! gateway's boosters share (the encryption key and counters) comes in a [`BoosterEnv`].

mod compress;
mod crypto;
mod fec;
mod galois;
mod null;
mod stream;

pub use compress::{DumbLz4, Lz4, Zstd};
pub use crypto::{
    CryptoContext, Encrypt, LaneError, MAX_LANE_BASE_ID, MAX_LANES, MAX_SENDERS, NONCE_LEN,
    REPLAY_WINDOW, ReplayWindow, TAG_LEN, lane_sender_id,
};
pub use fec::{FLUSH_AFTER, Fec, GROUP_SLOTS, HEADER_LEN as FEC_HEADER_LEN};
pub use galois::Gf256;
pub use null::Null;
pub use stream::{MAX_RUN, STREAM_HEADER, ZstdStream};

use crate::booster::{Booster, BoosterSpec};
use std::sync::Arc;

/// What boosters share within one gateway (one per direction or both).
#[derive(Debug, Clone, Default)]
pub struct BoosterEnv {
    /// Key, sender id, nonce counter and replay window; `None` without a configured key.
    pub crypto: Option<Arc<CryptoContext>>,
}

/// A booster could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// Encryption without a key.
    #[error("booster encrypt needs a pre-shared key (psk in the gateway configuration)")]
    NoKey,
}

/// Make a booster instance (sending on lane 0).
pub fn instantiate(spec: BoosterSpec, env: &BoosterEnv) -> Result<Box<dyn Booster>, BuildError> {
    instantiate_on_lane(spec, env, 0)
}

/// Make a booster instance for the sender of `lane` (only encryption differs per lane: its
/// nonces carry the lane's sender id).
pub fn instantiate_on_lane(
    spec: BoosterSpec,
    env: &BoosterEnv,
    lane: u8,
) -> Result<Box<dyn Booster>, BuildError> {
    Ok(match spec {
        BoosterSpec::Null => Box::new(Null),
        BoosterSpec::Lz4 => Box::new(Lz4),
        BoosterSpec::Zstd { level } => Box::new(Zstd::new(level)),
        BoosterSpec::ZstdStream { level, run } => Box::new(ZstdStream::new(level, run)),
        BoosterSpec::DumbLz4 => Box::new(DumbLz4::default()),
        BoosterSpec::Encrypt => Box::new(Encrypt::on_lane(
            env.crypto.clone().ok_or(BuildError::NoKey)?,
            lane,
        )),
        BoosterSpec::Fec { k, m, depth } => Box::new(Fec::new(k, m, depth)),
    })
}
