"""DeviceSpec: parsing, merging and printing device names as TF1 does."""

import pytest

import zps as tf
from zps.framework.device import DeviceSpec, canonical_name, merge_device, task_key


@pytest.mark.parametrize("text, fields, canonical", [
    ("/job:ps/replica:0/task:1/device:CPU:0", ("ps", 0, 1, "CPU", 0),
     "/job:ps/replica:0/task:1/device:CPU:0"),
    ("/cpu:0", (None, None, None, "CPU", 0), "/device:CPU:0"),
    ("/gpu:1", (None, None, None, "GPU", 1), "/device:GPU:1"),
    ("/GPU:1", (None, None, None, "GPU", 1), "/device:GPU:1"),
    ("/device:GPU:*", (None, None, None, "GPU", None), "/device:GPU:*"),
    ("/device:gpu:3", (None, None, None, "GPU", 3), "/device:GPU:3"),
    ("/job:worker/task:7", ("worker", None, 7, None, None), "/job:worker/task:7"),
    ("job:ps", ("ps", None, None, None, None), "/job:ps"),
    ("/cpu", (None, None, None, "CPU", None), "/device:CPU:*"),
    ("", (None, None, None, None, None), ""),
])
def test_parse_and_to_string(text, fields, canonical):
    d = DeviceSpec.from_string(text)
    assert (d.job, d.replica, d.task, d.device_type, d.device_index) == fields
    assert d.to_string() == str(d) == canonical
    assert canonical_name(text) == canonical
    assert DeviceSpec.from_string(canonical) == d


@pytest.mark.parametrize("text, part", [
    ("/job:ps/foo:1", "foo:1"),
    ("/task:x", "task:x"),
    ("/task:-1", "task:-1"),
    ("/replica:", "replica:"),
    ("/job:", "job:"),
    ("/device:CPU:0:1", "device:CPU:0:1"),
    ("/gpu:first", "gpu:first"),
    ("/device:GPU:x", "device:GPU:x"),
])
def test_bad_strings_name_the_part(text, part):
    with pytest.raises(ValueError, match="Invalid device part '%s'" % part):
        DeviceSpec.from_string(text)


def test_multiple_device_types_are_rejected():
    with pytest.raises(ValueError, match="multiple device types"):
        DeviceSpec.from_string("/cpu:0/gpu:1")


def test_merge_from_and_make_merged_spec():
    base = DeviceSpec.from_string("/job:ps/task:1/cpu:0")
    merged = base.make_merged_spec("/job:worker/gpu:2")
    assert merged.to_string() == "/job:worker/task:1/device:GPU:2"
    assert base.to_string() == "/job:ps/task:1/device:CPU:0"  # unchanged
    base.merge_from(DeviceSpec(replica=3))
    assert base.to_string() == "/job:ps/replica:3/task:1/device:CPU:0"


def test_constructor_replace_copy_and_equality():
    d = DeviceSpec(job="ps", replica="0", task="2", device_type="gpu", device_index="*")
    assert d.to_string() == "/job:ps/replica:0/task:2/device:GPU:*"
    e = d.replace(task=5, device_type="cpu")
    assert e.to_string() == "/job:ps/replica:0/task:5/device:CPU:*"
    assert d.copy() == d and d.copy() is not d and hash(d.copy()) == hash(d)
    assert d != e and d != "/job:ps"
    assert DeviceSpec().parse_from_string(d).to_string() == d.to_string()
    assert repr(e) == "DeviceSpec('/job:ps/replica:0/task:5/device:CPU:*')"


def test_merge_device_keeps_fields_already_set():
    fn = merge_device("/job:ps/task:0/cpu:0")

    class FakeOp:
        device = "/job:worker/gpu:1"

    assert fn(FakeOp()) == "/job:worker/task:0/device:GPU:1"
    assert fn("") == "/job:ps/task:0/device:CPU:0"


def test_task_key_ignores_replica():
    assert task_key("/job:ps/replica:0/task:3/cpu:0") == ("ps", 3)
    assert task_key("") == (None, None)
    assert task_key(None) == (None, None)


def test_public_alias():
    assert tf.DeviceSpec is DeviceSpec
