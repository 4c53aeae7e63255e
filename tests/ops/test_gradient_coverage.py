"""Every differentiable op in the registry has at least one finite-difference gradient case.

Each op family's test module defines ``GRAD_CASES`` (a list of zps.testing.GradCase) and runs them;
this test gathers them all and fails naming any differentiable op that no case exercises.
"""

import importlib
import pkgutil

import tests.ops
import zps  # noqa: F401 - registers every op
from zps.framework.registry import REGISTRY

# Ops whose gradient is covered by a dedicated test rather than a GradCase, with the reason.
EXEMPT = {
    "Placeholder": "not differentiable in itself (an input)",
    "RandomGamma": "a stateful draw: its gradient is checked by tests/ops/test_sparse_random_more.py"
                   "::test_gamma_gradient_is_the_implicit_reparameterization",
}


def _all_cases():
    cases = []
    for mod in pkgutil.iter_modules(tests.ops.__path__):
        if mod.name.startswith("test_"):
            module = importlib.import_module("tests.ops." + mod.name)
            cases.extend(getattr(module, "GRAD_CASES", []))
    return cases


def test_every_differentiable_op_has_a_gradient_case():
    covered = {c.op_type for c in _all_cases()}
    differentiable = {t for t, d in REGISTRY.items() if callable(d.grad_fn)}
    missing = sorted(differentiable - covered - set(EXEMPT))
    assert not missing, "Differentiable ops without a GradCase: %s" % ", ".join(missing)
