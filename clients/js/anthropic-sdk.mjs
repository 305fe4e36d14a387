// The Anthropic TypeScript SDK: messages.create with a tool, the tool_use
// answered with a tool_result, and messages.stream.
import Anthropic from "@anthropic-ai/sdk";
import { baseURL, apiKey, model, toolPrompt, toolResult, weatherSchema, streamPrompt, expect, run } from "./common.mjs";

const client = new Anthropic({ baseURL, apiKey, maxRetries: 0 });
const tools = [{ name: "get_weather", description: "The weather in a city.", input_schema: weatherSchema }];

await run({
  async tool() {
    const messages = [{ role: "user", content: toolPrompt }];
    const call = await client.messages.create({ model, max_tokens: 1024, tools, messages });
    const use = call.content.find((b) => b.type === "tool_use");
    if (call.stop_reason !== "tool_use" || use?.name !== "get_weather") throw new Error(`answer ${JSON.stringify(call.content)}, want a get_weather tool_use`);
    messages.push({ role: "assistant", content: call.content }, { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: toolResult }] });
    const answer = await client.messages.create({ model, max_tokens: 1024, tools, messages });
    const text = answer.content.filter((b) => b.type === "text").map((b) => b.text).join("");
    expect("answer to the tool result", text, toolResult);
    return `answer ${JSON.stringify(text)}`;
  },
  async stream() {
    const stream = client.messages.stream({ model, max_tokens: 1024, messages: [{ role: "user", content: streamPrompt }] });
    let chunks = 0;
    stream.on("text", () => chunks++);
    const final = await stream.finalMessage();
    const text = final.content.filter((b) => b.type === "text").map((b) => b.text).join("");
    expect("streamed answer", text, streamPrompt);
    return `${chunks} chunks, ${JSON.stringify(text)}`;
  },
});
