//! Label bindings into the Linux kernel's MPLS forwarding (`net/mpls/`), over rtnetlink.
//!
//! [`LinuxMpls`] is the kernel's [`LabelDataplane`]: the driver hands it every
//! [`LfibChange`] an engine emits, and it answers once the kernel has acknowledged the change.
//! An incoming-label entry becomes an `AF_MPLS` route (`ip -f mpls route replace 100 as 200 via
//! inet 10.0.0.2 dev eth0`); an ingress binding a host route with MPLS lightweight-tunnel
//! encapsulation (`ip route replace 10.9.9.9/32 encap mpls 300 via 10.0.0.2 dev eth0`). The
//! messages are built by [`request`], which needs no kernel.
//!
//! # What the daemon must know
//!
//! - The kernel needs `CONFIG_MPLS_ROUTING` (module `mpls_router`) for label routes and
//!   `CONFIG_MPLS_IPTUNNEL` (`mpls_iptunnel`, loaded on demand) for ingress bindings. Without
//!   them [`LinuxMpls::open`] or the change fails with [`DataplaneError::Unsupported`].
//! - Changes need `CAP_NET_ADMIN`. [`LinuxMpls::open`] raises `net.mpls.platform_labels` from
//!   0 (no label usable, the default) to 2^20; a smaller non-zero value is left alone and
//!   labels above it are refused by the kernel.
//! - A node only accepts labelled packets on interfaces with `net.mpls.conf.IFNAME.input = 1`:
//!   call [`LinuxMpls::enable_input`] for every interface labels arrive on.
//! - Routes carry protocol [`RTPROT_PATHWISE`] (46): `ip -f mpls route show proto 46` and
//!   `ip route show proto 46` list what pathwise installed, and a restarted daemon can flush
//!   them.
//! - The kernel has one host route per end point, but several tunnels may end at one node.
//!   Tunnels to one end point share its route: it carries the binding of the lowest tunnel id,
//!   and removing that tunnel moves the route to the next one rather than deleting it.
//! - Everything here is synchronous: a change waits for the kernel's acknowledgement (bounded
//!   by 5 s).

mod request;

pub use request::{RTPROT_PATHWISE, request};

use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_ROUTE};
use pathwise_core::mpls::{DataplaneError, FtnEntry, LabelDataplane, LabelOp, LfibChange};
use std::collections::BTreeMap;
use std::io;
use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

/// What [`LinuxMpls::open`] sets `net.mpls.platform_labels` to when it is 0: every 20-bit label.
pub const PLATFORM_LABELS: u32 = 1 << 20;

/// Where the kernel's MPLS settings live; present only when MPLS routing is.
const PROC_MPLS: &str = "/proc/sys/net/mpls";
/// Bound on the wait for an acknowledgement.
const ACK_TIMEOUT: Duration = Duration::from_secs(5);
/// Acknowledgements are small (`NETLINK_CAP_ACK`); without it the request is echoed back.
const RECV_BUF: usize = 8 * 1024;

/// The kernel's MPLS forwarding as a [`LabelDataplane`]: one rtnetlink socket in the network
/// namespace [`LinuxMpls::open`] ran in.
#[derive(Debug)]
pub struct LinuxMpls {
    sock: Socket,
    seq: u32,
    buf: Vec<u8>,
    ftn: SharedFtn,
}

impl LinuxMpls {
    /// Checks that the kernel forwards MPLS, makes labels usable (`net.mpls.platform_labels`,
    /// needs root when it is 0) and opens the rtnetlink socket, all in the calling thread's
    /// network namespace.
    pub fn open() -> Result<LinuxMpls, DataplaneError> {
        prepare_platform_labels(Path::new(PROC_MPLS))?;
        let sock = rtnetlink_socket()
            .map_err(|e| DataplaneError::Refused(format!("cannot open rtnetlink: {e}")))?;
        Ok(LinuxMpls {
            sock,
            seq: 0,
            buf: Vec::with_capacity(RECV_BUF),
            ftn: SharedFtn::default(),
        })
    }

    /// Accept labelled packets arriving on `ifname` (`net.mpls.conf.IFNAME.input = 1`), in the
    /// calling thread's network namespace. Needs root.
    pub fn enable_input(&self, ifname: &str) -> io::Result<()> {
        enable_input_in(Path::new(PROC_MPLS), ifname)
    }

    /// Sends one request and waits for its acknowledgement: `Ok(Err(errno, kernel's message))`
    /// when the kernel refused it.
    fn transact(&mut self, bytes: &[u8], seq: u32) -> io::Result<Result<(), Nack>> {
        self.sock.send(bytes, 0)?;
        loop {
            self.buf.clear();
            self.buf.reserve(RECV_BUF);
            match self.sock.recv(&mut self.buf, libc::MSG_TRUNC) {
                // Acknowledgements of requests that timed out earlier have other numbers.
                Ok(_) => {
                    if let Some(ack) = find_ack(&self.buf, seq) {
                        return Ok(ack);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("no answer from the kernel within {ACK_TIMEOUT:?}"),
                    ));
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn send_change(&mut self, change: &LfibChange) -> Result<(), DataplaneError> {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        let bytes = request(change, seq)?;
        match self.transact(&bytes, seq) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(nack)) => outcome(change, &nack),
            Err(e) => Err(DataplaneError::Refused(format!(
                "{}: {e}",
                describe(change)
            ))),
        }
    }
}

impl LabelDataplane for LinuxMpls {
    fn apply(&mut self, change: &LfibChange) -> Result<(), DataplaneError> {
        if let Some(kernel) = self.ftn.kernel_change(change) {
            self.send_change(&kernel)?;
        }
        self.ftn.commit(change);
        Ok(())
    }
}

fn rtnetlink_socket() -> io::Result<Socket> {
    let mut sock = Socket::new(NETLINK_ROUTE)?;
    sock.bind_auto()?;
    sock.connect(&SocketAddr::new(0, 0))?;
    // Best effort, both since Linux 4.x: acknowledgements without the echoed request, and with
    // the kernel's own reason for a refusal ("Invalid label", ...).
    let _ = sock.set_cap_ack(true);
    let _ = sock.set_ext_ack(true);
    socket2::SockRef::from(&sock).set_read_timeout(Some(ACK_TIMEOUT))?;
    Ok(sock)
}

/// A refused request: the errno and, with extended acknowledgements, the kernel's message.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Nack {
    errno: i32,
    message: Option<String>,
}

// linux/netlink.h
const NLMSG_HDRLEN: usize = 16;
const NLMSG_ERROR: u16 = 2;
const NLM_F_CAPPED: u16 = 0x100;
const NLM_F_ACK_TLVS: u16 = 0x200;
const NLMSGERR_ATTR_MSG: u16 = 1;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The answer to request `seq` in one datagram, if it holds one: an `NLMSG_ERROR` whose code
/// is 0 (acknowledged) or a negative errno, optionally followed by extended-ack attributes.
fn find_ack(datagram: &[u8], seq: u32) -> Option<Result<(), Nack>> {
    let mut off = 0;
    while let Some(len) = u32_at(datagram, off) {
        let len = len as usize;
        let msg = datagram
            .get(off..off + len)
            .filter(|_| len >= NLMSG_HDRLEN)?;
        off += len.next_multiple_of(4);
        if u16_at(msg, 4) != Some(NLMSG_ERROR) || u32_at(msg, 8) != Some(seq) {
            continue;
        }
        let code = u32_at(msg, NLMSG_HDRLEN)? as i32;
        if code == 0 {
            return Some(Ok(()));
        }
        let flags = u16_at(msg, 6)?;
        return Some(Err(Nack {
            errno: code.saturating_neg(),
            message: (flags & NLM_F_ACK_TLVS != 0)
                .then(|| ext_ack_message(msg, flags))
                .flatten(),
        }));
    }
    None
}

/// `NLMSGERR_ATTR_MSG` of an `NLMSG_ERROR`: the attributes follow the error code and the echoed
/// request (only its header when `NLM_F_CAPPED`).
fn ext_ack_message(msg: &[u8], flags: u16) -> Option<String> {
    let echoed = NLMSG_HDRLEN + 4;
    let echoed_len = if flags & NLM_F_CAPPED != 0 {
        NLMSG_HDRLEN
    } else {
        u32_at(msg, echoed)? as usize
    };
    let mut off = (echoed + echoed_len).next_multiple_of(4);
    while let Some(len) = u16_at(msg, off) {
        let len = len as usize;
        let value = msg.get(off + 4..off + len.max(4))?;
        if u16_at(msg, off + 2)? & 0x3fff == NLMSGERR_ATTR_MSG {
            let text = value.split(|&b| b == 0).next().unwrap_or_default();
            return Some(String::from_utf8_lossy(text).into_owned());
        }
        off += len.max(4).next_multiple_of(4);
    }
    None
}

/// What a refusal means for `change`.
fn outcome(change: &LfibChange, nack: &Nack) -> Result<(), DataplaneError> {
    let removal = matches!(change, LfibChange::Remove(_) | LfibChange::RemoveFtn { .. });
    if removal && matches!(nack.errno, libc::ENOENT | libc::ESRCH) {
        return Ok(()); // already gone
    }
    let mut why = format!(
        "{}: {}",
        describe(change),
        nix::errno::Errno::from_raw(nack.errno).desc()
    );
    if let Some(m) = &nack.message {
        why.push_str(&format!(" ({m})"));
    }
    Err(match nack.errno {
        libc::EAFNOSUPPORT | libc::EOPNOTSUPP => DataplaneError::Unsupported(why),
        _ => DataplaneError::Refused(why),
    })
}

/// A change in words, for error messages.
fn describe(change: &LfibChange) -> String {
    match *change {
        LfibChange::Install(e) => {
            let op = match e.op {
                LabelOp::Swap(l) => format!("swap to {l}"),
                LabelOp::Pop => "pop".into(),
            };
            format!(
                "install label {} ({op}) via {} on {}",
                e.in_label, e.next_hop.addr, e.next_hop.ifindex
            )
        }
        LfibChange::Remove(l) => format!("remove label {l}"),
        LfibChange::InstallFtn(f) => {
            let push = f
                .push
                .map_or_else(|| "no label".into(), |l| format!("push {l}"));
            format!(
                "install tunnel {} to {} ({push}) via {} on {}",
                f.tunnel_id, f.dest, f.next_hop.addr, f.next_hop.ifindex
            )
        }
        LfibChange::RemoveFtn { dest, tunnel_id } => {
            format!("remove tunnel {tunnel_id} to {dest}")
        }
    }
}

/// Ingress bindings by end point, for the one host route each end point has in the kernel: it
/// carries the binding of the lowest tunnel id. A waiting tunnel's binding reaches the kernel
/// only when it takes the route over; if the kernel refuses it then, the removal that caused
/// it fails and the route stays as it was.
#[derive(Debug, Default)]
struct SharedFtn(BTreeMap<IpAddr, BTreeMap<u16, FtnEntry>>);

impl SharedFtn {
    /// The change the kernel needs for `change`; `None` when its route stays as it is.
    fn kernel_change(&self, change: &LfibChange) -> Option<LfibChange> {
        let (dest, tunnel_id) = match *change {
            LfibChange::InstallFtn(f) => (f.dest, f.tunnel_id),
            LfibChange::RemoveFtn { dest, tunnel_id } => (dest, tunnel_id),
            LfibChange::Install(_) | LfibChange::Remove(_) => return Some(*change),
        };
        // No tunnel known to this end point: a removal still goes out, to clear what a
        // previous run may have left.
        let Some(tunnels) = self.0.get(&dest) else {
            return Some(*change);
        };
        let carrier = *tunnels.keys().next()?;
        match change {
            LfibChange::InstallFtn(_) => (tunnel_id <= carrier).then_some(*change),
            _ if tunnel_id != carrier => None,
            _ => Some(
                tunnels
                    .values()
                    .find(|f| f.tunnel_id != tunnel_id)
                    .map_or(*change, |next| LfibChange::InstallFtn(*next)),
            ),
        }
    }

    /// Records `change` once the kernel has taken [`SharedFtn::kernel_change`].
    fn commit(&mut self, change: &LfibChange) {
        match *change {
            LfibChange::InstallFtn(f) => {
                self.0.entry(f.dest).or_default().insert(f.tunnel_id, f);
            }
            LfibChange::RemoveFtn { dest, tunnel_id } => {
                if let Some(tunnels) = self.0.get_mut(&dest) {
                    tunnels.remove(&tunnel_id);
                    if tunnels.is_empty() {
                        self.0.remove(&dest);
                    }
                }
            }
            LfibChange::Install(_) | LfibChange::Remove(_) => {}
        }
    }
}

/// Makes labels usable in the MPLS settings under `mpls_dir` (`/proc/sys/net/mpls`).
fn prepare_platform_labels(mpls_dir: &Path) -> Result<(), DataplaneError> {
    if !mpls_dir.is_dir() {
        return Err(DataplaneError::Unsupported(format!(
            "this kernel has no MPLS forwarding ({} missing: CONFIG_MPLS_ROUTING, modprobe \
             mpls_router)",
            mpls_dir.display()
        )));
    }
    let path = mpls_dir.join("platform_labels");
    let current = std::fs::read_to_string(&path)
        .map_err(|e| DataplaneError::Refused(format!("cannot read {}: {e}", path.display())))?;
    if current.trim() != "0" {
        return Ok(());
    }
    std::fs::write(&path, PLATFORM_LABELS.to_string()).map_err(|e| {
        DataplaneError::Refused(format!(
            "net.mpls.platform_labels is 0, so no label can be used, and setting it to \
             {PLATFORM_LABELS} failed ({}: {e}); run as root (CAP_NET_ADMIN) or set it \
             beforehand: sysctl -w net.mpls.platform_labels={PLATFORM_LABELS}",
            path.display()
        ))
    })
}

fn enable_input_in(mpls_dir: &Path, ifname: &str) -> io::Result<()> {
    // IFNAMSIZ is 16 with the NUL; anything else could leave the conf directory.
    if ifname.is_empty() || ifname.len() > 15 || ifname.contains('/') || ifname.starts_with('.') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{ifname:?} is not an interface name"),
        ));
    }
    let path = mpls_dir.join("conf").join(ifname).join("input");
    std::fs::write(&path, "1")
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathwise_core::io::IfIndex;
    use pathwise_core::mpls::{LfibEntry, NextHop};

    fn ftn(dest: &str, tunnel_id: u16, push: u32) -> FtnEntry {
        FtnEntry {
            dest: dest.parse().unwrap(),
            tunnel_id,
            push: Some(push),
            next_hop: NextHop {
                ifindex: IfIndex(2),
                addr: "10.0.0.2".parse().unwrap(),
            },
        }
    }

    /// Applies `change` to `t` as [`LinuxMpls::apply`] does, returning what went to the kernel.
    fn step(t: &mut SharedFtn, change: LfibChange) -> Option<LfibChange> {
        let k = t.kernel_change(&change);
        t.commit(&change);
        k
    }

    #[test]
    fn tunnels_to_one_end_point_share_its_route() {
        let mut t = SharedFtn::default();
        let (t5, t3, t9) = (
            ftn("10.9.9.9", 5, 500),
            ftn("10.9.9.9", 3, 300),
            ftn("10.9.9.9", 9, 900),
        );
        let rm = |id| LfibChange::RemoveFtn {
            dest: "10.9.9.9".parse().unwrap(),
            tunnel_id: id,
        };
        use LfibChange::InstallFtn as I;
        assert_eq!(step(&mut t, I(t5)), Some(I(t5)));
        assert_eq!(step(&mut t, I(t3)), Some(I(t3)), "lower id takes the route");
        assert_eq!(step(&mut t, I(t9)), None, "higher id waits");
        let t3b = FtnEntry {
            push: Some(301),
            ..t3
        };
        assert_eq!(
            step(&mut t, I(t3b)),
            Some(I(t3b)),
            "the carrier's update goes out"
        );
        assert_eq!(step(&mut t, rm(9)), None);
        assert_eq!(
            step(&mut t, rm(3)),
            Some(I(t5)),
            "falls back to the next tunnel"
        );
        assert_eq!(step(&mut t, rm(4)), None, "unknown tunnel, route in use");
        assert_eq!(
            step(&mut t, rm(5)),
            Some(rm(5)),
            "last one deletes the route"
        );
        assert_eq!(
            step(&mut t, rm(5)),
            Some(rm(5)),
            "stale removals still go out"
        );
        assert!(t.0.is_empty());
        let other = ftn("10.8.8.8", 9, 900);
        assert_eq!(
            step(&mut t, I(other)),
            Some(I(other)),
            "end points are separate"
        );
        let label = LfibChange::Remove(100);
        assert_eq!(step(&mut t, label), Some(label));
    }

    /// An `NLMSG_ERROR` for `seq` with `code`, capped, optionally with `NLMSGERR_ATTR_MSG`.
    fn nlmsgerr(seq: u32, code: i32, msg: Option<&str>) -> Vec<u8> {
        let mut b = Vec::new();
        let flags = NLM_F_CAPPED | if msg.is_some() { NLM_F_ACK_TLVS } else { 0 };
        b.extend(0u32.to_ne_bytes()); // length, set below
        b.extend(NLMSG_ERROR.to_ne_bytes());
        b.extend(flags.to_ne_bytes());
        b.extend(seq.to_ne_bytes());
        b.extend(1234u32.to_ne_bytes());
        b.extend(code.to_ne_bytes());
        // The echoed request header: length 64, RTM_NEWROUTE.
        b.extend(64u32.to_ne_bytes());
        b.extend(24u16.to_ne_bytes());
        b.extend(0x505u16.to_ne_bytes());
        b.extend(seq.to_ne_bytes());
        b.extend(0u32.to_ne_bytes());
        if let Some(m) = msg {
            let len = 4 + m.len() + 1;
            b.extend((len as u16).to_ne_bytes());
            b.extend(NLMSGERR_ATTR_MSG.to_ne_bytes());
            b.extend(m.as_bytes());
            b.push(0);
            b.resize(b.len().next_multiple_of(4), 0);
        }
        let len = b.len() as u32;
        b[..4].copy_from_slice(&len.to_ne_bytes());
        b
    }

    #[test]
    fn acks_are_matched_by_sequence_number() {
        assert_eq!(find_ack(&nlmsgerr(7, 0, None), 7), Some(Ok(())));
        assert_eq!(
            find_ack(&nlmsgerr(6, 0, None), 7),
            None,
            "an older request's"
        );
        let mut two = nlmsgerr(6, -22, None);
        two.extend(nlmsgerr(7, -19, Some("Invalid label")));
        assert_eq!(
            find_ack(&two, 7),
            Some(Err(Nack {
                errno: 19,
                message: Some("Invalid label".into())
            }))
        );
        assert_eq!(
            find_ack(&nlmsgerr(7, -22, None), 7),
            Some(Err(Nack {
                errno: 22,
                message: None
            }))
        );
        // Uncapped: the whole 64-byte request is echoed before the attributes.
        let mut uncapped = nlmsgerr(7, -22, None);
        uncapped[6..8].copy_from_slice(&NLM_F_ACK_TLVS.to_ne_bytes());
        uncapped.extend([0u8; 48]);
        uncapped.extend(9u16.to_ne_bytes());
        uncapped.extend(NLMSGERR_ATTR_MSG.to_ne_bytes());
        uncapped.extend(b"bad\0");
        uncapped.extend([0u8; 3]);
        let len = uncapped.len() as u32;
        uncapped[..4].copy_from_slice(&len.to_ne_bytes());
        assert_eq!(
            find_ack(&uncapped, 7),
            Some(Err(Nack {
                errno: 22,
                message: Some("bad".into())
            }))
        );
    }

    #[test]
    fn ack_parsing_survives_garbage() {
        let real = nlmsgerr(7, -22, Some("Invalid label"));
        for cut in 0..real.len() {
            let mut bytes = real[..cut].to_vec();
            let _ = find_ack(&bytes, 7);
            if bytes.len() >= 4 {
                bytes[..4].copy_from_slice(&(cut as u32).to_ne_bytes());
                let _ = find_ack(&bytes, 7);
            }
        }
        for bytes in [
            &[0u8; 16][..],
            &[255; 40],
            &[16, 0, 0, 0, 2, 0, 0, 0, 7, 0, 0, 0],
        ] {
            let _ = find_ack(bytes, 7);
        }
        let mut tlv_len_zero = nlmsgerr(7, -22, Some("x"));
        tlv_len_zero[36..38].copy_from_slice(&0u16.to_ne_bytes());
        assert!(matches!(find_ack(&tlv_len_zero, 7), Some(Err(_))));
    }

    #[test]
    fn refusals_map_to_dataplane_errors() {
        let install = LfibChange::Install(LfibEntry {
            in_label: 100,
            op: LabelOp::Swap(200),
            next_hop: NextHop {
                ifindex: IfIndex(3),
                addr: "10.0.0.2".parse().unwrap(),
            },
        });
        let nack = |errno, message: Option<&str>| Nack {
            errno,
            message: message.map(Into::into),
        };
        let Err(DataplaneError::Refused(why)) = outcome(&install, &nack(libc::ENODEV, None)) else {
            panic!("ENODEV is a refusal");
        };
        assert_eq!(
            why,
            "install label 100 (swap to 200) via 10.0.0.2 on if3: No such device"
        );
        let Err(DataplaneError::Refused(why)) =
            outcome(&install, &nack(libc::EINVAL, Some("Invalid label")))
        else {
            panic!("EINVAL is a refusal");
        };
        assert!(why.ends_with("Invalid argument (Invalid label)"), "{why}");
        for errno in [libc::EAFNOSUPPORT, libc::EOPNOTSUPP] {
            assert!(matches!(
                outcome(&install, &nack(errno, None)),
                Err(DataplaneError::Unsupported(_))
            ));
        }
        assert!(
            outcome(&install, &nack(libc::ENOENT, None)).is_err(),
            "only removals may find nothing"
        );
        let removals = [
            LfibChange::Remove(100),
            LfibChange::RemoveFtn {
                dest: "10.9.9.9".parse().unwrap(),
                tunnel_id: 1,
            },
        ];
        for r in removals {
            for errno in [libc::ENOENT, libc::ESRCH] {
                assert!(outcome(&r, &nack(errno, None)).is_ok(), "{r:?} {errno}");
            }
            assert!(outcome(&r, &nack(libc::EPERM, None)).is_err());
        }
    }

    fn scratch(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("pathwise-mpls-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn platform_labels_are_raised_from_zero_only() {
        let missing = std::env::temp_dir().join("pathwise-mpls-no-such-dir");
        let Err(DataplaneError::Unsupported(why)) = prepare_platform_labels(&missing) else {
            panic!("a missing MPLS directory means no MPLS");
        };
        assert!(
            why.starts_with("this kernel has no MPLS forwarding"),
            "{why}"
        );
        assert!(why.contains("CONFIG_MPLS_ROUTING") && why.contains("modprobe mpls_router"));

        let dir = scratch("platform");
        let file = dir.join("platform_labels");
        std::fs::write(&file, "0\n").unwrap();
        prepare_platform_labels(&dir).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "1048576");
        std::fs::write(&file, "1000\n").unwrap();
        prepare_platform_labels(&dir).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "1000\n");
        std::fs::remove_file(&file).unwrap();
        assert!(matches!(
            prepare_platform_labels(&dir),
            Err(DataplaneError::Refused(_))
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn input_is_enabled_per_interface() {
        let dir = scratch("input");
        std::fs::create_dir_all(dir.join("conf/eth0")).unwrap();
        std::fs::write(dir.join("conf/eth0/input"), "0").unwrap();
        enable_input_in(&dir, "eth0").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("conf/eth0/input")).unwrap(),
            "1"
        );
        let err = enable_input_in(&dir, "eth1").unwrap_err();
        assert!(err.to_string().contains("conf/eth1/input"), "{err}");
        for bad in ["", "..", "../all", "a/b", "sixteen-chars-xx"] {
            assert_eq!(
                enable_input_in(&dir, bad).unwrap_err().kind(),
                io::ErrorKind::InvalidInput,
                "{bad:?}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
