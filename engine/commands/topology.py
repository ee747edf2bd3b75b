"""`treesplit topology`: the broadcast network chosen for B broadcast ranks and at most L peers."""

from __future__ import annotations

import argparse
import json

# `treesplit --help` imports this module: the handlers import what they run (numba kernels, pandas, MPI, Bokeh)
# when they are called, which keeps --help fast.


DESCRIPTION = """\
Choose (k, n, m) with k^n * m = B and n + m - 1 <= L minimising k + n, and print m, k, n and the hops a
broadcast needs (Schaefers 2014, section 4.2.6, Table 4.1).

examples:
  treesplit topology --bcast-ranks 16
  treesplit topology --bcast-ranks 64 --peers 6 --verbose
  treesplit topology --bcast-ranks 32 --json
"""


def register(sub) -> None:
    p = sub.add_parser(
        "topology", help="shape of the broadcast network (m connected k-ary n-cubes, Schaefers 2014, eq. 4.8/4.9)",
        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bcast-ranks", type=int, required=True, metavar="B", help="number of broadcast ranks")
    p.add_argument("--peers", type=int, default=12, metavar="L",
                   help="most broadcast peers per broadcast rank (default 12, as in Table 4.1)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--verbose", action="store_true", help="also list every rank's label and peers")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from model.topology import Topology

    t = Topology(args.bcast_ranks, args.peers)
    out = t.describe()
    if args.verbose:
        out["ranks"] = [
            {"rank": r, "cube": t.label(r)[0], "index": list(t.label(r)[1]),
             "out_peers": t.out_peers(r), "in_peers": t.in_peers(r)}
            for r in range(t.bcast_ranks)
        ]
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"broadcast ranks B = {t.bcast_ranks}, peer limit L = {t.peers}")
    print(f"m = {t.m}  k = {t.k}  n = {t.n}   ({t.m} connected {t.k}-ary {t.n}-cube"
          f"{'s' if t.m > 1 else ''}, {out['links_per_rank']} links per rank)")
    print(f"max hops = {t.max_hops}   (bound n(k-1)+1 = {t.hop_bound})")
    if args.verbose:
        for r in out["ranks"]:
            print(f"  rank {r['rank']:>4}  (a={r['cube']}, b={tuple(r['index'])})  "
                  f"sends to {r['out_peers']}  receives from {r['in_peers']}")
    return 0
