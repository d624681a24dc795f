"""What an `analyze_fail.ir` says about the failure: its log and the stack markers (grammar: `failure_log`,
`marker`).

MindSpore writes the file when type or shape inference fails: the graphs of the evaluation stack, each
with the node its frame was evaluating marked `#------------------------> N`, between a log (2.3 and
later: the compiler's message, its C++ call stack, the traceback of the user's code) and a note of how
many frames the stack held. The log is kept as printed and read into its parts here.
"""
from __future__ import annotations

import re

from .model import Failure, Marker, TraceFrame

# `- Caught exception:` and the other section titles of the 2.3+ log, each between two rules of dashes
_SECTION = re.compile(r"^- (.+?):?\s*$")
_RULE = re.compile(r"^-{10,}\s*$")
# a traceback frame: `# 0 In file /x/train.py:32, 15~46` (`:663~664, 8~46` for a statement over several lines)
_FRAME = re.compile(r"^# (\d+) In file (.+?):(\d+)(?:~(\d+))?, (\S+)\s*$")
_CARET = re.compile(r"^\s*\^~*\s*$")
# `# The total of function graphs in evaluation stack: 3/5 (Ignored 2 internal frames).`, 2.0-2.2:
# `# num of function graphs in stack: 1`
_STACK = re.compile(r"^# (?:The total|num) of function graphs in (?:evaluation )?stack: (.+?)\.?\s*$")


def failure_of(logs: list[tuple[int, str]], markers: list[Marker]) -> Failure:
    """The failure of one file from its banner blocks (line, text) and its markers."""
    first_line, first = logs[0]
    form = "2.0" if first.startswith("# 1.") else "2.3"
    sections: dict[str, list[str]] = {}
    note = None
    lines: list[str] = []
    for _line, text in logs:
        current: list[str] | None = None
        for raw in text.split("\n"):
            lines.append(raw)
            if _RULE.match(raw):
                continue
            title = _SECTION.match(raw)
            if title is not None:
                current = sections.setdefault(title.group(1), [])
                continue
            stack = _STACK.match(raw)
            if stack is not None:
                note = stack.group(1)
            elif raw.startswith("#"):
                current = None if not _FRAME.match(raw) else current
            if current is not None:
                current.append(raw)
    def section(title: str) -> list[str]:
        return next((body for t, body in sections.items() if t.startswith(title)), [])

    return Failure(form, first_line, _trimmed(section("Caught exception")), _trimmed(section("C++ Call Stack")),
                   tuple(_frames(section("The Traceback"))), note, list(markers), tuple(lines))


def _trimmed(lines: list[str]) -> tuple[str, ...]:
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    while lines and not lines[0].strip():
        lines = lines[1:]
    return tuple(lines)


def _frames(body: list[str]) -> list[TraceFrame]:
    out: list[TraceFrame] = []
    code: list[str] = []
    head: re.Match[str] | None = None
    for raw in [*body, "# 0 In file end:0, 0"]:  # a sentinel closes the last frame
        m = _FRAME.match(raw)
        if m is None:
            if head is not None and raw.strip() and not _CARET.match(raw):
                code.append(raw.rstrip())
            continue
        if head is not None:
            end = head.group(4)
            out.append(TraceFrame(int(head.group(1)), head.group(2), int(head.group(3)),
                                  int(end) if end is not None else None, head.group(5), tuple(code)))
        head, code = m, []
    return out
