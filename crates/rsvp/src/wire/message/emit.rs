//! Emitting whole messages: objects in the order of each RFC 2205 §3.1.x BNF with RFC 3209's
//! additions (§3.1.1, §3.2.1), then RSVP Length and the checksum patched in through [`Packet`].

use pathwise_core::wire::Writer;

use super::{
    CommonHeader, FilterTe, FlowDescriptor, Message, MsgType, Packet, Refresh, SenderDescriptor,
};
use crate::wire::objects::{Opaque, Session, class};

fn opaque_len(objs: &[Opaque]) -> usize {
    objs.iter().map(Opaque::buffer_len).sum()
}

fn emit_opaque(objs: &[Opaque], w: &mut Writer<'_>) {
    objs.iter().for_each(|o| o.emit(w));
}

impl FilterTe {
    fn buffer_len(&self) -> usize {
        let label = match (&self.label, &self.generalized_label) {
            (Some(l), _) => l.buffer_len(),
            (None, Some(g)) => g.buffer_len(),
            (None, None) => 0,
        };
        label + self.record_route.as_ref().map_or(0, |r| r.buffer_len())
    }

    /// <LABEL> [ <RECORD_ROUTE> ] after their FILTER_SPEC (RFC 3209 §3.2.1); the LABEL is the
    /// Generalized LABEL (RFC 3473 §2.3) when there is no RFC 3209 one (never both: a value
    /// holding both is written with the RFC 3209 one alone).
    fn emit(&self, w: &mut Writer<'_>) {
        match (&self.label, &self.generalized_label) {
            (Some(l), _) => l.emit(w),
            (None, Some(g)) => g.emit(w),
            (None, None) => {}
        }
        if let Some(r) = &self.record_route {
            r.emit(w);
        }
    }
}

impl FlowDescriptor {
    fn buffer_len(&self) -> usize {
        self.flowspec.as_ref().map_or(0, |s| s.buffer_len())
            + self
                .filters_with_te()
                .map(|(f, te)| f.buffer_len() + te.map_or(0, FilterTe::buffer_len))
                .sum::<usize>()
    }

    /// The FLOWSPEC (if any) followed by each FILTER_SPEC with the LABEL and RECORD_ROUTE bound
    /// to it: the WF, FF and SE grammars of RFC 2205 §3.1.4 and RFC 3209 §3.2.1 for
    /// descriptors of the canonical shapes.
    fn emit(&self, w: &mut Writer<'_>) {
        if let Some(s) = &self.flowspec {
            s.emit(w);
        }
        for (f, te) in self.filters_with_te() {
            f.emit(w);
            if let Some(te) = te {
                te.emit(w);
            }
        }
    }
}

fn flows_len(flows: &[FlowDescriptor]) -> usize {
    flows.iter().map(FlowDescriptor::buffer_len).sum()
}

fn emit_flows(flows: &[FlowDescriptor], w: &mut Writer<'_>) {
    flows.iter().for_each(|f| f.emit(w));
}

impl SenderDescriptor {
    fn buffer_len(&self) -> usize {
        self.template.buffer_len()
            + self.tspec.buffer_len()
            + self.adspec.as_ref().map_or(0, |a| a.buffer_len())
            + self.record_route.as_ref().map_or(0, |r| r.buffer_len())
    }

    /// <sender descriptor> ::= <SENDER_TEMPLATE> <SENDER_TSPEC> [ <ADSPEC> ]
    ///                         [ <RECORD_ROUTE> ] (RFC 2205 §3.1.3, RFC 3209 §3.1.1).
    fn emit(&self, w: &mut Writer<'_>) {
        self.template.emit_as(class::SENDER_TEMPLATE, w);
        self.tspec.emit(w);
        if let Some(a) = &self.adspec {
            a.emit(w);
        }
        if let Some(r) = &self.record_route {
            r.emit(w);
        }
    }
}

/// Length of an optional object.
macro_rules! opt_len {
    ($o:expr) => {
        $o.as_ref().map_or(0, |o| o.buffer_len())
    };
}

/// Emit an optional object.
macro_rules! opt_emit {
    ($o:expr, $w:expr) => {
        if let Some(o) = &$o {
            o.emit($w);
        }
    };
}

/// `$some` with `$m` bound to the message of any type that has an INTEGRITY slot (every type
/// but the Integrity Challenge, RFC 2747 §3.3), `$none` for the Challenge.
macro_rules! with_integrity {
    ($msg:expr, $m:ident => $some:expr, $none:expr) => {
        match $msg {
            Message::Path($m) => $some,
            Message::Resv($m) => $some,
            Message::PathErr($m) => $some,
            Message::ResvErr($m) => $some,
            Message::PathTear($m) => $some,
            Message::ResvTear($m) => $some,
            Message::ResvConf($m) => $some,
            Message::Hello($m) => $some,
            Message::Ack($m) => $some,
            Message::Srefresh($m) => $some,
            Message::IntegrityResponse($m) => $some,
            Message::IntegrityChallenge(_) => $none,
        }
    };
}

impl Message {
    /// The message type.
    pub fn msg_type(&self) -> MsgType {
        match self {
            Message::Path(_) => MsgType::Path,
            Message::Resv(_) => MsgType::Resv,
            Message::PathErr(_) => MsgType::PathErr,
            Message::ResvErr(_) => MsgType::ResvErr,
            Message::PathTear(_) => MsgType::PathTear,
            Message::ResvTear(_) => MsgType::ResvTear,
            Message::ResvConf(_) => MsgType::ResvConf,
            Message::Hello(_) => MsgType::Hello,
            Message::Ack(_) => MsgType::Ack,
            Message::Srefresh(_) => MsgType::Srefresh,
            Message::IntegrityChallenge(_) => MsgType::IntegrityChallenge,
            Message::IntegrityResponse(_) => MsgType::IntegrityResponse,
        }
    }

    /// The INTEGRITY slot of the message (`None` for an Integrity Challenge, which has none).
    pub fn integrity_slot(&mut self) -> Option<&mut Option<crate::wire::objects::Integrity>> {
        with_integrity!(self, m => Some(&mut m.integrity), None)
    }

    /// The INTEGRITY object the message carries, if any.
    pub fn integrity(&self) -> Option<&crate::wire::objects::Integrity> {
        with_integrity!(self, m => m.integrity.as_ref(), None)
    }

    /// The SESSION, which every message but the integrity handshake and Hello carries.
    pub fn session(&self) -> Option<&Session> {
        match self {
            Message::Path(m) => Some(&m.session),
            Message::Resv(m) => Some(&m.session),
            Message::PathErr(m) => Some(&m.session),
            Message::ResvErr(m) => Some(&m.session),
            Message::PathTear(m) => Some(&m.session),
            Message::ResvTear(m) => Some(&m.session),
            Message::ResvConf(m) => Some(&m.session),
            Message::Hello(_)
            | Message::Ack(_)
            | Message::Srefresh(_)
            | Message::IntegrityChallenge(_)
            | Message::IntegrityResponse(_) => None,
        }
    }

    /// Length in bytes of the emitted message, common header included.
    pub fn buffer_len(&self) -> usize {
        CommonHeader::LEN
            + match self {
                Message::Path(m) => {
                    opt_len!(m.integrity)
                        + m.session.buffer_len()
                        + m.hop.buffer_len()
                        + m.time_values.buffer_len()
                        + opt_len!(m.explicit_route)
                        + opt_len!(m.label_request)
                        + opt_len!(m.session_attribute)
                        + opaque_len(&m.policy)
                        + opaque_len(&m.forward)
                        + m.sender.buffer_len()
                }
                Message::Resv(m) => {
                    opt_len!(m.integrity)
                        + m.session.buffer_len()
                        + m.hop.buffer_len()
                        + m.time_values.buffer_len()
                        + opt_len!(m.confirm)
                        + opt_len!(m.scope)
                        + opaque_len(&m.policy)
                        + opaque_len(&m.forward)
                        + m.style.buffer_len()
                        + flows_len(&m.flows)
                }
                Message::PathErr(m) => {
                    opt_len!(m.integrity)
                        + m.session.buffer_len()
                        + m.error.buffer_len()
                        + opaque_len(&m.policy)
                        + opaque_len(&m.forward)
                        + opt_len!(m.sender)
                }
                Message::ResvErr(m) => {
                    opt_len!(m.integrity)
                        + m.session.buffer_len()
                        + m.hop.buffer_len()
                        + m.error.buffer_len()
                        + opt_len!(m.scope)
                        + opaque_len(&m.policy)
                        + opaque_len(&m.forward)
                        + m.style.buffer_len()
                        + flows_len(&m.flows)
                }
                Message::PathTear(m) => {
                    opt_len!(m.integrity)
                        + m.session.buffer_len()
                        + m.hop.buffer_len()
                        + opaque_len(&m.forward)
                        + opt_len!(m.sender_template)
                        + opt_len!(m.sender_tspec)
                }
                Message::ResvTear(m) => {
                    opt_len!(m.integrity)
                        + m.session.buffer_len()
                        + m.hop.buffer_len()
                        + opt_len!(m.scope)
                        + opaque_len(&m.forward)
                        + m.style.buffer_len()
                        + flows_len(&m.flows)
                }
                Message::ResvConf(m) => {
                    opt_len!(m.integrity)
                        + m.session.buffer_len()
                        + m.error.buffer_len()
                        + m.confirm.buffer_len()
                        + opaque_len(&m.forward)
                        + m.style.buffer_len()
                        + flows_len(&m.flows)
                }
                Message::Hello(m) => opt_len!(m.integrity) + m.object.buffer_len(),
                Message::Ack(m) => opt_len!(m.integrity),
                Message::Srefresh(m) => {
                    opt_len!(m.integrity)
                        + m.lists
                            .iter()
                            .map(crate::wire::te::MessageIdList::buffer_len)
                            .sum::<usize>()
                }
                Message::IntegrityChallenge(m) => m.challenge.buffer_len(),
                Message::IntegrityResponse(m) => opt_len!(m.integrity) + m.challenge.buffer_len(),
            }
    }

    /// Append the message to `out`: common header (Vers 1, flags 0, the type, `send_ttl`, RSVP
    /// Length) and objects, then the checksum over the whole message (RFC 2205 §3.1.1).
    pub fn emit(&self, send_ttl: u8, out: &mut Vec<u8>) {
        self.emit_with(send_ttl, 0, &Refresh::default(), out);
    }

    /// [`Message::emit`] with header flags (RFC 2961 §2: the Refresh-Reduction-Capable bit)
    /// and refresh-reduction objects in front of the message's own (§4.1; INTEGRITY, when the
    /// message is signed, goes in front of them).
    pub fn emit_with(&self, send_ttl: u8, flags: u8, refresh: &Refresh, out: &mut Vec<u8>) {
        let start = out.len();
        let mut w = Writer::new(out);
        w.u8((CommonHeader::VERSION << 4) | (flags & 0x0f));
        w.u8(u8::from(self.msg_type()));
        w.u16(0); // checksum, filled in below
        w.u8(send_ttl);
        w.u8(0); // reserved
        w.u16(0); // RSVP Length, filled in below
        // RFC 2961 §4.1: "one or more MESSAGE_ID_ACK or MESSAGE_ID_NACK objects MUST
        // immediately follow the INTEGRITY object", and the MESSAGE_ID follows them; RFC 2747
        // §3.1 puts INTEGRITY right behind the common header.
        if let Some(i) = self.integrity() {
            i.emit(&mut w);
        }
        refresh.emit(&mut w);
        self.emit_objects(&mut w);
        let length = u16::try_from(out.len() - start).unwrap_or(u16::MAX);
        // The header just written is 8 bytes long, so the view exists.
        if let Ok(mut p) = Packet::new_header(&mut out[start..]) {
            p.set_length(length);
            p.fill_checksum();
        }
    }

    fn emit_objects(&self, w: &mut Writer<'_>) {
        match self {
            // <Path Message> ::= <Common Header> [ <INTEGRITY> ] <SESSION> <RSVP_HOP>
            //                    <TIME_VALUES> [ <EXPLICIT_ROUTE> ] <LABEL_REQUEST>
            //                    [ <SESSION_ATTRIBUTE> ] [ <POLICY_DATA> ... ]
            //                    <sender descriptor>
            // (RFC 3209 §3.1.1; the RSVP-TE objects are optional in an IP session's Path.)
            Message::Path(m) => {
                m.session.emit(w);
                m.hop.emit(w);
                m.time_values.emit(w);
                opt_emit!(m.explicit_route, w);
                opt_emit!(m.label_request, w);
                opt_emit!(m.session_attribute, w);
                emit_opaque(&m.policy, w);
                emit_opaque(&m.forward, w);
                m.sender.emit(w);
            }
            // <Resv Message> ::= <Common Header> [ <INTEGRITY> ] <SESSION> <RSVP_HOP>
            //                    <TIME_VALUES> [ <RESV_CONFIRM> ] [ <SCOPE> ]
            //                    [ <POLICY_DATA> ... ] <STYLE> <flow descriptor list>
            Message::Resv(m) => {
                m.session.emit(w);
                m.hop.emit(w);
                m.time_values.emit(w);
                opt_emit!(m.confirm, w);
                opt_emit!(m.scope, w);
                emit_opaque(&m.policy, w);
                emit_opaque(&m.forward, w);
                m.style.emit(w);
                emit_flows(&m.flows, w);
            }
            // <PathErr message> ::= <Common Header> [ <INTEGRITY> ] <SESSION> <ERROR_SPEC>
            //                       [ <POLICY_DATA> ... ] [ <sender descriptor> ]
            Message::PathErr(m) => {
                m.session.emit(w);
                m.error.emit(w);
                emit_opaque(&m.policy, w);
                emit_opaque(&m.forward, w);
                opt_emit!(m.sender, w);
            }
            // <ResvErr Message> ::= <Common Header> [ <INTEGRITY> ] <SESSION> <RSVP_HOP>
            //                       <ERROR_SPEC> [ <SCOPE> ] [ <POLICY_DATA> ... ]
            //                       <STYLE> [ <error flow descriptor> ]
            Message::ResvErr(m) => {
                m.session.emit(w);
                m.hop.emit(w);
                m.error.emit(w);
                opt_emit!(m.scope, w);
                emit_opaque(&m.policy, w);
                emit_opaque(&m.forward, w);
                m.style.emit(w);
                emit_flows(&m.flows, w);
            }
            // <PathTear Message> ::= <Common Header> [ <INTEGRITY> ] <SESSION> <RSVP_HOP>
            //                        [ <sender descriptor> ]
            Message::PathTear(m) => {
                m.session.emit(w);
                m.hop.emit(w);
                emit_opaque(&m.forward, w);
                if let Some(t) = &m.sender_template {
                    t.emit_as(class::SENDER_TEMPLATE, w);
                }
                opt_emit!(m.sender_tspec, w);
            }
            // <ResvTear Message> ::= <Common Header> [<INTEGRITY>] <SESSION> <RSVP_HOP>
            //                        [ <SCOPE> ] <STYLE> <flow descriptor list>
            Message::ResvTear(m) => {
                m.session.emit(w);
                m.hop.emit(w);
                opt_emit!(m.scope, w);
                emit_opaque(&m.forward, w);
                m.style.emit(w);
                emit_flows(&m.flows, w);
            }
            // <ResvConf message> ::= <Common Header> [ <INTEGRITY> ] <SESSION> <ERROR_SPEC>
            //                        <RESV_CONFIRM> <STYLE> <flow descriptor list>
            Message::ResvConf(m) => {
                m.session.emit(w);
                m.error.emit(w);
                m.confirm.emit(w);
                emit_opaque(&m.forward, w);
                m.style.emit(w);
                emit_flows(&m.flows, w);
            }
            // <Hello Message> ::= <Common Header> [ <INTEGRITY> ] <HELLO> (RFC 3209 §5.1)
            Message::Hello(m) => {
                m.object.emit(w);
            }
            // RFC 2961 §4.4, §5.1: the acknowledgements and identifier are in the Refresh.
            Message::Ack(_) => {}
            Message::Srefresh(m) => {
                m.lists.iter().for_each(|l| l.emit(w));
            }
            // <Integrity Challenge message> ::= <Common Header> <CHALLENGE>
            Message::IntegrityChallenge(m) => m.challenge.emit(w),
            // <Integrity Response message> ::= <Common Header> <INTEGRITY> <CHALLENGE>
            Message::IntegrityResponse(m) => {
                m.challenge.emit(w);
            }
        }
    }
}
