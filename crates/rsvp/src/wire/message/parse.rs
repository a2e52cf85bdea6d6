//! Parsing whole messages (RFC 2205 §3.1.1–§3.1.9, §3.10). The rules are listed in the parent
//! module's documentation.

use std::net::IpAddr;

use super::{
    CommonHeader, FlowDescriptor, IntegrityChallenge, IntegrityResponse, Message, MsgType, Packet,
    Path, PathErr, PathTear, Resv, ResvConf, ResvErr, ResvTear, SenderDescriptor,
};
use crate::wire::intserv::{Adspec, FlowSpec, SenderTspec};
use crate::wire::objects::{
    Challenge, ErrorSpec, FilterSpec, Integrity, ObjectHeader, Opaque, ResvConfirm, RsvpHop, Scope,
    Session, Style, StyleKind, TimeValues, class, ctype,
};
use crate::wire::{ParseError, ParseErrorKind};

/// A set of Class-Nums.
#[derive(Clone, Copy)]
struct ClassSet([u64; 4]);

impl ClassSet {
    const fn of(classes: &[u8]) -> ClassSet {
        let mut bits = [0u64; 4];
        let mut i = 0;
        while i < classes.len() {
            let c = classes[i] as usize;
            bits[c / 64] |= 1 << (c % 64);
            i += 1;
        }
        ClassSet(bits)
    }

    fn contains(self, class: u8) -> bool {
        let c = usize::from(class);
        self.0[c / 64] & (1 << (c % 64)) != 0
    }
}

/// Classes RFC 2205 defines (§A); anything else is unknown and handled per §3.10.
const KNOWN: ClassSet = ClassSet::of(&[
    class::NULL,
    class::SESSION,
    class::RSVP_HOP,
    class::INTEGRITY,
    class::TIME_VALUES,
    class::ERROR_SPEC,
    class::SCOPE,
    class::STYLE,
    class::FLOWSPEC,
    class::FILTER_SPEC,
    class::SENDER_TEMPLATE,
    class::SENDER_TSPEC,
    class::ADSPEC,
    class::POLICY_DATA,
    class::RESV_CONFIRM,
    class::CHALLENGE,
]);

/// The classes each message type's BNF lists (§3.1.3–§3.1.9).
fn allowed(t: MsgType) -> ClassSet {
    use class::*;
    match t {
        MsgType::Path => ClassSet::of(&[
            INTEGRITY,
            SESSION,
            RSVP_HOP,
            TIME_VALUES,
            POLICY_DATA,
            SENDER_TEMPLATE,
            SENDER_TSPEC,
            ADSPEC,
        ]),
        MsgType::Resv => ClassSet::of(&[
            INTEGRITY,
            SESSION,
            RSVP_HOP,
            TIME_VALUES,
            RESV_CONFIRM,
            SCOPE,
            POLICY_DATA,
            STYLE,
            FLOWSPEC,
            FILTER_SPEC,
        ]),
        MsgType::PathErr => ClassSet::of(&[
            INTEGRITY,
            SESSION,
            ERROR_SPEC,
            POLICY_DATA,
            SENDER_TEMPLATE,
            SENDER_TSPEC,
            ADSPEC,
        ]),
        MsgType::ResvErr => ClassSet::of(&[
            INTEGRITY,
            SESSION,
            RSVP_HOP,
            ERROR_SPEC,
            SCOPE,
            POLICY_DATA,
            STYLE,
            FLOWSPEC,
            FILTER_SPEC,
        ]),
        MsgType::PathTear => {
            ClassSet::of(&[INTEGRITY, SESSION, RSVP_HOP, SENDER_TEMPLATE, SENDER_TSPEC])
        }
        MsgType::ResvTear => ClassSet::of(&[
            INTEGRITY,
            SESSION,
            RSVP_HOP,
            SCOPE,
            STYLE,
            FLOWSPEC,
            FILTER_SPEC,
        ]),
        MsgType::ResvConf => ClassSet::of(&[
            INTEGRITY,
            SESSION,
            ERROR_SPEC,
            RESV_CONFIRM,
            STYLE,
            FLOWSPEC,
            FILTER_SPEC,
        ]),
        MsgType::IntegrityChallenge => ClassSet::of(&[CHALLENGE]),
        MsgType::IntegrityResponse => ClassSet::of(&[INTEGRITY, CHALLENGE]),
        MsgType::Unknown(_) => ClassSet([0; 4]),
    }
}

/// Known objects outside a message type's BNF that are dropped rather than rejected.
fn ignored(t: MsgType, class: u8) -> bool {
    class == class::POLICY_DATA || (t == MsgType::PathTear && class == class::ADSPEC)
}

/// A FLOWSPEC or FILTER_SPEC of the flow descriptor list, in wire order.
enum FlowObject {
    Flowspec(FlowSpec),
    Filter(FilterSpec),
}

/// How a message type treats the FLOWSPECs of its flow descriptor list.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FlowRules {
    /// Resv, ResvConf: every descriptor has a FLOWSPEC (FF may elide repeats).
    Required,
    /// ResvErr: as `Required`, but the whole (error) flow descriptor may be absent.
    Optional,
    /// ResvTear: FLOWSPECs may be omitted, and then are `None`.
    Tear,
}

/// Everything found in one pass over the objects.
#[derive(Default)]
struct Collected {
    integrity: Option<Integrity>,
    challenge: Option<Challenge>,
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
    policy: Vec<Opaque>,
    flow_objects: Vec<FlowObject>,
    forward: Vec<Opaque>,
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
                class::FLOWSPEC => self
                    .flow_objects
                    .push(FlowObject::Flowspec(FlowSpec::parse(ct, body)?)),
                _ => self
                    .flow_objects
                    .push(FlowObject::Filter(FilterSpec::parse(ct, body)?)),
            }
        }
        Ok(())
    }

    /// Every address-carrying object must be of the SESSION's family.
    fn check_family(&self, session: &Session) -> Result<(), ParseErrorKind> {
        let v4 = session.dest.is_ipv4();
        let check = |addr: IpAddr, class: u8, ctype: u8| {
            if addr.is_ipv4() == v4 {
                Ok(())
            } else {
                Err(ParseErrorKind::FamilyMismatch { class, ctype })
            }
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
            check(f.src(), class::SENDER_TEMPLATE, f.ctype())?;
        }
        for o in &self.flow_objects {
            if let FlowObject::Filter(f) = o {
                check(f.src(), class::FILTER_SPEC, f.ctype())?;
            }
        }
        Ok(())
    }

    /// The sender descriptor of a PathErr: absent, or SENDER_TEMPLATE and SENDER_TSPEC with an
    /// optional ADSPEC (§3.1.3).
    fn optional_sender(&mut self) -> Result<Option<SenderDescriptor>, ParseErrorKind> {
        match (self.sender_template, self.sender_tspec, self.adspec.take()) {
            (None, None, None) => Ok(None),
            (Some(template), Some(tspec), adspec) => Ok(Some(SenderDescriptor {
                template,
                tspec,
                adspec,
            })),
            (None, ..) => Err(ParseErrorKind::MissingObject {
                class: class::SENDER_TEMPLATE,
            }),
            (Some(_), None, _) => Err(ParseErrorKind::MissingObject {
                class: class::SENDER_TSPEC,
            }),
        }
    }

    fn flows(&mut self, rules: FlowRules) -> Result<(Style, Vec<FlowDescriptor>), ParseErrorKind> {
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
            _ => {}
        }
        let session = required(self.session, class::SESSION)?;
        self.check_family(&session)?;
        let integrity = self.integrity.take();
        let policy = std::mem::take(&mut self.policy);
        let forward = std::mem::take(&mut self.forward);
        Ok(match t {
            MsgType::Path => Message::Path(Path {
                integrity,
                session,
                hop: required(self.hop, class::RSVP_HOP)?,
                time_values: required(self.time_values, class::TIME_VALUES)?,
                policy,
                sender: SenderDescriptor {
                    template: required(self.sender_template, class::SENDER_TEMPLATE)?,
                    tspec: required(self.sender_tspec, class::SENDER_TSPEC)?,
                    adspec: self.adspec,
                },
                forward,
            }),
            MsgType::Resv => {
                let hop = required(self.hop, class::RSVP_HOP)?;
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
                let hop = required(self.hop, class::RSVP_HOP)?;
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
                let hop = required(self.hop, class::RSVP_HOP)?;
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
            // The handshake messages returned above; unknown types never get here.
            MsgType::IntegrityChallenge | MsgType::IntegrityResponse | MsgType::Unknown(_) => {
                return Err(ParseErrorKind::UnknownMsgType(u8::from(t)));
            }
        })
    }
}

/// Build the flow descriptor list from the FLOWSPEC and FILTER_SPEC objects in wire order,
/// following the style's grammar (§3.1.4).
fn flow_descriptors(
    style: Style,
    objects: Vec<FlowObject>,
    rules: FlowRules,
) -> Result<Vec<FlowDescriptor>, ParseErrorKind> {
    let bad = |class| ParseErrorKind::BadFlowDescriptor { class };
    let missing = |class| ParseErrorKind::MissingObject { class };
    match style.kind {
        // <WF flow descriptor> ::= <FLOWSPEC>
        StyleKind::Wf => {
            let mut flowspec = None;
            for o in objects {
                match o {
                    FlowObject::Filter(_) => return Err(bad(class::FILTER_SPEC)),
                    FlowObject::Flowspec(_) if flowspec.is_some() => {
                        return Err(bad(class::FLOWSPEC));
                    }
                    FlowObject::Flowspec(f) => flowspec = Some(f),
                }
            }
            match (flowspec, rules) {
                (None, FlowRules::Required) => Err(missing(class::FLOWSPEC)),
                (None, FlowRules::Optional) => Ok(Vec::new()),
                (flowspec, _) => Ok(vec![FlowDescriptor {
                    flowspec,
                    filters: Vec::new(),
                }]),
            }
        }
        // <FF flow descriptor list> ::= <FLOWSPEC> <FILTER_SPEC>
        //                             | <FF flow descriptor list> <FF flow descriptor>
        // <FF flow descriptor> ::= [ <FLOWSPEC> ] <FILTER_SPEC>
        StyleKind::Ff => {
            let mut flows = Vec::with_capacity(objects.len());
            let mut pending: Option<FlowSpec> = None;
            let mut previous: Option<FlowSpec> = None;
            for o in objects {
                match o {
                    FlowObject::Flowspec(_) if pending.is_some() => {
                        return Err(bad(class::FLOWSPEC));
                    }
                    FlowObject::Flowspec(f) => pending = Some(f),
                    FlowObject::Filter(filter) => {
                        let flowspec = match (pending.take(), rules) {
                            (Some(f), _) => Some(f),
                            (None, FlowRules::Tear) => None,
                            (None, _) => Some(previous.ok_or(missing(class::FLOWSPEC))?),
                        };
                        previous = flowspec.or(previous);
                        flows.push(FlowDescriptor {
                            flowspec,
                            filters: vec![filter],
                        });
                    }
                }
            }
            if pending.is_some() {
                return Err(bad(class::FLOWSPEC));
            }
            if flows.is_empty() && rules != FlowRules::Optional {
                return Err(missing(class::FILTER_SPEC));
            }
            Ok(flows)
        }
        // <SE flow descriptor> ::= <FLOWSPEC> <filter spec list>
        StyleKind::Se => {
            if objects.is_empty() && rules == FlowRules::Optional {
                return Ok(Vec::new());
            }
            let mut flowspec = None;
            let mut filters = Vec::with_capacity(objects.len());
            for o in objects {
                match o {
                    FlowObject::Flowspec(_) if flowspec.is_some() || !filters.is_empty() => {
                        return Err(bad(class::FLOWSPEC));
                    }
                    FlowObject::Flowspec(f) => flowspec = Some(f),
                    FlowObject::Filter(f) => filters.push(f),
                }
            }
            if flowspec.is_none() && rules != FlowRules::Tear {
                return Err(missing(class::FLOWSPEC));
            }
            if filters.is_empty() {
                return Err(missing(class::FILTER_SPEC));
            }
            Ok(vec![FlowDescriptor { flowspec, filters }])
        }
        // A ResvErr reporting "Unknown reservation style" names the style it could not
        // understand, with no flow descriptor (RFC 2205 §3.1.8: the descriptor is optional).
        StyleKind::Other(_) if objects.is_empty() && rules == FlowRules::Optional => Ok(Vec::new()),
        StyleKind::Other(_) => Err(ParseErrorKind::UnknownStyle { style }),
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
        let header = Self::parse_header(buf)?;
        let msg_type = header.msg_type;
        let fail = |kind, (session, hop, style)| ParseError {
            kind,
            msg_type: Some(msg_type),
            session,
            hop,
            style,
        };
        if let MsgType::Unknown(n) = msg_type {
            return Err(fail(ParseErrorKind::UnknownMsgType(n), (None, None, None)));
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
        let context = (c.session, c.hop, c.style);
        c.assemble(msg_type)
            .map(|m| (header, m))
            .map_err(|kind| fail(kind, context))
    }
}
