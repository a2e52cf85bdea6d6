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
//!
//! Unknown types are skipped. Driven by the gateway: it builds a report from
//! [`crate::pipeline::Receiver::take_loss_report`] and hands received ones to the adaptive policy.
//! Parsing is length-checked through [`pathwise_core::wire::Reader`] and never panics.

use pathwise_core::wire::{Reader, Truncated, Writer};

/// TLV type of a loss report.
pub const LOSS_REPORT: u8 = 1;

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
        let mut got = Vec::new();
        Control::parse_all(&v, |c| got.push(c)).unwrap();
        assert_eq!(got, vec![m, Control::Unknown(9)]);
        assert!(Control::parse_all(&v[..5], |_| {}).is_err());
        assert!(Control::parse_all(&[1, 2, 0, 0], |_| {}).is_err());
    }
}
