//! The oracle's ALTO server (RFC 7285, update streams RFC 8895) and client (issue #16).
//!
//! The server answers from the same [`SharedSnapshot`] as the Proxidor workers: the endpoint
//! services read the current snapshot per request; the maps ([`AltoMaps`]) are computed once per
//! snapshot, when the snapshot swap counter ([`SharedSnapshot::swaps`]) moved. A task polls that
//! counter every [`POLL`] and, when update streams are open, computes the new maps and hands them
//! to the streams, which send merge patches ([`sse`]).
//!
//! axum on a current-thread tokio runtime on one thread named `alto`, like the metrics page
//! ([`crate::metrics::http`]): the Proxidor workers never run async code. The listening socket is
//! bound before the thread starts (port 0 works). Optional TLS ([`tls`], rustls) and HTTP basic
//! authentication ([`auth`]).
//!
//! Every response is the resource's media type with a JSON body, or an error: 400 with an
//! `application/alto-error+json` body (RFC 7285 §8.5), 415 when a POST body is not of the
//! resource's input media type, 406 when the `Accept` header excludes the response's media type,
//! 401 without valid credentials, 404 for anything else. See docs/alto.md.

pub mod auth;
pub mod bench;
pub mod cli;
pub mod client;
pub mod counters;
pub mod sse;
pub mod tls;

use anyhow::Context as _;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::header::{ACCEPT, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use counters::{AltoCounters, Refusal};
use pathwise_oracle::SharedSnapshot;
use pathwise_oracle::alto::{
    self, AltoError, AltoMaps, CostMapFilter, CostMetric, CostMode, CostType, Directory,
    EndpointCostRequest, EndpointPropRequest, NetworkMapFilter, Resource,
};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the snapshot swap counter is polled for update streams.
pub const POLL: Duration = Duration::from_millis(100);

/// The base path of the resources; the IRD is served there.
pub const BASE: &str = "/alto";

/// How to run the ALTO server.
#[derive(Clone, Debug)]
pub struct AltoOptions {
    /// Where to listen.
    pub addr: SocketAddr,
    /// Serve HTTPS with this certificate chain and key (PEM files).
    pub tls: Option<tls::TlsFiles>,
    /// Require HTTP basic authentication against this file of `user:bcrypt-hash` lines.
    pub auth: Option<PathBuf>,
    /// Also serve `POST /bench/trivial`, a handler that reads the body and answers a fixed
    /// 2-byte JSON body: the baseline of `pathwise bench alto`. Not for production.
    pub bench_route: bool,
}

impl AltoOptions {
    /// Plain HTTP on `addr`, no authentication.
    pub fn plain(addr: SocketAddr) -> AltoOptions {
        AltoOptions {
            addr,
            tls: None,
            auth: None,
            bench_route: false,
        }
    }
}

/// What every handler shares.
#[derive(Debug)]
pub(crate) struct Alto {
    shared: Arc<SharedSnapshot>,
    directory: Directory,
    counters: Arc<AltoCounters>,
    maps: Mutex<Option<(u64, Arc<AltoMaps>)>>,
    streams: sse::Streams,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Alto {
    /// The maps of the current snapshot, computed if the snapshot changed since last time.
    pub(crate) fn maps(&self) -> Arc<AltoMaps> {
        // The count first, then the snapshot: a swap in between only makes the next call
        // compute again.
        let swaps = self.shared.swaps();
        let mut cached = lock(&self.maps);
        if let Some((n, m)) = cached.as_ref()
            && *n == swaps
        {
            return m.clone();
        }
        let maps = Arc::new(AltoMaps::build(self.shared.load_full()));
        self.counters.map_build();
        *cached = Some((swaps, maps.clone()));
        maps
    }
}

/// A running ALTO server; dropping it closes the socket, the connections and the streams.
#[derive(Debug)]
pub struct AltoServer {
    addr: SocketAddr,
    tls: bool,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl AltoServer {
    /// Serve `shared` as `opts` say.
    pub fn start(
        opts: &AltoOptions,
        shared: Arc<SharedSnapshot>,
        counters: Arc<AltoCounters>,
    ) -> anyhow::Result<AltoServer> {
        let acceptor = opts.tls.as_ref().map(tls::acceptor).transpose()?;
        let auth = opts
            .auth
            .as_ref()
            .map(|p| auth::Credentials::load(p))
            .transpose()?;
        let listener = std::net::TcpListener::bind(opts.addr)
            .with_context(|| format!("alto: binding {}", opts.addr))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("alto: starting the runtime")?;
        let state = Arc::new(Alto {
            shared,
            directory: Directory {
                base: BASE.into(),
                update_stream: true,
            },
            counters,
            maps: Mutex::new(None),
            streams: sse::Streams::default(),
        });
        let app = router(state.clone(), auth, opts.bench_route);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let tls = acceptor.is_some();
        let thread = std::thread::Builder::new()
            .name("alto".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => {
                            tracing::error!(error = %e, "alto: socket unusable");
                            return;
                        }
                    };
                    let watcher = tokio::spawn(sse::watch_snapshots(state.clone()));
                    let app = app.into_make_service_with_connect_info::<SocketAddr>();
                    let served = match acceptor {
                        None => {
                            let l = axum::serve::ListenerExt::tap_io(listener, |io| {
                                let _ = io.set_nodelay(true);
                            });
                            tokio::select! {
                                r = axum::serve(l, app).into_future() => r,
                                _ = stopped => Ok(()),
                            }
                        }
                        Some(acceptor) => {
                            let l =
                                tls::TlsListener::new(listener, acceptor, state.counters.clone());
                            let l = axum::serve::ListenerExt::tap_io(l, |_| {});
                            tokio::select! {
                                r = axum::serve(l, app).into_future() => r,
                                _ = stopped => Ok(()),
                            }
                        }
                    };
                    if let Err(e) = served {
                        tracing::error!(error = %e, "alto server stopped");
                    }
                    watcher.abort();
                });
            })
            .context("alto: starting the thread")?;
        let scheme = if tls { "https" } else { "http" };
        tracing::info!(%addr, "alto on {scheme}://{addr}{BASE}");
        Ok(AltoServer {
            addr,
            tls,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The IRD's URL.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}{BASE}", self.addr)
    }
}

impl Drop for AltoServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn router(state: Arc<Alto>, auth: Option<auth::Credentials>, bench_route: bool) -> Router {
    let mut r = Router::new()
        .route(BASE, get(directory))
        .route(&format!("{BASE}/"), get(directory))
        .route(&format!("{BASE}/networkmap"), get(network_map))
        .route(
            &format!("{BASE}/costmap/{{mode}}/{{metric}}"),
            get(cost_map),
        )
        .route(
            &format!("{BASE}/networkmap/filtered"),
            post(filtered_network_map),
        )
        .route(&format!("{BASE}/costmap/filtered"), post(filtered_cost_map))
        .route(
            &format!("{BASE}/endpointprop/lookup"),
            post(endpoint_property),
        )
        .route(&format!("{BASE}/endpointcost/lookup"), post(endpoint_cost))
        .route(&format!("{BASE}/updates"), post(sse::open))
        .route(
            &format!("{BASE}/updates/control/{{token}}"),
            post(sse::control),
        );
    if bench_route {
        r = r.route("/bench/trivial", post(trivial));
    }
    let r = r
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state.clone());
    match auth {
        Some(creds) => r.layer(axum::middleware::from_fn_with_state(
            (Arc::new(creds), state.counters.clone()),
            auth::require,
        )),
        None => r,
    }
}

async fn not_found(State(alto): State<Arc<Alto>>) -> Response {
    alto.counters.refused(Refusal::NotFound);
    (
        StatusCode::NOT_FOUND,
        format!("not found: the ALTO directory is at {BASE}\n"),
    )
        .into_response()
}

async fn method_not_allowed(State(alto): State<Arc<Alto>>) -> Response {
    alto.counters.refused(Refusal::MethodNotAllowed);
    (
        StatusCode::METHOD_NOT_ALLOWED,
        "method not allowed: the IRD says which resources take GET and which POST\n",
    )
        .into_response()
}

async fn trivial(_body: Bytes) -> Response {
    ([(CONTENT_TYPE, "application/json")], "{}").into_response()
}

/// Whether an `Accept` header lets the client take `media` (no header: anything).
pub(crate) fn acceptable(headers: &HeaderMap, media: &str) -> bool {
    let Some(accept) = headers.get(ACCEPT).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let (top, _) = media.split_once('/').unwrap_or((media, ""));
    accept.split(',').any(|r| {
        let r = r.split(';').next().unwrap_or("").trim();
        r.eq_ignore_ascii_case(media)
            || r == "*/*"
            || r.strip_suffix("/*")
                .is_some_and(|t| t.eq_ignore_ascii_case(top))
    })
}

/// Whether the request's `Content-Type` is `media` (parameters ignored).
pub(crate) fn content_type_is(headers: &HeaderMap, media: &str) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(media))
}

/// A JSON response of `media`.
pub(crate) fn json_response(media: &'static str, body: &serde_json::Value) -> Response {
    let body = serde_json::to_vec(body).unwrap_or_default();
    ([(CONTENT_TYPE, HeaderValue::from_static(media))], body).into_response()
}

/// An ALTO error response (RFC 7285 §8.5), counted.
pub(crate) fn error_response(alto: &Alto, e: &AltoError) -> Response {
    alto.counters.refused(Refusal::Alto(e.code));
    let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    let mut r = json_response(alto::ERROR_MEDIA_TYPE, &e.to_json());
    *r.status_mut() = status;
    r
}

/// The checks before a resource's own work: count it, then `Accept`, then (POST) the body's
/// media type. The refusal, if any.
fn precheck(
    alto: &Alto,
    resource: Resource,
    headers: &HeaderMap,
    media: &'static str,
    input: Option<&'static str>,
) -> Option<Response> {
    alto.counters.request(resource);
    if !acceptable(headers, media) {
        alto.counters.refused(Refusal::NotAcceptable);
        return Some(
            (
                StatusCode::NOT_ACCEPTABLE,
                format!("not acceptable: this resource is {media}\n"),
            )
                .into_response(),
        );
    }
    if let Some(input) = input
        && !content_type_is(headers, input)
    {
        alto.counters.refused(Refusal::UnsupportedMediaType);
        let e = AltoError::syntax(format!("the request body must be {input}"));
        let mut r = json_response(alto::ERROR_MEDIA_TYPE, &e.to_json());
        *r.status_mut() = StatusCode::UNSUPPORTED_MEDIA_TYPE;
        return Some(r);
    }
    None
}

fn answer(
    alto: &Alto,
    media: &'static str,
    result: Result<serde_json::Value, AltoError>,
) -> Response {
    match result {
        Ok(v) => json_response(media, &v),
        Err(e) => error_response(alto, &e),
    }
}

async fn directory(State(alto): State<Arc<Alto>>, headers: HeaderMap) -> Response {
    if let Some(r) = precheck(&alto, Resource::Directory, &headers, alto::DIRECTORY, None) {
        return r;
    }
    json_response(alto::DIRECTORY, &alto.directory.ird())
}

async fn network_map(State(alto): State<Arc<Alto>>, headers: HeaderMap) -> Response {
    if let Some(r) = precheck(
        &alto,
        Resource::NetworkMap,
        &headers,
        alto::NETWORK_MAP,
        None,
    ) {
        return r;
    }
    json_response(alto::NETWORK_MAP, &alto.maps().network_map(None))
}

async fn cost_map(
    State(alto): State<Arc<Alto>>,
    Path((mode, metric)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let mode = match mode.as_str() {
        "num" => Some(CostMode::Numerical),
        "ord" => Some(CostMode::Ordinal),
        _ => None,
    };
    let (Some(mode), Some(metric)) = (mode, CostMetric::parse(&metric)) else {
        return not_found(State(alto)).await;
    };
    let cost = CostType { metric, mode };
    if let Some(r) = precheck(
        &alto,
        Resource::CostMap(cost),
        &headers,
        alto::COST_MAP,
        None,
    ) {
        return r;
    }
    json_response(alto::COST_MAP, &alto.maps().cost_map(cost))
}

async fn filtered_network_map(
    State(alto): State<Arc<Alto>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (r, media, input) = (
        Resource::FilteredNetworkMap,
        alto::NETWORK_MAP,
        alto::NETWORK_MAP_FILTER,
    );
    if let Some(resp) = precheck(&alto, r, &headers, media, Some(input)) {
        return resp;
    }
    let result = NetworkMapFilter::parse(&body).map(|f| alto.maps().network_map(Some(&f)));
    answer(&alto, media, result)
}

async fn filtered_cost_map(
    State(alto): State<Arc<Alto>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (r, media, input) = (
        Resource::FilteredCostMap,
        alto::COST_MAP,
        alto::COST_MAP_FILTER,
    );
    if let Some(resp) = precheck(&alto, r, &headers, media, Some(input)) {
        return resp;
    }
    let result = CostMapFilter::parse(&body).and_then(|f| alto.maps().filtered_cost_map(&f));
    answer(&alto, media, result)
}

async fn endpoint_property(
    State(alto): State<Arc<Alto>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (r, media, input) = (
        Resource::EndpointProperty,
        alto::ENDPOINT_PROP,
        alto::ENDPOINT_PROP_PARAMS,
    );
    if let Some(resp) = precheck(&alto, r, &headers, media, Some(input)) {
        return resp;
    }
    let result = EndpointPropRequest::parse(&body, alto::is_supported_property)
        .map(|req| alto::endpoint_properties(&alto.maps(), &req, client_ip(peer)));
    answer(&alto, media, result)
}

async fn endpoint_cost(
    State(alto): State<Arc<Alto>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (r, media, input) = (
        Resource::EndpointCost,
        alto::ENDPOINT_COST,
        alto::ENDPOINT_COST_PARAMS,
    );
    if let Some(resp) = precheck(&alto, r, &headers, media, Some(input)) {
        return resp;
    }
    let result = EndpointCostRequest::parse(&body)
        .map(|req| alto::endpoint_cost(&alto.shared.load(), &req, client_ip(peer)));
    answer(&alto, media, result)
}

/// The client's address as the oracle should place it (an IPv4-mapped IPv6 peer as IPv4).
fn client_ip(peer: SocketAddr) -> std::net::IpAddr {
    peer.ip().to_canonical()
}
