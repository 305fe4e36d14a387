// The OpenAI TypeScript SDK: chat.completions.create with a tool, the tool
// call answered with a tool message, and a streamed completion.
import OpenAI from "openai";
import { baseURL, apiKey, model, toolPrompt, toolResult, weatherSchema, streamPrompt, expect, run } from "./common.mjs";

const client = new OpenAI({ baseURL: baseURL + "/v1", apiKey, maxRetries: 0 });
const tools = [{ type: "function", function: { name: "get_weather", description: "The weather in a city.", parameters: weatherSchema } }];

await run({
  async tool() {
    const messages = [{ role: "user", content: toolPrompt }];
    const call = await client.chat.completions.create({ model, tools, messages });
    const msg = call.choices[0].message;
    const tc = msg.tool_calls?.[0];
    if (tc?.function?.name !== "get_weather") throw new Error(`answer ${JSON.stringify(msg)}, want a get_weather call`);
    messages.push(msg, { role: "tool", tool_call_id: tc.id, content: toolResult });
    const answer = await client.chat.completions.create({ model, tools, messages });
    expect("answer to the tool result", answer.choices[0].message.content, toolResult);
    return `answer ${JSON.stringify(answer.choices[0].message.content)}`;
  },
  async stream() {
    const stream = await client.chat.completions.create({ model, stream: true, messages: [{ role: "user", content: streamPrompt }] });
    let text = "", chunks = 0;
    for await (const chunk of stream) { text += chunk.choices[0]?.delta?.content ?? ""; chunks++; }
    expect("streamed answer", text, streamPrompt);
    return `${chunks} chunks, ${JSON.stringify(text)}`;
  },
});
