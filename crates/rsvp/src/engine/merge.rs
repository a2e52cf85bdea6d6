//! Merging reservation requests (RFC 2205 §2.2 and §3.4; RFC 2210 §4 for IntServ flowspecs).
//!
//! Flowspecs merge to their least upper bound: the smallest flowspec at least as large as each.
//! Styles decide *which* requests merge: wildcard-filter shares one reservation among all
//! senders, shared-explicit among the listed senders, fixed-filter keeps one per sender.

use crate::wire::{FlowSpec, TokenBucket};

fn tb_lub(a: &TokenBucket, b: &TokenBucket) -> TokenBucket {
    TokenBucket {
        rate: a.rate.max(b.rate),
        bucket: a.bucket.max(b.bucket),
        peak: a.peak.max(b.peak),
        // RFC 2211 §5: the merged m is the smaller, M the larger.
        min_policed: a.min_policed.min(b.min_policed),
        max_packet: a.max_packet.max(b.max_packet),
    }
}

/// The least upper bound of two flowspecs (RFC 2210 §4; RFC 2212 §10 and RFC 2211 §10 merging).
///
/// Guaranteed service is treated as larger than Controlled-Load, so a mixed merge yields
/// Guaranteed with the merged TSpec.
pub fn lub(a: &FlowSpec, b: &FlowSpec) -> FlowSpec {
    use FlowSpec::*;
    match (a, b) {
        (ControlledLoad(x), ControlledLoad(y)) => ControlledLoad(tb_lub(x, y)),
        (
            Guaranteed {
                tspec: x,
                rate: rx,
                slack: sx,
            },
            Guaranteed {
                tspec: y,
                rate: ry,
                slack: sy,
            },
        ) => Guaranteed {
            tspec: tb_lub(x, y),
            rate: rx.max(*ry),
            slack: (*sx).min(*sy),
        },
        (Guaranteed { tspec, rate, slack }, ControlledLoad(c))
        | (ControlledLoad(c), Guaranteed { tspec, rate, slack }) => Guaranteed {
            tspec: tb_lub(tspec, c),
            rate: *rate,
            slack: *slack,
        },
    }
}

/// Merge a sequence of flowspecs; `None` for an empty sequence.
pub fn lub_all<'a>(it: impl IntoIterator<Item = &'a FlowSpec>) -> Option<FlowSpec> {
    it.into_iter()
        .fold(None, |acc, f| Some(acc.map_or(*f, |a| lub(&a, f))))
}

/// Whether `a` asks for more than `b` in any respect (so forwarding `a` upstream changes what
/// `b` already reserved there; RFC 2205 §3.1.4 "larger" for confirmations).
pub fn exceeds(a: &FlowSpec, b: &FlowSpec) -> bool {
    lub(a, b) != *b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tb(rate: f32, m: u32) -> TokenBucket {
        TokenBucket {
            rate,
            bucket: 100.0,
            peak: f32::INFINITY,
            min_policed: m,
            max_packet: 1500,
        }
    }

    #[test]
    fn lub_is_componentwise() {
        let a = FlowSpec::ControlledLoad(tb(10.0, 64));
        let b = FlowSpec::ControlledLoad(tb(20.0, 128));
        assert_eq!(lub(&a, &b), FlowSpec::ControlledLoad(tb(20.0, 64)));
        assert!(exceeds(&b, &a));
        assert!(!exceeds(&a, &lub(&a, &b)));
        let g = FlowSpec::Guaranteed {
            tspec: tb(5.0, 64),
            rate: 50.0,
            slack: 10,
        };
        let g2 = FlowSpec::Guaranteed {
            tspec: tb(5.0, 64),
            rate: 40.0,
            slack: 5,
        };
        assert_eq!(
            lub(&g, &g2),
            FlowSpec::Guaranteed {
                tspec: tb(5.0, 64),
                rate: 50.0,
                slack: 5
            }
        );
        assert!(matches!(lub(&a, &g), FlowSpec::Guaranteed { rate, .. } if rate == 50.0));
        assert_eq!(lub_all([&a, &b, &a]), Some(lub(&a, &b)));
        assert_eq!(lub_all([]), None);
    }
}
