"""``tf.flags`` / ``tf.app.flags``: absl-style command-line flags (TF 1.15 wraps absl.flags).

Define flags at import time, read them as ``FLAGS.<name>``; ``tf.app.run`` parses ``sys.argv``,
and so does the first read of a flag before any parse (TF 1.15's ``tf.flags.FLAGS`` does that)::

    import zps as tf
    tf.app.flags.DEFINE_integer("task_index", 0, "Index of task within the job")
    tf.app.flags.DEFINE_boolean("sync", False, "synchronous training")   # --sync, --nosync
    FLAGS = tf.app.flags.FLAGS
    FLAGS(["prog", "--task_index=1", "--sync"])   # -> ["prog"]; then FLAGS.task_index == 1

A command line is read as absl reads it: ``--name=value``, ``--name value`` (one or two dashes),
``--name``/``--noname`` for booleans, positional arguments anywhere, ``--`` ends the flags.
"""
# ruff: noqa: N802, A002 - TF1's names: DEFINE_string(name, default, help)

import csv
import difflib
import sys
import warnings


class Error(Exception):
    """The base class of the flag errors."""


class IllegalFlagValueError(Error):
    """A flag's value does not parse, is out of bounds, or fails a validator."""


class UnrecognizedFlagError(Error):
    """The command line names a flag that was never defined."""

    def __init__(self, flagname, suggestions=()):
        tip = ". Did you mean: %s ?" % ", ".join(suggestions) if suggestions else ""
        super().__init__("Unknown command line flag '%s'%s" % (flagname, tip))
        self.flagname = flagname


class DuplicateFlagError(Error):
    """A flag with this name is already defined."""


class UnparsedFlagAccessError(Error):
    """A flag was read from a FlagValues that was never parsed (only ``tf.flags.FLAGS`` parses
    ``sys.argv`` by itself)."""


class ValidationError(Error):
    """Raised by a validator registered with :func:`register_validator`."""


class _Flag:
    """One defined flag: its parser (``str`` -> value), its default and its current value."""

    def __init__(self, name, default, help, parse, kind="", boolean=False, multi=False):
        self.name = name
        self.help = help
        self.kind = kind   # the "(an integer)" line of --help
        self.boolean = boolean
        self.multi = multi
        self._parse_one = parse
        self.validators = []
        self.default = None if default is None else self._convert(default, default)
        self.unparse()

    def unparse(self):
        self.value = list(self.default) if self.multi and self.default is not None else self.default
        self.present = 0
        self.using_default_value = True

    def _convert(self, argument, shown):
        try:
            if self.multi:
                items = argument if isinstance(argument, (list, tuple)) else [argument]
                return [self._parse_one(a) for a in items]
            return self._parse_one(argument)
        except (TypeError, ValueError) as e:
            raise IllegalFlagValueError("flag --%s=%s: %s" % (self.name, shown, e)) from None

    def parse(self, argument):
        value = self._convert(argument, argument)
        self.value = self.value + value if self.multi and self.present else value
        self.present += 1
        self.using_default_value = False

    def help_text(self):
        name = "[no]" + self.name if self.boolean else self.name
        lines = ["  --%s: %s" % (name, self.help)]
        if self.multi:
            lines[0] += ";\n    repeat this option to specify a list of values"
        if self.default is not None:
            lines.append("    (default: '%s')" % _serialize(self.default))
        if self.kind:
            lines.append("    (%s)" % self.kind)
        return "\n".join(lines)


def _serialize(value):
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


_HELP_FLAGS = ("help", "helpshort", "helpfull", "?")


class FlagValues:
    """A registry of flags; ``FLAGS(argv)`` parses a command line and returns what is not a flag.

    ``FlagValues()`` makes a private registry (pass it as ``flag_values=`` to the DEFINEs)::

        fv = tf.flags.FlagValues()
        tf.flags.DEFINE_string("name", "x", "a name", flag_values=fv)
        fv(["prog", "--name=y", "file.txt"])   # -> ["prog", "file.txt"]; fv.name == "y"
    """

    def __init__(self):
        self.__dict__["_flags"] = {}
        self.__dict__["_modules"] = {}   # flag name -> the file that defined it, for --help
        self.__dict__["_parsed"] = False

    def __call__(self, argv, known_only=False):
        """Parse ``argv`` (``argv[0]`` is the program); returns ``[argv[0]] + non-flag args``.

        Unknown flags raise UnrecognizedFlagError, or with ``known_only`` are returned too.
        """
        if isinstance(argv, (str, bytes)) or not argv:
            raise TypeError("argv must be a non-empty list of strings with the program name "
                            "first, e.g. sys.argv; got %r" % (argv,))
        rest = [argv[0]]
        args = iter(argv[1:])
        for arg in args:
            if arg == "--":
                rest.extend((["--"] if known_only else []) + list(args))
                break
            name, value = self._split(arg)
            if not name:   # a positional argument, "-" included
                rest.append(arg)
                continue
            flag = self._flags.get(name)
            if flag is None and name.startswith("no") and getattr(
                    self._flags.get(name[2:]), "boolean", False):
                if value is not None:
                    raise IllegalFlagValueError("%s does not take an argument" % arg)
                flag, value = self._flags[name[2:]], "false"
            if flag is None and name in _HELP_FLAGS:
                print(self._usage())
                sys.exit(0)
            if flag is None:
                if not known_only:
                    raise UnrecognizedFlagError(name, difflib.get_close_matches(name, self._flags))
                rest.append(arg)
                continue
            if value is None:
                value = "true" if flag.boolean else next(args, None)
                if value is None:
                    raise Error("Missing value for flag %s" % arg)
            flag.parse(value)
        self.__dict__["_parsed"] = True
        for flag in self._flags.values():
            self._validate(flag)
        return rest

    @staticmethod
    def _split(arg):
        """``(name, value or None)`` of ``--name[=value]`` / ``-name[=value]``; name '' if none."""
        if not arg.startswith("-"):
            return "", None
        name, eq, value = arg[2 if arg.startswith("--") else 1:].partition("=")
        return name, (value if eq else None)

    def _validate(self, flag):
        for checker, message in flag.validators:
            try:
                ok = checker(flag.value)
            except ValidationError as e:
                ok, message = False, str(e)
            if not ok:
                raise IllegalFlagValueError("flag --%s=%s: %s" % (flag.name, flag.value, message))

    def _usage(self):
        main = sys.modules.get("__main__")
        doc = getattr(main, "__doc__", None) or "\nUSAGE: %s [flags]\n" % sys.argv[0]
        by_module = {}
        for name in sorted(self._flags):
            by_module.setdefault(self._modules[name], []).append(self._flags[name].help_text())
        sections = ["\n%s:\n%s" % (module, "\n".join(lines))
                    for module, lines in by_module.items()]
        return doc + ("\nflags:\n" + "".join(sections) if sections else "")

    def _define(self, flag, module):
        if flag.name in self._flags:
            first = self._flags[flag.name]
            raise DuplicateFlagError(
                "The flag '%s' is defined twice. First from %s, second from %s. Description from "
                "first occurrence: %s. Define each flag once (or give it another name)."
                % (flag.name, self._modules[flag.name], module, first.help))
        self._flags[flag.name] = flag
        self._modules[flag.name] = module

    def __getattr__(self, name):
        flag = self.__dict__["_flags"].get(name)
        if flag is None:
            raise AttributeError(name)
        if not self._parsed:
            self._unparsed_access(name)
        return flag.value

    def _unparsed_access(self, name):
        raise UnparsedFlagAccessError("Trying to access flag --%s before flags were parsed." % name)

    def __setattr__(self, name, value):
        if name not in self._flags:
            raise UnrecognizedFlagError(name)
        flag = self._flags[name]
        flag.value = value
        flag.using_default_value = False
        self._validate(flag)

    def __delattr__(self, name):
        if name not in self._flags:
            raise AttributeError(name)
        del self._flags[name]
        del self._modules[name]

    def __contains__(self, name):
        return name in self._flags

    def __getitem__(self, name):
        return self._flags[name]

    def __iter__(self):
        return iter(self._flags)

    def is_parsed(self):
        """Whether a command line was parsed (or :meth:`mark_as_parsed` called)."""
        return self._parsed

    def mark_as_parsed(self):
        """Read the flags without parsing a command line (they keep their defaults)."""
        self.__dict__["_parsed"] = True

    def unparse_flags(self):
        """Reset every flag to its default and mark the registry unparsed."""
        for flag in self._flags.values():
            flag.unparse()
        self.__dict__["_parsed"] = False

    def flag_values_dict(self):
        """``{name: value}`` of every flag."""
        return {name: flag.value for name, flag in self._flags.items()}


class _FlagValuesWrapper(FlagValues):
    """TF 1.15's ``tf.flags.FLAGS``: reading a flag before any parse parses ``sys.argv``."""

    def _unparsed_access(self, name):
        self(sys.argv)


FLAGS = _FlagValuesWrapper()


def _caller_module():
    return sys._getframe(3).f_globals.get("__file__", "<unknown>")


def _define(flag, flag_values):
    flag_values._define(flag, _caller_module())


def _parse_string(argument):
    if not isinstance(argument, str):
        raise TypeError('flag value must be a string, found "%s"' % type(argument))
    return argument


def _parse_bool(argument):
    if isinstance(argument, str) and argument.lower() in ("true", "t", "1"):
        return True
    if isinstance(argument, str) and argument.lower() in ("false", "f", "0"):
        return False
    if isinstance(argument, (bool, int)) and argument in (0, 1):
        return bool(argument)
    raise ValueError("Non-boolean argument to boolean flag: %r (use true/false, t/f or 1/0)"
                     % (argument,))


def _parse_int(argument):
    if isinstance(argument, str):
        base = 10
        if len(argument) > 2 and argument[0] == "0":
            base = {"o": 8, "x": 16, "X": 16}.get(argument[1], 10)
        return int(argument, base)
    if isinstance(argument, int) and not isinstance(argument, bool):
        return argument
    raise TypeError("Expect argument to be a string or int, found %s" % type(argument))


def _parse_float(argument):
    if isinstance(argument, (str, int, float)) and not isinstance(argument, bool):
        return float(argument)
    raise TypeError("Expect argument to be a string, int, or float, found %s" % type(argument))


def _bounded(convert, lower, upper, noun):
    """A parser that also checks ``lower <= value <= upper``, and its --help phrase."""
    if lower is None and upper is None:
        return convert, "a%s %s" % ("n" if noun[0] in "aeiou" else "", noun)
    if lower == 0 and upper is None:
        phrase = "a non-negative " + noun
    elif lower is not None and upper is not None:
        phrase = "a%s %s in the range [%s, %s]" % ("n" if noun[0] in "aeiou" else "", noun,
                                                    lower, upper)
    elif lower is not None:
        phrase = "%s >= %s" % (noun, lower)
    else:
        phrase = "%s <= %s" % (noun, upper)

    def parse(argument):
        value = convert(argument)
        if (lower is not None and value < lower) or (upper is not None and value > upper):
            raise ValueError("%s is not %s" % (value, phrase))
        return value
    return parse, phrase


def DEFINE_string(name, default, help, flag_values=FLAGS):
    """Define a string flag: ``DEFINE_string("job_name", "", "One of 'ps', 'worker'")``."""
    _define(_Flag(name, default, help, _parse_string), flag_values)


def DEFINE_boolean(name, default, help, flag_values=FLAGS):
    """Define a boolean flag, set by ``--name``, ``--noname`` or ``--name=true/false/1/0``:
    ``DEFINE_boolean("sync", False, "synchronous training")``."""
    _define(_Flag(name, default, help, _parse_bool, boolean=True), flag_values)


DEFINE_bool = DEFINE_boolean


def DEFINE_integer(name, default, help, lower_bound=None, upper_bound=None, flag_values=FLAGS):
    """Define an integer flag (``0x``/``0o`` prefixes allowed):
    ``DEFINE_integer("task_index", 0, "Index of task within the job", lower_bound=0)``."""
    parse, phrase = _bounded(_parse_int, lower_bound, upper_bound, "integer")
    _define(_Flag(name, default, help, parse, phrase), flag_values)


def DEFINE_float(name, default, help, lower_bound=None, upper_bound=None, flag_values=FLAGS):
    """Define a float flag: ``DEFINE_float("learning_rate", 0.1, "step size", lower_bound=0)``."""
    parse, phrase = _bounded(_parse_float, lower_bound, upper_bound, "number")
    _define(_Flag(name, default, help, parse, phrase), flag_values)


def DEFINE_enum(name, default, enum_values, help, flag_values=FLAGS):
    """Define a string flag restricted to ``enum_values``:
    ``DEFINE_enum("job_name", "worker", ["ps", "worker"], "the task's job")``."""
    choices = list(enum_values)
    if not choices:
        raise ValueError("DEFINE_enum(%r): enum_values must not be empty" % name)

    def parse(argument):
        if argument not in choices:
            raise ValueError("value should be one of <%s>" % "|".join(choices))
        return argument
    _define(_Flag(name, default, "<%s>: %s" % ("|".join(choices), help), parse), flag_values)


def _parse_list(argument):
    if isinstance(argument, (list, tuple)):
        return list(argument)
    if not argument:
        return []
    return [s.strip() for s in next(csv.reader([_parse_string(argument)], strict=True))]


def DEFINE_list(name, default, help, flag_values=FLAGS):
    """Define a comma-separated list flag: ``DEFINE_list("ps_hosts", [], "host:port,...")``
    (``--ps_hosts=a:1,b:2`` gives ``["a:1", "b:2"]``)."""
    _define(_Flag(name, default, help, _parse_list, "a comma separated list"), flag_values)


def DEFINE_multi_string(name, default, help, flag_values=FLAGS):
    """Define a flag that may repeat, collecting a list of strings:
    ``DEFINE_multi_string("input", None, "an input file")``; ``--input=a --input=b``."""
    _define(_Flag(name, default, help, _parse_string, multi=True), flag_values)


def DEFINE_multi_integer(name, default, help, flag_values=FLAGS):
    """Define a flag that may repeat, collecting a list of integers:
    ``DEFINE_multi_integer("port", [2222], "a port")``; ``--port=1 --port=2``."""
    _define(_Flag(name, default, help, _parse_int, "an integer", multi=True), flag_values)


def DEFINE_multi_float(name, default, help, flag_values=FLAGS):
    """Define a flag that may repeat, collecting a list of floats:
    ``DEFINE_multi_float("rate", None, "a rate")``; ``--rate=0.1 --rate=0.2``."""
    _define(_Flag(name, default, help, _parse_float, "a number", multi=True), flag_values)


def register_validator(flag_name, checker, message="Flag validation failed", flag_values=FLAGS):
    """Check ``checker(value)`` after each parse and assignment of the flag:
    ``register_validator("batch_size", lambda v: v > 0, "--batch_size must be positive")``."""
    if flag_name not in flag_values:
        raise KeyError("register_validator: no flag named %r is defined; define it first"
                       % flag_name)
    flag_values[flag_name].validators.append((checker, message))


def mark_flag_as_required(flag_name, flag_values=FLAGS):
    """Parsing fails unless the command line gives ``--flag_name`` (its default must be None):
    ``mark_flag_as_required("job_name")``."""
    register_validator(flag_name, lambda value: value is not None,
                       "Flag --%s must have a value other than None." % flag_name, flag_values)
    if flag_values[flag_name].default is not None:
        warnings.warn("Flag --%s has a non-None default value; therefore, mark_flag_as_required "
                      "will pass even if flag is not specified in the command line!" % flag_name,
                      stacklevel=2)


def mark_flags_as_required(flag_names, flag_values=FLAGS):
    """:func:`mark_flag_as_required` for each name: ``mark_flags_as_required(["a", "b"])``."""
    for name in flag_names:
        mark_flag_as_required(name, flag_values)
