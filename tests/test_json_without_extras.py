"""`run -f json` on an image with torch but not gpuparity's dependencies: no orjson means the
standard library writes the same JSON after measuring, and a vendor library that prints when it
cannot load (amdsmi without libamd_smi.so) never reaches stdout."""

import json
import os
import subprocess
import sys

from fakes import HERE

SRC = os.path.join(os.path.dirname(HERE), "..", "src")


def python(code: str, extra_path: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (extra_path, SRC) if p))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)


def test_run_json_without_orjson_keeps_the_measurements():
    p = python("import sys; sys.modules['orjson'] = None\n"     # `import orjson` raises ImportError
               "from gpuparity.__main__ import entry\n"
               "sys.argv = ['gpuparity', 'run', 'memory', '--set', 'op=copy', '--set', 'elements=4096',"
               " '--in-process', '--no-store', '-f', 'json']\n"
               "entry()")
    assert p.returncode in (0, 1), p.stderr[-2000:]
    doc = json.loads(p.stdout)                       # stdout is the JSON alone
    (r,) = doc["results"]
    assert r["status"] == "ok" and r["samples"] and r["metric"]["value"] > 0


def test_amdsmi_noise_stays_off_stdout():
    p = python("from gpuparity.platform.detect import _amdsmi_info\n"
               "from gpuparity.cli.common import print_json\n"
               "unknown = {}\n"
               "print_json({'devices': _amdsmi_info(unknown), 'unknown': unknown})",
               extra_path=os.path.join(HERE, "site_nolib"))
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert "KeyError" in doc["unknown"]["amdsmi"] and "Unable to find libamd_smi.so" in doc["unknown"]["amdsmi"]
