"""zps-worker: runs a script as one worker task, handing it the seed's flags and TF_CONFIG."""

import json
import sys
import textwrap

import pytest

from tests.cli import cli, run, running
from zps.cli.worker import script_command

SHOW_SCRIPT = textwrap.dedent("""
    import json, os, sys
    print(json.dumps({"argv": sys.argv[1:], "tf_config": json.loads(os.environ["TF_CONFIG"]),
                      "pid": os.getpid()}))
    sys.exit(int(os.environ.get("EXIT_CODE", "0")))
""")


def test_script_command_puts_the_seed_flags_before_the_script_args():
    cluster = {"ps": ["p:1"], "worker": ["w0:2", "w1:3"]}
    assert script_command("train.py", cluster, "worker", 1, ["--lr", "0.1"]) == [
        sys.executable, "train.py", "--ps_hosts=p:1", "--worker_hosts=w0:2,w1:3",
        "--job_name=worker", "--task_index=1", "--lr", "0.1"]


@pytest.fixture
def show_script(tmp_path):
    path = tmp_path / "show.py"
    path.write_text(SHOW_SCRIPT)
    return str(path)


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_zps_worker_passes_flags_and_tf_config_and_the_exit_code(show_script):
    with running(cli("worker", "--ps_hosts", "127.0.0.1:2222,127.0.0.1:2223",
                     "--worker_hosts", "127.0.0.1:2224,127.0.0.1:2225", "--task_index", 1,
                     show_script, "--steps", 7, "--task_index", 1),
                 env={"EXIT_CODE": "5", "TF_CONFIG": ""}) as proc:
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 5, err
    shown = json.loads(out)
    assert shown["pid"] == proc.pid   # the script replaced zps-worker: signals reach it directly
    assert shown["argv"] == ["--ps_hosts=127.0.0.1:2222,127.0.0.1:2223",
                             "--worker_hosts=127.0.0.1:2224,127.0.0.1:2225",
                             "--job_name=worker", "--task_index=1", "--steps", "7", "--task_index", "1"]
    assert shown["tf_config"]["cluster"] == {"ps": ["127.0.0.1:2222", "127.0.0.1:2223"],
                                             "worker": ["127.0.0.1:2224", "127.0.0.1:2225"]}
    assert shown["tf_config"]["task"] == {"type": "worker", "index": 1}


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_zps_worker_takes_the_cluster_from_tf_config(show_script):
    config = {"cluster": {"chief": ["c:1"], "ps": ["p:2"], "worker": ["w0:3", "w1:4"]},
              "task": {"type": "chief", "index": 0}}
    code, out, err = run(cli("worker", show_script), env={"TF_CONFIG": json.dumps(config)})
    assert code == 0, err
    shown = json.loads(out)
    assert shown["argv"] == ["--ps_hosts=p:2", "--worker_hosts=w0:3,w1:4", "--job_name=chief",
                             "--task_index=0"]
    assert shown["tf_config"]["cluster"] == config["cluster"]
    assert shown["tf_config"]["task"] == {"type": "chief", "index": 0}


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_zps_worker_runs_an_evaluator_which_is_not_in_the_cluster(show_script):
    config = {"cluster": {"chief": ["127.0.0.1:41301"], "ps": ["127.0.0.1:41302"],
                          "worker": ["127.0.0.1:41303"]},
              "task": {"type": "evaluator", "index": 0}}
    code, out, err = run(cli("worker", show_script), env={"TF_CONFIG": json.dumps(config)})
    assert code == 0, err
    shown = json.loads(out)
    assert shown["argv"] == ["--ps_hosts=127.0.0.1:41302", "--worker_hosts=127.0.0.1:41303",
                             "--job_name=evaluator", "--task_index=0"]
    assert shown["tf_config"]["cluster"] == config["cluster"]
    assert shown["tf_config"]["task"] == {"type": "evaluator", "index": 0}


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_zps_worker_errors(show_script, tmp_path):
    code, _, err = run(cli("worker", show_script), env={"TF_CONFIG": ""})
    assert code == 2 and "No cluster given" in err
    code, _, err = run(cli("worker", "--worker_hosts", "w:1", "--task_index", 3, show_script))
    assert code == 2 and "job 'worker' has no task 3" in err
    code, _, err = run(cli("worker", "--worker_hosts", "w:1", str(tmp_path / "missing.py")))
    assert code == 2 and "no such script" in err
