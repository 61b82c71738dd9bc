"""``lcm ui``: a local, read-only web page over one store.

The server (``ui.server``) binds to loopback only and puts a random
per-launch token in every URL (``ui.security``); ``ui.app`` maps the pages'
JSON endpoints onto the engine; the front end is plain JavaScript modules in
``ui/static`` (no build step, nothing fetched from the network).
Starlette and Uvicorn come with the ``ui`` extra and are imported only here.
"""
