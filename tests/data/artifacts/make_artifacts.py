"""Make the exported-program fixtures of tests/data/artifacts on a CUDA machine.

Run by make_artifacts.sh on the GPU machine (torch 2.11+cu130, Triton, nvcc 13.0):

    python3 make_artifacts.py OUTDIR

Each export runs in its own child process with its own Inductor and Triton cache, so no
kernel is reused between them.  What each child did is written to OUTDIR/meta.json with
the tool versions, the oracle listings (cuobjdump on every cubin/fatbin) and whether the
package ran and matched eager mode.

  aoti_cu130.pt2     default AOTInductor export on this GPU: Triton cubins for its arch,
                     assembled by Triton's own ptxas; host code vectorised for this CPU.
  aoti_multiarch.pt2 aot_inductor.emit_multi_arch_kernel with TORCH_CUDA_ARCH_LIST=8.0
                     (falls back to 9.0): each kernel's PTX goes through the toolkit's
                     nvcc -fatbin instead, and TRITON_PTXAS_PATH names the toolkit's
                     ptxas, so its device code comes from another assembler than the
                     first package's; host code capped at 256-bit vectors (AVX2).
  aoti_embedded.pt2  as the first but aot_inductor.embed_kernel_binary: the cubins live
                     inside the wrapper library, as ExecuTorch's CUDA backend packs them.
  triton_cache.tgz   a Triton cache: Inductor's kernels plus one kernel compiled for
                     GPUTarget("cuda", 80, 32) and one for this GPU.
  et/et_cuda.pte, et/*.ptd  ExecuTorch's CUDA backend, if executorch imports (carried wheels).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile


def sh(cmd: list[str]) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        return (p.stdout + p.stderr)[-4000:]
    except Exception as e:  # a tool missing on this machine is a fact to record
        return f"failed: {e!r}"


def model_and_input():  # type: ignore[no-untyped-def]
    import torch

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(8, 8))

        def forward(self, x):  # type: ignore[no-untyped-def]
            return torch.sin(x @ self.w).relu() + x.cos()

    torch.manual_seed(0)
    return Tiny().cuda().eval(), (torch.randn(4, 8, device="cuda"),)


def export_child(name: str, out: str, options_json: str) -> None:
    """One AOTInductor export in this process (env already set by the parent)."""
    import torch
    import torch._inductor

    options = json.loads(options_json)
    m, args = model_and_input()
    ep = torch.export.export(m, args)
    path = os.path.join(out, name)
    torch._inductor.aoti_compile_and_package(ep, package_path=path, inductor_configs=options)
    result: dict[str, object] = {"package": name, "options": options}
    try:
        runner = torch._inductor.aoti_load_package(path)
        got = runner(*args)
        result["ran"] = True
        result["matches_eager"] = bool(torch.allclose(got, m(*args), atol=1e-5))
    except Exception as e:  # a package for another GPU does not load here: record it
        result["ran"] = False
        result["load_error"] = repr(e)[:500]
    print("CHILD-RESULT " + json.dumps(result), flush=True)


def triton_child() -> None:
    """Compile one kernel for sm_80 and one for this GPU straight into TRITON_CACHE_DIR."""
    import torch
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    @triton.jit
    def add(x, y, z, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(z + i, tl.load(x + i, mask=i < n) + tl.load(y + i, mask=i < n), mask=i < n)

    sig = {"x": "*fp32", "y": "*fp32", "z": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    done = {}
    major, minor = torch.cuda.get_device_capability()
    for cc in (80, major * 10 + minor):
        # Triton has keyed constexprs by name and by argument index in different releases.
        for consts in ({"BLOCK": 64}, {(4,): 64}):
            try:
                triton.compile(ASTSource(fn=add, signature=sig, constexprs=consts),
                               target=GPUTarget("cuda", cc, 32))
                done[str(cc)] = "ok"
                break
            except Exception as e:
                done[str(cc)] = repr(e)[:300]
    print("CHILD-RESULT " + json.dumps({"triton_compile": done}), flush=True)


def run_child(args: list[str], env: dict[str, str]) -> dict[str, object]:
    full = dict(os.environ)
    full.update(env)
    p = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                       env=full, timeout=150)
    sys.stdout.write(p.stdout[-3000:] + p.stderr[-6000:])
    for line in p.stdout.splitlines():
        if line.startswith("CHILD-RESULT "):
            res: dict[str, object] = json.loads(line[len("CHILD-RESULT "):])
            res["env"] = env
            return res
    return {"failed": p.returncode, "env": env, "stderr_tail": p.stderr[-1500:]}


def listings(path: str) -> dict[str, str]:
    """cuobjdump and readelf -n on every cubin/fatbin member and on the wrapper libraries."""
    found: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                z.extractall(tmp)
        else:
            with tarfile.open(path) as t:
                t.extractall(tmp)
        for f in sorted(glob.glob(os.path.join(tmp, "**", "*"), recursive=True)):
            rel = os.path.relpath(f, tmp)
            if f.endswith((".cubin", ".fatbin")):
                found[rel] = sh(["cuobjdump", "-lelf", "-lptx", f]) + sh(["readelf", "-n", f])
            elif f.endswith(".so"):
                found[rel] = (sh(["cuobjdump", "-lelf", "-lptx", f])
                              + sh(["readelf", "-d", "--dyn-syms", "-W", f])[-3000:])
            elif f.endswith(".json"):
                with open(f, errors="replace") as fh:
                    found[rel] = fh.read()[:2000]
    return found


def main(out: str) -> None:
    import torch
    import triton

    meta: dict[str, object] = {
        "torch": torch.__version__, "torch_cuda": torch.version.cuda,
        "triton": triton.__version__,
        "gpu": torch.cuda.get_device_name(), "capability": torch.cuda.get_device_capability(),
        "nvcc": sh(["nvcc", "--version"]), "toolkit_ptxas": sh(["ptxas", "--version"]),
        "which_ptxas": shutil.which("ptxas") or "",
        "cpu_flags": sh(["grep", "-m1", "flags", "/proc/cpuinfo"]),
        "driver": sh(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]),
    }
    nvidia = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia")
    here = glob.glob(os.path.join(nvidia, "bin", "ptxas*"))
    meta["triton_bin"] = {p: sh([p, "--version"]) for p in here}
    bundled = next((p for p in here if p.endswith("/ptxas")), "ptxas")
    meta["triton_ptxas"] = bundled
    meta["triton_ptxas_version"] = sh([bundled, "--version"])
    toolkit_ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    work = tempfile.mkdtemp()
    runs: list[dict[str, object]] = []
    t0 = time.monotonic()

    def late() -> bool:  # keep the whole run inside the device call's limit
        meta["runs"] = runs  # and keep what is done so far, should the call be cut short
        with open(os.path.join(out, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1, sort_keys=True)
        return time.monotonic() - t0 > 300

    def caches(tag: str) -> dict[str, str]:
        return {"TORCHINDUCTOR_CACHE_DIR": os.path.join(work, tag, "inductor"),
                "TRITON_CACHE_DIR": os.path.join(work, tag, "triton")}

    runs.append(run_child(["export", "aoti_cu130.pt2", out, "{}"], caches("a")))
    late()
    multi = {"aot_inductor.emit_multi_arch_kernel": True, "cpp.simdlen": 256}
    for arch in ("8.0", "9.0"):  # 9.0 only where 8.0 failed
        env = caches("b" + arch) | {"TORCH_CUDA_ARCH_LIST": arch,
                                    "TRITON_PTXAS_PATH": toolkit_ptxas}
        r = run_child(["export", "aoti_multiarch.pt2", out, json.dumps(multi)], env)
        runs.append(r)
        if "package" in r:
            break
        if late():
            break
    runs.append(run_child(["triton"], {"TRITON_CACHE_DIR": os.path.join(work, "a", "triton")}))
    if os.path.isdir(os.path.join(work, "a", "triton")):
        with tarfile.open(os.path.join(out, "triton_cache.tgz"), "w:gz") as t:
            t.add(os.path.join(work, "a", "triton"), arcname="triton_cache")
    if not late():
        embed = json.dumps({"aot_inductor.embed_kernel_binary": True})
        runs.append(run_child(["export", "aoti_embedded.pt2", out, embed], caches("c")))
    if os.path.isdir("/tmp/site") and not late():
        # pip --target leaves executorch's flatc off PATH; its serializer then looks here
        # (the first run on 2026-12-01 failed for want of it: make_executorch.py)
        env = caches("et") | {"PYTHONPATH": "/tmp/site",
                              "FLATC_EXECUTABLE": "/tmp/site/executorch/data/bin/flatc"}
        runs.append(run_child(["executorch", os.path.join(out, "et")], env))
    meta["runs"] = runs
    meta["listings"] = {os.path.basename(p): listings(p)
                        for p in sorted(glob.glob(os.path.join(out, "*.pt2")))
                        + glob.glob(os.path.join(out, "triton_cache.tgz"))}
    for p in sorted(glob.glob(os.path.join(out, "et", "*"))):
        meta["listings"][os.path.basename(p)] = sh(["ls", "-la", p])  # type: ignore[index]
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)


def executorch_child(out: str) -> None:
    """ExecuTorch's CUDA backend (AOTInductor underneath): a .pte plus its .ptd."""
    import torch
    from executorch.backends.cuda.cuda_backend import CudaBackend
    from executorch.backends.cuda.cuda_partitioner import CudaPartitioner
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower

    os.makedirs(out, exist_ok=True)
    m, args = model_and_input()
    ep = torch.export.export(m, args)
    part = CudaPartitioner([CudaBackend.generate_method_name_compile_spec("forward")])
    edge = to_edge_transform_and_lower(ep, partitioner=[part],
                                       compile_config=EdgeCompileConfig(_check_ir_validity=False))
    prog = edge.to_executorch()
    with open(os.path.join(out, "et_cuda.pte"), "wb") as f:
        f.write(prog.buffer)
    prog.write_tensor_data_to_file(out)
    import executorch

    print("CHILD-RESULT " + json.dumps({"executorch": getattr(executorch, "__version__", "?"),
                                        "files": sorted(os.listdir(out))}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "export":
        export_child(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "triton":
        triton_child()
    elif sys.argv[1] == "executorch":
        executorch_child(sys.argv[2])
    else:
        main(sys.argv[1])
