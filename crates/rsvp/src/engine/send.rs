//! Building and queueing outgoing messages.
//!
//! Path, PathTear and ResvConf travel towards the data destination with the Router Alert option
//! so every RSVP hop intercepts them (RFC 2205 §3.1.3); Resv, ResvTear, PathErr and ResvErr go
//! hop by hop as plain unicast to the neighbour's address (§3.1.4).

use super::state::{Oi, PsbId, RsbId, SessionId};
use super::{RsvpEngine, TrafficControl};
use crate::few::Few;
use crate::wire::error::error_code;
use crate::wire::objects::class;
use crate::wire::{
    ErrorSpec, FlowDescriptor, Message, MsgType, Path, PathErr, PathTear, ResvConf, ResvConfirm,
    ResvErr, RsvpHop, SenderDescriptor, Session, Style, TimeValues,
};
use pathwise_core::io::{IPPROTO_RSVP, IfIndex, Transmit, Transport};
use std::net::IpAddr;

/// The largest INTEGRITY object (HMAC-SHA-512), reserved in every send buffer so signing does
/// not reallocate.
pub(super) const MAX_INTEGRITY_LEN: usize = 4 + 16 + pathwise_auth::MAX_DIGEST_LEN;

impl<T: TrafficControl> RsvpEngine<T> {
    /// The source address for a message towards `like`: our address on `ifindex` (or, when
    /// none is given, on the interface the route to `like` leaves by) of the same family;
    /// failing that any interface address, then any other local address, never a loopback one
    /// (a loopback source is a martian to every neighbour).
    pub(super) fn iface_addr(&self, ifindex: Option<IfIndex>, like: IpAddr) -> IpAddr {
        let same = |a: &&IpAddr| a.is_ipv4() == like.is_ipv4() && !a.is_loopback();
        let out = ifindex.or_else(|| self.fib.lookup(like).map(|(_, r)| r.ifindex));
        out.and_then(|ix| self.cfg.interfaces.iter().find(|i| i.ifindex == ix))
            .and_then(|i| i.addrs.iter().find(same))
            .or_else(|| {
                self.cfg
                    .interfaces
                    .iter()
                    .flat_map(|i| i.addrs.iter())
                    .find(same)
            })
            .or_else(|| self.cfg.local_addrs.iter().find(same))
            .copied()
            .unwrap_or(like)
    }

    /// Whether a message may go to `dst`: never to a martian address (see [`super::martian`]),
    /// except that a message routed towards a multicast session's group with Router Alert
    /// (Path, PathTear; RFC 2205 §3.1.3) is meant for a group. Refusals are counted and logged:
    /// they mean hostile or broken input got past the checks on receipt.
    pub(super) fn may_send_to(&mut self, t: MsgType, dst: IpAddr, router_alert: bool) -> bool {
        let Some(m) = super::martian::Martian::of(dst, self.is_local(dst)) else {
            return true;
        };
        if m == super::martian::Martian::Multicast && router_alert {
            return true;
        }
        self.counters.unsent += 1;
        tracing::warn!(msg_type = ?t, %dst, kind = ?m, "rsvp message to a martian address not sent");
        false
    }

    pub(super) fn has_interface(&self, ifindex: IfIndex) -> bool {
        self.cfg.interfaces.iter().any(|i| i.ifindex == ifindex)
    }

    /// Hand back a sent [`Transmit`]'s payload: the next message is written into it instead of
    /// a fresh allocation, so a driver that recycles what it sent sends without allocating in
    /// steady state (issue #21). Optional; a driver that keeps its payloads costs one allocation
    /// per message. A few dozen buffers are kept ([`pathwise_core::spare::SpareBuffers`]).
    pub fn recycle(&mut self, payload: Vec<u8>) {
        self.spare.put(payload);
    }

    /// An empty buffer for a message of about `len` bytes: a recycled one when there is one.
    pub(super) fn payload_buffer(&mut self, len: usize) -> Vec<u8> {
        self.spare.take(len)
    }

    /// Emit `msg`, sign it under the outgoing interface's integrity policy, and queue it.
    pub(super) fn transmit(
        &mut self,
        msg: &Message,
        src: Option<IpAddr>,
        dst: IpAddr,
        ifindex: Option<IfIndex>,
        router_alert: bool,
        ttl: u8,
    ) {
        self.transmit_keyed(msg, (src, dst, ifindex, router_alert, ttl), None);
    }

    /// [`Self::transmit`] for a Path or Resv that refresh reduction identifies by `key`
    /// (RFC 2961): an unchanged, acknowledged one becomes an entry of the next Srefresh.
    pub(super) fn transmit_keyed(
        &mut self,
        msg: &Message,
        (src, dst, ifindex, router_alert, ttl): (Option<IpAddr>, IpAddr, Option<IfIndex>, bool, u8),
        key: Option<super::refresh::OutKey>,
    ) {
        if !self.may_send_to(msg.msg_type(), dst, router_alert) {
            return;
        }
        let Some(payload) = self.emit_identified(msg, ttl, key) else {
            return;
        };
        let mut t = Transmit {
            src,
            dst,
            ifindex,
            transport: Transport::Raw(IPPROTO_RSVP),
            router_alert: router_alert.then_some(router_alert_value(dst)),
            ttl,
            payload,
        };
        // Path and Resv state is refreshed at once towards a challenger, and Hellos repeat
        // every interval; the rest is kept.
        let refreshed = match msg {
            Message::Path(_) | Message::Hello(_) => true,
            Message::Resv(r) => r.confirm.is_none(),
            _ => false,
        };
        self.sign_outgoing(&mut t, !refreshed);
        self.counters.count_out(msg.msg_type());
        self.transmits.push_back(t);
    }

    /// Queue a ready payload to a neighbour (the integrity handshake, which signs its own).
    pub(super) fn push_transmit(
        &mut self,
        t: MsgType,
        payload: Vec<u8>,
        src: IpAddr,
        dst: IpAddr,
        ifindex: IfIndex,
    ) {
        if !self.may_send_to(t, dst, false) {
            return;
        }
        self.counters.count_out(t);
        self.transmits.push_back(Transmit {
            src: Some(src),
            dst,
            ifindex: Some(ifindex),
            transport: Transport::Raw(IPPROTO_RSVP),
            router_alert: None,
            ttl: self.cfg.ttl,
            payload,
        });
    }

    /// Send the Path of one sender out of each of `oifs` (local delivery needs no message).
    pub(super) fn send_path(&mut self, id: PsbId, oifs: &[Oi]) {
        for ifx in oifs.iter().flatten() {
            let p = &self.psbs[id];
            let session = self.session_key(p.session);
            let mut adspec = p.adspec.map(|a| self.adspecs.get(a).clone());
            if let Some(a) = adspec.as_mut() {
                a.compose(&self.tc.hop_characteristics(*ifx));
            }
            let (policy, forward) = p
                .carried()
                .iter()
                .cloned()
                .partition(|o| o.class == class::POLICY_DATA);
            let addr = self.iface_addr(Some(*ifx), session.dest);
            let te = p.te();
            let msg = Message::Path(Path {
                integrity: None,
                session,
                hop: RsvpHop::new(addr, ifx.0),
                time_values: TimeValues {
                    refresh_ms: self.refresh_ms(),
                },
                // RFC 3209 §4.3.4, §4.2, §4.7: the route left to follow, the label request and
                // the session attribute as received.
                explicit_route: te.and_then(|t| t.ero_out.clone()),
                label_request: te.map(|t| t.label_request),
                session_attribute: te.and_then(|t| t.session_attribute.clone()),
                policy,
                sender: SenderDescriptor {
                    template: p.sender,
                    tspec: *self.tspecs.get(p.tspec),
                    adspec,
                    // §4.4.3: this node's outgoing address pushed on the route recorded so far.
                    record_route: te.and_then(|t| t.rro.as_ref()).map(|r| {
                        super::te::labels::pushed(
                            Some(r),
                            [super::te::labels::address_subobject(addr)],
                        )
                    }),
                },
                forward,
            });
            let (src, ttl) = (p.sender.src(), p.ttl);
            let key = super::refresh::OutKey::Path(id, *ifx);
            let to = (Some(src), session.dest, Some(*ifx), true, ttl);
            self.transmit_keyed(&msg, to, Some(key));
        }
    }

    /// Send a PathTear for one sender out of each of `oifs`.
    pub(super) fn send_path_tear(&mut self, id: PsbId, oifs: &[Oi]) {
        for ifx in oifs.iter().flatten() {
            let p = &self.psbs[id];
            let session = self.session_key(p.session);
            let msg = Message::PathTear(PathTear {
                integrity: None,
                session,
                hop: RsvpHop::new(self.iface_addr(Some(*ifx), session.dest), ifx.0),
                sender_template: Some(p.sender),
                sender_tspec: Some(*self.tspecs.get(p.tspec)),
                forward: Vec::new(),
            });
            let (src, ttl) = (p.sender.src(), p.ttl);
            self.transmit(&msg, Some(src), session.dest, Some(*ifx), true, ttl);
        }
    }

    /// A PathErr towards the previous hop `to` (RFC 2205 §3.1.7).
    pub(super) fn send_path_err_raw(
        &mut self,
        session: Session,
        to: IpAddr,
        ifindex: IfIndex,
        code: u8,
        value: u16,
        sender: Option<SenderDescriptor>,
    ) {
        let error = ErrorSpec {
            node: self.iface_addr(Some(ifindex), session.dest),
            flags: 0,
            code,
            value,
        };
        let msg = Message::PathErr(PathErr {
            integrity: None,
            session,
            error,
            policy: Vec::new(),
            sender,
            forward: Vec::new(),
        });
        let src = self.iface_addr(Some(ifindex), to);
        self.transmit(&msg, Some(src), to, Some(ifindex), false, self.cfg.ttl);
    }

    /// A ResvErr to the next hop of an RSB, or the error event to its local receiver.
    pub(super) fn send_resv_err(
        &mut self,
        sid: SessionId,
        rsb: RsbId,
        error: ErrorSpec,
        flows: Few<FlowDescriptor>,
    ) {
        let r = &self.rsbs[rsb];
        let session = self.session_key(sid);
        let style = Style {
            flags: 0,
            kind: r.style().kind(),
        };
        match r.nhop().map(|h| self.hops.get(h).clone()) {
            Some(nhop) => {
                let oi = r.oi();
                let hop = RsvpHop::new(self.iface_addr(oi, session.dest), oi.map_or(0, |i| i.0));
                let msg = Message::ResvErr(ResvErr {
                    integrity: None,
                    session,
                    hop,
                    error,
                    scope: None,
                    policy: Vec::new(),
                    style,
                    flows,
                    forward: Vec::new(),
                });
                let src = self.iface_addr(oi, nhop.addr);
                self.transmit(&msg, Some(src), nhop.addr, oi, false, self.cfg.ttl);
            }
            None => self.receiver_error(sid, error, flows),
        }
    }

    /// A ResvConf to the receiver that asked for it (RFC 2205 §3.1.9): towards the receiver's
    /// address with Router Alert, or straight to the local application.
    pub(super) fn send_resv_conf(
        &mut self,
        sid: SessionId,
        confirm: ResvConfirm,
        style: Style,
        flows: Few<FlowDescriptor>,
    ) {
        let session = self.session_key(sid);
        let node = self.iface_addr(None, confirm.receiver);
        if self.is_local(confirm.receiver) {
            self.events.push_back(super::Event::Confirmed {
                session,
                from: node,
                flows,
            });
            return;
        }
        let error = ErrorSpec {
            node,
            flags: 0,
            code: error_code::CONFIRMATION,
            value: 0,
        };
        let msg = Message::ResvConf(ResvConf {
            integrity: None,
            session,
            error,
            confirm,
            style,
            flows,
            forward: Vec::new(),
        });
        self.transmit(&msg, Some(node), confirm.receiver, None, true, self.cfg.ttl);
    }
}

/// The Router Alert value of RSVP datagrams towards `dst`: 0 over IPv4 (RFC 2113 §2.1, "Router
/// shall examine packet"), 1 over IPv6 (RFC 2711 §2.1, "Datagram contains RSVP message").
pub fn router_alert_value(dst: IpAddr) -> u16 {
    u16::from(dst.is_ipv6())
}
