//! The QoS NSLP (RFC 5974, QSPEC RFC 5975) in `pathwise daemon` and `pathwise qos`: the engine
//! (`pathwise_qos_nslp`) is a plug-in of the `[gist]` service, admitting through the `[rsvp]`
//! service's traffic control — one instance, so both protocols share each interface's budget.
//!
//! - [`config`]: the `[qos_nslp]` section;
//! - [`counters`]: the engine's counters in `qos show` and on the metrics page;
//! - [`verbs`]: the management verbs `qos.reserve`, `qos.release`, `qos.query`, `qos.show`;
//! - [`cli`]: `pathwise qos reserve|release|query|show|nslp`;
//! - [`ipc`]: `pathwise qos nslp`, the QoS NSLP as its own process over GIST's IPC NSLP API;
//! - [`bench`]: `pathwise bench qos`, the QoS NSLP side by side with RSVP;
//! - [`campaign`]: `pathwise sim campaign qos`.

pub mod bench;
pub mod campaign;
pub mod cli;
pub mod config;
pub mod counters;
pub mod ipc;
pub mod verbs;
