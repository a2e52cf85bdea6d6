//! Martian addresses: addresses no RSVP neighbour or data sender can have, refused on input and
//! never sent to.
//!
//! RFC 2205 names what the addresses are: a SENDER_TEMPLATE's SrcAddress is "the IP source
//! address for a sender host" and "must be non-zero" (§A.9, which §A.10 takes over for SENDER_TEMPLATE), an RSVP_HOP "carries the IP
//! address of the interface through which the last RSVP-knowledgeable hop forwarded this
//! message" (§A.2), and a Resv, PathErr or ResvErr goes to "the unicast address of a
//! previous hop" or next hop (§3.1.4, §3.1.7, §3.1.8). None of that can be the unspecified
//! address, a loopback address (which never leaves its host), the limited broadcast address,
//! or a multicast group; and a sender or neighbour claiming one of this node's own addresses
//! is a spoof or a loop. Without integrity (RFC 2747) such messages would otherwise install
//! state whose refreshes this node sends with a forged source, or make it send Resv
//! messages to a group.
//!
//! Refused where they come in (see `Path` and `Resv` processing, which answer with an error
//! when the error has somewhere legitimate to go) and, as the last line of defence, before any
//! message is queued for sending.

use std::net::IpAddr;

/// What is wrong with an address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Martian {
    /// 0.0.0.0/8 ("this network", RFC 1122 §3.2.1.3: source only, and only while booting)
    /// or `::`.
    Unspecified,
    /// 127.0.0.0/8 or `::1`.
    Loopback,
    /// 255.255.255.255.
    Broadcast,
    /// 224.0.0.0/4 or ff00::/8.
    Multicast,
    /// One of this node's own addresses.
    Local,
}

impl Martian {
    /// What `addr` is, if it cannot be a unicast neighbour or sender (`local`: whether it is
    /// one of this node's addresses).
    pub fn of(addr: IpAddr, local: bool) -> Option<Martian> {
        let m = match addr {
            IpAddr::V4(a) if a.octets()[0] == 0 => Martian::Unspecified,
            IpAddr::V4(a) if a.is_loopback() => Martian::Loopback,
            IpAddr::V4(a) if a.is_broadcast() => Martian::Broadcast,
            IpAddr::V4(a) if a.is_multicast() => Martian::Multicast,
            IpAddr::V6(a) if a.is_unspecified() => Martian::Unspecified,
            IpAddr::V6(a) if a.is_loopback() => Martian::Loopback,
            IpAddr::V6(a) if a.is_multicast() => Martian::Multicast,
            // An IPv4-mapped IPv6 address is as martian as the IPv4 address it maps.
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                Some(v4) => return Martian::of(IpAddr::V4(v4), local),
                None if local => Martian::Local,
                None => return None,
            },
            IpAddr::V4(_) if local => Martian::Local,
            IpAddr::V4(_) => return None,
        };
        Some(m)
    }

    /// The drop reason for a received message whose sender (SENDER_TEMPLATE) is martian.
    pub fn sender_reason(self) -> &'static str {
        match self {
            Martian::Unspecified => "martian_sender_unspecified",
            Martian::Loopback => "martian_sender_loopback",
            Martian::Broadcast => "martian_sender_broadcast",
            Martian::Multicast => "martian_sender_multicast",
            Martian::Local => "martian_sender_local",
        }
    }

    /// The drop reason for a received message whose RSVP_HOP is martian.
    pub fn hop_reason(self) -> &'static str {
        match self {
            Martian::Unspecified => "martian_hop_unspecified",
            Martian::Loopback => "martian_hop_loopback",
            Martian::Broadcast => "martian_hop_broadcast",
            Martian::Multicast => "martian_hop_multicast",
            Martian::Local => "martian_hop_local",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(a: &str) -> Option<Martian> {
        Martian::of(a.parse().unwrap(), false)
    }

    #[test]
    fn martians_by_kind() {
        assert_eq!(of("0.0.0.0"), Some(Martian::Unspecified));
        assert_eq!(of("0.1.2.3"), Some(Martian::Unspecified));
        assert_eq!(of("127.0.0.1"), Some(Martian::Loopback));
        assert_eq!(of("127.255.0.9"), Some(Martian::Loopback));
        assert_eq!(of("255.255.255.255"), Some(Martian::Broadcast));
        assert_eq!(of("224.0.0.1"), Some(Martian::Multicast));
        assert_eq!(of("239.1.1.1"), Some(Martian::Multicast));
        assert_eq!(of("::"), Some(Martian::Unspecified));
        assert_eq!(of("::1"), Some(Martian::Loopback));
        assert_eq!(of("ff02::1"), Some(Martian::Multicast));
        assert_eq!(of("::ffff:127.0.0.1"), Some(Martian::Loopback));
        for fine in [
            "10.0.0.1",
            "192.0.2.1",
            "223.255.255.254",
            "2001:db8::1",
            "fe80::1",
        ] {
            assert_eq!(of(fine), None, "{fine}");
        }
        let own = "10.0.0.1".parse().unwrap();
        assert_eq!(Martian::of(own, true), Some(Martian::Local));
        assert_eq!(
            Martian::of("::1".parse().unwrap(), true),
            Some(Martian::Loopback)
        );
        assert_eq!(Martian::Multicast.hop_reason(), "martian_hop_multicast");
        assert_eq!(Martian::Local.sender_reason(), "martian_sender_local");
    }
}
