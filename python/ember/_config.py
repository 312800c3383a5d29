"""A job config given as a path or as a dict, as a file ember's processes can load."""

import contextlib
import json
import os
import tempfile


def config_path(config, folder, data_root=None):
    """(path, data_root) for `config`: a path made absolute (FileNotFoundError when it is not a
    file), or a dict written into `folder` as config.yaml (JSON, which YAML reads), whose relative
    data paths resolve against the current directory unless `data_root` says otherwise."""
    if isinstance(config, (str, os.PathLike)):
        path = os.path.abspath(os.fspath(config))
        if not os.path.isfile(path):
            raise FileNotFoundError("ember config not found: {}".format(path))
        return path, os.fspath(data_root) if data_root else ""
    if not isinstance(config, dict):
        raise TypeError("config: expected a path or a dict, got {}".format(type(config).__name__))
    path = os.path.join(folder, "config.yaml")
    with open(path, "w") as out:
        json.dump(config, out)
    return path, os.fspath(data_root) if data_root else os.getcwd()


@contextlib.contextmanager
def config_file(config, data_root=None):
    """config_path() with a dict's file in a temporary folder, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="ember_config_") as folder:
        yield config_path(config, folder, data_root)
