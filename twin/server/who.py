"""Who a request comes from: a Bearer token (the labs page's cookie on a GET), or 401, slowed."""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import HTTPBearer

from twin.server.auth import Principal, Unauthorized, authenticate
from twin.server.core import Core
from twin.server.problems import ApiProblem

USER = "twin.user"  # the scope's key for who made the request (the access log's)
COOKIE = "twin_token"  # the labs page's token, sent by the browser on GETs only
bearer = HTTPBearer(auto_error=False, description="A token from `twin serve token create USER`.")


async def principal(request: Request, _: Annotated[Any, Depends(bearer)] = None) -> Principal:
    """Who sent the request (a Bearer token; the labs page's cookie on a GET), or 401, slowed."""
    core: Core = request.app.state.core
    header = request.headers.get("authorization")
    if header is None and request.method == "GET" and request.cookies.get(COOKIE):
        header = f"Bearer {request.cookies[COOKIE]}"
    try:
        # on the event loop: one indexed read (and a write at most once a minute), cheaper than a hop
        # through the thread pool and its wait for the store's lock
        who = authenticate(core.store, header)
    except Unauthorized as e:
        address = request.client.host if request.client else "?"
        delay = core.throttle.failed(address)
        logging.getLogger("twin.server").warning(
            "failed authentication from %s (%d recently): %s", address, core.throttle.failures(address), e
        )
        await asyncio.sleep(delay)
        raise ApiProblem(401, str(e), "unauthorized") from None
    request.scope[USER] = who.user
    return who


Who = Annotated[Principal, Depends(principal)]  # a route's caller
