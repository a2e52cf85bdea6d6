//! The metrics page over HTTP, the same for every service (`[daemon] metrics`, `oracle serve
//! --metrics`, the booster gateway's `metrics`): `GET /metrics` answers the page, any other
//! path 404.
//!
//! axum on a tokio runtime of its own (current-thread, on one dedicated thread named
//! `metrics`): the services' own threads never run async code, and the oracle's ALTO server
//! (issue #16, `oracle::alto`) runs on the same stack, on a thread of its own. The listening
//! socket is bound before the thread starts, so a bad or busy address is an error of the
//! caller's start-up, and port 0 works (tests).
//!
//! The page is OpenMetrics 1.0 (`application/openmetrics-text; version=1.0.0`), what Prometheus
//! asks for first; a client whose `Accept` names `text/plain` and not OpenMetrics gets the
//! Prometheus text format 0.0.4 instead, the one format `promtool check metrics` reads:
//!
//! ```text
//! curl -s -H 'Accept: text/plain' http://127.0.0.1:9464/metrics | promtool check metrics
//! ```

use anyhow::Context as _;
use axum::Router;
use axum::extract::State;
use axum::http::header::{ACCEPT, CONTENT_TYPE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus_client::registry::Registry;
use std::net::SocketAddr;
use std::sync::Arc;

/// OpenMetrics' content type.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// How the page is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0 text (the default).
    OpenMetrics,
    /// The Prometheus text format 0.0.4.
    Text,
}

impl Format {
    /// The format a client whose `Accept` header is `accept` gets: the text format only when
    /// it asks for `text/plain` and not for OpenMetrics.
    pub fn negotiate(accept: Option<&str>) -> Format {
        let Some(accept) = accept else {
            return Format::OpenMetrics;
        };
        let ranges = accept.split(',').map(|r| {
            r.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        });
        let (mut openmetrics, mut text) = (false, false);
        for r in ranges {
            openmetrics |= r == "application/openmetrics-text";
            text |= r == "text/plain";
        }
        if text && !openmetrics {
            Format::Text
        } else {
            Format::OpenMetrics
        }
    }

    /// Its `Content-Type`.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => OPENMETRICS,
            Format::Text => prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        }
    }
}

/// A running metrics server; dropping it stops the thread and closes the socket.
#[derive(Debug)]
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MetricsServer {
    /// Serve `registry` on `addr` (port 0: any free port, see [`Self::local_addr`]).
    pub fn start(addr: SocketAddr, registry: Registry) -> anyhow::Result<MetricsServer> {
        let listener = std::net::TcpListener::bind(addr)
            .with_context(|| format!("metrics: binding {addr}"))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("metrics: starting the runtime")?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let app = router(Arc::new(registry));
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => {
                            tracing::error!(error = %e, "metrics: socket unusable");
                            return;
                        }
                    };
                    tokio::select! {
                        served = axum::serve(listener, app).into_future() => {
                            if let Err(e) = served {
                                tracing::error!(error = %e, "metrics server stopped");
                            }
                        }
                        _ = stopped => {}
                    }
                });
                // Dropping the runtime here drops the connections still open.
            })
            .context("metrics: starting the thread")?;
        tracing::info!(%addr, "metrics on http://{addr}/metrics");
        Ok(MetricsServer {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn router(registry: Arc<Registry>) -> Router {
    Router::new()
        .route("/metrics", get(page))
        .fallback(|| async {
            (
                StatusCode::NOT_FOUND,
                "not found: the metrics are at /metrics\n",
            )
        })
        .with_state(registry)
}

async fn page(State(registry): State<Arc<Registry>>, headers: HeaderMap) -> Response {
    let format = Format::negotiate(headers.get(ACCEPT).and_then(|v| v.to_str().ok()));
    let body = super::encode(&registry, format);
    ([(CONTENT_TYPE, format.content_type())], body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read as _, Write as _};

    /// One HTTP/1.1 request with `headers`; the status line, the headers and the body.
    pub(crate) fn get(addr: SocketAddr, path: &str, headers: &str) -> (String, String, String) {
        let mut c = std::net::TcpStream::connect(addr).expect("connect");
        c.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        write!(
            c,
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{headers}\r\n"
        )
        .unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).expect("response");
        let (head, body) = out.split_once("\r\n\r\n").expect("a response");
        let (status, head) = head.split_once("\r\n").unwrap_or((head, ""));
        (
            status.to_string(),
            head.to_ascii_lowercase(),
            body.to_string(),
        )
    }

    #[test]
    fn accept_picks_the_text_format_only_when_openmetrics_is_not_asked_for() {
        use Format::*;
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
                          version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        for (accept, want) in [
            (None, OpenMetrics),
            (Some("*/*"), OpenMetrics),
            (Some(prometheus), OpenMetrics),
            (Some("text/plain"), Text),
            (Some("Text/Plain; version=0.0.4"), Text),
            (Some("text/html, text/plain;q=0.9"), Text),
            (Some("application/json"), OpenMetrics),
        ] {
            assert_eq!(Format::negotiate(accept), want, "{accept:?}");
        }
    }

    #[test]
    fn serves_the_page_at_metrics_only_and_stops_when_dropped() {
        let mut s = super::super::Snapshot::new("rsvp");
        s.counter("path_timeouts", "Path timeouts.", 4);
        let s = Arc::new(s);
        let r =
            super::super::registry([super::super::ServiceCollector::live(move || (*s).clone())]);
        let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), r).unwrap();
        let addr = server.local_addr();
        let (status, head, body) = get(addr, "/metrics", "");
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert!(
            head.contains(
                "content-type: application/openmetrics-text; version=1.0.0; charset=utf-8"
            ),
            "{head}"
        );
        assert!(
            body.contains("pathwise_rsvp_path_timeouts_total 4\n"),
            "{body}"
        );
        assert!(body.ends_with("# EOF\n"), "{body}");
        let (_, head, body) = get(addr, "/metrics", "Accept: text/plain\r\n");
        assert!(
            head.contains("content-type: text/plain; version=0.0.4; charset=utf-8"),
            "{head}"
        );
        assert!(!body.contains("# EOF"), "{body}");
        let (status, _, body) = get(addr, "/", "");
        assert_eq!(status, "HTTP/1.1 404 Not Found");
        assert!(body.contains("/metrics"), "{body}");
        // A connection left open does not keep the server alive.
        let idle = std::net::TcpStream::connect(addr).unwrap();
        drop(server);
        assert!(
            std::net::TcpStream::connect(addr).is_err(),
            "still listening"
        );
        drop(idle);
    }
}
