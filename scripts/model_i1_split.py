#!/usr/bin/env python3
"""Measured I1 misses per packet per owner at one sweep point, next to the model's split.

Runs `ppb` under cachegrind at two run lengths (50k and 150k packets, no flush deadline
as the standard sweep: `scripts/ppb_sweep.py` CG_DEADLINE_US) and attributes each
function's I1 misses to the owners of `scripts/model_footprints.py` (a node by its
function; the monomorphised `process_dyn` wrappers, which cachegrind reports under one
name, as `process_dyn`); per packet = (150k − 50k) / 100k. With --model (a `tune --cache
--json --out` document) it prints the model's per-owner split of the same point
(`i1_replay_by_node`, `i1_lru_by_node`) alongside.

    export PATH=<dir with a valgrind wrapper taking the shared lock>:$PATH
    python3 scripts/model_i1_split.py --ppb $B/ppb --traffic realistic --batch 16 \
        --model docs/results/model-cache.json
"""
import argparse, collections, json, os, re, subprocess, sys

sys.path.insert(0, os.path.dirname(__file__))
from model_footprints import ARGS, DYN, OWNERS  # noqa: E402


def owner(fn):
    if DYN in fn:
        return 'process_dyn'
    for pat, o in OWNERS:
        if pat in fn:
            return o
    return 'other'


def run(ppb, traffic, batch, vector, n, i1, out):
    cmd = ['valgrind', '--tool=cachegrind', '--cache-sim=yes', f'--cachegrind-out-file={out}']
    if i1:
        cmd.append(f'--I1={i1},8,64')
    cmd += [ppb, '--json', '--traffic', traffic, '--batch', str(batch), '-n', str(n), '--vector-size', str(vector),
            '--deadline-us', '1e9'] + ARGS
    subprocess.run(cmd, capture_output=True, check=True)
    events, fn, per = None, None, collections.defaultdict(float)
    for line in open(out):
        if line.startswith('events:'):
            events = line.split()[1:]
        elif line.startswith('fn='):
            fn = line[3:].strip()
        elif line[:1].isdigit() and fn is not None:
            v = line.split()
            per[owner(fn)] += int(v[1 + events.index('I1mr')]) if len(v) > 1 + events.index('I1mr') else 0
    return per


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--ppb', required=True)
    ap.add_argument('--traffic', default='realistic')
    ap.add_argument('--batch', type=int, default=16, help='0: batcher off (vectors of --vector)')
    ap.add_argument('--vector', type=int, default=256)
    ap.add_argument('--i1', type=int, help='simulated L1i bytes (default: the host\'s)')
    ap.add_argument('--model', help='tune --cache JSON: print its split of the same point')
    ap.add_argument('--work', default='/tmp/model-i1-split')
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    base = f'{a.work}/{a.traffic}-{a.batch}-{a.vector}-{a.i1 or "host"}'
    lo = run(a.ppb, a.traffic, a.batch, a.vector, 50_000, a.i1, base + '-50k.out')
    hi = run(a.ppb, a.traffic, a.batch, a.vector, 150_000, a.i1, base + '-150k.out')
    meas = {o: (hi.get(o, 0) - lo.get(o, 0)) / 100_000 for o in set(lo) | set(hi)}
    model = {}
    if a.model:
        on = a.batch > 0
        b = a.batch if on else a.vector
        for r in json.load(open(a.model))['rows']:
            if (r['traffic'], r['batcher'], r['b'], r['l1i']) == (a.traffic, 'on' if on else 'off', b, a.i1 or 32768):
                model = {k: r.get(f'i1_{k}_by_node', {}) for k in ('replay', 'lru')}
    print(f'{"owner":18} {"measured":>9} ' + ' '.join(f'{k:>9}' for k in model))
    for o in sorted(set(meas) | {x for m in model.values() for x in m}, key=lambda o: -meas.get(o, 0)):
        print(f'{o:18} {meas.get(o, 0):9.4f} ' + ' '.join(f'{m.get(o, 0):9.4f}' for m in model.values()))
    print(f'{"total":18} {sum(meas.values()):9.4f} ' + ' '.join(f'{sum(m.values()):9.4f}' for m in model.values()))
    json.dump({'point': vars(a), 'measured': meas, 'model': model}, open(base + '.json', 'w'), indent=1)


if __name__ == '__main__':
    main()
