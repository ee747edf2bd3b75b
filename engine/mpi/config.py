"""What one distributed search needs to know: the algorithm, the position, the layout of ranks and threads,
the budget, and where to record. It travels to every rank as JSON (never pickle)."""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from model.algorithms import resolve_layout
from model.config import check, from_dict
from model.errors import UserError
from model.game import NAMES

GAMES = tuple(NAMES)
# Set by MPI launchers in every rank: how many ranks of the job share this node (MPICH/Hydra, Open MPI, Slurm).
_LOCAL_RANKS_ENV = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE")


def fast_threads(world_size: int, cores: int | None = None) -> int:
    """Threads per rank (the IO thread counted) that are fast on this machine: an equal share of its cores for
    each of the ranks on it, at least 1 (the IO thread then runs the packages itself). More threads than cores
    make every hop wait for a thread wake-up: on 2 cores, 2 ranks x 2 threads ran 3x slower than 2 x 1."""
    local = world_size
    for var in _LOCAL_RANKS_ENV:  # inside a job a launcher started: the ranks on this node, not the world
        if os.environ.get(var, "").isdigit() and int(os.environ[var]) > 0:
            local = int(os.environ[var])
            break
    cores = cores or os.cpu_count() or 1
    return max(1, cores // max(1, local))


@dataclass
class DistributedConfig:
    """One search on M search ranks (+ B broadcast ranks), each with `threads` threads.

    threads counts the IO thread: a rank runs threads - 1 worker threads; threads = 1 makes the IO thread
    run the work packages itself between two polls (the layout for one core per rank).
    bcast_ranks None means the algorithm's default (model.algorithms: 1 per 4 search ranks for treesplit);
    threads None means what is fast for this machine's cores (fast_threads).
    """

    algo: str = "treesplit"
    game: str = "go"
    board: int = 9
    komi: float = 7.5
    moves: list = field(default_factory=list)  # actions played from the initial position
    # or the position itself, as the game kernels hold it (the GTP player's case): params g, state s and the
    # sorted position hashes of the game so far (positional superko); lists of ints, None: use moves
    g: list | None = None
    state: list | None = None
    history: list | None = None
    game_params: dict = field(default_factory=dict)  # game-specific options (pgame branching, depth, ...)
    ranks: int = 2
    bcast_ranks: int | None = None
    threads: int | None = None
    sims: int | None = None
    seconds: float | None = None
    params: dict = field(default_factory=dict)  # the algorithm's parameters (--param key=value)
    seed: int = 0
    trace: str | None = None
    trace_sample_rate: float = 1.0  # fraction of packages/messages recorded; samples stay exact
    # record packages and messages only in every other sample window (recorder.SAMPLE_EVERY), so that the
    # trace's samples show what recording costs the run (sim/calibrate.py scales its costs by it)
    trace_probe: bool = False
    telemetry: str | None = None  # HOST:PORT
    role_factory: str = ""  # "module:function" building the roles instead of the algorithm registry (tests)
    stall_timeout: float = 60.0  # seconds without progress before a rank gives up and aborts the job
    mpiexec_args: list = field(default_factory=list)  # extra launcher arguments (e.g. ["-launcher", "fork"])

    def __post_init__(self) -> None:
        if self.threads is None:
            try:
                world = sum(self.resolved_layout())
            except (UserError, TypeError):  # validate() says what is wrong with the layout
                world = self.ranks if isinstance(self.ranks, int) else 1
            self.threads = fast_threads(world)

    def validate(self) -> None:
        check(isinstance(self.algo, str) and bool(self.algo), "algo", "need an algorithm name")
        check(self.game in GAMES, "game", f"expected one of {GAMES}, got {self.game!r}")
        check(isinstance(self.board, int) and 2 <= self.board <= 19, "board", "need a size in 2..19")
        check(isinstance(self.ranks, int) and self.ranks >= 1, "ranks", "need at least 1 search rank")
        check(self.bcast_ranks is None or (isinstance(self.bcast_ranks, int) and self.bcast_ranks >= 0),
              "bcast_ranks", "need a whole number >= 0")
        check(isinstance(self.threads, int) and self.threads >= 1, "threads", "need at least 1 thread per rank")
        self.resolved_layout()  # a layout the algorithm can't run stops here, before any rank starts
        check(self.sims is not None or self.seconds is not None, "sims", "give --sims N or --seconds S")
        check(self.sims is None or (isinstance(self.sims, int) and self.sims >= 1), "sims", "need sims >= 1")
        check(self.seconds is None or self.seconds > 0, "seconds", "need seconds > 0")
        check(0 < self.trace_sample_rate <= 1, "trace_sample_rate", "need a fraction in (0, 1]")
        check(not self.trace_probe or self.trace is not None, "trace_probe", "needs a trace directory")
        check(self.stall_timeout > 0, "stall_timeout", "need seconds > 0")
        if self.telemetry is not None:
            host, _, port = self.telemetry.rpartition(":")
            check(bool(host) and port.isdigit() and 0 < int(port) < 65536, "telemetry",
                  f"expected HOST:PORT, got {self.telemetry!r}")
        check(self.role_factory == "" or ":" in self.role_factory, "role_factory", "expected module:function")
        check((self.g is None) == (self.state is None), "state", "give g and state together")
        check(self.state is None or not self.moves, "moves", "give moves or a state, not both")

    @property
    def workers(self) -> int:
        return self.threads - 1

    def resolved_layout(self) -> tuple[int, int]:
        """(search ranks, broadcast ranks), checked: a ConfigError names layouts that run. A role_factory
        (tests' stand-in roles) lays out its ranks as given."""
        if self.role_factory:
            return self.ranks, self.bcast_ranks or 0
        return resolve_layout(self.algo, self.ranks, self.bcast_ranks, self.params)

    def resolved_bcast_ranks(self) -> int:
        return self.resolved_layout()[1]

    @property
    def world_size(self) -> int:
        return self.ranks + self.resolved_bcast_ranks()

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "DistributedConfig":
        return from_dict(cls, json.loads(text))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> "DistributedConfig":
        return cls.from_json(Path(path).read_text())
