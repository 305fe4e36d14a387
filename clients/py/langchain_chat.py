"""LangChain Python: ChatOpenAI (Chat Completions) with a bound tool, the
tool call answered with a ToolMessage, and a stream."""

from langchain_core.messages import HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI

from common import API_KEY, BASE_URL, MODEL, STREAM_PROMPT, TOOL_PROMPT, TOOL_RESULT, WEATHER_SCHEMA, expect, run

llm = ChatOpenAI(model=MODEL, api_key=API_KEY, base_url=BASE_URL + "/v1", max_retries=0)


def tool():
    with_tools = llm.bind_tools([{"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city.", "parameters": WEATHER_SCHEMA}}])
    messages = [HumanMessage(TOOL_PROMPT)]
    call = with_tools.invoke(messages)
    if not call.tool_calls or call.tool_calls[0]["name"] != "get_weather":
        raise AssertionError(f"tool calls {call.tool_calls}, want get_weather")
    messages += [call, ToolMessage(TOOL_RESULT, tool_call_id=call.tool_calls[0]["id"])]
    answer = with_tools.invoke(messages)
    expect("answer to the tool result", answer.content, TOOL_RESULT)
    return f"answer {answer.content!r}"


def stream():
    text, chunks = "", 0
    for chunk in llm.stream(STREAM_PROMPT):
        text += chunk.content
        chunks += 1
    expect("streamed answer", text, STREAM_PROMPT)
    return f"{chunks} chunks, {text!r}"


run({"tool": tool, "stream": stream})
