"""Configurations and scripts that reproduce the reference figures and our own studies."""
