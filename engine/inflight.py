"""The `inflight` algorithm: the sequential search with S_par simulations in flight at once, on one core.

What a distributed search loses against a sequential one at equal simulation counts (Schaefers 2014, 4.3.2,
Figure 4.15) comes from its S_par simulations in flight: each selects its path while S_par - 1 others have
not yet reported, seeing only their virtual losses. This searcher reproduces exactly that and nothing else
(no network, no duplication, no load balance): the UCT-Treesplit role of model/roles on one search rank
with one worker and `overload` = S_par, its work packages not fused (select, expand, playout and update of
different simulations interleave), driven by the deterministic loopback runtime on the searcher's own
transposition table. With s_par = 1 it builds the sequential search's tree exactly (model/roles/steps.py).

Deterministic for a seed (the loopback's event order is seeded). A timed budget runs in chunks, each
drained before the clock is looked at (the in-flight pipeline restarts per chunk, so a chunk is at least
8 S_par simulations).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.sequential import Position, SearchConfig, SequentialSearcher
from engine.timecontrol import Budget
from model import uct
from model.config import check
from model.roles import Layout, Setup, make_role
from model.roles.loopback import Loopback

CHUNK_SECONDS = 0.05  # a timed search looks at the clock about this often (each look drains the pipeline)


@dataclass
class InFlightConfig(SearchConfig):
    s_par: int = 16               # simulations in flight at once (S_par); 1: the sequential search

    def validate(self) -> None:
        super().validate()
        check(isinstance(self.s_par, int) and self.s_par >= 1, "s_par", "must be an integer >= 1")
        check(self.threads == 1, "threads", "the in-flight model runs on one thread")


class InFlightSearcher(SequentialSearcher):
    name = "inflight"

    def __init__(self, config: InFlightConfig, **kw):
        super().__init__(config, **kw)

    def _loopback(self, pos: Position, sims: int, counters: np.ndarray) -> int:
        cfg = self.config
        uct_params = {k: v for k, v in cfg.uct_params().as_dict().items()}
        params = {**uct_params, "overload": cfg.s_par, "fuse": False}
        setup = Setup(pos.g, pos.s, history=pos.history, sims=sims,
                      seed=cfg.seed * 1_000_003 + self.n_searches * 7919 + int(counters[uct.C_SIMS]))
        role = make_role("treesplit", 0, Layout(1, 0, workers=1), setup, params, table=self.table)
        Loopback([role], workers=1, seed=setup.seed).run()
        st = role.stats()
        counters[uct.C_SIMS] += st.sims_done
        counters[uct.C_PLAYOUTS] += st.playouts
        counters[uct.C_NEW] += st.nodes_stored
        return st.sims_done

    def _run(self, pos: Position, budget: Budget, counters: np.ndarray, rng: np.ndarray) -> int:
        if budget.seconds is None:
            return self._loopback(pos, int(budget.sims), counters)
        done, start = 0, self.clock()
        chunk = 8 * self.config.s_par
        while budget.sims is None or done < budget.sims:
            n = chunk if budget.sims is None else min(chunk, budget.sims - done)
            t0 = self.clock()
            done += self._loopback(pos, n, counters)
            now = self.clock()
            if now - start >= budget.seconds:
                break
            rate = n / max(now - t0, 1e-6)
            chunk = int(max(8 * self.config.s_par, min(rate * CHUNK_SECONDS, rate * (budget.seconds - (now - start)))))
        return done
