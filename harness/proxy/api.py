"""Toxiproxy's HTTP API (v2) over aiohttp: same routes, JSON shapes and status codes.

Routes (POST and PATCH both update, as in Toxiproxy)::

    GET    /version                          {"version": "..."}
    GET    /proxies                          {name: proxy, ...}
    POST   /proxies                          201 proxy | 400 | 409 | 500 (cannot listen)
    POST   /populate                         201 {"proxies": [...]} | error + "proxies"
    GET    /proxies/{proxy}                  proxy | 404
    POST   /proxies/{proxy}  (or PATCH)      proxy (update enabled/listen/upstream)
    DELETE /proxies/{proxy}                  204
    GET    /proxies/{proxy}/toxics           [toxic, ...]
    POST   /proxies/{proxy}/toxics           200 toxic | 400 | 404 | 409
    GET    /proxies/{proxy}/toxics/{toxic}   toxic | 404
    POST   /proxies/{proxy}/toxics/{toxic}   toxic (update attributes / toxicity)
    DELETE /proxies/{proxy}/toxics/{toxic}   204
    POST   /reset                            204 (enable all proxies, remove all toxics)

Errors are ``{"error": "...", "status": N}``. Changes are serialised by one lock, so two
clients never interleave half-applied updates.
"""
from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Awaitable, Callable

from aiohttp import web

from leasecheck.harness.proxy.errors import ApiError, bad_request
from leasecheck.harness.proxy.server import ProxyCollection

log = logging.getLogger("leasecheck.harness.proxy")

VERSION = "2.12.0+leasecheck"   # the Toxiproxy API version reproduced, and who serves it

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(data) + "\n", status=status,
                        content_type="application/json")


def _error(err: ApiError) -> web.Response:
    return _json(err.to_json(), status=err.status)


async def _body(request: web.Request) -> Any:
    raw = await request.read()
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad_request(f"bad request body: {exc}") from None


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    # Toxiproxy refuses browsers (a page must not drive it through the user's browser).
    if request.headers.get("User-Agent", "").startswith("Mozilla/"):
        return web.Response(text="User agent not allowed\n", status=403)
    try:
        return await handler(request)
    except ApiError as err:
        return _error(err)
    except web.HTTPException as exc:   # unknown route or method: JSON like the rest
        if exc.status >= 400:
            return _json({"error": exc.reason.lower(), "status": exc.status}, status=exc.status)
        raise
    except Exception:
        log.exception("API request %s %s failed", request.method, request.path)
        return _json({"error": "internal error", "status": 500}, status=500)


class Api:
    def __init__(self, collection: ProxyCollection):
        self.proxies = collection
        self.lock = asyncio.Lock()

    def app(self) -> web.Application:
        app = web.Application(middlewares=[_errors])
        r = app.router
        r.add_get("/version", self.version)
        r.add_post("/reset", self.reset)
        r.add_get("/proxies", self.proxy_index)
        r.add_post("/proxies", self.proxy_create)
        r.add_post("/populate", self.populate)
        r.add_get("/proxies/{proxy}", self.proxy_show)
        r.add_post("/proxies/{proxy}", self.proxy_update)
        r.add_patch("/proxies/{proxy}", self.proxy_update)
        r.add_delete("/proxies/{proxy}", self.proxy_delete)
        r.add_get("/proxies/{proxy}/toxics", self.toxic_index)
        r.add_post("/proxies/{proxy}/toxics", self.toxic_create)
        r.add_get("/proxies/{proxy}/toxics/{toxic}", self.toxic_show)
        r.add_post("/proxies/{proxy}/toxics/{toxic}", self.toxic_update)
        r.add_patch("/proxies/{proxy}/toxics/{toxic}", self.toxic_update)
        r.add_delete("/proxies/{proxy}/toxics/{toxic}", self.toxic_delete)
        return app

    # -- server ----------------------------------------------------------------------------
    async def version(self, request: web.Request) -> web.Response:
        return _json({"version": VERSION})

    async def reset(self, request: web.Request) -> web.Response:
        async with self.lock:
            await self.proxies.reset()
        return web.Response(status=204)

    # -- proxies ---------------------------------------------------------------------------
    async def proxy_index(self, request: web.Request) -> web.Response:
        return _json({name: p.to_json() for name, p in self.proxies.proxies.items()})

    async def proxy_create(self, request: web.Request) -> web.Response:
        body = await _body(request)
        async with self.lock:
            proxy = await self.proxies.create(body)
        return _json(proxy.to_json(), status=201)

    async def populate(self, request: web.Request) -> web.Response:
        body = await _body(request)
        async with self.lock:
            done, err = await self.proxies.populate(body)
        data: dict[str, Any] = {}
        if err is not None:
            data.update(err.to_json())
        data["proxies"] = [p.to_json() for p in done]
        return _json(data, status=err.status if err else 201)

    async def proxy_show(self, request: web.Request) -> web.Response:
        return _json(self.proxies.get(request.match_info["proxy"]).to_json())

    async def proxy_update(self, request: web.Request) -> web.Response:
        async with self.lock:
            proxy = self.proxies.get(request.match_info["proxy"])
            await proxy.update(await _body(request))
        return _json(proxy.to_json())

    async def proxy_delete(self, request: web.Request) -> web.Response:
        async with self.lock:
            self.proxies.delete(request.match_info["proxy"])
        return web.Response(status=204)

    # -- toxics ----------------------------------------------------------------------------
    async def toxic_index(self, request: web.Request) -> web.Response:
        proxy = self.proxies.get(request.match_info["proxy"])
        return _json([t.to_json() for t in proxy.toxics.all()])

    async def toxic_create(self, request: web.Request) -> web.Response:
        async with self.lock:
            proxy = self.proxies.get(request.match_info["proxy"])
            toxic = proxy.toxics.add(await _body(request))
        return _json(toxic.to_json())

    async def toxic_show(self, request: web.Request) -> web.Response:
        proxy = self.proxies.get(request.match_info["proxy"])
        return _json(proxy.toxics.get(request.match_info["toxic"]).to_json())

    async def toxic_update(self, request: web.Request) -> web.Response:
        async with self.lock:
            proxy = self.proxies.get(request.match_info["proxy"])
            toxic = proxy.toxics.update(request.match_info["toxic"], await _body(request))
        return _json(toxic.to_json())

    async def toxic_delete(self, request: web.Request) -> web.Response:
        async with self.lock:
            proxy = self.proxies.get(request.match_info["proxy"])
            proxy.toxics.remove(request.match_info["toxic"])
        return web.Response(status=204)
