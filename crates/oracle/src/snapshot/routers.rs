//! The internal network: routers in stable slots, and the directed link graph derived from their
//! NICs (seed §4.5.4: "it runs over the network cards of the routers and finds the specified
//! connections").

use super::BuildError;
use crate::model::{LinkConfig, NicConfig, RouteConfig, RouterConfig, State};
use std::collections::HashMap;
use std::net::IpAddr;

/// Largest link weight accepted (IS-IS wide metrics are 24 bits).
pub const MAX_LINK_WEIGHT: u32 = (1 << 24) - 1;
/// Most routers one database holds (path hop counts are 16-bit).
pub const MAX_ROUTERS: u32 = 65_535;

/// Index of a router slot in a snapshot.
pub(crate) type RouterIdx = u32;

/// One router, as configured.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Router {
    pub address: IpAddr,
    pub nic_count: u16,
    pub state: State,
    /// Sorted by index.
    pub nics: Vec<NicConfig>,
    pub routes: Vec<RouteConfig>,
}

impl Router {
    pub fn from_config(c: &RouterConfig) -> Result<Router, BuildError> {
        let bad = |what: String| BuildError::Router {
            router: c.address,
            what,
        };
        if c.nic_count > 256 {
            return Err(bad(format!("{} NICs; at most 256", c.nic_count)));
        }
        let mut nics = c.nics.clone();
        nics.sort_by_key(|n| n.index);
        for w in nics.windows(2) {
            if w[0].index == w[1].index {
                return Err(bad(format!("NIC {} is defined twice", w[0].index)));
            }
        }
        for n in &nics {
            if u16::from(n.index) >= c.nic_count {
                return Err(bad(format!(
                    "NIC {} is out of range (the router has {} NICs)",
                    n.index, c.nic_count
                )));
            }
            if let Some(l) = &n.link {
                check_link(l).map_err(|e| bad(format!("link on NIC {}: {e}", n.index)))?;
            }
        }
        for r in &c.routes {
            if u16::from(r.nic) >= c.nic_count {
                return Err(bad(format!(
                    "route to {} leaves through NIC {}, out of range (the router has {} NICs)",
                    r.destination, r.nic, c.nic_count
                )));
            }
        }
        Ok(Router {
            address: c.address,
            nic_count: c.nic_count,
            state: c.state,
            nics,
            routes: c.routes.clone(),
        })
    }

    pub fn to_config(&self) -> RouterConfig {
        RouterConfig {
            address: self.address,
            nic_count: self.nic_count,
            state: self.state,
            nics: self.nics.clone(),
            routes: self.routes.clone(),
        }
    }
}

/// Checks link properties; the message says what is wrong.
pub(crate) fn check_link(l: &LinkConfig) -> Result<(), String> {
    if !(l.bandwidth.is_finite() && l.bandwidth > 0.0) {
        return Err(format!("bandwidth {} must be positive", l.bandwidth));
    }
    if !(l.latency.is_finite() && l.latency >= 0.0) {
        return Err(format!("latency {} must be zero or more", l.latency));
    }
    if !(0.0..=1.0).contains(&l.congestion) {
        return Err(format!("congestion {} must be within 0..=1", l.congestion));
    }
    if l.weight > MAX_LINK_WEIGHT {
        return Err(format!("weight {} is above {MAX_LINK_WEIGHT}", l.weight));
    }
    Ok(())
}

/// Routers in stable slots; a removed router leaves a hole that the next added router reuses.
#[derive(Clone, Debug, Default)]
pub(crate) struct RouterTable {
    pub slots: Vec<Option<Router>>,
    pub by_address: HashMap<IpAddr, RouterIdx>,
    pub len: usize,
}

impl RouterTable {
    pub fn get(&self, idx: RouterIdx) -> Option<&Router> {
        self.slots.get(idx as usize).and_then(Option::as_ref)
    }

    pub fn index_of(&self, addr: &IpAddr) -> Option<RouterIdx> {
        self.by_address.get(addr).copied()
    }

    pub fn insert(&mut self, r: Router, max: u32) -> Result<RouterIdx, BuildError> {
        if self.by_address.contains_key(&r.address) {
            return Err(BuildError::DuplicateRouter(r.address));
        }
        if self.len as u64 >= u64::from(max.min(MAX_ROUTERS)) {
            return Err(BuildError::TooManyRouters(max.min(MAX_ROUTERS)));
        }
        let idx = match self.slots.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        };
        self.by_address.insert(r.address, idx as RouterIdx);
        self.slots[idx] = Some(r);
        self.len += 1;
        Ok(idx as RouterIdx)
    }

    pub fn remove(&mut self, addr: &IpAddr) -> Option<(RouterIdx, Router)> {
        let idx = self.by_address.remove(addr)?;
        let r = self.slots.get_mut(idx as usize)?.take()?;
        self.len -= 1;
        Some((idx, r))
    }

    pub fn iter(&self) -> impl Iterator<Item = (RouterIdx, &Router)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.as_ref().map(|r| (i as RouterIdx, r)))
    }
}

/// One directed link, as the path computation needs it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Edge {
    pub to: RouterIdx,
    pub nic: u8,
    pub weight: u32,
    pub bandwidth: f32,
    pub latency: f32,
    /// Congestion in 1/10,000 of capacity.
    pub congestion: u16,
}

/// The directed graph of usable links (both routers and both NICs up, a peer NIC found, link
/// properties set on the sending side), in compressed rows, plus each router's rank in address
/// order (ties between equal paths and exits go to the lower address, so answers do not depend
/// on slot numbers).
#[derive(Clone, Debug, Default)]
pub(crate) struct Graph {
    pub offsets: Vec<u32>,
    pub edges: Vec<Edge>,
    pub rank: Vec<u32>,
    pub up: Vec<bool>,
    /// Explicit routes per router, sorted by destination: (destination, nic).
    pub routes: Vec<Vec<(RouterIdx, u8)>>,
}

impl Graph {
    pub fn build(t: &RouterTable) -> Result<Graph, BuildError> {
        let n = t.slots.len();
        let mut nic_owner: HashMap<IpAddr, (RouterIdx, u8)> = HashMap::default();
        for (i, r) in t.iter() {
            for nic in &r.nics {
                if let Some(&(other, _)) = nic_owner.get(&nic.local) {
                    let other = t.get(other).map_or(r.address, |o| o.address);
                    return Err(BuildError::DuplicateNicAddress {
                        address: nic.local,
                        routers: (other, r.address),
                    });
                }
                nic_owner.insert(nic.local, (i, nic.index));
            }
        }
        let mut rank: Vec<u32> = vec![u32::MAX; n];
        let mut order: Vec<(IpAddr, RouterIdx)> = t.iter().map(|(i, r)| (r.address, i)).collect();
        order.sort_unstable();
        for (k, (_, i)) in order.iter().enumerate() {
            rank[*i as usize] = k as u32;
        }
        let up: Vec<bool> = t
            .slots
            .iter()
            .map(|r| r.as_ref().is_some_and(|r| r.state.is_up()))
            .collect();
        let mut offsets = Vec::with_capacity(n + 1);
        let mut edges = Vec::new();
        let mut routes = vec![Vec::new(); n];
        offsets.push(0);
        for (i, slot) in t.slots.iter().enumerate() {
            if let Some(r) = slot.as_ref().filter(|r| r.state.is_up()) {
                for nic in r.nics.iter().filter(|n| n.state.is_up()) {
                    let (Some(link), Some(&(to, peer_nic))) = (nic.link, nic_owner.get(&nic.peer))
                    else {
                        continue;
                    };
                    let peer_up = t.get(to).is_some_and(|p| {
                        p.state.is_up()
                            && p.nics
                                .iter()
                                .any(|pn| pn.index == peer_nic && pn.state.is_up())
                    });
                    if to as usize == i || !peer_up {
                        continue;
                    }
                    edges.push(Edge {
                        to,
                        nic: nic.index,
                        weight: link.weight,
                        bandwidth: link.bandwidth as f32,
                        latency: link.latency as f32,
                        congestion: (link.congestion * 10_000.0).round() as u16,
                    });
                }
                let mut rs: Vec<(RouterIdx, u8)> = r
                    .routes
                    .iter()
                    .filter_map(|rc| t.index_of(&rc.destination).map(|d| (d, rc.nic)))
                    .collect();
                // The first route to a destination wins.
                rs.sort_by_key(|&(d, _)| d);
                rs.dedup_by_key(|&mut (d, _)| d);
                routes[i] = rs;
            }
            offsets.push(edges.len() as u32);
        }
        Ok(Graph {
            offsets,
            edges,
            rank,
            up,
            routes,
        })
    }

    pub fn len(&self) -> usize {
        self.up.len()
    }

    pub fn out(&self, r: RouterIdx) -> &[Edge] {
        let r = r as usize;
        match (self.offsets.get(r), self.offsets.get(r + 1)) {
            (Some(&a), Some(&b)) => self.edges.get(a as usize..b as usize).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// The explicit route from `r` towards `dest`, as the edge it leaves on.
    pub fn explicit_next(&self, r: RouterIdx, dest: RouterIdx) -> Option<&Edge> {
        let rs = self.routes.get(r as usize)?;
        let k = rs.binary_search_by_key(&dest, |&(d, _)| d).ok()?;
        let nic = rs[k].1;
        self.out(r).iter().find(|e| e.nic == nic)
    }
}
