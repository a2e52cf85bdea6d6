//! The pure state behind `FibMirror`: links, addresses and main-table unicast routes, updated by
//! decoded kernel notifications or replaced by a fresh dump, emitting [`NetEvent`]s for every
//! change an engine cares about. No I/O here, so every rule is unit-tested.
//!
//! Routes: the kernel may hold several routes for one prefix (different metrics, or one per
//! interface such as `fe80::/64`), while an engine's [`RouteChange`] knows one route per prefix.
//! The mirror keeps all candidates and reports the *best* (lowest metric, oldest first): a change
//! of the best is an `Add`, the last candidate leaving is a `Remove`.
//!
//! Linux removes IPv4 routes without any notification when their interface is set
//! administratively down or deleted (IPv6 removals are notified). The mirror applies the same
//! rule itself, for both families, so its routes stay equal to the kernel's. Not emulated: IPv4
//! routes whose preferred source was a removed address, which the kernel also drops silently.

use crate::fib::{InterfaceInfo, NetEvent};
use ipnet::IpNet;
use pathwise_core::io::IfIndex;
use pathwise_core::route::{Route, RouteChange};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

/// A link as the kernel describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LinkInfo {
    pub ifindex: u32,
    pub name: String,
    /// `IFF_UP`: administratively up.
    pub admin_up: bool,
    /// `IFF_UP && IFF_RUNNING`: usable (carrier and operational state up).
    pub up: bool,
    pub mtu: u32,
}

/// One kernel route (a candidate for its prefix).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RouteInfo {
    pub prefix: IpNet,
    pub tos: u8,
    pub metric: u32,
    pub ifindex: u32,
    pub gateway: Option<IpAddr>,
}

impl RouteInfo {
    fn to_route(&self) -> Route {
        Route {
            prefix: self.prefix,
            next_hop: self.gateway,
            ifindex: IfIndex(self.ifindex),
            metric: self.metric,
        }
    }
}

/// One decoded kernel notification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Update {
    NewLink(LinkInfo),
    DelLink(u32),
    NewAddr(u32, IpNet),
    DelAddr(u32, IpNet),
    /// `replace`: the notification carried `NLM_F_REPLACE` (`ip route replace/change`).
    NewRoute {
        route: RouteInfo,
        replace: bool,
    },
    DelRoute(RouteInfo),
}

/// The whole state as one dump reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub links: Vec<LinkInfo>,
    pub addrs: Vec<(u32, IpNet)>,
    pub routes: Vec<RouteInfo>,
}

/// Links, addresses and route candidates.
#[derive(Clone, Debug, Default)]
pub(crate) struct State {
    links: BTreeMap<u32, LinkInfo>,
    addrs: BTreeSet<(u32, IpNet)>,
    routes: BTreeMap<IpNet, Vec<RouteInfo>>,
}

fn best(cands: Option<&Vec<RouteInfo>>) -> Option<Route> {
    // `min_by_key` keeps the first of equal metrics: the oldest candidate wins ties.
    cands?
        .iter()
        .min_by_key(|r| r.metric)
        .map(RouteInfo::to_route)
}

fn link_event(l: &LinkInfo) -> NetEvent {
    NetEvent::Link {
        ifindex: IfIndex(l.ifindex),
        name: l.name.clone(),
        up: l.up,
        mtu: l.mtu,
    }
}

/// Whether a link changed in what [`NetEvent::Link`] reports.
fn link_differs(a: &LinkInfo, b: &LinkInfo) -> bool {
    (a.name.as_str(), a.up, a.mtu) != (b.name.as_str(), b.up, b.mtu)
}

fn route_event(
    prefix: IpNet,
    before: Option<Route>,
    after: Option<Route>,
    out: &mut Vec<NetEvent>,
) {
    if before != after {
        out.push(NetEvent::Route(match after {
            Some(r) => RouteChange::Add(r),
            None => RouteChange::Remove(prefix),
        }));
    }
}

impl State {
    /// Changes `prefix`'s candidates with `f` and reports a change of its best route.
    fn edit_prefix(
        &mut self,
        prefix: IpNet,
        out: &mut Vec<NetEvent>,
        f: impl FnOnce(&mut Vec<RouteInfo>),
    ) {
        let before = best(self.routes.get(&prefix));
        let cands = self.routes.entry(prefix).or_default();
        f(cands);
        if cands.is_empty() {
            self.routes.remove(&prefix);
        }
        route_event(prefix, before, best(self.routes.get(&prefix)), out);
    }

    /// Drops every route through `ifindex`, as the kernel does silently when the link goes
    /// administratively down or away.
    fn flush_routes_via(&mut self, ifindex: u32, out: &mut Vec<NetEvent>) {
        let prefixes: Vec<IpNet> = self
            .routes
            .iter()
            .filter(|(_, c)| c.iter().any(|r| r.ifindex == ifindex))
            .map(|(p, _)| *p)
            .collect();
        for p in prefixes {
            self.edit_prefix(p, out, |c| c.retain(|r| r.ifindex != ifindex));
        }
    }

    /// Applies one notification.
    pub(crate) fn apply(&mut self, update: Update, out: &mut Vec<NetEvent>) {
        match update {
            Update::NewLink(l) => {
                let old = self.links.get(&l.ifindex);
                let was_admin_up = old.is_some_and(|old| old.admin_up);
                if old.is_none_or(|old| link_differs(old, &l)) {
                    out.push(link_event(&l));
                }
                if was_admin_up && !l.admin_up {
                    self.flush_routes_via(l.ifindex, out);
                }
                self.links.insert(l.ifindex, l);
            }
            Update::DelLink(ifindex) => {
                self.flush_routes_via(ifindex, out);
                let gone: Vec<_> = self
                    .addrs
                    .iter()
                    .filter(|(i, _)| *i == ifindex)
                    .copied()
                    .collect();
                for (i, a) in gone {
                    self.addrs.remove(&(i, a));
                    out.push(NetEvent::Address {
                        ifindex: IfIndex(i),
                        addr: a,
                        added: false,
                    });
                }
                if let Some(l) = self.links.remove(&ifindex) {
                    out.push(NetEvent::LinkRemoved {
                        ifindex: IfIndex(ifindex),
                        name: l.name,
                    });
                }
            }
            Update::NewAddr(ifindex, addr) => {
                if self.addrs.insert((ifindex, addr)) {
                    out.push(NetEvent::Address {
                        ifindex: IfIndex(ifindex),
                        addr,
                        added: true,
                    });
                }
            }
            Update::DelAddr(ifindex, addr) => {
                if self.addrs.remove(&(ifindex, addr)) {
                    out.push(NetEvent::Address {
                        ifindex: IfIndex(ifindex),
                        addr,
                        added: false,
                    });
                }
            }
            Update::NewRoute { route, replace } => {
                self.edit_prefix(route.prefix, out, |c| {
                    if replace {
                        c.retain(|r| (r.metric, r.tos) != (route.metric, route.tos));
                    }
                    match c.iter_mut().find(|r| **r == route) {
                        Some(_) => {}
                        None => c.push(route),
                    }
                });
            }
            Update::DelRoute(route) => {
                self.edit_prefix(route.prefix, out, |c| {
                    let pos = c.iter().position(|r| *r == route).or_else(|| {
                        c.iter()
                            .position(|r| (r.metric, r.tos) == (route.metric, route.tos))
                    });
                    if let Some(i) = pos {
                        c.remove(i);
                    }
                });
            }
        }
    }

    /// Replaces the whole state with a dump, emitting the differences (all of it the first
    /// time, from an empty state).
    pub(crate) fn resync(&mut self, snap: Snapshot, out: &mut Vec<NetEvent>) {
        let mut next = State::default();
        for l in snap.links {
            next.links.insert(l.ifindex, l);
        }
        next.addrs.extend(snap.addrs);
        for r in snap.routes {
            let cands = next.routes.entry(r.prefix).or_default();
            if !cands.contains(&r) {
                cands.push(r);
            }
        }
        for (i, l) in &next.links {
            if self.links.get(i).is_none_or(|old| link_differs(old, l)) {
                out.push(link_event(l));
            }
        }
        for &(i, a) in next.addrs.difference(&self.addrs) {
            out.push(NetEvent::Address {
                ifindex: IfIndex(i),
                addr: a,
                added: true,
            });
        }
        for &(i, a) in self.addrs.difference(&next.addrs) {
            out.push(NetEvent::Address {
                ifindex: IfIndex(i),
                addr: a,
                added: false,
            });
        }
        let prefixes: BTreeSet<IpNet> = self
            .routes
            .keys()
            .chain(next.routes.keys())
            .copied()
            .collect();
        for p in prefixes {
            route_event(p, best(self.routes.get(&p)), best(next.routes.get(&p)), out);
        }
        for (i, l) in &self.links {
            if !next.links.contains_key(i) {
                out.push(NetEvent::LinkRemoved {
                    ifindex: IfIndex(*i),
                    name: l.name.clone(),
                });
            }
        }
        *self = next;
    }

    /// Interfaces with their addresses, by ifindex.
    pub(crate) fn interfaces(&self) -> Vec<InterfaceInfo> {
        self.links
            .values()
            .map(|l| InterfaceInfo {
                ifindex: IfIndex(l.ifindex),
                name: l.name.clone(),
                addrs: self
                    .addrs
                    .iter()
                    .filter(|(i, _)| *i == l.ifindex)
                    .map(|(_, a)| *a)
                    .collect(),
                mtu: l.mtu,
                up: l.up,
            })
            .collect()
    }

    /// The best route of every prefix.
    pub(crate) fn routes(&self) -> Vec<Route> {
        self.routes.values().filter_map(|c| best(Some(c))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> IpNet {
        s.parse().unwrap()
    }

    fn route(prefix: &str, metric: u32, ifindex: u32, gw: Option<&str>) -> RouteInfo {
        RouteInfo {
            prefix: net(prefix),
            tos: 0,
            metric,
            ifindex,
            gateway: gw.map(|g| g.parse().unwrap()),
        }
    }

    fn link(ifindex: u32, admin_up: bool, up: bool) -> LinkInfo {
        LinkInfo {
            ifindex,
            name: format!("eth{ifindex}"),
            admin_up,
            up,
            mtu: 1500,
        }
    }

    fn apply(s: &mut State, u: Update) -> Vec<NetEvent> {
        let mut out = Vec::new();
        s.apply(u, &mut out);
        out
    }

    fn add(r: &RouteInfo) -> NetEvent {
        NetEvent::Route(RouteChange::Add(r.to_route()))
    }

    #[test]
    fn best_route_per_prefix() {
        let mut s = State::default();
        let r10 = route("10.9.0.0/16", 10, 2, Some("10.0.0.1"));
        let r5 = route("10.9.0.0/16", 5, 3, Some("10.1.0.1"));
        assert_eq!(
            apply(
                &mut s,
                Update::NewRoute {
                    route: r10.clone(),
                    replace: false
                }
            ),
            [add(&r10)]
        );
        assert_eq!(
            apply(
                &mut s,
                Update::NewRoute {
                    route: r5.clone(),
                    replace: false
                }
            ),
            [add(&r5)]
        );
        // Re-announcing a known route or adding a worse one changes nothing.
        assert!(
            apply(
                &mut s,
                Update::NewRoute {
                    route: r5.clone(),
                    replace: false
                }
            )
            .is_empty()
        );
        let r20 = route("10.9.0.0/16", 20, 4, None);
        assert!(
            apply(
                &mut s,
                Update::NewRoute {
                    route: r20.clone(),
                    replace: false
                }
            )
            .is_empty()
        );
        assert_eq!(apply(&mut s, Update::DelRoute(r5)), [add(&r10)]);
        assert!(apply(&mut s, Update::DelRoute(r20)).is_empty());
        assert_eq!(
            apply(&mut s, Update::DelRoute(r10)),
            [NetEvent::Route(RouteChange::Remove(net("10.9.0.0/16")))]
        );
        // Deleting an unknown route is a no-op.
        assert!(apply(&mut s, Update::DelRoute(route("10.8.0.0/16", 0, 1, None))).is_empty());
        assert!(s.routes().is_empty());
    }

    #[test]
    fn equal_metrics_keep_the_oldest_and_replace_swaps() {
        let mut s = State::default();
        let a = route("fe80::/64", 256, 2, None);
        let b = route("fe80::/64", 256, 3, None);
        assert_eq!(
            apply(
                &mut s,
                Update::NewRoute {
                    route: a.clone(),
                    replace: false
                }
            ),
            [add(&a)]
        );
        assert!(
            apply(
                &mut s,
                Update::NewRoute {
                    route: b.clone(),
                    replace: false
                }
            )
            .is_empty()
        );
        assert_eq!(apply(&mut s, Update::DelRoute(a.clone())), [add(&b)]);
        // `ip route replace` with a new gateway drops the old route of the same metric.
        let c = route("fe80::/64", 256, 4, Some("fe80::1"));
        assert_eq!(
            apply(
                &mut s,
                Update::NewRoute {
                    route: c.clone(),
                    replace: true
                }
            ),
            [add(&c)]
        );
        assert_eq!(s.routes(), [c.to_route()]);
        // A delete that only matches by metric (attributes differ) still removes it.
        let mut d = c.clone();
        d.gateway = None;
        assert_eq!(
            apply(&mut s, Update::DelRoute(d)),
            [NetEvent::Route(RouteChange::Remove(net("fe80::/64")))]
        );
    }

    #[test]
    fn admin_down_and_removal_flush_routes_silently_removed_by_the_kernel() {
        let mut s = State::default();
        let ev = apply(&mut s, Update::NewLink(link(2, true, true)));
        assert_eq!(
            ev,
            [NetEvent::Link {
                ifindex: IfIndex(2),
                name: "eth2".into(),
                up: true,
                mtu: 1500
            }]
        );
        apply(&mut s, Update::NewLink(link(3, true, true)));
        let via2 = route("10.7.0.0/16", 1, 2, Some("10.0.0.1"));
        let via3 = route("10.7.0.0/16", 9, 3, Some("10.1.0.1"));
        apply(
            &mut s,
            Update::NewRoute {
                route: via2,
                replace: false,
            },
        );
        apply(
            &mut s,
            Update::NewRoute {
                route: via3.clone(),
                replace: false,
            },
        );
        // Carrier loss: the link is reported down, routes stay (the kernel keeps them).
        let ev = apply(&mut s, Update::NewLink(link(2, true, false)));
        assert_eq!(
            ev,
            [NetEvent::Link {
                ifindex: IfIndex(2),
                name: "eth2".into(),
                up: false,
                mtu: 1500
            }]
        );
        // Unchanged link message: nothing.
        assert!(apply(&mut s, Update::NewLink(link(2, true, false))).is_empty());
        // Administratively down: the routes through it go, the next best takes over.
        let ev = apply(&mut s, Update::NewLink(link(2, false, false)));
        assert_eq!(ev, [add(&via3)]);
        apply(&mut s, Update::NewAddr(3, net("10.1.0.2/24")));
        let ev = apply(&mut s, Update::DelLink(3));
        assert_eq!(
            ev,
            [
                NetEvent::Route(RouteChange::Remove(net("10.7.0.0/16"))),
                NetEvent::Address {
                    ifindex: IfIndex(3),
                    addr: net("10.1.0.2/24"),
                    added: false
                },
                NetEvent::LinkRemoved {
                    ifindex: IfIndex(3),
                    name: "eth3".into()
                },
            ]
        );
        assert_eq!(s.interfaces().len(), 1);
    }

    #[test]
    fn addresses_are_reported_once() {
        let mut s = State::default();
        apply(&mut s, Update::NewLink(link(2, true, true)));
        let a = net("fd00::1/64");
        assert_eq!(
            apply(&mut s, Update::NewAddr(2, a)),
            [NetEvent::Address {
                ifindex: IfIndex(2),
                addr: a,
                added: true
            }]
        );
        assert!(
            apply(&mut s, Update::NewAddr(2, a)).is_empty(),
            "flag/lifetime updates are not news"
        );
        assert_eq!(s.interfaces()[0].addrs, [a]);
        assert_eq!(
            apply(&mut s, Update::DelAddr(2, a)),
            [NetEvent::Address {
                ifindex: IfIndex(2),
                addr: a,
                added: false
            }]
        );
        assert!(apply(&mut s, Update::DelAddr(2, a)).is_empty());
    }

    #[test]
    fn resync_reports_the_difference() {
        let mut s = State::default();
        let r1 = route("10.1.0.0/16", 0, 2, None);
        let r2 = route("10.2.0.0/16", 0, 2, None);
        let snap = Snapshot {
            links: vec![link(1, true, true), link(2, true, true)],
            addrs: vec![(2, net("10.1.0.1/16"))],
            routes: vec![r1.clone(), r2.clone(), r2.clone()],
        };
        let mut out = Vec::new();
        s.resync(snap, &mut out);
        assert_eq!(out.len(), 2 + 1 + 2, "{out:?}");
        // Same dump again: nothing new.
        let mut out = Vec::new();
        s.resync(
            Snapshot {
                links: vec![link(1, true, true), link(2, true, true)],
                addrs: vec![(2, net("10.1.0.1/16"))],
                routes: vec![r1.clone(), r2.clone()],
            },
            &mut out,
        );
        assert!(out.is_empty(), "{out:?}");
        // Missed events (overrun): link 2 gone, r2 replaced by another, address gone.
        let r3 = route("10.3.0.0/16", 0, 1, None);
        let mut out = Vec::new();
        s.resync(
            Snapshot {
                links: vec![link(1, true, true)],
                addrs: vec![],
                routes: vec![r3.clone()],
            },
            &mut out,
        );
        assert_eq!(
            out,
            [
                NetEvent::Address {
                    ifindex: IfIndex(2),
                    addr: net("10.1.0.1/16"),
                    added: false
                },
                NetEvent::Route(RouteChange::Remove(net("10.1.0.0/16"))),
                NetEvent::Route(RouteChange::Remove(net("10.2.0.0/16"))),
                add(&r3),
                NetEvent::LinkRemoved {
                    ifindex: IfIndex(2),
                    name: "eth2".into()
                },
            ]
        );
    }
}
