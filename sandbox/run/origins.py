"""Where a script's tensors came from: torch's factories watched while the program runs, so that a
form run can make a launch's tensors again (sandbox.launch_form)."""
import contextlib
import math
import weakref

import torch


class Origins:
    """Where the program's tensors came from, so that a form run can make them again ("Make a form
    from this launch", sandbox.launch_form): torch's factories are watched while the program runs.
    A tensor made by a fill (`torch.zeros`, `torch.full`, `torch.empty`, ...) is that call; one drawn
    by a random factory (`torch.rand`, `torch.randn`, `torch.randint`, their `_like`) is the draws
    since the program's last `torch.manual_seed`, checked by drawing them again from that seed
    (anything else that drew from the generator would show there). A tensor changed since it was
    made (its version moved), a view of it, or one made otherwise has no origin, and says why."""
    RANDOM = ("rand", "randn", "randint", "rand_like", "randn_like", "randint_like")
    FILLS = ("zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like")
    MAX_DRAWS = 16  # draws since the seed that a form repeats; past them a tensor is not made again

    def __init__(self, seed):
        self.seed, self.draws = seed, []  # the draws since the last torch.manual_seed
        self.made = {}                    # id(tensor) -> (weak reference, version, origin)
        self.replaying = False

    @contextlib.contextmanager
    def watching(self):
        with contextlib.suppress(Exception):
            # `with torch.device(...)` knows the factories by identity, from a list it makes once: made
            # now, it names torch's own, not the watchers (the program's device blocks keep working).
            from torch.utils._device import _device_constructors
            _device_constructors()
        originals = {name: getattr(torch, name) for name in ("manual_seed",) + self.RANDOM + self.FILLS}
        for name, original in originals.items():
            setattr(torch, name, self.watched(name, original))
        try:
            yield
        finally:
            for name, original in originals.items():
                setattr(torch, name, original)

    def watched(self, name, original):
        origins = self

        def call(*args, **kwargs):
            value = original(*args, **kwargs)
            if origins.replaying:
                return value
            if name == "manual_seed":
                origins.seed, origins.draws = args[0] if args else kwargs.get("seed"), []
            elif isinstance(value, torch.Tensor):
                origins.made_by(name, value, args, kwargs)
            return value

        return call

    def made_by(self, name, tensor, args, kwargs):
        expression = factory_call(name.removesuffix("_like"), tensor, args, kwargs)
        if name in self.RANDOM:
            if expression is None or not isinstance(self.seed, int):
                self.draws = None  # a draw the form cannot repeat: the later ones cannot be repeated either
            elif self.draws is not None:
                self.draws.append(expression)
            origin = {"seed": self.seed, "draws": list(self.draws)} if self.draws and len(self.draws) <= self.MAX_DRAWS \
                else {"why": f"drawn after {self.MAX_DRAWS} other random tensors since the seed" if self.draws
                      else "drawn from a generator the form cannot set again (its seed or an earlier draw unknown)"}
        else:
            origin = {"expression": expression} if expression else {"why": f"made by torch.{name} with arguments "
                                                                           f"a form cannot repeat"}
        key = id(tensor)
        # forgotten with the tensor: a program that makes tensors in a loop keeps no more than it holds
        self.made[key] = (weakref.ref(tensor, lambda _: self.made.pop(key, None)), tensor._version, origin)

    def of(self, tensor):
        """The origin of a launch's tensor argument (docs/result.md, `values`)."""
        made = self.made.get(id(tensor))
        if made is None or made[0]() is not tensor:
            return {"why": "made by the program other than by one torch factory call (an expression, a view, a copy)"}
        _, version, origin = made
        if tensor._version != version:
            return {"why": "changed by the program since it was made"}
        if "draws" in origin and "checked" not in origin:
            origin["checked"] = self.drawn_again(origin, tensor)
        if origin.get("checked") is False:
            return {"why": "its generator was drawn from by more than the torch calls the form repeats"}
        return {k: v for k, v in origin.items() if k != "checked"}

    def drawn_again(self, origin, tensor):
        """The draws since the seed, repeated on the tensor's device: do they make the same values?"""
        devices = [tensor.device.index or 0] if tensor.device.type == "cuda" else []
        self.replaying = True
        try:
            with torch.random.fork_rng(devices=devices), torch.device(tensor.device):
                torch.manual_seed(origin["seed"])
                values = [eval(expression, {"torch": torch}) for expression in origin["draws"]]  # our own text
                return bool(values[-1].shape == tensor.shape and torch.equal(values[-1], tensor))
        except Exception:
            return False
        finally:
            self.replaying = False


def factory_call(name, tensor, args, kwargs):
    """The torch call that makes a tensor as `tensor` was made (its shape and dtype; a fill's value,
    randint's bounds), or None where they are not plain numbers."""
    shape, dtype = tuple(tensor.shape), f"torch.{str(tensor.dtype).removeprefix('torch.')}"
    if name == "randint":
        numbers = [a for a in args if isinstance(a, int) and not isinstance(a, bool)]
        low, high = kwargs.get("low", numbers[0] if len(numbers) > 1 else 0), kwargs.get("high", numbers[-1] if numbers else None)
        if not (isinstance(low, int) and isinstance(high, int)):
            return None
        return f"torch.randint({low}, {high}, {shape}, dtype={dtype})"
    if name == "full":
        value = kwargs.get("fill_value", args[1] if len(args) > 1 else None)  # full(size, v), full_like(t, v)
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            value = value.item()
        if not isinstance(value, (bool, int, float)) or isinstance(value, float) and not math.isfinite(value):
            return None
        return f"torch.full({shape}, {value!r}, dtype={dtype})"
    return f"torch.{name}({shape}, dtype={dtype})"
