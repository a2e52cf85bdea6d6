//! The TUN device: a file descriptor that yields the IP packets routed into the device and
//! accepts IP packets to hand to the kernel as if received on it. It replaces the seed's hooks
//! in `ipintr()`/`ip_output()` (seed §4.2.2–4.2.3): boosters run in user space (the option §2.1
//! set aside in 1996 for lack of fast user/kernel crossings). Driven by the gateway's threads.
//!
//! Opened with `open("/dev/net/tun")` and the `TUNSETIFF` ioctl (`IFF_TUN | IFF_NO_PI`: bare IP
//! packets, no packet-information prefix). If a device of that name exists (made persistent by
//! `ip tuntap add dev NAME mode tun`), this attaches to it; otherwise the kernel creates one that
//! disappears when the gateway exits. Reads are non-blocking so the datapath can drain a batch.
//!
//! With offloads (the default, `tun_offload = true`) the device is opened with `IFF_VNET_HDR`
//! and `TUNSETOFFLOAD` offers checksum offload and TCP segmentation for IPv4 and IPv6
//! (`TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6`), plus UDP segmentation (`TUN_F_USO4 | TUN_F_USO6`)
//! where the kernel has it (6.2 on): the kernel then hands over TCP and UDP super-segments of
//! up to 64 KiB, each read and write preceded by a `virtio_net_hdr`
//! ([`pathwise_booster::offload`]). A kernel that refuses the offloads gets the device without
//! the header, as before.
//!
//! With `queues = N > 1` the device is opened `N` times with `IFF_MULTI_QUEUE`
//! ([`Tun::open_queues`]): each `TUNSETIFF` on a new descriptor attaches one more queue of the
//! same device (kernel Documentation/networking/tuntap.rst, "Multiqueue tuntap interface"),
//! with the same flags and offloads. The kernel refuses (`EINVAL`) to attach a multi-queue
//! descriptor to a device made without `multi_queue`, and a single-queue one to a device made
//! with it; the error then says which and how to remake the device.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;

/// `_IOW('T', 202, int)` from `<linux/if_tun.h>` (not exported by `libc`).
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;

/// `_IOW('T', 208, unsigned int)`.
const TUNSETOFFLOAD: libc::c_ulong = 0x4004_54d0;
/// `IFF_VNET_HDR` from `<linux/if_tun.h>`.
const IFF_VNET_HDR: libc::c_int = 0x4000;
/// `IFF_MULTI_QUEUE` from `<linux/if_tun.h>`.
const IFF_MULTI_QUEUE: libc::c_int = 0x0100;
const TUN_F_CSUM: libc::c_uint = 0x01;
const TUN_F_TSO4: libc::c_uint = 0x02;
const TUN_F_TSO6: libc::c_uint = 0x04;
const TUN_F_USO4: libc::c_uint = 0x20;
const TUN_F_USO6: libc::c_uint = 0x40;
/// Checksum offload and TCP segmentation, IPv4 and IPv6.
const TSO: libc::c_uint = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6;
/// UDP segmentation, IPv4 and IPv6 (kernels from 6.2).
const USO: libc::c_uint = TUN_F_USO4 | TUN_F_USO6;

/// The offloads a device was opened with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TunOffloads {
    /// Frames carry a `virtio_net_hdr` (and checksum offload and TSO are on).
    pub vnet_hdr: bool,
    /// UDP segmentation offload (USO) is on too.
    pub uso: bool,
}

/// An attached TUN device.
#[derive(Debug)]
pub struct Tun {
    file: File,
    name: String,
    /// Offloads in use.
    pub offloads: TunOffloads,
    /// Why offloads are off, when they were asked for.
    pub offload_error: Option<String>,
}

impl Tun {
    /// Attach to (or create) TUN device `name`, with offloads if `offload` and the kernel
    /// takes them (else without, the reason in [`Tun::offload_error`]).
    pub fn open(name: &str, offload: bool) -> io::Result<Tun> {
        Self::open_queue(name, offload, false)
    }

    /// Attach `queues` queues of TUN device `name` (created if it does not exist), with
    /// `IFF_MULTI_QUEUE` when more than one; every queue has the offloads the first one got
    /// ([`Tun::open`]). One queue is exactly [`Tun::open`].
    pub fn open_queues(name: &str, offload: bool, queues: usize) -> io::Result<Vec<Tun>> {
        if queues <= 1 {
            return Ok(vec![Self::open(name, offload)?]);
        }
        let first = Self::open_queue(name, offload, true)?;
        let flags = first.offload_flags();
        let mut all = Vec::with_capacity(queues);
        for _ in 1..queues {
            let mut q = Self::open_with(name, first.offloads.vnet_hdr, true)?;
            // The offloads are the device's; set them on every queue all the same, so no
            // queue depends on the order the kernel applied them in.
            q.set_offload(flags)?;
            q.offloads = first.offloads;
            q.offload_error = first.offload_error.clone();
            all.push(q);
        }
        all.insert(0, first);
        Ok(all)
    }

    /// The `TUNSETOFFLOAD` flags this queue runs with.
    fn offload_flags(&self) -> libc::c_uint {
        match (self.offloads.vnet_hdr, self.offloads.uso) {
            (false, _) => 0,
            (true, false) => TSO,
            (true, true) => TSO | USO,
        }
    }

    fn open_queue(name: &str, offload: bool, multi: bool) -> io::Result<Tun> {
        if !offload {
            let tun = Self::open_with(name, false, multi)?;
            // A persistent device keeps the offloads an earlier gateway turned on; without
            // the header the kernel must not hand over super-segments.
            let _ = tun.set_offload(0);
            return Ok(tun);
        }
        let mut tun = Self::open_with(name, true, multi)?;
        match tun.set_offload(TSO | USO) {
            Ok(()) => tun.offloads.uso = true,
            // Kernels before 6.2 refuse the USO flags: TCP only.
            Err(_) => {
                if let Err(e) = tun.set_offload(TSO) {
                    // Reopen without the header rather than run with a half-set device.
                    drop(tun);
                    let mut plain = Self::open_with(name, false, multi)?;
                    let _ = plain.set_offload(0);
                    plain.offload_error = Some(format!("TUNSETOFFLOAD: {e}"));
                    return Ok(plain);
                }
            }
        }
        Ok(tun)
    }

    fn set_offload(&self, flags: libc::c_uint) -> io::Result<()> {
        // SAFETY: TUNSETOFFLOAD takes its argument by value (an unsigned int of flags) on an
        // open, attached /dev/net/tun descriptor.
        #[allow(unsafe_code)]
        let rc = unsafe {
            libc::ioctl(
                self.file.as_raw_fd(),
                TUNSETOFFLOAD as _,
                libc::c_ulong::from(flags),
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn open_with(name: &str, vnet_hdr: bool, multi: bool) -> io::Result<Tun> {
        if name.is_empty() || name.len() >= libc::IFNAMSIZ {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "bad interface name",
            ));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open("/dev/net/tun")
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "opening /dev/net/tun: {e} (it must be readable and writable by the \
                         gateway's user: mode 0666 is the udev default)"
                    ),
                )
            })?;
        // SAFETY: `ifreq` is plain old data; all-zero is a valid value.
        #[allow(unsafe_code)]
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes()) {
            *dst = src as libc::c_char;
        }
        let vnet = if vnet_hdr { IFF_VNET_HDR } else { 0 };
        let mq = if multi { IFF_MULTI_QUEUE } else { 0 };
        req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI | vnet | mq) as libc::c_short;
        // SAFETY: TUNSETIFF reads and writes one `struct ifreq`, which `req` is, on an open
        // /dev/net/tun descriptor that outlives the call. There is no safe wrapper for it.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF as _, &mut req) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            let hint = if e.kind() == io::ErrorKind::PermissionDenied {
                format!(
                    ": creating a TUN device needs CAP_NET_ADMIN; without it, create the device \
                     for the gateway's user beforehand (ip tuntap add dev {name} mode tun user \
                     USER)"
                )
            } else if e.raw_os_error() == Some(libc::EINVAL) {
                multi_queue_hint(name, multi)
            } else {
                String::new()
            };
            return Err(io::Error::new(e.kind(), format!("TUNSETIFF: {e}{hint}")));
        }
        Ok(Tun {
            file,
            name: name.to_string(),
            offloads: TunOffloads {
                vnet_hdr,
                uso: false,
            },
            offload_error: None,
        })
    }

    /// The device name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A second handle on the same queue (one thread reads, another writes).
    pub fn try_clone(&self) -> io::Result<Tun> {
        Ok(Tun {
            file: self.file.try_clone()?,
            name: self.name.clone(),
            offloads: self.offloads,
            offload_error: self.offload_error.clone(),
        })
    }

    /// Read one packet (with offloads: one `virtio_net_hdr` and packet) into `buf`;
    /// `WouldBlock` when none is queued.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        io::Read::read(&mut &self.file, buf)
    }

    /// Write one packet (with offloads: one `virtio_net_hdr` and packet).
    pub fn write(&self, pkt: &[u8]) -> io::Result<usize> {
        io::Write::write(&mut &self.file, pkt)
    }

    /// Wait until a packet can be read or `timeout_ms` passes.
    pub fn wait_readable(&self, timeout_ms: u16) -> io::Result<bool> {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        use std::os::fd::AsFd;
        let mut fds = [PollFd::new(self.file.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(timeout_ms)) {
            Ok(n) => Ok(n > 0),
            Err(nix::errno::Errno::EINTR) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

/// Why `TUNSETIFF` said `EINVAL` for an existing device: its multi-queue flag differs from the
/// one asked for (`/sys/class/net/NAME/tun_flags`, the device's `IFF_*` flags in hex).
fn multi_queue_hint(name: &str, multi: bool) -> String {
    let Ok(text) = std::fs::read_to_string(format!("/sys/class/net/{name}/tun_flags")) else {
        return String::new();
    };
    let flags = libc::c_int::from_str_radix(text.trim().trim_start_matches("0x"), 16).unwrap_or(0);
    match (multi, flags & IFF_MULTI_QUEUE != 0) {
        (true, false) => format!(
            ": device {name} exists without multi-queue support, so it cannot take more than \
             one queue; remake it with `ip tuntap del dev {name} mode tun && ip tuntap add dev \
             {name} mode tun multi_queue` (or set queues = 1)"
        ),
        (false, true) => format!(
            ": device {name} was made with multi_queue, so it takes only multi-queue \
             descriptors; set queues to 2 or more, or remake it without multi_queue"
        ),
        _ => String::new(),
    }
}
