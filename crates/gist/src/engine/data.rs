//! NSLP data: SendMessage (RFC 5971 B.1) into Query piggybacks, queues, Data messages in D-mode
//! or over an MA, stateless Q-mode Data (§4.3.2); receiving Data; GIST Errors in and out
//! (A.4.4).

use super::handshake::Inbound;
use super::state::{MaId, MrsKey, Pending, QueryingState, RespondingState};
use super::{GistEngine, MaTransport, Upcall};
use crate::nslp::{
    ApiError, DeliveryError, Direction, MessageHandle, MessageStatus, NotificationKind,
    RecvMessage, SendMessage, SiiHandle, TransferAttributes,
};
use crate::wire::{
    AdditionalInfo, Body, Data, ErrorClass, ErrorMsg, ErrorObject, MAX_OBJECT_BODY, Message, Mri,
    MsgType, ObjectHeader, error_code,
};

/// Handshakes restarted after Errors from the peer (our Confirm or Data rejected) before the
/// state is given up (RFC 5972 A.1 transition 18), unless it lives through a refresh period
/// in between.
pub const MAX_ERROR_RESTARTS: u8 = 3;
use pathwise_core::time::Instant;
use pathwise_core::wire::Writer;
use std::net::IpAddr;

/// An Object Value Info field carrying `mri` as the object in error.
pub(crate) fn object_value_info(t: u16, mri: &Mri) -> AdditionalInfo {
    let mut obj = Vec::with_capacity(4 + mri.buffer_len());
    let w = &mut Writer::new(&mut obj);
    ObjectHeader::new(t, mri.buffer_len()).emit(w);
    mri.emit(w);
    w.pad_to(4);
    AdditionalInfo::ObjectValue {
        real_length_words: (obj.len() / 4).min(0xfff) as u16,
        offset: 0,
        object: obj,
    }
}

impl GistEngine {
    /// SendMessage (B.1), under the NSLP's own `handle` if it chose one.
    pub(super) fn api_send(
        &mut self,
        now: Instant,
        msg: SendMessage,
        handle: Option<MessageHandle>,
    ) -> Result<MessageHandle, ApiError> {
        if !self.served.contains(&msg.nslpid) {
            return Err(ApiError::UnknownNslpid(msg.nslpid));
        }
        if msg.nslp_data.len() > MAX_OBJECT_BODY {
            return Err(ApiError::MessageTooLarge);
        }
        if msg.transfer.secure && self.cfg.tls_port.is_none() {
            return Err(ApiError::Unsupported);
        }
        if !matches!(msg.mri, Mri::PathCoupled(_)) {
            return Err(ApiError::UnsupportedMri);
        }
        if msg.gist_hops == Some(0) {
            // RFC 5971 §4.3.2: "GIST MUST reject messages for which the signalling application
            // has specified a value of zero."
            return Err(ApiError::ZeroHopCount);
        }
        // RFC 5971 §5.8.1.1: flow addresses "MUST be real node addresses"; a flow towards
        // this node has no downstream peer — sending its Query would loop back here (§4.3.4).
        let bad =
            |a: Option<IpAddr>| a.is_none_or(|a| super::validate::next_hop_fault(a).is_some());
        // A.3.1.1: an MRI our peers would refuse (Object Value Error, invalid flag-field
        // combination) is not sent (conservative in what we send).
        let malformed = matches!(&msg.mri, Mri::PathCoupled(p) if !p.flags_allowed());
        if malformed
            || bad(msg.mri.destination())
            || bad(msg.mri.source())
            || (!msg.mri.is_upstream()
                && msg
                    .mri
                    .destination()
                    .is_some_and(|d| self.local.contains(&d)))
        {
            self.counters.drop("api_invalid_mri");
            return Err(ApiError::InvalidMri);
        }
        let key = MrsKey::new(&msg.mri, msg.nslpid, msg.session_id);
        if let Some(peer) = msg.sii_handle {
            let handle = handle.unwrap_or_else(|| self.alloc_handle());
            self.send_explicit(now, &key, peer, msg, handle);
            return Ok(handle);
        }
        if msg.mri.is_upstream() {
            let idx = self.lookup(&key).ok_or(ApiError::NoRoutingState)?;
            let handle = handle.unwrap_or_else(|| self.alloc_handle());
            let p = Pending {
                handle,
                data: msg.nslp_data,
                transfer: msg.transfer,
                report: msg.report_dispatch,
                hops: msg.gist_hops,
            };
            let established = self.mrs[idx as usize]
                .up
                .as_ref()
                .is_some_and(|u| u.state == RespondingState::Established);
            if established {
                self.send_data_up(now, idx, p);
            } else {
                // Our own downstream handshake made this state; the Confirm from upstream is
                // on its way (the reply to a piggybacked message can overtake it).
                let limit = self.cfg.queue_limit;
                let wait = now + self.cfg.confirm_wait;
                let pu = self.mrs[idx as usize].pending_up.get_or_insert_with(|| {
                    Box::new(super::state::PendingUp {
                        msgs: Vec::new(),
                        deadline: wait,
                    })
                });
                if pu.msgs.len() >= limit {
                    self.fail(&key, p.handle, DeliveryError::QueueFull);
                } else {
                    pu.msgs.push(p);
                    self.schedule_mrs(idx);
                }
            }
            return Ok(handle);
        }
        let dst = msg.mri.destination().ok_or(ApiError::UnsupportedMri)?;
        if self.source_for(dst).is_none() {
            return Err(ApiError::NoLocalAddress);
        }
        let handle = handle.unwrap_or_else(|| self.alloc_handle());
        let p = Pending {
            handle,
            data: msg.nslp_data,
            transfer: msg.transfer,
            report: msg.report_dispatch,
            hops: msg.gist_hops,
        };
        let idx = self.lookup(&key);
        let state = idx.and_then(|i| self.mrs[i as usize].down.as_ref().map(|d| d.state));
        let lifetime = now + self.cfg.state_lifetime;
        match (idx, state) {
            (Some(idx), Some(QueryingState::Established | QueryingState::AwaitingRefresh)) => {
                let needs_ma = p.transfer.reliable || p.transfer.secure;
                let secure = p.transfer.secure;
                let ma_secure = self.mrs[idx as usize]
                    .down
                    .as_ref()
                    .and_then(|d| d.ma)
                    .is_some_and(|m| self.ma_transport(m) == MaTransport::Tls);
                let Some(d) = self.mrs[idx as usize].down.as_mut() else {
                    return Ok(handle);
                };
                d.expires = d.expires.max(lifetime);
                if (needs_ma && d.ma.is_none()) || (secure && !ma_secure) {
                    // Reliable (secure) transfer on D-mode (plain TCP) state: re-run the
                    // handshake asking for C-mode (TLS).
                    d.cmode = true;
                    d.secure |= secure;
                    d.waiting().queue.push(p);
                    if d.state == QueryingState::Established {
                        self.start_refresh(now, idx);
                    }
                } else {
                    self.send_data_down(now, idx, p);
                }
                self.schedule_mrs(idx);
            }
            (Some(idx), Some(QueryingState::AwaitingResponse)) => {
                let full = self.mrs[idx as usize]
                    .down
                    .as_ref()
                    .is_some_and(|d| d.queue().len() >= self.cfg.queue_limit);
                if full {
                    self.fail(&key, p.handle, DeliveryError::QueueFull);
                } else if let Some(d) = self.mrs[idx as usize].down.as_mut() {
                    d.cmode |= p.transfer.reliable || p.transfer.secure;
                    d.secure |= p.transfer.secure;
                    d.expires = d.expires.max(lifetime);
                    d.waiting().queue.push(p);
                }
            }
            _ if !p.transfer.setup_state => {
                self.send_stateless(now, &key, p, msg.gist_hops, msg.ip_ttl)
            }
            _ => {
                let idx = self.lookup_or_insert(key);
                let hops = msg.gist_hops.unwrap_or(self.cfg.gist_hops);
                let ttl = msg.ip_ttl.unwrap_or(self.cfg.ip_ttl);
                let reliable = p.transfer.reliable;
                let secure = p.transfer.secure;
                if self.cfg.piggyback && !reliable && !secure {
                    self.start_query(now, idx, false, false, Some(p), hops, ttl);
                } else {
                    self.start_query(now, idx, reliable, secure, None, hops, ttl);
                    if let Some(d) = self.mrs[idx as usize].down.as_mut() {
                        d.waiting().queue.push(p);
                    }
                }
            }
        }
        Ok(handle)
    }

    /// SendMessage with an SII-Handle: explicit routing to that peer (RFC 5971 §7.1.4: "Messages
    /// sent using the SII-Handle MUST bypass the routing state tables at the sender, and this
    /// MUST be indicated by setting the E-flag"; only Data messages are sent this way). Over a
    /// messaging association to the peer when one is connected (a TLS one for secure
    /// transfer), else D-mode to its address with this node's NLI, so the receiver knows whom
    /// it came from. A handle GIST does not know, or a reliable or secure transfer without a
    /// suitable association, fails with a MessageStatus (B.3); nothing is queued and no
    /// routing state is made.
    fn send_explicit(
        &mut self,
        now: Instant,
        key: &MrsKey,
        peer: SiiHandle,
        msg: SendMessage,
        handle: MessageHandle,
    ) {
        let addr = peer.0;
        if !self.knows_handle(addr) {
            self.counters.explicit_failures += 1;
            self.fail(key, handle, DeliveryError::UnknownSiiHandle);
            return;
        }
        let mut p = Pending {
            handle,
            data: msg.nslp_data,
            transfer: msg.transfer,
            report: msg.report_dispatch,
            hops: msg.gist_hops,
        };
        let upstream = msg.mri.is_upstream();
        let ma = match self.connected_ma(addr, MaTransport::Tls) {
            Some(m) => Some(m),
            None if !p.transfer.secure => self.connected_ma(addr, MaTransport::Tcp),
            None => None,
        };
        match ma {
            Some(ma) => {
                let t = self.ma_transfer(ma);
                self.dispatched(key, handle, p.report, t);
                let mut m = self.data_msg(key, upstream, None, &mut p);
                m.e_flag = true;
                self.counters.explicit_sent += 1;
                self.ma_send(now, ma, &m);
            }
            None if p.transfer.reliable || p.transfer.secure => {
                // Never unreliably (or in the clear) what was asked otherwise.
                self.counters.explicit_failures += 1;
                self.fail(key, handle, DeliveryError::Unsupported);
            }
            None => {
                let Some(src) = self.source_for(addr) else {
                    self.counters.explicit_failures += 1;
                    self.fail(key, handle, DeliveryError::UnknownSiiHandle);
                    return;
                };
                self.dispatched(key, handle, p.report, TransferAttributes::default());
                let mut m = self.data_msg(key, upstream, Some(src), &mut p);
                m.e_flag = true;
                self.counters.explicit_sent += 1;
                let ttl = msg.ip_ttl.unwrap_or(self.cfg.ip_ttl);
                self.send_dmode(&m, Some(src), addr, crate::wire::GIST_PORT, false, ttl);
            }
        }
    }

    /// A Data message without routing state: Q-mode encapsulated towards the flow's
    /// destination, picked up by the next GIST node of the NSLP (RFC 5971 §4.3.2).
    fn send_stateless(
        &mut self,
        _now: Instant,
        key: &MrsKey,
        p: Pending,
        hops: Option<u8>,
        ttl: Option<u8>,
    ) {
        let Some(dst) = key.mri.destination() else {
            return;
        };
        let Some(src) = self.source_for(dst) else {
            return;
        };
        self.dispatched(
            key,
            p.handle,
            p.report,
            TransferAttributes {
                setup_state: false,
                ..TransferAttributes::default()
            },
        );
        let msg = Message {
            gist_hops: hops.unwrap_or(self.cfg.gist_hops),
            nslpid: key.nslpid,
            c_flag: true,
            s_flag: true,
            r_flag: false,
            e_flag: false,
            body: Body::Data(Data {
                nat: None,
                mri: key.mri.clone(),
                session_id: key.session_id,
                nli: Some(self.nli(src)),
                nslp_data: p.data,
                unknown: Vec::new(),
            }),
        };
        self.send_dmode(
            &msg,
            Some(src),
            dst,
            crate::wire::GIST_PORT,
            true,
            ttl.unwrap_or(self.cfg.ip_ttl),
        );
    }

    fn data_msg(
        &self,
        key: &MrsKey,
        upstream: bool,
        nli_addr: Option<IpAddr>,
        p: &mut Pending,
    ) -> Message {
        let data = std::mem::take(&mut p.data);
        Message {
            // The NSLP's hop count, kept as the message is forwarded (RFC 5971 §4.3.2).
            gist_hops: p.hops.unwrap_or(self.cfg.gist_hops),
            nslpid: key.nslpid,
            c_flag: false,
            s_flag: true,
            r_flag: false,
            e_flag: false,
            body: Body::Data(Data {
                nat: None,
                mri: key.mri.with_direction(upstream),
                session_id: key.session_id,
                nli: nli_addr.map(|a| self.nli(a)),
                nslp_data: data,
                unknown: Vec::new(),
            }),
        }
    }

    /// Send to the downstream peer: over the state's MA if it has one, else D-mode.
    pub(super) fn send_data_down(&mut self, now: Instant, idx: u32, mut p: Pending) {
        let s = &self.mrs[idx as usize];
        let Some(d) = s.down.as_ref() else { return };
        let Some(peer) = d.peer.and_then(|p| self.peer_addr(p)) else {
            return;
        };
        let key = s.key.key();
        let usable = |m: MaId| {
            self.ma_connected(m) && (!p.transfer.secure || self.ma_transport(m) == MaTransport::Tls)
        };
        match d.ma.filter(|&m| usable(m)) {
            Some(ma) => {
                let t = self.ma_transfer(ma);
                self.dispatched(&key, p.handle, p.report, t);
                let m = self.data_msg(&key, false, None, &mut p);
                self.ma_send(now, ma, &m);
            }
            None if p.transfer.reliable || p.transfer.secure => {
                // The MA is still connecting: wait for it.
                if let Some(d) = self.mrs[idx as usize].down.as_mut() {
                    d.waiting().queue.push(p);
                }
            }
            None => {
                self.dispatched(&key, p.handle, p.report, TransferAttributes::default());
                let src = self.source_for(peer);
                let m = self.data_msg(&key, false, src, &mut p);
                self.send_dmode(
                    &m,
                    src,
                    peer,
                    crate::wire::GIST_PORT,
                    false,
                    self.cfg.ip_ttl,
                );
            }
        }
    }

    /// Send to the upstream peer: over the MA its Confirm came by, else D-mode.
    fn send_data_up(&mut self, now: Instant, idx: u32, mut p: Pending) {
        let s = &self.mrs[idx as usize];
        let Some(up) = s.up.as_ref() else { return };
        let Some(peer) = self.peer_addr(up.peer) else {
            return;
        };
        let key = s.key.key();
        let up_ma = up.ma.filter(|&m| self.ma_connected(m));
        let secure_ok = up_ma.is_some_and(|m| self.ma_transport(m) == MaTransport::Tls);
        match up_ma {
            _ if p.transfer.secure && !secure_ok => {
                // Never in the clear: the querying node did not set up a TLS association.
                self.fail(&key, p.handle, DeliveryError::Unsupported);
            }
            Some(ma) => {
                let t = self.ma_transfer(ma);
                self.dispatched(&key, p.handle, p.report, t);
                let m = self.data_msg(&key, true, None, &mut p);
                self.ma_send(now, ma, &m);
            }
            None => {
                self.dispatched(&key, p.handle, p.report, TransferAttributes::default());
                let src = self.source_for(peer);
                let m = self.data_msg(&key, true, src, &mut p);
                self.send_dmode(
                    &m,
                    src,
                    peer,
                    crate::wire::GIST_PORT,
                    false,
                    self.cfg.ip_ttl,
                );
            }
        }
    }

    /// Send what waited for the downstream handshake.
    pub(super) fn flush_down_queue(&mut self, now: Instant, idx: u32) {
        let Some(d) = self.mrs[idx as usize].down.as_mut() else {
            return;
        };
        let queue = d.take_queue();
        for p in queue {
            self.send_data_down(now, idx, p);
        }
    }

    /// Send what waited for the upstream Confirm.
    pub(super) fn flush_up_pending(&mut self, now: Instant, idx: u32) {
        let s = &mut self.mrs[idx as usize];
        let pending = s.pending_up.take().map(|p| p.msgs).unwrap_or_default();
        for p in pending {
            self.send_data_up(now, idx, p);
        }
    }

    /// The responder offered no TLS: fail every queued secure message of `idx`.
    pub(super) fn fail_secure_queue(&mut self, idx: u32) {
        let key = self.mrs[idx as usize].key.key();
        let Some(d) = self.mrs[idx as usize].down.as_mut() else {
            return;
        };
        d.secure = false;
        let (secure, rest): (Vec<Pending>, Vec<Pending>) =
            d.take_queue().into_iter().partition(|p| p.transfer.secure);
        if !rest.is_empty() {
            d.waiting().queue = rest;
        }
        for p in secure {
            self.fail(&key, p.handle, DeliveryError::Unsupported);
        }
    }

    /// Report a failed message to its NSLP (B.3).
    pub(super) fn fail(&mut self, key: &MrsKey, handle: MessageHandle, error: DeliveryError) {
        self.upcall(Upcall::Status(MessageStatus {
            handle,
            nslpid: key.nslpid,
            session_id: key.session_id,
            error: Some(error),
            transfer: None,
        }));
    }

    /// Report a message handed to the transport or an MA with `transfer`, if its NSLP asked
    /// (B.3: MessageStatus tells "the transfer attributes that have been selected").
    pub(super) fn dispatched(
        &mut self,
        key: &MrsKey,
        handle: MessageHandle,
        report: bool,
        transfer: TransferAttributes,
    ) {
        if report {
            self.upcall(Upcall::Status(MessageStatus {
                handle,
                nslpid: key.nslpid,
                session_id: key.session_id,
                error: None,
                transfer: Some(transfer),
            }));
        }
    }

    /// The transfer attributes a message sent over MA `ma` gets: reliable, secure over TLS.
    fn ma_transfer(&self, ma: MaId) -> TransferAttributes {
        TransferAttributes {
            reliable: true,
            secure: self.ma_transport(ma) == MaTransport::Tls,
            setup_state: true,
        }
    }

    /// A Data message (RFC 5971 §6.2 Rule 7, §6.3 Rules 4 and 6).
    pub(super) fn on_data(&mut self, now: Instant, ctx: Inbound, msg: Message) {
        let _ = now;
        let Body::Data(d) = &msg.body else { return };
        let upstream = d.mri.is_upstream();
        let key = MrsKey::new(&d.mri, msg.nslpid, d.session_id);
        let mut peer = d.nli.as_ref().map(|n| n.interface_address);
        if msg.e_flag {
            // RFC 5971 §7.1.4: "At the receiver, GIST MUST NOT validate the MRI/SID/NSLPID
            // against local routing state"; §4.3.2 rule 1: delivered, flagged to the NSLP. Who
            // sent it: the association's peer, else its NLI.
            self.counters.explicit_received += 1;
            if let Some(m) = ctx.ma.and_then(|m| self.mas.get(m.index())) {
                peer = Some(m.peer);
            }
        } else if !msg.c_flag {
            // Routed by state: the half facing the sender must exist, and an MA carrying it
            // must be the one that half uses (A.4.4.4, A.4.4.5).
            let s = self.lookup(&key).map(|i| &self.mrs[i as usize]);
            let side = s.and_then(|s| {
                if upstream {
                    s.down.as_ref().and_then(|x| x.peer.map(|p| (p, x.ma)))
                } else {
                    s.up.as_ref()
                        .filter(|u| u.state == RespondingState::Established)
                        .map(|u| (u.peer, u.ma))
                }
            });
            match side {
                None => {
                    self.drop_msg("data_no_state");
                    let e = ErrorObject::new(error_code::NO_ROUTING_STATE, 0, msg.header());
                    self.reply_error(ctx, &msg, e);
                    return;
                }
                Some((_, Some(ma))) if ctx.ma.is_some_and(|m| m != ma) => {
                    self.drop_msg("data_wrong_ma");
                    let e = ErrorObject::new(
                        error_code::INCORRECTLY_DELIVERED_MESSAGE,
                        0,
                        msg.header(),
                    );
                    self.reply_error(ctx, &msg, e);
                    return;
                }
                // B.2 SII-Handle: who sent it — its NLI, else the association's peer — not
                // the peer the state names: after a route change the old peer's messages still
                // arrive (its state lingers), and the NSLP tells them apart by this handle
                // (RFC 5974 §3.2.12, §5.2.5.4).
                Some((p, _)) => {
                    let ma_peer = ctx.ma.and_then(|m| self.mas.get(m.index())).map(|m| m.peer);
                    peer = peer.or(ma_peer).or_else(|| self.peer_addr(p));
                }
            }
        }
        let Body::Data(d) = msg.body else { return };
        self.upcall(Upcall::Recv(RecvMessage {
            nslp_data: d.nslp_data,
            nslpid: msg.nslpid,
            session_id: d.session_id,
            mri: d.mri,
            routing_state_check: false,
            sii_handle: peer.map(SiiHandle),
            transfer: TransferAttributes {
                reliable: ctx.ma.is_some(),
                secure: ctx
                    .ma
                    .is_some_and(|m| self.ma_transport(m) == MaTransport::Tls),
                setup_state: !msg.c_flag,
            },
            ip_ttl: ctx.ttl,
            ip_distance: d
                .nli
                .and_then(|n| n.ip_ttl.checked_sub(ctx.ttl))
                .map(|x| x.saturating_add(1)),
            gist_hops: msg.gist_hops,
            inbound_interface: ctx.ifindex,
            explicitly_routed: msg.e_flag,
        }));
    }

    /// A GIST Error about a message this node sent (RFC 5971 §5.6: never answered). Errors
    /// about our Query end the handshake; errors about our Confirm or Data mean the peer holds
    /// no state for it (§4.4.6) and change ours ([`GistEngine::on_peer_lost_state`]).
    pub(super) fn on_error(&mut self, now: Instant, ctx: Inbound, msg: ErrorMsg) {
        let e = msg.error;
        *self.counters.errors_received.entry(e.code).or_insert(0) += 1;
        // A.4.3: Informational and Success replies "should not be thought of as changing the
        // condition of the protocol state machine".
        if matches!(e.class, ErrorClass::Informational | ErrorClass::Success) {
            self.drop_msg("error_informational");
            return;
        }
        let (Some(sid), Some(mri)) = (e.session_id, e.mri.as_ref()) else {
            self.drop_msg("error_without_session");
            return;
        };
        let key = MrsKey::new(mri, e.original_header.nslpid, sid);
        let Some(idx) = self.lookup(&key) else {
            // §4.4.6: an Error without routing state is not answered; it MAY be logged.
            self.drop_msg("error_no_state");
            return;
        };
        // Who sent it: the MA it came over, else its NLI, else the IP source (§5.6).
        let sender = match ctx.ma.and_then(|m| self.mas.get(m.index())) {
            Some(m) => m.peer,
            None => msg.nli.as_ref().map_or(ctx.src, |n| n.interface_address),
        };
        match e.original_header.kind() {
            Some(MsgType::Query) => self.on_query_error(idx, &key, &e),
            Some(MsgType::Confirm | MsgType::Data) => {
                let failure = DeliveryError::PeerError {
                    class: e.class.number(),
                    code: e.code,
                };
                self.on_peer_lost_state(now, idx, Direction::of(mri), sender, failure)
            }
            _ => self.drop_msg("error_ignored"),
        }
        self.reap_mrs(idx);
    }

    /// An Error about our Query: the handshake cannot succeed — the path's end (Endpoint
    /// Found), or the peer refuses the NSLP or the message.
    fn on_query_error(&mut self, idx: u32, key: &MrsKey, e: &ErrorObject) {
        let Some(d) = self.mrs[idx as usize].down.take() else {
            self.drop_msg("error_no_state");
            return;
        };
        let last = e.code == error_code::ENDPOINT_FOUND;
        self.counters.handshake_failures += 1;
        let err = if last {
            DeliveryError::NoPeer
        } else {
            DeliveryError::PeerError {
                class: e.class.number(),
                code: e.code,
            }
        };
        self.release_down(key, *d, err);
        self.notify(
            key,
            if last {
                NotificationKind::LastNode
            } else {
                NotificationKind::RoutingStateLost {
                    direction: Direction::Downstream,
                }
            },
        );
    }

    /// The peer in `direction` rejected our Confirm or Data with an Error (No Routing State,
    /// Object Type/Value Error, …): it holds no routing state for it, and what we sent is lost.
    ///
    /// - Querying node (downstream): RFC 5971 §4.4.6 "MUST restart the GIST handshake from the
    ///   beginning, with a new Query" — §6.2 Rule 3 (er_NoRSM, "the Confirm was lost in transit
    ///   or the peer has reset") back to Awaiting Response, where NSLP data is queued rather
    ///   than sent into nothing. The NSLP hears Communication Failure (B.4: "messages may have
    ///   been lost") now and Routing Status Change when the new handshake succeeds. A peer
    ///   that keeps rejecting us is RFC 5972 A.1 transition 18 (Tg_ERROR): after
    ///   [`MAX_ERROR_RESTARTS`] restarts within one refresh period the state is deleted, its
    ///   queued messages fail (MessageStatus) and the NSLP hears Routing State Lost.
    /// - Responding node (upstream): §4.4.6 "MUST delete its own routing state and SHOULD
    ///   report an error condition to the local signalling application".
    ///
    /// Only the peer the state names may do this (§4.4.6 warns of injected Errors): an Error
    /// from anyone else changes nothing. The failure of the MA a downstream half uses takes
    /// the same path (RFC 5972 A.1 transition 9, tg_MA_error: a new Query; RFC 5971 §6.4:
    /// reported to the NSLP as a NetworkNotification). `failure` is what queued messages fail
    /// with if the state is given up.
    pub(super) fn on_peer_lost_state(
        &mut self,
        now: Instant,
        idx: u32,
        direction: Direction,
        sender: IpAddr,
        failure: DeliveryError,
    ) {
        let key = self.mrs[idx as usize].key.key();
        match direction {
            Direction::Downstream => {
                let Some(d) = self.mrs[idx as usize].down.as_ref() else {
                    self.drop_msg("error_no_state");
                    return;
                };
                if d.state == QueryingState::AwaitingResponse {
                    // No peer holds state for us yet; the handshake under way sets it up.
                    self.drop_msg("error_while_awaiting_response");
                    return;
                }
                let Some(peer) = d.peer.and_then(|p| self.peer_addr(p)) else {
                    self.drop_msg("error_no_state");
                    return;
                };
                if peer != sender {
                    self.drop_msg("error_not_from_peer");
                    return;
                }
                if d.restarts >= MAX_ERROR_RESTARTS {
                    if let Some(d) = self.mrs[idx as usize].down.take() {
                        self.counters.peer_error_teardowns += 1;
                        self.release_down(&key, *d, failure);
                    }
                    self.notify(
                        &key,
                        NotificationKind::RoutingStateLost {
                            direction: Direction::Downstream,
                        },
                    );
                    return;
                }
                self.counters.error_restarts += 1;
                self.notify(
                    &key,
                    NotificationKind::CommunicationFailure {
                        direction: Direction::Downstream,
                        peer: SiiHandle(peer),
                    },
                );
                // The peer is forgotten so that the Response re-establishing the state is
                // reported as such (Routing Status Change); the MA stays in use.
                if let Some(d) = self.mrs[idx as usize].down.as_mut() {
                    d.restarts += 1;
                    d.take_confirm();
                    if let Some(p) = d.peer.take() {
                        self.peer_unref(p);
                    }
                }
                self.new_handshake(now, idx, QueryingState::AwaitingResponse);
            }
            Direction::Upstream => {
                let Some(up) = self.mrs[idx as usize].up.as_ref() else {
                    self.drop_msg("error_no_state");
                    return;
                };
                if self.peer_addr(up.peer) != Some(sender) {
                    self.drop_msg("error_not_from_peer");
                    return;
                }
                if let Some(up) = self.take_up(idx) {
                    self.counters.peer_error_teardowns += 1;
                    self.release_up(up);
                }
                self.notify(
                    &key,
                    NotificationKind::RoutingStateLost {
                        direction: Direction::Upstream,
                    },
                );
            }
        }
    }

    pub(super) fn notify(&mut self, key: &MrsKey, kind: NotificationKind) {
        self.upcall(Upcall::Notify(crate::nslp::NetworkNotification {
            nslpid: key.nslpid,
            session_id: key.session_id,
            mri: key.mri.clone(),
            kind,
        }));
    }

    /// Answer `msg` with an Error, filling in its Session ID and MRI, to the address its NLI
    /// gives (else its IP source).
    pub(super) fn reply_error(&mut self, ctx: Inbound, msg: &Message, mut e: ErrorObject) {
        if msg.msg_type() == crate::wire::MsgType::Error {
            return;
        }
        e.dmode = ctx.ma.is_none();
        if e.code != error_code::COMMON_HEADER_PARSE_ERROR {
            e.session_id = e.session_id.or(msg.session_id());
            if e.mri.is_none() {
                e.mri = msg.mri().cloned();
            }
        }
        let nli = match &msg.body {
            Body::Query(q) => Some(&q.nli),
            Body::Response(r) => Some(&r.nli),
            Body::Confirm(c) => Some(&c.nli),
            Body::Data(d) => d.nli.as_ref(),
            _ => None,
        };
        let to = nli.map_or(ctx.src, |n| n.interface_address);
        self.send_error(ctx, to, e);
    }

    /// Send an Error message: over the MA the offending message came by, else D-mode.
    pub(super) fn send_error(&mut self, ctx: Inbound, to: IpAddr, e: ErrorObject) {
        *self.counters.errors_sent.entry(e.code).or_insert(0) += 1;
        let our = self
            .iface_addr(ctx.ifindex, to)
            .or_else(|| self.source_for(to));
        let msg = Message {
            gist_hops: self.cfg.gist_hops,
            // RFC 5971 §5.6: "The NSLPID in the common header of the Error message has the
            // value zero"; the receiver finds the NSLPID in the embedded common header.
            nslpid: 0,
            c_flag: false,
            s_flag: true,
            r_flag: false,
            e_flag: false,
            body: Body::Error(ErrorMsg {
                nat: None,
                nli: our.map(|a| self.nli(a)),
                error: e,
                unknown: Vec::new(),
            }),
        };
        match ctx.ma {
            Some(ma) => self.ma_send_now(ma, &msg),
            None => self.send_dmode(&msg, our, to, ctx.src_port, false, self.cfg.ip_ttl),
        }
    }
}
