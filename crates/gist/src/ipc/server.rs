//! The GIST side of the IPC API: [`IpcServer`] accepts NSLP processes on a unix socket and
//! registers, for each NSLPID a client claims, an [`IpcNslp`] plug-in in the engine that
//! forwards the engine's upcalls to that client and the client's API calls to the engine.
//!
//! Driven by the daemon's loop like any socket: non-blocking, [`IpcServer::fds`] to wait on,
//! [`IpcServer::poll`] after every wake-up and after every engine input. The one blocking
//! moment is a Routing-State-Check (RFC 5971 B.2): GIST must decide whether to peer while it
//! processes the Query, so the plug-in waits up to [`IpcServer::decision_timeout`] for the
//! client's answer, serving the client's API calls meanwhile (as an in-process callback may
//! call the API before it returns); without an answer in time it accepts, as GIST does for an
//! NSLPID it serves without a plug-in.
//!
//! A client that disconnects is unregistered, and an in-process plug-in it displaced comes
//! back. Bytes that are not a frame are counted, answered with
//! [`Refusal::Malformed`](super::Refusal::Malformed) and the connection is closed.

use super::wire::{Frame, FrameBuffer, Refusal};
use crate::GistEngine;
use crate::nslp::{
    DeliveryError, GistApi, MessageStatus, NetworkNotification, Nslp, RecvMessage, RoutingDecision,
};
use core::any::Any;
use pathwise_core::time::Instant;
use std::cell::RefCell;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

/// Bytes queued for a client that does not read before its connection is dropped.
const MAX_BACKLOG: usize = 8 << 20;
/// Most simultaneous connections.
const MAX_CLIENTS: usize = 256;
/// Bytes asked of a client's socket per read (reads repeat while they fill it).
const READ_CHUNK: usize = 16 * 1024;

/// Counters of the IPC server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IpcStats {
    /// Connections accepted.
    pub accepted: u64,
    /// Connections refused for who the peer is ([`IpcServer::set_admission`]), answered
    /// [`Refusal::PermissionDenied`](super::Refusal::PermissionDenied) and closed.
    pub denied: u64,
    /// Registrations accepted.
    pub registrations: u64,
    /// Requests refused (NSLPID taken, registered twice, not registered, too many clients).
    pub refused: u64,
    /// Connections closed (by the client, or dropped by us).
    pub disconnects: u64,
    /// Connections dropped for bytes that were not a frame.
    pub malformed: u64,
    /// Connections dropped because the client did not read its upcalls.
    pub overflows: u64,
    /// Frames received.
    pub frames_in: u64,
    /// Frames sent.
    pub frames_out: u64,
    /// Upcalls (RecvMessage, MessageStatus, NetworkNotification) sent.
    pub upcalls: u64,
    /// API calls served (SendMessage, SetStateLifetime, InvalidateRoutingState).
    pub api_calls: u64,
    /// Routing-State-Check answers received in time.
    pub decisions: u64,
    /// Routing-State-Checks not answered in time (accepted by default).
    pub decision_timeouts: u64,
    /// Answers to Routing-State-Checks that had timed out already.
    pub stale_decisions: u64,
    /// Upcalls for a client whose connection had failed, dropped.
    pub lost_upcalls: u64,
}

/// One client connection.
#[derive(Debug)]
struct Conn {
    stream: Rc<UnixStream>,
    /// Frames read during a Routing-State-Check wait after its answer, for the next poll.
    backlog: std::collections::VecDeque<Frame>,
    rx: FrameBuffer,
    /// Read buffer, [`READ_CHUNK`] bytes.
    chunk: Box<[u8]>,
    tx: Vec<u8>,
    nslpid: Option<u16>,
    /// The protocol version the client registered in; frames to it are written in it.
    version: u8,
    next_upcall: u32,
    /// Why the connection is to be closed.
    dead: Option<&'static str>,
}

impl Conn {
    fn queue(&mut self, f: &Frame, stats: &mut IpcStats) {
        if self.dead.is_some() {
            return;
        }
        f.encode_version(self.version, &mut self.tx);
        stats.frames_out += 1;
        if self.tx.len() > MAX_BACKLOG {
            stats.overflows += 1;
            self.dead = Some("overflow");
        }
    }

    /// Write what can be written without blocking.
    fn flush(&mut self) {
        while !self.tx.is_empty() && self.dead.is_none() {
            match (&*self.stream).write(&self.tx) {
                Ok(0) => self.dead = Some("closed"),
                Ok(n) => {
                    self.tx.drain(..n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => self.dead = Some("write failed"),
            }
        }
    }

    /// Read what is there without blocking (or waiting up to `wait`), and decode every whole
    /// frame.
    fn read(&mut self, wait: Option<Duration>, stats: &mut IpcStats) -> Vec<Frame> {
        let mut out = Vec::new();
        if self.dead.is_some() {
            return out;
        }
        let buf = &mut self.chunk;
        if let Some(w) = wait {
            // A Routing-State-Check: block for the answer, briefly.
            let _ = self.stream.set_nonblocking(false);
            let _ = self
                .stream
                .set_read_timeout(Some(w.max(Duration::from_micros(1))));
        }
        loop {
            match (&*self.stream).read(buf) {
                Ok(0) => {
                    self.dead = Some("closed");
                    break;
                }
                Ok(n) => {
                    self.rx.extend(&buf[..n]);
                    if wait.is_some() || n < buf.len() {
                        break;
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    break;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.dead = Some("read failed");
                    break;
                }
            }
        }
        if wait.is_some() {
            let _ = self.stream.set_nonblocking(true);
        }
        loop {
            match self.rx.next_frame_versioned() {
                Ok(Some((f, v))) => {
                    stats.frames_in += 1;
                    if matches!(f, Frame::Register { .. }) && self.nslpid.is_none() {
                        self.version = v;
                    }
                    out.push(f);
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(error = %e, "malformed IPC frame");
                    stats.malformed += 1;
                    self.dead = Some("malformed");
                    self.tx.clear();
                    Frame::Refused {
                        reason: Refusal::Malformed,
                    }
                    .encode_version(self.version, &mut self.tx);
                    let _ = (&*self.stream).write(&self.tx);
                    break;
                }
            }
        }
        out
    }
}

type Shared<T> = Rc<RefCell<T>>;

/// Serve one API frame from an NSLP client on `gist`. Decisions and registrations are not API
/// frames and come back as `Some`.
fn serve_api(
    conn: &Shared<Conn>,
    stats: &Shared<IpcStats>,
    gist: &mut dyn GistApi,
    now: Instant,
    f: Frame,
) -> Option<Frame> {
    let nslpid = conn.borrow().nslpid;
    let reply = match (f, nslpid) {
        (f @ (Frame::Decision { .. } | Frame::Register { .. }), _) => return Some(f),
        (Frame::Send { handle, mut msg }, Some(n)) => {
            msg.nslpid = n; // a client speaks for its own NSLPID only
            let session_id = msg.session_id;
            // Pipelined: only a refusal is answered, as the MessageStatus it would have been.
            gist.send_message_with_handle(now, handle, msg)
                .err()
                .map(|e| Frame::Status {
                    now,
                    status: MessageStatus {
                        handle,
                        nslpid: n,
                        session_id,
                        error: Some(DeliveryError::Refused(e)),
                        transfer: None,
                    },
                })
        }
        (
            Frame::SetStateLifetime {
                session_id,
                mri,
                direction,
                lifetime,
                ..
            },
            Some(n),
        ) => {
            gist.set_state_lifetime(now, n, session_id, &mri, direction, lifetime);
            None
        }
        (
            Frame::InvalidateRoutingState {
                session_id,
                mri,
                direction,
                urgent,
                ..
            },
            Some(n),
        ) => {
            gist.invalidate_routing_state(now, n, session_id, &mri, direction, urgent);
            None
        }
        (
            Frame::Send { .. }
            | Frame::SetStateLifetime { .. }
            | Frame::InvalidateRoutingState { .. },
            None,
        ) => {
            stats.borrow_mut().refused += 1;
            Some(Frame::Refused {
                reason: Refusal::NotRegistered,
            })
        }
        (_, _) => {
            // A GIST → NSLP frame from the client: not a protocol error we can answer.
            let mut st = stats.borrow_mut();
            st.malformed += 1;
            conn.borrow_mut().dead = Some("malformed");
            return None;
        }
    };
    let mut st = stats.borrow_mut();
    st.api_calls += 1;
    if let Some(r) = reply {
        if matches!(r, Frame::Status { .. }) {
            st.upcalls += 1;
        }
        conn.borrow_mut().queue(&r, &mut st);
    }
    None
}

/// The plug-in standing in for an NSLP that runs in another process.
#[derive(Debug)]
pub struct IpcNslp {
    nslpid: u16,
    conn: Shared<Conn>,
    stats: Shared<IpcStats>,
    decision_timeout: Duration,
}

impl IpcNslp {
    fn upcall(&mut self, f: &Frame) {
        let mut st = self.stats.borrow_mut();
        let mut c = self.conn.borrow_mut();
        if c.dead.is_some() {
            st.lost_upcalls += 1;
            return;
        }
        st.upcalls += 1;
        c.queue(f, &mut st);
    }
}

impl Nslp for IpcNslp {
    fn nslpid(&self) -> u16 {
        self.nslpid
    }

    fn recv_message(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        msg: RecvMessage,
    ) -> RoutingDecision {
        if !msg.routing_state_check {
            self.upcall(&Frame::Recv {
                upcall: 0,
                now,
                msg,
            });
            return RoutingDecision::ACCEPT;
        }
        let id = {
            let mut c = self.conn.borrow_mut();
            c.next_upcall = c.next_upcall.wrapping_add(1).max(1);
            c.next_upcall
        };
        self.upcall(&Frame::Recv {
            upcall: id,
            now,
            msg,
        });
        let deadline = std::time::Instant::now() + self.decision_timeout;
        // Get the upcall out first: the client cannot answer what it has not read.
        {
            let mut c = self.conn.borrow_mut();
            let _ = c.stream.set_nonblocking(false);
            let _ = c.stream.set_write_timeout(Some(self.decision_timeout));
            let tx = std::mem::take(&mut c.tx);
            if c.dead.is_none() && (&*c.stream).write_all(&tx).is_err() {
                c.dead = Some("write failed");
            }
            let _ = c.stream.set_nonblocking(true);
        }
        loop {
            if self.conn.borrow().dead.is_some() {
                return RoutingDecision::ACCEPT;
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                self.stats.borrow_mut().decision_timeouts += 1;
                return RoutingDecision::ACCEPT;
            }
            let frames = {
                let mut st = self.stats.borrow_mut();
                self.conn.borrow_mut().read(Some(left), &mut st)
            };
            let mut decision = None;
            for f in frames {
                if decision.is_some() {
                    // After the answer: back to the server's queue, in order.
                    self.conn.borrow_mut().backlog.push_back(f);
                    continue;
                }
                match serve_api(&self.conn, &self.stats, gist, now, f) {
                    Some(Frame::Decision {
                        upcall,
                        decision: d,
                    }) if upcall == id => {
                        self.stats.borrow_mut().decisions += 1;
                        decision = Some(d);
                    }
                    Some(Frame::Decision { .. }) => self.stats.borrow_mut().stale_decisions += 1,
                    Some(_) => {
                        let mut st = self.stats.borrow_mut();
                        st.refused += 1;
                        self.conn.borrow_mut().queue(
                            &Frame::Refused {
                                reason: Refusal::AlreadyRegistered,
                            },
                            &mut st,
                        );
                    }
                    None => {}
                }
            }
            self.conn.borrow_mut().flush();
            if let Some(d) = decision {
                return d;
            }
        }
    }

    fn message_status(&mut self, now: Instant, _gist: &mut dyn GistApi, status: MessageStatus) {
        self.upcall(&Frame::Status { now, status });
    }

    fn network_notification(
        &mut self,
        now: Instant,
        _gist: &mut dyn GistApi,
        notification: NetworkNotification,
    ) {
        self.upcall(&Frame::Notify { now, notification });
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// A connection: its stream (shared, so that [`IpcServer::fds`] can lend its descriptor) and
/// its state (shared with its plug-in in the engine).
#[derive(Debug)]
struct Entry {
    stream: Rc<UnixStream>,
    conn: Shared<Conn>,
}

/// Decides whether a freshly accepted client may use the socket (its peer credentials, say).
pub type Admission = Box<dyn FnMut(&UnixStream) -> bool>;

/// The IPC NSLP API server.
pub struct IpcServer {
    listener: Option<UnixListener>,
    admission: Option<Admission>,
    path: Option<PathBuf>,
    conns: Vec<Entry>,
    /// In-process plug-ins displaced by IPC clients, restored when the client goes.
    saved: Vec<(u16, Box<dyn Nslp>)>,
    stats: Shared<IpcStats>,
    /// How long a Routing-State-Check waits for the client's answer.
    pub decision_timeout: Duration,
}

impl core::fmt::Debug for IpcServer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("IpcServer")
            .field("path", &self.path)
            .field("clients", &self.conns.len())
            .field("registered", &self.registered())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl IpcServer {
    /// Listen on `path` (a stale socket file there is replaced; its directory is created).
    pub fn bind(path: &Path) -> std::io::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        if path.exists() && UnixStream::connect(path).is_err() {
            std::fs::remove_file(path)?;
        }
        Self::from_listener(UnixListener::bind(path)?, path)
    }

    /// Serve on `listener`, already bound at `path` (by a daemon that sets the socket's mode
    /// and owner itself); the file at `path` is removed when the server is dropped.
    pub fn from_listener(listener: UnixListener, path: &Path) -> std::io::Result<Self> {
        listener.set_nonblocking(true)?;
        let mut s = Self::unbound();
        s.listener = Some(listener);
        s.path = Some(path.to_path_buf());
        Ok(s)
    }

    /// Ask `admit` about every client the listener accepts, before it is served: one it
    /// refuses is sent [`Refusal::PermissionDenied`](super::Refusal::PermissionDenied), counted
    /// in [`IpcStats::denied`] and closed. (The daemon checks peer credentials here; connections
    /// given to [`IpcServer::adopt`] are the caller's to vet.)
    pub fn set_admission(&mut self, admit: impl FnMut(&UnixStream) -> bool + 'static) {
        self.admission = Some(Box::new(admit));
    }

    /// A server with no socket: connections come through [`IpcServer::adopt`].
    pub fn unbound() -> Self {
        IpcServer {
            listener: None,
            admission: None,
            path: None,
            conns: Vec::new(),
            saved: Vec::new(),
            stats: Rc::default(),
            decision_timeout: Duration::from_millis(200),
        }
    }

    /// Serve a connected stream (one end of a socket pair, say).
    pub fn adopt(&mut self, stream: UnixStream) -> std::io::Result<()> {
        stream.set_nonblocking(true)?;
        self.stats.borrow_mut().accepted += 1;
        let stream = Rc::new(stream);
        self.conns.push(Entry {
            stream: Rc::clone(&stream),
            conn: Rc::new(RefCell::new(Conn {
                stream,
                backlog: Default::default(),
                rx: FrameBuffer::default(),
                chunk: vec![0; READ_CHUNK].into_boxed_slice(),
                tx: Vec::new(),
                nslpid: None,
                version: super::wire::VERSION,
                next_upcall: 0,
                dead: None,
            })),
        });
        Ok(())
    }

    /// The socket path.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Counters.
    pub fn stats(&self) -> IpcStats {
        *self.stats.borrow()
    }

    /// Open connections.
    pub fn clients(&self) -> usize {
        self.conns.len()
    }

    /// NSLPIDs registered by clients.
    pub fn registered(&self) -> Vec<u16> {
        let mut v: Vec<u16> = self
            .conns
            .iter()
            .filter_map(|e| e.conn.borrow().nslpid)
            .collect();
        v.sort_unstable();
        v
    }

    /// File descriptors to wait on, and whether each waits for writability too.
    pub fn fds(&self) -> Vec<(BorrowedFd<'_>, bool)> {
        let mut v = Vec::new();
        if let Some(l) = &self.listener {
            v.push((l.as_fd(), false));
        }
        for e in &self.conns {
            v.push((e.stream.as_fd(), !e.conn.borrow().tx.is_empty()));
        }
        v
    }

    /// Accept, read and serve every client; queue answers; drop dead connections (unregistering
    /// their NSLPIDs). Call after every wake-up and every engine input.
    pub fn poll(&mut self, engine: &mut GistEngine, now: Instant) {
        let mut fresh = Vec::new();
        if let Some(l) = &self.listener {
            loop {
                match l.accept() {
                    Ok((s, _)) => {
                        if let Some(admit) = &mut self.admission
                            && !admit(&s)
                        {
                            self.stats.borrow_mut().denied += 1;
                            let _ = (&s).write_all(
                                &Frame::Refused {
                                    reason: Refusal::PermissionDenied,
                                }
                                .to_bytes(),
                            );
                            continue;
                        }
                        if self.conns.len() + fresh.len() >= MAX_CLIENTS {
                            self.stats.borrow_mut().refused += 1;
                            let _ = (&s).write_all(
                                &Frame::Refused {
                                    reason: Refusal::Full,
                                }
                                .to_bytes(),
                            );
                            continue;
                        }
                        fresh.push(s);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        }
        for s in fresh {
            let _ = self.adopt(s);
        }
        for i in 0..self.conns.len() {
            let conn = Rc::clone(&self.conns[i].conn);
            let mut frames: Vec<Frame> = conn.borrow_mut().backlog.drain(..).collect();
            {
                let mut st = self.stats.borrow_mut();
                frames.extend(conn.borrow_mut().read(None, &mut st));
            }
            if !frames.is_empty() {
                self.serve(engine, now, &conn, frames);
            }
            conn.borrow_mut().flush();
        }
        self.reap(engine);
    }

    /// Write queued frames (after engine inputs produced upcalls).
    pub fn flush(&mut self) {
        for e in &self.conns {
            e.conn.borrow_mut().flush();
        }
    }

    /// Serve the frames one wake-up brought from a client.
    fn serve(
        &mut self,
        engine: &mut GistEngine,
        now: Instant,
        conn: &Shared<Conn>,
        frames: Vec<Frame>,
    ) {
        let Some(n) = conn.borrow().nslpid else {
            // Before registering: one by one, so that frames after a Register are served as
            // the registered client's.
            let mut frames = frames.into_iter();
            while let Some(f) = frames.next() {
                if conn.borrow().dead.is_some() {
                    return;
                }
                match serve_api(conn, &self.stats, engine, now, f) {
                    Some(Frame::Register { nslpid }) => {
                        self.register(engine, conn, nslpid);
                        if conn.borrow().nslpid.is_some() {
                            let rest: Vec<Frame> = frames.collect();
                            if !rest.is_empty() {
                                self.serve(engine, now, conn, rest);
                            }
                            return;
                        }
                    }
                    Some(Frame::Decision { .. }) => self.stats.borrow_mut().stale_decisions += 1,
                    _ => {}
                }
            }
            return;
        };
        // The client's own plug-in slot gives the engine as its API, and dispatches what the
        // calls cause, once for the batch.
        let (c, st) = (Rc::clone(conn), Rc::clone(&self.stats));
        let rest = engine.with_nslpid(now, n, move |_, api| {
            let mut rest = Vec::new();
            for f in frames {
                if c.borrow().dead.is_some() {
                    break;
                }
                rest.extend(serve_api(&c, &st, api, now, f));
            }
            rest
        });
        for f in rest.into_iter().flatten() {
            match f {
                Frame::Register { nslpid } => self.register(engine, conn, nslpid),
                Frame::Decision { .. } => self.stats.borrow_mut().stale_decisions += 1,
                _ => {}
            }
        }
    }

    fn register(&mut self, engine: &mut GistEngine, conn: &Shared<Conn>, nslpid: u16) {
        let mut st = self.stats.borrow_mut();
        let refusal = if conn.borrow().nslpid.is_some() {
            Some(Refusal::AlreadyRegistered)
        } else if self
            .conns
            .iter()
            .any(|e| e.conn.borrow().nslpid == Some(nslpid))
        {
            Some(Refusal::NslpidTaken)
        } else {
            None
        };
        if let Some(reason) = refusal {
            st.refused += 1;
            conn.borrow_mut().queue(&Frame::Refused { reason }, &mut st);
            return;
        }
        if let Some(old) = engine.unregister(nslpid) {
            self.saved.push((nslpid, old));
        }
        engine.register(Box::new(IpcNslp {
            nslpid,
            conn: Rc::clone(conn),
            stats: Rc::clone(&self.stats),
            decision_timeout: self.decision_timeout,
        }));
        st.registrations += 1;
        let cfg = engine.config();
        let local = cfg
            .interfaces
            .iter()
            .flat_map(|i| i.addrs.iter())
            .chain(&cfg.local_addrs)
            .copied()
            .collect();
        let mut c = conn.borrow_mut();
        c.nslpid = Some(nslpid);
        c.queue(&Frame::Registered { nslpid, local }, &mut st);
        tracing::info!(nslpid, "NSLP registered over IPC");
    }

    fn reap(&mut self, engine: &mut GistEngine) {
        let mut i = 0;
        while i < self.conns.len() {
            let dead = self.conns[i].conn.borrow().dead;
            let Some(why) = dead else {
                i += 1;
                continue;
            };
            let conn = self.conns.swap_remove(i).conn;
            self.stats.borrow_mut().disconnects += 1;
            let nslpid = conn.borrow().nslpid;
            if let Some(n) = nslpid {
                engine.unregister(n);
                if let Some(k) = self.saved.iter().position(|(s, _)| *s == n) {
                    engine.register(self.saved.swap_remove(k).1);
                }
            }
            tracing::info!(nslpid, reason = why, "IPC client gone");
        }
    }
}

impl Drop for IpcServer {
    fn drop(&mut self) {
        // The engine may outlive us holding stand-ins (and so the streams): tell the clients.
        for e in &self.conns {
            let _ = e.stream.shutdown(std::net::Shutdown::Both);
        }
        if let Some(p) = &self.path {
            let _ = std::fs::remove_file(p);
        }
    }
}
