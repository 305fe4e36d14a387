// LangChain JS: ChatOpenAI (Chat Completions) with a bound tool, the tool
// call answered with a ToolMessage, and a stream.
import { ChatOpenAI } from "@langchain/openai";
import { HumanMessage, ToolMessage } from "@langchain/core/messages";
import { baseURL, apiKey, model, toolPrompt, toolResult, weatherSchema, streamPrompt, expect, run } from "./common.mjs";

const llm = new ChatOpenAI({ model, apiKey, configuration: { baseURL: baseURL + "/v1" }, maxRetries: 0 });

await run({
  async tool() {
    const withTools = llm.bindTools([{ type: "function", function: { name: "get_weather", description: "The weather in a city.", parameters: weatherSchema } }]);
    const messages = [new HumanMessage(toolPrompt)];
    const call = await withTools.invoke(messages);
    const tc = call.tool_calls?.[0];
    if (tc?.name !== "get_weather" || tc.args?.city !== "Oslo") throw new Error(`tool calls ${JSON.stringify(call.tool_calls)}, want get_weather for Oslo`);
    messages.push(call, new ToolMessage({ tool_call_id: tc.id, content: toolResult }));
    const answer = await withTools.invoke(messages);
    expect("answer to the tool result", answer.content, toolResult);
    return `answer ${JSON.stringify(answer.content)}`;
  },
  async stream() {
    let text = "", chunks = 0;
    for await (const chunk of await llm.stream(streamPrompt)) { text += chunk.content; chunks++; }
    expect("streamed answer", text, streamPrompt);
    return `${chunks} chunks, ${JSON.stringify(text)}`;
  },
});
