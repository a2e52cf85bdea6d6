//! MRT routing dumps (RFC 6396) into a [`BgpRib`]: TABLE_DUMP_V2 RIB records (§4.3: a
//! PEER_INDEX_TABLE, then per prefix one entry per peer) and BGP4MP messages (§4.4: the UPDATEs a
//! router received, in order). Every route is taken as one exit router's (the dump's router),
//! from the BGP peer the record names. Parsing is `bgpkit-parser`'s; it bounds a record's length
//! (16 MiB) before reading it.

use super::bmp::{ExitNic, route_of};
use super::rib::{BgpRib, PeerKey};
use bgpkit_parser::models::{
    Bgp4MpEnum, BgpMessage, MrtMessage, PeerIndexTable, TableDumpV2Message,
};
use bgpkit_parser::{ParserError, parse_mrt_record};
use std::io::Read;
use std::net::IpAddr;
use thiserror::Error;

/// What an import read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MrtReport {
    /// MRT records read.
    pub records: u64,
    /// TABLE_DUMP_V2 RIB entries (one per prefix and peer) taken.
    pub rib_entries: u64,
    /// BGP4MP UPDATE messages taken.
    pub updates: u64,
    /// Prefixes announced (RIB entries and UPDATE announcements).
    pub announced: u64,
    /// Prefixes withdrawn by UPDATEs.
    pub withdrawn: u64,
    /// Records of other types or subtypes (TABLE_DUMP v1, state changes, other BGP messages).
    pub skipped: u64,
    /// RIB entries or announcements without an AS_PATH, or naming a peer the PEER_INDEX_TABLE
    /// lacks (not taken).
    pub unusable: u64,
}

/// Why an import stopped.
#[derive(Debug, Error)]
pub enum MrtError {
    /// A record did not parse.
    #[error("MRT record {record}: {what}")]
    Parse {
        /// Its position, from 1.
        record: u64,
        /// What was wrong.
        what: String,
    },
}

/// Read every record of `input` into `rib` as routes of the exit router `exit` (whose NICs
/// tell which one faces each BGP peer; NIC 0 when none does).
pub fn import(
    rib: &mut BgpRib,
    exit: IpAddr,
    nics: &[ExitNic],
    input: &mut impl Read,
) -> Result<MrtReport, MrtError> {
    let nic_for = |peer: IpAddr| nics.iter().find(|n| n.peer == peer).map_or(0, |n| n.index);
    let mut report = MrtReport::default();
    let mut peers = PeerIndexTable::default();
    loop {
        let record = match parse_mrt_record(input) {
            Ok(r) => r,
            Err(e) if matches!(e.error, ParserError::EofExpected) => break,
            Err(e) => {
                return Err(MrtError::Parse {
                    record: report.records + 1,
                    what: e.error.to_string(),
                });
            }
        };
        report.records += 1;
        match record.message {
            // RFC 6396 §4.3.1.
            MrtMessage::TableDumpV2Message(TableDumpV2Message::PeerIndexTable(t)) => peers = t,
            // RFC 6396 §4.3.2.
            MrtMessage::TableDumpV2Message(TableDumpV2Message::RibAfi(entries)) => {
                for e in entries.rib_entries {
                    let Some(peer) = peers.id_peer_map.get(&e.peer_index) else {
                        report.unusable += 1;
                        continue;
                    };
                    let asn = peer.peer_asn.to_u32();
                    let Some(route) = route_of(&e.attributes, asn, None) else {
                        report.unusable += 1;
                        continue;
                    };
                    let key = PeerKey::global(peer.peer_ip);
                    rib.ensure_peer(exit, key, asn, nic_for(peer.peer_ip));
                    rib.announce(exit, key, entries.prefix.prefix, route);
                    report.rib_entries += 1;
                    report.announced += 1;
                }
            }
            // RFC 6396 §4.4.2, §4.4.3.
            MrtMessage::Bgp4Mp(Bgp4MpEnum::Message(m)) => {
                let BgpMessage::Update(update) = m.bgp_message else {
                    report.skipped += 1;
                    continue;
                };
                report.updates += 1;
                let asn = m.peer_asn.to_u32();
                let key = PeerKey::global(m.peer_ip);
                rib.ensure_peer(exit, key, asn, nic_for(m.peer_ip));
                let (withdrawn, announced) = super::bmp::prefixes(&update);
                for p in withdrawn {
                    rib.withdraw(exit, key, p);
                    report.withdrawn += 1;
                }
                if announced.is_empty() {
                    continue;
                }
                match route_of(&update.attributes, asn, None) {
                    Some(route) => {
                        for p in announced {
                            rib.announce(exit, key, p, route);
                            report.announced += 1;
                        }
                    }
                    None => report.unusable += 1,
                }
            }
            _ => report.skipped += 1,
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bgp::wire;
    use bgpkit_parser::encoder::MrtRibEncoder;
    use bgpkit_parser::models::{AsPath, BgpElem, ElemType, NetworkPrefix};
    use ipnet::IpNet;

    fn elem(peer: &str, asn: u32, prefix: &str, path: &[u32]) -> BgpElem {
        BgpElem {
            elem_type: ElemType::ANNOUNCE,
            peer_ip: peer.parse().unwrap(),
            peer_asn: asn.into(),
            prefix: NetworkPrefix::new(prefix.parse().unwrap(), None),
            next_hop: Some(peer.parse().unwrap()),
            as_path: Some(AsPath::from_sequence(path)),
            ..Default::default()
        }
    }

    fn exit() -> IpAddr {
        "10.255.0.1".parse().unwrap()
    }

    fn networks(rib: &BgpRib) -> Vec<(IpNet, u8, u32, u16)> {
        let mut v: Vec<_> = rib
            .external_networks()
            .into_iter()
            .map(|n| (n.prefix, n.nic, n.as_number, n.as_distance))
            .collect();
        v.sort();
        v
    }

    /// A TABLE_DUMP_V2 dump written by bgpkit-parser's own encoder (two peers, IPv4 and IPv6),
    /// then BGP4MP updates written by [`wire::mrt_bgp4mp`].
    #[test]
    fn a_rib_dump_and_updates_make_the_exits_networks() {
        let mut enc = MrtRibEncoder::new();
        for e in [
            elem("192.0.2.1", 64510, "203.0.113.0/24", &[64510, 64999]),
            elem("192.0.2.5", 64511, "203.0.113.0/24", &[64511, 64520, 64999]),
            elem("192.0.2.5", 64511, "198.51.100.0/24", &[64511]),
            elem("192.0.2.1", 64510, "2001:db8::/32", &[64510, 64530]),
        ] {
            enc.process_elem(&e).unwrap();
        }
        let mut bytes = enc.export_bytes().unwrap().to_vec();
        let peer = "192.0.2.5".parse().unwrap();
        bytes.extend(wire::mrt_bgp4mp(
            peer,
            64511,
            "192.0.2.6".parse().unwrap(),
            64500,
            &wire::update(&[], &[], &["198.51.100.0/24".parse().unwrap()]),
        ));
        bytes.extend(wire::mrt_bgp4mp(
            peer,
            64511,
            "192.0.2.6".parse().unwrap(),
            64500,
            &wire::update(&["192.0.2.128/25".parse().unwrap()], &[64511, 1, 2], &[]),
        ));
        let nics = [ExitNic {
            index: 2,
            local: "192.0.2.6".parse().unwrap(),
            peer,
        }];
        let mut rib = BgpRib::new();
        let r = import(&mut rib, exit(), &nics, &mut &bytes[..]).unwrap();
        assert_eq!(r.rib_entries, 4);
        assert_eq!(r.updates, 2);
        assert_eq!(r.withdrawn, 1);
        assert_eq!(r.announced, 5);
        assert_eq!(r.unusable, 0);
        let net = |s: &str| s.parse::<IpNet>().unwrap();
        assert_eq!(
            networks(&rib),
            vec![
                (net("192.0.2.128/25"), 2, 2, 3),
                (net("203.0.113.0/24"), 0, 64999, 2),
                (net("2001:db8::/32"), 0, 64530, 2),
            ]
        );
    }

    #[test]
    fn a_broken_record_stops_the_import_with_its_position() {
        let mut bytes = wire::mrt_bgp4mp(
            "192.0.2.1".parse().unwrap(),
            1,
            "192.0.2.2".parse().unwrap(),
            2,
            &wire::update(&["10.0.0.0/8".parse().unwrap()], &[1], &[]),
        );
        bytes.extend_from_slice(&[0, 0, 0, 0, 0, 16, 0, 4, 0, 0, 0, 40, 1, 2]);
        let mut rib = BgpRib::new();
        let e = import(&mut rib, exit(), &[], &mut &bytes[..]).unwrap_err();
        assert!(matches!(e, MrtError::Parse { record: 2, .. }), "{e}");
    }
}
