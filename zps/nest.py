"""``tf.nest``: nested structures of lists, tuples (namedtuples too) and dicts, as TF's nest.

Dicts are walked in sorted key order (TF's rule), so ``flatten`` and ``pack_sequence_as``
agree whatever order a dict was built in; strings, arrays, tensors and None are leaves.

>>> import zps as tf
>>> tf.nest.flatten({"b": [1, 2], "a": (3, None)})
[3, None, 1, 2]
>>> tf.nest.map_structure(lambda x: x * 10, {"b": [1, 2], "a": 3})
{'b': [10, 20], 'a': 30}
"""

import collections.abc


def is_nested(seq):
    """True for a list, tuple or mapping (the structures nest walks into)."""
    return isinstance(seq, list | tuple | collections.abc.Mapping)


def _children(seq):
    if isinstance(seq, collections.abc.Mapping):
        return [seq[k] for k in _sorted_keys(seq)]
    return list(seq)


def _sorted_keys(mapping):
    try:
        return sorted(mapping)
    except TypeError:
        raise TypeError("nest only supports dicts with sortable keys, got keys %r"
                        % list(mapping)) from None


def flatten(structure, expand_composites=False):
    """The leaves of ``structure`` in order (a leaf alone gives ``[leaf]``)."""
    if not is_nested(structure):
        return [structure]
    out = []
    for child in _children(structure):
        out.extend(flatten(child))
    return out


def _rebuild(structure, values):
    """A structure of ``structure``'s type holding ``values`` (its children's new values)."""
    if isinstance(structure, collections.abc.Mapping):
        by_key = dict(zip(_sorted_keys(structure), values))
        return type(structure)((k, by_key[k]) for k in structure)
    if isinstance(structure, tuple) and hasattr(structure, "_fields"):   # namedtuple
        return type(structure)(*values)
    return type(structure)(values)


def _pack(structure, flat, at):
    if not is_nested(structure):
        return flat[at], at + 1
    values = []
    for child in _children(structure):
        value, at = _pack(child, flat, at)
        values.append(value)
    return _rebuild(structure, values), at


def pack_sequence_as(structure, flat_sequence, expand_composites=False):
    """``flat_sequence`` arranged as ``structure`` (the inverse of ``flatten``)."""
    if not is_nested(flat_sequence):
        raise TypeError("Attempted to pack value:\n  %r\ninto a structure, but found incompatible "
                        "type `%s` instead." % (flat_sequence, type(flat_sequence).__name__))
    flat = list(flat_sequence)
    n = len(flatten(structure))
    if n != len(flat):
        raise ValueError("Could not pack sequence. Structure had %d atoms, but flat_sequence had "
                         "%d items.  Structure: %r, flat_sequence: %r."
                         % (n, len(flat), structure, flat_sequence))
    if not is_nested(structure):
        return flat[0]
    return _pack(structure, flat, 0)[0]


def assert_same_structure(nest1, nest2, check_types=True, expand_composites=False):
    """ValueError unless both nest the same way (TypeError, with ``check_types``, where one has
    a list and the other a tuple, or two different namedtuple or mapping types)."""
    def walk(a, b):
        if is_nested(a) != is_nested(b):
            raise ValueError("The two structures don't have the same nested structure.\n\nFirst "
                             "structure: %r\n\nSecond structure: %r" % (nest1, nest2))
        if not is_nested(a):
            return
        if check_types and type(a) is not type(b):
            raise TypeError("The two structures don't have the same sequence type. Input "
                            "structure has type %s, while shallow structure has type %s."
                            % (type(a), type(b)))
        if isinstance(a, collections.abc.Mapping) and set(a) != set(b):
            raise ValueError("The two dictionaries don't have the same set of keys. First "
                             "structure has keys %s, while second structure has keys %s."
                             % (list(a), list(b)))
        if len(a) != len(b):
            raise ValueError("The two structures don't have the same nested structure.\n\nFirst "
                             "structure: %r\n\nSecond structure: %r" % (nest1, nest2))
        for x, y in zip(_children(a), _children(b)):
            walk(x, y)
    walk(nest1, nest2)


def map_structure(func, *structure, check_types=True, expand_composites=False):
    """``func`` applied to the leaves of the structures (which must nest alike), packed as the
    first one."""
    if not structure:
        raise ValueError("Must provide at least one structure")
    for other in structure[1:]:
        assert_same_structure(structure[0], other, check_types=check_types)
    leaves = [flatten(s) for s in structure]
    return pack_sequence_as(structure[0], [func(*args) for args in zip(*leaves)])


__all__ = ["assert_same_structure", "flatten", "is_nested", "map_structure", "pack_sequence_as"]
