"""The golden cases: `irtool summarize/diff --format json` of real fixtures, recorded before the
package was split into layers and compared byte for byte since (tests/test_golden.py).

Regenerate only when an issue changes the output on purpose, in the same commit, saying why:
    python tests/golden/cases.py --update
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent
F = "fixtures/mindir"

SUMMARIZE = {
    "semi_auto_r0_validate": f"{F}/semi_auto_8p/rank_0/19_validate_0078.ir.xz",
    "semi_auto_r5_spe": f"{F}/semi_auto_8p/rank_5/step_parallel_end_0019.ir.xz",
    "pipeline2_r4_validate": f"{F}/pipeline_2stage_8p/rank_4/19_validate_0078.ir.xz",
    "pipeline4_r2_spe": f"{F}/pipeline_4stage_8p/rank_2/step_parallel_end_0019.ir.xz",
    "opt_parallel_r7_validate": f"{F}/opt_parallel_8p/rank_7/19_validate_0078.ir.xz",
    "gpt_small_r4_validate": f"{F}/gpt_small_dp2mp2pp2/rank_4/19_validate_0078.ir.xz",
    "lazyinline_r0_validate": f"{F}/gpt_small_dp2mp2pp2_lazyinline/rank_0/19_validate_0087.ir.xz",
    "moe_r3_validate": f"{F}/moe_8p/rank_3/19_validate_0078.ir.xz",
    "layout_r5_validate": f"{F}/layout_8p/rank_5/19_validate_0078.ir.xz",
    "flash_sp_r0_validate": f"{F}/flash_attention_sp_8p/rank_0/19_validate_0078.ir.xz",
    "control_flow_validate": f"{F}/control_flow_cpu/rank_0/19_validate_0075.ir.xz",
    "pipeline2_r0_split": f"{F}/pipeline_2stage_8p/rank_0/11_pipeline_split_0014.ir.xz",
    "pipeline2_dir": f"{F}/pipeline_2stage_8p",
    "gpt_small_dir": f"{F}/gpt_small_dp2mp2pp2",
}
DIFF = {  # OLD, NEW and options: two configurations rank with rank (`--by-rank`), and as one logical graph
    "diff_pipeline2_pipeline4": (f"{F}/pipeline_2stage_8p/rank_4", f"{F}/pipeline_4stage_8p/rank_4", "--by-rank"),
    "diff_semi_auto_data_parallel": (f"{F}/semi_auto_8p/rank_0", f"{F}/data_parallel_8p/rank_0", "--by-rank"),
    "diff_edited_strategy": (f"{F}/semi_auto_8p/rank_0", "fixtures/edited/semi_auto_8p_rank_0_validate_fc1_strategy.ir"),
    "diff_gpt_small_r0_r1": (f"{F}/gpt_small_dp2mp2pp2/rank_0", f"{F}/gpt_small_dp2mp2pp2/rank_1"),
    "diff_logical_sgd_adamw": (f"{F}/pipeline_unequal_sgd_8p", f"{F}/pipeline_even_adamw_8p"),
}


def run(args: list[str]) -> str:
    """stdout of `irtool ARGS` run from the repository root (paths stay relative), in this process: a test
    process has read most of these dumps already (tests/conftest.py keeps them)."""
    from click.testing import CliRunner

    from irtool.cli import main

    here = os.getcwd()
    os.chdir(ROOT)
    try:
        return CliRunner().invoke(main, args).stdout
    finally:
        os.chdir(here)


def outputs() -> dict[str, str]:
    out = {name: run(["summarize", "--format", "json", path]) for name, path in SUMMARIZE.items()}
    out.update({name: run(["diff", "--format", "json", *args]) for name, args in DIFF.items()})
    return out


if __name__ == "__main__" and "--update" in sys.argv:
    for name, text in outputs().items():
        (GOLDEN / f"{name}.json").write_text(text, encoding="utf-8")
        print(name, len(text))
