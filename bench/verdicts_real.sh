#!/bin/bash
# Usage: BEFORE=DIR AFTER=DIR bench/verdicts_real.sh > out.txt  (wheels in /tmp/wheels)
# compat verdicts on real wheels from two checkouts (their src/ folders); defaults: the main
# checkout at /work/main before, this checkout after
BEFORE=${BEFORE:-/work/main}; AFTER=${AFTER:-$(cd "$(dirname "$0")/.." && pwd)}
W=/tmp/wheels; A=/tmp/wheels/torchabi; T=/opt/pypi-more/files/torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl
pairs=(
"$W/vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl|T4|580"
"$W/vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl|A100|580"
"$W/vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl|L4|580"
"$W/vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl|H100|580"
"$W/vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl|B200|580"
"$W/vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl|RTX 5090|580"
"$W/vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl|V100|580"
"$T|T4|580"
"$T|V100|580"
"$T|H100|580"
"$T|H100|535.104.05"
"$T|B200|580"
"$W/nvidia_cublas_cu12-12.9.3.13-py3-none-manylinux_2_27_x86_64.whl|T4|575"
"$W/nvidia_cublas_cu12-12.9.3.13-py3-none-manylinux_2_27_x86_64.whl|H100|575"
"$W/nvidia_cublas_cu12-12.9.3.13-py3-none-manylinux_2_27_x86_64.whl|B200|575"
"$W/nvidia_cublas_cu12-12.9.3.13-py3-none-manylinux_2_27_x86_64.whl|P100|575"
"$W/nvidia_cufft_cu12-11.4.1.4-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl|H100|575"
"$W/nvidia_cufft_cu12-11.4.1.4-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl|T4|575"
"$W/faiss_gpu-1.7.2-cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64.whl|A100|535"
"$W/faiss_gpu-1.7.2-cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64.whl|V100|535"
"$W/bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl|T4|580|13.0"
"$W/bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl|H100|580|12.8"
"$W/bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl|V100|580|13.0"
"$W/bitsandbytes-0.49.0-py3-none-manylinux_2_24_x86_64.whl|H100|580|12.8"
"$W/bitsandbytes-0.49.0-py3-none-manylinux_2_24_x86_64.whl|H100|580|13.1"
"$W/bitsandbytes-0.50.2-py3-none-win_amd64.whl|RTX 4090|580|12.8"
"$W/cupy_cuda12x-13.6.0-cp312-cp312-manylinux2014_x86_64.whl|T4|580"
"$W/cupy_cuda12x-13.6.0-cp312-cp312-manylinux2014_x86_64.whl|H100|520.61.05"
"$W/cupy_cuda12x-13.6.0-cp312-cp312-win_amd64.whl|RTX 4090|580"
"$W/jax_cuda12_plugin-0.7.2-cp312-cp312-manylinux_2_27_x86_64.whl|H100|580"
"$W/jax_cuda12_plugin-0.7.2-cp312-cp312-manylinux_2_27_x86_64.whl|T4|580"
"$W/jax_cuda12_pjrt-0.7.2-py3-none-manylinux_2_27_x86_64.whl|H100|580"
"$W/jax_cuda12_pjrt-0.7.2-py3-none-manylinux_2_27_x86_64.whl|P100|580"
"$W/onnxruntime_gpu-1.23.2-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl|H100|580"
"$W/onnxruntime_gpu-1.23.2-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl|T4|580"
"$W/nvidia_cuda_runtime-13.0.96-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl|H100|580"
"$W/nvidia_cuda_runtime-13.0.96-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl|H100|570.86.15"
"$W/nvidia_curand-10.4.5.25-py3-none-manylinux_2_27_x86_64.whl|H100|580"
"$W/nvidia_cusparselt_cu13-0.8.0-py3-none-manylinux2014_x86_64.whl|H200|580"
"$W/nvidia_curand_cu12-10.3.10.19-py3-none-manylinux_2_27_aarch64.whl|GH200|575"
"$W/nvidia_curand_cu12-10.3.10.19-py3-none-manylinux_2_27_aarch64.whl|Jetson AGX Orin|575"
"$A/xformers-0.0.23-cp311-cp311-manylinux2014_x86_64.whl|H100|580"
"$A/xformers-0.0.28.post1-cp311-cp311-manylinux_2_28_x86_64.whl|H100|580"
"$A/xformers-0.0.29.post1-cp311-cp311-manylinux_2_28_x86_64.whl|V100|580"
"$A/fbgemm_gpu-1.0.0-cp311-cp311-manylinux2014_x86_64.whl|H100|580"
"$A/fbgemm_gpu-1.0.0-cp311-cp311-manylinux2014_x86_64.whl|T4|580"
"$A/autoawq_kernels-0.0.9-cp311-cp311-manylinux2014_x86_64.whl|T4|580"
"$A/autoawq_kernels-0.0.9-cp311-cp311-manylinux2014_x86_64.whl|H100|580"
"$A/auto_gptq-0.7.1-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl|H100|580"
"$A/torchvision-0.16.2-cp311-cp311-manylinux1_x86_64.whl|H100|580"
"$A/torchvision-0.16.2-cp311-cp311-manylinux2014_aarch64.whl|GH200|580"
"$A/deepspeed-0.16.5-cp311-cp311-win_amd64.whl|RTX 4090|580"
)
for p in "${pairs[@]}"; do
  IFS='|' read -r w g d c <<< "$p"
  extra=(); [ -n "$c" ] && extra=(--cuda "$c")
  [ -f "$w" ] || { echo "MISSING $w"; continue; }
  b=$(cd /tmp && PYTHONPATH=$BEFORE/src nice python -m cuwheel compat "$w" --gpu "$g" --driver "$d" "${extra[@]}" 2>&1 | head -1)
  a=$(cd /tmp && PYTHONPATH=$AFTER/src nice python -m cuwheel compat "$w" --gpu "$g" --driver "$d" "${extra[@]}" 2>&1 | head -1)
  echo "$(basename $w) | $g | $d${c:+ | cuda $c}"
  echo "  before: $b"
  echo "  after:  $a"
done
