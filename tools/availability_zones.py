"""Write infra/config/zones.json: each Region's Availability Zone names and AZ ids, the data the
config rules check ``network.availability_zones`` and ``network.hyperpod_subnet.az_id`` against.

Sources, both recorded from EC2's DescribeAvailabilityZones and pinned in requirements-dev.txt:
cfn-lint's ``cfnlint.helpers.AVAILABILITY_ZONES`` (names, every Region it knows) and moto's EC2
zone table (names with their AZ ids). In the Regions that map names to zones per account, an
account may see a letter another does not, so a Region's names are the union of both. A Region
neither knows, or whose ids neither lists, is not checked at synth; ``hpkv preflight`` asks the
account (DescribeAvailabilityZones) in every case.

Usage: python -m tools.availability_zones [--check]
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

ZONES = Path(__file__).resolve().parents[1] / "infra" / "config" / "zones.json"


def zones() -> dict[str, Any]:
    from cfnlint.helpers import AVAILABILITY_ZONES
    from moto.ec2.models.availability_zones_and_regions import RegionsAndZonesBackend

    recorded = RegionsAndZonesBackend.zones
    regions = {}
    for region in sorted(set(AVAILABILITY_ZONES) | set(recorded)):
        names = set(AVAILABILITY_ZONES.get(region, ())) | {z.name for z in recorded.get(region, ())}
        ids = sorted({z.zone_id for z in recorded.get(region, ()) if z.zone_id})
        regions[region] = {"names": sorted(names), "ids": ids}
    return {
        "source": f"cfn-lint {version('cfn-lint')} and moto {version('moto')}: "
        "python -m tools.availability_zones",
        "regions": regions,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when the file is stale")
    text = json.dumps(zones(), indent=1, sort_keys=True) + "\n"
    if parser.parse_args().check:
        if ZONES.read_text() != text:
            print(f"{ZONES.name} is stale: run python -m tools.availability_zones")
            return 1
        return 0
    ZONES.write_text(text)
    print(f"wrote {ZONES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
