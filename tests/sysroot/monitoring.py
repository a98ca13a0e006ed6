#!/usr/bin/env python3
"""The fleet's monitoring files against the metrics rtpartd writes (daemon/rtpartd/metrics.c, whose
family names are read from the source, and rtpartd(8), METRICS, which must name the same ones).

"rules": docs/prometheus/rtpart.rules.yml passes `promtool check rules`, its alerts behave as
docs/prometheus/rtpart.rules.test.yml says on recorded series (`promtool test rules`), and every
expression names only metrics rtpartd writes. Exits 77 without promtool (Debian package
prometheus).

"dashboard": docs/grafana/rtpart.json is a Grafana dashboard (schemaVersion, uid, title, a
datasource variable of type prometheus that every panel and target uses, panels with unique ids
and gridPos on the 24-column grid without overlap, targets with refId and expr) and every query,
the variables' too, names only metrics rtpartd writes, and each of them at least one.

Run by meson (suite sysroot) with RTPART_SOURCE_DIR set.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

import yaml

SRC = os.environ.get("RTPART_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RULES = os.path.join(SRC, "docs", "prometheus", "rtpart.rules.yml")
RULES_TEST = os.path.join(SRC, "docs", "prometheus", "rtpart.rules.test.yml")
DASHBOARD = os.path.join(SRC, "docs", "grafana", "rtpart.json")
PROMTOOL = shutil.which("promtool")

# PromQL words that are not metric names: operators, modifiers and aggregation clauses.
KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right",
            "offset", "bool", "atan2", "inf", "nan"}


def written_metrics():
    """The family names metrics.c passes as string literals (rtpart_...), checked against the man page."""
    with open(os.path.join(SRC, "daemon", "rtpartd", "metrics.c")) as f:
        code = set(re.findall(r'"(rtpart_[a-z_]+)', f.read()))
    with open(os.path.join(SRC, "man", "rtpartd.8.scd")) as f:
        man = f.read()
    section = man[man.index("# METRICS"):]
    section = section[:section.find("\n# ", 1)]
    documented = set(re.findall(r"\*(rtpart_[a-z_]+)\*", section))
    assert code == documented, f"metrics.c writes {sorted(code - documented)} that rtpartd(8) does not name, " \
        f"rtpartd(8) names {sorted(documented - code)} that metrics.c does not write"
    assert len(code) >= 10, code
    return code


def metric_names(expr):
    """The metric names of a PromQL expression (or a label_values() variable query): what is left of
    its identifiers once strings, label matchers, durations, clause label lists, function names and
    keywords are taken out."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\$\{?\w+\}?", " ", e)
    e = re.sub(r"\b[a-zA-Z_][a-zA-Z0-9_]*\s*\(", "(", e)  # function calls
    if expr.lstrip().startswith("label_values("):
        e = re.sub(r",\s*[a-zA-Z_]\w*\s*\)", ")", e)  # label_values(metric, label)
    names = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", re.sub(r"\b\d+(\.\d+)?([eE][-+]?\d+)?\b", " ", e)))
    return names - KEYWORDS


class Names(unittest.TestCase):
    def test_extraction(self):
        """The extraction itself, on expressions of known names."""
        self.assertEqual(metric_names('count(rtpart_in_sync{instance=~"$instance"} == 1 and x_y == 1)'),
                         {"rtpart_in_sync", "x_y"})
        self.assertEqual(metric_names("a / ignoring(cpu) group_left b"), {"a", "b"})
        self.assertEqual(metric_names("max_over_time(a[1d]) unless sum by (domain) (b) > 2e3"), {"a", "b"})
        self.assertEqual(metric_names("label_values(rtpart_profile_applied, instance)"), {"rtpart_profile_applied"})
        self.assertEqual(metric_names("time() - c < 86400"), {"c"})


class Rules(unittest.TestCase):
    def test_promtool_check(self):
        p = subprocess.run([PROMTOOL, "check", "rules", RULES], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_promtool_test(self):
        p = subprocess.run([PROMTOOL, "test", "rules", os.path.basename(RULES_TEST)], capture_output=True,
                           text=True, cwd=os.path.dirname(RULES_TEST))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("SUCCESS", p.stdout)

    def test_names(self):
        written = written_metrics()
        with open(RULES) as f:
            groups = yaml.safe_load(f)["groups"]
        alerts = {r["alert"]: r["expr"] for g in groups for r in g["rules"]}
        for name in ("RtpartDriftLasting", "RtpartRebootPending", "RtpartAuditNoisy", "RtpartApplyFailed",
                     "RtpartMetricsMissing"):
            self.assertIn(name, alerts)
        for alert, expr in alerts.items():
            names = metric_names(expr)
            self.assertTrue(names, f"{alert}: no metric in {expr!r}")
            self.assertLessEqual(names, written, f"{alert}: {sorted(names - written)} are not written by rtpartd")
        # Every alert is tested on recorded series.
        with open(RULES_TEST) as f:
            tested = {t["alertname"] for g in yaml.safe_load(f)["tests"] for t in g.get("alert_rule_test", [])
                      if any(t.get("exp_alerts") or [])}
        self.assertEqual(tested, set(alerts))


class Dashboard(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(DASHBOARD) as f:
            cls.d = json.load(f)

    def test_model(self):
        d = self.d
        self.assertIsInstance(d.get("schemaVersion"), int)
        self.assertGreaterEqual(d["schemaVersion"], 36)  # datasource references as {type, uid}
        for key in ("uid", "title"):
            self.assertIsInstance(d.get(key), str)
            self.assertTrue(d[key])
        self.assertLessEqual(len(d["uid"]), 40)
        variables = {v["name"]: v for v in d["templating"]["list"]}
        ds = [v for v in variables.values() if v["type"] == "datasource"]
        self.assertEqual(len(ds), 1, variables)
        self.assertEqual(ds[0]["query"], "prometheus")
        ref = {"type": "prometheus", "uid": "${%s}" % ds[0]["name"]}
        for v in variables.values():
            if v["type"] == "query":
                self.assertEqual(v["datasource"], ref, v["name"])
        panels = d["panels"]
        self.assertTrue(panels)
        self.assertEqual(len({p["id"] for p in panels}), len(panels), "panel ids are not unique")
        cells = {}
        for p in panels:
            self.assertTrue(p.get("type") and p.get("title"), p)
            g = p["gridPos"]
            self.assertEqual(set(g), {"h", "w", "x", "y"}, p["title"])
            self.assertTrue(all(isinstance(g[k], int) and g[k] >= 0 for k in g), p["title"])
            self.assertTrue(g["w"] > 0 and g["h"] > 0 and g["x"] + g["w"] <= 24, p["title"])
            for x in range(g["x"], g["x"] + g["w"]):
                for y in range(g["y"], g["y"] + g["h"]):
                    self.assertNotIn((x, y), cells, f"{p['title']} overlaps {cells.get((x, y))}")
                    cells[(x, y)] = p["title"]
            self.assertEqual(p["datasource"], ref, p["title"])
            self.assertTrue(p["targets"], p["title"])
            self.assertEqual(len({t["refId"] for t in p["targets"]}), len(p["targets"]), p["title"])
            for t in p["targets"]:
                self.assertEqual(t["datasource"], ref, p["title"])
                self.assertIsInstance(t.get("expr"), str, p["title"])
                self.assertIn('instance=~"$instance"', t["expr"], p["title"])

    def test_views(self):
        """The fleet view the dashboard is for: hosts in sync, drifted, waiting for a reboot; drift by
        domain; audit noise per CPU."""
        exprs = [t["expr"] for p in self.d["panels"] for t in p["targets"]]
        for needle in ("rtpart_in_sync{", "rtpart_reboot_required{", "sum by (domain) (rtpart_drifted_knobs",
                       "rtpart_audit_interrupts{", "rtpart_audit_noise_threads{"):
            self.assertTrue(any(needle in e for e in exprs), needle)
        self.assertTrue(any('"{{instance}} CPU {{cpu}}"' in json.dumps(t) for p in self.d["panels"]
                            for t in p["targets"]))

    def test_names(self):
        written = written_metrics()
        queries = [(p["title"], t["expr"]) for p in self.d["panels"] for t in p["targets"]]
        for v in self.d["templating"]["list"]:
            if v["type"] == "query":
                q = v["query"]
                queries.append((v["name"], q["query"] if isinstance(q, dict) else q))
        for where, expr in queries:
            names = metric_names(expr)
            self.assertTrue(names, f"{where}: no metric in {expr!r}")
            self.assertLessEqual(names, written, f"{where}: {sorted(names - written)} are not written by rtpartd")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "rules":
        if not PROMTOOL:
            print("promtool is not installed (Debian package prometheus): skipped")
            sys.exit(77)
        suite = [Names, Rules]
    elif what == "dashboard":
        suite = [Names, Dashboard]
    else:
        sys.exit(f"usage: {sys.argv[0]} rules|dashboard")
    loader = unittest.TestLoader()
    result = unittest.TextTestRunner(verbosity=2).run(unittest.TestSuite(loader.loadTestsFromTestCase(c) for c in suite))
    sys.exit(0 if result.wasSuccessful() else 1)
