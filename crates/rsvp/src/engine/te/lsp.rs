//! The head end and the egress of LSPs (RFC 3209 §2.2, §4.1.1): LSPs opened by name towards a
//! tunnel end point, re-routed make-before-break, closed; the egress reserving on its own; and
//! the views `show lsp` prints.

use super::PsbTe;
use crate::engine::api::ApiError;
use crate::engine::resv::ResvRequest;
use crate::engine::state::{PsbId, RsbId, SessionId};
use crate::engine::{Event, RsvpEngine, TrafficControl};
use crate::few::Few;
use crate::wire::te::{
    ExplicitRoute, GeneralizedLabelRequest, LabelRequest, RecordRoute, SessionAttribute,
    lsp_encoding, switching,
};
use crate::wire::{
    ErrorSpec, FilterSpec, FlowDescriptor, FlowSpec, SenderDescriptor, SenderTspec, Session, Style,
    StyleKind, TokenBucket,
};
use pathwise_core::mpls::NextHop;
use pathwise_core::time::Instant;
use smallvec::SmallVec;
use std::net::IpAddr;

pub use crate::wire::error_code::api::LSP_SETUP_TIMED_OUT;

/// An LSP as its head end is asked to set it up.
#[derive(Clone, Debug, PartialEq)]
pub struct LspSpec {
    /// Its name (SESSION_ATTRIBUTE Session Name, at most 255 bytes).
    pub name: String,
    /// The tunnel end point (the egress).
    pub to: IpAddr,
    /// The head end's address (sender and Extended Tunnel ID); `None`: the address of the
    /// interface towards `to`.
    pub from: Option<IpAddr>,
    /// Explicit route, first hop after the head end first; `None`: follow routing.
    pub ero: Option<ExplicitRoute>,
    /// Bandwidth to reserve, bits per second.
    pub bandwidth_bps: u64,
    /// Setup priority, 0 (highest) to 7.
    pub setup_priority: u8,
    /// Holding priority, 0 (highest) to 7; not below the setup priority.
    pub hold_priority: u8,
    /// Ask for the route to be recorded (RECORD_ROUTE).
    pub record_route: bool,
    /// Ask for labels to be recorded too.
    pub label_recording: bool,
    /// Signal the LSP in the GMPLS flavour (RFC 3473): a Generalized LABEL_REQUEST (§2.1)
    /// with these parameters, answered with Generalized LABELs (§2.3). `None`: RFC 3209's
    /// LABEL_REQUEST.
    pub gmpls: Option<GmplsRequest>,
}

impl LspSpec {
    /// An LSP named `name` to `to` reserving `bandwidth_bps`, following routing from the
    /// interface towards `to`, with the route recorded and RFC 3209's LABEL_REQUEST; setup
    /// priority 7 (the lowest: it preempts nothing) and holding priority 0 (the highest: it
    /// cannot be preempted), the setup priority not higher than the holding one as RFC 3209
    /// §4.7.3 asks.
    pub fn new(name: impl Into<String>, to: IpAddr, bandwidth_bps: u64) -> Self {
        LspSpec {
            name: name.into(),
            to,
            from: None,
            ero: None,
            bandwidth_bps,
            setup_priority: 7,
            hold_priority: 0,
            record_route: true,
            label_recording: false,
            gmpls: None,
        }
    }
}

/// What a GMPLS LSP asks for (RFC 3471 §3.1.1), sent in its Generalized LABEL_REQUEST.
/// [`GmplsRequest::default`] is what an MPLS LSR carries: a packet LSP over PSC-1 links with
/// the G-PID of the tunnel's address family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct GmplsRequest {
    /// LSP Encoding Type ([`lsp_encoding`]); `None`: Packet.
    pub encoding: Option<u8>,
    /// Switching Type ([`switching`]); `None`: PSC-1.
    pub switching: Option<u8>,
    /// G-PID, an Ethertype for packet LSPs; `None`: IPv4 (0x0800) or IPv6 (0x86dd) by the
    /// family of the tunnel end point.
    pub gpid: Option<u16>,
}

impl GmplsRequest {
    /// The Generalized LABEL_REQUEST for an LSP to `to` (RFC 3473 §2.1).
    pub fn label_request(&self, to: IpAddr) -> LabelRequest {
        LabelRequest::generalized_request(
            GeneralizedLabelRequest {
                encoding: self.encoding.unwrap_or(lsp_encoding::PACKET),
                switching: self.switching.unwrap_or(switching::PSC_1),
            },
            self.gpid.unwrap_or_else(|| l3pid_for(to)),
        )
    }
}

/// Where an LSP stands at this node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LspStatus {
    /// Path sent; no label from downstream yet.
    Signalling,
    /// Labels bound through this node.
    Up,
    /// The head end was told of an error and gave the LSP up.
    Failed(ErrorSpec),
}

/// This node's part in an LSP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LspRole {
    /// It starts here.
    HeadEnd,
    /// It passes through.
    Transit,
    /// It ends here.
    Egress,
}

/// One LSP at this node.
#[derive(Clone, Debug, PartialEq)]
pub struct LspView {
    /// Its name (the SESSION_ATTRIBUTE's, or the configured one at the head end).
    pub name: String,
    /// This node's part.
    pub role: LspRole,
    /// Its session (tunnel end point, tunnel id, head end).
    pub session: Session,
    /// Its sender (head end and LSP id); for a head-end LSP that failed, the one that did.
    pub sender: Option<FilterSpec>,
    /// Where it stands.
    pub status: LspStatus,
    /// The label this node gave upstream.
    pub in_label: Option<u32>,
    /// The label downstream gave, and where downstream is.
    pub out: Option<(u32, NextHop)>,
    /// The explicit route passed on.
    pub ero: Option<ExplicitRoute>,
    /// The route recorded in the Resv that reached this node (head end: the whole LSP).
    pub record_route: Option<RecordRoute>,
    /// Bandwidth, bits per second.
    pub bandwidth_bps: u64,
    /// Setup and holding priority.
    pub priorities: (u8, u8),
    /// The GMPLS flavour (RFC 3473 §2.1): the encoding and switching types of its Generalized
    /// LABEL_REQUEST, whose G-PID is `l3pid`; `None` for an RFC 3209 LSP.
    pub gmpls: Option<GeneralizedLabelRequest>,
    /// The L3PID (RFC 3209 §4.2) or, in the GMPLS flavour, the G-PID it asked for.
    pub l3pid: u16,
}

/// An LSP configured at this head end.
#[derive(Clone, Debug)]
pub(crate) struct HeadEnd {
    spec: LspSpec,
    session: Session,
    lsp_id: u16,
    failed: Option<ErrorSpec>,
    /// Consecutive setup timeouts (see `Config::lsp_setup_timeout`); 0 once the LSP is up.
    timeouts: u32,
    /// When the head end tries again after a setup timeout.
    retry_at: Option<Instant>,
}

/// Ethertype of the layer 3 protocol an LSP to `to` carries.
fn l3pid_for(to: IpAddr) -> u16 {
    if to.is_ipv4() { 0x0800 } else { 0x86dd }
}

fn lsp_sender(from: IpAddr, lsp_id: u16) -> FilterSpec {
    match from {
        IpAddr::V4(src) => FilterSpec::LspTunnelV4 { src, lsp_id },
        IpAddr::V6(src) => FilterSpec::LspTunnelV6 { src, lsp_id },
    }
}

impl<T: TrafficControl> RsvpEngine<T> {
    /// Set up an LSP (or change one): Path goes out at once along the explicit route or the
    /// routed path. Opening a name again with another route, bandwidth or priority signals a
    /// new LSP of the same tunnel (a new LSP ID) with shared-explicit style, so the two share
    /// their common links; the tunnel's traffic moves to the new LSP when its labels are bound
    /// and the old LSP is torn down then — make-before-break (§2.5, §4.6.4). Opening a failed
    /// LSP again retries it.
    pub fn open_lsp(&mut self, now: Instant, spec: LspSpec) -> Result<(), ApiError> {
        self.signal_lsp(now, spec, 0)
    }

    /// [`Self::open_lsp`], after `timeouts` consecutive setup timeouts.
    fn signal_lsp(&mut self, now: Instant, spec: LspSpec, timeouts: u32) -> Result<(), ApiError> {
        self.now = now;
        if spec.name.is_empty() || spec.name.len() > SessionAttribute::MAX_NAME_LEN {
            return Err(ApiError::BadRequest("an LSP name has 1 to 255 bytes"));
        }
        if spec.setup_priority > 7 || spec.hold_priority > 7 {
            return Err(ApiError::BadRequest("priorities go from 0 to 7"));
        }
        if spec.hold_priority > spec.setup_priority {
            // §4.7.1: "the holding priority SHOULD NOT be lower than the setup priority".
            return Err(ApiError::BadRequest(
                "the holding priority must not be lower (numerically greater) than the setup priority",
            ));
        }
        if let Some(g) = spec.gmpls {
            // RFC 3473 §2.1.1: what the transit nodes would refuse, refused here first — this
            // node switches packet LSPs on PSC links only.
            let probe = PsbTe::new(g.label_request(spec.to), None, None, None);
            if probe.generalized_refusal().is_some() {
                return Err(ApiError::BadRequest(
                    "a GMPLS LSP here has encoding Packet (1) and a PSC switching type (1-4)",
                ));
            }
        }
        let from = spec.from.unwrap_or_else(|| self.iface_addr(None, spec.to));
        if !self.is_local(from) || from.is_ipv4() != spec.to.is_ipv4() {
            return Err(ApiError::NotLocal(from));
        }
        let existing = self.lsps.iter().position(|h| h.spec.name == spec.name);
        let (session, lsp_id) = match existing {
            Some(i) if self.lsps[i].spec == spec && self.lsps[i].failed.is_none() => {
                return Ok(());
            }
            Some(i)
                if self.lsps[i].session.dest == spec.to
                    && self.lsps[i].session.extended_tunnel_id == Some(from) =>
            {
                let h = &self.lsps[i];
                (h.session, h.lsp_id.wrapping_add(1).max(1))
            }
            Some(_) => {
                self.close_lsp(now, &spec.name)?;
                (self.new_tunnel(spec.to, from)?, 1)
            }
            None => (self.new_tunnel(spec.to, from)?, 1),
        };
        let sender = lsp_sender(from, lsp_id);
        let mut flags = SessionAttribute::SE_STYLE_DESIRED;
        if spec.label_recording {
            flags |= SessionAttribute::LABEL_RECORDING_DESIRED;
        }
        let label_request = match spec.gmpls {
            None => LabelRequest {
                l3pid: l3pid_for(spec.to),
                range: None,
            },
            Some(g) => g.label_request(spec.to),
        };
        let mut te = PsbTe::new(
            label_request,
            Some(SessionAttribute {
                affinities: None,
                setup_priority: spec.setup_priority,
                holding_priority: spec.hold_priority,
                flags,
                name: spec.name.as_bytes().to_vec(),
            }),
            spec.ero.clone(),
            spec.record_route.then(|| RecordRoute {
                subobjects: Vec::new(),
            }),
        );
        self.te_seq += 1;
        te.seq = self.te_seq;
        let timeout = self
            .cfg
            .lsp_setup_timeout
            .unwrap_or_else(|| self.lifetime(self.refresh_ms()));
        te.setup_by = Some(now + timeout);
        // Bytes per second; the bucket holds a tenth of a second's worth.
        let rate = spec.bandwidth_bps as f32 / 8.0;
        let tspec = SenderTspec(TokenBucket {
            rate,
            bucket: (rate / 10.0).max(1500.0),
            peak: f32::INFINITY,
            min_policed: 0,
            max_packet: 1500,
        });
        // A refused LSP leaves the head end as it was: a new name unknown, a running LSP on
        // its old route and specification.
        self.add_local_sender(now, session, sender, tspec, Some(te))?;
        let entry = HeadEnd {
            spec,
            session,
            lsp_id,
            failed: None,
            timeouts,
            retry_at: None,
        };
        match self
            .lsps
            .iter()
            .position(|h| h.spec.name == entry.spec.name)
        {
            Some(i) => self.lsps[i] = entry,
            None => self.lsps.push(entry),
        }
        Ok(())
    }

    /// The session's timer fired: a head-end LSP still without a label from downstream at its
    /// setup deadline is given up (see `Config::lsp_setup_timeout`): the application hears
    /// [`Event::PathError`] with error 20 / [`LSP_SETUP_TIMED_OUT`], the LSP view shows it
    /// failed with that error, PathTear clears what the Path left downstream, and a retry is
    /// set after the back-off of `Config::lsp_retry`. An LSP that came up has its deadline and
    /// its timeout count cleared.
    pub(crate) fn check_lsp_setup(&mut self, now: Instant, sid: SessionId) {
        let heads: SmallVec<[PsbId; 2]> = self
            .psbs_of(sid)
            .filter(|&p| self.psbs[p].phop().is_none())
            .filter(|&p| self.psbs[p].te().is_some_and(|t| t.setup_by.is_some()))
            .collect();
        let session = self.session_key(sid);
        for p in heads {
            let sender = self.psbs[p].sender;
            let te = self.psbs[p].te_mut().expect("filtered on te");
            let (up, due) = (te.out.is_some(), te.setup_by.is_some_and(|t| t <= now));
            if up {
                te.setup_by = None;
                if let Some(h) = self.head_end_of(session, sender) {
                    h.timeouts = 0;
                }
                continue;
            }
            if !due {
                continue;
            }
            te.setup_by = None;
            let node = self.iface_addr(self.psbs[p].oifs.first().copied().flatten(), session.dest);
            let error = ErrorSpec {
                node,
                flags: 0,
                code: crate::wire::error_code::API_ERROR,
                value: LSP_SETUP_TIMED_OUT,
            };
            self.events.push_back(Event::PathError {
                session,
                sender: Some(sender),
                error,
            });
            let retry = self.cfg.lsp_retry;
            if let Some(h) = self.head_end_of(session, sender) {
                h.failed = Some(error);
                h.timeouts = h.timeouts.saturating_add(1);
                let n = h.timeouts;
                let more = retry.attempts.is_none_or(|limit| n < limit);
                h.retry_at = more.then(|| now + retry.backoff(n));
                tracing::warn!(
                    lsp = %h.spec.name,
                    timeouts = n,
                    retry_in_ms = h.retry_at.map(|t| (t - now).as_millis() as u64),
                    "lsp setup timed out"
                );
                if let Some(at) = h.retry_at {
                    let name = h.spec.name.clone();
                    self.lsp_retries.push(std::cmp::Reverse((at, name)));
                }
            }
            self.counters.lsp_setup_timeouts += 1;
            self.superseded.push((session, sender));
        }
    }

    /// The configured LSP this head-end sender belongs to.
    fn head_end_of(&mut self, session: Session, sender: FilterSpec) -> Option<&mut HeadEnd> {
        self.lsps
            .iter_mut()
            .find(|h| h.session == session && lsp_sender(sender.src(), h.lsp_id) == sender)
    }

    /// Try again the LSPs whose back-off after a setup timeout ran out.
    pub(crate) fn on_lsp_retries(&mut self, now: Instant) {
        while let Some(std::cmp::Reverse((at, _))) = self.lsp_retries.peek()
            && *at <= now
        {
            let Some(std::cmp::Reverse((at, name))) = self.lsp_retries.pop() else {
                break;
            };
            // Only if nothing happened to the LSP meanwhile (reopened, closed, retried).
            let Some(h) = self
                .lsps
                .iter()
                .find(|h| h.spec.name == name && h.retry_at == Some(at) && h.failed.is_some())
            else {
                continue;
            };
            let (spec, timeouts) = (h.spec.clone(), h.timeouts);
            if let Err(e) = self.signal_lsp(now, spec, timeouts) {
                // The route is gone too: keep the failure and try again later.
                tracing::warn!(lsp = %name, error = %e, "lsp retry refused");
                let retry = self.cfg.lsp_retry;
                if let Some(h) = self.lsps.iter_mut().find(|h| h.spec.name == name) {
                    h.timeouts = h.timeouts.saturating_add(1);
                    let next = now + retry.backoff(h.timeouts);
                    h.retry_at = Some(next);
                    self.lsp_retries.push(std::cmp::Reverse((next, name)));
                }
            }
        }
    }

    /// A tunnel id not in use towards `to` from `from` (RFC 3209 §4.6.1.1: the Tunnel ID
    /// "remains constant over the life of the tunnel"), and, in a sharded node, one whose
    /// session this shard holds: the other shards pick the others, so no two pick the same.
    fn new_tunnel(&mut self, to: IpAddr, from: IpAddr) -> Result<Session, ApiError> {
        for _ in 0..u16::MAX {
            self.next_tunnel_id = self.next_tunnel_id.wrapping_add(1).max(1);
            let s = Session::lsp_tunnel(to, self.next_tunnel_id, from);
            if self.find_session(&s).is_none()
                && self.cfg.shard.as_ref().is_none_or(|o| o.holds(&s))
            {
                return Ok(s);
            }
        }
        Err(ApiError::BadRequest(
            "every Tunnel ID towards this end point is in use",
        ))
    }

    /// Tear an LSP down (PathTear) and forget it.
    pub fn close_lsp(&mut self, now: Instant, name: &str) -> Result<(), ApiError> {
        self.now = now;
        let i = self
            .lsps
            .iter()
            .position(|h| h.spec.name == name)
            .ok_or(ApiError::Unknown)?;
        let h = self.lsps.remove(i);
        if let Some(sid) = self.find_session(&h.session) {
            let heads: SmallVec<[PsbId; 2]> = self
                .psbs_of(sid)
                .filter(|&p| self.psbs[p].phop().is_none())
                .collect();
            for p in heads {
                self.remove_psb(p, true);
            }
            self.after_path_removal(sid);
        }
        self.flush_pending();
        Ok(())
    }

    /// A PathErr about an LSP towards its head end, or, at the head end, the error taken.
    pub(crate) fn path_err_upstream(&mut self, p: PsbId, code: u8, value: u16) {
        let psb = &self.psbs[p];
        let session = self.session_key(psb.session);
        let sender = SenderDescriptor {
            template: psb.sender,
            tspec: *self.tspecs.get(psb.tspec),
            adspec: None,
            record_route: None,
        };
        match psb
            .phop()
            .map(|ph| (self.phops[ph].hop.addr, self.phops[ph].ifindex))
        {
            Some((addr, ifindex)) => {
                self.send_path_err_raw(session, addr, ifindex, code, value, Some(sender))
            }
            None => {
                let node = self.iface_addr(psb.oifs.first().copied().flatten(), session.dest);
                self.head_end_error(
                    p,
                    ErrorSpec {
                        node,
                        flags: 0,
                        code,
                        value,
                    },
                );
            }
        }
    }

    /// A PathErr reached the head end of an LSP: the application hears of it, and an LSP the
    /// network cannot carry (a routing problem, §4.5, or preemption) is given up and torn down.
    pub(crate) fn head_end_error(&mut self, p: PsbId, error: ErrorSpec) {
        let sid = self.psbs[p].session;
        let session = self.session_key(sid);
        let sender = self.psbs[p].sender;
        self.events.push_back(Event::PathError {
            session,
            sender: Some(sender),
            error,
        });
        use crate::wire::error::error_code::{ROUTING_PROBLEM, SERVICE_PREEMPTED, routing};
        // A non-RSVP router on the way is waited out: the LSP binds once the Path crosses
        // RSVP nodes only (every refresh tries).
        let fatal = match error.code {
            ROUTING_PROBLEM => error.value != routing::NON_RSVP_CAPABLE_ROUTER,
            SERVICE_PREEMPTED => true,
            _ => false,
        };
        if self.psbs[p].te().is_none() || !fatal {
            return;
        }
        if let Some(h) = self
            .lsps
            .iter_mut()
            .find(|h| h.session == session && lsp_sender(sender.src(), h.lsp_id) == sender)
        {
            h.failed = Some(error);
        }
        self.superseded.push((session, sender));
    }

    /// At an egress, answer the LSPs that end here with a reservation of their own bandwidth
    /// (§4.1.1.1: the egress allocates the label and sends Resv): shared-explicit when the head
    /// end asked for it, fixed-filter otherwise.
    pub(crate) fn egress_reserve(&mut self, sid: SessionId) {
        let ends: SmallVec<[PsbId; 2]> = self
            .psbs_of(sid)
            .filter(|&p| self.psbs[p].te().is_some() && self.psbs[p].oifs.contains(&None))
            .collect();
        let Some(&first) = ends.first() else { return };
        let se = ends.iter().any(|&p| {
            self.psbs[p]
                .te()
                .is_some_and(|t| t.has_flag(SessionAttribute::SE_STYLE_DESIRED))
        });
        let fs = |p: PsbId| FlowSpec::ControlledLoad(self.tspec(p).0);
        let (kind, flows) = if se {
            let merged = ends
                .iter()
                .map(|&p| fs(p))
                .fold(fs(first), |a, b| crate::engine::merge::lub(&a, &b));
            let filters: Few<_> = ends.iter().map(|&p| self.psbs[p].sender).collect();
            (
                StyleKind::Se,
                Few::One(FlowDescriptor::new(Some(merged), filters)),
            )
        } else {
            let flows = ends
                .iter()
                .map(|&p| FlowDescriptor::new(Some(fs(p)), Few::One(self.psbs[p].sender)))
                .collect();
            (StyleKind::Ff, flows)
        };
        // A request of the other style (the head end changed its mind) is replaced.
        let stale: SmallVec<[RsbId; 2]> = self
            .rsbs_of(sid)
            .filter(|&r| self.rsbs[r].nhop().is_none() && self.rsbs[r].style().kind() != kind)
            .collect();
        for r in stale {
            self.remove_rsb(sid, r);
        }
        let req = ResvRequest {
            nhop: None,
            oi: None,
            style: Style { flags: 0, kind },
            flows,
            confirm: None,
            scope: None,
            carried: Vec::new(),
            lifetime: None,
        };
        let now = self.now;
        for _ in self.process_resv(now, sid, &req) {
            self.drop_msg("egress_reservation_refused");
        }
    }

    /// Tear down LSPs a newer LSP of their tunnel replaced, or that failed.
    pub(crate) fn tear_superseded(&mut self) {
        while let Some((session, sender)) = self.superseded.pop() {
            let Some(sid) = self.find_session(&session) else {
                continue;
            };
            if let Some(p) = self
                .find_psb(sid, &sender)
                .filter(|&p| self.psbs[p].phop().is_none())
            {
                self.remove_psb(p, true);
                self.after_path_removal(sid);
            }
        }
    }

    /// Every LSP at this node: those it heads (failed ones included), carries and ends.
    pub fn lsps(&self) -> Vec<LspView> {
        let mut out = Vec::new();
        for (sid, _) in self.sessions.iter() {
            if !self.is_lsp_session(sid) {
                continue;
            }
            let session = self.session_key(sid);
            for p in self.psbs_of(sid) {
                let psb = &self.psbs[p];
                let Some(te) = psb.te() else {
                    continue;
                };
                let role = if psb.phop().is_none() {
                    LspRole::HeadEnd
                } else if psb.oifs.contains(&None) {
                    LspRole::Egress
                } else {
                    LspRole::Transit
                };
                let up = match role {
                    LspRole::HeadEnd => te.out.is_some(),
                    LspRole::Transit => te.out.is_some() && te.in_label.is_some(),
                    LspRole::Egress => te.in_label.is_some(),
                };
                let record_route = match role {
                    LspRole::Egress => None,
                    _ if te.sent_up.is_some() => self.upstream_record_route(p),
                    _ => None,
                };
                let name = self
                    .lsps
                    .iter()
                    .find(|h| h.session == session && role == LspRole::HeadEnd)
                    .map(|h| h.spec.name.clone())
                    .or_else(|| {
                        te.session_attribute
                            .as_ref()
                            .map(|a| String::from_utf8_lossy(&a.name).into_owned())
                    })
                    .unwrap_or_default();
                out.push(LspView {
                    name,
                    role,
                    session,
                    sender: Some(psb.sender),
                    status: if up {
                        LspStatus::Up
                    } else {
                        LspStatus::Signalling
                    },
                    in_label: te.in_label.filter(|_| role != LspRole::HeadEnd),
                    out: te.out,
                    ero: te.ero_out.clone(),
                    record_route: record_route.or_else(|| {
                        (role == LspRole::HeadEnd)
                            .then(|| self.downstream_binding(p).and_then(|b| b.rro))
                            .flatten()
                    }),
                    bandwidth_bps: (f64::from(self.tspecs.get(psb.tspec).0.rate) * 8.0).round()
                        as u64,
                    priorities: (te.setup_priority(), te.holding_priority()),
                    gmpls: te.label_request.generalized(),
                    l3pid: te.label_request.l3pid,
                });
            }
        }
        for h in self.lsps.iter().filter(|h| h.failed.is_some()) {
            let live = out
                .iter()
                .any(|v| v.session == h.session && v.role == LspRole::HeadEnd);
            if !live {
                let from = h.session.extended_tunnel_id.unwrap_or(h.session.dest);
                out.push(LspView {
                    name: h.spec.name.clone(),
                    role: LspRole::HeadEnd,
                    session: h.session,
                    sender: Some(lsp_sender(from, h.lsp_id)),
                    status: LspStatus::Failed(h.failed.unwrap()),
                    in_label: None,
                    out: None,
                    ero: h.spec.ero.clone(),
                    record_route: None,
                    bandwidth_bps: h.spec.bandwidth_bps,
                    priorities: (h.spec.setup_priority, h.spec.hold_priority),
                    gmpls: h
                        .spec
                        .gmpls
                        .and_then(|g| g.label_request(h.session.dest).generalized()),
                    l3pid: h.spec.gmpls.map_or(l3pid_for(h.session.dest), |g| {
                        g.label_request(h.session.dest).l3pid
                    }),
                });
            }
        }
        out.sort_by(|a, b| {
            (&a.name, a.sender.map(|s| s.src())).cmp(&(&b.name, b.sender.map(|s| s.src())))
        });
        out
    }

    /// How many LSPs [`RsvpEngine::lsps`] lists, without building their views (for counters).
    pub fn lsp_count(&self) -> usize {
        let heads_end_here = |session: &Session| {
            self.find_session(session).is_some_and(|sid| {
                self.psbs_of(sid)
                    .any(|p| self.psbs[p].phop().is_none() && self.psbs[p].te().is_some())
            })
        };
        let live = self.te_psbs;
        // Every test and simulation campaign asks for the count; there the walk checks it.
        debug_assert_eq!(
            live,
            self.psbs.iter().filter(|(_, p)| p.te().is_some()).count(),
            "PSBs with RSVP-TE state, as counted"
        );
        let failed = self
            .lsps
            .iter()
            .filter(|h| h.failed.is_some() && !heads_end_here(&h.session))
            .count();
        live + failed
    }

    /// The label-forwarding table: incoming-label entries and ingress bindings.
    pub fn lfib(&self) -> &pathwise_core::mpls::MemoryLfib {
        &self.lfib
    }

    /// Labels this node has allocated.
    pub fn labels_in_use(&self) -> usize {
        self.labels.in_use()
    }
}
