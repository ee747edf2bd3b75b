"""broadcast-topology: Table 4.1 and Figure 4.5 of Schaefers 2014, with every origin's broadcast checked hop by hop.

Two checks per network:
  - the shape: model/topology.py's choice of (k, n, m) against the thesis's Table 4.1 (L = 12) and the
    example of Figure 4.5 (B = 16, L = 6);
  - the routing, run for real: M = 4B search ranks (the thesis's 1:4) and B broadcast ranks play
    model/roles/broadcast.py's TreesplitBroadcast in the loopback runtime (messages serialised, delivered in
    random order); the first client of every broadcast rank sends one SYNC row. From the BCAST messages sent
    we rebuild each origin's tree and check that every broadcast rank receives that origin's message exactly
    once, at the hop count Topology.reach() predicts and within n(k-1)+1, that no rank hears more than L
    broadcast peers, and that every other search rank gets the row exactly once.
A sweep over all B up to `sweep_max` and several L repeats the exactly-once check on the topology alone.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from bokeh.layouts import column
from bokeh.models import ColumnDataSource, Div, HoverTool, Label
from bokeh.palettes import Category10

from experiments.report import Outcome, Section, figure, quote, table_widget
from experiments.runner import kept
from model.config import check
from model.roles.base import Actions, Layout, Role
from model.roles.broadcast import TreesplitBroadcast
from model.roles.loopback import Loopback
from model.roles.messages import BCAST, NODE_ROW, STAT, SYNC, Message, Stats
from model.roles.params import TreesplitParams
from model.topology import Topology

QUESTION = ("Which m-connected k-ary n-cube does eq. 4.8/4.9 choose for each number of broadcast ranks, and does "
            "every origin's broadcast reach every broadcast and search rank exactly once within n(k-1)+1 hops?")
REFERENCE = ("Schaefers 2014, section 4.2.6: eq. 4.8/4.9, Procedure Broadcast, Figure 4.5 (16 broadcast ranks, L = 6), "
             "and Table 4.1 (the shapes used in the experiments, L = 12).")
# Table 4.1 of Schaefers 2014: bc-ranks -> (m, k, n)
TABLE_4_1 = {1: (1, 1, 1), 2: (2, 1, 1), 4: (4, 1, 1), 8: (8, 1, 1), 16: (8, 2, 1), 32: (8, 2, 2), 64: (8, 2, 3)}


@dataclass
class Config:
    bcast_ranks: list = field(default_factory=lambda: list(TABLE_4_1))
    peers: int = 12                     # L of Table 4.1
    figure_bcast_ranks: int = 16        # Figure 4.5's example
    figure_peers: int = 6
    figure_origin: int = 0
    sweep_max: int = 128                # topology-only exactly-once check for B = 1..sweep_max ...
    sweep_peers: list = field(default_factory=lambda: [1, 2, 3, 6, 12])  # ... and these L
    seed: int = 1

    def validate(self) -> None:
        check(len(self.bcast_ranks) >= 1 and all(isinstance(b, int) and b >= 1 for b in self.bcast_ranks),
              "bcast_ranks", "need a list of whole numbers >= 1")
        check(self.peers >= 1 and self.figure_peers >= 1, "peers", "need >= 1")
        check(self.figure_bcast_ranks >= 1, "figure_bcast_ranks", "need >= 1")
        check(0 <= self.figure_origin < self.figure_bcast_ranks, "figure_origin", "need a broadcast rank index")
        check(self.sweep_max >= 1, "sweep_max", "need >= 1")
        check(all(isinstance(L, int) and L >= 1 for L in self.sweep_peers), "sweep_peers", "need whole numbers >= 1")


def verify_with_roles(B: int, L: int, seed: int = 0) -> dict:
    """Run one broadcast per origin through the real broadcast roles; return what was observed per origin:
    {'hops': {origin: {bcast index: hops}}, 'tree_edges': {origin: [(src, dst, hop)]}, 'ok': bool, 'why': str}."""
    M = 4 * B
    lay = Layout(M, B, peers=L)
    senders = {lay.clients(M + b)[0]: b for b in range(B)}

    class Search(Role):
        def __init__(self, rank):
            self.rank, self.got = rank, Counter()

        def start(self):
            out = Actions()
            if self.rank in senders:
                rows = np.zeros(1, STAT)
                rows["hash"], rows["idx"], rows["move"], rows["n"] = 1000 + self.rank, NODE_ROW, -1, 1
                out.msgs.append(Message(SYNC, self.rank, lay.partner(self.rank), Stats(rows)))
            return out

        def on_message(self, msg):
            for r in msg.payload.rows:
                self.got[int(r["hash"])] += int(r["n"])
            return Actions()

    params = TreesplitParams(bcast_delay=0.0)  # no merging: one broadcast per origin, its own tree
    roles = [Search(s) for s in range(M)] + [TreesplitBroadcast(M + b, lay, params) for b in range(B)]
    run = Loopback(roles, seed=seed, serialize=True, keep=True).run()
    topo = Topology(B, L)
    edges: dict[int, list] = defaultdict(list)
    for m in run.sent:
        if m.kind == BCAST:
            edges[m.payload.origin].append((m.src - M, m.dst - M))
    why = []
    hops_all, tree = {}, {}
    for origin in range(B):
        got = Counter(d for _, d in edges[origin])
        twice = [d for d, c in got.items() if c > 1]
        if twice:
            why.append(f"origin {origin}: ranks {twice} received it more than once")
        parent = {d: s for s, d in edges[origin]}
        hops = {origin: 0}
        for r in range(B):
            h, x, seen = 0, r, set()
            while x != origin and x in parent and x not in seen:
                seen.add(x)
                x, h = parent[x], h + 1
            if x == origin:
                hops[r] = h
        missing = [r for r in range(B) if r not in hops]
        if missing:
            why.append(f"origin {origin}: ranks {missing} never received it")
        if hops != topo.reach(origin):
            why.append(f"origin {origin}: hop counts differ from Topology.reach")
        if max(hops.values()) > topo.hop_bound:
            why.append(f"origin {origin}: {max(hops.values())} hops > bound {topo.hop_bound}")
        hops_all[origin] = hops
        tree[origin] = [(s, d, hops[d]) for s, d in edges[origin]]
    for s in range(M):
        for o in senders:
            want = 0 if o == s else 1
            if roles[s].got.get(1000 + o, 0) != want:
                why.append(f"search rank {s} got search rank {o}'s row {roles[s].got.get(1000 + o, 0)} times")
                break
    in_peers = max((len(topo.in_peers(b)) for b in range(B)), default=0)
    if in_peers > L:
        why.append(f"a broadcast rank hears {in_peers} > L = {L} peers")
    n_bcast = sum(1 for m in run.sent if m.kind == BCAST)
    return {"hops": hops_all, "tree_edges": tree, "ok": not why, "why": "; ".join(why[:3]), "bcast_msgs": n_bcast,
            "in_peers": in_peers, "search_ranks": M}


def sweep_topologies(max_b: int, peers: list[int]) -> pd.DataFrame:
    rows = []
    for L in peers:
        for B in range(1, max_b + 1):
            t = Topology(B, L)
            ok, worst = True, 0
            for o in range(B):
                try:
                    got = t.reach(o)
                except AssertionError:
                    ok = False
                    break
                ok &= len(got) == B
                worst = max(worst, max(got.values()))
            rows.append({"bcast_ranks": B, "peers": L, "k": t.k, "n": t.n, "m": t.m, "max_hops": worst,
                         "hop_bound": t.hop_bound, "all_once": ok and worst <= t.hop_bound})
    return pd.DataFrame(rows)


def _figure_4_5(B: int, L: int, origin: int, check_run: dict):
    t = Topology(B, L)
    side = int(np.ceil(np.sqrt(t.m)))
    span = t.k + 1.2

    def pos(r: int) -> tuple[float, float]:
        a, b = t.label(r)
        x = (a % side) * span + (b[0] if t.n >= 1 else 0)
        y = (a // side) * span + (sum(d * (t.k ** i) for i, d in enumerate(b[1:])) if t.n > 1 else 0)
        return float(x), float(-y)

    xy = {r: pos(r) for r in range(B)}
    f = figure(f"Broadcast from rank {origin}: B = {B}, L = {L}, (k, n, m) = ({t.k}, {t.n}, {t.m})",
               "cube (column) and b0", "cube (row) and b1..", "Logical broadcast links (grey) and the spanning tree "
               "one broadcast used, coloured by hop (from the roles' BCAST messages).", width=560, height=520)
    g = t.graph()
    xs, ys = [], []
    for s, d in g.edges():
        xs.append([xy[s][0], xy[d][0]])
        ys.append([xy[s][1], xy[d][1]])
    f.multi_line(xs, ys, color="#cccccc", line_width=1)
    hops = check_run["hops"][origin]
    palette = list(Category10[10][1:6])  # hop 1, 2, 3, ...; the origin is black
    tx, ty, tc = [], [], []
    for s, d, h in check_run["tree_edges"][origin]:
        tx.append([xy[s][0], xy[d][0]])
        ty.append([xy[s][1], xy[d][1]])
        tc.append(palette[min(h, 5) - 1] if h >= 1 else "black")
    f.multi_line(tx, ty, color=tc, line_width=3.5, alpha=0.85)
    src = ColumnDataSource(dict(x=[xy[r][0] for r in range(B)], y=[xy[r][1] for r in range(B)],
                                rank=list(range(B)), hops=[hops[r] for r in range(B)],
                                label=[str(t.label(r)) for r in range(B)],
                                color=["black" if r == origin else palette[min(hops[r], 5) - 1] for r in range(B)]))
    rr = f.scatter("x", "y", source=src, size=22, color="color", line_color="white")
    f.text("x", "y", text="rank", source=src, text_color="white", text_align="center", text_baseline="middle",
           text_font_size="9pt")
    f.add_tools(HoverTool(renderers=[rr], tooltips=[("rank", "@rank"), ("(a, b)", "@label"), ("hops", "@hops")]))
    f.add_layout(Label(x=60, y=480, x_units="screen", y_units="screen", text_font_size="9pt",
                       text=f"max hops {max(hops.values())}, bound n(k-1)+1 = {t.hop_bound}; colour = hop "
                            f"(1 orange, 2 green, 3 red, 4 purple)"))
    f.xgrid.visible = f.ygrid.visible = False
    return f


def run(cfg: Config, out: Path):
    rows = []
    for B in cfg.bcast_ranks:
        t = Topology(B, cfg.peers)
        chk = verify_with_roles(B, cfg.peers, seed=cfg.seed + B)
        hop_counts = Counter(h for o, hs in chk["hops"].items() for r, h in hs.items() if r != o)
        ref = TABLE_4_1.get(B) if cfg.peers == 12 else None
        rows.append({
            "bcast_ranks": B, "search_ranks": chk["search_ranks"], "peers": cfg.peers, "m": t.m, "k": t.k, "n": t.n,
            "ref_m": ref[0] if ref else None, "ref_k": ref[1] if ref else None, "ref_n": ref[2] if ref else None,
            "matches_table": (ref == (t.m, t.k, t.n)) if ref else None,
            "links_per_rank": t.describe()["links_per_rank"], "max_in_peers": chk["in_peers"],
            "max_hops": max((h for o in chk["hops"].values() for h in o.values()), default=0),
            "mean_hops": (sum(h * c for h, c in hop_counts.items()) / sum(hop_counts.values())) if hop_counts else 0.0,
            "hop_bound": t.hop_bound, "bcast_msgs_per_broadcast": chk["bcast_msgs"] / B,
            "verified": chk["ok"], "problem": chk["why"]})
        print(f"  B={B:>4}: (k,n,m)=({t.k},{t.n},{t.m}) verified={chk['ok']}", flush=True)
    table = pd.DataFrame(rows)
    fig_chk = verify_with_roles(cfg.figure_bcast_ranks, cfg.figure_peers, seed=cfg.seed)
    fig_rows = [{"origin": o, "rank": r, "hops": h, "verified": fig_chk["ok"]}
                for o, hs in fig_chk["hops"].items() for r, h in hs.items()]
    sweep = sweep_topologies(cfg.sweep_max, cfg.sweep_peers)
    print(f"  sweep: {int(sweep.all_once.sum())}/{len(sweep)} networks exactly-once within the bound", flush=True)
    return outcome(cfg, kept(out, {"table_4_1": table, "figure_4_5_hops": pd.DataFrame(fig_rows), "sweep": sweep}),
                   fig_chk=fig_chk)


def outcome(cfg: Config, tables: dict, fig_chk: dict | None = None):
    """The report from the tables; the drawn broadcast tree of Figure 4.5 is rerun when not given (ms)."""

    table, sweep, fig_hops = tables["table_4_1"], tables["sweep"], tables["figure_4_5_hops"]
    if fig_chk is None:
        fig_chk = verify_with_roles(cfg.figure_bcast_ranks, cfg.figure_peers, seed=cfg.seed)
    fig_ok_run = bool(fig_hops["verified"].all()) if "verified" in fig_hops else fig_chk["ok"]
    ft = Topology(cfg.figure_bcast_ranks, cfg.figure_peers)

    ours_t = table[["bcast_ranks", "m", "k", "n", "max_hops", "hop_bound", "mean_hops", "verified"]].copy()
    ours_t["mean_hops"] = ours_t["mean_hops"].round(2)
    ref_rows = [{"bc-ranks": B, "m": m, "k": k, "n": n} for B, (m, k, n) in TABLE_4_1.items()]
    hist = figure("Hops per delivered broadcast", "broadcast ranks B", "hops (mean, max, bound)",
                  "Mean and maximum hops a broadcast needs to reach a broadcast rank, measured from the roles' "
                  "messages, against the bound n(k-1)+1.", x_axis_type="log")
    hist.line(table.bcast_ranks, table.hop_bound, color="gray", line_dash="dashed", legend_label="bound n(k-1)+1")
    hist.line(table.bcast_ranks, table.max_hops, line_width=2, legend_label="max (measured)")
    hist.scatter(table.bcast_ranks, table.max_hops, size=7)
    hist.line(table.bcast_ranks, table.mean_hops, line_width=2, color="darkorange", legend_label="mean (measured)")
    hist.legend.location = "top_left"

    all_match = bool(table.matches_table.dropna().all()) if table.matches_table.notna().any() else None
    all_ok = bool(table.verified.all() and fig_ok_run and sweep.all_once.all())
    fig_ok = (ft.k, ft.n, ft.m) == (2, 2, 4) and max(fig_chk["hops"][cfg.figure_origin].values()) == 3
    sections = [
        Section("Table 4.1: the network shape per number of broadcast ranks (L = %d)" % cfg.peers,
                column(table_widget(ours_t, width=560), hist),
                column(table_widget(pd.DataFrame(ref_rows), width=300),
                       _div(quote("We chose this values with the objective to keep the number of communicating peers "
                                  "for each broadcast rank below 16 while minimizing the number of required hops ... "
                                  "it must always hold that n + m - 1 &le; 12.", "Schaefers 2014, 4.3.1, Table 4.1"))),
                "Ours: m, k, n from model/topology.py; hops measured from the BCAST messages of the real broadcast "
                "roles (one broadcast per origin, every origin)."),
        Section("Figure 4.5: a 3-hop broadcast, 16 broadcast ranks, L = 6",
                _figure_4_5(cfg.figure_bcast_ranks, cfg.figure_peers, cfg.figure_origin, fig_chk),
                quote("Example 3-hop broadcast operation with 16 broadcast ranks and a maximum of 6 peers per rank, "
                      "giving (k, n, m) = (2, 2, 4). The gray box marks the 4 ranks that are used in the binary "
                      "2-cube (i.e. hypercube) communication. ... The maximum number of hops needed for each message "
                      "is equal to n(k - 1) + 1 while each broadcast rank receives messages from at most L other "
                      "broadcast ranks.", "Schaefers 2014, 4.2.6, Figure 4.5"),
                "Each 2x2 square is one binary 2-cube (a = cube); grey lines are all logical links, coloured lines the "
                "tree this broadcast took (hop 1, 2, 3)."),
    ]
    n_match = int(table.matches_table.fillna(False).sum())
    agreement = (
        f"Our shape choice gives {n_match} of the {int(table.matches_table.notna().sum())} rows of Table 4.1 "
        f"exactly{' and Figure 4.5 (k, n, m) = (2, 2, 4) with 3 hops' if fig_ok else ''}, and the real broadcast "
        f"roles deliver every origin's message to every broadcast and search rank exactly once within n(k-1)+1 "
        f"hops ({'all' if all_ok else 'NOT all'} {len(table) + 1 + len(sweep)} networks checked). "
        "The thesis does not say how it breaks ties between shapes of equal k + n (Table 4.1 never meets one); "
        "we prefer fewer hops, then fewer links, which only matters for B that Table 4.1 does not list.")
    summary = {"table_4_1_rows_matched": n_match, "figure_4_5_matches": fig_ok, "all_verified": all_ok,
               "networks_checked": len(table) + 1 + len(sweep)}
    return Outcome(tables=tables, sections=sections, agreement=agreement, summary=summary,
                   samples=f"{summary['networks_checked']} networks, every origin's broadcast (deterministic)")


def _div(text: str):
    return Div(text=text, width=520)
