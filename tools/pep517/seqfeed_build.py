"""meson-python's build backend (pyproject.toml names it), which leaves no file in the source tree.

meson-python 0.12 (Debian bookworm's python3-mesonpy) writes .mesonpy-native-file.ini into the source
directory and leaves it there; later versions write it in the build directory. Each hook here is
meson-python's, and removes that file afterwards when the hook created it. pip and python -m build
import this module from the tree, which writes its bytecode here: removed too.
"""
import functools
import importlib.util
import os

import mesonpy

_NATIVE_FILE = ".mesonpy-native-file.ini"

# Importing this module from the source tree wrote its bytecode beside it (the
# import system writes it before running the module): removed, with the
# directory when that leaves it empty.
try:
    _cached = importlib.util.cache_from_source(__file__)
    os.unlink(_cached)
    os.rmdir(os.path.dirname(_cached))
except (NotImplementedError, OSError):
    pass


def _tidy(hook):
    @functools.wraps(hook)
    def run(*args, **kwargs):
        existed = os.path.exists(_NATIVE_FILE)
        try:
            return hook(*args, **kwargs)
        finally:
            if not existed:
                try:
                    os.unlink(_NATIVE_FILE)
                except FileNotFoundError:
                    pass
    return run


get_requires_for_build_sdist = _tidy(mesonpy.get_requires_for_build_sdist)
get_requires_for_build_wheel = _tidy(mesonpy.get_requires_for_build_wheel)
build_sdist = _tidy(mesonpy.build_sdist)
build_wheel = _tidy(mesonpy.build_wheel)
# Hooks of later meson-python versions (pip install -e . from 0.13 on).
for _name in ("get_requires_for_build_editable", "build_editable", "prepare_metadata_for_build_wheel",
              "prepare_metadata_for_build_editable"):
    if hasattr(mesonpy, _name):
        globals()[_name] = _tidy(getattr(mesonpy, _name))
