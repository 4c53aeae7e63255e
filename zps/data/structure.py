"""Nested structures of dataset elements, by ``tf.data``'s rules: tuples (namedtuples too) and
dicts (flattened in sorted key order) are structure; everything else, lists included, is a leaf
(``from_tensor_slices([1, 2])`` has one component).

>>> flatten({"b": 1, "a": (2, 3)})
[2, 3, 1]
>>> pack({"b": None, "a": (None, None)}, [2, 3, 1])
{'b': 1, 'a': (2, 3)}
"""


def flatten(value):
    """The leaves of ``value``, in order."""
    if isinstance(value, dict):
        return [x for k in sorted(value) for x in flatten(value[k])]
    if isinstance(value, tuple):
        return [x for v in value for x in flatten(v)]
    return [value]


def pack(structure, leaves):
    """``structure`` with its leaves replaced, in order, by ``leaves``."""
    leaves = list(leaves)
    if len(leaves) != len(flatten(structure)):
        raise ValueError("Structure %s has %d components, but %d values were given"
                         % (describe(structure), len(flatten(structure)), len(leaves)))
    it = iter(leaves)
    return _pack(structure, it)


def _pack(structure, it):
    if isinstance(structure, dict):
        packed = {k: _pack(structure[k], it) for k in sorted(structure)}
        return type(structure)((k, packed[k]) for k in structure)   # the caller's key order
    if isinstance(structure, tuple):
        items = [_pack(v, it) for v in structure]
        return type(structure)(*items) if hasattr(structure, "_fields") else tuple(items)
    return next(it)


def map_structure(fn, structure):
    """``structure`` with ``fn`` applied to each leaf."""
    return pack(structure, [fn(x) for x in flatten(structure)])


def same_structure(a, b):
    """Whether ``a`` and ``b`` nest the same containers the same way (leaves may differ)."""
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and sorted(a) == sorted(b) and \
            all(same_structure(a[k], b[k]) for k in a)
    if isinstance(a, tuple) or isinstance(b, tuple):
        return isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) and \
            all(same_structure(x, y) for x, y in zip(a, b))
    return True


def describe(structure):
    """The structure as a short string, leaves shown as ``.``."""
    if isinstance(structure, dict):
        return "{%s}" % ", ".join("%r: %s" % (k, describe(structure[k])) for k in sorted(structure))
    if isinstance(structure, tuple):
        inner = ", ".join(describe(v) for v in structure)
        return "(%s)" % (inner + "," if len(structure) == 1 else inner)
    return "."
