//! `pathwise booster …`: run a protocol booster gateway and manage a running one.

use crate::booster::config::{DEFAULT_SOCKET, GatewayConfig};
use clap::Subcommand;
use pathwise_booster::StatsReport;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::PathBuf;

/// The booster commands.
#[derive(Debug, Subcommand)]
pub enum Booster {
    /// Run a gateway: boost packets routed into the TUN device and send them to the peer
    /// gateway over UDP; deboost what the peer sends and write it to the TUN device. SIGHUP
    /// reads the policies and meta-policy again (other settings need a restart). `--check
    /// FILE` checks a configuration without starting.
    #[command(after_long_help = crate::booster::config::CHECK_HELP)]
    Gateway {
        /// Configuration file (TOML; see docs/booster-wire.md and the README).
        #[arg(long, required_unless_present = "check", value_name = "FILE")]
        config: Option<PathBuf>,
        /// Check FILE and exit without starting (no TUN device, no sockets, no root needed):
        /// print every error found with its file, line and field and exit 1, or a one-line
        /// summary.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["config", "plain"])]
        check: Option<PathBuf>,
        /// Forward packets with no encapsulation and no boosters (a plain TUN forwarder, the
        /// baseline for measurements).
        #[arg(long)]
        plain: bool,
    },
    /// Show the running gateway's policies, meta-policy and adaptive policy.
    Show(Mgmt),
    /// Insert a booster into a policy's chain (the meta-policy picks the position unless
    /// --position is given); creates the policy when --dst is given and it does not exist.
    /// Make the same change on the peer gateway within its `chain_grace_ms`: the new chain is
    /// sent that long after the change, and the peer accepts only chains its policy allows.
    Insert {
        /// Booster: null, lz4, zstd[:LEVEL], zstd-stream[:LEVEL[:RUN]], dumb, encrypt, fec[:K:M[:D]] (D: groups interleaved).
        booster: String,
        /// Policy name.
        #[arg(long, default_value = "default")]
        policy: String,
        /// Position in the chain (0 = first).
        #[arg(long)]
        position: Option<usize>,
        /// Destination prefix, to create the policy.
        #[arg(long)]
        dst: Option<String>,
        /// Source prefix, with --dst.
        #[arg(long, requires = "dst")]
        src: Option<String>,
        /// Socket and output format.
        #[command(flatten)]
        mgmt: Mgmt,
    },
    /// Remove a booster (by kind: `fec` removes `fec:8:2`) from a policy's chain (on both
    /// gateways, as for insert).
    Remove {
        /// Booster kind.
        booster: String,
        /// Policy name.
        #[arg(long, default_value = "default")]
        policy: String,
        /// Socket and output format.
        #[command(flatten)]
        mgmt: Mgmt,
    },
    /// Show counters: packets, bytes, per-booster work, drops by reason.
    Stats(Mgmt),
}

/// Where the gateway listens for management requests, and the output format.
#[derive(Debug, clap::Args)]
pub struct Mgmt {
    /// Management socket of the gateway.
    #[arg(long, default_value = DEFAULT_SOCKET)]
    socket: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

impl Mgmt {
    fn request(&self, verb: &str, args: Value) -> anyhow::Result<Value> {
        crate::mgmt::request(&self.socket, "booster gateway", verb, args)
    }
}

/// On a thread of its own: SIGHUP reads the policies again ([`crate::booster::reload`]);
/// SIGINT and SIGTERM stop the datapath threads, so that the gateway exits cleanly (its
/// management socket removed).
fn watch_signals(
    shared: std::sync::Arc<crate::booster::gateway::Shared>,
    hangup: std::sync::Arc<std::sync::atomic::AtomicBool>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    path: PathBuf,
    started: String,
) -> anyhow::Result<()> {
    use std::sync::atomic::Ordering::Relaxed;
    std::thread::Builder::new()
        .name("sighup".into())
        .spawn(move || {
            const ME: &str = "pathwise booster gateway: SIGHUP";
            while !shared.stop.load(Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(200));
                if stop.load(Relaxed) {
                    eprintln!("pathwise booster gateway: stopping");
                    shared.stop.store(true, Relaxed);
                    break;
                }
                if !hangup.swap(false, Relaxed) {
                    continue;
                }
                let r = match crate::booster::reload::prepare(&path, &started) {
                    Ok(r) => r,
                    Err(errors) => {
                        for e in &errors {
                            eprintln!("{e}");
                        }
                        eprintln!("{ME}: configuration not reloaded; the running one stays");
                        continue;
                    }
                };
                match crate::booster::reload::apply(&shared, &r) {
                    Ok((generation, n)) => {
                        eprintln!("{ME}: policies reloaded: {n} policies, generation {generation}")
                    }
                    Err(e) => eprintln!("{ME}: policies not reloaded: {e}"),
                }
                for field in &r.needs_restart {
                    eprintln!("{ME}: {field} changed, but needs a restart to take effect");
                }
            }
        })?;
    Ok(())
}

/// Run a booster command.
pub fn run(b: Booster) -> anyhow::Result<()> {
    match b {
        Booster::Gateway {
            check: Some(file), ..
        } => crate::booster::config::check(&file).finish(),
        Booster::Gateway {
            config: None,
            check: None,
            ..
        } => anyhow::bail!("give --config FILE or --check FILE"),
        Booster::Gateway {
            config: Some(config),
            plain,
            ..
        } => {
            let started = std::fs::read_to_string(&config).unwrap_or_default();
            let cfg = GatewayConfig::load(&config)?;
            eprintln!(
                "pathwise booster gateway: {} <-> {} via {}{}, management on {}{}",
                cfg.listen,
                cfg.peer,
                cfg.tun,
                if cfg.queues > 1 {
                    format!(" ({} queues: ports + 0..{})", cfg.queues, cfg.queues)
                } else {
                    String::new()
                },
                cfg.socket.display(),
                if plain { " (plain forwarding)" } else { "" }
            );
            // Before starting: SIGHUP's default action would kill the gateway, and SIGTERM's
            // would leave its management socket behind.
            let hangup = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            signal_hook::flag::register(signal_hook::consts::SIGHUP, hangup.clone())?;
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
                signal_hook::flag::register(sig, stop.clone())?;
            }
            let gateway = crate::booster::gateway::Gateway::start(cfg, plain)?;
            watch_signals(gateway.shared.clone(), hangup, stop, config, started)?;
            gateway.join()
        }
        Booster::Show(m) => {
            let v = m.request("show", Value::Null)?;
            print(&v, m.json, render_show)
        }
        Booster::Insert {
            booster,
            policy,
            position,
            dst,
            src,
            mgmt,
        } => {
            let v = mgmt.request(
                "insert",
                json!({"booster": booster, "policy": policy, "position": position, "dst": dst, "src": src}),
            )?;
            print(&v, mgmt.json, render_change)
        }
        Booster::Remove {
            booster,
            policy,
            mgmt,
        } => {
            let v = mgmt.request("remove", json!({"booster": booster, "policy": policy}))?;
            print(&v, mgmt.json, render_change)
        }
        Booster::Stats(m) => {
            let v = m.request("stats", Value::Null)?;
            print(&v, m.json, render_stats)
        }
    }
}

fn print(v: &Value, json: bool, render: fn(&Value) -> String) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(v)?);
    } else {
        print!("{}", render(v));
    }
    Ok(())
}

fn render_change(v: &Value) -> String {
    format!(
        "policy {} chain [{}] (generation {}, built and swapped in {} ns; sent from {} ms on: \
         make the same change on the peer gateway before then)\n",
        v["policy"].as_str().unwrap_or("?"),
        v["chain"].as_str().unwrap_or(""),
        v["generation"],
        v["swap_ns"],
        v["sent_after_ms"]
    )
}

fn render_show(v: &Value) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "gateway {} <-> {} via {} ({} mode, sender id {}, mtu {}, batch {})",
        v["listen"].as_str().unwrap_or("?"),
        v["peer"].as_str().unwrap_or("?"),
        v["tun"].as_str().unwrap_or("?"),
        v["mode"].as_str().unwrap_or("?"),
        v["sender_id"],
        v["mtu"],
        v["batch"]
    );
    let lanes = v["lanes"].as_array().map_or(&[][..], Vec::as_slice);
    if lanes.len() > 1 {
        let _ = writeln!(s, "queues {} (lanes):", lanes.len());
        for (i, l) in lanes.iter().enumerate() {
            let _ = writeln!(
                s,
                "  lane {i}: {} <-> {} sender id {}; tun in {} udp out {} udp in {} tun out {}",
                l["listen"].as_str().unwrap_or("?"),
                l["peer"].as_str().unwrap_or("?"),
                l["sender_id"],
                l["tun_in"],
                l["udp_out"],
                l["udp_in"],
                l["tun_out"]
            );
        }
    }
    // Each offload on or off, and why not (README: "lists each offload as on or off with the
    // reason").
    if let Some(o) = v["offloads"].as_object() {
        let _ = writeln!(s, "offloads:");
        for (name, state) in o {
            match state["on"].as_bool() {
                Some(true) => {
                    let _ = writeln!(s, "  {name:<18} on");
                }
                Some(false) => {
                    let why = state["why_not"].as_str().unwrap_or("?");
                    let _ = writeln!(s, "  {name:<18} off ({why})");
                }
                None => {
                    let _ = writeln!(s, "  {name:<18} {state}");
                }
            }
        }
    }
    let _ = writeln!(s, "policy generation {}", v["generation"]);
    let _ = writeln!(
        s,
        "{:<16} {:<20} {:<20} chain",
        "policy", "destination", "source"
    );
    for p in v["policies"].as_array().into_iter().flatten() {
        let chain: Vec<&str> = p["chain"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let _ = writeln!(
            s,
            "{:<16} {:<20} {:<20} [{}]",
            p["name"].as_str().unwrap_or("?"),
            p["dst"].as_str().unwrap_or("?"),
            p["src"].as_str().unwrap_or("any"),
            chain.join(", ")
        );
    }
    let rules: Vec<&str> = v["meta_policy"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let _ = writeln!(s, "meta-policy: {}", rules.join("; "));
    let a = &v["adaptive"];
    let _ = writeln!(
        s,
        "adaptive: {} (policy {}), ratio {}, loss {}, last error {}",
        if a["config"]["enabled"].as_bool() == Some(true) {
            "on"
        } else {
            "off"
        },
        a["config"]["policy"].as_str().unwrap_or("?"),
        a["state"]["ratio"],
        a["state"]["loss"],
        a["state"]["last_error"]
    );
    s
}

fn render_stats(v: &Value) -> String {
    let Ok(r) = serde_json::from_value::<StatsReport>(v.clone()) else {
        return format!("{v}\n");
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "tun in {} ({} B)  udp out {} ({} B)  udp in {}  tun out {}  control in {}  over mtu {}  snapshot switches {}",
        r.tun_in,
        r.tun_in_bytes,
        r.udp_out,
        r.udp_out_bytes,
        r.udp_in,
        r.tun_out,
        r.control_in,
        r.over_mtu,
        r.snapshot_switches
    );
    let _ = writeln!(
        s,
        "{:<8} {:>10} {:>10} {:>12} {:>12} {:>8} {:>10} {:>10}",
        "booster", "boosted", "passed", "bytes in", "bytes out", "extra", "deboosted", "recovered"
    );
    for (name, b) in &r.boosters {
        let _ = writeln!(
            s,
            "{:<8} {:>10} {:>10} {:>12} {:>12} {:>8} {:>10} {:>10}",
            name, b.boosted, b.passed, b.bytes_in, b.bytes_out, b.extra, b.deboosted, b.recovered
        );
    }
    let _ = writeln!(s, "drops: {} total", r.total_drops());
    for (reason, n) in r.drops.iter().filter(|(_, n)| **n > 0) {
        let _ = writeln!(s, "  {reason:<24} {n}");
    }
    s
}

/// `pathwise bench booster` arguments.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Experiments, comma-separated: rtt (seed Fig. 6), throughput (seed Table 1), fec,
    /// compare (direct veth, plain TUN forwarder, null and encrypt with offloads on and off
    /// and with two lanes, wireguard-go when installed), adaptive (congestion-aware compression
    /// against never and always, seed §7), fec-rate (unshaped link with 5 % random loss each
    /// way: no FEC, fec:10:3 and fec:10:3:4 with offloads on; a sequenced UDP load in paced
    /// GSO runs offered at 1 Gbit/s and 250 Mbit/s in 1300-byte datagrams, received rate and
    /// residual loss, and iperf3 TCP goodput), cpu (each booster's CPU per packet and per
    /// byte, in memory: needs no root), or all.
    #[arg(default_value = "all")]
    experiment: String,
    /// Repetitions; medians are reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Seconds per iperf3 transfer (and per run of fec-rate's UDP load).
    #[arg(long, default_value_t = 5)]
    seconds: u32,
    /// Pings per packet size and run.
    #[arg(long, default_value_t = 20)]
    pings: u32,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
    /// Draw RTT against packet size per setup (seed Fig. 6) and throughput per setup (seed
    /// Table 1), from the rtt and throughput experiments, into this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
}

/// Run `pathwise bench booster` and print its report.
pub fn run_bench(a: BenchArgs) -> anyhow::Result<()> {
    let opt = crate::booster::bench::Options {
        runs: a.runs.max(1),
        seconds: a.seconds.max(1),
        pings: a.pings.max(1),
        binary: std::env::current_exe()?,
    };
    let drawn = ["all", "rtt", "throughput"];
    if a.plot.is_some() && !a.experiment.split(',').any(|e| drawn.contains(&e.trim())) {
        anyhow::bail!("--plot draws the rtt and throughput experiments (seed Fig. 6, Table 1)");
    }
    crate::bench::plot_target(a.plot.as_deref())?;
    let exps = crate::booster::bench::run(&a.experiment, &opt)?;
    crate::bench::print_report(a.json, &exps, |e| crate::booster::bench::render(e))?;
    crate::bench::plot_to(a.plot.as_deref(), &crate::booster::bench::figures(&exps))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn show_lists_each_offload_with_why_it_is_off() {
        let v = json!({
            "offloads": {
                "tun_tso": {"on": true},
                "tun_coalesce_udp": {"on": false, "why_not": "the device has no UDP segmentation offload (tun_uso)"},
                "socket_buffers": [4194304, 4194304],
            },
        });
        let text = render_show(&v);
        assert!(text.contains("  tun_tso            on\n"), "{text}");
        assert!(
            text.contains(
                "  tun_coalesce_udp   off (the device has no UDP segmentation offload (tun_uso))\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("  socket_buffers     [4194304,4194304]\n"),
            "{text}"
        );
    }
}
