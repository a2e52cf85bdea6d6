//! The TUN device: a file descriptor that yields the IP packets routed into the device and
//! accepts IP packets to hand to the kernel as if received on it. It replaces the seed's hooks
//! in `ipintr()`/`ip_output()` (seed §4.2.2–4.2.3): boosters run in user space (the option §2.1
//! set aside in 1996 for lack of fast user/kernel crossings). Driven by the gateway's threads.
//!
//! Opened with `open("/dev/net/tun")` and the `TUNSETIFF` ioctl (`IFF_TUN | IFF_NO_PI`: bare IP
//! packets, no packet-information prefix). If a device of that name exists (made persistent by
//! `ip tuntap add dev NAME mode tun`), this attaches to it; otherwise the kernel creates one that
//! disappears when the gateway exits. Reads are non-blocking so the datapath can drain a batch.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;

/// `_IOW('T', 202, int)` from `<linux/if_tun.h>` (not exported by `libc`).
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;

/// An attached TUN device.
#[derive(Debug)]
pub struct Tun {
    file: File,
    name: String,
}

impl Tun {
    /// Attach to (or create) TUN device `name`.
    pub fn open(name: &str) -> io::Result<Tun> {
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
        req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
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
            } else {
                String::new()
            };
            return Err(io::Error::new(e.kind(), format!("TUNSETIFF: {e}{hint}")));
        }
        Ok(Tun {
            file,
            name: name.to_string(),
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
        })
    }

    /// Read one packet into `buf`; `WouldBlock` when none is queued.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        io::Read::read(&mut &self.file, buf)
    }

    /// Write one packet.
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
