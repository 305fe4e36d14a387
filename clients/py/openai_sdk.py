"""The OpenAI Python SDK: chat.completions.create with a tool, the tool
call answered with a tool message, and a streamed completion."""

import openai

from common import API_KEY, BASE_URL, MODEL, STREAM_PROMPT, TOOL_PROMPT, TOOL_RESULT, WEATHER_SCHEMA, expect, run

client = openai.OpenAI(base_url=BASE_URL + "/v1", api_key=API_KEY, max_retries=0)
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.", "parameters": WEATHER_SCHEMA}}]


def tool():
    messages = [{"role": "user", "content": TOOL_PROMPT}]
    call = client.chat.completions.create(model=MODEL, tools=TOOLS, messages=messages)
    msg = call.choices[0].message
    if not msg.tool_calls or msg.tool_calls[0].function.name != "get_weather":
        raise AssertionError(f"answer {msg}, want a get_weather call")
    messages += [msg.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": msg.tool_calls[0].id, "content": TOOL_RESULT}]
    answer = client.chat.completions.create(model=MODEL, tools=TOOLS, messages=messages)
    expect("answer to the tool result", answer.choices[0].message.content, TOOL_RESULT)
    return f"answer {answer.choices[0].message.content!r}"


def stream():
    text, chunks = "", 0
    for chunk in client.chat.completions.create(model=MODEL, stream=True, messages=[{"role": "user", "content": STREAM_PROMPT}]):
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
        chunks += 1
    expect("streamed answer", text, STREAM_PROMPT)
    return f"{chunks} chunks, {text!r}"


run({"tool": tool, "stream": stream})
