#!/usr/bin/env bash
# Build a fuzz target with libFuzzer on the stable toolchain and run it.
#
#   fuzz/run.sh TARGET SECONDS [libFuzzer flags...]
#   fuzz/run.sh --list
#
# TARGET is a file name in fuzz/src/bin/ without .rs (e.g. rsvp_message). The corpus grows in
# fuzz/corpus/TARGET (not committed), seeded read-only from fuzz/seeds/TARGET if present; crashes
# land in fuzz/artifacts/TARGET/. Exit status is libFuzzer's: non-zero on a crash.
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
