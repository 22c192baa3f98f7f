#!/usr/bin/env python3
"""Seed 001 Fig. 5 in software: I1/D1 misses per packet (cachegrind, deterministic) and
cycles per packet (TSC) of l3fwd behind the path-based batcher, off and at batch sizes
1..256, on alternating, realistic and single-path traffic; added latency per batch size
and flush deadline. Writes docs/results/batcher.json and the SVG plots.

    cargo build --release --example ppb
    flock /tmp/pktvec-bench.lock python3 scripts/ppb_sweep.py --target target/release/examples

--only ab: the batcher off and on in one process (`ppb --ab`), taking turns in chunks, timed
by the thread's CPU time; per traffic, the median over --reps runs of each run's median
paired ratio on/off (--base-target: the same with an older build, alternating with this one).
"""
import argparse, json, os, re, statistics, subprocess

BATCHES = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256]

# The batcher's flush deadline for the cachegrind runs, microseconds: one that never
# expires. The deadline is wall-clock time (TSC): natively ppb's 100 us are ~1,000 packets,
# far more than a receive round, so queues fill to b. Under valgrind (20-50x slower,
# ~20 us per packet, more when the machine is loaded) the same 100 us are ~2-5 packets:
# whether a queue fills to b or is flushed partial every receive round then depends on
# valgrind's speed, i.e. on the machine's load, and the batcher-on points are not
# reproducible. With no deadline the runs are deterministic (same vectors every time) and
# show the native behaviour; the batcher has no packet-count deadline to use instead.
CG_DEADLINE_US = 1e9

def ppb(target, args):
    out = subprocess.run([f'{target}/ppb', '--json'] + args, capture_output=True, text=True, check=True).stdout
    return json.loads(out[out.index('{'):])

def cachegrind(target, traffic, batch, n, i1, vector=256, deadline_us=None):
    cmd = ['valgrind', '--tool=cachegrind', '--cache-sim=yes', '--cachegrind-out-file=/dev/null']
    if i1:
        cmd.append(f'--I1={i1},8,64')
    cmd += [f'{target}/ppb', '--json', '--traffic', traffic, '--batch', str(batch), '-n', str(n),
            '--vector-size', str(vector),
            '--route-count', '20000', '--route6-count', '5000', '--pregen', '4096']
    if deadline_us is not None:
        cmd += ['--deadline-us', str(deadline_us)]
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    get = lambda k: int(re.search(rf'{k}\s+([\d,]+)', p.stderr).group(1).replace(',', ''))
    out = {'I1': get('I1  misses:'), 'D1': get('D1  misses:'), 'Ir': get('I   refs:')}
    # The nodes' calls and packets in this run (runtime stats): the vectors the batcher
    # actually formed (with a deadline that expires, e.g. --cg-deadline-us 100, under
    # valgrind far sooner in packets than natively), for the model's cache side (`tune --cache`).
    j = json.loads(p.stdout[p.stdout.index('{'):])
    for r in j['runtime']['rows']:
        out[f"calls:{r['name']}"] = r['calls']
        out[f"packets:{r['name']}"] = r['packets']
    return out

def line_svg(path, title, ylabel, series, xs):
    """series: {label: [y per x]} (None = missing); x on a log2 axis, 'off' at the left."""
    W, H, L, B, T = 640, 380, 70, 50, 34
    ys = [y for s in series.values() for y in s if y is not None]
    ymax = max(ys) * 1.1 if ys else 1
    px = lambda i: L + (W - L - 20) * i / (len(xs) - 1)
    py = lambda v: H - B - (H - B - T) * v / ymax
    colors = ['#2a6', '#c33', '#36c', '#a6a', '#888']
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
         f'<text x="{W/2}" y="18" text-anchor="middle" font-size="14">{title}</text>',
         f'<line x1="{L}" y1="{H-B}" x2="{W-10}" y2="{H-B}" stroke="black"/><line x1="{L}" y1="{T}" x2="{L}" y2="{H-B}" stroke="black"/>',
         f'<text x="14" y="{(H-B+T)/2}" transform="rotate(-90 14 {(H-B+T)/2})" text-anchor="middle">{ylabel}</text>',
         f'<text x="{(W+L)/2}" y="{H-8}" text-anchor="middle">batch size (off = batcher off)</text>']
    for k in range(5):
        v = ymax * k / 4
        o.append(f'<line x1="{L}" y1="{py(v)}" x2="{W-10}" y2="{py(v)}" stroke="#ddd"/><text x="{L-6}" y="{py(v)+4}" text-anchor="end">{v:.3g}</text>')
    for i, x in enumerate(xs):
        o.append(f'<text x="{px(i)}" y="{H-B+16}" text-anchor="middle">{"off" if x == 0 else x}</text>')
    for j, (lab, s) in enumerate(series.items()):
        c = colors[j % len(colors)]
        pts = [(px(i), py(y)) for i, y in enumerate(s) if y is not None]
        o.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in pts)}"/>')
        o += [f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{c}"/>' for a, b in pts]
        o.append(f'<rect x="{W-200}" y="{T+4+16*j}" width="10" height="10" fill="{c}"/><text x="{W-186}" y="{T+13+16*j}">{lab}</text>')
    o.append('</svg>')
    open(path, 'w').write('\n'.join(o))

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--target', default=os.environ.get('CARGO_TARGET_DIR', 'target') + '/release/examples')
    ap.add_argument('--json', default='docs/results/batcher.json')
    ap.add_argument('--svg-prefix', default='docs/results/batcher')
    ap.add_argument('--reps', type=int, default=3)
    ap.add_argument('-n', type=int, default=4_000_000)
    ap.add_argument('--base-target', help='--only ab: an older build to alternate with')
    ap.add_argument('--configs', default='0,0/128,128,256',
                    help='--only ab: the configurations (ppb --ab; the first is the reference)')
    ap.add_argument('--traffics', default='single,alternating,realistic', help='--only ab: traffics')
    ap.add_argument('--key', default='ab', help='--only ab: the key of batcher.json to write')
    ap.add_argument('--one-graph', action='store_true', help='--only ab: ppb --ab-one-graph')
    ap.add_argument('--only', choices=['cachegrind', 'native', 'focus', 'ab'],
                    help='run one half and merge it into the existing --json file')
    ap.add_argument('--batches', type=lambda t: [int(x) for x in t.split(',')], default=BATCHES,
                    help='cachegrind: only these batch sizes (merged into the existing --json file)')
    ap.add_argument('--cg-deadline-us', type=float, default=CG_DEADLINE_US,
                    help='cachegrind: the batcher\'s flush deadline, us (default 1e9: never expires, so '
                         'queues fill to b; a time deadline has no meaning under valgrind, see CG_DEADLINE_US; '
                         'pass 100 for ppb\'s native default)')
    a = ap.parse_args()
    res = {'batches': BATCHES, 'cachegrind': {}, 'cycles': {}, 'latency': {}, 'deadline': {}}
    if a.only and os.path.exists(a.json):
        res.update(json.load(open(a.json)))
    # Cache misses: the difference between 150k and 50k packets, per packet (setup cancels).
    if a.only == 'ab':
        # The base build is timed with the same configurations, less those ending in x.
        cfgs = a.configs
        traffics = a.traffics.split(',')
        builds = {'new': a.target}
        if a.base_target:
            builds['base'] = a.base_target
        ab = {b: {t: [] for t in traffics} for b in builds}
        for rep in range(a.reps):
            for t in traffics:
                for b, target in builds.items():
                    # Builds before `uniform_vectors` know no `x` suffix.
                    c = cfgs if b == 'new' else ','.join(x for x in cfgs.split(',') if 'x' not in x)
                    j = ppb(target, ['--traffic', t, '-n', str(a.n), '--ab', c] + (['--ab-one-graph'] if a.one_graph else []))
                    ab[b][t].append({c['config']: {'cpu': c['cpu_cycles_per_packet'], 'ratio': c['cpu_ratio'],
                                                   'tsc_ratio': c['tsc_ratio']} for c in j['ab']})
                    print(rep, t, b, ' '.join(f"{k}:{v['ratio'][0]:.4f}" for k, v in ab[b][t][-1].items()), flush=True)
        summary = {}
        for b in builds:
            for t in ab[b]:
                for c in cfgs.split(','):
                    if c not in ab[b][t][0]:
                        continue  # a configuration the base build does not know
                    r = [run[c]['ratio'][0] for run in ab[b][t]]
                    summary[f'{b} {t} {c}'] = [statistics.median(r), min(r), max(r)]
                    print(f'{b:5} {t:12} {c:6} on/off median {statistics.median(r):.4f} (runs {min(r):.4f}-{max(r):.4f})')
        res[a.key] = {'configs': cfgs, 'n': a.n, 'one_graph': a.one_graph, 'runs': ab, 'summary': summary}
        json.dump(res, open(a.json, 'w'), indent=1)
        return
    if a.only == 'focus':
        # Off vs on, interleaved, each run timed whole and in chunks (median and lowest
        # chunk: robust to other processes on a shared machine).
        cfgs = {'off': ['--batch', '0'], '128': ['--batch', '128'], '256': ['--batch', '256'],
                '128-nodirect': ['--batch', '128', '--no-direct']}
        foc = {t: {c: [] for c in cfgs} for t in ('single', 'alternating', 'realistic')}
        for rep in range(a.reps):
            for t in foc:
                for c, args in cfgs.items():
                    j = ppb(a.target, ['--traffic', t, '-n', str(a.n)] + args)
                    foc[t][c].append([j['cycles_per_packet'], j['chunk_cycles_median'], j['chunk_cycles_min']])
                    print(rep, t, c, foc[t][c][-1], flush=True)
        res['focus'] = foc
        json.dump(res, open(a.json, 'w'), indent=1)
        return
    if a.only != 'native':
        old = res['cachegrind'] if a.batches != BATCHES else {}
        res['cachegrind'] = {}
        res['cg_deadline_us'] = a.cg_deadline_us
        for i1 in (None, 8192):
            for traffic in ('alternating', 'realistic'):
                key = f'{traffic}-I1-{i1 or "host"}'
                res['cachegrind'][key] = []
                res['cachegrind'][key + '-off'] = []
                for j, b in enumerate(BATCHES):
                    if b not in a.batches:
                        # Not re-measured: keep the earlier figure, marked stale.
                        for k in (key, key + '-off'):
                            prev = dict(old[k][j]) if k in old else {'I1': None, 'D1': None, 'Ir': None}
                            prev['stale'] = True
                            res['cachegrind'][k].append(prev)
                        continue
                    lo = cachegrind(a.target, traffic, b, 50_000, i1, deadline_us=a.cg_deadline_us)
                    hi = cachegrind(a.target, traffic, b, 150_000, i1, deadline_us=a.cg_deadline_us)
                    per = {k: (hi[k] - lo.get(k, 0)) / 100_000 for k in hi}
                    res['cachegrind'][key].append(per)
                    print(f'{key} batch {b}: I1 {per["I1"]:.3f} D1 {per["D1"]:.3f} Ir {per["Ir"]:.0f} per packet', flush=True)
                    # The batcher off with vectors of the same size (the paper's "without
                    # PPB" at each batch size): mixed vectors of b packets.
                    v = b or 256
                    lo = cachegrind(a.target, traffic, 0, 50_000, i1, v)
                    hi = cachegrind(a.target, traffic, 0, 150_000, i1, v)
                    per = {k: (hi[k] - lo.get(k, 0)) / 100_000 for k in hi}
                    res['cachegrind'][key + '-off'].append(per)
                    print(f'{key} off, vectors of {v}: I1 {per["I1"]:.3f} D1 {per["D1"]:.3f} Ir {per["Ir"]:.0f} per packet', flush=True)
    if a.only == 'cachegrind':
        json.dump(res, open(a.json, 'w'), indent=1)
        draw(res, a.svg_prefix)
        return
    # Cycles per packet end to end: reps interleaved over batch sizes.
    for traffic in ('alternating', 'realistic', 'single'):
        runs = {b: [] for b in BATCHES}
        lat = {b: None for b in BATCHES}
        for rep in range(a.reps):
            for b in BATCHES:
                j = ppb(a.target, ['--traffic', traffic, '--batch', str(b), '-n', str(a.n)])
                runs[b].append(j['cycles_per_packet'])
                lat[b] = (j['batcher']['latency_p50_ns'], j['batcher']['latency_p99_ns'])
        res['cycles'][traffic] = {str(b): runs[b] for b in BATCHES}
        res['latency'][traffic] = {str(b): lat[b] for b in BATCHES}
        med = {b: statistics.median(runs[b]) for b in BATCHES}
        print(traffic, ' '.join(f'{b}:{med[b]:.0f}' for b in BATCHES), flush=True)
    # Deadlines at batch 128 (alternating and realistic).
    res['deadline'] = {}
    for traffic in ('alternating', 'realistic'):
        for d in (10, 100, 1000):
            j = ppb(a.target, ['--traffic', traffic, '--batch', '128', '--deadline-us', str(d), '-n', str(a.n)])
            res['deadline'][f'{traffic}-{d}'] = {'p50_ns': j['batcher']['latency_p50_ns'], 'p99_ns': j['batcher']['latency_p99_ns'],
                                                 'max_ns': j['batcher']['latency_max_ns'], 'cycles_per_packet': j['cycles_per_packet'],
                                                 'deadline_flushes': sum(q['deadline_flushes'] for q in j['batcher']['queues'])}
            print(traffic, d, res['deadline'][f'{traffic}-{d}'], flush=True)
    json.dump(res, open(a.json, 'w'), indent=1)
    draw(res, a.svg_prefix)

def draw(res, prefix):
    xs = res['batches']
    if res['cachegrind']:
        for ev in ('I1', 'D1'):
            for traffic in ('alternating', 'realistic'):
                sel = {k.replace(f'{traffic}-', '').replace('I1-host', 'I1 32 KiB').replace('I1-8192', 'I1 8 KiB').replace('-off', ', batcher off (vectors of b)'): [None if p.get('stale') else p[ev] for p in v]
                       for k, v in res['cachegrind'].items() if k.startswith(traffic)}
                line_svg(f'{prefix}-{ev.lower()}-{traffic}.svg', f'{ev} misses per packet (cachegrind), {traffic} traffic', f'{ev} misses / packet', sel, xs)
    if not res['cycles']:
        return
    line_svg(f'{prefix}-cycles.svg', 'cycles per packet end to end (TSC, median), batcher included', 'cycles / packet',
             {t: [statistics.median(v[str(b)]) for b in xs] for t, v in res['cycles'].items()}, xs)

if __name__ == '__main__':
    main()
