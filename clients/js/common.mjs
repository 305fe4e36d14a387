// What every JavaScript client script shares: where the gateway is, the
// scripted prompts (providersim README, scripted mode) and the checks.
export const baseURL = need("CLIENT_BASE_URL"); // http://host:port, no /v1
export const apiKey = need("CLIENT_API_KEY");
export const model = need("CLIENT_MODEL");

// The simulated model calls get_weather once when asked so, then answers
// "Tool result received: <the result>".
export const toolPrompt = 'What is the weather in Oslo? [[call get_weather {"city":"Oslo"}]]';
export const toolResult = "sunny, 21C";
export const weatherSchema = {
  type: "object",
  properties: { city: { type: "string", description: "a city name" } },
  required: ["city"],
  additionalProperties: false,
};
// The simulated model echoes the prompt; a streamed answer holds it.
export const streamPrompt = "stream a greeting please";

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

// expect fails the run unless text holds want.
export function expect(what, text, want) {
  if (!String(text).includes(want)) throw new Error(`${what}: got ${JSON.stringify(text)}, want it to hold ${JSON.stringify(want)}`);
}

// run runs the checks in order and reports each on stdout; the first
// failure ends the process with status 1, its trace on stderr and last a
// "FAIL: <check>: <message>" line, which the driver reports.
export async function run(checks) {
  for (const [name, check] of Object.entries(checks)) {
    try {
      console.log(`${name}: ${await check()}`);
    } catch (e) {
      console.error(e?.stack ?? String(e));
      console.error(`FAIL: ${name}: ${e?.message ?? String(e)}`);
      process.exit(1);
    }
  }
}
