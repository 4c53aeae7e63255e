"""Device names: ``/job:ps/replica:0/task:1/device:CPU:0``, legacy ``/cpu:0`` and ``/gpu:1``.

>>> from zps.framework.device import DeviceSpec
>>> d = DeviceSpec.from_string("/job:ps/task:1/cpu:0")
>>> d.job, d.task, d.device_type, d.device_index
('ps', 1, 'CPU', 0)
>>> DeviceSpec.from_string("/job:worker").make_merged_spec(d).to_string()
'/job:ps/task:1/device:CPU:0'
"""


class DeviceSpec:
    """A (partial) device specification; unset fields are None."""

    __slots__ = ("job", "replica", "task", "device_type", "device_index")

    def __init__(self, job=None, replica=None, task=None, device_type=None, device_index=None):
        self.job = job
        self.replica = None if replica is None else int(replica)
        self.task = None if task is None else int(task)
        self.device_type = _normalize_type(device_type)
        self.device_index = None if device_index in (None, "*") else int(device_index)

    @classmethod
    def from_string(cls, spec):
        return cls().parse_from_string(spec)

    def parse_from_string(self, spec):
        """Set the fields named in ``spec``; raises ValueError naming the bad part."""
        if spec is None:
            return self
        if isinstance(spec, DeviceSpec):
            return self.merge_from(spec)
        text = str(spec).strip()
        typed = False
        for part in filter(None, text.split("/")):
            fields = part.split(":")
            key = fields[0].lower()
            if key == "job" and len(fields) == 2 and fields[1]:
                self.job = fields[1]
            elif key in ("replica", "task") and len(fields) == 2:
                setattr(self, key, _index(fields[1], part, text))
            elif (key == "device" and len(fields) in (2, 3) and fields[1]) or \
                    (key in ("cpu", "gpu") and len(fields) <= 2):  # legacy /cpu:0, /gpu:1, /cpu
                if typed:
                    raise ValueError("Cannot specify multiple device types in device string %r"
                                     % text)
                typed = True
                self.device_type = _normalize_type(fields[1] if key == "device" else key)
                index = fields[-1] if len(fields) == (3 if key == "device" else 2) else "*"
                self.device_index = None if index == "*" else _index(index, part, text)
            else:
                raise _bad_part(part, text)
        return self

    def merge_from(self, other):
        """Overwrite this spec's fields with the fields ``other`` sets."""
        other = other if isinstance(other, DeviceSpec) else DeviceSpec.from_string(other)
        for f in self.__slots__:
            v = getattr(other, f)
            if v is not None:
                setattr(self, f, v)
        return self

    def make_merged_spec(self, other):
        return self.copy().merge_from(other)

    def copy(self):
        return DeviceSpec(self.job, self.replica, self.task, self.device_type, self.device_index)

    def replace(self, **fields):
        d = self.copy()
        for k, v in fields.items():
            setattr(d, k, _normalize_type(v) if k == "device_type" else v)
        return d

    def to_string(self):
        out = []
        if self.job is not None:
            out.append("/job:" + self.job)
        if self.replica is not None:
            out.append("/replica:%d" % self.replica)
        if self.task is not None:
            out.append("/task:%d" % self.task)
        if self.device_type is not None:
            idx = "*" if self.device_index is None else str(self.device_index)
            out.append("/device:%s:%s" % (self.device_type, idx))
        return "".join(out)

    def __eq__(self, other):
        return isinstance(other, DeviceSpec) and self.to_string() == other.to_string()

    def __hash__(self):
        return hash(self.to_string())

    def __repr__(self):
        return "DeviceSpec(%r)" % self.to_string()

    __str__ = to_string


def _index(field, part, text):
    if not field.isdigit():
        raise _bad_part(part, text)
    return int(field)


def _bad_part(part, text):
    return ValueError("Invalid device part %r in device string %r; expected e.g. "
                      "'/job:ps/replica:0/task:1/device:CPU:0' or '/gpu:0'" % (part, text))


def _normalize_type(t):
    return None if t is None else str(t).upper()


def canonical_name(spec):
    """The canonical string for a device spec or string ('' for no device)."""
    if spec is None or spec == "":
        return ""
    return DeviceSpec.from_string(spec).to_string()


def merge_device(spec):
    """A device function that merges ``spec`` under the fields an op already set (TF1's rule)."""
    base = spec if isinstance(spec, DeviceSpec) else DeviceSpec.from_string(spec)

    def _merge(op):
        current = op.device if hasattr(op, "device") else op
        return base.make_merged_spec(DeviceSpec.from_string(current or "")).to_string()

    return _merge


def task_key(spec):
    """``(job, task)`` of a device string, with replica ignored; ``(None, None)`` if unplaced."""
    d = DeviceSpec.from_string(spec or "")
    return (d.job, d.task)


# -- the GPUs this process can use -----------------------------------------------------------------
def gpu_index(spec):
    """The GPU index a device string asks for (``/gpu:1`` -> 1, ``/device:GPU`` -> 0), or None
    for a CPU or unspecified device type."""
    if not spec or "GPU" not in spec.upper():
        return None
    d = spec if isinstance(spec, DeviceSpec) else DeviceSpec.from_string(spec)
    if d.device_type != "GPU":
        return None
    return d.device_index or 0


def visible_gpu_count():
    """How many GPUs cupy sees in this process (after ``CUDA_VISIBLE_DEVICES``); 0 without cupy."""
    try:
        import cupy
    except ImportError:
        return 0
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # noqa: BLE001 - no driver / no device: cupy raises CUDARuntimeError
        return 0


def gpu_unavailable_reason(index):
    """None if ``/device:GPU:<index>`` can run in this process, else a phrase saying why not."""
    import os
    try:
        import cupy  # noqa: F401 - the optional 'gpu' extra
    except ImportError as e:
        return "cupy is not installed (%s)" % e
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    env = "" if visible is None else " with CUDA_VISIBLE_DEVICES=%r" % visible
    n = visible_gpu_count()
    if n == 0:
        return "this process sees no GPU%s" % env
    if index >= n:
        return "this process sees only %d GPU(s)%s (GPU:0..GPU:%d)" % (n, env, n - 1)
    return None
