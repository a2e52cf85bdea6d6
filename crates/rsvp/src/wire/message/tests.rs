//! Message-level tests: every vector of `vectors.rs` parses to the expected value and that value
//! emits the same bytes; the error cases are in `tests/errors.rs`.

use crate::few::Few;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use pathwise_core::wire::internet_checksum;

use super::vectors::*;
use super::*;
use crate::wire::intserv::{
    ControlledLoadAdspec, ErrorTerms, GeneralParameters, GuaranteedAdspec, Overrides, TokenBucket,
};
use crate::wire::objects::StyleKind;

mod errors;
mod kom;
mod te;
mod te_rules;

pub(super) fn v4(a: &str) -> IpAddr {
    IpAddr::V4(a.parse::<Ipv4Addr>().unwrap())
}

pub(super) fn v6(a: &str) -> IpAddr {
    IpAddr::V6(a.parse::<Ipv6Addr>().unwrap())
}

pub(super) fn session4() -> Session {
    Session::ip(v4("10.0.0.9"), 17, 5004)
}

fn session6() -> Session {
    Session::ip(v6("2001:db8::9"), 17, 5004)
}

pub(super) fn hop(a: IpAddr, lih: u32) -> RsvpHop {
    RsvpHop::new(a, lih)
}

pub(super) fn bucket1() -> TokenBucket {
    TokenBucket {
        rate: 125_000.0,
        bucket: 1000.0,
        peak: f32::INFINITY,
        min_policed: 64,
        max_packet: 1500,
    }
}

fn bucket2() -> TokenBucket {
    TokenBucket {
        rate: 62_500.0,
        bucket: 500.0,
        ..bucket1()
    }
}

pub(super) fn f4(a: &str, port: u16) -> FilterSpec {
    FilterSpec::V4 {
        src: a.parse().unwrap(),
        src_port: port,
    }
}

fn f6(a: &str, port: u16) -> FilterSpec {
    FilterSpec::V6 {
        src: a.parse().unwrap(),
        src_port: port,
    }
}

pub(super) fn opaque(class: u8, body: &[u8]) -> Opaque {
    Opaque {
        class,
        ctype: 1,
        body: body.to_vec(),
    }
}

fn cl(b: TokenBucket, filters: Vec<FilterSpec>) -> FlowDescriptor {
    FlowDescriptor::new(Some(FlowSpec::ControlledLoad(b)), filters)
}

pub(super) fn error_spec(node: IpAddr, flags: u8, code: u8, value: u16) -> ErrorSpec {
    ErrorSpec {
        node,
        flags,
        code,
        value,
    }
}

fn general(hop_count: u32, path_bw: f32, min_latency_us: u32, mtu: u32) -> GeneralParameters {
    GeneralParameters {
        break_bit: false,
        hop_count,
        path_bw,
        min_latency_us,
        mtu,
        unknown: vec![],
    }
}

pub(super) const T30: TimeValues = TimeValues { refresh_ms: 30_000 };

/// Check a vector both ways and the header fields parse returns.
pub(super) fn check(bytes: &[u8], expected: Message) {
    assert_eq!(internet_checksum(bytes), 0, "vector checksum");
    let (hdr, msg) = Message::parse(bytes).unwrap();
    assert_eq!(msg, expected);
    assert_eq!(
        hdr,
        CommonHeader {
            flags: 0,
            msg_type: expected.msg_type(),
            checksum: u16::from_be_bytes([bytes[2], bytes[3]]),
            send_ttl: bytes[4],
            length: bytes.len() as u16,
        }
    );
    assert_eq!(Message::parse_header(bytes), Ok(hdr));
    assert_eq!(expected.buffer_len(), bytes.len());
    // Emit after a 0xa5 prefix: RSVP Length and checksum are patched at the right place.
    let mut out = vec![0xa5; 5];
    expected.emit(hdr.send_ttl, &mut out);
    assert_eq!(&out[..5], &[0xa5; 5]);
    assert_eq!(&out[5..], bytes);
}

#[test]
fn path_v4() {
    let integrity = Integrity {
        flags: 0,
        key_id: 1,
        seq: 42,
        digest: vec![0x11; 16],
    };
    check(
        PATH_V4,
        Message::Path(Path {
            integrity: Some(integrity),
            session: session4(),
            hop: hop(v4("10.0.0.1"), 3),
            time_values: T30,
            explicit_route: None,
            label_request: None,
            session_attribute: None,
            policy: vec![opaque(14, &[0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 1])],
            sender: SenderDescriptor {
                template: f4("10.0.0.1", 4000),
                tspec: SenderTspec(bucket1()),
                adspec: Some(Adspec {
                    general: general(1, 1.25e6, 100, 1500),
                    guaranteed: None,
                    controlled_load: Some(ControlledLoadAdspec::default()),
                    other: vec![],
                }),
                record_route: None,
            },
            forward: vec![opaque(200, &[0xca, 0xfe, 0xf0, 0x0d])],
        }),
    );
}

#[test]
fn path_v6() {
    let mut g = general(2, 2.5e6, 250, 1280);
    g.break_bit = true;
    check(
        PATH_V6,
        Message::Path(Path {
            integrity: None,
            session: Session {
                dest: v6("2001:db8::9"),
                protocol_id: 6,
                flags: Session::E_POLICE,
                dst_port: 80,
                extended_tunnel_id: None,
            },
            hop: hop(v6("fe80::1"), 7),
            time_values: TimeValues { refresh_ms: 45_000 },
            explicit_route: None,
            label_request: None,
            session_attribute: None,
            policy: vec![],
            sender: SenderDescriptor {
                template: f6("2001:db8::1", 4000),
                tspec: SenderTspec(bucket1()),
                adspec: Some(Adspec {
                    general: g,
                    guaranteed: Some(GuaranteedAdspec {
                        break_bit: false,
                        errors: Some(ErrorTerms {
                            c_tot: 10,
                            d_tot: 20,
                            c_sum: 10,
                            d_sum: 20,
                        }),
                        overrides: Overrides::default(),
                        unknown: vec![],
                    }),
                    controlled_load: Some(ControlledLoadAdspec::default()),
                    other: vec![],
                }),
                record_route: None,
            },
            forward: vec![],
        }),
    );
}

fn resv4(style: Style, flows: Few<FlowDescriptor>) -> Resv {
    Resv {
        integrity: None,
        session: session4(),
        hop: hop(v4("10.0.1.2"), 0),
        time_values: T30,
        confirm: None,
        scope: None,
        policy: vec![],
        style,
        flows,
        forward: vec![],
    }
}

fn resv6(style: Style, flows: Few<FlowDescriptor>) -> Resv {
    Resv {
        session: session6(),
        hop: hop(v6("fe80::2"), 1),
        ..resv4(style, flows)
    }
}

#[test]
fn resv_ff() {
    let mut r = resv4(
        Style::FF,
        vec![
            cl(bucket1(), vec![f4("10.0.0.1", 4000)]),
            cl(bucket2(), vec![f4("10.0.0.2", 4001)]),
        ]
        .into(),
    );
    r.confirm = Some(ResvConfirm {
        receiver: v4("10.0.0.9"),
    });
    check(RESV_FF_V4, Message::Resv(r));
    let r = resv6(
        Style::FF,
        vec![
            cl(
                bucket1(),
                vec![FilterSpec::V6FlowLabel {
                    src: "2001:db8::1".parse().unwrap(),
                    flow_label: 0x12345,
                }],
            ),
            cl(bucket2(), vec![f6("2001:db8::2", 4001)]),
        ]
        .into(),
    );
    check(RESV_FF_V6, Message::Resv(r));
}

#[test]
fn resv_ff_omitted_flowspec_takes_the_previous_one() {
    let (_, m) = Message::parse(RESV_FF_OMITTED_V4).unwrap();
    let expected = resv4(
        Style::FF,
        vec![
            cl(bucket1(), vec![f4("10.0.0.1", 4000)]),
            cl(bucket1(), vec![f4("10.0.0.2", 4001)]),
        ]
        .into(),
    );
    assert_eq!(m, Message::Resv(expected));
    // Re-emitted, every FLOWSPEC is written, and the result parses to the same value.
    let mut out = Vec::new();
    m.emit(255, &mut out);
    assert_eq!(out.len(), RESV_FF_OMITTED_V4.len() + 36);
    assert_eq!(Message::parse(&out).map(|(_, m2)| m2), Ok(m));
}

#[test]
fn resv_se() {
    let mut r = resv4(
        Style::SE,
        vec![FlowDescriptor {
            flowspec: Some(FlowSpec::Guaranteed {
                tspec: bucket1(),
                rate: 250_000.0,
                slack: 100,
            }),
            filters: vec![f4("10.0.0.1", 4000), f4("10.0.0.2", 4001)].into(),
            te: Vec::new(),
        }]
        .into(),
    );
    r.policy = vec![opaque(14, &[1, 2, 3, 4])];
    check(RESV_SE_V4, Message::Resv(r));
    let r = resv6(
        Style::SE,
        vec![cl(
            bucket1(),
            vec![f6("2001:db8::1", 4000), f6("2001:db8::2", 4001)],
        )]
        .into(),
    );
    check(RESV_SE_V6, Message::Resv(r));
}

#[test]
fn resv_wf() {
    let mut r = resv4(Style::WF, vec![cl(bucket1(), vec![])].into());
    r.scope = Some(Scope {
        addrs: vec![v4("10.0.0.1"), v4("10.0.0.2")],
    });
    check(RESV_WF_V4, Message::Resv(r));
    let mut r = resv6(Style::WF, vec![cl(bucket1(), vec![])].into());
    r.scope = Some(Scope {
        addrs: vec![v6("2001:db8::1")],
    });
    check(RESV_WF_V6, Message::Resv(r));
}

#[test]
fn path_err() {
    check(
        PATH_ERR_V4,
        Message::PathErr(PathErr {
            integrity: None,
            session: session4(),
            error: error_spec(v4("10.0.0.5"), 0, 2, 0),
            policy: vec![opaque(14, &[9, 9, 9, 9])],
            sender: Some(SenderDescriptor {
                template: f4("10.0.0.1", 4000),
                tspec: SenderTspec(bucket1()),
                adspec: None,
                record_route: None,
            }),
            forward: vec![],
        }),
    );
    check(
        PATH_ERR_V6,
        Message::PathErr(PathErr {
            integrity: None,
            session: session6(),
            error: error_spec(v6("2001:db8::5"), 0, 13, 0xc801),
            policy: vec![],
            sender: None,
            forward: vec![],
        }),
    );
}

#[test]
fn resv_err() {
    check(
        RESV_ERR_V4,
        Message::ResvErr(ResvErr {
            integrity: None,
            session: session4(),
            hop: hop(v4("10.0.0.5"), 1),
            error: error_spec(v4("10.0.0.5"), ErrorSpec::IN_PLACE, 1, 2),
            scope: None,
            policy: vec![],
            style: Style::FF,
            flows: vec![cl(bucket1(), vec![f4("10.0.0.1", 4000)])].into(),
            forward: vec![],
        }),
    );
    check(
        RESV_ERR_V6,
        Message::ResvErr(ResvErr {
            integrity: None,
            session: session6(),
            hop: hop(v6("2001:db8::5"), 1),
            error: error_spec(v6("2001:db8::5"), ErrorSpec::NOT_GUILTY, 21, 3),
            scope: Some(Scope {
                addrs: vec![v6("2001:db8::1")],
            }),
            policy: vec![],
            style: Style::WF,
            flows: vec![cl(bucket1(), vec![])].into(),
            forward: vec![],
        }),
    );
}

#[test]
fn path_tear() {
    check(
        PATH_TEAR_V4,
        Message::PathTear(PathTear {
            integrity: None,
            session: session4(),
            hop: hop(v4("10.0.0.1"), 3),
            sender_template: Some(f4("10.0.0.1", 4000)),
            sender_tspec: Some(SenderTspec(bucket1())),
            forward: vec![],
        }),
    );
    check(
        PATH_TEAR_V6,
        Message::PathTear(PathTear {
            integrity: None,
            session: session6(),
            hop: hop(v6("fe80::1"), 7),
            sender_template: Some(f6("2001:db8::1", 4000)),
            sender_tspec: None,
            forward: vec![],
        }),
    );
}

#[test]
fn resv_tear() {
    check(
        RESV_TEAR_V4,
        Message::ResvTear(ResvTear {
            integrity: None,
            session: session4(),
            hop: hop(v4("10.0.1.2"), 0),
            scope: None,
            style: Style::FF,
            flows: vec![
                FlowDescriptor {
                    flowspec: None,
                    filters: vec![f4("10.0.0.1", 4000)].into(),
                    te: Vec::new(),
                },
                FlowDescriptor {
                    flowspec: None,
                    filters: vec![f4("10.0.0.2", 4001)].into(),
                    te: Vec::new(),
                },
            ]
            .into(),
            forward: vec![],
        }),
    );
    check(
        RESV_TEAR_V6,
        Message::ResvTear(ResvTear {
            integrity: None,
            session: session6(),
            hop: hop(v6("fe80::2"), 1),
            scope: None,
            style: Style {
                flags: 0,
                kind: StyleKind::Se,
            },
            flows: vec![cl(bucket1(), vec![f6("2001:db8::1", 4000)])].into(),
            forward: vec![],
        }),
    );
}

#[test]
fn resv_conf() {
    check(
        RESV_CONF_V4,
        Message::ResvConf(ResvConf {
            integrity: None,
            session: session4(),
            error: error_spec(v4("10.0.0.5"), 0, 0, 0),
            confirm: ResvConfirm {
                receiver: v4("10.0.0.9"),
            },
            style: Style::WF,
            flows: vec![cl(bucket1(), vec![])].into(),
            forward: vec![],
        }),
    );
    check(
        RESV_CONF_V6,
        Message::ResvConf(ResvConf {
            integrity: None,
            session: session6(),
            error: error_spec(v6("2001:db8::5"), 0, 0, 0),
            confirm: ResvConfirm {
                receiver: v6("2001:db8::9"),
            },
            style: Style::FF,
            flows: vec![cl(bucket1(), vec![f6("2001:db8::1", 4000)])].into(),
            forward: vec![],
        }),
    );
}

#[test]
fn accessors() {
    let (_, m) = Message::parse(RESV_CONF_V4).unwrap();
    assert_eq!(m.msg_type(), MsgType::ResvConf);
    assert_eq!(m.session(), Some(&session4()));
    for t in 0..=255u8 {
        assert_eq!(u8::from(MsgType::from(t)), t);
    }
}

#[test]
fn every_vector_parses_and_round_trips() {
    for (name, bytes) in ALL {
        let (hdr, m) = Message::parse(bytes).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let mut out = Vec::new();
        m.emit(hdr.send_ttl, &mut out);
        assert_eq!(Message::parse(&out).map(|(_, x)| x), Ok(m), "{name}");
    }
}

#[test]
fn hello_vectors() {
    use super::{Hello, HelloKind, HelloObject};
    let (h, m) = Message::parse(HELLO_REQUEST).unwrap();
    assert_eq!((h.msg_type, h.send_ttl), (MsgType::Hello, 1));
    let request = Message::Hello(Hello {
        integrity: None,
        object: HelloObject {
            kind: HelloKind::Request,
            src_instance: 0x1234_5678,
            dst_instance: 0,
        },
    });
    assert_eq!(m, request);
    assert_eq!(m.session(), None);
    let mut out = Vec::new();
    request.emit(1, &mut out);
    assert_eq!(out, HELLO_REQUEST);
    let (_, m) = Message::parse(HELLO_ACK_SIGNED).unwrap();
    let Message::Hello(ack) = &m else {
        panic!("{m:?}");
    };
    assert_eq!(
        ack.integrity.as_ref().map(|i| (i.key_id, i.seq)),
        Some((1, 42))
    );
    assert_eq!(
        ack.object,
        HelloObject {
            kind: HelloKind::Ack,
            src_instance: 0x9abc_def0,
            dst_instance: 0x1234_5678,
        }
    );
    let mut out = Vec::new();
    m.emit(1, &mut out);
    assert_eq!(out, HELLO_ACK_SIGNED);
    // RFC 3209 §5.1: the HELLO object is mandatory, and nothing else is allowed.
    let mut missing = Vec::new();
    Message::parse(PATH_V4).unwrap();
    missing.extend_from_slice(&[0x10, 0x14, 0x00, 0x00, 0x01, 0x00, 0x00, 0x08]);
    assert_eq!(
        Message::parse(&missing).unwrap_err().kind,
        crate::wire::ParseErrorKind::MissingObject { class: 22 }
    );
}

#[test]
fn srefresh_vectors_of_every_list_form() {
    use crate::wire::message::{Refresh, Srefresh};
    use crate::wire::te::{MessageIdList, MessageIds, MulticastMessageId, SourceMessageId};
    let list = |ids| MessageIdList {
        flags: 0,
        epoch: 42,
        ids,
    };
    let cases = [
        (
            SREFRESH_LIST_MCAST_V4,
            vec![
                list(MessageIds::List(vec![1])),
                list(MessageIds::Ipv4McastList(vec![MulticastMessageId {
                    message_id: 2,
                    source: [10, 0, 0, 1].into(),
                    destination: [224, 1, 1, 1].into(),
                }])),
            ],
        ),
        (
            SREFRESH_SRC_V6,
            vec![list(MessageIds::Ipv6SrcList(vec![SourceMessageId {
                message_id: 3,
                source: "2001:db8::1".parse().unwrap(),
            }]))],
        ),
    ];
    for (bytes, lists) in cases {
        let m = Message::Srefresh(Srefresh {
            integrity: None,
            lists,
        });
        let (h, parsed) = Message::parse(bytes).unwrap();
        assert_eq!((h.flags, &parsed), (1, &m));
        let mut out = Vec::new();
        m.emit_with(1, 1, &Refresh::default(), &mut out);
        assert_eq!(out, bytes);
    }
}
