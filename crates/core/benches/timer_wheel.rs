//! Timer wheel against a binary heap: insert, cancel and fire 1,000,000 timers whose deadlines are
//! spread uniformly over 0–60 s, like RSVP refresh and cleanup timers (seed 001 §III.B, §V.C),
//! on wheels of 10 ms slots: a KOM-like flat layout and the default three-level one.
//!
//! Each measurement covers all 1,000,000 operations, so the reported time per iteration in
//! milliseconds reads directly as nanoseconds per operation. Setup (filling the structure for
//! cancel and fire, dropping it afterwards) is outside the timed region.
//!
//! `fire` drives the structure the way an engine's driver does: sleep until `next_deadline`, then
//! expire everything due. A precise wheel and the heap wake once per distinct deadline; a fuzzy
//! wheel wakes once per 10 ms slot and fires the slot whole.

use criterion::{BenchmarkGroup, Criterion, SamplingMode, Throughput, measurement::WallTime};
use pathwise_core::time::{Duration, Instant};
use pathwise_core::timer::{TimerHandle, TimerWheel, WheelConfig};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng, rngs::SmallRng};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;
use std::time::Instant as Clock;

const N: usize = 1_000_000;
const SPREAD_NS: u64 = 60_000_000_000;

/// Wheel layouts, all with 10 ms slots (seed 001 §III.B: slots small against the 30 s refresh).
/// `8192x2` is KOM-like: one flat array covering 82 s, so RSVP timers never cascade (level 1,
/// 7.8 days, catches the rest). `256x3` is `WheelConfig::default()`: level 0 covers 2.56 s, so
/// most of these timers cascade once from level 1 (655 s).
const LAYOUTS: [(&str, usize, usize); 2] = [("8192x2", 8192, 2), ("256x3", 256, 3)];

fn layout(slots: usize, levels: usize, fuzzy: bool) -> WheelConfig {
    WheelConfig {
        slot_width: Duration::from_millis(10),
        slots,
        levels,
        fuzzy,
    }
}

/// Every wheel variant measured: (name, config).
fn variants() -> Vec<(String, WheelConfig)> {
    let mut v = Vec::new();
    for (lname, slots, levels) in LAYOUTS {
        for (mode, fuzzy) in [("precise", false), ("fuzzy", true)] {
            v.push((format!("{mode}/{lname}"), layout(slots, levels, fuzzy)));
        }
    }
    v
}

struct Workload {
    deadlines: Vec<Instant>,
    /// The order in which the cancel benchmark cancels timers (by insertion index).
    cancel_order: Vec<usize>,
}

impl Workload {
    fn new() -> Self {
        let mut rng = SmallRng::seed_from_u64(0x5eed);
        let deadlines = (0..N)
            .map(|_| Instant::from_nanos(rng.random_range(1..SPREAD_NS)))
            .collect();
        let mut cancel_order: Vec<usize> = (0..N).collect();
        cancel_order.shuffle(&mut rng);
        Workload {
            deadlines,
            cancel_order,
        }
    }

    fn wheel(&self, cfg: WheelConfig) -> (TimerWheel<u64>, Vec<TimerHandle>) {
        let mut w = TimerWheel::new(cfg, Instant::ZERO);
        let handles = self
            .deadlines
            .iter()
            .zip(0..)
            .map(|(&d, i)| w.insert(d, i))
            .collect();
        (w, handles)
    }

    fn heap(&self) -> HeapTimers {
        let mut h = HeapTimers::default();
        for &d in &self.deadlines {
            h.insert(d);
        }
        h
    }
}

/// The baseline: a binary heap with lazy deletion (a cancelled entry stays in the heap, marked
/// dead, until it reaches the top) — what a program without a wheel usually does.
#[derive(Default)]
struct HeapTimers {
    heap: BinaryHeap<Reverse<(Instant, u32)>>,
    live: Vec<bool>,
}

impl HeapTimers {
    fn insert(&mut self, deadline: Instant) -> u32 {
        let id = self.live.len() as u32;
        self.live.push(true);
        self.heap.push(Reverse((deadline, id)));
        id
    }

    fn cancel(&mut self, id: u32) -> bool {
        std::mem::replace(&mut self.live[id as usize], false)
    }

    fn next_deadline(&mut self) -> Option<Instant> {
        while let Some(&Reverse((d, id))) = self.heap.peek() {
            if self.live[id as usize] {
                return Some(d);
            }
            self.heap.pop();
        }
        None
    }

    fn expire(&mut self, now: Instant) -> Option<(Instant, u32)> {
        let d = self.next_deadline()?;
        if d > now {
            return None;
        }
        let Reverse((d, id)) = self.heap.pop()?;
        self.live[id as usize] = false;
        Some((d, id))
    }
}

fn timed<S, R>(
    iters: u64,
    mut setup: impl FnMut() -> S,
    mut run: impl FnMut(&mut S) -> R,
) -> std::time::Duration {
    let mut total = std::time::Duration::ZERO;
    for _ in 0..iters {
        let mut state = setup();
        let start = Clock::now();
        let out = run(&mut state);
        total += start.elapsed();
        black_box(out);
        drop(state);
    }
    total
}

fn group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(10)
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(4))
        .sampling_mode(SamplingMode::Flat)
        .throughput(Throughput::Elements(N as u64));
    g
}

fn benches(c: &mut Criterion) {
    let work = Workload::new();
    for (name, cfg) in variants() {
        let (w, _) = work.wheel(cfg);
        eprintln!(
            "timer_wheel/{name}: heap_bytes with {N} timers = {} ({} per timer; node = {} bytes)",
            w.heap_bytes(),
            w.heap_bytes() / N,
            TimerWheel::<u64>::BYTES_PER_TIMER,
        );
    }

    let mut g = group(c, "timer_wheel/insert");
    for (name, cfg) in variants() {
        g.bench_function(&name, |b| {
            b.iter_custom(|iters| {
                timed(
                    iters,
                    || TimerWheel::new(cfg, Instant::ZERO),
                    |w| {
                        for (&d, i) in work.deadlines.iter().zip(0u64..) {
                            black_box(w.insert(d, i));
                        }
                    },
                )
            })
        });
    }
    g.bench_function("binary_heap", |b| {
        b.iter_custom(|iters| {
            timed(iters, HeapTimers::default, |h| {
                for &d in &work.deadlines {
                    black_box(h.insert(d));
                }
            })
        })
    });
    g.finish();

    let mut g = group(c, "timer_wheel/cancel");
    for (name, cfg) in variants() {
        g.bench_function(&name, |b| {
            b.iter_custom(|iters| {
                timed(
                    iters,
                    || work.wheel(cfg),
                    |(w, handles)| {
                        for &i in &work.cancel_order {
                            black_box(w.cancel(handles[i]));
                        }
                        // Cancelling the earliest timer recomputes `next_deadline`; an engine
                        // reads it after every input.
                        black_box(w.next_deadline())
                    },
                )
            })
        });
    }
    g.bench_function("binary_heap", |b| {
        b.iter_custom(|iters| {
            timed(
                iters,
                || work.heap(),
                |h| {
                    for &i in &work.cancel_order {
                        black_box(h.cancel(i as u32));
                    }
                    // Lazy deletion defers the work: the dead entries are popped here.
                    black_box(h.next_deadline())
                },
            )
        })
    });
    g.finish();

    let mut g = group(c, "timer_wheel/fire");
    for (name, cfg) in variants() {
        g.bench_function(&name, |b| {
            b.iter_custom(|iters| {
                timed(
                    iters,
                    || work.wheel(cfg).0,
                    |w| {
                        let mut fired = 0u64;
                        while let Some(now) = w.next_deadline() {
                            while let Some((_, v)) = w.expire(now) {
                                fired += v & 1;
                            }
                        }
                        fired
                    },
                )
            })
        });
    }
    g.bench_function("binary_heap", |b| {
        b.iter_custom(|iters| {
            timed(
                iters,
                || work.heap(),
                |h| {
                    let mut fired = 0u64;
                    while let Some(now) = h.next_deadline() {
                        while let Some((_, id)) = h.expire(now) {
                            fired += u64::from(id & 1);
                        }
                    }
                    fired
                },
            )
        })
    });
    g.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    benches(&mut c);
    c.final_summary();
}
