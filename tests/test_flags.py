"""tf.app.flags / tf.flags and tf.app.run. The expected values and messages are absl-py's (what
TF 1.15's tf.flags wraps), checked with absl 2.x on the same command lines."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import zps as tf

flags = tf.flags


@pytest.fixture
def fv():
    """A private registry with one flag of each kind (the global FLAGS stays untouched)."""
    fv = flags.FlagValues()
    flags.DEFINE_string("s", "d", "a string", flag_values=fv)
    flags.DEFINE_integer("n", 3, "an int", lower_bound=0, flag_values=fv)
    flags.DEFINE_float("f", 0.5, "a float", flag_values=fv)
    flags.DEFINE_boolean("b", False, "a bool", flag_values=fv)
    flags.DEFINE_enum("e", "x", ["x", "y"], "an enum", flag_values=fv)
    flags.DEFINE_list("l", "a,b", "a list", flag_values=fv)
    flags.DEFINE_multi_string("m", None, "multi", flag_values=fv)
    flags.DEFINE_multi_integer("mi", [1], "multi int", flag_values=fv)
    return fv


def test_app_flags_is_tf_flags():
    assert tf.app.flags is tf.flags
    assert isinstance(tf.flags.FLAGS, tf.flags.FlagValues)


def test_defaults_before_and_values_after_parsing(fv):
    fv.mark_as_parsed()
    assert fv.flag_values_dict() == {"s": "d", "n": 3, "f": 0.5, "b": False, "e": "x",
                                     "l": ["a", "b"], "m": None, "mi": [1]}
    rest = fv(["p", "--s=x", "-n", "5", "--f=1e-3", "--b", "pos", "--e=y", "--l=a, b ,c",
               "--m=1", "--m", "2", "--mi=3", "--mi=0x10"])
    assert rest == ["p", "pos"]
    assert (fv.s, fv.n, fv.f, fv.b, fv.e, fv.l, fv.m, fv.mi) == (
        "x", 5, 0.001, True, "y", ["a", "b", "c"], ["1", "2"], [3, 16])
    assert not fv["s"].using_default_value and fv["f"].using_default_value is False


@pytest.mark.parametrize("argv, value, rest", [
    (["--b"], True, []),
    (["--nob"], False, []),
    (["--b", "--nob"], False, []),
    (["--b=false"], False, []),
    (["--b=T"], True, []),
    (["--b=1"], True, []),
    (["--b=0"], False, []),
    (["--b", "true"], True, ["true"]),    # a boolean never takes the next argument
])
def test_boolean_forms(fv, argv, value, rest):
    assert fv(["p"] + argv) == ["p"] + rest
    assert fv.b is value


def test_list_and_dash_forms(fv):
    assert fv(["p", "--l="]) == ["p"] and fv.l == []
    assert fv(["p", "-s", "v", "--", "--n=2"]) == ["p", "--n=2"] and fv.s == "v" and fv.n == 3
    assert fv(["p", "-", "x"]) == ["p", "-", "x"]


@pytest.mark.parametrize("argv, error, message", [
    (["--b=yes"], flags.IllegalFlagValueError, "flag --b=yes: Non-boolean argument"),
    (["--n=abc"], flags.IllegalFlagValueError,
     "flag --n=abc: invalid literal for int() with base 10: 'abc'"),
    (["--n=1.5"], flags.IllegalFlagValueError, "flag --n=1.5: invalid literal for int()"),
    (["--n=-1"], flags.IllegalFlagValueError, "flag --n=-1: -1 is not a non-negative integer"),
    (["--f=x"], flags.IllegalFlagValueError,
     "flag --f=x: could not convert string to float: 'x'"),
    (["--e=z"], flags.IllegalFlagValueError, "flag --e=z: value should be one of <x|y>"),
    (["--zz=1"], flags.UnrecognizedFlagError, "Unknown command line flag 'zz'"),
    (["--nos"], flags.UnrecognizedFlagError, "Unknown command line flag 'nos'"),
    (["--no"], flags.UnrecognizedFlagError, "Unknown command line flag 'no'"),
    (["--mii=1"], flags.UnrecognizedFlagError,
     "Unknown command line flag 'mii'. Did you mean: mi ?"),
    (["--s"], flags.Error, "Missing value for flag --s"),
    (["--nob=1"], flags.Error, "--nob=1 does not take an argument"),
])
def test_bad_command_lines(fv, argv, error, message):
    with pytest.raises(error) as info:
        fv(["p"] + argv)
    assert message in str(info.value)


def test_known_only_keeps_unknown_flags_in_order(fv):
    argv = ["p", "--zz=1", "a", "--s=q", "--", "--s=r"]
    assert fv(argv, known_only=True) == ["p", "--zz=1", "a", "--", "--s=r"]
    assert fv.s == "q"


def test_argv_must_be_a_list(fv):
    with pytest.raises(TypeError, match="non-empty list"):
        fv("p --s=1")


def test_bad_definitions(fv):
    with pytest.raises(flags.DuplicateFlagError, match="The flag 's' is defined twice"):
        flags.DEFINE_string("s", "d", "again", flag_values=fv)
    with pytest.raises(flags.IllegalFlagValueError, match="flag --k=x: invalid literal"):
        flags.DEFINE_integer("k", "x", "bad", flag_values=fv)
    with pytest.raises(flags.IllegalFlagValueError, match="flag --k2=5: flag value must be a str"):
        flags.DEFINE_string("k2", 5, "bad", flag_values=fv)
    with pytest.raises(flags.IllegalFlagValueError, match=r"flag --k3=z: value should be one of"):
        flags.DEFINE_enum("k3", "z", ["a"], "bad", flag_values=fv)
    flags.DEFINE_integer("k4", "0x10", "a default is parsed too", flag_values=fv)
    assert fv["k4"].default == 16


def test_unparsed_access_and_attributes(fv):
    with pytest.raises(flags.UnparsedFlagAccessError,
                       match="Trying to access flag --s before flags were parsed"):
        _ = fv.s
    with pytest.raises(AttributeError):
        _ = fv.zz
    with pytest.raises(flags.UnrecognizedFlagError, match="Unknown command line flag 'zz'"):
        fv.zz = 1
    fv.n = 7
    fv.mark_as_parsed()
    assert fv.n == 7 and "n" in fv and "zz" not in fv and list(fv)[0] == "s"
    fv.unparse_flags()
    assert not fv.is_parsed()
    fv(["p"])
    assert fv.n == 3
    del fv.n
    assert "n" not in fv


def test_required_flags_and_validators():
    fv = flags.FlagValues()
    flags.DEFINE_string("r", None, "required", flag_values=fv)
    flags.DEFINE_integer("batch", 1, "batch size", flag_values=fv)
    flags.mark_flag_as_required("r", flag_values=fv)
    flags.register_validator("batch", lambda v: v > 0, "--batch must be positive", flag_values=fv)
    with pytest.raises(flags.IllegalFlagValueError,
                       match="flag --r=None: Flag --r must have a value other than None."):
        fv(["p"])
    assert fv(["p", "--r=x"]) == ["p"] and fv.r == "x"
    with pytest.raises(flags.IllegalFlagValueError, match="flag --batch=0: --batch must be posi"):
        fv(["p", "--r=x", "--batch=0"])
    with pytest.raises(flags.IllegalFlagValueError, match="flag --batch=-2"):
        fv.batch = -2

    def checker(value):
        raise flags.ValidationError("no good")
    flags.register_validator("r", checker, flag_values=fv)
    with pytest.raises(flags.IllegalFlagValueError, match="flag --r=x: no good"):
        fv(["p", "--r=x"])
    with pytest.raises(KeyError, match="no flag named 'q'"):
        flags.mark_flag_as_required("q", flag_values=fv)
    with pytest.warns(UserWarning, match="non-None default"):
        flags.mark_flag_as_required("batch", flag_values=fv)


REPO = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, PYTHONPATH=str(REPO))   # the scripts import zps from this checkout


def _run_script(tmp_path, body, *args):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(body))
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          timeout=60, env=ENV)


_PROGRAM = '''
    """Trains a thing."""
    import zps as tf

    tf.app.flags.DEFINE_string("job_name", "", "One of 'ps', 'worker'")
    tf.app.flags.DEFINE_integer("task_index", 0, "Index of task within the job")
    tf.app.flags.DEFINE_boolean("sync", False, "synchronous training")
    FLAGS = tf.app.flags.FLAGS

    def main(argv):
        print("main", FLAGS.job_name, FLAGS.task_index, FLAGS.sync, argv[1:])
        return 3

    if __name__ == "__main__":
        tf.app.run()
'''


def test_app_run_calls_main_with_the_rest_and_exits_with_its_result(tmp_path):
    proc = _run_script(tmp_path, _PROGRAM, "--job_name=worker", "--task_index", "1", "--sync",
                       "pos", "--undefined=2")
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == "main worker 1 True ['pos', '--undefined=2']\n"


def test_help_prints_the_flags_and_exits_0(tmp_path):
    proc = _run_script(tmp_path, _PROGRAM, "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Trains a thing.\nflags:\n")
    assert "  --[no]sync: synchronous training\n    (default: 'false')\n" in proc.stdout
    assert ("  --task_index: Index of task within the job\n    (default: '0')\n"
            "    (an integer)\n") in proc.stdout
    assert "main" not in proc.stdout


def test_reading_a_flag_before_parsing_parses_sys_argv(tmp_path):
    proc = _run_script(tmp_path, '''
        import zps as tf
        tf.flags.DEFINE_integer("steps", 1, "steps")
        print(tf.flags.FLAGS.steps)
    ''', "--steps=9")
    assert proc.stdout == "9\n", proc.stderr
    proc = _run_script(tmp_path, '''
        import zps as tf
        tf.flags.DEFINE_integer("steps", 1, "steps")
        print(tf.flags.FLAGS.steps)
    ''', "--bogus=1")
    assert proc.returncode == 1 and "Unknown command line flag 'bogus'" in proc.stderr


def test_app_run_bad_value_raises(tmp_path):
    proc = _run_script(tmp_path, _PROGRAM, "--task_index=x")
    assert proc.returncode == 1
    assert "IllegalFlagValueError: flag --task_index=x: invalid literal" in proc.stderr


def test_trainer_help_still_works():
    proc = subprocess.run([sys.executable, str(REPO / "examples" / "trainer.py"), "--help"],
                          capture_output=True, text=True, timeout=60, env=ENV)
    assert proc.returncode == 0 and "--ps_hosts" in proc.stdout, proc.stderr
