//! GIST messages (RFC 5971 §5.1): the common header's flags and one body per message type.
//!
//! [`Message::parse`] accepts objects in any order (§5.1 fixes the order for senders; receivers
//! are told to reject missing, duplicate and invalid objects, which this does, including the
//! nesting of the optional parts) and
//! [`Message::emit`] writes them in the §5.1 order, unknown AB=10 objects last.

use super::error::{ObjectFault, ParseError, ParseErrorKind, ValueFault};
use super::error_object::ErrorObject;
use super::header::{
    CommonHeader, Extensibility, MsgType, ObjectHeader, emit_object, object_len, object_type as ot,
};
use super::mri::Mri;
use super::objects::{Cookie, Nli, SessionId, StackConfigData, StackProposal, UnknownObject};
use super::{HEADER_LEN, MAGIC, VERSION};
use pathwise_core::spare::SpareBuffers;
use pathwise_core::wire::{Reader, TlvIter, Writer};

/// Query (§5.1): `[NAT] MRI SID NLI Query-Cookie [Stack-Proposal SCD] [NSLP-Data]`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Query {
    /// NAT-Traversal object body, carried opaquely.
    pub nat: Option<Vec<u8>>,
    /// Message routing information.
    pub mri: Mri,
    /// Session ID.
    pub session_id: SessionId,
    /// The querying node's NLI.
    pub nli: Nli,
    /// Query-Cookie.
    pub query_cookie: Cookie,
    /// Stack-Proposal (C-mode wanted); present iff `stack_config` is.
    pub stack_proposal: Option<StackProposal>,
    /// Stack-Configuration-Data.
    pub stack_config: Option<StackConfigData>,
    /// Piggybacked NSLP data.
    pub nslp_data: Option<Vec<u8>>,
    /// Unknown objects with AB=10.
    pub unknown: Vec<UnknownObject>,
}

/// Response (§5.1): `[NAT] MRI SID NLI Query-Cookie [Responder-Cookie [SP [SCD]]] [NSLP-Data]`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Response {
    /// NAT-Traversal object body.
    pub nat: Option<Vec<u8>>,
    /// The Query's MRI with the direction inverted.
    pub mri: Mri,
    /// Session ID.
    pub session_id: SessionId,
    /// The responding node's NLI.
    pub nli: Nli,
    /// The Query-Cookie, echoed.
    pub query_cookie: Cookie,
    /// Responder-Cookie (a Confirm is wanted).
    pub responder_cookie: Option<Cookie>,
    /// Stack-Proposal.
    pub stack_proposal: Option<StackProposal>,
    /// Stack-Configuration-Data.
    pub stack_config: Option<StackConfigData>,
    /// Piggybacked NSLP data.
    pub nslp_data: Option<Vec<u8>>,
    /// Unknown objects with AB=10.
    pub unknown: Vec<UnknownObject>,
}

/// Confirm (§5.1): `MRI SID NLI [Responder-Cookie [SP [SCD]]] [NSLP-Data]`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Confirm {
    /// MRI (the Query's direction).
    pub mri: Mri,
    /// Session ID.
    pub session_id: SessionId,
    /// The querying node's NLI.
    pub nli: Nli,
    /// The Responder-Cookie, echoed.
    pub responder_cookie: Option<Cookie>,
    /// Stack-Proposal, echoed.
    pub stack_proposal: Option<StackProposal>,
    /// Stack-Configuration-Data.
    pub stack_config: Option<StackConfigData>,
    /// Piggybacked NSLP data.
    pub nslp_data: Option<Vec<u8>>,
    /// Unknown objects with AB=10.
    pub unknown: Vec<UnknownObject>,
}

/// Data (§5.1): `[NAT] MRI SID [NLI] NSLP-Data`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Data {
    /// NAT-Traversal object body.
    pub nat: Option<Vec<u8>>,
    /// MRI.
    pub mri: Mri,
    /// Session ID.
    pub session_id: SessionId,
    /// The sender's NLI (D-mode).
    pub nli: Option<Nli>,
    /// NSLP data.
    pub nslp_data: Vec<u8>,
    /// Unknown objects with AB=10.
    pub unknown: Vec<UnknownObject>,
}

/// Error (§5.1): `[NLI] Error-Object`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorMsg {
    /// The NAT-Traversal object body.
    pub nat: Option<Vec<u8>>,
    /// The sender's NLI.
    pub nli: Option<Nli>,
    /// The error.
    pub error: ErrorObject,
    /// Unknown objects with AB=10.
    pub unknown: Vec<UnknownObject>,
}

/// MA-Hello (§5.1): `Hello-ID`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct MaHello {
    /// Hello-ID (A.3.10), echoed in a reply.
    pub hello_id: u32,
    /// Unknown objects with AB=10.
    pub unknown: Vec<UnknownObject>,
}

/// A message body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    /// Query.
    Query(Query),
    /// Response.
    Response(Response),
    /// Confirm.
    Confirm(Confirm),
    /// Data.
    Data(Data),
    /// Error.
    Error(ErrorMsg),
    /// MA-Hello.
    MaHello(MaHello),
}

/// A GIST message: the common header's fields (A.1; version, type and length are implied) and
/// a body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// GIST hop count.
    pub gist_hops: u8,
    /// NSLPID (0 for MA-Hello and NSLP-independent messages).
    pub nslpid: u16,
    /// C flag: sent Q-mode encapsulated.
    pub c_flag: bool,
    /// S flag: the IP source address is the signalling source's.
    pub s_flag: bool,
    /// R flag: a reply is requested.
    pub r_flag: bool,
    /// E flag: explicitly routed.
    pub e_flag: bool,
    /// The body.
    pub body: Body,
}

/// The length of the message at the start of a byte stream (C-mode framing), once its common
/// header has arrived.
pub fn frame_len(buf: &[u8]) -> Option<usize> {
    let words = u16::from_be_bytes([*buf.get(2)?, *buf.get(3)?]);
    Some(HEADER_LEN + usize::from(words) * 4)
}

/// Bit per known object type.
const fn bit(t: u16) -> u16 {
    1 << t
}

/// (allowed, required) object types per message type (§5.1).
fn object_rules(t: MsgType) -> (u16, u16) {
    let core = bit(ot::MRI) | bit(ot::SESSION_ID);
    let stack = bit(ot::STACK_PROPOSAL) | bit(ot::STACK_CONFIG_DATA);
    let nat = bit(ot::NAT_TRAVERSAL);
    let nslp = bit(ot::NSLP_DATA);
    match t {
        MsgType::Query => {
            let req = core | bit(ot::NLI) | bit(ot::QUERY_COOKIE);
            (req | stack | nat | nslp, req)
        }
        MsgType::Response => {
            let req = core | bit(ot::NLI) | bit(ot::QUERY_COOKIE);
            (req | bit(ot::RESPONDER_COOKIE) | stack | nat | nslp, req)
        }
        MsgType::Confirm => {
            let req = core | bit(ot::NLI);
            (req | bit(ot::RESPONDER_COOKIE) | stack | nslp, req)
        }
        MsgType::Data => (core | nat | bit(ot::NLI) | nslp, core | nslp),
        MsgType::Error => (nat | bit(ot::NLI) | bit(ot::ERROR), bit(ot::ERROR)),
        MsgType::MaHello => (bit(ot::HELLO_ID), bit(ot::HELLO_ID)),
    }
}

/// Objects the §5.1 grammar requires because of others that are present: the optional parts
/// nest, and RFC 5971 A.4.4.9 (Missing Object) covers "a Stack-Proposal ... sent without a
/// matching Stack-Configuration-Data object when one was necessary, or vice versa".
///
/// - Query: `[ Stack-Proposal Stack-Configuration-Data ]` — both or neither.
/// - Response: `[ Responder-Cookie [ Stack-Proposal Stack-Configuration-Data ] ]` — the stack
///   objects both or neither, and only with a Responder-Cookie.
/// - Confirm: `[ Responder-Cookie [ Stack-Proposal [ Stack-Configuration-Data ] ] ]` — a
///   Stack-Configuration-Data only after a Stack-Proposal, a Stack-Proposal only after a
///   Responder-Cookie.
fn nested_requirements(t: MsgType, seen: u16) -> u16 {
    let has = |o| seen & bit(o) != 0;
    let (sp, scd, rc) = (
        ot::STACK_PROPOSAL,
        ot::STACK_CONFIG_DATA,
        ot::RESPONDER_COOKIE,
    );
    let mut need = 0;
    match t {
        MsgType::Query | MsgType::Response if has(sp) || has(scd) => {
            need |= bit(sp) | bit(scd);
            if t == MsgType::Response {
                need |= bit(rc);
            }
        }
        MsgType::Confirm => {
            if has(scd) {
                need |= bit(sp);
            }
            if has(sp) || has(scd) {
                need |= bit(rc);
            }
        }
        _ => {}
    }
    need
}

/// Everything a message may carry, as found.
#[derive(Default)]
struct Found {
    seen: u16,
    nat: Option<Vec<u8>>,
    mri: Option<Mri>,
    sid: Option<SessionId>,
    nli: Option<Nli>,
    qc: Option<Cookie>,
    rc: Option<Cookie>,
    sp: Option<StackProposal>,
    scd: Option<StackConfigData>,
    nslp: Option<Vec<u8>>,
    error: Option<ErrorObject>,
    hello: Option<u32>,
    unknown: Vec<UnknownObject>,
}

impl Found {
    fn take_object(
        &mut self,
        t: u16,
        body: &[u8],
        spare: &mut SpareBuffers,
    ) -> Result<(), ObjectFault> {
        match t {
            ot::MRI => self.mri = Some(Mri::parse(body)?),
            ot::SESSION_ID => self.sid = Some(SessionId::parse(body)?),
            ot::NLI => self.nli = Some(Nli::parse(body)?),
            ot::STACK_PROPOSAL => self.sp = Some(StackProposal::parse(body)?),
            ot::STACK_CONFIG_DATA => self.scd = Some(StackConfigData::parse(body)?),
            ot::QUERY_COOKIE => self.qc = Some(Cookie::parse(body)),
            ot::RESPONDER_COOKIE => self.rc = Some(Cookie::parse(body)),
            ot::NAT_TRAVERSAL => self.nat = Some(body.to_vec()),
            ot::NSLP_DATA => self.nslp = Some(spare.copy_of(body)),
            ot::ERROR => self.error = Some(ErrorObject::parse(body)?),
            ot::HELLO_ID => {
                let mut r = Reader::new(body);
                self.hello = Some(r.u32()?);
                if !r.is_empty() {
                    return Err(ObjectFault::length(4));
                }
            }
            _ => {}
        }
        Ok(())
    }
}

impl Message {
    /// The message type.
    pub fn msg_type(&self) -> MsgType {
        match self.body {
            Body::Query(_) => MsgType::Query,
            Body::Response(_) => MsgType::Response,
            Body::Confirm(_) => MsgType::Confirm,
            Body::Data(_) => MsgType::Data,
            Body::Error(_) => MsgType::Error,
            Body::MaHello(_) => MsgType::MaHello,
        }
    }

    /// The common header this message is emitted with.
    pub fn header(&self) -> CommonHeader {
        CommonHeader {
            version: VERSION,
            gist_hops: self.gist_hops,
            length_words: ((self.buffer_len() - HEADER_LEN) / 4).min(0xffff) as u16,
            nslpid: self.nslpid,
            c_flag: self.c_flag,
            msg_type: self.msg_type().number(),
            s_flag: self.s_flag,
            r_flag: self.r_flag,
            e_flag: self.e_flag,
        }
    }

    /// The MRI, for every message type that has one.
    pub fn mri(&self) -> Option<&Mri> {
        match &self.body {
            Body::Query(q) => Some(&q.mri),
            Body::Response(r) => Some(&r.mri),
            Body::Confirm(c) => Some(&c.mri),
            Body::Data(d) => Some(&d.mri),
            Body::Error(_) | Body::MaHello(_) => None,
        }
    }

    /// The Session ID, for every message type that has one.
    pub fn session_id(&self) -> Option<SessionId> {
        match &self.body {
            Body::Query(q) => Some(q.session_id),
            Body::Response(r) => Some(r.session_id),
            Body::Confirm(c) => Some(c.session_id),
            Body::Data(d) => Some(d.session_id),
            Body::Error(_) | Body::MaHello(_) => None,
        }
    }

    /// Parse a D-mode message: the magic number, then the message (§5.4.1). Offsets in a
    /// [`ParseError`] count from after the magic number.
    pub fn parse_datagram(buf: &[u8]) -> Result<Message, ParseError> {
        Self::parse_datagram_reusing(buf, &mut SpareBuffers::new())
    }

    /// [`Message::parse_datagram`], copying the NSLP data into a buffer from `spare` when it
    /// holds one.
    pub fn parse_datagram_reusing(
        buf: &[u8],
        spare: &mut SpareBuffers,
    ) -> Result<Message, ParseError> {
        let magic = Reader::new(buf)
            .u32()
            .map_err(|_| ParseError::new(ParseErrorKind::Truncated))?;
        if magic != MAGIC {
            return Err(ParseError::new(ParseErrorKind::BadMagic(magic)));
        }
        Self::parse_reusing(&buf[4..], spare)
    }

    /// Parse one whole message starting at its common header (C-mode, or after the magic).
    pub fn parse(buf: &[u8]) -> Result<Message, ParseError> {
        Self::parse_reusing(buf, &mut SpareBuffers::new())
    }

    /// [`Message::parse`], copying the NSLP data into a buffer from `spare` when it holds one
    /// (the other objects of the messages GIST exchanges in steady state are held inline).
    pub fn parse_reusing(buf: &[u8], spare: &mut SpareBuffers) -> Result<Message, ParseError> {
        let hdr =
            CommonHeader::parse(buf).map_err(|_| ParseError::new(ParseErrorKind::Truncated))?;
        let fail = |kind| {
            let mut e = ParseError::new(kind);
            e.header = Some(hdr);
            e
        };
        if hdr.version != VERSION {
            return Err(fail(ParseErrorKind::UnknownVersion(hdr.version)));
        }
        let Some(t) = hdr.kind() else {
            return Err(fail(ParseErrorKind::UnknownType(hdr.msg_type)));
        };
        let declared = HEADER_LEN + usize::from(hdr.length_words) * 4;
        if declared != buf.len() {
            return Err(fail(ParseErrorKind::IncorrectLength {
                declared: hdr.length_words,
                calculated: ((buf.len().saturating_sub(HEADER_LEN)) / 4).min(0xffff) as u16,
            }));
        }
        if hdr.e_flag && t != MsgType::Data {
            return Err(fail(ParseErrorKind::InvalidEFlag));
        }
        // A Query always asks for a Response; Confirm, Data and Error never ask for a reply.
        let r_ok = match t {
            MsgType::Query => hdr.r_flag,
            MsgType::Confirm | MsgType::Data | MsgType::Error => !hdr.r_flag,
            MsgType::Response | MsgType::MaHello => true,
        };
        if !r_ok {
            return Err(fail(ParseErrorKind::InvalidRFlag));
        }
        let (allowed, required) = object_rules(t);
        let mut found = Found::default();
        let mut hello_at = None;
        let objects = &buf[HEADER_LEN..];
        let mut iter = TlvIter::<ObjectHeader>::new(objects);
        loop {
            let pos = iter.position();
            let Some(item) = iter.next() else { break };
            let Ok((h, body)) = item else {
                // An object running past the end: the message length does not match its objects.
                let declared_obj = Reader::new(&objects[pos..])
                    .u32()
                    .map_or(0, |w| (w & 0x0fff) as usize * 4 + 4);
                let mut e = fail(ParseErrorKind::IncorrectLength {
                    declared: hdr.length_words,
                    calculated: ((pos + declared_obj) / 4).min(0xffff) as u16,
                });
                e.object = Some(HEADER_LEN + pos..buf.len());
                return Err(with_context(e, found));
            };
            let range = HEADER_LEN + pos..HEADER_LEN + pos + ObjectHeader::LEN + body.len();
            let ty = h.object_type;
            let located = |kind, found: Found, offset: usize| {
                let mut e = fail(kind);
                e.object = Some(range.clone());
                e.offset_in_object = offset;
                with_context(e, found)
            };
            if h.ab == Extensibility::Reserved {
                return Err(located(
                    ParseErrorKind::InvalidExtensibilityFlags(ty),
                    found,
                    0,
                ));
            }
            if ty > ot::HELLO_ID {
                match h.ab {
                    Extensibility::Mandatory => {
                        return Err(located(ParseErrorKind::UnrecognisedObject(ty), found, 0));
                    }
                    Extensibility::Forward => found.unknown.push(UnknownObject {
                        object_type: ty,
                        body: body.to_vec(),
                    }),
                    _ => {}
                }
                continue;
            }
            if allowed & bit(ty) == 0 {
                return Err(located(ParseErrorKind::InvalidObjectType(ty), found, 0));
            }
            if found.seen & bit(ty) != 0 {
                return Err(located(ParseErrorKind::DuplicateObject(ty), found, 0));
            }
            found.seen |= bit(ty);
            if ty == ot::HELLO_ID {
                hello_at = Some(range.start);
            }
            if let Err(f) = found.take_object(ty, body, spare) {
                let kind = ParseErrorKind::ObjectValue {
                    object_type: ty,
                    fault: f.fault,
                };
                return Err(located(kind, found, ObjectHeader::LEN + f.offset));
            }
        }
        let missing = (required | nested_requirements(t, found.seen)) & !found.seen;
        if missing != 0 {
            let ty = missing.trailing_zeros() as u16;
            return Err(with_context(fail(ParseErrorKind::MissingObject(ty)), found));
        }
        // RFC 5971 A.1: a Response carrying a Responder-Cookie MUST have R=1 (a Confirm is
        // wanted); §5.2.2: an MA-Hello request (R=1) MUST carry a non-zero Hello-ID, else
        // "Object Value Error" / "Value Not Supported".
        if t == MsgType::Response && found.rc.is_some() && !hdr.r_flag {
            return Err(with_context(fail(ParseErrorKind::InvalidRFlag), found));
        }
        if t == MsgType::MaHello && hdr.r_flag && found.hello == Some(0) {
            let kind = ParseErrorKind::ObjectValue {
                object_type: ot::HELLO_ID,
                fault: ValueFault::ValueNotSupported,
            };
            let mut e = fail(kind);
            e.object = hello_at.map(|at| at..at + ObjectHeader::LEN + 4);
            return Err(e);
        }
        let body =
            assemble(t, found).ok_or_else(|| fail(ParseErrorKind::MissingObject(ot::MRI)))?;
        Ok(Message {
            gist_hops: hdr.gist_hops,
            nslpid: hdr.nslpid,
            c_flag: hdr.c_flag,
            s_flag: hdr.s_flag,
            r_flag: hdr.r_flag,
            e_flag: hdr.e_flag,
            body,
        })
    }

    /// Length in bytes: common header and objects (no magic number).
    pub fn buffer_len(&self) -> usize {
        let mut len = HEADER_LEN;
        self.body
            .for_each_object(|o| len += object_len(o.body_len()));
        len
    }

    /// Append the message (common header and objects, no magic number): `buffer_len()` bytes.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let w = &mut Writer::new(out);
        self.header().emit(w);
        self.body.for_each_object(|o| o.emit(w));
    }

    /// Append a D-mode message: the magic number, then the message (§5.4.1).
    pub fn emit_datagram(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&MAGIC.to_be_bytes());
        self.emit(out);
    }

    /// The message as a fresh D-mode datagram payload.
    pub fn to_datagram(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(4 + self.buffer_len());
        self.emit_datagram(&mut v);
        v
    }

    /// The message as a D-mode datagram payload written into a buffer from `spare` when it
    /// holds one.
    pub fn to_datagram_reusing(&self, spare: &mut SpareBuffers) -> Vec<u8> {
        let mut v = spare.take(4 + self.buffer_len());
        self.emit_datagram(&mut v);
        v
    }
}

/// One object of a message body, borrowed. [`Body::for_each_object`] lists them once, so
/// [`Message::buffer_len`] and [`Message::emit`] cannot disagree.
enum Obj<'a> {
    /// A mandatory object whose body is these bytes as they are.
    Bytes(u16, &'a [u8]),
    Mri(&'a Mri),
    Nli(&'a Nli),
    StackProposal(&'a StackProposal),
    StackConfig(&'a StackConfigData),
    Error(&'a ErrorObject),
    HelloId(u32),
    /// An unknown object passed on (AB=10).
    Unknown(&'a UnknownObject),
}

impl Obj<'_> {
    fn object_type(&self) -> u16 {
        match self {
            Obj::Bytes(t, _) => *t,
            Obj::Mri(_) => ot::MRI,
            Obj::Nli(_) => ot::NLI,
            Obj::StackProposal(_) => ot::STACK_PROPOSAL,
            Obj::StackConfig(_) => ot::STACK_CONFIG_DATA,
            Obj::Error(_) => ot::ERROR,
            Obj::HelloId(_) => ot::HELLO_ID,
            Obj::Unknown(o) => o.object_type,
        }
    }

    fn body_len(&self) -> usize {
        match self {
            Obj::Bytes(_, b) => b.len(),
            Obj::Mri(x) => x.buffer_len(),
            Obj::Nli(x) => x.buffer_len(),
            Obj::StackProposal(x) => x.buffer_len(),
            Obj::StackConfig(x) => x.buffer_len(),
            Obj::Error(x) => x.buffer_len(),
            Obj::HelloId(_) => 4,
            Obj::Unknown(o) => o.body.len(),
        }
    }

    fn emit(&self, w: &mut Writer<'_>) {
        let ab = match self {
            Obj::Unknown(_) => Extensibility::Forward,
            _ => Extensibility::Mandatory,
        };
        emit_object(w, ab, self.object_type(), self.body_len(), |w| match self {
            Obj::Bytes(_, b) => w.bytes(b),
            Obj::Mri(x) => x.emit(w),
            Obj::Nli(x) => x.emit(w),
            Obj::StackProposal(x) => x.emit(w),
            Obj::StackConfig(x) => x.emit(w),
            Obj::Error(x) => x.emit(w),
            Obj::HelloId(id) => w.u32(*id),
            Obj::Unknown(o) => w.bytes(&o.body),
        });
    }
}

impl Body {
    /// Call `f` on each object of the body in the §5.1 order, unknown AB=10 objects last.
    fn for_each_object<'a>(&'a self, mut f: impl FnMut(Obj<'a>)) {
        let mut put = |o: Option<Obj<'a>>| {
            if let Some(o) = o {
                f(o)
            }
        };
        let nat = |b| Obj::Bytes(ot::NAT_TRAVERSAL, b);
        let sid = |s: &'a SessionId| Some(Obj::Bytes(ot::SESSION_ID, &s.0));
        let cookie = |t, c: &'a Cookie| Obj::Bytes(t, &c.0);
        let nslp = |b| Obj::Bytes(ot::NSLP_DATA, b);
        let unknown = match self {
            Body::Query(q) => {
                put(q.nat.as_deref().map(nat));
                put(Some(Obj::Mri(&q.mri)));
                put(sid(&q.session_id));
                put(Some(Obj::Nli(&q.nli)));
                put(Some(cookie(ot::QUERY_COOKIE, &q.query_cookie)));
                put(q.stack_proposal.as_ref().map(Obj::StackProposal));
                put(q.stack_config.as_ref().map(Obj::StackConfig));
                put(q.nslp_data.as_deref().map(nslp));
                &q.unknown
            }
            Body::Response(r) => {
                put(r.nat.as_deref().map(nat));
                put(Some(Obj::Mri(&r.mri)));
                put(sid(&r.session_id));
                put(Some(Obj::Nli(&r.nli)));
                put(Some(cookie(ot::QUERY_COOKIE, &r.query_cookie)));
                put(r
                    .responder_cookie
                    .as_ref()
                    .map(|c| cookie(ot::RESPONDER_COOKIE, c)));
                put(r.stack_proposal.as_ref().map(Obj::StackProposal));
                put(r.stack_config.as_ref().map(Obj::StackConfig));
                put(r.nslp_data.as_deref().map(nslp));
                &r.unknown
            }
            Body::Confirm(c) => {
                put(Some(Obj::Mri(&c.mri)));
                put(sid(&c.session_id));
                put(Some(Obj::Nli(&c.nli)));
                put(c
                    .responder_cookie
                    .as_ref()
                    .map(|x| cookie(ot::RESPONDER_COOKIE, x)));
                put(c.stack_proposal.as_ref().map(Obj::StackProposal));
                put(c.stack_config.as_ref().map(Obj::StackConfig));
                put(c.nslp_data.as_deref().map(nslp));
                &c.unknown
            }
            Body::Data(d) => {
                put(d.nat.as_deref().map(nat));
                put(Some(Obj::Mri(&d.mri)));
                put(sid(&d.session_id));
                put(d.nli.as_ref().map(Obj::Nli));
                put(Some(nslp(&d.nslp_data)));
                &d.unknown
            }
            Body::Error(e) => {
                put(e.nat.as_deref().map(nat));
                put(e.nli.as_ref().map(Obj::Nli));
                put(Some(Obj::Error(&e.error)));
                &e.unknown
            }
            Body::MaHello(h) => {
                put(Some(Obj::HelloId(h.hello_id)));
                &h.unknown
            }
        };
        for o in unknown {
            put(Some(Obj::Unknown(o)));
        }
    }
}

/// Keep what was parsed before an error, so the engine can address and fill the GIST Error.
fn with_context(mut e: ParseError, found: Found) -> ParseError {
    e.mri = found.mri.map(Box::new);
    e.session_id = found.sid;
    e.nli = found.nli.map(Box::new);
    e
}

fn assemble(t: MsgType, f: Found) -> Option<Body> {
    Some(match t {
        MsgType::Query => Body::Query(Query {
            nat: f.nat,
            mri: f.mri?,
            session_id: f.sid?,
            nli: f.nli?,
            query_cookie: f.qc?,
            stack_proposal: f.sp,
            stack_config: f.scd,
            nslp_data: f.nslp,
            unknown: f.unknown,
        }),
        MsgType::Response => Body::Response(Response {
            nat: f.nat,
            mri: f.mri?,
            session_id: f.sid?,
            nli: f.nli?,
            query_cookie: f.qc?,
            responder_cookie: f.rc,
            stack_proposal: f.sp,
            stack_config: f.scd,
            nslp_data: f.nslp,
            unknown: f.unknown,
        }),
        MsgType::Confirm => Body::Confirm(Confirm {
            mri: f.mri?,
            session_id: f.sid?,
            nli: f.nli?,
            responder_cookie: f.rc,
            stack_proposal: f.sp,
            stack_config: f.scd,
            nslp_data: f.nslp,
            unknown: f.unknown,
        }),
        MsgType::Data => Body::Data(Data {
            nat: f.nat,
            mri: f.mri?,
            session_id: f.sid?,
            nli: f.nli,
            nslp_data: f.nslp?,
            unknown: f.unknown,
        }),
        MsgType::Error => Body::Error(ErrorMsg {
            nat: f.nat,
            nli: f.nli,
            error: f.error?,
            unknown: f.unknown,
        }),
        MsgType::MaHello => Body::MaHello(MaHello {
            hello_id: f.hello?,
            unknown: f.unknown,
        }),
    })
}

impl Default for Nli {
    fn default() -> Self {
        Nli {
            ip_ttl: 0,
            rs_validity_ms: 0,
            peer_identity: super::ShortBytes::new(),
            interface_address: std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
        }
    }
}

impl Default for Mri {
    fn default() -> Self {
        let a = std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED);
        Mri::PathCoupled(super::mri::PathCoupledMri::flow(a, a))
    }
}
