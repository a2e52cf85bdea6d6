//! Every way a message can be refused, and the leniencies the parser allows.

use pathwise_core::wire::Writer;

use super::*;
use crate::wire::error::IntServFault;
use crate::wire::objects::class;

/// The bytes of one object.
pub(super) fn ob(f: impl FnOnce(&mut Writer<'_>)) -> Vec<u8> {
    let mut v = Vec::new();
    f(&mut Writer::new(&mut v));
    v
}

/// A message of type `t` with these objects and no checksum.
pub(super) fn raw(t: u8, objs: &[Vec<u8>]) -> Vec<u8> {
    let len = 8 + objs.iter().map(Vec::len).sum::<usize>();
    let mut v = vec![0x10, t, 0, 0, 64, 0];
    v.extend_from_slice(&(len as u16).to_be_bytes());
    objs.iter().for_each(|o| v.extend_from_slice(o));
    v
}

fn session() -> Vec<u8> {
    ob(|w| session4().emit(w))
}
fn hop4() -> Vec<u8> {
    ob(|w| hop(v4("10.0.0.1"), 3).emit(w))
}
fn time() -> Vec<u8> {
    ob(|w| TimeValues { refresh_ms: 30_000 }.emit(w))
}
fn template() -> Vec<u8> {
    ob(|w| f4("10.0.0.1", 4000).emit_as(class::SENDER_TEMPLATE, w))
}
fn tspec() -> Vec<u8> {
    ob(|w| SenderTspec(bucket1()).emit(w))
}
fn filter(port: u16) -> Vec<u8> {
    ob(|w| f4("10.0.0.1", port).emit(w))
}
fn flowspec() -> Vec<u8> {
    ob(|w| FlowSpec::ControlledLoad(bucket1()).emit(w))
}
fn style(s: Style) -> Vec<u8> {
    ob(|w| s.emit(w))
}
fn path_objs() -> Vec<Vec<u8>> {
    vec![session(), hop4(), time(), template(), tspec()]
}
fn resv_objs(s: Style, flows: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut v = vec![session(), hop4(), time(), style(s)];
    v.extend_from_slice(flows);
    v
}

fn kind(buf: &[u8]) -> ParseErrorKind {
    Message::parse(buf).unwrap_err().kind
}

#[test]
fn header_errors() {
    let good = raw(1, &path_objs());
    assert!(Message::parse(&good).is_ok());
    let e = Message::parse(&good[..7]).unwrap_err();
    assert_eq!(e, ParseError::new(ParseErrorKind::Truncated));
    // RSVP Length beyond the buffer.
    let e = Message::parse(&good[..good.len() - 4]).unwrap_err();
    assert_eq!(e.kind, ParseErrorKind::Truncated);
    assert_eq!(e.msg_type, Some(MsgType::Path));
    let mut b = good.clone();
    b[0] = 0x20;
    assert_eq!(
        Message::parse(&b).unwrap_err(),
        ParseError::new(ParseErrorKind::BadVersion(2))
    );
    let mut b = good.clone();
    b[7] = 6;
    b[6] = 0;
    assert_eq!(kind(&b), ParseErrorKind::BadLength(6));
    let mut b = good.clone();
    b[1] = 9;
    let e = Message::parse(&b).unwrap_err();
    assert_eq!(e.kind, ParseErrorKind::UnknownMsgType(9));
    assert_eq!(e.msg_type, Some(MsgType::Unknown(9)));
    assert_eq!(e.kind.reason(), "unknown_msg_type");
}

#[test]
fn checksum() {
    let mut good = Vec::new();
    Message::parse(&raw(1, &path_objs()))
        .unwrap()
        .1
        .emit(64, &mut good);
    assert_ne!(&good[2..4], &[0, 0]);
    let mut b = good.clone();
    let last = b.len() - 1;
    b[last] ^= 0x40;
    let e = Message::parse(&b).unwrap_err();
    assert_eq!(
        e.kind,
        ParseErrorKind::BadChecksum {
            received: u16::from_be_bytes([good[2], good[3]])
        }
    );
    assert_eq!(e.kind.error_code(), None);
    assert_eq!(e.session, None, "an unverified message gives no context");
    // Zero: no checksum was sent.
    b[2] = 0;
    b[3] = 0;
    assert!(Message::parse(&b).is_ok());
}

#[test]
fn trailing_bytes_after_rsvp_length_are_ignored() {
    let mut b = Vec::new();
    let (_, m) = Message::parse(super::super::vectors::RESV_WF_V4).unwrap();
    m.emit(255, &mut b);
    b.extend_from_slice(&[0xff; 6]);
    assert_eq!(Message::parse(&b).map(|(_, x)| x), Ok(m));
}

#[test]
fn object_length_errors() {
    let mut objs = path_objs();
    objs[2] = vec![0x00, 0x06, 5, 1, 0, 0, 0, 0];
    assert_eq!(
        kind(&raw(1, &objs)),
        ParseErrorKind::BadObjectLength {
            class: 5,
            ctype: 1,
            length: 6
        }
    );
    let mut objs = path_objs();
    objs.push(vec![0x00, 0x40, 12, 2]);
    assert_eq!(
        kind(&raw(1, &objs)),
        ParseErrorKind::BadObjectLength {
            class: 12,
            ctype: 2,
            length: 64
        }
    );
}

#[test]
fn unknown_classes_follow_the_high_bits() {
    // 0bbbbbbb: reject with error 13; context found even though the object comes first.
    let mut objs = path_objs();
    objs.insert(0, vec![0x00, 0x08, 0x42, 0x07, 1, 2, 3, 4]);
    let e = Message::parse(&raw(1, &objs)).unwrap_err();
    assert_eq!(
        e.kind,
        ParseErrorKind::UnknownObjectClass {
            class: 0x42,
            ctype: 7
        }
    );
    assert_eq!(e.kind.error_code(), Some((13, 0x4207)));
    assert_eq!(e.session, Some(session4()));
    assert_eq!(e.hop, Some(hop(v4("10.0.0.1"), 3)));
    // Class 2 is unassigned by RFC 2205.
    let mut objs = path_objs();
    objs.push(vec![0x00, 0x04, 0x02, 0x01]);
    assert_eq!(
        kind(&raw(1, &objs)),
        ParseErrorKind::UnknownObjectClass { class: 2, ctype: 1 }
    );
    // 10bbbbbb: dropped silently.
    let mut objs = path_objs();
    objs.push(vec![0x00, 0x08, 0x80, 0x01, 1, 2, 3, 4]);
    let (_, m) = Message::parse(&raw(1, &objs)).unwrap();
    let Message::Path(p) = &m else { panic!() };
    assert!(p.forward.is_empty());
    // 11bbbbbb: kept and forwarded; NULL objects skipped.
    let mut objs = path_objs();
    objs.push(vec![0x00, 0x08, 0xff, 0x09, 1, 2, 3, 4]);
    objs.insert(1, vec![0x00, 0x08, 0x00, 0x33, 9, 9, 9, 9]);
    let (_, m) = Message::parse(&raw(1, &objs)).unwrap();
    let Message::Path(p) = &m else { panic!() };
    assert_eq!(
        p.forward,
        vec![Opaque {
            class: 0xff,
            ctype: 9,
            body: vec![1, 2, 3, 4]
        }]
    );
}

#[test]
fn object_content_errors() {
    let mut objs = path_objs();
    objs[0][3] = 9;
    let e = Message::parse(&raw(1, &objs)).unwrap_err();
    assert_eq!(e.kind, ParseErrorKind::UnknownCType { class: 1, ctype: 9 });
    assert_eq!(e.kind.error_code(), Some((14, 0x0109)));
    assert_eq!(e.session, None);
    assert_eq!(e.hop, Some(hop(v4("10.0.0.1"), 3)));
    let mut objs = path_objs();
    objs[2] = vec![0x00, 0x0c, 5, 1, 0, 0, 0, 1, 0, 0, 0, 2];
    assert_eq!(
        kind(&raw(1, &objs)),
        ParseErrorKind::BadObject { class: 5, ctype: 1 }
    );
    // INTEGRITY and POLICY_DATA only have C-Type 1.
    let mut objs = path_objs();
    objs.insert(0, vec![0x00, 0x08, 4, 2, 0, 0, 0, 0]);
    assert_eq!(
        kind(&raw(1, &objs)),
        ParseErrorKind::UnknownCType { class: 4, ctype: 2 }
    );
    let mut objs = path_objs();
    objs.push(vec![0x00, 0x08, 14, 3, 0, 0, 0, 0]);
    assert_eq!(
        kind(&raw(1, &objs)),
        ParseErrorKind::UnknownCType {
            class: 14,
            ctype: 3
        }
    );
}

#[test]
fn intserv_errors_answer_with_error_21() {
    let mut objs = path_objs();
    objs[4][4] = 0x20; // message format version 2
    let e = Message::parse(&raw(1, &objs)).unwrap_err();
    assert_eq!(
        e.kind,
        ParseErrorKind::BadTspec(IntServFault::BadVersion(2))
    );
    assert_eq!(e.kind.error_code(), Some((21, 4)));
    assert_eq!(e.session, Some(session4()));
    let mut objs = path_objs();
    objs.push(vec![0x00, 0x08, 13, 2, 0, 0, 0, 0]);
    let e = kind(&raw(1, &objs));
    assert_eq!(
        e,
        ParseErrorKind::BadAdspec(IntServFault::MissingService(1))
    );
    assert_eq!(e.error_code(), Some((21, 5)));
    let mut fs = flowspec();
    fs[8] = 3; // service 3
    let e = kind(&raw(2, &resv_objs(Style::WF, &[fs])));
    assert_eq!(
        e,
        ParseErrorKind::BadFlowspec(IntServFault::UnsupportedService(3))
    );
    assert_eq!(e.error_code(), Some((21, 2)));
}

#[test]
fn family_missing_duplicate_unexpected() {
    let mut objs = path_objs();
    objs[1] = ob(|w| hop(v6("fe80::1"), 3).emit(w));
    assert_eq!(
        kind(&raw(1, &objs)),
        ParseErrorKind::FamilyMismatch { class: 3, ctype: 2 }
    );
    let mut objs = path_objs();
    objs[3] = ob(|w| f6("2001:db8::1", 1).emit_as(class::SENDER_TEMPLATE, w));
    assert_eq!(
        kind(&raw(1, &objs)),
        ParseErrorKind::FamilyMismatch {
            class: 11,
            ctype: 2
        }
    );
    for (i, class) in [(0, 1), (1, 3), (2, 5), (3, 11), (4, 12)] {
        let mut objs = path_objs();
        objs.remove(i);
        let e = Message::parse(&raw(1, &objs)).unwrap_err();
        assert_eq!(e.kind, ParseErrorKind::MissingObject { class }, "{i}");
        assert_eq!(e.kind.reason(), "missing_object");
    }
    let mut objs = path_objs();
    objs.push(time());
    assert_eq!(
        kind(&raw(1, &objs)),
        ParseErrorKind::DuplicateObject { class: 5 }
    );
    let mut objs = path_objs();
    objs.push(style(Style::FF));
    assert_eq!(
        kind(&raw(1, &objs)),
        ParseErrorKind::UnexpectedObject { class: 8, ctype: 1 }
    );
    // A PathErr sender descriptor needs both halves.
    let err = ob(|w| {
        ErrorSpec {
            node: v4("10.0.0.5"),
            flags: 0,
            code: 2,
            value: 0,
        }
        .emit(w)
    });
    assert_eq!(
        kind(&raw(3, &[session(), err.clone(), tspec()])),
        ParseErrorKind::MissingObject { class: 11 }
    );
    assert_eq!(
        kind(&raw(3, &[session(), err, template()])),
        ParseErrorKind::MissingObject { class: 12 }
    );
    assert_eq!(
        kind(&raw(5, &[session(), hop4(), tspec()])),
        ParseErrorKind::MissingObject { class: 11 }
    );
}

#[test]
fn objects_in_any_order_and_ignored_objects() {
    let mut objs = path_objs();
    objs.reverse();
    let (_, a) = Message::parse(&raw(1, &objs)).unwrap();
    let (_, b) = Message::parse(&raw(1, &path_objs())).unwrap();
    assert_eq!(a, b);
    // PathTear: an ADSPEC (part of the sender descriptor) and POLICY_DATA are dropped.
    let adspec = ob(|w| Adspec::new_at_sender(true, true).emit(w));
    let policy = vec![0x00, 0x08, 14, 1, 1, 2, 3, 4];
    let (_, m) = Message::parse(&raw(
        5,
        &[session(), hop4(), template(), tspec(), adspec, policy],
    ))
    .unwrap();
    assert!(matches!(
        m,
        Message::PathTear(PathTear {
            sender_tspec: Some(_),
            ..
        })
    ));
}

#[test]
fn flow_descriptor_grammar() {
    let bad = |class| ParseErrorKind::BadFlowDescriptor { class };
    let missing = |class| ParseErrorKind::MissingObject { class };
    let resv = |s, flows: &[Vec<u8>]| kind(&raw(2, &resv_objs(s, flows)));
    // WF: no FILTER_SPEC, exactly one FLOWSPEC.
    assert_eq!(resv(Style::WF, &[flowspec(), filter(1)]), bad(10));
    assert_eq!(resv(Style::WF, &[flowspec(), flowspec()]), bad(9));
    assert_eq!(resv(Style::WF, &[]), missing(9));
    // FF: a FLOWSPEC must be followed by a FILTER_SPEC; the first needs a FLOWSPEC.
    assert_eq!(
        resv(Style::FF, &[flowspec(), flowspec(), filter(1)]),
        bad(9)
    );
    assert_eq!(
        resv(Style::FF, &[flowspec(), filter(1), flowspec()]),
        bad(9)
    );
    assert_eq!(resv(Style::FF, &[filter(1)]), missing(9));
    assert_eq!(resv(Style::FF, &[]), missing(10));
    // SE: one FLOWSPEC first, then one or more FILTER_SPECs.
    assert_eq!(
        resv(Style::SE, &[flowspec(), filter(1), flowspec()]),
        bad(9)
    );
    assert_eq!(resv(Style::SE, &[filter(1)]), missing(9));
    assert_eq!(resv(Style::SE, &[flowspec()]), missing(10));
    let e = resv(Style::SE, &[flowspec(), filter(1), flowspec()]);
    assert_eq!((e.error_code(), e.reason()), (None, "bad_flow_descriptor"));
    // Unknown style: error 6.
    let odd = Style {
        flags: 0,
        kind: StyleKind::Other(0b10_011),
    };
    let e = resv(odd, &[flowspec()]);
    assert_eq!(e, ParseErrorKind::UnknownStyle { style: odd });
    assert_eq!(e.error_code(), Some((6, 0)));
    // For contrast, a valid FF list.
    assert!(Message::parse(&raw(2, &resv_objs(Style::FF, &[flowspec(), filter(1)]))).is_ok());
}

#[test]
fn tear_and_err_flow_lists() {
    // ResvTear WF without a FLOWSPEC: one descriptor with none.
    let (_, m) = Message::parse(&raw(6, &[session(), hop4(), style(Style::WF)])).unwrap();
    let Message::ResvTear(t) = m else { panic!() };
    assert_eq!(
        t.flows,
        vec![FlowDescriptor {
            flowspec: None,
            filters: vec![].into(),
            te: Vec::new(),
        }]
    );
    // ResvTear SE without its FLOWSPEC.
    let (_, m) =
        Message::parse(&raw(6, &[session(), hop4(), style(Style::SE), filter(1)])).unwrap();
    let Message::ResvTear(t) = m else { panic!() };
    assert_eq!(t.flows[0].flowspec, None);
    // ResvErr without an error flow descriptor.
    let err = ob(|w| {
        ErrorSpec {
            node: v4("10.0.0.5"),
            flags: 0,
            code: 5,
            value: 0,
        }
        .emit(w)
    });
    for s in [Style::WF, Style::FF, Style::SE] {
        let (_, m) = Message::parse(&raw(4, &[session(), hop4(), err.clone(), style(s)])).unwrap();
        let Message::ResvErr(e) = m else { panic!() };
        assert!(e.flows.is_empty());
    }
}

#[test]
fn parse_header_alone() {
    let b = raw(9, &[session()]);
    let h = Message::parse_header(&b).unwrap();
    assert_eq!(h.msg_type, MsgType::Unknown(9));
    assert_eq!(h.length as usize, b.len());
}
