"""`partsim check`: a model zoo against budgets and a lock file (issue 16).

Budget verdicts are cross-checked against independent `predict()` calls on the same
files; the lock against a real model change (the batch dimension made symbolic).
"""

import json
import shutil
import xml.etree.ElementTree as ET

import pytest

from tests.conftest import shared_path, as_written_cli, predict_as_written as predict
from tests.analysis.test_baseline_gate import insert_after_first, symbolic_batch


# These tests describe the graph as written (an ORT_DISABLE_ALL session): level disable unless asked
@pytest.fixture
def run_cli(run_cli):
    return as_written_cli(run_cli)


MODELS = ("tiny_resnet.ts.onnx", "tiny_unet.ts.onnx", "tiny_mobilenetv2.ts.onnx")


@pytest.fixture
def zoo(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    for name in MODELS:
        shutil.copy(shared_path("corpus", "full", name), models / name)
    return tmp_path


def write(zoo, text, name="partsim.toml"):
    p = zoo / name
    p.write_text(text)
    return p


def run_check(run_cli, config, *extra):
    code, out, err = run_cli("check", "--config", config, "-f", "json", *extra)
    return code, (json.loads(out) if out else None), err


def truth(zoo, providers):
    """Per model: first-provider nodes, share, partitions, transfers, Memcpy, reasons — from predict()."""
    out = {}
    for name in MODELS:
        s, _ = predict(zoo / "models" / name, providers)
        first = s["effectiveProviders"][0]
        on = sum(1 for n in s["nodes"] if n["provider"] == first)
        out[f"models/{name}"] = {"on": on, "share": on / s["model"]["nodeCount"],
                                 "partitions": s["perProvider"][first]["partitions"],
                                 "transfers": s["transfers"],
                                 "memcpy": s["memcpy"]["fromHost"] + s["memcpy"]["toHost"],
                                 "reasons": {n["reason"] for n in s["nodes"] if n["provider"] != first},
                                 "accelerated": s["accelerated"], "status": s["status"]}
    return out


@pytest.mark.parametrize("budget, value, fails", [
    ("max_partitions", 2, lambda t: t["partitions"] > 2),
    ("max_partitions", 6, lambda t: t["partitions"] > 6),
    ("min_delegated_share", 0.9, lambda t: t["share"] < 0.9),
    ("min_delegated_share", 0.5, lambda t: t["share"] < 0.5),
    ("max_transfers", 10, lambda t: t["transfers"] > 10),
    ("forbid_reasons", '["non_constant_input"]', lambda t: "non_constant_input" in t["reasons"]),
    ("accelerated", "true", lambda t: not t["accelerated"]),
    ("status", '"ok"', lambda t: t["status"] != "ok"),
])
def test_each_budget_on_nnapi(zoo, run_cli, budget, value, fails):
    config = write(zoo, f'[[check]]\nmodels = ["models/*.onnx"]\nproviders = ["nnapi"]\n{budget} = {value}\n'
                        'level = "disable"\n')
    code, doc, err = run_check(run_cli, config, "--jobs", "1")
    t = truth(zoo, ["nnapi"])
    expected = {m: fails(v) for m, v in t.items()}
    assert any(expected.values()) or budget in ("accelerated", "status") or value in (6, 0.5)
    got = {r["model"]: not r["passed"] for r in doc["results"]}
    assert got == expected, err
    assert code == (1 if any(expected.values()) else 0)
    for r in doc["results"]:
        (b,) = r["budgets"]
        assert b["budget"] == budget and b["passed"] == (not expected[r["model"]])
        if not b["passed"] and budget != "status":
            assert b["nodes"] and all(n["provider"] != "NnapiExecutionProvider" for n in b["nodes"])
            assert b["nodes"][0]["node"] in b["message"]


def test_max_memcpy_on_cuda(zoo, run_cli):
    insert_after_first(zoo / "models" / "tiny_resnet.ts.onnx", zoo / "models" / "tiny_resnet.ts.onnx", "Asinh")
    config = write(zoo, '[[check]]\nname = "gpu"\nmodels = ["models/*.onnx"]\nproviders = ["cuda"]\nmax_memcpy = 0\n')
    code, doc, _ = run_check(run_cli, config)
    t = truth(zoo, ["cuda"])
    assert t["models/tiny_resnet.ts.onnx"]["memcpy"] == 2
    assert code == 1
    assert {r["model"]: r["passed"] for r in doc["results"]} == {m: v["memcpy"] == 0 for m, v in t.items()}


def test_accelerated_budget_catches_symbolic_batch(zoo, run_cli):
    config = write(zoo, '[[check]]\nmodels = ["models/tiny_unet.ts.onnx"]\nproviders = ["nnapi"]\n'
                        'accelerated = true\nforbid_reasons = ["dynamic_shape"]\nlevel = "disable"\n')
    assert run_check(run_cli, config)[0] == 0
    symbolic_batch(zoo / "models" / "tiny_unet.ts.onnx", zoo / "models" / "tiny_unet.ts.onnx")
    code, doc, _ = run_check(run_cli, config)
    assert code == 1
    (r,) = doc["results"]
    assert {b["budget"]: b["passed"] for b in r["budgets"]} == {"accelerated": False, "forbid_reasons": False}
    assert "NOT accelerated" in r["budgets"][0]["message"]
    assert r["budgets"][1]["actual"] == 16


def test_lock_turns_counts_into_budgets(zoo, run_cli):
    config = write(zoo, '[[check]]\nname = "npu"\nmodels = ["models/*.onnx"]\nproviders = ["nnapi"]\n'
                        'level = "disable"\n\n'
                        '[[check]]\nmodels = ["models/tiny_resnet.ts.onnx"]\nproviders = ["qnn"]\nlevel = "disable"\n')
    code, doc, _ = run_check(run_cli, config, "--update")
    assert code == 0 and doc["lock"]["state"] == "updated"
    lock = json.loads((zoo / "partsim.lock.json").read_text())
    assert sorted(lock["entries"]) == sorted([f"npu :: models/{m}" for m in MODELS]
                                             + ["qnn :: models/tiny_resnet.ts.onnx"])
    entry = lock["entries"]["npu :: models/tiny_unet.ts.onnx"]
    assert entry["counts"]["firstProviderNodes"] == truth(zoo, ["nnapi"])["models/tiny_unet.ts.onnx"]["on"]
    assert entry["model"]["path"] == "models/tiny_unet.ts.onnx"  # relative: the lock travels with the repo
    code, doc, _ = run_check(run_cli, config)
    assert code == 0 and {r["lock"]["status"] for r in doc["results"]} == {"compared"}
    # the model changes: batch dimension symbolic.  No budget in the config, yet the lock fails it.
    symbolic_batch(zoo / "models" / "tiny_unet.ts.onnx", zoo / "models" / "tiny_unet.ts.onnx")
    symbolic_batch(zoo / "models" / "tiny_resnet.ts.onnx", zoo / "models" / "tiny_resnet.ts.onnx")
    code, doc, _ = run_check(run_cli, config)
    assert code == 1
    failed = {(r["check"], r["model"]): {f["rule"] for f in r["lock"]["failures"]}
              for r in doc["results"] if not r["passed"]}
    assert failed[("npu", "models/tiny_unet.ts.onnx")] >= {"firstProviderNodes", "accelerated"}
    # QNN claims only the weight Identities of the symbolic-batch ResNet, a partition without graph inputs:
    # the real session fails ("Having zero graph inputs is not supported"), so the status changes too
    assert failed[("qnn", "models/tiny_resnet.ts.onnx")] >= {"firstProviderNodes", "status"}
    assert ("npu", "models/tiny_mobilenetv2.ts.onnx") not in failed
    # JUnit: one testcase per (model, check), failing exactly where the JSON fails
    code, out, _ = run_cli("check", "--config", config, "-f", "junit")
    suite = ET.fromstring(out)
    cases = list(suite.iter("testcase"))
    assert len(cases) == 4 and suite.get("failures") == str(len(failed))
    assert {(c.get("classname"), c.get("name")) for c in cases if c.find("failure") is not None} == \
        {(f"partsim.check.{c}", m) for c, m in failed}


def test_lock_made_with_other_providers_exits_2(zoo, run_cli):
    config = write(zoo, '[[check]]\nname = "npu"\nmodels = ["models/*.onnx"]\nproviders = ["nnapi"]\n')
    assert run_check(run_cli, config, "--update")[0] == 0
    config = write(zoo, '[[check]]\nname = "npu"\nmodels = ["models/*.onnx"]\nproviders = ["coreml"]\n')
    code, doc, err = run_check(run_cli, config)
    assert code == 2 and doc is None
    assert len(err.strip().splitlines()) == 1 and "partsim.lock.json" in err and "other providers" in err


def test_each_model_is_loaded_once_for_all_its_checks(zoo, run_cli, monkeypatch):
    import partsim.api

    calls = []
    real = partsim.api.prepare_graph
    monkeypatch.setattr(partsim.api, "prepare_graph", lambda p, o="none", **k: calls.append(p) or real(p, o, **k))
    # at level disable the graph is the same for every provider list: one load per model
    config = write(zoo, "".join(f'[[check]]\nmodels = ["models/*.onnx"]\nproviders = ["{p}"]\nlevel = "disable"\n\n'
                                for p in ("nnapi", "coreml", "qnn")))
    code, doc, _ = run_check(run_cli, config, "--jobs", "1")
    assert doc["summary"] == {"checks": 3, "models": 3, "results": 9, "failed": 0}
    assert sorted(map(str, calls)) == sorted(str(zoo / "models" / m) for m in MODELS)
    # and every result equals a prediction of its own
    for r in doc["results"]:
        s, _ = predict(zoo / r["model"], r["check"])
        assert r["counts"]["firstProviderNodes"] == s["perProvider"][s["effectiveProviders"][0]]["nodes"]
        assert r["counts"]["transfers"] == s["transfers"] and r["providers"] == s["effectiveProviders"]


def test_output_is_the_same_whatever_the_jobs(zoo, run_cli):
    config = write(zoo, '[[check]]\nmodels = ["models/*.onnx"]\nproviders = ["nnapi"]\nmax_partitions = 3\n'
                        'level = "disable"\n\n'
                        '[[check]]\nmodels = ["models/*.onnx"]\nproviders = ["cuda", "cpu"]\n')
    outs = set()
    for jobs in ("1", "2", "3"):
        for fmt in ("json", "junit", "sarif", "markdown", "table"):
            code, out, _ = run_cli("check", "--config", config, "--jobs", jobs, "-f", fmt)
            assert code == 1
            outs.add((fmt, out))
    assert len(outs) == 5


def test_reports(zoo, run_cli):
    config = write(zoo, '[[check]]\nname = "npu"\nmodels = ["models/*.onnx"]\nproviders = ["nnapi"]\n'
                        'max_partitions = 3\nmin_delegated_share = 0.8\nlevel = "disable"\n')
    code, doc, _ = run_check(run_cli, config)
    t = truth(zoo, ["nnapi"])
    failing = [(m, b) for m, v in t.items() for b, bad in (("max_partitions", v["partitions"] > 3),
                                                           ("min_delegated_share", v["share"] < 0.8)) if bad]
    assert code == 1 and failing
    code, out, _ = run_cli("check", "--config", config, "-f", "sarif")
    sarif = json.loads(out)
    assert sarif["version"] == "2.1.0"
    results = sarif["runs"][0]["results"]
    assert sorted((r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], r["ruleId"])
                  for r in results) == sorted(failing)
    code, out, _ = run_cli("check", "--config", config, "-f", "markdown")
    assert out.startswith("### ❌ partsim check FAILED")
    rows = [line for line in out.splitlines() if line.startswith("| ") and "models/" in line]
    assert len(rows) == 3
    assert sum("`max_partitions`" in line for line in out.splitlines()) == sum(b == "max_partitions"
                                                                              for _, b in failing)
    code, out, _ = run_cli("check", "--config", config)
    assert "check: FAIL" in out and "FAIL npu models/" in out


def test_pyproject_tool_partsim(zoo, run_cli, monkeypatch):
    write(zoo, '[project]\nname = "x"\n\n[tool.partsim]\nlock = "gate.lock.json"\n\n'
               '[[tool.partsim.check]]\nmodels = ["models/tiny_unet.ts.onnx"]\nproviders = ["nnapi"]\n'
               'max_partitions = 1\n', name="pyproject.toml")
    monkeypatch.chdir(zoo)
    code, out, err = run_cli("check", "-f", "json")
    assert code == 1, err  # tiny_unet has 2 NNAPI partitions
    doc = json.loads(out)
    assert doc["config"] == "pyproject.toml" and doc["results"][0]["counts"]["firstProviderPartitions"] == 2
    code, _, _ = run_cli("check", "--update")
    assert (zoo / "gate.lock.json").exists() and code == 1


@pytest.mark.parametrize("text, line, words", [
    ('[[check]]\nmodels = ["models/*.onnx"]\nproviders = ["nnpai"]\n', 3, "did you mean nnapi?"),
    ('[[check]]\nmodels = ["models/*.onnx"]\nproviders = []\n', 3, "providers is empty"),
    ('[[check]]\nmodels = ["models/*.onnx"]\nproviders = ["nnapi"]\n\n[[check]]\nmodels = ["models/*.onnx"]\n'
     'providers = ["cuda"]\nmax_partitons = 3\n', 8, "did you mean max_partitions?"),
    ('[[check]]\nmodels = ["nothing/*.onnx"]\nproviders = ["nnapi"]\n', 2, "no model matches"),
    ('[[check]]\nmodels = ["models/*.onnx"]\nproviders = ["nnapi"]\nmax_transfers = -1\n', 4, "max_transfers"),
    ('[[check]]\nmodels = ["models/*.onnx"]\nproviders = ["nnapi"]\nmin_delegated_share = 1.5\n', 4,
     "min_delegated_share"),
    ('[[check]]\nmodels = ["models/*.onnx"]\nproviders = ["nnapi"]\nforbid_reasons = ["dynamic_shapes"]\n', 4,
     "did you mean dynamic_shape?"),
    ('[[check]]\nmodels = ["models/*.onnx"]\nproviders = ["nnapi"]\nlevel = "max"\n', 4, "level must be one of"),
    ('[[check]]\nmodels = ["models/*.onnx"]\nproviders = ["nnapi"]\nstatus = "fine"\n', 4, "status"),
    ('[[check]]\nmodels = ["models/*.onnx"]\nproviders = ["nnapi"]\naccelerated = "yes"\n', 4, "true or false"),
    ('[[check]]\nmodels = ["models/*.onnx"]\n', 1, "has no 'providers'"),
    ('[[check]]\nmodels = ["models/*.onnx"\nproviders = ["nnapi"]\n', 3, "invalid TOML"),
    ('jobs = 3\n[[check]]\nmodels = ["models/*.onnx"]\nproviders = ["nnapi"]\n', 1, "unknown key 'jobs'"),
    ('title = "no checks"\n', 1, "unknown key"),
    ('[[check]]\nmodels = ["models/*.onnx"]\nproviders = ["nnapi"]\nrules = ["my-rules/nnapi.yaml"]\n', 4,
     "does not exist"),
    ('rules = ["gone/"]\n[[check]]\nmodels = ["models/*.onnx"]\nproviders = ["nnapi"]\n', 1, "does not exist"),
    ('[[check]]\nmodels = ["models/*.onnx"]\nproviders = ["nnapi"]\n[[check]]\nmodels = ["models/*.onnx"]\n'
     'providers = ["nnapi"]\n', 4, "two checks are named"),
])
def test_bad_config_exits_2_with_file_and_line(zoo, run_cli, text, line, words):
    config = write(zoo, text)
    code, out, err = run_cli("check", "--config", config)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert f"{config}:{line}: " in err and words in err, err
    assert not (zoo / "partsim.lock.json").exists()


def test_no_config_found(tmp_path, run_cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("check")
    assert code == 2 and "no partsim.toml" in err


def test_progress_bar_only_when_asked_or_on_a_terminal(zoo, run_cli):
    config = write(zoo, '[[check]]\nmodels = ["models/*.onnx"]\nproviders = ["nnapi"]\n')
    code, _, err = run_cli("check", "--config", config)
    assert code == 0 and err == ""  # stderr is not a terminal here
    code, out, err = run_cli("--progress", "always", "check", "--config", config, "-f", "json")
    assert code == 0 and err.rstrip().endswith("3/3 models") and "█" in err
    json.loads(out)  # the payload stays clean


def test_a_broken_model_exits_2_naming_it_and_writes_nothing(zoo, run_cli):
    (zoo / "models" / "broken.onnx").write_bytes(b"\x08\x07garbage")
    config = write(zoo, '[[check]]\nmodels = ["models/*.onnx"]\nproviders = ["nnapi"]\n')
    for extra in ((), ("--jobs", "1")):
        code, out, err = run_cli("check", "--config", config, "--update", "-o", zoo / "report.xml", "-f", "junit",
                                 *extra)
        assert code == 2 and out == "" and "broken.onnx" in err and len(err.strip().splitlines()) == 1
        assert not (zoo / "report.xml").exists() and not (zoo / "partsim.lock.json").exists()


def test_user_tables_and_a_table_change_against_the_lock(zoo, run_cli):
    from tests.conftest import ROOT

    (zoo / "my-rules").mkdir()
    table = zoo / "my-rules" / "nnapi.yaml"
    table.write_text((ROOT / "rules" / "nnapi.yaml").read_text())
    config = write(zoo, 'rules = ["my-rules/nnapi.yaml"]\n[[check]]\nmodels = ["models/*.onnx"]\nproviders = ["nnapi"]\n')
    code, doc, _ = run_check(run_cli, config, "--update")
    assert code == 0 and doc["summary"]["results"] == 3
    table.write_text(table.read_text() + "\n# a local edit\n")
    code, doc, err = run_check(run_cli, config)
    assert code == 2 and doc is None and "other capability tables (NnapiExecutionProvider differ)" in err
