//! The tunnel socket's batches with UDP segmentation and receive offload: `sendmmsg` where
//! each message carries a run of equal-sized datagrams in one buffer list and a `UDP_SEGMENT`
//! control message (the kernel, or the device, cuts them: UDP GSO), and `recvmmsg` on a socket
//! with `UDP_GRO` set, where one message may hold several datagrams of the size its `UDP_GRO`
//! control message gives. Driven by the gateway's egress and ingress threads. Reading the
//! control message and cutting a message into datagrams are pure code in
//! [`pathwise_booster::gro`] (fuzzed there); only the system calls are here.
//!
//! Both are probed at start-up and fall back cleanly: a kernel that refuses the socket option
//! runs without it, and a GSO send the kernel refuses later (`EIO` from a device without
//! checksum offload, `EINVAL`) turns GSO off for the rest of the run and is sent again
//! datagram by datagram. What is on, and why not, is reported by `booster show`.

use nix::sys::socket::{SockaddrLike, SockaddrStorage, setsockopt, sockopt};
use pathwise_booster::gro;
use pathwise_booster::packet::Packet;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

/// Most datagrams in one GSO message (`UDP_MAX_SEGMENTS` on kernels before 6.9).
pub const GSO_MAX_SEGMENTS: usize = 64;
/// Most bytes in one GSO message (UDP payload of one 64 KiB IP packet, IPv6 header assumed).
pub const GSO_MAX_BYTES: usize = 65535 - 40 - 8;
/// Size of a receive buffer with GRO: one coalesced message of up to 64 KiB.
pub const GRO_BUFFER: usize = 65536;
/// Most messages per `sendmmsg` call (`UIO_MAXIOV`).
const MAX_MESSAGES: usize = 1024;

/// Whether an offload is in use, and why not when it is not.
#[derive(Debug, Clone, serde::Serialize, PartialEq, Eq)]
pub struct OffloadState {
    /// In use.
    pub on: bool,
    /// Why not (`"disabled in the configuration"`, the kernel's error…).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
}

impl OffloadState {
    /// In use.
    pub fn on() -> Self {
        OffloadState {
            on: true,
            why_not: None,
        }
    }

    /// Not in use, because of `why`.
    pub fn off(why: impl Into<String>) -> Self {
        OffloadState {
            on: false,
            why_not: Some(why.into()),
        }
    }
}

/// Probe `UDP_SEGMENT` on `socket`: the option is set once and cleared again (per-message
/// control messages are used to send).
pub fn probe_gso(socket: &UdpSocket, wanted: bool) -> OffloadState {
    if !wanted {
        return OffloadState::off("disabled in the configuration (udp_gso = false)");
    }
    match setsockopt(socket, sockopt::UdpGsoSegment, &1400) {
        Ok(()) => {
            let _ = setsockopt(socket, sockopt::UdpGsoSegment, &0);
            OffloadState::on()
        }
        Err(e) => OffloadState::off(format!("the kernel refused UDP_SEGMENT: {e}")),
    }
}

/// Turn on `UDP_GRO` on `socket`.
pub fn enable_gro(socket: &UdpSocket, wanted: bool) -> OffloadState {
    if !wanted {
        return OffloadState::off("disabled in the configuration (udp_gro = false)");
    }
    match setsockopt(socket, sockopt::UdpGroSegment, &true) {
        Ok(()) => OffloadState::on(),
        Err(e) => OffloadState::off(format!("the kernel refused UDP_GRO: {e}")),
    }
}

/// `CMSG_SPACE(sizeof(u16))`, rounded up for any alignment.
const CMSG_BUF: usize = 32;

#[repr(C, align(8))]
#[derive(Clone, Copy)]
struct CmsgBuf([u8; CMSG_BUF]);

/// Reusable arrays for [`GsoSender::send`]: nothing allocated per batch once warm.
pub struct GsoSender {
    iovs: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
    cmsgs: Vec<CmsgBuf>,
    /// First packet index and count of each message.
    runs: Vec<(usize, usize)>,
    addr: libc::sockaddr_storage,
    addr_len: libc::socklen_t,
    /// GSO in use (turned off for good when the kernel refuses a GSO send).
    pub gso: bool,
    /// Why GSO was turned off at run time.
    pub gso_error: Option<String>,
}

impl std::fmt::Debug for GsoSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GsoSender").field("gso", &self.gso).finish()
    }
}

/// What one [`GsoSender::send`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    /// Datagrams the kernel took.
    pub datagrams: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Datagrams refused (counted as I/O drops by the caller).
    pub failed: u64,
    /// Messages with more than one datagram (GSO).
    pub gso_messages: u64,
}

impl GsoSender {
    /// A sender to `peer`, with GSO if `gso`.
    pub fn new(peer: SocketAddr, gso: bool) -> Self {
        let storage = SockaddrStorage::from(peer);
        // SAFETY: sockaddr_storage is plain old data; all-zero is valid.
        #[allow(unsafe_code)]
        let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let len = storage.len() as usize;
        // SAFETY: `storage` holds `len` valid bytes of a sockaddr, and sockaddr_storage is
        // at least that large; the regions do not overlap.
        #[allow(unsafe_code)]
        unsafe {
            std::ptr::copy_nonoverlapping(
                storage.as_ptr().cast::<u8>(),
                std::ptr::from_mut(&mut addr).cast::<u8>(),
                len.min(std::mem::size_of::<libc::sockaddr_storage>()),
            );
        }
        GsoSender {
            iovs: Vec::new(),
            msgs: Vec::new(),
            cmsgs: Vec::new(),
            runs: Vec::new(),
            addr,
            addr_len: len as libc::socklen_t,
            gso,
            gso_error: None,
        }
    }

    /// Group `out[from..]` into messages: with GSO, runs of equal-sized datagrams (the last
    /// may be shorter) up to [`GSO_MAX_SEGMENTS`] and [`GSO_MAX_BYTES`]; without, one each.
    fn group(&mut self, out: &[Packet], from: usize) {
        self.runs.clear();
        let mut i = from;
        while i < out.len() {
            let size = out[i].len();
            let mut n = 1;
            let mut bytes = size;
            if self.gso && size > 0 {
                while i + n < out.len() && n < GSO_MAX_SEGMENTS {
                    let next = out[i + n].len();
                    if next == 0 || next > size || bytes + next > GSO_MAX_BYTES {
                        break;
                    }
                    n += 1;
                    bytes += next;
                    if next < size {
                        break; // a shorter one ends the run
                    }
                }
            }
            self.runs.push((i, n));
            i += n;
        }
    }

    /// Send every datagram in `out` to the peer.
    pub fn send(&mut self, socket: &UdpSocket, out: &[Packet]) -> Sent {
        let mut sent = Sent::default();
        let mut from = 0;
        'regroup: while from < out.len() {
            self.group(out, from);
            self.iovs.clear();
            self.iovs.extend(out[from..].iter().map(|p| libc::iovec {
                iov_base: p.payload().as_ptr().cast_mut().cast(),
                iov_len: p.len(),
            }));
            self.cmsgs.clear();
            self.cmsgs.resize(self.runs.len(), CmsgBuf([0; CMSG_BUF]));
            self.msgs.clear();
            for (k, &(first, n)) in self.runs.iter().enumerate() {
                // SAFETY: mmsghdr is plain old data; all-zero is valid.
                #[allow(unsafe_code)]
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_name = std::ptr::from_mut(&mut self.addr).cast();
                m.msg_hdr.msg_namelen = self.addr_len;
                m.msg_hdr.msg_iov = self.iovs[first - from..].as_mut_ptr();
                m.msg_hdr.msg_iovlen = n as _;
                if n > 1 {
                    let seg = out[first].len() as u16;
                    let buf = &mut self.cmsgs[k].0;
                    // SAFETY: CMSG_SPACE/CMSG_LEN are pure arithmetic.
                    #[allow(unsafe_code)]
                    let (space, len) = unsafe { (libc::CMSG_SPACE(2), libc::CMSG_LEN(2)) };
                    m.msg_hdr.msg_control = buf.as_mut_ptr().cast();
                    m.msg_hdr.msg_controllen = space as _;
                    // SAFETY: `buf` is 8-aligned and CMSG_BUF ≥ CMSG_SPACE(2) bytes long, so
                    // CMSG_FIRSTHDR points into it and the header and 2 data bytes fit.
                    #[allow(unsafe_code)]
                    unsafe {
                        let c = libc::CMSG_FIRSTHDR(&m.msg_hdr);
                        (*c).cmsg_level = libc::SOL_UDP;
                        (*c).cmsg_type = libc::UDP_SEGMENT;
                        (*c).cmsg_len = len as _;
                        std::ptr::copy_nonoverlapping(
                            seg.to_ne_bytes().as_ptr(),
                            libc::CMSG_DATA(c),
                            2,
                        );
                    }
                }
                self.msgs.push(m);
            }
            let mut k = 0;
            while k < self.msgs.len() {
                let n = (self.msgs.len() - k).min(MAX_MESSAGES);
                // SAFETY: `msgs[k..k + n]` are initialised mmsghdrs whose name, iovec and
                // control pointers point into `self.addr`, `self.iovs` (which points at
                // `out`'s payloads) and `self.cmsgs`, all alive and unmoved for the call.
                #[allow(unsafe_code)]
                let r = unsafe {
                    libc::sendmmsg(socket.as_raw_fd(), self.msgs[k..].as_mut_ptr(), n as _, 0)
                };
                if r > 0 {
                    for &(first, count) in &self.runs[k..k + r as usize] {
                        sent.datagrams += count as u64;
                        sent.bytes += out[first..first + count]
                            .iter()
                            .map(|p| p.len() as u64)
                            .sum::<u64>();
                        sent.gso_messages += u64::from(count > 1);
                    }
                    k += r as usize;
                    continue;
                }
                let err = std::io::Error::last_os_error();
                let (first, count) = self.runs[k];
                if err.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                if count > 1 && matches!(err.raw_os_error(), Some(libc::EIO | libc::EINVAL)) {
                    // The kernel or the device cannot segment: without GSO from here on.
                    self.gso = false;
                    self.gso_error = Some(format!("the kernel refused a UDP GSO send: {err}"));
                    tracing::warn!(error = %err, "UDP GSO refused; sending datagram by datagram");
                    from = first;
                    continue 'regroup;
                }
                // This message is lost (counted); the rest still go.
                sent.failed += count as u64;
                k += 1;
            }
            break;
        }
        sent
    }
}

/// Receive buffers and headers for [`GroReceiver::receive`]. Raw `recvmmsg`: nix 0.31's
/// `MultiHeaders` does not restore `msg_controllen` between calls (the kernel shrinks it to
/// what it wrote), so after a message without a control message every later one would lose
/// its `UDP_GRO` segment size.
pub struct GroReceiver {
    bufs: Vec<Vec<u8>>,
    iovs: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
    names: Vec<libc::sockaddr_storage>,
    cmsgs: Vec<CmsgBuf>,
    /// Per message: bytes, source, segment size (none: one datagram).
    pub got: Vec<(usize, Option<SocketAddr>, Option<u16>)>,
}

impl std::fmt::Debug for GroReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroReceiver")
            .field("messages", &self.bufs.len())
            .finish()
    }
}

impl GroReceiver {
    /// Room for `batch` messages of `size` bytes each.
    pub fn new(batch: usize, size: usize) -> Self {
        let batch = batch.max(1);
        let mut bufs: Vec<Vec<u8>> = (0..batch).map(|_| vec![0; size]).collect();
        let iovs = bufs
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            })
            .collect();
        // SAFETY: sockaddr_storage and mmsghdr are plain old data; all-zero is valid.
        #[allow(unsafe_code)]
        let (names, msgs) = unsafe {
            (
                vec![std::mem::zeroed::<libc::sockaddr_storage>(); batch],
                vec![std::mem::zeroed::<libc::mmsghdr>(); batch],
            )
        };
        GroReceiver {
            bufs,
            iovs,
            msgs,
            names,
            cmsgs: vec![CmsgBuf([0; CMSG_BUF]); batch],
            got: Vec::with_capacity(batch),
        }
    }

    /// Receive up to a batch (waiting for the first, up to the socket's read timeout).
    pub fn receive(&mut self, socket: &UdpSocket) -> nix::Result<usize> {
        self.got.clear();
        let n = self.msgs.len();
        for i in 0..n {
            let h = &mut self.msgs[i].msg_hdr;
            h.msg_name = std::ptr::from_mut(&mut self.names[i]).cast();
            h.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as _;
            h.msg_iov = std::ptr::from_mut(&mut self.iovs[i]);
            h.msg_iovlen = 1;
            h.msg_control = self.cmsgs[i].0.as_mut_ptr().cast();
            h.msg_controllen = CMSG_BUF as _;
            h.msg_flags = 0;
            self.msgs[i].msg_len = 0;
        }
        // SAFETY: every mmsghdr points at its own name, iovec (into `bufs`, whose heap
        // buffers never move) and control buffer, all alive for the call; `n` is their count.
        #[allow(unsafe_code)]
        let r = unsafe {
            libc::recvmmsg(
                socket.as_raw_fd(),
                self.msgs.as_mut_ptr(),
                n as _,
                libc::MSG_WAITFORONE,
                std::ptr::null_mut(),
            )
        };
        let received = usize::try_from(r).map_err(|_| nix::errno::Errno::last())?;
        for i in 0..received.min(n) {
            let m = &self.msgs[i];
            // The control bytes the kernel wrote; a truncated set is not trusted. (The field is
            // a usize with glibc, a u32 with musl.)
            #[allow(clippy::unnecessary_cast)]
            let written = m.msg_hdr.msg_controllen as usize;
            let control = &self.cmsgs[i].0[..written.min(CMSG_BUF)];
            let seg = if m.msg_hdr.msg_flags & libc::MSG_CTRUNC == 0 {
                gro::segment_size(control)
            } else {
                None
            };
            // SAFETY: the kernel wrote `msg_namelen` bytes of a socket address into `names[i]`.
            #[allow(unsafe_code)]
            let from = unsafe {
                SockaddrStorage::from_raw(
                    std::ptr::from_ref(&self.names[i]).cast(),
                    Some(m.msg_hdr.msg_namelen),
                )
            }
            .as_ref()
            .and_then(socket_addr);
            self.got.push((m.msg_len as usize, from, seg));
        }
        Ok(self.got.len())
    }

    /// The datagrams of message `i`: its bytes cut at the segment size
    /// ([`gro::datagrams`]; an empty message is one empty datagram).
    pub fn datagrams(&self, i: usize) -> gro::Datagrams<'_> {
        let (len, _, seg) = self.got.get(i).copied().unwrap_or((0, None, None));
        let bytes = self.bufs.get(i).map_or(&[][..], |b| &b[..len.min(b.len())]);
        gro::datagrams(bytes, seg)
    }
}

/// The IPv4 or IPv6 socket address in `addr`, if it is one.
pub fn socket_addr(addr: &SockaddrStorage) -> Option<SocketAddr> {
    if let Some(a) = addr.as_sockaddr_in() {
        return Some(SocketAddr::from((a.ip(), a.port())));
    }
    addr.as_sockaddr_in6()
        .map(|a| SocketAddr::from((a.ip(), a.port())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathwise_booster::packet::PacketPool;

    /// Datagrams of mixed sizes sent in GSO runs over loopback arrive as the same datagrams,
    /// in order, whether the receiver has GRO on or not.
    #[test]
    fn gso_runs_arrive_as_the_datagrams_sent() {
        let sizes = [
            1000usize, 1000, 900, 1200, 1200, 1200, 50, 1300, 1300, 7, 7, 7, 1,
        ];
        for gro in [true, false] {
            let rx_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
            rx_sock
                .set_read_timeout(Some(std::time::Duration::from_millis(500)))
                .unwrap();
            let tx_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
            let gso = probe_gso(&tx_sock, true).on;
            assert_eq!(enable_gro(&rx_sock, gro).on, gro);
            let mut pool = PacketPool::default();
            let sent: Vec<Vec<u8>> = sizes
                .iter()
                .enumerate()
                .map(|(i, &n)| (0..n).map(|j| (i * 31 + j) as u8).collect())
                .collect();
            let out: Vec<Packet> = sent
                .iter()
                .map(|d| {
                    let mut p = pool.get();
                    p.set_payload(d).unwrap();
                    p
                })
                .collect();
            let mut tx = GsoSender::new(rx_sock.local_addr().unwrap(), gso);
            let mut rx = GroReceiver::new(16, GRO_BUFFER);
            // A lone datagram first: a message without a control message must not take the
            // room for the next one's.
            tx_sock
                .send_to(b"lone", rx_sock.local_addr().unwrap())
                .unwrap();
            assert_eq!(rx.receive(&rx_sock).unwrap(), 1);
            assert_eq!(rx.datagrams(0).collect::<Vec<_>>(), vec![&b"lone"[..]]);
            assert_eq!(rx.got[0].1, Some(tx_sock.local_addr().unwrap()));
            let r = tx.send(&tx_sock, &out);
            assert_eq!((r.datagrams, r.failed), (sizes.len() as u64, 0));
            if gso {
                assert!(r.gso_messages >= 3, "{r:?}");
            }
            let mut got: Vec<Vec<u8>> = Vec::new();
            while got.len() < sent.len() {
                let n = rx.receive(&rx_sock).unwrap();
                for i in 0..n {
                    got.extend(rx.datagrams(i).map(<[u8]>::to_vec));
                }
            }
            assert_eq!(got, sent, "gro {gro}");
        }
    }
}
