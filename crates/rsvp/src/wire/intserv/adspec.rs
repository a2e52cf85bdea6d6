//! ADSPEC (RFC 2210 §3.3, Class = 13, C-Type = 2): what the path offers, composed hop by hop as
//! a Path message travels downstream (One Pass With Advertising).
//!
//! ```text
//! | 0 (a) |      reserved         |  Msg length - 1 (b)           |
//! |    Default General Parameters fragment (Service 1)  (always)  |
//! |    Guaranteed Service Fragment (Service 2)       (optional)   |
//! |    Controlled-Load Service Fragment (Service 5)  (optional)   |
//! ```
//!
//! The representation keeps everything a round trip needs: the break bit of each known fragment,
//! parameters the codec does not know (with their flag bytes), and whole fragments of unknown
//! services. The per-parameter flag bytes of the known parameters (none are defined for them by
//! RFC 2210) are not kept and are written as zero.

use pathwise_core::wire::{Reader, TlvIter, Writer};

use super::{
    BREAK_BIT, HopCharacteristics, WordTlv, check_rate, param, read_message, service,
    write_message_header, write_word_tlv,
};
use crate::wire::ParseErrorKind;
use crate::wire::error::IntServFault;
use crate::wire::objects::{ObjectHeader, class, ctype};

/// A parameter the codec does not interpret, kept so it survives being forwarded.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IntServParam {
    /// Parameter ID.
    pub id: u8,
    /// Parameter flags.
    pub flags: u8,
    /// Parameter data, a multiple of 4 bytes (padded with zeros when emitted otherwise).
    pub data: Vec<u8>,
}

impl IntServParam {
    fn buffer_len(&self) -> usize {
        4 + self.data.len().next_multiple_of(4)
    }

    fn write(&self, w: &mut Writer<'_>) {
        write_word_tlv(w, self.id, self.flags, self.buffer_len() - 4);
        w.bytes(&self.data);
        w.zeros(self.buffer_len() - 4 - self.data.len());
    }
}

/// A fragment of a service the codec does not know, kept verbatim.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ServiceFragment {
    /// Service number.
    pub service: u8,
    /// The service header's flag byte (break bit 0x80 included).
    pub flags: u8,
    /// The fragment's data, a multiple of 4 bytes (padded with zeros when emitted otherwise).
    pub data: Vec<u8>,
}

/// General characterization parameters (RFC 2215 §3) as a service fragment carries them: all
/// four in the default fragment, any of them as service-specific overrides.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Overrides {
    /// NUMBER_OF_IS_HOPS (parameter 4).
    pub hop_count: Option<u32>,
    /// AVAILABLE_PATH_BANDWIDTH (parameter 6), bytes per second; +infinity allowed.
    pub path_bw: Option<f32>,
    /// MINIMUM_PATH_LATENCY (parameter 8), microseconds; [`Adspec::INDETERMINATE_LATENCY`]
    /// means indeterminate.
    pub min_latency_us: Option<u32>,
    /// PATH_MTU (parameter 10), bytes.
    pub mtu: Option<u32>,
}

impl Overrides {
    /// Take a general parameter into its slot. Returns `false` for any other parameter ID.
    fn take(&mut self, service: u8, hdr: WordTlv, data: &[u8]) -> Result<bool, IntServFault> {
        let bad = IntServFault::BadParameter {
            service,
            param: hdr.number,
        };
        let slot_taken = match hdr.number {
            param::IS_HOPS => self.hop_count.is_some(),
            param::PATH_BW => self.path_bw.is_some(),
            param::MIN_LATENCY => self.min_latency_us.is_some(),
            param::PATH_MTU => self.mtu.is_some(),
            _ => return Ok(false),
        };
        if slot_taken || hdr.words != 1 {
            return Err(bad);
        }
        let mut r = Reader::new(data);
        match hdr.number {
            param::IS_HOPS => self.hop_count = Some(r.u32()?),
            param::PATH_BW => self.path_bw = Some(check_rate(service, hdr.number, r.f32()?)?),
            param::MIN_LATENCY => self.min_latency_us = Some(r.u32()?),
            _ => self.mtu = Some(r.u32()?),
        }
        Ok(true)
    }

    fn buffer_len(&self) -> usize {
        8 * (usize::from(self.hop_count.is_some())
            + usize::from(self.path_bw.is_some())
            + usize::from(self.min_latency_us.is_some())
            + usize::from(self.mtu.is_some()))
    }

    fn write(&self, w: &mut Writer<'_>) {
        if let Some(v) = self.hop_count {
            write_word_tlv(w, param::IS_HOPS, 0, 4);
            w.u32(v);
        }
        if let Some(v) = self.path_bw {
            write_word_tlv(w, param::PATH_BW, 0, 4);
            w.f32(v);
        }
        if let Some(v) = self.min_latency_us {
            write_word_tlv(w, param::MIN_LATENCY, 0, 4);
            w.u32(v);
        }
        if let Some(v) = self.mtu {
            write_word_tlv(w, param::PATH_MTU, 0, 4);
            w.u32(v);
        }
    }

    /// Compose with one hop (RFC 2215 §3.2–§3.5): hop count + 1, bandwidth MIN, latency sum
    /// clamped at 2^32 - 1, MTU MIN. Only the parameters present are composed.
    fn compose(&mut self, hop: &HopCharacteristics) {
        if let Some(v) = &mut self.hop_count {
            *v = v.saturating_add(1);
        }
        if let Some(v) = &mut self.path_bw {
            // A NaN or negative link bandwidth would poison the path value: treat it as 0.
            *v = v.min(hop.bandwidth.max(0.0));
        }
        if let Some(v) = &mut self.min_latency_us {
            *v = v.saturating_add(hop.latency_us);
        }
        if let Some(v) = &mut self.mtu {
            *v = (*v).min(hop.mtu);
        }
    }
}

/// The default general parameters fragment (RFC 2210 §3.3.2, service 1):
///
/// ```text
/// 1  |    1  (c)     |x| reserved    |           8 (d)               |
/// 2  |    4 (e)      |    (f)        |           1 (g)               |
/// 3  |        IS hop cnt (32-bit unsigned)                           |
/// 4  |    6  (h)     |    (i)        |           1 (j)               |
/// 5  |  Path b/w estimate  (32-bit IEEE floating point number)       |
/// 6  |     8 (k)     |    (l)        |           1 (m)               |
/// 7  |        Minimum path latency (32-bit integer)                  |
/// 8  |     10 (n)    |      (o)      |           1 (p)               |
/// 9  |      Composed MTU (32-bit unsigned integer)                   |
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct GeneralParameters {
    /// The global break bit (NON_IS_HOP, RFC 2215 §3.1): a hop without IntServ support was
    /// passed.
    pub break_bit: bool,
    /// NUMBER_OF_IS_HOPS.
    pub hop_count: u32,
    /// AVAILABLE_PATH_BANDWIDTH, bytes per second (+infinity: no limit seen yet).
    pub path_bw: f32,
    /// MINIMUM_PATH_LATENCY, microseconds.
    pub min_latency_us: u32,
    /// PATH_MTU, bytes.
    pub mtu: u32,
    /// Parameters other than 4, 6, 8 and 10, in the order received.
    pub unknown: Vec<IntServParam>,
}

/// The Guaranteed service fragment (RFC 2210 §3.3.3, service 2; RFC 2212 §6):
///
/// ```text
/// 1  |     2 (a)     |x|  reserved   |             N-1 (b)           |
/// 2  |    133 (c)    |     0 (d)     |             1 (e)             |
/// 3  |   End-to-end composed value for C [Ctot] (32-bit integer)     |
/// 4  |     134 (f)   |       (g)     |             1 (h)             |
/// 5  |   End-to-end composed value for D [Dtot] (32-bit integer)     |
/// 6  |     135 (i)   |       (j)     |             1 (k)             |
/// 7  | Since-last-reshaping point composed C [Csum] (32-bit integer) |
/// 8  |     136 (l)   |       (m)     |             1 (n)             |
/// 9  | Since-last-reshaping point composed D [Dsum] (32-bit integer) |
/// 10 | Service-specific general parameter headers/values, if present |
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct GuaranteedAdspec {
    /// The service's break bit: a hop without Guaranteed service was passed.
    pub break_bit: bool,
    /// Ctot, Dtot, Csum, Dsum; `None` for a fragment that carries none of them (a header-only
    /// fragment, as a node that broke the service may send).
    pub errors: Option<ErrorTerms>,
    /// Service-specific overrides of the general parameters.
    pub overrides: Overrides,
    /// Other parameters, in the order received.
    pub unknown: Vec<IntServParam>,
}

/// The Guaranteed service's composed error terms (RFC 2212 §6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ErrorTerms {
    /// Ctot, bytes.
    pub c_tot: u32,
    /// Dtot, microseconds.
    pub d_tot: u32,
    /// Csum, bytes.
    pub c_sum: u32,
    /// Dsum, microseconds.
    pub d_sum: u32,
}

/// The Controlled-Load service fragment (RFC 2210 §3.3.4, service 5): a break bit and optional
/// overrides.
///
/// ```text
/// 1  |     5 (a)     |x|  (b)        |            N-1 (c)            |
///    | Service-specific general parameter headers/values, if present |
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ControlledLoadAdspec {
    /// The service's break bit.
    pub break_bit: bool,
    /// Service-specific overrides of the general parameters.
    pub overrides: Overrides,
    /// Other parameters, in the order received.
    pub unknown: Vec<IntServParam>,
}

/// ADSPEC (C-Type 2; RFC 2210 §3.3): the default general parameters fragment and optional
/// Guaranteed and Controlled-Load fragments.
///
/// The engine creates one with [`Adspec::new_at_sender`], composes each hop into it with
/// [`Adspec::compose`] and marks a non-RSVP hop with [`Adspec::set_break_bit`].
#[derive(Clone, Debug, PartialEq)]
pub struct Adspec {
    /// The default general parameters (always present).
    pub general: GeneralParameters,
    /// The Guaranteed fragment, if the sender may use Guaranteed service.
    pub guaranteed: Option<GuaranteedAdspec>,
    /// The Controlled-Load fragment, if the sender may use Controlled-Load service.
    pub controlled_load: Option<ControlledLoadAdspec>,
    /// Fragments of other services, in the order received.
    pub other: Vec<ServiceFragment>,
}

impl Adspec {
    /// MINIMUM_PATH_LATENCY's "indeterminate" value; sums clamp at it (RFC 2215 §3.4).
    pub const INDETERMINATE_LATENCY: u32 = u32::MAX;

    /// PATH_MTU a sender starts with, before any link is composed: the largest IP datagram
    /// without jumbograms (RFC 791 Total Length, RFC 8200 Payload Length), so the MIN rule of
    /// RFC 2215 §3.5 lets the first real link set the value.
    pub const INITIAL_PATH_MTU: u32 = 65_535;

    /// The ADSPEC a sender puts in its first Path (RFC 2210 §3.3, RFC 2215 §3): no break bit,
    /// IS hop count 0, path bandwidth +infinity and MTU [`Adspec::INITIAL_PATH_MTU`] (the
    /// neutral values of the MIN composition rules), latency 0, and for the Guaranteed fragment
    /// Ctot = Dtot = Csum = Dsum = 0. The sender's own outgoing link is then composed in with
    /// [`Adspec::compose`] like any other hop's.
    pub fn new_at_sender(guaranteed: bool, controlled_load: bool) -> Adspec {
        Adspec {
            general: GeneralParameters {
                break_bit: false,
                hop_count: 0,
                path_bw: f32::INFINITY,
                min_latency_us: 0,
                mtu: Self::INITIAL_PATH_MTU,
                unknown: Vec::new(),
            },
            guaranteed: guaranteed.then(|| GuaranteedAdspec {
                break_bit: false,
                errors: Some(ErrorTerms::default()),
                overrides: Overrides::default(),
                unknown: Vec::new(),
            }),
            controlled_load: controlled_load.then(ControlledLoadAdspec::default),
            other: Vec::new(),
        }
    }

    /// Compose one hop into the ADSPEC (RFC 2210 §3.3, RFC 2215 §3, RFC 2212 §6): the IS hop
    /// count goes up by one; path bandwidth and MTU take the MIN; latency, Ctot/Dtot and
    /// Csum/Dsum add the hop's latency, C and D, clamped at 2^32 - 1. Service overrides present
    /// are composed by the same rules.
    pub fn compose(&mut self, hop: &HopCharacteristics) {
        let g = &mut self.general;
        let mut general = Overrides {
            hop_count: Some(g.hop_count),
            path_bw: Some(g.path_bw),
            min_latency_us: Some(g.min_latency_us),
            mtu: Some(g.mtu),
        };
        general.compose(hop);
        g.hop_count = general.hop_count.unwrap_or(g.hop_count);
        g.path_bw = general.path_bw.unwrap_or(g.path_bw);
        g.min_latency_us = general.min_latency_us.unwrap_or(g.min_latency_us);
        g.mtu = general.mtu.unwrap_or(g.mtu);
        if let Some(gs) = &mut self.guaranteed {
            if let Some(t) = &mut gs.errors {
                t.c_tot = t.c_tot.saturating_add(hop.c);
                t.d_tot = t.d_tot.saturating_add(hop.d);
                t.c_sum = t.c_sum.saturating_add(hop.c);
                t.d_sum = t.d_sum.saturating_add(hop.d);
            }
            gs.overrides.compose(hop);
        }
        if let Some(cl) = &mut self.controlled_load {
            cl.overrides.compose(hop);
        }
    }

    /// Set the global break bit: a hop that does not support IntServ (a non-RSVP hop) lies on
    /// the path (RFC 2210 §3.3, RFC 2215 §3.1).
    pub fn set_break_bit(&mut self) {
        self.general.break_bit = true;
    }

    /// Parse an ADSPEC body. Failures other than the C-Type are [`ParseErrorKind::BadAdspec`]
    /// (error 21, value 5).
    pub fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
        if ctype != ctype::INTSERV {
            return Err(ParseErrorKind::unknown_ctype(class::ADSPEC, ctype));
        }
        Self::parse_fragments(body).map_err(ParseErrorKind::BadAdspec)
    }

    fn parse_fragments(body: &[u8]) -> Result<Self, IntServFault> {
        let mut general = None;
        let mut guaranteed = None;
        let mut controlled_load = None;
        let mut other = Vec::new();
        for fragment in TlvIter::<WordTlv>::new(read_message(body)?) {
            let (hdr, data) = fragment?;
            let break_bit = hdr.flags & BREAK_BIT != 0;
            let duplicate = IntServFault::DuplicateService(hdr.number);
            match hdr.number {
                service::GENERAL if general.is_some() => return Err(duplicate),
                service::GUARANTEED if guaranteed.is_some() => return Err(duplicate),
                service::CONTROLLED_LOAD if controlled_load.is_some() => return Err(duplicate),
                service::GENERAL => general = Some(read_general(break_bit, data)?),
                service::GUARANTEED => guaranteed = Some(read_guaranteed(break_bit, data)?),
                service::CONTROLLED_LOAD => {
                    let (overrides, unknown) = read_overrides(hdr.number, data)?;
                    controlled_load = Some(ControlledLoadAdspec {
                        break_bit,
                        overrides,
                        unknown,
                    });
                }
                _ => other.push(ServiceFragment {
                    service: hdr.number,
                    flags: hdr.flags,
                    data: data.to_vec(),
                }),
            }
        }
        Ok(Adspec {
            general: general.ok_or(IntServFault::MissingService(service::GENERAL))?,
            guaranteed,
            controlled_load,
            other,
        })
    }

    /// C-Type: always 2 (IntServ).
    pub fn ctype(&self) -> u8 {
        ctype::INTSERV
    }

    fn general_len(&self) -> usize {
        32 + unknown_len(&self.general.unknown)
    }

    fn guaranteed_len(gs: &GuaranteedAdspec) -> usize {
        usize::from(gs.errors.is_some()) * 32 + gs.overrides.buffer_len() + unknown_len(&gs.unknown)
    }

    fn controlled_load_len(cl: &ControlledLoadAdspec) -> usize {
        cl.overrides.buffer_len() + unknown_len(&cl.unknown)
    }

    /// Bytes of service fragments (headers included) after the message header.
    fn fragments_len(&self) -> usize {
        4 + self.general_len()
            + self
                .guaranteed
                .as_ref()
                .map_or(0, |gs| 4 + Self::guaranteed_len(gs))
            + self
                .controlled_load
                .as_ref()
                .map_or(0, |cl| 4 + Self::controlled_load_len(cl))
            + self
                .other
                .iter()
                .map(|f| 4 + f.data.len().next_multiple_of(4))
                .sum::<usize>()
    }

    /// Object length in bytes, header included.
    pub fn buffer_len(&self) -> usize {
        ObjectHeader::LEN + 4 + self.fragments_len()
    }

    /// Write the object, header included: general, Guaranteed, Controlled-Load, then other
    /// fragments; in each, the known parameters in ID order, then unknown ones.
    pub fn emit(&self, w: &mut Writer<'_>) {
        ObjectHeader::emit(
            w,
            class::ADSPEC,
            ctype::INTSERV,
            self.buffer_len() - ObjectHeader::LEN,
        );
        write_message_header(w, self.fragments_len());
        let flags = |b: bool| if b { BREAK_BIT } else { 0 };
        let g = &self.general;
        write_word_tlv(w, service::GENERAL, flags(g.break_bit), self.general_len());
        Overrides {
            hop_count: Some(g.hop_count),
            path_bw: Some(g.path_bw),
            min_latency_us: Some(g.min_latency_us),
            mtu: Some(g.mtu),
        }
        .write(w);
        g.unknown.iter().for_each(|p| p.write(w));
        if let Some(gs) = &self.guaranteed {
            let len = Self::guaranteed_len(gs);
            write_word_tlv(w, service::GUARANTEED, flags(gs.break_bit), len);
            if let Some(t) = gs.errors {
                for (id, v) in [
                    (param::C_TOT, t.c_tot),
                    (param::D_TOT, t.d_tot),
                    (param::C_SUM, t.c_sum),
                    (param::D_SUM, t.d_sum),
                ] {
                    write_word_tlv(w, id, 0, 4);
                    w.u32(v);
                }
            }
            gs.overrides.write(w);
            gs.unknown.iter().for_each(|p| p.write(w));
        }
        if let Some(cl) = &self.controlled_load {
            let len = Self::controlled_load_len(cl);
            write_word_tlv(w, service::CONTROLLED_LOAD, flags(cl.break_bit), len);
            cl.overrides.write(w);
            cl.unknown.iter().for_each(|p| p.write(w));
        }
        for f in &self.other {
            let len = f.data.len().next_multiple_of(4);
            write_word_tlv(w, f.service, f.flags, len);
            w.bytes(&f.data);
            w.zeros(len - f.data.len());
        }
    }
}

fn unknown_len(params: &[IntServParam]) -> usize {
    params.iter().map(IntServParam::buffer_len).sum()
}

/// Split a fragment's parameters into general-parameter overrides and unknown parameters.
fn read_overrides(
    service: u8,
    data: &[u8],
) -> Result<(Overrides, Vec<IntServParam>), IntServFault> {
    let mut overrides = Overrides::default();
    let mut unknown = Vec::new();
    for p in TlvIter::<WordTlv>::new(data) {
        let (hdr, pdata) = p?;
        if !overrides.take(service, hdr, pdata)? {
            unknown.push(IntServParam {
                id: hdr.number,
                flags: hdr.flags,
                data: pdata.to_vec(),
            });
        }
    }
    Ok((overrides, unknown))
}

fn read_general(break_bit: bool, data: &[u8]) -> Result<GeneralParameters, IntServFault> {
    let (o, unknown) = read_overrides(service::GENERAL, data)?;
    let missing = |param| IntServFault::MissingParameter {
        service: service::GENERAL,
        param,
    };
    Ok(GeneralParameters {
        break_bit,
        hop_count: o.hop_count.ok_or(missing(param::IS_HOPS))?,
        path_bw: o.path_bw.ok_or(missing(param::PATH_BW))?,
        min_latency_us: o.min_latency_us.ok_or(missing(param::MIN_LATENCY))?,
        mtu: o.mtu.ok_or(missing(param::PATH_MTU))?,
        unknown,
    })
}

fn read_guaranteed(break_bit: bool, data: &[u8]) -> Result<GuaranteedAdspec, IntServFault> {
    let svc = service::GUARANTEED;
    let mut terms: [Option<u32>; 4] = [None; 4];
    let mut overrides = Overrides::default();
    let mut unknown = Vec::new();
    for p in TlvIter::<WordTlv>::new(data) {
        let (hdr, pdata) = p?;
        let bad = IntServFault::BadParameter {
            service: svc,
            param: hdr.number,
        };
        if let Some(slot) = hdr
            .number
            .checked_sub(param::C_TOT)
            .and_then(|i| terms.get_mut(usize::from(i)))
        {
            if slot.is_some() || hdr.words != 1 {
                return Err(bad);
            }
            *slot = Some(Reader::new(pdata).u32()?);
        } else if !overrides.take(svc, hdr, pdata)? {
            unknown.push(IntServParam {
                id: hdr.number,
                flags: hdr.flags,
                data: pdata.to_vec(),
            });
        }
    }
    let errors = match terms {
        [None, None, None, None] => None,
        [Some(c_tot), Some(d_tot), Some(c_sum), Some(d_sum)] => Some(ErrorTerms {
            c_tot,
            d_tot,
            c_sum,
            d_sum,
        }),
        partial => {
            let missing = partial.iter().position(Option::is_none).unwrap_or(0);
            return Err(IntServFault::MissingParameter {
                service: svc,
                param: param::C_TOT + missing as u8,
            });
        }
    };
    Ok(GuaranteedAdspec {
        break_bit,
        errors,
        overrides,
        unknown,
    })
}

#[cfg(test)]
mod tests;
