#!/usr/bin/env python3
"""Regenerate kom.rs: the RSVP messages of the KOM/DRAGON captures as Rust consts.

Usage, from crates/rsvp/src/wire/message/vectors/:
    python3 kom_extract.py /path/to/shared/captures/kom > kom.rs && cargo fmt
Needs tshark; the tests and fuzz seeds read only kom.rs, never the captures.
"""
import json, os, subprocess, sys

MSG = {1: "PATH", 2: "RESV", 3: "PATH_ERR", 4: "RESV_ERR", 5: "PATH_TEAR", 6: "RESV_TEAR", 7: "RESV_CONF"}
PREFIX = {
    "kom-head-end-path-if-id-hop.pcap": "HEAD_END",
    "kom-lsp-setup-and-resvtear.pcap": "SETUP",
    "kom-patherr-with-label-request.pcap": "PATHERR",
    "kom-receiver-generalized-label.pcap": "RECEIVER",
}

def main(dir):
    print("//! RSVP messages of the KOM RSVP Engine (DRAGON fork, GMPLS RSVP-TE) from the captures in")
    print("//! `shared/captures/kom/` (README there), extracted with tshark (`kom_extract.py`): the IP")
    print("//! payload of each frame, with the frame's addresses and IP TTL, so that tests and fuzz seeds")
    print("//! never read the captures. Generated; do not edit.")
    print("//!")
    print("//! Chain: H1 10.200.0.1 – R1 – R2 – R3 – H2 10.200.3.2; link k is 10.200.k.0/24. The session")
    print("//! is LSP_TUNNEL_IPv4 to 10.200.3.2, Tunnel ID 1, and the LSP's sender 10.200.0.1, LSP ID 1.")
    print()
    print("use std::net::Ipv4Addr;")
    print()
    print("/// One captured RSVP message.")
    print("#[derive(Debug)]")
    print("pub struct Frame {")
    print("    /// IP source.\n    pub src: Ipv4Addr,\n    /// IP destination.\n    pub dst: Ipv4Addr,")
    print("    /// IP TTL as captured.\n    pub ttl: u8,\n    /// The RSVP message (common header first).\n    pub rsvp: &'static [u8],")
    print("}")
    names = []
    for pcap in sorted(PREFIX):
        out = subprocess.run(["tshark", "-r", os.path.join(dir, pcap), "-T", "json", "-x"],
                             capture_output=True, check=True, text=True).stdout
        for p in json.loads(out):
            l = p["_source"]["layers"]
            n = l["frame"]["frame.number"]
            raw = bytes.fromhex(l["rsvp_raw"][0])
            name = f"{PREFIX[pcap]}_{n}_{MSG.get(raw[1], 'MSG' + str(raw[1]))}"
            names.append(name)
            src, dst, ttl = l["ip"]["ip.src"], l["ip"]["ip.dst"], l["ip"]["ip.ttl"]
            print()
            print(f"/// {pcap}, frame {n}: {src} -> {dst}, IP TTL {ttl}.")
            print(f"pub const {name}: Frame = Frame {{")
            print(f"    src: Ipv4Addr::new({src.replace('.', ', ')}),")
            print(f"    dst: Ipv4Addr::new({dst.replace('.', ', ')}),")
            print(f"    ttl: {ttl},")
            print("    rsvp: &[")
            for i in range(0, len(raw), 12):
                print("        " + " ".join(f"0x{b:02x}," for b in raw[i:i + 12]))
            print("    ],")
            print("};")
    print()
    print("/// Every captured message.")
    print("pub const ALL: &[(&str, Frame)] = &[")
    for nm in names:
        print(f'    ("{nm}", {nm}),')
    print("];")
    for alias, frame, doc in ALIASES:
        print()
        print(f"/// {doc}")
        print(f"pub const {alias}: &[u8] = {frame}.rsvp;")

# The messages tests name by what they are.
ALIASES = [
    ("KOM_PATHWISE_LSP_PATH", "PATHERR_1_PATH",
     "pathwise's LSP Path from head end 10.200.0.1 (through R1 10.200.1.1) towards KOM."),
    ("KOM_PATHERR_WITH_LABEL_REQUEST", "PATHERR_2_PATH_ERR",
     "KOM's PathErr (24/5, Error Node 127.0.0.1) with LABEL_REQUEST and SESSION_ATTRIBUTE outside RFC 2205 §3.1.7's grammar."),
    ("KOM_PATH_IF_ID_HOP", "HEAD_END_1_PATH",
     "KOM head end's Path with an IF_ID RSVP_HOP (RFC 3473 §8.1.1, C-Type 3)."),
    ("KOM_PATHTEAR_IF_ID_HOP", "HEAD_END_2_PATH_TEAR", "KOM head end's PathTear with an IF_ID RSVP_HOP."),
    ("KOM_RESV_IF_ID_HOP", "SETUP_2_RESV",
     "KOM's Resv with an IF_ID RSVP_HOP, a MESSAGE_ID and a Generalized LABEL (RFC 3473 §2.3)."),
    ("KOM_RESVTEAR_IF_ID_HOP", "SETUP_3_RESV_TEAR", "KOM's ResvTear with an IF_ID RSVP_HOP."),
    ("KOM_RESV_GENERALIZED_LABEL", "RECEIVER_2_RESV",
     "KOM egress's Resv with a Generalized LABEL (label 16) behind an ordinary RSVP_HOP."),
    ("KOM_PATHWISE_RESVERR_14", "RECEIVER_3_RESV_ERR",
     "pathwise's ResvErr 14/0x1002 to that Resv, as it answered before GMPLS was understood."),
    ("KOM_RESVTEAR_TO_HEAD_END", "RECEIVER_5_RESV_TEAR",
     "KOM's ResvTear sent to the head end instead of the previous hop."),
]

main(sys.argv[1])
