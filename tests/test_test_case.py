"""tf.test: a TestCase subclass run with unittest inside each test, tf.test.main in a subprocess."""

import os
import subprocess
import sys
import textwrap
import unittest
import unittest.mock
from pathlib import Path

import numpy as np
import pytest

import zps as tf
from zps.framework import device

REPO = Path(__file__).resolve().parent.parent


def _run(case_class):
    """Run a TestCase class with unittest; ``{test name: None or the failure's text}``."""
    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(case_class).run(result)
    outcome = {t.id().rsplit(".", 1)[1]: None for t in
               unittest.defaultTestLoader.loadTestsFromTestCase(case_class)}
    for test, text in result.failures + result.errors:
        outcome[test.id().rsplit(".", 1)[1]] = text
    assert [t.id().rsplit(".", 1)[1] for t, _ in result.skipped] == ["test_session"]
    del outcome["test_session"]
    return outcome


def test_sessions_graphs_and_evaluate():
    seen = {}

    class Case(tf.test.TestCase):
        def test_fresh_graph_and_session(self):
            assert tf.get_default_graph().get_operations() == []
            x = tf.constant([1.0, 2.0])
            with self.session() as sess:
                assert sess.graph is tf.get_default_graph()
                self.assertAllClose(sess.run(x * 2), [2.0, 4.0])
                self.assertAllClose(x * 3, [3.0, 6.0])     # a Tensor is evaluated

        def test_cached_session_is_one_per_test(self):
            with self.cached_session() as a:
                pass
            with self.cached_session() as b, self.test_session() as c:
                assert a is b is c
            seen["cached"] = a
            with self.assertRaisesRegex(ValueError, "other graph/config/force_gpu"):
                with self.cached_session(graph=tf.Graph()):
                    pass

        def test_evaluate_without_a_session(self):
            v = tf.Variable(3.0)
            self.evaluate(tf.global_variables_initializer())
            self.assertEqual(self.evaluate({"v": v + 1})["v"], 4.0)

        def test_test_session_with_a_graph_is_new(self):
            g = tf.Graph()
            with g.as_default():
                y = tf.constant(5)
            with self.test_session(graph=g) as sess:
                assert sess.graph is g and sess is not self._cached
                self.assertAllEqual(sess.run(y), 5)

        def test_random_ops_are_seeded_the_same_in_each_test_a(self):
            seen["a"] = self.evaluate(tf.random_uniform([3]))

        def test_random_ops_are_seeded_the_same_in_each_test_b(self):
            seen["b"] = self.evaluate(tf.random_uniform([3]))

        def test_temp_dir(self):
            d = self.get_temp_dir()
            assert os.path.isdir(d) and d == self.get_temp_dir()
            assert d.startswith(tf.test.get_temp_dir())

    assert _run(Case) == dict.fromkeys(_run(Case))
    assert seen["cached"]._closed
    np.testing.assert_array_equal(seen["a"], seen["b"])


def test_assertions_pass_and_fail():
    class Case(tf.test.TestCase):
        def test_passing(self):
            self.assertAllClose({"a": [1.0, 2.0], "b": (np.ones(2), 3.0)},
                                {"a": np.array([1.0, 2.0 + 1e-7]), "b": [np.ones(2), 3.0]})
            self.assertAllClose(1.0, 1.05, atol=0.1)
            self.assertNotAllClose([1.0], [2.0])
            self.assertAllEqual([[1, 2]], np.array([[1, 2]]))
            self.assertAllEqual([np.nan, 1.0], [np.nan, 1.0])
            self.assertNear(1.0, 1.001, 0.01)
            self.assertNear(float("inf"), float("inf"), 0.0)
            self.assertArrayNear([1.0, 2.0], [1.001, 1.999], 0.01)
            self.assertShapeEqual(np.zeros([2, 3]), tf.placeholder(tf.float32, [2, 3]))
            self.assertAllInRange([0.0, 0.5, 1.0], 0.0, 1.0)
            with self.assertRaisesOpError("must be greater"):
                self.evaluate(tf.assert_greater(1, 2, message="must be greater"))
            with self.assertRaisesOpError(lambda e: isinstance(e, tf.errors.InvalidArgumentError)):
                self.evaluate(tf.assert_greater(1, 2))

        def test_close_fails(self):
            self.assertAllClose([1.0, 2.0], [1.0, 2.1])

        def test_shape_fails(self):
            self.assertAllClose([1.0, 2.0], [[1.0, 2.0]])

        def test_nested_fails(self):
            self.assertAllClose({"a": [np.ones(2), 1.0]}, {"a": [np.ones(2), 2.0]})

        def test_equal_fails(self):
            self.assertAllEqual([1, 2], [1, 3])

        def test_near_fails(self):
            self.assertNear(1.0, 1.1, 0.01, msg="why")

        def test_range_fails(self):
            self.assertAllInRange([0.0, 1.0], 0.0, 1.0, open_upper_bound=True)

        def test_shape_equal_fails(self):
            self.assertShapeEqual(np.zeros([2]), tf.placeholder(tf.float32, [3]))

        def test_not_all_close_fails(self):
            self.assertNotAllClose([1.0], [1.0])

    out = _run(Case)
    assert out.pop("test_passing") is None
    expected = {
        "test_close_fails": "Mismatched value: a is different from b",
        "test_shape_fails": "Shape mismatch: expected (2,), got (1, 2)",
        "test_nested_fails": "Mismatched value: a['a'][1] is different from b['a'][1]",
        "test_equal_fails": "Mismatched elements: 1 / 2",
        "test_near_fails": "1.000000 != 1.100000 +/- 0.010000 (why)",
        "test_range_fails": "1 of the 2 element(s) are outside the range [0.0, 1.0)",
        "test_shape_equal_fails": "Shape mismatch: expected (1,), got (1,)",
        "test_not_all_close_fails": "The two values are close at all elements",
    }
    for name, text in expected.items():
        assert out[name] is not None and "AssertionError" in out[name], name
        if name != "test_shape_equal_fails":
            assert text in out[name], out[name]


def test_gradients_and_gpu():
    class Case(tf.test.TestCase):
        def test_gradient(self):
            x = tf.placeholder(tf.float64, [3])
            y = tf.square(x)
            with self.cached_session():
                theoretical, numerical = tf.test.compute_gradient(
                    x, [3], y, [3], x_init_value=np.array([1.0, 2.0, 3.0]))
                self.assertAllClose(theoretical, np.diag([2.0, 4.0, 6.0]), atol=1e-6)
                self.assertAllClose(numerical, theoretical, atol=1e-4)
                self.assertLess(tf.test.compute_gradient_error(x, [3], y, [3]), 1e-4)

    assert _run(Case) == {"test_gradient": None}
    assert tf.test.mock is unittest.mock
    available = device.visible_gpu_count() > 0
    assert tf.test.is_gpu_available() is available
    assert tf.test.gpu_device_name() == ("/device:GPU:0" if available else "")


@pytest.mark.parametrize("body, code, tail", [
    ("self.assertAllEqual(self.evaluate(tf.add(1, FLAGS.k)), 3)", 0, "OK (skipped=1)\n"),
    ("self.assertAllEqual(self.evaluate(tf.add(1, FLAGS.k)), 4)", 1, "FAILED (failures=1, skipped=1)\n"),
])
def test_main_parses_flags_and_runs_the_tests(tmp_path, body, code, tail):
    script = tmp_path / "some_test.py"
    script.write_text(textwrap.dedent('''
        import zps as tf
        tf.flags.DEFINE_integer("k", 0, "a number")
        FLAGS = tf.flags.FLAGS

        class T(tf.test.TestCase):
            def test_it(self):
                %s

        if __name__ == "__main__":
            tf.test.main()
    ''') % body)
    proc = subprocess.run([sys.executable, str(script), "--k=2", "-v"], capture_output=True,
                          text=True, timeout=60, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.returncode == code and proc.stderr.endswith(tail), proc.stderr
    assert "test_it (__main__.T" in proc.stderr   # -v reached unittest
