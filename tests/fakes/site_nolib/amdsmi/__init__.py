"""`import amdsmi` on a machine without libamd_smi.so, as the 7.0.2 wheel behaves: its
amdsmi_wrapper prints the loader's OSError and a hint to stdout, then the next lookup in its
_libraries dict raises KeyError."""

_libraries = {}
try:
    raise OSError("libamd_smi.so: cannot open shared object file: No such file or directory")
except OSError as e:
    print(e)
    print("Unable to find libamd_smi.so library try installing amd-smi-lib from your package manager")

amdsmi_free_name_value_pairs = _libraries['libamd_smi.so'].amdsmi_free_name_value_pairs
