//! Property tests: every message and QSPEC the strategies build parses back equal from its
//! bytes; the parser never panics on arbitrary or mutated bytes, and whatever it accepts
//! re-emits to bytes that parse to the same value.

use super::qspec::{
    ExcessTreatment, ParamFlags, ParamValue, Parameter, PathJitter, Qspec, QspecObject,
    QspecObjectType, QspecProcedure, Tmod,
};
use super::*;
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

fn words(max_words: usize) -> impl Strategy<Value = Vec<u8>> {
    vec(any::<[u8; 4]>(), 0..=max_words).prop_map(|w| w.concat())
}

fn session_id() -> impl Strategy<Value = SessionId> {
    any::<[u8; 16]>().prop_map(SessionId)
}

fn info_spec() -> impl Strategy<Value = InfoSpec> {
    let source = prop_oneof![
        Just(ErrorSource::None),
        any::<[u8; 4]>().prop_map(|a| ErrorSource::Ipv4(a.into())),
        any::<[u8; 16]>().prop_map(|a| ErrorSource::Ipv6(a.into())),
        "[a-z0-9.-]{1,40}".prop_map(ErrorSource::Fqdn),
        (4u8..16, words(3)).prop_map(|(esi_type, bytes)| ErrorSource::Other { esi_type, bytes }),
    ];
    (0u8..16, any::<u8>(), source, words(4)).prop_map(|(class, code, source, error_specific)| {
        InfoSpec {
            class: ErrorClass::from_number(class),
            code,
            source,
            error_specific,
        }
    })
}

/// r, b, p as §5.2.1 allows them: at least 1, or infinity.
fn tmod_float() -> impl Strategy<Value = f32> {
    prop_oneof![
        (127u32..255, 0u32..(1 << 23)).prop_map(|(e, m)| f32::from_bits((e << 23) | m)),
        Just(f32::INFINITY),
    ]
}

/// A non-negative finite ratio.
fn ratio() -> impl Strategy<Value = f32> {
    (0u32..255, 0u32..(1 << 23)).prop_map(|(e, m)| f32::from_bits((e << 23) | m))
}

fn tmod() -> impl Strategy<Value = Tmod> {
    (
        tmod_float(),
        tmod_float(),
        tmod_float(),
        any::<u32>(),
        any::<u32>(),
    )
        .prop_map(
            |(rate, bucket_size, peak_rate, min_policed_unit, max_packet_size)| Tmod {
                rate,
                bucket_size,
                peak_rate,
                min_policed_unit,
                max_packet_size,
            },
        )
}

fn param_value() -> impl Strategy<Value = ParamValue> {
    prop_oneof![
        tmod().prop_map(ParamValue::Tmod1),
        tmod().prop_map(ParamValue::Tmod2),
        any::<u32>().prop_map(ParamValue::PathLatency),
        any::<[u32; 4]>().prop_map(|[a, b, c, d]| ParamValue::PathJitter(PathJitter {
            variance: a,
            percentile_99_9: b,
            min_latency: c,
            reserved: d
        })),
        ratio().prop_map(ParamValue::PathPlr),
        ratio().prop_map(ParamValue::PathPer),
        any::<u32>().prop_map(ParamValue::SlackTerm),
        any::<(u16, u16)>().prop_map(|(preemption, defending)| {
            ParamValue::PreemptionPriority {
                preemption,
                defending,
            }
        }),
        any::<(u8, u8)>()
            .prop_map(|(y2171, admission)| ParamValue::AdmissionPriority { y2171, admission }),
        any::<(u16, u8)>().prop_map(|(namespace, priority)| ParamValue::RphPriority {
            namespace,
            priority
        }),
        (any::<u8>(), 0u8..64).prop_map(|(t, remark)| ParamValue::ExcessTreatment {
            treatment: match t {
                0 => ExcessTreatment::Drop,
                1 => ExcessTreatment::Shape,
                2 => ExcessTreatment::Remark,
                3 => ExcessTreatment::NoMetering,
                n => ExcessTreatment::Other(n),
            },
            remark
        }),
        any::<u16>().prop_map(ParamValue::PhbClass),
        any::<u8>().prop_map(ParamValue::DsteClassType),
        any::<u8>().prop_map(ParamValue::Y1541QosClass),
        (prop_oneof![Just(0u16), 15u16..4096], words(3))
            .prop_map(|(id, body)| ParamValue::Unknown { id, body }),
    ]
}

fn parameter() -> impl Strategy<Value = Parameter> {
    (any::<(bool, bool, bool)>(), param_value()).prop_map(|((m, e, n), value)| {
        Parameter::new(
            ParamFlags {
                mandatory: m,
                error: e,
                not_supported: n,
            },
            value,
        )
    })
}

fn qspec_object() -> impl Strategy<Value = QspecObject> {
    let ty = prop_oneof![4 => 0u16..4, 1 => 4u16..4096];
    (any::<bool>(), ty, vec(parameter(), 1..5)).prop_map(|(error, ty, mut params)| {
        let mut seen = Vec::new();
        params.retain(|p| {
            let fresh = !seen.contains(&p.value.id());
            seen.push(p.value.id());
            fresh
        });
        QspecObject {
            error,
            object_type: QspecObjectType::from_number(ty),
            params,
        }
    })
}

fn initiator_qspec() -> impl Strategy<Value = Qspec> {
    (0u8..32, 0u8..16, 0u8..16, vec(qspec_object(), 1..4)).prop_map(
        |(qspec_type, message_sequence, object_combination, mut objects)| {
            let mut seen = Vec::new();
            objects.retain(|o| {
                let fresh = !seen.contains(&o.object_type);
                seen.push(o.object_type);
                fresh
            });
            Qspec {
                version: 0,
                local: false,
                qspec_type,
                procedure: QspecProcedure {
                    message_sequence,
                    object_combination,
                },
                objects,
                encapsulated: None,
            }
        },
    )
}

pub(crate) fn qspec() -> impl Strategy<Value = Qspec> {
    (
        initiator_qspec(),
        any::<bool>(),
        option::of(initiator_qspec()),
    )
        .prop_map(|(mut q, local, inner)| {
            if local {
                q.local = true;
                q.encapsulated = inner.map(Box::new);
            }
            q
        })
}

fn unknown_object() -> impl Strategy<Value = UnknownObject> {
    let treatment = prop_oneof![
        Just(Extensibility::Ignore),
        Just(Extensibility::Forward),
        Just(Extensibility::Refresh),
    ];
    (12u16..4096, treatment, words(3)).prop_map(|(object_type, treatment, body)| UnknownObject {
        object_type,
        treatment,
        body,
    })
}

fn rsn() -> impl Strategy<Value = Rsn> {
    any::<(u32, u32)>().prop_map(|(rsn, epoch)| Rsn { rsn, epoch })
}

fn bound() -> impl Strategy<Value = BoundSessionId> {
    (any::<u8>(), session_id()).prop_map(|(c, session_id)| BoundSessionId {
        code: BindingCode(c),
        session_id,
    })
}

fn lists() -> impl Strategy<Value = (Option<SessionIdList>, Option<RsnList>)> {
    option::of((
        vec(session_id(), 0..4),
        option::of((any::<u32>(), vec(any::<u32>(), 0..4))),
    ))
    .prop_map(|l| match l {
        None => (None, None),
        Some((ids, rl)) => (
            Some(SessionIdList(ids)),
            rl.map(|(epoch, rsns)| RsnList { epoch, rsns }),
        ),
    })
}

fn binding() -> impl Strategy<Value = MessageBinding> {
    (any::<bool>(), any::<bool>(), any::<[u8; 16]>()).prop_map(|(bound, d, id)| {
        let binding = if d {
            BindingType::Bidirectional
        } else {
            BindingType::Unidirectional
        };
        if bound {
            MessageBinding::BoundMsgId { binding, id }
        } else {
            MessageBinding::MsgId { binding, id }
        }
    })
}

fn flags() -> impl Strategy<Value = GenericFlags> {
    any::<u16>().prop_map(GenericFlags::from_bits)
}

fn reserve() -> impl Strategy<Value = Message> {
    (
        (
            any::<(bool, bool)>(),
            rsn(),
            option::of(any::<u32>()),
            option::of(any::<u32>()),
        ),
        (vec(bound(), 0..3), lists(), option::of(binding())),
        (
            option::of(info_spec()),
            option::of(any::<u8>()),
            option::of(qspec()),
        ),
        (vec(unknown_object(), 0..3), flags()),
    )
        .prop_map(
            |(
                ((tear, replace), rsn, rii, refresh),
                (bound_sessions, (session_id_list, rsn_list), message_binding),
                (info_spec, pc, qspec),
                (unknown, mut flags),
            )| {
                flags.ack_req &= rii.is_none();
                Message {
                    flags,
                    body: Body::Reserve(Reserve {
                        tear,
                        replace,
                        rsn,
                        rii: rii.map(Rii),
                        refresh_period: refresh.map(RefreshPeriod),
                        bound_sessions,
                        session_id_list,
                        rsn_list,
                        message_binding,
                        info_spec,
                        packet_classifier: pc.filter(|_| qspec.is_some()).map(PacketClassifier),
                        qspec,
                        unknown,
                    }),
                }
            },
        )
}

fn query() -> impl Strategy<Value = Message> {
    (
        (any::<bool>(), option::of(any::<u32>()), vec(bound(), 0..3)),
        (option::of(any::<u8>()), option::of(info_spec())),
        (qspec(), option::of(qspec())),
        (vec(unknown_object(), 0..3), flags()),
    )
        .prop_map(
            |(
                (reserve_init, rii, bound_sessions),
                (pc, info_spec),
                (qspec, second_qspec),
                (unknown, flags),
            )| Message {
                flags,
                body: Body::Query(Query {
                    reserve_init,
                    rii: rii.map(Rii),
                    bound_sessions,
                    packet_classifier: pc.map(PacketClassifier),
                    info_spec,
                    qspec,
                    second_qspec,
                    unknown,
                }),
            },
        )
}

fn response() -> impl Strategy<Value = Message> {
    let answers = option::of(prop_oneof![
        any::<u32>().prop_map(|r| Answers::Rii(Rii(r))),
        rsn().prop_map(Answers::Rsn),
    ]);
    (
        answers,
        info_spec(),
        lists(),
        option::of(qspec()),
        vec(unknown_object(), 0..3),
        flags(),
    )
        .prop_map(
            |(answers, info_spec, (session_id_list, rsn_list), qspec, unknown, mut flags)| {
                flags.ack_req = false;
                Message {
                    flags,
                    body: Body::Response(Response {
                        answers,
                        info_spec,
                        session_id_list,
                        rsn_list,
                        qspec,
                        unknown,
                    }),
                }
            },
        )
}

fn notify() -> impl Strategy<Value = Message> {
    (
        info_spec(),
        option::of(qspec()),
        vec(unknown_object(), 0..3),
        flags(),
    )
        .prop_map(|(info_spec, qspec, unknown, mut flags)| {
            flags.ack_req = false;
            Message {
                flags,
                body: Body::Notify(Notify {
                    info_spec,
                    qspec,
                    unknown,
                }),
            }
        })
}

pub(crate) fn message() -> impl Strategy<Value = Message> {
    prop_oneof![reserve(), query(), response(), notify()]
}

/// What parses must re-emit to `buffer_len()` bytes that parse back equal.
fn assert_consistent(bytes: &[u8]) {
    if let Ok(m) = Message::parse(bytes) {
        let again = m.to_bytes();
        assert_eq!(again.len(), m.buffer_len());
        assert_eq!(Message::parse(&again).as_ref(), Ok(&m));
    }
}

proptest! {
    #[test]
    fn message_round_trip(m in message()) {
        let b = m.to_bytes();
        prop_assert_eq!(b.len(), m.buffer_len());
        prop_assert_eq!(Message::parse(&b), Ok(m));
    }

    #[test]
    fn qspec_round_trip(q in qspec()) {
        let b = q.to_bytes();
        prop_assert_eq!(b.len(), q.buffer_len());
        prop_assert_eq!(Qspec::parse(&b), Ok(q));
    }

    #[test]
    fn parser_never_panics(bytes in vec(any::<u8>(), 0..256)) {
        assert_consistent(&bytes);
        let _ = Qspec::parse(&bytes);
    }

    #[test]
    fn mutated_messages_never_panic(
        m in message(),
        flips in vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut b = m.to_bytes();
        for (at, x) in flips {
            let i = at.index(b.len());
            b[i] ^= x;
        }
        assert_consistent(&b);
        b.truncate(cut.index(b.len() + 1));
        assert_consistent(&b);
    }
}
