//! The engine driven by hand through a recording `GistApi`: one QNE between two peers.

use super::*;
use crate::wire::{Answers, Body, ErrorClass, Reserve, RsnList, SessionIdList, code, vectors};
use pathwise_core::io::IfIndex;
use pathwise_core::tc::TcInterface;
use pathwise_gist::nslp::{NslpEvent, SiiHandle, TransferAttributes};

/// Records what the engine hands to GIST.
#[derive(Default)]
struct Recorder {
    sent: Vec<SendMessage>,
    sessions: u8,
    /// Refuse upstream messages as GIST does without routing state that way.
    no_upstream_state: bool,
    /// InvalidateRoutingState calls (B.6): session, MRI, direction, urgent.
    invalidated: Vec<(SessionId, Mri, Direction, bool)>,
}

const ME: &str = "10.0.2.1";
const SRC: &str = "10.0.1.1";
const DST: &str = "10.0.9.9";
const UP: &str = "10.0.1.2";

impl GistApi for Recorder {
    fn send_message(
        &mut self,
        _: Instant,
        msg: SendMessage,
    ) -> Result<pathwise_gist::nslp::MessageHandle, ApiError> {
        if self.no_upstream_state && msg.mri.is_upstream() {
            return Err(ApiError::NoRoutingState);
        }
        self.sent.push(msg);
        Ok(pathwise_gist::nslp::MessageHandle(self.sent.len() as u64))
    }
    fn send_message_with_handle(
        &mut self,
        _: Instant,
        _: pathwise_gist::nslp::MessageHandle,
        msg: SendMessage,
    ) -> Result<(), ApiError> {
        self.sent.push(msg);
        Ok(())
    }
    fn set_state_lifetime(
        &mut self,
        _: Instant,
        _: u16,
        _: SessionId,
        _: &Mri,
        _: Direction,
        _: Duration,
    ) {
    }
    fn invalidate_routing_state(
        &mut self,
        _: Instant,
        _: u16,
        sid: SessionId,
        mri: &Mri,
        direction: Direction,
        urgent: bool,
    ) {
        self.invalidated.push((sid, mri.clone(), direction, urgent));
    }
    fn local_address(&self, _: IpAddr) -> Option<IpAddr> {
        ME.parse().ok()
    }
    fn is_local(&self, addr: IpAddr) -> bool {
        addr == ME.parse::<IpAddr>().unwrap()
    }
    fn outgoing_interface(&self, _: IpAddr) -> Option<IfIndex> {
        Some(IfIndex(2))
    }
    fn new_session_id(&mut self) -> SessionId {
        self.sessions += 1;
        SessionId([100 + self.sessions; 16])
    }
    fn report(&mut self, _: NslpEvent) {}
}

impl Recorder {
    /// The messages sent, parsed, with their direction.
    fn take(&mut self) -> Vec<(Direction, Message)> {
        self.sent
            .drain(..)
            .map(|m| (Direction::of(&m.mri), Message::parse(&m.nslp_data).unwrap()))
            .collect()
    }
}

fn engine() -> QosNslp {
    let mut tc = MemoryTrafficControl::new();
    tc.add_interface(
        IfIndex(2),
        TcInterface {
            reservable: 1_000_000.0,
            bandwidth: 12_500_000.0,
            latency_us: 100,
            mtu: 1500,
        },
    );
    QosNslp::new(QosConfig::default(), tc)
}

fn recv(data: Vec<u8>, from: &str, sid: u8) -> RecvMessage {
    RecvMessage {
        nslp_data: data,
        nslpid: NSLPID,
        session_id: SessionId([sid; 16]),
        mri: Mri::PathCoupled(PathCoupledMri::flow(
            SRC.parse().unwrap(),
            DST.parse().unwrap(),
        )),
        routing_state_check: false,
        sii_handle: Some(SiiHandle(from.parse().unwrap())),
        transfer: TransferAttributes::default(),
        ip_ttl: 64,
        ip_distance: Some(1),
        gist_hops: 16,
        inbound_interface: IfIndex(1),
        explicitly_routed: false,
    }
}

/// An initial RESERVE from the upstream peer: RSN `rsn`, RII 42, the vectors' QSPEC.
fn initial(rsn: u32) -> Vec<u8> {
    let mut m = vectors::reserve_initial();
    if let Body::Reserve(r) = &mut m.body {
        r.rsn.rsn = rsn;
    }
    m.to_bytes()
}

fn reduced(rsn: u32, epoch: u32) -> Reserve {
    Reserve::new(Rsn { rsn, epoch })
}

#[test]
fn a_qne_admits_and_forwards_with_its_own_rsn_and_the_rii() {
    let (mut e, mut g) = (engine(), Recorder::default());
    e.recv_message(Instant::ZERO, &mut g, recv(initial(5), UP, 1));
    let out = g.take();
    assert_eq!(out.len(), 1);
    let (
        dir,
        Message {
            body: Body::Reserve(r),
            ..
        },
    ) = &out[0]
    else {
        panic!("{out:?}");
    };
    assert_eq!(*dir, Direction::Downstream);
    assert_eq!(r.rsn.rsn, 0, "the QNE's own RSN starts at zero (§5.3.1)");
    assert_eq!(
        r.rii,
        Some(Rii(42)),
        "the RII is copied, not replaced (§5.3.2)"
    );
    assert!(r.qspec.is_some());
    assert_eq!(e.traffic_control().len(), 1);
    let s = e.session(&SessionId([1; 16])).unwrap();
    assert_eq!((s.role, s.rsn_in.map(|r| r.rsn)), (Role::Qne, Some(5)));
    assert!(
        e.poll_timeout().is_some(),
        "refresh and lifetime timers reported"
    );
}

#[test]
fn an_older_rsn_is_dropped_and_a_reduced_refresh_of_an_unknown_session_asks_for_the_qspec() {
    let (mut e, mut g) = (engine(), Recorder::default());
    e.recv_message(Instant::ZERO, &mut g, recv(initial(5), UP, 1));
    g.take();
    // §5.3.1: an RSN below the stored one is out of order.
    let old = Message::new(Body::Reserve(reduced(4, 0x0102_0304))).to_bytes();
    e.recv_message(Instant::ZERO, &mut g, recv(old, UP, 1));
    assert!(g.take().is_empty());
    assert_eq!(e.counters().dropped("rsn_out_of_order"), 1);
    // §5.4.1: refresh without QSPEC for a session not held: "Full QSPEC required".
    let r = Message::new(Body::Reserve(reduced(9, 1))).to_bytes();
    e.recv_message(Instant::ZERO, &mut g, recv(r, UP, 2));
    let out = g.take();
    let [
        (
            Direction::Upstream,
            Message {
                body: Body::Response(resp),
                ..
            },
        ),
    ] = &out[..]
    else {
        panic!("{out:?}");
    };
    assert_eq!(
        (resp.info_spec.class, resp.info_spec.code),
        (
            ErrorClass::TransientFailure,
            code::transient::FULL_QSPEC_REQUIRED
        )
    );
    assert_eq!(resp.answers, Some(Answers::Rsn(Rsn { rsn: 9, epoch: 1 })));
}

/// RFC 5974 §5.3.4: R and L have local significance. A forged REFRESH-PERIOD of 2^32 - 1 ms
/// would hold the state 5.25 × 49.7 days; it is taken as `max_refresh_period`, and the state
/// goes at the lifetime that gives.
#[test]
fn a_peers_refresh_period_is_capped_at_max_refresh_period() {
    let (mut e, mut g) = (engine(), Recorder::default());
    let cap = e.config().max_refresh_period;
    let mut m = vectors::reserve_initial();
    if let Body::Reserve(r) = &mut m.body {
        r.refresh_period = Some(RefreshPeriod(u32::MAX));
    }
    e.recv_message(Instant::ZERO, &mut g, recv(m.to_bytes(), UP, 1));
    let s = e.session(&SessionId([1; 16])).unwrap();
    assert_eq!(s.refresh_in, cap);
    let lifetime = QosNslp::<MemoryTrafficControl>::lifetime(cap);
    assert_eq!(s.expires_at, Some(Instant::ZERO + lifetime));
    assert_eq!(e.counters().refresh_periods_capped, 1);
    // A refresh with the same forged period is capped too.
    let mut refresh = reduced(1, 0x0102_0304); // the RSN held: a refresh
    refresh.refresh_period = Some(RefreshPeriod(u32::MAX));
    let t = Instant::ZERO + Duration::from_secs(10);
    let bytes = Message::new(Body::Reserve(refresh)).to_bytes();
    e.recv_message(t, &mut g, recv(bytes, UP, 1));
    assert_eq!(e.counters().refresh_periods_capped, 2);
    let s = e.session(&SessionId([1; 16])).unwrap();
    assert_eq!(s.expires_at, Some(t + lifetime));
    // Nothing refreshes it: it is gone once that lifetime has passed.
    let end = t + lifetime;
    e.handle_timeout(end, &mut g);
    assert!(e.session(&SessionId([1; 16])).is_none());
    assert!(e.traffic_control().is_empty());
    // A period within the cap is taken as given.
    let mut m = vectors::reserve_initial();
    if let Body::Reserve(r) = &mut m.body {
        r.refresh_period = Some(RefreshPeriod(7_000));
    }
    e.recv_message(end, &mut g, recv(m.to_bytes(), UP, 2));
    let s = e.session(&SessionId([2; 16])).unwrap();
    assert_eq!(s.refresh_in, Duration::from_secs(7));
    assert_eq!(e.counters().refresh_periods_capped, 2);
}

/// Campaign seed 5861785519591810 (docs/CAMPAIGNS.md finding 4): a sender-initiated state
/// (made by a replay with its direction turned) was kept alive for good by the upstream
/// refreshes of the receiver-initiated reservation under the same SESSION-ID, and sent its
/// own refreshes back to that reservation's QNI. RFC 5974 §4.1, §4.3: a session's RESERVEs
/// travel one way only; one travelling the other way neither refreshes nor tears the state.
#[test]
fn qos_seed_5861785519591810_a_reserve_travelling_the_other_way_does_not_refresh() {
    let (mut e, mut g) = (engine(), Recorder::default());
    e.recv_message(Instant::ZERO, &mut g, recv(initial(5), UP, 1));
    g.take();
    let sid = SessionId([1; 16]);
    let expires = e.session(&sid).unwrap().expires_at;
    let upstream = |data: Vec<u8>| {
        let mut m = recv(data, "10.0.9.1", 1);
        if let Mri::PathCoupled(p) = &mut m.mri {
            p.upstream = true;
        }
        m
    };
    let later = Instant::ZERO + Duration::from_secs(20);
    // The same RSN from downstream, travelling upstream: not a refresh of this state.
    let refresh = Message::new(Body::Reserve(reduced(5, 0x0102_0304))).to_bytes();
    e.recv_message(later, &mut g, upstream(refresh));
    assert_eq!(e.session(&sid).unwrap().expires_at, expires);
    assert!(g.take().is_empty(), "nothing sent back or on");
    // Nor does a tear from that side remove it.
    let mut tear = reduced(6, 0x0102_0304);
    tear.tear = true;
    e.recv_message(
        later,
        &mut g,
        upstream(Message::new(Body::Reserve(tear)).to_bytes()),
    );
    assert!(e.session(&sid).is_some());
    assert_eq!(e.counters().dropped("reserve_wrong_direction"), 2);
    // The state goes at its lifetime.
    e.handle_timeout(expires.unwrap(), &mut g);
    assert!(e.session(&sid).is_none());
}

/// Campaign seed 5861785519592521 (docs/CAMPAIGNS.md finding 4): a chain of five QNEs that
/// no QNI held any more (made by a replayed RESERVE) went one lifetime per hop, so the last
/// outlived the settle check. RFC 2205 §3.1.5 (adopted by RFC 5974 §5.3.4): a state timeout
/// initiates a teardown towards the QNR.
#[test]
fn qos_seed_5861785519592521_a_qne_whose_state_times_out_tears_towards_the_qnr() {
    let (mut e, mut g) = (engine(), Recorder::default());
    e.recv_message(Instant::ZERO, &mut g, recv(initial(5), UP, 1));
    g.take();
    let sid = SessionId([1; 16]);
    let expires = e.session(&sid).unwrap().expires_at.unwrap();
    // Nothing comes from upstream.
    e.handle_timeout(expires, &mut g);
    assert!(e.session(&sid).is_none());
    let out = g.take();
    let tear = out.iter().rev().find_map(|(d, m)| match &m.body {
        Body::Reserve(r) if r.tear => Some((*d, r.rsn.rsn)),
        _ => None,
    });
    let (dir, rsn) = tear.expect("a tearing RESERVE on expiry");
    assert_eq!(dir, Direction::Downstream);
    assert!(rsn >= 1, "above the RSN it sent (§5.3.1)");
    assert_eq!(e.counters().tears_sent, 1);
    assert!(e.traffic_control().is_empty());
}

#[test]
fn a_malformed_reserve_is_answered_with_the_parse_errors_info_spec() {
    let (mut e, mut g) = (engine(), Recorder::default());
    // A RESERVE without its mandatory RSN.
    let mut bytes = initial(1);
    bytes.drain(4..16);
    e.recv_message(Instant::ZERO, &mut g, recv(bytes, UP, 1));
    let out = g.take();
    let [
        (
            Direction::Upstream,
            Message {
                body: Body::Response(resp),
                ..
            },
        ),
    ] = &out[..]
    else {
        panic!("{out:?}");
    };
    assert_eq!(
        (resp.info_spec.class, resp.info_spec.code),
        (
            ErrorClass::ProtocolError,
            code::protocol::MANDATORY_OBJECT_MISSING
        )
    );
    assert!(e.is_empty());
    assert_eq!(e.counters().dropped_total(), 1);
    // A malformed RESPONSE gets nothing back (no error storms), but is counted.
    e.recv_message(Instant::ZERO, &mut g, recv(vec![3, 0, 0], UP, 1));
    assert!(g.take().is_empty());
    assert_eq!(e.counters().dropped_total(), 2);
}

#[test]
fn a_tear_from_another_peer_is_ignored_and_one_from_the_peer_removes_everything() {
    let (mut e, mut g) = (engine(), Recorder::default());
    e.recv_message(Instant::ZERO, &mut g, recv(initial(5), UP, 1));
    g.take();
    let mut t = reduced(6, 0x0102_0304);
    t.tear = true;
    let tear = Message::new(Body::Reserve(t)).to_bytes();
    // §5.4.1: "does not come from the current peer QNE ... MUST be ignored".
    e.recv_message(Instant::ZERO, &mut g, recv(tear.clone(), "10.0.3.3", 1));
    assert!(g.take().is_empty());
    assert_eq!(e.len(), 1);
    assert_eq!(e.counters().dropped("tear_not_from_peer"), 1);
    e.recv_message(Instant::ZERO, &mut g, recv(tear, UP, 1));
    let out = g.take();
    let [
        (
            Direction::Downstream,
            Message {
                body: Body::Reserve(r),
                ..
            },
        ),
    ] = &out[..]
    else {
        panic!("{out:?}");
    };
    assert!(r.tear, "the tear goes on towards the QNR");
    assert!(e.is_empty());
    assert_eq!((e.timers(), e.traffic_control().len()), (0, 0));
    assert_eq!(e.poll_timeout(), None);
}

#[test]
fn a_summary_refresh_refreshes_known_sessions_and_reports_the_others() {
    let (mut e, mut g) = (engine(), Recorder::default());
    for sid in [1, 2] {
        e.recv_message(Instant::ZERO, &mut g, recv(initial(5), UP, sid));
    }
    g.take();
    let t = Instant::from_secs(100);
    let mut r = reduced(5, 0x0102_0304);
    r.session_id_list = Some(SessionIdList(vec![SessionId([2; 16]), SessionId([3; 16])]));
    r.rsn_list = Some(RsnList {
        epoch: 0x0102_0304,
        rsns: vec![5, 5],
    });
    let bytes = Message::new(Body::Reserve(r)).to_bytes();
    e.recv_message(t, &mut g, recv(bytes, UP, 1));
    let out = g.take();
    let [
        (
            Direction::Upstream,
            Message {
                body: Body::Response(resp),
                ..
            },
        ),
    ] = &out[..]
    else {
        panic!("{out:?}");
    };
    // §5.3.6: the unknown session comes back in an informational RESPONSE.
    assert_eq!(
        (resp.info_spec.class, resp.info_spec.code),
        (
            ErrorClass::Informational,
            code::informational::UNKNOWN_SESSION_ID_IN_LIST
        )
    );
    assert_eq!(
        resp.session_id_list,
        Some(SessionIdList(vec![SessionId([3; 16])]))
    );
    // Both held sessions were refreshed: their lifetimes run from t.
    let lifetime = QosNslp::<MemoryTrafficControl>::lifetime(Duration::from_secs(30));
    for sid in [1, 2] {
        assert_eq!(
            e.session(&SessionId([sid; 16])).unwrap().expires_at,
            Some(t + lifetime),
            "session {sid}"
        );
    }
    // Neither lapses at the lifetime counted from the start.
    e.handle_timeout(Instant::ZERO + lifetime, &mut g);
    assert_eq!(e.len(), 2);
}

#[test]
fn the_qni_refreshes_reduced_then_folds_sessions_into_summaries() {
    let (mut e, mut g) = (engine(), Recorder::default());
    let mut ids = Vec::new();
    for _ in 0..3 {
        let mut req =
            ReserveRequest::new(ME.parse().unwrap(), DST.parse().unwrap(), vectors::tmod());
        req.confirm = false;
        ids.push(e.reserve(&mut g, Instant::ZERO, &req).unwrap());
        // GIST found the same next peer for all of them.
        let sid = *ids.last().unwrap();
        e.network_notification(
            Instant::ZERO,
            &mut g,
            NetworkNotification {
                nslpid: NSLPID,
                session_id: sid,
                mri: Mri::PathCoupled(PathCoupledMri::flow(
                    ME.parse().unwrap(),
                    DST.parse().unwrap(),
                )),
                kind: pathwise_gist::nslp::NotificationKind::RoutingStatusChange {
                    direction: Direction::Downstream,
                    peer: SiiHandle("10.0.2.2".parse().unwrap()),
                    changed: false,
                },
            },
        );
    }
    assert_eq!(g.take().len(), 3, "three full RESERVEs");
    // Run the timers for two refresh periods: the first refreshes go reduced or summarised.
    let mut now = Instant::ZERO;
    while now < Instant::from_secs(90) {
        now = e.poll_timeout().unwrap();
        e.handle_timeout(now, &mut g);
    }
    let out = g.take();
    assert!(!out.is_empty());
    for (_, m) in &out {
        let Body::Reserve(r) = &m.body else {
            panic!("{m:?}")
        };
        assert!(r.qspec.is_none(), "refreshes carry no QSPEC");
    }
    let c = e.counters();
    assert!(c.summary_refreshes > 0, "{c:?}");
    assert!(c.summarised_sessions > 0);
    assert_eq!(e.len(), 3, "the QNI's state does not lapse");
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// One input to a QNE: a message of some kind from one of two peers, or time passing.
    #[derive(Clone, Debug)]
    enum Input {
        Reserve {
            sid: u8,
            rsn: u32,
            epoch: u32,
            tear: bool,
            full: bool,
            rii: bool,
            from_other: bool,
            summary: bool,
        },
        Response {
            sid: u8,
            rsn: u32,
            code: u8,
            class: u8,
        },
        Garbage(Vec<u8>),
        Mutated(usize, u8),
        Wait(u16),
    }

    fn input() -> impl Strategy<Value = Input> {
        prop_oneof![
            4 => (0..3u8, 0..6u32, 0..2u32, any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>())
                .prop_map(|(sid, rsn, epoch, tear, full, rii, from_other, summary)| Input::Reserve {
                    sid, rsn, epoch, tear, full, rii, from_other, summary
                }),
            1 => (0..3u8, 0..6u32, 0..10u8, 1..6u8).prop_map(|(sid, rsn, code, class)| Input::Response { sid, rsn, code, class }),
            1 => proptest::collection::vec(any::<u8>(), 0..64).prop_map(Input::Garbage),
            1 => (0..84usize, any::<u8>()).prop_map(|(i, b)| Input::Mutated(i, b)),
            2 => (1..400u16).prop_map(Input::Wait),
        ]
    }

    fn bytes_of(i: &Input) -> Option<(Vec<u8>, bool, u8)> {
        Some(match i {
            Input::Reserve {
                sid,
                rsn,
                epoch,
                tear,
                full,
                rii,
                from_other,
                summary,
            } => {
                let mut r = match vectors::reserve_initial().body {
                    Body::Reserve(r) if *full => r,
                    _ => Reserve::new(Rsn { rsn: 0, epoch: 0 }),
                };
                r.rsn = Rsn {
                    rsn: *rsn,
                    epoch: *epoch,
                };
                r.tear = *tear;
                r.rii = rii.then_some(Rii(7));
                if *summary {
                    r.session_id_list = Some(SessionIdList(vec![SessionId([(*sid + 1) % 3; 16])]));
                    r.rsn_list = Some(RsnList {
                        epoch: *epoch,
                        rsns: vec![*rsn],
                    });
                }
                (Message::new(Body::Reserve(r)).to_bytes(), *from_other, *sid)
            }
            Input::Response {
                sid,
                rsn,
                code,
                class,
            } => {
                let mut resp = crate::wire::Response::new(InfoSpec::new(
                    ErrorClass::from_number(*class),
                    *code,
                ));
                resp.answers = Some(Answers::Rsn(Rsn {
                    rsn: *rsn,
                    epoch: 0,
                }));
                (Message::new(Body::Response(resp)).to_bytes(), true, *sid)
            }
            Input::Garbage(b) => (b.clone(), false, 0),
            Input::Mutated(at, b) => {
                let mut v = vectors::RESERVE_INITIAL.to_vec();
                v[*at] = *b;
                (v, false, 1)
            }
            Input::Wait(_) => return None,
        })
    }

    proptest! {
        /// Whatever arrives, in whatever order: no panic, and the books balance — a traffic-
        /// control reservation for exactly the sessions that hold one, a timer entry for
        /// exactly the timers the sessions say are armed.
        #[test]
        fn any_input_keeps_state_tc_and_timers_consistent(inputs in proptest::collection::vec(input(), 1..60)) {
            let (mut e, mut g) = (engine(), Recorder::default());
            let mut now = Instant::ZERO;
            for i in &inputs {
                match bytes_of(i) {
                    Some((bytes, from_other, sid)) => {
                        let peer = if from_other { "10.0.3.3" } else { UP };
                        e.recv_message(now, &mut g, recv(bytes, peer, sid));
                    }
                    None => {
                        if let Input::Wait(s) = i {
                            now += Duration::from_secs(u64::from(*s));
                        }
                        if e.poll_timeout().is_some_and(|t| t <= now) {
                            e.handle_timeout(now, &mut g);
                        }
                    }
                }
                g.sent.clear();
                let with_tc = e.sessions().filter(|(_, s)| s.tc.is_some()).count();
                prop_assert_eq!(e.traffic_control().len(), with_tc);
                let armed: usize = e
                    .sessions()
                    .map(|(_, s)| [s.refresh_at, s.expires_at, s.retry_at].iter().flatten().count())
                    .sum();
                prop_assert_eq!(e.timers(), armed);
                prop_assert!(e.poll_timeout().is_none_or(|t| t > now) || e.timers() > 0);
            }
        }
    }
}

const DOWN_OLD: &str = "10.0.4.1";
const DOWN_NEW: &str = "10.0.5.1";

/// A message for flow `src` → `dst` travelling `dir`, from `from`.
fn recv_along(
    data: Vec<u8>,
    from: &str,
    sid: u8,
    src: &str,
    dst: &str,
    dir: Direction,
) -> RecvMessage {
    let mut flow = PathCoupledMri::flow(src.parse().unwrap(), dst.parse().unwrap());
    flow.upstream = dir == Direction::Upstream;
    RecvMessage {
        mri: Mri::PathCoupled(flow),
        ..recv(data, from, sid)
    }
}

fn routing_change(
    sid: u8,
    src: &str,
    dst: &str,
    direction: Direction,
    peer: &str,
    changed: bool,
) -> NetworkNotification {
    NetworkNotification {
        nslpid: NSLPID,
        session_id: SessionId([sid; 16]),
        mri: Mri::PathCoupled(PathCoupledMri::flow(
            src.parse().unwrap(),
            dst.parse().unwrap(),
        )),
        kind: pathwise_gist::nslp::NotificationKind::RoutingStatusChange {
            direction,
            peer: SiiHandle(peer.parse().unwrap()),
            changed,
        },
    }
}

fn success(rii: Rii) -> Vec<u8> {
    let mut r = crate::wire::Response::new(InfoSpec::new(
        ErrorClass::Success,
        code::success::RESERVATION_SUCCESSFUL,
    ));
    r.answers = Some(Answers::Rii(rii));
    Message::new(Body::Response(r)).to_bytes()
}

/// The RII of the last RESERVE sent, and whether it named an SII-Handle.
fn last_reserve(g: &Recorder) -> (Reserve, Option<SiiHandle>) {
    g.sent
        .iter()
        .rev()
        .find_map(|m| match Message::parse(&m.nslp_data).unwrap().body {
            Body::Reserve(r) => Some((r, m.sii_handle)),
            _ => None,
        })
        .expect("a RESERVE")
}

/// A QNE holding session 1 (installed from UP) whose downstream peer GIST reported as
/// DOWN_OLD and then, after a route change, DOWN_NEW: what it sent is still in the recorder.
fn moved_downstream() -> (QosNslp, Recorder) {
    let (mut e, mut g) = (engine(), Recorder::default());
    let t = Instant::ZERO;
    e.recv_message(t, &mut g, recv(initial(5), UP, 1));
    for (peer, changed) in [(DOWN_OLD, false), (DOWN_NEW, true)] {
        e.network_notification(
            t,
            &mut g,
            routing_change(1, SRC, DST, Direction::Downstream, peer, changed),
        );
    }
    (e, g)
}

/// A QNE of a sender-initiated reservation whose downstream peer changed: the RESERVE down the
/// new path goes by routing state, and only its RESPONSE lets the tear go to the old peer, by
/// that peer's SII-Handle, with RSN[current] − 1 (RFC 5974 §5.2.5.2, §3.2.12).
#[test]
fn a_route_change_tears_the_old_branch_by_its_sii_handle_once_the_new_path_answers() {
    let (mut e, mut g) = moved_downstream();
    let t = Instant::ZERO;
    let (r, handle) = last_reserve(&g);
    assert_eq!(
        handle, None,
        "§5.2.5.2: no SII-Handle for the RESERVE down the new path"
    );
    assert_eq!((r.rsn.rsn, r.tear), (2, false), "RSN + 2, full");
    assert!(r.qspec.is_some());
    let rii = r.rii.expect("an RII asks the QNR to answer");
    assert_eq!(
        e.session(&SessionId([1; 16])).unwrap().old_branch,
        Some(SiiHandle(DOWN_OLD.parse().unwrap()))
    );
    g.sent.clear();
    // The RESPONSE comes back up the new path.
    e.recv_message(
        t,
        &mut g,
        recv_along(success(rii), DOWN_NEW, 1, SRC, DST, Direction::Upstream),
    );
    assert_eq!(g.sent.len(), 1, "only the tear: {:?}", g.take());
    let m = &g.sent[0];
    assert_eq!(
        m.sii_handle,
        Some(SiiHandle(DOWN_OLD.parse().unwrap())),
        "explicitly routed"
    );
    assert_eq!(Direction::of(&m.mri), Direction::Downstream);
    let Body::Reserve(tear) = Message::parse(&m.nslp_data).unwrap().body else {
        panic!("not a RESERVE");
    };
    assert!(tear.tear);
    assert_eq!(tear.rsn.rsn, 1, "RSN[current] − 1; RSN[current] unchanged");
    let s = e.session(&SessionId([1; 16])).unwrap();
    assert_eq!((s.rsn_out, s.old_branch), (2, None));
    assert_eq!(e.traffic_control().len(), 1, "the reservation here stays");
    assert_eq!(e.counters().tears_sent, 1);
}

/// §3.2.12.2, §5.2.5.4: no tear when the route came back to the old peer before the RESPONSE,
/// nor when the RESPONSE came from the old peer itself.
#[test]
fn no_old_branch_tear_when_the_old_peer_is_still_the_path() {
    for case in ["route back", "answered by the old peer"] {
        let (mut e, mut g) = moved_downstream();
        let t = Instant::ZERO;
        let rii = last_reserve(&g).0.rii.unwrap();
        let from = match case {
            "route back" => {
                e.network_notification(
                    t,
                    &mut g,
                    routing_change(1, SRC, DST, Direction::Downstream, DOWN_OLD, true),
                );
                DOWN_NEW
            }
            _ => DOWN_OLD,
        };
        g.sent.clear();
        e.recv_message(
            t,
            &mut g,
            recv_along(success(rii), from, 1, SRC, DST, Direction::Upstream),
        );
        assert!(
            g.sent.iter().all(|m| m.sii_handle.is_none()),
            "{case}: no explicit tear"
        );
        assert_eq!(e.counters().tears_sent, 0, "{case}");
        assert_eq!(e.len(), 1, "{case}");
    }
}

/// The receiving end (RFC 5971 §7.1.4: the NSLP validates what GIST did not): an explicitly
/// routed tear from the current peer removes the state and goes on towards the QNR; anything
/// else explicitly routed is dropped, so it can neither install nor refresh state.
#[test]
fn an_explicitly_routed_tear_is_honoured_and_nothing_else_explicit_is() {
    let (mut e, mut g) = (engine(), Recorder::default());
    let t = Instant::ZERO;
    let mut install = recv(initial(5), UP, 1);
    install.explicitly_routed = true;
    e.recv_message(t, &mut g, install);
    assert!(e.is_empty() && g.sent.is_empty());
    assert_eq!(e.counters().dropped("explicitly_routed_not_tear"), 1);
    e.recv_message(t, &mut g, recv(initial(5), UP, 1));
    g.sent.clear();
    let mut tear = reduced(6, 0x0102_0304);
    tear.tear = true;
    let mut m = recv(Message::new(Body::Reserve(tear)).to_bytes(), UP, 1);
    m.explicitly_routed = true;
    e.recv_message(t, &mut g, m);
    assert!(e.is_empty(), "torn");
    assert!(e.traffic_control().is_empty());
    let out = g.take();
    assert!(
        matches!(&out[..], [(Direction::Downstream, Message { body: Body::Reserve(r), .. })] if r.tear),
        "on towards the QNR: {out:?}"
    );
}

/// A QUERY with RESERVE-INIT (§4.3) from `from` for a flow that ends at this node, session 1:
/// it makes this node the QNI of a receiver-initiated reservation.
fn reserve_init_to_me(from: &str) -> RecvMessage {
    let Body::Reserve(r) = vectors::reserve_initial().body else {
        unreachable!()
    };
    let mut q = crate::wire::Query::new(r.qspec.unwrap());
    q.reserve_init = true;
    recv_along(
        Message::new(Body::Query(q)).to_bytes(),
        from,
        1,
        SRC,
        ME,
        Direction::Downstream,
    )
}

/// Receiver-initiated (§3.2.12): the node that holds the reservation and gets a QUERY with
/// RESERVE-INIT from another peer than the one its RESERVEs went to is where the branches
/// meet; its full RESERVE up the new path carries an RII (§5.2.5.2), and the RESPONSE lets it
/// tear the old branch upstream by the old peer's SII-Handle.
#[test]
fn a_receiver_initiated_convergence_point_tears_the_old_branch_upstream() {
    let (mut e, mut g) = (engine(), Recorder::default());
    let t = Instant::ZERO;
    // This node is the flow's destination: the QNI of a receiver-initiated reservation.
    e.recv_message(t, &mut g, reserve_init_to_me(UP));
    let sid = SessionId([1; 16]);
    assert_eq!(
        e.session(&sid).map(|s| (s.role, s.initiation)),
        Some((Role::Qni, Initiation::Receiver))
    );
    e.network_notification(
        t,
        &mut g,
        routing_change(1, SRC, ME, Direction::Upstream, UP, false),
    );
    g.sent.clear();
    // The QUERY from the divergence point comes down the new path.
    const UP_NEW: &str = "10.0.7.1";
    e.recv_message(t, &mut g, reserve_init_to_me(UP_NEW));
    let (r, handle) = last_reserve(&g);
    assert_eq!((handle, r.tear), (None, false));
    let rii = r.rii.expect("§5.2.5.2: an RII");
    g.sent.clear();
    e.recv_message(
        t,
        &mut g,
        recv_along(success(rii), UP_NEW, 1, SRC, ME, Direction::Downstream),
    );
    let tear = g
        .sent
        .iter()
        .find(|m| m.sii_handle.is_some())
        .expect("the old branch's tear");
    assert_eq!(tear.sii_handle, Some(SiiHandle(UP.parse().unwrap())));
    assert_eq!(Direction::of(&tear.mri), Direction::Upstream);
    assert!(matches!(Message::parse(&tear.nslp_data).unwrap().body, Body::Reserve(r) if r.tear));
    assert_eq!(
        e.session(&sid).map(|s| s.role),
        Some(Role::Qni),
        "the reservation stays"
    );
}

/// Seed 5861785519592049: a receiver-initiated QNE that installs a full RESERVE it cannot send
/// on towards the QNR (GIST: no routing state upstream — no QUERY passes here) is off the
/// reverse path (§4.3): its refreshes no longer extend it, it goes at its lifetime and then
/// refuses the RESERVEs still sent its way, instead of being kept for ever by a downstream
/// peer whose GIST still routes to it.
#[test]
fn qos_seed_5861785519592049_a_receiver_initiated_qne_without_a_way_on_is_not_kept_alive() {
    let (mut e, mut g) = (engine(), Recorder::default());
    g.no_upstream_state = true;
    let sid = SessionId([1; 16]);
    let at = |s: u64| Instant::ZERO + Duration::from_secs(s);
    e.recv_message(
        at(0),
        &mut g,
        recv_along(initial(5), DOWN_OLD, 1, SRC, DST, Direction::Upstream),
    );
    let s = e.session(&sid).expect("installed");
    assert_eq!(
        (s.role, s.initiation, s.reverse_lost),
        (Role::Qne, Initiation::Receiver, true)
    );
    assert_eq!(e.counters().reverse_path_lost, 1);
    let expires = s.expires_at.unwrap();
    // Refreshes from the downstream peer do not extend it.
    let refresh = Message::new(Body::Reserve(reduced(5, 0x0102_0304))).to_bytes();
    e.recv_message(
        at(10),
        &mut g,
        recv_along(refresh.clone(), DOWN_OLD, 1, SRC, DST, Direction::Upstream),
    );
    assert_eq!(e.session(&sid).unwrap().expires_at, Some(expires));
    e.handle_timeout(expires, &mut g);
    assert!(e.session(&sid).is_none());
    assert!(e.traffic_control().is_empty());
    // What still comes its way is refused, not installed again.
    e.recv_message(
        expires,
        &mut g,
        recv_along(initial(5), DOWN_OLD, 1, SRC, DST, Direction::Upstream),
    );
    assert!(e.is_empty());
    assert_eq!(e.counters().dropped("no_reverse_path"), 1);
}

/// The same when GIST accepts the RESERVE and reports later that no routing state came for it
/// (B.3 MessageStatus: it waited for a Confirm from upstream that never arrived).
#[test]
fn a_receiver_initiated_qne_whose_reserve_found_no_routing_state_is_off_the_reverse_path() {
    let (mut e, mut g) = (engine(), Recorder::default());
    let sid = SessionId([1; 16]);
    e.recv_message(
        Instant::ZERO,
        &mut g,
        recv_along(initial(5), DOWN_OLD, 1, SRC, DST, Direction::Upstream),
    );
    assert!(!e.session(&sid).unwrap().reverse_lost);
    let status = MessageStatus {
        handle: pathwise_gist::nslp::MessageHandle(1),
        nslpid: NSLPID,
        session_id: sid,
        error: Some(pathwise_gist::nslp::DeliveryError::NoRoutingState),
        transfer: None,
    };
    e.message_status(Instant::ZERO, &mut g, status);
    assert!(e.session(&sid).unwrap().reverse_lost);
    assert_eq!(e.counters().reverse_path_lost, 1);
}

/// QoS campaign seed 4843511798430122 (a storm of 3 million QUERYs): a QUERY passed on goes
/// with the GIST hop count it arrived with less one and stops at zero (RFC 5971 §4.3.2), so a
/// routing loop cannot keep it going.
#[test]
fn qos_seed_4843511798430122_a_forwarded_query_spends_the_gist_hop_count() {
    let (mut e, mut g) = (engine(), Recorder::default());
    let Body::Reserve(r) = vectors::reserve_initial().body else {
        unreachable!()
    };
    let query = Message::new(Body::Query(crate::wire::Query::new(r.qspec.unwrap()))).to_bytes();
    let mut m = recv(query.clone(), UP, 1);
    m.gist_hops = 5;
    e.recv_message(Instant::ZERO, &mut g, m);
    assert_eq!(g.sent.len(), 1);
    assert_eq!(g.sent[0].gist_hops, Some(4));
    g.sent.clear();
    let mut m = recv(query, UP, 1);
    m.gist_hops = 1;
    e.recv_message(Instant::ZERO, &mut g, m);
    assert!(g.sent.is_empty(), "not passed on with a hop count of zero");
    assert_eq!(e.counters().dropped("hop_limit"), 1);
}

/// QoS campaign seed 387330153904033 (1.1 million RESPONSEs between two nodes): a RESPONSE
/// this node did not ask for goes on with the GIST hop count it arrived with less one, and
/// stops at zero (RFC 5971 §4.3.2) — at a node without state and at a QNE with state alike.
#[test]
fn qos_seed_387330153904033_a_passed_on_response_spends_the_gist_hop_count() {
    for stateful in [false, true] {
        let (mut e, mut g) = (engine(), Recorder::default());
        if stateful {
            e.recv_message(Instant::ZERO, &mut g, recv(initial(5), UP, 1));
            g.sent.clear();
        }
        let answer = |hops| {
            let mut m = recv_along(success(Rii(7)), DOWN_OLD, 1, SRC, DST, Direction::Upstream);
            m.gist_hops = hops;
            m
        };
        e.recv_message(Instant::ZERO, &mut g, answer(5));
        assert_eq!(g.sent.len(), 1, "stateful {stateful}: passed on");
        assert_eq!(g.sent[0].gist_hops, Some(4));
        assert_eq!(Direction::of(&g.sent[0].mri), Direction::Upstream);
        g.sent.clear();
        e.recv_message(Instant::ZERO, &mut g, answer(1));
        assert!(
            g.sent.is_empty(),
            "stateful {stateful}: not with a hop count of zero"
        );
        assert_eq!(e.counters().dropped("hop_limit"), 1);
    }
}

/// §5.2.4: the same RII again sooner than a retransmission could come is the request coming
/// round a routing loop: passed on once, not again.
#[test]
fn a_request_coming_round_again_at_once_is_not_passed_on() {
    let (mut e, mut g) = (engine(), Recorder::default());
    e.recv_message(Instant::ZERO, &mut g, recv(initial(5), UP, 1));
    g.sent.clear();
    let mut again = reduced(5, 0x0102_0304);
    again.rii = Some(Rii(42));
    let again = Message::new(Body::Reserve(again)).to_bytes();
    let t = Instant::ZERO + Duration::from_millis(10);
    e.recv_message(t, &mut g, recv(again.clone(), UP, 1));
    assert_eq!(g.sent.len(), 1, "the first retransmission goes on");
    e.recv_message(t, &mut g, recv(again.clone(), UP, 1));
    assert_eq!(g.sent.len(), 1);
    assert_eq!(e.counters().dropped("rii_looped"), 1);
    // A real retransmission, QOSNSLP_REQUEST_RETRY later, goes on.
    e.recv_message(t + Duration::from_secs(2), &mut g, recv(again, UP, 1));
    assert_eq!(g.sent.len(), 2);
}

/// A NOTIFY with an INFO-SPEC of `class` and `code`.
fn notify(class: ErrorClass, code: u8) -> Vec<u8> {
    Message::new(Body::Notify(crate::wire::Notify {
        info_spec: InfoSpec::new(class, code),
        qspec: None,
        unknown: Vec::new(),
    }))
    .to_bytes()
}

/// The NOTIFYs among what was sent: direction, session, SII-Handle, INFO-SPEC, hop count.
type SentNotify = (
    Direction,
    SessionId,
    Option<SiiHandle>,
    InfoSpec,
    Option<u8>,
);
fn notifies(g: &Recorder) -> Vec<SentNotify> {
    g.sent
        .iter()
        .filter_map(|m| match Message::parse(&m.nslp_data).unwrap().body {
            Body::Notify(n) => Some((
                Direction::of(&m.mri),
                m.session_id,
                m.sii_handle,
                n.info_spec,
                m.gist_hops,
            )),
            _ => None,
        })
        .collect()
}

fn notified(e: &mut QosNslp) -> Vec<(SessionId, InfoSpec)> {
    std::iter::from_fn(|| e.poll_event())
        .filter_map(|ev| match ev {
            QosEvent::Notified { session_id, info } => Some((session_id, info)),
            _ => None,
        })
        .collect()
}

/// RFC 5974 §5.4.4: a NOTIFY installs nothing; a QNE reports it and passes it on towards the
/// QNI (spending the GIST hop count, RFC 5971 §4.3.2); the QNI reports it and sends nothing;
/// a node without the session has nothing to report it about nor a way to pass it on.
#[test]
fn a_notify_is_reported_and_passed_on_towards_the_qni_and_not_beyond_it() {
    let congestion = || notify(ErrorClass::Informational, code::informational::CONGESTION);
    // A QNE.
    let (mut e, mut g) = (engine(), Recorder::default());
    e.recv_message(Instant::ZERO, &mut g, recv(initial(5), UP, 1));
    g.sent.clear();
    let from_down = |data| recv_along(data, DOWN_OLD, 1, SRC, DST, Direction::Upstream);
    e.recv_message(Instant::ZERO, &mut g, from_down(congestion()));
    let out = notifies(&g);
    assert_eq!(out.len(), 1, "{out:?}");
    let (dir, sid, handle, info, hops) = &out[0];
    assert_eq!(
        (*dir, *sid, *handle),
        (Direction::Upstream, SessionId([1; 16]), None)
    );
    assert_eq!(
        (info.class, info.code),
        (ErrorClass::Informational, code::informational::CONGESTION)
    );
    assert_eq!(*hops, Some(15), "the hop count it came with, less one");
    assert_eq!(notified(&mut e).len(), 1, "reported");
    assert_eq!(e.counters().received(crate::wire::MsgType::Notify), 1);
    assert_eq!(e.counters().sent(crate::wire::MsgType::Notify), 1);
    assert!(g.invalidated.is_empty(), "not a route change");
    assert_eq!(e.len(), 1);
    // At a hop count of one it goes no further.
    g.sent.clear();
    let mut last = from_down(congestion());
    last.gist_hops = 1;
    e.recv_message(Instant::ZERO, &mut g, last);
    assert!(notifies(&g).is_empty());
    assert_eq!(e.counters().dropped("hop_limit"), 1);

    // The QNI of a sender-initiated reservation: reported, not passed on.
    let (mut e, mut g) = (engine(), Recorder::default());
    let req = ReserveRequest::new(ME.parse().unwrap(), DST.parse().unwrap(), vectors::tmod());
    let sid = e.reserve(&mut g, Instant::ZERO, &req).unwrap();
    g.sent.clear();
    e.recv_message(
        Instant::ZERO,
        &mut g,
        recv_along(
            congestion(),
            DOWN_OLD,
            sid.0[0],
            ME,
            DST,
            Direction::Upstream,
        ),
    );
    assert!(g.sent.is_empty(), "nothing beyond the QNI");
    assert_eq!(
        notified(&mut e),
        vec![(
            sid,
            InfoSpec::new(ErrorClass::Informational, code::informational::CONGESTION)
        )]
    );

    // No state for the session: dropped, counted.
    e.recv_message(Instant::ZERO, &mut g, from_down(congestion()));
    assert!(g.sent.is_empty() && notified(&mut e).is_empty());
    assert_eq!(e.counters().dropped("notify_unknown_session"), 1);
}

/// RFC 5971 §7.1.4 and RFC 5974 §5.2.5.3: the Route Change NOTIFY reaches the old upstream
/// peer explicitly routed; a NOTIFY installs no state (§5.4.4), so it is accepted that way.
#[test]
fn an_explicitly_routed_notify_is_accepted() {
    let (mut e, mut g) = (engine(), Recorder::default());
    e.recv_message(Instant::ZERO, &mut g, recv(initial(5), UP, 1));
    g.sent.clear();
    let mut m = recv_along(
        notify(ErrorClass::Informational, code::informational::CONGESTION),
        DOWN_OLD,
        1,
        SRC,
        DST,
        Direction::Upstream,
    );
    m.explicitly_routed = true;
    e.recv_message(Instant::ZERO, &mut g, m);
    assert_eq!(e.counters().dropped("explicitly_routed_not_tear"), 0);
    assert_eq!(notified(&mut e).len(), 1);
    assert_eq!(notifies(&g).len(), 1, "passed on");
}

/// RFC 5974 §5.2.5.3: GIST reports the upstream peer of a sender-initiated reservation
/// changed; a NOTIFY with Informational 0x02 "Route Change" goes to the old peer, explicitly
/// routed by its SII-Handle — once, whether the new peer's RESERVE came before GIST's report
/// or after, and not when GIST names the old peer again (its refresh, §5.2.5.4) or only
/// reports the first peering.
#[test]
fn an_upstream_route_change_notifies_the_old_peer_by_its_sii_handle() {
    const UP_NEW: &str = "10.0.7.1";
    let up = |peer: &str, changed| routing_change(1, SRC, DST, Direction::Upstream, peer, changed);
    let route_change = |g: &Recorder| {
        notifies(g)
            .into_iter()
            .map(|(dir, sid, handle, info, _)| {
                assert_eq!((dir, sid), (Direction::Upstream, SessionId([1; 16])));
                assert_eq!(
                    (info.class, info.code),
                    (ErrorClass::Informational, code::informational::ROUTE_CHANGE)
                );
                assert_eq!(
                    info.source,
                    crate::wire::ErrorSource::Ipv4(ME.parse().unwrap()),
                    "ESI: this node"
                );
                handle
            })
            .collect::<Vec<_>>()
    };
    let old = Some(SiiHandle(UP.parse().unwrap()));
    for reserve_first in [false, true] {
        let (mut e, mut g) = (engine(), Recorder::default());
        let t = Instant::ZERO;
        e.recv_message(t, &mut g, recv(initial(5), UP, 1));
        e.network_notification(t, &mut g, up(UP, false));
        g.sent.clear();
        if reserve_first {
            // The re-routing RESERVE (RSN + 2, an RII) rides the new peer's GIST Query.
            let mut m = vectors::reserve_initial();
            if let Body::Reserve(r) = &mut m.body {
                r.rsn.rsn = 7;
                r.rii = Some(Rii(43));
            }
            e.recv_message(t, &mut g, recv(m.to_bytes(), UP_NEW, 1));
            g.sent.clear();
        }
        e.network_notification(t, &mut g, up(UP_NEW, true));
        assert_eq!(
            route_change(&g),
            vec![old],
            "reserve first: {reserve_first}"
        );
        let n = &g.sent.last().unwrap();
        assert_eq!(n.sii_handle, old, "explicitly routed to the old peer");
        g.sent.clear();
        // GIST alternating between the two while the old peer's state lives: nothing more.
        for _ in 0..2 {
            e.network_notification(t, &mut g, up(UP, true));
            e.network_notification(t, &mut g, up(UP_NEW, true));
        }
        assert!(
            route_change(&g).is_empty(),
            "reserve first: {reserve_first}"
        );
        assert_eq!(e.counters().route_change_notifies, 1);
        assert_eq!(e.counters().sent(crate::wire::MsgType::Notify), 1);
        assert_eq!(e.len(), 1, "nothing torn");
    }
    // The first peering is no route change.
    let (mut e, mut g) = (engine(), Recorder::default());
    e.recv_message(Instant::ZERO, &mut g, recv(initial(5), UP, 1));
    g.sent.clear();
    e.network_notification(Instant::ZERO, &mut g, up(UP, false));
    assert!(g.sent.is_empty());
    assert_eq!(e.counters().route_change_notifies, 0);
}

/// RFC 5974 §5.2.5.3: "On receiving such a NOTIFY message, the QoS NSLP SHOULD use the
/// InvalidateRoutingState API call" — towards where it came from, urgently — "The QoS NSLP
/// SHOULD send a NOTIFY message upstream."
#[test]
fn a_route_change_notify_invalidates_routing_state_and_goes_on_upstream() {
    let (mut e, mut g) = (engine(), Recorder::default());
    e.recv_message(Instant::ZERO, &mut g, recv(initial(5), UP, 1));
    g.sent.clear();
    let mut m = recv_along(
        notify(ErrorClass::Informational, code::informational::ROUTE_CHANGE),
        DOWN_OLD,
        1,
        SRC,
        DST,
        Direction::Upstream,
    );
    m.explicitly_routed = true;
    e.recv_message(Instant::ZERO, &mut g, m);
    assert_eq!(g.invalidated.len(), 1);
    let (sid, mri, dir, urgent) = &g.invalidated[0];
    assert_eq!(
        (*sid, *dir, *urgent),
        (SessionId([1; 16]), Direction::Downstream, true)
    );
    assert!(!mri.is_upstream(), "the flow's MRI in its downstream form");
    assert_eq!(e.counters().routing_state_invalidated, 1);
    let out = notifies(&g);
    assert!(
        matches!(&out[..], [(Direction::Upstream, _, None, i, _)] if i.code == code::informational::ROUTE_CHANGE),
        "{out:?}"
    );
    assert_eq!(e.len(), 1, "the reservation stays");
}

/// A RESERVE for session `sid` bound to the sessions `bound`.
fn bound_reserve(rsn: u32, bound: &[(u8, crate::wire::BindingCode)]) -> Vec<u8> {
    let mut m = vectors::reserve_initial();
    if let Body::Reserve(r) = &mut m.body {
        r.rsn.rsn = rsn;
        r.bound_sessions = bound
            .iter()
            .map(|(sid, code)| crate::wire::BoundSessionId {
                code: *code,
                session_id: SessionId([*sid; 16]),
            })
            .collect();
    }
    m.to_bytes()
}

/// RFC 5974 §5.4.1: a node whose state of a session goes sends a NOTIFY for each reservation
/// bound to it as dependent (0x04) towards that reservation's QNI, by its own routing state
/// (not riding the GIST Response of another session's Query); none for a binding of another
/// kind (0x02 here). The INFO-SPEC: Informational "Unknown BOUND-SESSION-ID", quoting the
/// binding.
#[test]
fn a_dependent_reservation_is_notified_when_its_bound_session_is_torn() {
    use crate::wire::BindingCode;
    let (mut e, mut g) = (engine(), Recorder::default());
    let t = Instant::ZERO;
    e.recv_message(t, &mut g, recv(initial(5), UP, 1));
    e.recv_message(
        t,
        &mut g,
        recv(bound_reserve(5, &[(1, BindingCode::DEPENDENT)]), UP, 2),
    );
    e.recv_message(
        t,
        &mut g,
        recv(bound_reserve(5, &[(1, BindingCode::BIDIRECTIONAL)]), UP, 3),
    );
    g.sent.clear();
    let mut tear = reduced(6, 0x0102_0304);
    tear.tear = true;
    // The tear rides a GIST Query (its Routing-State-Check).
    let mut m = recv(Message::new(Body::Reserve(tear)).to_bytes(), UP, 1);
    m.routing_state_check = true;
    let decision = e.recv_message(t, &mut g, m);
    assert_eq!(
        decision,
        RoutingDecision::ACCEPT,
        "nothing rides session 1's Response"
    );
    assert!(e.session(&SessionId([1; 16])).is_none());
    let out = notifies(&g);
    assert_eq!(out.len(), 1, "{out:?}");
    let (dir, sid, handle, info, _) = &out[0];
    assert_eq!(
        (*dir, *sid, *handle),
        (Direction::Upstream, SessionId([2; 16]), None)
    );
    assert_eq!(
        (info.class, info.code),
        (
            ErrorClass::Informational,
            code::informational::UNKNOWN_BOUND_SESSION_ID
        )
    );
    let quoted = crate::wire::BoundSessionId {
        code: BindingCode::DEPENDENT,
        session_id: SessionId([1; 16]),
    }
    .to_object_bytes();
    assert!(
        info.error_specific
            .windows(quoted.len())
            .any(|w| w == quoted),
        "the binding quoted as Object Value Info"
    );
    assert_eq!(e.counters().bound_notifies, 1);
    assert_eq!(
        e.len(),
        2,
        "the QNI decides (§5.4.4): the dependents stay here"
    );

    // State lost by timeout notifies the same way.
    let (mut e, mut g) = (engine(), Recorder::default());
    e.recv_message(t, &mut g, recv(initial(5), UP, 1));
    let expires = e.session(&SessionId([1; 16])).unwrap().expires_at.unwrap();
    let late = Instant::ZERO + Duration::from_secs(100);
    assert!(late < expires);
    e.recv_message(
        late,
        &mut g,
        recv(bound_reserve(5, &[(1, BindingCode::DEPENDENT)]), UP, 2),
    );
    g.sent.clear();
    e.handle_timeout(expires, &mut g);
    assert!(e.session(&SessionId([1; 16])).is_none());
    assert!(
        matches!(&notifies(&g)[..], [(Direction::Upstream, s, None, _, _)] if *s == SessionId([2; 16]))
    );

    // At the QNI of both, releasing the bound session reports the dependent one there.
    let (mut e, mut g) = (engine(), Recorder::default());
    let (me, dst) = (ME.parse().unwrap(), DST.parse().unwrap());
    let x = e
        .reserve(&mut g, t, &ReserveRequest::new(me, dst, vectors::tmod()))
        .unwrap();
    let mut req = ReserveRequest::new(me, dst, vectors::tmod()).bound_to(x, BindingCode::DEPENDENT);
    req.protocol = Some(17);
    req.dest_port = Some(5001);
    let dependent = e.reserve(&mut g, t, &req).unwrap();
    g.sent.clear();
    e.release(&mut g, t, x).unwrap();
    assert!(notifies(&g).is_empty(), "no message: this is the QNI");
    let reported = notified(&mut e);
    assert_eq!(reported.len(), 1);
    assert_eq!(reported[0].0, dependent);
    assert_eq!(
        reported[0].1.code,
        code::informational::UNKNOWN_BOUND_SESSION_ID
    );
    assert!(e.session(&dependent).is_some());
}

/// RFC 5974 §5.3.3: "a QNE MUST copy the BOUND-SESSION-ID object into all messages it sends
/// for the same session" and store it; §5.4.1: the QNI's RESERVE includes it.
#[test]
fn bound_session_ids_are_carried_hop_by_hop() {
    use crate::wire::{BindingCode, BoundSessionId};
    let b = |sid: u8, code| BoundSessionId {
        code,
        session_id: SessionId([sid; 16]),
    };
    let both = vec![b(7, BindingCode::DEPENDENT), b(8, BindingCode::AGGREGATE)];
    // A QNE: stored, and in the RESERVE passed on, its refreshes and its tear.
    let (mut e, mut g) = (engine(), Recorder::default());
    e.recv_message(
        Instant::ZERO,
        &mut g,
        recv(
            bound_reserve(
                5,
                &[(7, BindingCode::DEPENDENT), (8, BindingCode::AGGREGATE)],
            ),
            UP,
            1,
        ),
    );
    assert_eq!(e.session(&SessionId([1; 16])).unwrap().bound, both);
    assert_eq!(last_reserve(&g).0.bound_sessions, both, "passed on");
    g.sent.clear();
    let refresh_at = e.session(&SessionId([1; 16])).unwrap().refresh_at.unwrap();
    e.handle_timeout(refresh_at, &mut g);
    let (r, _) = last_reserve(&g);
    assert_eq!(
        (r.qspec.is_none(), &r.bound_sessions),
        (true, &both),
        "reduced refresh"
    );
    let mut tear = reduced(6, 0x0102_0304);
    tear.tear = true;
    e.recv_message(
        refresh_at,
        &mut g,
        recv(Message::new(Body::Reserve(tear)).to_bytes(), UP, 1),
    );
    let (r, _) = last_reserve(&g);
    assert_eq!((r.tear, &r.bound_sessions), (true, &both), "tear");

    // The QNI of a sender-initiated reservation sends it.
    let (mut e, mut g) = (engine(), Recorder::default());
    let (me, dst): (IpAddr, IpAddr) = (ME.parse().unwrap(), DST.parse().unwrap());
    let req = ReserveRequest::new(me, dst, vectors::tmod())
        .bound_to(SessionId([7; 16]), BindingCode::DEPENDENT);
    e.reserve(&mut g, Instant::ZERO, &req).unwrap();
    assert_eq!(
        last_reserve(&g).0.bound_sessions,
        vec![b(7, BindingCode::DEPENDENT)]
    );

    // Receiver-initiated: in the QUERY with RESERVE-INIT, copied by the QNI answering it.
    let (mut e, mut g) = (engine(), Recorder::default());
    let req = ReserveRequest::new(me, dst, vectors::tmod())
        .bound_to(SessionId([7; 16]), BindingCode::BIDIRECTIONAL);
    e.reserve_receiver_initiated(&mut g, Instant::ZERO, &req)
        .unwrap();
    let Body::Query(q) = Message::parse(&g.sent[0].nslp_data).unwrap().body else {
        panic!("not a QUERY");
    };
    assert_eq!(q.bound_sessions, vec![b(7, BindingCode::BIDIRECTIONAL)]);
    let (mut qni, mut g) = (engine(), Recorder::default());
    qni.recv_message(
        Instant::ZERO,
        &mut g,
        recv_along(
            Message::new(Body::Query(q)).to_bytes(),
            UP,
            1,
            SRC,
            ME,
            Direction::Downstream,
        ),
    );
    assert_eq!(
        last_reserve(&g).0.bound_sessions,
        vec![b(7, BindingCode::BIDIRECTIONAL)],
        "the QNI's RESERVE up the path"
    );
}

/// QoS campaign seed 8341147331591390: an error RESPONSE goes back the way the refused
/// RESERVE came, explicitly routed by the asking peer's SII-Handle (§5.4.3), not by routing
/// state, which after a route change leads elsewhere; a node on that path ends its
/// reservation and sends the error on to the peer its RESERVEs came from, so every node that
/// holds the state hears it (the old path's reservations had been kept by the QNI's refreshes).
#[test]
fn qos_seed_8341147331591390_an_error_goes_back_the_way_the_reserve_came() {
    // A node with no room refuses, and answers the peer that asked.
    let mut tc = MemoryTrafficControl::new();
    tc.add_interface(
        IfIndex(2),
        TcInterface {
            reservable: 1.0,
            bandwidth: 12_500_000.0,
            latency_us: 100,
            mtu: 1500,
        },
    );
    let (mut e, mut g) = (QosNslp::new(QosConfig::default(), tc), Recorder::default());
    e.recv_message(Instant::ZERO, &mut g, recv(initial(5), UP, 1));
    assert!(e.is_empty(), "refused");
    let [answer] = &g.sent[..] else {
        panic!("{:?}", g.sent)
    };
    assert_eq!(answer.sii_handle, Some(SiiHandle(UP.parse().unwrap())));
    assert_eq!(Direction::of(&answer.mri), Direction::Upstream);
    let Body::Response(r) = Message::parse(&answer.nslp_data).unwrap().body else {
        panic!("a RESPONSE")
    };
    assert_eq!(
        (r.info_spec.class, r.info_spec.code),
        (
            ErrorClass::TransientFailure,
            code::transient::RESERVATION_FAILURE
        )
    );
    assert_eq!(r.answers, Some(Answers::Rii(Rii(42))));

    // A node that holds the reservation gets that error, explicitly routed, from its next
    // peer: the reservation ends and the error goes on to the peer the RESERVE came from.
    let (mut e, mut g) = (engine(), Recorder::default());
    e.recv_message(Instant::ZERO, &mut g, recv(initial(5), UP, 1));
    assert_eq!(e.traffic_control().len(), 1);
    g.sent.clear();
    let mut err = recv_along(
        answer.nslp_data.clone(),
        DOWN_OLD,
        1,
        SRC,
        DST,
        Direction::Upstream,
    );
    err.explicitly_routed = true;
    e.recv_message(Instant::ZERO, &mut g, err);
    assert!(e.is_empty(), "the reservation ended");
    assert!(e.traffic_control().is_empty());
    let [on] = &g.sent[..] else {
        panic!("{:?}", g.sent)
    };
    assert_eq!(on.sii_handle, Some(SiiHandle(UP.parse().unwrap())));
    assert!(matches!(
        Message::parse(&on.nslp_data).unwrap().body,
        Body::Response(r) if r.info_spec.code == code::transient::RESERVATION_FAILURE
    ));

    // A success still goes by routing state.
    let (mut e, mut g) = (engine(), Recorder::default());
    let mut m = vectors::reserve_initial();
    if let Body::Reserve(r) = &mut m.body {
        r.rsn.rsn = 5;
    }
    let mut at_qnr = recv(m.to_bytes(), UP, 1);
    at_qnr.mri = Mri::PathCoupled(PathCoupledMri::flow(
        SRC.parse().unwrap(),
        ME.parse().unwrap(),
    ));
    e.recv_message(Instant::ZERO, &mut g, at_qnr);
    let ok: Vec<_> = g
        .sent
        .iter()
        .filter(|m| {
            matches!(
                Message::parse(&m.nslp_data).unwrap().body,
                Body::Response(_)
            )
        })
        .collect();
    assert_eq!(ok.len(), 1, "{:?}", g.sent);
    assert_eq!(ok[0].sii_handle, None);
}

/// QoS campaign seed 7993882420324183: downstream, GIST names the peer that answered this
/// node's own Query along the route as it is, so a route that goes back to a peer left before
/// is a route change like any other (§3.2.12): the next peer follows it, a RESERVE with an RII
/// goes down the path, and summaries group the session with that peer's. (The "no falling back"
/// of §5.2.5.4 is about upstream peers.) Before, the next peer stayed the abandoned branch's,
/// and summaries to it kept that branch reserved.
#[test]
fn qos_seed_7993882420324183_a_route_back_to_an_earlier_downstream_peer_is_followed() {
    let (mut e, mut g) = moved_downstream();
    let t = Instant::ZERO;
    let sid = SessionId([1; 16]);
    let peer = |s: &str| SiiHandle(s.parse().unwrap());
    let first = last_reserve(&g).0.rii.unwrap();
    e.recv_message(
        t,
        &mut g,
        recv_along(success(first), DOWN_NEW, 1, SRC, DST, Direction::Upstream),
    );
    assert_eq!(e.session(&sid).unwrap().next_peer, Some(peer(DOWN_NEW)));
    g.sent.clear();

    // Much later the route goes back to the first peer.
    e.network_notification(
        t,
        &mut g,
        routing_change(1, SRC, DST, Direction::Downstream, DOWN_OLD, true),
    );
    let s = e.session(&sid).unwrap();
    assert_eq!(s.next_peer, Some(peer(DOWN_OLD)), "followed back");
    assert_eq!(s.old_branch, Some(peer(DOWN_NEW)));
    let (r, handle) = last_reserve(&g);
    assert_eq!(
        (handle, r.tear, r.rsn.rsn),
        (None, false, 4),
        "RSN + 2 again"
    );
    assert!(r.qspec.is_some() && r.rii.is_some());
    assert_eq!(e.counters().route_changes, 2);

    // Upstream the rule stands: GIST naming the abandoned upstream peer again (it refreshes
    // its state until it goes) is no route change.
    let (mut e, mut g) = (engine(), Recorder::default());
    e.recv_message(t, &mut g, reserve_init_to_me(UP));
    const UP_NEW: &str = "10.0.7.1";
    for (p, changed) in [(UP, false), (UP_NEW, true), (UP, true)] {
        e.network_notification(
            t,
            &mut g,
            routing_change(1, SRC, ME, Direction::Upstream, p, changed),
        );
    }
    assert_eq!(e.session(&sid).unwrap().next_peer, Some(peer(UP_NEW)));
    assert_eq!(e.counters().route_changes, 1);
}
