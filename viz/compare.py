"""Compare mode's banner: how the configurations of two runs differ, so that a difference in speed is read
with its cause in view (1 vs 2 threads per rank, engine vs simulator, another machine...)."""

from __future__ import annotations

from html import escape
from typing import Any

from viz.rundata import RunData

# (what a reader calls it, how to read it from a run)
FIELDS: list[tuple[str, Any]] = [
    ("runtime", lambda d: d.meta.get("runtime")),
    ("algorithm", lambda d: d.meta.get("algo")),
    ("game", lambda d: f"{d.meta.get('game')} {d.meta.get('board') or ''}".strip()),
    ("search ranks", lambda d: d.n_search),
    ("broadcast ranks", lambda d: d.n_bcast),
    ("threads per rank", lambda d: d.meta.get("threads")),
    ("machine", lambda d: d.meta.get("machine") or d.meta.get("profile")),
    ("seed", lambda d: d.meta.get("seed")),
    ("trace sample rate", lambda d: d.meta.get("sample_rate")),
]


def rate(d: RunData) -> float:
    """Simulations per second over the whole run."""
    return float(d.sims.sum()) / max(d.T * d.bin_s, 1e-12)


def differences(a: RunData, b: RunData) -> list[str]:
    """One phrase per configuration field (and algorithm parameter) in which the runs differ."""
    out = []
    for name, get in FIELDS:
        va, vb = get(a), get(b)
        if va != vb:
            out.append(f"{name} ({va} vs {vb})")
    # a parameter one run leaves out is at its default, which the trace does not say: only those both state
    pa, pb = a.meta.get("params") or {}, b.meta.get("params") or {}
    for k in sorted(set(pa) & set(pb)):
        if pa[k] != pb[k]:
            out.append(f"parameter {k} ({pa[k]} vs {pb[k]})")
    return out


def banner_html(a: RunData, b: RunData) -> str:
    diff = differences(a, b)
    ra, rb = rate(a), rate(b)
    speed = ""
    if ra > 0 and rb > 0:
        hi, lo = (a, b) if ra >= rb else (b, a)
        speed = (f" <b>{escape(hi.label)}</b> ran {max(ra, rb) / min(ra, rb):.1f}x the simulations per second of "
                 f"<b>{escape(lo.label)}</b> ({ra:,.0f} vs {rb:,.0f}/s).")
    if not diff:
        what = "The two runs have the same configuration."
    else:
        what = "The two runs differ in " + escape("; ".join(diff)) + "."
    style = "background:#fff8e1;border:1px solid #e0c060;padding:4px 8px;max-width:1340px"
    return (f"<div style='{style}'><b>Comparing {escape(a.label)} (top) with {escape(b.label)} (below).</b> "
            f"{what}{speed}</div>")
