"""What a long-lived process keeps of what it read (a notebook, the test suite reading the same files again).

`IRTOOL_CACHE=N` keeps the last N dumps read and their fact tables (default 0: nothing kept, a command reads
each file once). A file is the same while its name, size and modification time are; one modified in the last
two seconds is read afresh (it may be written again within the clock's tick). Nothing writes into a `Dump` once
it is read and a fact table only fills in facts of its dump, so a kept one is shared."""
from __future__ import annotations

import os
from collections import OrderedDict
from typing import Callable, Hashable, TypeVar

T = TypeVar("T")
SIZE = int(os.environ.get("IRTOOL_CACHE", "0") or 0)


class Kept(OrderedDict):
    """The last `SIZE` values made, by key."""

    def get_or_make(self, key: Hashable, make: Callable[[], T]) -> T:
        if key in self:
            self.move_to_end(key)
            return self[key]
        value = self[key] = make()
        if len(self) > SIZE:
            self.popitem(last=False)
        return value
