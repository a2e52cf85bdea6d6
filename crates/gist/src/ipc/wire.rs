//! Frames of the IPC NSLP API: length-prefixed, versioned, big-endian.
//!
//! ```text
//!  0: length (32): bytes after this field, 2 ..= MAX_FRAME
//!  4: version (8) = 4 (2 and 3 accepted) | kind (8)
//!  6: body (per kind)
//! ```
//!
//! Bodies use a few shapes: an address is family (8: 0 none, 4, 6) and 0/4/16 bytes; an MRI is
//! its GIST object body (RFC 5971 §A.3.1) behind a 16-bit length; NSLP data is 32-bit length and
//! bytes; an optional number is a presence byte (0/1) and the number.
//!
//! No-panic contract: [`Frame::decode`] reads only through [`Reader`], whose every accessor checks
//! the length first; any byte string yields a frame, "need more bytes", or an [`IpcError`].
//! [`Frame::encode`] writes into a growing `Vec`, so it cannot fail.
//!
//! Version 2 pipelines SendMessage: the client names each message with its own handle and
//! GIST does not answer; a refusal comes back as a MessageStatus with
//! [`DeliveryError::Refused`]. Version 1's SendResult frame (kind 0x82) is gone.
//!
//! Version 3 adds the dispatch report of RFC 5971 B.3: a Send carries a flags byte after its
//! transfer attributes (bit 0: [`SendMessage::report_dispatch`]), and a Status an optional
//! transfer-attributes byte after its error (the attributes GIST used for a dispatched
//! message). Everything else is as in version 2, and version 2 frames still decode (without
//! those fields); [`Frame::encode_version`] writes either, so GIST answers a version 2 client
//! in its own version.
//!
//! Version 4 adds explicit routing (RFC 5971 §7.1.4, B.1 SII-Handle): a Recv's
//! routing-state-check byte becomes a flags byte (bit 0: Routing-State-Check, bit 1:
//! [`RecvMessage::explicitly_routed`]), and a Status's error may be 8,
//! [`DeliveryError::UnknownSiiHandle`]. To a version 2 or 3 client the flag is left out and
//! that error is written as 2, [`DeliveryError::NoPeer`] (which it is closest to: no peer to
//! deliver to). A Send's SII-Handle field was there from version 1.

use crate::nslp::{
    ApiError, DeliveryError, Direction, MessageHandle, MessageStatus, NetworkNotification,
    NotificationKind, RecvMessage, RoutingDecision, SendMessage, SiiHandle, TransferAttributes,
};
use crate::wire::{Mri, SessionId};
use pathwise_core::io::IfIndex;
use pathwise_core::time::{Duration, Instant};
use pathwise_core::wire::{Reader, Truncated, Writer};
use std::net::IpAddr;

/// Protocol version of this codec.
pub const VERSION: u8 = 4;
/// The oldest version still decoded and written ([`Frame::encode_version`]).
pub const MIN_VERSION: u8 = 2;
/// Largest frame (after the length field): NSLP data is bounded by GIST's own message size
/// (64 KiB objects), so 1 MiB leaves ample room and bounds what a client makes us buffer.
pub const MAX_FRAME: usize = 1 << 20;

mod kind {
    pub const REGISTER: u8 = 0x01;
    pub const SEND: u8 = 0x02;
    pub const SET_LIFETIME: u8 = 0x03;
    pub const INVALIDATE: u8 = 0x04;
    pub const DECISION: u8 = 0x05;
    pub const REGISTERED: u8 = 0x81;
    // 0x82: version 1's SendResult, not to be reused.
    pub const RECV: u8 = 0x83;
    pub const STATUS: u8 = 0x84;
    pub const NOTIFY: u8 = 0x85;
    pub const REFUSED: u8 = 0x86;
}

/// Why bytes are not a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IpcError {
    /// The length field is out of range.
    #[error("frame length {0} out of range")]
    BadLength(u32),
    /// Another protocol version.
    #[error("protocol version {0} (this side speaks {MIN_VERSION} to {VERSION})")]
    BadVersion(u8),
    /// Unknown frame kind.
    #[error("unknown frame kind {0:#04x}")]
    UnknownKind(u8),
    /// A field ended early.
    #[error("frame body truncated")]
    Truncated,
    /// Bytes after the body.
    #[error("{0} bytes after the frame body")]
    Trailing(usize),
    /// A field holds a value no encoder writes.
    #[error("bad {field}: {value}")]
    BadValue {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u32,
    },
}

impl From<Truncated> for IpcError {
    fn from(_: Truncated) -> Self {
        IpcError::Truncated
    }
}

/// Why the daemon refused a registration or dropped the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// Another IPC client holds the NSLPID.
    NslpidTaken,
    /// The connection already registered an NSLPID (one per connection).
    AlreadyRegistered,
    /// An API call before registering.
    NotRegistered,
    /// The bytes were not a frame; the connection is closed.
    Malformed,
    /// Too many clients.
    Full,
    /// The connecting process's user may not use the socket (not its owner, root or a member
    /// of its configured group); the connection is closed.
    PermissionDenied,
    /// A code this side does not know.
    Unknown(u8),
}

impl Refusal {
    fn code(self) -> u8 {
        match self {
            Refusal::NslpidTaken => 1,
            Refusal::AlreadyRegistered => 2,
            Refusal::NotRegistered => 3,
            Refusal::Malformed => 4,
            Refusal::Full => 5,
            Refusal::PermissionDenied => 6,
            Refusal::Unknown(c) => c,
        }
    }

    fn from_code(c: u8) -> Self {
        match c {
            1 => Refusal::NslpidTaken,
            2 => Refusal::AlreadyRegistered,
            3 => Refusal::NotRegistered,
            4 => Refusal::Malformed,
            5 => Refusal::Full,
            6 => Refusal::PermissionDenied,
            c => Refusal::Unknown(c),
        }
    }
}

impl core::fmt::Display for Refusal {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Refusal::NslpidTaken => f.write_str("the NSLPID is registered by another client"),
            Refusal::AlreadyRegistered => {
                f.write_str("this connection has registered an NSLPID already")
            }
            Refusal::NotRegistered => f.write_str("an API call before registering"),
            Refusal::Malformed => f.write_str("bytes that are not a frame"),
            Refusal::Full => f.write_str("too many clients"),
            Refusal::PermissionDenied => f.write_str(
                "permission denied: this user may not use GIST's IPC socket \
                 (allowed: its owner, root and the members of the daemon's socket_group)",
            ),
            Refusal::Unknown(c) => write!(f, "refusal code {c}"),
        }
    }
}

/// One frame, either way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    // NSLP → GIST
    /// Serve this NSLPID from this connection (one per connection).
    Register {
        /// NSLPID.
        nslpid: u16,
    },
    /// SendMessage (B.1) under the client's own handle; not answered unless GIST refuses it
    /// ([`Frame::Status`] with [`DeliveryError::Refused`]) or delivery fails later.
    Send {
        /// The client's handle for the message.
        handle: MessageHandle,
        /// The message.
        msg: SendMessage,
    },
    /// SetStateLifetime (B.5).
    SetStateLifetime {
        /// NSLPID.
        nslpid: u16,
        /// Session.
        session_id: SessionId,
        /// MRI.
        mri: Mri,
        /// Direction.
        direction: Direction,
        /// Lifetime.
        lifetime: Duration,
    },
    /// InvalidateRoutingState (B.6).
    InvalidateRoutingState {
        /// NSLPID.
        nslpid: u16,
        /// Session.
        session_id: SessionId,
        /// MRI.
        mri: Mri,
        /// Direction.
        direction: Direction,
        /// Re-run the handshake at once.
        urgent: bool,
    },
    /// The answer to a Routing-State-Check ([`Frame::Recv`] with a non-zero `upcall`).
    Decision {
        /// The upcall answered.
        upcall: u32,
        /// The answer.
        decision: RoutingDecision,
    },
    // GIST → NSLP
    /// Registration accepted; this node's addresses (what `local_address`/`is_local` answer).
    Registered {
        /// NSLPID.
        nslpid: u16,
        /// Local addresses.
        local: Vec<IpAddr>,
    },
    /// RecvMessage (B.2). `upcall` ≠ 0: a Routing-State-Check GIST waits on; answer with
    /// [`Frame::Decision`].
    Recv {
        /// Upcall number (0: no answer wanted).
        upcall: u32,
        /// GIST's time.
        now: Instant,
        /// The message.
        msg: RecvMessage,
    },
    /// MessageStatus (B.3).
    Status {
        /// GIST's time.
        now: Instant,
        /// The status.
        status: MessageStatus,
    },
    /// NetworkNotification (B.4).
    Notify {
        /// GIST's time.
        now: Instant,
        /// The notification.
        notification: NetworkNotification,
    },
    /// A request refused (registration, or the connection about to be dropped).
    Refused {
        /// Why.
        reason: Refusal,
    },
}

impl Frame {
    /// Append the frame, length field included, to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        self.encode_version(VERSION, out);
    }

    /// Append the frame in protocol `version` ([`MIN_VERSION`] ..= [`VERSION`]; others are
    /// written as [`VERSION`]). Version 2 has no field for
    /// [`SendMessage::report_dispatch`] or [`MessageStatus::transfer`]: they are left out.
    pub fn encode_version(&self, version: u8, out: &mut Vec<u8>) {
        let version = if (MIN_VERSION..=VERSION).contains(&version) {
            version
        } else {
            VERSION
        };
        let v3 = version >= 3;
        let v4 = version >= 4;
        let start = out.len();
        let w = &mut Writer::new(out);
        w.u32(0);
        w.u8(version);
        match self {
            Frame::Register { nslpid } => {
                w.u8(kind::REGISTER);
                w.u16(*nslpid);
            }
            Frame::Send { handle, msg } => {
                w.u8(kind::SEND);
                w.u64(handle.0);
                w.u16(msg.nslpid);
                w.bytes(&msg.session_id.0);
                put_mri(w, &msg.mri);
                put_addr(w, msg.sii_handle.map(|s| s.0));
                put_transfer(w, msg.transfer);
                if v3 {
                    w.u8(u8::from(msg.report_dispatch));
                }
                put_opt_u64(
                    w,
                    msg.timeout
                        .map(|t| u64::try_from(t.as_nanos()).unwrap_or(u64::MAX)),
                );
                put_opt_u64(w, msg.ip_ttl.map(u64::from));
                put_opt_u64(w, msg.gist_hops.map(u64::from));
                put_data(w, &msg.nslp_data);
            }
            Frame::SetStateLifetime {
                nslpid,
                session_id,
                mri,
                direction,
                lifetime,
            } => {
                w.u8(kind::SET_LIFETIME);
                w.u16(*nslpid);
                w.bytes(&session_id.0);
                put_mri(w, mri);
                w.u8(dir_code(*direction));
                w.u64(u64::try_from(lifetime.as_nanos()).unwrap_or(u64::MAX));
            }
            Frame::InvalidateRoutingState {
                nslpid,
                session_id,
                mri,
                direction,
                urgent,
            } => {
                w.u8(kind::INVALIDATE);
                w.u16(*nslpid);
                w.bytes(&session_id.0);
                put_mri(w, mri);
                w.u8(dir_code(*direction));
                w.u8(u8::from(*urgent));
            }
            Frame::Decision { upcall, decision } => {
                w.u8(kind::DECISION);
                w.u32(*upcall);
                match decision {
                    RoutingDecision::Decline => w.u8(0),
                    RoutingDecision::Accept { response_data } => {
                        w.u8(1);
                        match response_data {
                            None => w.u8(0),
                            Some(d) => {
                                w.u8(1);
                                put_data(w, d);
                            }
                        }
                    }
                }
            }
            Frame::Registered { nslpid, local } => {
                w.u8(kind::REGISTERED);
                w.u16(*nslpid);
                let n = local.len().min(usize::from(u16::MAX));
                w.u16(n as u16);
                for a in &local[..n] {
                    put_addr(w, Some(*a));
                }
            }
            Frame::Recv { upcall, now, msg } => {
                w.u8(kind::RECV);
                w.u32(*upcall);
                w.u64(now.as_nanos());
                w.u16(msg.nslpid);
                w.bytes(&msg.session_id.0);
                put_mri(w, &msg.mri);
                w.u8(u8::from(msg.routing_state_check) | u8::from(v4 && msg.explicitly_routed) << 1);
                put_addr(w, msg.sii_handle.map(|s| s.0));
                put_transfer(w, msg.transfer);
                w.u8(msg.ip_ttl);
                put_opt_u64(w, msg.ip_distance.map(u64::from));
                w.u8(msg.gist_hops);
                w.u32(msg.inbound_interface.0);
                put_data(w, &msg.nslp_data);
            }
            Frame::Status { now, status } => {
                w.u8(kind::STATUS);
                w.u64(now.as_nanos());
                w.u64(status.handle.0);
                w.u16(status.nslpid);
                w.bytes(&status.session_id.0);
                match status.error {
                    None => w.u8(0),
                    Some(e) => put_delivery_error(w, e, v4),
                }
                if v3 {
                    match status.transfer {
                        None => w.u8(0),
                        Some(t) => {
                            w.u8(1);
                            put_transfer(w, t);
                        }
                    }
                }
            }
            Frame::Notify { now, notification } => {
                w.u8(kind::NOTIFY);
                w.u64(now.as_nanos());
                w.u16(notification.nslpid);
                w.bytes(&notification.session_id.0);
                put_mri(w, &notification.mri);
                match notification.kind {
                    NotificationKind::LastNode => w.u8(1),
                    NotificationKind::RoutingStatusChange {
                        direction,
                        peer,
                        changed,
                    } => {
                        w.u8(2);
                        w.u8(dir_code(direction));
                        put_addr(w, Some(peer.0));
                        w.u8(u8::from(changed));
                    }
                    NotificationKind::RoutingStateLost { direction } => {
                        w.u8(3);
                        w.u8(dir_code(direction));
                    }
                    NotificationKind::CommunicationFailure { direction, peer } => {
                        w.u8(4);
                        w.u8(dir_code(direction));
                        put_addr(w, Some(peer.0));
                    }
                }
            }
            Frame::Refused { reason } => {
                w.u8(kind::REFUSED);
                w.u8(reason.code());
            }
        }
        let len = u32::try_from(out.len() - start - 4).unwrap_or(u32::MAX);
        out[start..start + 4].copy_from_slice(&len.to_be_bytes());
    }

    /// The frame as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.encode(&mut v);
        v
    }

    /// Decode the first frame of `buf`: `Ok(None)` if more bytes are needed, else the frame
    /// and how many bytes it took. An error means the stream cannot be resynchronised.
    pub fn decode(buf: &[u8]) -> Result<Option<(Frame, usize)>, IpcError> {
        Ok(Frame::decode_versioned(buf)?.map(|(f, _, n)| (f, n)))
    }

    /// [`Frame::decode`], with the protocol version the frame was written in.
    pub fn decode_versioned(buf: &[u8]) -> Result<Option<(Frame, u8, usize)>, IpcError> {
        let Some(len) = buf.get(..4) else {
            return Ok(None);
        };
        let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]);
        if !(2..=MAX_FRAME as u32).contains(&len) {
            return Err(IpcError::BadLength(len));
        }
        let end = 4 + len as usize;
        let Some(body) = buf.get(4..end) else {
            return Ok(None);
        };
        Frame::decode_body_versioned(body).map(|(f, v)| Some((f, v, end)))
    }

    /// Decode a frame without its length field (version, kind, body).
    pub fn decode_body(body: &[u8]) -> Result<Frame, IpcError> {
        Frame::decode_body_versioned(body).map(|(f, _)| f)
    }

    /// [`Frame::decode_body`], with the frame's protocol version.
    pub fn decode_body_versioned(body: &[u8]) -> Result<(Frame, u8), IpcError> {
        let r = &mut Reader::new(body);
        let v = r.u8()?;
        if !(MIN_VERSION..=VERSION).contains(&v) {
            return Err(IpcError::BadVersion(v));
        }
        let v3 = v >= 3;
        let v4 = v >= 4;
        let k = r.u8()?;
        let f = match k {
            kind::REGISTER => Frame::Register { nslpid: r.u16()? },
            kind::SEND => {
                let handle = MessageHandle(r.u64()?);
                let nslpid = r.u16()?;
                let session_id = SessionId(r.array()?);
                let mri = get_mri(r)?;
                let sii_handle = get_addr(r)?.map(SiiHandle);
                let transfer = get_transfer(r)?;
                let report_dispatch = v3 && get_bool(r, "send flags")?;
                let timeout = get_opt_u64(r)?.map(Duration::from_nanos);
                let ip_ttl = get_opt_u8(r, "ip_ttl")?;
                let gist_hops = get_opt_u8(r, "gist_hops")?;
                let nslp_data = get_data(r)?;
                Frame::Send {
                    handle,
                    msg: SendMessage {
                        nslp_data,
                        nslpid,
                        session_id,
                        mri,
                        sii_handle,
                        transfer,
                        timeout,
                        ip_ttl,
                        gist_hops,
                        report_dispatch,
                    },
                }
            }
            kind::SET_LIFETIME => Frame::SetStateLifetime {
                nslpid: r.u16()?,
                session_id: SessionId(r.array()?),
                mri: get_mri(r)?,
                direction: get_dir(r)?,
                lifetime: Duration::from_nanos(r.u64()?),
            },
            kind::INVALIDATE => Frame::InvalidateRoutingState {
                nslpid: r.u16()?,
                session_id: SessionId(r.array()?),
                mri: get_mri(r)?,
                direction: get_dir(r)?,
                urgent: get_bool(r, "urgent")?,
            },
            kind::DECISION => {
                let upcall = r.u32()?;
                let decision = match r.u8()? {
                    0 => RoutingDecision::Decline,
                    1 => RoutingDecision::Accept {
                        response_data: match r.u8()? {
                            0 => None,
                            1 => Some(get_data(r)?),
                            v => return Err(bad("response_data", v)),
                        },
                    },
                    v => return Err(bad("decision", v)),
                };
                Frame::Decision { upcall, decision }
            }
            kind::REGISTERED => {
                let nslpid = r.u16()?;
                let n = r.u16()?;
                let mut local = Vec::with_capacity(usize::from(n).min(r.remaining() / 5));
                for _ in 0..n {
                    local.push(get_addr(r)?.ok_or(bad("local address", 0))?);
                }
                Frame::Registered { nslpid, local }
            }
            kind::RECV => {
                let upcall = r.u32()?;
                let now = Instant::from_nanos(r.u64()?);
                let nslpid = r.u16()?;
                let session_id = SessionId(r.array()?);
                let mri = get_mri(r)?;
                let flags = r.u8()?;
                if flags & !(if v4 { 0b11 } else { 0b1 }) != 0 {
                    return Err(bad("recv flags", flags));
                }
                let routing_state_check = flags & 1 != 0;
                let explicitly_routed = flags & 2 != 0;
                let sii_handle = get_addr(r)?.map(SiiHandle);
                let transfer = get_transfer(r)?;
                let ip_ttl = r.u8()?;
                let ip_distance = get_opt_u8(r, "ip_distance")?;
                let gist_hops = r.u8()?;
                let inbound_interface = IfIndex(r.u32()?);
                let nslp_data = get_data(r)?;
                Frame::Recv {
                    upcall,
                    now,
                    msg: RecvMessage {
                        nslp_data,
                        nslpid,
                        session_id,
                        mri,
                        routing_state_check,
                        sii_handle,
                        transfer,
                        ip_ttl,
                        ip_distance,
                        gist_hops,
                        inbound_interface,
                        explicitly_routed,
                    },
                }
            }
            kind::STATUS => {
                let now = Instant::from_nanos(r.u64()?);
                let handle = MessageHandle(r.u64()?);
                let nslpid = r.u16()?;
                let session_id = SessionId(r.array()?);
                let error = get_delivery_error(r, v4)?;
                let transfer = match v3 {
                    false => None,
                    true => match r.u8()? {
                        0 => None,
                        1 => Some(get_transfer(r)?),
                        b => return Err(bad("status transfer", b)),
                    },
                };
                Frame::Status {
                    now,
                    status: MessageStatus {
                        handle,
                        nslpid,
                        session_id,
                        error,
                        transfer,
                    },
                }
            }
            kind::NOTIFY => {
                let now = Instant::from_nanos(r.u64()?);
                let nslpid = r.u16()?;
                let session_id = SessionId(r.array()?);
                let mri = get_mri(r)?;
                let kind = match r.u8()? {
                    1 => NotificationKind::LastNode,
                    2 => NotificationKind::RoutingStatusChange {
                        direction: get_dir(r)?,
                        peer: SiiHandle(get_addr(r)?.ok_or(bad("peer", 0))?),
                        changed: get_bool(r, "changed")?,
                    },
                    3 => NotificationKind::RoutingStateLost {
                        direction: get_dir(r)?,
                    },
                    4 => NotificationKind::CommunicationFailure {
                        direction: get_dir(r)?,
                        peer: SiiHandle(get_addr(r)?.ok_or(bad("peer", 0))?),
                    },
                    v => return Err(bad("notification", v)),
                };
                Frame::Notify {
                    now,
                    notification: NetworkNotification {
                        nslpid,
                        session_id,
                        mri,
                        kind,
                    },
                }
            }
            kind::REFUSED => Frame::Refused {
                reason: Refusal::from_code(r.u8()?),
            },
            k => return Err(IpcError::UnknownKind(k)),
        };
        match r.remaining() {
            0 => Ok((f, v)),
            n => Err(IpcError::Trailing(n)),
        }
    }
}

fn bad(field: &'static str, value: u8) -> IpcError {
    IpcError::BadValue {
        field,
        value: u32::from(value),
    }
}

fn dir_code(d: Direction) -> u8 {
    match d {
        Direction::Downstream => 0,
        Direction::Upstream => 1,
    }
}

fn get_dir(r: &mut Reader<'_>) -> Result<Direction, IpcError> {
    match r.u8()? {
        0 => Ok(Direction::Downstream),
        1 => Ok(Direction::Upstream),
        v => Err(bad("direction", v)),
    }
}

fn get_bool(r: &mut Reader<'_>, field: &'static str) -> Result<bool, IpcError> {
    match r.u8()? {
        0 => Ok(false),
        1 => Ok(true),
        v => Err(bad(field, v)),
    }
}

fn put_addr(w: &mut Writer<'_>, a: Option<IpAddr>) {
    match a {
        None => w.u8(0),
        Some(IpAddr::V4(v)) => {
            w.u8(4);
            w.bytes(&v.octets());
        }
        Some(IpAddr::V6(v)) => {
            w.u8(6);
            w.bytes(&v.octets());
        }
    }
}

fn get_addr(r: &mut Reader<'_>) -> Result<Option<IpAddr>, IpcError> {
    Ok(match r.u8()? {
        0 => None,
        4 => Some(IpAddr::V4(r.ipv4()?)),
        6 => Some(IpAddr::V6(r.ipv6()?)),
        v => return Err(bad("address family", v)),
    })
}

fn put_mri(w: &mut Writer<'_>, m: &Mri) {
    let n = m.buffer_len().min(usize::from(u16::MAX));
    w.u16(n as u16);
    if n == m.buffer_len() {
        m.emit(w);
    } else {
        // Unencodable (an opaque MRI over 64 KiB): send an empty body, which fails to parse.
        w.patch_u16(w.position() - 2, 0).ok();
    }
}

fn get_mri(r: &mut Reader<'_>) -> Result<Mri, IpcError> {
    let n = r.u16()?;
    let body = r.bytes(usize::from(n))?;
    let m = Mri::parse(body).map_err(|_| bad("mri", 0))?;
    // Only what re-encodes to the same bytes is accepted (no ignored bits): one encoding per
    // value.
    let mut again = Vec::with_capacity(body.len());
    m.emit(&mut Writer::new(&mut again));
    if again != body {
        return Err(bad("mri encoding", 0));
    }
    Ok(m)
}

fn put_transfer(w: &mut Writer<'_>, t: TransferAttributes) {
    w.u8(u8::from(t.reliable) | u8::from(t.secure) << 1 | u8::from(t.setup_state) << 2);
}

fn get_transfer(r: &mut Reader<'_>) -> Result<TransferAttributes, IpcError> {
    let b = r.u8()?;
    if b & !0b111 != 0 {
        return Err(bad("transfer attributes", b));
    }
    Ok(TransferAttributes {
        reliable: b & 1 != 0,
        secure: b & 2 != 0,
        setup_state: b & 4 != 0,
    })
}

fn put_opt_u64(w: &mut Writer<'_>, v: Option<u64>) {
    match v {
        None => w.u8(0),
        Some(v) => {
            w.u8(1);
            w.u64(v);
        }
    }
}

fn get_opt_u64(r: &mut Reader<'_>) -> Result<Option<u64>, IpcError> {
    match r.u8()? {
        0 => Ok(None),
        1 => Ok(Some(r.u64()?)),
        v => Err(bad("option", v)),
    }
}

fn get_opt_u8(r: &mut Reader<'_>, field: &'static str) -> Result<Option<u8>, IpcError> {
    get_opt_u64(r)?
        .map(|v| {
            u8::try_from(v).map_err(|_| IpcError::BadValue {
                field,
                value: u32::try_from(v).unwrap_or(u32::MAX),
            })
        })
        .transpose()
}

fn put_data(w: &mut Writer<'_>, d: &[u8]) {
    let n = d.len().min(MAX_FRAME);
    w.u32(n as u32);
    w.bytes(&d[..n]);
}

fn get_data(r: &mut Reader<'_>) -> Result<Vec<u8>, IpcError> {
    let n = r.u32()? as usize;
    Ok(r.bytes(n)?.to_vec())
}

fn api_error_code(e: ApiError) -> (u8, u16) {
    match e {
        ApiError::UnknownNslpid(n) => (1, n),
        ApiError::UnsupportedMri => (2, 0),
        ApiError::MessageTooLarge => (3, 0),
        ApiError::NoRoutingState => (4, 0),
        ApiError::NoLocalAddress => (5, 0),
        ApiError::Unsupported => (6, 0),
        ApiError::InvalidMri => (7, 0),
        ApiError::ZeroHopCount => (8, 0),
    }
}

fn api_error_from(code: u8, arg: u16) -> Result<ApiError, IpcError> {
    Ok(match (code, arg) {
        (1, n) => ApiError::UnknownNslpid(n),
        (2, 0) => ApiError::UnsupportedMri,
        (3, 0) => ApiError::MessageTooLarge,
        (4, 0) => ApiError::NoRoutingState,
        (5, 0) => ApiError::NoLocalAddress,
        (6, 0) => ApiError::Unsupported,
        (7, 0) => ApiError::InvalidMri,
        (8, 0) => ApiError::ZeroHopCount,
        (c, _) => return Err(bad("api error", c)),
    })
}

fn put_delivery_error(w: &mut Writer<'_>, e: DeliveryError, v4: bool) {
    match e {
        DeliveryError::NoRoutingState => w.u8(1),
        DeliveryError::NoPeer => w.u8(2),
        DeliveryError::PeerError { class, code } => {
            w.u8(3);
            w.u8(class);
            w.u16(code);
        }
        DeliveryError::MessageTooLarge => w.u8(4),
        DeliveryError::QueueFull => w.u8(5),
        DeliveryError::Unsupported => w.u8(6),
        DeliveryError::Refused(e) => {
            let (code, arg) = api_error_code(e);
            w.u8(7);
            w.u8(code);
            w.u16(arg);
        }
        DeliveryError::UnknownSiiHandle => w.u8(if v4 { 8 } else { 2 }),
    }
}

fn get_delivery_error(r: &mut Reader<'_>, v4: bool) -> Result<Option<DeliveryError>, IpcError> {
    Ok(Some(match r.u8()? {
        0 => return Ok(None),
        1 => DeliveryError::NoRoutingState,
        2 => DeliveryError::NoPeer,
        3 => DeliveryError::PeerError {
            class: r.u8()?,
            code: r.u16()?,
        },
        4 => DeliveryError::MessageTooLarge,
        5 => DeliveryError::QueueFull,
        6 => DeliveryError::Unsupported,
        7 => {
            let code = r.u8()?;
            DeliveryError::Refused(api_error_from(code, r.u16()?)?)
        }
        8 if v4 => DeliveryError::UnknownSiiHandle,
        v => return Err(bad("delivery error", v)),
    }))
}

/// A byte stream cut into frames: feed what the socket gave, take whole frames out.
#[derive(Debug, Default)]
pub struct FrameBuffer {
    buf: Vec<u8>,
    start: usize,
}

impl FrameBuffer {
    /// Append received bytes.
    pub fn extend(&mut self, b: &[u8]) {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
        self.buf.extend_from_slice(b);
    }

    /// The next whole frame, `Ok(None)` if more bytes are needed.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, IpcError> {
        Ok(self.next_frame_versioned()?.map(|(f, _)| f))
    }

    /// [`FrameBuffer::next_frame`], with the frame's protocol version.
    pub fn next_frame_versioned(&mut self) -> Result<Option<(Frame, u8)>, IpcError> {
        match Frame::decode_versioned(&self.buf[self.start..])? {
            None => {
                if self.start > 0 {
                    self.buf.drain(..self.start);
                    self.start = 0;
                }
                Ok(None)
            }
            Some((f, v, n)) => {
                self.start += n;
                Ok(Some((f, v)))
            }
        }
    }

    /// Bytes held that are not yet a whole frame.
    pub fn pending(&self) -> usize {
        self.buf.len() - self.start
    }
}
