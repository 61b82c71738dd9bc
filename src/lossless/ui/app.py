"""The Starlette application: one read-only JSON endpoint per page need.

Every endpoint hands its work to a reader of the engine pool and answers JSON; an
expected error (bad input, unknown id) is a 4xx with ``{"error": ...}``, never
a traceback. Only GET (and HEAD) exist: the UI changes nothing in the store.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from lossless.engine.engine import Engine
from lossless.errors import InputError, LosslessError, NotFoundError
from lossless.ui import finding, graph, library, listing, window
from lossless.ui.engine_pool import EnginePool
from lossless.ui.security import ASGIApp, TokenGate

STATIC = Path(__file__).resolve().parent / "static"


def _int(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise InputError(f"{name} must be a whole number, not {raw!r}") from None


def _text(request: Request, name: str) -> str | None:
    value = request.query_params.get(name)
    return value.strip() or None if value is not None else None


def create_app(pool: EnginePool, token: str, *, allowed_hosts: set[str] | None) -> ASGIApp:
    """The whole UI, behind the token gate."""
    cache = window.AssemblyCache()
    sort_keys = listing.SortKeys()

    def endpoint(work: Callable[[Request, Engine], Any]) -> Callable[[Request], Any]:
        async def handle(request: Request) -> Response:
            try:
                result = await pool.run(lambda engine: work(request, engine))
            except NotFoundError as exc:
                return JSONResponse({"error": str(exc)}, status_code=404)
            except LosslessError as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
            except Exception as exc:  # shown on the page, not a traceback
                return JSONResponse(
                    {"error": f"internal error: {type(exc).__name__}: {exc}"}, status_code=500
                )
            return JSONResponse(result)

        return handle

    def conversation_id(request: Request, engine: Engine) -> int:
        return engine.resolve_conversation(request.path_params["ref"]).id

    def store_info(request: Request, engine: Engine) -> Any:
        return library.store_label(engine)

    def conversations(request: Request, engine: Engine) -> Any:
        order = request.query_params.get("order", "desc")
        if order not in ("asc", "desc"):
            raise InputError("order must be asc or desc")
        return listing.list_conversations(
            engine,
            listing.ListRequest(
                query=_text(request, "q") or "",
                project=_text(request, "project"),
                client=_text(request, "client"),
                sort=request.query_params.get("sort", "last"),  # type: ignore[arg-type]
                descending=order == "desc",
                offset=_int(request, "offset", 0),
                limit=_int(request, "limit", 50),
            ),
            sort_keys,
        )

    def conversation(request: Request, engine: Engine) -> Any:
        found = engine.resolve_conversation(request.path_params["ref"])
        row = listing.conversation_row(engine, found)
        parent = engine.store.conversations.get(found.parent_id) if found.parent_id else None
        row["parent_session_id"] = parent.session_id if parent else None
        row["large_files"] = len(engine.store.files.list(found.id))
        return row

    def context(request: Request, engine: Engine) -> Any:
        raw_budget = _text(request, "budget")
        return window.context_window(
            engine,
            cache,
            conversation_id(request, engine),
            budget=_int(request, "budget", 0) if raw_budget else None,
            format=request.query_params.get("format", "anthropic"),
            offset=_int(request, "offset", 0),
            limit=_int(request, "limit", 40),
        )

    def dag(request: Request, engine: Engine) -> Any:
        return graph.dag_roots(engine, conversation_id(request, engine))

    def summary(request: Request, engine: Engine) -> Any:
        return graph.summary_detail(engine, request.path_params["sid"])

    def children(request: Request, engine: Engine) -> Any:
        return graph.children_page(
            engine,
            request.path_params["sid"],
            offset=_int(request, "offset", 0),
            limit=_int(request, "limit", 25),
        )

    def expansion(request: Request, engine: Engine) -> Any:
        around = _text(request, "around")
        return graph.expansion_page(
            engine,
            request.path_params["sid"],
            cursor=_text(request, "cursor"),
            around=_int(request, "around", 0) if around else None,
            token_cap=_int(request, "tokens", graph.EXPAND_PAGE_TOKENS),
        )

    def message(request: Request, engine: Engine) -> Any:
        return graph.message_detail(engine, request.path_params["mid"])

    def search(request: Request, engine: Engine) -> Any:
        return finding.search(
            engine,
            request.query_params.get("q", ""),
            mode=request.query_params.get("mode", "search"),
            scope=request.query_params.get("scope", "both"),
            project=_text(request, "project"),
            conversation=_text(request, "conversation"),
            since=_text(request, "since"),
            limit=_int(request, "limit", 50),
        )

    def memories(request: Request, engine: Engine) -> Any:
        return library.memories(
            engine,
            project=_text(request, "project"),
            archived=request.query_params.get("archived") == "1",
            query=_text(request, "q") or "",
            offset=_int(request, "offset", 0),
            limit=_int(request, "limit", 50),
        )

    def files(request: Request, engine: Engine) -> Any:
        return library.large_files(
            engine, cursor=_int(request, "cursor", 0), limit=_int(request, "limit", 50)
        )

    def file(request: Request, engine: Engine) -> Any:
        return library.file_detail(engine, request.path_params["fid"])

    def jobs(request: Request, engine: Engine) -> Any:
        return library.jobs(engine)

    def health(request: Request, engine: Engine) -> Any:
        return library.health(engine, with_doctor=request.query_params.get("doctor") == "1")

    def figures(request: Request, engine: Engine) -> Any:
        return library.store_figures(engine)

    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8")

    async def not_found(request: Request) -> Response:
        return JSONResponse({"error": f"no such page {request.url.path}"}, status_code=404)

    api = [
        ("/api/store", store_info),
        ("/api/conversations", conversations),
        ("/api/conversations/{ref}", conversation),
        ("/api/conversations/{ref}/context", context),
        ("/api/conversations/{ref}/dag", dag),
        ("/api/summaries/{sid}", summary),
        ("/api/summaries/{sid}/children", children),
        ("/api/summaries/{sid}/expand", expansion),
        ("/api/messages/{mid:int}", message),
        ("/api/search", search),
        ("/api/memories", memories),
        ("/api/files", files),
        ("/api/files/{fid}", file),
        ("/api/jobs", jobs),
        ("/api/health", health),
        ("/api/health/figures", figures),
    ]
    routes = [
        Route("/", index, methods=["GET"]),
        *(Route(path, endpoint(work), methods=["GET"]) for path, work in api),
        Route("/api/{rest:path}", not_found, methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes)
    return TokenGate(app, token, allowed_hosts)
