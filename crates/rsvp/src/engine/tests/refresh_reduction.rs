//! Refresh reduction as a receiver and a restarted neighbour's peer (RFC 2961 §4.5, §5.1–§5.4):
//! out-of-order messages, Epoch changes, and Srefreshes of every list form.

use super::*;
use crate::wire::message::{Ack, Refresh, Srefresh};
use crate::wire::te::{
    AckKind, MessageId, MessageIdAck, MessageIdList, MessageIds, MulticastMessageId,
    REFRESH_REDUCTION_CAPABLE, SourceMessageId,
};
use crate::wire::{ResvTear, message::refresh::bundle_messages};
use pathwise_core::route::MulticastRoute;

const GROUP: Ipv4Addr = Ipv4Addr::new(224, 1, 1, 1);
const SENDER: Ipv4Addr = Ipv4Addr::new(30, 0, 0, 1);

/// The test engine with refresh reduction on and a multicast tree for (SENDER, GROUP) in on
/// UP and out on DOWN.
fn rr_engine() -> RsvpEngine {
    let mut e = engine();
    e.cfg.refresh_reduction = true;
    e.handle_route_change(
        Instant::ZERO,
        RouteChange::AddMulticast(MulticastRoute {
            source: SENDER.into(),
            group: GROUP.into(),
            iif: Some(UP),
            oifs: vec![DOWN],
            local_member: false,
        }),
    );
    e
}

fn mid(epoch: u32, id: u32) -> Refresh {
    Refresh {
        acks: Vec::new(),
        message_id: Some(MessageId {
            flags: MessageId::ACK_DESIRED,
            epoch,
            message_id: id,
        }),
    }
}

fn identified(m: &Message, refresh: &Refresh) -> Vec<u8> {
    let mut v = Vec::new();
    m.emit_with(63, REFRESH_REDUCTION_CAPABLE, refresh, &mut v);
    v
}

/// A Path from PHOP whose Tspec rate tells versions apart.
fn path_rate(s: Session, rate: f32) -> Message {
    let Message::Path(mut p) = path(s, sender(1)) else {
        unreachable!()
    };
    p.sender.tspec = SenderTspec(tb(rate));
    Message::Path(p)
}

/// A Path for `s` at `rate` with Message_Identifier `id`, from the previous hop upstream (TTL
/// 63); what the engine sent.
fn path_from_upstream(
    e: &mut RsvpEngine,
    now: Instant,
    s: Session,
    rate: f32,
    id: Refresh,
) -> Vec<Transmit> {
    feed(e, now, &identified(&path_rate(s, rate), &id), PHOP, UP, 63)
}

/// Every message sent, Bundles opened.
fn messages(ts: &[Transmit]) -> Vec<(IpAddr, Message, Refresh)> {
    let mut out = Vec::new();
    for t in ts {
        let subs: Vec<&[u8]> = if t.payload[1] == crate::wire::te::msg_type::BUNDLE {
            bundle_messages(&t.payload).map(Result::unwrap).collect()
        } else {
            vec![&t.payload[..]]
        };
        for s in subs {
            let (_, m, r) = Message::parse_refresh(s).expect("valid");
            out.push((t.dst, m, r));
        }
    }
    out
}

fn paths_sent(ts: &[Transmit]) -> usize {
    messages(ts)
        .iter()
        .filter(|(_, m, _)| matches!(m, Message::Path(_)))
        .count()
}

fn out_of_order(e: &RsvpEngine) -> u64 {
    e.counters().drops.get("out_of_order").copied().unwrap_or(0)
}

fn acks_to(ts: &[Transmit], kind: AckKind) -> Vec<u32> {
    messages(ts)
        .into_iter()
        .flat_map(|(_, _, r)| r.acks)
        .filter(|a| a.kind == kind)
        .map(|a| a.message_id)
        .collect()
}

#[test]
fn an_out_of_order_path_is_dropped_counted_and_not_acknowledged() {
    let mut e = rr_engine();
    let s = session(1);
    let t0 = Instant::ZERO;
    let sent = path_from_upstream(&mut e, t0, s, 1000.0, mid(5, 10));
    assert_eq!(paths_sent(&sent), 1);
    // An older, different Path (identifier 9 < 10, same Epoch) is silently dropped.
    let sent = path_from_upstream(&mut e, t0, s, 2000.0, mid(5, 9));
    assert_eq!(paths_sent(&sent), 0, "an out-of-order Path changes nothing");
    assert!(acks_to(&sent, AckKind::Ack).is_empty());
    assert_eq!(out_of_order(&e), 1);
    // A newer one is processed (and forwarded, since it changed the state).
    let sent = path_from_upstream(&mut e, t0, s, 3000.0, mid(5, 11));
    assert_eq!(paths_sent(&sent), 1);
    assert_eq!(acks_to(&sent, AckKind::Ack), vec![11]);
    // The same identifier again is a refresh, not out of order.
    path_from_upstream(&mut e, t0, s, 3000.0, mid(5, 11));
    assert_eq!(out_of_order(&e), 1);
}

#[test]
fn an_out_of_order_path_tear_is_dropped_and_state_stays() {
    let mut e = rr_engine();
    let s = session(1);
    let t0 = Instant::ZERO;
    path_from_upstream(&mut e, t0, s, 1000.0, mid(5, 10));
    feed(
        &mut e,
        t0,
        &identified(&path_tear(s), &mid(5, 8)),
        PHOP,
        UP,
        63,
    );
    assert_eq!(out_of_order(&e), 1);
    assert_eq!(e.state_stats().psbs, 1);
    feed(
        &mut e,
        t0,
        &identified(&path_tear(s), &mid(5, 12)),
        PHOP,
        UP,
        63,
    );
    assert_eq!(e.state_stats().psbs, 0);
    // No state is left to associate an older Path with: §4.5 "MUST NOT treat the message as
    // out of order".
    path_from_upstream(&mut e, t0, s, 1000.0, mid(5, 11));
    assert_eq!((out_of_order(&e), e.state_stats().psbs), (1, 1));
}

#[test]
fn an_out_of_order_resv_is_dropped() {
    let mut e = rr_engine();
    let s = session(1);
    let t0 = Instant::ZERO;
    feed(&mut e, t0, &bytes(&path(s, sender(1)), 63), PHOP, UP, 63);
    let r = |rate| resv(s, StyleKind::Ff, ff(rate, sender(1)));
    let sent = feed(
        &mut e,
        t0,
        &identified(&r(10.0), &mid(7, 100)),
        NHOP,
        DOWN,
        64,
    );
    assert!(
        messages(&sent)
            .iter()
            .any(|(_, m, _)| matches!(m, Message::Resv(_)))
    );
    let sent = feed(
        &mut e,
        t0,
        &identified(&r(20.0), &mid(7, 99)),
        NHOP,
        DOWN,
        64,
    );
    assert!(
        messages(&sent)
            .iter()
            .all(|(_, m, _)| !matches!(m, Message::Resv(_)))
    );
    assert_eq!(out_of_order(&e), 1);
    // An out-of-order ResvTear is dropped too; the reservation stays.
    let tear = Message::ResvTear(ResvTear {
        integrity: None,
        session: s,
        hop: RsvpHop::new(NHOP.into(), DOWN.0),
        scope: None,
        style: Style {
            flags: 0,
            kind: StyleKind::Ff,
        },
        flows: ff(10.0, sender(1)),
        forward: Vec::new(),
    });
    feed(&mut e, t0, &identified(&tear, &mid(7, 98)), NHOP, DOWN, 64);
    assert_eq!((out_of_order(&e), e.state_stats().rsbs), (2, 1));
    feed(&mut e, t0, &identified(&tear, &mid(7, 101)), NHOP, DOWN, 64);
    assert_eq!((out_of_order(&e), e.state_stats().rsbs), (2, 0));
}

#[test]
fn a_different_epoch_is_never_out_of_order() {
    let mut e = rr_engine();
    let s = session(1);
    let t0 = Instant::ZERO;
    path_from_upstream(&mut e, t0, s, 1000.0, mid(5, 1000));
    // The neighbour restarted: Epoch 6, identifiers from 1 again. Fully processed.
    let sent = path_from_upstream(&mut e, t0, s, 2000.0, mid(6, 1));
    assert_eq!(paths_sent(&sent), 1);
    assert_eq!(out_of_order(&e), 0);
    assert_eq!(e.counters().refresh.epoch_changes, 1);
    // Within the new Epoch, ordering applies again.
    path_from_upstream(&mut e, t0, s, 3000.0, mid(6, 0));
    assert_eq!(out_of_order(&e), 1);
}

#[test]
fn identifiers_wrap_around() {
    let mut e = rr_engine();
    let s = session(1);
    let t0 = Instant::ZERO;
    path_from_upstream(&mut e, t0, s, 1000.0, mid(5, 0xffff_fff0));
    // 5 follows 0xffff_fff0 once the 32-bit identifier wraps: (int) old - (int) new < 0.
    let sent = path_from_upstream(&mut e, t0, s, 2000.0, mid(5, 5));
    assert_eq!((paths_sent(&sent), out_of_order(&e)), (1, 0));
    // And 0xffff_fff8 is before 5.
    let sent = path_from_upstream(&mut e, t0, s, 3000.0, mid(5, 0xffff_fff8));
    assert_eq!((paths_sent(&sent), out_of_order(&e)), (0, 1));
}

/// Feed a datagram addressed to `dst`.
fn feed_to(e: &mut RsvpEngine, now: Instant, payload: &[u8], dst: Ipv4Addr) -> Vec<Transmit> {
    e.handle_datagram(
        now,
        Received {
            src: PHOP.into(),
            dst: dst.into(),
            ifindex: UP,
            transport: Transport::Raw(IPPROTO_RSVP),
            router_alert: Some(0),
            ttl: 63,
            payload,
        },
    );
    std::iter::from_fn(|| e.poll_transmit()).collect()
}

fn srefresh(lists: Vec<MessageIdList>) -> Vec<u8> {
    identified(
        &Message::Srefresh(Srefresh {
            integrity: None,
            lists,
        }),
        &Refresh::default(),
    )
}

fn mcast_list(id: u32, source: Ipv4Addr, group: Ipv4Addr) -> MessageIdList {
    MessageIdList {
        flags: 0,
        epoch: 5,
        ids: MessageIds::Ipv4McastList(vec![MulticastMessageId {
            message_id: id,
            source,
            destination: group,
        }]),
    }
}

fn src_list(id: u32, source: Ipv4Addr) -> MessageIdList {
    MessageIdList {
        flags: 0,
        epoch: 5,
        ids: MessageIds::Ipv4SrcList(vec![SourceMessageId {
            message_id: id,
            source,
        }]),
    }
}

/// Drive timers up to `until`, collecting what is sent.
fn run_until(e: &mut RsvpEngine, until: Instant) -> Vec<Transmit> {
    let mut out = Vec::new();
    while let Some(t) = e.poll_timeout().filter(|t| *t <= until) {
        e.handle_timeout(t);
        out.extend(std::iter::from_fn(|| e.poll_transmit()));
    }
    out
}

#[test]
fn src_list_and_mcast_list_srefreshes_keep_multicast_path_state() {
    let mut e = rr_engine();
    let s = Session::ip(GROUP.into(), 17, 1);
    let p = identified(&path(s, sender(1)), &mid(5, 40));
    feed_to(&mut e, Instant::ZERO, &p, GROUP);
    assert_eq!(e.state_stats().psbs, 1);
    // Path state lives (K + 0.5) × 1.5 × R = 157.5 s (RFC 2205 §3.7); Srefreshes every 60 s,
    // alternately a SRC_LIST to the group and an MCAST_LIST to this node, keep it for 300 s.
    for i in 1..=5u64 {
        let at = Instant::from_secs(60 * i);
        run_until(&mut e, at);
        let sent = if i % 2 == 0 {
            feed_to(&mut e, at, &srefresh(vec![src_list(40, SENDER)]), GROUP)
        } else {
            feed_to(
                &mut e,
                at,
                &srefresh(vec![mcast_list(40, SENDER, GROUP)]),
                PHOP,
            )
        };
        assert!(acks_to(&sent, AckKind::Nack).is_empty(), "at {i}: {sent:?}");
        assert_eq!(e.state_stats().psbs, 1, "at {i}");
    }
    assert_eq!(e.counters().refresh.nacks_sent, 0);
    // Without them it times out.
    run_until(&mut e, Instant::from_secs(500));
    assert_eq!(e.state_stats().psbs, 0);
}

#[test]
fn srefresh_lists_name_only_the_state_of_their_form() {
    let mut e = rr_engine();
    let t0 = Instant::ZERO;
    let m = Session::ip(GROUP.into(), 17, 1);
    feed_to(
        &mut e,
        t0,
        &identified(&path(m, sender(1)), &mid(5, 40)),
        GROUP,
    );
    // Multicast Path state is not named by a LIST (§5.3): NACKed.
    let list = MessageIdList {
        flags: 0,
        epoch: 5,
        ids: MessageIds::List(vec![40]),
    };
    let sent = feed_to(&mut e, t0, &srefresh(vec![list]), PHOP);
    assert_eq!(acks_to(&sent, AckKind::Nack), vec![40]);
    // NACKed, the identifier is forgotten: the sender answers with the full Path.
    feed_to(
        &mut e,
        t0,
        &identified(&path(m, sender(1)), &mid(5, 41)),
        GROUP,
    );
    // An MCAST_LIST with another group does not match; the node would forward neither that
    // group nor another sender's data, so those are silently ignored (§5.3).
    let other = Ipv4Addr::new(224, 9, 9, 9);
    let sent = feed_to(
        &mut e,
        t0,
        &srefresh(vec![
            mcast_list(41, SENDER, other),
            mcast_list(41, Ipv4Addr::new(30, 0, 0, 9), GROUP),
        ]),
        PHOP,
    );
    assert!(acks_to(&sent, AckKind::Nack).is_empty());
    assert_eq!(e.counters().refresh.unforwarded_ids, 2);
    // A SRC_LIST sent to another group is not this state either.
    let sent = feed_to(&mut e, t0, &srefresh(vec![src_list(41, SENDER)]), other);
    assert!(acks_to(&sent, AckKind::Nack).is_empty());
    assert_eq!(e.counters().refresh.unforwarded_ids, 3);
}

#[test]
fn unknown_multicast_identifiers_are_nacked_when_this_node_forwards_the_data() {
    let mut e = rr_engine();
    let t0 = Instant::ZERO;
    let sent = feed_to(
        &mut e,
        t0,
        &srefresh(vec![mcast_list(77, SENDER, GROUP)]),
        PHOP,
    );
    assert_eq!(acks_to(&sent, AckKind::Nack), vec![77]);
    let sent = feed_to(&mut e, t0, &srefresh(vec![src_list(78, SENDER)]), GROUP);
    assert_eq!(acks_to(&sent, AckKind::Nack), vec![78]);
    let list = MessageIdList {
        flags: 0,
        epoch: 5,
        ids: MessageIds::List(vec![79, 80]),
    };
    let sent = feed_to(
        &mut e,
        t0,
        &srefresh(vec![list, mcast_list(81, SENDER, GROUP)]),
        PHOP,
    );
    assert_eq!(acks_to(&sent, AckKind::Nack), vec![79, 80, 81]);
    assert_eq!(e.counters().refresh.nacks_sent, 5);
}

/// Set up session 1 with PHOP upstream and NHOP (capable, Epoch 9) downstream, and run
/// until the Path towards NHOP is identified and acknowledged; returns the time reached.
fn acknowledged_downstream(e: &mut RsvpEngine) -> Instant {
    let s = session(1);
    feed(
        e,
        Instant::ZERO,
        &bytes(&path(s, sender(1)), 63),
        PHOP,
        UP,
        63,
    );
    let r = resv(s, StyleKind::Ff, ff(10.0, sender(1)));
    feed(
        e,
        Instant::ZERO,
        &identified(&r, &mid(9, 1)),
        NHOP,
        DOWN,
        64,
    );
    // The next Path refresh to NHOP carries a MESSAGE_ID; acknowledge it.
    let (our, now) = loop {
        let now = e.poll_timeout().expect("refresh timer");
        e.handle_timeout(now);
        let sent: Vec<Transmit> = std::iter::from_fn(|| e.poll_transmit()).collect();
        if let Some(m) = messages(&sent)
            .into_iter()
            .find(|(_, m, r)| matches!(m, Message::Path(_)) && r.message_id.is_some())
            .and_then(|(_, _, r)| r.message_id)
        {
            break (m, now);
        }
        assert!(now < Instant::from_secs(100), "no identified Path");
    };
    let ack = Refresh {
        acks: vec![MessageIdAck {
            kind: AckKind::Ack,
            flags: 0,
            epoch: our.epoch,
            message_id: our.message_id,
        }],
        message_id: None,
    };
    let a = identified(&Message::Ack(Ack { integrity: None }), &ack);
    feed(e, now, &a, NHOP, DOWN, 1);
    assert_eq!(e.counters().refresh.acks_received, 1);
    now
}

#[test]
fn a_neighbour_with_a_new_epoch_is_sent_its_state_at_once() {
    let mut e = rr_engine();
    let now = acknowledged_downstream(&mut e);
    // Acknowledged: the next refresh towards NHOP is a summary, not a Path.
    let later = run_until(&mut e, now + Duration::from_secs(50));
    assert_eq!(paths_sent(&later), 0);
    assert!(e.counters().refresh.summarized > 0);
    let now = now + Duration::from_secs(50);
    // NHOP restarts (Epoch 9 → 10); its first identified message brings the Path at once, in
    // full and identified, to be acknowledged again.
    let r = resv(session(1), StyleKind::Ff, ff(10.0, sender(1)));
    let sent = feed(&mut e, now, &identified(&r, &mid(10, 1)), NHOP, DOWN, 64);
    let paths: Vec<_> = messages(&sent)
        .into_iter()
        .filter(|(_, m, _)| matches!(m, Message::Path(_)))
        .collect();
    assert_eq!(paths.len(), 1, "{sent:?}");
    assert!(paths[0].2.message_id.is_some());
    assert_eq!(e.counters().refresh.epoch_changes, 1);
    // Unacknowledged, it is retransmitted (RFC 2961 §6).
    let again = run_until(&mut e, now + Duration::from_millis(600));
    assert_eq!(paths_sent(&again), 1);
    // The same Epoch again is no restart.
    feed(&mut e, now, &identified(&r, &mid(10, 2)), NHOP, DOWN, 64);
    assert_eq!(e.counters().refresh.epoch_changes, 1);
}

/// RFC 2961 §2: a neighbour whose messages stop carrying the Refresh-Reduction-Capable flag
/// (it restarted without refresh reduction, or another implementation took its address) is
/// refreshed in full from then on: no Srefresh, no Bundle, no MESSAGE_ID. When it sets the
/// flag again, it is first sent its state in full and identified, not summarised.
#[test]
fn a_neighbour_that_stops_setting_the_capable_flag_is_refreshed_in_full() {
    // Paths go to the session's destination out of DOWN; the rest to NHOP itself.
    let towards_nhop = |t: &Transmit| t.ifindex == Some(DOWN) || t.dst == IpAddr::from(NHOP);
    let mut e = rr_engine();
    let now = acknowledged_downstream(&mut e);
    let r = resv(session(1), StyleKind::Ff, ff(10.0, sender(1)));
    // Its Resv refresh without the flag (and without a MESSAGE_ID).
    feed(&mut e, now, &bytes(&r, 64), NHOP, DOWN, 64);
    assert_eq!(e.counters().refresh.capability_lost, 1);
    let summarized = e.counters().refresh.summarized;
    let mut now = now;
    let mut paths = 0;
    while now < Instant::from_secs(200) {
        let Some(t) = e.poll_timeout() else { break };
        now = t;
        e.handle_timeout(t);
        let mut sent: Vec<Transmit> = std::iter::from_fn(|| e.poll_transmit()).collect();
        // Keep the state alive from both sides, the next hop still without the flag.
        sent.extend(feed(&mut e, now, &bytes(&r, 64), NHOP, DOWN, 64));
        sent.extend(feed(
            &mut e,
            now,
            &bytes(&path(session(1), sender(1)), 63),
            PHOP,
            UP,
            63,
        ));
        for t in sent.iter().filter(|t| towards_nhop(t)) {
            assert_ne!(t.payload[1], crate::wire::te::msg_type::BUNDLE, "{t:?}");
            let (_, m, refresh) = Message::parse_refresh(&t.payload).expect("valid");
            assert!(!matches!(m, Message::Srefresh(_)), "{m:?}");
            assert_eq!(refresh.message_id, None, "{m:?}");
            paths += usize::from(matches!(m, Message::Path(_)));
        }
    }
    assert!(paths >= 4, "{paths} Paths refreshed in full");
    assert_eq!(e.counters().refresh.summarized, summarized);
    assert_eq!(e.counters().refresh.capability_lost, 1, "counted once");
    // It sets the flag again: the next Path towards it is full and identified.
    feed(&mut e, now, &identified(&r, &mid(9, 2)), NHOP, DOWN, 64);
    let later: Vec<Transmit> = run_until(&mut e, now + Duration::from_secs(50))
        .into_iter()
        .filter(towards_nhop)
        .collect();
    let identified_paths = messages(&later)
        .into_iter()
        .filter(|(_, m, r)| matches!(m, Message::Path(_)) && r.message_id.is_some())
        .count();
    assert!(identified_paths >= 1, "{later:?}");
    assert_eq!(e.counters().refresh.summarized, summarized);
}

#[test]
fn multicast_path_state_is_refreshed_in_full() {
    let mut e = rr_engine();
    let s = Session::ip(GROUP.into(), 17, 1);
    feed_to(
        &mut e,
        Instant::ZERO,
        &identified(&path(s, sender(1)), &mid(5, 40)),
        GROUP,
    );
    // A capable next hop on DOWN acknowledges whatever Path identifier it gets.
    let r = resv(s, StyleKind::Ff, ff(10.0, sender(1)));
    feed(
        &mut e,
        Instant::ZERO,
        &identified(&r, &mid(9, 1)),
        NHOP,
        DOWN,
        64,
    );
    let mut now = Instant::ZERO;
    let mut paths = 0;
    while now < Instant::from_secs(200) {
        let Some(t) = e.poll_timeout() else { break };
        now = t;
        e.handle_timeout(t);
        // Keep the upstream state alive.
        let keep = srefresh(vec![mcast_list(40, SENDER, GROUP)]);
        let mut sent: Vec<Transmit> = std::iter::from_fn(|| e.poll_transmit()).collect();
        sent.extend(feed_to(&mut e, now, &keep, PHOP));
        for (_, m, r) in messages(&sent) {
            if !matches!(m, Message::Path(_)) {
                assert!(!matches!(m, Message::Srefresh(_)), "{m:?}");
                continue;
            }
            paths += 1;
            if let Some(id) = r.message_id {
                let ack = Refresh {
                    acks: vec![MessageIdAck {
                        kind: AckKind::Ack,
                        flags: 0,
                        epoch: id.epoch,
                        message_id: id.message_id,
                    }],
                    message_id: None,
                };
                let a = identified(&Message::Ack(Ack { integrity: None }), &ack);
                feed(&mut e, now, &a, NHOP, DOWN, 1);
            }
        }
    }
    assert!(paths >= 4, "{paths}");
    assert!(e.counters().refresh.acks_received > 0);
    assert_eq!(e.counters().refresh.summarized, 0);
}

/// Issue #21: a driver that hands the engine several datagrams before it has sent everything
/// queued (the daemon hands it a whole `recvmmsg` batch) found a Bundle built for one input
/// put inside the one built for a later input, and the neighbour dropped the rest of the
/// outer Bundle at the inner one (`bad_bundle`). RFC 2961 §3.2: a sub-message is never
/// another Bundle. Here the driver takes one message after each input (a forwarded Path
/// first), so Bundles already made stay queued when new acknowledgements join them.
#[test]
fn bundles_built_across_a_batch_of_inputs_never_nest() {
    let mut e = rr_engine();
    let t0 = Instant::ZERO;
    let n = 5u16;
    let mut sent = Vec::new();
    for i in 0..n {
        let p = identified(
            &path_rate(session(i + 1), 1000.0),
            &mid(5, u32::from(i) + 10),
        );
        e.handle_datagram(
            t0,
            Received {
                src: PHOP.into(),
                dst: IpAddr::V4(Ipv4Addr::new(20, 0, 0, 1)),
                ifindex: UP,
                transport: Transport::Raw(IPPROTO_RSVP),
                router_alert: Some(0),
                ttl: 63,
                payload: &p,
            },
        );
        sent.extend(e.poll_transmit());
    }
    sent.extend(std::iter::from_fn(|| e.poll_transmit()));
    let bundles: Vec<&Transmit> = sent
        .iter()
        .filter(|t| t.payload[1] == crate::wire::te::msg_type::BUNDLE)
        .collect();
    assert!(!bundles.is_empty(), "the acknowledgements go in Bundles");
    for b in bundles {
        for sub in bundle_messages(&b.payload) {
            let sub = sub.expect("every sub-message of a Bundle is valid");
            assert_ne!(
                sub[1],
                crate::wire::te::msg_type::BUNDLE,
                "a Bundle in a Bundle"
            );
        }
    }
    // Every identified Path was acknowledged to its previous hop, and a neighbour receiving
    // what was sent drops nothing.
    let mut acked = acks_to(&sent, AckKind::Ack);
    acked.sort_unstable();
    assert_eq!(acked, (10..10 + u32::from(n)).collect::<Vec<_>>());
    let mut phop = rr_engine();
    for t in sent.iter().filter(|t| t.dst == IpAddr::from(PHOP)) {
        phop.handle_datagram(
            t0,
            Received {
                src: Ipv4Addr::new(20, 0, 0, 1).into(),
                dst: t.dst,
                ifindex: DOWN,
                transport: Transport::Raw(IPPROTO_RSVP),
                router_alert: None,
                ttl: 64,
                payload: &t.payload,
            },
        );
    }
    assert_eq!(phop.counters().drops.get("bad_bundle"), None);
    assert_eq!(phop.counters().received(MsgType::Ack), u64::from(n));
}

/// What the model test feeds the engine.
#[derive(Clone, Copy, Debug)]
enum Op {
    /// An identified Path from PHOP for the session on this port (new or refreshed state).
    Path(u16),
    /// An identified PathTear from PHOP: the PSB goes, and with it any reservation.
    PathTear(u16),
    /// An identified Resv from NHOP for the session's sender.
    Resv(u16),
    /// An identified ResvTear from NHOP.
    ResvTear(u16),
    /// PHOP restarts: its later messages carry the other Epoch.
    Restart,
    /// An Srefresh from PHOP (true) or NHOP naming identifiers picked from every one sent.
    Srefresh(bool, [u16; 3]),
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    let port = 1u16..=4;
    prop_oneof![
        4 => port.clone().prop_map(Op::Path),
        2 => port.clone().prop_map(Op::PathTear),
        3 => port.clone().prop_map(Op::Resv),
        1 => port.prop_map(Op::ResvTear),
        1 => Just(Op::Restart),
        3 => (any::<bool>(), any::<[u16; 3]>()).prop_map(|(up, ids)| Op::Srefresh(up, ids)),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// The refresh tables against a reference map (RFC 2961 §4.5, §5.3, §5.4): whatever Paths,
    /// Resvs and teardowns come and go (PSB and session numbers reused), and whatever Epochs
    /// the previous hop restarts with, an Srefresh refreshes exactly the identifiers that
    /// installed state still there and NACKs every other, and once everything is torn down
    /// no record is left.
    #[test]
    fn refresh_tables_keep_track_of_every_identifier(ops in proptest::collection::vec(op(), 1..60)) {
        use std::collections::HashMap;
        let mut e = rr_engine();
        // (neighbour is PHOP, epoch, id) of every identified message sent, and which state
        // each port's Path and Resv state was installed by.
        let mut sent: Vec<(bool, u32, u32)> = Vec::new();
        let mut path_by: HashMap<u16, (u32, u32)> = HashMap::new();
        let mut resv_by: HashMap<u16, (u32, u32)> = HashMap::new();
        let (mut up_epoch, down_epoch) = (5u32, 9u32);
        let mut next = HashMap::from([(5u32, 1u32), (6, 1), (9, 1)]);
        let mut fresh = |epoch: u32| {
            let c = next.get_mut(&epoch).unwrap();
            *c += 1;
            *c
        };
        let mut now = Instant::ZERO;
        for op in ops {
            now += Duration::from_millis(10);
            match op {
                Op::Path(port) => {
                    let id = fresh(up_epoch);
                    sent.push((true, up_epoch, id));
                    feed(&mut e, now, &identified(&path(session(port), sender(1)), &mid(up_epoch, id)), PHOP, UP, 63);
                    path_by.insert(port, (up_epoch, id));
                }
                Op::PathTear(port) => {
                    let id = fresh(up_epoch);
                    sent.push((true, up_epoch, id));
                    feed(&mut e, now, &identified(&path_tear(session(port)), &mid(up_epoch, id)), PHOP, UP, 63);
                    path_by.remove(&port);
                    resv_by.remove(&port);
                }
                Op::Resv(port) => {
                    let id = fresh(down_epoch);
                    sent.push((false, down_epoch, id));
                    let m = resv(session(port), StyleKind::Ff, ff(10.0, sender(1)));
                    feed(&mut e, now, &identified(&m, &mid(down_epoch, id)), NHOP, DOWN, 64);
                    if path_by.contains_key(&port) {
                        resv_by.insert(port, (down_epoch, id));
                    }
                }
                Op::ResvTear(port) => {
                    let id = fresh(down_epoch);
                    sent.push((false, down_epoch, id));
                    feed(&mut e, now, &identified(&resv_tear(session(port)), &mid(down_epoch, id)), NHOP, DOWN, 64);
                    resv_by.remove(&port);
                }
                Op::Restart => up_epoch = if up_epoch == 5 { 6 } else { 5 },
                Op::Srefresh(up, picks) => {
                    let pool: Vec<(u32, u32)> = sent
                        .iter()
                        .filter(|s| s.0 == up)
                        .map(|s| (s.1, s.2))
                        .collect();
                    if pool.is_empty() {
                        continue;
                    }
                    let mut named: Vec<(u32, u32)> =
                        picks.iter().map(|&i| pool[usize::from(i) % pool.len()]).collect();
                    named.sort_unstable();
                    named.dedup();
                    let lists = named
                        .iter()
                        .map(|&(epoch, id)| MessageIdList {
                            flags: 0,
                            epoch,
                            ids: MessageIds::List(vec![id]),
                        })
                        .collect();
                    let from = if up { (PHOP, UP) } else { (NHOP, DOWN) };
                    let out = feed(&mut e, now, &srefresh(lists), from.0, from.1, 63);
                    let installed = if up { &path_by } else { &resv_by };
                    let mut want: Vec<u32> = named
                        .iter()
                        .filter(|n| !installed.values().any(|v| v == *n))
                        .map(|n| n.1)
                        .collect();
                    let mut nacked = acks_to(&out, AckKind::Nack);
                    want.sort_unstable();
                    nacked.sort_unstable();
                    proptest::prop_assert_eq!(nacked, want, "Srefresh of {:?}", named);
                }
            }
            proptest::prop_assert_eq!(e.state_stats().psbs, path_by.len());
            proptest::prop_assert_eq!(e.state_stats().rsbs, resv_by.len());
            // One received record per Path and per Resv state installed by an identified
            // message, none for state that went.
            proptest::prop_assert_eq!(e.rr.records().1, path_by.len() + resv_by.len());
        }
        for port in 1..=4 {
            let id = fresh(up_epoch);
            now += Duration::from_millis(10);
            feed(&mut e, now, &identified(&path_tear(session(port)), &mid(up_epoch, id)), PHOP, UP, 63);
        }
        proptest::prop_assert_eq!(e.state_stats().psbs, 0);
        proptest::prop_assert_eq!(e.rr.records(), (0, 0));
    }
}
