#!/usr/bin/env python3
"""Tuner-quality sittings of `tune` (model.md): per-sitting tables and the pooled grid.

usage: scripts/model_pool.py OUT.json TAG:DESCRIPTION:DIR/PREFIX ...
Each TAG reads PREFIX-{l3fwd,l2fwd}-{small,large}.json (`tune ... --json` output). Prints
one markdown row per case and sitting, and the pooled ranking: for every setting, the
median over sittings of (sitting's best measured / setting's measured).
"""
import json
import statistics as st
import sys

CASES = ["l3fwd-small", "l3fwd-large", "l2fwd-small", "l2fwd-large"]


def main():
    out, specs = sys.argv[1], sys.argv[2:]
    doc = {"sittings": [], "pooled": {}}
    rel = {c: {} for c in CASES}
    for spec in specs:
        tag, desc, prefix = spec.split(":", 2)
        s = {"tag": tag, "description": desc, "runs": []}
        for c in CASES:
            r = json.load(open(f"{prefix}-{c}.json"))
            if not desc.startswith("final"):
                # Earlier code: keep the grid and the choices, not the calibration.
                r = {k: v for k, v in r.items() if k not in ("calibration", "machine")}
            s["runs"].append(r)
            best = min(x["measured"] for x in r["grid"])
            for x in r["grid"]:
                rel[c].setdefault((x["vector"], x["sub_batch"]), []).append(best / x["measured"])
            mc, b = r["model_choice"], r["best"]
            u = r.get("model_unrestricted")
            print(
                f"| {tag} | {c.replace('-', ', ')} | {100*r['median_abs_error']:.1f}% | "
                f"{100*r['worst_abs_error']:.1f}% | {100*r['stall_share']:.1f}% "
                f"({r['table_fit']}{', resident' if r['cache_resident'] else ''}) | "
                f"V {mc['vector']}, b {mc['sub_batch']}: {mc['measured']:.1f} | "
                f"V {b['vector']}, b {b['sub_batch']}: {b['measured']:.1f} | "
                f"**{100*mc['quality']:.1f}%** | "
                f"V {u['vector']}, b {u['sub_batch']}: {100*u['quality']:.1f}% |"
            )
        doc["sittings"].append(s)
    print()
    for c in CASES:
        ranked = sorted(rel[c].items(), key=lambda kv: -st.median(kv[1]))
        doc["pooled"][c] = [
            {"vector": k[0], "sub_batch": k[1], "median_rel": st.median(v), "n": len(v)}
            for k, v in ranked
        ]
        top = ", ".join(f"V {k[0]} b {k[1]}: {100*st.median(v):.1f}%" for k, v in ranked[:4])
        v256 = ", ".join(
            f"{b}: {100*st.median(rel[c][(256, b)]):.1f}" for b in [1, 2, 4, 8, 16, 32, 64]
        )
        print(f"| {c.replace('-', ', ')} | {top} | {v256} |")
    # Compact: since session 9 every run stores its raw runs (`runs_raw`, ~200 per case).
    json.dump(doc, open(out, "w"), separators=(",", ":"))


if __name__ == "__main__":
    main()
