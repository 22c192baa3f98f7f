#!/usr/bin/env python3
"""Focused A/B: dpdk-testpmd io forwarding (mbufs packed) against our dpdk_io variants on
net_null0 + net_null1 at rx bursts of 32, with runs of the same length (testpmd --secs,
ours -n packets, about as long), in an order rotated by the rep. One rep per call, so
that each call can hold the bench lock on its own; --merge summarises the reps.

    cargo build --release --features dpdk --example dpdk_io
    for i in $(seq 0 9); do flock /tmp/pktvec-bench.lock python3 scripts/dpdk_ab.py \
        --target target/release/examples --rep $i --json /tmp/ab-$i.json; done
    python3 scripts/dpdk_ab.py --merge /tmp/ab-*.json --json docs/results/dpdk-s12-ab.json

Variants: raw hand-over (rx lends its mbufs straight to tx) at vectors of 256, 128 and 64,
and every packet through the buffer pool (`--adopt`) at 256. Needs Debian's dpdk-dev
(dpdk-testpmd), libdpdk-dev and gcc (for the packed-pool shim of dpdk_bench.py).
"""
import argparse, json, os, statistics, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# dpdk_bench.py runs its main() on import; take its helpers without running it.
_src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'dpdk_bench.py')).read()
_bench = {'__name__': 'dpdk_bench_lib', '__file__': os.path.join(os.path.dirname(os.path.abspath(__file__)), 'dpdk_bench.py')}
exec(compile(_src.rsplit('\nmain()', 1)[0], 'dpdk_bench.py', 'exec'), _bench)

VDEVS = ['net_null0', 'net_null1']
VARIANTS = [('raw256', 256, False), ('raw128', 128, False), ('raw64', 64, False), ('adopt256', 256, True)]


def one_rep(target, rep, secs, n):
    _bench['TSC_HZ'] = _bench['tsc_hz']()
    tasks = [('testpmd_packed', lambda: _bench['testpmd'](VDEVS, f'abt{rep}', 32, secs, packed=True)['cycles_per_packet'])]
    for name, v, adopt in VARIANTS:
        tasks.append((name, lambda v=v, adopt=adopt, name=name: _bench['ours_io'](
            target, VDEVS, f'ab{name}{rep}', v, 32, n, adopt=adopt)['wall_cycles_per_packet']))
    k = rep % len(tasks)
    out = {}
    for name, f in tasks[k:] + tasks[:k]:
        out[name] = f()
    return out


def summarise(reps):
    s = {}
    tp = [r['testpmd_packed'] for r in reps]
    s['testpmd_packed'] = {'median': statistics.median(tp), 'min': min(tp), 'reps': tp}
    for name, _, _ in VARIANTS:
        xs = [r[name] for r in reps]
        per = [r[name] / r['testpmd_packed'] for r in reps]
        s[name] = {'median': statistics.median(xs), 'min': min(xs), 'reps': [round(x, 2) for x in xs],
                   'ratio_median': statistics.median(per), 'ratio_of_minima': min(xs) / min(tp),
                   'ratios': [round(x, 3) for x in per]}
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--target', default=os.environ.get('CARGO_TARGET_DIR', 'target') + '/release/examples')
    ap.add_argument('--rep', type=int, default=0)
    ap.add_argument('--secs', type=int, default=5, help='testpmd run length')
    ap.add_argument('-n', type=int, default=400_000_000, help='packets per dpdk_io run (~5 s)')
    ap.add_argument('--json', required=True)
    ap.add_argument('--merge', nargs='+')
    a = ap.parse_args()
    if a.merge:
        reps = [json.load(open(f))['rep'] for f in a.merge]
        res = {'reps': reps, 'summary': summarise(reps)}
        json.dump(res, open(a.json, 'w'), indent=1)
        for k, v in res['summary'].items():
            print(k, {x: (round(y, 3) if isinstance(y, float) else y) for x, y in v.items()})
        return
    r = one_rep(a.target, a.rep, a.secs, a.n)
    r['uptime'] = open('/proc/loadavg').read().split()[:3]
    json.dump({'rep': r}, open(a.json, 'w'), indent=1)
    print(a.rep, {k: (round(v, 1) if isinstance(v, float) else v) for k, v in r.items()}, flush=True)


main()
