//! `pathwise oracle …`: the locality oracle's server, console, load clients and config
//! generator, and the arguments of `pathwise bench oracle`.

use crate::oracle::clients::{
    CandidatePool, ClosedLoopOptions, FloodOptions, Limits, PingEvent, QueryOptions, closed_loop,
    flood,
};
use crate::oracle::console::{Create, DAEMON, DEFAULT_SOCKET, Delete, Set, Show};
use crate::oracle::counters::{CounterReport, rcode_name};
use crate::oracle::server::UdpOptions;
use crate::oracle::views::{
    ChangeReport, NetworksView, PrefixView, RankView, RouterLine, RouterView, Summary,
    render_routers,
};
use crate::oracle::{OracleServer, ServeOptions};
use anyhow::Context as _;
use clap::Subcommand;
use pathwise_oracle::generate::{SyntheticSpec, seed_network, synthetic};
use pathwise_oracle::model::CacheScope;
use pathwise_oracle::proxidor::PORT;
use serde_json::{Value, json};
use std::io::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// The oracle commands.
#[derive(Debug, Subcommand)]
pub enum Oracle {
    /// Serve Proxidor v0.2 queries over UDP with N workers (SO_REUSEPORT, recvmmsg/sendmmsg),
    /// with the console on a management socket. Runs until Ctrl-C / SIGTERM; SIGHUP reloads
    /// the database as the console's `reload` does. `--check FILE` checks a database without
    /// serving it.
    #[command(after_long_help = crate::oracle::check::CHECK_HELP)]
    Serve(ServeArgs),
    /// Show the running server's summary (default), counters, routers, prefixes, networks, the
    /// BMP feed (bgp), or rank addresses as it would.
    Show {
        /// What to show.
        #[command(subcommand)]
        what: Option<Show>,
        /// Socket and output format.
        #[command(flatten)]
        mgmt: Mgmt,
    },
    /// Change a link, a router's state, the ranking or the TTL on the running server.
    Set {
        /// What to change.
        #[command(subcommand)]
        what: Set,
        /// Socket and output format.
        #[command(flatten)]
        mgmt: Mgmt,
    },
    /// Add a router, a link, a source network or an external network to the running server.
    Create {
        /// What to add.
        #[command(subcommand)]
        what: Create,
        /// Socket and output format.
        #[command(flatten)]
        mgmt: Mgmt,
    },
    /// Remove a router, a link, a network or a prefix from the running server.
    Delete {
        /// What to remove.
        #[command(subcommand)]
        what: Delete,
        /// Socket and output format.
        #[command(flatten)]
        mgmt: Mgmt,
    },
    /// Re-read the configuration file and swap the new database in (queries keep being answered
    /// from the old one while it builds).
    Reload {
        /// Read this file instead of the server's (it becomes the server's file).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Socket and output format.
        #[command(flatten)]
        mgmt: Mgmt,
    },
    /// Import routes into the running server: an exit router's MRT dump becomes its external
    /// networks (then `dump` writes the database).
    Import {
        /// What to import.
        #[command(subcommand)]
        what: crate::oracle::mrt::Import,
        /// Socket and output format.
        #[command(flatten)]
        mgmt: Mgmt,
    },
    /// Write the running database as TOML (a file `serve --config` loads).
    Dump {
        /// Write here instead of standard output.
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// Management socket of the server.
        #[arg(long, default_value = DEFAULT_SOCKET)]
        socket: PathBuf,
    },
    /// Query like ping: one query at a time, a line per reply, statistics at the end.
    Ping(PingArgs),
    /// N client threads querying in a loop (synchronized start/stop, delay, timeout, count).
    Multi(MultiArgs),
    /// Send queries as fast as possible from one thread and count the replies.
    Flood(FloodArgs),
    /// Write a database as TOML: the seed's test network or a synthetic one.
    Generate(GenerateArgs),
    /// Query an ALTO server (RFC 7285; ours is `serve --alto`, any other works too): endpoint
    /// costs, the network map, cost maps, or follow updates (RFC 8895).
    Alto {
        /// What to ask.
        #[command(subcommand)]
        cmd: crate::oracle::alto::cli::AltoCmd,
    },
}

/// Where the server listens for management requests, and the output format.
#[derive(Debug, clap::Args)]
pub struct Mgmt {
    /// Management socket of the server.
    #[arg(long, global = true, default_value = DEFAULT_SOCKET)]
    socket: PathBuf,
    /// Print JSON.
    #[arg(long, global = true)]
    json: bool,
}

impl Mgmt {
    fn request(&self, verb: &str, args: Value) -> anyhow::Result<Value> {
        crate::mgmt::request(&self.socket, DAEMON, verb, args)
    }
}

/// `pathwise oracle serve` arguments.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The database: TOML (`*.toml`, e.g. from `pathwise oracle generate`) or the seed's main
    /// configuration file (Fig. 10) with its router files.
    #[arg(long, required_unless_present = "check", value_name = "FILE")]
    config: Option<PathBuf>,
    /// Check FILE (a database as for --config) and exit without serving (no sockets): print
    /// every error found with its file, line and field and exit 1, or a one-line summary.
    #[arg(long, value_name = "FILE", conflicts_with = "config")]
    check: Option<PathBuf>,
    /// Worker threads [default: the configuration's `threads`].
    #[arg(long)]
    workers: Option<usize>,
    /// UDP port.
    #[arg(long, default_value_t = PORT)]
    port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0")]
    address: IpAddr,
    /// Management socket for the console (mode 0600: the server's user and root only).
    #[arg(long, default_value = DEFAULT_SOCKET)]
    socket: PathBuf,
    /// Let this group's members use the console too (the socket gets mode 0660 and the
    /// group; the server must be a member of it).
    #[arg(long, value_name = "GROUP")]
    socket_group: Option<String>,
    /// Datagrams per recvmmsg.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u16).range(1..=64))]
    batch: u16,
    /// Serve metrics (OpenMetrics) on http://ADDR/metrics, e.g. 127.0.0.1:9465 [default: not
    /// served].
    #[arg(long, value_name = "ADDR")]
    metrics: Option<SocketAddr>,
    /// Serve ALTO (RFC 7285: directory, network and cost maps, filtered maps, endpoint cost
    /// and property services; update streams, RFC 8895) on http://ADDR/alto from the same
    /// database, e.g. 127.0.0.1:8080 [default: not served].
    #[arg(long, value_name = "ADDR")]
    alto: Option<SocketAddr>,
    /// Serve ALTO over HTTPS with this certificate chain (PEM); needs --alto-tls-key.
    #[arg(long, value_name = "FILE", requires_all = ["alto", "alto_tls_key"])]
    alto_tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --alto-tls-cert.
    #[arg(long, value_name = "FILE", requires = "alto_tls_cert")]
    alto_tls_key: Option<PathBuf>,
    /// Require HTTP basic authentication for ALTO: FILE has `user:hash` lines with bcrypt
    /// hashes, as `htpasswd -B` writes them.
    #[arg(long, value_name = "FILE", requires = "alto")]
    alto_auth: Option<PathBuf>,
    /// Accept BMP sessions (RFC 7854) from the exit routers on ADDR, e.g. 0.0.0.0:11019: their
    /// BGP routes become the exits' external networks (AS distance = AS_PATH length) [default:
    /// not listening].
    #[arg(long, value_name = "ADDR")]
    bmp: Option<SocketAddr>,
    /// Which exit router a BMP session from SOURCE speaks for, as SOURCE=ROUTER (repeatable);
    /// without it a session belongs to the router whose address, or NIC address, it comes from.
    #[arg(long, value_name = "SOURCE=ROUTER", requires = "bmp")]
    bmp_router: Vec<crate::oracle::bmp::BmpRouter>,
}

/// What the queries carry and where they go.
#[derive(Debug, clap::Args)]
pub struct QueryArgs {
    /// Server address.
    #[arg(long, default_value = "127.0.0.1")]
    server: IpAddr,
    /// Server UDP port.
    #[arg(long, default_value_t = PORT)]
    port: u16,
    /// Candidate IPs per query (at most 363).
    #[arg(long, default_value_t = 100)]
    size: usize,
    /// Ask for a ranking as seen from this address (the query's IPv4/IPv6 source extension);
    /// without it the server ranks from the client's own address.
    #[arg(long)]
    source: Option<IpAddr>,
    /// Draw candidates from this database's networks (so the oracle can place them all)
    /// instead of uniformly random addresses.
    #[arg(long)]
    pick_from: Option<PathBuf>,
    /// Random seed for the candidates.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print the statistics as JSON.
    #[arg(long)]
    json: bool,
}

impl QueryArgs {
    fn server(&self) -> SocketAddr {
        SocketAddr::new(self.server, self.port)
    }

    fn options(&self) -> anyhow::Result<QueryOptions> {
        let pool = match &self.pick_from {
            Some(path) => {
                let cfg = pathwise_oracle::config::load_file(path)?;
                let pool = CandidatePool::from_config(&cfg);
                if pool.is_random() {
                    anyhow::bail!(
                        "{}: the database has no networks to pick from",
                        path.display()
                    );
                }
                pool
            }
            None => CandidatePool::random(),
        };
        Ok(QueryOptions {
            size: self.size,
            source: self.source,
            pool: Arc::new(pool),
            seed: self.seed,
        })
    }
}

/// `pathwise oracle ping` arguments.
#[derive(Debug, clap::Args)]
pub struct PingArgs {
    /// Queries.
    #[command(flatten)]
    query: QueryArgs,
    /// Stop after this many queries [default: until Ctrl-C].
    #[arg(long, short)]
    count: Option<u64>,
    /// Milliseconds to wait after each reply or timeout.
    #[arg(long, default_value_t = 1000)]
    delay: u64,
    /// Milliseconds to wait for a reply.
    #[arg(long, default_value_t = 500)]
    timeout: u64,
    /// Stop after this many seconds.
    #[arg(long)]
    duration: Option<f64>,
    /// Print only the statistics.
    #[arg(long, short)]
    quiet: bool,
}

/// `pathwise oracle multi` arguments.
#[derive(Debug, clap::Args)]
pub struct MultiArgs {
    /// Queries.
    #[command(flatten)]
    query: QueryArgs,
    /// Client threads.
    #[arg(long, default_value_t = 4)]
    threads: usize,
    /// Queries per thread [default: until --duration or Ctrl-C].
    #[arg(long, short)]
    count: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long)]
    duration: Option<f64>,
    /// Milliseconds each thread waits after a reply or timeout.
    #[arg(long, default_value_t = 0)]
    delay: u64,
    /// Milliseconds to wait for a reply.
    #[arg(long, default_value_t = 500)]
    timeout: u64,
    /// Start all threads at the same moment, once all are ready.
    #[arg(long)]
    sync_start: bool,
    /// Stop all threads when the first has sent --count queries.
    #[arg(long, requires = "count")]
    sync_stop: bool,
}

/// `pathwise oracle flood` arguments.
#[derive(Debug, clap::Args)]
pub struct FloodArgs {
    /// Queries.
    #[command(flatten)]
    query: QueryArgs,
    /// Stop after this many queries [default: until --duration or Ctrl-C].
    #[arg(long, short)]
    count: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long)]
    duration: Option<f64>,
    /// Most queries in flight (0: no limit).
    #[arg(long, default_value_t = 0)]
    window: usize,
    /// Milliseconds to wait for the last replies after sending stops (and for any reply to a
    /// full window before its queries are given up as lost).
    #[arg(long, default_value_t = 500)]
    timeout: u64,
    /// Queries per sendmmsg.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u16).range(1..=64))]
    batch: u16,
    /// Client sockets to spread the queries over (the server's SO_REUSEPORT picks a worker per
    /// socket, so one socket loads one worker).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=256))]
    sockets: u16,
}

/// `pathwise oracle generate` arguments.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("network").required(true).args(["seed_network", "routers"])))]
pub struct GenerateArgs {
    /// The seed's test network (§5.2): 216 routers in 9 hubs, 3 exits with 67,000 external
    /// prefixes, 109 client networks; queries come from 130.149.221.0/24.
    #[arg(long)]
    seed_network: bool,
    /// A synthetic network of this many routers (a ring with random chords); source networks
    /// are /24s of 100.64.0.0/10.
    #[arg(long)]
    routers: Option<usize>,
    /// External prefixes (synthetic network).
    #[arg(long, default_value_t = 67_000, requires = "routers")]
    prefixes: usize,
    /// Exits per external prefix (synthetic network).
    #[arg(long, default_value_t = 3, requires = "routers")]
    exits: usize,
    /// Source /24 networks (synthetic network) [default: one per router, at most 16,384].
    #[arg(long, requires = "routers")]
    source_networks: Option<usize>,
    /// Keep path-cache rows only for routers with a source network (for very large networks).
    #[arg(long, requires = "routers")]
    source_router_cache: bool,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write here instead of standard output.
    #[arg(long, short)]
    output: Option<PathBuf>,
}

/// `pathwise bench oracle` arguments.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Runs per point; medians are reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Seconds per run.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// IPs per query.
    #[arg(long, value_delimiter = ',', default_value = "10,50,100,200,300,363")]
    sizes: Vec<usize>,
    /// Server worker threads.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    workers: Vec<usize>,
    /// Queries in flight under load.
    #[arg(long, default_value_t = 64)]
    window: usize,
    /// Datagrams per recvmmsg in the servers.
    #[arg(long, default_value_t = 32)]
    batch: usize,
    /// Skip the 10 vs 10,000 routers comparison.
    #[arg(long)]
    no_network_size: bool,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
    /// Draw replies/s and RTT against IPs per query, one series per worker count (seed 002
    /// Figs. 22–28), into this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
}

/// Run `pathwise bench oracle`.
pub fn run_bench(a: BenchArgs) -> anyhow::Result<()> {
    if a.sizes
        .iter()
        .any(|&s| s == 0 || s > pathwise_oracle::proxidor::MAX_IPV4)
    {
        anyhow::bail!("--sizes: each size must be 1 to 363");
    }
    if !(a.seconds > 0.0 && a.seconds <= 60.0) {
        anyhow::bail!("--seconds must be in (0, 60]");
    }
    let opts = crate::oracle::bench::BenchOptions {
        runs: a.runs.max(1),
        seconds: a.seconds,
        sizes: a.sizes,
        workers: a.workers.into_iter().map(|w| w.max(1)).collect(),
        window: a.window.max(1),
        batch: a.batch.clamp(1, crate::oracle::server::MAX_BATCH),
        network_size: !a.no_network_size,
    };
    crate::bench::plot_target(a.plot.as_deref())?;
    let report = crate::oracle::bench::run(&opts, &|line| eprintln!("{line}"))?;
    crate::bench::print_report(a.json, &report, crate::oracle::bench::render)?;
    crate::bench::plot_to(a.plot.as_deref(), &crate::oracle::bench::figures(&report))
}

/// Run an oracle command.
pub fn run(o: Oracle) -> anyhow::Result<()> {
    match o {
        Oracle::Serve(a) => serve(a),
        Oracle::Show { what, mgmt } => {
            let what = what.unwrap_or(Show::Summary);
            let v = mgmt.request("show", serde_json::to_value(&what)?)?;
            if mgmt.json {
                return print_json(&v);
            }
            let text = match what {
                Show::Summary => serde_json::from_value::<Summary>(v)?.render(),
                Show::Counters => serde_json::from_value::<CounterReport>(v)?.render(),
                Show::Metrics => v.as_str().unwrap_or_default().to_owned(),
                Show::Router { .. } => serde_json::from_value::<RouterView>(v)?.render(),
                Show::Routers => render_routers(&serde_json::from_value::<Vec<RouterLine>>(v)?),
                Show::Prefix { .. } => serde_json::from_value::<PrefixView>(v)?.render(),
                Show::Networks { .. } => serde_json::from_value::<NetworksView>(v)?.render(),
                Show::Rank { .. } => serde_json::from_value::<RankView>(v)?.render(),
                Show::Bgp => serde_json::from_value::<crate::oracle::bmp::BgpView>(v)?.render(),
            };
            print!("{text}");
            Ok(())
        }
        Oracle::Set { what, mgmt } => change(&mgmt, "set", serde_json::to_value(&what)?),
        Oracle::Create { what, mgmt } => change(&mgmt, "create", serde_json::to_value(&what)?),
        Oracle::Delete { what, mgmt } => change(&mgmt, "delete", serde_json::to_value(&what)?),
        Oracle::Reload { config, mgmt } => {
            // The server resolves paths from its own working directory; send an absolute one.
            let config = config
                .map(|p| std::fs::canonicalize(&p).with_context(|| format!("{}", p.display())))
                .transpose()?;
            change(&mgmt, "reload", json!({ "config": config }))
        }
        Oracle::Import { what, mgmt } => {
            // The server reads the file from its own working directory: send an absolute path.
            let crate::oracle::mrt::Import::Mrt { file, router } = what;
            let file =
                std::fs::canonicalize(&file).with_context(|| format!("{}", file.display()))?;
            let what = crate::oracle::mrt::Import::Mrt { file, router };
            let v = mgmt.request("import", serde_json::to_value(&what)?)?;
            if mgmt.json {
                return print_json(&v);
            }
            print!(
                "{}",
                serde_json::from_value::<crate::oracle::mrt::ImportReport>(v)?.render()
            );
            Ok(())
        }
        Oracle::Dump { output, socket } => {
            let v = crate::mgmt::request(&socket, DAEMON, "dump", Value::Null)?;
            let toml = v["toml"].as_str().unwrap_or_default();
            match output {
                Some(path) => {
                    std::fs::write(&path, toml)
                        .with_context(|| format!("writing {}", path.display()))?;
                    eprintln!(
                        "wrote {} ({} routers, {} prefixes, generation {})",
                        path.display(),
                        v["routers"],
                        v["prefixes"],
                        v["generation"]
                    );
                }
                None => std::io::stdout().write_all(toml.as_bytes())?,
            }
            Ok(())
        }
        Oracle::Ping(a) => ping(a),
        Oracle::Multi(a) => multi(a),
        Oracle::Flood(a) => flood_cmd(a),
        Oracle::Generate(a) => generate(a),
        Oracle::Alto { cmd } => crate::oracle::alto::cli::run(cmd),
    }
}

fn print_json(v: &Value) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

fn change(mgmt: &Mgmt, verb: &str, args: Value) -> anyhow::Result<()> {
    let v = mgmt.request(verb, args)?;
    if mgmt.json {
        return print_json(&v);
    }
    print!("{}", serde_json::from_value::<ChangeReport>(v)?.render());
    Ok(())
}

/// A flag set by Ctrl-C / SIGTERM (the default action would kill the process before it
/// prints its statistics or removes its socket).
fn interrupt_flag() -> anyhow::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    Ok(stop)
}

fn serve(a: ServeArgs) -> anyhow::Result<()> {
    let config = match (&a.check, &a.config) {
        (Some(file), _) => return crate::oracle::check::check(file).finish(),
        (None, Some(config)) => config.clone(),
        (None, None) => anyhow::bail!("give --config FILE or --check FILE"),
    };
    let socket_group = a
        .socket_group
        .as_deref()
        .map(crate::mgmt::SocketGroup::lookup)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--socket-group: {e}"))?;
    let t = Instant::now();
    let cfg = pathwise_oracle::config::load_file(&config)?;
    let workers = a.workers.unwrap_or(usize::from(cfg.oracle.threads)).max(1);
    let snap = pathwise_oracle::TopologySnapshot::build(&cfg)
        .with_context(|| format!("{}: the database is inconsistent", config.display()))?;
    drop(cfg);
    let build = t.elapsed();
    let opts = ServeOptions {
        config: config.clone(),
        udp: UdpOptions {
            address: a.address,
            port: a.port,
            workers,
            batch: usize::from(a.batch),
            ..UdpOptions::default()
        },
        socket: a.socket.clone(),
        metrics: a.metrics,
        socket_group,
        alto: a.alto.map(|addr| crate::oracle::alto::AltoOptions {
            addr,
            tls: match (a.alto_tls_cert, a.alto_tls_key) {
                (Some(cert), Some(key)) => Some(crate::oracle::alto::tls::TlsFiles { cert, key }),
                _ => None,
            },
            auth: a.alto_auth,
            bench_route: false,
        }),
    };
    let stop = interrupt_flag()?;
    // SIGHUP: what the console's `reload` does.
    let hangup = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGHUP, hangup.clone())
        .context("installing signal handlers")?;
    let (routers, prefixes) = (snap.router_count(), snap.prefix_count());
    let mut server = OracleServer::start_with(&opts, snap)?;
    if let Some(listen) = a.bmp {
        let addr = server.start_bmp(&crate::oracle::bmp::BmpOptions {
            listen,
            routers: a.bmp_router.clone(),
            interval: crate::oracle::bmp::DEFAULT_INTERVAL,
        })?;
        eprintln!("pathwise oracle: BMP on tcp {addr}");
    }
    eprintln!(
        "pathwise oracle: {routers} routers, {prefixes} prefixes from {} (built in {:.0} ms); \
         serving udp {} with {} worker(s); console on {}",
        config.display(),
        build.as_secs_f64() * 1e3,
        server.local_addr(),
        server.workers(),
        server.socket().display()
    );
    if let Some(addr) = server.metrics_addr() {
        eprintln!("pathwise oracle: metrics on http://{addr}/metrics");
    }
    if let Some(url) = server.alto_url() {
        eprintln!("pathwise oracle: ALTO directory on {url}");
    }
    while !stop.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(200));
        if hangup.swap(false, Relaxed) {
            match server.reload() {
                Ok(v) => eprintln!(
                    "pathwise oracle: SIGHUP: {}",
                    v.get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("reloaded")
                ),
                Err(e) => {
                    eprintln!("pathwise oracle: SIGHUP: {e}; still serving the previous database")
                }
            }
        }
    }
    let counters = server.counters().report();
    drop(server);
    eprint!("pathwise oracle: stopped\n{}", counters.render());
    Ok(())
}

fn limits(count: Option<u64>, duration: Option<f64>) -> anyhow::Result<Limits> {
    let duration = match duration {
        Some(d) if !(d > 0.0 && d.is_finite()) => anyhow::bail!("--duration must be positive"),
        Some(d) => Some(Duration::from_secs_f64(d)),
        None => None,
    };
    Ok(Limits { count, duration })
}

fn print_report(r: &crate::oracle::clients::ClientReport, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(r)?);
    } else {
        print!("{}", r.render());
    }
    Ok(())
}

fn ping(a: PingArgs) -> anyhow::Result<()> {
    let server = a.query.server();
    let opts = ClosedLoopOptions {
        server,
        threads: 1,
        limits: limits(a.count, a.duration)?,
        delay: Duration::from_millis(a.delay),
        timeout: Duration::from_millis(a.timeout),
        sync_start: false,
        sync_stop: false,
        query: a.query.options()?,
    };
    let stop = interrupt_flag()?;
    let quiet = a.quiet || a.query.json;
    let timeout = a.timeout;
    let size = a.query.size;
    if !quiet {
        println!("ORACLE PING {server}: {size} IPs per query");
    }
    let on_event = move |e: &PingEvent| {
        if quiet {
            return;
        }
        match (e.reply, e.rtt) {
            (Some(r), Some(rtt)) => println!(
                "{} bytes from {server}: seq={} id={:#010x} rcode={} ttl={} time={:.3} ms",
                e.bytes,
                e.seq,
                r.id,
                rcode_name(r.rcode),
                r.ttl,
                rtt.as_secs_f64() * 1e3
            ),
            _ if e.unreachable => println!(
                "seq={}: {server} is unreachable (no oracle server listening there?)",
                e.seq
            ),
            _ => println!("seq={}: no reply within {timeout} ms", e.seq),
        }
    };
    let report = closed_loop(&opts, &stop, &on_event)?;
    print_report(&report, a.query.json)
}

fn multi(a: MultiArgs) -> anyhow::Result<()> {
    if a.threads == 0 {
        anyhow::bail!("--threads must be at least 1");
    }
    let opts = ClosedLoopOptions {
        server: a.query.server(),
        threads: a.threads,
        limits: limits(a.count, a.duration)?,
        delay: Duration::from_millis(a.delay),
        timeout: Duration::from_millis(a.timeout),
        sync_start: a.sync_start,
        sync_stop: a.sync_stop,
        query: a.query.options()?,
    };
    let stop = interrupt_flag()?;
    let mut report = closed_loop(&opts, &stop, &|_| {})?;
    report.mode = "multi".into();
    print_report(&report, a.query.json)
}

fn flood_cmd(a: FloodArgs) -> anyhow::Result<()> {
    let opts = FloodOptions {
        server: a.query.server(),
        limits: limits(a.count, a.duration)?,
        window: a.window,
        timeout: Duration::from_millis(a.timeout),
        batch: usize::from(a.batch),
        sockets: usize::from(a.sockets),
        query: a.query.options()?,
    };
    let stop = interrupt_flag()?;
    let report = flood(&opts, &stop)?;
    print_report(&report, a.query.json)
}

fn generate(a: GenerateArgs) -> anyhow::Result<()> {
    let cfg = if a.seed_network {
        seed_network(a.seed)
    } else {
        let routers = a.routers.unwrap_or(1);
        if routers == 0 || routers > pathwise_oracle::MAX_ROUTERS as usize {
            anyhow::bail!(
                "--routers must be 1 to {} (routers are 10.x.y.z loopbacks)",
                pathwise_oracle::MAX_ROUTERS
            );
        }
        if a.exits == 0 {
            anyhow::bail!("--exits must be at least 1");
        }
        let mut spec = SyntheticSpec::new(routers, a.prefixes, a.exits);
        spec.seed = a.seed;
        if let Some(n) = a.source_networks {
            spec.source_networks = n;
        }
        if a.source_router_cache {
            spec.cache = CacheScope::SourceRouters;
        }
        synthetic(&spec)
    };
    // Refuse to write what `serve` would refuse to load.
    pathwise_oracle::TopologySnapshot::build(&cfg)
        .context("the generated network does not build")?;
    let text = pathwise_oracle::config::to_toml_string(&cfg)?;
    match a.output {
        Some(path) => {
            std::fs::write(&path, &text).with_context(|| format!("writing {}", path.display()))?;
            eprintln!(
                "wrote {}: {} routers, {} source and {} external networks",
                path.display(),
                cfg.routers.len(),
                cfg.source_networks.len(),
                cfg.external_networks.len()
            );
        }
        None => std::io::stdout().write_all(text.as_bytes())?,
    }
    Ok(())
}
