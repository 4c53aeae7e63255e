"""Complex numbers, FFTs and tf.signal's frames, windows and STFTs: dtypes, values and gradients
against TensorFlow's, finite-difference gradient cases, TF's errors for wrong dtypes, checkpoints
and the wire.

tests/fixtures/tf_complex_fft/expected.npz holds what TensorFlow 2.21 computed for the programs
of tests/fixtures/tf_complex_fft/make.py; the same programs run here on zps.
"""

import json
import os

import numpy as np
import pytest

import zps as tf
from tests import tf_fixtures
from zps.testing.cluster import InProcessCluster
from zps.testing.gradient_checker import GradCase, check_gradients

TF_PROGRAMS, TF_VALUES = tf_fixtures.load("tf_complex_fft")
with tf.Graph().as_default():
    _VALUE_NAMES = sorted(TF_PROGRAMS.value_programs(tf))
_GRAD_NAMES = sorted(TF_PROGRAMS.grad_programs(tf))


def _assert_matches_tf(got, expected, what):
    tf_fixtures.assert_matches(got, expected, what, 1e-5)


@pytest.fixture(scope="module")
def zps_values():
    with tf.Graph().as_default():
        programs = TF_PROGRAMS.value_programs(tf)
        with tf.Session() as sess:
            return sess.run(programs)


@pytest.mark.parametrize("name", _VALUE_NAMES)
def test_values_and_dtypes_match_tensorflow(zps_values, name):
    _assert_matches_tf(zps_values[name], TF_VALUES[name], name)


@pytest.mark.parametrize("name", _GRAD_NAMES)
def test_gradients_match_tensorflow_conjugate_convention(name):
    build, values = TF_PROGRAMS.grad_programs(tf)[name]
    for i, g in enumerate(TF_PROGRAMS.gradients(tf, build, values)):
        _assert_matches_tf(g, TF_VALUES[name if i == 0 else "%s__%d" % (name, i)], (name, i))


# -- finite-difference gradient cases (real inputs, real outputs: every rule on the way) ----------
def _c(x, y):
    return tf.complex(x, y)


def _mix(z):
    """A real tensor of both parts of a complex one, weighed differently."""
    return tf.real(z) * 0.7 - tf.imag(z) * 1.3


_R = np.random.default_rng(3)
_A, _B = _R.standard_normal((2, 6)), _R.standard_normal((2, 6))
_C3, _D3 = _R.standard_normal((2, 3, 4)), _R.standard_normal((2, 3, 4))

GRAD_CASES = [
    GradCase("Complex", lambda x, y: _mix(_c(x, y) * _c(y, x)), [_A, _B]),
    GradCase("Real", lambda x, y: tf.real(_c(x, y) * _c(y, x)), [_A, _B]),
    GradCase("Imag", lambda x, y: tf.imag(_c(x, y) * _c(x, y)), [_A, _B]),
    GradCase("Conj", lambda x, y: _mix(tf.conj(_c(x, y)) * _c(y, x)), [_A, _B]),
    GradCase("Angle", lambda x, y: tf.angle(_c(x, y)), [_A, _B]),
    GradCase("ComplexAbs", lambda x, y: tf.abs(_c(x, y) * _c(y, x)), [_A, _B]),
    GradCase("FFT", lambda x, y: _mix(tf.signal.fft(_c(x, y))), [_A, _B]),
    GradCase("IFFT", lambda x, y: _mix(tf.signal.ifft(_c(x, y))), [_A, _B]),
    GradCase("FFT2D", lambda x, y: _mix(tf.signal.fft2d(_c(x, y))), [_A, _B]),
    GradCase("IFFT2D", lambda x, y: _mix(tf.signal.ifft2d(_c(x, y))), [_A, _B]),
    GradCase("FFT3D", lambda x, y: _mix(tf.signal.fft3d(_c(x, y))), [_C3, _D3]),
    GradCase("IFFT3D", lambda x, y: _mix(tf.signal.ifft3d(_c(x, y))), [_C3, _D3]),
    GradCase("RFFT", lambda x: _mix(tf.signal.rfft(x)), [_A]),
    GradCase("RFFT", lambda x: _mix(tf.signal.rfft(x, [4])), [_A], name="RFFT cropped"),
    GradCase("RFFT", lambda x: _mix(tf.signal.rfft(x, [9])), [_A], name="RFFT padded"),
    GradCase("IRFFT", lambda x, y: tf.signal.irfft(_c(x, y)), [_A, _B]),
    GradCase("IRFFT", lambda x, y: tf.signal.irfft(_c(x, y), [7]), [_A, _B], name="IRFFT odd"),
    GradCase("IRFFT", lambda x, y: tf.signal.irfft(_c(x, y), [4]), [_A, _B],
             name="IRFFT cropped"),
    GradCase("RFFT2D", lambda x: _mix(tf.signal.rfft2d(x)), [_A]),
    GradCase("RFFT2D", lambda x: _mix(tf.signal.rfft2d(x, [3, 5])), [_A], name="RFFT2D padded"),
    GradCase("IRFFT2D", lambda x, y: tf.signal.irfft2d(_c(x, y)), [_A, _B]),
    GradCase("IRFFT2D", lambda x, y: tf.signal.irfft2d(_c(x, y), [2, 9]), [_A, _B],
             name="IRFFT2D odd"),
    GradCase("RFFT3D", lambda x: _mix(tf.signal.rfft3d(x)), [_C3]),
    GradCase("IRFFT3D", lambda x, y: tf.signal.irfft3d(_c(x, y)), [_C3, _D3]),
    GradCase("Exp", lambda x, y: _mix(tf.exp(_c(x, y) * 0.5)), [_A, _B], name="Exp complex"),
    GradCase("Sqrt", lambda x, y: _mix(tf.sqrt(_c(x, y))), [_A, _B], name="Sqrt complex"),
    GradCase("Log", lambda x, y: _mix(tf.log(_c(x, y))), [_A, _B], name="Log complex"),
    GradCase("Tanh", lambda x, y: _mix(tf.tanh(_c(x, y) * 0.3)), [_A, _B], name="Tanh complex"),
    GradCase("Sigmoid", lambda x, y: _mix(tf.sigmoid(_c(x, y) * 0.3)), [_A, _B],
             name="Sigmoid complex"),
    GradCase("Rsqrt", lambda x, y: _mix(tf.rsqrt(_c(x, y))), [_A, _B], name="Rsqrt complex"),
    GradCase("Log1p", lambda x, y: _mix(tf.log1p(_c(x, y))), [_A, _B], name="Log1p complex"),
    GradCase("Expm1", lambda x, y: _mix(tf.expm1(_c(x, y) * 0.5)), [_A, _B],
             name="Expm1 complex"),
    GradCase("Sinh", lambda x, y: _mix(tf.sinh(_c(x, y)) + tf.cosh(_c(y, x))), [_A, _B],
             name="Sinh Cosh complex"),
    GradCase("Pow", lambda x, y: _mix(tf.pow(_c(x, y), _c(y, x) * 0.5)), [_A, _B],
             name="Pow complex"),
    GradCase("MatMul", lambda x, y: _mix(tf.matmul(_c(x, y), _c(y, x), adjoint_b=True)),
             [_A, _B], name="MatMul complex adjoint"),
    GradCase("BatchMatMulV2", lambda x, y: _mix(tf.matmul(_c(x, y), _c(y, x), transpose_b=True)),
             [_C3, _D3], name="BatchMatMulV2 complex transpose"),
    GradCase("Cast", lambda x: _mix(tf.cast(x, tf.complex128) * (1 - 2j)), [_A],
             name="Cast to complex"),
    GradCase("Frame", lambda x: tf.signal.frame(x, 4, 3, pad_end=True), [_A]),
    GradCase("Frame", lambda x: tf.signal.frame(x, 2, 1, axis=1), [_C3], name="Frame axis 1"),
    GradCase("OverlapAndAdd", lambda x: tf.signal.overlap_and_add(x, 3), [_C3]),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradient_matches_finite_differences(case):
    check_gradients(case)


# -- dtypes and constants ------------------------------------------------------------------------
def test_complex_dtypes_are_tf1s():
    assert (tf.complex64.as_datatype_enum, tf.complex128.as_datatype_enum) == (8, 18)
    assert tf.as_dtype(8) is tf.complex64 and tf.as_dtype("complex128") is tf.complex128
    assert tf.as_dtype(np.complex64) is tf.complex64 and tf.dtypes.complex128 is tf.complex128
    assert tf.complex64.is_complex and not tf.complex64.is_floating
    assert not tf.float32.is_complex and tf.float32.real_dtype is tf.float32
    assert tf.complex64.real_dtype is tf.float32 and tf.complex128.real_dtype is tf.float64
    assert (tf.complex64.size, tf.complex128.size) == (8, 16)
    assert tf.complex64.as_numpy_dtype is np.complex64
    with pytest.raises(TypeError, match="minimum"):
        tf.complex64.min   # noqa: B018 - TF has no min for complex types either
    with pytest.raises(TypeError):
        tf.as_dtype(complex)   # as TF: the Python type is no dtype


def test_python_complex_values_are_complex128_constants():
    with tf.Graph().as_default():
        assert tf.constant(1 + 2j).dtype is tf.complex128
        assert tf.constant([1, 2.5 - 1j]).dtype is tf.complex128
        assert tf.convert_to_tensor(np.complex64(1j)).dtype is tf.complex64
        assert tf.constant(1.5, dtype=tf.complex64).dtype is tf.complex64
        with pytest.raises(TypeError, match="Expected float32, but got 1j of type 'complex'"):
            tf.constant([1.0, 1j], dtype=tf.float32)
        # a numpy complex value keeps its real part, as TF's
        np.testing.assert_array_equal(
            tf.Session().run(tf.constant(np.array([3 + 4j]), dtype=tf.float32)), [3.0])


def test_cast_between_complex_and_real():
    with tf.Graph().as_default():
        c = tf.constant([1.5 + 2j, -3 - 0.5j, 0j])
        f, i, b = tf.cast(c, tf.float32), tf.cast(c, tf.int32), tf.cast(c, tf.bool)
        back = tf.cast(tf.constant([1.0, -2.0]), tf.complex64)
        fv, iv, bv, backv = tf.Session().run([f, i, b, back])
    np.testing.assert_array_equal(fv, [1.5, -3.0, 0.0])
    np.testing.assert_array_equal(iv, [1, -3, 0])
    np.testing.assert_array_equal(bv, [True, True, False])
    assert backv.dtype == np.complex64 and backv.tolist() == [1 + 0j, -2 + 0j]


def test_real_imag_conj_angle_of_real_tensors_as_tf():
    with tf.Graph().as_default():
        x = tf.constant([-1.0, 2.0, 0.0])
        assert tf.real(x) is x and tf.conj(x) is x
        im, ang = tf.Session().run([tf.imag(x), tf.angle(x)])
    np.testing.assert_array_equal(im, [0.0, 0.0, 0.0])
    np.testing.assert_allclose(ang, [np.pi, 0.0, 0.0], rtol=1e-7)


def test_namespaces_and_aliases():
    assert tf.fft is tf.signal.fft is tf.spectral.fft
    assert tf.ifft3d is tf.spectral.ifft3d and tf.spectral.irfft2d is tf.signal.irfft2d
    assert tf.math.real is tf.real and tf.math.conj is tf.conj and tf.math.angle is tf.angle


def test_static_shapes_of_the_real_transforms():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 6])
        assert tf.signal.rfft(x).get_shape().as_list() == [None, 4]
        assert tf.signal.rfft(x, [9]).get_shape().as_list() == [None, 5]
        z = tf.placeholder(tf.complex64, [2, 3, 5])
        assert tf.signal.irfft(z).get_shape().as_list() == [2, 3, 8]
        assert tf.signal.irfft2d(z, [4, 7]).get_shape().as_list() == [2, 4, 7]
        assert tf.signal.rfft(tf.placeholder(tf.float32, [2, None])).get_shape().as_list() \
            == [2, None]
        out = tf.Session().run(tf.signal.rfft(tf.placeholder_with_default(
            np.ones([2, 6], np.float32), [2, None])))
        assert out.shape == (2, 4)


def test_frames_and_stfts_of_signals_of_unknown_length():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, None])
        framed, spectra = tf.signal.frame(x, 4, 2), tf.signal.stft(x, 16, 6)
        assert framed.get_shape().as_list() == [None, None, 4]
        assert spectra.get_shape().as_list() == [None, None, 9]
        signal = TF_PROGRAMS._signal(2, 50)
        got_frames, got_spectra = tf.Session().run([framed, spectra], {x: signal})
    assert got_frames.shape == (2, 24, 4)
    np.testing.assert_array_equal(got_frames[1, 5], signal[1, 10:14])
    _assert_matches_tf(got_spectra, TF_VALUES["stft"], "stft of a placeholder")


@pytest.mark.parametrize("build, match", [
    (lambda: tf.signal.hann_window(4, dtype=tf.int32), "dtype must be a floating point type"),
    (lambda: tf.signal.overlap_and_add(tf.constant([1.0, 2.0]), 1), "rank >= 2"),
    (lambda: tf.signal.frame(tf.constant(1.0), 1, 1), "rank >= 1"),
    (lambda: tf.signal.frame(tf.constant([1.0]), tf.placeholder(tf.int32, []), 1),
     "frame_length must be an integer scalar known when the graph is built"),
])
def test_signal_errors(build, match):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=match):
            build()


# -- TF's errors for wrong dtypes ----------------------------------------------------------------
@pytest.mark.parametrize("build, error, match", [
    (lambda c, f: tf.signal.fft(f), TypeError, "DataType float32 not in list of allowed values: "
                                                "complex64, complex128"),
    (lambda c, f: tf.signal.ifft2d(f), TypeError, "complex64, complex128"),
    (lambda c, f: tf.signal.rfft(c), ValueError, "RFFT requires tf.float32 or tf.float64"),
    (lambda c, f: tf.signal.irfft(f), ValueError, "IRFFT requires tf.complex64 or tf.complex128"),
    (lambda c, f: tf.signal.fft2d(tf.constant([1j])), ValueError, "at least rank 2"),
    (lambda c, f: tf.maximum(c, c), TypeError, "DataType complex64 not in list"),
    (lambda c, f: tf.less(c, c), TypeError, "DataType complex64 not in list"),
    (lambda c, f: tf.reduce_max(c), TypeError, "DataType complex64 not in list"),
    (lambda c, f: tf.argmax(c), TypeError, "DataType complex64 not in list"),
    (lambda c, f: tf.floor(c), TypeError, "DataType complex64 not in list"),
    (lambda c, f: tf.is_nan(c), TypeError, "DataType complex64 not in list"),
    (lambda c, f: tf.floormod(c, c), TypeError, "DataType complex64 not in list"),
    (lambda c, f: tf.complex(1, 2), TypeError, "incorrect types: int32 int32"),
    (lambda c, f: tf.complex(f, tf.cast(f, tf.float64)), TypeError,
     "incorrect types: float32 float64"),
    (lambda c, f: c + f, TypeError, "does not match type complex64"),
])
def test_wrong_dtypes_are_refused_as_tf(build, error, match):
    with tf.Graph().as_default():
        c, f = tf.constant([1 + 2j], dtype=tf.complex64), tf.constant([1.0])
        with pytest.raises(error, match=match):
            build(c, f)


def test_fft_converts_python_values_as_tf():
    with tf.Graph().as_default():
        assert tf.signal.fft([1.0, 2.0]).dtype is tf.complex64
        assert tf.signal.fft(np.arange(4.0)).dtype is tf.complex64
        assert tf.signal.fft([1 + 1j, 2]).dtype is tf.complex128
        assert tf.signal.rfft(np.arange(4.0)).dtype is tf.complex64   # TF: float32 preferred
        assert tf.signal.rfft(tf.constant(np.arange(4.0))).dtype is tf.complex128


def test_second_derivative_through_rfft_is_an_error_naming_the_op():
    with tf.Graph().as_default():
        x = tf.constant(_A)
        g, = tf.gradients(tf.reduce_sum(tf.abs(tf.signal.rfft(x))), [x])
        with pytest.raises(LookupError, match="RFFTGrad"):
            tf.gradients(tf.reduce_sum(g), [x])


# -- checkpoints ---------------------------------------------------------------------------------
def test_saver_round_trips_complex_variables(tmp_path):
    a_val = TF_PROGRAMS.cplx([2, 3])
    b_val = np.array([1 - 2j, np.inf + 1j, 0.5j], np.complex128)
    prefix = str(tmp_path / "model")
    with tf.Graph().as_default():
        a = tf.Variable(a_val, name="a")
        b = tf.Variable(b_val, name="b")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = saver.save(sess, prefix)
    with tf.Graph().as_default():
        a = tf.Variable(np.zeros([2, 3], np.complex64), name="a")
        b = tf.Variable(np.zeros([3], np.complex128), name="b")
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, path)
            got_a, got_b = sess.run([a, b])
    assert got_a.dtype == np.complex64 and got_b.dtype == np.complex128
    np.testing.assert_array_equal(got_a, a_val)
    np.testing.assert_array_equal(got_b, b_val)
    reader = tf.train.NewCheckpointReader(path)
    assert reader.get_variable_to_dtype_map() == {"a": tf.complex64, "b": tf.complex128}
    assert reader.get_variable_to_shape_map() == {"a": [2, 3], "b": [3]}


def test_complex_tensors_are_float_pairs_in_the_safetensors_shard(tmp_path):
    from zps.framework import checkpoint_format as cf
    z = TF_PROGRAMS.cplx([2, 3])
    path = str(tmp_path / "one.safetensors")
    cf.write_safetensors(path, {"z": z, "w": np.arange(2.0)})
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        data = f.read()
    assert header["z"]["dtype"] == "F32" and header["z"]["shape"] == [2, 3, 2]
    assert json.loads(header["__metadata__"][cf.COMPLEX_KEY]) == {"z": "complex64"}
    begin, end = header["z"]["data_offsets"]
    pairs = np.frombuffer(data[begin:end], "<f4").reshape(2, 3, 2)
    np.testing.assert_array_equal(pairs[..., 0], z.real)
    np.testing.assert_array_equal(pairs[..., 1], z.imag)
    shard = cf.SafetensorsFile(path)
    assert shard.dtype("z") == "complex64" and shard.shape("z") == [2, 3]
    np.testing.assert_array_equal(shard.read("z"), z)


def test_a_complex_marker_on_a_non_pair_tensor_is_corrupt(tmp_path):
    from zps.framework import checkpoint_format as cf
    from zps.framework import errors
    path = str(tmp_path / "bad.safetensors")
    cf.write_safetensors(path, {"w": np.arange(3.0, dtype=np.float32)},
                         metadata={cf.COMPLEX_KEY: json.dumps({"w": "complex64"})})
    with pytest.raises(errors.DataLossError, match="complex tensor 'w'"):
        cf.SafetensorsFile(path)


# -- the wire ------------------------------------------------------------------------------------
def test_complex_variable_on_a_ps_task_is_assigned_and_read_from_a_worker():
    value = TF_PROGRAMS.cplx([3, 4], np.complex128) * (1 + 1e-9j)
    with InProcessCluster({"ps": 1, "worker": 1}) as cluster:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(np.zeros([3, 4], np.complex128), name="v")
                w = tf.Variable(np.ones([4], np.complex64), name="w")
            with tf.device("/job:worker/task:0"):
                fed = tf.placeholder(tf.complex128, [3, 4])
                assign = tf.assign(v, fed * (2 - 1j))
                spectrum = tf.signal.fft(tf.cast(v, tf.complex64)) * w
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(assign, {fed: value})
                got_v, got_spectrum = sess.run([v, spectrum])
        assert "v" in cluster[("ps", 0)].resources.variables()
    assert got_v.dtype == np.complex128
    np.testing.assert_array_equal(got_v, value * (2 - 1j))
    np.testing.assert_allclose(got_spectrum, np.fft.fft(value * (2 - 1j), axis=-1), rtol=1e-5,
                               atol=1e-5)


def test_codec_carries_complex_tensors_bit_exact():
    from zps.transport import codec, protocol
    x = np.array([[1 + 2j, np.nan - 1j], [np.inf, -0.0j]], np.complex64)
    msg = codec.decode(codec.encode(protocol.REQUEST, 1, None, [x, x.astype(np.complex128)]))
    assert [t.dtype for t in msg.tensors] == [np.complex64, np.complex128]
    assert msg.tensors[0].tobytes() == x.tobytes()


def test_fixture_generator_is_in_sync():
    # make.py's programs are what the fixture holds (a renamed program would silently be skipped)
    names = set(_VALUE_NAMES) | set(_GRAD_NAMES)
    stored = {k.split("__")[0] for k in TF_VALUES.files}
    assert names == stored, sorted(names ^ stored)
    assert os.path.basename(TF_PROGRAMS.__file__) == "make.py"
