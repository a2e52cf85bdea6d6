//! RSVP codec micro-benchmarks: `Message::parse` and `Message::emit` per message type, on
//! typical IPv4 messages (one sender, Controlled-Load; the Path carries an ADSPEC).
//!
//! The `integrity` groups time the whole RFC 2747 path for Path and Resv (FF) under every
//! algorithm: `encode/ALG/TYPE` emits and signs (insert the INTEGRITY object, digest, checksum),
//! `decode/ALG/TYPE` locates the object, verifies the digest and parses; `none` is the same
//! work without integrity, for the difference.
//!
//! `cargo bench -p pathwise-rsvp --bench codec`. Kept short for a small shared machine: 20
//! samples, 1 s of measurement per benchmark. Emit reuses one output buffer, so it measures
//! encoding and the checksum, not allocating the output.

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use pathwise_rsvp::wire::{
    Adspec, ErrorSpec, FilterSpec, FlowDescriptor, FlowSpec, HopCharacteristics, Message, Path,
    PathErr, PathTear, Resv, ResvConf, ResvConfirm, ResvErr, ResvTear, RsvpHop, SenderDescriptor,
    SenderTspec, Session, Style, TimeValues, TokenBucket,
};

fn v4(a: [u8; 4]) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(a))
}

fn session() -> Session {
    Session::ip(v4([10, 0, 0, 9]), 17, 5004)
}

fn hop() -> RsvpHop {
    RsvpHop::new(v4([10, 0, 0, 1]), 3)
}

fn sender(n: u8) -> FilterSpec {
    FilterSpec::V4 {
        src: Ipv4Addr::new(10, 0, 0, n),
        src_port: 4000 + u16::from(n),
    }
}

fn bucket() -> TokenBucket {
    TokenBucket {
        rate: 125_000.0,
        bucket: 1000.0,
        peak: f32::INFINITY,
        min_policed: 64,
        max_packet: 1500,
    }
}

fn flowspec() -> Option<FlowSpec> {
    Some(FlowSpec::ControlledLoad(bucket()))
}

fn error(code: u8, value: u16) -> ErrorSpec {
    ErrorSpec {
        node: v4([10, 0, 0, 5]),
        flags: 0,
        code,
        value,
    }
}

const R: TimeValues = TimeValues { refresh_ms: 30_000 };

fn resv(style: Style, flows: Vec<FlowDescriptor>) -> Message {
    Message::Resv(Resv {
        integrity: None,
        session: session(),
        hop: hop(),
        time_values: R,
        confirm: None,
        scope: None,
        policy: vec![],
        style,
        flows: flows.into(),
        forward: vec![],
    })
}

fn messages() -> Vec<(&'static str, Message)> {
    let mut adspec = Adspec::new_at_sender(false, true);
    adspec.compose(&HopCharacteristics {
        bandwidth: 1.25e6,
        latency_us: 100,
        mtu: 1500,
        c: 0,
        d: 0,
    });
    let ff = |n| FlowDescriptor {
        flowspec: flowspec(),
        filters: vec![sender(n)].into(),
        te: Vec::new(),
    };
    vec![
        (
            "path",
            Message::Path(Path {
                integrity: None,
                session: session(),
                hop: hop(),
                time_values: R,
                explicit_route: None,
                label_request: None,
                session_attribute: None,
                policy: vec![],
                sender: SenderDescriptor {
                    template: sender(1),
                    tspec: SenderTspec(bucket()),
                    adspec: Some(adspec),
                    record_route: None,
                },
                forward: vec![],
            }),
        ),
        ("resv_ff", resv(Style::FF, vec![ff(1)])),
        (
            "resv_se",
            resv(
                Style::SE,
                vec![FlowDescriptor {
                    flowspec: flowspec(),
                    filters: vec![sender(1), sender(2)].into(),
                    te: Vec::new(),
                }],
            ),
        ),
        (
            "resv_wf",
            resv(
                Style::WF,
                vec![FlowDescriptor {
                    flowspec: flowspec(),
                    filters: vec![].into(),
                    te: Vec::new(),
                }],
            ),
        ),
        (
            "path_err",
            Message::PathErr(PathErr {
                integrity: None,
                session: session(),
                error: error(2, 0),
                policy: vec![],
                sender: Some(SenderDescriptor {
                    template: sender(1),
                    tspec: SenderTspec(bucket()),
                    adspec: None,
                    record_route: None,
                }),
                forward: vec![],
            }),
        ),
        (
            "resv_err",
            Message::ResvErr(ResvErr {
                integrity: None,
                session: session(),
                hop: hop(),
                error: error(1, 2),
                scope: None,
                policy: vec![],
                style: Style::FF,
                flows: vec![ff(1)].into(),
                forward: vec![],
            }),
        ),
        (
            "path_tear",
            Message::PathTear(PathTear {
                integrity: None,
                session: session(),
                hop: hop(),
                sender_template: Some(sender(1)),
                sender_tspec: Some(SenderTspec(bucket())),
                forward: vec![],
            }),
        ),
        (
            "resv_tear",
            Message::ResvTear(ResvTear {
                integrity: None,
                session: session(),
                hop: hop(),
                scope: None,
                style: Style::FF,
                flows: vec![FlowDescriptor {
                    flowspec: None,
                    filters: vec![sender(1)].into(),
                    te: Vec::new(),
                }]
                .into(),
                forward: vec![],
            }),
        ),
        (
            "resv_conf",
            Message::ResvConf(ResvConf {
                integrity: None,
                session: session(),
                error: error(0, 0),
                confirm: ResvConfirm {
                    receiver: v4([10, 0, 0, 9]),
                },
                style: Style::FF,
                flows: vec![ff(1)].into(),
                forward: vec![],
            }),
        ),
    ]
}

fn codec(c: &mut Criterion) {
    let messages = messages();
    let mut parse = c.benchmark_group("parse");
    for (name, m) in &messages {
        let mut bytes = Vec::new();
        m.emit(64, &mut bytes);
        // The benchmark is only meaningful if the message parses back.
        assert_eq!(Message::parse(&bytes).map(|(_, x)| x).as_ref(), Ok(m));
        parse.bench_function(*name, |b| b.iter(|| Message::parse(black_box(&bytes))));
    }
    parse.finish();
    let mut emit = c.benchmark_group("emit");
    for (name, m) in &messages {
        let mut out = Vec::with_capacity(m.buffer_len());
        emit.bench_function(*name, |b| {
            b.iter(|| {
                out.clear();
                black_box(m).emit(64, &mut out);
                black_box(out.len())
            })
        });
    }
    emit.finish();
}

/// Emit + sign, and locate + verify + parse, per algorithm, for Path and Resv.
fn integrity(c: &mut Criterion) {
    use pathwise_auth::{Algorithm, Key};
    use pathwise_rsvp::wire::integrity::{Signed, sign};
    let messages: Vec<_> = messages()
        .into_iter()
        .filter(|(n, _)| matches!(*n, "path" | "resv_ff"))
        .collect();
    let algs: Vec<Option<Algorithm>> = std::iter::once(None)
        .chain(Algorithm::ALL.into_iter().map(Some))
        .collect();
    let mut encode = c.benchmark_group("integrity/encode");
    for alg in &algs {
        let key = alg.map(|a| Key::new(1, a, b"0123456789abcdef").unwrap());
        let name = alg.map_or("none", Algorithm::name);
        for (msg_name, m) in &messages {
            let mut out = Vec::with_capacity(m.buffer_len() + 84);
            let mut seq = 0u64;
            encode.bench_function(format!("{name}/{msg_name}"), |b| {
                b.iter(|| {
                    out.clear();
                    black_box(m).emit(64, &mut out);
                    if let Some(k) = &key {
                        seq += 1;
                        sign(&mut out, k, seq, 1);
                    }
                    black_box(out.len())
                })
            });
        }
    }
    encode.finish();
    let mut decode = c.benchmark_group("integrity/decode");
    for alg in &algs {
        let key = alg.map(|a| Key::new(1, a, b"0123456789abcdef").unwrap());
        let name = alg.map_or("none", Algorithm::name);
        for (msg_name, m) in &messages {
            let mut bytes = Vec::new();
            m.emit(64, &mut bytes);
            if let Some(k) = &key {
                sign(&mut bytes, k, 1, 1);
            }
            decode.bench_function(format!("{name}/{msg_name}"), |b| {
                b.iter(|| {
                    let bytes = black_box(&bytes);
                    if let Some(k) = &key {
                        let s = Signed::locate(bytes).unwrap().unwrap();
                        assert!(k.verify(&s.digested(), s.presented().digest));
                    }
                    Message::parse(bytes).unwrap()
                })
            });
        }
    }
    decode.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(1))
}

criterion_group! {
    name = benches;
    config = config();
    targets = codec, integrity
}
criterion_main!(benches);
