//! Update streams (RFC 8895): `POST /alto/updates` opens a server-sent event stream that
//! follows the network map and the cost maps; `POST /alto/updates/control/<token>` adds and
//! removes substreams (§7).
//!
//! Each stream first sends a control update message with its control URI (§6.7.1), then a
//! full replacement of every resource asked for (unless the client's `tag` is current, §6.5),
//! then, whenever a new snapshot changes a resource, a JSON merge patch from the last version
//! it sent (or a full replacement for a substream that asked for `"incremental-changes":
//! false`), the network map before the cost maps (§6.7.1). Every stream diffs against what it
//! sent itself, so two streams of the same resources reach the same documents (§6.7.2). A
//! comment line every 15 s keeps the connection open (§6.8).

use super::counters::{EventKind, Refusal};
use super::{Alto, error_response, precheck};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use pathwise_oracle::alto::{
    self, AltoError, AltoMaps, CostType, Resource, UpdateStreamRequest, patch,
};
use rand::Rng as _;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};

/// A resource an update stream can follow (the IRD's `uses` of the update stream).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Followed {
    /// The network map.
    NetworkMap,
    /// A full cost map.
    CostMap(CostType),
}

impl Followed {
    /// From a resource ID.
    pub fn from_id(id: &str) -> Option<Followed> {
        if id == alto::NETWORK_MAP_ID {
            return Some(Followed::NetworkMap);
        }
        CostType::ALL
            .iter()
            .find(|(_, t)| alto::cost_map_id(*t) == id)
            .map(|(_, t)| Followed::CostMap(*t))
    }

    fn media(self) -> &'static str {
        match self {
            Followed::NetworkMap => alto::NETWORK_MAP,
            Followed::CostMap(_) => alto::COST_MAP,
        }
    }

    fn document(self, maps: &AltoMaps) -> Value {
        match self {
            Followed::NetworkMap => maps.network_map(None),
            Followed::CostMap(t) => maps.cost_map(t),
        }
    }
}

/// The open streams' control channels by token, and the latest maps for them to follow.
#[derive(Debug)]
pub(crate) struct Streams {
    control: Mutex<HashMap<String, mpsc::Sender<ControlRequest>>>,
    latest: watch::Sender<Option<Arc<AltoMaps>>>,
}

impl Default for Streams {
    fn default() -> Self {
        Streams {
            control: Mutex::new(HashMap::new()),
            latest: watch::Sender::new(None),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A stream control request handed to its stream; the answer is whether the stream closed.
#[derive(Debug)]
pub(crate) struct ControlRequest {
    req: UpdateStreamRequest,
    ack: oneshot::Sender<Result<(), AltoError>>,
}

/// Poll the snapshot swap counter; when it moved and streams are open, compute the maps of the
/// new snapshot and hand them to the streams.
pub(crate) async fn watch_snapshots(alto: Arc<Alto>) {
    let mut tick = tokio::time::interval(super::POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last = alto.shared.swaps();
    loop {
        tick.tick().await;
        let swaps = alto.shared.swaps();
        if swaps == last {
            continue;
        }
        last = swaps;
        if alto.streams.latest.receiver_count() > 0 {
            let maps = alto.maps();
            alto.streams.latest.send_replace(Some(maps));
        }
    }
}

/// One substream: what it follows and the last version sent.
#[derive(Debug)]
struct Substream {
    id: String,
    followed: Followed,
    incremental: bool,
    last: Value,
}

fn event(name: String, data: &Value) -> Event {
    Event::default().event(name).data(data.to_string())
}

/// Check the `add` entries of a request (RFC 8895 §6.6) against the resources streams follow.
fn resolve(
    req: &UpdateStreamRequest,
) -> Result<Vec<(String, Followed, &alto::AddUpdate)>, AltoError> {
    req.add
        .iter()
        .map(|(sid, a)| {
            Followed::from_id(&a.resource_id)
                .map(|f| (sid.clone(), f, a))
                .ok_or_else(|| {
                    AltoError::bad_value(
                        format!("add/{sid}/resource-id"),
                        &Value::String(a.resource_id.clone()),
                    )
                })
        })
        .collect()
}

/// `POST /alto/updates`: open an update stream.
pub(crate) async fn open(
    State(alto): State<Arc<Alto>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(r) = precheck(
        &alto,
        Resource::UpdateStream,
        &headers,
        alto::EVENT_STREAM,
        Some(alto::UPDATE_STREAM_PARAMS),
    ) {
        return r;
    }
    let req = match UpdateStreamRequest::parse(&body) {
        Ok(r) => r,
        Err(e) => return error_response(&alto, &e),
    };
    // §6.6: no "add" is E_MISSING_FIELD "add".
    if req.add.is_empty() {
        return error_response(&alto, &AltoError::missing("add"));
    }
    let adds = match resolve(&req) {
        Ok(a) => a,
        Err(e) => return error_response(&alto, &e),
    };
    let token = format!("{:032x}", rand::rng().random::<u128>());
    let (events, rx) = mpsc::channel::<Event>(64);
    let (ctl_tx, ctl_rx) = mpsc::channel::<ControlRequest>(8);
    lock(&alto.streams.control).insert(token.clone(), ctl_tx);
    let maps = alto.maps();
    let mut subs = Vec::new();
    let mut initial = Vec::new();
    for (sid, followed, a) in adds {
        let doc = followed.document(&maps);
        // §6.5: a client whose tag is current may be spared the first full replacement.
        let current = doc["meta"]["vtag"]["tag"].as_str();
        if a.tag.is_none() || a.tag.as_deref() != current {
            initial.push(event(format!("{},{sid}", followed.media()), &doc));
        }
        subs.push(Substream {
            id: sid,
            followed,
            incremental: a.incremental_changes,
            last: doc,
        });
    }
    alto.counters.stream(true);
    let control_uri = format!("{}/updates/control/{token}", super::BASE);
    let task = StreamTask {
        alto: alto.clone(),
        token,
        subs,
        used: HashSet::new(),
        events,
    };
    tokio::spawn(task.run(control_uri, initial, ctl_rx));
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|e| (Ok::<_, Infallible>(e), rx))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

struct StreamTask {
    alto: Arc<Alto>,
    token: String,
    subs: Vec<Substream>,
    /// Every substream-id ever added (RFC 8895 §7.5: never reused).
    used: HashSet<String>,
    events: mpsc::Sender<Event>,
}

impl StreamTask {
    async fn send(&self, e: Event, kind: EventKind) -> bool {
        self.alto.counters.event(kind);
        self.events.send(e).await.is_ok()
    }

    async fn run(
        mut self,
        control_uri: String,
        initial: Vec<Event>,
        mut control: mpsc::Receiver<ControlRequest>,
    ) {
        self.used = self.subs.iter().map(|s| s.id.clone()).collect();
        let mut latest = self.alto.streams.latest.subscribe();
        latest.mark_unchanged();
        // §6.7.1: the control URI first.
        let mut alive = self
            .send(
                event(
                    alto::UPDATE_STREAM_CONTROL.into(),
                    &json!({ "control-uri": control_uri }),
                ),
                EventKind::Control,
            )
            .await;
        for e in initial {
            alive = alive && self.send(e, EventKind::Full).await;
        }
        // The maps may have moved on between the first documents and the subscription.
        let now = self.alto.maps();
        alive = alive && self.update(&now).await;
        while alive {
            tokio::select! {
                changed = latest.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    let maps = latest.borrow_and_update().clone();
                    if let Some(maps) = maps {
                        alive = self.update(&maps).await;
                    }
                }
                Some(c) = control.recv() => {
                    let (result, go_on) = self.control(c.req).await;
                    let _ = c.ack.send(result);
                    alive = go_on;
                }
                _ = self.events.closed() => break,
            }
        }
        lock(&self.alto.streams.control).remove(&self.token);
        self.alto.counters.stream(false);
    }

    /// Send what changed in `maps`, network map first (§6.7.1). False when the client left.
    async fn update(&mut self, maps: &AltoMaps) -> bool {
        self.subs
            .sort_by_key(|s| matches!(s.followed, Followed::CostMap(_)));
        for i in 0..self.subs.len() {
            let (ev, kind) = {
                let s = &mut self.subs[i];
                let doc = s.followed.document(maps);
                let Some(p) = patch::diff(&s.last, &doc) else {
                    continue;
                };
                let ev = if s.incremental {
                    (
                        event(format!("{},{}", alto::MERGE_PATCH, s.id), &p),
                        EventKind::MergePatch,
                    )
                } else {
                    (
                        event(format!("{},{}", s.followed.media(), s.id), &doc),
                        EventKind::Full,
                    )
                };
                s.last = doc;
                ev
            };
            if !self.send(ev, kind).await {
                return false;
            }
        }
        true
    }

    /// A stream control request (RFC 8895 §7.5, §7.6): the answer, and whether the stream
    /// goes on.
    async fn control(&mut self, req: UpdateStreamRequest) -> (Result<(), AltoError>, bool) {
        let adds = match resolve(&req) {
            Ok(a) => a,
            Err(e) => return (Err(e), true),
        };
        let reused: Vec<&str> = adds
            .iter()
            .filter(|(sid, _, _)| self.used.contains(sid))
            .map(|(sid, _, _)| sid.as_str())
            .collect();
        if !reused.is_empty() {
            return (Err(AltoError::bad_value("add", &json!(reused))), true);
        }
        let remove = req.remove.clone();
        if let Some(r) = &remove {
            if r.is_empty() && !adds.is_empty() {
                return (Err(AltoError::bad_value("remove", &json!([]))), true);
            }
            let unknown: Vec<&str> = r
                .iter()
                .filter(|sid| !self.used.contains(*sid))
                .map(String::as_str)
                .collect();
            if !unknown.is_empty() {
                return (Err(AltoError::bad_value("remove", &json!(unknown))), true);
            }
        }
        // §7.6: "add" before "remove".
        let maps = self.alto.maps();
        let mut started = Vec::new();
        let mut fulls = Vec::new();
        for (sid, followed, a) in adds {
            let doc = followed.document(&maps);
            fulls.push(event(format!("{},{sid}", followed.media()), &doc));
            self.used.insert(sid.clone());
            started.push(sid.clone());
            self.subs.push(Substream {
                id: sid,
                followed,
                incremental: a.incremental_changes,
                last: doc,
            });
        }
        let mut alive = true;
        if !started.is_empty() {
            alive = self
                .send(
                    event(
                        alto::UPDATE_STREAM_CONTROL.into(),
                        &json!({ "started": started }),
                    ),
                    EventKind::Control,
                )
                .await;
            for e in fulls {
                alive = alive && self.send(e, EventKind::Full).await;
            }
        }
        if let Some(r) = remove {
            let stopped: Vec<String> = self
                .subs
                .iter()
                .filter(|s| r.is_empty() || r.contains(&s.id))
                .map(|s| s.id.clone())
                .collect();
            self.subs.retain(|s| !stopped.contains(&s.id));
            if !stopped.is_empty() {
                let mut msg = json!({ "stopped": stopped });
                if self.subs.is_empty() {
                    msg["description"] = json!("no resources left: the stream closes");
                }
                alive = alive
                    && self
                        .send(
                            event(alto::UPDATE_STREAM_CONTROL.into(), &msg),
                            EventKind::Control,
                        )
                        .await;
            }
        }
        // §7.6: a stream with no resources left closes.
        (Ok(()), alive && !self.subs.is_empty())
    }
}

/// `POST /alto/updates/control/<token>`: add or remove substreams of an open stream.
pub(crate) async fn control(
    State(alto): State<Arc<Alto>>,
    Path(token): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    alto.counters.request(Resource::UpdateStream);
    if !super::content_type_is(&headers, alto::UPDATE_STREAM_PARAMS) {
        alto.counters.refused(Refusal::UnsupportedMediaType);
        let e = AltoError::syntax(format!(
            "the request body must be {}",
            alto::UPDATE_STREAM_PARAMS
        ));
        let mut r = super::json_response(alto::ERROR_MEDIA_TYPE, &e.to_json());
        *r.status_mut() = StatusCode::UNSUPPORTED_MEDIA_TYPE;
        return r;
    }
    let sender = lock(&alto.streams.control).get(&token).cloned();
    let Some(sender) = sender else {
        alto.counters.refused(Refusal::StreamControlUnknown);
        return (StatusCode::NOT_FOUND, "no such update stream\n").into_response();
    };
    let req = match UpdateStreamRequest::parse(&body) {
        Ok(r) => r,
        Err(e) => return error_response(&alto, &e),
    };
    let (ack, answer) = oneshot::channel();
    if sender.send(ControlRequest { req, ack }).await.is_err() {
        return (StatusCode::NOT_FOUND, "the update stream has closed\n").into_response();
    }
    match answer.await {
        Ok(Ok(())) => StatusCode::NO_CONTENT.into_response(),
        Ok(Err(e)) => error_response(&alto, &e),
        Err(_) => (StatusCode::NOT_FOUND, "the update stream has closed\n").into_response(),
    }
}
