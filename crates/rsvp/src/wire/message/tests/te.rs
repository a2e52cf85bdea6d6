//! RSVP-TE (RFC 3209): the vectors of `vectors/te.rs` parse to the expected values and emit the
//! same bytes. Where the TE objects may go, and the errors, are in `te_rules.rs`.

use super::*;
use crate::few::Few;
use crate::wire::te::{
    AbstractNode, EroSubobject, ExplicitRoute, Label, LabelRequest, RecordRoute,
    ResourceAffinities, RroSubobject, SessionAttribute,
};

pub(super) fn lsp_session4() -> Session {
    Session::lsp_tunnel(v4("192.0.2.9"), 42, v4("198.51.100.1"))
}

pub(super) fn lsp_session6() -> Session {
    Session::lsp_tunnel(v6("2001:db8::9"), 7, v6("2001:db8::1"))
}

pub(super) fn lsp4(lsp_id: u16) -> FilterSpec {
    FilterSpec::LspTunnelV4 {
        src: "198.51.100.1".parse().unwrap(),
        lsp_id,
    }
}

pub(super) fn lsp6(lsp_id: u16) -> FilterSpec {
    FilterSpec::LspTunnelV6 {
        src: "2001:db8::1".parse().unwrap(),
        lsp_id,
    }
}

pub(super) fn ipv4_node(loose: bool, a: &str, prefix_len: u8) -> EroSubobject {
    EroSubobject {
        loose,
        node: AbstractNode::Ipv4Prefix {
            addr: a.parse().unwrap(),
            prefix_len,
        },
    }
}

pub(super) fn rro_v4(a: &str) -> RroSubobject {
    RroSubobject::Ipv4 {
        addr: a.parse().unwrap(),
        prefix_len: 32,
        flags: 0,
    }
}

/// A Label subobject copied from a C-Type 1 LABEL (RFC 3209 §4.4.1.3).
pub(super) fn rro_label(flags: u8, label: u32) -> RroSubobject {
    RroSubobject::Label {
        flags,
        ctype: 1,
        contents: label.to_be_bytes().to_vec(),
    }
}

pub(super) fn rro(subobjects: Vec<RroSubobject>) -> Option<RecordRoute> {
    Some(RecordRoute { subobjects })
}

pub(super) fn te(label: u32, record_route: Option<RecordRoute>) -> FilterTe {
    FilterTe {
        label: Some(Label { label }),
        record_route,
        generalized_label: None,
    }
}

pub(super) fn path_te_v4() -> Path {
    Path {
        integrity: None,
        session: lsp_session4(),
        hop: hop(v4("10.0.0.1"), 3),
        time_values: T30,
        explicit_route: Some(ExplicitRoute {
            subobjects: vec![
                ipv4_node(false, "10.0.0.2", 32),
                EroSubobject {
                    loose: true,
                    node: AbstractNode::AutonomousSystem(65000),
                },
                ipv4_node(true, "192.0.2.9", 32),
            ],
        }),
        label_request: Some(LabelRequest {
            l3pid: 0x0800,
            range: None,
        }),
        session_attribute: Some(SessionAttribute {
            affinities: None,
            setup_priority: 7,
            holding_priority: 7,
            flags: SessionAttribute::LABEL_RECORDING_DESIRED | SessionAttribute::SE_STYLE_DESIRED,
            name: b"pathwise-lsp-1".to_vec(),
        }),
        policy: vec![],
        sender: SenderDescriptor {
            template: lsp4(1),
            tspec: SenderTspec(bucket1()),
            adspec: None,
            record_route: rro(vec![rro_v4("10.0.0.1")]),
        },
        forward: vec![],
    }
}

#[test]
fn path_te() {
    check(PATH_TE_V4, Message::Path(path_te_v4()));
    check(
        PATH_TE_V6,
        Message::Path(Path {
            integrity: None,
            session: lsp_session6(),
            hop: hop(v6("fe80::1"), 7),
            time_values: T30,
            explicit_route: Some(ExplicitRoute {
                subobjects: vec![
                    EroSubobject {
                        loose: false,
                        node: AbstractNode::Ipv6Prefix {
                            addr: "2001:db8:1::2".parse().unwrap(),
                            prefix_len: 128,
                        },
                    },
                    EroSubobject {
                        loose: true,
                        node: AbstractNode::AutonomousSystem(64512),
                    },
                ],
            }),
            label_request: Some(LabelRequest {
                l3pid: 0x86dd,
                range: None,
            }),
            session_attribute: Some(SessionAttribute {
                affinities: Some(ResourceAffinities {
                    exclude_any: 1,
                    include_any: 0,
                    include_all: 0,
                }),
                setup_priority: 4,
                holding_priority: 4,
                flags: SessionAttribute::LABEL_RECORDING_DESIRED,
                name: b"v6-lsp".to_vec(),
            }),
            policy: vec![],
            sender: SenderDescriptor {
                template: lsp6(2),
                tspec: SenderTspec(bucket1()),
                adspec: None,
                record_route: rro(vec![RroSubobject::Ipv6 {
                    addr: "2001:db8::1".parse().unwrap(),
                    prefix_len: 128,
                    flags: 0,
                }]),
            },
            forward: vec![],
        }),
    );
}

pub(super) fn resv_te4(style: Style, flows: Few<FlowDescriptor>) -> Resv {
    Resv {
        integrity: None,
        session: lsp_session4(),
        hop: hop(v4("10.0.0.2"), 0),
        time_values: T30,
        confirm: None,
        scope: None,
        policy: vec![],
        style,
        flows,
        forward: vec![],
    }
}

#[test]
fn resv_te() {
    let cl = Some(FlowSpec::ControlledLoad(bucket1()));
    let recorded = |label| rro(vec![rro_v4("10.0.0.2"), rro_label(1, label)]);
    check(
        RESV_TE_FF_V4,
        Message::Resv(resv_te4(
            Style::FF,
            vec![
                FlowDescriptor {
                    flowspec: cl,
                    filters: vec![lsp4(1)].into(),
                    te: vec![te(1000, recorded(1000))],
                },
                FlowDescriptor {
                    flowspec: cl,
                    filters: vec![lsp4(2)].into(),
                    te: vec![te(1001, None)],
                },
            ]
            .into(),
        )),
    );
    check(
        RESV_TE_SE_V4,
        Message::Resv(resv_te4(
            Style::SE,
            vec![FlowDescriptor {
                flowspec: cl,
                filters: vec![lsp4(1), lsp4(2)].into(),
                te: vec![te(1000, recorded(1000)), te(1001, recorded(1001))],
            }]
            .into(),
        )),
    );
    check(
        RESV_TE_SE_V6,
        Message::Resv(Resv {
            session: lsp_session6(),
            hop: hop(v6("fe80::2"), 1),
            flows: vec![FlowDescriptor {
                flowspec: cl,
                filters: vec![lsp6(2)].into(),
                te: vec![te(
                    3,
                    rro(vec![
                        RroSubobject::Ipv6 {
                            addr: "2001:db8::9".parse().unwrap(),
                            prefix_len: 128,
                            flags: 0,
                        },
                        rro_label(0, 3),
                    ]),
                )],
            }]
            .into(),
            ..resv_te4(Style::SE, vec![].into())
        }),
    );
}

#[test]
fn path_err_te() {
    use crate::wire::error_code::{ROUTING_PROBLEM, routing};
    check(
        PATH_ERR_TE_V4,
        Message::PathErr(PathErr {
            integrity: None,
            session: lsp_session4(),
            error: error_spec(
                v4("10.0.0.2"),
                0,
                ROUTING_PROBLEM,
                routing::BAD_EXPLICIT_ROUTE_OBJECT,
            ),
            policy: vec![],
            sender: Some(SenderDescriptor {
                template: lsp4(1),
                tspec: SenderTspec(bucket1()),
                adspec: None,
                record_route: rro(vec![rro_v4("10.0.0.1")]),
            }),
            forward: vec![],
        }),
    );
}

#[test]
fn filters_with_te_pairs_each_filter_with_its_objects() {
    let (_, m) = Message::parse(RESV_TE_FF_V4).unwrap();
    let Message::Resv(r) = m else { panic!() };
    let pairs: Vec<_> = r.flows.iter().flat_map(|f| f.filters_with_te()).collect();
    assert_eq!(pairs.len(), 2);
    assert_eq!(
        pairs[0].1.and_then(|t| t.label),
        Some(Label { label: 1000 })
    );
    assert_eq!(pairs[1].1.map(|t| t.record_route.is_none()), Some(true));
    // Without RSVP-TE objects `te` stays empty, and each filter pairs with `None`.
    let d = FlowDescriptor::new(None, vec![lsp4(1)]);
    assert!(d.te.is_empty());
    assert_eq!(d.filters_with_te().next(), Some((&lsp4(1), None)));
}
