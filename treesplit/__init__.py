"""treesplit: a study platform for distributed Monte-Carlo Tree Search."""


def __getattr__(name: str):
    # the version is pyproject.toml's, read from package metadata on first use: importing importlib.metadata
    # at start-up would cost `treesplit --help` a tenth of a second or more
    if name == "__version__":
        from model.version import package_version

        return package_version()
    raise AttributeError(name)
