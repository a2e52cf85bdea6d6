//! Explicit routing by SII-Handle (RFC 5971 §7.1.4, B.1, B.3): a Data message with the E flag,
//! sent to a peer the NSLP names, bypassing routing state at both ends; a handle GIST does not
//! know, or a transfer it cannot give without an association, fails with a MessageStatus.

use super::common::*;
use pathwise_gist::nslp::{
    ApiError, DeliveryError, GistApi, MessageStatus, RecvMessage, SendMessage, SiiHandle,
};
use pathwise_gist::wire::{Mri, PathCoupledMri, SessionId};
use pathwise_gist::{GistEvent, MrsKey};
use pathwise_sim::testbeds;
use std::net::IpAddr;

/// An NSLPID served without a plug-in: its messages surface as events.
const NSLPID: u16 = 42;

/// N4's upstream peer for a ping session N1 → N6: N3's address as N4's GIST names it.
fn n3_handle(sim: &GistSim, sid: SessionId) -> IpAddr {
    let k = key(sim, "N1", "N6", sid);
    let (_, up) = mrs(sim, "N4", &k)
        .expect("N4 holds the ping's state")
        .upstream
        .unwrap();
    let a = up.expect("N4 knows its upstream peer");
    assert_eq!(owner(sim, Some(a)).as_deref(), Some("N3"));
    a
}

/// A message of another session (no routing state anywhere) for the flow N1 → N6, upstream.
fn upstream_message(sim: &GistSim, data: &[u8]) -> SendMessage {
    let mut f = PathCoupledMri::flow(lo(sim, "N1"), lo(sim, "N6"));
    f.upstream = true;
    SendMessage::new(
        NSLPID,
        SessionId([0x77; 16]),
        Mri::PathCoupled(f),
        data.to_vec(),
    )
}

fn send_from_n4(sim: &mut GistSim, m: SendMessage) -> Result<(), ApiError> {
    let n4 = id(sim, "N4");
    sim.with_engine(n4, |e, now| e.inner_mut().send_message(now, m).map(drop))
        .expect("N4 runs GIST")
}

fn received(sim: &GistSim, name: &str) -> Vec<RecvMessage> {
    let n = id(sim, name);
    sim.events_where(move |r| r.node == n)
        .filter_map(|r| match &r.event {
            GistEvent::Recv(m) if m.nslpid == NSLPID => Some(m.clone()),
            _ => None,
        })
        .collect()
}

fn statuses(sim: &GistSim, name: &str) -> Vec<MessageStatus> {
    let n = id(sim, name);
    sim.events_where(move |r| r.node == n)
        .filter_map(|r| match &r.event {
            GistEvent::Status(s) if s.nslpid == NSLPID => Some(s.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn an_explicitly_routed_message_reaches_the_peer_named_without_routing_state() {
    let mut sim = sim(testbeds::gist_thesis(), 7, &[], &[], |c, _| {
        c.nslpids = vec![NSLPID];
    });
    let ping_sid = ping(&mut sim, "N1", "N6");
    run_secs(&mut sim, 2);
    let n3 = n3_handle(&sim, ping_sid);

    // Routed by state, an upstream message of a session N4 holds no state for is refused.
    let by_state = upstream_message(&sim, b"by state");
    assert_eq!(
        send_from_n4(&mut sim, by_state),
        Err(ApiError::NoRoutingState)
    );
    // Routed explicitly to N3, it arrives there, flagged, naming N4.
    let mut m = upstream_message(&sim, b"explicit");
    m.sii_handle = Some(SiiHandle(n3));
    send_from_n4(&mut sim, m).expect("accepted");
    run_secs(&mut sim, 1);
    let got = received(&sim, "N3");
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].nslp_data, b"explicit");
    assert!(got[0].explicitly_routed);
    assert!(!got[0].transfer.reliable, "D-mode: no association here");
    assert_eq!(
        owner(&sim, got[0].sii_handle.map(|h| h.0)).as_deref(),
        Some("N4")
    );
    let k = MrsKey::new(
        &upstream_message(&sim, b"").mri,
        NSLPID,
        SessionId([0x77; 16]),
    );
    for n in ["N3", "N4"] {
        assert!(mrs(&sim, n, &k).is_none(), "{n}: no routing state made");
    }
    let c3 = sim
        .engine(id(&sim, "N3"))
        .unwrap()
        .inner()
        .counters()
        .clone();
    let c4 = sim
        .engine(id(&sim, "N4"))
        .unwrap()
        .inner()
        .counters()
        .clone();
    assert_eq!((c4.explicit_sent, c3.explicit_received), (1, 1));
    assert_eq!(
        c3.drops.get("data_no_state"),
        None,
        "not checked against state"
    );
    assert!(received(&sim, "N1").is_empty(), "not forwarded beyond N3");
    assert!(statuses(&sim, "N4").is_empty(), "no failure");
}

#[test]
fn an_unknown_handle_or_an_unavailable_transfer_fails_with_a_message_status() {
    let mut sim = sim(testbeds::gist_thesis(), 8, &[], &[], |c, _| {
        c.nslpids = vec![NSLPID];
    });
    let ping_sid = ping(&mut sim, "N1", "N6");
    run_secs(&mut sim, 2);
    let n3 = n3_handle(&sim, ping_sid);

    // A handle GIST never reported (B.1: "previously supplied by GIST").
    let mut m = upstream_message(&sim, b"nobody");
    m.sii_handle = Some(SiiHandle("192.0.2.99".parse().unwrap()));
    send_from_n4(&mut sim, m).expect("accepted; fails by MessageStatus");
    // Reliable transfer to a peer with no messaging association: never sent unreliably.
    let mut m = upstream_message(&sim, b"reliable");
    m.sii_handle = Some(SiiHandle(n3));
    m.transfer.reliable = true;
    send_from_n4(&mut sim, m).expect("accepted; fails by MessageStatus");
    run_secs(&mut sim, 1);
    let errors: Vec<_> = statuses(&sim, "N4").into_iter().map(|s| s.error).collect();
    assert_eq!(
        errors,
        vec![
            Some(DeliveryError::UnknownSiiHandle),
            Some(DeliveryError::Unsupported)
        ]
    );
    assert!(received(&sim, "N3").is_empty());
    let c4 = sim
        .engine(id(&sim, "N4"))
        .unwrap()
        .inner()
        .counters()
        .clone();
    assert_eq!((c4.explicit_sent, c4.explicit_failures), (0, 2));
}

#[test]
fn over_the_messaging_association_when_there_is_one() {
    let mut sim = sim(testbeds::gist_thesis(), 9, &[], &[], |c, p| {
        c.nslpids = vec![NSLPID];
        p.reliable = true;
    });
    let ping_sid = ping(&mut sim, "N1", "N6");
    run_secs(&mut sim, 2);
    let n3 = n3_handle(&sim, ping_sid);
    let mut m = upstream_message(&sim, b"over the MA");
    m.sii_handle = Some(SiiHandle(n3));
    m.transfer.reliable = true;
    m.report_dispatch = true;
    send_from_n4(&mut sim, m).expect("accepted");
    run_secs(&mut sim, 1);
    let got = received(&sim, "N3");
    assert_eq!(got.len(), 1, "{got:?} {:?}", statuses(&sim, "N4"));
    assert!(got[0].explicitly_routed && got[0].transfer.reliable);
    assert_eq!(
        owner(&sim, got[0].sii_handle.map(|h| h.0)).as_deref(),
        Some("N4")
    );
    let st = statuses(&sim, "N4");
    assert_eq!(st.len(), 1, "{st:?}");
    assert_eq!(st[0].error, None);
    assert!(st[0].transfer.is_some_and(|t| t.reliable));
}

/// RFC 5971 §7.1.4: GIST "allows the use of prior signalling paths for some period": a peer
/// GIST no longer holds state with stays usable for the longer of the state lifetime and the
/// Routing State Validity Time, then is forgotten.
#[test]
fn a_forgotten_peer_is_usable_for_a_while_then_unknown() {
    let mut sim = sim(testbeds::gist_thesis(), 10, &[], &[], |c, _| {
        c.nslpids = vec![NSLPID];
        c.refresh_period = pathwise_core::time::Duration::from_secs(5);
        c.state_lifetime = pathwise_core::time::Duration::from_secs(10);
        c.rs_validity = pathwise_core::time::Duration::from_secs(15);
    });
    let ping_sid = ping(&mut sim, "N1", "N6");
    run_secs(&mut sim, 2);
    let n3 = n3_handle(&sim, ping_sid);
    // The ping stops: N4's states lapse and it forgets its peers.
    let n4 = id(&sim, "N4");
    let mut waited = 0;
    while sim.engine(n4).unwrap().inner().state_stats().peers > 0 {
        run_secs(&mut sim, 1);
        waited += 1;
        assert!(waited < 120, "N4 keeps its peers");
    }
    let mut m = upstream_message(&sim, b"soon after");
    m.sii_handle = Some(SiiHandle(n3));
    send_from_n4(&mut sim, m).expect("accepted");
    run_secs(&mut sim, 1);
    assert_eq!(received(&sim, "N3").len(), 1, "still usable");
    // 15 s (the retention) after N4 last heard of N3, the handle is gone.
    run_secs(&mut sim, 16);
    let mut m = upstream_message(&sim, b"too late");
    m.sii_handle = Some(SiiHandle(n3));
    send_from_n4(&mut sim, m).expect("accepted; fails by MessageStatus");
    run_secs(&mut sim, 1);
    assert_eq!(received(&sim, "N3").len(), 1);
    let errors: Vec<_> = statuses(&sim, "N4").into_iter().map(|s| s.error).collect();
    assert_eq!(errors, vec![Some(DeliveryError::UnknownSiiHandle)]);
}
