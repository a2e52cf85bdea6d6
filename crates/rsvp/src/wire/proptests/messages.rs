//! Strategies for whole messages: every message type, for IP and LSP_TUNNEL sessions, with the
//! RSVP-TE objects each may carry present or not, in the canonical forms parsing gives.

use crate::few::Few;
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

use super::*;
use crate::wire::te::proptests::{
    explicit_route, generalized_label, hello, label, label_request, record_route, session_attribute,
};

/// A sender descriptor, with RSVP-TE's RECORD_ROUTE sometimes (RFC 3209 §3.1.1).
fn sender(v6: bool, lsp: bool) -> impl Strategy<Value = SenderDescriptor> {
    (
        filter_of(v6, lsp),
        tspec(),
        option::of(adspec()),
        option::of(record_route()),
    )
        .prop_map(|(template, tspec, adspec, record_route)| SenderDescriptor {
            template,
            tspec,
            adspec,
            record_route,
        })
}

/// The LABEL and RECORD_ROUTE bound to one FILTER_SPEC (RFC 3209 §3.2.1), each there or not;
/// the label a LABEL or a Generalized LABEL (RFC 3473 §2.3), never both.
fn filter_te() -> impl Strategy<Value = FilterTe> {
    (
        option::of(prop_oneof![
            label().prop_map(|l| (Some(l), None)),
            generalized_label().prop_map(|g| (None, Some(g))),
        ]),
        option::of(record_route()),
    )
        .prop_map(|(labels, record_route)| {
            let (label, generalized_label) = labels.unwrap_or((None, None));
            FilterTe {
                label,
                record_route,
                generalized_label,
            }
        })
}

/// A flow descriptor in the canonical form parsing gives: `te` empty when no filter spec has
/// a LABEL or RECORD_ROUTE.
fn descriptor(flowspec: Option<FlowSpec>, filters: Vec<(FilterSpec, FilterTe)>) -> FlowDescriptor {
    let (filters, te): (Vec<_>, Vec<_>) = filters.into_iter().unzip();
    FlowDescriptor {
        flowspec,
        filters: filters.into(),
        te: if te.iter().all(FilterTe::is_empty) {
            Vec::new()
        } else {
            te
        },
    }
}

/// Which FLOWSPEC rules the flow descriptors are drawn for.
#[derive(Clone, Copy, Debug)]
enum Flows {
    Required,
    Tear,
}

/// A STYLE (WF, FF or SE, any flags) with a flow descriptor list of the shape it requires, its
/// filter specs of the session's kind with RSVP-TE objects bound to them sometimes.
fn style_and_flows(
    v6: bool,
    lsp: bool,
    rules: Flows,
) -> BoxedStrategy<(Style, Few<FlowDescriptor>)> {
    let fs = move || match rules {
        Flows::Required => flowspec().prop_map(Some).boxed(),
        Flows::Tear => option::of(flowspec()).boxed(),
    };
    let filter = move || (filter_of(v6, lsp), filter_te());
    let style = |kind| any::<u8>().prop_map(move |flags| Style { flags, kind });
    prop_oneof![
        (style(StyleKind::Wf), fs())
            .prop_map(|(s, flowspec)| (s, Few::One(FlowDescriptor::new(flowspec, vec![])))),
        (
            style(StyleKind::Ff),
            vec((fs(), filter()), 1..4).prop_map(|d| d
                .into_iter()
                .map(|(flowspec, f)| descriptor(flowspec, vec![f]))
                .collect::<Few<_>>())
        ),
        (style(StyleKind::Se), fs(), vec(filter(), 1..4))
            .prop_map(|(s, flowspec, filters)| (s, Few::One(descriptor(flowspec, filters)))),
    ]
    .boxed()
}

/// Any message for a session of the family `v6` names, an LSP_TUNNEL one when `lsp`.
fn message_of(v6: bool, lsp: bool) -> BoxedStrategy<Message> {
    // RFC 3209 §3.1.1: LABEL_REQUEST is not optional in an LSP tunnel's Path.
    let label_request = if lsp {
        label_request().prop_map(Some).boxed()
    } else {
        option::of(label_request()).boxed()
    };
    let path = (
        (
            option::of(integrity()),
            session_of(v6, lsp),
            hop(v6),
            time_values(),
        ),
        (
            option::of(explicit_route()),
            label_request,
            option::of(session_attribute()),
        ),
        vec(policy(), 0..3),
        sender(v6, lsp),
        vec(forward(), 0..2),
    )
        .prop_map(
            |(
                (integrity, session, hop, time_values),
                (explicit_route, label_request, session_attribute),
                policy,
                sender,
                forward,
            )| {
                Message::Path(Path {
                    integrity,
                    session,
                    hop,
                    time_values,
                    explicit_route,
                    label_request,
                    session_attribute,
                    policy,
                    sender,
                    forward,
                })
            },
        );
    let resv = (
        (
            option::of(integrity()),
            session_of(v6, lsp),
            hop(v6),
            time_values(),
        ),
        option::of(confirm(v6)),
        option::of(scope(v6)),
        vec(policy(), 0..3),
        style_and_flows(v6, lsp, Flows::Required),
        vec(forward(), 0..2),
    )
        .prop_map(
            |((integrity, session, hop, time_values), confirm, scope, policy, sf, forward)| {
                Message::Resv(Resv {
                    integrity,
                    session,
                    hop,
                    time_values,
                    confirm,
                    scope,
                    policy,
                    style: sf.0,
                    flows: sf.1,
                    forward,
                })
            },
        );
    let path_err = (
        option::of(integrity()),
        session_of(v6, lsp),
        error_spec(v6),
        vec(policy(), 0..3),
        option::of(sender(v6, lsp)),
        vec(forward(), 0..2),
    )
        .prop_map(|(integrity, session, error, policy, sender, forward)| {
            Message::PathErr(PathErr {
                integrity,
                session,
                error,
                policy,
                sender,
                forward,
            })
        });
    let resv_err = (
        (
            option::of(integrity()),
            session_of(v6, lsp),
            hop(v6),
            error_spec(v6),
        ),
        option::of(scope(v6)),
        vec(policy(), 0..3),
        style_and_flows(v6, lsp, Flows::Required),
        any::<bool>(),
        vec(forward(), 0..2),
    )
        .prop_map(
            |((integrity, session, hop, error), scope, policy, sf, empty, forward)| {
                Message::ResvErr(ResvErr {
                    integrity,
                    session,
                    hop,
                    error,
                    scope,
                    policy,
                    style: sf.0,
                    flows: if empty { vec![].into() } else { sf.1 },
                    forward,
                })
            },
        );
    let path_tear = (
        option::of(integrity()),
        session_of(v6, lsp),
        hop(v6),
        option::of((filter_of(v6, lsp), option::of(tspec()))),
        vec(forward(), 0..2),
    )
        .prop_map(|(integrity, session, hop, sd, forward)| {
            Message::PathTear(PathTear {
                integrity,
                session,
                hop,
                sender_template: sd.map(|s| s.0),
                sender_tspec: sd.and_then(|s| s.1),
                forward,
            })
        });
    let resv_tear = (
        option::of(integrity()),
        session_of(v6, lsp),
        hop(v6),
        option::of(scope(v6)),
        style_and_flows(v6, lsp, Flows::Tear),
        vec(forward(), 0..2),
    )
        .prop_map(|(integrity, session, hop, scope, sf, forward)| {
            Message::ResvTear(ResvTear {
                integrity,
                session,
                hop,
                scope,
                style: sf.0,
                flows: sf.1,
                forward,
            })
        });
    let resv_conf = (
        option::of(integrity()),
        session_of(v6, lsp),
        error_spec(v6),
        confirm(v6),
        style_and_flows(v6, lsp, Flows::Required),
        vec(forward(), 0..2),
    )
        .prop_map(|(integrity, session, error, confirm, sf, forward)| {
            Message::ResvConf(ResvConf {
                integrity,
                session,
                error,
                confirm,
                style: sf.0,
                flows: sf.1,
                forward,
            })
        });
    let integrity_challenge = challenge()
        .prop_map(|challenge| Message::IntegrityChallenge(IntegrityChallenge { challenge }));
    let integrity_response = (integrity(), challenge()).prop_map(|(i, challenge)| {
        Message::IntegrityResponse(IntegrityResponse {
            integrity: Some(i),
            challenge,
        })
    });
    let hello = (option::of(integrity()), hello())
        .prop_map(|(integrity, object)| Message::Hello(Hello { integrity, object }));
    prop_oneof![
        path,
        resv,
        path_err,
        resv_err,
        path_tear,
        resv_tear,
        resv_conf,
        integrity_challenge,
        integrity_response,
        hello
    ]
    .boxed()
}

pub(super) fn message() -> impl Strategy<Value = Message> {
    (any::<bool>(), any::<bool>()).prop_flat_map(|(v6, lsp)| message_of(v6, lsp))
}
