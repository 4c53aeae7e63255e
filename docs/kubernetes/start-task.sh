#!/bin/sh
# start-task.sh TYPE COMMAND [ARGS...]: set TF_CONFIG for this pod's task, then exec COMMAND.
#
# The task index is the pod's ordinal: JOB_COMPLETION_INDEX in an Indexed Job, otherwise the
# number after the last '-' of POD_NAME (a StatefulSet pod, trainer-ps-1 -> 1; POD_NAME comes
# from the downward API). Every task's address is its stable per-pod DNS name under the
# job's headless Service: <job>-<i>.<service>.<namespace>.svc.<cluster domain>:<port>.
#
# Environment: NUM_PS, NUM_WORKERS (required); PS_NAME, WORKER_NAME (StatefulSet/Job name, equal
# to its headless Service's name; default trainer-ps, trainer-worker); NAMESPACE (default
# "default"); CLUSTER_DOMAIN (default cluster.local); TASK_PORT (default 2222).
set -eu

if [ "$#" -lt 2 ]; then
    echo "usage: start-task.sh ps|worker COMMAND [ARGS...]" >&2
    exit 2
fi
TASK_TYPE="$1"
shift
: "${NUM_PS:?NUM_PS (number of ps tasks) must be set}"
: "${NUM_WORKERS:?NUM_WORKERS (number of worker tasks) must be set}"
PS_NAME="${PS_NAME:-trainer-ps}"
WORKER_NAME="${WORKER_NAME:-trainer-worker}"
NAMESPACE="${NAMESPACE:-default}"
CLUSTER_DOMAIN="${CLUSTER_DOMAIN:-cluster.local}"
TASK_PORT="${TASK_PORT:-2222}"

if [ -n "${JOB_COMPLETION_INDEX:-}" ]; then
    INDEX="$JOB_COMPLETION_INDEX"
else
    NAME="${POD_NAME:-$(hostname)}"
    INDEX="${NAME##*-}"
fi
case "$INDEX" in
    ''|*[!0-9]*)
        echo "start-task.sh: cannot tell this pod's task index (JOB_COMPLETION_INDEX='${JOB_COMPLETION_INDEX:-}'," \
             "POD_NAME='${POD_NAME:-}')" >&2
        exit 2;;
esac
case "$TASK_TYPE" in
    ps) COUNT="$NUM_PS";;
    worker) COUNT="$NUM_WORKERS";;
    *) echo "start-task.sh: task type must be ps or worker, got '$TASK_TYPE'" >&2; exit 2;;
esac
if [ "$INDEX" -ge "$COUNT" ]; then
    echo "start-task.sh: $TASK_TYPE index $INDEX but only $COUNT $TASK_TYPE tasks (NUM_PS/NUM_WORKERS)" >&2
    exit 2
fi

# hosts NAME COUNT: the JSON list of the COUNT tasks' addresses.
hosts() {
    i=0
    out=""
    while [ "$i" -lt "$2" ]; do
        out="$out${out:+, }\"$1-$i.$1.$NAMESPACE.svc.$CLUSTER_DOMAIN:$TASK_PORT\""
        i=$((i + 1))
    done
    printf '[%s]' "$out"
}

TF_CONFIG=$(printf '{"cluster": {"ps": %s, "worker": %s}, "task": {"type": "%s", "index": %d}}' \
    "$(hosts "$PS_NAME" "$NUM_PS")" "$(hosts "$WORKER_NAME" "$NUM_WORKERS")" "$TASK_TYPE" "$INDEX")
export TF_CONFIG
echo "start-task.sh: /job:$TASK_TYPE/task:$INDEX TF_CONFIG=$TF_CONFIG" >&2
exec "$@"
