"""Bokeh dashboards and static reports, from traces and live telemetry only (never engine or sim internals)."""
