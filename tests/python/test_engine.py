"""The e-graph engine and the rule prover from Python."""

import json
import os

import pytest

import saturn


def math_rules(root):
    return saturn.Rules.load([os.path.join(root, "docs", "examples", "math.rules")])


def test_egraph_simplifies_with_text_rules(root):
    eg = saturn.EGraph()
    c = eg.add("(* (+ a 0) 1)")
    report = eg.run(math_rules(root), iter_limit=10)
    assert report["iterations"] >= 1 and report["stop_reason"] in ("saturated", "iter_limit", "node_limit")
    term, cost = eg.extract(c)
    assert term == "a" and cost == 1
    assert eg.equiv(c, eg.add("a"))


def test_union_and_costs():
    eg = saturn.EGraph()
    a = eg.add("(f x)")
    b = eg.add("(g x)")
    assert not eg.equiv(a, b)
    assert eg.union(a, b) is True
    assert eg.union(a, b) is False
    assert eg.equiv(a, b) and eg.find(a) == eg.find(b)
    assert eg.extract(a, {"f": 5})[0] == "(g x)"
    assert eg.extract(a, {"g": 5})[0] == "(f x)"
    # congruence after the union
    assert eg.equiv(eg.add("(h (f x))"), eg.add("(h (g x))"))
    with pytest.raises(IndexError):
        eg.find(10 ** 6)
    with pytest.raises(ValueError):
        eg.extract(a, {"f": -1})


def test_rules_from_text_and_serialization():
    rules = saturn.Rules.parse("(rule comm (+ ?a ?b) => (+ ?b ?a))\n(rule zero (+ ?a 0) => ?a)")
    assert rules.names == ["comm", "zero"] and len(rules) == 2
    eg = saturn.EGraph()
    c = eg.add("(+ 0 y)")
    eg.run(rules)
    assert eg.extract(c) == ("y", 1.0)
    data = json.loads(eg.to_json([c]))
    assert "nodes" in data
    assert "digraph" in eg.to_dot()
    assert eg.num_classes >= 1 and eg.num_nodes >= eg.num_classes


def test_rule_errors_name_line_and_column():
    with pytest.raises(saturn.SaturnError, match=r"mine.rules:2:\d+"):
        saturn.Rules.parse("(rule ok (+ ?a 0) => ?a)\n(rule bad (+ ?a 0) => ?b)", "mine.rules")
    with pytest.raises(saturn.SaturnError, match="expected one term"):
        saturn.EGraph().add("a b")


def test_const_fold():
    eg = saturn.EGraph(const_fold=True)
    c = eg.add("(+ 2 3)")
    assert eg.extract(c)[0] == "5"


def test_verify_proves_and_refutes(tmp_path):
    f = tmp_path / "mine.rules"
    f.write_text("(rule add-comm (add ?a ?b) => (add ?b ?a))\n(rule sub-comm (sub ?a ?b) => (sub ?b ?a))\n")
    verdicts = saturn.verify(str(f), max_dim=2, max_rank=2, jobs=1)
    by_rule = {v["rule"]: v for v in verdicts}
    assert by_rule["add-comm"]["status"] == "proved"
    assert by_rule["sub-comm"]["status"] == "refuted"
    cx = by_rule["sub-comm"]["counterexample"]
    assert cx["lhs_value"] != cx["rhs_value"]
    assert by_rule["sub-comm"]["line"] == 2
    with pytest.raises(saturn.SaturnError, match="no such file"):
        saturn.verify(str(tmp_path / "missing.rules"))


def test_explain_a_rewrite(root):
    eg = saturn.EGraph(explain=True)
    c = eg.add("(* (+ a 0) 1)")
    eg.run(math_rules(root), iter_limit=10)
    a = eg.add("a")
    proof = eg.explain(c, a)
    assert proof["replayed"] is True
    kinds = [s.get("rule", s["kind"]) for s in proof["steps"]]
    assert "mul-one" in kinds  # (* x 1) => x; the rest by add-zero, or congruence over it
    assert proof["steps"][0]["from"] == c and proof["steps"][-1]["to"] == a
    with pytest.raises(saturn.SaturnError, match="not equal"):
        eg.explain(c, eg.add("b"))
    with pytest.raises(saturn.SaturnError, match="explain=True"):
        saturn.EGraph().explain(0, 0)
