"""``SavedModelBuilder``: write a SavedModel, one or more tagged meta graphs sharing one set of
variables and assets (TF1's ``tf.saved_model.builder``); and ``simple_save``, its one-call form.

>>> import os, tempfile, zps as tf
>>> export_dir = os.path.join(tempfile.mkdtemp(), "model")
>>> b = SavedModelBuilder(export_dir)
>>> with tf.Graph().as_default(), tf.Session() as sess:
...     v = tf.Variable(3.0, name="v")
...     sess.run(v.initializer)
...     b.add_meta_graph_and_variables(sess, ["train"])
...     b.add_meta_graph(["serve"])
>>> os.path.basename(b.save())
b'saved_model.zps'
>>> "variables.index" in os.listdir(os.path.join(export_dir, "variables"))
True
"""

import filecmp
import logging
import os
import shutil

import msgpack

from zps.framework import checkpoint_format, errors
from zps.framework import graph as _graph
from zps.saved_model import constants, meta_graph_pb, signature_constants, signature_def_utils, tag_constants
from zps.train import saver as tf_saver

__all__ = ["SavedModelBuilder"]

_logger = logging.getLogger(__name__)


class SavedModelBuilder:
    """Builds a SavedModel in ``export_dir`` (which must not exist, or be empty).

    The first meta graph is added with ``add_meta_graph_and_variables`` (it saves the
    variables, once); more graphs over the same variables with ``add_meta_graph``; ``save``
    writes ``saved_model.zps``. Each meta graph has a set of tags that ``loader.load`` picks it by.
    """

    def __init__(self, export_dir):
        self._export_dir = os.fsdecode(export_dir)
        if os.path.exists(self._export_dir):
            if os.listdir(self._export_dir):
                raise AssertionError(
                    "Export directory %s already exists, and isn't empty. Please choose a "
                    "different export directory, or delete all the contents of the specified "
                    "directory." % self._export_dir)
        else:
            os.makedirs(self._export_dir)
        self._meta_graphs = []
        self._has_saved_variables = False
        self._saved_asset_files = set()

    def add_meta_graph_and_variables(self, sess, tags, signature_def_map=None,
                                     assets_collection=None, legacy_init_op=None,
                                     clear_devices=False, main_op=None, strip_default_attrs=False,
                                     saver=None):
        """Save the variables of ``sess`` and add its graph as the first meta graph.

        ``signature_def_map``: {key: SignatureDef}; ``assets_collection``: scalar string
        constants holding file paths (copied into ``assets/``; fed the copies' paths on load);
        ``main_op`` (or the older ``legacy_init_op``): an Operation run after the restore on
        load; ``saver``: the Saver to save with (default: a sharded one over all variables).
        AssertionError when called twice.
        """
        if self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has already been "
                                 "saved. Please invoke `add_meta_graph()` instead.")
        signature_def_map = signature_def_map or {}
        _validate_signature_def_map(signature_def_map)
        main_op = main_op if main_op is not None else legacy_init_op
        graph = sess.graph
        with graph.as_default():
            assets = self._save_and_write_assets(assets_collection)
            _maybe_add_main_op(graph, main_op)
            saver = saver or _default_saver()
            variables_dir = os.path.join(self._export_dir, constants.VARIABLES_DIRECTORY)
            os.makedirs(variables_dir, exist_ok=True)
            # No checkpoint state file: a SavedModel is copied and moved whole.
            saver.save(sess, os.path.join(variables_dir, constants.VARIABLES_FILENAME),
                       write_meta_graph=False, write_state=False)
            meta = saver.export_meta_graph(clear_devices=clear_devices,
                                           strip_default_attrs=strip_default_attrs, graph=graph)
        self._add(meta, tags, signature_def_map, assets)
        self._has_saved_variables = True

    def add_meta_graph(self, tags, signature_def_map=None, assets_collection=None,
                       legacy_init_op=None, clear_devices=False, main_op=None,
                       strip_default_attrs=False, saver=None):
        """Add the default graph as another meta graph, over the variables already saved
        (arguments as ``add_meta_graph_and_variables``). AssertionError if none were saved."""
        if not self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has not been saved "
                                 "yet. Please invoke `add_meta_graph_and_variables()` first.")
        signature_def_map = signature_def_map or {}
        _validate_signature_def_map(signature_def_map)
        main_op = main_op if main_op is not None else legacy_init_op
        graph = _graph.get_default_graph()
        assets = self._save_and_write_assets(assets_collection)
        _maybe_add_main_op(graph, main_op)
        saver = saver or _default_saver()
        meta = saver.export_meta_graph(clear_devices=clear_devices,
                                       strip_default_attrs=strip_default_attrs, graph=graph)
        self._add(meta, tags, signature_def_map, assets)

    def save(self, as_text=False):
        """Write ``saved_model.zps``; returns its path (bytes, as TF1's).

        zps's SavedModel has no text form (graph constants are bytes): ``as_text=True`` writes
        the same binary file, with a warning.
        """
        if as_text:
            _logger.warning("zps writes SavedModels in binary form only (saved_model.zps, "
                            "msgpack); as_text=True is ignored")
        os.makedirs(self._export_dir, exist_ok=True)
        path = os.path.join(self._export_dir, constants.SAVED_MODEL_FILENAME_ZPS)
        data = msgpack.packb({"format": constants.SAVED_MODEL_FORMAT,
                              "version": constants.SAVED_MODEL_SCHEMA_VERSION,
                              "meta_graphs": self._meta_graphs}, use_bin_type=True)
        checkpoint_format.atomic_write(path, lambda f: f.write(data))
        _logger.info("SavedModel written to: %s", path)
        return os.fsencode(path)

    # -- helpers -----------------------------------------------------------------------------
    def _add(self, meta, tags, signature_def_map, assets):
        info = meta_graph_pb.MetaInfoDef(tags=list(tags))   # checks they are strings
        meta = dict(meta, meta_info_def=dict(meta["meta_info_def"], tags=list(info.tags)))
        meta["signature_def"] = {k: meta_graph_pb.to_plain(v)
                                 for k, v in signature_def_map.items()}
        meta["asset_file_def"] = assets
        self._meta_graphs.append(meta)

    def _save_and_write_assets(self, assets_collection):
        """The asset_file_def entries of ``assets_collection``; copies the files to assets/."""
        if assets_collection is None:
            return []
        sources, out = {}, []   # file name in assets/ -> source path
        for tensor in assets_collection:
            path = _asset_path_from_tensor(tensor)
            if not path:
                raise ValueError("Asset filepath tensor %s in is invalid." % tensor)
            name = _asset_filename_to_add(path, sources)
            out.append({"filename": name, "tensor_info": {"name": tensor.name}})
            sources[name] = path
        assets_dir = os.path.join(self._export_dir, constants.ASSETS_DIRECTORY)
        os.makedirs(assets_dir, exist_ok=True)
        for name, source in sources.items():
            dest = os.path.join(assets_dir, name)
            if not os.path.isfile(source):   # TF1's copy fails too: the export would be broken
                raise errors.NotFoundError(
                    None, None, "Asset file %s does not exist (named by %s): the SavedModel "
                    "needs it. Create the file, or leave its tensor out of assets_collection."
                    % (source, next(t.name for t in assets_collection
                                    if _asset_path_from_tensor(t) == source)))
            if source != dest and dest not in self._saved_asset_files:
                shutil.copyfile(source, dest)
                self._saved_asset_files.add(dest)
        return out


def simple_save(session, export_dir, inputs, outputs, legacy_init_op=None):
    """Export ``session``'s graph for serving in one call: tag SERVING, one predict signature
    under "serving_default" (``inputs``/``outputs``: dicts of name -> Tensor), the files of the
    ``tf.GraphKeys.ASSET_FILEPATHS`` collection as assets, devices cleared."""
    signature_def_map = {signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY:
                         signature_def_utils.predict_signature_def(inputs, outputs)}
    b = SavedModelBuilder(export_dir)
    b.add_meta_graph_and_variables(
        session, tags=[tag_constants.SERVING], signature_def_map=signature_def_map,
        assets_collection=session.graph.get_collection(_graph.GraphKeys.ASSET_FILEPATHS),
        main_op=legacy_init_op, clear_devices=True)
    b.save()


def _default_saver():
    # Sharded: on a cluster each ps task writes its own variables.
    return tf_saver.Saver(sharded=True, allow_empty=True)


def _validate_signature_def_map(signature_def_map):
    for key, signature_def in signature_def_map.items():
        if not isinstance(signature_def, meta_graph_pb.SignatureDef):
            raise TypeError("signature_def_map[%r] must be a SignatureDef (as "
                            "signature_def_utils.predict_signature_def or build_signature_def "
                            "make it), got %s" % (key, type(signature_def).__name__))
        for tensor_info in list(signature_def.inputs.values()) + list(
                signature_def.outputs.values()):
            _validate_tensor_info(tensor_info)
    for reserved, what in ((constants.INIT_OP_SIGNATURE_KEY, "for initialization"),
                           (constants.TRAIN_OP_SIGNATURE_KEY, "for the train op")):
        if reserved in signature_def_map:
            raise KeyError('SignatureDef map key "%s" is reserved %s. Please use a different '
                           "key." % (reserved, what))


def _validate_tensor_info(tensor_info):
    if tensor_info.WhichOneof("encoding") is None:
        raise AssertionError("Invalid `tensor_info`: %s. All TensorInfo protos used in the "
                             "SignatureDefs must have one of the 'encoding' fields (e.g., name or "
                             "coo_sparse) set." % tensor_info)
    if tensor_info.dtype == 0:
        raise AssertionError("Invalid `tensor_info`: %s. All TensorInfo protos used in the "
                             "SignatureDefs must have the dtype field set." % tensor_info)


def _maybe_add_main_op(graph, main_op):
    if main_op is None:
        return
    if not isinstance(main_op, _graph.Operation):
        raise TypeError("Expected %s to be an Operation but got type %s instead."
                        % (main_op, type(main_op)))
    for key in (constants.MAIN_OP_KEY, constants.LEGACY_INIT_OP_KEY):
        if graph.get_collection(key):
            raise ValueError("Graph already contains one or more main ops under the collection "
                             "%s." % key)
    graph.add_to_collection(constants.MAIN_OP_KEY, main_op)


def _asset_path_from_tensor(tensor):
    if not isinstance(tensor, _graph.Tensor):
        raise TypeError("Asset path tensor %s must be a Tensor." % (tensor,))
    if tensor.op.type != "Const":
        raise TypeError("Asset path tensor %s must be of type constant. Has type %s instead."
                        % (tensor, tensor.op.type))
    if tensor.dtype.base_dtype.name != "string":
        raise TypeError("Asset path tensor %s must be of dtype string. Has type %s instead."
                        % (tensor, tensor.dtype))
    value = tensor.op.get_attr("value")
    if getattr(value, "size", 1) != 1:
        raise TypeError("Asset path tensor %s must be a scalar." % tensor)
    value = value.reshape(-1)[0] if hasattr(value, "reshape") else value
    return os.fsdecode(value)


def _asset_filename_to_add(path, sources):
    """A unique name in assets/ for ``path``: its basename, suffixed ``_1``, ``_2`` ... when
    another file of that name and different content is there (TF1's rule)."""
    name = os.path.basename(path)
    other = sources.get(name)
    if other is None or other == path or (os.path.isfile(path) and os.path.isfile(other)
                                          and filecmp.cmp(path, other, shallow=False)):
        return name
    i, unique = 1, name
    while unique in sources:
        unique = "%s_%d" % (name, i)
        i += 1
    return unique
