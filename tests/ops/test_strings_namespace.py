"""``tf.strings`` (and tf.regex_replace, tf.string_strip) against TensorFlow 2.21
(``tf.compat.v1``): the expected values and messages were produced there and are written in here
(TF is not needed to run these tests)."""

import pytest

import zps as tf


def run(fetch, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetch, feed_dict)


def run_error(fetch):
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        run(fetch)
    return info.value.message


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


def test_namespace_holds_the_string_ops():
    assert tf.strings.join is tf.string_join
    assert tf.strings.substr is tf.substr
    assert tf.strings.to_number is tf.string_to_number
    assert tf.strings.to_hash_bucket_fast is tf.string_to_hash_bucket_fast
    assert tf.strings.to_hash_bucket_strong is tf.string_to_hash_bucket_strong
    assert tf.strings.regex_replace is tf.regex_replace
    assert tf.strings.strip is tf.string_strip
    assert tf.strings.reduce_join is tf.reduce_join and tf.strings.as_string is tf.as_string


# -- split ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("args, kwargs, indices, values, shape", [
    ((["a  b c", " d", ""],), {}, [[0, 0], [0, 1], [0, 2], [1, 0]],
     [b"a", b"b", b"c", b"d"], [3, 3]),
    ((["a<>b<><>c", "d"],), {"sep": "<>"}, [[0, 0], [0, 1], [0, 2], [0, 3], [1, 0]],
     [b"a", b"b", b"", b"c", b"d"], [2, 4]),
    ((["a b c d", "e f"],), {"maxsplit": 1}, [[0, 0], [0, 1], [1, 0], [1, 1]],
     [b"a", b"b c d", b"e", b"f"], [2, 2]),
    ((["  a  b c d  "],), {"maxsplit": 1}, [[0, 0], [0, 1]], [b"a", b"b c d  "], [1, 2]),
    (("a b",), {}, [[0, 0], [0, 1]], [b"a", b"b"], [1, 2]),
    (([["a b"], ["c"]],), {}, [[0, 0, 0], [0, 0, 1], [1, 0, 0]], [b"a", b"b", b"c"],
     [2, 1, 2]),
    ((), {"source": ["a b", "c"]}, [[0, 0], [0, 1], [1, 0]], [b"a", b"b", b"c"], [2, 2]),
    ((["a b"],), {"sep": ""}, [[0, 0], [0, 1]], [b"a", b"b"], [1, 2]),
    ((["a,b,", ",", ""],), {"sep": ","}, [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [2, 0]],
     [b"a", b"b", b"", b"", b"", b""], [3, 3]),
])
def test_split(args, kwargs, indices, values, shape):
    st = tf.strings.split(*args, **kwargs)
    assert isinstance(st, tf.SparseTensor)
    got = run(st)
    assert got.indices.tolist() == indices
    assert got.values.tolist() == values
    assert got.dense_shape.tolist() == shape


def test_split_names_and_errors():
    st = tf.strings.split(["a b"])
    assert st.values.op.name == "StringSplit/StringSplitV2"
    with pytest.raises(ValueError, match="result_type must be 'RaggedTensor' or 'SparseTensor'"):
        tf.strings.split(["a"], result_type="X")
    with pytest.raises(ValueError, match="no RaggedTensor"):
        tf.strings.split(["a"], result_type="RaggedTensor")
    with pytest.raises(ValueError, match="exactly one"):
        tf.strings.split(["a"], source=["b"])


# -- length, substr ------------------------------------------------------------------------------
def test_length():
    out = tf.strings.length(["abc", "é", ""])
    assert out.dtype == tf.int32 and out.op.type == "StringLength"
    assert run(out).tolist() == [3, 2, 0]
    chars = tf.strings.length(["abc", "é", "", b"\xff\xfe"], unit="UTF8_CHAR")
    assert run(chars).tolist() == [3, 1, 0, 2]
    with pytest.raises(ValueError, match="Attr 'unit' of 'StringLength' Op passed string 'X' "
                                         "not in: \"BYTE\", \"UTF8_CHAR\"."):
        tf.strings.length(["abc"], unit="X")


def test_substr_in_utf8_characters():
    assert run(tf.strings.substr(["héllo", "abc"], 1, 3, unit="UTF8_CHAR")).tolist() == [
        "éll".encode(), b"bc"]
    assert run(tf.strings.substr(["héllo"], -3, 2, unit="UTF8_CHAR")).tolist() == [b"ll"]
    assert run(tf.strings.substr(["héllo"], 1, 3)).tolist() == [b"\xc3\xa9l"]
    assert "pos 6 out of range for string" in run_error(
        tf.strings.substr(["héllo"], 6, 2, unit="UTF8_CHAR"))
    with pytest.raises(ValueError, match="Attr 'unit' of 'Substr' Op passed string 'X'"):
        tf.strings.substr(["héllo"], 1, 2, unit="X")


# -- to_number -----------------------------------------------------------------------------------
def test_to_number_takes_input_as_its_newer_name():
    out = tf.strings.to_number(input=["1.5"])
    assert out.dtype == tf.float32 and run(out).tolist() == [1.5]
    assert run(tf.strings.to_number(["1.5"], tf.float64)).tolist() == [1.5]
    with pytest.raises(ValueError, match="exactly one"):
        tf.strings.to_number(["1"], input=["2"])


def test_hash_buckets():
    assert run(tf.strings.to_hash_bucket_fast(["a", "b", "a"], 10)).tolist() == [9, 2, 9]
    assert run(tf.strings.to_hash_bucket_strong(["a", "b"], 10, [1, 2])).tolist() == [6, 4]


# -- regex ---------------------------------------------------------------------------------------
def test_regex_full_match():
    static = tf.strings.regex_full_match(["abc", "ab", "é"], "a.c|.")
    assert static.op.type == "StaticRegexFullMatch" and static.dtype == tf.bool
    assert run(static).tolist() == [True, False, True]
    dynamic = tf.strings.regex_full_match(["abc", "ab"], tf.constant("a.c"))
    assert dynamic.op.type == "RegexFullMatch"
    assert run(dynamic).tolist() == [True, False]
    assert run(tf.strings.regex_full_match(["١", "7"], r"\d")).tolist() == [False, True]


@pytest.mark.parametrize("args, kwargs, expected", [
    ((["abcabc", "é!"], "b|.!", "X"), {}, [b"aXcaXc", b"X"]),
    ((["abcabc"], "b", "X"), {"replace_global": False}, [b"aXcabc"]),
    ((["ab12cd34"], r"([a-z]+)(\d+)", r"<\2\1\0>"), {}, [b"<12abab12><34cdcd34>"]),
    ((["ab"], "a", r"\\n"), {}, [b"\\nb"]),
    ((["abc"], "", "-"), {}, [b"-a-b-c-"]),
    ((["abc"], "x*", "-"), {}, [b"-a-b-c-"]),
])
def test_regex_replace(args, kwargs, expected):
    out = tf.strings.regex_replace(*args, **kwargs)
    assert out.op.type == "StaticRegexReplace"
    assert run(out).tolist() == expected


def test_regex_replace_with_tensors_and_top_level_name():
    out = tf.regex_replace(["abc"], tf.constant("b"), tf.constant("X"))
    assert out.op.type == "RegexReplace" and run(out).tolist() == [b"aXc"]


def test_regex_errors_when_run():
    assert run_error(tf.strings.regex_full_match(["abc"], "a(")).startswith("Invalid pattern: a(")
    assert run_error(tf.strings.regex_replace(["abc"], "(", "X")).startswith("Invalid pattern: (")
    assert "Invalid rewrite pattern" in run_error(tf.strings.regex_replace(["ab"], "(a)", r"\2"))
    with pytest.raises(ValueError, match="pattern must be a scalar string"):
        tf.strings.regex_replace(["ab"], tf.constant(["a", "b"]), "X")


# -- strip, lower, upper -------------------------------------------------------------------------
def test_strip_lower_upper():
    assert run(tf.strings.strip([" a b \t\n", "\x0bx\x0c"])).tolist() == [b"a b", b"x"]
    assert run(tf.string_strip(" y ")) == b"y"
    assert run(tf.strings.lower(["AbÉ"])).tolist() == ["abÉ".encode()]
    assert run(tf.strings.lower(["AbÉ"], encoding="utf-8")).tolist() == ["abé".encode()]
    assert run(tf.strings.upper(["abé"], encoding="utf-8")).tolist() == ["ABÉ".encode()]
    assert run(tf.strings.upper(["abé"])).tolist() == ["ABé".encode()]
    assert "only utf-8 or '' (no encoding) is support" in run_error(
        tf.strings.upper(["abé"], encoding="latin1"))
    with pytest.raises(TypeError, match="input must be a string tensor: .*Expected string, "
                                        "but got 1 of type 'int'"):
        tf.strings.strip([1])


# -- format --------------------------------------------------------------------------------------
def test_format():
    out = tf.strings.format("x={} y={}", [tf.constant([1, 2, 3, 4, 5, 6, 7]), tf.constant(2.5)])
    assert out.dtype == tf.string and out.get_shape().ndims == 0
    assert run(out) == b"x=[1 2 3 ... 5 6 7] y=2.5"
    assert run(tf.strings.format("x={}", tf.constant([[1, 2], [3, 4]]))) == b"x=[[1 2]\n [3 4]]"
    assert run(tf.strings.format("<>", [tf.constant(1)], placeholder="<>")) == b"1"
    assert run(tf.strings.format("{}", [tf.range(8)], summarize=-1)) == b"[0 1 2 3 4 5 6 7]"
    with pytest.raises(ValueError, match="The template expects 2 tensors, but the inputs only "
                                         "has 1"):
        tf.strings.format("x={} {}", [tf.constant(1)])
