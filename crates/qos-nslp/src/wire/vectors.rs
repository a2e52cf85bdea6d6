//! Sample messages and byte vectors laid out from the RFC figures, shared by the unit tests and
//! the fuzz seeds (`examples/fuzz_seeds.rs`).

use super::qspec::{
    ParamFlags, ParamValue, Parameter, PathJitter, Qspec, QspecObject, QspecObjectType,
    QspecProcedure, Tmod,
};
use super::{
    Answers, BindingCode, BindingType, Body, BoundSessionId, ErrorClass, ErrorSource,
    Extensibility, GenericFlags, InfoSpec, Message, MessageBinding, Notify, PacketClassifier,
    Query, RefreshPeriod, Reserve, Response, Rii, Rsn, RsnList, SessionId, SessionIdList,
    UnknownObject, code,
};

/// An initial sender-initiated RESERVE (RFC 5974 §4.1), laid out from §5.1.1, §5.1.2.1,
/// §5.1.3.1–§5.1.3.3, §5.1.3.5 and §5.1.3.11 with RFC 5975 §5.1.1, §5.1.2, §5.2.1, §5.2.3:
/// REPLACE set, RSN 1 in epoch 0x01020304, RII 42, REFRESH-PERIOD 30 s, a PACKET-CLASSIFIER
/// (X, Y, P, B) and a QSPEC whose QoS Desired holds `<TMOD-1>` (1 Mbit/s, 3000-octet bucket,
/// infinite peak, m 64, MPS 1500) and `<Path Latency>` 20 ms.
#[rustfmt::skip]
pub const RESERVE_INITIAL: [u8; 84] = [
    // Common header: RESERVE, flags R, no generic flags.
    0x01, 0x01, 0x00, 0x00,
    // RSN (0x002), 2 words.
    0x00, 0x02, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x01, 0x02, 0x03, 0x04,
    // RII (0x001), 1 word.
    0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x2a,
    // REFRESH-PERIOD (0x003), 1 word: 30000 ms.
    0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x75, 0x30,
    // PACKET-CLASSIFIER (0x005), 1 word: X Y P B.
    0x00, 0x05, 0x00, 0x01, 0xe1, 0x00, 0x00, 0x00,
    // QSPEC (0x00b), 10 words.
    0x00, 0x0b, 0x00, 0x0a,
    // Common QSPEC header: version 0, initiator, type 0, procedure 0/0, 9 words.
    0x00, 0x00, 0x00, 0x09,
    // QoS Desired, 8 words.
    0x00, 0x00, 0x00, 0x08,
    // <TMOD-1>: M, ID 1, 5 words; r, b, p (IEEE floats), m, MPS.
    0x80, 0x01, 0x00, 0x05,
    0x47, 0xf4, 0x24, 0x00, 0x45, 0x3b, 0x80, 0x00, 0x7f, 0x80, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x05, 0xdc,
    // <Path Latency>: ID 3, 1 word: 20000 us.
    0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x4e, 0x20,
];

/// The controlled-load-like `<TMOD-1>` of the samples.
pub fn tmod() -> Tmod {
    Tmod {
        rate: 125_000.0,
        bucket_size: 3000.0,
        peak_rate: f32::INFINITY,
        min_policed_unit: 64,
        max_packet_size: 1500,
    }
}

/// The QSPEC of [`RESERVE_INITIAL`].
pub fn qspec_desired() -> Qspec {
    Qspec::new(
        QspecProcedure::default(),
        vec![QspecObject::new(
            QspecObjectType::QosDesired,
            vec![
                Parameter::new(ParamFlags::MANDATORY, ParamValue::Tmod1(tmod())),
                Parameter::new(ParamFlags::default(), ParamValue::PathLatency(20_000)),
            ],
        )],
    )
}

/// [`RESERVE_INITIAL`] as a value.
pub fn reserve_initial() -> Message {
    Message::new(Body::Reserve(Reserve {
        replace: true,
        rii: Some(Rii(42)),
        refresh_period: Some(RefreshPeriod::DEFAULT),
        packet_classifier: Some(PacketClassifier(
            PacketClassifier::SOURCE_ADDRESS
                | PacketClassifier::DESTINATION_ADDRESS
                | PacketClassifier::PROTOCOL
                | PacketClassifier::DESTINATION_PORT,
        )),
        qspec: Some(qspec_desired()),
        ..Reserve::new(Rsn {
            rsn: 1,
            epoch: 0x0102_0304,
        })
    }))
}

/// A reduced refresh: RSN only, ACK-REQ set (§5.1.1: "only used with refresh messages").
pub fn reserve_refresh() -> Message {
    Message {
        flags: GenericFlags {
            ack_req: true,
            ..GenericFlags::default()
        },
        body: Body::Reserve(Reserve::new(Rsn {
            rsn: 1,
            epoch: 0x0102_0304,
        })),
    }
}

/// A tearing RESERVE with an RII (a confirmed tear, §5.4.1).
pub fn reserve_tear() -> Message {
    Message::new(Body::Reserve(Reserve {
        tear: true,
        rii: Some(Rii(43)),
        ..Reserve::new(Rsn {
            rsn: 2,
            epoch: 0x0102_0304,
        })
    }))
}

/// A summary refresh of two more sessions (§3.2.6), bound to another session, with a MSG-ID
/// and unknown objects to forward (AB=10) and to store (AB=11).
pub fn reserve_summary() -> Message {
    Message::new(Body::Reserve(Reserve {
        bound_sessions: vec![BoundSessionId {
            code: BindingCode::BIDIRECTIONAL,
            session_id: SessionId([0x77; 16]),
        }],
        session_id_list: Some(SessionIdList(vec![
            SessionId([0x11; 16]),
            SessionId([0x22; 16]),
        ])),
        rsn_list: Some(RsnList {
            epoch: 0x0102_0304,
            rsns: vec![5, 6],
        }),
        message_binding: Some(MessageBinding::MsgId {
            binding: BindingType::Bidirectional,
            id: [0x3c; 16],
        }),
        unknown: vec![
            UnknownObject {
                object_type: 0x7d0,
                treatment: Extensibility::Forward,
                body: vec![1, 2, 3, 4],
            },
            UnknownObject {
                object_type: 0x7d1,
                treatment: Extensibility::Refresh,
                body: vec![],
            },
        ],
        ..Reserve::new(Rsn {
            rsn: 3,
            epoch: 0x0102_0304,
        })
    }))
}

/// A resource QUERY (RFC 5975 §4.3.3, message sequence 2 / combination 0): QoS Available
/// collecting TMOD, latency and jitter, with an RII.
pub fn query_resources() -> Message {
    let qspec = Qspec::new(
        QspecProcedure {
            message_sequence: 2,
            object_combination: 0,
        },
        vec![QspecObject::new(
            QspecObjectType::QosAvailable,
            vec![
                Parameter::new(ParamFlags::MANDATORY, ParamValue::Tmod1(tmod())),
                Parameter::new(ParamFlags::default(), ParamValue::PathLatency(0)),
                Parameter::new(
                    ParamFlags::default(),
                    ParamValue::PathJitter(PathJitter::default()),
                ),
                Parameter::new(ParamFlags::default(), ParamValue::PathPlr(0.0)),
            ],
        )],
    );
    Message::new(Body::Query(Query {
        rii: Some(Rii(7)),
        ..Query::new(qspec)
    }))
}

/// A receiver-initiated reservation trigger: RESERVE-INIT, two QSPECs (§5.1.2.2 allows a
/// second), scoped to the next hop.
pub fn query_reserve_init() -> Message {
    let mut second = qspec_desired();
    second.procedure = QspecProcedure {
        message_sequence: 1,
        object_combination: 0,
    };
    Message {
        flags: GenericFlags {
            scoping: true,
            ..GenericFlags::default()
        },
        body: Body::Query(Query {
            reserve_init: true,
            packet_classifier: Some(PacketClassifier(PacketClassifier::DESTINATION_PORT)),
            second_qspec: Some(second),
            ..Query::new(qspec_desired())
        }),
    }
}

/// The RESPONSE to [`RESERVE_INITIAL`]: Success / Reservation successful for RII 42, from
/// 192.0.2.9.
pub fn response_success() -> Message {
    Message::new(Body::Response(Response {
        answers: Some(Answers::Rii(Rii(42))),
        ..Response::new(InfoSpec {
            source: ErrorSource::Ipv4([192, 0, 2, 9].into()),
            ..InfoSpec::new(ErrorClass::Success, code::success::RESERVATION_SUCCESSFUL)
        })
    }))
}

/// A RESPONSE reporting a missing RSN (Protocol Error 0x05) with an Object Type Info, to an
/// IPv6 QNE named by its address.
pub fn response_error() -> Message {
    Message::new(Body::Response(Response::new(
        InfoSpec {
            source: ErrorSource::Ipv6(std::net::Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 9)),
            ..InfoSpec::new(
                ErrorClass::ProtocolError,
                code::protocol::MANDATORY_OBJECT_MISSING,
            )
        }
        .object_type_info(super::object_type::RSN),
    )))
}

/// A NOTIFY of a route change with a QSPEC, BREAK set.
pub fn notify_route_change() -> Message {
    Message {
        flags: GenericFlags {
            break_: true,
            ..GenericFlags::default()
        },
        body: Body::Notify(Notify {
            info_spec: InfoSpec {
                source: ErrorSource::Fqdn("qne3.example.net".into()),
                ..InfoSpec::new(ErrorClass::Informational, code::informational::ROUTE_CHANGE)
            },
            qspec: Some(qspec_desired()),
            unknown: Vec::new(),
        }),
    }
}

/// Every sample message with a name (tests, fuzz seeds).
pub fn all() -> Vec<(&'static str, Message)> {
    vec![
        ("reserve_initial", reserve_initial()),
        ("reserve_refresh", reserve_refresh()),
        ("reserve_tear", reserve_tear()),
        ("reserve_summary", reserve_summary()),
        ("query_resources", query_resources()),
        ("query_reserve_init", query_reserve_init()),
        ("response_success", response_success()),
        ("response_error", response_error()),
        ("notify_route_change", notify_route_change()),
    ]
}
