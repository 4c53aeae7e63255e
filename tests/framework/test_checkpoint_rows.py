"""Checkpoint reads of a range of rows: ``get_slice`` reads only the rows a region spans.

Both formats keep a tensor row-major, so rows ``[lo, hi)`` of its leading dimension are one run of
bytes: a region of a big embedding (or a block of ``LoadAndRemapMatrix``) reads just those.
"""

import json
import pathlib
import tracemalloc

import numpy as np
import pytest

import zps as tf
from zps.framework import checkpoint_format as cf
from zps.framework import crc32c, tf_bundle

FIXTURE = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "tf_checkpoint"


def _values(shape):
    """One tensor of every dtype the format stores, of ``shape``, with distinct values."""
    n = int(np.prod(shape))
    ramp = np.arange(n).reshape(shape)
    out = {name: (ramp * 3 - n).astype(name) for name in (
        "float16", "float32", "float64", "int8", "int16", "int32", "int64")}
    out.update({name: (ramp * 7).astype(name) for name in ("uint8", "uint16", "uint32", "uint64")})
    out["bool"] = ramp % 3 == 1
    out["float32"] = out["float32"] / 7
    out["complex64"] = (ramp + 1j * (ramp - 0.5)).astype(np.complex64)
    out["complex128"] = (ramp / 3 - 2j * ramp).astype(np.complex128)
    out["string"] = np.array([("r%d\u00e9" % i).encode() if i % 4 else b"" for i in range(n)],
                             dtype=object).reshape(shape)
    return out


def _ranges(n):
    """First, last, middle, empty and all rows of ``n``."""
    ranges = [(0, 1), (n - 1, n), (1, n - 1), (n // 2, n // 2), (0, 0), (n, n), (0, n)]
    return [(lo, hi) for lo, hi in ranges if 0 <= lo <= hi <= n]


@pytest.mark.parametrize("shape", [[5], [6, 3], [4, 3, 2]])
def test_rows_of_every_dtype_read_exactly(tmp_path, shape):
    tensors = _values(shape)
    path = str(tmp_path / "x.safetensors")
    cf.write_safetensors(path, tensors)
    f = cf.SafetensorsFile(path)
    for name, value in tensors.items():
        for lo, hi in _ranges(shape[0]):
            got = f.read(name, (lo, hi))
            want = value[lo:hi]
            assert got.dtype == want.dtype and got.dtype.isnative, (name, lo, hi)
            assert got.shape == want.shape and got.tolist() == want.tolist(), (name, lo, hi)
            assert got.flags.c_contiguous and got.flags.writeable
        assert f.read(name).tolist() == value.tolist()


def test_a_row_range_outside_the_tensor_is_invalid(tmp_path):
    path = str(tmp_path / "x.safetensors")
    cf.write_safetensors(path, {"w": np.zeros([4, 2]), "s": np.float32(1), "t": np.array([b"a"])})
    f = cf.SafetensorsFile(path)
    for key, rows in [("w", (3, 2)), ("w", (-1, 2)), ("w", (0, 5)), ("s", (0, 1)), ("t", (1, 2))]:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"rows \[.*are not rows of"):
            f.read(key, rows)


def test_rows_read_from_a_damaged_file_are_data_loss(tmp_path):
    path = tmp_path / "x.safetensors"
    cf.write_safetensors(str(path), {"b": np.zeros([4, 2], bool), "w": np.arange(8.0)})
    f = cf.SafetensorsFile(str(path))
    raw = bytearray(path.read_bytes())
    begin = len(raw) - 64 - 8                       # "b"'s 8 bytes, then "w"'s 64
    raw[begin + 5] = 7                              # row 2 of "b"
    path.write_bytes(bytes(raw[:-4]))               # and "w" loses its last half-row
    with pytest.raises(tf.errors.DataLossError, match="other than 0 and 1"):
        f.read("b", (2, 3))
    assert f.read("b", (0, 2)).tolist() == [[False, False]] * 2   # rows 0-1 are intact
    assert f.read("w", (0, 7)).tolist() == list(np.arange(7.0))
    with pytest.raises(tf.errors.DataLossError, match="'w' is truncated"):
        f.read("w", (7, 8))
    meta = {cf.STRINGS_KEY: '{"s": {"shape": [2], "data": ["YQ==", "!!"]}}'}
    blob = json.dumps({"__metadata__": meta}).encode()
    (tmp_path / "s.safetensors").write_bytes(len(blob).to_bytes(8, "little") + blob)
    strings = cf.SafetensorsFile(str(tmp_path / "s.safetensors"))
    assert strings.read("s", (0, 1)).tolist() == [b"a"]   # only the items asked for are decoded
    with pytest.raises(tf.errors.DataLossError, match="invalid base64"):
        strings.read("s", (1, 2))


def _save(tmp_path, name, value, row_parts=1, col_parts=1):
    """Checkpoint ``m`` holding ``value`` whole, or cut into row_parts x col_parts saved slices
    spread over two shards."""
    prefix = str(tmp_path / "m")
    if row_parts == col_parts == 1:
        cf.write_index(prefix, [cf.write_shard(prefix, 0, 1, {name: value})])
        return cf.CheckpointReader(prefix)
    shards = [{}, {}]
    row_cuts = np.linspace(0, value.shape[0], row_parts + 1).astype(int)
    col_cuts = np.linspace(0, value.shape[1], col_parts + 1).astype(int)
    for i in range(row_parts):
        for j in range(col_parts):
            start = [row_cuts[i], col_cuts[j]] + [0] * (value.ndim - 2)
            part = value[row_cuts[i]:row_cuts[i + 1], col_cuts[j]:col_cuts[j + 1]]
            key = cf.slice_key(name, value.shape, start, part.shape)
            shards[(i + j) % 2][key] = part
    cf.write_index(prefix, [cf.write_shard(prefix, k, 2, t) for k, t in enumerate(shards)])
    return cf.CheckpointReader(prefix)


@pytest.mark.parametrize("parts", [(1, 1), (3, 1), (1, 2), (4, 3)])
def test_get_slice_equals_numpy_slicing(tmp_path, parts):
    value = np.arange(9 * 5 * 2, dtype=np.float64).reshape(9, 5, 2) / 4
    reader = _save(tmp_path, "v", value, *parts)
    rng = np.random.RandomState(7)
    regions = [([0, 0, 0], [9, 5, 2]), ([0, 0, 0], [1, 5, 2]), ([8, 0, 0], [1, 5, 2]),
               ([3, 1, 1], [4, 3, 1]), ([5, 2, 0], [0, 2, 2]), ([2, 4, 0], [7, 1, 2])]
    for _ in range(20):
        start = [int(rng.randint(0, d + 1)) for d in value.shape]
        regions.append((start, [int(rng.randint(0, d - s + 1)) for s, d in zip(start, value.shape)]))
    for start, shape in regions:
        got = reader.get_slice("v", start, shape)
        want = value[tuple(slice(s, s + n) for s, n in zip(start, shape))]
        assert got.dtype == want.dtype and got.shape == want.shape, (start, shape)
        np.testing.assert_array_equal(got, want)
        assert got.flags.c_contiguous
    np.testing.assert_array_equal(reader.get_tensor("v"), value)


def test_get_slice_of_strings_bools_complex_and_scalars(tmp_path):
    values = _values([6, 3])
    prefix = str(tmp_path / "m")
    cf.write_index(prefix, [cf.write_shard(prefix, 0, 1, dict(values, scalar=np.int64(5)))])
    reader = cf.CheckpointReader(prefix)
    for name, value in values.items():
        got = reader.get_slice(name, [2, 1], [3, 2])
        assert got.dtype == value.dtype and got.tolist() == value[2:5, 1:3].tolist(), name
    assert reader.get_slice("scalar", [], []).tolist() == 5
    with pytest.raises(tf.errors.InvalidArgumentError, match="not inside"):
        reader.get_slice("float32", [5, 0], [2, 3])


class _Counting:
    """Wraps ``open`` in a module: counts the bytes its files hand out."""

    def __init__(self):
        self.bytes = 0

    def __call__(self, *args, **kwargs):
        real = open(*args, **kwargs)
        counter = self

        class File:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                real.close()

            def read(self, *a):
                data = real.read(*a)
                counter.bytes += len(data)
                return data

            def readinto(self, buf):
                n = real.readinto(buf)
                counter.bytes += n
                return n

            def seek(self, *a):
                return real.seek(*a)

        return File()


@pytest.mark.parametrize("parts", [1, 4])
def test_a_region_of_10_rows_reads_10_rows(tmp_path, monkeypatch, parts):
    value = np.arange(1000 * 64, dtype=np.float32).reshape(1000, 64)
    reader = _save(tmp_path, "emb", value, row_parts=parts)
    np.testing.assert_array_equal(reader.get_tensor("emb"), value)   # opens the shards
    counting = _Counting()
    monkeypatch.setattr(cf, "open", counting, raising=False)
    got = reader.get_slice("emb", [245, 8], [10, 32])   # across two slices when in 4 parts
    np.testing.assert_array_equal(got, value[245:255, 8:40])
    assert counting.bytes == 10 * 64 * 4   # whole rows: the trailing cut is made in memory
    counting.bytes = 0
    np.testing.assert_array_equal(reader.get_tensor("emb"), value)
    assert counting.bytes == value.nbytes


def _peak_bytes(read):
    tracemalloc.start()
    try:
        got = read()
        return got, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_10_rows_of_a_40_mb_tensor_allocate_under_1_mb(tmp_path):
    value = np.arange(10_000 * 1_000, dtype=np.float32).reshape(10_000, 1_000)
    reader = _save(tmp_path, "emb", value)
    del value
    got, peak = _peak_bytes(lambda: reader.get_slice("emb", [5_000, 0], [10, 1_000]))
    assert peak < 1 << 20, peak
    assert got[:, 0].tolist() == [(5_000 + i) * 1_000 for i in range(10)]


# -- TensorFlow bundles ----------------------------------------------------------------------------
def _bundle_shard(tmp_path, tensors):
    """A BundleShard over a data file holding ``{key: (tf dtype code, array)}`` as TF lays them
    out (raw little-endian bytes, a masked crc32c of each in its entry)."""
    raw, entries = bytearray(), {}
    for key, (code, arr) in tensors.items():
        data = np.ascontiguousarray(arr, dtype=tf_bundle._DTYPES[code][1]).tobytes()
        entries[key] = (code, list(arr.shape), len(raw), len(data),
                        crc32c.mask(crc32c.crc32c(data)))
        raw += data
    path = tmp_path / "b.data-00000-of-00001"
    path.write_bytes(bytes(raw))
    return tf_bundle.BundleShard(str(path), entries), path


def test_bundle_rows_of_every_dtype_read_exactly(tmp_path):
    values = _values([5, 2])
    tensors = {name: (code, values[name]) for code, (name, le) in tf_bundle._DTYPES.items()
               if le is not None}
    assert len(tensors) == 14
    shard, _ = _bundle_shard(tmp_path, tensors)
    for key, (_, value) in tensors.items():
        for lo, hi in _ranges(5):
            got = shard.read(key, (lo, hi))
            assert got.dtype == value.dtype and got.dtype.isnative, key
            assert got.shape == value[lo:hi].shape and got.tolist() == value[lo:hi].tolist(), key
        assert shard.read(key).tolist() == value.tolist()


def test_bundle_checks_the_whole_tensors_crc_on_its_first_partial_read(tmp_path, monkeypatch):
    value = np.arange(3000 * 100, dtype=np.float32).reshape(3000, 100)   # 1.2 MB: > 1 piece
    shard, path = _bundle_shard(tmp_path, {"w": (1, value)})
    raw = bytearray(path.read_bytes())
    raw[2999 * 400 + 5] ^= 0x10                    # the last row, which is not read
    path.write_bytes(bytes(raw))
    with pytest.raises(tf.errors.DataLossError, match="checksum does not match"):
        shard.read("w", (10, 20))
    path.write_bytes(bytes(raw[:-1]))
    with pytest.raises(tf.errors.DataLossError, match="run past the file"):
        tf_bundle.BundleShard(str(path), shard._entries).read("w", (10, 20))
    raw[2999 * 400 + 5] ^= 0x10
    path.write_bytes(bytes(raw))
    counting = _Counting()
    monkeypatch.setattr(tf_bundle, "open", counting, raising=False)
    np.testing.assert_array_equal(shard.read("w", (10, 20)), value[10:20])
    assert counting.bytes == value.nbytes          # once: the rest through the checksum
    counting.bytes = 0
    np.testing.assert_array_equal(shard.read("w", (2990, 3000)), value[2990:])
    assert counting.bytes == 10 * 400              # then only the rows


def test_bundle_rows_of_an_8_mb_tensor_allocate_about_one_piece(tmp_path):
    value = np.arange(2_000 * 1_000, dtype=np.float64).reshape(2_000, 1_000)
    shard, _ = _bundle_shard(tmp_path, {"w": (2, value)})
    del value
    got, peak = _peak_bytes(lambda: shard.read("w", (1_000, 1_010)))
    assert peak < (1 << 20) + (1 << 19), peak      # the 1 MiB checksum piece, the 80 KB rows
    assert got[:, 0].tolist() == [(1_000 + i) * 1_000.0 for i in range(10)]


def test_regions_of_a_tensorflow_checkpoint_equal_numpy_slicing():
    expected = np.load(FIXTURE / "expected.npz")
    reader = tf.train.NewCheckpointReader(str(FIXTURE / "model.ckpt-7"))
    for key in expected.files:
        want = expected[key]
        if want.ndim == 0:
            continue
        name, n = key.replace("__", "/"), want.shape[0]
        for lo, hi in _ranges(n):
            got = reader.get_slice(name, [lo] + [0] * (want.ndim - 1), [hi - lo] + list(want.shape[1:]))
            assert got.dtype == want.dtype, name
            np.testing.assert_array_equal(got, want[lo:hi])
    assert reader.get_slice("names", [1], [2]).tolist() == [b"", b"xyz\x00\xff"]
