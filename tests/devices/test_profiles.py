"""The device profiles (data) and the ``pytest-jetson devices`` table that shows them."""

import json
import re
from pathlib import Path

import pytest

from pytest_jetson.cli.devices import main, profile_to_dict
from pytest_jetson.devices import catalog
from pytest_jetson.devices.detect import match_profile
from pytest_jetson.devices.profile import PROFILE_DIR, load_profile
from pytest_jetson.errors import ConfigError

GiB = 1024 ** 3

IDS = {
    "nano", "tx2", "xavier-nx", "agx-xavier", "orin-nano-4gb", "orin-nano-4gb-super", "orin-nano-8gb",
    "orin-nano-8gb-super", "orin-nx-8gb", "orin-nx-16gb", "agx-orin-32gb", "agx-orin-64gb", "agx-thor",
    # the Super firmware of Orin NX has its own power table, so its own profile (beyond the brief's list)
    "orin-nx-8gb-super", "orin-nx-16gb-super",
}

# Key figures copied from shared/calibration/devices.json (source ids in brackets there), so a
# typo in a profile shows up here: id -> (SMs, CUDA cores, Tensor Cores, memory GiB, GB/s, DLAs, CC).
PINNED = {
    "nano": (1, 128, 0, 4, 25.6, 0, "5.3"),                 # ULTRA_SPEC
    "tx2": (2, 256, 0, 8, 59.7, 0, "6.2"),                  # DEVQ_TX2, TX2_BW
    "xavier-nx": (6, 384, 48, 8, 59.7, 2, "7.2"),           # ULTRA_SPEC
    "agx-xavier": (8, 512, 64, 32, 136.5, 2, "7.2"),        # ULTRA_SPEC
    "orin-nano-4gb": (4, 512, 16, 4, 34, 0, "8.7"),         # VR
    "orin-nano-8gb": (8, 1024, 32, 8, 68, 0, "8.7"),        # VR, IGPU
    "orin-nano-8gb-super": (8, 1024, 32, 8, 102, 0, "8.7"),  # VR (Super)
    "orin-nx-8gb": (8, 1024, 32, 8, 102, 1, "8.7"),         # VR
    "orin-nx-16gb": (8, 1024, 32, 16, 102, 2, "8.7"),       # VR, DEVQ_ORIN
    "orin-nx-8gb-super": (8, 1024, 32, 8, 102, 1, "8.7"),   # VR
    "orin-nx-16gb-super": (8, 1024, 32, 16, 102, 2, "8.7"),  # VR
    "agx-orin-32gb": (14, 1792, 56, 32, 204.8, 2, "8.7"),   # VR
    "agx-orin-64gb": (16, 2048, 64, 64, 204.8, 2, "8.7"),   # VR, MZPH
    "agx-thor": (20, 2560, 96, 128, 273, 0, "11.0"),        # RIDGERUN, THOR_FORUM, THOR_SPEC3
}

# GPU clock caps per mode from devices.json / the nvpmodel tables: (id, mode) -> MHz.
PINNED_GPU_MHZ = {
    ("nano", "MAXN"): 921.6, ("nano", "5W"): 640,
    ("tx2", "MAXN"): 1300, ("tx2", "MAXQ"): 850, ("tx2", "MAXP_CORE_ARM"): 1120,
    ("xavier-nx", "MODE_15W_6CORE"): 1100, ("agx-xavier", "MAXN"): 1377,
    ("orin-nano-8gb", "15W"): 625,
    ("orin-nano-8gb-super", "15W"): 612, ("orin-nano-8gb-super", "25W"): 918,
    ("orin-nano-8gb-super", "MAXN_SUPER"): 1020,
    ("orin-nx-8gb", "MAXN"): 765, ("orin-nx-16gb", "MAXN"): 918, ("orin-nx-16gb-super", "40W"): 1173,
    ("agx-orin-32gb", "MAXN"): 939, ("agx-orin-64gb", "MAXN"): 1300,
    ("agx-thor", "MAXN"): 1575, ("agx-thor", "120W"): 1386,
}

FRIENDLY = {
    "orin-nano": "orin-nano-8gb", "orin-nano-super": "orin-nano-8gb-super", "agx-orin": "agx-orin-64gb",
    "nano": "nano", "jetson-nano": "nano", "xavier-nx": "xavier-nx", "agx-xavier": "agx-xavier",
    "xavier": "agx-xavier", "orin-nx": "orin-nx-16gb", "thor": "agx-thor", "tx2": "tx2",
    "orin-nx-super": "orin-nx-16gb-super",
    # the way people type them
    "Orin_Nano": "orin-nano-8gb", "Jetson Orin Nano Super": "orin-nano-8gb-super", "AGX Thor": "agx-thor",
    "p3767-0005": "orin-nano-8gb", "p3701-0005": "agx-orin-64gb", "P3767-0000": "orin-nx-16gb",
}


def _files():
    return sorted(PROFILE_DIR.glob("*.json"))


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.stem)
def test_every_profile_file_loads_and_is_named_for_its_id(path):
    profile = load_profile(path)
    assert profile.id == path.stem
    assert profile.memory_bytes > 0 and profile.power_modes


def test_every_module_is_there():
    assert set(catalog.names()) == IDS


def test_no_alias_names_two_devices():
    # Checked here from the raw files, independently of the registry's own check.
    owners = {}
    for path in _files():
        data = json.loads(path.read_text(encoding="utf-8"))
        for key in [data["id"], data["name"], *data.get("aliases", [])]:
            norm = catalog.normalise(key)
            assert owners.setdefault(norm, data["id"]) == data["id"], (
                f"{key!r} names both {owners[norm]} and {data['id']}")
    catalog._alias_table()  # the loader agrees


@pytest.mark.parametrize("profile", sorted(catalog.profiles().values(), key=lambda p: p.id), ids=lambda p: p.id)
def test_every_alias_resolves_to_its_own_device(profile):
    for key in (profile.id, profile.name, *profile.aliases):
        assert catalog.get(key) is profile


@pytest.mark.parametrize("alias, device", sorted(FRIENDLY.items()))
def test_friendly_names(alias, device):
    assert catalog.get(alias).id == device


def test_unknown_name_suggests_a_device():
    # aliases are what people type: the closest ones are suggested, with the device each names
    with pytest.raises(ConfigError, match=r"Did you mean 'orin-nano' \(orin-nano-8gb\)"):
        catalog.get("orn-nano")


@pytest.mark.parametrize("profile", sorted(catalog.profiles().values(), key=lambda p: p.id), ids=lambda p: p.id)
def test_power_modes_are_well_formed(profile):
    names = [m.name.lower() for m in profile.power_modes]
    ids = [m.id for m in profile.power_modes]
    assert len(set(names)) == len(names) and len(set(ids)) == len(ids)
    assert profile.default_power_mode in profile.mode_names()
    assert profile.power_mode(profile.default_power_mode).name == profile.default_power_mode
    for mode in profile.power_modes:
        assert profile.power_mode(mode.id) is mode  # nvpmodel -m ID works too
        if mode.name.upper().startswith("MAXN"):
            assert mode.budget_w is None, f"{mode.name} has no power budget"
        else:
            assert mode.budget_w and mode.budget_w > 0
        clocks = (mode.gpu_max_mhz, mode.emc_max_mhz, mode.cpu_online, mode.cpu_max_mhz)
        for value in clocks + (mode.dla_max_mhz,):
            assert value is None or value > 0
        if mode.cpu_online is not None and profile.cpu_cores is not None:
            assert mode.cpu_online <= profile.cpu_cores
        if None in clocks:
            assert mode.notes, f"{profile.id} {mode.name}: a null clock must say why (no invented figures)"


@pytest.mark.parametrize("device", sorted(PINNED))
def test_key_figures_match_the_calibration_sheet(device):
    sms, cores, tcs, gib, gbs, dlas, cc = PINNED[device]
    p = catalog.get(device)
    assert (p.sm_count, p.cuda_cores, p.tensor_cores) == (sms, cores, tcs)
    assert p.memory_bytes == gib * GiB
    assert p.memory_bandwidth_gbs == pytest.approx(gbs)
    assert p.dla_count == dlas and p.has_dla == (dlas > 0)
    assert p.compute_capability == cc


@pytest.mark.parametrize("device, mode", sorted(PINNED_GPU_MHZ))
def test_gpu_clock_caps(device, mode):
    assert catalog.get(device).power_mode(mode).gpu_max_mhz == pytest.approx(PINNED_GPU_MHZ[device, mode], abs=10)


@pytest.mark.parametrize("base", ["orin-nano-4gb", "orin-nano-8gb", "orin-nx-8gb", "orin-nx-16gb"])
def test_super_is_the_same_silicon_with_the_super_power_table(base):
    plain, sup = catalog.get(base), catalog.get(base + "-super")
    same = ("gpu_arch", "compute_capability", "sm_count", "cuda_cores", "tensor_cores", "memory_bytes",
            "cpu_cores", "dla_count", "precisions", "family")
    assert {k: getattr(plain, k) for k in same} == {k: getattr(sup, k) for k in same}
    assert sup.memory_bandwidth_gbs >= plain.memory_bandwidth_gbs
    assert "MAXN_SUPER" in sup.mode_names() and "MAXN_SUPER" not in plain.mode_names()

    def top_gpu(p):
        return max(m.gpu_max_mhz or 0 for m in p.power_modes)

    assert top_gpu(sup) > top_gpu(plain)


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.stem)
def test_active_sm_counts_fit_the_gpu(path):
    # gpu_sm_active is an extra per-mode key (SMs left on by nvpmodel's TPC power gating); the
    # fully-enabled mode of each SKU must come out at the SKU's SM count.
    data = json.loads(path.read_text(encoding="utf-8"))
    counts = [m.get("gpu_sm_active") for m in data["power_modes"] if m.get("gpu_sm_active") is not None]
    for n in counts:
        assert 0 < n <= data["gpu"]["sm_count"]
    if counts:
        assert max(counts) == data["gpu"]["sm_count"]


@pytest.mark.parametrize("device, precisions", [
    ("nano", ["fp32", "fp16", "int8"]), ("tx2", ["fp32", "fp16", "int8"]),
    ("xavier-nx", ["fp32", "fp16", "int8"]), ("agx-orin-64gb", ["fp32", "tf32", "fp16", "int8"]),
    ("agx-thor", ["fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4"]),
])
def test_precisions(device, precisions):
    assert list(catalog.get(device).precisions) == precisions


@pytest.mark.parametrize("profile", sorted(catalog.profiles().values(), key=lambda p: p.id), ids=lambda p: p.id)
def test_every_profile_has_sources(profile):
    assert profile.sources and all(v.strip() for v in profile.sources.values())


@pytest.mark.parametrize("profile", sorted(catalog.profiles().values(), key=lambda p: p.id), ids=lambda p: p.id)
def test_each_board_is_recognised_from_its_own_identity(profile):
    # A board shows one of its model strings, its own memory and its own nvpmodel table; the
    # profiles must carry enough to tell it from its siblings (4GB vs 8GB, Super vs not).
    for model in profile.model_strings:
        found = match_profile(f"{model}\x00", profile.memory_bytes - 300 * 1024 ** 2, profile.mode_names())
        assert found is not None and found.id == profile.id, (model, found and found.id)


# --- the `pytest-jetson devices` command --------------------------------------------------


def _table_ids(out):
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("---"))
    rows = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        rows.append(line.split()[0])
    return rows


def test_table_lists_every_device_once(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    rows = _table_ids(out)
    assert sorted(rows) == sorted(IDS)
    assert rows.index("nano") < rows.index("agx-xavier") < rows.index("orin-nano-8gb") < rows.index("agx-thor")


def test_table_shows_names_modes_and_the_default(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(map(len, lines)) <= 120
    modes_block = lines[lines.index(next(x for x in lines if x.startswith("power modes"))):]
    for p in catalog.profiles().values():
        row = next(line for line in lines if line.startswith(p.id + " "))
        assert p.name in row
        # the modes line of the device, with its wrapped continuation lines
        i = next(i for i, x in enumerate(modes_block) if x.split()[:1] == [p.id])
        modes = " ".join([modes_block[i]] + [x for x in modes_block[i + 1:i + 4] if x.startswith("      ")])
        for mode in p.power_modes:
            assert re.search(rf"(?<!\S){re.escape(mode.name)}\*?(?!\S)", modes), (p.id, mode.name)
        assert f"{p.default_power_mode}*" in modes
        assert modes.count("*") == 1
    assert "  orin-nano-8gb-super  orin-nano-super" in out  # the alias block


def test_json_lists_every_device_with_its_modes(capsys):
    assert main(["--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {d["id"] for d in data} == IDS
    for d in data:
        p = catalog.get(d["id"])
        assert [m["name"] for m in d["power_modes"]] == p.mode_names()
        assert d["default_power_mode"] in [m["name"] for m in d["power_modes"]]
        assert d["gpu"]["sm_count"] == p.sm_count and d["memory"]["bytes"] == p.memory_bytes


def test_json_of_a_profile_loads_back_as_the_same_profile(tmp_path, capsys):
    # The JSON is the profile schema, so `devices NAME --json` is a starting point for a custom board.
    assert main(["--json", "orin-nano-super", "nano"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [d["id"] for d in data] == ["orin-nano-8gb-super", "nano"]
    for d in data:
        path = tmp_path / f"{d['id']}.json"
        path.write_text(json.dumps(dict(d, schema=1)), encoding="utf-8")
        assert load_profile(path) == catalog.get(d["id"])
    assert profile_to_dict(catalog.get("tx2"))["power_modes"][3]["name"] == "MAXP_CORE_ARM"


def test_named_device_shows_its_power_mode_table(capsys):
    assert main(["orin-nano-super"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("orin-nano-8gb-super: Jetson Orin Nano 8GB Super")
    row = next(line for line in out.splitlines() if " MAXN_SUPER " in line)
    assert row.split()[:6] == ["2", "MAXN_SUPER", "none", "1020", "8", "3199"]  # ..., GPU MHz, SMs on, EMC MHz
    default = next(line for line in out.splitlines() if line.rstrip().endswith("default"))
    assert " 25W " in default
    assert "sources:" in out


def test_unknown_device_is_an_error_with_a_suggestion(capsys):
    assert main(["orn-nano"]) == 2
    err = capsys.readouterr().err
    assert "unknown Jetson device 'orn-nano'" in err and "orin-nano-8gb" in err


def test_dispatcher_runs_the_devices_command(capsys):
    from pytest_jetson.cli import main as cli_main

    assert cli_main(["devices", "thor"]) == 0
    assert "agx-thor: Jetson AGX Thor" in capsys.readouterr().out


def test_profiles_dir_is_inside_the_package():
    assert Path(PROFILE_DIR).parent.name == "devices" and list(Path(PROFILE_DIR).glob("*.json"))
