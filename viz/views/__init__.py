"""The dashboard's views, by the name of their URL (/overview, /load, /traffic, /tree, /teaching)."""

from viz.views.load import LoadBalance
from viz.views.overview import Overview
from viz.views.teaching import Teaching
from viz.views.traffic import MessageTraffic
from viz.views.tree import TreeShape

VIEWS = {v.name: v for v in (Overview, LoadBalance, MessageTraffic, TreeShape, Teaching)}

__all__ = ["VIEWS", "Overview", "LoadBalance", "MessageTraffic", "TreeShape", "Teaching"]
