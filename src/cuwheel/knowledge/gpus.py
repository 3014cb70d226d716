"""GPUs: each compute capability, its family, chips and products (``data/gpus.toml``), and
the search that finds them by product name, alias, family, chip or CC."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cuwheel._validate import Checker, TableList
from cuwheel.knowledge._load import DataSource, read_meta, source_mark, tables
from cuwheel.model.arch import Arch, ArchSpellingError

__all__ = ["SEGMENTS", "Gpu", "GpuMatch", "Product", "load_gpus", "search_gpus"]

SEGMENTS = frozenset({"datacenter", "workstation", "consumer", "embedded"})


@dataclass(frozen=True)
class Product:
    name: str
    segment: str  # "datacenter", "workstation", "consumer", "embedded"
    aliases: tuple[str, ...] = ()
    note: str | None = None
    # Row platforms (data/platforms.toml row platforms) whose wheels can drive this product, where
    # it differs from its GPU's ``hosts``; None = the GPU's.
    hosts: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Gpu:
    """One compute capability and the products that have it."""

    arch: Arch  # without variant
    family: str
    chips: tuple[str, ...]
    products: tuple[Product, ...]
    source: str
    note: str | None = None
    tegra: bool = False  # integrated Tegra / Jetson / DRIVE GPU
    # Built into a system whose CPU is fixed (every Tegra; GB10): ``hosts`` is then all
    # there is, not a lower bound.
    integrated: bool = False
    # Row platforms whose wheels can drive the GPU: the union over its products.
    # () = none known (no row platform, or not recorded).
    hosts: tuple[str, ...] = ()

    @property
    def cc(self) -> str:
        return self.arch.cc

    def fixed_hosts(self, products: Sequence[Product] = ()) -> tuple[str, ...] | None:
        """The platforms of the machines that carry these products (default: all of the
        GPU's), where the catalog knows them all: an integrated GPU's, or products with
        hosts of their own (superchips).  None for a discrete GPU: any host its driver
        supports can carry the card."""
        products = tuple(products) or self.products
        if products and all(p.hosts is not None for p in products):
            return tuple(sorted({h for p in products for h in p.hosts or ()}))
        return self.hosts if self.integrated else None


@dataclass(frozen=True)
class GpuMatch:
    """A search hit: the GPU and the products that matched (all of them for a CC / family hit)."""

    gpu: Gpu
    products: tuple[Product, ...]
    exact: bool  # the query equals a product name, alias, CC or sm name


def load_gpus(data: Mapping[str, Any], chk: Checker) -> tuple[tuple[Gpu, ...], DataSource | None]:
    meta = read_meta(data, chk)
    gpus: list[Gpu] = []
    seen_names: dict[str, str] = {}
    for i, raw in enumerate(tables(data, "gpu", chk)):
        where = f"gpu[{i}]"
        f = chk.fields(
            raw,
            where,
            {"cc": str, "family": str, "chips": list, "products": TableList, "source": str},
            {"note": str, "tegra": bool, "integrated": bool, "hosts": list},
        )
        if "cc" not in f:
            continue
        where = f"gpu cc={f['cc']}"
        arch = chk.convert(where, Arch.parse, f["cc"])
        if arch is None or "." not in f["cc"] or arch.variant:
            chk.problem(where, "cc must be 'X.Y'")
            continue
        products: list[Product] = []
        for j, praw in enumerate(raw.get("products", [])):
            p = chk.fields(
                praw,
                f"{where} product[{j}]",
                {"name": str, "segment": str},
                {"aliases": list, "note": str, "hosts": list},
            )
            if "name" not in p:
                continue
            if p.get("segment") not in SEGMENTS:
                chk.problem(where, f"{p['name']!r}: segment must be one of {sorted(SEGMENTS)}")
            for n in (p["name"], *p.get("aliases", [])):
                key = _compact(n)
                if key in seen_names and seen_names[key] != f["cc"]:
                    chk.problem(where, f"name {n!r} also used for CC {seen_names[key]}")
                seen_names[key] = f["cc"]
            phosts = p.get("hosts")
            if phosts is not None and not set(phosts) <= set(f.get("hosts", [])):
                chk.problem(where, f"{p['name']!r}: hosts {phosts} not all in the GPU's hosts")
            products.append(
                Product(
                    p["name"],
                    p.get("segment", ""),
                    tuple(p.get("aliases", [])),
                    p.get("note"),
                    None if phosts is None else tuple(phosts),
                )
            )
        gpus.append(
            Gpu(
                arch,
                f.get("family", ""),
                tuple(f.get("chips", [])),
                tuple(products),
                source_mark(chk, where, f.get("source")),
                f.get("note"),
                tegra=f.get("tegra", False),
                integrated=f.get("integrated", f.get("tegra", False)),
                hosts=tuple(f.get("hosts", [])),
            )
        )
        if len(set(f.get("hosts", []))) != len(f.get("hosts", [])):
            chk.problem(where, "'hosts' has duplicates")
    numbers = [g.arch for g in gpus]
    if numbers != sorted(set(numbers)):
        chk.problem("gpu", "entries must be sorted by CC without duplicates")
    return tuple(gpus), meta


def _compact(text: str) -> str:
    return re.sub(r"[^0-9a-z]", "", text.lower())


def _words(text: str) -> list[str]:
    return [w for w in re.split(r"[^0-9a-z]+", text.lower()) if w]


# Words that people add or leave out without changing which product they mean.  "Laptop":
# nvidia-smi names a notebook part "NVIDIA GeForce RTX 4090 Laptop GPU"; a laptop GPU has
# the architecture, hence the CC, of its desktop namesake (docs/cuda.md#gpu-products).
_NOISE = frozenset({"nvidia", "geforce", "tesla", "gpu", "laptop"})


def _name_matches(query: str, name: str) -> tuple[bool, bool]:
    """(matches, exact).  Every query word must be a word of the name; ``rtx4090`` also
    matches the consecutive words ``rtx 4090``."""
    qc = _compact(" ".join(w for w in _words(query) if w not in _NOISE))
    nwords = [w for w in _words(name) if w not in _NOISE]
    if not qc:
        return False, False
    exact = qc == "".join(nwords)
    qwords = [w for w in _words(query) if w not in _NOISE]
    if set(qwords) <= set(nwords):
        return True, exact
    for i in range(len(nwords)):
        run = ""
        for w in nwords[i:]:
            run += w
            if run == qc:
                return True, exact
            if len(run) >= len(qc):
                break
    return False, exact


def search_gpus(gpus: Sequence[Gpu], query: str = "") -> tuple[GpuMatch, ...]:
    """Search GPUs by product name or alias ("4090", "A10G", "RTX PRO 6000"), family
    ("Hopper"), chip ("GH100"), compute capability ("8.9") or arch name ("sm_89").

    An empty query lists every GPU.  Exact hits come first, then by CC.
    """
    q = query.strip()
    if not q:
        return tuple(GpuMatch(g, g.products, False) for g in gpus)
    try:
        arch = Arch.parse(q)
    except ArchSpellingError:
        arch = None
    hits: list[GpuMatch] = []
    for g in gpus:
        if arch is not None and arch.base == g.arch:
            hits.append(GpuMatch(g, g.products, True))
            continue
        family = _name_matches(q, g.family)
        chip = [_name_matches(q, c) for c in g.chips]
        if family[0] or any(m for m, _ in chip):
            hits.append(GpuMatch(g, g.products, family[1] or any(e for _, e in chip)))
            continue
        products: list[Product] = []
        exact = False
        for p in g.products:
            results = [_name_matches(q, n) for n in (p.name, *p.aliases)]
            if any(m for m, _ in results):
                products.append(p)
                exact = exact or any(e for _, e in results)
        if products:
            hits.append(GpuMatch(g, tuple(products), exact))
    hits.sort(key=lambda m: (not m.exact, m.gpu.arch))
    return tuple(hits)


def nearest_gpu_name(gpus: Sequence[Gpu], query: str) -> str | None:
    """The product, alias, family or chip name a query that matched nothing most likely
    meant (``H1OO``: ``H100``), or None."""
    from cuwheel._validate import nearest

    names: list[str] = []
    for g in gpus:
        names += [g.family, *g.chips]
        for p in g.products:
            names += [p.name, *p.aliases]
    return nearest(query.strip(), names)
