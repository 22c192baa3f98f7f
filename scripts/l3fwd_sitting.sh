#!/bin/bash
# One l3fwd sitting: RUNS interleaved runs of each binary given, on the generated 500k-route
# table (the default) and on the real tier1 table, 10M packets each, under the bench lock;
# then a summary (median Mpps by the wall clock and by the forwarding thread's CPU time,
# range, median cycles/packet per node) as JSON on stdout.
#
#   scripts/l3fwd_sitting.sh OUTDIR RUNS name=path/to/l3fwd[@extra args] [...] > summary.json
#
# `@` adds arguments to one variant, e.g. `p0=target/release/examples/l3fwd@--prefetch 0`.
#
# e.g. scripts/l3fwd_sitting.sh /tmp/l3sit 9 base=/tmp/l3fwd-base new=target/release/examples/l3fwd
set -euo pipefail
out=$1; runs=$2; shift 2
T1=${TIER1:-$(dirname "$0")/../../shared/data/routes/tier1-fulltable-ipv4.txt.xz}
mkdir -p "$out"
for i in $(seq 1 "$runs"); do
  for nb in "$@"; do
    name=${nb%%=*}; spec=${nb#*=}; bin=${spec%%@*}; extra=()
    if [ "$spec" != "$bin" ]; then read -r -a extra <<< "${spec#*@}"; fi
    flock /tmp/pktvec-bench.lock "$bin" -n 10000000 "${extra[@]}" --json > "$out/gen.$name.$i.json" 2>/dev/null
    if [ -f "$T1" ]; then
      flock /tmp/pktvec-bench.lock "$bin" -n 10000000 "${extra[@]}" --routes "$T1" --json > "$out/tier1.$name.$i.json" 2>/dev/null
    fi
    echo "run $i $name done" >&2
  done
done
python3 - "$out" "$@" <<'PY'
import json, statistics as s, collections, glob, sys
d, names = sys.argv[1], [a.split('=')[0] for a in sys.argv[2:]]
res = {}
for tab in ['gen', 'tier1']:
    for v in names:
        rows, mpps, cpu = collections.defaultdict(list), [], []
        for f in sorted(glob.glob(f'{d}/{tab}.{v}.*.json'), key=lambda x: int(x.split('.')[-2])):
            j = json.load(open(f))
            mpps.append(round(j['mpps'], 3))
            if 'mpps_cpu' in j:  # packets per second of the forwarding thread's CPU time
                cpu.append(round(j['mpps_cpu'], 3))
            for r in j['runtime']['rows']:
                if r['packets'] > 100000:
                    rows[r['name']].append(r['cycles'] / r['packets'])
        if mpps:
            res.setdefault(tab, {})[v] = {
                'mpps_runs': mpps, 'mpps_median': round(s.median(mpps), 2),
                'mpps_cpu_runs': cpu, 'mpps_cpu_median': round(s.median(cpu), 2) if cpu else None,
                'cycles_per_packet_median': {k: round(s.median(x), 1) for k, x in rows.items()}}
print(json.dumps(res, indent=1))
PY
