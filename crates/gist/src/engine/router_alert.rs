//! Which Router Alert value a Q-mode message carries: RFC 5971 §5.3.2 has Queries "include" a
//! Router Alert Option "to assist the peer in intercepting the message depending on the
//! NSLPID" (§5.3.2.1, §5.3.2.2), and §5.8.1.1 "The option value depends on the NSLP being
//! signalled for". RFC 5350 holds the registries of values for IPv4 (§3.1) and IPv6 (§3.2).
//!
//! Registered pairs (used unless configured otherwise):
//! - NATFW NSLP, NSLPID 33: IPv4 65, IPv6 68 (RFC 5973 §7.5);
//! - QoS NSLP, NSLPIDs 1–32 (aggregation levels 0–31): IPv4 33–64, IPv6 36–67. RFC 5974 §6.6
//!   says a block of 32 NSLPIDs and blocks of 32 values for each family were assigned without
//!   naming the numbers; these are the IANA registries' (their text is not among the RFCs at
//!   hand; they sit next to NATFW's values, which RFC 5973 does name).
//!
//! Any other NSLPID (the Ping NSLP's experimental 32704 among them) uses the configured
//! defaults: IPv4 0 ("Router shall examine packet", RFC 2113 §2.1), IPv6 65503 (the first of
//! RFC 5350 §3.2's experimental values).

use std::collections::BTreeMap;

/// Router Alert values per NSLPID. See the module documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouterAlertValues {
    /// Configured values: NSLPID → value on both families (they take precedence over the
    /// registered ones).
    pub configured: BTreeMap<u16, u16>,
    /// Value of an NSLPID neither configured nor registered, over IPv4.
    pub default_v4: u16,
    /// … and over IPv6.
    pub default_v6: u16,
}

impl Default for RouterAlertValues {
    fn default() -> Self {
        RouterAlertValues {
            configured: BTreeMap::new(),
            default_v4: 0,
            default_v6: 65503,
        }
    }
}

/// NATFW NSLP's NSLPID (RFC 5973 §7.5).
pub const NSLPID_NATFW: u16 = 33;

impl RouterAlertValues {
    /// The registered (IPv4, IPv6) values of `nslpid`, if it has any.
    pub fn registered(nslpid: u16) -> Option<(u16, u16)> {
        match nslpid {
            // QoS NSLP aggregation level n - 1 (RFC 5974 §6.6; values from the IANA registry).
            1..=32 => Some((32 + nslpid, 35 + nslpid)),
            // RFC 5973 §7.5.
            NSLPID_NATFW => Some((65, 68)),
            _ => None,
        }
    }

    /// The value Q-mode messages for `nslpid` carry over IPv6 (`ipv6`) or IPv4.
    pub fn value(&self, nslpid: u16, ipv6: bool) -> u16 {
        if let Some(&v) = self.configured.get(&nslpid) {
            return v;
        }
        match (Self::registered(nslpid), ipv6) {
            (Some((v4, _)), false) => v4,
            (Some((_, v6)), true) => v6,
            (None, false) => self.default_v4,
            (None, true) => self.default_v6,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_configured_and_default_values() {
        let mut r = RouterAlertValues::default();
        // QoS NSLP level 0 and 31, NATFW.
        assert_eq!((r.value(1, false), r.value(1, true)), (33, 36));
        assert_eq!((r.value(32, false), r.value(32, true)), (64, 67));
        assert_eq!((r.value(33, false), r.value(33, true)), (65, 68));
        // The Ping NSLP's experimental NSLPID, and NSIS-ka's test NSLP 42.
        assert_eq!((r.value(32704, false), r.value(32704, true)), (0, 65503));
        r.configured.insert(42, 42);
        r.configured.insert(33, 7);
        assert_eq!((r.value(42, false), r.value(42, true)), (42, 42));
        assert_eq!(r.value(33, true), 7, "configuration wins");
    }
}
