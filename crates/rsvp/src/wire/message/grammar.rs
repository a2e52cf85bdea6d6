//! Which objects each message type carries: the classes this codec knows, and those each
//! message type's BNF lists (RFC 2205 §3.1.3–§3.1.9, RFC 2747 §2.3, RFC 3209 §3.1.1, §3.2.1,
//! §5.1).

use super::MsgType;
use crate::wire::objects::class;
use crate::wire::te;

/// A set of Class-Nums.
#[derive(Clone, Copy)]
pub(super) struct ClassSet([u64; 4]);

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

    const fn with(mut self, class: u8) -> ClassSet {
        let c = class as usize;
        self.0[c / 64] |= 1 << (c % 64);
        self
    }

    pub(super) fn contains(self, class: u8) -> bool {
        let c = usize::from(class);
        self.0[c / 64] & (1 << (c % 64)) != 0
    }
}

/// Classes RFC 2205 defines (§A), with RFC 2747's and those RSVP-TE messages carry (RFC 3209
/// §4.1–§4.4, §4.7) and its HELLO (§5.2); anything else is unknown and handled per §3.10.
pub(super) const KNOWN: ClassSet = ClassSet::of(&[
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
    te::class::LABEL,
    te::class::LABEL_REQUEST,
    te::class::EXPLICIT_ROUTE,
    te::class::RECORD_ROUTE,
    te::class::SESSION_ATTRIBUTE,
    te::class::HELLO,
    te::class::MESSAGE_ID,
    te::class::MESSAGE_ID_ACK,
    te::class::MESSAGE_ID_LIST,
]);

/// The classes each message type's BNF lists (§3.1.3–§3.1.9), with RFC 3209's additions: the
/// Path objects of §3.1.1, RECORD_ROUTE in the sender descriptor of Path and PathErr (PathTear
/// [`ignored`] it), LABEL and RECORD_ROUTE wherever there is a flow descriptor list (§3.2.1).
pub(super) fn allowed(t: MsgType) -> ClassSet {
    let mut set = standard(t);
    // RFC 2961 §4.1: every standard message may carry a MESSAGE_ID and acknowledgements.
    if !matches!(
        t,
        MsgType::Hello
            | MsgType::IntegrityChallenge
            | MsgType::IntegrityResponse
            | MsgType::Unknown(_)
            | MsgType::Bundle
    ) {
        set = set
            .with(te::class::MESSAGE_ID)
            .with(te::class::MESSAGE_ID_ACK);
    }
    set
}

fn standard(t: MsgType) -> ClassSet {
    use class::*;
    use te::class::{EXPLICIT_ROUTE, LABEL, LABEL_REQUEST, RECORD_ROUTE, SESSION_ATTRIBUTE};
    match t {
        MsgType::Path => ClassSet::of(&[
            INTEGRITY,
            SESSION,
            RSVP_HOP,
            TIME_VALUES,
            EXPLICIT_ROUTE,
            LABEL_REQUEST,
            SESSION_ATTRIBUTE,
            POLICY_DATA,
            SENDER_TEMPLATE,
            SENDER_TSPEC,
            ADSPEC,
            RECORD_ROUTE,
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
            LABEL,
            RECORD_ROUTE,
        ]),
        MsgType::PathErr => ClassSet::of(&[
            INTEGRITY,
            SESSION,
            ERROR_SPEC,
            POLICY_DATA,
            SENDER_TEMPLATE,
            SENDER_TSPEC,
            ADSPEC,
            RECORD_ROUTE,
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
            LABEL,
            RECORD_ROUTE,
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
            LABEL,
            RECORD_ROUTE,
        ]),
        MsgType::ResvConf => ClassSet::of(&[
            INTEGRITY,
            SESSION,
            ERROR_SPEC,
            RESV_CONFIRM,
            STYLE,
            FLOWSPEC,
            FILTER_SPEC,
            LABEL,
            RECORD_ROUTE,
        ]),
        // RFC 3209 §5.1
        MsgType::Hello => ClassSet::of(&[INTEGRITY, te::class::HELLO]),
        // RFC 2961 §4.4, §5.1 (MESSAGE_ID and the acknowledgements are added above).
        MsgType::Ack => ClassSet::of(&[INTEGRITY]),
        MsgType::Srefresh => ClassSet::of(&[INTEGRITY, te::class::MESSAGE_ID_LIST]),
        MsgType::Bundle => ClassSet([0; 4]),
        MsgType::IntegrityChallenge => ClassSet::of(&[CHALLENGE]),
        MsgType::IntegrityResponse => ClassSet::of(&[INTEGRITY, CHALLENGE]),
        MsgType::Unknown(_) => ClassSet([0; 4]),
    }
}

/// Known objects a message type's grammar lists but that are not used: ADSPEC and RECORD_ROUTE
/// in the sender descriptor of a PathTear ("may include a SENDER_TSPEC or ADSPEC object in its
/// sender descriptor, but these must be ignored", RFC 2205 §3.1.5; RFC 3209 §3.1.1 puts
/// RECORD_ROUTE in the sender descriptor). Dropped without a count: nothing is wrong with them.
pub(super) fn ignored(t: MsgType, class: u8) -> bool {
    t == MsgType::PathTear && matches!(class, class::ADSPEC | te::class::RECORD_ROUTE)
}

/// Whether a known object that message type `t`'s grammar does not list is skipped (and
/// reported as skipped) rather than rejecting the message.
///
/// - Error messages, teardowns and confirmations (RFC 2205 §3.1.5–§3.1.9): they change no state
///   a stray object could corrupt, and nothing answers them (§3.7: no error for an error), so
///   rejecting one only loses what it reports. KOM's PathErr carries the LABEL_REQUEST and
///   SESSION_ATTRIBUTE of the Path in error (capture kom-patherr-with-label-request.pcap);
///   dropping it left the head end without the reason its LSP failed.
/// - POLICY_DATA anywhere: RFC 2750 lets policy ride on more messages than RFC 2205 lists.
///
/// Path and Resv still reject such objects: they install state, and a sender must learn that
/// its message was not understood.
pub(super) fn skipped(t: MsgType, class: u8) -> bool {
    class == class::POLICY_DATA
        || matches!(
            t,
            MsgType::PathErr
                | MsgType::ResvErr
                | MsgType::PathTear
                | MsgType::ResvTear
                | MsgType::ResvConf
        )
}
