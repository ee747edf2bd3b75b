"""The network: LogGP timings with one NIC per compute node, shared by the ranks on that node.

A message of k bytes from rank s (node a) to rank d (node b != a), handed to the NIC at time t:

    inject = max(t, tx_free[a])                 the node's NIC sends one message at a time
    tx_free[a] = inject + max(g, k * G)          next injection no earlier than the gap or the serialisation
    at_rx  = max(inject + L, rx_free[b])         the receiving NIC, shared by b's ranks, takes one at a time
    rx_free[b] = at_rx + max(g, k * G)
    arrival = at_rx + k * G

Messages above the eager threshold first do a rendezvous (request to send, clear to send): one extra
round trip of small messages, 2 (L + 2 o), before the data goes out. The CPU overhead o is charged by the
IO core that sends or receives (sim/runtime.py), not here. Ranks of the same node talk through shared
memory: shm_latency + k * shm_gap_per_byte, without touching the NIC.

FIFO NIC occupancy is computed in closed form, so a message costs no simulation events of its own beyond
its delivery; `transfer` returns the arrival time and the caller schedules the delivery.
"""

from __future__ import annotations

from sim.profile import NetworkSpec


class Network:
    def __init__(self, spec: NetworkSpec, node_of_rank: list[int]):
        self.spec = spec
        self.node_of = node_of_rank
        n_nodes = max(node_of_rank) + 1 if node_of_rank else 0
        self.tx_free = [0.0] * n_nodes
        self.rx_free = [0.0] * n_nodes
        self.bytes_tx = [0] * n_nodes
        self.busy_tx = [0.0] * n_nodes  # NIC send occupancy, for utilisation
        # hot-path copies of the spec
        s = spec
        self._L, self._o, self._g, self._G = s.latency, s.overhead, s.gap, s.gap_per_byte
        self._eager, self._shmL, self._shmG = s.eager_threshold, s.shm_latency, s.shm_gap_per_byte

    def transfer(self, t: float, src: int, dst: int, nbytes: int) -> float:
        """Arrival time at `dst` of a message of `nbytes` handed to the network by `src` at time `t`."""
        a = self.node_of[src]
        b = self.node_of[dst]
        if a == b:
            return t + self._shmL + nbytes * self._shmG
        if nbytes > self._eager:
            t += 2.0 * (self._L + 2.0 * self._o)
        ser = nbytes * self._G
        occ = ser if ser > self._g else self._g
        inject = self.tx_free[a]
        if inject < t:
            inject = t
        self.tx_free[a] = inject + occ
        self.busy_tx[a] += occ
        self.bytes_tx[a] += nbytes
        at_rx = inject + self._L
        rf = self.rx_free[b]
        if at_rx < rf:
            at_rx = rf
        self.rx_free[b] = at_rx + occ
        return at_rx + ser

    def one_way(self, nbytes: int, same_node: bool = False) -> float:
        """Uncontended one-way time of a message, overheads included (what a ping-pong measures / 2)."""
        s = self.spec
        if same_node:
            return s.shm_latency + nbytes * s.shm_gap_per_byte + 2 * s.overhead
        extra = 2.0 * (s.latency + 2.0 * s.overhead) if nbytes > s.eager_threshold else 0.0
        return extra + s.latency + nbytes * s.gap_per_byte + 2 * s.overhead
