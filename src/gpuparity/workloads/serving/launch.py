"""Launching the server a serving run measures, from a recipe (as `vllm bench sweep serve
--serve-cmd` does): `run serving --serve-cmd "vllm serve MODEL --port 8000 -tp 8"` or
`--serve-recipe FILE.yaml`:

    command: vllm serve meta-llama/Llama-3.1-8B-Instruct --port 8000 --dtype bfloat16   # or a list
    env: {CUDA_VISIBLE_DEVICES: "0,1", VLLM_USE_V1: "1"}      # overrides on top of this environment
    url: http://127.0.0.1:8000/v1          # default: http://127.0.0.1:<--port>/v1
    ready_url: http://127.0.0.1:8000/health   # default: <root>/health, or <url>/models
    gpus: 2                                # the server's GPUs (per-GPU figures, its power)
    timeout_s: 900                         # to become ready (default 600)
    stop_grace_s: 30                       # SIGTERM, then SIGKILL after this (default 30)

The server runs in its own process group (terminal signals reach gpuparity, which stops it), its
output in a log file; gpuparity waits until the ready URL answers 200 (or the process exits, or the
timeout: then it is stopped and the log's tail is the error), runs the sweep, and stops the group
with SIGTERM, then SIGKILL after the grace. A watcher thread reaps the process the moment it exits
and writes its exit code and log tail into a status file: the workload reads it before each point,
so a server that dies mid-sweep fails the points after it with that reason, and every point measured
before stays. The record (command, environment overrides with secret values hidden, URL, GPUs,
visible devices, host, readiness time) goes into each result's info.server_identity.launch.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from gpuparity.errors import UserError

DEFAULT_READY_S = 600.0
DEFAULT_GRACE_S = 30.0
TAIL_BYTES = 4000
SECRET = re.compile(r"(TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)", re.IGNORECASE)
SECRET_FLAGS = ("--api-key", "--hf-token", "--token", "--password")
VISIBLE = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")


@dataclass
class Recipe:
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    url: str | None = None
    ready_url: str | None = None
    gpus: int | None = None
    timeout_s: float = DEFAULT_READY_S
    stop_grace_s: float = DEFAULT_GRACE_S
    source: str = "--serve-cmd"


def _recipe_model():
    """The pydantic model of a recipe file (validate.parse checks it before anything is used)."""
    from typing import Annotated, Optional, Union

    from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

    Short = Annotated[StrictStr, Field(min_length=1, max_length=10_000)]

    class RecipeFile(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)
        command: Union[Short, Annotated[list[Short], Field(min_length=1, max_length=1000)]]
        env: Optional[dict[Annotated[StrictStr, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,200}$")],
                           Union[Annotated[StrictStr, Field(max_length=10_000)], StrictInt]]] = None
        url: Optional[Annotated[StrictStr, Field(pattern=r"^https?://", max_length=2000)]] = None
        ready_url: Optional[Annotated[StrictStr, Field(pattern=r"^https?://", max_length=2000)]] = None
        gpus: Optional[Annotated[StrictInt, Field(ge=1, le=100_000)]] = None
        timeout_s: Optional[Annotated[float, Field(gt=0, le=86_400, allow_inf_nan=False)]] = None
        stop_grace_s: Optional[Annotated[float, Field(ge=0, le=3_600, allow_inf_nan=False)]] = None

    return RecipeFile


def recipe_from_file(path: str) -> Recipe:
    """A recipe YAML file, bounded and validated (one-line error on anything wrong)."""
    from gpuparity.validate import decode_text, load_yaml, parse, read_bounded

    data = load_yaml(decode_text(read_bounded(path, 1 << 20, "serve recipe"), path), path)
    r = parse(_recipe_model(), data if data is not None else {}, path)
    from gpuparity.workloads.serving.server_info import split_command

    command = split_command(r.command) if isinstance(r.command, str) else list(r.command)
    return _checked(Recipe(command=command, env={k: str(v) for k, v in (r.env or {}).items()}, url=r.url,
                           ready_url=r.ready_url, gpus=r.gpus, timeout_s=r.timeout_s or DEFAULT_READY_S,
                           stop_grace_s=DEFAULT_GRACE_S if r.stop_grace_s is None else r.stop_grace_s,
                           source=os.path.basename(path)))


def recipe_from_command(text: str) -> Recipe:
    from gpuparity.workloads.serving.server_info import split_command

    return _checked(Recipe(command=split_command(text)))


def _checked(r: Recipe) -> Recipe:
    from gpuparity.validate import check_utf8

    if not r.command or not r.command[0].strip():
        raise UserError(f"{r.source}: the serve command is empty")
    for arg in r.command:
        check_utf8(arg, "the serve command")
        if "\x00" in arg:
            raise UserError("the serve command holds a NUL character")
    return r


def port_of(command: list[str]) -> int | None:
    for i, arg in enumerate(command):
        flag, eq, value = arg.partition("=")
        if flag == "--port":
            value = value if eq else (command[i + 1] if i + 1 < len(command) else "")
            return int(value) if value.isdigit() and 0 < int(value) < 65536 else None
    return None


def settle_url(recipe: Recipe, given: str | None) -> str:
    """The server's OpenAI base URL: --set url=, the recipe's url, or 127.0.0.1 at its --port."""
    mine = recipe.url or (f"http://127.0.0.1:{port_of(recipe.command)}/v1" if port_of(recipe.command) else None)
    if given and recipe.url and given.rstrip("/") != recipe.url.rstrip("/"):
        raise UserError(f"--set url={given} and the recipe's url {recipe.url} differ: give one")
    url = given or mine
    if not url:
        raise UserError("where will the server listen? give --set url=http://HOST:PORT/v1, url: in the recipe, "
                        "or --port N in the command")
    return url.rstrip("/")


def _shown_command(command: list[str]) -> list[str]:
    """The command as recorded: a URL's password masked, the value after a secret flag hidden."""
    from gpuparity.validate import mask_secrets

    out = []
    for i, arg in enumerate(command):
        hide = i > 0 and command[i - 1] in SECRET_FLAGS
        flag, eq, _ = arg.partition("=")
        out.append("***" if hide else f"{flag}=***" if eq and flag in SECRET_FLAGS else mask_secrets(arg))
    return out


def shown_env(env: dict[str, str]) -> dict[str, str]:
    return {k: ("***" if SECRET.search(k) else v) for k, v in env.items()}


def visible_devices(env: dict[str, str]) -> dict[str, str]:
    """The device lists the server sees: the recipe's, else this process's (it inherits them)."""
    return {k: (env.get(k) if k in env else os.environ.get(k)) for k in VISIBLE
            if (env.get(k) if k in env else os.environ.get(k)) is not None}


class Launched:
    """A server process started from a recipe (see the module notes)."""

    def __init__(self, recipe: Recipe, url: str, say=print):
        self.recipe, self.url, self.say = recipe, url, say
        self.dir = tempfile.mkdtemp(prefix="gpuparity-serve-")
        self.log_path = os.path.join(self.dir, "server.log")
        self.status_path = os.path.join(self.dir, "status.json")
        self.proc: subprocess.Popen | None = None
        self.ready_s: float | None = None
        self.stopping = False

    def start(self) -> None:
        log = open(self.log_path, "wb")
        try:
            self.proc = subprocess.Popen(self.recipe.command, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, env={**os.environ, **self.recipe.env},
                                         start_new_session=True)
        except OSError as exc:
            raise UserError(f"cannot start the server ({self.recipe.command[0]}): {exc.strerror or exc}") from None
        finally:
            log.close()
        self.watcher = threading.Thread(target=self._watch, name="gpuparity-serve-watch", daemon=True)
        self.watcher.start()

    def _watch(self) -> None:
        code = self.proc.wait()
        status = {"exit_code": code, "at": time.time(), "stopped_by_gpuparity": self.stopping,
                  "log_tail": self.tail()}
        try:
            with open(self.status_path + ".tmp", "w", encoding="utf-8") as fh:
                json.dump(status, fh)
            os.replace(self.status_path + ".tmp", self.status_path)
        except OSError:         # the run ended and removed the folder: nobody reads it any more
            pass

    def tail(self, n: int = TAIL_BYTES) -> str:
        from gpuparity.workloads.serving.wire import one_line

        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(max(0, os.path.getsize(self.log_path) - n))
                return one_line(fh.read().decode("utf-8", "replace").strip(), n)
        except OSError:
            return ""

    def wait_ready(self) -> None:
        import httpx

        from gpuparity.workloads.serving.server_info import server_root

        urls = [self.recipe.ready_url] if self.recipe.ready_url else [server_root(self.url) + "/health",
                                                                        self.url + "/models"]
        t0 = time.monotonic()
        deadline = t0 + self.recipe.timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise UserError(f"the server exited with code {self.proc.returncode} before it was ready; "
                                f"its log ends: {self.tail(1500)}")
            for u in urls:
                try:
                    if httpx.get(u, timeout=2.0).status_code == 200:
                        self.ready_s = time.monotonic() - t0
                        return
                except httpx.HTTPError:
                    pass
            time.sleep(0.25)
        raise UserError(f"the server was not ready within {self.recipe.timeout_s:g} s ({' or '.join(urls)}); "
                        f"its log ends: {self.tail(1500)}")

    def stop(self) -> str:
        """SIGTERM to the process group, SIGKILL after the grace; how it ended, in words."""
        if self.proc is None or self.proc.poll() is not None:
            return f"had exited (code {self.proc.returncode if self.proc else '?'})"
        self.stopping = True
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return "had exited"
        try:
            self.proc.wait(timeout=self.recipe.stop_grace_s)
            return f"stopped by SIGTERM (code {self.proc.returncode})"
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=30)
            return f"killed (SIGKILL) after {self.recipe.stop_grace_s:g} s of SIGTERM"

    def record(self) -> dict:
        return {"source": self.recipe.source, "command": _shown_command(self.recipe.command),
                "env": shown_env(self.recipe.env), "url": self.url, "gpus": self.recipe.gpus,
                "visible_devices": visible_devices(self.recipe.env) or None, "host": socket.gethostname(),
                "pid": self.proc.pid if self.proc else None,
                "ready_s": round(self.ready_s, 3) if self.ready_s is not None else None,
                "status_file": self.status_path}

    def cleanup(self) -> None:
        import shutil

        if getattr(self, "watcher", None) is not None:
            self.watcher.join(timeout=5)
        shutil.rmtree(self.dir, ignore_errors=True)


@contextmanager
def launched(recipe: Recipe, url: str, say=print):
    """The server started and ready for the block, its record yielded; stopped (and its files removed)
    whatever happens in the block."""
    server = Launched(recipe, url, say)
    say(f"launching the server: {' '.join(_shown_command(recipe.command))}")
    try:
        server.start()
        server.wait_ready()
        say(f"server ready after {server.ready_s:.1f} s at {url}")
        yield server
    finally:
        how = server.stop()
        if server.proc is not None:
            say(f"server {how}")
        server.cleanup()


def server_status(launch: dict | None) -> dict | None:
    """The launched server's exit (exit_code, log_tail, stopped_by_gpuparity) once it has exited,
    None while it runs (or without a launch); read from the watcher's status file, validated."""
    path = (launch or {}).get("status_file")
    if not path or not os.path.exists(path):
        return None
    from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr

    from gpuparity.validate import parse, read_bounded

    class Status(BaseModel):
        model_config = ConfigDict(extra="ignore")
        exit_code: StrictInt
        stopped_by_gpuparity: StrictBool = False
        log_tail: StrictStr = Field("", max_length=TAIL_BYTES + 10)

    from gpuparity.validate import parse_json

    try:
        return parse(Status, parse_json(read_bounded(path, 1 << 16, "server status"), path), path).model_dump()
    except UserError:
        return None
