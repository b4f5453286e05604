"""Record a PyTorch model's low-precision numerics into an FP8 Lab session while it trains.

``attach(model, path, recipe=...)`` puts hooks on every ``torch.nn.Linear`` of the model. At every
``every``-th training step each Linear's three GEMM operands — the input x [N, in] (leading
dimensions flattened), the weight W [in, out] and the output gradient ∂loss/∂y [N, out] — are
quantized under the recipe by FP8 Lab's core, exactly as its own training engine quantizes them, and
recorded: amax and scale per step (and the amax history of delayed scaling), clipped and flushed
element counts, per-block statistics and maps, what-if recipes, and the first non-finite value.
``close()`` writes one run of type "training" with the layout of the project's own training runs,
so the desktop app's views, ``fp8lab-cli inspect``, ``report`` and ``decide`` open it.

Observation only, as Transformer Engine's debug API: the model trains in its own precision; the
recipe is measured on its tensors, not applied to them. Site names are the modules' qualified
names (``transformer.h.0.attn.c_attn``).

    run = fp8lab.torch.attach(model, "session.h5", recipe="te_mxfp8", what_if=["te_current", "nvfp4_te"])
    for step, (x, y) in enumerate(batches):
        loss = loss_fn(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        run.step(loss)
    run.close()

Works with PyTorch 1.13 (Debian's python3-torch) and later, on CPU tensors or any device (tensors are
copied to the host as float32 for recording).
"""

import json
import os
import warnings

import torch

from . import _core

__all__ = ["attach", "Attachment"]


def _linears(model):
    """(qualified name, module) of every nn.Linear the forward calls, in module order (the root model
    itself when it is one), and the names of those it cannot observe: nn.MultiheadAttention's
    out_proj, whose weight the attention function uses directly (the Linear is never called)."""
    out, skipped, inside_mha = [], [], set()
    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.MultiheadAttention):
            inside_mha.add(id(mod.out_proj))
            skipped.append(name or type(model).__name__)
    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.Linear) and id(mod) not in inside_mha:
            out.append((name or type(model).__name__, mod))
    return out, skipped


def _host_float32(t, cols):
    """t as a C-contiguous float32 numpy array [N, cols] on the host (a view where t already is one)."""
    t = t.detach()
    if t.dtype != torch.float32:
        t = t.float()
    if t.device.type != "cpu":
        t = t.cpu()
    return t.reshape(-1, cols).contiguous().numpy()


class Attachment:
    """The hooks of :func:`attach` and the run they record. ``step(loss=None)`` ends a training step,
    ``validation(loss)`` logs a validation loss, ``close()`` writes the run (also on ``with``-exit)
    and removes the hooks; ``run_id`` is the id stored."""

    def __init__(self, model, path, recipe, every, what_if, run_id, label, history_len, margin, map_every,
                 what_if_every, block_stats, seed, threads, on_nonfinite):
        if not isinstance(model, torch.nn.Module):
            raise TypeError("model: expected a torch.nn.Module, got %s" % type(model).__name__)
        for name, value in (("every", every), ("history_len", history_len), ("margin", margin),
                            ("map_every", map_every), ("what_if_every", what_if_every), ("seed", seed),
                            ("threads", threads)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError("%s: expected an integer, got %r" % (name, value))
        if every < 1:
            raise ValueError("every: expected an integer >= 1, got %r" % (every,))
        if not isinstance(recipe, str):
            raise TypeError("recipe: expected a recipe name (a string), got %r" % (recipe,))
        if isinstance(what_if, str):
            what_if = [what_if]
        what_if = [str(w) for w in (what_if or [])]
        try:
            self.path = os.fspath(path)
        except TypeError:
            raise TypeError("path: expected a file path (str or os.PathLike), got %r" % (path,)) from None
        self._sites, skipped = _linears(model)
        if not self._sites:
            raise ValueError("model: %s has no torch.nn.Linear to observe" % type(model).__name__)
        if skipped:
            warnings.warn("fp8lab.torch.attach: nn.MultiheadAttention (%s) computes its projections from its weights "
                          "directly, not by calling nn.Linear: its in- and out-projections are not observed"
                          % ", ".join(skipped), stacklevel=3)
        params = sum(p.numel() for p in model.parameters())
        sites = [(name, mod.in_features, mod.out_features) for name, mod in self._sites]
        self._run = _core.ObservedRun(
            sites, recipe, history_len=history_len, margin=margin, what_if=",".join(what_if),
            what_if_every=what_if_every, map_every=map_every, block_stats=block_stats, on_nonfinite=on_nonfinite,
            seed=seed, threads=threads, every=every, label=label or "", model=type(model).__name__,
            parameters=params)
        self.recipe = recipe
        self.every = every
        self.run_id = run_id or ("torch-" + str(recipe).replace("_", "-"))
        # A path or id that cannot be written is refused now, not after the training.
        _core.check_session_output(self.path, self.run_id)
        self._config = {
            "type": "training",
            "source": "fp8lab.torch.attach",
            "model": {"kind": "pytorch", "class": type(model).__name__, "parameters": params},
            "precision": "fp32" if str(recipe).lower() in ("fp32", "none") else "fp8",
            "recipe": str(recipe),
            "every": every,
            "what_if": what_if,
            "seed": seed,
            "history_len": history_len,
            "margin": margin,
        }
        if label:
            self._config["label"] = label
        self._step = 0
        self._closed = False
        self._written = False
        self._called = [False] * len(self._sites)   # in any recorded step
        self._in_step = [False] * len(self._sites)  # in the open step
        self._handles = []
        for index, (name, mod) in enumerate(self._sites):
            self._handles.append(mod.register_forward_hook(self._forward_hook(index)))

    # ---- hooks --------------------------------------------------------------------------------------
    def _recording(self, module):
        return (not self._closed and module.training and torch.is_grad_enabled()
                and self._step % self.every == 0)

    def _open(self):
        if not self._run.in_step:
            self._run.begin_step(self._step)
            self._in_step = [False] * len(self._sites)

    def _forward_hook(self, index):
        def hook(module, inputs, output):
            if not self._recording(module) or not inputs:
                return
            self._open()
            x = inputs[0]
            if self._in_step[index]:
                # A module called again in the step (weight sharing, gradient accumulation): its first
                # call's operands are the ones recorded; this call is only counted.
                self._run.note_repeated_call()
                return
            self._in_step[index] = True
            self._called[index] = True
            self._run.observe(index, "input", _host_float32(x, module.in_features))
            self._run.observe(index, "kernel", _host_float32(module.weight, module.in_features), True)
            if isinstance(output, torch.Tensor) and output.requires_grad:
                step = self._step

                def grad_hook(g):
                    if not self._closed and self._step == step and self._run.in_step:
                        self._run.observe(index, "output_grad", _host_float32(g, module.out_features))
                output.register_hook(grad_hook)
        return hook

    # ---- the loop's calls -----------------------------------------------------------------------------
    def step(self, loss=None):
        """Ends the current training step (call it once per optimizer step, after backward). ``loss``
        (a float or a 0-d tensor) is logged as the step's training loss. Returns the step number ended."""
        self._check_open()
        if loss is not None:
            self._run.log_loss(self._step, float(loss.detach() if isinstance(loss, torch.Tensor) else loss))
        if self._run.in_step:
            self._run.end_step()
        done = self._step
        self._step += 1
        return done

    def validation(self, loss):
        """Logs a validation loss measured after the last completed step (``decide`` ranks runs by
        the last one, as final_val_loss)."""
        self._check_open()
        self._run.log_validation(max(self._step - 1, 0), float(loss.detach() if isinstance(loss, torch.Tensor) else loss))

    @property
    def recorded_steps(self):
        return self._run.recorded_steps

    def close(self, cancelled=False):
        """Writes the run into the session file (appended atomically; an id in use gets "-2", ...),
        removes the hooks and returns the run id stored. When the write fails (the disk filled, the
        directory went away) the run is kept in memory: set ``.path`` and call ``close()`` again.
        Once written, further calls do nothing. Warns when no step was recorded (model.eval(),
        torch.no_grad()) or when a Linear was never called in a recorded step."""
        if self._written:
            return self.run_id
        if self._closed:
            # An earlier close() could not write the run (kept in memory): try again, at self.path.
            self.run_id = self._run.finish(self.path, self.run_id, json.dumps(self._config, indent=2), cancelled)
            self._written = True
            return self.run_id
        self._closed = True
        for h in self._handles:
            h.remove()
        self._handles = []
        if self._run.recorded_steps == 0:
            warnings.warn("fp8lab.torch.attach: no training step was recorded (the hooks record in train mode with "
                          "gradients enabled: model.train(), not under torch.no_grad(); and step() ends each step)",
                          stacklevel=2)
        else:
            never = [name for (name, _), c in zip(self._sites, self._called) if not c]
            if never:
                warnings.warn("fp8lab.torch.attach: %d Linear module(s) were never called in a recorded step, so their "
                              "operands are NaN in the session: %s" % (len(never), ", ".join(never)), stacklevel=2)
        self.run_id = self._run.finish(self.path, self.run_id, json.dumps(self._config, indent=2), cancelled)
        self._written = True
        return self.run_id

    def _check_open(self):
        if self._closed:
            raise ValueError("the attachment is closed (close() wrote run %r)" % self.run_id)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close(cancelled=exc_type is not None)
        return False


def attach(model, path, recipe="te_current", *, every=1, what_if=(), run_id=None, label=None, history_len=1024,
           margin=0, map_every=250, what_if_every=50, block_stats=True, seed=1, threads=0, on_nonfinite="continue"):
    """Hook every ``torch.nn.Linear`` of ``model`` and record its operands into the session ``path``.

    recipe: the training config's recipe names and the scaling presets — ``"fp32"`` (amaxes only),
       per-tensor ``"te_current"`` (TE Float8CurrentScaling), ``"te_current_pow2"``,
       ``"torchao_tensorwise"``, ``"te_delayed"`` (TE DelayedScaling: ``history_len``, ``margin``),
       ``"flax_delayed"``; block recipes ``"te_float8_block"``, ``"te_mxfp8"``, ``"te_nvfp4"``,
       ``"deepseek_v3"`` (also the run names ``per-tensor``, ``float8-block``, ``mxfp8``, ``nvfp4``).
       Per-tensor recipes cast inputs and weights to E4M3FN and gradients to E5M2 (TE HYBRID).
    every: record every N-th step (the hooks cost nothing on the others).
    what_if: recipes also measured on the same tensors without affecting anything (``"te_current"``,
       ``"mx_rceil"``, ``"nvfp4_te"``, ``"delayed_L16"``, ``"te_block_1x128@E5M2"``, ...), at every
       ``what_if_every``-th recorded step.
    map_every: full per-block maps every N recorded steps (and the last); block_stats: per-block
       statistics of the recipe at every recorded step.
    run_id / label: the run's id (default ``torch-<recipe>``) and label.
    Returns an :class:`Attachment`; call ``.step(loss)`` after each optimizer step and ``.close()``
    at the end (or use it as a context manager).
    """
    return Attachment(model, path, recipe, every, what_if, run_id, label, history_len, margin, map_every,
                      what_if_every, block_stats, seed, threads, on_nonfinite)
