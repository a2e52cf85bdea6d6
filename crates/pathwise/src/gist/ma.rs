//! The streams of GIST's messaging associations (C-mode, RFC 5971 §4.4.2, §5.7) over TCP: the
//! engine asks for them with [`StreamTransmit`]s and hears about them through [`StreamInput`]s;
//! this runs them on non-blocking sockets, one per peer address, and listens on the port the
//! engine advertises in its Stack-Configuration-Data. Messages are framed by the engine (the
//! GIST common header's length), so bytes go through as they come.
//!
//! The same layer runs TLS associations (RFC 5971 §5.7.3) on their own port: each stream then
//! carries a rustls connection, and the engine hears `Connected` / `Accepted` only once the TLS
//! handshake is done; a handshake that fails (an untrusted certificate) closes the stream and
//! is counted.

use super::tls::TlsContext;
use pathwise_core::time::Instant;
use pathwise_gist::{
    GistEngine, MAX_STREAM_MESSAGE, MaTransport, StreamInput, StreamOp, StreamTransmit,
    StreamVetting,
};
use socket2::{Domain, Protocol, Socket, Type};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};

/// Bytes read from one stream per wake-up before the others get their turn.
const READ_BUDGET: usize = 1 << 20;
/// Bytes queued towards one peer before its association is given up as stuck.
const MAX_QUEUED: usize = 16 << 20;
/// Second connections waiting to prove themselves, over all peers.
const MAX_CANDIDATES: usize = 64;
/// How long a second connection has to send its first message.
const CANDIDATE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// A second connection from a peer whose association is up: not an association until its
/// first message proves it ([`GistEngine::vet_replacement_stream`]; RFC 5971 §4.4.3, §5.7.1).
#[derive(Debug)]
struct Candidate {
    stream: TcpStream,
    /// What it has sent so far (at most one message).
    buf: Vec<u8>,
    since: std::time::Instant,
}

/// One stream.
#[derive(Debug)]
struct Conn {
    stream: TcpStream,
    /// Bytes the kernel has not taken yet.
    out: Vec<u8>,
    /// Opened by us and not connected yet.
    connecting: bool,
    /// Opened by us (for the tie-break when both ends open at once).
    outgoing: bool,
    /// TLS over the stream (TLS associations only).
    tls: Option<rustls::Connection>,
    /// The engine has been told the stream is up (TLS: the handshake is done).
    ready: bool,
}

impl Conn {
    fn new(stream: TcpStream, connecting: bool, outgoing: bool) -> Conn {
        Conn {
            stream,
            out: Vec::new(),
            connecting,
            outgoing,
            tls: None,
            ready: !connecting,
        }
    }
}

/// Counters of the stream layer.
#[derive(Clone, Copy, Debug, Default)]
pub struct StreamStats {
    /// Streams this node opened.
    pub opened: u64,
    /// Streams peers opened.
    pub accepted: u64,
    /// Opens that failed.
    pub connect_failures: u64,
    /// Streams closed by the peer or by an error.
    pub closed_by_peer: u64,
    /// Bytes sent and received.
    pub bytes_out: u64,
    /// Bytes received.
    pub bytes_in: u64,
    /// TLS handshakes completed.
    pub tls_handshakes: u64,
    /// TLS handshakes that failed (untrusted or missing certificate, protocol errors): the
    /// peer was refused.
    pub tls_handshake_failures: u64,
    /// Second connections from a peer whose association was up, held until their first
    /// message proved them.
    pub takeover_candidates: u64,
    /// Of those, connections that proved themselves and replaced the association.
    pub takeovers: u64,
    /// Of those, connections refused, the association kept: a first message that was not a
    /// valid Confirm from the peer (the engine's `ma_takeover_*` drops), silence for
    /// `CANDIDATE_WAIT`, a close, a newer candidate, too many candidates, or TLS.
    pub takeovers_refused: u64,
    /// Streams given up because more than `MAX_QUEUED` bytes waited to be sent to the peer.
    pub send_overflows: u64,
    /// Streams this node closed at the engine's request (framing error, idle, silence).
    pub closed_by_engine: u64,
}

/// TCP for the engine's messaging associations.
#[derive(Debug)]
pub struct MaStreams {
    listener: TcpListener,
    conns: HashMap<IpAddr, Conn>,
    candidates: HashMap<IpAddr, Candidate>,
    stats: StreamStats,
    transport: MaTransport,
    tls: Option<TlsContext>,
    /// Why the last TLS handshake failed.
    last_tls_error: Option<String>,
}

/// What `peer` looks like to the engine: IPv4 peers of a dual-stack socket without the
/// IPv4-mapped prefix.
fn canonical(a: IpAddr) -> IpAddr {
    a.to_canonical()
}

impl MaStreams {
    /// Listen on `port` for IPv4 and IPv6.
    pub fn listen(port: u16) -> io::Result<MaStreams> {
        let s = Socket::new(Domain::IPV6, Type::STREAM, Some(Protocol::TCP))?;
        s.set_only_v6(false)?;
        s.set_reuse_address(true)?;
        s.bind(&SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), port).into())?;
        s.listen(128)?;
        s.set_nonblocking(true)?;
        Ok(MaStreams {
            listener: s.into(),
            conns: HashMap::new(),
            candidates: HashMap::new(),
            stats: StreamStats::default(),
            transport: MaTransport::Tcp,
            tls: None,
            last_tls_error: None,
        })
    }

    /// Listen on `port` for TLS associations (IPv4 and IPv6).
    pub fn listen_tls(port: u16, tls: TlsContext) -> io::Result<MaStreams> {
        let mut m = MaStreams::listen(port)?;
        m.transport = MaTransport::Tls;
        m.tls = Some(tls);
        Ok(m)
    }

    /// Why the last TLS handshake failed, if one did.
    pub fn last_tls_error(&self) -> Option<&str> {
        self.last_tls_error.as_deref()
    }

    fn tell(&self, engine: &mut GistEngine, now: Instant, input: StreamInput<'_>) {
        engine.handle_stream_on(now, self.transport, input);
    }

    /// Start TLS on a connected stream.
    fn start_tls(&mut self, peer: IpAddr, client: bool) -> Result<(), rustls::Error> {
        let Some(ctx) = &self.tls else { return Ok(()) };
        let conn: rustls::Connection = if client {
            let name = rustls::pki_types::ServerName::IpAddress(peer.into());
            rustls::ClientConnection::new(ctx.client.clone(), name)?.into()
        } else {
            rustls::ServerConnection::new(ctx.server.clone())?.into()
        };
        if let Some(c) = self.conns.get_mut(&peer) {
            c.tls = Some(conn);
        }
        Ok(())
    }

    /// Counters.
    pub fn stats(&self) -> StreamStats {
        self.stats
    }

    /// Open streams.
    pub fn len(&self) -> usize {
        self.conns.len()
    }

    /// Whether no stream is open.
    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }

    /// The listening socket (first of [`MaStreams::fds`]).
    pub fn listener_fd(&self) -> BorrowedFd<'_> {
        self.listener.as_fd()
    }

    /// Descriptors to wait on and whether each waits for writability too.
    pub fn fds(&self) -> Vec<(BorrowedFd<'_>, bool)> {
        let mut v = vec![(self.listener.as_fd(), false)];
        v.extend(self.conns.values().map(|c| {
            let tls_out = c.tls.as_ref().is_some_and(|t| t.wants_write());
            (
                c.stream.as_fd(),
                c.connecting || tls_out || (c.ready && !c.out.is_empty()),
            )
        }));
        v.extend(self.candidates.values().map(|c| (c.stream.as_fd(), false)));
        v
    }

    /// Carry out an engine request.
    pub fn apply(&mut self, engine: &mut GistEngine, now: Instant, t: StreamTransmit) {
        match t.op {
            StreamOp::Open => {
                if let Some(c) = self.conns.get(&t.peer) {
                    if c.ready {
                        self.tell(engine, now, StreamInput::Connected { peer: t.peer });
                    }
                    return;
                }
                match connect(SocketAddr::new(t.peer, t.port)) {
                    Ok(stream) => {
                        self.stats.opened += 1;
                        self.conns.insert(t.peer, Conn::new(stream, true, true));
                    }
                    Err(e) => {
                        tracing::debug!(peer = %t.peer, error = %e, "MA connect failed");
                        self.stats.connect_failures += 1;
                        self.tell(engine, now, StreamInput::Closed { peer: t.peer });
                    }
                }
            }
            StreamOp::Send(bytes) => {
                match self.conns.get_mut(&t.peer) {
                    Some(c) => {
                        c.out.extend_from_slice(&bytes);
                        if c.out.len() > MAX_QUEUED {
                            self.stats.send_overflows += 1;
                            self.fail(engine, now, t.peer);
                        } else if c.ready {
                            self.write(engine, now, t.peer);
                        }
                    }
                    None => self.tell(engine, now, StreamInput::Closed { peer: t.peer }),
                }
                // Copied into the connection's queue: the engine's next message goes into it.
                engine.recycle(bytes);
            }
            StreamOp::Close => {
                if self.conns.contains_key(&t.peer) {
                    // What the engine sent last (an Error before a framing-error close) goes
                    // out first, as far as the kernel takes it now.
                    self.write(engine, now, t.peer);
                }
                if let Some(mut c) = self.conns.remove(&t.peer) {
                    self.stats.closed_by_engine += 1;
                    if let Some(tls) = c.tls.as_mut() {
                        tls.send_close_notify();
                        let _ = tls.write_tls(&mut c.stream);
                    }
                    let _ = c.stream.shutdown(std::net::Shutdown::Both);
                }
            }
        }
    }

    /// Accept (when `accept`: the listener is readable), finish connects, read and write
    /// whatever is ready.
    pub fn poll(&mut self, engine: &mut GistEngine, now: Instant, accept: bool) {
        if accept {
            loop {
                match self.listener.accept() {
                    Ok((stream, from)) => {
                        self.accepted(engine, now, stream, canonical(from.ip()));
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => {
                        tracing::warn!(error = %e, "MA accept failed");
                        break;
                    }
                }
            }
        }
        self.poll_candidates(engine, now);
        let peers: Vec<IpAddr> = self.conns.keys().copied().collect();
        for peer in peers {
            let Some(c) = self.conns.get_mut(&peer) else {
                continue;
            };
            if c.connecting {
                match c.stream.take_error() {
                    Ok(None) if c.stream.peer_addr().is_ok() => {
                        c.connecting = false;
                        if self.tls.is_some() {
                            if let Err(e) = self.start_tls(peer, true) {
                                self.tls_failed(engine, now, peer, &e);
                                continue;
                            }
                        } else {
                            c.ready = true;
                            self.tell(engine, now, StreamInput::Connected { peer });
                        }
                    }
                    Ok(None) => continue, // still connecting
                    Ok(Some(e)) | Err(e) => {
                        tracing::debug!(%peer, error = %e, "MA connect failed");
                        self.stats.connect_failures += 1;
                        self.conns.remove(&peer);
                        self.tell(engine, now, StreamInput::Closed { peer });
                        continue;
                    }
                }
            }
            self.read(engine, now, peer);
            self.write(engine, now, peer);
        }
    }

    fn accepted(&mut self, engine: &mut GistEngine, now: Instant, stream: TcpStream, peer: IpAddr) {
        if stream.set_nonblocking(true).is_err() {
            return;
        }
        let _ = stream.set_nodelay(true);
        if self
            .conns
            .get(&peer)
            .is_some_and(|c| c.ready && !c.connecting)
        {
            // The peer's association is up: a new connection from its address does not replace
            // it until it proves itself (RFC 5971 §4.4.3, §5.7.1).
            self.stats.takeover_candidates += 1;
            let full =
                self.candidates.len() >= MAX_CANDIDATES && !self.candidates.contains_key(&peer);
            if self.tls.is_some() || full {
                // TLS: the working association is authenticated; a new one is taken only once
                // the old one has gone (the peer's next connection after it).
                self.stats.takeovers_refused += 1;
                let _ = stream.shutdown(std::net::Shutdown::Both);
                return;
            }
            let c = Candidate {
                stream,
                buf: Vec::new(),
                since: std::time::Instant::now(),
            };
            if let Some(old) = self.candidates.insert(peer, c) {
                self.stats.takeovers_refused += 1;
                let _ = old.stream.shutdown(std::net::Shutdown::Both);
            }
            return;
        }
        if let Some(ours) = self.conns.get(&peer) {
            // Both ends opened at once: keep the stream the lower address opened, on both ends.
            let local = stream.local_addr().map(|a| canonical(a.ip()));
            let we_are_lower = local.is_ok_and(|l| l < peer);
            if ours.outgoing && we_are_lower {
                return; // drop theirs; ours serves
            }
            if let Some(old) = self.conns.remove(&peer) {
                let _ = old.stream.shutdown(std::net::Shutdown::Both);
                // What waited for ours to connect goes on theirs (nothing of it was sent).
                let out = if old.ready { Vec::new() } else { old.out };
                self.stats.accepted += 1;
                let mut c = Conn::new(stream, false, false);
                c.out = out;
                self.conns.insert(peer, c);
                self.accepted_ready(engine, now, peer);
                return;
            }
        }
        self.stats.accepted += 1;
        self.conns.insert(peer, Conn::new(stream, false, false));
        self.accepted_ready(engine, now, peer);
    }

    /// Read the second connections on probation and let the engine judge their first message:
    /// promote the proven, close the rest (each counted).
    fn poll_candidates(&mut self, engine: &mut GistEngine, now: Instant) {
        let peers: Vec<IpAddr> = self.candidates.keys().copied().collect();
        for peer in peers {
            let Some(c) = self.candidates.get_mut(&peer) else {
                continue;
            };
            let mut buf = [0u8; 4096];
            let mut closed = false;
            while c.buf.len() <= MAX_STREAM_MESSAGE {
                match c.stream.read(&mut buf) {
                    Ok(0) => {
                        closed = true;
                        break;
                    }
                    Ok(n) => {
                        self.stats.bytes_in += n as u64;
                        c.buf.extend_from_slice(&buf[..n]);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        closed = true;
                        break;
                    }
                }
            }
            let verdict = engine.vet_replacement_stream(now, peer, self.transport, &c.buf);
            let expired = c.since.elapsed() > CANDIDATE_WAIT;
            match verdict {
                StreamVetting::Accept => {
                    let Some(c) = self.candidates.remove(&peer) else {
                        continue;
                    };
                    self.stats.takeovers += 1;
                    tracing::info!(%peer, "a new connection proved itself: association replaced");
                    if let Some(old) = self.conns.remove(&peer) {
                        let _ = old.stream.shutdown(std::net::Shutdown::Both);
                        self.tell(engine, now, StreamInput::Closed { peer });
                    }
                    self.stats.accepted += 1;
                    self.conns.insert(peer, Conn::new(c.stream, false, false));
                    self.tell(engine, now, StreamInput::Accepted { peer });
                    self.tell(
                        engine,
                        now,
                        StreamInput::Data {
                            peer,
                            bytes: &c.buf,
                        },
                    );
                }
                StreamVetting::NeedMore if !closed && !expired => {}
                v => {
                    if let Some(c) = self.candidates.remove(&peer) {
                        let _ = c.stream.shutdown(std::net::Shutdown::Both);
                    }
                    self.stats.takeovers_refused += 1;
                    tracing::info!(%peer, verdict = ?v, closed, expired, "second connection refused; the association stays");
                }
            }
        }
    }

    /// A stream is accepted: TCP is up at once; TLS waits for the client's handshake.
    fn accepted_ready(&mut self, engine: &mut GistEngine, now: Instant, peer: IpAddr) {
        if self.tls.is_some() {
            if let Some(c) = self.conns.get_mut(&peer) {
                c.ready = false;
            }
            if let Err(e) = self.start_tls(peer, false) {
                self.tls_failed(engine, now, peer, &e);
            }
            return;
        }
        self.tell(engine, now, StreamInput::Accepted { peer });
        self.write(engine, now, peer);
    }

    /// A TLS handshake or record failed: refuse the peer, count it, tell the engine.
    fn tls_failed(
        &mut self,
        engine: &mut GistEngine,
        now: Instant,
        peer: IpAddr,
        e: &rustls::Error,
    ) {
        let Some(mut c) = self.conns.remove(&peer) else {
            return;
        };
        if let Some(tls) = c.tls.as_mut() {
            // Send the alert saying why.
            let _ = tls.write_tls(&mut c.stream);
        }
        let _ = c.stream.shutdown(std::net::Shutdown::Both);
        if c.ready {
            self.stats.closed_by_peer += 1;
        } else {
            self.stats.tls_handshake_failures += 1;
            self.last_tls_error = Some(format!("{peer}: {e}"));
        }
        tracing::info!(%peer, error = %e, "TLS association refused");
        self.tell(engine, now, StreamInput::Closed { peer });
    }

    fn read(&mut self, engine: &mut GistEngine, now: Instant, peer: IpAddr) {
        let mut buf = [0u8; 16 * 1024];
        let mut total = 0;
        while total < READ_BUDGET {
            let Some(c) = self.conns.get_mut(&peer) else {
                return;
            };
            if c.tls.is_some() {
                match self.read_tls(engine, now, peer, &mut buf) {
                    Some(n) => {
                        total += n;
                        continue;
                    }
                    None => return,
                }
            }
            match c.stream.read(&mut buf) {
                Ok(0) => {
                    self.fail(engine, now, peer);
                    return;
                }
                Ok(n) => {
                    total += n;
                    self.stats.bytes_in += n as u64;
                    self.tell(
                        engine,
                        now,
                        StreamInput::Data {
                            peer,
                            bytes: &buf[..n],
                        },
                    );
                    if !engine.has_association(peer, self.transport) {
                        // The engine tore the association down (a framing error): read no
                        // more of it. Its last words (the one Error) and the Close are
                        // queued in the engine and carried out as soon as this poll returns
                        // (`StreamOp::Close` writes what is pending first).
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::debug!(%peer, error = %e, "MA read failed");
                    self.fail(engine, now, peer);
                    return;
                }
            }
        }
    }

    /// One read from a TLS stream: records in, the handshake on, plaintext to the engine.
    /// `Some(bytes read)` to go on reading, `None` when there is nothing more for now.
    fn read_tls(
        &mut self,
        engine: &mut GistEngine,
        now: Instant,
        peer: IpAddr,
        buf: &mut [u8],
    ) -> Option<usize> {
        let c = self.conns.get_mut(&peer)?;
        let tls = c.tls.as_mut()?;
        let n = match tls.read_tls(&mut c.stream) {
            Ok(0) => {
                self.fail(engine, now, peer);
                return None;
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Some(0),
            Err(e) => {
                tracing::debug!(%peer, error = %e, "MA read failed");
                self.fail(engine, now, peer);
                return None;
            }
        };
        self.stats.bytes_in += n as u64;
        if let Err(e) = tls.process_new_packets() {
            self.tls_failed(engine, now, peer, &e);
            return None;
        }
        let handshake_done = !tls.is_handshaking() && !c.ready;
        let mut plain = Vec::new();
        loop {
            match tls.reader().read(buf) {
                Ok(0) => break,
                Ok(k) => plain.extend_from_slice(&buf[..k]),
                Err(_) => break, // WouldBlock: no more plaintext now
            }
        }
        if handshake_done {
            c.ready = true;
            self.stats.tls_handshakes += 1;
            let input = if c.outgoing {
                StreamInput::Connected { peer }
            } else {
                StreamInput::Accepted { peer }
            };
            self.tell(engine, now, input);
        }
        if !plain.is_empty() {
            self.tell(
                engine,
                now,
                StreamInput::Data {
                    peer,
                    bytes: &plain,
                },
            );
        }
        // Handshake replies, or what waited for the handshake.
        self.write(engine, now, peer);
        Some(n)
    }

    fn write(&mut self, engine: &mut GistEngine, now: Instant, peer: IpAddr) {
        let Some(c) = self.conns.get_mut(&peer) else {
            return;
        };
        if let Some(tls) = c.tls.as_mut() {
            if c.ready && !c.out.is_empty() {
                // rustls buffers the plaintext as records.
                if tls.writer().write_all(&c.out).is_ok() {
                    c.out.clear();
                }
            }
            while tls.wants_write() {
                match tls.write_tls(&mut c.stream) {
                    Ok(0) => break,
                    Ok(n) => self.stats.bytes_out += n as u64,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        tracing::debug!(%peer, error = %e, "MA write failed");
                        self.fail(engine, now, peer);
                        return;
                    }
                }
            }
            return;
        }
        while !c.out.is_empty() {
            match c.stream.write(&c.out) {
                Ok(0) => break,
                Ok(n) => {
                    self.stats.bytes_out += n as u64;
                    c.out.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::debug!(%peer, error = %e, "MA write failed");
                    self.fail(engine, now, peer);
                    return;
                }
            }
        }
    }

    /// The stream to `peer` failed or was closed by the peer: tell the engine.
    fn fail(&mut self, engine: &mut GistEngine, now: Instant, peer: IpAddr) {
        if let Some(c) = self.conns.remove(&peer) {
            if c.ready {
                self.stats.closed_by_peer += 1;
            } else if c.tls.is_some() {
                // The peer hung up during the TLS handshake: it refused us.
                self.stats.tls_handshake_failures += 1;
                self.last_tls_error = Some(format!("{peer}: closed during the TLS handshake"));
            }
            self.tell(engine, now, StreamInput::Closed { peer });
        }
    }
}

/// Start a non-blocking connect.
fn connect(to: SocketAddr) -> io::Result<TcpStream> {
    let s = Socket::new(Domain::for_address(to), Type::STREAM, Some(Protocol::TCP))?;
    s.set_nonblocking(true)?;
    s.set_tcp_nodelay(true)?;
    match s.connect(&to.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(s.into())
}
