"""The simulator's network (LogGP, a shared NIC per node) and capacity timelines."""

import dataclasses

import pytest

from sim.network import Network
from sim.profile import load_profile
from sim.timeline import Pool


@pytest.fixture
def spec():
    return load_profile("oculus").network


def test_single_small_message_takes_latency_plus_bytes(spec):
    net = Network(spec, [0, 1])  # two ranks on two nodes
    t = net.transfer(1.0, 0, 1, 100)
    assert t == pytest.approx(1.0 + spec.latency + 100 * spec.gap_per_byte)
    # what a ping-pong would see: the CPU overhead at both ends on top
    assert net.one_way(100) == pytest.approx(spec.latency + 100 * spec.gap_per_byte + 2 * spec.overhead)


def test_same_node_goes_through_shared_memory(spec):
    net = Network(spec, [0, 0])
    assert net.transfer(0.0, 0, 1, 1000) == pytest.approx(spec.shm_latency + 1000 * spec.shm_gap_per_byte)
    assert net.bytes_tx == [0]  # the NIC saw nothing


def test_large_message_pays_a_rendezvous(spec):
    net = Network(spec, [0, 1])
    big = spec.eager_threshold + 1
    t = net.transfer(0.0, 0, 1, big)
    handshake = 2 * (spec.latency + 2 * spec.overhead)
    assert t == pytest.approx(handshake + spec.latency + big * spec.gap_per_byte)


def test_back_to_back_transfers_are_bandwidth_bound(spec):
    net = Network(dataclasses.replace(spec, eager_threshold=10**9), [0, 1])
    nbytes, n = 1 << 20, 10
    last = max(net.transfer(0.0, 0, 1, nbytes) for _ in range(n))
    # n serialisations back to back, plus one latency: the NIC's bandwidth is the limit, not L
    assert last == pytest.approx(n * nbytes * spec.gap_per_byte + spec.latency, rel=1e-9)
    rate = n * nbytes / last
    assert rate == pytest.approx(1 / spec.gap_per_byte, rel=0.01)


def test_small_messages_are_spaced_by_the_gap(spec):
    net = Network(spec, [0, 1])
    arrivals = [net.transfer(0.0, 0, 1, 8) for _ in range(5)]
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
    assert gaps == pytest.approx([spec.gap] * 4)


def test_ranks_of_one_node_share_its_nic(spec):
    nbytes = 1 << 20
    big = dataclasses.replace(spec, eager_threshold=10**9)
    # ranks 0, 1 on node 0; ranks 2, 3 on nodes 1, 2
    alone = Network(big, [0, 0, 1, 2]).transfer(0.0, 0, 2, nbytes)
    shared = Network(big, [0, 0, 1, 2])
    a = shared.transfer(0.0, 0, 2, nbytes)
    b = shared.transfer(0.0, 1, 3, nbytes)  # the other rank of node 0, to another node
    assert a == pytest.approx(alone)
    assert b == pytest.approx(alone + nbytes * big.gap_per_byte)  # waited for the first to leave the NIC
    # ranks on different nodes do not contend
    apart = Network(big, [0, 1, 2, 3])
    apart.transfer(0.0, 0, 2, nbytes)
    assert apart.transfer(0.0, 1, 3, nbytes) == pytest.approx(alone)


def test_receiving_nic_is_shared_too(spec):
    big = dataclasses.replace(spec, eager_threshold=10**9)
    nbytes = 1 << 20
    net = Network(big, [0, 1, 2])  # nodes 0 and 1 both send to node 2
    a = net.transfer(0.0, 0, 2, nbytes)
    b = net.transfer(0.0, 1, 2, nbytes)
    assert b == pytest.approx(a + nbytes * big.gap_per_byte)


def test_pool_books_first_come_first_served_one_server_per_package():
    p = Pool(2, 10e-6)
    assert p.book(0.0, 50e-6) == pytest.approx((0.0, 50e-6))
    assert p.book(0.0, 50e-6) == pytest.approx((0.0, 50e-6))
    # both servers are taken until 50 us: the third waits, and a package never runs on two servers at once
    assert p.book(0.0, 50e-6) == pytest.approx((50e-6, 100e-6))
    assert p.book(3e-6, 1e-6) == pytest.approx((50e-6, 51e-6))
    assert p.used_until(200e-6) == pytest.approx(151e-6)
    # booking far ahead, then earlier: the earlier one still finds the room before it
    q = Pool(1, 10e-6)
    q.book(1e-3, 10e-6)
    assert q.book(0.0, 5e-6) == pytest.approx((0.0, 5e-6))


def test_pool_skips_long_queues_quickly():
    import time

    p = Pool(1, 10e-6)
    p.book(0.0, 1.0)  # one second of work: 100000 full bins
    t0 = time.perf_counter()
    for _ in range(200):
        start, end = p.book(0.0, 1e-6)
    assert start >= 1.0 - 1e-9
    assert time.perf_counter() - t0 < 0.5
