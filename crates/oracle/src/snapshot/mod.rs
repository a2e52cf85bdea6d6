//! The oracle database as an immutable snapshot: routers and links, the router-pair path cache,
//! and the prefix table with the §3.2.3 routing abstraction.
//!
//! Readers hold an `Arc<TopologySnapshot>` and never wait; [`TopologySnapshot::apply`] builds a
//! new snapshot from an old one, sharing whatever the change leaves alone (see [`Update`]).

mod costs;
mod groups;
mod lpm;
mod paths;
mod prefixes;
mod query;
mod routers;
mod terms;
mod update;

#[cfg(test)]
mod costs_tests;
#[cfg(test)]
mod prefix_tests;
#[cfg(test)]
mod rank_tests;
#[cfg(test)]
mod tests;

pub use groups::ExitKey;
pub use query::{ExitInfo, Located, RankScratch};
pub use routers::{MAX_LINK_WEIGHT, MAX_ROUTERS};
pub use update::{Update, UpdateReport};

use crate::model::{CacheScope, ExternalNetwork, OracleConfig, Settings, SourceNetwork};
use crate::rank::{ExprError, Ranking};
use costs::PrefixCosts;
use ipnet::IpNet;
use paths::{PathCache, row_sources};
use prefixes::{Exit, PrefixTable};
use routers::{Graph, Router, RouterTable};
use std::net::IpAddr;
use std::sync::Arc;
use terms::RowTerms;
use thiserror::Error;

/// Why a configuration or an update was refused. Nothing changes when one is returned.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum BuildError {
    /// Two routers share an address.
    #[error("router {0} is defined twice")]
    DuplicateRouter(IpAddr),
    /// More routers than `max_routers` (or [`MAX_ROUTERS`]).
    #[error("more than {0} routers (raise `max_routers`)")]
    TooManyRouters(u32),
    /// Something wrong inside one router's definition.
    #[error("router {router}: {what}")]
    Router {
        /// The router.
        router: IpAddr,
        /// What is wrong.
        what: String,
    },
    /// Two NICs share a local address.
    #[error("NIC address {address} is used by both router {} and router {}", routers.0, routers.1)]
    DuplicateNicAddress {
        /// The address.
        address: IpAddr,
        /// The two routers.
        routers: (IpAddr, IpAddr),
    },
    /// A network or update names a router that does not exist.
    #[error("no router {router} (named by {what})")]
    UnknownRouter {
        /// The missing router.
        router: IpAddr,
        /// What named it.
        what: String,
    },
    /// The same network is attached to the same router twice.
    #[error("{kind} network {prefix} is attached to router {router} twice")]
    DuplicateNetwork {
        /// `source` or `external`.
        kind: &'static str,
        /// The prefix.
        prefix: IpNet,
        /// The router.
        router: IpAddr,
    },
    /// An update removes a network that is not there.
    #[error("no {kind} network {prefix} at router {router}")]
    NoSuchNetwork {
        /// `source` or `external`.
        kind: &'static str,
        /// The prefix.
        prefix: IpNet,
        /// The router.
        router: IpAddr,
    },
    /// An update removes a prefix that is not there.
    #[error("no prefix {0}")]
    NoSuchPrefix(IpNet),
    /// An update names a NIC that is not there.
    #[error("router {router} has no NIC {nic}")]
    NoSuchNic {
        /// The router.
        router: IpAddr,
        /// The NIC index.
        nic: u8,
    },
    /// The ranking does not compile.
    #[error("ranking: {0}")]
    Ranking(#[from] ExprError),
    /// A prefix has more exits than the table holds (65,535).
    #[error("prefix {0} has more than 65535 exits")]
    TooManyExits(IpNet),
}

/// An immutable oracle database. Cheap to share (`Arc`), never mutated; updates make a new one.
#[derive(Clone, Debug)]
pub struct TopologySnapshot {
    settings: Settings,
    ranking: Ranking,
    routers: Arc<RouterTable>,
    graph: Arc<Graph>,
    paths: Arc<PathCache>,
    /// Per-(row, exit router) ranking terms for `paths` under `ranking`, filled on first use.
    terms: Arc<RowTerms>,
    /// Per-(row, prefix) sort keys from `terms` and `prefixes`, filled on first use.
    costs: Arc<PrefixCosts>,
    prefixes: PrefixTable,
    generation: u64,
}

impl TopologySnapshot {
    /// Compile a configuration: check it, connect the NICs into links, compute the routes and
    /// the path cache, and load the prefix table.
    pub fn build(config: &OracleConfig) -> Result<TopologySnapshot, BuildError> {
        let ranking = Ranking::parse(&config.oracle.ranking)?;
        let mut routers = RouterTable::default();
        for rc in &config.routers {
            routers.insert(Router::from_config(rc)?, config.oracle.max_routers)?;
        }
        let graph = Graph::build(&routers)?;
        let prefixes = build_prefixes(
            &routers,
            &config.oracle,
            &config.source_networks,
            &config.external_networks,
        )?;
        let mut snap = TopologySnapshot {
            settings: config.oracle.clone(),
            ranking,
            routers: Arc::new(routers),
            graph: Arc::new(graph),
            paths: Arc::default(),
            terms: Arc::default(),
            costs: Arc::default(),
            prefixes,
            generation: 0,
        };
        snap.paths = Arc::new(snap.compute_paths());
        snap.terms = Arc::new(RowTerms::new(snap.paths.rows.len()));
        snap.costs = Arc::new(PrefixCosts::new(snap.paths.rows.len()));
        Ok(snap)
    }

    /// All rows the cache scope asks for, computed afresh.
    fn compute_paths(&self) -> PathCache {
        let with_source = self.routers_with_source_networks();
        let sources = row_sources(
            &self.graph,
            self.settings.path_cache,
            |r| with_source.get(r as usize).copied().unwrap_or(false),
            |r| self.routers.get(r).is_some(),
        );
        PathCache::build(&self.graph, self.settings.routing, &sources)
    }

    fn routers_with_source_networks(&self) -> Vec<bool> {
        let mut v = vec![false; self.routers.slots.len()];
        if self.settings.path_cache == CacheScope::SourceRouters {
            for (_, exits) in self.prefixes.iter() {
                for e in exits.iter().filter(|e| e.source) {
                    if let Some(x) = v.get_mut(e.router as usize) {
                        *x = true;
                    }
                }
            }
        }
        v
    }

    /// The settings this snapshot was built with.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The ranking in force.
    pub fn ranking(&self) -> &Ranking {
        &self.ranking
    }

    /// Incremented by every [`apply`](Self::apply); 0 for a fresh build.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Number of routers.
    pub fn router_count(&self) -> usize {
        self.routers.len
    }

    /// Number of usable directed links.
    pub fn link_count(&self) -> usize {
        self.graph.edges.len()
    }

    /// Number of prefixes (source and external networks; a prefix with several exits counts
    /// once).
    pub fn prefix_count(&self) -> usize {
        self.prefixes.len()
    }

    /// Number of (prefix, exit) attachments.
    pub fn exit_count(&self) -> usize {
        self.prefixes.iter().map(|(_, e)| e.len()).sum()
    }

    /// Number of rows in the path cache (each covers every router).
    pub fn path_rows(&self) -> usize {
        self.paths.rows.len()
    }

    /// Bytes held by the path cache, with the ranking terms of the rows used so far.
    pub fn path_cache_bytes(&self) -> usize {
        self.paths.heap_bytes() + self.terms.heap_bytes()
    }

    /// Bytes held by the per-(row, prefix) sort keys built so far (8 per prefix for each path
    /// row that queries came from, up to a bound; see `snapshot/costs.rs`).
    pub fn prefix_costs_bytes(&self) -> usize {
        self.costs.heap_bytes()
    }

    /// Bytes held by the prefix table: prefixes, exits and lookup indexes (shards shared with
    /// other snapshots counted in full).
    pub fn prefix_table_bytes(&self) -> usize {
        self.prefixes.heap_bytes()
    }

    /// Whether this snapshot shares its path cache with `other` (an update that left the
    /// topology alone recomputed nothing).
    pub fn shares_paths_with(&self, other: &TopologySnapshot) -> bool {
        Arc::ptr_eq(&self.paths, &other.paths)
    }

    /// The database written back out as configuration (`dump`): routers in slot order, networks
    /// sorted by prefix then router. `build(&s.to_config())` answers every query as `s` does.
    pub fn to_config(&self) -> OracleConfig {
        let mut cfg = OracleConfig {
            oracle: self.settings.clone(),
            routers: self.routers.iter().map(|(_, r)| r.to_config()).collect(),
            ..OracleConfig::default()
        };
        for (prefix, exits) in self.prefixes.iter() {
            for e in exits {
                let Some(router) = self.routers.get(e.router).map(|r| r.address) else {
                    continue;
                };
                if e.source {
                    cfg.source_networks.push(SourceNetwork {
                        prefix,
                        router,
                        nic: e.nic,
                    });
                } else {
                    cfg.external_networks.push(ExternalNetwork {
                        prefix,
                        router,
                        nic: e.nic,
                        as_number: e.as_number,
                        as_distance: e.as_distance,
                    });
                }
            }
        }
        cfg.source_networks.sort_by_key(|n| (n.prefix, n.router));
        cfg.external_networks.sort_by_key(|n| (n.prefix, n.router));
        cfg
    }
}

fn build_prefixes(
    routers: &RouterTable,
    settings: &Settings,
    sources: &[SourceNetwork],
    externals: &[ExternalNetwork],
) -> Result<PrefixTable, BuildError> {
    let mut all: Vec<(IpNet, Exit)> = Vec::with_capacity(sources.len() + externals.len());
    let router = |addr: IpAddr, prefix: IpNet| {
        routers
            .index_of(&addr)
            .ok_or_else(|| BuildError::UnknownRouter {
                router: addr,
                what: format!("network {prefix}"),
            })
    };
    for n in sources {
        all.push((
            n.prefix.trunc(),
            Exit {
                router: router(n.router, n.prefix)?,
                as_number: settings.local_as,
                as_distance: 0,
                nic: n.nic,
                source: true,
            },
        ));
    }
    for n in externals {
        all.push((
            n.prefix.trunc(),
            Exit {
                router: router(n.router, n.prefix)?,
                as_number: n.as_number,
                as_distance: n.as_distance,
                nic: n.nic,
                source: false,
            },
        ));
    }
    all.sort_unstable_by_key(|(p, e)| (*p, e.source, e.router));
    for w in all.windows(2) {
        let ((p, a), (q, b)) = (&w[0], &w[1]);
        if p == q && a.source == b.source && a.router == b.router {
            return Err(BuildError::DuplicateNetwork {
                kind: if a.source { "source" } else { "external" },
                prefix: *p,
                router: routers
                    .get(a.router)
                    .map_or(IpAddr::from([0, 0, 0, 0]), |r| r.address),
            });
        }
    }
    let mut entries: Vec<(IpNet, Vec<Exit>)> = Vec::new();
    for (p, e) in all {
        match entries.last_mut() {
            Some((q, exits)) if *q == p => exits.push(e),
            _ => entries.push((p, vec![e])),
        }
    }
    if let Some((p, _)) = entries
        .iter()
        .find(|(_, e)| e.len() > usize::from(u16::MAX))
    {
        return Err(BuildError::TooManyExits(*p));
    }
    Ok(PrefixTable::from_entries(entries))
}
