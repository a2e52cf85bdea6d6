//! `pathwise demo` sets up every flow it shows, merges the conference, and is reproducible.

#[test]
fn demo_reserves_every_flow_and_replays() {
    let r = pathwise::demo::run(1).unwrap();
    // The simulations replay exactly (the oracle's build time is wall-clock, so it is left out).
    let again = pathwise::demo::run(1).unwrap();
    let sim = |d: &pathwise::demo::DemoReport| {
        serde_json::to_string(&(&d.flows, &d.nodes, &d.gist_ping)).unwrap()
    };
    assert_eq!(sim(&r), sim(&again));
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
