"""Derive the NVIDIA wheel-variant properties of real published wheels, validate each
variant.json with variantlib (pip install variantlib==0.2.2), and check a variant wheel
made from one of them with a wrong declared property (docs/variants.md).

    PYTHONPATH=src:tests python bench/variant_real.py OUTDIR WRONG-PROPERTY WHEEL...

The variant with the wrong property is made from the first wheel.
"""

from __future__ import annotations

import sys

from variantlib.variant_dist_info import VariantDistInfo

from cuwheel.read.inspect import inspect
from cuwheel.variant import derive, read_declared, variant_json, verify
from variantwheel import make_variant_wheel


def main(out_dir: str, wrong: str, wheels: list[str]) -> int:
    first = None
    for path in wheels:
        src = inspect([path]).sources[0]
        d = derive(src)
        text = variant_json(d, "cu130")
        v = VariantDistInfo(text, expected_label="cu130")  # raises ValidationError
        print(f"{path.rsplit('/', 1)[-1]}: variantlib accepts {len(v.variant_desc.properties)} "
              "properties:")
        for p in v.variant_desc.properties:
            print(f"    {p.to_str()}")
        for p in d.partial:
            print(f"    not derived: {p.value} (missing in {', '.join(p.missing)})")
        first = first or (path, d)
    assert first is not None
    path, d = first
    props = (*d.properties, wrong)
    bad = make_variant_wheel(path, out_dir, "cu130", variant_json(d, "cu130", props))
    VariantDistInfo(variant_json(d, "cu130", props), expected_label="cu130")
    declared = read_declared(bad)
    assert declared is not None
    findings = verify(derive(inspect([bad]).sources[0]), declared)
    print(f"{bad.rsplit('/', 1)[-1]} declares {wrong!r} (variantlib accepts the file):")
    for f in findings:
        print(f"    {f.severity}: {f.code} {f.message}")
    return 1 if not findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
