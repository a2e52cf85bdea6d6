//! Byte vectors and parse errors. The reference captures are checked byte for byte in
//! `tests/captures.rs`; here: hand-built vectors for what they do not cover (IPv6 and flagged
//! MRIs, loose-end MRI, Error, MA-Hello, unknown objects) and one test per parse error.

use super::vectors::{self, nli, path_coupled_mri, query, query_cmode};
use super::*;
use pathwise_core::wire::Writer;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn v4(a: [u8; 4]) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(a))
}

fn round_trip(m: &Message) -> Vec<u8> {
    let b = m.to_datagram();
    assert_eq!(b.len(), 4 + m.buffer_len());
    assert_eq!(&Message::parse_datagram(&b).unwrap(), m);
    b
}

#[test]
fn confirm_vector_deconstructs_and_reconstructs() {
    let b = vectors::DMODE_CONFIRM.to_vec();
    let m = Message::parse_datagram(&b).unwrap();
    assert_eq!(m.msg_type(), MsgType::Confirm);
    assert_eq!(m.header().length_words, 0x1a);
    let Body::Confirm(c) = &m.body else { panic!() };
    assert_eq!(c.nli.peer_identity.len(), 16, "PI-Length counts bytes");
    assert_eq!(c.responder_cookie.as_ref().map(|c| c.0.len()), Some(28));
    assert_eq!(m.to_datagram(), b);
}

#[test]
fn ipv6_path_coupled_mri_with_every_flag() {
    let mri = PathCoupledMri {
        nat: true,
        source: IpAddr::V6(Ipv6Addr::new(0xfd00, 1, 0, 0, 0, 0, 0, 1)),
        destination: IpAddr::V6(Ipv6Addr::new(0xfd00, 2, 0, 0, 0, 0, 0, 2)),
        source_prefix: 128,
        dest_prefix: 64,
        protocol: Some(17),
        ds_field: Some(46),
        flow_label: Some(0xabcde),
        spi: None,
        source_port: Some(5000),
        dest_port: Some(5001),
        upstream: true,
    };
    let m = Mri::PathCoupled(mri);
    let mut b = Vec::new();
    m.emit(&mut Writer::new(&mut b));
    assert_eq!(b.len(), m.buffer_len());
    assert_eq!(
        &b[..4],
        &[0, 0x80, 0x6e, 0xe0],
        "MRM 0, N, IP-Ver 6 + P T F, A B D"
    );
    assert_eq!(&b[36..40], &[128, 64, 17, 46 << 2]);
    assert_eq!(&b[40..44], &[0, 0x0a, 0xbc, 0xde], "flow label word");
    assert_eq!(&b[44..48], &[0x13, 0x88, 0x13, 0x89], "port word");
    assert_eq!(Mri::parse(&b), Ok(m));
    // SPI instead of ports.
    let spi = Mri::PathCoupled(PathCoupledMri {
        spi: Some(0xdeadbeef),
        source_port: None,
        dest_port: None,
        flow_label: None,
        ..mri
    });
    let mut b = Vec::new();
    spi.emit(&mut Writer::new(&mut b));
    assert_eq!(b.len(), 4 + 32 + 4 + 4);
    assert_eq!(Mri::parse(&b), Ok(spi));
}

#[test]
fn path_coupled_flag_rules() {
    let mut b = Vec::new();
    path_coupled_mri().emit(&mut Writer::new(&mut b));
    let mut bad = b.clone();
    bad[2] |= 0x02; // F on IPv4
    assert_eq!(
        Mri::parse(&bad).unwrap_err().fault,
        ValueFault::InvalidFlagFieldCombination
    );
    let mut bad = b.clone();
    bad[3] |= 0x80; // A without P
    assert_eq!(
        Mri::parse(&bad).unwrap_err().fault,
        ValueFault::InvalidFlagFieldCombination
    );
    let mut bad = b.clone();
    bad[2] = 0x50; // IP-Ver 5
    assert_eq!(
        Mri::parse(&bad).unwrap_err().fault,
        ValueFault::ValueNotSupported
    );
    let mut bad = b.clone();
    bad.extend_from_slice(&[0; 4]);
    assert_eq!(
        Mri::parse(&bad).unwrap_err().fault,
        ValueFault::IncorrectLength
    );
}

#[test]
fn loose_end_and_unknown_mrms_round_trip() {
    let le = Mri::LooseEnd(LooseEndMri {
        nat: false,
        source: v4([192, 0, 2, 1]),
        destination: v4([192, 0, 2, 2]),
        upstream: true,
    });
    let mut b = Vec::new();
    le.emit(&mut Writer::new(&mut b));
    assert_eq!(b, [1, 0, 0x48, 0, 192, 0, 2, 1, 192, 0, 2, 2]);
    assert_eq!(Mri::parse(&b), Ok(le));
    let other = Mri::Other {
        mrm: 120,
        nat: true,
        data: vec![1, 2, 3, 4, 5, 6],
    };
    let mut b = Vec::new();
    other.emit(&mut Writer::new(&mut b));
    assert_eq!(Mri::parse(&b), Ok(other));
}

#[test]
fn every_message_type_round_trips() {
    round_trip(&query());
    round_trip(&query_cmode());
    let mut q = query();
    if let Body::Query(x) = &mut q.body {
        x.stack_proposal = Some(StackProposal {
            profiles: vec![
                vec![ma_protocol::TCP],
                vec![ma_protocol::TLS, ma_protocol::TCP],
            ],
        });
        x.stack_config = Some(StackConfigData {
            ma_hold_time_ms: 180_000,
            options: vec![
                MaProtocolOptions::tcp_port(1, 30000),
                MaProtocolOptions::default(),
            ],
        });
        x.nslp_data = Some(vec![1, 2, 3, 4]);
        x.nat = Some(vec![0; 8]);
    }
    round_trip(&q);
    let hello = Message {
        gist_hops: 1,
        nslpid: 0,
        c_flag: false,
        s_flag: false,
        r_flag: true,
        e_flag: false,
        body: Body::MaHello(MaHello {
            hello_id: 0x01020304,
            unknown: vec![],
        }),
    };
    let b = round_trip(&hello);
    assert_eq!(
        &b[4..],
        &[1, 1, 0, 2, 0, 0, 5, 0x40, 0, 10, 0, 1, 1, 2, 3, 4]
    );
    let data = Message {
        e_flag: true,
        c_flag: false,
        r_flag: false,
        body: Body::Data(Data {
            mri: path_coupled_mri(),
            session_id: SessionId([1; 16]),
            nli: None,
            nslp_data: vec![0xaa; 12],
            ..Data::default()
        }),
        ..query()
    };
    round_trip(&data);
}

#[test]
fn error_object_with_every_field_round_trips() {
    let header = CommonHeader::parse(&hex("01200014 002a80c0")).unwrap();
    let mut e = ErrorObject::new(error_code::OBJECT_VALUE_ERROR, 4, header);
    e.session_id = Some(SessionId([3; 16]));
    e.mri = Some(path_coupled_mri());
    e.info = vec![
        AdditionalInfo::MessageLength(20),
        AdditionalInfo::Mtu(1500),
        AdditionalInfo::ObjectType(object_type::RESPONDER_COOKIE),
        AdditionalInfo::ObjectValue {
            real_length_words: 8,
            offset: 4,
            object: vec![0, 6, 0, 7, 1, 2, 3, 4],
        },
        AdditionalInfo::Other {
            ai_type: 99,
            value: vec![5; 4],
        },
    ];
    e.comment = Some(b"cookie".to_vec());
    assert_eq!(e.class, ErrorClass::ProtocolError);
    let m = Message {
        gist_hops: 1,
        nslpid: 42,
        c_flag: false,
        s_flag: true,
        r_flag: false,
        e_flag: false,
        body: Body::Error(ErrorMsg {
            nat: None,
            nli: Some(nli()),
            error: e.clone(),
            unknown: vec![],
        }),
    };
    let b = round_trip(&m);
    // Class, code, subcode; flags S M C D Q.
    let at = 4 + 8 + 4 + nli().buffer_len() + 4;
    assert_eq!(&b[at..at + 6], &[2, 0, 10, 4, 0xf8, 0]);
    assert_eq!(
        ErrorObject::new(error_code::HOP_LIMIT_EXCEEDED, 0, header).class,
        ErrorClass::PermanentFailure
    );
}

#[test]
fn unknown_objects_follow_their_extensibility_flags() {
    let base = query().to_datagram();
    let with = |ab: u16| {
        let mut b = base.clone();
        b.extend_from_slice(&((ab << 14) | 0x200).to_be_bytes());
        b.extend_from_slice(&[0, 1, 0xde, 0xad, 0xbe, 0xef]);
        let words = u16::from_be_bytes([b[6], b[7]]) + 2;
        b[6..8].copy_from_slice(&words.to_be_bytes());
        b
    };
    let e = Message::parse_datagram(&with(0)).unwrap_err();
    assert_eq!(e.kind, ParseErrorKind::UnrecognisedObject(0x200));
    assert_eq!(e.kind.error_code(), Some((ErrorClass::ProtocolError, 9, 1)));
    assert_eq!(
        e.object,
        Some(base.len() - 4..base.len() + 4),
        "the object's bytes"
    );
    assert_eq!(
        Message::parse_datagram(&with(1)).unwrap(),
        query(),
        "AB=01: dropped"
    );
    let fwd = Message::parse_datagram(&with(2)).unwrap();
    let Body::Query(q) = &fwd.body else { panic!() };
    assert_eq!(
        q.unknown,
        vec![UnknownObject {
            object_type: 0x200,
            body: vec![0xde, 0xad, 0xbe, 0xef]
        }]
    );
    assert_eq!(
        fwd.to_datagram(),
        with(2),
        "AB=10: kept and forwarded unchanged"
    );
    let e = Message::parse_datagram(&with(3)).unwrap_err();
    assert_eq!(e.kind, ParseErrorKind::InvalidExtensibilityFlags(0x200));
    assert_eq!(e.kind.error_code().map(|c| c.2), Some(5));
}

#[test]
fn header_errors() {
    let good = query().to_datagram();
    let kind = |b: &[u8]| Message::parse_datagram(b).unwrap_err().kind;
    assert_eq!(kind(&good[..3]), ParseErrorKind::Truncated);
    assert_eq!(kind(&good[..10]), ParseErrorKind::Truncated);
    let mut b = good.clone();
    b[0] ^= 1;
    assert!(matches!(kind(&b), ParseErrorKind::BadMagic(_)));
    assert_eq!(
        ParseErrorKind::BadMagic(0).error_code(),
        None,
        "not GIST: silent"
    );
    let mut b = good.clone();
    b[4] = 2;
    assert_eq!(kind(&b), ParseErrorKind::UnknownVersion(2));
    let mut b = good.clone();
    b[10] = 0x80 | 9;
    assert_eq!(kind(&b), ParseErrorKind::UnknownType(9));
    let mut b = good.clone();
    b[11] &= !0x40;
    assert_eq!(
        kind(&b),
        ParseErrorKind::InvalidRFlag,
        "a Query always asks for a Response"
    );
    let mut b = good.clone();
    b[11] |= 0x20;
    assert_eq!(kind(&b), ParseErrorKind::InvalidEFlag);
    let mut b = good.clone();
    b.extend_from_slice(&[0; 4]);
    let e = Message::parse_datagram(&b).unwrap_err();
    assert_eq!(e.kind.error_code().map(|c| (c.1, c.2)), Some((1, 3)));
    assert!(
        matches!(e.kind, ParseErrorKind::IncorrectLength { declared, calculated } if calculated == declared + 1)
    );
}

#[test]
fn object_errors_carry_what_was_parsed_before() {
    let good = query().to_datagram();
    // Missing Query-Cookie: drop the last object (3 words) and fix the length.
    let mut b = good[..good.len() - 12].to_vec();
    let words = u16::from_be_bytes([b[6], b[7]]) - 3;
    b[6..8].copy_from_slice(&words.to_be_bytes());
    let e = Message::parse_datagram(&b).unwrap_err();
    assert_eq!(
        e.kind,
        ParseErrorKind::MissingObject(object_type::QUERY_COOKIE)
    );
    assert_eq!(e.mri, Some(Box::new(path_coupled_mri())));
    assert_eq!(
        e.nli,
        Some(Box::new(nli())),
        "the Error can be sent to the querying node"
    );
    // Duplicate Session ID.
    let sid = &good[4 + 8 + 4 + path_coupled_mri().buffer_len()..][..20];
    let mut b = good.clone();
    b.extend_from_slice(sid);
    let words = u16::from_be_bytes([b[6], b[7]]) + 5;
    b[6..8].copy_from_slice(&words.to_be_bytes());
    assert_eq!(
        Message::parse_datagram(&b).unwrap_err().kind,
        ParseErrorKind::DuplicateObject(object_type::SESSION_ID)
    );
    // A Responder-Cookie in a Query is an invalid object type.
    let mut b = good.clone();
    b.extend_from_slice(&[0, 6, 0, 1, 1, 2, 3, 4]);
    let words = u16::from_be_bytes([b[6], b[7]]) + 2;
    b[6..8].copy_from_slice(&words.to_be_bytes());
    assert_eq!(
        Message::parse_datagram(&b).unwrap_err().kind,
        ParseErrorKind::InvalidObjectType(object_type::RESPONDER_COOKIE)
    );
    // A Session ID of the wrong length: Object Value Error, Incorrect Length, with offset.
    let at = 4 + 8 + 4 + path_coupled_mri().buffer_len();
    let mut b = good.clone();
    b[at + 3] = 3; // 3 words instead of 4
    b.truncate(at + 4 + 12);
    let words = ((b.len() - 12) / 4) as u16;
    b[6..8].copy_from_slice(&words.to_be_bytes());
    let e = Message::parse_datagram(&b).unwrap_err();
    assert_eq!(
        e.kind,
        ParseErrorKind::ObjectValue {
            object_type: object_type::SESSION_ID,
            fault: ValueFault::IncorrectLength
        }
    );
    assert_eq!(
        e.kind.error_code(),
        Some((ErrorClass::ProtocolError, 10, 0))
    );
    // An object running past the end of the message.
    let mut b = good.clone();
    b[at + 3] = 40;
    assert!(matches!(
        Message::parse_datagram(&b).unwrap_err().kind,
        ParseErrorKind::IncorrectLength { .. }
    ));
    // An empty Stack-Proposal profile.
    assert_eq!(
        StackProposal::parse(&[1, 0, 0, 0, 0, 0, 0, 0])
            .unwrap_err()
            .fault,
        ValueFault::EmptyList
    );
    assert_eq!(
        StackProposal::parse(&[0, 0, 0, 0]).unwrap_err().fault,
        ValueFault::ValueNotSupported
    );
}

#[test]
fn frame_len_cuts_a_stream() {
    let m = query();
    let mut s = Vec::new();
    m.emit(&mut s);
    m.emit(&mut s);
    let n = frame_len(&s).unwrap();
    assert_eq!(n, m.buffer_len());
    assert_eq!(Message::parse(&s[..n]).unwrap(), m);
    assert_eq!(frame_len(&s[..3]), None);
}

#[test]
fn tls_profile_and_its_tcp_port() {
    // RFC 5971 §5.7.3: TLS over TCP is the profile [TLS, TCP]; TLS has no options of its own
    // and the port is in the profile's TCP options.
    let sp = StackProposal {
        profiles: vec![
            vec![ma_protocol::TCP],
            vec![ma_protocol::TLS, ma_protocol::TCP],
        ],
    };
    assert_eq!(
        sp.profile_number(&[ma_protocol::TLS, ma_protocol::TCP]),
        Some(2)
    );
    assert_eq!(sp.profile_number(&[ma_protocol::TCP]), Some(1));
    assert_eq!(sp.profile_number(&[ma_protocol::SCTP]), None);
    let sc = StackConfigData {
        ma_hold_time_ms: 30_000,
        options: vec![
            MaProtocolOptions::tcp_port(1, 30000),
            MaProtocolOptions::tls(2),
            MaProtocolOptions::tcp_port(2, 30001),
        ],
    };
    assert_eq!(
        sc.find_in(ma_protocol::TCP, 2)
            .and_then(MaProtocolOptions::port),
        Some(30001)
    );
    assert_eq!(
        sc.find_in(ma_protocol::TLS, 2).map(|o| o.data.len()),
        Some(0)
    );
    let mut buf = Vec::new();
    sc.emit(&mut Writer::new(&mut buf));
    let back = StackConfigData::parse(&buf).unwrap();
    assert_eq!(back, sc);
}

fn confirm_with(rc: bool, sp: bool, scd: bool) -> Message {
    Message {
        gist_hops: 32,
        nslpid: 42,
        c_flag: false,
        s_flag: true,
        r_flag: false,
        e_flag: false,
        body: Body::Confirm(Confirm {
            mri: path_coupled_mri(),
            session_id: SessionId([7; 16]),
            nli: nli(),
            responder_cookie: rc.then(|| Cookie(vec![5; 16].into())),
            stack_proposal: sp.then(|| StackProposal {
                profiles: vec![vec![ma_protocol::TCP]],
            }),
            stack_config: scd.then(|| StackConfigData {
                ma_hold_time_ms: 30_000,
                options: Vec::new(),
            }),
            ..Confirm::default()
        }),
    }
}

/// RFC 5971 §5.1: `Confirm = ... [ Responder-Cookie [ Stack-Proposal [ SCD ] ] ]`; anything
/// else is an Object Type Error, Missing Object (A.4.4.9 subcode 2), naming the object the
/// nesting lacks.
#[test]
fn confirm_grammar_nests_cookie_proposal_and_configuration() {
    for (rc, sp, scd) in [
        (false, false, false),
        (true, false, false),
        (true, true, false),
    ] {
        round_trip(&confirm_with(rc, sp, scd));
    }
    round_trip(&confirm_with(true, true, true));
    let cases = [
        // NSIS-ka's complaint about pathwise (cmode-pathwise-queries-3-sessions.pcap frame 17).
        ((true, false, true), object_type::STACK_PROPOSAL),
        ((false, true, false), object_type::RESPONDER_COOKIE),
        ((false, true, true), object_type::RESPONDER_COOKIE),
        ((false, false, true), object_type::STACK_PROPOSAL),
    ];
    for ((rc, sp, scd), missing) in cases {
        let b = confirm_with(rc, sp, scd).to_datagram();
        let e = Message::parse_datagram(&b).unwrap_err();
        assert_eq!(
            e.kind,
            ParseErrorKind::MissingObject(missing),
            "{rc} {sp} {scd}"
        );
        assert_eq!(
            e.kind.error_code(),
            Some((ErrorClass::ProtocolError, error_code::OBJECT_TYPE_ERROR, 2))
        );
        assert!(
            e.session_id.is_some() && e.mri.is_some(),
            "the Error can name the session"
        );
    }
}

/// RFC 5971 §5.1: `Response = ... [ Responder-Cookie [ Stack-Proposal SCD ] ]`, and A.1: R=1
/// whenever a Responder-Cookie is present.
#[test]
fn response_grammar_and_r_flag() {
    let response = |rc: bool, sp: bool, scd: bool, r: bool| {
        let Body::Confirm(c) = confirm_with(rc, sp, scd).body else {
            unreachable!()
        };
        Message {
            gist_hops: 32,
            nslpid: 42,
            c_flag: false,
            s_flag: true,
            r_flag: r,
            e_flag: false,
            body: Body::Response(Response {
                mri: path_coupled_mri(),
                session_id: SessionId([7; 16]),
                nli: nli(),
                query_cookie: Cookie(vec![1; 12].into()),
                responder_cookie: c.responder_cookie,
                stack_proposal: c.stack_proposal,
                stack_config: c.stack_config,
                ..Response::default()
            }),
        }
    };
    round_trip(&response(false, false, false, false));
    round_trip(&response(true, false, false, true));
    round_trip(&response(true, true, true, true));
    let fails = [
        (
            response(true, true, false, true),
            ParseErrorKind::MissingObject(4),
        ),
        (
            response(true, false, true, true),
            ParseErrorKind::MissingObject(3),
        ),
        (
            response(false, true, true, true),
            ParseErrorKind::MissingObject(6),
        ),
        (
            response(true, false, false, false),
            ParseErrorKind::InvalidRFlag,
        ),
    ];
    for (m, kind) in fails {
        let e = Message::parse_datagram(&m.to_datagram()).unwrap_err();
        assert_eq!(e.kind, kind);
    }
}

/// RFC 5971 §5.2.2: Hello-ID zero with R=1 is "Object Value Error" / "Value Not Supported";
/// R=0 takes any Hello-ID (a keep-alive has zero, a reply echoes the request's).
#[test]
fn ma_hello_request_needs_a_hello_id() {
    let hello = |r: bool, id: u32| Message {
        gist_hops: 1,
        nslpid: 0,
        c_flag: false,
        s_flag: true,
        r_flag: r,
        e_flag: false,
        body: Body::MaHello(MaHello {
            hello_id: id,
            unknown: Vec::new(),
        }),
    };
    for (r, id) in [(false, 0), (false, 7), (true, 7)] {
        let mut b = Vec::new();
        hello(r, id).emit(&mut b);
        assert_eq!(Message::parse(&b), Ok(hello(r, id)));
    }
    let mut b = Vec::new();
    hello(true, 0).emit(&mut b);
    let e = Message::parse(&b).unwrap_err();
    assert_eq!(
        e.kind.error_code(),
        Some((ErrorClass::ProtocolError, error_code::OBJECT_VALUE_ERROR, 1))
    );
    assert_eq!(
        e.object,
        Some(8..16),
        "the Hello-ID object, for the Object Value Info"
    );
}
