"""Point telcoenv at your own copy of the blueprints and get the packaged validation."""

import shutil
import sys
import tempfile
from pathlib import Path

import yaml

from telcoenv.datafiles import data_root
from telcoenv.domains.network.kpis import kpi_definitions
from telcoenv.domains.network.loading import load_catalog
from telcoenv.errors import CatalogError

workdir = Path(tempfile.mkdtemp())
shutil.copytree(data_root() / "blueprints", workdir / "blueprints")
catalog = load_catalog(blueprints_dir=workdir / "blueprints", known_kpis=kpi_definitions().kpis)
print("valid:", sum(len(f) for f in catalog.blueprints.values()), "blueprints")

# Break one range on purpose: the error names the file, the field and the problem.
path = workdir / "blueprints" / "COVERAGE_HOLE" / "COV_HOLE_DOWNTOWN.yaml"
blueprint = yaml.safe_load(path.read_text())
blueprint["constraints"]["rsrp_dBm"]["min"] = -90  # now above its max of -102
path.write_text(yaml.safe_dump(blueprint))
try:
    load_catalog(blueprints_dir=workdir / "blueprints", known_kpis=kpi_definitions().kpis)
except CatalogError as error:
    print("error:", error)
    sys.exit(0)
sys.exit("the broken blueprint was accepted")
