//! The five-node network-namespace chain H1 – R1 – R2 – R3 – H2 that the RSVP and GIST labs
//! share ([`crate::rsvp::chain`], [`crate::gist::chain`]): link n (1..4) is 10.91.n.0/24 (and,
//! dual-stack, fd00:91:n::/64); the node west of it is .1 / ::1 on `e0`, the node east of it
//! .2 / ::2 on `w0`; the hosts route by default through their router, the routers forward and
//! route every link.

use crate::netns::{Lab, wait_for};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Sender host.
pub const H1: usize = 0;
/// First router.
pub const R1: usize = 1;
/// Middle router.
pub const R2: usize = 2;
/// Last router.
pub const R3: usize = 3;
/// Receiver host.
pub const H2: usize = 4;
/// Node names, by index.
pub const NODES: [&str; 5] = ["h1", "r1", "r2", "r3", "h2"];

/// The namespaces, links, addresses and routes of the chain; IPv6 too with `ipv6`.
pub fn topology(ipv6: bool) -> anyhow::Result<Lab> {
    let lab = Lab::new(&NODES)?;
    for l in 0..4 {
        let n = l + 1;
        lab.link(
            (l, "e0", &format!("10.91.{n}.1/24")),
            (l + 1, "w0", &format!("10.91.{n}.2/24")),
        )?;
        if ipv6 {
            for (i, dev, host) in [(l, "e0", 1), (l + 1, "w0", 2)] {
                let addr = format!("fd00:91:{n}::{host}/64");
                lab.exec_ok(i, &["ip", "addr", "add", &addr, "dev", dev, "nodad"])?;
            }
        }
    }
    for (node, west) in [(H1, false), (H2, true)] {
        // H1 routes through R1 (east of link 1), H2 through R3 (west of link 4).
        let (v4, v6) = if west {
            ("10.91.4.1", "fd00:91:4::1")
        } else {
            ("10.91.1.2", "fd00:91:1::2")
        };
        lab.exec_ok(node, &["ip", "route", "add", "default", "via", v4])?;
        if ipv6 {
            lab.exec_ok(node, &["ip", "-6", "route", "add", "default", "via", v6])?;
        }
    }
    for r in [R1, R2, R3] {
        lab.forward(r)?;
        if ipv6 {
            lab.exec_ok(r, &["sysctl", "-qw", "net.ipv6.conf.all.forwarding=1"])?;
        }
        for net in 1..=4 {
            // Router r sits between link r (west) and link r + 1 (east).
            let (link, host) = if net < r {
                (r, 1)
            } else if net > r + 1 {
                (r + 1, 2)
            } else {
                continue;
            };
            let (v4_net, v4_via) = (format!("10.91.{net}.0/24"), format!("10.91.{link}.{host}"));
            lab.exec_ok(r, &["ip", "route", "add", &v4_net, "via", &v4_via])?;
            if ipv6 {
                let (v6_net, v6_via) = (
                    format!("fd00:91:{net}::/64"),
                    format!("fd00:91:{link}::{host}"),
                );
                lab.exec_ok(r, &["ip", "-6", "route", "add", &v6_net, "via", &v6_via])?;
            }
        }
    }
    Ok(lab)
}

/// The management socket of node `i`'s daemon (reachable from any namespace: it is a file).
pub fn socket(lab: &Lab, i: usize) -> PathBuf {
    lab.path(&format!("{}.sock", NODES[i]))
}

/// Start `pathwise daemon` (the binary at `bin`) on every node with a configuration in
/// `configs` (written to `<node>.toml` in the lab), and wait until each serves its socket.
pub fn start_daemons(
    lab: &mut Lab,
    bin: &Path,
    configs: &[Option<String>; 5],
) -> anyhow::Result<()> {
    for (i, node) in NODES.iter().enumerate() {
        let Some(cfg) = &configs[i] else { continue };
        let path = lab.path(&format!("{node}.toml"));
        std::fs::write(&path, cfg)?;
        lab.spawn(
            node,
            i,
            &[
                &bin.to_string_lossy(),
                "daemon",
                "--config",
                &path.to_string_lossy(),
            ],
        )?;
    }
    for (i, node) in NODES.iter().enumerate() {
        if configs[i].is_none() {
            continue;
        }
        let sock = socket(lab, i);
        wait_for(Duration::from_secs(10), &format!("{node}'s daemon"), || {
            sock.exists().then_some(())
        })
        .map_err(|e| anyhow::anyhow!("{e}; log: {}", lab.log(node)))?;
    }
    Ok(())
}
