"""Dataflow execution for plans with asynchronous ops (``_Recv``, blocking queue ops).

A straight topological loop would block inside the first Recv even when other ops could run (and
two partitions that exchange tensors both ways would deadlock). Here an op runs when its inputs
are ready; an asynchronous op is started with a ``done`` callback and the loop keeps running other
ready ops, waiting only when nothing else can run. Before each wait the step's pending sends are
flushed (``ctx.extras["flush"]``), so the tensors sent in one wave travel in one message per task.
"""

import collections
import queue


def dependencies(step_ops):
    """For each step: the steps that wait on it, and how many steps it waits on."""
    index = {op: i for i, op in enumerate(step_ops)}
    succ = [[] for _ in step_ops]
    npred = [0] * len(step_ops)
    for i, op in enumerate(step_ops):
        preds = {index[t.op] for t in op._inputs if t.op in index}
        preds |= {index[c] for c in op._control_inputs if c in index}
        npred[i] = len(preds)
        for p in preds:
            succ[p].append(i)
    return succ, npred


def run(steps, is_async, succ, npred, ctx, vals, on_error):
    """Run ``steps`` (as built by executor.Plan) in dataflow order, filling ``vals``.

    ``on_error(exc, i)`` turns a failure of step ``i`` into the exception to raise.
    """
    pending = list(npred)
    ready = collections.deque(i for i, n in enumerate(pending) if n == 0)
    completions = queue.SimpleQueue()
    remaining = len(steps)
    flush = ctx.extras.get("flush")

    def finish(i, r):
        out = steps[i][2]
        if out.__class__ is int:
            vals[out] = r
        else:
            for s, v in zip(out, r):
                vals[s] = v
        for j in succ[i]:
            pending[j] -= 1
            if pending[j] == 0:
                ready.append(j)

    while remaining:
        while ready:
            i = ready.popleft()
            fn, ins, _ = steps[i]
            args = [vals[j] for j in ins]
            try:
                if is_async[i]:
                    fn(ctx, _completion(completions, i), *args)
                    continue
                r = fn(ctx, *args)
            except Exception as e:  # noqa: BLE001 - the plan maps it to the right OpError
                raise on_error(e, i) from e
            finish(i, r)
            remaining -= 1
        if not remaining:
            break
        if flush is not None:
            flush()
        i, r = completions.get()
        if isinstance(r, BaseException):
            raise on_error(r, i) from r
        finish(i, r)
        remaining -= 1


def _completion(completions, i):
    def done(result):
        completions.put((i, result))
    return done
