"""State dicts and checkpoints of PyTorch modules whose rows live in ember tables.

ServerRowsState gives such a module a state_dict() entry that refers to a cut of the servers' rows
(written by the servers themselves, restorable into any server count) and a load_state_dict()
that restores it. save() and load() keep a model's dense state, an optimizer's state and the
servers' cut together in one folder. docs/python.md ("State dicts and checkpoints") describes the
design and its limits.
"""

import datetime
import os
import threading
import uuid
import weakref

import torch

from . import _ember

__all__ = ["ServerRowsState", "set_state_dir", "state_dir", "save", "load"]

# The state_dict() entry of a module (torch's `<prefix>_extra_state`) is a plain dict, so that it
# pickles, and loads with torch.load(weights_only=True), without ember installed:
#     {"ember_cut": "/abs/folder/of/the/cut", "tables": ["the", "module's", "tables"]}
_CUT = "ember_cut"
_TABLES = "tables"
_DENSE_FILE = "dense.pt"
_ROWS_FOLDER = "rows"
_SAVE_FORMAT = 1

_live_modules = weakref.WeakSet()  # every ServerRowsState module, to flush before a cut
_clients = weakref.WeakKeyDictionary()  # client -> _ClientState
_saving = threading.local()  # .folder and .cuts (client -> folder) while save() runs


class _ClientState:
    """What this process knows of one client: the folder its cuts go into, and the cut written
    (restored) in the latest state_dict() (load_state_dict()) call, so that the other modules of
    that call on this client share it."""

    def __init__(self):
        self.directory = None
        self.written = (None, None)  # (mark of the state_dict() call, path of its cut)
        self.restored = (None, None)  # (mark of the load_state_dict() call, path restored)


def _state_of(client):
    state = _clients.get(client)
    if state is None:
        state = _clients[client] = _ClientState()
    return state


def _mark(call):
    """A reference to the object that stands for one state_dict() call (its destination dict) or
    load_state_dict() call (its missing_keys list): weak where the object allows it."""
    try:
        return weakref.ref(call)
    except TypeError:  # a list, a plain dict: held until the client's next call replaces it
        return lambda: call


def _same_call(record, call):
    mark, _ = record
    return call is not None and mark is not None and mark() is call


def set_state_dir(client, directory):
    """Sets the folder into which state_dict() of the modules on `client` has the servers write
    their cuts, one sub-folder `cut-<date>-<time>-<random>` per state_dict() call. The servers
    write it and this process reads it back to restore, so it must be the same path for both
    (local, for a LocalCluster; a shared file system otherwise). Cuts are never removed by ember.
    `directory=None` unsets it. Returns the absolute path (or None)."""
    state = _state_of(client)
    state.directory = None if directory is None else os.path.abspath(os.fspath(directory))
    return state.directory


def state_dir(client):
    """The folder set by set_state_dir(client, ...), or None."""
    state = _clients.get(client)
    return state.directory if state is not None else None


def _describe(module, prefix):
    return "{} '{}'".format(type(module).__name__, prefix.rstrip(".") or "(the root)")


def _modules_of(client):
    return [module for module in list(_live_modules) if getattr(module, "client", None) is client]


def _flush_modules_of(client):
    """Waits for the pushes in flight of every module of this process on `client`."""
    for module in _modules_of(client):
        flush = getattr(module, "flush", None)
        if flush is not None:
            flush()


def _new_cut_folder(client, state, module, prefix):
    """Where the next cut of `client` goes: under save()'s folder while it runs, else a new
    sub-folder of the client's state folder."""
    saving = getattr(_saving, "folder", None)
    if saving is not None:
        name = _ROWS_FOLDER if not _saving.cuts else "{}-{}".format(_ROWS_FOLDER,
                                                                    len(_saving.cuts) + 1)
        return _saving.cuts.setdefault(client, os.path.join(saving, name))
    if state.directory is None:
        raise _ember.EmberError(
            "state_dict() of {}: no folder for the servers' cut of table(s) {}; call "
            "ember.torch.set_state_dir(client, folder) first (a folder the servers write and this "
            "process reads), or save the model with ember.torch.save(path, model)".format(
                _describe(module, prefix), ", ".join(module._ember_tables())))
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return os.path.join(state.directory, "cut-{}-{}".format(stamp, uuid.uuid4().hex[:8]))


def _cut_entry(module, call, prefix):
    """The module's state_dict() entry: the cut of this call on the module's client (written now
    by the servers if no other module of the call wrote one) and the module's tables."""
    client = module.client
    state = _state_of(client)
    if _same_call(state.written, call):
        path = state.written[1]
    else:
        folder = _new_cut_folder(client, state, module, prefix)
        _flush_modules_of(client)
        path = client.checkpoint(folder)
        state.written = (_mark(call), path) if call is not None else (None, None)
    return {_CUT: path, _TABLES: [str(name) for name in module._ember_tables()]}


def _is_cut_entry(value):
    return isinstance(value, dict) and isinstance(value.get(_CUT), str)


def _checked_entry(module, entry, prefix):
    """`entry` if it is a cut reference for the module's tables; a clear error otherwise."""
    key = prefix + torch.nn.modules.module._EXTRA_STATE_KEY_SUFFIX
    if not _is_cut_entry(entry) or not isinstance(entry.get(_TABLES), (list, tuple)):
        raise _ember.InvalidArgumentError(
            "load_state_dict() of {}: '{}' is not a reference to a cut of the servers' rows "
            "(expected a dict with '{}' and '{}', got {!r})".format(
                _describe(module, prefix), key, _CUT, _TABLES, entry))
    missing = [name for name in module._ember_tables() if name not in entry[_TABLES]]
    if missing:
        raise _ember.InvalidArgumentError(
            "load_state_dict() of {}: '{}' refers to a cut for table(s) {}, not to the module's "
            "{}".format(_describe(module, prefix), key, ", ".join(entry[_TABLES]) or "none",
                        ", ".join(missing)))
    if not os.path.isdir(entry[_CUT]):
        raise _ember.NotFoundError(
            "load_state_dict() of {}: '{}' refers to the cut {}, which is not there (removed, "
            "or written where this process cannot read it)".format(
                _describe(module, prefix), key, entry[_CUT]))
    return entry


def _restore_cut(module, entry, call, prefix):
    """Restores the cut `entry` refers to into the servers, unless another module of the same
    load_state_dict() call on this client restored it already."""
    path = _checked_entry(module, entry, prefix)[_CUT]
    client = module.client
    state = _state_of(client)
    if _same_call(state.restored, call) and state.restored[1] == path:
        return
    _flush_modules_of(client)  # a push landing after the restore would change restored rows
    client.restore(path)
    state.restored = (_mark(call), path) if call is not None else (None, None)
    for restored in _modules_of(client):
        restored._ember_rows_restored()


class ServerRowsState:
    """A mixin for torch modules whose rows live in ember tables: list it before
    torch.nn.Module, as in `class Embedding(ServerRowsState, torch.nn.Module)`.

    The module needs `.client` (an ember.Client) and `_ember_tables()` (the names of the tables it
    uses); a `flush()`, if it has one, must wait for its pushes in flight, and
    `_ember_rows_restored()` may drop what it read of the rows before a restore (prefetches).

    state_dict() then holds `<prefix>_extra_state`: a picklable dict referring to a cut of every
    table of the cluster, which the servers write into the folder set by
    ember.torch.set_state_dir(client, folder) after this process's pushes on that client were
    applied. All the modules on one client in one state_dict() call share one cut.
    load_state_dict() restores that cut (once per call and client, whatever the number of
    modules referring to it), into any server count with the same partition count; without the
    entry, strict loading fails with torch's missing-key error.
    """

    def __init__(self, *args, **kwargs):
        """Initialises the module (torch.nn.Module's arguments) and registers it for flushes."""
        super().__init__(*args, **kwargs)
        _live_modules.add(self)

    def _ember_rows_restored(self):
        """Called after the servers' rows were restored; nothing to drop by default."""

    def get_extra_state(self):
        """The state_dict() entry: a reference to a cut of the servers' rows (see the class)."""
        call, prefix = getattr(self, "_ember_state_call", (None, ""))
        _live_modules.add(self)
        return _cut_entry(self, call, prefix)

    def set_extra_state(self, state):
        """Restores the servers' rows from the cut that `state` (a state_dict() entry) refers
        to."""
        call, prefix = getattr(self, "_ember_state_call", (None, ""))
        _live_modules.add(self)
        _restore_cut(self, state, call, prefix)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        # `destination` is the one dict of the whole state_dict() call: modules on one client
        # share the cut written for it.
        self._ember_state_call = (destination, prefix)
        try:
            super()._save_to_state_dict(destination, prefix, keep_vars)
        finally:
            self._ember_state_call = (None, "")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        # torch passes every module of one load_state_dict() call the same missing_keys list
        # (each gets a state_dict of its own): it stands for the call.
        self._ember_state_call = (missing_keys, prefix)
        try:
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                          unexpected_keys, error_msgs)
        finally:
            self._ember_state_call = (None, "")


def save(path, model, optimizer=None):
    """Saves `model` into the folder `path` (made if missing; refused if it holds anything): the
    servers write a cut of their rows into `path`/rows (`rows-2`, ... for the modules on further
    clients) and `path`/dense.pt, written last, holds model.state_dict() (referring to that cut)
    and optimizer.state_dict(). `path` must be the same folder for the servers and this process.
    load(path, ...) restores both into a cluster of any server count. Returns the absolute path."""
    folder = os.path.abspath(os.fspath(path))
    if os.path.isdir(folder) and os.listdir(folder):
        raise FileExistsError("ember.torch.save: {} is not empty (save into a new folder, or "
                              "remove the old save first)".format(folder))
    os.makedirs(folder, exist_ok=True)
    _saving.folder, _saving.cuts = folder, {}
    try:
        model_state = model.state_dict()
    finally:
        _saving.folder, _saving.cuts = None, {}
    dense = {"format": _SAVE_FORMAT, "model": model_state,
             "optimizer": optimizer.state_dict() if optimizer is not None else None}
    partial = os.path.join(folder, _DENSE_FILE + ".partial")
    torch.save(dense, partial)
    os.replace(partial, os.path.join(folder, _DENSE_FILE))
    return folder


def load(path, model, optimizer=None, strict=True):
    """Restores a save() of `path` into `model` (its dense state, and the servers' rows from the
    cut in `path`, into any server count with the same partition count) and, when given, into
    `optimizer`. The folder may have moved since: cuts are looked up inside it. Returns what
    model.load_state_dict(..., strict=strict) returns."""
    folder = os.path.abspath(os.fspath(path))
    dense_path = os.path.join(folder, _DENSE_FILE)
    if not os.path.isfile(dense_path):
        raise FileNotFoundError("ember.torch.load: {} has no {} (not written by "
                                "ember.torch.save, or the save did not finish)".format(
                                    folder, _DENSE_FILE))
    dense = torch.load(dense_path, map_location="cpu")
    if not isinstance(dense, dict) or dense.get("format") != _SAVE_FORMAT:
        raise _ember.InvalidArgumentError("ember.torch.load: {} is not a save of format {}".format(
            dense_path, _SAVE_FORMAT))
    if optimizer is not None and dense["optimizer"] is None:
        raise _ember.InvalidArgumentError("ember.torch.load: {} was saved without an optimizer's "
                                          "state (pass optimizer=None)".format(folder))
    model_state = dense["model"]
    for key, value in list(model_state.items()):
        if _is_cut_entry(value):
            model_state[key] = dict(value, **{_CUT: os.path.join(
                folder, os.path.basename(os.path.normpath(value[_CUT])))})
    result = model.load_state_dict(model_state, strict=strict)
    if optimizer is not None:
        optimizer.load_state_dict(dense["optimizer"])
    return result
