"""Traced steps (RunOptions FULL_TRACE -> RunMetadata.step_stats) and their Chrome timelines."""

import json

import numpy as np
import pytest

import zps as tf
from zps.client import timeline
from zps.testing.cluster import InProcessCluster, LocalCluster

FULL = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


def _events(meta, **kwargs):
    return json.loads(timeline.Timeline(meta.step_stats).generate_chrome_trace_format(**kwargs))[
        "traceEvents"]


def test_untraced_run_leaves_metadata_empty():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        y = x + 1.0
        with tf.Session() as sess:
            meta = tf.RunMetadata()
            assert sess.run(y, {x: 1.0}, options=tf.RunOptions(), run_metadata=meta) == 2.0
            assert meta.step_stats == [] and meta.step_stats.dev_stats == []
            # Tracing without a RunMetadata to fill is a plain run.
            assert sess.run(y, {x: 2.0}, options=FULL) == 3.0


def test_traced_local_step_records_every_kernel_in_order():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3], name="x")
        w = tf.Variable(np.ones(3, np.float32), name="w")
        y = tf.reduce_sum(tf.multiply(x, w, name="xw"), name="total")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            meta = tf.RunMetadata()
            out = sess.run(y, {x: [1.0, 2.0, 3.0]}, options=FULL, run_metadata=meta)
    assert out == 6.0
    [dev] = meta.step_stats.dev_stats
    assert dev.device == CPU0
    names = [ns.node_name for ns in dev.node_stats]
    assert names.index("xw") < names.index("total")
    # The variable op runs no kernel (its container is looked up once per plan); its read does.
    assert "w" not in names and "w/read" in names
    by_name = {ns.node_name: ns for ns in dev.node_stats}
    assert by_name["xw"].timeline_label == "xw = Mul(x, w/read)"
    assert by_name["total"].timeline_label == "total = Sum(xw)"
    for a, b in zip(dev.node_stats, dev.node_stats[1:]):
        assert a.all_start_micros <= b.all_start_micros
        assert a.all_end_rel_micros >= 0 and a.op_end_rel_micros == a.all_end_rel_micros


def test_traced_error_still_names_the_op():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        y = tf.reshape(x, [2, 2], name="bad_reshape")
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="bad_reshape"):
                sess.run(y, {x: [1.0, 2.0, 3.0]}, options=FULL, run_metadata=tf.RunMetadata())


def test_chrome_trace_has_devices_ops_and_dataflow():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        a = tf.multiply(x, 2.0, name="a")
        b = tf.add(a, 1.0, name="b")
        with tf.Session() as sess:
            meta = tf.RunMetadata()
            sess.run(b, {x: [1.0, 2.0]}, options=FULL, run_metadata=meta)
    events = _events(meta)
    procs = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert procs == {"Allocators", CPU0 + " Compute", CPU0 + " Tensors"}
    regions = {e["args"]["name"]: e for e in events if e["ph"] == "X"}
    assert set(regions) == {"a", "b"}
    assert regions["b"]["name"] == "Add" and regions["b"]["args"]["input0"] == "a"
    assert regions["a"]["ts"] <= regions["b"]["ts"] and regions["a"]["dur"] >= 0


def test_dataflow_arrows_join_ops_on_different_lanes():
    # Two hand-made overlapping records on one device: the consumer lands on lane 1, so an arrow
    # is drawn from the producer's end to the consumer's start.
    meta = tf.RunMetadata()
    meta.step_stats.add_device("/job:ps/replica:0/task:0/device:CPU:0", [
        ("p", 100, 200, "p = Const()", 0), ("c", 150, 300, "c = Neg(p)", 0)])
    events = _events(meta)
    flows = [e for e in events if e.get("cat") == "DataFlow"]
    assert [(e["ph"], e["ts"], e["tid"]) for e in flows] == [("s", 200, 0), ("t", 150, 1)]
    assert not [e for e in _events(meta, show_dataflow=False) if e.get("cat") == "DataFlow"]
    with pytest.raises(ValueError, match="op_time"):
        timeline.Timeline(meta.step_stats).analyze_step_stats(op_time="wall")


def test_unparseable_label_is_unknown():
    meta = tf.RunMetadata()
    meta.step_stats.add_device("/cpu:0", [("n", 1, 2, "not a label", 0)])
    [region] = [e for e in _events(meta) if e["ph"] == "X"]
    assert region["name"] == "unknown" and region["args"]["name"] == "n"


def test_traced_step_across_in_process_tasks_records_each_partition():
    with InProcessCluster({"ps": 1, "worker": 1}) as cluster:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(np.arange(4, dtype=np.float32), name="v")
            with tf.device("/job:worker/task:0"):
                total = tf.reduce_sum(v * 2.0, name="total")
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(v.initializer)
                meta = tf.RunMetadata()
                assert sess.run(total, options=FULL, run_metadata=meta) == 12.0
                assert sess.run(total) == 12.0   # the untraced path still works after a trace
    devices = {d.device: [ns.node_name for ns in d.node_stats] for d in meta.step_stats.dev_stats}
    assert set(devices) == {"/job:ps/replica:0/task:0/device:CPU:0",
                            "/job:worker/replica:0/task:0/device:CPU:0"}
    worker = devices["/job:worker/replica:0/task:0/device:CPU:0"]
    assert "total" in worker and any(n.startswith("_recv/") for n in worker)
    assert any(n.startswith("_send/") for n in devices["/job:ps/replica:0/task:0/device:CPU:0"])


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_traced_step_with_a_remote_ps_spans_its_request():
    with LocalCluster({"ps": 1, "worker": 1}, in_process=[("worker", 0)]) as cluster:
        server = tf.train.Server(cluster.spec, job_name="worker", task_index=0)
        try:
            with tf.Graph().as_default():
                with tf.device("/job:ps/task:0"):
                    v = tf.Variable(np.ones(8, np.float32), name="v")
                with tf.device("/job:worker/task:0"):
                    total = tf.reduce_sum(v, name="total")
                with tf.Session(server.target) as sess:
                    sess.run(v.initializer)
                    meta = tf.RunMetadata()
                    assert sess.run(total, options=FULL, run_metadata=meta) == 8.0
        finally:
            server.stop()
    devices = {d.device: d for d in meta.step_stats.dev_stats}
    master = devices["/job:worker/replica:0/task:0/device:CPU:0 (master)"]
    [rpc] = master.node_stats
    assert rpc.node_name == "RunGraph/ps/0" and rpc.all_end_rel_micros > 0
    worker = devices["/job:worker/replica:0/task:0/device:CPU:0"]
    [recv] = [ns for ns in worker.node_stats if ns.node_name.startswith("_recv/")]
    assert recv.thread_id >= 1   # waits sit on their own lane
    ps_ops = {ns.node_name for ns in devices["/job:ps/replica:0/task:0/device:CPU:0"].node_stats}
    assert any(n.startswith("_send/") for n in ps_ops), ps_ops   # the ps process's own records


def test_traced_cluster_step_failure_reaches_the_client_as_the_op_error():
    with InProcessCluster({"ps": 1, "worker": 1}) as cluster:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(np.arange(4, dtype=np.float32), name="v")
                bad = tf.reshape(v, tf.placeholder_with_default([3], [1]), name="bad_on_ps")
            with tf.device("/job:worker/task:0"):
                total = tf.reduce_sum(bad * 2.0)
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(v.initializer)
                for _ in range(2):   # and the session still works after the failed traced step
                    with pytest.raises(tf.errors.InvalidArgumentError, match="bad_on_ps"):
                        sess.run(total, options=FULL, run_metadata=tf.RunMetadata())
                assert sess.run(v.read_value() if hasattr(v, "read_value") else v).tolist() == [
                    0.0, 1.0, 2.0, 3.0]


def test_step_breakdown_sorts_records_into_categories():
    meta = tf.RunMetadata()
    meta.step_stats.add_device("/job:worker/replica:0/task:0/device:CPU:0", [
        ("_recv/w", 1000, 3000, "_recv/w = _Recv()", 1),
        ("mm", 3000, 4500, "mm = MatMul(x, _recv/w)", 0),
        ("_send/g", 4500, 4600, "_send/g = _Send(mm)", 0),
        ("_FlushSends", 4600, 4800, "_FlushSends = _FlushSends()", 0)])
    meta.step_stats.add_device("/job:ps/replica:0/task:0/device:CPU:0", [
        ("upd", 5000, 5700, "upd = ApplyGradientDescent(w, lr, g)", 0),
        ("inc", 5700, 5750, "inc = AssignAdd(global_step, one)", 0)])
    meta.step_stats.add_device("/job:worker/replica:0/task:0/device:CPU:0 (master)", [
        ("RunGraph/ps/0", 900, 6000, "RunGraph/ps/0 = _RunGraph()", 0)])
    b = timeline.step_breakdown(meta.step_stats)
    assert b["/job:worker/replica:0/task:0/device:CPU:0"] == pytest.approx(
        {"compute": 1.5, "apply": 0.0, "network_wait": 2.0, "send": 0.3, "rpc": 0.0, "span": 3.8})
    assert b["/job:ps/replica:0/task:0/device:CPU:0"]["apply"] == pytest.approx(0.75)
    assert b["/job:worker/replica:0/task:0/device:CPU:0 (master)"]["rpc"] == pytest.approx(5.1)
    assert timeline.step_breakdown(tf.RunMetadata().step_stats) == {}


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_traced_step_through_a_master_in_another_process_holds_every_task():
    """A client process without a server (its session's master is a worker process) gets the
    same per-task records as an in-process master, plus its own request."""
    with LocalCluster({"ps": 1, "worker": 1}) as cluster:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(np.ones(8, np.float32), name="v")
            with tf.device("/job:worker/task:0"):
                total = tf.reduce_sum(v * 2.0, name="total")
            target = "zps://" + cluster.address("worker", 0)
            with tf.Session(target) as sess:
                sess.run(v.initializer)
                plain = tf.RunMetadata()
                assert sess.run(total, run_metadata=plain) == 16.0
                meta = tf.RunMetadata()
                assert sess.run(total, options=FULL, run_metadata=meta) == 16.0
    assert plain.step_stats.dev_stats == []   # untraced: nothing recorded, nothing sent back
    devices = {d.device: d for d in meta.step_stats.dev_stats}
    worker = {ns.node_name for ns in devices["/job:worker/replica:0/task:0/device:CPU:0"].node_stats}
    assert "total" in worker and any(n.startswith("_recv/") for n in worker)
    ps = {ns.node_name for ns in devices["/job:ps/replica:0/task:0/device:CPU:0"].node_stats}
    assert any(n.startswith("_send/") for n in ps), ps
    [rpc] = devices["/job:worker/replica:0/task:0/device:CPU:0 (master)"].node_stats
    assert rpc.node_name == "RunGraph/ps/0"
    [client] = devices["client of the master at %s" % cluster.address("worker", 0)].node_stats
    assert client.node_name == "RunStep" and client.all_end_rel_micros >= rpc.all_end_rel_micros
    # The worker's ops ran within the client's request.
    starts = [ns.all_start_micros for ns in devices["/job:worker/replica:0/task:0/device:CPU:0"].node_stats]
    assert client.all_start_micros <= min(starts)
    assert timeline.Timeline(meta.step_stats).generate_chrome_trace_format()   # renders


def test_trace_records_from_another_process_keep_only_well_formed_ones():
    from zps.distributed.master import trace_records
    good = ["op", 1, 2, "op = Op()", 0]
    junk = [["x", 1], [1, 2, 3, "l", 0], ["op", 1.5, 2, "l", 0], ["op", 1, 2, None, 0], "junk", 7]
    assert trace_records([good] + junk + [good]) == [tuple(good)] * 2
    assert trace_records(None) == [] and trace_records({"a": 1}) == [] and trace_records("x") == []
