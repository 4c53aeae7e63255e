"""tf.py_func: TF1 semantics locally; shipping the function to another task only where allowed."""

import os

import numpy as np
import pytest

import zps as tf
from zps.framework import errors
from zps.framework.serialization import CALLABLE_ATTR, import_graph_def
from zps.ops import script_ops
from zps.ops.script_ops import py_func
from zps.testing.cluster import LocalCluster
from zps.transport import security


@pytest.fixture
def no_pickles(monkeypatch):
    """This process neither uses CURVE nor opted in to pickles."""
    monkeypatch.delenv(security.ALLOW_PICKLE_ENV, raising=False)
    monkeypatch.delenv(security.SECRET_KEY_ENV, raising=False)
    from zps.transport import endpoint
    if endpoint._default is not None and endpoint._default.curve is not None:
        pytest.skip("this process's transport uses CURVE")
    return monkeypatch


def test_py_func_runs_locally_with_tf1_semantics():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        y = py_func(lambda a: (a * 10).astype(np.float32), [x], tf.float32)
        a, b = py_func(lambda v: (v, v * 2), [np.int64(3)], [tf.int64, tf.int64])
        s = py_func(lambda: np.array([b"a", "bc"], dtype=object), [], tf.string)
        calls = []
        op = py_func(lambda v: calls.append(v.tolist()), [x], [], name="record")
        assert isinstance(y, tf.Tensor) and y.dtype == tf.float32 and y.get_shape().ndims is None
        assert isinstance(op, tf.Operation) and op.type == "PyFunc" and op.name == "record"
        assert py_func(len, [x], tf.int64, stateful=False).op.type == "PyFuncStateless"
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(y, {x: [1, 2]}), [10.0, 20.0])
            assert sess.run([a, b]) == [3, 6]
            assert sess.run(s).tolist() == [b"a", b"bc"]
            sess.run(op, {x: [5.0]})
            assert calls == [[5.0]]


def test_py_func_has_no_gradient():
    with tf.Graph().as_default():
        x = tf.constant([1.0])
        y = py_func(lambda a: a, [x], tf.float32)
        assert tf.gradients(y * 1.0, x) == [None]


def test_py_func_errors_follow_tf1():
    with tf.Graph().as_default():
        one = np.float32(1)
        wrong_dtype = py_func(lambda a: np.float64(a), [one], tf.float32, name="wrong_dtype")
        wrong_count = py_func(lambda a: (a, a), [one], [tf.float32], name="wrong_count")
        raises = py_func(lambda a: int("x"), [one], tf.float32, name="raises")
        stops = py_func(lambda a: next(iter(())), [one], tf.float32, name="stops")
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError,
                               match="0-th value returned by pyfunc_.* is float64, but expects float32"):
                sess.run(wrong_dtype)
            with pytest.raises(errors.InvalidArgumentError, match="returns 2 values, but expects to "
                               "see 1 values"):
                sess.run(wrong_count)
            with pytest.raises(errors.InvalidArgumentError, match="raised ValueError: invalid literal"):
                sess.run(raises)
            with pytest.raises(errors.OutOfRangeError, match="StopIteration"):
                sess.run(stops)
    with pytest.raises(TypeError, match="expects a callable"):
        py_func(3, [], tf.float32)


def test_exported_graph_carries_only_the_token(no_pickles):
    with tf.Graph().as_default() as g:
        py_func(lambda: np.float32(1), [], tf.float32, name="f")
        node = g.as_graph_def()["node"][0]
    assert node["attr"]["token"].startswith("pyfunc_") and CALLABLE_ATTR not in node["attr"]


def test_sending_a_function_is_refused_without_curve_or_opt_in(no_pickles):
    with tf.Graph().as_default() as g:
        with tf.device("/job:ps/task:0"):
            py_func(lambda: np.float32(1), [], tf.float32, name="remote_fn")
        with pytest.raises(errors.PermissionDeniedError) as info:
            g.as_graph_def(buffers=[])
    message = str(info.value)
    assert "py_func op 'remote_fn'" in message and "/job:ps/task:0" in message
    assert "ZPS_CURVE_SECRET_KEY_FILE" in message and "ZPS_ALLOW_PICKLE=1" in message


def test_receiving_a_function_needs_curve_or_opt_in_too(no_pickles):
    with tf.Graph().as_default() as g:
        py_func(lambda a: a * np.float32(3), [np.float32(2)], tf.float32, name="triple")
        no_pickles.setenv(security.ALLOW_PICKLE_ENV, "1")
        graph_def = g.as_graph_def(buffers=[])
    blob = graph_def["node"][-1]["attr"][CALLABLE_ATTR]
    assert isinstance(blob, bytes)
    token = graph_def["node"][-1]["attr"]["token"]
    script_ops._functions.pop(token)   # as in another process: only the pickle has it
    no_pickles.delenv(security.ALLOW_PICKLE_ENV)
    with tf.Graph().as_default() as g2:
        with pytest.raises(errors.PermissionDeniedError, match="Refusing to unpickle the Python "
                           "function of py_func op 'triple'.*ZPS_ALLOW_PICKLE=1"):
            import_graph_def(graph_def, name="", buffers=[])
        assert g2.get_operations() == [] and token not in script_ops._functions
    no_pickles.setenv(security.ALLOW_PICKLE_ENV, "1")
    with tf.Graph().as_default():
        # Never from a file (a meta graph): only a graph a peer sent (with its buffers).
        with pytest.raises(ValueError, match="not in a graph_def imported from a file"):
            import_graph_def(graph_def, name="")
        assert token not in script_ops._functions
        import_graph_def(graph_def, name="", buffers=[])
        with tf.Session() as sess:
            assert sess.run("triple:0") == 6.0


def test_a_callable_attr_on_another_op_is_malformed():
    with tf.Graph().as_default() as g:
        tf.constant(1.0, name="c")
    graph_def = g.as_graph_def()
    graph_def["node"][0]["attr"][CALLABLE_ATTR] = b"\x80\x04N."
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="only valid .* on ops that carry a Python callable"):
            import_graph_def(graph_def, buffers=[])


_extra_env = {}   # for a manual run before wiring: a PYTHONPATH whose sitecustomize imports script_ops


def _ps_pid_graph():
    with tf.device("/job:ps/task:0"):
        return py_func(lambda: np.int64(os.getpid()), [], tf.int64, name="where_am_i")


@pytest.mark.slow
@pytest.mark.timeout(90)
@pytest.mark.skipif(not hasattr(tf, "py_func"), reason="tf.py_func is not wired into zps yet, so a "
                    "ps process (which imports only zps) has no PyFunc op")
@pytest.mark.parametrize("ps_allows", [False, True])
def test_py_func_placed_on_a_ps_ships_only_when_both_sides_allow(no_pickles, ps_allows, tmp_path):
    env = {security.ALLOW_PICKLE_ENV: "1" if ps_allows else ""}
    env.update(_extra_env)
    with LocalCluster({"ps": 1, "worker": 1}, in_process=[("worker", 0)], env=env) as cluster:
        server = tf.train.Server(cluster.spec, job_name="worker", task_index=0)
        try:
            with tf.Graph().as_default():
                pid = _ps_pid_graph()
                with tf.Session(server.target) as sess:
                    with pytest.raises(errors.PermissionDeniedError, match="Cannot send py_func "
                                       "op 'where_am_i'"):
                        sess.run(pid)   # this side has not opted in
                    no_pickles.setenv(security.ALLOW_PICKLE_ENV, "1")
                    if not ps_allows:
                        with pytest.raises(errors.PermissionDeniedError,
                                           match="Refusing to unpickle .*'where_am_i'"):
                            sess.run(pid)
                    else:   # it ran in the ps process
                        assert sess.run(pid) == cluster.pid("ps", 0)
        finally:
            server.stop()


@pytest.mark.slow
@pytest.mark.timeout(90)
@pytest.mark.skipif(not hasattr(tf, "py_func"), reason="tf.py_func is not wired into zps yet, so a "
                    "ps process (which imports only zps) has no PyFunc op")
def test_py_func_ships_on_a_curve_cluster_without_opt_in(no_pickles, tmp_path):
    from zps.transport import endpoint
    _, secret_file = security.create_keypair(str(tmp_path), "cluster")
    env = {security.SECRET_KEY_ENV: secret_file, security.ALLOW_PICKLE_ENV: ""}
    env.update(_extra_env)
    curve = endpoint.Transport(curve=security.CurveConfig.from_files(secret_file))
    no_pickles.setattr(endpoint, "_default", curve)
    try:
        with LocalCluster({"ps": 1, "worker": 1}, in_process=[("worker", 0)], env=env) as cluster:
            server = tf.train.Server(cluster.spec, job_name="worker", task_index=0)
            try:
                with tf.Graph().as_default():
                    pid = _ps_pid_graph()
                    with tf.Session(server.target) as sess:
                        assert sess.run(pid) == cluster.pid("ps", 0)
            finally:
                server.stop()
    finally:
        no_pickles.undo()
        curve.close()
