"""A link delay for test hosts where the kernel has no ``netem``: an NFQUEUE reader that
accepts each queued packet a fixed time after it arrived.

This machine's kernel (a Firecracker guest) has no ``sch_netem`` and no tc actions, so
``tests/support/hosts.py`` sends a host's outgoing packets to netfilter queue 0
(``iptables -j NFQUEUE --queue-bypass``) and runs this program inside that host's network
namespace (``python -m tests.support.netdelay SECONDS``). It speaks the kernel's
``nfnetlink_queue`` protocol over a raw netlink socket (no library), copies only the packet's
metadata, and gives every packet its ``NF_ACCEPT`` verdict ``SECONDS`` after it was queued, in
arrival order: what ``netem delay`` does on egress. With ``--queue-bypass`` the packets flow
undelayed once this program is gone. Not a general traffic shaper (no jitter, no reordering).
"""

from __future__ import annotations

import argparse
import collections
import select
import signal
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET = 0
NFQNL_MSG_VERDICT = 1
NFQNL_MSG_CONFIG = 2
NFQA_CFG_CMD = 1
NFQA_CFG_PARAMS = 2
NFQA_CFG_QUEUE_MAXLEN = 3
NFQA_PACKET_HDR = 1
NFQA_VERDICT_HDR = 2
NFQNL_CFG_CMD_BIND = 1
NFQNL_COPY_META = 1
NF_ACCEPT = 1
NLM_F_REQUEST = 1
NLM_F_ACK = 4
NLMSG_ERROR = 2
READY = "netdelay: ready"


def _attr(kind: int, payload: bytes) -> bytes:
    length = 4 + len(payload)
    return struct.pack("=HH", length, kind) + payload + b"\0" * (-length % 4)


def _message(kind: int, queue: int, attrs: bytes, flags: int = NLM_F_REQUEST) -> bytes:
    body = struct.pack("!BBH", socket.AF_UNSPEC, 0, queue) + attrs
    header = struct.pack("=IHHII", 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | kind, flags, 0, 0)
    return header + body


def _attrs(data: bytes) -> dict[int, bytes]:
    found: dict[int, bytes] = {}
    at = 0
    while at + 4 <= len(data):
        length, kind = struct.unpack_from("=HH", data, at)
        if length < 4:
            break
        found[kind & 0x3FFF] = data[at + 4 : at + length]
        at += length + (-length % 4)
    return found


def open_queue(queue: int, maxlen: int = 65536) -> socket.socket:
    """Bind netfilter queue ``queue`` in this network namespace, metadata copies only."""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind((0, 0))
    config = (
        _attr(NFQA_CFG_CMD, struct.pack("!BxH", NFQNL_CFG_CMD_BIND, 0)),
        _attr(NFQA_CFG_PARAMS, struct.pack("!IB", 0, NFQNL_COPY_META)),
        _attr(NFQA_CFG_QUEUE_MAXLEN, struct.pack("!I", maxlen)),
    )
    for attr in config:
        sock.send(_message(NFQNL_MSG_CONFIG, queue, attr, NLM_F_REQUEST | NLM_F_ACK))
        reply = sock.recv(65536)
        kind = struct.unpack_from("=H", reply, 4)[0]
        if kind == NLMSG_ERROR and struct.unpack_from("=i", reply, 16)[0] != 0:
            raise OSError(f"nfnetlink_queue refused {attr[:4].hex()}: {reply[16:20].hex()}")
    return sock


def _packet_ids(data: bytes) -> list[int]:
    """The ids of the queued packets in one receive (several netlink messages)."""
    ids = []
    at = 0
    while at + 16 <= len(data):
        length, kind = struct.unpack_from("=IH", data, at)
        if length < 16:
            break
        if kind == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
            header = _attrs(data[at + 20 : at + length]).get(NFQA_PACKET_HDR)
            if header is not None:
                ids.append(struct.unpack_from("!I", header)[0])
        at += length + (-length % 4)
    return ids


def run(queue: int, delay: float) -> None:
    sock = open_queue(queue)
    print(READY, flush=True)
    waiting: collections.deque[tuple[float, int]] = collections.deque()
    while True:
        timeout = max(0.0, waiting[0][0] - time.monotonic()) if waiting else None
        readable, _, _ = select.select([sock], [], [], timeout)
        if readable:
            try:
                data = sock.recv(1 << 20)
            except OSError:  # ENOBUFS: the kernel dropped some (a lossy link, briefly)
                continue
            due = time.monotonic() + delay
            waiting.extend((due, i) for i in _packet_ids(data))
        now = time.monotonic()
        while waiting and waiting[0][0] <= now:
            _, packet = waiting.popleft()
            verdict = _attr(NFQA_VERDICT_HDR, struct.pack("!II", NF_ACCEPT, packet))
            sock.send(_message(NFQNL_MSG_VERDICT, queue, verdict))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("delay", type=float, help="Seconds each packet waits.")
    p.add_argument("--queue", type=int, default=0)
    a = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    run(a.queue, a.delay)


if __name__ == "__main__":
    main()
