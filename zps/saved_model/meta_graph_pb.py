"""The parts of TensorFlow's meta_graph.proto a SavedModel's signatures are made of
(``TensorInfo``, ``SignatureDef``, ``AssetFileDef``, ``MetaInfoDef``), as protobuf-like messages,
and ``MetaGraphDef``: what ``loader.load`` returns (its graph_def, saver_def and collection_def are
zps's plain data, see zps/train/saver.py).

In a ``saved_model.zps`` file the messages are plain data (``to_plain``/``from_plain``): a
TensorInfo is ``{"name": "x:0", "dtype": 1, "tensor_shape": {"dim": [{"size": -1}]}}``.

>>> info = TensorInfo(name="x:0", dtype=1, tensor_shape={"dim": [{"size": -1}, {"size": 2}]})
>>> to_plain(info)
{'name': 'x:0', 'dtype': 1, 'tensor_shape': {'dim': [{'size': -1}, {'size': 2}]}}
>>> from_plain(TensorInfo, to_plain(info)) == info
True
"""

from zps.framework.protobuf import Field, Message, MessageMap
from zps.ops.summary_proto import _DATA_TYPES, TensorShapeProto

__all__ = ["AssetFileDef", "MetaGraphDef", "MetaInfoDef", "SignatureDef", "TensorInfo",
           "from_plain", "to_plain"]


class _CooSparse(Message):
    FULL_NAME = "tensorflow.TensorInfo.CooSparse"
    FIELDS = (Field("values_tensor_name", 1, "string"), Field("indices_tensor_name", 2, "string"),
              Field("dense_shape_tensor_name", 3, "string"))


class TensorInfo(Message):
    """A tensor of a signature: its ``name`` (or the three names of a SparseTensor in
    ``coo_sparse``), ``dtype`` (TF's DataType enum: 1 float32) and ``tensor_shape``."""

    CooSparse = _CooSparse
    FULL_NAME = "tensorflow.TensorInfo"
    FIELDS = (Field("name", 1, "string", oneof="encoding"),
              Field("coo_sparse", 4, _CooSparse, oneof="encoding"),
              Field("dtype", 2, "enum", enum=_DATA_TYPES),
              Field("tensor_shape", 3, TensorShapeProto))


class SignatureDef(Message):
    """A signature: named ``inputs`` and ``outputs`` (TensorInfos) and a ``method_name``."""

    FULL_NAME = "tensorflow.SignatureDef"
    FIELDS = (Field("inputs", 1, TensorInfo, map_key="string"),
              Field("outputs", 2, TensorInfo, map_key="string"),
              Field("method_name", 3, "string"))


class AssetFileDef(Message):
    """An asset: the string tensor fed its path (``tensor_info.name``) and the file's name in
    the export's ``assets/`` directory."""

    FULL_NAME = "tensorflow.AssetFileDef"
    FIELDS = (Field("tensor_info", 1, TensorInfo), Field("filename", 2, "string"))


class MetaInfoDef(Message):
    """A meta graph's tags and versions."""

    FULL_NAME = "tensorflow.MetaGraphDef.MetaInfoDef"
    FIELDS = (Field("meta_graph_version", 1, "string"), Field("tags", 4, "string", repeated=True),
              Field("tensorflow_version", 5, "string"),
              Field("tensorflow_git_version", 6, "string"),
              Field("stripped_default_attrs", 7, "bool"))


class MetaGraphDef:
    """One meta graph of a SavedModel, as ``loader.load`` returns it (TF1's MetaGraphDef):
    ``meta_info_def.tags``, ``signature_def`` (key -> SignatureDef), ``asset_file_def``,
    ``collection_def`` (key -> items), ``graph_def`` and ``saver_def`` (zps's plain data)."""

    def __init__(self, meta):
        info = meta.get("meta_info_def") or {}
        self.meta_info_def = from_plain(MetaInfoDef, {
            k: v for k, v in info.items() if k in MetaInfoDef._BY_NAME})
        self.graph_def = meta["graph_def"]
        self.saver_def = meta.get("saver_def")
        self.collection_def = dict(meta.get("collection_def") or {})
        self.signature_def = {str(k): from_plain(SignatureDef, v)
                              for k, v in (meta.get("signature_def") or {}).items()}
        self.asset_file_def = [from_plain(AssetFileDef, a)
                               for a in meta.get("asset_file_def") or ()]

    def __repr__(self):
        return "<MetaGraphDef tags=%s signatures=%s>" % (
            list(self.meta_info_def.tags), sorted(self.signature_def))


def to_plain(message):
    """A message as plain data (dicts, lists, str, int, bool): the fields that are set."""
    out = {}
    for name, value in message.ListFields():
        if isinstance(value, Message):
            out[name] = to_plain(value)
        elif isinstance(value, MessageMap):
            out[name] = {k: to_plain(v) for k, v in value.items()}
        elif isinstance(value, str | bytes | int | float):
            out[name] = value
        else:   # a repeated field
            out[name] = [to_plain(v) if isinstance(v, Message) else v for v in value]
    return out


def from_plain(cls, data):
    """The ``cls`` message of plain data ``to_plain`` made; ValueError if it is not one."""
    if not isinstance(data, dict):
        raise ValueError("%s: expected a dict, got %s" % (cls.FULL_NAME, type(data).__name__))
    try:
        return cls(**data)
    except (TypeError, ValueError) as e:
        raise ValueError("%s: %s" % (cls.FULL_NAME, e)) from None
