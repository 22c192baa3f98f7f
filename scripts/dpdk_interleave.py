#!/usr/bin/env python3
"""The graph's rx and tx nodes against testpmd's io loop, in one process: `dpdk_io
--interleave` forwards through the graph on net_null0 <-> net_null1 and through
`IoForward` (testpmd's `pkt_burst_io_forward`: rx burst, tx burst, free the refused) on
net_null2 <-> net_null3, same mempool, same core, in pairs of alternating slices a fraction
of a second apart. Each variant is one process; the ratio per pair cancels the machine's
slow drift, which separate processes seconds apart do not (±20% per rep here).

    cargo build --release --features dpdk --example dpdk_io
    flock /tmp/pktvec-bench.lock python3 scripts/dpdk_interleave.py \\
        --target target/release/examples --sets 3 \\
        --json docs/results/dpdk-s13-interleave.json --svg docs/results/dpdk-s13-interleave.svg

Variants: raw hand-over at vectors of 256, 128, 64 and 32; every packet through the buffer
pool (`--adopt`) at 256; with and without clock reads; `_all`: the tx nodes run after every
port was polled (`--input-drain after-all`) instead of right after the rx node that filled
a vector (the default since session 14). Bursts of 32 on both sides.
"""
import argparse, json, os, statistics, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ratio_svg import ratio_plot  # noqa: E402

# name: (vector size, dpdk_io flags, plot label)
VARIANTS = {
    'raw256': (256, [], 'raw, V 256'),
    'raw128': (128, [], 'raw, V 128'),
    'raw64': (64, [], 'raw, V 64'),
    'raw32': (32, [], 'raw, V 32'),
    'adopt256': (256, ['--adopt'], 'adopted, V 256'),
    # Instrumentation alike on both sides: neither reads the clock (graph without
    # GraphConfig::node_cycles, the io loop as testpmd without --record-core-cycles), or
    # both do (the io loop with testpmd's --record-core-cycles).
    'raw128_noclk': (128, ['--no-node-cycles'], 'raw, V 128, no clocks'),
    'raw256_noclk': (256, ['--no-node-cycles'], 'raw, V 256, no clocks'),
    'raw128_rec': (128, ['--record-core-cycles'], 'raw, V 128, both clocks'),
    'raw256_rec': (256, ['--record-core-cycles'], 'raw, V 256, both clocks'),
    'adopt256_rec': (256, ['--adopt', '--record-core-cycles'], 'adopted, V 256, both clocks'),
    # Session 14: the tx nodes run after every port was polled (VPP's order, the default
    # before GraphConfig::input_drain), against the default when-full (right after the rx
    # node that filled a vector: one port's mbufs in flight, not both ports').
    'raw256_noclk_all': (256, ['--no-node-cycles', '--input-drain', 'after-all'], 'raw, V 256, no clocks, after all'),
    'raw128_noclk_all': (128, ['--no-node-cycles', '--input-drain', 'after-all'], 'raw, V 128, no clocks, after all'),
    'raw256_all': (256, ['--input-drain', 'after-all'], 'raw, V 256, after all'),
    'raw256_rec_all': (256, ['--record-core-cycles', '--input-drain', 'after-all'], 'raw, V 256, both clocks, after all'),
    'adopt256_all': (256, ['--adopt', '--input-drain', 'after-all'], 'adopted, V 256, after all'),
    'raw64_noclk': (64, ['--no-node-cycles'], 'raw, V 64, no clocks'),
}
DEFAULT = ['raw256', 'raw128', 'raw64', 'raw32', 'adopt256']


def one(target, name, v, flags, pairs, slice_, tag):
    eal = (f'--no-huge -m 1024 --no-pci -l 1 --file-prefix=il{tag}{name} --log-level=error '
           '--vdev=net_null0 --vdev=net_null1 --vdev=net_null2 --vdev=net_null3')
    cmd = [f'{target}/dpdk_io', '--interleave', str(pairs), '--slice', str(slice_),
           '--vector-size', str(v), '--rx-burst', '32', '--json', '--eal', eal] + flags
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    # dpdk_io fails if conservation does not balance or an mbuf is missing from the mempool.
    if p.returncode != 0 or '{' not in p.stdout:
        sys.exit(f'dpdk_io failed: {" ".join(cmd)}\n{p.stdout[-2000:]}{p.stderr[-2000:]}')
    return json.loads(p.stdout[p.stdout.index('{'):])['interleave']


def svg(summary, names, path):
    """Per-pair ratios (dots) and their median (bar) per variant, target line at 1.10."""
    def colour(n):
        if n.endswith('_all'):
            return '#bbb' if n.startswith('raw') else '#ccc'
        if n.endswith('_rec') or n.endswith('_noclk'):
            return '#7b9' if n.startswith('raw') else '#acd'
        return '#9cd' if n.startswith('adopt') else '#2a6'
    ratio_plot(path, [(VARIANTS[n][2], colour(n), summary[n]['ratio_median'], summary[n]['ratios']) for n in names],
               "graph / testpmd's io loop, same process, net_null, burst 32",
               'cycles a packet, per pair of alternating slices (dots), median (bar)', 'io loop',
               decimals=3, dot=1.6, ymax_at_least=1.3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--target', default='target/release/examples')
    ap.add_argument('--pairs', type=int, default=40)
    ap.add_argument('--slice', type=int, default=10_000_000)
    ap.add_argument('--sets', type=int, default=1, help='runs of every variant, one after the other')
    ap.add_argument('--variants', default=','.join(DEFAULT), help=f'comma-separated, of {", ".join(VARIANTS)}')
    ap.add_argument('--json', required=True)
    ap.add_argument('--svg')
    a = ap.parse_args()
    names = a.variants.split(',')
    runs = {n: [] for n in names}
    for s in range(a.sets):
        for name in names:
            v, flags, _ = VARIANTS[name]
            r = one(a.target, name, v, flags, a.pairs, a.slice, s)
            runs[name].append(r)
            print(f'set {s} {name}: median ratio {r["ratio_median"]:.3f}, ratio of medians '
                  f'{r["ratio_of_medians"]:.3f} (graph {statistics.median(r["graph"]):.2f}, '
                  f'io loop {statistics.median(r["io_loop"]):.2f} cycles/packet)', flush=True)
    summary = {}
    for name in names:
        rs = [x for r in runs[name] for x in r['ratios']]
        g = [x for r in runs[name] for x in r['graph']]
        lp = [x for r in runs[name] for x in r['io_loop']]
        q = statistics.quantiles(rs, n=4)
        summary[name] = {'ratio_median': statistics.median(rs), 'ratio_quartiles': [q[0], q[2]],
                         'ratio_of_medians': statistics.median(g) / statistics.median(lp),
                         'per_set_ratio_median': [r['ratio_median'] for r in runs[name]],
                         'graph_median': statistics.median(g), 'io_loop_median': statistics.median(lp),
                         'ratios': [round(x, 4) for x in rs]}
        s = summary[name]
        print(f'{name}: median of {len(rs)} pair ratios {s["ratio_median"]:.3f} (quartiles '
              f'{q[0]:.3f}-{q[2]:.3f}), per set {[round(x, 3) for x in s["per_set_ratio_median"]]}, '
              f'ratio of medians {s["ratio_of_medians"]:.3f}')
    json.dump({'pairs': a.pairs, 'slice': a.slice, 'sets': a.sets, 'summary': summary, 'runs': runs},
              open(a.json, 'w'), indent=1)
    if a.svg:
        svg(summary, names, a.svg)


main()
