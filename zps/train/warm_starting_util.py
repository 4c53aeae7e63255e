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

from zps.framework.graph import GraphKeys, get_default_graph
from zps.ops.partitioned_variables import PartitionedVariable
from zps.ops.variables import Variable, checkpoint_name
from zps.train.checkpoint_management import init_from_checkpoint

_logger = logging.getLogger(__name__)


class VocabInfo(collections.namedtuple("VocabInfo", [
        "new_vocab", "new_vocab_size", "num_oov_buckets", "old_vocab", "old_vocab_size",
        "backup_initializer", "axis"])):
    """How to remap a vocabulary-indexed variable (an embedding's rows, or with ``axis=1`` an
    output layer's columns) from ``old_vocab`` (a file, one entry a line) to ``new_vocab``:
    TF1's ``tf.train.VocabInfo``. zps keeps the fields but ``warm_start`` does not remap
    vocabularies yet (it raises NotImplementedError naming the variable)."""

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
    of another shape. Vocabulary remapping (``var_name_to_vocab_info``) is NotImplementedError.
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
    for name in sorted(vocab_infos):
        if vocab_infos[name]:
            raise NotImplementedError(
                "warm_start: variable %s has a VocabInfo, but zps does not remap vocabularies "
                "yet; warm-start it without var_name_to_vocab_info (same vocabulary), or load and "
                "remap its rows yourself (tf.train.load_variable) into its initializer" % name)
    if vars_to_warm_start is None:
        _logger.info("Warm-started 0 variables.")
        return
    # init_from_checkpoint maps checkpoint names to variables: one call per variable, so that two
    # variables may start from the same tensor.
    for name, parts in sorted(grouped.items()):
        init_from_checkpoint(ckpt_to_initialize_from,
                             {prev_names.get(name) or name: parts[0] if len(parts) == 1
                              else parts})
    _logger.info("Warm-started %d variables.", len(grouped))


__all__ = ["VocabInfo", "warm_start"]
