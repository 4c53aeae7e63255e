"""Load a SavedModel's meta graph into a session (TF1's ``tf.saved_model.loader``).

``load`` imports the meta graph whose tags equal the ones asked for (the first such, if several
do), restores its variables and runs its main op with the asset tensors fed the paths of the
files in the export's ``assets/``. The file is checked before anything is imported: a corrupt or
foreign file raises OSError and runs nothing.
"""

import logging
import os

import msgpack

from zps.framework import graph as _graph
from zps.saved_model import constants, meta_graph_pb, signature_def_utils
from zps.train import saver as tf_saver

__all__ = ["load", "maybe_saved_model_directory"]

_logger = logging.getLogger(__name__)


def maybe_saved_model_directory(export_dir):
    """Whether ``export_dir`` holds a zps SavedModel file (it may still fail to load).

    False for a TensorFlow export (``saved_model.pb``): zps cannot load those."""
    return os.path.isfile(os.path.join(os.fsdecode(export_dir),
                                       constants.SAVED_MODEL_FILENAME_ZPS))


def contains_saved_model(export_dir):
    """Whether ``export_dir`` (a str, bytes or PathLike) holds a zps SavedModel file."""
    return maybe_saved_model_directory(export_dir)


def parse_saved_model(export_dir):
    """The checked contents of ``export_dir``'s saved_model.zps: ``{"format", "version",
    "meta_graphs": [meta graph dict, ...]}``. OSError if missing, unreadable or not one."""
    export_dir = os.fsdecode(export_dir)
    path = os.path.join(export_dir, constants.SAVED_MODEL_FILENAME_ZPS)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        hint = ""
        if any(os.path.exists(os.path.join(export_dir, name)) for name in (
                constants.SAVED_MODEL_FILENAME_PB, constants.SAVED_MODEL_FILENAME_PBTXT)):
            hint = (" (the directory holds a TensorFlow SavedModel: zps cannot read those; "
                    "export the model with zps's tf.saved_model.builder or simple_save)")
        raise OSError("SavedModel file does not exist at: %s%s%s%s" % (
            export_dir, os.path.sep, constants.SAVED_MODEL_FILENAME_ZPS, hint)) from None
    try:
        saved_model = msgpack.unpackb(data, raw=False, strict_map_key=True)
        _check_saved_model(saved_model)
    except (ValueError, TypeError, KeyError, AttributeError, msgpack.UnpackException) as e:
        raise OSError("Cannot parse file %s: %s." % (path, e)) from None
    return saved_model


def _check_saved_model(saved_model):
    if not isinstance(saved_model, dict) or saved_model.get(
            "format") != constants.SAVED_MODEL_FORMAT:
        raise ValueError("not a zps SavedModel (from tf.saved_model.builder or simple_save)")
    version = saved_model.get("version")
    if version != constants.SAVED_MODEL_SCHEMA_VERSION:
        raise ValueError("SavedModel format version %r; this zps reads version %d (a newer zps "
                         "wrote it? upgrade zps)" % (version, constants.SAVED_MODEL_SCHEMA_VERSION))
    meta_graphs = saved_model.get("meta_graphs")
    if not isinstance(meta_graphs, list) or not meta_graphs:
        raise ValueError("it has no meta graphs")
    for meta in meta_graphs:
        tf_saver._read_meta_graph(meta)   # the graph part, as Saver's .meta files are checked
        if not isinstance(meta.get("meta_info_def"), dict):
            raise ValueError("a meta graph has no meta_info_def (its tags)")
        meta_graph_pb.MetaGraphDef(meta)  # the tags, signatures and assets


def load(sess, tags, export_dir, import_scope=None, **saver_kwargs):
    """Load the meta graph of ``export_dir`` tagged ``tags`` into ``sess`` (its graph), restore
    its variables and run its main op; returns its MetaGraphDef (``signature_def`` ...).

    ``import_scope`` prefixes the loaded names (``scope/x:0``); the returned MetaGraphDef keeps
    the names as saved. RuntimeError if no meta graph has exactly these tags.
    """
    return SavedModelLoader(export_dir).load(sess, tags, import_scope, **saver_kwargs)


class SavedModelLoader:
    """Loads the graphs and variables of the SavedModel in ``export_dir``."""

    def __init__(self, export_dir):
        self._export_dir = os.fsdecode(export_dir)
        self._variables_path = os.path.join(self._export_dir, constants.VARIABLES_DIRECTORY,
                                            constants.VARIABLES_FILENAME)
        self._saved_model = parse_saved_model(self._export_dir)

    export_dir = property(lambda self: self._export_dir, doc="The SavedModel's directory.")
    variables_path = property(lambda self: self._variables_path,
                              doc="The prefix of the variables' checkpoint.")
    saved_model = property(lambda self: self._saved_model, doc="The parsed saved_model.zps.")

    def _meta_graph(self, tags):
        available = []
        for meta in self._saved_model["meta_graphs"]:
            meta_tags = set(meta["meta_info_def"].get("tags", ()))
            available.append(meta_tags)
            if meta_tags == set(tags):
                return meta
        raise RuntimeError(
            "MetaGraphDef associated with tags %s could not be found in SavedModel, with "
            "available tags '%s'. Pass one of the available tag sets."
            % (str(tags).strip("[]"), available))

    def get_meta_graph_def_from_tags(self, tags):
        """The MetaGraphDef tagged exactly ``tags`` (RuntimeError if none is)."""
        return meta_graph_pb.MetaGraphDef(self._meta_graph(tags))

    def load_graph(self, graph, tags, import_scope=None, **saver_kwargs):
        """Import the meta graph tagged ``tags`` into ``graph``; returns ``(saver, None)``."""
        with graph.as_default():
            return tf_saver.import_meta_graph(self._meta_graph(tags), import_scope=import_scope,
                                              **saver_kwargs), None

    def restore_variables(self, sess, saver, import_scope=None):
        """Restore the variables into ``sess`` with ``saver`` (None: the model has none)."""
        if saver is None:
            if sess.graph.get_collection(_graph.GraphKeys.GLOBAL_VARIABLES, scope=import_scope):
                raise ValueError("No tf.train.Saver object was passed to the function "
                                 "`SavedModelLoader.restore_variables`. Since there are variables "
                                 "in the graph, a saver is required.")
            _logger.info("The specified SavedModel has no variables; no checkpoints were "
                         "restored.")
            return
        saver.restore(sess, self._variables_path)

    def run_init_ops(self, sess, tags, import_scope=None):
        """Run the main op (or legacy init op) of the meta graph tagged ``tags``, with the asset
        tensors fed their files' paths in this export."""
        meta = self._meta_graph(tags)
        meta_graph_def = meta_graph_pb.MetaGraphDef(meta)
        prefix = import_scope + "/" if import_scope else ""
        assets_dir = os.path.join(self._export_dir, constants.ASSETS_DIRECTORY)
        feeds = {prefix + a.tensor_info.name: os.path.join(assets_dir, a.filename)
                 for a in meta_graph_def.asset_file_def}
        with sess.graph.as_default():
            init_op = _init_op(sess.graph, meta, meta_graph_def, import_scope)
            if init_op is not None:
                sess.run([init_op], feed_dict=feeds)

    def load(self, sess, tags, import_scope=None, **saver_kwargs):
        """Import, restore and initialize (see ``load``); returns the MetaGraphDef."""
        with sess.graph.as_default():
            saver, _ = self.load_graph(sess.graph, tags, import_scope, **saver_kwargs)
            self.restore_variables(sess, saver, import_scope)
            self.run_init_ops(sess, tags, import_scope)
        return self.get_meta_graph_def_from_tags(tags)


def _init_op(graph, meta, meta_graph_def, import_scope):
    if constants.INIT_OP_SIGNATURE_KEY in meta_graph_def.signature_def:
        return signature_def_utils.load_op_from_signature_def(
            meta_graph_def.signature_def[constants.INIT_OP_SIGNATURE_KEY],
            constants.INIT_OP_SIGNATURE_KEY, import_scope)
    prefix = import_scope + "/" if import_scope else ""
    for key in (constants.MAIN_OP_KEY, constants.LEGACY_INIT_OP_KEY):
        items = meta["collection_def"].get(key)
        if items:
            if len(items) != 1:
                raise RuntimeError("Expected exactly one SavedModel init op. Found %d: %s."
                                   % (len(items), items))
            name = items[0].get("operation") if isinstance(items[0], dict) else None
            if name is None:
                raise RuntimeError("The SavedModel's %s collection holds %r, not an operation"
                                   % (key, items[0]))
            return graph.as_graph_element(prefix + name)
    return None
