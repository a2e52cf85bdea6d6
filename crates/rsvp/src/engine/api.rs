//! The end-host API, in the spirit of RAPI (RFC 2205 §3.11): applications register senders and
//! request reservations through methods on [`super::RsvpEngine`], and hear back through
//! [`Event`]s drained with `poll_event`.

use crate::few::Few;
use crate::wire::{Adspec, ErrorSpec, FilterSpec, FlowDescriptor, FlowSpec, SenderTspec, Session};
use std::net::IpAddr;

/// An upcall to local applications.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// Path state for a sender arrived or changed at a receiver (RAPI PATH_EVENT).
    PathState {
        /// The session.
        session: Session,
        /// The sender.
        sender: FilterSpec,
        /// Its traffic.
        tspec: SenderTspec,
        /// What the path offers (ADSPEC), if the sender asked for one.
        adspec: Option<Box<Adspec>>,
    },
    /// Path state for a sender is gone at a receiver (teardown or timeout).
    PathGone {
        /// The session.
        session: Session,
        /// The sender.
        sender: FilterSpec,
    },
    /// The reservation serving a local sender was established or changed (RAPI RESV_EVENT);
    /// `flowspec` is `None` when it went away.
    ResvState {
        /// The session.
        session: Session,
        /// The local sender.
        sender: FilterSpec,
        /// The merged reservation that reached the sender.
        flowspec: Option<FlowSpec>,
    },
    /// A PathErr reached a local sender (RAPI PATH_ERROR).
    PathError {
        /// The session.
        session: Session,
        /// The sender in error.
        sender: Option<FilterSpec>,
        /// What went wrong, and where.
        error: ErrorSpec,
    },
    /// A ResvErr reached a local receiver (RAPI RESV_ERROR).
    ResvError {
        /// The session.
        session: Session,
        /// What went wrong, and where.
        error: ErrorSpec,
        /// The flow descriptor in error.
        flows: Few<FlowDescriptor>,
        /// The engine withdrew the receiver's request because it could not be admitted end to
        /// end (see [`super::Config::release_on_admission_failure`]).
        released: bool,
    },
    /// The label-forwarding table changed (RFC 3209 LSPs): the driver applies the change to its
    /// dataplane (`pathwise_core::mpls::LabelDataplane`); the engine's own table,
    /// [`super::RsvpEngine::lfib`], already has it.
    Lfib(pathwise_core::mpls::LfibChange),
    /// A ResvConf reached a local receiver (RAPI RESV_CONFIRM).
    Confirmed {
        /// The session.
        session: Session,
        /// The node that confirmed.
        from: IpAddr,
        /// The flow descriptors confirmed.
        flows: Few<FlowDescriptor>,
    },
}

/// A local receiver's reservation request, as the application made it (RAPI `rapi_reserve`).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct ReceiverRequest {
    pub style: StyleKind,
    pub flows: Few<FlowDescriptor>,
    pub confirm: bool,
}

/// Why an API call was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// No path state for the session. [`super::RsvpEngine::reserve`] no longer returns it (a
    /// request made before the Path is kept); kept for callers that match on it.
    #[error("no path state for this session")]
    NoPathState,
    /// The session or sender is not known.
    #[error("unknown session or sender")]
    Unknown,
    /// The request does not have the shape its style requires.
    #[error("malformed reservation request: {0}")]
    BadRequest(&'static str),
    /// The LSP cannot be routed from here: a Routing Problem value (RFC 3209 §4.5), e.g. 2
    /// "Bad strict node", 5 "No route available toward destination".
    #[error("the LSP cannot be routed (routing problem {0})")]
    Route(u16),
    /// The sender address is not one of this node's addresses.
    #[error("sender address {0} is not local")]
    NotLocal(IpAddr),
}

use super::resv::ResvRequest;
use super::state::{Psb, RsbId, SessionId};
use super::{RsvpEngine, TrafficControl};
use crate::wire::error::error_code;
use crate::wire::{Style, StyleKind};
use pathwise_core::time::Instant;
use smallvec::SmallVec;

impl<T: TrafficControl> RsvpEngine<T> {
    /// Register a local sender (RAPI `rapi_sender`): its Path goes out now and is refreshed
    /// until [`RsvpEngine::unregister_sender`]. Registering again updates the TSpec.
    pub fn register_sender(
        &mut self,
        now: Instant,
        session: Session,
        sender: FilterSpec,
        tspec: SenderTspec,
    ) -> Result<(), ApiError> {
        self.add_local_sender(now, session, sender, tspec, None)
    }

    /// Register a local sender, an LSP's head end with `te`.
    pub(super) fn add_local_sender(
        &mut self,
        now: Instant,
        session: Session,
        sender: FilterSpec,
        tspec: SenderTspec,
        te: Option<super::te::PsbTe>,
    ) -> Result<(), ApiError> {
        self.now = now;
        if !self.is_local(sender.src()) {
            return Err(ApiError::NotLocal(sender.src()));
        }
        let (oifs, ero_out) = match &te {
            Some(t) => self
                .lsp_oifs(&session, sender.src(), t, None)
                .map_err(ApiError::Route)?,
            None => (self.route_oifs(&session, sender.src(), None), None),
        };
        let sid = self
            .session_for(now, session)
            .map_err(|_| ApiError::BadRequest("conflicting destination ports"))?;
        let (id, changed) = match self.find_psb(sid, &sender) {
            Some(id) => {
                let changed = self.tspec(id) != tspec;
                Self::set_tspec(&mut self.tspecs, &mut self.psbs[id].tspec, tspec);
                (id, changed)
            }
            None => {
                let adspec = Some(self.intern_adspec(Adspec::new_at_sender(true, true)));
                let tspec = self.tspecs.acquire(tspec);
                let id = self.insert_psb(Psb {
                    session: sid,
                    next: None,
                    sender,
                    tspec,
                    adspec,
                    upstream: None,
                    oifs: super::state::Oifs::default(),
                    ttl: self.cfg.ttl,
                    non_rsvp: false,
                    expires: Instant::MAX,
                    ff_installed: None,
                    oiats: None,
                    sent: None,
                    extra: super::state::PsbExtra::with(te, None),
                });
                (id, true)
            }
        };
        if let Some(t) = self.psbs[id].te_mut() {
            t.ero_out = ero_out;
        }
        self.path_changed(id, oifs, changed);
        self.flush_pending();
        Ok(())
    }

    /// Withdraw a local sender: PathTear goes downstream and its state is removed.
    pub fn unregister_sender(
        &mut self,
        now: Instant,
        session: Session,
        sender: FilterSpec,
    ) -> Result<(), ApiError> {
        self.now = now;
        let sid = self.find_session(&session).ok_or(ApiError::Unknown)?;
        let id = self
            .find_psb(sid, &sender)
            .filter(|&id| self.psbs[id].phop().is_none())
            .ok_or(ApiError::Unknown)?;
        self.remove_psb(id, true);
        self.after_path_removal(sid);
        self.flush_pending();
        Ok(())
    }

    /// Request a reservation as a local receiver (RAPI `rapi_reserve`), replacing any earlier
    /// request of this receiver for the session. With `confirm`, a [`Event::Confirmed`] follows
    /// once the reservation is in place. Requests refused here (style conflicts, unknown
    /// senders, admission) come back as [`Event::ResvError`].
    ///
    /// The request is kept until [`RsvpEngine::release`], as RAPI keeps a receiver's
    /// reservation for the life of its session (RFC 2205 §3.11.1: the application makes the
    /// reserve call, path state comes and goes with PATH_EVENT upcalls): made before any Path
    /// arrived it is sent when path state appears, and when path state goes (PathTear,
    /// timeout) and comes back, it is sent again.
    pub fn reserve(
        &mut self,
        now: Instant,
        session: Session,
        style: StyleKind,
        flows: impl Into<Few<FlowDescriptor>>,
        confirm: bool,
    ) -> Result<(), ApiError> {
        self.now = now;
        let flows = flows.into();
        let shape_ok = match style {
            StyleKind::Wf => flows.len() == 1 && flows[0].filters.is_empty(),
            StyleKind::Se => flows.len() == 1 && !flows[0].filters.is_empty(),
            StyleKind::Ff => !flows.is_empty() && flows.iter().all(|f| f.filters.len() == 1),
            StyleKind::Other(_) => false,
        };
        if !shape_ok || flows.iter().any(|f| f.flowspec.is_none()) {
            return Err(ApiError::BadRequest(
                "flow descriptors do not fit the style",
            ));
        }
        self.receivers.insert(
            session.identity(),
            ReceiverRequest {
                style,
                flows,
                confirm,
            },
        );
        if let Some(sid) = self.find_session(&session) {
            self.apply_receiver_request(now, sid, true);
        }
        self.flush_pending();
        Ok(())
    }

    /// Whether this node is a receiver of the session: path state that ends here.
    fn has_local_path_state(&self, sid: SessionId) -> bool {
        self.psbs_of(sid).any(|p| self.psbs[p].oifs.contains(&None))
    }

    /// Install the local receiver's kept request for the session, if it has one and path state
    /// ends here. `report_missing_senders`: whether FF/SE filters naming senders without path
    /// state are reported (at the call; not when a Path arrives, since the request waits for
    /// the senders it names).
    pub(super) fn apply_receiver_request(
        &mut self,
        now: Instant,
        sid: SessionId,
        report_missing_senders: bool,
    ) {
        let session = self.session_key(sid);
        let Some(r) = self.receivers.get(&session.identity()) else {
            return;
        };
        if !self.has_local_path_state(sid) {
            return;
        }
        let (style, flows) = (r.style, r.flows.clone());
        let confirm = r.confirm;
        // A new request replaces the old one: requests it no longer makes go.
        let stale: SmallVec<[RsbId; 2]> = self
            .rsbs_of(sid)
            .filter(|&r| {
                let r = &self.rsbs[r];
                r.nhop().is_none()
                    && !(r.style().kind() == style
                        && flows
                            .iter()
                            .any(|f| f.filters.first() == r.filters().first()))
            })
            .collect();
        for r in stale {
            self.remove_rsb(sid, r);
        }
        let receiver = if self.is_local(session.dest) {
            session.dest
        } else {
            self.iface_addr(None, session.dest)
        };
        let req = ResvRequest {
            nhop: None,
            oi: None,
            style: Style {
                flags: 0,
                kind: style,
            },
            flows,
            confirm: confirm.then_some(crate::wire::ResvConfirm { receiver }),
            scope: None,
            carried: Vec::new(),
            lifetime: None,
        };
        for ((code, value), flow) in self.process_resv(now, sid, &req) {
            if code == error_code::NO_SENDER_INFORMATION && !report_missing_senders {
                continue;
            }
            let node = self.iface_addr(None, session.dest);
            self.events.push_back(Event::ResvError {
                session,
                error: ErrorSpec {
                    node,
                    flags: 0,
                    code,
                    value,
                },
                flows: Few::One(flow),
                released: false,
            });
        }
    }

    /// Withdraw this receiver's reservation for the session (ResvTear goes upstream) and
    /// forget its request.
    pub fn release(&mut self, now: Instant, session: Session) -> Result<(), ApiError> {
        self.now = now;
        let kept = self.receivers.remove(&session.identity()).is_some();
        let Some(sid) = self.find_session(&session) else {
            return if kept { Ok(()) } else { Err(ApiError::Unknown) };
        };
        let locals: SmallVec<[RsbId; 2]> = self
            .rsbs_of(sid)
            .filter(|&r| self.rsbs[r].nhop().is_none())
            .collect();
        if locals.is_empty() && !kept {
            return Err(ApiError::Unknown);
        }
        for r in locals {
            self.remove_rsb(sid, r);
        }
        self.update_reservations(sid);
        self.flush_pending();
        Ok(())
    }

    /// Reservation requests local receivers keep, for sessions with or without path state.
    pub fn receiver_requests(&self) -> usize {
        self.receivers.len()
    }

    /// Run the re-merges that were deferred while processing an input.
    pub(super) fn flush_pending(&mut self) {
        loop {
            self.tear_superseded();
            let Some(sid) = self.pending_updates.pop() else {
                break;
            };
            if self.sessions.contains(sid) {
                self.update_reservations(sid);
            }
        }
        self.flush_refresh();
    }
}
