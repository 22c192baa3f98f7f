#!/usr/bin/env python3
"""Measured code footprints for the PPB model's I1 side (`tune --cache --footprints`).

Runs the `ppb` example under callgrind (--dump-instr=yes: executed instructions with their
addresses and counts) at the calibration settings — per traffic, the batcher on at b = 1,
64 and 256 and off with vectors of 1, 64 and 256 — each at two run lengths; the difference
(150k - 50k packets) per packet removes the setup. Every executed 64-byte code line is
attributed to the node that runs it (by its function: the node's `process`, its helpers,
the batcher's hand-over for `batcher`, its receive side (replay source, classification,
enqueueing) for `batcher-rx`, the graph's
dispatch loop for `dispatch`; the allocator and printing at exit are left out), with its executions per packet;
each run's per-node calls and packets (runtime stats) go alongside. The model turns these
into per-call and per-packet rates (`pktvec_model::icache`).

    export PATH=<dir with a valgrind wrapper taking the shared lock>:$PATH
    python3 scripts/model_footprints.py --ppb $CARGO_TARGET_DIR/release/examples/ppb \
        --out docs/results/model-cache-footprints.json
"""
import argparse, collections, json, os, re, subprocess

SETTINGS = {  # family: (batch, vector size)
    'on-narrow': (1, 256), 'on-wide': (64, 256), 'off-narrow': (0, 1), 'off-wide': (0, 64),
}
# A third size (calls of 256 packets), on by default since session 8: code that runs only
# in calls above 64 packets (`Lpm4::lookup_vector_raw`'s path for larger vectors, larger
# memcpy lines) is otherwise never calibrated (`--no-huge` drops it).
HUGE = {'on-huge': (256, 256), 'off-huge': (0, 256)}
ARGS = ['--route-count', '20000', '--route6-count', '5000', '--pregen', '4096']

# Function name (demangled, as callgrind prints it) -> owner; first match wins.
OWNERS = [
    ('Ip4Rewrite', 'ip4-rewrite'), ('Ip6Rewrite', 'ip6-rewrite'),
    ('Ip4Input', 'ip4-input'), ('ip4_input', 'ip4-input'),
    ('Ip6Input', 'ip6-input'), ('ip6_input', 'ip6-input'),
    ('Ip4Lookup', 'ip4-lookup'), ('Lpm4::', 'ip4-lookup'),
    ('Ip6Lookup', 'ip6-lookup'), ('Lpm6::', 'ip6-lookup'),
    ('EthernetInput', 'ethernet-input'), ('ethernet_input', 'ethernet-input'),
    ('ArpInput', 'arp-input'), ('arp_input', 'arp-input'),
    ('InterfaceOutput', 'interface-output'),
    ('NullSink', 'tx'), ('BufferPool::free_bulk', 'tx'), ('BufferPool::refill', 'tx'),
    ('DropNode', 'drop'),
    # The batcher's receive side (packet source, classification, enqueueing) runs in the
    # calls that receive, not in those that only hand a queued vector over.
    ('ReplaySource', 'batcher-rx'), ('__memcpy', 'batcher-rx'), ('__memset', 'batcher-rx'),
    ('Batcher<S>::rx_classify', 'batcher-rx'), ('Batcher<S>::enqueue', 'batcher-rx'),
    ('Batcher<S>::end_burst', 'batcher-rx'), ('pktvec_batcher::node::classify', 'batcher-rx'),
    ('pktvec_batcher::node::strip', 'batcher-rx'), ('pktvec_batcher::node::Slow', 'batcher-rx'),
    ('pktvec_batcher::parser', 'batcher-rx'), ('pktvec_batcher::path_table', 'batcher-rx'),
    ('arc_swap', 'batcher-rx'),
    ('pktvec_batcher::', 'batcher'), ('ppb::main', 'batcher'),
    ('pktvec_graph::graph::Graph::', 'dispatch'), ('pktvec_graph::graph::record_entry', 'dispatch'),
]
DYN = 'as pktvec_graph::graph::DynNode>::process_dyn'


def parse(path):
    """callgrind output with --dump-instr=yes -> {function: {address: Ir}} (self cost)."""
    names, res = {}, collections.defaultdict(lambda: collections.defaultdict(int))
    fn, last, skip = None, 0, False

    def name(tag, v):
        m = re.match(r'\((\d+)\)(?: (.*))?', v)
        if not m:
            return v
        if m.group(2) is not None:
            names[(tag, m.group(1))] = m.group(2)
        return names.get((tag, m.group(1)), v)

    for line in open(path):
        line = line.rstrip('\n')
        if not line:
            continue
        if line[0] in '0123456789+-*':
            parts = line.split()
            a = parts[0]
            addr = int(a, 16) if a.startswith('0x') else last + int(a) if a[0] in '+-' else last if a == '*' else int(a)
            last = addr
            if skip:  # the cost line of a call: inclusive, not this function's own
                skip = False
                continue
            if len(parts) >= 3 and fn is not None:
                res[fn][addr] += int(parts[2])
            continue
        key, _, v = line.partition('=')
        if key == 'fn':
            fn = name('fn', v)
        elif key == 'cfn':
            name('fn', v)
        elif key == 'calls':
            skip = True
        elif key in ('fl', 'fi', 'fe', 'cfi', 'cfl'):
            name('fl', v)
        elif key in ('ob', 'cob'):
            name('ob', v)
    return res


def run(ppb, out_dir, traffic, batch, vector, n, extra=()):
    base = f'{out_dir}/{traffic}-{batch}-{vector}-{n}'
    if not os.path.exists(base + '.out'):
        with open(base + '.json', 'w') as so:
            subprocess.run(['valgrind', '--tool=callgrind', '--dump-instr=yes', f'--callgrind-out-file={base}.out',
                            ppb, '--json', '--traffic', traffic, '--batch', str(batch), '-n', str(n),
                            '--vector-size', str(vector)] + ARGS + list(extra), stdout=so, stderr=subprocess.DEVNULL, check=True)
    s = open(base + '.json').read()
    stats = {r['name']: (r['calls'], r['packets']) for r in json.loads(s[s.index('{'):])['runtime']['rows']}
    return parse(base + '.out'), stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--ppb', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--work', default='/tmp/model-footprints', help='callgrind outputs (reused if present)')
    ap.add_argument('--deadline-us', type=float, default=1e9,
                    help="ppb's batcher flush deadline, us (default 1e9: never expires, as the cachegrind "
                         "sweep, scripts/ppb_sweep.py CG_DEADLINE_US; a time deadline has no meaning under valgrind)")
    ap.add_argument('--huge', action='store_true', default=True,
                    help='also calibrate at b = 256 / V = 256 (families on-huge, off-huge; tune uses them for calls '
                         'of > 96 packets); the default')
    ap.add_argument('--no-huge', dest='huge', action='store_false',
                    help='calibrate at b = 1 and 64 only (sessions 7 and before)')
    a = ap.parse_args()
    settings = dict(SETTINGS, **(HUGE if a.huge else {}))
    extra = ['--deadline-us', str(a.deadline_us)]
    os.makedirs(a.work, exist_ok=True)
    # The monomorphisations of DynNode::process_dyn share one name: split them by address.
    syms = []
    for l in subprocess.run(['nm', '-S', '-C', '--defined-only', a.ppb], capture_output=True, text=True).stdout.splitlines():
        p = l.split(' ', 3)
        if len(p) == 4 and p[2] in 'tT' and DYN in p[3]:
            syms.append((int(p[0], 16), int(p[1], 16)))
    fams = {}
    for traffic in ('alternating', 'realistic'):
        for fam, (b, v) in settings.items():
            lo, slo = run(a.ppb, a.work, traffic, b, v, 50_000, extra)
            hi, shi = run(a.ppb, a.work, traffic, b, v, 150_000, extra)
            per = {}
            for fn in set(lo) | set(hi):
                for addr in set(lo.get(fn, {})) | set(hi.get(fn, {})):
                    d = (hi.get(fn, {}).get(addr, 0) - lo.get(fn, {}).get(addr, 0)) / 100_000
                    if d > 0:
                        per[(fn, addr)] = d
            nodes = {k: ((shi[k][0] - slo[k][0]) / 100_000, (shi[k][1] - slo[k][1]) / 100_000) for k in shi}
            fams[f'{traffic}-{fam}'] = {'batch': b, 'vector': v, 'per': per, 'nodes': nodes}
    # Each process_dyn instance: the node whose calls per packet match its entry count
    # over all calibration runs (least squared log ratio).
    dyn_owner = {}
    for start, size in syms:
        counts = [max([c for (fn, ad), c in f['per'].items() if DYN in fn and ad == start] or [0]) for f in fams.values()]
        if not any(counts):
            continue
        best = min(next(iter(fams.values()))['nodes'], key=lambda node: sum(
            (__import__('math').log((c + 1e-6) / (f['nodes'].get(node, (0, 0))[0] + 1e-6))) ** 2
            for c, f in zip(counts, fams.values())))
        dyn_owner[(start, start + size)] = best

    def owner(fn, addr):
        if DYN in fn:
            for (s, e), o in dyn_owner.items():
                if s <= addr < e:
                    return o
            return 'dispatch'
        for pat, o in OWNERS:
            if pat in fn:
                return o
        return 'packet'

    doc = {'binary': a.ppb, 'line_bytes': 64, 'deadline_us': a.deadline_us, 'process_dyn_owners': {f'{s:#x}': o for (s, _), o in dyn_owner.items()}, 'families': {}}
    for key, f in fams.items():
        lines = collections.defaultdict(float)
        own = {}
        for (fn, addr), c in f['per'].items():
            ln = addr >> 6
            o = owner(fn, addr)
            if o == 'packet':
                # No node's code: the allocator and the final printout, whose counts differ
                # between the two run lengths without being per-packet work (< 0.05 Ir per
                # packet in all runs).
                continue
            # A line is touched when any of its instructions runs: its most executed one.
            if c > lines[(ln, o)]:
                lines[(ln, o)] = c
            own[ln] = o
        doc['families'][key] = {
            'batch': f['batch'], 'vector': f['vector'],
            'nodes': {k: {'calls': c, 'packets': p} for k, (c, p) in f['nodes'].items()},
            'lines': [{'line': ln, 'node': o, 'per_packet': c} for (ln, o), c in sorted(lines.items())],
        }
        print(key, len(doc['families'][key]['lines']), 'lines', collections.Counter(o for (_, o) in lines))
    print('process_dyn owners:', doc['process_dyn_owners'])
    json.dump(doc, open(a.out, 'w'), indent=0)


if __name__ == '__main__':
    main()
