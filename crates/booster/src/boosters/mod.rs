//! The boosters (seed §3: the compression and encryption boosters; §1.1–1.2: FEC as the
//! transparent booster), and [`instantiate`], which makes one from its [`BoosterSpec`]. Each
//! is driven by the pipeline ([`crate::pipeline`]) through the [`Booster`] trait; state a
//! gateway's boosters share (the encryption key and counters) comes in a [`BoosterEnv`].

mod compress;
mod crypto;
mod fec;
mod null;

pub use compress::{DumbLz4, Lz4, Zstd};
pub use crypto::{
    CryptoContext, Encrypt, MAX_SENDERS, NONCE_LEN, REPLAY_WINDOW, ReplayWindow, TAG_LEN,
};
pub use fec::{FLUSH_AFTER, Fec, GROUP_SLOTS, HEADER_LEN as FEC_HEADER_LEN};
pub use null::Null;

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

/// Make a booster instance.
pub fn instantiate(spec: BoosterSpec, env: &BoosterEnv) -> Result<Box<dyn Booster>, BuildError> {
    Ok(match spec {
        BoosterSpec::Null => Box::new(Null),
        BoosterSpec::Lz4 => Box::new(Lz4),
        BoosterSpec::Zstd { level } => Box::new(Zstd::new(level)),
        BoosterSpec::DumbLz4 => Box::new(DumbLz4::default()),
        BoosterSpec::Encrypt => {
            Box::new(Encrypt::new(env.crypto.clone().ok_or(BuildError::NoKey)?))
        }
        BoosterSpec::Fec { k, m, depth } => Box::new(Fec::new(k, m, depth)),
    })
}
