"""The cycle collector at start-up: what a command builds once and keeps is not walked again.

Importing a command makes tens of thousands of objects that live as long as the process
(modules, classes, functions), and loading a suite makes thousands that live as long as the
run. The collector walks young objects each time a few hundred more are made, so it would walk
these dozens of times and find nothing: about 20 ms of a cached re-run. :func:`paused` stops it
while they are made, and :func:`promote` moves every object that exists to the oldest
generation, which only a full collection walks (``gc.freeze()`` then ``gc.unfreeze()``;
nothing stays frozen, so ``gc.get_referrers`` and full collections see them as before).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


def promote() -> None:
    """Move every tracked object to the oldest generation."""
    gc.freeze()
    gc.unfreeze()


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No collection inside; afterwards, what exists is promoted and collection resumes."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        promote()
        if enabled:
            gc.enable()
