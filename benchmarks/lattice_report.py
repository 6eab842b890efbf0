"""Turn a ``benchmarks/lattice_chains.py`` results file into ``data/lattice_rvb_timings.json`` (what the
notebook reads): Table 6.2's workload per L (our GPU, one CPU core, all cores), the T_P × bfactor scan,
the chain-count scan and the twin checks.

    python benchmarks/lattice_report.py benchmarks/results/lattice_chains_h100v3_2026-11-23.json \
        benchmarks/results/lattice_chains_h100v3_2026-11-23.json   (its gpu_tracked rows)
"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def convert(results: dict) -> dict:
    machine = results["machine"]
    gpu, one, every = results["gpu"], results.get("cpu_one_core") or {}, results.get("cpu_all_cores") or {}
    table = []
    kernel = results.get("kernel") or {}
    for key, row in sorted(gpu.items(), key=lambda kv: int(kv[0])):
        # T_P and bfactor: the row's own (from 2026-11-23 on), else the kernel record's, else study 000's
        layout = kernel.get(key, {})
        tp = row.get("T_P", layout.get("threads_per_column", 4))
        entry = {"L": row["L"], "gpu_s": row["t_total_median_s"],
                 "gpu_settings": {"threads_per_col": tp, "bfactor": row.get("bfactor", layout.get("bfactor", 8)),
                                  "chains": row["chains"], "algorithm": row.get("algorithm", "thesis")},
                 "energy_per_site": [row["energy"]["energy_per_site"], row["energy"]["error"]],
                 "cpu_one_core_s": one.get(key, {}).get("t_total_s"), "cpu_all_cores_s": every.get(key, {}).get("t_total_s"),
                 "cpu_extrapolated": bool(one.get(key, {}).get("extrapolated") or every.get(key, {}).get("extrapolated"))}
        table.append(entry)
    scan = results.get("layout_scan") or {"rows": []}
    layout = [{"L": scan["L"], "threads_per_col": r["T_P"], "bfactor": r["bfactor"], "gpu_s": r["t_full_extrapolated_s"],
               **({"energy_per_site": r["energy_per_site"]} if "energy_per_site" in r else {})} for r in scan["rows"]]
    chains = [{"L": int(L), "chains": r["chains"], "gpu_s": r["t_s"], "chain_sweeps_per_s": r["chain_sweeps_per_s"]}
              for L, block in (results.get("chain_scan") or {}).items() for r in block["rows"]]
    twin = [{"L": r["L"], "max_abs_energy_difference": r["max_abs_denergy"],
             "counts_equal": bool(r["counts_equal"] and r["configurations_equal"] and r["streams_equal"]),
             "threads_per_col": r.get("T_P"), "bfactor": r.get("bfactor")} for r in (results.get("twin") or {}).values() if isinstance(r, dict) and "L" in r]
    return {"machine": {"gpu": machine["gpu"]["name"], "cpu": machine["cpu"]["model"], "cores": machine["cpu"]["cores"]},
            "date": results["date"], "source": results.get("command", "benchmarks/lattice_chains.py"),
            "table_62": table, "tp_bfactor_scan": layout, "chain_scan": chains, "twin": twin}


def add_alternatives(out: dict, results: dict) -> None:
    """Per L, the GPU times of the other algorithm runs in ``results`` (keys gpu_<name>)."""
    for row in out["table_62"]:
        for key, block in results.items():
            if key.startswith("gpu_") and key != "gpu_no_rebuild" and str(row["L"]) in (block or {}):
                entry = block[str(row["L"])]
                row.setdefault("alternatives", {})[key[4:]] = {
                    "gpu_s": entry["t_total_median_s"], "refresh_every": entry.get("refresh_every"),
                    "energy_per_site": [entry["energy"]["energy_per_site"], entry["energy"]["error"]]}


def main(paths):
    """``paths[0]``: the main results file; further files add their other-algorithm GPU rows."""
    out = convert(json.loads(Path(paths[0]).read_text()))
    for extra in paths[1:]:
        add_alternatives(out, json.loads(Path(extra).read_text()))
    target = ROOT / "data" / "lattice_rvb_timings.json"
    target.write_text(json.dumps(out, indent=1) + "\n")
    print("written", target)


if __name__ == "__main__":
    main(sys.argv[1:])
