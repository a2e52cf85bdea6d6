//! LinuxMpls against a real kernel, in one network namespace with a veth pair (root only; see
//! `common/mod.rs`): label routes and ingress bindings go in over rtnetlink, are read back with
//! iproute2, replaced and removed.
//!
//! Kernels without MPLS routing (`CONFIG_MPLS_ROUTING`, module `mpls_router` not loaded) have no
//! `/proc/sys/net/mpls`; the test then says it was skipped and passes, unless
//! `PATHWISE_REQUIRE_MPLS=1`. It does not load modules itself: `modprobe mpls_router
//! mpls_iptunnel` first to run it.

mod common;

use common::*;
use pathwise_core::io::IfIndex;
use pathwise_core::mpls::{
    DataplaneError, FtnEntry, LabelDataplane, LabelOp, LfibChange, LfibEntry, NextHop,
};
use pathwise_net::LinuxMpls;
use std::io::Write;

const M0_4: &str = "10.93.1.1";
const M1_4: &str = "10.93.1.2";
const M0_6: &str = "fd93:1::1";
const M1_6: &str = "fd93:1::2";

/// Whether the namespace's kernel forwards MPLS; says why not otherwise.
fn mpls_routing(ns: &Netns, test: &str) -> bool {
    if ns.run(|| std::path::Path::new("/proc/sys/net/mpls").is_dir()) {
        return true;
    }
    let why = "kernel without MPLS routing (/proc/sys/net/mpls missing: CONFIG_MPLS_ROUTING \
               unset or mpls_router not loaded)";
    if std::env::var_os("PATHWISE_REQUIRE_MPLS").is_some_and(|v| v == "1") {
        panic!("{test}: {why} and PATHWISE_REQUIRE_MPLS=1");
    }
    // Written to stderr directly: the test harness captures `eprintln!` of passing tests.
    let _ = writeln!(
        std::io::stderr(),
        "{test} skipped: {why}; set PATHWISE_REQUIRE_MPLS=1 to make this a failure"
    );
    false
}

/// Whether `line` holds `words` one after another.
fn has(line: &str, words: &[&str]) -> bool {
    line.split_whitespace()
        .collect::<Vec<_>>()
        .windows(words.len())
        .any(|w| w == words)
}

/// The lines of `out` whose first word is `first`.
fn lines<'a>(out: &'a str, first: &str) -> Vec<&'a str> {
    out.lines()
        .filter(|l| l.split_whitespace().next() == Some(first))
        .collect()
}

/// The one line of `out` for `first`, panicking unless there is exactly one.
fn line<'a>(out: &'a str, first: &str) -> &'a str {
    match lines(out, first)[..] {
        [l] => l,
        ref other => panic!("expected one route for {first}, got {other:?} in\n{out}"),
    }
}

fn hop(ifindex: IfIndex, addr: &str) -> NextHop {
    NextHop {
        ifindex,
        addr: addr.parse().unwrap(),
    }
}

fn label(in_label: u32, op: LabelOp, next_hop: NextHop) -> LfibChange {
    LfibChange::Install(LfibEntry {
        in_label,
        op,
        next_hop,
    })
}

fn ftn(dest: &str, tunnel_id: u16, push: Option<u32>, next_hop: NextHop) -> LfibChange {
    LfibChange::InstallFtn(FtnEntry {
        dest: dest.parse().unwrap(),
        tunnel_id,
        push,
        next_hop,
    })
}

fn remove_ftn(dest: &str, tunnel_id: u16) -> LfibChange {
    LfibChange::RemoveFtn {
        dest: dest.parse().unwrap(),
        tunnel_id,
    }
}

#[test]
fn mpls_routes_reach_the_kernel() {
    const TEST: &str = "mpls_routes_reach_the_kernel";
    if !available(TEST) {
        return;
    }
    let ns = Netns::single("mpls");
    if !mpls_routing(&ns, TEST) {
        // What the daemon gets on such a kernel.
        match ns.run(LinuxMpls::open) {
            Err(DataplaneError::Unsupported(why)) => {
                assert!(why.contains("CONFIG_MPLS_ROUTING"), "{why}")
            }
            other => panic!("open without MPLS routing: {other:?}"),
        }
        return;
    }
    ns.sysctl("net.ipv6.conf.all.accept_dad", "0");
    ns.sysctl("net.ipv6.conf.default.accept_dad", "0");
    ns.ip(&["link", "set", "lo", "up"]);
    ns.ip(&["link", "add", "m0", "type", "veth", "peer", "name", "m1"]);
    for (dev, v4, v6) in [("m0", M0_4, M0_6), ("m1", M1_4, M1_6)] {
        ns.ip(&["addr", "add", &format!("{v4}/24"), "dev", dev]);
        ns.ip(&[
            "-6",
            "addr",
            "add",
            &format!("{v6}/64"),
            "dev",
            dev,
            "nodad",
        ]);
        ns.ip(&["link", "set", dev, "up"]);
    }
    ns.wait_ipv6_ready("m0");
    let m0 = ns.ifindex("m0");

    let mut mpls = ns.run(LinuxMpls::open).expect("open LinuxMpls");
    let sysctl = |key: &str| {
        ns.run(|| std::fs::read_to_string(format!("/proc/sys/net/mpls/{key}")))
            .unwrap_or_else(|e| panic!("read net.mpls.{key}: {e}"))
    };
    assert_ne!(sysctl("platform_labels").trim(), "0", "labels usable");
    ns.run(|| mpls.enable_input("m1")).expect("enable input");
    assert_eq!(sysctl("conf/m1/input").trim(), "1");

    // Label routes: swap, pop through an IPv6 neighbour, swap to explicit null.
    let v4 = hop(m0, M1_4);
    let v6 = hop(m0, M1_6);
    for change in [
        label(100, LabelOp::Swap(200), v4),
        label(101, LabelOp::Pop, v6),
        label(102, LabelOp::Swap(0), v4),
    ] {
        mpls.apply(&change)
            .unwrap_or_else(|e| panic!("{change:?}: {e}"));
    }
    let show = || ns.ip_output(&["-f", "mpls", "route", "show", "proto", "46"]);
    let out = show();
    let swap = line(&out, "100");
    assert!(has(swap, &["as", "to", "200"]), "{swap}");
    assert!(has(swap, &["via", "inet", M1_4, "dev", "m0"]), "{swap}");
    let pop = line(&out, "101");
    assert!(!has(pop, &["as"]), "pop pushes nothing: {pop}");
    assert!(has(pop, &["via", "inet6", M1_6, "dev", "m0"]), "{pop}");
    assert!(has(line(&out, "102"), &["as", "to", "0"]), "{out}");

    // Replacing, not adding.
    mpls.apply(&label(100, LabelOp::Swap(201), v4))
        .expect("replace label 100");
    let out = show();
    assert!(has(line(&out, "100"), &["as", "to", "201"]), "{out}");

    // The kernel's refusal comes back as one, with its reason.
    match mpls.apply(&label(103, LabelOp::Swap(300), hop(IfIndex(999_999), M1_4))) {
        Err(DataplaneError::Refused(why)) => assert!(why.contains("No such device"), "{why}"),
        other => panic!("a missing interface must be refused: {other:?}"),
    }
    assert!(lines(&show(), "103").is_empty());

    for l in [100, 101, 102, 100] {
        mpls.apply(&LfibChange::Remove(l))
            .unwrap_or_else(|e| panic!("remove {l} (again): {e}"));
    }
    assert_eq!(show().trim(), "", "all label routes gone");

    // Ingress bindings. Without MPLS lightweight tunnels (CONFIG_MPLS_IPTUNNEL) the first push
    // is unsupported; that is the kernel's limit, not a failure here.
    let d4 = "10.93.9.9";
    match mpls.apply(&ftn(d4, 2, Some(400), v4)) {
        Ok(()) => {}
        Err(DataplaneError::Unsupported(why)) => {
            let _ = writeln!(
                std::io::stderr(),
                "{TEST}: ingress bindings skipped: kernel without MPLS lightweight tunnels \
                 ({why})"
            );
            return;
        }
        Err(e) => panic!("install tunnel 2: {e}"),
    }
    let show4 = || ns.ip_output(&["route", "show", &format!("{d4}/32"), "proto", "46"]);
    let carried = |out: &str, push: &str| {
        let l = line(out, d4);
        assert!(has(l, &["encap", "mpls", push]), "{l}");
        assert!(has(l, &["via", M1_4, "dev", "m0"]), "{l}");
    };
    carried(&show4(), "400");
    // A second tunnel to the same end point: the lower id carries the route...
    mpls.apply(&ftn(d4, 1, Some(300), v4)).expect("tunnel 1");
    carried(&show4(), "300");
    // ...and when it goes, the other one takes it back.
    mpls.apply(&remove_ftn(d4, 1)).expect("remove tunnel 1");
    carried(&show4(), "400");
    mpls.apply(&remove_ftn(d4, 2)).expect("remove tunnel 2");
    assert_eq!(show4().trim(), "", "host route gone");
    mpls.apply(&remove_ftn(d4, 2)).expect("remove again");

    let (plain6, pushed6) = ("fd93:9::9", "fd93:9::a");
    mpls.apply(&ftn(plain6, 1, None, v6))
        .expect("IPv6 without push");
    mpls.apply(&ftn(pushed6, 3, Some(500), v6))
        .expect("IPv6 with push");
    let show6 =
        |d: &str| ns.ip_output(&["-6", "route", "show", &format!("{d}/128"), "proto", "46"]);
    let out = show6(plain6);
    let l = line(&out, plain6);
    assert!(
        !has(l, &["encap"]) && has(l, &["via", M1_6, "dev", "m0"]),
        "{l}"
    );
    let out = show6(pushed6);
    let l = line(&out, pushed6);
    assert!(
        has(l, &["encap", "mpls", "500"]) && has(l, &["via", M1_6, "dev", "m0"]),
        "{l}"
    );
    mpls.apply(&remove_ftn(plain6, 1))
        .expect("remove IPv6 plain");
    mpls.apply(&remove_ftn(pushed6, 3))
        .expect("remove IPv6 pushed");
    assert_eq!(show6(plain6).trim(), "");
    assert_eq!(show6(pushed6).trim(), "");
}
