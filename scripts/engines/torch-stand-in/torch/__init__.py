"""An empty stand-in for PyTorch, for scripts/engines/check-schemas.py only.

xgrammar's Python package imports torch at import time for its token-bitmask helpers
(`matcher.py` builds a constant tensor). Compiling a JSON Schema and matching a string
against the grammar never touch a tensor: both are xgrammar's C++ core. PyPI's only torch
for this machine is the CUDA build (about 3 GB with its libraries), so the checker puts this
module first on the path instead. Any name it is asked for is a
placeholder that fails loudly when used.
"""

int32 = "int32"


class Tensor:  # noqa: D101 - a type name for annotations only
    pass


def tensor(*_args, **_kwargs):
    return Tensor()


class _Absent:
    """A name looked up at import time (tvm-ffi maps torch's dtypes); never usable."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<torch stand-in {self.name}>"

    def __call__(self, *_args, **_kwargs):
        raise RuntimeError(f"torch.{self.name} was called: the stand-in has no PyTorch behind it")

    def __getattr__(self, attr):
        return _Absent(f"{self.name}.{attr}")


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Absent(name)
