use super::*;
use crate::TopologySnapshot;
use crate::model::{OracleConfig, RouterConfig, State};
use proptest::prelude::*;
use std::collections::BTreeMap;

fn exit(i: u8) -> IpAddr {
    IpAddr::from([10, 255, 0, i])
}

fn peer(i: u8) -> PeerKey {
    PeerKey::global(IpAddr::from([192, 0, 2, i]))
}

fn prefix(i: u8) -> IpNet {
    match i % 4 {
        0 => format!("203.0.{i}.0/24"),
        1 => format!("203.0.0.0/{}", 8 + i % 17),
        2 => format!("2001:db8:{i}::/48"),
        _ => format!("2001:db8::/{}", 16 + i % 17),
    }
    .parse::<IpNet>()
    .unwrap()
    .trunc()
}

fn route(d: u16, o: u32) -> Route {
    Route {
        as_distance: d,
        origin_as: o,
    }
}

fn database() -> TopologySnapshot {
    let cfg = OracleConfig {
        routers: (1..=3)
            .map(|i| RouterConfig {
                address: exit(i),
                nic_count: 4,
                state: State::Up,
                nics: Vec::new(),
                routes: Vec::new(),
            })
            .collect(),
        ..OracleConfig::default()
    };
    TopologySnapshot::build(&cfg).unwrap()
}

#[test]
fn the_shortest_as_path_over_an_exits_peers_wins_and_withdrawals_fall_back() {
    let mut rib = BgpRib::new();
    let p = prefix(0);
    rib.peer_up(exit(1), peer(1), 64501, 1);
    rib.peer_up(exit(1), peer(2), 64502, 2);
    rib.announce(exit(1), peer(1), p, route(3, 65000));
    rib.announce(exit(1), peer(2), p, route(2, 65000));
    // One change for the prefix at the exit, coalesced: the last best.
    let u = rib.take_updates();
    assert_eq!(
        u,
        vec![Update::AddExternalNetwork(ExternalNetwork {
            prefix: p,
            router: exit(1),
            nic: 2,
            as_number: 65000,
            as_distance: 2
        })]
    );
    // A longer path from the first peer changes nothing.
    rib.announce(exit(1), peer(1), p, route(5, 65000));
    assert!(rib.take_updates().is_empty());
    // The best peer withdraws: the other one's route takes over.
    rib.withdraw(exit(1), peer(2), p);
    let u = rib.take_updates();
    assert!(matches!(&u[..], [Update::AddExternalNetwork(n)] if n.as_distance == 5 && n.nic == 1));
    // Announce and withdraw within one batch from nothing: no update at all.
    let q = prefix(2);
    rib.announce(exit(2), peer(1), q, route(1, 1));
    rib.withdraw(exit(2), peer(1), q);
    assert!(rib.take_updates().is_empty());
    // Peer down removes what only it had.
    rib.peer_down(exit(1), peer(1));
    assert_eq!(
        rib.take_updates(),
        vec![Update::RemoveExternalNetwork {
            prefix: p,
            router: exit(1)
        }]
    );
    assert_eq!(rib.prefixes_per_exit(), vec![(exit(1), 0), (exit(2), 0)]);
}

#[test]
fn a_second_peer_up_drops_the_peers_old_routes_and_resync_reinstalls_everything() {
    let mut rib = BgpRib::new();
    rib.peer_up(exit(1), peer(1), 64501, 0);
    rib.announce(exit(1), peer(1), prefix(0), route(1, 7));
    rib.announce(exit(1), peer(1), prefix(2), route(2, 7));
    assert_eq!(rib.take_updates().len(), 2);
    rib.peer_up(exit(1), peer(1), 64501, 0);
    assert_eq!(rib.take_updates().len(), 2);
    assert_eq!(rib.routes(), 0);
    rib.announce(exit(1), peer(1), prefix(0), route(1, 7));
    rib.take_updates();
    rib.resync();
    assert!(matches!(
        &rib.take_updates()[..],
        [Update::AddExternalNetwork(_)]
    ));
}

#[derive(Clone, Debug)]
enum Op {
    Announce(u8, u8, u8, u16, u32),
    Withdraw(u8, u8, u8),
    PeerUp(u8, u8, u8),
    PeerDown(u8, u8),
    ExitDown(u8),
    SetNic(u8, u8, u8),
    Take,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (1..=3u8, 1..=3u8, 0..12u8, 0..6u16, 1..4u32)
            .prop_map(|(e, p, x, d, o)| Op::Announce(e, p, x, d, o)),
        4 => (1..=3u8, 1..=3u8, 0..12u8).prop_map(|(e, p, x)| Op::Withdraw(e, p, x)),
        1 => (1..=3u8, 1..=3u8, 0..3u8).prop_map(|(e, p, n)| Op::PeerUp(e, p, n)),
        1 => (1..=3u8, 1..=3u8).prop_map(|(e, p)| Op::PeerDown(e, p)),
        1 => (1..=3u8).prop_map(Op::ExitDown),
        1 => (1..=3u8, 1..=3u8, 0..3u8).prop_map(|(e, p, n)| Op::SetNic(e, p, n)),
        2 => Just(Op::Take),
    ]
}

/// The from-scratch model: every peer's routes; the best per (exit, prefix) by the same rule.
#[derive(Default)]
struct Model {
    routes: BTreeMap<(u8, u8), BTreeMap<IpNet, Route>>,
    nics: BTreeMap<(u8, u8), u8>,
}

impl Model {
    fn networks(&self) -> BTreeMap<(IpNet, IpAddr), ExternalNetwork> {
        let mut best: BTreeMap<(IpNet, IpAddr), (Route, u8)> = BTreeMap::new();
        for (&(e, p), table) in &self.routes {
            let nic = self.nics.get(&(e, p)).copied().unwrap_or(0);
            for (&prefix, &r) in table {
                let cand = (r, nic);
                best.entry((prefix, exit(e)))
                    .and_modify(|b| *b = (*b).min(cand))
                    .or_insert(cand);
            }
        }
        best.into_iter()
            .map(|((prefix, router), (r, nic))| {
                (
                    (prefix, router),
                    ExternalNetwork {
                        prefix,
                        router,
                        nic,
                        as_number: r.origin_as,
                        as_distance: r.as_distance,
                    },
                )
            })
            .collect()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Random announce / withdraw / peer-down sequences: the networks installed by applying
    /// every taken batch (to a real snapshot, which refuses a removal of what is not there)
    /// equal a from-scratch recomputation from all peers' routes.
    #[test]
    fn installed_networks_equal_a_from_scratch_recomputation(ops in proptest::collection::vec(op(), 1..120)) {
        let mut rib = BgpRib::new();
        let mut model = Model::default();
        let mut snap = database();
        for o in ops.iter().chain(std::iter::once(&Op::Take)) {
            match *o {
                Op::Announce(e, p, x, d, origin) => {
                    rib.announce(exit(e), peer(p), prefix(x), route(d, origin));
                    model.routes.entry((e, p)).or_default().insert(prefix(x), route(d, origin));
                }
                Op::Withdraw(e, p, x) => {
                    rib.withdraw(exit(e), peer(p), prefix(x));
                    if let Some(t) = model.routes.get_mut(&(e, p)) {
                        t.remove(&prefix(x));
                    }
                }
                Op::PeerUp(e, p, nic) => {
                    rib.peer_up(exit(e), peer(p), 64500, nic);
                    model.routes.remove(&(e, p));
                    model.nics.insert((e, p), nic);
                }
                Op::PeerDown(e, p) => {
                    rib.peer_down(exit(e), peer(p));
                    model.routes.remove(&(e, p));
                    model.nics.remove(&(e, p));
                }
                Op::ExitDown(e) => {
                    rib.exit_down(exit(e));
                    model.routes.retain(|k, _| k.0 != e);
                    model.nics.retain(|k, _| k.0 != e);
                }
                Op::SetNic(e, p, nic) => {
                    rib.set_peer_nic(exit(e), peer(p), nic);
                    if rib.peers().iter().any(|s| s.exit == exit(e) && s.peer == peer(p)) {
                        model.nics.insert((e, p), nic);
                    }
                }
                Op::Take => {
                    let updates = rib.take_updates();
                    snap = snap.apply(&updates).expect("a batch the snapshot refuses").0;
                }
            }
        }
        let want = model.networks();
        let got: BTreeMap<(IpNet, IpAddr), ExternalNetwork> = snap
            .to_config()
            .external_networks
            .into_iter()
            .map(|n| ((n.prefix, n.router), n))
            .collect();
        prop_assert_eq!(&got, &want);
        let scratch: BTreeMap<(IpNet, IpAddr), ExternalNetwork> = rib
            .external_networks()
            .into_iter()
            .map(|n| ((n.prefix, n.router), n))
            .collect();
        prop_assert_eq!(&scratch, &want);
        for (router, n) in rib.prefixes_per_exit() {
            prop_assert_eq!(n, want.keys().filter(|k| k.1 == router).count());
        }
    }
}
