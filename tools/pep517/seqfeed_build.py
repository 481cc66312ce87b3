"""meson-python's build backend (pyproject.toml names it), which leaves no file in the source tree.

meson-python 0.12 (Debian bookworm's python3-mesonpy) writes .mesonpy-native-file.ini into the source
directory and leaves it there; later versions write it in the build directory. Each hook here is
meson-python's, and removes that file afterwards when the hook created it.
"""
import functools
import os

import mesonpy

_NATIVE_FILE = ".mesonpy-native-file.ini"


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
