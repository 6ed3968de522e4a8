"""Download what quantizing needs of a Hub model (config, safetensors weights, tokenizer), only when online.

Files are fetched one by one with ``hf_hub_download`` into the usual Hugging Face cache (``HF_HOME``), so a later
run reuses them; the token comes from ``HF_TOKEN`` (never a token file) and is never written anywhere.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import HubError, ModelNotFoundError

# Optional files that tokenizers and generation need beside the weights (missing ones are skipped).
SIDE_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "tokenizer.model",
    "vocab.json",
    "merges.txt",
    "added_tokens.json",
    "chat_template.jinja",
    "generation_config.json",
)


def download_model(repo_id: str) -> Path:
    """The local snapshot folder of ``repo_id`` holding config.json, the safetensors weights and tokenizer files."""
    from huggingface_hub import errors as hf_errors

    from .. import constants

    endpoint = constants.hf_endpoint()
    try:
        config = _fetch(repo_id, "config.json")
        index = _fetch(repo_id, "model.safetensors.index.json", optional=True)
        if index is not None:
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        else:
            shards = ["model.safetensors"]
        for name in shards:
            _fetch(repo_id, name)
        for name in SIDE_FILES:
            _fetch(repo_id, name, optional=True)
    except hf_errors.GatedRepoError:
        raise HubError(
            f"'{repo_id}' is gated: accept its terms on the Hub, then set HF_TOKEN to a token with access."
        ) from None
    except (hf_errors.RepositoryNotFoundError, hf_errors.RevisionNotFoundError) as err:
        raise ModelNotFoundError(repo_id, detail=f"{type(err).__name__} at {endpoint}") from None
    except hf_errors.RemoteEntryNotFoundError as err:
        raise ModelNotFoundError(repo_id, detail=f"no safetensors weights at {endpoint}: {_first_line(err)}") from None
    except (hf_errors.HfHubHTTPError, hf_errors.LocalEntryNotFoundError, OSError) as err:
        raise HubError(f"Could not download '{repo_id}' from {endpoint}: {_first_line(err)}") from None
    except Exception as err:  # httpx transport errors: the network failed, not the user
        if type(err).__module__.split(".")[0] in ("httpx", "httpcore", "httpx2", "httpcore2"):
            raise HubError(f"Could not reach {endpoint} for '{repo_id}': {_first_line(err)}") from None
        raise
    return config.parent


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _fetch(repo_id: str, filename: str, optional: bool = False) -> Path | None:
    from huggingface_hub import hf_hub_download
    from huggingface_hub import errors as hf_errors

    from .. import constants

    try:
        return Path(
            hf_hub_download(
                repo_id, filename, endpoint=constants.hf_endpoint(), token=constants.hf_token() or False
            )
        )
    except hf_errors.RemoteEntryNotFoundError:
        if optional:
            return None
        raise
