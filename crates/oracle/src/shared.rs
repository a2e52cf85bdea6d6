//! The snapshot the server's workers read, swapped atomically by updates.

use crate::snapshot::{BuildError, TopologySnapshot, Update, UpdateReport};
use arc_swap::ArcSwap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The current snapshot behind an [`ArcSwap`]: readers load it without locking or waiting;
/// writers build the next one off the hot path and store it in one atomic swap. Writers are
/// serialized by a mutex so that no update is lost between two concurrent writers.
#[derive(Debug)]
pub struct SharedSnapshot {
    current: ArcSwap<TopologySnapshot>,
    writer: Mutex<()>,
    /// Snapshots replaced wholesale by [`store`](Self::store).
    stores: AtomicU64,
}

impl SharedSnapshot {
    /// Start with `snapshot`.
    pub fn new(snapshot: TopologySnapshot) -> Self {
        SharedSnapshot {
            current: ArcSwap::from_pointee(snapshot),
            writer: Mutex::new(()),
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
        self.stores.fetch_add(1, Ordering::Release);
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
        Ok(report)
    }
}
