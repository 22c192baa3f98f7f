#!/usr/bin/env python3
"""Plots for docs/results/model.md from the JSON that `examples/tune.rs` writes.

    python3 scripts/model_plots.py --cache docs/results/model-cache.json
    python3 scripts/model_plots.py --online docs/results/model-online-l3fwd.json

--cache: I1 and D1 misses per packet, predicted (lines) vs measured (dots), per traffic,
L1i size and batcher state (docs/results/model-cache-*.svg).
--online: throughput per tuner window across the traffic changes, with each phase's best
fixed setting and the initially chosen setting kept fixed (docs/results/model-online-<app>.svg).
--sittings: a pooled sitting file (scripts/model_pool.py): predicted vs measured cycles per
packet of every grid point, and per case the fair tuner quality next to the grid's best
re-measured against itself (`--recheck-self`) (docs/results/<file>-cycles.svg).
"""
import argparse, json, math, os

COLORS = ['#2a6', '#c33', '#36c', '#a6a', '#888', '#c80', '#0aa', '#333']


def svg_open(W, H, title):
    return [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
            f'<rect width="{W}" height="{H}" fill="white"/>',
            f'<text x="{W/2}" y="18" text-anchor="middle" font-size="14">{title}</text>']


def cache_plot(doc, out_prefix):
    rows = doc['rows']
    for ev in ('i1', 'd1'):
        W, H, L, B, T = 760, 420, 70, 50, 34
        title = ('I1 misses/packet: replay (solid), lru_path (dashed), cachegrind (dots; hollow: calibration)'
                 if ev == 'i1' and 'i1_replay' in rows[0] else
                 f'{ev.upper()} misses per packet: model (lines; I1 dashed: path-model calls) vs cachegrind (dots); hollow = calibration')
        o = svg_open(W, H, title)
        series = {}
        for r in rows:
            if ev == 'd1' and r['l1i'] != 32768:
                continue  # D1 does not depend on the simulated L1i
            lab = f"{r['traffic']}, batcher {r['batcher']}" + (f", L1i {r['l1i']//1024} KiB" if ev == 'i1' else '')
            series.setdefault(lab, []).append(r)
        bs = sorted({r['b'] for r in rows})
        logy = ev == 'i1'
        # Log axis: values at or below FLOOR (misses measured at ~0) are drawn at the floor.
        FLOOR = 1e-3
        # I1: the trace replay (solid) and the rate-based LRU model with the path model's
        # calls (dashed), when present; else the older keys.
        pk = next((k for k in ('i1_replay', 'i1_lru') if ev == 'i1' and k in rows[0]), f'{ev}_predicted')
        dk = 'i1_lru_path' if ev == 'i1' and 'i1_lru_path' in rows[0] else None
        ck = 'calibration_i1' if ev == 'i1' and 'calibration_i1' in rows[0] else 'calibration'
        ys = [r[k] for r in rows for k in (pk, f'{ev}_measured') + ((dk,) if dk else ())]
        ymin, ymax = (max(min(ys), FLOOR) * 0.8, max(ys) * 1.2) if logy else (0, max(ys) * 1.1)
        px = lambda b: L + (W - L - 230) * math.log2(b) / math.log2(bs[-1])
        py = (lambda v: H - B - (H - B - T) * (math.log10(max(v, FLOOR)) - math.log10(ymin)) / (math.log10(ymax) - math.log10(ymin))) if logy \
            else (lambda v: H - B - (H - B - T) * v / ymax)
        o.append(f'<line x1="{L}" y1="{H-B}" x2="{W-220}" y2="{H-B}" stroke="black"/><line x1="{L}" y1="{T}" x2="{L}" y2="{H-B}" stroke="black"/>')
        o.append(f'<text x="{(W-150)/2}" y="{H-10}" text-anchor="middle">b (batch size with the batcher, vector size without)</text>')
        for b in bs:
            o.append(f'<text x="{px(b)}" y="{H-B+16}" text-anchor="middle">{b}</text>')
        ticks = [10 ** k for k in range(math.floor(math.log10(ymin)), math.ceil(math.log10(ymax)) + 1)] if logy else [ymax * k / 4 for k in range(5)]
        for v in ticks:
            if ymin <= v <= ymax:
                o.append(f'<line x1="{L}" y1="{py(v):.1f}" x2="{W-220}" y2="{py(v):.1f}" stroke="#ddd"/><text x="{L-6}" y="{py(v)+4:.1f}" text-anchor="end">{v:.3g}</text>')
        for j, (lab, rs) in enumerate(series.items()):
            c = COLORS[j % len(COLORS)]
            rs = sorted(rs, key=lambda r: r['b'])
            pts = ' '.join(f"{px(r['b']):.1f},{py(r[pk]):.1f}" for r in rs)
            o.append(f'<polyline fill="none" stroke="{c}" stroke-width="1.5" points="{pts}"/>')
            if dk:
                pts = ' '.join(f"{px(r['b']):.1f},{py(r[dk]):.1f}" for r in rs)
                o.append(f'<polyline fill="none" stroke="{c}" stroke-width="1" stroke-dasharray="4 3" points="{pts}"/>')
            for r in rs:
                fill = 'white' if r[ck] else c
                o.append(f'<circle cx="{px(r["b"]):.1f}" cy="{py(r[f"{ev}_measured"]):.1f}" r="3.5" fill="{fill}" stroke="{c}"/>')
            o.append(f'<rect x="{W-212}" y="{T+4+16*j}" width="10" height="10" fill="{c}"/><text x="{W-198}" y="{T+13+16*j}" font-size="11">{lab}</text>')
        o.append('</svg>')
        open(f'{out_prefix}-{ev}.svg', 'w').write('\n'.join(o))


def online_plot(doc, out):
    ws = [w for w in doc['windows'] if w.get('round', 0) == 0]
    W, H, L, B, T = 860, 420, 70, 60, 40
    o = svg_open(W, H, f"{doc['app']}: throughput per tuner window ({doc['window_vectors']} vectors), round 1, trigger: {doc.get('trigger', 'cycles')}")
    ys = [w['mpps'] for w in ws]
    fixed = doc['fixed']
    best = [max(s['mpps'] for s in f['settings']) for f in fixed]
    ymax = max(ys + best) * 1.1
    n = len(ws)
    px = lambda i: L + (W - L - 20) * i / max(n - 1, 1)
    py = lambda v: H - B - (H - B - T) * v / ymax
    o.append(f'<line x1="{L}" y1="{H-B}" x2="{W-10}" y2="{H-B}" stroke="black"/><line x1="{L}" y1="{T}" x2="{L}" y2="{H-B}" stroke="black"/>')
    o.append(f'<text x="14" y="{(H-B+T)/2}" transform="rotate(-90 14 {(H-B+T)/2})" text-anchor="middle">Mpps (wall clock, per window)</text>')
    o.append(f'<text x="{(W+L)/2}" y="{H-12}" text-anchor="middle">window (grey: exploring)</text>')
    for k in range(5):
        v = ymax * k / 4
        o.append(f'<line x1="{L}" y1="{py(v):.1f}" x2="{W-10}" y2="{py(v):.1f}" stroke="#eee"/><text x="{L-6}" y="{py(v)+4:.1f}" text-anchor="end">{v:.3g}</text>')
    # Exploring windows shaded; segment boundaries and labels; best fixed and initial fixed lines.
    init = doc['initial']
    for i, w in enumerate(ws):
        if w['exploring']:
            o.append(f'<rect x="{px(i)-(W-L-20)/max(n-1,1)/2:.1f}" y="{T}" width="{(W-L-20)/max(n-1,1):.1f}" height="{H-B-T}" fill="#eee"/>')
    segs = doc['segments']
    start = 0
    for s in segs:
        cnt = sum(1 for w in ws if w['segment'] == s['segment'])
        x0, x1 = px(start), px(start + cnt - 1)
        p = s['phase']
        o.append(f'<line x1="{x0:.1f}" y1="{T}" x2="{x0:.1f}" y2="{H-B}" stroke="#999" stroke-dasharray="3,3"/>')
        o.append(f'<text x="{(x0+x1)/2:.1f}" y="{T+12}" text-anchor="middle" font-size="11">{s["traffic"]}</text>')
        b = s['best_fixed']
        o.append(f'<line x1="{x0:.1f}" y1="{py(b["mpps"]):.1f}" x2="{x1:.1f}" y2="{py(b["mpps"]):.1f}" stroke="#2a6" stroke-dasharray="6,3"/>')
        iv = s['initial_fixed_mpps']
        if iv == iv:
            o.append(f'<line x1="{x0:.1f}" y1="{py(iv):.1f}" x2="{x1:.1f}" y2="{py(iv):.1f}" stroke="#c33" stroke-dasharray="2,3"/>')
        start += cnt
    pts = ' '.join(f'{px(i):.1f},{py(w["mpps"]):.1f}' for i, w in enumerate(ws))
    o.append(f'<polyline fill="none" stroke="#36c" stroke-width="1.5" points="{pts}"/>')
    # Settings: label each change of (V, b).
    last = None
    for i, w in enumerate(ws):
        key = (w['vector'], w['sub_batch'])
        if key != last and not w['exploring']:
            o.append(f'<text x="{px(i):.1f}" y="{py(w["mpps"])-6:.1f}" font-size="9" fill="#36c">{key[0]}/{key[1]}</text>')
        last = key
    ly = H - B + 30
    o.append(f'<line x1="{L}" y1="{ly}" x2="{L+24}" y2="{ly}" stroke="#36c" stroke-width="1.5"/><text x="{L+28}" y="{ly+4}">tuner (labels: V/b)</text>')
    o.append(f'<line x1="{L+170}" y1="{ly}" x2="{L+194}" y2="{ly}" stroke="#2a6" stroke-dasharray="6,3"/><text x="{L+198}" y="{ly+4}">best fixed setting of the phase</text>')
    o.append(f'<line x1="{L+400}" y1="{ly}" x2="{L+424}" y2="{ly}" stroke="#c33" stroke-dasharray="2,3"/><text x="{L+428}" y="{ly+4}">initial choice V {init["vector"]}, b {init["sub_batch"]} kept fixed</text>')
    o.append('</svg>')
    open(out, 'w').write('\n'.join(o))


CASES = ['l3fwd-small', 'l3fwd-large', 'l2fwd-small', 'l2fwd-large']


def sittings_plot(doc, out):
    runs = [(c, r) for s in doc['sittings'] for c, r in zip(CASES, s['runs'])]
    W, H, T, B = 1000, 460, 40, 60
    o = svg_open(W, H, f"{len(doc['sittings'])} sittings: predicted vs measured cycles/packet (left), "
                       f"fair tuner quality vs the judge against itself (right)")
    # Left panel: log-log scatter, y = x and ±30%.
    L1, R1 = 70, 470
    pts = [(c, g['predicted'], g['measured']) for c, r in runs for g in r['grid']]
    lo = min(min(p[1], p[2]) for p in pts) * 0.9
    hi = max(max(p[1], p[2]) for p in pts) * 1.1
    tx = lambda v: L1 + (R1 - L1) * math.log(v / lo) / math.log(hi / lo)
    ty = lambda v: H - B - (H - B - T) * math.log(v / lo) / math.log(hi / lo)
    o.append(f'<rect x="{L1}" y="{T}" width="{R1-L1}" height="{H-B-T}" fill="none" stroke="black"/>')
    for k in (1.0, 1.3, 1 / 1.3):
        dash = '' if k == 1.0 else ' stroke-dasharray="4,3"'
        x0, x1 = lo, hi
        # Clip the line y = k·x to the box.
        a0, a1 = max(x0, lo / k), min(x1, hi / k)
        o.append(f'<line x1="{tx(a0):.1f}" y1="{ty(a0*k):.1f}" x2="{tx(a1):.1f}" y2="{ty(a1*k):.1f}" stroke="#999"{dash}/>')
    v = 50
    while v < hi:
        if v > lo:
            o.append(f'<text x="{tx(v):.1f}" y="{H-B+14}" text-anchor="middle" font-size="10">{v}</text>')
            o.append(f'<text x="{L1-4}" y="{ty(v)+4:.1f}" text-anchor="end" font-size="10">{v}</text>')
        v *= 2
    for c, p, m in pts:
        col = COLORS[CASES.index(c)]
        o.append(f'<circle cx="{tx(m):.1f}" cy="{ty(p):.1f}" r="1.6" fill="{col}" fill-opacity="0.5"/>')
    for i, c in enumerate(CASES):
        o.append(f'<circle cx="{L1+12}" cy="{T+14+16*i}" r="4" fill="{COLORS[i]}"/><text x="{L1+22}" y="{T+18+16*i}" font-size="11">{c}</text>')
    o.append(f'<text x="{(L1+R1)/2}" y="{H-B+32}" text-anchor="middle">measured (normalised median), cycles/packet</text>')
    o.append(f'<text x="16" y="{(H-B+T)/2}" transform="rotate(-90 16 {(H-B+T)/2})" text-anchor="middle">predicted, cycles/packet (dashed: ±30%)</text>')
    # Right panel: per case, fair quality (dots) and the self ratio (crosses).
    L2, R2 = 560, 980
    qs = [r['fair_quality'] for _, r in runs] + [r.get('recheck_self') or 1.0 for _, r in runs]
    qlo, qhi = min(min(qs) - 0.02, 0.85), max(max(qs) + 0.02, 1.15)
    qy = lambda q: H - B - (H - B - T) * (q - qlo) / (qhi - qlo)
    o.append(f'<rect x="{L2}" y="{T}" width="{R2-L2}" height="{H-B-T}" fill="none" stroke="black"/>')
    for q in (0.9, 0.95, 1.0, 1.05, 1.1):
        if qlo < q < qhi:
            dash = ' stroke-dasharray="4,3"' if q == 0.95 else ''
            col = '#c33' if q == 0.95 else '#ddd'
            o.append(f'<line x1="{L2}" y1="{qy(q):.1f}" x2="{R2}" y2="{qy(q):.1f}" stroke="{col}"{dash}/>')
            o.append(f'<text x="{L2-4}" y="{qy(q)+4:.1f}" text-anchor="end" font-size="10">{100*q:.0f}%</text>')
    cw = (R2 - L2) / len(CASES)
    for i, c in enumerate(CASES):
        x = L2 + cw * (i + 0.5)
        o.append(f'<text x="{x:.1f}" y="{H-B+14}" text-anchor="middle" font-size="11">{c}</text>')
        mine = [r for cc, r in runs if cc == c]
        for j, r in enumerate(mine):
            dx = (j - len(mine) / 2) * 2.2
            o.append(f'<circle cx="{x-18+dx:.1f}" cy="{qy(r["fair_quality"]):.1f}" r="2.2" fill="{COLORS[i]}"/>')
            if r.get('recheck_self'):
                yy = qy(r['recheck_self'])
                xx = x + 18 + dx
                o.append(f'<path d="M{xx-2:.1f},{yy-2:.1f}L{xx+2:.1f},{yy+2:.1f}M{xx-2:.1f},{yy+2:.1f}L{xx+2:.1f},{yy-2:.1f}" stroke="#333"/>')
    o.append(f'<text x="{(L2+R2)/2}" y="{H-B+32}" text-anchor="middle">dots: fair quality (best / tuner, re-measured); ×: best / itself</text>')
    o.append('</svg>')
    open(out, 'w').write('\n'.join(o))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--cache')
    ap.add_argument('--online', action='append', default=[])
    ap.add_argument('--sittings')
    a = ap.parse_args()
    if a.sittings:
        sittings_plot(json.load(open(a.sittings)), a.sittings[:-len('.json')] + '-cycles.svg')
    if a.cache:
        cache_plot(json.load(open(a.cache)), os.path.join(os.path.dirname(a.cache), 'model-cache'))
    for f in a.online:
        d = json.load(open(f))
        suffix = '' if d.get('trigger', 'cycles') == 'profile' else '-cycles'
        online_plot(d, os.path.join(os.path.dirname(f), f"model-online-{d['app']}{suffix}.svg"))


if __name__ == '__main__':
    main()
