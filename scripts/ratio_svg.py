"""One plot for the DPDK comparison scripts (`dpdk_ab.py`, `dpdk_interleave.py`): per
variant, a bar at the median of its ratios to the baseline and a dot per ratio, with
dashed lines at 1.00 (the baseline) and 1.10 (the issue's target)."""


def ratio_plot(path, bars, title, subtitle, baseline, decimals=2, dot=2.5, ymax_at_least=0.0):
    """Writes the SVG to `path`. `bars`: (label, colour, median, ratios) per variant."""
    ymax = max(ymax_at_least, max(max(r) for _, _, _, r in bars) * 1.05)
    W, H, L, B, T = max(640, 120 * len(bars) + 80), 360, 60, 50, 40
    y = lambda v: H - B - (H - B - T) * v / ymax
    bw = (W - L - 20) / len(bars)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<text x="{W/2}" y="18" text-anchor="middle" font-size="14">{title}</text>',
           f'<text x="{W/2}" y="32" text-anchor="middle" font-size="11">{subtitle}</text>',
           f'<line x1="{L}" y1="{H-B}" x2="{W-10}" y2="{H-B}" stroke="black"/>',
           f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H-B}" stroke="black"/>']
    t = 0.0
    while t <= ymax:
        out.append(f'<text x="{L-6}" y="{y(t)+4}" text-anchor="end">{t:.1f}</text>'
                   f'<line x1="{L}" y1="{y(t)}" x2="{W-10}" y2="{y(t)}" stroke="#ddd"/>')
        t += 0.2
    for v, col, lab in ((1.0, '#888', f'1.00 ({baseline})'), (1.1, '#c33', '1.10 (target)')):
        out.append(f'<line x1="{L}" y1="{y(v)}" x2="{W-10}" y2="{y(v)}" stroke="{col}" stroke-dasharray="4,3"/>'
                   f'<text x="{W-12}" y="{y(v)-3}" text-anchor="end" fill="{col}" font-size="10">{lab}</text>')
    for i, (label, col, m, rs) in enumerate(bars):
        x0 = L + i * bw + bw * 0.2
        out.append(f'<rect x="{x0}" y="{y(m)}" width="{bw*0.6}" height="{H-B-y(m)}" fill="{col}" opacity="0.6"/>'
                   f'<text x="{x0+bw*0.3}" y="{y(m)-4}" text-anchor="middle" font-size="11">{m:.{decimals}f}</text>')
        for k, r in enumerate(rs):
            out.append(f'<circle cx="{x0 + bw*0.05 + (bw*0.5)*k/max(1, len(rs)-1)}" cy="{y(r)}" r="{dot}" fill="black" opacity="0.6"/>')
        out.append(f'<text x="{x0+bw*0.3}" y="{H-B+16}" text-anchor="middle" font-size="10">{label}</text>')
    with open(path, 'w') as f:
        f.write('\n'.join(out + ['</svg>']))
