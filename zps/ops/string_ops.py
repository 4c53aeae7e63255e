"""String ops: splitting, joining, converting and CSV decoding (TF1's ``tf.string_split`` ...).

Strings are numpy object arrays of ``bytes``. Every op here runs on the host (``CPU_ONLY``) and
is not differentiable. Conversions that fail raise InvalidArgumentError with TF1's messages,
naming the string (and, for CSV, the field and record) that was wrong.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     num, word = tf.decode_csv(["1,a", "2,b"], record_defaults=[[0], [""]])
...     parts = tf.string_split(["x y", "z"])
...     with tf.Session() as sess:
...         n, w, p = sess.run([num, word, parts])
>>> n.tolist(), w.tolist(), p.values.tolist(), p.dense_shape.tolist()
([1, 2], [b'a', b'b'], [b'x', b'y', b'z'], [2, 2])
"""

import functools
import re

import numpy as np

from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.graph import convert_to_tensor, get_default_graph
from zps.framework.registry import register_op
from zps.framework.tensor_shape import TensorShape, unknown_shape
from zps.ops import array_ops
from zps.ops.fingerprint import fingerprint64, siphash
from zps.ops.logging_ops import _summarize_v2
from zps.ops.op_util import broadcast_static, const_axis, make_op, normalize_axis, same_shape
from zps.ops.sparse_ops import SparseTensor


def _strings(shape, items):
    """An object array of ``shape`` holding ``items`` (bytes), never a numpy bytes array."""
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out.reshape(shape)


def _string_tensor(value, name, const_name=None):
    # ``name`` is the argument's name, for errors, and the constant's name unless ``const_name``.
    try:
        t = convert_to_tensor(value, dtype=_dtypes.string, name=const_name or name)
    except TypeError as e:   # a number where a string belongs (graph.numpy_value's message)
        raise TypeError("%s must be a string tensor: %s" % (name, e)) from None
    if t.dtype.base_dtype != _dtypes.string:
        raise TypeError("%s must be a string tensor, got %s (%s)" % (name, t.dtype.name, t.name))
    return t


# -- number parsing shared by StringToNumber and DecodeCSV (TF's safe_strto*: spaces allowed) ----
_INT = re.compile(rb"^\s*[+-]?[0-9]+\s*$")
_FLOAT = re.compile(rb"^\s*[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|inf|infinity|nan)\s*$",
                    re.IGNORECASE)
_HEX_FLOAT = re.compile(rb"^\s*[+-]?0x([0-9a-f]+\.?[0-9a-f]*|\.[0-9a-f]+)(p[+-]?[0-9]+)?\s*$",
                        re.IGNORECASE)


def _parse_number(text, np_dtype):
    """``text`` (bytes) as a number of ``np_dtype``, or None when it is not one (or overflows)."""
    if np.issubdtype(np_dtype, np.integer):
        if not _INT.match(text):
            return None
        value = int(text)
        info = np.iinfo(np_dtype)
        return value if info.min <= value <= info.max else None
    if _HEX_FLOAT.match(text):        # strtod's hexadecimal floats, as TF1 reads them
        return float.fromhex(text.decode("ascii").strip())
    if not _FLOAT.match(text):
        return None
    return float(text)


# -- StringSplit ---------------------------------------------------------------------------------
def _split_kernel(ctx, source, delimiter, skip_empty):
    sep = delimiter.item()
    indices, values, width = [], [], 0
    for row, text in enumerate(source.ravel()):
        if sep == b"":
            tokens = [text[i:i + 1] for i in range(len(text))]
        else:
            # TF1: each byte of the delimiter splits.
            tokens = re.split(b"[" + re.escape(sep) + b"]", text) if text else []
        if skip_empty:
            tokens = [t for t in tokens if t]
        indices += [(row, col) for col in range(len(tokens))]
        values += tokens
        width = max(width, len(tokens))
    return (np.array(indices, dtype=np.int64).reshape(-1, 2), _strings(len(values), values),
            np.array([source.size, width], dtype=np.int64))


register_op("StringSplit", dtype=lambda op: [_dtypes.int64, _dtypes.string, _dtypes.int64],
            shape=lambda op: [TensorShape([None, 2]), TensorShape([None]), TensorShape([2])],
            kernel=_split_kernel, num_outputs=3, grad=None)


def string_split(source, sep=None, skip_empty=True, delimiter=None, result_type="SparseTensor",
                 name=None):
    """Split each string of the 1-D ``source`` at any byte of ``sep``; a SparseTensor.

    ``sep`` (TF1's older name: ``delimiter``) defaults to " "; ``""`` splits into single bytes;
    ``skip_empty`` drops empty tokens.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     st = tf.string_split(["a b", "c"])
    ...     print(tf.Session().run(st.values).tolist())
    [b'a', b'b', b'c']
    """
    if sep is not None and delimiter is not None:
        raise ValueError("string_split: pass sep or delimiter (its deprecated name), not both")
    if result_type != "SparseTensor":
        raise ValueError("string_split: zps supports result_type='SparseTensor' only, got %r"
                         % (result_type,))
    with get_default_graph().name_scope(name or "StringSplit"):   # TF's ss/StringSplit
        sep = _string_tensor(next((s for s in (sep, delimiter) if s is not None), " "),
                             "delimiter", "Const")
        source = _string_tensor(source, "source", "Const")
        source.get_shape().with_rank(1)
        indices, values, shape = make_op("StringSplit", [source, sep], skip_empty=bool(skip_empty))
        return SparseTensor(indices, values, shape)


# -- StringSplitV2 (tf.strings.split) ------------------------------------------------------------
def _split_whitespace(text, maxsplit):
    # TF's SplitV2 without sep: Python's split(None), except that once maxsplit tokens are taken
    # the rest (its leading whitespace removed) is always one more token, even when empty.
    if maxsplit == 0:
        return [text]
    tokens, rest = [], text.lstrip()
    while rest:
        token = rest.split(None, 1)[0]
        tokens.append(token)
        rest = rest[len(token):].lstrip()
        if len(tokens) == maxsplit:
            return tokens + [rest]
    return tokens


def _split_v2_kernel(ctx, source, sep, maxsplit):
    # Any rank (TF's kernel takes vectors; its wrapper splits other ranks the same way): each
    # token's index is its string's index then its position.
    sep = sep.item()
    rows = [text.split(sep, maxsplit) if sep else _split_whitespace(text, maxsplit)
            for text in source.ravel()]
    positions = [(r, c) for r, tokens in enumerate(rows) for c in range(len(tokens))]
    flat = np.array(positions, dtype=np.int64).reshape(-1, 2)
    outer = np.unravel_index(flat[:, 0], source.shape) if source.ndim else ()
    indices = np.stack(list(outer) + [flat[:, 1]], axis=1).astype(np.int64, copy=False)
    values = [t for tokens in rows for t in tokens]
    width = max((len(tokens) for tokens in rows), default=0)
    return (indices, _strings(len(values), values),
            np.array(list(source.shape) + [width], dtype=np.int64))


def _split_v2_shape(op):
    rank = op.inputs[0].get_shape().ndims
    n = None if rank is None else rank + 1
    return [TensorShape([None, n]), TensorShape([None]), TensorShape([n])]


register_op("StringSplitV2", dtype=lambda op: [_dtypes.int64, _dtypes.string, _dtypes.int64],
            shape=_split_v2_shape, kernel=_split_v2_kernel, num_outputs=3, grad=None)


def strings_split_v1(input=None, sep=None, maxsplit=-1, result_type="SparseTensor",  # noqa: A002
                     source=None, name=None):
    """Split each string of ``input`` (any rank) at ``sep`` as Python's ``bytes.split`` does: a
    SparseTensor whose indices add the token's position to the string's (TF1's
    ``tf.strings.split``).

    ``sep`` None or "" splits at runs of whitespace and drops empty tokens; any other ``sep`` is
    one whole delimiter and keeps them. At most ``maxsplit`` splits per string (-1: no limit).
    ``source`` is the older name of ``input``. A scalar ``input`` gives one row.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     st = tf.strings.split(["a<>b<><>c", "d"], sep="<>")
    ...     v = tf.Session().run(st)
    >>> v.values.tolist(), v.dense_shape.tolist()
    ([b'a', b'b', b'', b'c', b'd'], [2, 4])
    """
    if (input is None) == (source is None):
        raise ValueError("tf.strings.split: pass input (or source, its older name), exactly one")
    if result_type not in ("RaggedTensor", "SparseTensor"):
        raise ValueError("result_type must be 'RaggedTensor' or 'SparseTensor'.")
    if result_type == "RaggedTensor":
        raise ValueError("tf.strings.split: zps has no RaggedTensor; use "
                         "result_type='SparseTensor'")
    with get_default_graph().name_scope(name or "StringSplit"):
        source = _string_tensor(input if input is not None else source, "input")
        sep = _string_tensor("" if sep is None else sep, "sep")
        if sep.get_shape().ndims not in (None, 0):
            raise ValueError("tf.strings.split: sep must be a scalar, got shape %s"
                             % sep.get_shape())
        if source.get_shape().ndims == 0:
            source = array_ops.expand_dims(source, 0)
        return SparseTensor(*make_op("StringSplitV2", [source, sep], maxsplit=int(maxsplit)))


# -- StringToNumber ------------------------------------------------------------------------------
_NUMBER_TYPES = (_dtypes.float32, _dtypes.float64, _dtypes.int32, _dtypes.int64)


def _to_number_kernel(ctx, strings, out_type):
    np_dtype = _dtypes.as_dtype(out_type).as_numpy_dtype
    out = np.empty(strings.shape, dtype=np_dtype)
    flat = out.reshape(-1)
    for i, text in enumerate(strings.ravel()):
        value = _parse_number(text, np_dtype)
        if value is None:
            raise errors.InvalidArgumentError(
                None, None, "StringToNumberOp could not correctly convert string: %s"
                % text.decode("utf-8", "replace"))
        flat[i] = value
    return out


register_op("StringToNumber", dtype=lambda op: op._attrs["out_type"], shape=same_shape,
            kernel=_to_number_kernel, grad=None)


def string_to_number(string_tensor=None, out_type=_dtypes.float32, name=None, input=None):  # noqa: A002
    """Parse each string as a number of ``out_type`` (float32/64, int32/64); ``input`` is
    ``string_tensor``'s newer name.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.string_to_number(["1.5", "-2"])).tolist())
    [1.5, -2.0]
    """
    if (string_tensor is None) == (input is None):
        raise ValueError("string_to_number: pass string_tensor or input (its newer name), "
                         "exactly one")
    out_type = _dtypes.as_dtype(out_type)
    if out_type not in _NUMBER_TYPES:
        raise TypeError("string_to_number: out_type must be one of %s, got %s"
                        % ([d.name for d in _NUMBER_TYPES], out_type.name))
    strings = string_tensor if input is None else input
    return make_op("StringToNumber", [_string_tensor(strings, "string_tensor")],
                   name=name or "StringToNumber", out_type=out_type)


# -- AsString ------------------------------------------------------------------------------------
def _as_string_kernel(ctx, x, fmt):
    if x.dtype == np.bool_:
        items = [b"true" if v else b"false" for v in x.ravel()]
    else:
        items = [(fmt % v).encode() for v in x.ravel().tolist()]
    return _strings(x.shape, items)


register_op("AsString", dtype=lambda op: _dtypes.string, shape=same_shape,
            kernel=_as_string_kernel, grad=None)


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill="",  # noqa: A002
              name=None):
    """Each number (or bool) as a string, formatted as C's printf (``%f``, ``%d`` ...).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.as_string([1.5, 2.0], precision=2)).tolist())
    [b'1.50', b'2.00']
    """
    x = convert_to_tensor(input, name="input")
    dtype = x.dtype.base_dtype
    if len(fill) > 1:
        raise ValueError("as_string: fill string must be one or fewer characters, got %r" % fill)
    if fill and fill not in " +-0#":
        raise ValueError("as_string: fill argument %r is not supported (use one of ' +-0#')" % fill)
    if scientific and shortest:
        raise ValueError("as_string: cannot select both scientific and shortest notation")
    if dtype.is_integer and (precision > -1 or scientific or shortest):
        raise ValueError("as_string: precision, scientific and shortest apply only to floats, "
                         "not to %s" % dtype.name)
    if not (dtype.is_integer or dtype.is_floating or dtype.is_bool):
        raise TypeError("as_string: input must be a number or bool, got %s" % dtype.name)
    fmt = "%" + fill + ("%d" % width if width > -1 else "") + (
        ".%d" % precision if precision > -1 else "")
    fmt += "d" if dtype.is_integer else "g" if shortest else "e" if scientific else "f"
    return make_op("AsString", [x], name=name or "AsString", fmt=fmt)


# -- Substr --------------------------------------------------------------------------------------
_UNITS = ("BYTE", "UTF8_CHAR")


def _char_starts(text):
    """The byte offsets at which the UTF-8 characters of ``text`` start (TF's rule: every byte
    that is not a continuation byte starts one)."""
    return [i for i, b in enumerate(text) if b & 0xC0 != 0x80]


def _substr_kernel(ctx, strings, pos, length, unit):
    strings, pos, length = np.broadcast_arrays(strings, pos, length)
    items = []
    for i, (text, p, n) in enumerate(zip(strings.ravel(), pos.ravel().tolist(),
                                         length.ravel().tolist())):
        starts = _char_starts(text) + [len(text)] if unit == "UTF8_CHAR" else None
        size = len(text) if starts is None else len(starts) - 1
        if not -size <= p <= size:
            raise errors.InvalidArgumentError(
                None, None, "pos %d out of range for string b'%s' at index %d"
                % (p, text.decode("utf-8", "replace"), i))
        start = p if p >= 0 else size + p
        # TF1: a negative len takes the rest of the string in bytes, nothing in characters
        end = size if n < 0 and starts is None else min(start + max(n, 0), size)
        items.append(text[start:end] if starts is None else text[starts[start]:starts[end]])
    return _strings(strings.shape, items)


register_op("Substr", dtype=lambda op: _dtypes.string,
            shape=lambda op: broadcast_static(op.inputs[0].get_shape(), op.inputs[1].get_shape()),
            kernel=_substr_kernel, grad=None)


def _check_unit(what, unit):
    if unit not in _UNITS:
        raise ValueError("Attr 'unit' of '%s' Op passed string '%s' not in: \"BYTE\", "
                         "\"UTF8_CHAR\"." % (what, unit))


def substr(input, pos, len, name=None, unit="BYTE"):  # noqa: A002 - TF1's argument names
    """The substrings ``input[pos:pos + len]`` (a negative ``pos`` counts from the end), in bytes
    or, with ``unit="UTF8_CHAR"``, in UTF-8 characters.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.substr(["hello"], 1, 3)).tolist())
    [b'ell']
    """
    _check_unit("Substr", unit)
    strings = _string_tensor(input, "input")
    pos = convert_to_tensor(pos, dtype=_dtypes.int32, name="pos")
    length = convert_to_tensor(len, dtype=pos.dtype, name="len")
    if not pos.get_shape().is_compatible_with(length.get_shape()):
        raise ValueError("substr: pos %s and len %s must have the same shape"
                         % (pos.get_shape(), length.get_shape()))
    return make_op("Substr", [strings, pos, length], name=name or "Substr", unit=unit)


# -- StringLength --------------------------------------------------------------------------------
def _length_kernel(ctx, strings, unit):
    count = len if unit == "BYTE" else lambda text: sum(b & 0xC0 != 0x80 for b in text)
    return np.fromiter((count(t) for t in strings.ravel()), dtype=np.int32,
                       count=strings.size).reshape(strings.shape)


register_op("StringLength", dtype=lambda op: _dtypes.int32, shape=same_shape,
            kernel=_length_kernel, grad=None)


def string_length(input, name=None, unit="BYTE"):  # noqa: A002 - TF1's argument name
    """The length of each string (int32), in bytes or, with ``unit="UTF8_CHAR"``, in UTF-8
    characters.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.strings.length(["abc", "é"], unit="UTF8_CHAR")).tolist())
    [3, 1]
    """
    _check_unit("StringLength", unit)
    return make_op("StringLength", [_string_tensor(input, "input")], name=name or "StringLength",
                   unit=unit)


# -- StringStrip, StringLower, StringUpper -------------------------------------------------------
def _elementwise(fn):
    def kernel(ctx, strings, **attrs):
        return _strings(strings.shape, [fn(t, **attrs) for t in strings.ravel()])
    return kernel


def _change_case(method):
    def change(text, encoding):
        if encoding == "":        # ASCII letters only, as TF
            return getattr(text, method)()
        if encoding.lower() not in ("utf-8", "utf8"):
            raise errors.InvalidArgumentError(
                None, None, "only utf-8 or '' (no encoding) is supported, received %s" % encoding)
        return getattr(text.decode("utf-8", "surrogateescape"), method)().encode(
            "utf-8", "surrogateescape")
    return change


register_op("StringStrip", dtype=lambda op: _dtypes.string, shape=same_shape,
            kernel=_elementwise(bytes.strip), grad=None)
register_op("StringLower", dtype=lambda op: _dtypes.string, shape=same_shape,
            kernel=_elementwise(_change_case("lower")), grad=None)
register_op("StringUpper", dtype=lambda op: _dtypes.string, shape=same_shape,
            kernel=_elementwise(_change_case("upper")), grad=None)


def string_strip(input, name=None):  # noqa: A002 - TF1's argument name
    r"""Each string without its leading and trailing whitespace (`` \t\n\v\f\r``).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.string_strip([" a b \t\n"])).tolist())
    [b'a b']
    """
    return make_op("StringStrip", [_string_tensor(input, "input")], name=name or "StringStrip")


def string_lower(input, encoding="", name=None):  # noqa: A002 - TF1's argument name
    """Each string in lower case: ASCII letters only, or with ``encoding="utf-8"`` every letter.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.strings.lower(["AbÉ"], encoding="utf-8"))[0].decode())
    abé
    """
    return make_op("StringLower", [_string_tensor(input, "input")], name=name or "StringLower",
                   encoding=str(encoding))


def string_upper(input, encoding="", name=None):  # noqa: A002 - TF1's argument name
    """Each string in upper case: ASCII letters only, or with ``encoding="utf-8"`` every letter.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.strings.upper(["ab"])).tolist())
    [b'AB']
    """
    return make_op("StringUpper", [_string_tensor(input, "input")], name=name or "StringUpper",
                   encoding=str(encoding))


# -- RegexFullMatch, RegexReplace (and their Static forms, for a pattern known when built) -------
# Patterns run on Python's ``re`` over the UTF-8 text (as RE2 does; bytes that are not UTF-8 are
# carried through as surrogates), with ASCII \d \w \s as RE2's. ``re`` accepts a superset of
# RE2's syntax (lookarounds, backreferences), which TF would refuse.
@functools.lru_cache(maxsize=256)
def _regex(pattern):
    try:
        return re.compile(pattern.decode("utf-8", "surrogateescape"), re.ASCII)
    except re.error as e:
        raise errors.InvalidArgumentError(
            None, None, "Invalid pattern: %s, error: %s" % (pattern.decode("utf-8", "replace"),
                                                           e)) from None


def _text(b):
    return b.decode("utf-8", "surrogateescape")


_REWRITE_TOKEN = re.compile(r"\\(.?)", re.DOTALL)


@functools.lru_cache(maxsize=256)
def _rewrite(rewrite, groups):
    """RE2's rewrite string as a function of a match: ``\\0``-``\\9`` insert a group,
    ``\\\\`` a backslash; any other escape is an error."""
    rewrite = _text(rewrite)
    parts, last = [], 0
    for m in _REWRITE_TOKEN.finditer(rewrite):
        parts.append(rewrite[last:m.start()])
        c = m.group(1)
        if c == "\\":
            parts.append("\\")
        elif c.isdigit() and int(c) <= groups:
            parts.append(int(c))
        else:
            raise errors.InvalidArgumentError(
                None, None, "Invalid rewrite pattern %r: use \\0-\\%d for groups of the "
                "pattern and \\\\ for a backslash" % (rewrite, groups))
        last = m.end()
    parts.append(rewrite[last:])
    return lambda match: "".join(match.group(p) or "" if isinstance(p, int) else p
                                 for p in parts)


def _full_match_kernel(ctx, strings, pattern):
    regex = _regex(pattern if isinstance(pattern, bytes) else pattern.item())
    return np.fromiter((regex.fullmatch(_text(t)) is not None for t in strings.ravel()),
                       dtype=bool, count=strings.size).reshape(strings.shape)


def _replace_kernel(ctx, strings, pattern, rewrite, replace_global):
    regex = _regex(pattern if isinstance(pattern, bytes) else pattern.item())
    replace = _rewrite(rewrite if isinstance(rewrite, bytes) else rewrite.item(), regex.groups)
    count = 0 if replace_global else 1
    return _strings(strings.shape, [regex.sub(replace, _text(t), count).encode(
        "utf-8", "surrogateescape") for t in strings.ravel()])


register_op("RegexFullMatch", dtype=lambda op: _dtypes.bool, shape=same_shape,
            kernel=_full_match_kernel, grad=None)
register_op("StaticRegexFullMatch", dtype=lambda op: _dtypes.bool, shape=same_shape,
            kernel=_full_match_kernel, grad=None)
register_op("RegexReplace", dtype=lambda op: _dtypes.string, shape=same_shape,
            kernel=_replace_kernel, grad=None)
register_op("StaticRegexReplace", dtype=lambda op: _dtypes.string, shape=same_shape,
            kernel=_replace_kernel, grad=None)


def _scalar_string(value, name):
    t = _string_tensor(value, name)
    if t.get_shape().ndims not in (None, 0):
        raise ValueError("%s must be a scalar string, got shape %s" % (name, t.get_shape()))
    return t


def _as_bytes(value):
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def regex_full_match(input, pattern, name=None):  # noqa: A002 - TF1's argument name
    """Whether each whole string matches the regular expression ``pattern`` (bool).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.strings.regex_full_match(["abc", "ab"], "a.c")).tolist())
    [True, False]
    """
    strings = _string_tensor(input, "input")
    if isinstance(pattern, str | bytes):
        return make_op("StaticRegexFullMatch", [strings], name=name or "StaticRegexFullMatch",
                       pattern=_as_bytes(pattern))
    return make_op("RegexFullMatch", [strings, _scalar_string(pattern, "pattern")],
                   name=name or "RegexFullMatch")


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    r"""Each string with the matches of ``pattern`` replaced by ``rewrite`` (all of them, or the
    first with ``replace_global=False``); in ``rewrite``, ``\1`` inserts group 1 (``\0``: the
    whole match), ``\\`` a backslash.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     out = tf.regex_replace(["ab12cd34"], r"([a-z]+)(\d+)", r"<\2\1>")
    ...     print(tf.Session().run(out).tolist())
    [b'<12ab><34cd>']
    """
    strings = _string_tensor(input, "input")
    if isinstance(pattern, str | bytes) and isinstance(rewrite, str | bytes):
        return make_op("StaticRegexReplace", [strings], name=name or "StaticRegexReplace",
                       pattern=_as_bytes(pattern), rewrite=_as_bytes(rewrite),
                       replace_global=bool(replace_global))
    return make_op("RegexReplace", [strings, _scalar_string(pattern, "pattern"),
                                    _scalar_string(rewrite, "rewrite")],
                   name=name or "RegexReplace", replace_global=bool(replace_global))


# -- StringFormat (tf.strings.format) ------------------------------------------------------------
def _format_kernel(ctx, *inputs, parts, summarize):
    out = [parts[0]]
    for value, text in zip(inputs, parts[1:]):
        out += [_summarize_v2(value, summarize), text]
    return np.array("".join(out).encode("utf-8"), dtype=object)


register_op("StringFormat", dtype=lambda op: _dtypes.string, shape=lambda op: TensorShape([]),
            kernel=_format_kernel, grad=None)


def string_format(template, inputs, placeholder="{}", summarize=3, name=None):
    """A scalar string: ``template`` with each ``placeholder`` replaced by one of ``inputs``
    (a tensor or a list of them) as ``tf.print`` shows it, ``summarize`` entries at each end of
    every dimension (-1: all).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     s = tf.strings.format("x={} y={}", [tf.constant([1, 2, 3, 4, 5, 6, 7]), 2.5])
    ...     print(tf.Session().run(s).decode())
    x=[1 2 3 ... 5 6 7] y=2.5
    """
    inputs = list(inputs) if isinstance(inputs, list | tuple) else [inputs]
    parts = template.split(placeholder)
    if len(parts) - 1 != len(inputs):
        raise ValueError("The template expects %d tensors, but the inputs only has %d. Please "
                         "ensure the number of placeholders in template matches inputs length."
                         % (len(parts) - 1, len(inputs)))
    tensors = [convert_to_tensor(t) for t in inputs]
    return make_op("StringFormat", tensors, name=name or "StringFormat", parts=tuple(parts),
                   summarize=int(summarize))


# -- ReduceJoin ----------------------------------------------------------------------------------
def _reduce_join_kernel(ctx, inputs, axes, keep_dims, separator):
    axes = list(range(inputs.ndim))[::-1] if axes is None else list(axes)
    kept = [a for a in range(inputs.ndim) if a not in axes]
    kept_shape = [inputs.shape[a] for a in kept]
    # One row per output string; TF1 joins with the first listed axis varying fastest.
    rows = inputs.transpose(kept + axes[::-1]).reshape(
        int(np.prod(kept_shape, dtype=np.int64)), int(np.prod([inputs.shape[a] for a in axes],
                                                              dtype=np.int64)))
    sep = separator.encode()
    joined = _strings(kept_shape, [sep.join(row) for row in rows.tolist()])
    if keep_dims:
        joined = joined.reshape([1 if a in axes else inputs.shape[a] for a in range(inputs.ndim)])
    return joined


def _reduce_join_shape(op):
    s = op.inputs[0].get_shape()
    axes = op._attrs["axes"]
    if s.ndims is None:
        return unknown_shape()
    axes = range(s.ndims) if axes is None else {a % s.ndims for a in axes}
    dims = s.as_list()
    if op._attrs["keep_dims"]:
        return TensorShape([1 if a in axes else d for a, d in enumerate(dims)])
    return TensorShape([d for a, d in enumerate(dims) if a not in axes])


register_op("ReduceJoin", dtype=lambda op: _dtypes.string, shape=_reduce_join_shape,
            kernel=_reduce_join_kernel, grad=None)


def reduce_join(inputs, axis=None, keep_dims=None, separator="", name=None,
                reduction_indices=None, keepdims=None):
    """Join the strings of ``inputs`` along ``axis`` (all axes when None) with ``separator``;
    ``keepdims`` (or its older name ``keep_dims``) keeps the reduced axes with length 1.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.reduce_join([["a", "b"], ["c", "d"]], axis=1)).tolist())
    [b'ab', b'cd']
    """
    if axis is not None and reduction_indices is not None:
        raise ValueError("reduce_join: pass axis or reduction_indices, not both")
    if keep_dims is not None and keepdims is not None:
        raise ValueError("reduce_join: pass keepdims or keep_dims (its deprecated name), not both")
    axis = axis if axis is not None else reduction_indices
    with get_default_graph().name_scope("ReduceJoin"):   # TF's ReduceJoin/ReduceJoin, ReduceJoin_1/x
        return _reduce_join(inputs, axis, bool(keepdims or keep_dims), separator, name)


def _reduce_join(inputs, axis, keepdims, separator, name):
    inputs = _string_tensor(inputs, "inputs", "Const")
    axis = const_axis(axis, "reduce_join axis")
    ndims = inputs.get_shape().ndims
    if axis is not None:
        listed = [int(a) for a in (axis if isinstance(axis, list | tuple) else [axis])]
        if ndims is None:
            raise ValueError("reduce_join over an axis needs inputs of known rank (%s)"
                             % inputs.name)
        normalize_axis(listed, ndims, "reduce_join")   # validates the range
        if len({a % ndims for a in listed}) != len(listed):
            raise ValueError("reduce_join: duplicate axis in %s" % listed)
        axis = tuple(a % ndims for a in listed)
    return make_op("ReduceJoin", [inputs], name=name or "ReduceJoin", axes=axis,
                   keep_dims=keepdims, separator=str(separator))


# -- StringJoin ----------------------------------------------------------------------------------
def _string_join_kernel(ctx, *inputs, separator):
    shape = next((x.shape for x in inputs if x.ndim), ())
    for i, x in enumerate(inputs):
        if x.ndim and x.shape != shape:
            raise errors.InvalidArgumentError(
                None, None, "Input shapes do not match: %s vs. %s (input %d of StringJoin)"
                % (list(shape), list(x.shape), i))
    columns = [np.broadcast_to(x, shape).ravel() for x in inputs]
    sep = separator.encode()
    return _strings(shape, [sep.join(parts) for parts in zip(*columns)])


def _string_join_shape(op):
    out = TensorShape([])
    for t in op.inputs:
        s = t.get_shape()
        if s.ndims == 0:
            continue
        if out.ndims == 0:
            out = s
        elif not out.is_compatible_with(s):
            raise ValueError("string_join: inputs must be scalars or have the same shape; got %s "
                             "and %s (op %s)" % (out, s, op.name))
        else:
            out = out.merge_with(s)
    return out


register_op("StringJoin", dtype=lambda op: _dtypes.string, shape=_string_join_shape,
            kernel=_string_join_kernel, grad=None)


def string_join(inputs, separator="", name=None):
    """Join the strings of a list of tensors elementwise (scalars broadcast).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.string_join(["a", ["b", "c"]], separator="+")).tolist())
    [b'a+b', b'a+c']
    """
    tensors = [_string_tensor(x, "inputs_%d" % i) for i, x in enumerate(inputs)]
    if not tensors:
        raise ValueError("string_join needs at least one input")
    return make_op("StringJoin", tensors, name=name or "StringJoin", separator=str(separator))


# -- DecodeCSV -----------------------------------------------------------------------------------
def _csv_fields(record, delim, use_quote, record_index):
    """Split one CSV record (bytes) into its fields, RFC 4180 quoting as TF's DecodeCSV."""
    if not record:
        return []
    fields, i, n = [], 0, len(record)
    while True:
        if use_quote and record[i:i + 1] == b'"':
            field, i = bytearray(), i + 1
            while True:
                if i >= n:
                    raise errors.InvalidArgumentError(
                        None, None, "Quoted field has to end with quote followed by delim or end")
                c = record[i:i + 1]
                if c == b'"':
                    if record[i + 1:i + 2] == b'"':
                        field += b'"'
                        i += 2
                        continue
                    i += 1
                    if i < n and record[i:i + 1] != delim:
                        raise errors.InvalidArgumentError(
                            None, None, "Quote inside a string has to be escaped by another quote")
                    break
                field += c
                i += 1
            fields.append(bytes(field))
        else:
            end = record.find(delim, i)
            end = n if end < 0 else end
            field = record[i:end]
            if use_quote and (b'"' in field or b"\r" in field or b"\n" in field):
                raise errors.InvalidArgumentError(
                    None, None, "Unquoted fields cannot have quotes/CRLFs inside (record %d)"
                    % record_index)
            fields.append(field)
            i = end
        if i >= n:
            return fields
        i += 1                      # the delimiter
        if i == n:                  # a trailing delimiter: one more, empty field
            fields.append(b"")
            return fields


_CSV_TYPE_NAMES = {np.dtype(np.int32): "int32", np.dtype(np.int64): "int64",
                   np.dtype(np.float32): "float", np.dtype(np.float64): "double"}


def _decode_csv_kernel(ctx, records, *defaults, field_delim, use_quote_delim, na_value,
                       select_cols):
    delim, na = field_delim.encode(), na_value.encode()
    if len(delim) != 1:
        raise errors.InvalidArgumentError(None, None, "field_delim should be only 1 char")
    cols = list(range(len(defaults))) if select_cols is None else list(select_cols)
    outputs = [np.empty(records.shape, dtype=d.dtype) for d in defaults]
    flats = [o.reshape(-1) for o in outputs]
    for r, record in enumerate(records.ravel()):
        fields = _csv_fields(record, delim, use_quote_delim, r)
        if (select_cols is None and len(fields) != len(defaults)) or (
                select_cols is not None and len(fields) <= cols[-1]):
            raise errors.InvalidArgumentError(
                None, None, "Expect %d fields but have %d in record %d"
                % (len(defaults) if select_cols is None else cols[-1] + 1, len(fields), r))
        for f, (col, default) in enumerate(zip(cols, defaults)):
            text = fields[col]
            if not text or text == na:
                if default.size == 0:
                    raise errors.InvalidArgumentError(
                        None, None, "Field %d is required but missing in record %d!" % (f, r))
                flats[f][r] = default.reshape(-1)[0]
            elif default.dtype == object:
                flats[f][r] = text
            else:
                value = _parse_number(text, default.dtype)
                if value is None:
                    raise errors.InvalidArgumentError(
                        None, None, "Field %d in record %d is not a valid %s: %s"
                        % (f, r, _CSV_TYPE_NAMES[default.dtype], text.decode("utf-8", "replace")))
                flats[f][r] = value
    return outputs[0] if len(outputs) == 1 else tuple(outputs)   # one output: the array itself


register_op("DecodeCSV", dtype=lambda op: [t.dtype.base_dtype for t in op.inputs[1:]],
            shape=lambda op: [op.inputs[0].get_shape()] * (len(op.inputs) - 1),
            kernel=_decode_csv_kernel, grad=None)

_CSV_TYPES = (_dtypes.float32, _dtypes.float64, _dtypes.int32, _dtypes.int64, _dtypes.string)


def csv_arguments(record_defaults, select_cols, what):
    """``record_defaults`` as tensors (a DType: an empty one, a required column) and
    ``select_cols`` as a tuple (or None), checked as TF's decode_csv and CsvDataset check them."""
    if select_cols is not None:
        select_cols = tuple(int(c) for c in select_cols)
        if any(b <= a for a, b in zip(select_cols, select_cols[1:])):
            raise ValueError("select_cols is not strictly increasing.")
        if select_cols and select_cols[0] < 0:
            raise ValueError("select_cols contains negative values.")
        if len(select_cols) != len(record_defaults):
            raise ValueError("Length of select_cols and record_defaults do not match.")
    defaults = []
    for i, d in enumerate(record_defaults):
        t = convert_to_tensor([], dtype=d, name="record_defaults_%d" % i) if isinstance(
            d, _dtypes.DType) else convert_to_tensor(d, name="record_defaults_%d" % i)
        if t.dtype.base_dtype not in _CSV_TYPES:
            raise TypeError("%s: record_defaults[%d] has type %s; supported: %s"
                            % (what, i, t.dtype.name, [d.name for d in _CSV_TYPES]))
        n = t.get_shape().num_elements()
        if n is not None and n > 1:
            raise ValueError("%s: record_defaults[%d] must have at most one element (a "
                             "default value, or none for a required column), got shape %s"
                             % (what, i, t.get_shape()))
        defaults.append(t)
    return defaults, select_cols


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, name=None,
               na_value="", select_cols=None):
    """Parse CSV ``records`` into one tensor per column, shaped as ``records``.

    Each of ``record_defaults`` gives its column's type and the value of an empty (or
    ``na_value``) field; an empty default makes the column required.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     a, b = tf.decode_csv(["1,2.5", "3,"], [[0], [-1.0]])
    ...     print(tf.Session().run([a, b]))
    [array([1, 3], dtype=int32), array([ 2.5, -1. ], dtype=float32)]
    """
    defaults, select_cols = csv_arguments(record_defaults, select_cols, "decode_csv")
    records = _string_tensor(records, "records")
    return make_op("DecodeCSV", [records] + defaults, name=name or "DecodeCSV",
                   num_outputs=len(defaults), field_delim=str(field_delim),
                   use_quote_delim=bool(use_quote_delim), na_value=str(na_value),
                   select_cols=select_cols)


# -- StringToHashBucketFast / StringToHashBucketStrong -------------------------------------------
def _hash_buckets(strings, num_buckets, hash_fn):
    out = np.fromiter((hash_fn(s) % num_buckets for s in strings.ravel()), dtype=np.int64,
                      count=strings.size)
    return out.reshape(strings.shape)


def _hash_bucket_fast_kernel(ctx, strings, num_buckets):
    return _hash_buckets(strings, num_buckets, fingerprint64)


def _hash_bucket_strong_kernel(ctx, strings, num_buckets, key):
    return _hash_buckets(strings, num_buckets, lambda s: siphash(key, s))


register_op("StringToHashBucketFast", dtype=lambda op: _dtypes.int64, shape=same_shape,
            kernel=_hash_bucket_fast_kernel, grad=None)
register_op("StringToHashBucketStrong", dtype=lambda op: _dtypes.int64, shape=same_shape,
            kernel=_hash_bucket_strong_kernel, grad=None)


def _hash_bucket_op(op_type, what, strings, num_buckets, name, **attrs):
    if int(num_buckets) < 1:
        raise ValueError("%s: num_buckets must be >= 1, got %s" % (what, num_buckets))
    return make_op(op_type, [_string_tensor(strings, "input")], name=name or op_type,
                   num_buckets=int(num_buckets), **attrs)


def string_to_hash_bucket_fast(input, num_buckets, name=None):  # noqa: A002 - TF1's name
    """Each string's bucket in ``[0, num_buckets)``: FarmHash ``Fingerprint64(s) % num_buckets``,
    bit for bit TF's (the buckets of hashed feature columns).

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.string_to_hash_bucket_fast(["a", "b", "a"], 10)).tolist())
    [9, 2, 9]
    """
    return _hash_bucket_op("StringToHashBucketFast", "string_to_hash_bucket_fast", input,
                           num_buckets, name)


def string_to_hash_bucket_strong(input, num_buckets, key, name=None):  # noqa: A002 - TF1's name
    """Each string's bucket in ``[0, num_buckets)`` by SipHash-2-4 under the secret ``key`` (two
    ints), bit for bit TF's: buckets an adversary cannot aim at without the key.

    >>> import zps as tf
    >>> with tf.Graph().as_default():
    ...     print(tf.Session().run(tf.string_to_hash_bucket_strong(["a", "b"], 10, [1, 2])).tolist())
    [6, 4]
    """
    key = tuple(int(k) & 0xFFFFFFFFFFFFFFFF for k in key)
    if len(key) != 2:
        raise ValueError("string_to_hash_bucket_strong: key must be two ints, got %d" % len(key))
    return _hash_bucket_op("StringToHashBucketStrong", "string_to_hash_bucket_strong", input,
                           num_buckets, name, key=key)


__all__ = ["as_string", "decode_csv", "reduce_join", "regex_replace", "string_join",
           "string_split", "string_strip", "string_to_hash_bucket_fast",
           "string_to_hash_bucket_strong", "string_to_number", "substr"]
