"""What an exported program or other device-code artifact records about itself (facts read
by read/artifacts/; its train judged by rules/artifact_train.py, checked by
checks/artifact.py): its kind, the exporter's metadata, the evidence for its CUDA train it
records, and the host it was built for (docs/artifacts.md)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EVIDENCE_ORDER", "KINDS", "ArtifactFacts", "TrainEvidence"]

# What an artifact is called in reports (Source.kind).
KINDS = {
    "aoti-package": "AOTInductor package",
    "executorch-program": "ExecuTorch program",
    "executorch-data": "ExecuTorch data file",
    "triton-cache": "Triton cache",
    "library": "library",
}

# The evidence for a train, strongest first (docs/artifacts.md#evidence): what the exporter
# recorded, the toolkit its host code was built against, the runtime it links, the
# assembler that made its cubins, the PTX ISA it needs.
EVIDENCE_ORDER = ("metadata", "build-path", "runtime-link", "cubin-toolkit", "ptx-isa")


@dataclass(frozen=True)
class TrainEvidence:
    """One thing that names a CUDA train, and where it was read."""

    source: str  # one of EVIDENCE_ORDER
    major: int
    minor: int | None
    where: str  # member or file it came from, and what it says

    @property
    def train(self) -> str:
        return f"{self.major}.{self.minor}" if self.minor is not None else f"{self.major}.x"


@dataclass(frozen=True)
class ArtifactFacts:
    """An artifact's own records, beside the binaries of its Source."""

    kind: str  # a key of KINDS
    metadata: tuple[tuple[str, str], ...] = ()  # e.g. AOTI_CPU_ISA, AOTI_COMPUTE_CAPABILITY
    # What names its train that the reader found recorded in it (build paths); its binaries'
    # evidence, and the train all of it names: cuwheel.rules.artifact_train.
    evidence: tuple[TrainEvidence, ...] = ()
    host_machine: str | None = None  # from its host binaries, when they agree
    host_format: str | None = None  # "elf" / "pe" of its host binaries, when they agree
    notes: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return KINDS.get(self.kind, self.kind)

    def meta(self, key: str) -> tuple[str, ...]:
        """Every distinct value recorded under ``key``."""
        return tuple(dict.fromkeys(v for k, v in self.metadata if k == key))

    @property
    def cpu_isa(self) -> tuple[str, ...]:
        out: list[str] = []
        for v in self.meta("AOTI_CPU_ISA"):
            out += [t for t in v.replace(",", " ").split() if t]
        return tuple(dict.fromkeys(out))

    @property
    def machine(self) -> str | None:
        recorded = self.meta("AOTI_MACHINE")
        return recorded[0] if recorded else self.host_machine

    @property
    def platform(self) -> str | None:
        recorded = self.meta("AOTI_PLATFORM")
        if recorded:
            return recorded[0]
        return {"elf": "linux", "pe": "win32"}.get(self.host_format or "")
