#!/usr/bin/env python3
"""Regenerate kom.rs: the RSVP messages of the KOM/DRAGON captures as Rust consts.

Usage: python3 extract.py /path/to/shared/captures/kom > kom.rs
Needs tshark; the tests read only kom.rs, never the captures.
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
    print("//! RSVP messages from the KOM RSVP Engine captures (DRAGON fork, GMPLS RSVP-TE) in")
    print("//! `shared/captures/kom/`, extracted with tshark (`extract.py`): the IP payload of each frame,")
    print("//! with the frame's addresses and IP TTL. Generated; do not edit.")
    print("#![allow(dead_code)]")
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

main(sys.argv[1])
