//! Ranking equals a brute-force reference on random topologies, and is always a permutation of
//! its input.

mod common;

use common::{config, query, reference_rank};
use pathwise_oracle::TopologySnapshot;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn ranking_matches_the_reference(
        (cfg, queries) in config().prop_flat_map(|cfg| {
            let q = prop::collection::vec(query(&cfg), 1..6);
            (Just(cfg), q)
        })
    ) {
        let snap = TopologySnapshot::build(&cfg).expect("random configurations are valid");
        for (source, candidates) in queries {
            let mut ranked = candidates.clone();
            snap.rank(source, &mut ranked);
            let want = reference_rank(&cfg, source, &candidates);
            prop_assert_eq!(&ranked, &want, "source {}", source);
            let mut sorted_in = candidates.clone();
            let mut sorted_out = ranked.clone();
            sorted_in.sort();
            sorted_out.sort();
            prop_assert_eq!(sorted_in, sorted_out, "not a permutation");
        }
    }
}
