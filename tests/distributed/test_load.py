"""Load: many client processes hammer shared ps variables with assign_add and scatter_add at once;
the final values are exact (no lost or doubled update)."""

import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import zps as tf
from zps.testing.cluster import LocalCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NUM_CLIENTS = 8
ITERATIONS = 1500          # each iteration: one assign_add and one scatter_add (2 updates)
ROWS, COLS, BATCH = 64, 4, 8


def _graph():
    """The shared variables (counter on ps 0, table on ps 1) and the update ops of a client."""
    with tf.device("/job:ps/task:0"):
        counter = tf.Variable(np.zeros(4, np.int64), name="counter")
    with tf.device("/job:ps/task:1"):
        table = tf.Variable(np.zeros((ROWS, COLS), np.float32), name="table")
    delta = tf.placeholder(tf.int64, [4], name="delta")
    indices = tf.placeholder(tf.int32, [BATCH], name="indices")
    updates = tf.placeholder(tf.float32, [BATCH, COLS], name="updates")
    return counter, table, tf.assign_add(counter, delta), tf.scatter_add(table, indices, updates), \
        (delta, indices, updates)


def _feeds(client, iteration):
    """Client ``client``'s feeds at ``iteration``: small integers, so float sums stay exact, and
    repeated indices within a batch (scatter_add must add each one)."""
    rng = np.random.default_rng([client, iteration])
    delta = np.array([1, client + 1, iteration % 7, 1000 * client], np.int64)
    indices = rng.integers(0, ROWS, BATCH).astype(np.int32)
    indices[1] = indices[0]
    updates = rng.integers(-3, 4, (BATCH, COLS)).astype(np.float32)
    return delta, indices, updates


CLIENT = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {repo!r})
    import zps as tf
    from tests.distributed.test_load import _graph, _feeds, ITERATIONS
    client, target, go = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    with tf.Graph().as_default():
        counter, table, add, scatter, (delta, indices, updates) = _graph()
        with tf.Session(target) as sess:
            sess.run([add, scatter], {{delta: [0] * 4, indices: [0] * 8, updates: [[0.0] * 4] * 8}})
            print("ready", flush=True)
            deadline = time.monotonic() + 60
            while not __import__("os").path.exists(go):
                assert time.monotonic() < deadline, "no go signal"
                time.sleep(0.01)
            for i in range(ITERATIONS):
                d, ix, up = _feeds(client, i)
                sess.run([add, scatter], {{delta: d, indices: ix, updates: up}})
    print("done", flush=True)
""").format(repo=REPO)


def _expected():
    counter = np.zeros(4, np.int64)
    table = np.zeros((ROWS, COLS), np.float64)
    for client in range(NUM_CLIENTS):
        for i in range(ITERATIONS):
            d, ix, up = _feeds(client, i)
            counter += d
            np.add.at(table, ix, up)
    return counter, table


def test_concurrent_clients_lose_no_update(tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONPATH=REPO)
    go = str(tmp_path / "go")
    with LocalCluster({"ps": 2}, env=env) as cluster:
        with tf.Graph().as_default():
            counter, table, *_ = _graph()
            with tf.Session(cluster.target("ps", 0)) as sess:
                sess.run([counter.initializer, table.initializer])
        clients = [subprocess.Popen([sys.executable, "-c", CLIENT, str(k),
                                     cluster.target("ps", k % 2), go],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    env=env, stdin=subprocess.DEVNULL)
                   for k in range(NUM_CLIENTS)]
        try:
            for proc in clients:   # every client connected before any starts its updates
                line = proc.stdout.readline()
                assert line.strip() == "ready", line + proc.stdout.read()
            started = time.monotonic()
            open(go, "w").close()
            outputs = [proc.communicate(timeout=150)[0] for proc in clients]
            elapsed = time.monotonic() - started
        finally:
            for proc in clients:
                if proc.poll() is None:
                    proc.kill()
                    proc.communicate(timeout=10)
        for proc, out in zip(clients, outputs):
            assert proc.returncode == 0 and "done" in out, out[-3000:]
        with tf.Graph().as_default():
            counter, table, *_ = _graph()
            with tf.Session(cluster.target("ps", 1)) as sess:
                got_counter, got_table = sess.run([counter, table])
    want_counter, want_table = _expected()
    np.testing.assert_array_equal(got_counter, want_counter)
    np.testing.assert_array_equal(got_table, want_table.astype(np.float32))
    updates = NUM_CLIENTS * ITERATIONS * 2
    print("load: %d clients, %d updates (%d scattered rows) checked exactly in %.1f s (%.0f updates/s)"
          % (NUM_CLIENTS, updates, NUM_CLIENTS * ITERATIONS * BATCH, elapsed, updates / elapsed))
    print(json.dumps({"clients": NUM_CLIENTS, "updates": updates}))
