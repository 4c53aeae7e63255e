"""tf.train.Saver: save/restore, the checkpoint state file, max_to_keep, errors, atomicity, shards."""

import json
import os
import subprocess
import sys
import textwrap

import msgpack
import numpy as np
import pytest

import zps as tf
from zps.framework import checkpoint_format
from zps.testing.cluster import free_ports
from zps.train import checkpoint_management
from zps.train.checkpoint_management import (
    get_checkpoint_state,
    latest_checkpoint,
    list_variables,
    load_variable,
)
from zps.train.saver import Saver

VALUES = {
    "f": np.array([[1.5, -2.25], [1e-30, 3e30]], np.float32),
    "i": np.array([2 ** 40, -7], np.int64),
    "b": np.array([True, False, True]),
    "s": np.array([b"hello", "w\u00f6rld".encode(), b""], dtype=object),
}


def _model():
    """Variables of every kind plus the global step; returns (variables dict, step)."""
    vs = {k: tf.Variable(v, name=k) for k, v in VALUES.items()}
    step = tf.train.get_or_create_global_step()
    return vs, step


def _zero_all(sess, vs, step):
    sess.run([vs["f"].assign(np.zeros((2, 2), np.float32)), vs["i"].assign([0, 0]),
              vs["b"].assign([False] * 3), vs["s"].assign(np.array([b"", b"", b""], object)),
              step.assign(0)])


def _check_values(sess, vs):
    for k, v in VALUES.items():
        got = sess.run(vs[k])
        assert got.dtype == v.dtype and got.tolist() == v.tolist(), k


def test_save_and_restore_every_dtype_exactly(tmp_path):
    with tf.Graph().as_default():
        vs, step = _model()
        saver = Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step.assign(42))
            path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
            assert path == str(tmp_path / "model.ckpt-42")
            _zero_all(sess, vs, step)
            saver.restore(sess, path)
            _check_values(sess, vs)
            assert sess.run(step) == 42 and sess.run(step).dtype == np.int64
    # A fresh graph and session restore the same values.
    with tf.Graph().as_default():
        vs, step = _model()
        saver = Saver()
        with tf.Session() as sess:
            saver.restore(sess, latest_checkpoint(str(tmp_path)))
            _check_values(sess, vs)
            assert sess.run(step) == 42
    assert dict(list_variables(str(tmp_path))) == {
        "b": [3], "f": [2, 2], "i": [2], "s": [3], "global_step": []}
    assert load_variable(str(tmp_path), "i:0").tolist() == VALUES["i"].tolist()


def test_file_names_and_checkpoint_state(tmp_path):
    with tf.Graph().as_default():
        tf.Variable(1.0, name="v")
        saver = Saver(pad_step_number=True)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for step in (5, np.int64(10)):
                last = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
    assert os.path.basename(last) == "model.ckpt-00000010"
    files = sorted(os.listdir(str(tmp_path)))
    assert "checkpoint" in files and "model.ckpt-00000010.index" in files
    assert "model.ckpt-00000010.meta" in files
    assert any(f.startswith("model.ckpt-00000010.data-00000-of-00001") for f in files)
    text = (tmp_path / "checkpoint").read_text()
    assert text.splitlines()[:3] == [
        'model_checkpoint_path: "%s"' % last,
        'all_model_checkpoint_paths: "%s"' % str(tmp_path / "model.ckpt-00000005"),
        'all_model_checkpoint_paths: "%s"' % last]
    state = get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == last
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
        "model.ckpt-00000005", "model.ckpt-00000010"]
    assert len(state.all_model_checkpoint_timestamps) == 2
    assert latest_checkpoint(str(tmp_path)) == last
    assert latest_checkpoint(str(tmp_path / "empty")) is None
    assert checkpoint_management.checkpoint_exists(last)


def test_relative_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.mkdir("ckpt")
    with tf.Graph().as_default():
        tf.Variable(1.0, name="v")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            Saver().save(sess, "ckpt/model", global_step=1)
            assert (tmp_path / "ckpt" / "checkpoint").read_text().startswith(
                'model_checkpoint_path: "model-1"')
            Saver(save_relative_paths=True).save(sess, str(tmp_path / "ckpt" / "m"), global_step=2)
    assert (tmp_path / "ckpt" / "checkpoint").read_text().startswith('model_checkpoint_path: "m-2"')
    assert latest_checkpoint("ckpt") == os.path.join("ckpt", "m-2")


def test_checkpoint_state_text_round_trips_escapes(tmp_path):
    odd = str(tmp_path / 'we"ird\\na\u00efme')
    checkpoint_management.update_checkpoint_state(str(tmp_path), odd, [odd])
    assert get_checkpoint_state(str(tmp_path)).model_checkpoint_path == odd
    (tmp_path / "checkpoint").write_text("model_checkpoint_path: unquoted\n")
    assert get_checkpoint_state(str(tmp_path)) is None  # ignored with a warning, as TF1
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "a\\101\\x42"\n')
    assert get_checkpoint_state(str(tmp_path)).model_checkpoint_path == str(tmp_path / "aAB")


def test_max_to_keep_deletes_older_checkpoints(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable(0, name="v")
        saver = Saver(max_to_keep=2)
        keep_all = Saver(max_to_keep=None)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            paths = []
            for step in range(4):
                sess.run(v.assign(step))
                paths.append(saver.save(sess, str(tmp_path / "a"), global_step=step))
                keep_all.save(sess, str(tmp_path / "b"), global_step=step,
                              latest_filename="checkpoint_b")
            assert saver.last_checkpoints == paths[2:]
            for p in paths[:2]:
                assert not checkpoint_management.checkpoint_exists(p)
                assert not os.path.exists(p + ".meta")
                assert checkpoint_format.checkpoint_files(p) == []
            state = get_checkpoint_state(str(tmp_path))
            assert state.all_model_checkpoint_paths == paths[2:]
            assert keep_all.last_checkpoints == []
            assert len([f for f in os.listdir(str(tmp_path))
                        if f.startswith("b-") and f.endswith(".index")]) == 4
            # A new Saver adopts the kept checkpoints and keeps rotating them.
            saver2 = Saver(max_to_keep=2)
            saver2.recover_last_checkpoints(state.all_model_checkpoint_paths + ["gone"])
            assert saver2.last_checkpoints == paths[2:]
            saver2.save(sess, str(tmp_path / "a"), global_step=9)
            assert not checkpoint_management.checkpoint_exists(paths[2])
            saver2.set_last_checkpoints_with_time([(paths[3], 1.0)])
            assert saver2.last_checkpoints == [paths[3]]
            saver.restore(sess, paths[3])
            assert sess.run(v) == 3


def test_var_list_dict_renames_and_list_subsets(tmp_path):
    with tf.Graph().as_default():
        a = tf.Variable([1.0, 2.0], name="a")
        b = tf.Variable(3, name="b")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = Saver({"renamed/a": a, "b_int": b}).save(sess, str(tmp_path / "m"))
            with pytest.raises(ValueError, match="same variable a is saved under two names"):
                Saver({"x": a, "y": a})
            with pytest.raises(ValueError, match="two variables have the same name: a"):
                Saver([a, a])
            with pytest.raises(TypeError, match="not a Variable"):
                Saver([tf.constant(1.0)])
    assert dict(list_variables(path)) == {"renamed/a": [2], "b_int": []}
    with tf.Graph().as_default():
        other = tf.Variable([0.0, 0.0], name="other")
        c = tf.Variable(0, name="c")
        with tf.Session() as sess:
            Saver({"renamed/a": other}).restore(sess, path)
            assert sess.run(other).tolist() == [1.0, 2.0]
            with pytest.raises(tf.errors.FailedPreconditionError):
                sess.run(c)  # not in the var_list: untouched
            Saver({"b_int": c}).restore(sess, path)
            assert sess.run(c) == 3


def test_restore_errors(tmp_path):
    with tf.Graph().as_default():
        tf.Variable(np.zeros((2, 3), np.float32), name="w")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = Saver().save(sess, str(tmp_path / "m"))
    with tf.Graph().as_default():
        tf.Variable(np.zeros((2, 3), np.float32), name="w")
        tf.Variable(1.0, name="extra")
        with tf.Session() as sess:
            with pytest.raises(tf.errors.NotFoundError, match="Key extra not found"):
                Saver().restore(sess, path)
            with pytest.raises(tf.errors.NotFoundError, match="not a valid checkpoint.*nowhere"):
                Saver().restore(sess, str(tmp_path / "nowhere"))
            with pytest.raises(ValueError, match="not a valid checkpoint"):  # TF1 code's except
                Saver().restore(sess, str(tmp_path / "nowhere"))
            with pytest.raises(ValueError, match="None"):
                Saver().restore(sess, None)
    with tf.Graph().as_default():
        tf.Variable(np.zeros((3, 2), np.float32), name="w")
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"restoring w .*shape \[3, 2\].*shape \[2, 3\]"):
                Saver().restore(sess, path)
    with tf.Graph().as_default():
        w = tf.Variable(np.zeros((3, 2), np.float32), name="w", validate_shape=False)
        with tf.Session() as sess:
            Saver(reshape=True).restore(sess, path)
            assert sess.run(w).shape == (2, 3)
    index = json.loads((tmp_path / "m.index").read_text())
    shard = tmp_path / index["shards"][0]
    shard.write_bytes(shard.read_bytes()[:-5])
    with tf.Graph().as_default():
        tf.Variable(np.zeros((2, 3), np.float32), name="w")
        with tf.Session() as sess, pytest.raises(tf.errors.DataLossError, match="corrupt"):
            Saver().restore(sess, path)


def test_save_errors_and_empty_savers(tmp_path):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="No variables to save"):
            Saver()
        empty = Saver(allow_empty=True)
        with tf.Session() as sess:
            assert empty.save(sess, str(tmp_path / "e"), write_meta_graph=False) is None
            assert empty.restore(sess, str(tmp_path / "e")) is None
        tf.Variable(1.0, name="v")
        saver = Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(ValueError, match="Parent directory of .*missing.* doesn't exist"):
                saver.save(sess, str(tmp_path / "missing" / "m"))
            with pytest.raises(ValueError, match="collides"):
                saver.save(sess, str(tmp_path / "checkpoint"))
            deferred = Saver(defer_build=True)
            with pytest.raises(RuntimeError, match="build"):
                deferred.save(sess, str(tmp_path / "d"))
            deferred.build()
            assert deferred.save(sess, str(tmp_path / "d")) == str(tmp_path / "d")


def test_ops_are_built_once_and_meta_graph_is_written(tmp_path):
    with tf.Graph().as_default() as g:
        tf.Variable([1.0], name="v")
        saver = Saver()
        assert saver.as_saver_def()["filename_tensor_name"] == "save/Const:0"
        assert saver.as_saver_def()["restore_op_name"] == "save/restore_all"
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            n = len(g.get_operations())
            for step in range(3):
                path = saver.save(sess, str(tmp_path / "m"), global_step=step)
                saver.restore(sess, path)
            assert len(g.get_operations()) == n
            saver.save(sess, str(tmp_path / "nometa"), write_meta_graph=False)
    assert not os.path.exists(str(tmp_path / "nometa.meta"))
    meta = msgpack.unpackb((tmp_path / "m-2.meta").read_bytes(), raw=False)
    assert meta["saver_def"]["save_tensor_name"] == saver.as_saver_def()["save_tensor_name"]
    assert "v" in {node["name"] for node in meta["graph_def"]["node"]}
    assert meta["collection_def"]["variables"][0]["variable"] == "v"


def _save_twice(tmp_path, prefix, fail_second, monkeypatch):
    """Save v=1, then v=2 with the index write failing (a crash after the shard)."""
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        saver = Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = saver.save(sess, str(tmp_path / prefix), global_step=None if fail_second
                               else 1)
            sess.run(v.assign(2.0))

            def crash(*args):
                raise OSError("simulated crash before the index")

            monkeypatch.setattr(checkpoint_format, "write_index", crash)
            with pytest.raises(tf.errors.UnknownError, match="simulated crash"):
                saver.save(sess, str(tmp_path / prefix), global_step=None if fail_second else 2)
            monkeypatch.undo()
    return first


@pytest.mark.parametrize("same_prefix", [False, True])
def test_failed_save_leaves_previous_checkpoint_loadable(tmp_path, monkeypatch, same_prefix):
    first = _save_twice(tmp_path, "m", same_prefix, monkeypatch)
    assert latest_checkpoint(str(tmp_path)) == first
    with tf.Graph().as_default():
        v = tf.Variable(0.0, name="v")
        with tf.Session() as sess:
            Saver().restore(sess, latest_checkpoint(str(tmp_path)))
            assert sess.run(v) == 1.0


def test_killed_process_mid_save_leaves_previous_checkpoint(tmp_path):
    script = textwrap.dedent("""
        import os, sys
        import zps as tf
        from zps.framework import checkpoint_format
        from zps.train.saver import Saver
        v = tf.Variable(1.0, name="v")
        saver = Saver()
        sess = tf.Session()
        sess.run(v.initializer)
        saver.save(sess, sys.argv[1], global_step=1)
        sess.run(v.assign(2.0))
        real = checkpoint_format.atomic_write
        def dying(path, write):
            if path.endswith(".index"):
                os._exit(9)  # the process dies after writing its shard, before the index
            real(path, write)
        checkpoint_format.atomic_write = dying
        saver.save(sess, sys.argv[1], global_step=2)
    """)
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path / "m")], timeout=60,
                          capture_output=True)
    assert proc.returncode == 9, proc.stderr.decode()
    assert any(f.startswith("m-2.data-") for f in os.listdir(str(tmp_path)))  # shard was written
    assert latest_checkpoint(str(tmp_path)) == str(tmp_path / "m-1")
    with tf.Graph().as_default():
        v = tf.Variable(0.0, name="v")
        with tf.Session() as sess:
            Saver().restore(sess, latest_checkpoint(str(tmp_path)))
            assert sess.run(v) == 1.0


@pytest.fixture
def make_cluster():
    servers = []

    def make():
        ports = iter(free_ports(3))
        spec = {"ps": ["127.0.0.1:%d" % next(ports) for _ in range(2)],
                "worker": ["127.0.0.1:%d" % next(ports)]}
        started = {(job, i): tf.train.Server(spec, job_name=job, task_index=i)
                   for job in spec for i in range(len(spec[job]))}
        servers.extend(started.values())
        return started

    yield make
    for s in servers:
        s.stop()


def _sharded_model():
    with tf.device("/job:ps/task:0"):
        w0 = tf.Variable(np.zeros((3, 2), np.float32), name="w0")
        step = tf.train.get_or_create_global_step()
    with tf.device("/job:ps/task:1"):
        w1 = tf.Variable(np.zeros(4, np.int32), name="w1")
        s1 = tf.Variable(np.array([b""], object), name="s1")
    return [w0, step, w1, s1]


def test_sharded_save_writes_one_shard_per_ps_task_and_restores_in_a_new_cluster(
        tmp_path, make_cluster):
    values = [np.arange(6, dtype=np.float32).reshape(3, 2) / 3, np.int64(17),
              np.array([1, -2, 3, 2 ** 30], np.int32), np.array([b"ps1"], object)]
    cluster = make_cluster()
    with tf.Graph().as_default() as g:
        variables = _sharded_model()
        saver = Saver(sharded=True)
        devices = {op.type: set() for op in g.get_operations()}
        for op in g.get_operations():
            devices[op.type].add(op.device)
        assert devices["SaveShard"] == {"/job:ps/task:0", "/job:ps/task:1"}
        assert devices["RestoreShard"] == devices["SaveShard"]
        with tf.Session(cluster[("worker", 0)].target) as sess:
            sess.run([v.assign(x) for v, x in zip(variables, values)])
            path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=variables[1])
    assert path == str(tmp_path / "model.ckpt-17")
    index = json.loads((tmp_path / "model.ckpt-17.index").read_text())
    assert len(index["shards"]) == 2
    assert {k: v["shard"] for k, v in index["tensors"].items()} == {
        "w0": 0, "global_step": 0, "w1": 1, "s1": 1}
    for s in cluster.values():
        s.stop()

    fresh = make_cluster()
    with tf.Graph().as_default():
        variables = _sharded_model()
        saver = Saver(sharded=True)
        with tf.Session(fresh[("worker", 0)].target) as sess:
            saver.restore(sess, latest_checkpoint(str(tmp_path)))
            for v, x in zip(variables, values):
                got = sess.run(v)
                assert got.dtype == np.asarray(x).dtype and got.tolist() == np.asarray(x).tolist()
    assert "w0" in fresh[("ps", 0)].resources.variables()
    assert "w1" in fresh[("ps", 1)].resources.variables()
    assert "w0" not in fresh[("worker", 0)].resources.variables()


def test_import_meta_graph_restores_a_trainable_model(tmp_path):
    from zps.train.saver import import_meta_graph
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        w = tf.Variable([[1.0], [2.0]], name="w")
        y = tf.identity(tf.matmul(x, w), name="y")
        step = tf.train.get_or_create_global_step()
        train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(y), global_step=step)
        tf.add_to_collection("train_op", train)
        tf.add_to_collection("notes", "plain text")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train, {x: [[1.0, 1.0]]})
            path = Saver().save(sess, str(tmp_path / "m"), global_step=step)
            expected = sess.run(y, {x: [[1.0, 1.0]]})
    for scope in (None, "copy"):
        with tf.Graph().as_default() as g:
            saver = import_meta_graph(path + ".meta", import_scope=scope)
            p = scope + "/" if scope else ""
            assert [v.op.name for v in tf.trainable_variables()] == [p + "w"]
            assert tf.get_collection("notes") == ["plain text"]
            with tf.Session() as sess:
                saver.restore(sess, path)
                got = sess.run(p + "y:0", {p + "x:0": [[1.0, 1.0]]})
                np.testing.assert_array_equal(got, expected)
                sess.run(g.get_collection("train_op")[0], {p + "x:0": [[1.0, 1.0]]})
                assert sess.run(tf.train.get_global_step()) == 2
    (tmp_path / "junk.meta").write_bytes(b"\xc1garbage")
    with pytest.raises(ValueError, match="not a zps meta graph"):
        import_meta_graph(str(tmp_path / "junk.meta"))


def test_sharded_and_sequential_savers_work_in_a_local_session(tmp_path):
    with tf.Graph().as_default():
        a = tf.Variable([1.0, 2.0], name="a")
        with tf.device("/job:localhost/replica:0/task:0"):
            b = tf.Variable(3, name="b")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = Saver(sharded=True).save(sess, str(tmp_path / "m"))
            assert len(json.loads((tmp_path / "m.index").read_text())["shards"]) == 2
            sess.run([a.assign([0.0, 0.0]), b.assign(0)])
            Saver(restore_sequentially=True).restore(sess, path)  # unsharded reads any layout
            assert sess.run(a).tolist() == [1.0, 2.0] and sess.run(b) == 3
