//! `pathwise demo` sets up every flow it shows, merges the conference, and is reproducible.

#[test]
fn demo_reserves_every_flow_and_replays() {
    let r = pathwise::demo::run(1).unwrap();
    assert_eq!(r.flows.len(), 5);
    for f in &r.flows {
        assert!(
            f.reserved_kbps.is_some(),
            "flow {} has no reservation",
            f.name
        );
        assert!(
            f.setup_latency_ms.is_some_and(|ms| ms > 0.0 && ms < 100.0),
            "{f:?}"
        );
        assert!(f.confirm_latency_ms.is_some(), "{f:?}");
    }
    // The conference merges at N4: the larger request (1000 kbit/s) is what reaches both senders.
    assert!(
        r.flows
            .iter()
            .filter(|f| f.name == "conference")
            .all(|f| f.reserved_kbps == Some(1000.0))
    );
    assert!(r.nodes.iter().all(|n| n.drops == 0));
    let n3 = r.nodes.iter().find(|n| n.node == "N3").unwrap();
    assert_eq!(
        n3.installed.len(),
        4,
        "one reservation per session on N3's link to N4"
    );
    assert_eq!(
        serde_json::to_string(&r).unwrap(),
        serde_json::to_string(&pathwise::demo::run(1).unwrap()).unwrap()
    );
    assert!(pathwise::demo::render(&r).contains("conference"));
    // The GIST ping records every NSIS-aware node from N1 to N6 on the thesis testbed.
    assert_eq!(r.gist_ping.path, ["N3", "N4", "N5", "N6"]);
    assert!(r.gist_ping.rtt_ms > 0.0);
    assert!(
        r.gist_ping
            .rtt_established_ms
            .is_some_and(|ms| ms < r.gist_ping.rtt_ms)
    );
}
