//! IPC frames: round trips, no panics on any bytes, streams cut anywhere; and the Ping NSLP
//! served out of process over a socket pair, end to end between two engines.

use super::*;
use crate::nslp::ping::{NSLPID, PingConfig, PingEvent, PingNslp};
use crate::nslp::*;
use crate::wire::proptests::{addr, mri};
use crate::wire::{Mri, PathCoupledMri, SessionId};
use crate::{Config, GistEngine, GistEvent};
use pathwise_core::engine::Engine;
use pathwise_core::io::{IfIndex, Transmit};
use pathwise_core::time::{Duration, Instant};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use std::cell::Cell;
use std::net::IpAddr;
use std::rc::Rc;

fn any_addr() -> BoxedStrategy<IpAddr> {
    any::<bool>().prop_flat_map(addr).boxed()
}

fn transfer() -> impl Strategy<Value = TransferAttributes> {
    (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(reliable, secure, setup_state)| {
        TransferAttributes {
            reliable,
            secure,
            setup_state,
        }
    })
}

fn direction() -> impl Strategy<Value = Direction> {
    prop_oneof![Just(Direction::Downstream), Just(Direction::Upstream)]
}

fn sid() -> impl Strategy<Value = SessionId> {
    any::<[u8; 16]>().prop_map(SessionId)
}

fn data() -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..64)
}

fn api_error() -> impl Strategy<Value = ApiError> {
    prop_oneof![
        any::<u16>().prop_map(ApiError::UnknownNslpid),
        Just(ApiError::UnsupportedMri),
        Just(ApiError::MessageTooLarge),
        Just(ApiError::NoRoutingState),
        Just(ApiError::NoLocalAddress),
        Just(ApiError::Unsupported),
        Just(ApiError::InvalidMri),
        Just(ApiError::ZeroHopCount),
    ]
}

/// What a frame becomes written in version 2 or 3: no explicit-routing flag, and an unknown
/// SII-Handle reported as no peer.
fn without_version_4_fields(mut f: Frame) -> Frame {
    match &mut f {
        Frame::Recv { msg, .. } => msg.explicitly_routed = false,
        Frame::Status { status, .. } if status.error == Some(DeliveryError::UnknownSiiHandle) => {
            status.error = Some(DeliveryError::NoPeer);
        }
        _ => {}
    }
    f
}

fn delivery_error() -> impl Strategy<Value = DeliveryError> {
    prop_oneof![
        Just(DeliveryError::NoRoutingState),
        Just(DeliveryError::NoPeer),
        (any::<u8>(), any::<u16>())
            .prop_map(|(class, code)| DeliveryError::PeerError { class, code }),
        Just(DeliveryError::MessageTooLarge),
        Just(DeliveryError::QueueFull),
        Just(DeliveryError::Unsupported),
        api_error().prop_map(DeliveryError::Refused),
        Just(DeliveryError::UnknownSiiHandle),
    ]
}

fn frame() -> BoxedStrategy<Frame> {
    let send = (
        any::<u64>(),
        any::<u16>(),
        sid(),
        mri(),
        option::of(any_addr()),
        transfer(),
        option::of(any::<u64>()),
        option::of(any::<u8>()),
        option::of(any::<u8>()),
        data(),
        any::<bool>(),
    )
        .prop_map(
            |(
                handle,
                nslpid,
                session_id,
                mri,
                sii,
                transfer,
                timeout,
                ip_ttl,
                gist_hops,
                d,
                report_dispatch,
            )| {
                Frame::Send {
                    handle: MessageHandle(handle),
                    msg: SendMessage {
                        nslp_data: d,
                        nslpid,
                        session_id,
                        mri,
                        sii_handle: sii.map(SiiHandle),
                        transfer,
                        timeout: timeout.map(Duration::from_nanos),
                        ip_ttl,
                        gist_hops,
                        report_dispatch,
                    },
                }
            },
        );
    let recv = (
        any::<u32>(),
        any::<u64>(),
        any::<u16>(),
        sid(),
        mri(),
        (any::<bool>(), any::<bool>()),
        option::of(any_addr()),
        transfer(),
        (
            any::<u8>(),
            option::of(any::<u8>()),
            any::<u8>(),
            any::<u32>(),
        ),
        data(),
    )
        .prop_map(
            |(
                upcall,
                now,
                nslpid,
                session_id,
                mri,
                (rsc, explicit),
                sii,
                transfer,
                (ttl, dist, hops, ifx),
                d,
            )| {
                Frame::Recv {
                    upcall,
                    now: Instant::from_nanos(now),
                    msg: RecvMessage {
                        nslp_data: d,
                        nslpid,
                        session_id,
                        mri,
                        routing_state_check: rsc,
                        sii_handle: sii.map(SiiHandle),
                        transfer,
                        ip_ttl: ttl,
                        ip_distance: dist,
                        gist_hops: hops,
                        inbound_interface: IfIndex(ifx),
                        explicitly_routed: explicit,
                    },
                }
            },
        );
    let notification_kind = prop_oneof![
        Just(NotificationKind::LastNode),
        (direction(), any_addr(), any::<bool>()).prop_map(|(direction, p, changed)| {
            NotificationKind::RoutingStatusChange {
                direction,
                peer: SiiHandle(p),
                changed,
            }
        }),
        direction().prop_map(|direction| NotificationKind::RoutingStateLost { direction }),
        (direction(), any_addr()).prop_map(|(direction, p)| {
            NotificationKind::CommunicationFailure {
                direction,
                peer: SiiHandle(p),
            }
        }),
    ];
    prop_oneof![
        any::<u16>().prop_map(|nslpid| Frame::Register { nslpid }),
        send,
        (any::<u16>(), sid(), mri(), direction(), any::<u64>()).prop_map(
            |(nslpid, session_id, mri, direction, l)| Frame::SetStateLifetime {
                nslpid,
                session_id,
                mri,
                direction,
                lifetime: Duration::from_nanos(l),
            }
        ),
        (any::<u16>(), sid(), mri(), direction(), any::<bool>()).prop_map(
            |(nslpid, session_id, mri, direction, urgent)| Frame::InvalidateRoutingState {
                nslpid,
                session_id,
                mri,
                direction,
                urgent,
            }
        ),
        (any::<u32>(), option::of(option::of(data()))).prop_map(|(upcall, d)| Frame::Decision {
            upcall,
            decision: match d {
                None => RoutingDecision::Decline,
                Some(response_data) => RoutingDecision::Accept { response_data },
            },
        }),
        (any::<u16>(), vec(any_addr(), 0..4))
            .prop_map(|(nslpid, local)| Frame::Registered { nslpid, local }),
        recv,
        (
            any::<u64>(),
            any::<u64>(),
            any::<u16>(),
            sid(),
            option::of(delivery_error()),
            option::of(transfer()),
        )
            .prop_map(
                |(now, h, nslpid, session_id, error, transfer)| Frame::Status {
                    now: Instant::from_nanos(now),
                    status: MessageStatus {
                        handle: MessageHandle(h),
                        nslpid,
                        session_id,
                        error,
                        transfer,
                    },
                }
            ),
        (any::<u64>(), any::<u16>(), sid(), mri(), notification_kind).prop_map(
            |(now, nslpid, session_id, mri, kind)| Frame::Notify {
                now: Instant::from_nanos(now),
                notification: NetworkNotification {
                    nslpid,
                    session_id,
                    mri,
                    kind,
                },
            }
        ),
        any::<u8>().prop_map(|c| Frame::Refused {
            reason: wire_refusal(c)
        }),
    ]
    .boxed()
}

/// A refusal as the decoder makes it from a code.
fn wire_refusal(c: u8) -> Refusal {
    let b = [0, 0, 0, 3, VERSION, 0x86, c];
    match Frame::decode(&b) {
        Ok(Some((Frame::Refused { reason }, 7))) => reason,
        other => panic!("refusal {c} does not decode: {other:?}"),
    }
}

proptest! {
    #[test]
    fn frames_round_trip(f in frame()) {
        let b = f.to_bytes();
        let (g, n) = Frame::decode(&b).unwrap().unwrap();
        prop_assert_eq!(n, b.len());
        prop_assert_eq!(&g, &f);
        prop_assert_eq!(&g.to_bytes(), &b);
        // A prefix is "need more", never an error or a frame.
        for cut in [0, 1, 3, 4, b.len() / 2, b.len() - 1] {
            prop_assert_eq!(Frame::decode(&b[..cut]), Ok(None));
        }
    }

    #[test]
    fn streams_cut_anywhere(fs in vec(frame(), 1..6), cuts in vec(any::<prop::sample::Index>(), 0..8)) {
        let mut bytes = Vec::new();
        for f in &fs {
            f.encode(&mut bytes);
        }
        let mut at: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
        at.push(bytes.len());
        at.sort_unstable();
        let mut fb = FrameBuffer::default();
        let mut got = Vec::new();
        let mut from = 0;
        for to in at {
            fb.extend(&bytes[from..to]);
            from = to;
            while let Some(f) = fb.next_frame().unwrap() {
                got.push(f);
            }
        }
        prop_assert_eq!(got, fs);
        prop_assert_eq!(fb.pending(), 0);
    }

    #[test]
    fn version_2_frames_round_trip_without_the_version_3_fields(f in frame()) {
        let mut b = Vec::new();
        f.encode_version(2, &mut b);
        let (g, v, n) = Frame::decode_versioned(&b).unwrap().unwrap();
        prop_assert_eq!((v, n), (2, b.len()));
        let mut want = without_version_4_fields(f.clone());
        match &mut want {
            Frame::Send { msg, .. } => msg.report_dispatch = false,
            Frame::Status { status, .. } => status.transfer = None,
            _ => {}
        }
        prop_assert_eq!(&g, &want);
        let mut again = Vec::new();
        g.encode_version(2, &mut again);
        prop_assert_eq!(again, b);
    }

    #[test]
    fn version_3_frames_round_trip_without_the_version_4_fields(f in frame()) {
        let mut b = Vec::new();
        f.encode_version(3, &mut b);
        let (g, v, n) = Frame::decode_versioned(&b).unwrap().unwrap();
        prop_assert_eq!((v, n), (3, b.len()));
        prop_assert_eq!(&g, &without_version_4_fields(f.clone()));
        let mut again = Vec::new();
        g.encode_version(3, &mut again);
        prop_assert_eq!(again, b);
    }

    #[test]
    fn decoder_never_panics_on_arbitrary_bytes(b in vec(any::<u8>(), 0..200)) {
        if let Ok(Some((f, v, n))) = Frame::decode_versioned(&b) {
            prop_assert!(n <= b.len());
            // What decodes re-encodes to the same bytes: one encoding per value and version.
            let mut again = Vec::new();
            f.encode_version(v, &mut again);
            prop_assert_eq!(again, &b[..n]);
        }
    }

    #[test]
    fn decoder_never_panics_on_damaged_frames(
        f in frame(),
        flips in vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        trunc in any::<prop::sample::Index>(),
    ) {
        let mut b = f.to_bytes();
        for (i, x) in &flips {
            let i = i.index(b.len());
            b[i] ^= x;
        }
        let cut = trunc.index(b.len() + 1);
        for bytes in [&b[..], &b[..cut]] {
            if let Ok(Some((g, v, n))) = Frame::decode_versioned(bytes) {
                let mut again = Vec::new();
                g.encode_version(v, &mut again);
                prop_assert_eq!(again, &bytes[..n]);
            }
        }
    }
}

#[test]
fn bad_frames_are_typed_errors() {
    assert_eq!(Frame::decode(&[0, 0, 0, 1, 1]), Err(IpcError::BadLength(1)));
    assert_eq!(
        Frame::decode(&[0xff, 0xff, 0xff, 0xff]),
        Err(IpcError::BadLength(u32::MAX))
    );
    assert_eq!(
        Frame::decode(&[0, 0, 0, 2, 9, 1]),
        Err(IpcError::BadVersion(9))
    );
    // Version 1 (SendMessage answered by SendResult) is not spoken any more.
    assert_eq!(
        Frame::decode(&[0, 0, 0, 4, 1, 1, 0, 1]),
        Err(IpcError::BadVersion(1))
    );
    assert_eq!(
        Frame::decode(&[0, 0, 0, 2, VERSION, 0x7f]),
        Err(IpcError::UnknownKind(0x7f))
    );
    // Version 1's SendResult kind is retired.
    assert_eq!(
        Frame::decode(&[0, 0, 0, 2, VERSION, 0x82]),
        Err(IpcError::UnknownKind(0x82))
    );
    assert_eq!(
        Frame::decode(&[0, 0, 0, 3, VERSION, 1, 0]),
        Err(IpcError::Truncated)
    );
    assert_eq!(
        Frame::decode(&[0, 0, 0, 5, VERSION, 1, 0, 1, 0]),
        Err(IpcError::Trailing(1))
    );
    // A refusal with no API error behind it.
    let mut st = Frame::Status {
        now: Instant::ZERO,
        status: MessageStatus {
            handle: MessageHandle(1),
            nslpid: 1,
            session_id: SessionId([0; 16]),
            error: Some(DeliveryError::Refused(ApiError::UnsupportedMri)),
            transfer: None,
        },
    }
    .to_bytes();
    let n = st.len();
    st[n - 4] = 0; // the ApiError code (then its argument and the absent transfer)
    assert_eq!(
        Frame::decode(&st),
        Err(IpcError::BadValue {
            field: "api error",
            value: 0
        })
    );
    assert_eq!(
        Frame::decode(b"GET / HTTP/1.1\r\n"),
        Err(IpcError::BadLength(0x4745_5420))
    );
}

const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));

fn engine(addr: IpAddr, seed: u64) -> GistEngine {
    let cfg = Config {
        seed,
        ..Config::default()
    };
    GistEngine::on_one_link(cfg, addr)
}

fn deliver(e: &mut GistEngine, now: Instant, t: &Transmit) {
    e.handle_datagram(now, t.received_on(IfIndex(1), A));
}

/// A pings B; B's Ping NSLP runs on another thread over a socket pair, through the IPC API.
/// Two pings in one session: the first rides the Query (a Routing-State-Check answered by the
/// client with the reply as Response data), the second is a Data message the client answers
/// with a SendMessage.
#[test]
fn ping_nslp_out_of_process() {
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let client = std::thread::spawn(move || {
        let mut gist = IpcGist::register(theirs, NSLPID).unwrap();
        assert!(gist.local_addresses().contains(&B));
        let mut ping = PingNslp::new(PingConfig::default());
        let e = gist.serve(&mut ping);
        (ping.stats(), e.to_string())
    });
    let mut a = engine(A, 1);
    a.register(Box::new(PingNslp::new(PingConfig::default())));
    let mut b = engine(B, 2);
    b.register(Box::new(PingNslp::new(PingConfig::default()))); // displaced by the client
    let mut server = IpcServer::unbound();
    server.adopt(ours).unwrap();
    let t0 = std::time::Instant::now();
    while server.registered() != [NSLPID] {
        server.poll(&mut b, Instant::ZERO);
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(5),
            "no registration"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let mut sid = None;
    let mut replies = 0;
    let mut now = Instant::from_millis(1);
    for round in 0..2 {
        let seq = a
            .with_nslp::<PingNslp, _>(now, |p, g| match sid {
                None => {
                    let s = g.new_session_id();
                    sid = Some(s);
                    p.ping_session(g, now, s, A, B)
                }
                Some(s) => p.ping_session(g, now, s, A, B),
            })
            .unwrap()
            .unwrap();
        let t0 = std::time::Instant::now();
        'wait: loop {
            now += Duration::from_micros(100);
            server.poll(&mut b, now);
            while let Some(t) = a.poll_transmit() {
                deliver(&mut b, now, &t);
            }
            server.poll(&mut b, now);
            while let Some(t) = b.poll_transmit() {
                deliver(&mut a, now, &t);
            }
            while let Some(ev) = a.poll_event() {
                if let GistEvent::Nslp(NslpEvent::Ping(PingEvent::Reply { seq: s, path, .. })) = ev
                {
                    assert_eq!(s, seq);
                    assert_eq!(path.last().map(|h| h.addr), Some(B), "round {round}");
                    replies += 1;
                    break 'wait;
                }
            }
            assert!(
                t0.elapsed() < std::time::Duration::from_secs(5),
                "no reply in round {round}: {:?}",
                server.stats()
            );
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }
    assert_eq!(replies, 2);
    let st = server.stats();
    assert_eq!(st.decisions, 1, "{st:?}");
    assert!(st.api_calls >= 1, "{st:?}");
    assert_eq!(st.malformed, 0);
    // GIST goes: the client sees the connection end.
    drop(server);
    let (stats, _) = client.join().unwrap();
    assert_eq!(stats.answered, 2);
}

#[test]
fn disconnect_unregisters_and_restores() {
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let mut b = engine(B, 2);
    b.register(Box::new(PingNslp::new(PingConfig::default())));
    let mut server = IpcServer::unbound();
    server.adopt(ours).unwrap();
    let c = std::thread::spawn(move || IpcGist::register(theirs, NSLPID).map(drop));
    let t0 = std::time::Instant::now();
    while server.registered().is_empty() {
        server.poll(&mut b, Instant::ZERO);
        assert!(t0.elapsed() < std::time::Duration::from_secs(5));
    }
    c.join().unwrap().unwrap(); // registered, then dropped: the connection closes
    let t0 = std::time::Instant::now();
    while server.clients() > 0 {
        server.poll(&mut b, Instant::ZERO);
        assert!(t0.elapsed() < std::time::Duration::from_secs(5));
    }
    assert!(server.registered().is_empty());
    assert!(
        b.with_nslp::<PingNslp, _>(Instant::ZERO, |_, _| ())
            .is_some()
    );
    assert_eq!(server.stats().disconnects, 1);
}

#[test]
fn garbage_is_counted_and_dropped() {
    use std::io::{Read, Write};
    let (ours, mut theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let mut b = engine(B, 2);
    let mut server = IpcServer::unbound();
    server.adopt(ours).unwrap();
    theirs.write_all(b"\x00\x00\x00\x04\x01\x99zz").unwrap();
    server.poll(&mut b, Instant::ZERO);
    assert_eq!(server.clients(), 0);
    assert_eq!(server.stats().malformed, 1);
    let mut back = Vec::new();
    theirs.read_to_end(&mut back).unwrap();
    assert_eq!(
        Frame::decode(&back),
        Ok(Some((
            Frame::Refused {
                reason: Refusal::Malformed
            },
            back.len()
        )))
    );
    // API calls before registering are refused, the connection kept.
    let (ours, mut theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    server.adopt(ours).unwrap();
    let mri = Mri::PathCoupled(PathCoupledMri::flow(A, B));
    let f = Frame::Send {
        handle: MessageHandle(1),
        msg: SendMessage::new(NSLPID, SessionId([1; 16]), mri, vec![]),
    };
    theirs.write_all(&f.to_bytes()).unwrap();
    server.poll(&mut b, Instant::ZERO);
    assert_eq!(server.clients(), 1);
    assert_eq!(server.stats().refused, 1);
}

/// SendMessage is pipelined: the client does not wait, GIST answers only a refusal, as a
/// MessageStatus under the client's handle.
#[test]
fn send_message_is_pipelined_and_refusals_come_back_as_status() {
    const N: usize = 50;
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let client = std::thread::spawn(move || {
        let mut gist = IpcGist::register(theirs, NSLPID).unwrap();
        let now = Instant::ZERO;
        let mri = Mri::PathCoupled(PathCoupledMri::flow(B, A));
        let mut secure = SendMessage::new(NSLPID, SessionId([9; 16]), mri.clone(), vec![1]);
        secure.transfer.secure = true; // no TLS on this node: refused
        let refused = gist.send_message(now, secure).unwrap();
        let mut handles = vec![refused];
        for i in 0..N {
            let sid = SessionId([i as u8 + 10; 16]);
            let msg = SendMessage::new(NSLPID, sid, mri.clone(), vec![2]);
            handles.push(gist.send_message(now, msg).unwrap());
        }
        let u = gist
            .next_upcall(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        (handles, u)
    });
    let mut b = engine(B, 2);
    let mut server = IpcServer::unbound();
    server.adopt(ours).unwrap();
    let t0 = std::time::Instant::now();
    let mut sent = 0;
    while server.stats().api_calls < N as u64 + 1 {
        server.poll(&mut b, Instant::ZERO);
        while b.poll_transmit().is_some() {
            sent += 1;
        }
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            server.stats()
        );
    }
    while b.poll_transmit().is_some() {
        sent += 1;
    }
    server.flush();
    let (handles, u) = client.join().unwrap();
    assert_eq!(sent, N, "one Query per session");
    let distinct: std::collections::HashSet<_> = handles.iter().collect();
    assert_eq!(
        distinct.len(),
        N + 1,
        "handles are the client's, one per message"
    );
    match u {
        Some(Upcall::Status { status, .. }) => {
            assert_eq!(status.handle, handles[0]);
            assert_eq!(
                status.error,
                Some(DeliveryError::Refused(ApiError::Unsupported))
            );
        }
        other => panic!("expected the refusal, got {other:?}"),
    }
    assert_eq!(server.stats().upcalls, 1);
}

#[test]
fn vector_frames_decode_alone_and_from_one_stream() {
    let frames = vectors::frames();
    let mut stream = Vec::new();
    for (name, f) in &frames {
        let b = f.to_bytes();
        assert_eq!(Frame::decode(&b), Ok(Some((f.clone(), b.len()))), "{name}");
        f.encode(&mut stream);
    }
    let mut fb = FrameBuffer::default();
    fb.extend(&stream);
    for (name, f) in &frames {
        assert_eq!(fb.next_frame().as_ref(), Ok(&Some(f.clone())), "{name}");
    }
    assert_eq!(fb.next_frame(), Ok(None));
}

#[test]
fn vector_v2_frames_decode_as_version_2() {
    for (name, b) in vectors::v2_frames() {
        match Frame::decode_versioned(&b) {
            Ok(Some((f, 2, n))) => {
                assert_eq!(n, b.len(), "{name}");
                let mut again = Vec::new();
                f.encode_version(2, &mut again);
                assert_eq!(again, b, "{name}");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
}

/// A client of version 2 registers, sends and hears back in version 2; a client of version 3
/// asking for dispatch reports hears that its message went out, and with which attributes.
#[test]
fn version_2_clients_are_answered_in_version_2_and_dispatch_is_reported_in_version_3() {
    use std::io::{Read, Write};
    let mut b = engine(B, 2);
    let mut server = IpcServer::unbound();
    let read_frames = |s: &mut std::os::unix::net::UnixStream, want: usize| {
        s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let mut fb = FrameBuffer::default();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while got.len() < want {
            let n = s.read(&mut buf).expect("an answer");
            assert!(n > 0, "closed after {got:?}");
            fb.extend(&buf[..n]);
            while let Some(fv) = fb.next_frame_versioned().unwrap() {
                got.push(fv);
            }
        }
        got
    };
    let mri = Mri::PathCoupled(PathCoupledMri::flow(B, A));

    // Version 2: register, then a SendMessage GIST refuses (secure, no TLS here).
    let (ours, mut theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    server.adopt(ours).unwrap();
    let mut out = Vec::new();
    Frame::Register { nslpid: 42 }.encode_version(2, &mut out);
    let mut secure = SendMessage::new(42, SessionId([3; 16]), mri.clone(), vec![1, 2, 3, 4]);
    secure.transfer.secure = true;
    Frame::Send {
        handle: MessageHandle(7),
        msg: secure,
    }
    .encode_version(2, &mut out);
    theirs.write_all(&out).unwrap();
    server.poll(&mut b, Instant::ZERO);
    let got = read_frames(&mut theirs, 2);
    assert!(got.iter().all(|(_, v)| *v == 2), "{got:?}");
    assert!(
        matches!(got[0].0, Frame::Registered { nslpid: 42, .. }),
        "{got:?}"
    );
    match &got[1].0 {
        Frame::Status { status, .. } => {
            assert_eq!(status.handle, MessageHandle(7));
            assert_eq!(
                status.error,
                Some(DeliveryError::Refused(ApiError::Unsupported))
            );
        }
        f => panic!("{f:?}"),
    }
    drop(theirs);
    server.poll(&mut b, Instant::ZERO);
    assert!(server.registered().is_empty());

    // Version 3: a message asking for a dispatch report; the engine's Query carries it and the
    // Response (fed by hand from A's engine) confirms it.
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    server.adopt(ours).unwrap();
    let client = std::thread::spawn(move || {
        let mut gist = IpcGist::register(theirs, 42).unwrap();
        let mut m = SendMessage::new(42, SessionId([4; 16]), mri, b"word".to_vec());
        m.report_dispatch = true;
        let h = gist.send_message(Instant::ZERO, m).unwrap();
        let u = gist
            .next_upcall(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        (h, u)
    });
    let mut a = engine(A, 1);
    a.register(Box::new(crate::nslp::relay::RelayNslp::new(42)));
    let t0 = std::time::Instant::now();
    let mut now = Instant::ZERO;
    while !client.is_finished() {
        now += Duration::from_micros(100);
        server.poll(&mut b, now);
        while let Some(t) = b.poll_transmit() {
            deliver(&mut a, now, &t);
        }
        while let Some(t) = a.poll_transmit() {
            deliver(&mut b, now, &t);
        }
        server.poll(&mut b, now);
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            server.stats()
        );
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    let (h, u) = client.join().unwrap();
    match u {
        Some(Upcall::Status { status, .. }) => {
            assert_eq!(status.handle, h);
            assert_eq!(status.error, None);
            assert_eq!(
                status.transfer,
                Some(TransferAttributes::default()),
                "D-mode"
            );
        }
        other => panic!("expected the dispatch report, got {other:?}"),
    }
}

/// A client the admission check refuses gets `Refused(PermissionDenied)` (before or after its
/// Register is written), is counted and never served; the next one is served.
#[test]
fn clients_the_admission_refuses_are_told_counted_and_dropped() {
    let dir = std::env::temp_dir().join(format!("pw-ipc-admission-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("gist.sock");
    let mut server = IpcServer::bind(&path).unwrap();
    let asked = Rc::new(Cell::new(0u32));
    let seen = Rc::clone(&asked);
    // The first client is refused, the second admitted.
    server.set_admission(move |_| {
        seen.set(seen.get() + 1);
        seen.get() > 1
    });
    let mut b = engine(B, 2);
    let p = path.clone();
    let refused = std::thread::spawn(move || IpcGist::connect(&p, NSLPID).map(drop));
    let t0 = std::time::Instant::now();
    while server.stats().denied == 0 {
        server.poll(&mut b, Instant::ZERO);
        assert!(t0.elapsed() < std::time::Duration::from_secs(5));
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let e = refused.join().unwrap().unwrap_err();
    assert!(
        matches!(e, ClientError::Refused(Refusal::PermissionDenied)),
        "{e:?}"
    );
    assert!(e.to_string().contains("permission denied"), "{e}");
    assert_eq!(server.clients(), 0);
    assert_eq!(server.stats().accepted, 0);
    let p = path.clone();
    let admitted = std::thread::spawn(move || IpcGist::connect(&p, NSLPID).map(drop));
    let t0 = std::time::Instant::now();
    while server.stats().registrations == 0 {
        server.poll(&mut b, Instant::ZERO);
        assert!(t0.elapsed() < std::time::Duration::from_secs(5));
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    admitted.join().unwrap().unwrap();
    assert_eq!((asked.get(), server.stats().denied), (2, 1));
    drop(server);
    assert!(!path.exists(), "the socket file goes with the server");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn permission_denied_has_its_own_code() {
    assert_eq!(wire_refusal(6), Refusal::PermissionDenied);
    let b = Frame::Refused {
        reason: Refusal::PermissionDenied,
    }
    .to_bytes();
    assert_eq!(b.last(), Some(&6));
}

/// The NSLP's user answers `outgoing_interface` over IPC (its node's routes are GIST's); each
/// call asks the lookup afresh, and without one the answer is "not known".
#[test]
fn outgoing_interface_comes_from_the_users_lookup() {
    use std::io::Write;
    let registered = |local: Vec<IpAddr>| {
        let (ours, mut theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        theirs
            .write_all(&Frame::Registered { nslpid: 1, local }.to_bytes())
            .unwrap();
        (IpcGist::register(ours, 1).unwrap(), theirs)
    };
    let (plain, _d) = registered(vec![A]);
    assert_eq!(plain.outgoing_interface(B), None);

    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = asked.clone();
    let (gist, _d) = registered(vec![A]);
    let gist = gist.with_outgoing_interface(Box::new(move |dst| {
        count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        (dst == B).then_some(IfIndex(7))
    }));
    let api: &dyn GistApi = &gist;
    assert_eq!(api.outgoing_interface(B), Some(IfIndex(7)));
    assert_eq!(api.outgoing_interface(A), None);
    assert_eq!(api.outgoing_interface(B), Some(IfIndex(7)));
    assert_eq!(asked.load(std::sync::atomic::Ordering::Relaxed), 3);
    assert!(api.is_local(A) && !api.is_local(B));
}
