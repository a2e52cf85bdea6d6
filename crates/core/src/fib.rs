//! Longest-prefix match over IPv4 and IPv6 (a local FIB mirror, the oracle's prefix table).
//!
//! Engines look routes up here instead of asking the kernel per message (the KOM engine spent 16%
//! of its time in routing lookups, seed 001 Table IX). Backed by `prefix-trie`'s binary tries.

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use prefix_trie::PrefixMap;
use std::net::IpAddr;

/// A longest-prefix-match table from IP prefixes to `V`.
#[derive(Clone, Debug)]
pub struct Fib<V> {
    v4: PrefixMap<Ipv4Net, V>,
    v6: PrefixMap<Ipv6Net, V>,
    len: usize,
}

impl<V> Default for Fib<V> {
    fn default() -> Self {
        Fib {
            v4: PrefixMap::new(),
            v6: PrefixMap::new(),
            len: 0,
        }
    }
}

impl<V> Fib<V> {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of prefixes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Insert or replace the value for `prefix` (host bits are cleared first); returns the old one.
    pub fn insert(&mut self, prefix: IpNet, value: V) -> Option<V> {
        let old = match prefix.trunc() {
            IpNet::V4(p) => self.v4.insert(p, value),
            IpNet::V6(p) => self.v6.insert(p, value),
        };
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    /// Remove the value for exactly `prefix`.
    pub fn remove(&mut self, prefix: &IpNet) -> Option<V> {
        let old = match prefix.trunc() {
            IpNet::V4(p) => self.v4.remove(&p),
            IpNet::V6(p) => self.v6.remove(&p),
        };
        if old.is_some() {
            self.len -= 1;
        }
        old
    }

    /// The value for exactly `prefix`.
    pub fn get(&self, prefix: &IpNet) -> Option<&V> {
        match prefix.trunc() {
            IpNet::V4(p) => self.v4.get(&p),
            IpNet::V6(p) => self.v6.get(&p),
        }
    }

    /// The most specific prefix containing `addr`, and its value.
    pub fn lookup(&self, addr: IpAddr) -> Option<(IpNet, &V)> {
        match addr {
            IpAddr::V4(a) => self
                .v4
                .get_lpm(&Ipv4Net::from(a))
                .map(|(p, v)| (IpNet::V4(p), v)),
            IpAddr::V6(a) => self
                .v6
                .get_lpm(&Ipv6Net::from(a))
                .map(|(p, v)| (IpNet::V6(p), v)),
        }
    }

    /// All prefixes and values, IPv4 first.
    pub fn iter(&self) -> impl Iterator<Item = (IpNet, &V)> {
        self.v4
            .iter()
            .map(|(p, v)| (IpNet::V4(p), v))
            .chain(self.v6.iter().map(|(p, v)| (IpNet::V6(p), v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> IpNet {
        s.parse().unwrap()
    }

    #[test]
    fn longest_prefix_wins() {
        let mut f = Fib::new();
        f.insert(net("0.0.0.0/0"), "default");
        f.insert(net("10.0.0.0/8"), "ten");
        f.insert(net("10.1.2.0/24"), "ten-one-two");
        f.insert(net("2001:db8::/32"), "doc");
        assert_eq!(
            f.lookup("10.1.2.3".parse().unwrap()).map(|x| *x.1),
            Some("ten-one-two")
        );
        assert_eq!(
            f.lookup("10.9.9.9".parse().unwrap()).map(|x| *x.1),
            Some("ten")
        );
        assert_eq!(
            f.lookup("192.0.2.1".parse().unwrap()).map(|x| *x.1),
            Some("default")
        );
        assert_eq!(
            f.lookup("2001:db8::1".parse().unwrap()).map(|x| *x.1),
            Some("doc")
        );
        assert_eq!(f.lookup("2001:db9::1".parse().unwrap()), None);
        assert_eq!(f.len(), 4);
        assert_eq!(f.remove(&net("10.1.2.0/24")), Some("ten-one-two"));
        assert_eq!(
            f.lookup("10.1.2.3".parse().unwrap()).map(|x| *x.1),
            Some("ten")
        );
        assert_eq!(f.len(), 3);
        // Host bits are ignored on insert.
        f.insert(net("10.1.2.99/24"), "again");
        assert_eq!(f.get(&net("10.1.2.0/24")), Some(&"again"));
    }
}
