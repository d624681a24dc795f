"""A real pipeline folder whose tag order is not its print order (issue 37), made from the real file.

fixtures/mindir/pipeline_2stage_2p, copied with one change: rank 1's four forward Receives (from rank 0, printed
in micro batch order 0, 1, 2, 3 with `sr_tag: I64(k)` and `micro: I64(k)`, `pipeline_begin: I64(k)`) carry the tag,
micro batch and pipeline_begin of micro batch `PERMUTATION[k]` instead: as if MindSpore printed rank 1's Receives in
the order 2, 0, 3, 1. Every Send still has exactly one Receive of its tag and micro batch, so the folder is consistent
when Sends and Receives are paired by `sr_tag`, and pairs micro batch 0's Send with micro batch 2's Receive when they
are paired in print order. Nothing else of the dumps is touched; no fixture MindSpore printed has this order.
"""
from __future__ import annotations

import lzma
import re
import shutil
from pathlib import Path

PERMUTATION = (2, 0, 3, 1)  # the k-th forward Receive printed on rank 1 gets micro batch PERMUTATION[k]'s labels
SOURCE = "pipeline_2stage_2p"
_LABELS = re.compile(r"\b(sr_tag|micro|pipeline_begin): I64\(\d+\)")


def _relabel(line: str, micro: int) -> str:
    return _LABELS.sub(lambda m: f"{m.group(1)}: I64({micro})", line)


def permuted_folder(fixtures: Path, dest: Path) -> Path:
    """Write the folder into `dest` (rank_0 copied, rank_1's validate relabelled; step_parallel_end left out)."""
    src = fixtures / SOURCE
    shutil.copytree(src / "rank_0", dest / "rank_0")
    (dest / "rank_1").mkdir(parents=True)
    [validate] = sorted((src / "rank_1").glob("*_validate_*.ir.xz"))
    with lzma.open(validate, "rt") as fh:
        lines = fh.readlines()
    seen = 0
    for i, line in enumerate(lines):
        if "= Receive(" in line and "forward_unique_id" not in line:  # a forward Receive (backward ones name theirs)
            lines[i] = _relabel(line, PERMUTATION[seen])
            seen += 1
    assert seen == len(PERMUTATION), seen
    with lzma.open(dest / "rank_1" / validate.name, "wt") as fh:
        fh.writelines(lines)
    return dest
