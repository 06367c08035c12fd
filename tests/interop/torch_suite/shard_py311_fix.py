# Makes Debian's torch 1.13 DDP importable under Python 3.11 for the test suite.
#
# torch 1.13's torch/distributed/_shard/sharded_tensor/metadata.py declares a dataclass field
# with an instance as default, `field(default=TensorProperties())`, which Python 3.11's
# dataclasses reject ("mutable default ... is not allowed"), so `import torch.distributed._shard`
# fails. torch's distributed suite turns on DDP's ReplicatedTensor mode in every test process
# (_set_ddp_with_replicated_tensor(True) in TestDistBackend._run), and that mode imports it:
# without this fix every DDP test fails with that ValueError, for every backend. Installing
# this import hook loads that one module with the field rewritten as torch 2.0 writes it,
# `field(default_factory=TensorProperties)`; nothing else changes.
import importlib.abc
import importlib.util
import sys

MODULE = "torch.distributed._shard.sharded_tensor.metadata"
BROKEN = "field(default=TensorProperties())"
FIXED = "field(default_factory=TensorProperties)"


class _Fix(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name != MODULE:
            return None
        sys.meta_path.remove(self)  # find the real file with the other finders
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        self.origin = spec.origin
        return importlib.util.spec_from_loader(name, self, origin=spec.origin)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        with open(self.origin) as f:
            source = f.read()
        module.__file__ = self.origin
        exec(compile(source.replace(BROKEN, FIXED), self.origin, "exec"), module.__dict__)


def install():
    if sys.version_info >= (3, 11) and not any(isinstance(f, _Fix) for f in sys.meta_path):
        sys.meta_path.insert(0, _Fix())
