//! The Linux driver of [`RsvpLoad`]: raw RSVP sockets read with `recvmmsg` and written with
//! `sendmmsg` in batches from reused buffers, one `poll(2)` loop on one thread, and the report.

use super::rsvp::{LoadConfig, LoadStats, RsvpLoad};
use anyhow::Context as _;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use pathwise_core::io::{IPPROTO_RSVP, Transmit, Transport};
use pathwise_core::time::Instant;
use pathwise_net::{Family, RawConfig, RawOptions, RawSocket};
use serde::Serialize;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Datagrams handed to `sendmmsg` at once (and read per `recvmmsg`).
const BATCH: usize = 64;

/// How the driver runs.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Stop after this long (`None`: at SIGINT/SIGTERM only).
    pub duration: Option<Duration>,
    /// How long the teardown may take before the generator gives up on it.
    pub teardown_limit: Duration,
    /// Print a progress line to stderr this often.
    pub progress: Option<Duration>,
    /// Kernel receive buffer, bytes.
    pub recv_buffer: usize,
}

/// What a run measured.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Seconds from start to stop (the teardown not included).
    pub elapsed_s: f64,
    /// The target n of the senders.
    pub flows_target: u64,
    /// Sender flows held when the run stopped.
    pub flows_held: u64,
    /// Of those, the flows whose reservation was in place.
    pub reserved_held: u64,
    /// Receiver flows held when the run stopped.
    pub receiver_flows_held: u64,
    /// Mean lifetime of the flows the churn deleted, s (`None` before the first deletion).
    pub avg_lifetime_s: Option<f64>,
    /// What the parameters imply (seed 001 §V.A: n · max / 2), s.
    pub implied_lifetime_s: Option<f64>,
    /// Mean time from a flow's first Path to its first Resv at the sender, ms.
    pub avg_setup_ms: Option<f64>,
    /// Flows created per second.
    pub setups_per_s: f64,
    /// Reservations established (first Resv at the sender) per second.
    pub reservations_per_s: f64,
    /// Flows deleted by the churn per second.
    pub teardowns_per_s: f64,
    /// Path and Resv refreshes sent per second.
    pub refreshes_sent_per_s: f64,
    /// Path refreshes (receivers) and Resvs (senders) received per second.
    pub refreshes_received_per_s: f64,
    /// CPU (user + system) of the generator over the run, % of one core.
    pub cpu_percent: f64,
    /// Seconds from ramp-up's end (n flows first held) to stop.
    pub steady_s: Option<f64>,
    /// CPU of the generator from ramp-up's end to stop, % of one core.
    pub steady_cpu_percent: Option<f64>,
    /// Heap bytes the generator held when it stopped, above what it held before it started
    /// (the counting allocator; 0 when it is not installed).
    pub heap_bytes: usize,
    /// `heap_bytes` per flow held (sender and receiver flows together).
    pub heap_bytes_per_flow: Option<f64>,
    /// The flow state by capacity, as the generator counts it.
    pub state_bytes: usize,
    /// Datagrams the socket layer dropped on receipt (malformed, truncated) and the kernel
    /// dropped for a full receive buffer.
    pub socket_drops: u64,
    /// Of which the kernel's.
    pub kernel_drops: u64,
    /// Datagrams the kernel refused to send.
    pub send_errors: u64,
    /// Whether the teardown finished within its limit.
    pub teardown_complete: bool,
    /// The generator's counters.
    pub stats: LoadStats,
}

fn sockets(cfg: &LoadConfig, recv_buffer: usize) -> anyhow::Result<Vec<RawSocket>> {
    let want_v6 = cfg.sender.as_ref().is_some_and(|s| s.src.is_ipv6());
    let want_v4 = cfg.sender.as_ref().is_none_or(|s| s.src.is_ipv4());
    let options = RawOptions {
        recv_buffer,
        ..RawOptions::default()
    };
    let open = |family| {
        RawSocket::open_with(
            RawConfig {
                recv_batch: BATCH,
                ..RawConfig::new(IPPROTO_RSVP, family)
            },
            options.clone(),
        )
    };
    let mut v = Vec::new();
    if want_v4 {
        v.push(open(Family::V4).context("opening a raw IPv4 RSVP socket (needs CAP_NET_RAW)")?);
    }
    if want_v6 {
        v.push(open(Family::V6).context("opening a raw IPv6 RSVP socket (needs CAP_NET_RAW)")?);
    } else if cfg.sender.is_none() {
        // A receiver answers whatever family the Paths come in.
        match open(Family::V6) {
            Ok(s) => v.push(s),
            Err(e) => tracing::warn!(error = %e, "no IPv6 RSVP socket; IPv4 only"),
        }
    }
    Ok(v)
}

/// Run the generator on raw sockets until `opts.duration` passes or a signal comes, tear
/// down, and report.
pub fn run(cfg: LoadConfig, opts: &RunOptions) -> anyhow::Result<Report> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .context("installing signal handlers")?;
    }
    let mut socks = sockets(&cfg, opts.recv_buffer)?;
    let heap_before = crate::bench::alloc::allocated();
    let cpu_before = crate::bench::soak::cpu_seconds();
    let epoch = std::time::Instant::now();
    let now = || Instant::from_nanos(u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX));
    let target = cfg.sender.as_ref().map_or(0, |s| s.flows);
    let mut load = RsvpLoad::new(cfg, now()).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut bufs: Vec<Transmit> = (0..BATCH)
        .map(|_| Transmit {
            src: None,
            dst: std::net::Ipv4Addr::UNSPECIFIED.into(),
            ifindex: None,
            transport: Transport::Raw(IPPROTO_RSVP),
            router_alert: None,
            ttl: 64,
            payload: Vec::with_capacity(256),
        })
        .collect();
    let mut send_errors = 0u64;
    let mut stopped_at: Option<(std::time::Instant, Report)> = None;
    let mut last_progress = std::time::Instant::now();
    // When ramp-up ended, and the CPU seconds then.
    let mut steady_from: Option<(std::time::Instant, f64)> = None;
    loop {
        let t = now();
        // Read everything pending.
        for s in &mut socks {
            loop {
                let mut got = 0;
                match s.recv_batch() {
                    Ok(batch) => {
                        for d in batch {
                            got += 1;
                            load.handle_datagram(t, d);
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "raw socket receive failed"),
                }
                if got == 0 {
                    break;
                }
            }
        }
        load.handle_timeout(t);
        send_errors += flush(&mut load, &socks, &mut bufs, t);
        if steady_from.is_none() && target > 0 && load.ramped_up() {
            steady_from = Some((std::time::Instant::now(), crate::bench::soak::cpu_seconds()));
        }
        if stopped_at.is_none()
            && (stop.load(Ordering::Relaxed) || opts.duration.is_some_and(|d| epoch.elapsed() >= d))
        {
            let mut report = report(
                &load,
                &socks,
                target,
                epoch.elapsed(),
                heap_before,
                cpu_before,
            );
            // The generator's own cost holding n flows: from ramp-up's end to stop.
            if let Some((from, cpu)) = steady_from {
                let secs = from.elapsed().as_secs_f64();
                report.steady_s = Some(secs);
                report.steady_cpu_percent =
                    (secs > 0.0).then(|| (crate::bench::soak::cpu_seconds() - cpu) / secs * 100.0);
            }
            load.stop(t);
            stopped_at = Some((std::time::Instant::now(), report));
            send_errors += flush(&mut load, &socks, &mut bufs, t);
        }
        if let Some((at, _)) = &stopped_at
            && (load.is_idle() || at.elapsed() >= opts.teardown_limit)
        {
            break;
        }
        if let Some(every) = opts.progress
            && last_progress.elapsed() >= every
        {
            last_progress = std::time::Instant::now();
            let st = load.stats();
            eprintln!(
                "t={:.1}s flows={} reserved={} receiver_flows={} created={} deleted={} resv_in={} path_in={}",
                epoch.elapsed().as_secs_f64(),
                load.sender_flows(),
                load.reserved_flows(),
                load.receiver_flows(),
                st.flows_created,
                st.flows_deleted,
                st.resvs_received,
                st.paths_received + st.path_refreshes_received,
            );
        }
        // Sleep until the generator's next deadline or a datagram.
        let deadline = load
            .poll_timeout()
            .map(|d| d.saturating_duration_since(now()));
        let cap = Duration::from_millis(if stopped_at.is_some() { 10 } else { 100 });
        let wait = deadline.map_or(cap, |d| d.min(cap));
        let ms = i32::try_from(wait.as_nanos().div_ceil(1_000_000)).unwrap_or(i32::MAX);
        let mut pfds: Vec<PollFd<'_>> = socks
            .iter()
            .map(|s| PollFd::new(s.as_fd(), PollFlags::POLLIN))
            .collect();
        match poll(
            &mut pfds,
            PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX),
        ) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e).context("poll"),
        }
    }
    let Some((_, mut report)) = stopped_at else {
        anyhow::bail!("the run ended without stopping");
    };
    report.teardown_complete = load.is_idle();
    report.send_errors += send_errors;
    // The teardown's messages belong in the counters too.
    report.stats = load.stats().clone();
    Ok(report)
}

/// Send everything the generator has, in batches; returns the datagrams the kernel refused.
fn flush(load: &mut RsvpLoad, socks: &[RawSocket], bufs: &mut [Transmit], now: Instant) -> u64 {
    let mut errors = 0;
    loop {
        let mut n = 0;
        while n < bufs.len() && load.poll_transmit(now, &mut bufs[n]) {
            n += 1;
        }
        if n == 0 {
            return errors;
        }
        // One family per socket: the batch goes out in runs of one family.
        let mut from = 0;
        while from < n {
            let v4 = bufs[from].dst.is_ipv4();
            let to = (from..n)
                .find(|&i| bufs[i].dst.is_ipv4() != v4)
                .unwrap_or(n);
            match socks.iter().find(|s| s.is_ipv4() == v4) {
                None => errors += (to - from) as u64,
                Some(s) => {
                    let mut at = from;
                    while at < to {
                        match s.send_batch(&bufs[at..to]) {
                            Ok(k) if k > 0 => at += k,
                            // Refused (or nothing taken): count it, skip it, send the rest.
                            _ => {
                                errors += 1;
                                at += 1;
                            }
                        }
                    }
                }
            }
            from = to;
        }
        if n < bufs.len() {
            return errors;
        }
    }
}

fn report(
    load: &RsvpLoad,
    socks: &[RawSocket],
    target: u64,
    elapsed: Duration,
    heap_before: usize,
    cpu_before: f64,
) -> Report {
    let st = load.stats().clone();
    let secs = elapsed.as_secs_f64().max(1e-9);
    let per_s = |n: u64| n as f64 / secs;
    let held = load.sender_flows() + load.receiver_flows();
    let heap = crate::bench::alloc::allocated().saturating_sub(heap_before);
    let (socket_drops, kernel_drops) = socks.iter().fold((0, 0), |(d, k), s| {
        let st = s.stats();
        (d + st.total_drops() + st.kernel_drops, k + st.kernel_drops)
    });
    Report {
        elapsed_s: secs,
        flows_target: target,
        flows_held: load.sender_flows(),
        reserved_held: load.reserved_flows(),
        receiver_flows_held: load.receiver_flows(),
        avg_lifetime_s: (st.flows_deleted > 0)
            .then(|| st.lifetime_sum_ms as f64 / 1e3 / st.flows_deleted as f64),
        implied_lifetime_s: load.implied_lifetime().map(|d| d.as_secs_f64()),
        avg_setup_ms: (st.reservations_established > 0)
            .then(|| st.setup_sum_us as f64 / 1e3 / st.reservations_established as f64),
        setups_per_s: per_s(st.flows_created),
        reservations_per_s: per_s(st.reservations_established),
        teardowns_per_s: per_s(st.flows_deleted),
        refreshes_sent_per_s: per_s(st.path_refreshes_sent + st.resv_refreshes_sent),
        refreshes_received_per_s: per_s(st.path_refreshes_received + st.resvs_received),
        cpu_percent: (crate::bench::soak::cpu_seconds() - cpu_before) / secs * 100.0,
        steady_s: None,
        steady_cpu_percent: None,
        heap_bytes: heap,
        heap_bytes_per_flow: (held > 0 && heap > 0).then(|| heap as f64 / held as f64),
        state_bytes: load.state_bytes(),
        socket_drops,
        kernel_drops,
        send_errors: 0,
        teardown_complete: false,
        stats: st,
    }
}

impl Report {
    /// The report as a table of `what  value` lines.
    pub fn table(&self) -> String {
        let opt =
            |v: Option<f64>, unit: &str| v.map_or("-".to_string(), |v| format!("{v:.2} {unit}"));
        let mut rows: Vec<(String, String)> = vec![
            ("elapsed".into(), format!("{:.1} s", self.elapsed_s)),
            ("flows target n".into(), self.flows_target.to_string()),
            ("flows held (sender)".into(), self.flows_held.to_string()),
            ("  reserved".into(), self.reserved_held.to_string()),
            (
                "flows held (receiver)".into(),
                self.receiver_flows_held.to_string(),
            ),
            ("avg flow lifetime".into(), opt(self.avg_lifetime_s, "s")),
            (
                "  implied n·max/2".into(),
                opt(self.implied_lifetime_s, "s"),
            ),
            (
                "avg setup (Path → Resv)".into(),
                opt(self.avg_setup_ms, "ms"),
            ),
            ("setups/s".into(), format!("{:.1}", self.setups_per_s)),
            (
                "reservations/s".into(),
                format!("{:.1}", self.reservations_per_s),
            ),
            ("teardowns/s".into(), format!("{:.1}", self.teardowns_per_s)),
            (
                "refreshes sent/s".into(),
                format!("{:.1}", self.refreshes_sent_per_s),
            ),
            (
                "refreshes received/s".into(),
                format!("{:.1}", self.refreshes_received_per_s),
            ),
            (
                "generator CPU".into(),
                format!("{:.1} % of a core", self.cpu_percent),
            ),
            ("heap".into(), format!("{} B", self.heap_bytes)),
            ("heap per flow".into(), opt(self.heap_bytes_per_flow, "B")),
            (
                "state by capacity".into(),
                format!("{} B", self.state_bytes),
            ),
            (
                "socket drops (kernel)".into(),
                format!("{} ({})", self.socket_drops, self.kernel_drops),
            ),
            ("send errors".into(), self.send_errors.to_string()),
            (
                "teardown complete".into(),
                self.teardown_complete.to_string(),
            ),
        ];
        let st = &self.stats;
        for (k, v) in &st.path_errors {
            rows.push((format!("PathErr {k}"), v.to_string()));
        }
        for (k, v) in &st.resv_errors {
            rows.push((format!("ResvErr {k}"), v.to_string()));
        }
        for (k, v) in &st.timeouts {
            rows.push((format!("timeout {k}"), v.to_string()));
        }
        for (k, v) in &st.drops {
            rows.push((format!("dropped {k}"), v.to_string()));
        }
        let w = rows
            .iter()
            .map(|(k, _)| k.chars().count())
            .max()
            .unwrap_or(0);
        rows.iter()
            .map(|(k, v)| format!("{k:<w$}  {v}\n"))
            .collect()
    }
}
