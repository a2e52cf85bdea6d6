//! What the server's workers count: every datagram ends up answered, rejected (by Rcode and
//! reason) or dropped (by reason). Each worker owns one cache-line-aligned block of atomics and
//! adds to it once per batch; readers (the console) sum the blocks.

use crate::metrics::{Snapshot, Unit};
use pathwise_oracle::Outcome;
use pathwise_oracle::proxidor::{DropReason, Malformed, Rcode};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

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

/// Counts of one batch, kept in plain integers and flushed into [`WorkerCounters`] once.
#[derive(Clone, Debug, Default)]
pub struct BatchCounts {
    received: u64,
    bytes_in: u64,
    answered: u64,
    addresses: u64,
    placed: u64,
    rcodes: [u64; 16],
    rejected: [u64; REJECT_REASONS.len()],
    dropped: [u64; DROP_REASONS.len()],
    sent: u64,
    bytes_out: u64,
    send_errors: u64,
}

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
}

/// One worker's counters, alone on its cache lines so that workers never share one.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct WorkerCounters {
    received: AtomicU64,
    bytes_in: AtomicU64,
    answered: AtomicU64,
    addresses: AtomicU64,
    placed: AtomicU64,
    rcodes: [AtomicU64; 16],
    rejected: [AtomicU64; REJECT_REASONS.len()],
    dropped: [AtomicU64; DROP_REASONS.len()],
    sent: AtomicU64,
    bytes_out: AtomicU64,
    send_errors: AtomicU64,
    recv_errors: AtomicU64,
    batches: AtomicU64,
}

fn add(a: &AtomicU64, v: u64) {
    if v != 0 {
        a.fetch_add(v, Relaxed);
    }
}

impl WorkerCounters {
    /// Add one batch's counts and reset them.
    pub fn flush(&self, b: &mut BatchCounts) {
        add(&self.batches, 1);
        add(&self.received, b.received);
        add(&self.bytes_in, b.bytes_in);
        add(&self.answered, b.answered);
        add(&self.addresses, b.addresses);
        add(&self.placed, b.placed);
        for (a, v) in self.rcodes.iter().zip(b.rcodes) {
            add(a, v);
        }
        for (a, v) in self.rejected.iter().zip(b.rejected) {
            add(a, v);
        }
        for (a, v) in self.dropped.iter().zip(b.dropped) {
            add(a, v);
        }
        add(&self.sent, b.sent);
        add(&self.bytes_out, b.bytes_out);
        add(&self.send_errors, b.send_errors);
        *b = BatchCounts::default();
    }

    /// A receive call failed (other than a timeout).
    pub fn recv_error(&self) {
        add(&self.recv_errors, 1);
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

    /// The sums over all workers.
    pub fn report(&self) -> CounterReport {
        let sum = |f: fn(&WorkerCounters) -> &AtomicU64| -> u64 {
            self.workers.iter().map(|w| f(w).load(Relaxed)).sum()
        };
        let rcodes: BTreeMap<String, u64> = (0..16u8)
            .filter_map(|i| {
                let n: u64 = self
                    .workers
                    .iter()
                    .map(|w| w.rcodes[usize::from(i)].load(Relaxed))
                    .sum();
                (i != 0 && n > 0).then(|| (rcode_name(Rcode::from(i)), n))
            })
            .collect();
        let by = |names: &[&str], f: fn(&WorkerCounters, usize) -> u64| -> BTreeMap<String, u64> {
            names
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let v = self.workers.iter().map(|w| f(w, i)).sum();
                    ((*n).to_owned(), v)
                })
                .collect()
        };
        let rejected_by_reason = by(&REJECT_REASONS, |w, i| w.rejected[i].load(Relaxed));
        let dropped_by_reason = by(&DROP_REASONS, |w, i| w.dropped[i].load(Relaxed));
        CounterReport {
            received: sum(|w| &w.received),
            bytes_in: sum(|w| &w.bytes_in),
            answered: sum(|w| &w.answered),
            addresses: sum(|w| &w.addresses),
            placed: sum(|w| &w.placed),
            rejected: rejected_by_reason.values().sum(),
            rejected_by_rcode: rcodes,
            rejected_by_reason,
            dropped: dropped_by_reason.values().sum(),
            dropped_by_reason,
            sent: sum(|w| &w.sent),
            bytes_out: sum(|w| &w.bytes_out),
            send_errors: sum(|w| &w.send_errors),
            recv_errors: sum(|w| &w.recv_errors),
            batches: sum(|w| &w.batches),
            received_per_worker: self
                .workers
                .iter()
                .map(|w| w.received.load(Relaxed))
                .collect(),
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
