"""The shipped Grafana files pass Grafana's published schema, promtool accepts the rules, compose wires it up.

The schema check installs `@grafana/schema` and TypeScript from the npm registry (the versions and hashes
in grafana_schema/package-lock.json) into a temporary folder and compiles one typed constant per file
with `tsc --strict` (grafana_schema/grafana.ts says which type each one gets). Without npm, or without
the registry and an npm cache that has the packages, the test fails: it is never skipped.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = ROOT / "emulator" / "dashboards"
SCHEMA = Path(__file__).with_name("grafana_schema")
TSC = ["--noEmit", "--strict", "--skipLibCheck", "--module", "esnext", "--moduleResolution", "bundler",
       "--target", "es2022"]
PANEL_TYPES = {"timeseries": "TimeSeriesPanel"}   # panel type -> its type in grafana.ts


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def shipped() -> dict[str, Any]:
    return {
        "dashboard": json.loads((DASHBOARDS / "grafana-pulsar-lb-emulator.json").read_text()),
        "datasources": load_yaml(DASHBOARDS / "provisioning" / "datasources" / "prometheus.yaml"),
        "providers": load_yaml(DASHBOARDS / "provisioning" / "dashboards" / "pulsar-lb-emulator.yaml"),
    }


def typed_constants(files: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """(constant name, grafana.ts type, value): the dashboard, each panel by its type, the provisioning."""
    out = [("dashboard", "PulsarDashboard", files["dashboard"])]
    for panel in files["dashboard"]["panels"]:
        assert panel["type"] in PANEL_TYPES, f"panel {panel['id']}: add its type {panel['type']!r} to grafana.ts"
        out.append((f"panel_{panel['id']}", PANEL_TYPES[panel["type"]], panel))
    out += [("datasources", "DatasourcesFileV1", files["datasources"]),
            ("providers", "DashboardProvidersFileV1", files["providers"])]
    return out


def write_check(folder: Path, name: str, files: dict[str, Any]) -> dict[str, range]:
    """Write `<name>.ts`; return each constant's line range, to tell which one an error is in."""
    constants = typed_constants(files)
    lines = [f"import type {{ {', '.join(sorted({t for _, t, _ in constants}))} }} from './grafana';"]
    where: dict[str, range] = {}
    for const, type_name, value in constants:
        body = f"export const {const}: {type_name} = {json.dumps(value, indent=2)};".splitlines()
        where[const] = range(len(lines) + 1, len(lines) + len(body) + 1)
        lines += body
    (folder / f"{name}.ts").write_text("\n".join(lines) + "\n")
    return where


@pytest.fixture(scope="module")
def schema_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """@grafana/schema and typescript installed with `npm ci` into a fresh folder."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.fail("node and npm are needed to check the Grafana files against @grafana/schema")
    folder = tmp_path_factory.mktemp("grafana-schema")
    for name in ("package.json", "package-lock.json", "grafana.ts"):
        shutil.copy(SCHEMA / name, folder / name)
    done = subprocess.run([npm, "ci", "--prefer-offline", "--ignore-scripts", "--no-audit", "--no-fund"],
                          cwd=folder, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        pytest.fail("npm ci of @grafana/schema failed (is the npm registry reachable?):\n"
                    + done.stdout + done.stderr)
    return folder


def errors_by_constant(folder: Path, checks: dict[str, dict[str, range]]) -> dict[str, set[str]]:
    """Run tsc once over every check file; {file: names of the constants with an error}."""
    done = subprocess.run(["node", str(folder / "node_modules" / "typescript" / "bin" / "tsc"), *TSC,
                           *(f"{name}.ts" for name in checks)],
                          cwd=folder, capture_output=True, text=True, timeout=300)
    found: dict[str, set[str]] = {name: set() for name in checks}
    for m in re.finditer(r"^(\w+)\.ts\((\d+),\d+\): error", done.stdout, re.M):
        name, line = m.group(1), int(m.group(2))
        found[name] |= {const for const, lines in checks[name].items() if line in lines} or {"?"}
    assert done.returncode == 0 or any(found.values()), done.stdout + done.stderr
    return found


def test_the_dashboard_and_provisioning_pass_grafanas_schema_and_broken_copies_do_not(schema_folder):
    good = shipped()
    bad = copy.deepcopy(good)
    panels = bad["dashboard"]["panels"]
    panels[0]["options"]["tooltip"]["sort"] = "sideways"                # not a SortOrder
    panels[1]["options"]["legend"]["placement"] = "top"                 # bottom or right only
    del panels[2]["options"]["legend"]["showLegend"]                    # required
    panels[3]["fieldConfig"]["defaults"]["colour"] = "red"              # no such field
    bad["dashboard"]["annotations"]["list"][1]["titelFormat"] = "{{name}}"
    bad["datasources"]["datasources"][0]["isdefault"] = True            # Grafana's key is isDefault
    bad["providers"]["providers"][0]["options"]["folder"] = "Pulsar"    # folder belongs to the provider
    checks = {"shipped": write_check(schema_folder, "shipped", good),
              "broken": write_check(schema_folder, "broken", bad)}
    found = errors_by_constant(schema_folder, checks)
    assert found["shipped"] == set()
    ids = [p["id"] for p in panels[:4]]
    assert found["broken"] == {*(f"panel_{i}" for i in ids), "dashboard", "datasources", "providers"}


def test_compose_provisioning_and_dashboard_fit_together():
    files = shipped()
    compose = load_yaml(DASHBOARDS / "compose.yaml")
    prometheus, grafana = compose["services"]["prometheus"], compose["services"]["grafana"]
    assert prometheus["network_mode"] == grafana["network_mode"] == "host"   # the emulator binds 127.0.0.1

    def mounts(service: dict[str, Any]) -> dict[PurePosixPath, Path]:
        out = {}
        for volume in service["volumes"]:
            source, target, mode = volume.split(":")
            assert mode == "ro" and (DASHBOARDS / source).exists(), volume
            out[PurePosixPath(target)] = DASHBOARDS / source
        return out

    # Prometheus: the shipped config, its rule file beside it, listening where the datasource points.
    prom_mounts = mounts(prometheus)
    flags = dict(arg.removeprefix("--").split("=", 1) for arg in prometheus["command"])
    config = PurePosixPath(flags["config.file"])
    assert prom_mounts[config] == DASHBOARDS / "prometheus.yml"
    for rule_file in load_yaml(DASHBOARDS / "prometheus.yml")["rule_files"]:
        assert prom_mounts[config.parent / rule_file] == DASHBOARDS / rule_file
    (source,) = files["datasources"]["datasources"]
    assert source["url"] == f"http://{flags['web.listen-address']}"
    scrape = load_yaml(DASHBOARDS / "prometheus.yml")["global"]["scrape_interval"]
    assert source["jsonData"]["timeInterval"] == scrape

    # Grafana: the provisioning folders, the dashboard inside the provider's path, its home page.
    graf_mounts = mounts(grafana)
    for kind in ("datasources", "dashboards"):
        assert graf_mounts[PurePosixPath("/etc/grafana/provisioning") / kind] == DASHBOARDS / "provisioning" / kind
    (provider,) = files["providers"]["providers"]
    (dashboard_file,) = [t for t, s in graf_mounts.items() if s.name == "grafana-pulsar-lb-emulator.json"]
    assert dashboard_file.parent == PurePosixPath(provider["options"]["path"])
    assert grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"] == str(dashboard_file)

    # The image is the Grafana whose schema the test above checks against.
    schema_version = json.loads((SCHEMA / "package.json").read_text())["devDependencies"]["@grafana/schema"]
    assert grafana["image"] == f"grafana/grafana:{schema_version}"

    # Every query of the dashboard goes to the provisioned datasource, through the datasource variable.
    dash = files["dashboard"]
    variable = next(v for v in dash["templating"]["list"] if v["type"] == "datasource")
    assert variable["query"] == source["type"] and variable["current"]["value"] == source["uid"]
    ref = {"type": "prometheus", "uid": "${%s}" % variable["name"]}
    refs = [p["datasource"] for p in dash["panels"]] + [t["datasource"] for p in dash["panels"] for t in p["targets"]]
    refs += [a["datasource"] for a in dash["annotations"]["list"] if not a.get("builtIn")]
    assert refs and all(r == ref for r in refs)


def require_promtool() -> str:
    promtool = shutil.which("promtool")
    if promtool:
        return promtool
    message = "promtool is missing; install it with: apt-get install -y --no-install-recommends prometheus"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def test_promtool_accepts_the_rules_and_the_config_that_loads_them():
    promtool = require_promtool()
    rules = subprocess.run([promtool, "check", "rules", str(DASHBOARDS / "pulsar-lb-rules.yml")],
                           capture_output=True, text=True, timeout=60)
    assert rules.returncode == 0, rules.stdout + rules.stderr
    assert "SUCCESS: 12 rules found" in rules.stdout
    config = subprocess.run([promtool, "check", "config", str(DASHBOARDS / "prometheus.yml")],
                            capture_output=True, text=True, timeout=60)
    assert config.returncode == 0, config.stdout + config.stderr
    assert "SUCCESS: 1 rule files found" in config.stdout + config.stderr


def test_each_alert_compares_a_recorded_kpi_with_a_threshold():
    """So that 'every rule returns data' can be checked: an alert's left side is a recording rule."""
    groups = load_yaml(DASHBOARDS / "pulsar-lb-rules.yml")["groups"]
    recorded = {r["record"] for g in groups for r in g["rules"] if "record" in r}
    alerts = {r["alert"]: r["expr"] for g in groups for r in g["rules"] if "alert" in r}
    assert set(alerts) == {"PulsarLoadImbalanced", "PulsarBundleUnloadRateHigh", "PulsarLookupFailures"}
    for name, expr in alerts.items():
        m = re.fullmatch(r"([\w:]+) (>|>=) [0-9.]+", expr)
        assert m and m.group(1) in recorded, (name, expr)
