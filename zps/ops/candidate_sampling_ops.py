"""Candidate sampling and the sampled losses: ``tf.nn.nce_loss``, ``tf.nn.sampled_softmax_loss``.

A sampler draws ``num_sampled`` class ids (int64) from a fixed distribution over
``[0, range_max)`` and says how often it expects to draw each true class and each sampled one
(``1 - (1 - p) ** tries`` when the draws are unique and needed ``tries`` tries, else
``p * num_sampled``), TF1's ``(sampled_candidates, true_expected_count,
sampled_expected_count)``. Samplers are random ops with TF1's seed rules (random_ops.get_seed);
like TF1's, they and ``compute_accidental_hits`` run on the CPU.

The sampled losses look the true and sampled classes' rows up in ``weights`` and ``biases`` with
``embedding_lookup``: the weights may be one table, a list of shards or a PartitionedVariable
(``partition_strategy`` "mod" or "div"), and their gradients stay IndexedSlices of the rows used.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     w = tf.Variable(tf.ones([10, 3]))
...     b = tf.Variable(tf.zeros([10]))
...     loss = tf.nn.nce_loss(w, b, labels=[[1], [2]], inputs=tf.ones([2, 3]), num_sampled=4,
...                           num_classes=10)
...     sess = tf.Session()
...     sess.run(tf.global_variables_initializer())
...     print(sess.run(loss).shape)
(2,)
"""

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.graph import convert_to_tensor, get_default_graph
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape
from zps.ops import array_ops, embedding_ops, math_ops, nn_ops
from zps.ops.op_util import make_op
from zps.ops.random_ops import _generator, _seed_attrs

_FLT_MAX = float(np.finfo(np.float32).max)


# -- the distributions (TF1's range samplers) ----------------------------------------------------
def _log_uniform(range_max, **_):
    """P(c) = log((c + 2) / (c + 1)) / log(range_max + 1): Zipf-like, for ids sorted by
    decreasing frequency. Drawn as TF1 draws it: ``int(exp(u * log(range_max + 1)) - 1)``."""
    log_range = np.log(range_max + 1.0)

    def probability(c):
        c = c.astype(np.float64)
        return (np.log(c + 2.0) - np.log(c + 1.0)) / log_range

    def draw(gen, n):
        return (np.exp(gen.random(n) * log_range) - 1.0).astype(np.int64) % range_max
    return probability, draw


def _uniform(range_max, **_):
    def probability(c):
        return np.full(c.shape, 1.0 / range_max)

    def draw(gen, n):
        return gen.integers(0, range_max, size=n, dtype=np.int64)
    return probability, draw


def _fixed_unigram(range_max, unigrams, vocab_file, distortion, num_reserved_ids, num_shards,
                   shard):
    """P(c) proportional to ``unigrams[c - num_reserved_ids] ** distortion`` (0 for reserved ids
    and for ids of other shards: ``c % num_shards != shard``)."""
    counts = list(unigrams) if unigrams else _vocab_counts(vocab_file)
    weights = np.zeros(num_reserved_ids + len(counts))
    weights[num_reserved_ids:] = np.power(np.asarray(counts, np.float64), distortion)
    weights[np.arange(weights.size) % num_shards != shard] = 0.0
    if weights.size != range_max:
        raise errors.InvalidArgumentError(
            None, None, "fixed_unigram_candidate_sampler: range_max (%d) must be the number of "
            "reserved ids plus the number of unigrams (%d)" % (range_max, weights.size))
    probabilities = weights / weights.sum()
    cdf = np.cumsum(probabilities)

    def probability(c):
        return probabilities[c]

    def draw(gen, n):
        return np.minimum(np.searchsorted(cdf, gen.random(n) * cdf[-1], side="right"),
                          range_max - 1).astype(np.int64)
    return probability, draw


def _vocab_counts(vocab_file):
    # TF1's format: one "word,count" line per id (the count is the last field)
    with open(vocab_file) as f:
        return [float(line.rstrip("\n").split(",")[-1]) for line in f if line.strip()]


_DISTRIBUTIONS = {"LogUniformCandidateSampler": _log_uniform,
                  "UniformCandidateSampler": _uniform,
                  "FixedUnigramCandidateSampler": _fixed_unigram}


def _expected_count(p, num_sampled, num_tries):
    if num_tries == num_sampled:
        return p * num_sampled
    return -np.expm1(num_tries * np.log1p(-p))


def _sampler_kernel(op_type):
    def kernel(ctx, true_classes, num_true, num_sampled, unique, range_max, seed, seed2, op_name,
               **distribution_attrs):
        true_classes = np.asarray(true_classes)
        if true_classes.ndim != 2 or true_classes.shape[1] != num_true:
            raise errors.InvalidArgumentError(
                None, None, "true_classes must be a matrix [batch_size, num_true=%d], got shape "
                "%s" % (num_true, list(true_classes.shape)))
        if unique and num_sampled > range_max:
            raise errors.InvalidArgumentError(
                None, None, "Sampler's range is too small: cannot draw %d unique candidates from "
                "range_max=%d" % (num_sampled, range_max))
        probability, draw = _DISTRIBUTIONS[op_type](range_max, **distribution_attrs)
        gen = _generator(ctx, op_name, seed, seed2)
        if unique:
            picked, seen, num_tries = [], set(), 0
            while len(picked) < num_sampled:   # batches of draws, kept in order until enough
                values = draw(gen, max(2 * (num_sampled - len(picked)), 16))
                for v in values.tolist():
                    num_tries += 1
                    if v not in seen:
                        seen.add(v)
                        picked.append(v)
                        if len(picked) == num_sampled:
                            break
            sampled = np.asarray(picked, np.int64)
        else:
            sampled = draw(gen, num_sampled)
            num_tries = num_sampled
        true_expected = _expected_count(probability(true_classes.astype(np.int64)), num_sampled,
                                        num_tries)
        sampled_expected = _expected_count(probability(sampled), num_sampled, num_tries)
        return [sampled, true_expected.astype(np.float32), sampled_expected.astype(np.float32)]
    return kernel


def _sampler_shape(op):
    shape = op.inputs[0].get_shape()
    batch = shape.as_list()[0] if shape.ndims else None
    return [TensorShape([op._attrs["num_sampled"]]),
            TensorShape([batch, op._attrs["num_true"]]),
            TensorShape([op._attrs["num_sampled"]])]


for _op_type in _DISTRIBUTIONS:
    register_op(_op_type, dtype=lambda op: [_dtypes.int64, _dtypes.float32, _dtypes.float32],
                shape=_sampler_shape, kernel=_sampler_kernel(_op_type), num_outputs=3,
                stateful=True, needs_op_name=True, grad=None)


def _sample(op_type, true_classes, num_true, num_sampled, unique, range_max, seed, name,
            **distribution_attrs):
    if range_max <= 0 or num_sampled <= 0 or num_true <= 0:
        raise ValueError("%s: num_true, num_sampled and range_max must be positive, got %d, %d "
                         "and %d" % (name, num_true, num_sampled, range_max))
    true_classes = convert_to_tensor(true_classes, dtype=_dtypes.int64, name="true_classes")
    if true_classes.dtype != _dtypes.int64:
        raise TypeError("%s: true_classes must be int64, got %s" % (name, true_classes.dtype.name))
    return tuple(make_op(op_type, [true_classes], name=name, num_outputs=3, num_true=int(num_true),
                         num_sampled=int(num_sampled), unique=bool(unique),
                         range_max=int(range_max), **distribution_attrs, **_seed_attrs(seed)))


def log_uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                  seed=None, name=None):
    """Sample ``num_sampled`` classes from the log-uniform (Zipfian) distribution over
    ``[0, range_max)``: ``(sampled_candidates, true_expected_count, sampled_expected_count)``.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     s, t, e = tf.nn.log_uniform_candidate_sampler([[0], [3]], 1, 5, True, 100, seed=1)
    ...     s, t, e = tf.Session().run([s, t, e])
    >>> s.shape, t.shape, len(set(s.tolist()))
    ((5,), (2, 1), 5)
    """
    return _sample("LogUniformCandidateSampler", true_classes, num_true, num_sampled, unique,
                   range_max, seed, name or "LogUniformCandidateSampler")


def uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max, seed=None,
                              name=None):
    """Sample ``num_sampled`` classes uniformly from ``[0, range_max)`` (see
    log_uniform_candidate_sampler)."""
    return _sample("UniformCandidateSampler", true_classes, num_true, num_sampled, unique,
                   range_max, seed, name or "UniformCandidateSampler")


def fixed_unigram_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                    vocab_file="", distortion=1.0, num_reserved_ids=0,
                                    num_shards=1, shard=0, unigrams=(), seed=None, name=None):
    """Sample ``num_sampled`` classes with probabilities proportional to ``unigrams`` (or the
    counts of ``vocab_file``, "word,count" lines) raised to ``distortion``, after
    ``num_reserved_ids`` ids that are never drawn; with ``num_shards``, only the ids of
    ``shard`` (``id % num_shards == shard``) are drawn. See log_uniform_candidate_sampler."""
    if not vocab_file and not len(unigrams):
        raise ValueError("fixed_unigram_candidate_sampler needs either vocab_file or unigrams")
    if vocab_file and len(unigrams):
        raise ValueError("fixed_unigram_candidate_sampler takes vocab_file or unigrams, not both")
    return _sample("FixedUnigramCandidateSampler", true_classes, num_true, num_sampled, unique,
                   range_max, seed, name or "FixedUnigramCandidateSampler",
                   vocab_file=vocab_file, distortion=float(distortion),
                   num_reserved_ids=int(num_reserved_ids), num_shards=int(num_shards),
                   shard=int(shard), unigrams=[float(u) for u in unigrams])


# -- ComputeAccidentalHits -----------------------------------------------------------------------
def _accidental_hits_kernel(ctx, true_classes, sampled_candidates, num_true):
    true_classes = np.asarray(true_classes)
    if true_classes.ndim != 2 or true_classes.shape[1] != num_true:
        raise errors.InvalidArgumentError(
            None, None, "true_classes must be a matrix [batch_size, num_true=%d], got shape %s"
            % (num_true, list(true_classes.shape)))
    # As TF1: a sampled id drawn twice is found at its last position only.
    position = {int(c): j for j, c in enumerate(np.asarray(sampled_candidates).tolist())}
    hits = [(i, position[c]) for i, row in enumerate(true_classes.tolist()) for c in row
            if c in position]
    rows = np.asarray([i for i, _ in hits], np.int32)
    ids = np.asarray([j for _, j in hits], np.int64)
    return [rows, ids, np.full(len(hits), -_FLT_MAX, np.float32)]


register_op("ComputeAccidentalHits",
            dtype=lambda op: [_dtypes.int32, _dtypes.int64, _dtypes.float32],
            shape=lambda op: [TensorShape([None])] * 3, kernel=_accidental_hits_kernel,
            num_outputs=3, grad=None)


def compute_accidental_hits(true_classes, sampled_candidates, num_true, seed=None, name=None):
    """Where a sampled candidate is one of a row's true classes: ``(indices, ids, weights)``,
    the row, the position in ``sampled_candidates`` and ``-FLT_MAX`` of each hit (to add to the
    sampled logits, which masks them out).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     hits = tf.nn.compute_accidental_hits([[1], [4]], [4, 0, 1], num_true=1)
    ...     rows, ids, _ = tf.Session().run(hits)
    >>> rows.tolist(), ids.tolist()
    ([0, 1], [2, 0])
    """
    true_classes = convert_to_tensor(true_classes, dtype=_dtypes.int64, name="true_classes")
    sampled_candidates = convert_to_tensor(sampled_candidates, dtype=_dtypes.int64,
                                           name="sampled_candidates")
    return tuple(make_op("ComputeAccidentalHits", [true_classes, sampled_candidates],
                         name=name or "ComputeAccidentalHits", num_outputs=3,
                         num_true=int(num_true)))


# -- the sampled losses --------------------------------------------------------------------------
def _compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes, num_true,
                            sampled_values, subtract_log_q, remove_accidental_hits,
                            partition_strategy, name, seed=None):
    """TF1's logits ``[batch, num_true + num_sampled]`` of the true then the sampled classes,
    and their labels (``1 / num_true`` for the true ones, 0 for the sampled)."""
    graph = get_default_graph()
    with graph.name_scope(name or "compute_sampled_logits"):
        inputs = convert_to_tensor(inputs, name="inputs")
        labels = math_ops.cast(convert_to_tensor(labels, name="labels"), _dtypes.int64)
        labels_flat = array_ops.reshape(labels, [-1])
        if sampled_values is None:
            sampled_values = log_uniform_candidate_sampler(
                true_classes=labels, num_true=num_true, num_sampled=num_sampled, unique=True,
                range_max=num_classes, seed=seed)
        sampled, true_expected_count, sampled_expected_count = (
            array_ops.stop_gradient(convert_to_tensor(s)) for s in sampled_values)
        sampled = math_ops.cast(sampled, _dtypes.int64)
        # one lookup for the true and the sampled rows: each shard is read once
        all_ids = array_ops.concat([labels_flat, sampled], 0)
        num_labels = array_ops.shape(labels_flat)[0]
        all_w = _as(embedding_ops.embedding_lookup(weights, all_ids,
                                                   partition_strategy=partition_strategy), inputs)
        true_w = array_ops.slice(all_w, [0, 0], array_ops.stack([num_labels, -1]))
        sampled_w = array_ops.slice(all_w, array_ops.stack([num_labels, 0]), [-1, -1])
        sampled_logits = math_ops.matmul(inputs, sampled_w, transpose_b=True)
        all_b = _as(embedding_ops.embedding_lookup(biases, all_ids,
                                                   partition_strategy=partition_strategy), inputs)
        true_b = array_ops.slice(all_b, [0], array_ops.reshape(num_labels, [1]))
        sampled_b = array_ops.slice(all_b, array_ops.reshape(num_labels, [1]), [-1])
        dim = array_ops.shape(true_w)[1:2]
        true_w = array_ops.reshape(true_w, array_ops.concat([[-1, num_true], dim], 0))
        true_logits = math_ops.reduce_sum(array_ops.expand_dims(inputs, 1) * true_w, 2)
        true_logits += array_ops.reshape(true_b, [-1, num_true])
        sampled_logits += sampled_b
        if remove_accidental_hits:
            rows, ids, hit_weights = compute_accidental_hits(labels, sampled, num_true=num_true)
            indices = array_ops.stack([math_ops.cast(rows, _dtypes.int64), ids], 1)
            shape = array_ops.stack([math_ops.cast(array_ops.shape(labels)[0], _dtypes.int64),
                                     math_ops.cast(array_ops.shape(sampled)[0], _dtypes.int64)])
            mask = array_ops.scatter_nd(indices, _as(hit_weights, sampled_logits), shape)
            # TF1 writes the hits densely (sparse_to_dense): a class repeated in a row of
            # labels hits twice but counts once, -FLT_MAX, never -inf
            sampled_logits += math_ops.maximum(mask, -_FLT_MAX)
        if subtract_log_q:
            true_logits -= math_ops.log(true_expected_count)
            sampled_logits -= math_ops.log(sampled_expected_count)
        out_logits = array_ops.concat([true_logits, sampled_logits], 1)
        out_labels = array_ops.concat([array_ops.ones_like(true_logits) / num_true,
                                       array_ops.zeros_like(sampled_logits)], 1)
        return out_logits, out_labels


def _as(t, like):
    return t if t.dtype == like.dtype else math_ops.cast(t, like.dtype)


def nce_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
             sampled_values=None, remove_accidental_hits=False, partition_strategy="mod",
             name="nce_loss"):
    """Noise-contrastive estimation loss per example ``[batch]``: a logistic loss telling each
    true class (``labels``, ``[batch, num_true]`` int64) from ``num_sampled`` classes drawn by
    ``sampled_values`` (default: ``log_uniform_candidate_sampler``), with the log of their
    expected counts subtracted from the logits. ``weights`` ``[num_classes, dim]`` (one table,
    a list of shards or a PartitionedVariable), ``biases`` ``[num_classes]``, ``inputs``
    ``[batch, dim]``. For training only: evaluate with the full softmax.
    """
    logits, labels = _compute_sampled_logits(
        weights, biases, labels, inputs, num_sampled, num_classes, num_true, sampled_values,
        subtract_log_q=True, remove_accidental_hits=remove_accidental_hits,
        partition_strategy=partition_strategy, name=name)
    losses = nn_ops.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits,
                                                      name="sampled_losses")
    return math_ops.reduce_sum(losses, 1)


def sampled_softmax_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
                         sampled_values=None, remove_accidental_hits=True,
                         partition_strategy="mod", name="sampled_softmax_loss", seed=None):
    """Softmax cross-entropy per example ``[batch]`` over the true classes and ``num_sampled``
    sampled ones (sampled classes that are true ones removed), the log of their expected counts
    subtracted from the logits. Arguments as nce_loss. For training only.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     w = tf.Variable(tf.ones([10, 3]))
    ...     b = tf.Variable(tf.zeros([10]))
    ...     sampled = (tf.constant([3, 4], tf.int64), tf.constant([[1.0]]), tf.constant([1.0, 1.0]))
    ...     loss = tf.nn.sampled_softmax_loss(w, b, [[1]], tf.ones([1, 3]), 2, 10,
    ...                                       sampled_values=sampled)
    ...     sess = tf.Session()
    ...     sess.run(tf.global_variables_initializer())
    ...     print(round(float(sess.run(loss)[0]), 4))   # log(3): three equal logits
    1.0986
    """
    logits, labels = _compute_sampled_logits(
        weights, biases, labels, inputs, num_sampled, num_classes, num_true, sampled_values,
        subtract_log_q=True, remove_accidental_hits=remove_accidental_hits,
        partition_strategy=partition_strategy, name=name, seed=seed)
    labels = array_ops.stop_gradient(labels, name="labels_stop_gradient")
    return nn_ops.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)


__all__ = [
    "log_uniform_candidate_sampler", "uniform_candidate_sampler",
    "fixed_unigram_candidate_sampler", "compute_accidental_hits", "nce_loss",
    "sampled_softmax_loss",
]
