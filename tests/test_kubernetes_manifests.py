"""docs/kubernetes: the manifests parse, agree with each other, and give every pod a valid TF_CONFIG.

Kubernetes itself cannot run here: each pod's TF_CONFIG is computed by running the pods' entry
point (start-task.sh) with the environment the manifests give that pod.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from zps.cli import common
from zps.cli import ps as ps_cli
from zps.cli import worker as worker_cli
from zps.distributed.resolvers import TFConfigClusterResolver

yaml = pytest.importorskip("yaml")

DIR = pathlib.Path(__file__).resolve().parent.parent / "docs" / "kubernetes"
SCRIPT = DIR / "start-task.sh"
IN_IMAGE_SCRIPT = "/app/start-task.sh"
NAMESPACE = "ml-team"


def _docs():
    out = {}
    for path in sorted(DIR.glob("*.yaml")):
        with open(path) as f:
            out[path.name] = [d for d in yaml.safe_load_all(f) if d is not None]
    return out


def _find(kind, name):
    for docs in _docs().values():
        for d in docs:
            if d["kind"] == kind and d["metadata"]["name"] == name:
                return d
    raise AssertionError("no %s %r in %s" % (kind, name, DIR))


def _container(workload):
    containers = workload["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def _static_env(container):
    return {e["name"]: e["value"] for e in container["env"] if "value" in e}


def _field_env(container):
    return {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]
            if "valueFrom" in e}


def _pod_tf_config(container, pod_name, job_index=None):
    """Run the container's entry point as Kubernetes would for ``pod_name``; return TF_CONFIG
    and the command it would exec."""
    command = container["command"]
    assert command[0] == IN_IMAGE_SCRIPT
    fields = {"metadata.name": pod_name, "metadata.namespace": NAMESPACE}
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    env.update(_static_env(container))
    env.update({name: fields[path] for name, path in _field_env(container).items()})
    if job_index is not None:
        env["JOB_COMPLETION_INDEX"] = str(job_index)
    printer = [sys.executable, "-c", "import json, os, sys; print(json.dumps("
               "{'tf_config': os.environ['TF_CONFIG'], 'argv': sys.argv[1:]}))"]
    result = subprocess.run(["sh", str(SCRIPT), command[1]] + printer + command[2:], env=env,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    return json.loads(out["tf_config"]), out["argv"]


pytestmark = pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX sh")


def test_every_file_parses_and_names_its_objects():
    docs = _docs()
    assert {"services.yaml", "ps-statefulset.yaml", "worker-job.yaml", "ps-stopper.yaml"} <= set(docs)
    for name, objects in docs.items():
        assert objects, name
        for d in objects:
            assert d.get("apiVersion") and d.get("kind"), name
            assert d["metadata"]["name"], name
    assert (DIR / "README.md").is_file()
    assert os.access(SCRIPT, os.X_OK)


def test_workloads_services_and_counts_agree():
    ps = _find("StatefulSet", "trainer-ps")
    workers = _find("Job", "trainer-worker")
    ps_env, worker_env = _static_env(_container(ps)), _static_env(_container(workers))
    for env in (ps_env, worker_env):
        assert env["NUM_PS"] == str(ps["spec"]["replicas"])
        assert env["NUM_WORKERS"] == str(workers["spec"]["completions"])
        assert env["PS_NAME"] == "trainer-ps" and env["WORKER_NAME"] == "trainer-worker"
    assert workers["spec"]["parallelism"] == workers["spec"]["completions"]
    assert workers["spec"]["completionMode"] == "Indexed"
    # Per-pod DNS: each workload's pods live under a headless Service of the same name.
    for workload, link in ((ps, ps["spec"]["serviceName"]),
                           (workers, workers["spec"]["template"]["spec"]["subdomain"])):
        name = workload["metadata"]["name"]
        assert link == name
        service = _find("Service", name)
        assert service["spec"]["clusterIP"] == "None"
        assert service["spec"]["publishNotReadyAddresses"] is True
        labels = workload["spec"]["template"]["metadata"]["labels"]
        assert all(labels.get(k) == v for k, v in service["spec"]["selector"].items())
        port = int(_static_env(_container(workload))["TASK_PORT"])
        assert [p["port"] for p in service["spec"]["ports"]] == [port]
        assert [p["containerPort"] for p in _container(workload)["ports"]] == [port]
        resources = _container(workload)["resources"]
        assert resources["requests"]["cpu"] and resources["limits"]["memory"]


def test_ps_stopper_scales_the_ps_statefulset_after_the_worker_job():
    job = _find("Job", "trainer-ps-stopper")
    script = " ".join(_container(job)["command"])
    assert "kubectl get job trainer-worker" in script
    assert "kubectl scale statefulset trainer-ps --replicas=0" in script
    role = _find("Role", "trainer-ps-stopper")
    resources = {r for rule in role["rules"] for r in rule["resources"]}
    assert {"jobs", "statefulsets/scale"} <= resources
    binding = _find("RoleBinding", "trainer-ps-stopper")
    assert binding["subjects"][0]["name"] == job["spec"]["template"]["spec"]["serviceAccountName"]


def _all_pods():
    ps = _find("StatefulSet", "trainer-ps")
    workers = _find("Job", "trainer-worker")
    pods = [("ps", i, "trainer-ps-%d" % i, None, _container(ps)) for i in range(ps["spec"]["replicas"])]
    pods += [("worker", i, "trainer-worker-%d-x7k2p" % i, i, _container(workers))
             for i in range(workers["spec"]["completions"])]
    return pods


def test_every_pod_gets_a_valid_tf_config(monkeypatch):
    clusters = []
    for job, index, pod_name, job_index, container in _all_pods():
        tf_config, argv = _pod_tf_config(container, pod_name, job_index)
        monkeypatch.setenv("TF_CONFIG", json.dumps(tf_config))
        resolver = TFConfigClusterResolver()
        spec = resolver.cluster_spec()
        assert (resolver.task_type, resolver.task_id) == (job, index)
        assert spec.num_tasks("ps") == 2 and spec.num_tasks("worker") == 2
        # The pod's own address is its per-pod DNS name under its job's headless Service.
        service = "trainer-" + job
        assert spec.task_address(job, index) == "%s-%d.%s.%s.svc.cluster.local:2222" % (
            service, index, service, NAMESPACE)
        assert resolver.master(rpc_layer="grpc") == "grpc://" + spec.task_address(job, index)
        clusters.append(spec.as_dict())
        # The command the pod execs accepts that TF_CONFIG.
        if job == "ps":
            assert argv[:3] == ["zps-ps", "--bind_address", "0.0.0.0:2222"]
            args = ps_cli.build_parser().parse_args(argv[1:])
            assert args.bind_address == "0.0.0.0:2222"
            assert common.resolve_task(args, default_job="ps") == (spec.as_dict(), "ps", index)
        else:
            assert argv[:2] == ["zps-worker", "/app/trainer.py"]
            args = worker_cli.build_parser().parse_args(argv[1:])
            assert args.script == "/app/trainer.py" and "--checkpoint_dir" in args.script_args
            assert common.resolve_task(args, default_job="worker") == (spec.as_dict(), "worker", index)
    assert all(c == clusters[0] for c in clusters), "every pod must see the same cluster"


def test_start_task_refuses_a_bad_ordinal():
    container = _container(_find("StatefulSet", "trainer-ps"))
    env = dict(_static_env(container), PATH=os.environ.get("PATH", "/usr/bin:/bin"))
    for extra, needle in (({"POD_NAME": "trainer-ps-5"}, "only 2 ps tasks"),
                          ({"POD_NAME": "trainer-ps-x"}, "cannot tell this pod's task index")):
        result = subprocess.run(["sh", str(SCRIPT), "ps", "true"], env=dict(env, **extra),
                                capture_output=True, text=True, timeout=30)
        assert result.returncode == 2 and needle in result.stderr
