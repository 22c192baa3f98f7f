#!/usr/bin/env python3
"""pktvec over DPDK ports vs dpdk-testpmd io forwarding, in one sitting, on the same
virtual devices (no hugepages, no PCI). Writes docs/results/dpdk.json; the tables in
docs/results/dpdk.md are made from it.

    cargo build --release --features dpdk --example dpdk_io --example l3fwd
    # one rep per hold of the bench lock (each ~70 s), then merge:
    for i in 0 1 2 3 4; do flock /tmp/pktvec-bench.lock python3 scripts/dpdk_bench.py \
        --rep-index $i --secs 5 -n 10000000 --old-target /tmp/dpdk6-old --json /tmp/dpdk-rep$i.json; done
    python3 scripts/dpdk_bench.py --merge /tmp/dpdk-rep*.json

Per rep, setup (net_null pair, net_pcap infinite_rx) and burst (32, 256): testpmd as it
comes (its mempool from rte_pktmbuf_pool_create: without hugepages one mbuf per 4 KiB
page), testpmd with the mbufs packed (LD_PRELOAD of scripts/dpdk_packed_pool.c), our
dpdk_io with its default (packed) mempool and with `--object-layout standard` (testpmd's
layout), and, with --old-target, an older build's dpdk_io (binaries of another commit).

Needs Debian's dpdk-dev (dpdk-testpmd), libdpdk-dev and gcc.
"""
import argparse, json, os, re, statistics, subprocess, sys, tempfile, time

TSC_HZ = None

def tsc_hz():
    out = open('/proc/cpuinfo').read()
    m = re.search(r'cpu MHz\s*:\s*([\d.]+)', out)
    return float(m.group(1)) * 1e6

def run(cmd, timeout=None, sig=False, env=None):
    if sig:
        cmd = ['timeout', '-s', 'INT', str(timeout)] + cmd
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, env=env)
    return p.stdout

PACKED_SO = None

def packed_shim():
    """Builds the LD_PRELOAD shim that packs testpmd's mbufs (once per run)."""
    global PACKED_SO
    if PACKED_SO is None:
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'dpdk_packed_pool.c')
        PACKED_SO = os.path.join(tempfile.mkdtemp(prefix='pktvec-packed-'), 'packed.so')
        flags = subprocess.run(['pkg-config', '--cflags', '--libs', 'libdpdk'], capture_output=True,
                               text=True, check=True).stdout.split()
        subprocess.run(['gcc', '-O2', '-shared', '-fPIC', src, *flags, '-o', PACKED_SO], check=True)
    return PACKED_SO

def testpmd(vdevs, prefix, burst, secs, packed=False):
    env = dict(os.environ, LD_PRELOAD=packed_shim()) if packed else None
    eal = ['--no-huge', '-m', '1024', '--no-pci', '-l', '0-1', f'--file-prefix={prefix}',
           '--log-level=error'] + [f'--vdev={v}' for v in vdevs]
    out = run(['dpdk-testpmd'] + eal + ['--', '--forward-mode=io', '--record-core-cycles',
              '--total-num-mbufs=65536', '--stats-period=1', f'--burst={burst}'], timeout=secs, sig=True, env=env)
    m = re.search(r'CPU cycles/packet=([\d.]+) \(total cycles=(\d+) / total io packets=(\d+)\)', out)
    if not m:
        sys.exit('testpmd output not understood:\n' + out[-3000:])
    return {'cycles_per_packet': float(m.group(1)), 'packets': int(m.group(3))}

def ours_io(target, vdevs, prefix, vector, burst, n, layout=None, adopt=False):
    """Our rx -> tx graph: rte_eth_rx_burst calls of `burst` packets, up to `vector` per
    node call (vector == burst: one driver call per vector); `layout`: the mempool's
    `--object-layout` (None: the binary's default, for builds without the option);
    `adopt`: every packet handed to the buffer pool and back (`--adopt`) instead of the
    raw hand-over from rx to tx."""
    eal = f'--no-huge -m 1024 --no-pci -l 1 --file-prefix={prefix} --log-level=error ' + \
        ' '.join(f'--vdev={v}' for v in vdevs)
    out = run([f'{target}/dpdk_io', '-n', str(n), '--vector-size', str(vector),
               '--rx-burst', str(burst), '--json', '--eal', eal]
              + (['--object-layout', layout] if layout else []) + (['--adopt'] if adopt else []))
    if '{' not in out:
        # E.g. `--object-layout standard` with net_null ports: DPDK splits that pool into
        # several memory chunks, which buffer indices cannot use (our default never asks).
        print(f'  dpdk_io {layout or ""} on {vdevs}: {out.strip().splitlines()[-1]}', flush=True)
        return None
    j = json.loads(out[out.index('{'):])
    rows = {r['name']: r for r in j['runtime']['rows']}
    return {'wall_cycles_per_packet': j['seconds'] * TSC_HZ / j['packets'],
            'node_cycles_per_packet': j['cycles_per_packet_rx_tx'], 'mpps': j['mpps'],
            'object_stride': j.get('object_stride'),
            'rx_cycles_per_packet': sum(r['cycles'] for k, r in rows.items() if k.endswith('-rx')) / j['packets'],
            'tx_cycles_per_packet': sum(r['cycles'] for k, r in rows.items() if k.endswith('-tx')) / j['packets']}

def ours_l3fwd(target, pcap, prefix, n):
    eal = f'--no-huge -m 1024 --no-pci -l 1 --file-prefix={prefix} --log-level=error ' \
          f'--vdev=net_pcap0,rx_pcap={pcap},infinite_rx=1'
    out = run([f'{target}/l3fwd', '-n', str(n), '--buffers', '65536', '--sub-batch', '64',
               '--json', '--dpdk', eal])
    j = json.loads(out[out.index('{'):])
    rows = {r['name']: r['cycles'] / max(r['packets'], 1) for r in j['runtime']['rows']}
    return {'mpps': j['mpps'], 'wall_cycles_per_packet': j['seconds'] * TSC_HZ / j['packets'],
            'nodes': rows}

BARS = (('testpmd', '#888', 'testpmd io, its default mempool (no-huge: 1 mbuf / 4 KiB page)'),
        ('testpmd_packed', '#bbb', 'testpmd io, mbufs packed (LD_PRELOAD shim)'),
        ('pktvec_old', '#c96', 'pktvec, old build (--old-target)'),
        ('pktvec_standard', '#7b9', 'pktvec, testpmd\'s mempool layout'),
        ('pktvec_adopt', '#9cd', 'pktvec, every packet through the buffer pool (--adopt), V 256'),
        ('pktvec', '#2a6', 'pktvec DpdkRx -> DpdkTx, raw hand-over, packed mempool, V 256'),
        ('pktvec_two_calls', '#164', 'pktvec, raw hand-over, V = 2 bursts'))

def svg(summary, path):
    """Bar chart: cycles per forwarded packet (medians of the reps) per setup."""
    keys = [k for k in summary if k != 'l3fwd-pcap']
    bars = [b for b in BARS if any(b[0] in summary[k] for k in keys)]
    vmax = max(summary[k][b[0]] for k in keys for b in bars if b[0] in summary[k]) * 1.15
    W, H, L, B = 820, 420, 60, 40 + 16 * len(bars)
    bw = (W - L - 20) / len(keys)
    y = lambda v: H - B - (H - B - 30) * v / vmax
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<text x="{W/2}" y="18" text-anchor="middle" font-size="14">io forwarding: cycles per packet (median of reps; lower is better)</text>',
           f'<line x1="{L}" y1="{H-B}" x2="{W-10}" y2="{H-B}" stroke="black"/>',
           f'<line x1="{L}" y1="30" x2="{L}" y2="{H-B}" stroke="black"/>']
    for t in range(0, int(vmax) + 1, 25 if vmax < 200 else 50):
        out.append(f'<text x="{L-6}" y="{y(t)+4}" text-anchor="end">{t}</text>'
                   f'<line x1="{L}" y1="{y(t)}" x2="{W-10}" y2="{y(t)}" stroke="#ddd"/>')
    n = len(bars)
    for i, k in enumerate(keys):
        x0 = L + i * bw + bw * 0.08
        for j, (lab, col, _) in enumerate(bars):
            if lab not in summary[k]:
                continue
            v = summary[k][lab]
            w = bw * 0.84 / n
            out.append(f'<rect x="{x0 + j*w}" y="{y(v)}" width="{w*0.9}" height="{H-B-y(v)}" fill="{col}"/>'
                       f'<text x="{x0 + j*w + w*0.45}" y="{y(v)-4}" text-anchor="middle" font-size="10">{v:.0f}</text>')
        vd, burst = k.split('-')
        out.append(f'<text x="{x0 + bw*0.42}" y="{H-B+16}" text-anchor="middle">net_{vd}, burst {burst}</text>')
    for j, (lab, col, text) in enumerate(bars):
        yy = H - B + 28 + 16 * j
        out.append(f'<rect x="{L+10}" y="{yy}" width="12" height="12" fill="{col}"/><text x="{L+26}" y="{yy+10}">{text}</text>')
    out.append('</svg>')
    open(path, 'w').write('\n'.join(out))

def summarize(res, setups):
    """Medians per setup and variant, the per-rep ratios (one rep runs every variant back
    to back), their medians, the ratios of the medians and of the minima (the least
    disturbed reps on a shared machine: interference only ever adds cycles)."""
    med, mn = statistics.median, min
    summary = {}
    for name in setups:
        for burst in (32, 256):
            rs = [r for r in res['runs'] if r.get('vdevs') == name and r.get('burst') == burst]
            if not rs:
                continue
            val = {'testpmd': lambda r: r['testpmd']['cycles_per_packet'],
                   'testpmd_packed': lambda r: r['testpmd_packed']['cycles_per_packet'],
                   'pktvec': lambda r: r['pktvec']['wall_cycles_per_packet'],
                   'pktvec_standard': lambda r: r['pktvec_standard']['wall_cycles_per_packet'],
                   'pktvec_old': lambda r: r['pktvec_old']['wall_cycles_per_packet'],
                   'pktvec_one_call': lambda r: r['pktvec_one_call']['wall_cycles_per_packet'],
                   'pktvec_two_calls': lambda r: r['pktvec_two_calls']['wall_cycles_per_packet'],
                   'pktvec_adopt': lambda r: r['pktvec_adopt']['wall_cycles_per_packet'],
                   'pktvec_adopt_two_calls': lambda r: r['pktvec_adopt_two_calls']['wall_cycles_per_packet']}
            key = {}
            e = {}
            for v, f in val.items():
                have = [r for r in rs if key.get(v, v) in r]
                if have:
                    e[v] = med(f(r) for r in have)
                    e[v + '_min'] = mn(f(r) for r in have)
                    e[v + '_reps'] = [round(f(r), 1) for r in have]
            e['pktvec_nodes'] = med(r['pktvec']['node_cycles_per_packet'] for r in rs)
            # (numerator, denominator): like for like, default against default, new vs old.
            for rn, (a, b) in {'ratio': ('pktvec', 'testpmd'),
                               'ratio_packed': ('pktvec', 'testpmd_packed'),
                               'ratio_standard': ('pktvec_standard', 'testpmd'),
                               'ratio_old': ('pktvec_old', 'testpmd'),
                               'ratio_one_call': ('pktvec_one_call', 'testpmd'),
                               'ratio_one_call_packed': ('pktvec_one_call', 'testpmd_packed'),
                               'ratio_two_calls_packed': ('pktvec_two_calls', 'testpmd_packed'),
                               'ratio_adopt_packed': ('pktvec_adopt', 'testpmd_packed'),
                               'ratio_adopt_two_calls_packed': ('pktvec_adopt_two_calls', 'testpmd_packed'),
                               'raw_over_adopt': ('pktvec', 'pktvec_adopt'),
                               'new_over_old': ('pktvec', 'pktvec_old'),
                               'new_over_old_standard': ('pktvec_standard', 'pktvec_old')}.items():
                both = [r for r in rs if key.get(a, a) in r and key.get(b, b) in r]
                if not both:
                    continue
                per = [val[a](r) / val[b](r) for r in both]
                e[rn + 's'] = [round(x, 3) for x in per]
                e[rn + '_median'] = med(per)
                e[rn + '_of_medians'] = med(val[a](r) for r in both) / med(val[b](r) for r in both)
                e[rn + '_of_minima'] = mn(val[a](r) for r in both) / mn(val[b](r) for r in both)
            summary[f'{name}-{burst}'] = e
    ls = [r['l3fwd'] for r in res['runs'] if 'l3fwd' in r]
    if ls:
        summary['l3fwd-pcap'] = {'mpps_median': statistics.median(x['mpps'] for x in ls),
                                 'mpps': [x['mpps'] for x in ls]}
    return summary

def main():
    global TSC_HZ
    ap = argparse.ArgumentParser()
    ap.add_argument('--reps', type=int, default=1)
    ap.add_argument('--rep-index', type=int, default=0, help='number of the first rep (file prefixes, merging)')
    ap.add_argument('--target', default=os.environ.get('CARGO_TARGET_DIR', 'target') + '/release/examples')
    ap.add_argument('--old-target', help='directory with an older build\'s dpdk_io, run in the same reps')
    ap.add_argument('--json', default='docs/results/dpdk.json')
    ap.add_argument('--svg', default='docs/results/dpdk.svg')
    ap.add_argument('--from-json', help='only recompute the summary (written to --json) and the SVG from this result file')
    ap.add_argument('--merge', nargs='+', help='result files of single reps: merged into --json (summary, SVG)')
    ap.add_argument('--secs', type=int, default=5)
    ap.add_argument('-n', type=int, default=10_000_000)
    a = ap.parse_args()
    if a.from_json or a.merge:
        files = a.merge or [a.from_json]
        parts = [json.load(open(f)) for f in files]
        res = dict(parts[0])
        res['runs'] = [r for p in parts for r in p['runs']]
        res['reps'] = sum(p['reps'] for p in parts)
        res['uptime'] = [u for p in parts for u in p.get('uptime', [])]
        res['summary'] = summarize(res, ('null', 'pcap'))
        json.dump(res, open(a.json, 'w'), indent=1)
        svg(res['summary'], a.svg)
        print(json.dumps(res['summary'], indent=1))
        return
    TSC_HZ = tsc_hz()
    d = tempfile.mkdtemp(prefix='pktvec-dpdk-bench-')
    pcap = f'{d}/l3-in.pcap'
    run([f'{a.target}/l3fwd', '-n', '32768', '--pcap-out', pcap])
    setups = {
        'null': ['net_null0', 'net_null1'],
        'pcap': [f'net_pcap0,rx_pcap={pcap},infinite_rx=1'],
    }
    uptime = lambda: open('/proc/loadavg').read().split()[:3]
    res = {'tsc_hz': TSC_HZ, 'reps': a.reps, 'runs': [], 'uptime': [uptime()],
           'old_target': a.old_target, 'n': a.n, 'secs': a.secs}
    for rep in range(a.rep_index, a.rep_index + a.reps):
        for name, vdevs in setups.items():
            for burst in (32, 256):
                p = f'{rep}{name}{burst}'
                # Every variant of this setup and burst, back to back, in an order rotated
                # by the rep (a run's place after testpmd's teardown must not favour one
                # variant); a second's pause after each testpmd lets its exit finish.
                def tp(packed):
                    out = testpmd(vdevs, f'{"tk" if packed else "tp"}{p}', burst, a.secs, packed=packed)
                    time.sleep(1)
                    return out
                tasks = [('testpmd', lambda: tp(False)),
                         # The driver burst is testpmd's; the rx node fills vectors of 256.
                         ('pktvec', lambda: ours_io(a.target, vdevs, f'io{p}', 256, burst, a.n)),
                         ('testpmd_packed', lambda: tp(True)),
                         ('pktvec_standard', lambda: ours_io(a.target, vdevs, f'is{p}', 256, burst, a.n,
                                                             layout='standard'))]
                if a.old_target:
                    tasks.append(('pktvec_old', lambda: ours_io(a.old_target, vdevs, f'io{p}o', 256, burst, a.n)))
                if burst != 256:
                    # ... one driver call per vector of `burst` (the old rx node), and two
                    # per vector (vectors of 2 * burst: the in-flight mbufs and metadata
                    # lines fit L1).
                    tasks.append(('pktvec_one_call', lambda: ours_io(a.target, vdevs, f'iv{p}', burst, burst, a.n)))
                    tasks.append(('pktvec_two_calls', lambda: ours_io(a.target, vdevs, f'iw{p}', 2 * burst, burst, a.n)))
                    tasks.append(('pktvec_adopt_two_calls', lambda: ours_io(a.target, vdevs, f'ix{p}', 2 * burst, burst,
                                                                            a.n, adopt=True)))
                # Every packet through the buffer pool (a graph with a node between rx and tx).
                tasks.append(('pktvec_adopt', lambda: ours_io(a.target, vdevs, f'ia{p}', 256, burst, a.n, adopt=True)))
                k = rep % len(tasks)
                run_ = {'rep': rep, 'vdevs': name, 'burst': burst}
                for key, f in tasks[k:] + tasks[:k]:
                    out = f()
                    if out:
                        run_[key] = out
                t, o, tpk = run_['testpmd'], run_['pktvec'], run_['testpmd_packed']
                ost = run_.get('pktvec_standard')
                res['runs'].append(run_)
                print(f'rep {rep} {name:4} burst {burst:3}: testpmd {t["cycles_per_packet"]:.1f} '
                      f'(packed {tpk["cycles_per_packet"]:.1f}); pktvec {o["wall_cycles_per_packet"]:.1f} '
                      f'(rx {o["rx_cycles_per_packet"]:.1f} + tx {o["tx_cycles_per_packet"]:.1f} in nodes), '
                      + (f'standard layout {ost["wall_cycles_per_packet"]:.1f}' if ost else 'no standard layout')
                      + (f', old {run_["pktvec_old"]["wall_cycles_per_packet"]:.1f}' if a.old_target else '')
                      + f'; ratio {o["wall_cycles_per_packet"] / tpk["cycles_per_packet"]:.3f} packed/packed'
                      + (f', {ost["wall_cycles_per_packet"] / t["cycles_per_packet"]:.3f} standard/standard' if ost else ''),
                      flush=True)
        l = ours_l3fwd(a.target, pcap, f'l3{rep}', a.n)
        res['runs'].append({'rep': rep, 'vdevs': 'pcap', 'l3fwd': l})
        print(f'rep {rep} l3fwd over net_pcap: {l["mpps"]:.2f} Mpps, {l["wall_cycles_per_packet"]:.1f} cyc/pkt '
              f'({", ".join(f"{k} {v:.1f}" for k, v in l["nodes"].items())})', flush=True)
    res['uptime'].append(uptime())
    summary = summarize(res, setups)
    res['summary'] = summary
    json.dump(res, open(a.json, 'w'), indent=1)
    svg(summary, a.svg)
    print(json.dumps(summary, indent=1))

if __name__ == '__main__':
    main()
