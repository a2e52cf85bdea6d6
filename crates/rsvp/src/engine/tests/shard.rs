//! A shard of a sharded node as a head end: the Tunnel IDs it picks name sessions it holds
//! (`Config::shard`, `crate::shard`), so every LSP's messages reach the shard that heads it
//! and no two shards pick the same session.

use super::kom::{ip, node_with};
use super::*;
use crate::engine::te::LspSpec;
use crate::shard::{ShardMap, shard_configs};

#[test]
fn a_shard_picks_only_tunnel_ids_of_sessions_it_holds() {
    let map = ShardMap::new(3, 7);
    let mut seen = std::collections::HashSet::new();
    for (i, c) in shard_configs(&Config::default(), &map)
        .into_iter()
        .enumerate()
    {
        let mut head = node_with(&[(1, "10.0.0.1")], &[("0.0.0.0/0", Some("10.0.0.2"), 1)], c);
        // Every shard is asked for the same names and end points: only the session hash keeps
        // them apart.
        for k in 0..20 {
            let spec = LspSpec::new(format!("lsp{k}"), ip("10.0.0.9"), 1000);
            head.open_lsp(Instant::ZERO, spec).unwrap();
        }
        let views = head.lsps();
        assert_eq!(views.len(), 20);
        for v in views {
            assert_eq!(map.of_session(&v.session), i, "{:?}", v.session);
            assert!(seen.insert(v.session), "{:?} picked twice", v.session);
        }
    }
    // Unsharded, the Tunnel IDs are 1, 2, 3, …
    let mut one = node_with(
        &[(1, "10.0.0.1")],
        &[("0.0.0.0/0", Some("10.0.0.2"), 1)],
        Config::default(),
    );
    for k in 0..3 {
        one.open_lsp(
            Instant::ZERO,
            LspSpec::new(format!("lsp{k}"), ip("10.0.0.9"), 1000),
        )
        .unwrap();
    }
    let mut ids: Vec<u16> = one.lsps().iter().map(|v| v.session.dst_port).collect();
    ids.sort_unstable();
    assert_eq!(ids, [1, 2, 3]);
}
