//! `pathwise bench alto`: endpoint-cost requests per second with N endpoints, against a trivial
//! handler served by the same server in the same run (issue #16's measurement).
//!
//! One ALTO server (one tokio thread, as `serve --alto` runs it) over the seed network (216
//! routers, 67,000 external prefixes); C client threads, each with one HTTP/1.1 keep-alive
//! connection, send requests back to back for `--seconds`: first the endpoint cost service with
//! N destinations drawn from the database's networks, from a source in the seed's client
//! network; then the same bodies to `POST /bench/trivial`, which reads the body and answers
//! `{}`. The ratio ALTO/trivial is what the ALTO work costs on top of HTTP. Medians of `--runs`.

use super::client::{Client, Connection, HttpUrl};
use super::counters::AltoCounters;
use super::{AltoOptions, AltoServer};
use anyhow::Context as _;
use axum::http::Method;
use bytes::Bytes;
use http_body_util::BodyExt as _;
use pathwise_oracle::alto::{self, types::typed_addr};
use pathwise_oracle::generate::{SEED_SOURCE_NETWORK, seed_network};
use pathwise_oracle::{SharedSnapshot, TopologySnapshot};
use serde::Serialize;
use serde_json::json;
use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `pathwise bench alto` arguments.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Runs per point; medians are reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Seconds per measurement.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Destination endpoints per request.
    #[arg(long, default_value_t = 100)]
    endpoints: usize,
    /// Client threads (one keep-alive connection each), one point per value.
    #[arg(long, value_delimiter = ',', default_value = "1,4")]
    clients: Vec<usize>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// One point: medians over the runs.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    /// Client connections.
    pub clients: usize,
    /// Endpoint-cost requests per second, each run.
    pub alto_per_run: Vec<f64>,
    /// Trivial-handler requests per second, each run.
    pub trivial_per_run: Vec<f64>,
    /// Median endpoint-cost requests per second.
    pub alto: f64,
    /// Median trivial-handler requests per second.
    pub trivial: f64,
    /// `alto / trivial`.
    pub ratio: f64,
}

/// The whole report.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Destinations per request.
    pub endpoints: usize,
    /// Request body bytes.
    pub body_bytes: usize,
    /// Seconds per measurement.
    pub seconds: f64,
    /// Runs per point.
    pub runs: usize,
    /// The points.
    pub points: Vec<Point>,
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied().unwrap_or(0.0)
}

/// Requests completed by `clients` connections in `seconds`, each sending `body` to `path`.
fn load(
    addr: SocketAddr,
    path: &str,
    content_type: &'static str,
    body: &Bytes,
    clients: usize,
    seconds: f64,
) -> anyhow::Result<f64> {
    let url = HttpUrl::parse(&format!("http://{addr}{path}"))?;
    let client = Client::new(None, None)?;
    let barrier = Arc::new(std::sync::Barrier::new(clients));
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let (url, client, body, barrier) =
                (url.clone(), client.clone(), body.clone(), barrier.clone());
            std::thread::spawn(move || -> anyhow::Result<u64> {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                rt.block_on(async move {
                    let mut c: Connection = client.connect(&url).await?;
                    barrier.wait();
                    let end = Instant::now() + Duration::from_secs_f64(seconds);
                    let mut done = 0u64;
                    while Instant::now() < end {
                        let r = c
                            .request(
                                Method::POST,
                                &url.path,
                                Some(content_type),
                                "*/*",
                                body.clone(),
                            )
                            .await?;
                        let ok = r.status().is_success();
                        r.into_body().collect().await?;
                        anyhow::ensure!(ok, "the server refused a benchmark request");
                        done += 1;
                    }
                    Ok(done)
                })
            })
        })
        .collect();
    let mut total = 0;
    for t in threads {
        total += t
            .join()
            .map_err(|_| anyhow::anyhow!("a client thread panicked"))??;
    }
    Ok(total as f64 / seconds)
}

/// Run the benchmark, reporting progress through `progress`.
pub fn run(a: &BenchArgs, progress: &dyn Fn(&str)) -> anyhow::Result<Report> {
    if a.endpoints == 0 || a.clients.contains(&0) {
        anyhow::bail!("--endpoints and --clients must be at least 1");
    }
    if !(a.seconds > 0.0 && a.seconds <= 60.0) {
        anyhow::bail!("--seconds must be in (0, 60]");
    }
    progress("building the seed network (216 routers, 67,000 external prefixes)");
    let cfg = seed_network(1);
    let snapshot = TopologySnapshot::build(&cfg).context("the seed network builds")?;
    let source: IpAddr = SEED_SOURCE_NETWORK
        .parse::<ipnet::IpNet>()?
        .hosts()
        .nth(4)
        .context("a source address")?;
    let dsts: Vec<String> = cfg
        .external_networks
        .iter()
        .step_by(3 * 331)
        .map(|n| typed_addr(n.prefix.network()))
        .cycle()
        .take(a.endpoints)
        .collect();
    let body = Bytes::from(
        json!({
            "cost-type": {"cost-mode": "numerical", "cost-metric": "routingcost"},
            "endpoints": {"srcs": [typed_addr(source)], "dsts": dsts},
        })
        .to_string(),
    );
    let shared = Arc::new(SharedSnapshot::new(snapshot));
    let mut opts = AltoOptions::plain("127.0.0.1:0".parse()?);
    opts.bench_route = true;
    let server = AltoServer::start(&opts, shared, Arc::new(AltoCounters::default()))?;
    let addr = server.local_addr();
    let mut points = Vec::new();
    for &clients in &a.clients {
        let (mut alto_runs, mut trivial_runs) = (Vec::new(), Vec::new());
        for run in 0..a.runs.max(1) {
            let ecs = load(
                addr,
                "/alto/endpointcost/lookup",
                alto::ENDPOINT_COST_PARAMS,
                &body,
                clients,
                a.seconds,
            )?;
            let trivial = load(
                addr,
                "/bench/trivial",
                "application/json",
                &body,
                clients,
                a.seconds,
            )?;
            progress(&format!(
                "{clients} client(s), run {}: ALTO ECS {ecs:.0}/s, trivial {trivial:.0}/s",
                run + 1
            ));
            alto_runs.push(ecs);
            trivial_runs.push(trivial);
        }
        let (m_alto, m_trivial) = (median(&alto_runs), median(&trivial_runs));
        points.push(Point {
            clients,
            alto_per_run: alto_runs,
            trivial_per_run: trivial_runs,
            alto: m_alto,
            trivial: m_trivial,
            ratio: if m_trivial > 0.0 {
                m_alto / m_trivial
            } else {
                0.0
            },
        });
    }
    drop(server);
    Ok(Report {
        endpoints: a.endpoints,
        body_bytes: body.len(),
        seconds: a.seconds,
        runs: a.runs.max(1),
        points,
    })
}

/// The report as a table.
pub fn render(r: &Report) -> String {
    let mut s = format!(
        "ALTO endpoint cost, {} endpoints ({} B bodies), {} s x {} runs, medians\n\
         {:>8} {:>14} {:>14} {:>8}\n",
        r.endpoints,
        r.body_bytes,
        r.seconds,
        r.runs,
        "clients",
        "ECS req/s",
        "trivial req/s",
        "ratio"
    );
    for p in &r.points {
        let _ = writeln!(
            s,
            "{:>8} {:>14.0} {:>14.0} {:>8.3}",
            p.clients, p.alto, p.trivial, p.ratio
        );
    }
    s
}

/// Run `pathwise bench alto`.
pub fn run_cli(a: BenchArgs) -> anyhow::Result<()> {
    let report = run(&a, &|line| eprintln!("{line}"))?;
    crate::bench::print_report(a.json, &report, render)
}
