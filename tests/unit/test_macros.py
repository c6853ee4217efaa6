"""The macro engine: SillyTavern macro semantics over a frozen input's working copy.

Every macro with exact outputs; setters visible later in the same engine (one assembly) and
never in the next engine or the frozen mappings; seeded randomness reproducible and
seed-sensitive; unknown macros verbatim and reported; the hostile-input guards; a property that
any mix of text and macro fragments renders without raising, deterministically.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.inputs.macros import (
    MAX_OUTPUT_CHARS,
    MacroContext,
    MacroEngine,
)

CTX = MacroContext(
    user="Ann",
    char="Bot",
    last_message="See you.",
    date="2024-05-06",
    time="13:45",
    seed="frozen-1",
)


def engine(
    local: dict[str, Any] | None = None, glob: dict[str, Any] | None = None, **kw: Any
) -> MacroEngine:
    return MacroEngine(CTX, local, glob, **kw)


def render(text: str, local: dict[str, Any] | None = None) -> str:
    return engine(local).render(text)


# ----------------------------------------------------------------- names and frozen facts


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{{user}} and {{char}}", "Ann and Bot"),
        ("{{USER}}/{{Char}}/{{lastMessage}}/{{LASTMESSAGE}}", "Ann/Bot/See you./See you."),
        ("{{ user }}|{{\tchar\n}}", "Ann|Bot"),
        ("{{date}} {{time}}", "2024-05-06 13:45"),
        ("{{isodate}}T{{isotime}}", "2024-05-06T13:45"),
        ("no macros here", "no macros here"),
        ("", ""),
    ],
)
def test_context_macros(text: str, expected: str) -> None:
    assert render(text) == expected


def test_defaults_and_empty_frozen_facts() -> None:
    out = MacroEngine(MacroContext()).render("{{user}}|{{char}}|{{lastMessage}}|{{date}}|{{time}}")
    assert out == "User|Assistant|||"


@pytest.mark.parametrize(
    "text",
    ["a{{// a comment}}b", "a{{//}}b", "a{{ // spaced }}b", "a{{comment anything::at all}}b"],
)
def test_comments_render_empty(text: str) -> None:
    assert render(text) == "ab"


def test_setters_inside_comments_do_not_run() -> None:
    eng = engine()
    assert eng.render("{{// {{setvar::x::1}} }}[{{getvar::x}}]") == "[]"
    assert eng.local_vars == {}


# ----------------------------------------------------------------- variables


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("plain", "plain"),
        ("007", "7"),  # SillyTavern reads numeric strings as numbers
        ("2.50", "2.5"),
        (" 5 ", "5"),
        ("0x10", "0x10"),
        ("Infinity", "Infinity"),
        ("", ""),
        (3, "3"),
        (2.0, "2"),
        (0.1, "0.1"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (0.000001, "0.000001"),
        (10**30, "1000000000000000000000000000000"),
        (True, "true"),
        (None, ""),
        (["a", 1], '["a",1]'),
        ({"k": "v", "n": [1]}, '{"k":"v","n":[1]}'),
    ],
)
def test_getvar_renders_frozen_values(value: Any, shown: str) -> None:
    assert render("{{getvar::v}}", {"v": value}) == shown


def test_missing_variable_reads_empty() -> None:
    assert render("[{{getvar::nope}}][{{getglobalvar::nope}}]") == "[][]"


def test_setvar_renders_empty_and_is_visible_later() -> None:
    eng = engine()
    assert eng.render("a{{setvar::x::hello}}b") == "ab"
    assert eng.render("{{getvar::x}}") == "hello"
    assert eng.render("{{setvar::x::again}}{{getvar::x}}") == "again"
    assert eng.local_vars == {"x": "again"}


def test_setvar_stores_numbers_as_numbers() -> None:
    eng = engine()
    eng.render("{{setvar::i::42}}{{setvar::f::1.50}}{{setvar::s::4 2}}{{setvar::z::007}}")
    eng.render("{{setvar::e::1e3}}{{setvar::n:: -3 }}{{setvar::h::0x1F}}")
    assert eng.local_vars == {
        "i": 42,
        "f": 1.5,
        "s": "4 2",
        "z": 7,
        "e": 1000.0,
        "n": -3,
        "h": "0x1F",
    }
    assert type(eng.local_vars["i"]) is int
    assert eng.render("{{getvar::f}}|{{getvar::e}}") == "1.5|1000"


def test_variable_names_are_trimmed_and_case_sensitive() -> None:
    eng = engine()
    assert eng.render("{{setvar:: Name ::v}}{{getvar::Name}}|{{getvar::name}}") == "v|"


@pytest.mark.parametrize(
    ("frozen", "add", "stored", "shown"),
    [
        (None, "5", 5, "5"),  # missing counts as 0
        (None, "abc", "abc", "abc"),  # missing concatenates as ""
        ("", "2", 2, "2"),
        ("10", "5", 15, "15"),  # numeric string + number -> number
        (10, "-2.5", 7.5, "7.5"),
        (0.1, "0.2", 0.30000000000000004, "0.30000000000000004"),
        (10**20, "1", 10**20 + 1, "100000000000000000001"),  # ints stay exact
        ("foo", "bar", "foobar", "foobar"),
        ("foo", "1", "foo1", "foo1"),
        (5, "abc", "5abc", "5abc"),
        ("007", "x", "7x", "7x"),  # the current value as getvar shows it
        (0, "x", "0x", "0x"),  # SillyTavern would drop the 0; documented divergence
        (True, "1", "true1", "true1"),  # booleans are not numbers
        (["a"], "b", ["a", "b"], '["a","b"]'),
        ('["a"]', "b", '["a","b"]', '["a","b"]'),  # a JSON-array string stays a string
        ('["a"', "b", '["a"b', '["a"b'),
    ],
)
def test_addvar(frozen: Any, add: str, stored: Any, shown: str) -> None:
    local = {} if frozen is None else {"v": frozen}
    eng = engine(local)
    assert eng.render(f"{{{{addvar::v::{add}}}}}") == ""
    assert eng.local_vars["v"] == stored
    assert type(eng.local_vars["v"]) is type(stored)
    assert eng.render("{{getvar::v}}") == shown


def test_addvar_non_finite_sum_is_refused() -> None:
    eng = engine({"v": 1.7e308})
    assert eng.render("{{addvar::v::1.7e308}}{{getvar::v}}") == "1.7e+308"
    assert eng.local_vars == {"v": 1.7e308}
    assert eng.warnings == ["adding 1.7e308 to variable 'v' is not finite; unchanged"]


@pytest.mark.parametrize(
    ("frozen", "text", "out", "stored"),
    [
        (None, "{{incvar::v}}{{incvar::v}}{{incvar::v}}", "123", 3),
        (None, "{{decvar::v}}|{{decvar::v}}", "-1|-2", -2),
        ("41", "{{incvar::v}}", "42", 42),
        (2.5, "{{decvar::v}}", "1.5", 1.5),
        ("abc", "{{incvar::v}}|{{decvar::v}}", "abc1|abc1-1", "abc1-1"),
        (["x"], "{{incvar::v}}", '["x",1]', ["x", 1]),
    ],
)
def test_incvar_decvar_render_the_new_value(frozen: Any, text: str, out: str, stored: Any) -> None:
    eng = engine({} if frozen is None else {"v": frozen})
    assert eng.render(text) == out
    assert eng.local_vars["v"] == stored


def test_global_variants_use_the_global_copy() -> None:
    eng = engine({"x": "local"}, {"x": "global", "n": "1"})
    out = eng.render(
        "{{getvar::x}}/{{getglobalvar::x}}"
        "{{setglobalvar::y::G}}{{addglobalvar::n::4}}{{addglobalvar::s::a}}{{addglobalvar::s::b}}"
        "/{{incglobalvar::n}}/{{decglobalvar::m}}/{{getglobalvar::y}}/{{getvar::y}}"
    )
    assert out == "local/global/6/-1/G/"
    assert eng.global_vars == {"x": "global", "n": 6, "y": "G", "s": "ab", "m": -1}
    assert eng.local_vars == {"x": "local"}


def test_macro_names_case_insensitive_for_variables() -> None:
    eng = engine()
    assert eng.render("{{SetVar::a::1}}{{INCVAR::a}}|{{GetVar::a}}") == "2|2"


# ----------------------------------------------------------------- one engine = one assembly


def test_components_and_parameters_share_one_engine() -> None:
    eng = engine({"mood": "calm"})
    components = [
        "{{setvar::mood::tense}}{{setvar::temp::0.7}}System for {{char}}.",
        "Mood: {{getvar::mood}}{{incvar::turns}}",
    ]
    rendered = [eng.render(c) for c in components]
    params = eng.render_value(
        {"temperature": "{{getvar::temp}}", "stop": ["{{user}}:", "{{getvar::mood}}"]}
    )
    assert rendered == ["System for Bot.", "Mood: tense1"]
    assert params == {"temperature": "0.7", "stop": ["Ann:", "tense"]}


def test_two_engines_from_the_same_frozen_input_are_independent() -> None:
    frozen_local = {"count": 1, "log": ["start"], "meta": {"tags": ["a"]}}
    frozen_global = {"g": "G"}
    first = MacroEngine(CTX, frozen_local, frozen_global)
    second = MacroEngine(CTX, frozen_local, frozen_global)
    first.render("{{incvar::count}}{{addvar::log::more}}{{setglobalvar::g::changed}}")
    assert first.local_vars == {"count": 2, "log": ["start", "more"], "meta": {"tags": ["a"]}}
    assert second.render("{{getvar::count}}|{{getvar::log}}|{{getglobalvar::g}}") == (
        '1|["start"]|G'
    )
    assert second.local_vars == frozen_local
    assert second.global_vars == frozen_global


def test_frozen_mappings_are_never_modified() -> None:
    frozen_local: dict[str, Any] = {
        "log": ["start", {"nested": ["x"]}],
        "meta": {"tags": ["a"], "n": 1},
        "n": "1",
        "json": '["a"]',
    }
    frozen_global: dict[str, Any] = {"g": ["global"]}
    before = json.dumps([frozen_local, frozen_global], sort_keys=True)
    snapshot = copy.deepcopy([frozen_local, frozen_global])
    eng = MacroEngine(CTX, frozen_local, frozen_global)
    eng.render(
        "{{addvar::log::x}}{{addvar::json::b}}{{incvar::n}}{{setvar::meta::gone}}"
        "{{addglobalvar::g::y}}{{setglobalvar::new::1}}"
    )
    working = eng.local_vars
    working["log"][1]["nested"].append("mutated through the property")
    eng.render_value({"k": ["{{addvar::log::again}}"]})
    assert json.dumps([frozen_local, frozen_global], sort_keys=True) == before
    assert [frozen_local, frozen_global] == snapshot
    assert eng.local_vars["log"] == ["start", {"nested": ["x"]}, "x", "again"]


def test_engine_copies_the_mappings_at_construction() -> None:
    frozen: dict[str, Any] = {"log": ["a"]}
    eng = MacroEngine(CTX, frozen)
    frozen["log"].append("later")
    frozen["new"] = 1
    assert eng.render("{{getvar::log}}|{{getvar::new}}") == '["a"]|'


# ----------------------------------------------------------------- render_value


def test_render_value_renders_nested_strings_into_new_containers() -> None:
    params: dict[str, Any] = {
        "model": "m-{{char}}",
        "{{user}}": "key stays",
        "stop": ["{{user}}:", ("{{char}}:", 3)],
        "extra": {"n": 2, "f": 0.5, "b": True, "none": None, "deep": [{"x": "{{date}}"}]},
    }
    before = copy.deepcopy(params)
    out = engine().render_value(params)
    assert out == {
        "model": "m-Bot",
        "{{user}}": "key stays",
        "stop": ["Ann:", ("Bot:", 3)],
        "extra": {"n": 2, "f": 0.5, "b": True, "none": None, "deep": [{"x": "2024-05-06"}]},
    }
    assert params == before
    assert out is not params
    assert out["stop"] is not params["stop"]
    assert out["extra"]["deep"][0] is not params["extra"]["deep"][0]


def test_render_value_scalars() -> None:
    eng = engine()
    assert eng.render_value("{{user}}") == "Ann"
    assert eng.render_value(7) == 7
    assert eng.render_value(None) is None


# ----------------------------------------------------------------- randomness


def documented_rng(seed: str, kind: str, key: int) -> random.Random:
    material = json.dumps([seed, kind, key]).encode("ascii")
    return random.Random(int.from_bytes(hashlib.sha256(material).digest(), "big"))


def test_seeded_choices_follow_the_documented_formula_and_are_pinned() -> None:
    """The same frozen input renders the same choices in every release."""
    items = "abcde"
    text = (
        "{{random::a::b::c::d::e}}{{random::a::b::c::d::e}}{{pick::a::b::c::d::e}}{{roll::1d100}}"
    )
    expected = (
        items[documented_rng("frozen-1", "random", 0).randrange(5)]
        + items[documented_rng("frozen-1", "random", 1).randrange(5)]
        + items[documented_rng("frozen-1", "pick", 50).randrange(5)]  # offset of {{pick
        + str(documented_rng("frozen-1", "roll", 0).randint(1, 100))
    )
    assert text.index("{{pick") == 50
    assert engine().render(text) == expected == "daa79"


def test_random_items_and_forms() -> None:
    assert render("{{random::only}}") == "only"
    assert render("{{random}}|{{random::}}") == "|"
    assert render("{{random: x , x }}") == "x"
    assert render(r"{{random::a\,b}}") == "a,b"  # escaped comma in the one-argument form
    eng = engine()
    outs = {eng.render("{{random:a, b, c}}") for _ in range(60)}
    assert outs == {"a", "b", "c"}
    outs = {eng.render("{{random a,b}}") for _ in range(40)}
    assert outs == {"a", "b"}
    assert {eng.render("{{random::a,b::c}}") for _ in range(40)} == {"a,b", "c"}


def test_random_differs_per_occurrence_and_reproduces_across_engines() -> None:
    text = "".join("{{random::0::1::2::3::4::5::6::7::8::9}}" for _ in range(30))
    first, second = engine(), engine()
    out = first.render(text)
    assert len(set(out)) > 3
    assert second.render(text) == out
    assert first.render(text) != out  # occurrences continue counting within one assembly
    assert MacroEngine(MacroContext(seed="other")).render(text) != out


def test_random_pick_roll_are_seed_sensitive() -> None:
    def outcomes(text: str) -> set[str]:
        return {MacroEngine(MacroContext(seed=f"s{i}")).render(text) for i in range(60)}

    assert outcomes("{{random::a::b::c}}") == {"a", "b", "c"}
    assert outcomes("{{pick::a::b::c}}") == {"a", "b", "c"}
    assert outcomes("{{roll::d4}}") == {"1", "2", "3", "4"}


def test_pick_is_stable_per_seed_and_position() -> None:
    text = "{{pick::a::b::c::d::e::f::g::h}} " * 12
    eng = engine()
    out = eng.render(text)
    assert eng.render(text) == out  # re-rendering does not re-roll
    assert engine().render(text) == out
    assert len(set(out.split())) > 1  # different positions, different choices
    # Text after a pick does not move it; text before it does (its offset changes).
    assert engine().render("{{pick::a::b::c::d::e::f::g::h}} trailing edit")[0] == out[0]
    shifted = {
        engine().render(" " * k + "{{pick::a::b::c::d::e::f::g::h}}").strip() for k in range(20)
    }
    assert len(shifted) > 1


def test_pick_comma_form_and_empty() -> None:
    assert render("{{pick::}}|{{pick}}") == "|"
    assert render("{{pick: q }}") == "q"
    assert render("{{pick a,b}}") in {"a", "b"}


@pytest.mark.parametrize(
    ("formula", "low", "high"),
    [("6", 1, 6), ("1d20", 1, 20), ("d8", 1, 8), ("2d3+4", 6, 10), ("2D2-3", -1, 1)],
)
def test_roll_ranges(formula: str, low: int, high: int) -> None:
    values = {
        int(MacroEngine(MacroContext(seed=str(i))).render(f"{{{{roll::{formula}}}}}"))
        for i in range(120)
    }
    assert min(values) == low
    assert max(values) == high


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{{roll::1d1+5}}", "6"),
        ("{{roll::2d1-3}}", "-1"),
        ("{{roll::1000d1}}", "1000"),
        ("{{roll:1}}", "1"),
        ("{{roll 1d1}}", "1"),
        ("{{ROLL:: 1d1 }}", "1"),
    ],
)
def test_roll_exact(text: str, expected: str) -> None:
    assert render(text) == expected


@pytest.mark.parametrize(
    "formula", ["0", "1d0", "0d6", "1001d6", "d", "2x6", "1d6+", "1d6*2", "06", "1d" + "9" * 10]
)
def test_roll_invalid_renders_empty_with_warning(formula: str) -> None:
    eng = engine()
    assert eng.render(f"[{{{{roll::{formula}}}}}]") == "[]"
    assert len(eng.warnings) == 1
    assert eng.warnings[0].startswith("invalid roll formula")


def test_roll_reproducible_across_engines() -> None:
    text = "{{roll::3d20}} " * 10
    assert engine().render(text) == engine().render(text)
    assert len(set(engine().render(text).split())) > 1


# ----------------------------------------------------------------- trim


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a\n\n{{trim}}\n\nb", "ab"),
        ("a \n{{trim}}\n b", "a  b"),  # only newlines go, spaces stay
        ("a\r\n{{trim}}\r\nb", "ab"),
        ("\n\n{{trim}}x\n", "x\n"),
        ("x{{trim}}", "x"),
        ("a\n{{trim}}\n{{trim}}\nb", "ab"),
        ("{{setvar::v::\n\nV\n\n}}a\n{{trim}}{{getvar::v}}", "aV"),  # stored value was stripped
        ("a\n{{// c}}\n{{trim}}\nb", "ab"),  # newlines across an empty macro output go too
        ("{{setvar::v::x\n\n{{trim}}\ny}}[{{getvar::v}}]", "[xy]"),  # trim inside an argument
    ],
)
def test_trim(text: str, expected: str) -> None:
    assert render(text) == expected


def test_trim_eats_newlines_produced_by_adjacent_macros() -> None:
    assert render("{{getvar::v}}{{trim}}{{getvar::v}}", {"v": "\nX\n"}) == "\nXX\n"


# ----------------------------------------------------------------- unknown, malformed, nesting


def test_unknown_macros_are_verbatim_and_reported_once_in_order() -> None:
    eng = engine()
    out = eng.render("{{foo::bar}} {{user}} {{Baz}} {{foo::bar}} {{foo::{{user}}}} {{newline}}")
    assert out == "{{foo::bar}} Ann {{Baz}} {{foo::bar}} {{foo::Ann}} {{newline}}"
    assert eng.unknown == ["{{foo::bar}}", "{{Baz}}", "{{foo::Ann}}", "{{newline}}"]
    eng.render("{{Baz}}{{qux}}")
    assert eng.unknown == ["{{foo::bar}}", "{{Baz}}", "{{foo::Ann}}", "{{newline}}", "{{qux}}"]
    assert eng.warnings == []


@pytest.mark.parametrize(
    ("text", "expected", "unknown"),
    [
        ("{{ }}", "{{ }}", ["{{ }}"]),
        ("{{}}", "{{}}", ["{{}}"]),
        ("{{.x}} {{$y}} {{!user}}", "{{.x}} {{$y}} {{!user}}", ["{{.x}}", "{{$y}}", "{{!user}}"]),
        ("{{user!}}", "{{user!}}", ["{{user!}}"]),
        ("{{if x}}a{{/if}}", "{{if x}}a{{/if}}", ["{{if x}}", "{{/if}}"]),
        ("{{{user}}}", "{Ann}", []),
        ("{{{{user}}}}", "{{Ann}}", []),
        ("{{ {{user}} }}", "{{ Ann }}", ["{{ Ann }}"]),
        ("{{user", "{{user", []),
        ("user}}", "user}}", []),
        ("{{unclosed {{user}} tail", "{{unclosed Ann tail", []),
        ("{{user}}}} }}", "Ann}} }}", []),
        ("{ {user} }", "{ {user} }", []),
        ("<USER>", "<USER>", []),
    ],
)
def test_malformed_and_brace_edge_cases(text: str, expected: str, unknown: list[str]) -> None:
    eng = engine()
    assert eng.render(text) == expected
    assert eng.unknown == unknown


@pytest.mark.parametrize(
    ("text", "warning"),
    [
        ("{{setvar::x::a::b}}", "{{setvar::x::a::b}}: setvar takes 2 argument(s), got 3"),
        ("{{user::x}}", "{{user::x}}: user takes 0 argument(s), got 1"),
        ("{{getvar}}", "{{getvar}}: getvar takes 1 argument(s), got 0"),
        ("{{trim:}}", "{{trim:}}: trim takes 0 argument(s), got 1"),
        ("{{roll}}", "{{roll}}: roll takes 1 argument(s), got 0"),
    ],
)
def test_wrong_arity_is_verbatim_with_a_warning(text: str, warning: str) -> None:
    eng = engine()
    assert eng.render(text) == text
    assert eng.warnings == [warning + "; left verbatim"]
    assert eng.unknown == []
    assert eng.local_vars == {}


def test_nested_macros_render_first_left_to_right() -> None:
    eng = engine({"ptr": "target", "target": "found"})
    assert eng.render("{{setvar::greeting::Hello, {{user}}!}}{{getvar::greeting}}") == (
        "Hello, Ann!"
    )
    assert eng.render("{{getvar::{{getvar::ptr}}}}") == "found"
    assert eng.render("{{setvar::{{char}}-{{incvar::k}}::v}}{{getvar::Bot-1}}") == "v"
    assert eng.render("{{random::{{user}}}}|{{random:{{user}},{{user}}}}") == "Ann|Ann"
    assert eng.render("{{setvar::n::{{roll::1d1}}{{roll::1d1}}}}{{incvar::n}}") == "12"
    assert eng.render("{{setvar::a::1}}{{setvar::a::{{getvar::a}}2}}{{getvar::a}}") == "12"


def test_macro_output_is_not_rescanned() -> None:
    assert render("{{getvar::v}}", {"v": "{{user}}"}) == "{{user}}"


def test_setters_nested_in_unknown_macros_still_run() -> None:
    eng = engine()
    assert eng.render("{{foo::{{setvar::x::1}}}}{{getvar::x}}") == "{{foo::}}1"


def test_separators() -> None:
    eng = engine({"my var": "spaced", "x": "X"})
    assert eng.render("{{getvar::x}}{{getvar:x}}{{getvar x}}{{getvar   x  }}") == "XXXX"
    assert eng.render("{{getvar::my var}}|{{getvar my var}}") == "spaced|spaced"
    assert eng.render("{{setvar::y:::z}}{{getvar::y}}") == ":z"


# ----------------------------------------------------------------- guards


def test_substitution_cap_leaves_the_rest_verbatim() -> None:
    eng = engine(max_substitutions=3)
    out = eng.render("{{user}}{{setvar::a::1}}{{char}}{{setvar::b::2}}{{user}}")
    assert out == "AnnBot{{setvar::b::2}}{{user}}"
    assert eng.local_vars == {"a": 1}
    assert eng.warnings == ["more than 3 macros in one text; the rest of the text is left verbatim"]
    assert eng.render("{{user}}") == "Ann"  # the next render starts with fresh counters


def test_default_substitution_cap() -> None:
    eng = engine()
    out = eng.render("{{user}}" * 10_050)
    assert out == "Ann" * 10_000 + "{{user}}" * 50
    assert len(eng.warnings) == 1


def test_depth_cap() -> None:
    eng = engine(max_depth=3)
    assert eng.render("{{setvar::a::{{setvar::b::{{user}}}}}}") == ""
    assert eng.local_vars == {"a": "", "b": "Ann"}
    deep = "{{setvar::a::{{setvar::b::{{setvar::c::{{user}}}}}}}}"
    assert eng.render(deep + "{{user}}") == deep + "{{user}}"
    assert eng.warnings == ["macros nested more than 3 deep; the rest of the text is left verbatim"]


def test_output_cap_on_exploding_variables() -> None:
    doubling = "{{setvar::a::{{getvar::a}}{{getvar::a}}}}"
    text = "{{setvar::a::0123456789}}" + doubling * 40 + "{{getvar::a}}"
    start = time.perf_counter()
    eng = engine()
    out = eng.render(text)
    assert time.perf_counter() - start < 1.0
    assert len(out) <= len(text) + MAX_OUTPUT_CHARS
    assert out.endswith(doubling + "{{getvar::a}}")
    assert len(eng.local_vars["a"]) <= MAX_OUTPUT_CHARS
    assert eng.warnings == [
        f"macros produced more than {MAX_OUTPUT_CHARS} characters;"
        " the rest of the text is left verbatim"
    ]


def test_output_cap_small() -> None:
    eng = engine({"v": "12345"}, max_output_chars=12)
    assert eng.render("{{getvar::v}}{{getvar::v}}{{getvar::v}}{{user}}") == (
        "1234512345{{getvar::v}}{{user}}"
    )


@pytest.mark.parametrize(
    "text",
    [
        "{{a::" * 20_000 + "x" + "}}" * 20_000,
        "{{setvar::x::" * 20_000 + "}}" * 20_000,
        "{{" * 100_000,
        "{{a " * 50_000,
        "}}" * 100_000,
        "{{{" * 30_000 + "}}}" * 30_000,
        "{{random::" + "{{user}}::" * 20_000 + "}}",
        "{{foo::" + "{{b}}" * 30_000 + "}}",
    ],
)
def test_hostile_input_terminates_quickly(text: str) -> None:
    start = time.perf_counter()
    eng = engine()
    out = eng.render(text)
    assert time.perf_counter() - start < 1.5
    assert len(out) <= len(text) + MAX_OUTPUT_CHARS
    assert engine().render(text) == out


def test_deep_nesting_is_left_verbatim() -> None:
    text = "{{a::" * 500 + "x" + "}}" * 500
    eng = engine()
    assert eng.render(text) == text
    assert eng.warnings == [
        "macros nested more than 64 deep; the rest of the text is left verbatim"
    ]


# ----------------------------------------------------------------- property

FRAGMENTS = [
    "{{", "}}", "{", "}", "::", ":", ",", " ", "\n", "\r\n", "\\,", "//", "x", "a", "1", "-1",
    "1.5", "2d6", "user", "char", "lastMessage", "date", "getvar", "setvar", "addvar", "incvar",
    "decvar", "getglobalvar", "setglobalvar", "addglobalvar", "incglobalvar", "decglobalvar",
    "random", "pick", "roll", "trim", "comment", "unknown", "[", "]", '"', "é", "\x00",
]  # fmt: skip

texts = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=3)), max_size=60).map(
    "".join
)


@settings(max_examples=200, deadline=None)
@given(text=texts, seed=st.text(max_size=4))
def test_any_text_renders_deterministically_without_raising(text: str, seed: str) -> None:
    frozen = {"x": "1", "a": ["l"], "n": 2.5}
    runs = []
    for _ in range(2):
        eng = MacroEngine(MacroContext(seed=seed), frozen, {"x": "g"}, max_output_chars=4096)
        out = eng.render(text)
        params = eng.render_value({"p": [text, {"q": text}]})
        runs.append((out, params, eng.local_vars, eng.global_vars, eng.unknown, eng.warnings))
        assert len(out) <= len(text) + 4096
        json.dumps([eng.local_vars, eng.global_vars], allow_nan=False)
        if "{{" not in text:
            assert out == text
    assert runs[0] == runs[1]
    assert frozen == {"x": "1", "a": ["l"], "n": 2.5}
