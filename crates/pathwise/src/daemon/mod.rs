//! `pathwise daemon --config node.toml`: the long-running process on a Linux router or host.
//!
//! It runs the services the configuration enables: RSVP ([`crate::rsvp::service`]) and GIST with
//! the Ping NSLP ([`crate::gist::service`]) and, with `[qos_nslp]`, the QoS NSLP
//! ([`crate::qos`]) sharing RSVP's traffic control. One thread owns the protocol engines and runs a `poll(2)` loop over their sockets, the
//! routing feed and a wake-up socket, sleeping until the engines' next deadline. The management
//! socket ([`crate::mgmt`]) is served on its own thread, which hands each request to the loop
//! and waits for the answer, so engines are never shared between threads. Metrics (opt-in,
//! [`crate::metrics`]) are served on their own thread from snapshots the loop publishes every
//! second. SIGINT and SIGTERM stop the loop; dropping the services removes what they installed
//! (traffic-control classes) and the management socket. SIGHUP reads the configuration again
//! and applies what can change live ([`reload`]).

pub mod check;
pub mod cli;
pub mod hold;
pub mod reload;

use crate::config::NodeConfig;
use anyhow::Context as _;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use serde_json::Value;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where the answer to a management request goes (a service may answer later, e.g. a ping
/// when its reply comes back).
pub type Reply = mpsc::Sender<Result<Value, String>>;

type Request = (String, Value, Reply);

/// Run the daemon until SIGINT or SIGTERM.
pub fn run(config: &Path) -> anyhow::Result<()> {
    use tracing_subscriber::filter::LevelFilter;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let cfg = NodeConfig::load(config)?;
    let level: tracing::Level = cfg.daemon.log.parse().unwrap_or(tracing::Level::INFO);
    // The level can change on SIGHUP. A second daemon in the same process (tests) keeps the
    // first subscriber.
    let (filter, log_level) = tracing_subscriber::reload::Layer::new(LevelFilter::from(level));
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                // Colours for a terminal only: not escape codes in the journal or a log file.
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())),
        )
        .try_init();
    if cfg.rsvp.is_none() && cfg.gist.is_none() {
        anyhow::bail!(
            "{}: no service enabled (add an [rsvp] or a [gist] section)",
            config.display()
        );
    }
    // Signals first: a reload or a stop asked for while the services start waits for the loop
    // (SIGHUP's default action would kill the daemon).
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .context("installing signal handlers")?;
    }
    let hangup = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGHUP, Arc::clone(&hangup))
        .context("installing signal handlers")?;
    // Before anything is set up: name every capability missing and what needs it.
    crate::caps::require("pathwise daemon", &capability_needs(&cfg))?;
    let mut rsvp = match &cfg.rsvp {
        Some(r) => Some(Rsvp::start(&cfg, r)?),
        None => None,
    };
    let mut gist = match &cfg.gist {
        Some(g) => Some(crate::gist::service::GistService::start(
            &cfg,
            g,
            rsvp.as_ref().map(|r| r.traffic_control()),
        )?),
        None => None,
    };

    let (wake_tx, wake_rx) = UnixStream::pair().context("creating the wake-up socket")?;
    wake_rx.set_nonblocking(true)?;
    let (req_tx, req_rx) = mpsc::channel::<Request>();
    let wake_tx = Mutex::new(wake_tx);
    let handler = move |verb: &str, args: &Value| -> Result<Value, String> {
        let (tx, rx) = mpsc::channel();
        req_tx
            .send((verb.to_string(), args.clone(), tx))
            .map_err(|_| "daemon is shutting down".to_string())?;
        if let Ok(mut w) = wake_tx.lock() {
            let _ = w.write_all(&[1]);
        }
        rx.recv_timeout(Duration::from_secs(10))
            .map_err(|_| "daemon did not answer".to_string())?
    };
    let server = crate::mgmt::Server::bind_with(&cfg.daemon.socket, cfg.socket_group()?)?;
    let management_refused = server.refused_counter();
    if let Some(r) = &mut rsvp {
        r.show_management_refused(management_refused.clone());
    }
    if let Some(g) = &mut gist {
        g.show_management_refused(management_refused.clone());
    }
    tracing::info!(socket = %cfg.daemon.socket.display(), allowed = %server.access().describe(),
        "management socket ready");
    let _server = server.spawn(handler);

    // The engines publish a snapshot every second; scrapes read the last one (crate::metrics).
    let (rsvp_page, gist_page, qos_page) = (
        crate::metrics::Published::new("rsvp"),
        crate::metrics::Published::new("gist"),
        crate::metrics::Published::new("qos_nslp"),
    );
    let metrics_server = match &cfg.daemon.metrics {
        Some(addr) => {
            let addr = addr
                .get_ref()
                .parse()
                .with_context(|| format!("daemon.metrics: {:?}", addr.get_ref()))?;
            // The management socket is the daemon's, not one service's: its page is `daemon`.
            let refused = management_refused.clone();
            let daemon_page = crate::metrics::ServiceCollector::live(move || {
                let mut m = crate::metrics::Snapshot::new("daemon");
                m.management_refused(refused.load(Ordering::Relaxed));
                m
            });
            let pages = [
                Some(daemon_page),
                rsvp.is_some()
                    .then(|| crate::metrics::ServiceCollector::published(rsvp_page.clone())),
                gist.is_some()
                    .then(|| crate::metrics::ServiceCollector::published(gist_page.clone())),
                (gist.is_some() && cfg.qos_nslp.is_some())
                    .then(|| crate::metrics::ServiceCollector::published(qos_page.clone())),
            ];
            let registry = crate::metrics::registry(pages.into_iter().flatten());
            Some(crate::metrics::http::MetricsServer::start(addr, registry)?)
        }
        None => None,
    };

    let mut last_metrics = Instant::now() - Duration::from_secs(1);
    let mut hold = hold::ReceiveHold::new(cfg.daemon.receive_hold.get_ref().0, Instant::now());
    // The configuration in force for what changes live, once a reload has replaced it.
    let mut applied: Option<NodeConfig> = None;
    while !stop.load(Ordering::Relaxed) {
        if hangup.swap(false, Ordering::Relaxed) {
            match reload::prepare(config, applied.as_ref().unwrap_or(&cfg), &cfg) {
                Ok(r) => {
                    if let Some(h) = r.receive_hold {
                        hold.set(h);
                        if let Some(Rsvp::Sharded(s)) = &mut rsvp {
                            s.set_receive_hold(h);
                        }
                        tracing::info!(receive_hold = ?h, "SIGHUP: receive hold-off changed");
                    }
                    apply(&r, &mut rsvp, &log_level);
                    applied = Some(r.config);
                }
                Err(errors) => {
                    for e in &errors {
                        tracing::error!(error = %e, "SIGHUP: configuration error");
                    }
                    tracing::error!(
                        file = %config.display(),
                        errors = errors.len(),
                        "SIGHUP: configuration not reloaded; the running one stays"
                    );
                }
            }
        }
        // Wake at the engines' deadlines, and at least every second (metrics, signals).
        let deadline = [
            rsvp.as_ref().and_then(|r| r.deadline()),
            gist.as_ref().and_then(|g| g.deadline()),
        ]
        .into_iter()
        .flatten()
        .min();
        // Under load, let a batch gather first ([`hold`]).
        if let Some(wait) = hold.wait() {
            std::thread::sleep(wait);
        }
        let (timeout, timed) = poll_timeout(deadline, Instant::now(), Duration::from_secs(1));
        let (rsvp_ready, gist_ready, wake_ready): (Vec<RawFd>, Vec<RawFd>, bool);
        {
            let mut pfds: Vec<PollFd<'_>> = rsvp
                .iter()
                .flat_map(|r| r.fds())
                .map(|fd| PollFd::new(fd, PollFlags::POLLIN))
                .collect();
            let rsvp_fds = pfds.len();
            if let Some(g) = &gist {
                pfds.extend(g.fds().into_iter().map(|(fd, write)| {
                    let flags = if write {
                        PollFlags::POLLIN | PollFlags::POLLOUT
                    } else {
                        PollFlags::POLLIN
                    };
                    PollFd::new(fd, flags)
                }));
            }
            pfds.push(PollFd::new(wake_rx.as_fd(), PollFlags::POLLIN));
            let (early, interrupted) = match poll(&mut pfds, timeout) {
                // Timed out waiting for an engine deadline that has not come: a wasted wake-up.
                Ok(0) => (timed.is_some_and(|d| Instant::now() < d), false),
                Ok(_) => (false, false),
                Err(nix::errno::Errno::EINTR) => (false, true),
                Err(e) => return Err(e).context("poll"),
            };
            // Which descriptors to read: those poll found ready (all of them after a signal).
            let ready = |p: &PollFd<'_>| interrupted || p.any().unwrap_or(true);
            let ready_in = |range: std::ops::Range<usize>| -> Vec<RawFd> {
                pfds[range]
                    .iter()
                    .filter(|p| ready(p))
                    .map(|p| p.as_fd().as_raw_fd())
                    .collect()
            };
            rsvp_ready = ready_in(0..rsvp_fds);
            gist_ready = ready_in(rsvp_fds..pfds.len() - 1);
            wake_ready = pfds.last().is_some_and(ready);
            if let Some(g) = &mut gist {
                g.note_wakeup(early);
            }
        }
        let mut sink = [0u8; 64];
        while wake_ready && let Ok(n) = (&wake_rx).read(&mut sink) {
            if n == 0 {
                break;
            }
        }
        while let Ok((verb, args, reply)) = req_rx.try_recv() {
            if verb.starts_with("gist.") || verb.starts_with("qos.") {
                match &mut gist {
                    Some(g) => g.handle(&verb, &args, reply),
                    None => {
                        let _ = reply.send(Err("GIST is not enabled on this daemon (no [gist] \
                                                section in its configuration)"
                            .into()));
                    }
                }
            } else if verb == "rsvp.wait"
                && let Some(r) = &mut rsvp
            {
                r.wait(&args, reply);
            } else {
                let _ = reply.send(match &mut rsvp {
                    Some(r) => r.handle(&verb, &args),
                    None => Err("RSVP is not enabled on this daemon (no [rsvp] section in \
                                 its configuration)"
                        .into()),
                });
            }
        }
        let mut read = 0;
        if let Some(r) = &mut rsvp {
            read += r.on_ready(Some(&rsvp_ready));
            if r.deadline().is_some_and(|d| d <= Instant::now()) {
                r.on_timeout();
            }
        }
        if let Some(g) = &mut gist {
            read += g.on_ready(Some(&gist_ready));
            if g.deadline().is_some_and(|d| d <= Instant::now()) {
                g.on_timeout();
            }
        }
        hold.note(Instant::now(), read);
        if metrics_server.is_some() && last_metrics.elapsed() >= Duration::from_secs(1) {
            if let Some(r) = &mut rsvp {
                rsvp_page.publish(r.metrics());
            }
            if let Some(g) = &mut gist {
                gist_page.publish(g.metrics());
                if let Some(q) = g.qos_metrics() {
                    qos_page.publish(q);
                }
            }
            last_metrics = Instant::now();
        }
    }
    tracing::info!("stopping");
    Ok(())
}

/// The capabilities the daemon needs for `cfg`, each with what needs it (see [`crate::caps`]).
pub fn capability_needs(cfg: &NodeConfig) -> Vec<crate::caps::Need> {
    use crate::caps::{Capability, Need, port_need};
    use crate::gist::config::Interception;
    use crate::rsvp::config::{MplsKind, TrafficControlKind};
    let mut needs = Vec::new();
    if let Some(r) = &cfg.rsvp {
        needs.push(Need::new(
            Capability::NetRaw,
            "the raw RSVP sockets (IP protocol 46, Router Alert interception)",
        ));
        if matches!(
            r.traffic_control,
            TrafficControlKind::Htb | TrafficControlKind::HtbTc
        ) {
            needs.push(Need::new(
                Capability::NetAdmin,
                "rsvp.traffic_control = \"htb\" (HTB classes and filters)",
            ));
        }
        if r.mpls_kind() == MplsKind::Kernel {
            needs.push(Need::new(
                Capability::NetAdmin,
                "rsvp.mpls = \"kernel\" (MPLS routes and net.mpls settings)",
            ));
        }
    }
    if let Some(g) = &cfg.gist {
        needs.push(Need::new(
            Capability::NetRaw,
            "GIST's Router Alert sockets (UDP with IP options)",
        ));
        needs.extend(port_need(
            crate::gist::service::GIST_PORT,
            "GIST's UDP port",
        ));
        needs.extend(g.tcp_port().and_then(|p| port_need(p, "gist.tcp_port")));
        needs.extend(g.tls_port().and_then(|p| port_need(p, "gist.tls.port")));
        if g.interception == Interception::Netfilter {
            needs.push(Need::new(
                Capability::NetAdmin,
                "gist.interception = \"netfilter\" (NFQUEUE rules through iptables, the queue)",
            ));
        }
    }
    if let Some(addr) = cfg
        .daemon
        .metrics
        .as_ref()
        .and_then(|m| m.get_ref().parse::<std::net::SocketAddr>().ok())
    {
        needs.extend(port_need(addr.port(), "daemon.metrics"));
    }
    needs
}

/// Apply a re-read configuration to the running services (see [`reload`]).
fn apply(
    r: &reload::Reload,
    rsvp: &mut Option<Rsvp>,
    log_level: &tracing_subscriber::reload::Handle<
        tracing_subscriber::filter::LevelFilter,
        tracing_subscriber::Registry,
    >,
) {
    if let Some(level) = r.log {
        let _ = log_level.modify(|f| *f = tracing_subscriber::filter::LevelFilter::from(level));
        tracing::info!(%level, "SIGHUP: log level changed");
    }
    let Some(s) = rsvp else {
        return;
    };
    for (name, policy) in &r.integrity {
        if s.set_integrity(name, policy.clone()) {
            tracing::info!(interface = %name, mode = ?policy.mode, "SIGHUP: integrity policy and keys read again");
        }
    }
    for name in &r.lsps_closed {
        match s.close_configured_lsp(name) {
            Ok(()) => tracing::info!(lsp = %name, "SIGHUP: LSP torn down"),
            Err(e) => tracing::warn!(lsp = %name, error = %e, "SIGHUP: tearing down an LSP"),
        }
    }
    for req in &r.lsps_opened {
        match s.open_configured_lsp(req) {
            Ok(()) => tracing::info!(lsp = %req.name, to = %req.to, "SIGHUP: LSP opened"),
            Err(e) => tracing::warn!(lsp = %req.name, error = %e, "SIGHUP: opening an LSP"),
        }
    }
    for field in &r.needs_restart {
        tracing::warn!(%field, "SIGHUP: changed, but needs a restart to take effect");
    }
    tracing::info!(
        applied_live = r.applies_something(),
        need_restart = r.needs_restart.len(),
        "SIGHUP: configuration reloaded"
    );
}

/// The RSVP service: one engine on the loop, or shards on threads of their own with the loop
/// as their dispatcher (`[daemon] threads`, [`crate::rsvp::shard`]).
#[derive(Debug)]
enum Rsvp {
    One(Box<crate::rsvp::service::RsvpService>),
    Sharded(Box<crate::rsvp::shard::runtime::ShardedService>),
}

impl Rsvp {
    fn start(cfg: &NodeConfig, r: &crate::rsvp::config::RsvpSection) -> anyhow::Result<Rsvp> {
        Ok(match cfg.rsvp_shards() {
            1 => Rsvp::One(Box::new(crate::rsvp::service::RsvpService::start(cfg, r)?)),
            n => Rsvp::Sharded(Box::new(
                crate::rsvp::shard::runtime::ShardedService::start(cfg, r, n)?,
            )),
        })
    }

    fn fds(&self) -> Vec<std::os::fd::BorrowedFd<'_>> {
        match self {
            Rsvp::One(s) => s.fds(),
            Rsvp::Sharded(s) => s.fds(),
        }
    }

    /// Open an LSP of the configuration (a reload added or changed it).
    fn open_configured_lsp(&mut self, req: &crate::rsvp::te::LspReq) -> Result<(), String> {
        match self {
            Rsvp::One(s) => s.open_configured_lsp(req),
            Rsvp::Sharded(s) => s.open_configured_lsp(req),
        }
    }

    /// Replace the integrity policy of interface `name` (a reload read it again).
    fn set_integrity(&mut self, name: &str, policy: pathwise_auth::Policy) -> bool {
        match self {
            Rsvp::One(s) => s.set_integrity(name, policy),
            Rsvp::Sharded(s) => s.set_integrity(name, policy),
        }
    }

    /// Tear down an LSP of the configuration (a reload removed or changed it).
    fn close_configured_lsp(&mut self, name: &str) -> Result<(), String> {
        match self {
            Rsvp::One(s) => s.close_configured_lsp(name),
            Rsvp::Sharded(s) => s.close_configured_lsp(name),
        }
    }

    /// The loop's deadline: the engine's; the shards keep their own.
    fn deadline(&self) -> Option<Instant> {
        match self {
            Rsvp::One(s) => s.deadline(),
            Rsvp::Sharded(_) => None,
        }
    }

    fn on_ready(&mut self, ready: Option<&[RawFd]>) -> usize {
        match self {
            Rsvp::One(s) => s.on_ready(ready),
            Rsvp::Sharded(s) => s.on_ready(ready),
        }
    }

    fn on_timeout(&mut self) {
        if let Rsvp::One(s) = self {
            s.on_timeout();
        }
    }

    /// `rsvp.wait`: the reply is sent when the state comes or the time is up.
    fn wait(&mut self, args: &Value, reply: Reply) {
        match self {
            Rsvp::One(s) => s.wait(args, reply),
            Rsvp::Sharded(s) => s.wait(args, reply),
        }
    }

    fn handle(&mut self, verb: &str, args: &Value) -> Result<Value, String> {
        match self {
            Rsvp::One(s) => s.handle(verb, args),
            Rsvp::Sharded(s) => s.handle(verb, args),
        }
    }

    fn metrics(&mut self) -> crate::metrics::Snapshot {
        match self {
            Rsvp::One(s) => s.metrics(),
            Rsvp::Sharded(s) => s.metrics(),
        }
    }

    fn traffic_control(
        &self,
    ) -> pathwise_core::tc::SharedTrafficControl<crate::rsvp::service::DataPlane> {
        match self {
            Rsvp::One(s) => s.traffic_control(),
            Rsvp::Sharded(s) => s.traffic_control(),
        }
    }

    fn show_management_refused(&mut self, c: Arc<std::sync::atomic::AtomicU64>) {
        match self {
            Rsvp::One(s) => s.show_management_refused(c),
            Rsvp::Sharded(s) => s.show_management_refused(c),
        }
    }
}

/// How long `poll(2)` sleeps to wake at `deadline` (at most `cap`), and the deadline it waits
/// for (`None` when the cap or nothing is). poll takes whole milliseconds: the wait rounds up,
/// so a timer fires up to 1 ms late. Rounding down made a deadline less than 1 ms away a 0 ms
/// poll that returns at once, and the loop spun until the deadline came — under a random-cookie
/// Query flood, with a Confirm-wait expiry every 2 ms, that was a quarter of a core.
fn poll_timeout(
    deadline: Option<Instant>,
    now: Instant,
    cap: Duration,
) -> (PollTimeout, Option<Instant>) {
    let wait = deadline.map_or(cap, |d| d.saturating_duration_since(now));
    if wait > cap {
        let ms = i32::try_from(cap.as_millis()).unwrap_or(i32::MAX);
        return (PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX), None);
    }
    let ms = wait.as_nanos().div_ceil(1_000_000);
    let ms = i32::try_from(ms).unwrap_or(i32::MAX);
    (
        PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX),
        deadline,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: PollTimeout) -> i32 {
        t.into()
    }

    #[test]
    fn poll_timeout_rounds_up_so_the_loop_never_spins_before_a_deadline() {
        let now = Instant::now();
        let cap = Duration::from_secs(1);
        let at = |us: u64| Some(now + Duration::from_micros(us));
        // Less than a millisecond away: sleep 1 ms, not 0 (0 returns at once: a busy loop).
        for us in [1, 300, 999, 1000] {
            assert_eq!(
                poll_timeout(at(us), now, cap),
                (PollTimeout::from(1u8), at(us))
            );
        }
        assert_eq!(ms(poll_timeout(at(1001), now, cap).0), 2);
        assert_eq!(ms(poll_timeout(at(999_001), now, cap).0), 1000);
        // Due or past: poll without sleeping.
        assert_eq!(ms(poll_timeout(Some(now), now, cap).0), 0);
        assert_eq!(ms(poll_timeout(Some(now), now + cap, cap).0), 0);
        // Far away or none: the cap, and no deadline to wait for.
        assert_eq!(
            poll_timeout(at(1_000_001), now, cap),
            (PollTimeout::from(1000u16), None)
        );
        assert_eq!(
            poll_timeout(None, now, cap),
            (PollTimeout::from(1000u16), None)
        );
    }
}
