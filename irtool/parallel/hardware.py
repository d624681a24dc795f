"""Hardware profiles (docs/timing.md §1): what one device computes and moves per second, read from a small
TOML file like Calculon's system files. Shipped: `910b`, `910c`, `h100`, `h800` (`profiles/`, every figure
with its source). A file of the user's may name a `base` profile and override any field of it.

A bad profile is one located line (`file:line:col: expected ..., found ...`), never a traceback.
"""
from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.9/3.10
    import tomli as tomllib

PROFILES = Path(__file__).parent / "profiles"
DEFAULT = "910b"  # MindSpore's home device; said beside every figure made with it
COLLECTIVES = ("AllReduce", "AllGather", "ReduceScatter", "AlltoAll", "Send")
_TIER = {"bandwidth": None, "latency": None, "efficiency": None}
# the fields a profile may set (None: a value; a dict: a table of these fields; "*": a table of any keys)
FIELDS: dict = {"name": None, "base": None,
                "compute": {"matrix": "*", "vector": "*", "matrix_efficiency": None, "vector_efficiency": None},
                "memory": {"bytes": None, "bandwidth": None, "efficiency": None},
                "network": {"devices_per_node": None, "intra": _TIER, "inter": _TIER, "algorithm": "*"},
                "overlap": {"collective": None}}
# the dump's dtype names -> the profile's rate keys
RATE_KEY = {"BFloat16": "bf16", "BF16": "bf16", "Float16": "fp16", "F16": "fp16", "Float32": "fp32", "F32": "fp32",
            "Int8": "int8", "I8": "int8", "UInt8": "int8", "Float8E4M3FN": "fp8", "Float8E5M2": "fp8"}


@dataclass(frozen=True)
class Tier:
    """A link tier: bandwidth (bytes/s one way per device), latency (s per algorithm step), efficiency."""

    bandwidth: float
    latency: float
    efficiency: float


@dataclass(frozen=True)
class Profile:
    name: str
    where: str  # the built-in name or the file (with its base)
    matrix: dict[str, float]  # rate key -> FLOP/s (Cube / Tensor Core)
    vector: dict[str, float]
    matrix_efficiency: tuple[tuple[float, float], ...]  # (operator FLOPs, efficiency), ascending
    vector_efficiency: tuple[tuple[float, float], ...]
    memory_bytes: int
    hbm_bandwidth: float
    hbm_efficiency: float
    devices_per_node: int
    intra: Tier
    inter: Tier
    algorithm: dict[str, float]  # collective -> factor on the ring wire bytes
    overlap: float  # share of a collective that can hide under compute where dependencies allow

    def rate(self, matrix: bool, dtype: str | None) -> float:
        """Peak FLOP/s of the matrix or vector unit for a dtype (Float32's when the dtype has no rate)."""
        table = self.matrix if matrix else self.vector
        return table.get(RATE_KEY.get(dtype or "", ""), table["fp32"])

    def efficiency(self, matrix: bool, flops: float) -> float:
        """The efficiency an operator of `flops` reaches: the table interpolated in log(FLOPs), clamped."""
        table = self.matrix_efficiency if matrix else self.vector_efficiency
        if flops <= table[0][0]:
            return table[0][1]
        for (x0, e0), (x1, e1) in zip(table, table[1:]):
            if flops <= x1:
                return e0 + (e1 - e0) * (math.log(flops / x0) / math.log(x1 / x0))
        return table[-1][1]

    def tier(self, ranks: tuple[int, ...] | None, size: int | None) -> tuple[Tier, bool]:
        """The tier a group spans (ranks -> nodes by devices per node) and whether its ranks were known (else
        decided by its size)."""
        if ranks:
            nodes = {r // self.devices_per_node for r in ranks}
            return (self.intra if len(nodes) == 1 else self.inter), True
        return (self.intra if (size or 1) <= self.devices_per_node else self.inter), False


def builtin_names() -> list[str]:
    return sorted(p.stem for p in PROFILES.glob("*.toml"))


def load_profile(spec: str | None) -> Profile:
    """A built-in profile by name (`910b`, `H100`, ...) or a TOML file (with `base = NAME` to override one)."""
    spec = spec or DEFAULT
    path = Path(spec)
    if path.suffix.lower() != ".toml" and (PROFILES / f"{spec.lower()}.toml").is_file():
        path = PROFILES / f"{spec.lower()}.toml"
    elif not path.is_file():
        raise InputError(f"--hardware: no profile {spec!r}: name one of {', '.join(builtin_names())} or a .toml file")
    layers = _chain(path, [])
    merged: dict[str, Any] = {}
    for _, data in reversed(layers):
        _merge(merged, data)
    where = " over ".join(p.stem if p.parent == PROFILES else str(p) for p, _ in layers)
    return _build(merged, where, layers)


def _read(path: Path) -> tuple[dict[str, Any], str]:
    text = path.read_text(encoding="utf-8")
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(e))
        line, col = (int(m.group(1)), int(m.group(2))) if m else (1, 1)
        why = re.sub(r"\s*\(at line.*", "", str(e)) or "a TOML error"
        raise InputError(f"{path}:{line}:{col}: expected TOML, found {why[0].lower() + why[1:]}") from None


def _chain(path: Path, seen: list[Path]) -> list[tuple[Path, dict[str, Any]]]:
    """This file and the bases it names, the file first."""
    if path.resolve() in seen:
        raise InputError(f"{path}: its `base` chain comes back to itself")
    data, text = _read(path)
    _known(path, text, data, FIELDS, "")
    base = data.pop("base", None)
    layer = (path, {**data, "_text": text})
    if base is None:
        return [layer]
    if not isinstance(base, str):
        line, col = _locate(text, "base")
        raise InputError(f"{path}:{line}:{col}: expected base = \"NAME\" (one of {', '.join(builtin_names())}) "
                         f"or a file, found {base!r}")
    nxt = PROFILES / f"{base.lower()}.toml"
    if not nxt.is_file():
        nxt = (path.parent / base) if not Path(base).is_absolute() else Path(base)
        if not nxt.is_file():
            line, col = _locate(text, "base")
            raise InputError(f"{path}:{line}:{col}: expected base = one of {', '.join(builtin_names())} or a file, "
                             f"found {base!r}")
    return [layer, *_chain(nxt, [*seen, path.resolve()])]


def _known(path: Path, text: str, data: dict[str, Any], fields: dict, at: str) -> None:
    """Every key of `data` is a field a profile has (a misspelt one would be ignored: never silently)."""
    for k, v in data.items():
        dotted = f"{at}{k}"
        if k not in fields:
            line, col = _locate(text, dotted)
            raise InputError(f"{path}:{line}:{col}: expected a field of a profile ({', '.join(sorted(fields))}"
                             f"{' under ' + at.rstrip('.') if at else ''}), found {k!r}")
        if isinstance(fields[k], dict) and isinstance(v, dict):
            _known(path, text, v, fields[k], dotted + ".")


def _merge(into: dict[str, Any], data: dict[str, Any]) -> None:
    for k, v in data.items():
        if k == "_text":
            continue
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            _merge(into[k], v)
        else:
            into[k] = v


def _locate(text: str, dotted: str) -> tuple[int, int]:
    """Line and column of `dotted` (`network.intra.bandwidth`) in a TOML text: its `key =` under its table
    header, else the header, else line 1."""
    *table, key = dotted.split(".")
    current: list[str] = []
    header_line = None
    for i, raw in enumerate(text.splitlines(), 1):
        s = raw.strip()
        m = re.fullmatch(r"\[\s*([\w.\s]+?)\s*\]\s*(#.*)?", s)
        if m:
            current = [p.strip() for p in m.group(1).split(".")]
            if header_line is None and current[:len(table) + 1] == [*table, key]:  # its table, or one under it
                header_line = i
            continue
        m = re.match(r"([\w\"-]+)\s*=", s)
        if m and current == table and m.group(1).strip('"') == key:
            return i, raw.index(m.group(1)) + 1
    return (header_line, 1) if header_line else (1, 1)


def _build(d: dict[str, Any], where: str, layers: list[tuple[Path, dict[str, Any]]]) -> Profile:
    def fail(dotted: str, expected: str, found: Any) -> InputError:
        for path, data in layers:  # the file that set the field (the user's before the base)
            node: Any = data
            for part in dotted.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            if node is not None:
                line, col = _locate(data["_text"], dotted)
                return InputError(f"{path}:{line}:{col}: expected {expected}, found {found!r}")
        path, data = layers[0]
        return InputError(f"{path}:1:1: expected {expected} ({dotted}), found nothing")

    def get(dotted: str) -> Any:
        node: Any = d
        for part in dotted.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        return node

    def positive(dotted: str, upto: float | None = None) -> float:
        v = get(dotted)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0 or (upto is not None and v > upto):
            raise fail(dotted, f"{dotted} a number > 0" + ("" if upto is None else f" and <= {upto:g}"), v)
        return float(v)

    def rates(dotted: str) -> dict[str, float]:
        table = get(dotted)
        if not isinstance(table, dict) or "fp32" not in table:
            raise fail(dotted, f"a [{dotted}] table of FLOP/s per dtype with fp32 among them", table)
        return {k: positive(f"{dotted}.{k}") for k in table}

    def curve(dotted: str) -> tuple[tuple[float, float], ...]:
        v = get(dotted)
        ok = isinstance(v, list) and v and all(isinstance(p, list) and len(p) == 2 and
                                               all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in p)
                                               and p[0] > 0 and 0 < p[1] <= 1 for p in v)
        if not ok or [p[0] for p in v] != sorted({p[0] for p in v}):
            raise fail(dotted, f"{dotted} = [[FLOPs > 0, efficiency in (0, 1]], ...] with FLOPs ascending", v)
        return tuple((float(a), float(b)) for a, b in v)

    def tier(name: str) -> Tier:
        return Tier(positive(f"network.{name}.bandwidth"), _nonneg(get, fail, f"network.{name}.latency"),
                    positive(f"network.{name}.efficiency", 1))

    name = get("name")
    if not isinstance(name, str) or not name:
        raise fail("name", 'name = "the device"', name)
    dpn = get("network.devices_per_node")
    if isinstance(dpn, bool) or not isinstance(dpn, int) or dpn < 1:
        raise fail("network.devices_per_node", "network.devices_per_node an integer >= 1", dpn)
    algo = get("network.algorithm") or {}
    unknown = sorted(set(algo) - set(COLLECTIVES))
    if unknown:
        raise fail(f"network.algorithm.{unknown[0]}", f"a collective among {', '.join(COLLECTIVES)}", unknown[0])
    return Profile(
        name=name, where=where, matrix=rates("compute.matrix"), vector=rates("compute.vector"),
        matrix_efficiency=curve("compute.matrix_efficiency"), vector_efficiency=curve("compute.vector_efficiency"),
        memory_bytes=int(positive("memory.bytes")), hbm_bandwidth=positive("memory.bandwidth"),
        hbm_efficiency=positive("memory.efficiency", 1), devices_per_node=dpn, intra=tier("intra"),
        inter=tier("inter"),
        algorithm={c: positive(f"network.algorithm.{c}") if c in algo else 1.0 for c in COLLECTIVES},
        overlap=_share(get, fail, "overlap.collective"))


def _nonneg(get: Any, fail: Any, dotted: str) -> float:
    v = get(dotted)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
        raise fail(dotted, f"{dotted} a number >= 0", v)
    return float(v)


def _share(get: Any, fail: Any, dotted: str) -> float:
    v = _nonneg(get, fail, dotted)
    if v > 1:
        raise fail(dotted, f"{dotted} between 0 and 1", v)
    return v
