"""The broadcast network of UCT-Treesplit: m connected k-ary n-cubes (Schaefers 2014, section 4.2.6).

B broadcast ranks, each allowed at most L broadcast peers, are laid out as m k-ary n-cubes with

    k^n * m = B            (eq. 4.8)
    n + m - 1 <= L         (eq. 4.9)

choosing, among all (k, n, m) that satisfy both, the one with the smallest k + n. Ties (which Table 4.1
never meets) go to fewer hops n(k-1), then fewer links n + m - 1, then the larger m; so the choice is
deterministic. Rank r is labelled (a, b) with a = r // k^n the cube and b the base-k digits of r % k^n
(b_0 least significant). Rank (a, b) sends to its successor (b_i + 1) mod k in each dimension i and to its
counterparts (x, b), x != a, in the other cubes.

Routing is the thesis's procedure Broadcast: a message carries its origin and a `dimension`; a rank that
receives it forwards it to its counterparts in the other cubes (who only deliver it) and, inside its cube,
along every dimension i < dimension whose successor is not back at the origin's coordinate. The result is
a spanning tree per origin: every broadcast rank receives each broadcast exactly once, after at most
n(k-1) cube hops plus one clique hop; n(k-1)+1 is the thesis's bound (0 hops are needed when B = 1).

`forwards()` is the hot path (the broadcast ranks call it per message); it is plain integer arithmetic.
`graph()` gives the same links as a networkx DiGraph for peer lists, checks and drawing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from model.errors import UserError

# `dimension` value of a message sent over a clique link: the receiver delivers it and forwards nothing.
DELIVER_ONLY = -1


def _int_root(r: int, n: int) -> int | None:
    """k with k**n == r, or None."""
    k = round(r ** (1.0 / n))
    for c in (k - 1, k, k + 1):
        if c >= 1 and c**n == r:
            return c
    return None


def choose_shape(bcast_ranks: int, peers: int) -> tuple[int, int, int]:
    """(k, n, m) for B broadcast ranks and at most L peers, by eq. 4.8/4.9 minimising k + n."""
    B, L = bcast_ranks, peers
    if isinstance(B, bool) or not isinstance(B, int) or B < 1:
        raise UserError(f"--bcast-ranks: need a whole number >= 1, got {B!r}")
    if isinstance(L, bool) or not isinstance(L, int) or L < 1:
        raise UserError(f"--peers: need a whole number >= 1, got {L!r}")
    best: tuple | None = None
    for m in range(1, min(B, L) + 1):  # n >= 1 so m <= L
        if B % m:
            continue
        r = B // m
        shapes = [(1, 1)] if r == 1 else [
            (k, n) for n in range(1, r.bit_length()) if (k := _int_root(r, n)) is not None and k >= 2
        ]
        for k, n in shapes:
            if n + m - 1 > L:
                continue
            key = (k + n, n * (k - 1), n + m - 1, -m)
            if best is None or key < best[0]:
                best = (key, (k, n, m))
    assert best is not None  # (k, n, m) = (B, 1, 1) always satisfies both equations
    return best[1]


@dataclass(frozen=True)
class Topology:
    """The broadcast network for `bcast_ranks` ranks and at most `peers` peers per rank."""

    bcast_ranks: int
    peers: int
    k: int = field(init=False)
    n: int = field(init=False)
    m: int = field(init=False)

    def __post_init__(self) -> None:
        k, n, m = choose_shape(self.bcast_ranks, self.peers)
        object.__setattr__(self, "k", k)
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "m", m)

    @property
    def cube_size(self) -> int:
        return self.k**self.n

    @property
    def hop_bound(self) -> int:
        """The thesis's bound on hops per broadcast, n(k-1)+1."""
        return self.n * (self.k - 1) + 1

    @property
    def max_hops(self) -> int:
        """The hops the farthest rank actually is from any origin: n(k-1) in the cube, +1 between cubes."""
        return self.n * (self.k - 1) + (1 if self.m > 1 else 0)

    def label(self, rank: int) -> tuple[int, tuple[int, ...]]:
        """(a, (b_0, ..., b_{n-1})) of a broadcast rank."""
        a, r = divmod(rank, self.cube_size)
        b = []
        for _ in range(self.n):
            r, d = divmod(r, self.k)
            b.append(d)
        return a, tuple(b)

    def rank_of(self, a: int, b: tuple[int, ...]) -> int:
        r = 0
        for d in reversed(b):
            r = r * self.k + d
        return a * self.cube_size + r

    def forwards(self, origin: int, at: int, dimension: int) -> list[tuple[int, int]]:
        """Where rank `at` forwards a broadcast from `origin` that reached it with `dimension`:
        a list of (destination, dimension to send with). The origin's own call ignores `dimension`."""
        if dimension == DELIVER_ONLY:
            return []
        k, cs = self.k, self.cube_size
        a, r = divmod(at, cs)
        out = [(x * cs + r, DELIVER_ONLY) for x in range(self.m) if x != a]
        if at == origin:
            dimension = self.n
        if k == 1:
            return out
        r0 = origin % cs
        step = 1
        for i in range(dimension):
            bi = (r // step) % k
            oi = (r0 // step) % k
            if (bi + 1) % k != oi:
                new_dim = i + 1 if (bi + 2) % k != oi else i
                succ = r - bi * step + ((bi + 1) % k) * step
                out.append((a * cs + succ, new_dim))
            step *= k
        return out

    def start(self, origin: int) -> list[tuple[int, int]]:
        """The origin's first forwards."""
        return self.forwards(origin, origin, self.n)

    def reach(self, origin: int) -> dict[int, int]:
        """Run one broadcast from `origin`: {rank: hops at which it received the message}; raises
        AssertionError if some rank receives it twice (the routing is meant to be a spanning tree)."""
        got = {origin: 0}
        frontier = [(origin, self.n, 0)]
        while frontier:
            at, dim, hops = frontier.pop()
            for dst, d in self.forwards(origin, at, dim):
                assert dst not in got, f"rank {dst} receives the broadcast from {origin} twice"
                got[dst] = hops + 1
                frontier.append((dst, d, hops + 1))
        return got

    @cached_property
    def _graph(self):
        import networkx as nx

        g = nx.DiGraph()
        g.add_nodes_from(range(self.bcast_ranks))
        cs, k = self.cube_size, self.k
        for r in range(self.bcast_ranks):
            a, b = self.label(r)
            for x in range(self.m):
                if x != a:
                    g.add_edge(r, self.rank_of(x, b), kind="clique")
            if k > 1:
                for i in range(self.n):
                    bb = list(b)
                    bb[i] = (bb[i] + 1) % k
                    g.add_edge(r, self.rank_of(a, tuple(bb)), kind="cube", dim=i)
        assert cs * self.m == self.bcast_ranks
        return g

    def graph(self):
        """The logical links as a networkx DiGraph (edge attribute kind = "cube" or "clique")."""
        return self._graph

    def out_peers(self, rank: int) -> list[int]:
        return sorted(self._graph.successors(rank))

    def in_peers(self, rank: int) -> list[int]:
        return sorted(self._graph.predecessors(rank))

    def describe(self) -> dict:
        return {
            "bcast_ranks": self.bcast_ranks, "peers_limit": self.peers, "m": self.m, "k": self.k, "n": self.n,
            "links_per_rank": max(self._graph.out_degree(r) for r in range(self.bcast_ranks)),
            "max_hops": self.max_hops, "hop_bound": self.hop_bound,
        }
