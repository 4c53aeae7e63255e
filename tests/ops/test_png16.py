"""16-bit PNGs (``decode_png(..., dtype=tf.uint16)``, ``encode_png`` of uint16 images) and
``convert_image_dtype`` between the unsigned types and floats, against TF 2.21's numbers.

The PNG files spelled here were written by TF 2.21's ``tf.image.encode_png`` (libpng); the
expected pixels are what TF's ``decode_png`` returned for them.
"""

import struct
import zlib

import numpy as np
import pytest

import zps as tf

# TF-encoded 16-bit PNGs of 3x4 images (gray, RGB): the first row is 65535, 0, 256, 255.
GRAY16 = [[[65535], [0], [256], [255]], [[45891], [21243], [30403], [32103]],
          [[41993], [57043], [20757], [55026]]]
RGB16 = [[[65535, 65535, 65535], [0, 0, 0], [256, 256, 256], [255, 255, 255]],
         [[15246, 24999, 56608], [16321, 52489, 19129], [53887, 41504, 55839],
          [49866, 18676, 57495]],
         [[60067, 31230, 11723], [43890, 17591, 55324], [58146, 43136, 26752],
          [59300, 23605, 6021]]]
RGBA16 = [[[65535, 65535, 65535, 65535], [0, 0, 0, 0], [256, 256, 256, 256], [255, 255, 255, 255]],
          [[14627, 12134, 60535, 47883], [41390, 56402, 20571, 63360],
           [59790, 51811, 9781, 19340], [27257, 16298, 12372, 51403]],
          [[4420, 45830, 39876, 17455], [62079, 14324, 38019, 62412], [7012, 9396, 47080, 3918],
           [9359, 50836, 44259, 23482]]]
# TF's decode_png(channels=1) of RGB16 and RGBA16 (libpng's rgb_to_gray, rounded in 16 bits),
# and of RGB16 as uint8 (the 16-bit gray's high byte).
RGB16_GRAY = [[65535, 0, 256, 255], [25688, 37871, 46841, 32428], [37627, 29757, 45755, 32272]]
RGBA16_GRAY = [[65535, 0, 256, 255], [18399, 47827, 49403, 19127], [32770, 31304, 12981, 37685]]
RGB16_GRAY_U8 = [[255, 0, 1, 0], [100, 147, 182, 126], [146, 116, 178, 126]]
# An 8-bit RGB image and TF's decode_png(channels=1) of it, as uint8 (libpng truncates) and uint16.
RGB8 = [[[10, 200, 30], [255, 0, 128], [1, 2, 3], [99, 100, 101]],
        [[250, 251, 3], [17, 170, 255], [128, 128, 128], [0, 255, 0]]]
RGB8_GRAY = [[123, 90, 1, 99], [222, 133, 128, 149]]
RGB8_GRAY16 = [[31611, 23130, 257, 25443], [57054, 34181, 32896, 38293]]


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def _chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def _png16(image, filters):
    """A 16-bit PNG of ``image`` [h, w, c] whose row ``y`` uses filter ``filters[y]`` (an
    independent encoder: the oracle for zps's decoder)."""
    image = np.asarray(image, np.uint16)
    height, width, channels = image.shape
    bpp = 2 * channels
    lines = image.astype(">u2").reshape(height, -1).view(np.uint8).astype(np.int64)
    prior = np.zeros(lines.shape[1], np.int64)
    raw = bytearray()
    for line, kind in zip(lines, filters):
        raw.append(kind)
        for i, x in enumerate(line):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prior[i], (prior[i - bpp] if i >= bpp else 0)
            raw.append((x - [0, a, b, (a + b) // 2, _paeth(a, b, c)][kind]) & 0xFF)
        prior = line
    color = {1: 0, 2: 4, 3: 2, 4: 6}[channels]
    return (b"\x89PNG\r\n\x1a\n"
            + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 16, color, 0, 0, 0))
            + _chunk(b"IDAT", zlib.compress(bytes(raw))) + _chunk(b"IEND", b""))


def _encoded(image):
    with tf.Graph().as_default():
        return _run(tf.image.encode_png(tf.constant(np.asarray(image, np.uint16))))


@pytest.mark.parametrize("image", [GRAY16, RGB16, RGBA16], ids=["gray", "rgb", "rgba"])
def test_encode_png_writes_16_bit_big_endian_samples_that_decode_exactly(image):
    png = _encoded(image)
    width, height, depth, color = struct.unpack(">IIBB", png[16:26])
    channels = len(image[0][0])
    assert (width, height, depth, color) == (4, 3, 16, {1: 0, 3: 2, 4: 6}[channels])
    idat = png[png.index(b"IDAT") + 4:png.index(b"IEND") - 8]
    raw = zlib.decompress(idat)
    assert raw[0] == 0 and raw[1:3] == b"\xff\xff" and raw[1 + 2 * channels:3 + 2 * channels] \
        == b"\x00\x00"   # filter 0, then 65535 and 0 big-endian
    with tf.Graph().as_default():
        contents = tf.placeholder(tf.string, [])
        got, as_u8 = _run([tf.image.decode_png(contents, dtype=tf.uint16),
                           tf.image.decode_png(contents)], {contents: png})
    assert got.dtype == np.uint16 and got.tolist() == image
    assert as_u8.dtype == np.uint8 and as_u8.tolist() == (np.array(image) >> 8).tolist()


def test_every_row_filter_decodes_at_16_bits():
    rgb = np.array(RGB16 * 2, np.uint16)   # 6 rows: filters 0 to 4, then 4 again
    for channels in (1, 2, 3, 4):
        image = np.concatenate([rgb, rgb[..., :1]], -1)[..., :channels]
        with tf.Graph().as_default():
            got = _run(tf.image.decode_png(_png16(image, [0, 1, 2, 3, 4, 4]), dtype=tf.uint16))
        np.testing.assert_array_equal(got, image)


def test_16_bit_channel_conversions_match_tensorflow():
    rgb, rgba, gray = _encoded(RGB16), _encoded(RGBA16), _encoded(GRAY16)
    with tf.Graph().as_default():
        got = _run({"rgb_gray": tf.image.decode_png(rgb, 1, dtype=tf.uint16),
                    "rgba_gray": tf.image.decode_png(rgba, 1, dtype=tf.uint16),
                    "rgb_gray_u8": tf.image.decode_png(rgb, 1),
                    "rgb_rgba": tf.image.decode_png(rgb, 4, dtype=tf.uint16),
                    "rgba_rgb": tf.image.decode_png(rgba, 3, dtype=tf.uint16),
                    "gray_rgb": tf.image.decode_png(gray, 3, dtype=tf.uint16)})
    assert got["rgb_gray"][..., 0].tolist() == RGB16_GRAY
    assert got["rgba_gray"][..., 0].tolist() == RGBA16_GRAY
    assert got["rgb_gray_u8"][..., 0].tolist() == RGB16_GRAY_U8
    assert got["rgb_rgba"][..., 3].tolist() == [[65535] * 4] * 3   # an opaque 16-bit alpha
    assert got["rgb_rgba"][..., :3].tolist() == RGB16
    assert got["rgba_rgb"].tolist() == np.array(RGBA16)[..., :3].tolist()
    assert got["gray_rgb"].tolist() == np.repeat(GRAY16, 3, -1).tolist()


def test_8_bit_files_decode_to_uint16_scaled_by_257_and_gray_as_libpng():
    with tf.Graph().as_default():
        png = _run(tf.image.encode_png(tf.constant(np.array(RGB8, np.uint8))))
        got = _run({"u16": tf.image.decode_png(png, dtype=tf.uint16),
                    "gray": tf.image.decode_png(png, 1),
                    "gray16": tf.image.decode_png(png, 1, dtype=tf.uint16),
                    "rgba16": tf.image.decode_png(png, 4, dtype=tf.uint16)})
    assert got["u16"].dtype == np.uint16 and got["u16"].tolist() == (np.array(RGB8) * 257).tolist()
    assert got["gray"][..., 0].tolist() == RGB8_GRAY
    assert got["gray16"][..., 0].tolist() == RGB8_GRAY16
    assert got["rgba16"][0, :2].tolist() == [[2570, 51400, 7710, 65535], [65535, 0, 32896, 65535]]


def test_decode_image_reads_pngs_as_uint16_for_any_dtype_but_uint8():
    png16 = _encoded(RGB16)
    with tf.Graph().as_default():
        png8 = _run(tf.image.encode_png(tf.constant(np.array(RGB8, np.uint8))))
        contents = tf.placeholder(tf.string, [])
        outs = {dt.name: tf.image.decode_image(contents, dtype=dt)
                for dt in (tf.uint8, tf.uint16, tf.float32)}
        got16 = _run(outs, {contents: png16})
        got8 = _run(outs, {contents: png8})
    assert got16["uint16"].tolist() == RGB16
    assert got16["uint8"].tolist() == (np.array(RGB16) >> 8).tolist()
    # TF: 256 / 65535 (the 16 bits kept), not 1 / 255.
    assert got16["float32"][0, 2].tolist() == [np.float32(256) * np.float32(1 / 65535)] * 3
    assert got16["float32"][0, 2, 0] == np.float32(0.003906309604644775)
    assert got8["uint16"].tolist() == (np.array(RGB8) * 257).tolist()
    want = (np.array(RGB8, np.uint16) * 257).astype(np.float32) * np.float32(1 / 65535)
    np.testing.assert_array_equal(got8["float32"], want)


def test_encode_png_refuses_other_types():
    with tf.Graph().as_default():
        for dtype in (tf.uint32, tf.int32, tf.float32):
            with pytest.raises(TypeError, match="encode_png: image must be uint8 .or uint16."):
                tf.image.encode_png(tf.zeros([2, 2, 1], dtype))
        with pytest.raises(TypeError, match="dtype must be one of uint8, uint16, got uint32"):
            tf.image.decode_png(b"", dtype=tf.uint32)


# convert_image_dtype: (source type, values, target type, saturate, TF 2.21's result).
CONVERSIONS = [
    ("uint16", [0, 1, 255, 256, 32767, 32768, 65535], "uint8", False, [0, 0, 0, 1, 127, 128, 255]),
    ("uint8", [0, 1, 127, 128, 255], "uint16", False, [0, 256, 32512, 32768, 65280]),
    ("uint16", [0, 1, 255, 256, 32767, 32768, 65535], "float32", False,
     [0.0, 1.5259021893143654e-05, 0.0038910505827516317, 0.003906309604644775,
      0.49999237060546875, 0.5000076293945312, 1.0]),
    ("uint16", [0, 1, 255, 256, 32767, 32768, 65535], "float64", False,
     [0.0, 1.5259021896696422e-05, 0.0038910505836575876, 0.003906309605554284,
      0.49999237048905165, 0.5000076295109483, 1.0]),
    ("uint16", [0, 1, 255, 256, 32767, 32768, 65535], "float16", False,
     [0.0, 1.52587890625e-05, 0.0038909912109375, 0.00390625, 0.5, 0.5, np.inf]),
    ("float32", [0.0, 1e-6, 0.25, 0.5, 0.999, 1.0], "uint16", False, [0, 0, 16383, 32767, 65469,
                                                                     65535]),
    ("float32", [0.0, 1e-6, 0.25, 0.5, 0.999, 1.0], "uint16", True, [0, 0, 16383, 32767, 65469,
                                                                    65535]),
    ("float64", [0.0, 1e-9, 0.25, 0.5, 1.0], "uint16", False, [0, 0, 16383, 32767, 65535]),
    ("float64", [0.0, 1e-9, 0.25, 0.5, 1.0], "uint32", False, [0, 4, 1073741823, 2147483647,
                                                               4294967295]),
    ("float32", [0.0, 1e-6, 0.25, 0.5, 0.999, 1.0], "uint32", True,
     [0, 4294, 1073741824, 2147483648, 4290672384, 4294967040]),
    ("uint32", [0, 1, 65535, 65536, 2 ** 31, 2 ** 32 - 1], "uint8", False, [0, 0, 0, 0, 128, 255]),
    ("uint8", [0, 1, 127, 128, 255], "uint32", False,
     [0, 16777216, 2130706432, 2147483648, 4278190080]),
    ("uint32", [0, 1, 65535, 65536, 2 ** 31, 2 ** 32 - 1], "int32", False,
     [0, 0, 32767, 32768, 1073741824, 2147483647]),
    ("int32", [-2 ** 31, -1, 0, 1, 2 ** 31 - 1], "uint32", False,
     [0, 4294967294, 0, 2, 4294967294]),
    ("int16", [-32768, -1, 0, 1, 32767], "uint16", True, [0, 0, 0, 2, 65534]),
    ("uint16", [0, 1, 255, 256, 32767, 32768, 65535], "int16", False,
     [0, 0, 127, 128, 16383, 16384, 32767]),
    ("uint64", [0, 1, 2 ** 32, 2 ** 63, 2 ** 64 - 1], "uint16", False, [0, 0, 0, 32768, 65535]),
    ("uint64", [0, 1, 2 ** 32, 2 ** 63, 2 ** 64 - 1], "int64", False,
     [0, 0, 2147483648, 4611686018427387904, 9223372036854775807]),
    ("uint64", [0, 1, 2 ** 32, 2 ** 63, 2 ** 64 - 1], "float64", False,
     [0.0, 5.421010862427522e-20, 2.3283064365386963e-10, 0.5, 1.0]),
    ("uint8", [0, 1, 127, 128, 255], "uint64", False,
     [0, 72057594037927936, 9151314442816847872, 9223372036854775808, 18374686479671623680]),
    ("uint16", [0, 1, 255, 256, 32767, 32768, 65535], "uint64", False,
     [0, 281474976710656, 71776119061217280, 72057594037927936, 9223090561878065152,
      9223372036854775808, 18446462598732840960]),
]


@pytest.mark.parametrize("src, values, dst, saturate, expected", CONVERSIONS)
def test_convert_image_dtype_matches_tensorflow(src, values, dst, saturate, expected):
    with tf.Graph().as_default():
        out = tf.image.convert_image_dtype(tf.constant(np.array(values, src)), getattr(tf, dst),
                                           saturate=saturate)
        got = _run(out)
    assert out.dtype == getattr(tf, dst) and got.dtype == np.dtype(dst)
    np.testing.assert_array_equal(got, np.array(expected, dst))
