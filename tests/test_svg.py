"""--svg: the flame graph and the latency heatmaps, checked as XML against the run's own figures
(its JSON reports) and rendered by a real browser (headless Chromium).

Targets: tests/targets/burn.c (CPU in burn_a and burn_b, 3:1, under burn_both; frame pointers),
tests/targets/demo.c (parse_record: CPU, wait_for_input: sleeps 2 ms).
"""
import colorsys
import os
import re
import shutil
import struct
import subprocess
import tempfile
import xml.etree.ElementTree as ET
import zlib

from harness import Skip, check, json_reports, run_fnprof, target

NS = "{http://www.w3.org/2000/svg}"
HIGHLIGHT = (0xe6, 0x00, 0xe6)
W_FLAME = 1180.0


def svg_run(args, *cmd, timeout=90):
    """Runs fnprof with --svg and --json -o; returns (svg root, reports, tmpdir, svg path)."""
    d = tempfile.mkdtemp()
    svg, rep = os.path.join(d, "run.svg"), os.path.join(d, "report.json")
    p = run_fnprof(list(args) + ["--svg", svg, "--json", "-o", rep, "--"] + [str(c) for c in cmd],
                   timeout=timeout)
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-2000:]}")
    check(os.path.isfile(svg) and not os.path.islink(svg), "no SVG file written")
    leftovers = [f for f in os.listdir(d) if ".tmp." in f]
    check(not leftovers, f"temporary files left: {leftovers}")
    root = ET.parse(svg).getroot()  # raises on anything that is not well-formed XML
    check(root.tag == NS + "svg", f"root element {root.tag}")
    return root, json_reports(open(rep).read()), d, svg


def frames(root):
    """The flame graph's frames: name, object, samples, self, x, width, y, fill."""
    fl = [g for g in root.iter(NS + "g") if g.get("id") == "flame"]
    check(len(fl) == 1, f"{len(fl)} flame graphs")
    out = []
    for g in fl[0].iter(NS + "g"):
        if g.get("class") != "fr":
            continue
        lines = g.find(NS + "title").text.split("\n")
        r = g.find(NS + "rect")
        obj = next((ln[8:] for ln in lines if ln.startswith("object: ")), "")
        self_n = int(re.search(r"self (\d+)", lines[-1]).group(1))
        out.append(dict(name=lines[0], object=obj, n=int(g.get("data-n")), self=self_n,
                        x=float(r.get("x")), w=float(r.get("width")), y=float(r.get("y")),
                        fill=r.get("fill")))
    return fl[0], out


def self_of(fr, f):
    """A function's self samples as the table counts them: its own, and those of the calls inlined
    into it, which the graph shows as frames of their own ("name (inlined)") above it."""
    n = f["self"]
    for c in fr:
        if (c["name"].endswith(" (inlined)") and abs(c["y"] + 16 - f["y"]) < 0.5 and
                f["x"] - 0.01 <= c["x"] and c["x"] + c["w"] <= f["x"] + f["w"] + 0.01):
            n += self_of(fr, c)
    return n


def hue(fill):
    r, g, b = (int(fill[i:i + 2], 16) / 255 for i in (1, 3, 5))
    h, _, s = colorsys.rgb_to_hls(r, g, b)
    return h * 360, s


def test_flame_widths_are_sample_shares():
    root, reps, d, _ = svg_run(["-F", "347"], target("burn"), 3)
    try:
        rep = [r for r in reps if r["mode"] == "sample"][-1]
        fl, fr = frames(root)
        total, W = int(fl.get("data-total")), float(fl.get("data-w"))
        check(total == rep["samples"], f"root {total} samples, report {rep['samples']}")
        for f in fr:
            share = f["n"] / total
            check(abs(f["w"] / W - share) <= 0.01 * share + 1e-5,
                  f"{f['name']}: width {f['w'] / W:.5f} of the graph, samples {share:.5f}")
        for fn in rep["functions"]:
            # As in folded stacks and pprof, a frame without a symbol is named for its object.
            name = fn["name"]
            if name == "[unknown]" and fn["object"].startswith("/"):
                name = "[" + os.path.basename(fn["object"]) + "]"
            mine = [f for f in fr if f["name"] == name and f["object"] == fn["object"]]
            # A function on a stack twice (recursion, nested interrupts) counts once: its outermost frames.
            outer = [f for f in mine if not any(o["y"] > f["y"] and o["x"] <= f["x"] + 0.01 and
                                                f["x"] + f["w"] <= o["x"] + o["w"] + 0.01 for o in mine)]
            check(sum(f["n"] for f in outer) == fn["total_samples"],
                  f"{fn['name']}: frames hold {sum(f['n'] for f in outer)} samples, report {fn['total_samples']}")
            check(sum(self_of(fr, f) for f in mine) == fn["self_samples"], f"{fn['name']}: self samples differ")
        # Colours by kind: the program's own code warm red, libraries green, the kernel blue.
        exe = os.path.realpath(target("burn"))
        kinds = {"user": (0, 30), "lib": (85, 130), "kernel": (195, 222)}
        seen = set()
        for f in fr:
            kind = ("user" if f["object"] == exe else "kernel" if f["object"] == "[kernel.kallsyms]"
                    else "lib" if f["object"].startswith("/") else None)
            if kind:
                h, s = hue(f["fill"])
                lo, hi = kinds[kind]
                check(lo <= h <= hi and s > 0.3, f"{f['name']} ({kind}) has colour {f['fill']} (hue {h:.0f})")
                seen.add(kind)
        check({"user", "lib"} <= seen, f"kinds seen: {seen}")
        a = next(f for f in fr if f["name"] == "burn_a")
        both = next(f for f in fr if f["name"] == "burn_both")
        check(a["y"] < both["y"] and both["x"] <= a["x"] and a["x"] + a["w"] <= both["x"] + both["w"] + 0.01,
              "burn_a is not drawn on top of its caller burn_both")
    finally:
        shutil.rmtree(d)


def heatmaps(root):
    out = {}
    for g in root.iter(NS + "g"):
        if g.get("class") == "heatmap":
            cells = [r for r in g.iter(NS + "rect") if r.get("class") == "c"]
            bars = [r for r in g.iter(NS + "rect") if r.get("class") == "hb"]
            texts = [t.text or "" for t in g.iter(NS + "text")]
            out[g.get("data-fn")] = dict(cells=cells, bars=bars, heading=g.find(NS + "text").text, texts=texts)
    return out


def ns(value, unit):
    return float(value) * {"ns": 1, "us": 1e3, "ms": 1e6}[unit]


def test_heatmap_cells_sum_to_calls_and_both_pictures():
    root, reps, d, _ = svg_run(["-f", "parse_record", "-f", "wait_*", "--sample"], target("demo"), 2.5)
    try:
        trace = [r for r in reps if r["mode"] == "trace"]
        # Columns are collected every 0.1 s, silently: the reports stay one total, as without --svg.
        check(len(trace) == 1 and trace[0]["total"], f"{len(trace)} trace reports: {[r['total'] for r in trace]}")
        check(trace[0]["interval_s"] > 2.3, f"the total covers {trace[0]['interval_s']} s")
        hm = heatmaps(root)
        check(set(hm) == {"parse_record", "wait_for_input"}, f"heatmaps of {sorted(hm)}")
        for fn in trace[0]["functions"]:
            h = hm[fn["name"]]
            cells = sum(int(c.get("data-n")) for c in h["cells"])
            check(cells == fn["calls"], f"{fn['name']}: cells hold {cells} calls, the report {fn['calls']}")
            bars = sum(int(b.get("data-n")) for b in h["bars"])
            check(bars == fn["calls"], f"{fn['name']}: the run's histogram holds {bars} calls of {fn['calls']}")
            cols = {int(c.get("data-c")) for c in h["cells"]}
            check(15 <= len(cols) <= 30, f"{fn['name']}: {len(cols)} columns in 2.5 s")
            p50 = re.search(r"p50 ([\d.]+)(ns|us|ms)", h["heading"])
            v = ns(p50.group(1), p50.group(2))
            check(abs(v - fn["wall_ns"]["p50"]) <= 0.04 * fn["wall_ns"]["p50"],
                  f"{fn['name']}: heatmap p50 {v:.0f} ns, report {fn['wall_ns']['p50']:.0f}")
            # The on/off-CPU panel's legend: the run's averages per call, as the report has them.
            for key, label in (("oncpu_ns", "on-CPU"), ("runq_ns", "run queue"), ("blocked_ns", "blocked")):
                m = next(re.match(label + r" \(([\d.]+)(ns|us|ms)\)", t) for t in h["texts"] if t.startswith(label))
                v, want = ns(m.group(1), m.group(2)), fn[key]["avg"]
                check(abs(v - want) <= 0.02 * want + 50, f"{fn['name']}: {label} {v:.0f} ns per call, report {want:.0f}")
        wait = hm["wait_for_input"]
        lat = [re.search(r"of ([\d.]+)(us|ms)", c.find(NS + "title").text) for c in wait["cells"]]
        busiest = max(zip(wait["cells"], lat), key=lambda cl: int(cl[0].get("data-n")))[1]
        check(busiest.group(2) == "ms" and 1.9 <= float(busiest.group(1)) <= 2.4,
              f"wait_for_input sleeps 2 ms; its busiest cell is at {busiest.group(0)}")
        frames(root)  # the flame graph is in the same file
    finally:
        shutil.rmtree(d)


def test_heatmap_columns_are_the_intervals():
    root, reps, d, _ = svg_run(["-f", "parse_record", "-i", "0.5"], target("demo"), 2.2)
    try:
        intervals = [r for r in reps if r["mode"] == "trace" and not r["total"]]
        check(len(intervals) >= 4, f"{len(intervals)} interval reports")
        cells = heatmaps(root)["parse_record"]["cells"]
        for k, rep in enumerate(intervals):
            n = sum(int(c.get("data-n")) for c in cells if int(c.get("data-c")) == k)
            check(n == rep["functions"][0]["calls"], f"column {k}: {n} calls, interval report {rep['functions'][0]['calls']}")
        check(max(int(c.get("data-c")) for c in cells) < len(intervals), "more columns than intervals")
    finally:
        shutil.rmtree(d)


def test_svg_refuses_a_symlink_never_follows():
    # A planted symlink is an existing file: refused before tracing, neither followed nor replaced.
    d = tempfile.mkdtemp()
    try:
        victim, path = os.path.join(d, "victim"), os.path.join(d, "run.svg")
        open(victim, "w").write("keep me\n")
        os.symlink(victim, path)
        p = run_fnprof(["--svg", path, "--", target("burn"), "1"])
        check(p.returncode == 1 and "exists already" in p.stderr, f"exit {p.returncode}: {p.stderr[-500:]}")
        check(open(victim).read() == "keep me\n", "a planted symlink was followed")
        check(os.path.islink(path), "run.svg, the symlink, was replaced")
        os.unlink(path)
        p = run_fnprof(["--svg", path, "--", target("burn"), "1"])
        check(p.returncode == 0, p.stderr[-2000:])
        ET.parse(path)
        p = run_fnprof(["--svg", os.path.join(d, "no", "such", "dir.svg"), "--", target("burn"), "0.5"])
        check(p.returncode == 1 and "cannot write the pictures" in p.stderr, f"exit {p.returncode}: {p.stderr[-500:]}")
        p = run_fnprof(["--svg", "", "--", target("burn"), "1"])
        check(p.returncode == 2 and "--svg" in p.stderr, f"empty name: exit {p.returncode}: {p.stderr[-500:]}")
        p = run_fnprof(["--svg", os.path.join(d, "x.svg"), "--profile", "offcpu", "--", target("burn"), "1"])
        check(p.returncode == 2 and "--profile cpu" in p.stderr, f"nothing to draw: exit {p.returncode}: {p.stderr[-500:]}")
        same = os.path.join(d, "same")
        p = run_fnprof(["--svg", same, "-o", same, "--", target("burn"), "1"])
        check(p.returncode == 2 and "same file" in p.stderr and not os.path.exists(same),
              f"--svg and -o on one file: exit {p.returncode}: {p.stderr[-500:]}")
    finally:
        shutil.rmtree(d)


# --- the browser -----------------------------------------------------------------------------

def png_pixels(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB/RGBA PNG, decoded here (no PIL)."""
    data = open(path, "rb").read()
    check(data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG")
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            check(depth == 8 and ctype in (2, 6) and not interlace, f"PNG type {depth}/{ctype}/{interlace}")
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return w, h, rows


def chromium(url, d, what, width=1200, height=700):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        raise Skip("chromium is not installed (Debian chromium, in make test-deps)")
    base = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            f"--user-data-dir={os.path.join(d, 'profile')}", f"--window-size={width},{height}"]
    if what == "dom":
        p = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True, timeout=120)
        return p.stdout
    png = os.path.join(d, "shot.png")
    if os.path.exists(png):
        os.unlink(png)
    subprocess.run(base + [f"--screenshot={png}", url], capture_output=True, text=True, timeout=120)
    check(os.path.exists(png), f"chromium wrote no screenshot of {url}")
    return png_pixels(png)


def test_browser_renders_and_search_highlights():
    root, reps, d, svg = svg_run(["-F", "347"], target("burn"), 2)
    try:
        rep = [r for r in reps if r["mode"] == "sample"][-1]
        fl, fr = frames(root)
        top = int(min(f["y"] for f in fr))  # the frames, below the legend (which shows the colour)
        w, h, rows = chromium("file://" + svg, d, "png")
        px = [p for row in rows for p in row]
        ink = sum(1 for p in px if p != (255, 255, 255))
        check(ink > 0.03 * len(px), f"the picture is blank: {ink} of {len(px)} pixels drawn")
        reds = sum(1 for p in px if p[0] > 200 and p[1] < 150 and p[2] < 120)
        check(reds > 2000, f"{reds} pixels of the program's (red) frames")
        check(HIGHLIGHT not in {p for row in rows[top:] for p in row}, "highlight colour without a search")
        # The script reads ?s= and paints the matches; only burn_a's frame is magenta.
        w, h, rows = chromium("file://" + svg + "?s=burn_a", d, "png")
        hits = [(x, y) for y, row in enumerate(rows[top:]) for x, p in enumerate(row) if p == HIGHLIGHT]
        a = next(f for f in fr if f["name"] == "burn_a")
        check(len(hits) > 0.5 * a["w"] * 15, f"{len(hits)} highlighted pixels for burn_a ({a['w']:.0f} px wide)")
        xs = [x for x, _ in hits]
        check(min(xs) >= a["x"] - 1 and max(xs) <= a["x"] + a["w"] + 1, "pixels highlighted outside burn_a's frame")
        dom = chromium("file://" + svg + "?s=burn_a", d, "dom")
        m = re.search(r"Matched: burn_a ([\d.]+)% of samples", dom)
        check(m, f"no 'Matched' line after the search: {dom[-300:]}")
        want = next(f for f in rep["functions"] if f["name"] == "burn_a")["total_pct"]
        check(abs(float(m.group(1)) - want) <= 1, f"search shows {m.group(1)}%, the report {want:.2f}%")
        # A click on burn_both (dispatched by a test-only script appended to a copy) zooms into it:
        # it takes the whole width, burn_a and burn_b share it, its callers stay as faded ancestors.
        click = ("<script>[].slice.call(document.getElementsByClassName('fr')).filter(function(g){return "
                 "g.getElementsByTagName('title')[0].textContent.split('\\n')[0]==='burn_both';})[0]"
                 ".dispatchEvent(new MouseEvent('click',{bubbles:true}));</script></svg>")
        zoom = os.path.join(d, "zoom.svg")
        open(zoom, "w").write(open(svg).read().replace("</svg>", click))
        dom = ET.fromstring(chromium("file://" + zoom, d, "dom"))
        shown = {}
        for g in dom.iter(NS + "g"):
            if "fr" in g.get("class", "").split() and "none" not in (g.get("style") or ""):
                shown[g.find(NS + "title").text.split("\n")[0]] = (g.get("class"), float(g.find(NS + "rect").get("width")))
        check(shown.get("burn_both", (0, 0))[1] == W_FLAME, f"burn_both after the click: {shown.get('burn_both')}")
        check(abs(shown["burn_a"][1] + shown["burn_b"][1] - W_FLAME) < 10, f"burn_a, burn_b: {shown}")
        check("anc" in shown["main"][0] and shown["main"][1] == W_FLAME, f"main after the click: {shown['main']}")
        unzoom = next(t for t in dom.iter(NS + "text") if t.get("id") == "unzoom")
        check("none" not in (unzoom.get("style") or ""), "no 'Reset zoom' after the click")
    finally:
        shutil.rmtree(d)


def test_browser_renders_heatmap():
    root, reps, d, svg = svg_run(["-f", "parse_record"], target("demo"), 1.5)
    try:
        w, h, rows = chromium("file://" + svg, d, "png", height=int(float(root.get("height"))))
        px = [p for row in rows for p in row]
        cells = sum(1 for p in px if p[0] > 230 and 50 < p[1] < 240 and p[2] < 170)  # yellow to red
        check(cells > 3000, f"{cells} pixels of heatmap cells")
        blue = sum(1 for p in px if p == (0x1d, 0x4e, 0xd8))
        check(blue > 200, f"{blue} pixels of the p50 line")
    finally:
        shutil.rmtree(d)
