//! The seed papers' testbeds, shipped as TOML files in `crates/sim/testbeds/`.
//!
//! Each file's header says which figure it reconstructs, what the text states and what was
//! inferred (the figures themselves did not survive text extraction).

use crate::topology::Topology;

/// KOM RSVP paper (seed 001), Fig. 4: N1, N2 senders → N3 → N4 → N5, N6 receivers.
pub const KOM_RSVP: &str = include_str!("../testbeds/kom-rsvp.toml");
/// KOM RSVP paper (seed 001), Fig. 7: end-to-end latency chain R0 – R1 – R2 – R3.
pub const KOM_LATENCY: &str = include_str!("../testbeds/kom-latency.toml");
/// GIST thesis (seed 000), Fig. 4.2: N1–N7.
pub const GIST_THESIS: &str = include_str!("../testbeds/gist-thesis.toml");
/// Securing RSVP/RSVP-TE (seed 004), Fig. 1: R0 – R1 – R2.
pub const SEED004_R0_R2: &str = include_str!("../testbeds/seed004-r0-r2.toml");

/// Every shipped testbed as `(name, TOML text)`.
pub const ALL: [(&str, &str); 4] = [
    ("kom-rsvp", KOM_RSVP),
    ("kom-latency", KOM_LATENCY),
    ("gist-thesis", GIST_THESIS),
    ("seed004-r0-r2", SEED004_R0_R2),
];

/// The testbed called `name` (a file name without `.toml`), if shipped.
pub fn by_name(name: &str) -> Option<Topology> {
    ALL.iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| parse(text))
}

fn parse(text: &str) -> Topology {
    // The shipped files are checked by this crate's tests.
    Topology::from_toml(text).expect("shipped testbed parses")
}

/// Seed 001 Fig. 4 (see [`KOM_RSVP`]).
pub fn kom_rsvp() -> Topology {
    parse(KOM_RSVP)
}

/// Seed 001 Fig. 7 (see [`KOM_LATENCY`]).
pub fn kom_latency() -> Topology {
    parse(KOM_LATENCY)
}

/// Seed 000 Fig. 4.2 (see [`GIST_THESIS`]).
pub fn gist_thesis() -> Topology {
    parse(GIST_THESIS)
}

/// Seed 004 Fig. 1 (see [`SEED004_R0_R2`]).
pub fn seed004_r0_r2() -> Topology {
    parse(SEED004_R0_R2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_parse_with_expected_shape() {
        for (name, _) in ALL {
            let t = by_name(name).unwrap();
            assert_eq!(t.name(), name);
        }
        assert_eq!(kom_rsvp().nodes().len(), 6);
        assert_eq!(kom_rsvp().links().len(), 5);
        assert_eq!(kom_latency().links().len(), 3);
        assert_eq!(gist_thesis().nodes().len(), 7);
        assert_eq!(seed004_r0_r2().links().len(), 2);
        assert!(by_name("nope").is_none());
    }
}
