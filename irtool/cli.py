"""The `irtool` command line: a thin layer over the library calls."""
from __future__ import annotations

import sys
from typing import Callable

import click

from .errors import IrtoolError
from .progress import Steps, load_with_progress


def _run(fn: Callable[[], int | None]) -> None:
    """Run a command body: bad input -> one line on stderr and exit 2, never a traceback."""
    try:
        code = fn() or 0
    except IrtoolError as exc:
        click.echo(f"irtool: {exc}", err=True)
        sys.exit(2)
    except (OSError, MemoryError, RecursionError) as exc:
        click.echo(f"irtool: {type(exc).__name__}: {exc}", err=True)
        sys.exit(2)
    except Exception as exc:  # last resort: a bug in irtool, still one line and exit 2
        text = " ".join(str(exc).split())[:200]
        click.echo(f"irtool: internal error: {type(exc).__name__}: {text}", err=True)
        sys.exit(2)
    sys.exit(code)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="irtool")
def main() -> None:
    """Read MindSpore MindIR `.ir` dumps and show what the compiled graph does."""


@main.command()
@click.argument("path", type=click.Path(exists=True, dir_okay=True))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text",
              show_default=True, help="Output format; json is documented and versioned.")
@click.option("--lenient", is_flag=True, help="Skip bad nodes or lines (reported) instead of failing.")
@click.option("--check", "deep", is_flag=True,
              help="Also parse every attribute and type and resolve every reference (slower).")
@click.option("--stage", type=int, default=None, help="Only ranks (folder) / a file of this pipeline stage.")
@click.option("--pass", "pass_name", default=None,
              help="Folder: the pass whose file to read per rank, by substring (default: last *_validate_*).")
@click.option("--jobs", type=int, default=None, help="Folder: worker processes (default: one per rank, up to CPUs).")
@click.option("--all", "show_all", is_flag=True, help="Text and Markdown: every row of every table (default: 25).")
def summarize(path: str, fmt: str, lenient: bool, deep: bool, stage: int | None, pass_name: str | None,
              jobs: int | None, show_all: bool) -> None:
    """Summarize a dump file or rank_* folder: counts, operators, communication, stages, strategies."""
    import os

    from .report import summary as summary_mod
    from .report.tables import to_markdown, to_text

    limit = None if show_all else 25

    def body() -> int:
        if os.path.isdir(path):
            result = _summarize_dir(path, stage, pass_name, jobs, lenient, deep)
            blocks = summary_mod.dir_blocks(result, limit)
        else:
            from .dumpdir import require_stage
            from .ir import check
            from .parallel import analyze

            dump = load_with_progress(path, lenient)
            facts = analyze(dump)
            require_stage(path, stage, [0 if facts.stage is None else facts.stage])  # no pipeline: stage 0
            result = summary_mod.summarize(dump, facts, check(dump) if deep else ())
            blocks = summary_mod.summary_blocks(result, limit)
        if fmt == "json":
            click.echo(summary_mod.to_json(result))
        else:
            click.echo((to_markdown if fmt == "markdown" else to_text)(blocks), nl=False)
        return 0

    _run(body)


@main.command("diff")
@click.argument("old")
@click.argument("new")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text",
              show_default=True, help="Output format; json is documented (docs/diff.md) and versioned.")
@click.option("--fail-on", "fail_on", multiple=True, default=("comm,strategy",), show_default=True,
              help="Exit 1 on these differences: comm, strategy, ops, params, any (repeat or comma-separate).")
@click.option("--max-comm-bytes-increase", "max_increase", default=None,
              help="Also exit 1 when a rank's communication bytes grow by more than this (5%, 1048576, 10MB).")
@click.option("--pass", "pass_name", default="validate", show_default=True,
              help="Which dump of a folder to compare (`*_<pass>_*.ir`).")
@click.option("--stage", type=int, default=None, help="Only ranks on this pipeline stage (either side).")
def diff_cmd(old: str, new: str, fmt: str, fail_on: tuple[str, ...], max_increase: str | None,
             pass_name: str, stage: int | None) -> None:
    """Diff two dumps (files, rank folders or folders of rank_N): communication, strategies,
    operators, parameters. Exit 0 nothing relevant changed, 1 differences matching --fail-on, 2 error."""
    from . import diff as diff_mod
    from .diff import report as diff_report

    def body() -> int:
        diff_mod.parse_fail_on(fail_on)
        if max_increase:
            diff_mod.parse_threshold(max_increase)
        result = diff_mod.diff_dirs(old, new, pass_name=pass_name, stage=stage, loader=load_with_progress)
        render = {"json": diff_report.to_json, "markdown": diff_report.to_markdown}.get(fmt, diff_report.to_text)
        click.echo(render(result, fail_on, max_increase), nl=fmt == "json")
        return 1 if result.failures(fail_on, max_increase) else 0

    _run(body)


@main.command()
@click.argument("input_path", metavar="INPUT", type=click.Path(exists=True, dir_okay=True))
@click.option("-o", "--output", "out", required=True, type=click.Path(dir_okay=False), help="Output file.")
@click.option("--format", "fmt", type=click.Choice(["dot", "svg", "png", "pdf"]), default=None,
              help="Output format (default: OUT's suffix).")
@click.option("--stage", type=int, default=None, help="Pipeline stage to draw (its nodes plus its Send/Receive).")
@click.option("--subgraph", default=None, help="Only this subgraph (name, with or without @).")
@click.option("--scope", default=None, help="Only nodes under this name-scope prefix.")
@click.option("--comm-only", is_flag=True, help="Only communication nodes plus --hops of context.")
@click.option("--hops", type=int, default=1, show_default=True, help="Context hops around communication nodes.")
@click.option("--forward", "direction", flag_value="forward", help="Forward nodes only.")
@click.option("--backward", "direction", flag_value="backward", help="Backward (Gradients/) nodes only.")
@click.option("--depth", default=None, help="Fold by name scope to this depth; 'all' = no folding (default: auto).")
def render(input_path: str, out: str, fmt: str | None, stage: int | None, subgraph: str | None,
           scope: str | None, comm_only: bool, hops: int, direction: str | None, depth: str | None) -> None:
    """Draw a dump (file or rank_* folder) as DOT/SVG/PNG/PDF, folded by name scope."""
    from .report import export as export_mod
    from .report import render as render_mod

    def body() -> int:
        fmt_used = export_mod.format_for(out, fmt)
        dump, facts, chosen = render_mod.load_input(input_path, stage, load_with_progress)
        graph = render_mod.render_graph(dump, facts, stage=stage, subgraph=subgraph, scope=scope, comm_only=comm_only,
                                        hops=hops, direction=direction, depth=render_mod.parse_depth(depth))
        export_mod.export(graph, out, fmt_used, protect=(dump.path,))
        for note in graph.graph.get("notes", []):
            click.echo(f"irtool: {note}", err=True)
        d = graph.graph.get("depth")
        click.echo(f"{out}: {graph.number_of_nodes()} boxes, {graph.number_of_edges()} edges, "
                   f"depth {'all' if d is None else d} ({chosen})", err=True)
        return 0

    _run(body)


def _summarize_dir(path: str, stage: int | None, pass_name: str | None, jobs: int | None, lenient: bool,
                   deep: bool) -> dict:
    """`summarize DIR`: each rank's file analysed (and with `deep` checked) in a process pool,
    grouped by stage."""
    from functools import partial

    from .dumpdir import load_dir, map_ranks, rank_facts, require_stage
    from .report.summary import summarize_dir

    with Steps("ranks") as progress:
        ranks = map_ranks(partial(rank_facts, lenient=lenient, deep=deep), load_dir(path, pass_name), jobs, progress)
    require_stage(path, stage, [r.stage for r in ranks])
    return summarize_dir(path, ranks, stage)


if __name__ == "__main__":
    main()
