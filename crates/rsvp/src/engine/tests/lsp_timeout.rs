//! LSP setup timeout and retry with back-off at the head end, on virtual time.

use super::super::te::{LspSpec, LspStatus};
use super::super::{Event, LspRetry};
use super::kom::{deliver, drain, ip, msg_type, node_with};
use super::*;
use crate::wire::error_code;

fn cfg() -> Config {
    Config {
        lsp_setup_timeout: Some(Duration::from_secs(10)),
        lsp_retry: LspRetry {
            first: Duration::from_secs(2),
            max: Duration::from_secs(8),
            attempts: None,
        },
        ..Config::default()
    }
}

fn head() -> RsvpEngine {
    node_with(
        &[(1, "10.0.0.1")],
        &[("0.0.0.0/0", Some("10.0.0.2"), 1)],
        cfg(),
    )
}

fn spec() -> LspSpec {
    LspSpec {
        name: "t".into(),
        to: ip("10.0.0.2"),
        from: None,
        ero: None,
        bandwidth_bps: 1_000_000,
        setup_priority: 7,
        hold_priority: 0,
        record_route: false,
        label_recording: false,
        gmpls: None,
    }
}

fn status(e: &RsvpEngine) -> LspStatus {
    e.lsps().into_iter().find(|v| v.name == "t").unwrap().status
}

/// Run the engine's timers up to `until`, collecting what it sends with the time it was sent.
fn run(e: &mut RsvpEngine, until: Instant) -> Vec<(Instant, MsgType, Transmit)> {
    let mut out = Vec::new();
    while let Some(t) = e.poll_timeout().filter(|t| *t <= until) {
        e.handle_timeout(t);
        out.extend(drain(e).into_iter().map(|x| (t, msg_type(&x), x)));
    }
    out
}

fn secs(s: u64) -> Instant {
    Instant::ZERO + Duration::from_secs(s)
}

#[test]
fn an_lsp_without_a_label_times_out_and_is_retried_with_bounded_back_off() {
    let mut h = head();
    h.open_lsp(Instant::ZERO, spec()).unwrap();
    assert_eq!(drain(&mut h).len(), 1, "the Path");
    assert_eq!(status(&h), LspStatus::Signalling);
    // Nothing comes back (the Path vanished downstream). Up to the deadline: signalling.
    run(&mut h, secs(9));
    assert_eq!(status(&h), LspStatus::Signalling);
    let sent = run(&mut h, secs(10));
    // At 10 s the head end gives up: PathTear downstream, the view shows the error.
    assert!(
        sent.iter().any(|(_, t, _)| *t == MsgType::PathTear),
        "{sent:?}"
    );
    let LspStatus::Failed(err) = status(&h) else {
        panic!("{:?}", status(&h))
    };
    assert_eq!(
        (err.code, err.value),
        (error_code::API_ERROR, error_code::api::LSP_SETUP_TIMED_OUT)
    );
    assert_eq!(err.node, ip("10.0.0.1"));
    assert!(std::iter::from_fn(|| h.poll_event()).any(|ev| matches!(
        ev,
        Event::PathError { error, .. } if error == err
    )));
    assert_eq!(h.counters().lsp_setup_timeouts, 1);
    // Retries: 2 s after the first timeout, then 4, 8, 8 (bounded) after each further one.
    let sent = run(&mut h, secs(79));
    let paths: Vec<Instant> = sent
        .iter()
        .filter(|(_, t, _)| *t == MsgType::Path)
        .map(|(at, _, _)| *at)
        .collect();
    let first_paths: Vec<Instant> = paths
        .iter()
        .copied()
        .filter(|at| [12, 26, 44, 62].map(secs).contains(at))
        .collect();
    assert_eq!(first_paths, [12, 26, 44, 62].map(secs), "{paths:?}");
    let tears: Vec<Instant> = sent
        .iter()
        .filter(|(_, t, _)| *t == MsgType::PathTear)
        .map(|(at, _, _)| *at)
        .collect();
    assert_eq!(tears, [22, 36, 54, 72].map(secs));
    // Each retry is a new LSP of the same tunnel (a new LSP ID).
    let ids: std::collections::BTreeSet<_> = sent
        .iter()
        .filter(|(_, t, _)| *t == MsgType::Path)
        .map(|(_, _, x)| match parsed(x) {
            Message::Path(p) => p.sender.template,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(ids.len(), 4);
    assert_eq!(h.counters().lsp_setup_timeouts, 5);
}

#[test]
fn the_retry_limit_leaves_the_lsp_failed() {
    let mut c = cfg();
    c.lsp_retry.attempts = Some(2);
    let mut h = node_with(&[(1, "10.0.0.1")], &[("0.0.0.0/0", Some("10.0.0.2"), 1)], c);
    h.open_lsp(Instant::ZERO, spec()).unwrap();
    run(&mut h, secs(600));
    assert_eq!(h.counters().lsp_setup_timeouts, 2);
    assert!(matches!(status(&h), LspStatus::Failed(_)));
    assert_eq!(h.poll_timeout(), None, "nothing left to do");
    // Opening it again starts over.
    h.open_lsp(secs(600), spec()).unwrap();
    assert_eq!(status(&h), LspStatus::Signalling);
}

#[test]
fn an_lsp_that_comes_up_does_not_time_out() {
    let mut h = head();
    let mut egress = node_with(&[(1, "10.0.0.2")], &[], cfg());
    h.open_lsp(Instant::ZERO, spec()).unwrap();
    let path = drain(&mut h);
    let resv = deliver(&mut egress, Instant::ZERO, &path[0], 1);
    assert_eq!(msg_type(&resv[0]), MsgType::Resv);
    deliver(&mut h, Instant::ZERO, &resv[0], 1);
    assert_eq!(status(&h), LspStatus::Up);
    // Keep both refreshed for a while: no timeout, ever.
    let mut now = Instant::ZERO;
    while now < secs(120) {
        now = [h.poll_timeout(), egress.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
            .unwrap();
        h.handle_timeout(now);
        egress.handle_timeout(now);
        for t in drain(&mut h) {
            deliver(&mut egress, now, &t, 1);
        }
        for t in drain(&mut egress) {
            deliver(&mut h, now, &t, 1);
        }
    }
    assert_eq!(status(&h), LspStatus::Up);
    assert_eq!(h.counters().lsp_setup_timeouts, 0);
}
