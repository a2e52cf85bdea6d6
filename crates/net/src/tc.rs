//! RSVP reservations as Linux traffic control (issue 3, seed 001 §V.F.1): each admitted
//! reservation becomes an HTB class with the reserved rate on the outgoing interface, and u32
//! filters steer the flow's packets (by SESSION and FILTER_SPEC) into it.
//!
//! Layout per managed interface, all under a root qdisc pathwise owns (handle `5057:`, "PW"):
//!
//! ```text
//! 5057:      root htb, unclassified traffic to 5057:fffe
//! 5057:1     parent class, rate = ceil = link bandwidth
//! 5057:fffd  signaling (IP protocol 46; UDP to or from GIST's port 270, which carries the QoS
//!            NSLP; TCP to or from GIST's messaging-association ports, given by the daemon;
//!            IPv4 UDP with a Router Alert, IPv6 with a hop-by-hop header; filter
//!            priority 1 for IPv4, 2 for IPv6): 1% of the link, at least 64 kbit/s,
//!            HTB priority 0 — a flood cannot starve the refreshes that keep reservations up
//! 5057:fffe  best effort: rate = link − reservable − signaling, ceil = link; a pfifo of about
//!            100 ms at link rate
//! 5057:N     one per reservation: rate = reserved, ceil = link (it may borrow when idle);
//!            its filters sit at u32 priority 10 + N, so a reservation's filters go with one
//!            deletion
//! ```
//!
//! This module decides *what* (admission, handles, the layout) as [`TcOp`]s; a [`TcBackend`]
//! does it: [`Netlink`] sends rtnetlink messages (the daemon's `traffic_control = "htb"`), a
//! [`TcRunner`] runs one `tc` command line per operation (`"htb-tc"`, and tests that record the
//! lines).
//!
//! Admission is decided here, against the configured reservable bandwidth, before any operation
//! is sent; one that fails afterwards is logged and counted, not turned into an RSVP error (the
//! reservation is accounted either way, so signaling and accounting stay consistent).
//! Starting up removes a root qdisc with our handle left by a previous run, and dropping the
//! [`HtbTrafficControl`] removes ours: a restart leaves nothing behind.

use pathwise_core::arena::{Arena, Id};
use pathwise_core::io::IfIndex;
use pathwise_core::tc::{
    AdmissionError, FlowClassifier, HopCharacteristics, TcHandle, TcRequest, TrafficControl,
};
use std::collections::BTreeMap;

/// The root qdisc handle pathwise owns on a managed interface ("PW").
pub const ROOT: u16 = 0x5057;
const PARENT_CLASS: u16 = 1;
const CONTROL: u16 = 0xfffd;
const BEST_EFFORT: u16 = 0xfffe;
/// GIST's UDP port (RFC 5971 §5.2.1), whose datagrams are signalling too.
const GIST_PORT: u16 = 270;

mod command;
mod netlink;

pub use command::{Command, TcRunner};
pub use netlink::Netlink;

/// Which interface an operation is for: the kernel's ifindex (netlink) and name (`tc`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dev {
    /// Kernel ifindex.
    pub ifindex: IfIndex,
    /// Kernel name.
    pub name: String,
}

/// How a new class or filter meets an existing one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Create; fail if it exists (`tc … add`).
    Add,
    /// Create or replace (`tc … replace`).
    Replace,
    /// Change an existing one (`tc … change`).
    Change,
}

/// One u32 match, in the words of `tc`'s `match ip …`/`match ip6 …` (the family is the
/// filter's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum U32Match {
    /// Source address, host prefix.
    Src(std::net::IpAddr),
    /// Destination address, host prefix.
    Dst(std::net::IpAddr),
    /// IP protocol (IPv6: next header).
    Protocol(u8),
    /// Source port, right after a 20-byte IPv4 header or the IPv6 header.
    Sport(u16),
    /// Destination port, likewise.
    Dport(u16),
    /// IPv6 flow label (20 bits).
    FlowLabel(u32),
    /// One byte at an offset from the network header (`match u8 V 0xff at OFF`).
    U8 {
        /// The byte.
        value: u8,
        /// Its offset.
        at: u16,
    },
}

/// One traffic-control operation: what [`HtbTrafficControl`] decides; a [`TcBackend`] does it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TcOp {
    /// Delete the root qdisc with handle [`ROOT`] (and everything under it).
    DelRoot(Dev),
    /// Create or replace the root HTB qdisc [`ROOT`]`:`, unclassified traffic to `default`.
    HtbRoot {
        /// Interface.
        dev: Dev,
        /// Minor of the default class.
        default: u16,
    },
    /// An HTB class `ROOT:minor` under `ROOT:parent` (0: the qdisc itself).
    Class {
        /// Interface.
        dev: Dev,
        /// Add, replace or change.
        mode: Mode,
        /// Parent's minor (0 for the qdisc).
        parent: u16,
        /// This class's minor.
        minor: u16,
        /// Guaranteed rate, bit/s.
        rate_bps: u64,
        /// Ceiling, bit/s.
        ceil_bps: u64,
        /// HTB priority, if set.
        prio: Option<u32>,
    },
    /// A pfifo leaf qdisc `minor:` under class `ROOT:minor`.
    Pfifo {
        /// Interface.
        dev: Dev,
        /// The class's minor (also the qdisc's major).
        minor: u16,
        /// Queue length, packets.
        limit: u32,
    },
    /// A u32 filter under the root qdisc steering matching packets to class `ROOT:flowid`.
    Filter {
        /// Interface.
        dev: Dev,
        /// Add or replace.
        mode: Mode,
        /// IPv6 (`protocol ipv6`) or IPv4 (`protocol ip`).
        ipv6: bool,
        /// Filter priority.
        prio: u16,
        /// All must match.
        matches: Vec<U32Match>,
        /// The class's minor.
        flowid: u16,
    },
    /// Delete every filter at a priority under the root qdisc.
    DelFilters {
        /// Interface.
        dev: Dev,
        /// Filter priority.
        prio: u16,
    },
    /// Delete class `ROOT:minor`.
    DelClass {
        /// Interface.
        dev: Dev,
        /// Its minor.
        minor: u16,
    },
}

/// Performs [`TcOp`]s: over rtnetlink ([`Netlink`]) or by running `tc` ([`TcRunner`]).
pub trait TcBackend {
    /// Perform `ops` in order (a failing one does not stop the others) and return the failures
    /// as (index into `ops`, complaint).
    fn apply(&mut self, ops: &[TcOp]) -> Vec<(usize, String)>;
}

/// The backend `traffic_control` chose.
#[derive(Debug)]
pub enum Backend {
    /// rtnetlink messages (`traffic_control = "htb"`).
    Netlink(Netlink),
    /// `tc` command lines (`traffic_control = "htb-tc"`, for debugging and comparison).
    Command(Command),
}

impl TcBackend for Backend {
    fn apply(&mut self, ops: &[TcOp]) -> Vec<(usize, String)> {
        match self {
            Backend::Netlink(b) => b.apply(ops),
            Backend::Command(b) => b.apply(ops),
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
pub struct HtbTrafficControl<B: TcBackend = Backend> {
    backend: B,
    ifaces: BTreeMap<IfIndex, Iface>,
    installed: Arena<Installed>,
    /// Traffic-control operations that failed.
    pub failures: u64,
    /// The last failure, for `show`.
    pub last_failure: Option<String>,
    /// Whether reservations reach the kernel only at [`commit`](TrafficControl::commit).
    deferred: bool,
    /// What reservations, changes and releases decided since the last commit, in order.
    pending: Vec<TcOp>,
}

/// The u32 matches selecting one classifier's packets. A zero protocol, port or flow label, or
/// no source, adds no match (matches any).
fn u32_matches(c: &FlowClassifier) -> Vec<U32Match> {
    let mut m = vec![U32Match::Dst(c.dst)];
    if c.protocol != 0 {
        m.push(U32Match::Protocol(c.protocol));
    }
    if c.dst_port != 0 {
        m.push(U32Match::Dport(c.dst_port));
    }
    if let Some(src) = c.src {
        m.push(U32Match::Src(src));
    }
    if c.src_port != 0 {
        m.push(U32Match::Sport(c.src_port));
    }
    if c.flow_label != 0 {
        m.push(U32Match::FlowLabel(c.flow_label));
    }
    m
}

fn reserved_bps(req: &TcRequest<'_>) -> u64 {
    (f64::from(req.rate) * 8.0).ceil() as u64
}

impl<B: TcBackend> HtbTrafficControl<B> {
    /// Take over `interfaces`: remove a root qdisc a previous run left, install ours.
    pub fn new(backend: B, interfaces: impl IntoIterator<Item = (IfIndex, HtbInterface)>) -> Self {
        Self::with_signalling_tcp_ports(backend, interfaces, &[])
    }

    /// As [`new`](Self::new), with TCP segments to and from `tcp_ports` in the signalling
    /// class too: GIST's messaging associations (C-mode over TCP, and TLS), which carry the QoS
    /// NSLP once a session's messages go in C-mode (RFC 5971 §5.7).
    pub fn with_signalling_tcp_ports(
        backend: B,
        interfaces: impl IntoIterator<Item = (IfIndex, HtbInterface)>,
        tcp_ports: &[u16],
    ) -> Self {
        let mut tc = HtbTrafficControl {
            backend,
            ifaces: BTreeMap::new(),
            installed: Arena::new(),
            failures: 0,
            last_failure: None,
            deferred: false,
            pending: Vec::new(),
        };
        for (ifindex, cfg) in interfaces {
            tc.setup(ifindex, &cfg, tcp_ports);
            let iface = Iface {
                cfg,
                used_bps: 0,
                free_minors: Vec::new(),
                next_minor: 2,
            };
            tc.ifaces.insert(ifindex, iface);
        }
        tc
    }

    /// Hand reservations, changes and releases to the kernel only when the driver calls
    /// [`commit`](TrafficControl::commit), all of them in one batch, instead of one batch per
    /// call.
    ///
    /// Admission is decided in memory ([`reserved_bps`](Self::reserved_bps)), and a kernel
    /// refusal is counted, not undone, either way; so a driver that commits after sending what
    /// the engine decided forwards a Resv without waiting for the kernel to add its class and
    /// filters (tens of microseconds per reservation on a hop), and installs a burst's classes
    /// in one `sendmsg`. The data plane follows the signalling by the time the sends take.
    /// Turning it off commits what is pending.
    pub fn defer_until_commit(&mut self, on: bool) {
        if !on {
            self.flush_pending();
        }
        self.deferred = on;
    }

    /// Perform `ops` now, or keep them for the next commit when deferred.
    fn queue(&mut self, ops: Vec<TcOp>) {
        if self.deferred {
            self.pending.extend(ops);
        } else {
            self.exec(&ops);
        }
    }

    fn flush_pending(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let ops = std::mem::take(&mut self.pending);
        self.exec(&ops);
        // Keep the allocation for the next batch.
        self.pending = ops;
        self.pending.clear();
    }

    /// Perform `ops` (one batch), counting and logging each failure.
    fn exec(&mut self, ops: &[TcOp]) {
        for (i, e) in self.backend.apply(ops) {
            self.failures += 1;
            tracing::warn!(op = ?ops.get(i), error = %e, "traffic control operation failed");
            self.last_failure = Some(e);
        }
    }

    fn setup(&mut self, ifindex: IfIndex, i: &HtbInterface, tcp_ports: &[u16]) {
        let dev = Dev {
            ifindex,
            name: i.name.clone(),
        };
        let link = i.bandwidth_bps;
        // A root qdisc a killed run of ours left goes first, with every class and filter under
        // it (`replace` alone would keep them); there is usually none, so that failure is not
        // counted. A foreign root qdisc is replaced atomically: pathwise manages the interface.
        let _ = self.backend.apply(&[TcOp::DelRoot(dev.clone())]);
        let mut ops = vec![
            TcOp::HtbRoot {
                dev: dev.clone(),
                default: BEST_EFFORT,
            },
            TcOp::Class {
                dev: dev.clone(),
                mode: Mode::Replace,
                parent: 0,
                minor: PARENT_CLASS,
                rate_bps: link,
                ceil_bps: link,
                prio: None,
            },
        ];
        // Signaling keeps a small guaranteed share ahead of best effort, so a flood cannot
        // starve the refreshes that keep reservations alive.
        let control = link.div_ceil(100).max(64_000).min(link);
        let best = link
            .saturating_sub(i.reservable_bps)
            .saturating_sub(control);
        for (minor, rate_bps, prio) in [(CONTROL, control, 0), (BEST_EFFORT, best, 1)] {
            ops.push(TcOp::Class {
                dev: dev.clone(),
                mode: Mode::Replace,
                parent: PARENT_CLASS,
                minor,
                rate_bps,
                ceil_bps: link,
                prio: Some(prio),
            });
        }
        // Best effort queues about 100 ms at link rate rather than the device's 1000 packets
        // (1.2 s at 10 Mbit/s): bounded delay for unreserved traffic, and under overload its
        // drops are spread over its flows instead of queueing behind bursts.
        let limit = (link / 10 / 12_000).clamp(16, 10_000) as u32;
        ops.push(TcOp::Pfifo {
            dev: dev.clone(),
            minor: BEST_EFFORT,
            limit,
        });
        let signalling = |mode, ipv6, matches| TcOp::Filter {
            dev: dev.clone(),
            mode,
            ipv6,
            // One filter priority per protocol (the kernel refuses a second protocol at a
            // priority that has one): IPv4 at 1, IPv6 at 2.
            prio: if ipv6 { 2 } else { 1 },
            matches,
            flowid: CONTROL,
        };
        for ipv6 in [false, true] {
            ops.push(signalling(
                Mode::Replace,
                ipv6,
                vec![U32Match::Protocol(46)],
            ));
            // GIST's datagrams (to and from UDP 270, RFC 5971 §5.2.1) carry the QoS NSLP: its
            // refreshes get the same protection as RSVP's.
            for port in [U32Match::Dport(GIST_PORT), U32Match::Sport(GIST_PORT)] {
                ops.push(signalling(
                    Mode::Add,
                    ipv6,
                    vec![U32Match::Protocol(17), port],
                ));
            }
            // Its messaging associations (TCP, TLS over TCP) likewise.
            for &p in tcp_ports {
                for port in [U32Match::Dport(p), U32Match::Sport(p)] {
                    ops.push(signalling(
                        Mode::Add,
                        ipv6,
                        vec![U32Match::Protocol(6), port],
                    ));
                }
            }
        }
        // Datagrams with a Router Alert (RSVP's Path, GIST's Queries) have their transport
        // header further on than the matches above look: IPv4 with a 24-byte header (the
        // option, RFC 2113) carrying UDP, IPv6 with a hop-by-hop header (RFC 2711).
        ops.push(signalling(
            Mode::Add,
            false,
            vec![U32Match::U8 { value: 0x46, at: 0 }, U32Match::Protocol(17)],
        ));
        ops.push(signalling(
            Mode::Add,
            true,
            vec![U32Match::U8 { value: 0, at: 6 }],
        ));
        self.exec(&ops);
    }

    fn filters(ops: &mut Vec<TcOp>, dev: &Dev, minor: u16, req: &TcRequest<'_>) {
        for c in req.classifiers {
            // Reservation filters sit at priority 10 + minor, after the control filter (1).
            ops.push(TcOp::Filter {
                dev: dev.clone(),
                mode: Mode::Add,
                ipv6: !c.dst.is_ipv4(),
                prio: minor.saturating_add(10),
                matches: u32_matches(c),
                flowid: minor,
            });
        }
    }

    fn dev(&self, ifindex: IfIndex) -> Option<Dev> {
        self.ifaces.get(&ifindex).map(|i| Dev {
            ifindex,
            name: i.cfg.name.clone(),
        })
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
        if req.tspec.max_packet > i.cfg.mtu {
            return Err(AdmissionError::MtuTooBig);
        }
        let want = reserved_bps(req);
        if i.used_bps - release_bps + want > i.cfg.reservable_bps {
            return Err(AdmissionError::BandwidthUnavailable);
        }
        Ok(want)
    }

    fn find(&self, h: TcHandle) -> Option<Id<Installed>> {
        self.installed.id_at(h.slot())
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
        // Whatever was pending is under the root qdiscs removed here.
        self.pending.clear();
        let ops: Vec<TcOp> = self
            .ifaces
            .iter()
            .map(|(&ifindex, i)| {
                TcOp::DelRoot(Dev {
                    ifindex,
                    name: i.cfg.name.clone(),
                })
            })
            .collect();
        self.exec(&ops);
        self.ifaces.clear();
        self.installed = Arena::new();
    }
}

impl<B: TcBackend> TrafficControl for HtbTrafficControl<B> {
    fn reserve(
        &mut self,
        ifindex: IfIndex,
        req: TcRequest<'_>,
    ) -> Result<TcHandle, AdmissionError> {
        let bps = self.admit(ifindex, &req, 0)?;
        let dev = self.dev(ifindex).ok_or(AdmissionError::UnknownInterface)?;
        let i = self
            .ifaces
            .get_mut(&ifindex)
            .ok_or(AdmissionError::UnknownInterface)?;
        let minor = match i.free_minors.pop() {
            Some(m) => m,
            // Minor numbers 2..0xfffc: a class per reservation on one interface.
            None if i.next_minor < CONTROL => {
                i.next_minor += 1;
                i.next_minor - 1
            }
            None => return Err(AdmissionError::BandwidthUnavailable),
        };
        i.used_bps += bps;
        let mut ops = vec![TcOp::Class {
            dev: dev.clone(),
            mode: Mode::Replace,
            parent: PARENT_CLASS,
            minor,
            rate_bps: bps,
            ceil_bps: i.cfg.bandwidth_bps,
            prio: Some(1),
        }];
        Self::filters(&mut ops, &dev, minor, &req);
        self.queue(ops);
        Ok(TcHandle::of_slot(
            self.installed
                .insert(Installed {
                    ifindex,
                    minor,
                    rate_bps: bps,
                })
                .index(),
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
        let dev = self.dev(ifindex).ok_or(AdmissionError::UnknownInterface)?;
        let i = self
            .ifaces
            .get_mut(&ifindex)
            .ok_or(AdmissionError::UnknownInterface)?;
        i.used_bps = i.used_bps - rate_bps + bps;
        let link = i.cfg.bandwidth_bps;
        self.installed[id].rate_bps = bps;
        let mut ops = vec![
            TcOp::Class {
                dev: dev.clone(),
                mode: Mode::Change,
                parent: PARENT_CLASS,
                minor,
                rate_bps: bps,
                ceil_bps: link,
                prio: Some(1),
            },
            TcOp::DelFilters {
                dev: dev.clone(),
                prio: minor.saturating_add(10),
            },
        ];
        Self::filters(&mut ops, &dev, minor, &req);
        self.queue(ops);
        Ok(())
    }

    fn release(&mut self, handle: TcHandle) {
        let Some(id) = self.find(handle) else { return };
        let Installed {
            ifindex,
            minor,
            rate_bps,
        } = self.installed.remove(id);
        let Some(dev) = self.dev(ifindex) else { return };
        let Some(i) = self.ifaces.get_mut(&ifindex) else {
            return;
        };
        i.used_bps = i.used_bps.saturating_sub(rate_bps);
        i.free_minors.push(minor);
        self.queue(vec![
            TcOp::DelFilters {
                dev: dev.clone(),
                prio: minor.saturating_add(10),
            },
            TcOp::DelClass { dev, minor },
        ]);
    }

    fn commit(&mut self) {
        self.flush_pending();
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

impl<B: TcBackend> Drop for HtbTrafficControl<B> {
    fn drop(&mut self) {
        self.teardown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathwise_rsvp::engine::tc::{classifier, flowspec_request};
    use pathwise_rsvp::wire::{FilterSpec, FlowSpec, Session, TokenBucket};
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

    fn req<'a>(f: &FlowSpec, c: &'a [FlowClassifier]) -> TcRequest<'a> {
        let (tspec, rate) = flowspec_request(f);
        TcRequest {
            tspec,
            rate,
            classifiers: c,
        }
    }

    /// The interface every test reserves on: 10 Mbit/s, 8 reservable.
    fn veth0() -> HtbInterface {
        HtbInterface {
            name: "veth0".into(),
            bandwidth_bps: 10_000_000,
            reservable_bps: 8_000_000,
            mtu: 1500,
            latency_us: 100,
        }
    }

    /// A UDP session to 10.0.4.2 port 5001.
    fn udp_session() -> Session {
        Session {
            dest: "10.0.4.2".parse().unwrap(),
            protocol_id: 17,
            flags: 0,
            dst_port: 5001,
            extended_tunnel_id: None,
        }
    }

    #[test]
    fn reservations_become_classes_and_filters_and_go_away() {
        let rec = Record::default();
        let iface = veth0();
        let mut tc = HtbTrafficControl::new(rec.clone(), [(IfIndex(3), iface)]);
        let session = udp_session();
        let sender = FilterSpec::V4 {
            src: "10.0.0.1".parse().unwrap(),
            src_port: 0,
        };
        let c = [classifier(&session, &sender)];
        let h = tc.reserve(IfIndex(3), req(&cl(4000.0), &c)).unwrap();
        assert_eq!(tc.reserved_bps(IfIndex(3)), 4_000_000);
        assert_eq!(
            tc.reserve(IfIndex(3), req(&cl(5000.0), &c)),
            Err(AdmissionError::BandwidthUnavailable)
        );
        tc.release(h);
        drop(tc);
        let cmds = rec.0.borrow().clone();
        let expect = [
            "qdisc del dev veth0 root handle 5057:",
            "qdisc replace dev veth0 root handle 5057: htb default fffe",
            "class replace dev veth0 parent 5057: classid 5057:1 htb rate 10000000bit ceil 10000000bit",
            "class replace dev veth0 parent 5057:1 classid 5057:fffd htb rate 100000bit ceil 10000000bit prio 0",
            "class replace dev veth0 parent 5057:1 classid 5057:fffe htb rate 1900000bit ceil 10000000bit prio 1",
            "qdisc replace dev veth0 parent 5057:fffe handle fffe: pfifo limit 83",
            "filter replace dev veth0 parent 5057: protocol ip prio 1 u32 match ip protocol 46 0xff flowid 5057:fffd",
            "filter add dev veth0 parent 5057: protocol ip prio 1 u32 match ip protocol 17 0xff match ip dport 270 0xffff flowid 5057:fffd",
            "filter add dev veth0 parent 5057: protocol ip prio 1 u32 match ip protocol 17 0xff match ip sport 270 0xffff flowid 5057:fffd",
            "filter replace dev veth0 parent 5057: protocol ipv6 prio 2 u32 match ip6 protocol 46 0xff flowid 5057:fffd",
            "filter add dev veth0 parent 5057: protocol ipv6 prio 2 u32 match ip6 protocol 17 0xff match ip6 dport 270 0xffff flowid 5057:fffd",
            "filter add dev veth0 parent 5057: protocol ipv6 prio 2 u32 match ip6 protocol 17 0xff match ip6 sport 270 0xffff flowid 5057:fffd",
            "filter add dev veth0 parent 5057: protocol ip prio 1 u32 match u8 0x46 0xff at 0 match ip protocol 17 0xff flowid 5057:fffd",
            "filter add dev veth0 parent 5057: protocol ipv6 prio 2 u32 match u8 0 0xff at 6 flowid 5057:fffd",
            "class replace dev veth0 parent 5057:1 classid 5057:2 htb rate 4000000bit ceil 10000000bit prio 1",
            "filter add dev veth0 parent 5057: protocol ip prio 12 u32 match ip dst 10.0.4.2/32 match ip protocol 17 0xff match ip dport 5001 0xffff match ip src 10.0.0.1/32 flowid 5057:2",
            "filter del dev veth0 parent 5057: prio 12",
            "class del dev veth0 classid 5057:2",
            "qdisc del dev veth0 root handle 5057:",
        ];
        assert_eq!(cmds, expect);
    }

    #[test]
    fn gist_messaging_association_ports_are_signalling() {
        let rec = Record::default();
        let iface = veth0();
        let tc = HtbTrafficControl::with_signalling_tcp_ports(
            rec.clone(),
            [(IfIndex(3), iface)],
            &[30270, 30271],
        );
        drop(tc);
        let cmds = rec.0.borrow().clone();
        for (proto, fam, prio) in [("ip", "ip", 1), ("ipv6", "ip6", 2)] {
            for port in [30270, 30271] {
                for dir in ["dport", "sport"] {
                    let f = format!(
                        "filter add dev veth0 parent 5057: protocol {proto} prio {prio} u32 match {fam} protocol 6 0xff match {fam} {dir} {port} 0xffff flowid 5057:fffd"
                    );
                    assert!(cmds.contains(&f), "{f} in {cmds:#?}");
                }
            }
        }
        // Nothing else on TCP: no port given, no TCP filter.
        assert_eq!(cmds.iter().filter(|c| c.contains("protocol 6 ")).count(), 8);
    }

    /// A backend that keeps each batch it is handed, as the commands `tc` would run.
    #[derive(Clone, Default)]
    struct Batches(Rc<RefCell<Vec<Vec<String>>>>);

    impl TcBackend for Batches {
        fn apply(&mut self, ops: &[TcOp]) -> Vec<(usize, String)> {
            self.0
                .borrow_mut()
                .push(ops.iter().map(command::line).collect());
            Vec::new()
        }
    }

    #[test]
    fn deferred_reservations_reach_the_kernel_at_commit_in_one_batch_in_order() {
        let rec = Batches::default();
        let iface = veth0();
        let mut tc = HtbTrafficControl::new(rec.clone(), [(IfIndex(3), iface)]);
        let set_up = rec.0.borrow().len();
        tc.defer_until_commit(true);
        let session = udp_session();
        let sender = |src: &str| FilterSpec::V4 {
            src: src.parse().unwrap(),
            src_port: 0,
        };
        let (c1, c2) = (
            [classifier(&session, &sender("10.0.0.1"))],
            [classifier(&session, &sender("10.0.0.2"))],
        );
        // Admission is decided at once, deferred or not.
        let h1 = tc.reserve(IfIndex(3), req(&cl(4000.0), &c1)).unwrap();
        assert_eq!(
            tc.reserve(IfIndex(3), req(&cl(5000.0), &c2)),
            Err(AdmissionError::BandwidthUnavailable)
        );
        tc.release(h1);
        let h2 = tc.reserve(IfIndex(3), req(&cl(3000.0), &c2)).unwrap();
        assert_eq!(tc.reserved_bps(IfIndex(3)), 3_000_000);
        assert_eq!(
            rec.0.borrow().len(),
            set_up,
            "nothing handed over before the commit"
        );
        tc.commit();
        let batches = rec.0.borrow().clone();
        assert_eq!(batches.len(), set_up + 1, "one batch: {batches:#?}");
        // The released class's minor number is reused: its removal must come first.
        assert_eq!(
            batches[set_up],
            [
                "class replace dev veth0 parent 5057:1 classid 5057:2 htb rate 4000000bit ceil 10000000bit prio 1",
                "filter add dev veth0 parent 5057: protocol ip prio 12 u32 match ip dst 10.0.4.2/32 match ip protocol 17 0xff match ip dport 5001 0xffff match ip src 10.0.0.1/32 flowid 5057:2",
                "filter del dev veth0 parent 5057: prio 12",
                "class del dev veth0 classid 5057:2",
                "class replace dev veth0 parent 5057:1 classid 5057:2 htb rate 3000000bit ceil 10000000bit prio 1",
                "filter add dev veth0 parent 5057: protocol ip prio 12 u32 match ip dst 10.0.4.2/32 match ip protocol 17 0xff match ip dport 5001 0xffff match ip src 10.0.0.2/32 flowid 5057:2",
            ]
        );
        tc.commit();
        assert_eq!(
            rec.0.borrow().len(),
            set_up + 1,
            "an empty commit hands nothing over"
        );
        // Turning deferral off hands over what is pending; after it, each call is a batch.
        tc.release(h2);
        tc.defer_until_commit(false);
        assert_eq!(rec.0.borrow().len(), set_up + 2);
        let h3 = tc.reserve(IfIndex(3), req(&cl(1000.0), &c1)).unwrap();
        assert_eq!(rec.0.borrow().len(), set_up + 3);
        // Teardown removes the root qdisc, with whatever a deferred commit would have added.
        tc.defer_until_commit(true);
        tc.modify(h3, req(&cl(2000.0), &c1)).unwrap();
        drop(tc);
        let batches = rec.0.borrow().clone();
        assert_eq!(batches.len(), set_up + 4, "{batches:#?}");
        assert_eq!(
            batches[set_up + 3],
            ["qdisc del dev veth0 root handle 5057:"]
        );
    }
}
