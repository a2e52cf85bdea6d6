//! The GIST service of `pathwise daemon`: one [`GistEngine`] with the Ping NSLP, driven by
//! UDP port 270 with Router Alert ([`RaUdpSocket`], IPv4 and IPv6) and the kernel's routes
//! (netlink), plus the management verbs (`gist.ping`, `gist.show.*`) and metrics.
//!
//! D-mode (RFC 5971 §5.3): Queries go out with the IP Router Alert option; on a forwarding node
//! the socket takes every Router Alert UDP datagram off the forwarding path, and the engine
//! says which it wants ([`Engine::wants_router_alert`]: Queries for an NSLP this node serves).
//! The others are sent on unchanged but for the TTL, as the kernel would have forwarded them.
//! Every other D-mode message is plain UDP to port 270.

use super::config::GistSection;
use super::ma::MaStreams;
use crate::daemon::Reply;
use anyhow::Context as _;
use pathwise_core::engine::Engine;
use pathwise_core::io::{IfIndex, Received, Transmit};
use pathwise_core::time::Instant;
use pathwise_gist::ipc::IpcServer;
use pathwise_gist::nslp::NslpEvent;
use pathwise_gist::nslp::ping::{PingConfig, PingEvent, PingNslp};
use pathwise_gist::wire::{MsgType, SessionId};
use pathwise_gist::{Config, GistEngine, GistEvent, InterfaceConfig};
use pathwise_net::{
    DropReason, Family, FibMirror, NetEvent, RaUdpSocket, RawOptions, TransitQueue, Verdict,
};
use serde::Deserialize;
use serde_json::{Value, json};
use std::net::IpAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};

/// GIST's UDP port (RFC 5971 §5.3.2).
pub const GIST_PORT: u16 = pathwise_gist::wire::GIST_PORT;

/// Batches a ready socket (or the netfilter queue) is read at most per wake-up: 2,048 datagrams
/// at 32 a batch, two milliseconds' worth at a million sessions refreshed every 30 s.
const READS_PER_WAKEUP: usize = 64;

/// A ping waiting for its reply.
#[derive(Debug)]
struct PendingPing {
    session: SessionId,
    seq: u32,
    deadline: std::time::Instant,
    reply: Reply,
}

/// Arguments of `gist.ping`.
#[derive(Debug, Deserialize)]
struct PingArgs {
    /// Destination of the flow pinged along.
    dest: IpAddr,
    /// Session (hex) of an earlier ping to reuse its routing state; absent: a new session.
    session: Option<String>,
    /// Transfer: "udp" (D-mode).
    #[serde(default = "udp")]
    transport: String,
    /// How long to wait for the reply, ms.
    #[serde(default = "default_timeout_ms")]
    timeout_ms: u64,
}

fn udp() -> String {
    "udp".into()
}
fn default_timeout_ms() -> u64 {
    3000
}

/// The running GIST service.
#[derive(Debug)]
pub struct GistService {
    engine: GistEngine,
    sockets: Vec<RaUdpSocket>,
    /// Q-mode datagrams in transit, queued by netfilter (`interception = "netfilter"`); `None`:
    /// the sockets intercept Router Alert themselves.
    transit: Option<TransitQueue>,
    /// Queued datagrams the engine took off the path, and those it let through (another
    /// NSLP's, not GIST).
    transit_intercepted: u64,
    transit_passed: u64,
    /// C-mode streams (TCP), when enabled.
    streams: Option<MaStreams>,
    /// C-mode streams over TLS (RFC 5971 §5.7.3), when enabled.
    tls_streams: Option<MaStreams>,
    /// The load client's run, running or finished (`gist.load.*`).
    load: Option<super::load::LoadRun>,
    load_runs: u64,
    /// NSLPs in other processes (`ipc_socket`), when enabled.
    ipc: Option<IpcServer>,
    fib: FibMirror,
    epoch: std::time::Instant,
    interfaces: Vec<(IfIndex, String)>,
    pings: Vec<PendingPing>,
    /// Router Alert datagrams for port 270 intercepted in transit that the engine did not want
    /// (another NSLP's Queries), sent on.
    transit_forwarded: u64,
    /// Datagrams intercepted in transit that were not sent on: their TTL was 0 or 1 (RFC 5971
    /// §4.3.4: decremented as if IP-forwarded), or their destination is loopback or
    /// unspecified (sending them on would loop through this node).
    transit_ttl_expired: u64,
    transit_bad_destination: u64,
    send_errors: u64,
    /// Returns from the daemon loop's poll(2), and those that timed out before the deadline
    /// they waited for (work for nothing; 0 unless the loop's timeout arithmetic is wrong).
    wakeups: u64,
    early_wakeups: u64,
    /// The QoS NSLP's verbs, with `[qos_nslp]`.
    qos: Option<crate::qos::verbs::QosVerbs>,
    /// The traffic control the QoS NSLP shares with RSVP, with `[qos_nslp]`: committed once a
    /// batch's messages are sent (`TrafficControl::commit`), as RSVP's service does.
    traffic_control: Option<crate::qos::verbs::SharedDataPlane>,
    /// Connections refused on the daemon's management socket (shown in `counters`).
    management_refused: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// Addresses GIST may use and name in its NLI: not loopback, not IPv6 link-local (an NLI
/// address must be reachable from the next GIST hop, which may be several IP hops away).
fn usable(a: IpAddr) -> bool {
    match a {
        IpAddr::V4(v) => !v.is_loopback() && !v.is_unspecified(),
        IpAddr::V6(v) => {
            !v.is_loopback() && !v.is_unspecified() && (v.segments()[0] & 0xffc0) != 0xfe80
        }
    }
}

impl GistService {
    /// Open the sockets, learn interfaces and routes.
    pub fn start(
        node: &crate::config::NodeConfig,
        cfg: &GistSection,
        traffic_control: Option<crate::qos::verbs::SharedDataPlane>,
    ) -> anyhow::Result<Self> {
        let kernel = pathwise_net::interfaces().context("listing interfaces")?;
        let mut interfaces = Vec::new();
        let mut engine_ifaces = Vec::new();
        for name in cfg.interfaces.get_ref() {
            let Some(k) = kernel.iter().find(|k| &k.name == name) else {
                return Err(node
                    .error_at(
                        cfg.interfaces.span(),
                        "gist.interfaces",
                        format!("no interface {name:?} on this system"),
                    )
                    .into());
            };
            interfaces.push((k.ifindex, k.name.clone()));
            engine_ifaces.push(InterfaceConfig {
                ifindex: k.ifindex,
                addrs: k
                    .addrs
                    .iter()
                    .map(|n| n.addr())
                    .filter(|a| usable(*a))
                    .collect(),
            });
        }
        let configured: Vec<IfIndex> = interfaces.iter().map(|(i, _)| *i).collect();
        let refresh = cfg.refresh_period.get_ref().0;
        let engine_cfg = Config {
            seed: pathwise_core::rand::random(),
            interfaces: engine_ifaces,
            local_addrs: kernel
                .iter()
                .filter(|k| !configured.contains(&k.ifindex))
                .flat_map(|k| k.addrs.iter().map(|n| n.addr()))
                .filter(|a| usable(*a))
                .collect(),
            refresh_period: refresh,
            rs_validity: refresh * 3,
            state_lifetime: refresh.max(std::time::Duration::from_secs(30)) * 3,
            cookie_mode: cfg.cookie_mode.into(),
            secret_rotation: cfg.secret_rotation.get_ref().0,
            max_state_lifetime: cfg.max_state_lifetime(),
            confirm_wait: cfg.confirm_wait.get_ref().0,
            cmode_port: cfg.tcp_port(),
            tls_port: cfg.tls_port(),
            router_alert: cfg.router_alert_values().map_err(anyhow::Error::msg)?,
            expected_sessions: crate::config::expected_sessions(cfg.expected_sessions.as_ref()),
            ..Config::default()
        };
        let mut engine = GistEngine::new(engine_cfg, Instant::ZERO);
        engine.register(Box::new(PingNslp::new(PingConfig {
            record_addr: cfg.record_address,
            seed: pathwise_core::rand::random(),
            ..PingConfig::default()
        })));
        for &n in cfg.relay.get_ref() {
            engine.register(Box::new(pathwise_gist::nslp::relay::RelayNslp::new(n)));
        }
        // [qos_nslp]: the QoS NSLP admits through RSVP's traffic control (one budget).
        let (qos, traffic_control) = match (&node.qos_nslp, traffic_control) {
            (Some(q), Some(tc)) => {
                engine.register(Box::new(pathwise_qos_nslp::QosNslp::new(
                    q.engine_config(),
                    tc.clone(),
                )));
                (Some(crate::qos::verbs::QosVerbs::default()), Some(tc))
            }
            (Some(_), None) => {
                anyhow::bail!("[qos_nslp] needs [rsvp]: its traffic control is shared")
            }
            _ => (None, None),
        };
        let options = RawOptions {
            ipv6_router_alert_value: cfg.ipv6_router_alert,
            ..RawOptions::default()
        };
        let transit = open_transit(cfg)?;
        // With netfilter queueing, the sockets take nothing off the path themselves.
        let intercept = transit.is_none();
        let mut sockets = vec![
            RaUdpSocket::open(Family::V4, GIST_PORT, options.clone(), intercept).context(
                "opening UDP port 270 with Router Alert for IPv4 (needs CAP_NET_RAW and \
                 CAP_NET_BIND_SERVICE)",
            )?,
        ];
        match RaUdpSocket::open(Family::V6, GIST_PORT, options, intercept) {
            Ok(s) => sockets.push(s),
            Err(e) => tracing::warn!(error = %e, "no IPv6 GIST socket; IPv4 only"),
        }
        let streams =
            match cfg.tcp_port() {
                Some(port) => Some(MaStreams::listen(port).with_context(|| {
                    format!("listening for messaging associations on TCP {port}")
                })?),
                None => None,
            };
        let tls_streams = match (cfg.tls_port(), &cfg.tls) {
            (Some(port), Some(t)) => {
                let ctx = super::tls::TlsContext::load(node, t.get_ref())?;
                Some(MaStreams::listen_tls(port, ctx).with_context(|| {
                    format!("listening for TLS messaging associations on TCP {port}")
                })?)
            }
            _ => None,
        };
        let ipc = match &cfg.ipc_socket {
            Some(p) => Some(
                ipc_server(p, node.socket_group()?)
                    .with_context(|| format!("gist.ipc_socket: listening on {}", p.display()))?,
            ),
            None => None,
        };
        let fib = FibMirror::open().context("opening rtnetlink")?;
        let mut s = GistService {
            engine,
            sockets,
            transit,
            transit_intercepted: 0,
            transit_passed: 0,
            streams,
            tls_streams,
            load: None,
            load_runs: 0,
            ipc,
            fib,
            management_refused: Default::default(),
            epoch: std::time::Instant::now(),
            interfaces,
            pings: Vec::new(),
            transit_forwarded: 0,
            transit_ttl_expired: 0,
            transit_bad_destination: 0,
            send_errors: 0,
            wakeups: 0,
            early_wakeups: 0,
            qos,
            traffic_control,
        };
        s.on_readable();
        Ok(s)
    }

    fn now(&self) -> Instant {
        Instant::from_nanos(u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    /// File descriptors to wait on, and whether each waits for writability too.
    pub fn fds(&self) -> Vec<(BorrowedFd<'_>, bool)> {
        let mut v: Vec<(BorrowedFd<'_>, bool)> =
            self.sockets.iter().map(|s| (s.as_fd(), false)).collect();
        if let Some(q) = &self.transit {
            v.push((q.as_fd(), false));
        }
        v.push((self.fib.as_fd(), false));
        if let Some(st) = &self.streams {
            v.extend(st.fds());
        }
        if let Some(st) = &self.tls_streams {
            v.extend(st.fds());
        }
        if let Some(ipc) = &self.ipc {
            v.extend(ipc.fds());
        }
        v
    }

    /// When the service next needs time to pass: the engine's deadline or a ping's.
    pub fn deadline(&self) -> Option<std::time::Instant> {
        let engine = self
            .engine
            .poll_timeout()
            .map(|t| self.epoch + std::time::Duration::from_nanos(t.as_nanos()));
        let ping = self
            .pings
            .iter()
            .map(|p| p.deadline)
            .chain(self.qos.as_ref().and_then(|q| q.deadline()))
            .min();
        let load = self.load.as_ref().and_then(super::load::LoadRun::deadline);
        let ping = match (ping, load) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match (engine, ping) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The daemon loop woke up; `early`: its poll timed out before the deadline it waited for.
    pub fn note_wakeup(&mut self, early: bool) {
        self.wakeups += 1;
        self.early_wakeups += u64::from(early);
    }

    /// Drain every socket and the routing feed, then let the engine act.
    pub fn on_readable(&mut self) {
        self.on_ready(None);
    }

    /// Read what poll(2) found ready (`Some`: those descriptors; `None`: all), then let the
    /// engine act. An idle socket, routing feed or listener costs no system call; a ready socket
    /// is read until it is empty or [`READS_PER_WAKEUP`] batches were read — poll is
    /// level-triggered, so whatever is left wakes the loop again at once, and listeners and
    /// messaging associations (polled each time) get their turn under a flood. Returns the
    /// datagrams read.
    pub fn on_ready(&mut self, ready: Option<&[RawFd]>) -> usize {
        let ready = |fd: BorrowedFd<'_>| ready.is_none_or(|r| r.contains(&fd.as_raw_fd()));
        let now = self.now();
        let fib = self.fib.drain_ready(ready(self.fib.as_fd()));
        match fib {
            Ok(events) => {
                for e in events {
                    match e {
                        NetEvent::Route(change) => self.engine.handle_route_change(now, change),
                        NetEvent::Address { .. } => {
                            for s in &mut self.sockets {
                                let _ = s.refresh_local_addrs();
                            }
                        }
                        _ => {}
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "rtnetlink read failed"),
        }
        let mut pass_on = Vec::new();
        let mut read = 0;
        for i in 0..self.sockets.len() {
            if !ready(self.sockets[i].as_fd()) {
                continue;
            }
            // Until the socket is empty, or READS_PER_WAKEUP batches: a loop that holds off
            // between wake-ups under load ([`crate::daemon::hold`]) finds a millisecond's
            // datagrams waiting, more than one batch.
            for _ in 0..READS_PER_WAKEUP {
                let mut got = 0;
                match self.sockets[i].recv_batch() {
                    Ok(batch) => {
                        for d in batch {
                            got += 1;
                            if in_transit(&self.engine, &d) && !self.engine.wants_router_alert(&d) {
                                match forward(&d) {
                                    Ok(t) => pass_on.push(t),
                                    Err(TransitDrop::TtlExpired) => self.transit_ttl_expired += 1,
                                    Err(TransitDrop::BadDestination) => {
                                        self.transit_bad_destination += 1
                                    }
                                }
                                continue;
                            }
                            self.engine.handle_datagram(now, d);
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "GIST socket receive failed"),
                }
                read += got;
                if got == 0 {
                    break;
                }
            }
        }
        for t in pass_on {
            self.transit_forwarded += 1;
            self.send(&t);
        }
        if self.transit.as_ref().is_some_and(|q| ready(q.as_fd())) {
            for _ in 0..READS_PER_WAKEUP {
                let got = self.on_transit(now);
                read += got;
                if got == 0 {
                    break;
                }
            }
        }
        if let Some(st) = &mut self.streams {
            let accept = ready(st.listener_fd());
            st.poll(&mut self.engine, now, accept);
        }
        if let Some(st) = &mut self.tls_streams {
            let accept = ready(st.listener_fd());
            st.poll(&mut self.engine, now, accept);
        }
        self.flush();
        read
    }

    /// Queued Q-mode datagrams in transit: the engine takes those of the NSLPs it serves off the
    /// path (whatever their Router Alert value); the rest go on as the kernel would have sent
    /// them (RFC 5971 §5.3.2.3). Returns the datagrams read.
    fn on_transit(&mut self, now: Instant) -> usize {
        let Some(q) = self.transit.as_mut() else {
            return 0;
        };
        let mut verdicts = Vec::new();
        match q.recv_batch() {
            Ok(batch) => {
                for (id, d) in batch {
                    if self.engine.wants_router_alert(&d) {
                        self.engine.handle_datagram(now, d);
                        verdicts.push((id, Verdict::Drop));
                    } else {
                        verdicts.push((id, Verdict::Accept));
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "netfilter queue receive failed"),
        }
        let read = verdicts.len();
        for (id, v) in verdicts {
            match v {
                Verdict::Drop => self.transit_intercepted += 1,
                Verdict::Accept => self.transit_passed += 1,
            }
            if let Err(e) = q.verdict(id, v) {
                tracing::warn!(error = %e, id, "netfilter verdict failed");
            }
        }
        read
    }

    /// Time passed.
    pub fn on_timeout(&mut self) {
        let now = self.now();
        if self.engine.poll_timeout().is_some_and(|t| t <= now) {
            self.engine.handle_timeout(now);
        }
        let wall = std::time::Instant::now();
        self.load_tick(wall);
        let (late, waiting): (Vec<_>, Vec<_>) =
            self.pings.drain(..).partition(|p| p.deadline <= wall);
        self.pings = waiting;
        for p in late {
            let _ = p.reply.send(Err(format!(
                "no reply for seq {} of session {}",
                p.seq,
                hex(&p.session)
            )));
        }
        self.flush();
    }

    fn send(&mut self, t: &Transmit) {
        let Some(sock) = self
            .sockets
            .iter()
            .find(|s| s.raw().is_ipv4() == t.dst.is_ipv4())
        else {
            self.send_errors += 1;
            return;
        };
        if let Err(e) = sock.send(t) {
            self.send_errors += 1;
            tracing::warn!(error = %e, dst = %t.dst, "GIST send failed");
        }
    }

    fn flush(&mut self) {
        let now = self.now();
        if let Some(ipc) = &mut self.ipc {
            // Accept and serve NSLP clients; their API calls are engine inputs too.
            ipc.poll(&mut self.engine, now);
        }
        loop {
            let mut any = false;
            while let Some(t) = self.engine.poll_transmit() {
                any = true;
                self.send(&t);
                // The next message is written into it (issue #21).
                self.engine.recycle(t.payload);
            }
            // Stream events can make the engine send more (a Confirm once connected).
            while let Some(st) = self.engine.poll_stream() {
                any = true;
                let layer = match st.transport {
                    pathwise_gist::MaTransport::Tcp => &mut self.streams,
                    pathwise_gist::MaTransport::Tls => &mut self.tls_streams,
                };
                match layer {
                    Some(s) => s.apply(&mut self.engine, now, st),
                    None => self.engine.handle_stream_on(
                        now,
                        st.transport,
                        pathwise_gist::StreamInput::Closed { peer: st.peer },
                    ),
                }
            }
            if !any {
                break;
            }
        }
        if let Some(tc) = &self.traffic_control {
            pathwise_core::tc::TrafficControl::commit(&mut *tc.lock());
        }
        if let Some(ipc) = &mut self.ipc {
            ipc.flush(); // upcalls the inputs above produced
        }
        while let Some(e) = self.engine.poll_event() {
            match e {
                GistEvent::Nslp(NslpEvent::Ping(PingEvent::Reply {
                    session_id,
                    seq,
                    destination,
                    path,
                    rtt,
                })) => {
                    let Some(i) = self
                        .pings
                        .iter()
                        .position(|p| p.session == session_id && p.seq == seq)
                    else {
                        if let Some(l) = &mut self.load {
                            l.reply(session_id, seq, rtt);
                        }
                        continue;
                    };
                    let p = self.pings.swap_remove(i);
                    let _ = p.reply.send(Ok(json!({
                        "session": hex(&session_id),
                        "seq": seq,
                        "destination": destination,
                        "rtt_ms": rtt.as_secs_f64() * 1e3,
                        "path": path.iter().map(|h| h.addr.to_string()).collect::<Vec<_>>(),
                    })));
                }
                GistEvent::Nslp(NslpEvent::Ping(PingEvent::Failed {
                    session_id,
                    seq,
                    error,
                })) => {
                    if let Some(i) = self
                        .pings
                        .iter()
                        .position(|p| p.session == session_id && p.seq == seq)
                    {
                        let p = self.pings.swap_remove(i);
                        let _ = p.reply.send(Err(format!("ping not delivered: {error:?}")));
                    } else if let Some(l) = &mut self.load {
                        l.failure(session_id, seq);
                    }
                }
                GistEvent::Recv(r) => {
                    tracing::debug!(event = ?r, "gist upcall");
                    // Read: its buffer takes the next NSLP data received (issue #21).
                    self.engine.recycle_nslp_data(r.nslp_data);
                }
                other => tracing::debug!(event = ?other, "gist upcall"),
            }
        }
        if let Some(q) = &mut self.qos {
            q.poll(&mut self.engine, now);
        }
    }

    /// Answer a management verb on `reply` (a ping answers when its reply comes back).
    pub fn handle(&mut self, verb: &str, args: &Value, reply: Reply) {
        if verb.starts_with("qos.") {
            let now = self.now();
            let names = self.interfaces.clone();
            let ifname = move |i: u32| {
                names
                    .iter()
                    .find(|(x, _)| x.0 == i)
                    .map_or_else(|| i.to_string(), |(_, n)| n.clone())
            };
            match &mut self.qos {
                Some(q) => q.handle(&mut self.engine, now, verb, args, reply, &ifname),
                None => {
                    let _ = reply.send(Err("the QoS NSLP is not enabled on this daemon (no \
                                            [qos_nslp] section in its configuration)"
                        .into()));
                }
            }
            self.flush();
            return;
        }
        let result = match verb {
            "gist.ping" => match self.ping(args) {
                Ok((session, seq, timeout)) => {
                    self.pings.push(PendingPing {
                        session,
                        seq,
                        deadline: std::time::Instant::now() + timeout,
                        reply,
                    });
                    self.flush();
                    return;
                }
                Err(e) => Err(e),
            },
            "gist.load.start" => self.load_start(args),
            "gist.load.result" => match &self.load {
                Some(l) => Ok(l.report()),
                None => Err("no load run".into()),
            },
            "gist.show.mrs" => Ok(self.mrs_json()),
            "gist.show.ma" => Ok(self.ma_json()),
            "gist.show.counters" => Ok(self.counters_json()),
            _ => Err(format!("unknown verb {verb:?}")),
        };
        let _ = reply.send(result);
        self.flush();
    }

    fn ping(&mut self, args: &Value) -> Result<(SessionId, u32, std::time::Duration), String> {
        let a: PingArgs = serde_json::from_value(args.clone())
            .map_err(|e| format!("bad arguments for gist.ping: {e}"))?;
        let transfer = self.transfer_for(&a.transport)?;
        let src = source_towards(a.dest).map_err(|e| format!("no route to {}: {e}", a.dest))?;
        let now = self.now();
        let session = match &a.session {
            Some(h) => Some(parse_hex(h).ok_or_else(|| format!("bad session {h:?}"))?),
            None => None,
        };
        let (session, seq) = self
            .engine
            .with_nslp::<PingNslp, _>(now, |p, g| {
                let sid = session.unwrap_or_else(|| g.new_session_id());
                p.ping_session_transfer(g, now, sid, src, a.dest, transfer)
                    .map(|seq| (sid, seq))
            })
            .ok_or("no Ping NSLP")?
            .map_err(|e| format!("ping not sent: {e}"))?;
        let timeout = std::time::Duration::from_millis(a.timeout_ms.clamp(10, 9000));
        Ok((session, seq, timeout))
    }

    /// Transfer attributes for a transport name, if this node runs that transport.
    fn transfer_for(
        &self,
        transport: &str,
    ) -> Result<pathwise_gist::nslp::TransferAttributes, String> {
        let mut transfer = pathwise_gist::nslp::TransferAttributes::default();
        match transport {
            "udp" => {}
            "tcp" if self.streams.is_some() => transfer.reliable = true,
            "tcp" => {
                return Err(
                    "transport \"tcp\": C-mode is off on this node (add \"tcp\" to \
                            [gist] transports)"
                        .into(),
                );
            }
            "tls" if self.tls_streams.is_some() => {
                transfer.reliable = true;
                transfer.secure = true;
            }
            "tls" => {
                return Err(
                    "transport \"tls\": TLS is off on this node (add \"tls\" to [gist] \
                     transports and a [gist.tls] section)"
                        .into(),
                );
            }
            t => return Err(format!("transport {t:?}: \"udp\", \"tcp\" or \"tls\"")),
        }
        Ok(transfer)
    }

    /// `gist.load.start`: begin a load run (seed 000 §4.1.5); answers at once with its id.
    fn load_start(&mut self, args: &Value) -> Result<Value, String> {
        if self.load.as_ref().is_some_and(|l| !l.done()) {
            return Err("a load run is in progress (gist.load.result)".into());
        }
        let a: super::load::LoadArgs = serde_json::from_value(args.clone())
            .map_err(|e| format!("bad arguments for gist.load.start: {e}"))?;
        let transfer = self.transfer_for(&a.transport)?;
        source_towards(a.dest).map_err(|e| format!("no route to {}: {e}", a.dest))?;
        self.load_runs += 1;
        let run =
            super::load::LoadRun::new(self.load_runs, &a, transfer, std::time::Instant::now())?;
        self.load = Some(run);
        self.load_tick(std::time::Instant::now());
        Ok(json!({ "id": self.load_runs }))
    }

    /// Send the load run's pings that are due.
    fn load_tick(&mut self, wall: std::time::Instant) {
        use super::load::Next;
        let Some(l) = &mut self.load else { return };
        let due = l.due(wall);
        if due.is_empty() {
            return;
        }
        let (dest, transfer) = (l.dest, l.transfer);
        let Ok(src) = source_towards(dest) else {
            for _ in &due {
                l.send_failed();
            }
            return;
        };
        let now = self.now();
        for n in due {
            let (open, sid) = match n {
                Next::Open => (true, None),
                Next::Again(s) => (false, Some(s)),
            };
            let r = self.engine.with_nslp::<PingNslp, _>(now, |p, g| {
                let sid = sid.unwrap_or_else(|| g.new_session_id());
                p.ping_session_transfer(g, now, sid, src, dest, transfer)
                    .map(|seq| (sid, seq))
            });
            let Some(l) = &mut self.load else { return };
            match r {
                Some(Ok((sid, seq))) => l.sent(sid, seq, open),
                _ => l.send_failed(),
            }
        }
        self.flush();
    }

    fn name(&self, i: IfIndex) -> String {
        self.interfaces
            .iter()
            .find(|(x, _)| *x == i)
            .map_or_else(|| i.to_string(), |(_, n)| n.clone())
    }

    fn mrs_json(&self) -> Value {
        let mut v: Vec<Value> = self
            .engine
            .routing_keys()
            .filter_map(|k| {
                let s = self.engine.routing_state(&k)?;
                let half = |st: Option<String>, peer: Option<IpAddr>, ma: Option<IpAddr>| {
                    st.map(|st| {
                        json!({
                            "state": st,
                            "peer": peer.map(|p| p.to_string()),
                            "ma": ma.map(|p| p.to_string()),
                        })
                    })
                };
                Some(json!({
                    "session": hex(&k.session_id),
                    "nslpid": k.nslpid,
                    "source": k.mri.source().map(|a| a.to_string()),
                    "destination": k.mri.destination().map(|a| a.to_string()),
                    "downstream": half(
                        s.downstream.map(|d| format!("{:?}", d.0)),
                        s.downstream.and_then(|d| d.1),
                        s.downstream_ma,
                    ),
                    "upstream": half(
                        s.upstream.map(|u| format!("{:?}", u.0)),
                        s.upstream.and_then(|u| u.1),
                        s.upstream_ma,
                    ),
                }))
            })
            .collect();
        v.sort_by_key(|x| x["session"].as_str().map(str::to_string));
        Value::Array(v)
    }

    fn ma_json(&self) -> Value {
        let mas: Vec<Value> = self
            .engine
            .messaging_associations_by_transport()
            .map(|(peer, transport, state, users)| {
                json!({
                    "peer": peer.to_string(),
                    "transport": transport.name(),
                    "state": format!("{state:?}"),
                    "users": users,
                })
            })
            .collect();
        let layer = |s: &MaStreams| {
            let st = s.stats();
            json!({
                "open": s.len(),
                "opened": st.opened,
                "accepted": st.accepted,
                "connect_failures": st.connect_failures,
                "closed_by_peer": st.closed_by_peer,
                "bytes_in": st.bytes_in,
                "bytes_out": st.bytes_out,
            })
        };
        let tls = self.tls_streams.as_ref().map(|s| {
            let mut v = layer(s);
            let st = s.stats();
            v["handshakes"] = json!(st.tls_handshakes);
            v["handshake_failures"] = json!(st.tls_handshake_failures);
            v["last_error"] = json!(s.last_tls_error());
            v
        });
        json!({
            "count": mas.len(),
            "associations": mas,
            "tcp": self.streams.as_ref().map(layer),
            "tls": tls,
        })
    }

    /// Drops by reason: the engine's, the sockets' (IP header, UDP header and checksum,
    /// oversize datagrams).
    fn drops(&self) -> std::collections::BTreeMap<String, u64> {
        let mut d: std::collections::BTreeMap<String, u64> = self
            .engine
            .counters()
            .drops
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        for s in &self.sockets {
            for r in DropReason::ALL {
                let n = s.raw().stats().dropped(r);
                if n > 0 {
                    let key = match r {
                        DropReason::Truncated => "oversize".to_string(),
                        r => format!("ip_{}", snake(&format!("{r:?}"))),
                    };
                    *d.entry(key).or_insert(0) += n;
                }
            }
            if s.bad_udp() > 0 {
                *d.entry("bad_udp".into()).or_insert(0) += s.bad_udp();
            }
        }
        d
    }

    /// Show `counter` (the daemon's management socket's refusals) in `counters`.
    pub fn show_management_refused(
        &mut self,
        counter: std::sync::Arc<std::sync::atomic::AtomicU64>,
    ) {
        self.management_refused = counter;
    }

    fn counters_json(&mut self) -> Value {
        let by_type = |f: &dyn Fn(MsgType) -> u64| {
            MsgType::ALL
                .iter()
                .map(|&t| (format!("{t:?}"), json!(f(t))))
                .collect::<serde_json::Map<_, _>>()
        };
        let now = self.now();
        let ping = self
            .engine
            .with_nslp::<PingNslp, _>(now, |p, _| p.stats())
            .unwrap_or_default();
        let relay = super::nslp_cli::relay_json(&mut self.engine, now);
        let qos = self
            .engine
            .with_nslp::<crate::qos::verbs::DaemonQos, _>(now, |q, _| {
                crate::qos::counters::counters_json(
                    q.counters(),
                    &crate::qos::counters::StateCounts::of(q),
                )
            });
        let c = self.engine.counters();
        let st = self.engine.state_stats();
        let mut v = json!({
            "messages_in": by_type(&|t| c.received(t)),
            "messages_out": by_type(&|t| c.sent(t)),
            "drops": self.drops(),
            "errors_sent": c.errors_sent.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
            "errors_received": c.errors_received.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
            "query_retransmits": c.query_retransmits,
            "refreshes": c.refreshes,
            "queries_forwarded": c.queries_forwarded,
            "transit_forwarded": self.transit_forwarded + self.sockets.iter().map(RaUdpSocket::forwarded).sum::<u64>(),
            "confirm_retransmits": c.confirm_retransmits,
            "error_restarts": c.error_restarts,
            "peer_error_teardowns": c.peer_error_teardowns,
            "interception": if self.transit.is_some() { "netfilter" } else { "socket" },
            "transit": self.transit.as_ref().map(|q| {
                let t = q.stats();
                json!({
                    "queued": t.queued,
                    "candidates": t.candidates,
                    "intercepted": self.transit_intercepted,
                    "passed": t.passed + self.transit_passed,
                    "unreadable": t.unreadable,
                })
            }),
            "cookies_minted": c.cookies_minted,
            "cookies_rejected": c.cookies_rejected,
            "handshake_failures": c.handshake_failures,
            "upstream_expiries": c.upstream_expiries,
            "downstream_lapses": c.downstream_lapses,
            "peer_changes": c.peer_changes,
            "mas_opened": c.mas_opened,
            "mas_closed": c.mas_closed,
            "tls_refused_by_peer": c.tls_refused_by_peer,
            "tls_handshake_failures": self.tls_streams.as_ref().map_or(0, |s| s.stats().tls_handshake_failures),
            "send_errors": self.send_errors,
            "wakeups": self.wakeups,
            "early_wakeups": self.early_wakeups,
            "kernel_drops": self.sockets.iter().map(|s| s.raw().stats().kernel_drops).sum::<u64>(),
            "routing_states": st.routing_states,
            "peers": st.peers,
            "mas": st.mas,
            "state_bytes": st.bytes,
            "ping": {
                "sent": ping.sent,
                "forwarded": ping.forwarded,
                "answered": ping.answered,
                "replies_forwarded": ping.replies_forwarded,
                "replies": ping.replies,
                "malformed": ping.malformed,
                "hop_limit": ping.hop_limit,
                "refused": ping.refused,
            },
            "interfaces": self.interfaces.iter().map(|(i, _)| self.name(*i)).collect::<Vec<_>>(),
            "ipc": self.ipc.as_ref().map(ipc_json),
            "management_refused": self.management_refused.load(std::sync::atomic::Ordering::Relaxed),
            "relay": relay,
            "qos_nslp": qos,
        });
        // What hostile input met (docs/gist.md, "Hostile input").
        for (k, x) in [
            ("transit_ttl_expired", json!(self.transit_ttl_expired)),
            (
                "transit_bad_destination",
                json!(self.transit_bad_destination),
            ),
            ("validity_capped", json!(c.validity_capped)),
            ("explicit_sent", json!(c.explicit_sent)),
            ("explicit_received", json!(c.explicit_received)),
            ("explicit_failures", json!(c.explicit_failures)),
            ("streams_refused", json!(c.streams_refused)),
            ("ma_takeovers", json!(c.ma_takeovers)),
            ("ma_takeovers_refused", json!(c.ma_takeovers_refused)),
            (
                "streams",
                json!(self.streams.as_ref().map(|s| stream_json(&s.stats()))),
            ),
        ] {
            v[k] = x;
        }
        v
    }

    /// The QoS NSLP's counters and state as metric families (`pathwise_qos_nslp_*`), with
    /// `[qos_nslp]`.
    pub fn qos_metrics(&mut self) -> Option<crate::metrics::Snapshot> {
        let now = self.now();
        self.engine
            .with_nslp::<crate::qos::verbs::DaemonQos, _>(now, |q, _| {
                crate::qos::counters::snapshot(
                    q.counters(),
                    &crate::qos::counters::StateCounts::of(q),
                )
            })
    }

    /// The counters as metric families (`pathwise_gist_*`, see [`crate::metrics`]; named as
    /// the RSVP service's where both count the same thing).
    pub fn metrics(&self) -> crate::metrics::Snapshot {
        let c = self.engine.counters();
        let st = self.engine.state_stats();
        let mut m = crate::metrics::Snapshot::new("gist");
        m.counters(
            "messages",
            "GIST messages sent and received, by message type.",
            ["direction", "type"],
            MsgType::ALL.into_iter().flat_map(|t| {
                [("received", c.received(t)), ("sent", c.sent(t))]
                    .map(|(dir, n)| ([dir.to_string(), format!("{t:?}")], n))
            }),
        );
        let kernel: u64 = self
            .sockets
            .iter()
            .map(|s| s.raw().stats().kernel_drops)
            .sum();
        m.counters(
            "drops",
            "Datagrams and messages dropped, by reason: by the engine, by the sockets, by the kernel for want of receive buffer.",
            ["reason"],
            self.drops()
                .into_iter()
                .chain([
                    (crate::metrics::KERNEL_RECEIVE_BUFFER.to_string(), kernel),
                    // Queries in transit not sent on (docs/gist.md, "Hostile input").
                    ("transit_ttl_expired".to_string(), self.transit_ttl_expired),
                    (
                        "transit_bad_destination".to_string(),
                        self.transit_bad_destination,
                    ),
                ])
                .map(|(r, n)| ([r], n)),
        );
        let errors = |dir: &'static str, by_code: &std::collections::BTreeMap<u16, u64>| {
            by_code
                .iter()
                .map(move |(code, n)| ([dir.to_string(), code.to_string()], *n))
                .collect::<Vec<_>>()
        };
        m.counters(
            "errors",
            "GIST Error messages sent and received, by error code (RFC 5971 appendix A.4.4).",
            ["direction", "code"],
            errors("received", &c.errors_received)
                .into_iter()
                .chain(errors("sent", &c.errors_sent)),
        );
        m.gauge(
            "routing_states",
            "Message routing states.",
            st.routing_states,
        )
        .gauge("peers", "Peers known.", st.peers)
        .gauge("messaging_associations", "Messaging associations.", st.mas)
        .gauge_in(
            "state",
            crate::metrics::Unit::Bytes,
            "Estimated heap held by the engine's state.",
            st.bytes,
        );
        let transit_passed =
            self.transit_passed + self.transit.as_ref().map_or(0, |q| q.stats().passed);
        let stream_send_overflows = self
            .streams
            .as_ref()
            .map_or(0, |s| s.stats().send_overflows);
        for (name, help, n) in [
            (
                "query_retransmits",
                "Query retransmissions.",
                c.query_retransmits,
            ),
            ("refreshes", "Refresh handshakes started.", c.refreshes),
            (
                "queries_forwarded",
                "Queries intercepted that the NSLP declined and GIST forwarded.",
                c.queries_forwarded,
            ),
            (
                "confirm_retransmits",
                "Confirms sent again for a repeated Response (RFC 5971 section 6.2).",
                c.confirm_retransmits,
            ),
            (
                "error_restarts",
                "Handshakes restarted after an Error from the peer (RFC 5971 section 4.4.6).",
                c.error_restarts,
            ),
            (
                "peer_error_teardowns",
                "Routing-state halves deleted after repeated Errors from the peer.",
                c.peer_error_teardowns,
            ),
            (
                "transit_intercepted",
                "Datagrams in transit intercepted for this node.",
                self.transit_intercepted,
            ),
            (
                "transit_passed",
                "Datagrams in transit passed on untouched.",
                transit_passed,
            ),
            (
                "cookies_minted",
                "Responder cookies minted.",
                c.cookies_minted,
            ),
            (
                "cookies_rejected",
                "Confirms whose responder cookie did not verify.",
                c.cookies_rejected,
            ),
            (
                "handshake_failures",
                "Handshakes that ran out of retransmissions.",
                c.handshake_failures,
            ),
            (
                "upstream_expiries",
                "Upstream routing-state halves expired without a refresh.",
                c.upstream_expiries,
            ),
            (
                "downstream_lapses",
                "Downstream routing-state halves the NSLP let lapse.",
                c.downstream_lapses,
            ),
            (
                "peer_changes",
                "Refreshes that found a different peer.",
                c.peer_changes,
            ),
            (
                "explicit_sent",
                "Data sent explicitly routed to an SII-Handle (RFC 5971 §7.1.4).",
                c.explicit_sent,
            ),
            (
                "explicit_received",
                "Explicitly routed Data received (E flag).",
                c.explicit_received,
            ),
            (
                "explicit_failures",
                "Explicitly routed sends refused: unknown SII-Handle or no transfer to that peer.",
                c.explicit_failures,
            ),
            (
                "messaging_associations_opened",
                "Messaging associations opened or accepted.",
                c.mas_opened,
            ),
            (
                "messaging_associations_closed",
                "Messaging associations closed.",
                c.mas_closed,
            ),
            (
                "tls_refused_by_peer",
                "Secure handshakes whose responder offered no TLS.",
                c.tls_refused_by_peer,
            ),
            (
                "validity_capped",
                "Confirms whose state lifetime was capped to max_state_lifetime.",
                c.validity_capped,
            ),
            (
                "streams_refused",
                "Streams torn down for a parse error or an oversize message.",
                c.streams_refused,
            ),
            (
                "ma_takeovers",
                "Messaging associations replaced by a second stream that proved itself.",
                c.ma_takeovers,
            ),
            (
                "ma_takeovers_refused",
                "Second streams refused, the working association kept.",
                c.ma_takeovers_refused,
            ),
            (
                "stream_send_overflows",
                "Messages a stream's full send buffer could not take.",
                stream_send_overflows,
            ),
            (
                "send_errors",
                "Datagrams the sockets would not send.",
                self.send_errors,
            ),
            ("wakeups", "Event-loop wake-ups.", self.wakeups),
            (
                "early_wakeups",
                "Event-loop wake-ups before the deadline waited for.",
                self.early_wakeups,
            ),
            (
                "ipc_denied",
                "Connections to the IPC socket refused: their user is not its owner, root or in the daemon's socket group.",
                self.ipc.as_ref().map_or(0, |i| i.stats().denied),
            ),
        ] {
            m.counter(name, help, n);
        }
        m
    }
}

/// The TCP stream layer's counters of what came over its connections.
fn stream_json(st: &super::ma::StreamStats) -> Value {
    json!({
        "accepted": st.accepted,
        "opened": st.opened,
        "closed_by_peer": st.closed_by_peer,
        "closed_by_engine": st.closed_by_engine,
        "takeover_candidates": st.takeover_candidates,
        "takeovers": st.takeovers,
        "takeovers_refused": st.takeovers_refused,
        "send_overflows": st.send_overflows,
    })
}

/// The IPC server's clients and counters.
/// GIST's IPC socket under the management sockets' rule ([`crate::mgmt::access`]): mode 0600,
/// or 0660 and `[daemon] socket_group`'s; every client's credentials checked before it is
/// served, one refused told `Refused(PermissionDenied)` and counted (`ipc.denied`).
pub fn ipc_server(
    path: &std::path::Path,
    group: Option<crate::mgmt::SocketGroup>,
) -> anyhow::Result<IpcServer> {
    let access = crate::mgmt::Access::for_this_process(group);
    let listener = crate::mgmt::access::bind(path, &access)?;
    let mut ipc = IpcServer::from_listener(listener, path)?;
    tracing::info!(socket = %path.display(), allowed = %access.describe(), "GIST IPC socket ready");
    let (socket, refused) = (path.to_path_buf(), std::sync::atomic::AtomicU64::new(0));
    ipc.set_admission(move |conn| access.check(conn, &socket, &refused).is_ok());
    Ok(ipc)
}

fn ipc_json(ipc: &IpcServer) -> Value {
    let s = ipc.stats();
    json!({
        "socket": ipc.path().map(|p| p.display().to_string()),
        "clients": ipc.clients(),
        "registered": ipc.registered(),
        "accepted": s.accepted,
        "denied": s.denied,
        "registrations": s.registrations,
        "refused": s.refused,
        "disconnects": s.disconnects,
        "malformed": s.malformed,
        "overflows": s.overflows,
        "frames_in": s.frames_in,
        "frames_out": s.frames_out,
        "upcalls": s.upcalls,
        "api_calls": s.api_calls,
        "decisions": s.decisions,
        "decision_timeouts": s.decision_timeouts,
        "stale_decisions": s.stale_decisions,
        "lost_upcalls": s.lost_upcalls,
    })
}

/// The netfilter queue of Q-mode datagrams in transit, as `interception` asks (see
/// [`super::config`]); `None`: the sockets intercept.
fn open_transit(cfg: &GistSection) -> anyhow::Result<Option<TransitQueue>> {
    use super::config::Interception;
    if cfg.interception == Interception::Socket {
        return Ok(None);
    }
    match TransitQueue::open(GIST_PORT, cfg.nfqueue) {
        Ok(q) => {
            tracing::info!(queue = cfg.nfqueue, "Queries in transit intercepted through netfilter, every Router Alert value");
            Ok(Some(q))
        }
        Err(e) if cfg.interception == Interception::Auto => {
            tracing::warn!(error = %e, "netfilter queueing unavailable: only Router Alert value 0 (IPv4) and the configured IPv6 value are intercepted");
            Ok(None)
        }
        Err(e) => Err(anyhow::Error::new(e).context(format!(
            "gist.interception = \"netfilter\": setting up queue {} (needs CAP_NET_ADMIN, the iptables package and the kernel's NFQUEUE target)",
            cfg.nfqueue
        ))),
    }
}

/// Whether `d` was intercepted on its way to another node (rather than addressed to this one).
fn in_transit(engine: &GistEngine, d: &Received<'_>) -> bool {
    use pathwise_gist::nslp::GistApi as _;
    d.router_alert.is_some() && !engine.is_local(d.dst) && !d.dst.is_multicast()
}

/// Why a datagram in transit was not sent on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TransitDrop {
    /// TTL 0 or 1: the kernel would not have forwarded it either.
    TtlExpired,
    /// Towards loopback or the unspecified address: it would come straight back.
    BadDestination,
}

/// `d` sent on towards its destination as the kernel would have: same addresses, ports and
/// Router Alert, TTL one less (RFC 5971 §4.3.4).
fn forward(d: &Received<'_>) -> Result<Transmit, TransitDrop> {
    let dst = d.dst.to_canonical();
    if dst.is_loopback() || dst.is_unspecified() {
        return Err(TransitDrop::BadDestination);
    }
    if d.ttl <= 1 {
        return Err(TransitDrop::TtlExpired);
    }
    Ok(Transmit {
        src: Some(d.src),
        dst: d.dst,
        ifindex: None,
        transport: d.transport,
        router_alert: d.router_alert,
        ttl: d.ttl - 1,
        payload: d.payload.to_vec(),
    })
}

/// The source address the kernel would use towards `dest`.
pub(crate) fn source_towards(dest: IpAddr) -> std::io::Result<IpAddr> {
    let any: IpAddr = if dest.is_ipv4() {
        std::net::Ipv4Addr::UNSPECIFIED.into()
    } else {
        std::net::Ipv6Addr::UNSPECIFIED.into()
    };
    let s = std::net::UdpSocket::bind((any, 0))?;
    s.connect((dest, GIST_PORT))?;
    Ok(s.local_addr()?.ip())
}

/// A Session ID as hex.
pub fn hex(s: &SessionId) -> String {
    s.0.iter().map(|b| format!("{b:02x}")).collect()
}

/// A Session ID from 32 hex digits.
pub fn parse_hex(s: &str) -> Option<SessionId> {
    let s = s.as_bytes();
    if s.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        let d = std::str::from_utf8(&s[2 * i..2 * i + 2]).ok()?;
        *o = u8::from_str_radix(d, 16).ok()?;
    }
    Some(SessionId(out))
}

/// `BadTotalLength` → `bad_total_length`.
fn snake(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_round_trip_as_hex() {
        let s = SessionId([0xab; 16]);
        assert_eq!(parse_hex(&hex(&s)), Some(s));
        assert_eq!(parse_hex("zz"), None);
        assert_eq!(parse_hex(&"g".repeat(32)), None);
        assert_eq!(parse_hex("é".repeat(16).as_str()), None);
    }

    #[test]
    fn usable_addresses() {
        for (a, ok) in [
            ("10.0.0.1", true),
            ("127.0.0.1", false),
            ("fd00::1", true),
            ("fe80::1", false),
            ("::1", false),
        ] {
            assert_eq!(usable(a.parse().unwrap()), ok, "{a}");
        }
        assert_eq!(snake("BadTotalLength"), "bad_total_length");
    }
}
