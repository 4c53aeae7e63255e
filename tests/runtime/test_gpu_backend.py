"""GPU placement and execution (cupy), exercised on zps.testing.fake_cupy without a GPU.

Dispatch by device, CUDA_VISIBLE_DEVICES, soft placement and the clear errors (with and without
cupy), mixed host/GPU plans with copies only at the boundaries, fetch types, GPU variables and
optimizer updates, in-graph replication over GPU towers, and a GPU worker partition exchanging
tensors with a ps (pinned device-to-host before the send).
"""

import numpy as np
import pytest

import zps as tf
from zps.framework import errors, registry
from zps.ops import training_ops
from zps.testing import fake_cupy
from zps.testing.cluster import InProcessCluster


def _register_probe():
    # Which device (-1: host) and array type a kernel ran with; grad=None: not differentiable.
    if "ZpsTestDeviceProbe" in registry.REGISTRY:
        return

    def probe(ctx, x):
        if ctx.backend == "cupy":
            import cupy
            assert isinstance(x, cupy.ndarray), type(x)
            return ctx.xp.asarray(np.int32(cupy.cuda.runtime.getDevice()))
        assert isinstance(x, np.ndarray | np.generic), type(x)
        return np.int32(-1)

    registry.register_op("ZpsTestDeviceProbe", kernel=probe, grad=None,
                         dtype=lambda op: tf.int32, shape=lambda op: tf.TensorShape([]))


_register_probe()


def probe(x):
    from zps.ops.op_util import make_op
    return make_op("ZpsTestDeviceProbe", [tf.convert_to_tensor(x)], name="probe")


@pytest.fixture
def gpus(monkeypatch):
    """The stand-in cupy on a machine with two GPUs, all visible."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with fake_cupy.installed(num_gpus=2) as cupy:
        yield cupy


def _soft():
    return tf.ConfigProto(allow_soft_placement=True)


# -- dispatch ------------------------------------------------------------------------------------
def test_ops_run_on_the_gpu_their_device_names(gpus):
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0])
        with tf.device("/gpu:1"):
            on1 = probe(x * 2.0)
        with tf.device("/job:localhost/replica:0/task:0/device:GPU:0"):
            on0 = probe(x)
        on_cpu = probe(x)
        with tf.device("/cpu:0"):
            on_cpu2 = probe(x)
        with tf.Session() as sess:
            assert sess.run([on1, on0, on_cpu, on_cpu2]) == [1, 0, -1, -1]


def test_cuda_visible_devices_renumbers_and_limits_the_gpus(gpus, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    with tf.Graph().as_default():
        x = tf.constant(1.0)
        with tf.device("/gpu:0"):
            p0 = probe(x)
        with tf.device("/gpu:1"):
            p1 = probe(x)
        with tf.Session() as sess:
            assert sess.run(p0) == 0   # the one visible GPU (physical 1) is GPU:0
            with pytest.raises(errors.InvalidArgumentError) as e:
                sess.run(p1)
        msg = str(e.value)
        assert "'probe_1'" in msg and "/device:GPU:1" in msg
        assert "sees only 1 GPU(s) with CUDA_VISIBLE_DEVICES='1'" in msg
        assert "allow_soft_placement=True" in msg
        with tf.Session(config=_soft()) as sess:
            assert sess.run(p1) == -1   # soft placement: on the CPU


def test_list_devices_names_the_visible_gpus(gpus, monkeypatch):
    with tf.Graph().as_default(), tf.Session() as sess:
        names = [d.name for d in sess.list_devices()]
    assert names == ["/job:localhost/replica:0/task:0/device:CPU:0",
                     "/job:localhost/replica:0/task:0/device:GPU:0",
                     "/job:localhost/replica:0/task:0/device:GPU:1"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with tf.Graph().as_default(), tf.Session() as sess:
        assert [d.device_type for d in sess.list_devices()] == ["CPU"]


def test_visible_device_list_and_device_count_select_the_gpus(gpus):
    with tf.Graph().as_default():
        x = tf.constant(1.0)
        with tf.device("/gpu:0"):
            p0 = probe(x)
        with tf.device("/gpu:1"):
            p1 = probe(x)
        cfg = tf.ConfigProto(gpu_options=tf.GPUOptions(visible_device_list="1,0"))
        with tf.Session(config=cfg) as sess:
            assert sess.run([p0, p1]) == [1, 0]
        cfg = tf.ConfigProto(gpu_options=tf.GPUOptions(visible_device_list="1"))
        with tf.Session(config=cfg) as sess:
            assert [d.device_type for d in sess.list_devices()] == ["CPU", "GPU"]
            assert sess.run(p0) == 1
            with pytest.raises(errors.InvalidArgumentError,
                               match="lets it use only 1 GPU.*visible_device_list"):
                sess.run(p1)
        with tf.Session(config=tf.ConfigProto(device_count={"GPU": 0})) as sess:
            with pytest.raises(errors.InvalidArgumentError, match="only 0 GPU"):
                sess.run(p0)
        cfg = tf.ConfigProto(device_count={"GPU": 0}, allow_soft_placement=True)
        with tf.Session(config=cfg) as sess:
            assert sess.run([p0, p1]) == [-1, -1]
        with pytest.raises(errors.InvalidArgumentError, match="not a list of distinct GPU ids"):
            tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(visible_device_list="0,0")))


# -- clear errors, soft placement ----------------------------------------------------------------
def _gpu_graph():
    x = tf.placeholder(tf.float32, [2])
    with tf.device("/gpu:0"):
        y = tf.multiply(x, 3.0, name="triple")
    return x, y


def test_without_cupy_a_gpu_op_fails_naming_op_device_and_remedy():
    with fake_cupy.hidden(), tf.Graph().as_default():
        x, y = _gpu_graph()
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError) as e:
                sess.run(y, {x: [1.0, 2.0]})
        msg = str(e.value)
        assert e.value.op_name == "triple"
        assert "'triple'" in msg and "/device:GPU:0" in msg and "cupy is not installed" in msg
        assert "pip install cupy-cuda12x" in msg and "allow_soft_placement=True" in msg
        with tf.Session(config=_soft()) as sess:
            np.testing.assert_array_equal(sess.run(y, {x: [1.0, 2.0]}), [3.0, 6.0])


def test_without_a_gpu_a_gpu_op_fails_clearly(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with fake_cupy.installed(num_gpus=0), tf.Graph().as_default():
        x, y = _gpu_graph()
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError, match="sees no GPU"):
                sess.run(y, {x: [1.0, 2.0]})
        with tf.Session(config=_soft()) as sess:
            out = sess.run(y, {x: [1.0, 2.0]})
        assert type(out) is np.ndarray and out.tolist() == [3.0, 6.0]


def test_an_op_without_gpu_kernel_needs_soft_placement(gpus):
    with tf.Graph().as_default():
        with tf.device("/gpu:0"):
            q = tf.FIFOQueue(2, [tf.float32], shapes=[[]], name="q")
            enq = q.enqueue([tf.constant(5.0)])
            out = q.dequeue() * 2.0
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError,
                               match="FIFOQueue has no GPU kernel.*tf.device\\('/cpu:0'\\)"):
                sess.run(enq)
        with tf.Session(config=_soft()) as sess:
            sess.run(enq)
            assert sess.run(out) == 10.0   # dequeue on the host, the product on the GPU


def test_kernel_failure_on_the_gpu_names_the_op(gpus):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        with tf.device("/gpu:0"):
            y = tf.reshape(x, [2, 2], name="bad_reshape")
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError) as e:
                sess.run(y, {x: [1.0, 2.0, 3.0]})
    assert e.value.op_name == "bad_reshape"


# -- mixed plans: copies only at the boundaries --------------------------------------------------
def test_mixed_plan_copies_only_at_backend_boundaries(gpus):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3])
        with tf.device("/gpu:0"):
            a = tf.square(x)          # feed -> GPU: 1 h2d
            b = a + 1.0               # stays on the GPU; the constant is copied once per plan
        c = tf.sqrt(b)                # GPU -> host: 1 d2h
        with tf.device("/gpu:0"):
            d = tf.exp(c) * a         # host -> GPU: 1 h2d (a is already there)
        e = d - 1.0                   # GPU -> host: 1 d2h
        with tf.Session() as sess:
            xv = np.array([0.5, 1.0, 2.0], np.float32)
            sess.run(e, {x: xv})      # builds the plan (copies the constant 1.0 to the GPU)
            fake_cupy.reset_stats()
            got = sess.run(e, {x: xv})
            assert fake_cupy.stats["h2d"] == 2 and fake_cupy.stats["d2h"] == 2, fake_cupy.stats
            # Fetching b as well reuses the host copy made for c: no extra transfer.
            sess.run([e, b], {x: xv})
            fake_cupy.reset_stats()
            got_e, got_b = sess.run([e, b], {x: xv})
            assert fake_cupy.stats["d2h"] == 2, fake_cupy.stats
    a = xv * xv
    expected = np.exp(np.sqrt(a + 1)) * a - 1
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    np.testing.assert_allclose(got_e, expected, rtol=1e-6)
    np.testing.assert_allclose(got_b, a + 1, rtol=1e-6)


def test_gpu_plans_run_no_kernel_for_variables_and_same_device_identities(gpus):
    from zps.runtime.executor import Plan
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2])
        with tf.device("/gpu:0"):
            v = tf.Variable([1.0, 2.0], name="v")
            y = tf.identity(v * x, name="y")   # on the GPU its input is on: passes it on
        z = tf.identity(y, name="z")           # on the host: a copy, then a step
        plan = Plan([x], [z, y], [])
        ran = [step.op.name for step in plan._steps]
        assert "v" not in ran and "y" not in ran   # the container is put in place; y forwards
        assert ran.count("z") == 2                 # the device-to-host copy and the Identity
        with tf.Session() as sess:
            sess.run(v.initializer)
            got_z, got_y = sess.run([z, y], {x: [3.0, 4.0]})
    assert got_z.tolist() == got_y.tolist() == [3.0, 8.0]
    assert type(got_y) is np.ndarray


def test_all_cpu_plans_make_no_device_work(gpus):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3])
        y = tf.reduce_sum(x * 2.0)
        with tf.Session() as sess:
            assert sess.run(y, {x: [1.0, 2.0, 3.0]}) == 12.0
    assert fake_cupy.stats == {k: 0 for k in fake_cupy.stats}


def test_feeds_go_to_the_devices_that_consume_them(gpus):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2])
        with tf.device("/gpu:0"):
            a = x * 2.0
            b = x * 3.0               # the same copy of x serves both
        with tf.device("/gpu:1"):
            c = x + 1.0
        d = x - 1.0                   # the host reads the feed itself
        with tf.Session() as sess:
            sess.run([a, b, c, d], {x: [1.0, 2.0]})
            fake_cupy.reset_stats()
            out = sess.run([a, b, c, d], {x: [1.0, 2.0]})
    assert fake_cupy.stats["h2d"] == 2 and fake_cupy.stats["d2h"] == 3
    assert [v.tolist() for v in out] == [[2.0, 4.0], [3.0, 6.0], [2.0, 3.0], [0.0, 1.0]]


def test_gpu_to_gpu_copies(gpus):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2])
        with tf.device("/gpu:0"):
            a = x * 2.0
        with tf.device("/gpu:1"):
            b = probe(a) + tf.cast(tf.reduce_sum(a), tf.int32)
        with tf.Session() as sess:
            sess.run(b, {x: [1.0, 2.0]})
            fake_cupy.reset_stats()
            assert sess.run(b, {x: [1.0, 2.0]}) == 1 + 6
    assert fake_cupy.stats["d2d"] == 1


def test_fetches_come_back_as_numpy(gpus):
    with tf.Graph().as_default():
        with tf.device("/gpu:0"):
            v = tf.Variable([1.0, 2.0], name="v")
            s = tf.reduce_sum(v)
            i = tf.argmax(v)
            m = tf.identity(v)
            flag = tf.reduce_all(v > 0)
        with tf.Session() as sess:
            sess.run(v.initializer)
            vv, sv, iv, mv, fv = sess.run([v, s, i, m, flag])
            assert type(vv) is np.ndarray and vv.dtype == np.float32 and vv.tolist() == [1.0, 2.0]
            assert type(sv) is np.float32 and sv == 3.0
            assert type(iv) is np.int64 and iv == 1
            assert type(fv) is np.bool_ and fv
            assert type(mv) is np.ndarray
            mv[0] = 100.0   # fetched values never alias the variable
            assert sess.run(v).tolist() == [1.0, 2.0]


# -- variables and updates on GPUs ---------------------------------------------------------------
def test_variables_read_across_devices_at_the_reading_op(gpus):
    with tf.Graph().as_default():
        with tf.device("/cpu:0"):
            host_var = tf.Variable(1.0, name="host_var")
        with tf.device("/gpu:0"):
            gpu_var = tf.Variable(10.0, name="gpu_var")
            inc = tf.assign_add(gpu_var, host_var)
            with tf.control_dependencies([inc]):
                on_gpu = host_var + gpu_var   # reads both after the update
        with tf.control_dependencies([inc]):
            on_host = gpu_var * 1.0           # GPU variable read by a host op, after the update
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run([on_gpu, on_host]) == [12.0, 11.0]   # inc ran once, before both
            assert sess.run(gpu_var) == 11.0


@pytest.mark.parametrize("ufunc_at", [True, False], ids=["cupy>=13", "cupy<13"])
def test_scatter_updates_on_a_gpu_variable(monkeypatch, ufunc_at):
    # cupy >= 13 scatters with its own add.at (cupyx.scatter_add warns that it is deprecated,
    # an error under this suite's warning filter); older cupy has no ufunc.at: cupyx's kernels.
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with fake_cupy.installed(num_gpus=1, ufunc_at=ufunc_at) as cupy:
        assert hasattr(cupy.add, "at") is ufunc_at
        with tf.Graph().as_default():
            with tf.device("/gpu:0"):
                v = tf.Variable(np.zeros((4, 2), np.float32))
                add = tf.scatter_add(v, [0, 2, 0], np.ones((3, 2), np.float32))
                sub = tf.scatter_sub(v, [3, 3], np.full((2, 2), 2.0, np.float32))
                # a generic kernel's xp.add.at, with repeated ids
                seg = tf.unsorted_segment_sum(tf.constant([[1.0], [2.0], [4.0], [8.0]]),
                                              [2, 0, 2, 2], 3)
            with tf.Session() as sess:
                sess.run(v.initializer)
                sess.run([add])
                sess.run([sub])
                np.testing.assert_array_equal(sess.run(v), [[2, 2], [0, 0], [1, 1], [-4, -4]])
                fake_cupy.reset_stats()
                np.testing.assert_array_equal(sess.run(seg), [[2.0], [0.0], [13.0]])
                assert fake_cupy.stats["kernels"] > 0


@pytest.mark.parametrize("make_opt", [
    lambda: tf.train.GradientDescentOptimizer(0.1),
    lambda: tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
    lambda: tf.train.AdamOptimizer(0.05),
    lambda: tf.train.AdagradOptimizer(0.1),
    lambda: tf.train.RMSPropOptimizer(0.05, centered=True),
    lambda: tf.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01,
                                   l2_shrinkage_regularization_strength=0.1),
], ids=["sgd", "momentum", "adam", "adagrad", "rmsprop", "ftrl"])
def test_optimizers_update_gpu_variables_like_cpu_ones(gpus, make_opt):
    def train(device):
        with tf.Graph().as_default():
            ids = tf.placeholder(tf.int32, [None])
            x = tf.placeholder(tf.float32, [None, 3])
            with tf.device(device):
                emb = tf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, name="emb")
                w = tf.Variable(np.ones((3, 1), np.float32), name="w")
                h = tf.gather(emb, ids) * x      # a sparse (IndexedSlices) gradient for emb
                loss = tf.reduce_mean(tf.square(tf.matmul(h, w) - 1.0))
                step = make_opt().minimize(loss)
            feed = {ids: [0, 2, 2], x: np.linspace(-1, 1, 9, dtype=np.float32).reshape(3, 3)}
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                losses = [sess.run([loss, step], feed)[0] for _ in range(4)]
                return losses, sess.run([emb, w])

    cpu_losses, cpu_vars = train("/cpu:0")
    gpu_losses, gpu_vars = train("/gpu:0")
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-6)
    for g, c in zip(gpu_vars, cpu_vars):
        np.testing.assert_allclose(g, c, rtol=1e-6)


def test_a_gpu_training_step_syncs_only_for_its_fetch(gpus):
    # Every Python scalar taken from a device array is a device->host copy that waits for the
    # GPU; a step of a softmax classifier makes one: the fetched loss. The labels are checked on
    # the host (they are a host input of the cross-entropy on a GPU), so a bad label is still
    # an InvalidArgumentError naming the op, as on the CPU.
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 4])
        labels = tf.placeholder(tf.int64, [None])
        with tf.device("/gpu:0"):
            w = tf.Variable(np.full((4, 3), 0.1, np.float32))
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=labels, logits=tf.nn.relu(tf.matmul(x, w))))
            step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        feed = {x: np.eye(4, dtype=np.float32)[[0, 1, 2, 3, 0]], labels: [0, 1, 2, 0, 0]}
        with tf.Session() as sess:
            sess.run(w.initializer)
            first = sess.run([loss, step], feed)[0]
            fake_cupy.reset_stats()
            second = sess.run([loss, step], feed)[0]
            assert fake_cupy.stats["d2h"] == 1, fake_cupy.stats
            assert second < first
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"label value of 3 .* range of \[0, 3\)") as info:
                sess.run(step, {x: feed[x], labels: [0, 1, 3, 0, 0]})
            assert "SparseSoftmaxCrossEntropyWithLogits" in str(info.value)


def _optimizer(opt):
    return lambda v, slots, g: opt().apply_gradients([(g, v)])


@pytest.mark.parametrize("make_update", [
    _optimizer(lambda: tf.train.GradientDescentOptimizer(0.1)),
    _optimizer(lambda: tf.train.MomentumOptimizer(0.1, 0.9)),
    _optimizer(lambda: tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True)),
    _optimizer(lambda: tf.train.AdagradOptimizer(0.1)),
    _optimizer(lambda: tf.train.AdamOptimizer(0.05)),
    lambda v, slots, g: training_ops.apply_adagrad(v, slots[0], np.float32(0.1), g,
                                                   update_slots=False),
    lambda v, slots, g: training_ops.apply_adam(
        v, slots[0], slots[1], np.float32(0.9), np.float32(0.999), np.float32(0.05),
        np.float32(0.9), np.float32(0.999), np.float32(1e-7), g, use_nesterov=True),
], ids=["gd", "momentum", "nesterov", "adagrad", "adam", "adagrad_frozen", "adam_nesterov"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["float32", "float16"])
def test_dense_updates_on_a_gpu_are_one_fused_kernel(gpus, monkeypatch, make_update, dtype):
    # Each dense optimizer update on a GPU is one elementwise kernel (the stand-in runs its body),
    # computing what the generic update (a launch per operation) computes; float16 keeps the
    # generic update.
    from zps.ops import cupy_kernels

    def run(fused):
        monkeypatch.setattr(cupy_kernels, "FUSED_UPDATES", fused)
        with tf.Graph().as_default():
            with tf.device("/gpu:0"):
                v = tf.Variable(np.linspace(-1, 1, 12).reshape(3, 4).astype(dtype))
                slots = [tf.Variable(np.full((3, 4), 0.5, dtype)),
                         tf.Variable(np.full((3, 4), 0.25, dtype))]
                g = tf.constant(np.linspace(0.5, -0.7, 12).reshape(3, 4).astype(dtype))
                update = make_update(v, slots, g)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(update)
                fake_cupy.reset_stats()
                sess.run(update)
                return fake_cupy.stats["kernels"], sess.run([v] + slots)

    fused_kernels, fused = run(True)
    generic_kernels, generic = run(False)
    for a, b in zip(fused, generic):
        np.testing.assert_allclose(a, b, rtol=1e-6 if dtype is np.float32 else 0)
    if dtype is np.float32:
        assert fused_kernels < generic_kernels
    else:
        assert fused_kernels == generic_kernels


def test_random_ops_on_a_gpu_draw_the_cpu_sequence(gpus):
    def draw(device):
        with tf.Graph().as_default():
            tf.set_random_seed(7)
            with tf.device(device):
                r = [tf.random_normal([3]), tf.random_uniform([2], 0, 10, dtype=tf.int32),
                     tf.truncated_normal([2, 2])]
            with tf.Session() as sess:
                return sess.run(r) + sess.run(r)

    for g, c in zip(draw("/gpu:0"), draw("/cpu:0")):
        assert type(g) is np.ndarray
        np.testing.assert_array_equal(g, c)


# -- in-graph replication over GPU towers (TF1's CIFAR-10 multi-GPU trainer) ---------------------
def test_in_graph_replication_over_gpu_towers(gpus):
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((8, 4)).astype(np.float32)
    ys = (xs @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)).astype(np.float32)

    def train(num_towers, gpu):
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float32, [8, 4])
            y = tf.placeholder(tf.float32, [8, 1])
            with tf.device("/gpu:0" if gpu else "/cpu:0"):   # the worker's variables: on its GPU
                w = tf.Variable(tf.zeros([4, 1]), name="w")
            opt = tf.train.GradientDescentOptimizer(0.1)
            tower_grads, losses = [], []
            for i, (xi, yi) in enumerate(zip(tf.split(x, num_towers), tf.split(y, num_towers))):
                with tf.device("/gpu:%d" % i if gpu else "/cpu:0"), tf.name_scope("tower_%d" % i):
                    loss = tf.reduce_mean(tf.square(tf.matmul(xi, w) - yi))
                    losses.append(loss)
                    tower_grads.append(opt.compute_gradients(loss, [w]))
            with tf.device("/cpu:0"):   # gradient averaging on the CPU
                grad = tf.add_n([g for ((g, _),) in tower_grads]) / float(num_towers)
                mean_loss = tf.add_n(losses) / float(num_towers)
            train_op = opt.apply_gradients([(grad, w)])
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                out = [sess.run([mean_loss, train_op], {x: xs, y: ys})[0] for _ in range(20)]
                return out, sess.run(w)

    gpu_losses, gpu_w = train(2, gpu=True)
    cpu_losses, cpu_w = train(2, gpu=False)
    assert gpu_losses[-1] < 0.2 * gpu_losses[0]
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-5)
    np.testing.assert_allclose(gpu_w, cpu_w, rtol=1e-5)


# -- a GPU worker and a ps -------------------------------------------------------------------------
def _ps_worker_graph(worker_device):
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.ones((3, 2), np.float32), name="w")
    x = tf.placeholder(tf.float32, [None, 3])
    with tf.device(worker_device):
        y = tf.matmul(x, w)
        loss = tf.reduce_sum(y * y)
        grad, = tf.gradients(loss, [w])
    with tf.device("/job:ps/task:0"):
        train = tf.assign_sub(w, 0.01 * grad)
    return w, x, loss, train


def test_gpu_worker_partition_exchanges_tensors_with_a_ps(gpus):
    feed_x = np.arange(6, dtype=np.float32).reshape(2, 3)
    results = {}
    for device in ("/job:worker/task:0/device:GPU:0", "/job:worker/task:0/device:CPU:0"):
        with InProcessCluster({"ps": 1, "worker": 1}) as cluster, tf.Graph().as_default():
            w, x, loss, train = _ps_worker_graph(device)
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(w.initializer)
                sess.run([loss, train], {x: feed_x})
                fake_cupy.reset_stats()
                losses = [sess.run([loss, train], {x: feed_x})[0] for _ in range(3)]
                stats = dict(fake_cupy.stats)
                results[device] = (losses, sess.run(w), stats)
    gpu_losses, gpu_w, stats = results["/job:worker/task:0/device:GPU:0"]
    cpu_losses, cpu_w, cpu_stats = results["/job:worker/task:0/device:CPU:0"]
    assert type(gpu_losses[0]) is np.float32
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-6)
    np.testing.assert_allclose(gpu_w, cpu_w, rtol=1e-6)
    # Per step: the feed and the received w go host->device; the loss (fetch) and the gradient
    # (sent to the ps, through a pinned buffer) come back; nothing else moves.
    assert stats["h2d"] == 3 * 2 and stats["d2h"] == 3 * 2, stats
    assert stats["d2h_pinned"] == 3 and stats["pinned_alloc"] == 3, stats
    assert cpu_stats["h2d"] == cpu_stats["d2h"] == 0


def test_worker_without_cupy_fails_the_step_naming_the_gpu_op():
    with fake_cupy.hidden(), InProcessCluster({"ps": 1, "worker": 1}) as cluster, \
            tf.Graph().as_default():
        w, x, loss, train = _ps_worker_graph("/job:worker/task:0/device:GPU:0")
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(w.initializer)
            with pytest.raises(errors.InvalidArgumentError) as e:
                sess.run(loss, {x: np.ones((1, 3), np.float32)})
    assert "/job:worker/task:0/device:GPU:0" in str(e.value)
    assert "cupy is not installed" in str(e.value)


def test_partitions_of_a_soft_placement_session_fall_back_to_the_cpu():
    from zps.distributed.partition import Task, partition
    from zps.runtime.executor import Plan, StepContext
    from zps.runtime.resources import ResourceManager
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2])
        with tf.device("/job:worker/task:0/device:GPU:0"):
            y = tf.multiply(x, 3.0, name="triple")
        worker = Task("worker", 0)
        for soft in (False, True):
            part = partition([x], [y], [], worker, soft_placement=soft)[worker]
            g = part.graph
            triple = g.get_operation_by_name("triple")
            assert triple.device == "/job:worker/task:0/device:GPU:0"
            assert triple._attrs.get("_soft_placement", False) is soft
            assert "_soft_placement" not in y.op._attrs   # the client's graph is untouched
            feeds = [g.get_tensor_by_name(n + ":0") for n in part.feeds]
            fetches = [g.get_tensor_by_name(n) for _, n in part.fetches]
            with fake_cupy.hidden():
                if not soft:
                    with pytest.raises(errors.InvalidArgumentError, match="cupy is not installed"):
                        Plan(feeds, fetches, [])
                    continue
                plan = Plan(feeds, fetches, [])
                out, = plan.run(StepContext(ResourceManager()), [np.array([1.0, 2.0], np.float32)])
            assert out.tolist() == [3.0, 6.0]


# -- the stand-in is as strict as cupy where kernels could go wrong -------------------------------
def test_stand_in_refuses_what_real_cupy_refuses(gpus):
    a = gpus.asarray(np.arange(3.0, dtype=np.float32))
    # cupy.pad reads constant_values with numpy.array: a device array there fails
    with pytest.raises(TypeError, match="Implicit conversion"):
        gpus.pad(a, [(1, 1)], constant_values=gpus.asarray(np.float32(5)))
    np.testing.assert_array_equal(gpus.pad(a, [(1, 1)], constant_values=np.float32(5)).get(),
                                  [5, 0, 1, 2, 5])
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray(a)
    with pytest.raises(TypeError, match="ufunc.at"):
        np.add.at(a, [0], 1.0)
    # every Python scalar taken from a device array is counted as a device-to-host copy
    fake_cupy.reset_stats()
    assert float(a[1]) == 1.0 and int(a[2]) == 2 and bool(a[2])
    assert fake_cupy.stats["d2h"] == 3
    # cupy 14: add.at scatters, cupyx.scatter_add is deprecated
    gpus.add.at(a, gpus.asarray(np.array([0, 0])), gpus.asarray(np.float32(1)))
    assert a.get().tolist() == [2.0, 1.0, 2.0]
    import cupyx
    with pytest.warns(DeprecationWarning, match="cupy.add.at"):
        cupyx.scatter_add(a, gpus.asarray(np.array([1])), gpus.asarray(np.float32(1)))
    assert not hasattr(gpus.maximum, "at")


def test_stand_in_of_an_old_cupy_has_no_ufunc_at(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with fake_cupy.installed(num_gpus=1, ufunc_at=False) as cupy:
        import cupyx
        assert not hasattr(cupy.add, "at")
        a = cupy.zeros(2, np.float32)
        cupyx.scatter_add(a, cupy.asarray(np.array([1, 1])), cupy.asarray(np.float32(2)))
        assert a.get().tolist() == [0.0, 4.0]
