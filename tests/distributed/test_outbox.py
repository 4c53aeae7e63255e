"""How a partition's sends are batched into Tensors messages (zps.distributed.worker_service)."""

import numpy as np

from zps.distributed import worker_service as ws


class _Transport:
    def __init__(self):
        self.sent = []

    def send_oneway(self, address, method, body, tensors):
        assert method == "Tensors" and len(body["keys"]) == len(tensors)
        self.sent.append((address, list(body["keys"]), [t.nbytes for t in tensors]))


class _Server:
    task = "/job:ps/replica:0/task:0"

    def __init__(self):
        self.transport = _Transport()

    def address_of(self, dst):
        return "addr-" + dst

    def local_peer(self, address):
        return None


def _outbox():
    server = _Server()
    return ws._Outbox(server, step_id=7), server.transport.sent


def test_small_sends_wait_for_the_flush_one_message_per_destination():
    box, sent = _outbox()
    for i in range(3):
        box.send("a", "k%d" % i, np.zeros(10, np.float32))
    box.send("b", "kb", np.zeros(1, np.float32))
    assert sent == []
    box.flush()
    assert sorted(sent) == [("addr-a", ["k0", "k1", "k2"], [40] * 3), ("addr-b", ["kb"], [4])]
    box.flush()
    assert len(sent) == 2


def test_many_small_sends_go_in_batches_while_the_partition_still_computes():
    box, sent = _outbox()
    n = 2 * ws.EAGER_BATCH_COUNT + 5
    for i in range(n):
        box.send("a", "k%d" % i, np.zeros(3, np.float32))
    assert [len(keys) for _, keys, _ in sent] == [ws.EAGER_BATCH_COUNT] * 2
    box.flush()
    assert [len(keys) for _, keys, _ in sent] == [ws.EAGER_BATCH_COUNT] * 2 + [5]
    assert [k for _, keys, _ in sent for k in keys] == ["k%d" % i for i in range(n)]   # in order


def test_a_batch_goes_once_it_holds_eager_batch_bytes():
    box, sent = _outbox()
    n = 10   # sends of a tenth of the batch (and more than that): the tenth fills it
    each = ws.EAGER_BATCH_BYTES // n + 1
    assert each < ws.EAGER_SEND_BYTES and n < ws.EAGER_BATCH_COUNT   # neither of those sends it
    for i in range(n + 2):
        box.send("a", "k%d" % i, np.zeros(each, np.uint8))
    assert [keys for _, keys, _ in sent] == [["k%d" % i for i in range(n)]]


def test_a_large_send_goes_at_once_with_what_waited_for_its_destination():
    box, sent = _outbox()
    box.send("a", "small", np.zeros(4, np.float32))
    box.send("b", "other", np.zeros(4, np.float32))
    box.send("a", "big", np.zeros(ws.EAGER_SEND_BYTES, np.uint8))
    assert sent == [("addr-a", ["small", "big"], [16, ws.EAGER_SEND_BYTES])]
    box.flush()
    assert sent[-1] == ("addr-b", ["other"], [16])
