//! A small management channel for pathwise daemons: JSON requests and responses over a Unix
//! stream socket, one JSON object per line.
//!
//! ```text
//! → {"verb": "insert", "args": {"policy": "default", "booster": "lz4"}}
//! ← {"ok": {...}}            or            ← {"error": "no policy named \"x\""}
//! ```
//!
//! A daemon calls [`Server::bind`] with a socket path and a [`Handler`] (any
//! `Fn(&str, &Value) -> Result<Value, String>`), then [`Server::spawn`] to serve on a thread of
//! its own; each connection is served on a thread of its own (at most [`MAX_CONNECTIONS`] at
//! once), request by request, until the client closes it, so a client that keeps its
//! connection open (or a slow request) never holds the others up.
//! A CLI calls [`request`] (or keeps a [`Client`] for several requests). When nothing listens on
//! the path, the client's error says so and names the daemon to start. The booster gateway uses it
//! today; the RSVP daemon, the GIST daemon and the oracle server are meant to reuse it as is:
//! give each its own default socket path and its own verbs.
//!
//! Not a hot path: blocking I/O, a JSON value per request. Requests larger than
//! [`MAX_REQUEST`] bytes are refused. The socket file is removed when the [`Server`] is dropped.
//!
//! Only the socket's owner, root and the members of a configured group may use it
//! ([`access`]): the file is created with mode 0600 (0660 with a group) and every connection's
//! credentials are checked.

pub mod access;

pub use access::{Access, SocketGroup};

use anyhow::Context as _;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// Largest request line accepted.
pub const MAX_REQUEST: u64 = 1 << 20;

/// Connections served at once; one more is answered with an error and closed.
pub const MAX_CONNECTIONS: usize = 16;

/// What a daemon answers requests with: verb and arguments in, a JSON value or an error
/// message out.
pub trait Handler: Send + Sync + 'static {
    /// Answer one request.
    fn handle(&self, verb: &str, args: &Value) -> Result<Value, String>;
}

impl<F> Handler for F
where
    F: Fn(&str, &Value) -> Result<Value, String> + Send + Sync + 'static,
{
    fn handle(&self, verb: &str, args: &Value) -> Result<Value, String> {
        self(verb, args)
    }
}

/// A listening management socket.
#[derive(Debug)]
pub struct Server {
    listener: UnixListener,
    path: PathBuf,
    stop: Arc<AtomicBool>,
    access: Access,
    refused: Arc<AtomicU64>,
}

impl Server {
    /// Listen on `path`, for this process's user and root only (mode 0600).
    pub fn bind(path: &Path) -> anyhow::Result<Server> {
        Self::bind_with(path, None)
    }

    /// Listen on `path` for this process's user, root and the members of `group` (mode 0660,
    /// the file given to the group: this process must be a member of it, or hold
    /// CAP_CHOWN). Made by [`access::bind`]: a stale socket file is replaced, a live one is an
    /// error, and there is no window in which another user could connect.
    pub fn bind_with(path: &Path, group: Option<SocketGroup>) -> anyhow::Result<Server> {
        let access = Access::for_this_process(group);
        let listener = access::bind(path, &access)?;
        Ok(Server {
            listener,
            path: path.to_path_buf(),
            stop: Arc::new(AtomicBool::new(false)),
            access,
            refused: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Who may use the socket.
    pub fn access(&self) -> &Access {
        &self.access
    }

    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Serve requests on a new thread until the returned [`ServerHandle`] is dropped.
    pub fn spawn(self, handler: impl Handler) -> anyhow::Result<ServerHandle> {
        let stop = self.stop.clone();
        let path = self.path.clone();
        let refused = self.refused.clone();
        let thread = std::thread::Builder::new()
            .name("mgmt".into())
            .spawn(move || self.serve(Arc::new(handler)))?;
        Ok(ServerHandle {
            stop,
            path,
            refused,
            thread: Some(thread),
        })
    }

    /// Accept connections on this thread until stopped, each served on a thread of its own.
    pub fn serve(&self, handler: Arc<dyn Handler>) {
        let active = Arc::new(AtomicUsize::new(0));
        for conn in self.listener.incoming() {
            if self.stop.load(Ordering::Relaxed) {
                break;
            }
            let Ok(conn) = conn else { continue };
            let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
            if !self.admit(&conn) {
                continue;
            }
            if active.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
                tracing::warn!(MAX_CONNECTIONS, "management connection refused: too many");
                refuse(
                    &conn,
                    &format!(
                        "the daemon is serving {MAX_CONNECTIONS} management connections already; \
                         try again when one has closed"
                    ),
                );
                continue;
            }
            let one = Connection::open(&active);
            let handler = Arc::clone(&handler);
            let spawned = std::thread::Builder::new()
                .name("mgmt-conn".into())
                .spawn(move || {
                    let _one = one;
                    if let Err(e) = serve_connection(conn, &*handler) {
                        tracing::debug!(error = %e, "management connection ended");
                    }
                });
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "no thread for a management connection");
            }
        }
    }

    /// Whether the client at the other end of `conn` may use the socket; a refused one gets
    /// an error line, and is counted and logged.
    fn admit(&self, conn: &UnixStream) -> bool {
        let peer = match self.access.check(conn, &self.path, &self.refused) {
            Ok(_) => return true,
            Err(access::Refused::NoCredentials) => return false,
            Err(access::Refused::NotAllowed(peer)) => peer,
        };
        refuse(conn, &self.access.refusal(&peer));
        false
    }

    /// Connections refused so far.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// The refused-connection counter itself, for a service's `show counters` and metrics
    /// page (see [`crate::metrics::management_refused`]), which exist before the server runs.
    pub fn refused_counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.refused)
    }

    /// Count refused connections in `counter`, one the service's state held before the socket
    /// was bound.
    pub fn count_refused_in(mut self, counter: Arc<AtomicU64>) -> Server {
        self.refused = counter;
        self
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Answer a connection's client with `error` and close it.
fn refuse(conn: &UnixStream, error: &str) {
    let mut line = serde_json::to_vec(&json!({ "error": error })).unwrap_or_default();
    line.push(b'\n');
    let _ = (&*conn).write_all(&line);
    // Take the client's request before closing, so that it is not cut off writing it and
    // reads the refusal instead of a broken pipe.
    let _ = conn.set_read_timeout(Some(Duration::from_secs(1)));
    let mut request = String::new();
    let _ = BufReader::new(conn.take(MAX_REQUEST)).read_line(&mut request);
}

/// One served connection, counted in `active` while it lives (also when its thread panics or
/// cannot be started).
struct Connection(Arc<AtomicUsize>);

impl Connection {
    fn open(active: &Arc<AtomicUsize>) -> Connection {
        active.fetch_add(1, Ordering::Relaxed);
        Connection(Arc::clone(active))
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn serve_connection(conn: UnixStream, handler: &dyn Handler) -> std::io::Result<()> {
    let mut writer = conn.try_clone()?;
    let mut reader = BufReader::new(conn);
    let mut line = String::new();
    loop {
        line.clear();
        let n = (&mut reader).take(MAX_REQUEST).read_line(&mut line)?;
        if n == 0 {
            return Ok(());
        }
        let reply = match serde_json::from_str::<Value>(&line) {
            Ok(req) => match req.get("verb").and_then(Value::as_str) {
                Some(verb) => {
                    let args = req.get("args").cloned().unwrap_or(Value::Null);
                    match handler.handle(verb, &args) {
                        Ok(v) => json!({ "ok": v }),
                        Err(e) => json!({ "error": e }),
                    }
                }
                None => json!({ "error": "request has no \"verb\"" }),
            },
            Err(e) => json!({ "error": format!("request is not JSON: {e}") }),
        };
        let mut out = serde_json::to_vec(&reply).unwrap_or_default();
        out.push(b'\n');
        writer.write_all(&out)?;
    }
}

/// A running server; dropping it stops the thread and removes the socket.
#[derive(Debug)]
pub struct ServerHandle {
    stop: Arc<AtomicBool>,
    path: PathBuf,
    refused: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerHandle {
    /// Connections refused so far (their peer was not allowed, see [`access`]).
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop.
        let _ = UnixStream::connect(&self.path);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A connection to a daemon's management socket.
#[derive(Debug)]
pub struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Client {
    /// Connect to `path`; `daemon` names what should be listening there, for the error message.
    pub fn connect(path: &Path, daemon: &str) -> anyhow::Result<Client> {
        let conn = UnixStream::connect(path).map_err(|e| {
            use std::io::ErrorKind::*;
            match e.kind() {
                NotFound | ConnectionRefused => anyhow::anyhow!(
                    "no {daemon} is running: nothing listens on {} ({e}); start it first, or \
                     pass --socket with the path it uses",
                    path.display()
                ),
                PermissionDenied => anyhow::anyhow!(
                    "connecting to {}: {e}: the {daemon}'s management socket admits only its \
                     user, root and its configured socket group",
                    path.display()
                ),
                _ => anyhow::anyhow!("connecting to {}: {e}", path.display()),
            }
        })?;
        conn.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(Client {
            writer: conn.try_clone()?,
            reader: BufReader::new(conn),
        })
    }

    /// Send one request; the `ok` value, or the daemon's error as an error.
    pub fn request(&mut self, verb: &str, args: Value) -> anyhow::Result<Value> {
        let mut line = serde_json::to_vec(&json!({ "verb": verb, "args": args }))?;
        line.push(b'\n');
        self.writer.write_all(&line)?;
        let mut reply = String::new();
        if self.reader.read_line(&mut reply)? == 0 {
            anyhow::bail!("the daemon closed the connection without answering");
        }
        let mut v: Value = serde_json::from_str(&reply).context("reply is not JSON")?;
        if let Some(e) = v.get("error") {
            anyhow::bail!("{}", e.as_str().unwrap_or(&e.to_string()));
        }
        Ok(v.get_mut("ok").map(Value::take).unwrap_or(Value::Null))
    }
}

/// Connect, send one request, return the answer.
pub fn request(path: &Path, daemon: &str, verb: &str, args: Value) -> anyhow::Result<Value> {
    Client::connect(path, daemon)?.request(verb, args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_response_errors_and_no_daemon() {
        let dir = std::env::temp_dir().join(format!("pathwise-mgmt-{}", std::process::id()));
        let path = dir.join("t.sock");
        let err = request(&path, "test daemon", "x", Value::Null).unwrap_err();
        assert!(
            err.to_string().contains("no test daemon is running"),
            "{err}"
        );
        let server = Server::bind(&path).unwrap();
        assert!(
            Server::bind(&path).is_err(),
            "a live socket is not taken over"
        );
        let handle = server
            .spawn(|verb: &str, args: &Value| match verb {
                "echo" => Ok(args.clone()),
                _ => Err(format!("unknown verb {verb:?}")),
            })
            .unwrap();
        let mut c = Client::connect(&path, "test daemon").unwrap();
        assert_eq!(c.request("echo", json!({"a": 1})).unwrap(), json!({"a": 1}));
        let e = c.request("nope", Value::Null).unwrap_err();
        assert_eq!(e.to_string(), "unknown verb \"nope\"");
        drop(c);
        drop(handle);
        assert!(!path.exists());
        let _ = std::fs::remove_dir(&dir);
    }

    /// Clients that keep their connections open do not hold the others up; one more than
    /// [`MAX_CONNECTIONS`] is told so, and served again once one has closed.
    #[test]
    fn connections_are_served_side_by_side_up_to_the_limit() {
        let dir = std::env::temp_dir().join(format!("pathwise-mgmt-n-{}", std::process::id()));
        let path = dir.join("t.sock");
        let handle = Server::bind(&path)
            .unwrap()
            .spawn(|_: &str, args: &Value| Ok(args.clone()))
            .unwrap();
        let mut open: Vec<Client> = (0..MAX_CONNECTIONS)
            .map(|i| {
                let mut c = Client::connect(&path, "test daemon").unwrap();
                // Each answered while the ones before it stay open.
                assert_eq!(c.request("echo", json!(i)).unwrap(), json!(i));
                c
            })
            .collect();
        let e = request(&path, "test daemon", "echo", json!("one more")).unwrap_err();
        assert!(
            e.to_string().contains("management connections already"),
            "{e}"
        );
        // The open ones still answer.
        assert_eq!(open[0].request("echo", json!("a")).unwrap(), json!("a"));
        drop(open.pop());
        let answered = (0..100).find_map(|_| {
            std::thread::sleep(Duration::from_millis(10));
            request(&path, "test daemon", "echo", json!("again")).ok()
        });
        assert_eq!(answered, Some(json!("again")));
        drop(open);
        drop(handle);
        let _ = std::fs::remove_dir(&dir);
    }
}
