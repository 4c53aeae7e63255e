"""``tf.train.warm_start``: start a new model's variables from a checkpoint of another.

The chosen variables' initializers read their values from the checkpoint (through
``init_from_checkpoint``: on the ps, where each variable lives), so the usual
``global_variables_initializer()`` (or a Supervisor's, or MonitoredTrainingSession's init op)
warm-starts them. Partitioned variables are read slice by slice, however they were saved.

>>> import os, tempfile, zps as tf
>>> d = tempfile.mkdtemp()
>>> with tf.Graph().as_default():
...     w = tf.get_variable("w", initializer=[1.0, 2.0])
...     with tf.Session() as sess:
...         sess.run(w.initializer)
...         path = tf.train.Saver().save(sess, os.path.join(d, "model"))
>>> with tf.Graph().as_default():
...     w = tf.get_variable("dense/w", shape=[2], initializer=tf.zeros_initializer())
...     tf.train.warm_start(path, var_name_to_prev_var_name={"dense/w": "w"})
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         print(sess.run(w).tolist())
[1.0, 2.0]
"""

import collections
import logging

from zps.framework import errors
from zps.framework.graph import GraphKeys, get_default_graph
from zps.ops import state_ops
from zps.ops.checkpoint_ops import load_and_remap_matrix_initializer
from zps.ops.partitioned_variables import PartitionedVariable, _PartitionInfo
from zps.ops.variables import Variable, checkpoint_name
from zps.train.checkpoint_management import init_from_checkpoint, load_checkpoint

_logger = logging.getLogger(__name__)


class VocabInfo(collections.namedtuple("VocabInfo", [
        "new_vocab", "new_vocab_size", "num_oov_buckets", "old_vocab", "old_vocab_size",
        "backup_initializer", "axis"])):
    """How to remap a vocabulary-indexed variable (an embedding's rows, or with ``axis=1`` an
    output layer's columns) from ``old_vocab`` (a file, one entry a line) to ``new_vocab``:
    TF1's ``tf.train.VocabInfo``. Entries of ``new_vocab`` (its first ``new_vocab_size``) take
    the checkpoint's row of the same entry in ``old_vocab`` (its first ``old_vocab_size``; -1:
    all); the others, and the ``num_oov_buckets`` rows after them, take ``backup_initializer``'s
    values (None: zeros)."""

    def __new__(cls, new_vocab, new_vocab_size, num_oov_buckets, old_vocab, old_vocab_size=-1,
                backup_initializer=None, axis=0):
        if axis not in (0, 1):
            raise ValueError("The only supported values for the axis argument are 0 and 1.  "
                             "Provided axis: %s" % (axis,))
        return super().__new__(cls, new_vocab, new_vocab_size, num_oov_buckets, old_vocab,
                               old_vocab_size, backup_initializer, axis)


def _grouped_variables(vars_to_warm_start):
    """``{name: [variable or parts]}`` of the variables ``vars_to_warm_start`` chooses (TF's
    rules: a regex over TRAINABLE_VARIABLES (None: all of them), a list of regexes over
    GLOBAL_VARIABLES, or a list of Variables)."""
    graph = get_default_graph()
    if isinstance(vars_to_warm_start, str) or vars_to_warm_start is None:
        chosen = graph.get_collection(GraphKeys.TRAINABLE_VARIABLES, scope=vars_to_warm_start)
    elif isinstance(vars_to_warm_start, list | tuple):
        if all(isinstance(v, str) for v in vars_to_warm_start):
            chosen = [v for scope in vars_to_warm_start
                      for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES, scope=scope)]
        elif all(isinstance(v, Variable | PartitionedVariable) for v in vars_to_warm_start):
            chosen = list(vars_to_warm_start)
        else:
            raise ValueError("If `vars_to_warm_start` is a list, it must be all `Variable` or all "
                             "`str`.  Given types are %s"
                             % [type(v).__name__ for v in vars_to_warm_start])
    else:
        raise ValueError("`vars_to_warm_start must be a `list` or `str`.  Given type is %s"
                         % type(vars_to_warm_start).__name__)
    grouped = {}
    for v in chosen:
        parts = v._get_variable_list() if isinstance(v, PartitionedVariable) else [v]
        group = grouped.setdefault(checkpoint_name(v), [])
        group.extend(p for p in parts if all(p is not q for q in group))   # a var two regexes match
    return grouped


def warm_start(ckpt_to_initialize_from, vars_to_warm_start=".*", var_name_to_vocab_info=None,
               var_name_to_prev_var_name=None):
    """Make the initializers of the chosen variables of the default graph load their values from
    ``ckpt_to_initialize_from`` (a checkpoint prefix, or a directory: its latest checkpoint), as
    TF1's ``tf.train.warm_start``.

    ``vars_to_warm_start``: a regex over the trainable variables (the default ``".*"``: all of
    them), a list of regexes over all global variables (optimizer slots, moving averages ...), or
    a list of Variables; None warm-starts only the variables of ``var_name_to_vocab_info``.
    ``var_name_to_prev_var_name`` maps a variable's name to the checkpoint's name for it. A name
    in either dict that matches no chosen variable is a ValueError (a misspelled name would
    otherwise silently not warm-start), and so is a checkpoint lacking a tensor or holding one
    of another shape. ``var_name_to_vocab_info`` maps a variable's name to the ``VocabInfo`` its
    rows (or columns) are remapped by: each part's initializer reads the vocabulary files and
    the rows it needs when it runs, where the part lives (a missing vocabulary file is a
    NotFoundError then, as in TF); the graph holds file names, not the table.
    """
    _logger.info("Warm-starting from: %s", ckpt_to_initialize_from)
    grouped = _grouped_variables(vars_to_warm_start)
    vocab_infos = dict(var_name_to_vocab_info or {})
    prev_names = dict(var_name_to_prev_var_name or {})
    for what, names in (("var_name_to_prev_var_name", prev_names),
                        ("var_name_to_vocab_info", vocab_infos)):
        unused = sorted(set(names) - set(grouped))
        if unused:
            raise ValueError("You provided the following variables in %s that were not used: %s. "
                             " Perhaps you misspelled them?  Here is the list of viable variable "
                             "names: %s" % (what, unused, sorted(grouped)))
    count = 0
    for name, parts in sorted(grouped.items()):
        prev_name = prev_names.get(name) or name
        if vocab_infos.get(name):
            _warm_start_var_with_vocab(parts, ckpt_to_initialize_from, prev_name,
                                       vocab_infos[name])
        elif vars_to_warm_start is not None:
            # init_from_checkpoint maps checkpoint names to variables: one call per variable, so
            # that two variables may start from the same tensor.
            init_from_checkpoint(ckpt_to_initialize_from,
                                 {prev_name: parts[0] if len(parts) == 1 else parts})
        else:
            continue
        count += 1
    _logger.info("Warm-started %d variables.", count)


def _warm_start_var_with_vocab(parts, ckpt, prev_name, info):
    """Give each part of a vocabulary-indexed variable an initializer that assigns the
    checkpoint's tensor ``prev_name`` remapped by ``info`` (TF1's ``_warm_start_var_with_vocab``):
    rows (``axis=0``) or columns (``axis=1``) of new-vocabulary entries come from the old row of
    the same entry; the missing ones (and the OOV rows or columns) from
    ``info.backup_initializer``, zeros when it is None.

    Only the checkpoint's index is read here (shapes, checked now); the vocabulary files and the
    tensor's rows are read by the initializer's ops, colocated with each part (on its ps), so
    the graph stays small however large the table (a missing vocabulary file is a NotFoundError
    when the initializer runs, as in TF)."""
    if not (info.new_vocab and info.new_vocab_size and ckpt and info.old_vocab):
        raise ValueError("Invalid args: Must provide all of [current_vocab_path, "
                         "current_vocab_size, prev_ckpt, prev_vocab_path}.")
    if info.num_oov_buckets < 0:
        raise ValueError("num_oov_buckets must be >= 0, but received %d for %s"
                         % (info.num_oov_buckets, prev_name))
    reader = load_checkpoint(ckpt)
    prev_name = prev_name.removesuffix(":0")
    old_shape = reader.get_variable_to_shape_map().get(prev_name)
    if old_shape is None:
        raise errors.NotFoundError(None, None, "Key %s not found in checkpoint %s (a VocabInfo's "
                                   "tensor)" % (prev_name, reader.prefix))
    if len(old_shape) != 2:
        raise ValueError("warm_start: vocabulary remapping needs a 2-d tensor, but %s in %s has "
                         "shape %s" % (prev_name, ckpt, old_shape))
    total_rows = sum(p.get_shape().as_list()[0] for p in parts)
    new_size, num_oov = info.new_vocab_size, info.num_oov_buckets
    if info.axis == 0:
        init = load_and_remap_matrix_initializer(
            reader.prefix, prev_name, new_size, old_shape[1], old_row_vocab_size=info.old_vocab_size,
            old_row_vocab_file=info.old_vocab, new_row_vocab_file=info.new_vocab,
            num_row_oov_buckets=num_oov, initializer=info.backup_initializer)
    else:
        init = load_and_remap_matrix_initializer(
            reader.prefix, prev_name, total_rows, new_size, old_col_vocab_file=info.old_vocab,
            new_col_vocab_file=info.new_vocab, num_col_oov_buckets=num_oov,
            initializer=info.backup_initializer)
    for v in parts:
        shape = v.get_shape().as_list()
        slice_info = v._get_save_slice_info() if len(parts) > 1 else None
        offset = slice_info.var_offset[0] if slice_info is not None else 0
        if info.axis == 0 and (len(shape) != 2 or shape[1] != old_shape[1]
                               or offset + shape[0] > new_size + num_oov):
            raise ValueError("warm_start: a part of shape %s at row %d does not fit an axis=0 "
                             "remapping of %s (shape %s) to %d vocabulary + %d OOV rows"
                             % (shape, offset, prev_name, old_shape, new_size, num_oov))
        if info.axis == 1 and (len(shape) != 2 or shape[1] != new_size + num_oov
                               or total_rows != old_shape[0]):
            raise ValueError("warm_start: %s has shape %s (of %d rows in all), but an axis=1 "
                             "remapping of %s (shape %s) needs %d columns (new_vocab_size %d + "
                             "num_oov_buckets %d) and %d rows"
                             % (v.name, shape, total_rows, prev_name, old_shape,
                                new_size + num_oov, new_size, num_oov, old_shape[0]))
        partition = None if slice_info is None else _PartitionInfo(slice_info.full_shape,
                                                                   slice_info.var_offset)
        with v.graph.control_dependencies(None), v.graph.colocate_with(v.op):
            value = init(shape, v.dtype.base_dtype, partition_info=partition)
            v._initializer_op = state_ops.assign(v._variable, value).op
        v._initial_value = value


__all__ = ["VocabInfo", "warm_start"]
