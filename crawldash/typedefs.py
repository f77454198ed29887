"""Typed keys of what the application holds."""

from aiohttp import web

from .refresh import Refresher
from .representation import Representation
from .settings import Settings
from .state import State
from .watcher import Watcher

SETTINGS = web.AppKey("settings", Settings)
STATE = web.AppKey("state", State)
REFRESHER = web.AppKey("refresher", Refresher)
WATCHER = web.AppKey("watcher", Watcher)
OPENAPI = web.AppKey("openapi", Representation)
