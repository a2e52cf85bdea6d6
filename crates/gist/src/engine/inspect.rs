//! Looking into the engine: state sizes and memory, one session's routing state, the MAs.

use super::state::{
    Ma, MaState, MrsKey, Peer, PeerId, QueryingState, RespondingState, RoutingState,
};
use super::{GistEngine, StateStats};
use pathwise_core::time::Instant;
use std::net::IpAddr;

impl GistEngine {
    /// How much state the engine holds.
    pub fn state_stats(&self) -> StateStats {
        let mut s = StateStats {
            routing_states: self.mrs.len(),
            peers: self.peers.len(),
            mas: self.mas.len(),
            timers: self.timers.len(),
            ..StateStats::default()
        };
        let mut heap = 0;
        for (_, m) in &self.mrs {
            heap += m.heap_bytes();
            if m.down
                .as_ref()
                .is_some_and(|d| d.state != QueryingState::AwaitingResponse)
            {
                s.downstream_established += 1;
            }
            match m.up.as_ref().map(|u| u.state) {
                Some(RespondingState::Established) => s.upstream_established += 1,
                Some(RespondingState::AwaitingConfirm) => s.awaiting_confirm += 1,
                None => {}
            }
        }
        // Slab indices and a control byte per bucket (buckets: capacity × 8/7).
        let index = self.mrs_index.capacity() * 8 / 7 * (size_of::<u32>() + 1);
        let peers = self.peers.capacity() * size_of::<SlabEntry<Peer>>()
            + self.peer_index.capacity() * (size_of::<(IpAddr, PeerId)>() + 1)
            + self
                .peers
                .iter()
                .map(|(_, p)| p.identity.capacity())
                .sum::<usize>()
            + self.recent_handles.capacity() * (size_of::<(IpAddr, Instant)>() + 1)
            + self.responder_cookies.capacity() * (size_of::<(u32, [u8; 16])>() + 1);
        let mas = self.mas.capacity() * size_of::<SlabEntry<Ma>>()
            + self
                .mas
                .iter()
                .map(|(_, m)| m.rx_buf.capacity() + m.waiting.capacity() * 4)
                .sum::<usize>();
        s.bytes = index
            + self.mrs.capacity() * size_of::<SlabEntry<RoutingState>>()
            + heap
            + peers
            + mas
            + self.timers.heap_bytes()
            + self.spare.heap_bytes()
            + self.nslp_spare.heap_bytes();
        s
    }

    /// The state of one session's routing state, for inspection.
    pub fn routing_state(&self, key: &MrsKey) -> Option<RoutingStateView> {
        let s = &self.mrs[self.lookup(key)? as usize];
        Some(RoutingStateView {
            downstream: s
                .down
                .as_ref()
                .map(|d| (d.state, d.peer.and_then(|p| self.peer_addr(p)))),
            upstream: s.up.as_ref().map(|u| (u.state, self.peer_addr(u.peer))),
            downstream_ma: s
                .down
                .as_ref()
                .and_then(|d| d.ma)
                .and_then(|m| self.mas.get(m.index()).map(|x| x.peer)),
            upstream_ma: s
                .up
                .as_ref()
                .and_then(|u| u.ma)
                .and_then(|m| self.mas.get(m.index()).map(|x| x.peer)),
        })
    }

    /// Keys of all routing state.
    pub fn routing_keys(&self) -> impl Iterator<Item = MrsKey> + '_ {
        self.mrs.iter().map(|(_, m)| m.key.key())
    }

    /// Messaging associations: peer address, state, and how many routing-state halves use it.
    pub fn messaging_associations(&self) -> impl Iterator<Item = (IpAddr, MaState, u32)> + '_ {
        self.mas.iter().map(|(_, m)| (m.peer, m.state, m.users))
    }

    /// Messaging associations with their stack: peer, TCP or TLS, state, users.
    pub fn messaging_associations_by_transport(
        &self,
    ) -> impl Iterator<Item = (IpAddr, super::MaTransport, MaState, u32)> + '_ {
        self.mas
            .iter()
            .map(|(_, m)| (m.peer, m.transport, m.state, m.users))
    }

    /// Whether an association to `peer` over `transport` exists (connecting or connected).
    pub fn has_association(&self, peer: IpAddr, transport: super::MaTransport) -> bool {
        self.ma_index.contains_key(&(peer, transport))
    }
}

/// Same shape as `slab`'s private entry type, to size slab slots.
#[allow(dead_code)]
enum SlabEntry<T> {
    Vacant(usize),
    Occupied(T),
}

/// One routing state as [`GistEngine::routing_state`] shows it: each half's state and peer
/// address, and the MA each half uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoutingStateView {
    /// Querying-node half: state and peer (once a Response came).
    pub downstream: Option<(QueryingState, Option<IpAddr>)>,
    /// Responding-node half: state and peer.
    pub upstream: Option<(RespondingState, Option<IpAddr>)>,
    /// The MA the downstream half uses.
    pub downstream_ma: Option<IpAddr>,
    /// The MA the upstream half uses.
    pub upstream_ma: Option<IpAddr>,
}
