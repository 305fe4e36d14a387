"""The OpenAI Agents SDK: an agent with a function tool, run to its end
(the SDK calls the tool and sends the result back), then run streamed;
through the model class the first argument names: responses
(OpenAIResponsesModel) or chat (OpenAIChatCompletionsModel)."""

import sys

from agents import (Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner, function_tool,
                    set_default_openai_client, set_tracing_disabled)
from openai import AsyncOpenAI
from openai.types.responses import ResponseTextDeltaEvent

from common import API_KEY, BASE_URL, MODEL, STREAM_PROMPT, TOOL_PROMPT, TOOL_RESULT, expect, run

client = AsyncOpenAI(base_url=BASE_URL + "/v1", api_key=API_KEY, max_retries=0)
set_default_openai_client(client)
set_tracing_disabled(True)
models = {
    "responses": lambda: OpenAIResponsesModel(model=MODEL, openai_client=client),
    "chat": lambda: OpenAIChatCompletionsModel(model=MODEL, openai_client=client),
}
if len(sys.argv) != 2 or sys.argv[1] not in models:
    sys.exit("usage: openai_agents.py " + "|".join(models))
calls = []


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    calls.append(city)
    return TOOL_RESULT


agent = Agent(name="weather", instructions="You answer questions.", model=models[sys.argv[1]](), tools=[get_weather])


async def tool():
    result = await Runner.run(agent, TOOL_PROMPT)
    if calls != ["Oslo"]:
        raise AssertionError(f"get_weather ran for {calls}, want once for Oslo")
    expect("answer to the tool result", result.final_output, TOOL_RESULT)
    return f"answer {result.final_output!r}"


async def stream():
    result = Runner.run_streamed(agent, STREAM_PROMPT)
    text, chunks = "", 0
    async for ev in result.stream_events():
        if ev.type == "raw_response_event" and isinstance(ev.data, ResponseTextDeltaEvent):
            text += ev.data.delta
            chunks += 1
    expect("streamed answer", text, STREAM_PROMPT)
    return f"{chunks} chunks, {text!r}"


run({"tool": tool, "stream": stream})
