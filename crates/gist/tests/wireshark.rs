//! The Wireshark dissector `contrib/wireshark/gist.lua` reads GIST the way this crate's codec
//! does.
//!
//! Each test runs `tshark -X lua_script:…/gist.lua` on a capture and checks that tshark
//! succeeds with no Lua error, no malformed packet and no dissector bug, then compares what the
//! dissector decoded with what [`pathwise_gist::wire`] parses:
//!
//! - the reference captures in `tests/data/` and a capture written here from codec-built
//!   messages (every message type and object, IPv6, the Ping NSLP, C-mode streams cut across
//!   TCP segments on port 270 and on a port learnt from Stack-Configuration-Data): per frame,
//!   the message types and the main field values match, one GIST tree per message, and no
//!   GIST expert warning or error;
//! - truncated, mutated and hand-made broken datagrams: the dissector flags (an expert warning
//!   or error) exactly the frames the codec rejects, and never fails itself.
//!
//! Captures are written with a small classic-pcap writer (Ethernet, IPv4, UDP/TCP) into a
//! temporary directory. Without `tshark` every test prints why on stderr and passes.

use pathwise_core::time::Instant;
use pathwise_gist::nslp::ping::{self, PingHop, PingKind, PingMessage};
use pathwise_gist::wire::{
    AdditionalInfo, Body, Confirm, Cookie, Data, ErrorMsg, ErrorObject, GIST_PORT, LooseEndMri,
    MaHello, MaProtocolOptions, Message, Mri, Nli, PathCoupledMri, Query, Response, SessionId,
    StackConfigData, StackProposal, UnknownObject, error_code, frame_len, ma_protocol,
};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Wireshark's expert severity PI_WARN (epan/proto.h); PI_ERROR is above it.
const PI_WARN: u64 = 0x0060_0000;

/// The fields compared with the codec, after `frame.number`.
const FIELDS: &[&str] = &[
    "gist.type",
    "gist.nslpid",
    "gist.hops",
    "gist.length",
    "gist.c_flag",
    "gist.s_flag",
    "gist.r_flag",
    "gist.e_flag",
    "gist.sid",
    "gist.mri.mrm",
    "gist.mri.src_ipv4",
    "gist.mri.dst_ipv4",
    "gist.mri.src_ipv6",
    "gist.mri.dst_ipv6",
    "gist.mri.d",
    "gist.mri.le_d",
    "gist.mri.protocol",
    "gist.mri.ds_field",
    "gist.mri.flow_label",
    "gist.mri.spi",
    "gist.mri.src_port",
    "gist.mri.dst_port",
    "gist.mri.data",
    "gist.nli.ip_ttl",
    "gist.nli.rs_validity",
    "gist.nli.peer_identity",
    "gist.nli.interface_ipv4",
    "gist.nli.interface_ipv6",
    "gist.query_cookie",
    "gist.responder_cookie",
    "gist.nat_traversal",
    "gist.sp.proto",
    "gist.scd.hold_time",
    "gist.scd.mpo.proto",
    "gist.scd.mpo.port",
    "gist.nslp_data",
    "gist.hello_id",
    "gist.obj.data",
    "gist.err.class",
    "gist.err.code",
    "gist.err.subcode",
    "gist.err.sid",
    "gist.err.comment",
    "nslp_ping.kind",
    "nslp_ping.seq",
    "nslp_ping.hop_count",
    "nslp_ping.hop.ipv4",
    "nslp_ping.hop.ipv6",
];

// ------------------------------------------------------------------------------------------
// Running tshark
// ------------------------------------------------------------------------------------------

fn dissector() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contrib/wireshark/gist.lua")
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
/// the plugin or personal preferences cannot change the result.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "pathwise-gist-wireshark-{}-{test}",
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

/// Runs tshark with the dissector on `pcap`; checks that it succeeded and that neither the
/// dissector nor Wireshark complained; returns stdout.
fn tshark(home: &Scratch, pcap: &Path, args: &[&str]) -> String {
    let lua = format!("lua_script:{}", dissector().display());
    let out = Command::new("tshark")
        .env("HOME", &home.0)
        .env_remove("XDG_CONFIG_HOME")
        .args(["-n", "-X", &lua, "-r"])
        .arg(pcap)
        .args(args)
        .output()
        .expect("run tshark");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let what = format!("tshark -r {} {}", pcap.display(), args.join(" "));
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

/// The lines around the first occurrence of `needle`.
fn excerpt(text: &str, needle: &str) -> String {
    let at = text.find(needle).unwrap_or(0);
    let start = text[..at].rfind("\nFrame ").unwrap_or(0);
    text[start..(at + 400).min(text.len())].to_string()
}

/// `-T fields` output as frame number → one string per field of `fields`.
fn tshark_fields(home: &Scratch, pcap: &Path, fields: &[&str]) -> BTreeMap<usize, Vec<String>> {
    let mut args = vec!["-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,"];
    args.extend(["-e", "frame.number"]);
    for f in fields {
        args.extend(["-e", f]);
    }
    tshark(home, pcap, &args)
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

/// Frames with an expert warning or error from any protocol.
fn flagged_frames(home: &Scratch, pcap: &Path) -> BTreeMap<usize, bool> {
    tshark_fields(home, pcap, &["_ws.expert.severity"])
        .into_iter()
        .map(|(n, cols)| {
            let worst = cols[0]
                .split(',')
                .filter_map(|s| s.parse::<u64>().ok())
                .max()
                .unwrap_or(0);
            (n, worst >= PI_WARN)
        })
        .collect()
}

// ------------------------------------------------------------------------------------------
// Captures: a classic pcap reader and writer (Ethernet, IPv4)
// ------------------------------------------------------------------------------------------

/// A TCP direction: source address and port, destination address and port.
type Flow = ([u8; 4], u16, [u8; 4], u16);

/// What a frame carries above IPv4.
enum Transport {
    Udp {
        payload: Vec<u8>,
    },
    Tcp {
        flow: Flow,
        seq: u32,
        payload: Vec<u8>,
    },
    Other,
}

/// Every frame of a little-endian microsecond pcap with Ethernet framing, numbered from 1.
fn read_pcap(path: &Path) -> Vec<Transport> {
    let d = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(&d[..4], &[0xd4, 0xc3, 0xb2, 0xa1], "little-endian pcap");
    assert_eq!(
        u32::from_le_bytes(d[20..24].try_into().unwrap()),
        1,
        "Ethernet"
    );
    let mut frames = Vec::new();
    let mut off = 24;
    while off + 16 <= d.len() {
        let incl = u32::from_le_bytes(d[off + 8..off + 12].try_into().unwrap()) as usize;
        let frame = &d[off + 16..off + 16 + incl];
        off += 16 + incl;
        frames.push(transport(frame));
    }
    frames
}

fn transport(frame: &[u8]) -> Transport {
    if frame.len() < 34 || frame[12..14] != [0x08, 0x00] {
        return Transport::Other;
    }
    let ip = &frame[14..];
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    let ip = &ip[..total];
    let l4 = &ip[ihl..];
    match ip[9] {
        17 => Transport::Udp {
            payload: l4[8..].to_vec(),
        },
        6 => Transport::Tcp {
            flow: (
                ip[12..16].try_into().unwrap(),
                u16::from_be_bytes([l4[0], l4[1]]),
                ip[16..20].try_into().unwrap(),
                u16::from_be_bytes([l4[2], l4[3]]),
            ),
            seq: u32::from_be_bytes(l4[4..8].try_into().unwrap()),
            payload: l4[usize::from(l4[12] >> 4) * 4..].to_vec(),
        },
        _ => Transport::Other,
    }
}

/// Writes a classic pcap: Ethernet, IPv4 without options, UDP or TCP.
struct PcapWriter {
    bytes: Vec<u8>,
    frames: u32,
}

const TCP_SYN: u8 = 0x02;
const TCP_PSH_ACK: u8 = 0x18;
const TCP_SYN_ACK: u8 = 0x12;
const TCP_ACK: u8 = 0x10;

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

    fn frame(&mut self, data: &[u8]) {
        self.frames += 1;
        let len = u32::try_from(data.len()).unwrap();
        self.bytes.extend_from_slice(&self.frames.to_le_bytes()); // one frame a second
        self.bytes.extend_from_slice(&0u32.to_le_bytes());
        self.bytes.extend_from_slice(&len.to_le_bytes());
        self.bytes.extend_from_slice(&len.to_le_bytes());
        self.bytes.extend_from_slice(data);
    }

    fn ipv4(&mut self, src: [u8; 4], dst: [u8; 4], protocol: u8, l4: &[u8]) {
        let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
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
        f.extend_from_slice(&ip);
        f.extend_from_slice(l4);
        self.frame(&f);
    }

    /// A UDP datagram (checksum 0: none).
    fn udp(&mut self, src: [u8; 4], dst: [u8; 4], ports: (u16, u16), payload: &[u8]) {
        let mut l4 = Vec::new();
        l4.extend_from_slice(&ports.0.to_be_bytes());
        l4.extend_from_slice(&ports.1.to_be_bytes());
        l4.extend_from_slice(&u16::try_from(8 + payload.len()).unwrap().to_be_bytes());
        l4.extend_from_slice(&[0, 0]);
        l4.extend_from_slice(payload);
        self.ipv4(src, dst, 17, &l4);
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
    /// given sizes (cycled), each acknowledged.
    fn tcp_stream(&mut self, flow: Flow, stream: &[u8], sizes: &[usize]) {
        let back = (flow.2, flow.3, flow.0, flow.1);
        let (isn, server_isn) = (1000u32, 9000u32);
        self.tcp(flow, isn, 0, TCP_SYN, &[]);
        self.tcp(back, server_isn, isn + 1, TCP_SYN_ACK, &[]);
        self.tcp(flow, isn + 1, server_isn + 1, TCP_ACK, &[]);
        let mut at = 0;
        for &size in sizes.iter().cycle() {
            if at >= stream.len() {
                break;
            }
            let end = (at + size).min(stream.len());
            let seq = isn + 1 + at as u32;
            self.tcp(flow, seq, server_isn + 1, TCP_PSH_ACK, &stream[at..end]);
            self.tcp(back, server_isn + 1, isn + 1 + end as u32, TCP_ACK, &[]);
            at = end;
        }
    }

    fn save(&self, path: &Path) {
        std::fs::write(path, &self.bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

// ------------------------------------------------------------------------------------------
// What the codec says each frame holds
// ------------------------------------------------------------------------------------------

/// The GIST messages each frame completes, by the codec: UDP payloads as D-mode datagrams,
/// TCP streams cut by the common header's length (a message belongs to the frame holding its
/// last byte, where Wireshark shows it after reassembly).
fn messages_by_frame(
    frames: &[Transport],
    is_gist_tcp: impl Fn(u16, u16) -> bool,
) -> BTreeMap<usize, Vec<Message>> {
    let mut out: BTreeMap<usize, Vec<Message>> = BTreeMap::new();
    type Segments = Vec<(u32, usize, Vec<u8>)>;
    let mut streams: BTreeMap<Flow, Segments> = BTreeMap::new();
    for (i, t) in frames.iter().enumerate() {
        let number = i + 1;
        match t {
            Transport::Udp { payload } if !payload.is_empty() => {
                let m = Message::parse_datagram(payload)
                    .unwrap_or_else(|e| panic!("frame {number}: codec rejects it: {e:?}"));
                out.entry(number).or_default().push(m);
            }
            Transport::Tcp { flow, seq, payload }
                if !payload.is_empty() && is_gist_tcp(flow.1, flow.3) =>
            {
                streams
                    .entry(*flow)
                    .or_default()
                    .push((*seq, number, payload.clone()));
            }
            _ => {}
        }
    }
    for (_, mut segs) in streams {
        segs.sort_by_key(|s| s.0);
        let mut stream = Vec::new();
        let mut owner = Vec::new(); // frame number of each stream byte
        for (_, number, payload) in segs {
            owner.extend(std::iter::repeat_n(number, payload.len()));
            stream.extend_from_slice(&payload);
        }
        let mut at = 0;
        while at < stream.len() {
            let n = frame_len(&stream[at..]).expect("a common header");
            let m = Message::parse(&stream[at..at + n]).unwrap_or_else(|e| panic!("{e:?}"));
            out.entry(owner[at + n - 1]).or_default().push(m);
            at += n;
        }
    }
    out
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The values the dissector should extract from `m`, by field name.
fn expected_fields(m: &Message, out: &mut BTreeMap<&'static str, Vec<String>>) {
    let mut push = |k: &'static str, v: String| out.entry(k).or_default().push(v);
    let h = m.header();
    push("gist.type", h.msg_type.to_string());
    push("gist.nslpid", h.nslpid.to_string());
    push("gist.hops", h.gist_hops.to_string());
    push("gist.length", h.length_words.to_string());
    push("gist.c_flag", u8::from(h.c_flag).to_string());
    push("gist.s_flag", u8::from(h.s_flag).to_string());
    push("gist.r_flag", u8::from(h.r_flag).to_string());
    push("gist.e_flag", u8::from(h.e_flag).to_string());

    let (nat, unknown, nslp): (Option<&Vec<u8>>, &[UnknownObject], Option<&Vec<u8>>) = match &m.body
    {
        Body::Query(q) => (q.nat.as_ref(), &q.unknown, q.nslp_data.as_ref()),
        Body::Response(r) => (r.nat.as_ref(), &r.unknown, r.nslp_data.as_ref()),
        Body::Confirm(c) => (None, &c.unknown, c.nslp_data.as_ref()),
        Body::Data(d) => (d.nat.as_ref(), &d.unknown, Some(&d.nslp_data)),
        Body::Error(e) => (e.nat.as_ref(), &e.unknown, None),
        Body::MaHello(h) => (None, &h.unknown, None),
    };
    if let Some(n) = nat.filter(|n| !n.is_empty()) {
        push("gist.nat_traversal", hex(n));
    }
    if let Some(mri) = m.mri() {
        mri_fields(mri, &mut push);
    }
    if let Some(sid) = m.session_id() {
        push("gist.sid", hex(&sid.0));
    }
    let nli = match &m.body {
        Body::Query(q) => Some(&q.nli),
        Body::Response(r) => Some(&r.nli),
        Body::Confirm(c) => Some(&c.nli),
        Body::Data(d) => d.nli.as_ref(),
        Body::Error(e) => e.nli.as_ref(),
        Body::MaHello(_) => None,
    };
    if let Some(nli) = nli {
        push("gist.nli.ip_ttl", nli.ip_ttl.to_string());
        push("gist.nli.rs_validity", nli.rs_validity_ms.to_string());
        if !nli.peer_identity.is_empty() {
            push("gist.nli.peer_identity", hex(&nli.peer_identity));
        }
        match nli.interface_address {
            IpAddr::V4(a) => push("gist.nli.interface_ipv4", a.to_string()),
            IpAddr::V6(a) => push("gist.nli.interface_ipv6", a.to_string()),
        }
    }
    let (qc, rc, sp, scd) = match &m.body {
        Body::Query(q) => (
            Some(&q.query_cookie),
            None,
            q.stack_proposal.as_ref(),
            q.stack_config.as_ref(),
        ),
        Body::Response(r) => (
            Some(&r.query_cookie),
            r.responder_cookie.as_ref(),
            r.stack_proposal.as_ref(),
            r.stack_config.as_ref(),
        ),
        Body::Confirm(c) => (
            None,
            c.responder_cookie.as_ref(),
            c.stack_proposal.as_ref(),
            c.stack_config.as_ref(),
        ),
        _ => (None, None, None, None),
    };
    for (k, c) in [("gist.query_cookie", qc), ("gist.responder_cookie", rc)] {
        if let Some(c) = c.filter(|c| !c.0.is_empty()) {
            push(k, hex(&c.0));
        }
    }
    if let Some(sp) = sp {
        for id in sp.profiles.iter().flatten() {
            push("gist.sp.proto", id.to_string());
        }
    }
    if let Some(scd) = scd {
        push("gist.scd.hold_time", scd.ma_hold_time_ms.to_string());
        for o in &scd.options {
            push("gist.scd.mpo.proto", o.protocol.to_string());
            if (1..=4).contains(&o.protocol) && o.data.len() >= 2 {
                push("gist.scd.mpo.port", o.port().unwrap().to_string());
            }
        }
    }
    if let Some(d) = nslp.filter(|d| !d.is_empty()) {
        push("gist.nslp_data", hex(d));
        if m.nslpid == ping::NSLPID
            && let Some(p) = PingMessage::parse(d)
        {
            push(
                "nslp_ping.kind",
                (if p.kind == PingKind::Request { 1 } else { 2 }).to_string(),
            );
            push("nslp_ping.hop_count", p.hops.len().to_string());
            push("nslp_ping.seq", p.seq.to_string());
            for hop in &p.hops {
                match hop.addr {
                    IpAddr::V4(a) => push("nslp_ping.hop.ipv4", a.to_string()),
                    IpAddr::V6(a) => push("nslp_ping.hop.ipv6", a.to_string()),
                }
            }
        }
    }
    match &m.body {
        Body::Error(e) => {
            let e = &e.error;
            push("gist.err.class", e.class.number().to_string());
            push("gist.err.code", e.code.to_string());
            push("gist.err.subcode", e.subcode.to_string());
            if let Some(sid) = e.session_id {
                push("gist.err.sid", hex(&sid.0));
            }
            if let Some(mri) = &e.mri {
                mri_fields(mri, &mut push);
            }
            if let Some(c) = &e.comment {
                push("gist.err.comment", String::from_utf8_lossy(c).into_owned());
            }
        }
        Body::MaHello(h) => push("gist.hello_id", format!("0x{:08x}", h.hello_id)),
        _ => {}
    }
    for u in unknown.iter().filter(|u| !u.body.is_empty()) {
        push("gist.obj.data", hex(&u.body));
    }
}

fn mri_fields(mri: &Mri, push: &mut impl FnMut(&'static str, String)) {
    push("gist.mri.mrm", mri.mrm().to_string());
    let addrs = |push: &mut dyn FnMut(&'static str, String), s: IpAddr, d: IpAddr| match (s, d) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            push("gist.mri.src_ipv4", s.to_string());
            push("gist.mri.dst_ipv4", d.to_string());
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            push("gist.mri.src_ipv6", s.to_string());
            push("gist.mri.dst_ipv6", d.to_string());
        }
        _ => panic!("mixed address families"),
    };
    match mri {
        Mri::PathCoupled(p) => {
            addrs(push, p.source, p.destination);
            push("gist.mri.d", u8::from(p.upstream).to_string());
            if let Some(v) = p.protocol {
                push("gist.mri.protocol", v.to_string());
            }
            if let Some(v) = p.ds_field {
                push("gist.mri.ds_field", v.to_string());
            }
            if let Some(v) = p.flow_label {
                push("gist.mri.flow_label", format!("0x{v:08x}"));
            }
            if let Some(v) = p.spi {
                push("gist.mri.spi", format!("0x{v:08x}"));
            }
            if let Some(v) = p.source_port {
                push("gist.mri.src_port", v.to_string());
            }
            if let Some(v) = p.dest_port {
                push("gist.mri.dst_port", v.to_string());
            }
        }
        Mri::LooseEnd(l) => {
            addrs(push, l.source, l.destination);
            push("gist.mri.le_d", u8::from(l.upstream).to_string());
        }
        Mri::Other { data, .. } => {
            if !data.is_empty() {
                push("gist.mri.data", hex(data));
            }
        }
    }
}

/// Decodes `pcap` with the dissector and checks it against `expected` (frame → messages):
/// message types and field values per frame, one GIST tree per message, no GIST expert
/// warning or error, none of any protocol at error level.
fn check_against_codec(home: &Scratch, pcap: &Path, expected: &BTreeMap<usize, Vec<Message>>) {
    let name = pcap.file_name().unwrap().to_string_lossy().into_owned();
    let decoded = tshark_fields(home, pcap, FIELDS);
    assert!(decoded.len() >= expected.keys().last().copied().unwrap_or(0));
    for (&frame, cols) in &decoded {
        let mut want: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
        for m in expected.get(&frame).into_iter().flatten() {
            expected_fields(m, &mut want);
        }
        for (field, got) in FIELDS.iter().zip(cols) {
            let want = want.get(field).map(|v| v.join(",")).unwrap_or_default();
            assert_eq!(got, &want, "{name} frame {frame}: {field}");
        }
    }

    let verbose = tshark(home, pcap, &["-V"]);
    assert!(
        !verbose.contains("Malformed"),
        "{name}: {}",
        excerpt(&verbose, "Malformed")
    );
    let trees = verbose
        .lines()
        .filter(|l| l.starts_with("General Internet Signalling Transport"))
        .count();
    let messages: usize = expected.values().map(Vec::len).sum();
    assert_eq!(trees, messages, "{name}: one GIST tree per message");

    let args = ["-q", "-z", "expert,error", "-z", "expert,warn"];
    let experts = tshark(home, pcap, &args);
    assert!(
        !experts.contains("Errors ("),
        "{name}: expert errors:\n{experts}"
    );
    for line in experts.lines() {
        let protocol = line.split_whitespace().nth(2).unwrap_or_default();
        assert!(
            protocol != "GIST" && protocol != "NSLP_PING",
            "{name}: expert warning: {line}"
        );
    }
}

// ------------------------------------------------------------------------------------------
// Messages built with the codec
// ------------------------------------------------------------------------------------------

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn nli(addr: &str, pi: &[u8]) -> Nli {
    Nli {
        ip_ttl: 63,
        rs_validity_ms: 45_000,
        peer_identity: pi.into(),
        interface_address: ip(addr),
    }
}

fn ping_payload(kind: PingKind, seq: u32, hops: &[&str]) -> Vec<u8> {
    PingMessage {
        kind,
        seq,
        sent_at: Instant::from_nanos(1_234_567_890),
        hops: hops
            .iter()
            .enumerate()
            .map(|(i, a)| PingHop {
                addr: ip(a),
                timestamp: Instant::from_nanos(2_000_000_000 + i as u64),
            })
            .collect(),
    }
    .emit()
}

fn message(nslpid: u16, body: Body) -> Message {
    let mut m = Message {
        gist_hops: 16,
        nslpid,
        c_flag: false,
        s_flag: true,
        r_flag: false,
        e_flag: false,
        body,
    };
    match m.body {
        Body::Query(_) => (m.c_flag, m.r_flag) = (true, true),
        Body::Response(_) | Body::MaHello(_) => m.r_flag = true,
        _ => {}
    }
    m
}

/// One message of every type, with every object and MRI flavour the codec knows.
fn codec_messages() -> Vec<Message> {
    let sid = SessionId(*b"pathwise-session");
    let pc4 = PathCoupledMri {
        protocol: Some(17),
        ds_field: Some(46),
        source_port: Some(5004),
        dest_port: Some(5006),
        ..PathCoupledMri::flow(ip("10.0.0.1"), ip("10.0.9.9"))
    };
    let pc6 = PathCoupledMri {
        source_prefix: 64,
        protocol: Some(50),
        flow_label: Some(0xabcde),
        spi: Some(0xdead_beef),
        upstream: true,
        ..PathCoupledMri::flow(ip("2001:db8::1"), ip("2001:db8:9::9"))
    };
    let le4 = LooseEndMri {
        nat: false,
        source: ip("10.0.0.1"),
        destination: ip("10.0.9.9"),
        upstream: true,
    };
    let le6 = LooseEndMri {
        nat: true,
        source: ip("fd00::1"),
        destination: ip("fd00::2"),
        upstream: false,
    };
    let stack = StackProposal {
        profiles: vec![
            vec![ma_protocol::TCP],
            vec![ma_protocol::TLS, ma_protocol::TCP],
        ],
    };
    let scd = StackConfigData {
        ma_hold_time_ms: 30_000,
        options: vec![
            MaProtocolOptions::tcp_port(1, 30_000),
            MaProtocolOptions {
                protocol: ma_protocol::TLS,
                profile: 2,
                d_flag: true,
                data: vec![0x75, 0x31, 0xaa],
            },
        ],
    };
    let query = Query {
        nat: Some(vec![1, 2, 3, 4]),
        mri: Mri::PathCoupled(pc4),
        session_id: sid,
        nli: nli("10.0.0.1", b"peer1"),
        query_cookie: Cookie(vec![9; 6].into()),
        stack_proposal: Some(stack.clone()),
        stack_config: Some(scd.clone()),
        nslp_data: Some(ping_payload(PingKind::Request, 1, &[])),
        unknown: vec![UnknownObject {
            object_type: 0x123,
            body: vec![0xee; 8],
        }],
    };
    let response = Response {
        nat: None,
        mri: Mri::PathCoupled(pc6),
        session_id: sid,
        nli: nli("2001:db8:9::9", &[]),
        query_cookie: Cookie(vec![9; 8].into()),
        responder_cookie: Some(Cookie(vec![7; 20].into())),
        stack_proposal: Some(stack.clone()),
        stack_config: Some(scd),
        nslp_data: Some(ping_payload(
            PingKind::Reply,
            1,
            &["10.0.5.5", "2001:db8:9::9"],
        )),
        unknown: vec![],
    };
    let confirm = Confirm {
        mri: Mri::LooseEnd(le4),
        session_id: sid,
        nli: nli("10.0.0.1", b"peer-identity-17"),
        responder_cookie: Some(Cookie(vec![7; 20].into())),
        stack_proposal: Some(stack),
        stack_config: Some(StackConfigData {
            ma_hold_time_ms: 30_000,
            options: vec![],
        }),
        nslp_data: None,
        unknown: vec![],
    };
    let data = Data {
        nat: None,
        mri: Mri::LooseEnd(le6),
        session_id: sid,
        nli: Some(nli("fd00::1", b"x")),
        nslp_data: ping_payload(PingKind::Request, 2, &["fd00::7", "10.1.1.1"]),
        unknown: vec![],
    };
    let mut in_error = message(42, Body::Data(Data::default()));
    in_error.e_flag = true;
    let mut error = ErrorObject::new(error_code::OBJECT_VALUE_ERROR, 2, in_error.header());
    error.session_id = Some(sid);
    error.mri = Some(Mri::PathCoupled(pc4));
    error.info = vec![
        AdditionalInfo::MessageLength(12),
        AdditionalInfo::Mtu(1500),
        AdditionalInfo::ObjectType(2),
        AdditionalInfo::ObjectValue {
            real_length_words: 5,
            offset: 6,
            object: vec![
                0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x90, 0x00, 10, 0, 0, 1, 10, 0, 0, 2, 32, 32,
                0, 0,
            ],
        },
        AdditionalInfo::Other {
            ai_type: 99,
            value: vec![1, 2, 3, 4],
        },
    ];
    error.comment = Some(b"MRI flags contradict".to_vec());
    let header_error =
        ErrorObject::new(error_code::COMMON_HEADER_PARSE_ERROR, 3, in_error.header());
    let other_mri = Query {
        mri: Mri::Other {
            mrm: 77,
            nat: false,
            data: vec![0xab; 6],
        },
        session_id: sid,
        nli: nli("10.0.0.1", &[]),
        query_cookie: Cookie(vec![1, 2, 3, 4].into()),
        ..Query::default()
    };
    let mut data_e = message(
        42,
        Body::Data(Data {
            nat: None,
            mri: Mri::PathCoupled(PathCoupledMri::flow(ip("10.0.0.1"), ip("10.0.9.9"))),
            session_id: sid,
            nli: None,
            nslp_data: b"explicitly routed".to_vec(),
            unknown: vec![],
        }),
    );
    data_e.e_flag = true;
    vec![
        message(ping::NSLPID, Body::Query(query)),
        message(ping::NSLPID, Body::Response(response)),
        message(ping::NSLPID, Body::Confirm(confirm)),
        message(ping::NSLPID, Body::Data(data)),
        message(
            42,
            Body::Error(ErrorMsg {
                nat: None,
                nli: Some(nli("10.0.9.9", b"abc")),
                error,
                unknown: vec![],
            }),
        ),
        message(
            42,
            Body::Error(ErrorMsg {
                nat: None,
                nli: None,
                error: header_error,
                unknown: vec![],
            }),
        ),
        message(
            0,
            Body::MaHello(MaHello {
                hello_id: 0x0102_0304,
                unknown: vec![],
            }),
        ),
        message(42, Body::Query(other_mri)),
        data_e,
    ]
}

fn emit(m: &Message) -> Vec<u8> {
    let mut v = Vec::new();
    m.emit(&mut v);
    v
}

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];

/// A small deterministic generator for the mutation corpus.
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

/// What the codec makes of a D-mode datagram, NSLP included: `true` if it rejects it (GIST
/// parse error, or Ping NSLP data the Ping NSLP cannot parse).
fn codec_rejects(datagram: &[u8]) -> bool {
    let Ok(m) = Message::parse_datagram(datagram) else {
        return true;
    };
    let data = match &m.body {
        Body::Query(q) => q.nslp_data.as_deref(),
        Body::Response(r) => r.nslp_data.as_deref(),
        Body::Confirm(c) => c.nslp_data.as_deref(),
        Body::Data(d) => Some(d.nslp_data.as_slice()),
        _ => None,
    };
    match data {
        Some(d) if m.nslpid == ping::NSLPID && !d.is_empty() => PingMessage::parse(d).is_none(),
        _ => false,
    }
}

// ------------------------------------------------------------------------------------------
// Tests
// ------------------------------------------------------------------------------------------

#[test]
fn reference_captures_decode_as_the_codec_reads_them() {
    if !have_tshark("reference_captures_decode_as_the_codec_reads_them") {
        return;
    }
    let home = Scratch::new("reference");
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut pcaps: Vec<PathBuf> = std::fs::read_dir(&data)
        .expect("tests/data")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
        .collect();
    pcaps.sort();
    assert!(pcaps.len() >= 3, "{pcaps:?}");
    // One thread per capture: tshark's start-up dominates.
    std::thread::scope(|scope| {
        for pcap in &pcaps {
            let home = &home;
            scope.spawn(move || {
                // The C-mode capture's MA runs on the TCP port the Response advertised.
                let expected =
                    messages_by_frame(&read_pcap(pcap), |s, d| s == 30_000 || d == 30_000);
                assert!(!expected.is_empty(), "{}: no GIST", pcap.display());
                check_against_codec(home, pcap, &expected);
            });
        }
    });
}

#[test]
fn codec_built_messages_decode_in_d_mode_and_c_mode() {
    if !have_tshark("codec_built_messages_decode_in_d_mode_and_c_mode") {
        return;
    }
    let home = Scratch::new("codec");
    let msgs = codec_messages();
    let mut w = PcapWriter::new();
    for m in &msgs {
        w.udp(A, B, (GIST_PORT, GIST_PORT), &m.to_datagram());
    }
    // C-mode on port 270: segments cut inside the common header, inside objects, and with two
    // messages ending in one segment.
    let stream: Vec<u8> = msgs.iter().flat_map(emit).collect();
    w.tcp_stream((A, 40_000, B, GIST_PORT), &stream, &[3, 61, 200, 17, 1000]);
    // C-mode on a port advertised in a Stack-Configuration-Data (the Query above offers
    // 30000 for TCP): no heuristic guess needed for segments that start mid-message.
    w.tcp_stream((B, 40_001, A, 30_000), &stream, &[5, 300, 9]);
    let pcap = home.path("codec.pcap");
    w.save(&pcap);

    let frames = read_pcap(&pcap);
    let expected = messages_by_frame(&frames, |s, d| {
        [GIST_PORT, 30_000].contains(&s) || [GIST_PORT, 30_000].contains(&d)
    });
    let total: usize = expected.values().map(Vec::len).sum();
    assert_eq!(total, 3 * msgs.len());
    check_against_codec(&home, &pcap, &expected);

    // And the Ping NSLP shows its path.
    let ping_hops = tshark(
        &home,
        &pcap,
        &[
            "-Y",
            "nslp_ping.hop_count == 2",
            "-T",
            "fields",
            "-e",
            "nslp_ping.hop.ipv6",
        ],
    );
    assert!(
        ping_hops.lines().any(|l| l.contains("2001:db8:9::9")),
        "{ping_hops}"
    );
}

#[test]
fn dissector_flags_exactly_what_the_codec_rejects() {
    if !have_tshark("dissector_flags_exactly_what_the_codec_rejects") {
        return;
    }
    let home = Scratch::new("mutations");
    let mut rng = XorShift(0x5eed_0f9e_57ca_fe01);
    let mut corpus: Vec<Vec<u8>> = Vec::new();
    for m in codec_messages() {
        let d = m.to_datagram();
        // Every truncation, one extension, and single- and double-byte mutations.
        corpus.extend((1..d.len()).map(|n| d[..n].to_vec()));
        corpus.push([&d[..], &[0, 0, 0, 0]].concat());
        for _ in 0..150 {
            let mut x = d.clone();
            for _ in 0..1 + rng.below(2) {
                let at = rng.below(x.len());
                x[at] = rng.step() as u8;
            }
            corpus.push(x);
        }
    }
    // Hand-made: magic only, objects with impossible lengths, reserved flags, random bytes.
    let magic = pathwise_gist::wire::MAGIC.to_be_bytes();
    let hdr = |words: u16, ty: u8| -> Vec<u8> {
        let mut v = magic.to_vec();
        v.extend_from_slice(&[1, 32]);
        v.extend_from_slice(&words.to_be_bytes());
        v.extend_from_slice(&[0x7f, 0xc0, ty, 0xc0]);
        v
    };
    corpus.push(magic.to_vec());
    corpus.push(hdr(0xffff, 0x80));
    corpus.push([hdr(1, 0x80), vec![0x00, 0x00, 0x0f, 0xff]].concat());
    corpus.push([hdr(1, 0x80), vec![0xc0, 0x00, 0x00, 0x00]].concat());
    corpus.push([hdr(2, 0x85), vec![0x0f, 0xff, 0x00, 0x01, 1, 2, 3, 4]].concat());
    for n in [1, 2, 3, 7, 11, 40, 200] {
        let junk: Vec<u8> = (0..n).map(|_| rng.step() as u8).collect();
        corpus.push(junk.clone());
        corpus.push([&magic[..], &junk].concat());
    }
    let mut w = PcapWriter::new();
    for d in &corpus {
        w.udp(A, B, (GIST_PORT, GIST_PORT), d);
    }
    let pcap = home.path("mutations.pcap");
    w.save(&pcap);

    let flagged = flagged_frames(&home, &pcap);
    let verbose = tshark(&home, &pcap, &["-V"]);
    let trees = verbose
        .lines()
        .filter(|l| l.starts_with("General Internet Signalling Transport"))
        .count();
    assert_eq!(
        trees,
        corpus.len(),
        "every datagram on port 270 gets a GIST tree"
    );
    let mut disagree = Vec::new();
    for (i, d) in corpus.iter().enumerate() {
        let frame = i + 1;
        let codec = codec_rejects(d);
        let dissector = flagged.get(&frame).copied().unwrap_or(false);
        if codec != dissector {
            disagree.push(format!(
                "frame {frame}: codec {}, dissector {}: {}",
                if codec { "rejects" } else { "accepts" },
                if dissector { "flags it" } else { "does not" },
                hex(d)
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
    let rejected = corpus.iter().filter(|d| codec_rejects(d)).count();
    assert!(
        rejected > corpus.len() / 2 && rejected < corpus.len(),
        "{rejected} rejected"
    );
}

#[test]
fn broken_streams_never_break_the_dissector() {
    if !have_tshark("broken_streams_never_break_the_dissector") {
        return;
    }
    let home = Scratch::new("streams");
    let mut rng = XorShift(0x0bad_5eed_1234_5678);
    let msgs = codec_messages();
    let mut w = PcapWriter::new();
    // Empty and tiny UDP payloads.
    for payload in [&[][..], &[1], &[0x4e, 0x04]] {
        w.udp(A, B, (GIST_PORT, GIST_PORT), payload);
    }
    // A stream of garbage, a stream that ends mid-message, and a valid stream with mutated
    // bytes, all on port 270.
    let junk: Vec<u8> = (0..3000).map(|_| rng.step() as u8).collect();
    w.tcp_stream((A, 41_000, B, GIST_PORT), &junk, &[100, 7, 1400]);
    let mut stream: Vec<u8> = msgs.iter().flat_map(emit).collect();
    let cut = stream.len() - 5;
    w.tcp_stream((A, 41_001, B, GIST_PORT), &stream[..cut], &[50, 13]);
    for _ in 0..40 {
        let at = rng.below(stream.len());
        stream[at] = rng.step() as u8;
    }
    w.tcp_stream((A, 41_002, B, GIST_PORT), &stream, &[97, 5, 400]);
    let pcap = home.path("streams.pcap");
    w.save(&pcap);
    let verbose = tshark(&home, &pcap, &["-V"]);
    // The garbage stream is shown and flagged, not swallowed by reassembly.
    assert!(verbose.contains("do not start a GIST message"));
    assert!(verbose.contains("General Internet Signalling Transport, C-mode, Query"));
    tshark(&home, &pcap, &["-T", "fields", "-e", "gist.type"]);
    let _ = tshark(&home, &pcap, &["-2", "-q", "-z", "expert"]);
}
