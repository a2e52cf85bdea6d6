//! The snapshot the server's workers read, swapped atomically by updates.

use crate::snapshot::{BuildError, TopologySnapshot, Update, UpdateReport};
use arc_swap::ArcSwap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The current snapshot behind an [`ArcSwap`]: readers load it without locking or waiting;
/// writers build the next one off the hot path and store it in one atomic swap. Writers are
/// serialized by a mutex so that no update is lost between two concurrent writers.
///
/// Every swap ([`store`](Self::store) or a successful [`update`](Self::update)) bumps a swap
/// counter ([`swaps`](Self::swaps)), so that whoever derives something from the snapshot (the
/// ALTO server's maps and its update streams, issue #16) notices a new one by polling a number,
/// without a callback or a thread here. Any writer (the console, a reload, the BMP feed) goes
/// through these two methods, so none is missed.
#[derive(Debug)]
pub struct SharedSnapshot {
    current: ArcSwap<TopologySnapshot>,
    writer: Mutex<()>,
    /// Snapshots swapped in, by [`store`](Self::store) or [`update`](Self::update).
    swaps: AtomicU64,
    /// Snapshots replaced wholesale by [`store`](Self::store).
    stores: AtomicU64,
}

impl SharedSnapshot {
    /// Start with `snapshot`.
    pub fn new(snapshot: TopologySnapshot) -> Self {
        SharedSnapshot {
            current: ArcSwap::from_pointee(snapshot),
            writer: Mutex::new(()),
            swaps: AtomicU64::new(0),
            stores: AtomicU64::new(0),
        }
    }

    /// The current snapshot (a cheap guard; hold it for one datagram or one batch).
    pub fn load(&self) -> arc_swap::Guard<Arc<TopologySnapshot>> {
        self.current.load()
    }

    /// The current snapshot as an owned `Arc`.
    pub fn load_full(&self) -> Arc<TopologySnapshot> {
        self.current.load_full()
    }

    /// Replace the snapshot (a reload).
    pub fn store(&self, snapshot: TopologySnapshot) {
        let _w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        self.current.store(Arc::new(snapshot));
        self.swaps.fetch_add(1, Ordering::Release);
        self.stores.fetch_add(1, Ordering::Release);
    }

    /// How many snapshots were swapped in since [`new`](Self::new): a change of this number
    /// means [`load`](Self::load) returns a different snapshot than before (read the number
    /// first, then the snapshot).
    pub fn swaps(&self) -> u64 {
        self.swaps.load(Ordering::Acquire)
    }

    /// How many times the snapshot was replaced wholesale ([`store`](Self::store), e.g. a
    /// reload) rather than updated: a feed that keeps its own state (BMP) re-sends it when this
    /// moves.
    pub fn stores(&self) -> u64 {
        self.stores.load(Ordering::Acquire)
    }

    /// Apply `updates` to the current snapshot and swap the result in. Queries keep being
    /// answered from the old snapshot while the new one is built; on error nothing changes.
    pub fn update(&self, updates: &[Update]) -> Result<UpdateReport, BuildError> {
        let _w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let (next, report) = self.current.load().apply(updates)?;
        self.current.store(Arc::new(next));
        self.swaps.fetch_add(1, Ordering::Release);
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{SyntheticSpec, synthetic};

    #[test]
    fn every_swap_bumps_the_counter_and_a_refused_update_does_not() {
        let cfg = synthetic(&SyntheticSpec::new(4, 10, 1));
        let shared = SharedSnapshot::new(TopologySnapshot::build(&cfg).unwrap());
        assert_eq!(shared.swaps(), 0);
        shared.update(&[Update::SetTtl(30)]).unwrap();
        assert_eq!(shared.swaps(), 1);
        assert!(
            shared
                .update(&[Update::RemovePrefix("192.0.2.0/24".parse().unwrap())])
                .is_err()
        );
        assert_eq!(shared.swaps(), 1);
        shared.store(TopologySnapshot::build(&cfg).unwrap());
        assert_eq!(shared.swaps(), 2);
        assert_eq!(shared.load().generation(), 0);
    }
}
