"""Which store a name means: the default store, a SQLite path or a PostgreSQL URL, checked before
any work (check_url), its password left out where it is kept (without_password), and the files
of a SQLite store that no output may be written over (store_files)."""

from __future__ import annotations

import os
import re

from gpuparity.errors import UserError


def default_db() -> str:
    env = os.environ.get("GPUPARITY_DB")
    if env:
        return env
    from platformdirs import user_data_dir

    return os.path.join(user_data_dir("gpuparity"), "gpuparity.db")


def is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://", "postgresql+psycopg://"))


def check_url(url: str, what: str = "--db") -> str:
    """A store named on the command line, in the environment or by a caller: refused (one line,
    before any work) when it is empty, not valid UTF-8, SQLite's :memory: (nothing would be kept)
    or a PostgreSQL URL whose host or port cannot be read (never measured and then spooled).
    Returns it. A password in it never appears in the message."""
    from gpuparity.validate import check_utf8, mask_secrets

    if not url or not url.strip():
        raise UserError(f"{what} is empty: give a SQLite file or a postgresql:// URL")
    check_utf8(url, f"{what} {mask_secrets(url)[:200]}")
    if is_postgres(url):
        if re.search(r"%(?![0-9A-Fa-f]{2})", url):     # libpq cannot read it: it would never connect
            raise UserError(f"{what} {mask_secrets(url)}: a % not followed by two hex digits (a % in a password "
                            "is written %25)")
        rest = url.split("://", 1)[1]
        hosts = re.split(r"[/?]", rest, maxsplit=1)[0].rpartition("@")[2]
        for host in hosts.split(",") if hosts else []:      # libpq takes several: h1:5432,h2:5433
            if host.startswith("["):
                end = host.find("]")
                if end < 0:
                    raise UserError(f"{what} {mask_secrets(url)}: an IPv6 host needs its closing ]")
                after = host[end + 1:]
                if after and not after.startswith(":"):
                    raise UserError(f"{what} {mask_secrets(url)}: text after an IPv6 host's ] is not :PORT")
                port = after[1:]
            else:
                port = host.partition(":")[2]
            if port and not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
                raise UserError(f"{what} {mask_secrets(url)}: port '{port[:20]}' is not a port number (1-65535)")
        return url
    if url.removeprefix("sqlite:///").strip() in (":memory:", "") or url.startswith("file::memory:"):
        raise UserError(f"{what} {url}: an in-memory store keeps nothing: give a SQLite file or a postgresql:// URL")
    return url


# libpq's connection parameters that hold a secret (a URI's query names them, %-escapes decoded);
# passfile, sslkey and service name files, which keep their secrets out of the URL.
SECRET_KEYS = ("password", "sslpassword")


def url_secrets(url: str) -> list[str]:
    """Where a postgresql:// URL holds a secret: 'user:password@' and each query key of SECRET_KEYS
    (?password=...), as libpq reads them (keys %-decoded, any case refused). ValueError: no URL."""
    import urllib.parse

    rest = url.split("://", 1)[-1]
    userinfo = re.match(r"[^@/]*@", rest)           # libpq: up to the first '@' met before a '/'
    found = ["user:password@"] if (userinfo and ":" in userinfo.group()) or \
        urllib.parse.urlsplit(url).password is not None else []
    query = rest.partition("?")[2]                  # libpq knows no #fragment: all of it is the query
    found += [f"the {k} parameter" for k in dict.fromkeys(
        key.lower() for key, _ in urllib.parse.parse_qsl(query, keep_blank_values=True)) if k in SECRET_KEYS]
    return found


def hide_password(text: str, url: str) -> str:
    """Text about a store (a driver's error) with every URL password masked, and the store's own
    password, as typed or decoded, shown as ***: libpq repeats one it cannot parse (a bad %-escape)."""
    import urllib.parse

    from gpuparity.validate import mask_secrets

    text = mask_secrets(text)
    if not is_postgres(url):
        return text
    netloc, _, query = url.split("://", 1)[1].partition("?")
    userinfo = netloc.partition("/")[0].rpartition("@")[0]
    found = [userinfo.partition(":")[2]] if ":" in userinfo else []
    found += [value for key, _, value in (p.partition("=") for p in query.split("&"))
              if urllib.parse.unquote(key).lower() in SECRET_KEYS]
    for secret in sorted({s for f in found for s in (f, urllib.parse.unquote(f)) if s}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def without_password(url: str) -> str:
    """A store URL fit to keep (a run's journal): its password left out, so that reconnecting takes
    it from PGPASSWORD, ~/.pgpass or a service file, as libpq does."""
    import urllib.parse

    if not is_postgres(url):
        return url
    url = re.sub(r"(://[^:/@\s]*):[^\s]*@", r"\1@", url)
    base, _, query = url.partition("?")
    if not query:
        return base
    kept = [(k, v) for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True) if k.lower() not in SECRET_KEYS]
    return base + ("?" + urllib.parse.urlencode(kept) if kept else "")


def store_files(url: str | None = None) -> list[tuple[str, str]]:
    """(what, path) of a SQLite store's files (its -wal, -shm and -journal too): what no output may
    be written over. A PostgreSQL store has none."""
    url = url or default_db()
    if is_postgres(url):
        return []
    path = url.removeprefix("sqlite:///")
    out = [("the store", path)]
    for base in dict.fromkeys((path, os.path.realpath(path))):    # SQLite keeps them beside the real file
        out += [(f"the store's {end} file", base + end) for end in ("-wal", "-shm", "-journal")]
    return out
