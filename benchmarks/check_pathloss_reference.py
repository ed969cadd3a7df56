"""Check the radio model's TR 38.901 path loss against Sionna's implementation (offline).

    python -m venv /tmp/sionna && /tmp/sionna/bin/pip install "torch==2.13.0" sionna-no-rt
    /tmp/sionna/bin/python benchmarks/check_pathloss_reference.py

Sionna (NVIDIA, Apache-2.0) is no dependency of telcoenv: it needs torch and takes seconds to
set up a layout. This script places one base station and UEs at 10 m to 5 km (outdoor, h_UT
1.5 m), forces LOS then NLOS, reads Sionna's basic path loss (``basic_pathloss``: without
shadow fading) for UMa, UMi and RMa, and prints the largest difference from
:func:`telcoenv.domains.network.radio.pathloss_db` on the same links. Last line: JSON figures.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

# radio.py needs only numpy; loading it by path keeps Sionna's venv free of telcoenv's dependencies.
_RADIO = Path(__file__).resolve().parents[1] / "telcoenv" / "domains" / "network" / "radio.py"
_spec = importlib.util.spec_from_file_location("telcoenv_radio", _RADIO)
assert _spec and _spec.loader
radio = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = radio  # dataclasses look their module up
_spec.loader.exec_module(radio)
pathloss_db = radio.pathloss_db

CARRIER_HZ = 3.5e9
HEIGHTS = {"UMa": 25.0, "UMi": 10.0, "RMa": 35.0}


def sionna_basic_pathloss(scenario: str, distances: np.ndarray, los: bool) -> np.ndarray:
    import torch
    from sionna.phy.channel.tr38901 import PanelArray, RMaScenario, UMaScenario, UMiScenario

    array = PanelArray(
        num_rows_per_panel=1,
        num_cols_per_panel=1,
        polarization="single",
        polarization_type="V",
        antenna_pattern="omni",
        carrier_frequency=CARRIER_HZ,
    )
    kind = {"UMa": UMaScenario, "UMi": UMiScenario, "RMa": RMaScenario}[scenario]
    options = {} if scenario == "RMa" else {"o2i_model": "low"}
    model = kind(
        carrier_frequency=CARRIER_HZ,
        ut_array=array,
        bs_array=array,
        direction="downlink",
        enable_shadow_fading=False,
        **options,
    )
    n = len(distances)
    ut = torch.zeros((1, n, 3), dtype=torch.float32)
    ut[0, :, 0] = torch.tensor(distances, dtype=torch.float32)
    ut[0, :, 2] = 1.5
    bs = torch.tensor([[[0.0, 0.0, HEIGHTS[scenario]]]], dtype=torch.float32)
    zeros = torch.zeros((1, n, 3))
    model.set_topology(
        ut_loc=ut,
        bs_loc=bs,
        ut_orientations=zeros,
        bs_orientations=torch.zeros((1, 1, 3)),
        ut_velocities=zeros,
        in_state=torch.zeros((1, n), dtype=torch.bool),
        los=los,
    )
    return model.basic_pathloss.numpy()[0, 0]


def main(as_json: bool = False) -> dict[str, float]:
    distances = np.geomspace(10.0, 5000.0, 60)
    figures: dict[str, float] = {}
    for scenario, height in HEIGHTS.items():
        for los in (True, False):
            theirs = sionna_basic_pathloss(scenario, distances, los)
            ours = pathloss_db(scenario, distances, CARRIER_HZ / 1e9, height, 1.5, los)  # type: ignore[arg-type]
            key = f"{scenario}_{'los' if los else 'nlos'}_max_abs_diff_db"
            figures[key] = round(float(np.max(np.abs(ours - theirs))), 4)
            if not as_json:
                print(f"{scenario:4s} {'LOS ' if los else 'NLOS'}: max |ours - Sionna| "
                      f"{figures[key]:.4f} dB over {len(distances)} distances")  # fmt: skip
    print(json.dumps(figures))
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    main(parser.parse_args().json)
