#!/usr/bin/env bash
# Build a fuzz target with libFuzzer on the stable toolchain and run it; list the targets; or
# regenerate the committed seeds.
#
#   fuzz/run.sh TARGET SECONDS [libFuzzer flags...]
#   fuzz/run.sh --all SECONDS [libFuzzer flags...]
#   fuzz/run.sh --list
#   fuzz/run.sh --seeds
#
# TARGET is a file name in fuzz/src/bin/ without .rs (e.g. rsvp_message). The corpus grows in
# fuzz/corpus/TARGET (not committed), seeded read-only from fuzz/seeds/TARGET if present; crashes
# land in fuzz/artifacts/TARGET/. Exit status is libFuzzer's: non-zero on a crash.
#
# --all runs every target for SECONDS each, one after another (a target that crashes does not
# stop the others), keeps each run's output in artifacts/logs-DATE/TARGET.log, and prints a
# summary: target, runs (stat::number_of_executed_units), corpus (files/bytes), coverage (cov and
# ft from libFuzzer's last status line), crashes (inputs libFuzzer wrote) and the exit status.
# It exits non-zero if any target crashed or failed to build.
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

# `run.sh --all SECONDS` fuzzes every target and sums up (see above).
if [[ "${1:-}" == "--all" ]]; then
    seconds=${2:?usage: fuzz/run.sh --all SECONDS [libFuzzer flags...]}
    shift 2
    here=$(cd "$(dirname "$0")" && pwd)
    logs="$here/artifacts/logs-$(date -u +%Y%m%dT%H%M%SZ)"
    mkdir -p "$logs"
    summary=$(printf '%-18s %12s %16s %8s %8s %8s  %s' target runs corpus cov ft crashes status)
    failed=0
    for t in $("$here/run.sh" --list); do
        log="$logs/$t.log"
        status=ok
        "$here/run.sh" "$t" "$seconds" "$@" >"$log" 2>&1 || { status="exit $?"; failed=1; }
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
        last=$(grep -E '^#[0-9]+.* cov: ' "$log" | tail -n 1 || true)
        cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
        ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
        corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9]*[A-Za-z]*\).*/\1/p' <<<"$last")
        crashes=$(grep -c 'Test unit written to' "$log" || true)
        if ! grep -q '^#[0-9]' "$log"; then
            status="$status (did not run: see $log)"
        fi
        line=$(printf '%-18s %12s %16s %8s %8s %8s  %s' "$t" "${runs:--}" "${corp:--}" \
            "${cov:--}" "${ft:--}" "$crashes" "$status")
        echo "$line" >&2
        summary+=$'\n'"$line"
    done
    echo "$summary"
    echo "logs: $logs"
    exit "$failed"
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
