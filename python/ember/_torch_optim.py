"""ember.torch.ServerOptimizer: the servers' optimizers of ember tables, as a torch.optim.Optimizer.

Without it, an ember module pushes each forward's gradient rows as soon as backward produced
them. Attached to a ServerOptimizer, the modules hand their rows to it instead: backward leaves
each forward's gradient in the `.grad` of that forward's rows, which the optimizer lists in the
param group of their table. So torch sees them as it sees any parameter's gradient:
- zero_grad() clears them and step() pushes them: the gradients of several forwards (micro-batches
  of gradient accumulation) are summed per id and pushed once, so the server's optimizer takes
  one step, with the group's learning rate;
- an lr_scheduler changes a group's "lr", which every push of that table carries to the servers;
- AMP's GradScaler unscales these gradients and skips step() when one is inf or NaN, before
  anything is pushed;
- clip_grad_norm_ over `gradient_tensors()` (with the dense parameters) scales them in place.
"""

import collections

import torch

from . import _ember

__all__ = ["ServerOptimizer"]

_Tracked = collections.namedtuple("_Tracked", "module ids rows keep")


class ServerOptimizer(torch.optim.Optimizer):
    """ServerOptimizer(modules, lr=None)

    `modules`: an nn.Module (every ember module in it) or a list of them. One param group per
    table they use, holding {"table", "lr", "optimizer"} (the table's server-side optimizer kind)
    and, between a forward and step(), that forward's rows, whose `.grad` backward fills. "lr"
    starts at the table's configured rate (or `lr` when given) and is sent with every push; the
    table's other hyper-parameters are its configuration's. zero_grad() clears the rows'
    gradients (a forward whose backward is still to come stays listed, so zero_grad() between
    forward and backward loses nothing). step() pushes the summed gradients of every forward since
    the last step and returns at once; a module's next forward waits for them.
    """

    def __init__(self, modules, lr=None):
        """See the class's documentation."""
        self._modules = _ember_modules_in(modules)
        if not self._modules:
            raise _ember.InvalidArgumentError("ServerOptimizer: no ember module in {}".format(
                type(modules).__name__))
        clients = {id(module.client) for module in self._modules}
        if len(clients) != 1:
            raise _ember.InvalidArgumentError("ServerOptimizer: the modules use {} clients; one "
                                              "optimizer serves the modules of one client".format(
                                                  len(clients)))
        self.client = self._modules[0].client
        specs = {spec["name"]: spec for spec in self.client.tables()}
        tables = list(dict.fromkeys(t for module in self._modules for t in module._ember_tables()))
        groups = [{"params": [self._placeholder(specs[t]["dim"])], "table": t,
                   "lr": float(lr if lr is not None else specs[t]["learning_rate"]),
                   "optimizer": specs[t]["optimizer"]} for t in tables]
        super().__init__(groups, {})
        self._tracked = {table: [] for table in tables}
        self.stats = collections.Counter()
        for module in self._modules:
            if getattr(module, "_server_optimizer", None) is not None:
                raise _ember.InvalidArgumentError("ServerOptimizer: {} already has one".format(
                    type(module).__name__))
            module._server_optimizer = self

    @staticmethod
    def _placeholder(dim):
        # A group must hold a parameter from the start (torch.optim refuses an empty one).
        return torch.zeros((0, dim), requires_grad=True)

    def _group(self, table):
        return next(group for group in self.param_groups if group["table"] == table)

    def track(self, module, table, ids, rows, keep=None):
        """Called by an ember module's forward: `rows` (a leaf requiring grad) are the rows of
        `ids` in `table`; `keep` (optional) masks the rows that have an id (not padding)."""
        self._tracked[table].append(_Tracked(module, ids, rows, keep))
        self._group(table)["params"].append(rows)

    def gradient_tensors(self):
        """The tensors whose `.grad` step() will push: pass them to clip_grad_norm_ with the
        dense parameters (their norm is that of the rows' summed gradient when every id comes
        once per step, as nn.Embedding's dense gradient's)."""
        return [entry.rows for entries in self._tracked.values() for entry in entries]

    @torch.no_grad()
    def step(self, closure=None):
        """Pushes, per table, the gradients of the forwards since the last step (summed per id)
        with the group's "lr". A closure, if given, is called first (with grad enabled)."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            table = group["table"]
            entries, self._tracked[table] = self._tracked[table], []
            group["params"] = group["params"][:1]
            self._push(table, entries, group["lr"])
        return loss

    def _push(self, table, entries, learning_rate):
        ids, grads = [], []
        for entry in entries:
            if entry.rows.grad is None:  # no backward reached this forward
                continue
            grad = entry.rows.grad
            if entry.keep is not None:
                grad = grad[entry.keep.to(grad.device)]
            ids.append(entry.ids)
            grads.append(grad.to("cpu", torch.float32))
        if not ids or sum(len(i) for i in ids) == 0:
            return
        if len(ids) == 1:  # one forward: its ids are unique already
            # A copy: the push reads it after step() returns, when zero_grad() may zero .grad.
            unique, summed = ids[0], grads[0].clone(memory_format=torch.contiguous_format)
        else:
            unique, inverse = torch.unique(torch.cat(ids), sorted=True, return_inverse=True)
            summed = torch.zeros((len(unique), grads[0].shape[1]), dtype=torch.float32)
            summed.index_add_(0, inverse, torch.cat(grads))
        if learning_rate <= 0:
            raise _ember.InvalidArgumentError("table '{}': lr {} (must be > 0)".format(
                table, learning_rate))
        future = self.client.push_async(table, unique.numpy(), summed.numpy(),
                                        learning_rate=learning_rate)
        self.stats["pushes"] += 1
        for module in dict.fromkeys(entry.module for entry in entries):
            module._note_push(future, table, unique)

    def state_dict(self):
        """Each group's table and hyper-parameters (the rows and their optimizer state are the
        servers': the modules' state_dict() refers to them)."""
        return {"state": {}, "param_groups": [
            {key: value for key, value in group.items() if key != "params"}
            for group in self.param_groups]}

    def load_state_dict(self, state_dict):
        """Takes the groups' hyper-parameters ("lr" and what schedulers keep) back by table."""
        saved = {group["table"]: group for group in state_dict["param_groups"]}
        missing = [group["table"] for group in self.param_groups if group["table"] not in saved]
        if missing:
            raise _ember.InvalidArgumentError("ServerOptimizer.load_state_dict: no group for "
                                              "table(s) {}".format(", ".join(missing)))
        for group in self.param_groups:
            group.update({key: value for key, value in saved[group["table"]].items()
                          if key != "params"})


def _ember_modules_in(modules):
    """The ember modules (those with _ember_tables) in a module or a list of modules, once each."""
    if isinstance(modules, torch.nn.Module):
        modules = [modules]
    found = []
    for module in modules:
        for inner in module.modules():
            if hasattr(inner, "_ember_tables") and inner not in found:
                found.append(inner)
    return found
