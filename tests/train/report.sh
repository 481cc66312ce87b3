#!/usr/bin/env bash
# seqfeed train --report: the HTML page renders in headless Chromium
# (Debian's chromium; tools/test.sh installs it), its step chart is drawn
# (bars in the DOM, and the compute colour on the screenshot's pixels), and
# the diagnosis is on it. Skipped (77) without chromium. meson sets SEQFEED.
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
timeout 120 "$browser" "${flags[@]}" --screenshot="$tmp/r.png" --window-size=1000,700 "file://$tmp/r.html" \
    >/dev/null 2>&1 || { echo "screenshot failed"; exit 1; }
python3 - <<'PY'
import re, struct, sys, zlib
dom = open("dom.html").read()
svg = re.search(r'<svg id="steps".*?</svg>', dom, re.S)
if not svg: sys.exit("no step chart in the rendered page")
bars = [float(h) for h in re.findall(r'<rect [^>]*height="([0-9.]+)"', svg.group(0))]
if sum(1 for h in bars if h > 0) < 50: sys.exit(f"the chart has {len(bars)} bars")
diag = re.search(r'id="diagnosis">([^<]+)<', dom)
if not diag or "input bound" not in diag.group(1): sys.exit("no diagnosis on the page")

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
