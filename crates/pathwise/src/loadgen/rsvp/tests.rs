//! The generator's sender and receiver hosts back to back over virtual time.

use super::*;
use pathwise_core::io::IfIndex;

const S: [u8; 4] = [10, 0, 0, 1];
const D: [u8; 4] = [10, 0, 0, 2];

fn bucket() -> TokenBucket {
    TokenBucket {
        rate: 125.0,
        bucket: 1500.0,
        peak: f32::INFINITY,
        min_policed: 64,
        max_packet: 1500,
    }
}

fn config(n: u64, max: Duration, style: StyleKind) -> (LoadConfig, LoadConfig) {
    let base = LoadConfig {
        seed: 7,
        sender: None,
        receiver: None,
        refresh: Duration::from_secs(1),
        keep_multiplier: 3,
        max_rate: None,
        teardown_rate: None,
        wheel: WheelConfig::default(),
    };
    let tx = LoadConfig {
        sender: Some(SenderConfig {
            src: S.into(),
            dests: vec![D.into()],
            flows: n,
            max_interval: max,
            ramp_interval: max,
            protocol: 17,
            dst_port_base: 1024,
            src_port_base: 1024,
            tspec: bucket(),
        }),
        ..base.clone()
    };
    let rx = LoadConfig {
        seed: 8,
        receiver: Some(ReceiverConfig {
            style,
            flowspec: FlowSpec::ControlledLoad(bucket()),
            confirm: false,
        }),
        ..base
    };
    (tx, rx)
}

/// Two hosts joined by a lossless wire; `cut_*` drops what one side sends.
struct Pair {
    tx: RsvpLoad,
    rx: RsvpLoad,
    now: Instant,
    buf: Transmit,
    cut_tx: bool,
    cut_rx: bool,
    sent_tx: u64,
}

impl Pair {
    fn new(tx: LoadConfig, rx: LoadConfig) -> Pair {
        Pair {
            tx: RsvpLoad::new(tx, Instant::ZERO).expect("sender"),
            rx: RsvpLoad::new(rx, Instant::ZERO).expect("receiver"),
            now: Instant::ZERO,
            buf: Transmit {
                src: None,
                dst: D.into(),
                ifindex: None,
                transport: Transport::Raw(IPPROTO_RSVP),
                router_alert: None,
                ttl: 0,
                payload: Vec::new(),
            },
            cut_tx: false,
            cut_rx: false,
            sent_tx: 0,
        }
    }

    /// Deliver everything queued, both ways, until quiet.
    fn exchange(&mut self) {
        loop {
            let mut moved = false;
            while self.tx.poll_transmit(self.now, &mut self.buf) {
                moved = true;
                self.sent_tx += 1;
                assert_eq!(self.buf.dst, IpAddr::from(D));
                assert_eq!(self.buf.router_alert, Some(0), "Path and PathTear carry RA");
                if !self.cut_tx {
                    let d = self.buf.received_on(IfIndex(1), S.into());
                    self.rx.handle_datagram(self.now, d);
                }
            }
            while self.rx.poll_transmit(self.now, &mut self.buf) {
                moved = true;
                assert_eq!(
                    self.buf.dst,
                    IpAddr::from(S),
                    "Resv goes to the previous hop"
                );
                assert_eq!(self.buf.router_alert, None);
                if !self.cut_rx {
                    let d = self.buf.received_on(IfIndex(1), D.into());
                    self.tx.handle_datagram(self.now, d);
                }
            }
            if !moved {
                return;
            }
        }
    }

    /// Run to `until`, waking at each deadline (at most every `step`), calling `each` after
    /// every exchange.
    fn run(&mut self, until: Instant, step: Duration, mut each: impl FnMut(&Pair)) {
        while self.now < until {
            let next = [self.tx.poll_timeout(), self.rx.poll_timeout()]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(until)
                .min(self.now + step)
                .min(until)
                .max(self.now + Duration::from_micros(1));
            self.now = next;
            self.tx.handle_timeout(self.now);
            self.rx.handle_timeout(self.now);
            self.exchange();
            each(self);
        }
    }
}

#[test]
fn churn_keeps_flows_in_the_band_and_every_one_is_reserved() {
    let n = 500;
    let max = Duration::from_millis(4);
    let (mut tx, mut rx) = config(n, max, StyleKind::Ff);
    tx.refresh = Duration::from_millis(100);
    rx.refresh = Duration::from_millis(100);
    let mut p = Pair::new(tx, rx);
    let mut lo = u64::MAX;
    p.run(Instant::from_secs(8), Duration::from_millis(50), |p| {
        if p.tx.ramped_up() {
            lo = lo.min(p.tx.sender_flows());
            assert!(p.tx.sender_flows() <= n);
            // Lossless and drained: the receiver holds exactly the sender's flows, and each
            // is reserved.
            assert_eq!(p.rx.receiver_flows(), p.tx.sender_flows());
            assert_eq!(p.tx.reserved_flows(), p.tx.sender_flows());
        }
    });
    assert!(p.tx.ramped_up());
    assert!(lo >= n - 10, "count fell to {lo}");
    let st = p.tx.stats().clone();
    assert_eq!(st.reservations_established, st.flows_created);
    assert!(st.flows_deleted > 1000, "{st:?}");
    assert_eq!(st.path_tears_sent, st.flows_deleted);
    assert_eq!(p.rx.stats().receiver_flows_torn, st.flows_deleted);
    assert!(st.timeouts.is_empty() && st.drops.is_empty(), "{st:?}");
    assert!(p.rx.stats().drops.is_empty(), "{:?}", p.rx.stats());
    // Every flow is refreshed about once per R (jitter 0.5–1.5 R, RFC 2205 §3.7), its first
    // refresh about R after its birth: 500 flows living 1 s with R = 0.1 s make some 4,500
    // refreshes a second, over the ~7 s after ramp-up about 31,500.
    assert!(
        (25_000..38_000).contains(&st.path_refreshes_sent),
        "{} refreshes",
        st.path_refreshes_sent
    );
    let rs = p.rx.stats();
    assert_eq!(rs.path_refreshes_received, st.path_refreshes_sent);
    assert!((25_000..38_000).contains(&rs.resv_refreshes_sent), "{rs:?}");
    // Seed 001 §V.A: average lifetime n · max / 2 = 1 s.
    let mean = st.lifetime_sum_ms as f64 / st.flows_deleted as f64;
    assert!((mean - 1000.0).abs() < 100.0, "mean lifetime {mean} ms");
}

#[test]
fn stop_tears_everything_down() {
    let (tx, rx) = config(200, Duration::from_millis(2), StyleKind::Ff);
    let mut p = Pair::new(tx, rx);
    p.run(Instant::from_secs(2), Duration::from_millis(20), |_| {});
    let live = p.tx.sender_flows();
    assert!(live >= 190);
    let deleted = p.tx.stats().flows_deleted;
    p.tx.stop(p.now);
    p.exchange();
    assert!(p.tx.is_idle());
    assert_eq!(p.tx.sender_flows(), 0);
    assert_eq!(p.tx.reserved_flows(), 0);
    assert_eq!(p.tx.stats().flows_torn_down, live);
    assert_eq!(p.tx.stats().path_tears_sent, deleted + live);
    assert_eq!(p.rx.receiver_flows(), 0);
    // Nothing more happens: no churn, no timers.
    assert_eq!(p.tx.poll_timeout(), None);
    assert_eq!(p.rx.poll_timeout(), None);
}

#[test]
fn receiver_stop_sends_resv_tears() {
    let (tx, rx) = config(50, Duration::from_millis(2), StyleKind::Ff);
    let mut p = Pair::new(tx, rx);
    p.run(Instant::from_secs(1), Duration::from_millis(20), |_| {});
    let held = p.rx.receiver_flows();
    assert!(held >= 40);
    p.rx.stop(p.now);
    let mut tears = 0;
    while p.rx.poll_transmit(p.now, &mut p.buf) {
        let (_, m) = Message::parse(&p.buf.payload).expect("parses");
        let Message::ResvTear(t) = m else {
            panic!("not a ResvTear: {m:?}")
        };
        assert_eq!(t.style.kind, StyleKind::Ff);
        assert_eq!(t.flows[0].filters[0].src(), IpAddr::from(S));
        tears += 1;
    }
    assert_eq!(tears, held);
    assert_eq!(p.rx.stats().resv_tears_sent, held);
    assert_eq!(p.rx.receiver_flows(), 0);
    assert!(p.rx.is_idle());
}

#[test]
fn wildcard_filter_reserves_every_sender_of_the_session() {
    let (tx, rx) = config(100, Duration::from_millis(2), StyleKind::Wf);
    let mut p = Pair::new(tx, rx);
    p.run(Instant::from_secs(2), Duration::from_millis(20), |p| {
        if p.tx.ramped_up() {
            assert_eq!(p.tx.reserved_flows(), p.tx.sender_flows());
        }
    });
    assert!(p.tx.stats().reservations_established >= 100);
}

#[test]
fn lost_resvs_time_out_setups_and_lost_paths_time_out_receivers() {
    // Flows live 30 · 5 s / 2 = 75 s on average: far longer than L.
    let (mut tx, rx) = config(30, Duration::from_secs(5), StyleKind::Ff);
    if let Some(s) = tx.sender.as_mut() {
        s.ramp_interval = Duration::from_millis(2);
    }
    let mut p = Pair::new(tx, rx);
    p.cut_rx = true;
    // L = 3.5 · 1.5 · 1 s = 5.25 s; every flow is older than that by 8 s.
    p.run(Instant::from_secs(8), Duration::from_millis(50), |_| {});
    let st = p.tx.stats();
    assert_eq!(st.reservations_established, 0);
    assert!(
        st.timeouts.get("setup").copied().unwrap_or(0) >= 25,
        "{st:?}"
    );
    assert_eq!(p.tx.reserved_flows(), 0);
    // Now the Paths stop: the receiver's state times out within L plus a refresh period.
    p.cut_tx = true;
    p.run(Instant::from_secs(16), Duration::from_millis(50), |_| {});
    assert_eq!(p.rx.receiver_flows(), 0);
    assert!(p.rx.stats().timeouts.get("path").copied().unwrap_or(0) >= 25);
}

#[test]
fn rate_limit_holds_messages_back() {
    let (mut tx, rx) = config(2000, Duration::from_micros(10), StyleKind::Ff);
    tx.max_rate = Some(1000);
    let mut p = Pair::new(tx, rx);
    p.run(Instant::from_secs(1), Duration::from_millis(5), |_| {});
    // 2,000 flows ramp up within ~10 ms, but 1,000 messages per second (plus a burst of 10)
    // is all that leaves.
    assert!(p.sent_tx <= 1010, "{} sent", p.sent_tx);
    assert!(p.sent_tx >= 950, "{} sent", p.sent_tx);
}

#[test]
fn the_teardown_keeps_to_its_rate() {
    let (mut tx, rx) = config(2000, Duration::from_micros(10), StyleKind::Ff);
    tx.teardown_rate = Some(1000);
    let mut p = Pair::new(tx, rx);
    p.run(Instant::from_secs(1), Duration::from_millis(5), |_| {});
    let live = p.tx.sender_flows();
    assert!(live >= 1990, "{live}");
    let before = p.tx.stats().path_tears_sent;
    p.tx.stop(p.now);
    let start = p.now;
    // Half a second in: 500 tears plus a burst of 10, not 2,000.
    p.run(
        start + Duration::from_millis(500),
        Duration::from_millis(5),
        |_| {},
    );
    let tears = p.tx.stats().path_tears_sent - before;
    assert!((490..=511).contains(&tears), "{tears} tears in 0.5 s");
    assert!(!p.tx.is_idle());
    // All of them within about two seconds, and nothing is left on either side.
    p.run(
        start + Duration::from_millis(2100),
        Duration::from_millis(5),
        |_| {},
    );
    assert!(p.tx.is_idle());
    assert_eq!(p.tx.stats().path_tears_sent - before, live);
    assert_eq!(p.rx.receiver_flows(), 0);
}

#[test]
fn messages_are_what_rfc_2205_says() {
    let (tx, mut rx) = config(20, Duration::from_millis(1), StyleKind::Ff);
    if let Some(r) = rx.receiver.as_mut() {
        r.confirm = true;
    }
    let mut p = Pair::new(tx, rx);
    p.tx.handle_timeout(Instant::from_millis(1));
    assert!(p.tx.poll_transmit(Instant::from_millis(1), &mut p.buf));
    let (_, m) = Message::parse(&p.buf.payload).expect("Path parses");
    let Message::Path(path) = m else {
        panic!("{m:?}")
    };
    assert_eq!(path.session, Session::ip(D.into(), 17, 1024));
    assert_eq!(path.hop.addr, IpAddr::from(S));
    assert_eq!(path.time_values.refresh_ms, 1000);
    assert_eq!(path.sender.template, FilterSpec::ip(S.into(), 1024));
    assert_eq!(path.sender.tspec, SenderTspec(bucket()));
    let d = p.buf.received_on(IfIndex(1), S.into());
    p.rx.handle_datagram(Instant::ZERO, d);
    assert!(p.rx.poll_transmit(Instant::ZERO, &mut p.buf));
    let (_, m) = Message::parse(&p.buf.payload).expect("Resv parses");
    let Message::Resv(resv) = m else {
        panic!("{m:?}")
    };
    assert_eq!(resv.session, path.session);
    assert_eq!(resv.hop.addr, IpAddr::from(D));
    assert_eq!(resv.style.kind, StyleKind::Ff);
    assert_eq!(resv.confirm, Some(ResvConfirm { receiver: D.into() }));
    assert_eq!(resv.flows.len(), 1);
    assert_eq!(resv.flows[0].filters, vec![path.sender.template]);
    assert_eq!(
        resv.flows[0].flowspec,
        Some(FlowSpec::ControlledLoad(bucket()))
    );
    // Garbage is counted, never a panic.
    let junk = Transmit {
        payload: vec![0x10, 1, 0, 0],
        ..p.buf.clone()
    };
    p.tx.handle_datagram(Instant::ZERO, junk.received_on(IfIndex(1), D.into()));
    assert_eq!(p.tx.stats().drops.values().sum::<u64>(), 1);
}

#[test]
fn sender_slots_name_distinct_flows_and_map_back() {
    let (mut tx, _) = config(200_000, Duration::from_millis(1), StyleKind::Ff);
    if let Some(s) = tx.sender.as_mut() {
        s.dests.push([10, 0, 0, 3].into());
    }
    let load = RsvpLoad::new(tx, Instant::ZERO).expect("config");
    let s = load.sender.as_ref().expect("sender");
    let mut seen = std::collections::HashSet::new();
    for slot in 0..s.cap as u32 {
        let (session, f) = s.identity(slot);
        let FilterSpec::V4 { src_port, .. } = f else {
            panic!()
        };
        assert!(seen.insert((session, src_port)));
        assert_eq!(s.slot(&session, src_port), Some(slot));
    }
}

#[test]
fn bad_configurations_are_refused() {
    let (mut tx, _) = config(10, Duration::from_millis(1), StyleKind::Ff);
    if let Some(s) = tx.sender.as_mut() {
        s.dests = vec!["::1".parse().expect("v6")];
    }
    assert!(matches!(
        RsvpLoad::new(tx, Instant::ZERO),
        Err(ConfigError::MixedFamilies { .. })
    ));
    let (mut tx, _) = config(10, Duration::from_millis(1), StyleKind::Ff);
    tx.sender = None;
    assert_eq!(
        RsvpLoad::new(tx, Instant::ZERO).err(),
        Some(ConfigError::NoRole)
    );
    let (mut tx, _) = config(10, Duration::from_millis(1), StyleKind::Ff);
    if let Some(s) = tx.sender.as_mut() {
        s.dst_port_base = 65535;
        s.src_port_base = 65535;
    }
    assert!(matches!(
        RsvpLoad::new(tx, Instant::ZERO),
        Err(ConfigError::NotEnoughIdentities { .. })
    ));
}
