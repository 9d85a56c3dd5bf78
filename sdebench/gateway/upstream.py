"""How the gateway reaches the configured model: one call of litellm's provider mapping per agent call.

Both routes take the keyword arguments of `litellm.completion` and return litellm's normalised
`ModelResponse`, so accounting, re-encoding and logging downstream are the same; a failure is
raised as litellm's mapped exception (with its `status_code`), so the agent gets the same error.

- `DirectRoute`, for an OpenAI-compatible entry whose address is known (litellm's provider config
  for it is an `OpenAIGPTConfig`: `openai/` with `api_base`, `hosted_vllm/`, litellm's OpenAI-like
  providers): litellm's provider config builds the request (`get_optional_params`,
  `validate_environment`, `get_complete_url`, `transform_request`) and reads the reply
  (`transform_response`), with the provider and address in `litellm_params` as
  `litellm.completion` passes them (they decide, e.g., which tool-schema patterns are dropped);
  the gateway sends it with one long-lived HTTP session on its own event loop (aiohttp, as
  litellm's own async transport). `litellm.completion` around the same mapping costs 10-15 ms of
  CPU a call (a logging object, its own cost lookup, success callbacks on a thread, the OpenAI
  SDK's request building), none of which the gateway uses: it prices by the built-in agent's
  rules. The parameter mapping (`get_optional_params`: tools, max_tokens, ...) is a pure function
  of the parameters, which an agent repeats on every call, so it is kept per distinct set.
- `AnthropicRoute`, for an `anthropic/` entry with an `api_base`: the same, in the steps litellm's
  Anthropic handler takes around `AnthropicConfig` (the Messages path appended to the address,
  `validate_environment`, `transform_request`, the beta-header filter and the beta-gated body
  fields, then `transform_response` with the `litellm_params` the request recorded in, e.g. the
  tool-name map). Without `api_base` litellm.completion resolves the address (its settings, the
  environment), so such an entry takes the completion route.
- `CompletionRoute`, for every other entry (Bedrock, Vertex, Azure, OpenAI's or Anthropic's own
  address, ...): `litellm.completion` in a worker thread.

Both direct routes are checked against `litellm.completion` on the same entry: the same request
(body, path, key, Anthropic headers) and the same metering (tests/gateway/test_server.py).
"""

from __future__ import annotations

import asyncio
import datetime
import urllib.parse
import urllib.request
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import orjson

from sdebench.agents.accounting import import_litellm

# model-entry `extra` keys the direct route hands to litellm's parameter mapping as they are; any
# other key (api_version, drop_params, custom_llm_provider, ...) sends the entry through
# litellm.completion, which knows what to do with it
DIRECT_EXTRA = frozenset({
    "temperature", "top_p", "stop", "presence_penalty", "frequency_penalty", "logit_bias", "seed",
    "user", "response_format", "parallel_tool_calls", "reasoning_effort", "verbosity",
    "extra_headers", "extra_body",
})
# what _upstream_kwargs passes that is not a model parameter
_TRANSPORT = ("model", "messages", "api_base", "api_key", "timeout", "max_retries", "num_retries")
# distinct parameter sets (tools, max_tokens, ...) whose litellm mapping a route keeps: an agent
# sends the same few over a whole episode
OPTIONAL_CACHE = 32


@dataclass
class UpstreamRequest:
    """One upstream request as a provider config built it, and what its reply mapping reads back."""

    url: str
    headers: dict[str, Any]
    data: dict[str, Any]
    messages: list[Any]  # what the config was given (its own copy, where it may change them)
    optional_params: dict[str, Any] = field(default_factory=dict)
    litellm_params: dict[str, Any] = field(default_factory=dict)  # the same dict transform_request saw
    json_mode: bool | None = None


class CompletionRoute:
    """`litellm.completion` in a worker thread."""

    name = "completion"

    async def complete(self, kwargs: dict[str, Any]) -> Any:
        """One reply (litellm ModelResponse) or litellm's exception."""
        return await asyncio.to_thread(lambda: import_litellm().completion(**kwargs))

    async def aclose(self) -> None:
        """Nothing to release."""


class DirectRoute:
    """litellm's provider config for an OpenAI-compatible entry, sent with the gateway's own client."""

    name = "direct"

    def __init__(self, litellm_model: str, provider: str, api_base: str, config: Any, provider_key: str | None = None):
        self.litellm_model = litellm_model
        self.provider = provider
        self.api_base = api_base
        self.config = config
        self.provider_key = provider_key  # the key litellm found for the provider (e.g. DEEPSEEK_API_KEY)
        self._litellm = import_litellm()
        from litellm.litellm_core_utils.litellm_logging import Logging
        from litellm.utils import get_optional_params

        self._logging = Logging
        self._optional_params = get_optional_params
        self._session: Any = None  # made on the gateway's event loop, at the first call
        self._proxies: dict[str, str | None] = {}
        self._optional: OrderedDict[bytes, dict[str, Any]] = OrderedDict()
        self._requests: dict[str, Any] = {}  # the httpx.Request litellm's config reads, one per URL
        # what litellm.completion hands its provider config about the call: the provider and the
        # address decide, e.g., whether cache_control marks survive (they do on a custom api_base)
        self.litellm_params = {"custom_llm_provider": provider, "api_base": api_base}

    @classmethod
    def for_model(cls, litellm_model: str, api_base: str | None, extra: dict[str, Any]) -> DirectRoute | None:
        """The direct route of a model entry, or None if the entry needs litellm.completion."""
        from litellm.llms.openai.chat.gpt_transformation import OpenAIGPTConfig

        found = _provider_config(litellm_model, api_base, extra)
        if found is None:
            return None
        model, provider, key, base, config = found
        # OpenAI's own default address is the SDK's, not the config's: without api_base, use litellm.completion
        if not isinstance(config, OpenAIGPTConfig) or not base:
            return None
        return cls(model, provider, base, config, key)

    async def complete(self, kwargs: dict[str, Any]) -> Any:
        """One reply (litellm ModelResponse) or litellm's mapped exception."""
        import aiohttp
        import httpx

        if self._session is None:
            # aiohttp, not httpx: a fifth of the CPU a call (its parser is compiled); TCP_NODELAY by default
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        url = self.api_base
        try:
            req = self.prepare(kwargs)
            url = req.url
            timeout = aiohttp.ClientTimeout(total=kwargs.get("timeout"))
            # orjson: a third of json.dumps's CPU on a 20 kB conversation, the same JSON value
            async with self._session.post(url, data=orjson.dumps(req.data), headers=req.headers, timeout=timeout,
                                          proxy=self._proxy(url)) as r:
                body = await r.read()
                # litellm's provider config reads an httpx response
                if url not in self._requests:
                    self._requests[url] = httpx.Request("POST", url)
                raw = httpx.Response(r.status, headers=list(r.raw_headers), content=body, request=self._requests[url])
            if raw.status_code >= 400:
                raise self.config.get_error_class(raw.text, raw.status_code, raw.headers)
            # transform_response records the raw reply on a logging object; this one runs no callbacks
            log = self._logging(model=self.litellm_model, messages=req.messages, stream=False, call_type="completion",
                                start_time=datetime.datetime.now(), litellm_call_id=str(uuid.uuid4()), function_id="")
            extra = {} if req.json_mode is None else {"json_mode": req.json_mode}
            return self.config.transform_response(
                model=self.litellm_model, raw_response=raw, model_response=self._litellm.ModelResponse(),
                logging_obj=log, request_data=req.data, messages=req.messages, optional_params=req.optional_params,
                litellm_params=req.litellm_params, encoding=None, api_key=self._key(kwargs), **extra)
        except TimeoutError:
            raise self._litellm.Timeout(message=f"no reply from {url} within {kwargs.get('timeout')} s",
                                        model=self.litellm_model, llm_provider=self.provider) from None
        except aiohttp.ClientError as e:
            raise self._litellm.APIConnectionError(message=f"cannot reach {url}: {e}", llm_provider=self.provider,
                                                   model=self.litellm_model) from None
        except Exception as e:  # noqa: BLE001 - mapped to litellm's exception types, as litellm.completion raises them
            raise self._mapped(e) from None

    def _key(self, kwargs: dict[str, Any]) -> str | None:
        return kwargs.get("api_key") or self.provider_key

    def prepare(self, kwargs: dict[str, Any]) -> UpstreamRequest:
        """A call's request, as litellm's OpenAI-compatible provider config builds it."""
        params = {k: v for k, v in kwargs.items() if k not in _TRANSPORT}
        headers = dict(params.pop("extra_headers", None) or {})
        messages = kwargs["messages"]
        optional = self.optional_params(params, messages)
        extra_body = optional.pop("extra_body", None)
        key = self._key(kwargs)
        litellm_params = dict(self.litellm_params)
        headers = self.config.validate_environment(headers=headers, model=self.litellm_model, messages=messages,
                                                   optional_params=optional, litellm_params=litellm_params, api_key=key,
                                                   api_base=self.api_base)
        url = self.config.get_complete_url(api_base=self.api_base, api_key=key, model=self.litellm_model,
                                           optional_params=optional, litellm_params=litellm_params, stream=False)
        data = self.config.transform_request(model=self.litellm_model, messages=messages,
                                             optional_params=optional, litellm_params=litellm_params, headers=headers)
        if extra_body:
            data = {**data, **self.config.transform_extra_body(extra_body=extra_body, request=data,
                                                               model=self.litellm_model, litellm_params=litellm_params)}
        # the OpenAI-compatible reply mapping reads neither the parameters nor the call's litellm_params
        return UpstreamRequest(url, headers, data, messages, {}, dict(self.litellm_params))

    def optional_params(self, params: dict[str, Any], messages: list[Any]) -> dict[str, Any]:
        """litellm's mapping of a call's model parameters (a fresh dict), kept per distinct parameter set."""
        try:
            # the parameters are JSON (they came in as JSON); sorted keys make equal sets equal bytes
            key = orjson.dumps(params, option=orjson.OPT_SORT_KEYS)
        except TypeError:
            key = None
        optional = self._optional.get(key) if key is not None else None
        if optional is None:
            # get_optional_params reads the messages only for providers that rewrite them (not these)
            optional = self._optional_params(model=self.litellm_model, custom_llm_provider=self.provider,
                                             messages=messages, **params)
            optional.pop("stream", None)  # never streamed upstream
            optional.pop("stream_options", None)
            if key is not None:
                self._optional[key] = optional
                if len(self._optional) > OPTIONAL_CACHE:
                    self._optional.popitem(last=False)
        else:
            self._optional.move_to_end(key)
        # the mapping's values are the first call's objects, equal to this call's: the config may
        # set keys on the dict it gets (tools, tool_choice) but builds new values
        return dict(optional)

    def _proxy(self, url: str) -> str | None:
        # the proxy environment (HTTP(S)_PROXY, NO_PROXY) as litellm's own client would use it, read once
        # per address: aiohttp's trust_env reads it on every request (a fifth of the call's CPU)
        if url not in self._proxies:
            parts = urllib.parse.urlsplit(url)
            bypass = urllib.request.proxy_bypass(parts.hostname or "")
            self._proxies[url] = None if bypass else urllib.request.getproxies().get(parts.scheme)
        return self._proxies[url]

    def _mapped(self, e: Exception) -> BaseException:
        from litellm.litellm_core_utils.exception_mapping_utils import exception_type

        try:
            out = exception_type(model=self.litellm_model, original_exception=e, custom_llm_provider=self.provider)
        except Exception as mapped:  # noqa: BLE001 - exception_type raises the mapped exception
            return mapped
        return out if isinstance(out, BaseException) else e

    async def aclose(self) -> None:
        """Close the HTTP session (on the event loop that made it)."""
        if self._session is not None:
            await self._session.close()
            self._session = None


class AnthropicRoute(DirectRoute):
    """litellm's Anthropic Messages config for an `anthropic/` entry with an `api_base`, sent with the
    gateway's own client, in the steps litellm's Anthropic handler takes around the same config."""

    name = "direct"

    @classmethod
    def for_model(cls, litellm_model: str, api_base: str | None, extra: dict[str, Any]) -> AnthropicRoute | None:
        """The route of an Anthropic entry at a given address, or None."""
        from litellm.llms.anthropic.chat.transformation import AnthropicConfig

        # without api_base, litellm.completion resolves the address (its settings, the environment)
        found = _provider_config(litellm_model, api_base, extra) if api_base else None
        if found is None:
            return None
        model, provider, key, _, config = found
        if provider != "anthropic" or type(config) is not AnthropicConfig:
            return None
        from litellm.litellm_core_utils.url_utils import ensure_api_route
        from litellm.secret_managers.main import get_secret_bool

        # the Messages path, as litellm.completion appends it (unless told not to)
        url = api_base if get_secret_bool("LITELLM_ANTHROPIC_DISABLE_URL_SUFFIX") else ensure_api_route(api_base, "v1/messages")
        return cls(model, provider, url, config, key)

    def _key(self, kwargs: dict[str, Any]) -> str | None:
        import os

        return (kwargs.get("api_key") or self.provider_key or self._litellm.anthropic_key or self._litellm.api_key
                or os.environ.get("ANTHROPIC_API_KEY"))

    def prepare(self, kwargs: dict[str, Any]) -> UpstreamRequest:
        """A call's request, as litellm's Anthropic handler builds it from the config."""
        from litellm.anthropic_beta_gated_fields import strip_beta_gated_request_body
        from litellm.anthropic_beta_headers_manager import update_request_with_filtered_beta

        params = {k: v for k, v in kwargs.items() if k not in _TRANSPORT}
        headers = dict(params.pop("extra_headers", None) or {})
        # the config may change what it is given (the handler hands it deep copies); these are JSON
        messages = orjson.loads(orjson.dumps(kwargs["messages"]))
        optional = self.optional_params(params, kwargs["messages"])
        json_mode = optional.pop("json_mode", False)
        optional.pop("is_vertex_request", None)
        optional.pop("vertex_count_tokens_location", None)
        key = self._key(kwargs)
        litellm_params = dict(self.litellm_params)  # transform_request records in it what the reply mapping reads
        given = {**optional, "is_vertex_request": False}
        headers = self.config.validate_environment(api_key=key, headers=headers, model=self.litellm_model, messages=messages,
                                                   optional_params=dict(given), litellm_params=litellm_params,
                                                   api_base=self.api_base)
        data = self.config.transform_request(model=self.litellm_model, messages=messages, optional_params=given,
                                             litellm_params=litellm_params, headers=headers)
        headers, data = update_request_with_filtered_beta(headers=headers, request_data=data, provider=self.provider,
                                                          api_base=self.api_base)
        data = dict(strip_beta_gated_request_body(data, headers, drop_params=litellm_params.get("drop_params"),
                                                  model=self.litellm_model, provider=self.provider))
        return UpstreamRequest(self.api_base, headers, data, messages, optional, litellm_params, json_mode)


def _provider_config(litellm_model: str, api_base: str | None, extra: dict[str, Any]) -> tuple | None:
    """(model, provider, key, base, chat config) as litellm maps the entry, or None (extra keys, or
    an entry litellm cannot map: litellm.completion's to report)."""
    if set(extra) - DIRECT_EXTRA:
        return None
    litellm = import_litellm()
    from litellm.utils import ProviderConfigManager

    try:
        model, provider, key, base = litellm.get_llm_provider(litellm_model, api_base=api_base)
        config = ProviderConfigManager.get_provider_chat_config(model=model, provider=litellm.LlmProviders(provider))
    except Exception:  # noqa: BLE001 - see the docstring
        return None
    return model, provider, key, base, config


def route_for(litellm_model: str, api_base: str | None, extra: dict[str, Any], prefer: str = "auto") -> Any:
    """The route of a model entry: `auto` (direct where it applies), `direct` (or ValueError), `completion`."""
    if prefer not in ("auto", "direct", "completion"):
        raise ValueError(f"gateway route must be auto, direct or completion, got {prefer!r}")
    if prefer == "completion":
        return CompletionRoute()
    direct = DirectRoute.for_model(litellm_model, api_base, extra) or AnthropicRoute.for_model(litellm_model, api_base, extra)
    if direct is None and prefer == "direct":
        raise ValueError(f"model {litellm_model!r} has no direct route (not OpenAI-compatible or Anthropic, no api_base, "
                         "or extra keys)")
    return direct or CompletionRoute()
