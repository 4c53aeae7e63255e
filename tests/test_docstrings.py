"""The examples in zps's docstrings (``>>>``) run and print what they say."""

import doctest
import importlib
import pkgutil

import pytest

import zps

MODULES = sorted(m.name for m in pkgutil.walk_packages(zps.__path__, "zps."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in finder.find(module, name):
        if test.filename and not test.filename.startswith(module.__file__.rsplit("/", 1)[0]):
            continue   # an object imported from elsewhere: tested with its own module
        runner.run(test)
    failed, attempted = runner.summarize(verbose=False)
    assert failed == 0, "%d of %d docstring examples of %s failed (printed above)" % (
        failed, attempted, name)
