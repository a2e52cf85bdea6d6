//! The oracle fed by real routers (issue 16, part 2): FRR's `bgpd` in network namespaces.
//!
//! ```text
//!   up1 (AS 65001) ── ex1 (AS 65000) ──┐
//!                                       ├── oracle (pathwise oracle serve --bmp 0.0.0.0:11019
//!                                       │                                 --alto 127.0.0.1:11080)
//!   up2 (AS 65002) ── ex2 (AS 65000) ──┘
//! ```
//!
//! Both upstreams announce 203.0.113.0/24 (A) and 198.51.100.0/24 (B) with different AS-path
//! lengths (prepends by route map); both exits send BMP (pre-policy Adj-RIB-In) to the oracle,
//! whose database has the two exits behind one core router with equal links, so only the AS
//! distance orders A and B. A prepend, a withdrawal and a peer going down must each change the
//! ranked answer within a bounded wait. The exits' BMP sessions are mapped to them by NIC
//! address (the database gives each exit a NIC with its address towards the oracle).
//!
//! The same snapshot answers ALTO (issue 16's test): an endpoint-cost query through
//! `pathwise oracle alto ecs` ranks by the live routes and follows each change, and a client
//! on the update stream (`pathwise oracle alto watch --apply`, RFC 8895) sees the merge patches
//! the BMP updates cause and, applying them, holds the server's current maps.
//!
//! FRR runs with its own configuration and run directories in the lab's scratch directory (no
//! systemd, no zebra); its configuration is changed live through `vtysh --vty_socket`.
//! Skips with a message without root or FRR (Debian package `frr`).
//!
//! Extending it (e.g. with an ALTO query): [`BgpLab::start`] gives a running network whose
//! routes are in place; [`BgpLab::vtysh`] changes an upstream; [`BgpLab::wait_order`] waits for
//! an answer.

mod common;

use common::bgp::{EXIT1, EXIT2, SOURCE, bgp, database, order, peering};
use common::netns::{bin, serial, skip};
use pathwise::netns::{Lab, wait_for};
use pathwise_oracle::alto;
use serde_json::Value;
use std::collections::HashMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

const BGPD: &str = "/usr/lib/frr/bgpd";
const BMP_MODULE: &str = "/usr/lib/x86_64-linux-gnu/frr/modules/bgpd_bmp.so";
const BMP_PORT: u16 = 11019;
/// The ALTO server's directory, inside the oracle's namespace.
const ALTO: &str = "http://127.0.0.1:11080/alto";
const A: &str = "203.0.113.0/24";
const B: &str = "198.51.100.0/24";

/// Upstream `i` (1 or 2) announcing A and B, each prepended `prepend[..]` extra times.
fn upstream_conf(i: u8, prepend: [usize; 2]) -> String {
    let asn = 65000 + u32::from(i);
    let pre = |n: usize| vec![asn.to_string(); n].join(" ");
    let mut c = format!(
        "hostname up{i}\nlog stdout informational\n\
         ip prefix-list PA seq 5 permit {A}\nip prefix-list PB seq 5 permit {B}\n"
    );
    for (seq, (list, n)) in [("PA", prepend[0]), ("PB", prepend[1])].iter().enumerate() {
        if *n > 0 {
            c += &format!(
                "route-map OUT permit {}\n match ip address prefix-list {list}\n set as-path prepend {}\n",
                10 * (seq + 1),
                pre(*n)
            );
        }
    }
    c += &format!(
        "route-map OUT permit 100\n\
         router bgp {asn}\n bgp router-id 10.1.{i}.1\n no bgp ebgp-requires-policy\n\
         no bgp network import-check\n neighbor 10.1.{i}.2 remote-as 65000\n\
         neighbor 10.1.{i}.2 timers 3 9\n neighbor 10.1.{i}.2 timers connect 1\n\
         address-family ipv4 unicast\n  network {A}\n  network {B}\n\
         neighbor 10.1.{i}.2 route-map OUT out\n exit-address-family\n"
    );
    c
}

/// Exit `i`: peers with upstream `i`, sends BMP to the oracle. FRR keeps a peer's pre-policy
/// Adj-RIB-In only with `soft-reconfiguration inbound`; without it, BMP pre-policy monitoring
/// sends withdrawals where the routes should be.
fn exit_conf(i: u8) -> String {
    format!(
        "hostname ex{i}\nlog stdout informational\n\
         router bgp 65000\n bgp router-id 10.255.0.{i}\n no bgp ebgp-requires-policy\n\
         neighbor 10.1.{i}.1 remote-as 6500{i}\n neighbor 10.1.{i}.1 timers 3 9\n\
         neighbor 10.1.{i}.1 timers connect 1\n\
         address-family ipv4 unicast\n  neighbor 10.1.{i}.1 soft-reconfiguration inbound\n\
         exit-address-family\n\
         bmp targets oracle\n  bmp connect 10.9.{i}.2 port {BMP_PORT} min-retry 100 max-retry 500\n\
         bmp monitor ipv4 unicast pre-policy\n exit\n"
    )
}

/// The running network.
struct BgpLab {
    lab: Lab,
    socket: PathBuf,
}

/// Namespace indices.
const UP1: usize = 0;
const UP2: usize = 1;
const EX1: usize = 2;
const EX2: usize = 3;
const ORACLE: usize = 4;

impl BgpLab {
    /// Namespaces, links, the oracle and four bgpd, with the upstreams' prepends; returns once
    /// both exits' BMP sessions are up.
    fn start(prepends: [[usize; 2]; 2]) -> anyhow::Result<BgpLab> {
        let mut lab = Lab::new(&["up1", "up2", "ex1", "ex2", "oracle"])?;
        lab.link((UP1, "e0", "10.1.1.1/30"), (EX1, "u0", "10.1.1.2/30"))?;
        lab.link((UP2, "e0", "10.1.2.1/30"), (EX2, "u0", "10.1.2.2/30"))?;
        lab.link((EX1, "o0", "10.9.1.1/30"), (ORACLE, "x1", "10.9.1.2/30"))?;
        lab.link((EX2, "o0", "10.9.2.1/30"), (ORACLE, "x2", "10.9.2.2/30"))?;
        // The exits' NIC 1 faces their upstream (so routes leave through it), NIC 2 the oracle
        // (so their BMP sessions are theirs).
        let db = database([
            vec![
                peering(1, "10.1.1.2", "10.1.1.1"),
                peering(2, "10.9.1.1", "10.9.1.2"),
            ],
            vec![
                peering(1, "10.1.2.2", "10.1.2.1"),
                peering(2, "10.9.2.1", "10.9.2.2"),
            ],
        ]);
        let db_path = lab.path("oracle.toml");
        std::fs::write(&db_path, pathwise_oracle::config::to_toml_string(&db)?)?;
        let socket = lab.path("oracle.sock");
        let bmp = format!("0.0.0.0:{BMP_PORT}");
        lab.spawn(
            "oracle",
            ORACLE,
            &[
                bin(),
                "oracle",
                "serve",
                "--config",
                path(&db_path),
                "--socket",
                path(&socket),
                "--bmp",
                &bmp,
                "--alto",
                "127.0.0.1:11080",
            ],
        )?;
        wait_for(Duration::from_secs(20), "the oracle's console", || {
            pathwise::mgmt::request(
                &socket,
                "oracle",
                "show",
                serde_json::json!({"what": "bgp"}),
            )
            .ok()
        })?;
        for (tag, ns, conf) in [
            ("up1", UP1, upstream_conf(1, prepends[0])),
            ("up2", UP2, upstream_conf(2, prepends[1])),
            ("ex1", EX1, exit_conf(1)),
            ("ex2", EX2, exit_conf(2)),
        ] {
            let run = lab.path(&format!("run-{tag}"));
            std::fs::create_dir_all(&run)?;
            let conf_path = lab.path(&format!("{tag}.conf"));
            std::fs::write(&conf_path, conf)?;
            let pid = run.join("bgpd.pid");
            let mut argv = vec![BGPD];
            if tag.starts_with("ex") {
                argv.extend(["-M", "bmp"]);
            }
            argv.extend([
                "-f",
                path(&conf_path),
                "-i",
                path(&pid),
                "--vty_socket",
                path(&run),
                "-Z",
                "-S",
                "-u",
                "root",
                "-g",
                "root",
                "-P",
                "0",
            ]);
            lab.spawn(tag, ns, &argv)?;
        }
        let b = BgpLab { lab, socket };
        let (e1, e2) = (ip(EXIT1), ip(EXIT2));
        wait_for(Duration::from_secs(60), "both exits' BMP sessions", || {
            let v = bgp(&b.socket);
            let mut exits: Vec<IpAddr> = v.sessions.iter().filter_map(|s| s.exit).collect();
            exits.sort();
            (exits == vec![e1, e2]).then_some(())
        })
        .map_err(|e| b.diagnose(e))?;
        Ok(b)
    }

    /// Run vtysh commands against router `tag`'s bgpd.
    fn vtysh(&self, tag: &str, commands: &[&str]) -> anyhow::Result<()> {
        let run = self.lab.path(&format!("run-{tag}"));
        let mut argv = vec!["vtysh", "--vty_socket", path(&run), "-d", "bgpd"];
        for c in commands {
            argv.extend(["-c", c]);
        }
        let out = pathwise::netns::run_limited(
            std::process::Command::new(argv[0]).args(&argv[1..]),
            Duration::from_secs(20),
        )?;
        anyhow::ensure!(
            out.status.success(),
            "vtysh {commands:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(())
    }

    /// Wait until the oracle ranks `candidates` as `want` (address, (exit, AS distance)).
    fn wait_order(
        &self,
        what: &str,
        limit: Duration,
        candidates: &[IpAddr],
        want: &[(IpAddr, Option<(IpAddr, u16)>)],
    ) -> anyhow::Result<()> {
        wait_for(limit, what, || {
            (order(&self.socket, candidates) == want).then_some(())
        })
        .map_err(|e| {
            let got = order(&self.socket, candidates);
            self.diagnose(e.context(format!("wanted {want:?}, got {got:?}")))
        })
    }

    /// Run `pathwise oracle alto ARGS… --json` in the oracle's namespace and parse its output.
    fn alto(&self, args: &[&str]) -> anyhow::Result<serde_json::Value> {
        let mut argv = vec![bin(), "oracle", "alto"];
        argv.extend(args);
        argv.push("--json");
        let out = self.lab.exec_for(ORACLE, &argv, Duration::from_secs(20))?;
        anyhow::ensure!(
            out.status.success(),
            "{argv:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(serde_json::from_slice(&out.stdout)?)
    }

    /// The ALTO endpoint cost service's answer for `candidates` from [`SOURCE`]: the
    /// candidates with a cost, cheapest first (ties in request order; RFC 7285 §11.5.1.6).
    fn alto_order(&self, candidates: &[IpAddr]) -> anyhow::Result<Vec<IpAddr>> {
        let mut argv = vec!["ecs", ALTO, "--src", SOURCE];
        let dsts: Vec<String> = candidates.iter().map(IpAddr::to_string).collect();
        argv.extend(dsts.iter().map(String::as_str));
        let v = self.alto(&argv)?;
        let row = &v["endpoint-cost-map"][format!("ipv4:{SOURCE}")];
        let mut costed: Vec<(f64, usize, IpAddr)> = candidates
            .iter()
            .enumerate()
            .filter_map(|(i, c)| Some((row[format!("ipv4:{c}")].as_f64()?, i, *c)))
            .collect();
        costed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        Ok(costed.into_iter().map(|(_, _, c)| c).collect())
    }

    /// Wait until ALTO's endpoint cost service orders `candidates` as `want` (those with a
    /// cost, cheapest first).
    fn wait_alto_order(
        &self,
        what: &str,
        limit: Duration,
        candidates: &[IpAddr],
        want: &[IpAddr],
    ) -> anyhow::Result<()> {
        wait_for(limit, what, || {
            (self.alto_order(candidates).ok()? == want).then_some(())
        })
        .map_err(|e| {
            let got = self.alto_order(candidates);
            self.diagnose(e.context(format!("ALTO: wanted {want:?}, got {got:?}")))
        })
    }

    fn diagnose(&self, e: anyhow::Error) -> anyhow::Error {
        let tail = |t: &str| {
            let log = self.lab.log(t);
            let lines: Vec<&str> = log.lines().rev().take(15).collect();
            lines.into_iter().rev().collect::<Vec<_>>().join("\n")
        };
        e.context(format!(
            "show bgp: {}\n--- oracle log\n{}\n--- ex1 log\n{}\n--- ex2 log\n{}",
            pathwise::mgmt::request(
                &self.socket,
                "oracle",
                "show",
                serde_json::json!({"what": "bgp"})
            )
            .map(|v| v.to_string())
            .unwrap_or_default(),
            tail("oracle"),
            tail("ex1"),
            tail("ex2")
        ))
    }
}

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("address")
}

/// What `oracle alto watch --apply --json` printed: each data event's (substream, media type)
/// in order, and each substream's document after the last one.
fn watched(log: &str) -> (Vec<(String, String)>, HashMap<String, Value>) {
    let (mut events, mut docs) = (Vec::new(), HashMap::new());
    let mut lines = log.lines();
    while let Some(l) = lines.next() {
        let Some((sid, media)) = l.strip_suffix(':').and_then(|h| h.split_once(" after ")) else {
            continue;
        };
        let Some(doc) = lines.next().and_then(|d| serde_json::from_str(d).ok()) else {
            continue;
        };
        events.push((sid.to_owned(), media.to_owned()));
        docs.insert(sid.to_owned(), doc);
    }
    (events, docs)
}

fn frr_missing() -> Option<String> {
    if !Path::new(BGPD).is_file() || !Path::new(BMP_MODULE).is_file() {
        return Some(format!(
            "FRR is not installed ({BGPD} with {BMP_MODULE}; Debian package `frr`)"
        ));
    }
    None
}

/// How long a change may take from the upstream's vtysh command to the oracle's answer: BGP
/// sends at once (eBGP, no MRAI in FRR's defaults), BMP forwards at once, the oracle batches
/// every 10 ms; the rest is a loaded shared machine.
const BOUND: Duration = Duration::from_secs(15);

#[test]
fn live_bgp_routes_from_frr_rank_candidates_and_changes_reach_the_answer() {
    let test = "live_bgp_routes_from_frr_rank_candidates_and_changes_reach_the_answer";
    if skip(test, &["vtysh"]) {
        return;
    }
    if let Some(why) = frr_missing() {
        println!("skipping {test}: {why}");
        return;
    }
    let _serial = serial();
    // up1: A at distance 1, B at 4; up2: A at 3, B at 2.
    let mut net = BgpLab::start([[0, 3], [2, 1]]).expect("the BGP lab starts");
    let (a, b) = (ip("203.0.113.7"), ip("198.51.100.7"));
    let (e1, e2) = (ip(EXIT1), ip(EXIT2));
    net.wait_order(
        "the initial routes: A through exit 1 (1 AS), then B through exit 2 (2 ASes)",
        Duration::from_secs(60),
        &[b, a],
        &[(a, Some((e1, 1))), (b, Some((e2, 2)))],
    )
    .unwrap();
    // ALTO answers from the same snapshot.
    net.wait_alto_order("ALTO's initial order", BOUND, &[b, a], &[a, b])
        .unwrap();
    // A client on the update stream, following the network map and the routingcost map.
    net.lab
        .spawn(
            "watch",
            ORACLE,
            &[
                bin(),
                "oracle",
                "alto",
                "watch",
                ALTO,
                "--with-cost",
                "--apply",
                "--json",
            ],
        )
        .unwrap();
    wait_for(BOUND, "the watcher's first maps", || {
        let (_, docs) = watched(&net.lab.log("watch"));
        (docs.contains_key("net") && docs.contains_key("cost")).then_some(())
    })
    .map_err(|e| net.diagnose(e.context(net.lab.log("watch"))))
    .unwrap();
    let v = bgp(&net.socket);
    assert_eq!(v.peers.len(), 2, "{v:?}");
    for p in &v.peers {
        assert_eq!(
            p.nic, 1,
            "routes leave through the NIC facing the peer: {p:?}"
        );
        assert_eq!(p.routes, 2);
    }
    assert!(v.exits.iter().all(|e| e.prefixes == 2), "{v:?}");
    // Every message FRR sent was used. (Once, in an early run, one message of a session's
    // start was refused by the parser; its reason is in `last_error` should it come back.)
    let unused: u64 = v
        .drops
        .iter()
        .filter(|(k, _)| k.as_str() != "malformed")
        .map(|(_, n)| n)
        .sum();
    assert_eq!(unused, 0, "{v:?}");
    if v.drops["malformed"] > 0 {
        println!("note: FRR messages the parser refused: {:?}", v.sessions);
    }

    // up1 prepends A three more times: A is now best through exit 2 at 3, behind B.
    net.vtysh(
        "up1",
        &[
            "configure terminal",
            "route-map OUT permit 10",
            "match ip address prefix-list PA",
            "set as-path prepend 65001 65001 65001",
            "end",
            "clear bgp * soft out",
        ],
    )
    .unwrap();
    net.wait_order(
        "the prepend",
        BOUND,
        &[a, b],
        &[(b, Some((e2, 2))), (a, Some((e2, 3)))],
    )
    .unwrap();
    net.wait_alto_order("ALTO after the prepend", BOUND, &[a, b], &[b, a])
        .unwrap();

    // up2 withdraws B: B is left through exit 1 at 4, behind A.
    net.vtysh(
        "up2",
        &[
            "configure terminal",
            "router bgp 65002",
            "address-family ipv4 unicast",
            &format!("no network {B}"),
            "end",
        ],
    )
    .unwrap();
    net.wait_order(
        "the withdrawal",
        BOUND,
        &[b, a],
        &[(a, Some((e2, 3))), (b, Some((e1, 4)))],
    )
    .unwrap();
    net.wait_alto_order("ALTO after the withdrawal", BOUND, &[b, a], &[a, b])
        .unwrap();

    // up1 goes away: exit 1's peer is down, B is gone, A stays through exit 2.
    net.lab.kill("up1");
    net.wait_order(
        "the peer going down",
        BOUND,
        &[b, a],
        &[(a, Some((e2, 3))), (b, None)],
    )
    .unwrap();
    net.wait_alto_order("ALTO after the peer went down", BOUND, &[b, a], &[a])
        .unwrap();
    // The watcher was sent the changes as merge patches (RFC 8895 §6.7.1: not whole maps
    // again), and applying them it holds what the server serves now.
    let current = || -> anyhow::Result<HashMap<String, Value>> {
        Ok(HashMap::from([
            ("net".to_owned(), net.alto(&["map", ALTO])?),
            ("cost".to_owned(), net.alto(&["cost", ALTO])?),
        ]))
    };
    wait_for(BOUND, "the watcher to hold the current maps", || {
        let (_, docs) = watched(&net.lab.log("watch"));
        (current().ok()? == docs).then_some(())
    })
    .map_err(|e| {
        net.diagnose(e.context(format!(
            "current {:?}\n--- watch log\n{}",
            current().ok(),
            net.lab.log("watch")
        )))
    })
    .unwrap();
    let (events, _) = watched(&net.lab.log("watch"));
    let patches = |sid: &str| {
        events
            .iter()
            .filter(|(s, m)| s == sid && m == alto::MERGE_PATCH)
            .count()
    };
    // The withdrawal and the peer going down each changed the network map (B's exits, then
    // B gone), and the routes' distances each cost map.
    assert!(patches("net") >= 2, "{events:?}");
    assert!(patches("cost") >= 2, "{events:?}");
    assert_eq!(
        events
            .iter()
            .filter(|(_, m)| m != alto::MERGE_PATCH)
            .count(),
        2,
        "one full map per substream, then only patches: {events:?}"
    );
    let v = bgp(&net.socket);
    assert!(v.messages["peer_down"] >= 1, "{v:?}");
    assert_eq!(v.peers.iter().filter(|p| p.exit == e1).count(), 0, "{v:?}");
    assert!(v.updates_applied >= 6, "{v:?}");
}
