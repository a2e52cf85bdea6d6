//! The three-way handshake (RFC 5971 §4.4.1, §6.2, §6.3; RFC 5972 §6.2, §6.3): Query, Response, Confirm,
//! with retransmission, refresh, late state installation and peer changes.

use super::state::{MaId, MrsKey, Pending, QuerySide, QueryingState, RespondSide, RespondingState};
use super::{CookieMode, GistEngine, MaTransport, Upcall};
use crate::nslp::{
    Direction, NetworkNotification, NotificationKind, RecvMessage, RoutingDecision, SiiHandle,
    TransferAttributes,
};
use crate::wire::{
    Body, Confirm, Cookie, ErrorObject, MaProtocolOptions, Message, Mri, ParseErrorKind, Query,
    Response, StackConfigData, StackProposal, ValueFault, error_code, ma_protocol, object_type,
};
use pathwise_core::io::{IfIndex, Received, Transmit, Transport};
use pathwise_core::rand::Rng;
use pathwise_core::time::{Duration, Instant};
use std::net::IpAddr;

/// Where a message came from.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Inbound {
    pub ifindex: IfIndex,
    pub src: IpAddr,
    pub dst: IpAddr,
    pub src_port: u16,
    pub ttl: u8,
    /// The Router Alert value it carried.
    pub router_alert: Option<u16>,
    /// The MA it arrived over (C-mode), or `None` for D-mode.
    pub ma: Option<MaId>,
}

impl GistEngine {
    /// A D-mode datagram (RFC 5971 §5.4).
    pub(super) fn on_datagram(&mut self, now: Instant, rx: &Received<'_>) {
        let src_port = match rx.transport {
            Transport::Udp { src_port, .. } => src_port,
            Transport::Raw(_) => return,
        };
        let ctx = Inbound {
            ifindex: rx.ifindex,
            src: rx.src,
            dst: rx.dst,
            src_port,
            ttl: rx.ttl,
            router_alert: rx.router_alert,
            ma: None,
        };
        match Message::parse_datagram_reusing(rx.payload, &mut self.nslp_spare) {
            Ok(msg) => self.on_message(now, ctx, msg, rx.payload.get(4..).unwrap_or(&[])),
            Err(e) => self.on_parse_error(now, ctx, &e, rx.payload.get(4..).unwrap_or(&[])),
        }
    }

    /// A parsed message from either mode.
    pub(super) fn on_message(&mut self, now: Instant, ctx: Inbound, msg: Message, raw: &[u8]) {
        self.counters.count_in(msg.msg_type());
        if !self.admit(ctx, &msg) {
            return;
        }
        // RFC 5971 §4.3.1: "Any message with a GIST hop count of zero MUST be rejected with a
        // 'Hop Limit Exceeded' error message" (never an Error for an Error, §5.6).
        if msg.gist_hops == 0 {
            self.drop_msg("hop_limit");
            self.reply_error(
                ctx,
                &msg,
                ErrorObject::new(error_code::HOP_LIMIT_EXCEEDED, 0, msg.header()),
            );
            return;
        }
        let nslpid = msg.nslpid;
        if !matches!(msg.body, Body::Error(_) | Body::MaHello(_)) && !self.served.contains(&nslpid)
        {
            // A directly addressed message for an NSLP not served here (A.4.4.6); a Query at
            // the flow's end is "Endpoint Found" (A.4.4.7).
            let end = msg
                .mri()
                .and_then(Mri::destination)
                .is_some_and(|d| self.local.contains(&d));
            let code = if matches!(msg.body, Body::Query(_)) && end {
                error_code::ENDPOINT_FOUND
            } else {
                error_code::UNKNOWN_NSLPID
            };
            self.drop_msg("unknown_nslpid");
            self.reply_error(ctx, &msg, ErrorObject::new(code, 0, msg.header()));
            return;
        }
        match msg.body {
            Body::Query(_) if ctx.ma.is_some() => {
                // A Query over an MA (A.4.4.3).
                self.drop_msg("query_in_ma");
                self.reply_error(
                    ctx,
                    &msg,
                    ErrorObject::new(error_code::INCORRECT_ENCAPSULATION, 0, msg.header()),
                );
            }
            Body::Query(_) => self.on_query(now, ctx, msg, raw),
            Body::Response(_) => self.on_response(now, ctx, msg),
            Body::Confirm(_) => self.on_confirm(now, ctx, msg),
            Body::Data(_) => self.on_data(now, ctx, msg),
            Body::Error(e) => self.on_error(now, ctx, e),
            Body::MaHello(ref h) => {
                let id = h.hello_id;
                self.on_hello(now, ctx, &msg, id)
            }
        }
    }

    /// Refresh interval for a peer that keeps state `validity_ms`: the configured period, no
    /// more than the validity, jittered to 75–100 % so refreshes do not synchronise.
    fn refresh_interval(&mut self, validity_ms: u32) -> Duration {
        let validity = Duration::from_millis(u64::from(validity_ms.max(1000)));
        self.cfg
            .refresh_period
            .min(validity)
            .mul_f64(self.rng.random_range(0.75..1.0))
    }

    /// How long to keep state a peer asks to be kept for `validity_ms` (its NLI's Routing
    /// State Validity Time, A.3.4): at least a second, at most [`super::Config::max_state_lifetime`]
    /// (RFC 5971 §8.4 overload protection: a peer cannot pin state for 49.7 days). The querier
    /// refreshes by its own timer, so a capped lifetime shorter than its refresh period only
    /// makes it refresh earlier after a lapse (§6.2 Rule 3 via No Routing State).
    pub(super) fn accepted_validity(&mut self, validity_ms: u32) -> Duration {
        let asked = Duration::from_millis(u64::from(validity_ms.max(1000)));
        if asked > self.cfg.max_state_lifetime {
            self.counters.validity_capped += 1;
            self.cfg.max_state_lifetime
        } else {
            asked
        }
    }

    fn initial_rto_ms(&self) -> u32 {
        u32::try_from(self.cfg.query_rto.as_millis())
            .unwrap_or(u32::MAX)
            .max(1)
    }

    /// Create the downstream half of `idx` and send its first Query.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn start_query(
        &mut self,
        now: Instant,
        idx: u32,
        cmode: bool,
        secure: bool,
        piggyback: Option<Pending>,
        hops: u8,
        ttl: u8,
    ) {
        let rto_ms = self.initial_rto_ms();
        let cookie = self.rng.random();
        let lifetime = self.cfg.state_lifetime;
        self.mrs[idx as usize].down = Some(Box::new(QuerySide::new(
            now, cookie, rto_ms, lifetime, cmode, secure, piggyback, hops, ttl,
        )));
        self.send_query(now, idx);
    }

    /// Start a refresh handshake (RFC 5971 §6.2 Rule 8: Established → Awaiting Refresh).
    pub(super) fn start_refresh(&mut self, now: Instant, idx: u32) {
        self.counters.refreshes += 1;
        self.new_handshake(now, idx, QueryingState::AwaitingRefresh);
    }

    /// A fresh handshake for `idx`'s downstream half in `state`: a new Query-Cookie, the
    /// initial retransmission timeout, the first Query.
    pub(super) fn new_handshake(&mut self, now: Instant, idx: u32, state: QueryingState) {
        let cookie = self.rng.random();
        let rto_ms = self.initial_rto_ms();
        let Some(d) = self.mrs[idx as usize].down.as_mut() else {
            return;
        };
        d.state = state;
        d.cookie = cookie;
        d.attempts = 0;
        d.rto_ms = rto_ms;
        self.send_query(now, idx);
    }

    /// (Re)send the Query of `idx`'s downstream half and arm its retransmission.
    pub(super) fn send_query(&mut self, now: Instant, idx: u32) {
        let s = &self.mrs[idx as usize];
        let Some(d) = s.down.as_ref() else { return };
        let Some(dst) = s.key.mri().destination() else {
            return;
        };
        let Some(src) = self.source_for(dst) else {
            self.drop_msg("no_source_address");
            return;
        };
        let hold_ms = u32::try_from(self.cfg.ma_hold_time.as_millis()).unwrap_or(u32::MAX);
        let tcp = MaProtocolOptions {
            protocol: ma_protocol::TCP,
            profile: 1,
            d_flag: false,
            data: Vec::new(),
        };
        // Secure transfer proposes TLS over TCP only (RFC 5971 §5.7.3): offering plain TCP
        // beside it would let a responder without TLS downgrade the session.
        let (stack_proposal, stack_config) = if d.secure {
            (
                Some(StackProposal {
                    profiles: vec![MaTransport::Tls.profile().to_vec()],
                }),
                Some(StackConfigData {
                    ma_hold_time_ms: hold_ms,
                    options: vec![MaProtocolOptions::tls(1), tcp],
                }),
            )
        } else if d.cmode {
            (
                Some(StackProposal {
                    profiles: vec![vec![ma_protocol::TCP]],
                }),
                Some(StackConfigData {
                    ma_hold_time_ms: hold_ms,
                    options: vec![tcp],
                }),
            )
        } else {
            (None, None)
        };
        let msg = Message {
            gist_hops: d.gist_hops,
            nslpid: s.key.nslpid(),
            c_flag: true,
            s_flag: true,
            r_flag: true,
            e_flag: false,
            body: Body::Query(Query {
                nat: None,
                mri: s.key.mri(),
                session_id: s.key.session_id(),
                nli: self.nli(src),
                query_cookie: query_cookie(d.cookie, d.attempts),
                stack_proposal,
                stack_config,
                nslp_data: d.piggyback().map(|p| p.data.clone()),
                unknown: Vec::new(),
            }),
        };
        let ttl = d.ip_ttl;
        // RFC 5971 §5.3.2: Q-mode, to the flow's destination, with router alert.
        self.send_dmode(&msg, Some(src), dst, crate::wire::GIST_PORT, true, ttl);
        if let Some(d) = self.mrs[idx as usize].down.as_mut() {
            d.attempts = d.attempts.saturating_add(1);
            d.deadline = now + Duration::from_millis(u64::from(d.rto_ms));
        }
        self.schedule_mrs(idx);
    }

    /// A Query: ask the NSLP whether to peer (Routing-State-Check, B.2); answer with a
    /// Response and, in hash-cookie mode, keep nothing (RFC 5971 §4.4.1, late state
    /// installation); or forward the Query onwards.
    fn on_query(&mut self, now: Instant, ctx: Inbound, msg: Message, raw: &[u8]) {
        let Body::Query(q) = &msg.body else { return };
        let path_coupled_down = matches!(&q.mri, Mri::PathCoupled(p) if !p.upstream);
        if !path_coupled_down {
            // Only downstream path-coupled Queries are supported (upstream Q-mode and other
            // MRMs are not): Object Value Error, Value Not Supported, with the MRI.
            self.drop_msg("unsupported_mri");
            let mut e = ErrorObject::new(
                error_code::OBJECT_VALUE_ERROR,
                ValueFault::ValueNotSupported.subcode(),
                msg.header(),
            );
            e.session_id = Some(q.session_id);
            e.info
                .push(super::data::object_value_info(object_type::MRI, &q.mri));
            self.reply_error(ctx, &msg, e);
            return;
        }
        let recv = RecvMessage {
            nslp_data: q.nslp_data.clone().unwrap_or_default(),
            nslpid: msg.nslpid,
            session_id: q.session_id,
            mri: q.mri.clone(),
            routing_state_check: true,
            sii_handle: Some(SiiHandle(q.nli.interface_address)),
            transfer: TransferAttributes::default(),
            ip_ttl: ctx.ttl,
            ip_distance: q
                .nli
                .ip_ttl
                .checked_sub(ctx.ttl)
                .map(|d| d.saturating_add(1)),
            gist_hops: msg.gist_hops,
            inbound_interface: ctx.ifindex,
            explicitly_routed: false,
        };
        let response_data = match self.routing_state_check(now, recv) {
            RoutingDecision::Accept { response_data } => response_data,
            RoutingDecision::Decline => {
                self.forward_query(ctx, &msg, raw);
                return;
            }
        };
        let Body::Query(q) = msg.body else { return };
        let cookie = match self.cfg.cookie_mode {
            CookieMode::Hash => {
                let binding = super::cookie::CookieBinding {
                    nli: &q.nli,
                    mri: &q.mri,
                    nslpid: msg.nslpid,
                    session_id: q.session_id,
                };
                self.cookies.mint(&mut self.rng, now, ctx.ifindex, binding)
            }
            CookieMode::Random => {
                let mut c = [0u8; 16];
                self.rng.fill(&mut c);
                self.await_confirm(now, &q, msg.nslpid, c);
                Cookie(crate::wire::ShortBytes::from_slice(&c))
            }
        };
        self.counters.cookies_minted += 1;
        // The stack to answer with: TLS over TCP when the querier proposes it and this node
        // runs TLS, else TCP when proposed and run here, else D-mode only.
        let offered = |stack: &[u8]| {
            q.stack_proposal
                .as_ref()
                .is_some_and(|sp| sp.profile_number(stack).is_some())
        };
        let chosen = match (self.cfg.tls_port, self.cfg.cmode_port) {
            (Some(port), _) if offered(MaTransport::Tls.profile()) => {
                Some((MaTransport::Tls, port))
            }
            (_, Some(port)) if offered(MaTransport::Tcp.profile()) => {
                Some((MaTransport::Tcp, port))
            }
            _ => None,
        };
        let hold_ms = u32::try_from(self.cfg.ma_hold_time.as_millis()).unwrap_or(u32::MAX);
        let (stack_proposal, stack_config) = match chosen {
            Some((transport, port)) => {
                let mut options = Vec::new();
                if transport == MaTransport::Tls {
                    options.push(MaProtocolOptions::tls(1));
                }
                options.push(MaProtocolOptions::tcp_port(1, port));
                (
                    Some(StackProposal {
                        profiles: vec![transport.profile().to_vec()],
                    }),
                    Some(StackConfigData {
                        ma_hold_time_ms: hold_ms,
                        options,
                    }),
                )
            }
            None => (None, None),
        };
        let peer_addr = q.nli.interface_address;
        let our_addr = self
            .iface_addr(ctx.ifindex, peer_addr)
            .or_else(|| self.source_for(peer_addr))
            .unwrap_or(ctx.dst);
        let resp = Message {
            gist_hops: self.cfg.gist_hops,
            nslpid: msg.nslpid,
            c_flag: false,
            s_flag: true,
            r_flag: true,
            e_flag: false,
            body: Body::Response(Response {
                nat: None,
                mri: q.mri.with_direction(true),
                session_id: q.session_id,
                nli: self.nli(our_addr),
                query_cookie: q.query_cookie,
                responder_cookie: Some(cookie),
                stack_proposal,
                stack_config,
                nslp_data: response_data,
                unknown: Vec::new(),
            }),
        };
        // An MA already open to the querying node carries the Response (thesis §2.3.2, third
        // case); otherwise it goes D-mode to the port the Query came from (§5.3.2).
        let (first, second) = match chosen {
            Some((MaTransport::Tls, _)) => (MaTransport::Tls, MaTransport::Tcp),
            _ => (MaTransport::Tcp, MaTransport::Tls),
        };
        let open = self
            .connected_ma(peer_addr, first)
            .or_else(|| self.connected_ma(peer_addr, second));
        match open {
            Some(ma) => self.ma_send(now, ma, &resp),
            None => self.send_dmode(
                &resp,
                Some(our_addr),
                peer_addr,
                ctx.src_port,
                false,
                self.cfg.ip_ttl,
            ),
        }
    }

    /// The NSLP declined: send the Query on unchanged but for the GIST hop count.
    fn forward_query(&mut self, ctx: Inbound, msg: &Message, raw: &[u8]) {
        // RFC 5971 §4.3.4: in transit "the IP-layer TTL MUST be decremented just as if the
        // message was a normal IP forwarded packet" and the GIST hop count as on input; a
        // message with either exhausted goes no further (counted apart: TTL 0 or 1 is an IP
        // matter, hop count 1 a GIST loop or too small a count, A.4.4.2).
        if ctx.ttl <= 1 {
            self.drop_msg("forward_ttl_expired");
            return;
        }
        if msg.gist_hops <= 1 {
            self.drop_msg("forward_hop_limit");
            return;
        }
        if !self.may_send_to(ctx.dst) {
            return;
        }
        let mut payload = self.spare.take(raw.len() + 4);
        payload.extend_from_slice(&crate::wire::MAGIC.to_be_bytes());
        payload.extend_from_slice(raw);
        payload[5] = msg.gist_hops - 1;
        self.counters.queries_forwarded += 1;
        self.counters.count_out(crate::wire::MsgType::Query);
        self.transmits.push_back(Transmit {
            src: Some(ctx.src),
            dst: ctx.dst,
            ifindex: None,
            transport: Transport::Udp {
                src_port: ctx.src_port,
                dst_port: crate::wire::GIST_PORT,
            },
            // Sent on as it came (RFC 5971 §5.3.2.4: option processing is independent of GIST).
            router_alert: ctx.router_alert,
            ttl: ctx.ttl - 1,
            payload,
        });
    }

    /// Random-cookie mode: keep the cookie in a Responding-Node half awaiting the Confirm.
    fn await_confirm(&mut self, now: Instant, q: &Query, nslpid: u16, cookie: [u8; 16]) {
        let idx = self.lookup_or_insert(MrsKey::new(&q.mri, nslpid, q.session_id));
        let wait = now + self.cfg.confirm_wait;
        let up_exists = self.mrs[idx as usize].up.is_some();
        if up_exists {
            if let Some(up) = self.mrs[idx as usize].up.as_mut()
                && up.state == RespondingState::AwaitingConfirm
            {
                up.expires = wait;
            }
        } else {
            let peer = self.peer_ref(q.nli.interface_address, &q.nli.peer_identity);
            self.mrs[idx as usize].up = Some(RespondSide {
                state: RespondingState::AwaitingConfirm,
                peer,
                expires: wait,
                ma: None,
            });
        }
        self.responder_cookies.insert(idx, cookie);
        self.schedule_mrs(idx);
    }

    /// A Response: the downstream peer is found (RFC 5971 §6.2 rx_Response, Rule 4).
    fn on_response(&mut self, now: Instant, ctx: Inbound, msg: Message) {
        let Body::Response(r) = msg.body else { return };
        let key = MrsKey::new(&r.mri, msg.nslpid, r.session_id);
        let Some(idx) = self.lookup(&key) else {
            self.drop_msg("response_no_state");
            return;
        };
        let Some(d) = self.mrs[idx as usize].down.as_ref() else {
            self.drop_msg("response_no_state");
            return;
        };
        if !answers(&r.query_cookie, d.cookie, d.attempts) {
            self.drop_msg("response_bad_cookie");
            return;
        }
        // RFC 5971 §6.2: further Responses in Established, the result of a lost Confirm, "MUST
        // be treated the same way" (Rule 4: Confirm again if R=1); RFC 5972 A.1 transition 17.
        // Only the NSLP data it carries is not delivered twice.
        let repeat = d.state == QueryingState::Established;
        if repeat && msg.r_flag {
            self.counters.confirm_retransmits += 1;
        }
        let new_peer = self.peer_ref(r.nli.interface_address, &r.nli.peer_identity);
        let interval = self.refresh_interval(r.nli.rs_validity_ms);
        let initial_rto = self.initial_rto_ms();
        let inactive = now + self.cfg.state_lifetime;
        let Some(d) = self.mrs[idx as usize].down.as_mut() else {
            return;
        };
        let old = d.peer.replace(new_peer);
        d.state = QueryingState::Established;
        d.rto_ms = initial_rto;
        d.peer_validity_ms = r.nli.rs_validity_ms;
        d.deadline = now + interval;
        let delivered = d.take_piggyback();
        if !repeat && (delivered.is_some() || !d.queue().is_empty()) {
            // §6.2 Rule 4: the NSLP's messages waiting for this handshake are handled now
            // (the one the Query carried is delivered, the stored ones go), so the
            // Inactive_QNode timer runs from here, not from when the NSLP handed them over.
            // A Query retransmitted for longer than a state lifetime (no route yet) made
            // state that lapsed at once: QoS campaign seed 8341147331591390, a QNR's
            // RESERVE-INIT QUERY that waited 15.5 s, its state gone before the RESERVE came
            // back up the path, the QNI never answered.
            d.expires = d.expires.max(inactive);
        }
        let wants_cmode = d.cmode;
        let secure = d.secure;
        let changed = old.is_some_and(|o| o != new_peer);
        if let Some(p) = delivered {
            // The Query that carried it was answered: the peer's NSLP has it.
            self.dispatched(&key, p.handle, p.report, TransferAttributes::default());
        }
        if let Some(o) = old {
            self.peer_unref(o);
        }
        if changed {
            self.counters.peer_changes += 1;
            // The old peer's MA no longer serves this state.
            if let Some(ma) = self.mrs[idx as usize]
                .down
                .as_mut()
                .and_then(|d| d.ma.take())
            {
                self.ma_unuse(now, ma);
            }
        }
        if old.is_none() || changed {
            self.upcall(Upcall::Notify(NetworkNotification {
                nslpid: key.nslpid,
                session_id: key.session_id,
                mri: key.mri.clone(),
                kind: NotificationKind::RoutingStatusChange {
                    direction: Direction::Downstream,
                    peer: SiiHandle(r.nli.interface_address),
                    changed,
                },
            }));
        }
        let peer_addr = r.nli.interface_address;
        if msg.r_flag {
            // The stack the responder chose (its Stack-Proposal) and the TCP port of that
            // profile (§5.7.3: TLS's own options are empty).
            let transport = if secure {
                MaTransport::Tls
            } else {
                MaTransport::Tcp
            };
            let port = r
                .stack_proposal
                .as_ref()
                .and_then(|sp| sp.profile_number(transport.profile()))
                .and_then(|n| {
                    r.stack_config
                        .as_ref()
                        .and_then(|s| s.find_in(ma_protocol::TCP, n))
                })
                .and_then(MaProtocolOptions::port);
            let via = ctx.ma.filter(|&m| self.ma_transport(m) == transport);
            let src = self.source_for(peer_addr).unwrap_or(ctx.dst);
            let mut confirm = Confirm {
                mri: key.mri.clone(),
                session_id: key.session_id,
                nli: self.nli(src),
                responder_cookie: r.responder_cookie.clone(),
                stack_proposal: None,
                stack_config: None,
                nslp_data: None,
                unknown: Vec::new(),
            };
            if secure && port.is_none() && via.is_none() {
                // The responder does not run TLS: secure messages fail rather than go in the
                // clear; the state itself is set up in D-mode for anything else.
                self.counters.tls_refused_by_peer += 1;
                self.fail_secure_queue(idx);
            }
            // A Response that came over an MA re-uses it for this routing state, and then the
            // Confirm "MUST be sent in C-mode" (§5.1, §5.5), whatever mode the NSLP asked for.
            let cmode = wants_cmode || via.is_some();
            match (cmode, port.or(via.map(|m| self.mas[m.index()].port))) {
                (true, Some(port)) => {
                    // RFC 5971 §5.1: `[ Responder-Cookie [ Stack-Proposal [ SCD ] ] ]`. In
                    // C-mode the Confirm echoes the Response's Stack-Proposal if it had one;
                    // the abbreviated SCD (MA-Hold-Time only) repeats the Query's for the first
                    // Confirm on a new MA (§4.4.5), which always follows a Response with a
                    // Stack-Proposal. A Response over a reused MA may carry none (NSIS-ka's
                    // do not): then neither goes in the Confirm.
                    confirm.stack_proposal = r.stack_proposal.clone();
                    confirm.stack_config =
                        confirm.stack_proposal.as_ref().map(|_| StackConfigData {
                            ma_hold_time_ms: u32::try_from(self.cfg.ma_hold_time.as_millis())
                                .unwrap_or(u32::MAX),
                            options: Vec::new(),
                        });
                    self.confirm_over_ma(now, idx, peer_addr, port, transport, via, confirm);
                    // Keep the MA alive within the hold time the responder advertised (A.3.5).
                    let hold = r.stack_config.as_ref().map(|s| s.ma_hold_time_ms);
                    self.note_peer_hold((peer_addr, transport), hold);
                }
                _ => {
                    // D-mode: piggyback the first waiting unreliable message (thesis §2.4).
                    let take = self.cfg.piggyback
                        && self.mrs[idx as usize].down.as_ref().is_some_and(|d| {
                            d.queue().first().is_some_and(|p| !p.transfer.reliable)
                        });
                    if take
                        && let Some(p) = self.mrs[idx as usize]
                            .down
                            .as_mut()
                            .and_then(|d| d.take_first())
                    {
                        self.dispatched(&key, p.handle, p.report, TransferAttributes::default());
                        confirm.nslp_data = Some(p.data);
                    }
                    let m = Message {
                        gist_hops: self.cfg.gist_hops,
                        nslpid: key.nslpid,
                        c_flag: false,
                        s_flag: true,
                        r_flag: false,
                        e_flag: false,
                        body: Body::Confirm(confirm),
                    };
                    self.send_dmode(
                        &m,
                        Some(src),
                        peer_addr,
                        crate::wire::GIST_PORT,
                        false,
                        self.cfg.ip_ttl,
                    );
                    self.flush_down_queue(now, idx);
                }
            }
        } else {
            self.flush_down_queue(now, idx);
        }
        if let Some(data) = r.nslp_data.filter(|_| !repeat) {
            self.upcall(Upcall::Recv(RecvMessage {
                nslp_data: data,
                nslpid: key.nslpid,
                session_id: key.session_id,
                mri: r.mri,
                routing_state_check: false,
                sii_handle: Some(SiiHandle(peer_addr)),
                transfer: TransferAttributes::default(),
                ip_ttl: ctx.ttl,
                ip_distance: r
                    .nli
                    .ip_ttl
                    .checked_sub(ctx.ttl)
                    .map(|d| d.saturating_add(1)),
                gist_hops: msg.gist_hops,
                inbound_interface: ctx.ifindex,
                explicitly_routed: false,
            }));
        }
        self.schedule_mrs(idx);
    }

    /// A Confirm: verify the Responder-Cookie, then install (or refresh) the upstream half
    /// (RFC 5971 §6.3 rx_Confirm, Rule 8; late state installation, §4.4.1).
    fn on_confirm(&mut self, now: Instant, ctx: Inbound, msg: Message) {
        let Body::Confirm(c) = &msg.body else { return };
        let key = MrsKey::new(&c.mri, msg.nslpid, c.session_id);
        let rc = c
            .responder_cookie
            .as_ref()
            .map(|x| x.0.as_slice())
            .unwrap_or(&[]);
        let verdict = match self.cfg.cookie_mode {
            CookieMode::Hash => {
                let binding = super::cookie::CookieBinding {
                    nli: &c.nli,
                    mri: &c.mri,
                    nslpid: msg.nslpid,
                    session_id: c.session_id,
                };
                self.cookies
                    .verify(&mut self.rng, now, rc, binding)
                    .map(|_| ())
                    .map_err(|r| r.reason())
            }
            CookieMode::Random => {
                let stored = self.lookup(&key).and_then(|i| self.responder_cookie(i));
                match stored {
                    Some(k) if k.as_slice() == rc => Ok(()),
                    Some(_) => Err("cookie_mismatch"),
                    // Nothing awaits a Confirm for this state: expired (confirm_wait), already
                    // used, or never handed out.
                    None => Err("cookie_expired"),
                }
            }
        };
        if let Err(reason) = verdict {
            self.counters.cookies_rejected += 1;
            self.drop_msg(reason);
            let mut e = ErrorObject::new(
                error_code::OBJECT_VALUE_ERROR,
                ValueFault::InvalidCookie.subcode(),
                msg.header(),
            );
            e.session_id = Some(c.session_id);
            e.mri = Some(c.mri.clone());
            e.dmode = ctx.ma.is_none();
            self.reply_error(ctx, &msg, e);
            return;
        }
        // RFC 5971 §4.4.5: the first Confirm on a new MA repeats the Stack-Configuration-Data
        // (its MA-Hold-Time); "If the object is missing in the Confirm, an Object Type Error
        // message with subcode 2 (Missing Object) MUST be returned."
        let first_on_ma = ctx
            .ma
            .and_then(|m| self.mas.get(m.index()))
            .is_some_and(|m| !m.initiator && !m.confirmed);
        if first_on_ma && c.stack_config.is_none() {
            self.drop_msg("confirm_without_scd");
            let mut e = ErrorObject::new(error_code::OBJECT_TYPE_ERROR, 2, msg.header());
            e.info.push(crate::wire::AdditionalInfo::ObjectType(
                object_type::STACK_CONFIG_DATA,
            ));
            self.reply_error(ctx, &msg, e);
            return;
        }
        let Body::Confirm(c) = msg.body else { return };
        if let Some(ma) = ctx.ma {
            if let Some(m) = self.mas.get_mut(ma.index()) {
                m.confirmed = true;
            }
            self.note_peer_hold(
                (c.nli.interface_address, self.ma_transport(ma)),
                c.stack_config.as_ref().map(|s| s.ma_hold_time_ms),
            );
        }
        let idx = self.lookup_or_insert(key.clone());
        let peer = self.peer_ref(c.nli.interface_address, &c.nli.peer_identity);
        let validity = self.accepted_validity(c.nli.rs_validity_ms);
        let mut notify = None;
        // The cookie is used up (a replayed Confirm finds none).
        self.responder_cookies.remove(&idx);
        match self.mrs[idx as usize].up.as_mut() {
            Some(up) => {
                let old = up.peer;
                up.peer = peer;
                up.state = RespondingState::Established;
                up.expires = now + validity;
                let old_ma = up.ma;
                if ctx.ma.is_some() && old_ma != ctx.ma {
                    up.ma = ctx.ma;
                }
                self.peer_unref(old);
                if old != peer {
                    notify = Some(true);
                }
                if ctx.ma.is_some() && old_ma != ctx.ma {
                    if let Some(m) = ctx.ma {
                        self.ma_use(m);
                    }
                    if let Some(m) = old_ma {
                        self.ma_unuse(now, m);
                    }
                }
            }
            None => {
                self.mrs[idx as usize].up = Some(RespondSide {
                    state: RespondingState::Established,
                    peer,
                    expires: now + validity,
                    ma: ctx.ma,
                });
                if let Some(m) = ctx.ma {
                    self.ma_use(m);
                }
                notify = Some(false);
            }
        }
        if let Some(changed) = notify {
            self.upcall(Upcall::Notify(NetworkNotification {
                nslpid: key.nslpid,
                session_id: key.session_id,
                mri: key.mri.clone(),
                kind: NotificationKind::RoutingStatusChange {
                    direction: Direction::Upstream,
                    peer: SiiHandle(c.nli.interface_address),
                    changed,
                },
            }));
        }
        self.flush_up_pending(now, idx);
        if let Some(data) = c.nslp_data {
            self.upcall(Upcall::Recv(RecvMessage {
                nslp_data: data,
                nslpid: key.nslpid,
                session_id: key.session_id,
                mri: key.mri.clone(),
                routing_state_check: false,
                sii_handle: Some(SiiHandle(c.nli.interface_address)),
                transfer: TransferAttributes {
                    reliable: ctx.ma.is_some(),
                    secure: ctx
                        .ma
                        .is_some_and(|m| self.ma_transport(m) == MaTransport::Tls),
                    ..TransferAttributes::default()
                },
                ip_ttl: ctx.ttl,
                ip_distance: None,
                gist_hops: msg.gist_hops,
                inbound_interface: ctx.ifindex,
                explicitly_routed: false,
            }));
        }
        self.schedule_mrs(idx);
    }

    /// Take routing state `idx`'s upstream half, and the Responder-Cookie it kept.
    pub(super) fn take_up(&mut self, idx: u32) -> Option<RespondSide> {
        let up = self.mrs.get_mut(idx as usize)?.up.take()?;
        self.responder_cookies.remove(&idx);
        Some(up)
    }

    /// Random-cookie mode: the Responder-Cookie routing state `idx`'s upstream half awaits a
    /// Confirm with.
    pub(super) fn responder_cookie(&self, idx: u32) -> Option<&[u8; 16]> {
        self.mrs.get(idx as usize)?.up.as_ref()?;
        self.responder_cookies.get(&idx)
    }

    /// Release an upstream half's references.
    pub(super) fn release_up(&mut self, up: RespondSide) {
        self.peer_unref(up.peer);
        if let Some(ma) = up.ma {
            self.ma_unuse_later(ma);
        }
    }

    /// Release a downstream half's references and fail what it still held.
    pub(super) fn release_down(
        &mut self,
        key: &MrsKey,
        d: QuerySide,
        error: crate::nslp::DeliveryError,
    ) {
        if let Some(p) = d.peer {
            self.peer_unref(p);
        }
        if let Some(ma) = d.ma {
            self.ma_unuse_later(ma);
        }
        for p in d.into_waiting() {
            self.fail(key, p.handle, error);
        }
    }

    /// A message that did not parse: count it and, where the RFC asks for one and the sender
    /// can be addressed, answer with a GIST Error (A.4.4).
    pub(super) fn on_parse_error(
        &mut self,
        _now: Instant,
        ctx: Inbound,
        e: &crate::wire::ParseError,
        raw: &[u8],
    ) {
        self.drop_msg(e.kind.reason());
        let (Some((_, code, subcode)), Some(hdr)) = (e.kind.error_code(), e.header) else {
            return;
        };
        if hdr.kind() == Some(crate::wire::MsgType::Error) {
            return; // never answer an Error with an Error
        }
        let mut err = ErrorObject::new(code, subcode, hdr);
        err.dmode = ctx.ma.is_none();
        if code != error_code::COMMON_HEADER_PARSE_ERROR {
            err.session_id = e.session_id;
            err.mri = e.mri.as_deref().cloned();
        }
        match e.kind {
            ParseErrorKind::IncorrectLength { calculated, .. } => {
                err.info
                    .push(crate::wire::AdditionalInfo::MessageLength(calculated));
            }
            ParseErrorKind::ObjectValue { .. } => {
                if let Some(r) = e.object.clone()
                    && let Some(obj) = raw.get(r)
                {
                    err.info.push(crate::wire::AdditionalInfo::ObjectValue {
                        real_length_words: (obj.len().div_ceil(4)).min(0xfff) as u16,
                        offset: e.offset_in_object.min(0xffff) as u16,
                        object: obj.to_vec(),
                    });
                }
            }
            k => {
                if let Some(t) = k.object_type() {
                    err.info.push(crate::wire::AdditionalInfo::ObjectType(t));
                }
            }
        }
        let to = e.nli.as_ref().map_or(ctx.src, |n| n.interface_address);
        self.send_error(ctx, to, err);
    }
}

/// The Query-Cookie of transmission `n` of a handshake: its random 64 bits, then `n`.
pub(super) fn query_cookie(base: u64, n: u8) -> Cookie {
    let mut c = crate::wire::ShortBytes::new();
    c.extend_from_slice(&base.to_be_bytes());
    c.extend_from_slice(&u32::from(n).to_be_bytes());
    Cookie(c)
}

/// Whether `c` is the Query-Cookie of one of the first `sent` transmissions of the handshake
/// with random part `base` (RFC 5971 §5.3.3: match a reply to any of them).
fn answers(c: &Cookie, base: u64, sent: u8) -> bool {
    let Some((random, n)) = c.0.split_first_chunk::<8>() else {
        return false;
    };
    let Ok(n) = <[u8; 4]>::try_from(n) else {
        return false;
    };
    *random == base.to_be_bytes() && u32::from_be_bytes(n) < u32::from(sent)
}

#[cfg(test)]
mod tests {
    use super::super::{Config, CookieMode, GistEngine, InterfaceConfig};
    use crate::wire::{Body, Confirm, Cookie, Message, Mri, Nli, PathCoupledMri, Query, SessionId};
    use pathwise_core::engine::Engine;
    use pathwise_core::io::{IfIndex, Received, Transport};
    use pathwise_core::time::{Duration, Instant};
    use std::net::{IpAddr, Ipv4Addr};

    const ME: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
    const PEER: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    const FAR: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 9, 9));

    fn nli() -> Nli {
        Nli {
            ip_ttl: 64,
            rs_validity_ms: 30_000,
            peer_identity: vec![1; 16].into(),
            interface_address: PEER,
        }
    }

    fn mri() -> Mri {
        Mri::PathCoupled(PathCoupledMri::flow(PEER, FAR))
    }

    fn message(body: Body) -> Message {
        Message {
            gist_hops: 32,
            nslpid: 42,
            c_flag: false,
            s_flag: true,
            r_flag: matches!(body, Body::Query(_)),
            e_flag: false,
            body,
        }
    }

    fn query(sid: u8) -> Message {
        message(Body::Query(Query {
            mri: mri(),
            session_id: SessionId([sid; 16]),
            nli: nli(),
            query_cookie: Cookie(vec![1, 2, 3, 4].into()),
            ..Query::default()
        }))
    }

    fn confirm(sid: u8, cookie: &Cookie) -> Message {
        message(Body::Confirm(Confirm {
            mri: mri(),
            session_id: SessionId([sid; 16]),
            nli: nli(),
            responder_cookie: Some(cookie.clone()),
            ..Confirm::default()
        }))
    }

    /// Feed `m` at `secs`; the Responder-Cookie of the Response it drew, if any.
    fn feed(e: &mut GistEngine, secs: u64, m: &Message) -> Option<Cookie> {
        let payload = m.to_datagram();
        let query = matches!(m.body, Body::Query(_));
        e.handle_datagram(
            Instant::from_secs(secs),
            Received {
                src: PEER,
                dst: if query { FAR } else { ME },
                ifindex: IfIndex(1),
                transport: Transport::Udp {
                    src_port: crate::wire::GIST_PORT,
                    dst_port: crate::wire::GIST_PORT,
                },
                router_alert: query.then_some(0),
                ttl: 64,
                payload: &payload,
            },
        );
        while e.poll_event().is_some() {}
        let mut cookie = None;
        while let Some(t) = e.poll_transmit() {
            if let Body::Response(r) = Message::parse_datagram(&t.payload).unwrap().body {
                cookie = r.responder_cookie;
            }
        }
        cookie
    }

    /// What the slab no longer holds inline stays consistent with it: a cookie only beside an
    /// upstream half, and each timer due at its routing state's earliest deadline.
    fn check(e: &GistEngine) {
        for &idx in e.responder_cookies.keys() {
            assert!(e.mrs[idx as usize].up.is_some(), "cookie without a half");
        }
        for (_, s) in &e.mrs {
            let due = s.timer.and_then(|h| e.timers.deadline(h));
            assert_eq!(due.unwrap_or(Instant::MAX), s.next_deadline());
        }
    }

    fn rejected(e: &GistEngine) -> u64 {
        e.counters.cookies_rejected
    }

    /// Random-cookie mode keeps each Response's cookie beside the slab: it matches only its own
    /// session's Confirm, is used up by it, goes with the upstream half that kept it, and a
    /// routing state reusing a freed slab entry never inherits it.
    #[test]
    fn random_cookies_live_beside_the_slab_only_while_a_half_awaits_its_confirm() {
        let mut e = GistEngine::new(
            Config {
                seed: 5,
                interfaces: vec![InterfaceConfig {
                    ifindex: IfIndex(1),
                    addrs: vec![ME],
                }],
                nslpids: vec![42],
                cookie_mode: CookieMode::Random,
                confirm_wait: Duration::from_secs(2),
                ..Config::default()
            },
            Instant::ZERO,
        );
        let c1 = feed(&mut e, 1, &query(1)).expect("a Response with a cookie");
        assert_eq!(e.responder_cookies.len(), 1);
        check(&e);
        // Another session's Query: its own cookie, which does not confirm session 1.
        let c2 = feed(&mut e, 1, &query(2)).expect("a Response with a cookie");
        assert_ne!(c1, c2);
        assert_eq!(feed(&mut e, 1, &confirm(1, &c2)), None);
        assert_eq!(rejected(&e), 1);
        // Session 1's own cookie installs it and is used up: a replay is refused.
        feed(&mut e, 1, &confirm(1, &c1));
        assert_eq!(e.state_stats().upstream_established, 1);
        assert_eq!(e.responder_cookies.len(), 1, "only session 2's is left");
        feed(&mut e, 1, &confirm(1, &c1));
        assert_eq!(rejected(&e), 2);
        check(&e);
        // A refresh Query for established session 1 keeps a fresh cookie.
        let c1b = feed(&mut e, 2, &query(1)).expect("a Response with a cookie");
        assert_eq!(e.responder_cookies.len(), 2);
        check(&e);

        // Session 2 was never confirmed: its half goes after confirm_wait, and its cookie too.
        e.handle_timeout(Instant::from_secs(4));
        assert_eq!(e.state_stats().routing_states, 1);
        assert_eq!(e.responder_cookies.len(), 1);
        check(&e);
        // Session 3 takes session 2's slab entry; session 2's cookie does not confirm it.
        let c3 = feed(&mut e, 4, &query(3)).expect("a Response with a cookie");
        assert_eq!(feed(&mut e, 4, &confirm(3, &c2)), None);
        assert_eq!(rejected(&e), 3);
        feed(&mut e, 4, &confirm(3, &c3));
        feed(&mut e, 4, &confirm(1, &c1b));
        assert_eq!(e.state_stats().upstream_established, 2);
        assert_eq!(rejected(&e), 3);
        assert!(e.responder_cookies.is_empty());
        check(&e);

        // Both halves lapse unrefreshed: nothing is left beside the slab.
        e.handle_timeout(Instant::from_secs(60));
        assert_eq!(e.state_stats().routing_states, 0);
        assert!(e.responder_cookies.is_empty());
    }
}
