"""Bare gRPC servers for ``benchmarks/master_load.py``'s baseline: a servicer that returns a
constant ``Shard``, on the thread pool (``bare_server``) and on ``grpc.aio``
(``bare_aio_server``), with the master's server options; each puts its port on ``port_out``
and serves until ``stop`` is set (run in a child process).
"""

import asyncio
from concurrent import futures
from typing import Any

import grpc

from flexjob.rpc.gen import master_pb2 as pb
from flexjob.rpc.gen import master_pb2_grpc as pb_grpc
from flexjob.rpc.server import MASTER_SERVER_OPTIONS


class ConstantServicer(pb_grpc.MasterServicer):
    def GetShard(self, request: pb.GetShardRequest, context: object) -> pb.Shard:
        return pb.Shard(has_shard=True, shard_id=1, start=0, end=10)


class AioConstantServicer(pb_grpc.MasterServicer):
    async def GetShard(self, request: pb.GetShardRequest, context: object) -> pb.Shard:
        return pb.Shard(has_shard=True, shard_id=1, start=0, end=10)


def bare_server(workers: int, port_out: Any, stop: Any) -> None:
    server = grpc.server(futures.ThreadPoolExecutor(workers), options=MASTER_SERVER_OPTIONS)
    pb_grpc.add_MasterServicer_to_server(ConstantServicer(), server)  # type: ignore[no-untyped-call]
    port_out.put(server.add_insecure_port("127.0.0.1:0"))
    server.start()
    stop.wait()
    server.stop(0)


def bare_aio_server(workers: int, port_out: Any, stop: Any) -> None:
    async def serve() -> None:
        server = grpc.aio.server(options=MASTER_SERVER_OPTIONS)
        pb_grpc.add_MasterServicer_to_server(AioConstantServicer(), server)  # type: ignore[no-untyped-call]
        port_out.put(server.add_insecure_port("127.0.0.1:0"))
        await server.start()
        await asyncio.get_running_loop().run_in_executor(None, stop.wait)
        await server.stop(0)

    asyncio.run(serve())
