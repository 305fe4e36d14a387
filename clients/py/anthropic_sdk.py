"""The Anthropic Python SDK: messages.create with a tool, the tool_use
answered with a tool_result, and messages.stream."""

import anthropic

from common import API_KEY, BASE_URL, MODEL, STREAM_PROMPT, TOOL_PROMPT, TOOL_RESULT, WEATHER_SCHEMA, expect, run

client = anthropic.Anthropic(base_url=BASE_URL, api_key=API_KEY, max_retries=0)
TOOLS = [{"name": "get_weather", "description": "The weather in a city.", "input_schema": WEATHER_SCHEMA}]


def tool():
    messages = [{"role": "user", "content": TOOL_PROMPT}]
    call = client.messages.create(model=MODEL, max_tokens=1024, tools=TOOLS, messages=messages)
    use = next((b for b in call.content if b.type == "tool_use"), None)
    if call.stop_reason != "tool_use" or use is None or use.name != "get_weather":
        raise AssertionError(f"answer {call.content}, want a get_weather tool_use")
    messages += [{"role": "assistant", "content": call.content},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": TOOL_RESULT}]}]
    answer = client.messages.create(model=MODEL, max_tokens=1024, tools=TOOLS, messages=messages)
    text = "".join(b.text for b in answer.content if b.type == "text")
    expect("answer to the tool result", text, TOOL_RESULT)
    return f"answer {text!r}"


def stream():
    chunks = 0
    with client.messages.stream(model=MODEL, max_tokens=1024, messages=[{"role": "user", "content": STREAM_PROMPT}]) as s:
        for _ in s.text_stream:
            chunks += 1
        final = s.get_final_message()
    text = "".join(b.text for b in final.content if b.type == "text")
    expect("streamed answer", text, STREAM_PROMPT)
    return f"{chunks} chunks, {text!r}"


run({"tool": tool, "stream": stream})
