//! IntServ objects carried by RSVP (RFC 2210 §3): SENDER_TSPEC, FLOWSPEC (Controlled-Load,
//! RFC 2211, and Guaranteed, RFC 2212) and ADSPEC.
//!
//! Every IntServ object body has the same nesting (RFC 2210 §2.1, §3):
//!
//! ```text
//! message header:   | Vers (4) | reserved (12) |  overall length (words, header excluded) |
//! service header:   | service number |B| flags |  service data length (words)              |
//! parameter header: | parameter ID   |  flags  |  parameter data length (words)            |
//! ```
//!
//! Floats are IEEE 754 single precision, big-endian. Values the parameter definitions rule out
//! (RFC 2210 §3.1, RFC 2215 §3, RFC 2212 §3) are rejected: NaN or negative rates and sizes, an
//! infinite token rate, bucket size or RSpec rate (only the peak rate and the path bandwidth may
//! be +infinity), and a minimum policed unit above the maximum packet size. The SENDER_TSPEC and
//! FLOWSPEC carry exactly the parameters listed below; an unknown parameter in them is an error,
//! as the fixed types could not carry it on. The ADSPEC keeps unknown parameters and fragments.

/// A token bucket TSpec (RFC 2210 §3.1, parameter 127; RFC 2215 §3.6).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TokenBucket {
    /// Token bucket rate r, bytes per second.
    pub rate: f32,
    /// Token bucket size b, bytes.
    pub bucket: f32,
    /// Peak data rate p, bytes per second (may be +infinity).
    pub peak: f32,
    /// Minimum policed unit m, bytes.
    pub min_policed: u32,
    /// Maximum packet size M, bytes.
    pub max_packet: u32,
}

/// SENDER_TSPEC (C-Type 2): the sender's traffic description.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SenderTspec(pub TokenBucket);

/// FLOWSPEC (C-Type 2): a receiver's reservation request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FlowSpec {
    /// Controlled-Load service (service number 5; RFC 2210 §3.2).
    ControlledLoad(TokenBucket),
    /// Guaranteed service (service number 2; RFC 2210 §3.3): TSpec plus RSpec.
    Guaranteed {
        /// The TSpec.
        tspec: TokenBucket,
        /// RSpec rate R, bytes per second.
        rate: f32,
        /// RSpec slack term S, microseconds.
        slack: u32,
    },
}

impl FlowSpec {
    /// The largest packet the reservation covers (the TSpec's M), bytes: admission compares it
    /// with the interface MTU (RFC 2205 App. B, error 01/3).
    pub fn max_packet(&self) -> u32 {
        match self {
            FlowSpec::ControlledLoad(t) => t.max_packet,
            FlowSpec::Guaranteed { tspec, .. } => tspec.max_packet,
        }
    }

    /// The bandwidth to reserve, in bytes per second: the token rate for Controlled-Load, the
    /// RSpec rate for Guaranteed.
    pub fn reserved_rate(&self) -> f32 {
        match self {
            FlowSpec::ControlledLoad(t) => t.rate,
            FlowSpec::Guaranteed { rate, .. } => *rate,
        }
    }
}

/// What one hop contributes to an ADSPEC as it travels downstream (RFC 2210 §3.3, RFC 2215 §3):
/// the protocol-neutral traffic-control type.
pub use pathwise_core::tc::HopCharacteristics;

mod adspec;

pub use adspec::{
    Adspec, ControlledLoadAdspec, ErrorTerms, GeneralParameters, GuaranteedAdspec, IntServParam,
    Overrides, ServiceFragment,
};

use pathwise_core::wire::{Reader, TlvHeader, TlvIter, Writer};

use super::ParseErrorKind;
use super::error::IntServFault;
use super::objects::{ObjectHeader, class, ctype};

/// IntServ service numbers (RFC 2210 §3, RFC 2215 §2).
pub mod service {
    /// Default/global information: SENDER_TSPEC and the ADSPEC's general parameters.
    pub const GENERAL: u8 = 1;
    /// Guaranteed service (RFC 2212).
    pub const GUARANTEED: u8 = 2;
    /// Controlled-Load service (RFC 2211).
    pub const CONTROLLED_LOAD: u8 = 5;
}

/// IntServ parameter IDs (RFC 2215 §3, RFC 2212 §5–§6, RFC 2210 §3).
pub mod param {
    /// NUMBER_OF_IS_HOPS.
    pub const IS_HOPS: u8 = 4;
    /// AVAILABLE_PATH_BANDWIDTH.
    pub const PATH_BW: u8 = 6;
    /// MINIMUM_PATH_LATENCY.
    pub const MIN_LATENCY: u8 = 8;
    /// PATH_MTU (composed MTU).
    pub const PATH_MTU: u8 = 10;
    /// TOKEN_BUCKET_TSPEC.
    pub const TOKEN_BUCKET: u8 = 127;
    /// Guaranteed service RSpec (R, S).
    pub const GUARANTEED_RSPEC: u8 = 130;
    /// Guaranteed Ctot: end-to-end composed C.
    pub const C_TOT: u8 = 133;
    /// Guaranteed Dtot: end-to-end composed D.
    pub const D_TOT: u8 = 134;
    /// Guaranteed Csum: C composed since the last reshaping point.
    pub const C_SUM: u8 = 135;
    /// Guaranteed Dsum: D composed since the last reshaping point.
    pub const D_SUM: u8 = 136;
}

/// The break bit in a service header's flag byte (RFC 2210 §3.3).
const BREAK_BIT: u8 = 0x80;
/// Words of a token bucket TSpec parameter's data.
const TOKEN_BUCKET_WORDS: u16 = 5;
/// Words of a Guaranteed RSpec parameter's data.
const RSPEC_WORDS: u16 = 2;

/// A service header or parameter header: an 8-bit number, 8 bits of flags and a length in 32-bit
/// words not counting the header. Both read the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct WordTlv {
    number: u8,
    flags: u8,
    words: u16,
}

impl TlvHeader for WordTlv {
    type Error = IntServFault;

    fn read(r: &mut Reader<'_>) -> Result<Self, IntServFault> {
        let number = r.u8()?;
        let flags = r.u8()?;
        let words = r.u16()?;
        let declared = usize::from(words) * 4;
        if declared > r.remaining() {
            return Err(IntServFault::BadLength {
                declared,
                available: r.remaining(),
            });
        }
        Ok(WordTlv {
            number,
            flags,
            words,
        })
    }

    fn body_len(&self) -> usize {
        usize::from(self.words) * 4
    }
}

impl From<pathwise_core::wire::Truncated> for IntServFault {
    fn from(t: pathwise_core::wire::Truncated) -> Self {
        IntServFault::BadLength {
            declared: t.needed,
            available: t.available,
        }
    }
}

/// Check the message header (RFC 2210 §3.1 (a), (b)) and return the service fragments after it.
/// The overall length must account for the whole object body exactly.
fn read_message(body: &[u8]) -> Result<&[u8], IntServFault> {
    let mut r = Reader::new(body);
    let version = r.u8()? >> 4;
    r.skip(1)?;
    let words = r.u16()?;
    if version != 0 {
        return Err(IntServFault::BadVersion(version));
    }
    let declared = usize::from(words) * 4;
    if declared != r.remaining() {
        return Err(IntServFault::BadLength {
            declared,
            available: r.remaining(),
        });
    }
    Ok(r.rest())
}

/// Write a message header for `data_bytes` of service fragments.
fn write_message_header(w: &mut Writer<'_>, data_bytes: usize) {
    w.u16(0); // version 0, reserved
    w.u16(words(data_bytes));
}

/// Write a service or parameter header for `data_bytes` of data.
fn write_word_tlv(w: &mut Writer<'_>, number: u8, flags: u8, data_bytes: usize) {
    w.u8(number);
    w.u8(flags);
    w.u16(words(data_bytes));
}

/// A length in bytes as a 16-bit word count (saturating: such lengths cannot be represented).
fn words(bytes: usize) -> u16 {
    u16::try_from(bytes / 4).unwrap_or(u16::MAX)
}

/// Iterate over the parameters of a service fragment's data.
fn params(data: &[u8]) -> TlvIter<'_, WordTlv> {
    TlvIter::new(data)
}

/// A rate or size that must be a finite, non-negative number.
fn check_finite(service: u8, param: u8, v: f32) -> Result<f32, IntServFault> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(IntServFault::InvalidValue {
            service,
            param,
            bits: v.to_bits(),
        })
    }
}

/// A rate that may be +infinity but not NaN or negative.
fn check_rate(service: u8, param: u8, v: f32) -> Result<f32, IntServFault> {
    if v >= 0.0 {
        Ok(v)
    } else {
        Err(IntServFault::InvalidValue {
            service,
            param,
            bits: v.to_bits(),
        })
    }
}

impl TokenBucket {
    /// Bytes of a token bucket parameter (header included).
    const PARAM_LEN: usize = 4 + 4 * TOKEN_BUCKET_WORDS as usize;

    /// Whether the values are ones RFC 2215 §3.6 allows: r and b finite and non-negative, p
    /// non-negative (+infinity allowed), m <= M. `service` names the fragment in the fault.
    pub fn check(&self, service: u8) -> Result<(), IntServFault> {
        let p = param::TOKEN_BUCKET;
        check_finite(service, p, self.rate)?;
        check_finite(service, p, self.bucket)?;
        check_rate(service, p, self.peak)?;
        if self.min_policed > self.max_packet {
            return Err(IntServFault::InvalidValue {
                service,
                param: p,
                bits: self.min_policed,
            });
        }
        Ok(())
    }

    /// Read parameter 127's data (RFC 2210 §3.1 rows 4–8).
    fn read(service: u8, hdr: WordTlv, data: &[u8]) -> Result<Self, IntServFault> {
        if hdr.words != TOKEN_BUCKET_WORDS {
            return Err(IntServFault::BadParameter {
                service,
                param: param::TOKEN_BUCKET,
            });
        }
        let mut r = Reader::new(data);
        let tb = TokenBucket {
            rate: r.f32()?,
            bucket: r.f32()?,
            peak: r.f32()?,
            min_policed: r.u32()?,
            max_packet: r.u32()?,
        };
        tb.check(service)?;
        Ok(tb)
    }

    /// Write parameter 127, header included.
    fn write(&self, w: &mut Writer<'_>) {
        write_word_tlv(w, param::TOKEN_BUCKET, 0, Self::PARAM_LEN - 4);
        w.f32(self.rate);
        w.f32(self.bucket);
        w.f32(self.peak);
        w.u32(self.min_policed);
        w.u32(self.max_packet);
    }
}

/// Walk the one service fragment a SENDER_TSPEC or FLOWSPEC carries, handing each parameter to
/// `on_param`. Returns the fragment's service number.
fn single_fragment(
    body: &[u8],
    mut on_param: impl FnMut(u8, WordTlv, &[u8]) -> Result<(), IntServFault>,
) -> Result<u8, IntServFault> {
    let mut fragments = TlvIter::<WordTlv>::new(read_message(body)?);
    let (svc, data) = match fragments.next() {
        Some(f) => f?,
        None => return Err(IntServFault::MissingService(0)),
    };
    for p in params(data) {
        let (hdr, pdata) = p?;
        on_param(svc.number, hdr, pdata)?;
    }
    if let Some(extra) = fragments.next() {
        let (extra, _) = extra?;
        return Err(IntServFault::ExtraService(extra.number));
    }
    Ok(svc.number)
}

impl SenderTspec {
    /// Object length in bytes, header included.
    const LEN: usize = ObjectHeader::LEN + 4 + 4 + TokenBucket::PARAM_LEN;

    /// Parse a SENDER_TSPEC body (RFC 2210 §3.1, Class = 12, C-Type = 2):
    ///
    /// ```text
    /// 1  | 0 (a) |    reserved           |             7 (b)             |
    /// 2  |    1  (c)     |0| reserved    |             6 (d)             |
    /// 3  |   127 (e)     |    0 (f)      |             5 (g)             |
    /// 4  |  Token Bucket Rate [r] (32-bit IEEE floating point number)    |
    /// 5  |  Token Bucket Size [b] (32-bit IEEE floating point number)    |
    /// 6  |  Peak Data Rate [p] (32-bit IEEE floating point number)       |
    /// 7  |  Minimum Policed Unit [m] (32-bit integer)                    |
    /// 8  |  Maximum Packet Size [M]  (32-bit integer)                    |
    /// ```
    ///
    /// Failures other than the C-Type are [`ParseErrorKind::BadTspec`] (error 21, value 4).
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        if ctype != ctype::INTSERV {
            return Err(ParseErrorKind::unknown_ctype(class::SENDER_TSPEC, ctype));
        }
        let mut bucket = None;
        let svc = single_fragment(body, |svc, hdr, data| {
            if svc != service::GENERAL {
                return Err(IntServFault::UnsupportedService(svc));
            }
            match hdr.number {
                param::TOKEN_BUCKET if bucket.is_none() => {
                    bucket = Some(TokenBucket::read(svc, hdr, data)?);
                    Ok(())
                }
                param::TOKEN_BUCKET => Err(IntServFault::BadParameter {
                    service: svc,
                    param: hdr.number,
                }),
                other => Err(IntServFault::UnknownParameter {
                    service: svc,
                    param: other,
                }),
            }
        })
        .map_err(ParseErrorKind::BadTspec)?;
        if svc != service::GENERAL {
            return Err(ParseErrorKind::BadTspec(IntServFault::UnsupportedService(
                svc,
            )));
        }
        bucket
            .map(SenderTspec)
            .ok_or(ParseErrorKind::BadTspec(IntServFault::MissingParameter {
                service: svc,
                param: param::TOKEN_BUCKET,
            }))
    }

    /// C-Type: always 2 (IntServ).
    pub fn ctype(&self) -> u8 {
        ctype::INTSERV
    }

    /// Object length in bytes, header included (36).
    pub fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Write the object, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        ObjectHeader::emit(
            w,
            class::SENDER_TSPEC,
            ctype::INTSERV,
            Self::LEN - ObjectHeader::LEN,
        );
        write_message_header(w, 4 + TokenBucket::PARAM_LEN);
        write_word_tlv(w, service::GENERAL, 0, TokenBucket::PARAM_LEN);
        self.0.write(w);
    }
}

impl FlowSpec {
    /// Parse a FLOWSPEC body (RFC 2210 §3.2, Class = 9, C-Type = 2): one service fragment,
    /// Controlled-Load (service 5: token bucket 127) or Guaranteed (service 2: token bucket 127
    /// and RSpec 130):
    ///
    /// ```text
    /// 1  | 0 (a) |        Unused         |            10 (b)             |
    /// 2  |    2  (c)     |0| reserved    |             9 (d)             |
    /// 3  |   127 (e)     |    0 (f)      |             5 (g)             |
    /// 4-8|  r, b, p (floats), m, M (integers)                            |
    /// 9  |     130 (h)   |    0 (i)      |            2 (j)              |
    /// 10 |  Rate [R]  (32-bit IEEE floating point number)                |
    /// 11 |  Slack Term [S]  (32-bit integer)                             |
    /// ```
    ///
    /// Failures other than the C-Type are [`ParseErrorKind::BadFlowspec`] (error 21, value 3;
    /// value 2 for a service other than 2 and 5).
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        if ctype != ctype::INTSERV {
            return Err(ParseErrorKind::unknown_ctype(class::FLOWSPEC, ctype));
        }
        let mut bucket = None;
        let mut rspec = None;
        let svc = single_fragment(body, |svc, hdr, data| {
            let dup = IntServFault::BadParameter {
                service: svc,
                param: hdr.number,
            };
            match (svc, hdr.number) {
                (service::GUARANTEED | service::CONTROLLED_LOAD, param::TOKEN_BUCKET) => {
                    if bucket.is_some() {
                        return Err(dup);
                    }
                    bucket = Some(TokenBucket::read(svc, hdr, data)?);
                }
                (service::GUARANTEED, param::GUARANTEED_RSPEC) => {
                    if rspec.is_some() || hdr.words != RSPEC_WORDS {
                        return Err(dup);
                    }
                    let mut r = Reader::new(data);
                    let rate = check_finite(svc, hdr.number, r.f32()?)?;
                    rspec = Some((rate, r.u32()?));
                }
                (service::GUARANTEED | service::CONTROLLED_LOAD, other) => {
                    return Err(IntServFault::UnknownParameter {
                        service: svc,
                        param: other,
                    });
                }
                (other, _) => return Err(IntServFault::UnsupportedService(other)),
            }
            Ok(())
        })
        .map_err(ParseErrorKind::BadFlowspec)?;
        let missing = |param| {
            ParseErrorKind::BadFlowspec(IntServFault::MissingParameter {
                service: svc,
                param,
            })
        };
        match svc {
            service::CONTROLLED_LOAD => Ok(FlowSpec::ControlledLoad(
                bucket.ok_or_else(|| missing(param::TOKEN_BUCKET))?,
            )),
            service::GUARANTEED => {
                let tspec = bucket.ok_or_else(|| missing(param::TOKEN_BUCKET))?;
                let (rate, slack) = rspec.ok_or_else(|| missing(param::GUARANTEED_RSPEC))?;
                Ok(FlowSpec::Guaranteed { tspec, rate, slack })
            }
            // A fragment with no parameters never reached the service check above.
            other => Err(ParseErrorKind::BadFlowspec(
                IntServFault::UnsupportedService(other),
            )),
        }
    }

    /// C-Type: always 2 (IntServ).
    pub fn ctype(&self) -> u8 {
        ctype::INTSERV
    }

    /// Bytes of the service fragment's data.
    fn data_len(&self) -> usize {
        match self {
            FlowSpec::ControlledLoad(_) => TokenBucket::PARAM_LEN,
            FlowSpec::Guaranteed { .. } => TokenBucket::PARAM_LEN + 4 + 4 * RSPEC_WORDS as usize,
        }
    }

    /// Object length in bytes, header included (36 for Controlled-Load, 48 for Guaranteed).
    pub fn buffer_len(&self) -> usize {
        ObjectHeader::LEN + 4 + 4 + self.data_len()
    }

    /// Write the object, header included.
    pub fn emit(&self, w: &mut Writer<'_>) {
        ObjectHeader::emit(
            w,
            class::FLOWSPEC,
            ctype::INTSERV,
            self.buffer_len() - ObjectHeader::LEN,
        );
        write_message_header(w, 4 + self.data_len());
        match self {
            FlowSpec::ControlledLoad(tspec) => {
                write_word_tlv(w, service::CONTROLLED_LOAD, 0, self.data_len());
                tspec.write(w);
            }
            FlowSpec::Guaranteed { tspec, rate, slack } => {
                write_word_tlv(w, service::GUARANTEED, 0, self.data_len());
                tspec.write(w);
                write_word_tlv(w, param::GUARANTEED_RSPEC, 0, 4 * RSPEC_WORDS as usize);
                w.f32(*rate);
                w.u32(*slack);
            }
        }
    }
}

#[cfg(test)]
mod tests;
