"""Price book, config file and --price overrides; $ per million tokens."""

from __future__ import annotations

import pytest

from gpuparity.errors import UserError
from gpuparity.platform.prices import (
    PriceBook,
    config_path,
    parse_price_args,
    price_book,
    usd_per_million_tokens,
)


@pytest.fixture
def config_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    return tmp_path / "cfg"


def test_price_book_bases_and_precedence(config_home):
    book = price_book()
    assert book[("mi300x", "neocloud")]["usd_per_gpu_hour"] > 0
    assert ("gb200", "on-demand-typical") not in book            # empty cell: no price, not zero
    for basis in ("hyperscaler", "neocloud", "3yr-rental", "on-demand-typical"):
        price, source = PriceBook(basis).price("h100-sxm")
        assert price == book[("h100-sxm", basis)]["usd_per_gpu_hour"] and basis in source
    price, source = PriceBook("on-demand-typical").price("gb200")
    assert price is None and "--price gb200=" in source

    path = config_home / "gpuparity" / "config.toml"
    assert config_path() == str(path)
    path.parent.mkdir(parents=True)
    path.write_text('[prices]\nmi300x = 1.75\nh100 = 2.5\n')
    pb = PriceBook("neocloud")
    assert pb.price("mi300x") == (1.75, f"config {path}")
    assert pb.price("h100-sxm")[0] == 2.5                     # loose name resolved to the spec id
    pb = PriceBook("neocloud", parse_price_args(["mi300x=1.1", "CPU=0.2"]))
    assert pb.price("mi300x") == (1.1, "--price") and pb.price("cpu") == (0.2, "--price")


def test_bad_prices_are_user_errors(config_home):
    for bad in (["mi300x"], ["mi300x=abc"], ["mi300x=0"], ["mi300x=nan"]):
        with pytest.raises(UserError):
            parse_price_args(bad)
    with pytest.raises(UserError, match="price basis"):
        PriceBook("spot")
    path = config_home / "gpuparity" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text("[prices\nmi300x = ")
    with pytest.raises(UserError, match="TOML"):
        PriceBook()
    path.write_text("[prices]\nmi300x = 'cheap'\n")
    with pytest.raises(UserError, match="number"):
        PriceBook()


def test_usd_per_million_tokens():
    assert usd_per_million_tokens(3.6, 1000.0) == pytest.approx(1.0)
    assert usd_per_million_tokens(None, 1000.0) is None and usd_per_million_tokens(2.0, 0) is None
