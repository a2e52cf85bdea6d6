//! Live updates (improving on seed §3.3 and §4.5.2, which stop every worker): a batch of changes
//! turns one snapshot into a new one, off the hot path; the server swaps it in atomically.
//!
//! What a change costs:
//! - networks (source or external): only the prefix-table shards holding the prefixes are
//!   copied and their lookup indexes rebuilt (once per batch); the path cache and its ranking
//!   terms are shared untouched, and so are the per-row sort keys of every other shard (with
//!   [`CacheScope::SourceRouters`], a router that gets its first source network gains one row,
//!   and the terms and keys start afresh);
//! - routers, NICs, links, states: the link graph and every cache row are recomputed (the
//!   topology is small next to the prefix table; the seed recomputed too);
//! - removing a router also removes every network attached to it (one pass over the table);
//! - ranking: the per-row ranking terms and sort keys start afresh; TTL: nothing else is touched.

use super::costs::PrefixCosts;
use super::paths::PathCache;
use super::prefixes::Exit;
use super::routers::{Graph, Router, RouterIdx, check_link};
use super::terms::RowTerms;
use super::{BuildError, TopologySnapshot};
use crate::model::{
    CacheScope, ExternalNetwork, LinkConfig, NicConfig, RouterConfig, SourceNetwork, State,
};
use crate::rank::Ranking;
use ipnet::IpNet;
use std::net::IpAddr;
use std::sync::Arc;

/// One change to the database.
#[derive(Clone, Debug, PartialEq)]
pub enum Update {
    /// Attach a source network to a router (replaces the same prefix at the same router).
    AddSourceNetwork(SourceNetwork),
    /// Detach a source network from a router.
    RemoveSourceNetwork {
        /// The prefix.
        prefix: IpNet,
        /// The router.
        router: IpAddr,
    },
    /// Make a router an exit for an external network (replaces the same prefix at the same
    /// router).
    AddExternalNetwork(ExternalNetwork),
    /// Withdraw an external network from one exit.
    RemoveExternalNetwork {
        /// The prefix.
        prefix: IpNet,
        /// The exit router.
        router: IpAddr,
    },
    /// Remove a prefix with all its exits.
    RemovePrefix(IpNet),
    /// Add a router (its NICs may connect it to existing routers).
    AddRouter(RouterConfig),
    /// Replace a router's definition (NICs, links, routes, state), keeping its networks.
    ReplaceRouter(RouterConfig),
    /// Remove a router, its links and every network attached to it.
    RemoveRouter(IpAddr),
    /// Change a router's state.
    SetRouterState {
        /// The router.
        router: IpAddr,
        /// The new state.
        state: State,
    },
    /// Add or replace one NIC.
    SetNic {
        /// The router.
        router: IpAddr,
        /// The NIC (matched by index).
        nic: NicConfig,
    },
    /// Remove one NIC.
    RemoveNic {
        /// The router.
        router: IpAddr,
        /// Its index.
        index: u8,
    },
    /// Change a NIC's state.
    SetNicState {
        /// The router.
        router: IpAddr,
        /// The NIC index.
        nic: u8,
        /// The new state.
        state: State,
    },
    /// Set or clear the properties of the link leaving through a NIC.
    SetLink {
        /// The router.
        router: IpAddr,
        /// The NIC index.
        nic: u8,
        /// The new properties; `None` removes the link.
        link: Option<LinkConfig>,
    },
    /// Change the ranking (a built-in name or a cost expression).
    SetRanking(String),
    /// Change the TTL written into answers.
    SetTtl(u16),
}

/// What an update batch rebuilt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpdateReport {
    /// The link graph and all path rows were recomputed.
    pub paths_recomputed: bool,
    /// Path rows added for routers that gained a source network.
    pub rows_added: usize,
    /// Prefix entries written or removed.
    pub prefixes_changed: usize,
}

impl TopologySnapshot {
    /// Apply `updates` in order and return the new snapshot; on error nothing changes.
    pub fn apply(
        &self,
        updates: &[Update],
    ) -> Result<(TopologySnapshot, UpdateReport), BuildError> {
        let mut next = self.clone();
        next.generation = self.generation.wrapping_add(1);
        let mut report = UpdateReport::default();
        let mut topology = false;
        let mut ranking = false;
        let mut new_sources: Vec<RouterIdx> = Vec::new();
        for u in updates {
            match u {
                Update::AddSourceNetwork(n) => {
                    let r = next.router_idx(n.router, n.prefix)?;
                    let exit = Exit {
                        router: r,
                        as_number: next.settings.local_as,
                        as_distance: 0,
                        nic: n.nic,
                        source: true,
                    };
                    next.put_exit(n.prefix.trunc(), exit)?;
                    new_sources.push(r);
                    report.prefixes_changed += 1;
                }
                Update::AddExternalNetwork(n) => {
                    let exit = Exit {
                        router: next.router_idx(n.router, n.prefix)?,
                        as_number: n.as_number,
                        as_distance: n.as_distance,
                        nic: n.nic,
                        source: false,
                    };
                    next.put_exit(n.prefix.trunc(), exit)?;
                    report.prefixes_changed += 1;
                }
                Update::RemoveSourceNetwork { prefix, router }
                | Update::RemoveExternalNetwork { prefix, router } => {
                    let source = matches!(u, Update::RemoveSourceNetwork { .. });
                    let kind = if source { "source" } else { "external" };
                    let missing = || BuildError::NoSuchNetwork {
                        kind,
                        prefix: *prefix,
                        router: *router,
                    };
                    let r = next.routers.index_of(router).ok_or_else(missing)?;
                    let p = prefix.trunc();
                    let old = next.prefixes.get(&p).ok_or_else(missing)?;
                    let kept: Vec<Exit> = old
                        .iter()
                        .filter(|e| !(e.router == r && e.source == source))
                        .copied()
                        .collect();
                    if kept.len() == old.len() {
                        return Err(missing());
                    }
                    next.prefixes.set(p, &kept);
                    report.prefixes_changed += 1;
                }
                Update::RemovePrefix(prefix) => {
                    let p = prefix.trunc();
                    if next.prefixes.get(&p).is_none() {
                        return Err(BuildError::NoSuchPrefix(*prefix));
                    }
                    next.prefixes.set(p, &[]);
                    report.prefixes_changed += 1;
                }
                Update::AddRouter(rc) => {
                    let r = Router::from_config(rc)?;
                    Arc::make_mut(&mut next.routers).insert(r, next.settings.max_routers)?;
                    topology = true;
                }
                Update::ReplaceRouter(rc) => {
                    let r = Router::from_config(rc)?;
                    *next.router_mut(rc.address)? = r;
                    topology = true;
                }
                Update::RemoveRouter(addr) => {
                    let (idx, _) = Arc::make_mut(&mut next.routers).remove(addr).ok_or(
                        BuildError::UnknownRouter {
                            router: *addr,
                            what: "the update".to_owned(),
                        },
                    )?;
                    let affected: Vec<(IpNet, Vec<Exit>)> = next
                        .prefixes
                        .iter()
                        .filter(|(_, ex)| ex.iter().any(|e| e.router == idx))
                        .map(|(p, ex)| {
                            (p, ex.iter().filter(|e| e.router != idx).copied().collect())
                        })
                        .collect();
                    report.prefixes_changed += affected.len();
                    for (p, ex) in affected {
                        next.prefixes.set(p, &ex);
                    }
                    new_sources.retain(|&s| s != idx);
                    topology = true;
                }
                Update::SetRouterState { router, state } => {
                    next.router_mut(*router)?.state = *state;
                    topology = true;
                }
                Update::SetNic { router, nic } => {
                    let mut rc = next.router_mut(*router)?.to_config();
                    rc.nics.retain(|n| n.index != nic.index);
                    rc.nics.push(nic.clone());
                    *next.router_mut(*router)? = Router::from_config(&rc)?;
                    topology = true;
                }
                Update::RemoveNic { router, index } => {
                    let r = next.router_mut(*router)?;
                    let before = r.nics.len();
                    r.nics.retain(|n| n.index != *index);
                    if r.nics.len() == before {
                        return Err(BuildError::NoSuchNic {
                            router: *router,
                            nic: *index,
                        });
                    }
                    topology = true;
                }
                Update::SetNicState { router, nic, state } => {
                    next.nic_mut(*router, *nic)?.state = *state;
                    topology = true;
                }
                Update::SetLink { router, nic, link } => {
                    if let Some(l) = link {
                        check_link(l).map_err(|what| BuildError::Router {
                            router: *router,
                            what: format!("link on NIC {nic}: {what}"),
                        })?;
                    }
                    next.nic_mut(*router, *nic)?.link = *link;
                    topology = true;
                }
                Update::SetRanking(text) => {
                    next.ranking = Ranking::parse(text)?;
                    ranking = true;
                    next.settings.ranking = text.clone();
                }
                Update::SetTtl(ttl) => next.settings.ttl = *ttl,
            }
        }
        next.prefixes.seal();
        if topology {
            next.graph = Arc::new(Graph::build(&next.routers)?);
            next.paths = Arc::new(next.compute_paths());
            report.paths_recomputed = true;
        } else if next.settings.path_cache == CacheScope::SourceRouters {
            let missing: Vec<RouterIdx> = new_sources
                .into_iter()
                .filter(|&r| next.paths.row(r).is_none())
                .collect();
            if !missing.is_empty() {
                let paths: &mut PathCache = Arc::make_mut(&mut next.paths);
                for r in missing {
                    if paths.row(r).is_none() {
                        paths.add_row(&next.graph, next.settings.routing, r);
                        report.rows_added += 1;
                    }
                }
            }
        }
        if topology || ranking || report.rows_added > 0 {
            next.terms = Arc::new(RowTerms::new(next.paths.rows.len()));
            next.costs = Arc::new(PrefixCosts::new(next.paths.rows.len()));
        } else if report.prefixes_changed > 0 {
            // Same terms: keep the keys of every shard the update left alone.
            next.costs = Arc::new(self.costs.carry(&self.prefixes, &next.prefixes));
        }
        Ok((next, report))
    }

    fn router_idx(&self, router: IpAddr, prefix: IpNet) -> Result<RouterIdx, BuildError> {
        self.routers
            .index_of(&router)
            .ok_or_else(|| BuildError::UnknownRouter {
                router,
                what: format!("network {prefix}"),
            })
    }

    fn router_mut(&mut self, addr: IpAddr) -> Result<&mut Router, BuildError> {
        let idx = self
            .routers
            .index_of(&addr)
            .ok_or_else(|| BuildError::UnknownRouter {
                router: addr,
                what: "the update".to_owned(),
            })?;
        Arc::make_mut(&mut self.routers)
            .slots
            .get_mut(idx as usize)
            .and_then(Option::as_mut)
            .ok_or(BuildError::UnknownRouter {
                router: addr,
                what: "the update".to_owned(),
            })
    }

    fn nic_mut(&mut self, router: IpAddr, nic: u8) -> Result<&mut NicConfig, BuildError> {
        self.router_mut(router)?
            .nics
            .iter_mut()
            .find(|n| n.index == nic)
            .ok_or(BuildError::NoSuchNic { router, nic })
    }

    /// Add `exit` to `prefix`, replacing an exit of the same kind at the same router.
    fn put_exit(&mut self, prefix: IpNet, exit: Exit) -> Result<(), BuildError> {
        let mut exits: Vec<Exit> = self.prefixes.get(&prefix).unwrap_or(&[]).to_vec();
        exits.retain(|e| !(e.router == exit.router && e.source == exit.source));
        exits.push(exit);
        if exits.len() > usize::from(u16::MAX) {
            return Err(BuildError::TooManyExits(prefix));
        }
        self.prefixes.set(prefix, &exits);
        Ok(())
    }
}
