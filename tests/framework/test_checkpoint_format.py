"""The checkpoint format: safetensors shards + JSON index, validated on read, written atomically."""

import json
import os

import numpy as np
import pytest

import zps as tf
from zps.framework import checkpoint_format as cf


def _all_dtypes():
    return {
        "f16": np.array([1.5, -2.0], np.float16),
        "f32": np.arange(6, dtype=np.float32).reshape(2, 3) / 7,
        "f64": np.array(np.pi),
        "i8": np.array([-128, 127], np.int8),
        "i16": np.array([[-3]], np.int16),
        "i32": np.array([2 ** 31 - 1, -2 ** 31], np.int32),
        "i64": np.array(2 ** 62 + 1, np.int64),
        "u8": np.array([0, 255], np.uint8),
        "b": np.array([True, False, True]),
        "empty": np.zeros((0, 3), np.float32),
        "s": np.array([[b"a", "\u00e9t\u00e9".encode()], [b"", b"\x00\xff"]], dtype=object),
    }


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _index(tmp_path):
    return json.loads(_read(str(tmp_path / "m.index")))


def _roundtrip(tmp_path, tensors):
    prefix = str(tmp_path / "m")
    cf.write_index(prefix, [cf.write_shard(prefix, 0, 1, tensors)])
    return cf.CheckpointReader(prefix)


def test_every_dtype_round_trips_exactly(tmp_path):
    tensors = _all_dtypes()
    reader = _roundtrip(tmp_path, tensors)
    assert reader.get_variable_to_shape_map() == {k: list(v.shape) for k, v in tensors.items()}
    assert reader.get_variable_to_dtype_map()["s"] is tf.string
    for name, value in tensors.items():
        got = reader.get_tensor(name)
        assert got.dtype == value.dtype and got.shape == value.shape, name
        assert got.tolist() == value.tolist(), name


def test_shard_is_a_plain_safetensors_file(tmp_path):
    path = str(tmp_path / "x.safetensors")
    cf.write_safetensors(path, {"a": np.arange(3, dtype=np.int32), "b": np.ones(2, np.float64)},
                         metadata={"note": "hi"})
    raw = _read(path)
    n = int.from_bytes(raw[:8], "little")
    assert (8 + n) % 8 == 0
    header = json.loads(raw[8:8 + n])
    assert header["__metadata__"] == {"note": "hi"}
    a = header["a"]
    assert a["dtype"] == "I32" and a["shape"] == [3]
    begin, end = a["data_offsets"]
    np.testing.assert_array_equal(np.frombuffer(raw[8 + n + begin:8 + n + end], "<i4"), [0, 1, 2])
    assert cf.SafetensorsFile(path).metadata == {"note": "hi"}


def test_compatible_with_the_safetensors_package(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    path = str(tmp_path / "x.safetensors")
    tensors = {k: v for k, v in _all_dtypes().items() if k != "s"}
    cf.write_safetensors(path, tensors)
    loaded = st.load_file(path)
    for k, v in tensors.items():
        np.testing.assert_array_equal(loaded[k], v)
    st.save_file({"w": np.arange(4, dtype=np.float32)}, str(tmp_path / "y.safetensors"))
    np.testing.assert_array_equal(cf.SafetensorsFile(str(tmp_path / "y.safetensors")).read("w"),
                                  np.arange(4, dtype=np.float32))


def _file_with_header(tmp_path, header, data=b"", raw_header=None):
    blob = raw_header if raw_header is not None else json.dumps(header).encode()
    path = tmp_path / "bad.safetensors"
    path.write_bytes(len(blob).to_bytes(8, "little") + blob + data)
    return str(path)


@pytest.mark.parametrize("header,data,match", [
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4,
     "outside the 4 data bytes"),
    ({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8, "needs 12"),
    ({"w": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}}, b"\0" * 2,
     "unsupported dtype 'BF16'"),
    ({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4, "shape"),
    ({"w": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
      "v": {"dtype": "U8", "shape": [2], "data_offsets": [1, 3]}}, b"\0" * 3, "overlap"),
    ({"w": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}}, b"\0" * 5, "trailing"),
    ({"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], "x": 1}}, b"\0", "exactly"),
    ({"__metadata__": {"a": 1}}, b"", "__metadata__"),
    ({"__metadata__": {cf.STRINGS_KEY: '{"s": {"shape": [2], "data": ["YQ=="]}}'}}, b"",
     "element count"),
    ([1, 2], b"", "not a JSON object"),
])
def test_corrupt_headers_are_data_loss(tmp_path, header, data, match):
    path = _file_with_header(tmp_path, header, data)
    with pytest.raises(tf.errors.DataLossError, match=match):
        cf.SafetensorsFile(path)


def test_corrupt_sizes_and_contents_are_data_loss(tmp_path):
    p = tmp_path / "short.safetensors"
    p.write_bytes(b"\x01\x02")
    with pytest.raises(tf.errors.DataLossError, match="shorter than"):
        cf.SafetensorsFile(str(p))
    p.write_bytes((2 ** 40).to_bytes(8, "little") + b"{}")
    with pytest.raises(tf.errors.DataLossError, match="header length"):
        cf.SafetensorsFile(str(p))
    with pytest.raises(tf.errors.DataLossError, match="not JSON"):
        cf.SafetensorsFile(_file_with_header(tmp_path, None, raw_header=b"{nope"))
    path = _file_with_header(tmp_path, {"b": {"dtype": "BOOL", "shape": [2],
                                              "data_offsets": [0, 2]}}, b"\x01\x07")
    with pytest.raises(tf.errors.DataLossError, match="other than 0 and 1"):
        cf.SafetensorsFile(path).read("b")
    meta = {cf.STRINGS_KEY: '{"s": {"shape": [1], "data": ["!!"]}}'}
    with pytest.raises(tf.errors.DataLossError, match="base64"):
        cf.SafetensorsFile(_file_with_header(tmp_path, {"__metadata__": meta})).read("s")


def test_a_shard_truncated_after_writing_is_data_loss(tmp_path):
    reader = _roundtrip(tmp_path, {"w": np.arange(100.0)})
    shard = os.path.join(str(tmp_path), _index(tmp_path)["shards"][0])
    with open(shard, "r+b") as f:
        f.truncate(os.path.getsize(shard) - 8)
    with pytest.raises(tf.errors.DataLossError, match="outside"):
        cf.CheckpointReader(reader.prefix).get_tensor("w")


def _write_index(tmp_path, index):
    (tmp_path / "m.index").write_text(json.dumps(index))
    return str(tmp_path / "m")


def test_index_is_validated(tmp_path):
    with pytest.raises(tf.errors.NotFoundError, match="m.index"):
        cf.CheckpointReader(str(tmp_path / "m"))
    (tmp_path / "m.index").write_text("garbage")
    with pytest.raises(tf.errors.DataLossError, match="not JSON"):
        cf.CheckpointReader(str(tmp_path / "m"))
    base = {"format": cf.FORMAT, "version": 1, "shards": ["a"], "tensors": {}}
    with pytest.raises(tf.errors.DataLossError, match="file names"):
        cf.CheckpointReader(_write_index(tmp_path, dict(base, shards=["../etc/passwd"])))
    with pytest.raises(tf.errors.UnimplementedError, match="version 9"):
        cf.CheckpointReader(_write_index(tmp_path, dict(base, version=9)))
    bad = {"w": {"dtype": "float32", "shape": [1], "shard": 3, "key": "w"}}
    with pytest.raises(tf.errors.DataLossError, match="do not name a listed shard"):
        cf.CheckpointReader(_write_index(tmp_path, dict(base, tensors=bad)))
    bad = {"w": {"dtype": "bfloat16", "shape": [1], "shard": 0, "key": "w"}}
    with pytest.raises(tf.errors.DataLossError, match="dtype"):
        cf.CheckpointReader(_write_index(tmp_path, dict(base, tensors=bad)))
    sliced = {"w": {"dtype": "float32", "shape": [4], "slices": []}}
    reader = cf.CheckpointReader(_write_index(tmp_path, dict(base, tensors=sliced)))
    with pytest.raises(tf.errors.NotFoundError, match="holds only part"):
        reader.get_tensor("w")


def test_index_and_shard_must_agree(tmp_path):
    reader = _roundtrip(tmp_path, {"w": np.zeros(3, np.float32)})
    index = _index(tmp_path)
    index["tensors"]["w"]["shape"] = [4]
    _write_index(tmp_path, index)
    with pytest.raises(tf.errors.DataLossError, match="in the index"):
        cf.CheckpointReader(reader.prefix).get_tensor("w")
    with pytest.raises(tf.errors.NotFoundError, match="Key nope not found"):
        cf.CheckpointReader(reader.prefix).get_tensor("nope")


def test_atomic_write_failure_keeps_the_old_file_and_no_temp(tmp_path):
    path = str(tmp_path / "f")
    cf.atomic_write(path, lambda f: f.write(b"old"))

    def fail(f):
        f.write(b"partial")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        cf.atomic_write(path, fail)
    assert _read(path) == b"old"
    assert os.listdir(str(tmp_path)) == ["f"]


def test_rewriting_a_prefix_replaces_its_shards_and_spares_other_checkpoints(tmp_path):
    prefix = str(tmp_path / "m")
    other = str(tmp_path / "m0")  # shares the prefix's first characters only
    cf.write_index(other, [cf.write_shard(other, 0, 1, {"w": np.zeros(1)})])
    cf.write_index(prefix, [cf.write_shard(prefix, 0, 1, {"w": np.zeros(1)})])
    first = set(os.listdir(str(tmp_path)))
    cf.write_index(prefix, [cf.write_shard(prefix, 0, 1, {"w": np.ones(1)})])
    after = set(os.listdir(str(tmp_path)))
    assert len(after) == len(first) == 4 and after != first
    assert cf.CheckpointReader(prefix).get_tensor("w")[0] == 1.0
    assert cf.CheckpointReader(other).get_tensor("w")[0] == 0.0
    assert sorted(os.path.basename(p) for p in cf.checkpoint_files(prefix)) == sorted(
        f for f in after if f.startswith("m.") and not f.startswith("m0"))
