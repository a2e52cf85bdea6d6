//! The Error object (RFC 5971 A.4.1), its Additional Information fields (A.4.3) and the error
//! catalogue (A.4.4).

use super::error::ObjectFault;
use super::header::CommonHeader;
use super::mri::Mri;
use super::objects::SessionId;
use super::pad4;
use pathwise_core::wire::{Reader, Writer};

/// Error classes (A.4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// 0: Informational (not an error).
    Informational,
    /// 1: Success.
    Success,
    /// 2: Protocol-Error: the sender did something wrong.
    ProtocolError,
    /// 3: Transient-Failure: a retry may succeed.
    TransientFailure,
    /// 4: Permanent-Failure: do not retry.
    PermanentFailure,
    /// Any other value, kept for round trips.
    Other(u8),
}

impl ErrorClass {
    /// The class number.
    pub fn number(self) -> u8 {
        match self {
            ErrorClass::Informational => 0,
            ErrorClass::Success => 1,
            ErrorClass::ProtocolError => 2,
            ErrorClass::TransientFailure => 3,
            ErrorClass::PermanentFailure => 4,
            ErrorClass::Other(n) => n,
        }
    }

    /// The class for a number.
    pub fn from_number(n: u8) -> Self {
        match n {
            0 => ErrorClass::Informational,
            1 => ErrorClass::Success,
            2 => ErrorClass::ProtocolError,
            3 => ErrorClass::TransientFailure,
            4 => ErrorClass::PermanentFailure,
            n => ErrorClass::Other(n),
        }
    }
}

/// Error codes (A.4.4) and the class each is sent with.
pub mod error_code {
    use super::ErrorClass;

    /// 1, Protocol-Error: Common Header Parse Error (subcodes 0 unknown version, 1 unknown
    /// type, 2 invalid R flag, 3 incorrect message length, 4 invalid E flag).
    pub const COMMON_HEADER_PARSE_ERROR: u16 = 1;
    /// 2, Permanent-Failure: Hop Limit Exceeded.
    pub const HOP_LIMIT_EXCEEDED: u16 = 2;
    /// 3, Protocol-Error: Incorrect Encapsulation (a Query over an MA, an MA-setting Confirm in
    /// D-mode).
    pub const INCORRECT_ENCAPSULATION: u16 = 3;
    /// 4, Protocol-Error: Incorrectly Delivered Message (over an MA not associated with the
    /// MRI/NSLPID/SID).
    pub const INCORRECTLY_DELIVERED_MESSAGE: u16 = 4;
    /// 5, Protocol-Error: No Routing State.
    pub const NO_ROUTING_STATE: u16 = 5;
    /// 6, Permanent-Failure: Unknown NSLPID (a directly addressed message for an unsupported
    /// NSLP).
    pub const UNKNOWN_NSLPID: u16 = 6;
    /// 7, Permanent-Failure: Endpoint Found (a Query for an unsupported NSLP at a flow
    /// endpoint).
    pub const ENDPOINT_FOUND: u16 = 7;
    /// 8, Permanent-Failure: Message Too Large (MTU Info).
    pub const MESSAGE_TOO_LARGE: u16 = 8;
    /// 9, Protocol-Error: Object Type Error (Object Type Info).
    pub const OBJECT_TYPE_ERROR: u16 = 9;
    /// 10, Protocol-Error: Object Value Error (Object Value Info).
    pub const OBJECT_VALUE_ERROR: u16 = 10;
    /// 11, Permanent-Failure: Invalid IP layer TTL.
    pub const INVALID_IP_TTL: u16 = 11;
    /// 12, Permanent-Failure: MRI Validation Failure (subcodes 0 too wild, 1 IP version
    /// mismatch, 2 ingress filter failure).
    pub const MRI_VALIDATION_FAILURE: u16 = 12;

    /// The class A.4.4 gives `code`.
    pub fn class_of(code: u16) -> ErrorClass {
        match code {
            HOP_LIMIT_EXCEEDED
            | UNKNOWN_NSLPID
            | ENDPOINT_FOUND
            | MESSAGE_TOO_LARGE
            | INVALID_IP_TTL
            | MRI_VALIDATION_FAILURE => ErrorClass::PermanentFailure,
            _ => ErrorClass::ProtocolError,
        }
    }
}

/// An Additional Information field (A.4.3).
///
/// ```text
///  |          AI-Type              |         AI-Length             |
///  //                         AI-Value                            //
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AdditionalInfo {
    /// 1: Message Length Info: the calculated length, in words.
    MessageLength(u16),
    /// 2: MTU Info: the link MTU, in bytes.
    Mtu(u16),
    /// 3: Object Type Info: the type of the object at fault.
    ObjectType(u16),
    /// 4: Object Value Info: the object at fault, its real length and the offset of the error.
    ObjectValue {
        /// Real Object Length in words, TLV header included (12 bits).
        real_length_words: u16,
        /// Byte offset of the error within the object.
        offset: u16,
        /// The object, TLV header included; padded to a word on the wire.
        object: Vec<u8>,
    },
    /// Any other AI-Type, kept for round trips.
    Other {
        /// AI-Type.
        ai_type: u16,
        /// AI-Value, a whole number of words.
        value: Vec<u8>,
    },
}

impl AdditionalInfo {
    fn value_len(&self) -> usize {
        match self {
            AdditionalInfo::MessageLength(_)
            | AdditionalInfo::Mtu(_)
            | AdditionalInfo::ObjectType(_) => 4,
            AdditionalInfo::ObjectValue { object, .. } => 4 + pad4(object.len()),
            AdditionalInfo::Other { value, .. } => pad4(value.len()),
        }
    }

    fn emit(&self, w: &mut Writer<'_>) {
        let len = (self.value_len() / 4).min(0xffff) as u16;
        match self {
            AdditionalInfo::MessageLength(v)
            | AdditionalInfo::Mtu(v)
            | AdditionalInfo::ObjectType(v) => {
                let t = match self {
                    AdditionalInfo::MessageLength(_) => 1,
                    AdditionalInfo::Mtu(_) => 2,
                    _ => 3,
                };
                w.u16(t);
                w.u16(len);
                w.u16(if t == 3 { *v & 0x0fff } else { *v });
                w.u16(0);
            }
            AdditionalInfo::ObjectValue {
                real_length_words,
                offset,
                object,
            } => {
                w.u16(4);
                w.u16(len);
                w.u16(real_length_words & 0x0fff);
                w.u16(*offset);
                w.bytes(object);
                w.pad_to(4);
            }
            AdditionalInfo::Other { ai_type, value } => {
                w.u16(*ai_type);
                w.u16(len);
                w.bytes(value);
                w.pad_to(4);
            }
        }
    }

    fn parse(r: &mut Reader<'_>) -> Result<Self, ObjectFault> {
        let t = r.u16()?;
        let len = usize::from(r.u16()?) * 4;
        let start = r.position();
        let value = r.bytes(len)?;
        let mut v = Reader::new(value);
        let bad = |_| ObjectFault::length(start);
        Ok(match t {
            1..=3 if len == 4 => {
                let x = v.u16().map_err(bad)?;
                match t {
                    1 => AdditionalInfo::MessageLength(x),
                    2 => AdditionalInfo::Mtu(x),
                    _ => AdditionalInfo::ObjectType(x & 0x0fff),
                }
            }
            4 if len >= 4 => AdditionalInfo::ObjectValue {
                real_length_words: v.u16().map_err(bad)? & 0x0fff,
                offset: v.u16().map_err(bad)?,
                object: v.rest().to_vec(),
            },
            1..=4 => return Err(ObjectFault::length(start)),
            _ => AdditionalInfo::Other {
                ai_type: t,
                value: value.to_vec(),
            },
        })
    }
}

/// The Error object (A.4.1).
///
/// ```text
///  |  Error Class  |         Error Code            | Error Subcode |
///  |S|M|C|D|Q|       Reserved      |  MRI Length   |  Info Count   |
///  |                Common Header of original message (2 words)    |
///  :                   Session Id (S)                              :
///  :                   Message Routing Information (M)             :
///  :                   Additional Information Fields               :
///  :                   Debugging Comment (C)                       :
/// ```
/// The Session ID and MRI are carried without their TLV headers; the comment is
/// NUL-terminated and padded to a word.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ErrorObject {
    /// Error class.
    pub class: ErrorClass,
    /// Error code (A.4.4).
    pub code: u16,
    /// Error subcode.
    pub subcode: u8,
    /// D flag: the message in error was sent in D-mode.
    pub dmode: bool,
    /// Q flag: the message in error was sent Q-mode encapsulated.
    pub qmode: bool,
    /// The common header of the message in error.
    pub original_header: CommonHeader,
    /// Its Session ID (S flag); absent for Common Header Parse Errors.
    pub session_id: Option<SessionId>,
    /// Its MRI (M flag); absent for Common Header Parse Errors.
    pub mri: Option<Mri>,
    /// Additional information fields.
    pub info: Vec<AdditionalInfo>,
    /// Debugging comment (C flag), without its terminating NUL.
    pub comment: Option<Vec<u8>>,
}

impl ErrorObject {
    /// A new error for `code`/`subcode` with the class A.4.4 assigns, about a message with
    /// header `original_header`.
    pub fn new(code: u16, subcode: u8, original_header: CommonHeader) -> Self {
        ErrorObject {
            class: error_code::class_of(code),
            code,
            subcode,
            dmode: true,
            qmode: original_header.c_flag,
            original_header,
            session_id: None,
            mri: None,
            info: Vec::new(),
            comment: None,
        }
    }

    fn mri_len(&self) -> usize {
        self.mri.as_ref().map_or(0, |m| pad4(m.buffer_len()))
    }

    fn comment(&self) -> Option<&[u8]> {
        // Cut at the first NUL: the terminator must stay unique.
        self.comment
            .as_deref()
            .map(|c| &c[..c.iter().position(|&b| b == 0).unwrap_or(c.len())])
    }

    /// Body length.
    pub fn buffer_len(&self) -> usize {
        16 + self.session_id.map_or(0, |_| SessionId::LEN)
            + self.mri_len()
            + self
                .info
                .iter()
                .take(255)
                .map(|i| 4 + i.value_len())
                .sum::<usize>()
            + self.comment().map_or(0, |c| pad4(c.len() + 1))
    }

    /// Write the body.
    pub fn emit(&self, w: &mut Writer<'_>) {
        w.u8(self.class.number());
        w.u16(self.code);
        w.u8(self.subcode);
        let flags = (u8::from(self.session_id.is_some()) << 7)
            | (u8::from(self.mri.is_some()) << 6)
            | (u8::from(self.comment.is_some()) << 5)
            | (u8::from(self.dmode) << 4)
            | (u8::from(self.qmode) << 3);
        w.u8(flags);
        w.u8(0);
        w.u8((self.mri_len() / 4).min(255) as u8);
        w.u8(self.info.len().min(255) as u8);
        self.original_header.emit(w);
        if let Some(sid) = &self.session_id {
            w.bytes(&sid.0);
        }
        if let Some(m) = &self.mri {
            m.emit(w);
            w.pad_to(4);
        }
        for i in self.info.iter().take(255) {
            i.emit(w);
        }
        if let Some(c) = self.comment() {
            w.bytes(c);
            w.u8(0);
            w.pad_to(4);
        }
    }

    /// Parse the body.
    pub fn parse(body: &[u8]) -> Result<Self, ObjectFault> {
        let mut r = Reader::new(body);
        let class = ErrorClass::from_number(r.u8()?);
        let code = r.u16()?;
        let subcode = r.u8()?;
        let flags = r.u8()?;
        r.u8()?;
        let mri_words = usize::from(r.u8()?);
        let info_count = r.u8()?;
        let original_header = CommonHeader::parse(r.bytes(8)?).map_err(ObjectFault::from)?;
        let session_id = if flags & 0x80 != 0 {
            Some(SessionId(r.array()?))
        } else {
            None
        };
        let mri = if flags & 0x40 != 0 {
            let at = r.position();
            let m = Mri::parse(r.bytes(mri_words * 4)?)
                .map_err(|f| ObjectFault::at(f.fault, at + f.offset))?;
            Some(m)
        } else {
            None
        };
        let mut info = Vec::with_capacity(usize::from(info_count).min(8));
        for _ in 0..info_count {
            info.push(AdditionalInfo::parse(&mut r)?);
        }
        let comment = if flags & 0x20 != 0 {
            let rest = r.rest();
            let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
            r.skip(rest.len())?;
            Some(rest[..end].to_vec())
        } else {
            None
        };
        if !r.is_empty() {
            return Err(ObjectFault::length(r.position()));
        }
        Ok(ErrorObject {
            class,
            code,
            subcode,
            dmode: flags & 0x10 != 0,
            qmode: flags & 0x08 != 0,
            original_header,
            session_id,
            mri,
            info,
            comment,
        })
    }

    /// The Object Type Info, if present.
    pub fn object_type_info(&self) -> Option<u16> {
        self.info.iter().find_map(|i| match i {
            AdditionalInfo::ObjectType(t) => Some(*t),
            _ => None,
        })
    }
}
