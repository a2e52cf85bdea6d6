//! `pathwise oracle alto ecs|map|cost|watch URL`: query any ALTO server from the command line.
//! URL is the server's information resource directory (ours: `http://HOST:PORT/alto`); the
//! commands find the resource they need in it, as RFC 7285 §9 intends.

use super::client::{Client, HttpUrl};
use anyhow::{Context as _, bail};
use pathwise_oracle::alto::{self, patch, shape, types::typed_addr};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::net::IpAddr;
use std::path::PathBuf;

/// The ALTO client commands.
#[derive(Debug, clap::Subcommand)]
pub enum AltoCmd {
    /// Rank destinations by cost from a source (the endpoint cost service, RFC 7285 §11.5).
    Ecs(EcsArgs),
    /// Print the network map: PIDs and their prefixes (§11.2.1).
    Map(MapArgs),
    /// Print a cost map between PIDs (§11.2.3).
    Cost(CostArgs),
    /// Follow the network map (and cost maps) over an update stream (RFC 8895), printing each
    /// event, or with --apply the map after each change.
    Watch(WatchArgs),
}

/// Where the server is and how to talk to it.
#[derive(Debug, clap::Args)]
pub struct Server {
    /// The server's information resource directory, e.g. http://127.0.0.1:8080/alto.
    url: String,
    /// Trust this CA certificate (PEM) for https instead of the bundled web PKI roots.
    #[arg(long, value_name = "FILE")]
    cacert: Option<PathBuf>,
    /// HTTP basic credentials, NAME:PASSWORD.
    #[arg(long, short, value_name = "NAME:PASSWORD")]
    user: Option<String>,
    /// Print the server's JSON.
    #[arg(long)]
    json: bool,
}

/// Cost metric and mode.
#[derive(Debug, clap::Args)]
pub struct CostChoice {
    /// Cost metric (routingcost is the oracle's ranking cost).
    #[arg(long, default_value = "routingcost", value_parser = ["routingcost", "hopcount"])]
    metric: String,
    /// Ask for ranks (ordinal mode) instead of numbers.
    #[arg(long)]
    ordinal: bool,
}

impl CostChoice {
    fn mode(&self) -> &'static str {
        if self.ordinal { "ordinal" } else { "numerical" }
    }
}

/// `alto ecs` arguments.
#[derive(Debug, clap::Args)]
pub struct EcsArgs {
    #[command(flatten)]
    server: Server,
    /// Destinations to rank.
    #[arg(required = true, value_name = "DST")]
    dsts: Vec<IpAddr>,
    /// Rank from this source [default: the server takes the client's own address].
    #[arg(long)]
    src: Option<IpAddr>,
    #[command(flatten)]
    cost: CostChoice,
}

/// `alto map` arguments.
#[derive(Debug, clap::Args)]
pub struct MapArgs {
    #[command(flatten)]
    server: Server,
    /// Print at most this many prefixes per PID (0: all).
    #[arg(long, default_value_t = 8)]
    prefixes: usize,
}

/// `alto cost` arguments.
#[derive(Debug, clap::Args)]
pub struct CostArgs {
    #[command(flatten)]
    server: Server,
    #[command(flatten)]
    cost: CostChoice,
}

/// `alto watch` arguments.
#[derive(Debug, clap::Args)]
pub struct WatchArgs {
    #[command(flatten)]
    server: Server,
    /// Also follow the cost map of this cost type.
    #[arg(long)]
    with_cost: bool,
    #[command(flatten)]
    cost: CostChoice,
    /// Apply the merge patches and print the resulting documents instead of the events.
    #[arg(long)]
    apply: bool,
    /// Stop after this many data events (full replacements and patches).
    #[arg(long)]
    count: Option<u64>,
}

/// Write to standard output now (a watch prints as events arrive); a closed pipe (`| head`)
/// ends the command as it ends every client command (`cli::end_quietly_on_a_closed_pipe`).
fn emit(text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    Ok(out.flush()?)
}

fn pretty(v: &Value) -> anyhow::Result<()> {
    emit(&format!("{}\n", serde_json::to_string_pretty(v)?))
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")
}

impl Server {
    fn client(&self) -> anyhow::Result<(Client, HttpUrl)> {
        Ok((
            Client::new(self.cacert.as_deref(), self.user.as_deref())?,
            HttpUrl::parse(&self.url)?,
        ))
    }
}

/// The IRD at `url`, checked (§9.2.2).
async fn directory(c: &Client, url: &HttpUrl) -> anyhow::Result<Value> {
    let (media, ird) = c.get(url, alto::DIRECTORY).await?;
    if media != alto::DIRECTORY {
        bail!("{url}: answered {media}, not an IRD");
    }
    shape::directory(&ird, true).map_err(|e| anyhow::anyhow!("{url}: bad IRD: {e}"))?;
    Ok(ird)
}

/// The first resource of the IRD that `pick` accepts: its URL.
fn find(
    ird: &Value,
    base: &HttpUrl,
    what: &str,
    pick: impl Fn(&str, &Value) -> bool,
) -> anyhow::Result<HttpUrl> {
    let resources = ird["resources"]
        .as_object()
        .context("IRD without resources")?;
    let (_, e) = resources
        .iter()
        .find(|(id, e)| pick(id, e))
        .with_context(|| format!("the server's IRD offers no {what}"))?;
    base.join(e["uri"].as_str().unwrap_or_default())
}

/// Whether an IRD entry lists a cost type of `metric` and `mode` (through `meta.cost-types`).
fn offers_cost(ird: &Value, e: &Value, metric: &str, mode: &str) -> bool {
    e["capabilities"]["cost-type-names"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .any(|n| {
            let t = &ird["meta"]["cost-types"][n];
            t["cost-metric"] == metric && t["cost-mode"] == mode
        })
}

/// Run `pathwise oracle alto …`.
pub fn run(cmd: AltoCmd) -> anyhow::Result<()> {
    runtime()?.block_on(async move {
        match cmd {
            AltoCmd::Ecs(a) => ecs(a).await,
            AltoCmd::Map(a) => map(a).await,
            AltoCmd::Cost(a) => cost(a).await,
            AltoCmd::Watch(a) => watch(a).await,
        }
    })
}

fn check(v: &Value, url: &HttpUrl, f: fn(&Value) -> Result<(), String>) -> anyhow::Result<()> {
    f(v).map_err(|e| anyhow::anyhow!("{url}: the response is not what RFC 7285 defines: {e}"))
}

async fn ecs(a: EcsArgs) -> anyhow::Result<()> {
    let (c, base) = a.server.client()?;
    let ird = directory(&c, &base).await?;
    let url = find(&ird, &base, "endpoint cost service", |_, e| {
        e["media-type"] == alto::ENDPOINT_COST
            && e["accepts"] == alto::ENDPOINT_COST_PARAMS
            && offers_cost(&ird, e, &a.cost.metric, a.cost.mode())
    })?;
    let mut endpoints = json!({
        "dsts": a.dsts.iter().map(|d| typed_addr(*d)).collect::<Vec<_>>(),
    });
    if let Some(s) = a.src {
        endpoints["srcs"] = json!([typed_addr(s)]);
    }
    let req = json!({
        "cost-type": { "cost-mode": a.cost.mode(), "cost-metric": a.cost.metric },
        "endpoints": endpoints,
    });
    let (_, v) = c
        .post(&url, alto::ENDPOINT_COST_PARAMS, alto::ENDPOINT_COST, &req)
        .await?;
    check(&v, &url, shape::endpoint_cost)?;
    if a.server.json {
        return pretty(&v);
    }
    emit(&render_ecs(&v, &a.dsts))
}

/// Each source's destinations by cost (ties and destinations without a cost in request order).
pub fn render_ecs(v: &Value, dsts: &[IpAddr]) -> String {
    let mut s = String::new();
    let ct = &v["meta"]["cost-type"];
    for (src, row) in v["endpoint-cost-map"].as_object().into_iter().flatten() {
        let _ = writeln!(
            s,
            "from {src} ({} {}):",
            ct["cost-mode"].as_str().unwrap_or("?"),
            ct["cost-metric"].as_str().unwrap_or("?")
        );
        let mut ranked: Vec<(f64, usize, String)> = dsts
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let k = typed_addr(*d);
                (row[&k].as_f64().unwrap_or(f64::INFINITY), i, k)
            })
            .collect();
        ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for (n, (c, _, d)) in ranked.iter().enumerate() {
            if c.is_finite() {
                let _ = writeln!(s, "  {:>3}  {d:<45} {c}", n + 1);
            } else {
                let _ = writeln!(s, "  {:>3}  {d:<45} (no cost)", n + 1);
            }
        }
    }
    s
}

async fn map(a: MapArgs) -> anyhow::Result<()> {
    let (c, base) = a.server.client()?;
    let ird = directory(&c, &base).await?;
    let id = ird["meta"]["default-alto-network-map"]
        .as_str()
        .unwrap_or("");
    let url = find(&ird, &base, "network map", |rid, e| {
        rid == id && e["media-type"] == alto::NETWORK_MAP
    })?;
    let (_, v) = c.get(&url, alto::NETWORK_MAP).await?;
    check(&v, &url, shape::network_map)?;
    if a.server.json {
        return pretty(&v);
    }
    let nm = v["network-map"].as_object().context("no network-map")?;
    let mut out = format!(
        "network map {} (vtag {}): {} PIDs\n",
        v["meta"]["vtag"]["resource-id"].as_str().unwrap_or("?"),
        v["meta"]["vtag"]["tag"].as_str().unwrap_or("?"),
        nm.len()
    );
    for (pid, group) in nm {
        let prefixes: Vec<&str> = group
            .as_object()
            .into_iter()
            .flat_map(|g| g.values())
            .flat_map(|l| l.as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .collect();
        let shown = if a.prefixes == 0 {
            prefixes.len()
        } else {
            a.prefixes.min(prefixes.len())
        };
        let more = prefixes.len() - shown;
        let mut line = format!("  {pid:<40} {}", prefixes[..shown].join(" "));
        if more > 0 {
            let _ = write!(line, " … (+{more})");
        }
        let _ = writeln!(out, "{line}");
    }
    emit(&out)
}

async fn cost(a: CostArgs) -> anyhow::Result<()> {
    let (c, base) = a.server.client()?;
    let ird = directory(&c, &base).await?;
    let url = find(&ird, &base, "cost map of that cost type", |_, e| {
        e["media-type"] == alto::COST_MAP
            && e.get("accepts").is_none()
            && offers_cost(&ird, e, &a.cost.metric, a.cost.mode())
    })?;
    let (_, v) = c.get(&url, alto::COST_MAP).await?;
    check(&v, &url, shape::cost_map)?;
    if a.server.json {
        return pretty(&v);
    }
    let mut out = String::new();
    for (src, row) in v["cost-map"].as_object().into_iter().flatten() {
        let _ = writeln!(out, "{src}:");
        let mut row: Vec<(&String, f64)> = row
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(d, c)| Some((d, c.as_f64()?)))
            .collect();
        row.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(b.0)));
        for (d, c) in row {
            let _ = writeln!(out, "  {d:<40} {c}");
        }
    }
    emit(&out)
}

async fn watch(a: WatchArgs) -> anyhow::Result<()> {
    let (c, base) = a.server.client()?;
    let ird = directory(&c, &base).await?;
    let (stream_id, stream) = ird["resources"]
        .as_object()
        .into_iter()
        .flatten()
        .find(|(_, e)| e["media-type"] == alto::EVENT_STREAM)
        .context("the server's IRD offers no update stream")?;
    let url = base.join(stream["uri"].as_str().unwrap_or_default())?;
    let uses: Vec<&str> = stream["uses"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let nm = ird["meta"]["default-alto-network-map"]
        .as_str()
        .unwrap_or("");
    if !uses.contains(&nm) {
        bail!("update stream {stream_id} does not follow the network map {nm}");
    }
    let mut add = json!({ "net": { "resource-id": nm } });
    if a.with_cost {
        let cm = uses
            .iter()
            .find(|id| {
                ird["resources"][**id]["media-type"] == alto::COST_MAP
                    && offers_cost(&ird, &ird["resources"][**id], &a.cost.metric, a.cost.mode())
            })
            .with_context(|| format!("update stream {stream_id} follows no such cost map"))?;
        add["cost"] = json!({ "resource-id": cm });
    }
    let mut docs: std::collections::HashMap<String, Value> = std::collections::HashMap::new();
    let mut data_events = 0u64;
    let count = a.count;
    let apply = a.apply;
    let json_out = a.server.json;
    c.watch(&url, &json!({ "add": add }), |event, data| {
        let (media, sid) = event.split_once(',').unwrap_or((event, ""));
        let parsed: Value = serde_json::from_str(data).unwrap_or(Value::Null);
        let is_data = !sid.is_empty();
        if is_data {
            if media == alto::MERGE_PATCH {
                if let Some(d) = docs.get_mut(sid) {
                    patch::apply(d, &parsed);
                }
            } else {
                docs.insert(sid.to_owned(), parsed.clone());
            }
        }
        if apply && is_data {
            if let Some(d) = docs.get(sid) {
                let text = if json_out {
                    d.to_string()
                } else {
                    serde_json::to_string_pretty(d).unwrap_or_default()
                };
                let _ = emit(&format!("{sid} after {media}:\n{text}\n"));
            }
        } else if !apply {
            let _ = emit(&format!("event: {event}\ndata: {data}\n\n"));
        }
        if is_data {
            data_events += 1;
        }
        count.is_none_or(|n| data_events < n)
    })
    .await
}
