// Vercel AI SDK 7: a tool round trip (generateText with an executing tool,
// the SDK sends the result back) and a stream (streamText), through the
// provider the first argument names: openai-chat (Chat Completions),
// openai-responses (the Responses API, createOpenAI's default) or
// anthropic (Messages).
import { generateText, streamText, tool, jsonSchema, stepCountIs } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { createAnthropic } from "@ai-sdk/anthropic";
import { baseURL, apiKey, model, toolPrompt, toolResult, weatherSchema, streamPrompt, expect, run } from "./common.mjs";

const providers = {
  "openai-chat": () => createOpenAI({ baseURL: baseURL + "/v1", apiKey }).chat(model),
  "openai-responses": () => createOpenAI({ baseURL: baseURL + "/v1", apiKey })(model),
  anthropic: () => createAnthropic({ baseURL: baseURL + "/v1", apiKey })(model),
};
const make = providers[process.argv[2]];
if (!make) throw new Error(`usage: vercel-ai.mjs ${Object.keys(providers).join("|")}`);
const lm = make();

await run({
  async tool() {
    let called = 0;
    const r = await generateText({
      model: lm,
      prompt: toolPrompt,
      tools: {
        get_weather: tool({
          description: "The weather in a city.",
          inputSchema: jsonSchema(weatherSchema),
          execute: async () => { called++; return toolResult; },
        }),
      },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    if (called !== 1) throw new Error(`get_weather ran ${called} times, want once`);
    expect("answer to the tool result", r.text, toolResult);
    return `${r.steps.length} steps, answer ${JSON.stringify(r.text)}`;
  },
  async stream() {
    const r = streamText({ model: lm, prompt: streamPrompt, maxRetries: 0, onError: ({ error }) => { throw error; } });
    let text = "", chunks = 0;
    for await (const delta of r.textStream) { text += delta; chunks++; }
    expect("streamed answer", text, streamPrompt);
    return `${chunks} chunks, ${JSON.stringify(text)}`;
  },
});
