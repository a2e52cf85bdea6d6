//! One BMP session (RFC 7854), sans-IO: bytes from the router's TCP connection in, changes to
//! the [`BgpRib`] out.
//!
//! Framing is ours (RFC 7854 §4.1: version 3, a 4-byte length that counts the whole message, a
//! type): a message is handed to `bgpkit-parser` only once all its bytes are here and its
//! length is sane, so the parser never reads past a message. A bad version or length cannot be
//! resynchronised on a byte stream and ends the session ([`BmpError`]); a message the parser
//! refuses is dropped and counted, and the stream goes on.

use super::rib::{BgpRib, PeerKey, Route};
use bgpkit_parser::models::{AsPath, Attributes, BgpMessage, BgpUpdateMessage, NetworkPrefix};
use bgpkit_parser::parser::bmp::messages::{
    BmpMessage, BmpMessageBody, BmpPeerType, InitiationTlvType, PeerFlags, PerPeerFlags,
};
use ipnet::IpNet;
use std::net::IpAddr;
use thiserror::Error;

/// BMP version (RFC 7854 §4.1).
pub const VERSION: u8 = 3;
/// Common header length (RFC 7854 §4.1).
pub const HEADER_LEN: usize = 6;
/// Longest message taken: a route monitoring message carries one BGP message (at most 4,096
/// bytes, or 65,535 with RFC 8654 extended messages) after a 42-byte per-peer header; Peer Up
/// carries two OPENs and TLVs. Anything longer is a broken stream.
pub const MAX_MESSAGE: usize = 1 << 20;

/// Message type names, by RFC 7854 §4.1 type code.
pub const MESSAGE_TYPES: [&str; 7] = [
    "route_monitoring",
    "statistics_report",
    "peer_down",
    "peer_up",
    "initiation",
    "termination",
    "route_mirroring",
];

/// Why a session's stream cannot go on.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum BmpError {
    /// Not BMP version 3 (RFC 7854 §4.1).
    #[error("BMP version {0} (only version 3 is spoken)")]
    Version(u8),
    /// A length shorter than the header or longer than [`MAX_MESSAGE`].
    #[error("BMP message length {0} out of range")]
    Length(u32),
    /// The router sent a Termination message (RFC 7854 §4.5).
    #[error("the router terminated the session")]
    Terminated,
}

/// Messages dropped, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BmpDrops {
    /// The parser refused the message (bad lengths, bad BGP message, unknown type).
    pub malformed: u64,
    /// Not a global-instance peer (RD instance, local instance or Loc-RIB peers are not the
    /// Internet routes of the exit).
    pub peer_type: u64,
    /// Adj-RIB-Out (RFC 8671's O flag): what the router sends, not what it learned.
    pub adj_rib_out: u64,
    /// Route monitoring carrying something other than an UPDATE (RFC 7854 §4.6 allows only
    /// UPDATEs).
    pub not_update: u64,
    /// Announcements without an AS_PATH (a well-known mandatory attribute, RFC 4271 §5.1.2):
    /// treated as withdrawals (RFC 7606 §3 d); counted per message.
    pub missing_as_path: u64,
}

/// What a session has seen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BmpCounters {
    /// Messages received, by type code (index into [`MESSAGE_TYPES`]).
    pub messages: [u64; 7],
    /// Messages dropped, by reason.
    pub drops: BmpDrops,
    /// Prefixes announced in route monitoring messages.
    pub announced: u64,
    /// Prefixes withdrawn in route monitoring messages.
    pub withdrawn: u64,
    /// End-of-RIB markers (RFC 4724 §2) seen.
    pub end_of_rib: u64,
    /// Route monitoring messages from an eBGP peer whose AS_PATH starts with the monitored
    /// router's own AS, which was then not counted (FRR 8.4 sends pre-policy routes so).
    pub own_as_removed: u64,
}

/// One NIC of the exit router, used to tell which NIC a BGP peer's routes leave through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitNic {
    /// NIC index in the database.
    pub index: u8,
    /// The exit's address on it.
    pub local: IpAddr,
    /// The far side's address.
    pub peer: IpAddr,
}

/// One BMP session from an exit router.
#[derive(Clone, Debug)]
pub struct BmpSession {
    exit: IpAddr,
    nics: Vec<ExitNic>,
    buf: Vec<u8>,
    start: usize,
    counters: BmpCounters,
    sys_name: Option<String>,
    sys_descr: Option<String>,
    /// The monitored router's AS towards each peer (its OPEN in the peer's Peer Up).
    local_as: Vec<(PeerKey, u32)>,
    last_error: Option<String>,
}

impl BmpSession {
    /// A session whose routes belong to the exit router `exit`, with its NICs.
    pub fn new(exit: IpAddr, nics: Vec<ExitNic>) -> BmpSession {
        BmpSession {
            exit,
            nics,
            buf: Vec::new(),
            start: 0,
            counters: BmpCounters::default(),
            sys_name: None,
            sys_descr: None,
            local_as: Vec::new(),
            last_error: None,
        }
    }

    /// Why the last dropped message was dropped.
    pub fn last_error(&self) -> Option<&str> {
        self.last_error.as_deref()
    }

    /// The exit router.
    pub fn exit(&self) -> IpAddr {
        self.exit
    }

    /// What the session has seen.
    pub fn counters(&self) -> &BmpCounters {
        &self.counters
    }

    /// The router's sysName and sysDescr from its Initiation message (RFC 7854 §4.3).
    pub fn sys_name(&self) -> (Option<&str>, Option<&str>) {
        (self.sys_name.as_deref(), self.sys_descr.as_deref())
    }

    /// Take `data` from the stream: every complete message is applied to `rib`. Returns how
    /// many messages were complete; an error means the stream cannot go on (close it and call
    /// [`end`](Self::end)).
    pub fn handle_bytes(&mut self, data: &[u8], rib: &mut BgpRib) -> Result<usize, BmpError> {
        self.buf.extend_from_slice(data);
        let mut n = 0;
        let result = loop {
            let Some(rest) = self.buf.get(self.start..) else {
                break Ok(n);
            };
            match frame(rest) {
                Ok(Some(len)) => {
                    let msg = &self.buf[self.start..self.start + len];
                    let msg = bytes::Bytes::copy_from_slice(msg);
                    self.start += len;
                    n += 1;
                    if let Err(e) = self.handle_message(msg, rib) {
                        break Err(e);
                    }
                }
                Ok(None) => break Ok(n),
                Err(e) => break Err(e),
            }
        };
        // Keep the partial message only.
        if self.start > 0 && (self.start >= self.buf.len() || self.start > 1 << 16) {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        result
    }

    /// The TCP connection closed (or the stream broke): the station no longer knows what the
    /// router knows, so its routes go (RFC 7854 §3.3).
    pub fn end(&mut self, rib: &mut BgpRib) {
        rib.exit_down(self.exit);
        self.buf.clear();
        self.start = 0;
    }

    /// One framed message (header included).
    fn handle_message(&mut self, mut msg: bytes::Bytes, rib: &mut BgpRib) -> Result<(), BmpError> {
        let kind = msg.get(5).copied().unwrap_or(u8::MAX);
        if let Some(c) = self.counters.messages.get_mut(usize::from(kind)) {
            *c += 1;
        }
        let parsed: BmpMessage = match bgpkit_parser::parse_bmp_msg(&mut msg) {
            Ok(m) => m,
            Err(e) => {
                self.counters.drops.malformed += 1;
                self.last_error = Some(format!("{} message: {e}", type_name(kind)));
                return Ok(());
            }
        };
        let peer = parsed.per_peer_header.as_ref().map(|h| {
            let flags = match h.peer_flags {
                PerPeerFlags::PeerFlags(f) => f,
                PerPeerFlags::LocalRibPeerFlags(_) => PeerFlags::empty(),
            };
            (
                h.peer_type,
                flags,
                PeerKey {
                    distinguisher: h.peer_distinguisher,
                    address: h.peer_ip,
                    post_policy: flags.contains(PeerFlags::IS_POST_POLICY),
                },
                h.peer_asn.to_u32(),
            )
        });
        // RFC 7854 §4.2: only global-instance peers carry the exit's Internet routes;
        // RFC 8671 §4: the O flag marks Adj-RIB-Out.
        if let Some((ty, flags, _, _)) = &peer {
            if *ty != BmpPeerType::Global {
                self.counters.drops.peer_type += 1;
                return Ok(());
            }
            if flags.contains(PeerFlags::IS_ADJ_RIB_OUT) {
                self.counters.drops.adj_rib_out += 1;
                return Ok(());
            }
        }
        match (parsed.message_body, peer) {
            // RFC 7854 §4.6.
            (BmpMessageBody::RouteMonitoring(rm), Some((_, _, key, asn))) => {
                let BgpMessage::Update(update) = rm.bgp_message else {
                    self.counters.drops.not_update += 1;
                    return Ok(());
                };
                let nic = self.nic_for(key.address, key.address);
                rib.ensure_peer(self.exit, key, asn, nic);
                self.route_monitoring(&update, key, asn, rib);
            }
            // RFC 7854 §4.10.
            (BmpMessageBody::PeerUpNotification(up), Some((_, _, key, asn))) => {
                let nic = self.nic_for(key.address, up.local_addr);
                if let BgpMessage::Open(open) = &up.sent_open {
                    let local = open_asn(open);
                    self.local_as.retain(|(k, _)| *k != key);
                    self.local_as.push((key, local));
                }
                rib.peer_up(self.exit, key, asn, nic);
            }
            // RFC 7854 §4.9.
            (BmpMessageBody::PeerDownNotification(_), Some((_, _, key, _))) => {
                rib.peer_down(self.exit, key);
            }
            // RFC 7854 §4.3.
            (BmpMessageBody::InitiationMessage(init), _) => {
                for tlv in init.tlvs {
                    match tlv.info_type {
                        InitiationTlvType::SysName => self.sys_name = Some(tlv.info),
                        InitiationTlvType::SysDescr => self.sys_descr = Some(tlv.info),
                        _ => {}
                    }
                }
            }
            // RFC 7854 §4.5: the router closes the session after this.
            (BmpMessageBody::TerminationMessage(_), _) => return Err(BmpError::Terminated),
            // Statistics (§4.8) and route mirroring (§4.7): counted, not used.
            _ => {}
        }
        Ok(())
    }

    /// The NIC a peer's routes leave through: the exit's NIC facing the peer's address, or the
    /// one holding the session's local address; NIC 0 when the database names neither.
    fn nic_for(&self, peer: IpAddr, local: IpAddr) -> u8 {
        self.nics
            .iter()
            .find(|n| n.peer == peer)
            .or_else(|| self.nics.iter().find(|n| n.local == local))
            .map_or(0, |n| n.index)
    }

    fn route_monitoring(
        &mut self,
        update: &BgpUpdateMessage,
        peer: PeerKey,
        peer_asn: u32,
        rib: &mut BgpRib,
    ) {
        let attrs = &update.attributes;
        let withdrawn = update.withdrawn_prefixes.iter().chain(
            attrs
                .get_unreachable_nlri()
                .map_or(&[][..], |n| &n.prefixes),
        );
        for p in withdrawn {
            self.counters.withdrawn += 1;
            rib.withdraw(self.exit, peer, p.prefix);
        }
        let announced: Vec<&NetworkPrefix> = update
            .announced_prefixes
            .iter()
            .chain(attrs.get_reachable_nlri().map_or(&[][..], |n| &n.prefixes))
            .collect();
        if announced.is_empty() {
            if update.withdrawn_prefixes.is_empty() && attrs.get_unreachable_nlri().is_none() {
                self.counters.end_of_rib += 1;
            }
            return;
        }
        let local = self
            .local_as
            .iter()
            .find(|(k, _)| *k == peer)
            .map(|(_, a)| *a);
        let Some(route) = route_of(attrs, peer_asn, local) else {
            self.counters.drops.missing_as_path += 1;
            for p in announced {
                rib.withdraw(self.exit, peer, p.prefix);
            }
            return;
        };
        if attrs
            .effective_as_path()
            .is_some_and(|p| prepended_by_router(&p, peer_asn, local))
        {
            self.counters.own_as_removed += 1;
        }
        for p in announced {
            self.counters.announced += 1;
            rib.announce(self.exit, peer, p.prefix, route);
        }
    }
}

/// The route an UPDATE's attributes describe, or `None` without an AS_PATH. `local_as` is the
/// monitored router's own AS towards this peer, when known.
///
/// An eBGP peer's path starts with the peer's AS (RFC 4271 §5.1.2, §6.3); one that starts with
/// another AS was prepended by the monitored router when it encoded the route for BMP (FRR 8.4
/// does so for pre-policy routes, against RFC 7854 §4.6, which carries the route as received).
/// That AS is not counted (see [`prepended_by_router`]).
pub fn route_of(attrs: &Attributes, peer_asn: u32, local_as: Option<u32>) -> Option<Route> {
    // RFC 6793 §4.2.3: a 2-octet session carries the 4-octet path in AS4_PATH.
    let path: AsPath = attrs.effective_as_path()?;
    let mut route = route_of_path(&path, peer_asn);
    if prepended_by_router(&path, peer_asn, local_as) {
        route.as_distance = route.as_distance.saturating_sub(1);
        if route.as_distance == 0 {
            route.origin_as = peer_asn;
        }
    }
    Some(route)
}

/// Whether `path`'s first AS was put there by the monitored router rather than received from
/// the peer: it is the router's own AS (`local_as`, from the Peer Up's sent OPEN) and not the
/// peer's; or, when the Peer Up was not understood (FRR 8.4 may send one without the received
/// OPEN: "bmp: missing RX OPEN message"), the path starts with another AS than the peer's and
/// the peer's comes second.
pub fn prepended_by_router(path: &AsPath, peer_asn: u32, local_as: Option<u32>) -> bool {
    let first = path.get_collector_opt().map(|a| a.to_u32());
    match local_as {
        Some(l) => l != peer_asn && first == Some(l),
        None => {
            first.is_some_and(|f| f != peer_asn)
                && path
                    .to_u32_vec_opt(false)
                    .is_some_and(|v| v.get(1) == Some(&peer_asn))
        }
    }
}

/// The AS in an OPEN: the 4-octet AS capability's (RFC 6793 §3), else My Autonomous System.
fn open_asn(open: &bgpkit_parser::models::BgpOpenMessage) -> u32 {
    use bgpkit_parser::models::{CapabilityValue, ParamValue};
    open.opt_params
        .iter()
        .filter_map(|p| match &p.param_value {
            ParamValue::Capacities(caps) => Some(caps),
            ParamValue::Raw(_) => None,
        })
        .flatten()
        .find_map(|c| match &c.value {
            CapabilityValue::FourOctetAs(f) => Some(f.asn),
            _ => None,
        })
        .unwrap_or(open.asn.to_u32())
}

fn type_name(kind: u8) -> &'static str {
    MESSAGE_TYPES
        .get(usize::from(kind))
        .copied()
        .unwrap_or("unknown")
}

/// AS distance and origin of an AS path (an empty path: the peer's own AS, distance 0).
pub fn route_of_path(path: &AsPath, peer_asn: u32) -> Route {
    // RFC 4271 §9.1.2.2 a: an AS_SET counts as one AS; confederation segments count as none
    // (RFC 5065 §5.3).
    let len = path.route_len();
    let origin = path
        .get_origin_opt()
        .or_else(|| path.iter_origins().min())
        .map_or(peer_asn, |a| a.to_u32());
    Route {
        as_distance: u16::try_from(len).unwrap_or(u16::MAX),
        origin_as: origin,
    }
}

/// The length of the complete message at the start of `buf`, `None` if more bytes are
/// needed, or why the stream is broken (RFC 7854 §4.1).
pub fn frame(buf: &[u8]) -> Result<Option<usize>, BmpError> {
    let Some(&version) = buf.first() else {
        return Ok(None);
    };
    if version != VERSION {
        return Err(BmpError::Version(version));
    }
    let Some(len) = buf.get(1..5) else {
        return Ok(None);
    };
    let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]);
    if (len as usize) < HEADER_LEN || len as usize > MAX_MESSAGE {
        return Err(BmpError::Length(len));
    }
    Ok((buf.len() >= len as usize).then_some(len as usize))
}

/// A prefix in a route monitoring message, as the tests and the MRT import see it.
pub fn prefixes(update: &BgpUpdateMessage) -> (Vec<IpNet>, Vec<IpNet>) {
    let attrs = &update.attributes;
    let w = update
        .withdrawn_prefixes
        .iter()
        .chain(
            attrs
                .get_unreachable_nlri()
                .map_or(&[][..], |n| &n.prefixes),
        )
        .map(|p| p.prefix)
        .collect();
    let a = update
        .announced_prefixes
        .iter()
        .chain(attrs.get_reachable_nlri().map_or(&[][..], |n| &n.prefixes))
        .map(|p| p.prefix)
        .collect();
    (w, a)
}

#[cfg(test)]
mod tests;
