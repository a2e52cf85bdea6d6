//! pathwise-gist: GIST, the General Internet Signalling Transport (RFC 5971), with its state
//! machines (RFC 5972), the NSLP API (RFC 5971 Appendix B) and the NSIS Ping NSLP (seed 000
//! §4.1.2), as a sans-IO engine.
//!
//! # How it is driven
//!
//! [`GistEngine`] implements [`pathwise_core::engine::Engine`]. A driver (unit test,
//! `pathwise-sim`, or the Linux driver):
//!
//! 1. builds it from a [`Config`] (interfaces and addresses, refresh period, cookie mode, …) and
//!    registers signalling applications ([`GistEngine::register`] with a
//!    [`nslp::Nslp`] such as [`nslp::ping::PingNslp`]);
//! 2. feeds it D-mode datagrams (UDP port 270, including router-alert interceptions for which
//!    [`Engine::wants_router_alert`](pathwise_core::engine::Engine::wants_router_alert) said
//!    yes) with `handle_datagram`, route changes with `handle_route_change`, time with
//!    `handle_timeout`, and messaging-association stream events with
//!    [`GistEngine::handle_stream`];
//! 3. after every input drains `poll_transmit` (datagrams), [`GistEngine::poll_stream`] (stream
//!    opens, bytes and closes for C-mode) and `poll_event` ([`GistEvent`]s for the application),
//!    then sleeps until `poll_timeout`.
//!
//! Applications act through [`nslp::GistApi`] — inside a plug-in callback, or on the engine
//! directly ([`GistEngine::with_nslp`] reaches a registered plug-in). In simulation,
//! [`sim_stream::StreamAdapter`] wraps the engine and carries its streams reliably over the
//! simulator's datagrams.
//!
//! # Modules
//!
//! - [`wire`]: messages and objects (RFC 5971 §5, Appendix A).
//! - [`engine`]: routing state, handshake, refresh, cookies, messaging associations, errors.
//! - [`nslp`]: the NSLP API, the per-NSLP session table, and [`nslp::ping`].
//! - [`ipc`]: the same NSLP API over a unix socket, for NSLPs running as their own process.
//! - [`sim_stream`]: reliable streams over datagrams, for running C-mode in the simulator.
#![warn(missing_docs)]

pub mod engine;
pub mod ipc;
pub mod nslp;
pub mod sim_stream;
pub mod wire;

pub use engine::{
    Config, CookieMode, Counters, GistEngine, GistEvent, InterfaceConfig, MAX_STREAM_MESSAGE,
    MaState, MaTransport, MrsKey, QueryingState, RespondingState, RouterAlertValues,
    RoutingStateView, StateStats, StreamInput, StreamOp, StreamTransmit, StreamVetting,
};
