"""The Messages API (``provider = "anthropic"``): the operators' own request shape."""
from __future__ import annotations

from asmevo.operators.llm.answer import from_messages_api
from asmevo.operators.llm.pricing import Usage
from asmevo.operators.llm.provider import Provider


class MessagesApi(Provider):
    name = "anthropic"
    sdk = "anthropic"
    default_url = "https://api.anthropic.com"
    default_key_env = "ANTHROPIC_API_KEY"

    def client(self, sdk, **options):
        return sdk.Anthropic(**options)

    def create(self, client):
        return client.messages.create

    def answer(self, message):
        return from_messages_api(message), Usage.from_response(self.usage_of(message))
