//! The locality oracle's binary half (seed 002; issue 7): the Proxidor v0.2 server, its console,
//! the load clients, the demo and the server benchmark. The database, the ranking and the
//! per-datagram `answer()` are pure code in `pathwise-oracle`; this module puts them on sockets
//! and threads.
//!
//! - [`server`]: N workers with their own `SO_REUSEPORT` sockets, `recvmmsg`/`sendmmsg`,
//!   `answer()` per datagram against the current snapshot, every outcome counted
//!   ([`counters`]).
//! - [`console`]: `show`, `set`, `reload`, `dump`, `create`, `delete` over the management socket
//!   ([`crate::mgmt`]); updates are built off the hot path and swapped in atomically.
//! - [`clients`]: `ping`, `multi` and `flood` (seed §4.9.1, Fig. 17).
//! - [`demo`]: the seed network in memory and one ranked query.
//! - [`bench`]: replies/s and RTT against IPs per query, workers and network size, with a plain
//!   UDP echo server measured in the same run.
//!
//! - [`alto`]: the ALTO server (RFC 7285, update streams RFC 8895) beside the UDP one, from the
//!   same snapshot, and the `pathwise oracle alto …` client.
//! - [`bmp`]: the BMP listener (`serve --bmp`): exit routers stream their routes, which become
//!   external networks (RFC 7854).
//! - [`mrt`]: `import mrt`: a router's MRT dump as its external networks (RFC 6396).
//! - [`bgp_bench`]: `pathwise bench oracle-bgp`: the BMP feed with full tables, end to end.
//! - [`cli`]: `pathwise oracle …` and the arguments of `pathwise bench oracle`.
//!
//! [`OracleServer`] ties the server and the console together (`pathwise oracle serve`).

pub mod alto;
pub mod bench;
pub mod bgp_bench;
pub mod bmp;
pub mod check;
pub mod cli;
pub mod clients;
pub mod console;
pub mod counters;
pub mod demo;
pub mod mrt;
pub mod server;
pub mod views;

use anyhow::Context as _;
use console::Console;
use counters::Counters;
use pathwise_oracle::{SharedSnapshot, TopologySnapshot, config};
use server::{Service, UdpOptions, UdpServer};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

/// How to run an oracle server.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// The database: TOML (`*.toml`) or the seed's own format (Fig. 10–11).
    pub config: PathBuf,
    /// UDP address, port, workers, batch size.
    pub udp: UdpOptions,
    /// Management socket for the console.
    pub socket: PathBuf,
    /// Where to serve metrics over HTTP (`None`: not served).
    pub metrics: Option<SocketAddr>,
    /// A group whose members may use the console too (besides the server's user and root).
    pub socket_group: Option<crate::mgmt::SocketGroup>,
    /// Serve ALTO (RFC 7285) over HTTP from the same snapshot (`None`: not served).
    pub alto: Option<alto::AltoOptions>,
}

/// A running oracle server: UDP workers and the console. Dropping it stops both and removes
/// the management socket.
#[derive(Debug)]
pub struct OracleServer {
    bmp: Option<bmp::BmpListener>,
    // Stop the console before the workers.
    _mgmt: crate::mgmt::ServerHandle,
    udp: UdpServer,
    shared: Arc<SharedSnapshot>,
    console: Arc<Console>,
    socket: PathBuf,
    build: Duration,
    metrics: Option<crate::metrics::http::MetricsServer>,
    alto: Option<alto::AltoServer>,
    alto_counters: Option<Arc<alto::counters::AltoCounters>>,
}

impl OracleServer {
    /// Load the configuration, build the snapshot and start serving.
    pub fn start(opts: &ServeOptions) -> anyhow::Result<OracleServer> {
        let t = Instant::now();
        let cfg = config::load_file(&opts.config)?;
        let snap = TopologySnapshot::build(&cfg)
            .with_context(|| format!("{}: the database is inconsistent", opts.config.display()))?;
        let build = t.elapsed();
        let mut s = Self::start_with(opts, snap)?;
        s.build = build;
        Ok(s)
    }

    /// Start serving `snapshot`; `opts.config` is what `reload` will read.
    pub fn start_with(
        opts: &ServeOptions,
        snapshot: TopologySnapshot,
    ) -> anyhow::Result<OracleServer> {
        // Claim the management socket first: a second server fails before touching UDP.
        let mgmt = crate::mgmt::Server::bind_with(&opts.socket, opts.socket_group.clone())?;
        let shared = Arc::new(SharedSnapshot::new(snapshot));
        let udp = UdpServer::start(&opts.udp, Service::Oracle(shared.clone()))?;
        let config = std::fs::canonicalize(&opts.config).unwrap_or_else(|_| opts.config.clone());
        let refused = mgmt.refused_counter();
        let alto_counters = opts
            .alto
            .as_ref()
            .map(|_| Arc::new(alto::counters::AltoCounters::default()));
        let alto = match (&opts.alto, &alto_counters) {
            (Some(o), Some(c)) => Some(alto::AltoServer::start(o, shared.clone(), c.clone())?),
            _ => None,
        };
        let console = Arc::new(
            Console::new(
                shared.clone(),
                udp.counters().clone(),
                config,
                udp.local_addr(),
                refused.clone(),
            )
            .with_alto(alto_counters.clone()),
        );
        let served = console.clone();
        let handle =
            mgmt.spawn(move |verb: &str, args: &serde_json::Value| served.handle(verb, args))?;
        let metrics = match opts.metrics {
            Some(addr) => {
                let (counters, shared) = (udp.counters().clone(), shared.clone());
                let alto = alto_counters.clone();
                let bgp = console.bgp_slot();
                let page = crate::metrics::ServiceCollector::live(move || {
                    let mut m = metrics(&counters, &shared, &refused, alto.as_deref());
                    if let Some(feed) = bgp.get() {
                        feed.metrics(&mut m);
                    }
                    m
                });
                let registry = crate::metrics::registry([page]);
                Some(crate::metrics::http::MetricsServer::start(addr, registry)?)
            }
            None => None,
        };
        Ok(OracleServer {
            bmp: None,
            _mgmt: handle,
            udp,
            shared,
            console,
            socket: opts.socket.clone(),
            build: Duration::ZERO,
            metrics,
            alto,
            alto_counters,
        })
    }

    /// The ALTO directory's URL, if ALTO is served.
    pub fn alto_url(&self) -> Option<String> {
        self.alto.as_ref().map(|a| a.url())
    }

    /// The ALTO server's counters, if ALTO is served.
    pub fn alto_counters(&self) -> Option<&Arc<alto::counters::AltoCounters>> {
        self.alto_counters.as_ref()
    }

    /// Start the BMP listener (RFC 7854): exit routers' routes become external networks;
    /// `show bgp` and the `bmp_*` metrics report it. Returns where routers connect.
    pub fn start_bmp(&mut self, opts: &bmp::BmpOptions) -> anyhow::Result<SocketAddr> {
        anyhow::ensure!(self.bmp.is_none(), "the BMP listener is already running");
        let listener = bmp::BmpListener::start(opts, self.shared.clone())?;
        let addr = listener.local_addr();
        let _ = self.console.bgp_slot().set(listener.feed().clone());
        self.bmp = Some(listener);
        Ok(addr)
    }

    /// The BMP feed, when the listener runs.
    pub fn bmp(&self) -> Option<&Arc<bmp::BmpFeed>> {
        self.bmp.as_ref().map(|b| b.feed())
    }

    /// Where the metrics are served, if they are.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().map(|m| m.local_addr())
    }

    /// The UDP address queries go to.
    pub fn local_addr(&self) -> SocketAddr {
        self.udp.local_addr()
    }

    /// The management socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// What the console's `reload` does (and SIGHUP): read the server's configuration file
    /// again and swap the new database in; queries keep being answered from the old one while
    /// it builds, and a file that does not load leaves it in place. The console's answer, or
    /// why the file was not taken.
    pub fn reload(&self) -> Result<serde_json::Value, String> {
        self.console.handle("reload", &serde_json::Value::Null)
    }

    /// Management connections refused (their user was not allowed).
    pub fn mgmt_refused(&self) -> u64 {
        self._mgmt.refused()
    }

    /// The snapshot the workers serve.
    pub fn shared(&self) -> &Arc<SharedSnapshot> {
        &self.shared
    }

    /// The workers' counters.
    pub fn counters(&self) -> &Arc<Counters> {
        self.udp.counters()
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.udp.workers()
    }

    /// Time to load and build the database at start (zero for [`start_with`](Self::start_with)).
    pub fn build_time(&self) -> Duration {
        self.build
    }
}

/// The oracle's metric families: the workers' counters, the management socket's refusals and
/// the database being served.
pub fn metrics(
    counters: &Counters,
    shared: &SharedSnapshot,
    management_refused: &AtomicU64,
    alto: Option<&alto::counters::AltoCounters>,
) -> crate::metrics::Snapshot {
    let mut report = counters.report();
    report.management_refused = management_refused.load(std::sync::atomic::Ordering::Relaxed);
    report.alto = alto.map(|a| a.report());
    let mut m = report.snapshot();
    let snap = shared.load();
    m.gauge(
        "routers",
        "Routers in the database served.",
        snap.router_count(),
    )
    .gauge("links", "Links in the database served.", snap.link_count())
    .gauge(
        "prefixes",
        "External prefixes in the database served.",
        snap.prefix_count(),
    )
    .gauge(
        "database_generation",
        "Generation of the database served (each update or reload makes a new one).",
        snap.generation(),
    );
    m
}
