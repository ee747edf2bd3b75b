"""A trace as an OTF2 archive (the Open Trace Format 2 of Score-P, read by Vampir), written with the `otf2`
package: every rank a process (location group), its IO thread and workers its threads (locations), every
work package an Enter/Leave pair of the region named by its kind, every message an MpiSend at the sender's
IO thread and an MpiRecv at the receiver's, on one communicator of all ranks (tag: the message kind's index).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from model.errors import UserError
from engine.trace_files import Trace
from model.trace import MESSAGE_KINDS

RESOLUTION = 10**9  # timer ticks per second: nanoseconds


def require_otf2():
    """The otf2 module, or one clear message where it is not installed."""
    try:
        import otf2
    except ImportError:
        raise UserError("--format otf2 needs the otf2 package (pip install otf2)") from None
    return otf2


def write_otf2(trace: Trace, directory: Path, archive: str = "traces") -> dict[str, int]:
    """Write the archive DIRECTORY/ARCHIVE.otf2 (with its definitions and event files beside it); returns how
    many Enter/Leave pairs and messages it holds."""
    otf2 = require_otf2()
    from otf2.enums import GroupType, LocationGroupType, LocationType, Paradigm, RegionRole

    directory = Path(directory)
    meta = trace.meta
    ranks = meta.get("ranks") or {}
    M = int(ranks.get("search", 1) or 1)
    pk, ms = trace.packages, trace.messages
    p_rank, p_worker = pk["rank"].to_numpy().astype(np.int64), pk["worker"].to_numpy().astype(np.int64)
    m_src, m_dst = ms["src"].to_numpy().astype(np.int64), ms["dst"].to_numpy().astype(np.int64)
    R = int(max([M + int(ranks.get("broadcast", 0) or 0)] + [int(a.max()) + 1 for a in (p_rank, m_src, m_dst)
                                                                if len(a)]))
    t0 = min([0.0] + [float(c.min()) for c in (pk["t_start"], ms["t_send"]) if len(c)])
    tick = (lambda a: np.round((np.asarray(a, np.float64) - t0) * RESOLUTION).astype(np.int64))
    p_start, p_end = tick(pk["t_start"]), tick(pk["t_end"])
    p_end = np.maximum(p_end, p_start)
    m_send, m_recv = tick(ms["t_send"]), tick(ms["t_recv"])
    m_recv = np.maximum(m_recv, m_send)
    p_kind, m_kind = pk["kind"].astype(str).to_numpy(), ms["kind"].astype(str).to_numpy()
    m_bytes = ms["bytes"].to_numpy().astype(np.int64)
    tags = {k: i for i, k in enumerate(MESSAGE_KINDS)}

    with otf2.writer.open(str(directory), archive_name=archive, timer_resolution=RESOLUTION) as w:
        defs = w.definitions
        machine = defs.system_tree_node("treesplit run")
        node = defs.system_tree_node(f"{meta.get('runtime', 'engine')} ({meta.get('algo', '?')})", parent=machine)
        threads: dict[int, set[int]] = {r: {-1} for r in range(R)}
        for r, wk in set(zip(p_rank.tolist(), p_worker.tolist())):
            threads[r].add(wk)
        loc = {}
        for r in range(R):
            group = defs.location_group(f"rank {r} ({'search' if r < M else 'broadcast'})",
                                        location_group_type=LocationGroupType.PROCESS, system_tree_parent=node)
            for wk in sorted(threads[r]):
                loc[(r, wk)] = defs.location("IO thread" if wk < 0 else f"worker {wk}", type=LocationType.CPU_THREAD,
                                             group=group)
        io = [loc[(r, -1)] for r in range(R)]
        defs.group("ranks", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=io)
        comm_group = defs.group("all ranks", group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI, members=io)
        comm = defs.comm("MPI_COMM_WORLD", group=comm_group)
        regions = {k: defs.region(k, region_role=RegionRole.FUNCTION, paradigm=Paradigm.USER)
                   for k in sorted(set(p_kind.tolist()))}
        # per thread, events in time order: packages nest (a simulator's IO-loop record holds the packages its
        # IO core ran inside it), so they are entered outermost first and left innermost first
        for (r, wk), location in loc.items():
            ew = w.event_writer_from_location(location)
            mine = np.flatnonzero((p_rank == r) & (p_worker == wk))
            mine = mine[np.lexsort((-p_end[mine], p_start[mine]))]
            sends = np.flatnonzero(m_src == r) if wk < 0 else np.zeros(0, np.int64)
            recvs = np.flatnonzero(m_dst == r) if wk < 0 else np.zeros(0, np.int64)
            msgs = sorted([(int(m_send[i]), 0, int(i)) for i in sends] + [(int(m_recv[i]), 1, int(i)) for i in recvs])
            stack: list[tuple[int, str]] = []
            k = 0

            def leave_until(t: int) -> None:
                while stack and stack[-1][0] <= t:
                    end, kind = stack.pop()
                    ew.leave(end, regions[kind])

            def messages_until(t: int) -> None:
                nonlocal k
                while k < len(msgs) and msgs[k][0] <= t:
                    tm, what, i = msgs[k]
                    leave_until(tm)
                    if what == 0:
                        ew.mpi_send(tm, int(m_dst[i]), comm, tags.get(m_kind[i], len(tags)), int(m_bytes[i]))
                    else:
                        ew.mpi_recv(tm, int(m_src[i]), comm, tags.get(m_kind[i], len(tags)), int(m_bytes[i]))
                    k += 1

            for j in mine.tolist():
                s, e, kind = int(p_start[j]), int(p_end[j]), str(p_kind[j])
                messages_until(s - 1)
                leave_until(s)
                if stack:
                    e = min(e, stack[-1][0])  # one that outlasts its enclosing record ends with it
                ew.enter(s, regions[kind])
                stack.append((e, kind))
            messages_until(np.iinfo(np.int64).max)
            leave_until(np.iinfo(np.int64).max)
    return {"regions": len(pk), "messages": len(ms)}
