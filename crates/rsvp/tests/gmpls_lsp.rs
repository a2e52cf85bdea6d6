//! GMPLS LSPs (RFC 3473) across pathwise engines back to back (`tests/common`): a head end in
//! the GMPLS flavour, three transit nodes and an egress; the refusals of RFC 3473 §2.1.1 and
//! §2.3.1; and tshark decoding our GMPLS Path and Resv.

mod common;

use common::{Chain, DOWN, UP};
use pathwise_core::mpls::LabelOp;
use pathwise_rsvp::engine::te::{GmplsRequest, LspSpec, LspStatus};
use pathwise_rsvp::wire::te::{GeneralizedLabelRequest, LabelRange, lsp_encoding, switching};
use pathwise_rsvp::wire::{
    GeneralizedLabel, LabelRequest, Message, MsgType, error_code, error_code::routing,
};
use std::net::{IpAddr, Ipv4Addr};

fn v4(k: u8, h: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 200, k, h))
}

fn spec(gmpls: GmplsRequest) -> LspSpec {
    LspSpec {
        name: "gmpls".into(),
        to: v4(3, 2),
        from: Some(v4(0, 1)),
        ero: None,
        bandwidth_bps: 10_000_000,
        setup_priority: 7,
        hold_priority: 0,
        record_route: true,
        label_recording: false,
        gmpls: Some(gmpls),
    }
}

/// A GMPLS LSP H1 → H2 over R1–R3, all pathwise: every Path carries the Generalized
/// LABEL_REQUEST (Packet, PSC-1, G-PID IPv4), every Resv a Generalized LABEL and no RFC 3209
/// LABEL, each transit node swaps, the head end pushes; closing it leaves nothing.
#[test]
fn a_gmpls_lsp_across_five_engines() {
    let mut c = Chain::new([true; 5]);
    let now = c.now;
    c.node(0)
        .open_lsp(now, spec(GmplsRequest::default()))
        .unwrap();
    let sent = c.run();
    let paths: Vec<_> = sent
        .iter()
        .filter(|s| s.msg().msg_type() == MsgType::Path)
        .collect();
    let resvs: Vec<_> = sent
        .iter()
        .filter(|s| s.msg().msg_type() == MsgType::Resv)
        .collect();
    assert_eq!(
        (paths.len(), resvs.len(), sent.len()),
        (4, 4, 8),
        "{sent:?}"
    );
    let want = LabelRequest {
        l3pid: 0x0800,
        range: Some(LabelRange::Generalized(GeneralizedLabelRequest {
            encoding: lsp_encoding::PACKET,
            switching: switching::PSC_1,
        })),
    };
    for p in &paths {
        let Message::Path(p) = p.msg() else { panic!() };
        assert_eq!(p.label_request, Some(want));
        // Control and data channels are one here: RFC 2205's hop (RFC 3473 §8.1.2).
        assert_eq!(p.hop.if_id, None);
    }
    let mut labels = Vec::new();
    for r in &resvs {
        let Message::Resv(m) = r.msg() else { panic!() };
        let te = &m.flows[0].te[0];
        assert_eq!(te.label, None, "RFC 3473 §2.3: a Generalized LABEL only");
        let g = te.generalized_label.as_ref().expect("a Generalized LABEL");
        labels.push((r.from, g.as_u32().unwrap()));
        assert!(te.record_route.is_some());
    }
    // From the egress: implicit null; then one label of each transit node's own.
    assert_eq!(labels[0], (4, 3));
    for (n, l) in &labels[1..] {
        let e = c
            .node(*n)
            .lfib()
            .get(*l)
            .expect("the label advertised is installed");
        let below = labels.iter().find(|(m, _)| *m == n + 1).unwrap().1;
        let op = if below == 3 {
            LabelOp::Pop
        } else {
            LabelOp::Swap(below)
        };
        assert_eq!(e.op, op, "node {n}");
    }
    let head = &c.node(0).lsps()[0];
    assert_eq!(head.status, LspStatus::Up);
    let ftn = *c.node(0).lfib().ftns().next().unwrap();
    assert_eq!(
        ftn.push,
        Some(labels.iter().find(|(n, _)| *n == 1).unwrap().1)
    );
    for n in 0..5 {
        let v = &c.node(n).lsps()[0];
        assert_eq!(
            (v.status, v.name.as_str()),
            (LspStatus::Up, "gmpls"),
            "node {n}"
        );
        assert_eq!((v.gmpls, v.l3pid), (want.generalized(), 0x0800), "node {n}");
    }

    c.node(0).close_lsp(now, "gmpls").unwrap();
    let sent = c.run();
    assert!(sent.iter().all(|s| s.msg().msg_type() == MsgType::PathTear));
    for n in 0..5 {
        let st = c.node(n).state_stats();
        assert_eq!((st.sessions, st.psbs, st.rsbs), (0, 0, 0), "node {n}");
        assert!(c.node(n).lfib().is_empty(), "node {n}");
        assert_eq!(c.node(n).labels_in_use(), 0, "node {n}");
    }
}

/// The head end refuses what no node here could switch.
#[test]
fn the_head_end_refuses_non_packet_gmpls_lsps() {
    let mut c = Chain::new([true, false, false, false, false]);
    let now = c.now;
    for g in [
        GmplsRequest {
            encoding: Some(lsp_encoding::LAMBDA),
            ..Default::default()
        },
        GmplsRequest {
            switching: Some(switching::LSC),
            ..Default::default()
        },
    ] {
        assert!(c.node(0).open_lsp(now, spec(g)).is_err(), "{g:?}");
    }
    assert!(c.run().is_empty());
}

/// A Path from a GMPLS head end elsewhere (H1 not pathwise), hand-made from a first LSP's.
fn path_with(label_request: LabelRequest) -> Vec<u8> {
    let mut c = Chain::new([true, false, false, false, false]);
    let now = c.now;
    c.node(0)
        .open_lsp(now, spec(GmplsRequest::default()))
        .unwrap();
    let sent = c.run();
    let Message::Path(mut p) = sent[0].msg() else {
        panic!()
    };
    p.label_request = Some(label_request);
    let mut v = Vec::new();
    Message::Path(p).emit(64, &mut v);
    v
}

fn path_err_of(c: &mut Chain) -> (u8, u16) {
    let sent = c.run();
    match sent.first().map(|s| s.msg()) {
        Some(Message::PathErr(e)) => (e.error.code, e.error.value),
        m => panic!("no PathErr: {m:?}"),
    }
}

/// RFC 3473 §2.1.1: "Unsupported Encoding" and "Switching Type" at a transit node, and the
/// egress's G-PID check ("Unsupported L3PID").
#[test]
fn transit_and_egress_check_the_generalized_label_request() {
    let from_h1 = (
        Ipv4Addr::new(10, 200, 0, 1),
        Ipv4Addr::new(10, 200, 3, 2),
        64,
        Some(0),
    );
    let request = |encoding, switching, gpid| {
        LabelRequest::generalized_request(
            GeneralizedLabelRequest {
                encoding,
                switching,
            },
            gpid,
        )
    };
    for (lr, value) in [
        (
            request(lsp_encoding::SDH_SONET, switching::PSC_1, 0x0800),
            routing::UNSUPPORTED_ENCODING,
        ),
        (
            request(lsp_encoding::PACKET, switching::TDM, 0x0800),
            routing::SWITCHING_TYPE,
        ),
    ] {
        let mut c = Chain::new([false, true, false, false, false]);
        c.inject(1, UP, from_h1, &path_with(lr));
        assert_eq!(path_err_of(&mut c), (error_code::ROUTING_PROBLEM, value));
        assert_eq!(c.node(1).state_stats().psbs, 0);
    }
    // At the egress: a G-PID it does not carry (37, Lambda) is refused; PSC-4 is fine.
    let mut c = Chain::new([false, false, false, false, true]);
    c.inject(4, UP, from_h1, &path_with(request(1, 1, 37)));
    assert_eq!(
        path_err_of(&mut c),
        (error_code::ROUTING_PROBLEM, routing::UNSUPPORTED_L3PID)
    );
    let mut c = Chain::new([false, false, false, false, true]);
    c.inject(
        4,
        UP,
        from_h1,
        &path_with(request(1, switching::PSC_4, 0x0800)),
    );
    let sent = c.run();
    assert_eq!(sent.len(), 1);
    let Message::Resv(r) = sent[0].msg() else {
        panic!()
    };
    assert_eq!(
        r.flows[0].te[0].generalized_label,
        Some(GeneralizedLabel::from_u32(3))
    );
}

/// RFC 3473 §2.3.1: a Generalized LABEL this node cannot use is answered with ResvErr
/// "Routing problem/MPLS label allocation failure"; RFC 3209 §4.1.2 keeps "Unacceptable label
/// value" for a LABEL.
#[test]
fn an_unusable_generalized_label_is_refused_with_24_9() {
    for (label, value) in [
        (
            GeneralizedLabel {
                label: [0, 0, 0, 1, 0, 0, 0, 2][..].into(),
            },
            routing::LABEL_ALLOCATION_FAILURE,
        ),
        (
            GeneralizedLabel::from_u32(0x0010_0000),
            routing::LABEL_ALLOCATION_FAILURE,
        ),
    ] {
        let mut c = Chain::new([true, true, false, false, false]);
        let now = c.now;
        c.node(0)
            .open_lsp(now, spec(GmplsRequest::default()))
            .unwrap();
        let sent = c.run();
        let Message::Path(p) = sent.last().unwrap().msg() else {
            panic!()
        };
        // The Resv R2 would send, with `label`.
        let mut flow = pathwise_rsvp::wire::FlowDescriptor::new(
            Some(pathwise_rsvp::wire::FlowSpec::ControlledLoad(
                p.sender.tspec.0,
            )),
            vec![p.sender.template],
        );
        flow.te = vec![pathwise_rsvp::wire::FilterTe {
            generalized_label: Some(label),
            ..Default::default()
        }];
        let resv = Message::Resv(pathwise_rsvp::wire::Resv {
            integrity: None,
            session: p.session,
            hop: pathwise_rsvp::wire::RsvpHop::new(v4(1, 2), 1),
            time_values: p.time_values,
            confirm: None,
            scope: None,
            policy: Vec::new(),
            style: pathwise_rsvp::wire::Style {
                flags: 0,
                kind: pathwise_rsvp::wire::StyleKind::Se,
            },
            flows: vec![flow].into(),
            forward: Vec::new(),
        });
        let mut b = Vec::new();
        resv.emit(64, &mut b);
        let from_r2 = (
            Ipv4Addr::new(10, 200, 1, 2),
            Ipv4Addr::new(10, 200, 1, 1),
            64,
            None,
        );
        c.inject(1, DOWN, from_r2, &b);
        let sent = c.run();
        match sent.first().map(|s| s.msg()) {
            Some(Message::ResvErr(e)) => {
                assert_eq!((e.error.code, e.error.value), (24, value))
            }
            m => panic!("no ResvErr: {m:?}"),
        }
        assert!(c.node(1).lfib().is_empty());
    }
}

// ---- tshark ---------------------------------------------------------------------------------

/// A classic pcap of Ethernet/IPv4 frames around RSVP messages (IP protocol 46).
fn pcap(messages: &[(Ipv4Addr, Ipv4Addr, &[u8])]) -> Vec<u8> {
    let mut f = Vec::new();
    // Magic, version 2.4, zone, sigfigs, snaplen, LINKTYPE_ETHERNET.
    f.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    f.extend_from_slice(&2u16.to_le_bytes());
    f.extend_from_slice(&4u16.to_le_bytes());
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&65535u32.to_le_bytes());
    f.extend_from_slice(&1u32.to_le_bytes());
    for (i, (src, dst, rsvp)) in messages.iter().enumerate() {
        let mut ip = vec![0x45, 0xc0];
        ip.extend_from_slice(&((20 + rsvp.len()) as u16).to_be_bytes());
        ip.extend_from_slice(&[0, i as u8, 0, 0, 64, 46, 0, 0]);
        ip.extend_from_slice(&src.octets());
        ip.extend_from_slice(&dst.octets());
        let sum = pathwise_core::wire::internet_checksum(&ip);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        ip.extend_from_slice(rsvp);
        let mut frame = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
        frame.extend_from_slice(&ip);
        f.extend_from_slice(&(i as u32).to_le_bytes());
        f.extend_from_slice(&0u32.to_le_bytes());
        f.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        f.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        f.extend_from_slice(&frame);
    }
    f
}

/// tshark decodes our GMPLS Path (Generalized LABEL_REQUEST), our Resv (Generalized LABEL)
/// and our Resv to a KOM neighbour (IF_ID RSVP_HOP) with nothing malformed.
#[test]
fn tshark_decodes_our_gmpls_messages() {
    use std::process::Command;
    if Command::new("tshark").arg("--version").output().is_err() {
        eprintln!("tshark_decodes_our_gmpls_messages: skipped: tshark not found");
        return;
    }
    let mut c = Chain::new([true; 5]);
    let now = c.now;
    c.node(0)
        .open_lsp(now, spec(GmplsRequest::default()))
        .unwrap();
    let mut frames: Vec<(Ipv4Addr, Ipv4Addr, Vec<u8>)> = Vec::new();
    for s in c.run() {
        let (IpAddr::V4(src), IpAddr::V4(dst)) = (s.t.src.unwrap(), s.t.dst) else {
            panic!()
        };
        frames.push((src, dst, s.t.payload.clone()));
    }
    // A Resv with an IF_ID hop: a transit node answering KOM's Path (tests/kom_captures.rs).
    let mut k = Chain::new([false, false, true, true, true]);
    let mut path = Vec::new();
    let Message::Path(mut p) = Message::parse(&frames[1].2).unwrap().1 else {
        panic!()
    };
    p.hop.if_id = Some(std::sync::Arc::new(vec![
        pathwise_rsvp::wire::IfIdTlv::Ipv4(Ipv4Addr::UNSPECIFIED),
        pathwise_rsvp::wire::IfIdTlv::IfIndex {
            addr: Ipv4Addr::new(10, 200, 1, 1),
            id: 7,
        },
    ]));
    Message::Path(p).emit(63, &mut path);
    let from_r1 = (
        Ipv4Addr::new(10, 200, 1, 1),
        Ipv4Addr::new(10, 200, 3, 2),
        63,
        Some(0),
    );
    k.inject(2, UP, from_r1, &path);
    let sent = k.run();
    let back = sent.iter().find(|s| s.to == 1).expect("a Resv to R1");
    assert_eq!(back.msg().msg_type(), MsgType::Resv);
    frames.push((
        Ipv4Addr::new(10, 200, 1, 2),
        Ipv4Addr::new(10, 200, 1, 1),
        back.t.payload.clone(),
    ));
    let borrowed: Vec<_> = frames
        .iter()
        .map(|(s, d, b)| (*s, *d, b.as_slice()))
        .collect();
    let dir = std::env::temp_dir().join(format!("pathwise-gmpls-tshark-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("gmpls.pcap");
    std::fs::write(&file, pcap(&borrowed)).unwrap();
    let out = Command::new("tshark")
        .env("HOME", &dir)
        .args(["-o", "rsvp.process_bundle:TRUE", "-r"])
        .arg(&file)
        .arg("-V")
        .output()
        .expect("tshark runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains("Malformed"), "{text}");
    assert!(!text.contains("Expert Info (Error"), "{text}");
    assert_eq!(
        text.matches("Resource ReserVation Protocol").count(),
        frames.len()
    );
    // What it decoded is what we meant.
    assert!(text.contains("Generalized Label"), "{text}");
    assert!(text.contains("LSP Encoding Type: Packet"), "{text}");
    assert!(
        text.contains("Switching Type: Packet-Switch Capable-1 (PSC-1) (1)"),
        "{text}"
    );
    assert!(text.contains("IPv4  IF-ID (3)"), "{text}");
}
