//! Admission control and traffic control on outgoing interfaces, in terms no one signalling
//! protocol owns: a token bucket and a packet classifier.
//!
//! RSVP (RFC 2205 §2.1 "traffic control", RFC 2209 §1 "TC_AddFlowspec") and the QoS NSLP
//! (RFC 5974 §3.1.1, the "Resource Management Function") ask the same [`TrafficControl`]
//! implementation of a node, so a node running both has one budget per interface: what one
//! protocol reserves, the other cannot. Share one instance between two engines through
//! [`SharedTrafficControl`] (both engines hold a clone).
//!
//! The engine asks; the implementation decides. [`MemoryTrafficControl`] keeps per-interface
//! reservable bandwidth in memory (used by the simulator and tests); the Linux implementation
//! (HTB classes and u32 filters) lives with the network driver.

use crate::arena::{Arena, Id};
use crate::io::IfIndex;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

/// Names one installed reservation, as handed out by [`TrafficControl::reserve`]. Four bytes:
/// every reservation an engine installs keeps one (RSVP's OutISB, RFC 2209 §1), and the
/// implementations here number reservations by their slot in an [`Arena`], which holds fewer
/// than 2^32.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TcHandle(pub u32);

impl TcHandle {
    /// The handle naming arena slot `index`.
    ///
    /// # Panics
    /// If `index` does not fit in 32 bits (an arena never hands out such a slot).
    pub fn of_slot(index: usize) -> Self {
        TcHandle(u32::try_from(index).expect("arena slots fit in 32 bits"))
    }

    /// The arena slot this handle names.
    pub fn slot(self) -> usize {
        self.0 as usize
    }
}

/// Why a reservation was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AdmissionError {
    /// Requested bandwidth unavailable.
    #[error("requested bandwidth unavailable")]
    BandwidthUnavailable,
    /// The largest packet the reservation covers exceeds the interface MTU.
    #[error("maximum packet size larger than interface MTU")]
    MtuTooBig,
    /// The interface is not known to traffic control.
    #[error("unknown interface")]
    UnknownInterface,
}

/// A token bucket traffic description (RFC 2210 §3.1 TOKEN_BUCKET_TSPEC; RFC 5975 §5.2.2
/// TMOD-1): the same five numbers in both protocols.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TokenBucket {
    /// Token bucket rate r, bytes per second.
    pub rate: f64,
    /// Token bucket size b, bytes.
    pub bucket: f64,
    /// Peak data rate p, bytes per second (may be +infinity).
    pub peak: f64,
    /// Minimum policed unit m, bytes.
    pub min_policed: u32,
    /// Maximum packet size M, bytes.
    pub max_packet: u32,
}

/// Which packets a reservation applies to: the flow's destination and protocol, and one
/// sender. A zero port, flow label or protocol, or no source, matches any.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowClassifier {
    /// Destination address.
    pub dst: IpAddr,
    /// Source address; `None`: any sender.
    pub src: Option<IpAddr>,
    /// IP protocol; 0: any.
    pub protocol: u8,
    /// Destination port; 0: any.
    pub dst_port: u16,
    /// Source port; 0: any.
    pub src_port: u16,
    /// IPv6 flow label; 0: any.
    pub flow_label: u32,
}

/// What a reservation asks traffic control to do on one interface.
#[derive(Clone, Copy, Debug)]
pub struct TcRequest<'a> {
    /// The traffic the reservation is for (its M is checked against the MTU).
    pub tspec: TokenBucket,
    /// The bandwidth to reserve, bytes per second (the token rate for a controlled-load-like
    /// service, a larger service rate for a guaranteed one). Single precision, as both
    /// protocols carry it (RFC 2210 §3.1 and RFC 2212 §3.1 for RSVP, RFC 5975 §5.2.2 for the
    /// QoS NSLP), so an implementation keeps it per reservation in four bytes.
    pub rate: f32,
    /// The packets it applies to (one per sender; several for a shared reservation).
    pub classifiers: &'a [FlowClassifier],
}

/// What one outgoing interface contributes to a path description as a message travels
/// downstream (RSVP's ADSPEC, RFC 2210 §3.3, RFC 2215 §3; a QSPEC's path latency and
/// bandwidth, RFC 5975 §5.2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HopCharacteristics {
    /// Bandwidth of the outgoing link, bytes per second.
    pub bandwidth: f32,
    /// Latency of the outgoing link, microseconds.
    pub latency_us: u32,
    /// MTU of the outgoing link, bytes.
    pub mtu: u32,
    /// Guaranteed service rate-dependent error term C, bytes.
    pub c: u32,
    /// Guaranteed service rate-independent error term D, microseconds.
    pub d: u32,
}

/// Admission control and packet scheduling on outgoing interfaces.
pub trait TrafficControl {
    /// Admit and install a reservation on `ifindex`.
    fn reserve(&mut self, ifindex: IfIndex, req: TcRequest<'_>)
    -> Result<TcHandle, AdmissionError>;
    /// Change an installed reservation (rate or classifiers). On error the old one stays.
    fn modify(&mut self, handle: TcHandle, req: TcRequest<'_>) -> Result<(), AdmissionError>;
    /// Remove an installed reservation. Unknown handles are ignored.
    fn release(&mut self, handle: TcHandle);
    /// What the outgoing interface contributes to a path description.
    fn hop_characteristics(&self, ifindex: IfIndex) -> HopCharacteristics;
    /// Carry out in the data plane what the calls since the last commit decided, for an
    /// implementation that defers it (the Linux one can: `defer_until_commit`). Drivers call
    /// it once they have sent the messages of a batch, so signalling does not wait for the
    /// data plane; engines never call it. Nothing to do for one that acts at once.
    fn commit(&mut self) {}
}

/// One traffic-control instance shared by the engines of a node (RSVP and the QoS NSLP), so
/// they admit against one budget per interface. Clones share the instance.
#[derive(Debug, Default)]
pub struct SharedTrafficControl<T>(Arc<Mutex<T>>);

impl<T> Clone for SharedTrafficControl<T> {
    fn clone(&self) -> Self {
        SharedTrafficControl(Arc::clone(&self.0))
    }
}

impl<T> SharedTrafficControl<T> {
    /// Share `tc`.
    pub fn new(tc: T) -> Self {
        SharedTrafficControl(Arc::new(Mutex::new(tc)))
    }

    /// The instance, locked (for inspection). A poisoned lock is taken over: the state a
    /// panicking holder left is still the accounting of what is installed.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<T: TrafficControl> TrafficControl for SharedTrafficControl<T> {
    fn reserve(
        &mut self,
        ifindex: IfIndex,
        req: TcRequest<'_>,
    ) -> Result<TcHandle, AdmissionError> {
        self.lock().reserve(ifindex, req)
    }
    fn modify(&mut self, handle: TcHandle, req: TcRequest<'_>) -> Result<(), AdmissionError> {
        self.lock().modify(handle, req)
    }
    fn release(&mut self, handle: TcHandle) {
        self.lock().release(handle)
    }
    fn hop_characteristics(&self, ifindex: IfIndex) -> HopCharacteristics {
        self.lock().hop_characteristics(ifindex)
    }
    fn commit(&mut self) {
        self.lock().commit()
    }
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

impl TcInterface {
    /// An interface as configurations and topologies give it, in bits per second: the rates
    /// become bytes per second, the latency whole microseconds (saturating).
    pub fn from_link(
        reservable_bps: u64,
        bandwidth_bps: u64,
        latency: crate::time::Duration,
        mtu: u32,
    ) -> Self {
        TcInterface {
            reservable: reservable_bps as f64 / 8.0,
            bandwidth: bandwidth_bps as f64 / 8.0,
            latency_us: u32::try_from(latency.as_micros()).unwrap_or(u32::MAX),
            mtu,
        }
    }
}

/// One installed reservation: eight bytes, sixteen with its arena slot.
#[derive(Clone, Debug)]
struct Installed {
    ifindex: IfIndex,
    rate: f32,
}

/// In-memory admission control against per-interface reservable bandwidth.
#[derive(Clone, Debug, Default)]
pub struct MemoryTrafficControl {
    interfaces: BTreeMap<IfIndex, (TcInterface, f64)>,
    installed: Arena<Installed>,
}

/// Admission over these interfaces, nothing reserved yet.
impl FromIterator<(IfIndex, TcInterface)> for MemoryTrafficControl {
    fn from_iter<I: IntoIterator<Item = (IfIndex, TcInterface)>>(interfaces: I) -> Self {
        let mut tc = MemoryTrafficControl::new();
        for (ifindex, iface) in interfaces {
            tc.add_interface(ifindex, iface);
        }
        tc
    }
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

    /// Make room for `additional` more installed reservations up front, so a node told its
    /// load does not grow (and double) the table while they arrive.
    pub fn make_room(&mut self, additional: usize) {
        self.installed.reserve(additional);
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
        self.installed.id_at(h.slot())
    }

    fn admit(
        &self,
        ifindex: IfIndex,
        req: &TcRequest<'_>,
        release: f32,
    ) -> Result<f32, AdmissionError> {
        let (iface, used) = self
            .interfaces
            .get(&ifindex)
            .ok_or(AdmissionError::UnknownInterface)?;
        if req.tspec.max_packet > iface.mtu {
            return Err(AdmissionError::MtuTooBig);
        }
        // A small epsilon keeps float rounding from refusing an exact fit.
        if used - f64::from(release) + f64::from(req.rate) > iface.reservable * (1.0 + 1e-9) {
            return Err(AdmissionError::BandwidthUnavailable);
        }
        Ok(req.rate)
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
            *used += f64::from(rate);
        }
        Ok(TcHandle::of_slot(
            self.installed.insert(Installed { ifindex, rate }).index(),
        ))
    }

    fn modify(&mut self, handle: TcHandle, req: TcRequest<'_>) -> Result<(), AdmissionError> {
        let Some(id) = self.find(handle) else {
            return Err(AdmissionError::UnknownInterface);
        };
        let old = self.installed[id].clone();
        let rate = self.admit(old.ifindex, &req, old.rate)?;
        if let Some((_, used)) = self.interfaces.get_mut(&old.ifindex) {
            *used += f64::from(rate) - f64::from(old.rate);
        }
        self.installed[id].rate = rate;
        Ok(())
    }

    fn release(&mut self, handle: TcHandle) {
        if let Some(id) = self.find(handle)
            && let old = self.installed.remove(id)
            && let Some((_, used)) = self.interfaces.get_mut(&old.ifindex)
        {
            *used = (*used - f64::from(old.rate)).max(0.0);
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

    fn req(rate: f32) -> TcRequest<'static> {
        TcRequest {
            tspec: TokenBucket {
                rate: f64::from(rate),
                bucket: 1000.0,
                peak: f64::INFINITY,
                min_policed: 64,
                max_packet: 1500,
            },
            rate,
            classifiers: &[],
        }
    }

    fn iface() -> TcInterface {
        TcInterface {
            reservable: 1000.0,
            bandwidth: 2000.0,
            latency_us: 10,
            mtu: 1500,
        }
    }

    #[test]
    fn admits_up_to_reservable_and_releases() {
        let mut tc = MemoryTrafficControl::new();
        tc.add_interface(IfIndex(1), iface());
        let a = tc.reserve(IfIndex(1), req(600.0)).unwrap();
        assert_eq!(
            tc.reserve(IfIndex(1), req(600.0)),
            Err(AdmissionError::BandwidthUnavailable)
        );
        // Growing an existing reservation counts only the difference.
        tc.modify(a, req(1000.0)).unwrap();
        assert!(tc.modify(a, req(1001.0)).is_err());
        assert_eq!(tc.reserved(IfIndex(1)), 1000.0);
        tc.release(a);
        assert_eq!(tc.reserved(IfIndex(1)), 0.0);
        assert!(tc.is_empty());
        assert_eq!(
            tc.reserve(IfIndex(9), req(1.0)),
            Err(AdmissionError::UnknownInterface)
        );
    }

    #[test]
    fn mtu_is_checked() {
        let mut tc = MemoryTrafficControl::new();
        tc.add_interface(IfIndex(1), iface());
        let mut r = req(10.0);
        r.tspec.max_packet = 9000;
        assert_eq!(tc.reserve(IfIndex(1), r), Err(AdmissionError::MtuTooBig));
    }

    #[test]
    fn clones_of_a_shared_instance_share_one_budget() {
        let mut m = MemoryTrafficControl::new();
        m.add_interface(IfIndex(1), iface());
        let mut a = SharedTrafficControl::new(m);
        let mut b = a.clone();
        let h = a.reserve(IfIndex(1), req(700.0)).unwrap();
        assert_eq!(
            b.reserve(IfIndex(1), req(400.0)),
            Err(AdmissionError::BandwidthUnavailable)
        );
        a.release(h);
        b.reserve(IfIndex(1), req(400.0)).unwrap();
        assert_eq!(a.lock().reserved(IfIndex(1)), 400.0);
    }
}
