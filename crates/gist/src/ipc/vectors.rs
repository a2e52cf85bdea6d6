//! IPC frames for tests and fuzz seeds: one of each kind, under the Ping NSLP's NSLPID. The
//! `fuzz_seeds` example writes each of [`frames`] to `fuzz/seeds/gist_ipc_frame/NAME.bin`,
//! and all of them, one after the other, to `stream.bin`; [`v2_frames`] are version 2
//! encodings, which GIST still serves.

use super::{Frame, Refusal};
use crate::nslp::TransferAttributes;
use crate::nslp::ping::NSLPID;
use crate::nslp::{
    ApiError, DeliveryError, Direction, MessageHandle, MessageStatus, NetworkNotification,
    NotificationKind, RecvMessage, RoutingDecision, SendMessage, SiiHandle,
};
use crate::wire::{Mri, PathCoupledMri, SessionId};
use pathwise_core::io::IfIndex;
use pathwise_core::time::{Duration, Instant};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// One frame of each kind by name (a SendMessage twice: secure, and asking for a dispatch
/// report under NSLPID 42; a RecvMessage twice: a Routing-State-Check, and explicitly routed;
/// a MessageStatus three times: dispatched over an MA, refused, and an unknown SII-Handle), for
/// session 0x07…07 and the flow 10.0.0.1 → 10.0.0.2.
pub fn frames() -> Vec<(&'static str, Frame)> {
    let a = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    let b = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
    let sid = SessionId([7; 16]);
    let mri = Mri::PathCoupled(PathCoupledMri::flow(a, b));
    let mut secure = SendMessage::new(NSLPID, sid, mri.clone(), vec![1, 2, 3]);
    secure.transfer.secure = true;
    secure.timeout = Some(Duration::from_millis(500));
    let mut report = SendMessage::new(42, sid, mri.clone(), b"any NSLP".to_vec());
    report.report_dispatch = true;
    report.gist_hops = Some(9);
    let status = |error, transfer| Frame::Status {
        now: Instant::from_millis(3),
        status: MessageStatus {
            handle: MessageHandle(9),
            nslpid: NSLPID,
            session_id: sid,
            error,
            transfer,
        },
    };
    vec![
        ("register", Frame::Register { nslpid: NSLPID }),
        (
            "send",
            Frame::Send {
                handle: MessageHandle(1),
                msg: secure,
            },
        ),
        (
            "send_report_dispatch",
            Frame::Send {
                handle: MessageHandle(2),
                msg: report,
            },
        ),
        (
            "decision",
            Frame::Decision {
                upcall: 1,
                decision: RoutingDecision::Accept {
                    response_data: Some(vec![4]),
                },
            },
        ),
        (
            "registered",
            Frame::Registered {
                nslpid: NSLPID,
                local: vec![a, IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1))],
            },
        ),
        (
            "recv_check",
            Frame::Recv {
                upcall: 1,
                now: Instant::from_millis(2),
                msg: RecvMessage {
                    nslp_data: vec![5, 6],
                    nslpid: NSLPID,
                    session_id: sid,
                    mri: mri.clone(),
                    routing_state_check: true,
                    sii_handle: Some(SiiHandle(a)),
                    transfer: SendMessage::new(NSLPID, sid, mri.clone(), vec![]).transfer,
                    ip_ttl: 63,
                    ip_distance: Some(1),
                    gist_hops: 2,
                    inbound_interface: IfIndex(1),
                    explicitly_routed: false,
                },
            },
        ),
        (
            "recv_explicit",
            Frame::Recv {
                upcall: 0,
                now: Instant::from_millis(2),
                msg: RecvMessage {
                    nslp_data: vec![7],
                    nslpid: NSLPID,
                    session_id: sid,
                    mri: mri.clone(),
                    routing_state_check: false,
                    sii_handle: Some(SiiHandle(b)),
                    transfer: SendMessage::new(NSLPID, sid, mri.clone(), vec![]).transfer,
                    ip_ttl: 64,
                    ip_distance: Some(1),
                    gist_hops: 31,
                    inbound_interface: IfIndex(2),
                    explicitly_routed: true,
                },
            },
        ),
        (
            "status_ok",
            status(
                None,
                Some(TransferAttributes {
                    reliable: true,
                    ..TransferAttributes::default()
                }),
            ),
        ),
        (
            "status_refused",
            status(
                Some(DeliveryError::Refused(ApiError::UnknownNslpid(NSLPID))),
                None,
            ),
        ),
        (
            "status_unknown_sii_handle",
            status(Some(DeliveryError::UnknownSiiHandle), None),
        ),
        (
            "notify",
            Frame::Notify {
                now: Instant::from_millis(4),
                notification: NetworkNotification {
                    nslpid: NSLPID,
                    session_id: sid,
                    mri: mri.clone(),
                    kind: NotificationKind::RoutingStateLost {
                        direction: Direction::Upstream,
                    },
                },
            },
        ),
        (
            "refused",
            Frame::Refused {
                reason: Refusal::NslpidTaken,
            },
        ),
        (
            "set_state_lifetime",
            Frame::SetStateLifetime {
                nslpid: NSLPID,
                session_id: sid,
                mri: mri.clone(),
                direction: Direction::Downstream,
                lifetime: Duration::from_secs(30),
            },
        ),
        (
            "invalidate_routing_state",
            Frame::InvalidateRoutingState {
                nslpid: NSLPID,
                session_id: sid,
                mri,
                direction: Direction::Upstream,
                urgent: true,
            },
        ),
    ]
}

/// Version 2 encodings (of the frames of [`frames`] whose format changed in version 3, and of a
/// registration), named `v2_NAME`: a version 2 client's frames, which GIST still decodes and
/// answers in version 2.
pub fn v2_frames() -> Vec<(String, Vec<u8>)> {
    frames()
        .into_iter()
        .filter(|(n, _)| ["register", "send", "status_refused"].contains(n))
        .map(|(n, f)| {
            let mut b = Vec::new();
            f.encode_version(2, &mut b);
            (format!("v2_{n}"), b)
        })
        .collect()
}
