//! The oracle part of `pathwise demo`: load the seed's test network (seed 002 §5.2: 216 routers
//! in 9 hubs, 3 exits holding 67,000 external routes, 109 client networks) in memory, rank one
//! query from the seed's client network 130.149.221.0/24 — candidates inside the AS (near and
//! far) and outside it (at several AS distances), plus one the oracle cannot place — and report
//! the ranked order with each candidate's path metrics and cost. The same query then goes
//! through the Proxidor codec and `answer()`, the server's per-datagram path, which must give
//! the same order.

use super::views::{RankView, rank_view};
use pathwise_oracle::generate::{SEED_SOURCE_NETWORK, seed_network};
use pathwise_oracle::proxidor::{self, Message, Payload};
use pathwise_oracle::{Outcome, TopologySnapshot, answer};
use serde::Serialize;
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Instant;

/// The query's source: a host in the seed's client network (§5.2).
pub const DEMO_SOURCE: Ipv4Addr = Ipv4Addr::new(130, 149, 221, 10);

/// What the demo found.
#[derive(Clone, Debug, Serialize)]
pub struct OracleDemo {
    /// Which network was loaded.
    pub network: String,
    /// Routers.
    pub routers: usize,
    /// Directed links.
    pub links: usize,
    /// Prefixes.
    pub prefixes: usize,
    /// (prefix, exit) pairs.
    pub exits: usize,
    /// Milliseconds to generate the configuration and build the snapshot.
    pub build_ms: f64,
    /// The candidates in the order the query listed them.
    pub asked: Vec<IpAddr>,
    /// The ranked answer.
    pub ranked: Option<RankView>,
    /// Why there is no ranked answer (never expected).
    pub error: Option<String>,
    /// The same query through the Proxidor codec and `answer()`.
    pub wire: WireCheck,
}

/// The query as the server answers it.
#[derive(Clone, Debug, Serialize)]
pub struct WireCheck {
    /// Query datagram bytes.
    pub query_bytes: usize,
    /// Reply datagram bytes.
    pub reply_bytes: usize,
    /// TTL in the reply, seconds.
    pub ttl: u16,
    /// The reply lists the candidates in the ranked order.
    pub same_order: bool,
}

/// Load the seed network and rank the sample query.
pub fn run() -> OracleDemo {
    let t = Instant::now();
    let cfg = seed_network(1);
    let snap = match TopologySnapshot::build(&cfg) {
        Ok(s) => s,
        Err(e) => {
            return OracleDemo {
                network: "seed 002 §5.2 test network".into(),
                routers: cfg.routers.len(),
                links: 0,
                prefixes: 0,
                exits: 0,
                build_ms: t.elapsed().as_secs_f64() * 1e3,
                asked: Vec::new(),
                ranked: None,
                error: Some(format!("the seed network does not build: {e}")),
                wire: WireCheck {
                    query_bytes: 0,
                    reply_bytes: 0,
                    ttl: 0,
                    same_order: false,
                },
            };
        }
    };
    let build_ms = t.elapsed().as_secs_f64() * 1e3;
    let asked = sample_candidates(&cfg, &snap);
    let source = IpAddr::V4(DEMO_SOURCE);
    let (ranked, error) = match rank_view(&snap, source, &asked) {
        Ok(r) => (Some(r), None),
        Err(e) => (None, Some(e)),
    };
    let wire = wire_check(&snap, &asked, ranked.as_ref());
    OracleDemo {
        network: format!("seed 002 §5.2 test network (queries from {SEED_SOURCE_NETWORK})"),
        routers: snap.router_count(),
        links: snap.link_count(),
        prefixes: snap.prefix_count(),
        exits: snap.exit_count(),
        build_ms,
        asked,
        ranked,
        error,
        wire,
    }
}

/// Candidates from different networks, deliberately out of order: three client networks of
/// the AS (the source's own hub, hub 3, hub 9), three external networks whose path from the
/// source leaves the AS at a small, a medium and a large AS distance, and an address no prefix
/// covers.
fn sample_candidates(cfg: &pathwise_oracle::OracleConfig, snap: &TopologySnapshot) -> Vec<IpAddr> {
    let v4 = |a, b, c, d| IpAddr::V4(Ipv4Addr::new(a, b, c, d));
    let internal_near = v4(130, 149, 5, 20); // at 10.1.0.5, the source's hub
    let internal_mid = v4(130, 149, 25, 7); // at 10.3.0.1
    let internal_far = v4(130, 149, 100, 9); // at 10.9.0.4
    let source = IpAddr::V4(DEMO_SOURCE);
    // A spread of external prefixes (every 997th), by the AS distance the oracle will use.
    let mut external: Vec<(u16, IpAddr)> = cfg
        .external_networks
        .iter()
        .step_by(997)
        .map(|n| host_in(&n.prefix))
        .filter_map(|a| {
            Some((
                snap.metrics(source, a).filter(|m| m.external)?.as_distance,
                a,
            ))
        })
        .collect();
    external.sort_by_key(|&(d, _)| d);
    let pick = |i: usize| external.get(i).map(|&(_, a)| a);
    let (near, mid, far) = (
        pick(0),
        pick(external.len() / 2),
        external.len().checked_sub(1).and_then(pick),
    );
    let unplaced = [
        v4(192, 0, 2, 1),
        v4(198, 51, 100, 1),
        v4(203, 0, 113, 1),
        v4(10, 77, 0, 1),
    ]
    .into_iter()
    .find(|a| snap.locate(*a).is_none())
    .unwrap_or(v4(0, 0, 0, 1));
    let mut out = Vec::new();
    out.extend(far);
    out.push(unplaced);
    out.push(internal_far);
    out.extend(near);
    out.push(internal_near);
    out.extend(mid);
    out.push(internal_mid);
    out
}

/// A host address inside `p` (the first one after the network address).
fn host_in(p: &ipnet::IpNet) -> IpAddr {
    match p {
        ipnet::IpNet::V4(n) => IpAddr::V4(Ipv4Addr::from(u32::from(n.network()).wrapping_add(1))),
        ipnet::IpNet::V6(n) => IpAddr::V6(std::net::Ipv6Addr::from(
            u128::from(n.network()).wrapping_add(1),
        )),
    }
}

fn wire_check(snap: &TopologySnapshot, asked: &[IpAddr], ranked: Option<&RankView>) -> WireCheck {
    let mut query = proxidor::query(0x0bad_cafe, asked);
    query.source_v4 = Some((DEMO_SOURCE, 32));
    let mut q = Vec::new();
    query.emit(&mut q);
    let mut reply = Vec::new();
    let outcome = answer(snap, IpAddr::V4(Ipv4Addr::LOCALHOST), &q, &mut reply);
    let parsed = Message::parse(&reply).ok();
    let order: Vec<IpAddr> = parsed
        .iter()
        .flat_map(|m| m.tlvs.iter())
        .flat_map(|t| match &t.payload {
            Payload::Ipv4(a) => a.iter().map(|&a| IpAddr::V4(a)).collect(),
            Payload::Ipv6(a) => a.iter().map(|&a| IpAddr::V6(a)).collect(),
            Payload::Unknown(..) => Vec::new(),
        })
        .collect();
    let expected: Vec<IpAddr> = ranked
        .map(|r| r.candidates.iter().map(|c| c.address).collect())
        .unwrap_or_default();
    WireCheck {
        query_bytes: q.len(),
        reply_bytes: reply.len(),
        ttl: parsed.map_or(0, |m| m.header.ttl),
        same_order: matches!(outcome, Outcome::Answered { .. }) && order == expected,
    }
}

/// The demo as text.
pub fn render(d: &OracleDemo) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Locality oracle: the {} in memory: {} routers, {} links, {} prefixes ({} exits), \
         built in {:.0} ms",
        d.network, d.routers, d.links, d.prefixes, d.exits, d.build_ms
    );
    let asked: Vec<String> = d.asked.iter().map(ToString::to_string).collect();
    let _ = writeln!(s, "candidates as asked: {}", asked.join(", "));
    match (&d.ranked, &d.error) {
        (Some(r), _) => s.push_str(&r.render()),
        (None, Some(e)) => {
            let _ = writeln!(s, "no ranking: {e}");
        }
        (None, None) => {}
    }
    let _ = writeln!(
        s,
        "through the Proxidor codec: {} B query -> {} B reply, TTL {} s, same order: {}",
        d.wire.query_bytes,
        d.wire.reply_bytes,
        d.wire.ttl,
        if d.wire.same_order { "yes" } else { "NO" }
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_ranks_inside_before_outside_and_unplaced_last() {
        let d = run();
        let r = d.ranked.as_ref().expect("ranked");
        assert_eq!(r.candidates.len(), d.asked.len());
        assert!(d.wire.same_order, "{d:?}");
        let last = r.candidates.last().expect("one");
        assert!(last.metrics.is_none(), "the unplaceable address goes last");
        // Eq. 3 puts every internal candidate (AS distance 0) before every external one.
        let first_external = r
            .candidates
            .iter()
            .position(|c| c.metrics.as_ref().is_some_and(|m| m.external))
            .expect("an external candidate");
        assert!(
            r.candidates[..first_external]
                .iter()
                .all(|c| c.metrics.as_ref().is_some_and(|m| !m.external))
        );
        assert!(render(&d).contains("same order: yes"));
    }
}
