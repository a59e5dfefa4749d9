#!/usr/bin/env bash
# Debian packages the tests use as real parts: Chromium (report rendering), hipcc and the HIP
# library headers Debian ships (HIP compiles of translated code, --roc ones against rocSPARSE and
# rocRAND; Debian has no hipBLAS, rocBLAS or rocSOLVER), LLVM 15's FileCheck (HIPIFY's unit tests),
# PostgreSQL 15 (team store; the tests start a private server), and slurm-wlm with munge (the
# SLURM tests start a private two-node cluster on loopback), and g++ with TBB (`port --run` builds
# translations against HIP-CPU). Installs only what is missing.
set -euo pipefail
pkgs=(chromium hipcc libhiprand-dev librocrand-dev libhipsparse-dev librocsparse-dev librocprim-dev llvm-15-tools postgresql-15 slurm-wlm munge g++ libtbb-dev)
need=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  echo "installing: ${need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
