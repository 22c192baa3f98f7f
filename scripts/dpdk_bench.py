#!/usr/bin/env python3
"""pktvec over DPDK ports vs dpdk-testpmd io forwarding, in one sitting, on the same
virtual devices (no hugepages, no PCI). Writes docs/results/dpdk.json; the table in
docs/results/dpdk.md is made from it.

    cargo build --release --features dpdk --example dpdk_io --example l3fwd
    flock /tmp/pktvec-bench.lock python3 scripts/dpdk_bench.py --reps 3

Needs Debian's dpdk-dev (dpdk-testpmd) and libdpdk-dev.
"""
import argparse, json, os, re, statistics, subprocess, sys, tempfile

TSC_HZ = None

def tsc_hz():
    out = open('/proc/cpuinfo').read()
    m = re.search(r'cpu MHz\s*:\s*([\d.]+)', out)
    return float(m.group(1)) * 1e6

def run(cmd, timeout=None, sig=False):
    if sig:
        cmd = ['timeout', '-s', 'INT', str(timeout)] + cmd
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    return p.stdout

def testpmd(vdevs, prefix, burst, secs):
    eal = ['--no-huge', '-m', '1024', '--no-pci', '-l', '0-1', f'--file-prefix={prefix}',
           '--log-level=error'] + [f'--vdev={v}' for v in vdevs]
    out = run(['dpdk-testpmd'] + eal + ['--', '--forward-mode=io', '--record-core-cycles',
              '--total-num-mbufs=65536', '--stats-period=1', f'--burst={burst}'], timeout=secs, sig=True)
    m = re.search(r'CPU cycles/packet=([\d.]+) \(total cycles=(\d+) / total io packets=(\d+)\)', out)
    if not m:
        sys.exit('testpmd output not understood:\n' + out[-3000:])
    return {'cycles_per_packet': float(m.group(1)), 'packets': int(m.group(3))}

def ours_io(target, vdevs, prefix, vector, burst, n):
    """Our rx -> tx graph: rte_eth_rx_burst calls of `burst` packets, up to `vector` per
    node call (vector == burst: one driver call per vector)."""
    eal = f'--no-huge -m 1024 --no-pci -l 1 --file-prefix={prefix} --log-level=error ' + \
        ' '.join(f'--vdev={v}' for v in vdevs)
    out = run([f'{target}/dpdk_io', '-n', str(n), '--vector-size', str(vector),
               '--rx-burst', str(burst), '--json', '--eal', eal])
    j = json.loads(out[out.index('{'):])
    rows = {r['name']: r for r in j['runtime']['rows']}
    return {'wall_cycles_per_packet': j['seconds'] * TSC_HZ / j['packets'],
            'node_cycles_per_packet': j['cycles_per_packet_rx_tx'], 'mpps': j['mpps'],
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

def svg(summary, path):
    """Bar chart: cycles per forwarded packet, testpmd io vs pktvec (rx node + tx node)."""
    keys = [k for k in summary if k != 'l3fwd-pcap']
    vmax = max(max(summary[k]['testpmd'], summary[k]['pktvec_wall']) for k in keys) * 1.15
    W, H, L, B = 760, 380, 60, 80
    bw = (W - L - 20) / len(keys)
    y = lambda v: H - B - (H - B - 30) * v / vmax
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<text x="{W/2}" y="18" text-anchor="middle" font-size="14">io forwarding: cycles per packet (median of reps; lower is better)</text>',
           f'<line x1="{L}" y1="{H-B}" x2="{W-10}" y2="{H-B}" stroke="black"/>',
           f'<line x1="{L}" y1="30" x2="{L}" y2="{H-B}" stroke="black"/>']
    for t in range(0, int(vmax) + 1, 25 if vmax < 200 else 50):
        out.append(f'<text x="{L-6}" y="{y(t)+4}" text-anchor="end">{t}</text>'
                   f'<line x1="{L}" y1="{y(t)}" x2="{W-10}" y2="{y(t)}" stroke="#ddd"/>')
    for i, k in enumerate(keys):
        x0 = L + i * bw + bw * 0.15
        for j, (lab, col) in enumerate((('testpmd', '#888'), ('pktvec_wall', '#2a6'),
                                        ('pktvec_one_call_wall', '#9cd'))):
            if lab not in summary[k]:
                continue
            v = summary[k][lab]
            out.append(f'<rect x="{x0 + j*bw*0.26}" y="{y(v)}" width="{bw*0.24}" height="{H-B-y(v)}" fill="{col}"/>'
                       f'<text x="{x0 + j*bw*0.26 + bw*0.12}" y="{y(v)-4}" text-anchor="middle">{v:.0f}</text>')
        vd, burst = k.split('-')
        out.append(f'<text x="{x0 + bw*0.35}" y="{H-B+16}" text-anchor="middle">net_{vd}, burst {burst}</text>'
                   f'<text x="{x0 + bw*0.35}" y="{H-B+32}" text-anchor="middle">ratio {summary[k]["ratio_wall"]:.2f}</text>')
    out.append(f'<rect x="{L+10}" y="{H-38}" width="12" height="12" fill="#888"/><text x="{L+26}" y="{H-28}">dpdk-testpmd --forward-mode=io --burst=B</text>'
               f'<rect x="{L+330}" y="{H-38}" width="12" height="12" fill="#2a6"/><text x="{L+346}" y="{H-28}">pktvec DpdkRx -> DpdkTx, rx bursts of B, vectors of 256</text>'
               f'<rect x="{L+330}" y="{H-20}" width="12" height="12" fill="#9cd"/><text x="{L+346}" y="{H-10}">pktvec, one rx burst per vector (vector = B)</text></svg>')
    open(path, 'w').write('\n'.join(out))

def summarize(res, setups):
    """Medians per setup, the per-rep ratios, and the ratio of the minima (the least
    disturbed reps on a shared machine: interference only ever adds cycles)."""
    summary = {}
    for name in setups:
        for burst in (32, 256):
            rs = [r for r in res['runs'] if r.get('vdevs') == name and r.get('burst') == burst]
            t = statistics.median(r['testpmd']['cycles_per_packet'] for r in rs)
            o = statistics.median(r['pktvec']['wall_cycles_per_packet'] for r in rs)
            nodes = statistics.median(r['pktvec']['node_cycles_per_packet'] for r in rs)
            tmin = min(r['testpmd']['cycles_per_packet'] for r in rs)
            omin = min(r['pktvec']['wall_cycles_per_packet'] for r in rs)
            summary[f'{name}-{burst}'] = {'testpmd': t, 'pktvec_wall': o, 'pktvec_nodes': nodes,
                                          'ratio_wall': o / t, 'ratios': [r['pktvec']['wall_cycles_per_packet'] / r['testpmd']['cycles_per_packet'] for r in rs],
                                          'testpmd_min': tmin, 'pktvec_wall_min': omin, 'ratio_min': omin / tmin}
            one = [r for r in rs if 'pktvec_one_call' in r]
            if one:
                v = statistics.median(r['pktvec_one_call']['wall_cycles_per_packet'] for r in one)
                summary[f'{name}-{burst}'].update({
                    'pktvec_one_call_wall': v, 'ratio_one_call': v / t,
                    'ratios_one_call': [r['pktvec_one_call']['wall_cycles_per_packet'] / r['testpmd']['cycles_per_packet'] for r in one]})
    ls = [r['l3fwd'] for r in res['runs'] if 'l3fwd' in r]
    summary['l3fwd-pcap'] = {'mpps_median': statistics.median(x['mpps'] for x in ls),
                             'mpps': [x['mpps'] for x in ls]}
    return summary

def main():
    global TSC_HZ
    ap = argparse.ArgumentParser()
    ap.add_argument('--reps', type=int, default=3)
    ap.add_argument('--target', default=os.environ.get('CARGO_TARGET_DIR', 'target') + '/release/examples')
    ap.add_argument('--json', default='docs/results/dpdk.json')
    ap.add_argument('--svg', default='docs/results/dpdk.svg')
    ap.add_argument('--from-json', help='only recompute the summary (written to --json) and the SVG from this result file')
    ap.add_argument('--secs', type=int, default=6)
    ap.add_argument('-n', type=int, default=20_000_000)
    a = ap.parse_args()
    if a.from_json:
        # Recompute the summary from the runs (e.g. after a change here) and redraw.
        res = json.load(open(a.from_json))
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
    res = {'tsc_hz': TSC_HZ, 'reps': a.reps, 'runs': []}
    for rep in range(a.reps):
        for name, vdevs in setups.items():
            for burst in (32, 256):
                t = testpmd(vdevs, f'tp{rep}{name}{burst}', burst, a.secs)
                # The driver burst is testpmd's; the rx node fills vectors of 256 from it.
                o = ours_io(a.target, vdevs, f'io{rep}{name}{burst}', 256, burst, a.n)
                run_ = {'rep': rep, 'vdevs': name, 'burst': burst, 'testpmd': t, 'pktvec': o}
                if burst != 256:
                    # ... and one driver call per vector of `burst` (the old rx node).
                    run_['pktvec_one_call'] = ours_io(a.target, vdevs, f'iv{rep}{name}{burst}',
                                                      burst, burst, a.n)
                res['runs'].append(run_)
                print(f'rep {rep} {name:4} burst {burst:3}: testpmd {t["cycles_per_packet"]:.1f} '
                      f'cyc/pkt; pktvec io {o["wall_cycles_per_packet"]:.1f} wall, rx {o["rx_cycles_per_packet"]:.1f} '
                      f'+ tx {o["tx_cycles_per_packet"]:.1f} = {o["node_cycles_per_packet"]:.1f} in nodes; '
                      f'ratio {o["wall_cycles_per_packet"] / t["cycles_per_packet"]:.3f}'
                      + (f'; vector={burst}: {run_["pktvec_one_call"]["wall_cycles_per_packet"]:.1f} wall'
                         if 'pktvec_one_call' in run_ else ''), flush=True)
        l = ours_l3fwd(a.target, pcap, f'l3{rep}', a.n)
        res['runs'].append({'rep': rep, 'vdevs': 'pcap', 'l3fwd': l})
        print(f'rep {rep} l3fwd over net_pcap: {l["mpps"]:.2f} Mpps, {l["wall_cycles_per_packet"]:.1f} cyc/pkt '
              f'({", ".join(f"{k} {v:.1f}" for k, v in l["nodes"].items())})', flush=True)
    summary = summarize(res, setups)
    res['summary'] = summary
    json.dump(res, open(a.json, 'w'), indent=1)
    svg(summary, a.svg)
    print(json.dumps(summary, indent=1))

main()
