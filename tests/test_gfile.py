"""tf.gfile on local files; the error classes and messages are TF 2.21's (tf.compat.v1.gfile)."""

import pytest

import zps as tf

gfile = tf.gfile


def test_write_read_text_and_binary(tmp_path):
    path = str(tmp_path / "f.txt")
    with gfile.GFile(path, "w") as f:
        f.write("line 1\n")
        f.write(b"line 2\n")
    with gfile.GFile(path) as f:
        assert f.readline() == "line 1\n"
        assert f.tell() == 7
        assert f.read() == "line 2\n"
    with gfile.Open(path, "rb") as f:
        assert f.read(4) == b"line"
        f.seek(0)
        assert list(f) == [b"line 1\n", b"line 2\n"]
    assert gfile.FastGFile(path, "r").readlines() == ["line 1\n", "line 2\n"]
    assert gfile.GFile(path).size() == 14
    with gfile.GFile(path, "a") as f:
        f.write("3")
    assert gfile.GFile(path).read().endswith("3")


def test_gfile_opens_lazily_and_reports_missing_files(tmp_path):
    missing = str(tmp_path / "nope")
    f = gfile.GFile(missing)          # TF1: no error until the first read
    with pytest.raises(tf.errors.NotFoundError, match="%s; No such file or directory" % missing):
        f.read()
    with pytest.raises(tf.errors.InvalidArgumentError, match="mode"):
        gfile.GFile(missing, "x")


def test_directories(tmp_path):
    d = str(tmp_path / "a" / "b")
    assert not gfile.Exists(d) and not gfile.IsDirectory(d)
    gfile.MakeDirs(d)
    gfile.MakeDirs(d)                 # exists: nothing to do
    gfile.MkDir(d)                    # TF 2.21: no error for an existing directory
    gfile.MkDir(d + "/c")
    for name in ("y", "x"):
        gfile.GFile(d + "/" + name, "w").write("1")
    assert gfile.IsDirectory(d) and gfile.Exists(d + "/x")
    assert gfile.ListDirectory(d) == ["c", "x", "y"]
    assert gfile.Glob(d + "/[xy]") == [d + "/x", d + "/y"]
    assert gfile.Glob(str(tmp_path / "nope" / "*")) == []
    assert [(top, dirs, files) for top, dirs, files in gfile.Walk(d)] == [
        (d, ["c"], ["x", "y"]), (d + "/c", [], [])]
    st = gfile.Stat(d + "/x")
    assert (st.length, st.is_directory) == (1, False) and st.mtime_nsec > 0
    assert gfile.Stat(d).is_directory
    gfile.DeleteRecursively(str(tmp_path / "a"))
    assert not gfile.Exists(str(tmp_path / "a"))


NOT_FOUND, EXISTS = tf.errors.NotFoundError, tf.errors.AlreadyExistsError


@pytest.mark.parametrize("call, error, message", [
    (lambda d: gfile.Remove(d + "/nope"), NOT_FOUND, "{d}/nope; No such file or directory"),
    (lambda d: gfile.ListDirectory(d + "/nope"), NOT_FOUND, "Could not find directory {d}/nope"),
    (lambda d: gfile.Stat(d + "/nope"), NOT_FOUND, "{d}/nope; No such file or directory"),
    (lambda d: gfile.DeleteRecursively(d + "/nope"), NOT_FOUND, "{d}/nope not found"),
    (lambda d: gfile.MkDir(d + "/x/y"), NOT_FOUND, "{d}/x/y; No such file or directory"),
    (lambda d: gfile.Rename(d + "/a", d + "/b"), EXISTS, "file already exists"),
    (lambda d: gfile.Copy(d + "/a", d + "/b"), EXISTS, "file already exists"),
    (lambda d: gfile.Copy(d + "/zz", d + "/c"), NOT_FOUND, "{d}/zz; No such file or directory"),
])
def test_errors_match_tf(tmp_path, call, error, message):
    d = str(tmp_path)
    for name in ("a", "b"):
        gfile.GFile(d + "/" + name, "w").write(name)
    with pytest.raises(error) as info:
        call(d)
    assert message.format(d=d) in info.value.message


def test_rename_and_copy_overwrite(tmp_path):
    a, b, c = (str(tmp_path / n) for n in "abc")
    gfile.GFile(a, "w").write("A")
    gfile.GFile(b, "w").write("B")
    gfile.Copy(a, c)
    gfile.Copy(b, c, overwrite=True)
    assert gfile.GFile(c).read() == "B"
    gfile.Rename(a, b, overwrite=True)
    assert gfile.GFile(b).read() == "A" and not gfile.Exists(a)
    gfile.Remove(b)
    assert not gfile.Exists(b)
