//! Parsing whole messages (RFC 2205 §3.1.1–§3.1.9, §3.10; RFC 3209 §3.1.1, §3.2.1). The rules
//! are listed in the parent module's documentation; the flow descriptor list is built in
//! [`flows`](super::flows).

use crate::few::Few;
use std::net::IpAddr;

use super::flows::{
    FlowObject, FlowObjects, FlowRules, bind_label, bind_record_route, flow_descriptors,
};
use super::grammar::{KNOWN, allowed, ignored, skipped};
use super::refresh::{Ack, Refresh, Srefresh};
use super::{
    CommonHeader, FilterTe, FlowDescriptor, Hello, HelloObject, IntegrityChallenge,
    IntegrityResponse, Message, MsgType, Packet, Path, PathErr, PathTear, Resv, ResvConf, ResvErr,
    ResvTear, SenderDescriptor,
};
use crate::wire::intserv::{Adspec, FlowSpec, SenderTspec};
use crate::wire::objects::{
    Challenge, ErrorSpec, FilterSpec, Integrity, ObjectHeader, Opaque, ResvConfirm, RsvpHop, Scope,
    Session, Style, TimeValues, class, ctype,
};
use crate::wire::te::{
    self, ExplicitRoute, LabelRequest, MessageId, MessageIdAck, MessageIdList, RecordRoute,
    SessionAttribute,
};
use crate::wire::{ParseError, ParseErrorKind};

/// Everything found in one pass over the objects.
#[derive(Default)]
struct Collected {
    integrity: Option<Integrity>,
    challenge: Option<Challenge>,
    hello: Option<HelloObject>,
    session: Option<Session>,
    hop: Option<RsvpHop>,
    time_values: Option<TimeValues>,
    error: Option<ErrorSpec>,
    scope: Option<Scope>,
    style: Option<Style>,
    confirm: Option<ResvConfirm>,
    sender_template: Option<FilterSpec>,
    sender_tspec: Option<SenderTspec>,
    adspec: Option<Adspec>,
    /// The sender descriptor's RECORD_ROUTE (Path, PathErr).
    record_route: Option<RecordRoute>,
    explicit_route: Option<ExplicitRoute>,
    label_request: Option<LabelRequest>,
    session_attribute: Option<SessionAttribute>,
    policy: Vec<Opaque>,
    flow_objects: FlowObjects,
    forward: Vec<Opaque>,
    /// MESSAGE_ID and MESSAGE_ID_ACK/NACK (RFC 2961 §4).
    refresh: Refresh,
    /// Srefresh's MESSAGE_ID_LIST objects (RFC 2961 §5.1, §5.2).
    id_lists: Vec<MessageIdList>,
    /// Known objects outside the message's grammar that were skipped (see [`skipped`]).
    skipped: Vec<SkippedObject>,
}

/// Store an object that may appear once.
fn once<T>(
    slot: &mut Option<T>,
    class: u8,
    parse: impl FnOnce() -> Result<T, ParseErrorKind>,
) -> Result<(), ParseErrorKind> {
    if slot.is_some() {
        return Err(ParseErrorKind::DuplicateObject { class });
    }
    *slot = Some(parse()?);
    Ok(())
}

/// Store the first of an object that may appear several times, of which only the first counts
/// (RFC 3209 §4.3, §4.4, §4.7); the others are dropped unread.
fn first<T>(
    slot: &mut Option<T>,
    parse: impl FnOnce() -> Result<T, ParseErrorKind>,
) -> Result<(), ParseErrorKind> {
    if slot.is_none() {
        *slot = Some(parse()?);
    }
    Ok(())
}

/// A mandatory object.
fn required<T>(slot: Option<T>, class: u8) -> Result<T, ParseErrorKind> {
    slot.ok_or(ParseErrorKind::MissingObject { class })
}

impl Collected {
    fn collect(&mut self, t: MsgType, objects: &[u8]) -> Result<(), ParseErrorKind> {
        let allowed = allowed(t);
        for (position, item) in ObjectHeader::iter(objects).enumerate() {
            let (h, body) = item?;
            let (cls, ct) = (h.class, h.ctype);
            if cls == class::NULL {
                continue; // §A.0: contents ignored
            }
            if !KNOWN.contains(cls) {
                // §3.10: the two high-order bits of Class-Num say what to do.
                match cls >> 6 {
                    0b11 => self.forward.push(Opaque::parse(cls, ct, body)),
                    0b10 => {}
                    _ => {
                        return Err(ParseErrorKind::UnknownObjectClass {
                            class: cls,
                            ctype: ct,
                        });
                    }
                }
                continue;
            }
            if !allowed.contains(cls) {
                if ignored(t, cls) {
                    continue;
                }
                // SESSION_ATTRIBUTE (11bbbbbb) where no BNF puts it: forwarded unexamined, as
                // RFC 2205 §3.10 has nodes that do not know it do.
                if cls >> 6 == 0b11 {
                    self.forward.push(Opaque::parse(cls, ct, body));
                    continue;
                }
                if skipped(t, cls) {
                    self.skipped.push(SkippedObject {
                        class: cls,
                        ctype: ct,
                    });
                    continue;
                }
                return Err(ParseErrorKind::UnexpectedObject {
                    class: cls,
                    ctype: ct,
                });
            }
            match cls {
                // RFC 2205 §3.1.2 / RFC 2747 §3: INTEGRITY, if present, immediately follows
                // the common header; the digest is computed with it there.
                class::INTEGRITY if position != 0 => {
                    return Err(ParseErrorKind::MisplacedIntegrity);
                }
                class::INTEGRITY => once(&mut self.integrity, cls, || Integrity::parse(ct, body))?,
                class::CHALLENGE => once(&mut self.challenge, cls, || Challenge::parse(ct, body))?,
                te::class::HELLO => once(&mut self.hello, cls, || HelloObject::parse(ct, body))?,
                te::class::MESSAGE_ID => once(&mut self.refresh.message_id, cls, || {
                    MessageId::parse(ct, body)
                })?,
                te::class::MESSAGE_ID_ACK => self.refresh.acks.push(MessageIdAck::parse(ct, body)?),
                te::class::MESSAGE_ID_LIST => {
                    let list = MessageIdList::parse(ct, body)?;
                    // RFC 2961 §5.2: "MESSAGE_ID SRC_LIST can not be combined in Srefresh
                    // messages with the other objects."
                    if self
                        .id_lists
                        .first()
                        .is_some_and(|l| l.ids.is_src_list() != list.ids.is_src_list())
                    {
                        return Err(ParseErrorKind::UnexpectedObject {
                            class: cls,
                            ctype: ct,
                        });
                    }
                    self.id_lists.push(list);
                }
                class::POLICY_DATA => {
                    if ct != ctype::TYPE_1 {
                        return Err(ParseErrorKind::unknown_ctype(cls, ct));
                    }
                    self.policy.push(Opaque::parse(cls, ct, body));
                }
                class::SESSION => once(&mut self.session, cls, || Session::parse(ct, body))?,
                class::RSVP_HOP => once(&mut self.hop, cls, || RsvpHop::parse(ct, body))?,
                class::TIME_VALUES => {
                    once(&mut self.time_values, cls, || TimeValues::parse(ct, body))?
                }
                class::ERROR_SPEC => once(&mut self.error, cls, || ErrorSpec::parse(ct, body))?,
                class::SCOPE => once(&mut self.scope, cls, || Scope::parse(ct, body))?,
                class::STYLE => once(&mut self.style, cls, || Style::parse(ct, body))?,
                class::RESV_CONFIRM => {
                    once(&mut self.confirm, cls, || ResvConfirm::parse(ct, body))?
                }
                class::SENDER_TEMPLATE => once(&mut self.sender_template, cls, || {
                    FilterSpec::parse_as(cls, ct, body)
                })?,
                class::SENDER_TSPEC => {
                    once(&mut self.sender_tspec, cls, || SenderTspec::parse(ct, body))?
                }
                class::ADSPEC => once(&mut self.adspec, cls, || Adspec::parse(ct, body))?,
                te::class::EXPLICIT_ROUTE => {
                    first(&mut self.explicit_route, || ExplicitRoute::parse(ct, body))?
                }
                te::class::LABEL_REQUEST => once(&mut self.label_request, cls, || {
                    LabelRequest::parse(ct, body)
                })?,
                te::class::SESSION_ATTRIBUTE => first(&mut self.session_attribute, || {
                    SessionAttribute::parse(ct, body)
                })?,
                // In a sender descriptor (Path, PathErr), or bound to a FILTER_SPEC.
                te::class::RECORD_ROUTE if matches!(t, MsgType::Path | MsgType::PathErr) => {
                    first(&mut self.record_route, || RecordRoute::parse(ct, body))?
                }
                te::class::RECORD_ROUTE => bind_record_route(&mut self.flow_objects, ct, body)?,
                te::class::LABEL => bind_label(&mut self.flow_objects, ct, body)?,
                class::FLOWSPEC => self
                    .flow_objects
                    .push(FlowObject::Flowspec(FlowSpec::parse(ct, body)?)),
                _ => self.flow_objects.push(FlowObject::Filter(
                    FilterSpec::parse(ct, body)?,
                    FilterTe::default(),
                )),
            }
        }
        Ok(())
    }

    /// Every address-carrying object must be of the SESSION's family, and every sender named
    /// of its kind (LSP_TUNNEL or IP).
    fn check_family(&self, session: &Session) -> Result<(), ParseErrorKind> {
        let v4 = session.dest.is_ipv4();
        let check = |addr: IpAddr, class: u8, ctype: u8| {
            if addr.is_ipv4() == v4 {
                Ok(())
            } else {
                Err(ParseErrorKind::FamilyMismatch { class, ctype })
            }
        };
        let check_sender = |f: &FilterSpec, class: u8| {
            if f.is_lsp_tunnel() != session.is_lsp_tunnel() {
                return Err(ParseErrorKind::SessionTypeMismatch {
                    class,
                    ctype: f.ctype(),
                });
            }
            check(f.src(), class, f.ctype())
        };
        if let Some(h) = &self.hop {
            check(h.addr, class::RSVP_HOP, h.ctype())?;
        }
        if let Some(e) = &self.error {
            check(e.node, class::ERROR_SPEC, e.ctype())?;
        }
        if let Some(s) = &self.scope
            && let Some(a) = s.addrs.first()
        {
            check(*a, class::SCOPE, s.ctype())?;
        }
        if let Some(c) = &self.confirm {
            check(c.receiver, class::RESV_CONFIRM, c.ctype())?;
        }
        if let Some(f) = &self.sender_template {
            check_sender(f, class::SENDER_TEMPLATE)?;
        }
        for o in &self.flow_objects {
            if let FlowObject::Filter(f, _) = o {
                check_sender(f, class::FILTER_SPEC)?;
            }
        }
        Ok(())
    }

    /// The sender descriptor of a PathErr: absent, or SENDER_TEMPLATE and SENDER_TSPEC with an
    /// optional ADSPEC (§3.1.3) and RECORD_ROUTE (RFC 3209 §3.1.1).
    fn optional_sender(&mut self) -> Result<Option<SenderDescriptor>, ParseErrorKind> {
        let adspec = self.adspec.take();
        let record_route = self.record_route.take();
        match (self.sender_template, self.sender_tspec) {
            (None, None) if adspec.is_none() && record_route.is_none() => Ok(None),
            (Some(template), Some(tspec)) => Ok(Some(SenderDescriptor {
                template,
                tspec,
                adspec,
                record_route,
            })),
            (None, ..) => Err(ParseErrorKind::MissingObject {
                class: class::SENDER_TEMPLATE,
            }),
            (Some(_), None) => Err(ParseErrorKind::MissingObject {
                class: class::SENDER_TSPEC,
            }),
        }
    }

    fn flows(&mut self, rules: FlowRules) -> Result<(Style, Few<FlowDescriptor>), ParseErrorKind> {
        let style = required(self.style, class::STYLE)?;
        let objects = std::mem::take(&mut self.flow_objects);
        Ok((style, flow_descriptors(style, objects, rules)?))
    }

    fn assemble(mut self, t: MsgType) -> Result<Message, ParseErrorKind> {
        match t {
            MsgType::IntegrityChallenge => {
                return Ok(Message::IntegrityChallenge(IntegrityChallenge {
                    challenge: required(self.challenge, class::CHALLENGE)?,
                }));
            }
            MsgType::IntegrityResponse => {
                return Ok(Message::IntegrityResponse(IntegrityResponse {
                    integrity: Some(required(self.integrity, class::INTEGRITY)?),
                    challenge: required(self.challenge, class::CHALLENGE)?,
                }));
            }
            MsgType::Ack => {
                return Ok(Message::Ack(Ack {
                    integrity: self.integrity,
                }));
            }
            MsgType::Srefresh => {
                return Ok(Message::Srefresh(Srefresh {
                    integrity: self.integrity,
                    lists: if self.id_lists.is_empty() {
                        return Err(ParseErrorKind::MissingObject {
                            class: te::class::MESSAGE_ID_LIST,
                        });
                    } else {
                        self.id_lists
                    },
                }));
            }
            // RFC 3209 §5.1: <Common Header> [ <INTEGRITY> ] <HELLO>
            MsgType::Hello => {
                return Ok(Message::Hello(Hello {
                    integrity: self.integrity,
                    object: required(self.hello, te::class::HELLO)?,
                }));
            }
            _ => {}
        }
        let session = required(self.session, class::SESSION)?;
        self.check_family(&session)?;
        let integrity = self.integrity.take();
        let policy = std::mem::take(&mut self.policy);
        let forward = std::mem::take(&mut self.forward);
        Ok(match t {
            MsgType::Path => {
                let hop = required(self.hop.take(), class::RSVP_HOP)?;
                let time_values = required(self.time_values, class::TIME_VALUES)?;
                // RFC 3209 §3.1.1: <LABEL_REQUEST> is not optional in an LSP tunnel's Path.
                if session.is_lsp_tunnel() && self.label_request.is_none() {
                    return Err(ParseErrorKind::MissingObject {
                        class: te::class::LABEL_REQUEST,
                    });
                }
                Message::Path(Path {
                    integrity,
                    session,
                    hop,
                    time_values,
                    explicit_route: self.explicit_route,
                    label_request: self.label_request,
                    session_attribute: self.session_attribute,
                    policy,
                    sender: SenderDescriptor {
                        template: required(self.sender_template, class::SENDER_TEMPLATE)?,
                        tspec: required(self.sender_tspec, class::SENDER_TSPEC)?,
                        adspec: self.adspec,
                        record_route: self.record_route,
                    },
                    forward,
                })
            }
            MsgType::Resv => {
                let hop = required(self.hop.take(), class::RSVP_HOP)?;
                let time_values = required(self.time_values, class::TIME_VALUES)?;
                let (style, flows) = self.flows(FlowRules::Required)?;
                Message::Resv(Resv {
                    integrity,
                    session,
                    hop,
                    time_values,
                    confirm: self.confirm,
                    scope: self.scope,
                    policy,
                    style,
                    flows,
                    forward,
                })
            }
            MsgType::PathErr => Message::PathErr(PathErr {
                integrity,
                session,
                error: required(self.error, class::ERROR_SPEC)?,
                policy,
                sender: self.optional_sender()?,
                forward,
            }),
            MsgType::ResvErr => {
                let hop = required(self.hop.take(), class::RSVP_HOP)?;
                let error = required(self.error, class::ERROR_SPEC)?;
                let (style, flows) = self.flows(FlowRules::Optional)?;
                Message::ResvErr(ResvErr {
                    integrity,
                    session,
                    hop,
                    error,
                    scope: self.scope,
                    policy,
                    style,
                    flows,
                    forward,
                })
            }
            MsgType::PathTear => {
                if self.sender_template.is_none() && self.sender_tspec.is_some() {
                    return Err(ParseErrorKind::MissingObject {
                        class: class::SENDER_TEMPLATE,
                    });
                }
                Message::PathTear(PathTear {
                    integrity,
                    session,
                    hop: required(self.hop, class::RSVP_HOP)?,
                    sender_template: self.sender_template,
                    sender_tspec: self.sender_tspec,
                    forward,
                })
            }
            MsgType::ResvTear => {
                let hop = required(self.hop.take(), class::RSVP_HOP)?;
                let (style, flows) = self.flows(FlowRules::Tear)?;
                Message::ResvTear(ResvTear {
                    integrity,
                    session,
                    hop,
                    scope: self.scope,
                    style,
                    flows,
                    forward,
                })
            }
            MsgType::ResvConf => {
                let error = required(self.error, class::ERROR_SPEC)?;
                let confirm = required(self.confirm, class::RESV_CONFIRM)?;
                let (style, flows) = self.flows(FlowRules::Required)?;
                Message::ResvConf(ResvConf {
                    integrity,
                    session,
                    error,
                    confirm,
                    style,
                    flows,
                    forward,
                })
            }
            // The non-session messages returned above; unknown types never get here.
            MsgType::IntegrityChallenge
            | MsgType::IntegrityResponse
            | MsgType::Hello
            | MsgType::Ack
            | MsgType::Srefresh
            | MsgType::Bundle
            | MsgType::Unknown(_) => {
                return Err(ParseErrorKind::UnknownMsgType(u8::from(t)));
            }
        })
    }
}

/// The first valid SESSION and RSVP_HOP among `objects`, for an error's context.
fn find_context(objects: &[u8]) -> (Option<Session>, Option<RsvpHop>, Option<Style>) {
    let (mut session, mut hop, mut style) = (None, None, None);
    for (h, body) in ObjectHeader::iter(objects).map_while(Result::ok) {
        match h.class {
            class::SESSION if session.is_none() => session = Session::parse(h.ctype, body).ok(),
            class::RSVP_HOP if hop.is_none() => hop = RsvpHop::parse(h.ctype, body).ok(),
            class::STYLE if style.is_none() => style = Style::parse(h.ctype, body).ok(),
            _ => {}
        }
    }
    (session, hop, style)
}

/// A known object that the message type's grammar does not list, skipped unread (RFC 2205
/// §3.1.5–§3.1.9 for the message types where this is done; see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SkippedObject {
    /// Class-Num.
    pub class: u8,
    /// C-Type.
    pub ctype: u8,
}

/// A parsed message with everything the parser found besides the message itself.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    /// The common header.
    pub header: CommonHeader,
    /// The message.
    pub message: Message,
    /// The refresh-reduction objects (RFC 2961 §4) in front of the message's own.
    pub refresh: Refresh,
    /// Known objects outside the message's grammar that were skipped, in the order they came.
    pub skipped: Vec<SkippedObject>,
}

impl Message {
    /// Read and check the common header (RFC 2205 §3.1.1): Vers 1, RSVP Length consistent with
    /// the buffer, checksum verified when non-zero. The message type may be unknown here.
    pub fn parse_header(buf: &[u8]) -> Result<CommonHeader, ParseError> {
        let p = Packet::new_header(buf)?;
        if p.version() != CommonHeader::VERSION {
            return Err(ParseErrorKind::BadVersion(p.version()).into());
        }
        let with_type = |kind| ParseError {
            msg_type: Some(p.msg_type()),
            ..ParseError::new(kind)
        };
        let p = Packet::new_checked(buf).map_err(with_type)?;
        if !p.verify_checksum() {
            return Err(with_type(ParseErrorKind::BadChecksum {
                received: p.checksum(),
            }));
        }
        Ok(p.header())
    }

    /// Parse a whole message (the IP payload). See the module documentation for what is
    /// accepted; any failure is a typed [`ParseError`] with as much context as could be found.
    pub fn parse(buf: &[u8]) -> Result<(CommonHeader, Message), ParseError> {
        Self::parse_refresh(buf).map(|(h, m, _)| (h, m))
    }

    /// [`Message::parse`], also returning the refresh-reduction objects (RFC 2961 §4) the
    /// message carried in front of its own.
    pub fn parse_refresh(buf: &[u8]) -> Result<(CommonHeader, Message, Refresh), ParseError> {
        Self::parse_full(buf).map(|p| (p.header, p.message, p.refresh))
    }

    /// [`Message::parse_refresh`], also listing the known objects outside the message's grammar
    /// that were skipped rather than rejected (error messages, teardowns and confirmations).
    pub fn parse_full(buf: &[u8]) -> Result<Parsed, ParseError> {
        let header = Self::parse_header(buf)?;
        let msg_type = header.msg_type;
        let fail = |kind, (session, hop, style)| ParseError {
            kind,
            msg_type: Some(msg_type),
            session,
            hop,
            style,
        };
        if matches!(msg_type, MsgType::Unknown(_) | MsgType::Bundle) {
            // A Bundle is split with `refresh::bundle_messages`, not parsed as one message.
            let kind = ParseErrorKind::UnknownMsgType(u8::from(msg_type));
            return Err(fail(kind, (None, None, None)));
        }
        let objects = buf
            .get(CommonHeader::LEN..usize::from(header.length))
            .unwrap_or(&[]);
        let mut c = Collected::default();
        if let Err(kind) = c.collect(msg_type, objects) {
            let (fs, fh, fst) = find_context(objects);
            return Err(fail(
                kind,
                (c.session.or(fs), c.hop.or(fh), c.style.or(fst)),
            ));
        }
        let refresh = std::mem::take(&mut c.refresh);
        let skipped = std::mem::take(&mut c.skipped);
        if msg_type == MsgType::Ack && refresh.acks.is_empty() {
            let kind = ParseErrorKind::MissingObject {
                class: te::class::MESSAGE_ID_ACK,
            };
            return Err(fail(kind, (None, None, None)));
        }
        let context = (c.session, c.hop.clone(), c.style);
        c.assemble(msg_type)
            .map(|message| Parsed {
                header,
                message,
                refresh,
                skipped,
            })
            .map_err(|kind| fail(kind, context))
    }
}
