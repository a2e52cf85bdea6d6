//! The Resource Management Function for the QSPEC template (RFC 5975): reads QoS Desired,
//! QoS Available and Minimum QoS, admits `<TMOD-1>` through the node's shared traffic control,
//! accumulates `<Path Latency>`, applies the M/E/N flags, and builds QoS Reserved.

use crate::wire::qspec::{ParamValue, Tmod, parameter_id};
use crate::wire::{ErrorClass, InfoSpec, Qspec, QspecObject, QspecObjectType, code};
use pathwise_core::io::IfIndex;
use pathwise_core::tc::{
    AdmissionError, FlowClassifier, TcHandle, TcRequest, TokenBucket, TrafficControl,
};

/// What admission gave.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Admitted {
    /// The traffic-control reservation (none where the flow leaves no interface here).
    pub tc: Option<(IfIndex, TcHandle)>,
    /// The rate reserved, bytes per second.
    pub rate: f64,
}

/// Why a QSPEC was refused: the INFO-SPEC to report, and whether traffic control refused it
/// (as opposed to the QSPEC being unusable).
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    /// INFO-SPEC for the RESPONSE.
    pub info: InfoSpec,
    /// Traffic control refused the resources (counted as an admission failure).
    pub admission: bool,
}

fn refusal(class: ErrorClass, code: u8, admission: bool) -> Refusal {
    Refusal {
        info: InfoSpec::new(class, code),
        admission,
    }
}

/// The token bucket for traffic control.
pub fn token_bucket(t: &Tmod) -> TokenBucket {
    TokenBucket {
        rate: f64::from(t.rate),
        bucket: f64::from(t.bucket_size),
        peak: f64::from(t.peak_rate),
        min_policed: t.min_policed_unit,
        max_packet: t.max_packet_size,
    }
}

fn object_mut(q: &mut Qspec, t: QspecObjectType) -> Option<&mut QspecObject> {
    q.objects.iter_mut().find(|o| o.object_type == t)
}

fn param_mut(o: &mut QspecObject, id: u16) -> Option<&mut crate::wire::qspec::Parameter> {
    o.params.iter_mut().find(|p| p.value.id() == id)
}

/// Raise the E flag of parameter `id` of object `t` and of the object (RFC 5975 §4.2.1).
fn raise_e(q: &mut Qspec, t: QspecObjectType, id: u16) {
    if let Some(o) = object_mut(q, t) {
        o.error = true;
        if let Some(p) = param_mut(o, id) {
            p.flags.error = true;
        }
    }
}

fn tmod1_of(q: &Qspec, t: QspecObjectType) -> Option<Tmod> {
    q.object(t).and_then(|o| o.tmod1()).copied()
}

fn latency_of(q: &Qspec, t: QspecObjectType) -> Option<u32> {
    match q.object(t)?.param(parameter_id::PATH_LATENCY)?.value {
        ParamValue::PathLatency(l) => Some(l),
        _ => None,
    }
}

/// What the QNI wants reserved, as a QSPEC must say it: `<TMOD-1>` in QoS Desired (RFC 5975
/// §3.2: "QoS Desired is always included in a RESERVE message"), or in QoS Available alone.
pub fn desired(q: &Qspec) -> Option<Tmod> {
    tmod1_of(q, QspecObjectType::QosDesired).or_else(|| tmod1_of(q, QspecObjectType::QosAvailable))
}

/// Process a QSPEC of a RESERVE at this node and admit it on `oif` (`None`: the flow ends
/// here, nothing to reserve), modifying `existing` in place if there is one. On success the
/// QSPEC is updated as it goes on: N flags on parameters this node cannot interpret, QoS
/// Available adapted to this hop. On refusal the failing parameters carry E flags.
pub fn admit<T: TrafficControl + ?Sized>(
    q: &mut Qspec,
    tc: &mut T,
    oif: Option<IfIndex>,
    existing: Option<(IfIndex, TcHandle)>,
    classifier: FlowClassifier,
) -> Result<Admitted, Refusal> {
    use QspecObjectType::{MinimumQos, QosAvailable, QosDesired};
    // RFC 5975 §4.2.2: parameters this QNE cannot interpret get the N flag; with M set the
    // reservation fails (§4.2.3: Transient Failure / Reservation Failure).
    if let Some((class, c)) = q.mark_unknown_parameters().info_spec() {
        return Err(refusal(class, c, false));
    }
    let Some(want) = desired(q) else {
        // §5.2.1: the traffic model is the one parameter every QSPEC must carry.
        return Err(refusal(
            ErrorClass::ProtocolError,
            code::protocol::MALFORMED_QSPEC,
            false,
        ));
    };
    let hop = oif.map(|i| tc.hop_characteristics(i));
    // RFC 5975 §5.2.3: <Path Latency> in QoS Available composes by summation, clamped at
    // 2^32 - 1 ("indeterminate") once the sum passes 2^32 - 2.
    if let Some(hop) = hop
        && let Some(o) = object_mut(q, QosAvailable)
        && let Some(p) = param_mut(o, parameter_id::PATH_LATENCY)
        && let ParamValue::PathLatency(l) = &mut p.value
    {
        let sum = u64::from(*l) + u64::from(hop.latency_us);
        *l = if *l == u32::MAX || sum > u64::from(u32::MAX - 1) {
            u32::MAX
        } else {
            sum as u32
        };
    }
    // §3.2, §4.3.1 case 3: for latency, "minimum" QoS is the largest acceptable value.
    if let (Some(got), Some(max)) = (latency_of(q, QosAvailable), latency_of(q, MinimumQos))
        && got > max
    {
        raise_e(q, QosAvailable, parameter_id::PATH_LATENCY);
        return Err(refusal(
            ErrorClass::TransientFailure,
            code::transient::RESERVATION_FAILURE,
            true,
        ));
    }
    let Some(oif) = oif else {
        return Ok(Admitted {
            tc: None,
            rate: 0.0,
        });
    };
    // §4.3.1 case 2: reservations follow QoS Available where it carries the parameter.
    let (from, tmod) = match tmod1_of(q, QosAvailable) {
        Some(t) => (QosAvailable, t),
        None => (QosDesired, want),
    };
    let classifiers = [classifier];
    let mut attempt = |t: &Tmod| {
        let req = TcRequest {
            tspec: token_bucket(t),
            rate: t.rate,
            classifiers: &classifiers,
        };
        match existing {
            Some((i, h)) if i == oif => tc.modify(h, req).map(|()| (i, h)),
            _ => tc.reserve(oif, req).map(|h| (oif, h)),
        }
    };
    let outcome = match attempt(&tmod) {
        Err(AdmissionError::BandwidthUnavailable) => {
            // §4.3.1 case 3: anything down to Minimum QoS will do; QoS Available then says
            // what this hop could give.
            match tmod1_of(q, MinimumQos).filter(|m| m.rate < tmod.rate) {
                Some(min) => attempt(&min).map(|r| (r, Some(min.rate))),
                None => Err(AdmissionError::BandwidthUnavailable),
            }
        }
        other => other.map(|r| (r, None)),
    };
    match outcome {
        Ok((r, lowered)) => {
            if let Some(rate) = lowered
                && let Some(o) = object_mut(q, QosAvailable)
                && let Some(p) = param_mut(o, parameter_id::TMOD_1)
                && let ParamValue::Tmod1(t) = &mut p.value
            {
                t.rate = rate;
            }
            // A reservation moving to another interface leaves the old one.
            if let Some((i, h)) = existing
                && i != oif
            {
                tc.release(h);
            }
            Ok(Admitted {
                tc: Some(r),
                rate: f64::from(lowered.unwrap_or(tmod.rate)),
            })
        }
        Err(AdmissionError::UnknownInterface) => Err(refusal(
            ErrorClass::PermanentFailure,
            code::permanent::INTERNAL_ERROR,
            true,
        )),
        Err(AdmissionError::BandwidthUnavailable | AdmissionError::MtuTooBig) => {
            // §4.2.1: the parameter that could not be satisfied, and its object, get E.
            raise_e(q, from, parameter_id::TMOD_1);
            Err(refusal(
                ErrorClass::TransientFailure,
                code::transient::RESERVATION_FAILURE,
                true,
            ))
        }
    }
}

/// Update QoS Available of a QUERY at this hop (RFC 5975 §3.2: "if resources available to this
/// QNE are less than what a particular parameter says currently, the QNE MUST adapt this
/// parameter"): path latency accumulated, the token rate capped by the link's bandwidth.
pub fn query_hop<T: TrafficControl + ?Sized>(q: &mut Qspec, tc: &T, oif: Option<IfIndex>) {
    q.mark_unknown_parameters();
    let Some(hop) = oif.map(|i| tc.hop_characteristics(i)) else {
        return;
    };
    let Some(o) = object_mut(q, QspecObjectType::QosAvailable) else {
        return;
    };
    for p in &mut o.params {
        match &mut p.value {
            ParamValue::PathLatency(l) => {
                let sum = u64::from(*l) + u64::from(hop.latency_us);
                *l = if *l == u32::MAX || sum > u64::from(u32::MAX - 1) {
                    u32::MAX
                } else {
                    sum as u32
                };
            }
            ParamValue::Tmod1(t) if t.rate > hop.bandwidth => t.rate = hop.bandwidth,
            _ => {}
        }
    }
}

/// The QSPEC of the QNR's RESPONSE (RFC 5975 §4.3.1): QoS Reserved holds QoS Desired's
/// parameters, with the value QoS Available arrived with where it carries the same one; QoS
/// Available goes back as it arrived.
pub fn response_qspec(q: &Qspec) -> Qspec {
    let avail = q.object(QspecObjectType::QosAvailable);
    let mut objects = Vec::new();
    if let Some(d) = q.object(QspecObjectType::QosDesired) {
        let params = d
            .params
            .iter()
            .map(|p| {
                avail
                    .and_then(|a| a.param(p.value.id()))
                    .cloned()
                    .unwrap_or_else(|| p.clone())
            })
            .collect();
        objects.push(QspecObject::new(QspecObjectType::QosReserved, params));
    }
    if let Some(a) = avail {
        objects.push(a.clone());
    }
    let mut r = q.clone();
    r.objects = objects;
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::QspecProcedure;
    use crate::wire::qspec::{ParamFlags, Parameter};
    use pathwise_core::tc::{MemoryTrafficControl, TcInterface};

    pub(crate) fn tmod(rate: f32) -> Tmod {
        Tmod {
            rate,
            bucket_size: 1500.0,
            peak_rate: f32::INFINITY,
            min_policed_unit: 64,
            max_packet_size: 1500,
        }
    }

    fn tc() -> MemoryTrafficControl {
        let mut tc = MemoryTrafficControl::new();
        tc.add_interface(
            IfIndex(1),
            TcInterface {
                reservable: 1000.0,
                bandwidth: 2000.0,
                latency_us: 100,
                mtu: 1500,
            },
        );
        tc
    }

    fn cls() -> FlowClassifier {
        FlowClassifier {
            dst: "10.0.0.9".parse().unwrap(),
            src: None,
            protocol: 17,
            dst_port: 0,
            src_port: 0,
            flow_label: 0,
        }
    }

    fn qspec(desired: f32, avail: Option<(f32, u32)>, min: Option<(f32, u32)>) -> Qspec {
        let mut objects = vec![QspecObject::new(
            QspecObjectType::QosDesired,
            vec![Parameter::new(
                ParamFlags::MANDATORY,
                ParamValue::Tmod1(tmod(desired)),
            )],
        )];
        for (t, v) in [
            (QspecObjectType::QosAvailable, avail),
            (QspecObjectType::MinimumQos, min),
        ] {
            if let Some((rate, lat)) = v {
                objects.push(QspecObject::new(
                    t,
                    vec![
                        Parameter::new(ParamFlags::default(), ParamValue::Tmod1(tmod(rate))),
                        Parameter::new(ParamFlags::default(), ParamValue::PathLatency(lat)),
                    ],
                ));
            }
        }
        Qspec::new(QspecProcedure::default(), objects)
    }

    #[test]
    fn admits_desired_and_refuses_with_e_flags() {
        let mut tc = tc();
        let mut q = qspec(600.0, None, None);
        let a = admit(&mut q, &mut tc, Some(IfIndex(1)), None, cls()).unwrap();
        assert_eq!(a.rate, 600.0);
        assert_eq!(tc.reserved(IfIndex(1)), 600.0);
        let mut q2 = qspec(600.0, None, None);
        let e = admit(&mut q2, &mut tc, Some(IfIndex(1)), None, cls()).unwrap_err();
        assert_eq!(
            (e.info.class, e.info.code, e.admission),
            (
                ErrorClass::TransientFailure,
                code::transient::RESERVATION_FAILURE,
                true
            )
        );
        let o = q2.object(QspecObjectType::QosDesired).unwrap();
        assert!(o.error && o.params[0].flags.error);
        // Nothing to reserve where the flow ends.
        let mut q3 = qspec(600.0, None, None);
        assert_eq!(admit(&mut q3, &mut tc, None, None, cls()).unwrap().tc, None);
    }

    #[test]
    fn minimum_qos_takes_less_and_says_so_in_qos_available() {
        let mut tc = tc();
        let mut q = qspec(900.0, Some((900.0, 0)), Some((300.0, 1000)));
        admit(&mut q, &mut tc, Some(IfIndex(1)), None, cls()).unwrap();
        let mut q2 = qspec(900.0, Some((900.0, 0)), Some((100.0, 1000)));
        let a = admit(&mut q2, &mut tc, Some(IfIndex(1)), None, cls()).unwrap();
        assert_eq!(a.rate, 100.0);
        assert_eq!(
            tmod1_of(&q2, QspecObjectType::QosAvailable).unwrap().rate,
            100.0
        );
        assert_eq!(latency_of(&q2, QspecObjectType::QosAvailable), Some(100));
        let r = response_qspec(&q2);
        assert_eq!(
            tmod1_of(&r, QspecObjectType::QosReserved).unwrap().rate,
            100.0
        );
    }

    #[test]
    fn path_latency_beyond_the_minimum_fails() {
        let mut tc = tc();
        let mut q = qspec(10.0, Some((10.0, 950)), Some((10.0, 1000)));
        let e = admit(&mut q, &mut tc, Some(IfIndex(1)), None, cls()).unwrap_err();
        assert_eq!(e.info.code, code::transient::RESERVATION_FAILURE);
        assert!(tc.is_empty(), "nothing reserved");
        let p = q
            .object(QspecObjectType::QosAvailable)
            .unwrap()
            .param(parameter_id::PATH_LATENCY)
            .unwrap();
        assert!(p.flags.error);
        // Indeterminate stays indeterminate.
        let mut q2 = qspec(10.0, Some((10.0, u32::MAX - 5)), None);
        admit(&mut q2, &mut tc, Some(IfIndex(1)), None, cls()).unwrap();
        assert_eq!(
            latency_of(&q2, QspecObjectType::QosAvailable),
            Some(u32::MAX)
        );
    }

    #[test]
    fn unknown_mandatory_parameter_fails_unknown_optional_gets_n() {
        let mut tc = tc();
        let unknown = |m: bool| {
            Parameter::new(
                ParamFlags {
                    mandatory: m,
                    ..ParamFlags::default()
                },
                ParamValue::Unknown {
                    id: 200,
                    body: vec![0, 0, 0, 1],
                },
            )
        };
        let mut q = qspec(10.0, None, None);
        q.objects[0].params.push(unknown(false));
        admit(&mut q, &mut tc, Some(IfIndex(1)), None, cls()).unwrap();
        assert!(q.objects[0].params[1].flags.not_supported);
        let mut q2 = qspec(10.0, None, None);
        q2.objects[0].params.push(unknown(true));
        let e = admit(&mut q2, &mut tc, Some(IfIndex(1)), None, cls()).unwrap_err();
        assert_eq!(e.info.code, code::transient::RESERVATION_FAILURE);
    }
}
