//! Protocol-independent message integrity for pathwise (RFC 2747, RFC 3097).
//!
//! This crate holds the parts of RSVP cryptographic authentication that do not depend on the
//! RSVP wire format, so that other protocols can sign their messages too:
//!
//! * [`Algorithm`], [`digest`] and [`verify`]: keyed digests (HMAC-MD5, the RFC 2747 mandatory
//!   algorithm, plus HMAC-SHA-1, HMAC-RIPEMD-160 and the HMAC-SHA-2 family) over a message given
//!   as several slices, compared in constant time.
//! * [`Key`], [`Lifetime`] and [`KeyChain`]: keys with 48-bit identifiers (RFC 2747 §2), send and
//!   accept lifetimes, rollover, and loading from a hex key file that must not be readable by
//!   group or others ([`load_key_file`]).
//! * [`SequenceNumbers`]: the time-based 64-bit sending sequence of RFC 2747 §3, strictly
//!   increasing per key and across restarts.
//! * [`ReplayWindow`] and [`ReplayTable`]: receive-side replay and reordering handling per
//!   (sender, key id) as RFC 2747 §4.2 describes.
//! * [`integrity`]: the per-interface [`Policy`] (off / accept / require), the [`Receiver`] that
//!   checks a received message before anything acts on it (key, replay window, digest, and the
//!   §4.3 challenge/response that establishes a window safely), and the [`Sender`] that picks
//!   the send key and its next sequence number. A protocol codec supplies the object's fields
//!   and the bytes as digested.
//!
//! Everything here is pure: no sockets, no threads and no clock reads. Wall-clock time is passed
//! in as seconds since the Unix epoch.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod algorithm;
pub mod integrity;
mod key;
mod keyfile;
mod replay;
mod seq;

pub use algorithm::{Algorithm, DigestBytes, MAX_DIGEST_LEN, UnknownAlgorithm, digest, verify};
pub use integrity::{Accepted, Mode, Policy, Presented, Receiver, Reject, Sender, SharedSequences};
pub use key::{DuplicateKeyId, InvalidKey, Key, KeyChain, KeyError, Lifetime, MAX_KEY_ID};
pub use keyfile::{KeyFileError, load_key_file, parse_key_file};
pub use replay::{MAX_REPLAY_WINDOW, REPLAY_WINDOW, ReplayOutcome, ReplayTable, ReplayWindow};
pub use seq::SequenceNumbers;
