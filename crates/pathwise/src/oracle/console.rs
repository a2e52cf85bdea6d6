//! The console (seed §4.7, Fig. 12) over the management socket ([`crate::mgmt`]): `show`,
//! `set`, `reload`, `dump`, `create`, `delete`.
//!
//! The verbs' arguments are the typed enums below; the command line parses them (they are clap
//! subcommands) and sends them as JSON, and the server reads them back with serde, so the two
//! sides cannot drift apart. `create`, `delete` and `set` become [`Update`]s applied with
//! [`SharedSnapshot::update`]: the new snapshot is built on the management thread while the
//! workers keep answering from the old one, then swapped in atomically. `reload` builds a whole
//! new snapshot from the configuration file the same way. Every error is a sentence naming what
//! was wrong; nothing changes when one is returned.

use super::counters::Counters;
use super::views::{
    ChangeReport, ExitLine, ExitView, NetworksView, PrefixView, RouterLine, RouterView, Summary,
    rank_view,
};
use ipnet::IpNet;
use pathwise_oracle::model::{LinkConfig, NicConfig, RouterConfig, State};
use pathwise_oracle::{SharedSnapshot, TopologySnapshot, Update, config};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Default management socket of the oracle server.
pub const DEFAULT_SOCKET: &str = "/run/pathwise/oracle.sock";

/// What the console calls the server in its "not running" message.
pub const DAEMON: &str = "oracle server (`pathwise oracle serve`)";

/// Administrative state on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StateArg {
    /// In service.
    Up,
    /// Out of service: no path crosses it.
    Down,
}

impl From<StateArg> for State {
    fn from(s: StateArg) -> State {
        match s {
            StateArg::Up => State::Up,
            StateArg::Down => State::Down,
        }
    }
}

/// Which networks to list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetworkKind {
    /// Networks attached to internal routers (seed `snetwork`).
    Source,
    /// Networks reached through exit routers (seed `enetwork`).
    External,
}

/// `show`: read the running server.
#[derive(Clone, Debug, PartialEq, clap::Subcommand, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "kebab-case")]
pub enum Show {
    /// The database and the server at a glance (the default).
    Summary,
    /// Counters: datagrams received, answered, rejected by Rcode and reason, dropped by reason.
    Counters,
    /// The counters as the metrics page shows them (OpenMetrics text).
    Metrics,
    /// One router: state, NICs with their links, routes, attached networks.
    Router {
        /// The router's address.
        address: IpAddr,
    },
    /// Every router, one line each.
    Routers,
    /// The most specific prefix containing an address, with its exits.
    Prefix {
        /// The address to look up.
        address: IpAddr,
        /// Also show the path metrics and cost from this query source.
        #[arg(long)]
        source: Option<IpAddr>,
    },
    /// Source or external networks (seed `print networks SRC`).
    Networks {
        /// Which networks.
        kind: NetworkKind,
        /// Most networks to list.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// The BMP feed (`serve --bmp`): sessions, BGP peers, prefixes per exit, updates applied,
    /// messages and drops.
    Bgp,
    /// Rank addresses as the server would for a query from SOURCE, with each one's path
    /// metrics and cost.
    Rank {
        /// The query's source address (it must be inside a source network).
        #[arg(long)]
        source: IpAddr,
        /// Candidate addresses.
        #[arg(required = true, num_args = 1..)]
        candidates: Vec<IpAddr>,
    },
}

/// `create`: add to the running database.
#[derive(Clone, Debug, PartialEq, clap::Subcommand, Serialize, Deserialize)]
#[serde(tag = "object", rename_all = "kebab-case")]
pub enum Create {
    /// A router, up, without links (seed `router ADDRESS COUNT`); connect it with `create link`.
    Router {
        /// Its identifying (loopback) address.
        address: IpAddr,
        /// How many NICs it has (indices 0..NICS).
        #[arg(long, default_value_t = 16)]
        nics: u16,
    },
    /// A NIC and the link leaving through it (seed `nic` + `link`). Links are directed: create
    /// the reverse direction on the peer router too.
    Link {
        /// The router.
        router: IpAddr,
        /// NIC index (below the router's NIC count).
        nic: u8,
        /// This side's address.
        #[arg(long)]
        local: IpAddr,
        /// The far side's address (another router's NIC address).
        #[arg(long)]
        peer: IpAddr,
        /// Bandwidth, Mbit/s.
        #[arg(long)]
        bandwidth: f64,
        /// Latency, ms.
        #[arg(long)]
        latency: f64,
        /// Interior routing weight.
        #[arg(long)]
        weight: u32,
        /// Congestion, fraction of capacity (0..=1).
        #[arg(long, default_value_t = 0.0)]
        congestion: f64,
    },
    /// A network attached to a router (seed `snetwork PREFIX ROUTER NIC`).
    #[command(alias = "snetwork")]
    SourceNetwork {
        /// The network.
        prefix: IpNet,
        /// The router it hangs off.
        router: IpAddr,
        /// The router's NIC towards it.
        nic: u8,
    },
    /// A network reached through an exit router (seed `enetwork PREFIX ROUTER NIC AS DISTANCE`).
    #[command(alias = "enetwork")]
    ExternalNetwork {
        /// The network.
        prefix: IpNet,
        /// The exit router.
        router: IpAddr,
        /// The exit's NIC towards the neighbouring AS.
        nic: u8,
        /// The network's (origin) AS number.
        as_number: u32,
        /// AS hops from the exit to the network.
        as_distance: u16,
    },
}

/// `delete`: remove from the running database.
#[derive(Clone, Debug, PartialEq, clap::Subcommand, Serialize, Deserialize)]
#[serde(tag = "object", rename_all = "kebab-case")]
pub enum Delete {
    /// A router, its links and every network attached to it.
    Router {
        /// The router's address.
        address: IpAddr,
    },
    /// A NIC and the link leaving through it.
    Link {
        /// The router.
        router: IpAddr,
        /// NIC index.
        nic: u8,
    },
    /// A source network from one router.
    #[command(alias = "snetwork")]
    SourceNetwork {
        /// The network.
        prefix: IpNet,
        /// The router.
        router: IpAddr,
    },
    /// An external network from one exit.
    #[command(alias = "enetwork")]
    ExternalNetwork {
        /// The network.
        prefix: IpNet,
        /// The exit router.
        router: IpAddr,
    },
    /// A prefix with all its exits.
    Prefix {
        /// The network.
        prefix: IpNet,
    },
}

/// `set`: change the running database.
#[derive(Clone, Debug, PartialEq, clap::Subcommand, Serialize, Deserialize)]
#[serde(tag = "object", rename_all = "kebab-case")]
pub enum Set {
    /// The link leaving through a NIC: any of its properties, and the NIC's state.
    Link {
        /// The router.
        router: IpAddr,
        /// NIC index.
        nic: u8,
        /// Bandwidth, Mbit/s.
        #[arg(long)]
        bandwidth: Option<f64>,
        /// Latency, ms.
        #[arg(long)]
        latency: Option<f64>,
        /// Interior routing weight.
        #[arg(long)]
        weight: Option<u32>,
        /// Congestion, fraction of capacity (0..=1).
        #[arg(long)]
        congestion: Option<f64>,
        /// Take the NIC (and so the link) up or down.
        #[arg(long)]
        state: Option<StateArg>,
    },
    /// A router's state.
    Router {
        /// The router's address.
        address: IpAddr,
        /// up or down.
        state: StateArg,
    },
    /// The ranking: seed, latency-first, fewest-hops, lowest-weight, widest-bandwidth, or a
    /// cost expression over the path metrics (quote it), e.g. "latency + 8 * as_distance".
    Ranking {
        /// Name or expression.
        #[arg(allow_hyphen_values = true)]
        ranking: String,
    },
    /// The TTL written into answers.
    Ttl {
        /// Seconds.
        seconds: u16,
    },
}

/// `reload` arguments.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Reload {
    /// Configuration file to read instead of the server's own (it becomes the server's file).
    pub config: Option<PathBuf>,
}

/// The server side of the console.
#[derive(Debug)]
pub struct Console {
    shared: Arc<SharedSnapshot>,
    counters: Arc<Counters>,
    config: Mutex<PathBuf>,
    listen: SocketAddr,
    started: Instant,
    swaps: AtomicU64,
    last_change: Mutex<Option<String>>,
    /// The management socket's refused connections ([`crate::mgmt::Server::refused_counter`]).
    management_refused: Arc<AtomicU64>,
    /// The ALTO server's counters, when it runs.
    alto: Option<Arc<super::alto::counters::AltoCounters>>,
    /// The BMP feed, once `serve --bmp` starts it.
    bgp: Arc<std::sync::OnceLock<Arc<super::bmp::BmpFeed>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn parse<T: serde::de::DeserializeOwned>(verb: &str, args: &Value) -> Result<T, String> {
    serde_json::from_value(args.clone()).map_err(|e| format!("{verb}: bad arguments: {e}"))
}

fn json<T: Serialize>(v: &T) -> Result<Value, String> {
    serde_json::to_value(v).map_err(|e| format!("encoding the answer: {e}"))
}

fn need_router(snap: &TopologySnapshot, address: IpAddr) -> Result<RouterConfig, String> {
    snap.router(address)
        .ok_or_else(|| format!("no router {address} (`show routers` lists them)"))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl Console {
    /// A console for the server serving `shared`, loaded from `config`.
    pub fn new(
        shared: Arc<SharedSnapshot>,
        counters: Arc<Counters>,
        config: PathBuf,
        listen: SocketAddr,
        management_refused: Arc<AtomicU64>,
    ) -> Self {
        Console {
            management_refused,
            shared,
            counters,
            config: Mutex::new(config),
            listen,
            started: Instant::now(),
            swaps: AtomicU64::new(0),
            last_change: Mutex::new(None),
            alto: None,
            bgp: Arc::default(),
        }
    }

    /// Report the ALTO server's counters too (`show counters`, the metrics page).
    pub fn with_alto(mut self, alto: Option<Arc<super::alto::counters::AltoCounters>>) -> Self {
        self.alto = alto;
        self
    }

    /// Where the BMP feed is registered (`show bgp`, the metrics page).
    pub fn bgp_slot(&self) -> Arc<std::sync::OnceLock<Arc<super::bmp::BmpFeed>>> {
        self.bgp.clone()
    }

    /// Answer one management request.
    pub fn handle(&self, verb: &str, args: &Value) -> Result<Value, String> {
        match verb {
            "show" => self.show(&parse::<Show>(verb, args)?),
            "create" | "delete" | "set" => {
                // "create link", "set ranking": what an error message starts with.
                let context = format!(
                    "{verb} {}",
                    args.get("object").and_then(Value::as_str).unwrap_or("")
                );
                let snap = self.shared.load_full();
                let (what, updates) = match verb {
                    "create" => create(&snap, &parse(verb, args)?)?,
                    "delete" => delete(&snap, &parse(verb, args)?)?,
                    _ => set(&snap, &parse(verb, args)?)?,
                };
                self.change(&context, &what, &updates)
            }
            "reload" => {
                let r: Reload = if args.is_null() {
                    Reload::default()
                } else {
                    parse(verb, args)?
                };
                self.reload(r.config)
            }
            "dump" => {
                let snap = self.shared.load_full();
                let toml = config::dump(&snap).map_err(|e| format!("dump: {e}"))?;
                Ok(serde_json::json!({
                    "toml": toml,
                    "generation": snap.generation(),
                    "routers": snap.router_count(),
                    "prefixes": snap.prefix_count(),
                }))
            }
            "import" => {
                let what: super::mrt::Import = parse(verb, args)?;
                let old = self.shared.load_full();
                let report = super::mrt::run(&self.shared, &what)?;
                self.swapped(&report.message);
                retire(old);
                json(&report)
            }
            "help" | "" => Ok(Value::String(
                "commands: show, set, reload, dump, create, delete, import (see `pathwise oracle --help`)"
                    .into(),
            )),
            other => Err(format!(
                "unknown command {other:?}; the oracle console knows show, set, reload, dump, import, \
                 create and delete"
            )),
        }
    }

    fn summary(&self) -> Summary {
        let snap = self.shared.load_full();
        let s = snap.settings();
        Summary {
            config: lock(&self.config).display().to_string(),
            listen: self.listen.to_string(),
            workers: self.counters.worker_count(),
            uptime_s: self.started.elapsed().as_secs_f64(),
            swaps: self.swaps.load(Relaxed),
            generation: snap.generation(),
            routers: snap.router_count(),
            links: snap.link_count(),
            prefixes: snap.prefix_count(),
            exits: snap.exit_count(),
            path_rows: snap.path_rows(),
            path_cache_bytes: snap.path_cache_bytes(),
            ranking: snap.ranking().text().to_owned(),
            ttl: s.ttl,
            routing: format!("{:?}", s.routing).to_lowercase(),
            path_cache: match s.path_cache {
                pathwise_oracle::model::CacheScope::AllPairs => "all-pairs".into(),
                pathwise_oracle::model::CacheScope::SourceRouters => "source-routers".into(),
            },
            local_as: s.local_as,
            last_change: lock(&self.last_change).clone(),
        }
    }

    fn show(&self, what: &Show) -> Result<Value, String> {
        let snap = self.shared.load_full();
        match what {
            Show::Summary => json(&self.summary()),
            Show::Counters => {
                let mut report = self.counters.report();
                report.management_refused = self.management_refused.load(Relaxed);
                report.alto = self.alto.as_ref().map(|a| a.report());
                json(&report)
            }
            Show::Metrics => {
                let mut m = super::metrics(
                    &self.counters,
                    &self.shared,
                    &self.management_refused,
                    self.alto.as_deref(),
                );
                if let Some(feed) = self.bgp.get() {
                    feed.metrics(&mut m);
                }
                Ok(Value::String(crate::metrics::page([m])))
            }
            Show::Bgp => match self.bgp.get() {
                Some(feed) => json(&feed.view()),
                None => Err("BMP is not enabled: start the server with --bmp ADDR".into()),
            },
            Show::Router { address } => {
                let router = need_router(&snap, *address)?;
                let cfg = snap.to_config();
                let mut networks: Vec<(String, String)> = cfg
                    .source_networks
                    .iter()
                    .filter(|n| n.router == *address)
                    .map(|n| (n.prefix.to_string(), "source".to_owned()))
                    .chain(
                        cfg.external_networks
                            .iter()
                            .filter(|n| n.router == *address)
                            .map(|n| (n.prefix.to_string(), "external".to_owned())),
                    )
                    .collect();
                let more = networks.len().saturating_sub(20);
                networks.truncate(20);
                json(&RouterView {
                    router,
                    networks,
                    more_networks: more,
                })
            }
            Show::Routers => {
                let lines: Vec<RouterLine> = snap
                    .router_addresses()
                    .filter_map(|a| snap.router(a))
                    .map(|r| RouterLine {
                        address: r.address,
                        state: if r.state.is_up() { "up" } else { "down" }.into(),
                        nics: (r.nics.len(), r.nic_count),
                        links: r.nics.iter().filter(|n| n.link.is_some()).count(),
                    })
                    .collect();
                json(&lines)
            }
            Show::Prefix { address, source } => {
                let located = snap.locate(*address).ok_or_else(|| {
                    format!("no prefix contains {address}: the oracle cannot place it")
                })?;
                let from_source = match source {
                    Some(s) => Some(rank_view(&snap, *s, &[*address])?),
                    None => None,
                };
                json(&PrefixView {
                    address: *address,
                    prefix: located.prefix.to_string(),
                    exits: located
                        .exits
                        .iter()
                        .map(|e| ExitView {
                            router: e.router,
                            nic: e.nic,
                            kind: if e.source { "source" } else { "external" }.into(),
                            as_number: e.as_number,
                            as_distance: e.as_distance,
                        })
                        .collect(),
                    from_source,
                })
            }
            Show::Networks { kind, limit } => {
                let cfg = snap.to_config();
                let (total, networks): (usize, Vec<ExitLine>) = match kind {
                    NetworkKind::Source => (
                        cfg.source_networks.len(),
                        cfg.source_networks
                            .iter()
                            .take(*limit)
                            .map(|n| ExitLine {
                                prefix: n.prefix.to_string(),
                                router: n.router,
                                nic: n.nic,
                                as_number: None,
                                as_distance: None,
                            })
                            .collect(),
                    ),
                    NetworkKind::External => (
                        cfg.external_networks.len(),
                        cfg.external_networks
                            .iter()
                            .take(*limit)
                            .map(|n| ExitLine {
                                prefix: n.prefix.to_string(),
                                router: n.router,
                                nic: n.nic,
                                as_number: Some(n.as_number),
                                as_distance: Some(n.as_distance),
                            })
                            .collect(),
                    ),
                };
                json(&NetworksView {
                    kind: match kind {
                        NetworkKind::Source => "source",
                        NetworkKind::External => "external",
                    }
                    .into(),
                    total,
                    networks,
                })
            }
            Show::Rank { source, candidates } => json(&rank_view(&snap, *source, candidates)?),
        }
    }

    /// Apply `updates` (built off the hot path, swapped in atomically); `context` starts an
    /// error message, `what` the success message.
    fn change(&self, context: &str, what: &str, updates: &[Update]) -> Result<Value, String> {
        let old = self.shared.load_full();
        let t = Instant::now();
        let report = self
            .shared
            .update(updates)
            .map_err(|e| format!("{context}: {e}"))?;
        let build = t.elapsed();
        let generation = self.shared.load().generation();
        self.swapped(what);
        retire(old);
        json(&ChangeReport {
            message: format!("operation successful: {what}"),
            generation,
            paths_recomputed: report.paths_recomputed,
            prefixes_changed: report.prefixes_changed,
            build_ms: ms(build),
        })
    }

    fn reload(&self, path: Option<PathBuf>) -> Result<Value, String> {
        let path = path.unwrap_or_else(|| lock(&self.config).clone());
        let t = Instant::now();
        let cfg = config::load_file(&path).map_err(|e| format!("reload: {e}"))?;
        let snap = TopologySnapshot::build(&cfg)
            .map_err(|e| format!("reload: {}: {e}", path.display()))?;
        let (routers, prefixes) = (snap.router_count(), snap.prefix_count());
        let old = self.shared.load_full();
        self.shared.store(snap);
        let build = t.elapsed();
        let what = format!(
            "reloaded {} ({routers} routers, {prefixes} prefixes)",
            path.display()
        );
        *lock(&self.config) = path;
        self.swapped(&what);
        retire(old);
        json(&ChangeReport {
            message: format!("operation successful: {what}"),
            generation: 0,
            paths_recomputed: true,
            prefixes_changed: prefixes,
            build_ms: ms(build),
        })
    }

    fn swapped(&self, what: &str) {
        self.swaps.fetch_add(1, Relaxed);
        *lock(&self.last_change) = Some(what.to_owned());
        tracing::info!(change = what, "oracle snapshot swapped");
    }
}

/// Drop the replaced snapshot here, on the management thread, rather than in whichever worker
/// happens to release the last reference: freeing a large snapshot is not free, and workers
/// should only answer queries. A worker holds a snapshot for one batch, so the wait is short;
/// after a second the snapshot is let go regardless.
fn retire(old: Arc<TopologySnapshot>) {
    let deadline = Instant::now() + Duration::from_secs(1);
    while Arc::strong_count(&old) > 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn link_exists(snap: &TopologySnapshot, prefix: IpNet, router: IpAddr, source: bool) -> bool {
    snap.locate(prefix.trunc().network()).is_some_and(|l| {
        l.prefix == prefix.trunc()
            && l.exits
                .iter()
                .any(|e| e.router == router && e.source == source)
    })
}

fn create(snap: &TopologySnapshot, c: &Create) -> Result<(String, Vec<Update>), String> {
    Ok(match c {
        Create::Router { address, nics } => {
            if snap.router(*address).is_some() {
                return Err(format!("create router: router {address} already exists"));
            }
            (
                format!("created router {address} with {nics} NICs"),
                vec![Update::AddRouter(RouterConfig {
                    address: *address,
                    nic_count: *nics,
                    state: State::Up,
                    nics: Vec::new(),
                    routes: Vec::new(),
                })],
            )
        }
        Create::Link {
            router,
            nic,
            local,
            peer,
            bandwidth,
            latency,
            weight,
            congestion,
        } => {
            let r = need_router(snap, *router)?;
            if r.nics.iter().any(|n| n.index == *nic) {
                return Err(format!(
                    "create link: router {router} already has NIC {nic} (`set link` changes it, \
                     `delete link` removes it)"
                ));
            }
            (
                format!("created NIC {nic} of router {router} with a link to {peer}"),
                vec![Update::SetNic {
                    router: *router,
                    nic: NicConfig {
                        index: *nic,
                        local: *local,
                        peer: *peer,
                        state: State::Up,
                        link: Some(LinkConfig {
                            bandwidth: *bandwidth,
                            latency: *latency,
                            weight: *weight,
                            congestion: *congestion,
                        }),
                    },
                }],
            )
        }
        Create::SourceNetwork {
            prefix,
            router,
            nic,
        } => {
            need_router(snap, *router)?;
            if link_exists(snap, *prefix, *router, true) {
                return Err(format!(
                    "create source-network: {prefix} is already attached to router {router}"
                ));
            }
            (
                format!("created source network {prefix} at router {router}"),
                vec![Update::AddSourceNetwork(
                    pathwise_oracle::model::SourceNetwork {
                        prefix: *prefix,
                        router: *router,
                        nic: *nic,
                    },
                )],
            )
        }
        Create::ExternalNetwork {
            prefix,
            router,
            nic,
            as_number,
            as_distance,
        } => {
            need_router(snap, *router)?;
            if link_exists(snap, *prefix, *router, false) {
                return Err(format!(
                    "create external-network: {prefix} is already reached through exit {router}"
                ));
            }
            (
                format!("created external network {prefix} at exit {router}"),
                vec![Update::AddExternalNetwork(
                    pathwise_oracle::model::ExternalNetwork {
                        prefix: *prefix,
                        router: *router,
                        nic: *nic,
                        as_number: *as_number,
                        as_distance: *as_distance,
                    },
                )],
            )
        }
    })
}

fn delete(snap: &TopologySnapshot, d: &Delete) -> Result<(String, Vec<Update>), String> {
    Ok(match d {
        Delete::Router { address } => {
            need_router(snap, *address)?;
            (
                format!("deleted router {address} with its links and networks"),
                vec![Update::RemoveRouter(*address)],
            )
        }
        Delete::Link { router, nic } => {
            let r = need_router(snap, *router)?;
            if !r.nics.iter().any(|n| n.index == *nic) {
                return Err(format!("delete link: router {router} has no NIC {nic}"));
            }
            (
                format!("deleted NIC {nic} of router {router} and its link"),
                vec![Update::RemoveNic {
                    router: *router,
                    index: *nic,
                }],
            )
        }
        Delete::SourceNetwork { prefix, router } => {
            if !link_exists(snap, *prefix, *router, true) {
                return Err(format!(
                    "delete source-network: {prefix} is not attached to router {router}"
                ));
            }
            (
                format!("deleted source network {prefix} from router {router}"),
                vec![Update::RemoveSourceNetwork {
                    prefix: *prefix,
                    router: *router,
                }],
            )
        }
        Delete::ExternalNetwork { prefix, router } => {
            if !link_exists(snap, *prefix, *router, false) {
                return Err(format!(
                    "delete external-network: {prefix} is not reached through exit {router}"
                ));
            }
            (
                format!("deleted external network {prefix} from exit {router}"),
                vec![Update::RemoveExternalNetwork {
                    prefix: *prefix,
                    router: *router,
                }],
            )
        }
        Delete::Prefix { prefix } => {
            let exact = snap
                .locate(prefix.trunc().network())
                .is_some_and(|l| l.prefix == prefix.trunc());
            if !exact {
                return Err(format!("delete prefix: no prefix {prefix} in the database"));
            }
            (
                format!("deleted prefix {prefix} with all its exits"),
                vec![Update::RemovePrefix(*prefix)],
            )
        }
    })
}

fn set(snap: &TopologySnapshot, s: &Set) -> Result<(String, Vec<Update>), String> {
    Ok(match s {
        Set::Link {
            router,
            nic,
            bandwidth,
            latency,
            weight,
            congestion,
            state,
        } => {
            let r = need_router(snap, *router)?;
            let n = r
                .nics
                .iter()
                .find(|n| n.index == *nic)
                .ok_or_else(|| format!("set link: router {router} has no NIC {nic}"))?;
            let props = bandwidth.is_some()
                || latency.is_some()
                || weight.is_some()
                || congestion.is_some();
            if !props && state.is_none() {
                return Err("set link: nothing to change; give --bandwidth, --latency, \
                            --weight, --congestion or --state"
                    .into());
            }
            let mut updates = Vec::new();
            if props {
                let link = match n.link {
                    Some(l) => LinkConfig {
                        bandwidth: bandwidth.unwrap_or(l.bandwidth),
                        latency: latency.unwrap_or(l.latency),
                        weight: weight.unwrap_or(l.weight),
                        congestion: congestion.unwrap_or(l.congestion),
                    },
                    None => match (bandwidth, latency, weight) {
                        (Some(b), Some(l), Some(w)) => LinkConfig {
                            bandwidth: *b,
                            latency: *l,
                            weight: *w,
                            congestion: congestion.unwrap_or(0.0),
                        },
                        _ => {
                            return Err(format!(
                                "set link: NIC {nic} of router {router} has no link yet; give \
                                 --bandwidth, --latency and --weight to create one"
                            ));
                        }
                    },
                };
                updates.push(Update::SetLink {
                    router: *router,
                    nic: *nic,
                    link: Some(link),
                });
            }
            if let Some(st) = state {
                updates.push(Update::SetNicState {
                    router: *router,
                    nic: *nic,
                    state: (*st).into(),
                });
            }
            (format!("changed NIC {nic} of router {router}"), updates)
        }
        Set::Router { address, state } => {
            need_router(snap, *address)?;
            (
                format!(
                    "router {address} is {}",
                    if *state == StateArg::Up { "up" } else { "down" }
                ),
                vec![Update::SetRouterState {
                    router: *address,
                    state: (*state).into(),
                }],
            )
        }
        Set::Ranking { ranking } => {
            // Check here for the error message's sake; `apply` checks again.
            pathwise_oracle::Ranking::parse(ranking).map_err(|e| format!("set ranking: {e}"))?;
            (
                format!("ranking is \"{}\"", ranking.trim()),
                vec![Update::SetRanking(ranking.clone())],
            )
        }
        Set::Ttl { seconds } => (
            format!("answers carry a TTL of {seconds} s"),
            vec![Update::SetTtl(*seconds)],
        ),
    })
}
