//! Guards against hostile input: MRI validation on receipt (RFC 5971 §5.8.1.1, §5.8.1.2,
//! §4.3.4, A.4.4.12), messages that come back to the node that sent them, and the rule that
//! nothing is ever sent towards a loopback, unspecified, multicast or own address as if it
//! were a next hop (§4.3.4: GIST "MUST ensure that the IP-layer TTL field and GIST hop count
//! are managed correctly to prevent message looping").

use super::GistEngine;
use super::handshake::Inbound;
use crate::wire::{Body, ErrorObject, Message, Mri, error_code, object_type};
use std::net::IpAddr;

/// Subcodes of MRI Validation Failure (A.4.4.12).
pub(crate) mod mri_subcode {
    /// "MRI Too Wild": not a single real node address, no single path.
    pub const TOO_WILD: u8 = 0;
    /// "IP Version Mismatch": the MRI's IP version is not the encapsulation's.
    pub const IP_VERSION_MISMATCH: u8 = 1;
    /// "Ingress Filter Failure": no such flow could arrive over an interface.
    pub const INGRESS_FILTER_FAILURE: u8 = 2;
}

/// What is wrong with an address that must be a real node address (§5.8.1.1: "The source
/// and destination addresses MUST be real node addresses"), as a drop reason and the A.4.4.12
/// subcode.
fn address_fault(a: IpAddr, wildcard_ok: bool) -> Option<(&'static str, u8)> {
    let a = a.to_canonical();
    match a {
        IpAddr::V4(v) if v.is_loopback() => Some((
            "mri_loopback",
            // A flow from or to 127/8 never crosses an interface (§5.8.1.2: "if the GIST
            // node can detect that no flow could arrive over the same interface as the
            // Query, it MUST be rejected").
            mri_subcode::INGRESS_FILTER_FAILURE,
        )),
        IpAddr::V6(v) if v.is_loopback() => {
            Some(("mri_loopback", mri_subcode::INGRESS_FILTER_FAILURE))
        }
        a if a.is_unspecified() && !wildcard_ok => Some(("mri_unspecified", mri_subcode::TOO_WILD)),
        // §1: path-coupled signalling "does not directly support multicast flows".
        a if a.is_multicast() => Some(("mri_multicast", mri_subcode::TOO_WILD)),
        IpAddr::V4(v) if v.is_broadcast() => Some(("mri_broadcast", mri_subcode::TOO_WILD)),
        _ => None,
    }
}

/// Why `a` cannot be a next hop: a reason to count, or `None`.
pub(crate) fn next_hop_fault(a: IpAddr) -> Option<&'static str> {
    let a = a.to_canonical();
    if a.is_loopback() {
        Some("send_to_loopback")
    } else if a.is_unspecified() {
        Some("send_to_unspecified")
    } else if a.is_multicast() || matches!(a, IpAddr::V4(v) if v.is_broadcast()) {
        Some("send_to_multicast")
    } else {
        None
    }
}

impl GistEngine {
    /// A path-coupled or loose-end MRI's fault, if it has one (an MRM this node does not
    /// understand is not checked, §4.3.4 case 3).
    pub(super) fn mri_fault(
        &self,
        mri: &Mri,
        ctx: &Inbound,
        query: bool,
    ) -> Option<(&'static str, u8)> {
        let (Some(src), Some(dst)) = (mri.source(), mri.destination()) else {
            return None;
        };
        // A wildcard source (0.0.0.0/0, ::/0) is address wildcarding (§5.8.1.1); a wildcard
        // destination is "too general to be forwarded along a unique path" (§4.3.4).
        let src_wild = matches!(mri, Mri::PathCoupled(p) if p.source_prefix == 0);
        if let Some(f) = address_fault(dst, false).or_else(|| address_fault(src, src_wild)) {
            return Some(f);
        }
        if src.is_ipv4() != dst.is_ipv4() {
            return Some(("mri_mixed_families", mri_subcode::IP_VERSION_MISMATCH));
        }
        // §7.4, A.4.4.12 subcode 1: a Q-mode Query's encapsulation has the MRI's IP version.
        if query && ctx.ma.is_none() && ctx.dst.to_canonical().is_ipv4() != dst.is_ipv4() {
            return Some(("mri_ip_version_mismatch", mri_subcode::IP_VERSION_MISMATCH));
        }
        None
    }

    /// Check a message before any processing: its MRI (§5.8.1, A.4.4.12), and that it did not
    /// come from this node itself (a loop, §4.3.4). `false`: dropped (and counted).
    pub(super) fn admit(&mut self, ctx: Inbound, msg: &Message) -> bool {
        // A D-mode datagram from one of this node's own addresses, or from loopback, has come
        // back to the node that sent it.
        if ctx.ma.is_none()
            && (self.local.contains(&ctx.src.to_canonical()) || ctx.src.is_loopback())
        {
            self.drop_msg("from_self");
            return false;
        }
        let nli = match &msg.body {
            Body::Query(q) => Some(&q.nli),
            Body::Response(r) => Some(&r.nli),
            Body::Confirm(c) => Some(&c.nli),
            Body::Data(d) => d.nli.as_ref(),
            Body::Error(e) => e.nli.as_ref(),
            Body::MaHello(_) => None,
        };
        if let Some(n) = nli {
            // Our own NLI: a message this node sent has come back (a routing loop).
            if n.peer_identity == self.identity || self.local.contains(&n.interface_address) {
                self.drop_msg("own_message");
                return false;
            }
            // An NLI naming an address nothing can be sent to would make this node answer
            // itself or nobody (§5.2.2: the interface address is where the peer is reached).
            if next_hop_fault(n.interface_address).is_some() {
                self.drop_msg("nli_address_invalid");
                return false;
            }
        }
        let query = matches!(msg.body, Body::Query(_));
        let Some(mri) = msg.mri().filter(|_| !matches!(msg.body, Body::Error(_))) else {
            return true;
        };
        let Some((reason, subcode)) = self.mri_fault(mri, &ctx, query) else {
            return true;
        };
        self.drop_msg(reason);
        // A.4.4.12: "The Object Value Info includes the MRI".
        let mut e = ErrorObject::new(error_code::MRI_VALIDATION_FAILURE, subcode, msg.header());
        e.info
            .push(super::data::object_value_info(object_type::MRI, mri));
        self.reply_error(ctx, msg, e);
        false
    }

    /// Whether a message may be sent to `dst`: never to a loopback, unspecified, multicast or
    /// own address (counted by reason when refused).
    pub(super) fn may_send_to(&mut self, dst: IpAddr) -> bool {
        let reason = next_hop_fault(dst).or_else(|| {
            self.local
                .contains(&dst.to_canonical())
                .then_some("send_to_self")
        });
        match reason {
            Some(r) => {
                self.drop_msg(r);
                false
            }
            None => true,
        }
    }
}
