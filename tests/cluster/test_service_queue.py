"""ServiceQueue: a burst of N jobs on c servers ends after about N x service / c, FIFO."""

import pytest

from emulator.cluster.service_queue import ServiceQueue


def test_a_burst_on_one_server_is_served_one_after_another():
    q = ServiceQueue("zk-leader", 1)
    finishes = [q.admit(0.0, 0.001) for _ in range(1000)]
    assert finishes[0] == pytest.approx(0.001)
    assert finishes[-1] == pytest.approx(1.0)          # N x service / 1, not one service time
    assert finishes == sorted(finishes)                 # FIFO
    assert q.queued(0.5005) == 499 and q.queued(1.0) == 0
    assert q.max_wait == pytest.approx(0.999)


def test_c_servers_divide_the_burst():
    q = ServiceQueue("executor", 4)
    finishes = [q.admit(0.0, 0.01) for _ in range(400)]
    assert max(finishes) == pytest.approx(1.0)          # 400 x 10 ms / 4
    assert q.wait_for(0.0) == pytest.approx(1.0)


def test_an_idle_queue_serves_at_once_and_unlimited_never_queues():
    q = ServiceQueue("bookie", 2)
    assert q.admit(5.0, 0.1) == pytest.approx(5.1)
    assert q.admit(10.0, 0.1) == pytest.approx(10.1)    # the earlier job is long done
    u = ServiceQueue("free", 0)
    assert [u.admit(0.0, 0.5) for _ in range(3)] == [0.5, 0.5, 0.5]
    assert u.queued(0.1) == 0


def test_bad_server_counts_are_refused():
    with pytest.raises(ValueError, match="servers"):
        ServiceQueue("x", -1)
