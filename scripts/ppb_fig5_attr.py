#!/usr/bin/env python3
"""Where seed 001 Fig. 5's misses move with the batcher: per-function I1/D1 misses per packet
of l3fwd (alternating IPv4/IPv6), the batcher off with vectors of B vs on at batch B, under
cachegrind (deterministic; (150k - 50k packets) / 100k, so set-up cancels), grouped into
per-path nodes, ethernet-input, the batcher, rx and the shared rest.

    cargo build --release --example ppb
    flock -s /tmp/pktvec-bench.lock python3 scripts/ppb_fig5_attr.py --target target/release/examples
    # the D1 capacity check: a 128 KiB L1d and buffers of an odd number of cache lines
    python3 scripts/ppb_fig5_attr.py --sim=--D1=131072,8,64 --ppb-arg=--data-room=2112
"""
import argparse, collections, os, re, subprocess, tempfile

def run(a, batch, vector, n, out):
    cmd = ['valgrind', '--tool=cachegrind', '--cache-sim=yes', f'--cachegrind-out-file={out}'] + a.sim
    cmd += [f'{a.target}/ppb', '--json', '--traffic', a.traffic, '--batch', str(batch), '-n', str(n),
            '--vector-size', str(vector), '--route-count', '20000', '--route6-count', '5000',
            '--pregen', '4096'] + a.ppb_arg
    subprocess.run(cmd, capture_output=True, check=True)

def load(path):
    ev, fn, per = None, None, collections.defaultdict(collections.Counter)
    for line in open(path):
        if line.startswith('events:'):
            ev = line.split()[1:]
        elif line.startswith('fn='):
            fn = line[3:].strip()
        elif fn and line[:1].isdigit():
            for e, v in zip(ev, line.split()[1:]):
                per[fn][e] += int(v)
    return per

def category(f):
    if re.search(r'Ip[46](Input|Lookup|Rewrite)|Lpm4::lookup_vector|Lpm6::lookup', f):
        return 'per-path nodes'
    if re.search(r'Ethernet|ethernet_input', f):
        return 'ethernet-input'
    if 'DynNode>::process_dyn' in f:
        return 'process_dyn (batcher process + dispatch)'
    if 'ReplaySource' in f or 'memcpy' in f:
        return 'rx (ReplaySource, memcpy)'
    if 'pktvec_batcher' in f or 'arc_swap' in f:
        return 'batcher (out of line)'
    return 'shared (output, pool, graph)'

def per_packet(a, batch, vector, tmp):
    res = {}
    for n in (50_000, 150_000):
        out = os.path.join(tmp, f'cg.{batch}.{n}')
        run(a, batch, vector, n, out)
        res[n] = load(out)
    cats = collections.defaultdict(collections.Counter)
    for f in set(res[50_000]) | set(res[150_000]):
        lo, hi = res[50_000][f], res[150_000][f]
        c = category(f)
        for e in ('I1mr', 'D1mr', 'D1mw'):
            cats[c][e] += (hi[e] - lo[e]) / 100_000
    return cats

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--target', default=os.environ.get('CARGO_TARGET_DIR', 'target') + '/release/examples')
    ap.add_argument('--traffic', default='alternating')
    ap.add_argument('--batch', type=int, default=128)
    ap.add_argument('--sim', action='append', default=[], help='more cachegrind options')
    ap.add_argument('--ppb-arg', action='append', default=[], help='more ppb options')
    a = ap.parse_args()
    if not a.sim:
        a.sim = ['--I1=8192,8,64']
    with tempfile.TemporaryDirectory() as tmp:
        off = per_packet(a, 0, a.batch, tmp)
        on = per_packet(a, a.batch, 256, tmp)
    for name, get in (('I1', lambda c: c['I1mr']), ('D1', lambda c: c['D1mr'] + c['D1mw'])):
        t_off, t_on = sum(get(c) for c in off.values()), sum(get(c) for c in on.values())
        rel = f' ({(t_on / t_off - 1) * 100:+.1f}%)' if t_off > 0 else ''
        print(f'{name} misses per packet: off {t_off:.3f}, on {t_on:.3f}{rel}')
        for k in sorted(set(off) | set(on), key=lambda k: -abs(get(on[k]) - get(off[k]))):
            print(f'  {get(off[k]):7.3f} {get(on[k]):7.3f} {get(on[k]) - get(off[k]):+7.3f}  {k}')

if __name__ == '__main__':
    main()
