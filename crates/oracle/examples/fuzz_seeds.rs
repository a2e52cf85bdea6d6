//! Writes the seeds of the `proxidor_query` and `cost_expression` fuzz targets: the queries of
//! [`proxidor::vectors::queries`](pathwise_oracle::proxidor::vectors::queries), and one cost
//! expression of each kind (built-in name, functions, `if`, the seed's eq. 3), each checked to
//! compile.
//!
//! `fuzz/run.sh --seeds` runs this (and the other crates' `fuzz_seeds` examples); by hand, from
//! the repository root:
//!
//! ```sh
//! cargo run -q -p pathwise-oracle --example fuzz_seeds -- fuzz/seeds
//! ```
//!
//! creates `fuzz/seeds/proxidor_query/` and `fuzz/seeds/cost_expression/`, writes one file per
//! seed there and lists each file it wrote.

use pathwise_core::fuzz_seeds::SeedDir;
use std::path::Path;
use std::process::ExitCode;

use pathwise_oracle::Ranking;
use pathwise_oracle::proxidor::vectors;

const USAGE: &str = "usage: fuzz_seeds SEEDS_DIR   (writes SEEDS_DIR/proxidor_query/ and SEEDS_DIR/cost_expression/)";

/// Cost expressions by seed name. The grammar is text, so these are written by hand to reach
/// every part of it: names, operators, functions, comparisons and logic.
const COST_EXPRESSIONS: &[(&str, &str)] = &[
    ("builtin", "latency-first"),
    (
        "funcs",
        "clamp(sqrt(weight) * ln(1 + hops), 0, 10^3) + if(congestion > 0.5 || !internal, 50, 0)",
    ),
    (
        "if",
        "if(external and as_distance >= 2, 100 + latency, min(latency, 5)) - bandwidth / 1000",
    ),
    ("seed", "8*as_distance + 0.5*hops + 10/bandwidth"),
];

fn main() -> ExitCode {
    pathwise_core::fuzz_seeds::main(USAGE, write_seeds)
}

fn write_seeds(root: &Path) -> Result<(), String> {
    let dir = SeedDir::create(root, "proxidor_query")?;
    for (name, query) in vectors::queries() {
        let mut bytes = Vec::new();
        query.emit(&mut bytes);
        dir.write(name, &bytes)?;
    }
    let dir = SeedDir::create(root, "cost_expression")?;
    for (name, text) in COST_EXPRESSIONS {
        // A seed that does not compile only exercises the error paths.
        Ranking::parse(text).map_err(|e| format!("cost expression seed {name}: {e}"))?;
        dir.write(name, text.as_bytes())?;
    }
    Ok(())
}
