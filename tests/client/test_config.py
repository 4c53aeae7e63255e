"""ConfigProto, GPUOptions, GraphOptions, RunOptions, RunMetadata: TF1's proto fields as objects."""

import pytest

import zps as tf


def test_defaults():
    cfg = tf.ConfigProto()
    assert cfg.allow_soft_placement is False and cfg.log_device_placement is False
    assert cfg.device_count == {} and cfg.device_filters == [] and cfg.operation_timeout_in_ms == 0
    assert cfg.intra_op_parallelism_threads == 0 and cfg.inter_op_parallelism_threads == 0
    assert isinstance(cfg.gpu_options, tf.GPUOptions) and cfg.gpu_options.allow_growth is False
    assert isinstance(cfg.graph_options, tf.GraphOptions)
    assert cfg.cluster_def is None and cfg.isolate_session_state is False


def test_fields_are_set_and_mutable_defaults_are_not_shared():
    cfg = tf.ConfigProto(allow_soft_placement=True, device_count={"CPU": 2},
                         gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.5),
                         device_filters=["/job:ps", "/job:worker/task:0"],
                         operation_timeout_in_ms=5000)
    assert cfg.allow_soft_placement and cfg.device_count == {"CPU": 2}
    assert cfg.gpu_options.per_process_gpu_memory_fraction == 0.5
    assert list(cfg.device_filters) == ["/job:ps", "/job:worker/task:0"]
    a, b = tf.ConfigProto(), tf.ConfigProto()
    a.gpu_options.allow_growth = True
    a.device_filters.append("/job:ps")
    assert b.gpu_options.allow_growth is False and b.device_filters == []


def test_unknown_fields_are_rejected_with_the_known_ones_listed():
    with pytest.raises(TypeError, match="unknown field.*allow_soft_placment.*allow_soft_placement"):
        tf.ConfigProto(allow_soft_placment=True)
    with pytest.raises(TypeError, match="GPUOptions got unknown"):
        tf.GPUOptions(grow=True)


def test_equality_repr_and_copy_from():
    a = tf.ConfigProto(log_device_placement=True)
    b = tf.ConfigProto(log_device_placement=True)
    assert a == b and a != tf.ConfigProto() and a != "config"
    assert "log_device_placement=True" in repr(a)
    c = tf.ConfigProto()
    c.CopyFrom(a)
    assert c == a


def test_run_options_and_metadata():
    opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE, timeout_in_ms=100)
    assert (opts.trace_level, opts.timeout_in_ms) == (3, 100)
    assert (tf.RunOptions.NO_TRACE, tf.RunOptions.SOFTWARE_TRACE, tf.RunOptions.HARDWARE_TRACE) == (0, 1, 2)
    md = tf.RunMetadata()
    assert md.step_stats == [] and md.partition_graphs == [] and md.cost_graph is None


def test_session_accepts_options_and_metadata():
    with tf.Graph().as_default():
        c = tf.constant(3.0)
        with tf.Session(config=tf.ConfigProto(log_device_placement=True)) as sess:
            assert sess.run(c, options=tf.RunOptions(), run_metadata=tf.RunMetadata()) == 3.0
