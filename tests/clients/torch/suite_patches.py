"""Makes torch's distributed_test.py treat the weft backend as gloo's peer.

The 1.13 suite gates many CPU tests to gloo by name: decorators such as
`sandcastle_skip_if(BACKEND != "gloo", ...)` and `require_backend({"gloo"})`,
evaluated when the module is imported, feature tables
(`DistTestCases.backend_feature`) and the profiler allow-lists. Loading the
module through `load_suite()` rewrites those name tests so that "weft" passes
wherever "gloo" does; nothing else in the suite changes. With BACKEND=gloo the
rewrite changes no outcome (every rewritten test still admits gloo).
"""
import importlib.abc
import importlib.util
import re
import sys

SUITE = "torch.testing._internal.distributed.distributed_test"
PEER = "weft"

# Source rewrites: (pattern, replacement). Each keeps gloo and adds weft.
_REWRITES = [
    (r'BACKEND\s*==\s*"gloo"', f'BACKEND in ("gloo", "{PEER}")'),
    (r'BACKEND\s*!=\s*"gloo"', f'BACKEND not in ("gloo", "{PEER}")'),
    (r'require_backend\(\{"gloo"\}\)', f'require_backend({{"gloo", "{PEER}"}})'),
]


def _patch_feature_tables():
    from torch.testing._internal.common_distributed import DistTestCases

    for backends in DistTestCases.backend_feature.values():
        if "gloo" in backends:
            backends.add(PEER)
    # "plugin" makes require_backends_available() accept a registered backend.
    DistTestCases.backend_feature["plugin"].add(PEER)


class _Loader(importlib.abc.SourceLoader):
    def __init__(self, path):
        self.path = path

    def get_filename(self, fullname):
        return self.path

    def get_data(self, path):
        with open(path, "rb") as f:
            data = f.read()
        if path != self.path:
            return data
        text = data.decode()
        for pattern, replacement in _REWRITES:
            text = re.sub(pattern, replacement, text)
        return text.encode()

    def path_stats(self, path):
        raise OSError  # never use the cached bytecode of the unpatched file


def load_suite():
    """Imports distributed_test.py with weft registered beside gloo."""
    _patch_feature_tables()
    if SUITE not in sys.modules:
        spec = importlib.util.find_spec(SUITE)
        patched = importlib.util.spec_from_file_location(SUITE, spec.origin, loader=_Loader(spec.origin))
        module = importlib.util.module_from_spec(patched)
        sys.modules[SUITE] = module
        patched.loader.exec_module(module)
    module = sys.modules[SUITE]
    # Tests of backends on these lists check the backend's profiler events
    # ("gloo:all_reduce"); weft names its events the same way.
    for name in ("PROFILING_SUPPORTED_BACKENDS", "SEND_RECV_PROFILING_SUPPORTED_BACKENDS"):
        allowed = getattr(module, name)
        if PEER not in allowed:
            allowed.append(PEER)
    return module
