//! The sans-IO engine contract (ARCHITECTURE.md, "The engine contract").
//!
//! A driver feeds an engine inputs (`handle_*`) and then drains its outputs (`poll_*`) until
//! there are none, and calls [`Engine::handle_timeout`] no later than [`Engine::poll_timeout`]
//! says. The same engine runs under unit tests, the simulator (`pathwise-sim`) and the Linux
//! driver (`pathwise-net`); none of them needs to know which protocol it drives.

use crate::io::{Received, Transmit};
use crate::route::RouteChange;
use crate::time::Instant;

/// A sans-IO protocol engine that a driver can run.
pub trait Engine {
    /// What the engine reports to its applications (upcalls).
    type Event;

    /// A datagram arrived for this node: addressed to it, to a group it joined, or intercepted
    /// in transit because [`Engine::wants_router_alert`] said so.
    fn handle_datagram(&mut self, now: Instant, dgram: Received<'_>);

    /// Time has reached at least the deadline [`Engine::poll_timeout`] reported.
    fn handle_timeout(&mut self, now: Instant);

    /// The node's routing changed.
    fn handle_route_change(&mut self, now: Instant, change: RouteChange);

    /// The next datagram to send, if any.
    fn poll_transmit(&mut self) -> Option<Transmit>;

    /// The next event for applications, if any.
    fn poll_event(&mut self) -> Option<Self::Event>;

    /// When the engine next needs [`Engine::handle_timeout`], if ever.
    fn poll_timeout(&self) -> Option<Instant>;

    /// Whether a transiting datagram carrying the IP Router Alert option should be handed to
    /// this engine instead of being forwarded (Linux: `IP_ROUTER_ALERT` on a raw socket).
    fn wants_router_alert(&self, dgram: &Received<'_>) -> bool;
}
