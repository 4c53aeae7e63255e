"""Image codecs (``tf.image`` and ``tf.io``, see zps/image.py): PNG encoded and decoded here with
zlib and numpy, BMP decoded, JPEG and GIF through Pillow when it is installed
(``pip install "zps[image]"``), ``decode_image`` choosing by the first bytes.

PNG: bit depths 1, 2, 4, 8 and 16; gray, gray + alpha, RGB, RGBA and palette images (a palette
with transparency decodes to RGBA); all five row filters. Interlaced (Adam7) files are refused
with an error. ``encode_png`` writes filter 0 rows, so its bytes differ from TF's (libpng picks
filters adaptively); what decodes from them is the same. uint16 images are 16-bit PNGs (samples
big-endian); ``decode_png(..., dtype=tf.uint16)`` scales 8-bit files by 257 and RGB is weighed
to gray as libpng does (TF's numbers, exactly).

>>> import numpy as np, zps as tf
>>> with tf.Graph().as_default():
...     image = tf.constant(np.arange(12, dtype=np.uint8).reshape(2, 2, 3))
...     again = tf.image.decode_png(tf.image.encode_png(image))
...     print(tf.Session().run(again)[1, 1])
[ 9 10 11]
"""

import struct
import zlib

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.graph import convert_to_tensor, get_default_graph
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape, unknown_shape
from zps.ops import control_flow_ops, math_ops, string_ops
from zps.ops.image_ops import convert_image_dtype
from zps.ops.op_util import make_op
from zps.ops.string_ops import _string_tensor, _strings

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PIXEL_TYPES = (_dtypes.uint8, _dtypes.uint16)
_PNG_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}   # color type -> samples per pixel in the file


def _fail(op_name, message, *args):
    raise errors.InvalidArgumentError(None, op_name, message % args)


def _scalar_bytes(contents, op_name):
    value = contents.item() if isinstance(contents, np.ndarray) else contents
    if isinstance(value, str):
        value = value.encode("utf-8")
    if not isinstance(value, bytes):
        _fail(op_name, "contents must be a scalar string, got %r", type(value).__name__)
    return value


# -- PNG -------------------------------------------------------------------------------------------
def _png_chunks(data, op_name):
    if not data.startswith(_PNG_SIGNATURE):
        _fail(op_name, "Invalid PNG data: the PNG signature is missing (size %d)", len(data))
    pos = len(_PNG_SIGNATURE)
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        crc = data[pos + 8 + length:pos + 12 + length]
        if len(body) != length or len(crc) != 4:
            _fail(op_name, "Invalid PNG data: chunk %r is truncated", kind.decode("latin-1"))
        if zlib.crc32(kind + body) != struct.unpack(">I", crc)[0]:
            _fail(op_name, "Invalid PNG data: bad CRC in chunk %r", kind.decode("latin-1"))
        yield kind, body
        if kind == b"IEND":
            return
        pos += 12 + length
    _fail(op_name, "Invalid PNG data: no IEND chunk (the file is truncated)")


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def _unfilter(raw, height, stride, bpp, op_name):
    """The scanlines of ``raw`` (each a filter byte then ``stride`` bytes) unfiltered."""
    if len(raw) < height * (stride + 1):
        _fail(op_name, "Invalid PNG data: image data is truncated (%d of %d bytes)", len(raw),
              height * (stride + 1))
    rows = np.frombuffer(raw, np.uint8)[:height * (stride + 1)].reshape(height, stride + 1)
    out = np.zeros((height, stride), np.uint8)
    prior = np.zeros(stride, np.uint8)
    for y in range(height):
        kind, line = rows[y, 0], rows[y, 1:]
        if kind == 0:
            cur = line.copy()
        elif kind == 1:   # Sub: a running sum (mod 256) of every bpp-th byte
            padded = np.zeros(-(-stride // bpp) * bpp, np.uint8)
            padded[:stride] = line
            cur = np.cumsum(padded.reshape(-1, bpp), axis=0, dtype=np.uint8).reshape(-1)[:stride]
        elif kind == 2:
            cur = line + prior
        elif kind in (3, 4):
            cur = line.astype(np.int64)
            up = prior.astype(np.int64)
            for i in range(stride):
                left = cur[i - bpp] if i >= bpp else 0
                if kind == 3:
                    cur[i] = (cur[i] + (left + up[i]) // 2) & 0xFF
                else:
                    corner = up[i - bpp] if i >= bpp else 0
                    cur[i] = (cur[i] + _paeth(left, up[i], corner)) & 0xFF
            cur = cur.astype(np.uint8)
        else:
            _fail(op_name, "Invalid PNG data: unknown row filter %d", int(kind))
        out[y] = prior = cur
    return out


def _decode_png_array(data, op_name):
    """``(pixels [height, width, samples] uint8 or uint16, bit_depth)`` of a PNG file."""
    header, palette, alpha, idat = None, None, None, []
    for kind, body in _png_chunks(data, op_name):
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            palette = np.frombuffer(body, np.uint8).reshape(-1, 3)
        elif kind == b"tRNS":
            alpha = np.frombuffer(body, np.uint8)
        elif kind == b"IDAT":
            idat.append(body)
    if header is None:
        _fail(op_name, "Invalid PNG data: no IHDR chunk")
    width, height, depth, color, _, _, interlace = header
    if color not in _PNG_CHANNELS or depth not in (1, 2, 4, 8, 16):
        _fail(op_name, "Invalid PNG data: color type %d with bit depth %d", color, depth)
    if interlace:
        _fail(op_name, "interlaced (Adam7) PNG images are not supported by zps; re-save the "
              "image without interlacing")
    samples = _PNG_CHANNELS[color]
    stride = -(-width * samples * depth // 8)
    try:
        raw = zlib.decompress(b"".join(idat))
    except zlib.error as e:
        _fail(op_name, "Invalid PNG data: corrupt image data (%s)", e)
    rows = _unfilter(raw, height, stride, max(1, samples * depth // 8), op_name)
    if depth == 16:
        pixels = rows.view(">u2").astype(np.uint16)
    elif depth == 8:
        pixels = rows
    else:   # 1, 2 or 4 bits: unpack, and scale gray levels to 0..255 as libpng
        bits = np.unpackbits(rows, axis=1).reshape(height, -1, depth)
        pixels = (bits * (1 << np.arange(depth - 1, -1, -1))).sum(-1).astype(np.uint8)
        pixels = pixels[:, :width * samples]
        if color == 0:
            pixels = (pixels * (255 // ((1 << depth) - 1))).astype(np.uint8)
    pixels = pixels.reshape(height, width, samples)
    if color == 3:
        if palette is None:
            _fail(op_name, "Invalid PNG data: a palette image without a PLTE chunk")
        index = pixels[..., 0]
        if index.size and index.max() >= len(palette):
            _fail(op_name, "Invalid PNG data: palette index out of range")
        pixels = palette[index]
        if alpha is not None:
            table = np.full(len(palette), 255, np.uint8)
            table[:len(alpha)] = alpha[:len(palette)]
            pixels = np.concatenate([pixels, table[index][..., None]], -1)
        depth = 8
    return pixels, depth


def _to_channels(pixels, channels, op_name):
    """``pixels`` [h, w, c] with ``channels`` (0: as they are) samples: gray is repeated to RGB,
    RGB weighed to gray (ITU-R 601, as libpng), an opaque alpha added or the alpha dropped."""
    have = pixels.shape[-1]
    if channels in (0, have):
        return pixels
    if channels not in (1, 3, 4):
        _fail(op_name, "channels must be 0, 1, 3 or 4, got %d", channels)
    opaque = np.iinfo(pixels.dtype).max
    color = pixels[..., :1 if have <= 2 else 3]
    alpha = pixels[..., -1:] if have in (2, 4) else np.full(pixels.shape[:2] + (1,), opaque,
                                                             pixels.dtype)
    if channels == 1:
        if color.shape[-1] == 3:
            # libpng's rgb_to_gray with TF's weights 0.299, 0.587 (in 32768ths: 9797, 19234 and
            # the rest, 3737): 8-bit samples truncated, 16-bit ones rounded.
            gray = color.astype(np.int64) @ np.array([9797, 19234, 3737], np.int64)
            if pixels.dtype == np.uint16:
                gray += 16384
            color = (gray >> 15)[..., None].astype(pixels.dtype)
        return color
    if color.shape[-1] == 1:
        color = np.repeat(color, 3, -1)
    return color if channels == 3 else np.concatenate([color, alpha], -1)


def _decode_png_kernel(ctx, contents, channels, dtype, op_name):
    pixels, depth = _decode_png_array(_scalar_bytes(contents, op_name), op_name)
    pixels = _to_channels(pixels, channels, op_name)
    if dtype != _dtypes.uint8 and depth != 16:
        pixels = pixels.astype(np.uint16) * 257
    elif dtype == _dtypes.uint8 and depth == 16:
        pixels = (pixels >> 8).astype(np.uint8)
    return ctx.xp.asarray(np.ascontiguousarray(pixels))


def _decoded_shape(op):
    channels = op._attrs.get("channels", 0)
    return TensorShape([None, None, channels or None])


register_op("DecodePng", dtype=lambda op: op._attrs["dtype"], shape=_decoded_shape,
            kernel=_decode_png_kernel, needs_op_name=True, grad=None)


def _png_chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _encode_png_kernel(ctx, image, compression, op_name):
    image = np.asarray(image)
    if image.ndim != 3 or image.shape[-1] not in (1, 2, 3, 4):
        _fail(op_name, "image must be 3-D [height, width, channels] with 1 to 4 channels, got "
              "shape %s", list(image.shape))
    height, width, channels = image.shape
    depth = 16 if image.dtype == np.uint16 else 8
    color = {1: 0, 2: 4, 3: 2, 4: 6}[channels]
    rows = image.astype(">u2" if depth == 16 else np.uint8).reshape(height, -1).view(np.uint8)
    raw = np.concatenate([np.zeros((height, 1), np.uint8), rows], 1).tobytes()
    level = 6 if compression == -1 else compression
    data = (_PNG_SIGNATURE +
            _png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, 0)) +
            _png_chunk(b"IDAT", zlib.compress(raw, level)) + _png_chunk(b"IEND", b""))
    return _strings((), [data])


register_op("EncodePng", dtype=lambda op: _dtypes.string, shape=lambda op: TensorShape([]),
            kernel=_encode_png_kernel, needs_op_name=True, grad=None)


def _contents(contents):
    contents = _string_tensor(contents, "contents")
    if contents.get_shape().ndims not in (None, 0):
        raise ValueError("contents must be a scalar string (one encoded image), got shape %s"
                         % contents.get_shape())
    return contents


def _channels(channels, allowed=(0, 1, 3, 4)):
    channels = int(channels or 0)
    if channels not in allowed:
        raise ValueError("channels must be one of %s, got %d" % (allowed, channels))
    return channels


def decode_png(contents, channels=0, dtype=_dtypes.uint8, name=None):
    """The image [height, width, channels] of the PNG file ``contents`` (a scalar string), as
    uint8 or uint16 (8-bit files scaled by 257, 16-bit ones cut to their high byte);
    ``channels`` 0 keeps the file's, 1 gray, 3 RGB, 4 RGBA."""
    dtype = _dtypes.as_dtype(dtype)
    if dtype not in _PIXEL_TYPES:
        raise TypeError("decode_png: dtype must be one of %s, got %s"
                        % (", ".join(t.name for t in _PIXEL_TYPES), dtype.name))
    return make_op("DecodePng", [_contents(contents)], name=name or "DecodePng",
                   channels=_channels(channels), dtype=dtype)


def encode_png(image, compression=-1, name=None):
    """``image`` ([height, width, channels], uint8 or uint16, 1 to 4 channels) as a PNG file
    (a scalar string); ``compression`` is zlib's level, 0 to 9, -1 its default."""
    image = convert_to_tensor(image, name="image")
    if image.dtype.base_dtype not in _PIXEL_TYPES:
        raise TypeError("encode_png: image must be uint8 (or uint16), got %s (convert with "
                        "tf.image.convert_image_dtype)" % image.dtype.name)
    shape = image.get_shape()
    if shape.ndims is not None and (shape.ndims != 3 or shape[-1].value not in (1, 2, 3, 4,
                                                                                None)):
        raise ValueError("encode_png: image must be [height, width, channels] with 1 to 4 "
                         "channels, got shape %s" % shape)
    if not -1 <= int(compression) <= 9:
        raise ValueError("encode_png: compression must be -1 or 0 to 9, got %d" % compression)
    return make_op("EncodePng", [image], name=name or "EncodePng", compression=int(compression))


# -- BMP (uncompressed 24 and 32 bit) -------------------------------------------------------------
def _decode_bmp_array(data, op_name):
    if len(data) < 54 or not data.startswith(b"BM"):
        _fail(op_name, "Invalid BMP data: the 'BM' header is missing or short")
    offset, = struct.unpack_from("<I", data, 10)
    width, height, _, bits, compression = struct.unpack_from("<iiHHI", data, 18)
    if bits not in (24, 32) or compression not in (0, 3):
        _fail(op_name, "BMP: only uncompressed 24 and 32-bit images are supported, got %d "
              "bits, compression %d", bits, compression)
    channels = bits // 8
    stride = (width * channels + 3) // 4 * 4
    rows = abs(height)
    if len(data) < offset + stride * rows:
        _fail(op_name, "Invalid BMP data: pixel data is truncated")
    pixels = np.frombuffer(data, np.uint8, stride * rows, offset).reshape(rows, stride)
    pixels = pixels[:, :width * channels].reshape(rows, width, channels)
    pixels = pixels if height < 0 else pixels[::-1]   # positive height: bottom-up rows
    order = [2, 1, 0, 3][:channels]   # BGR(A) -> RGB(A)
    return np.ascontiguousarray(pixels[..., order])


def _decode_bmp_kernel(ctx, contents, channels, op_name):
    pixels = _decode_bmp_array(_scalar_bytes(contents, op_name), op_name)
    return ctx.xp.asarray(_to_channels(pixels, channels, op_name))


register_op("DecodeBmp", dtype=lambda op: _dtypes.uint8, shape=_decoded_shape,
            kernel=_decode_bmp_kernel, needs_op_name=True, grad=None)


def decode_bmp(contents, channels=0, name=None):
    """The image [height, width, channels] (uint8) of an uncompressed 24 or 32-bit BMP file."""
    return make_op("DecodeBmp", [_contents(contents)], name=name or "DecodeBmp",
                   channels=_channels(channels, (0, 3, 4)))


# -- JPEG and GIF through Pillow ---------------------------------------------------------------------
def _pillow(what):
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("%s needs Pillow, which zps does not install by default: pip install "
                          "\"zps[image]\" (or pip install Pillow)" % what) from None
    return Image


def _pillow_decode(data, what, op_name):
    import io

    image_module = _pillow(what)
    try:
        image = image_module.open(io.BytesIO(data))
        frames = []
        for index in range(getattr(image, "n_frames", 1)):
            image.seek(index)
            frames.append(np.asarray(image.convert("RGB" if what == "decode_gif" else
                                                   _pillow_mode(image.mode))))
    except (OSError, ValueError, SyntaxError) as e:
        _fail(op_name, "Invalid %s data: %s", what[len("decode_"):].upper(), e)
    return frames


def _pillow_mode(mode):
    return "L" if mode in ("L", "1", "I;16") else "RGB"


def _decode_jpeg_kernel(ctx, contents, channels, op_name):
    frame = _pillow_decode(_scalar_bytes(contents, op_name), "decode_jpeg", op_name)[0]
    frame = frame[..., None] if frame.ndim == 2 else frame
    return ctx.xp.asarray(np.ascontiguousarray(_to_channels(frame, channels, op_name)))


def _decode_gif_kernel(ctx, contents, op_name):
    frames = _pillow_decode(_scalar_bytes(contents, op_name), "decode_gif", op_name)
    return ctx.xp.asarray(np.stack(frames))


def _encode_jpeg_kernel(ctx, image, quality, op_name):
    import io

    image_module = _pillow("encode_jpeg")
    image = np.asarray(image)
    if image.ndim != 3 or image.shape[-1] not in (1, 3):
        _fail(op_name, "image must be [height, width, 1 or 3], got shape %s", list(image.shape))
    buffer = io.BytesIO()
    image_module.fromarray(image[..., 0] if image.shape[-1] == 1 else image).save(
        buffer, format="JPEG", quality=int(quality))
    return _strings((), [buffer.getvalue()])


register_op("DecodeJpeg", dtype=lambda op: _dtypes.uint8, shape=_decoded_shape,
            kernel=_decode_jpeg_kernel, needs_op_name=True, grad=None)
register_op("DecodeGif", dtype=lambda op: _dtypes.uint8,
            shape=lambda op: TensorShape([None, None, None, 3]), kernel=_decode_gif_kernel,
            needs_op_name=True, grad=None)
register_op("EncodeJpeg", dtype=lambda op: _dtypes.string, shape=lambda op: TensorShape([]),
            kernel=_encode_jpeg_kernel, needs_op_name=True, grad=None)


def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True,
                try_recover_truncated=False, acceptable_fraction=1, dct_method="", name=None):
    """The image [height, width, channels] (uint8) of a JPEG file, decoded by Pillow (``pip
    install "zps[image]"``); only ``channels`` of TF's options is honoured (``ratio`` must be
    1)."""
    if ratio != 1:
        raise NotImplementedError("decode_jpeg: zps decodes at ratio 1 only, got %r" % ratio)
    _pillow("decode_jpeg")
    return make_op("DecodeJpeg", [_contents(contents)], name=name or "DecodeJpeg",
                   channels=_channels(channels, (0, 1, 3)))


def encode_jpeg(image, format="", quality=95, progressive=False, optimize_size=False,  # noqa: A002
                chroma_downsampling=True, density_unit="in", x_density=300, y_density=300,
                xmp_metadata="", name=None):
    """``image`` ([height, width, 1 or 3], uint8) as a JPEG file of ``quality`` (0 to 100),
    encoded by Pillow (``pip install "zps[image]"``); TF's other options are not honoured."""
    _pillow("encode_jpeg")
    image = convert_to_tensor(image, name="image")
    if image.dtype.base_dtype != _dtypes.uint8:
        raise TypeError("encode_jpeg: image must be uint8, got %s" % image.dtype.name)
    return make_op("EncodeJpeg", [image], name=name or "EncodeJpeg", quality=int(quality))


def decode_gif(contents, name=None):
    """The frames [num_frames, height, width, 3] (uint8 RGB) of a GIF file, decoded by Pillow
    (``pip install "zps[image]"``)."""
    _pillow("decode_gif")
    return make_op("DecodeGif", [_contents(contents)], name=name or "DecodeGif")


# -- decode_image: by the first bytes ----------------------------------------------------------------
_JPEG, _GIF, _BMP = b"\xff\xd8\xff", b"GIF8", b"BM"


def _decode_image_kernel(ctx, contents, channels, expand_animations, op_name):
    data = _scalar_bytes(contents, op_name)
    if data.startswith(_PNG_SIGNATURE):
        pixels, depth = _decode_png_array(data, op_name)
        pixels = _to_channels(pixels, channels, op_name)
        pixels = (pixels >> 8).astype(np.uint8) if depth == 16 else pixels
    elif data.startswith(_JPEG):
        pixels = _decode_jpeg_kernel(ctx, contents, channels, op_name)
    elif data.startswith(_BMP):
        pixels = _to_channels(_decode_bmp_array(data, op_name), channels, op_name)
    elif data.startswith(_GIF):
        frames = np.stack(_pillow_decode(data, "decode_gif", op_name))
        if channels not in (0, 3):
            _fail(op_name, "channels must be 0 or 3 for GIF, got %d", channels)
        pixels = frames if expand_animations else frames[0]
    else:
        _fail(op_name, "Unknown image file format. One of JPEG, PNG, GIF, BMP required.")
    return ctx.xp.asarray(np.ascontiguousarray(pixels))


register_op("DecodeImage", dtype=lambda op: _dtypes.uint8, shape=lambda op: unknown_shape(),
            kernel=_decode_image_kernel, needs_op_name=True, grad=None)


def decode_image(contents, channels=None, dtype=_dtypes.uint8, name=None,
                 expand_animations=True):
    """The image of ``contents`` (PNG, BMP, JPEG or GIF, told by its first bytes) as
    [height, width, channels] (a GIF: [frames, height, width, 3] with ``expand_animations``),
    converted to ``dtype`` by ``convert_image_dtype``: for any ``dtype`` but uint8 a PNG is
    decoded as uint16 first (16-bit files keep their precision), as TF1. JPEG and GIF need
    Pillow."""
    with get_default_graph().name_scope(name or "decode_image"):
        contents, channels = _contents(contents), _channels(channels)
        dtype = _dtypes.as_dtype(dtype)

        def other_formats():
            decoded = make_op("DecodeImage", [contents], name="DecodeImage", channels=channels,
                              expand_animations=bool(expand_animations))
            return decoded if dtype == _dtypes.uint8 else convert_image_dtype(decoded, dtype)
        if dtype == _dtypes.uint8:
            return other_formats()
        is_png = math_ops.equal(string_ops.substr(contents, 0, len(_PNG_SIGNATURE)),
                                _PNG_SIGNATURE)
        return control_flow_ops.cond(
            is_png, lambda: convert_image_dtype(decode_png(contents, channels, _dtypes.uint16),
                                                dtype), other_formats)


def is_jpeg(contents, name=None):
    """Whether ``contents`` (a scalar string) starts like a JPEG file (bytes FF D8 FF)."""
    with get_default_graph().name_scope(name or "is_jpeg"):
        return math_ops.equal(string_ops.substr(_contents(contents), 0, 3), _JPEG)


__all__ = ["decode_png", "encode_png", "decode_bmp", "decode_jpeg", "encode_jpeg", "decode_gif",
           "decode_image", "is_jpeg"]
