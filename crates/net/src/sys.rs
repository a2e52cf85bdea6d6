//! The crate's only `unsafe` code: thin wrappers over the libc calls socket2 does not cover
//! (`setsockopt` for Linux-specific options, a socket filter, `recvmmsg`, `sendmmsg`).
//!
//! Everything here takes and returns plain byte buffers; encoding and decoding of control
//! messages and socket addresses lives in safe code (`cmsg.rs`).
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr;

/// `setsockopt(fd, level, name, &value, sizeof(int))`.
pub(crate) fn setsockopt_int(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: `fd` is a live descriptor for the duration of the borrow; the option value points
    // to a `c_int` on our stack that outlives the call, and its exact size is passed.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&raw const value).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Attach a classic BPF socket filter that accepts nothing (`ret #0`): the socket keeps its
/// port but every datagram for it is discarded before it is queued.
pub(crate) fn attach_drop_all_filter(fd: BorrowedFd<'_>) -> io::Result<()> {
    // BPF_RET | BPF_K with k = 0: "return 0 bytes", i.e. drop.
    let mut code = [libc::sock_filter {
        code: (libc::BPF_RET | libc::BPF_K) as u16,
        jt: 0,
        jf: 0,
        k: 0,
    }];
    let prog = libc::sock_fprog {
        len: 1,
        filter: code.as_mut_ptr(),
    };
    // SAFETY: `fd` is live for the borrow; `prog` and the one instruction it points to are on
    // our stack and outlive the call (the kernel copies the program), and its size is passed.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            (&raw const prog).cast(),
            size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Room for the source address of a received datagram.
const NAME_LEN: usize = size_of::<libc::sockaddr_storage>();

/// A zeroed `mmsghdr` (null pointers, zero lengths).
fn zeroed_mmsghdr() -> libc::mmsghdr {
    // SAFETY: `mmsghdr` is a plain C struct of integers and raw pointers, for all of which the
    // all-zero bit pattern is a valid value.
    unsafe { std::mem::zeroed() }
}

/// Receive buffers for `recvmmsg`: `n` slots of data, control and address space.
pub(crate) struct RecvSlots {
    slot_len: usize,
    ctrl_len: usize,
    data: Vec<u8>,
    ctrl: Vec<u8>,
    names: Vec<u8>,
    iovs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
}

// SAFETY: the raw pointers inside `iovs` and `hdrs` only ever point into this struct's own heap
// buffers (`data`, `ctrl`, `names`, `iovs`), are rewritten before every `recvmmsg`, and are never
// dereferenced by Rust code; they carry no thread affinity, so moving the struct to another
// thread, or sharing `&RecvSlots` (which only reads byte buffers), is sound.
unsafe impl Send for RecvSlots {}
// SAFETY: see `Send` above; `&RecvSlots` gives no access to the pointers at all.
unsafe impl Sync for RecvSlots {}

impl std::fmt::Debug for RecvSlots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvSlots")
            .field("slots", &self.hdrs.len())
            .field("slot_len", &self.slot_len)
            .finish()
    }
}

/// One datagram received into a slot.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RecvMsg<'a> {
    /// The datagram (cut to the slot length when `truncated`).
    pub data: &'a [u8],
    /// `MSG_TRUNC`: the datagram was larger than the slot.
    pub truncated: bool,
    /// The control messages.
    pub ctrl: &'a [u8],
    /// The source address (`sockaddr_*` bytes).
    pub name: &'a [u8],
}

impl RecvSlots {
    /// `n` slots of `slot_len` data bytes and `ctrl_len` control bytes each.
    pub(crate) fn new(n: usize, slot_len: usize, ctrl_len: usize) -> Self {
        let n = n.max(1);
        RecvSlots {
            slot_len,
            ctrl_len,
            data: vec![0; n * slot_len],
            ctrl: vec![0; n * ctrl_len],
            names: vec![0; n * NAME_LEN],
            iovs: vec![
                libc::iovec {
                    iov_base: ptr::null_mut(),
                    iov_len: 0
                };
                n
            ],
            hdrs: vec![zeroed_mmsghdr(); n],
        }
    }

    /// `recvmmsg(fd, slots[start..], n - start, MSG_DONTWAIT)`: the number of slots filled,
    /// starting at slot `start`.
    pub(crate) fn recv(&mut self, fd: BorrowedFd<'_>, start: usize) -> io::Result<usize> {
        let n = self.hdrs.len();
        if start >= n {
            return Ok(0);
        }
        let data = self.data.as_mut_ptr();
        let ctrl = self.ctrl.as_mut_ptr();
        let names = self.names.as_mut_ptr();
        for i in start..n {
            // `wrapping_add` keeps pointer arithmetic safe; every offset is in bounds by
            // construction (i < n, buffers sized n * len).
            self.iovs[i] = libc::iovec {
                iov_base: data.wrapping_add(i * self.slot_len).cast(),
                iov_len: self.slot_len,
            };
        }
        // Taken after the iovecs are written, so no later reference to `iovs` invalidates it.
        let iovs = self.iovs.as_mut_ptr();
        for i in start..n {
            let mut h = zeroed_mmsghdr();
            h.msg_hdr.msg_name = names.wrapping_add(i * NAME_LEN).cast();
            h.msg_hdr.msg_namelen = NAME_LEN as _;
            h.msg_hdr.msg_iov = iovs.wrapping_add(i);
            h.msg_hdr.msg_iovlen = 1;
            h.msg_hdr.msg_control = ctrl.wrapping_add(i * self.ctrl_len).cast();
            h.msg_hdr.msg_controllen = self.ctrl_len as _;
            self.hdrs[i] = h;
        }
        let hdrs = &mut self.hdrs[start..];
        // SAFETY: `hdrs` holds `n - start` initialised headers whose name, iovec and control
        // pointers point into live buffers of exactly the lengths given (set just above, derived
        // from `as_mut_ptr` of buffers not touched again until the call returns); the kernel
        // writes at most those lengths. A null timeout is allowed.
        let rc = unsafe {
            libc::recvmmsg(
                fd.as_raw_fd(),
                hdrs.as_mut_ptr(),
                hdrs.len() as _,
                libc::MSG_DONTWAIT,
                ptr::null_mut(),
            )
        };
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(rc as usize)
        }
    }

    /// The datagram in slot `i` after [`RecvSlots::recv`] returned more than `i`.
    pub(crate) fn msg(&self, i: usize) -> RecvMsg<'_> {
        let h = &self.hdrs[i];
        let len = (h.msg_len as usize).min(self.slot_len);
        // `msg_controllen` is `size_t` on glibc but `socklen_t` on musl.
        #[allow(clippy::unnecessary_cast)]
        let clen = (h.msg_hdr.msg_controllen as usize).min(self.ctrl_len);
        let nlen = (h.msg_hdr.msg_namelen as usize).min(NAME_LEN);
        RecvMsg {
            data: &self.data[i * self.slot_len..i * self.slot_len + len],
            truncated: h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
            ctrl: &self.ctrl[i * self.ctrl_len..i * self.ctrl_len + clen],
            name: &self.names[i * NAME_LEN..i * NAME_LEN + nlen],
        }
    }
}

/// One datagram for [`sendmmsg`]: destination address, up to two data parts, control data.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OutMsg<'a> {
    /// `sockaddr_*` bytes of the destination.
    pub name: &'a [u8],
    /// Data, gathered in order (an empty part is skipped).
    pub parts: [&'a [u8]; 2],
    /// Control messages.
    pub ctrl: &'a [u8],
}

/// Messages per `sendmmsg` call (stack arrays, no allocation).
const SEND_CHUNK: usize = 32;

/// `sendmmsg` over `msgs` in chunks; returns how many were sent. Sending stops at the first
/// message the kernel refuses: its error is returned only if nothing was sent.
pub(crate) fn sendmmsg(fd: BorrowedFd<'_>, msgs: &[OutMsg<'_>]) -> io::Result<usize> {
    let mut sent = 0;
    for chunk in msgs.chunks(SEND_CHUNK) {
        let mut iovs = [libc::iovec {
            iov_base: ptr::null_mut(),
            iov_len: 0,
        }; 2 * SEND_CHUNK];
        let mut hdrs = [zeroed_mmsghdr(); SEND_CHUNK];
        let mut counts = [0usize; SEND_CHUNK];
        for (i, m) in chunk.iter().enumerate() {
            for p in m.parts.iter().filter(|p| !p.is_empty()) {
                // The kernel only reads through iov_base on send; the `*mut` is what the C
                // type wants.
                iovs[2 * i + counts[i]] = libc::iovec {
                    iov_base: p.as_ptr().cast_mut().cast(),
                    iov_len: p.len(),
                };
                counts[i] += 1;
            }
        }
        // Taken after the iovecs are written, so no later reference to `iovs` invalidates it.
        let iov_base = iovs.as_mut_ptr();
        for (i, m) in chunk.iter().enumerate() {
            let h = &mut hdrs[i].msg_hdr;
            h.msg_name = m.name.as_ptr().cast_mut().cast();
            h.msg_namelen = m.name.len() as _;
            h.msg_iov = iov_base.wrapping_add(2 * i);
            h.msg_iovlen = counts[i] as _;
            if !m.ctrl.is_empty() {
                h.msg_control = m.ctrl.as_ptr().cast_mut().cast();
                h.msg_controllen = m.ctrl.len() as _;
            }
        }
        // SAFETY: the first `chunk.len()` headers are initialised; their name, iovec and control
        // pointers point into the caller's borrowed slices and the local `iovs` array, all alive
        // across the call, with exact lengths. On send the kernel only reads through them (it
        // writes `msg_len` into `hdrs`, which we own mutably).
        let rc = unsafe {
            libc::sendmmsg(
                fd.as_raw_fd(),
                hdrs.as_mut_ptr(),
                chunk.len() as _,
                libc::MSG_DONTWAIT,
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return if sent == 0 { Err(e) } else { Ok(sent) };
        }
        sent += rc as usize;
        if (rc as usize) < chunk.len() {
            break;
        }
    }
    Ok(sent)
}

#[cfg(test)]
mod tests {
    use crate::cmsg;

    #[test]
    fn cmsg_layout_matches_libc_macros() {
        for n in [0usize, 1, 4, 12, 20, 33] {
            let n32 = n as u32;
            // SAFETY: CMSG_SPACE / CMSG_LEN are pure arithmetic on their argument.
            let (space, len) = unsafe { (libc::CMSG_SPACE(n32), libc::CMSG_LEN(n32)) };
            assert_eq!(cmsg::space(n), space as usize);
            assert_eq!(cmsg::align(cmsg::HDR) + n, len as usize);
        }
    }
}
