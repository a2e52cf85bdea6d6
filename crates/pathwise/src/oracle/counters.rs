//! What the server's workers count: every datagram ends up answered, rejected (by Rcode and
//! reason) or dropped (by reason). Each worker owns one cache-line-aligned block of atomics and
//! adds to it once per batch, under a sequence lock; readers (the console) sum the blocks and
//! never see half a batch.

use crate::metrics::{Snapshot, Unit};
use pathwise_oracle::Outcome;
use pathwise_oracle::proxidor::{DropReason, Malformed, Rcode};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{
    AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
    fence,
};

/// Why a query was rejected, as counted (one slot per [`Malformed`] kind).
pub const REJECT_REASONS: [&str; 8] = [
    "version",
    "flags",
    "opcode",
    "servcode",
    "service_category",
    "tlv_type",
    "malformed",
    "too_many_addresses",
];

/// Why a datagram got no reply, as counted.
pub const DROP_REASONS: [&str; 5] = [
    "too_short",
    "not_a_query",
    "oversize",
    "bad_peer",
    "source_port_zero",
];

/// A drop the server decides before calling `answer()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerDrop {
    /// Larger than the receive buffer (the kernel truncated it).
    Oversize,
    /// The source address is not an IP address.
    BadPeer,
    /// Sent from UDP port 0, which no reply can go to (RFC 768 leaves 0 for "no port"; the
    /// kernel refuses to send to it): dropped here rather than counted as answered.
    SourcePortZero,
}

fn reject_slot(m: &Malformed) -> usize {
    match m {
        Malformed::Version(_) => 0,
        Malformed::Flags(_) => 1,
        Malformed::Opcode(_) => 2,
        Malformed::Servcode(_) => 3,
        Malformed::ServiceCategory(_) => 4,
        Malformed::TlvType(_) => 5,
        Malformed::Wire(_) => 6,
        Malformed::TooManyAddresses { .. } => 7,
    }
}

fn drop_slot(d: &DropReason) -> usize {
    match d {
        DropReason::TooShort(_) => 0,
        DropReason::NotAQuery => 1,
    }
}

/// Everything a worker counts, one shape for both sides: plain integers while a batch is
/// handled ([`BatchCounts`]) and atomics in the worker's shared block ([`WorkerCounters`]).
#[derive(Clone, Debug, Default)]
pub struct Counts<T> {
    received: T,
    bytes_in: T,
    answered: T,
    addresses: T,
    placed: T,
    rcodes: [T; 16],
    rejected: [T; REJECT_REASONS.len()],
    dropped: [T; DROP_REASONS.len()],
    sent: T,
    bytes_out: T,
    send_errors: T,
}

impl<T> Counts<T> {
    /// Every count, in one fixed order (the same in [`Self::cells_mut`]).
    fn cells(&self) -> impl Iterator<Item = &T> {
        [
            &self.received,
            &self.bytes_in,
            &self.answered,
            &self.addresses,
            &self.placed,
            &self.sent,
            &self.bytes_out,
            &self.send_errors,
        ]
        .into_iter()
        .chain(&self.rcodes)
        .chain(&self.rejected)
        .chain(&self.dropped)
    }

    fn cells_mut(&mut self) -> impl Iterator<Item = &mut T> {
        [
            &mut self.received,
            &mut self.bytes_in,
            &mut self.answered,
            &mut self.addresses,
            &mut self.placed,
            &mut self.sent,
            &mut self.bytes_out,
            &mut self.send_errors,
        ]
        .into_iter()
        .chain(&mut self.rcodes)
        .chain(&mut self.rejected)
        .chain(&mut self.dropped)
    }
}

/// Counts of one batch, kept in plain integers and flushed into [`WorkerCounters`] once.
pub type BatchCounts = Counts<u64>;

impl BatchCounts {
    /// One datagram of `len` bytes came in.
    pub fn received(&mut self, len: usize) {
        self.received += 1;
        self.bytes_in += len as u64;
    }

    /// What `answer()` did with it.
    pub fn outcome(&mut self, o: &Outcome) {
        match o {
            Outcome::Answered { addresses, placed } => {
                self.answered += 1;
                self.addresses += *addresses as u64;
                self.placed += *placed as u64;
            }
            Outcome::Rejected { rcode, reason } => {
                self.rcodes[usize::from(u8::from(*rcode) & 0x0f)] += 1;
                self.rejected[reject_slot(reason)] += 1;
            }
            Outcome::Dropped(d) => self.dropped[drop_slot(d)] += 1,
        }
    }

    /// A datagram answered without the oracle (the echo server of the benchmarks).
    pub fn echoed(&mut self) {
        self.answered += 1;
    }

    /// A datagram the server dropped before answering.
    pub fn server_drop(&mut self, d: ServerDrop) {
        let slot = match d {
            ServerDrop::Oversize => 2,
            ServerDrop::BadPeer => 3,
            ServerDrop::SourcePortZero => 4,
        };
        self.dropped[slot] += 1;
    }

    /// A reply of `len` bytes went out.
    pub fn sent(&mut self, len: usize) {
        self.sent += 1;
        self.bytes_out += len as u64;
    }

    /// A reply could not be sent.
    pub fn send_error(&mut self) {
        self.send_errors += 1;
    }

    /// Add `o`'s counts to these.
    fn add(&mut self, o: &BatchCounts) {
        for (a, v) in self.cells_mut().zip(o.cells()) {
            *a += v;
        }
    }
}

/// One worker's counters, alone on its cache lines so that workers never share one.
///
/// A batch is added under a sequence lock (`seq` odd while the worker adds), so a reader never
/// sees half a batch: a report in which a datagram is `received` also holds what became of it.
/// The worker is the only writer of its block; readers retry while it writes, which costs them
/// at most the few hundred nanoseconds a flush takes.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct WorkerCounters {
    seq: AtomicU64,
    counts: Counts<AtomicU64>,
    recv_errors: AtomicU64,
    batches: AtomicU64,
}

fn add(a: &AtomicU64, v: u64) {
    if v != 0 {
        a.fetch_add(v, Relaxed);
    }
}

/// What one worker has counted so far, read whole.
#[derive(Clone, Debug, Default)]
struct WorkerTotals {
    counts: BatchCounts,
    batches: u64,
}

impl WorkerCounters {
    /// Add one batch's counts and reset them.
    pub fn flush(&self, b: &mut BatchCounts) {
        // The writer side of a sequence lock over atomics: odd while adding; the Release fence
        // keeps the adds after the odd mark, the Release store keeps them before the even one.
        let s = self.seq.load(Relaxed);
        self.seq.store(s.wrapping_add(1), Relaxed);
        fence(Release);
        add(&self.batches, 1);
        for (a, v) in self.counts.cells().zip(b.cells()) {
            add(a, *v);
        }
        self.seq.store(s.wrapping_add(2), Release);
        *b = BatchCounts::default();
    }

    /// A receive call failed (other than a timeout). Not part of any batch.
    pub fn recv_error(&self) {
        add(&self.recv_errors, 1);
    }

    /// Everything counted, never half a batch (see the type's doc).
    fn totals(&self) -> WorkerTotals {
        loop {
            let before = self.seq.load(Acquire);
            if before % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let mut t = WorkerTotals {
                batches: self.batches.load(Relaxed),
                ..WorkerTotals::default()
            };
            for (v, a) in t.counts.cells_mut().zip(self.counts.cells()) {
                *v = a.load(Relaxed);
            }
            fence(Acquire);
            if self.seq.load(Relaxed) == before {
                return t;
            }
        }
    }
}

/// The counters of all workers of one server.
#[derive(Debug)]
pub struct Counters {
    workers: Vec<WorkerCounters>,
}

impl Counters {
    /// Counters for `n` workers.
    pub fn new(n: usize) -> Self {
        Counters {
            workers: (0..n).map(|_| WorkerCounters::default()).collect(),
        }
    }

    /// Number of workers counted.
    pub fn worker_count(&self) -> usize {
        self.workers.len()
    }

    /// Worker `i`'s block.
    pub fn worker(&self, i: usize) -> Option<&WorkerCounters> {
        self.workers.get(i)
    }

    /// The sums over all workers; each worker's part is whole batches only.
    pub fn report(&self) -> CounterReport {
        let per_worker: Vec<WorkerTotals> = self.workers.iter().map(|w| w.totals()).collect();
        let mut total = BatchCounts::default();
        for w in &per_worker {
            total.add(&w.counts);
        }
        let rcodes: BTreeMap<String, u64> = (0..16u8)
            .filter(|&i| i != 0 && total.rcodes[usize::from(i)] > 0)
            .map(|i| (rcode_name(Rcode::from(i)), total.rcodes[usize::from(i)]))
            .collect();
        let by = |names: &[&str], counts: &[u64]| -> BTreeMap<String, u64> {
            names
                .iter()
                .zip(counts)
                .map(|(n, v)| ((*n).to_owned(), *v))
                .collect()
        };
        let rejected_by_reason = by(&REJECT_REASONS, &total.rejected);
        let dropped_by_reason = by(&DROP_REASONS, &total.dropped);
        CounterReport {
            received: total.received,
            bytes_in: total.bytes_in,
            answered: total.answered,
            addresses: total.addresses,
            placed: total.placed,
            rejected: total.rejected.iter().sum(),
            rejected_by_rcode: rcodes,
            rejected_by_reason,
            dropped: total.dropped.iter().sum(),
            dropped_by_reason,
            sent: total.sent,
            bytes_out: total.bytes_out,
            send_errors: total.send_errors,
            recv_errors: self
                .workers
                .iter()
                .map(|w| w.recv_errors.load(Relaxed))
                .sum(),
            batches: per_worker.iter().map(|w| w.batches).sum(),
            received_per_worker: per_worker.iter().map(|w| w.counts.received).collect(),
            management_refused: 0,
            alto: None,
        }
    }
}

/// The Rcode's name as counters and messages print it.
pub fn rcode_name(r: Rcode) -> String {
    match r {
        Rcode::NoError => "no_error".into(),
        Rcode::FormatError => "format_error".into(),
        Rcode::ServerFailure => "server_failure".into(),
        Rcode::NotImplemented => "not_implemented".into(),
        Rcode::Refused => "refused".into(),
        Rcode::TooManyAddresses => "too_many_addresses".into(),
        Rcode::BadVersion => "bad_version".into(),
        Rcode::Unknown(n) => format!("rcode_{n}"),
    }
}

/// Counter totals (console `show counters`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CounterReport {
    /// Datagrams received.
    pub received: u64,
    /// Bytes received.
    pub bytes_in: u64,
    /// Queries answered with a ranking.
    pub answered: u64,
    /// Candidate addresses ranked.
    pub addresses: u64,
    /// Of those, addresses the oracle could place.
    pub placed: u64,
    /// Queries answered with an error Rcode.
    pub rejected: u64,
    /// Rejections by Rcode.
    pub rejected_by_rcode: BTreeMap<String, u64>,
    /// Rejections by reason.
    pub rejected_by_reason: BTreeMap<String, u64>,
    /// Datagrams not answered at all.
    pub dropped: u64,
    /// Drops by reason.
    pub dropped_by_reason: BTreeMap<String, u64>,
    /// Replies sent.
    pub sent: u64,
    /// Bytes sent.
    pub bytes_out: u64,
    /// Replies the kernel refused.
    pub send_errors: u64,
    /// Failed receive calls.
    pub recv_errors: u64,
    /// Receive batches (`recvmmsg` calls that returned datagrams).
    pub batches: u64,
    /// Datagrams per worker (how SO_REUSEPORT spread them).
    pub received_per_worker: Vec<u64>,
    /// Connections to the management socket refused (their user was not allowed); set by the
    /// server, which owns that socket.
    #[serde(default)]
    pub management_refused: u64,
    /// The ALTO server's counters, when it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alto: Option<super::alto::counters::AltoReport>,
}

impl CounterReport {
    /// The report as text (console `show counters`).
    pub fn render(&self) -> String {
        let mut s = String::new();
        let per_batch = if self.batches > 0 {
            self.received as f64 / self.batches as f64
        } else {
            0.0
        };
        let _ = writeln!(
            s,
            "received {} datagrams ({} B) in {} batches ({per_batch:.1} per batch); per worker {:?}",
            self.received, self.bytes_in, self.batches, self.received_per_worker
        );
        let _ = writeln!(
            s,
            "answered {} ({} addresses, {} placed)",
            self.answered, self.addresses, self.placed
        );
        let _ = writeln!(s, "rejected {}", self.rejected);
        for (k, v) in self.rejected_by_rcode.iter().filter(|(_, v)| **v > 0) {
            let _ = writeln!(s, "  rcode {k:<22} {v}");
        }
        for (k, v) in self.rejected_by_reason.iter().filter(|(_, v)| **v > 0) {
            let _ = writeln!(s, "  reason {k:<21} {v}");
        }
        let _ = writeln!(s, "dropped {}", self.dropped);
        for (k, v) in self.dropped_by_reason.iter().filter(|(_, v)| **v > 0) {
            let _ = writeln!(s, "  reason {k:<21} {v}");
        }
        let _ = writeln!(
            s,
            "sent {} replies ({} B); send errors {}, receive errors {}",
            self.sent, self.bytes_out, self.send_errors, self.recv_errors
        );
        let _ = writeln!(
            s,
            "management connections refused {}",
            self.management_refused
        );
        if let Some(a) = &self.alto {
            s.push_str(&a.render());
        }
        s
    }

    /// The counters as metric families (`pathwise_oracle_*`, see [`crate::metrics`]).
    pub fn snapshot(&self) -> Snapshot {
        let mut m = Snapshot::new("oracle");
        let by_direction = |received: u64, sent: u64| {
            [
                (["received".to_string()], received),
                (["sent".to_string()], sent),
            ]
        };
        m.counters(
            "datagrams",
            "Datagrams received (queries) and sent (replies).",
            ["direction"],
            by_direction(self.received, self.sent),
        )
        .counters_in(
            "datagram",
            Unit::Bytes,
            "Bytes of the datagrams received and sent.",
            ["direction"],
            by_direction(self.bytes_in, self.bytes_out),
        )
        .counter(
            "answered",
            "Queries answered with a ranking.",
            self.answered,
        )
        .counter(
            "candidates_ranked",
            "Candidate addresses ranked.",
            self.addresses,
        )
        .counter(
            "candidates_placed",
            "Candidate addresses ranked that the oracle could place in its network.",
            self.placed,
        )
        .counters(
            "rejections",
            "Queries answered with an error Rcode, by reason.",
            ["reason"],
            self.rejected_by_reason
                .iter()
                .map(|(r, n)| ([r.clone()], *n)),
        )
        .counters(
            "drops",
            "Datagrams not answered at all, by reason.",
            ["reason"],
            self.dropped_by_reason
                .iter()
                .map(|(r, n)| ([r.clone()], *n)),
        )
        .counter(
            "send_errors",
            "Replies the kernel refused.",
            self.send_errors,
        )
        .counter("receive_errors", "Failed receive calls.", self.recv_errors)
        .management_refused(self.management_refused)
        .counter(
            "receive_batches",
            "Receive batches (recvmmsg calls that returned datagrams).",
            self.batches,
        )
        .counters(
            "worker_datagrams",
            "Datagrams received by each worker (how SO_REUSEPORT spread them).",
            ["worker"],
            self.received_per_worker
                .iter()
                .enumerate()
                .map(|(i, n)| ([i.to_string()], *n)),
        )
        .gauge("workers", "Worker threads.", self.received_per_worker.len());
        if let Some(a) = &self.alto {
            a.add_to(&mut m);
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathwise_oracle::proxidor::Malformed;

    /// A report taken while the worker flushes holds whole batches only: every datagram
    /// received is also counted where it ended. (Without the sequence lock, a reader that
    /// summed the atomics one by one saw `received` ahead of `dropped`; the oracle's metrics
    /// tests tripped on exactly that.)
    #[test]
    fn a_report_never_holds_half_a_batch() {
        let counters = Counters::new(1);
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let mut b = BatchCounts::default();
                for _ in 0..200_000 {
                    b.received(40);
                    b.server_drop(ServerDrop::SourcePortZero);
                    counters.worker(0).unwrap().flush(&mut b);
                }
                done.store(true, Relaxed);
            });
            let mut reports = 0u64;
            while !done.load(Relaxed) || reports == 0 {
                let c = counters.report();
                assert_eq!(c.received, c.dropped, "{c:?}");
                assert_eq!(c.bytes_in, 40 * c.received, "{c:?}");
                assert_eq!(c.batches, c.received, "{c:?}");
                reports += 1;
            }
        });
        assert_eq!(counters.report().received, 200_000);
    }

    #[test]
    fn every_count_is_in_one_labelled_family() {
        let counters = Counters::new(2);
        let mut b = BatchCounts::default();
        for len in [40, 2, 3000, 44] {
            b.received(len);
        }
        b.outcome(&Outcome::Answered {
            addresses: 10,
            placed: 7,
        });
        b.outcome(&Outcome::Rejected {
            rcode: Rcode::BadVersion,
            reason: Malformed::Version(1),
        });
        b.outcome(&Outcome::Dropped(DropReason::NotAQuery));
        b.server_drop(ServerDrop::Oversize);
        b.sent(30);
        b.sent(12);
        counters.worker(1).unwrap().flush(&mut b);
        let snap = counters.report().snapshot();
        crate::metrics::tests::assert_well_formed(&snap);
        let text = snap.openmetrics();
        for sample in [
            "pathwise_oracle_datagrams_total{direction=\"received\"} 4\n",
            "pathwise_oracle_datagrams_total{direction=\"sent\"} 2\n",
            "pathwise_oracle_datagram_bytes_total{direction=\"received\"} 3086\n",
            "pathwise_oracle_datagram_bytes_total{direction=\"sent\"} 42\n",
            "pathwise_oracle_answered_total 1\n",
            "pathwise_oracle_candidates_ranked_total 10\n",
            "pathwise_oracle_candidates_placed_total 7\n",
            "pathwise_oracle_rejections_total{reason=\"version\"} 1\n",
            "pathwise_oracle_drops_total{reason=\"not_a_query\"} 1\n",
            "pathwise_oracle_drops_total{reason=\"oversize\"} 1\n",
            "pathwise_oracle_drops_total{reason=\"too_short\"} 0\n",
            "pathwise_oracle_worker_datagrams_total{worker=\"0\"} 0\n",
            "pathwise_oracle_worker_datagrams_total{worker=\"1\"} 4\n",
            "pathwise_oracle_workers 2\n",
        ] {
            assert!(text.contains(sample), "{sample} in\n{text}");
        }
        // Every reason from zero, each family once.
        let drops = snap.family("drops").unwrap();
        assert_eq!(drops.samples.len(), DROP_REASONS.len());
        assert!(
            drops
                .samples
                .iter()
                .all(|(l, _)| l.len() == 1 && l[0].0 == "reason")
        );
        assert_eq!(
            snap.family("rejections").unwrap().samples.len(),
            REJECT_REASONS.len()
        );
        assert_eq!(
            snap.family("datagram").unwrap().unit,
            Some(crate::metrics::Unit::Bytes)
        );
    }
}
