"""A job config given as a path or as a dict, as a file ember's processes can load."""

import contextlib
import json
import os
import tempfile


@contextlib.contextmanager
def config_file(config, data_root=None):
    """Yields (path, data_root) for `config`: a path as it is, or a dict written as a temporary
    file (JSON, which YAML reads) removed afterwards. Relative data paths of a dict resolve
    against the current directory unless `data_root` says otherwise."""
    if isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        if not os.path.isfile(path):
            raise FileNotFoundError("ember config not found: {}".format(path))
        yield path, os.fspath(data_root) if data_root else ""
        return
    if not isinstance(config, dict):
        raise TypeError("config: expected a path or a dict, got {}".format(type(config).__name__))
    handle, path = tempfile.mkstemp(prefix="ember_config_", suffix=".yaml")
    try:
        with os.fdopen(handle, "w") as out:
            json.dump(config, out)
        yield path, os.fspath(data_root) if data_root else os.getcwd()
    finally:
        os.unlink(path)
