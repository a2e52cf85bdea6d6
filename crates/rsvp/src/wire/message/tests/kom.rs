//! The KOM RSVP engine's messages (`vectors/kom.rs`, from the captures in
//! `shared/captures/kom/`): what parses, what is skipped, and how the GMPLS objects RFC 3473
//! adds fail until they are decoded.

use super::super::vectors::kom::*;
use super::*;
use crate::wire::ParseErrorKind;
use crate::wire::te::class as te_class;

#[test]
fn kom_path_err_with_label_request_parses_and_lists_what_was_skipped() {
    let p = Message::parse_full(KOM_PATHERR_WITH_LABEL_REQUEST).unwrap();
    assert_eq!(p.header.msg_type, MsgType::PathErr);
    // KOM sets the refresh-reduction-capable flag (RFC 2961 §2).
    assert_eq!(p.header.flags, 1);
    let Message::PathErr(e) = &p.message else {
        panic!("{:?}", p.message)
    };
    assert_eq!(
        e.session,
        Session::lsp_tunnel(v4("10.200.3.2"), 1, v4("10.200.0.1"))
    );
    // Routing Problem / No route available toward destination (RFC 3209 §4.5), from KOM's
    // loopback address.
    assert_eq!((e.error.code, e.error.value), (24, 5));
    assert_eq!(e.error.node, v4("127.0.0.1"));
    let sender = e.sender.as_ref().expect("the sender descriptor is there");
    assert_eq!(
        sender.template,
        FilterSpec::LspTunnelV4 {
            src: "10.200.0.1".parse().unwrap(),
            lsp_id: 1
        }
    );
    assert!(sender.adspec.is_some(), "KOM's ADSPEC decodes");
    // LABEL_REQUEST is not in the PathErr grammar (RFC 2205 §3.1.7): skipped, not fatal.
    assert_eq!(
        p.skipped,
        vec![SkippedObject {
            class: te_class::LABEL_REQUEST,
            ctype: 1
        }]
    );
    // SESSION_ATTRIBUTE (11bbbbbb) goes on unexamined, as RFC 2205 §3.10 has for such classes.
    assert_eq!(e.forward.len(), 1);
    assert_eq!(e.forward[0].class, te_class::SESSION_ATTRIBUTE);
}

#[test]
fn pathwise_messages_in_the_kom_captures_parse() {
    let Message::Path(p) = Message::parse(KOM_PATHWISE_LSP_PATH).unwrap().1 else {
        panic!()
    };
    assert_eq!(p.hop, hop(v4("10.200.1.1"), 280));
    assert!(p.label_request.is_some() && p.session_attribute.is_some());
    let Message::ResvErr(e) = Message::parse(KOM_PATHWISE_RESVERR_14).unwrap().1 else {
        panic!()
    };
    assert_eq!((e.error.code, e.error.value), (14, 0x1002));
    let Message::ResvTear(t) = Message::parse(KOM_RESVTEAR_TO_HEAD_END).unwrap().1 else {
        panic!()
    };
    assert_eq!(t.hop, hop(v4("10.200.3.2"), 300));
}

#[test]
fn kom_gmpls_objects_parse() {
    // IF_ID RSVP_HOP (RFC 3473 §8.1.1, class 3, C-Type 3): Path, PathTear, Resv, ResvTear —
    // refused as unknown C-Types before GMPLS was understood; the hop keeps KOM's TLV.
    for bytes in [
        KOM_PATH_IF_ID_HOP,
        KOM_PATHTEAR_IF_ID_HOP,
        KOM_RESV_IF_ID_HOP,
        KOM_RESVTEAR_IF_ID_HOP,
    ] {
        let (_, m) = Message::parse(bytes).unwrap();
        let hop = match &m {
            Message::Path(p) => &p.hop,
            Message::PathTear(t) => &t.hop,
            Message::Resv(r) => &r.hop,
            Message::ResvTear(t) => &t.hop,
            m => panic!("{m:?}"),
        };
        assert!(hop.if_id.as_ref().is_some_and(|t| t.len() == 1), "{hop:?}");
    }
    // Generalized LABEL (RFC 3473 §2.3, class 16, C-Type 2) behind an ordinary RSVP_HOP.
    let Message::Resv(r) = Message::parse(KOM_RESV_GENERALIZED_LABEL).unwrap().1 else {
        panic!()
    };
    assert_eq!(r.hop, hop(v4("10.200.3.2"), 300));
    assert_eq!(r.flows[0].te[0].label_value(), Some(16));
}

#[test]
fn known_objects_outside_the_grammar_are_skipped_only_where_nothing_is_installed() {
    // The LABEL_REQUEST of KOM's PathErr, moved into a Path-less message of each kind, is
    // skipped; a Resv carrying one is still refused (RFC 3209 §3.2.1 has no place for it).
    let lr = [0x00, 0x08, 0x13, 0x01, 0x00, 0x00, 0x08, 0x00];
    let with_lr = |base: &[u8]| {
        let mut b = base.to_vec();
        b.extend_from_slice(&lr);
        let len = b.len() as u16;
        b[6..8].copy_from_slice(&len.to_be_bytes());
        b[2..4].fill(0);
        b
    };
    for base in [KOM_RESVTEAR_TO_HEAD_END, KOM_PATHWISE_RESVERR_14] {
        let p = Message::parse_full(&with_lr(base)).unwrap();
        assert_eq!(p.skipped.len(), 1, "{:?}", p.header.msg_type);
    }
    assert_eq!(
        Message::parse(&with_lr(RESV_FF_V4)).unwrap_err().kind,
        ParseErrorKind::UnexpectedObject {
            class: 19,
            ctype: 1
        }
    );
}
