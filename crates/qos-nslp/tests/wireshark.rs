//! The Wireshark dissector `contrib/wireshark/qos_nslp.lua` reads the QoS NSLP the way this
//! crate's codec does.
//!
//! Each test writes a capture of GIST messages (Query and Data, built with `pathwise_gist::wire`)
//! whose NSLP-Data is a QoS NSLP message built with [`pathwise_qos_nslp::wire`], runs `tshark -X lua_script:gist.lua -X lua_script:qos_nslp.lua`
//! on it and checks that tshark succeeds with no Lua error, no malformed packet and no
//! dissector bug; then:
//!
//! - for messages the codec built (the wire crate's samples and messages here that cover every
//!   object and every QSPEC object and parameter): per frame, the message type, flags, object
//!   types and AB flags, RSN, RII, refresh period, the INFO-SPEC and the QSPEC's header, objects
//!   and parameter values match what the codec parses, with no expert warning or error, in
//!   D-mode datagrams and back to back on a C-mode stream cut across TCP segments;
//! - for truncated and mutated payloads: the dissector flags (an expert warning or error)
//!   exactly the messages [`Message::parse`] rejects;
//! - loaded before `gist.lua`, or both installed as plug-ins, the dissector still registers;
//! - `contrib/wireshark/README.md` lists every field the dissector registers.
//!
//! Without `tshark` every test prints why on stderr and passes.

use pathwise_core::wire::TlvIter;
use pathwise_gist::wire::{
    Body as GistBody, Cookie, Data, GIST_PORT, Message as GistMessage, Mri, Nli, PathCoupledMri,
    Query as GistQuery,
};
use pathwise_qos_nslp::wire::qspec::{
    ExcessTreatment, ParamFlags, ParamValue, Parameter, PathJitter, Qspec, QspecObject,
    QspecObjectType, QspecProcedure, Tmod, qspec_type,
};
use pathwise_qos_nslp::wire::{
    Answers, BindingCode, BindingType, Body, BoundSessionId, ErrorClass, ErrorSource,
    Extensibility, GenericFlags, InfoSpec, Message, MessageBinding, Notify, ObjectHeader,
    PacketClassifier, Query, RefreshPeriod, Reserve, Response, Rii, Rsn, RsnList, SessionId,
    SessionIdList, UnknownObject, code, object_type, vectors,
};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Wireshark's expert severity PI_WARN (epan/proto.h); PI_ERROR is above it.
const PI_WARN: u64 = 0x0060_0000;

/// The fields compared with the codec, after `frame.number`.
const FIELDS: &[&str] = &[
    "gist.nslpid",
    "qos_nslp.type",
    "qos_nslp.flags.tear",
    "qos_nslp.flags.replace",
    "qos_nslp.flags.reserve_init",
    "qos_nslp.flags.scoping",
    "qos_nslp.flags.proxy",
    "qos_nslp.flags.ack_req",
    "qos_nslp.flags.break",
    "qos_nslp.obj.type",
    "qos_nslp.obj.ab",
    "qos_nslp.obj.length",
    "qos_nslp.obj.data",
    "qos_nslp.rii",
    "qos_nslp.rsn",
    "qos_nslp.epoch",
    "qos_nslp.refresh_period",
    "qos_nslp.bsid.code",
    "qos_nslp.bsid.sid",
    "qos_nslp.pc.flags",
    "qos_nslp.sid_list.sid",
    "qos_nslp.rsn_list.epoch",
    "qos_nslp.rsn_list.rsn",
    "qos_nslp.binding.d",
    "qos_nslp.msg_id",
    "qos_nslp.bound_msg_id",
    "qos_nslp.info.class",
    "qos_nslp.info.code",
    "qos_nslp.info.esi_type",
    "qos_nslp.info.esi_ipv4",
    "qos_nslp.info.esi_ipv6",
    "qos_nslp.info.esi_fqdn",
    "qos_nslp.info.esi_data",
    "qos_nslp.info.specific",
    "qos_nslp.qspec.version",
    "qos_nslp.qspec.local",
    "qos_nslp.qspec.type",
    "qos_nslp.qspec.msg_seq",
    "qos_nslp.qspec.obj_comb",
    "qos_nslp.qspec.length",
    "qos_nslp.qspec.obj.type",
    "qos_nslp.qspec.obj.e",
    "qos_nslp.qspec.param.id",
    "qos_nslp.qspec.param.m",
    "qos_nslp.qspec.param.e",
    "qos_nslp.qspec.param.n",
    "qos_nslp.qspec.param.data",
    "qos_nslp.qspec.tmod.rate",
    "qos_nslp.qspec.tmod.bucket",
    "qos_nslp.qspec.tmod.peak",
    "qos_nslp.qspec.tmod.min_policed_unit",
    "qos_nslp.qspec.tmod.max_packet_size",
    "qos_nslp.qspec.path_latency",
    "qos_nslp.qspec.jitter.variance",
    "qos_nslp.qspec.jitter.p999",
    "qos_nslp.qspec.jitter.min_latency",
    "qos_nslp.qspec.jitter.reserved",
    "qos_nslp.qspec.plr",
    "qos_nslp.qspec.per",
    "qos_nslp.qspec.slack_term",
    "qos_nslp.qspec.preemption_priority",
    "qos_nslp.qspec.defending_priority",
    "qos_nslp.qspec.admission.y2171",
    "qos_nslp.qspec.admission.priority",
    "qos_nslp.qspec.rph.namespace",
    "qos_nslp.qspec.rph.priority",
    "qos_nslp.qspec.excess.treatment",
    "qos_nslp.qspec.excess.remark",
    "qos_nslp.qspec.phb",
    "qos_nslp.qspec.phb.dscp",
    "qos_nslp.qspec.phb.id_code",
    "qos_nslp.qspec.dste_class_type",
    "qos_nslp.qspec.y1541_class",
];

// ------------------------------------------------------------------------------------------
// Running tshark
// ------------------------------------------------------------------------------------------

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../contrib/wireshark")
        .join(name)
}

/// Whether tshark can run; if not, says so on stderr (the test then passes).
fn have_tshark(test: &str) -> bool {
    match Command::new("tshark").arg("--version").output() {
        Ok(o) if o.status.success() => true,
        Ok(o) => {
            eprintln!("{test}: skipped: `tshark --version` failed ({})", o.status);
            false
        }
        Err(e) => {
            eprintln!("{test}: skipped: tshark not found ({e}); install tshark to run it");
            false
        }
    }
}

/// A scratch directory, removed on drop. It doubles as tshark's HOME, so a personal copy of
/// the plug-ins or personal preferences cannot change the result.
#[derive(Debug)]
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "pathwise-qos-nslp-wireshark-{}-{test}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// How the dissectors are loaded.
#[derive(Clone, Copy, Debug)]
enum Load {
    /// `-X lua_script:gist.lua -X lua_script:qos_nslp.lua`.
    GistFirst,
    /// The same, `qos_nslp.lua` first.
    QosFirst,
    /// Neither on the command line: both copied into the personal plug-in directory.
    Plugins,
}

/// Runs tshark with the dissectors on `pcap`; checks that it succeeded and that neither the
/// dissectors nor Wireshark complained; returns stdout.
fn tshark_with(home: &Scratch, load: Load, pcap: &Path, args: &[&str]) -> String {
    let lua = |name| format!("lua_script:{}", script(name).display());
    let scripts = match load {
        Load::GistFirst => vec![lua("gist.lua"), lua("qos_nslp.lua")],
        Load::QosFirst => vec![lua("qos_nslp.lua"), lua("gist.lua")],
        Load::Plugins => vec![],
    };
    let mut cmd = Command::new("tshark");
    cmd.env("HOME", &home.0)
        .env_remove("XDG_CONFIG_HOME")
        .arg("-n");
    for s in &scripts {
        cmd.args(["-X", s]);
    }
    let out = cmd
        .arg("-r")
        .arg(pcap)
        .args(args)
        .output()
        .expect("run tshark");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let what = format!("tshark ({load:?}) -r {} {}", pcap.display(), args.join(" "));
    assert!(out.status.success(), "{what}: {}\n{stderr}", out.status);
    for bad in [
        "Lua Error",
        "Lua: Error",
        "Dissector bug",
        "Malformed Packet",
    ] {
        assert!(
            !stderr.contains(bad),
            "{what}: stderr has {bad:?}:\n{stderr}"
        );
        assert!(
            !stdout.contains(bad),
            "{what}: output has {bad:?}:\n{}",
            excerpt(&stdout, bad)
        );
    }
    stdout
}

fn tshark(home: &Scratch, pcap: &Path, args: &[&str]) -> String {
    tshark_with(home, Load::GistFirst, pcap, args)
}

/// The lines around the first occurrence of `needle`.
fn excerpt(text: &str, needle: &str) -> String {
    let at = text.find(needle).unwrap_or(0);
    let start = text[..at].rfind("\nFrame ").unwrap_or(0);
    text[start..(at + 400).min(text.len())].to_string()
}

/// `-T fields` output as frame number → one string per field of `fields`.
fn tshark_fields(
    home: &Scratch,
    load: Load,
    pcap: &Path,
    fields: &[&str],
) -> BTreeMap<usize, Vec<String>> {
    let mut args = vec!["-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,"];
    args.extend(["-e", "frame.number"]);
    for f in fields {
        args.extend(["-e", f]);
    }
    tshark_with(home, load, pcap, &args)
        .lines()
        .map(|line| {
            let mut cols = line.split('\t').map(str::to_string);
            let n = cols.next().unwrap().parse().expect("frame number");
            let rest: Vec<String> = cols.collect();
            assert_eq!(rest.len(), fields.len(), "columns in {line:?}");
            (n, rest)
        })
        .collect()
}

/// The worst expert severity of each frame, any protocol.
fn worst_severity(home: &Scratch, pcap: &Path) -> BTreeMap<usize, u64> {
    tshark_fields(home, Load::GistFirst, pcap, &["_ws.expert.severity"])
        .into_iter()
        .map(|(n, cols)| {
            let worst = cols[0]
                .split(',')
                .filter_map(|s| s.parse::<u64>().ok())
                .max()
                .unwrap_or(0);
            (n, worst)
        })
        .collect()
}

// ------------------------------------------------------------------------------------------
// Captures: a classic pcap writer (Ethernet, IPv4, UDP and TCP)
// ------------------------------------------------------------------------------------------

/// A TCP direction: source address and port, destination address and port.
type Flow = ([u8; 4], u16, [u8; 4], u16);

#[derive(Debug)]
struct PcapWriter {
    bytes: Vec<u8>,
    frames: u32,
}

impl PcapWriter {
    fn new() -> Self {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        bytes.extend_from_slice(&2u16.to_le_bytes());
        bytes.extend_from_slice(&4u16.to_le_bytes());
        bytes.extend_from_slice(&[0; 8]); // thiszone, sigfigs
        bytes.extend_from_slice(&65535u32.to_le_bytes());
        bytes.extend_from_slice(&1u32.to_le_bytes()); // LINKTYPE_ETHERNET
        PcapWriter { bytes, frames: 0 }
    }

    /// A UDP datagram from 10.0.0.1 to 10.0.0.2 on the GIST port (UDP checksum 0: none).
    fn udp(&mut self, payload: &[u8]) {
        let mut l4 = Vec::new();
        l4.extend_from_slice(&GIST_PORT.to_be_bytes());
        l4.extend_from_slice(&GIST_PORT.to_be_bytes());
        l4.extend_from_slice(&u16::try_from(8 + payload.len()).unwrap().to_be_bytes());
        l4.extend_from_slice(&[0, 0]);
        l4.extend_from_slice(payload);
        self.ipv4([10, 0, 0, 1], [10, 0, 0, 2], 17, &l4);
    }

    /// A TCP segment (checksum left 0; tshark does not check it by default).
    fn tcp(&mut self, flow: Flow, seq: u32, ack: u32, flags: u8, payload: &[u8]) {
        let (src, sport, dst, dport) = flow;
        let mut l4 = Vec::new();
        l4.extend_from_slice(&sport.to_be_bytes());
        l4.extend_from_slice(&dport.to_be_bytes());
        l4.extend_from_slice(&seq.to_be_bytes());
        l4.extend_from_slice(&ack.to_be_bytes());
        l4.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
        l4.extend_from_slice(payload);
        self.ipv4(src, dst, 6, &l4);
    }

    /// A TCP connection from `flow`'s source: handshake, then `stream` in segments of the
    /// given sizes (cycled), each acknowledged. Returns the frame number of each stream byte.
    fn tcp_stream(&mut self, flow: Flow, stream: &[u8], sizes: &[usize]) -> Vec<u32> {
        const SYN: u8 = 0x02;
        const SYN_ACK: u8 = 0x12;
        const ACK: u8 = 0x10;
        const PSH_ACK: u8 = 0x18;
        let back = (flow.2, flow.3, flow.0, flow.1);
        let (isn, server_isn) = (1000u32, 9000u32);
        self.tcp(flow, isn, 0, SYN, &[]);
        self.tcp(back, server_isn, isn + 1, SYN_ACK, &[]);
        self.tcp(flow, isn + 1, server_isn + 1, ACK, &[]);
        let mut owner = Vec::with_capacity(stream.len());
        let mut at = 0;
        for &size in sizes.iter().cycle() {
            if at >= stream.len() {
                break;
            }
            let end = (at + size).min(stream.len());
            let seq = isn + 1 + at as u32;
            self.tcp(flow, seq, server_isn + 1, PSH_ACK, &stream[at..end]);
            owner.extend(std::iter::repeat_n(self.frames, end - at));
            self.tcp(back, server_isn + 1, isn + 1 + end as u32, ACK, &[]);
            at = end;
        }
        owner
    }

    fn ipv4(&mut self, src: [u8; 4], dst: [u8; 4], protocol: u8, l4: &[u8]) {
        let total = u16::try_from(20 + l4.len()).expect("fits an IPv4 packet");
        let mut ip = vec![0x45, 0];
        ip.extend_from_slice(&total.to_be_bytes());
        ip.extend_from_slice(&[0, 0, 0x40, 0, 64, protocol, 0, 0]);
        ip.extend_from_slice(&src);
        ip.extend_from_slice(&dst);
        let sum = ip
            .chunks(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum::<u32>();
        let sum = (sum & 0xffff) + (sum >> 16);
        let sum = !(((sum & 0xffff) + (sum >> 16)) as u16);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        let mut frame = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
        frame.extend_from_slice(&ip);
        frame.extend_from_slice(l4);

        self.frames += 1;
        let len = u32::try_from(frame.len()).unwrap();
        self.bytes.extend_from_slice(&self.frames.to_le_bytes()); // one frame a second
        self.bytes.extend_from_slice(&0u32.to_le_bytes());
        self.bytes.extend_from_slice(&len.to_le_bytes());
        self.bytes.extend_from_slice(&len.to_le_bytes());
        self.bytes.extend_from_slice(&frame);
    }

    fn save(&self, path: &Path) {
        std::fs::write(path, &self.bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

// ------------------------------------------------------------------------------------------
// GIST around the QoS NSLP
// ------------------------------------------------------------------------------------------

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn mri() -> Mri {
    Mri::PathCoupled(PathCoupledMri::flow(ip("10.0.0.1"), ip("10.0.9.9")))
}

/// A GIST Data message carrying `payload` for `nslpid`.
fn gist_data(nslpid: u16, payload: Vec<u8>) -> GistMessage {
    GistMessage {
        gist_hops: 16,
        nslpid,
        c_flag: false,
        s_flag: true,
        r_flag: false,
        e_flag: false,
        body: GistBody::Data(Data {
            nat: None,
            mri: mri(),
            session_id: pathwise_gist::wire::SessionId(*b"qos-nslp-session"),
            nli: None,
            nslp_data: payload,
            unknown: vec![],
        }),
    }
}

/// A GIST Query carrying `payload` for `nslpid` (how a QNI's first RESERVE travels, RFC 5974
/// §4.1, piggybacked on the handshake).
fn gist_query(nslpid: u16, payload: Vec<u8>) -> GistMessage {
    GistMessage {
        gist_hops: 16,
        nslpid,
        c_flag: true,
        s_flag: true,
        r_flag: true,
        e_flag: false,
        body: GistBody::Query(GistQuery {
            mri: mri(),
            session_id: pathwise_gist::wire::SessionId(*b"qos-nslp-session"),
            nli: Nli {
                ip_ttl: 64,
                rs_validity_ms: 30_000,
                peer_identity: b"qni"[..].into(),
                interface_address: ip("10.0.0.1"),
            },
            query_cookie: Cookie(vec![0x5a; 8].into()),
            nslp_data: Some(payload),
            ..GistQuery::default()
        }),
    }
}

/// The NSLP-Data of a GIST datagram, as GIST's codec delivers it to the NSLP.
fn nslp_data(datagram: &[u8]) -> Vec<u8> {
    match GistMessage::parse_datagram(datagram)
        .expect("a GIST message")
        .body
    {
        GistBody::Data(d) => d.nslp_data,
        GistBody::Query(q) => q.nslp_data.expect("NSLP-Data"),
        other => panic!("no NSLP-Data in {other:?}"),
    }
}

// ------------------------------------------------------------------------------------------
// Messages built with the codec
// ------------------------------------------------------------------------------------------

fn param(flags: ParamFlags, value: ParamValue) -> Parameter {
    Parameter::new(flags, value)
}

const NONE: ParamFlags = ParamFlags {
    mandatory: false,
    error: false,
    not_supported: false,
};

/// A QSPEC with all four QSPEC objects and, between them, every parameter of RFC 5975 §5.2 and
/// one it does not define; M, E and N flags in several combinations.
fn qspec_every_parameter() -> Qspec {
    let tmod = vectors::tmod();
    let tmod2 = Tmod {
        rate: 250_000.25,
        bucket_size: 12_000.0,
        peak_rate: 1.5e6,
        min_policed_unit: 40,
        max_packet_size: 9000,
    };
    let desired = vec![
        param(ParamFlags::MANDATORY, ParamValue::Tmod1(tmod)),
        param(NONE, ParamValue::Tmod2(tmod2)),
        param(NONE, ParamValue::PathLatency(20_000)),
        param(
            NONE,
            ParamValue::PathJitter(PathJitter {
                variance: 100,
                percentile_99_9: 2_500,
                min_latency: 1_000,
                reserved: 7,
            }),
        ),
        param(NONE, ParamValue::PathPlr(0.001)),
        param(NONE, ParamValue::PathPer(1e-6)),
        param(NONE, ParamValue::SlackTerm(500)),
        param(
            ParamFlags::MANDATORY,
            ParamValue::PreemptionPriority {
                preemption: 3,
                defending: 5,
            },
        ),
        param(
            NONE,
            ParamValue::AdmissionPriority {
                y2171: 2,
                admission: 2,
            },
        ),
        param(
            NONE,
            ParamValue::RphPriority {
                namespace: 4,
                priority: 7,
            },
        ),
        param(
            NONE,
            ParamValue::ExcessTreatment {
                treatment: ExcessTreatment::Remark,
                remark: 10,
            },
        ),
        param(NONE, ParamValue::PhbClass(46 << 10)),
        param(NONE, ParamValue::DsteClassType(5)),
        param(NONE, ParamValue::Y1541QosClass(1)),
        param(
            ParamFlags {
                mandatory: false,
                error: false,
                not_supported: true,
            },
            ParamValue::Unknown {
                id: 300,
                body: vec![0xde, 0xad, 0xbe, 0xef],
            },
        ),
    ];
    let available = vec![
        param(NONE, ParamValue::Tmod1(tmod)),
        param(
            ParamFlags {
                mandatory: false,
                error: true,
                not_supported: true,
            },
            ParamValue::PathLatency(u32::MAX),
        ),
        param(NONE, ParamValue::PhbClass((10 << 10) | 0b10)),
        param(
            NONE,
            ParamValue::ExcessTreatment {
                treatment: ExcessTreatment::Shape,
                remark: 0,
            },
        ),
    ];
    let reserved = vec![
        param(NONE, ParamValue::Tmod1(tmod)),
        param(NONE, ParamValue::PhbClass((0x123 << 4) | 0b0001)),
    ];
    let minimum = vec![
        param(
            ParamFlags {
                mandatory: true,
                error: true,
                not_supported: false,
            },
            ParamValue::Tmod1(Tmod {
                rate: 62_500.0,
                ..tmod
            }),
        ),
        param(NONE, ParamValue::PhbClass((0x456 << 4) | 0b0011)),
        param(
            NONE,
            ParamValue::Unknown {
                id: 0,
                body: vec![],
            },
        ),
    ];
    let mut q = Qspec::new(
        QspecProcedure {
            message_sequence: 0,
            object_combination: 2,
        },
        vec![
            QspecObject::new(QspecObjectType::QosDesired, desired),
            QspecObject::new(QspecObjectType::QosAvailable, available),
            QspecObject::new(QspecObjectType::QosReserved, reserved),
            QspecObject::new(QspecObjectType::MinimumQos, minimum),
        ],
    );
    q.objects[1].error = true;
    q
}

/// An RMD-QOSM Local QSPEC carrying the Initiator QSPEC (RFC 5975 §4.1, Figure 3).
fn qspec_local() -> Qspec {
    let mut q = Qspec::new(
        QspecProcedure {
            message_sequence: 1,
            object_combination: 1,
        },
        vec![QspecObject::new(
            QspecObjectType::QosDesired,
            vec![
                param(ParamFlags::MANDATORY, ParamValue::Tmod1(vectors::tmod())),
                param(NONE, ParamValue::Y1541QosClass(6)),
            ],
        )],
    );
    q.local = true;
    q.qspec_type = qspec_type::RMD_QOSM;
    q.encapsulated = Some(Box::new(qspec_every_parameter()));
    q
}

/// The wire crate's samples and messages that between them carry every object of RFC 5974
/// §5.1.3 and every QSPEC object and parameter of RFC 5975.
fn codec_messages() -> Vec<(String, Message)> {
    let mut msgs: Vec<(String, Message)> = vectors::all()
        .into_iter()
        .map(|(n, m)| (n.to_string(), m))
        .collect();
    let reserve_every = Message {
        flags: GenericFlags {
            proxy: true,
            break_: true,
            ..GenericFlags::default()
        },
        body: Body::Reserve(Reserve {
            tear: true,
            replace: true,
            rii: Some(Rii(u32::MAX)),
            refresh_period: Some(RefreshPeriod(45_000)),
            bound_sessions: vec![
                BoundSessionId {
                    code: BindingCode::TUNNEL,
                    session_id: SessionId([0x01; 16]),
                },
                BoundSessionId {
                    code: BindingCode::PREEMPTION,
                    session_id: SessionId([0xfe; 16]),
                },
                BoundSessionId {
                    code: BindingCode(0x42),
                    session_id: SessionId([0x33; 16]),
                },
            ],
            message_binding: Some(MessageBinding::BoundMsgId {
                binding: BindingType::Unidirectional,
                id: [0xb0; 16],
            }),
            info_spec: Some(InfoSpec {
                source: ErrorSource::Other {
                    esi_type: 14,
                    bytes: vec![1, 2, 3, 4, 5, 6, 7, 8],
                },
                ..InfoSpec::new(ErrorClass::QosModelError, 0x81)
            }),
            packet_classifier: Some(PacketClassifier(0xff)),
            qspec: Some(qspec_every_parameter()),
            unknown: vec![UnknownObject {
                object_type: 0xfff,
                treatment: Extensibility::Ignore,
                body: vec![9; 12],
            }],
            ..Reserve::new(Rsn {
                rsn: 0x8000_0001,
                epoch: u32::MAX,
            })
        }),
    };
    let reserve_local = Message::new(Body::Reserve(Reserve {
        packet_classifier: Some(PacketClassifier(
            PacketClassifier::DSCP | PacketClassifier::FLOW_LABEL | PacketClassifier::SPI,
        )),
        qspec: Some(qspec_local()),
        ..Reserve::new(Rsn { rsn: 9, epoch: 77 })
    }));
    let mut reserved = qspec_every_parameter();
    reserved.objects.retain(|o| {
        matches!(
            o.object_type,
            QspecObjectType::QosReserved | QspecObjectType::QosAvailable
        )
    });
    let response_summary = Message {
        flags: GenericFlags {
            proxy: true,
            scoping: true,
            ..GenericFlags::default()
        },
        body: Body::Response(Response {
            answers: Some(Answers::Rsn(Rsn {
                rsn: 3,
                epoch: 0x0102_0304,
            })),
            session_id_list: Some(SessionIdList(vec![SessionId([0x22; 16])])),
            rsn_list: Some(RsnList {
                epoch: 0x0102_0304,
                rsns: vec![6],
            }),
            qspec: Some(reserved),
            unknown: vec![UnknownObject {
                object_type: 0x7ff,
                treatment: Extensibility::Refresh,
                body: vec![0xaa; 4],
            }],
            ..Response::new(
                InfoSpec {
                    source: ErrorSource::Fqdn("qnr.example.org".into()),
                    ..InfoSpec::new(
                        ErrorClass::ProtocolError,
                        code::protocol::WRONG_OBJECT_LENGTH,
                    )
                }
                .object_value_info(&[0x00, 0x02, 0x00, 0x01, 0xde, 0xad, 0xbe, 0xef], 0),
            )
        }),
    };
    let query_bound = Message {
        flags: GenericFlags {
            ack_req: true,
            ..GenericFlags::default()
        },
        body: Body::Query(Query {
            bound_sessions: vec![BoundSessionId {
                code: BindingCode::AGGREGATE,
                session_id: SessionId([0x44; 16]),
            }],
            packet_classifier: Some(PacketClassifier(PacketClassifier::SOURCE_PORT)),
            info_spec: Some(InfoSpec::new(
                ErrorClass::TransientFailure,
                code::transient::RESERVATION_PREEMPTED,
            )),
            ..Query::new(qspec_local())
        }),
    };
    let notify_plain = Message::new(Body::Notify(Notify {
        info_spec: InfoSpec::new(
            ErrorClass::PermanentFailure,
            code::permanent::AUTHORIZATION_FAILURE,
        ),
        qspec: None,
        unknown: vec![],
    }));
    msgs.extend([
        ("reserve_every_object".to_string(), reserve_every),
        ("reserve_local_qspec".to_string(), reserve_local),
        ("response_summary".to_string(), response_summary),
        ("query_bound".to_string(), query_bound),
        ("notify_plain".to_string(), notify_plain),
    ]);
    msgs
}

// ------------------------------------------------------------------------------------------
// What the codec says each message holds
// ------------------------------------------------------------------------------------------

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn bit(b: bool) -> String {
    u8::from(b).to_string()
}

/// A float as Wireshark shows an FT_FLOAT field: C's `%.6g` (FLT_DIG significant digits).
fn ws_float(v: f32) -> String {
    let v = f64::from(v);
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if v == 0.0 {
        return "0".to_string();
    }
    let sci = format!("{v:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap();
    let exp: i32 = exp.parse().unwrap();
    let trim = |s: &str| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        let decimals = (5 - exp).max(0) as usize;
        trim(&format!("{v:.decimals$}"))
    }
}

/// The values the dissectors should extract from `payload` for `nslpid`, by field name, in
/// the order they appear on the wire.
fn expected_fields(nslpid: u16, payload: &[u8]) -> BTreeMap<&'static str, Vec<String>> {
    let mut out: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let mut push = |k: &'static str, v: String| out.entry(k).or_default().push(v);
    push("gist.nslpid", nslpid.to_string());
    let m = Message::parse(payload).expect("codec accepts it");
    push("qos_nslp.type", m.msg_type().number().to_string());
    let flags = payload[1];
    match &m.body {
        Body::Reserve(_) => {
            push("qos_nslp.flags.tear", bit(flags & 0x02 != 0));
            push("qos_nslp.flags.replace", bit(flags & 0x01 != 0));
        }
        Body::Query(_) => push("qos_nslp.flags.reserve_init", bit(flags & 0x01 != 0)),
        _ => {}
    }
    let g = GenericFlags::from_bits(u16::from_be_bytes([payload[2], payload[3]]));
    push("qos_nslp.flags.scoping", bit(g.scoping));
    push("qos_nslp.flags.proxy", bit(g.proxy));
    push("qos_nslp.flags.ack_req", bit(g.ack_req));
    push("qos_nslp.flags.break", bit(g.break_));
    // Object headers, walked with the codec's own TLV header.
    for item in TlvIter::<ObjectHeader>::new(&payload[4..]) {
        let (h, body) = item.expect("well-formed objects");
        push("qos_nslp.obj.type", format!("0x{:04x}", h.object_type));
        let (a, b) = h.extensibility.ab();
        push(
            "qos_nslp.obj.ab",
            (u8::from(a) * 2 + u8::from(b)).to_string(),
        );
        push("qos_nslp.obj.length", h.length_words.to_string());
        if object_type::name(h.object_type).is_none() && !body.is_empty() {
            push("qos_nslp.obj.data", hex(body));
        }
    }
    let rsn = |push: &mut dyn FnMut(&'static str, String), r: &Rsn| {
        push("qos_nslp.rsn", r.rsn.to_string());
        push("qos_nslp.epoch", r.epoch.to_string());
    };
    let bsids = |push: &mut dyn FnMut(&'static str, String), list: &[BoundSessionId]| {
        for b in list {
            push("qos_nslp.bsid.code", b.code.0.to_string());
            push("qos_nslp.bsid.sid", hex(&b.session_id.0));
        }
    };
    let lists = |push: &mut dyn FnMut(&'static str, String),
                 s: Option<&SessionIdList>,
                 r: Option<&RsnList>| {
        for sid in s.iter().flat_map(|l| &l.0) {
            push("qos_nslp.sid_list.sid", hex(&sid.0));
        }
        if let Some(r) = r {
            push("qos_nslp.rsn_list.epoch", r.epoch.to_string());
            for v in &r.rsns {
                push("qos_nslp.rsn_list.rsn", v.to_string());
            }
        }
    };
    match &m.body {
        Body::Reserve(r) => {
            rsn(&mut push, &r.rsn);
            if let Some(v) = r.rii {
                push("qos_nslp.rii", v.0.to_string());
            }
            if let Some(v) = r.refresh_period {
                push("qos_nslp.refresh_period", v.0.to_string());
            }
            bsids(&mut push, &r.bound_sessions);
            lists(&mut push, r.session_id_list.as_ref(), r.rsn_list.as_ref());
            if let Some(
                MessageBinding::MsgId { binding, id } | MessageBinding::BoundMsgId { binding, id },
            ) = &r.message_binding
            {
                push(
                    "qos_nslp.binding.d",
                    bit(*binding == BindingType::Bidirectional),
                );
                let field = match r.message_binding {
                    Some(MessageBinding::MsgId { .. }) => "qos_nslp.msg_id",
                    _ => "qos_nslp.bound_msg_id",
                };
                push(field, hex(id));
            }
            if let Some(i) = &r.info_spec {
                info_fields(i, &mut push);
            }
            if let Some(pc) = r.packet_classifier {
                push("qos_nslp.pc.flags", format!("0x{:02x}", pc.0));
            }
            if let Some(q) = &r.qspec {
                qspec_fields(q, &mut push);
            }
        }
        Body::Query(q) => {
            if let Some(v) = q.rii {
                push("qos_nslp.rii", v.0.to_string());
            }
            bsids(&mut push, &q.bound_sessions);
            if let Some(pc) = q.packet_classifier {
                push("qos_nslp.pc.flags", format!("0x{:02x}", pc.0));
            }
            if let Some(i) = &q.info_spec {
                info_fields(i, &mut push);
            }
            qspec_fields(&q.qspec, &mut push);
            if let Some(s) = &q.second_qspec {
                qspec_fields(s, &mut push);
            }
        }
        Body::Response(r) => {
            match &r.answers {
                Some(Answers::Rii(v)) => push("qos_nslp.rii", v.0.to_string()),
                Some(Answers::Rsn(v)) => rsn(&mut push, v),
                None => {}
            }
            info_fields(&r.info_spec, &mut push);
            lists(&mut push, r.session_id_list.as_ref(), r.rsn_list.as_ref());
            if let Some(q) = &r.qspec {
                qspec_fields(q, &mut push);
            }
        }
        Body::Notify(n) => {
            info_fields(&n.info_spec, &mut push);
            if let Some(q) = &n.qspec {
                qspec_fields(q, &mut push);
            }
        }
    }
    out
}

fn info_fields(i: &InfoSpec, push: &mut dyn FnMut(&'static str, String)) {
    push("qos_nslp.info.code", format!("0x{:02x}", i.code));
    push("qos_nslp.info.class", i.class.number().to_string());
    push("qos_nslp.info.esi_type", i.source.esi_type().to_string());
    match &i.source {
        ErrorSource::None => {}
        ErrorSource::Ipv4(a) => push("qos_nslp.info.esi_ipv4", a.to_string()),
        ErrorSource::Ipv6(a) => push("qos_nslp.info.esi_ipv6", a.to_string()),
        ErrorSource::Fqdn(s) => push("qos_nslp.info.esi_fqdn", s.clone()),
        ErrorSource::Other { bytes, .. } => push("qos_nslp.info.esi_data", hex(bytes)),
    }
    if !i.error_specific.is_empty() {
        push("qos_nslp.info.specific", hex(&i.error_specific));
    }
}

fn qspec_fields(q: &Qspec, push: &mut dyn FnMut(&'static str, String)) {
    push("qos_nslp.qspec.version", q.version.to_string());
    push("qos_nslp.qspec.local", bit(q.local));
    push("qos_nslp.qspec.type", q.qspec_type.to_string());
    push(
        "qos_nslp.qspec.msg_seq",
        q.procedure.message_sequence.to_string(),
    );
    push(
        "qos_nslp.qspec.obj_comb",
        q.procedure.object_combination.to_string(),
    );
    let words: usize = q.objects.iter().map(QspecObject::buffer_len).sum::<usize>() / 4;
    push("qos_nslp.qspec.length", words.to_string());
    for o in &q.objects {
        push("qos_nslp.qspec.obj.e", bit(o.error));
        push(
            "qos_nslp.qspec.obj.type",
            o.object_type.number().to_string(),
        );
        for p in &o.params {
            push("qos_nslp.qspec.param.m", bit(p.flags.mandatory));
            push("qos_nslp.qspec.param.e", bit(p.flags.error));
            push("qos_nslp.qspec.param.n", bit(p.flags.not_supported));
            push("qos_nslp.qspec.param.id", p.value.id().to_string());
            param_fields(&p.value, push);
        }
    }
    if let Some(inner) = &q.encapsulated {
        qspec_fields(inner, push);
    }
}

fn param_fields(v: &ParamValue, push: &mut dyn FnMut(&'static str, String)) {
    let mut u = |k, n: u32| push(k, n.to_string());
    match v {
        ParamValue::Tmod1(t) | ParamValue::Tmod2(t) => {
            push("qos_nslp.qspec.tmod.rate", ws_float(t.rate));
            push("qos_nslp.qspec.tmod.bucket", ws_float(t.bucket_size));
            push("qos_nslp.qspec.tmod.peak", ws_float(t.peak_rate));
            push(
                "qos_nslp.qspec.tmod.min_policed_unit",
                t.min_policed_unit.to_string(),
            );
            push(
                "qos_nslp.qspec.tmod.max_packet_size",
                t.max_packet_size.to_string(),
            );
        }
        ParamValue::PathLatency(n) => u("qos_nslp.qspec.path_latency", *n),
        ParamValue::PathJitter(j) => {
            u("qos_nslp.qspec.jitter.variance", j.variance);
            u("qos_nslp.qspec.jitter.p999", j.percentile_99_9);
            u("qos_nslp.qspec.jitter.min_latency", j.min_latency);
            u("qos_nslp.qspec.jitter.reserved", j.reserved);
        }
        ParamValue::PathPlr(x) => push("qos_nslp.qspec.plr", ws_float(*x)),
        ParamValue::PathPer(x) => push("qos_nslp.qspec.per", ws_float(*x)),
        ParamValue::SlackTerm(n) => u("qos_nslp.qspec.slack_term", *n),
        ParamValue::PreemptionPriority {
            preemption,
            defending,
        } => {
            u("qos_nslp.qspec.preemption_priority", u32::from(*preemption));
            u("qos_nslp.qspec.defending_priority", u32::from(*defending));
        }
        ParamValue::AdmissionPriority { y2171, admission } => {
            u("qos_nslp.qspec.admission.y2171", u32::from(*y2171));
            u("qos_nslp.qspec.admission.priority", u32::from(*admission));
        }
        ParamValue::RphPriority {
            namespace,
            priority,
        } => {
            u("qos_nslp.qspec.rph.namespace", u32::from(*namespace));
            u("qos_nslp.qspec.rph.priority", u32::from(*priority));
        }
        ParamValue::ExcessTreatment { treatment, remark } => {
            let n = match treatment {
                ExcessTreatment::Drop => 0,
                ExcessTreatment::Shape => 1,
                ExcessTreatment::Remark => 2,
                ExcessTreatment::NoMetering => 3,
                ExcessTreatment::Other(n) => u32::from(*n),
            };
            u("qos_nslp.qspec.excess.treatment", n);
            u("qos_nslp.qspec.excess.remark", u32::from(*remark));
        }
        ParamValue::PhbClass(field) => {
            push("qos_nslp.qspec.phb", format!("0x{field:04x}"));
            match v.phb() {
                Some(pathwise_qos_nslp::wire::qspec::Phb::Dscp(d))
                | Some(pathwise_qos_nslp::wire::qspec::Phb::DscpSet(d)) => {
                    push("qos_nslp.qspec.phb.dscp", d.to_string())
                }
                Some(pathwise_qos_nslp::wire::qspec::Phb::Code(c))
                | Some(pathwise_qos_nslp::wire::qspec::Phb::CodeSet(c)) => {
                    push("qos_nslp.qspec.phb.id_code", format!("0x{c:04x}"))
                }
                None => {}
            }
        }
        ParamValue::DsteClassType(n) => u("qos_nslp.qspec.dste_class_type", u32::from(*n)),
        ParamValue::Y1541QosClass(n) => u("qos_nslp.qspec.y1541_class", u32::from(*n)),
        ParamValue::Unknown { body, .. } => {
            if !body.is_empty() {
                push("qos_nslp.qspec.param.data", hex(body));
            }
        }
    }
}

// ------------------------------------------------------------------------------------------
// Tests
// ------------------------------------------------------------------------------------------

/// Each codec-built message in a GIST Data for NSLPID 1, the same in a GIST Query for the last
/// aggregation level (NSLPID 32), and the RFC-layout RESERVE of the wire crate's vectors.
fn codec_capture(home: &Scratch) -> (PathBuf, Vec<(String, GistMessage)>) {
    let mut frames: Vec<(String, GistMessage)> = Vec::new();
    for (name, m) in codec_messages() {
        let b = m.to_bytes();
        assert_eq!(Message::parse(&b).as_ref(), Ok(&m), "{name} round-trips");
        frames.push((format!("{name} in Data"), gist_data(1, b.clone())));
        frames.push((format!("{name} in Query"), gist_query(32, b)));
    }
    frames.push((
        "RESERVE_INITIAL".to_string(),
        gist_data(17, vectors::RESERVE_INITIAL.to_vec()),
    ));
    let mut w = PcapWriter::new();
    for (_, g) in &frames {
        w.udp(&g.to_datagram());
    }
    let pcap = home.path("codec.pcap");
    w.save(&pcap);
    (pcap, frames)
}

/// Checks every frame of the codec capture field by field against the codec.
fn check_codec_capture(home: &Scratch, load: Load, pcap: &Path, frames: &[(String, GistMessage)]) {
    let decoded = tshark_fields(home, load, pcap, FIELDS);
    assert_eq!(decoded.len(), frames.len());
    for (i, (name, g)) in frames.iter().enumerate() {
        let cols = &decoded[&(i + 1)];
        let want = expected_fields(g.nslpid, &nslp_data(&g.to_datagram()));
        for (field, got) in FIELDS.iter().zip(cols) {
            let want = want.get(field).map(|v| v.join(",")).unwrap_or_default();
            assert_eq!(got, &want, "{load:?}: frame {} ({name}): {field}", i + 1);
        }
    }
}

#[test]
fn codec_built_messages_decode_as_the_codec_reads_them() {
    if !have_tshark("codec_built_messages_decode_as_the_codec_reads_them") {
        return;
    }
    let home = Scratch::new("codec");
    let (pcap, frames) = codec_capture(&home);
    check_codec_capture(&home, Load::GistFirst, &pcap, &frames);

    // One QoS NSLP tree per frame, nothing malformed, and no expert warning or error at all.
    let verbose = tshark(&home, &pcap, &["-V"]);
    let trees = verbose
        .lines()
        .filter(|l| l.starts_with("QoS NSLP, "))
        .count();
    assert_eq!(trees, frames.len(), "one QoS NSLP tree per message");
    assert!(
        !verbose.contains("Malformed"),
        "{}",
        excerpt(&verbose, "Malformed")
    );
    for (frame, worst) in worst_severity(&home, &pcap) {
        assert!(
            worst < PI_WARN,
            "frame {frame} ({}): expert severity {worst:#x}",
            frames[frame - 1].0
        );
    }
    // The parts a person reads: names of the INFO-SPEC's code and of the QSPEC objects, the
    // parameters' summaries, the encapsulated Initiator QSPEC and the Info column.
    for needle in [
        "Error Code: 0x01 (Reservation successful)",
        "Error Class: Protocol Error (3)",
        "Object Type Info: RSN",
        "Object Value Info",
        "Error Source (FQDN): qne3.example.net",
        "QSPEC Object: QoS Desired",
        "QSPEC Object: Minimum QoS",
        "Parameter: <TMOD-1> [M] r=125000 b=3000 p=inf m=64 MPS=1500",
        "Parameter: <Path Latency> [EN] indeterminate",
        "Parameter: <PHB Class> single PHB, DSCP 46",
        "set of non-standard PHBs, ID code 0x456",
        "Parameter: <Excess Treatment> re-mark to DSCP 10",
        "(encapsulated Initiator QSPEC)",
        "Object type 0xfff unknown: dropped",
        "Parameter ID 300 is not known: kept",
    ] {
        assert!(verbose.contains(needle), "-V output lacks {needle:?}");
    }
    let info = tshark(&home, &pcap, &["-T", "fields", "-e", "_ws.col.Info"]);
    let first = info.lines().next().unwrap_or_default();
    assert!(
        first.contains("QoS NSLP RESERVE [R] RSN=1 RII=42"),
        "Info column: {first}"
    );
}

#[test]
fn messages_back_to_back_on_a_c_mode_stream() {
    if !have_tshark("messages_back_to_back_on_a_c_mode_stream") {
        return;
    }
    let home = Scratch::new("cmode");
    // Every codec-built message in a GIST Data on one TCP connection to port 270 (RFC 5971
    // §5.4.2), cut into segments that end inside headers and objects and that complete two
    // messages at once.
    let mut stream = Vec::new();
    let mut ends = Vec::new();
    let mut payloads = Vec::new();
    for (i, (_, m)) in codec_messages().into_iter().enumerate() {
        let nslpid = 1 + i as u16;
        let b = m.to_bytes();
        gist_data(nslpid, b.clone()).emit(&mut stream);
        ends.push(stream.len() - 1);
        payloads.push((nslpid, b));
    }
    let mut w = PcapWriter::new();
    let owner = w.tcp_stream(
        ([10, 0, 0, 1], 40_000, [10, 0, 0, 2], GIST_PORT),
        &stream,
        &[3, 61, 200, 17, 1000],
    );
    let pcap = home.path("cmode.pcap");
    w.save(&pcap);
    // A message shows in the frame that holds its last byte, where TCP reassembles it.
    let mut want: BTreeMap<usize, BTreeMap<&'static str, Vec<String>>> = BTreeMap::new();
    for (end, (nslpid, b)) in ends.iter().zip(&payloads) {
        let frame = want.entry(owner[*end] as usize).or_default();
        for (k, v) in expected_fields(*nslpid, b) {
            frame.entry(k).or_default().extend(v);
        }
    }
    assert!(
        want.values().any(|f| f["qos_nslp.type"].len() > 1),
        "some segment completes two messages"
    );
    let decoded = tshark_fields(&home, Load::GistFirst, &pcap, FIELDS);
    for (frame, cols) in &decoded {
        let want = want.get(frame);
        for (field, got) in FIELDS.iter().zip(cols) {
            let want = want
                .and_then(|w| w.get(field))
                .map(|v| v.join(","))
                .unwrap_or_default();
            assert_eq!(got, &want, "C-mode frame {frame}: {field}");
        }
    }
    for (frame, worst) in worst_severity(&home, &pcap) {
        assert!(worst < PI_WARN, "frame {frame}: expert severity {worst:#x}");
    }
}

#[test]
fn dissector_flags_exactly_what_the_codec_rejects() {
    if !have_tshark("dissector_flags_exactly_what_the_codec_rejects") {
        return;
    }
    let home = Scratch::new("mutations");
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut corpus: Vec<Vec<u8>> = Vec::new();
    for (_, m) in codec_messages() {
        let b = m.to_bytes();
        // Every truncation, one extension, and single- and double-byte mutations.
        corpus.extend((1..b.len()).map(|n| b[..n].to_vec()));
        corpus.push([&b[..], &[0, 0, 0, 0]].concat());
        corpus.push([&b[..], &[0x40, 0x0c, 0, 0]].concat());
        corpus.extend(structural_mutations(&b));
        for _ in 0..120 {
            let mut x = b.clone();
            for _ in 0..1 + rng.below(2) {
                let at = rng.below(x.len());
                x[at] = rng.step() as u8;
            }
            corpus.push(x);
        }
    }
    // Codec-built but invalid: an empty QSPEC object next to a full one, a QSPEC without
    // objects (RFC 5975 §5.1: "Empty QSPECs and empty QSPEC Objects MUST NOT be used").
    let mut q = vectors::qspec_desired();
    q.objects
        .push(QspecObject::new(QspecObjectType::MinimumQos, vec![]));
    corpus.push(Message::new(Body::Query(Query::new(q))).to_bytes());
    let empty = Qspec::new(QspecProcedure::default(), vec![]);
    corpus.push(Message::new(Body::Query(Query::new(empty))).to_bytes());
    // Hand-made: header only, unknown types, random bytes.
    corpus.push(vec![1, 0, 0, 0]);
    corpus.push(vec![0, 0, 0, 0]);
    corpus.push(vec![0xf0, 0xff, 0xff, 0xff]);
    for n in [1, 2, 3, 5, 8, 40, 200] {
        corpus.push((0..n).map(|_| rng.step() as u8).collect());
    }
    let mut w = PcapWriter::new();
    let mut payloads = Vec::new();
    for (i, d) in corpus.iter().enumerate() {
        let g = if i % 2 == 0 {
            gist_data(1 + (i % 32) as u16, d.clone())
        } else {
            gist_query(1 + (i % 32) as u16, d.clone())
        };
        let datagram = g.to_datagram();
        payloads.push(nslp_data(&datagram));
        w.udp(&datagram);
    }
    let pcap = home.path("mutations.pcap");
    w.save(&pcap);

    let severity = worst_severity(&home, &pcap);
    let verbose = tshark(&home, &pcap, &["-V"]);
    let trees = verbose
        .lines()
        .filter(|l| l.starts_with("QoS NSLP, ") || l == &"QoS NSLP")
        .count();
    assert_eq!(trees, corpus.len(), "every payload gets a QoS NSLP tree");
    let mut disagree = Vec::new();
    for (i, payload) in payloads.iter().enumerate() {
        let frame = i + 1;
        let codec = Message::parse(payload);
        let flagged = severity.get(&frame).copied().unwrap_or(0) >= PI_WARN;
        if codec.is_err() != flagged {
            disagree.push(format!(
                "frame {frame}: codec {:?}, dissector {}: {}",
                codec.err(),
                if flagged { "flags it" } else { "does not" },
                hex(payload)
            ));
        }
    }
    assert!(
        disagree.is_empty(),
        "{} of {} frames disagree:\n{}",
        disagree.len(),
        corpus.len(),
        disagree[..disagree.len().min(20)].join("\n")
    );
    let rejected = payloads
        .iter()
        .filter(|p| Message::parse(p).is_err())
        .count();
    assert!(
        rejected > payloads.len() / 2 && rejected < payloads.len(),
        "{rejected} of {} rejected",
        payloads.len()
    );
}

/// Where the headers of a well-formed message are: NSLP objects, QSPEC common headers, QSPEC
/// objects and parameters (with their IDs).
#[derive(Debug, Default)]
struct Layout {
    objects: Vec<usize>,
    qspecs: Vec<usize>,
    qspec_objects: Vec<usize>,
    params: Vec<(usize, u16)>,
}

fn word_len(b: &[u8], at: usize) -> usize {
    usize::from(u16::from_be_bytes([b[at + 2], b[at + 3]]) & 0x0fff) * 4
}

/// Walks a QSPEC at `[at, end)` (RFC 5975 §5.1: lengths in words, headers excluded; a Local
/// QSPEC's Initiator QSPEC after its objects).
fn walk_qspec(b: &[u8], at: usize, end: usize, out: &mut Layout) {
    out.qspecs.push(at);
    let objects_end = at + 4 + word_len(b, at);
    let mut o = at + 4;
    while o < objects_end {
        out.qspec_objects.push(o);
        let params_end = o + 4 + word_len(b, o);
        let mut p = o + 4;
        while p < params_end {
            let id = u16::from_be_bytes([b[p], b[p + 1]]) & 0x0fff;
            out.params.push((p, id));
            p += 4 + word_len(b, p);
        }
        o = params_end;
    }
    if objects_end < end {
        walk_qspec(b, objects_end, end, out);
    }
}

fn layout(b: &[u8]) -> Layout {
    let mut out = Layout::default();
    let mut at = 4;
    while at < b.len() {
        out.objects.push(at);
        let end = at + 4 + word_len(b, at);
        if u16::from_be_bytes([b[at], b[at + 1]]) & 0x0fff == object_type::QSPEC {
            walk_qspec(b, at + 4, end, &mut out);
        }
        at = end;
    }
    out
}

/// Targeted mutations of a well-formed message, to reach every check the codec makes: every
/// message type and generic flag combination; each object retyped to every known type (so
/// illegal, duplicate and alternative objects occur), given each AB with an unknown type, and
/// one word longer or shorter; each QSPEC with another version, the other I bit and another
/// length; each QSPEC object retyped (duplicates) and resized; each parameter renumbered to
/// every ID (duplicates, wrong lengths for the ID) and resized; each float of a TMOD, PLR or
/// PER set to values RFC 5975 prohibits or allows at the edge.
fn structural_mutations(b: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut with = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut x = b.to_vec();
        f(&mut x);
        out.push(x);
    };
    for t in 0..=5 {
        with(&|x| x[0] = t);
    }
    for g in 0..16 {
        with(&|x| x[3] = (x[3] & 0xf0) | g);
    }
    with(&|x| x[1] = 0xff);
    let resize = |x: &mut Vec<u8>, at: usize, delta: i32| {
        let words = u16::from_be_bytes([x[at + 2], x[at + 3]]) & 0x0fff;
        let words = (i32::from(words) + delta).clamp(0, 0x0fff) as u16;
        x[at + 2] = (x[at + 2] & 0xf0) | (words >> 8) as u8;
        x[at + 3] = words as u8;
    };
    let retype = |x: &mut Vec<u8>, at: usize, t: u16| {
        x[at] = (x[at] & 0xf0) | (t >> 8) as u8;
        x[at + 1] = t as u8;
    };
    let l = layout(b);
    for &at in &l.objects {
        for t in 1..=12 {
            with(&|x| retype(x, at, t));
        }
        for ab in 0..4u8 {
            with(&|x| {
                retype(x, at, 0x100);
                x[at] = (x[at] & 0x3f) | (ab << 6);
            });
        }
        for d in [-1, 1] {
            with(&|x| resize(x, at, d));
        }
    }
    for &at in &l.qspecs {
        with(&|x| x[at] |= 0x10);
        with(&|x| x[at] ^= 0x08);
        for d in [-1, 1] {
            with(&|x| resize(x, at, d));
        }
    }
    for &at in &l.qspec_objects {
        for t in 0..=4 {
            with(&|x| retype(x, at, t));
        }
        for d in [-1, 1] {
            with(&|x| resize(x, at, d));
        }
    }
    for &(at, id) in &l.params {
        for t in 0..=15 {
            with(&|x| retype(x, at, t));
        }
        for d in [-1, 1] {
            with(&|x| resize(x, at, d));
        }
        let floats: &[usize] = match id {
            1 | 2 => &[0, 4, 8],
            5 | 6 => &[0],
            _ => &[],
        };
        for &f in floats {
            for bits in [
                0x7fc0_0000u32, // NaN
                0x7f80_0000,    // infinity
                0xbf80_0000,    // -1
                0x3f00_0000,    // 0.5
                0x3f80_0000,    // 1
                0x0000_0001,    // the smallest subnormal
                0x8000_0000,    // -0
            ] {
                with(&|x| x[at + 4 + f..at + 8 + f].copy_from_slice(&bits.to_be_bytes()));
            }
        }
    }
    out
}

#[test]
fn registers_whatever_the_load_order() {
    if !have_tshark("registers_whatever_the_load_order") {
        return;
    }
    let home = Scratch::new("order");
    let (pcap, frames) = codec_capture(&home);
    // qos_nslp.lua first: the NSLPID table does not exist yet when it loads.
    check_codec_capture(&home, Load::QosFirst, &pcap, &frames);
    // Both as personal plug-ins, as README.md says to install them.
    let plugins = home.0.join(".local/lib/wireshark/plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    for name in ["gist.lua", "qos_nslp.lua"] {
        std::fs::copy(script(name), plugins.join(name)).unwrap();
    }
    check_codec_capture(&home, Load::Plugins, &pcap, &frames);
}

/// Every `qos_nslp.*` field and expert item the dissector registers is in
/// `contrib/wireshark/README.md`'s list, and every one the README names exists.
#[test]
fn readme_lists_every_field() {
    if !have_tshark("readme_lists_every_field") {
        return;
    }
    let home = Scratch::new("fields");
    let lua = |name| format!("lua_script:{}", script(name).display());
    let out = Command::new("tshark")
        .env("HOME", &home.0)
        .env_remove("XDG_CONFIG_HOME")
        .args([
            "-G",
            "fields",
            "-X",
            &lua("gist.lua"),
            "-X",
            &lua("qos_nslp.lua"),
        ])
        .output()
        .expect("run tshark -G fields");
    assert!(out.status.success(), "tshark -G fields: {}", out.status);
    let registered: std::collections::BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split('\t').nth(2))
        .filter(|f| f.starts_with("qos_nslp."))
        .map(str::to_string)
        .collect();
    assert!(registered.len() > 100, "{} fields", registered.len());
    let readme = std::fs::read_to_string(script("README.md")).expect("README.md");
    let mut named = std::collections::BTreeSet::new();
    for (at, _) in readme.match_indices("`qos_nslp.") {
        let rest = &readme[at + 1..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .unwrap_or(rest.len());
        if !rest[..end].ends_with(".lua") {
            named.insert(rest[..end].to_string());
        }
    }
    let unlisted: Vec<_> = registered.difference(&named).collect();
    let unknown: Vec<_> = named.difference(&registered).collect();
    assert!(
        unlisted.is_empty(),
        "fields missing from README.md: {unlisted:?}"
    );
    assert!(
        unknown.is_empty(),
        "README.md names fields that do not exist: {unknown:?}"
    );
}

/// A small deterministic generator for the mutation corpus.
#[derive(Debug)]
struct XorShift(u64);

impl XorShift {
    fn step(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.step() % n as u64) as usize
    }
}
