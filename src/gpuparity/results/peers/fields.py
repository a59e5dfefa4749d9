"""The one validation of the values in a peer's result file (vllm_bench, guidellm, aiperf): every
time finite, non-negative and bounded (1e308, or a JSON 1e400 read as infinity, is refused, not
carried into an integer conversion), every count a non-negative integer, every length positive,
every URL parsed without an exception, every figure the peer states finite and non-negative.
A value that is none of these is refused in one line naming its field (validate.parse turns a
pydantic error into that line; `refuse` does it for the values read outside a model).

The bounds are wide enough for any real run and narrow enough that the figures made from them
(integer microseconds, epoch dates) cannot overflow: a latency or a duration is at most 1e9 s
(31 years), an epoch time at most 1e11 s (the year 5138), a count at most 1e12.
"""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import AfterValidator, Field, StrictFloat, StrictInt, StrictStr

MAX_SECONDS = 1e9
MAX_EPOCH_S = 1e11
MAX_COUNT = 10**12
MAX_FIGURE = 1e15          # any figure a peer states (ms, tokens/s, counts)

Number = StrictFloat | StrictInt
Seconds = Annotated[Number, Field(ge=0, le=MAX_SECONDS, allow_inf_nan=False)]
Millis = Annotated[Number, Field(ge=0, le=MAX_SECONDS * 1e3, allow_inf_nan=False)]
EpochSeconds = Annotated[Number, Field(ge=0, le=MAX_EPOCH_S, allow_inf_nan=False)]
EpochNs = Annotated[StrictInt, Field(ge=0, le=int(MAX_EPOCH_S * 1e9))]
Count = Annotated[StrictInt, Field(ge=0, le=MAX_COUNT)]
Length = Annotated[StrictInt, Field(ge=1, le=MAX_COUNT)]
Positive = Annotated[Number, Field(gt=0, le=MAX_FIGURE, allow_inf_nan=False)]
Figure = Annotated[Number, Field(ge=0, le=MAX_FIGURE, allow_inf_nan=False)]


def refuse(origin: str, field: str, message: str):
    from gpuparity.errors import UserError

    raise UserError(f"{origin}: {field}: {message}"[:500])


def _url_problem(text: str) -> str | None:
    """Why `text` is not a URL gpuparity can store and print (None: it is one)."""
    from urllib.parse import urlsplit

    from gpuparity.validate import terminal_safe

    if terminal_safe(text) != text:
        return "holds control characters"
    try:
        parts = urlsplit(text if "//" in text else "//" + text)
        parts.hostname, parts.port            # noqa: B018 - both raise ValueError on a broken netloc
    except ValueError as exc:
        return f"not a URL ({exc})"
    return None


def _check_url(text: str) -> str:
    problem = _url_problem(text)
    if problem:
        raise ValueError(problem)
    return text


Url = Annotated[StrictStr, Field(max_length=2000), AfterValidator(_check_url)]


def url_parts(text, origin: str, field: str) -> tuple[str | None, str | None]:
    """(the URL without any user:password@, its host) of a URL a file states; None, None for
    none; refused in one line where it does not parse."""
    from urllib.parse import urlsplit, urlunsplit

    if text is None:
        return None, None
    if not isinstance(text, str) or len(text) > 2000:
        refuse(origin, field, "not a URL")
    problem = _url_problem(text)
    if problem:
        refuse(origin, field, problem)
    parts = urlsplit(text)
    public = urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]))
    return public, urlsplit(text if "//" in text else "//" + text).hostname


def figure(value, origin: str, field: str, positive: bool = False):
    """A figure the peer states: a finite number in [0, MAX_FIGURE] (above 0 where `positive`),
    refused in one line otherwise; None stays None."""
    if value is None:
        return None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
        and (value > 0 if positive else value >= 0) and value <= MAX_FIGURE
    if not ok:
        refuse(origin, field, f"{str(value)[:40]} is not a {'positive' if positive else 'non-negative'} "
                              "finite number in range")
    return value


def figures(stated: dict, origin: str) -> dict:
    """Every number of a peer's stated summary checked by `figure` (a value that is no number left out)."""
    return {k: figure(v, origin, k) for k, v in stated.items() if isinstance(v, (int, float))
            and not isinstance(v, bool)}


def length(value, origin: str, field: str) -> int | None:
    """A length a file states as text or number (vLLM's --metadata input_len=N): a positive whole
    number, refused otherwise; None stays None."""
    if value is None or value == "":
        return None
    text = str(value).strip()
    if not text.isascii() or not text.isdigit() or not 0 < int(text) <= MAX_COUNT:
        refuse(origin, field, f"{text[:40]!r} is not a positive whole number")
    return int(text)


def flag(value, origin: str, field: str) -> bool | None:
    """A yes/no a file states as text (vLLM's --metadata ignore_eos=true); None stays None."""
    if value is None or value == "" or isinstance(value, bool):
        return value if isinstance(value, bool) else None
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    refuse(origin, field, f"{text[:40]!r} is not true or false")


def no_infinity(obj, origin: str) -> None:
    """Refuse a number JSON read as infinity (1e400: beyond a double) anywhere in a peer's file,
    naming where: no field of a peer's file may hold one, read or not."""
    stack = [(obj, "")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            refuse(origin, where or "top level", "a number beyond the range of a double (read as infinity)")
        elif isinstance(node, dict):
            stack.extend((v, f"{where}.{k}" if where else str(k)) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, f"{where}.{i}" if where else str(i)) for i, v in enumerate(node))
