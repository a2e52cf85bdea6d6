//! What the console answers, as typed values (sent as JSON over the management socket) and as
//! text. The demo reuses [`RankView`].

use pathwise_oracle::model::{RouterConfig, State};
use pathwise_oracle::{PathMetrics, TopologySnapshot};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::net::IpAddr;

/// Path metrics of one candidate, as reported.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricsView {
    /// Smallest bandwidth along the internal path, Mbit/s; `None` for a zero-hop path
    /// (unlimited).
    pub bandwidth_mbps: Option<f64>,
    /// Sum of link latencies along the internal path, ms.
    pub latency_ms: f64,
    /// Internal hops.
    pub hops: u32,
    /// Sum of link weights.
    pub weight: u64,
    /// AS of the destination.
    pub as_number: u32,
    /// AS hops beyond the exit.
    pub as_distance: u16,
    /// Largest congestion along the path (fraction).
    pub congestion: f64,
    /// Outside the AS.
    pub external: bool,
}

impl From<&PathMetrics> for MetricsView {
    fn from(m: &PathMetrics) -> Self {
        MetricsView {
            bandwidth_mbps: m.bandwidth.is_finite().then_some(m.bandwidth),
            latency_ms: m.latency,
            hops: m.hops,
            weight: m.weight,
            as_number: m.as_number,
            as_distance: m.as_distance,
            congestion: m.congestion,
            external: m.external,
        }
    }
}

/// One candidate in a ranked answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankedCandidate {
    /// Position in the answer, from 1.
    pub rank: usize,
    /// The address.
    pub address: IpAddr,
    /// The most specific prefix containing it, if any.
    pub prefix: Option<String>,
    /// The exit (or, inside the AS, the router) the path leads to.
    pub via: Option<IpAddr>,
    /// Path metrics; `None` when the oracle cannot place the address (it goes last).
    pub metrics: Option<MetricsView>,
    /// Ranking cost (lower first); `None` when unplaced.
    pub cost: Option<f64>,
}

/// A ranked query (console `show rank`, the demo).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankView {
    /// The query's source address.
    pub source: IpAddr,
    /// The source network containing it.
    pub source_network: String,
    /// The router that source network is attached to.
    pub source_router: IpAddr,
    /// The ranking in force (name or expression).
    pub ranking: String,
    /// The candidates in ranked order.
    pub candidates: Vec<RankedCandidate>,
}

/// Rank `candidates` for a query from `source` against `snap`, with each one's metrics.
pub fn rank_view(
    snap: &TopologySnapshot,
    source: IpAddr,
    candidates: &[IpAddr],
) -> Result<RankView, String> {
    let Some(source_router) = snap.source_router(source) else {
        return Err(format!(
            "{source} is not inside a source network, so the oracle cannot rank for it \
             (`show networks source` lists them)"
        ));
    };
    let source_network = snap
        .locate(source)
        .map_or_else(String::new, |l| l.prefix.to_string());
    let mut ranked = candidates.to_vec();
    snap.rank(source, &mut ranked);
    let candidates = ranked
        .iter()
        .enumerate()
        .map(|(i, &a)| {
            let located = snap.locate(a);
            let metrics = snap.metrics(source, a);
            RankedCandidate {
                rank: i + 1,
                address: a,
                prefix: located.as_ref().map(|l| l.prefix.to_string()),
                via: via(snap, source_router, a),
                cost: metrics.as_ref().map(|m| snap.ranking().cost(m)),
                metrics: metrics.as_ref().map(MetricsView::from),
            }
        })
        .collect();
    Ok(RankView {
        source,
        source_network,
        source_router,
        ranking: snap.ranking().text().to_owned(),
        candidates,
    })
}

/// The exit the §3.2.3 routing abstraction picks for `addr` from `from`: the reachable exit with
/// the lowest internal weight; ties to the lower AS distance, then the lower router address.
fn via(snap: &TopologySnapshot, from: IpAddr, addr: IpAddr) -> Option<IpAddr> {
    let located = snap.locate(addr)?;
    located
        .exits
        .iter()
        .filter_map(|e| {
            let p = snap.path(from, e.router)?;
            Some(((p.weight, e.as_distance, e.router), e.router))
        })
        .min_by_key(|(k, _)| *k)
        .map(|(_, r)| r)
}

impl RankView {
    /// As a table.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "query from {} (source network {} at router {}), ranking \"{}\"",
            self.source, self.source_network, self.source_router, self.ranking
        );
        let _ = writeln!(
            s,
            "{:>4}  {:<16} {:<19} {:<12} {:>7} {:>4} {:>10} {:>10} {:>9}",
            "rank",
            "candidate",
            "prefix",
            "via",
            "AS dist",
            "hops",
            "bw Mbit/s",
            "latency ms",
            "cost"
        );
        for c in &self.candidates {
            let via = c.via.map_or_else(|| "-".to_owned(), |v| v.to_string());
            let prefix = c.prefix.as_deref().unwrap_or("-");
            match &c.metrics {
                Some(m) => {
                    let bw = m
                        .bandwidth_mbps
                        .map_or_else(|| "local".to_owned(), |b| format!("{b:.0}"));
                    let _ = writeln!(
                        s,
                        "{:>4}  {:<16} {:<19} {:<12} {:>7} {:>4} {:>10} {:>10.1} {:>9.3}",
                        c.rank,
                        c.address.to_string(),
                        prefix,
                        via,
                        m.as_distance,
                        m.hops,
                        bw,
                        m.latency_ms,
                        c.cost.unwrap_or(f64::NAN)
                    );
                }
                None => {
                    let _ = writeln!(
                        s,
                        "{:>4}  {:<16} {:<19} {:<12} (not placeable: ranked last)",
                        c.rank,
                        c.address.to_string(),
                        prefix,
                        via
                    );
                }
            }
        }
        s
    }
}

/// The database and server at a glance (console `show summary`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The configuration file `reload` reads.
    pub config: String,
    /// UDP address the workers listen on.
    pub listen: String,
    /// Worker threads.
    pub workers: usize,
    /// Seconds since the server started.
    pub uptime_s: f64,
    /// Snapshots swapped in since start (updates and reloads).
    pub swaps: u64,
    /// The snapshot's generation (updates since its last full build).
    pub generation: u64,
    /// Routers.
    pub routers: usize,
    /// Usable directed links.
    pub links: usize,
    /// Prefixes (source and external networks).
    pub prefixes: usize,
    /// (prefix, exit) attachments.
    pub exits: usize,
    /// Path-cache rows.
    pub path_rows: usize,
    /// Bytes held by the path cache.
    pub path_cache_bytes: usize,
    /// Ranking in force.
    pub ranking: String,
    /// TTL written into answers, seconds.
    pub ttl: u16,
    /// How internal routes are found.
    pub routing: String,
    /// Which path-cache rows are kept.
    pub path_cache: String,
    /// The oracle's own AS.
    pub local_as: u32,
    /// The last change, if any.
    pub last_change: Option<String>,
}

impl Summary {
    /// As text.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "oracle on udp {} with {} worker(s), up {:.0} s; config {}",
            self.listen, self.workers, self.uptime_s, self.config
        );
        let _ = writeln!(
            s,
            "database: {} routers, {} links, {} prefixes ({} exits); path cache {} rows, {:.1} MiB",
            self.routers,
            self.links,
            self.prefixes,
            self.exits,
            self.path_rows,
            self.path_cache_bytes as f64 / (1 << 20) as f64
        );
        let _ = writeln!(
            s,
            "ranking \"{}\", ttl {} s, routing {}, cache {}, local AS {}",
            self.ranking, self.ttl, self.routing, self.path_cache, self.local_as
        );
        let _ = writeln!(
            s,
            "snapshot generation {}, {} swap(s) since start; last change: {}",
            self.generation,
            self.swaps,
            self.last_change.as_deref().unwrap_or("none")
        );
        s
    }
}

/// What an update or reload did (console `create`, `delete`, `set`, `reload`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChangeReport {
    /// "operation successful" and what was done.
    pub message: String,
    /// Generation of the snapshot now serving.
    pub generation: u64,
    /// The link graph and every path row were recomputed.
    pub paths_recomputed: bool,
    /// Prefix entries written or removed.
    pub prefixes_changed: usize,
    /// Milliseconds to build the new snapshot and swap it in (workers kept answering from the
    /// old one meanwhile).
    pub build_ms: f64,
}

impl ChangeReport {
    /// As text.
    pub fn render(&self) -> String {
        format!(
            "{} (generation {}, built and swapped in {:.3} ms{}{})\n",
            self.message,
            self.generation,
            self.build_ms,
            if self.paths_recomputed {
                ", paths recomputed"
            } else {
                ""
            },
            if self.prefixes_changed > 0 {
                format!(", {} prefix entries changed", self.prefixes_changed)
            } else {
                String::new()
            }
        )
    }
}

/// One router (console `show router`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RouterView {
    /// The router's definition.
    pub router: RouterConfig,
    /// Networks attached to it: (prefix, kind).
    pub networks: Vec<(String, String)>,
    /// More networks attached than listed.
    pub more_networks: usize,
}

fn state(s: State) -> &'static str {
    if s.is_up() { "up" } else { "down" }
}

impl RouterView {
    /// As text.
    pub fn render(&self) -> String {
        let r = &self.router;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "router {} ({}), {} NICs, {} configured",
            r.address,
            state(r.state),
            r.nic_count,
            r.nics.len()
        );
        for n in &r.nics {
            let link = n.link.map_or_else(
                || "no link".to_owned(),
                |l| {
                    format!(
                        "link {} Mbit/s, {} ms, weight {}, congestion {}",
                        l.bandwidth, l.latency, l.weight, l.congestion
                    )
                },
            );
            let _ = writeln!(
                s,
                "  nic {:<3} {} -> {} {:<4} {link}",
                n.index,
                n.local,
                n.peer,
                state(n.state)
            );
        }
        for rt in &r.routes {
            let _ = writeln!(s, "  route to {} via nic {}", rt.destination, rt.nic);
        }
        for (p, kind) in &self.networks {
            let _ = writeln!(s, "  [{kind} network] {p}");
        }
        if self.more_networks > 0 {
            let _ = writeln!(s, "  ... and {} more networks", self.more_networks);
        }
        s
    }
}

/// One line per router (console `show routers`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RouterLine {
    /// Address.
    pub address: IpAddr,
    /// `up` or `down`.
    pub state: String,
    /// NICs configured / NIC count.
    pub nics: (usize, u16),
    /// NICs with outgoing link properties.
    pub links: usize,
}

/// Render `show routers`.
pub fn render_routers(rs: &[RouterLine]) -> String {
    let mut s = format!("{} routers\n", rs.len());
    let _ = writeln!(
        s,
        "{:<40} {:<5} {:>9} {:>6}",
        "router", "state", "nics", "links"
    );
    for r in rs {
        let _ = writeln!(
            s,
            "{:<40} {:<5} {:>9} {:>6}",
            r.address.to_string(),
            r.state,
            format!("{}/{}", r.nics.0, r.nics.1),
            r.links
        );
    }
    s
}

/// One exit of a prefix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExitView {
    /// Router.
    pub router: IpAddr,
    /// NIC.
    pub nic: u8,
    /// `source` or `external`.
    pub kind: String,
    /// AS number.
    pub as_number: u32,
    /// AS distance.
    pub as_distance: u16,
}

/// A longest-prefix match (console `show prefix`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrefixView {
    /// The address looked up.
    pub address: IpAddr,
    /// The most specific prefix containing it.
    pub prefix: String,
    /// Its exits.
    pub exits: Vec<ExitView>,
    /// Seen from a source (with `--source`): the ranked view of this one address.
    pub from_source: Option<RankView>,
}

impl PrefixView {
    /// As text.
    pub fn render(&self) -> String {
        let mut s = format!("{} is in {}\n", self.address, self.prefix);
        for e in &self.exits {
            let _ = writeln!(
                s,
                "  [{} network] router {} nic {}, AS {}, AS distance {}",
                e.kind, e.router, e.nic, e.as_number, e.as_distance
            );
        }
        if let Some(r) = &self.from_source {
            s.push_str(&r.render());
        }
        s
    }
}

/// Networks of one kind (console `show networks`, seed Fig. 12 `print networks SRC`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetworksView {
    /// `source` or `external`.
    pub kind: String,
    /// How many there are.
    pub total: usize,
    /// The first ones, sorted by prefix.
    pub networks: Vec<ExitLine>,
}

/// One network attachment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExitLine {
    /// Prefix.
    pub prefix: String,
    /// Router.
    pub router: IpAddr,
    /// NIC.
    pub nic: u8,
    /// AS number (external networks).
    pub as_number: Option<u32>,
    /// AS distance (external networks).
    pub as_distance: Option<u16>,
}

impl NetworksView {
    /// As text, in the seed console's layout.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let tag = if self.kind == "source" {
            "SOURCE NETWORK"
        } else {
            "EXTERNAL NETWORK"
        };
        for n in &self.networks {
            let _ = writeln!(s, "[{tag}] {}", n.prefix);
            match (n.as_number, n.as_distance) {
                (Some(a), Some(d)) => {
                    let _ = writeln!(
                        s,
                        "  router {} nic {}, AS {a}, AS distance {d}",
                        n.router, n.nic
                    );
                }
                _ => {
                    let _ = writeln!(s, "  router {} nic {}", n.router, n.nic);
                }
            }
        }
        if self.total > self.networks.len() {
            let _ = writeln!(
                s,
                "({} of {} {} networks shown; --limit to see more)",
                self.networks.len(),
                self.total,
                self.kind
            );
        }
        s
    }
}
