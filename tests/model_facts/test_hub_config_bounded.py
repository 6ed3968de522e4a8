"""A Hub repository's config.json is read through the bounded reader (secaudit, session 8: every read is bounded): a
config.json over the 16 MiB a config may hold is one error line, not a whole file read into memory."""

from __future__ import annotations

import json

import pytest

from infer_advisor.errors import InferAdvisorError
from infer_advisor.model_facts import resolve_model
from tests.model_facts.hub_server import Repo
from tests.model_facts.test_hub_source import SMALL


def test_an_oversized_hub_config_is_refused(fake_hub):
    big = json.dumps(SMALL).encode()[:-1] + b', "pad": "' + b"x" * (17 * 2**20) + b'"}'
    fake_hub.repos["org/huge-config"] = Repo(files={"config.json": big})
    with pytest.raises(InferAdvisorError, match="16 MiB"):
        resolve_model("org/huge-config")
