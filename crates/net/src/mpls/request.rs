//! The rtnetlink request for one [`LfibChange`], built without a socket so that its bytes can be
//! checked (and fuzzed) on any machine.
//!
//! Incoming-label entries are `AF_MPLS` routes (Linux `net/mpls/af_mpls.c`,
//! `rtm_to_route_config`): the kernel insists on `rtm_dst_len` 20, table main, scope universe,
//! type unicast, no flags, and rejects any attribute besides `RTA_DST`, `RTA_VIA`, `RTA_NEWDST`,
//! `RTA_OIF`, `RTA_MULTIPATH` and `RTA_TTL_PROPAGATE`. Ingress bindings are IPv4/IPv6 host routes
//! with a lightweight tunnel (`include/uapi/linux/lwtunnel.h`, `mpls_iptunnel.h`):
//! `RTA_ENCAP_TYPE` = `LWTUNNEL_ENCAP_MPLS` and `RTA_ENCAP` { `MPLS_IPTUNNEL_DST` }.
//! Label stack entries are RFC 3032 §2.1 words in network byte order, TTL and TC zero (the
//! kernel refuses others), bottom of stack set.

use netlink_packet_core::{
    NLM_F_ACK, NLM_F_CREATE, NLM_F_REPLACE, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage,
    NetlinkPayload,
};
use netlink_packet_route::route::{
    MplsLabel, RouteAddress, RouteAttribute, RouteHeader, RouteLwEnCapType, RouteLwTunnelEncap,
    RouteMessage, RouteMplsIpTunnel, RouteProtocol, RouteScope, RouteType, RouteVia,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use pathwise_core::mpls::{
    DataplaneError, FtnEntry, IMPLICIT_NULL, LabelOp, LfibChange, LfibEntry, is_allocatable,
    is_valid_out_label,
};
use std::net::IpAddr;

/// `rtm_protocol` of every route pathwise installs: not taken in iproute2's `rt_protos`, and
/// RSVP's IP protocol number, so `ip route show proto 46` lists exactly pathwise's routes.
pub const RTPROT_PATHWISE: u8 = 46;

/// Bits of an MPLS route's destination: one 20-bit label.
const MPLS_DST_LEN: u8 = 20;

/// The rtnetlink request that carries `change` into the kernel, with sequence number `seq`.
///
/// Installs are create-or-replace and ask for an acknowledgement, as do removals. An implicit
/// null (label 3, RFC 3032 §2.1) never goes on the wire: swapping to it is a pop, pushing it is
/// pushing nothing. Other labels the kernel would refuse (reserved incoming labels, more than
/// 20 bits) and an IPv6 route through an IPv4 next hop are refused here, with the reason.
pub fn request(change: &LfibChange, seq: u32) -> Result<Vec<u8>, DataplaneError> {
    let (msg, flags) = match *change {
        LfibChange::Install(e) => (
            RouteNetlinkMessage::NewRoute(label_route(e.in_label, Some(&e))?),
            NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE,
        ),
        LfibChange::Remove(label) => (
            RouteNetlinkMessage::DelRoute(label_route(label, None)?),
            NLM_F_REQUEST | NLM_F_ACK,
        ),
        LfibChange::InstallFtn(f) => (
            RouteNetlinkMessage::NewRoute(host_route(f.dest, Some(&f))?),
            NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE,
        ),
        LfibChange::RemoveFtn { dest, .. } => (
            RouteNetlinkMessage::DelRoute(host_route(dest, None)?),
            NLM_F_REQUEST | NLM_F_ACK,
        ),
    };
    let mut header = NetlinkHeader::default();
    header.flags = flags;
    header.sequence_number = seq;
    let mut msg = NetlinkMessage::new(header, NetlinkPayload::from(msg));
    msg.finalize();
    let mut bytes = vec![0; msg.buffer_len()];
    msg.serialize(&mut bytes);
    Ok(bytes)
}

/// A one-entry label stack: the kernel wants TTL and TC zero and bottom of stack set.
fn stack_entry(label: u32) -> MplsLabel {
    MplsLabel {
        label,
        traffic_class: 0,
        bottom_of_stack: true,
        ttl: 0,
    }
}

/// The outgoing label to write, if any: `None` for implicit null.
fn out_label(label: u32) -> Result<Option<u32>, DataplaneError> {
    if !is_valid_out_label(label) {
        return Err(DataplaneError::Refused(format!(
            "{label} is not a label to send (a 20-bit label, not reserved unless a null label)"
        )));
    }
    Ok((label != IMPLICIT_NULL).then_some(label))
}

fn header(family: AddressFamily, dst_len: u8) -> RouteHeader {
    RouteHeader {
        address_family: family,
        destination_prefix_length: dst_len,
        table: RouteHeader::RT_TABLE_MAIN,
        protocol: RouteProtocol::from(RTPROT_PATHWISE),
        scope: RouteScope::Universe,
        kind: RouteType::Unicast,
        ..RouteHeader::default()
    }
}

/// The `AF_MPLS` route of `in_label`; with `entry`, what it does (for `RTM_NEWROUTE`).
fn label_route(in_label: u32, entry: Option<&LfibEntry>) -> Result<RouteMessage, DataplaneError> {
    // The kernel reserves labels 0–15 as incoming labels too (mpls_label_ok).
    if !is_allocatable(in_label) {
        return Err(DataplaneError::Refused(format!(
            "{in_label} is not an incoming label (16 to 1048575)"
        )));
    }
    let mut m = RouteMessage::default();
    m.header = header(AddressFamily::Mpls, MPLS_DST_LEN);
    m.attributes
        .push(RouteAttribute::Destination(RouteAddress::Mpls(
            stack_entry(in_label),
        )));
    if let Some(e) = entry {
        m.attributes
            .push(RouteAttribute::Via(RouteVia::from(e.next_hop.addr)));
        if let LabelOp::Swap(out) = e.op
            && let Some(out) = out_label(out)?
        {
            m.attributes
                .push(RouteAttribute::NewDestination(vec![stack_entry(out)]));
        }
        m.attributes.push(RouteAttribute::Oif(e.next_hop.ifindex.0));
    }
    Ok(m)
}

/// The host route to `dest`; with `ftn`, where it goes and what it pushes (for `RTM_NEWROUTE`).
fn host_route(dest: IpAddr, ftn: Option<&FtnEntry>) -> Result<RouteMessage, DataplaneError> {
    let (family, len) = match dest {
        IpAddr::V4(_) => (AddressFamily::Inet, 32),
        IpAddr::V6(_) => (AddressFamily::Inet6, 128),
    };
    let mut m = RouteMessage::default();
    m.header = header(family, len);
    m.attributes
        .push(RouteAttribute::Destination(RouteAddress::from(dest)));
    let Some(f) = ftn else {
        return Ok(m);
    };
    let gateway = f.next_hop.addr;
    m.attributes.push(match (dest, gateway) {
        (IpAddr::V4(_), IpAddr::V4(_)) | (IpAddr::V6(_), IpAddr::V6(_)) => {
            RouteAttribute::Gateway(RouteAddress::from(gateway))
        }
        // IPv4 through an IPv6 neighbour takes RTA_VIA (Linux 5.2, RFC 5549 style); IPv6 has no
        // IPv4 next hops.
        (IpAddr::V4(_), IpAddr::V6(_)) => RouteAttribute::Via(RouteVia::from(gateway)),
        (IpAddr::V6(_), IpAddr::V4(_)) => {
            return Err(DataplaneError::Refused(format!(
                "an IPv6 route ({dest}) cannot have an IPv4 next hop ({gateway})"
            )));
        }
    });
    m.attributes.push(RouteAttribute::Oif(f.next_hop.ifindex.0));
    if let Some(push) = f.push
        && let Some(push) = out_label(push)?
    {
        m.attributes
            .push(RouteAttribute::EncapType(RouteLwEnCapType::Mpls));
        m.attributes
            .push(RouteAttribute::Encap(vec![RouteLwTunnelEncap::Mpls(
                RouteMplsIpTunnel::Destination(vec![stack_entry(push)]),
            )]));
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_core::NetlinkMessage;
    use pathwise_core::io::IfIndex;
    use pathwise_core::mpls::NextHop;

    // Hand-written layouts (linux/netlink.h, linux/rtnetlink.h): the numbers below are the
    // kernel ABI, not the builder's constants.
    const RTM_NEWROUTE: u16 = 24;
    const RTM_DELROUTE: u16 = 25;
    const F_REQUEST_ACK: u16 = 0x1 | 0x4;
    const F_CREATE_REPLACE: u16 = 0x400 | 0x100;
    const AF_INET: u8 = 2;
    const AF_INET6: u8 = 10;
    const AF_MPLS: u8 = 28;

    fn hop(addr: &str, ifindex: u32) -> NextHop {
        NextHop {
            ifindex: IfIndex(ifindex),
            addr: addr.parse().unwrap(),
        }
    }

    /// `nlmsghdr` (16 bytes, host order) then `rtmsg` (12 bytes).
    fn headers(len: u32, kind: u16, flags: u16, seq: u32, family: u8, dst_len: u8) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(len.to_ne_bytes());
        b.extend(kind.to_ne_bytes());
        b.extend(flags.to_ne_bytes());
        b.extend(seq.to_ne_bytes());
        b.extend(0u32.to_ne_bytes()); // nlmsg_pid: the kernel
        // family, dst_len, src_len, tos, table main, protocol, scope universe, type unicast
        b.extend([family, dst_len, 0, 0, 254, 46, 0, 1]);
        b.extend(0u32.to_ne_bytes()); // rtm_flags
        b
    }

    /// One `rtattr`: length (header + value, unpadded), type, value, padding to 4.
    fn attr(kind: u16, value: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend((4 + value.len() as u16).to_ne_bytes());
        b.extend(kind.to_ne_bytes());
        b.extend(value);
        b.resize(b.len().next_multiple_of(4), 0);
        b
    }

    fn rtvia(family: u16, addr: &[u8]) -> Vec<u8> {
        let mut v = family.to_ne_bytes().to_vec();
        v.extend(addr);
        v
    }

    #[test]
    fn swap_is_an_mpls_route_with_via_newdst_and_oif() {
        let e = LfibEntry {
            in_label: 100,
            op: LabelOp::Swap(200),
            next_hop: hop("10.0.0.2", 3),
        };
        let got = request(&LfibChange::Install(e), 7).unwrap();
        // 100 << 12 | S = 0x00064100; 200 << 12 | S = 0x000c8100.
        let mut want = headers(
            64,
            RTM_NEWROUTE,
            F_REQUEST_ACK | F_CREATE_REPLACE,
            7,
            AF_MPLS,
            20,
        );
        want.extend(attr(1, &[0x00, 0x06, 0x41, 0x00])); // RTA_DST
        want.extend(attr(18, &rtvia(2, &[10, 0, 0, 2]))); // RTA_VIA, 10 bytes + 2 padding
        want.extend(attr(19, &[0x00, 0x0c, 0x81, 0x00])); // RTA_NEWDST
        want.extend(attr(4, &3u32.to_ne_bytes())); // RTA_OIF
        assert_eq!(want.len(), 64);
        assert_eq!(got, want);
    }

    #[test]
    fn pop_has_no_newdst_and_implicit_null_swap_is_a_pop() {
        let pop = LfibEntry {
            in_label: 1_048_575,
            op: LabelOp::Pop,
            next_hop: hop("10.0.0.2", 3),
        };
        let mut want = headers(
            56,
            RTM_NEWROUTE,
            F_REQUEST_ACK | F_CREATE_REPLACE,
            1,
            AF_MPLS,
            20,
        );
        // The highest label: 0xfffff << 12 | S.
        want.extend(attr(1, &[0xff, 0xff, 0xf1, 0x00]));
        want.extend(attr(18, &rtvia(2, &[10, 0, 0, 2])));
        want.extend(attr(4, &3u32.to_ne_bytes()));
        assert_eq!(request(&LfibChange::Install(pop), 1).unwrap(), want);
        let to_implicit_null = LfibEntry {
            op: LabelOp::Swap(IMPLICIT_NULL),
            ..pop
        };
        assert_eq!(
            request(&LfibChange::Install(to_implicit_null), 1).unwrap(),
            want
        );
    }

    #[test]
    fn explicit_null_is_swapped_to() {
        let e = LfibEntry {
            in_label: 16,
            op: LabelOp::Swap(0),
            next_hop: hop("10.0.0.2", 3),
        };
        let got = request(&LfibChange::Install(e), 1).unwrap();
        assert_eq!(&got[28..36], &attr(1, &[0x00, 0x01, 0x01, 0x00])[..]);
        // RTA_NEWDST carrying label 0 with only bottom of stack set.
        assert_eq!(&got[48..56], &attr(19, &[0, 0, 1, 0])[..]);
    }

    #[test]
    fn ipv6_via_carries_af_inet6_and_16_bytes() {
        let e = LfibEntry {
            in_label: 0x12345,
            op: LabelOp::Swap(17),
            next_hop: hop("fe80::1", 9),
        };
        let got = request(&LfibChange::Install(e), 0xdead_beef).unwrap();
        let mut want = headers(
            76,
            RTM_NEWROUTE,
            F_REQUEST_ACK | F_CREATE_REPLACE,
            0xdead_beef,
            AF_MPLS,
            20,
        );
        want.extend(attr(1, &[0x12, 0x34, 0x51, 0x00]));
        let mut fe80 = [0; 16];
        fe80[..2].copy_from_slice(&[0xfe, 0x80]);
        fe80[15] = 1;
        want.extend(attr(18, &rtvia(10, &fe80))); // 4 + 2 + 16 = 22, padded to 24
        want.extend(attr(19, &[0x00, 0x01, 0x11, 0x00]));
        want.extend(attr(4, &9u32.to_ne_bytes()));
        assert_eq!(got, want);
    }

    #[test]
    fn remove_names_only_the_label() {
        let got = request(&LfibChange::Remove(100), 5).unwrap();
        let mut want = headers(36, RTM_DELROUTE, F_REQUEST_ACK, 5, AF_MPLS, 20);
        want.extend(attr(1, &[0x00, 0x06, 0x41, 0x00]));
        assert_eq!(got, want);
    }

    #[test]
    fn ftn_pushes_a_label_with_an_mpls_lwtunnel() {
        let f = FtnEntry {
            dest: "10.9.9.9".parse().unwrap(),
            tunnel_id: 7,
            push: Some(300),
            next_hop: hop("10.0.0.2", 3),
        };
        let got = request(&LfibChange::InstallFtn(f), 2).unwrap();
        let mut want = headers(
            72,
            RTM_NEWROUTE,
            F_REQUEST_ACK | F_CREATE_REPLACE,
            2,
            AF_INET,
            32,
        );
        want.extend(attr(1, &[10, 9, 9, 9])); // RTA_DST
        want.extend(attr(5, &[10, 0, 0, 2])); // RTA_GATEWAY
        want.extend(attr(4, &3u32.to_ne_bytes())); // RTA_OIF
        want.extend(attr(21, &1u16.to_ne_bytes())); // RTA_ENCAP_TYPE = LWTUNNEL_ENCAP_MPLS
        // RTA_ENCAP { MPLS_IPTUNNEL_DST = 300 << 12 | S = 0x0012c100 }
        want.extend(attr(22, &attr(1, &[0x00, 0x12, 0xc1, 0x00])));
        assert_eq!(got, want);
    }

    #[test]
    fn ftn_without_push_is_a_plain_host_route() {
        let f = FtnEntry {
            dest: "2001:db8::9".parse().unwrap(),
            tunnel_id: 7,
            push: None,
            next_hop: hop("2001:db8:1::2", 4),
        };
        let got = request(&LfibChange::InstallFtn(f), 3).unwrap();
        let mut want = headers(
            76,
            RTM_NEWROUTE,
            F_REQUEST_ACK | F_CREATE_REPLACE,
            3,
            AF_INET6,
            128,
        );
        let dest: std::net::Ipv6Addr = "2001:db8::9".parse().unwrap();
        let gw: std::net::Ipv6Addr = "2001:db8:1::2".parse().unwrap();
        want.extend(attr(1, &dest.octets()));
        want.extend(attr(5, &gw.octets()));
        want.extend(attr(4, &4u32.to_ne_bytes()));
        assert_eq!(got, want);
        // Pushing implicit null is pushing nothing.
        let null = FtnEntry {
            push: Some(IMPLICIT_NULL),
            ..f
        };
        assert_eq!(request(&LfibChange::InstallFtn(null), 3).unwrap(), want);
    }

    #[test]
    fn ipv4_ftn_through_an_ipv6_neighbour_uses_via() {
        let f = FtnEntry {
            dest: "10.9.9.9".parse().unwrap(),
            tunnel_id: 1,
            push: None,
            next_hop: hop("fe80::2", 4),
        };
        let got = request(&LfibChange::InstallFtn(f), 3).unwrap();
        let mut fe80 = [0; 16];
        fe80[..2].copy_from_slice(&[0xfe, 0x80]);
        fe80[15] = 2;
        assert_eq!(&got[36..60], &attr(18, &rtvia(10, &fe80))[..]);
        let back = FtnEntry {
            dest: "2001:db8::9".parse().unwrap(),
            next_hop: hop("10.0.0.2", 4),
            ..f
        };
        assert!(matches!(
            request(&LfibChange::InstallFtn(back), 3),
            Err(DataplaneError::Refused(_))
        ));
    }

    #[test]
    fn remove_ftn_names_only_the_host_route() {
        let change = LfibChange::RemoveFtn {
            dest: "10.9.9.9".parse().unwrap(),
            tunnel_id: 7,
        };
        let mut want = headers(36, RTM_DELROUTE, F_REQUEST_ACK, 9, AF_INET, 32);
        want.extend(attr(1, &[10, 9, 9, 9]));
        assert_eq!(request(&change, 9).unwrap(), want);
    }

    #[test]
    fn labels_the_kernel_would_refuse_are_refused_here() {
        let e = LfibEntry {
            in_label: 15,
            op: LabelOp::Pop,
            next_hop: hop("10.0.0.2", 3),
        };
        for bad in [
            LfibChange::Install(e),
            LfibChange::Remove(1 << 20),
            LfibChange::Install(LfibEntry {
                in_label: 100,
                op: LabelOp::Swap(1 << 20),
                ..e
            }),
            LfibChange::Install(LfibEntry {
                in_label: 100,
                op: LabelOp::Swap(7),
                ..e
            }),
            LfibChange::InstallFtn(FtnEntry {
                dest: "10.9.9.9".parse().unwrap(),
                tunnel_id: 1,
                push: Some(u32::MAX),
                next_hop: e.next_hop,
            }),
        ] {
            assert!(
                matches!(request(&bad, 1), Err(DataplaneError::Refused(_))),
                "{bad:?}"
            );
        }
    }

    /// What the kernel would read from a request, through netlink-packet-route's parser.
    #[derive(Debug, PartialEq)]
    struct Parsed {
        new: bool,
        family: AddressFamily,
        dst: Option<RouteAddress>,
        via: Option<IpAddr>,
        out: Vec<u32>,
        oif: Option<u32>,
    }

    fn parse(bytes: &[u8]) -> Parsed {
        let msg = NetlinkMessage::<RouteNetlinkMessage>::deserialize(bytes).expect("parses");
        assert_eq!(msg.header.length as usize, bytes.len());
        let (new, m) = match msg.payload {
            NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewRoute(m)) => (true, m),
            NetlinkPayload::InnerMessage(RouteNetlinkMessage::DelRoute(m)) => (false, m),
            other => panic!("not a route message: {other:?}"),
        };
        let mut p = Parsed {
            new,
            family: m.header.address_family,
            dst: None,
            via: None,
            out: Vec::new(),
            oif: None,
        };
        for a in m.attributes {
            match a {
                RouteAttribute::Destination(d) => p.dst = Some(d),
                RouteAttribute::Via(RouteVia::Inet(a)) => p.via = Some(a.into()),
                RouteAttribute::Via(RouteVia::Inet6(a)) => p.via = Some(a.into()),
                RouteAttribute::Gateway(RouteAddress::Inet(a)) => p.via = Some(a.into()),
                RouteAttribute::Gateway(RouteAddress::Inet6(a)) => p.via = Some(a.into()),
                RouteAttribute::NewDestination(l) => p.out.extend(l.iter().map(|l| l.label)),
                RouteAttribute::Encap(e) => {
                    for e in e {
                        let RouteLwTunnelEncap::Mpls(RouteMplsIpTunnel::Destination(l)) = e else {
                            panic!("unexpected encap {e:?}");
                        };
                        p.out.extend(l.iter().map(|l| l.label));
                    }
                }
                RouteAttribute::Oif(i) => p.oif = Some(i),
                RouteAttribute::EncapType(RouteLwEnCapType::Mpls) => {}
                other => panic!("unexpected attribute {other:?}"),
            }
        }
        p
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;
        use std::net::{Ipv4Addr, Ipv6Addr};

        fn addr() -> impl Strategy<Value = IpAddr> {
            prop_oneof![
                any::<u32>().prop_map(|a| IpAddr::V4(Ipv4Addr::from(a))),
                any::<u128>().prop_map(|a| IpAddr::V6(Ipv6Addr::from(a))),
            ]
        }

        fn out_label() -> impl Strategy<Value = u32> {
            prop_oneof![
                Just(0u32),
                Just(2),
                Just(IMPLICIT_NULL),
                16u32..=pathwise_core::mpls::MAX_LABEL
            ]
        }

        fn next_hop() -> impl Strategy<Value = NextHop> {
            (addr(), any::<u32>()).prop_map(|(addr, i)| NextHop {
                ifindex: IfIndex(i),
                addr,
            })
        }

        fn change() -> impl Strategy<Value = LfibChange> {
            let in_label = 16u32..=pathwise_core::mpls::MAX_LABEL;
            let op = prop_oneof![Just(LabelOp::Pop), out_label().prop_map(LabelOp::Swap)];
            prop_oneof![
                (in_label.clone(), op, next_hop()).prop_map(|(in_label, op, next_hop)| {
                    LfibChange::Install(LfibEntry {
                        in_label,
                        op,
                        next_hop,
                    })
                }),
                in_label.prop_map(LfibChange::Remove),
                (
                    addr(),
                    any::<u16>(),
                    proptest::option::of(out_label()),
                    next_hop()
                )
                    .prop_map(|(dest, tunnel_id, push, next_hop)| {
                        LfibChange::InstallFtn(FtnEntry {
                            dest,
                            tunnel_id,
                            push,
                            next_hop,
                        })
                    }),
                (addr(), any::<u16>())
                    .prop_map(|(dest, tunnel_id)| LfibChange::RemoveFtn { dest, tunnel_id }),
            ]
        }

        /// What `change` should read as once parsed back.
        fn expected(change: &LfibChange) -> Option<Parsed> {
            let mpls = |l| Some(RouteAddress::Mpls(stack_entry(l)));
            let sent = |l: Option<u32>| l.filter(|&l| l != IMPLICIT_NULL).into_iter().collect();
            let family = |a: IpAddr| match a {
                IpAddr::V4(_) => AddressFamily::Inet,
                IpAddr::V6(_) => AddressFamily::Inet6,
            };
            Some(match *change {
                LfibChange::Install(e) => Parsed {
                    new: true,
                    family: AddressFamily::Mpls,
                    dst: mpls(e.in_label),
                    via: Some(e.next_hop.addr),
                    out: sent(match e.op {
                        LabelOp::Swap(l) => Some(l),
                        LabelOp::Pop => None,
                    }),
                    oif: Some(e.next_hop.ifindex.0),
                },
                LfibChange::Remove(l) => Parsed {
                    new: false,
                    family: AddressFamily::Mpls,
                    dst: mpls(l),
                    via: None,
                    out: Vec::new(),
                    oif: None,
                },
                LfibChange::InstallFtn(f) => {
                    if f.dest.is_ipv6() && f.next_hop.addr.is_ipv4() {
                        return None;
                    }
                    Parsed {
                        new: true,
                        family: family(f.dest),
                        dst: Some(f.dest.into()),
                        via: Some(f.next_hop.addr),
                        out: sent(f.push),
                        oif: Some(f.next_hop.ifindex.0),
                    }
                }
                LfibChange::RemoveFtn { dest, .. } => Parsed {
                    new: false,
                    family: family(dest),
                    dst: Some(dest.into()),
                    via: None,
                    out: Vec::new(),
                    oif: None,
                },
            })
        }

        proptest! {
            #[test]
            fn every_change_parses_back_as_built(change in change(), seq in any::<u32>()) {
                match (request(&change, seq), expected(&change)) {
                    (Ok(bytes), Some(want)) => {
                        prop_assert_eq!(bytes.len() % 4, 0);
                        prop_assert_eq!(&bytes[8..12], &seq.to_ne_bytes()[..]);
                        prop_assert_eq!(parse(&bytes), want);
                    }
                    (Err(DataplaneError::Refused(_)), None) => {}
                    (got, want) => prop_assert!(false, "{:?} gave {:?}, expected {:?}", change, got, want),
                }
            }
        }
    }
}
