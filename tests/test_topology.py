"""The broadcast network: shape choice (eq. 4.8/4.9, Table 4.1, Figure 4.5) and exactly-once routing."""

import json

import networkx as nx
import pytest

from model.errors import UserError
from model.topology import Topology, choose_shape

# Table 4.1 of Schaefers 2014 (L = 12): bc-ranks, m, k, n.
TABLE_4_1 = [(1, 1, 1, 1), (2, 2, 1, 1), (4, 4, 1, 1), (8, 8, 1, 1), (16, 8, 2, 1), (32, 8, 2, 2), (64, 8, 2, 3)]


@pytest.mark.parametrize("B,m,k,n", TABLE_4_1)
def test_table_4_1(B, m, k, n):
    t = Topology(B, 12)
    assert (t.m, t.k, t.n) == (m, k, n)


def test_figure_4_5():
    t = Topology(16, 6)
    assert (t.k, t.n, t.m) == (2, 2, 4)
    assert t.hop_bound == 3 and t.max_hops == 3
    assert max(t.reach(0).values()) == 3
    # the gray box: ranks of cube 0 form a binary 2-cube (a 4-cycle), each linked to 3 counterparts
    g = t.graph()
    cube0 = g.subgraph(range(4)).to_undirected()
    assert nx.is_isomorphic(cube0, nx.cycle_graph(4))
    assert all(len(t.out_peers(r)) == 5 for r in range(16))


def _brute_force(B, L):
    best = None
    for m in range(1, B + 1):
        for n in range(1, 40):
            for k in range(1, B + 1):
                if k**n * m == B and n + m - 1 <= L:
                    key = (k + n, n * (k - 1), n + m - 1, -m)
                    if best is None or key < best[0]:
                        best = (key, (k, n, m))
    return best


@pytest.mark.parametrize("L", [1, 2, 3, 4, 6, 12])
def test_shape_satisfies_equations_and_minimises_k_plus_n(L):
    for B in range(1, 70):
        k, n, m = choose_shape(B, L)
        assert k**n * m == B and n + m - 1 <= L
        key, shape = _brute_force(B, L)
        assert k + n == key[0] and (k, n, m) == shape


@pytest.mark.parametrize("B,L", [(B, L) for B in (1, 2, 3, 5, 6, 8, 9, 12, 16, 18, 24, 27, 32, 36, 48, 64, 81)
                                  for L in (1, 2, 3, 5, 12)])
def test_every_origin_reaches_every_rank_once_within_bound(B, L):
    t = Topology(B, L)
    g = t.graph()
    for origin in range(B):
        got = t.reach(origin)  # asserts no rank receives twice
        assert sorted(got) == list(range(B))
        assert max(got.values()) <= t.hop_bound
        assert max(got.values()) <= t.max_hops
        # every forward follows a link of the network, and no rank talks to more than L others
    assert max(max(got.values()) for got in (t.reach(o) for o in range(B))) == t.max_hops
    for r in range(B):
        assert len(t.out_peers(r)) <= L and len(t.in_peers(r)) <= L
    for origin in range(B):
        stack = [(origin, t.n)]
        while stack:
            at, d = stack.pop()
            for dst, nd in t.forwards(origin, at, d):
                assert g.has_edge(at, dst)
                stack.append((dst, nd))


def test_labels_round_trip():
    t = Topology(81, 4)
    for r in range(81):
        a, b = t.label(r)
        assert t.rank_of(a, b) == r and 0 <= a < t.m and all(0 <= x < t.k for x in b)


@pytest.mark.parametrize("B,L", [(0, 12), (-3, 12), (4, 0), (4, -1)])
def test_impossible_input_is_a_user_error(B, L):
    with pytest.raises(UserError):
        Topology(B, L)


def test_cli_reproduces_table_4_1(run_cli):
    for B, m, k, n in TABLE_4_1:
        r = run_cli("topology", "--bcast-ranks", str(B), "--peers", "12", "--json", timeout=120)
        assert r.returncode == 0, r.stderr
        d = json.loads(r.stdout)
        assert (d["m"], d["k"], d["n"]) == (m, k, n)
        assert d["hop_bound"] == n * (k - 1) + 1


def test_cli_figure_4_5_text_and_verbose(run_cli):
    r = run_cli("topology", "--bcast-ranks", "16", "--peers", "6", "--verbose", timeout=120)
    assert r.returncode == 0, r.stderr
    assert "m = 4  k = 2  n = 2" in r.stdout and "max hops = 3" in r.stdout
    assert r.stdout.count("sends to") == 16


@pytest.mark.parametrize("args", [("--bcast-ranks", "0"), ("--bcast-ranks", "4", "--peers", "0"),
                                  ("--bcast-ranks", "x")])
def test_cli_bad_input_exits_2(run_cli, args):
    r = run_cli("topology", *args, timeout=120)
    assert r.returncode == 2
    assert "treesplit: error:" in r.stderr and "Traceback" not in r.stderr
