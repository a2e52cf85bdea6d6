//! The netlink traffic-control backend against a real kernel (root only; see `common/mod.rs`):
//! one namespace with a veth pair, HTB layouts with several reservations installed on one end
//! over rtnetlink and on the other by running `tc` for the same operations; what
//! `tc -d qdisc/class/filter show` reports must be the same on both ends (interface names aside),
//! after installing, after changing and removing reservations, and nothing of ours once both are
//! dropped.

mod common;

use common::*;
use pathwise_core::io::IfIndex;
use pathwise_core::tc::{FlowClassifier, TcHandle, TcRequest, TrafficControl};
use pathwise_net::tc::{HtbInterface, HtbTrafficControl, Netlink, TcBackend, TcRunner};
use pathwise_rsvp::engine::tc::flowspec_request;
use pathwise_rsvp::wire::{FlowSpec, TokenBucket};
use std::io::Write;
use std::process::Command;

/// `tc -n NS …`: the command backend, in the namespace.
struct NsTc(String);

impl TcRunner for NsTc {
    fn run(&mut self, args: &[String]) -> Result<(), String> {
        let out = Command::new("tc")
            .arg("-n")
            .arg(&self.0)
            .args(args)
            .output()
            .map_err(|e| format!("cannot run tc: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    }
}

fn tc_available(test: &str) -> bool {
    if Command::new("tc").arg("-V").output().is_ok() {
        return true;
    }
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: no `tc` (iproute2)");
    false
}

/// `tc -d KIND show dev DEV` in `ns`, the device's name replaced by `DEV`.
fn show(ns: &Netns, kind: &str, dev: &str) -> String {
    let out = Command::new("tc")
        .args(["-n", &ns.name, "-d", kind, "show", "dev", dev])
        .output()
        .expect("run tc");
    assert!(out.status.success(), "tc {kind} show dev {dev}");
    String::from_utf8_lossy(&out.stdout).replace(dev, "DEV")
}

/// What `tc` shows of `dev`'s layout, without the one counter it prints: a packet the kernel
/// itself sends on the interface (an IPv6 router or multicast listener message) before the
/// default class exists counts in `direct_packets_stat` of one interface and not the other.
fn layout(ns: &Netns, dev: &str) -> [String; 3] {
    ["qdisc", "class", "filter"].map(|k| {
        show(ns, k, dev)
            .split(' ')
            .scan(false, |after_stat, word| {
                let shown = if *after_stat { "N" } else { word };
                *after_stat = word == "direct_packets_stat";
                Some(shown.to_string())
            })
            .collect::<Vec<_>>()
            .join(" ")
    })
}

fn iface(name: &str) -> HtbInterface {
    HtbInterface {
        name: name.into(),
        bandwidth_bps: 100_000_000,
        reservable_bps: 80_000_000,
        mtu: 1500,
        latency_us: 0,
    }
}

fn request(kbps: f32, c: &[FlowClassifier]) -> TcRequest<'_> {
    let (tspec, rate) = flowspec_request(&FlowSpec::ControlledLoad(TokenBucket {
        rate: kbps * 125.0,
        bucket: 1000.0,
        peak: f32::INFINITY,
        min_policed: 64,
        max_packet: 1500,
    }));
    TcRequest {
        tspec,
        rate,
        classifiers: c,
    }
}

/// The flows of the reservations: IPv4 with and without a sender, IPv6 with a port and with
/// a flow label.
fn flows() -> Vec<FlowClassifier> {
    let v4 = |dst: &str, src: Option<&str>, sport| FlowClassifier {
        dst: addr(dst),
        src: src.map(addr),
        protocol: 17,
        dst_port: 5001,
        src_port: sport,
        flow_label: 0,
    };
    vec![
        v4("10.92.0.2", Some("10.92.0.1"), 4000),
        v4("10.92.0.3", None, 0),
        FlowClassifier {
            dst: addr("fd92::2"),
            src: Some(addr("fd92::1")),
            protocol: 6,
            dst_port: 8080,
            src_port: 0,
            flow_label: 0,
        },
        FlowClassifier {
            dst: addr("fd92::3"),
            src: Some(addr("fd92::1")),
            protocol: 0,
            dst_port: 0,
            src_port: 0,
            flow_label: 0x12345,
        },
    ]
}

fn reserve_all<B: TcBackend>(
    tc: &mut HtbTrafficControl<B>,
    ifindex: IfIndex,
    flows: &[FlowClassifier],
) -> Vec<TcHandle> {
    flows
        .iter()
        .enumerate()
        .map(|(i, f)| {
            tc.reserve(
                ifindex,
                request(1000.0 * (i + 1) as f32, std::slice::from_ref(f)),
            )
            .expect("admitted")
        })
        .collect()
}

#[test]
fn netlink_installs_and_removes_what_tc_does() {
    const TEST: &str = "netlink_installs_and_removes_what_tc_does";
    if !available(TEST) || !tc_available(TEST) {
        return;
    }
    let ns = Netns::single("tc");
    ns.ip(&["link", "add", "tnl", "type", "veth", "peer", "name", "tcmd"]);
    ns.ip(&["link", "set", "tnl", "up"]);
    ns.ip(&["link", "set", "tcmd", "up"]);
    let (nl_if, cmd_if) = (ns.ifindex("tnl"), ns.ifindex("tcmd"));
    // A stale root qdisc of ours (a killed run) with a class under it: startup removes it.
    for dev in ["tnl", "tcmd"] {
        NsTc(ns.name.clone())
            .run(
                &format!("qdisc add dev {dev} root handle 5057: htb default 7")
                    .split(' ')
                    .map(String::from)
                    .collect::<Vec<_>>(),
            )
            .expect("stale qdisc");
        NsTc(ns.name.clone())
            .run(
                &format!("class add dev {dev} parent 5057: classid 5057:7 htb rate 1mbit")
                    .split(' ')
                    .map(String::from)
                    .collect::<Vec<_>>(),
            )
            .expect("stale class");
    }
    let netlink = ns.run(Netlink::open).expect("netlink socket");
    let ports = [30000, 30001];
    let mut nl =
        HtbTrafficControl::with_signalling_tcp_ports(netlink, [(nl_if, iface("tnl"))], &ports);
    let mut cmd = HtbTrafficControl::with_signalling_tcp_ports(
        NsTc(ns.name.clone()),
        [(cmd_if, iface("tcmd"))],
        &ports,
    );
    assert_eq!((nl.failures, nl.last_failure.as_deref()), (0, None));
    assert_eq!((cmd.failures, cmd.last_failure.as_deref()), (0, None));
    let flows = flows();
    let hn = reserve_all(&mut nl, nl_if, &flows);
    let hc = reserve_all(&mut cmd, cmd_if, &flows);
    let installed = layout(&ns, "tnl");
    assert_eq!(installed, layout(&ns, "tcmd"));
    // Not two empty outputs: the layout is there.
    let [qdisc, class, filter] = &installed;
    assert!(qdisc.contains("qdisc htb 5057: root"), "{qdisc}");
    assert!(
        qdisc.contains("qdisc pfifo fffe: parent 5057:fffe limit 833p"),
        "{qdisc}"
    );
    assert!(!class.contains("5057:7 "), "stale class left: {class}");
    for minor in ["1", "2", "3", "4", "5", "fffd", "fffe"] {
        assert!(
            class.contains(&format!("class htb 5057:{minor} ")),
            "{minor}: {class}"
        );
    }
    assert!(
        class.contains("class htb 5057:3 parent 5057:1 prio 1 quantum"),
        "{class}"
    );
    assert!(class.contains("rate 2Mbit ceil 100Mbit"), "{class}");
    for pref in [1, 2, 12, 13, 14, 15] {
        assert!(
            filter.contains(&format!("pref {pref} u32")),
            "{pref}: {filter}"
        );
    }
    assert!(filter.contains("match 0a5c0002/ffffffff at 16"), "{filter}");
    assert!(filter.contains("match 00012345/000fffff at 0"), "{filter}");
    // Change one (a new rate and a new flow), release another.
    let moved = [FlowClassifier {
        dst_port: 5002,
        ..flows[1]
    }];
    nl.modify(hn[1], request(3000.0, &moved)).unwrap();
    cmd.modify(hc[1], request(3000.0, &moved)).unwrap();
    nl.release(hn[2]);
    cmd.release(hc[2]);
    let changed = layout(&ns, "tnl");
    assert_eq!(changed, layout(&ns, "tcmd"));
    let [_, class, filter] = &changed;
    assert!(
        !class.contains("class htb 5057:4 "),
        "released class: {class}"
    );
    assert!(!filter.contains("pref 14 "), "released filters: {filter}");
    assert!(
        class.contains("class htb 5057:3 parent 5057:1 prio 1 quantum 37500 rate 3Mbit"),
        "{class}"
    );
    assert!(filter.contains("match 0a5c0003/ffffffff at 16"), "{filter}");
    assert!(filter.contains("match 0000138a/0000ffff at 20"), "{filter}");
    assert_eq!((nl.failures, cmd.failures), (0, 0));
    drop(cmd);
    let [qdisc, class, filter] = layout(&ns, "tcmd");
    assert!(!qdisc.contains("5057:"), "{qdisc}");
    assert_eq!((class.as_str(), filter.as_str()), ("", ""));
    drop(nl);
    let [qdisc, class, filter] = layout(&ns, "tnl");
    assert!(!qdisc.contains("5057:"), "{qdisc}");
    assert_eq!((class.as_str(), filter.as_str()), ("", ""));
}

#[test]
fn netlink_failures_are_counted() {
    const TEST: &str = "netlink_failures_are_counted";
    if !available(TEST) {
        return;
    }
    let ns = Netns::single("tcf");
    ns.ip(&["link", "add", "tf0", "type", "veth", "peer", "name", "tf1"]);
    let ifindex = ns.ifindex("tf0");
    let netlink = ns.run(Netlink::open).expect("netlink socket");
    let mut nl = HtbTrafficControl::new(netlink, [(ifindex, iface("tf0"))]);
    assert_eq!(nl.failures, 0);
    // The interface goes away under us: the next operations fail, each counted, and the
    // reservation is still accounted.
    ns.ip(&["link", "del", "tf0"]);
    let f = flows();
    let h = nl
        .reserve(ifindex, request(1000.0, &f[..1]))
        .expect("admitted");
    assert_eq!(nl.failures, 2, "{:?}", nl.last_failure);
    assert!(
        nl.last_failure
            .as_deref()
            .unwrap()
            .contains("No such device")
    );
    assert_eq!(nl.reserved_bps(ifindex), 1_000_000);
    nl.release(h);
    assert_eq!(nl.failures, 4);
}
