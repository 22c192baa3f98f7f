#!/usr/bin/env python3
"""Measured code footprints for the PPB model's I1 side (`tune --cache --footprints`).

Runs the `ppb` example under callgrind (--dump-instr=yes: executed instructions with their
addresses and counts) at the calibration settings — per traffic, the batcher on at b = 1, 2,
7, 64 and 256 and off with vectors of 1, 2, 7, 64 and 256 (calls of 1 and 2 packets run the
single and dual loops, 7 the quad loop once and then the dual and single loops and the
4-wide and scalar tails of the 16-wide SIMD loops, 64 the quad loop and the 16-wide loops
with no tail, 256 the code for calls above 64) — each at two run lengths; the difference
(150k - 50k packets) per packet removes the setup. Every executed 64-byte code line is
attributed to the node that runs it (by its function: the node's `process`, its helpers,
the batcher's hand-over for `batcher`, its receive side (replay source, classification,
enqueueing) for `batcher-rx`, the graph's
dispatch loop for `dispatch`; the allocator and printing at exit are left out), with its executions per packet;
each run's per-node calls and packets (runtime stats) go alongside. The model turns these
into per-call and per-packet rates (`pktvec_model::icache`).

The order of the lines inside a call (on by default, `--no-order` leaves it out): one more
run per family under valgrind lackey (`--trace-mem=yes`: every instruction fetch in order,
ORDER_PACKETS packets; heavy, ~4 min each, the trace goes to /dev/shm and is deleted after
filtering), reduced by `scripts/lackey_lines.c` to the calibration's lines in execution
order. The trace is cut into node calls at the dispatcher's lines (consecutive pieces of one
owner group — the batcher with its receive side — are one call) and, per line, the mean
relative position of its first and last touch in its owner's calls and the share of calls
where it ran at two separate moments are stored (`first`, `last`, `twice`). `tune --cache`
replays each call's lines in that order (`pktvec_model::icache::call_events`).

    export PATH=<dir with a valgrind wrapper taking the shared lock>:$PATH
    python3 scripts/model_footprints.py --ppb $CARGO_TARGET_DIR/release/examples/ppb \
        --jobs 2 --out docs/results/model-cache-footprints.json
"""
import argparse, collections, concurrent.futures, json, os, re, subprocess

SETTINGS = {  # family: (batch, vector size)
    'on-narrow': (1, 256), 'on-wide': (64, 256), 'off-narrow': (0, 1), 'off-wide': (0, 64),
    # Calls of 2-3 packets run the nodes' dual loops, which neither calls of 1 (single
    # loop) nor of 64 (quad loop) run (session 8).
    'on-dual': (2, 256), 'off-dual': (0, 2),
}
# A third size (calls of 256 packets), on by default since session 8: code that runs only
# in calls above 64 packets (`Lpm4::lookup_vector_raw`'s path for larger vectors, larger
# memcpy lines) is otherwise never calibrated (`--no-huge` drops it).
HUGE = {'on-huge': (256, 256), 'off-huge': (0, 256)}
# A call size that is not a multiple of the quad loop's 4 and is below the 16-index chunks
# of the SIMD loops (`Context::enqueue_frame`'s fold over the next slots, `run_end`), on by
# default since session 9 (`--no-small` drops it). The quad/dual/single loop
# (`graph/src/loops.rs`) runs the 4-wide body, then the 2-wide for 2-3 left, then the
# 1-wide for 1 left; LLVM compiles the fold into a 16-wide loop (n >= 16), a 4-wide
# epilogue (4 <= n < 16, or n mod 16 >= 4) and a scalar tail (n mod 4 != 0). Calls of 1, 2,
# 64 and 256 packets never run the 4-wide epilogue, and 64 and 256 never a tail; a call of 7
# runs the 4-wide quad body once, the dual and single bodies once each, the 4-wide
# epilogue once and the scalar tail three times.
SMALL = {'on-small': (7, 256), 'off-small': (0, 7)}
ARGS = ['--route-count', '20000', '--route6-count', '5000', '--pregen', '4096']
# Packets of the lackey run of each family (the order of lines inside calls); the setup
# (route tables, packet pregeneration, ~200M instructions) dominates its cost anyway.
ORDER_PACKETS = 20_000

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


def instruction_sizes(obj):
    """{address: size} of the instructions of an object's code (objdump -d): an
    instruction that straddles two 64-byte lines fetches both (cachegrind simulates the
    I1 that way), so a line holding only the tail of a straddling instruction is touched
    too."""
    addrs = []
    out = subprocess.run(['objdump', '-d', '--no-show-raw-insn', obj], capture_output=True, text=True).stdout
    for l in out.splitlines():
        m = re.match(r'\s+([0-9a-f]+):\s', l)
        if m:
            addrs.append(int(m.group(1), 16))
    addrs = sorted(set(addrs))
    return {a: b - a for a, b in zip(addrs, addrs[1:]) if b - a <= 15}


def libc_path(ppb):
    for l in subprocess.run(['ldd', ppb], capture_output=True, text=True).stdout.splitlines():
        m = re.search(r'libc\.so\.6 => (\S+)', l)
        if m:
            return m.group(1)
    return None


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


def lackey_filter(out_dir):
    """`scripts/lackey_lines.c`, compiled into the work directory (once)."""
    here = os.path.dirname(os.path.abspath(__file__))
    filt = f'{out_dir}/lackey_lines'
    if not os.path.exists(filt):
        subprocess.run(['cc', '-O2', '-o', filt, f'{here}/lackey_lines.c'], check=True)
    return filt


def lackey_order(ppb, out_dir, traffic, batch, vector, extra, lines_file):
    """The calibration's code lines in execution order for one family (lackey trace)."""
    base = f'{out_dir}/{traffic}-{batch}-{vector}-order'
    if os.path.exists(base + '.lines'):
        return [int(x) for x in open(base + '.lines')]
    filt = lackey_filter(out_dir)
    log = f'/dev/shm/lackey-{os.getpid()}-{traffic}-{batch}-{vector}.txt'
    try:
        with open(base + '.json', 'w') as so:
            # --basic-counts=no: lackey's own instruction/jump counting is not needed (the
            # trace is the same; session 9, faster).
            subprocess.run(['valgrind', '-v', '-v', '--tool=lackey', '--basic-counts=no', '--trace-mem=yes', f'--log-file={log}',
                            ppb, '--json', '--traffic', traffic, '--batch', str(batch), '-n', str(ORDER_PACKETS),
                            '--vector-size', str(vector)] + ARGS + list(extra),
                           stdout=so, stderr=subprocess.DEVNULL, check=True)
        # Load biases (valgrind -v -v: "Reading syms from OBJ" then "svma S, avma A") and
        # text ranges (the executable LOAD segment) of ppb and libc.
        head = subprocess.run(['grep', '-m', '60', '-E', 'Reading syms from|svma 0x', log],
                              capture_output=True, text=True).stdout.splitlines()
        objs, cur = [], None
        for l in head:
            m = re.search(r'Reading syms from (\S+)', l)
            if m:
                cur = m.group(1)
                continue
            m = re.search(r'svma 0x([0-9a-f]+), avma 0x([0-9a-f]+)', l)
            if m and cur and (cur == ppb or cur.endswith('/' + os.path.basename(ppb)) or 'libc.so' in cur) \
                    and cur not in [o for o, _ in objs]:
                objs.append((cur, int(m.group(2), 16) - int(m.group(1), 16)))
                cur = None
        args = []
        for obj, bias in objs:
            for l in subprocess.run(['readelf', '-lW', obj], capture_output=True, text=True).stdout.splitlines():
                p = l.split()
                if p and p[0] == 'LOAD' and 'E' in p[6:-1]:
                    args += [f'{bias:x}', p[2][2:], f'{int(p[2], 16) + int(p[5], 16):x}']
        with open(log) as src, open(base + '.lines', 'w') as dst:
            subprocess.run([filt, lines_file] + args, stdin=src, stdout=dst, check=True)
    finally:
        if os.path.exists(log):
            os.remove(log)
    return [int(x) for x in open(base + '.lines')]


def call_order(seq, owners):
    """Per (line, owner): (mean relative first position, mean relative last position,
    share of calls with two or more separate touches, calls) over the node calls of a trace.

    seq: code lines in execution order (consecutive repeats collapsed); owners: line ->
    set of owners (the family's lines). Calls are cut at the dispatcher's lines; pieces of
    one owner group (a node; the batcher with its receive side) separated only by the
    dispatcher's lines are one call (the batcher's call runs graph code in between). The
    trace before the first dispatcher line (setup) is left out, as are the first and last
    call (partial)."""
    group = lambda o: 'batcher' if o in ('batcher', 'batcher-rx') else o
    calls, cur, cur_g = [], [], None
    started, prev = False, None
    for ln in seq:
        os_ = owners.get(ln)
        if not os_ or ln == prev:  # not this family's line; or a repeat once those are gone
            continue
        prev = ln
        if 'dispatch' in os_:
            started = True
            continue
        if not started:
            continue
        g = collections.Counter(group(o) for o in os_).most_common(1)[0][0]
        if cur and g != cur_g and not any(group(o) == cur_g for o in os_):
            calls.append((cur_g, cur))
            cur = []
        if not cur:
            cur_g = g
        cur.append(ln)
    calls = calls[1:]  # the first may be partial
    stats = collections.defaultdict(lambda: [0.0, 0.0, 0, 0])
    for g, c in calls:
        n = max(len(c) - 1, 1)
        first, last, times = {}, {}, collections.Counter()
        for i, ln in enumerate(c):
            first.setdefault(ln, i)
            last[ln] = i
            times[ln] += 1
        for ln in first:
            for o in owners[ln]:
                if group(o) != g:
                    continue
                s = stats[(ln, o)]
                s[0] += first[ln] / n
                s[1] += last[ln] / n
                s[2] += times[ln] >= 2
                s[3] += 1
    return {k: (a / c, b / c, t / c, c) for k, (a, b, t, c) in stats.items()}


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
    ap.add_argument('--small', action='store_true', default=True,
                    help='also calibrate at b = 7 / V = 7 (families on-small, off-small; tune uses them for calls '
                         'of 4-15 packets and for the tails of other calls); the default since session 9')
    ap.add_argument('--no-small', dest='small', action='store_false',
                    help='leave out the b = 7 families (session 8)')
    ap.add_argument('--no-order', dest='order', action='store_false', default=True,
                    help='leave out the lackey runs that measure the order of lines inside calls')
    ap.add_argument('--jobs', type=int, default=1,
                    help='valgrind runs at once (callgrind runs first, then the lackey runs)')
    a = ap.parse_args()
    settings = dict(SETTINGS, **(HUGE if a.huge else {}), **(SMALL if a.small else {}))
    extra = ['--deadline-us', str(a.deadline_us)]
    os.makedirs(a.work, exist_ok=True)
    # The monomorphisations of DynNode::process_dyn share one name: split them by address.
    syms = []
    for l in subprocess.run(['nm', '-S', '-C', '--defined-only', a.ppb], capture_output=True, text=True).stdout.splitlines():
        p = l.split(' ', 3)
        if len(p) == 4 and p[2] in 'tT' and DYN in p[3]:
            syms.append((int(p[0], 16), int(p[1], 16)))
    fams = {}
    keys = [(traffic, fam) for traffic in ('alternating', 'realistic') for fam in settings]
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        runs = {(t, fam, n): ex.submit(run, a.ppb, a.work, t, *settings[fam], n, extra)
                for t, fam in keys for n in (50_000, 150_000)}
        runs = {k: f.result() for k, f in runs.items()}
    for traffic, fam in keys:
        b, v = settings[fam]
        lo, slo = runs[(traffic, fam, 50_000)]
        hi, shi = runs[(traffic, fam, 150_000)]
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

    # Instruction sizes (ppb's own code; libc's for its mem* functions) for the lines
    # reached only by the tail of a straddling instruction.
    sizes = {'ppb': instruction_sizes(a.ppb)}
    libc = libc_path(a.ppb)
    sizes['libc'] = instruction_sizes(libc) if libc else {}

    doc = {'binary': a.ppb, 'line_bytes': 64, 'deadline_us': a.deadline_us, 'process_dyn_owners': {f'{s:#x}': o for (s, _), o in dyn_owner.items()}, 'families': {}}
    fam_lines = {}
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
            # A line is touched when any of its instructions runs: its most executed one
            # (an instruction straddling into the next line touches that one too).
            size = sizes['libc' if fn.startswith('__mem') else 'ppb'].get(addr, 1)
            for touched in {ln, (addr + size - 1) >> 6}:
                if c > lines[(touched, o)]:
                    lines[(touched, o)] = c
                own.setdefault(touched, o)
            own[ln] = o
        fam_lines[key] = lines
    seqs = {}
    if a.order:
        # One lackey run per family (each with its own list of lines), a.jobs at once.
        lackey_filter(a.work)
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
            for key, lines in fam_lines.items():
                lf = f'{a.work}/lines-{key}.txt'
                with open(lf, 'w') as fh:
                    fh.write('\n'.join(str(ln) for ln in sorted({ln for (ln, _) in lines})) + '\n')
                f = fams[key]
                seqs[key] = ex.submit(lackey_order, a.ppb, a.work, key.split('-')[0], f['batch'], f['vector'],
                                      extra, lf)
            seqs = {k: v.result() for k, v in seqs.items()}
    for key, f in fams.items():
        lines = fam_lines[key]
        entries = [{'line': ln, 'node': o, 'per_packet': c} for (ln, o), c in sorted(lines.items())]
        if a.order:
            owners = collections.defaultdict(set)
            for (ln, o) in lines:
                owners[ln].add(o)
            order = call_order(seqs[key], owners)
            for e in entries:
                if (e['line'], e['node']) in order:
                    first, last, twice, calls = order[(e['line'], e['node'])]
                    e.update(first=round(first, 4), last=round(last, 4), twice=round(twice, 4), order_calls=calls)
        doc['families'][key] = {
            'batch': f['batch'], 'vector': f['vector'],
            'nodes': {k: {'calls': c, 'packets': p} for k, (c, p) in f['nodes'].items()},
            'lines': entries,
        }
        print(key, len(doc['families'][key]['lines']), 'lines', collections.Counter(o for (_, o) in lines))
    print('process_dyn owners:', doc['process_dyn_owners'])
    json.dump(doc, open(a.out, 'w'), indent=0)


if __name__ == '__main__':
    main()
