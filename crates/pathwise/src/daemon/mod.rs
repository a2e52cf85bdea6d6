//! `pathwise daemon --config node.toml`: the long-running process on a Linux router or host.
//!
//! It runs the services the configuration enables: RSVP ([`crate::rsvp::service`]) and GIST with
//! the Ping NSLP ([`crate::gist::service`]) and, with `[qos_nslp]`, the QoS NSLP
//! ([`crate::qos`]) sharing RSVP's traffic control. One thread owns the protocol engines and runs a `poll(2)` loop over their sockets, the
//! routing feed and a wake-up socket, sleeping until the engines' next deadline. The management
//! socket ([`crate::mgmt`]) is served on its own thread, which hands each request to the loop
//! and waits for the answer, so engines are never shared between threads. Prometheus metrics
//! (opt-in) are served from a snapshot the loop refreshes every second. SIGINT and SIGTERM stop
//! the loop; dropping the services removes what they installed (traffic-control classes) and
//! the management socket.

pub mod check;
pub mod cli;

use crate::config::NodeConfig;
use anyhow::Context as _;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpListener;
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
    let cfg = NodeConfig::load(config)?;
    let level: tracing::Level = cfg.daemon.log.parse().unwrap_or(tracing::Level::INFO);
    // A second daemon in the same process (tests) keeps the first subscriber.
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .try_init();
    if cfg.rsvp.is_none() && cfg.gist.is_none() {
        anyhow::bail!(
            "{}: no service enabled (add an [rsvp] or a [gist] section)",
            config.display()
        );
    }
    let mut rsvp = match &cfg.rsvp {
        Some(r) => Some(crate::rsvp::service::RsvpService::start(&cfg, r)?),
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

    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .context("installing signal handlers")?;
    }
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
    let server = crate::mgmt::Server::bind(&cfg.daemon.socket)?;
    tracing::info!(socket = %cfg.daemon.socket.display(), "management socket ready");
    let _server = server.spawn(handler);

    let metrics = Arc::new(Mutex::new(String::new()));
    if let Some(addr) = &cfg.daemon.metrics {
        serve_metrics(addr.get_ref(), Arc::clone(&metrics))?;
    }

    let mut last_metrics = Instant::now() - Duration::from_secs(1);
    while !stop.load(Ordering::Relaxed) {
        // Wake at the engines' deadlines, and at least every second (metrics, signals).
        let deadline = [
            rsvp.as_ref().and_then(|r| r.deadline()),
            gist.as_ref().and_then(|g| g.deadline()),
        ]
        .into_iter()
        .flatten()
        .min();
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
            } else {
                let _ = reply.send(match &mut rsvp {
                    Some(r) => r.handle(&verb, &args),
                    None => Err("RSVP is not enabled on this daemon (no [rsvp] section in \
                                 its configuration)"
                        .into()),
                });
            }
        }
        if let Some(r) = &mut rsvp {
            r.on_ready(Some(&rsvp_ready));
            if r.deadline().is_some_and(|d| d <= Instant::now()) {
                r.on_timeout();
            }
        }
        if let Some(g) = &mut gist {
            g.on_ready(Some(&gist_ready));
            if g.deadline().is_some_and(|d| d <= Instant::now()) {
                g.on_timeout();
            }
        }
        if last_metrics.elapsed() >= Duration::from_secs(1) {
            let mut text = String::new();
            if let Some(r) = &rsvp {
                r.metrics(&mut text);
            }
            if let Some(g) = &gist {
                g.metrics(&mut text);
            }
            if let Ok(mut m) = metrics.lock() {
                *m = text;
            }
            last_metrics = Instant::now();
        }
    }
    tracing::info!("stopping");
    Ok(())
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

/// Serve the metrics snapshot as Prometheus text on `addr` (any path).
fn serve_metrics(addr: &str, snapshot: Arc<Mutex<String>>) -> anyhow::Result<()> {
    let listener = TcpListener::bind(addr).with_context(|| format!("metrics: binding {addr}"))?;
    tracing::info!(%addr, "metrics on http://{addr}/metrics");
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
            let mut req = [0u8; 1024];
            let _ = conn.read(&mut req);
            let body = snapshot.lock().map(|s| s.clone()).unwrap_or_default();
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    Ok(())
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
