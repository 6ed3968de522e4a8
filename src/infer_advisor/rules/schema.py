"""The rule language: small, boring, validated. Conditions and effects are data, never expressions.

A rule file is ``{rules: [Rule, ...]}``. A rule::

    - id: gate.bf16-needs-ampere          # unique; a user rule with the same id replaces the shipped one
      decides: dtype                      # engine | dtype | kv_cache_dtype | quantization | layout
      when:                               # a Condition (default: always)
        kind: compare
        fact: gpu.compute_capability
        op: lt
        value: 8.0
      effect: forbid                      # forbid | prefer | require
      value: bfloat16                     # the option it applies to (layout rules: omitted, the candidate)
      reason: bf16 needs compute capability 8.0 or newer.
      source: CUDA programming guide, bf16 arithmetic support

Condition kinds: ``always``, ``compare`` (fact op value; value may be ``{fact: other.fact}``),
``in`` (fact in values), ``divides`` (the product of ``divisor`` operands divides ``dividend``),
``all`` / ``any`` (of a list), ``not`` (of one).
"""


import re
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StrictInt, field_validator, model_validator

Scalar = Union[bool, int, float, str, None]


class FactRef(BaseModel):
    """A reference to another fact, used where a literal value would go."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    fact: str


Operand = Union[FactRef, Scalar]


class Always(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    kind: Literal["always"]


class Compare(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    kind: Literal["compare"]
    fact: str
    op: Literal["eq", "ne", "lt", "le", "gt", "ge"]
    value: Operand

    @model_validator(mode="after")
    def _orders_numbers(self):
        if self.op in ("lt", "le", "gt", "ge") and not isinstance(self.value, FactRef):
            if isinstance(self.value, bool) or not isinstance(self.value, (int, float)):
                raise ValueError(
                    f"op '{self.op}' orders numbers; value {self.value!r} is not a number (quote nothing: 8.0, not '8.0')"
                )
        return self


class In(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    kind: Literal["in"]
    fact: str
    values: list[Scalar] = Field(min_length=1)


DivOperand = Union[FactRef, StrictInt]  # whole numbers or facts: '4', 4.0 and true are refused


class Divides(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    kind: Literal["divides"]
    divisor: list[DivOperand] = Field(min_length=1, description="Multiplied together.")
    dividend: DivOperand

    @field_validator("divisor", mode="before")
    @classmethod
    def _listify(cls, v):
        return v if isinstance(v, list) else [v]


class AllOf(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    kind: Literal["all"]
    of: list["Condition"] = Field(min_length=1)


class AnyOf(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    kind: Literal["any"]
    of: list["Condition"] = Field(min_length=1)


class Not(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    kind: Literal["not"]
    of: "Condition"


# The three recursive kinds name Condition before it exists; being deferred, they resolve it from this module when
# first used (an explicit model_rebuild() here built their schemas on every start, rules read from a snapshot or not).
Condition = Annotated[Union[Always, Compare, In, Divides, AllOf, AnyOf, Not], Field(discriminator="kind")]

Decides = Literal["engine", "dtype", "kv_cache_dtype", "quantization", "layout"]
_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    id: str = Field(description="Unique, lower-case, dotted: area.topic.detail.")
    decides: Decides
    when: Condition = Field(default_factory=lambda: Always(kind="always"))
    effect: Literal["forbid", "prefer", "require"]
    value: Scalar = Field(default=None, description="Option the effect applies to; omitted for layout rules.")
    score: float = Field(
        default=0, allow_inf_nan=False, description="prefer: added to the option's score (negative discourages)."
    )
    reason: str = Field(min_length=1, description="One sentence shown with the decision.")
    source: str = Field(min_length=1, description="Where the fact behind the rule comes from.")
    _origin: str = PrivateAttr(default="rules")  # the file the rule was loaded from, for errors at evaluation

    @field_validator("score", mode="before")
    @classmethod
    def _score_is_a_number(cls, v):
        if isinstance(v, bool):  # `score: true` was read as 1
            raise ValueError("score is a number, not true/false")
        return v

    @field_validator("id")
    @classmethod
    def _id_shape(cls, v: str) -> str:
        if not _ID.match(v):
            raise ValueError("id must be lower-case letters, digits, '.', '_' or '-'")
        return v

    @field_validator("reason")
    @classmethod
    def _reason_not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("reason must not be empty")
        return v

    @model_validator(mode="after")
    def _shape(self):
        if self.decides == "layout":
            if self.value is not None:
                raise ValueError("layout rules apply to the candidate layout: leave 'value' out")
            if self.effect == "require":
                raise ValueError("layout rules can forbid or prefer, not require")
        elif self.value is None:
            raise ValueError(f"'{self.decides}' rules need a 'value' (the option they forbid, prefer or require)")
        else:
            options = decision_options(self.decides)
            if not isinstance(self.value, str) or self.value not in options:
                shown = f"'{self.value}'" if isinstance(self.value, str) else f"{self.value!r} (YAML read it as {type(self.value).__name__})"
                raise ValueError(f"value {shown} is not a {self.decides} option; choose from {', '.join(options)}")
        if self.effect == "prefer" and self.score == 0:
            raise ValueError("prefer rules need a non-zero 'score'")
        return self


def decision_options(decides: str) -> tuple[str, ...]:
    """The options a rule of ``decides`` may name: what `infer-advisor plan` can be asked for (less 'auto'); for
    quantization also every weight format of data/formats.yaml, since a pre-quantized checkpoint's own format
    (fp8-block, mxfp4-experts, nvfp4, ...) is judged by the same rules although it is never asked for."""
    from typing import get_args

    from ..request import DTypeChoice, EngineChoice, KVDTypeChoice, QuantChoice

    choice = {"engine": EngineChoice, "dtype": DTypeChoice, "kv_cache_dtype": KVDTypeChoice, "quantization": QuantChoice}
    values = get_args(choice[decides])
    if decides == "kv_cache_dtype":
        return values
    values = tuple(v for v in values if v != "auto")
    if decides == "quantization":
        from ..estimate.formats import formats

        values += tuple(f for f in formats().formats if f not in values)
    return values


class RuleFile(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    rules: list[Rule]
