//! The sharded RSVP service of `pathwise daemon` (`[daemon] threads = N`, N > 1): the daemon's
//! loop is the dispatcher, each shard a thread running one [`RsvpService`] (one engine, its
//! own sending sockets, its own timer wheel).
//!
//! The dispatcher reads the raw sockets (`recvmmsg` batches) and the routing feed. Each
//! datagram goes to its shard ([`ShardMap::dispatch`]) through a lock-free single-producer
//! single-consumer ring of [`Inbound`] datagrams; the emptied buffers come back over a second
//! ring, so the steady state allocates nothing. A shard sleeps in `poll(2)` on its wake-up
//! socket until its engine's next deadline; the dispatcher writes to that socket only when the
//! shard said it was going to sleep (a flag both sides fence), so a busy shard costs it no
//! system call. A full ring drops the datagram and counts it (`shard_queue_full`), as a full
//! socket buffer would. Route changes and management requests reach a shard as closures over a
//! channel, followed by a wake-up: they are rare, and never on the message path.

use super::ShardMap;
use crate::rsvp::counters::{self, DaemonCounts};
use crate::rsvp::service::{DataPlane, RsvpService, open_sockets};
use crate::rsvp::te::LspReq;
use crate::rsvp::verbs::SessionArg;
use anyhow::Context as _;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use pathwise_core::io::{IfIndex, Received, Transport};
use pathwise_core::tc::SharedTrafficControl;
use pathwise_net::{FibMirror, NetEvent, RawSocket};
use pathwise_rsvp::engine::Counters;
use pathwise_rsvp::engine::StateStats;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::IpAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};
use std::sync::{Arc, mpsc};
use std::time::Duration;

/// Datagrams a shard's ring holds.
const RING: usize = 8192;

/// How long the dispatcher waits for a shard to answer a management request.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// A datagram on its way to a shard.
#[derive(Debug)]
pub struct Inbound {
    src: IpAddr,
    dst: IpAddr,
    ifindex: IfIndex,
    transport: Transport,
    router_alert: Option<u16>,
    ttl: u8,
    buf: Vec<u8>,
}

impl Inbound {
    fn received(&self) -> Received<'_> {
        Received {
            src: self.src,
            dst: self.dst,
            ifindex: self.ifindex,
            transport: self.transport,
            router_alert: self.router_alert,
            ttl: self.ttl,
            payload: &self.buf,
        }
    }
}

/// Work for a shard's thread.
type Call = Box<dyn FnOnce(&mut RsvpService) + Send>;

enum Command {
    Call(Call),
    /// A new receive hold-off (a configuration reload).
    SetHold(Duration),
    Stop,
}

/// The dispatcher's end of one shard.
struct Shard {
    ring: rtrb::Producer<Inbound>,
    spare: rtrb::Consumer<Vec<u8>>,
    commands: mpsc::Sender<Command>,
    wake: UnixStream,
    sleeping: Arc<AtomicBool>,
    /// Datagrams handed over since the last wake-up check.
    handed: bool,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Shard {
    /// Wake the shard if it is asleep (or about to be).
    fn wake(&mut self) {
        self.handed = false;
        // Pairs with the fence in `run_shard`: either the shard sees what was pushed before
        // it sleeps, or we see that it sleeps.
        fence(Ordering::SeqCst);
        if self.sleeping.swap(false, Ordering::SeqCst) {
            let _ = self.wake.write(&[1]);
        }
    }

    /// Run `f` on the shard's thread.
    fn call(&mut self, f: Call) -> bool {
        self.command(Command::Call(f))
    }

    /// Hand the shard's thread a command and wake it.
    fn command(&mut self, c: Command) -> bool {
        let sent = self.commands.send(c).is_ok();
        self.sleeping.store(false, Ordering::SeqCst);
        let _ = self.wake.write(&[1]);
        sent
    }
}

/// The RSVP service of a daemon with more than one shard.
pub struct ShardedService {
    map: ShardMap,
    /// The instant the dispatcher's `now` counts from (for [`ShardMap::dispatch`]).
    epoch: std::time::Instant,
    sockets: Vec<RawSocket>,
    fib: FibMirror,
    shards: Vec<Shard>,
    tc: SharedTrafficControl<DataPlane>,
    /// Bundle sub-messages that could not be read.
    bad_bundle: u64,
    /// Datagrams dropped because their shard's ring was full.
    queue_full: u64,
    management_refused: Arc<AtomicU64>,
}

impl std::fmt::Debug for ShardedService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardedService")
            .field("shards", &self.shards.len())
            .field("bad_bundle", &self.bad_bundle)
            .field("queue_full", &self.queue_full)
            .finish_non_exhaustive()
    }
}

impl ShardedService {
    /// Start `shards` shard threads and open the dispatcher's sockets.
    pub fn start(
        node: &crate::config::NodeConfig,
        cfg: &crate::rsvp::config::RsvpSection,
        shards: usize,
    ) -> anyhow::Result<ShardedService> {
        let epoch = std::time::Instant::now();
        let mut map = ShardMap::new(shards, pathwise_core::rand::random());
        let (services, tc) = RsvpService::start_shards(node, cfg, &mut map, epoch)?;
        let sockets = open_sockets(true)?;
        let hold = node.daemon.receive_hold.get_ref().0;
        let fib = FibMirror::open().context("opening rtnetlink")?;
        let mut out = Vec::with_capacity(shards);
        for (i, svc) in services.into_iter().enumerate() {
            let (ring, inbox) = rtrb::RingBuffer::new(RING);
            let (recycle, spare) = rtrb::RingBuffer::new(RING);
            let (commands, rx) = mpsc::channel();
            let (wake, wake_rx) = UnixStream::pair().context("creating a shard's wake-up")?;
            wake.set_nonblocking(true)?;
            wake_rx.set_nonblocking(true)?;
            let sleeping = Arc::new(AtomicBool::new(false));
            let asleep = Arc::clone(&sleeping);
            let thread = std::thread::Builder::new()
                .name(format!("rsvp-shard-{i}"))
                .spawn(move || run_shard(svc, inbox, recycle, rx, wake_rx, asleep, hold))
                .context("starting a shard thread")?;
            out.push(Shard {
                ring,
                spare,
                commands,
                wake,
                sleeping,
                handed: false,
                thread: Some(thread),
            });
        }
        let mut s = ShardedService {
            map,
            epoch,
            sockets,
            fib,
            shards: out,
            tc,
            bad_bundle: 0,
            queue_full: 0,
            management_refused: Default::default(),
        };
        s.on_ready(None);
        // LSPs of the configuration, once the shards know the routes (their commands run in
        // order), each on the shard its name picks.
        crate::rsvp::service::open_config_lsps(node, cfg, |req| s.open_configured_lsp(req))?;
        tracing::info!(shards, "RSVP sharded");
        Ok(s)
    }

    /// A new receive hold-off for every shard (`[daemon] receive_hold` reloaded).
    pub fn set_receive_hold(&mut self, hold: Duration) {
        for s in &mut self.shards {
            s.command(Command::SetHold(hold));
        }
    }

    /// Open an LSP of the configuration on the shard that heads it (its name's,
    /// [`ShardMap::of_lsp`]); at start or after a reload added or changed it.
    pub fn open_configured_lsp(&mut self, req: &LspReq) -> Result<(), String> {
        let r = req.clone();
        self.ask(self.map.of_lsp(&req.name), move |svc| {
            svc.open_configured_lsp(&r)
        })?
    }

    /// Tear down an LSP of the configuration (a reload removed or changed it) at its shard.
    pub fn close_configured_lsp(&mut self, name: &str) -> Result<(), String> {
        let n = name.to_string();
        self.ask(self.map.of_lsp(name), move |svc| {
            svc.close_configured_lsp(&n)
        })?
    }

    /// Replace the integrity policy of interface `name` (a configuration reload) in every
    /// shard and in the dispatcher, which checks and signs again the messages it cuts;
    /// `false` when the daemon does not run RSVP on it.
    pub fn set_integrity(&mut self, name: &str, policy: pathwise_auth::Policy) -> bool {
        let n = name.to_string();
        let Ok(Some(ifindex)) = self.ask(0, move |svc| svc.ifindex_of(&n)) else {
            return false;
        };
        self.map.set_integrity(ifindex, policy.clone());
        let n = name.to_string();
        self.gather(move |svc| svc.set_integrity(&n, policy.clone()))
            .is_ok_and(|set| set.into_iter().all(|s| s))
    }

    /// File descriptors to wait on: the raw sockets and the routing feed.
    pub fn fds(&self) -> Vec<BorrowedFd<'_>> {
        let mut v: Vec<BorrowedFd<'_>> = self.sockets.iter().map(|s| s.as_fd()).collect();
        v.push(self.fib.as_fd());
        v
    }

    /// Read what poll(2) found ready (`None`: everything) and hand it to the shards; the
    /// datagrams read.
    pub fn on_ready(&mut self, ready: Option<&[RawFd]>) -> usize {
        let ready = |fd: BorrowedFd<'_>| ready.is_none_or(|r| r.contains(&fd.as_raw_fd()));
        let fib = self.fib.drain_ready(ready(self.fib.as_fd()));
        match fib {
            Ok(events) => {
                for e in events {
                    if let NetEvent::Route(change) = e {
                        for s in &mut self.shards {
                            let change = change.clone();
                            s.call(Box::new(move |svc| svc.handle_route_change(change)));
                        }
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
                let now = pathwise_core::time::Instant::from_nanos(
                    u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX),
                );
                let ShardedService {
                    map,
                    sockets,
                    shards,
                    bad_bundle,
                    queue_full,
                    ..
                } = self;
                let batch = match sockets[i].recv_batch() {
                    Ok(b) => b,
                    Err(e) => {
                        tracing::warn!(error = %e, "raw socket receive failed");
                        break;
                    }
                };
                let mut got = 0;
                for d in batch {
                    got += 1;
                    let from = (d.src, d.ifindex);
                    *bad_bundle += map.dispatch(now, from, d.payload, |shard, bytes, src| {
                        let s = &mut shards[shard];
                        let mut buf = s.spare.pop().unwrap_or_default();
                        buf.clear();
                        buf.extend_from_slice(bytes);
                        let inbound = Inbound {
                            src,
                            dst: d.dst,
                            ifindex: d.ifindex,
                            transport: d.transport,
                            router_alert: d.router_alert,
                            ttl: d.ttl,
                            buf,
                        };
                        match s.ring.push(inbound) {
                            Ok(()) => s.handed = true,
                            Err(_) => *queue_full += 1,
                        }
                    });
                }
                for s in shards.iter_mut().filter(|s| s.handed) {
                    s.wake();
                }
                read += got;
                if got == 0 {
                    break;
                }
            }
        }
        read
    }

    /// Run `f` on every shard and collect the answers, in shard order.
    fn gather<R: Send + 'static>(
        &mut self,
        f: impl Fn(&mut RsvpService) -> R + Send + Sync + 'static,
    ) -> Result<Vec<R>, String> {
        let f = Arc::new(f);
        let mut answers = Vec::with_capacity(self.shards.len());
        for s in &mut self.shards {
            let (tx, rx) = mpsc::channel();
            let f = Arc::clone(&f);
            if !s.call(Box::new(move |svc| {
                let _ = tx.send(f(svc));
            })) {
                return Err("an RSVP shard has stopped".into());
            }
            answers.push(rx);
        }
        answers
            .into_iter()
            .map(|rx| {
                rx.recv_timeout(ANSWER_WITHIN)
                    .map_err(|_| "an RSVP shard did not answer".to_string())
            })
            .collect()
    }

    /// Run `f` on shard `i` and wait for the answer.
    fn ask<R: Send + 'static>(
        &mut self,
        i: usize,
        f: impl FnOnce(&mut RsvpService) -> R + Send + 'static,
    ) -> Result<R, String> {
        let (tx, rx) = mpsc::channel();
        if !self.shards[i].call(Box::new(move |svc| {
            let _ = tx.send(f(svc));
        })) {
            return Err("an RSVP shard has stopped".into());
        }
        rx.recv_timeout(ANSWER_WITHIN)
            .map_err(|_| "an RSVP shard did not answer".to_string())
    }

    /// `rsvp.wait`, at the shard that holds the session: it answers `reply` itself, when its
    /// state reaches the point asked for or the request's time is up; the dispatcher does not
    /// wait. Arguments that name no session go to shard 0, which says why they are refused.
    pub fn wait(&mut self, args: &Value, reply: crate::daemon::Reply) {
        let shard = args
            .get("session")
            .and_then(|s| serde_json::from_value::<SessionArg>(s.clone()).ok())
            .map_or(0, |s| self.map.of_session(&s.into()));
        let (a, r) = (args.clone(), reply.clone());
        if !self.shards[shard].call(Box::new(move |svc| svc.wait(&a, r))) {
            let _ = reply.send(Err("an RSVP shard has stopped".into()));
        }
    }

    /// Answer a management verb: one session's at its shard; views and counters from every
    /// shard, merged.
    pub fn handle(&mut self, verb: &str, args: &Value) -> Result<Value, String> {
        let (v, a) = (verb.to_string(), args.clone());
        let one = move |svc: &mut RsvpService| svc.handle(&v, &a);
        match verb {
            "rsvp.sender.add" | "rsvp.sender.del" | "rsvp.reserve" | "rsvp.release" => {
                // A request whose session cannot be read goes to shard 0, which says why.
                let shard = args
                    .get("session")
                    .or(Some(args))
                    .and_then(|s| serde_json::from_value::<SessionArg>(s.clone()).ok())
                    .map_or(0, |s| self.map.of_session(&s.into()));
                self.ask(shard, one)?
            }
            // An LSP is headed by the shard its name picks, which gives it a Tunnel ID whose
            // session it holds (`Config::shard`). A request without a name goes to shard 0,
            // which says why it is refused.
            "rsvp.lsp.add" | "rsvp.lsp.del" => {
                let shard = args
                    .get("name")
                    .and_then(Value::as_str)
                    .map_or(0, |n| self.map.of_lsp(n));
                self.ask(shard, one)?
            }
            // Per node, not per shard: the shared traffic control.
            "rsvp.show.interfaces" => self.ask(0, one)?,
            "rsvp.show.neighbors" => {
                let answers = self
                    .gather(one)?
                    .into_iter()
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(merge_neighbors(answers))
            }
            "rsvp.show.counters" => {
                let mut v = Value::Null;
                let mut per_shard = Vec::new();
                for answer in self.gather(one)? {
                    let answer = answer?;
                    // How the state is spread, shard by shard (the sums are below).
                    per_shard.push(serde_json::json!({
                        "sessions": answer["sessions"],
                        "path_states": answer["path_states"],
                        "resv_states": answer["resv_states"],
                        "messages_in": answer["messages_in"].as_object().map_or(0, |m| {
                            m.values().filter_map(Value::as_u64).sum::<u64>()
                        }),
                    }));
                    merge(&mut v, answer);
                }
                v["shards"] = Value::Array(per_shard);
                merge(&mut v, self.own_counters_json());
                v["management_refused"] = self.management_refused.load(Ordering::Relaxed).into();
                Ok(v)
            }
            _ => {
                let mut v = Value::Null;
                for answer in self.gather(one)? {
                    merge(&mut v, answer?);
                }
                if verb == "rsvp.show.events"
                    && let Value::Array(events) = &mut v
                {
                    events.sort_by(|a, b| {
                        a["t"]
                            .as_f64()
                            .unwrap_or(0.0)
                            .total_cmp(&b["t"].as_f64().unwrap_or(0.0))
                    });
                }
                Ok(v)
            }
        }
    }

    /// What the dispatcher itself counts, in the shape of the engine's counters: its sockets'
    /// drops and the datagrams it could not hand over.
    fn own_counts(&self) -> (Counters, DaemonCounts) {
        let mut c = Counters::default();
        if self.bad_bundle > 0 {
            c.drops.insert("bad_bundle", self.bad_bundle);
        }
        c.drops.insert("shard_queue_full", self.queue_full);
        let d = DaemonCounts {
            socket_drops: std::array::from_fn(|i| {
                self.sockets.iter().map(|s| s.stats().drops[i]).sum()
            }),
            kernel_drops: self.sockets.iter().map(|s| s.stats().kernel_drops).sum(),
            ..DaemonCounts::default()
        };
        (c, d)
    }

    fn own_counters_json(&self) -> Value {
        let (c, d) = self.own_counts();
        counters::counters_json(&c, &StateStats::default(), &d)
    }

    /// The traffic control every shard admits through, for the QoS NSLP to share.
    pub fn traffic_control(&self) -> SharedTrafficControl<DataPlane> {
        self.tc.clone()
    }

    /// Show `counter` (the management socket's refusals) in `counters`.
    pub fn show_management_refused(&mut self, counter: Arc<AtomicU64>) {
        self.management_refused = counter;
    }

    /// Every shard's counters as metric families, summed, with the dispatcher's.
    pub fn metrics(&mut self) -> crate::metrics::Snapshot {
        let (c, d) = self.own_counts();
        let mut m = counters::snapshot(&c, &StateStats::default(), &d);
        match self.gather(|svc| svc.metrics()) {
            Ok(all) => {
                for s in all {
                    m.add(&s);
                }
            }
            Err(e) => tracing::warn!(error = %e, "RSVP metrics not gathered"),
        }
        m
    }
}

impl Drop for ShardedService {
    /// Stop the shards; each removes what it installed as its service is dropped.
    fn drop(&mut self) {
        for s in &mut self.shards {
            let _ = s.commands.send(Command::Stop);
            let _ = s.wake.write(&[1]);
        }
        for s in &mut self.shards {
            if let Some(t) = s.thread.take()
                && t.join().is_err()
            {
                tracing::error!("an RSVP shard thread panicked");
            }
        }
    }
}

/// Sum `v` into `acc`: numbers add, arrays concatenate, objects merge key by key; anything
/// else keeps the first value.
pub fn merge(acc: &mut Value, v: Value) {
    match (acc, v) {
        (acc @ Value::Null, v) => *acc = v,
        (Value::Number(a), Value::Number(b)) => {
            *a = match (a.as_u64(), b.as_u64()) {
                (Some(x), Some(y)) => x.saturating_add(y).into(),
                _ => serde_json::Number::from_f64(
                    a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0),
                )
                .unwrap_or_else(|| a.clone()),
            }
        }
        (Value::Array(a), Value::Array(b)) => a.extend(b),
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        _ => {}
    }
}

/// `show neighbors` of a node from its shards' answers: each shard tracks the Hello neighbours
/// its own state depends on (`crate::rsvp::shard`, "Hello"), so a neighbour several shards
/// track is listed once, with the state blocks of all of them and the latest Hello any heard.
/// The node's Src_Instance is the same in every answer.
pub fn merge_neighbors(answers: Vec<Value>) -> Value {
    let mut instance = Value::Null;
    let mut merged: Vec<Value> = Vec::new();
    for a in answers {
        if instance.is_null() {
            instance = a["instance"].clone();
        }
        for n in a["neighbors"].as_array().into_iter().flatten() {
            let same =
                |m: &&mut Value| m["interface"] == n["interface"] && m["address"] == n["address"];
            let Some(m) = merged.iter_mut().find(same) else {
                merged.push(n.clone());
                continue;
            };
            let blocks =
                m["state_blocks"].as_u64().unwrap_or(0) + n["state_blocks"].as_u64().unwrap_or(0);
            m["state_blocks"] = blocks.into();
            // The most recent Hello (every shard is handed each one, so they agree but for
            // one just being handled), with the instance it carried.
            let ago = |v: &Value| v["heard_ms_ago"].as_u64().unwrap_or(u64::MAX);
            if ago(n) < ago(m) {
                m["heard_ms_ago"] = n["heard_ms_ago"].clone();
                m["instance"] = n["instance"].clone();
            }
        }
    }
    serde_json::json!({ "instance": instance, "neighbors": merged })
}

/// A shard's thread: datagrams from the ring, calls from the channel, the engine's timers.
/// Under load it holds off between wake-ups as the daemon's loop does
/// ([`crate::daemon::hold`]): its engine's refresh timers would otherwise wake it for a few
/// messages at a time.
fn run_shard(
    mut svc: RsvpService,
    mut inbox: rtrb::Consumer<Inbound>,
    mut recycle: rtrb::Producer<Vec<u8>>,
    commands: mpsc::Receiver<Command>,
    wake: UnixStream,
    sleeping: Arc<AtomicBool>,
    hold: Duration,
) {
    let mut sink = [0u8; 64];
    let mut hold = crate::daemon::hold::ReceiveHold::new(hold, std::time::Instant::now());
    loop {
        while let Ok(c) = commands.try_recv() {
            match c {
                Command::Call(f) => f(&mut svc),
                Command::SetHold(h) => hold.set(h),
                Command::Stop => return,
            }
        }
        let now = svc.now();
        let mut got = 0;
        while let Ok(d) = inbox.pop() {
            svc.handle_received(now, d.received());
            got += 1;
            // Back to the dispatcher for the next datagram; dropped if its ring is full.
            let _ = recycle.push(d.buf);
        }
        if got > 0 {
            svc.flush();
        }
        if svc
            .deadline()
            .is_some_and(|d| d <= std::time::Instant::now())
        {
            svc.on_timeout();
        }
        hold.note(std::time::Instant::now(), got);
        // Holding, the shard does not say it sleeps: the dispatcher fills the ring without
        // writing to the wake-up socket, and the next pass takes it all.
        if let Some(wait) = hold.wait() {
            std::thread::sleep(wait);
            continue;
        }
        // Going to sleep: say so, then look once more (see `Shard::wake`).
        sleeping.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if !inbox.is_empty() {
            sleeping.store(false, Ordering::SeqCst);
            continue;
        }
        let timeout = match svc.deadline() {
            Some(d) => {
                let wait = d.saturating_duration_since(std::time::Instant::now());
                let ms = wait.as_nanos().div_ceil(1_000_000).min(1000);
                PollTimeout::try_from(ms as i32).unwrap_or(PollTimeout::MAX)
            }
            None => PollTimeout::from(1000u16),
        };
        let mut pfd = [PollFd::new(wake.as_fd(), PollFlags::POLLIN)];
        let _ = poll(&mut pfd, timeout);
        sleeping.store(false, Ordering::SeqCst);
        while let Ok(n) = (&wake).read(&mut sink) {
            if n == 0 {
                break;
            }
        }
    }
}
