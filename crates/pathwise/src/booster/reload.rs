//! SIGHUP for `pathwise booster gateway`: the policies (`[[policy]]`) and the meta-policy are
//! read again from the configuration file and swapped in, as `booster insert`/`remove` swap a
//! chain — the new chains are sent `chain_grace_ms` after the swap, so reload both gateways
//! within that time ([`pathwise_booster::admission`]). Everything else is bound at start (the
//! TUN device, the addresses, the key, the sender id, MTU, batch, the grace period, the
//! management socket, the adaptive policy): a change to it is named in a warning as needing a
//! restart. A file with errors changes nothing; its errors are printed with file, line and
//! field.

use super::config::GatewayConfig;
use super::gateway::Shared;
use crate::config::ConfigError;
use pathwise_booster::policy::PolicySnapshot;
use std::path::Path;

/// A re-read configuration, checked.
#[derive(Debug)]
pub struct Reload {
    /// The file as read now.
    pub config: GatewayConfig,
    /// Fields changed since the gateway started that only a restart applies.
    pub needs_restart: Vec<String>,
}

/// Read `path` again; `started` is the text the gateway started with.
pub fn prepare(path: &Path, started: &str) -> Result<Reload, Vec<ConfigError>> {
    let config = GatewayConfig::load_all(path)?;
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let needs_restart = crate::daemon::reload::changed_fields(started, &text)
        .into_iter()
        .filter(|f| f != "policy" && !f.starts_with("policy[") && f != "meta_policy")
        .collect();
    Ok(Reload {
        config,
        needs_restart,
    })
}

/// Swap the re-read policies and meta-policy in; the new generation and the number of
/// policies, or why the snapshot was refused (e.g. an encrypting chain on a gateway that
/// started without a key).
pub fn apply(shared: &Shared, r: &Reload) -> Result<(u64, usize), String> {
    if shared.plain {
        return Err("this gateway runs in plain mode (no policies)".into());
    }
    let policies = r.config.policy.clone();
    let meta = r.config.meta_policy.clone().unwrap_or_default();
    let (snap, _) = shared
        .store
        .update(shared.now(), |s| {
            PolicySnapshot::build(s.generation() + 1, policies, meta, s.has_key())
        })
        .map_err(|e| e.to_string())?;
    Ok((snap.generation(), snap.policies().len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GW: &str = r#"tun = "pwb0"
listen = "192.168.77.1:7000"
peer = "192.168.77.2:7000"
psk = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

[[policy]]
name = "default"
dst = "10.77.2.0/24"
chain = ["lz4", "encrypt"]
"#;

    #[test]
    fn policies_reload_and_other_changes_are_named_for_a_restart() {
        let dir = std::env::temp_dir().join(format!("pathwise-gw-reload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("gw.toml");
        std::fs::write(&path, GW).unwrap();
        let r = prepare(&path, GW).unwrap();
        assert!(r.needs_restart.is_empty());
        // A chain changed, a policy added, the MTU changed (line 4).
        let text = GW
            .replace("[\"lz4\", \"encrypt\"]", "[\"encrypt\"]")
            .replace(
                "peer = \"192.168.77.2:7000\"",
                "peer = \"192.168.77.2:7000\"\nmtu = 1300",
            )
            + "\n[[policy]]\nname = \"bulk\"\ndst = \"10.77.3.0/24\"\nchain = [\"zstd\"]\n";
        std::fs::write(&path, &text).unwrap();
        let r = prepare(&path, GW).unwrap();
        assert_eq!(r.config.policy.len(), 2);
        assert_eq!(r.needs_restart, ["mtu"]);
        // A chain the meta-policy forbids: refused at its line.
        std::fs::write(
            &path,
            text.replace("[\"encrypt\"]", "[\"encrypt\", \"lz4\"]"),
        )
        .unwrap();
        let errs = prepare(&path, GW).unwrap_err();
        assert_eq!(
            (errs[0].line, errs[0].field.as_str()),
            (10, "policy[0].chain")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
