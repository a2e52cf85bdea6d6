//! RSVP-TE (RFC 3209) placement rules: the TE objects in any order, LABEL_REQUEST required for
//! an LSP tunnel (§3.1.1), the first ERO, RRO and SESSION_ATTRIBUTE counting (§4.3, §4.4, §4.7),
//! LABEL and RECORD_ROUTE bound to their FILTER_SPEC (§3.2.1), senders of the session's kind,
//! and the errors with their answers.

use super::errors::{ob, raw};
use super::te::*;
use super::*;
use crate::wire::objects::class;
use crate::wire::te::{ExplicitRoute, Label, RecordRoute};

fn kind(bytes: &[u8]) -> ParseErrorKind {
    Message::parse(bytes).unwrap_err().kind
}

/// The objects of `PATH_TE_V4`, each emitted alone: SESSION, RSVP_HOP, TIME_VALUES, ERO,
/// LABEL_REQUEST, SESSION_ATTRIBUTE, SENDER_TEMPLATE, SENDER_TSPEC, RRO.
fn path_objects() -> Vec<Vec<u8>> {
    let p = path_te_v4();
    vec![
        ob(|w| p.session.emit(w)),
        ob(|w| p.hop.emit(w)),
        ob(|w| p.time_values.emit(w)),
        ob(|w| p.explicit_route.as_ref().unwrap().emit(w)),
        ob(|w| p.label_request.unwrap().emit(w)),
        ob(|w| p.session_attribute.as_ref().unwrap().emit(w)),
        ob(|w| p.sender.template.emit_as(class::SENDER_TEMPLATE, w)),
        ob(|w| p.sender.tspec.emit(w)),
        ob(|w| p.sender.record_route.as_ref().unwrap().emit(w)),
    ]
}

#[test]
fn te_objects_are_accepted_in_any_order() {
    // RFC 2205 §3.1: "accept the objects in any permissible order".
    let mut objs = path_objects();
    objs.reverse();
    let (_, m) = Message::parse(&raw(1, &objs)).unwrap();
    assert_eq!(m, Message::Path(path_te_v4()));
}

#[test]
fn an_lsp_tunnel_path_needs_a_label_request() {
    // RFC 3209 §3.1.1: <LABEL_REQUEST> is not optional.
    let mut objs = path_objects();
    objs.remove(4);
    assert_eq!(
        kind(&raw(1, &objs)),
        ParseErrorKind::MissingObject { class: 19 }
    );
    // An IP session's Path may carry one, or not.
    let ip = ob(|w| session4().emit(w));
    let ip_sender = ob(|w| f4("10.0.0.1", 4000).emit_as(class::SENDER_TEMPLATE, w));
    let mut objs = path_objects();
    objs[0] = ip.clone();
    objs[6] = ip_sender.clone();
    let (_, m) = Message::parse(&raw(1, &objs)).unwrap();
    let Message::Path(p) = m else { panic!() };
    assert_eq!(p.label_request, path_te_v4().label_request);
    objs.remove(4);
    let (_, m) = Message::parse(&raw(1, &objs)).unwrap();
    let Message::Path(p) = m else { panic!() };
    assert_eq!((p.label_request, p.session.is_lsp_tunnel()), (None, false));
}

#[test]
fn the_first_ero_rro_and_session_attribute_count() {
    // RFC 3209 §4.3, §4.4, §4.7: of several, only the first is meaningful; the others are
    // dropped unread, so a malformed second one does not matter either.
    let mut objs = path_objects();
    let other_ero = ob(|w| {
        ExplicitRoute {
            subobjects: vec![ipv4_node(false, "10.9.9.9", 32)],
        }
        .emit(w)
    });
    objs.push(other_ero);
    objs.push(vec![0x00, 0x04, 20, 1]); // an empty ERO, malformed
    objs.push(vec![0x00, 0x04, 21, 1]); // an empty RRO, malformed
    let mut sa = path_te_v4().session_attribute.unwrap();
    sa.name = b"second".to_vec();
    objs.push(ob(|w| sa.emit(w)));
    let (_, m) = Message::parse(&raw(1, &objs)).unwrap();
    assert_eq!(m, Message::Path(path_te_v4()));
}

#[test]
fn duplicate_label_requests_are_refused() {
    let mut objs = path_objects();
    objs.push(objs[4].clone());
    assert_eq!(
        kind(&raw(1, &objs)),
        ParseErrorKind::DuplicateObject { class: 19 }
    );
}

#[test]
fn a_malformed_ero_is_answered_with_bad_explicit_route_object() {
    // RFC 3209 §4.3.4.1: "If there is no first subobject, the message is also in error and the
    // system SHOULD return a 'Bad EXPLICIT_ROUTE object' error."
    let mut objs = path_objects();
    objs[3] = vec![0x00, 0x04, 20, 1];
    let e = Message::parse(&raw(1, &objs)).unwrap_err();
    assert_eq!(
        e.kind,
        ParseErrorKind::BadObject {
            class: 20,
            ctype: 1
        }
    );
    assert_eq!(e.kind.error_code(), Some((24, 1)));
    // The PathErr can be addressed: the SESSION and RSVP_HOP were found.
    assert_eq!(
        (e.session, e.hop),
        (Some(lsp_session4()), Some(path_te_v4().hop))
    );
    // A subobject Length that is not a multiple of 4 (RFC 3209 §4.3.3).
    objs[3] = vec![0x00, 0x08, 20, 1, 0x20, 0x03, 0xfd, 0xe8];
    assert_eq!(kind(&raw(1, &objs)).error_code(), Some((24, 1)));
    // An unknown C-Type of a known class is error 14 (RFC 3209 §4.2.5 for LABEL_REQUEST).
    let mut objs = path_objects();
    objs[4][3] = 9;
    assert_eq!(kind(&raw(1, &objs)).error_code(), Some((14, 0x1309)));
}

#[test]
fn senders_must_be_of_the_sessions_kind() {
    // An IP SENDER_TEMPLATE in an LSP_TUNNEL session …
    let mut objs = path_objects();
    objs[6] = ob(|w| f4("198.51.100.1", 0).emit_as(class::SENDER_TEMPLATE, w));
    let e = kind(&raw(1, &objs));
    assert_eq!(
        e,
        ParseErrorKind::SessionTypeMismatch {
            class: 11,
            ctype: 1
        }
    );
    assert_eq!(e.error_code(), None);
    // … an LSP_TUNNEL FILTER_SPEC in an IP session …
    let mut resv = resv4(
        Style::FF,
        vec![FlowDescriptor::new(
            Some(FlowSpec::ControlledLoad(bucket1())),
            vec![lsp4(1)],
        )]
        .into(),
    );
    let mut b = Vec::new();
    Message::Resv(resv.clone()).emit(64, &mut b);
    assert_eq!(
        kind(&b),
        ParseErrorKind::SessionTypeMismatch {
            class: 10,
            ctype: 7
        }
    );
    // … and an LSP_TUNNEL session's objects must be of its family.
    resv.session = lsp_session6();
    resv.hop = hop(v6("fe80::2"), 1);
    let mut b = Vec::new();
    Message::Resv(resv).emit(64, &mut b);
    assert_eq!(
        kind(&b),
        ParseErrorKind::FamilyMismatch {
            class: 10,
            ctype: 7
        }
    );
}

/// The objects of a Resv for `lsp_session4()` up to STYLE.
fn resv_head(style: Style) -> Vec<Vec<u8>> {
    vec![
        ob(|w| lsp_session4().emit(w)),
        ob(|w| hop(v4("10.0.0.2"), 0).emit(w)),
        ob(|w| T30.emit(w)),
        ob(|w| style.emit(w)),
    ]
}

#[test]
fn labels_and_record_routes_bind_to_the_filter_spec_before_them() {
    let fs = ob(|w| FlowSpec::ControlledLoad(bucket1()).emit(w));
    let filter = |id| ob(|w| lsp4(id).emit(w));
    let label = |l| ob(|w| Label { label: l }.emit(w));
    let recorded = ob(|w| {
        RecordRoute {
            subobjects: vec![rro_v4("10.0.0.2")],
        }
        .emit(w)
    });
    // RRO before LABEL is accepted: both are bound to the FILTER_SPEC before them.
    let mut objs = resv_head(Style::SE);
    objs.extend([fs.clone(), filter(1), recorded.clone(), label(16)]);
    let (_, m) = Message::parse(&raw(2, &objs)).unwrap();
    let Message::Resv(r) = m else { panic!() };
    assert_eq!(r.flows[0].te, vec![te(16, rro(vec![rro_v4("10.0.0.2")]))]);
    // A second RRO after one FILTER_SPEC is dropped (RFC 3209 §4.4).
    objs.push(vec![0x00, 0x04, 21, 1]);
    assert_eq!(
        Message::parse(&raw(2, &objs)).map(|(_, m)| m),
        Ok(Message::Resv(r))
    );
    // Only one LABEL per FILTER_SPEC (RFC 3209 §3.2.1).
    let mut objs = resv_head(Style::SE);
    objs.extend([fs.clone(), filter(1), label(16), label(17)]);
    assert_eq!(
        kind(&raw(2, &objs)),
        ParseErrorKind::BadFlowDescriptor { class: 16 }
    );
    // A LABEL with no FILTER_SPEC before it (after the FLOWSPEC, or first), or in WF.
    for objs in [
        [resv_head(Style::FF), vec![fs.clone(), label(16), filter(1)]].concat(),
        [resv_head(Style::FF), vec![label(16), fs.clone(), filter(1)]].concat(),
        [resv_head(Style::WF), vec![fs.clone(), label(16)]].concat(),
    ] {
        assert_eq!(
            kind(&raw(2, &objs)),
            ParseErrorKind::BadFlowDescriptor { class: 16 }
        );
    }
    // FF: the LABEL after the second FILTER_SPEC belongs to the second descriptor.
    let mut objs = resv_head(Style::FF);
    objs.extend([fs.clone(), filter(1), fs.clone(), filter(2), label(17)]);
    let (_, m) = Message::parse(&raw(2, &objs)).unwrap();
    let Message::Resv(r) = m else { panic!() };
    assert!(r.flows[0].te.is_empty());
    assert_eq!(r.flows[1].te, vec![te(17, None)]);
}

#[test]
fn te_objects_outside_their_messages() {
    // LABEL in a Path, LABEL_REQUEST in a Resv: not in the BNF.
    let mut objs = path_objects();
    objs.push(ob(|w| Label { label: 16 }.emit(w)));
    assert_eq!(
        kind(&raw(1, &objs)),
        ParseErrorKind::UnexpectedObject {
            class: 16,
            ctype: 1
        }
    );
    let (_, m) = Message::parse(RESV_TE_SE_V4).unwrap();
    let Message::Resv(r) = m else { panic!() };
    let mut objs = resv_head(Style::SE);
    objs.push(ob(|w| path_te_v4().label_request.unwrap().emit(w)));
    assert_eq!(
        kind(&raw(2, &objs)),
        ParseErrorKind::UnexpectedObject {
            class: 19,
            ctype: 1
        }
    );
    // SESSION_ATTRIBUTE (11bbbbbb) outside a Path is forwarded unexamined, as before RSVP-TE.
    let sa = ob(|w| path_te_v4().session_attribute.unwrap().emit(w));
    let mut b = RESV_TE_SE_V4.to_vec();
    b.extend_from_slice(&sa);
    let len = b.len() as u16;
    b[6..8].copy_from_slice(&len.to_be_bytes());
    b[2..4].fill(0);
    let (_, m) = Message::parse(&b).unwrap();
    assert_eq!(
        m,
        Message::Resv(Resv {
            forward: vec![Opaque::parse(207, 7, &sa[4..])],
            ..r
        })
    );
    // PathTear ignores the sender descriptor's RECORD_ROUTE, like its ADSPEC (RFC 2205 §3.1.5).
    let objs = path_objects();
    let tear = [&objs[..2], &objs[6..]].concat();
    let (_, m) = Message::parse(&raw(5, &tear)).unwrap();
    assert_eq!(
        m,
        Message::PathTear(PathTear {
            integrity: None,
            session: lsp_session4(),
            hop: hop(v4("10.0.0.1"), 3),
            sender_template: Some(lsp4(1)),
            sender_tspec: Some(SenderTspec(bucket1())),
            forward: vec![],
        })
    );
    // A PathErr's RECORD_ROUTE needs its sender descriptor.
    let err = vec![
        objs[0].clone(),
        ob(|w| error_spec(v4("10.0.0.2"), 0, 24, 1).emit(w)),
        objs[8].clone(),
    ];
    assert_eq!(
        kind(&raw(3, &err)),
        ParseErrorKind::MissingObject { class: 11 }
    );
}

#[test]
fn te_vectors_cut_anywhere() {
    for bytes in [PATH_TE_V4, PATH_TE_V6, RESV_TE_FF_V4, RESV_TE_SE_V6] {
        for n in 8..bytes.len() {
            // RSVP Length made to agree and no checksum, so the cut reaches the object parsers.
            let mut b = bytes[..n].to_vec();
            b[6..8].copy_from_slice(&(n as u16).to_be_bytes());
            b[2..4].fill(0);
            // Refused, unless cut between objects after the mandatory ones (an optional
            // RECORD_ROUTE or LABEL left off): then it is the message the bytes say.
            if let Ok((hdr, m)) = Message::parse(&b) {
                let mut again = Vec::new();
                m.emit(hdr.send_ttl, &mut again);
                again[2..4].fill(0);
                assert_eq!(again, b, "{n} bytes");
            }
        }
    }
}
