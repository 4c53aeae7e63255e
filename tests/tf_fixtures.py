"""Reference programs run in TensorFlow and on zps: ``tests/fixtures/<name>/make.py`` defines
them (``value_programs(tf)``, ``grad_programs(tf)``, ``gradients(tf, build, values)``) and, run
with TensorFlow, writes its results to ``expected.npz`` beside it."""

import importlib.util
import pathlib

import numpy as np

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"


def load(name):
    """``(the make.py module of fixture name, its expected.npz)``."""
    path = FIXTURES / name / "make.py"
    spec = importlib.util.spec_from_file_location("make_" + name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, np.load(path.parent / "expected.npz")


def assert_matches(got, expected, what, tol32, tol=None):
    """``got`` has TF's dtype and shape and its values within ``tol`` (default 1e-12 for 64-bit
    types, ``tol32`` for the others; absolute tolerance ten times that)."""
    got = np.asarray(got)
    assert got.dtype == expected.dtype, (what, got.dtype, expected.dtype)
    assert got.shape == expected.shape, (what, got.shape, expected.shape)
    if tol is None:
        tol = 1e-12 if expected.dtype in (np.float64, np.complex128) else tol32
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * 10, err_msg=str(what))
