#!/usr/bin/env bash
# The RSVP load generator alone: one `pathwise loadgen rsvp --role both` process playing the
# senders and the receivers in one namespace (docs/BENCHMARKS.md "Load generators"): every Path,
# Resv, PathTear and refresh goes through the kernel's raw sockets and back, with no router in
# between, so the process holds each flow twice (sender and receiver) and does both ends' work.
#
#   scripts/loadgen-solo.sh BIN FLOWS MAX_INTERVAL RAMP_INTERVAL DURATION [REFRESH]
#
# Needs root.
set -euo pipefail
BIN=$(realpath "$1"); FLOWS=$2; MAX=$3; RAMP=$4; DUR=$5; REFRESH=${6:-30s}
NS=lg-solo
trap 'ip netns del $NS 2>/dev/null || true' EXIT
ip netns add $NS
ip -n $NS link set lo up
ip -n $NS addr add 10.99.0.1/32 dev lo
ip -n $NS addr add 10.99.0.2/32 dev lo
ip netns exec $NS "$BIN" loadgen rsvp --role both --src 10.99.0.1 --dest 10.99.0.2 \
  --flows "$FLOWS" --max-interval "$MAX" --ramp-interval "$RAMP" --refresh "$REFRESH" \
  --duration "$DUR" --progress 10s --json
uptime
