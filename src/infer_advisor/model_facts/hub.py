"""The Hugging Face Hub source: config.json and safetensors headers, never weights.

``HF_ENDPOINT``, ``HF_TOKEN`` and ``HF_HUB_OFFLINE`` are read through :mod:`infer_advisor.constants` at
call time. Before importing huggingface_hub, :func:`hub_available` checks the endpoint answers a TCP
connect within :data:`CONNECT_TIMEOUT_S`, so an offline machine falls through in milliseconds. The token
goes only into the Authorization header huggingface_hub sends; nothing here writes it anywhere.

    config, summary = fetch_from_hub("meta-llama/Llama-2-7b-hf")
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

from .. import constants
from ..errors import HubError, ModelConfigError
from .facts import SafetensorsSummary

# A Hub repository id: owner/name, each 1-96 of letters, digits, '-', '_', '.' (Hub naming rules). The lengths are
# checked in is_repo_id: a bounded repeat ({0,95}) in the pattern costs ~7 ms to compile on every start.
_REPO_ID = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.\-]*)/([A-Za-z0-9][A-Za-z0-9_.\-]*)$")
REPO_ID_PART_CHARS = 96


def is_repo_id(name: str) -> bool:
    """``owner/name`` as the Hub accepts it (the form only: no '..' check, no lookup)."""
    m = _REPO_ID.match(name)
    return bool(m) and len(m.group(1)) <= REPO_ID_PART_CHARS and len(m.group(2)) <= REPO_ID_PART_CHARS

# A reachable Hub answers a TCP connect in well under a second; an offline machine must not wait longer.
CONNECT_TIMEOUT_S = 1.0
_reachable: dict[tuple[str, int], bool] = {}


class HubNotFound(Exception):
    """The Hub answered that the repository, revision or config.json does not exist (404)."""


class HubDenied(Exception):
    """The Hub refused the request (401/403, or a gated repository without access)."""


def _host_port(endpoint: str) -> tuple[str, int]:
    parts = urlsplit(endpoint)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return parts.hostname or "", port


def _connect_target(endpoint: str) -> tuple[str, int]:
    """Where a request to ``endpoint`` first connects: the proxy from HTTPS_PROXY/HTTP_PROXY when one applies."""
    from urllib.request import getproxies, proxy_bypass

    host, port = _host_port(endpoint)
    proxy = getproxies().get(urlsplit(endpoint).scheme)
    if proxy and not proxy_bypass(host):
        return _host_port(proxy if "://" in proxy else f"http://{proxy}")
    return host, port


def hub_available() -> bool:
    """Not offline, and the endpoint (or its proxy) accepts a TCP connection (result cached per host in-process)."""
    if constants.offline():
        return False
    key = _connect_target(constants.hf_endpoint())
    if key not in _reachable:
        import socket  # only here: an offline plan never opens one (socket and selectors are a millisecond to import)

        try:
            with socket.create_connection(key, timeout=CONNECT_TIMEOUT_S):
                _reachable[key] = True
        except OSError:
            _reachable[key] = False
    return _reachable[key]


def _cache_dir() -> str:
    return str(constants.cache_dir() / "hub")


def _chain(err: BaseException):
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        yield err
        err = err.__cause__ or err.__context__


def _status(err: BaseException) -> int | None:
    """The HTTP status of the first response found along the exception chain, if any."""
    for e in _chain(err):
        status = getattr(getattr(e, "response", None), "status_code", None)
        if isinstance(status, int):
            return status
    return None


def _root_cause(err: BaseException) -> str:
    last = list(_chain(err))[-1]
    return f"{type(last).__name__}: {str(last).splitlines()[0] if str(last) else ''}".rstrip(": ")


def fetch_from_hub(repo_id: str, revision: str | None = None) -> tuple[dict[str, Any], SafetensorsSummary | None]:
    """config.json and the safetensors header summary of ``repo_id``.

    Raises :class:`HubNotFound` (404), :class:`HubDenied` (401/403/gated), :class:`HubError` (anything
    else that went wrong talking to the Hub) and :class:`ModelConfigError` (unparsable config or header).
    """
    from huggingface_hub import HfApi, hf_hub_download
    from huggingface_hub import errors as hf_errors

    endpoint = constants.hf_endpoint()
    token = constants.hf_token() or False  # False: never fall back to a token file huggingface_hub may find
    where = f"{endpoint}/{repo_id}"
    try:
        path = hf_hub_download(
            repo_id, "config.json", revision=revision, token=token, endpoint=endpoint, cache_dir=_cache_dir()
        )
        from ..bounded_read import read_text_bounded

        text = read_text_bounded(path, "config")  # a Hub repo's config.json: at most 16 MiB, never a whole large file
        summary = None
        try:
            meta = HfApi(endpoint=endpoint, token=token).get_safetensors_metadata(repo_id, revision=revision)
        except hf_errors.NotASafetensorsRepoError:
            meta = None
        except hf_errors.SafetensorsParsingError as err:
            raise ModelConfigError(f"{where} (safetensors header)", str(err).splitlines()[0]) from None
        if meta is not None:
            from .safetensors_header import summarize_hub

            summary = summarize_hub(meta.files_metadata)
    except hf_errors.LocalEntryNotFoundError as err:  # hf_hub_download wraps the failed HEAD request
        status = _status(err)
        if status in (401, 403):
            raise HubDenied(f"the Hub refused access to '{repo_id}' (HTTP {status})") from None
        if status is not None:
            raise HubError(f"Hub request for '{repo_id}' failed (HTTP {status}) at {endpoint}") from None
        raise HubError(
            f"could not reach {endpoint} for '{repo_id}' ({_root_cause(err)}). "
            "Set HF_HUB_OFFLINE=1 to use the catalog only."
        ) from None
    except hf_errors.GatedRepoError:
        raise HubDenied(f"'{repo_id}' is gated and this token has no access") from None
    except (
        hf_errors.RepositoryNotFoundError,
        hf_errors.RevisionNotFoundError,
        hf_errors.RemoteEntryNotFoundError,
    ) as err:
        status = getattr(getattr(err, "response", None), "status_code", None)
        if status in (401, 403):
            raise HubDenied(f"the Hub refused access to '{repo_id}' (HTTP {status})") from None
        raise HubNotFound(str(err).splitlines()[0]) from None
    except hf_errors.HfHubHTTPError as err:
        status = getattr(getattr(err, "response", None), "status_code", None)
        if status in (401, 403):
            raise HubDenied(f"the Hub refused access to '{repo_id}' (HTTP {status})") from None
        if status == 404:
            raise HubNotFound(str(err).splitlines()[0]) from None
        raise HubError(f"Hub request for '{repo_id}' failed (HTTP {status}): {str(err).splitlines()[0]}") from None
    except OSError as err:  # connection resets, timeouts (httpx errors derive from Exception, handled below)
        raise HubError(
            f"could not reach {endpoint} for '{repo_id}': {err}. Set HF_HUB_OFFLINE=1 to use the catalog only."
        ) from None
    except Exception as err:  # httpx.TransportError and friends: the network, not the user, failed
        if type(err).__module__.split(".")[0] in ("httpx", "httpcore", "httpx2", "httpcore2", "requests", "urllib3"):
            raise HubError(
                f"could not reach {endpoint} for '{repo_id}': {err}. Set HF_HUB_OFFLINE=1 to use the catalog only."
            ) from None
        raise
    try:
        config = json.loads(text)
    except json.JSONDecodeError as err:
        raise ModelConfigError(f"{where}/config.json", f"invalid JSON at line {err.lineno}: {err.msg}") from None
    return config, summary
