"""The quick-start agent: an assistant that can calculate, read the clock and send notifications.

    think serve examples/assistant.py:Assistant        # chat at http://localhost:8000/

It does not pick a model, so Think picks one: `THINK_MODEL`, else a provider key in the
environment (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`), else a local Ollama, else
the offline demo model, which plays out tool calls and approvals without any network.

    async with open_agent(Assistant, "alice") as agent:
        result = await agent.save_messages(["What is 12*(3+4)?"])
"""

from think import Think, Tool
from think.models.demo_tools import DEMO_TOOLS


class Assistant(Think):
    """A helpful assistant. `send_notification` waits for a person's approval before it runs."""

    welcome = "A small assistant with a calculator, a clock and an approval-gated notification tool."
    suggestions = ("What is 12*(3+4)?", "What time is it in Tokyo?", "Send a notification to the team")

    def get_tools(self) -> list[Tool]:
        return DEMO_TOOLS
