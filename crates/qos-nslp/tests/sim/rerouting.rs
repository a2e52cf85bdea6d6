//! Route changes that the fault campaign (`pathwise sim campaign qos`, docs/CAMPAIGNS.md
//! finding 4) found leaving reservations off the data path.

use super::common::*;
use pathwise_qos_nslp::QosEvent;
use pathwise_sim::{Topology, testbeds};

/// 4 Mbit/s in bytes per second.
const RATE: f64 = 500_000.0;

/// The thesis testbed plus an N3 - N5 bypass on which N3 may reserve only 1 Mbit/s.
fn with_narrow_bypass() -> Topology {
    let text = format!(
        "{}\n[[link]]\na = \"N3\"\nb = \"N5\"\ncost = 3\na_reservable = \"1Mbit\"\n",
        testbeds::GIST_THESIS
    );
    Topology::from_toml(&text).expect("topology")
}

/// Move the flow off N3 - N4 and let the soft state of the old branch run out.
fn reroute_at_n3(sim: &mut QosSim) -> u32 {
    let to_n4 = ifindex_to(sim, "N3", "N4");
    let l = sim.link_between(id(sim, "N3"), id(sim, "N4")).unwrap();
    sim.link_down(l);
    run_secs(sim, 120);
    to_n4
}

fn failed(sim: &mut QosSim, name: &str, sid: pathwise_gist::wire::SessionId) -> bool {
    events(sim, name)
        .iter()
        .any(|e| matches!(e, QosEvent::Failed { session_id, .. } if *session_id == sid))
}

/// RFC 5974 §3.2.12, §5.4.1 (RFC 5975 §4.2.3): the QNI's flow moves to an interface that
/// refuses the reservation. Before the fix the QNI kept it on the interface the flow had
/// left, for as long as its application held the session.
#[test]
fn a_qni_whose_new_interface_refuses_gives_the_reservation_up() {
    let mut sim = sim(with_narrow_bypass(), 5, short_gist, short);
    let sid = reserve(&mut sim, "N3", "N6", 4.0);
    run_secs(&mut sim, 2);
    let to_n4 = ifindex_to(&sim, "N3", "N4");
    assert_eq!(tc_of(&mut sim, "N3", to_n4), (1, RATE));
    assert_eq!(reroute_at_n3(&mut sim), to_n4);
    assert_eq!(
        tc_of(&mut sim, "N3", to_n4),
        (0, 0.0),
        "nothing left on the interface the flow no longer takes"
    );
    assert!(state(&mut sim, "N3", sid).is_none(), "the QNI gave it up");
    assert!(failed(&mut sim, "N3", sid), "and told its application");
    assert!(counters(&mut sim, "N3").readmission_failures >= 1);
    assert_clean(&mut sim, &["N1", "N2", "N3", "N4", "N5", "N6", "N7"]);
}

/// The same at a QNE: its refusal on the new interface ends the reservation there and, by an
/// error RESPONSE, at the QNI; nothing stays on the old interface.
#[test]
fn a_qne_whose_new_interface_refuses_ends_the_reservation_up_to_the_qni() {
    let mut sim = sim(with_narrow_bypass(), 5, short_gist, short);
    let sid = reserve(&mut sim, "N1", "N6", 4.0);
    run_secs(&mut sim, 2);
    let to_n4 = ifindex_to(&sim, "N3", "N4");
    assert_eq!(tc_of(&mut sim, "N3", to_n4), (1, RATE));
    assert_eq!(reroute_at_n3(&mut sim), to_n4);
    assert_eq!(tc_of(&mut sim, "N3", to_n4), (0, 0.0));
    assert!(state(&mut sim, "N3", sid).is_none());
    assert!(state(&mut sim, "N1", sid).is_none(), "the QNI learnt of it");
    assert!(failed(&mut sim, "N1", sid));
    assert_clean(&mut sim, &["N1", "N2", "N3", "N4", "N5", "N6", "N7"]);
}
