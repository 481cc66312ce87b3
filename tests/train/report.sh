#!/usr/bin/env bash
# seqfeed train --report: the HTML page renders in headless Chromium
# (Debian's chromium; tools/test.sh installs it), its step chart is drawn
# (bars in the DOM, and the compute colour on the screenshot's pixels), and
# the diagnosis is on it. Then how good the model is, on the rendered DOM:
# the loss chart's points are the log's rows, the best epoch marked is the
# log's lowest val_loss, the baselines' lines and the per-target table hold
# the numbers `seqfeed evaluate --json` gives on the same checkpoint; a run
# without validation says so, and no NaN reaches the page. Skipped (77)
# without chromium. meson sets SEQFEED.
set -u
: "${SEQFEED:?}"
browser=$(command -v chromium || command -v chromium-browser) || { echo "skipped: no chromium"; exit 77; }
tmp=$(mktemp -d /tmp/sfreport.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
"$SEQFEED" synth -o s.sfpack --rows 20000 --feature-count 3 -q &&
"$SEQFEED" train --data s.sfpack --features f0,f1,f2 --targets f0 --window 16 --batch-size 32 --epochs 1 \
    --model lstm:16,dense --max-steps 200 --gpus none --report r.html -q || exit 1
flags=(--headless --no-sandbox --disable-gpu --user-data-dir="$tmp/profile")
timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$tmp/r.html" >dom.html 2>/dev/null || { echo "dump-dom failed"; exit 1; }
timeout 120 "$browser" "${flags[@]}" --screenshot="$tmp/r.png" --window-size=1000,1400 "file://$tmp/r.html" \
    >/dev/null 2>&1 || { echo "screenshot failed"; exit 1; }
python3 - <<'PY'
import re, struct, sys, zlib
dom = open("dom.html").read()
svg = re.search(r'<svg id="steps".*?</svg>', dom, re.S)
if not svg: sys.exit("no step chart in the rendered page")
bars = [float(h) for h in re.findall(r'<rect [^>]*height="([0-9.]+)"', svg.group(0))]
if sum(1 for h in bars if h > 0) < 50: sys.exit(f"the chart has {len(bars)} bars")
diag = re.search(r'id="diagnosis">([^<]+)<', dom)
if not diag or not re.search(r"input bound|too short to judge", diag.group(1)): sys.exit("no diagnosis on the page")

# The screenshot: PNG, 8-bit RGB(A), unfiltered here by hand.
data = open("r.png", "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR": w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
    if kind == b"IDAT": idat += body
    pos += 12 + n
if depth != 8 or ctype not in (2, 6): sys.exit(f"PNG type {ctype}/{depth}")
bpp = 3 if ctype == 2 else 4
raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        p = a + b - c
        pred = [0, a, b, (a + b) // 2, a if abs(p - a) <= min(abs(p - b), abs(p - c)) else (b if abs(p - b) <= abs(p - c) else c)][f]
        line[i] = (line[i] + pred) & 255
    rows.append(line)
    prev = line
blue = sum(1 for line in rows for x in range(w)
           if abs(line[x * bpp] - 0x1f) < 8 and abs(line[x * bpp + 1] - 0x77) < 8 and abs(line[x * bpp + 2] - 0xb4) < 8)
if blue < 2000: sys.exit(f"only {blue} pixels of the compute colour on the screenshot")
print(f"rendered: {len(bars)} bars, {blue} compute-coloured pixels")
PY
[ $? -eq 0 ] || exit 1

# A run of several epochs whose lr is high enough for val_loss to go up
# and down, two targets, a seasonal baseline.
"$SEQFEED" synth -o m.sfpack --rows 3000 --feature-count 3 -q &&
"$SEQFEED" train --data m.sfpack --features f0,f1,f2 --targets f0,f1 --window 16 --batch-size 32 --epochs 8 \
    --lr 0.02 --season 24 --model lstm:16,dense --gpus none --log m.csv --checkpoint-dir ck --report m.html -q &&
"$SEQFEED" evaluate --checkpoint ck --data m.sfpack --season 24 --json >eval.json || exit 1
"$SEQFEED" train --data m.sfpack --features f0,f1,f2 --targets f0 --window 16 --batch-size 32 --epochs 2 \
    --val-split 0 --model lstm:8,dense --gpus none --log n.csv --report n.html -q || exit 1
timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$tmp/m.html" >m.dom 2>/dev/null || { echo "dump-dom failed"; exit 1; }
python3 - <<'PY'
import csv, json, math, re, sys
def close(a, b, what):
    if not math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12): sys.exit(f"{what}: the page has {a}, expected {b}")
def attrs(tag): return dict(re.findall(r'([\w-]+)="([^"]*)"', tag))
dom = open("m.dom").read()
for bad in ("nan", "inf"):
    if re.search(r'(="|>|,| )-?' + bad + r'\b', dom, re.I): sys.exit(f"'{bad}' on the page")
log = list(csv.DictReader(open("m.csv")))
chart = re.search(r'<svg id="loss".*?</svg>', dom, re.S)
if not chart: sys.exit("no loss chart on the page")
chart = chart.group(0)
for name, col in (("loss", "loss"), ("val_loss", "val_loss")):
    g = re.search(r'<g class="series" data-series="%s">(.*?)</g>' % name, chart, re.S)
    if not g: sys.exit(f"no {name} series")
    pts = [attrs(c) for c in re.findall(r'<circle class="point"[^>]*>', g.group(1))]
    if [p["data-epoch"] for p in pts] != [r["epoch"] for r in log]:
        sys.exit(f"{name}: the chart's epochs {[p['data-epoch'] for p in pts]} are not the log's")
    for p, r in zip(pts, log): close(float(p["data-value"]), float(r[col]), f"{name} of epoch {r['epoch']}")
    xs = [float(p["cx"]) for p in pts]
    if xs != sorted(xs) or len(set(xs)) != len(xs): sys.exit(f"{name}: points not left to right by step")
vals = {r["epoch"]: float(r["val_loss"]) for r in log}
best = min(vals, key=vals.get)
b = re.search(r'<p id="best"[^>]*>', dom)
if not b or attrs(b.group(0))["data-epoch"] != best: sys.exit(f"the page's best epoch is not the log's lowest ({best})")
close(float(attrs(b.group(0))["data-value"]), vals[best], "best val_loss")
mark = re.search(r'<g id="best-mark">.*?<circle ([^>]*)>', chart, re.S)
vpts = {attrs(c)["data-epoch"]: attrs(c) for c in re.findall(r'<circle class="point"[^>]*>',
        re.search(r'data-series="val_loss">(.*?)</g>', chart, re.S).group(1))}
if not mark or attrs(mark.group(1))["cx"] != vpts[best]["cx"] or attrs(mark.group(1))["cy"] != vpts[best]["cy"]:
    sys.exit("the best epoch's val_loss point is not the one marked")
lrs = [float(attrs(c)["data-value"]) for c in re.findall(r'<circle class="lr"[^>]*>', dom)]
if len(lrs) != len(log): sys.exit(f"{len(lrs)} lr points for {len(log)} rows")
for v in lrs: close(v, 0.02, "lr")
ev = json.load(open("eval.json"))
lines = {attrs(g)["data-name"]: float(attrs(g)["data-value"]) for g in re.findall(r'<g class="baseline"[^>]*>', chart)}
for name, key in (("persistence", "persistence_baseline"), ("mean", "mean_baseline"), ("seasonal", "seasonal_baseline")):
    if ev[key] is None: sys.exit(f"evaluate has no {key}: the test needs one")
    if name not in lines: sys.exit(f"no {name} baseline on the chart")
    close(lines[name], ev[key], f"the {name} baseline")
cells = 0
for t in ev["per_target"]:
    for metric in ("rmse", "mae"):
        row = re.search(r'<tr data-target="%s" data-metric="%s">(.*?)</tr>' % (t["name"], metric), dom, re.S)
        if not row: sys.exit(f"no {metric} row for {t['name']}")
        for fc, want in t[metric].items():
            td = re.search(r'<td data-forecaster="%s"([^>]*)>' % fc, row.group(1))
            if not td or "data-value" not in attrs(td.group(1)): sys.exit(f"{t['name']} {metric} {fc}: no number")
            close(float(attrs(td.group(1))["data-value"]), want, f"{t['name']} {metric} {fc}")
            cells += 1
verdicts = re.findall(r'class="verdict"[^>]*>([^<]*)<', dom)
for t, v in zip(ev["per_target"], verdicts):
    if v.startswith("beats") != t["beats_persistence"]: sys.exit(f"{t['name']}: verdict '{v}' against evaluate's")
if len(verdicts) != len(ev["per_target"]) or '<p id="verdict">' not in dom: sys.exit("verdicts missing")

dom = open("n.html").read()
if 'id="no-validation"' not in dom or 'id="no-scores"' not in dom: sys.exit("the run without validation does not say so")
if 'class="baseline"' in dom or 'id="per-target"' in dom: sys.exit("baselines drawn without validation")
if "<circle" in re.search(r'data-series="val_loss">(.*?)</g>', dom, re.S).group(1):
    sys.exit("val_loss points without validation")
if len(re.findall(r'<circle class="point"', dom)) != 2: sys.exit("the loss points of a run without validation")
for bad in ("nan", "inf"):
    if re.search(r'(="|>|,| )-?' + bad + r'\b', dom, re.I): sys.exit(f"'{bad}' on the page without validation")
print(f"model part: {len(log)} epochs, best {best}, {len(lines)} baselines, {cells} table cells as evaluate's")
PY
