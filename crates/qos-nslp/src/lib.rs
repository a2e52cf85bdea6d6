//! pathwise-qos-nslp: the QoS NSLP (RFC 5974), the NSIS signalling application that reserves
//! resources along a data path, with the QSPEC template (RFC 5975) that describes them.
//!
//! # How it is (to be) driven
//!
//! This first layer is the complete wire format, [`wire`]: every message (RESERVE, QUERY,
//! RESPONSE, NOTIFY), every object of RFC 5974 §5.1.3 and the QSPEC with its objects and
//! parameters. It is pure: bytes in, values out, and back.
//!
//! The QoS NSLP state machine that comes next is a sans-IO plug-in over GIST's NSLP API
//! (`pathwise_gist::nslp`, RFC 5971 Appendix B), like the Ping NSLP
//! (`pathwise_gist::nslp::ping`):
//!
//! 1. it implements `pathwise_gist::nslp::Nslp` for the QoS NSLP's NSLPIDs and is registered
//!    with `GistEngine::register`; GIST hands it each NSLP-Data payload (`RecvMessage`, B.2),
//!    which it decodes with [`wire::Message::parse`] — a [`wire::ParseError`] names the
//!    INFO-SPEC of the RESPONSE to send back ([`wire::ParseErrorKind::info_spec`]);
//! 2. it keeps per-session state keyed by GIST Session ID (RSNs, RIIs, refresh timers, bound
//!    sessions), takes time only as the `now` argument of each call, and asks a resource
//!    management function (the admission and traffic control RSVP uses) to admit the QSPEC;
//! 3. it sends with `GistApi::send_message` (B.1) the bytes of [`wire::Message::to_bytes`],
//!    and reports its next deadline so the driver (tests, `pathwise-sim`, the daemon) wakes it.
#![warn(missing_docs)]

pub mod engine;
pub mod wire;

pub use engine::{
    Initiation, NSLPID, QosConfig, QosEvent, QosNslp, RequestError, Reservation, ReserveRequest,
    Role,
};
