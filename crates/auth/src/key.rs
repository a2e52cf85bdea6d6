//! Keys, lifetimes and key chains.

use crate::algorithm::Algorithm;
use core::fmt;
use zeroize::Zeroizing;

/// The largest key identifier: RFC 2747 §2 carries it in 48 bits.
pub const MAX_KEY_ID: u64 = (1 << 48) - 1;

/// A validity period in wall-clock seconds since the Unix epoch.
///
/// The period is half-open: it contains `start` and excludes `end`, so a key whose lifetime ends
/// at `t` and its successor whose lifetime starts at `t` never both hold for the same second.
/// `end == u64::MAX` means "never ends" (and then `u64::MAX` itself is contained too). A lifetime
/// with `start >= end` (other than the never-ending case) is empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Lifetime {
    /// First second of validity (inclusive).
    pub start: u64,
    /// First second after validity (exclusive); `u64::MAX` for "forever".
    pub end: u64,
}

impl Lifetime {
    /// Valid at every time.
    pub const ALWAYS: Lifetime = Lifetime {
        start: 0,
        end: u64::MAX,
    };

    /// `[start, end)`.
    pub const fn new(start: u64, end: u64) -> Self {
        Lifetime { start, end }
    }

    /// Whether `now_secs` lies inside the lifetime.
    pub const fn contains(&self, now_secs: u64) -> bool {
        now_secs >= self.start && (now_secs < self.end || self.end == u64::MAX)
    }
}

impl Default for Lifetime {
    fn default() -> Self {
        Lifetime::ALWAYS
    }
}

/// Why [`Key::new`] refused a key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InvalidKey {
    /// The identifier does not fit the 48 bits of RFC 2747 §2.
    #[error("key id {0} does not fit in 48 bits")]
    IdTooLarge(u64),
    /// The secret is empty.
    #[error("key secret is empty")]
    EmptySecret,
}

/// A shared secret with its identifier, algorithm and lifetimes.
///
/// The secret is wiped from memory when the key is dropped, and `Debug` never shows it. The
/// HMAC is keyed once, when the key is made, and reused for every message.
#[derive(Clone)]
pub struct Key {
    id: u64,
    algorithm: Algorithm,
    secret: Zeroizing<Vec<u8>>,
    mac: crate::algorithm::PreparedMac,
    /// When the key may be used to sign outgoing messages.
    pub send: Lifetime,
    /// When the key is accepted on incoming messages.
    pub accept: Lifetime,
}

impl Key {
    /// A key valid for sending and accepting at all times.
    pub fn new(id: u64, algorithm: Algorithm, secret: &[u8]) -> Result<Key, InvalidKey> {
        if id > MAX_KEY_ID {
            return Err(InvalidKey::IdTooLarge(id));
        }
        if secret.is_empty() {
            return Err(InvalidKey::EmptySecret);
        }
        Ok(Key {
            id,
            algorithm,
            secret: Zeroizing::new(secret.to_vec()),
            mac: crate::algorithm::PreparedMac::new(algorithm, secret),
            send: Lifetime::ALWAYS,
            accept: Lifetime::ALWAYS,
        })
    }

    /// The same key with a send lifetime.
    pub fn with_send(mut self, send: Lifetime) -> Key {
        self.send = send;
        self
    }

    /// The same key with an accept lifetime.
    pub fn with_accept(mut self, accept: Lifetime) -> Key {
        self.accept = accept;
        self
    }

    /// The 48-bit key identifier.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The digest algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The secret (for computing digests; never log it).
    pub fn secret(&self) -> &[u8] {
        &self.secret
    }

    /// The digest of `parts` under this key.
    pub fn digest(&self, parts: &[&[u8]]) -> crate::DigestBytes {
        self.mac.digest(parts)
    }

    /// Whether `expected` is the digest of `parts` under this key (constant-time).
    pub fn verify(&self, parts: &[&[u8]], expected: &[u8]) -> bool {
        self.mac.verify(self.algorithm, parts, expected)
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key")
            .field("id", &self.id)
            .field("algorithm", &self.algorithm)
            .field("secret", &"<redacted>")
            .field("send", &self.send)
            .field("accept", &self.accept)
            .finish()
    }
}

/// Why [`KeyChain::accept_key`] refused a key id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// No key with this id in the chain.
    #[error("unknown key id")]
    Unknown,
    /// The key exists but `now` is outside its accept lifetime (expired or not yet valid).
    #[error("key outside its accept lifetime")]
    Expired,
}

/// Several keys for one interface or neighbour, with rollover.
///
/// Rollover works by overlapping lifetimes: give the new key a send lifetime starting at the
/// switch time and an accept lifetime starting somewhat earlier, and keep the old key's accept
/// lifetime running somewhat past the switch, so both ends accept both keys while clocks differ.
#[derive(Clone, Debug, Default)]
pub struct KeyChain {
    keys: Vec<Key>,
}

/// A second key with the same id was added to a [`KeyChain`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("duplicate key id {0}")]
pub struct DuplicateKeyId(pub u64);

impl KeyChain {
    /// An empty chain.
    pub fn new() -> Self {
        KeyChain::default()
    }

    /// Adds `key`; refuses a second key with the same id.
    pub fn insert(&mut self, key: Key) -> Result<(), DuplicateKeyId> {
        if self.keys.iter().any(|k| k.id == key.id) {
            return Err(DuplicateKeyId(key.id));
        }
        self.keys.push(key);
        Ok(())
    }

    /// Removes the key with this id, returning it.
    pub fn remove(&mut self, id: u64) -> Option<Key> {
        let pos = self.keys.iter().position(|k| k.id == id)?;
        Some(self.keys.remove(pos))
    }

    /// The key with this id, whatever its lifetimes.
    pub fn get(&self, id: u64) -> Option<&Key> {
        self.keys.iter().find(|k| k.id == id)
    }

    /// All keys, in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = &Key> {
        self.keys.iter()
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the chain has no keys.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The key to sign with at `now_secs`: among keys whose send lifetime contains `now_secs`,
    /// the one with the latest send start (the newest key wins during an overlap). Ties between
    /// equal starts go to the larger key id, so the choice never depends on insertion order.
    pub fn send_key(&self, now_secs: u64) -> Option<&Key> {
        self.keys
            .iter()
            .filter(|k| k.send.contains(now_secs))
            .max_by_key(|k| (k.send.start, k.id))
    }

    /// The key to verify a message signed with key `id` at `now_secs`.
    pub fn accept_key(&self, id: u64, now_secs: u64) -> Result<&Key, KeyError> {
        let key = self.get(id).ok_or(KeyError::Unknown)?;
        if key.accept.contains(now_secs) {
            Ok(key)
        } else {
            Err(KeyError::Expired)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: u64, send: (u64, u64), accept: (u64, u64)) -> Key {
        Key::new(id, Algorithm::HmacMd5, b"secret")
            .unwrap()
            .with_send(Lifetime::new(send.0, send.1))
            .with_accept(Lifetime::new(accept.0, accept.1))
    }

    #[test]
    fn lifetime_is_half_open() {
        let l = Lifetime::new(10, 20);
        assert!(!l.contains(9));
        assert!(l.contains(10));
        assert!(l.contains(19));
        assert!(!l.contains(20));
        assert!(Lifetime::ALWAYS.contains(0));
        assert!(Lifetime::ALWAYS.contains(u64::MAX));
        assert!(!Lifetime::new(5, 5).contains(5));
    }

    #[test]
    fn key_id_limited_to_48_bits_and_secret_nonempty() {
        assert!(Key::new(MAX_KEY_ID, Algorithm::HmacSha1, b"x").is_ok());
        assert_eq!(
            Key::new(MAX_KEY_ID + 1, Algorithm::HmacSha1, b"x").unwrap_err(),
            InvalidKey::IdTooLarge(MAX_KEY_ID + 1)
        );
        assert_eq!(
            Key::new(1, Algorithm::HmacSha1, b"").unwrap_err(),
            InvalidKey::EmptySecret
        );
    }

    #[test]
    fn debug_never_shows_secret() {
        let k = Key::new(7, Algorithm::HmacSha256, b"topsecretvalue").unwrap();
        let s = format!("{k:?}");
        assert!(!s.contains("topsecretvalue"), "{s}");
        assert!(!s.contains("116, 111, 112"), "{s}"); // "top" as bytes
        assert!(s.contains("redacted"));
        let chain = {
            let mut c = KeyChain::new();
            c.insert(k).unwrap();
            c
        };
        assert!(!format!("{chain:?}").contains("topsecretvalue"));
    }

    #[test]
    fn rollover_overlap_accepts_both_and_sends_newest() {
        let mut chain = KeyChain::new();
        // Old key: send [0, 1000), accept [0, 1100). New key: send [1000, ∞), accept [900, ∞).
        chain.insert(key(1, (0, 1000), (0, 1100))).unwrap();
        chain
            .insert(key(2, (1000, u64::MAX), (900, u64::MAX)))
            .unwrap();
        assert_eq!(chain.send_key(500).unwrap().id(), 1);
        assert_eq!(chain.send_key(999).unwrap().id(), 1);
        assert_eq!(chain.send_key(1000).unwrap().id(), 2);
        // Overlap [900, 1100): both accepted.
        for t in [900, 999, 1000, 1099] {
            assert!(chain.accept_key(1, t).is_ok(), "t={t}");
            assert!(chain.accept_key(2, t).is_ok(), "t={t}");
        }
        assert_eq!(chain.accept_key(2, 899).unwrap_err(), KeyError::Expired);
        assert_eq!(chain.accept_key(1, 1100).unwrap_err(), KeyError::Expired);
        assert_eq!(chain.accept_key(3, 1000).unwrap_err(), KeyError::Unknown);
    }

    #[test]
    fn send_key_prefers_latest_start_then_larger_id() {
        let mut chain = KeyChain::new();
        chain.insert(key(9, (0, 100), (0, 100))).unwrap();
        chain.insert(key(3, (50, 100), (0, 100))).unwrap();
        chain.insert(key(4, (50, 100), (0, 100))).unwrap();
        assert_eq!(chain.send_key(10).unwrap().id(), 9);
        assert_eq!(chain.send_key(60).unwrap().id(), 4);
        assert!(chain.send_key(100).is_none());
    }

    #[test]
    fn duplicate_ids_refused_and_remove_works() {
        let mut chain = KeyChain::new();
        chain.insert(key(1, (0, 10), (0, 10))).unwrap();
        assert_eq!(
            chain.insert(key(1, (0, 10), (0, 10))).unwrap_err(),
            DuplicateKeyId(1)
        );
        assert_eq!(chain.remove(1).unwrap().id(), 1);
        assert!(chain.is_empty());
        assert!(chain.remove(1).is_none());
    }
}
