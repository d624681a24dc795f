"""Bundle one dry-run configuration (../shared/tools/dryrun/README.md) as a fixture folder: per rank the passes
kept (`19_validate_*`, `graph_build_0_*`, xz-compressed, machine paths scrubbed), `memory_block.csv.xz` (the
`python_stack` column dropped: the same few stacks with machine paths on every row), and a `dryrun.json` and
`manifest.json` written like the shared `dryrun_llama_dp2mp2pp2`'s.

    python tools/dryrun_fixture.py SCENARIO WORK_R0 [WORK_R4 ...] --driver make_llama_dry.py --env MFL_RECOMPUTE=0

WORK_RN is the folder `run_dry.sh` wrote (`ir/rank_N/`, `rank_N/memory_block.csv`, `log_L1_rN.txt`, `meta_rankN.json`),
or a copy of those files in one folder.
"""
from __future__ import annotations

import argparse
import csv
import glob
import hashlib
import io
import json
import lzma
import os
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE = re.compile(r"/[^\s\"':]*?/lib/python3\.\d+/site-packages")
NEVER = 9223372036854775807
PEAK_LINES = re.compile(r"MOC memory size|Used memory size|memory base address|peak memory usage|SimulationInitialize\]")


def _find(work: Path, pattern: str) -> Path | None:
    hits = sorted(glob.glob(str(work / "**" / pattern), recursive=True))
    return Path(hits[0]) if hits else None


def _scrub(text: str, scenario: str, driver_dir: str | None) -> str:
    text = SITE.sub("/usr/local/lib/python3.11/site-packages", text)
    if driver_dir:
        text = text.replace(driver_dir, f"/home/user/models/{scenario}")
    return text


def _csv_summary(rows: list[dict[str, str]]) -> dict:
    used = max(rows, key=lambda r: int(r["actual_used_memory"]))
    ts = int(used["start_time_stamp"])
    live: dict[str, int] = {}
    never: dict[str, int] = {}
    for r in rows:
        if int(r["start_time_stamp"]) <= ts < int(r["end_time_stamp"]):
            live[r["type"]] = live.get(r["type"], 0) + int(r["size"])
        if int(r["end_time_stamp"]) == NEVER:
            never[r["type"]] = never.get(r["type"], 0) + int(r["size"])
    return {"memory_block_csv_max_actual_used_B": int(used["actual_used_memory"]),
            "memory_block_csv_max_actual_peak_B": max(int(r["actual_peak_memory"]) for r in rows),
            "memory_block_csv_at_used_peak": {"time_stamp": ts, "node_name": used["node_name"],
                                              "live_bytes_by_type": live, "live_bytes": sum(live.values())},
            "memory_block_csv_never_freed_bytes_by_type": never}


def bundle_rank(scenario: str, work: Path, out: Path, driver_dir: str | None) -> tuple[int, dict, dict, list[dict]]:
    log = _find(work, "log_L1_r*.txt")
    meta_path = _find(work, "meta_rank*.json")
    meta = json.loads(meta_path.read_text()) if meta_path else {}
    rank = int(meta.get("rank", re.search(r"_r(\d+)\.txt$", str(log)).group(1)))  # type: ignore[union-attr]
    dest = out / f"rank_{rank}"
    dest.mkdir(parents=True, exist_ok=True)
    files = []
    for pattern in ("19_validate_*.ir", "graph_build_0_*.ir"):
        src = _find(work, pattern)
        if src is None:
            continue
        text = _scrub(src.read_text(errors="replace"), scenario, driver_dir)
        raw = text.encode()
        target = dest / (src.name + ".xz")
        target.write_bytes(lzma.compress(raw, preset=9 | lzma.PRESET_EXTREME))
        files.append({"path": f"rank_{rank}/{target.name}", "raw_bytes": len(raw), "raw_lines": text.count("\n"),
                      "stored_bytes": target.stat().st_size, "sha256": hashlib.sha256(raw).hexdigest()})
    src = _find(work, "memory_block.csv")
    with open(src, newline="") as fh:  # type: ignore[arg-type]
        rows = list(csv.DictReader(fh))
    columns = [c for c in rows[0] if c and c != "python_stack"]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    raw = buf.getvalue().encode()
    target = dest / "memory_block.csv.xz"
    target.write_bytes(lzma.compress(raw, preset=9 | lzma.PRESET_EXTREME))
    files.append({"path": f"rank_{rank}/{target.name}", "raw_bytes": len(raw), "raw_lines": len(rows) + 1,
                  "stored_bytes": target.stat().st_size, "sha256": hashlib.sha256(raw).hexdigest()})
    lines = [ln.strip() for ln in (log.read_text(errors="replace").splitlines() if log else []) if PEAK_LINES.search(ln)]
    lines = [_scrub(ln, scenario, driver_dir) for ln in lines]

    def mib(key: str) -> int | None:
        found = [int(m.group(1)) for ln in lines if key in ln and (m := re.search(r": (\d+)M", ln))]
        return found[0] if found else None

    record = {"used_peak_mib": mib("Used peak"), "actual_peak_mib": mib("Actual peak"), "log_lines": lines,
              **_csv_summary(rows)}
    step = [ln for ln in (log.read_text(errors="replace").splitlines() if log else []) if re.match(r"step 0 done", ln)]
    if step:
        record["step_line"] = step[0]
    return rank, record, meta, files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("scenario")
    ap.add_argument("work", nargs="+", type=Path)
    ap.add_argument("--driver", type=Path, required=True, help="the driver script the dry run ran (copied as make.py)")
    ap.add_argument("--env", action="append", default=[], help="the knobs set for this configuration (K=V)")
    ap.add_argument("--driver-dir", help="the folder the driver ran from (scrubbed to /home/user/models/SCENARIO)")
    a = ap.parse_args()
    out = ROOT / "fixtures" / "mindir" / a.scenario
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(a.driver, out / "make.py")
    dry, metas, files = {}, {}, []
    driver_dir = a.driver_dir or os.path.dirname(os.path.abspath(a.driver))
    for work in a.work:
        rank, record, meta, fs = bundle_rank(a.scenario, work, out, driver_dir)
        dry[str(rank)] = record
        metas[str(rank)] = meta
        files += fs
    (out / "dryrun.json").write_text(json.dumps(dry, indent=1) + "\n")
    first = next(iter(metas.values()))
    manifest = {"scenario": a.scenario, "mindspore_version": first.get("mindspore_version"),
                "mindformers_version": first.get("mindformers_version"), "model": first.get("model"),
                "device_target_used_for_compile": first.get("device_target"),
                "parallel_mode": first.get("parallel_mode"), "device_num": first.get("device_num"),
                "pipeline_stages": first.get("pipeline_stages"), "micro_size": first.get("micro_size"),
                "ranks_dumped": sorted(int(r) for r in dry), "env": dict(kv.split("=", 1) for kv in a.env),
                "launch": "../../../../shared/tools/dryrun/run_dry.sh VENV WORK make.py 1 RANK 8 <stub CANN>/latest/lib64 "
                          "with MS_MEMORY_STATISTIC=1 MS_ALLOC_CONF=memory_tracker:True IR_LEVEL=1 and env",
                "per_rank_meta": {r: {"stage": m.get("stage"), "model_config": m.get("model_config"),
                                      "used_peak_mib": dry[r]["used_peak_mib"],
                                      "actual_peak_mib": dry[r]["actual_peak_mib"]} for r, m in metas.items()},
                "path_scrub": {"venv site-packages": "/usr/local/lib/python3.11/site-packages",
                               "driver folder": f"/home/user/models/{a.scenario}"},
                "files": files}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(json.dumps({r: (v["used_peak_mib"], v["memory_block_csv_max_actual_used_B"]) for r, v in dry.items()}))


if __name__ == "__main__":
    main()
