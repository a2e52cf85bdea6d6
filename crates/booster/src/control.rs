//! Gateway-to-gateway control messages: the payload of an encapsulated datagram of type
//! [`crate::wire::MessageType::Control`] (chain length zero).
//!
//! The adaptive policy (seed §7) needs the loss the *peer* sees on the link, since only the
//! receiver can count gaps in the link sequence numbers. Each gateway periodically reports
//! what it received to the other. TLVs, each `type (8 bits), length (8 bits), value`:
//!
//! | type | name | value |
//! |---|---|---|
//! | 1 | loss report | datagrams received (32 bits), datagrams expected (32 bits) over the last interval |
//! | 2 | timestamp | the sender's clock (64 bits, ns since it started) when it sent this |
//! | 3 | timestamp echo | a received timestamp (64 bits) and the receiver's clock when it arrived (64 bits) |
//!
//! Types 2 and 3 let the congestion-aware adaptive policy (seed §7, after Feldmeier) measure the
//! one-way delay of the link as the peer sees it: the difference of the two clocks is the delay
//! plus an unknown constant offset, so only its rise above the lowest seen (the queue) is used
//! ([`crate::congestion::DelayMeter`]). Gateways that do not know them skip them.
//!
//! Unknown types are skipped. Driven by the gateway: it builds a report from
//! [`crate::pipeline::Receiver::take_loss_report`] and hands received ones to the adaptive policy.
//! Parsing is length-checked through [`pathwise_core::wire::Reader`] and never panics.

use pathwise_core::wire::{Reader, Truncated, Writer};

/// TLV type of a loss report.
pub const LOSS_REPORT: u8 = 1;
/// TLV type of a timestamp (a delay probe).
pub const TIMESTAMP: u8 = 2;
/// TLV type of a timestamp echo (the answer to a probe).
pub const TIMESTAMP_ECHO: u8 = 3;

/// One control TLV.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// What the sender of this message received from us over its last interval.
    LossReport {
        /// Datagrams received.
        received: u32,
        /// Datagrams expected from the sequence numbers.
        expected: u32,
    },
    /// A delay probe: the sender's clock when it sent it, in nanoseconds since it started.
    Timestamp {
        /// Sender's clock.
        sent: u64,
    },
    /// The answer to a [`Control::Timestamp`]: its value and the answering gateway's clock
    /// when the probe arrived.
    TimestampEcho {
        /// The probe's timestamp (the prober's clock).
        sent: u64,
        /// When it arrived (the answering gateway's clock).
        received: u64,
    },
    /// A TLV type this implementation does not know (skipped).
    Unknown(u8),
}

impl Control {
    /// Parse every TLV in `buf`, calling `f` for each.
    pub fn parse_all(buf: &[u8], mut f: impl FnMut(Control)) -> Result<(), Truncated> {
        let mut r = Reader::new(buf);
        while !r.is_empty() {
            let t = r.u8()?;
            let len = usize::from(r.u8()?);
            let mut v = Reader::new(r.bytes(len)?);
            f(match t {
                LOSS_REPORT => Control::LossReport {
                    received: v.u32()?,
                    expected: v.u32()?,
                },
                TIMESTAMP => Control::Timestamp { sent: v.u64()? },
                TIMESTAMP_ECHO => Control::TimestampEcho {
                    sent: v.u64()?,
                    received: v.u64()?,
                },
                t => Control::Unknown(t),
            });
        }
        Ok(())
    }

    /// Append this TLV (unknown ones are written empty).
    pub fn emit(&self, w: &mut Writer<'_>) {
        match *self {
            Control::LossReport { received, expected } => {
                w.u8(LOSS_REPORT);
                w.u8(8);
                w.u32(received);
                w.u32(expected);
            }
            Control::Timestamp { sent } => {
                w.u8(TIMESTAMP);
                w.u8(8);
                w.u64(sent);
            }
            Control::TimestampEcho { sent, received } => {
                w.u8(TIMESTAMP_ECHO);
                w.u8(16);
                w.u64(sent);
                w.u64(received);
            }
            Control::Unknown(t) => {
                w.u8(t);
                w.u8(0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let mut v = Vec::new();
        let m = Control::LossReport {
            received: 95,
            expected: 100,
        };
        m.emit(&mut Writer::new(&mut v));
        Control::Unknown(9).emit(&mut Writer::new(&mut v));
        let probe = Control::Timestamp { sent: 1 << 40 };
        let echo = Control::TimestampEcho {
            sent: 1 << 40,
            received: 7,
        };
        probe.emit(&mut Writer::new(&mut v));
        echo.emit(&mut Writer::new(&mut v));
        let mut got = Vec::new();
        Control::parse_all(&v, |c| got.push(c)).unwrap();
        assert_eq!(got, vec![m, Control::Unknown(9), probe, echo]);
        // A probe cut short is malformed, not read as zero.
        let n = v.len();
        assert!(Control::parse_all(&v[..n - 1], |_| {}).is_err());
        assert!(Control::parse_all(&v[..5], |_| {}).is_err());
        assert!(Control::parse_all(&[1, 2, 0, 0], |_| {}).is_err());
    }
}
