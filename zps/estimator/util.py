"""What the estimator modules share."""

import inspect


def fn_args(fn):
    """The names of ``fn``'s named parameters (bound and ``functools.partial``-bound ones
    excluded), as TF1's ``function_utils.fn_args`` gives them."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return ()
    return tuple(name for name, p in params.items()
                 if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))
