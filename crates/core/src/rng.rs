//! Seeded randomness. Engines take a seed in their configuration and draw every random value
//! (refresh jitter, cookies, hash keys) from one [`SeededRng`], so a simulation replays exactly.

use rand::SeedableRng;

/// The generator engines use: small, fast, and reproducible from a `u64` seed.
pub type SeededRng = rand::rngs::SmallRng;

/// A generator seeded from `seed`.
pub fn seeded(seed: u64) -> SeededRng {
    SeededRng::seed_from_u64(seed)
}
