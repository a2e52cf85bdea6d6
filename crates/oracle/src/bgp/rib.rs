//! The exits' Adj-RIBs-In and the external networks derived from them.
//!
//! Per exit router, one table per BGP peer (RFC 7854 §2: the station sees each monitored peer's
//! Adj-RIB-In): prefix → (AS distance, origin AS). The best route of a prefix at an exit is the
//! shortest AS path over that exit's peers (ties: lower origin AS, then lower NIC), which is what
//! the seed's `enetwork` line carries (§3.2.3: "AS distance"). Every change computes the best
//! before and after; only when it differs is a change recorded, and changes to the same
//! (exit, prefix) coalesce until [`BgpRib::take_updates`] turns them into [`Update`]s.
//!
//! Memory: an IPv4 route is a 16-byte hash-table entry (packed prefix key + route), an IPv6
//! route 32 bytes; a full table (1M IPv4 + 200k IPv6) per peer is about 40 MB with the tables'
//! spare capacity.

use crate::model::ExternalNetwork;
use crate::snapshot::Update;
use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::net::IpAddr;

/// A BGP peer of an exit router, as BMP names it (RFC 7854 §4.2: peer distinguisher and
/// address identify the peer; the post-policy flag selects which of its Adj-RIBs-In is seen).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PeerKey {
    /// Peer Distinguisher (0 for global-instance peers).
    pub distinguisher: u64,
    /// The peer's address.
    pub address: IpAddr,
    /// Post-policy Adj-RIB-In (the L flag) rather than pre-policy.
    pub post_policy: bool,
}

impl PeerKey {
    /// A global-instance peer's pre-policy Adj-RIB-In.
    pub fn global(address: IpAddr) -> PeerKey {
        PeerKey {
            distinguisher: 0,
            address,
            post_policy: false,
        }
    }
}

/// One route as the oracle keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Route {
    /// AS hops to the network: the AS_PATH's length (RFC 4271 §9.1.2.2 a: an AS_SET counts as
    /// one; confederation segments do not count, RFC 5065 §5.3).
    pub as_distance: u16,
    /// The origin AS (the AS_PATH's last AS; the peer's AS when the path is empty).
    pub origin_as: u32,
}

/// The best route of a prefix at an exit, with the NIC it leaves through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Best {
    route: Route,
    nic: u8,
}

/// An IPv4 prefix packed as `address << 8 | length`.
type Key4 = u64;
/// An IPv6 prefix as (high, low, length).
type Key6 = (u64, u64, u8);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Key {
    V4(Key4),
    V6(Key6),
}

impl Key {
    fn of(prefix: IpNet) -> Key {
        match prefix.trunc() {
            IpNet::V4(p) => {
                Key::V4(u64::from(u32::from(p.network())) << 8 | u64::from(p.prefix_len()))
            }
            IpNet::V6(p) => {
                let a = u128::from(p.network());
                Key::V6(((a >> 64) as u64, a as u64, p.prefix_len()))
            }
        }
    }

    fn prefix(self) -> IpNet {
        match self {
            Key::V4(k) => {
                let addr = std::net::Ipv4Addr::from((k >> 8) as u32);
                IpNet::V4(Ipv4Net::new(addr, (k & 0xff) as u8).unwrap_or_default())
            }
            Key::V6((hi, lo, len)) => {
                let addr = std::net::Ipv6Addr::from(u128::from(hi) << 64 | u128::from(lo));
                IpNet::V6(Ipv6Net::new(addr, len).unwrap_or_default())
            }
        }
    }
}

/// One peer's Adj-RIB-In at one exit.
#[derive(Clone, Debug, Default)]
struct PeerRib {
    nic: u8,
    asn: u32,
    v4: HashMap<Key4, Route>,
    v6: HashMap<Key6, Route>,
}

impl PeerRib {
    fn get(&self, k: Key) -> Option<Route> {
        match k {
            Key::V4(k) => self.v4.get(&k).copied(),
            Key::V6(k) => self.v6.get(&k).copied(),
        }
    }

    fn len(&self) -> usize {
        self.v4.len() + self.v6.len()
    }
}

/// The peers of one exit router.
#[derive(Clone, Debug, Default)]
struct ExitRib {
    peers: Vec<(PeerKey, PeerRib)>,
    /// Prefixes with a best route at this exit.
    prefixes: usize,
}

impl ExitRib {
    fn best(&self, k: Key) -> Option<Best> {
        self.peers
            .iter()
            .filter_map(|(_, p)| p.get(k).map(|route| Best { route, nic: p.nic }))
            .min()
    }

    fn peer(&self, key: &PeerKey) -> Option<usize> {
        self.peers.iter().position(|(k, _)| k == key)
    }
}

/// A change not yet turned into an [`Update`]: the best as the snapshot has it, and now.
#[derive(Clone, Copy, Debug)]
struct Pending {
    installed: Option<Best>,
    latest: Option<Best>,
}

/// A peer as [`BgpRib::peers`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerSummary {
    /// The exit router.
    pub exit: IpAddr,
    /// The peer.
    pub peer: PeerKey,
    /// Its AS.
    pub asn: u32,
    /// The exit's NIC its routes leave through.
    pub nic: u8,
    /// Routes in its Adj-RIB-In.
    pub routes: usize,
}

/// The Adj-RIBs-In of every exit router, and the external networks they make.
#[derive(Clone, Debug, Default)]
pub struct BgpRib {
    exits: Vec<(IpAddr, ExitRib)>,
    pending: HashMap<(u32, Key), Pending>,
}

impl BgpRib {
    /// An empty RIB.
    pub fn new() -> BgpRib {
        BgpRib::default()
    }

    fn exit_index(&mut self, exit: IpAddr) -> usize {
        match self.exits.iter().position(|(a, _)| *a == exit) {
            Some(i) => i,
            None => {
                self.exits.push((exit, ExitRib::default()));
                self.exits.len() - 1
            }
        }
    }

    fn peer_index(&mut self, e: usize, peer: PeerKey) -> usize {
        let rib = &mut self.exits[e].1;
        match rib.peer(&peer) {
            Some(i) => i,
            None => {
                rib.peers.push((peer, PeerRib::default()));
                rib.peers.len() - 1
            }
        }
    }

    /// A peer of `exit` came up (RFC 7854 §4.10) with AS `asn`; its routes leave through the
    /// exit's `nic`. A peer already known is first taken down: a second Peer Up means the
    /// session was re-established and its routes are sent again.
    pub fn peer_up(&mut self, exit: IpAddr, peer: PeerKey, asn: u32, nic: u8) {
        self.peer_down(exit, peer);
        let e = self.exit_index(exit);
        let p = self.peer_index(e, peer);
        let rib = &mut self.exits[e].1.peers[p].1;
        rib.nic = nic;
        rib.asn = asn;
    }

    /// Make sure `peer` of `exit` is known (a route seen before its Peer Up: the station
    /// connected after the session came up, RFC 7854 §4.10 lets it learn peers from route
    /// monitoring too); a known peer is left as it is.
    pub fn ensure_peer(&mut self, exit: IpAddr, peer: PeerKey, asn: u32, nic: u8) {
        let e = self.exit_index(exit);
        if self.exits[e].1.peer(&peer).is_none() {
            self.exits[e].1.peers.push((
                peer,
                PeerRib {
                    nic,
                    asn,
                    ..PeerRib::default()
                },
            ));
        }
    }

    /// Set the NIC a known peer's routes leave through (a peer seen before its Peer Up gets
    /// NIC 0 until then). Its best routes are re-derived.
    pub fn set_peer_nic(&mut self, exit: IpAddr, peer: PeerKey, nic: u8) {
        let Some(e) = self.exits.iter().position(|(a, _)| *a == exit) else {
            return;
        };
        let Some(p) = self.exits[e].1.peer(&peer) else {
            return;
        };
        if self.exits[e].1.peers[p].1.nic == nic {
            return;
        }
        let keys: Vec<Key> = {
            let r = &self.exits[e].1.peers[p].1;
            r.v4.keys()
                .map(|&k| Key::V4(k))
                .chain(r.v6.keys().map(|&k| Key::V6(k)))
                .collect()
        };
        let olds: Vec<Option<Best>> = keys.iter().map(|&k| self.exits[e].1.best(k)).collect();
        self.exits[e].1.peers[p].1.nic = nic;
        for (k, old) in keys.into_iter().zip(olds) {
            self.record(e, k, old);
        }
    }

    /// `peer` of `exit` announces `prefix` with `route` (replacing its previous route for it).
    pub fn announce(&mut self, exit: IpAddr, peer: PeerKey, prefix: IpNet, route: Route) {
        let e = self.exit_index(exit);
        let p = self.peer_index(e, peer);
        let k = Key::of(prefix);
        let old = self.exits[e].1.best(k);
        let rib = &mut self.exits[e].1.peers[p].1;
        let same = match k {
            Key::V4(k) => rib.v4.insert(k, route),
            Key::V6(k) => rib.v6.insert(k, route),
        } == Some(route);
        if !same {
            self.record(e, k, old);
        }
    }

    /// `peer` of `exit` withdraws `prefix` (nothing happens if it had no route for it).
    pub fn withdraw(&mut self, exit: IpAddr, peer: PeerKey, prefix: IpNet) {
        let Some(e) = self.exits.iter().position(|(a, _)| *a == exit) else {
            return;
        };
        let Some(p) = self.exits[e].1.peer(&peer) else {
            return;
        };
        let k = Key::of(prefix);
        let old = self.exits[e].1.best(k);
        let rib = &mut self.exits[e].1.peers[p].1;
        let removed = match k {
            Key::V4(k) => rib.v4.remove(&k).is_some(),
            Key::V6(k) => rib.v6.remove(&k).is_some(),
        };
        if removed {
            self.record(e, k, old);
        }
    }

    /// `peer` of `exit` went down (RFC 7854 §4.9): its routes are gone.
    pub fn peer_down(&mut self, exit: IpAddr, peer: PeerKey) {
        let Some(e) = self.exits.iter().position(|(a, _)| *a == exit) else {
            return;
        };
        let Some(p) = self.exits[e].1.peer(&peer) else {
            return;
        };
        let (_, gone) = self.exits[e].1.peers.swap_remove(p);
        let removed = Best {
            route: Route {
                as_distance: 0,
                origin_as: 0,
            },
            nic: gone.nic,
        };
        let keys = gone
            .v4
            .iter()
            .map(|(&k, &r)| (Key::V4(k), r))
            .chain(gone.v6.iter().map(|(&k, &r)| (Key::V6(k), r)));
        for (k, route) in keys {
            let gone_best = Best { route, ..removed };
            let rest = self.exits[e].1.best(k);
            let old = Some(rest.map_or(gone_best, |b| b.min(gone_best)));
            self.record(e, k, old);
        }
    }

    /// Every peer of `exit` is gone (its BMP session ended: RFC 7854 §3.3 — the station can no
    /// longer tell what the router knows).
    pub fn exit_down(&mut self, exit: IpAddr) {
        while let Some(peer) = self
            .exits
            .iter()
            .find(|(a, _)| *a == exit)
            .and_then(|(_, r)| r.peers.first().map(|(k, _)| *k))
        {
            self.peer_down(exit, peer);
        }
    }

    /// After a change at exit `e` for `k`, whose best was `old`: note the change if the best
    /// moved.
    fn record(&mut self, e: usize, k: Key, old: Option<Best>) {
        let rib = &mut self.exits[e].1;
        let new = rib.best(k);
        if new == old {
            return;
        }
        match (old.is_some(), new.is_some()) {
            (false, true) => rib.prefixes += 1,
            (true, false) => rib.prefixes -= 1,
            _ => {}
        }
        match self.pending.entry((e as u32, k)) {
            Entry::Occupied(mut o) => o.get_mut().latest = new,
            Entry::Vacant(v) => {
                v.insert(Pending {
                    installed: old,
                    latest: new,
                });
            }
        }
    }

    /// Changes recorded and not yet taken.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// The recorded changes as snapshot updates (only where the best differs from what the
    /// last taken batch installed); the record starts empty again.
    pub fn take_updates(&mut self) -> Vec<Update> {
        let mut out = Vec::with_capacity(self.pending.len());
        for ((e, k), p) in self.pending.drain() {
            if p.installed == p.latest {
                continue;
            }
            let Some((router, _)) = self.exits.get(e as usize) else {
                continue;
            };
            let prefix = k.prefix();
            out.push(match p.latest {
                Some(b) => Update::AddExternalNetwork(ExternalNetwork {
                    prefix,
                    router: *router,
                    nic: b.nic,
                    as_number: b.route.origin_as,
                    as_distance: b.route.as_distance,
                }),
                None => Update::RemoveExternalNetwork {
                    prefix,
                    router: *router,
                },
            });
        }
        // A full-table load can leave the record with room for millions of changes; give it
        // back rather than keep it for a quiet feed.
        if self.pending.capacity() > 1 << 16 {
            self.pending = HashMap::new();
        }
        out
    }

    /// Forget what was taken: every current best route becomes pending again, as if nothing
    /// were installed (after the database was replaced wholesale, e.g. by a reload).
    pub fn resync(&mut self) {
        self.pending.clear();
        for e in 0..self.exits.len() {
            let keys: Vec<Key> = {
                let rib = &self.exits[e].1;
                let mut keys: Vec<Key> = rib
                    .peers
                    .iter()
                    .flat_map(|(_, p)| {
                        p.v4.keys()
                            .map(|&k| Key::V4(k))
                            .chain(p.v6.keys().map(|&k| Key::V6(k)))
                    })
                    .collect();
                keys.sort_unstable_by_key(|k| match *k {
                    Key::V4(a) => (0u8, u128::from(a), 0u8),
                    Key::V6((hi, lo, l)) => (1, u128::from(hi) << 64 | u128::from(lo), l),
                });
                keys.dedup();
                keys
            };
            for k in keys {
                let latest = self.exits[e].1.best(k);
                self.pending.insert(
                    (e as u32, k),
                    Pending {
                        installed: None,
                        latest,
                    },
                );
            }
        }
    }

    /// Every external network the RIB makes, from scratch (for dumps and tests).
    pub fn external_networks(&self) -> Vec<ExternalNetwork> {
        let mut out = Vec::new();
        for (router, rib) in &self.exits {
            let mut keys: Vec<Key> = rib
                .peers
                .iter()
                .flat_map(|(_, p)| {
                    p.v4.keys()
                        .map(|&k| Key::V4(k))
                        .chain(p.v6.keys().map(|&k| Key::V6(k)))
                })
                .collect();
            keys.sort_unstable_by_key(|k| match *k {
                Key::V4(a) => (0u8, u128::from(a), 0u8),
                Key::V6((hi, lo, l)) => (1, u128::from(hi) << 64 | u128::from(lo), l),
            });
            keys.dedup();
            for k in keys {
                if let Some(b) = rib.best(k) {
                    out.push(ExternalNetwork {
                        prefix: k.prefix(),
                        router: *router,
                        nic: b.nic,
                        as_number: b.route.origin_as,
                        as_distance: b.route.as_distance,
                    });
                }
            }
        }
        out
    }

    /// Prefixes with a best route, per exit router.
    pub fn prefixes_per_exit(&self) -> Vec<(IpAddr, usize)> {
        self.exits.iter().map(|(a, r)| (*a, r.prefixes)).collect()
    }

    /// Every peer of every exit.
    pub fn peers(&self) -> Vec<PeerSummary> {
        self.exits
            .iter()
            .flat_map(|(exit, r)| {
                r.peers.iter().map(move |(k, p)| PeerSummary {
                    exit: *exit,
                    peer: *k,
                    asn: p.asn,
                    nic: p.nic,
                    routes: p.len(),
                })
            })
            .collect()
    }

    /// Routes held over all peers of all exits.
    pub fn routes(&self) -> usize {
        self.exits
            .iter()
            .flat_map(|(_, r)| r.peers.iter().map(|(_, p)| p.len()))
            .sum()
    }
}

#[cfg(test)]
mod tests;
