//! QoS NSLP messages (RFC 5974 §5.1.2): RESERVE, QUERY, RESPONSE and NOTIFY, each with its
//! grammar, and the common header's flags that apply to it (§5.1.1).
//!
//! Objects may arrive in any order ("An implementation SHOULD create messages with the objects
//! in the order shown here, but MUST accept the objects in any order", §5.1); we emit them in
//! the order of the grammar, unknown objects last. The parser checks, in this order: the
//! header; each object where it stands (allowed in this message type, not one too many, its
//! body well formed; unknown types by their AB flags); then the grammar as a whole (mandatory
//! objects, alternatives, dependencies, flag combinations).

use super::error::{BodyError, ParseError, ParseErrorKind};
use super::header::{
    CommonHeader, Extensibility, GenericFlags, HEADER_LEN, MsgType, OBJECT_HEADER_LEN,
    ObjectHeader, object_type as ot, query_flags, reserve_flags,
};
use super::info_spec::InfoSpec;
use super::objects::{
    BoundSessionId, MessageBinding, PacketClassifier, RefreshPeriod, Rii, Rsn, RsnList,
    SessionIdList, UnknownObject,
};
use super::qspec::Qspec;
use pathwise_core::wire::{TlvIter, Writer};

/// Writes one object's body.
type EmitBody<'a> = dyn Fn(&mut Writer<'_>) + 'a;

/// RESERVE (§5.1.2.1):
///
/// ```text
/// RESERVE = COMMON-HEADER
///           RSN [ RII ] [ REFRESH-PERIOD ] [ *BOUND-SESSION-ID ]
///           [ SESSION-ID-LIST [ RSN-LIST ] ]
///           [ MSG-ID / BOUND-MSG-ID ] [ INFO-SPEC ]
///           [ [ PACKET-CLASSIFIER ] QSPEC ]
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Reserve {
    /// TEAR (T): remove reservation and QoS NSLP operation state.
    pub tear: bool,
    /// REPLACE (R): this RESERVE replaces one with a different MRI (or an old branch).
    pub replace: bool,
    /// RSN, the one mandatory object.
    pub rsn: Rsn,
    /// RII: a RESPONSE is requested.
    pub rii: Option<Rii>,
    /// REFRESH-PERIOD ([`RefreshPeriod::DEFAULT`] when absent).
    pub refresh_period: Option<RefreshPeriod>,
    /// BOUND-SESSION-IDs, any number.
    pub bound_sessions: Vec<BoundSessionId>,
    /// SESSION-ID-LIST, for summary refresh or tear.
    pub session_id_list: Option<SessionIdList>,
    /// RSN-LIST (only with a SESSION-ID-LIST).
    pub rsn_list: Option<RsnList>,
    /// MSG-ID or BOUND-MSG-ID.
    pub message_binding: Option<MessageBinding>,
    /// INFO-SPEC.
    pub info_spec: Option<InfoSpec>,
    /// PACKET-CLASSIFIER (only with a QSPEC).
    pub packet_classifier: Option<PacketClassifier>,
    /// QSPEC (absent in a reduced refresh).
    pub qspec: Option<Qspec>,
    /// Unknown objects with AB≠00, in the order received.
    pub unknown: Vec<UnknownObject>,
}

impl Reserve {
    /// A RESERVE with only its RSN.
    pub fn new(rsn: Rsn) -> Self {
        Reserve {
            tear: false,
            replace: false,
            rsn,
            rii: None,
            refresh_period: None,
            bound_sessions: Vec::new(),
            session_id_list: None,
            rsn_list: None,
            message_binding: None,
            info_spec: None,
            packet_classifier: None,
            qspec: None,
            unknown: Vec::new(),
        }
    }
}

/// QUERY (§5.1.2.2):
///
/// ```text
/// QUERY = COMMON-HEADER
///         [ RII ] [ *BOUND-SESSION-ID ]
///         [ PACKET-CLASSIFIER ] [ INFO-SPEC ] QSPEC [ QSPEC ]
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    /// RESERVE-INIT (R): the recipient should answer with a RESERVE (receiver-initiated).
    pub reserve_init: bool,
    /// RII.
    pub rii: Option<Rii>,
    /// BOUND-SESSION-IDs, any number.
    pub bound_sessions: Vec<BoundSessionId>,
    /// PACKET-CLASSIFIER.
    pub packet_classifier: Option<PacketClassifier>,
    /// INFO-SPEC.
    pub info_spec: Option<InfoSpec>,
    /// The QSPEC, mandatory.
    pub qspec: Qspec,
    /// An optional second QSPEC.
    pub second_qspec: Option<Qspec>,
    /// Unknown objects with AB≠00, in the order received.
    pub unknown: Vec<UnknownObject>,
}

impl Query {
    /// A QUERY with only its QSPEC.
    pub fn new(qspec: Qspec) -> Self {
        Query {
            reserve_init: false,
            rii: None,
            bound_sessions: Vec::new(),
            packet_classifier: None,
            info_spec: None,
            qspec,
            second_qspec: None,
            unknown: Vec::new(),
        }
    }
}

/// What a RESPONSE answers: `[ RII / RSN ]` (§5.1.2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Answers {
    /// The RII of a RESERVE or QUERY that asked for a RESPONSE.
    Rii(Rii),
    /// The RSN of a RESERVE (acknowledging a refresh, or reporting an error on it).
    Rsn(Rsn),
}

/// RESPONSE (§5.1.2.3):
///
/// ```text
/// RESPONSE = COMMON-HEADER
///            [ RII / RSN ] INFO-SPEC [SESSION-ID-LIST [ RSN-LIST ] ]
///            [ QSPEC ]
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    /// The RII or RSN answered.
    pub answers: Option<Answers>,
    /// INFO-SPEC, mandatory.
    pub info_spec: InfoSpec,
    /// SESSION-ID-LIST (e.g. unknown sessions of a summary refresh).
    pub session_id_list: Option<SessionIdList>,
    /// RSN-LIST (only with a SESSION-ID-LIST).
    pub rsn_list: Option<RsnList>,
    /// QSPEC.
    pub qspec: Option<Qspec>,
    /// Unknown objects with AB≠00, in the order received.
    pub unknown: Vec<UnknownObject>,
}

impl Response {
    /// A RESPONSE with only its INFO-SPEC.
    pub fn new(info_spec: InfoSpec) -> Self {
        Response {
            answers: None,
            info_spec,
            session_id_list: None,
            rsn_list: None,
            qspec: None,
            unknown: Vec::new(),
        }
    }
}

/// NOTIFY (§5.1.2.4): `NOTIFY = COMMON-HEADER INFO-SPEC [ QSPEC ]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Notify {
    /// INFO-SPEC, mandatory.
    pub info_spec: InfoSpec,
    /// QSPEC.
    pub qspec: Option<Qspec>,
    /// Unknown objects with AB≠00, in the order received.
    pub unknown: Vec<UnknownObject>,
}

/// A message body.
#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    /// RESERVE.
    Reserve(Reserve),
    /// QUERY.
    Query(Query),
    /// RESPONSE.
    Response(Response),
    /// NOTIFY.
    Notify(Notify),
}

/// A QoS NSLP message: what GIST carries as NSLP-Data (§5.1).
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    /// The generic flags. ACK-REQ applies to RESERVE and QUERY only ("only used with RESERVE
    /// and QUERY messages", §5.1.1): it is ignored when received on, and not sent with, a
    /// RESPONSE or NOTIFY.
    pub flags: GenericFlags,
    /// The message.
    pub body: Body,
}

impl Message {
    /// A message with no generic flags set.
    pub fn new(body: Body) -> Self {
        Message {
            flags: GenericFlags::default(),
            body,
        }
    }

    /// The message type.
    pub fn msg_type(&self) -> MsgType {
        match self.body {
            Body::Reserve(_) => MsgType::Reserve,
            Body::Query(_) => MsgType::Query,
            Body::Response(_) => MsgType::Response,
            Body::Notify(_) => MsgType::Notify,
        }
    }

    /// The unknown objects carried (to forward or store by their
    /// [`treatment`](UnknownObject::treatment)).
    pub fn unknown_objects(&self) -> &[UnknownObject] {
        match &self.body {
            Body::Reserve(m) => &m.unknown,
            Body::Query(m) => &m.unknown,
            Body::Response(m) => &m.unknown,
            Body::Notify(m) => &m.unknown,
        }
    }

    /// Length on the wire.
    pub fn buffer_len(&self) -> usize {
        let mut len = HEADER_LEN;
        self.for_each_object(&mut |_, body_len, _| len += OBJECT_HEADER_LEN + body_len);
        len
    }

    /// Append the message to `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let mut w = Writer::new(out);
        let (msg_flags, ack_req_allowed) = match &self.body {
            Body::Reserve(m) => (
                (u8::from(m.tear) * reserve_flags::TEAR)
                    | (u8::from(m.replace) * reserve_flags::REPLACE),
                true,
            ),
            Body::Query(m) => (u8::from(m.reserve_init) * query_flags::RESERVE_INIT, true),
            Body::Response(_) | Body::Notify(_) => (0, false),
        };
        let flags = GenericFlags {
            ack_req: self.flags.ack_req && ack_req_allowed,
            ..self.flags
        };
        CommonHeader {
            msg_type: self.msg_type().number(),
            msg_flags,
            generic_flags: flags.bits(),
        }
        .emit(&mut w);
        self.for_each_object(&mut |header, _, emit_body| {
            header.emit(&mut w);
            emit_body(&mut w);
        });
    }

    /// The message as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.buffer_len());
        self.emit(&mut v);
        v
    }

    /// Calls `f` with each object's header, body length and body writer, in emission order.
    fn for_each_object(&self, f: &mut dyn FnMut(ObjectHeader, usize, &EmitBody<'_>)) {
        let mut obj = |t: u16, len: usize, e: &EmitBody<'_>| {
            f(ObjectHeader::new(t, Extensibility::Mandatory, len), len, e)
        };
        fn qspec(obj: &mut dyn FnMut(u16, usize, &EmitBody<'_>), q: &Qspec) {
            // Every part of a QSPEC is a whole number of words, so no padding is needed.
            obj(ot::QSPEC, q.buffer_len(), &|w| q.emit(w));
        }
        let unknown: &[UnknownObject] = match &self.body {
            Body::Reserve(m) => {
                obj(ot::RSN, Rsn::LEN, &|w| m.rsn.emit(w));
                if let Some(o) = &m.rii {
                    obj(ot::RII, Rii::LEN, &|w| o.emit(w));
                }
                if let Some(o) = &m.refresh_period {
                    obj(ot::REFRESH_PERIOD, RefreshPeriod::LEN, &|w| o.emit(w));
                }
                for o in &m.bound_sessions {
                    obj(ot::BOUND_SESSION_ID, BoundSessionId::LEN, &|w| o.emit(w));
                }
                if let Some(o) = &m.session_id_list {
                    obj(ot::SESSION_ID_LIST, o.buffer_len(), &|w| o.emit(w));
                }
                if let Some(o) = &m.rsn_list {
                    obj(ot::RSN_LIST, o.buffer_len(), &|w| o.emit(w));
                }
                if let Some(o) = &m.message_binding {
                    obj(o.object_type(), MessageBinding::LEN, &|w| o.emit(w));
                }
                if let Some(o) = &m.info_spec {
                    obj(ot::INFO_SPEC, o.buffer_len(), &|w| o.emit(w));
                }
                if let Some(o) = &m.packet_classifier {
                    obj(ot::PACKET_CLASSIFIER, PacketClassifier::LEN, &|w| o.emit(w));
                }
                if let Some(q) = &m.qspec {
                    qspec(&mut obj, q);
                }
                &m.unknown
            }
            Body::Query(m) => {
                if let Some(o) = &m.rii {
                    obj(ot::RII, Rii::LEN, &|w| o.emit(w));
                }
                for o in &m.bound_sessions {
                    obj(ot::BOUND_SESSION_ID, BoundSessionId::LEN, &|w| o.emit(w));
                }
                if let Some(o) = &m.packet_classifier {
                    obj(ot::PACKET_CLASSIFIER, PacketClassifier::LEN, &|w| o.emit(w));
                }
                if let Some(o) = &m.info_spec {
                    obj(ot::INFO_SPEC, o.buffer_len(), &|w| o.emit(w));
                }
                qspec(&mut obj, &m.qspec);
                if let Some(q) = &m.second_qspec {
                    qspec(&mut obj, q);
                }
                &m.unknown
            }
            Body::Response(m) => {
                match &m.answers {
                    Some(Answers::Rii(o)) => obj(ot::RII, Rii::LEN, &|w| o.emit(w)),
                    Some(Answers::Rsn(o)) => obj(ot::RSN, Rsn::LEN, &|w| o.emit(w)),
                    None => {}
                }
                obj(ot::INFO_SPEC, m.info_spec.buffer_len(), &|w| {
                    m.info_spec.emit(w)
                });
                if let Some(o) = &m.session_id_list {
                    obj(ot::SESSION_ID_LIST, o.buffer_len(), &|w| o.emit(w));
                }
                if let Some(o) = &m.rsn_list {
                    obj(ot::RSN_LIST, o.buffer_len(), &|w| o.emit(w));
                }
                if let Some(q) = &m.qspec {
                    qspec(&mut obj, q);
                }
                &m.unknown
            }
            Body::Notify(m) => {
                obj(ot::INFO_SPEC, m.info_spec.buffer_len(), &|w| {
                    m.info_spec.emit(w)
                });
                if let Some(q) = &m.qspec {
                    qspec(&mut obj, q);
                }
                &m.unknown
            }
        };
        for u in unknown {
            let len = u.buffer_len();
            f(
                ObjectHeader::new(u.object_type, u.treatment, len),
                len,
                &|w| super::write_padded(w, &u.body),
            );
        }
    }

    /// Parse a message (the whole NSLP-Data).
    pub fn parse(buf: &[u8]) -> Result<Self, ParseError> {
        let err = ParseError::at;
        let header = CommonHeader::parse(buf)
            .map_err(|_| err(ParseErrorKind::Truncated { len: buf.len() }, 0))?;
        let msg_type = MsgType::from_number(header.msg_type)
            .ok_or_else(|| err(ParseErrorKind::UnknownMessageType(header.msg_type), 0))?;
        let objects = buf.get(HEADER_LEN..).unwrap_or(&[]);
        let mut c = Collected::parse(msg_type, objects)?;
        let missing = |t| err(ParseErrorKind::MissingObject(t), buf.len());
        let illegal = |t: u16| err(ParseErrorKind::IllegalObject(t), c.at(t));
        // `[ SESSION-ID-LIST [ RSN-LIST ] ]`: an RSN-LIST needs the list it refers to.
        if c.rsn_list.is_some() && c.session_id_list.is_none() {
            return Err(missing(ot::SESSION_ID_LIST));
        }
        let mut flags = GenericFlags::from_bits(header.generic_flags);
        let body = match msg_type {
            MsgType::Reserve => {
                let rsn = c.rsn.ok_or_else(|| missing(ot::RSN))?;
                // `[ [ PACKET-CLASSIFIER ] QSPEC ]`, and §5.1.2.1: a reduced refresh without a
                // QSPEC "MUST NOT include a PACKET-CLASSIFIER either".
                if c.packet_classifier.is_some() && c.qspecs.is_empty() {
                    return Err(illegal(ot::PACKET_CLASSIFIER));
                }
                if flags.ack_req && c.rii.is_some() {
                    return Err(err(
                        ParseErrorKind::BadGenericFlags(header.generic_flags),
                        0,
                    ));
                }
                Body::Reserve(Reserve {
                    tear: header.msg_flags & reserve_flags::TEAR != 0,
                    replace: header.msg_flags & reserve_flags::REPLACE != 0,
                    rsn,
                    rii: c.rii,
                    refresh_period: c.refresh_period,
                    bound_sessions: c.bound_sessions,
                    session_id_list: c.session_id_list,
                    rsn_list: c.rsn_list,
                    message_binding: c.message_binding,
                    info_spec: c.info_spec,
                    packet_classifier: c.packet_classifier,
                    qspec: c.qspecs.pop(),
                    unknown: c.unknown,
                })
            }
            MsgType::Query => {
                let mut qspecs = c.qspecs.into_iter();
                let qspec = qspecs.next().ok_or_else(|| missing(ot::QSPEC))?;
                Body::Query(Query {
                    reserve_init: header.msg_flags & query_flags::RESERVE_INIT != 0,
                    rii: c.rii,
                    bound_sessions: c.bound_sessions,
                    packet_classifier: c.packet_classifier,
                    info_spec: c.info_spec,
                    qspec,
                    second_qspec: qspecs.next(),
                    unknown: c.unknown,
                })
            }
            MsgType::Response => {
                flags.ack_req = false;
                let info_spec = c.info_spec.take().ok_or_else(|| missing(ot::INFO_SPEC))?;
                let answers = match (c.rii, c.rsn) {
                    (Some(_), Some(_)) => {
                        // `[ RII / RSN ]`: one or the other; report the later one.
                        let t = if c.at(ot::RII) > c.at(ot::RSN) {
                            ot::RII
                        } else {
                            ot::RSN
                        };
                        return Err(err(ParseErrorKind::IllegalObject(t), c.at(t)));
                    }
                    (Some(rii), None) => Some(Answers::Rii(rii)),
                    (None, Some(rsn)) => Some(Answers::Rsn(rsn)),
                    (None, None) => None,
                };
                Body::Response(Response {
                    answers,
                    info_spec,
                    session_id_list: c.session_id_list,
                    rsn_list: c.rsn_list,
                    qspec: c.qspecs.pop(),
                    unknown: c.unknown,
                })
            }
            MsgType::Notify => {
                flags.ack_req = false;
                let info_spec = c.info_spec.take().ok_or_else(|| missing(ot::INFO_SPEC))?;
                Body::Notify(Notify {
                    info_spec,
                    qspec: c.qspecs.pop(),
                    unknown: c.unknown,
                })
            }
        };
        Ok(Message { flags, body })
    }
}

/// How many objects of a known type a message type allows (§5.1.2): 0 means the grammar does
/// not list it.
fn allowed(msg: MsgType, t: u16) -> usize {
    use MsgType as M;
    match (msg, t) {
        (M::Reserve | M::Query, ot::BOUND_SESSION_ID) => usize::MAX,
        (M::Query, ot::QSPEC) => 2,
        (
            M::Reserve,
            ot::RSN
            | ot::RII
            | ot::REFRESH_PERIOD
            | ot::SESSION_ID_LIST
            | ot::RSN_LIST
            | ot::MSG_ID
            | ot::BOUND_MSG_ID
            | ot::INFO_SPEC
            | ot::PACKET_CLASSIFIER
            | ot::QSPEC,
        ) => 1,
        (M::Query, ot::RII | ot::PACKET_CLASSIFIER | ot::INFO_SPEC) => 1,
        (
            M::Response,
            ot::RII | ot::RSN | ot::INFO_SPEC | ot::SESSION_ID_LIST | ot::RSN_LIST | ot::QSPEC,
        ) => 1,
        (M::Notify, ot::INFO_SPEC | ot::QSPEC) => 1,
        _ => 0,
    }
}

/// The objects of one message, gathered in any order.
#[derive(Default)]
struct Collected {
    rii: Option<Rii>,
    rsn: Option<Rsn>,
    refresh_period: Option<RefreshPeriod>,
    bound_sessions: Vec<BoundSessionId>,
    packet_classifier: Option<PacketClassifier>,
    info_spec: Option<InfoSpec>,
    session_id_list: Option<SessionIdList>,
    rsn_list: Option<RsnList>,
    message_binding: Option<MessageBinding>,
    qspecs: Vec<Qspec>,
    unknown: Vec<UnknownObject>,
    /// Per known type (index = type): how many seen, and the offset of the last one.
    seen: [(usize, usize); 12],
}

impl Collected {
    /// Offset within the message of the (last) object of known type `t`.
    fn at(&self, t: u16) -> usize {
        self.seen.get(usize::from(t)).map_or(0, |s| s.1)
    }

    fn parse(msg: MsgType, objects: &[u8]) -> Result<Self, ParseError> {
        let mut c = Collected::default();
        let mut iter = TlvIter::<ObjectHeader>::new(objects);
        loop {
            let at = HEADER_LEN + iter.position();
            let Some(item) = iter.next() else { break };
            let (h, body) = item.map_err(|_| {
                let rest = &objects[at - HEADER_LEN..];
                let kind = if rest.len() < OBJECT_HEADER_LEN {
                    ParseErrorKind::TrailingBytes { len: rest.len() }
                } else {
                    ParseErrorKind::WrongObjectLength {
                        object_type: u16::from_be_bytes([rest[0], rest[1]]) & 0x0fff,
                        length_words: u16::from_be_bytes([rest[2], rest[3]]) & 0x0fff,
                    }
                };
                ParseError::at(kind, at)
            })?;
            let t = h.object_type;
            if !ot::is_known(t) {
                if h.extensibility == Extensibility::Mandatory {
                    return Err(ParseError::at(ParseErrorKind::UnknownObject(t), at));
                }
                c.unknown.push(UnknownObject {
                    object_type: t,
                    treatment: h.extensibility,
                    body: body.to_vec(),
                });
                continue;
            }
            let seen = &mut c.seen[usize::from(t)];
            if allowed(msg, t) == 0 {
                return Err(ParseError::at(ParseErrorKind::IllegalObject(t), at));
            }
            if seen.0 >= allowed(msg, t) {
                return Err(ParseError::at(ParseErrorKind::DuplicateObject(t), at));
            }
            *seen = (seen.0 + 1, at);
            // `[ MSG-ID / BOUND-MSG-ID ]`: one or the other.
            if let Some(b) = &c.message_binding
                && matches!(t, ot::MSG_ID | ot::BOUND_MSG_ID)
            {
                let kind = if b.object_type() == t {
                    ParseErrorKind::DuplicateObject(t)
                } else {
                    ParseErrorKind::IllegalObject(t)
                };
                return Err(ParseError::at(kind, at));
            }
            c.take(t, body).map_err(|e| {
                let kind = match e {
                    BodyError::Length => ParseErrorKind::WrongObjectLength {
                        object_type: t,
                        length_words: h.length_words,
                    },
                    BodyError::Value(fault) => ParseErrorKind::ObjectValue {
                        object_type: t,
                        fault,
                    },
                    BodyError::Qspec(e) => ParseErrorKind::Qspec(e),
                };
                ParseError::at(kind, at)
            })?;
        }
        Ok(c)
    }

    fn take(&mut self, t: u16, body: &[u8]) -> Result<(), BodyError> {
        match t {
            ot::RII => self.rii = Some(Rii::parse(body)?),
            ot::RSN => self.rsn = Some(Rsn::parse(body)?),
            ot::REFRESH_PERIOD => self.refresh_period = Some(RefreshPeriod::parse(body)?),
            ot::BOUND_SESSION_ID => self.bound_sessions.push(BoundSessionId::parse(body)?),
            ot::PACKET_CLASSIFIER => self.packet_classifier = Some(PacketClassifier::parse(body)?),
            ot::INFO_SPEC => self.info_spec = Some(InfoSpec::parse(body)?),
            ot::SESSION_ID_LIST => self.session_id_list = Some(SessionIdList::parse(body)?),
            ot::RSN_LIST => self.rsn_list = Some(RsnList::parse(body)?),
            ot::MSG_ID | ot::BOUND_MSG_ID => {
                self.message_binding = Some(MessageBinding::parse(t, body)?)
            }
            _ => self
                .qspecs
                .push(Qspec::parse(body).map_err(BodyError::Qspec)?),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::info_spec::{ErrorClass, code};
    use super::super::vectors::{self, RESERVE_INITIAL};
    use super::*;

    fn kind(b: &[u8]) -> (ParseErrorKind, usize) {
        let e = Message::parse(b).unwrap_err();
        (e.kind, e.offset)
    }

    /// Builds a message from a header and (type, AB, body) objects.
    fn raw(
        msg_type: u8,
        msg_flags: u8,
        generic: u16,
        objects: &[(u16, Extensibility, &[u8])],
    ) -> Vec<u8> {
        let mut v = Vec::new();
        let mut w = Writer::new(&mut v);
        CommonHeader {
            msg_type,
            msg_flags,
            generic_flags: generic,
        }
        .emit(&mut w);
        for (t, e, body) in objects {
            ObjectHeader::new(*t, *e, body.len()).emit(&mut w);
            w.bytes(body);
        }
        v
    }

    const M: Extensibility = Extensibility::Mandatory;
    const RSN: &[u8] = &[0, 0, 0, 1, 0, 0, 0, 2];
    const RII: &[u8] = &[0, 0, 0, 9];
    const INFO: &[u8] = &[0, 1, 0x20, 0];

    fn qspec() -> Vec<u8> {
        vectors::qspec_desired().to_bytes()
    }

    #[test]
    fn reserve_deconstruct() {
        let m = Message::parse(&RESERVE_INITIAL).unwrap();
        assert_eq!(m, vectors::reserve_initial());
        assert_eq!(m.msg_type(), MsgType::Reserve);
        let Body::Reserve(r) = &m.body else {
            panic!("not a RESERVE")
        };
        assert!(r.replace && !r.tear);
        assert_eq!(r.rsn.rsn, 1);
        assert_eq!(r.rii, Some(Rii(42)));
        let q = r.qspec.as_ref().unwrap();
        assert_eq!(q.objects[0].tmod1().unwrap().max_packet_size, 1500);
    }

    #[test]
    fn reserve_construct_pre_filled() {
        let m = vectors::reserve_initial();
        let mut v = vec![0xa5; 7];
        m.emit(&mut v);
        assert_eq!(v[..7], [0xa5; 7]);
        assert_eq!(v[7..], RESERVE_INITIAL);
        assert_eq!(m.buffer_len(), RESERVE_INITIAL.len());
    }

    #[test]
    fn every_sample_round_trips() {
        for (name, m) in vectors::all() {
            let b = m.to_bytes();
            assert_eq!(b.len(), m.buffer_len(), "{name}");
            assert_eq!(Message::parse(&b).as_ref(), Ok(&m), "{name}");
        }
    }

    #[test]
    fn objects_in_any_order() {
        // §5.1: "MUST accept the objects in any order".
        let q = qspec();
        let b = raw(
            1,
            0,
            0,
            &[(ot::QSPEC, M, &q), (ot::RII, M, RII), (ot::RSN, M, RSN)],
        );
        let m = Message::parse(&b).unwrap();
        let Body::Reserve(r) = &m.body else {
            panic!("not a RESERVE")
        };
        assert_eq!(r.rii, Some(Rii(9)));
        assert!(r.qspec.is_some());
        // Emitted in the grammar's order.
        assert_eq!(m.to_bytes()[4..8], [0x00, 0x02, 0x00, 0x02]);
    }

    #[test]
    fn header_errors() {
        assert_eq!(kind(&[1, 0, 0]), (ParseErrorKind::Truncated { len: 3 }, 0));
        assert_eq!(
            kind(&raw(0, 0, 0, &[])),
            (ParseErrorKind::UnknownMessageType(0), 0)
        );
        assert_eq!(
            kind(&raw(5, 0, 0, &[])),
            (ParseErrorKind::UnknownMessageType(5), 0)
        );
        let mut b = raw(1, 0, 0, &[(ot::RSN, M, RSN)]);
        b.extend([0, 0]);
        assert_eq!(kind(&b), (ParseErrorKind::TrailingBytes { len: 2 }, 16));
        assert_eq!(
            ParseErrorKind::TrailingBytes { len: 2 }.info_spec(),
            (
                ErrorClass::ProtocolError,
                code::protocol::WRONG_MESSAGE_LENGTH
            )
        );
    }

    #[test]
    fn flags_per_message_type() {
        // Undefined message-specific and reserved generic bits are ignored (§5.1.1).
        let b = raw(1, 0xfc, 0xfff0, &[(ot::RSN, M, RSN)]);
        let m = Message::parse(&b).unwrap();
        assert_eq!(m.flags, GenericFlags::default());
        assert_eq!(m.to_bytes()[..4], [1, 0, 0, 0]);
        // QUERY has only RESERVE-INIT.
        let q = qspec();
        let m = Message::parse(&raw(2, 0x03, 0, &[(ot::QSPEC, M, &q)])).unwrap();
        assert!(matches!(&m.body, Body::Query(q) if q.reserve_init));
        assert_eq!(m.to_bytes()[1], 0x01);
        // ACK-REQ is ignored on RESPONSE and NOTIFY, kept on RESERVE and QUERY.
        let m = Message::parse(&raw(3, 0xff, 0x000f, &[(ot::INFO_SPEC, M, INFO)])).unwrap();
        assert!(!m.flags.ack_req && m.flags.scoping && m.flags.proxy && m.flags.break_);
        assert_eq!(m.to_bytes()[..4], [3, 0, 0, 0x0b]);
        let m = Message::parse(&raw(4, 0, 0x0004, &[(ot::INFO_SPEC, M, INFO)])).unwrap();
        assert!(!m.flags.ack_req);
        // ACK-REQ with an RII on a RESERVE is a bad combination (0x03).
        let b = raw(1, 0, 0x0004, &[(ot::RSN, M, RSN), (ot::RII, M, RII)]);
        let (k, _) = kind(&b);
        assert_eq!(k, ParseErrorKind::BadGenericFlags(0x0004));
        assert_eq!(
            k.info_spec(),
            (ErrorClass::ProtocolError, code::protocol::BAD_GENERIC_FLAGS)
        );
    }

    #[test]
    fn missing_mandatory_objects() {
        let q = qspec();
        for (b, t) in [
            (raw(1, 0, 0, &[(ot::RII, M, RII)]), ot::RSN),
            (raw(2, 0, 0, &[(ot::RII, M, RII)]), ot::QSPEC),
            (raw(3, 0, 0, &[(ot::QSPEC, M, &q)]), ot::INFO_SPEC),
            (raw(4, 0, 0, &[]), ot::INFO_SPEC),
        ] {
            let (k, at) = kind(&b);
            assert_eq!(k, ParseErrorKind::MissingObject(t));
            assert_eq!(at, b.len());
            assert_eq!(k.info_spec().1, code::protocol::MANDATORY_OBJECT_MISSING);
            assert_eq!(k.object_type(), Some(t));
        }
        // An RSN-LIST without the SESSION-ID-LIST it refers to.
        let b = raw(
            1,
            0,
            0,
            &[(ot::RSN, M, RSN), (ot::RSN_LIST, M, &[0, 0, 0, 1])],
        );
        assert_eq!(
            kind(&b).0,
            ParseErrorKind::MissingObject(ot::SESSION_ID_LIST)
        );
    }

    #[test]
    fn illegal_and_duplicate_objects() {
        let q = qspec();
        let pc: &[u8] = &[0x80, 0, 0, 0];
        // RSN is not in QUERY's grammar.
        let b = raw(2, 0, 0, &[(ot::QSPEC, M, &q), (ot::RSN, M, RSN)]);
        assert_eq!(
            kind(&b),
            (ParseErrorKind::IllegalObject(ot::RSN), 4 + 4 + q.len())
        );
        // REFRESH-PERIOD is not in NOTIFY's.
        let b = raw(
            4,
            0,
            0,
            &[(ot::INFO_SPEC, M, INFO), (ot::REFRESH_PERIOD, M, RII)],
        );
        assert_eq!(
            kind(&b),
            (ParseErrorKind::IllegalObject(ot::REFRESH_PERIOD), 12)
        );
        // A PACKET-CLASSIFIER without a QSPEC (reduced refresh).
        let b = raw(
            1,
            0,
            0,
            &[(ot::PACKET_CLASSIFIER, M, pc), (ot::RSN, M, RSN)],
        );
        assert_eq!(
            kind(&b),
            (ParseErrorKind::IllegalObject(ot::PACKET_CLASSIFIER), 4)
        );
        // RII and RSN together in a RESPONSE: the later one is reported.
        let b = raw(
            3,
            0,
            0,
            &[
                (ot::RSN, M, RSN),
                (ot::INFO_SPEC, M, INFO),
                (ot::RII, M, RII),
            ],
        );
        assert_eq!(kind(&b), (ParseErrorKind::IllegalObject(ot::RII), 24));
        // MSG-ID and BOUND-MSG-ID together.
        let id = [0u8; 20];
        let b = raw(
            1,
            0,
            0,
            &[
                (ot::RSN, M, RSN),
                (ot::MSG_ID, M, &id),
                (ot::BOUND_MSG_ID, M, &id),
            ],
        );
        let (k, at) = kind(&b);
        assert_eq!(
            (k, at),
            (ParseErrorKind::IllegalObject(ot::BOUND_MSG_ID), 40)
        );
        assert_eq!(k.info_spec().1, code::protocol::ILLEGAL_OBJECT_PRESENT);
        // Duplicates: two RSNs; a third QSPEC in a QUERY. Two BOUND-SESSION-IDs are fine.
        let b = raw(1, 0, 0, &[(ot::RSN, M, RSN), (ot::RSN, M, RSN)]);
        let (k, at) = kind(&b);
        assert_eq!((k, at), (ParseErrorKind::DuplicateObject(ot::RSN), 16));
        assert_eq!(k.info_spec().1, code::protocol::DUPLICATE_OBJECT_PRESENT);
        let b = raw(
            2,
            0,
            0,
            &[(ot::QSPEC, M, &q), (ot::QSPEC, M, &q), (ot::QSPEC, M, &q)],
        );
        assert_eq!(kind(&b).0, ParseErrorKind::DuplicateObject(ot::QSPEC));
        let bsid = [0u8; 20];
        let b = raw(
            1,
            0,
            0,
            &[
                (ot::RSN, M, RSN),
                (ot::BOUND_SESSION_ID, M, &bsid),
                (ot::BOUND_SESSION_ID, M, &bsid),
            ],
        );
        assert!(
            matches!(Message::parse(&b).unwrap().body, Body::Reserve(r) if r.bound_sessions.len() == 2)
        );
    }

    #[test]
    fn wrong_lengths_and_values() {
        // RSN of one word.
        let b = raw(1, 0, 0, &[(ot::RSN, M, &[0, 0, 0, 1])]);
        let (k, at) = kind(&b);
        assert_eq!(
            (k, at),
            (
                ParseErrorKind::WrongObjectLength {
                    object_type: ot::RSN,
                    length_words: 1
                },
                4
            )
        );
        assert_eq!(k.info_spec().1, code::protocol::WRONG_OBJECT_LENGTH);
        // An object running past the message.
        let mut b = raw(1, 0, 0, &[(ot::RSN, M, RSN)]);
        b[7] = 3;
        assert_eq!(
            kind(&b),
            (
                ParseErrorKind::WrongObjectLength {
                    object_type: ot::RSN,
                    length_words: 3
                },
                4
            )
        );
        // An INFO-SPEC whose ESI-Length runs past it (0x0e).
        let b = raw(
            4,
            0,
            0,
            &[(ot::INFO_SPEC, M, &[0, 1, 0x21, 0x02, 1, 2, 3, 4])],
        );
        let (k, _) = kind(&b);
        assert!(matches!(
            k,
            ParseErrorKind::ObjectValue {
                object_type: ot::INFO_SPEC,
                ..
            }
        ));
        assert_eq!(k.info_spec().1, code::protocol::ERRONEOUS_TLV_VALUE);
        // A malformed QSPEC (0x0c) and an incompatible one (0x0f).
        let mut q = qspec();
        q[3] += 1;
        let (k, at) = kind(&raw(
            4,
            0,
            0,
            &[(ot::INFO_SPEC, M, INFO), (ot::QSPEC, M, &q)],
        ));
        assert_eq!(at, 12);
        assert_eq!(
            k.info_spec(),
            (ErrorClass::ProtocolError, code::protocol::MALFORMED_QSPEC)
        );
        let mut q = qspec();
        q[0] = 0x10;
        let (k, _) = kind(&raw(
            4,
            0,
            0,
            &[(ot::INFO_SPEC, M, INFO), (ot::QSPEC, M, &q)],
        ));
        assert_eq!(
            k.info_spec(),
            (
                ErrorClass::ProtocolError,
                code::protocol::INCOMPATIBLE_QSPEC
            )
        );
    }

    #[test]
    fn unknown_objects_by_their_ab_flags() {
        // §5.1.3: AB=00 rejects the message with "Unknown object present".
        let b = raw(1, 0, 0, &[(ot::RSN, M, RSN), (0x123, M, &[1, 2, 3, 4])]);
        let (k, at) = kind(&b);
        assert_eq!((k, at), (ParseErrorKind::UnknownObject(0x123), 16));
        assert_eq!(k.info_spec().1, code::protocol::UNKNOWN_OBJECT_PRESENT);
        // AB=01, 10, 11 are kept with their treatment and survive a round trip.
        let b = raw(
            1,
            0,
            0,
            &[
                (0x200, Extensibility::Ignore, &[9, 9, 9, 9]),
                (ot::RSN, M, RSN),
                (0x201, Extensibility::Forward, &[]),
                (0x202, Extensibility::Refresh, &[1, 2, 3, 4, 5, 6, 7, 8]),
            ],
        );
        let m = Message::parse(&b).unwrap();
        let u = m.unknown_objects();
        assert_eq!(u.len(), 3);
        assert_eq!(
            (u[0].object_type, u[0].treatment),
            (0x200, Extensibility::Ignore)
        );
        assert!(!u[0].treatment.forwarded());
        assert!(u[1].treatment.forwarded() && !u[1].treatment.stored());
        assert!(u[2].treatment.stored());
        assert_eq!(u[2].body, [1, 2, 3, 4, 5, 6, 7, 8]);
        let again = m.to_bytes();
        assert_eq!(Message::parse(&again).unwrap(), m);
        assert_eq!(
            again[16..20],
            [0x42, 0x00, 0x00, 0x01],
            "AB=01 header re-emitted"
        );
    }

    #[test]
    fn response_and_notify_layouts() {
        // RESPONSE: RII 42, INFO-SPEC Success/0x01 from 192.0.2.9 (§5.1.2.3, §5.1.3.6).
        let b = vectors::response_success().to_bytes();
        assert_eq!(
            b,
            [
                0x03, 0x00, 0x00, 0x00, // RESPONSE
                0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x2a, // RII 42
                0x00, 0x06, 0x00, 0x02, // INFO-SPEC, 2 words
                0x00, 0x01, 0x21, 0x01, 192, 0, 2, 9,
            ]
        );
        // NOTIFY: INFO-SPEC first, QSPEC second.
        let b = vectors::notify_route_change().to_bytes();
        assert_eq!(b[..4], [0x04, 0x00, 0x00, 0x08]);
        assert_eq!(b[4..8], [0x00, 0x06, 0x00, 0x05]);
        assert_eq!(b[8..12], [0x00, 0x02, 0x13, 0x04]);
    }
}
