"""How a partition's sends are batched into Tensors messages (zps.distributed.worker_service)."""

import numpy as np

from zps.distributed import worker_service as ws


class _Transport:
    def __init__(self):
        self.sent = []

    def send_oneway(self, address, method, body, tensors):
        # A key names one tensor, [key, n] a group of n (a _SendN's).
        assert method == "Tensors"
        assert sum(1 if isinstance(k, str) else k[1] for k in body["keys"]) == len(tensors)
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


def test_a_group_is_one_entry_of_the_keys_followed_by_its_tensors():
    box, sent = _outbox()
    box.send("a", "k0", np.zeros(1, np.float32))
    box.send_n("a", "g", (np.zeros(2, np.float32), np.zeros(3, np.int8), np.zeros((), np.float64)))
    box.send("a", "k1", np.zeros(4, np.uint8))
    box.flush()
    assert sent == [("addr-a", ["k0", ["g", 3], "k1"], [4, 8, 3, 8, 4])]


def test_a_group_counts_its_tensors_and_bytes_toward_sending_the_batch():
    box, sent = _outbox()
    box.send_n("a", "g", [np.zeros(1, np.uint8)] * (ws.EAGER_BATCH_COUNT - 1))
    assert sent == []
    box.send_n("a", "h", [np.zeros(1, np.uint8)] * 2)
    assert [keys for _, keys, _ in sent] == [[["g", ws.EAGER_BATCH_COUNT - 1], ["h", 2]]]
    box.send_n("a", "big", [np.zeros(ws.EAGER_SEND_BYTES // 2, np.uint8)] * 2)
    assert [keys for _, keys, _ in sent][-1] == [["big", 2]]


def test_a_group_for_a_task_of_this_process_is_handed_over_as_one_tuple():
    from zps.distributed.rendezvous import Rendezvous

    class _Local:
        rendezvous = Rendezvous()

    server = _Server()
    server.local_peer = lambda address: _Local
    box = ws._Outbox(server, step_id=7)
    values = (np.zeros(2), np.ones(1))
    box.send_n("a", "g", list(values))
    got = []
    _Local.rendezvous.recv(7, "g", got.append)
    assert type(got[0]) is tuple and got[0] == values and server.transport.sent == []
