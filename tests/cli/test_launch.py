"""zps-launch: a whole local cluster of one script; zps: the command that dispatches to them all."""

import json
import os
import re
import signal
import sys
import textwrap

import pytest

import zps as tf
from tests.cli import alive, cli, kill_pids, run, running, wait_for_files
from zps.cli import common, launch
from zps.cli import main as zps_main
from zps.cli.launch import Launcher

# Every task runs this script with the seed's flags, like the seed's trainer. --mode picks what
# the workers do; --dir is where each task writes its pid.
SCRIPT = textwrap.dedent("""
    import argparse, json, os, sys, time
    import zps as tf
    from zps.distributed.resolvers import TFConfigClusterResolver

    p = argparse.ArgumentParser()
    for flag in ("--ps_hosts", "--worker_hosts", "--job_name", "--mode", "--dir"):
        p.add_argument(flag)
    p.add_argument("--task_index", type=int)
    FLAGS, _ = p.parse_known_args()
    with open(os.path.join(FLAGS.dir, "%s%d.pid" % (FLAGS.job_name, FLAGS.task_index)), "w") as f:
        f.write(str(os.getpid()))
    if FLAGS.job_name == "ps":
        if FLAGS.mode == "no_ps_branch":
            sys.exit(0)
        cluster = tf.train.ClusterSpec({"ps": FLAGS.ps_hosts.split(","),
                                        "worker": FLAGS.worker_hosts.split(",")})
        tf.train.Server(cluster, job_name="ps", task_index=FLAGS.task_index).join()
    elif FLAGS.mode in ("train", "no_ps_branch"):
        # A TF_CONFIG-style script when the ps comes from zps-ps, a flags-style one otherwise.
        if FLAGS.mode == "no_ps_branch":
            cluster = TFConfigClusterResolver().cluster_spec()
        else:
            cluster = tf.train.ClusterSpec({"ps": FLAGS.ps_hosts.split(","),
                                            "worker": FLAGS.worker_hosts.split(",")})
        server = tf.train.Server(cluster, job_name="worker", task_index=FLAGS.task_index)
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(float(FLAGS.task_index + 1), name="v%d" % FLAGS.task_index)
        with tf.device("/job:worker/task:%d" % FLAGS.task_index):
            doubled = v * 2.0
        with tf.Session(server.target) as sess:
            sess.run(v.initializer)
            print("result", sess.run(doubled))
        print("threads", os.environ["OMP_NUM_THREADS"],
              "task", json.dumps(json.loads(os.environ["TF_CONFIG"])["task"], sort_keys=True))
        print("to stderr", file=sys.stderr)
    elif FLAGS.mode == "fail":
        if FLAGS.task_index == 1:    # fail once worker 0 runs, so that it has to be stopped
            while not os.path.exists(os.path.join(FLAGS.dir, "worker0.pid")):
                time.sleep(0.05)
            print("giving up")
            sys.exit(3)
        time.sleep(120)
    elif FLAGS.mode == "sleep":
        time.sleep(120)
    elif FLAGS.mode == "steps":      # ~3 s of small steps against the ps
        cluster = tf.train.ClusterSpec({"ps": FLAGS.ps_hosts.split(","),
                                        "worker": FLAGS.worker_hosts.split(",")})
        server = tf.train.Server(cluster, job_name="worker", task_index=FLAGS.task_index)
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(0.0, name="v%d" % FLAGS.task_index)
        inc = tf.assign_add(v, 1.0).op
        with tf.Session(server.target) as sess:
            sess.run(v.initializer)
            for _ in range(150):
                sess.run(inc)
                time.sleep(0.02)
""")


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "trainer.py"
    path.write_text(SCRIPT)
    yield str(path)
    kill_pids(str(tmp_path))


def _launch(script, tmp_path, *flags, mode="train", ps=1, workers=2):
    return cli("launch", "--ps", ps, "--workers", workers, *flags, script, "--mode", mode,
               "--dir", tmp_path)


def _pids(tmp_path):
    return {p.stem: int(p.read_text()) for p in tmp_path.glob("*.pid")}


# -- fast -----------------------------------------------------------------------------------------

def test_seed_flags_tf_config_and_task_env():
    cluster = {"ps": ["h:1", "h:2"], "worker": ["h:3"]}
    assert common.seed_flags(cluster, "ps", 1) == ["--ps_hosts=h:1,h:2", "--worker_hosts=h:3",
                                                   "--job_name=ps", "--task_index=1"]
    assert json.loads(common.tf_config(cluster, "worker", 0))["task"] == {"type": "worker", "index": 0}
    env = common.task_env(cluster, "worker", 0, base={"OMP_NUM_THREADS": "3"}, blas_threads=2)
    assert env["OMP_NUM_THREADS"] == "3"           # the user's setting wins
    assert env["OPENBLAS_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "2"
    assert json.loads(env["TF_CONFIG"])["cluster"] == cluster and env["PYTHONUNBUFFERED"] == "1"
    assert "MKL_NUM_THREADS" not in common.task_env(cluster, "ps", 0, base={})


def test_blas_threads_share_the_cores():
    assert common.blas_threads_per_task(4, cores=16) == 4
    assert common.blas_threads_per_task(3, cores=16) == 5
    assert common.blas_threads_per_task(8, cores=2) == 1
    assert common.blas_threads_per_task(1) >= 1


def test_launcher_plans_one_address_per_task_and_the_commands():
    launcher = Launcher("train.py", ["--lr", "1"], num_ps=2, num_workers=3, ps_script=True)
    addresses = launcher.cluster["ps"] + launcher.cluster["worker"]
    assert len(set(addresses)) == 5 and all(a.startswith("127.0.0.1:") for a in addresses)
    ps0, w2 = launcher.ps[0], launcher.workers[2]
    assert launcher.command(ps0)[1:3] == ["-m", "zps.cli.ps"]
    assert launcher.command(w2) == [sys.executable, "train.py"] + common.seed_flags(
        launcher.cluster, "worker", 2) + ["--lr", "1"]
    with pytest.raises(ValueError, match="--workers must be at least 1"):
        Launcher("train.py", num_workers=0)


@pytest.mark.parametrize("flag, value, message", [
    ("--threads_per_task", "-3", "must be at least 1, got -3"),
    ("--threads_per_task", "0", "must be at least 1, got 0"),
    ("--start_timeout_secs", "-1", "must be greater than 0, got -1.0"),
    ("--start_timeout_secs", "0", "must be greater than 0, got 0.0"),
    ("--max_restarts", "-1", "must be at least 0, got -1"),
    ("--grace_period_secs", "-5", "must be at least 0, got -5.0"),
    ("--grace_period_secs", "nan", "must be at least 0, got nan"),
    ("--restart_backoff_secs", "-0.5", "must be at least 0, got -0.5"),
    ("--progress_secs", "-1", "must be at least 0, got -1.0"),
    ("--ps", "-1", "must be at least 0, got -1"),
    ("--workers", "0", "must be at least 1, got 0"),
    ("--gpus-per-worker", "-2", "must be at least 0, got -2"),
    ("--ps", "two", "'two' is not an integer"),
    ("--grace_period_secs", "soon", "'soon' is not a number"),
])
def test_launch_rejects_numbers_out_of_range(tmp_path, capsys, flag, value, message):
    script = tmp_path / "s.py"
    script.write_text("")
    with pytest.raises(SystemExit) as info:
        launch.main([flag, value, str(script)])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "zps-launch: error: argument %s" % flag in err and ": %s\n" % message in err, err


def test_launcher_checks_its_numbers_too():
    with pytest.raises(ValueError, match=r"--threads_per_task must be at least 1, got 0"):
        Launcher("train.py", threads_per_task=0)
    with pytest.raises(ValueError, match=r"--start_timeout_secs must be greater than 0, got -1"):
        Launcher("train.py", start_timeout_secs=-1)
    with pytest.raises(ValueError, match=r"--max_restarts must be at least 0, got -1"):
        Launcher("train.py", max_restarts=-1)


@pytest.mark.parametrize("host, why", [
    ("nosuchhost.invalid", "cannot bind nosuchhost.invalid: it does not resolve"),
    ("10.255.255.1", "cannot bind 10.255.255.1: it is not an address of this host"),
])
def test_launch_names_a_host_it_cannot_bind(tmp_path, capsys, host, why):
    script = tmp_path / "s.py"
    script.write_text("")
    assert launch.main(["--host", host, "--ps", "1", str(script)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("zps-launch: " + why) and err.count("\n") == 1, err
    assert "--host must be an address of this machine" in err
    with pytest.raises(OSError, match=why):
        Launcher(str(script), host=host)


def test_zps_command_dispatches(capsys):
    assert zps_main.main([]) == 2
    assert "launch" in capsys.readouterr().out
    assert zps_main.main(["frobnicate"]) == 2
    assert "unknown command 'frobnicate'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        zps_main.main(["launch", "--help"])
    assert info.value.code == 0
    assert "usage: zps launch" in capsys.readouterr().out
    assert zps_main.main(["ps", "--ps_hosts", "bad"]) == 2


def test_chief_makes_the_first_trainer_tf_configs_chief():
    launcher = Launcher("train.py", num_ps=1, num_workers=3, chief=True)
    assert [len(launcher.cluster[j]) for j in ("ps", "chief", "worker")] == [1, 1, 2]
    assert [t.name for t in launcher.workers] == ["chief:0", "worker:0", "worker:1"]
    env = common.task_env(launcher.cluster, "chief", 0, base={})
    assert json.loads(env["TF_CONFIG"])["task"] == {"type": "chief", "index": 0}
    alone = Launcher("train.py", num_ps=1, num_workers=1, chief=True)
    assert "worker" not in alone.cluster and len(alone.cluster["chief"]) == 1
    assert alone.assign_gpus(1, ["7"]) == {"chief:0": "7"}


# An Estimator program, as tf.estimator users write it: TF_CONFIG says what each task does.
ESTIMATOR_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import zps as tf

    def model_fn(features, labels, mode):
        w = tf.get_variable("w", [2, 1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(features["x"], w) - labels))
        step = tf.train.get_or_create_global_step()
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    def input_fn():
        x = np.random.RandomState(0).randn(64, 2).astype(np.float32)
        y = x @ np.array([[2.0], [-1.0]], np.float32)
        return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(16)

    config = tf.estimator.RunConfig(model_dir=sys.argv[-1], save_checkpoints_steps=10,
                                    experimental_max_worker_delay_secs=0)
    est = tf.estimator.Estimator(model_fn, config=config)
    tf.estimator.train_and_evaluate(est, tf.estimator.TrainSpec(input_fn, max_steps=30),
                                    tf.estimator.EvalSpec(input_fn, steps=1))
    print("done", config.task_type, config.task_id, config.is_chief)
""")


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_launch_chief_runs_an_estimator_cluster(tmp_path):
    script = tmp_path / "estimator_program.py"
    script.write_text(ESTIMATOR_SCRIPT)
    model_dir = tmp_path / "model"
    code, out, err = run(cli("launch", "--ps", 1, "--workers", 2, "--chief", script, model_dir),
                         timeout=100)
    assert code == 0, out + err
    lines = out.splitlines()
    assert "[chief:0] done chief 0 True" in lines and "[worker:0] done worker 0 False" in lines
    reader = tf.train.NewCheckpointReader(tf.train.latest_checkpoint(str(model_dir)))
    assert reader.get_tensor("global_step") >= 30


# -- whole clusters -------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.timeout(90)
def test_launch_runs_a_cluster_streams_prefixed_output_and_stops_the_ps(script, tmp_path):
    code, out, err = run(_launch(script, tmp_path), timeout=60)
    assert code == 0, out + err
    lines = out.splitlines()
    assert "[worker:0] result 2.0" in lines and "[worker:1] result 4.0" in lines
    assert "[worker:1] to stderr" in lines
    threads = common.blas_threads_per_task(3)
    for i in range(2):
        assert '[worker:%d] threads %d task {"index": %d, "type": "worker"}' % (i, threads, i) in lines
    assert "starting 1 ps + 2 worker task(s)" in err
    assert re.search(r"2 worker\(s\) finished in [0-9.]+ s; stopped 1 ps task\(s\)", err)
    assert not any(alive(pid) for pid in _pids(tmp_path).values())


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_launch_a_failing_worker_stops_the_others_and_exits_non_zero(script, tmp_path):
    code, out, err = run(_launch(script, tmp_path, mode="fail"), timeout=60)
    assert code == 1
    assert "[worker:1] giving up" in out
    assert "worker:1 exited with code 3; stopping the other tasks" in err
    assert "FAILED after" in err and "worker:1 exited with code 3" in err.splitlines()[-1]
    pids = _pids(tmp_path)
    assert set(pids) == {"ps0", "worker0", "worker1"}
    assert not any(alive(pid) for pid in pids.values())


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_launch_a_script_without_ps_branch_needs_ps_script(script, tmp_path):
    code, _, err = run(_launch(script, tmp_path, mode="no_ps_branch"), timeout=60)
    assert code == 1
    assert "ps:0 exited with code 0" in err and "--ps_script" in err
    code, out, err = run(_launch(script, tmp_path, "--ps_script", mode="no_ps_branch"), timeout=60)
    assert code == 0, out + err
    assert "[ps:0]" in out and "serving /job:ps/task:0" in out   # zps-ps's log, prefixed
    assert "[worker:0] result 2.0" in out and "[worker:1] result 4.0" in out


@pytest.mark.slow
@pytest.mark.timeout(90)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_launch_stops_everything_when_interrupted(script, tmp_path, sig):
    with running(_launch(script, tmp_path, "--threads_per_task", 1, mode="sleep")) as proc:
        wait_for_files([str(tmp_path / n) for n in ("ps0.pid", "worker0.pid", "worker1.pid")])
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + sig
    assert "interrupted (%s)" % sig.name in err and "stopped every task" in err
    assert not any(alive(pid) for pid in _pids(tmp_path).values())


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_launch_reports_a_missing_script_and_bad_counts(tmp_path):
    code, _, err = run(cli("launch", str(tmp_path / "missing.py")))
    assert code == 2 and "no such script" in err
    (tmp_path / "s.py").write_text("")
    code, _, err = run(cli("launch", "--workers", 0, str(tmp_path / "s.py")))
    assert code == 2 and "argument --workers: must be at least 1, got 0" in err
    assert os.path.exists(tmp_path / "s.py")


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_launch_shows_training_progress(script, tmp_path):
    code, _, err = run(_launch(script, tmp_path, "--progress_secs", 0.5, mode="steps"), timeout=60)
    assert code == 0, err
    lines = [line for line in err.splitlines() if "progress after" in line]
    assert lines, err
    assert "steps served by the ps tasks: ps:0" in lines[-1] and "steps/s" in lines[-1], lines

