//! IntServ objects carried by RSVP (RFC 2210 §3): SENDER_TSPEC, FLOWSPEC (Controlled-Load,
//! RFC 2211, and Guaranteed, RFC 2212) and ADSPEC.
//!
//! TYPES ARE FIXED where the engine uses them (TokenBucket, SenderTspec, FlowSpec and the Adspec
//! accessors); codec to be implemented.

/// A token bucket TSpec (RFC 2210 §3.1, parameter 127; RFC 2215 §3.6).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TokenBucket {
    /// Token bucket rate r, bytes per second.
    pub rate: f32,
    /// Token bucket size b, bytes.
    pub bucket: f32,
    /// Peak data rate p, bytes per second (may be +infinity).
    pub peak: f32,
    /// Minimum policed unit m, bytes.
    pub min_policed: u32,
    /// Maximum packet size M, bytes.
    pub max_packet: u32,
}

/// SENDER_TSPEC (C-Type 2): the sender's traffic description.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SenderTspec(pub TokenBucket);

/// FLOWSPEC (C-Type 2): a receiver's reservation request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FlowSpec {
    /// Controlled-Load service (service number 5; RFC 2210 §3.2).
    ControlledLoad(TokenBucket),
    /// Guaranteed service (service number 2; RFC 2210 §3.3): TSpec plus RSpec.
    Guaranteed {
        /// The TSpec.
        tspec: TokenBucket,
        /// RSpec rate R, bytes per second.
        rate: f32,
        /// RSpec slack term S, microseconds.
        slack: u32,
    },
}

impl FlowSpec {
    /// The bandwidth to reserve, in bytes per second: the token rate for Controlled-Load, the
    /// RSpec rate for Guaranteed.
    pub fn reserved_rate(&self) -> f32 {
        match self {
            FlowSpec::ControlledLoad(t) => t.rate,
            FlowSpec::Guaranteed { rate, .. } => *rate,
        }
    }
}

/// What one hop contributes to an ADSPEC as it travels downstream (RFC 2210 §3.3, RFC 2215 §3).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HopCharacteristics {
    /// Bandwidth of the outgoing link, bytes per second.
    pub bandwidth: f32,
    /// Latency of the outgoing link, microseconds.
    pub latency_us: u32,
    /// MTU of the outgoing link, bytes.
    pub mtu: u32,
    /// Guaranteed service rate-dependent error term C, bytes.
    pub c: u32,
    /// Guaranteed service rate-independent error term D, microseconds.
    pub d: u32,
}

/// ADSPEC (C-Type 2; RFC 2210 §3.3): the default general parameters fragment and optional
/// Guaranteed and Controlled-Load fragments.
///
/// Fields to be completed by the codec; the engine only calls [`Adspec::new_at_sender`] and
/// [`Adspec::compose`].
#[derive(Clone, Debug, PartialEq)]
pub struct Adspec {}
