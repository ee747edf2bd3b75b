"""One plain sentence per trace event, for the teaching view: what a package does, why a message travels.

The words follow the roles of model/roles (Schaefers 2014, 4.2, for UCT-Treesplit): a simulation's SELECT steps run
at the rank that owns each node, a MOVE message carries the simulation (its path) to the next owner, the
PLAYOUT runs where the path leaves the tree, UPDATE messages carry the reward back to every rank the
simulation visited, and SYNC/BCAST spread the statistics of duplicated nodes through the broadcast ranks.
"""

from __future__ import annotations


def rank_name(r: int, n_search: int) -> str:
    return f"rank {r}" if r < n_search else f"broadcast rank {r}"


def thread_name(worker: int) -> str:
    return "its IO thread" if worker < 0 else f"worker {worker}"


def package_sentence(kind: str, rank: int, worker: int, sim: int, n_search: int, algo: str = "treesplit") -> str:
    who = f"{rank_name(rank, n_search)} ({thread_name(worker)})"
    s = f"simulation {sim}"
    return {
        "select": f"{who} runs a SELECT step of {s}: at a node it owns it picks the child with the best UCT value "
                  "and walks one level down the tree.",
        "expand": f"{who} EXPANDs {s}'s leaf: a new node joins the part of the tree this rank stores (its node "
                  "counter goes up by one).",
        "playout": f"{who} runs {s}'s PLAYOUT: random moves from the new position to the end of the game give "
                   "its reward.",
        "update": f"{who} UPDATEs the nodes of {s}'s path that it stores with the reward (visits and wins).",
        "sync": f"{who} folds the changes of a duplicated node into a SYNC message for its broadcast rank.",
        "bcast": f"{who} merges the SYNC messages it received for the same node and passes them on (BCAST).",
        "io": f"{rank_name(rank, n_search)}'s IO thread, the only thread that talks to other ranks, receives "
              "messages and hands them to the rank's role.",
    }.get(kind, f"{who} runs a {kind} package of {s}.")


def message_sentence(kind: str, src: int, dst: int, nbytes: int, sim: int, n_search: int,
                     algo: str = "treesplit") -> str:
    a, b = rank_name(src, n_search), rank_name(dst, n_search)
    s = f"simulation {sim}" if sim >= 0 else "no single simulation"
    size = f"{nbytes:,} bytes"
    text = {
        "MOVE": f"{b} owns the next node on {s}'s path, so {a} sends the simulation there with a MOVE message "
                f"carrying its path ({size}).",
        "UPDATE": f"{s} visited {b}, so {a} sends it the reward in an UPDATE message ({size}) to update the "
                  "nodes of the path stored there.",
        "SYNC": f"{a} sends the new statistics of a duplicated node to {b} in a SYNC message ({size}); the "
                "broadcast rank merges and forwards them to the other ranks.",
        "BCAST": f"{a} forwards merged statistics of duplicated nodes to {b} (BCAST, {size}), so every copy of "
                 "those nodes converges.",
        "DUP": f"A node has been visited often enough to be shared: {a} tells {b} to keep a copy of it (DUP, "
               f"{size}).",
        "PLAYOUT_FWD": f"{a} has more work queued than its share, so it forwards {s}'s playout to {b} "
                       f"(PLAYOUT_FWD, {size}).",
        "PLAYOUT_RESULT": f"{a} sends the reward of the playout it ran for another rank back to {b} "
                          f"(PLAYOUT_RESULT, {size}).",
        "MERGE": f"{a} sends the statistics of its tree's top to {b} to be merged (root parallelisation, "
                 f"MERGE, {size}).",
        "JOB": f"{a}, the master, sends {s}'s leaf to {b} to be played out (JOB, {size}).",
        "RESULT": f"{a} sends the playout's reward for {s} back to the master {b} (RESULT, {size}).",
        "CONTROL": f"{a} and {b} coordinate the search's start or end (CONTROL, {size}).",
    }.get(kind)
    return text or f"{a} sends {b} a {kind} message ({size}) for {s}."
