#!/usr/bin/env python3
"""Focused A/B: dpdk-testpmd io forwarding (mbufs packed) against our dpdk_io variants on
net_null0 + net_null1 at rx bursts of 32, with runs of the same length (testpmd --secs,
ours -n packets, about as long), in an order rotated by the rep. One rep per call, so
that each call can hold the bench lock on its own; --merge summarises the reps.

    cargo build --release --features dpdk --example dpdk_io
    for i in $(seq 0 9); do flock /tmp/pktvec-bench.lock python3 scripts/dpdk_ab.py \
        --target target/release/examples --rep $i --json /tmp/ab-$i.json; done
    python3 scripts/dpdk_ab.py --merge /tmp/ab-*.json --json docs/results/dpdk-s12-ab.json \
        --svg docs/results/dpdk-s12-ab.svg

Variants: raw hand-over (rx lends its mbufs straight to tx) at vectors of 256, 128 and 64,
and every packet through the buffer pool (`--adopt`) at 256. Needs Debian's dpdk-dev
(dpdk-testpmd), libdpdk-dev and gcc (for the packed-pool shim of dpdk_bench.py).
"""
import argparse, json, os, statistics, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dpdk_bench as bench  # noqa: E402  (testpmd, ours_io, run, tsc_hz)
from ratio_svg import ratio_plot  # noqa: E402

VDEVS = ['net_null0', 'net_null1']
VARIANTS = [('raw256', 256, False), ('raw128', 128, False), ('raw64', 64, False), ('adopt256', 256, True)]
# With --old-target: the raw hand-over of another build (the baseline), in the same reps.
OLD_VARIANTS = [('old_raw256', 256, False), ('old_raw128', 128, False)]
LABELS = {'raw256': 'raw, V 256', 'raw128': 'raw, V 128', 'raw64': 'raw, V 64', 'adopt256': 'adopted, V 256',
          'old_raw256': 'old raw, V 256', 'old_raw128': 'old raw, V 128'}


def l3fwd_null(target, rep, n):
    """Our l3fwd over the same net_null pair (10,000 routes): net_null delivers zeroed
    64-byte frames, so every packet ends at ethernet-input as "unknown ethertype" (rx,
    parse, drop: not forwarding). Cycles a packet from wall time."""
    eal = (f'--no-huge -m 1024 --no-pci -l 1 --file-prefix=abl{rep} --log-level=error '
           + ' '.join(f'--vdev={v}' for v in VDEVS))
    out = bench.run([f'{target}/l3fwd', '-n', str(n), '--route-count', '10000', '--json', '--dpdk', eal])
    j = json.loads(out[out.index('{'):])
    return j['seconds'] * bench.TSC_HZ / j['packets']


def one_rep(target, rep, secs, n, with_l3fwd, old_target=None):
    bench.TSC_HZ = bench.tsc_hz()
    tasks = [('testpmd_packed', lambda: bench.testpmd(VDEVS, f'abt{rep}', 32, secs, packed=True)['cycles_per_packet'])]
    runs = [(t, x) for t, x in [(target, VARIANTS), (old_target, OLD_VARIANTS)] if t]
    for tgt, variants in runs:
        for name, v, adopt in variants:
            tasks.append((name, lambda v=v, adopt=adopt, name=name, tgt=tgt: bench.ours_io(
                tgt, VDEVS, f'ab{name}{rep}', v, 32, n, adopt=adopt)['wall_cycles_per_packet']))
    if with_l3fwd:
        tasks.append(('l3fwd_null', lambda: l3fwd_null(target, rep, n // 2)))
    k = rep % len(tasks)
    out = {}
    for name, f in tasks[k:] + tasks[:k]:
        out[name] = f()
    return out


def summarise(reps):
    s = {}
    tp = [r['testpmd_packed'] for r in reps]
    s['testpmd_packed'] = {'median': statistics.median(tp), 'min': min(tp), 'reps': tp}
    for name in [v[0] for v in VARIANTS + OLD_VARIANTS] + ['l3fwd_null']:
        if not all(name in r for r in reps):
            continue
        xs = [r[name] for r in reps]
        per = [r[name] / r['testpmd_packed'] for r in reps]
        s[name] = {'median': statistics.median(xs), 'min': min(xs), 'reps': [round(x, 2) for x in xs],
                   'ratio_median': statistics.median(per), 'ratio_of_minima': min(xs) / min(tp),
                   'ratios': [round(x, 3) for x in per]}
    return s


def svg(summary, path):
    """Per-rep ratios to testpmd (dots) and their median (bar) per variant, with the
    target line at 1.10."""
    names = [n for n, _, _ in VARIANTS + OLD_VARIANTS if n in summary]
    colour = lambda n: '#9cd' if n.startswith('adopt') else '#c96' if n.startswith('old') else '#2a6'
    ratio_plot(path, [(LABELS[n], colour(n), summary[n]['ratio_median'], summary[n]['ratios']) for n in names],
               "io forwarding, net_null, burst 32: cycles / testpmd's (packed)",
               'per rep (dots), median (bar); runs of equal length, order rotated', 'testpmd')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--target', default=os.environ.get('CARGO_TARGET_DIR', 'target') + '/release/examples')
    ap.add_argument('--rep', type=int, default=0)
    ap.add_argument('--secs', type=int, default=5, help='testpmd run length')
    ap.add_argument('-n', type=int, default=400_000_000, help='packets per dpdk_io run (~5 s)')
    ap.add_argument('--json', required=True)
    ap.add_argument('--l3fwd', action='store_true', help='also time l3fwd over the net_null pair (all dropped)')
    ap.add_argument('--old-target', help="another build's examples directory: its raw hand-over at V 256 and 128 "
                    'in the same reps (against our own baseline)')
    ap.add_argument('--svg', help='with --merge: the plot')
    ap.add_argument('--merge', nargs='+')
    a = ap.parse_args()
    if a.merge:
        reps = [json.load(open(f))['rep'] for f in a.merge]
        res = {'reps': reps, 'summary': summarise(reps)}
        json.dump(res, open(a.json, 'w'), indent=1)
        if a.svg:
            svg(res['summary'], a.svg)
        for k, v in res['summary'].items():
            print(k, {x: (round(y, 3) if isinstance(y, float) else y) for x, y in v.items()})
        return
    r = one_rep(a.target, a.rep, a.secs, a.n, a.l3fwd, a.old_target)
    r['uptime'] = open('/proc/loadavg').read().split()[:3]
    json.dump({'rep': r}, open(a.json, 'w'), indent=1)
    print(a.rep, {k: (round(v, 1) if isinstance(v, float) else v) for k, v in r.items()}, flush=True)


main()
