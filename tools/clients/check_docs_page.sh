#!/usr/bin/env bash
# tools/clients/check_docs_page.sh: GET /docs of `bert serve` checked in headless Chromium, as a
# person would see it: the page's inline script must fetch /openapi.json and render every route.
#
# Usage: tools/clients/check_docs_page.sh [--bert PATH] [--out DIR]
#   --bert PATH  the bert binary (default: .build/release/bert of this repository)
#   --out DIR    where to keep openapi.json, dom.html, docs.png and the logs
#                (default: a new /tmp/check_docs_page.XXXXXX, kept and printed)
#
# It starts `bert serve --model all-MiniLM-L6-v2,splade-tiny --port 0` on 127.0.0.1 (from the
# repository root, so weights/ is found; SWIFTBERT_API_KEY is unset for it, so the page is
# checked as an open server serves it), waits for GET /health 200, fetches /openapi.json with
# curl, then runs
#   chromium --headless --disable-gpu --no-sandbox --virtual-time-budget=5000 --dump-dom URL/docs
# and checks the rendered DOM: one <h2 class="route"> per path+method of the document (the same
# "METHOD /path" texts), each followed by its summary, its request-field table (names and the
# required column) and its "200: type" line, no "undefined" anywhere, the title taken from the
# document's info, and nothing in #error. Last it takes a screenshot
# (--screenshot=DIR/docs.png --window-size=1200,2400) and checks it is a 1200x2400 PNG that is
# not tiny (a blank page is a few KB). The server is stopped by its pid on exit.
#
# Prints one line per check, `ok   NAME: detail` or `FAIL NAME: detail`, then `N passed, M failed`.
# Exit status: 0 all passed, 1 a check failed, 2 bad arguments or a missing tool (chromium,
# curl, python3). It installs nothing: on Debian, `apt-get install -y chromium`. Set CHROMIUM
# to use another binary (chromium-browser, google-chrome). Takes a few seconds.
set -u

usage() { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; }

REPO=$(cd "$(dirname "$0")/../.." && pwd)
BERT="$REPO/.build/release/bert"
OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --bert) [ $# -ge 2 ] || { echo "--bert needs a path" >&2; exit 2; }
                case "$2" in /*) BERT="$2" ;; *) BERT="$PWD/$2" ;; esac; shift 2 ;;
        --out)  [ $# -ge 2 ] || { echo "--out needs a directory" >&2; exit 2; }
                case "$2" in /*) OUT="$2" ;; *) OUT="$PWD/$2" ;; esac; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done

CHROME="${CHROMIUM:-}"
if [ -z "$CHROME" ]; then
    for c in chromium chromium-browser; do
        if command -v "$c" >/dev/null 2>&1; then CHROME=$(command -v "$c"); break; fi
    done
fi
if [ -z "$CHROME" ] || ! command -v "$CHROME" >/dev/null 2>&1; then
    echo "chromium not found; install it (Debian/Ubuntu: apt-get update && apt-get install -y chromium)," >&2
    echo "or set CHROMIUM=/path/to/chromium-or-chrome" >&2
    exit 2
fi
for tool in curl python3 timeout; do
    command -v "$tool" >/dev/null 2>&1 || { echo "$tool not found; it is needed" >&2; exit 2; }
done

if [ -z "$OUT" ]; then OUT=$(mktemp -d /tmp/check_docs_page.XXXXXX); else mkdir -p "$OUT" || exit 2; fi
PROFILE=$(mktemp -d /tmp/check_docs_page.profile.XXXXXX)
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; fi
    rm -rf "$PROFILE"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

PASSED=0; FAILED=0
ok()   { echo "ok   $1: $2"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL $1: $2"; FAILED=$((FAILED + 1)); }
finish() { echo "files in $OUT"; echo "$PASSED passed, $FAILED failed"; [ "$FAILED" -eq 0 ]; exit $?; }

# --- 1. the server ---------------------------------------------------------------------------
# The binary may be rebuilt under us: wait for it, and retry a start that dies before listening.
PORT=""
for attempt in 1 2 3; do
    for _ in $(seq 120); do [ -x "$BERT" ] && break; sleep 1; done
    if [ ! -x "$BERT" ]; then break; fi
    ( cd "$REPO" && exec env -u SWIFTBERT_API_KEY "$BERT" serve --model all-MiniLM-L6-v2,splade-tiny \
          --host 127.0.0.1 --port 0 ) >"$OUT/server.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 600); do   # 60 s
        PORT=$(sed -n 's#.*listening on http://127\.0\.0\.1:\([0-9][0-9]*\).*#\1#p' "$OUT/server.log" | head -n 1)
        [ -n "$PORT" ] && break
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.1
    done
    [ -n "$PORT" ] && break
    kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; SERVER_PID=""
    sleep 2
done
if [ -z "$PORT" ]; then
    if [ ! -x "$BERT" ]; then fail server "no executable $BERT (build it: swift build -c release)"
    else fail server "bert serve printed no listening line; $OUT/server.log: $(tail -n 3 "$OUT/server.log" | tr '\n' ' ')"; fi
    finish
fi
URL="http://127.0.0.1:$PORT"
STATUS=""
for _ in $(seq 300); do   # 60 s
    STATUS=$(curl -s -o /dev/null -w '%{http_code}' "$URL/health")
    [ "$STATUS" = 200 ] && break
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.2
done
if [ "$STATUS" = 200 ]; then ok server "$URL, GET /health 200"
else fail server "GET $URL/health: ${STATUS:-no answer}; $OUT/server.log: $(tail -n 3 "$OUT/server.log" | tr '\n' ' ')"; finish; fi

# --- 2. the OpenAPI document -----------------------------------------------------------------
STATUS=$(curl -s -o "$OUT/openapi.json" -w '%{http_code}' "$URL/openapi.json")
if [ "$STATUS" != 200 ]; then fail openapi.json "GET /openapi.json: $STATUS"; finish; fi
if OPS=$(python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
methods = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
ops = [m.upper() + " " + p for p, item in doc["paths"].items() for m in item if m in methods]
assert ops, "no operations"
print(len(ops), "operations,", doc["openapi"])
' "$OUT/openapi.json" 2>&1); then ok openapi.json "$OPS"
else fail openapi.json "$(echo "$OPS" | tail -n 1)"; finish; fi

# --- 3. the rendered DOM ---------------------------------------------------------------------
CHROME_FLAGS=(--headless --disable-gpu --no-sandbox --no-first-run --disable-extensions
              --disable-background-networking --hide-scrollbars --user-data-dir="$PROFILE"
              --virtual-time-budget=5000)
timeout 90 "$CHROME" "${CHROME_FLAGS[@]}" --dump-dom "$URL/docs" >"$OUT/dom.html" 2>"$OUT/chromium.log"
RC=$?
if [ "$RC" -ne 0 ] || [ ! -s "$OUT/dom.html" ]; then
    fail dom "chromium --dump-dom exited $RC with $(wc -c <"$OUT/dom.html") bytes; $OUT/chromium.log: $(grep -v dbus "$OUT/chromium.log" | tail -n 2 | tr '\n' ' ')"
else
    ok dom "chromium $("$CHROME" --version 2>/dev/null | sed -n 's/^[^0-9]*\([0-9][0-9.]*\).*/\1/p' | head -n 1) rendered $(wc -c <"$OUT/dom.html") bytes"
    # Each line the helper prints is `ok NAME: detail` or `FAIL NAME: detail`.
    CHECKS=$(python3 - "$OUT/openapi.json" "$OUT/dom.html" <<'PY' 2>&1
import json, re, sys
from html.parser import HTMLParser

doc = json.load(open(sys.argv[1]))
methods = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

class Page(HTMLParser):
    """The children of div#routes as (tag, class, text, rows), the text of #error and h1."""
    VOID = {"br", "img", "hr", "input", "meta", "link", "wbr", "col", "source"}
    def __init__(self):
        super().__init__()
        self.depth = 0; self.routes_depth = None; self.children = []; self.row = None
        self.cell = None; self.special = None; self.special_depth = None
        self.error = None; self.h1 = None; self.in_script = False
    def handle_starttag(self, tag, attrs):
        if tag in self.VOID: return
        self.depth += 1
        a = dict(attrs)
        if tag in ("script", "style"): self.in_script = True
        if a.get("id") == "routes": self.routes_depth = self.depth
        elif a.get("id") == "error": self.special, self.special_depth, self.error = "error", self.depth, ""
        elif tag == "h1": self.special, self.special_depth, self.h1 = "h1", self.depth, ""
        if self.routes_depth is not None and self.depth == self.routes_depth + 1:
            self.children.append({"tag": tag, "class": a.get("class", ""), "text": "", "rows": [], "spans": []})
        elif self.routes_depth is not None and self.depth > self.routes_depth + 1:
            child = self.children[-1]
            if tag == "tr": self.row = []; child["rows"].append(self.row)
            elif tag in ("td", "th") and self.row is not None: self.row.append(""); self.cell = True
            elif tag == "span": child["spans"].append(a.get("class", ""))
    def handle_endtag(self, tag):
        if tag in self.VOID: return
        if tag in ("script", "style"): self.in_script = False
        if tag in ("td", "th"): self.cell = None
        if self.special_depth == self.depth: self.special = self.special_depth = None
        if self.routes_depth == self.depth: self.routes_depth = None
        self.depth -= 1
    def handle_data(self, data):
        if self.in_script: return
        if self.special == "error": self.error += data
        if self.special == "h1": self.h1 += data
        if self.routes_depth is not None and self.depth > self.routes_depth and self.children:
            self.children[-1]["text"] += data
            if self.cell and self.row is not None: self.row[-1] += data

page = Page()
page.feed(open(sys.argv[2], encoding="utf-8").read())
squash = lambda s: " ".join(s.split())
children = page.children

def say(good, name, detail):
    print(("ok " if good else "FAIL ") + name + ": " + detail)

# h2.route, one per operation, in the document's order
expected = [(m.upper() + " " + p, op) for p, item in doc["paths"].items() for m, op in item.items() if m in methods]
heads = [i for i, c in enumerate(children) if c["tag"] == "h2" and "route" in c["class"].split()]
shown = [squash(children[i]["text"]) for i in heads]
want = [name for name, _ in expected]
if shown == want:
    say(True, "routes", "%d h2.route, one per path+method, in the document's order" % len(shown))
else:
    missing = [n for n in want if n not in shown]; extra = [n for n in shown if n not in want]
    dup = sorted({n for n in shown if shown.count(n) > 1})
    say(False, "routes", "%d h2.route for %d operations; missing %s; extra %s; duplicated %s%s" % (
        len(shown), len(want), missing or "none", extra or "none", dup or "none",
        "" if missing or extra or dup else "; order differs"))
badges = [c for c in (children[i] for i in heads) if not any("method" in s.split() for s in c["spans"])]
say(not badges and bool(heads), "method badges", "%d of %d routes have a span.method" % (len(heads) - len(badges), len(heads)))

# what follows each h2 up to the next: summary p, optional field table, optional "200:" pre
blocks = {}
for k, i in enumerate(heads):
    end = heads[k + 1] if k + 1 < len(heads) else len(children)
    blocks[squash(children[i]["text"])] = children[i + 1:end]
bad_summary, bad_table, bad_response = [], [], []
for name, op in expected:
    block = blocks.get(name)
    if block is None: continue   # already reported by "routes"
    ps = [c for c in block if c["tag"] == "p"]
    if op.get("summary") and (not ps or squash(ps[0]["text"]) != squash(op["summary"])):
        bad_summary.append(name)
    body = ((op.get("requestBody") or {}).get("content") or {}).get("application/json", {}).get("schema")
    tables = [c for c in block if c["tag"] == "table"]
    if body and body.get("properties"):
        required = set(body.get("required", []))
        want_rows = [(f, "yes" if f in required else "") for f in body["properties"]]
        got_rows = [(squash(r[0]), squash(r[2])) for r in tables[0]["rows"][1:]] if tables and all(
            len(r) >= 3 for r in tables[0]["rows"][1:]) else None
        if got_rows != want_rows: bad_table.append(name)
    elif tables:
        bad_table.append(name + " (unexpected table)")
    ok200 = (op.get("responses") or {}).get("200") or {}
    pres = [squash(c["text"]) for c in block if c["tag"] == "pre"]
    if ok200.get("content"):
        if len(pres) != 1 or not pres[0].startswith("200: ") or len(pres[0]) <= len("200: "):
            bad_response.append(name)
    elif pres:
        bad_response.append(name + " (unexpected response line)")
n_fields = sum(1 for _, op in expected if (((op.get("requestBody") or {}).get("content") or {}).get("application/json") or {}).get("schema", {}).get("properties"))
n_200 = sum(1 for _, op in expected if ((op.get("responses") or {}).get("200") or {}).get("content"))
say(not bad_summary, "summaries", "every route shows its summary" if not bad_summary else "wrong or missing after " + ", ".join(bad_summary))
say(not bad_table, "request fields", "%d tables with the document's fields and required flags" % n_fields if not bad_table else "wrong after " + ", ".join(bad_table))
say(not bad_response, "200 types", "%d routes show a 200 type" % n_200 if not bad_response else "wrong after " + ", ".join(bad_response))

text = " ".join(c["text"] for c in children)
junk = [w for w in ("undefined", "[object Object]", "NaN") if re.search(r"(?<![\w])" + re.escape(w) + r"(?![\w])", text)]
say(not junk, "no junk text", "no undefined, [object Object] or NaN in the routes" if not junk else "the routes show " + ", ".join(junk))

info = doc.get("info", {})
title = "%s API %s" % (info.get("title"), info.get("version"))
say(squash(page.h1 or "") == title, "title", "h1 %r" % squash(page.h1 or "") + ("" if squash(page.h1 or "") == title else ", want %r" % title))
if page.error is None: say(False, "no error", "the page has no #error element")
else: say(squash(page.error) == "", "no error", "#error is empty" if not squash(page.error) else "#error says %r" % squash(page.error))
PY
)
    while IFS= read -r line; do
        case "$line" in
            "ok "*)   rest=${line#ok }; ok "${rest%%: *}" "${rest#*: }" ;;
            "FAIL "*) rest=${line#FAIL }; fail "${rest%%: *}" "${rest#*: }" ;;
            *) [ -n "$line" ] && fail "dom checks" "$line" ;;
        esac
    done <<<"$CHECKS"
fi

# --- 4. the screenshot -----------------------------------------------------------------------
rm -f "$OUT/docs.png"
( cd "$OUT" && timeout 90 "$CHROME" "${CHROME_FLAGS[@]}" --window-size=1200,2400 \
      --screenshot="$OUT/docs.png" "$URL/docs" ) >>"$OUT/chromium.log" 2>&1
RC=$?
if [ ! -s "$OUT/docs.png" ]; then
    fail screenshot "no $OUT/docs.png (chromium exited $RC)"
else
    SHOT=$(python3 -c '
import struct, sys
data = open(sys.argv[1], "rb").read()
if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR": print("FAIL not a PNG"); sys.exit()
w, h = struct.unpack(">II", data[16:24])
good = (w, h) == (1200, 2400) and len(data) >= 30000
print("ok " if good else "FAIL ", end="")
print("%dx%d, %d bytes%s" % (w, h, len(data), "" if good else " (want 1200x2400 and at least 30000 bytes)"))
' "$OUT/docs.png")
    case "$SHOT" in
        "ok "*) ok screenshot "$OUT/docs.png ${SHOT#ok }" ;;
        *) fail screenshot "$OUT/docs.png ${SHOT#FAIL }" ;;
    esac
fi

finish
