"""``zps-launch``: run a whole cluster (N ps + M workers) of one training script on this machine.

    zps-launch --ps 2 --workers 2 trainer.py --train_steps 1000

Every task runs ``python trainer.py --ps_hosts=.. --worker_hosts=.. --job_name=.. --task_index=..
[script args]`` with ``TF_CONFIG`` set too, on free ports of ``--host``, as the seed's trainer is
launched by hand (its ps tasks call ``server.join()``; ``--ps_script`` serves them with
``zps-ps`` instead, for scripts without a ps branch; ``--chief`` runs the first trainer as
TF_CONFIG's ``chief`` task, the layout ``tf.estimator`` expects). Each line a task prints comes out prefixed
(``[worker:0] ...``). When every worker has exited 0 the ps tasks (which never exit, as in TF1)
are stopped and zps-launch exits 0. If a task fails, the others are stopped and zps-launch exits 1
naming it (with ``--restart``, it is first started again, up to ``--max_restarts`` times: the
workers' MonitoredTrainingSession recovers from the last checkpoint). Ctrl-C, SIGTERM, a hang-up
(the terminal closed) or the closing of zps-launch's output (``| head``) stops everything:
each task's whole process group, children the task left behind included. On Linux the tasks also
die with zps-launch if it is killed outright (kill -9), and a guard process (zps/cli/guard.py)
then stops what they started. BLAS/OpenMP threads are limited per task
so the tasks share the cores instead of oversubscribing them (unless the environment already sets
them).
"""

import argparse
import ctypes
import math
import os
import signal
import subprocess
import sys
import threading
import time

from zps.cli import common
from zps.transport.ports import free_ports, wait_for_port

__all__ = ["main", "Launcher"]

POLL_INTERVAL_S = 0.05
READER_JOIN_S = 1.0   # what the output of a stopped task may still take to arrive
EXIT_FAILED = 1
PS_HINT = ("a ps task must serve until it is stopped (does the script call server.join() for "
           "--job_name=ps? otherwise pass --ps_script)")
PS_KILLED_HINT = "something outside zps-launch killed it (out of memory? by hand?)"
# ClusterSpec's error (TF1's text) when a seed-style script looks up --job_name=chief.
NO_CHIEF_JOB = "No such job in cluster: 'chief'"
CHIEF_HINT = ("with --chief the first trainer runs as --job_name=chief, but TF1's --ps_hosts/"
              "--worker_hosts flags have no chief list, so a script that builds its cluster from "
              "them finds no chief job: --chief needs a script that reads TF_CONFIG "
              "(tf.estimator, TFConfigClusterResolver); without --chief, worker 0 is the chief")
STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")   # those that exist here stop every task
INTERRUPT_REASONS = {signal.SIGPIPE: "SIGPIPE: the output was closed"}


def _load_prctl():
    """libc's prctl where there is one (Linux), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None).prctl   # the process's own symbols: libc's included
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()   # looked up before any fork: the child must not load libraries
_PR_SET_PDEATHSIG = 1
_SIGKILL = int(signal.SIGKILL)


def _die_with(parent_pid):
    """A ``preexec_fn``: SIGKILL this child when the thread that forked it ends (Linux's
    parent-death signal; kept across exec), and exit at once if the parent is already gone."""
    def preexec():   # between fork and exec: no imports or library loading (locks of threads)
        _PRCTL(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)
        if os.getppid() != parent_pid:   # it died before the signal was set up
            os._exit(1)
    return preexec if _PRCTL is not None else None


def _check_range(value, minimum, strict=False):
    """None if ``value`` is a number >= ``minimum`` (> when ``strict``), else what is wrong."""
    if math.isnan(value) or value < minimum or (strict and value == minimum):
        return "must be %s %s, got %s" % ("greater than" if strict else "at least", minimum, value)
    return None


def _number(kind, minimum, strict=False):
    """An argparse ``type``: a ``kind`` (int or float) in range, else an argparse error."""
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError("%r is not %s" % (
                text, "an integer" if kind is int else "a number")) from None
        problem = _check_range(value, minimum, strict)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value
    parse.__name__ = kind.__name__   # argparse names the type in some messages
    return parse


def _describe_exit(code):
    if code is not None and code < 0:
        try:
            return "was killed by signal %s" % signal.Signals(-code).name
        except ValueError:
            return "was killed by signal %d" % -code
    return "exited with code %s" % code


class _Task:
    """One task's process and the thread that streams its output."""

    def __init__(self, job, index, address):
        self.job, self.index, self.address = job, index, address
        self.name = "%s:%d" % (job, index)
        self.proc = None
        self.reader = None
        self.restarts = 0          # times --restart started this task again
        self.restart_at = None     # when the pending restart is due (monotonic), or None
        self.no_chief_job = False  # its output says the script found no chief job (--chief)

    def returncode(self):
        return self.proc.poll() if self.proc is not None else None


class _Guard:
    """zps-launch's end of zps/cli/guard.py: a process in its own session that stops the tasks'
    process groups should zps-launch die without stopping them (kill -9). Without one (it could
    not start) the tasks still die with zps-launch, only what they started does not."""

    def __init__(self, grace_secs):
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "guard.py")
        try:
            self.proc = subprocess.Popen([sys.executable, "-I", "-S", path, str(os.getpid()),
                                          repr(float(grace_secs))],
                                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                         start_new_session=True, text=True, bufsize=1)
        except OSError as e:
            self.proc = None
            self.problem = str(e)

    def tell(self, line):
        if self.proc is None:
            return
        try:
            self.proc.stdin.write(line + "\n")
        except (OSError, ValueError):   # it was killed: the tasks' parent-death signal remains
            self.proc = None

    def close(self):
        """zps-launch ends normally: the guard exits without stopping anything."""
        if self.proc is None:
            return
        self.tell("exit")
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=READER_JOIN_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


class Launcher:
    """Runs the tasks of one local cluster; ``run()`` returns zps-launch's exit code."""

    def __init__(self, script, script_args=(), num_ps=1, num_workers=1, host="127.0.0.1",
                 ps_script=False, threads_per_task=None, grace_period_secs=5.0,
                 start_timeout_secs=60.0, out=None, err=None, progress_secs=10.0,
                 restart=False, max_restarts=3, restart_backoff_secs=1.0, chief=False):
        for flag, value, minimum, strict in (
                ("workers", num_workers, 1, False), ("ps", num_ps, 0, False),
                ("threads_per_task", 1 if threads_per_task is None else threads_per_task, 1, False),
                ("grace_period_secs", grace_period_secs, 0, False),
                ("start_timeout_secs", start_timeout_secs, 0, True),
                ("progress_secs", progress_secs, 0, False), ("max_restarts", max_restarts, 0, False),
                ("restart_backoff_secs", restart_backoff_secs, 0, False)):
            problem = _check_range(value, minimum, strict)
            if problem:
                raise ValueError("--%s %s" % (flag, problem))
        self.script, self.script_args = script, list(script_args)
        self.ps_script = ps_script
        self.grace_period_secs = grace_period_secs
        self.start_timeout_secs = start_timeout_secs
        self.progress_secs = progress_secs
        self.restart, self.max_restarts = restart, max_restarts
        self.restart_backoff_secs = restart_backoff_secs
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        if ":" in host and not host.startswith("["):
            host = "[%s]" % host   # an IPv6 address: bracketed in host:port (TF1's form)
        ports = iter(free_ports(num_ps + num_workers, host))   # OSError naming a bad host
        self.cluster = {}
        if num_ps:
            self.cluster["ps"] = ["%s:%d" % (host, next(ports)) for _ in range(num_ps)]
        # --chief: the first trainer is the "chief" task of TF_CONFIG (tf.estimator's layout),
        # the others workers 0..M-2; otherwise worker 0 is the chief, as in the seed's trainer.
        trainers = ["%s:%d" % (host, next(ports)) for _ in range(num_workers)]
        if chief:
            self.cluster["chief"] = trainers[:1]
        if trainers[int(chief):]:
            self.cluster["worker"] = trainers[int(chief):]
        self.host = host
        self.ps = [_Task("ps", i, a) for i, a in enumerate(self.cluster.get("ps", []))]
        self.workers = [_Task(job, i, a) for job in ("chief", "worker")
                        for i, a in enumerate(self.cluster.get(job, []))]
        self.threads_per_task = threads_per_task or common.blas_threads_per_task(num_ps + num_workers)
        self._lock = threading.Lock()
        self._interrupt = None   # the signal that asked us to stop (SIGPIPE: our output closed)
        self._started = None
        self._output_lost = False   # our stdout was closed: the tasks' output is discarded
        self._guard = None   # a _Guard while run() runs

    # -- output ----------------------------------------------------------------------------------
    def say(self, message):
        with self._lock:
            self._write(self.out, None)
            try:
                self.err.write("zps-launch: %s\n" % message)
                self.err.flush()
            except (OSError, ValueError):
                pass   # stderr is gone too (a closed terminal): nobody is left to tell

    def _write(self, stream, text):
        """Write ``text`` (None: just flush) to our stdout; once it is closed (``| head`` has
        exited), discard the output from then on and stop every task, as SIGPIPE stops a
        pipeline. Called with the lock held."""
        if self._output_lost:
            return
        try:
            if text is not None:
                stream.write(text)
            stream.flush()
        except (OSError, ValueError):
            self._output_lost = True
            if self._interrupt is None:
                self._interrupt = signal.SIGPIPE
            try:   # what is still buffered, and any later write, goes nowhere without an error
                fd = stream.fileno()
            except (OSError, ValueError):
                return   # not a file (a test's StringIO): nothing is left to flush into a pipe
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, fd)
            os.close(devnull)

    def _stream(self, task):
        """Copy a task's output, prefixed, to our stdout. It keeps reading after our stdout is
        gone: a task must never block on a full pipe."""
        prefix = "[%s] " % task.name
        for raw in iter(task.proc.stdout.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if task.job == "chief" and NO_CHIEF_JOB in line:
                task.no_chief_job = True
            with self._lock:
                self._write(self.out, prefix + line + "\n")
        task.proc.stdout.close()

    # -- processes -------------------------------------------------------------------------------
    def command(self, task):
        flags = common.seed_flags(self.cluster, task.job, task.index)
        if task.job == "ps" and self.ps_script:
            return [sys.executable, "-m", "zps.cli.ps"] + flags
        return [sys.executable, self.script] + flags + self.script_args

    def _spawn(self, task):
        env = common.task_env(self.cluster, task.job, task.index, blas_threads=self.threads_per_task)
        env.update(self.extra_env)   # --curve: the throwaway cluster key
        env.update(self.gpu_env(task))   # --gpus-per-worker
        # Own session: a Ctrl-C in the terminal reaches zps-launch only, which stops the tasks.
        # The parent-death signal fires when the forking *thread* ends: every task is started
        # by the thread of run(), which returns only once they are stopped.
        task.proc = subprocess.Popen(self.command(task), env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True, preexec_fn=_die_with(os.getpid()))
        if self._guard is not None:
            self._guard.tell("+%d" % task.proc.pid)
        task.reader = threading.Thread(target=self._stream, args=(task,), daemon=True,
                                       name="zps-launch-%s" % task.name)
        task.reader.start()

    @staticmethod
    def _own_group(task):
        """Whether the process group named by the task's pid is still the task's: once its
        leader is reaped, a live process with that pid is another one (a group keeps its id
        from being reused only while it has members)."""
        if task.proc.poll() is None:
            return True
        try:
            os.kill(task.proc.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            pass
        return False

    def _signal_group(self, task, sig):
        """Signal the task's whole process group, its leader exited or not."""
        if not self._own_group(task):
            return
        try:
            os.killpg(task.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _forget_group(self, task):
        """The guard need not look after the task's group any more (it was stopped)."""
        if self._guard is not None:
            self._guard.tell("-%d" % task.proc.pid)

    def _running(self, task):
        """Whether the task or a process it started (still in its group) runs."""
        return task.proc.poll() is None or (self._own_group(task)
                                            and _group_runs(task.proc.pid))

    def stop(self, tasks):
        """SIGTERM the tasks' whole process groups (children of a task that already exited
        included), SIGKILL what still runs after the grace period, and reap them."""
        started = [t for t in tasks if t.proc is not None]
        for t in started:
            self._signal_group(t, signal.SIGTERM)
        deadline = time.monotonic() + self.grace_period_secs
        while any(self._running(t) for t in started) and time.monotonic() < deadline:
            time.sleep(POLL_INTERVAL_S)
        for t in started:
            if self._running(t):
                self.say("%s did not stop within %.0f s of SIGTERM: killing %s"
                         % (t.name, self.grace_period_secs, "it" if t.proc.poll() is None
                            else "the processes it left behind"))
                self._signal_group(t, signal.SIGKILL)
        for t in started:
            t.proc.wait()
            self._forget_group(t)
            if t.reader is not None:   # EOF once its group is gone; a process that left the
                t.reader.join(timeout=READER_JOIN_S)   # group may hold the pipe: not waited for

    def interrupt(self, signum, frame=None):
        """Signal handler: stop everything (Ctrl-C, SIGTERM, SIGHUP)."""
        self._interrupt = signum

    # -- --gpus-per-worker -----------------------------------------------------------------------
    gpu_slices = None   # trainer task name -> its CUDA_VISIBLE_DEVICES, once assign_gpus ran

    def assign_gpus(self, gpus_per_worker, gpus=None):
        """Give worker i the GPUs ``gpus[i*K:(i+1)*K]`` (K = ``gpus_per_worker``) through its
        ``CUDA_VISIBLE_DEVICES`` (so it sees them as /gpu:0..K-1); ps tasks see none. ``gpus``:
        the GPU ids to hand out (``--gpus``), by default this process's CUDA_VISIBLE_DEVICES or
        every GPU cupy sees. Raises ValueError when there are not enough."""
        if gpus_per_worker < 0:
            raise ValueError("--gpus-per-worker must be >= 0, got %d" % gpus_per_worker)
        if not gpus_per_worker:
            return {}
        source = "--gpus"
        if gpus is None:
            gpus, source = available_gpus()
        gpus = [str(g).strip() for g in gpus if str(g).strip()]
        if len(set(gpus)) != len(gpus):
            raise ValueError("--gpus lists a GPU twice: %s" % ",".join(gpus))
        need = gpus_per_worker * len(self.workers)
        if need > len(gpus):
            raise ValueError(
                "--gpus-per-worker %d for %d worker(s) needs %d GPU(s), but only %d %s available"
                "%s; pass --gpus with the GPU ids to use, or fewer --workers / --gpus-per-worker"
                % (gpus_per_worker, len(self.workers), need, len(gpus),
                   "is" if len(gpus) == 1 else "are",
                   " (%s from %s)" % (",".join(gpus), source) if gpus else " (%s)" % source))
        self.gpu_slices = {t.name: ",".join(gpus[i * gpus_per_worker:(i + 1) * gpus_per_worker])
                           for i, t in enumerate(self.workers)}
        return self.gpu_slices

    def gpu_env(self, task):
        if self.gpu_slices is None:
            return {}
        return {"CUDA_VISIBLE_DEVICES": self.gpu_slices.get(task.name, "")}

    # -- the run ---------------------------------------------------------------------------------
    # -- --curve ---------------------------------------------------------------------------------
    extra_env = {}
    keys_dir = None
    _progress_transport = None

    def enable_curve(self):
        """--curve: a throwaway cluster keypair (in a private temporary directory, removed by
        ``close()``) that every task gets through ZPS_CURVE_SECRET_KEY_FILE; returns its dir."""
        import tempfile

        from zps.transport import endpoint, security
        self.keys_dir = tempfile.mkdtemp(prefix="zps-launch-keys-")   # mode 0700
        _, secret_file = security.create_keypair(self.keys_dir, "cluster")
        # Inherited settings of another cluster would make the tasks distrust each other.
        self.extra_env = {security.SECRET_KEY_ENV: secret_file, security.SERVER_KEY_ENV: "",
                          security.ALLOWED_KEYS_ENV: ""}
        self._progress_transport = endpoint.Transport(
            curve=security.CurveConfig.from_files(secret_file), name="zps-launch-io")
        return self.keys_dir

    def close(self):
        """Forget the --curve keys (after the tasks are stopped)."""
        import shutil
        if self._progress_transport is not None:
            self._progress_transport.close()
            self._progress_transport = None
        if self.keys_dir is not None:
            shutil.rmtree(self.keys_dir, ignore_errors=True)
            self.keys_dir = None

    def run(self):
        self._started = time.monotonic()
        all_tasks = self.ps + self.workers
        self.say("starting %d ps + %d worker task(s) of %s on %s (%d BLAS thread(s) per task): %s"
                 % (len(self.ps), len(self.workers), self.script, self.host, self.threads_per_task,
                    ", ".join("%s=%s" % (t.name, t.address) for t in all_tasks)))
        self._guard = _Guard(self.grace_period_secs)
        if self._guard.proc is None:
            self.say("could not start the guard that stops what the tasks started should "
                     "zps-launch be killed (%s); going on without it" % self._guard.problem)
        try:
            try:
                failure = self._start_ps()
                if failure is None:
                    for t in self.workers:
                        self._spawn(t)
                    failure = self._watch()
            except BaseException:
                self.stop(all_tasks)
                raise
            self.stop(all_tasks)
        finally:
            self._guard.close()
            self._guard = None
        elapsed = time.monotonic() - self._started
        if failure is None:
            self.say("%d worker(s) finished in %.1f s; stopped %d ps task(s)"
                     % (len(self.workers), elapsed, len(self.ps)))
            return 0
        if self._interrupt is not None:
            self.say("interrupted (%s) after %.1f s: stopped every task"
                     % (INTERRUPT_REASONS.get(self._interrupt, signal.Signals(self._interrupt).name),
                        elapsed))
            return 128 + self._interrupt
        self.say("FAILED after %.1f s: %s" % (elapsed, failure))
        return EXIT_FAILED

    def _start_ps(self):
        """Start the ps tasks and wait until each serves (None) or say why one does not."""
        for t in self.ps:
            self._spawn(t)
        deadline = time.monotonic() + self.start_timeout_secs
        for t in self.ps:
            port = int(t.address.rsplit(":", 1)[1])
            while True:
                if self._interrupt is not None:
                    return "interrupted"
                try:
                    wait_for_port(self.host, port, min(1.0, deadline - time.monotonic()), t.proc)
                    break
                except RuntimeError:
                    code = t.returncode()
                    return "%s %s before serving at %s: %s" % (
                        t.name, _describe_exit(code), t.address,
                        PS_KILLED_HINT if code is not None and code < 0 else PS_HINT)
                except TimeoutError:
                    if time.monotonic() >= deadline:
                        return "%s is not serving at %s after %.0f s" % (
                            t.name, t.address, self.start_timeout_secs)
        return None

    def _watch(self):
        """Wait until every worker succeeded (None) or something failed (a message)."""
        next_progress = time.monotonic() + self.progress_secs if self.progress_secs > 0 else None
        last = (time.monotonic(), None)
        while True:
            if next_progress is not None and time.monotonic() >= next_progress:
                next_progress += self.progress_secs
                last = self._report_progress(*last)
            if self._interrupt is not None:
                return "interrupted"
            for t in self.workers:
                code = t.returncode()
                if code not in (None, 0) and not self._supervise(t, code):
                    return self._failed(t, code)
            for t in self.ps:
                code = t.returncode()
                if code is not None and not self._supervise(t, code):
                    return self._failed(t, code, hint=" while workers were running: "
                                        + self._ps_hint(t, code))
            if all(t.returncode() == 0 for t in self.workers):
                return None
            time.sleep(POLL_INTERVAL_S)

    def _report_progress(self, then, served_then):
        """One line of progress from the ps tasks' Status (steps served, rate); returns the new
        reference point. Tasks that do not answer within a second are left out."""
        from zps.transport.endpoint import default_transport
        transport = self._progress_transport or default_transport()
        futures = [(t, transport.request(t.address, "Status", {}, timeout=1.0)) for t in self.ps]
        served = {}
        for t, f in futures:
            try:
                served[t.name] = int(f.result(timeout=2.0).body.get("steps_served", 0))
            except Exception:  # noqa: BLE001 - progress is best effort; failures are watched
                continue
        now = time.monotonic()
        if served:
            total = max(served.values())
            rate = "" if served_then is None else ", %.0f steps/s" % (
                (total - served_then) / max(now - then, 1e-9))
            self.say("progress after %.0f s: steps served by the ps tasks: %s%s"
                     % (now - self._started, ", ".join("%s %d" % kv for kv in served.items()),
                        rate))
            return now, total
        return then, served_then

    def _supervise(self, task, code):
        """--restart: start a task that died abnormally again (same address and flags) after a
        back-off doubling from restart_backoff_secs, at most max_restarts times; True while the
        task is (to be) restarted, False when it is not supervised or out of restarts."""
        if not self.restart or task.restarts >= self.max_restarts:
            return False
        now = time.monotonic()
        if task.restart_at is None:
            delay = self.restart_backoff_secs * 2 ** task.restarts
            task.restart_at = now + delay
            self.say("%s %s; restarting it in %.1f s (restart %d of %d)"
                     % (task.name, _describe_exit(code), delay, task.restarts + 1, self.max_restarts))
        elif now >= task.restart_at:
            self._signal_group(task, signal.SIGKILL)   # what the dead one left behind
            self._forget_group(task)
            if task.reader is not None:
                task.reader.join(timeout=READER_JOIN_S)
            task.restarts += 1
            task.restart_at = None
            self._spawn(task)
            self.say("restarted %s at %s (pid %d)" % (task.name, task.address, task.proc.pid))
        return True

    def _ps_hint(self, task, code):
        """Why a ps that was serving may have ended, and what to do about it."""
        if code >= 0:   # it returned by itself
            return PS_HINT
        if self.restart:
            return "%s; it was restarted %d time(s), all that --max_restarts allows" % (
                PS_KILLED_HINT, task.restarts)
        return ("%s; pass --restart to start a ps that dies again at its address (the workers' "
                "MonitoredTrainingSession recovers from the last checkpoint)" % PS_KILLED_HINT)

    def _failed(self, task, code, hint=""):
        if task.job == "chief" and task.reader is not None:
            task.reader.join(timeout=READER_JOIN_S)   # its last lines (the traceback) say why
            if task.no_chief_job:
                hint += ": " + CHIEF_HINT
        message = "%s %s%s" % (task.name, _describe_exit(code), hint)
        self.say("%s; stopping the other tasks" % message)
        return message


def _group_runs(pgid):
    """Whether a process of group ``pgid`` runs; zombies (dead, waiting for a parent that may
    never reap them: an orphan's init in a container) do not count, where /proc tells."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False   # not ours to stop
    try:
        names = os.listdir("/proc")
    except OSError:
        return True
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                fields = f.read().rpartition(b")")[2].split()
        except OSError:
            continue   # it just ended
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


def available_gpus():
    """``(gpu ids, where they came from)``: CUDA_VISIBLE_DEVICES when set, else the GPUs cupy
    sees (none without cupy)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [g for g in visible.split(",") if g.strip()], "CUDA_VISIBLE_DEVICES"
    from zps.framework.device import visible_gpu_count
    n = visible_gpu_count()
    return [str(i) for i in range(n)], "the GPUs cupy sees" if n else \
        "no GPU is visible: cupy is missing or sees none"


def build_parser(prog="zps-launch"):
    parser = argparse.ArgumentParser(
        prog=prog, description="Run N ps + M worker tasks of a training script on this machine, "
        "each with the seed's flags (--ps_hosts --worker_hosts --job_name --task_index) and "
        "TF_CONFIG; stream their output; stop the ps tasks when the workers are done.")
    parser.add_argument("--ps", type=_number(int, 0), default=1,
                        help="number of ps tasks (default 1)")
    parser.add_argument("--workers", type=_number(int, 1), default=1,
                        help="number of worker tasks (default 1)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address of this machine the tasks listen on (default 127.0.0.1)")
    parser.add_argument("--chief", action="store_true",
                        help="run the first of the --workers as TF_CONFIG's \"chief\" task (the "
                        "cluster layout tf.estimator.train_and_evaluate expects) and the others as "
                        "workers 0..M-2. Only for scripts that read TF_CONFIG (tf.estimator, "
                        "TFConfigClusterResolver): TF1's --ps_hosts/--worker_hosts flags have no "
                        "chief list, so a script built on them cannot place --job_name=chief")
    parser.add_argument("--ps_script", action="store_true",
                        help="serve the ps tasks with zps-ps instead of running the script")
    parser.add_argument("--threads_per_task", type=_number(int, 1), default=None,
                        help="BLAS/OpenMP threads per task, at least 1 (default: cores / tasks)")
    parser.add_argument("--grace_period_secs", type=_number(float, 0), default=5.0,
                        help="time a task gets to exit after SIGTERM before it is killed "
                        "(default 5; 0: at once)")
    parser.add_argument("--start_timeout_secs", type=_number(float, 0, strict=True), default=60.0,
                        help="time a ps task gets to start serving (default 60)")
    parser.add_argument("--progress_secs", type=_number(float, 0), default=10.0,
                        help="print the ps tasks' steps served every this many seconds (0: off)")
    parser.add_argument("--restart", action="store_true",
                        help="supervise the tasks: start a task that died abnormally (a ps that "
                        "exited, a worker that failed) again at its address, up to --max_restarts "
                        "times with a doubling back-off; MonitoredTrainingSession recovers")
    parser.add_argument("--max_restarts", type=_number(int, 0), default=3,
                        help="restarts allowed per task with --restart (default 3)")
    parser.add_argument("--restart_backoff_secs", type=_number(float, 0), default=1.0,
                        help="wait before the first restart of a task; doubles each time")
    parser.add_argument("--curve", action="store_true",
                        help="authenticate and encrypt the cluster's traffic with CURVE, using a "
                        "throwaway cluster keypair made for this run (see zps keygen for keys "
                        "of your own, given with the ZPS_CURVE_* variables)")
    parser.add_argument("--gpus-per-worker", "--gpus_per_worker", dest="gpus_per_worker",
                        type=_number(int, 0), default=0, metavar="K",
                        help="give each worker task K GPUs of its own (its CUDA_VISIBLE_DEVICES: "
                        "it sees them as /gpu:0..K-1); ps tasks get none")
    parser.add_argument("--gpus", default=None, metavar="IDS",
                        help="comma-separated GPU ids to share out with --gpus-per-worker "
                        "(default: CUDA_VISIBLE_DEVICES, else every GPU cupy sees)")
    parser.add_argument("script", help="the Python training script")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments for the script")
    return parser


def main(argv=None, prog="zps-launch"):
    args = build_parser(prog).parse_args(argv)
    if not os.path.isfile(args.script):
        print("%s: no such script: %s" % (prog, args.script), file=sys.stderr)
        return 2
    try:
        launcher = Launcher(args.script, args.script_args, num_ps=args.ps, num_workers=args.workers,
                            host=args.host, ps_script=args.ps_script,
                            threads_per_task=args.threads_per_task,
                            grace_period_secs=args.grace_period_secs,
                            start_timeout_secs=args.start_timeout_secs,
                            progress_secs=args.progress_secs, restart=args.restart,
                            max_restarts=args.max_restarts,
                            restart_backoff_secs=args.restart_backoff_secs, chief=args.chief)
    except ValueError as e:
        print("%s: %s" % (prog, e), file=sys.stderr)
        return 2
    except OSError as e:   # --host is not an address of this machine
        print("%s: %s; --host must be an address of this machine (e.g. 127.0.0.1)"
              % (prog, e.strerror or e), file=sys.stderr)
        return 2
    try:
        slices = launcher.assign_gpus(args.gpus_per_worker,
                                      None if args.gpus is None else args.gpus.split(","))
    except ValueError as e:
        print("%s: %s" % (prog, e), file=sys.stderr)
        return 2
    if slices:
        launcher.say("GPUs (CUDA_VISIBLE_DEVICES): %s; ps tasks: none" % ", ".join(
            "%s=%s" % kv for kv in slices.items()))
    if args.curve:
        launcher.enable_curve()
    previous = {sig: signal.signal(sig, launcher.interrupt)
                for sig in (getattr(signal, name) for name in STOP_SIGNALS if hasattr(signal, name))}
    try:
        return launcher.run()
    finally:
        launcher.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


if __name__ == "__main__":
    sys.exit(main())
