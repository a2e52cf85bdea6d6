//! Network-namespace harness for the root-only tests.
//!
//! How the test process enters namespaces: namespaces are created with `ip netns add` (so they
//! have a name under /run/netns and can be inspected or cleaned by hand), configured with
//! `ip -n NAME ...`, and code that must run *inside* one (opening a socket, writing a sysctl,
//! looking up an ifindex) runs on a short-lived thread that first calls `setns(CLONE_NEWNET)`.
//! A socket stays in the namespace it was created in, so the test's main thread then uses it
//! directly. Only that helper thread changes namespace; the process and the test harness's
//! other threads never do, so tests run in parallel safely.
//!
//! Every namespace is removed by a `Drop` guard (also on panic), which takes its veth ends with it.
#![allow(dead_code)]

use std::fs::File;
use std::io::Write;
use std::net::IpAddr;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use nix::sched::{CloneFlags, setns};
use pathwise_core::io::IfIndex;
use pathwise_net::RawSocket;

/// One named network namespace, deleted on drop.
#[derive(Debug)]
pub struct Netns {
    pub name: String,
}

impl Netns {
    fn create(name: String) -> Result<Netns, String> {
        let out = Command::new("ip")
            .args(["netns", "add", &name])
            .output()
            .map_err(|e| format!("cannot run `ip`: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "`ip netns add {name}` failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Netns { name })
    }

    /// A namespace of its own, named after `tag`.
    pub fn single(tag: &str) -> Netns {
        Netns::create(unique(tag, "n")).expect("create netns")
    }

    /// `ip -n NAME args...`, panicking with stderr on failure.
    pub fn ip(&self, args: &[&str]) {
        let out = Command::new("ip")
            .arg("-n")
            .arg(&self.name)
            .args(args)
            .output()
            .expect("run ip");
        assert!(
            out.status.success(),
            "ip -n {} {}: {}",
            self.name,
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Runs `f` on a thread inside this namespace.
    pub fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        let path = format!("/run/netns/{}", self.name);
        std::thread::scope(|s| {
            s.spawn(|| {
                let file = File::open(&path).expect("open netns handle");
                setns(&file, CloneFlags::CLONE_NEWNET).expect("setns");
                f()
            })
            .join()
            .expect("netns thread panicked")
        })
    }

    /// Writes a sysctl inside this namespace (`net.ipv4.ip_forward` style key).
    pub fn sysctl(&self, key: &str, value: &str) {
        let path = format!("/proc/sys/{}", key.replace('.', "/"));
        self.run(|| std::fs::write(&path, value))
            .unwrap_or_else(|e| panic!("sysctl {key}: {e}"));
    }

    /// `ip -n NAME args...` output.
    pub fn ip_output(&self, args: &[&str]) -> String {
        let out = Command::new("ip")
            .arg("-n")
            .arg(&self.name)
            .args(args)
            .output()
            .expect("run ip");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits (bounded) until IPv6 is fully up on `dev`: the kernel adds the link-local address
    /// and the multicast route only once it has seen carrier, which linkwatch reports with a
    /// delay of up to a second after `ip link set up`.
    pub fn wait_ipv6_ready(&self, dev: &str) {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let routes = self.ip_output(&["-6", "route", "show", "table", "local", "dev", dev]);
            let addrs = self.ip_output(&["-6", "addr", "show", "dev", dev, "scope", "link"]);
            if routes.contains("ff00::/8") && addrs.contains("fe80") && !addrs.contains("tentative")
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{}: IPv6 not up on {dev} after 5 s",
                self.name
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn ifindex(&self, name: &str) -> IfIndex {
        IfIndex(
            self.run(|| nix::net::if_::if_nametoindex(name))
                .expect("if_nametoindex"),
        )
    }

    pub fn raw(&self, config: pathwise_net::RawConfig) -> RawSocket {
        self.run(|| RawSocket::open(config))
            .expect("open raw socket")
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// Names unique to this process and call.
fn unique(tag: &str, role: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("pwnet-{}-{n}-{tag}-{role}", std::process::id())
}

/// Whether the namespace tests can run here; prints why not (and panics instead when
/// `PATHWISE_REQUIRE_NETNS=1`, so CI cannot silently skip them).
pub fn available(test: &str) -> bool {
    let reason = if !nix::unistd::geteuid().is_root() {
        Some("not root".to_string())
    } else {
        // The probe namespace is dropped (deleted) at once.
        Netns::create(unique("probe", "p")).err()
    };
    match reason {
        None => true,
        Some(why) => {
            if std::env::var_os("PATHWISE_REQUIRE_NETNS").is_some_and(|v| v == "1") {
                panic!(
                    "{test}: network-namespace test cannot run ({why}) and PATHWISE_REQUIRE_NETNS=1"
                );
            }
            // Written to stderr directly: the test harness captures `eprintln!` of passing tests.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: needs root and network namespaces (ip netns) ({why}); \
                 set PATHWISE_REQUIRE_NETNS=1 to make this a failure"
            );
            false
        }
    }
}

/// Addresses of the chain, IPv4 and IPv6 (private and ULA ranges, inside the namespaces only).
pub const A4: &str = "10.91.1.1";
pub const RA4: &str = "10.91.1.2";
pub const RB4: &str = "10.91.2.2";
pub const B4: &str = "10.91.2.1";
pub const A6: &str = "fd91:1::1";
pub const RA6: &str = "fd91:1::2";
pub const RB6: &str = "fd91:2::2";
pub const B6: &str = "fd91:2::1";

pub fn addr(s: &str) -> IpAddr {
    s.parse().expect("address literal")
}

/// A — R — B: veth `a0`–`ra` and `rb`–`b0`, IPv4 and IPv6 forwarding on in R, default routes
/// via R in A and B, IPv6 DAD off so addresses are usable at once.
#[derive(Debug)]
pub struct Chain {
    pub a: Netns,
    pub r: Netns,
    pub b: Netns,
    /// A's interface towards R.
    pub a_if: IfIndex,
    /// R's interface towards A.
    pub ra_if: IfIndex,
    /// R's interface towards B.
    pub rb_if: IfIndex,
    /// B's interface towards R.
    pub b_if: IfIndex,
}

impl Chain {
    pub fn new(tag: &str) -> Chain {
        let mk = |role| Netns::create(unique(tag, role)).expect("create netns");
        let (a, r, b) = (mk("a"), mk("r"), mk("b"));
        for ns in [&a, &r, &b] {
            ns.sysctl("net.ipv6.conf.all.accept_dad", "0");
            ns.sysctl("net.ipv6.conf.default.accept_dad", "0");
            ns.ip(&["link", "set", "lo", "up"]);
        }
        a.ip(&[
            "link", "add", "a0", "type", "veth", "peer", "name", "ra", "netns", &r.name,
        ]);
        b.ip(&[
            "link", "add", "b0", "type", "veth", "peer", "name", "rb", "netns", &r.name,
        ]);
        let plan: [(&Netns, &str, &str, &str); 4] = [
            (&a, "a0", A4, A6),
            (&r, "ra", RA4, RA6),
            (&r, "rb", RB4, RB6),
            (&b, "b0", B4, B6),
        ];
        for (ns, dev, v4, v6) in plan {
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
        a.ip(&["route", "add", "default", "via", RA4]);
        a.ip(&["-6", "route", "add", "default", "via", RA6]);
        b.ip(&["route", "add", "default", "via", RB4]);
        b.ip(&["-6", "route", "add", "default", "via", RB6]);
        r.sysctl("net.ipv4.ip_forward", "1");
        r.sysctl("net.ipv6.conf.all.forwarding", "1");
        for (ns, dev, _, _) in plan {
            ns.wait_ipv6_ready(dev);
        }
        Chain {
            a_if: a.ifindex("a0"),
            ra_if: r.ifindex("ra"),
            rb_if: r.ifindex("rb"),
            b_if: b.ifindex("b0"),
            a,
            r,
            b,
        }
    }
}

/// An owned copy of a received datagram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Got {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub ifindex: IfIndex,
    /// Whether the Router Alert option was present (its value is checked where it matters).
    pub router_alert: bool,
    pub ttl: u8,
    pub payload: Vec<u8>,
}

/// Collects datagrams whose payload starts with `marker` until `want` of them arrived or
/// `timeout` passed.
pub fn collect(sock: &mut RawSocket, marker: &[u8], want: usize, timeout: Duration) -> Vec<Got> {
    let deadline = Instant::now() + timeout;
    let mut got = Vec::new();
    loop {
        for r in sock.recv_batch().expect("recv_batch") {
            if r.payload.starts_with(marker) {
                got.push(Got {
                    src: r.src,
                    dst: r.dst,
                    ifindex: r.ifindex,
                    router_alert: r.router_alert.is_some(),
                    ttl: r.ttl,
                    payload: r.payload.to_vec(),
                });
            }
        }
        if got.len() >= want || Instant::now() >= deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// How long to wait for something that must arrive, and for something that must not.
pub const ARRIVES: Duration = Duration::from_secs(3);
pub const ABSENT: Duration = Duration::from_millis(300);
