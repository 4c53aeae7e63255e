"""``tf.saved_model`` (TF1's v1 API): export a graph, its variables and assets for serving,
and load it back into a fresh graph.

An export directory holds

- ``saved_model.zps``: msgpack ``{"format": "zps-saved-model", "version": 1, "meta_graphs":
  [...]}``; each meta graph is what ``tf.train.export_meta_graph`` returns (graph_def, saver_def,
  collection_def) plus ``meta_info_def["tags"]``, ``signature_def`` ({key: {"inputs": {name:
  tensor_info}, "outputs": {...}, "method_name": str}}) and ``asset_file_def``. Plain data only,
  never pickled; written atomically.
- ``variables/variables.index`` and its shards: a zps checkpoint (``tf.train.Saver``).
- ``assets/``: copies of the ``assets_collection`` files; on load their path tensors are fed the
  copies' paths while the main op runs.

zps cannot read TensorFlow's ``saved_model.pb`` (nor TensorFlow Serving zps's files).

>>> import os, tempfile, numpy as np, zps as tf
>>> export_dir = os.path.join(tempfile.mkdtemp(), "model")
>>> with tf.Graph().as_default(), tf.Session() as sess:
...     x = tf.placeholder(tf.float32, [None, 2], name="x")
...     w = tf.Variable([[1.0], [2.0]], name="w")
...     y = tf.matmul(x, w, name="y")
...     sess.run(w.initializer)
...     tf.saved_model.simple_save(sess, export_dir, inputs={"x": x}, outputs={"y": y})
>>> with tf.Graph().as_default(), tf.Session() as sess:
...     meta = tf.saved_model.loader.load(sess, [tf.saved_model.tag_constants.SERVING], export_dir)
...     sig = meta.signature_def["serving_default"]
...     print(sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: [[3.0, 4.0]]}))
[[11.]]
"""

from zps.saved_model import (
    builder,
    constants,
    loader,
    main_op,
    signature_constants,
    signature_def_utils,
    tag_constants,
    utils,
)
from zps.saved_model.builder import SavedModelBuilder as Builder
from zps.saved_model.builder import simple_save
from zps.saved_model.constants import *  # noqa: F403
from zps.saved_model.loader import contains_saved_model, load, maybe_saved_model_directory
from zps.saved_model.main_op import main_op_with_restore
from zps.saved_model.signature_constants import *  # noqa: F403
from zps.saved_model.signature_def_utils import *  # noqa: F403
from zps.saved_model.tag_constants import *  # noqa: F403
from zps.saved_model.utils import *  # noqa: F403

# TF1's tf.compat.v1.saved_model names; TF2's object-based save/load (save, Asset, SaveOptions,
# load_v2, experimental) have no graph-mode meaning and are left out.
__all__ = [
    "ASSETS_DIRECTORY", "ASSETS_KEY", "Builder", "CLASSIFY_INPUTS", "CLASSIFY_METHOD_NAME",
    "CLASSIFY_OUTPUT_CLASSES", "CLASSIFY_OUTPUT_SCORES", "DEBUG_DIRECTORY",
    "DEBUG_INFO_FILENAME_PB", "DEFAULT_SERVING_SIGNATURE_DEF_KEY", "GPU", "LEGACY_INIT_OP_KEY",
    "MAIN_OP_KEY", "PREDICT_INPUTS", "PREDICT_METHOD_NAME", "PREDICT_OUTPUTS", "REGRESS_INPUTS",
    "REGRESS_METHOD_NAME", "REGRESS_OUTPUTS", "SAVED_MODEL_FILENAME_PB",
    "SAVED_MODEL_FILENAME_PBTXT", "SAVED_MODEL_SCHEMA_VERSION", "SERVING", "TPU", "TRAINING",
    "VARIABLES_DIRECTORY", "VARIABLES_FILENAME", "build_signature_def", "build_tensor_info",
    "builder", "classification_signature_def", "constants", "contains_saved_model",
    "get_tensor_from_tensor_info", "is_valid_signature", "load", "loader", "main_op",
    "main_op_with_restore", "maybe_saved_model_directory", "predict_signature_def",
    "regression_signature_def", "signature_constants", "signature_def_utils", "simple_save",
    "tag_constants", "utils",
]
