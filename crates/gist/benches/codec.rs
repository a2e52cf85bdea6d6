//! GIST codec micro-benchmarks: `Message::parse_datagram` and `Message::emit_datagram` per
//! message type, on IPv4 path-coupled messages shaped like the reference captures (16-byte
//! peer identity, 4-byte Query-Cookie, 28-byte Responder-Cookie, 12 bytes of NSLP data).
//!
//! `cargo bench -p pathwise-gist --bench codec`. 20 samples, 1 s of measurement each, for a
//! small shared machine. Emit reuses one output buffer: it measures encoding, not allocation.

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use pathwise_gist::wire::{
    Body, CommonHeader, Confirm, Cookie, Data, ErrorMsg, ErrorObject, MaHello, Message, Mri, Nli,
    PathCoupledMri, Query, Response, SessionId, error_code,
};

fn v4(a: [u8; 4]) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(a))
}

fn mri() -> Mri {
    Mri::PathCoupled(PathCoupledMri::flow(v4([10, 77, 0, 1]), v4([10, 77, 0, 2])))
}

fn nli(last: u8) -> Nli {
    Nli {
        ip_ttl: 64,
        rs_validity_ms: 30_000,
        peer_identity: vec![0x65; 16].into(),
        interface_address: v4([10, 77, 0, last]),
    }
}

fn msg(c: bool, r: bool, body: Body) -> Message {
    Message {
        gist_hops: 32,
        nslpid: 42,
        c_flag: c,
        s_flag: true,
        r_flag: r,
        e_flag: false,
        body,
    }
}

fn messages() -> Vec<(&'static str, Message)> {
    let sid = SessionId([0x2d; 16]);
    vec![
        (
            "query",
            msg(
                true,
                true,
                Body::Query(Query {
                    mri: mri(),
                    session_id: sid,
                    nli: nli(1),
                    query_cookie: Cookie(vec![0x26; 4].into()),
                    ..Query::default()
                }),
            ),
        ),
        (
            "response",
            msg(
                false,
                true,
                Body::Response(Response {
                    mri: mri().with_direction(true),
                    session_id: sid,
                    nli: nli(2),
                    query_cookie: Cookie(vec![0x26; 4].into()),
                    responder_cookie: Some(Cookie(vec![0x75; 28].into())),
                    ..Response::default()
                }),
            ),
        ),
        (
            "confirm",
            msg(
                false,
                false,
                Body::Confirm(Confirm {
                    mri: mri(),
                    session_id: sid,
                    nli: nli(1),
                    responder_cookie: Some(Cookie(vec![0x75; 28].into())),
                    ..Confirm::default()
                }),
            ),
        ),
        (
            "data",
            msg(
                false,
                false,
                Body::Data(Data {
                    mri: mri(),
                    session_id: sid,
                    nli: Some(nli(1)),
                    nslp_data: b"Hello World!".to_vec(),
                    ..Data::default()
                }),
            ),
        ),
        (
            "error",
            msg(
                false,
                false,
                Body::Error(ErrorMsg {
                    nat: None,
                    nli: Some(nli(2)),
                    error: {
                        let mut e = ErrorObject::new(
                            error_code::NO_ROUTING_STATE,
                            0,
                            CommonHeader::default(),
                        );
                        e.session_id = Some(sid);
                        e.mri = Some(mri());
                        e
                    },
                    unknown: vec![],
                }),
            ),
        ),
        (
            "ma_hello",
            msg(
                false,
                true,
                Body::MaHello(MaHello {
                    hello_id: 7,
                    unknown: vec![],
                }),
            ),
        ),
    ]
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("gist_codec");
    g.sample_size(20)
        .measurement_time(Duration::from_secs(1))
        .warm_up_time(Duration::from_millis(300));
    for (name, m) in messages() {
        let bytes = m.to_datagram();
        g.bench_function(format!("parse/{name}"), |b| {
            b.iter(|| Message::parse_datagram(black_box(&bytes)))
        });
        let mut out = Vec::with_capacity(bytes.len());
        g.bench_function(format!("emit/{name}"), |b| {
            b.iter(|| {
                out.clear();
                black_box(&m).emit_datagram(&mut out);
                black_box(out.len())
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
