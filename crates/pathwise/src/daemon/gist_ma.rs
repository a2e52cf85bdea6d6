//! The streams of GIST's messaging associations (C-mode, RFC 5971 §4.4.2, §5.7) over TCP: the
//! engine asks for them with [`StreamTransmit`]s and hears about them through [`StreamInput`]s;
//! this runs them on non-blocking sockets, one per peer address, and listens on the port the
//! engine advertises in its Stack-Configuration-Data. Messages are framed by the engine (the
//! GIST common header's length), so bytes go through as they come.

use pathwise_core::time::Instant;
use pathwise_gist::{GistEngine, StreamInput, StreamOp, StreamTransmit};
use socket2::{Domain, Protocol, Socket, Type};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};

/// Bytes read from one stream per wake-up before the others get their turn.
const READ_BUDGET: usize = 1 << 20;
/// Bytes queued towards one peer before its association is given up as stuck.
const MAX_QUEUED: usize = 16 << 20;

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
}

/// TCP for the engine's messaging associations.
#[derive(Debug)]
pub struct MaStreams {
    listener: TcpListener,
    conns: HashMap<IpAddr, Conn>,
    stats: StreamStats,
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
            stats: StreamStats::default(),
        })
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

    /// Descriptors to wait on and whether each waits for writability too.
    pub fn fds(&self) -> Vec<(BorrowedFd<'_>, bool)> {
        let mut v = vec![(self.listener.as_fd(), false)];
        v.extend(
            self.conns
                .values()
                .map(|c| (c.stream.as_fd(), c.connecting || !c.out.is_empty())),
        );
        v
    }

    /// Carry out an engine request.
    pub fn apply(&mut self, engine: &mut GistEngine, now: Instant, t: StreamTransmit) {
        match t.op {
            StreamOp::Open => {
                if let Some(c) = self.conns.get(&t.peer) {
                    if !c.connecting {
                        engine.handle_stream(now, StreamInput::Connected { peer: t.peer });
                    }
                    return;
                }
                match connect(SocketAddr::new(t.peer, t.port)) {
                    Ok(stream) => {
                        self.stats.opened += 1;
                        self.conns.insert(
                            t.peer,
                            Conn {
                                stream,
                                out: Vec::new(),
                                connecting: true,
                                outgoing: true,
                            },
                        );
                    }
                    Err(e) => {
                        tracing::debug!(peer = %t.peer, error = %e, "MA connect failed");
                        self.stats.connect_failures += 1;
                        engine.handle_stream(now, StreamInput::Closed { peer: t.peer });
                    }
                }
            }
            StreamOp::Send(bytes) => match self.conns.get_mut(&t.peer) {
                Some(c) => {
                    c.out.extend_from_slice(&bytes);
                    if c.out.len() > MAX_QUEUED {
                        self.fail(engine, now, t.peer);
                    } else if !c.connecting {
                        self.write(engine, now, t.peer);
                    }
                }
                None => engine.handle_stream(now, StreamInput::Closed { peer: t.peer }),
            },
            StreamOp::Close => {
                if let Some(c) = self.conns.remove(&t.peer) {
                    let _ = c.stream.shutdown(std::net::Shutdown::Both);
                }
            }
        }
    }

    /// Accept, finish connects, read and write whatever is ready.
    pub fn poll(&mut self, engine: &mut GistEngine, now: Instant) {
        loop {
            match self.listener.accept() {
                Ok((stream, from)) => self.accepted(engine, now, stream, canonical(from.ip())),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    tracing::warn!(error = %e, "MA accept failed");
                    break;
                }
            }
        }
        let peers: Vec<IpAddr> = self.conns.keys().copied().collect();
        for peer in peers {
            let Some(c) = self.conns.get_mut(&peer) else {
                continue;
            };
            if c.connecting {
                match c.stream.take_error() {
                    Ok(None) if c.stream.peer_addr().is_ok() => {
                        c.connecting = false;
                        engine.handle_stream(now, StreamInput::Connected { peer });
                    }
                    Ok(None) => continue, // still connecting
                    Ok(Some(e)) | Err(e) => {
                        tracing::debug!(%peer, error = %e, "MA connect failed");
                        self.stats.connect_failures += 1;
                        self.conns.remove(&peer);
                        engine.handle_stream(now, StreamInput::Closed { peer });
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
                let out = if old.connecting { old.out } else { Vec::new() };
                self.stats.accepted += 1;
                self.conns.insert(
                    peer,
                    Conn {
                        stream,
                        out,
                        connecting: false,
                        outgoing: false,
                    },
                );
                engine.handle_stream(now, StreamInput::Accepted { peer });
                self.write(engine, now, peer);
                return;
            }
        }
        self.stats.accepted += 1;
        self.conns.insert(
            peer,
            Conn {
                stream,
                out: Vec::new(),
                connecting: false,
                outgoing: false,
            },
        );
        engine.handle_stream(now, StreamInput::Accepted { peer });
    }

    fn read(&mut self, engine: &mut GistEngine, now: Instant, peer: IpAddr) {
        let mut buf = [0u8; 16 * 1024];
        let mut total = 0;
        while total < READ_BUDGET {
            let Some(c) = self.conns.get_mut(&peer) else {
                return;
            };
            match c.stream.read(&mut buf) {
                Ok(0) => {
                    self.fail(engine, now, peer);
                    return;
                }
                Ok(n) => {
                    total += n;
                    self.stats.bytes_in += n as u64;
                    engine.handle_stream(
                        now,
                        StreamInput::Data {
                            peer,
                            bytes: &buf[..n],
                        },
                    );
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

    fn write(&mut self, engine: &mut GistEngine, now: Instant, peer: IpAddr) {
        let Some(c) = self.conns.get_mut(&peer) else {
            return;
        };
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
        if self.conns.remove(&peer).is_some() {
            self.stats.closed_by_peer += 1;
            engine.handle_stream(now, StreamInput::Closed { peer });
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
