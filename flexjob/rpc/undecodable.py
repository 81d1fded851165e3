"""Requests whose bytes are not the method's message: INVALID_ARGUMENT naming the message.

gRPC answers a request it cannot deserialize with INTERNAL ("Exception deserializing
request!") on the thread-pool server and UNKNOWN on ``grpc.aio``, and logs a traceback: a
hostile or broken client looks like a server bug. ``decoding(server)`` stands in for a server
while the generated ``add_*Servicer_to_server`` registers its handlers: each handler's
deserializer then returns an ``Undecodable`` instead of raising, and its behaviour aborts the
call with INVALID_ARGUMENT before the servicer sees it (each message of a request stream is
checked as it is read). Not for checking the fields of a message that did decode (the
servicers do).
"""

import inspect
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any

import grpc


class Undecodable:
    """What a wrapped deserializer returns for bytes that are not its message."""

    __slots__ = ("refusal",)

    def __init__(self, refusal: str) -> None:
        self.refusal = refusal


def _decoder(decode: Callable[[bytes], Any], message: str) -> Callable[[bytes], Any]:
    def safe(raw: bytes) -> Any:
        try:
            return decode(raw)
        except Exception as exc:  # protobuf's DecodeError, or anything a codec raises
            return Undecodable(
                f"request: {len(raw)} bytes that are not a {message} message ({exc})"
            )

    return safe


def _message_name(decode: Callable[[bytes], Any]) -> str:
    """``JoinRequest`` for ``JoinRequest.FromString``."""
    owner = getattr(decode, "__self__", None)
    return str(getattr(owner, "__name__", None) or getattr(decode, "__qualname__", "request"))


def _sync_behaviour(inner: Callable[..., Any], streaming_in: bool) -> Callable[..., Any]:
    if streaming_in:

        def checked_stream(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
            def each() -> Iterator[Any]:
                for request in requests:
                    if isinstance(request, Undecodable):
                        context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.refusal)
                    yield request

            return inner(each(), context)

        return checked_stream

    def checked(request: Any, context: grpc.ServicerContext) -> Any:
        if isinstance(request, Undecodable):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.refusal)
        return inner(request, context)

    return checked


def _async_behaviour(inner: Callable[..., Any], streaming_in: bool) -> Callable[..., Any]:
    """The ``grpc.aio`` behaviours: ``inner`` is a coroutine or an async generator function."""

    async def each(requests: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        async for request in requests:
            if isinstance(request, Undecodable):
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.refusal)
            yield request

    async def check(request: Any, context: grpc.aio.ServicerContext) -> Any:
        if streaming_in:
            return each(request, context)
        if isinstance(request, Undecodable):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.refusal)
        return request

    if inspect.isasyncgenfunction(inner):

        async def checked_gen(request: Any, context: grpc.aio.ServicerContext) -> Any:
            request = await check(request, context)
            async for reply in inner(request, context):
                yield reply

        return checked_gen

    async def checked(request: Any, context: grpc.aio.ServicerContext) -> Any:
        return await inner(await check(request, context), context)

    return checked


_KINDS = {
    (False, False): ("unary_unary", grpc.unary_unary_rpc_method_handler),
    (False, True): ("unary_stream", grpc.unary_stream_rpc_method_handler),
    (True, False): ("stream_unary", grpc.stream_unary_rpc_method_handler),
    (True, True): ("stream_stream", grpc.stream_stream_rpc_method_handler),
}


def guarded(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    """``handler`` with its deserializer made safe and its behaviour refusing what it could
    not decode (unchanged when it has no deserializer)."""
    decode = handler.request_deserializer
    if decode is None:
        return handler
    streaming_in = bool(handler.request_streaming)
    field, make = _KINDS[streaming_in, bool(handler.response_streaming)]
    inner = getattr(handler, field)
    is_async = inspect.iscoroutinefunction(inner) or inspect.isasyncgenfunction(inner)
    behaviour = (_async_behaviour if is_async else _sync_behaviour)(inner, streaming_in)
    return make(
        behaviour,
        request_deserializer=_decoder(decode, _message_name(decode)),
        response_serializer=handler.response_serializer,
    )


class _GuardedGeneric(grpc.GenericRpcHandler):  # type: ignore[misc]
    def __init__(self, inner: grpc.GenericRpcHandler) -> None:
        self._inner = inner
        self._made: dict[str, grpc.RpcMethodHandler] = {}

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        made = self._made.get(details.method)
        if made is None:
            handler = self._inner.service(details)
            if handler is None:
                return None  # not this service's (nothing kept: any client names methods)
            made = self._made[details.method] = guarded(handler)
        return made


class _Decoding:
    """The part of a server the generated ``add_*Servicer_to_server`` functions use."""

    def __init__(self, server: Any) -> None:
        self._server = server

    def add_generic_rpc_handlers(self, handlers: Sequence[grpc.GenericRpcHandler]) -> None:
        self._server.add_generic_rpc_handlers(tuple(_GuardedGeneric(h) for h in handlers))

    def add_registered_method_handlers(
        self, service: str, handlers: Mapping[str, grpc.RpcMethodHandler]
    ) -> None:
        guarded_handlers = {name: guarded(h) for name, h in handlers.items()}
        self._server.add_registered_method_handlers(service, guarded_handlers)


def decoding(server: grpc.Server | grpc.aio.Server) -> Any:
    """``server`` as the generated ``add_*Servicer_to_server`` functions see it, registering
    handlers that refuse undecodable requests with INVALID_ARGUMENT (see the module doc)."""
    return _Decoding(server)
