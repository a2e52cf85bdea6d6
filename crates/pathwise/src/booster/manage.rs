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
