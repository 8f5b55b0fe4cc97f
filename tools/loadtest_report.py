#!/usr/bin/env python3
"""Turns the TSV of tools/loadtest.sh into the markdown table of docs/server.md and a bar chart
(docs/server-loadtest.svg: texts/s per engine and load shape).
   loadtest_report.py [docs/server-loadtest.tsv] [docs/server-loadtest.svg]"""
import csv, sys, html

tsv = sys.argv[1] if len(sys.argv) > 1 else "docs/server-loadtest.tsv"
svg = sys.argv[2] if len(sys.argv) > 2 else "docs/server-loadtest.svg"
rows = list(csv.DictReader(open(tsv), delimiter="\t"))
# The last measurement of each cell wins (a re-run appends).
cells = {}
for r in rows:
    cells[(r["engine"], r["clients"], r["texts_per_request"])] = r
engines = []
for r in rows:
    if r["engine"] not in engines: engines.append(r["engine"])

print("| engine | clients | texts/request | texts/s | p50 ms | p99 ms | errors | load (1 min) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for (engine, clients, n), r in cells.items():
    print(f"| {engine} | {clients} | {n} | {float(r['texts_per_s']):.0f} | {r['p50_ms']} | {r['p99_ms']} | {r['errors']} | {r['load1']} |")

shapes = [(c, n) for c in ("1", "8", "64") for n in ("1", "32")]
served = [e for e in engines if not e.startswith("bert-embed")]
colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]
width, height, left, bottom, top = 900, 380, 60, 60, 30
peak = max([float(cells[(e, c, n)]["texts_per_s"]) for e in served for c, n in shapes if (e, c, n) in cells] + [1])
group_w = (width - left - 20) / len(shapes)
bar_w = group_w * 0.8 / max(1, len(served))
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
       f'<text x="{left}" y="18" font-size="13">Texts/s by load shape (clients × texts per request), all-MiniLM-L6-v2, 2-core EPYC</text>']
plot_h = height - bottom - top
for i in range(5):
    v = peak * i / 4
    y = height - bottom - plot_h * i / 4
    out.append(f'<line x1="{left}" x2="{width-20}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/><text x="{left-5}" y="{y+4:.1f}" text-anchor="end">{v:.0f}</text>')
for g, (c, n) in enumerate(shapes):
    x0 = left + g * group_w + group_w * 0.1
    out.append(f'<text x="{x0 + group_w*0.4:.1f}" y="{height-bottom+15}" text-anchor="middle">{c} × {n}</text>')
    for k, e in enumerate(served):
        r = cells.get((e, c, n))
        if not r: continue
        v = float(r["texts_per_s"])
        h = plot_h * v / peak
        out.append(f'<rect x="{x0 + k*bar_w:.1f}" y="{height-bottom-h:.1f}" width="{bar_w-1:.1f}" height="{h:.1f}" fill="{colors[k % len(colors)]}"><title>{html.escape(e)}: {v:.0f} texts/s</title></rect>')
for k, e in enumerate(served):
    out.append(f'<rect x="{left + k*150}" y="{height-22}" width="10" height="10" fill="{colors[k % len(colors)]}"/><text x="{left + k*150 + 14}" y="{height-13}">{html.escape(e)}</text>')
out.append("</svg>")
open(svg, "w").write("\n".join(out) + "\n")
