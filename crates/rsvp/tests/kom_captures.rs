//! Interoperability with the KOM RSVP Engine (DRAGON fork, GMPLS RSVP-TE), from the exact bytes
//! of its captures (`pathwise_rsvp::wire::message::vectors::kom`, extracted from
//! `shared/captures/kom/*.pcap`), fed
//! to pathwise engines standing where KOM's neighbours stood on the five-node chain
//! (`tests/common`).
//!
//! What the captures hold: KOM's Paths carry an IF_ID RSVP_HOP (C-Type 3, RFC 3473 §8.1.1) with
//! one IPv4 TLV of 0.0.0.0 and an RFC 3209 LABEL_REQUEST (C-Type 1, L3PID IPv4), go to the next
//! hop's address without Router Alert (RFC 3473 §10.2), and KOM answers them with a Generalized
//! LABEL (C-Type 2, RFC 3473 §2.3) holding the MPLS label 16.

mod common;

use common::{Chain, DOWN, UP, addr};
use pathwise_core::mpls::{LabelOp, NextHop};
use pathwise_rsvp::wire::message::vectors::kom::{self, Frame};
use pathwise_rsvp::wire::{
    ExplicitRoute, IfIdTlv, Message, MsgType, RsvpHop, error_code, te::AbstractNode,
};
use std::net::{IpAddr, Ipv4Addr};

fn inject(c: &mut Chain, n: usize, ifindex: pathwise_core::io::IfIndex, f: &Frame) {
    c.inject(n, ifindex, (f.src, f.dst, f.ttl, None), f.rsvp);
}

fn parse(f: &Frame) -> Message {
    Message::parse(f.rsvp).expect("a captured message").1
}

fn ero_hops(e: &Option<ExplicitRoute>) -> Vec<IpAddr> {
    e.iter()
        .flat_map(|e| &e.subobjects)
        .map(|s| match s.node {
            AbstractNode::Ipv4Prefix { addr, .. } => IpAddr::V4(addr),
            ref n => panic!("{n:?}"),
        })
        .collect()
}

fn v4(k: usize, h: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 200, k as u8, h))
}

/// KOM's hop as it sends it: IF_ID, TLV IPv4 0.0.0.0.
fn kom_tlvs() -> Vec<IfIdTlv> {
    vec![IfIdTlv::Ipv4(Ipv4Addr::UNSPECIFIED)]
}

/// The first object of `class` in raw message bytes, header included.
fn object(rsvp: &[u8], class: u8) -> &[u8] {
    let mut at = 8;
    while at + 4 <= rsvp.len() {
        let len = usize::from(u16::from_be_bytes([rsvp[at], rsvp[at + 1]]));
        if rsvp[at + 2] == class {
            return &rsvp[at..at + len];
        }
        at += len.max(4);
    }
    panic!("no object of class {class}")
}

/// The RSVP_HOP object's C-Type in raw message bytes.
fn hop_ctype(rsvp: &[u8]) -> u8 {
    object(rsvp, 3)[3]
}

#[test]
fn every_captured_message_parses_but_the_patherr() {
    for (name, f) in kom::ALL {
        if name == &"PATHERR_2_PATH_ERR" {
            continue; // see patherr_with_label_request_parses
        }
        let r = Message::parse(f.rsvp);
        assert!(r.is_ok(), "{name}: {:?}", r.err());
    }
    // The IF_ID hop and the Generalized LABEL, as RFC 3473 defines them.
    let Message::Path(p) = parse(&kom::HEAD_END_1_PATH) else {
        panic!()
    };
    assert_eq!(p.hop.addr, v4(0, 1));
    assert_eq!(p.hop.lih, 1);
    assert_eq!(p.hop.if_id.as_deref(), Some(&kom_tlvs()));
    assert_eq!(p.label_request.unwrap().ctype(), 1);
    let Message::Resv(r) = parse(&kom::SETUP_2_RESV) else {
        panic!()
    };
    let te = &r.flows[0].te[0];
    assert_eq!((te.label, te.label_value()), (None, Some(16)));
    assert_eq!(te.generalized_label.as_ref().unwrap().ctype(), 2);
    // Each re-emits to itself (in RFC 3209's object order, not KOM's: KOM puts LABEL_REQUEST
    // before EXPLICIT_ROUTE), with KOM's IF_ID hop and Generalized LABEL objects byte for byte.
    for f in [
        kom::HEAD_END_1_PATH,
        kom::HEAD_END_2_PATH_TEAR,
        kom::SETUP_1_PATH,
        kom::SETUP_2_RESV,
        kom::SETUP_3_RESV_TEAR,
        kom::RECEIVER_2_RESV,
    ] {
        let (h, m) = Message::parse(f.rsvp).unwrap();
        let mut out = Vec::new();
        m.emit(h.send_ttl, &mut out);
        // (KOM's Resv also carries a MESSAGE_ID, which refresh reduction reads apart.)
        assert!(out.len() <= f.rsvp.len());
        assert_eq!(Message::parse(&out).unwrap().1, m);
        assert_eq!(object(&out, 3), object(f.rsvp, 3));
        if f.rsvp[1] == 2 {
            assert_eq!(object(&out, 16), [0, 8, 16, 2, 0, 0, 0, 16]);
        }
    }
}

/// KOM's PathErr carries LABEL_REQUEST and SESSION_ATTRIBUTE, which RFC 3473 §10.1's PathErr
/// does not list: the message is kept, the extra objects skipped and counted (RFC 2205
/// §3.1.5).
#[test]
fn patherr_with_label_request_parses() {
    assert!(Message::parse(kom::PATHERR_2_PATH_ERR.rsvp).is_ok());
}

/// KOM head end H1 — pathwise R1, R2 — KOM R3: KOM's Path with an IF_ID hop crosses two
/// pathwise transit nodes, KOM's Resv with a Generalized LABEL binds at R2, KOM's ResvTear and
/// PathTear remove everything.
#[test]
fn kom_head_end_through_pathwise_transit_to_kom() {
    let mut c = Chain::new([false, true, true, false, false]);
    // kom-head-end-path-if-id-hop.pcap frame 1: to R1's own address, no Router Alert.
    inject(&mut c, 1, UP, &kom::HEAD_END_1_PATH);
    let sent = c.run();
    assert_eq!(sent.len(), 2, "{sent:?}");
    let kom_path = match parse(&kom::SETUP_1_PATH) {
        Message::Path(p) => p,
        _ => panic!(),
    };
    for (s, (k, ero)) in sent.iter().zip([
        (1, vec![v4(1, 2), v4(2, 2), v4(3, 2)]),
        (2, vec![v4(2, 2), v4(3, 2)]),
    ]) {
        assert_eq!((s.from, s.to), (k, k + 1));
        let Message::Path(p) = s.msg() else {
            panic!("{s:?}")
        };
        // RFC 3473 §8.1.2: "SHOULD NOT be used when no TLVs are needed": our data and
        // control channels are one; our hop is RFC 2205's.
        assert_eq!(hop_ctype(&s.t.payload), 1);
        assert_eq!(p.hop, RsvpHop::new(IpAddr::V4(addr(k, k)), DOWN.0));
        assert_eq!(ero_hops(&p.explicit_route), ero);
        // The LSP and its objects go on as KOM's own R2 passed them to R3
        // (kom-lsp-setup-and-resvtear.pcap frame 1).
        assert_eq!(p.session, kom_path.session);
        assert_eq!(p.sender.template, kom_path.sender.template);
        assert_eq!(p.label_request, kom_path.label_request);
        assert_eq!(p.session_attribute, kom_path.session_attribute);
        assert_eq!(p.sender.tspec, kom_path.sender.tspec);
    }

    // kom-lsp-setup-and-resvtear.pcap frame 2: KOM R3's Resv, Generalized LABEL 16.
    inject(&mut c, 2, DOWN, &kom::SETUP_2_RESV);
    let sent = c.run();
    assert!(
        sent.iter().all(|s| s.msg().msg_type() == MsgType::Resv),
        "{sent:?}"
    );
    assert_eq!(sent.len(), 2);
    // R2 swaps its label for KOM's 16 towards R3.
    let r2_label = {
        let lfib = c.node(2).lfib();
        let e = lfib.entries().next().expect("an LFIB entry at R2");
        assert_eq!(e.op, LabelOp::Swap(16));
        assert_eq!(
            e.next_hop,
            NextHop {
                ifindex: DOWN,
                addr: v4(2, 2)
            }
        );
        e.in_label
    };
    // R2 → R1: the Path asked with an RFC 3209 LABEL_REQUEST, so the label is a LABEL.
    let Message::Resv(up) = sent[0].msg() else {
        panic!()
    };
    assert_eq!(up.flows[0].te[0].label.map(|l| l.label), Some(r2_label));
    assert_eq!(up.flows[0].te[0].generalized_label, None);
    assert_eq!(hop_ctype(&sent[0].t.payload), 1);
    // R1 → KOM H1: our hop returns KOM's TLVs (RFC 3473 §8.1.2), with KOM's LIH.
    assert_eq!((sent[1].from, sent[1].to), (1, 0));
    let Message::Resv(to_kom) = sent[1].msg() else {
        panic!()
    };
    assert_eq!(hop_ctype(&sent[1].t.payload), 3);
    assert_eq!(to_kom.hop.addr, v4(0, 2));
    assert_eq!(to_kom.hop.lih, 1);
    assert_eq!(to_kom.hop.if_id.as_deref(), Some(&kom_tlvs()));
    assert!(to_kom.flows[0].te[0].label.is_some());
    // R1 swaps too; the ingress binding is KOM's, at H1.
    assert_eq!(c.node(1).lfib().entries().count(), 1);
    assert_eq!(c.node(1).lfib().ftns().count(), 0);

    // kom-lsp-setup-and-resvtear.pcap frame 3: KOM R3's ResvTear.
    inject(&mut c, 2, DOWN, &kom::SETUP_3_RESV_TEAR);
    let sent = c.run();
    let types: Vec<_> = sent.iter().map(|s| (s.from, s.msg().msg_type())).collect();
    assert_eq!(types, [(2, MsgType::ResvTear), (1, MsgType::ResvTear)]);
    assert_eq!(hop_ctype(&sent[1].t.payload), 3);
    assert!(c.node(2).lfib().entries().next().is_none());
    assert!(c.node(1).lfib().entries().next().is_none());

    // kom-head-end-path-if-id-hop.pcap frame 2: KOM H1's PathTear, IF_ID hop.
    inject(&mut c, 1, UP, &kom::HEAD_END_2_PATH_TEAR);
    let sent = c.run();
    let types: Vec<_> = sent.iter().map(|s| (s.from, s.msg().msg_type())).collect();
    assert_eq!(types, [(1, MsgType::PathTear), (2, MsgType::PathTear)]);
    for n in [1, 2] {
        let st = c.node(n).state_stats();
        assert_eq!((st.sessions, st.psbs, st.rsbs), (0, 0, 0), "node {n}");
    }
}

/// KOM R2 — pathwise R3 — pathwise egress H2: KOM's Path from the setup capture is forwarded,
/// the egress answers, and R3's Resv goes back to KOM with KOM's TLVs in an IF_ID hop.
#[test]
fn kom_path_into_pathwise_transit_and_egress() {
    let mut c = Chain::new([false, false, false, true, true]);
    // kom-lsp-setup-and-resvtear.pcap frame 1: to R3's address, IP TTL 61 = Send_TTL.
    inject(&mut c, 3, UP, &kom::SETUP_1_PATH);
    let sent = c.run();
    let types: Vec<_> = sent
        .iter()
        .map(|s| (s.from, s.to, s.msg().msg_type()))
        .collect();
    assert_eq!(
        types,
        [
            (3, 4, MsgType::Path),
            (4, 3, MsgType::Resv),
            (3, 2, MsgType::Resv)
        ]
    );
    let Message::Path(fwd) = sent[0].msg() else {
        panic!()
    };
    assert_eq!(ero_hops(&fwd.explicit_route), [v4(3, 2)]);
    assert_eq!(fwd.hop, RsvpHop::new(v4(3, 1), DOWN.0));
    // Back to KOM: the IF_ID hop it sent us, returned (RFC 3473 §8.1.2), in a Resv shaped
    // like KOM's own (kom-lsp-setup-and-resvtear.pcap frame 2) but with the label in the
    // flavour the Path asked for: an RFC 3209 LABEL, implicit null from the egress popped here.
    let Message::Resv(ours) = sent[2].msg() else {
        panic!()
    };
    let Message::Resv(theirs) = parse(&kom::SETUP_2_RESV) else {
        panic!()
    };
    assert_eq!(hop_ctype(&sent[2].t.payload), 3);
    assert_eq!(ours.hop.addr, theirs.hop.addr);
    assert_eq!(ours.hop.lih, 2);
    assert_eq!(ours.hop.if_id, theirs.hop.if_id);
    assert_eq!(ours.session, theirs.session);
    assert_eq!(ours.flows[0].filters, theirs.flows[0].filters);
    let te = &ours.flows[0].te[0];
    assert!(te.label.is_some() && te.generalized_label.is_none());
    let e = c.node(3).lfib().entries().next().expect("R3's LFIB entry");
    assert_eq!(e.op, LabelOp::Pop);
    assert_eq!(Some(e.in_label), te.label_value());
}

/// pathwise H1, R1, R2, R3 — KOM egress H2 (kom-receiver-generalized-label.pcap): KOM's Resv
/// with a Generalized LABEL was answered with ResvErr 14; now R3 binds its label 16 and the LSP
/// comes up at the head end. KOM's ResvTear, sent to the head end rather than to R3, does not
/// disturb it.
#[test]
fn pathwise_lsp_to_kom_egress_binds_the_generalized_label() {
    use pathwise_rsvp::engine::te::{LspSpec, LspStatus};
    let mut c = Chain::new([true, true, true, true, false]);
    let spec = LspSpec {
        name: "toh2".into(),
        to: v4(3, 2),
        from: Some(v4(0, 1)),
        ero: None,
        bandwidth_bps: 1_000_000,
        setup_priority: 7,
        hold_priority: 0,
        record_route: true,
        label_recording: true,
        gmpls: None,
    };
    let now = c.now;
    c.node(0).open_lsp(now, spec).unwrap();
    let sent = c.run();
    assert_eq!(sent.last().map(|s| (s.from, s.to)), Some((3, 4)));
    // The session and sender are those of the capture.
    let Message::Path(p) = sent.last().unwrap().msg() else {
        panic!()
    };
    let Message::Path(captured) = parse(&kom::RECEIVER_1_PATH) else {
        panic!()
    };
    assert_eq!(
        (p.session, p.sender.template),
        (captured.session, captured.sender.template)
    );

    // kom-receiver-generalized-label.pcap frame 2.
    inject(&mut c, 3, DOWN, &kom::RECEIVER_2_RESV);
    let sent = c.run();
    assert!(
        sent.iter()
            .all(|s| !matches!(s.msg(), Message::ResvErr(_) | Message::PathErr(_))),
        "{sent:?}"
    );
    let e = c.node(3).lfib().entries().next().expect("R3's LFIB entry");
    assert_eq!(e.op, LabelOp::Swap(16));
    let lsps = c.node(0).lsps();
    assert_eq!(lsps[0].status, LspStatus::Up);
    assert!(c.node(0).lfib().ftns().next().is_some());

    // kom-receiver-generalized-label.pcap frame 5: KOM's ResvTear to the head end's address,
    // forwarded in IP by R1–R3 (no Router Alert): not from H1's next hop, so it tears nothing.
    let f = kom::RECEIVER_5_RESV_TEAR;
    c.inject(0, DOWN, (f.src, f.dst, f.ttl - 3, None), f.rsvp);
    assert!(c.run().is_empty());
    assert_eq!(c.node(0).lsps()[0].status, LspStatus::Up);

    // Closing it tears down all the way to KOM.
    c.node(0).close_lsp(now, "toh2").unwrap();
    let sent = c.run();
    assert_eq!(
        sent.last().map(|s| (s.from, s.to, s.msg().msg_type())),
        Some((3, 4, MsgType::PathTear))
    );
    for n in 0..4 {
        assert_eq!(c.node(n).state_stats().psbs, 0, "node {n}");
        assert!(c.node(n).lfib().is_empty(), "node {n}");
    }
    // The error code the old pathwise sent, for the record: 14 (unknown C-Type), value
    // class 16 << 8 | C-Type 2.
    let Message::ResvErr(old) = parse(&kom::RECEIVER_3_RESV_ERR) else {
        panic!()
    };
    assert_eq!(
        (old.error.code, old.error.value),
        (error_code::UNKNOWN_OBJECT_CTYPE, 0x1002)
    );
}
