"""`run serving --serve-cmd "..."` / `--serve-recipe FILE`: the server gpuparity starts for the run,
checked before anything starts, launched around the sweep (workloads/serving/launch.py)."""

from __future__ import annotations

from contextlib import contextmanager, nullcontext

from gpuparity.errors import UserError


def serve_recipe(serve_cmd: str | None, recipe_file: str | None, workloads: list, options: dict):
    """The recipe (None without one), with the URL and GPUs it gives put into options and every
    serving setting checked (the server is not asked yet)."""
    if serve_cmd is None and recipe_file is None:
        return None
    if serve_cmd is not None and recipe_file is not None:
        raise UserError("--serve-cmd and --serve-recipe exclude each other: the recipe file holds the command")
    if [w.name for w in workloads] != ["serving"]:
        raise UserError("--serve-cmd / --serve-recipe launch the server of a serving run: gpuparity run serving ...")
    from gpuparity.workloads.serving.launch import recipe_from_command, recipe_from_file, settle_url

    recipe = recipe_from_command(serve_cmd) if serve_cmd is not None else recipe_from_file(recipe_file)
    options["url"] = settle_url(recipe, options.get("url"))
    if recipe.gpus and options.get("gpus") and str(recipe.gpus) != str(options["gpus"]).strip():
        raise UserError(f"--set gpus={options['gpus']} and the recipe's gpus: {recipe.gpus} differ: give one")
    if recipe.gpus and not options.get("gpus"):
        options["gpus"] = str(recipe.gpus)
    workloads[0].check_options(options)
    return recipe


@contextmanager
def serving_server(recipe, options: dict, console):
    """The launched server for the block (its record in options["serve_launch"]), or nothing."""
    if recipe is None:
        with nullcontext():
            yield None
        return
    from gpuparity.cli.common import escape
    from gpuparity.workloads.serving.launch import launched

    with launched(recipe, options["url"], say=lambda text: console.print(escape(text))) as server:
        options["serve_launch"] = server.record()
        try:
            yield server
        finally:
            options.pop("serve_launch", None)
