"""Write the recorded board trees under ``tests/data/boards/`` and their README.

Run ``python tests/data/boards/build.py`` after changing a board below; ``tests/devices/test_board_trees.py``
fails when the committed trees and this file disagree. Each board is one dict: what its files say,
and where each value comes from (``sources``). A value no public source gives is marked in
``unknown`` with what was written instead, so a reader can tell a recording from a stand-in.

The instantaneous readings of a tree (rails, clocks, loads, temperatures, memory in use) are one
moment: the tegrastats line named in ``tegrastats`` (a file and a line index under
``tests/data/tegrastats/``). The files are written so that the board's own tools would print that
line, which lets the tests compare the sysfs and tegrastats readers on the same state.
"""

import json
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TEGRASTATS = HERE.parent / "tegrastats"
sys.path.insert(0, str(HERE.parents[2]))

from pytest_jetson.telemetry.tegrastats import parse_line  # noqa: E402

# -- sources named once, cited by key ------------------------------------------------------------
SOURCES = {
    "js-table": "rbonghi/jetson_stats jtop/core/jetson_variables.py (MODULE_NAME_TABLE, NVIDIA_JETPACK)",
    "js-readers": "rbonghi/jetson_stats 4.3.2 and 7.2.2 jtop/core/{gpu,power,temperature,memory,"
                  "engine,cpu}.py: the paths and units the jtop service reads",
    "js-emulator": "rbonghi/jetson_stats tests/nvpmodel and tests/jetson_clocks (the project's "
                   "emulators of NVIDIA's tools, with their Nano and TX2 outputs)",
    "js-360": "rbonghi/jetson_stats issue #360 (tegrastats' own source table: GR3D_FREQ, "
              "IGPU_LOAD, EMC_FREQ, EMC_LOAD paths per board)",
    "js-323": "rbonghi/jetson_stats issue #323 (NVIDIA's jetson_clocks EMC paths per SoC: tegra186/194 "
              "/sys/kernel/debug/bpmp/debug/clk/emc/{rate,min_rate,max_rate,mrq_rate_locked}; tegra210 "
              "/sys/kernel/debug/tegra_bwmgr/emc_{min,max}_rate and /sys/kernel/debug/clk/override.emc/"
              "{clk_rate,clk_state})",
    "js-825": "rbonghi/jetson_stats pull request #825 (Thor EMC: /sys/class/devfreq/bwmgr/{cur,min,max}_freq, "
              "activity in /sys/kernel/debug/bpmp/debug/actmon/mc_all_avg_activity)",
    "js-400": "rbonghi/jetson_stats issue #400 (jtop --error-log of an Orin Nano 8GB devkit, L4T "
              "35.3.1: nv_tegra_release, model, compatible, dtsfilename)",
    "js-525": "rbonghi/jetson_stats issue #525 (jtop --error-log of a Xavier NX devkit, L4T 35.3.1)",
    "js-608": "rbonghi/jetson_stats issue #608 (jtop.service journal of an AGX Orin, JetPack 5.1: "
              "thermal zone names and numbers)",
    "js-291": "rbonghi/jetson_stats issue #291 (jtop.service journal of an AGX Xavier 32GB module: Found "
              "thermal 'AUX' in thermal_zone2, 'CPU' in thermal_zone0, ...)",
    "js-413": "rbonghi/jetson_stats issue #413 (jtop.service journal of a TX2, L4T 32.7.3: "
              "GPU 'gp10b' status in /sys/devices/17000000.gp10b)",
    "js-417": "rbonghi/jetson_stats issue #417 (jtop.service journal of a Nano: GPU 'gpu' in "
              "/sys/devices/57000000.gpu, thermal zones AO, CPU, GPU, PLL, PMIC, thermal)",
    "js-711": "rbonghi/jetson_stats issue #711 (jtop --error-log of an AGX Thor devkit, L4T 38.2.0)",
    "js-885": "rbonghi/jetson_stats issue #885 (AGX Thor, JetPack 7.2: GPU devfreq nodes "
              "gpu-gpc-0 and gpu-nvd-0, no 'load' file)",
    "js-900": "rbonghi/jetson_stats pull request #900 and 7.2.2 jtop/core/power.py (Thor carrier "
              "INA238: hwmon in1_input mV, curr1_input mA, power1_input uW, reported as VIN)",
    "oe4t-92": "OE4T/meta-tegra-community pull request #92/#93 (jtop.service journal of a Xavier NX, "
               "L4T 35.x: INA3221 at /sys/bus/i2c/devices/7-0040/hwmon/hwmon4, in7 'sum of shunt "
               "voltages')",
    "oe4t-doc": "OE4T/meta-tegra docs (cat /sys/firmware/devicetree/base/compatible on an Orin Nano "
                "devkit with Super firmware: ...nvidia,p3768-0000+p3767-0005-super, "
                "nvidia,p3767-0005, nvidia,tegra234)",
    "gpio-125": "NVIDIA/jetson-gpio issue #125 (cat /proc/device-tree/compatible on an AGX Orin 64GB "
                "devkit: nvidia,p3737-0000+p3701-0005 nvidia,p3701-0005 nvidia,tegra234 "
                "nvidia,tegra23x)",
    "gpio-135": "NVIDIA/jetson-gpio issue #135 (compatible of an AGX Thor devkit, L4T 38.4)",
    "adafruit": "adafruit/Adafruit_Python_PlatformDetect pull requests #378/#393 and its boards "
                "table (Orin Nano Super compatible with the -super suffix; AGX Xavier devkit "
                "'nvidia,p2822-0000+p2888-0001'); PR #37 (AGX Xavier model 'Jetson-AGX' since L4T 32.2)",
    "nvidia-dtbind": "NVIDIA's dt-bindings header tegra234-p3767-0000-common.h "
                     "(JETSON_COMPATIBLE_P3768: every p3767 SKU, with and without -super)",
    "upstream-dts": "Linux arch/arm64/boot/dts/nvidia/tegra234-p3768-0000+p3767-0000.dts "
                    "(compatible nvidia,p3768-0000+p3767-0000, nvidia,p3767-0000, nvidia,tegra234)",
    "nano-compat": "OE4T/meta-tegra notes and a public jetson-nano-b00.dts dump: compatible "
                   "nvidia,p3449-0000-b00+p3448-0000-b00 nvidia,jetson-nano nvidia,tegra210",
    "tx2-dump": "a public TX2 devkit bring-up note (stock L4T R32.7.6): DT model 'quill', "
                "compatible nvidia,p2597-0000+p3310-1000 nvidia,tegra186",
    "tx2-iio": "public TX2 power scripts (GitHub code search): ina3221x 0-0040/iio:device0 rails "
               "VDD_SYS_GPU, VDD_SYS_SOC, VDD_4V0_WIFI; 0-0041/iio:device1 VDD_IN, VDD_SYS_CPU, "
               "VDD_SYS_DDR",
    "nano-iio": "public Nano power scripts (GitHub code search) and jetson_stats issue #131: "
                "/sys/bus/i2c/drivers/ina3221x/6-0040/iio:device0 (rail_name_N, in_powerN_input "
                "mW, in_voltageN_input mV, in_currentN_input mA)",
    "xavier-iio": "public AGX Xavier power scripts (GitHub code search): INA3221 at 1-0040 (GPU, CPU, "
                  "SOC) and 1-0041 (CV, VDDRQ, SYS5V)",
    "hwmon-orin": "public Orin power scripts (GitHub code search): /sys/bus/i2c/drivers/ina3221/"
                  "1-0040/hwmon/hwmon{1,3,4}/in{1,2,3}_input, curr{1,2,3}_input; the hwmon index "
                  "differs between boards and boots",
    "release-32.6.1": "public copies of /etc/nv_tegra_release on a Nano (BOARD t210ref) and a TX2 "
                      "(BOARD t186ref), L4T R32.6.1, GCID 27863751",
    "release-35.x": "jtop --error-log in rbonghi/jetson_stats issues #400 and #525 (R35 REVISION 3.1, "
                    "GCID 32827747)",
    "release-35.4.1": "a public test fixture of /etc/nv_tegra_release: '# R35 (release), REVISION: "
                      "4.1, GCID: 33958178, BOARD: t186ref, EABI: aarch64, DATE: Tue Aug  1 19:57:35 "
                      "UTC 2023'",
    "release-36.3": "a public copy of /etc/nv_tegra_release, R36 REVISION 3.0 (the one the project's "
                    "earlier board fixtures carried; GCID 36191598)",
    "release-36.4.3": "a public test of nv_tegra_release parsing: '# R36 (release), REVISION: 4.3, "
                      "GCID: 38968081, BOARD: generic, EABI: aarch64' (date from the same release)",
    "release-36.4.4": "lesomnus/tegra-exporter parse_test.go names the release of its AGX Orin capture "
                      "(5.15.148, R36.4.4); the GCID and date of that release are not in it",
    "conf-concord": "LineageOS/android_device_nvidia_concord nvpmodel/nvpmodel_p3767_0003.conf, "
                    "nvpmodel_p3767_0003_super.conf, nvpmodel_p3767_0000.conf, nvpmodel_p3701_0000.conf "
                    "(NVIDIA's tables)",
    "conf-profiles": "the mode tables transcribed, with their sources, in "
                     "pytest_jetson/devices/profiles/<id>.json",
    "clocks-orin": "public jetson_clocks --show captures (GitHub code search): Orin Nano 15W CPU "
                   "729600-1510400 kHz, GPU 306000000-624750000 Hz, EMC 204000000-2133000000 Hz; "
                   "AGX Orin MAXN CPU max 2201600, GPU 306000000-1300500000, EMC max 3199000000",
    "thermal-nano": "jetson_stats issue #417 and a public listing of thermal_zone*/type on a Nano "
                    "(AO-therm, CPU-therm, GPU-therm, PLL-therm, PMIC-Die, thermal-fan-est)",
    "thermal-jp6": "NVIDIA Jetson Linux r36 developer guide, BSP-specific thermal zones "
                   "(cpu-thermal, gpu-thermal, cv0/1/2-thermal, soc0/1/2-thermal, tj-thermal), and the "
                   "lower-case sensor names tegrastats prints on JetPack 6",
    "meminfo": "MemTotal from the tegrastats RAM total (tegrastats prints MemTotal/1024); MemFree and "
               "MemAvailable from its RAM used (used = MemTotal - MemFree - Buffers - Cached)",
}


def ts_line(name, index):
    lines = [x for x in (TEGRASTATS / name).read_text().splitlines() if x.strip() and not x.startswith("#")]
    return lines[index]


# -- the boards ----------------------------------------------------------------------------------
# gpu: where the GPU's device and devfreq live. "device" is the kernel device directory (its
# of_node/name is the name jtop keys the GPU by), "devfreq" the devfreq directory under it,
# "links" extra paths that point at the device (gpu.0), "load" whether the device has a load file.
# rails: INA chips, each {"bus": "1-0040", "driver": "ina3221"|"ina3221x"|"ina238", "layout":
# "hwmon"|"iio", "node": "hwmon3"|"iio:device0", "channels": [(label, mV), ...]}; the power of
# each channel is the tegrastats reading of that label; the voltage is given per channel (mV) and
# the current follows (mA = mW * 1000 / mV, rounded).

BOARDS = {
    "nano-jp46": dict(
        title="Jetson Nano 4GB devkit (p3448-0000 B01), JetPack 4.6 (L4T 32.6.1)",
        profile="nano", jetpack="4.6", l4t="32.6.1", super_firmware=False,
        model="NVIDIA Jetson Nano Developer Kit",
        compatible=["nvidia,p3449-0000-b00+p3448-0000-b00", "nvidia,jetson-nano", "nvidia,tegra210"],
        dtsfilename="/dvs/git/dirty/git-master_linux/kernel/kernel-4.9/arch/arm64/boot/dts/../../../../../../"
                    "hardware/nvidia/platform/t210/porg/kernel-dts/tegra210-p3448-0000-p3449-0000-b00.dts",
        release="# R32 (release), REVISION: 6.1, GCID: 27863751, BOARD: t210ref, EABI: aarch64, "
                "DATE: Mon Jul 26 19:20:30 UTC 2021",
        tegrastats=("jp4_nano.txt", 0),
        conf_path="etc/nvpmodel/nvpmodel_t210_jetson-nano.conf",
        cpu_param="CPU_A57", gpu_param_path="/sys/devices/gpu.0/devfreq/57000000.gpu",
        modes=[(0, "MAXN", 4, -1, 0), (1, "5W", 2, 640000000, 1600000000)],
        default_mode=0, mode=0,
        cpu=dict(count=4, min=102000, max=1479000, governor="schedutil"),
        gpu=dict(device="sys/devices/57000000.gpu", name="gpu", devfreq_name="57000000.gpu",
                 links=["sys/devices/gpu.0"], min=76800000, max=921600000, governor="nvhost_podgov"),
        emc=dict(kind="tegra210", max=1600000000, min=204000000),
        rails=[dict(bus="6-0040", driver="ina3221x", layout="iio", node="iio:device0",
                    channels=[("POM_5V_IN", 5000), ("POM_5V_GPU", 5000), ("POM_5V_CPU", 5000)])],
        thermal=[("AO-therm", "AO"), ("CPU-therm", "CPU"), ("GPU-therm", "GPU"), ("PLL-therm", "PLL"),
                 ("PMIC-Die", "PMIC"), ("thermal-fan-est", "thermal")],
        trips={"CPU-therm": 97000, "GPU-therm": 97000},
        engines={"NVENC": "nvenc", "NVDEC": "nvdec", "APE": "ape"},
        sources=dict(identity="nano-compat; js-table; release-32.6.1; js-417 (model)",
                     nvpmodel="js-emulator (show_verbose_nano: MAXN(0), 5W(1), DEFAULT=MAXN(0)); "
                              "conf-profiles (nano.json)",
                     gpu="js-417; js-360 (IGPU_LOAD /sys/devices/gpu.0/load); js-emulator",
                     rails="nano-iio", thermal="thermal-nano; js-417", emc="js-323 (tegra210 paths); "
                     "js-readers (read_emc tegra_bwmgr branch)", cpu="js-emulator; public jetson_clocks outputs (Nano MaxFreq=1479000)",
                     memory="meminfo"),
        unknown=["INA3221 bus voltages (in_voltageN_input): not in any source read; the nominal 5000 mV "
                 "is written and the current follows from the tegrastats power",
                 "thermal trip points: 97 C written for CPU/GPU (L4T 32 soctherm 'throttrip' of a Nano "
                 "logs 100.5/101 C); trip files other than these two are omitted",
                 "GPU minimum clock 76.8 MHz: tegrastats' idle GR3D clock on the line, not a max/min file"],
    ),
    "tx2-jp46": dict(
        title="Jetson TX2 devkit (p3310-1000), JetPack 4.6 (L4T 32.6.1)",
        profile="tx2", jetpack="4.6", l4t="32.6.1", super_firmware=False,
        model="quill",
        compatible=["nvidia,p2597-0000+p3310-1000", "nvidia,tegra186"],
        dtsfilename="/dvs/git/dirty/git-master_linux/kernel/kernel-4.9/arch/arm64/boot/dts/../../../../../../"
                    "hardware/nvidia/platform/t18x/quill/kernel-dts/tegra186-quill-p3310-1000-c03-00-base.dts",
        release="# R32 (release), REVISION: 6.1, GCID: 27863751, BOARD: t186ref, EABI: aarch64, "
                "DATE: Mon Jul 26 19:36:31 UTC 2021",
        tegrastats=("jp4_tx2.txt", 1),
        conf_path="etc/nvpmodel/nvpmodel_t186.conf",
        cpu_param="CPU_A57", gpu_param_path="/sys/devices/17000000.gp10b/devfreq/17000000.gp10b",
        modes=[(0, "MAXN", 6, -1, 0), (1, "MAXQ", 4, 850000000, 1331200000),
               (2, "MAXP_CORE_ALL", 6, 1122000000, 1600000000), (3, "MAXP_CORE_ARM", 4, 1122000000, 1600000000),
               (4, "MAXP_CORE_DENVER", 2, 1122000000, 1600000000)],
        default_mode=3, mode=0,
        cpu=dict(count=6, min=345600, max=2035200, governor="schedutil"),
        gpu=dict(device="sys/devices/17000000.gp10b", name="gp10b", devfreq_name="17000000.gp10b",
                 links=["sys/devices/gpu.0"], min=114750000, max=1300500000, governor="nvhost_podgov"),
        emc=dict(kind="bpmp", max=1866000000, min=40800000),
        rails=[dict(bus="0-0040", driver="ina3221x", layout="iio", node="iio:device0",
                    channels=[("VDD_SYS_GPU", 19000), ("VDD_SYS_SOC", 19000), ("VDD_4V0_WIFI", 4000)]),
               dict(bus="0-0041", driver="ina3221x", layout="iio", node="iio:device1",
                    channels=[("VDD_IN", 19000), ("VDD_SYS_CPU", 19000), ("VDD_SYS_DDR", 19000)])],
        thermal=[("BCPU-therm", "BCPU"), ("MCPU-therm", "MCPU"), ("GPU-therm", "GPU"), ("PLL-therm", "PLL"),
                 ("Tboard_tegra", "Tboard"), ("Tdiode_tegra", "Tdiode"), ("PMIC-Die", "PMIC"),
                 ("thermal-fan-est", "thermal")],
        trips={"GPU-therm": 101000},
        engines={},
        sources=dict(identity="tx2-dump; js-table; release-32.6.1; js-emulator ('Machine:quill')",
                     nvpmodel="conf-profiles (tx2.json: MAXN, MAXQ, MAXP_CORE_ALL, MAXP_CORE_ARM, "
                              "MAXP_CORE_DENVER, DEFAULT=3)",
                     gpu="js-413; js-emulator (show_tx2: GPU MinFreq=114750000)", rails="tx2-iio",
                     thermal="tegrastats sensor names on the line", emc="js-323 (tegra186: bpmp paths); the first TX2 line "
                     "(EMC_FREQ 2%@1866)",
                     cpu="js-emulator (show_tx2: MinFreq=345600 MaxFreq=2035200)", memory="meminfo"),
        unknown=["the line has all six cores online: consistent with MAXN (0) and MAXP_CORE_ALL (2); "
                 "the status file says 0",
                 "the line was captured without root (EMC_FREQ 0%, GR3D_FREQ 0% without clocks): the GPU "
                 "clock is written at its minimum, the EMC clock at its maximum",
                 "INA3221 bus voltages: the TX2 devkit input is 19 V (devkit supply); the WIFI rail's "
                 "4 V is its name; currents follow from the power",
                 "thermal zone order and trip points: only GPU-therm's 101 C trip is written"],
    ),
    "agx-xavier-jp51": dict(
        title="Jetson AGX Xavier 32GB devkit (p2888-0004 module, devkit DTB p2888-0001), JetPack 5.1 (L4T 35.2.1)",
        profile="agx-xavier", jetpack="5.1", l4t="35.2.1", super_firmware=False,
        model="Jetson-AGX",
        compatible=["nvidia,p2822-0000+p2888-0001", "nvidia,galen", "nvidia,tegra194"],
        dtsfilename="/dvs/git/dirty/git-master_linux/kernel/kernel-5.10/arch/arm64/boot/dts/../../../../../../"
                    "hardware/nvidia/platform/t19x/galen/kernel-dts/tegra194-p2888-0001-p2822-0000.dts",
        release="# R35 (release), REVISION: 2.1, GCID: 32413640, BOARD: t186ref, EABI: aarch64, "
                "DATE: Tue Jan 24 23:38:33 UTC 2023",
        tegrastats=("jp4_agx_xavier.txt", 0),
        conf_path="etc/nvpmodel/nvpmodel_t194.conf",
        cpu_param="CPU_DENVER", gpu_param_path="/sys/devices/17000000.gv11b/devfreq/17000000.gv11b",
        modes=[(0, "MAXN", 8, -1, 0), (1, "MODE_10W", 2, 520200000, 1065600000),
               (2, "MODE_15W", 4, 670000000, 1331200000), (3, "MODE_30W_ALL", 8, 905250000, 1600000000),
               (4, "MODE_30W_6CORE", 6, 905250000, 1600000000), (5, "MODE_30W_4CORE", 4, 905250000, 1600000000),
               (6, "MODE_30W_2CORE", 2, 905250000, 1600000000), (7, "MODE_15W_DESKTOP", 4, 670000000, 1331200000)],
        default_mode=2, mode=1,
        cpu=dict(count=8, min=115200, max=2265600, governor="schedutil"),
        gpu=dict(device="sys/devices/17000000.gv11b", name="gv11b", devfreq_name="17000000.gv11b",
                 links=["sys/devices/gpu.0"], min=114750000, max=520200000, governor="nvhost_podgov"),
        emc=dict(kind="bpmp", max=1065600000, min=204000000),
        rails=[dict(bus="1-0040", driver="ina3221", layout="hwmon", node="hwmon2",
                    channels=[("GPU", 19000), ("CPU", 19000), ("SOC", 19000)]),
               dict(bus="1-0041", driver="ina3221", layout="hwmon", node="hwmon3",
                    channels=[("CV", 19000), ("VDDRQ", 19000), ("SYS5V", 5000)])],
        thermal=[("CPU-therm", "CPU"), ("GPU-therm", "GPU"), ("AUX-therm", None), ("AO-therm", "AO"),
                 ("Tboard_tegra", None), ("Tdiode_tegra", None), ("thermal-fan-est", "thermal")],
        trips={"CPU-therm": 99500, "GPU-therm": 99500},
        engines={},
        sources=dict(identity="adafruit (compatible of the devkit DTB, model 'Jetson-AGX'); js-table; "
                              "dtsfilename per js-table's reader (tegra194-p2888-0001-p2822-0000)",
                     nvpmodel="conf-profiles (agx-xavier.json: MAXN ... MODE_15W_DESKTOP, DEFAULT=2)",
                     gpu="js-360 (AGX Xavier: IGPU_LOAD /sys/devices/gpu.0/load, GR3D_FREQ bpmp gpcclk)",
                     rails="xavier-iio (labels GPU CPU SOC / CV VDDRQ SYS5V as tegrastats prints them)",
                     thermal="js-291 journal (Found thermal 'AUX' ... 'CPU' ...); tegrastats names",
                     emc="js-360 (EMC_FREQ bpmp emc/rate, EMC_LOAD actmon_avg_activity/mc_all)",
                     cpu="the line (two cores at 1190 MHz)", memory="meminfo"),
        unknown=["nv_tegra_release of L4T 35.2.1: GCID 32413640 and the date are those NVIDIA "
                 "published for R35.2.1 (not read from this board)",
                 "the tegrastats line is a JetPack 4 capture (rails printed without units): its readings "
                 "stand in for the JetPack 5.1 board",
                 "the line lists two cores: MODE_10W keeps two online, so the status says 1 and cores "
                 "2-7 are written offline",
                 "thermal readings for AUX, Tboard, Tdiode: not on the line, written as -256 C "
                 "(the sensor-absent value); INA3221 bus voltages: devkit 19 V input, SYS5V 5 V",
                 "hwmon indices hwmon2/hwmon3 stand in for whatever the kernel numbered them"],
    ),
    "xavier-nx-jp51": dict(
        title="Jetson Xavier NX devkit (p3668-0000), JetPack 5.1.2 (L4T 35.4.1)",
        profile="xavier-nx", jetpack="5.1.2", l4t="35.4.1", super_firmware=False,
        model="NVIDIA Jetson Xavier NX Developer Kit",
        compatible=["nvidia,p3449-0000+p3668-0000", "nvidia,p3509-0000+p3668-0000", "nvidia,tegra194"],
        dtsfilename="/dvs/git/dirty/git-master_linux/kernel/kernel-5.10/arch/arm64/boot/dts/../../../../../../"
                    "hardware/nvidia/platform/t19x/jakku/kernel-dts/tegra194-p3668-0000-p3509-0000.dts",
        release="# R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref, EABI: aarch64, "
                "DATE: Tue Aug  1 19:57:35 UTC 2023",
        tegrastats=("jp5_xavier_nx.txt", 0),
        conf_path="etc/nvpmodel/nvpmodel_t194_p3668.conf",
        cpu_param="CPU_DENVER_0", gpu_param_path="/sys/devices/17000000.gv11b/devfreq/17000000.gv11b",
        modes=[(0, "MODE_15W_2CORE", 2, 1109250000, 1600000000), (1, "MODE_15W_4CORE", 4, 1109250000, 1600000000),
               (2, "MODE_15W_6CORE", 6, 1109250000, 1600000000), (3, "MODE_10W_2CORE", 2, 803250000, 1600000000),
               (4, "MODE_10W_4CORE", 4, 803250000, 1600000000), (5, "MODE_10W_DESKTOP", 4, 510000000, 1600000000),
               (6, "MODE_20W_2CORE", 2, 1109250000, 1866000000), (7, "MODE_20W_4CORE", 4, 1109250000, 1866000000),
               (8, "MODE_20W_6CORE", 6, 1109250000, 1866000000)],
        default_mode=5, mode=8,
        cpu=dict(count=6, min=115200, max=1907200, governor="schedutil"),
        gpu=dict(device="sys/devices/17000000.gv11b", name="gv11b", devfreq_name="17000000.gv11b",
                 links=["sys/devices/gpu.0", "sys/devices/platform/gpu.0"], min=114750000, max=1109250000,
                 governor="nvhost_podgov"),
        emc=dict(kind="bpmp", max=1866000000, min=204000000),
        rails=[dict(bus="7-0040", driver="ina3221", layout="hwmon", node="hwmon4",
                    channels=[("VDD_IN", 5000), ("VDD_CPU_GPU_CV", 5000), ("VDD_SOC", 5000)])],
        thermal=[("CPU-therm", "CPU"), ("GPU-therm", "GPU"), ("AUX-therm", "AUX"), ("AO-therm", "AO"),
                 ("PMIC-Die", "PMIC"), ("thermal-fan-est", "thermal")],
        trips={"CPU-therm": 99500, "GPU-therm": 99500},
        engines={"VIC": "vic", "APE": "ape"},
        sources=dict(identity="js-525 (model, compatible, dtsfilename); js-table; release-35.4.1",
                     nvpmodel="conf-profiles (xavier-nx.json: the stock JetPack 5 nvpmodel_t194_p3668.conf, "
                              "DEFAULT=5)",
                     gpu="js-360 (Xavier NX: IGPU_LOAD /sys/devices/platform/gpu.0/load and "
                         "/sys/devices/gpu.0/load)",
                     rails="oe4t-92 (7-0040, hwmon4, labels VDD_IN, VDD_CPU_GPU_CV, VDD_SOC; in7 sum of shunt "
                           "voltages)",
                     thermal="tegrastats names on the line", emc="js-360", cpu="the line", memory="meminfo"),
        unknown=["the line has six cores online at 1190-1397 MHz: a 6-core mode; the status says 8 "
                 "(MODE_20W_6CORE)",
                 "INA3221 bus voltage 5 V (the devkit's 19 V supply feeds a 5 V module input; the exact "
                 "mV is not in the sources)", "trip points 99.5 C written for CPU/GPU only"],
    ),
    "orin-nano-8gb-jp51": dict(
        title="Jetson Orin Nano 8GB devkit (p3767-0005), JetPack 5.1.1 (L4T 35.3.1)",
        profile="orin-nano-8gb", jetpack="5.1.1", l4t="35.3.1", super_firmware=False,
        model="NVIDIA Orin Nano Developer Kit",
        compatible=["nvidia,p3768-0000+p3767-0003", "nvidia,p3768-0000+p3767-0005", "nvidia,p3767-0003",
                    "nvidia,p3767-0005", "nvidia,tegra234", "nvidia,tegra23x"],
        dtsfilename="/dvs/git/dirty/git-master_linux/kernel/kernel-5.10/arch/arm64/boot/dts/../../../../../../"
                    "hardware/nvidia/platform/t23x/p3768/kernel-dts/tegra234-p3767-0003-p3768-0000-a0.dts",
        release="# R35 (release), REVISION: 3.1, GCID: 32827747, BOARD: t186ref, EABI: aarch64, "
                "DATE: Sun Mar 19 15:19:21 UTC 2023",
        tegrastats=("jp6_orin_nano.txt", 0),
        conf_path="etc/nvpmodel/nvpmodel_p3767_0003.conf",
        cpu_param="CPU_A78_0", gpu_param_path="/sys/devices/17000000.ga10b/devfreq/17000000.ga10b",
        modes=[(0, "15W", 6, -1, 0), (1, "7W", 4, 408000000, 2133000000)],
        default_mode=0, mode=0,
        cpu=dict(count=6, min=729600, max=1510400, governor="schedutil"),
        gpu=dict(device="sys/devices/17000000.ga10b", name="ga10b", devfreq_name="17000000.ga10b",
                 links=["sys/devices/platform/gpu.0", "sys/devices/gpu.0"], min=306000000, max=624750000,
                 governor="nvhost_podgov"),
        emc=dict(kind="bpmp", max=2133000000, min=204000000),
        rails=[dict(bus="1-0040", driver="ina3221", layout="hwmon", node="hwmon3",
                    channels=[("VDD_IN", 5000), ("VDD_CPU_GPU_CV", 5000), ("VDD_SOC", 5000)])],
        thermal=[("CPU-therm", "cpu"), ("GPU-therm", "gpu"), ("CV0-therm", None), ("CV1-therm", None),
                 ("CV2-therm", None), ("SOC0-therm", "soc0"), ("SOC1-therm", "soc1"), ("SOC2-therm", "soc2"),
                 ("Tboard_tegra", None), ("Tdiode_tegra", None), ("tj-therm", "tj")],
        trips={"CPU-therm": 99000, "GPU-therm": 99000, "tj-therm": 99000},
        engines={"APE": "ape"},
        sources=dict(identity="js-400 (nv_tegra_release, model without 'Jetson', compatible, "
                              "dtsfilename); js-table",
                     nvpmodel="conf-concord (nvpmodel_p3767_0003.conf: 15W(0) uncapped, 7W(1) 4 cores, "
                              "GPU 408 MHz, EMC 2133 MHz, DEFAULT=0)",
                     gpu="conf-concord (GPU devfreq /sys/devices/17000000.ga10b/devfreq/17000000.ga10b); "
                         "js-360 (IGPU_LOAD /sys/devices/platform/gpu.0/load); js-readers "
                         "(of_node name ga10b); clocks-orin",
                     rails="hwmon-orin (1-0040, labels VDD_IN, VDD_CPU_GPU_CV, VDD_SOC)",
                     thermal="js-608 (JetPack 5 Orin zone names CPU, GPU, CV0-2, SOC0-2, Tboard, Tdiode, tj)",
                     emc="js-360; clocks-orin", cpu="clocks-orin", memory="meminfo"),
        unknown=["readings from an Orin Nano JetPack 6.2 capture (the closest public line); the JetPack 5 "
                 "tegrastats names its sensors in capitals (CPU@...), these files hold the numbers",
                 "thermal readings of CV0-2, Tboard, Tdiode: not on the line, written -256 C (absent)",
                 "INA3221 bus voltage: nominal 5000 mV (module input), not read from a board"],
    ),
    "orin-nano-8gb-jp60": dict(
        title="Jetson Orin Nano 8GB devkit (p3767-0005), JetPack 6.0 (L4T 36.3.0)",
        profile="orin-nano-8gb", jetpack="6.0", l4t="36.3.0", super_firmware=False,
        model="NVIDIA Jetson Orin Nano Developer Kit",
        compatible=["nvidia,p3768-0000+p3767-0005", "nvidia,p3767-0005", "nvidia,tegra234"],
        dtsfilename=None,
        release="# R36 (release), REVISION: 3.0, GCID: 36191598, BOARD: generic, EABI: aarch64, "
                "DATE: Mon May  6 17:34:21 UTC 2024",
        tegrastats=("jp6_orin_nano.txt", 1),
        conf_path="etc/nvpmodel/nvpmodel_p3767_0003.conf",
        cpu_param="CPU_A78_0", gpu_param_path="/sys/devices/platform/17000000.gpu/devfreq_dev",
        modes=[(0, "15W", 6, -1, 0), (1, "7W", 4, 408000000, 2133000000)],
        default_mode=0, mode=0,
        cpu=dict(count=6, min=729600, max=1510400, governor="schedutil"),
        gpu=dict(device="sys/devices/platform/bus@0/17000000.gpu", name="gpu", devfreq_name="17000000.gpu",
                 links=["sys/devices/platform/gpu.0"], min=306000000, max=624750000, governor="nvhost_podgov"),
        emc=dict(kind="bpmp", max=2133000000, min=204000000),
        rails=[dict(bus="1-0040", driver="ina3221", layout="hwmon", node="hwmon1",
                    channels=[("VDD_IN", 5000), ("VDD_CPU_GPU_CV", 5000), ("VDD_SOC", 5000)])],
        thermal=[("cpu-thermal", "cpu"), ("gpu-thermal", "gpu"), ("cv0-thermal", None), ("cv1-thermal", None),
                 ("cv2-thermal", None), ("soc0-thermal", "soc0"), ("soc1-thermal", "soc1"),
                 ("soc2-thermal", "soc2"), ("tj-thermal", "tj")],
        trips={"cpu-thermal": 99000, "gpu-thermal": 99000, "tj-thermal": 99000},
        engines={"APE": "ape"},
        sources=dict(identity="nvidia-dtbind; upstream-dts pattern; release-36.3; model string as the "
                              "profile orin-nano-8gb lists it",
                     nvpmodel="conf-concord (nvpmodel_p3767_0003.conf)",
                     gpu="clocks-orin; the JetPack 6 GPU node 17000000.gpu (glances PR #3580, nv-monitor "
                         "PR #17: /sys/devices/platform/bus@0/17000000.gpu/load, "
                         "/sys/devices/platform/gpu.0/load)",
                     rails="hwmon-orin", thermal="thermal-jp6", emc="clocks-orin", cpu="clocks-orin",
                     memory="meminfo"),
        unknown=["readings from a JetPack 6.2 Super capture under load (GPU 99% at 612 MHz): the numbers "
                 "stand in for a 6.0 board (612 MHz is within the 15W range)",
                 "the model string: JetPack 6 devkits report 'NVIDIA Jetson Orin Nano Developer Kit' per the "
                 "profile's sources; no 6.0 error-log was found",
                 "INA3221 bus voltage: nominal 5000 mV"],
    ),
    "orin-nano-8gb-super-jp62": dict(
        title="Jetson Orin Nano 8GB devkit with Super firmware (p3767-0005), JetPack 6.2 (L4T 36.4.3)",
        profile="orin-nano-8gb-super", jetpack="6.2", l4t="36.4.3", super_firmware=True,
        model="NVIDIA Jetson Orin Nano Engineering Reference Developer Kit Super",
        compatible=["nvidia,p3768-0000+p3767-0005-super", "nvidia,p3767-0005", "nvidia,tegra234"],
        dtsfilename=None,
        release="# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, "
                "DATE: Wed Jan  8 01:49:37 UTC 2025",
        tegrastats=("jp6_orin_nano.txt", 0),
        conf_path="etc/nvpmodel/nvpmodel_p3767_0003_super.conf",
        cpu_param="CPU_A78_0", gpu_param_path="/sys/devices/platform/17000000.gpu/devfreq_dev",
        modes=[(0, "15W", 6, 612000000, 2133000000), (1, "25W", 6, 918000000, 3199000000),
               (2, "MAXN_SUPER", 6, -1, -1)],
        default_mode=1, mode=2,
        cpu=dict(count=6, min=729600, max=1728000, governor="schedutil"),
        gpu=dict(device="sys/devices/platform/bus@0/17000000.gpu", name="gpu", devfreq_name="17000000.gpu",
                 links=["sys/devices/platform/gpu.0"], min=306000000, max=1020000000, governor="nvhost_podgov"),
        emc=dict(kind="bpmp", max=3199000000, min=204000000),
        rails=[dict(bus="1-0040", driver="ina3221", layout="hwmon", node="hwmon1",
                    channels=[("VDD_IN", 5000), ("VDD_CPU_GPU_CV", 5000), ("VDD_SOC", 5000)])],
        thermal=[("cpu-thermal", "cpu"), ("gpu-thermal", "gpu"), ("cv0-thermal", None), ("cv1-thermal", None),
                 ("cv2-thermal", None), ("soc0-thermal", "soc0"), ("soc1-thermal", "soc1"),
                 ("soc2-thermal", "soc2"), ("tj-thermal", "tj")],
        trips={"cpu-thermal": 99000, "gpu-thermal": 99000, "tj-thermal": 99000},
        engines={"APE": "ape"},
        sources=dict(identity="oe4t-doc; adafruit; nvidia-dtbind; release-36.4.3; the profile's model string "
                              "(public board logs)",
                     nvpmodel="conf-concord (nvpmodel_p3767_0003_super.conf: 15W(0), 25W(1), MAXN_SUPER(2), "
                              "DEFAULT=1)",
                     gpu="conf-concord; the profile's MAXN_SUPER maxima (jetson_clocks --show on a Super devkit: "
                         "GPU 1020 MHz, CPU 1728 MHz, EMC 3199 MHz)",
                     rails="hwmon-orin", thermal="thermal-jp6; the line (lower-case names)", emc="clocks-orin",
                     cpu="the profile (1728 MHz)", memory="meminfo"),
        unknown=["the 36.4.3 release date (Wed Jan 8 2025) is that release's, not read from this board",
                 "INA3221 bus voltage: nominal 5000 mV",
                 "the status says MAXN_SUPER (2): the capture's mode is not in its source"],
    ),
    "orin-nx-16gb-jp51": dict(
        title="Jetson Orin NX 16GB (p3767-0000) on the p3768 carrier, JetPack 5.1.1 (L4T 35.3.1)",
        profile="orin-nx-16gb", jetpack="5.1.1", l4t="35.3.1", super_firmware=False,
        model="NVIDIA Orin NX Developer Kit",
        compatible=["nvidia,p3768-0000+p3767-0000", "nvidia,p3767-0000", "nvidia,tegra234", "nvidia,tegra23x"],
        dtsfilename="/dvs/git/dirty/git-master_linux/kernel/kernel-5.10/arch/arm64/boot/dts/../../../../../../"
                    "hardware/nvidia/platform/t23x/p3768/kernel-dts/tegra234-p3767-0000-p3768-0000-a0.dts",
        release="# R35 (release), REVISION: 3.1, GCID: 32827747, BOARD: t186ref, EABI: aarch64, "
                "DATE: Sun Mar 19 15:19:21 UTC 2023",
        tegrastats=("jp6_orin_nx.txt", 0),
        conf_path="etc/nvpmodel/nvpmodel_p3767_0000.conf",
        cpu_param="CPU_A78_0", gpu_param_path="/sys/devices/17000000.ga10b/devfreq/17000000.ga10b",
        modes=[(0, "MAXN", 8, -1, 0), (1, "10W", 4, 612000000, 2133000000), (2, "15W", 4, 612000000, 3199000000),
               (3, "25W", 8, 408000000, 3199000000)],
        default_mode=2, mode=0,
        cpu=dict(count=8, min=729600, max=1984000, governor="schedutil"),
        gpu=dict(device="sys/devices/17000000.ga10b", name="ga10b", devfreq_name="17000000.ga10b",
                 links=["sys/devices/platform/gpu.0", "sys/devices/gpu.0"], min=306000000, max=918000000,
                 governor="nvhost_podgov"),
        emc=dict(kind="bpmp", max=3199000000, min=204000000),
        rails=[dict(bus="1-0040", driver="ina3221", layout="hwmon", node="hwmon3",
                    channels=[("VDD_IN", 5000), ("VDD_CPU_GPU_CV", 5000), ("VDD_SOC", 5000)])],
        thermal=[("CPU-therm", "cpu"), ("GPU-therm", "gpu"), ("CV0-therm", "cv0"), ("CV1-therm", "cv1"),
                 ("CV2-therm", "cv2"), ("SOC0-therm", "soc0"), ("SOC1-therm", "soc1"), ("SOC2-therm", "soc2"),
                 ("Tboard_tegra", None), ("Tdiode_tegra", None), ("tj-therm", "tj")],
        trips={"CPU-therm": 99000, "GPU-therm": 99000, "tj-therm": 99000},
        engines={},
        sources=dict(identity="the issue's own reading of JetPack 5 Orin NX models ('NVIDIA Orin NX Developer "
                              "Kit'); upstream-dts (compatible); js-400 for the JetPack 5 pattern (tegra23x "
                              "last, dtsfilename); release-35.x; js-table",
                     nvpmodel="conf-concord (nvpmodel_p3767_0000.conf) as transcribed in orin-nx-16gb.json",
                     gpu="conf-concord (JetPack 5 GPU devfreq /sys/devices/17000000.ga10b of the p3767 tables); js-360; js-readers", rails="hwmon-orin",
                     thermal="js-608", emc="clocks-orin", cpu="the profile (max 1984 MHz from its source)",
                     memory="meminfo"),
        unknown=["no public JetPack 5 error-log of an Orin NX was found: the model follows the issue's "
                 "report, compatible and dtsfilename follow the Orin Nano JetPack 5 dump's pattern "
                 "(unverified)",
                 "readings from an Orin NX 16GB JetPack 6.2 capture; its GR3D clock and EMC are not printed: "
                 "the GPU clock is written at its minimum, EMC at 2133 MHz with 0 % activity",
                 "INA3221 bus voltage: nominal 5000 mV"],
    ),
    "orin-nx-16gb-jp62": dict(
        title="Jetson Orin NX 16GB (p3767-0000) on the p3768 carrier, JetPack 6.2 (L4T 36.4.3), "
              "standard (not Super) power table",
        profile="orin-nx-16gb", jetpack="6.2", l4t="36.4.3", super_firmware=False,
        model="NVIDIA Jetson Orin NX Engineering Reference Developer Kit",
        compatible=["nvidia,p3768-0000+p3767-0000", "nvidia,p3767-0000", "nvidia,tegra234"],
        dtsfilename=None,
        release="# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, "
                "DATE: Wed Jan  8 01:49:37 UTC 2025",
        tegrastats=("jp6_orin_nx.txt", 0),
        conf_path="etc/nvpmodel/nvpmodel_p3767_0000.conf",
        cpu_param="CPU_A78_0", gpu_param_path="/sys/devices/platform/17000000.gpu/devfreq_dev",
        modes=[(0, "MAXN", 8, -1, 0), (1, "10W", 4, 612000000, 2133000000), (2, "15W", 4, 612000000, 3199000000),
               (3, "25W", 8, 408000000, 3199000000)],
        default_mode=2, mode=2,
        cpu=dict(count=8, min=729600, max=1984000, governor="schedutil"),
        gpu=dict(device="sys/devices/platform/bus@0/17000000.gpu", name="gpu", devfreq_name="17000000.gpu",
                 links=["sys/devices/platform/gpu.0"], min=306000000, max=918000000, governor="nvhost_podgov"),
        emc=dict(kind="bpmp", max=3199000000, min=204000000),
        rails=[dict(bus="1-0040", driver="ina3221", layout="hwmon", node="hwmon1",
                    channels=[("VDD_IN", 5000), ("VDD_CPU_GPU_CV", 5000), ("VDD_SOC", 5000)])],
        thermal=[("cpu-thermal", "cpu"), ("gpu-thermal", "gpu"), ("cv0-thermal", "cv0"), ("cv1-thermal", "cv1"),
                 ("cv2-thermal", "cv2"), ("soc0-thermal", "soc0"), ("soc1-thermal", "soc1"),
                 ("soc2-thermal", "soc2"), ("tj-thermal", "tj")],
        trips={"cpu-thermal": 99000, "gpu-thermal": 99000, "tj-thermal": 99000},
        engines={},
        sources=dict(identity="upstream-dts; nvidia-dtbind; release-36.4.3; model as orin-nx-16gb.json lists it",
                     nvpmodel="conf-concord (nvpmodel_p3767_0000.conf)", gpu="clocks-orin (GPU minimum 306 MHz); the JetPack 6 GPU node 17000000.gpu as in orin-nano-8gb-jp60; the profile (918 MHz maximum)",
                     rails="hwmon-orin", thermal="thermal-jp6; the line", emc="clocks-orin", cpu="the profile",
                     memory="meminfo"),
        unknown=["the line prints neither the GR3D clock nor EMC: the GPU clock is written at its minimum, "
                 "EMC at 2133 MHz with 0 % activity", "the status says 15W (2), the default; the capture's mode "
                 "is not in its source", "INA3221 bus voltage: nominal 5000 mV"],
    ),
    "agx-orin-64gb-jp64": dict(
        title="Jetson AGX Orin 64GB devkit (p3701-0005), JetPack 6.2.1 (L4T 36.4.4)",
        profile="agx-orin-64gb", jetpack="6.2.1", l4t="36.4.4", super_firmware=False,
        model="NVIDIA Jetson AGX Orin Developer Kit",
        compatible=["nvidia,p3737-0000+p3701-0005", "nvidia,p3701-0005", "nvidia,tegra234", "nvidia,tegra23x"],
        dtsfilename=None,
        release="# R36 (release), REVISION: 4.4, GCID: 41062509, BOARD: generic, EABI: aarch64, "
                "DATE: Mon Jun 16 16:07:13 UTC 2025",
        tegrastats=("jp6_agx_orin.txt", 2),
        conf_path="etc/nvpmodel/nvpmodel_p3701_0005.conf",
        cpu_param="CPU_A78_0", gpu_param_path="/sys/devices/platform/17000000.gpu/devfreq_dev",
        modes=[(0, "MAXN", 12, -1, 0), (1, "MODE_15W", 4, 408000000, 2133000000),
               (2, "MODE_30W", 8, 612000000, 3199000000), (3, "MODE_50W", 12, 816000000, 3199000000)],
        default_mode=2, mode=0,
        cpu=dict(count=12, min=729600, max=2201600, governor="schedutil"),
        gpu=dict(device="sys/devices/platform/bus@0/17000000.gpu", name="gpu", devfreq_name="17000000.gpu",
                 links=["sys/devices/platform/gpu.0"], min=306000000, max=1300500000, governor="nvhost_podgov"),
        emc=dict(kind="bpmp", max=3199000000, min=204000000),
        rails=[dict(bus="1-0040", driver="ina3221", layout="hwmon", node="hwmon1",
                    channels=[("VDD_GPU_SOC", 5000), ("VDD_CPU_CV", 5000), ("VIN_SYS_5V0", 5000)]),
               dict(bus="1-0041", driver="ina3221", layout="hwmon", node="hwmon2",
                    channels=[("NC", 5000), ("VDDQ_VDD2_1V8AO", 1800), ("NC", 5000)])],
        thermal=[("cpu-thermal", "CPU"), ("gpu-thermal", "GPU"), ("cv0-thermal", "CV0"), ("cv1-thermal", "CV1"),
                 ("cv2-thermal", "CV2"), ("soc0-thermal", "SOC0"), ("soc1-thermal", "SOC1"),
                 ("soc2-thermal", "SOC2"), ("tj-thermal", "tj"), ("Tboard_tegra", "Tboard"),
                 ("Tdiode_tegra", "Tdiode")],
        trips={"cpu-thermal": 99000, "gpu-thermal": 99000, "tj-thermal": 99000},
        engines={"APE": "ape", "VIC": "vic"},
        sources=dict(identity="gpio-125 (compatible); js-table; model as agx-orin-64gb.json lists it",
                     nvpmodel="conf-profiles (agx-orin-64gb.json: MAXN(0), MODE_15W(1), MODE_30W(2), "
                              "MODE_50W(3), DEFAULT=2)",
                     gpu="clocks-orin (AGX Orin MAXN: GPU 306000000-1300500000)",
                     rails="the line (VDD_GPU_SOC, VDD_CPU_CV, VIN_SYS_5V0, NC, VDDQ_VDD2_1V8AO, NC: two "
                           "INA3221, the second with two unconnected channels)",
                     thermal="thermal-jp6; the line", emc="clocks-orin", cpu="clocks-orin", memory="meminfo"),
        unknown=["GCID and date of the 36.4.4 release are NVIDIA's for that release, not read from this board "
                 "(release-36.4.4)", "the capture (idle, all CPUs at 729 MHz) prints GR3D 0%@[0,0]: the GPU "
                 "clock is written at its minimum", "hwmon indices and the 1-0041 voltages are stand-ins"],
    ),
    "agx-thor-jp70": dict(
        title="Jetson AGX Thor devkit (p3834-0008 on p4071-0000), JetPack 7.0 (L4T 38.2.0)",
        profile="agx-thor", jetpack="7.0", l4t="38.2.0", super_firmware=False,
        model="NVIDIA Jetson AGX Thor Developer Kit",
        compatible=["nvidia,p4071-0000+p3834-0008", "nvidia,p3834-0008", "nvidia,tegra264"],
        dtsfilename=None,
        release="# R38 (release), REVISION: 2.0, GCID: 41844464, BOARD: generic, EABI: aarch64, "
                "DATE: Fri Aug 22 00:55:42 UTC 2025",
        tegrastats=("jp7_thor.txt", 0),
        conf_path="etc/nvpmodel/nvpmodel_p3834_0008.conf",
        cpu_param="CPU_NEOVERSE_0", gpu_param_path="/sys/class/devfreq/gpu-gpc-0",
        modes=[(0, "MAXN", 14, -1, 0), (1, "120W", 14, 1386000000, 0), (2, "90W", 14, -1, 0),
               (3, "70W", 14, -1, 0)],
        default_mode=1, mode=1,
        cpu=dict(count=14, min=972000, max=2601000, governor="schedutil"),
        gpu=dict(device=None, name=None, devfreq_name="gpu-gpc-0", links=[], min=0, max=1575000000,
                 governor="nvhost_podgov", extra_devfreq=["gpu-nvd-0"]),
        emc=dict(kind="devfreq", max=4266000000, min=665600000),
        rails=[dict(bus="2-0040", driver="ina3221", layout="hwmon", node="hwmon1",
                    channels=[("VDD_GPU", 5000), ("VDD_CPU_SOC_MSS", 5000), ("VIN_SYS_5V0", 5000)]),
               dict(bus="2-0044", driver="ina238", layout="hwmon", node="hwmon2", vin_mw=28906, vin_mv=19000)],
        thermal=[("cpu-thermal", "cpu"), ("gpu-thermal", None), ("soc012-thermal", "soc012"),
                 ("soc345-thermal", "soc345"), ("tj-thermal", "tj")],
        trips={"cpu-thermal": 99000, "tj-thermal": 99000},
        engines={"APE": "ape"},
        sources=dict(identity="js-711 (nv_tegra_release, model, compatible); gpio-135; js-table "
                              "(p3834-0008 AGX Thor devkit)",
                     nvpmodel="conf-profiles (agx-thor.json: MAXN(0), 120W(1), 90W(2), 70W(3), DEFAULT=1)",
                     gpu="js-885 (gpu-gpc-0, gpu-nvd-0, no load file); the profile (MAXN GPU 1575 MHz from "
                         "jetson_clocks --show)",
                     rails="the lines (VDD_GPU, VDD_CPU_SOC_MSS, VIN_SYS_5V0 on the module INA3221); js-900 "
                           "(INA238 VIN on the carrier: in1_input mV, curr1_input mA, power1_input uW)",
                     thermal="the line (cpu, tj, soc012, soc345)", emc="js-825; the line (EMC_FREQ 0%@665)",
                     cpu="the line (14 cores at 972 MHz); the profile (max 2601 MHz)", memory="meminfo"),
        unknown=["readings from an L4T 38.4 capture (lesomnus/tegra-exporter) stand in for the 38.2 board",
                 "the INA238 VIN reading (28906 mW) is from another capture (jp7_r39.txt, its second line, L4T 39): the "
                 "38.4 tegrastats does not print VIN; 19 V input is the devkit supply, current follows",
                 "I2C bus/address of both monitors (2-0040, 2-0044) and hwmon indices are stand-ins",
                 "the Thor GPU devfreq node has no 'device/of_node' link or 'load' file per js-885; its "
                 "minimum clock and the gpu-thermal reading are not in the sources (0 Hz, -256 C written)",
                 "the nvpmodel excerpt has only the mode headers and CPU count of the profile: clocks of 90W "
                 "and 70W are unknown (written -1)"],
    ),
}


# -- writing --------------------------------------------------------------------------------------
def _w(root, rel, text, mode=None):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text if isinstance(text, bytes) else (str(text) + ("" if str(text).endswith("\n") else "\n")).encode()
    path.write_bytes(data)
    if mode is not None:
        os.chmod(path, mode)


def _link(root, rel, target_rel):
    """A relative symlink at ``rel`` pointing at ``target_rel`` (both relative to the tree root),
    as sysfs lays its class directories out."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    target = os.path.relpath(root / target_rel, path.parent)
    if path.is_symlink() or path.exists():
        path.unlink()
    os.symlink(target, path)


def write_nvpmodel(root, b, sample):
    lines = ["# Excerpt written by tests/data/boards/build.py: the power-mode headers, online CPUs and",
             "# GPU/EMC caps of this board's nvpmodel table (source in README.md). Other parameters omitted.",
             "", "< PARAM TYPE=FILE NAME=CPU_ONLINE >"]
    count = b["cpu"]["count"]
    lines += [f"CORE_{i} /sys/devices/system/cpu/cpu{i}/online" for i in range(count)]
    lines += ["", f"< PARAM TYPE=CLOCK NAME={b['cpu_param']} >",
              "MAX_FREQ /sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq",
              "", "< PARAM TYPE=CLOCK NAME=GPU >", f"MAX_FREQ {b['gpu_param_path']}/max_freq",
              "", "< PARAM TYPE=CLOCK NAME=EMC >", "MAX_FREQ /sys/kernel/nvpmodel_emc_cap/emc_iso_cap", ""]
    for mode_id, name, online, gpu_max, emc_max in b["modes"]:
        lines.append(f"< POWER_MODEL ID={mode_id} NAME={name} >")
        lines += [f"CPU_ONLINE CORE_{i} {1 if i < online else 0}" for i in range(count)]
        lines += [f"GPU MAX_FREQ {gpu_max}", f"EMC MAX_FREQ {emc_max}", ""]
    lines += ["# mandatory section to configure the default power mode", f"< PM_CONFIG DEFAULT={b['default_mode']} >"]
    _w(root, b["conf_path"], "\n".join(lines))
    _link(root, "etc/nvpmodel.conf", b["conf_path"])
    _w(root, "var/lib/nvpmodel/status", f"pmode:{b['mode']:04d} fmode:quiet")


def mode_online(b):
    return next(m[2] for m in b["modes"] if m[0] == b["mode"])


def write_identity(root, b):
    base = "sys/firmware/devicetree/base"
    _w(root, f"{base}/model", b["model"].encode() + b"\x00")
    _w(root, f"{base}/compatible", b"".join(c.encode() + b"\x00" for c in b["compatible"]))
    if b["dtsfilename"]:
        _w(root, f"{base}/nvidia,dtsfilename", b["dtsfilename"].encode() + b"\x00")
    _link(root, "proc/device-tree", base)
    _w(root, "etc/nv_tegra_release", b["release"] + "\n# KERNEL_VARIANT: oot\n" if b["l4t"].startswith("36")
       else b["release"])


def write_memory(root, s):
    total_kb = int(round(s.ram_total_mb * 1024))
    used_kb = int(round(s.ram_used_mb * 1024))
    free_kb = total_kb - used_kb
    swap_total = int(round((s.swap_total_mb or 0) * 1024))
    swap_free = swap_total - int(round((s.swap_used_mb or 0) * 1024))
    rows = [("MemTotal", total_kb), ("MemFree", free_kb), ("MemAvailable", free_kb), ("Buffers", 0),
            ("Cached", 0), ("SwapCached", int(round((s.swap_cached_mb or 0) * 1024))), ("SReclaimable", 0),
            ("SwapTotal", swap_total), ("SwapFree", swap_free)]
    _w(root, "proc/meminfo", "\n".join(f"{k + ':':<16}{v:>8} kB" for k, v in rows))
    # The kernel's free-page table jtop reads (/proc/buddyinfo); counts are stand-ins.
    _w(root, "proc/buddyinfo", "Node 0, zone      DMA     10      8      5      3      2      1      1      1"
                               "      1      1     64")


def write_cpus(root, b, s):
    cpu = b["cpu"]
    online = mode_online(b)
    stat = ["cpu  1000 0 1000 100000 0 0 0 0 0 0"]
    cpuinfo = []
    for i in range(cpu["count"]):
        d = f"sys/devices/system/cpu/cpu{i}"
        on = i < online
        if i:
            _w(root, f"{d}/online", "1" if on else "0")
        core = s.cpus[i] if i < len(s.cpus) else None
        if on:
            cur = int(round(core.freq_mhz * 1000)) if core is not None and core.freq_mhz else cpu["min"]
            # tegrastats prints the clock in whole MHz: the kHz file is its nearest table entry at most
            # 1 MHz away, which is what these tests compare with.
            for k, v in (("scaling_governor", cpu["governor"]), ("scaling_min_freq", cpu["min"]),
                         ("scaling_max_freq", cpu["max"]), ("scaling_cur_freq", cur),
                         ("cpuinfo_min_freq", cpu["min"]), ("cpuinfo_max_freq", cpu["max"]),
                         ("cpuinfo_cur_freq", cur)):
                _w(root, f"{d}/cpufreq/{k}", v)
            stat.append(f"cpu{i} 250 0 250 25000 0 0 0 0 0 0")
        cpuinfo += [f"processor\t: {i}", "BogoMIPS\t: 62.50", "CPU implementer\t: 0x41", ""]
    _w(root, "sys/devices/system/cpu/online", f"0-{online - 1}" if online > 1 else "0")
    _w(root, "proc/stat", "\n".join(stat + ["intr 0", "ctxt 0", "btime 0", "processes 1", "procs_running 1",
                                            "procs_blocked 0"]))
    _w(root, "proc/cpuinfo", "\n".join(cpuinfo))
    loads = [c.load_pct for c in s.cpus if c.load_pct is not None]
    running = sum(loads) / 100.0 if loads else 0.0
    _w(root, "proc/loadavg", f"{running:.2f} {running:.2f} {running:.2f} 1/{200 + online} 4242")


def gpu_cur_hz(g, s):
    """The GPU clock of the line, in Hz. tegrastats truncates to whole MHz (305 for 306 MHz), so a
    printed clock just under the devfreq minimum is that minimum."""
    if not s.gpu_freq_mhz:
        return g["min"]
    return int(min(max(round(s.gpu_freq_mhz * 1e6), g["min"]), g["max"]))


def write_gpu(root, b, s):
    g = b["gpu"]
    cur = gpu_cur_hz(g, s)
    clocks = b.get("clocks_on", False)
    lo = g["max"] if clocks else g["min"]
    if g["device"] is None:  # Thor: bare devfreq nodes under /sys/class/devfreq
        for node in [g["devfreq_name"]] + g.get("extra_devfreq", []):
            d = f"sys/devices/platform/{node}/devfreq/{node}"
            for k, v in (("cur_freq", cur if node == g["devfreq_name"] else 0), ("min_freq", lo),
                         ("max_freq", g["max"]), ("governor", g["governor"]),
                         ("available_governors", "nvhost_podgov performance userspace")):
                _w(root, f"{d}/{k}", v)
            _link(root, f"sys/class/devfreq/{node}", d)
        return
    dev = g["device"]
    devfreq = f"{dev}/devfreq/{g['devfreq_name']}"
    for k, v in (("cur_freq", cur), ("min_freq", lo), ("max_freq", g["max"]), ("governor", g["governor"]),
                 ("available_governors", "wmark_active nvhost_podgov userspace performance simple_ondemand")):
        _w(root, f"{devfreq}/{k}", v)
    _link(root, f"{devfreq}/device", dev)
    _link(root, f"sys/class/devfreq/{g['devfreq_name']}", devfreq)
    _w(root, f"{dev}/of_node/name", g["name"].encode() + b"\x00")
    load = int(round((s.gpu_load_pct or 0) * 10))
    for k, v in (("load", load), ("railgate_enable", 1), ("enable_3d_scaling", 1), ("tpc_pg_mask", 0)):
        _w(root, f"{dev}/{k}", v)
    _w(root, f"{dev}/power/control", "auto")
    for link in g["links"]:
        _link(root, link, dev)


def write_emc(root, b, s):
    e = b["emc"]
    rate = int(round(s.emc_freq_mhz * 1e6)) if s.emc_freq_mhz else e["max"]
    activity = int(round((s.emc_load_pct or 0) * (rate // 1000)))
    actmon = "sys/kernel/actmon_avg_activity/mc_all"
    if e["kind"] == "bpmp":  # tegra186, tegra194, tegra234
        d = "sys/kernel/debug/bpmp/debug/clk/emc"
        for k, v in (("rate", rate), ("max_rate", e["max"]), ("min_rate", e["min"]), ("mrq_rate_locked", 0)):
            _w(root, f"{d}/{k}", v)
    elif e["kind"] == "tegra210":
        for k, v in (("emc_min_rate", e["min"]), ("emc_max_rate", e["max"])):
            _w(root, f"sys/kernel/debug/tegra_bwmgr/{k}", v)
        for k, v in (("clk_rate", rate), ("clk_state", 0)):
            _w(root, f"sys/kernel/debug/clk/override.emc/{k}", v)
    else:  # Thor: the bandwidth manager's devfreq node and BPMP's actmon
        d = "sys/devices/platform/bwmgr/devfreq/bwmgr"
        for k, v in (("cur_freq", rate), ("min_freq", e["min"]), ("max_freq", e["max"]), ("governor", "bpmp-bw")):
            _w(root, f"{d}/{k}", v)
        _link(root, "sys/class/devfreq/bwmgr", d)
        actmon = "sys/kernel/debug/bpmp/debug/actmon/mc_all_avg_activity"
    # actmon's average EMC activity: jtop divides it by the clock in kHz to get the percentage.
    _w(root, actmon, activity)


def write_engines(root, b, s):
    for printed, node in b["engines"].items():
        value = s.engines.get(printed)
        if value is None and printed == "APE" and "APE" in s.engines:
            value = s.engines["APE"]
        if value is None:
            continue
        load, mhz = value
        d = f"sys/kernel/debug/clk/{node}"
        _w(root, f"{d}/clk_rate", int(round((mhz or 0) * 1e6)))
        _w(root, f"{d}/clk_enable_count", 1 if mhz else 0)


def write_rails(root, b, s):
    readings = {}
    for r in s.rails:  # names repeat (NC): keep them in order
        readings.setdefault(r.name, []).append(r.instant_mw)
    used = {}

    def take(label):
        k = used.get(label, 0)
        used[label] = k + 1
        values = readings.get(label, [])
        return values[k] if k < len(values) else 0.0

    for chip in b["rails"]:
        dev = f"sys/devices/platform/i2c-{chip['bus'].split('-')[0]}/{chip['bus']}"
        _w(root, f"{dev}/name", chip["driver"])
        _link(root, f"sys/bus/i2c/devices/{chip['bus']}", dev)
        _link(root, f"sys/bus/i2c/drivers/{chip['driver']}/{chip['bus']}", dev)
        if chip["driver"] == "ina238":
            hw = f"{dev}/hwmon/{chip['node']}"
            mv, mw = chip["vin_mv"], chip["vin_mw"]
            _w(root, f"{hw}/name", "ina238")
            _w(root, f"{hw}/in1_input", mv)
            _w(root, f"{hw}/curr1_input", int(round(mw * 1000 / mv)))
            _w(root, f"{hw}/power1_input", int(mw * 1000))
            _link(root, f"sys/class/hwmon/{chip['node']}", hw)
            continue
        if chip["layout"] == "hwmon":
            hw = f"{dev}/hwmon/{chip['node']}"
            _w(root, f"{hw}/name", "ina3221")
            for n, (label, mv) in enumerate(chip["channels"], 1):
                mw = take(label)
                _w(root, f"{hw}/in{n}_label", label)
                _w(root, f"{hw}/in{n}_input", mv)
                _w(root, f"{hw}/curr{n}_input", int(round(mw * 1000 / mv)))
                _w(root, f"{hw}/curr{n}_max", 8000)
                _w(root, f"{hw}/curr{n}_crit", 10000)
            _w(root, f"{hw}/in7_label", "sum of shunt voltages")
            _w(root, f"{hw}/in7_input", 0)
            _link(root, f"sys/class/hwmon/{chip['node']}", hw)
        else:
            d = f"{dev}/{chip['node']}"
            for n, (label, mv) in enumerate(chip["channels"]):
                mw = take(label)
                _w(root, f"{d}/rail_name_{n}", label)
                _w(root, f"{d}/in_power{n}_input", int(round(mw)))
                _w(root, f"{d}/in_voltage{n}_input", mv)
                _w(root, f"{d}/in_current{n}_input", int(round(mw * 1000 / mv)))


def write_thermal(root, b, s):
    for i, (kind, printed) in enumerate(b["thermal"]):
        z = f"sys/devices/virtual/thermal/thermal_zone{i}"
        temp = s.temps_c.get(printed) if printed else None
        _w(root, f"{z}/type", kind)
        _w(root, f"{z}/temp", int(round(temp * 1000)) if temp is not None else -256000)
        trip = b["trips"].get(kind)
        if trip:
            _w(root, f"{z}/trip_point_0_type", "passive")
            _w(root, f"{z}/trip_point_0_temp", trip)
            _w(root, f"{z}/trip_point_1_type", "critical")
            _w(root, f"{z}/trip_point_1_temp", trip + 5500)
        _link(root, f"sys/class/thermal/thermal_zone{i}", z)


def expected(b, s):
    """What a reader of this tree should find: written beside the tree as tree.json."""
    rails_mw = {}
    for chip in b["rails"]:
        if chip["driver"] == "ina238":
            rails_mw["VIN"] = chip["vin_mw"]
            continue
    board = None
    ina238 = [c for c in b["rails"] if c["driver"] == "ina238"]
    if ina238:
        board = ina238[0]["vin_mw"]
    else:
        names = [r.name for r in s.rails]
        for name in ("VDD_IN", "POM_5V_IN"):
            if name in names:
                board = next(r.instant_mw for r in s.rails if r.name == name)
                break
        if board is None:
            board = sum(r.instant_mw for r in s.rails if r.name != "NC")
    g = b["gpu"]
    gpu_clock = gpu_cur_hz(g, s) / 1e6
    temps = {}
    for kind, printed in b["thermal"]:
        t = s.temps_c.get(printed) if printed else None
        if t is not None and t > -100 and not kind.startswith("PMIC"):  # a fixed 100 C, skipped by the tools
            temps[kind] = t
    e = b["emc"]
    return {
        "title": b["title"],
        "profile": b["profile"],
        "jetpack": b["jetpack"],
        "l4t": b["l4t"],
        "super_firmware": b["super_firmware"],
        "model": b["model"],
        "compatible": b["compatible"],
        "power_mode": next(m[1] for m in b["modes"] if m[0] == b["mode"]),
        "power_mode_id": b["mode"],
        "default_power_mode": next(m[1] for m in b["modes"] if m[0] == b["default_mode"]),
        "mode_table": {str(m[0]): m[1] for m in b["modes"]},
        "jetson_clocks": False,
        "memory_total_bytes": int(round(s.ram_total_mb * 1024)) * 1024,
        "memory_used_bytes": int(round(s.ram_used_mb * 1024)) * 1024,
        "cpu_count": b["cpu"]["count"],
        "cpu_online": mode_online(b),
        "gpu_name": g["name"],
        "gpu_devfreq": g["devfreq_name"],
        "gpu_clock_mhz": gpu_clock,
        "gpu_max_mhz": g["max"] / 1e6,
        "gpu_load_pct": None if g["device"] is None else (s.gpu_load_pct or 0.0),
        "emc_mhz": s.emc_freq_mhz if s.emc_freq_mhz else e["max"] / 1e6,
        "emc_load_pct": s.emc_load_pct or 0.0,
        "board_power_mw": board,
        "board_rail": "VIN" if ina238 else next((n for n in ("VDD_IN", "POM_5V_IN") if n in [r.name for r in s.rails]), None),
        "rails_mw": {r.name: r.instant_mw for r in s.rails if r.name != "NC"},
        "temps_c": temps,
        "tegrastats_sensor": {kind: printed for kind, printed in b["thermal"] if printed},
        "trip_points_c": {k: v / 1000.0 for k, v in b["trips"].items()},
        "tegrastats": {"file": b["tegrastats"][0], "line": b["tegrastats"][1]},
    }


def build_one(name, b, out):
    root = out / name
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    s = parse_line(ts_line(*b["tegrastats"]))
    write_identity(root, b)
    write_nvpmodel(root, b, s)
    write_memory(root, s)
    write_cpus(root, b, s)
    write_gpu(root, b, s)
    write_emc(root, b, s)
    write_engines(root, b, s)
    write_rails(root, b, s)
    write_thermal(root, b, s)
    _w(root, "etc/fstab", "# UNCONFIGURED FSTAB FOR BASE SYSTEM")
    meta = expected(b, s)
    (root / "tree.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return meta


README_HEAD = """\
# Recorded board trees

One directory per board and JetPack: the files a Jetson has that pytest-jetson and jetson-stats
read, laid out as on the board (`proc/device-tree` is a link to `sys/firmware/devicetree/base`,
`sys/class/devfreq/*`, `sys/class/thermal/*` and `sys/bus/i2c/{devices,drivers}/*` are links into
`sys/devices`, as sysfs makes them). Point `PYTEST_JETSON_SYSROOT` at one to run the plugin against
it. `tree.json` beside the files is not a board file: it holds what a reader of the tree should find
(the test expectations) and names the tegrastats line the readings come from.

The trees are written by `build.py` from the table in it; `tests/devices/test_board_trees.py` fails when
they disagree. Values no public source gives are listed under *Unknown* for each board with what
was written instead. Sources are named by key; the keys are listed at the end.

Conventions for every tree:
- Readings (rails, clocks, loads, temperatures, memory in use) are the moment of one tegrastats
  line (`tests/data/tegrastats/`), written so that the board's tools would print that line:
  hwmon rails as voltage (mV) and current (mA, from the printed power), JetPack 4 iio rails as
  power (mW), voltage and current; the GPU `load` file in per mille; devfreq clocks in Hz;
  actmon's EMC activity as load x clock (kHz), which is how jetson-stats derives EMC load.
- `/proc/stat` counters, `/proc/buddyinfo`, `/proc/cpuinfo` (processor lines only), `/etc/fstab`
  and the INA `curr*_max`/`curr*_crit` limits are stand-ins with the kernel's format: no source
  gives them for these boards, and no test reads their values.
- The nvpmodel `.conf` is an excerpt: the mode headers, the online CPUs and the GPU/EMC caps of the
  board's table; the status file names the current mode.
- jetson_clocks is off in every tree (devfreq `min_freq` below `max_freq`).
"""


def write_readme(out, metas):
    parts = [README_HEAD, "\n## Boards\n"]
    for name, b in BOARDS.items():
        m = metas[name]
        parts.append(f"### `{name}`: {b['title']}\n")
        parts.append(f"Detected as `{b['profile']}`, power mode {m['power_mode']} (default "
                     f"{m['default_power_mode']}); readings from `tests/data/tegrastats/{b['tegrastats'][0]}` "
                     f"line {b['tegrastats'][1]}.\n")
        parts.append("| files | sources |\n|---|---|")
        labels = {"identity": "device-tree model, compatible, dtsfilename; `/etc/nv_tegra_release`",
                  "nvpmodel": "`/etc/nvpmodel.conf`, `/var/lib/nvpmodel/status`",
                  "gpu": "GPU device, devfreq and load", "rails": "INA power monitors",
                  "thermal": "thermal zones", "emc": "EMC clock and activity", "cpu": "cpufreq",
                  "memory": "`/proc/meminfo`"}
        for key, text in b["sources"].items():
            parts.append(f"| {labels.get(key, key)} | {text} |")
        parts.append("\n*Unknown* (what was written instead):\n")
        parts += [f"- {u}" for u in b["unknown"]]
        parts.append("")
    parts.append("## Sources\n")
    parts += [f"- `{k}`: {v}" for k, v in SOURCES.items()]
    (out / "README.md").write_text("\n".join(parts) + "\n")


def build(out=HERE):
    out = Path(out)
    metas = {name: build_one(name, b, out) for name, b in BOARDS.items()}
    write_readme(out, metas)
    return metas


if __name__ == "__main__":
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
