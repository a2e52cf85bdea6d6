#!/usr/bin/env bash
# Build a fuzz target with libFuzzer on the stable toolchain and run it; list the targets; or
# regenerate the committed seeds.
#
#   fuzz/run.sh TARGET SECONDS [libFuzzer flags...]
#   fuzz/run.sh --list
#   fuzz/run.sh --seeds
#
# TARGET is a file name in fuzz/src/bin/ without .rs (e.g. rsvp_message). The corpus grows in
# fuzz/corpus/TARGET (not committed), seeded read-only from fuzz/seeds/TARGET if present; crashes
# land in fuzz/artifacts/TARGET/. Exit status is libFuzzer's: non-zero on a crash.
#
# --seeds rewrites fuzz/seeds/ from nothing: it runs the fuzz_seeds example of every crate that
# has one (crates/*/examples/fuzz_seeds.rs, each writing SEEDS_DIR/TARGET/ for its targets) into
# an empty directory, lists the files, and only then replaces fuzz/seeds/ with it, so a seed no
# example writes any more disappears and a failed run changes nothing. The seeds are
# deterministic: on a clean checkout, `git status` shows no change afterwards.
#
# cargo-fuzz needs nightly for -Zsanitizer; without it we ask LLVM for the same coverage
# instrumentation libFuzzer reads (sanitizer-coverage inline 8-bit counters, PC table, compare
# tracing) through stable codegen flags, and keep overflow checks and debug assertions on.
set -euo pipefail

# `run.sh --list` names every target (one per line), for scripts that fuzz them all.
if [[ "${1:-}" == "--list" ]]; then
    for f in "$(dirname "$0")"/src/bin/*.rs; do basename "$f" .rs; done
    exit 0
fi

# `run.sh --seeds` regenerates every seed directory (see above).
if [[ "${1:-}" == "--seeds" ]]; then
    if [[ $# -ne 1 ]]; then
        echo "usage: fuzz/run.sh --seeds" >&2
        exit 2
    fi
    cd "$(dirname "$0")/.."
    new=fuzz/seeds.new
    rm -rf "$new"
    trap 'rm -rf "$new"' EXIT
    for example in crates/*/examples/fuzz_seeds.rs; do
        package=$(awk -F '"' '/^name = /{print $2; exit}' "${example%/examples/*}/Cargo.toml")
        # The examples name what they wrote under $new; list it where it will be.
        cargo run -q -p "$package" --example fuzz_seeds -- "$new" | sed "s|^$new/|fuzz/seeds/|"
    done
    rm -rf fuzz/seeds
    mv "$new" fuzz/seeds
    exit 0
fi

target=${1:?usage: fuzz/run.sh TARGET SECONDS [libFuzzer flags...]}
seconds=${2:?usage: fuzz/run.sh TARGET SECONDS [libFuzzer flags...]}
shift 2

cd "$(dirname "$0")"
if [[ ! -f "src/bin/$target.rs" ]]; then
    echo "no fuzz target src/bin/$target.rs" >&2
    exit 2
fi

# An explicit --target keeps RUSTFLAGS off build scripts and proc macros, which must not be
# instrumented (they would not link without libFuzzer).
host=$(rustc -vV | sed -n 's/^host: //p')
export RUSTFLAGS="${RUSTFLAGS:-} --cfg fuzzing -Cpasses=sancov-module \
-Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
-Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares \
-Cdebug-assertions -Coverflow-checks -Cforce-frame-pointers"
target_dir="${CARGO_TARGET_DIR:-target}"
cargo build --release --target "$host" --bin "$target"

corpus="corpus/$target"
artifacts="artifacts/$target/"
mkdir -p "$corpus" "$artifacts"
dirs=("$corpus")
if [[ -d "seeds/$target" ]]; then
    dirs+=("seeds/$target")
fi
exec "$target_dir/$host/release/$target" \
    -max_total_time="$seconds" \
    -artifact_prefix="$artifacts" \
    -print_final_stats=1 \
    "$@" "${dirs[@]}"
