"""TensorShape and Dimension: partial shapes, merging, compatibility, arithmetic."""

import pytest

from zps.framework.tensor_shape import Dimension, TensorShape, as_shape, scalar, unknown_shape


def test_dimension_arithmetic_and_unknowns():
    a, b, u = Dimension(6), Dimension(4), Dimension(None)
    assert (a + b).value == 10 and (a - b).value == 2 and (a * b).value == 24
    assert (a // b).value == 1 and (a % b).value == 2
    assert (1 + a).value == 7 and (10 - a).value == 4 and (2 * a).value == 12
    assert (13 // b).value == 3 and (13 % a).value == 1
    for r in (a + u, u * 3, 3 - u, u // a, a % u):
        assert r.value is None
    assert int(a) == 6 and [0, 1, 2, 3, 4, 5, 6][a] == 6
    with pytest.raises(TypeError, match="unknown Dimension"):
        int(u)


def test_dimension_comparisons_are_none_when_unknown():
    a, u = Dimension(3), Dimension(None)
    assert (a == 3) is True and (a != 4) is True and (a == Dimension(3)) is True
    assert (a == u) is None and (u != 3) is None
    assert (a < 4) is True and (a >= 3) is True and (a > Dimension(5)) is False
    assert (a < u) is None and (u <= 1) is None
    assert str(a) == "3" and str(u) == "?" and repr(u) == "Dimension(None)"


def test_dimension_validation_merge_and_compatibility():
    with pytest.raises(ValueError, match=">= 0"):
        Dimension(-1)
    with pytest.raises(ValueError, match="integer"):
        Dimension(1.5)
    with pytest.raises(TypeError):
        Dimension("3")
    assert Dimension(2.0).value == 2 and Dimension(Dimension(4)).value == 4
    assert Dimension(3).is_compatible_with(None) and not Dimension(3).is_compatible_with(4)
    assert Dimension(None).merge_with(5).value == 5 and Dimension(5).merge_with(None).value == 5
    with pytest.raises(ValueError, match="Dimensions 3 and 4 are not compatible"):
        Dimension(3).merge_with(4)


def test_construction_and_queries():
    s = TensorShape([None, 784])
    assert s.as_list() == [None, 784] and s.ndims == s.rank == 2 and len(s) == 2
    assert s.dims[1].value == 784 and [d.value for d in s] == [None, 784]
    assert not s.is_fully_defined() and s.num_elements() is None
    full = TensorShape([2, 3, 4])
    assert full.is_fully_defined() and full.num_elements() == 24 and full.as_tuple() == (2, 3, 4)
    assert TensorShape(3).as_list() == [3] and scalar().as_list() == [] and scalar().num_elements() == 1
    assert TensorShape([Dimension(2), None]).as_list() == [2, None]
    assert as_shape(full) is full and as_shape((1, 2)) == TensorShape([1, 2])
    with pytest.raises(TypeError, match="string"):
        TensorShape("abc")
    assert full[1].value == 3 and full[1:].as_list() == [3, 4] and full[-1].value == 4


def test_unknown_rank():
    u = unknown_shape()
    assert u.ndims is None and u.dims is None and u.as_tuple() is None and not u
    assert not u.is_fully_defined() and u.num_elements() is None
    assert u[0].value is None and u[1:].ndims is None
    assert unknown_shape(2).as_list() == [None, None] and bool(scalar())
    with pytest.raises(ValueError, match="unknown TensorShape"):
        u.as_list()
    with pytest.raises(ValueError, match="unknown rank"):
        len(u)
    with pytest.raises(ValueError, match="unknown rank"):
        iter(u)
    assert str(u) == "<unknown>" and repr(u) == "TensorShape(None)"


def test_compatibility():
    s = TensorShape([None, 3])
    assert s.is_compatible_with([5, 3]) and s.is_compatible_with([None, None])
    assert s.is_compatible_with(unknown_shape()) and unknown_shape().is_compatible_with([1, 2, 3])
    assert not s.is_compatible_with([5, 4]) and not s.is_compatible_with([3])
    s.assert_is_compatible_with([1, 3])
    with pytest.raises(ValueError, match=r"Shapes \(\?, 3\) and \(1, 4\) are incompatible"):
        s.assert_is_compatible_with([1, 4])


def test_merge_with():
    assert TensorShape([None, 3]).merge_with([2, None]).as_list() == [2, 3]
    assert unknown_shape().merge_with([1, 2]).as_list() == [1, 2]
    assert TensorShape([1]).merge_with(unknown_shape()).as_list() == [1]
    with pytest.raises(ValueError, match=r"Shapes \(2, 3\) and \(2, 4\) are not compatible"):
        TensorShape([2, 3]).merge_with([2, 4])
    with pytest.raises(ValueError, match="not compatible"):
        TensorShape([2]).merge_with([2, 1])


def test_concatenation():
    a, b = TensorShape([1, None]), TensorShape([3])
    assert a.concatenate(b).as_list() == [1, None, 3]
    assert (a + b).as_list() == [1, None, 3] and ([7] + b).as_list() == [7, 3]
    assert a.concatenate(unknown_shape()).ndims is None
    assert unknown_shape().concatenate(a).ndims is None


def test_rank_helpers():
    s = TensorShape([2, None])
    assert s.with_rank(2) is not None and unknown_shape().with_rank(3).as_list() == [None] * 3
    with pytest.raises(ValueError, match="must have rank 3"):
        s.with_rank(3)
    assert s.with_rank_at_least(1) is s and s.with_rank_at_most(2) is s
    with pytest.raises(ValueError, match="rank at least 3"):
        s.with_rank_at_least(3)
    with pytest.raises(ValueError, match="rank at most 1"):
        s.with_rank_at_most(1)
    s.assert_has_rank(2)
    unknown_shape().assert_has_rank(5)
    with pytest.raises(ValueError, match="must have rank 1"):
        s.assert_has_rank(1)
    s.assert_same_rank([1, 1])
    with pytest.raises(ValueError, match="same rank"):
        s.assert_same_rank([1])
    with pytest.raises(ValueError, match="not fully defined"):
        s.assert_is_fully_defined()
    assert s.most_specific_compatible_shape([2, 5]).as_list() == [2, None]
    assert s.most_specific_compatible_shape([2]).ndims is None


def test_equality_and_hashing():
    assert TensorShape([1, None]) == [1, None] and TensorShape([1, 2]) != [1, 3]
    assert unknown_shape() == unknown_shape() and unknown_shape() != scalar()
    assert len({TensorShape([1, 2]), TensorShape((1, 2))}) == 1
    assert (TensorShape([1]) == object()) is False
    assert str(TensorShape([None, 3])) == "(?, 3)" and str(scalar()) == "()"
