//! The traffic-control interface: admission control and installation of reservations on an
//! outgoing interface (RFC 2205 §2.1 "traffic control", RFC 2209 §1 "TC_AddFlowspec").
//!
//! The engine asks; the implementation decides. [`MemoryTrafficControl`] keeps per-interface
//! reservable bandwidth in memory (used by the simulator and tests); the Linux implementation
//! (HTB/HFSC classes) lives with the network driver.

use crate::wire::{FilterSpec, FlowSpec, HopCharacteristics, Session};
use pathwise_core::arena::{Arena, Id};
use pathwise_core::io::IfIndex;
use std::collections::BTreeMap;

/// Names one installed reservation, as handed out by [`TrafficControl::reserve`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TcHandle(pub u64);

/// Why a reservation was refused (RFC 2205 App. B, error code 1 "Admission Control failure").
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AdmissionError {
    /// Requested bandwidth unavailable (sub-code 2).
    #[error("requested bandwidth unavailable")]
    BandwidthUnavailable,
    /// MTU in flowspec larger than interface MTU (sub-code 3).
    #[error("MTU in flowspec larger than interface MTU")]
    MtuTooBig,
    /// The interface is not known to traffic control.
    #[error("unknown interface")]
    UnknownInterface,
}

impl AdmissionError {
    /// The ERROR_SPEC (code, value) reporting this failure.
    pub fn error_code(self) -> (u8, u16) {
        use crate::wire::error::error_code as ec;
        match self {
            AdmissionError::BandwidthUnavailable => (ec::ADMISSION_CONTROL_FAILURE, 2),
            AdmissionError::MtuTooBig => (ec::ADMISSION_CONTROL_FAILURE, 3),
            AdmissionError::UnknownInterface => (ec::TRAFFIC_CONTROL_SYSTEM_ERROR, 0),
        }
    }
}

/// What a reservation asks traffic control to do on one interface.
#[derive(Clone, Copy, Debug)]
pub struct TcRequest<'a> {
    /// The session (destination of the flow).
    pub session: &'a Session,
    /// The merged reservation.
    pub flowspec: &'a FlowSpec,
    /// The senders whose packets it applies to (one for FF, several for SE/WF).
    pub filters: &'a [FilterSpec],
}

/// Admission control and packet scheduling on outgoing interfaces.
pub trait TrafficControl {
    /// Admit and install a reservation on `ifindex`.
    fn reserve(&mut self, ifindex: IfIndex, req: TcRequest<'_>)
    -> Result<TcHandle, AdmissionError>;
    /// Change an installed reservation (flowspec or filters). On error the old one stays.
    fn modify(&mut self, handle: TcHandle, req: TcRequest<'_>) -> Result<(), AdmissionError>;
    /// Remove an installed reservation. Unknown handles are ignored.
    fn release(&mut self, handle: TcHandle);
    /// What the outgoing interface contributes to an ADSPEC.
    fn hop_characteristics(&self, ifindex: IfIndex) -> HopCharacteristics;
}

/// One interface as [`MemoryTrafficControl`] sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TcInterface {
    /// Bandwidth that reservations may take, bytes per second.
    pub reservable: f64,
    /// Link bandwidth, bytes per second (for ADSPEC).
    pub bandwidth: f64,
    /// Link latency, microseconds (for ADSPEC).
    pub latency_us: u32,
    /// MTU, bytes.
    pub mtu: u32,
}

#[derive(Clone, Debug)]
struct Installed {
    ifindex: IfIndex,
    rate: f64,
}

/// In-memory admission control against per-interface reservable bandwidth.
#[derive(Clone, Debug, Default)]
pub struct MemoryTrafficControl {
    interfaces: BTreeMap<IfIndex, (TcInterface, f64)>,
    installed: Arena<Installed>,
}

impl MemoryTrafficControl {
    /// No interfaces yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add or replace an interface.
    pub fn add_interface(&mut self, ifindex: IfIndex, iface: TcInterface) {
        let used = self.interfaces.get(&ifindex).map_or(0.0, |(_, used)| *used);
        self.interfaces.insert(ifindex, (iface, used));
    }

    /// Bandwidth reserved on `ifindex`, bytes per second.
    pub fn reserved(&self, ifindex: IfIndex) -> f64 {
        self.interfaces.get(&ifindex).map_or(0.0, |(_, used)| *used)
    }

    /// Number of installed reservations.
    pub fn len(&self) -> usize {
        self.installed.len()
    }

    /// Whether nothing is installed.
    pub fn is_empty(&self) -> bool {
        self.installed.is_empty()
    }

    /// The installed reservation behind a handle.
    fn find(&self, h: TcHandle) -> Option<Id<Installed>> {
        usize::try_from(h.0)
            .ok()
            .and_then(|i| self.installed.id_at(i))
    }

    fn admit(
        &self,
        ifindex: IfIndex,
        req: &TcRequest<'_>,
        release: f64,
    ) -> Result<f64, AdmissionError> {
        let (iface, used) = self
            .interfaces
            .get(&ifindex)
            .ok_or(AdmissionError::UnknownInterface)?;
        let rate = f64::from(req.flowspec.reserved_rate());
        if req.flowspec.max_packet() > iface.mtu {
            return Err(AdmissionError::MtuTooBig);
        }
        // A small epsilon keeps float rounding from refusing an exact fit.
        if used - release + rate > iface.reservable * (1.0 + 1e-9) {
            return Err(AdmissionError::BandwidthUnavailable);
        }
        Ok(rate)
    }
}

impl TrafficControl for MemoryTrafficControl {
    fn reserve(
        &mut self,
        ifindex: IfIndex,
        req: TcRequest<'_>,
    ) -> Result<TcHandle, AdmissionError> {
        let rate = self.admit(ifindex, &req, 0.0)?;
        if let Some((_, used)) = self.interfaces.get_mut(&ifindex) {
            *used += rate;
        }
        Ok(TcHandle(
            self.installed.insert(Installed { ifindex, rate }).index() as u64,
        ))
    }

    fn modify(&mut self, handle: TcHandle, req: TcRequest<'_>) -> Result<(), AdmissionError> {
        let Some(id) = self.find(handle) else {
            return Err(AdmissionError::UnknownInterface);
        };
        let old = self.installed[id].clone();
        let rate = self.admit(old.ifindex, &req, old.rate)?;
        if let Some((_, used)) = self.interfaces.get_mut(&old.ifindex) {
            *used += rate - old.rate;
        }
        self.installed[id].rate = rate;
        Ok(())
    }

    fn release(&mut self, handle: TcHandle) {
        if let Some(id) = self.find(handle)
            && let old = self.installed.remove(id)
            && let Some((_, used)) = self.interfaces.get_mut(&old.ifindex)
        {
            *used = (*used - old.rate).max(0.0);
        }
    }

    fn hop_characteristics(&self, ifindex: IfIndex) -> HopCharacteristics {
        let (iface, _) = self.interfaces.get(&ifindex).copied().unwrap_or((
            TcInterface {
                reservable: 0.0,
                bandwidth: f64::from(f32::MAX),
                latency_us: 0,
                mtu: 1500,
            },
            0.0,
        ));
        HopCharacteristics {
            bandwidth: iface.bandwidth as f32,
            latency_us: iface.latency_us,
            mtu: iface.mtu,
            // Error terms of a work-conserving rate scheduler: one MTU of rate-dependent error,
            // and the link's own latency as rate-independent error (RFC 2212 §6).
            c: iface.mtu,
            d: iface.latency_us,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::TokenBucket;

    fn cl(rate: f32) -> FlowSpec {
        FlowSpec::ControlledLoad(TokenBucket {
            rate,
            bucket: 1000.0,
            peak: f32::INFINITY,
            min_policed: 64,
            max_packet: 1500,
        })
    }

    #[test]
    fn admits_up_to_reservable_and_releases() {
        let mut tc = MemoryTrafficControl::new();
        tc.add_interface(
            IfIndex(1),
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
        let a = tc
            .reserve(
                IfIndex(1),
                TcRequest {
                    session: &s,
                    flowspec: &cl(600.0),
                    filters: &[],
                },
            )
            .unwrap();
        assert_eq!(
            tc.reserve(
                IfIndex(1),
                TcRequest {
                    session: &s,
                    flowspec: &cl(600.0),
                    filters: &[]
                }
            ),
            Err(AdmissionError::BandwidthUnavailable)
        );
        // Growing an existing reservation counts only the difference.
        tc.modify(
            a,
            TcRequest {
                session: &s,
                flowspec: &cl(1000.0),
                filters: &[],
            },
        )
        .unwrap();
        assert!(
            tc.modify(
                a,
                TcRequest {
                    session: &s,
                    flowspec: &cl(1001.0),
                    filters: &[]
                }
            )
            .is_err()
        );
        assert_eq!(tc.reserved(IfIndex(1)), 1000.0);
        tc.release(a);
        assert_eq!(tc.reserved(IfIndex(1)), 0.0);
        assert!(tc.is_empty());
        assert_eq!(
            tc.reserve(
                IfIndex(9),
                TcRequest {
                    session: &s,
                    flowspec: &cl(1.0),
                    filters: &[]
                }
            ),
            Err(AdmissionError::UnknownInterface)
        );
    }
}
