//! The relay NSLP (`nslp::relay`, RFC 5971 §3.5, §4.3.2): on the thesis testbed, N1 and N6 run
//! an NSLP for NSLPID 42 (N6 answers every message), N4 relays 42, N3 and N5 run GIST without
//! it. Messages reach N6 through N4 and the answers come back the same way; without the relay,
//! N4 is skipped like N3 and N5.

use super::common::*;
use core::any::Any;
use pathwise_core::time::Instant;
use pathwise_gist::nslp::relay::RelayNslp;
use pathwise_gist::nslp::{
    Direction, GistApi, MessageStatus, Nslp, NslpEvent, RecvMessage, RoutingDecision, SendMessage,
};
use pathwise_gist::sim_stream::StreamAdapter;
use pathwise_gist::wire::{Mri, PathCoupledMri, SessionId};
use pathwise_gist::{GistEngine, GistEvent, MrsKey, QueryingState, RespondingState};
use pathwise_sim::{Sim, SimConfig, testbeds};

const NSLPID: u16 = 42;

/// An end host's NSLP for 42: reports what it receives (the payload, prefixed `recv:`) and each
/// MessageStatus (`fail:` and the error, or `sent:` and the transport a dispatch report names); at the flow's destination answers each message upstream with
/// `ECHO` and the payload — in the Response when it came in a Query (§4.3.2 option 1).
struct EndNslp;

fn echo(data: &[u8]) -> Vec<u8> {
    [b"ECHO".as_slice(), data].concat()
}

impl Nslp for EndNslp {
    fn nslpid(&self) -> u16 {
        NSLPID
    }

    fn recv_message(
        &mut self,
        now: Instant,
        g: &mut dyn GistApi,
        m: RecvMessage,
    ) -> RoutingDecision {
        if m.nslp_data.is_empty() {
            return RoutingDecision::ACCEPT;
        }
        g.report(NslpEvent::Other {
            nslpid: NSLPID,
            data: [b"recv:".as_slice(), &m.nslp_data].concat(),
        });
        let at_destination = Direction::of(&m.mri) == Direction::Downstream
            && m.mri.destination().is_some_and(|d| g.is_local(d));
        if !at_destination {
            return RoutingDecision::ACCEPT;
        }
        if m.routing_state_check {
            return RoutingDecision::Accept {
                response_data: Some(echo(&m.nslp_data)),
            };
        }
        let mut s = SendMessage::new(
            NSLPID,
            m.session_id,
            m.mri.with_direction(true),
            echo(&m.nslp_data),
        );
        s.transfer.reliable = m.transfer.reliable;
        g.send_message(now, s).expect("echo sent");
        RoutingDecision::ACCEPT
    }

    fn message_status(&mut self, _now: Instant, g: &mut dyn GistApi, s: MessageStatus) {
        let text = match (s.error, s.transfer) {
            (Some(e), _) => format!("fail:{e:?}"),
            (None, Some(t)) if t.reliable => "sent:tcp".into(),
            (None, _) => "sent:udp".into(),
        };
        g.report(NslpEvent::Other {
            nslpid: NSLPID,
            data: text.into_bytes(),
        });
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The testbed: GIST everywhere, [`EndNslp`] on N1 and N6, the relay on the nodes in `relay`.
fn relay_sim(seed: u64, relay: &'static [&'static str]) -> GistSim {
    Sim::new(testbeds::gist_thesis(), SimConfig::seeded(seed), move |s| {
        let mut e = GistEngine::new(config(s), Instant::ZERO);
        if ["N1", "N6"].contains(&s.name.as_str()) {
            e.register(Box::new(EndNslp));
        }
        if relay.contains(&s.name.as_str()) {
            e.register(Box::new(RelayNslp::new(NSLPID)));
        }
        Some(StreamAdapter::new(e))
    })
}

fn send(sim: &mut GistSim, sid: Option<SessionId>, data: &[u8], reliable: bool) -> SessionId {
    let (src, dst) = (lo(sim, "N1"), lo(sim, "N6"));
    let n1 = id(sim, "N1");
    sim.with_engine(n1, |e, now| {
        let g = e.inner_mut();
        let sid = sid.unwrap_or_else(|| g.new_session_id());
        let mut m = SendMessage::new(
            NSLPID,
            sid,
            Mri::PathCoupled(PathCoupledMri::flow(src, dst)),
            data.to_vec(),
        );
        m.transfer.reliable = reliable;
        m.report_dispatch = true;
        g.send_message(now, m).expect("sent");
        sid
    })
    .unwrap()
}

/// What a node's NSLP for 42 reported, as text.
fn reports(sim: &GistSim, name: &str) -> Vec<String> {
    let n = id(sim, name);
    sim.events_where(move |r| r.node == n)
        .filter_map(|r| match &r.event {
            GistEvent::Nslp(NslpEvent::Other {
                nslpid: NSLPID,
                data,
            }) => Some(String::from_utf8_lossy(data).into_owned()),
            _ => None,
        })
        .collect()
}

fn relay_stats(sim: &mut GistSim, name: &str) -> pathwise_gist::nslp::relay::RelayStats {
    let n = id(sim, name);
    sim.with_engine(n, |e, now| {
        e.inner_mut()
            .with_nslp::<RelayNslp, _>(now, |r, _| r.stats())
    })
    .flatten()
    .expect("a relay")
}

fn key(sim: &GistSim, sid: SessionId) -> MrsKey {
    MrsKey {
        mri: Mri::PathCoupled(PathCoupledMri::flow(lo(sim, "N1"), lo(sim, "N6"))),
        nslpid: NSLPID,
        session_id: sid,
    }
}

#[test]
fn relay_passes_messages_and_answers_both_ways_and_is_on_the_path() {
    let mut sim = relay_sim(11, &["N4"]);
    let sid = send(&mut sim, None, b"hello!!!", false);
    run_secs(&mut sim, 1);
    assert_eq!(reports(&sim, "N6"), ["recv:hello!!!"], "the far end got it");
    assert_eq!(
        reports(&sim, "N1"),
        ["sent:udp", "recv:ECHOhello!!!"],
        "dispatched (reported, B.3), and its answer came back"
    );

    // The relay peered with N1 upstream and N6 downstream; N3 and N5 (GIST, no NSLP 42) hold
    // nothing and are nobody's peer.
    let k = key(&sim, sid);
    let v = mrs(&sim, "N4", &k).expect("N4 holds routing state for NSLPID 42");
    assert_eq!(v.downstream.map(|d| d.0), Some(QueryingState::Established));
    assert_eq!(v.upstream.map(|u| u.0), Some(RespondingState::Established));
    assert_eq!(
        peers(&sim, "N4", &k),
        (Some("N6".into()), Some("N1".into()))
    );
    assert_eq!(peers(&sim, "N1", &k).0.as_deref(), Some("N4"));
    assert_eq!(peers(&sim, "N6", &k).1.as_deref(), Some("N4"));
    for n in ["N3", "N5"] {
        assert!(mrs(&sim, n, &k).is_none(), "{n} is transparent");
    }

    // Later messages of the session are Data on the state set up; they go the same way.
    send(&mut sim, Some(sid), b"again!!!", false);
    run_secs(&mut sim, 1);
    assert_eq!(reports(&sim, "N6"), ["recv:hello!!!", "recv:again!!!"]);
    assert_eq!(
        reports(&sim, "N1"),
        [
            "sent:udp",
            "recv:ECHOhello!!!",
            "sent:udp",
            "recv:ECHOagain!!!"
        ]
    );
    let st = relay_stats(&mut sim, "N4");
    assert_eq!(st.peered, 1, "{st:?}");
    assert_eq!(
        (st.forwarded_downstream, st.forwarded_upstream),
        (2, 2),
        "{st:?}"
    );
    assert!(st.drops().iter().all(|(_, n)| *n == 0), "{st:?}");
}

#[test]
fn relay_keeps_reliable_transfer_over_messaging_associations() {
    let mut sim = relay_sim(12, &["N4"]);
    let sid = send(&mut sim, None, b"over tcp", true);
    run_secs(&mut sim, 2);
    assert_eq!(reports(&sim, "N6"), ["recv:over tcp"]);
    assert_eq!(reports(&sim, "N1"), ["sent:tcp", "recv:ECHOover tcp"]);
    let k = key(&sim, sid);
    let v = mrs(&sim, "N4", &k).expect("state at the relay");
    assert!(
        v.downstream_ma.is_some() && v.upstream_ma.is_some(),
        "{v:?}"
    );
}

#[test]
fn without_the_relay_the_middle_node_is_skipped() {
    let mut sim = relay_sim(13, &[]);
    let sid = send(&mut sim, None, b"hello!!!", false);
    run_secs(&mut sim, 1);
    assert_eq!(reports(&sim, "N6"), ["recv:hello!!!"]);
    assert_eq!(reports(&sim, "N1"), ["sent:udp", "recv:ECHOhello!!!"]);
    let k = key(&sim, sid);
    assert_eq!(
        peers(&sim, "N1", &k).0.as_deref(),
        Some("N6"),
        "N1 peers with N6 directly"
    );
    for n in ["N3", "N4", "N5"] {
        assert!(mrs(&sim, n, &k).is_none(), "{n} is transparent");
    }
}

#[test]
fn relays_in_a_row_and_drops_at_the_end_of_the_flow_are_counted() {
    // Every router relays: the message goes hop-by-hop!! N1 > N3 > N4 > N5 > N6.
    let mut sim = relay_sim(14, &["N3", "N4", "N5"]);
    let sid = send(&mut sim, None, b"hop-by-hop!!", false);
    run_secs(&mut sim, 1);
    assert_eq!(reports(&sim, "N1"), ["sent:udp", "recv:ECHOhop-by-hop!!"]);
    let k = key(&sim, sid);
    for (n, down, up) in [("N3", "N4", "N1"), ("N4", "N5", "N3"), ("N5", "N6", "N4")] {
        assert_eq!(
            peers(&sim, n, &k),
            (Some(down.into()), Some(up.into())),
            "{n}"
        );
        let st = relay_stats(&mut sim, n);
        assert_eq!(
            (st.forwarded_downstream, st.forwarded_upstream),
            (1, 1),
            "{n} {st:?}"
        );
    }

    // A relay at the flow's destination has no next hop: dropped and counted.
    let mut sim = relay_sim(15, &["N4"]);
    let (src, dst) = (lo(&sim, "N1"), lo(&sim, "N4"));
    let n1 = id(&sim, "N1");
    sim.with_engine(n1, |e, now| {
        let g = e.inner_mut();
        let sid = g.new_session_id();
        let m = SendMessage::new(
            NSLPID,
            sid,
            Mri::PathCoupled(PathCoupledMri::flow(src, dst)),
            b"to the relay".to_vec(),
        );
        g.send_message(now, m).expect("sent");
    });
    run_secs(&mut sim, 1);
    let st = relay_stats(&mut sim, "N4");
    assert_eq!((st.peered, st.dropped_at_flow_end), (1, 1), "{st:?}");
    assert_eq!(st.forwarded_downstream, 0, "{st:?}");

    // A message whose GIST hop count runs out at the relay is not passed on (§4.3.3).
    let mut sim = relay_sim(16, &["N4"]);
    let (src, dst) = (lo(&sim, "N1"), lo(&sim, "N6"));
    sim.with_engine(n1, |e, now| {
        let g = e.inner_mut();
        let sid = g.new_session_id();
        let mut m = SendMessage::new(
            NSLPID,
            sid,
            Mri::PathCoupled(PathCoupledMri::flow(src, dst)),
            b"short-lived!".to_vec(),
        );
        m.gist_hops = Some(1);
        g.send_message(now, m).expect("sent");
    });
    run_secs(&mut sim, 1);
    let st = relay_stats(&mut sim, "N4");
    assert_eq!((st.peered, st.dropped_hop_limit), (1, 1), "{st:?}");
    assert!(reports(&sim, "N6").is_empty());
}
