//! RSVP reservations as Linux traffic control (issue 3, seed 001 §V.F.1): each admitted
//! reservation becomes an HTB class with the reserved rate on the outgoing interface, and u32
//! filters steer the flow's packets (by SESSION and FILTER_SPEC) into it.
//!
//! Layout per managed interface, all under a root qdisc pathwise owns (handle `5057:`, "PW"):
//!
//! ```text
//! 5057:      root htb, unclassified traffic to 5057:fffe
//! 5057:1     parent class, rate = ceil = link bandwidth
//! 5057:fffe  best effort: rate = link − reservable, ceil = link
//! 5057:N     one per reservation: rate = reserved, ceil = link (it may borrow when idle);
//!            its filters sit at u32 priority N, so a reservation's filters go with one command
//! ```
//!
//! Admission is decided here, against the configured reservable bandwidth, before any command
//! runs; a `tc` command that fails afterwards is logged and counted, not turned into an RSVP
//! error (the reservation is accounted either way, so signaling and accounting stay consistent).
//! Starting up removes a root qdisc with our handle left by a previous run, and dropping the
//! [`HtbTrafficControl`] removes ours: a restart leaves nothing behind.

use pathwise_core::arena::{Arena, Id};
use pathwise_core::io::IfIndex;
use pathwise_rsvp::engine::{AdmissionError, TcHandle, TcRequest, TrafficControl};
use pathwise_rsvp::wire::{FilterSpec, FlowSpec, HopCharacteristics};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// The root qdisc handle pathwise owns on a managed interface ("PW").
pub const ROOT: u16 = 0x5057;
const PARENT_CLASS: u16 = 1;
const BEST_EFFORT: u16 = 0xfffe;

/// Runs one `tc` command line (its arguments after `tc`).
pub trait TcRunner {
    /// Run it; `Err` carries tc's complaint.
    fn run(&mut self, args: &[String]) -> Result<(), String>;
}

/// Runs the `tc` binary from iproute2.
#[derive(Debug, Default)]
pub struct Command;

impl TcRunner for Command {
    fn run(&mut self, args: &[String]) -> Result<(), String> {
        let out = std::process::Command::new("tc")
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

/// A managed interface.
#[derive(Clone, Debug, PartialEq)]
pub struct HtbInterface {
    /// Kernel name (for `tc … dev NAME`).
    pub name: String,
    /// Link bandwidth, bit/s.
    pub bandwidth_bps: u64,
    /// What reservations may take, bit/s.
    pub reservable_bps: u64,
    /// MTU, bytes.
    pub mtu: u32,
    /// Link latency, microseconds (for ADSPEC).
    pub latency_us: u32,
}

#[derive(Debug)]
struct Installed {
    ifindex: IfIndex,
    minor: u16,
    rate_bps: u64,
}

#[derive(Debug)]
struct Iface {
    cfg: HtbInterface,
    used_bps: u64,
    free_minors: Vec<u16>,
    next_minor: u16,
}

/// Reservations as HTB classes (see the module doc).
#[derive(Debug)]
pub struct HtbTrafficControl<R: TcRunner = Command> {
    runner: R,
    ifaces: BTreeMap<IfIndex, Iface>,
    installed: Arena<Installed>,
    /// `tc` commands that failed.
    pub failures: u64,
    /// The last failure, for `show`.
    pub last_failure: Option<String>,
}

fn dev(args: &mut Vec<String>, words: &[&str]) {
    args.extend(words.iter().map(|w| (*w).to_string()));
}

fn class_id(minor: u16) -> String {
    format!("{ROOT:x}:{minor:x}")
}

fn rate(bps: u64) -> String {
    format!("{}bit", bps.max(8))
}

/// The `match` clauses of a u32 filter selecting one sender's packets of a session.
fn u32_matches(dest: IpAddr, protocol: u8, dst_port: u16, sender: &FilterSpec) -> Vec<String> {
    let mut m: Vec<String> = Vec::new();
    let mut push = |w: &[String]| m.extend_from_slice(w);
    let s = |x: &str| x.to_string();
    match dest {
        IpAddr::V4(d) => {
            push(&[s("match"), s("ip"), s("dst"), format!("{d}/32")]);
            push(&[
                s("match"),
                s("ip"),
                s("protocol"),
                protocol.to_string(),
                s("0xff"),
            ]);
            if dst_port != 0 {
                push(&[
                    s("match"),
                    s("ip"),
                    s("dport"),
                    dst_port.to_string(),
                    s("0xffff"),
                ]);
            }
        }
        IpAddr::V6(d) => {
            push(&[s("match"), s("ip6"), s("dst"), format!("{d}/128")]);
            push(&[
                s("match"),
                s("ip6"),
                s("protocol"),
                protocol.to_string(),
                s("0xff"),
            ]);
            if dst_port != 0 {
                push(&[
                    s("match"),
                    s("ip6"),
                    s("dport"),
                    dst_port.to_string(),
                    s("0xffff"),
                ]);
            }
        }
    }
    match *sender {
        FilterSpec::V4 { src, src_port } => {
            push(&[s("match"), s("ip"), s("src"), format!("{src}/32")]);
            if src_port != 0 {
                push(&[
                    s("match"),
                    s("ip"),
                    s("sport"),
                    src_port.to_string(),
                    s("0xffff"),
                ]);
            }
        }
        FilterSpec::V6 { src, src_port } => {
            push(&[s("match"), s("ip6"), s("src"), format!("{src}/128")]);
            if src_port != 0 {
                push(&[
                    s("match"),
                    s("ip6"),
                    s("sport"),
                    src_port.to_string(),
                    s("0xffff"),
                ]);
            }
        }
        FilterSpec::V6FlowLabel { src, flow_label } => {
            push(&[s("match"), s("ip6"), s("src"), format!("{src}/128")]);
            if flow_label != 0 {
                push(&[
                    s("match"),
                    s("ip6"),
                    s("flowlabel"),
                    format!("{flow_label:#x}"),
                    s("0xfffff"),
                ]);
            }
        }
    }
    m
}

fn reserved_bps(f: &FlowSpec) -> u64 {
    (f64::from(f.reserved_rate()) * 8.0).ceil() as u64
}

fn max_packet(f: &FlowSpec) -> u32 {
    match f {
        FlowSpec::ControlledLoad(t) => t.max_packet,
        FlowSpec::Guaranteed { tspec, .. } => tspec.max_packet,
    }
}

impl<R: TcRunner> HtbTrafficControl<R> {
    /// Take over `interfaces`: remove a root qdisc a previous run left, install ours.
    pub fn new(runner: R, interfaces: impl IntoIterator<Item = (IfIndex, HtbInterface)>) -> Self {
        let mut tc = HtbTrafficControl {
            runner,
            ifaces: BTreeMap::new(),
            installed: Arena::new(),
            failures: 0,
            last_failure: None,
        };
        for (ifindex, cfg) in interfaces {
            tc.setup(&cfg);
            tc.ifaces.insert(
                ifindex,
                Iface {
                    cfg,
                    used_bps: 0,
                    free_minors: Vec::new(),
                    next_minor: 2,
                },
            );
        }
        tc
    }

    fn exec(&mut self, args: Vec<String>) {
        if let Err(e) = self.runner.run(&args) {
            self.failures += 1;
            tracing::warn!(command = %args.join(" "), error = %e, "tc command failed");
            self.last_failure = Some(e);
        }
    }

    fn setup(&mut self, i: &HtbInterface) {
        let name = i.name.as_str();
        // Whatever root qdisc a crashed run of ours left goes first; a foreign one is replaced
        // too (pathwise manages the interface), which `replace` does atomically.
        let mut a = Vec::new();
        dev(
            &mut a,
            &[
                "qdisc",
                "replace",
                "dev",
                name,
                "root",
                "handle",
                &format!("{ROOT:x}:"),
                "htb",
                "default",
                &format!("{BEST_EFFORT:x}"),
            ],
        );
        self.exec(a);
        let link = rate(i.bandwidth_bps);
        let mut a = Vec::new();
        dev(
            &mut a,
            &[
                "class",
                "replace",
                "dev",
                name,
                "parent",
                &format!("{ROOT:x}:"),
                "classid",
                &class_id(PARENT_CLASS),
                "htb",
                "rate",
                &link,
                "ceil",
                &link,
            ],
        );
        self.exec(a);
        let best = rate(i.bandwidth_bps.saturating_sub(i.reservable_bps));
        let mut a = Vec::new();
        dev(
            &mut a,
            &[
                "class",
                "replace",
                "dev",
                name,
                "parent",
                &class_id(PARENT_CLASS),
                "classid",
                &class_id(BEST_EFFORT),
                "htb",
                "rate",
                &best,
                "ceil",
                &link,
            ],
        );
        self.exec(a);
    }

    fn filters(&mut self, name: &str, minor: u16, req: &TcRequest<'_>) {
        let proto = if req.session.dest.is_ipv4() {
            "ip"
        } else {
            "ipv6"
        };
        for sender in req.filters {
            let mut a = Vec::new();
            dev(
                &mut a,
                &[
                    "filter",
                    "add",
                    "dev",
                    name,
                    "parent",
                    &format!("{ROOT:x}:"),
                    "protocol",
                    proto,
                    "prio",
                    &minor.to_string(),
                    "u32",
                ],
            );
            a.extend(u32_matches(
                req.session.dest,
                req.session.protocol_id,
                req.session.dst_port,
                sender,
            ));
            dev(&mut a, &["flowid", &class_id(minor)]);
            self.exec(a);
        }
    }

    fn del_filters(&mut self, name: &str, minor: u16) {
        let mut a = Vec::new();
        dev(
            &mut a,
            &[
                "filter",
                "del",
                "dev",
                name,
                "parent",
                &format!("{ROOT:x}:"),
                "prio",
                &minor.to_string(),
            ],
        );
        self.exec(a);
    }

    fn admit(
        &self,
        ifindex: IfIndex,
        req: &TcRequest<'_>,
        release_bps: u64,
    ) -> Result<u64, AdmissionError> {
        let i = self
            .ifaces
            .get(&ifindex)
            .ok_or(AdmissionError::UnknownInterface)?;
        if max_packet(req.flowspec) > i.cfg.mtu {
            return Err(AdmissionError::MtuTooBig);
        }
        let want = reserved_bps(req.flowspec);
        if i.used_bps - release_bps + want > i.cfg.reservable_bps {
            return Err(AdmissionError::BandwidthUnavailable);
        }
        Ok(want)
    }

    fn find(&self, h: TcHandle) -> Option<Id<Installed>> {
        usize::try_from(h.0)
            .ok()
            .and_then(|i| self.installed.id_at(i))
    }

    /// Reserved bandwidth on an interface, bit/s.
    pub fn reserved_bps(&self, ifindex: IfIndex) -> u64 {
        self.ifaces.get(&ifindex).map_or(0, |i| i.used_bps)
    }

    /// Installed reservations.
    pub fn len(&self) -> usize {
        self.installed.len()
    }

    /// Whether none is installed.
    pub fn is_empty(&self) -> bool {
        self.installed.is_empty()
    }

    /// Remove everything pathwise installed (the root qdiscs, and with them every class and
    /// filter).
    pub fn teardown(&mut self) {
        let names: Vec<String> = self.ifaces.values().map(|i| i.cfg.name.clone()).collect();
        for name in names {
            let mut a = Vec::new();
            dev(
                &mut a,
                &[
                    "qdisc",
                    "del",
                    "dev",
                    &name,
                    "root",
                    "handle",
                    &format!("{ROOT:x}:"),
                ],
            );
            self.exec(a);
        }
        self.ifaces.clear();
        self.installed = Arena::new();
    }
}

impl<R: TcRunner> TrafficControl for HtbTrafficControl<R> {
    fn reserve(
        &mut self,
        ifindex: IfIndex,
        req: TcRequest<'_>,
    ) -> Result<TcHandle, AdmissionError> {
        let bps = self.admit(ifindex, &req, 0)?;
        let i = self
            .ifaces
            .get_mut(&ifindex)
            .ok_or(AdmissionError::UnknownInterface)?;
        let minor = match i.free_minors.pop() {
            Some(m) => m,
            // Minor numbers 2..0xfffd; a class per reservation on one interface.
            None if i.next_minor < BEST_EFFORT => {
                i.next_minor += 1;
                i.next_minor - 1
            }
            None => return Err(AdmissionError::BandwidthUnavailable),
        };
        i.used_bps += bps;
        let (name, link) = (i.cfg.name.clone(), rate(i.cfg.bandwidth_bps));
        let mut a = Vec::new();
        dev(
            &mut a,
            &[
                "class",
                "replace",
                "dev",
                &name,
                "parent",
                &class_id(PARENT_CLASS),
                "classid",
                &class_id(minor),
                "htb",
                "rate",
                &rate(bps),
                "ceil",
                &link,
            ],
        );
        self.exec(a);
        self.filters(&name, minor, &req);
        Ok(TcHandle(
            self.installed
                .insert(Installed {
                    ifindex,
                    minor,
                    rate_bps: bps,
                })
                .index() as u64,
        ))
    }

    fn modify(&mut self, handle: TcHandle, req: TcRequest<'_>) -> Result<(), AdmissionError> {
        let id = self.find(handle).ok_or(AdmissionError::UnknownInterface)?;
        let Installed {
            ifindex,
            minor,
            rate_bps,
        } = self.installed[id];
        let bps = self.admit(ifindex, &req, rate_bps)?;
        let i = self
            .ifaces
            .get_mut(&ifindex)
            .ok_or(AdmissionError::UnknownInterface)?;
        i.used_bps = i.used_bps - rate_bps + bps;
        let (name, link) = (i.cfg.name.clone(), rate(i.cfg.bandwidth_bps));
        self.installed[id].rate_bps = bps;
        let mut a = Vec::new();
        dev(
            &mut a,
            &[
                "class",
                "change",
                "dev",
                &name,
                "parent",
                &class_id(PARENT_CLASS),
                "classid",
                &class_id(minor),
                "htb",
                "rate",
                &rate(bps),
                "ceil",
                &link,
            ],
        );
        self.exec(a);
        self.del_filters(&name, minor);
        self.filters(&name, minor, &req);
        Ok(())
    }

    fn release(&mut self, handle: TcHandle) {
        let Some(id) = self.find(handle) else { return };
        let Installed {
            ifindex,
            minor,
            rate_bps,
        } = self.installed.remove(id);
        let Some(i) = self.ifaces.get_mut(&ifindex) else {
            return;
        };
        i.used_bps = i.used_bps.saturating_sub(rate_bps);
        i.free_minors.push(minor);
        let name = i.cfg.name.clone();
        self.del_filters(&name, minor);
        let mut a = Vec::new();
        dev(
            &mut a,
            &["class", "del", "dev", &name, "classid", &class_id(minor)],
        );
        self.exec(a);
    }

    fn hop_characteristics(&self, ifindex: IfIndex) -> HopCharacteristics {
        let i = self.ifaces.get(&ifindex).map(|i| &i.cfg);
        let (bps, mtu, latency_us) = i.map_or((u64::MAX, 1500, 0), |c| {
            (c.bandwidth_bps, c.mtu, c.latency_us)
        });
        HopCharacteristics {
            bandwidth: (bps as f64 / 8.0) as f32,
            latency_us,
            mtu,
            c: mtu,
            d: latency_us,
        }
    }
}

impl<R: TcRunner> Drop for HtbTrafficControl<R> {
    fn drop(&mut self) {
        self.teardown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathwise_rsvp::wire::{Session, TokenBucket};
    use std::cell::RefCell;
    use std::rc::Rc;

    #[derive(Clone, Default)]
    struct Record(Rc<RefCell<Vec<String>>>);

    impl TcRunner for Record {
        fn run(&mut self, args: &[String]) -> Result<(), String> {
            self.0.borrow_mut().push(args.join(" "));
            Ok(())
        }
    }

    fn cl(kbps: f32) -> FlowSpec {
        FlowSpec::ControlledLoad(TokenBucket {
            rate: kbps * 125.0,
            bucket: 1000.0,
            peak: f32::INFINITY,
            min_policed: 64,
            max_packet: 1500,
        })
    }

    #[test]
    fn reservations_become_classes_and_filters_and_go_away() {
        let rec = Record::default();
        let iface = HtbInterface {
            name: "veth0".into(),
            bandwidth_bps: 10_000_000,
            reservable_bps: 8_000_000,
            mtu: 1500,
            latency_us: 100,
        };
        let mut tc = HtbTrafficControl::new(rec.clone(), [(IfIndex(3), iface)]);
        let session = Session {
            dest: "10.0.4.2".parse().unwrap(),
            protocol_id: 17,
            flags: 0,
            dst_port: 5001,
        };
        let sender = FilterSpec::V4 {
            src: "10.0.0.1".parse().unwrap(),
            src_port: 0,
        };
        let h = tc
            .reserve(
                IfIndex(3),
                TcRequest {
                    session: &session,
                    flowspec: &cl(4000.0),
                    filters: &[sender],
                },
            )
            .unwrap();
        assert_eq!(tc.reserved_bps(IfIndex(3)), 4_000_000);
        assert_eq!(
            tc.reserve(
                IfIndex(3),
                TcRequest {
                    session: &session,
                    flowspec: &cl(5000.0),
                    filters: &[sender]
                }
            ),
            Err(AdmissionError::BandwidthUnavailable)
        );
        tc.release(h);
        drop(tc);
        let cmds = rec.0.borrow().clone();
        assert_eq!(
            cmds[0],
            "qdisc replace dev veth0 root handle 5057: htb default fffe"
        );
        assert_eq!(
            cmds[1],
            "class replace dev veth0 parent 5057: classid 5057:1 htb rate 10000000bit ceil 10000000bit"
        );
        assert_eq!(
            cmds[2],
            "class replace dev veth0 parent 5057:1 classid 5057:fffe htb rate 2000000bit ceil 10000000bit"
        );
        assert_eq!(
            cmds[3],
            "class replace dev veth0 parent 5057:1 classid 5057:2 htb rate 4000000bit ceil 10000000bit"
        );
        assert_eq!(
            cmds[4],
            "filter add dev veth0 parent 5057: protocol ip prio 2 u32 match ip dst 10.0.4.2/32 match ip protocol 17 0xff match ip dport 5001 0xffff match ip src 10.0.0.1/32 flowid 5057:2"
        );
        assert_eq!(cmds[5], "filter del dev veth0 parent 5057: prio 2");
        assert_eq!(cmds[6], "class del dev veth0 classid 5057:2");
        assert_eq!(cmds[7], "qdisc del dev veth0 root handle 5057:");
        assert_eq!(cmds.len(), 8);
    }
}
