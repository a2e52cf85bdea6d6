//! C-mode over TLS (RFC 5971 §5.7.3): secure transfer negotiates the `[TLS, TCP]` profile,
//! runs over its own messaging association per peer (beside a plain TCP one), and never falls
//! back to the clear when a peer offers no TLS. The simulator's "TLS" stream carries no
//! cryptography; it checks the engine's negotiation and bookkeeping.

use super::common::*;
use pathwise_core::time::Duration;
use pathwise_gist::nslp::TransferAttributes;
use pathwise_gist::nslp::ping::PingNslp;
use pathwise_gist::wire::{MsgType, SessionId};
use pathwise_gist::{MaState, MaTransport};
use pathwise_sim::{Sim, SimConfig, testbeds};

const TLS_PORT: u16 = 30001;

/// The thesis testbed with TLS on every node but `no_tls`.
fn tls_sim(seed: u64, no_tls: &'static [&'static str]) -> GistSim {
    Sim::new(testbeds::gist_thesis(), SimConfig::seeded(seed), move |s| {
        let tls = !no_tls.contains(&s.name.as_str());
        Some(node(s, true, &|c, _| {
            c.tls_port = tls.then_some(TLS_PORT);
            c.refresh_period = Duration::from_secs(30);
            c.rs_validity = Duration::from_secs(90);
        }))
    })
}

/// A ping from `from` to `to` in a new session with these transfer attributes.
fn ping_with(sim: &mut GistSim, from: &str, to: &str, t: TransferAttributes) -> SessionId {
    let (src, dst) = (lo(sim, from), lo(sim, to));
    let n = id(sim, from);
    sim.with_engine(n, |e, now| {
        e.with_nslp::<PingNslp, _>(now, |p, g| {
            let sid = g.new_session_id();
            p.ping_session_transfer(g, now, sid, src, dst, t)
                .map(|_| sid)
        })
    })
    .flatten()
    .expect("ping registered")
    .expect("ping sent")
}

fn secure() -> TransferAttributes {
    TransferAttributes {
        secure: true,
        ..TransferAttributes::default()
    }
}

fn mas_of(sim: &GistSim, name: &str) -> Vec<(String, MaTransport, MaState, u32)> {
    let mut v: Vec<_> = sim
        .engine(id(sim, name))
        .unwrap()
        .inner()
        .messaging_associations_by_transport()
        .map(|(p, t, s, u)| (owner(sim, Some(p)).unwrap_or_default(), t, s, u))
        .collect();
    v.sort_by_key(|m| (m.0.clone(), m.1));
    v
}

#[test]
fn secure_pings_share_one_tls_association_per_peer() {
    let mut sim = tls_sim(31, &[]);
    let sids: Vec<_> = (0..4)
        .map(|_| ping_with(&mut sim, "N1", "N6", secure()))
        .collect();
    run_secs(&mut sim, 2);
    let got = replies(&sim, "N1");
    assert_eq!(got.len(), 4, "every secure ping came back: {got:?}");
    assert_eq!(
        got[0].2,
        ["N3", "N4", "N5", "N6"].map(|n| lo(&sim, n)).to_vec(),
        "the aware nodes are recorded"
    );
    assert_eq!(
        mas_of(&sim, "N1"),
        [("N3".into(), MaTransport::Tls, MaState::Connected, 4)],
        "one TLS association to N3 serves all four sessions"
    );
    let n4 = mas_of(&sim, "N4");
    assert_eq!(n4.len(), 2, "N4: TLS to N3 (accepted) and to N5: {n4:?}");
    assert!(n4.iter().all(|m| m.1 == MaTransport::Tls));

    // A reliable (not secure) session to the same peers opens a TCP association beside it.
    ping_with(
        &mut sim,
        "N1",
        "N6",
        TransferAttributes {
            reliable: true,
            ..TransferAttributes::default()
        },
    );
    run_secs(&mut sim, 2);
    assert_eq!(replies(&sim, "N1").len(), 5);
    let n1 = mas_of(&sim, "N1");
    assert_eq!(
        n1.iter().map(|m| (m.1, m.3)).collect::<Vec<_>>(),
        [(MaTransport::Tcp, 1), (MaTransport::Tls, 4)],
        "{n1:?}"
    );

    // A secure message on D-mode state re-runs the handshake for TLS.
    let plain = ping_with(&mut sim, "N1", "N6", TransferAttributes::default());
    run_secs(&mut sim, 2);
    assert_eq!(replies(&sim, "N1").len(), 6);
    let (src, dst) = (lo(&sim, "N1"), lo(&sim, "N6"));
    let n = id(&sim, "N1");
    sim.with_engine(n, |e, now| {
        e.with_nslp::<PingNslp, _>(now, |p, g| {
            p.ping_session_transfer(g, now, plain, src, dst, secure())
        })
    });
    run_secs(&mut sim, 2);
    assert_eq!(replies(&sim, "N1").len(), 7);
    let k = key(&sim, "N1", "N6", plain);
    let v = mrs(&sim, "N1", &k).unwrap();
    assert_eq!(owner(&sim, v.downstream_ma).as_deref(), Some("N3"));
    assert_eq!(mas_of(&sim, "N1")[1].3, 5, "the TLS MA now has five users");
    for sid in sids {
        let k = key(&sim, "N1", "N6", sid);
        assert!(mrs(&sim, "N4", &k).unwrap().downstream_ma.is_some());
    }
}

#[test]
fn a_peer_without_tls_gets_no_secure_message_in_the_clear() {
    let mut sim = tls_sim(32, &["N4"]);
    ping_with(&mut sim, "N1", "N6", secure());
    run_secs(&mut sim, 3);
    assert!(replies(&sim, "N1").is_empty(), "the ping cannot cross N4");
    let n3 = sim.engine(id(&sim, "N3")).unwrap().inner().counters();
    assert_eq!(n3.tls_refused_by_peer, 1, "N3 learnt N4 runs no TLS");
    let n4 = sim.engine(id(&sim, "N4")).unwrap().inner().counters();
    assert_eq!(n4.received(MsgType::Data), 0, "no Data reached N4");
    assert_eq!(n4.received(MsgType::Confirm), 1, "D-mode state only");
    assert_eq!(mas_of(&sim, "N4"), []);
    // N1 to N3 did run TLS.
    assert_eq!(mas_of(&sim, "N1")[0].1, MaTransport::Tls);
}

#[test]
fn secure_transfer_without_tls_here_is_unsupported() {
    let mut sim = tls_sim(33, &["N1"]);
    let (src, dst) = (lo(&sim, "N1"), lo(&sim, "N6"));
    let n = id(&sim, "N1");
    let r = sim
        .with_engine(n, |e, now| {
            e.with_nslp::<PingNslp, _>(now, |p, g| {
                let sid = g.new_session_id();
                p.ping_session_transfer(g, now, sid, src, dst, secure())
            })
        })
        .flatten()
        .unwrap();
    assert_eq!(r, Err(pathwise_gist::nslp::ApiError::Unsupported));
}
