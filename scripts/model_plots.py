#!/usr/bin/env python3
"""Plots for docs/results/model.md from the JSON that `examples/tune.rs` writes.

    python3 scripts/model_plots.py --cache docs/results/model-cache.json
    python3 scripts/model_plots.py --online docs/results/model-online-l3fwd.json

--cache: I1 and D1 misses per packet, predicted (lines) vs measured (dots), per traffic,
L1i size and batcher state (docs/results/model-cache-*.svg).
--online: throughput per tuner window across the traffic changes, with each phase's best
fixed setting and the initially chosen setting kept fixed (docs/results/model-online-<app>.svg).
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--cache')
    ap.add_argument('--online', action='append', default=[])
    a = ap.parse_args()
    if a.cache:
        cache_plot(json.load(open(a.cache)), os.path.join(os.path.dirname(a.cache), 'model-cache'))
    for f in a.online:
        d = json.load(open(f))
        suffix = '' if d.get('trigger', 'cycles') == 'profile' else '-cycles'
        online_plot(d, os.path.join(os.path.dirname(f), f"model-online-{d['app']}{suffix}.svg"))


if __name__ == '__main__':
    main()
