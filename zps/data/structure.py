"""Nested structures of dataset elements, by ``tf.data``'s rules: tuples (namedtuples too) and
dicts (flattened in sorted key order) are structure; everything else, lists included, is a leaf
(``from_tensor_slices([1, 2])`` has one component), and so is a ``SparseTensorValue``.

>>> flatten({"b": 1, "a": (2, 3)})
[2, 3, 1]
>>> pack({"b": None, "a": (None, None)}, [2, 3, 1])
{'b': 1, 'a': (2, 3)}

A component is a Tensor or a SparseTensor (its class, ``output_classes``). Pipelines and
iterators carry plain tensors only: a SparseTensor travels as its three dense tensors
(``indices``, ``values``, ``dense_shape``), taken apart by ``plain`` and put together again by
``components`` (TF's "normalized" representation, without the variant tensor).

>>> from zps.framework.tensor_shape import TensorShape
>>> from zps.ops.sparse_ops import SparseTensor
>>> types, shapes = plain_specs(["float32"], [TensorShape([None, 3])], [SparseTensor])
>>> [t.name for t in types], shapes
(['int64', 'float32', 'int64'], [TensorShape([None, 2]), TensorShape([None]), TensorShape([2])])
"""

from zps.framework import dtypes as _dtypes
from zps.framework.graph import Tensor
from zps.framework.tensor_shape import TensorShape
from zps.ops.sparse_ops import SparseTensor, SparseTensorValue, _sparse_out, _sparse_shapes


def _is_structure(value):
    return isinstance(value, tuple) and not isinstance(value, SparseTensorValue)


def is_nested(value):
    """Whether ``value`` is a structure (a tuple or dict), not a leaf."""
    return isinstance(value, dict) or _is_structure(value)


def flatten(value):
    """The leaves of ``value``, in order."""
    if isinstance(value, dict):
        return [x for k in sorted(value) for x in flatten(value[k])]
    if _is_structure(value):
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
    if _is_structure(structure):
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
    if _is_structure(a) or _is_structure(b):
        return _is_structure(a) and _is_structure(b) and len(a) == len(b) and \
            all(same_structure(x, y) for x, y in zip(a, b))
    return True


def describe(structure):
    """The structure as a short string, leaves shown as ``.``."""
    if isinstance(structure, dict):
        return "{%s}" % ", ".join("%r: %s" % (k, describe(structure[k])) for k in sorted(structure))
    if _is_structure(structure):
        inner = ", ".join(describe(v) for v in structure)
        return "(%s)" % (inner + "," if len(structure) == 1 else inner)
    return "."


# -- components: Tensors and SparseTensors, carried as plain tensors -------------------------------
def is_sparse(value):
    """Whether ``value`` is a sparse component (a SparseTensor or a SparseTensorValue)."""
    return isinstance(value, SparseTensor | SparseTensorValue)


def specs(leaves):
    """(dtypes, static shapes, classes) of components (Tensors and SparseTensors)."""
    return ([v.dtype.base_dtype for v in leaves], [v.get_shape() for v in leaves],
            [SparseTensor if isinstance(v, SparseTensor) else Tensor for v in leaves])


def plain(leaves):
    """The plain tensors carrying components: a SparseTensor's indices, values, dense_shape."""
    return [t for v in leaves for t in ([v.indices, v.values, v.dense_shape]
                                        if isinstance(v, SparseTensor) else [v])]


def plain_specs(types, shapes, classes):
    """(dtypes, static shapes) of the plain tensors carrying components of these specs."""
    out_types, out_shapes = [], []
    for dtype, shape, cls in zip(types, shapes, classes):
        if cls is SparseTensor:
            out_types += [_dtypes.int64, _dtypes.as_dtype(dtype), _dtypes.int64]
            out_shapes += _sparse_shapes(TensorShape(shape).ndims)
        else:
            out_types.append(_dtypes.as_dtype(dtype))
            out_shapes.append(TensorShape(shape))
    return out_types, out_shapes


def components(tensors, shapes, classes):
    """The components carried by the plain ``tensors``: each SparseTensor rebuilt from its three,
    knowing its static dense shape from ``shapes``."""
    it, out = iter(tensors), []
    for shape, cls in zip(shapes, classes):
        if cls is SparseTensor:
            out.append(_sparse_out(next(it), next(it), next(it), TensorShape(shape)))
        else:
            out.append(next(it))
    return out


# -- element_spec: TF's TypeSpecs of components ---------------------------------------------------
class TensorSpec:
    """The type of a dense component: its static ``shape`` and ``dtype`` (``tf.TensorSpec``).

    >>> import zps as tf
    >>> tf.TensorSpec([None, 3], tf.float32)
    TensorSpec(shape=(?, 3), dtype=tf.float32, name=None)
    """

    def __init__(self, shape, dtype=_dtypes.float32, name=None):
        self._shape = TensorShape(shape)
        self._dtype = _dtypes.as_dtype(dtype)
        self._name = name

    shape = property(lambda self: self._shape, doc="The static TensorShape.")
    dtype = property(lambda self: self._dtype, doc="The DType.")
    name = property(lambda self: self._name, doc="The name (None for a dataset's component).")

    def is_compatible_with(self, other):
        """Whether ``other`` (a TensorSpec or a Tensor) has this dtype and a compatible shape."""
        return self._dtype == other.dtype.base_dtype and \
            self._shape.is_compatible_with(other.shape if isinstance(other, TensorSpec)
                                           else other.get_shape())

    def _key(self):
        return (type(self), self._dtype, self._shape.as_list() if self._shape.ndims is not None
                else None, self._name)

    def __eq__(self, other):
        return isinstance(other, TensorSpec) and self._key() == other._key()

    def __hash__(self):
        return hash(repr(self))

    def __repr__(self):
        return "TensorSpec(shape=%s, dtype=%r, name=%r)" % (self._shape, self._dtype, self._name)


class SparseTensorSpec(TensorSpec):
    """The type of a sparse component: its dense ``shape`` and its values' ``dtype``."""

    def __init__(self, shape=None, dtype=_dtypes.float32):
        super().__init__(TensorShape(shape), dtype)

    def __repr__(self):
        return "SparseTensorSpec(%r, %r)" % (self._shape, self._dtype)


class DatasetSpec:
    """The type of a component that is itself a dataset (``Dataset.window``'s elements):
    ``element_spec``, the nested dataset's."""

    def __init__(self, element_spec, dataset_shape=()):
        self._element_spec = element_spec
        self._dataset_shape = TensorShape(dataset_shape)

    element_spec = property(lambda self: self._element_spec, doc="The nested dataset's.")

    def __eq__(self, other):
        return isinstance(other, DatasetSpec) and repr(self) == repr(other)

    def __hash__(self):
        return hash(repr(self))

    def __repr__(self):
        return "DatasetSpec(%r, %r)" % (self._element_spec, self._dataset_shape)


def spec(dtype, shape, cls):
    """A component's TypeSpec from its dtype, static shape and class."""
    return SparseTensorSpec(shape, dtype) if cls is SparseTensor else TensorSpec(shape, dtype)


def sparse_flags(classes):
    """Which components are sparse (a pipeline node's ``sparse`` attr: see dataset_ops)."""
    return [cls is SparseTensor for cls in classes]
