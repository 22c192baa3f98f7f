#!/usr/bin/env bash
# Runs every fuzz target for a bounded time on the stable toolchain and fails on any crash.
#
#   fuzz/run_all.sh [SECONDS_PER_TARGET] [--json PATH] [--sanitizer none|address]
#                   [--pcaps DIR] [--targets "t1 t2 ..."]
#
# SECONDS_PER_TARGET defaults to 60, the sanitizer to address. Installs nothing: needs cargo-fuzz
# (`cargo install cargo-fuzz`). Builds all targets once (`cargo fuzz build -O`, with
# RUSTC_BOOTSTRAP=1 so the stable toolchain accepts the -Z flags), writes the seed corpora
# from the captures under --pcaps (default: ../shared/data/pcap next to the repository;
# without it, only the synthetic seeds), then runs each target in turn with
# -max_total_time and -print_final_stats=1, prints one summary line per target
# (executions, executions per second, peak RSS, corpus size, ok or the crash file) and,
# with --json, writes the same as JSON. Exit status 1 if any target crashed (panic,
# sanitizer report, timeout, out of memory), 2 on a usage or build error.
#
# Inputs under fuzz/regressions/<target>/ (crashes found and fixed before) are run once
# first; any failure there counts as a crash. Crashes are saved as
# fuzz/artifacts/<target>/crash-*; each target's libFuzzer log is
# fuzz/artifacts/<target>/fuzz.log. Reproduce with
#   RUSTC_BOOTSTRAP=1 cargo fuzz run <target> -O -s <sanitizer> fuzz/artifacts/<target>/crash-...
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
secs=60
json=""
san="address"
pcaps="$repo/../shared/data/pcap"
targets="wire_parse l2fwd l3fwd ndnfwd cryptofwd ppb_l3fwd nf_acl stateful_nfs synth_pipelines"

usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --json) json="${2:?--json needs a path}"; shift 2 ;;
    --sanitizer|-s) san="${2:?--sanitizer needs none or address}"; shift 2 ;;
    --pcaps) pcaps="${2:?--pcaps needs a directory}"; shift 2 ;;
    --targets) targets="${2:?--targets needs a list}"; shift 2 ;;
    -h|--help) usage ;;
    [0-9]*) secs="$1"; shift ;;
    *) echo "run_all.sh: unknown argument $1" >&2; usage ;;
  esac
done
case "$san" in none|address) ;; *) echo "run_all.sh: sanitizer must be none or address" >&2; exit 2 ;; esac
if [ -n "$json" ]; then
  case "$json" in /*) ;; *) json="$PWD/$json" ;; esac
fi

export RUSTC_BOOTSTRAP=1
# cargo-fuzz sets RUSTFLAGS (which overrides .cargo/config.toml's target rustflags) and
# appends ours: keep the project's x86-64-v2 baseline (popcnt in the IPv4 LPM), as the
# library is built and measured.
export RUSTFLAGS="${RUSTFLAGS:--C target-cpu=x86-64-v2}"
cd "$here"
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "run_all.sh: cargo-fuzz is not installed (cargo install cargo-fuzz)" >&2
  exit 2
fi

t0=$(date +%s)
echo "fuzz: building all targets (cargo fuzz build -O -s $san)"
if ! cargo fuzz build -O -s "$san"; then
  echo "run_all.sh: build failed" >&2
  exit 2
fi
bin="$here/target/x86_64-unknown-linux-gnu/release"
echo "fuzz: built in $(( $(date +%s) - t0 )) s"

if [ -d "$pcaps" ]; then
  echo "fuzz: seeding corpora from $pcaps"
else
  echo "fuzz: no capture directory $pcaps: synthetic seeds only"
fi
# shellcheck disable=SC2086
"$bin/seed_corpus" "$pcaps" "$here/corpus" $targets 2>&1 | grep -v '^WARNING: Failed to find function'
if [ "${PIPESTATUS[0]}" -ne 0 ]; then
  echo "run_all.sh: seeding failed" >&2
  exit 2
fi

failed=0
total=0
rows=""
summary=""
for t in $targets; do
  art="$here/artifacts/$t"
  mkdir -p "$art" "$here/corpus/$t"
  before="$(ls "$art" | grep -E '^(crash|leak|timeout|oom|slow-unit)-' | sort)"
  start=$(date +%s)
  rc=0
  # Inputs of crashes found before (committed under fuzz/regressions/<target>/), once each.
  if [ -n "$(ls -A "$here/regressions/$t" 2>/dev/null)" ]; then
    "$bin/$t" "$here/regressions/$t"/* -timeout=20 >"$art/regressions.log" 2>&1 || {
      rc=$?
      cat "$art/regressions.log" >"$art/fuzz.log"
    }
  fi
  if [ $rc -eq 0 ]; then
    "$bin/$t" "$here/corpus/$t" -max_total_time="$secs" -print_final_stats=1 -timeout=20 \
      -rss_limit_mb=4096 -artifact_prefix="$art/" >"$art/fuzz.log" 2>&1
    rc=$?
  fi
  took=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$art/fuzz.log" | tail -1)
  eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$art/fuzz.log" | tail -1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$art/fuzz.log" | tail -1)
  execs=${execs:-0}; eps=${eps:-0}; rss=${rss:-0}
  corpus=$(ls "$here/corpus/$t" | wc -l)
  new="$(comm -13 <(printf '%s\n' "$before") <(ls "$art" | grep -E '^(crash|leak|timeout|oom|slow-unit)-' | sort) | grep -v '^$' | grep -v '^slow-unit-' || true)"
  total=$(( total + execs ))
  if [ $rc -ne 0 ] || [ -n "$new" ]; then
    failed=1
    status="CRASH rc=$rc ${new:+($(echo $new | tr ' ' ','))}"
    echo "---- $t: last lines of $art/fuzz.log"
    grep -v '^#[0-9]' "$art/fuzz.log" | tail -40
  else
    status="ok"
  fi
  line="fuzz: $t: $execs executions in $took s ($eps/s), peak rss $rss MB, corpus $corpus files: $status"
  echo "$line"
  summary="$summary$line"$'\n'
  crashed=$([ "$status" = ok ] && echo false || echo true)
  arts=$(printf '%s\n' $new | grep -v '^$' | sed "s|^|\"artifacts/$t/|; s|$|\"|" | paste -sd, -)
  rows="$rows${rows:+,}
    {\"target\": \"$t\", \"executions\": $execs, \"exec_per_sec\": $eps, \"seconds\": $took, \"peak_rss_mb\": $rss, \"corpus_files\": $corpus, \"crashed\": $crashed, \"exit_code\": $rc, \"artifacts\": [${arts}]}"
done

echo
printf '%s' "$summary"
echo "fuzz: $total executions in all, sanitizer $san, $secs s per target, $(( $(date +%s) - t0 )) s with the build: $([ $failed -eq 0 ] && echo ok || echo FAILED)"
if [ -n "$json" ]; then
  cat >"$json" <<EOF
{
  "sanitizer": "$san",
  "seconds_per_target": $secs,
  "rustc": "$(rustc --version)",
  "total_executions": $total,
  "ok": $([ $failed -eq 0 ] && echo true || echo false),
  "targets": [$rows
  ]
}
EOF
  echo "fuzz: wrote $json"
fi
exit $failed
