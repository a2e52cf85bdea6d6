//! A receiver's request is kept until the application releases it (RFC 2205 §3.11.1): made
//! before the Path, and across path state going and coming back.

use super::kom::{drain, ip, msg_type, node, receive};
use super::*;

const RX: &str = "10.0.9.2";
const UPSTREAM: &str = "10.0.9.1";

fn receiver() -> RsvpEngine {
    node(&[(1, RX)], &[("0.0.0.0/0", Some(UPSTREAM), 1)])
}

fn rx_session() -> Session {
    Session::ip(ip(RX), 17, 5000)
}

fn path_to_rx() -> Vec<u8> {
    let Message::Path(mut p) = path(rx_session(), sender(1)) else {
        panic!()
    };
    p.hop = RsvpHop::new(ip(UPSTREAM), 4);
    bytes(&Message::Path(p), 63)
}

fn path_tear_to_rx() -> Vec<u8> {
    bytes(
        &Message::PathTear(PathTear {
            integrity: None,
            session: rx_session(),
            hop: RsvpHop::new(ip(UPSTREAM), 4),
            sender_template: Some(sender(1)),
            sender_tspec: None,
            forward: Vec::new(),
        }),
        63,
    )
}

fn feed_rx(e: &mut RsvpEngine, at: Instant, m: &[u8]) -> Vec<Transmit> {
    receive(e, at, m, ip("30.0.0.1"), ip(RX), 1)
}

fn resvs_upstream(out: &[Transmit]) -> Vec<Resv> {
    out.iter()
        .filter(|t| t.dst == ip(UPSTREAM) && msg_type(t) == MsgType::Resv)
        .map(|t| match parsed(t) {
            Message::Resv(r) => r,
            _ => unreachable!(),
        })
        .collect()
}

#[test]
fn a_reservation_requested_before_the_path_is_sent_when_the_path_arrives() {
    let mut e = receiver();
    e.reserve(
        Instant::ZERO,
        rx_session(),
        StyleKind::Ff,
        ff(500.0, sender(1)),
        false,
    )
    .expect("kept until path state appears");
    assert!(drain(&mut e).is_empty(), "nobody to send it to yet");
    assert_eq!(e.receiver_requests(), 1);
    let at = Instant::ZERO + Duration::from_secs(3);
    let out = feed_rx(&mut e, at, &path_to_rx());
    let resv = resvs_upstream(&out);
    assert_eq!(resv.len(), 1, "sent at once: {out:?}");
    assert_eq!(resv[0].flows, ff(500.0, sender(1)));
    assert_eq!(e.state_stats().rsbs, 1);
}

#[test]
fn after_a_path_tear_the_reservation_comes_back_with_the_path() {
    let mut e = receiver();
    feed_rx(&mut e, Instant::ZERO, &path_to_rx());
    e.reserve(
        Instant::ZERO,
        rx_session(),
        StyleKind::Ff,
        ff(500.0, sender(1)),
        false,
    )
    .unwrap();
    assert_eq!(resvs_upstream(&drain(&mut e)).len(), 1);
    // A PathTear (real or spoofed with the previous hop's address) removes path state and,
    // with it, the reservation (RFC 2205 §3.1.5).
    let t1 = Instant::ZERO + Duration::from_secs(1);
    feed_rx(&mut e, t1, &path_tear_to_rx());
    assert_eq!(e.state_stats().sessions, 0);
    assert_eq!(e.state_stats().rsbs, 0);
    // The Path is back within 5 s: so is the reservation, at once, not a refresh period later.
    let t2 = Instant::ZERO + Duration::from_secs(5);
    let out = feed_rx(&mut e, t2, &path_to_rx());
    let resv = resvs_upstream(&out);
    assert_eq!(resv.len(), 1, "{out:?}");
    assert_eq!(resv[0].flows, ff(500.0, sender(1)));
    assert_eq!(e.state_stats().rsbs, 1);
    // And it is refreshed from then on.
    e.handle_timeout(t2 + Duration::from_secs(46));
    assert!(!resvs_upstream(&drain(&mut e)).is_empty());
}

#[test]
fn a_released_request_is_forgotten() {
    let mut e = receiver();
    e.reserve(
        Instant::ZERO,
        rx_session(),
        StyleKind::Ff,
        ff(500.0, sender(1)),
        false,
    )
    .unwrap();
    e.release(Instant::ZERO, rx_session()).unwrap();
    assert_eq!(e.receiver_requests(), 0);
    let out = feed_rx(&mut e, Instant::ZERO, &path_to_rx());
    assert!(resvs_upstream(&out).is_empty());
    assert_eq!(
        e.release(Instant::ZERO, rx_session()),
        Err(super::super::ApiError::Unknown)
    );
    // A request naming a sender that has not sent a Path yet waits for it, without errors.
    e.reserve(
        Instant::ZERO,
        rx_session(),
        StyleKind::Ff,
        ff(500.0, sender(2)),
        false,
    )
    .unwrap();
    let errors = std::iter::from_fn(|| e.poll_event())
        .filter(|ev| matches!(ev, super::super::Event::ResvError { .. }))
        .count();
    assert_eq!(
        errors, 1,
        "the call itself hears that sender 2 is unknown (code 4)"
    );
    let Message::Path(mut p2) = path(rx_session(), sender(2)) else {
        panic!()
    };
    p2.hop = RsvpHop::new(ip(UPSTREAM), 4);
    let out = feed_rx(&mut e, Instant::ZERO, &bytes(&Message::Path(p2), 63));
    assert_eq!(
        resvs_upstream(&out).len(),
        1,
        "sender 2's Path brings the reservation"
    );
}
