"""`treesplit bench viz`: how long a big trace takes to open, and the tree view to build (and render).

Open = read_trace + RunData + every view built for the whole run + the Bokeh document serialised (what
the server sends a browser when a session opens). Goals (issue 5): <= 10 s for 10^6 packages and 10^6
messages; the tree view of 10^5 nodes rendered in the browser in <= 2 s (--browser measures it in
headless Chromium, from navigation start to the first frame after Bokeh rendered). Writes
results/bench_viz.json (or --out DIR; --update-reference refreshes experiments/results/).

examples:
  treesplit bench viz
  treesplit bench viz --packages 1e5 --messages 1e5 --tree-nodes 1e4 --repeat 1
  treesplit bench viz --browser --keep traces/big
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from model.results import add_output_flags, output_dir

# `treesplit --help` imports this module: the handlers import what they run (numba kernels, pandas, MPI, Bokeh)
# when they are called, which keeps --help fast.


def register(kinds) -> None:
    p = kinds.add_parser("viz", help="dashboard: open time of a big synthetic trace, tree view of 10^5 nodes",
                         description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--packages", type=float, default=1e6)
    p.add_argument("--messages", type=float, default=1e6)
    p.add_argument("--tree-nodes", type=float, default=1e5)
    p.add_argument("--ranks", type=int, default=16, help="search ranks (plus a quarter as broadcast ranks)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--browser", action="store_true", help="also time the tree view's render in headless Chromium")
    p.add_argument("--keep", type=Path, help="write the synthetic trace here (default: a temporary directory)")
    add_output_flags(p)
    p.set_defaults(func=run)


def _serialise(models) -> None:
    from bokeh.document import Document

    doc = Document()
    for m in models:
        doc.add_root(m)
    doc.to_json()


def time_open(trace_dir: Path) -> dict[str, float]:
    from engine.trace_files import read_trace
    from viz.rundata import RunData
    from viz.views import VIEWS

    t0 = time.perf_counter()
    tr = read_trace(trace_dir)
    t1 = time.perf_counter()
    data = RunData.from_trace(tr)
    t2 = time.perf_counter()
    ranges: dict = {}
    views = [cls(data, ranges=ranges) for cls in VIEWS.values()]
    t3 = time.perf_counter()
    _serialise([v.layout for v in views])
    t4 = time.perf_counter()
    for v in views:  # one move of the replay slider: every view redrawn at mid-run, last 30 bins
        v.update(data, data.t_end / 2, 30 * data.bin_s)
    t5 = time.perf_counter()
    return {"read": t1 - t0, "rundata": t2 - t1, "views": t3 - t2, "serialise": t4 - t3, "total": t4 - t0,
            "slider_update": t5 - t4}


def time_tree(trace_dir: Path) -> dict[str, float]:
    from engine.trace_files import read_trace
    from viz.rundata import RunData
    from viz.views import TreeShape

    data = RunData.from_trace(read_trace(trace_dir))
    t0 = time.perf_counter()
    v = TreeShape(data)
    t1 = time.perf_counter()
    _serialise([v.layout])
    t2 = time.perf_counter()
    return {"build": t1 - t0, "serialise": t2 - t1, "total": t2 - t0, "nodes": float(len(data.tree_at(None)))}


def browser_tree_render(trace_dir: Path, out_dir: Path, repeat: int) -> list[float]:
    """Seconds from navigation start to the first frame after Bokeh rendered the tree view (static page)."""
    from bokeh.embed import file_html
    from bokeh.resources import INLINE
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    from engine.trace_files import read_trace
    from viz.rundata import RunData
    from viz.views import TreeShape

    page = out_dir / "tree.html"
    page.write_text(file_html(TreeShape(RunData.from_trace(read_trace(trace_dir)), static=True).layout, INLINE, "tree"))
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--window-size=1400,1000"):
        opts.add_argument(a)
    drv = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    times = []
    try:
        for _ in range(repeat):
            drv.get("about:blank")
            drv.get(page.as_uri())
            ms = drv.execute_async_script("""
const done = arguments[arguments.length - 1];
function check() {
  const views = window.Bokeh && Bokeh.index ? Object.values(Bokeh.index) : [];
  if (views.length && views.every(v => v.is_idle === undefined || v.is_idle))
    requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now())));
  else setTimeout(check, 10);
}
check();""")
            times.append(ms / 1000.0)
    finally:
        drv.quit()
    return times


def run(args) -> int:
    import json

    from engine.results import write_json
    from viz.synthetic import SyntheticSpec, write_synthetic_trace

    directory = output_dir(args)
    say = (lambda *a, **k: None) if args.json else print  # --json: the one object is all that stdout gets

    with tempfile.TemporaryDirectory(prefix="treesplit-bench-viz-") as tmp:
        d = args.keep or Path(tmp) / "trace"
        spec = SyntheticSpec(search=args.ranks, broadcast=max(1, args.ranks // 4), threads=8,
                             packages=int(args.packages), messages=int(args.messages),
                             tree_nodes=int(args.tree_nodes), board=19, seed=1)
        t = time.perf_counter()
        write_synthetic_trace(d, spec)
        gen = time.perf_counter() - t
        say(f"synthetic trace: {int(args.packages):,} packages, {int(args.messages):,} messages, "
            f"{int(args.tree_nodes):,} tree nodes written in {gen:.1f} s")
        opens = [time_open(d) for _ in range(args.repeat)]
        trees = [time_tree(d) for _ in range(args.repeat)]
        med = {k: statistics.median(o[k] for o in opens) for k in opens[0]}
        tmed = {k: statistics.median(o[k] for o in trees) for k in trees[0]}
        say(f"open (median of {args.repeat}): {med['total']:.2f} s  [read {med['read']:.2f}, rundata "
            f"{med['rundata']:.2f}, views {med['views']:.2f}, serialise {med['serialise']:.2f}]  goal <= 10 s")
        say(f"replay slider move, all views redrawn (median): {med['slider_update']:.2f} s")
        say(f"tree view, {int(tmed['nodes']):,} nodes (median of {args.repeat}): {tmed['total']:.2f} s  "
            f"[build {tmed['build']:.2f}, serialise {tmed['serialise']:.2f}]")
        result = {"packages": int(args.packages), "messages": int(args.messages), "tree_nodes": int(tmed["nodes"]),
                  "ranks": args.ranks, "repeat": args.repeat, "generate_s": gen, "open_s": med,
                  "open_runs": opens, "tree_view_s": tmed, "tree_runs": trees}
        if args.browser:
            rt = browser_tree_render(d, Path(tmp), args.repeat)
            result["tree_browser_render_s"] = {"median": statistics.median(rt), "runs": rt}
            say(f"tree view rendered in Chromium (median of {args.repeat}): {statistics.median(rt):.2f} s  "
                f"goal <= 2 s")
        if directory is not None:
            result["saved_to"] = str(write_json("bench_viz", result, directory))
            say(f"wrote {result['saved_to']}")
    if args.json:
        print(json.dumps(result, default=float))
    return 0
