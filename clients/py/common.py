"""What every Python client script shares: where the gateway is, the
scripted prompts (providersim README, scripted mode) and the checks."""

import asyncio
import inspect
import os
import sys
import traceback

BASE_URL = os.environ["CLIENT_BASE_URL"]  # http://host:port, no /v1
API_KEY = os.environ["CLIENT_API_KEY"]
MODEL = os.environ["CLIENT_MODEL"]

# The simulated model calls get_weather once when asked so, then answers
# "Tool result received: <the result>".
TOOL_PROMPT = 'What is the weather in Oslo? [[call get_weather {"city":"Oslo"}]]'
TOOL_RESULT = "sunny, 21C"
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "a city name"}},
    "required": ["city"],
    "additionalProperties": False,
}
# The simulated model echoes the prompt; a streamed answer holds it.
STREAM_PROMPT = "stream a greeting please"


def expect(what, text, want):
    """Fails the run unless text holds want."""
    if want not in str(text):
        raise AssertionError(f"{what}: got {text!r}, want it to hold {want!r}")


def run(checks):
    """Runs the checks in order, in one event loop (an async client is
    bound to the loop it first ran in), and reports each on stdout; the
    first failure ends the process with status 1, its trace on stderr and
    last a "FAIL: <check>: <message>" line, which the driver reports."""
    async def all_checks():
        for name, check in checks.items():
            try:
                detail = check()
                if inspect.isawaitable(detail):
                    detail = await detail
            except Exception as e:  # noqa: BLE001 - any failure fails the cell
                traceback.print_exc()
                print(f"FAIL: {name}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
                sys.exit(1)
            print(f"{name}: {detail}", flush=True)
    asyncio.run(all_checks())
