//! Messaging associations (RFC 5971 §4.4.2–§4.4.5, §6.4): C-mode over reliable
//! streams the driver runs, one per peer and reused by every session with that peer, kept alive
//! with MA-Hello and torn down when idle or silent.

use super::handshake::Inbound;
use super::state::{Ma, MaId, MaState};
use super::{GistEngine, MaTransport, StreamInput, StreamOp, StreamTransmit, TimerKey};
use crate::wire::{Body, Confirm, MaHello, Message, frame_len};
use pathwise_core::io::IfIndex;
use pathwise_core::rand::Rng;
use pathwise_core::time::{Duration, Instant};
use std::net::IpAddr;

/// The longest message accepted over a stream: a common header and 16 KiB words of objects
/// (four full NSLP-Data objects); the length field allows 256 KiB.
pub const MAX_STREAM_MESSAGE: usize = 64 * 1024;

impl GistEngine {
    /// A stream event from the driver (C-mode input) on a TCP stream.
    pub fn handle_stream(&mut self, now: Instant, input: StreamInput<'_>) {
        self.handle_stream_on(now, MaTransport::Tcp, input);
    }

    /// A stream event from the driver on the stream to the input's peer over `transport`
    /// (a TLS stream reports `Connected`/`Accepted` once its TLS handshake is done).
    pub fn handle_stream_on(
        &mut self,
        now: Instant,
        transport: MaTransport,
        input: StreamInput<'_>,
    ) {
        self.now = self.now.max(now);
        match input {
            StreamInput::Connected { peer } => self.on_connected(now, (peer, transport)),
            StreamInput::Accepted { peer } => self.on_accepted(now, (peer, transport)),
            StreamInput::Data { peer, bytes } => {
                self.on_stream_data(now, (peer, transport), bytes);
            }
            StreamInput::Closed { peer } => {
                if let Some(&ma) = self.ma_index.get(&(peer, transport)) {
                    self.close_ma(ma, false);
                }
            }
        }
        self.dispatch_upcalls(now);
    }

    /// A second stream from a peer that already has an association over `transport`: may it
    /// replace that association? `bytes` is everything the new stream has sent so far.
    ///
    /// RFC 5971 §4.4.3: "A messaging association is associated with the NLI object that was
    /// provided by the peer in the Query/Response/Confirm at the time the association was
    /// first set up", and the first message the querying node sends on a new association is
    /// the Confirm (§4.4.1, §5.7.1), whose Responder-Cookie the responder MUST verify, tearing
    /// the MA down if it fails "If this is the first message on a new MA" (§5.7.1). So a new
    /// connection becomes the peer's association only once its first message is a Confirm
    /// from that peer (NLI interface address) with a cookie this node minted for it; until
    /// then the working association stays (§8.2/§8.3: an attacker able to open a connection
    /// from the peer's address must not be able to close the peer's association).
    /// Nothing is installed here: once the driver swaps the streams, the Confirm is fed as
    /// the new association's first message.
    pub fn vet_replacement_stream(
        &mut self,
        now: Instant,
        peer: IpAddr,
        transport: MaTransport,
        bytes: &[u8],
    ) -> StreamVetting {
        self.now = self.now.max(now);
        if !self.ma_index.contains_key(&(peer, transport)) {
            return StreamVetting::Accept; // no association to protect
        }
        let refuse = |e: &mut GistEngine, reason: &'static str| {
            e.drop_msg(reason);
            e.counters.ma_takeovers_refused += 1;
            StreamVetting::Refuse(reason)
        };
        let Some(n) = frame_len(bytes) else {
            return StreamVetting::NeedMore;
        };
        if n > MAX_STREAM_MESSAGE {
            return refuse(self, "ma_takeover_too_large");
        }
        let Some(frame) = bytes.get(..n) else {
            return StreamVetting::NeedMore;
        };
        let Ok(msg) = Message::parse(frame) else {
            return refuse(self, "ma_takeover_malformed");
        };
        let Body::Confirm(c) = &msg.body else {
            return refuse(self, "ma_takeover_not_confirm");
        };
        if c.nli.interface_address.to_canonical() != peer.to_canonical() {
            return refuse(self, "ma_takeover_wrong_peer");
        }
        let rc = c
            .responder_cookie
            .as_ref()
            .map_or(&[][..], |x| x.0.as_slice());
        let valid = match self.cfg.cookie_mode {
            super::CookieMode::Hash => {
                let binding = super::cookie::CookieBinding {
                    nli: &c.nli,
                    mri: &c.mri,
                    nslpid: msg.nslpid,
                    session_id: c.session_id,
                };
                self.cookies.verify(&mut self.rng, now, rc, binding).is_ok()
            }
            super::CookieMode::Random => {
                let key = super::MrsKey::new(&c.mri, msg.nslpid, c.session_id);
                self.lookup(&key)
                    .and_then(|i| self.responder_cookie(i))
                    .is_some_and(|k| k.as_slice() == rc)
            }
        };
        if !valid {
            return refuse(self, "ma_takeover_bad_cookie");
        }
        self.counters.ma_takeovers += 1;
        StreamVetting::Accept
    }

    fn new_ma(
        &mut self,
        now: Instant,
        (peer, transport): (IpAddr, MaTransport),
        port: u16,
        state: MaState,
        initiator: bool,
    ) -> MaId {
        let hold = u32::try_from(self.cfg.ma_hold_time.as_millis()).unwrap_or(u32::MAX);
        let id = MaId::new(self.mas.insert(Ma {
            peer,
            port,
            transport,
            state,
            initiator,
            rx_buf: Vec::new(),
            users: 0,
            last_tx: now,
            last_rx: now,
            idle_since: Some(now),
            peer_hold_ms: hold,
            waiting: Vec::new(),
            hello_gap_ms: hold / 2,
            confirmed: false,
            timer: None,
            wake: Instant::MAX,
        }));
        self.ma_index.insert((peer, transport), id);
        self.counters.mas_opened += 1;
        self.schedule_ma(id);
        id
    }

    fn on_accepted(&mut self, now: Instant, peer: (IpAddr, MaTransport)) {
        match self.ma_index.get(&peer).copied() {
            // Both ends opened at once: the stream the peer opened serves (the driver keeps
            // one per peer); whatever waited for ours goes out now.
            Some(_) => self.on_connected(now, peer),
            None => {
                self.new_ma(now, peer, 0, MaState::Connected, false);
            }
        }
    }

    fn on_connected(&mut self, now: Instant, peer: (IpAddr, MaTransport)) {
        let Some(&ma) = self.ma_index.get(&peer) else {
            return;
        };
        let m = &mut self.mas[ma.index()];
        m.state = MaState::Connected;
        m.last_rx = now;
        let waiting = std::mem::take(&mut m.waiting);
        for idx in waiting {
            let confirm = self
                .mrs
                .get_mut(idx as usize)
                .and_then(|s| s.down.as_mut())
                .and_then(|d| d.take_confirm());
            if let Some(c) = confirm {
                let nslpid = self.mrs[idx as usize].key.nslpid();
                self.ma_send(now, ma, &confirm_msg(self.cfg.gist_hops, nslpid, c));
                self.flush_down_queue(now, idx);
            }
        }
        self.schedule_ma(ma);
    }

    fn on_stream_data(&mut self, now: Instant, key: (IpAddr, MaTransport), bytes: &[u8]) {
        let peer = key.0;
        let Some(&ma) = self.ma_index.get(&key) else {
            self.drop_msg("stream_unknown_peer");
            return;
        };
        let m = &mut self.mas[ma.index()];
        m.last_rx = now;
        // Bounded: at most one whole message waits here (the length field is read as soon as
        // the common header is in; a longer message is refused below).
        m.rx_buf.extend_from_slice(bytes);
        let port = m.port;
        let ifindex = self.fib.lookup(peer).map_or(IfIndex(0), |(_, &i)| i);
        let ctx = Inbound {
            ifindex,
            src: peer,
            dst: self.source_for(peer).unwrap_or(peer),
            src_port: port,
            ttl: 0,
            router_alert: None,
            ma: Some(ma),
        };
        loop {
            let Some(m) = self.mas.get_mut(ma.index()) else {
                return;
            };
            let Some(n) = frame_len(&m.rx_buf) else {
                break;
            };
            if n > MAX_STREAM_MESSAGE {
                // Nothing this node accepts is that long, and waiting for it would hold up to
                // 256 KiB per stream: refuse the stream.
                m.rx_buf.clear();
                self.drop_msg("stream_message_too_large");
                self.counters.streams_refused += 1;
                self.close_ma(ma, true);
                return;
            }
            if n > m.rx_buf.len() {
                break;
            }
            // The frame is copied into a spare buffer, given back once handled.
            let mut frame = self.spare.take(n);
            frame.extend(m.rx_buf.drain(..n));
            let parsed = Message::parse_reusing(&frame, &mut self.nslp_spare);
            let framing = match parsed {
                Ok(msg) => {
                    self.on_message(now, ctx, msg, &frame);
                    false
                }
                Err(e) => {
                    self.on_parse_error(now, ctx, &e, &frame);
                    e.kind.error_code().is_some_and(|(_, code, _)| {
                        code == crate::wire::error_code::COMMON_HEADER_PARSE_ERROR
                    })
                }
            };
            self.spare.put(frame);
            if framing {
                // A Common Header Parse Error (A.4.4.1: "not process the message
                // further") on a byte stream loses the message boundaries: C-mode has
                // no magic number to find the next one by (§5.4.1). One Error has
                // gone back; the rest of the stream is not parsed (answering each 8
                // bytes of garbage would send 7.5 times what came in) and the MA is
                // torn down, as a failed first message tears it down (§5.7.1).
                self.counters.streams_refused += 1;
                if let Some(m) = self.mas.get_mut(ma.index()) {
                    m.rx_buf.clear();
                }
                self.close_ma(ma, true);
                return;
            }
        }
        self.schedule_ma(ma);
    }

    /// Whether `ma` is connected.
    pub(super) fn ma_connected(&self, ma: MaId) -> bool {
        self.mas
            .get(ma.index())
            .is_some_and(|m| m.state == MaState::Connected)
    }

    /// The connected MA to `peer` over `transport`, if any.
    pub(super) fn connected_ma(&self, peer: IpAddr, transport: MaTransport) -> Option<MaId> {
        self.ma_index
            .get(&(peer, transport))
            .copied()
            .filter(|&m| self.ma_connected(m))
    }

    /// The stack `ma` runs over (TCP when it is gone).
    pub(super) fn ma_transport(&self, ma: MaId) -> MaTransport {
        self.mas
            .get(ma.index())
            .map_or(MaTransport::Tcp, |m| m.transport)
    }

    /// Send `msg` over `ma` (C-mode messages carry no magic number, RFC 5971 §5.4.1).
    pub(super) fn ma_send(&mut self, now: Instant, ma: MaId, msg: &Message) {
        if let Some(m) = self.mas.get_mut(ma.index()) {
            m.last_tx = now;
            // RFC 5971 §4.4.5: keep-alive "between 1/2 and 3/4 of the validity time ... since
            // the last successful refresh. The actual moment MUST be chosen randomly".
            let hold = m.peer_hold_ms.max(4);
            m.hello_gap_ms = self.rng.random_range(hold / 2..=hold / 4 * 3);
        }
        self.ma_send_now(ma, msg);
        self.schedule_ma(ma);
    }

    pub(super) fn ma_send_now(&mut self, ma: MaId, msg: &Message) {
        let Some(m) = self.mas.get(ma.index()) else {
            return;
        };
        let mut bytes = self.spare.take(msg.buffer_len());
        msg.emit(&mut bytes);
        self.counters.count_out(msg.msg_type());
        self.streams.push_back(StreamTransmit {
            peer: m.peer,
            port: m.port,
            op: StreamOp::Send(bytes),
            transport: m.transport,
        });
    }

    pub(super) fn ma_use(&mut self, ma: MaId) {
        if let Some(m) = self.mas.get_mut(ma.index()) {
            m.users += 1;
            m.idle_since = None;
        }
    }

    pub(super) fn ma_unuse(&mut self, now: Instant, ma: MaId) {
        if let Some(m) = self.mas.get_mut(ma.index()) {
            m.users = m.users.saturating_sub(1);
            if m.users == 0 {
                m.idle_since = Some(now);
            }
        }
        self.schedule_ma(ma);
    }

    pub(super) fn ma_unuse_later(&mut self, ma: MaId) {
        let now = self.now;
        self.ma_unuse(now, ma);
    }

    /// C-mode Confirm: over the MA to the peer with the negotiated stack, opening one if there
    /// is none (RFC 5971 §4.4.2: reuse an existing association).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn confirm_over_ma(
        &mut self,
        now: Instant,
        idx: u32,
        peer: IpAddr,
        port: u16,
        transport: MaTransport,
        via: Option<MaId>,
        confirm: Confirm,
    ) {
        let via = via.filter(|&m| self.ma_transport(m) == transport);
        let ma = match via.or_else(|| self.ma_index.get(&(peer, transport)).copied()) {
            Some(ma) => ma,
            None => {
                self.streams.push_back(StreamTransmit {
                    peer,
                    port,
                    op: StreamOp::Open,
                    transport,
                });
                self.new_ma(now, (peer, transport), port, MaState::Connecting, true)
            }
        };
        let prev = self.mrs[idx as usize]
            .down
            .as_mut()
            .and_then(|d| d.ma.replace(ma));
        if prev != Some(ma) {
            self.ma_use(ma);
            if let Some(p) = prev {
                self.ma_unuse(now, p);
            }
        }
        let nslpid = self.mrs[idx as usize].key.nslpid();
        if self.ma_connected(ma) {
            self.ma_send(now, ma, &confirm_msg(self.cfg.gist_hops, nslpid, confirm));
            self.flush_down_queue(now, idx);
        } else {
            if let Some(d) = self.mrs[idx as usize].down.as_mut() {
                d.waiting().confirm = Some(confirm);
            }
            self.mas[ma.index()].waiting.push(idx);
        }
    }

    /// The peer's MA-Hold-Time from its Stack-Configuration-Data: send MA-Hellos often enough
    /// for it.
    pub(super) fn note_peer_hold(&mut self, peer: (IpAddr, MaTransport), hold_ms: Option<u32>) {
        let (Some(hold), Some(&ma)) = (hold_ms.filter(|&h| h > 0), self.ma_index.get(&peer)) else {
            return;
        };
        if let Some(m) = self.mas.get_mut(ma.index()) {
            m.peer_hold_ms = hold;
        }
        self.schedule_ma(ma);
    }

    /// MA-Hello (RFC 5971 §5.1): "MUST be sent only in C-mode"; with R=1 (a diagnostic
    /// request, non-zero Hello-ID — the parser refuses a zero one, §5.2.2) the peer "MUST send
    /// another MA-Hello back ... echoing the same Hello-ID and with R=0". Any Hello-ID is
    /// accepted with R=0. Arriving at all counts as liveness (`last_rx`).
    pub(super) fn on_hello(&mut self, now: Instant, ctx: Inbound, msg: &Message, hello_id: u32) {
        let Some(ma) = ctx.ma else {
            // §5.5: a C-mode-only message in D-mode is an Incorrect Encapsulation.
            self.drop_msg("hello_not_in_ma");
            let e = crate::wire::ErrorObject::new(
                crate::wire::error_code::INCORRECT_ENCAPSULATION,
                0,
                msg.header(),
            );
            self.reply_error(ctx, msg, e);
            return;
        };
        if msg.r_flag {
            let m = hello_msg(hello_id, false);
            self.ma_send(now, ma, &m);
        }
    }

    fn schedule_ma(&mut self, ma: MaId) {
        let Some(m) = self.mas.get(ma.index()) else {
            return;
        };
        let mut next = if m.state == MaState::Connected {
            (m.last_tx + hello_interval(m)).min(m.last_rx + self.cfg.ma_hold_time)
        } else {
            m.last_tx + self.cfg.ma_hold_time
        };
        if let Some(t) = m.idle_since.filter(|_| m.initiator) {
            next = next.min(t + self.cfg.ma_idle_timeout);
        }
        if next == m.wake {
            return;
        }
        if let Some(h) = m.timer {
            self.timers.cancel(h);
        }
        let h = self.timers.insert(next, TimerKey::Ma(ma));
        let m = &mut self.mas[ma.index()];
        m.timer = Some(h);
        m.wake = next;
    }

    /// An MA's timer: tear it down when idle or silent, else keep it alive with MA-Hello.
    pub(super) fn on_ma_timer(&mut self, now: Instant, ma: MaId) {
        let Some(m) = self.mas.get_mut(ma.index()) else {
            return;
        };
        m.timer = None;
        m.wake = Instant::MAX;
        // The initiator tears an idle MA down; the other side waits for silence (its hold time).
        let idle = m.initiator
            && m.idle_since
                .is_some_and(|t| t + self.cfg.ma_idle_timeout <= now);
        let silent = m.last_rx + self.cfg.ma_hold_time <= now;
        // A stream that did not come up within the hold time is given up. Without this, one
        // that heard from the peer meanwhile (`last_rx` fresh, so not silent) was re-armed at
        // its passed deadline and fired again at once, for ever.
        let unconnected = m.state != MaState::Connected && m.last_tx + self.cfg.ma_hold_time <= now;
        if idle || silent || unconnected {
            self.drop_msg(if idle {
                "ma_idle"
            } else if silent {
                "ma_silent"
            } else {
                "ma_connect_timeout"
            });
            self.close_ma(ma, true);
            return;
        }
        let hello_due = m.state == MaState::Connected && m.last_tx + hello_interval(m) <= now;
        if hello_due {
            // RFC 5971 §5.1, §5.2.2: a keep-alive is R=0 with Hello-ID zero ("The value zero
            // MUST be used for all other messages"); non-zero IDs are for R=1 requests only.
            self.ma_send(now, ma, &hello_msg(0, false));
        }
        self.schedule_ma(ma);
    }

    /// Forget an MA; routing state that used it falls back to D-mode until it asks again.
    fn close_ma(&mut self, ma: MaId, tell_driver: bool) {
        let Some(m) = self.mas.try_remove(ma.index()) else {
            return;
        };
        self.ma_index.remove(&(m.peer, m.transport));
        if !m.rx_buf.is_empty() {
            // Part of a message was still to come when the stream ended: it is lost.
            self.drop_msg("stream_partial_message");
        }
        if let Some(h) = m.timer {
            self.timers.cancel(h);
        }
        if tell_driver {
            self.streams.push_back(StreamTransmit {
                peer: m.peer,
                port: m.port,
                op: StreamOp::Close,
                transport: m.transport,
            });
        }
        self.counters.mas_closed += 1;
        if m.users > 0 || !m.waiting.is_empty() {
            // Rare: clear every reference (a scan, not per-message work). Upstream halves fall
            // back to D-mode; the querying node re-runs its handshake.
            let mut failed = Vec::new();
            for (idx, s) in self.mrs.iter_mut() {
                if let Some(d) = s.down.as_mut()
                    && d.ma == Some(ma)
                {
                    d.ma = None;
                    d.take_confirm();
                    if d.state != super::QueryingState::AwaitingResponse {
                        failed.push(idx as u32);
                    }
                }
                if let Some(u) = s.up.as_mut()
                    && u.ma == Some(ma)
                {
                    u.ma = None;
                }
            }
            // Downstream halves lost the association they rely on (RFC 5971 §6.4 er_MAFailure;
            // RFC 5972 A.1 transition 9): set up again, and tell the NSLP.
            let now = self.now;
            for idx in failed {
                self.on_peer_lost_state(
                    now,
                    idx,
                    crate::nslp::Direction::Downstream,
                    m.peer,
                    crate::nslp::DeliveryError::NoPeer,
                );
                self.reap_mrs(idx);
            }
        }
    }
}

/// The verdict on a stream that would replace a peer's association
/// ([`GistEngine::vet_replacement_stream`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamVetting {
    /// Its first message is not complete yet.
    NeedMore,
    /// Its first message is a Confirm from the peer with a valid cookie: it may replace the
    /// association (the driver closes the old stream, reports the new one `Accepted` and
    /// feeds it the bytes).
    Accept,
    /// Not a proven association: close it, keep the old one (the reason is counted).
    Refuse(&'static str),
}

/// Send an MA-Hello after this long without sending anything (`Ma::hello_gap_ms`).
fn hello_interval(m: &Ma) -> Duration {
    Duration::from_millis(u64::from(m.hello_gap_ms.max(1)))
}

fn confirm_msg(hops: u8, nslpid: u16, c: Confirm) -> Message {
    Message {
        gist_hops: hops,
        nslpid,
        c_flag: false,
        s_flag: true,
        r_flag: false,
        e_flag: false,
        body: Body::Confirm(c),
    }
}

/// MA-Hello: NSLPID zero (§5.1); S=1, as "S is always set in C-mode" (§5.2.1).
fn hello_msg(hello_id: u32, reply: bool) -> Message {
    Message {
        gist_hops: 1,
        nslpid: 0,
        c_flag: false,
        s_flag: true,
        r_flag: reply,
        e_flag: false,
        body: Body::MaHello(MaHello {
            hello_id,
            unknown: Vec::new(),
        }),
    }
}
