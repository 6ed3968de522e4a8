"""Default prices per GPU-hour (``data/gpu_prices.yaml``: provider, page and date per entry) and user overrides."""

from __future__ import annotations

from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from .._data import load_validated
from .._paths import shipped
from .result import Price


class PriceEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    gpu: str
    usd_per_gpu_hour: float = Field(gt=0, le=1000)
    source: str = Field(min_length=8)
    source_date: str
    provider: str
    quote: str
    derived: str | None = None
    notes: str | None = None


class MissingPrice(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    gpu: str
    why: str


class PricesFile(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    schema_version: int
    currency: str
    as_of: str
    basis: str
    prices: list[PriceEntry]
    missing: list[MissingPrice] = Field(default_factory=list)


@cache
def prices() -> PricesFile:
    return load_validated(shipped("data") / "gpu_prices.yaml", PricesFile)


def parse_overrides(text: str | None) -> dict[str, float] | float | None:
    """``--price-per-gpu-hour``: one number for every GPU, or ``GPU=price,GPU=price``. Bad text raises RequestError."""
    from ..errors import RequestError
    from ..hardware import lookup_gpu

    if text is None or not str(text).strip():
        return None
    text = str(text).strip()
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is not None:
        if not (0 <= value <= 1000):
            raise RequestError(f"--price-per-gpu-hour {text}: give a price between 0 and 1000 USD per GPU-hour.")
        return value
    out: dict[str, float] = {}
    for part in text.split(","):
        name, sep, price = part.partition("=")
        if not sep:
            raise RequestError(f"--price-per-gpu-hour: '{part}' is neither a number nor GPU=PRICE (e.g. H100-80GB=2.5,L40S=0.9).")
        try:
            p = float(price)
        except ValueError:
            raise RequestError(f"--price-per-gpu-hour: '{price}' is not a number (in '{part}').") from None
        if not (0 <= p <= 1000):
            raise RequestError(f"--price-per-gpu-hour: {p} for {name} is outside 0..1000 USD per GPU-hour.")
        out[lookup_gpu(name.strip()).name] = p
    return out


def price_for(gpu: str, overrides: dict[str, float] | float | None) -> Price | None:
    """The price of one GPU-hour of ``gpu`` (catalog name): the user's override first, else the shipped default."""
    if isinstance(overrides, float):
        return Price(usd_per_gpu_hour=overrides, source="request (--price-per-gpu-hour)")
    if isinstance(overrides, dict) and gpu in overrides:
        return Price(usd_per_gpu_hour=overrides[gpu], source="request (--price-per-gpu-hour)")
    for e in prices().prices:
        if e.gpu == gpu:
            return Price(usd_per_gpu_hour=e.usd_per_gpu_hour,
                         source=f"catalog default: {e.provider} on-demand, {e.source_date} ({e.source.split(' ')[0]})")
    return None
