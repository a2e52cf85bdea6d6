//! pathwise-qos-nslp: the QoS NSLP (RFC 5974), the NSIS signalling application that reserves
//! resources along a data path, with the QSPEC template (RFC 5975) that describes them.
//!
//! # How it is driven
//!
//! - [`wire`]: the complete wire format — every message (RESERVE, QUERY, RESPONSE, NOTIFY),
//!   every object of RFC 5974 §5.1.3 and the QSPEC with its objects and parameters. Pure:
//!   bytes in, values out, and back.
//! - [`engine`]: the QoS NSLP state machine, [`QosNslp`], a sans-IO plug-in over GIST's NSLP
//!   API (`pathwise_gist::nslp`, RFC 5971 Appendix B), like the Ping NSLP:
//!
//! 1. it implements `pathwise_gist::nslp::Nslp` for its NSLPID and is registered with
//!    `GistEngine::register`; GIST hands it each NSLP-Data payload (`RecvMessage`, B.2), its
//!    MessageStatus (B.3) and NetworkNotifications (B.4, route changes);
//! 2. it keeps per-session state keyed by GIST Session ID (roles, RSNs, RIIs, refresh and
//!    lifetime timers), takes time only as the `now` argument of each call, and admits QSPECs
//!    through a `pathwise_core::tc::TrafficControl` — the one RSVP uses; share one instance
//!    between the two engines of a node with `pathwise_core::tc::SharedTrafficControl`;
//! 3. it sends with `GistApi::send_message` (B.1) and reports its next deadline through
//!    `Nslp::poll_timeout`, which GIST counts among its own, so whoever drives GIST (tests,
//!    `pathwise-sim`, the daemon) wakes it in time;
//! 4. the application starts reservations with [`QosNslp::reserve`] (sender-initiated),
//!    [`QosNslp::reserve_receiver_initiated`], [`QosNslp::query`] and ends them with
//!    [`QosNslp::release`], reached through `GistEngine::with_nslp`; outcomes come back from
//!    [`QosNslp::poll_event`]. A request may be bound to other sessions
//!    ([`ReserveRequest::bound_to`], RFC 5974 §3.2.8); bound as dependent (Binding Code
//!    0x04), its QNI hears by a NOTIFY ([`QosEvent::Notified`]) when a session it depends on
//!    goes anywhere on the path, and decides whether to release it (§5.4.1, §5.4.4).
//!
//! It runs over IPC too, as its own process on GIST's node (`pathwise_gist::ipc::IpcGist`,
//! whose `with_outgoing_interface` supplies the flow's outgoing link from the kernel's routes):
//! `pathwise qos nslp --ipc-socket PATH --interface e0:100Mbit --reserve DEST --rate 4Mbit`.
#![warn(missing_docs)]

pub mod engine;
pub mod wire;

pub use engine::{
    Initiation, NSLPID, QosConfig, QosEvent, QosNslp, RequestError, Reservation, ReserveRequest,
    Role,
};
