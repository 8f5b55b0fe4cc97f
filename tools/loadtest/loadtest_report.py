#!/usr/bin/env python3
"""Turns the TSV of tools/loadtest/loadtest.sh into the "## Load test" section of docs/server.md (the
table, the issue's goals checked against it, how it was run) and a bar chart
(docs/server-loadtest.svg: texts/s per engine and load shape). Without a markdown path, prints
the section instead.
   loadtest_report.py [docs/server-loadtest.tsv] [docs/server-loadtest.svg] [docs/server.md]"""
import csv, os, sys, html

tsv = sys.argv[1] if len(sys.argv) > 1 else "docs/server-loadtest.tsv"
svg = sys.argv[2] if len(sys.argv) > 2 else "docs/server-loadtest.svg"
markdown = sys.argv[3] if len(sys.argv) > 3 else None
# Without a TSV (before the first run on a quiet machine) the section says how to make one.
rows = list(csv.DictReader(open(tsv), delimiter="\t")) if os.path.exists(tsv) else []
# The last measurement of each cell wins (a partial re-run appends).
cells = {}
for r in rows:
    cells[(r["engine"], r["clients"], r["texts_per_request"])] = r
engines = []
for r in rows:
    if r["engine"] not in engines: engines.append(r["engine"])

def answered(engine, clients, n):
    """The cell, if it answered any request in its window."""
    r = cells.get((engine, clients, n))
    return r if r and int(r["requests"]) > 0 else None

def rate(engine, clients, n):
    r = answered(engine, clients, n)
    return float(r["texts_per_s"]) if r else None

def p99(engine, clients, n):
    r = answered(engine, clients, n)
    return float(r["p99_ms"]) if r and r["p99_ms"] != "-" else None

times = sorted(r["utc"] for r in rows if r.get("utc"))
loads = [float(r["load1"]) for r in rows]
lines = ["## Load test", ""]
lines += [
    "`tools/loadtest/loadtest.sh` runs every engine side by side in one run on this machine (the 2-core AMD",
    "EPYC, Zen 5, 24 GiB), one engine at a time, each serving all-MiniLM-L6-v2 on 127.0.0.1 through",
    "OpenAI's embeddings route: the SwiftBERT server in FP32 and INT8 (default options),",
    "infinity-emb 0.0.78 with its torch backend and `--batch-size 32` (torch 2.13 CPU), and",
    "sentence-transformers behind FastAPI/uvicorn (`tools/loadtest/st_server.py`, one `encode` per request).",
    "wrk (`tools/loadtest/wrk_body.lua`) keeps 1, 8 or 64 connections busy with requests of 1 or 32 texts,",
    "cycling through the 300 multilingual fixture sentences; each cell has a 2-second warm-up, a",
    "wait until the server is idle again, then the measured window (10 s; 30 s for 64 × 32).",
    "Texts/s counts answered texts over the window; p50 and p99 are wrk's, per request. Then",
    "`bert embed --input` embeds 3,000 of the same lines (the 300, ten times) offline.",
    "infinity-emb's ONNX backend is not in the table: it does not run offline here. The HF folder",
    "has no .onnx file (infinity would fetch the hub's); with one exported locally by `optimum-cli",
    "export onnx`, infinity 0.0.78 with optimum 2.1 + optimum-onnx 0.1 fails to load it (it passes",
    "an absolute `file_name` that optimum-onnx no longer matches), and optimum 1.27, which it was",
    "written for, does not import with torch 2.13, the only torch wheel here (`_attention_scale`",
    "is gone from `torch.onnx.symbolic_opset14`).",
    "",
    "```sh",
    "make bert      # swift build -c release $(cat tools/native-flags) --traits Server --product bert",
    "tools/loadtest/loadtest.sh        # installs wrk and the Python venvs (tools/loadtest/loadtest_setup.sh), runs, writes this section",
    "```",
    "",
]
if not rows:
    lines += ["**Not measured yet on a quiet machine**: the command above writes the table, the goals and the chart here.", ""]
if times:
    lines.append(f"Measured {times[0]} to {times[-1]}; load average (1 min) {min(loads):.2f} to {max(loads):.2f} during the run.")
    lines.append("")

if rows:
    lines.append("| engine | clients | texts/request | texts/s | p50 ms | p99 ms | requests | errors |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|")
for (engine, clients, n), r in cells.items():
    lines.append(f"| {engine} | {clients} | {n} | {float(r['texts_per_s']):.0f} | {r['p50_ms']} | {r['p99_ms']} | {r['requests']} | {r['errors']} |")
if rows:
    lines.append("")

# The goals, at 64 clients.
goals = []
for precision in ("fp32", "int8"):
    engine = f"swiftbert-{precision}"
    for n in ("1", "32"):
        s, i = rate(engine, "64", n), rate("infinity-torch", "64", n)
        if s is not None and i:
            ok = s >= 3 * i
            goals.append(f"| {engine}, 64 × {n} | ≥ 3× infinity-emb's texts/s | {s:.0f} vs {i:.0f}: {s / i:.1f}× | {'met' if ok else 'missed'} |")
        sp, ip = p99(engine, "64", n), p99("infinity-torch", "64", n)
        if sp is not None and ip:
            goals.append(f"| {engine}, 64 × {n} | p99 ≤ infinity-emb's | {sp:.0f} ms vs {ip:.0f} ms | {'met' if sp <= ip else 'missed'} |")
        o = rate(f"bert-embed-offline-{precision}", "-", "3000")
        if s is not None and o:
            goals.append(f"| {engine}, 64 × {n} | ≥ 85% of `bert embed --precision {precision}` offline | {s:.0f} vs {o:.0f}: {100 * s / o:.0f}% | {'met' if s >= 0.85 * o else 'missed'} |")
if goals:
    lines += ["The issue's goals at 64 clients:", "",
              "| cell | goal | measured | |", "|---|---|---|---|"] + goals + [""]

if rows:
    lines += ["![texts/s per engine and load shape](server-loadtest.svg)", ""]
section = "\n".join(lines)

# The chart.
shapes = [(c, n) for c in ("1", "8", "64") for n in ("1", "32")]
served = [e for e in engines if not e.startswith("bert-embed")]
colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]
width, height, left, bottom, top = 900, 380, 60, 60, 30
peak = max([rate(e, c, n) or 0 for e in served for c, n in shapes] + [1])
group_w = (width - left - 20) / len(shapes)
bar_w = group_w * 0.8 / max(1, len(served))
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
       f'<rect width="{width}" height="{height}" fill="white"/>',
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
        v = rate(e, c, n)
        if v is None: continue
        h = plot_h * v / peak
        out.append(f'<rect x="{x0 + k*bar_w:.1f}" y="{height-bottom-h:.1f}" width="{bar_w-1:.1f}" height="{h:.1f}" fill="{colors[k % len(colors)]}"><title>{html.escape(e)}: {v:.0f} texts/s</title></rect>')
for k, e in enumerate(served):
    out.append(f'<rect x="{left + k*150}" y="{height-22}" width="10" height="10" fill="{colors[k % len(colors)]}"/><text x="{left + k*150 + 14}" y="{height-13}">{html.escape(e)}</text>')
out.append("</svg>")
if rows:
    open(svg, "w").write("\n".join(out) + "\n")

if markdown:
    text = open(markdown).read()
    start = text.index("## Load test")
    rest = text[start + len("## Load test"):]
    following = rest.find("\n## ")
    tail = rest[following + 1:] if following >= 0 else ""
    open(markdown, "w").write(text[:start] + section + ("\n" + tail if tail else ""))
else:
    print(section)
