//! The booster gateway's offload parsers, everything that takes bytes from the kernel:
//! `pathwise_booster::offload` (the TUN `virtio_net_hdr`, `split` of a frame read from the
//! device into packets, the `Coalescer` fed the packets) and `pathwise_booster::gro` (the
//! `UDP_GRO` control message, cutting a coalesced message into datagrams).
//!
//! The whole input is a device frame: the header parses and re-emits to its bytes; `split`
//! errs without output or gives whole packets no larger than a buffer; coalescing those and
//! splitting every coalesced frame again gives the same packets byte for byte, and the
//! coalescer accounts for every packet. The input cut into pieces (one length byte each) is a
//! run of packets for a fresh coalescer: every packet accounted for, every coalesced frame
//! splits into as many packets as it holds. The input is also a control buffer and a message:
//! a segment size found is 1–65535, and the datagrams cover the message exactly.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathwise_booster::gro;
use pathwise_booster::offload::{Coalescer, VNET_HDR_LEN, VirtioNetHdr, split};
use pathwise_booster::packet::{MAX_PAYLOAD, PacketPool};

/// Feed `packets` to a coalescer; the frames it writes with their packet counts.
fn coalesce(packets: &[&[u8]]) -> Vec<(Vec<u8>, usize)> {
    let mut c = Coalescer::new(true).with_udp(true);
    let mut frames = Vec::new();
    let mut write = |f: &[u8], n: usize| frames.push((f.to_vec(), n));
    for p in packets {
        c.push(p, &mut write);
    }
    c.flush(&mut write);
    frames
}

/// Split a frame the coalescer wrote (as the kernel would take it).
fn resplit(frame: &[u8], pool: &mut PacketPool) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let n = split(frame, pool, &mut out).expect("a coalesced frame splits");
    assert_eq!(n, out.len());
    let packets = out.iter().map(|p| p.payload().to_vec()).collect();
    out.into_iter().for_each(|p| pool.put(p));
    packets
}

fuzz_target!(|data: &[u8]| {
    if let Some(h) = VirtioNetHdr::parse(data) {
        let mut b = [0u8; VNET_HDR_LEN];
        h.emit(&mut b).expect("room for the header");
        assert_eq!(&b[..], &data[..VNET_HDR_LEN]);
    }

    let mut pool = PacketPool::default();
    let mut out = Vec::new();
    match split(data, &mut pool, &mut out) {
        Ok(n) => {
            assert_eq!(n, out.len());
            let first: Vec<Vec<u8>> = out.iter().map(|p| p.payload().to_vec()).collect();
            out.into_iter().for_each(|p| pool.put(p));
            assert!(first.iter().all(|p| p.len() <= MAX_PAYLOAD));
            let refs: Vec<&[u8]> = first.iter().map(Vec::as_slice).collect();
            let frames = coalesce(&refs);
            assert_eq!(frames.iter().map(|f| f.1).sum::<usize>(), first.len());
            let mut again = Vec::new();
            for (f, k) in &frames {
                if *k == 1 {
                    again.push(f[VNET_HDR_LEN..].to_vec());
                } else {
                    again.extend(resplit(f, &mut pool));
                }
            }
            assert_eq!(again, first, "split, coalesce, split changed the packets");
        }
        Err(_) => assert!(out.is_empty(), "output on error"),
    }

    // The input as a run of packets: a length byte, then that many bytes, and so on.
    let mut packets = Vec::new();
    let mut rest = data;
    while let Some((&len, tail)) = rest.split_first() {
        let (p, tail) = tail.split_at(usize::from(len).min(tail.len()));
        packets.push(p);
        rest = tail;
    }
    let frames = coalesce(&packets);
    assert_eq!(frames.iter().map(|f| f.1).sum::<usize>(), packets.len());
    for (f, k) in &frames {
        assert!(f.len() >= VNET_HDR_LEN);
        if *k > 1 {
            assert_eq!(resplit(f, &mut pool).len(), *k);
        }
    }

    // The input as the socket's control bytes and as a received message.
    let seg = gro::segment_size(data);
    assert!(seg.is_none_or(|s| s > 0));
    let cut: Vec<&[u8]> = gro::datagrams(data, seg).collect();
    assert_eq!(cut.concat(), data);
    if let Some(s) = seg {
        assert!(cut[..cut.len() - 1].iter().all(|d| d.len() == usize::from(s)));
    }
});
