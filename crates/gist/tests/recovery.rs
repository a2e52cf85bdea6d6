//! Two pathwise engines back to back (`GistEngine::on_one_link`) over a link the test controls:
//! the querying node's state machine recovers what D-mode loses (RFC 5971 §4.4.6, §5.3.3,
//! §6.2; RFC 5972 A.1).
//!
//! - A lost Confirm is recovered when the Response comes again (§6.2: Responses in Established
//!   are answered with the Confirm; RFC 5972 transition 17).
//! - A Confirm the responder rejects with an Error (here: its cookie damaged on the way) makes
//!   the querier restart the handshake and tell the NSLP.
//! - A lost Confirm with a responder that keeps no state before the Confirm (hash cookies) is
//!   found when Data comes back with "No Routing State" (§5.3.3): same recovery, and the NSLP
//!   data sent after it arrives.
//! - A peer that rejects every Confirm ends the state after `MAX_ERROR_RESTARTS` (RFC 5972
//!   transition 18): queued messages fail, Routing State Lost.
//! - State the NSLP stopped using lapses when Inactive_QNode expires even while a refresh
//!   Query is out (§6.2, Rule 6 "from all states"; GIST campaign seed 3182916611534347).

use pathwise_core::engine::Engine;
use pathwise_core::io::{IfIndex, Transmit};
use pathwise_core::time::{Duration, Instant};
use pathwise_gist::engine::counters::Counters;
use pathwise_gist::nslp::{Direction, GistApi, NotificationKind, SendMessage, SiiHandle};
use pathwise_gist::wire::{Body, Message, Mri, MsgType, PathCoupledMri, SessionId};
use pathwise_gist::{
    Config, CookieMode, GistEngine, GistEvent, MrsKey, QueryingState, RespondingState,
};
use std::net::IpAddr;

const Q: &str = "10.1.0.1";
const R: &str = "10.1.0.2";

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// What the link does with a datagram: deliver it (possibly changed) or lose it.
type Link<'a> = dyn FnMut(&Message) -> Option<Message> + 'a;

struct Pair {
    q: GistEngine,
    r: GistEngine,
    now: Instant,
    events_q: Vec<GistEvent>,
    events_r: Vec<GistEvent>,
}

impl Pair {
    fn new(mode: CookieMode) -> Self {
        Self::with(mode, |_| {})
    }

    /// Both engines configured as `new` does, then changed by `tune`.
    fn with(mode: CookieMode, tune: impl Fn(&mut Config)) -> Self {
        let cfg = |seed| {
            let mut c = Config {
                seed,
                nslpids: vec![42],
                cookie_mode: mode,
                cmode_port: None,
                ..Config::default()
            };
            tune(&mut c);
            c
        };
        Pair {
            q: GistEngine::on_one_link(cfg(1), ip(Q)),
            r: GistEngine::on_one_link(cfg(2), ip(R)),
            now: Instant::from_secs(1),
            events_q: Vec::new(),
            events_r: Vec::new(),
        }
    }

    fn mri() -> Mri {
        Mri::PathCoupled(PathCoupledMri::flow(ip(Q), ip(R)))
    }

    fn sid() -> SessionId {
        SessionId([9; 16])
    }

    fn key() -> MrsKey {
        MrsKey::new(&Self::mri(), 42, Self::sid())
    }

    fn send(&mut self, data: &[u8]) {
        let mut m = SendMessage::new(42, Self::sid(), Self::mri(), data.to_vec());
        m.transfer.setup_state = true;
        self.q.send_message(self.now, m).expect("accepted");
    }

    /// Move datagrams both ways until quiet, each through `link`.
    fn run(&mut self, link: &mut Link<'_>) {
        for _ in 0..100 {
            let from_q: Vec<Transmit> = std::iter::from_fn(|| self.q.poll_transmit()).collect();
            let from_r: Vec<Transmit> = std::iter::from_fn(|| self.r.poll_transmit()).collect();
            self.events_q
                .extend(std::iter::from_fn(|| self.q.poll_event()));
            self.events_r
                .extend(std::iter::from_fn(|| self.r.poll_event()));
            if from_q.is_empty() && from_r.is_empty() {
                return;
            }
            for (t, to, from) in from_q
                .into_iter()
                .map(|t| (t, true, Q))
                .chain(from_r.into_iter().map(|t| (t, false, R)))
            {
                let m = Message::parse_datagram(&t.payload).expect("we send what we parse");
                let Some(m) = link(&m) else { continue };
                let mut t = t;
                t.payload = m.to_datagram();
                let rx = t.received_on(IfIndex(1), ip(from));
                if to {
                    self.r.handle_datagram(self.now, rx);
                } else {
                    self.q.handle_datagram(self.now, rx);
                }
            }
        }
        panic!("no quiet");
    }

    fn down(&self) -> Option<QueryingState> {
        self.q.routing_state(&Self::key())?.downstream.map(|d| d.0)
    }

    fn up(&self) -> Option<RespondingState> {
        self.r.routing_state(&Self::key())?.upstream.map(|d| d.0)
    }

    fn received_at_r(&self) -> Vec<Vec<u8>> {
        self.events_r
            .iter()
            .filter_map(|e| match e {
                // NSLP data arrives padded to a word (docs/gist.md): strip it.
                GistEvent::Recv(m) if !m.nslp_data.is_empty() => {
                    let end = m
                        .nslp_data
                        .iter()
                        .rposition(|&b| b != 0)
                        .map_or(0, |i| i + 1);
                    Some(m.nslp_data[..end].to_vec())
                }
                _ => None,
            })
            .collect()
    }

    fn notifications_q(&self) -> Vec<NotificationKind> {
        self.events_q
            .iter()
            .filter_map(|e| match e {
                GistEvent::Notify(n) => Some(n.kind.clone()),
                _ => None,
            })
            .collect()
    }
}

fn deliver(m: &Message) -> Option<Message> {
    Some(m.clone())
}

fn counters(e: &GistEngine) -> &Counters {
    e.counters()
}

#[test]
fn a_lost_confirm_is_recovered_by_the_repeated_response() {
    let mut p = Pair::new(CookieMode::Random);
    p.send(b"one");
    // The network loses the first Confirm and keeps a copy of the Response.
    let mut response = None;
    let mut lost = false;
    p.run(&mut |m: &Message| match m.msg_type() {
        MsgType::Response => {
            response = Some(m.clone());
            Some(m.clone())
        }
        MsgType::Confirm if !lost => {
            lost = true;
            None
        }
        _ => Some(m.clone()),
    });
    assert_eq!(p.down(), Some(QueryingState::Established));
    assert_eq!(
        p.up(),
        Some(RespondingState::AwaitingConfirm),
        "no Confirm arrived"
    );
    // The responder (or the network) repeats the Response: the querier, Established, answers
    // with the Confirm again (RFC 5971 §6.2), and the responder installs its state.
    let response = response.expect("a Response went by");
    let t = Transmit {
        src: Some(ip(R)),
        dst: ip(Q),
        ifindex: None,
        transport: pathwise_core::io::Transport::Udp {
            src_port: 270,
            dst_port: 270,
        },
        router_alert: None,
        ttl: 64,
        payload: response.to_datagram(),
    };
    p.q.handle_datagram(p.now, t.received_on(IfIndex(1), ip(R)));
    p.run(&mut deliver);
    assert_eq!(p.up(), Some(RespondingState::Established));
    assert_eq!(counters(&p.q).confirm_retransmits, 1);
    assert_eq!(counters(&p.q).dropped("response_duplicate"), 0);
    // The piggybacked message of the Query arrived once.
    assert_eq!(p.received_at_r(), vec![b"one".to_vec()]);
}

#[test]
fn an_error_after_our_confirm_restarts_the_handshake_and_informs_the_nslp() {
    let mut p = Pair::new(CookieMode::Hash);
    p.send(b"one");
    // The first Confirm's Responder-Cookie is damaged on the way: the responder answers with
    // Object Value Error / Invalid Cookie (A.4.4.10) and keeps no state.
    let mut damaged = false;
    p.run(&mut |m: &Message| {
        let mut m = m.clone();
        if let Body::Confirm(c) = &mut m.body
            && !damaged
        {
            damaged = true;
            if let Some(rc) = c.responder_cookie.as_mut() {
                rc.0[0] ^= 0xff;
            }
        }
        Some(m)
    });
    assert!(damaged);
    assert_eq!(counters(&p.r).cookies_rejected, 1);
    // The querier heard the Error, told the NSLP, ran a new handshake, and both ends hold
    // state again.
    assert_eq!(counters(&p.q).error_restarts, 1);
    assert_eq!(p.down(), Some(QueryingState::Established));
    assert_eq!(p.up(), Some(RespondingState::Established));
    let n = p.notifications_q();
    let failure = n
        .iter()
        .position(|k| {
            *k == NotificationKind::CommunicationFailure {
                direction: Direction::Downstream,
                peer: SiiHandle(ip(R)),
            }
        })
        .expect("Communication Failure");
    assert!(
        n[failure..].iter().any(|k| matches!(
            k,
            NotificationKind::RoutingStatusChange {
                direction: Direction::Downstream,
                ..
            }
        )),
        "then the state is reported back: {n:?}"
    );
    // Data flows again.
    p.send(b"two");
    p.run(&mut deliver);
    assert!(p.received_at_r().contains(&b"two".to_vec()));
}

#[test]
fn a_lost_confirm_is_found_by_data_and_the_no_routing_state_error() {
    // Hash cookies: the responder keeps nothing before the Confirm, so only Data shows the
    // loss (RFC 5971 §5.3.3); its "No Routing State" restarts the handshake (§4.4.6).
    let mut p = Pair::new(CookieMode::Hash);
    p.send(b"one");
    let mut lost = false;
    p.run(&mut |m: &Message| match m.msg_type() {
        MsgType::Confirm if !lost => {
            lost = true;
            None
        }
        _ => Some(m.clone()),
    });
    assert_eq!(p.down(), Some(QueryingState::Established));
    assert_eq!(p.up(), None);
    p.send(b"two");
    p.run(&mut deliver);
    assert_eq!(
        counters(&p.r).dropped("data_no_state"),
        1,
        "two was refused"
    );
    assert_eq!(counters(&p.q).error_restarts, 1);
    assert!(
        p.notifications_q()
            .contains(&NotificationKind::CommunicationFailure {
                direction: Direction::Downstream,
                peer: SiiHandle(ip(R)),
            })
    );
    assert_eq!(p.up(), Some(RespondingState::Established), "set up again");
    // The NSLP, told of the failure, sends again: it arrives.
    p.send(b"two again");
    p.run(&mut deliver);
    assert!(p.received_at_r().contains(&b"two again".to_vec()));
}

#[test]
fn a_peer_that_rejects_every_confirm_ends_the_state() {
    let mut p = Pair::new(CookieMode::Hash);
    p.send(b"one");
    // Every Confirm damaged: each restart meets the same Error.
    let mut spoil = |m: &Message| {
        let mut m = m.clone();
        if let Body::Confirm(c) = &mut m.body
            && let Some(rc) = c.responder_cookie.as_mut()
        {
            rc.0[0] ^= 0xff;
        }
        Some(m)
    };
    p.run(&mut spoil);
    let max = u64::from(pathwise_gist::engine::MAX_ERROR_RESTARTS);
    assert_eq!(counters(&p.q).error_restarts, max);
    assert_eq!(counters(&p.q).peer_error_teardowns, 1);
    assert_eq!(p.down(), None, "RFC 5972 transition 18: deleted");
    assert!(
        p.notifications_q()
            .contains(&NotificationKind::RoutingStateLost {
                direction: Direction::Downstream
            })
    );
}

/// GIST fault campaign seed 3182916611534347 (docs/CAMPAIGNS.md, finding 3), the querying node's
/// side of it in the campaign's timers (refresh 5 s, state lifetime 15 s, hash cookies): the NSLP
/// sends once (there: the Ping NSLP passing on the data of a hostile node's injected Query) and
/// never again; the responder answers, the Confirm is lost, so the responder keeps nothing; after
/// that no Query reaches it (the flow's route went elsewhere). The state, established and then
/// awaiting its refresh, must lapse when Inactive_QNode expires (RFC 5971 §6.2, Rule 6: from all
/// states), not live on through the No_Response back-off naming a peer that holds nothing.
#[test]
fn gist_seed_3182916611534347_unused_state_lapses_while_awaiting_refresh() {
    let lifetime = Duration::from_secs(15);
    let mut p = Pair::with(CookieMode::Hash, |c| {
        c.refresh_period = Duration::from_secs(5);
        c.state_lifetime = lifetime;
    });
    let lapse = p.now + lifetime;
    p.send(b"one");
    p.run(&mut |m: &Message| (m.msg_type() != MsgType::Confirm).then(|| m.clone()));
    assert_eq!(p.down(), Some(QueryingState::Established));
    assert_eq!(p.up(), None, "hash cookies: nothing before the Confirm");

    // From here on the querier's Queries are lost; nothing else happens.
    let mut refreshing_seen = false;
    let mut queries_after_lapse = 0;
    while let Some(t) = p.q.poll_timeout() {
        if t > lapse + Duration::from_secs(120) {
            break;
        }
        p.now = t;
        p.q.handle_timeout(t);
        let sent: Vec<Transmit> = std::iter::from_fn(|| p.q.poll_transmit()).collect();
        p.events_q.extend(std::iter::from_fn(|| p.q.poll_event()));
        if t < lapse {
            refreshing_seen |= p.down() == Some(QueryingState::AwaitingRefresh);
        } else {
            assert_eq!(p.down(), None, "state still {:?} at {t:?}", p.down());
            queries_after_lapse += sent
                .iter()
                .filter(|x| {
                    Message::parse_datagram(&x.payload)
                        .is_ok_and(|m| m.msg_type() == MsgType::Query)
                })
                .count();
        }
    }
    assert!(refreshing_seen, "a refresh Query was out before the lapse");
    assert_eq!(p.down(), None);
    assert_eq!(queries_after_lapse, 0);
    assert_eq!(counters(&p.q).downstream_lapses, 1);
    assert_eq!(counters(&p.q).handshake_failures, 0);
}

/// B.2: the SII-Handle of a Data message routed by state is its sender (its NLI), not the
/// peer the state names. After a route change the old peer's messages still arrive; reported
/// under the new peer's handle, an NSLP took them for the new peer's (QoS campaign finding 4:
/// the old branch's tear accepted where the branches meet).
#[test]
fn data_from_another_node_than_the_peer_is_reported_as_its_sender() {
    let mut p = Pair::new(CookieMode::Hash);
    p.send(b"one");
    p.run(&mut deliver);
    assert_eq!(p.up(), Some(RespondingState::Established));
    p.send(b"two");
    let mut data = None;
    p.run(&mut |m: &Message| {
        if m.msg_type() == MsgType::Data {
            data = Some(m.clone());
        }
        Some(m.clone())
    });
    // The same Data, as a node that was once R's upstream peer for the session sends it.
    let old = ip("10.1.0.3");
    let mut m = data.expect("Data went by");
    if let Body::Data(d) = &mut m.body {
        d.nli
            .as_mut()
            .expect("D-mode Data carries the NLI")
            .interface_address = old;
    }
    let t = Transmit {
        src: Some(old),
        dst: ip(R),
        ifindex: None,
        transport: pathwise_core::io::Transport::Udp {
            src_port: 270,
            dst_port: 270,
        },
        router_alert: None,
        ttl: 64,
        payload: m.to_datagram(),
    };
    p.events_r.clear();
    p.r.handle_datagram(p.now, t.received_on(IfIndex(1), old));
    p.run(&mut deliver);
    let handles: Vec<_> = p
        .events_r
        .iter()
        .filter_map(|e| match e {
            GistEvent::Recv(m) if !m.nslp_data.is_empty() => Some(m.sii_handle),
            _ => None,
        })
        .collect();
    assert_eq!(handles, vec![Some(SiiHandle(old))]);
}

/// QoS campaign seed 8341147331591390: a QoS NSLP QNR sent a QUERY with RESERVE-INIT while
/// the flow's destination had no route; GIST retransmitted its Query for 15.5 s, longer than
/// the state lifetime, until a link came back. The handshake then completed, and the state
/// lapsed at its first timer — its Inactive_QNode period counted from when the NSLP handed the
/// QUERY over — so the RESERVE coming back up the path half a second later met "no routing
/// state" and the QNI never heard. RFC 5971 §6.2 Rule 4: the waiting NSLP data is handled when
/// the Response comes, and the Inactive_QNode timer runs from there.
#[test]
fn state_a_long_back_off_established_lives_a_lifetime_from_the_handshake() {
    let lifetime = Duration::from_secs(15);
    let mut p = Pair::with(CookieMode::Hash, |c| {
        c.refresh_period = Duration::from_secs(5);
        c.state_lifetime = lifetime;
    });
    let start = p.now;
    p.send(b"query");
    // No route yet: every Query is lost for longer than a state lifetime.
    let mut lost = 0;
    loop {
        let t = p.q.poll_timeout().expect("the Query is retransmitted");
        p.now = t;
        p.q.handle_timeout(t);
        if t >= start + lifetime {
            break;
        }
        lost += std::iter::from_fn(|| p.q.poll_transmit()).count();
    }
    assert!(lost >= 4, "{lost} Queries lost");
    // The route is back: this retransmission gets through.
    let established = p.now;
    p.run(&mut deliver);
    assert_eq!(p.down(), Some(QueryingState::Established));
    assert_eq!(p.up(), Some(RespondingState::Established));
    assert_eq!(p.received_at_r(), vec![b"query".to_vec()]);

    // Half a second on, the querier's timers run, then the answer comes back upstream.
    p.now += Duration::from_millis(500);
    while let Some(t) = p.q.poll_timeout().filter(|t| *t <= p.now) {
        p.q.handle_timeout(t);
    }
    assert_eq!(p.down(), Some(QueryingState::Established), "not lapsed");
    let mut mri = PathCoupledMri::flow(ip(Q), ip(R));
    mri.upstream = true;
    let reply = SendMessage::new(42, Pair::sid(), Mri::PathCoupled(mri), b"reply".to_vec());
    p.r.send_message(p.now, reply).expect("accepted");
    p.run(&mut deliver);
    let got = p
        .events_q
        .iter()
        .any(|e| matches!(e, GistEvent::Recv(m) if m.nslp_data.starts_with(b"reply")));
    assert!(got, "the answer reached the querier's NSLP");
    assert_eq!(counters(&p.q).downstream_lapses, 0);

    // Unused from then on, it lapses a lifetime after the handshake.
    while let Some(t) = p.q.poll_timeout() {
        if t > established + lifetime + Duration::from_secs(1) {
            break;
        }
        p.now = t;
        p.q.handle_timeout(t);
        p.run(&mut deliver);
    }
    assert_eq!(p.down(), None);
    assert_eq!(counters(&p.q).downstream_lapses, 1);
}
