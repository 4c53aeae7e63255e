"""Checkpoints TensorFlow wrote: read, restored into zps graphs, and refused when corrupt.

The checkpoint in tests/fixtures/tf_checkpoint was written by TensorFlow 2.21's
``tf.compat.v1.train.Saver(sharded=True)`` (its make.py); expected.npz holds the values it saved.
"""

import os
import pathlib
import shutil
import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import zps as tf
from zps.framework import tf_bundle

FIXTURE = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "tf_checkpoint"
EXPECTED = np.load(FIXTURE / "expected.npz")
NAMES = [b"ab", b"", b"xyz\x00\xff"]


def _expected(name):
    return EXPECTED[name.replace("/", "__")]


def test_every_tensor_tensorflow_saved_reads_back_exactly():
    prefix = tf.train.latest_checkpoint(str(FIXTURE))   # TF's own "checkpoint" state file
    assert prefix == str(FIXTURE / "model.ckpt-7")
    reader = tf.train.NewCheckpointReader(prefix)
    shapes = reader.get_variable_to_shape_map()
    assert shapes["big"] == [200, 2] and shapes["emb"] == [10, 4] and shapes["global_step"] == []
    assert sorted(shapes) == sorted([k.replace("__", "/") for k in EXPECTED.files] + ["names"])
    for name in shapes:
        got = reader.get_tensor(name)
        if name == "names":
            assert got.tolist() == NAMES
            continue
        want = _expected(name)
        assert got.dtype == want.dtype and got.shape == want.shape, name
        np.testing.assert_array_equal(got, want)
        assert got.flags.writeable
    # Partitioned variables (3 and 2 slices, one starting at row 100) read whole or by region,
    # across the slices' boundaries.
    np.testing.assert_array_equal(reader.get_slice("big", [90, 1], [20, 1]),
                                  _expected("big")[90:110, 1:2])
    np.testing.assert_array_equal(reader.get_slice("emb", [3, 0], [5, 4]), _expected("emb")[3:8])


def test_a_dtype_zps_lacks_is_named_when_read(monkeypatch):
    # Every dtype of the fixture is a zps dtype now (complex64 too): pretend complex64 is not.
    monkeypatch.setitem(tf_bundle._TF_NAMES, 8, "complex64")
    monkeypatch.delitem(tf_bundle._DTYPES, 8)
    reader = tf.train.NewCheckpointReader(str(FIXTURE / "model.ckpt-7"))
    assert reader.get_variable_to_shape_map()["cplx"] == [1]
    with pytest.raises(tf.errors.UnimplementedError, match="'cplx' is a TensorFlow complex64"):
        reader.get_tensor("cplx")
    with pytest.raises(tf.errors.UnimplementedError, match=r"cplx \(complex64\)"):
        reader.get_variable_to_dtype_map()


def test_a_tensorflow_complex_tensor_reads_back():
    reader = tf.train.NewCheckpointReader(str(FIXTURE / "model.ckpt-7"))
    assert reader.get_variable_to_dtype_map()["cplx"] is tf.complex64
    got = reader.get_tensor("cplx")
    assert got.dtype == np.complex64 and got.tolist() == [1 + 2j]


def test_saver_restores_a_tensorflow_checkpoint_into_a_zps_graph():
    with tf.Graph().as_default():
        kernel = tf.get_variable("dense/kernel", [2, 3])
        bias = tf.get_variable("dense/bias", [2], dtype=tf.float64)
        names = tf.Variable(["", "", ""], name="names")
        step = tf.train.get_or_create_global_step()
        # Partitioned differently from the saved variable (3 slices there): re-sharded on restore.
        emb = tf.get_variable("emb", [10, 4], partitioner=tf.fixed_size_partitioner(2))
        big = tf.get_variable("big", [200, 2])   # saved in 2 slices, restored whole
        saver = tf.train.Saver([kernel, bias, names, step, emb, big])
        with tf.Session() as sess:
            saver.restore(sess, tf.train.latest_checkpoint(str(FIXTURE)))
            got = sess.run({"k": kernel, "b": bias, "n": names, "s": step, "big": big,
                            "emb": tf.concat(list(emb), 0)})
    np.testing.assert_array_equal(got["k"], _expected("dense/kernel"))
    np.testing.assert_array_equal(got["b"], _expected("dense/bias"))
    assert got["n"].tolist() == NAMES and got["s"] == 1234
    np.testing.assert_array_equal(got["emb"], _expected("emb"))
    np.testing.assert_array_equal(got["big"], _expected("big"))


def _copy(tmp_path):
    for f in FIXTURE.iterdir():
        if f.name.startswith("model.ckpt-7"):
            shutil.copy(f, tmp_path / f.name)
    return str(tmp_path / "model.ckpt-7")


def _footer_index_handle(raw):
    footer = raw[-tf_bundle.FOOTER_BYTES:]
    _, pos = tf_bundle._varint(footer, 0)
    _, pos = tf_bundle._varint(footer, pos)
    start = len(raw) - tf_bundle.FOOTER_BYTES + pos
    offset, p = tf_bundle._varint(footer, pos)
    size, _ = tf_bundle._varint(footer, p)
    return start, offset, size


def test_corrupt_tensorflow_files_are_data_loss(tmp_path):
    prefix = _copy(tmp_path)
    raw = bytearray(pathlib.Path(prefix + ".index").read_bytes())
    start, offset, size = _footer_index_handle(bytes(raw))

    bad = bytearray(raw)
    bad[start:start + 4] = b"\xff\xff\xff\x0f"   # the index block's offset, past the file
    pathlib.Path(prefix + ".index").write_bytes(bytes(bad))
    with pytest.raises(tf.errors.DataLossError, match="not a valid TensorFlow checkpoint index"):
        tf.train.NewCheckpointReader(prefix)

    bad = bytearray(raw)
    bad[offset + size] = 1   # the index block says it is snappy-compressed
    pathlib.Path(prefix + ".index").write_bytes(bytes(bad))
    with pytest.raises(tf.errors.DataLossError, match="compressed"):
        tf.train.NewCheckpointReader(prefix)

    pathlib.Path(prefix + ".index").write_bytes(bytes(raw))
    data = pathlib.Path(prefix + ".data-00001-of-00002")
    data.write_bytes(data.read_bytes()[:-8])   # the last tensor of the shard loses its end
    reader = tf.train.NewCheckpointReader(prefix)
    failures = []
    for name in reader.get_variable_to_shape_map():
        try:
            reader.get_tensor(name)
        except tf.errors.DataLossError as e:
            failures.append(str(e))
        except tf.errors.UnimplementedError:
            pass
    assert failures and all("run past the file" in f for f in failures)

    os.remove(prefix + ".data-00000-of-00002")
    with pytest.raises(tf.errors.NotFoundError, match="data-00000-of-00002 not found"):
        tf.train.NewCheckpointReader(prefix).get_tensor("dense/kernel")


def test_a_flipped_bit_in_any_tensor_is_data_loss_never_a_wrong_value(tmp_path):
    # Each tensor's bytes are checked against the crc32c TensorFlow stored for them (strings:
    # their lengths, the lengths' own checksum and their bytes, as TF's ReadStringTensor).
    prefix = _copy(tmp_path)
    caught = set()
    for shard in ("00000", "00001"):
        path = pathlib.Path("%s.data-%s-of-00002" % (prefix, shard))
        raw = path.read_bytes()
        for pos in range(0, len(raw), max(1, len(raw) // 150)):
            bad = bytearray(raw)
            bad[pos] ^= 0x10
            path.write_bytes(bytes(bad))
            reader = tf.train.NewCheckpointReader(prefix)
            for name in reader.get_variable_to_shape_map():
                if name == "cplx":
                    continue
                try:
                    got = reader.get_tensor(name)
                except tf.errors.DataLossError as e:
                    assert "checksum" in str(e) or "lengths" in str(e), str(e)
                    caught.add(name)
                    continue
                want = NAMES if name == "names" else _expected(name)
                np.testing.assert_array_equal(got if name != "names" else got.tolist(), want)
        path.write_bytes(raw)
    assert {"names", "global_step", "dense/kernel"} <= caught


def _varint(n):
    out = bytearray()
    while True:
        out.append((n & 0x7f) | (0x80 if n > 0x7f else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _block(entries):
    """A LevelDB block: prefix-compressed entries, then one restart point (at 0) and its count."""
    out, prev = bytearray(), b""
    for key, value in entries:
        shared = len(os.path.commonprefix([prev, key]))
        out += _varint(shared) + _varint(len(key) - shared) + _varint(len(value))
        out += key[shared:] + value
        prev = key
    return bytes(out) + struct.pack("<II", 0, 1)


def _table(blocks):
    """A LevelDB table of data ``blocks`` (lists of entries), as TF's table builder lays it out."""
    raw, index = bytearray(), []

    def add(block):
        handle = _varint(len(raw)) + _varint(len(block))
        raw.extend(block + b"\0" + b"\0" * 4)   # uncompressed; the checksum is not read
        return handle

    for entries in blocks:
        index.append((entries[-1][0], add(_block(entries))))
    footer = add(_block([])) + add(_block(index))   # metaindex (empty), index
    return bytes(raw) + footer + b"\0" * (40 - len(footer)) + struct.pack("<Q", tf_bundle.MAGIC)


def test_an_index_of_many_blocks_reads_like_one(tmp_path):
    # TF starts a new index block every 256 KB (thousands of variables): the fixture's entries,
    # three to a block, must read back the same.
    prefix = _copy(tmp_path)
    entries = list(tf_bundle._table(pathlib.Path(prefix + ".index").read_bytes()))
    assert len(entries) > 10
    pathlib.Path(prefix + ".index").write_bytes(
        _table([entries[i:i + 3] for i in range(0, len(entries), 3)]))
    reader = tf.train.NewCheckpointReader(prefix)
    assert len(reader.get_variable_to_shape_map()) == len(EXPECTED.files) + 1
    for name in EXPECTED.files:
        if name != "cplx":
            np.testing.assert_array_equal(reader.get_tensor(name.replace("__", "/")),
                                          EXPECTED[name])
    assert reader.get_tensor("names").tolist() == NAMES


def test_slice_keys_encode_numbers_as_tensorflows_ordered_code():
    # The keys of the fixture's slices (offsets 0 to 100) were found, so the encoding matches
    # TF's; these pin single- and two-byte forms, and the order the encoding must keep.
    assert [tf_bundle._ordered_signed(v) for v in (0, 4, -1, 63, 64, 100, -65)] == [
        b"\x80", b"\x84", b"\x7f", b"\xbf", b"\xc0\x40", b"\xc0\x64", b"\x3f\xbf"]
    assert tf_bundle.slice_key("emb", [4, 0], [3, 4]) == \
        b"\x00emb\x00\x01\x01\x02\x84\x83\x80\x84"


@given(st.integers(-(2 ** 63), 2 ** 63 - 1), st.integers(-(2 ** 63), 2 ** 63 - 1))
def test_ordered_code_keeps_the_order_of_numbers(a, b):
    ea, eb = tf_bundle._ordered_signed(a), tf_bundle._ordered_signed(b)
    assert (ea < eb) == (a < b) and (ea == eb) == (a == b)


def test_zps_checkpoints_are_not_taken_for_tensorflow_ones(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0], name="v")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(v.initializer)
            path = saver.save(sess, str(tmp_path / "m"))
    raw = pathlib.Path(path + ".index").read_bytes()
    assert not tf_bundle.is_bundle_index(raw)
    assert struct.unpack_from("<Q", pathlib.Path(FIXTURE / "model.ckpt-7.index").read_bytes(),
                              os.path.getsize(FIXTURE / "model.ckpt-7.index") - 8)[0] == \
        tf_bundle.MAGIC
    np.testing.assert_array_equal(tf.train.NewCheckpointReader(path).get_tensor("v"), [1.0, 2.0])
