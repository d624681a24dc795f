"""The `irtool` command line: a thin layer over the library calls."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Callable, Iterator

import click

from .errors import InputError, IrtoolError
from .progress import Steps, load_with_progress
from .selection import Policy, Selection, not_in_folder

if TYPE_CHECKING:
    from .parallel.hardware import Profile

_opened: list[Selection] = []  # the selections of the command running (`_select`), for `_run`'s errors
_told: set[str] = set()  # what `_said` has put on stderr for the command running


def _select(path: str, stage: int | None, pass_name: str | None, policy: Policy) -> Selection:
    """A folder command's selection: partial (a rank that cannot be read is recorded, the others
    answered for), and known to `_run`, which lists its unreadable ranks if the command fails."""
    sel = Selection.of(path, stage, pass_name, policy, partial=True)
    _opened.append(sel)
    return sel


def _run(fn: Callable[[], int | None]) -> None:
    """Run a command body: bad input -> one line on stderr and exit 2, never a traceback. When the
    command fails after some ranks could not be read (a stage none of the ranks read is on), their
    located errors come first."""
    _opened.clear()
    _told.clear()
    try:
        code = fn() or 0
    except IrtoolError as exc:
        _fail(f"irtool: {exc}")
    except (OSError, MemoryError, RecursionError) as exc:
        _fail(f"irtool: {type(exc).__name__}: {exc}")
    except Exception as exc:  # last resort: a bug in irtool, still one line and exit 2
        text = " ".join(str(exc).split())[:200]
        click.echo(f"irtool: internal error: {type(exc).__name__}: {text}", err=True)
        sys.exit(2)
    sys.exit(code)


def _fail(line: str) -> None:
    """The command failed: what its selections left out, then `line`, and exit 2."""
    _said(*_opened)
    if line not in _told:  # no rank could be read: the first one's error is the error itself
        click.echo(line, err=True)
    sys.exit(2)


REPORT_FORMATS = ("text", "json", "markdown")


def _format_option(doc: str) -> Callable:
    """`--format` of the commands that print a report: one choice, one default, everywhere."""
    return click.option("--format", "fmt", type=click.Choice(REPORT_FORMATS), default="text", show_default=True,
                        help=f"Output format; json is documented ({doc}) and versioned.")


def _emit(fmt: str, writers: dict[str, Callable[[], str | Iterator[str]]]) -> None:
    """Print the report in the chosen format: the one place a report's format is chosen. A writer
    may give its text in pieces ending with a newline (a large dump's JSON is never one string)."""
    text = writers[fmt]()
    if not isinstance(text, str):
        for piece in text:
            click.echo(piece, nl=False)
        return
    click.echo(text if text.endswith("\n") else text + "\n", nl=False)


def _stage_option(doc: str) -> Callable:
    return click.option("--stage", type=int, default=None, help=doc + " A dump without pipeline is all of stage 0.")


def _pass_option() -> Callable:
    return click.option("--pass", "pass_name", default=None,
                        help="Folder: the pass to read per rank, by name or a part of one that names a single "
                             "pass (default: validate).")


def _lenient_option() -> Callable:
    """`--lenient`, one meaning in every command: a bad node or line is skipped (each said on stderr as
    a warning, `Selection.skipped`) instead of failing."""
    return click.option("--lenient", is_flag=True, help="Skip bad nodes or lines (reported) instead of failing.")


def _part_size_option() -> Callable:
    """`--part-size` of the Model Explorer commands (view, export)."""
    from .view import PART_SIZE

    return click.option("--part-size", type=click.IntRange(min=1), default=PART_SIZE, show_default=True,
                        help="A graph of more operators opens on an overview with a graph per scope behind it "
                             "(Model Explorer takes seconds for a whole large graph, under one for a part).")


def _warn_skips(*sels: Selection) -> None:
    # dict.fromkeys: both sides of a diff may read the same file; its skips are said once
    for message in dict.fromkeys(m for sel in sels for m in sel.skipped):
        click.echo(f"irtool: warning: {message}", err=True)


def _notes(sel: Selection) -> None:
    for note in sel.notes:
        click.echo(f"irtool: {note}", err=True)


def _said(*sels: Selection) -> None:
    """Say on stderr what a folder's selection left out: the dump files ignored (outside the `rank_N/`
    folders) and each rank not read with its located error; each line once per command (both sides
    of a diff may be the same folder)."""
    for line in [*(f"irtool: {sel.path}: ignored {len(sel.ignored)} dump file{'s' if len(sel.ignored) != 1 else ''} "
                   f"outside the rank_N folders: {', '.join(sel.ignored)}" for sel in sels if sel.ignored),
                 *(f"irtool: {u.error}" for sel in sels for u in sel.unreadable)]:
        if line not in _told:
            _told.add(line)
            click.echo(line, err=True)


def _skipped(*sels: Selection) -> int:
    """A partial folder (issue 18): the files ignored and each rank not read, with its error, on
    stderr; exit code 2 when a rank was not read."""
    _said(*sels)
    return 2 if any(sel.unreadable for sel in sels) else 0


def _unreadable(sel: Selection, head: str, says: str, absent: str = "") -> list:
    """The head of a folder's report followed by the ranks not in the folder (`absent`), `says` and how many
    ranks were not read, a section listing them and one listing the dump files ignored; the head alone when
    every rank was read and none was ignored."""
    from .present import DASH, Table

    head = f"{head}; {absent}" if absent else head
    out = [head]
    if sel.unreadable:
        n = len(sel.unreadable)
        rows = [[DASH if u.rank is None else str(u.rank), u.error] for u in sel.unreadable]
        out = [f"{head}; {n} rank{'s' if n != 1 else ''} not read (below): {says}",
               Table(f"Unreadable ranks: {n}", ["rank", "error"], rows)]
    if sel.ignored:
        out.append(Table(f"Ignored: {len(sel.ignored)} dump file{'s' if len(sel.ignored) != 1 else ''} outside "
                         "the rank_N folders", ["file"], [[f] for f in sel.ignored]))
    return out


def collect_garbage_rarely() -> None:
    """A dump is millions of objects that live until exit, and reading and analysing it allocates
    millions more: with Python's default thresholds (700, 10, 10) the collector walks them over
    and over, a fifth of the CPU of `summarize` on a 68 MB dump. The little cyclic garbage made
    (a few hundred objects) is still collected, less often."""
    import gc

    gc.set_threshold(100_000, 50, 100)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="irtool")
def main() -> None:
    """Read MindSpore MindIR `.ir` dumps and show what the compiled graph does."""
    import shutil
    import sys

    collect_garbage_rarely()

    from .present import set_text_width

    # text for a terminal wraps to its width; piped text keeps every cell on one line (names whole for grep)
    set_text_width(shutil.get_terminal_size().columns if sys.stdout.isatty() else None)


@main.command()
@click.argument("path", type=click.Path(exists=True, dir_okay=True))
@_format_option("README")
@_lenient_option()
@click.option("--check", "deep", is_flag=True,
              help="Also parse every attribute and type and resolve every reference (slower).")
@_stage_option("Only ranks (folder) / a file of this pipeline stage.")
@_pass_option()
@click.option("--jobs", type=int, default=None,
              help="Folder: worker processes (default: $IRTOOL_JOBS, else one per rank up to CPUs).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Folder: analyse the ranks on this Dask distributed scheduler (tcp://host:8786) instead of locally.")
@click.option("--all", "show_all", is_flag=True, help="Text and Markdown: every row of every table (default: 25).")
@click.option("--by-scope-depth", "depth", type=click.IntRange(min=1), default=None,
              help="Communication per layer by the first N scope components (default: repeated cells).")
@click.option("--cost", "with_cost", is_flag=True,
              help="Also FLOPs and memory per rank, and for a folder the stages' balance (docs/cost.md).")
@click.option("--device-memory", default=None, metavar="SIZE",
              help="With --cost (implied): say whether each rank fits in SIZE (64GiB, 80GB) and the headroom.")
@click.option("--hardware", "hardware_spec", default=None, metavar="NAME|FILE",
              help="With --cost (implied): time on this profile (910b, 910c, h100, h800, or a TOML file; "
                   "default 910b; none: FLOPs only; a profile named sets --device-memory too; docs/timing.md).")
@click.option("--calibrate", "trace", default=None, metavar="FILE",
              help="With --cost (implied): fit the profile to a profiled run's msprof-analyze cluster_step_trace_time.csv "
                   "or step_trace_time.csv and say the fitted figures (docs/timing.md).")
def summarize(path: str, fmt: str, lenient: bool, deep: bool, stage: int | None, pass_name: str | None,
              jobs: int | None, scheduler: str | None, show_all: bool, depth: int | None, with_cost: bool,
              device_memory: str | None, hardware_spec: str | None, trace: str | None) -> None:
    """Summarize a dump file or rank_* folder: counts, operators, communication, stages, strategies."""
    from .present import DEFAULT_LIMIT, json_pieces, to_markdown, to_text
    from .report import summary as summary_mod

    limit = None if show_all else DEFAULT_LIMIT

    def body() -> int:
        want_cost = with_cost or device_memory is not None or hardware_spec is not None or trace is not None
        if want_cost:  # the cost model's modules are loaded only when asked for
            from .present.timing import calibration_blocks, profile_text
            from .report import cost as cost_mod

            hardware, limit_bytes = _hardware(hardware_spec, device_memory)
            named = "" if hardware is None else profile_text(hardware, hardware_spec is None)
        else:
            limit_bytes = None
        cost = calibration = None
        sel = _select(path, stage, pass_name, Policy(jobs, scheduler, lenient, deep, load_with_progress))
        if sel.is_file:
            from .ir import check

            one = sel.first()
            result = summary_mod.file_summary(one.dump, one.facts, check(one.dump) if deep else (), depth=depth)
            if want_cost:
                one_cost = cost_mod.rank_cost(one.dump, one.facts, result.job, limit_bytes, hardware, named,
                                              hardware_spec is None)
                cost = cost_mod.file_json(one_cost)
                if trace is not None:
                    calibration = cost_mod.calibrate(trace, [one_cost.cost.timing], result.job, hardware)
                    cost["calibration"] = cost_mod.calibration_json(calibration)

            def data() -> dict:
                return result.as_dict(stream=True)

            def blocks() -> list:
                shown = summary_mod.summary_blocks(result, limit)
                if cost is None:
                    return shown
                more = [] if calibration is None else calibration_blocks(calibration, hardware)
                return cost_mod.file_headline(one_cost) + shown + cost_mod.rank_blocks(one_cost, limit) + more
        else:
            from functools import partial as bind

            from .dumpdir import map_ranks

            def fetch(files: list) -> list:  # one rank per different answer of a stage, read again for its tables
                keep = bind(summary_mod.rank_digest, lenient=lenient, keep=True)
                return map_ranks(keep, files, jobs, None, scheduler)

            with Steps("ranks") as progress:  # each rank folded as it arrives: none held
                # every rank: the job is the folder's; the tables keep those of the selected stage;
                # with --cost the first rank of each stage measures its cost there too
                ranks = sel.stream(progress, of=bind(summary_mod.rank_digest, cost=want_cost,
                                                     hardware=hardware if want_cost else None), every_stage=True)
                folder = summary_mod.dir_summary(path, ranks, sel.stage, fetch=fetch)
            if want_cost:
                costs = dict(folder.costs)
                missing = {s: f for s, f in sorted(folder.first_ranks.items()) if s not in costs}
                if missing:  # no rank of these stages could tell it was their first: measured here
                    with Steps("cost") as progress:
                        measure = bind(cost_mod.measure_rank, lenient=lenient, hardware=hardware)
                        costs.update(zip(missing, map_ranks(measure, list(missing.values()), jobs, progress,
                                                            scheduler)))
                    folder.costs = costs  # the folder's rows say the peak of the rank measured for its stage too
                balance = cost_mod.dir_cost(costs, folder.job, sel.stage, limit_bytes)
                cost = cost_mod.dir_json(balance, folder.job, cost_mod.hardware_json(hardware, hardware_spec is None))
                if trace is not None:
                    calibration = cost_mod.calibrate(trace, [f.cost.timing for f in balance.stages], folder.job,
                                                     hardware)
                    cost["calibration"] = cost_mod.calibration_json(calibration)

            def data() -> dict:
                return {**folder.as_dict(), "unreadable": [u.as_dict() for u in sel.unreadable],
                        "ignored": sel.ignored}

            def blocks() -> list:
                shown = summary_mod.dir_blocks(folder, limit)
                # the headline's first line says how many ranks were not read; their list follows the folder's line
                absent = not_in_folder(folder.job.world_size.value, folder.job.ranks, sel.unreadable)
                head, *table = _unreadable(sel, str(shown[0]), "the tables are of the other ranks", absent)
                i = next(k for k, b in enumerate(shown) if isinstance(b, str) and b.startswith(path))
                shown[0:1], shown[i + 1:i + 1] = [head], table
                if cost is None:
                    return shown
                more = [] if calibration is None else calibration_blocks(calibration, hardware)
                return cost_mod.headline(balance, named) + shown + cost_mod.dir_blocks(balance, folder.job, limit) + more

        def doc() -> dict:
            d = data()
            if cost is not None:
                d["cost"] = cost  # docs/cost.md#json
            return d

        code = _skipped(sel)
        _emit(fmt, {"json": lambda: json_pieces(doc(), ensure_ascii=False), "text": lambda: to_text(blocks()),
                    "markdown": lambda: to_markdown(blocks())})
        return code

    _run(body)


def _hardware(spec: str | None, device_memory: str | None) -> tuple[Profile | None, int | None]:
    """`--hardware` (`none`: FLOPs only, no time; default 910b) and the `--device-memory` limit: as given, else
    the memory of a profile named."""
    from .parallel.hardware import load_profile
    from .report.cost import parse_memory

    hardware = None if (spec or "").lower() == "none" else load_profile(spec)
    limit = parse_memory(device_memory) if device_memory else \
        (hardware.memory_bytes if spec and hardware is not None else None)
    return hardware, limit


@main.command("plan")
@click.argument("path", type=click.Path(exists=True, file_okay=False))
@_format_option("docs/plan.md")
@_pass_option()
@click.option("--devices", type=click.IntRange(min=1), default=None, help="Devices to plan for (default: the compile's).")
@click.option("--device-memory", default=None, metavar="SIZE", help="Only candidates whose peak fits in SIZE are ranked.")
@click.option("--hardware", "hardware_spec", default=None, metavar="NAME|FILE",
              help="Time on this profile (910b, 910c, h100, h800 or a TOML file; default 910b; none: no time; "
                   "a profile named sets --device-memory too; docs/timing.md).")
@click.option("--global-batch", type=click.IntRange(min=1), default=None, help="Samples per step (default: the compile's).")
@click.option("--micro", "micros", type=click.IntRange(min=1), multiple=True, help="Also these micro batch counts.")
@click.option("--layers", "num_layers", type=click.IntRange(min=1), default=None,
              help="Plan the model with this many layers (the compiled layers as the template).")
@click.option("--only", "only_spec", default=None, metavar="KEY=VALUE,...",
              help="Predict this one configuration: dp, mp, pp, micro, batch, recompute, opt_shard, offset, layers "
                   "(e.g. dp=1,mp=4,pp=2,micro=8; the rest as compiled; docs/plan.md).")
@click.option("--all", "show_all", is_flag=True, help="Text and Markdown: every row of every table (default: 25).")
def plan_cmd(path: str, fmt: str, pass_name: str | None, devices: int | None, device_memory: str | None,
             hardware_spec: str | None, global_batch: int | None, micros: tuple[int, ...], num_layers: int | None,
             only_spec: str | None, show_all: bool) -> None:
    """Predict other dp x mp x pp, micro batch, recompute and optimizer-sharding configurations from one
    compiled folder, ranked by step time among those that fit (docs/plan.md)."""
    def body() -> int:
        from .parallel import plan as plan_mod
        from .plan import only, read_basis
        from .plan.report import as_dict, blocks
        from .present import json_pieces, to_markdown, to_text

        hardware, limit = _hardware(hardware_spec, device_memory)
        sel = _select(path, None, pass_name, Policy(loader=load_with_progress))
        with Steps("ranks") as progress:
            b = read_basis(sel, hardware, progress)
        if only_spec is not None:
            c = only(only_spec, b, global_batch, num_layers)
            plans = plan_mod.plan(b, [c], devices or c.dp * c.mp * c.pp, limit)
            if plans[0].refused:
                raise InputError(f"{path}: cannot plan {c.label()}: {'; '.join(plans[0].refused)}")
        else:
            n = devices or b.devices
            plans = plan_mod.plan(b, plan_mod.candidates(b, n, global_batch, micros, num_layers=num_layers), n, limit)
        rows = None if show_all else 25
        _emit(fmt, {"text": lambda: to_text(blocks(b, plans, rows)), "markdown": lambda: to_markdown(blocks(b, plans, rows)),
                    "json": lambda: json_pieces(as_dict(b, plans))})
        return _skipped(sel)  # the ranks not read, with their errors, and exit 2 (as every folder command)
    _run(body)


@main.command("diff")
@click.argument("old")
@click.argument("new")
@_format_option("docs/diff.md")
@click.option("--fail-on", "fail_on", multiple=True, default=("config,comm,strategy",), show_default=True,
              help="Exit 1 on these differences: config, comm, strategy, ops, params, any (repeat or comma-separate).")
@click.option("--max-comm-bytes-increase", "max_increase", default=None,
              help="Also exit 1 when a rank's communication bytes grow by more than this (5%, 1048576, 10MB).")
@_pass_option()
@_stage_option("Only ranks on this pipeline stage (either side).")
@_lenient_option()
@click.option("--all", "show_all", is_flag=True, help="Text and Markdown: every row of every table (default: 200).")
@click.option("--cost", "with_cost", is_flag=True,
              help="Also compare stage FLOPs and memory (docs/cost.md); implied by --fail-on memory/cost.")
@click.option("--max-memory-increase", "max_memory", default=None,
              help="Exit 1 when a stage's memory grows by more than this (5%, 1GiB); implies --cost.")
@click.option("--by-rank", "by_rank", is_flag=True,
              help="Compare rank with rank even when the two are different parallel configurations "
                   "(default then: one logical graph).")
def diff_cmd(old: str, new: str, fmt: str, fail_on: tuple[str, ...], max_increase: str | None,
             pass_name: str, stage: int | None, lenient: bool, show_all: bool, with_cost: bool,
             max_memory: str | None, by_rank: bool) -> None:
    """Diff two dumps (files, rank folders or folders of rank_N): the configuration first (two
    configurations of one network are compared as one logical graph), then communication,
    strategies, operators, parameters (and with --cost stage FLOPs and memory). Exit 0 nothing
    relevant changed, 1 differences matching --fail-on, 2 error."""
    from . import diff as diff_mod
    from .diff import cost as diff_cost
    from .diff import report as diff_report

    def body() -> int:
        comm_fail_on, cost_kinds = diff_cost.split_fail_on(fail_on)
        diff_mod.parse_fail_on(comm_fail_on)
        if max_increase:
            diff_mod.parse_threshold(max_increase)
        if max_memory:
            diff_cost.memory_threshold(max_memory)
        policy = Policy(lenient=lenient, loader=load_with_progress)
        sides = [_select(p, stage, pass_name, policy) for p in (old, new)]
        result = diff_mod.diff_dirs(*sides, by_rank=by_rank)
        cdiff = reasons = None
        if with_cost or cost_kinds or max_memory:
            cdiff = diff_cost.cost_diff(*sides)
            reasons = cdiff.failures(cost_kinds, max_memory)
        def doc() -> str:
            import json

            d = diff_report.document(result, comm_fail_on, max_increase, reasons or ())
            if cdiff is not None:
                d["cost"] = {**cdiff.as_dict(), "failures": reasons, "fail_on": sorted(cost_kinds),
                             "max_memory_increase": max_memory}
            return json.dumps(d, indent=2, sort_keys=False)

        def text(markdown: bool) -> str:
            write = diff_report.to_markdown if markdown else diff_report.to_text
            return write(result, comm_fail_on, max_increase, None if show_all else diff_report.DIFF_LIMIT,
                         gates=reasons or (), more=diff_cost.blocks(cdiff) if cdiff is not None else ())

        _emit(fmt, {"json": doc, "text": lambda: text(False), "markdown": lambda: text(True)})
        _warn_skips(*sides)
        # a rank not read on either side: its error on stderr, exit 2 after the answer for the others
        return _skipped(*sides) or (1 if result.failures(comm_fail_on, max_increase) or reasons else 0)

    _run(body)


@main.command("check")
@click.argument("path", type=click.Path(exists=True, file_okay=False, dir_okay=True))
@_pass_option()
@_format_option("docs/check.md")
@_lenient_option()
@click.option("--jobs", type=int, default=None,
              help="Worker processes (default: $IRTOOL_JOBS, else one per rank up to CPUs).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Analyse the ranks on this Dask distributed scheduler (tcp://host:8786) instead of locally.")
@click.option("--strict", is_flag=True,
              help="Also fail (exit 1) when something could not be compared (a Send/Receive peer or group member "
                   "not in the folder, an order the pass does not fix).")
def check_cmd(path: str, pass_name: str | None, fmt: str, lenient: bool, jobs: int | None, scheduler: str | None,
              strict: bool) -> None:
    """Check that the ranks of a dump folder agree (Send/Receive pairs, collectives per group, group
    membership, ranks of one stage alike). Exit 0 consistent (with --strict: and everything compared),
    1 findings, 2 unreadable input (also when some ranks could not be read: the others are checked)."""

    from .consistency import check_dir
    from .consistency.report import blocks
    from .present import json_pieces, markdown_pieces, text_pieces

    def body() -> int:
        sel = _select(path, None, pass_name, Policy(jobs, scheduler, lenient))
        with Steps("ranks") as progress:
            result = check_dir(sel, progress=progress)

        def shown() -> Iterator:  # a cause's table at a time: a thousand ranks' findings are never held
            rest = blocks(result)
            head, *tables = _unreadable(sel, str(next(rest)), "the folder was not fully checked")
            yield head
            for block in rest:  # the lines under the headline, then the ranks not read, then the causes
                if tables and not isinstance(block, str):
                    yield from tables
                    tables = []
                yield block
            yield from tables

        _warn_skips(sel)
        _skipped(sel)
        _emit(fmt, {"json": lambda: json_pieces(result.as_dict(lazy=True)),
                    "text": lambda: text_pieces(shown()), "markdown": lambda: markdown_pieces(shown())})
        return result.exit_code(strict)

    _run(body)


@main.command("render")
@click.argument("input_path", metavar="INPUT", type=click.Path(exists=True, dir_okay=True))
@click.option("-o", "--output", "out", required=True, type=click.Path(dir_okay=False), help="Output file.")
@click.option("--format", "fmt", type=click.Choice(["dot", "svg", "png", "pdf"]), default=None,
              help="Output format (default: OUT's suffix).")
@_stage_option("Pipeline stage to draw (its nodes plus its Send/Receive); a folder draws the lowest rank of it.")
@_pass_option()
@_lenient_option()
@click.option("--subgraph", default=None, help="Only this subgraph (name, with or without @).")
@click.option("--scope", default=None, help="Only nodes under this name-scope prefix.")
@click.option("--comm-only", is_flag=True, help="Only communication nodes plus --hops of context.")
@click.option("--hops", type=int, default=1, show_default=True, help="Context hops around communication nodes.")
@click.option("--forward", "direction", flag_value="forward", help="Forward nodes only.")
@click.option("--backward", "direction", flag_value="backward", help="Backward (Gradients/) nodes only.")
@click.option("--depth", default=None, help="Fold by name scope to this depth; 'all' = no folding (default: auto).")
@click.option("--pipeline", "pipeline", is_flag=True,
              help="Folder: every stage's Send/Receive in execution order side by side, each Send linked to its Receive.")
@click.option("--memory", "memory", is_flag=True,
              help="Live device memory by role over the step, per stage, the peak marked (SVG).")
@click.option("--timeline", is_flag=True,
              help="Folder: the step played out on --hardware, one lane per stage, as SVG (docs/timing.md).")
@click.option("--hardware", "hardware_spec", default=None, metavar="NAME|FILE",
              help="With --timeline: the hardware profile (910b, 910c, h100, h800 or a TOML file; default 910b).")
def render_cmd(input_path: str, out: str, fmt: str | None, stage: int | None, pass_name: str | None, lenient: bool,
               subgraph: str | None, scope: str | None, comm_only: bool, hops: int, direction: str | None,
               depth: str | None, pipeline: bool, memory: bool, timeline: bool, hardware_spec: str | None) -> None:
    """Draw a dump (file or rank_* folder) as DOT/SVG/PNG/PDF, folded by name scope."""
    from .render import export as export_mod
    from .render import graph as render_mod

    def body() -> int:
        fmt_used = export_mod.format_for(out, fmt)
        sel = _select(input_path, stage, pass_name, Policy(lenient=lenient, loader=load_with_progress))
        if memory:
            from .atomic import atomic_write
            from .errors import InputError
            from .present.cost import human
            from .present.memory import memory_svg
            from .render.memory import panels as memory_panels

            if fmt_used != "svg":
                raise InputError(f"--memory draws SVG: {out} asks for {fmt_used}")
            if pipeline:
                raise InputError("--memory and --pipeline are two pictures: ask for one")
            panels = memory_panels(sel.per_stage(), input_path)
            _notes(sel)
            atomic_write(out, memory_svg(panels, f"{input_path}: device memory over the step").encode(),
                         protect=tuple(sel.files.values()))
            click.echo(f"{out}: {len(panels)} stage(s), peaks "
                       + ", ".join(f"{human(p.walk.peak_bytes)}" for p in panels), err=True)
            _warn_skips(sel)
            return _skipped(sel)
        if timeline:
            from .atomic import atomic_write
            from .parallel.hardware import load_profile
            from .present.timeline import timeline_svg
            from .render.timeline import folder_timeline

            if fmt_used != "svg":
                from .errors import InputError

                raise InputError(f"--timeline writes SVG, not {fmt_used}: name the output .svg (or --format svg)")
            tl = folder_timeline(sel.per_stage(), input_path, load_profile(hardware_spec))
            _notes(sel)
            text = timeline_svg(tl, f"{input_path}: the step, stage by stage")
            atomic_write(out, text.encode("utf-8"), protect=tuple(sel.files.values()))
            click.echo(f"{out}: {len(tl.ranks)} stages, {len(tl.step.boxes)} units of work, "
                       f"{len(tl.step.arrows)} Send -> Receive", err=True)
            _warn_skips(sel)
            return _skipped(sel)
        if pipeline:
            from .atomic import atomic_write
            from .render import pipeline as pipe_mod

            drawing = pipe_mod.folder_pipeline(sel.per_stage(), input_path, lenient)
            _notes(sel)
            text = pipe_mod.pipeline_dot(drawing, f"{input_path}: pipeline in execution order")
            atomic_write(out, export_mod.dot_bytes(text, fmt_used), protect=tuple(sel.files.values()))
            lost = pipe_mod.unmatched(drawing)
            if lost:
                click.echo(f"irtool: {len(lost)} Send(s) with no Receive on a drawn stage", err=True)
            click.echo(f"{out}: {len(drawing.columns)} stages, "
                       f"{sum(len(col.order.hops) for col in drawing.columns)} Send/Receive", err=True)
            _warn_skips(sel)
            return _skipped(sel)
        depth_ = render_mod.parse_depth(depth)
        dump, facts, chosen = render_mod.load_input(sel)
        _notes(sel)
        graph = render_mod.render_graph(dump, facts, subgraph=subgraph, scope=scope, comm_only=comm_only,
                                        hops=hops, direction=direction, depth=depth_)
        export_mod.export(graph, out, fmt_used, protect=(dump.path,))
        for note in graph.graph.get("notes", []):
            click.echo(f"irtool: {note}", err=True)
        d = graph.graph.get("depth")
        click.echo(f"{out}: {graph.number_of_nodes()} boxes, {graph.number_of_edges()} edges, "
                   f"depth {'all' if d is None else d} ({chosen})", err=True)
        _warn_skips(sel)
        return _skipped(sel)

    _run(body)


@main.command()
@click.argument("path", type=click.Path(exists=True, dir_okay=True))
@click.argument("new", required=False, type=click.Path(exists=True, dir_okay=True))
@_stage_option("Folder: only the rank of this pipeline stage.")
@_pass_option()
@_lenient_option()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address the server listens on.")
@click.option("--port", type=int, default=8080, show_default=True, help="Port of the server.")
@click.option("--no-browser", is_flag=True, help="Do not open a browser (print the URL only).")
@click.option("--node", "node", metavar="%N|FILE:LINE",
              help="Open on this node, selected: `%154` (the entry graph's first), or FILE:LINE as the panel's "
                   "`file` row says it (`19_validate_0078.ir.xz:2446`, in a folder `rank_4/...:2446`, or `:2446`).")
@_part_size_option()
def view(path: str, new: str | None, stage: int | None, pass_name: str | None, lenient: bool, host: str, port: int,
         no_browser: bool, node: str | None, part_size: int) -> None:
    """Explore a dump (file or rank_* folder) in Google's Model Explorer; with NEW, two
    compilations side by side with the diff marked, or, when they are two parallel configurations
    of one network (as `diff` decides it), their logical graph with both sides' figures on each
    operator. Stops with Ctrl+C."""
    from .diff import diff_rank, logical_diff
    from .view.models import compare_models, models_for
    from .view.serve import serve

    def body() -> int:
        policy = Policy(lenient=lenient, loader=load_with_progress)
        sels = [_select(p, stage, pass_name, policy) for p in (path, new) if p is not None]
        if new is None:
            models = [models_for(sels[0], part_size)]
        elif (across := logical_diff(*sels)) is not None:
            from .view.logical import logical_model

            models = [logical_model(across)]
        else:
            models = compare_models(*sels, diff_rank, part_size)
        if node is not None:
            models[0].find(node)  # a node it does not name: one line and exit 2, before serving
        for sel in sels:
            _notes(sel)
        _warn_skips(*sels)
        code = _skipped(*sels)
        serve(models, host, port, not no_browser, lambda url: click.echo(f"irtool: Model Explorer at {url}", err=True),
              node)
        return code

    _run(body)


@main.command("export")
@click.argument("path", type=click.Path(exists=True, dir_okay=True))
@click.option("-o", "--output", "out", required=True, type=click.Path(dir_okay=False), help="Output graph JSON file.")
@click.option("--format", "fmt", type=click.Choice(["model-explorer"]), default="model-explorer", show_default=True,
              help="Model Explorer's graph JSON, loadable in any Model Explorer.")
@_stage_option("Folder: only the rank of this pipeline stage.")
@_pass_option()
@_lenient_option()
@click.option("--node-data/--no-node-data", default=True, show_default=True,
              help="Also write the node data overlays next to OUTPUT (OUTPUT stem + `.comm_category.json`, ...).")
@_part_size_option()
def export_cmd(path: str, out: str, fmt: str, stage: int | None, pass_name: str | None, lenient: bool,
               node_data: bool, part_size: int) -> None:
    """Write a dump (file or rank_* folder) as Model Explorer graph JSON, for people who cannot run a server."""
    import os

    from .atomic import atomic_write
    from .view.models import models_for

    def body() -> int:
        sel = _select(path, stage, pass_name, Policy(lenient=lenient, loader=load_with_progress))
        model = models_for(sel, part_size)
        _notes(sel)
        inputs = tuple(f for f in (path,) if os.path.isfile(f))
        atomic_write(out, model.graphs_file(), protect=inputs)
        written = [out]
        if node_data:
            import json

            stem = out[: -len(".json")] if out.endswith(".json") else out
            for name, data in model.node_data.items():
                target = f"{stem}.{name.replace(' ', '_')}.json"
                atomic_write(target, json.dumps(data, indent=1), protect=inputs)
                written.append(target)
        click.echo(f"irtool: wrote {', '.join(written)} ({len(model.graphs)} graphs)", err=True)
        _warn_skips(sel)
        return _skipped(sel)

    _run(body)


if __name__ == "__main__":
    main()
