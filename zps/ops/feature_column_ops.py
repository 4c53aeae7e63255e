"""The transforms feature columns are made of: ``Bucketize``, ``VocabularyLookup`` and hashed
``SparseCross``.

Each runs on the host (ids are small integer work, and strings live only there). Bucket ids are
part of a trained model, so ``SparseCross`` and the out-of-vocabulary buckets of
``VocabularyLookup`` hash exactly as TF1 does (FarmHash ``Fingerprint64`` and
``FingerprintCat64``, zps/ops/fingerprint.py). None of them is differentiable: they make ids.

>>> import zps as tf
>>> from zps.ops import feature_column_ops
>>> with tf.Graph().as_default():
...     b = feature_column_ops.bucketize([[-1.0, 0.5, 3.0]], boundaries=[0.0, 1.0])
...     print(tf.Session().run(b).tolist())
[[0, 1, 2]]
"""

import functools
import itertools

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.graph import convert_to_tensor
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape
from zps.ops.fingerprint import fingerprint64, fingerprint_cat64
from zps.ops.op_util import make_op, same_shape
from zps.ops.sparse_ops import SparseTensor

_MASK = (1 << 64) - 1
DEFAULT_HASH_KEY = 0xDECAFCAFFE   # TF1's sparse_cross_hashed default (sparse_ops._DEFAULT_HASH_KEY)


# -- Bucketize ------------------------------------------------------------------------------------
def _bucketize_kernel(ctx, x, boundaries):
    # TF1 keeps boundaries as float32 and counts those <= x (std::upper_bound).
    edges = ctx.xp.asarray(np.asarray(boundaries, dtype=np.float32))
    return ctx.xp.searchsorted(edges, x, side="right").astype(np.int32)


register_op("Bucketize", dtype=lambda op: _dtypes.int32, shape=same_shape,
            kernel=_bucketize_kernel, grad=None)


def bucketize(input, boundaries, name=None):  # noqa: A002 - TF1's name
    """The bucket of each number: how many of the sorted ``boundaries`` are <= it (int32)."""
    boundaries = [float(b) for b in boundaries]
    if boundaries != sorted(boundaries):
        raise ValueError("bucketize: boundaries must be sorted, got %s" % boundaries)
    x = convert_to_tensor(input)
    if not (x.dtype.is_floating or x.dtype.is_integer):
        raise TypeError("bucketize: input must be numeric, got %s (%s)" % (x.dtype.name, x.name))
    return make_op("Bucketize", [x], name=name or "Bucketize", boundaries=tuple(boundaries))


# -- VocabularyLookup -----------------------------------------------------------------------------
@functools.lru_cache(maxsize=64)
def _vocabulary_index(vocabulary):
    return {key: i for i, key in enumerate(vocabulary)}


def _key_bytes(key):
    # TF1 hashes integer keys as their decimal strings (IdTableWithHashBuckets: as_string).
    return key if isinstance(key, bytes) else str(key).encode()


def _vocabulary_lookup_kernel(ctx, keys, vocabulary, default_value, num_oov_buckets):
    index = _vocabulary_index(vocabulary)
    size = len(vocabulary)
    out = np.empty(keys.size, dtype=np.int64)
    for i, key in enumerate(keys.ravel().tolist()):
        found = index.get(key)
        if found is not None:
            out[i] = found
        elif num_oov_buckets:
            out[i] = size + fingerprint64(_key_bytes(key)) % num_oov_buckets
        else:
            out[i] = default_value
    return out.reshape(keys.shape)


register_op("VocabularyLookup", dtype=lambda op: _dtypes.int64, shape=same_shape,
            kernel=_vocabulary_lookup_kernel, grad=None)


def vocabulary_lookup(keys, vocabulary, default_value=-1, num_oov_buckets=0, name=None):
    """The index of each key (strings or ints) in ``vocabulary``, as TF1's
    ``index_table_from_tensor(...).lookup``: a missing key gets ``default_value``, or, with
    ``num_oov_buckets``, ``len(vocabulary) + Fingerprint64(key) % num_oov_buckets``."""
    keys = convert_to_tensor(keys)
    if keys.dtype.base_dtype == _dtypes.string:
        vocabulary = tuple(v if isinstance(v, bytes) else str(v).encode() for v in vocabulary)
    elif keys.dtype.is_integer:
        vocabulary = tuple(int(v) for v in vocabulary)
    else:
        raise TypeError("vocabulary_lookup: keys must be strings or integers, got %s (%s)"
                        % (keys.dtype.name, keys.name))
    return make_op("VocabularyLookup", [keys], name=name or "VocabularyLookup",
                   vocabulary=vocabulary, default_value=int(default_value),
                   num_oov_buckets=int(num_oov_buckets))


# -- SparseCross (hashed) -------------------------------------------------------------------------
def _feature_fingerprints(values):
    """Each value as TF's crosser sees it: Fingerprint64 of a string, an int as its 64 bits."""
    if values.dtype == object:
        return [fingerprint64(v) for v in values.tolist()]
    return [int(v) & _MASK for v in values.astype(np.int64).tolist()]


def _rows_of_features(sparse, dense, features=_feature_fingerprints):
    """Per input, per batch row, the ``features`` of the row's values (the fingerprints TF's
    hashing crosser combines, by default); and the batch size."""
    batch = {int(shape[0]) for _, _, shape in sparse} | {int(d.shape[0]) for d in dense}
    if len(batch) != 1:
        raise errors.InvalidArgumentError(
            None, None, "SparseCross: all inputs must have the same batch size, got %s"
            % sorted(batch))
    batch = batch.pop()
    columns = []
    for indices, values, _ in sparse:
        rows = [[] for _ in range(batch)]
        for row, fp in zip(indices[:, 0].tolist(), features(values)):
            rows[row].append(fp)
        columns.append(rows)
    for d in dense:
        flat = features(d.reshape(-1))
        width = len(flat) // batch if batch else 0
        columns.append([flat[r * width:(r + 1) * width] for r in range(batch)])
    return columns, batch


def _sparse_cross_kernel(ctx, *inputs, num_sparse, num_buckets, hash_key):
    sparse = [inputs[3 * i:3 * i + 3] for i in range(num_sparse)]
    columns, batch = _rows_of_features(sparse, inputs[3 * num_sparse:])
    indices, values, width = [], [], 0
    for row in range(batch):
        crosses = 0
        for features in itertools.product(*(column[row] for column in columns)):
            h = hash_key
            for fp in features:
                h = fingerprint_cat64(h, fp)
            values.append(h % num_buckets)
            indices.append((row, crosses))
            crosses += 1
        width = max(width, crosses)
    return (np.array(indices, dtype=np.int64).reshape(-1, 2), np.array(values, dtype=np.int64),
            np.array([batch, width], dtype=np.int64))


register_op("SparseCross", dtype=lambda op: [_dtypes.int64, _dtypes.int64, _dtypes.int64],
            shape=lambda op: [TensorShape([None, 2]), TensorShape([None]), TensorShape([2])],
            kernel=_sparse_cross_kernel, num_outputs=3, grad=None)


def sparse_cross_hashed(inputs, num_buckets=0, hash_key=None, name=None):
    """The hashed cross of ``inputs`` (SparseTensors and dense ``[batch, k]`` tensors of strings
    or ints), TF1's ``tf.sparse.cross_hashed``: row ``r`` holds one id per combination of one
    feature from each input's row ``r`` (the last input varying fastest), the
    ``FingerprintCat64`` chain of the features from ``hash_key`` on, modulo ``num_buckets``
    (modulo 2**63 - 1 when ``num_buckets`` is 0)."""
    sparse = [t for t in inputs if isinstance(t, SparseTensor)]
    dense = [convert_to_tensor(t) for t in inputs if not isinstance(t, SparseTensor)]
    for t in [s.values for s in sparse] + dense:
        if not (t.dtype.base_dtype == _dtypes.string or t.dtype.is_integer):
            raise TypeError("sparse_cross_hashed: inputs must be strings or integers, got %s (%s)"
                            % (t.dtype.name, t.name))
    for t in dense:
        t.get_shape().with_rank(2)
    flat = [c for s in sparse for c in (s.indices, s.values, s.dense_shape)] + dense
    indices, values, shape = make_op(
        "SparseCross", flat, name=name or "SparseCross", num_sparse=len(sparse),
        num_buckets=int(num_buckets) or (1 << 63) - 1,
        hash_key=DEFAULT_HASH_KEY if hash_key is None else int(hash_key))
    return SparseTensor(indices, values, shape)
