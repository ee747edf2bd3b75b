"""A StructRef registered with model.borrowed_struct: kernels compiled without reference counting read and
write through its fields, counting kernels keep counting, and nothing a search rank's core holds outlives it."""

import gc
import weakref

import numpy as np
import pytest
from numba import njit, types
from numba.experimental import structref

from engine.mpi.config import DistributedConfig
from engine.mpi.roles_host import make_setup, roles_layout
from model.borrowed_struct import register_borrowed
from model.roles import make_roles
from model.roles.loopback import BatchLoopback


@register_borrowed
class PairType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class Pair(structref.StructRefProxy):
    pass


structref.define_proxy(Pair, PairType, ["values", "counts"])


@njit(_nrt=False)
def _add_up(p, i):
    total = 0.0
    for k in range(p.values.shape[0]):
        total += p.values[k]
    p.counts[i] += 1
    return total


@njit
def _twice(p):
    return _add_up(p, 0) + _add_up(p, 1)


@njit
def _swap_values(p, new):
    p.values = new


def test_kernels_without_reference_counting_read_and_write_fields():
    values, counts = np.arange(5.0), np.zeros(2, np.int64)
    p = Pair(values, counts)
    assert _twice(p) == 20.0
    assert counts.tolist() == [1, 1]


def test_setting_a_field_in_a_kernel_releases_the_old_array():
    old, counts = np.arange(5.0), np.zeros(2, np.int64)
    p = Pair(old, counts)
    alive = weakref.ref(old)
    _twice(p)
    del old
    _swap_values(p, np.ones(3))
    gc.collect()
    assert alive() is None
    assert _twice(p) == 6.0


@pytest.mark.parametrize("algo", ["treesplit", "tds", "dfuct", "leaf", "root"])
def test_a_search_ranks_arrays_are_freed_after_a_search(algo):
    """The transitions run without reference counting below their Python-facing kernels: a reference one of
    them took and never gave back would keep a rank's table and buffers alive after its role is gone."""
    cfg = DistributedConfig(algo=algo, ranks=2, threads=1, board=9, sims=300, seed=1, params={"table_mb": 1})
    roles = make_roles(algo, roles_layout(cfg), make_setup(cfg), cfg.params)
    BatchLoopback(roles, seed=1).run()
    held = [getattr(r.a, f) for r in roles if hasattr(r, "a") for f in ("ob", "steps", "rsteps", "seen", "q")]
    held += [r.t.key for r in roles if getattr(r, "t", None) is not None]
    assert len(held) >= 6
    alive = [weakref.ref(x) for x in held]
    del held, roles
    gc.collect()
    assert [w for w in alive if w() is not None] == []
