//! FibMirror against a real kernel in network namespace R of A — R — B (root only).

mod common;

use common::*;
use ipnet::IpNet;
use pathwise_core::route::{Route, RouteChange};
use pathwise_net::{FibMirror, NetEvent, ifindex_by_name, interfaces};
use std::time::{Duration, Instant};

fn net(s: &str) -> IpNet {
    s.parse().expect("prefix literal")
}

/// Drains until every expected event has been seen (bounded), returning everything drained.
fn expect_events(fib: &mut FibMirror, expected: &[NetEvent]) -> Vec<NetEvent> {
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut seen = Vec::new();
    loop {
        seen.extend(fib.drain().expect("drain"));
        if expected.iter().all(|e| seen.contains(e)) {
            return seen;
        }
        assert!(
            Instant::now() < deadline,
            "missing {:?}\nin {seen:#?}",
            expected
                .iter()
                .filter(|e| !seen.contains(e))
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn add(
    prefix: &str,
    via: Option<&str>,
    ifindex: pathwise_core::io::IfIndex,
    metric: u32,
) -> NetEvent {
    NetEvent::Route(RouteChange::Add(Route {
        prefix: net(prefix),
        next_hop: via.map(addr),
        ifindex,
        metric,
    }))
}

fn remove(prefix: &str) -> NetEvent {
    NetEvent::Route(RouteChange::Remove(net(prefix)))
}

#[test]
fn fib_mirror_follows_routes_addresses_and_links() {
    if !available("fib_mirror_follows_routes_addresses_and_links") {
        return;
    }
    let c = Chain::new("fib");
    let mut fib = c.r.run(FibMirror::open).expect("open FibMirror");

    // The initial dump comes out of the first drain.
    let initial = fib.drain().expect("first drain");
    let rb = NetEvent::Link {
        ifindex: c.rb_if,
        name: "rb".into(),
        up: true,
        mtu: 1500,
    };
    for e in [
        NetEvent::Link {
            ifindex: c.ra_if,
            name: "ra".into(),
            up: true,
            mtu: 1500,
        },
        rb.clone(),
        NetEvent::Address {
            ifindex: c.ra_if,
            addr: net(&format!("{RA4}/24")),
            added: true,
        },
        NetEvent::Address {
            ifindex: c.rb_if,
            addr: net(&format!("{RB6}/64")),
            added: true,
        },
        add("10.91.1.0/24", None, c.ra_if, 0),
        add("fd91:2::/64", None, c.rb_if, 256),
    ] {
        assert!(
            initial.contains(&e),
            "initial dump lacks {e:?}: {initial:#?}"
        );
    }
    assert_eq!(fib.resyncs(), 0);

    // One-shot queries.
    let ifs = c.r.run(interfaces).expect("interfaces");
    let rb_info = ifs.iter().find(|i| i.name == "rb").expect("rb listed");
    assert_eq!(
        (rb_info.ifindex, rb_info.up, rb_info.mtu),
        (c.rb_if, true, 1500)
    );
    assert!(rb_info.addrs.contains(&net(&format!("{RB4}/24"))));
    assert!(rb_info.addrs.contains(&net(&format!("{RB6}/64"))));
    assert_eq!(
        c.r.run(|| ifindex_by_name("rb")).expect("lookup"),
        Some(c.rb_if)
    );
    assert_eq!(
        c.r.run(|| ifindex_by_name("no-such-if")).expect("lookup"),
        None
    );
    assert_eq!(
        fib.interfaces().iter().find(|i| i.name == "rb"),
        Some(rb_info)
    );

    // Routes added and removed with `ip route`.
    c.r.ip(&["route", "add", "10.99.0.0/16", "via", B4, "metric", "5"]);
    c.r.ip(&["-6", "route", "add", "fd99::/48", "via", B6]);
    expect_events(
        &mut fib,
        &[
            add("10.99.0.0/16", Some(B4), c.rb_if, 5),
            add("fd99::/48", Some(B6), c.rb_if, 1024),
        ],
    );
    // A better route for the same prefix replaces it; removing it restores the first.
    c.r.ip(&["route", "add", "10.99.0.0/16", "via", A4, "metric", "1"]);
    expect_events(&mut fib, &[add("10.99.0.0/16", Some(A4), c.ra_if, 1)]);
    c.r.ip(&["route", "del", "10.99.0.0/16", "metric", "1"]);
    expect_events(&mut fib, &[add("10.99.0.0/16", Some(B4), c.rb_if, 5)]);
    c.r.ip(&["route", "del", "10.99.0.0/16"]);
    expect_events(&mut fib, &[remove("10.99.0.0/16")]);

    // An address and its connected route.
    c.r.ip(&["addr", "add", "10.91.3.2/24", "dev", "rb"]);
    expect_events(
        &mut fib,
        &[
            NetEvent::Address {
                ifindex: c.rb_if,
                addr: net("10.91.3.2/24"),
                added: true,
            },
            add("10.91.3.0/24", None, c.rb_if, 0),
        ],
    );

    // The link goes down: reported, and every route through it is gone (IPv4 ones without any
    // kernel notification).
    c.r.ip(&["link", "set", "rb", "down"]);
    expect_events(
        &mut fib,
        &[
            NetEvent::Link {
                ifindex: c.rb_if,
                name: "rb".into(),
                up: false,
                mtu: 1500,
            },
            remove("10.91.2.0/24"),
            remove("10.91.3.0/24"),
            remove("fd91:2::/64"),
            remove("fd99::/48"),
        ],
    );
    assert!(
        fib.routes().iter().all(|r| r.ifindex != c.rb_if),
        "{:?}",
        fib.routes()
    );
    let kernel_v4 = c.r.ip_output(&["route", "show", "dev", "rb"]);
    assert!(kernel_v4.trim().is_empty(), "kernel agrees: {kernel_v4}");

    // Up again: the kernel re-adds the connected IPv4 routes.
    c.r.ip(&["link", "set", "rb", "up"]);
    expect_events(
        &mut fib,
        &[
            rb,
            add("10.91.2.0/24", None, c.rb_if, 0),
            add("10.91.3.0/24", None, c.rb_if, 0),
        ],
    );

    // Deleted: reported as removed.
    c.r.ip(&["link", "del", "rb"]);
    expect_events(
        &mut fib,
        &[
            NetEvent::LinkRemoved {
                ifindex: c.rb_if,
                name: "rb".into(),
            },
            remove("10.91.2.0/24"),
        ],
    );
    assert_eq!(fib.decode_errors(), 0);
}
