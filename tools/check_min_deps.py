"""Run the test suite against the oldest dependency versions setup.cfg allows.

    python tools/check_min_deps.py                        # this Python, a fresh venv in /tmp
    python tools/check_min_deps.py --python python3.10    # another interpreter
    python tools/check_min_deps.py --venv /tmp/zps-min -- -x tests/distributed   # pytest args after --

Every ``name>=X`` of ``install_requires`` and of the ``test``, ``examples`` and ``summary`` extras
is installed as exactly ``name==X`` (the linter is left out: it does not run the tests), zps
itself from this checkout without its dependencies, and the suite runs as the README's test
command does. The floors are what setup.cfg promises: a suite that passes here keeps them honest.
Exact floors need an interpreter those versions have wheels for (numpy 1.24: Python 3.8-3.11);
on a newer Python, pip will say which one it cannot install.
"""

import argparse
import configparser
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXTRAS = ("test", "examples", "summary")
NOT_NEEDED = {"ruff"}   # lint only


def floors():
    """``["name==X", ...]``: the lower bound of every requirement the suite needs."""
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, "setup.cfg"))
    lines = cfg["options"]["install_requires"].splitlines()
    for extra in EXTRAS:
        lines += cfg["options.extras_require"].get(extra, "").splitlines()
    pins = {}
    for line in lines:
        line = line.split("#")[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*>=\s*([0-9][0-9A-Za-z.]*)", line)
        if m is None:
            raise SystemExit("setup.cfg: %r has no plain lower bound (name>=version)" % line)
        if m.group(1).lower() not in NOT_NEEDED:
            pins[m.group(1).lower()] = "%s==%s" % m.groups()
    return sorted(pins.values())


def main(argv=None):
    parser = argparse.ArgumentParser(description="test zps against its oldest allowed dependencies")
    parser.add_argument("--python", default=sys.executable, help="interpreter for the venv")
    parser.add_argument("--venv", help="venv directory to make (default: a temporary one)")
    parser.add_argument("pytest_args", nargs="*", help="arguments for pytest (after --)")
    args = parser.parse_args(argv)
    pins = floors()
    with tempfile.TemporaryDirectory(prefix="zps-min-deps-") as tmp:
        venv = args.venv or os.path.join(tmp, "venv")
        python = os.path.join(venv, "bin", "python")
        subprocess.run([args.python, "-m", "venv", venv], check=True)
        pip = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run(pip + pins, check=True)
        subprocess.run(pip + ["--no-deps", "-e", ROOT], check=True)
        versions = subprocess.run([python, "-m", "pip", "list", "--format=freeze"], check=True,
                                  capture_output=True, text=True).stdout.lower()
        print("oldest allowed versions (%s):" % subprocess.run(
            [python, "--version"], capture_output=True, text=True, check=True).stdout.strip())
        for pin in pins:
            name = pin.split("==")[0].lower()
            got = re.search(r"^%s==(\S+)$" % re.escape(name).replace("\\-", "[-_]"), versions, re.M)
            print("  %-28s installed %s" % (pin, got.group(1) if got else "?"))
        return subprocess.run([python, "-m", "pytest", *args.pytest_args], cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main())
