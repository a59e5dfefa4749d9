"""The accuracy eval's problems (seeded, with known answers), its reading of a server's answer
(validated, fuzzed) and the test that says two sides answer differently."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuparity.comparison.server_checks import accuracy_check, pooled
from gpuparity.workloads.serving import accuracy as ev
from gpuparity.workloads.serving.wire import ProtocolError


def test_problems_come_from_the_seed_and_their_answers_follow_their_examples():
    a, b = ev.problems(30, seed=0), ev.problems(30, seed=0)
    assert a == b and a != ev.problems(30, seed=1)
    assert [p.task for p in a[:6]] == list(ev.TASKS)
    for p in a:
        last = p.prompt.rsplit("\n", 1)[-1]
        if p.task == "add":
            x, y = map(int, re.findall(r"\d+", last))
            assert p.answer == str(x + y)
        elif p.task == "copy":
            assert p.prompt.endswith(f"Input: {p.answer}\nOutput:")
        elif p.task == "upper":
            assert p.answer == last.split(" ->")[0].upper()
        elif p.task == "reverse":
            words = p.prompt.rsplit("Words: ", 1)[-1].split("\n")[0].split()
            assert p.answer == " ".join(reversed(words))
        elif p.task == "count":
            words = p.prompt.rsplit("Words: ", 1)[-1].split("\n")[0].split()
            assert p.answer == str(len(words))
        elif p.task == "first":
            assert p.answer == p.prompt.rsplit("List: ", 1)[-1].split()[0]
        assert 1 <= p.max_tokens <= 10


def test_an_answer_is_its_first_line_and_read_from_either_endpoint():
    assert ev.first_line(" 12\n\nThe answer") == "12"
    assert ev.answer_text(b'{"choices": [{"index": 0, "text": " 7\\n"}], "usage": {}}') == " 7\n"
    assert ev.answer_text(json.dumps({"choices": [{"message": {"role": "assistant", "content": "CUP"}}]})) == "CUP"
    with pytest.raises(ProtocolError):
        ev.answer_text(b'{"choices": []}')


@settings(max_examples=100, deadline=2000)
@given(st.one_of(st.binary(max_size=200), st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10)),
    lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(st.sampled_from(
        ["choices", "text", "message", "content", "x"]), kids, max_size=3)), max_leaves=10).map(
    lambda v: json.dumps(v).encode())))
def test_any_body_is_an_answer_or_a_protocol_error(body):
    try:
        assert isinstance(ev.answer_text(body), str)
    except ProtocolError as exc:
        assert "\n" not in str(exc)


def test_two_sides_answer_differently_only_beyond_the_evals_noise():
    def run(correct, answered=16, seed=0):
        return {"eval": ev.EVAL, "version": ev.EVAL_VERSION, "seed": seed, "correct": correct, "answered": answered}

    wrong = accuracy_check(pooled([run(9)]), pooled([run(0)]))
    assert wrong["differs"] and wrong["p_value"] < 0.001
    same = accuracy_check(pooled([run(9)]), pooled([run(10)]))
    assert not same["differs"] and same["p_value"] > 0.5
    assert pooled([run(9), run(8), run(3, seed=4)]) == {"eval": ev.EVAL, "version": ev.EVAL_VERSION, "seed": 0,
                                                        "runs": 2, "other_evals": 1, "correct": 17, "answered": 32}
    assert accuracy_check(pooled([run(9)]), pooled([run(9, seed=1)]))["compared"] is False
    assert accuracy_check(pooled([run(9)]), None)["why"] == "no accuracy eval on side B"
    assert ev.accuracy_text({"eval": ev.EVAL, "version": 1, "seed": 0, "answered": 0, "error": "boom"}) == \
        "accuracy not measured: boom"
