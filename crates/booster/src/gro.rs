//! UDP receive offload (GRO) as pure code: the `UDP_GRO` control message the kernel attaches to
//! a coalesced message, and cutting that message back into the datagrams it holds. No sockets:
//! the gateway's `recvmmsg` loop (crates/pathwise, `booster/udp.rs`) hands over the control
//! bytes and the message, and every datagram that comes out is deboosted on its own, so the
//! link sequence numbers, the replay window and the loss meter see exactly the datagrams they
//! would see without GRO.
//!
//! The control buffer is what `recvmsg` wrote to `msg_control`: `struct cmsghdr` records in
//! the host's layout and byte order (`cmsg_len` a `size_t`, then `cmsg_level` and `cmsg_type`
//! as `int`s, data from the header's size rounded up to `size_t`, the next record at
//! `cmsg_len` rounded up the same way — `CMSG_FIRSTHDR`/`CMSG_NXTHDR`/`CMSG_DATA` of
//! `<sys/socket.h>`). Linux's UDP puts the segment size there as an `int` (`udp_cmsg_recv`,
//! `SOL_UDP`/`UDP_GRO`). Nothing here panics on any input: every length is checked first.

/// `SOL_UDP` (the protocol number of UDP).
pub const SOL_UDP: i32 = 17;
/// `UDP_GRO` (`<linux/udp.h>`).
pub const UDP_GRO: i32 = 104;

/// `sizeof(size_t)`: the width of `cmsg_len` and the alignment of records.
const WORD: usize = size_of::<usize>();
/// `sizeof(struct cmsghdr)`.
const CMSG_HDR: usize = WORD + 8;

/// `CMSG_ALIGN(n)`; `None` on overflow.
fn cmsg_align(n: usize) -> Option<usize> {
    Some(n.checked_add(WORD - 1)? & !(WORD - 1))
}

/// The segment size of a coalesced message from its control bytes: the data of a
/// `SOL_UDP`/`UDP_GRO` record, if there is one and it holds a size from 1 to 65535. Stops at
/// the first malformed record (shorter than a header, or running past the buffer), as
/// `CMSG_NXTHDR` does.
pub fn segment_size(control: &[u8]) -> Option<u16> {
    let data_at = cmsg_align(CMSG_HDR)?;
    let mut off = 0usize;
    let mut found = None;
    while let Some(hdr) = control.get(off..off.checked_add(CMSG_HDR)?) {
        let len = usize::from_ne_bytes(hdr[..WORD].try_into().ok()?);
        let level = i32::from_ne_bytes(hdr[WORD..WORD + 4].try_into().ok()?);
        let kind = i32::from_ne_bytes(hdr[WORD + 4..WORD + 8].try_into().ok()?);
        if len < CMSG_HDR || len > control.len() - off {
            break;
        }
        if level == SOL_UDP && kind == UDP_GRO && len >= data_at + 4 {
            let v = i32::from_ne_bytes(control[off + data_at..off + data_at + 4].try_into().ok()?);
            found = u16::try_from(v).ok().filter(|&s| s > 0);
        }
        off = off.checked_add(cmsg_align(len)?)?;
    }
    found
}

/// Append a `SOL_UDP`/`UDP_GRO` record holding `size` to `out`, as the kernel writes it (for
/// tests and fuzz seeds).
pub fn emit_segment_size(size: i32, out: &mut Vec<u8>) {
    let data_at = CMSG_HDR.next_multiple_of(WORD);
    let len = data_at + 4;
    out.extend_from_slice(&len.to_ne_bytes());
    out.extend_from_slice(&SOL_UDP.to_ne_bytes());
    out.extend_from_slice(&UDP_GRO.to_ne_bytes());
    out.resize(out.len() + data_at - CMSG_HDR, 0);
    out.extend_from_slice(&size.to_ne_bytes());
    out.resize(out.len().next_multiple_of(WORD), 0);
}

/// The datagrams of one received message: `message` cut every `segment` bytes (the last may
/// be shorter), or the whole message as one datagram without a segment size — an empty one
/// included, so the receiver counts it like any other.
pub fn datagrams(message: &[u8], segment: Option<u16>) -> Datagrams<'_> {
    Datagrams {
        rest: message,
        segment: segment.map_or(message.len(), usize::from).max(1),
        first: true,
    }
}

/// Iterator of [`datagrams`].
#[derive(Debug, Clone)]
pub struct Datagrams<'a> {
    rest: &'a [u8],
    segment: usize,
    first: bool,
}

impl<'a> Iterator for Datagrams<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.rest.is_empty() && !std::mem::take(&mut self.first) {
            return None;
        }
        self.first = false;
        let (d, rest) = self.rest.split_at(self.segment.min(self.rest.len()));
        self.rest = rest;
        Some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::PolicyEpochs;
    use crate::packet::Packet;
    use crate::pipeline::{Receiver, Sender};
    use crate::stats::Counters;
    use crate::vectors;
    use pathwise_core::time::Instant;
    use proptest::prelude::*;
    use std::sync::Arc;

    /// Another record the kernel may put first (`IP_TOS`, one byte of data).
    fn tos_record(out: &mut Vec<u8>) {
        let len = CMSG_HDR.next_multiple_of(WORD) + 1;
        out.extend_from_slice(&len.to_ne_bytes());
        out.extend_from_slice(&0i32.to_ne_bytes());
        out.extend_from_slice(&1i32.to_ne_bytes());
        out.resize(out.len() + CMSG_HDR.next_multiple_of(WORD) - CMSG_HDR, 0);
        out.push(0x10);
        out.resize(out.len().next_multiple_of(WORD), 0);
    }

    #[test]
    fn the_segment_size_is_found_after_other_records_and_refused_when_malformed() {
        let mut c = Vec::new();
        emit_segment_size(1448, &mut c);
        assert_eq!(c.len(), CMSG_HDR.next_multiple_of(WORD) + WORD.max(4));
        assert_eq!(segment_size(&c), Some(1448));
        let mut two = Vec::new();
        tos_record(&mut two);
        emit_segment_size(1200, &mut two);
        assert_eq!(segment_size(&two), Some(1200));
        assert_eq!(segment_size(&[]), None);
        // Cut anywhere before the end of the GRO record's data: not found, no panic.
        let need = two.len() - c.len() + CMSG_HDR.next_multiple_of(WORD) + 4;
        for n in 0..two.len() {
            assert_eq!(segment_size(&two[..n]), (n >= need).then_some(1200), "{n}");
        }
        // A length shorter than a header stops the walk.
        let mut short = two.clone();
        short[..WORD].copy_from_slice(&3usize.to_ne_bytes());
        assert_eq!(segment_size(&short), None);
        // Sizes the kernel never writes.
        for bad in [0, -1, 65536] {
            let mut b = Vec::new();
            emit_segment_size(bad, &mut b);
            assert_eq!(segment_size(&b), None, "{bad}");
        }
    }

    #[test]
    fn datagrams_cut_at_the_segment_size_and_keep_an_empty_message() {
        let m: Vec<u8> = (0..10).collect();
        let cut: Vec<&[u8]> = datagrams(&m, Some(4)).collect();
        assert_eq!(cut, vec![&m[..4], &m[4..8], &m[8..]]);
        assert_eq!(datagrams(&m, None).collect::<Vec<_>>(), vec![&m[..]]);
        assert_eq!(datagrams(&[], None).collect::<Vec<_>>(), vec![&[][..]]);
        assert_eq!(datagrams(&[], Some(100)).count(), 1);
    }

    /// Boost `n` packets of the given sizes through `chain` and return the datagrams.
    fn boosted(sizes: &[usize], chain: &[&str]) -> Vec<Vec<u8>> {
        let snap = vectors::snapshot(1, chain).unwrap();
        let mut tx = Sender::new(vectors::env(1), 1400, Arc::new(Counters::default()));
        let mut out: Vec<Packet> = Vec::new();
        for (i, &n) in sizes.iter().enumerate() {
            let mut p = tx.pool().get();
            p.set_payload(&vectors::ipv4(n, i as u32, false)).unwrap();
            tx.boost(Instant::ZERO, &snap, p, &mut out);
        }
        out.iter().map(|p| p.payload().to_vec()).collect()
    }

    /// Deliver `messages` (each cut by [`datagrams`]) to a fresh receiver; its loss report and
    /// what it delivered.
    fn receive(
        messages: &[(Vec<u8>, Option<u16>)],
        policies: &PolicyEpochs,
    ) -> (Option<crate::control::Control>, Vec<Vec<u8>>) {
        let mut rx = Receiver::new(vectors::env(2), &[vectors::PEER], Arc::default());
        let mut delivered = Vec::new();
        for (m, seg) in messages {
            for d in datagrams(m, *seg) {
                let mut p = rx.pool().get();
                p.set_payload(d).unwrap();
                let mut out = Vec::new();
                rx.deboost(Instant::ZERO, vectors::PEER, policies, p, &mut out, |_| {});
                delivered.extend(out.iter().map(|p| p.payload().to_vec()));
            }
        }
        (rx.take_loss_report(), delivered)
    }

    /// What the kernel's UDP GRO makes of `datagrams`: runs of equal size (the last of a run
    /// may be shorter) of at most 64 datagrams, each one message with its segment size.
    fn gro_batches(datagrams: &[Vec<u8>]) -> Vec<(Vec<u8>, Option<u16>)> {
        let mut messages: Vec<(Vec<u8>, Option<u16>, usize, bool)> = Vec::new();
        for d in datagrams {
            let joins = matches!(messages.last(), Some((m, Some(seg), n, false))
                if *n < 64 && !d.is_empty() && d.len() <= usize::from(*seg)
                    && m.len() + d.len() <= 65535);
            match messages.last_mut() {
                Some(last) if joins => {
                    last.0.extend_from_slice(d);
                    last.2 += 1;
                    last.3 = last.1.is_some_and(|s| d.len() < usize::from(s));
                }
                _ => messages.push((d.clone(), u16::try_from(d.len()).ok(), 1, false)),
            }
        }
        messages.into_iter().map(|(m, s, _, _)| (m, s)).collect()
    }

    proptest! {
        /// Any bytes: no panic, and a size found is one the kernel could write.
        #[test]
        fn segment_size_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..96)) {
            if let Some(s) = segment_size(&bytes) {
                prop_assert!(s > 0);
            }
        }

        /// Cutting gives back the message, every datagram but the last of the segment size.
        #[test]
        fn datagrams_cover_the_message(
            m in proptest::collection::vec(any::<u8>(), 0..3000),
            seg in proptest::option::of(1u16..2000),
        ) {
            let cut: Vec<&[u8]> = datagrams(&m, seg).collect();
            prop_assert_eq!(cut.concat(), m.clone());
            if let Some(s) = seg {
                for d in &cut[..cut.len() - 1] {
                    prop_assert_eq!(d.len(), usize::from(s));
                }
            }
        }

        /// The same datagrams, some lost on the way, give the receiver the same loss figure
        /// and the same packets whether they arrive one per message or coalesced by GRO.
        #[test]
        fn loss_is_counted_the_same_one_by_one_and_in_gro_batches(
            sizes in proptest::collection::vec(prop_oneof![Just(1000usize), Just(1000), Just(400), 40..1400usize], 1..150),
            lost in proptest::collection::vec(any::<bool>(), 150),
            encrypt in any::<bool>(),
        ) {
            let chain: &[&str] = if encrypt { &["encrypt"] } else { &["null"] };
            let policies = vectors::peer_policies(chain).unwrap();
            let sent = boosted(&sizes, chain);
            let arrived: Vec<Vec<u8>> = sent
                .iter()
                .zip(&lost)
                .filter(|&(_, &l)| !l)
                .map(|(d, _)| d.clone())
                .collect();
            let one_by_one: Vec<_> = arrived.iter().map(|d| (d.clone(), None)).collect();
            let a = receive(&one_by_one, &policies);
            let b = receive(&gro_batches(&arrived), &policies);
            prop_assert_eq!(&a, &b);
            if let Some(crate::control::Control::LossReport { received, expected }) = a.0 {
                prop_assert_eq!(received as usize, arrived.len());
                let first = lost.iter().position(|&l| !l).unwrap();
                let last = sent.len().min(lost.len()) - 1
                    - lost[..sent.len().min(lost.len())].iter().rev().position(|&l| !l).unwrap();
                prop_assert_eq!(expected as usize, last - first + 1);
            }
        }
    }
}
