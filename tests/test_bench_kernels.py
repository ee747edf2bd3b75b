"""`treesplit bench kernels`: every rank of an algorithm in one process, the kernels' time per simulation."""

import json


def test_bench_kernels_reports_the_distributed_runs_extra_per_simulation_and_per_hop(run_cli, tmp_path):
    r = run_cli("bench", "kernels", "--boards", "5", "--algos", "treesplit,root", "--sims", "600", "--repeats", "2",
                "--parts", "--passes", "--json", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    rows = {row["algo"]: row for row in res["rows"]}
    assert set(rows) == {"treesplit", "root"}
    for row in rows.values():
        assert row["board"] == 5 and row["ranks"] == 2 and len(row["runs_1"]) == len(row["runs_n"]) == 2
        assert row["us_per_sim_1"] > 0 and row["us_per_sim_n"] > 0
        assert abs(row["extra_us_per_sim"] - (row["us_per_sim_n"] - row["us_per_sim_1"])) < 1e-9
    # treesplit's simulations cross ranks (MOVE records); root parallelisation's never do
    assert rows["treesplit"]["hops_per_sim"] > 0.1
    assert rows["treesplit"]["us_per_hop"] * rows["treesplit"]["hops_per_sim"] == \
        __import__("pytest").approx(rows["treesplit"]["extra_us_per_sim"])
    assert rows["root"]["hops_per_sim"] == 0 and rows["root"]["us_per_hop"] is None
    # --parts: each kind's line over its tree steps, on one rank and on two
    for row in rows.values():
        for key in ("parts_1", "parts_n"):
            assert {"select", "update"} <= set(row[key]), (row["algo"], key, row[key])
            for line in row[key].values():
                assert line["base_us"] >= 0 and line["per_step_us"] >= 0 and line["steps_per_part"] > 0
                assert line["base_us"] + line["per_step_us"] > 0 and line["parts_per_sim"] > 0
    # where a simulation's kernel time goes: every kind of part, the batch kernel between parts, the receive
    # kernel; one rank takes in no records, treesplit's two ranks do (a MOVE or UPDATE a hop)
    for row in rows.values():
        for key in ("per_sim_1", "per_sim_n"):
            assert {"select", "update", "playout", "batch", "receive"} <= set(row[key]), (row["algo"], key, row[key])
            assert all(v >= 0 for v in row[key].values()) and row[key]["playout"] > 0
        assert row["per_sim_1"]["receive"] == 0
    assert rows["treesplit"]["per_sim_n"]["receive"] > 0
    # a treesplit path is selected in shares on two ranks, root parallelisation's whole on each
    ts = rows["treesplit"]
    assert ts["parts_n"]["select"]["steps_per_part"] < ts["parts_1"]["select"]["steps_per_part"]
    assert ts["parts_n"]["select"]["parts_per_sim"] > ts["parts_1"]["select"]["parts_per_sim"]
    # --passes: an AMAF pass's cost, rows in cache and out, on the table as laid out and on one aligned alike
    passes = res["passes"]["5"]
    assert set(passes) == {"spread", "aligned"}
    assert all(p["warm_us"] > 0 and p["cold_us"] > 0 for p in passes.values())
    saved = json.loads((tmp_path / "bench-kernels.json").read_text())
    assert saved["rows"] == res["rows"] and saved["passes"] == res["passes"] and "machine" in saved


def test_bench_kernels_refuses_what_it_cannot_run(run_cli):
    for args, words in ((("--algos", "sequential"), "MPI algorithms"), (("--boards", "9x9"), "--boards"),
                        (("--ranks", "1"), "--ranks")):
        bad = run_cli("bench", "kernels", *args, "--no-save")
        assert bad.returncode == 2 and words in bad.stderr and "Traceback" not in bad.stderr, (args, bad.stderr)
