"""The transposition table: TableLookup probing, replacement by time stamp, reuse, concurrency, ownership."""

import threading

import numpy as np
from numba import njit

from model import tt
from model.ownership import local_index, owner

S = 101  # slots of the small test tables


def key(i, start=5):
    """Distinct hashes that all start probing at slot `start`."""
    return np.uint64(i * S + start)


def test_insert_then_find_and_missing():
    t = tt.new_table(S, 4)
    slot, st = tt.lookup(t, key(1), True)
    assert st == tt.NEW and slot == 5 and t.key[slot] == key(1)
    assert t.n_children[slot] == tt.UNEXPANDED and t.stamp[slot] == t.meta[tt.M_SEARCH]
    assert tt.lookup(t, key(1), True) == (slot, tt.FOUND)
    assert tt.lookup(t, key(2), False) == (0, tt.MISSING)
    assert tt.find(t, key(1)) == slot


def test_linear_probing_skips_slot_zero_and_is_limited_to_ten():
    t = tt.new_table(S, 4)
    slots = [tt.lookup(t, key(i, start=S - 2), True)[0] for i in range(tt.PROBES)]
    assert slots == [S - 2, S - 1, 1, 2, 3, 4, 5, 6, 7, 8]  # wraps around, never uses 0
    assert t.stamp[0] == tt.EMPTY
    # all ten probed slots belong to the current search: nothing may be evicted
    assert tt.lookup(t, key(99, start=S - 2), True) == (0, tt.FULL)
    for i in range(tt.PROBES):
        assert tt.find(t, key(i, start=S - 2)) == slots[i]


def test_old_entries_are_replaced_least_recent_first_and_touched_ones_survive():
    t = tt.new_table(S, 4)
    first = {i: tt.lookup(t, key(i), True)[0] for i in range(tt.PROBES)}  # search 2 fills the window
    tt.new_search(t)  # search 3
    touched = [0, 1, 2, 3, 4, 5, 6]
    for i in touched:
        assert tt.find(t, key(i)) == first[i]  # found again (reuse), now stamped with search 3
    tt.new_search(t)  # search 4: slots 7..9 last seen in search 2, the others in search 3
    for i in [3, 4, 5, 6]:
        tt.find(t, key(i))
    slot, st = tt.lookup(t, key(50), True)
    assert st == tt.NEW and slot == first[7]  # the least recently used one (search 2, first in probe order)
    assert tt.find(t, key(7)) == 0  # evicted
    slot2, _ = tt.lookup(t, key(51), True)
    assert slot2 == first[8]
    # the ones touched in this search (3..6) can never go; those of search 3 (0..2) go before them
    slot3, _ = tt.lookup(t, key(52), True)
    assert slot3 == first[9]
    slot4, _ = tt.lookup(t, key(53), True)
    assert slot4 in (first[0], first[1], first[2])
    for i in [3, 4, 5, 6]:
        assert tt.find(t, key(i)) == first[i]


def test_statistics_survive_a_new_search_and_a_replaced_slot_is_cleared():
    t = tt.new_table(S, 4)
    slot, _ = tt.lookup(t, key(1), True)
    t.visits[slot], t.value[slot], t.n_children[slot] = 42, 21.0, 3
    tt.new_search(t)
    slot_again, st = tt.lookup(t, key(1), True)
    assert (slot_again, st) == (slot, tt.FOUND)
    assert t.visits[slot] == 42 and t.n_children[slot] == 3  # tree reuse: nothing cleared
    tt.new_search(t)
    for i in range(2, 2 + tt.PROBES):  # fill the rest of the window; key(1) is the oldest entry
        tt.lookup(t, key(i), True)
    assert tt.find(t, key(1)) == 0
    assert t.visits[slot] == 0 and t.value[slot] == 0.0 and t.n_children[slot] == tt.UNEXPANDED


def test_budget_sizing():
    k = 82
    n = tt.slots_for(64, k)
    assert n * tt.slot_bytes(k) <= 64 * 2**20 < (n + 1) * tt.slot_bytes(k)
    t = tt.table_for_budget(1, 362)
    assert t.child_visits.shape == (tt.slots_for(1, 362), 362)
    assert sum(a.nbytes for a in t) <= 2**20 + 64


@njit(cache=True, nogil=True)
def _insert_all(t, keys, out):
    for i in range(keys.shape[0]):
        while True:
            slot, st = tt.lookup(t, keys[i], True)
            if st != tt.BUSY:
                break
        out[i] = slot


def test_concurrent_inserts_store_each_position_once():
    t = tt.new_table(1 << 18, 2)
    rng = np.random.default_rng(0)
    # 20000 positions crowded into an eighth of the table: probe windows overlap all the time
    keys = rng.integers(0, 2**40, size=20000, dtype=np.uint64) * np.uint64(1 << 18) \
        + rng.integers(0, 1 << 15, size=20000, dtype=np.uint64)
    keys = np.unique(keys)
    orders = [rng.permutation(keys.size) for _ in range(2)]
    raw = [np.zeros(keys.size, np.int64) for _ in range(2)]
    _insert_all(tt.new_table(64, 2), keys[:10], np.zeros(10, np.int64))  # compile before the race
    threads = [threading.Thread(target=_insert_all, args=(t, keys[o], raw[i])) for i, o in enumerate(orders)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    outs = [np.zeros(keys.size, np.int64) for _ in range(2)]
    for i, o in enumerate(orders):
        outs[i][o] = raw[i]
    stored = outs[0]
    assert (stored > 0).sum() > 0.9 * keys.size
    # both threads agree on every slot, and no position sits in two slots
    both = (outs[0] > 0) & (outs[1] > 0)
    assert np.array_equal(outs[0][both], outs[1][both])
    used = t.key[t.stamp == t.meta[tt.M_SEARCH]]
    assert used.size == np.unique(used).size


def test_ownership_formula_and_balance():
    L, M = 1 << 10, 4
    h = np.uint64(0x123456789ABCDEF0)
    assert owner(h, M, L) == int((int(h) // L) % M)
    assert local_index(h, L) == int(h) % L
    hs = np.random.default_rng(1).integers(0, 2**64 - 1, size=4000, dtype=np.uint64, endpoint=True)
    counts = np.bincount([owner(x, M, L) for x in hs], minlength=M)
    assert counts.min() > 0.8 * 1000 and counts.max() < 1.2 * 1000
    # owner and local index read different bits: within one owner, local indices still spread out
    mine = [local_index(x, L) for x in hs if owner(x, M, L) == 0]
    assert len(set(mine)) > 0.5 * len(mine)


def test_prefault_and_clear():
    t = tt.new_table(S, 4)
    tt.prefault(t)
    slot, st = tt.lookup(t, key(1), True)
    assert st == tt.NEW
    tt.new_search(t)
    t.visits[slot] = 9
    tt.clear(t)
    assert tt.find(t, key(1)) == 0 and t.meta[tt.M_SEARCH] == tt.FIRST_SEARCH
    again, st = tt.lookup(t, key(1), True)
    assert (again, st) == (slot, tt.NEW) and t.visits[slot] == 0


def test_a_new_tables_arrays_are_separate_filled_and_spread_round_a_page():
    from model.blocks import PAGE
    from model.roles.dup import new_dup_table

    t = tt.new_table(3000, 362)
    assert (t.stamp == tt.EMPTY).all() and (t.n_children == tt.UNEXPANDED).all()
    arrays = [a for name, a in t._asdict().items() if name != "meta"]
    assert all(a.flags.c_contiguous and a.flags.writeable for a in arrays)
    assert not any(a.any() for a in arrays if a is not t.stamp and a is not t.n_children)
    # each array writable on its own: filling one leaves every other as it was
    for a in arrays:
        before = [b.copy() for b in arrays if b is not a]
        a.reshape(-1)[:] = 1
        assert all((b == c).all() for b, c in zip((b for b in arrays if b is not a), before))
    # the six per-child arrays a UCT step reads together start spread round a page: the table's 12 arrays
    # lie ~1/12 of a page apart and these six alternate with the others, so each is 512 B or more from the
    # next, and a node's rows of them fall in different cache sets
    per_child = [t.child_visits, t.child_value, t.amaf_visits, t.amaf_value, t.vloss, t.prior]
    offs = sorted(a.__array_interface__["data"][0] % PAGE for a in per_child)
    gaps = [b - a for a, b in zip(offs, offs[1:] + [offs[0] + PAGE])]
    assert min(gaps) >= 512, offs

    dt = new_dup_table(3000, 362, 40)
    assert (dt.row_of == -1).all() and not dt.n.any() and not dt.aw.any()
    offs = sorted(a.__array_interface__["data"][0] % PAGE for a in (dt.n, dt.w, dt.an, dt.aw))
    assert len(set(offs)) == 4
