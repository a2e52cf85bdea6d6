//! The engine's own [`GistApi`]: applications outside the engine use the NSLP API (RFC 5971
//! B.1, B.5, B.6) on it directly; plug-ins get it in their callbacks.

use super::state::{MrsKey, QueryingState};
use super::{GistEngine, GistEvent};
use crate::nslp::{ApiError, Direction, GistApi, MessageHandle, NslpEvent, SendMessage};
use crate::wire::{Mri, SessionId};
use pathwise_core::rand::Rng;
use pathwise_core::time::{Duration, Instant};
use std::net::IpAddr;

impl GistApi for GistEngine {
    fn send_message(&mut self, now: Instant, msg: SendMessage) -> Result<MessageHandle, ApiError> {
        self.now = self.now.max(now);
        self.api_send(now, msg, None)
    }

    fn send_message_with_handle(
        &mut self,
        now: Instant,
        handle: MessageHandle,
        msg: SendMessage,
    ) -> Result<(), ApiError> {
        self.now = self.now.max(now);
        self.api_send(now, msg, Some(handle)).map(drop)
    }

    fn set_state_lifetime(
        &mut self,
        now: Instant,
        nslpid: u16,
        session_id: SessionId,
        mri: &Mri,
        direction: Direction,
        lifetime: Duration,
    ) {
        if direction != Direction::Downstream {
            return; // upstream state lives as long as the querying node refreshes it
        }
        let Some(idx) = self.lookup(&MrsKey::new(mri, nslpid, session_id)) else {
            return;
        };
        if let Some(d) = self.mrs[idx as usize].down.as_mut() {
            d.expires = now + lifetime;
        }
        self.schedule_mrs(idx);
    }

    fn invalidate_routing_state(
        &mut self,
        now: Instant,
        nslpid: u16,
        session_id: SessionId,
        mri: &Mri,
        direction: Direction,
        urgent: bool,
    ) {
        let Some(idx) = self.lookup(&MrsKey::new(mri, nslpid, session_id)) else {
            return;
        };
        if direction == Direction::Downstream {
            let refresh_now = self.mrs[idx as usize]
                .down
                .as_ref()
                .is_some_and(|d| d.state == QueryingState::Established);
            if refresh_now {
                if urgent {
                    self.start_refresh(now, idx);
                } else if let Some(d) = self.mrs[idx as usize].down.as_mut() {
                    d.deadline = now;
                }
            }
        } else if let Some(up) = self.take_up(idx) {
            // The upstream peer re-queries if it still needs us.
            self.release_up(up);
        }
        self.reap_mrs(idx);
    }

    fn local_address(&self, like: IpAddr) -> Option<IpAddr> {
        self.local_address_of(like)
    }

    fn is_local(&self, addr: IpAddr) -> bool {
        self.local.contains(&addr)
    }

    fn outgoing_interface(&self, destination: IpAddr) -> Option<pathwise_core::io::IfIndex> {
        self.fib.lookup(destination).map(|(_, i)| *i)
    }

    fn new_session_id(&mut self) -> SessionId {
        let mut s = [0u8; 16];
        self.rng.fill(&mut s);
        SessionId(s)
    }

    fn report(&mut self, event: NslpEvent) {
        self.events.push_back(GistEvent::Nslp(event));
    }
}
