//! The fixed objects (RFC 5971 A.3.2–A.3.10) other than the MRI.
//!
//! Every object has `parse(body)` (the body after the TLV header, checked against its format;
//! errors are [`ObjectFault`]s with the byte offset of the problem), `emit(w)` (the body only)
//! and `buffer_len()` (the body length). The message codec adds headers and padding.

use super::error::{ObjectFault, ValueFault};
use super::pad4;
use pathwise_core::wire::{Reader, Writer};
use smallvec::SmallVec;
use std::net::IpAddr;

/// The bytes of a short opaque field (a Peer Identity, a cookie), inline up to 32 bytes: this
/// node's own (16-byte identity, 12-byte Query-Cookie, 28-byte Responder-Cookie) and the
/// reference implementation's are parsed, copied and built without a heap allocation
/// (issue #21). Longer values spill to the heap.
pub type ShortBytes = SmallVec<[u8; 32]>;

/// Session-Identification (A.3.2): 128 bits chosen at random by the signalling application.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct SessionId(pub [u8; 16]);

impl SessionId {
    /// Body length.
    pub const LEN: usize = 16;

    /// Parse the body.
    pub fn parse(body: &[u8]) -> Result<Self, ObjectFault> {
        let a: [u8; 16] = Reader::new(body).array()?;
        if body.len() != Self::LEN {
            return Err(ObjectFault::length(Self::LEN));
        }
        Ok(SessionId(a))
    }
}

/// Network-Layer-Information (A.3.3): who the sending GIST node is and how to reach it.
///
/// ```text
///  |   PI-Length   |    IP-TTL     |IP-Ver |     Reserved          |
///  |                 Routing State Validity Time                   |
///  //                       Peer Identity                         //
///  //                     Interface Address                       //
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Nli {
    /// IP-TTL: the IP TTL the message was sent with (0: not reported), so the receiver can tell
    /// how many IP hops lie between the peers.
    pub ip_ttl: u8,
    /// Routing State Validity Time, milliseconds: how long the sender's routing state may be
    /// relied on without a refresh.
    pub rs_validity_ms: u32,
    /// Peer Identity: an opaque, stable identifier of the sending node (PI-Length bytes).
    pub peer_identity: ShortBytes,
    /// The sending node's interface address (the address to reply to); IP-Ver follows it.
    pub interface_address: IpAddr,
}

impl Nli {
    /// Parse the body.
    pub fn parse(body: &[u8]) -> Result<Self, ObjectFault> {
        let mut r = Reader::new(body);
        let pi_len = usize::from(r.u8()?);
        let ip_ttl = r.u8()?;
        let ver = r.u8()? >> 4;
        r.u8()?;
        let rs_validity_ms = r.u32()?;
        let pi = r.bytes(pad4(pi_len))?;
        let interface_address = match ver {
            4 => IpAddr::V4(r.ipv4()?),
            6 => IpAddr::V6(r.ipv6()?),
            _ => return Err(ObjectFault::at(ValueFault::ValueNotSupported, 2)),
        };
        if !r.is_empty() {
            return Err(ObjectFault::length(r.position()));
        }
        Ok(Nli {
            ip_ttl,
            rs_validity_ms,
            peer_identity: ShortBytes::from_slice(&pi[..pi_len]),
            interface_address,
        })
    }

    /// Body length.
    pub fn buffer_len(&self) -> usize {
        8 + pad4(self.pi_len())
            + if self.interface_address.is_ipv4() {
                4
            } else {
                16
            }
    }

    fn pi_len(&self) -> usize {
        self.peer_identity.len().min(255)
    }

    /// Write the body. A peer identity over 255 bytes is cut to 255.
    pub fn emit(&self, w: &mut Writer<'_>) {
        let n = self.pi_len();
        w.u8(n as u8);
        w.u8(self.ip_ttl);
        w.u8(if self.interface_address.is_ipv4() {
            4 << 4
        } else {
            6 << 4
        });
        w.u8(0);
        w.u32(self.rs_validity_ms);
        w.bytes(&self.peer_identity[..n]);
        w.zeros(pad4(n) - n);
        w.ip(self.interface_address);
    }
}

/// A Query-Cookie (A.3.6) or Responder-Cookie (A.3.7): opaque bytes, a whole number of words on
/// the wire (shorter values are padded with zeros).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Cookie(pub ShortBytes);

impl Cookie {
    /// Parse the body (any length, including empty).
    pub fn parse(body: &[u8]) -> Self {
        Cookie(ShortBytes::from_slice(body))
    }

    /// Body length (padding excluded).
    pub fn buffer_len(&self) -> usize {
        self.0.len()
    }

    /// Write the body.
    pub fn emit(&self, w: &mut Writer<'_>) {
        w.bytes(&self.0);
    }
}

/// MA-Protocol-IDs (IANA "GIST MA-Protocol-IDs").
pub mod ma_protocol {
    /// TCP opened in the forwards direction.
    pub const TCP: u8 = 1;
    /// TLS initiated in the forwards direction.
    pub const TLS: u8 = 2;
    /// SCTP (RFC 6084).
    pub const SCTP: u8 = 3;
    /// DTLS (RFC 6084).
    pub const DTLS: u8 = 4;
}

/// Stack-Proposal (A.3.4): profiles in preference order, each a stack of MA-Protocol-IDs
/// (e.g. `[TLS, TCP]`).
///
/// ```text
///  |  Prof-Count   |     Reserved                                  |
///  //                    Profile 1                                //
/// ```
/// A profile is a count byte, that many protocol IDs, padded to a word.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct StackProposal {
    /// The profiles.
    pub profiles: Vec<Vec<u8>>,
}

impl StackProposal {
    /// Parse the body. No profile at all is "Value Not Supported" and an empty profile "Empty
    /// List" (A.4.4.10).
    pub fn parse(body: &[u8]) -> Result<Self, ObjectFault> {
        let mut r = Reader::new(body);
        let count = r.u8()?;
        r.skip(3)?;
        if count == 0 {
            return Err(ObjectFault::at(ValueFault::ValueNotSupported, 0));
        }
        let mut profiles = Vec::with_capacity(usize::from(count).min(16));
        for _ in 0..count {
            let at = r.position();
            let n = usize::from(r.u8()?);
            if n == 0 {
                return Err(ObjectFault::at(ValueFault::EmptyList, at));
            }
            let ids = r.bytes(n)?;
            r.skip(pad4(1 + n) - 1 - n)?;
            profiles.push(ids.to_vec());
        }
        if !r.is_empty() {
            return Err(ObjectFault::length(r.position()));
        }
        Ok(StackProposal { profiles })
    }

    fn profiles(&self) -> impl Iterator<Item = &[u8]> {
        self.profiles
            .iter()
            .take(255)
            .map(|p| &p[..p.len().min(255)])
    }

    /// Body length.
    pub fn buffer_len(&self) -> usize {
        4 + self.profiles().map(|p| pad4(1 + p.len())).sum::<usize>()
    }

    /// Write the body (at most 255 profiles of at most 255 layers).
    pub fn emit(&self, w: &mut Writer<'_>) {
        w.u8(self.profiles.len().min(255) as u8);
        w.zeros(3);
        for p in self.profiles() {
            w.u8(p.len() as u8);
            w.bytes(p);
            w.zeros(pad4(1 + p.len()) - 1 - p.len());
        }
    }

    /// Whether some profile is exactly `[protocol]`.
    pub fn offers(&self, protocol: u8) -> bool {
        self.profiles.iter().any(|p| p.as_slice() == [protocol])
    }

    /// The number (1-based, as MA-protocol-options name it) of the first profile that is
    /// exactly `stack` (e.g. `[TLS, TCP]`, RFC 5971 §5.7.3).
    pub fn profile_number(&self, stack: &[u8]) -> Option<u8> {
        let i = self.profiles().position(|p| p == stack)?;
        u8::try_from(i + 1).ok()
    }
}

/// One MA-protocol-options entry of a Stack-Configuration-Data (A.3.5).
///
/// ```text
///  |MA-Protocol-ID |     Profile   |    Length     |D|  Reserved   |
///  //                       Options Data                          //
/// ```
/// `Length` counts the options bytes; they are padded to a word (the reference captures carry
/// a TCP port as Length 2 followed by 2 bytes of padding).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct MaProtocolOptions {
    /// MA-Protocol-ID.
    pub protocol: u8,
    /// The (1-based) profile of the Stack-Proposal this applies to.
    pub profile: u8,
    /// D flag: do not use this protocol for the reverse direction.
    pub d_flag: bool,
    /// Options data (for TCP: the listening port, 2 bytes).
    pub data: Vec<u8>,
}

impl MaProtocolOptions {
    /// TCP options carrying a listening port.
    pub fn tcp_port(profile: u8, port: u16) -> Self {
        MaProtocolOptions {
            protocol: ma_protocol::TCP,
            profile,
            d_flag: false,
            data: port.to_be_bytes().to_vec(),
        }
    }

    /// Forwards-TLS options (RFC 5971 §5.7.3: none; the port is in the profile's TCP options).
    pub fn tls(profile: u8) -> Self {
        MaProtocolOptions {
            protocol: ma_protocol::TLS,
            profile,
            d_flag: false,
            data: Vec::new(),
        }
    }

    /// The port, if the options data is one (TCP, TLS).
    pub fn port(&self) -> Option<u16> {
        match self.data.as_slice() {
            [a, b, ..] => Some(u16::from_be_bytes([*a, *b])),
            _ => None,
        }
    }

    fn data(&self) -> &[u8] {
        &self.data[..self.data.len().min(255)]
    }
}

/// Stack-Configuration-Data (A.3.5).
///
/// ```text
///  |   MPO-Count   |       Reserved                                |
///  |                        MA-Hold-Time                           |
///  //                   MA-protocol-options 1                     //
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct StackConfigData {
    /// MA-Hold-Time, milliseconds: how long the sender keeps an MA open without traffic.
    pub ma_hold_time_ms: u32,
    /// The MA-protocol-options entries.
    pub options: Vec<MaProtocolOptions>,
}

impl StackConfigData {
    /// Parse the body.
    pub fn parse(body: &[u8]) -> Result<Self, ObjectFault> {
        let mut r = Reader::new(body);
        let count = r.u8()?;
        r.skip(3)?;
        let ma_hold_time_ms = r.u32()?;
        let mut options = Vec::with_capacity(usize::from(count).min(16));
        for _ in 0..count {
            let protocol = r.u8()?;
            let profile = r.u8()?;
            let len = usize::from(r.u8()?);
            let d_flag = r.u8()? & 0x80 != 0;
            let data = r.bytes(len)?.to_vec();
            r.skip(pad4(len) - len)?;
            options.push(MaProtocolOptions {
                protocol,
                profile,
                d_flag,
                data,
            });
        }
        if !r.is_empty() {
            return Err(ObjectFault::length(r.position()));
        }
        Ok(StackConfigData {
            ma_hold_time_ms,
            options,
        })
    }

    /// Body length.
    pub fn buffer_len(&self) -> usize {
        8 + self
            .options
            .iter()
            .take(255)
            .map(|o| 4 + pad4(o.data().len()))
            .sum::<usize>()
    }

    /// Write the body (at most 255 entries).
    pub fn emit(&self, w: &mut Writer<'_>) {
        w.u8(self.options.len().min(255) as u8);
        w.zeros(3);
        w.u32(self.ma_hold_time_ms);
        for o in self.options.iter().take(255) {
            let d = o.data();
            w.u8(o.protocol);
            w.u8(o.profile);
            w.u8(d.len() as u8);
            w.u8(u8::from(o.d_flag) << 7);
            w.bytes(d);
            w.zeros(pad4(d.len()) - d.len());
        }
    }

    /// The options for `protocol`, if offered.
    pub fn find(&self, protocol: u8) -> Option<&MaProtocolOptions> {
        self.options.iter().find(|o| o.protocol == protocol)
    }

    /// The options for `protocol` within profile number `profile`.
    pub fn find_in(&self, protocol: u8, profile: u8) -> Option<&MaProtocolOptions> {
        self.options
            .iter()
            .find(|o| o.protocol == protocol && o.profile == profile)
    }
}

/// An object of a type this codec does not know, kept because its flags say AB=10 (Forward):
/// it travels unchanged in any message forwarded as a result (§5.2).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UnknownObject {
    /// Object type.
    pub object_type: u16,
    /// The body, a whole number of words.
    pub body: Vec<u8>,
}
