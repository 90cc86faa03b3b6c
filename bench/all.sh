#!/usr/bin/env bash
# Every benchmark of the project, one after the other, each printing its figures beside its
# baseline (bench/README.md, and the doc each one names). CI runs this after the tests so a
# regression shows in the log the day it lands; the figures are read, not asserted (the terminal
# UI's bench and the dashboard's also fail when a target they count, not time, is missed).
#
#   bash bench/all.sh            # everything (about 20 minutes on 2 cores, most of it building)
#   bash bench/all.sh store mcp  # only the named ones
#
# Names: store bash_call parse fanout worker mcp routing compaction tui history temporal agents flow.
set -euo pipefail
cd "$(dirname "$0")/.."

all=(store bash_call parse fanout worker mcp routing compaction tui history temporal agents flow)
wanted=("$@")
if [ ${#wanted[@]} -eq 0 ]; then
  wanted=("${all[@]}")
fi

run() {
  echo
  echo "== bench $1: ${*:2}"
  local start=$SECONDS
  "${@:2}"
  echo "== bench $1: $((SECONDS - start)) s"
}

# The release binaries the Python benches start, copied aside at once: a `cargo bench` of
# baton-cli builds its own `baton` (with the features its dev-dependencies add, and so without
# the code order of text-order.txt fitting it) into the same target/release/baton, and a later
# `cargo build --release` that finds nothing to rebuild does not put the release one back.
bins="$PWD/target/bench-bin"
needs_binary=0
for name in "${wanted[@]}"; do
  case "$name" in agents | flow) needs_binary=1 ;; esac
done
if [ "$needs_binary" = 1 ]; then
  # Two builds, not one: built together, baton-cli takes the features baton-testkit's
  # dependencies add, and the code order of text-order.txt no longer fits it.
  cargo build --release -p baton-testkit --bins
  cargo build --release -p baton-cli
  mkdir -p "$bins"
  # Copied beside, then renamed over: a copy made in place fails while a process started from
  # the old file (a worker, a mock) still runs.
  for b in baton baton-mock; do
    cp target/release/$b "$bins/$b.new"
    mv -f "$bins/$b.new" "$bins/$b"
  done
fi

for name in "${wanted[@]}"; do
  case "$name" in
    store) run store cargo bench -p baton-workflow --bench store ;;
    bash_call) run bash_call cargo bench -p baton-agent --bench bash_call ;;
    parse) run parse cargo bench -p baton-exec --bench parse ;;
    fanout) run fanout cargo bench -p baton-exec --bench fanout ;;
    worker) run worker cargo bench -p baton-cli --bench worker ;;
    mcp) run mcp cargo bench -p baton-cli --bench mcp ;;
    routing) run routing cargo bench -p baton-cli --bench routing ;;
    compaction) run compaction cargo bench -p baton-cli --bench compaction ;;
    tui) run tui cargo bench -p baton-tui ;;
    history) run history cargo bench -p baton-web --bench history ;;
    temporal) run temporal cargo bench -p baton-cli --features temporal --bench temporal ;;
    agents) run agents python3 bench/agents.py --agents baton --runs 20 --baton "$bins/baton" --mock "$bins/baton-mock" ;;
    flow) run flow python3 bench/flow.py --runs 2 --baton "$bins/baton" ;;
    *)
      echo "bench/all.sh: no benchmark named $name (the names: ${all[*]})" >&2
      exit 2
      ;;
  esac
done
