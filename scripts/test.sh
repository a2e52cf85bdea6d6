#!/usr/bin/env bash
# The whole pathwise test suite: formatting, lints, unit/property/simulation tests, the
# real-network tests (network namespaces; they skip with a message when not root), and a short
# fuzzing run of every fuzz target.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo test"
cargo test --workspace
echo "== fuzz (brief)"
FUZZ_SECONDS="${FUZZ_SECONDS:-20}"
bash fuzz/run.sh --all "$FUZZ_SECONDS"
echo "== all tests passed"
