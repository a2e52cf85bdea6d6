//! The traffic-control interface RSVP reserves through (RFC 2205 §2.1 "traffic control",
//! RFC 2209 §1 "TC_AddFlowspec"): protocol-neutral, in `pathwise_core::tc`, shared with the QoS
//! NSLP. Here are the RSVP sides of it: a FLOWSPEC and its FILTER_SPECs as a [`TcRequest`], and
//! an [`AdmissionError`] as an ERROR_SPEC.

use crate::wire::{FilterSpec, FlowSpec, Session};
pub use pathwise_core::tc::{
    AdmissionError, FlowClassifier, HopCharacteristics, MemoryTrafficControl, SharedTrafficControl,
    TcHandle, TcInterface, TcRequest, TokenBucket, TrafficControl,
};
use std::net::IpAddr;

/// The ERROR_SPEC (code, value) reporting an admission failure (RFC 2205 App. B, error code 1
/// "Admission Control failure").
pub fn admission_error_code(e: AdmissionError) -> (u8, u16) {
    use crate::wire::error::error_code as ec;
    match e {
        // Sub-code 2: requested bandwidth unavailable.
        AdmissionError::BandwidthUnavailable => (ec::ADMISSION_CONTROL_FAILURE, 2),
        // Sub-code 3: MTU in flowspec larger than interface MTU.
        AdmissionError::MtuTooBig => (ec::ADMISSION_CONTROL_FAILURE, 3),
        AdmissionError::UnknownInterface => (ec::TRAFFIC_CONTROL_SYSTEM_ERROR, 0),
    }
}

/// A FLOWSPEC's TSpec and the rate it reserves (the token rate for Controlled-Load, the RSpec
/// rate for Guaranteed).
pub fn flowspec_request(f: &FlowSpec) -> (TokenBucket, f32) {
    let t = match f {
        FlowSpec::ControlledLoad(t) => t,
        FlowSpec::Guaranteed { tspec, .. } => tspec,
    };
    let tspec = TokenBucket {
        rate: f64::from(t.rate),
        bucket: f64::from(t.bucket),
        peak: f64::from(t.peak),
        min_policed: t.min_policed,
        max_packet: t.max_packet,
    };
    (tspec, f.reserved_rate())
}

/// The classifier selecting one sender's packets of a session (SESSION plus FILTER_SPEC,
/// RFC 2205 §3.1.5).
pub fn classifier(session: &Session, sender: &FilterSpec) -> FlowClassifier {
    let (src, src_port, flow_label) = match *sender {
        FilterSpec::V4 { src, src_port } => (IpAddr::V4(src), src_port, 0),
        FilterSpec::V6 { src, src_port } => (IpAddr::V6(src), src_port, 0),
        FilterSpec::V6FlowLabel { src, flow_label } => (IpAddr::V6(src), 0, flow_label),
        // An LSP tunnel's sender (RFC 3209 §4.6.2) has an LSP ID, not a port: like port 0, the
        // filter matches the sender's address only.
        FilterSpec::LspTunnelV4 { src, .. } => (IpAddr::V4(src), 0, 0),
        FilterSpec::LspTunnelV6 { src, .. } => (IpAddr::V6(src), 0, 0),
    };
    FlowClassifier {
        dst: session.dest,
        src: Some(src),
        protocol: session.protocol_id,
        dst_port: session.dst_port,
        src_port,
        flow_label,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cl(rate: f32) -> FlowSpec {
        FlowSpec::ControlledLoad(crate::wire::TokenBucket {
            rate,
            bucket: 1000.0,
            peak: f32::INFINITY,
            min_policed: 64,
            max_packet: 1500,
        })
    }

    #[test]
    fn flowspecs_become_requests() {
        let (t, r) = flowspec_request(&cl(600.0));
        assert_eq!((t.rate, r, t.max_packet), (600.0, 600.0, 1500));
        let g = FlowSpec::Guaranteed {
            tspec: crate::wire::TokenBucket {
                rate: 100.0,
                bucket: 10.0,
                peak: 200.0,
                min_policed: 64,
                max_packet: 1000,
            },
            rate: 150.0,
            slack: 0,
        };
        assert_eq!(flowspec_request(&g).1, 150.0);
        assert_eq!(
            admission_error_code(AdmissionError::BandwidthUnavailable),
            (1, 2)
        );
    }

    #[test]
    fn admits_a_flowspec_up_to_reservable() {
        let mut tc = MemoryTrafficControl::new();
        tc.add_interface(
            pathwise_core::io::IfIndex(1),
            TcInterface {
                reservable: 1000.0,
                bandwidth: 2000.0,
                latency_us: 10,
                mtu: 1500,
            },
        );
        let s = Session {
            dest: "10.0.0.1".parse().unwrap(),
            protocol_id: 17,
            flags: 0,
            dst_port: 1,
            extended_tunnel_id: None,
        };
        let f = FilterSpec::V4 {
            src: "10.0.0.2".parse().unwrap(),
            src_port: 9,
        };
        let c = [classifier(&s, &f)];
        assert_eq!(c[0].src, Some("10.0.0.2".parse().unwrap()));
        let req = |fs: &FlowSpec| {
            let (tspec, rate) = flowspec_request(fs);
            TcRequest {
                tspec,
                rate,
                classifiers: &c,
            }
        };
        tc.reserve(pathwise_core::io::IfIndex(1), req(&cl(600.0)))
            .unwrap();
        assert_eq!(
            tc.reserve(pathwise_core::io::IfIndex(1), req(&cl(600.0))),
            Err(AdmissionError::BandwidthUnavailable)
        );
    }
}
