"""The options table: one row per option drives pytest's options and ini keys, ``Settings``, the
JSON report's settings and the documentation's reference."""

import dataclasses
import subprocess
import sys
from types import SimpleNamespace

import pytest

from pytest_jetson.errors import ConfigError
from pytest_jetson.options import INI_KEYS, OPTIONS, REPORTED_FIELDS, read
from pytest_jetson.report import jsonreport
from pytest_jetson.settings import Settings


def test_every_option_is_a_settings_field_and_every_field_an_option():
    fields = {f.name: f.default for f in dataclasses.fields(Settings)}
    assert sorted(fields) == sorted(o.field for o in OPTIONS)
    assert {o.field: o.default for o in OPTIONS} == fields


def test_the_rows_carry_what_the_reference_is_generated_from():
    flags = [o.flag for o in OPTIONS]
    assert len(set(flags)) == len(flags) and all(f.startswith("--jetson-") for f in flags)
    for o in OPTIONS:
        assert o.help and (o.metavar or o.choices or o.flag_only), o.flag
        assert o.choices is None or isinstance(o.choices, tuple)
    assert sorted(INI_KEYS) == sorted(o.ini for o in OPTIONS if o.ini)


def test_the_json_report_records_the_reported_settings():
    class Device:
        def fingerprint(self):
            return {"device": "orin-nano-8gb"}

    written = jsonreport.build([], Settings(seed=7, backend="simulated"), Device())["settings"]
    assert set(written) == set(REPORTED_FIELDS)
    assert written["seed"] == 7 and written["backend"] == "simulated"


def config(options=(), ini=(), verbose=0):
    given, keys = dict(options), dict(ini)
    return SimpleNamespace(getoption=lambda name, default=None: verbose if name == "verbose" else given.get(name),
                           getini=lambda key: keys.get(key, ""))


def settings_of(cfg):
    return Settings(**read(cfg.getoption, cfg.getini, cfg))


def test_nothing_given_is_the_defaults(monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert settings_of(config(ini={"jetson_seed": "0", "jetson_budget": "3"})) == Settings()


def test_the_command_line_wins_over_the_ini_file_which_wins_over_the_default():
    ini = {"jetson_device": "agx-orin", "jetson_seed": "5", "jetson_budget": "2", "jetson_power_mode": "15W"}
    s = settings_of(config(ini=ini))
    assert (s.device, s.seed, s.budget, s.power_mode) == ("agx-orin", 5, 2.0, "15W")
    s = settings_of(config({"jetson_device": "nano", "jetson_seed": "9", "jetson_budget": "4"}, ini))
    assert (s.device, s.seed, s.budget, s.power_mode) == ("nano", 9, 4.0, "15W")


def test_fallbacks_come_after_the_option(monkeypatch, tmp_path):
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    ini = {"jetson_seed": "0", "jetson_budget": "3"}
    assert settings_of(config(ini=ini)).report_md == str(tmp_path / "summary.md")
    assert settings_of(config({"jetson_report_md": "r.md"}, ini)).report_md == "r.md"
    assert settings_of(config(ini=ini, verbose=1)).table == "all"
    assert settings_of(config({"jetson_table": "none"}, ini, verbose=1)).table == "none"


def test_a_bad_value_names_the_option_and_the_ini_key():
    with pytest.raises(ConfigError, match=r"--jetson-seed / ini jetson_seed: 'x' is not an integer seed"):
        settings_of(config(ini={"jetson_seed": "x", "jetson_budget": "3"}))
    with pytest.raises(ConfigError, match=r"--jetson-update-baselines: 'some' is not one of all, new, force"):
        Settings(update_baselines="some")
    with pytest.raises(ConfigError, match=r"--jetson-duration: 0.0 must be a positive duration"):
        settings_of(config({"jetson_duration": "0s"}, {"jetson_seed": "0", "jetson_budget": "3"}))


def test_pytest_help_lists_every_option_and_ini_key_in_the_tables_order():
    out = subprocess.run([sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"],
                         capture_output=True, text=True).stdout
    section = out.split("performance regression testing on NVIDIA Jetson")[1]
    at = [section.index(f"  {o.flag}") for o in OPTIONS]
    assert at == sorted(at)
    for o in OPTIONS:
        shown = section[section.index(f"  {o.flag}"):].split("\n  -")[0]
        assert " ".join(o.help.split()[:4]) in " ".join(shown.split()), o.flag
        if o.choices and o.parser_choices:
            assert "{" + ",".join(o.choices) + "}" in shown
    at = [out.index(f"  {key} (") for key in INI_KEYS]
    assert at == sorted(at)
