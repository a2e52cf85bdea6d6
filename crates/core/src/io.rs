//! The datagram vocabulary between engines and drivers.
//!
//! An engine never sends: it returns a [`Transmit`] saying what to send where, and the driver
//! (simulator or Linux sockets) sends it. Received packets come in as [`Received`], with the
//! IP-level facts a signaling protocol needs (arrival interface, TTL, router alert).

use core::fmt;
use std::net::IpAddr;

/// A local interface, numbered by the driver (the kernel's ifindex on Linux).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct IfIndex(pub u32);

impl fmt::Debug for IfIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "if{}", self.0)
    }
}

impl fmt::Display for IfIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// What carries a datagram above IP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    /// Directly over IP with this protocol number (RSVP is 46).
    Raw(u8),
    /// Over UDP between these ports.
    Udp {
        /// Source port.
        src_port: u16,
        /// Destination port.
        dst_port: u16,
    },
}

/// IP protocol number of RSVP (RFC 2205 §3.1).
pub const IPPROTO_RSVP: u8 = 46;

/// A datagram an engine wants sent.
#[derive(Clone, PartialEq, Eq)]
pub struct Transmit {
    /// IP source address; `None` lets the driver pick the outgoing interface's address.
    pub src: Option<IpAddr>,
    /// IP destination address (unicast or multicast).
    pub dst: IpAddr,
    /// Send out of this interface instead of consulting routing (RSVP sends Path per outgoing
    /// interface, and Resv to the previous hop over the interface the Path came in on).
    pub ifindex: Option<IfIndex>,
    /// The transport above IP.
    pub transport: Transport,
    /// Send with the IP Router Alert option carrying this value (RFC 2113 §2.1 for IPv4, RFC
    /// 2711 §2.1 for IPv6; the values' registries are RFC 5350's): 0 for RSVP over IPv4, 1 over
    /// IPv6; GIST uses the value of the NSLP signalled for (RFC 5971 §5.3.2).
    pub router_alert: Option<u16>,
    /// IP TTL / hop limit.
    pub ttl: u8,
    /// The transport payload (the RSVP message, the UDP payload).
    pub payload: Vec<u8>,
}

impl Transmit {
    /// The datagram as a neighbour on `ifindex` receives it (for drivers that connect engines
    /// back to back: tests, benchmarks, simulations); `src` when the transmit left it to the
    /// driver.
    pub fn received_on(&self, ifindex: IfIndex, src: IpAddr) -> Received<'_> {
        Received {
            src: self.src.unwrap_or(src),
            dst: self.dst,
            ifindex,
            transport: self.transport,
            router_alert: self.router_alert,
            ttl: self.ttl,
            payload: &self.payload,
        }
    }
}

impl fmt::Debug for Transmit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transmit")
            .field("src", &self.src)
            .field("dst", &self.dst)
            .field("ifindex", &self.ifindex)
            .field("transport", &self.transport)
            .field("router_alert", &self.router_alert)
            .field("ttl", &self.ttl)
            .field("len", &self.payload.len())
            .finish()
    }
}

/// A datagram handed to an engine by its driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received<'a> {
    /// IP source address.
    pub src: IpAddr,
    /// IP destination address.
    pub dst: IpAddr,
    /// The interface it arrived on.
    pub ifindex: IfIndex,
    /// The transport above IP.
    pub transport: Transport,
    /// The value of the IP Router Alert option, if the datagram carried one.
    pub router_alert: Option<u16>,
    /// The IP TTL / hop limit as received.
    pub ttl: u8,
    /// The transport payload.
    pub payload: &'a [u8],
}
