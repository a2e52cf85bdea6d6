//! The NSLP side of the IPC API: [`IpcGist`] connects to a daemon's socket, registers an
//! NSLPID and is the NSLP's [`GistApi`]; [`IpcGist::serve`] hands each upcall to an [`Nslp`]
//! exactly as the engine does in-process, so a plug-in (the Ping NSLP, say) runs unchanged as
//! its own process.
//!
//! Blocking, one thread. `send_message` does not wait for GIST: the client picks the handle
//! and a refusal comes back later as a MessageStatus ([`DeliveryError::Refused`]), so a message
//! costs one frame one way. [`IpcGist::serve_one`] takes every upcall one read brought and
//! sends everything the NSLP said in answer with one write; outside it, each call is written at
//! once. The socket's read timeout is set only when the wanted timeout changes (never while
//! serving for ever).
//!
//! The NSLP process runs on GIST's node, so the route its flows leave by is the kernel's: the
//! user hands [`IpcGist::with_outgoing_interface`] a lookup (the binary's is a netlink route
//! mirror), which answers [`GistApi::outgoing_interface`] — the link the QoS NSLP admits on.
//!
//! [`DeliveryError::Refused`]: crate::nslp::DeliveryError::Refused

use super::wire::{Frame, FrameBuffer, IpcError, Refusal};
use crate::nslp::{
    ApiError, Direction, GistApi, MessageHandle, MessageStatus, NetworkNotification, Nslp,
    NslpEvent, RecvMessage, RoutingDecision, SendMessage,
};
use crate::wire::{Mri, SessionId};
use pathwise_core::io::IfIndex;
use pathwise_core::rand::Rng as _;
use pathwise_core::rng::SeededRng;
use pathwise_core::time::{Duration, Instant};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::IpAddr;
use std::os::unix::net::UnixStream;
use std::path::Path;

/// What can go wrong on the client side.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The socket failed.
    #[error("IPC socket: {0}")]
    Io(#[from] std::io::Error),
    /// The daemon sent bytes that are not a frame.
    #[error("IPC protocol: {0}")]
    Protocol(#[from] IpcError),
    /// The daemon refused.
    #[error("refused by GIST: {0}")]
    Refused(Refusal),
    /// The daemon closed the connection.
    #[error("GIST closed the connection")]
    Closed,
    /// A frame the client did not expect at this point.
    #[error("unexpected frame {0:?}")]
    Unexpected(Box<Frame>),
}

/// An upcall from GIST (RFC 5971 B.2–B.4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Upcall {
    /// RecvMessage; `upcall` ≠ 0 asks for a Routing-State-Check answer ([`IpcGist::decide`]).
    Recv {
        /// Upcall number.
        upcall: u32,
        /// GIST's time.
        now: Instant,
        /// The message.
        msg: RecvMessage,
    },
    /// MessageStatus.
    Status {
        /// GIST's time.
        now: Instant,
        /// The status.
        status: MessageStatus,
    },
    /// NetworkNotification.
    Notify {
        /// GIST's time.
        now: Instant,
        /// The notification.
        notification: NetworkNotification,
    },
}

/// The interface data for a destination leaves this node by, as the NSLP's user finds it.
pub type OutgoingInterfaceLookup = Box<dyn FnMut(IpAddr) -> Option<IfIndex> + Send>;

/// The user's route lookup; mutable behind `&self` because [`GistApi::outgoing_interface`]
/// takes `&self` and a lookup may refresh a route mirror first.
struct RouteLookup(RefCell<OutgoingInterfaceLookup>);

impl std::fmt::Debug for RouteLookup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RouteLookup")
    }
}

/// A connection to GIST over its IPC socket, registered for one NSLPID.
#[derive(Debug)]
pub struct IpcGist {
    stream: UnixStream,
    rx: FrameBuffer,
    /// Read buffer, [`READ_CHUNK`] bytes.
    chunk: Box<[u8]>,
    tx: Vec<u8>,
    nslpid: u16,
    local: Vec<IpAddr>,
    upcalls: VecDeque<Upcall>,
    reports: VecDeque<NslpEvent>,
    next_handle: u64,
    rng: SeededRng,
    /// The read timeout the socket has now (`None`: not set by us yet).
    read_timeout: Option<Option<std::time::Duration>>,
    /// Frames are queued in `tx` until the batch of upcalls is served.
    batching: bool,
    /// The first failure; every later call fails at once.
    broken: bool,
    /// Answers [`GistApi::outgoing_interface`] (`None`: not known here).
    route: Option<RouteLookup>,
}

/// Bytes asked of the socket per read: a wake-up's worth of upcalls.
const READ_CHUNK: usize = 64 * 1024;

impl IpcGist {
    /// Connect to the socket at `path` and register `nslpid`.
    pub fn connect(path: &Path, nslpid: u16) -> Result<Self, ClientError> {
        Self::register(UnixStream::connect(path)?, nslpid)
    }

    /// Register `nslpid` over an already connected stream.
    pub fn register(stream: UnixStream, nslpid: u16) -> Result<Self, ClientError> {
        let mut c = IpcGist {
            stream,
            rx: FrameBuffer::default(),
            chunk: vec![0; READ_CHUNK].into_boxed_slice(),
            tx: Vec::new(),
            nslpid,
            local: Vec::new(),
            upcalls: VecDeque::new(),
            reports: VecDeque::new(),
            next_handle: 1,
            rng: pathwise_core::rng::seeded(pathwise_core::rand::random()),
            read_timeout: None,
            batching: false,
            broken: false,
            route: None,
        };
        if let Err(e) = c.write(&Frame::Register { nslpid }) {
            // A daemon that refuses this process's user answers and closes at once, perhaps
            // before the Register was written: its answer says why better than a broken pipe.
            return Err(c.pending_refusal().unwrap_or(e));
        }
        match c.read_frame(Some(std::time::Duration::from_secs(10)))? {
            Some(Frame::Registered { nslpid: n, local }) if n == nslpid => {
                c.local = local;
                Ok(c)
            }
            Some(Frame::Refused { reason }) => Err(ClientError::Refused(reason)),
            Some(f) => Err(ClientError::Unexpected(Box::new(f))),
            None => Err(ClientError::Closed),
        }
    }

    /// A refusal the daemon sent before closing the connection, if one is there to read.
    fn pending_refusal(&mut self) -> Option<ClientError> {
        self.stream
            .set_read_timeout(Some(std::time::Duration::from_secs(1)))
            .ok()?;
        loop {
            if let Ok(Some(Frame::Refused { reason })) = self.rx.next_frame() {
                return Some(ClientError::Refused(reason));
            }
            match self.stream.read(&mut self.chunk) {
                Ok(n) if n > 0 => self.rx.extend(&self.chunk[..n]),
                _ => return None,
            }
        }
    }

    /// Answer [`GistApi::outgoing_interface`] with `lookup` (without one: `None`, "not known").
    /// The NSLP runs on GIST's node, so its kernel's routes are GIST's.
    pub fn with_outgoing_interface(mut self, lookup: OutgoingInterfaceLookup) -> Self {
        self.route = Some(RouteLookup(RefCell::new(lookup)));
        self
    }

    /// The NSLPID registered.
    pub fn nslpid(&self) -> u16 {
        self.nslpid
    }

    /// The daemon's addresses, as it told them at registration.
    pub fn local_addresses(&self) -> &[IpAddr] {
        &self.local
    }

    /// Reports the NSLP made through [`GistApi::report`].
    pub fn take_reports(&mut self) -> impl Iterator<Item = NslpEvent> + '_ {
        self.reports.drain(..)
    }

    /// The next upcall, waiting up to `timeout` (`None`: for ever); `Ok(None)` on timeout.
    pub fn next_upcall(
        &mut self,
        timeout: Option<std::time::Duration>,
    ) -> Result<Option<Upcall>, ClientError> {
        if let Some(u) = self.upcalls.pop_front() {
            return Ok(Some(u));
        }
        loop {
            match self.read_frame(timeout)? {
                None => return Ok(None),
                Some(f) => {
                    if let Some(u) = as_upcall(f)? {
                        return Ok(Some(u));
                    }
                }
            }
        }
    }

    /// Answer a Routing-State-Check.
    pub fn decide(&mut self, upcall: u32, decision: RoutingDecision) -> Result<(), ClientError> {
        self.write(&Frame::Decision { upcall, decision })
    }

    /// Wait up to `timeout` for one upcall and hand it to `nslp` (with this connection as its
    /// [`GistApi`]), answering a Routing-State-Check with its return value. `Ok(false)` on
    /// timeout.
    pub fn serve_one(
        &mut self,
        nslp: &mut dyn Nslp,
        timeout: Option<std::time::Duration>,
    ) -> Result<bool, ClientError> {
        let Some(first) = self.next_upcall(timeout)? else {
            return Ok(false);
        };
        // Serve what this read brought, then answer with one write.
        self.batching = true;
        let mut next = Some(first);
        let mut r = Ok(());
        while let Some(u) = next {
            self.serve_upcall(nslp, u);
            next = match self.buffered_upcall() {
                Ok(u) => u,
                Err(e) => {
                    r = Err(e);
                    None
                }
            };
        }
        self.batching = false;
        r?;
        self.flush()?;
        if self.broken {
            return Err(ClientError::Closed);
        }
        Ok(true)
    }

    fn serve_upcall(&mut self, nslp: &mut dyn Nslp, u: Upcall) {
        match u {
            Upcall::Recv { upcall, now, msg } => {
                let d = nslp.recv_message(now, self, msg);
                if upcall != 0 {
                    let _ = self.decide(upcall, d);
                }
            }
            Upcall::Status { now, status } => nslp.message_status(now, self, status),
            Upcall::Notify { now, notification } => {
                nslp.network_notification(now, self, notification)
            }
        }
    }

    /// The next upcall already received, without reading.
    fn buffered_upcall(&mut self) -> Result<Option<Upcall>, ClientError> {
        if let Some(u) = self.upcalls.pop_front() {
            return Ok(Some(u));
        }
        while let Some(f) = self.rx.next_frame().inspect_err(|_| self.broken = true)? {
            if let Frame::Refused { reason } = f {
                self.broken = true;
                return Err(ClientError::Refused(reason));
            }
            if let Some(u) = as_upcall(f)? {
                return Ok(Some(u));
            }
        }
        Ok(None)
    }

    /// Write the frames queued so far.
    pub fn flush(&mut self) -> Result<(), ClientError> {
        if self.tx.is_empty() {
            return Ok(());
        }
        if self.broken {
            return Err(ClientError::Closed);
        }
        let r = self.stream.write_all(&self.tx);
        self.tx.clear();
        if r.is_err() {
            self.broken = true;
        }
        Ok(r?)
    }

    /// Serve `nslp` until the connection ends (the daemon stops, or an error).
    pub fn serve(&mut self, nslp: &mut dyn Nslp) -> ClientError {
        loop {
            if let Err(e) = self.serve_one(nslp, None) {
                return e;
            }
        }
    }

    fn write(&mut self, f: &Frame) -> Result<(), ClientError> {
        if self.broken {
            return Err(ClientError::Closed);
        }
        f.encode(&mut self.tx);
        if self.batching {
            return Ok(());
        }
        self.flush()
    }

    fn read_frame(
        &mut self,
        timeout: Option<std::time::Duration>,
    ) -> Result<Option<Frame>, ClientError> {
        let r = self.read_frame_inner(timeout);
        if r.is_err() {
            self.broken = true;
        }
        r
    }

    fn read_frame_inner(
        &mut self,
        timeout: Option<std::time::Duration>,
    ) -> Result<Option<Frame>, ClientError> {
        if self.broken {
            return Err(ClientError::Closed);
        }
        // Whatever we said must be out before we wait for an answer.
        self.flush()?;
        let deadline = timeout.map(|t| std::time::Instant::now() + t);
        loop {
            if let Some(f) = self.rx.next_frame()? {
                if let Frame::Refused { reason } = f {
                    return Err(ClientError::Refused(reason));
                }
                return Ok(Some(f));
            }
            let wait = match deadline {
                None => None,
                Some(d) => {
                    let left = d.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        return Ok(None);
                    }
                    Some(left)
                }
            };
            if self.read_timeout != Some(wait) {
                self.stream.set_read_timeout(wait)?;
                self.read_timeout = Some(wait);
            }
            match self.stream.read(&mut self.chunk) {
                Ok(0) => return Err(ClientError::Closed),
                Ok(n) => self.rx.extend(&self.chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Ok(None);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}

fn as_upcall(f: Frame) -> Result<Option<Upcall>, ClientError> {
    Ok(Some(match f {
        Frame::Recv { upcall, now, msg } => Upcall::Recv { upcall, now, msg },
        Frame::Status { now, status } => Upcall::Status { now, status },
        Frame::Notify { now, notification } => Upcall::Notify { now, notification },
        f => return Err(ClientError::Unexpected(Box::new(f))),
    }))
}

impl GistApi for IpcGist {
    /// SendMessage over the socket, under the next handle of this connection; GIST's refusal
    /// comes later as a MessageStatus. A broken connection answers
    /// [`ApiError::UnknownNslpid`] at once: GIST no longer serves the NSLPID for this client.
    fn send_message(&mut self, now: Instant, msg: SendMessage) -> Result<MessageHandle, ApiError> {
        let handle = MessageHandle(self.next_handle);
        self.next_handle = self.next_handle.wrapping_add(1);
        self.send_message_with_handle(now, handle, msg)?;
        Ok(handle)
    }

    /// As [`GistApi::send_message`], under the caller's handle (which should not collide with
    /// the ones this connection hands out: 1, 2, 3, …).
    fn send_message_with_handle(
        &mut self,
        _now: Instant,
        handle: MessageHandle,
        msg: SendMessage,
    ) -> Result<(), ApiError> {
        self.write(&Frame::Send { handle, msg }).map_err(|e| {
            tracing::debug!(error = %e, "IPC SendMessage failed");
            ApiError::UnknownNslpid(self.nslpid)
        })
    }

    fn set_state_lifetime(
        &mut self,
        _now: Instant,
        nslpid: u16,
        session_id: SessionId,
        mri: &Mri,
        direction: Direction,
        lifetime: Duration,
    ) {
        let _ = self.write(&Frame::SetStateLifetime {
            nslpid,
            session_id,
            mri: mri.clone(),
            direction,
            lifetime,
        });
    }

    fn invalidate_routing_state(
        &mut self,
        _now: Instant,
        nslpid: u16,
        session_id: SessionId,
        mri: &Mri,
        direction: Direction,
        urgent: bool,
    ) {
        let _ = self.write(&Frame::InvalidateRoutingState {
            nslpid,
            session_id,
            mri: mri.clone(),
            direction,
            urgent,
        });
    }

    fn local_address(&self, like: IpAddr) -> Option<IpAddr> {
        self.local
            .iter()
            .find(|a| a.is_ipv4() == like.is_ipv4())
            .copied()
    }

    fn is_local(&self, addr: IpAddr) -> bool {
        self.local.contains(&addr)
    }

    /// The user's lookup (see [`IpcGist::with_outgoing_interface`]); `None` without one.
    fn outgoing_interface(&self, destination: IpAddr) -> Option<IfIndex> {
        let r = self.route.as_ref()?;
        (r.0.borrow_mut())(destination)
    }

    fn new_session_id(&mut self) -> SessionId {
        let mut s = [0u8; 16];
        self.rng.fill(&mut s);
        SessionId(s)
    }

    fn report(&mut self, event: NslpEvent) {
        self.reports.push_back(event);
        if self.reports.len() > 4096 {
            self.reports.pop_front(); // nobody is collecting: bound the memory
        }
    }
}
