"""The IO loop's turn of a batch rank, compiled, MPI calls included.

A search rank whose role runs its own packages (engine.mpi.roles_host.RolesHost.batch) spends its time in
three things per loop turn: take in what arrived, run packages for a slice, send what they wrote. From Python
each turn cost ~30 us of interpreter and mpi4py calls around ~70 us of tree work, and a simulation waited
a turn on each rank it visited. `turn` does all three in one numba call, calling MPICH's C functions
directly (MPI_Iprobe, MPI_Get_count, MPI_Recv, MPI_Isend, MPI_Test: ~1 us a round trip between two ranks
of one host), so the Python loop only keeps time (ticks, samples, telemetry), speaks the CONTROL protocol
and grows buffers.

MPICH's handles are plain C ints (communicator, datatype, request; a status is 5 ints), which is what
makes the calls simple; `available()` says whether the MPI library is MPICH (the mpich wheel), and the
rank falls back to the Python batch loop otherwise. Only the IO thread calls these (MPI_THREAD_FUNNELED).

A turn probes for any message: a batch of records (wire.TAG_RECORDS) is received into `rbuf` and handed
to the role's receive kernel; a CONTROL message is left for Python (T_CONTROL). Sends go from a pool of
buffers, each with its request; a buffer is reused once MPI_Test says its send completed. Records are
bounded (core.MAX_RECORD), so a fixed pool serves any outbox, a few records at a time when it is large; a
turn whose buffers are all in flight leaves the rest for the next one, which takes in what arrived first
(so two ranks sending each other much never wait on each other).

Like the role's transitions, the turn's parts are compiled without reference counting (`_nrt=False`, see
model/borrowed_struct.py) and call the transitions' uncounted kernels (`K._run`, `K._receive`): counted, the
loop's reads of the core's and the net's arrays made NRT_incref/decref a tenth of a 19x19 rank's samples in
compiled code (perf). `turn`, which Python calls, counts.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np
from numba import njit, types

from engine.mpi import wire
from model.cycles import cycles
from model.roles import core as K
from model.roles.steps import copy_to

# turn outcomes
T_IDLE, T_WORKED, T_CONTROL, T_GROW_CORE, T_GROW_RECV, T_SEND_WAIT, T_CORRUPT = 0, 1, 2, 3, 4, 5, 6
# net fields (int64)
(N_COMM, N_BYTE, N_RECORDS, N_PEND_OFF, N_PEND_N, N_PEND_SRC, N_NEED, N_RX_BATCHES, N_TX_BATCHES, N_RUN_C0,
 N_RUN_C1, N_RUN_CYCLES, N_APP_RX, N_APP_TX, N_BAD, N_SPINS, N_RX_CYCLES, N_TX_CYCLES, N_SPIN_CYCLES) = range(19)
N_LEN = 20
REQUEST_NULL = 0x2C000000  # MPICH's MPI_REQUEST_NULL

_i32, _vp = types.int32, types.voidptr
_iprobe = types.ExternalFunction("MPI_Iprobe", _i32(_i32, _i32, _i32, _vp, _vp))
_get_count = types.ExternalFunction("MPI_Get_count", _i32(_vp, _i32, _vp))
_recv = types.ExternalFunction("MPI_Recv", _i32(_vp, _i32, _i32, _i32, _i32, _i32, _vp))
_isend = types.ExternalFunction("MPI_Isend", _i32(_vp, _i32, _i32, _i32, _i32, _i32, _vp))
_test = types.ExternalFunction("MPI_Test", _i32(_vp, _vp, _vp))
_sched_yield = types.ExternalFunction("sched_yield", _i32())  # libc: let another runnable process have the core

_LOADED: list[bool] = []


def available() -> bool:
    """Whether this process's MPI is MPICH and its library could be made visible to compiled code
    (call after MPI is initialised; the answer is kept)."""
    if not _LOADED:
        ok = False
        try:
            from mpi4py import MPI

            if MPI.get_vendor()[0] == "MPICH" and isinstance(MPI.COMM_WORLD.handle, int):
                path = _libmpi_path()
                if path:
                    import llvmlite.binding as llvm

                    llvm.load_library_permanently(path)
                    ok = True
        except Exception:  # any doubt: the Python loop, which needs none of this
            ok = False
        _LOADED.append(ok and not os.environ.get("TREESPLIT_PYTHON_IO"))
    return _LOADED[0]


def _libmpi_path() -> str | None:
    """The MPI library this process loaded (mpi4py loads it at import)."""
    with open("/proc/self/maps") as f:
        for line in f:
            name = line.split()[-1] if line.strip() else ""
            if "/libmpi.so" in name or "/libmpich.so" in name:
                return name
    return None


class Net(NamedTuple):
    """A rank's compiled endpoint: its state and buffers."""

    net: np.ndarray     # int64[N_LEN]       handles, a batch being taken in, counters (N_*)
    status: np.ndarray  # int32[5]           an MPI_Status
    flag: np.ndarray    # int32[2]           flag, count
    rbuf: np.ndarray    # uint8[R]           the batch being received
    pool: np.ndarray    # uint8[S, B]        send buffers ...
    used: np.ndarray    # int64[S]           ... their bytes (0: free once the request completed)
    reqs: np.ndarray    # int32[S]           ... their requests (REQUEST_NULL when none)
    sent: np.ndarray    # int64[W]           bytes of each rank's outbox already sent this turn


def new_net(comm_handle: int, byte_handle: int, world: int, buffers: int = 16) -> Net:
    size = 16 + 2 * K.MAX_RECORD  # a buffer holds any record (core.MAX_RECORD) with room to batch small ones
    net = np.zeros(N_LEN, np.int64)
    net[N_COMM], net[N_BYTE], net[N_RECORDS] = comm_handle, byte_handle, wire.TAG_RECORDS
    net[N_PEND_OFF] = -1
    return Net(net=net, status=np.zeros(5, np.int32), flag=np.zeros(2, np.int32), rbuf=np.zeros(size, np.uint8),
               pool=np.zeros((buffers, size), np.uint8), used=np.zeros(buffers, np.int64),
               reqs=np.full(buffers, REQUEST_NULL, np.int32), sent=np.zeros(world, np.int64))


@njit(cache=True, nogil=True, _nrt=False)
def _reap(n):
    """Free the send buffers whose sends completed."""
    for i in range(n.used.shape[0]):
        if n.used[i] > 0:
            _test(n.reqs[i:i + 1].ctypes, n.flag.ctypes, n.status.ctypes)
            if n.flag[0] != 0:
                n.used[i] = 0


@njit(cache=True, nogil=True, _nrt=False)
def _take_in(c, n, log):
    """Go on with the batch in rbuf (N_PEND_*): T_WORKED when it is all in, else what to grow."""
    net = n.net
    off, end = net[N_PEND_OFF], net[N_PEND_N]
    t_send = n.rbuf[8:16].view(np.float64)[0]
    r, off = K._receive(c, n.rbuf, off, end, log, net[N_PEND_SRC], t_send)
    net[N_PEND_OFF] = off
    if r == K.OK:
        net[N_PEND_OFF] = -1
        return T_WORKED
    if r < 0:
        net[N_BAD] = r
        return T_CORRUPT
    return T_GROW_CORE


@njit(cache=True, nogil=True, _nrt=False)
def _probe(n):
    """Whether a message from any rank waits (its envelope in n.status). MPICH's MPI_Iprobe looks at what
    its progress engine has taken in and then polls once, answering no for a message that poll took in: a
    second probe sees it. With one probe after each run slice a batch would wait a second slice (at 19x19 on
    2 ranks: a median 0.6 ms from send to receipt instead of 0.15 ms)."""
    for _ in range(2):
        n.flag[0] = 0
        _iprobe(-2, -1, np.int32(n.net[N_COMM]), n.flag.ctypes, n.status.ctypes)  # MPI_ANY_SOURCE, MPI_ANY_TAG
        if n.flag[0] != 0:
            return True
    return False


@njit(cache=True, nogil=True, _nrt=False)
def _receive(c, n, log):
    """Every batch that has arrived (a CONTROL message stops the receiving: T_CONTROL)."""
    net = n.net
    got = False
    while True:
        if net[N_PEND_OFF] >= 0:
            r = _take_in(c, n, log)
            if r != T_WORKED:
                return r
            got = True
        if not _probe(n):
            return T_WORKED if got else T_IDLE
        if n.status[3] != net[N_RECORDS]:
            return T_CONTROL
        _get_count(n.status.ctypes, np.int32(net[N_BYTE]), n.flag[1:].ctypes)
        size = np.int64(n.flag[1])
        if size > n.rbuf.shape[0]:
            net[N_NEED] = size
            return T_GROW_RECV
        src = n.status[2]
        _recv(n.rbuf.ctypes, np.int32(size), np.int32(net[N_BYTE]), src, n.status[3], np.int32(net[N_COMM]),
              n.status.ctypes)
        if size < 16:
            net[N_BAD] = -1
            return T_CORRUPT
        net[N_RX_BATCHES] += 1
        net[N_APP_RX] += n.rbuf[0:4].view(np.uint32)[0]
        net[N_PEND_OFF] = 16
        net[N_PEND_N] = size
        net[N_PEND_SRC] = src


@njit(cache=True, nogil=True, _nrt=False)
def _free_buffer(n):
    for i in range(n.used.shape[0]):
        if n.used[i] == 0:
            return i
    _reap(n)
    for i in range(n.used.shape[0]):
        if n.used[i] == 0:
            return i
    return -1


@njit(cache=True, nogil=True, _nrt=False)
def _send(c, n, t_now):
    """What the role wrote for each rank, in batches of whole records of at most a pool buffer each
    (records are at most core.MAX_RECORD bytes). T_SEND_WAIT: every buffer is still being sent; the rest
    goes at the next turn (net's `sent` offsets)."""
    net = n.net
    cap = n.pool.shape[1] - 16
    for dst in range(c.ob_used.shape[0]):
        m = c.ob_used[dst]
        off = n.sent[dst]
        while off < m:
            slot = _free_buffer(n)
            if slot < 0:
                n.sent[dst] = off
                return T_SEND_WAIT
            end = off
            count = 0
            while end < m:
                size = np.int64(c.ob[dst, end:end + 4].view(np.uint32)[0])
                if end + size - off > cap and count > 0:
                    break
                end += size
                count += 1
            b = n.pool[slot]
            length = end - off
            b[0:4].view(np.uint32)[0] = np.uint32(count)
            b[4:8].view(np.uint32)[0] = np.uint32(0)
            b[8:16].view(np.float64)[0] = t_now
            copy_to(b[16:16 + length], c.ob[dst, off:end])
            n.used[slot] = length + 16
            _isend(b.ctypes, np.int32(length + 16), np.int32(net[N_BYTE]), np.int32(dst),
                   np.int32(net[N_RECORDS]), np.int32(net[N_COMM]), n.reqs[slot:slot + 1].ctypes)
            net[N_TX_BATCHES] += 1
            net[N_APP_TX] += count
            off = end
        c.ob_used[dst] = 0
        c.ob_count[dst] = 0
        n.sent[dst] = 0
    return T_WORKED


@njit(cache=True, nogil=True)
def turn(c, sc, n, max_ticks, budget_ticks, log, t0, tps):
    """IO loop turns for up to budget_ticks of the cycle counter: receive every batch that arrived, run
    packages for up to max_ticks, send what they wrote, again and again (yielding the core between probes
    that find nothing to do). t0: the run clock (seconds) at the call, tps: cycle-counter ticks per second
    (batches carry their send time). Returns T_WORKED if anything was done, T_IDLE if not, or what Python
    must see to first (T_CONTROL, a buffer to grow, a corrupt batch); net's N_RUN_C0/N_RUN_C1 hold the cycle
    counter at the call's start and end (a trace places parts with them)."""
    c0 = cycles()
    n.net[N_RUN_C0] = c0
    r = _turns(c, sc, n, max_ticks, budget_ticks, log, t0, tps, c0)
    n.net[N_RUN_C1] = cycles()
    return r


@njit(cache=True, nogil=True, _nrt=False)
def _turns(c, sc, n, max_ticks, budget_ticks, log, t0, tps, c0):
    worked = False
    while True:
        a0 = cycles()
        r = _receive(c, n, log)
        n.net[N_RX_CYCLES] += cycles() - a0
        control = r == T_CONTROL
        did = r == T_WORKED
        if r != T_WORKED and r != T_IDLE and not control:
            return r
        if c.cs[0].q_len > 0 or c.cs[0].pend != 0:  # pend: a package ran, its done waits for room
            a = cycles()
            r = K._run(c, sc, max_ticks, log)
            n.net[N_RUN_CYCLES] += cycles() - a
            did = True
            if r != K.OK:
                return T_GROW_CORE
        if c.ob_used.any():
            a1 = cycles()
            _send(c, n, t0 + (cycles() - c0) / tps if tps > 0 else t0)  # T_SEND_WAIT: the rest next round
            n.net[N_TX_CYCLES] += cycles() - a1
            did = True
        worked = worked or did
        if control:
            return T_CONTROL
        if cycles() - c0 > budget_ticks:
            _reap(n)
            return T_WORKED if worked else T_IDLE
        if not did:
            a2 = cycles()
            _reap(n)
            _sched_yield()
            n.net[N_SPINS] += 1
            n.net[N_SPIN_CYCLES] += cycles() - a2


def compile_turn(role) -> None:
    """Load (or compile) `turn` for this role's types before the clock starts, without running it."""
    import numba
    from mpi4py import MPI

    n = new_net(MPI.COMM_WORLD.handle, MPI.BYTE.handle, 1)
    for log in (False, True):
        args = (role.core, role.batch_scratch(log), n, 1, 1, log, 0.0, 1.0)
        turn.compile(tuple(numba.typeof(a) for a in args))


def loop_report(n: Net, tps: float) -> dict[str, float]:
    """Where a compiled loop's time went: seconds running packages, taking batches in, sending them, and
    probing with nothing to do (yielding the core), and how many batches it received and sent."""
    net = n.net
    sec = (lambda x: float(x) / tps) if tps > 0 else (lambda x: 0.0)
    return {"run_s": sec(net[N_RUN_CYCLES]), "receive_s": sec(net[N_RX_CYCLES]), "send_s": sec(net[N_TX_CYCLES]),
            "idle_s": sec(net[N_SPIN_CYCLES]), "batches_in": int(net[N_RX_BATCHES]),
            "batches_out": int(net[N_TX_BATCHES])}
