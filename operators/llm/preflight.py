"""Before a search: can every model an LLM operator will ask work?

Without this, a run with no key or a dead endpoint spent its wall-clock budget on
retries, said nothing and exited 0. The engine calls each operator's
``preflight`` (:class:`asmevo.operator.Preflight`) before K0 is judged; here, for
each model of the operator (its ensemble), once per (provider, base_url, model,
key variable) in the whole pre-flight:

1. the key: the variable ``api_key_env`` names must be set;
2. the models endpoint, one attempt (free on both APIs): Anthropic
   ``GET /v1/models/{model}``, OpenAI ``GET /models``, the model in the list. That
   is enough to go on;
3. otherwise (no such endpoint, the model not listed, a refused or failed request:
   a gateway's key may call models without listing them) one tiny call
   (``max_tokens = 1``), at most one retry, charged to the run's spend like any call
   (its ``llm_usage`` row's operator is ``preflight``). It decides.

A key that is missing or refused (401, 403), a model or path the server does not
know (404) and a server that cannot be reached (connection refused, no such host, no
connection within ``timeout_s``) raise :class:`~asmevo.operator.OperatorUnusable`:
the run stops before it starts, with one line naming the model and the server.
Anything else (a busy server, a request it refuses) is said in the pre-flight's
line, and the search goes on; an operator whose every proposal of a generation
then fails for a reason of that kind stops the run (the engine's rule).

The whole check of one model ends within :data:`PREFLIGHT_SECONDS` (and the run's
wall-clock budget), each attempt within ``timeout_s``.
"""
from __future__ import annotations

import logging
import secrets
import time

from asmevo.operator import OperatorContext, OperatorUnusable
from asmevo.operators.llm.client import wire_body
from asmevo.operators.llm.config import LLMConfig
from asmevo.operators.llm.errors import LLMError
from asmevo.operators.llm.pricing import cost
from asmevo.operators.llm.spend import CallRecord, call_id, hook_call, request_text

log = logging.getLogger("asmevo.llm")

PREFLIGHT_SECONDS = 30.0
OPERATOR = "preflight"          # the operator of a pre-flight call's usage row
PING = "Reply with the single word: ok"
# what stops the run before it starts (the kinds of client.UNUSABLE that cannot be a
# property of one request): the key, the model or path, the connection
FATAL = ("auth", "not_found", "connect")


def preflight(op, context: OperatorContext, done: dict) -> list[str]:
    """The lines of ``op``'s models checked now (not in ``done``); raises OperatorUnusable
    naming the operator, the model and the server when one cannot work. ``op``: an LLM
    operator (its ``config.members`` and ``client_of``)."""
    lines = []
    for k, member in enumerate(op.config.members):
        cfg = member.config
        key = ("llm", cfg.provider, cfg.base_url, cfg.model, cfg.api_key_env)
        if key in done:
            continue
        try:
            client = op.client_of(k)
            done[key] = check(client, cfg, context)
        except LLMError as exc:                  # the key's variable is not set
            raise OperatorUnusable(f"{op.name}: {exc.message}") from None
        except OperatorUnusable as exc:
            raise OperatorUnusable(f"{op.name}: {exc.message}") from None
        lines.append(f"{op.name}: {done[key]}")
        log.info("pre-flight: %s", lines[-1])
    return lines


def check(client, cfg: LLMConfig, context: OperatorContext) -> str:
    """One model: what answered (a line), or OperatorUnusable (module docstring)."""
    t0 = time.monotonic()
    end = t0 + PREFLIGHT_SECONDS
    if context.deadline is not None:
        end = min(end, context.deadline)
    limit = f"the pre-flight's limit ({PREFLIGHT_SECONDS:g} s, or the run's wall_seconds)"
    ids, failure = client.models(end, limit)
    if failure is not None and failure.kind == "connect":
        raise OperatorUnusable(f"{client.where()}: {failure.reason}")
    if ids is not None and cfg.model in ids:
        return f"{client.where()}: ok (the models endpoint knows it; " \
               f"{time.monotonic() - t0:.2f} s)"
    why = ("the models endpoint does not list it" if ids is not None
           else f"the models endpoint: {failure.reason}")
    return _one_token(client, cfg, context, end, limit, why, t0)


def _one_token(client, cfg: LLMConfig, context: OperatorContext, end: float, limit: str,
               why: str, t0: float) -> str:
    """The tiny call that decides where the models endpoint did not; charged where billed."""
    if context.budget_left() <= 0:
        return f"{client.where()}: not confirmed ({why}; the LLM budget is spent)"
    request = {"model": cfg.model, "max_tokens": 1,
               "messages": [{"role": "user", "content": PING}]}
    # a new id each time: a pre-flight is not part of the search a resume replays
    cid = call_id(context.where.get("run_id", ""), [secrets.token_hex(8)], OPERATOR,
                  context.where)
    reply = client.send(request, seed=cid, deadline=end, deadline_name=limit, retries=1)
    if not reply.ok:
        if reply.failure in FATAL:
            raise OperatorUnusable(reply.reason)
        return (f"{client.where()}: not confirmed ({why}; a one-token call: {reply.reason}); "
                "the search goes on")
    paid = cost(reply.usage, cfg.price)
    context.charge(hook_call(CallRecord(cid, OPERATOR, cfg.model,
                                        request_text(wire_body(cfg, request)), reply.usage,
                                        paid, OPERATOR, why[:300])))
    return (f"{client.where()}: ok (a one-token call, ${paid:.5f}, {time.monotonic() - t0:.2f}"
            f" s; {why})")
