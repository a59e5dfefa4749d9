"""`import amdsmi` of the PyPI 7.0.2 wheel over ROCm 6.2's libamd_smi.so: ctypes cannot find a
symbol the older library lacks, and the import raises AttributeError."""

raise AttributeError("/opt/rocm/lib/libamd_smi.so: undefined symbol: amdsmi_get_gpu_enumeration_info")
