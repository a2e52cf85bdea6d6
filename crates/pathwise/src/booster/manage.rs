//! The gateway's management verbs, served over [`crate::mgmt`] and used by
//! `pathwise booster show|insert|remove|stats`: the user-level insertion and removal requests
//! of the seed (§3, §5.3, there an `ioctl()`). Driven by the management thread, one request at a
//! time; changes go through the policy store's snapshot swap.
//!
//! | verb | args | answer |
//! |---|---|---|
//! | `show` | — | gateway, policies, meta-policy, adaptive policy |
//! | `insert` | `booster`, `policy` (default `"default"`), optional `position`, optional `dst`/`src` to create the policy | new generation, chain, `swap_ns`, `sent_after_ms` (the grace period) |
//! | `remove` | `booster`, `policy` | same |
//! | `stats` | — | every counter and drops by reason |

use super::gateway::Shared;
use crate::metrics::{Snapshot, Unit};
use pathwise_booster::BoosterSpec;
use pathwise_booster::policy::{Policy, chain_text};
use serde_json::{Value, json};

fn arg<'a>(args: &'a Value, name: &str) -> Option<&'a str> {
    args.get(name).and_then(Value::as_str)
}

/// Answer one management request.
pub fn handle(shared: &Shared, verb: &str, args: &Value) -> Result<Value, String> {
    match verb {
        "show" => Ok(show(shared)),
        "stats" => {
            let mut v =
                serde_json::to_value(shared.counters.report()).map_err(|e| e.to_string())?;
            v["uptime_s"] = json!(shared.started.elapsed().as_secs_f64());
            v["generation"] = json!(shared.store.load().generation());
            v["management_refused"] = json!(
                shared
                    .management_refused
                    .load(std::sync::atomic::Ordering::Relaxed)
            );
            Ok(v)
        }
        "insert" | "remove" => {
            if shared.plain {
                return Err("this gateway runs in plain mode (no boosters)".into());
            }
            let booster: BoosterSpec = arg(args, "booster")
                .ok_or("missing argument \"booster\"")?
                .parse()
                .map_err(|e: pathwise_booster::booster::SpecError| e.to_string())?;
            let policy = arg(args, "policy").unwrap_or("default").to_string();
            let position = args
                .get("position")
                .and_then(Value::as_u64)
                .map(|p| p as usize);
            let dst = arg(args, "dst")
                .map(str::parse)
                .transpose()
                .map_err(|e| format!("dst: {e}"))?;
            let src = arg(args, "src")
                .map(str::parse)
                .transpose()
                .map_err(|e| format!("src: {e}"))?;
            let (snap, ns) = shared
                .store
                .update(shared.now(), |s| {
                    let exists = s.policies().iter().any(|p| p.name == policy);
                    match (verb, exists, dst) {
                        ("insert", false, Some(dst)) => s.with_policy(Policy {
                            name: policy.clone(),
                            dst,
                            src,
                            chain: vec![booster],
                        }),
                        ("insert", _, _) => s.with_inserted(&policy, booster, position),
                        _ => s.with_removed(&policy, booster),
                    }
                })
                .map_err(|e| e.to_string())?;
            let chain = snap
                .policies()
                .iter()
                .find(|p| p.name == policy)
                .map(|p| chain_text(&p.chain))
                .unwrap_or_default();
            Ok(json!({
                "generation": snap.generation(),
                "policy": policy,
                "chain": chain,
                "swap_ns": ns,
                "sent_after_ms": shared.config.chain_grace_ms,
            }))
        }
        _ => Err(format!(
            "unknown verb {verb:?} (known: show, insert, remove, stats)"
        )),
    }
}

fn show(shared: &Shared) -> Value {
    let snap = shared.store.load();
    let c = &shared.config;
    json!({
        "tun": c.tun,
        "listen": c.listen.to_string(),
        "peer": c.peer.to_string(),
        "mode": if shared.plain { "plain" } else { "boost" },
        "sender_id": shared.sender_id,
        "encryption_key": c.psk.is_some() || c.psk_file.is_some(),
        "mtu": c.mtu,
        "batch": c.batch,
        "queues": shared.lanes.len(),
        "lanes": shared.lanes.iter().enumerate().map(|(i, l)| {
            let mut v = json!({
                "listen": c.lane_listen(i).to_string(),
                "peer": c.lane_peer(i).to_string(),
                "sender_id": pathwise_booster::boosters::lane_sender_id(shared.sender_id, i as u8),
            });
            for (k, n) in l.report() {
                v[k] = json!(n);
            }
            v
        }).collect::<Vec<_>>(),
        "offloads": *shared.offloads.lock().unwrap_or_else(|e| e.into_inner()),
        "generation": snap.generation(),
        "last_swap_ns": shared.store.last_swap_ns.load(std::sync::atomic::Ordering::Relaxed),
        "chain_grace_ms": c.chain_grace_ms,
        "sending_generation": shared.store.epochs().sending(shared.now()).generation(),
        "meta_policy": snap.meta(),
        "policies": snap.policies(),
        "adaptive": {
            "config": shared.adaptive_config,
            "state": *shared.adaptive.lock().unwrap_or_else(|e| e.into_inner()),
        },
    })
}

/// The gateway's metric families (`pathwise_booster_*`, see [`crate::metrics`]): every counter
/// of `stats`, drops in one family by reason, and the policy in force.
pub fn metrics(shared: &Shared) -> Snapshot {
    let r = shared.counters.report();
    let mut m = Snapshot::new("booster");
    m.management_refused(
        shared
            .management_refused
            .load(std::sync::atomic::Ordering::Relaxed),
    );
    let s = |a: &str, b: &str| [a.to_string(), b.to_string()];
    m.counters(
        "packets",
        "Packets read from and written to the tunnel device, datagrams received from and sent to the peer gateway.",
        ["link", "direction"],
        [
            (s("tun", "received"), r.tun_in),
            (s("tun", "sent"), r.tun_out),
            (s("peer", "received"), r.udp_in),
            (s("peer", "sent"), r.udp_out),
        ],
    )
    .counters_in(
        "packet",
        Unit::Bytes,
        "Bytes read from the tunnel device and sent to the peer gateway.",
        ["link", "direction"],
        [
            (s("tun", "received"), r.tun_in_bytes),
            (s("peer", "sent"), r.udp_out_bytes),
        ],
    )
    .counter(
        "control_messages_received",
        "Control messages (loss reports) received from the peer gateway.",
        r.control_in,
    )
    .counter(
        "over_mtu",
        "Boosted datagrams larger than the link MTU, sent for the kernel to fragment.",
        r.over_mtu,
    )
    .counters(
        "super_segments",
        "TCP/UDP super-segments (TUN offloads) read from the tunnel device and split, and coalesced ones written to it.",
        ["direction"],
        [
            (["received".to_string()], r.tun_in_super),
            (["sent".to_string()], r.tun_out_super),
        ],
    )
    .gauge(
        "queues",
        "Lanes the gateway runs: TUN queues, each with its own threads and UDP socket.",
        shared.lanes.len() as u64,
    )
    .counters(
        "lane_packets",
        "Packets per lane: read from and written to its TUN queue, datagrams received and sent on its socket.",
        ["lane", "link", "direction"],
        shared.lanes.iter().enumerate().flat_map(|(i, l)| {
            let [tun_in, udp_out, udp_in, tun_out] = l.report().map(|(_, n)| n);
            [
                ("tun", "received", tun_in),
                ("tun", "sent", tun_out),
                ("peer", "received", udp_in),
                ("peer", "sent", udp_out),
            ]
            .map(|(link, dir, n)| ([i.to_string(), link.to_string(), dir.to_string()], n))
        }),
    )
    .counter(
        "policy_switches",
        "Policy snapshots the datapath switched to.",
        r.snapshot_switches,
    )
    .counters(
        "drops",
        "Packets and datagrams dropped, by reason.",
        ["reason"],
        r.drops.iter().map(|(k, n)| ([k.clone()], *n)),
    )
    .counters(
        "booster_packets",
        "Packets through each booster, by event: boosted, passed unchanged, extra (FEC parity), deboosted, recovered (FEC).",
        ["booster", "event"],
        r.boosters.iter().flat_map(|(b, c)| {
            [
                ("boosted", c.boosted),
                ("passed", c.passed),
                ("extra", c.extra),
                ("deboosted", c.deboosted),
                ("recovered", c.recovered),
            ]
            .map(|(e, n)| (s(b, e), n))
        }),
    )
    .counters_in(
        "booster",
        Unit::Bytes,
        "Bytes into and out of each booster on the boost side.",
        ["booster", "side"],
        r.boosters.iter().flat_map(|(b, c)| {
            [(s(b, "input"), c.bytes_in), (s(b, "output"), c.bytes_out)]
        }),
    );
    let a = shared
        .adaptive
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    m.counters(
        "adaptive_compression_switches",
        "Times the adaptive policy inserted and removed compression.",
        ["action"],
        [
            (["insert".to_string()], a.compress_inserts),
            (["remove".to_string()], a.compress_removals),
        ],
    )
    .counter(
        "adaptive_congestion_onsets",
        "Times the congestion signal of congestion-aware compression turned on.",
        a.congestion_onsets,
    )
    .counters(
        "adaptive_delay_probes",
        "Delay probes sent to the peer and answers received.",
        ["direction"],
        [
            (["sent".to_string()], a.probes.0),
            (["answered".to_string()], a.probes.1),
        ],
    )
    .gauge(
        "adaptive_congested",
        "Whether the link is congested (1) as congestion-aware compression sees it.",
        u64::from(a.congested),
    )
    .gauge_in(
        "adaptive_queue_delay",
        Unit::Seconds,
        "Queueing delay of the link in the last interval with a probe answered.",
        a.queue_delay_ms.unwrap_or(0.0) / 1e3,
    );
    let swap_ns = shared
        .store
        .last_swap_ns
        .load(std::sync::atomic::Ordering::Relaxed);
    m.gauge(
        "policy_generation",
        "Generation of the policy snapshot in force (each change makes a new one).",
        shared.store.load().generation(),
    )
    .gauge_in(
        "last_policy_swap",
        Unit::Seconds,
        "Time the last policy change took to build, check and swap in.",
        swap_ns as f64 / 1e9,
    );
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathwise_booster::admission::PolicyEpochs;
    use pathwise_booster::stats::DropReason;
    use std::sync::atomic::Ordering::Relaxed;
    use std::sync::{Arc, Mutex};

    fn shared() -> Shared {
        let config: super::super::config::GatewayConfig = toml::from_str(
            "tun = \"pwb0\"\nlisten = \"192.168.77.1:7000\"\npeer = \"192.168.77.2:7000\"\n\
             [[policy]]\nname = \"default\"\ndst = \"10.77.2.0/24\"\nchain = [\"lz4\"]\n",
        )
        .unwrap();
        let snap = config.snapshot(false).unwrap();
        Shared {
            offloads: Mutex::new(super::super::gateway::Offloads::all_off("test")),
            store: super::super::gateway::PolicyStore::new(PolicyEpochs::new(
                Arc::new(snap),
                std::time::Duration::from_millis(config.chain_grace_ms),
                &config.adaptive,
            )),
            counters: Arc::default(),
            management_refused: Arc::default(),
            adaptive: Mutex::default(),
            peer_delay: Mutex::default(),
            adaptive_config: config.adaptive.clone(),
            peer_loss: Mutex::new((0, 0)),
            plain: false,
            sender_id: 1,
            lanes: (0..2)
                .map(|_| super::super::gateway::LaneCounters::default())
                .collect(),
            sampled: Default::default(),
            started: std::time::Instant::now(),
            stop: std::sync::atomic::AtomicBool::new(false),
            config,
        }
    }

    #[test]
    fn every_counter_of_stats_is_in_the_metrics_by_link_booster_and_reason() {
        let s = shared();
        let c = &s.counters;
        c.tun_in.store(5, Relaxed);
        c.tun_in_bytes.store(500, Relaxed);
        c.udp_out.store(6, Relaxed);
        c.udp_out_bytes.store(660, Relaxed);
        c.udp_in.store(7, Relaxed);
        c.tun_out.store(8, Relaxed);
        c.count_drop(DropReason::Replay);
        c.count_drop(DropReason::Replay);
        c.booster(pathwise_booster::wire::BoosterId::from_u8(1))
            .boosted
            .store(3, Relaxed);
        s.store.last_swap_ns.store(1_500_000, Relaxed);
        s.lanes[1].udp_out.store(4, Relaxed);
        let snap = metrics(&s);
        crate::metrics::tests::assert_well_formed(&snap);
        let text = snap.openmetrics();
        for sample in [
            "pathwise_booster_packets_total{link=\"tun\",direction=\"received\"} 5\n",
            "pathwise_booster_packets_total{link=\"tun\",direction=\"sent\"} 8\n",
            "pathwise_booster_packets_total{link=\"peer\",direction=\"received\"} 7\n",
            "pathwise_booster_packets_total{link=\"peer\",direction=\"sent\"} 6\n",
            "pathwise_booster_packet_bytes_total{link=\"tun\",direction=\"received\"} 500\n",
            "pathwise_booster_packet_bytes_total{link=\"peer\",direction=\"sent\"} 660\n",
            "pathwise_booster_drops_total{reason=\"replay\"} 2\n",
            "pathwise_booster_drops_total{reason=\"auth_failed\"} 0\n",
            "pathwise_booster_policy_generation 1\n",
            "pathwise_booster_queues 2\n",
            "pathwise_booster_lane_packets_total{lane=\"1\",link=\"peer\",direction=\"sent\"} 4\n",
            "pathwise_booster_last_policy_swap_seconds 0.0015\n",
            "# UNIT pathwise_booster_last_policy_swap_seconds seconds\n",
        ] {
            assert!(text.contains(sample), "{sample} in\n{text}");
        }
        let boosted: Vec<_> = snap
            .family("booster_packets")
            .unwrap()
            .samples
            .iter()
            .filter(|(_, n)| *n == crate::metrics::Number::Int(3))
            .collect();
        assert_eq!(boosted.len(), 1, "{text}");
        assert_eq!(boosted[0].0[1], ("event", "boosted".to_string()));
        assert_eq!(
            snap.family("drops").unwrap().samples.len(),
            DropReason::ALL.len()
        );
    }
}
