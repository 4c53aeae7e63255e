"""Static (possibly partial) tensor shapes, as in TF1's ``TensorShape``.

>>> from zps.framework.tensor_shape import TensorShape
>>> s = TensorShape([None, 784])
>>> s.as_list(), s.ndims, s.is_fully_defined()
([None, 784], 2, False)
>>> s.merge_with([128, None]).as_list()
[128, 784]
"""


class Dimension:
    """One dimension of a TensorShape; ``value`` is an int or None (unknown)."""

    __slots__ = ("value",)

    def __init__(self, value):
        if isinstance(value, Dimension):
            value = value.value
        if value is not None:
            if isinstance(value, str | bytes):
                raise TypeError("Dimension value must be an integer or None, got %r" % (value,))
            as_int = int(value)
            if as_int != value:
                raise ValueError("Dimension value must be an integer, got %r" % (value,))
            if as_int < 0:
                raise ValueError("Dimension %d must be >= 0" % as_int)
            value = as_int
        self.value = value

    def __int__(self):
        if self.value is None:
            raise TypeError("Cannot convert an unknown Dimension to int")
        return self.value

    __index__ = __int__

    def __eq__(self, other):
        other = other.value if isinstance(other, Dimension) else other
        if self.value is None or other is None:
            return None
        return self.value == other

    def __ne__(self, other):
        eq = self.__eq__(other)
        return None if eq is None else not eq

    def __hash__(self):
        return hash(self.value)

    def _arith(self, other, fn):
        other = other.value if isinstance(other, Dimension) else other
        if self.value is None or other is None:
            return Dimension(None)
        return Dimension(fn(self.value, other))

    def __add__(self, other):
        return self._arith(other, lambda a, b: a + b)

    def __sub__(self, other):
        return self._arith(other, lambda a, b: a - b)

    def __mul__(self, other):
        return self._arith(other, lambda a, b: a * b)

    def __floordiv__(self, other):
        return self._arith(other, lambda a, b: a // b)

    def __mod__(self, other):
        return self._arith(other, lambda a, b: a % b)

    def __rsub__(self, other):
        return self._arith(other, lambda a, b: b - a)

    def __rfloordiv__(self, other):
        return self._arith(other, lambda a, b: b // a)

    def __rmod__(self, other):
        return self._arith(other, lambda a, b: b % a)

    __radd__ = __add__
    __rmul__ = __mul__

    def _compare(self, other, fn):
        # None when either side is unknown, as in TF1.
        other = other.value if isinstance(other, Dimension) else other
        if self.value is None or other is None:
            return None
        return fn(self.value, other)

    def __lt__(self, other):
        return self._compare(other, lambda a, b: a < b)

    def __le__(self, other):
        return self._compare(other, lambda a, b: a <= b)

    def __gt__(self, other):
        return self._compare(other, lambda a, b: a > b)

    def __ge__(self, other):
        return self._compare(other, lambda a, b: a >= b)

    def is_compatible_with(self, other):
        other = Dimension(other)
        return self.value is None or other.value is None or self.value == other.value

    def assert_is_compatible_with(self, other):
        if not self.is_compatible_with(other):
            raise ValueError("Dimensions %s and %s are not compatible" % (self, Dimension(other)))

    def merge_with(self, other):
        other = Dimension(other)
        self.assert_is_compatible_with(other)
        return self if self.value is not None else other

    def __repr__(self):
        return "Dimension(%s)" % self.value

    def __str__(self):
        return "?" if self.value is None else str(self.value)


class TensorShape:
    """A shape of known or unknown rank whose dimensions may be unknown (None)."""

    __slots__ = ("_dims",)

    def __init__(self, dims):
        if isinstance(dims, TensorShape):
            self._dims = dims._dims
        elif dims is None:
            self._dims = None
        elif isinstance(dims, str | bytes):
            raise TypeError("A string has ambiguous TensorShape, please wrap in a list or convert "
                            "to an int: %r" % (dims,))
        else:
            try:
                it = iter(dims)
            except TypeError:
                it = [dims]  # a scalar: TensorShape(3) is the shape [3]
            self._dims = tuple(None if d is None else Dimension(d).value for d in it)

    @property
    def ndims(self):
        return None if self._dims is None else len(self._dims)

    rank = ndims

    @property
    def dims(self):
        return None if self._dims is None else [Dimension(d) for d in self._dims]

    def as_list(self):
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape")
        return list(self._dims)

    def as_tuple(self):
        """The dims as a tuple (None for unknown ones); None if the rank is unknown."""
        return self._dims

    def is_fully_defined(self):
        return self._dims is not None and all(d is not None for d in self._dims)

    def num_elements(self):
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:
            n *= d
        return n

    def is_compatible_with(self, other):
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        if len(self._dims) != len(other._dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def merge_with(self, other):
        other = as_shape(other)
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        if not self.is_compatible_with(other):
            raise ValueError("Shapes %s and %s are not compatible" % (self, other))
        return TensorShape([a if a is not None else b for a, b in zip(self._dims, other._dims)])

    def assert_is_compatible_with(self, other):
        if not self.is_compatible_with(other):
            raise ValueError("Shapes %s and %s are incompatible" % (self, as_shape(other)))

    def assert_has_rank(self, rank):
        if self._dims is not None and len(self._dims) != rank:
            raise ValueError("Shape %s must have rank %d" % (self, rank))

    def assert_same_rank(self, other):
        other = as_shape(other)
        if self._dims is not None and other._dims is not None and len(self) != len(other):
            raise ValueError("Shapes %s and %s must have the same rank" % (self, other))

    def assert_is_fully_defined(self):
        if not self.is_fully_defined():
            raise ValueError("Shape %s is not fully defined" % self)

    def with_rank(self, rank):
        """This shape, with rank ``rank`` if it was unknown; ValueError if it has another rank."""
        self.assert_has_rank(rank)
        return self.merge_with(unknown_shape(rank))

    def with_rank_at_least(self, rank):
        if self._dims is not None and len(self._dims) < rank:
            raise ValueError("Shape %s must have rank at least %d" % (self, rank))
        return self

    def with_rank_at_most(self, rank):
        if self._dims is not None and len(self._dims) > rank:
            raise ValueError("Shape %s must have rank at most %d" % (self, rank))
        return self

    def most_specific_compatible_shape(self, other):
        """The most specific shape compatible with both (unknown where they differ)."""
        other = as_shape(other)
        if self._dims is None or other._dims is None or len(self._dims) != len(other._dims):
            return unknown_shape()
        return TensorShape([a if a == b else None for a, b in zip(self._dims, other._dims)])

    def concatenate(self, other):
        """The dims of this shape followed by those of ``other`` (unknown rank if either is)."""
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return TensorShape(None)
        return TensorShape(self._dims + other._dims)

    def __add__(self, other):
        return self.concatenate(other)

    def __radd__(self, other):
        return as_shape(other).concatenate(self)

    def __len__(self):
        if self._dims is None:
            raise ValueError("Cannot take the length of a shape with unknown rank")
        return len(self._dims)

    def __iter__(self):
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank")
        return iter(Dimension(d) for d in self._dims)

    def __getitem__(self, key):
        if self._dims is None:
            return TensorShape(None) if isinstance(key, slice) else Dimension(None)
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return Dimension(self._dims[key])

    def __eq__(self, other):
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._dims == other._dims

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        return hash(self._dims)

    def __bool__(self):
        return self._dims is not None

    def __repr__(self):
        return "TensorShape(%s)" % (None if self._dims is None else list(self._dims))

    def __str__(self):
        if self._dims is None:
            return "<unknown>"
        dims = ["?" if d is None else str(d) for d in self._dims]
        return "(%s,)" % dims[0] if len(dims) == 1 else "(" + ", ".join(dims) + ")"   # TF1's


def as_shape(value):
    return value if isinstance(value, TensorShape) else TensorShape(value)


def unknown_shape(ndims=None):
    return TensorShape(None if ndims is None else [None] * ndims)


def scalar():
    return TensorShape([])
