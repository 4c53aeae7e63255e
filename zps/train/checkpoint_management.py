"""The ``checkpoint`` state file and finding checkpoints (TF1's checkpoint_management).

The state file is TF1's CheckpointState in protobuf text format, written atomically::

    model_checkpoint_path: "model.ckpt-200"
    all_model_checkpoint_paths: "model.ckpt-100"
    all_model_checkpoint_paths: "model.ckpt-200"
    all_model_checkpoint_timestamps: 1700000000.5
    all_model_checkpoint_timestamps: 1700000100.25
    last_preserved_timestamp: 1699999000.0

>>> import os, tempfile, numpy as np, zps as tf
>>> from zps.train.saver import Saver
>>> d = tempfile.mkdtemp()
>>> with tf.Graph().as_default():
...     v = tf.Variable(np.arange(3.0), name="v")
...     saver = Saver()
...     with tf.Session() as sess:
...         sess.run(v.initializer)
...         _ = saver.save(sess, os.path.join(d, "model.ckpt"), global_step=7)
>>> os.path.basename(latest_checkpoint(d))
'model.ckpt-7'
>>> list_variables(d)
[('v', [3])]
"""

import logging
import os
import re
import time

from zps.framework import checkpoint_format

_logger = logging.getLogger(__name__)

LATEST_FILENAME = "checkpoint"
MAX_STATE_BYTES = 16 * 1024 * 1024


class CheckpointState:
    """TF1's CheckpointState: the latest checkpoint and the ones still kept (oldest first)."""

    def __init__(self, model_checkpoint_path="", all_model_checkpoint_paths=(),
                 all_model_checkpoint_timestamps=(), last_preserved_timestamp=0.0):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths)
        self.all_model_checkpoint_timestamps = list(all_model_checkpoint_timestamps)
        self.last_preserved_timestamp = float(last_preserved_timestamp)

    def to_text(self):
        lines = ['model_checkpoint_path: "%s"' % _escape(self.model_checkpoint_path)]
        lines += ['all_model_checkpoint_paths: "%s"' % _escape(p)
                  for p in self.all_model_checkpoint_paths]
        lines += ["all_model_checkpoint_timestamps: %r" % float(t)
                  for t in self.all_model_checkpoint_timestamps]
        if self.last_preserved_timestamp:
            lines.append("last_preserved_timestamp: %r" % self.last_preserved_timestamp)
        return "\n".join(lines) + "\n"

    __str__ = to_text

    def __repr__(self):
        return "CheckpointState(%r)" % self.to_text()

    def __eq__(self, other):
        return isinstance(other, CheckpointState) and vars(self) == vars(other)


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "'": "\\'"}
_UNESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "r": "\r", "t": "\t", "a": "\a",
              "b": "\b", "f": "\f", "v": "\v", "?": "?"}
_LINE = re.compile(r'^\s*([A-Za-z_]+)\s*:\s*(?:"((?:[^"\\]|\\.)*)"|([-+0-9.eE]+|inf|nan))\s*$')


def _escape(text):
    return "".join(_ESCAPES.get(c, c) for c in text)


def _unescape(body):
    out, i = bytearray(), 0
    raw = body.encode("utf-8")
    while i < len(raw):
        c = raw[i:i + 1]
        if c != b"\\":
            out += c
            i += 1
            continue
        nxt = chr(raw[i + 1])
        if nxt in _UNESCAPES:
            out += _UNESCAPES[nxt].encode()
            i += 2
        elif nxt in "01234567":
            m = re.match(rb"[0-7]{1,3}", raw[i + 1:])
            out.append(int(m.group(), 8) & 0xFF)
            i += 1 + len(m.group())
        elif nxt == "x":
            m = re.match(rb"[0-9a-fA-F]{1,2}", raw[i + 2:])
            if m is None:
                raise ValueError("bad \\x escape")
            out.append(int(m.group(), 16))
            i += 2 + len(m.group())
        else:
            raise ValueError("unknown escape \\%s" % nxt)
    return out.decode("utf-8")


def parse_checkpoint_state(text):
    """Parse the text of a ``checkpoint`` file; ValueError naming the bad line."""
    state = CheckpointState()
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _LINE.match(line)
        if m is None:
            raise ValueError("line %d is not 'field: value': %r" % (n, line))
        key, string, number = m.groups()
        if key in ("model_checkpoint_path", "all_model_checkpoint_paths") and string is not None:
            value = _unescape(string)
            if key == "model_checkpoint_path":
                state.model_checkpoint_path = value
            else:
                state.all_model_checkpoint_paths.append(value)
        elif key == "all_model_checkpoint_timestamps" and number is not None:
            state.all_model_checkpoint_timestamps.append(float(number))
        elif key == "last_preserved_timestamp" and number is not None:
            state.last_preserved_timestamp = float(number)
        else:
            raise ValueError("line %d: unknown field or wrong value type: %r" % (n, line))
    return state


def _state_filename(save_dir, latest_filename):
    return os.path.join(save_dir, latest_filename or LATEST_FILENAME)


def generate_checkpoint_state_proto(save_dir, model_checkpoint_path,
                                    all_model_checkpoint_paths=None,
                                    all_model_checkpoint_timestamps=None,
                                    last_preserved_timestamp=None):
    """A CheckpointState; relative paths become relative to a relative ``save_dir`` (as TF1)."""
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        _logger.debug("%s is not in all_model_checkpoint_paths; appending it", model_checkpoint_path)
        paths.append(model_checkpoint_path)
    stamps = list(all_model_checkpoint_timestamps or [])
    if stamps and len(stamps) != len(paths):
        raise ValueError("Checkpoint timestamps, if provided, must match checkpoint paths (got "
                         "paths %r and timestamps %r)" % (paths, stamps))
    if not os.path.isabs(save_dir):
        if not os.path.isabs(model_checkpoint_path):
            model_checkpoint_path = os.path.relpath(model_checkpoint_path, save_dir)
        paths = [p if os.path.isabs(p) else os.path.relpath(p, save_dir) for p in paths]
    return CheckpointState(model_checkpoint_path, paths, stamps, last_preserved_timestamp or 0.0)


def update_checkpoint_state(save_dir, model_checkpoint_path, all_model_checkpoint_paths=None,
                            latest_filename=None, all_model_checkpoint_timestamps=None,
                            last_preserved_timestamp=None, save_relative_paths=False):
    """Atomically (re)write ``save_dir/checkpoint`` naming the latest checkpoint and the kept ones."""
    path = _state_filename(save_dir, latest_filename)
    if save_relative_paths:
        def rel(p):
            return os.path.relpath(p, save_dir) if os.path.isabs(p) else p
        model_checkpoint_path = rel(model_checkpoint_path)
        all_model_checkpoint_paths = [rel(p) for p in all_model_checkpoint_paths or []]
    state = generate_checkpoint_state_proto(save_dir, model_checkpoint_path,
                                            all_model_checkpoint_paths,
                                            all_model_checkpoint_timestamps,
                                            last_preserved_timestamp)
    if os.path.abspath(path) == os.path.abspath(os.path.join(save_dir, state.model_checkpoint_path)):
        raise RuntimeError("Save path '%s' conflicts with path used for checkpoint state. Please "
                           "use a different save path." % model_checkpoint_path)
    data = state.to_text().encode("utf-8")
    checkpoint_format.atomic_write(path, lambda f: f.write(data))


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The CheckpointState in ``checkpoint_dir``, or None if there is no readable state file.

    Relative paths in the file are returned joined to ``checkpoint_dir``.
    """
    path = _state_filename(checkpoint_dir, latest_filename)
    try:
        if os.path.getsize(path) > MAX_STATE_BYTES:
            raise ValueError("%d bytes, over the %d-byte limit" % (os.path.getsize(path),
                                                                   MAX_STATE_BYTES))
        with open(path, "rb") as f:
            state = parse_checkpoint_state(f.read().decode("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, UnicodeDecodeError) as e:
        _logger.warning("%s: Checkpoint ignored (%s: %s)", path, type(e).__name__, e)
        return None
    if not state.model_checkpoint_path:
        raise ValueError("Invalid checkpoint state loaded from %s: no model_checkpoint_path"
                         % checkpoint_dir)

    def absolute(p):
        return p if os.path.isabs(p) else os.path.join(checkpoint_dir, p)

    state.model_checkpoint_path = absolute(state.model_checkpoint_path)
    state.all_model_checkpoint_paths = [absolute(p) for p in state.all_model_checkpoint_paths]
    return state


def checkpoint_exists(checkpoint_prefix):
    """Whether a checkpoint with this prefix (its index) exists."""
    return os.path.isfile(checkpoint_prefix + checkpoint_format.INDEX_SUFFIX)


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The prefix of the newest checkpoint in ``checkpoint_dir`` (per its state file), or None."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state and state.model_checkpoint_path:
        if checkpoint_exists(state.model_checkpoint_path):
            return state.model_checkpoint_path
        _logger.error("Couldn't match files for checkpoint %s", state.model_checkpoint_path)
    return None


def get_checkpoint_mtimes(checkpoint_prefixes):
    """The modification times (seconds) of the checkpoints that exist among the prefixes."""
    out = []
    for prefix in checkpoint_prefixes:
        try:
            out.append(os.path.getmtime(prefix + checkpoint_format.INDEX_SUFFIX))
        except OSError:
            pass
    return out


def meta_graph_filename(checkpoint_filename, meta_graph_suffix="meta"):
    """``model.ckpt-123`` -> ``model.ckpt-123.meta`` (a trailing shard spec is dropped, as TF1)."""
    basename = re.sub(r"-[\d\?]+-of-\d+$", "", checkpoint_filename)
    return ".".join([basename, meta_graph_suffix])


def remove_checkpoint(checkpoint_prefix, checkpoint_format_version=2, meta_graph_suffix="meta"):
    """Delete the files of a checkpoint (index, shards, meta graph)."""
    for path in checkpoint_format.checkpoint_files(checkpoint_prefix) + [
            meta_graph_filename(checkpoint_prefix, meta_graph_suffix)]:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
        except OSError as e:
            _logger.warning("Ignoring: failed to delete %s: %s", path, e)


# -- reading checkpoints (TF1's checkpoint_utils) ------------------------------------------------
def NewCheckpointReader(filepattern):  # noqa: N802 - TF1's name
    """A reader of checkpoint ``filepattern`` (a prefix): ``get_tensor``, shape/dtype maps."""
    return checkpoint_format.CheckpointReader(str(filepattern))


def _checkpoint_prefix(ckpt_dir_or_file):
    if os.path.isdir(ckpt_dir_or_file):
        prefix = latest_checkpoint(ckpt_dir_or_file)
        if prefix is None:
            raise ValueError("Couldn't find 'checkpoint' file or checkpoints in given directory %s"
                             % ckpt_dir_or_file)
        return prefix
    return ckpt_dir_or_file


def load_checkpoint(ckpt_dir_or_file):
    """A CheckpointReader of a checkpoint prefix, or of the latest checkpoint of a directory."""
    return NewCheckpointReader(_checkpoint_prefix(ckpt_dir_or_file))


def load_variable(ckpt_dir_or_file, name):
    """The saved value of variable ``name`` (a trailing ':0' is ignored)."""
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


def list_variables(ckpt_dir_or_file):
    """``[(name, shape), ...]`` of the variables in a checkpoint, sorted by name."""
    shapes = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return [(name, shapes[name]) for name in sorted(shapes)]


def init_from_checkpoint(ckpt_dir_or_file, assignment_map):
    """TF1's ``tf.train.init_from_checkpoint``: variables' initializers load their values from a
    checkpoint (zps's, or one TensorFlow saved) instead of computing their initial values, so
    ``global_variables_initializer()`` warm-starts them. ``assignment_map`` maps checkpoint names
    to the variables of the default graph's variable store:

    - ``"ckpt_scope/": "scope/"``: every variable under ``scope/`` from the tensor of the same
      name under ``ckpt_scope/`` (``"/"`` stands for the root on either side);
    - ``"ckpt_scope/name": "scope/var"``, a Variable, or the list of a partitioned variable's
      parts: that variable (a partitioned one read slice by slice, however it was saved).

    Every name is checked now: a tensor the checkpoint lacks, or one of another shape, is a
    ValueError; a dtype mismatch fails the initializer when it runs.
    """
    from zps.ops import variable_scope
    prefix = _checkpoint_prefix(ckpt_dir_or_file)
    shapes = NewCheckpointReader(prefix).get_variable_to_shape_map()
    store = variable_scope._get_default_variable_store()
    for ckpt_name, current in sorted(assignment_map.items(), key=lambda kv: kv[0]):
        var = _assigned_variables(current, store)
        if var is not None:
            _init_variables(prefix, ckpt_name, var, shapes, ckpt_dir_or_file)
            continue
        if not isinstance(current, str):
            raise TypeError("init_from_checkpoint: %r maps to %r, neither a variable, a list of "
                            "one's parts nor a name" % (ckpt_name, current))
        scope = current[:current.rindex("/")] if "/" in current else ""
        if not ckpt_name.endswith("/"):
            raise ValueError("Assignment map with scope only name %s should map to scope only %s. "
                             "Should be 'scope/': 'other_scope/'." % (scope, ckpt_name))
        names = sorted({name.split("/part_")[0] for name in store._vars
                        if not scope or name.startswith(scope + "/")})
        if not names:
            raise ValueError("init_from_checkpoint: no variable of the default graph is under %r "
                             "(from %r)" % (current, ckpt_name))
        for name in names:
            full = name[len(scope):]
            if current != "/":
                full = full[1:]
            if ckpt_name != "/":
                full = ckpt_name + full
            if full not in shapes:
                raise ValueError("Tensor %s (%s in %s) is not found in %s checkpoint"
                                 % (full, name[len(scope) + 1:], ckpt_name, ckpt_dir_or_file))
            _init_variables(prefix, full, _assigned_variables(name, store), shapes,
                            ckpt_dir_or_file)


def _assigned_variables(current, store):
    """A Variable, or the parts of a partitioned one, that ``current`` is or names (in the
    variable ``store``); else None."""
    from zps.ops.variables import Variable
    if isinstance(current, Variable):
        return current
    if isinstance(current, list | tuple) and current and all(
            isinstance(v, Variable) for v in current):
        return list(current)
    if not isinstance(current, str):
        return None
    if current in store._vars:
        return store._vars[current]
    partitioned = store._partitioned_vars.get(current)
    return None if partitioned is None else list(partitioned)


def _init_variables(prefix, ckpt_name, var, shapes, where):
    from zps.ops import state_ops
    from zps.ops.partitioned_variables import restore_slice
    saved = shapes.get(ckpt_name)
    if saved is None:
        raise ValueError("Tensor %s is not found in %s checkpoint (it has: %s)"
                         % (ckpt_name, where, ", ".join(sorted(shapes)[:10])))
    for v in var if isinstance(var, list) else [var]:
        info = v._get_save_slice_info() if isinstance(var, list) else None
        if info is None and isinstance(var, list):
            raise ValueError("init_from_checkpoint: %s is in a list but is not a part of a "
                             "partitioned variable" % v.name)
        full = info.full_shape if info is not None else v.get_shape().as_list()
        if len(full) != len(saved) or any(d is not None and d != s for d, s in zip(full, saved)):
            raise ValueError("Shape of variable %s (%s) doesn't match with shape of tensor %s (%s) "
                             "from checkpoint reader." % (v.name, full, ckpt_name, saved))
        start = info.var_offset if info is not None else [0] * len(saved)
        shape = info.var_shape if info is not None else saved
        # The initializer becomes an assign of the restored value, both where the variable lives
        # (a ps reads the checkpoint from its own file system, as in TF1).
        with v.graph.control_dependencies(None), v.graph.colocate_with(v.op):
            value = restore_slice(prefix, ckpt_name, start, shape, v.dtype.base_dtype,
                                  name="checkpoint_initializer")
            v._initializer_op = state_ops.assign(v._variable, value).op
        v._initial_value = value


# -- waiting for checkpoints (the evaluator loop of TF1 distributed jobs) ------------------------
def wait_for_new_checkpoint(checkpoint_dir, last_checkpoint=None, seconds_to_sleep=1,
                            timeout=None):
    """The latest checkpoint of ``checkpoint_dir`` once it differs from ``last_checkpoint``,
    checked every ``seconds_to_sleep`` seconds; None if ``timeout`` seconds pass first (TF1's
    ``tf.contrib.training.wait_for_new_checkpoint``)."""
    _logger.info("Waiting for new checkpoint at %s", checkpoint_dir)
    stop_time = None if timeout is None else time.time() + timeout
    while True:
        checkpoint_path = latest_checkpoint(checkpoint_dir)
        if checkpoint_path is not None and checkpoint_path != last_checkpoint:
            _logger.info("Found new checkpoint at %s", checkpoint_path)
            return checkpoint_path
        if stop_time is not None and time.time() + seconds_to_sleep > stop_time:
            return None
        time.sleep(seconds_to_sleep)


def checkpoints_iterator(checkpoint_dir, min_interval_secs=0, timeout=None, timeout_fn=None):
    """Yield each new checkpoint of ``checkpoint_dir`` as it appears, at most one every
    ``min_interval_secs`` (checkpoints written meanwhile are skipped but the latest): TF1's
    evaluator loop ``for path in tf.train.checkpoints_iterator(model_dir): ...``.

    When ``timeout`` seconds pass without a new checkpoint the iteration ends, unless
    ``timeout_fn`` is given: then it ends only when ``timeout_fn()`` is true (it is also asked
    after each checkpoint, as TF does), and waits again otherwise.

    >>> import tempfile
    >>> list(checkpoints_iterator(tempfile.mkdtemp(), timeout=0))
    []
    """
    checkpoint_path = None
    while True:
        new_path = wait_for_new_checkpoint(checkpoint_dir, checkpoint_path, timeout=timeout)
        if new_path:
            start = time.time()
            checkpoint_path = new_path
            yield checkpoint_path
            time_to_next = start + min_interval_secs - time.time()
            if time_to_next > 0:
                time.sleep(time_to_next)
        elif timeout_fn is None:
            _logger.info("Timed-out waiting for a checkpoint (without timeout_fn).")
            return
        if timeout_fn is not None and timeout_fn():
            _logger.info("Done. No new checkpoints will be generated.")
            return


__all__ = [
    "CheckpointState",
    "generate_checkpoint_state_proto",
    "update_checkpoint_state",
    "get_checkpoint_state",
    "latest_checkpoint",
    "checkpoint_exists",
    "get_checkpoint_mtimes",
    "meta_graph_filename",
    "remove_checkpoint",
    "NewCheckpointReader",
    "load_checkpoint",
    "load_variable",
    "list_variables",
    "init_from_checkpoint",
    "checkpoints_iterator",   # wait_for_new_checkpoint is tf.contrib.training's (not tf.train's)
]
