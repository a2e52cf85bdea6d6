//! The RSVP service of `pathwise daemon`: one [`RsvpEngine`] driven by raw IP sockets (Router
//! Alert interception on forwarding nodes), the kernel's routes (netlink), traffic control
//! (HTB classes) and, for RSVP-TE, the label bindings (the in-memory LFIB, or the kernel's MPLS
//! forwarding), plus the management verbs and metrics.

use super::config::{MplsKind, RsvpSection, TrafficControlKind};
use super::counters::{self, DaemonCounts};
use super::te::{self as te_verbs, LspName, LspReq};
use super::verbs::{self, RequestState, ReserveReq, SenderReq, SessionArg};
use super::wait::{WaitReq, Waits};
use anyhow::Context as _;
use pathwise_core::engine::Engine;
use pathwise_core::io::{IPPROTO_RSVP, IfIndex, Transmit};
use pathwise_core::mpls::{LabelDataplane, LfibChange};
use pathwise_core::tc::SharedTrafficControl;
use pathwise_core::time::Instant;
use pathwise_core::timer::WheelConfig;
use pathwise_net::tc::{Backend, Command, HtbInterface, HtbTrafficControl, Netlink};
use pathwise_net::{Family, FibMirror, LinuxMpls, NetEvent, RawConfig, RawSocket};
use pathwise_rsvp::engine::{
    AdmissionError, MemoryTrafficControl, TcHandle, TcInterface, TcRequest, TrafficControl,
};
use pathwise_rsvp::wire::HopCharacteristics;
use pathwise_rsvp::{Config, Event, InterfaceConfig, RsvpEngine};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};

/// Where admitted reservations go.
#[derive(Debug)]
pub enum DataPlane {
    /// Linux HTB classes.
    Htb(HtbTrafficControl<Backend>),
    /// Accounting only.
    Memory(MemoryTrafficControl),
}

/// One interface reservations are admitted on.
#[derive(Clone, Debug)]
pub struct TcLink {
    /// Kernel ifindex.
    pub ifindex: IfIndex,
    /// Interface name.
    pub name: String,
    /// Link bandwidth, bit/s.
    pub bandwidth_bps: u64,
    /// What reservations may take of it, bit/s.
    pub reservable_bps: u64,
    /// MTU, bytes.
    pub mtu: u32,
}

impl DataPlane {
    /// Traffic control of `kind` on `links`; HTB takes the interfaces over (TCP to and from
    /// `signalling_tcp_ports`, GIST's messaging associations, in the signalling class).
    pub fn build(
        kind: TrafficControlKind,
        links: &[TcLink],
        signalling_tcp_ports: &[u16],
    ) -> DataPlane {
        match kind {
            TrafficControlKind::Htb | TrafficControlKind::HtbTc => {
                let backend = match kind {
                    TrafficControlKind::HtbTc => Backend::Command(Command),
                    _ => match Netlink::open() {
                        Ok(n) => Backend::Netlink(n),
                        // Without a netlink socket (never seen in practice), `tc` can still do
                        // the job, slower.
                        Err(e) => {
                            tracing::warn!(error = %e, "no rtnetlink socket for traffic control, using tc");
                            Backend::Command(Command)
                        }
                    },
                };
                DataPlane::Htb(HtbTrafficControl::with_signalling_tcp_ports(
                    backend,
                    links.iter().map(|l| {
                        (
                            l.ifindex,
                            HtbInterface {
                                name: l.name.clone(),
                                bandwidth_bps: l.bandwidth_bps,
                                reservable_bps: l.reservable_bps,
                                mtu: l.mtu,
                                latency_us: 0,
                            },
                        )
                    }),
                    signalling_tcp_ports,
                ))
            }
            TrafficControlKind::Memory => {
                let mut m = MemoryTrafficControl::new();
                for l in links {
                    m.add_interface(
                        l.ifindex,
                        TcInterface {
                            reservable: l.reservable_bps as f64 / 8.0,
                            bandwidth: l.bandwidth_bps as f64 / 8.0,
                            latency_us: 0,
                            mtu: l.mtu,
                        },
                    );
                }
                DataPlane::Memory(m)
            }
        }
    }
}

impl DataPlane {
    /// Have the kernel's classes and filters installed at each [`TrafficControl::commit`],
    /// which the daemon's services call once they have sent a batch's messages
    /// ([`HtbTrafficControl::defer_until_commit`]); in-memory admission has nothing to defer.
    fn defer_until_commit(&mut self) {
        if let DataPlane::Htb(t) = self {
            t.defer_until_commit(true);
        }
    }
}

impl TrafficControl for DataPlane {
    fn reserve(
        &mut self,
        ifindex: IfIndex,
        req: TcRequest<'_>,
    ) -> Result<TcHandle, AdmissionError> {
        match self {
            DataPlane::Htb(t) => t.reserve(ifindex, req),
            DataPlane::Memory(t) => t.reserve(ifindex, req),
        }
    }
    fn modify(&mut self, handle: TcHandle, req: TcRequest<'_>) -> Result<(), AdmissionError> {
        match self {
            DataPlane::Htb(t) => t.modify(handle, req),
            DataPlane::Memory(t) => t.modify(handle, req),
        }
    }
    fn release(&mut self, handle: TcHandle) {
        match self {
            DataPlane::Htb(t) => t.release(handle),
            DataPlane::Memory(t) => t.release(handle),
        }
    }
    fn hop_characteristics(&self, ifindex: IfIndex) -> HopCharacteristics {
        match self {
            DataPlane::Htb(t) => t.hop_characteristics(ifindex),
            DataPlane::Memory(t) => t.hop_characteristics(ifindex),
        }
    }
    fn commit(&mut self) {
        match self {
            DataPlane::Htb(t) => t.commit(),
            DataPlane::Memory(t) => t.commit(),
        }
    }
}

/// Events kept for `show events`.
const EVENT_LOG: usize = 256;

/// The running RSVP service.
#[derive(Debug)]
pub struct RsvpService {
    engine: RsvpEngine<SharedTrafficControl<DataPlane>>,
    sockets: Vec<RawSocket>,
    /// The kernel's routes; `None` in a shard, which the dispatcher tells of route changes.
    fib: Option<FibMirror>,
    epoch: std::time::Instant,
    interfaces: Vec<(IfIndex, String)>,
    events: VecDeque<Value>,
    send_errors: u64,
    /// What `flush` sends, by address family; kept between flushes so sending allocates
    /// nothing in steady state (the payloads go back to the engine, `RsvpEngine::recycle`).
    outgoing: [Vec<Transmit>; 2],
    /// The kernel's MPLS forwarding, with `mpls = "kernel"`.
    mpls: Option<LinuxMpls>,
    /// Label changes the kernel refused.
    dataplane_errors: u64,
    /// The reservation requests made through `rsvp.reserve`, as made, one per session: the
    /// engine keeps each until it is released (or withdrawn after an admission failure) and
    /// reports only how many it keeps, so `show requests` lists them from here.
    requests: Vec<ReserveReq>,
    /// Connections refused on the daemon's management socket (shown in `counters`).
    management_refused: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// `rsvp.wait` requests not answered yet.
    waits: Waits,
}

impl RsvpService {
    /// Open sockets, learn interfaces and routes, take over traffic control.
    pub fn start(
        node: &crate::config::NodeConfig,
        cfg: &RsvpSection,
    ) -> anyhow::Result<RsvpService> {
        let parts = Parts::read(node, cfg)?;
        let mpls = open_mpls(node, cfg)?;
        let mut tc = DataPlane::build(cfg.traffic_control, &parts.links, &gist_tcp_ports(node));
        tc.defer_until_commit();
        // Shared: the QoS NSLP ([qos_nslp]) admits through the same instance (one budget per
        // interface for both protocols).
        let engine = RsvpEngine::new(parts.engine, SharedTrafficControl::new(tc), Instant::ZERO);
        let sockets = open_sockets(true)?;
        let fib = FibMirror::open().context("opening rtnetlink")?;
        let mut s = RsvpService::new(engine, sockets, Some(fib), parts.interfaces, mpls);
        s.on_readable();
        // LSPs of the configuration, once the routes are known.
        open_config_lsps(node, cfg, |req| s.open_configured_lsp(req))?;
        Ok(s)
    }

    /// The engines of a sharded daemon, one per shard of `map` ([`super::shard`]), each a
    /// service of its own that sends on sockets of its own and receives nothing (the
    /// dispatcher hands it its datagrams and route changes), all admitting through one traffic
    /// control (returned too). Every shard's clock starts at `epoch`. The dispatcher opens the
    /// LSPs of the configuration, each on the shard its name hashes to
    /// ([`super::shard::ShardMap::of_lsp`]), once it has told the shards the routes.
    pub(crate) fn start_shards(
        node: &crate::config::NodeConfig,
        cfg: &RsvpSection,
        map: &mut super::shard::ShardMap,
        epoch: std::time::Instant,
    ) -> anyhow::Result<(Vec<RsvpService>, SharedTrafficControl<DataPlane>)> {
        let parts = Parts::read(node, cfg)?;
        map.set_integrity_of(&parts.engine);
        let mut tc = DataPlane::build(cfg.traffic_control, &parts.links, &gist_tcp_ports(node));
        tc.defer_until_commit();
        let tc = SharedTrafficControl::new(tc);
        let mut out = Vec::with_capacity(map.len());
        for c in super::shard::shard_configs(&parts.engine, map) {
            let engine = RsvpEngine::new(c, tc.clone(), Instant::ZERO);
            let mut s = RsvpService::new(
                engine,
                open_sockets(false)?,
                None,
                parts.interfaces.clone(),
                open_mpls(node, cfg)?,
            );
            s.epoch = epoch;
            out.push(s);
        }
        Ok((out, tc))
    }

    fn new(
        engine: RsvpEngine<SharedTrafficControl<DataPlane>>,
        sockets: Vec<RawSocket>,
        fib: Option<FibMirror>,
        interfaces: Vec<(IfIndex, String)>,
        mpls: Option<LinuxMpls>,
    ) -> RsvpService {
        RsvpService {
            engine,
            sockets,
            fib,
            management_refused: Default::default(),
            epoch: std::time::Instant::now(),
            interfaces,
            events: VecDeque::new(),
            send_errors: 0,
            outgoing: Default::default(),
            mpls,
            dataplane_errors: 0,
            requests: Vec::new(),
            waits: Waits::default(),
        }
    }

    /// A datagram the dispatcher read for this shard.
    pub(crate) fn handle_received(&mut self, now: Instant, d: pathwise_core::io::Received<'_>) {
        self.engine.handle_datagram(now, d);
    }

    /// A route change the dispatcher read, for this shard.
    pub(crate) fn handle_route_change(&mut self, change: pathwise_core::route::RouteChange) {
        let now = self.now();
        self.engine.handle_route_change(now, change);
        self.flush();
    }

    pub(crate) fn now(&self) -> Instant {
        Instant::from_nanos(u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    /// File descriptors to wait on.
    pub fn fds(&self) -> Vec<BorrowedFd<'_>> {
        let mut v: Vec<BorrowedFd<'_>> = self.sockets.iter().map(|s| s.as_fd()).collect();
        v.extend(self.fib.as_ref().map(|f| f.as_fd()));
        v
    }

    /// When the engine next needs time to pass, or a waiting request runs out of time.
    pub fn deadline(&self) -> Option<std::time::Instant> {
        let engine = self
            .engine
            .poll_timeout()
            .map(|t| self.epoch + std::time::Duration::from_nanos(t.as_nanos()));
        engine.into_iter().chain(self.waits.deadline()).min()
    }

    /// `rsvp.wait`: answer `reply` once this node's state for the session reaches the point
    /// asked for (at once if it has), or when the request's time is up ([`crate::rsvp::wait`]).
    pub fn wait(&mut self, args: &Value, reply: crate::daemon::Reply) {
        match WaitReq::parse(args) {
            Ok(req) => {
                let reached = req.until.reached(self.engine.session(&req.key()).as_ref());
                self.waits
                    .add(req, reply, std::time::Instant::now(), reached);
            }
            Err(e) => {
                let _ = reply.send(Err(e));
            }
        }
    }

    /// Drain every socket and the routing feed, then let the engine act.
    pub fn on_readable(&mut self) {
        self.on_ready(None);
    }

    /// Read what poll(2) found ready (`Some`: those descriptors; `None`: all), then let the
    /// engine act: an idle socket or routing feed costs no system call (as in the GIST service).
    /// Returns the datagrams read.
    pub fn on_ready(&mut self, ready: Option<&[RawFd]>) -> usize {
        let ready = |fd: BorrowedFd<'_>| ready.is_none_or(|r| r.contains(&fd.as_raw_fd()));
        let now = self.now();
        let fib = match &mut self.fib {
            Some(f) => f.drain_ready(ready(f.as_fd())),
            None => Ok(Vec::new()),
        };
        match fib {
            Ok(events) => {
                for e in events {
                    if let NetEvent::Route(change) = e {
                        self.engine.handle_route_change(now, change);
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "rtnetlink read failed"),
        }
        let mut read = 0;
        for i in 0..self.sockets.len() {
            if !ready(self.sockets[i].as_fd()) {
                continue;
            }
            loop {
                let mut got = 0;
                match self.sockets[i].recv_batch() {
                    Ok(batch) => {
                        for d in batch {
                            got += 1;
                            self.engine.handle_datagram(now, d);
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "raw socket receive failed"),
                }
                read += got;
                if got == 0 {
                    break;
                }
            }
        }
        self.flush();
        read
    }

    /// Time passed.
    pub fn on_timeout(&mut self) {
        let now = self.now();
        self.engine.handle_timeout(now);
        self.flush();
    }

    pub(crate) fn flush(&mut self) {
        let mut outgoing = std::mem::take(&mut self.outgoing);
        let [v4, v6] = &mut outgoing;
        while let Some(t) = self.engine.poll_transmit() {
            if t.dst.is_ipv4() {
                v4.push(t)
            } else {
                v6.push(t)
            }
        }
        for (batch, want_v4) in [(v4, true), (v6, false)] {
            if batch.is_empty() {
                continue;
            }
            match self.sockets.iter().find(|s| s.is_ipv4() == want_v4) {
                None => self.send_errors += batch.len() as u64,
                Some(sock) => {
                    // send_batch stops at the first datagram the kernel refuses: count it,
                    // skip it, and send the rest.
                    let mut from = 0;
                    while from < batch.len() {
                        match sock.send_batch(&batch[from..]) {
                            Ok(n) if n > 0 => from += n,
                            Ok(_) => from = batch.len(),
                            Err(e) => {
                                self.send_errors += 1;
                                tracing::warn!(error = %e, dst = %batch[from].dst, "raw socket send failed");
                                from += 1;
                            }
                        }
                    }
                }
            }
            for t in batch.drain(..) {
                self.engine.recycle(t.payload);
            }
        }
        self.outgoing = outgoing;
        // The batch's messages are out: now the classes and filters it decided.
        self.engine.traffic_control().lock().commit();
        let t = self.epoch.elapsed().as_secs_f64();
        while let Some(e) = self.engine.poll_event() {
            match &e {
                Event::Lfib(change) => self.apply_label_change(change),
                // The engine withdrew the request on the receiver's behalf
                // (`Config::release_on_admission_failure`).
                Event::ResvError {
                    session,
                    released: true,
                    ..
                } => self.forget_request(*session),
                _ => {}
            }
            tracing::info!(event = ?e, "rsvp upcall");
            if self.events.len() == EVENT_LOG {
                self.events.pop_front();
            }
            self.events
                .push_back(json!({ "t": t, "event": event_json(&e) }));
        }
        if !self.waits.is_empty() {
            let engine = &self.engine;
            self.waits.answer(std::time::Instant::now(), |w| {
                w.until.reached(engine.session(&w.key()).as_ref())
            });
        }
    }

    /// Hand a label binding to the kernel (with `mpls = "kernel"`): a refusal is counted and
    /// logged, and the engine's LFIB keeps the binding.
    fn apply_label_change(&mut self, change: &LfibChange) {
        let Some(k) = &mut self.mpls else { return };
        if let Err(e) = k.apply(change) {
            self.dataplane_errors += 1;
            tracing::warn!(error = %e, change = ?change, "kernel MPLS refused a label change");
        }
    }

    /// An interface's name (its index when it is not an RSVP interface).
    fn ifname(&self, i: IfIndex) -> String {
        self.interfaces
            .iter()
            .find(|(x, _)| *x == i)
            .map_or_else(|| i.0.to_string(), |(_, n)| n.clone())
    }

    /// Replace the integrity policy of interface `name` (a configuration reload); `false` when
    /// the daemon does not run RSVP on it.
    pub fn set_integrity(&mut self, name: &str, policy: pathwise_auth::Policy) -> bool {
        let Some(ifindex) = self.ifindex_of(name) else {
            return false;
        };
        self.engine.set_integrity(ifindex, policy)
    }

    /// The interface of this name the daemon runs RSVP on.
    pub fn ifindex_of(&self, name: &str) -> Option<IfIndex> {
        self.interfaces
            .iter()
            .find(|(_, n)| n == name)
            .map(|&(ifindex, _)| ifindex)
    }

    /// Open an LSP of the configuration (a reload added or changed it).
    pub fn open_configured_lsp(&mut self, req: &LspReq) -> Result<(), String> {
        let now = self.now();
        let result = self.open_lsp(now, req).map(|_| ());
        self.flush();
        result
    }

    /// Tear down an LSP of the configuration (a reload removed or changed it).
    pub fn close_configured_lsp(&mut self, name: &str) -> Result<(), String> {
        let now = self.now();
        let result = self
            .engine
            .close_lsp(now, name)
            .map_err(|e| te_verbs::api_error(name, &e));
        self.flush();
        result
    }

    /// Open (or re-route) an LSP. The engine keeps nothing of one it refuses, so the same
    /// command can be retried once the network allows it.
    fn open_lsp(&mut self, now: Instant, req: &LspReq) -> Result<Value, String> {
        let spec = req.spec()?;
        self.engine
            .open_lsp(now, spec)
            .map(|()| json!(format!("LSP {:?} signalling", req.name)))
            .map_err(|e| te_verbs::api_error(&req.name, &e))
    }

    /// Request a reservation as a local receiver. With or without path state: the engine keeps
    /// the request and sends it when the Path arrives (RFC 2205 §3.11.1); the reply says which.
    fn reserve(&mut self, now: Instant, r: ReserveReq) -> Result<Value, String> {
        let (style, flows) = r.descriptors()?;
        let session: pathwise_rsvp::wire::Session = r.session.into();
        self.engine
            .reserve(now, session, style, flows, r.confirm)
            .map_err(|e| e.to_string())?;
        let state = RequestState::of(&r, self.engine.session(&session).as_ref());
        self.forget_request(session);
        self.requests.push(r);
        Ok(json!(state.summary()))
    }

    /// Drop the record of the request for `session` (the engine no longer keeps it).
    fn forget_request(&mut self, session: pathwise_rsvp::wire::Session) {
        let id = session.identity();
        self.requests
            .retain(|r| pathwise_rsvp::wire::Session::from(r.session).identity() != id);
    }

    /// Answer a management verb.
    pub fn handle(&mut self, verb: &str, args: &Value) -> Result<Value, String> {
        let now = self.now();
        fn parse<T: serde::de::DeserializeOwned>(verb: &str, args: &Value) -> Result<T, String> {
            serde_json::from_value(args.clone())
                .map_err(|e| format!("bad arguments for {verb}: {e}"))
        }
        let result = match verb {
            "rsvp.sender.add" => {
                let r: SenderReq = parse(verb, args)?;
                let t = r.traffic.ok_or("rsvp.sender.add needs traffic")?;
                self.engine.register_sender(now, r.session.into(), r.sender.into(), verbs::tspec(&t)).map(|_| json!("sender registered")).map_err(|e| e.to_string())
            }
            "rsvp.sender.del" => {
                let r: SenderReq = parse(verb, args)?;
                self.engine.unregister_sender(now, r.session.into(), r.sender.into()).map(|_| json!("sender withdrawn")).map_err(|e| e.to_string())
            }
            "rsvp.reserve" => {
                let r: ReserveReq = parse(verb, args)?;
                self.reserve(now, r)
            }
            "rsvp.release" => {
                let s: SessionArg = parse(verb, args)?;
                let session = s.into();
                let released = self.engine.release(now, session);
                self.forget_request(session);
                released.map(|_| json!("reservation released")).map_err(|e| match e {
                    pathwise_rsvp::engine::ApiError::Unknown => "no reservation request for this session".to_string(),
                    other => other.to_string(),
                })
            }
            "rsvp.show.requests" => Ok(Value::Array(
                self.requests.iter().map(|r| verbs::request_json(r, &RequestState::of(r, self.engine.session(&r.session.into()).as_ref()))).collect(),
            )),
            "rsvp.show.sessions" => Ok(Value::Array(self.engine.sessions().iter().map(verbs::session_json).collect())),
            "rsvp.show.interfaces" => Ok(Value::Array(
                self.interfaces.iter().map(|(i, name)| json!({ "ifindex": i.0, "name": name, "reserved_bps": self.reserved_bps(*i) })).collect(),
            )),
            "rsvp.show.counters" => Ok(self.counters_json()),
            "rsvp.show.events" => Ok(Value::Array(self.events.iter().cloned().collect())),
            "rsvp.show.neighbors" => Ok(self.neighbors_json(now)),
            "rsvp.lsp.add" => {
                let r: LspReq = parse(verb, args)?;
                self.open_lsp(now, &r)
            }
            "rsvp.lsp.del" => {
                let r: LspName = parse(verb, args)?;
                self.engine.close_lsp(now, &r.name).map(|_| json!(format!("LSP {:?} torn down", r.name))).map_err(|e| te_verbs::api_error(&r.name, &e))
            }
            "rsvp.show.lsp" => Ok(Value::Array(self.engine.lsps().iter().map(|v| te_verbs::lsp_json(v, &|i| self.ifname(i))).collect())),
            "rsvp.show.labels" => Ok(te_verbs::labels_json(self.engine.lfib(), self.engine.labels_in_use(), &|i| self.ifname(i))),
            _ => Err(format!("unknown verb {verb:?}")),
        };
        self.flush();
        result
    }

    /// The traffic control reservations go through, for the QoS NSLP to share.
    pub fn traffic_control(&self) -> SharedTrafficControl<DataPlane> {
        self.engine.traffic_control().clone()
    }

    fn reserved_bps(&self, i: IfIndex) -> u64 {
        match &*self.engine.traffic_control().lock() {
            DataPlane::Htb(t) => t.reserved_bps(i),
            DataPlane::Memory(t) => (t.reserved(i) * 8.0) as u64,
        }
    }

    /// The Hello neighbours (RFC 3209 §5) and our instance.
    fn neighbors_json(&self, now: Instant) -> Value {
        let name = |i: IfIndex| self.ifname(i);
        let neighbors: Vec<Value> = self
            .engine
            .hello_neighbors()
            .map(|n| {
                json!({
                    "interface": name(n.ifindex),
                    "address": n.addr.to_string(),
                    "instance": n.instance,
                    "heard_ms_ago": n.heard.map(|h| now.saturating_duration_since(h).as_millis() as u64),
                    "state_blocks": n.state_blocks,
                })
            })
            .collect();
        json!({ "instance": self.engine.hello_instance(), "neighbors": neighbors })
    }

    /// What the daemon counts beside the engine.
    fn daemon_counts(&self) -> DaemonCounts {
        DaemonCounts {
            send_errors: self.send_errors,
            dataplane_errors: self.dataplane_errors,
            socket_drops: std::array::from_fn(|i| {
                self.sockets.iter().map(|s| s.stats().drops[i]).sum()
            }),
            kernel_drops: self.sockets.iter().map(|s| s.stats().kernel_drops).sum(),
            state_bytes: self.engine.state_bytes(),
            lsps: self.engine.lsp_count(),
            labels_in_use: self.engine.labels_in_use(),
            receiver_requests: self.engine.receiver_requests(),
        }
    }

    fn counters_json(&self) -> Value {
        let mut v = counters::counters_json(
            self.engine.counters(),
            &self.engine.state_stats(),
            &self.daemon_counts(),
        );
        v["management_refused"] = self
            .management_refused
            .load(std::sync::atomic::Ordering::Relaxed)
            .into();
        v
    }

    /// Show `counter` (the daemon's management socket's refusals) in `counters`.
    pub fn show_management_refused(
        &mut self,
        counter: std::sync::Arc<std::sync::atomic::AtomicU64>,
    ) {
        self.management_refused = counter;
    }

    /// The counters as metric families ([`crate::metrics`]).
    pub fn metrics(&self) -> crate::metrics::Snapshot {
        counters::snapshot(
            self.engine.counters(),
            &self.engine.state_stats(),
            &self.daemon_counts(),
        )
    }
}

impl Drop for RsvpService {
    /// Take back from the kernel the label bindings this daemon installed.
    fn drop(&mut self) {
        let Some(k) = &mut self.mpls else { return };
        let lfib = self.engine.lfib();
        let changes: Vec<LfibChange> = lfib
            .entries()
            .map(|e| LfibChange::Remove(e.in_label))
            .chain(lfib.ftns().map(|f| LfibChange::RemoveFtn {
                dest: f.dest,
                tunnel_id: f.tunnel_id,
            }))
            .collect();
        for c in &changes {
            if let Err(e) = k.apply(c) {
                tracing::warn!(error = %e, change = ?c, "could not remove a label binding");
            }
        }
    }
}

/// What the RSVP service learns from the configuration and the system before it starts.
struct Parts {
    engine: Config,
    links: Vec<TcLink>,
    interfaces: Vec<(IfIndex, String)>,
}

impl Parts {
    /// The engine configuration, the interfaces reservations are admitted on and their names.
    fn read(node: &crate::config::NodeConfig, cfg: &RsvpSection) -> anyhow::Result<Parts> {
        let kernel = pathwise_net::interfaces().context("listing interfaces")?;
        let mut ifaces = Vec::new();
        for (n, i) in cfg.interfaces.iter().enumerate() {
            let name = i.name.get_ref();
            let Some(k) = kernel.iter().find(|k| &k.name == name) else {
                let field = format!("rsvp.interface[{n}].name");
                return Err(node
                    .error_at(
                        i.name.span(),
                        &field,
                        format!("no interface {name:?} on this system"),
                    )
                    .into());
            };
            let reservable = i
                .reservable
                .as_ref()
                .map_or(i.bandwidth.0, |r| r.get_ref().0);
            let integrity = node.integrity_policy(n, i)?;
            let hello = i.hello.as_ref().map(|h| h.config());
            ifaces.push((k, i.bandwidth.0, reservable, (integrity, hello)));
        }
        let engine = Config {
            seed: pathwise_core::rand::random(),
            refresh: cfg.refresh.0,
            keep_multiplier: cfg.keep_multiplier,
            local_repair_delay: cfg.local_repair_delay.0,
            wheel: WheelConfig {
                slot_width: cfg.timer_wheel.slot_width.0,
                slots: cfg.timer_wheel.slots,
                levels: cfg.timer_wheel.levels,
                fuzzy: cfg.timer_wheel.fuzzy,
            },
            interfaces: ifaces
                .iter()
                .map(|(k, bw, res, (integrity, hello))| InterfaceConfig {
                    ifindex: k.ifindex,
                    addrs: k.addrs.iter().map(|n| n.addr()).collect(),
                    bandwidth_bps: *bw,
                    reservable_bps: *res,
                    mtu: k.mtu,
                    latency: std::time::Duration::ZERO,
                    integrity: integrity.clone(),
                    hello: *hello,
                })
                .collect(),
            local_addrs: kernel
                .iter()
                .flat_map(|k| k.addrs.iter().map(|n| n.addr()))
                .collect(),
            // The engine's clock starts at zero now; integrity needs wall-clock time.
            wall_clock_at_zero: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            label_range: cfg.label_range(),
            explicit_null: cfg.explicit_null,
            refresh_reduction: cfg.refresh_reduction,
            expected_sessions: crate::config::expected_sessions(cfg.expected_sessions.as_ref()),
            lsp_setup_timeout: cfg.lsp_setup_timeout(),
            lsp_retry: cfg.lsp_retry(),
            ..Config::default()
        };
        let links = ifaces
            .iter()
            .map(|(k, bw, res, _)| TcLink {
                ifindex: k.ifindex,
                name: k.name.clone(),
                bandwidth_bps: *bw,
                reservable_bps: *res,
                mtu: k.mtu,
            })
            .collect();
        let interfaces = ifaces
            .iter()
            .map(|(k, ..)| (k.ifindex, k.name.clone()))
            .collect();
        Ok(Parts {
            engine,
            links,
            interfaces,
        })
    }
}

/// GIST's messaging associations (its TCP and TLS ports): signalling too.
fn gist_tcp_ports(node: &crate::config::NodeConfig) -> Vec<u16> {
    node.gist
        .iter()
        .flat_map(|g| [g.tcp_port(), g.tls_port()])
        .flatten()
        .collect()
}

/// The kernel's MPLS forwarding, with `mpls = "kernel"` (MPLS input enabled on the
/// interfaces).
fn open_mpls(
    node: &crate::config::NodeConfig,
    cfg: &RsvpSection,
) -> anyhow::Result<Option<LinuxMpls>> {
    let (MplsKind::Kernel, Some(m)) = (cfg.mpls_kind(), &cfg.mpls) else {
        return Ok(None);
    };
    let k = LinuxMpls::open().map_err(|e| node.error_at(m.span(), "rsvp.mpls", e.to_string()))?;
    for (n, i) in cfg.interfaces.iter().enumerate() {
        k.enable_input(i.name.get_ref()).map_err(|e| {
            node.error_at(
                i.name.span(),
                &format!("rsvp.interface[{n}].name"),
                format!("cannot enable MPLS input: {e}"),
            )
        })?;
    }
    Ok(Some(k))
}

/// Open the LSPs of the configuration (`[[rsvp.lsp]]`) with `open` (on the engine, or on the
/// shard that heads each), stopping at the first that cannot be opened with an error that
/// names its entry.
pub(crate) fn open_config_lsps(
    node: &crate::config::NodeConfig,
    cfg: &RsvpSection,
    mut open: impl FnMut(&LspReq) -> Result<(), String>,
) -> anyhow::Result<()> {
    for (n, lsp) in cfg.lsps.iter().enumerate() {
        let req = lsp.request();
        open(&req).map_err(|e| node.error_at(lsp.name.span(), &format!("rsvp.lsp[{n}]"), e))?;
        tracing::info!(lsp = %req.name, to = %req.to, "LSP opened");
    }
    Ok(())
}

/// The raw RSVP sockets, IPv4 and (where the system has it) IPv6. `receive`: intercepting
/// Router Alert transit packets; otherwise for sending only: a socket filter that takes
/// nothing keeps the kernel from queueing on them a copy of every RSVP packet (raw sockets of
/// a protocol each get one).
pub(crate) fn open_sockets(receive: bool) -> anyhow::Result<Vec<RawSocket>> {
    let open = |family| -> std::io::Result<RawSocket> {
        let s = RawSocket::open(RawConfig {
            protocol: IPPROTO_RSVP,
            family,
            intercept_router_alert: receive,
            recv_batch: 32,
        })?;
        if !receive {
            // BPF_RET | BPF_K with k = 0: accept no bytes of any packet.
            s.socket()
                .attach_filter(&[socket2::SockFilter::new(0x06, 0, 0, 0)])?;
        }
        Ok(s)
    };
    let mut sockets =
        vec![open(Family::V4).context("opening the raw IPv4 RSVP socket (needs CAP_NET_RAW)")?];
    match open(Family::V6) {
        Ok(s) => sockets.push(s),
        Err(e) => tracing::warn!(error = %e, "no IPv6 RSVP socket; IPv4 only"),
    }
    Ok(sockets)
}

fn event_json(e: &Event) -> Value {
    match e {
        Event::PathState {
            session,
            sender,
            tspec,
            ..
        } => {
            json!({"path": {"session": format!("{}:{}", session.dest, session.dst_port), "sender": sender.src(), "kbps": f64::from(tspec.0.rate) * 8.0 / 1000.0}})
        }
        Event::PathGone { session, sender } => {
            json!({"path_gone": {"session": format!("{}:{}", session.dest, session.dst_port), "sender": sender.src()}})
        }
        Event::ResvState {
            session,
            sender,
            flowspec,
        } => {
            json!({"resv": {"session": format!("{}:{}", session.dest, session.dst_port), "sender": sender.src(), "kbps": flowspec.map(|f| f64::from(f.reserved_rate()) * 8.0 / 1000.0)}})
        }
        Event::PathError { session, error, .. } => {
            json!({"path_error": {"session": format!("{}:{}", session.dest, session.dst_port), "code": error.code, "value": error.value, "node": error.node}})
        }
        Event::ResvError {
            session,
            error,
            released,
            ..
        } => {
            json!({"resv_error": {"session": format!("{}:{}", session.dest, session.dst_port), "code": error.code, "value": error.value, "node": error.node, "released": released}})
        }
        Event::Confirmed { session, from, .. } => {
            json!({"confirmed": {"session": format!("{}:{}", session.dest, session.dst_port), "from": from}})
        }
        Event::Lfib(change) => json!({"lfib": format!("{change:?}")}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[rsvp] expected_sessions` reaches the engine's configuration (which the shards split).
    #[test]
    fn expected_sessions_reach_the_engine() {
        let text = |extra: &str| {
            format!(
                "[rsvp]\ntraffic_control = \"memory\"\n{extra}\n\n[[rsvp.interface]]\nname = \"lo\"\n\
                 bandwidth = \"10Mbit\"\n"
            )
        };
        for (extra, want) in [("expected_sessions = 250000", 250_000), ("", 0)] {
            let node = crate::config::NodeConfig::parse("node.toml", &text(extra)).unwrap();
            let parts = Parts::read(&node, node.rsvp.as_ref().unwrap()).unwrap();
            assert_eq!(parts.engine.expected_sessions, want, "{extra:?}");
        }
    }
}
