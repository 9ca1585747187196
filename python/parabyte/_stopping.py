"""A cancelled asyncio call that ends only once its transfer let go of its files: an asyncio
future cannot wait out its own cancel, so a task awaits the outcome shielded and, cancelled,
stops the transfer and waits for the word that nothing of it runs or holds a file. Returned
earlier, the next call could find the temporary file still locked."""

import asyncio
from collections.abc import Callable
from typing import Any


def until_let_go(
    outcome: "asyncio.Future[Any]", stop: Callable[[], None], let_go: "asyncio.Future[None]"
) -> "asyncio.Task[Any]":
    return asyncio.ensure_future(_until_let_go(outcome, stop, let_go))


async def _until_let_go(
    outcome: "asyncio.Future[Any]", stop: Callable[[], None], let_go: "asyncio.Future[None]"
) -> Any:
    try:
        return await asyncio.shield(outcome)
    except asyncio.CancelledError:
        stop()
        # A second cancel raises here: it stops the waiting.
        await let_go
        raise
