"""``tf.train.Saver``: save and restore variables as checkpoints (TF1's API and file names).

A checkpoint ``model.ckpt-100`` is an index ``model.ckpt-100.index`` (JSON) over safetensors
shards ``model.ckpt-100.data-*`` (see checkpoint_format.py), plus ``model.ckpt-100.meta`` (the
graph, msgpack) and the ``checkpoint`` state file of the directory. The save and restore ops are
built once, when the Saver is made; with ``sharded=True`` they are built per device, so on a
cluster each ps task writes and reads its own variables. Every file is written atomically and
the index commits a checkpoint, so a crash mid-save leaves the previous checkpoint loadable.

>>> import os, tempfile, zps as tf
>>> d = tempfile.mkdtemp()
>>> with tf.Graph().as_default():
...     w = tf.Variable([1.0, 2.0], name="w")
...     saver = Saver()
...     with tf.Session() as sess:
...         sess.run(w.initializer)
...         path = saver.save(sess, os.path.join(d, "model.ckpt"), global_step=100)
...         _ = sess.run(w.assign([0.0, 0.0]))
...         saver.restore(sess, path)
...         print(os.path.basename(path), sess.run(w))
model.ckpt-100 [1. 2.]
"""

import contextlib
import logging
import os
import threading
import time

import msgpack
import numpy as np

from zps.framework import checkpoint_format, errors
from zps.framework import dtypes as _dtypes
from zps.framework.device import canonical_name
from zps.framework.graph import GraphKeys, Operation, Tensor, convert_to_tensor, get_default_graph
from zps.framework.serialization import graph_to_def, import_graph_def
from zps.ops import array_ops, control_flow_ops, io_ops, partitioned_variables, state_ops
from zps.ops.partitioned_variables import PartitionedVariable
from zps.ops.variables import SaveSliceInfo, Variable, global_variables
from zps.train import checkpoint_management, training_util

_logger = logging.getLogger(__name__)

_SAVEABLE_OBJECTS = getattr(GraphKeys, "SAVEABLE_OBJECTS", "saveable_objects")
META_GRAPH_FORMAT = "zps-meta-graph"


class _CheckpointNotFoundError(errors.NotFoundError, ValueError):
    """A missing checkpoint: NotFoundError, and also the ValueError TF1 code catches."""


class Saver:
    """Saves and restores variables (TF1's ``tf.train.Saver``).

    ``var_list``: a list of variables (saved under their op names) or a dict ``{name: variable}``;
    default: every global variable plus the objects of the ``tf.GraphKeys.SAVEABLE_OBJECTS``
    ("saveable_objects") collection. ``sharded=True`` writes one shard per device, from that
    device. ``max_to_keep`` newest checkpoints are kept (None or 0: all), plus one every
    ``keep_checkpoint_every_n_hours``.

    Partitioned variables: a shard (a Variable with ``_save_slice_info``, as
    ``get_variable(partitioner=...)`` makes them) is saved as a slice of the full variable: the
    checkpoint index lists the full name and shape once, with each slice's offset, shape and
    location (see checkpoint_format.py); ``var_list`` may also hold a PartitionedVariable, or a
    dict value may be one or a list of its shards. On restore each shard reads its own region,
    whatever slicing the checkpoint was written with: a model saved with 2 partitions restores
    into 3, or into an unpartitioned variable, and the other way round. Optimizer slots of a
    shard (``emb/part_1/Adagrad``) are saved as slices of ``emb/Adagrad``, so they re-shard too.

    Custom saveables (the hook for state that is not a Variable, e.g. hash tables): any object
    in ``var_list`` or in the "saveable_objects" collection that has both

    - ``_zps_saveable_specs()`` -> a list of ``(checkpoint_key, tensor)``: the tensors to save,
      under keys unique in the checkpoint. It is called once, when the Saver is built; the
      tensors' shapes may be known only at run time (e.g. a table's current rows). With
      ``sharded=True`` each tensor is saved from its own device.
    - ``_zps_restore(tensors_by_key)`` -> an Operation: given ``{checkpoint_key: tensor}`` (the
      restored values, dynamic shapes, placed on the device of the object's first tensor), build
      and return the op that loads them into the object. It runs as part of ``restore``.
    """

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5,
                 keep_checkpoint_every_n_hours=10000.0, name=None, restore_sequentially=False,
                 saver_def=None, builder=None, defer_build=False, allow_empty=False,
                 write_version=2, pad_step_number=False, save_relative_paths=False,
                 filename=None):
        if defer_build and var_list is not None:
            raise ValueError("If `var_list` is provided then build cannot be deferred. Either set "
                             "defer_build=False or var_list=None.")
        if write_version != 2:
            _logger.warning("zps writes only the V2 checkpoint layout; write_version=%r ignored",
                            write_version)
        self._var_list = var_list
        self._reshape = reshape
        self._sharded = sharded
        self._max_to_keep = max_to_keep
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._name = name
        self._restore_sequentially = restore_sequentially
        self.saver_def = saver_def
        self._builder = builder
        self._allow_empty = allow_empty
        self._pad_step_number = pad_step_number
        self._save_relative_paths = save_relative_paths
        self._filename = filename
        self._is_built = False
        self._is_empty = False
        self._last_checkpoints = []
        self._checkpoints_to_be_deleted = []
        # One save at a time, from reading the step to updating the state file: a Supervisor's
        # checkpoint thread saving while the training loop saves its last checkpoint must not
        # leave the older step recorded as the latest.
        self._save_lock = threading.Lock()
        self._next_checkpoint_time = time.time() + keep_checkpoint_every_n_hours * 3600
        if not defer_build:
            self.build()
        if self.saver_def is not None:
            self._check_saver_def()

    # -- building ------------------------------------------------------------------------------
    def build(self):
        """Build the save and restore ops (once)."""
        if self._is_built:
            return
        self._is_built = True
        if self.saver_def is not None:
            return
        var_list = self._var_list
        if var_list is None:
            var_list = global_variables() + get_default_graph().get_collection(_SAVEABLE_OBJECTS)
        items = _saveable_items(var_list)
        if not items:
            if self._allow_empty:
                self._is_empty = True
                return
            raise ValueError("No variables to save")
        graph = _graph_of(items)
        with graph.as_default(), graph.name_scope(self._name or "save") as scope:
            filename = array_ops.constant(self._filename or "model", dtype=_dtypes.string,
                                          name="Const")
            groups = _group_by_device(items) if self._sharded else [("", items)]
            save_tensor = self._add_save_ops(graph, filename, groups)
            restore_op = self._add_restore_ops(graph, filename, groups)
        self.saver_def = {
            "filename_tensor_name": filename.name,
            "save_tensor_name": save_tensor.name,
            "restore_op_name": restore_op.name,
            "max_to_keep": self._max_to_keep or 0,
            "sharded": bool(self._sharded),
            "keep_checkpoint_every_n_hours": float(self._keep_checkpoint_every_n_hours),
            "version": 2,
            "scope": scope.rstrip("/"),
        }

    def _device(self, graph, device):
        return graph.device(device or None) if self._sharded else contextlib.nullcontext()

    def _add_save_ops(self, graph, filename, groups):
        metas = []
        for i, (device, items) in enumerate(groups):
            with self._device(graph, device):
                metas.append(io_ops.save_shard(filename, [it.tensor for it in items],
                                               [it.key for it in items], shard=i,
                                               num_shards=len(groups), name="SaveShard"))
        with self._device(graph, groups[-1][0]):
            # The index names every shard, so it is written after all of them: the commit point.
            return io_ops.write_checkpoint_index(filename, metas, name="control_dependency")

    def _add_restore_ops(self, graph, filename, groups):
        assigns = []
        owners = {}  # custom saveable -> its items (restored together, after the variables)
        for device, items in groups:
            deps = list(assigns) if self._restore_sequentially else []
            with graph.control_dependencies(deps):
                whole = [it for it in items if it.owner is None and it.slice_info is None]
                if whole:
                    with self._device(graph, device):
                        values = io_ops.restore_shard(
                            filename, [it.key for it in whole],
                            [it.ref.dtype.base_dtype for it in whole],
                            [None if self._reshape else it.ref.get_shape() for it in whole],
                            name="RestoreV2")
                    values = values if isinstance(values, list) else [values]
                    for it, value in zip(whole, values):
                        assigns.extend(self._assign_item(graph, it, value))
                for it in items:
                    if it.owner is not None:
                        owners.setdefault(id(it.owner), (it.owner, []))[1].append(it)
                    elif it.slice_info is not None:
                        # Any region of a tensor saved whole or in any slicing: re-sharding works.
                        info = it.slice_info
                        with self._device(graph, device):
                            value = partitioned_variables.restore_slice(
                                filename, info.full_name, info.var_offset, info.var_shape,
                                it.ref.dtype.base_dtype, name="RestoreSlice")
                        assigns.extend(self._assign_item(graph, it, value))
        for owner, items in owners.values():
            with self._device(graph, items[0].tensor.device):
                values = io_ops.restore_shard(filename, [it.key for it in items],
                                              [it.tensor.dtype.base_dtype for it in items],
                                              None, name="RestoreV2")
            values = values if isinstance(values, list) else [values]
            op = owner._zps_restore({it.key: v for it, v in zip(items, values)})
            if not isinstance(op, Operation):
                op = getattr(op, "op", op)
            if not isinstance(op, Operation):
                raise TypeError("%r._zps_restore must return an Operation, got %r"
                                % (owner, type(op).__name__))
            assigns.append(op)
        return control_flow_ops.group(*assigns, name="restore_all")

    def _assign_item(self, graph, it, value):
        # A tf.distribute variable (it.distributed) is restored into each of its copies.
        var = it.distributed
        if var is None:
            return [self._assign(graph, it.ref, value)]
        restore_value = getattr(var, "_zps_restore_value", None)
        if restore_value is not None:
            with graph.colocate_with(it.ref.op):
                value = restore_value(value)
        return [self._assign(graph, ref, value) for ref in var._zps_restore_refs()]

    def _assign(self, graph, ref, value):
        with graph.colocate_with(ref.op):
            return state_ops.assign(ref, value, validate_shape=not self._reshape).op

    def _check_saver_def(self):
        if not isinstance(self.saver_def, dict):
            raise ValueError("saver_def must be a dict (as Saver.as_saver_def() returns), got %r"
                             % type(self.saver_def).__name__)
        for key in ("filename_tensor_name", "save_tensor_name", "restore_op_name"):
            if not self.saver_def.get(key):
                raise ValueError("saver_def lacks %s" % key)
        self._max_to_keep = self.saver_def.get("max_to_keep", self._max_to_keep)
        self._sharded = self.saver_def.get("sharded", self._sharded)

    def as_saver_def(self):
        """The names of the Saver's tensors and its settings, as a plain dict (TF1's SaverDef)."""
        return self.saver_def

    to_proto = as_saver_def

    # -- checkpoint bookkeeping ----------------------------------------------------------------
    @property
    def last_checkpoints(self):
        """The prefixes of the checkpoints this Saver still keeps, oldest first."""
        return [p for p, _ in self._last_checkpoints]

    def set_last_checkpoints(self, last_checkpoints):
        """Deprecated TF1 API: set the kept checkpoints (with the current time)."""
        if not isinstance(last_checkpoints, list):
            raise TypeError("last_checkpoints must be a list, got %r" % type(last_checkpoints))
        self._last_checkpoints = [(p, time.time()) for p in last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time):
        """Set the kept checkpoints: a list of (prefix, timestamp), oldest first."""
        if not isinstance(last_checkpoints_with_time, list):
            raise TypeError("last_checkpoints_with_time must be a list, got %r"
                            % type(last_checkpoints_with_time))
        self._last_checkpoints = [(p, float(t)) for p, t in last_checkpoints_with_time]

    def recover_last_checkpoints(self, checkpoint_paths):
        """Adopt ``checkpoint_paths`` (those that exist) as kept checkpoints, with their mtimes."""
        existing = [p for p in checkpoint_paths if checkpoint_management.checkpoint_exists(p)]
        mtimes = checkpoint_management.get_checkpoint_mtimes(existing)
        self.set_last_checkpoints_with_time(list(zip(existing, mtimes)))

    def _record_last_checkpoint(self, path):
        if not self._max_to_keep:
            return
        self._last_checkpoints = [(p, t) for p, t in self._last_checkpoints if p != path]
        self._last_checkpoints.append((path, time.time()))
        while len(self._last_checkpoints) > self._max_to_keep:
            self._checkpoints_to_be_deleted.append(self._last_checkpoints.pop(0))

    def _maybe_delete_old_checkpoints(self, meta_graph_suffix):
        while self._checkpoints_to_be_deleted:
            path, stamp = self._checkpoints_to_be_deleted.pop(0)
            if stamp > self._next_checkpoint_time:  # keep one every N hours
                self._next_checkpoint_time += self._keep_checkpoint_every_n_hours * 3600
                continue
            checkpoint_management.remove_checkpoint(path, meta_graph_suffix=meta_graph_suffix)

    # -- save / restore ------------------------------------------------------------------------
    def save(self, sess, save_path, global_step=None, latest_filename=None,
             meta_graph_suffix="meta", write_meta_graph=True, write_state=True,
             strip_default_attrs=False, save_debug_info=False):
        """Save the variables to ``save_path`` (``-<global_step>`` appended); returns the prefix.

        Also writes ``<prefix>.meta`` and updates ``<dir>/checkpoint`` (unless told not to), and
        deletes checkpoints beyond ``max_to_keep``. Returns None for an empty Saver.
        """
        if not self._is_built:
            raise RuntimeError("`build()` should be called before save if defer_build==True")
        latest_filename = latest_filename or checkpoint_management.LATEST_FILENAME
        if os.path.split(latest_filename)[0]:
            raise ValueError("'latest_filename' must not contain path components")
        save_path = os.fspath(save_path)
        with self._save_lock:
            return self._save(sess, save_path, global_step, latest_filename, meta_graph_suffix,
                              write_meta_graph, write_state, strip_default_attrs)

    def _save(self, sess, save_path, global_step, latest_filename, meta_graph_suffix,
              write_meta_graph, write_state, strip_default_attrs):
        if global_step is not None:
            if not isinstance(global_step, int | np.integer):
                global_step = training_util.global_step(sess, global_step)
            fmt = "%s-%08d" if self._pad_step_number else "%s-%d"
            checkpoint_file = fmt % (save_path, global_step)
        else:
            checkpoint_file = save_path
            if os.path.basename(save_path) == latest_filename:
                raise ValueError("'latest_filename' collides with 'save_path': '%s' and '%s'"
                                 % (latest_filename, save_path))
        save_dir = os.path.dirname(save_path)
        model_checkpoint_path = None
        if not self._is_empty:
            try:
                out = sess.run(self.saver_def["save_tensor_name"],
                               {self.saver_def["filename_tensor_name"]: checkpoint_file})
            except errors.OpError as e:
                if save_dir and not os.path.isdir(save_dir):
                    raise ValueError("Parent directory of %s doesn't exist, can't save."
                                     % save_path) from e
                raise
            model_checkpoint_path = _as_str(out)
            if write_state:
                self._record_last_checkpoint(model_checkpoint_path)
                kept = self._last_checkpoints or [(model_checkpoint_path, time.time())]
                checkpoint_management.update_checkpoint_state(
                    save_dir or os.curdir, model_checkpoint_path, [p for p, _ in kept],
                    latest_filename, [t for _, t in kept],
                    save_relative_paths=self._save_relative_paths)
                self._maybe_delete_old_checkpoints(meta_graph_suffix)
        if write_meta_graph:
            self.export_meta_graph(
                checkpoint_management.meta_graph_filename(checkpoint_file, meta_graph_suffix),
                strip_default_attrs=strip_default_attrs, graph=_session_graph(sess))
        return model_checkpoint_path

    def restore(self, sess, save_path):
        """Restore the variables from checkpoint ``save_path`` (a prefix, as ``save`` returned).

        NotFoundError if the checkpoint or one of the variables is missing from it,
        InvalidArgumentError if a saved shape or dtype differs from the variable's.
        """
        if self._is_empty:
            return
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        save_path = os.fspath(save_path)
        if not checkpoint_management.checkpoint_exists(save_path):
            raise _CheckpointNotFoundError(
                None, None, "The passed save_path is not a valid checkpoint: %s (there is no %s). "
                "Pass a prefix as Saver.save returns it or tf.train.latest_checkpoint(dir) finds "
                "it." % (save_path, save_path + checkpoint_format.INDEX_SUFFIX))
        _logger.info("Restoring parameters from %s", save_path)
        try:
            sess.run(self.saver_def["restore_op_name"],
                     {self.saver_def["filename_tensor_name"]: save_path})
        except errors.NotFoundError as e:
            raise _restore_error(e, "a Variable name or other graph key that is missing") from e
        except errors.InvalidArgumentError as e:
            raise _restore_error(e, "a mismatch between the current graph and the graph") from e

    # -- meta graph ----------------------------------------------------------------------------
    def export_meta_graph(self, filename=None, collection_list=None, as_text=False,
                          export_scope=None, clear_devices=False, clear_extraneous_savers=False,
                          strip_default_attrs=False, save_debug_info=False, graph=None):
        """The graph and this Saver's names as a plain dict; written to ``filename`` (msgpack)."""
        return export_meta_graph(filename, graph=graph, saver_def=self.saver_def,
                                 collection_list=collection_list, clear_devices=clear_devices,
                                 strip_default_attrs=strip_default_attrs)


def export_meta_graph(filename=None, meta_info_def=None, graph_def=None, saver_def=None,
                      collection_list=None, as_text=False, graph=None, export_scope=None,
                      clear_devices=False, clear_extraneous_savers=False,
                      strip_default_attrs=False, save_debug_info=False, **kwargs):
    """The graph as a meta graph (a plain dict: graph_def, saver_def, collections by name),
    written atomically to ``filename`` as msgpack when given. Never pickled.

    A collection is kept when all its items are Variables, Tensors, Operations or plain
    str/int/float values (``{"variable": ...}``, ``{"tensor": name}``, ``{"operation": name}``).
    """
    graph = graph or get_default_graph()
    if graph_def is None:
        graph_def = graph_to_def(graph)
    if clear_devices:
        for node in graph_def["node"]:
            node["device"] = ""
    collections = {}
    for key in collection_list if collection_list is not None else graph.get_all_collection_keys():
        names = [_collection_item_name(x) for x in graph.get_collection(key)]
        if names and all(n is not None for n in names):
            collections[key] = names
    meta = {"format": META_GRAPH_FORMAT,
            "meta_info_def": dict(meta_info_def or {}, stripped_default_attrs=strip_default_attrs),
            "graph_def": graph_def, "saver_def": saver_def, "collection_def": collections}
    if filename:
        data = msgpack.packb(meta, use_bin_type=True)
        checkpoint_format.atomic_write(os.fspath(filename), lambda f: f.write(data))
    return meta


def import_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None, **kwargs):
    """Add a meta graph (a ``.meta`` file Saver.save wrote, or its dict) to the default graph.

    Rebuilds its collections (Variables included) and returns a Saver over its saver_def, to
    ``restore`` a checkpoint into the imported graph; None if the meta graph has no Saver and no
    variables.
    """
    meta = _read_meta_graph(meta_graph_or_file)
    graph = get_default_graph()
    graph_def = meta["graph_def"]
    if clear_devices:
        graph_def = dict(graph_def, node=[dict(n, device="") for n in graph_def["node"]])
    import_graph_def(graph_def, name=import_scope or "")
    prefix = import_scope + "/" if import_scope else ""
    variables = {}
    for key, items in meta.get("collection_def", {}).items():
        for item in items:
            if isinstance(item, dict) and "variable" in item:
                var = variables.get(item["variable"])
                if var is None:
                    var = variables[item["variable"]] = _variable_from_def(graph, item, prefix)
                item = var
            elif isinstance(item, dict):  # {"tensor": name} or {"operation": name}
                item = graph.as_graph_element(prefix + next(iter(item.values())))
            graph.add_to_collection(key, item)
    saver_def = meta.get("saver_def")
    if saver_def:
        names = ("filename_tensor_name", "save_tensor_name", "restore_op_name")
        return Saver(saver_def=dict(saver_def, **{k: prefix + saver_def[k] for k in names}))
    return Saver() if variables else None


def _read_meta_graph(meta_graph_or_file):
    if isinstance(meta_graph_or_file, dict):
        meta = meta_graph_or_file
    else:
        path = os.fspath(meta_graph_or_file)
        try:
            with open(path, "rb") as f:
                meta = msgpack.unpackb(f.read(), raw=False, strict_map_key=True)
        except FileNotFoundError:
            raise OSError("File %s does not exist." % path) from None
        except (ValueError, msgpack.UnpackException) as e:
            raise ValueError("%s is not a zps meta graph (msgpack): %s" % (path, e)) from None
    if not isinstance(meta, dict) or meta.get("format") != META_GRAPH_FORMAT or not isinstance(
            meta.get("graph_def"), dict) or not isinstance(meta.get("collection_def", {}), dict):
        raise ValueError("Not a zps meta graph (from Saver.save or export_meta_graph)")
    return meta


def _variable_from_def(graph, info, prefix):
    # TODO(variables.py): Variable(variable_def=...) should do this; until then the Variable's
    # fields are filled from the imported ops, as TF1's Variable._init_from_proto does.
    def element(key):
        return graph.as_graph_element(prefix + info[key])

    var = Variable.__new__(Variable)
    var._variable = graph.as_graph_element(prefix + info["variable"] + ":0")
    var._initializer_op = element("initializer")
    var._snapshot = element("snapshot")
    var._initial_value = element("initial_value")
    var._trainable = bool(info.get("trainable", True))
    var._constraint = None
    slice_def = info.get("save_slice_info")
    var._save_slice_info = SaveSliceInfo(save_slice_info_def=slice_def,
                                         import_scope=prefix[:-1]) if slice_def else None
    return var


def _collection_item_name(item):
    if isinstance(item, Variable):
        out = {"variable": item.op.name, "initializer": item.initializer.name,
               "snapshot": item.value().name, "initial_value": item.initial_value.name,
               "trainable": bool(item.trainable)}
        if item._save_slice_info is not None:
            out["save_slice_info"] = item._save_slice_info.to_proto()
        return out
    if isinstance(item, Tensor):
        return {"tensor": item.name}
    if isinstance(item, Operation):
        return {"operation": item.name}
    if isinstance(item, str | int | float):
        return item
    return None


# -- helpers -------------------------------------------------------------------------------------
def _ref(v):
    return v._ref() if isinstance(v, Variable) else v


class _Item:
    """One tensor of a checkpoint: its key, the tensor saved, the variable reference it is
    restored into (None for a custom saveable, which restores itself), the SaveSliceInfo of a
    shard of a partitioned variable, and the custom saveable it belongs to."""

    __slots__ = ("key", "tensor", "ref", "slice_info", "owner", "distributed")

    def __init__(self, key, tensor, ref=None, slice_info=None, owner=None, distributed=None):
        self.key, self.tensor, self.ref = key, tensor, ref
        self.slice_info, self.owner = slice_info, owner
        self.distributed = distributed   # a tf.distribute variable: its copies are restored

    @property
    def device(self):
        return canonical_name(self.tensor.device)


def _is_custom_saveable(obj):
    return callable(getattr(obj, "_zps_saveable_specs", None)) and callable(
        getattr(obj, "_zps_restore", None))


def _saveable_items(var_list):
    """The checkpoint items of a Saver's ``var_list``, sorted by key; checks names."""
    if isinstance(var_list, dict):
        pairs = list(var_list.items())
    elif isinstance(var_list, list | tuple | set):
        pairs = [(None, v) for v in var_list]
    else:
        raise TypeError("Saver's var_list must be a list or a dict of variables, got %r"
                        % type(var_list).__name__)
    items, seen = [], {}
    slot_info = _slot_slice_infos(pairs)
    for name, v in pairs:
        name = name.name if isinstance(name, Tensor) else name
        if isinstance(var_list, dict) and not isinstance(name, str):
            raise TypeError("names_to_saveables must be a dict mapping string names to trackable "
                            "operations. Name is not a string: %r; give each checkpoint key as a "
                            "str" % (name,))
        if _is_custom_saveable(v):
            for key, tensor in v._zps_saveable_specs():
                items.append(_Item(str(key), convert_to_tensor(tensor), owner=v))
            continue
        shards = list(v) if isinstance(v, PartitionedVariable | list | tuple) else None
        if shards is not None:
            full_name = v.name if name is None and isinstance(v, PartitionedVariable) else name
            for shard in shards:
                _check_saveable(shard, name)
                info = _slice_info(shard)
                if info is None:
                    raise ValueError("Variable %s saved as part of %r has no slice information "
                                     "(only shards of a partitioned variable can be saved as a "
                                     "list)" % (_ref(shard).op.name, full_name))
                items.append(_slice_item(full_name, shard, info))
            continue
        _check_saveable(v, name)
        info = _slice_info(v) or slot_info.get(id(v))
        if info is not None:  # a shard of a partitioned variable: saved as a slice of the whole
            items.append(_slice_item(info.full_name if name is None else str(name), v, info))
        elif _is_distributed(v):
            # A tf.distribute variable: saved once under its name (a SyncOnReadVariable: its
            # aggregate), restored into every copy.
            save = getattr(v, "_zps_save_tensor", None)
            items.append(_Item(_ref(v).op.name if name is None else str(name),
                               save() if save is not None else _ref(v), _ref(v), distributed=v))
        else:
            items.append(_Item(_ref(v).op.name if name is None else str(name), _ref(v), _ref(v)))
    keys = {}
    for it in items:
        if it.key in keys:
            raise ValueError("At least two variables have the same name: %s" % it.key)
        keys[it.key] = it
        if it.ref is not None:
            if it.ref in seen:
                raise ValueError("The same variable %s is saved under two names: %s and %s"
                                 % (it.ref.op.name, seen[it.ref], it.key))
            seen[it.ref] = it.key
    return sorted(items, key=lambda it: it.key)


def _slot_slice_infos(pairs):
    """``{id(slot): SaveSliceInfo}`` for the unnamed, sliceless variables of ``pairs`` that are
    slots of a shard (``<shard>/<slot name>``, the shard's shape): as TF1's slot_creator does, a
    slot of ``emb/part_1`` is saved as slice of ``emb/<slot name>``, so optimizer state re-shards
    with its variable."""
    graph = next((v.graph for _, v in pairs if isinstance(v, Variable)), None)
    shards = {}
    for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES) if graph is not None else ():
        info = _slice_info(v)
        if info is not None:
            shards[v.op.name] = (v, info)
    out = {}
    if not shards:
        return out
    for name, v in pairs:
        if name is not None or not isinstance(v, Variable) or _slice_info(v) is not None:
            continue
        primary, _, slot = v.op.name.rpartition("/")
        found = shards.get(primary)
        if found is None or found[0].get_shape().as_list() != v.get_shape().as_list():
            continue
        info = found[1]
        out[id(v)] = SaveSliceInfo(info.full_name + "/" + slot, info.full_shape, info.var_offset,
                                   info.var_shape)
    return out


def _slice_info(v):
    return getattr(v, "_save_slice_info", None) if isinstance(v, Variable) else None


def _is_distributed(v):
    """Whether ``v`` is a tf.distribute variable: saved once, restored into each of its copies."""
    return callable(getattr(v, "_zps_restore_refs", None))


def _slice_item(full_name, v, info):
    if full_name != info.full_name:
        info = SaveSliceInfo(full_name, info.full_shape, info.var_offset, info.var_shape)
    key = checkpoint_format.slice_key(full_name, info.full_shape, info.var_offset, info.var_shape)
    distributed = v if _is_distributed(v) else None
    return _Item(key, _ref(v), _ref(v), slice_info=info, distributed=distributed)


def _check_saveable(v, name):
    ok = isinstance(v, Variable) or (isinstance(v, Tensor) and v.is_ref)
    if not ok:
        raise TypeError("Variable to save is not a Variable: %r%s (only variables, their "
                        "reference tensors, PartitionedVariables and objects with "
                        "_zps_saveable_specs/_zps_restore can be saved and restored)"
                        % (v, "" if name is None else " (saved as %r)" % name))


def _graph_of(items):
    graphs = {it.tensor.graph for it in items}
    if len(graphs) != 1:
        raise ValueError("The variables to save come from %d different graphs" % len(graphs))
    return graphs.pop()


def _group_by_device(items):
    """``[(device, [item, ...]), ...]`` sorted by device (TF1's _GroupByDevices)."""
    groups = {}
    for it in items:
        groups.setdefault(it.device, []).append(it)
    return sorted(groups.items())


def _as_str(value):
    v = value.item() if hasattr(value, "item") else value
    return v.decode("utf-8") if isinstance(v, bytes) else str(v)


def _session_graph(sess):
    return getattr(sess, "graph", None) or get_default_graph()


def _restore_error(err, reason):
    return type(err)(err.node_def, err.op, "Restoring from checkpoint failed. This is most likely "
                     "due to %s from the checkpoint. Please ensure that you have not altered the "
                     "graph expected based on the checkpoint. Original error:\n\n%s"
                     % (reason, err.message))


__all__ = ["Saver", "export_meta_graph", "import_meta_graph"]
