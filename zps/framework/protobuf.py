"""Protocol buffers without protobuf: the wire format, and one ``Message`` base on which zps
declares the TensorFlow protos it reads and writes (``tf.Summary`` and ``tf.Event`` in
zps/ops/summary_proto.py, ``tf.train.Example`` in zps/framework/example_pb.py); tf_bundle reads
checkpoint protos with the wire helpers alone.

Wire format: :func:`encode_varint` / :func:`decode_varint` (base-128, up to 64 bits; negative
numbers as ten bytes of two's complement, as protobuf writes int32 and int64), :func:`skip_field`
(the end of a field of any wire type, groups included) and :func:`fields` (a message's
``(number, wire type, value)``). Malformed bytes raise :class:`DecodeError`, a ValueError.

Messages: a class lists its ``Field``s in ``FIELDS`` and names itself in ``FULL_NAME``; instances
behave as protobuf's Python messages (proto3): keyword construction (dicts for sub-messages),
attribute access with proto3 defaults, float fields rounded to float32, repeated fields
(``append``/``extend``/``add``), maps of strings to messages (``m[key]`` adds an entry, written
in the order of protobuf's deterministic serialization), oneofs, sub-messages that join their
parent when first modified, ``HasField``/``WhichOneof``/``ClearField``/``Clear``/``ListFields``/
``CopyFrom``/``MergeFrom``/``ByteSize``, ``SerializeToString``/``FromString``/``ParseFromString``/
``MergeFromString`` with the bytes protobuf writes (fields in number order, proto3 defaults
omitted, repeated numbers packed; unpacked ones read too), fields of unknown numbers or wire
types kept and written back as they were, ``==``, pickling, ``copy``, and the text format as
``str``/``repr``.

>>> class Pair(Message):
...     FULL_NAME = "example.Pair"
...     FIELDS = (Field("key", 1, "string"), Field("values", 2, "double", repeated=True))
>>> p = Pair(key="a", values=[1.0, 2.5])
>>> p.SerializeToString().hex()
'0a01611210000000000000f03f0000000000000440'
>>> Pair.FromString(p.SerializeToString()) == p
True
>>> print(p, end="")
key: "a"
values: 1
values: 2.5
>>> encode_varint(-1).hex(), decode_varint(b"\\xac\\x02")
('ffffffffffffffffff01', (300, 2))
"""

import math
import operator
import struct
from collections.abc import Mapping, MutableMapping, MutableSequence

import numpy as np

__all__ = ["DecodeError", "Field", "Message", "MessageMap", "RepeatedCompositeContainer",
           "RepeatedScalarContainer", "decode_varint", "encode_varint", "fields", "signed64",
           "skip_field"]

_MASK64 = (1 << 64) - 1
_MAX_GROUP_DEPTH = 100   # protobuf's recursion limit


class DecodeError(ValueError):
    """Bytes that are not a serialized message of the expected type (protobuf's DecodeError)."""


# -- wire format -----------------------------------------------------------------------------------
_ONE_BYTE = [bytes([i]) for i in range(0x80)]


def encode_varint(n):
    """``n`` (-2**63 <= n < 2**64) as a base-128 varint; a negative number as its 64-bit two's
    complement (ten bytes), as protobuf writes negative int32, int64 and enum values."""
    if 0 <= n < 0x80:
        return _ONE_BYTE[n]
    n &= _MASK64
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def decode_varint(buf, pos=0, end=None):
    """``(value, position after it)`` of the varint at ``pos`` of ``buf`` (bytes or memoryview,
    read up to ``end``): an unsigned 64-bit number (bits past the 64th are dropped, as
    protobuf does). DecodeError when it is cut short or longer than ten bytes."""
    if end is None:
        end = len(buf)
    result = shift = 0
    while True:
        if pos >= end:
            raise DecodeError("truncated varint at byte %d" % pos)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & _MASK64, pos
        shift += 7
        if shift >= 70:
            raise DecodeError("varint longer than 10 bytes at byte %d" % pos)


def signed64(value):
    """An unsigned 64-bit varint's value as the int64 it encodes."""
    return value - (1 << 64) if value >> 63 else value


def _signed32(value):
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >> 31 else value


def _read_length(buf, pos, end):
    """The bounds ``(start, stop)`` of the length-delimited payload whose length is at ``pos``."""
    if pos < end and buf[pos] < 0x80:   # most lengths take one byte: no call
        n = buf[pos]
        pos += 1
    else:
        n, pos = decode_varint(buf, pos, end)
    if n > end - pos:
        raise DecodeError("a length-delimited field of %d bytes runs past its message (%d bytes "
                          "left) at byte %d" % (n, end - pos, pos))
    return pos, pos + n


def skip_field(buf, pos, end, number, wire, depth=0):
    """The position after the value of field ``number`` of wire type ``wire`` (0 varint, 1
    fixed64, 2 length-delimited, 3 group, 5 fixed32) starting at ``pos``."""
    if wire == 0:
        return decode_varint(buf, pos, end)[1]
    if wire == 1 or wire == 5:
        pos += 8 if wire == 1 else 4
        if pos > end:
            raise DecodeError("truncated fixed%d field %d" % (64 if wire == 1 else 32, number))
        return pos
    if wire == 2:
        return _read_length(buf, pos, end)[1]
    if wire == 3:   # a group: fields up to its end-group tag
        if depth >= _MAX_GROUP_DEPTH:
            raise DecodeError("groups nested more than %d deep" % _MAX_GROUP_DEPTH)
        while True:
            tag, pos = decode_varint(buf, pos, end)
            if tag & 7 == 4:
                if tag >> 3 != number:
                    raise DecodeError("group %d ended by the end-group tag of field %d"
                                      % (number, tag >> 3))
                return pos
            pos = skip_field(buf, pos, end, tag >> 3, tag & 7, depth + 1)
    if wire == 4:
        raise DecodeError("end-group tag of field %d without its group" % number)
    raise DecodeError("invalid wire type %d (field %d)" % (wire, number))


def fields(buf):
    """The fields of a serialized message, in order: ``(number, wire type, value)`` with ints for
    varints and fixed-size numbers (unsigned), bytes for length-delimited fields and groups (a
    group's bytes up to its end tag)."""
    pos, end, out = 0, len(buf), []
    while pos < end:
        tag, pos = decode_varint(buf, pos, end)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise DecodeError("field number 0 at byte %d" % pos)
        start = pos
        pos = skip_field(buf, pos, end, number, wire)
        if wire == 0:
            value = decode_varint(buf, start, end)[0]
        elif wire == 1:
            value = struct.unpack_from("<Q", buf, start)[0]
        elif wire == 5:
            value = struct.unpack_from("<I", buf, start)[0]
        elif wire == 2:
            value = bytes(buf[_read_length(buf, start, end)[0]:pos])
        else:
            value = bytes(buf[start:pos - len(encode_varint(number << 3 | 4))])
        out.append((number, wire, value))
    return out


# -- scalar kinds ----------------------------------------------------------------------------------
_INT_RANGES = {"int32": (-1 << 31, 1 << 31), "enum": (-1 << 31, 1 << 31),
               "int64": (-1 << 63, 1 << 63), "uint32": (0, 1 << 32), "uint64": (0, 1 << 64)}
_REALS = {"float": (5, "f"), "double": (1, "d")}   # kind -> (wire type, struct format)
_SCALARS = {"string": "", "bytes": b"", "bool": False, "float": 0.0, "double": 0.0,
            **{kind: 0 for kind in _INT_RANGES}}   # kind -> proto3 default


def _type_name(v):
    return type(v).__name__


def _to_float32s(values):
    """Python floats rounded to float32, as a float field holds them (too large: +-inf)."""
    fmt = "<%df" % len(values)
    try:
        return list(struct.unpack(fmt, struct.pack(fmt, *values)))
    except OverflowError:
        with np.errstate(over="ignore"):
            return np.asarray(values, dtype=np.float64).astype(np.float32).tolist()


class Field:
    """One field of a message. ``kind`` is a scalar type ("double", "float", "int32", "int64",
    "uint32", "uint64", "bool", "enum", "string", "bytes") or a Message class; ``repeated`` makes
    it a list, ``map_key="string"`` a ``map<string, kind>`` (kind a Message class); ``oneof``
    names its oneof; ``enum`` maps an enum's numbers to names (for the text format)."""

    __slots__ = ("name", "number", "kind", "repeated", "map_key", "oneof", "enum", "is_message",
                 "is_container", "default", "full_name", "siblings", "tag")

    def __init__(self, name, number, kind, repeated=False, oneof=None, enum=None, map_key=None):
        self.is_message = isinstance(kind, type) and issubclass(kind, Message)
        if not self.is_message and kind not in _SCALARS:
            raise TypeError("field %s: kind %r is neither a Message class nor one of %s"
                            % (name, kind, sorted(_SCALARS)))
        if map_key is not None and (map_key != "string" or not self.is_message or repeated
                                    or oneof):
            raise TypeError("field %s: only maps of strings to messages are supported "
                            "(map_key='string' and a Message kind, not repeated or in a oneof)"
                            % name)
        if repeated and oneof:
            raise TypeError("field %s: a repeated field cannot be in a oneof" % name)
        self.name, self.number, self.kind = name, number, kind
        self.repeated, self.map_key, self.oneof, self.enum = repeated, map_key, oneof, enum or {}
        self.is_container = repeated or map_key is not None
        self.default = None if self.is_message or repeated else _SCALARS[kind]
        self.full_name, self.siblings = name, ()   # set by the message class
        if kind in _REALS:
            wire = _REALS[kind][0]
        else:
            wire = 2 if self.is_message or kind in ("string", "bytes") else 0
        self.tag = encode_varint(number << 3 | (2 if repeated and wire != 2 else wire))

    # -- checks: a Python value as the field stores it, or protobuf's TypeError/ValueError
    def check(self, value):
        """One value for this (scalar) field as stored: TypeError/ValueError as protobuf's."""
        kind = self.kind
        if kind == "string":
            if isinstance(value, bytes):
                try:
                    return value.decode("utf-8")
                except UnicodeDecodeError:
                    raise ValueError("%r is not valid UTF-8 (field %s holds text)"
                                     % (value, self.full_name)) from None
            if not isinstance(value, str):
                raise TypeError("%r has type %s, but expected one of: bytes, str (field %s)"
                                % (value, _type_name(value), self.full_name))
            return value
        if kind == "bytes":
            if not isinstance(value, (bytes, bytearray)):
                raise TypeError("%r has type %s, but expected bytes: field %s holds bytes%s" % (
                    value, _type_name(value), self.full_name,
                    " (encode text first, e.g. s.encode('utf-8'))" if isinstance(value, str)
                    else ""))
            return bytes(value)
        if kind in _REALS:
            return self._real(value) if kind == "double" else _to_float32s([self._real(value)])[0]
        if kind == "bool":
            return bool(value if isinstance(value, np.bool_) else self._index(value, "a bool"))
        if isinstance(value, (bool, np.bool_)):
            raise TypeError("Field %s: Expected an int, got a boolean." % self.full_name)
        value = self._index(value, "integers")
        low, high = _INT_RANGES[kind]
        if not low <= value < high:
            raise ValueError("Value out of range: %d (field %s holds %s values)"
                             % (value, self.full_name, kind))
        return value

    def _index(self, value, what):
        try:
            return operator.index(value)
        except TypeError:
            raise TypeError("%r has type %s, but expected one of: int (field %s holds %s)"
                            % (value, _type_name(value), self.full_name, what)) from None

    def _real(self, value):
        t = type(value)
        if isinstance(value, (str, bytes, np.ndarray)) or not (
                hasattr(t, "__float__") or hasattr(t, "__index__")):
            raise TypeError("%r has type %s, but expected one of: int, float (field %s holds "
                            "real numbers)" % (value, _type_name(value), self.full_name))
        return float(value)

    def check_all(self, values):
        """``values`` (an iterable) as the list a repeated scalar field stores."""
        kind = self.kind
        if isinstance(values, np.ndarray) and values.ndim == 1 and kind != "bool":
            if kind in _REALS and values.dtype.kind in "fiu":
                if kind == "double":
                    return values.astype(np.float64).tolist()
                with np.errstate(over="ignore"):
                    return values.astype(np.float64).astype(np.float32).tolist()
            if kind in _INT_RANGES and values.dtype.kind in "iu":
                low, high = _INT_RANGES[kind]
                if not values.size or low <= int(values.min()) and int(values.max()) < high:
                    return values.tolist()
        try:
            items = list(values)
        except TypeError:
            raise TypeError("a repeated field takes an iterable of values, got %r (%s) (field %s)"
                            % (values, _type_name(values), self.full_name)) from None
        if kind == "float":
            return _to_float32s([self._real(v) for v in items])
        return [self.check(v) for v in items]


# -- containers ------------------------------------------------------------------------------------
class _Container:
    """A field's container inside a message (``_owner``): changing it changes the message."""

    __slots__ = ("_field", "_items", "_owner")

    def __init__(self, field, owner):
        self._field, self._items, self._owner = field, [], owner

    def __getitem__(self, index):
        return self._items[index]

    def _changed(self):
        owner = self._owner
        if owner is not None:
            owner._modified()

    def __len__(self):
        return len(self._items)

    def __repr__(self):
        return repr(self._items)


class RepeatedScalarContainer(_Container, MutableSequence):
    """A repeated scalar field: a list of checked values (``append``, ``extend``, slices ...)."""

    __slots__ = ()

    def __setitem__(self, index, value):
        if isinstance(index, slice):
            self._items[index] = self._field.check_all(value)
        else:
            self._items[index] = self._field.check_all([value])[0]
        self._changed()

    def __delitem__(self, index):
        del self._items[index]
        self._changed()

    def insert(self, index, value):
        self._items.insert(index, self._field.check_all([value])[0])
        self._changed()

    def append(self, value):
        self._items.append(self._field.check_all([value])[0])
        self._changed()

    def extend(self, values):
        self._items.extend(self._field.check_all(values))
        self._changed()

    def sort(self, key=None, reverse=False):
        self._items.sort(key=key, reverse=reverse)
        self._changed()

    def MergeFrom(self, other):  # noqa: N802 - protobuf's name
        if isinstance(other, RepeatedScalarContainer) and other._field.kind == self._field.kind:
            self._items.extend(other._items)   # checked already
            self._changed()
        else:
            self.extend(other)

    def __eq__(self, other):
        if isinstance(other, RepeatedScalarContainer):
            return self._items == other._items
        return self._items == other if isinstance(other, list) else NotImplemented

    __hash__ = None


def _as_message(cls, value):
    """``value`` (a ``cls`` or a dict of its fields) as a ``cls``."""
    if isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        return cls(**value)
    raise TypeError("Parameter to initialize message field must be dict or instance of same "
                    "class: expected %s got %s." % (cls.__name__, _type_name(value)))


class RepeatedCompositeContainer(_Container, MutableSequence):
    """A repeated message field: ``add(**fields)``, ``append(message or dict)`` (a copy),
    ``extend``; items are changed in place, never assigned."""

    __slots__ = ()

    def __setitem__(self, index, value):
        raise TypeError("a repeated message field does not support item assignment: change "
                        "field[i] in place (e.g. field[i].CopyFrom(m)), or use add/append")

    def __delitem__(self, index):
        del self._items[index]
        self._changed()

    def _copy_of(self, value):
        cls = self._field.kind
        if isinstance(value, Mapping):
            return cls(**value)
        if not isinstance(value, cls):
            raise TypeError("field %s takes %s messages, got %s"
                            % (self._field.full_name, cls.__name__, _type_name(value)))
        copy = cls._blank()
        copy.MergeFrom(value)
        return copy

    def add(self, **fields):
        """Append a new message built from ``fields``; returns it."""
        message = self._field.kind(**fields)
        self._items.append(message)
        self._changed()
        return message

    def append(self, value):
        """Append a copy of ``value`` (a message of the field's type, or a dict of its fields)."""
        self._items.append(self._copy_of(value))
        self._changed()

    def insert(self, index, value):
        self._items.insert(index, self._copy_of(value))
        self._changed()

    def extend(self, values):
        if isinstance(values, (str, bytes, Mapping, Message)):
            raise TypeError("field %s takes an iterable of messages, got %s"
                            % (self._field.full_name, _type_name(values)))
        self._items.extend([self._copy_of(v) for v in values])
        self._changed()

    def reverse(self):
        self._items.reverse()
        self._changed()

    def MergeFrom(self, other):  # noqa: N802 - protobuf's name
        self.extend(other)

    def __eq__(self, other):
        if isinstance(other, RepeatedCompositeContainer):
            return self._items == other._items
        return self._items == other if isinstance(other, list) else NotImplemented

    __hash__ = None


def _map_key(key):
    if isinstance(key, bytes):
        try:
            return key.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("map key %r is not valid UTF-8" % (key,)) from None
    if not isinstance(key, str):
        raise TypeError("map keys are strings, got %r (%s)" % (key, _type_name(key)))
    return key


def _key_order(keys):
    """Map keys in the order protobuf's deterministic serialization writes them: by their UTF-8
    bytes, except that a key comes after the longer keys it is a prefix of (upb's order, which
    ``SerializeToString(deterministic=True)`` gives in TensorFlow's Python)."""
    return sorted(keys, key=lambda k: (*k.encode("utf-8"), 256))


class MessageMap(_Container, MutableMapping):
    """A ``map<string, Message>`` field: reading a missing key adds an empty entry (as
    protobuf's maps do); ``get`` and ``in`` do not. Entries are changed in place."""

    __slots__ = ()

    def __init__(self, field, owner):
        self._field, self._items, self._owner = field, {}, owner

    def __getitem__(self, key):
        key = _map_key(key)
        message = self._items.get(key)
        if message is None:
            message = self._items[key] = self._field.kind._blank()
            self._changed()
        return message

    def get_or_create(self, key):
        return self[key]

    def get(self, key, default=None):
        return self._items.get(_map_key(key), default)

    def __contains__(self, key):
        return _map_key(key) in self._items

    def __setitem__(self, key, value):
        raise ValueError("Message objects may not be assigned: set the fields of my_map[%r] "
                         "instead (e.g. my_map[key].CopyFrom(value))" % (key,))

    def __delitem__(self, key):
        if self._items.pop(_map_key(key), None) is None:
            raise KeyError(key)
        self._changed()

    def __iter__(self):
        return iter(self._items)

    def MergeFrom(self, other):  # noqa: N802 - protobuf's name
        """Copy ``other``'s entries in, replacing entries of the same key (protobuf's rule)."""
        cls = self._field.kind
        for key, value in other.items():
            message = cls._blank()
            message.MergeFrom(_as_message(cls, value))
            self._items[_map_key(key)] = message
        self._changed()


# -- decoding: one function per kind of field, (message, field, buf, pos, end) -> position ---------
def _store(message, field, value):
    """Set scalar ``field`` (a checked value) as protobuf stores it: a proto3 default is not
    kept (but -0.0 is: it is written), a oneof member is and clears the others."""
    values = message._values
    if field.oneof is not None:
        message._drop_all(field.siblings)
        values[field.name] = value
    elif value == field.default and not (field.kind in _REALS and math.copysign(1.0, value) < 0):
        values.pop(field.name, None)
    else:
        values[field.name] = value


def _container(message, field):
    v = message._values.get(field.name)
    return v if v is not None else message._create(field)


def _dec_message(message, field, buf, pos, end):
    lo, hi = _read_length(buf, pos, end)
    child = message._values.get(field.name)
    if child is None:
        child = message._values[field.name] = field.kind._blank()
    elif child._hook is not None:
        _set_hook(child, None)
    child._merge(buf, lo, hi)
    if field.siblings:
        message._drop_all(field.siblings)
    return hi


def _dec_messages(message, field, buf, pos, end):
    lo, hi = _read_length(buf, pos, end)
    child = field.kind._blank()
    child._merge(buf, lo, hi)
    _container(message, field)._items.append(child)
    return hi


def _dec_map(message, field, buf, pos, end):
    lo, end = _read_length(buf, pos, end)
    pos, key, value = lo, b"", field.kind._blank()
    while pos < end:
        tag = buf[pos]
        if tag < 0x80:
            pos += 1
        else:
            tag, pos = decode_varint(buf, pos, end)
        if tag == 0x0A or tag == 0x12:
            lo, hi = _read_length(buf, pos, end)
            if tag == 0x0A:
                key = buf[lo:hi]
            else:
                value._merge(buf, lo, hi)
            pos = hi
        elif tag >> 3 == 0:
            raise DecodeError("field number 0 in an entry of map %s" % field.full_name)
        else:
            pos = skip_field(buf, pos, end, tag >> 3, tag & 7)
    try:
        key = key.decode("utf-8")
    except UnicodeDecodeError:
        raise DecodeError("a key of map %s is not valid UTF-8: %r" % (field.full_name, key)) \
            from None
    _container(message, field)._items[key] = value
    return end


def _dec_text(message, field, buf, pos, end):
    lo, hi = _read_length(buf, pos, end)
    value = buf[lo:hi]
    if field.kind == "string":
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            raise DecodeError("field %s is not UTF-8" % field.full_name) from None
    if field.repeated:
        _container(message, field)._items.append(value)
    else:
        _store(message, field, value)
    return hi


def _varint_value(kind, v):
    if kind == "int64":
        return v - (1 << 64) if v >> 63 else v
    if kind == "int32" or kind == "enum":
        return _signed32(v)
    if kind == "uint32":
        return v & 0xFFFFFFFF
    return v != 0 if kind == "bool" else v


def _dec_varint(message, field, buf, pos, end):
    v, pos = decode_varint(buf, pos, end)
    v = _varint_value(field.kind, v)
    if field.repeated:
        _container(message, field)._items.append(v)
    else:
        _store(message, field, v)
    return pos


def _dec_packed_varints(message, field, buf, pos, end):
    lo, hi = _read_length(buf, pos, end)
    kind, items = field.kind, _container(message, field)._items
    while lo < hi:
        v, lo = decode_varint(buf, lo, hi)
        if kind == "int64":
            items.append(v - (1 << 64) if v >> 63 else v)
        else:
            items.append(_varint_value(kind, v))
    return hi


def _dec_fixed(message, field, buf, pos, end):
    size = 4 if field.kind == "float" else 8
    if pos + size > end:
        raise DecodeError("truncated %s field %s" % (field.kind, field.full_name))
    v = struct.unpack_from("<" + _REALS[field.kind][1], buf, pos)[0]
    if field.repeated:
        _container(message, field)._items.append(v)
    else:
        _store(message, field, v)
    return pos + size


def _dec_packed_fixed(message, field, buf, pos, end):
    lo, hi = _read_length(buf, pos, end)
    size = 4 if field.kind == "float" else 8
    if (hi - lo) % size:
        raise DecodeError("packed %ss of %d bytes (not a multiple of %d) in field %s"
                          % (field.kind, hi - lo, size, field.full_name))
    _container(message, field)._items.extend(
        struct.unpack_from("<%d%s" % ((hi - lo) // size, _REALS[field.kind][1]), buf, lo))
    return hi


def _decoders(field):
    """``{tag: decoder}`` of the encodings ``field`` is read from (others are unknown fields)."""
    number, kind = field.number, field.kind
    if field.map_key is not None:
        return {number << 3 | 2: _dec_map}
    if field.is_message:
        return {number << 3 | 2: _dec_messages if field.repeated else _dec_message}
    if kind in ("string", "bytes"):
        return {number << 3 | 2: _dec_text}
    wire, single, packed = ((_REALS[kind][0], _dec_fixed, _dec_packed_fixed) if kind in _REALS
                            else (0, _dec_varint, _dec_packed_varints))
    out = {number << 3 | wire: single}
    if field.repeated:
        out[number << 3 | 2] = packed
    return out


# -- encoding --------------------------------------------------------------------------------------
def _encode(field, value, parts):
    """Append the bytes of ``field`` holding ``value`` (set, non-empty) to ``parts``."""
    tag, kind = field.tag, field.kind
    if field.map_key is not None:
        items = value._items
        for key in _key_order(items):
            k, v = key.encode("utf-8"), items[key].SerializeToString()
            entry = b"".join((b"\n", encode_varint(len(k)), k, b"\x12", encode_varint(len(v)), v))
            parts += (tag, encode_varint(len(entry)), entry)
    elif field.is_message:
        for m in value._items if field.repeated else (value,):
            data = m.SerializeToString()
            parts += (tag, encode_varint(len(data)), data)
    elif kind == "string" or kind == "bytes":
        for v in value._items if field.repeated else (value,):
            data = v.encode("utf-8") if kind == "string" else v
            parts += (tag, encode_varint(len(data)), data)
    elif field.repeated:   # proto3 packs repeated numbers
        items = value._items
        data = (struct.pack("<%d%s" % (len(items), _REALS[kind][1]), *items) if kind in _REALS
                else b"".join([encode_varint(int(v)) for v in items]))
        parts += (tag, encode_varint(len(data)), data)
    elif kind in _REALS:
        parts += (tag, struct.pack("<" + _REALS[kind][1], value))
    else:
        parts += (tag, encode_varint(int(value)))


# -- text format (protobuf's, as ``str(message)`` prints it) ---------------------------------------
_ESCAPES = {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", ord('"'): '\\"',
            ord("'"): "\\'", ord("\\"): "\\\\"}


def _quote(data):
    """C-style escaped and quoted: octal for control bytes, and for every non-ASCII byte of
    bytes (text keeps its non-ASCII characters)."""
    is_bytes = isinstance(data, bytes)
    out = []
    for b in data if is_bytes else data.encode("utf-8"):
        if b in _ESCAPES:
            out.append(_ESCAPES[b])
        elif b < 0x20 or b == 0x7F or (is_bytes and b >= 0x80):
            out.append("\\%03o" % b)
        else:
            out.append(chr(b))
    text = "".join(out)
    return '"%s"' % (text if is_bytes else text.encode("latin-1").decode("utf-8"))


def _shortest(value, digits, cast):
    """C's %g with the fewest of ``digits`` significant digits that reads back as ``value``."""
    if math.isnan(value):
        return "nan"
    for d in digits:
        text = "%.*g" % (d, value)
        if cast(float(text)) == value:
            break
    return text


def _text_scalar(field, value):
    kind = field.kind
    if kind == "string" or kind == "bytes":
        return _quote(value)
    if kind == "float":
        return _shortest(value, (6, 9), lambda v: _to_float32s([v])[0])
    if kind == "double":
        return _shortest(value, (15, 17), float)
    if kind == "bool":
        return "true" if value else "false"
    if kind == "enum":
        return field.enum.get(value, str(value))
    return str(value)


def _text(message, pad, out):
    for name, value in message.ListFields():
        field = message._BY_NAME[name]
        if field.map_key is not None:
            for key in sorted(value._items):
                out.append('%s%s {\n%s  key: %s\n' % (pad, name, pad, _quote(key)))
                _text_block("value", value._items[key], pad + "  ", out)
                out.append(pad + "}\n")
        elif field.is_message:
            for m in value._items if field.repeated else (value,):
                _text_block(name, m, pad, out)
        else:
            out += ["%s%s: %s\n" % (pad, name, _text_scalar(field, v))
                    for v in (value._items if field.repeated else (value,))]


def _text_block(name, message, pad, out):
    out.append("%s%s {\n" % (pad, name))
    _text(message, pad + "  ", out)
    out.append(pad + "}\n")


# -- messages --------------------------------------------------------------------------------------
def _field_property(field):
    name = field.name
    if field.is_message or field.is_container:
        def get(self):
            v = self._values.get(name)
            return v if v is not None else self._create(field)

        def refuse(self, value):
            raise AttributeError(
                'Assignment not allowed to %s field "%s" in protocol message object. (%s)' % (
                    "map, or repeated" if field.is_container else "message", name,
                    "Use its extend(), add() or append()." if field.is_container else
                    "Use %s.CopyFrom(value), or set its fields." % name))
        return property(get, refuse, doc="Field %s (number %d)." % (name, field.number))

    default = field.default

    def get_scalar(self):
        return self._values.get(name, default)

    def set_scalar(self, value):
        _store(self, field, field.check(value))
        self._modified()
    return property(get_scalar, set_scalar, doc="Field %s (number %d)." % (name, field.number))


_new = object.__new__
_setattr = object.__setattr__


class _MessageType(type):
    def __new__(mcls, name, bases, namespace, **kwargs):
        namespace.setdefault("__slots__", ())   # no instance __dict__: fields live in _values
        return super().__new__(mcls, name, bases, namespace, **kwargs)


class Message(metaclass=_MessageType):
    """Base of the message classes; a subclass sets ``FULL_NAME`` (e.g. "tensorflow.Summary")
    and ``FIELDS`` (its ``Field``s)."""

    FULL_NAME = ""
    FIELDS = ()
    __slots__ = ("_values", "_unknown", "_hook")
    # _values: field name -> scalar (set), container or sub-message (made when first read);
    # _unknown: fields of unknown numbers or wire types, as parsed (written back as they were);
    # _hook: (parent, field) while this is a sub-message read but not set: the first change
    #   sets it in its parent (a sub-message is set in its parent exactly when _hook is None).

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.FULL_NAME:   # named as protobuf names it ("Summary.Value"), wherever it is defined
            cls.__qualname__ = cls.FULL_NAME.split(".", 1)[-1]
            cls.__name__ = cls.__qualname__.rsplit(".", 1)[-1]
        cls._BY_NAME = {f.name: f for f in cls.FIELDS}
        if len(cls._BY_NAME) != len(cls.FIELDS) or \
                len({f.number for f in cls.FIELDS}) != len(cls.FIELDS):
            raise TypeError("message %s: field names and numbers must be unique" % cls.FULL_NAME)
        cls._ORDERED = tuple(sorted(cls.FIELDS, key=lambda f: f.number))
        cls._ONEOFS = {}
        for f in cls.FIELDS:
            if f.oneof:
                cls._ONEOFS.setdefault(f.oneof, []).append(f)
        cls._DECODERS = {}
        for f in cls.FIELDS:
            if hasattr(Message, f.name):
                raise TypeError("message %s: field name %r is a Message method"
                                % (cls.FULL_NAME, f.name))
            f.full_name = "%s.%s" % (cls.FULL_NAME, f.name)
            f.siblings = tuple(o.name for o in cls._ONEOFS.get(f.oneof, ()) if o is not f)
            cls._DECODERS.update((tag, (f, d)) for tag, d in _decoders(f).items())
            setattr(cls, f.name, _field_property(f))

    def __init__(self, **fields):
        _set_values(self, {})
        _set_unknown(self, b"")
        _set_hook(self, None)
        if fields:
            self._init_fields(fields)

    @classmethod
    def _blank(cls):
        message = _new(cls)
        _set_values(message, {})
        _set_unknown(message, b"")
        _set_hook(message, None)
        return message

    def _init_fields(self, fields):
        for name, value in fields.items():
            field = self._BY_NAME.get(name)
            if field is None:
                raise ValueError('Protocol message %s has no "%s" field.'
                                 % (type(self).__name__, name))
            if value is None:
                continue   # as protobuf: a None keyword leaves the field unset
            if field.map_key is not None:
                if not isinstance(value, Mapping):
                    raise TypeError("Field %s is a map: initialize it with a dict, got %s"
                                    % (field.full_name, _type_name(value)))
                _container(self, field).MergeFrom(value)
            elif field.repeated:
                if isinstance(value, (str, Mapping)):
                    raise TypeError("Field %s is repeated: initialize it with a list, got %s"
                                    % (field.full_name, _type_name(value)))
                _container(self, field).extend(value)
            elif field.is_message:
                child = _container(self, field)
                if isinstance(value, Mapping):
                    child._init_fields(value)
                    child._modified()
                else:
                    child.CopyFrom(_as_message(field.kind, value))
            else:
                _store(self, field, field.check(value))

    # -- fields ------------------------------------------------------------------------------------
    def _create(self, field):
        if field.is_container:
            # only a sub-message not yet set needs to hear of changes (and to be referred to:
            # no reference cycle in the messages parsing makes)
            owner = self if self._hook is not None else None
            v = (MessageMap if field.map_key is not None else RepeatedCompositeContainer
                 if field.is_message else RepeatedScalarContainer)(field, owner)
        else:
            v = field.kind._blank()
            _set_hook(v, (self, field))
        self._values[field.name] = v
        return v

    def _modified(self):
        """Called on any change: a sub-message that was only read is now set in its parent."""
        hook = self._hook
        if hook is not None:
            _set_hook(self, None)
            for v in self._values.values():
                if isinstance(v, _Container):
                    v._owner = None   # set now: they need not tell us (nor refer to us) any more
            parent, field = hook
            if field.siblings:
                parent._drop_all(field.siblings)
            parent._modified()

    def _drop(self, name):
        v = self._values.pop(name, None)
        if isinstance(v, Message):
            _set_hook(v, None)   # a reference the user holds no longer changes this message
        elif isinstance(v, _Container):
            v._owner = None

    def _drop_all(self, names):
        for name in names:
            if name in self._values:
                self._drop(name)

    def _is_set(self, field, v):
        """Whether ``v`` (the stored value of ``field``) counts as set."""
        if field.is_container:
            return len(v._items) > 0
        return not field.is_message or v._hook is None

    def __getattr__(self, name):   # only reached for names that are not fields
        raise AttributeError('Protocol message %s has no "%s" field.'
                             % (type(self).__name__, name))

    def __setattr__(self, name, value):
        if name not in self._BY_NAME:
            raise AttributeError('Protocol message %s has no "%s" field.'
                                 % (type(self).__name__, name))
        _setattr(self, name, value)   # the field's property checks and stores it

    # -- protobuf's message API ------------------------------------------------------------------
    def HasField(self, name):  # noqa: N802 - protobuf's name
        """Whether the sub-message, oneof member or oneof ``name`` is set."""
        if name in self._ONEOFS:
            return self.WhichOneof(name) is not None
        field = self._BY_NAME.get(name)
        if field is None:
            raise ValueError('Protocol message %s has no "%s" field.'
                             % (type(self).__name__, name))
        if field.is_container or not (field.is_message or field.oneof):
            raise ValueError("Field %s does not have presence." % field.full_name)
        v = self._values.get(name)
        return v is not None and self._is_set(field, v)

    def WhichOneof(self, oneof_group):  # noqa: N802 - protobuf's name
        """The name of the member of oneof ``oneof_group`` that is set, or None."""
        members = self._ONEOFS.get(oneof_group)
        if members is None:
            raise ValueError('Protocol message has no oneof "%s" field.' % oneof_group)
        values = self._values
        for f in members:
            v = values.get(f.name)
            if v is not None and (not f.is_message or v._hook is None):
                return f.name
        return None

    def ClearField(self, name):  # noqa: N802 - protobuf's name
        """Unset field ``name`` (or whichever member of oneof ``name`` is set)."""
        if name in self._ONEOFS:
            self._drop_all([f.name for f in self._ONEOFS[name]])
        elif name not in self._BY_NAME:
            raise ValueError('Protocol message %s has no "%s" field.'
                             % (type(self).__name__, name))
        else:
            self._drop(name)

    def Clear(self):  # noqa: N802 - protobuf's name
        """Unset every field (and drop the unknown ones)."""
        self._drop_all(list(self._values))
        _set_unknown(self, b"")
        self._modified()

    def SetInParent(self):  # noqa: N802 - protobuf's name
        """Mark this sub-message set in its parent, as any change does."""
        self._modified()

    def IsInitialized(self):  # noqa: N802 - protobuf's name
        return True   # proto3 has no required fields

    def ListFields(self):  # noqa: N802 - protobuf's name
        """``(field name, value)`` of the fields that are set, in field-number order."""
        values = self._values
        return [(f.name, v) for f in self._ORDERED
                if (v := values.get(f.name)) is not None and self._is_set(f, v)]

    def _check_same_type(self, other, method):
        if type(other) is not type(self):
            raise TypeError("Parameter to %s() must be instance of same class: expected %s got "
                            "%s." % (method, type(self).__name__, _type_name(other)))

    def MergeFrom(self, other):  # noqa: N802 - protobuf's name
        """Merge ``other`` in: set scalars overwrite, repeated fields are appended to,
        sub-messages merged, map entries replaced."""
        self._check_same_type(other, "MergeFrom")
        by_name = self._BY_NAME
        for name, value in other._values.items():
            field = by_name[name]
            if not (field.is_container or field.is_message):
                _store(self, field, value)
            elif other._is_set(field, value):
                _container(self, field).MergeFrom(value)
        _set_unknown(self, self._unknown + other._unknown)
        self._modified()

    def CopyFrom(self, other):  # noqa: N802 - protobuf's name
        """Make this message a copy of ``other``."""
        if other is self:
            return
        self._check_same_type(other, "CopyFrom")
        self.Clear()
        self.MergeFrom(other)

    def SerializeToString(self, deterministic=None):  # noqa: N802 - protobuf's name
        """The message in protobuf's wire format (map entries in deterministic order always)."""
        parts, values = [], self._values
        for f in self._ORDERED:
            v = values.get(f.name)
            if v is not None and self._is_set(f, v):
                _encode(f, v, parts)
        parts.append(self._unknown)
        return b"".join(parts)

    SerializePartialToString = SerializeToString

    def ByteSize(self):  # noqa: N802 - protobuf's name
        return len(self.SerializeToString())

    def MergeFromString(self, serialized):  # noqa: N802 - protobuf's name
        """Merge the message ``serialized`` (bytes) into this one; returns its length."""
        if not isinstance(serialized, (bytes, bytearray, memoryview)):
            raise TypeError("%s.MergeFromString takes bytes, got %s"
                            % (type(self).__name__, _type_name(serialized)))
        buf = serialized if type(serialized) is bytes else bytes(serialized)
        try:
            self._merge(buf, 0, len(buf))
        except DecodeError as e:
            raise DecodeError("Error parsing message with type '%s' (%s): %s"
                              % (type(self).__name__, self.FULL_NAME, e)) from None
        self._modified()
        return len(buf)

    def ParseFromString(self, serialized):  # noqa: N802 - protobuf's name
        """Replace this message by the one ``serialized`` holds; returns its length."""
        self.Clear()
        return self.MergeFromString(serialized)

    @classmethod
    def FromString(cls, serialized):  # noqa: N802 - protobuf's name
        """The message ``serialized`` (bytes) holds."""
        message = cls._blank()
        message.MergeFromString(serialized)
        return message

    def _merge(self, buf, pos, end):
        decoders, unknown = self._DECODERS, None
        while pos < end:
            start = pos
            tag = buf[pos]
            if tag < 0x80:
                pos += 1
            else:
                tag, pos = decode_varint(buf, pos, end)
            decoder = decoders.get(tag)
            if decoder is not None:
                pos = decoder[1](self, decoder[0], buf, pos, end)
                continue
            if tag < 8:
                raise DecodeError("field number 0 at byte %d" % start)
            pos = skip_field(buf, pos, end, tag >> 3, tag & 7)
            if unknown is None:
                unknown = [self._unknown]
            unknown.append(buf[start:pos])
        if unknown is not None:
            _set_unknown(self, b"".join(unknown))

    # -- Python protocols --------------------------------------------------------------------------
    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self.ListFields() == other.ListFields() and self._unknown == other._unknown

    __hash__ = None   # mutable, as protobuf's messages

    def __str__(self):
        out = []
        _text(self, "", out)
        return "".join(out)

    __repr__ = __str__

    def __reduce__(self):
        return type(self).FromString, (self.SerializeToString(),)

    def __deepcopy__(self, memo=None):
        return type(self).FromString(self.SerializeToString())

    __copy__ = __deepcopy__


_set_values = Message._values.__set__
_set_unknown = Message._unknown.__set__
_set_hook = Message._hook.__set__
