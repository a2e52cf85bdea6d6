//! Message-Routing-Information (RFC 5971 §5.8, A.3.1): path-coupled (A.3.1.1) and loose-end
//! (A.3.1.2); other methods are kept opaque so they survive a round trip.

use super::error::{ObjectFault, ValueFault};
use pathwise_core::wire::{Reader, Writer};
use std::net::{IpAddr, Ipv4Addr};

/// Message routing method numbers (IANA "GIST Message Routing Methods").
pub mod mrm {
    /// Path-coupled MRM (§5.8.1).
    pub const PATH_COUPLED: u8 = 0;
    /// Loose-end MRM (§5.8.2).
    pub const LOOSE_END: u8 = 1;
}

/// Path-coupled MRI (A.3.1.1): the flow a session signals for, and the direction of the message.
///
/// ```text
///  |    MRM-ID     |N|  Reserved   |IP-Ver |P|T|F|S|A|B|D|Reserved |
///  //                       Source Address                        //
///  //                      Destination Address                    //
///  | Source Prefix |  Dest Prefix  |   Protocol    | DS-field  |Rsv|
///  :       Reserved        |              Flow Label               :
///  :                              SPI                              :
///  :          Source Port          :       Destination Port        :
/// ```
///
/// Optional fields are `Option`s whose presence sets the flag: `protocol` ↔ P, `ds_field` ↔ T,
/// `flow_label` ↔ F (IPv6 only), `spi` ↔ S, `source_port` ↔ A, `dest_port` ↔ B. The port word
/// is present when A or B is set; the SPI word when S is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PathCoupledMri {
    /// N flag: the MRI was translated by a NAT (§7.2).
    pub nat: bool,
    /// Flow source address (IPv4 and IPv6 MRIs carry both addresses of one family).
    pub source: IpAddr,
    /// Flow destination address.
    pub destination: IpAddr,
    /// Source prefix length.
    pub source_prefix: u8,
    /// Destination prefix length.
    pub dest_prefix: u8,
    /// IP protocol (P flag).
    pub protocol: Option<u8>,
    /// DiffServ code point, 6 bits (T flag).
    pub ds_field: Option<u8>,
    /// IPv6 flow label, 20 bits (F flag).
    pub flow_label: Option<u32>,
    /// IPsec SPI (S flag).
    pub spi: Option<u32>,
    /// Source port (A flag).
    pub source_port: Option<u16>,
    /// Destination port (B flag).
    pub dest_port: Option<u16>,
    /// D flag clear: the message travels downstream (towards the flow destination); set: upstream.
    pub upstream: bool,
}

/// Loose-end MRI (A.3.1.2), used e.g. by the NAT/FW NSLP towards a flow's sender.
///
/// ```text
///  |    MRM-ID     |N|  Reserved   |IP-Ver |D|      Reserved       |
///  //                       Source Address                        //
///  //                      Destination Address                    //
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LooseEndMri {
    /// N flag.
    pub nat: bool,
    /// Source address.
    pub source: IpAddr,
    /// Destination address.
    pub destination: IpAddr,
    /// D flag.
    pub upstream: bool,
}

/// A Message-Routing-Information object.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mri {
    /// Path-coupled (MRM-ID 0).
    PathCoupled(PathCoupledMri),
    /// Loose-end (MRM-ID 1).
    LooseEnd(LooseEndMri),
    /// Any other method: the MRM-ID, the N flag and the bytes after the first 16 bits.
    Other {
        /// MRM-ID.
        mrm: u8,
        /// N flag.
        nat: bool,
        /// The method-specific bytes after the first word's first 16 bits (a whole number of
        /// words minus 2 bytes).
        data: Vec<u8>,
    },
}

fn ip_ver(a: IpAddr) -> u8 {
    if a.is_ipv4() { 4 } else { 6 }
}

fn read_addr(r: &mut Reader<'_>, ver: u8) -> Result<IpAddr, ObjectFault> {
    Ok(if ver == 4 {
        IpAddr::V4(r.ipv4()?)
    } else {
        IpAddr::V6(r.ipv6()?)
    })
}

/// Writes `a` in the family of `like`, mapping across families if a caller mixed them (a value
/// the wire cannot carry is written in a defined way rather than refused).
fn write_addr(w: &mut Writer<'_>, a: IpAddr, v6: bool) {
    match (a, v6) {
        (IpAddr::V4(x), false) => w.bytes(&x.octets()),
        (IpAddr::V6(x), true) => w.bytes(&x.octets()),
        (IpAddr::V4(x), true) => w.bytes(&x.to_ipv6_mapped().octets()),
        (IpAddr::V6(x), false) => {
            w.bytes(&x.to_ipv4_mapped().unwrap_or(Ipv4Addr::UNSPECIFIED).octets())
        }
    }
}

impl PathCoupledMri {
    /// A downstream MRI for the whole flow from `source` to `destination` (host prefixes), with
    /// no optional field.
    pub fn flow(source: IpAddr, destination: IpAddr) -> Self {
        let full = if destination.is_ipv4() { 32 } else { 128 };
        PathCoupledMri {
            nat: false,
            source,
            destination,
            source_prefix: full,
            dest_prefix: full,
            protocol: None,
            ds_field: None,
            flow_label: None,
            spi: None,
            source_port: None,
            dest_port: None,
            upstream: false,
        }
    }

    fn v6(&self) -> bool {
        self.destination.is_ipv6()
    }

    fn body_len(&self) -> usize {
        let addrs = if self.v6() { 32 } else { 8 };
        4 + addrs
            + 4
            + if self.flow_label.is_some() { 4 } else { 0 }
            + if self.spi.is_some() { 4 } else { 0 }
            + if self.source_port.is_some() || self.dest_port.is_some() {
                4
            } else {
                0
            }
    }

    /// Whether the flags this MRI would be sent with are a combination A.3.1.1 allows — the
    /// rule [`parse`](Mri::parse) applies on receipt: a flow label only in IPv6 ("F MUST NOT
    /// be set if IP-Ver is not 6"), ports and an SPI not together, and either only with the
    /// protocol ("The S-flag MUST be 0 if the P-flag is 0"; "If P=0, the A/B flags MUST both
    /// be zero").
    pub fn flags_allowed(&self) -> bool {
        let ports = self.source_port.is_some() || self.dest_port.is_some();
        let spi = self.spi.is_some();
        !(self.flow_label.is_some() && !self.v6()
            || spi && ports
            || (spi || ports) && self.protocol.is_none())
    }

    fn emit(&self, w: &mut Writer<'_>) {
        w.u8(mrm::PATH_COUPLED);
        w.u8(u8::from(self.nat) << 7);
        let ver = ip_ver(self.destination);
        w.u8((ver << 4)
            | (u8::from(self.protocol.is_some()) << 3)
            | (u8::from(self.ds_field.is_some()) << 2)
            | (u8::from(self.flow_label.is_some()) << 1)
            | u8::from(self.spi.is_some()));
        w.u8((u8::from(self.source_port.is_some()) << 7)
            | (u8::from(self.dest_port.is_some()) << 6)
            | (u8::from(self.upstream) << 5));
        write_addr(w, self.source, self.v6());
        write_addr(w, self.destination, self.v6());
        w.u8(self.source_prefix);
        w.u8(self.dest_prefix);
        w.u8(self.protocol.unwrap_or(0));
        w.u8(self.ds_field.unwrap_or(0) << 2);
        if let Some(fl) = self.flow_label {
            w.u32(fl & 0x000f_ffff);
        }
        if let Some(spi) = self.spi {
            w.u32(spi);
        }
        if self.source_port.is_some() || self.dest_port.is_some() {
            w.u16(self.source_port.unwrap_or(0));
            w.u16(self.dest_port.unwrap_or(0));
        }
    }

    /// The body after MRM-ID and the N byte.
    fn parse(nat: bool, r: &mut Reader<'_>, len: usize) -> Result<Self, ObjectFault> {
        let flags = r.u16()?;
        let ver = (flags >> 12) as u8;
        let (p, t, f, s) = (
            flags & 0x0800 != 0,
            flags & 0x0400 != 0,
            flags & 0x0200 != 0,
            flags & 0x0100 != 0,
        );
        let (a, b, d) = (
            flags & 0x0080 != 0,
            flags & 0x0040 != 0,
            flags & 0x0020 != 0,
        );
        if ver != 4 && ver != 6 {
            return Err(ObjectFault::at(ValueFault::ValueNotSupported, 2));
        }
        // A.3.1.1: a flow label only exists in IPv6; ports and an SPI are alternatives, and
        // both identify transport fields, so they need the protocol.
        if (f && ver == 4) || (s && (a || b)) || ((a || b || s) && !p) {
            return Err(ObjectFault::at(ValueFault::InvalidFlagFieldCombination, 2));
        }
        let source = read_addr(r, ver)?;
        let destination = read_addr(r, ver)?;
        let source_prefix = r.u8()?;
        let dest_prefix = r.u8()?;
        let max = if ver == 4 { 32 } else { 128 };
        if source_prefix > max || dest_prefix > max {
            return Err(ObjectFault::at(
                ValueFault::InvalidFlagFieldCombination,
                r.position() - 2,
            ));
        }
        let protocol = r.u8()?;
        let ds = r.u8()? >> 2;
        let flow_label = if f {
            Some(r.u32()? & 0x000f_ffff)
        } else {
            None
        };
        let spi = if s { Some(r.u32()?) } else { None };
        let (sp, dp) = if a || b { (r.u16()?, r.u16()?) } else { (0, 0) };
        if r.position() != len {
            return Err(ObjectFault::length(r.position()));
        }
        Ok(PathCoupledMri {
            nat,
            source,
            destination,
            source_prefix,
            dest_prefix,
            protocol: p.then_some(protocol),
            ds_field: t.then_some(ds),
            flow_label,
            spi,
            source_port: a.then_some(sp),
            dest_port: b.then_some(dp),
            upstream: d,
        })
    }
}

impl LooseEndMri {
    fn body_len(&self) -> usize {
        4 + if self.destination.is_ipv6() { 32 } else { 8 }
    }

    fn emit(&self, w: &mut Writer<'_>) {
        let v6 = self.destination.is_ipv6();
        w.u8(mrm::LOOSE_END);
        w.u8(u8::from(self.nat) << 7);
        w.u8((ip_ver(self.destination) << 4) | (u8::from(self.upstream) << 3));
        w.u8(0);
        write_addr(w, self.source, v6);
        write_addr(w, self.destination, v6);
    }

    fn parse(nat: bool, r: &mut Reader<'_>, len: usize) -> Result<Self, ObjectFault> {
        let b = r.u8()?;
        r.u8()?;
        let ver = b >> 4;
        if ver != 4 && ver != 6 {
            return Err(ObjectFault::at(ValueFault::ValueNotSupported, 2));
        }
        let source = read_addr(r, ver)?;
        let destination = read_addr(r, ver)?;
        if r.position() != len {
            return Err(ObjectFault::length(r.position()));
        }
        Ok(LooseEndMri {
            nat,
            source,
            destination,
            upstream: b & 0x08 != 0,
        })
    }
}

impl Mri {
    /// The MRM-ID.
    pub fn mrm(&self) -> u8 {
        match self {
            Mri::PathCoupled(_) => mrm::PATH_COUPLED,
            Mri::LooseEnd(_) => mrm::LOOSE_END,
            Mri::Other { mrm, .. } => *mrm,
        }
    }

    /// Parse an MRI object body (no TLV header).
    pub fn parse(body: &[u8]) -> Result<Self, ObjectFault> {
        let mut r = Reader::new(body);
        let m = r.u8()?;
        let nat = r.u8()? & 0x80 != 0;
        match m {
            mrm::PATH_COUPLED => {
                PathCoupledMri::parse(nat, &mut r, body.len()).map(Mri::PathCoupled)
            }
            mrm::LOOSE_END => LooseEndMri::parse(nat, &mut r, body.len()).map(Mri::LooseEnd),
            _ => Ok(Mri::Other {
                mrm: m,
                nat,
                data: r.rest().to_vec(),
            }),
        }
    }

    /// Body length in bytes (no TLV header).
    pub fn buffer_len(&self) -> usize {
        match self {
            Mri::PathCoupled(p) => p.body_len(),
            Mri::LooseEnd(l) => l.body_len(),
            Mri::Other { data, .. } => 2 + data.len(),
        }
    }

    /// Write the body (no TLV header); `buffer_len()` bytes.
    pub fn emit(&self, w: &mut Writer<'_>) {
        match self {
            Mri::PathCoupled(p) => p.emit(w),
            Mri::LooseEnd(l) => l.emit(w),
            Mri::Other { mrm, nat, data } => {
                w.u8(*mrm);
                w.u8(u8::from(*nat) << 7);
                w.bytes(data);
            }
        }
    }

    /// Whether the message travels upstream (D flag); `false` for unknown methods.
    pub fn is_upstream(&self) -> bool {
        match self {
            Mri::PathCoupled(p) => p.upstream,
            Mri::LooseEnd(l) => l.upstream,
            Mri::Other { .. } => false,
        }
    }

    /// The same MRI with the D flag set to `upstream` (a Response carries the Query's MRI
    /// inverted, §5.1).
    pub fn with_direction(&self, upstream: bool) -> Mri {
        let mut m = self.clone();
        match &mut m {
            Mri::PathCoupled(p) => p.upstream = upstream,
            Mri::LooseEnd(l) => l.upstream = upstream,
            Mri::Other { .. } => {}
        }
        m
    }

    /// The flow's destination address (where a path-coupled Query is sent), if the method has one.
    pub fn destination(&self) -> Option<IpAddr> {
        match self {
            Mri::PathCoupled(p) => Some(p.destination),
            Mri::LooseEnd(l) => Some(l.destination),
            Mri::Other { .. } => None,
        }
    }

    /// The flow's source address, if the method has one.
    pub fn source(&self) -> Option<IpAddr> {
        match self {
            Mri::PathCoupled(p) => Some(p.source),
            Mri::LooseEnd(l) => Some(l.source),
            Mri::Other { .. } => None,
        }
    }
}
