package providersim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// The Responses API (POST /v1/responses) of the openai kind: stateless
// requests, a response object or its event stream, built from the same
// reply rules as chat.

// rsRequest is a Responses request, read leniently: only what the rules
// and the checks need.
type rsRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Stream             bool            `json:"stream"`
	Store              *bool           `json:"store"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Tools              []rsTool        `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls"`
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"top_p"`
	Text               *struct {
		Format *struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"text"`
}

type rsTool struct {
	Type       string          `json:"type"`
	Name       string          `json:"name"`
	Parameters json.RawMessage `json:"parameters"`
	Tools      []rsTool        `json:"tools"`
}

type rsItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	Output    json.RawMessage `json:"output"`
	// Tools are an additional_tools item's: tools offered from within the
	// input (Codex's default model gets its tools so).
	Tools []rsTool `json:"tools"`
}

// rsItemTypes are the input item types the simulator takes: what the
// gateway sends, and what a Responses client sends back of an answer.
var rsItemTypes = []string{"message", "function_call", "function_call_output", "reasoning", "web_search_call", "custom_tool_call", "custom_tool_call_output", "additional_tools"}

// minResponsesOutput is the smallest max_output_tokens the Responses API
// takes.
const minResponsesOutput = 16

// webSearchMark in the last user message asks a request that offers the
// web_search tool for one search before the answer.
const webSearchMark = "[[web_search]]"

func (o openAI) responses(x *exchange) {
	var req rsRequest
	if err := json.Unmarshal(x.body, &req); err != nil {
		x.fail(*invalidRequest("", "", "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"))
		return
	}
	conv, offered, errp := o.rsConversation(req)
	if errp != nil {
		x.fail(*errp)
		return
	}
	if !x.p.knownModel(req.Model) {
		x.fail(o.modelNotFound(req.Model))
		return
	}
	r := x.answer(conv)
	x.p.served(r.promptTokens, r.completionTokens)
	env := o.envelope(x, req.Model)
	var echo struct {
		Tools json.RawMessage `json:"tools"`
	}
	_ = json.Unmarshal(x.body, &echo) // the body parsed above
	rs := rsResult{env: env, req: req, r: r, tools: echo.Tools}
	if r.call == nil && strings.Contains(conv.lastUserText, webSearchMark) && offersWebSearch(req.Tools) {
		rs.query = conv.lastUserText
	}
	if r.call != nil {
		rs.namespace, rs.custom = offered.spaces[r.call.name], offered.custom[r.call.name]
	}
	if req.Stream {
		x.writeStream("text/event-stream", rs.events())
		return
	}
	x.writeJSON(http.StatusOK, rs.response(rsStatus(r), rs.output(rsCompleted)))
}

// rsConversation checks a Responses request as OpenAI does and extracts
// what the reply rules need, with the namespace of each function a
// namespace tool holds.
func (o openAI) rsConversation(req rsRequest) (conversation, rsOffered, *apiError) {
	c := conversation{model: req.Model}
	switch {
	case req.Model == "":
		return c, rsOffered{}, invalidRequest("model", "missing_required_parameter", "Missing required parameter: 'model'.")
	case req.PreviousResponseID != nil && *req.PreviousResponseID != "":
		return c, rsOffered{}, invalidRequest("previous_response_id", "previous_response_not_found", "Previous response with id '%s' not found.", *req.PreviousResponseID)
	case len(req.Input) == 0 || string(req.Input) == "null":
		return c, rsOffered{}, invalidRequest("input", "missing_required_parameter", "Missing required parameter: 'input'.")
	case req.MaxOutputTokens != nil && *req.MaxOutputTokens < minResponsesOutput:
		return c, rsOffered{}, invalidRequest("max_output_tokens", "integer_below_min_value", "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= %d, but got %d instead.", minResponsesOutput, *req.MaxOutputTokens)
	}
	if req.MaxOutputTokens != nil {
		c.maxTokens, c.hasMax = *req.MaxOutputTokens, true
	}
	if t := req.Text; t != nil && t.Format != nil && (t.Format.Type == "json_object" || t.Format.Type == "json_schema") {
		c.format = replyFormat{json: true, schema: t.Format.Schema}
	}
	if req.Instructions != nil && *req.Instructions != "" {
		c.messages++
		c.textChars += chars(*req.Instructions)
	}
	items, err := rsItems(req.Input)
	if err != nil {
		return c, rsOffered{}, err
	}
	if err := rsPairing(items); err != nil {
		return c, rsOffered{}, err
	}
	for i, it := range items {
		switch it.Type {
		case "", "message":
			text, images, err := rsContent(it.Content, i)
			if err != nil {
				return c, rsOffered{}, err
			}
			switch it.Role {
			case "user":
				c.lastUserText, c.images = text, images
				c.promptTurn(text)
			case "system", "developer", "assistant":
			default:
				return c, rsOffered{}, invalidRequest(fmt.Sprintf("input[%d].role", i), "invalid_value", "Invalid value: '%s'. Supported values are: 'user', 'assistant', 'system', and 'developer'.", it.Role)
			}
			c.messages++
			c.textChars += chars(text)
		case "function_call", "custom_tool_call":
			c.messages++
			c.textChars += chars(it.Arguments) + chars(it.Input)
			c.assistantCalls(1)
		case "function_call_output", "custom_tool_call_output":
			text, _, err := rsContent(it.Output, i)
			if err != nil {
				return c, rsOffered{}, err
			}
			c.messages++
			c.textChars += chars(text)
		}
	}
	// Instructions after the last turn end no conversation, as in a chat
	// request: the model answers the item before them.
	n := len(items) - 1
	for n > 0 && (items[n].Type == "" || items[n].Type == "message") && (items[n].Role == "system" || items[n].Role == "developer") {
		n--
	}
	last := items[n]
	c.lastIsUser = (last.Type == "" || last.Type == "message") && last.Role == "user"
	if last.Type == "function_call_output" || last.Type == "custom_tool_call_output" {
		text, _, _ := rsContent(last.Output, n)
		c.toolResult = &text
	}
	off := rsOffered{spaces: map[string]string{}, custom: map[string]bool{}}
	if err := off.add(&c, req.Tools, "tools"); err != nil {
		return c, off, err
	}
	for i, it := range items {
		if it.Type == "additional_tools" {
			if err := off.add(&c, it.Tools, fmt.Sprintf("input[%d].tools", i)); err != nil {
				return c, off, err
			}
		}
	}
	choice, err := rsToolChoice(req.ToolChoice, c.tools)
	if err != nil {
		return c, off, err
	}
	c.choice = choice
	return c, off, nil
}

// rsOffered is what the simulator must know of the tools offered to say
// a call to one: the namespace a function is in, and which tools are
// custom (called with free text, not JSON arguments).
type rsOffered struct {
	spaces map[string]string
	custom map[string]bool
}

// add offers tools (at path, for errors): functions and custom tools,
// alone or in a namespace; hosted tools are OpenAI's to run.
func (o rsOffered) add(c *conversation, tools []rsTool, path string) *apiError {
	for i, t := range tools {
		at := fmt.Sprintf("%s[%d]", path, i)
		switch t.Type {
		case "function", "custom":
			if t.Name == "" {
				return invalidRequest(at+".name", "missing_required_parameter", "Missing required parameter: '%s.name'.", at)
			}
			c.tools = append(c.tools, toolDef{name: t.Name, schema: t.Parameters})
			o.custom[t.Name] = t.Type == "custom"
		case "namespace":
			if t.Name == "" || len(t.Tools) == 0 {
				return invalidRequest(at, "missing_required_parameter", "Missing required parameter: '%s.name' and '%s.tools'.", at, at)
			}
			for _, f := range t.Tools {
				if f.Type != "function" && f.Type != "custom" {
					continue
				}
				c.tools = append(c.tools, toolDef{name: f.Name, schema: f.Parameters})
				o.custom[f.Name] = f.Type == "custom"
				if _, ok := o.spaces[f.Name]; !ok {
					o.spaces[f.Name] = t.Name
				}
			}
		}
	}
	return nil
}

// rsItems reads input: a string, one user message, or a list of items of
// the types the simulator takes.
func rsItems(raw json.RawMessage) ([]rsItem, *apiError) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		content, _ := json.Marshal(s)
		return []rsItem{{Type: "message", Role: "user", Content: content}}, nil
	}
	var items []rsItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, invalidRequest("input", "invalid_type", "Invalid type for 'input': expected one of a string or array of input items.")
	}
	if len(items) == 0 {
		return nil, invalidRequest("input", "empty_array", "Invalid 'input': empty array. Expected an array with minimum length 1, but got an empty array instead.")
	}
	for i, it := range items {
		if it.Type != "" && !slices.Contains(rsItemTypes, it.Type) {
			return nil, invalidRequest(fmt.Sprintf("input[%d].type", i), "invalid_value", "Invalid value: '%s'. Supported values are: '%s'.", it.Type, strings.Join(rsItemTypes, "', '"))
		}
		if (it.Type == "" || it.Type == "message") && it.Role == "" {
			return nil, invalidRequest(fmt.Sprintf("input[%d].role", i), "missing_required_parameter", "Missing required parameter: 'input[%d].role'.", i)
		}
	}
	return items, nil
}

// rsPairing enforces the stateless Responses API's rule: every function
// call in the input has its output, and every output answers a call
// before it.
func rsPairing(items []rsItem) *apiError {
	calls := map[string]bool{}
	for _, it := range items {
		switch it.Type {
		case "function_call", "custom_tool_call":
			calls[it.CallID] = false
		case "function_call_output", "custom_tool_call_output":
			answered, ok := calls[it.CallID]
			if !ok || answered {
				return invalidRequest("input", "", "No tool call found for function call output with call_id %s.", it.CallID)
			}
			calls[it.CallID] = true
		}
	}
	for _, it := range items {
		if (it.Type == "function_call" || it.Type == "custom_tool_call") && !calls[it.CallID] {
			return invalidRequest("input", "", "No tool output found for function call %s.", it.CallID)
		}
	}
	return nil
}

// rsContent reads a message's content or a call's output: a string or an
// array of parts, their text joined.
func rsContent(raw json.RawMessage, i int) (text string, images int, _ *apiError) {
	text, images, ok := partsText(raw, "input_image", "input_text", "output_text")
	if !ok {
		return "", 0, invalidRequest(fmt.Sprintf("input[%d].content", i), "invalid_type", "Invalid type for 'input[%d].content': expected one of a string or array of input content.", i)
	}
	return text, images, nil
}

// rsToolChoice reads tool_choice: a mode, a function, an allowed_tools
// set (its mode), or a hosted tool (the model's choice).
func rsToolChoice(raw json.RawMessage, tools []toolDef) (toolChoice, *apiError) {
	var obj struct {
		Type string `json:"type"`
		Name string `json:"name"`
		Mode string `json:"mode"`
	}
	if len(raw) == 0 || raw[0] == '"' || json.Unmarshal(raw, &obj) != nil {
		return oaToolChoice(raw, tools)
	}
	switch obj.Type {
	case "function":
		for _, t := range tools {
			if t.name == obj.Name {
				return toolChoice{mode: choiceForced, name: t.name}, nil
			}
		}
		return toolChoice{}, invalidRequest("tool_choice", "", "Tool choice '%s' not found in 'tools' parameter.", obj.Name)
	case "allowed_tools":
		mode, _ := json.Marshal(obj.Mode)
		return oaToolChoice(mode, tools)
	}
	return toolChoice{mode: choiceAuto}, nil
}

func offersWebSearch(tools []rsTool) bool {
	return slices.ContainsFunc(tools, func(t rsTool) bool { return strings.HasPrefix(t.Type, "web_search") })
}

func rsStatus(r reply) string {
	if r.finish == finishLength {
		return "incomplete"
	}
	return "completed"
}

// Item statuses as an item is opened and closed.
const (
	rsInProgress = "in_progress"
	rsCompleted  = "completed"
)

// rsResult renders one reply as a response object or its events.
type rsResult struct {
	env       oaEnvelope
	req       rsRequest
	r         reply
	tools     json.RawMessage // the request's, which the response repeats
	query     string          // a web search's, which comes first; "" for none
	namespace string          // the called function's namespace, if any
	custom    bool            // the called tool is custom: its input is text
	seq       int             // the next event's sequence number
}

func (rs *rsResult) id(prefix string) string { return fmt.Sprintf("%s_sim%06d", prefix, rs.env.seq) }

// response is the response object with the given status and output.
func (rs *rsResult) response(status string, output []any) map[string]any {
	req := rs.req
	resp := map[string]any{
		"id": rs.id("resp"), "object": "response", "created_at": rs.env.created, "status": status,
		"background": false, "error": nil, "incomplete_details": nil,
		"instructions": req.Instructions, "max_output_tokens": req.MaxOutputTokens, "model": rs.env.model,
		"output": output, "parallel_tool_calls": req.ParallelToolCalls == nil || *req.ParallelToolCalls,
		"previous_response_id": nil, "reasoning": map[string]any{"effort": nil, "summary": nil},
		"service_tier": "default", "store": req.Store == nil || *req.Store,
		"temperature": orOne(req.Temperature), "text": map[string]any{"format": map[string]string{"type": "text"}},
		"tool_choice": rawOr(req.ToolChoice, `"auto"`), "tools": rawOr(rs.tools, `[]`), "top_p": orOne(req.TopP),
		"truncation": "disabled", "usage": nil, "user": nil, "metadata": map[string]any{},
	}
	if status == "incomplete" {
		resp["incomplete_details"] = map[string]string{"reason": "max_output_tokens"}
	}
	if status != rsInProgress {
		resp["usage"] = map[string]any{
			"input_tokens": rs.r.promptTokens, "input_tokens_details": map[string]int{"cached_tokens": 0},
			"output_tokens": rs.r.completionTokens, "output_tokens_details": map[string]int{"reasoning_tokens": 0},
			"total_tokens": rs.r.promptTokens + rs.r.completionTokens,
		}
	}
	return resp
}

// The output items, as the response object lists them.
func (rs *rsResult) searchItem(status string) map[string]any {
	return map[string]any{"id": rs.id("ws"), "type": "web_search_call", "status": status,
		"action": map[string]string{"type": "search", "query": rs.query}}
}

func (rs *rsResult) messageItem(status string, content []any) map[string]any {
	return map[string]any{"id": rs.id("msg"), "type": "message", "status": status, "content": content, "role": "assistant"}
}

func (rs *rsResult) textPart(text string) map[string]any {
	return map[string]any{"type": "output_text", "annotations": []any{}, "logprobs": []any{}, "text": text}
}

func (rs *rsResult) callItem(status, args string) map[string]any {
	it := map[string]any{"id": rs.id("fc"), "type": "function_call", "status": status, "arguments": args, "call_id": rs.id("call"), "name": rs.r.call.name}
	if rs.custom {
		it = map[string]any{"id": rs.id("ctc"), "type": "custom_tool_call", "status": status, "input": args, "call_id": rs.id("call"), "name": rs.r.call.name}
	}
	if rs.namespace != "" {
		it["namespace"] = rs.namespace
	}
	return it
}

// callText is what the call carries: a function's JSON arguments, or a
// custom tool's text, the directive's "input" when it gave one.
func (rs *rsResult) callText() string {
	if !rs.custom {
		return string(rs.r.call.args)
	}
	var in struct {
		Input string `json:"input"`
	}
	_ = json.Unmarshal(rs.r.call.args, &in) // the args are an object
	return in.Input
}

func (rs *rsResult) output(status string) []any {
	var out []any
	if rs.query != "" {
		out = append(out, rs.searchItem(rsCompleted))
	}
	if rs.r.call != nil {
		return append(out, rs.callItem(status, rs.callText()))
	}
	return append(out, rs.messageItem(status, []any{rs.textPart(rs.r.text)}))
}

// event renders one named event, numbered next.
func (rs *rsResult) event(typ string, fields map[string]any) []byte {
	fields["type"], fields["sequence_number"] = typ, rs.seq
	rs.seq++
	return []byte("event: " + typ + "\ndata: " + string(mustJSON(fields)) + "\n\n")
}

// events is the stream: created, in_progress, each item added, its deltas
// and done, then completed (incomplete when cut off).
func (rs *rsResult) events() [][]byte {
	evs := [][]byte{
		rs.event("response.created", map[string]any{"response": rs.response(rsInProgress, []any{})}),
		rs.event("response.in_progress", map[string]any{"response": rs.response(rsInProgress, []any{})}),
	}
	index := 0
	if rs.query != "" {
		evs = append(evs,
			rs.event("response.output_item.added", map[string]any{"output_index": index, "item": rs.searchItem(rsInProgress)}),
			rs.event("response.web_search_call.in_progress", map[string]any{"output_index": index, "item_id": rs.id("ws")}),
			rs.event("response.web_search_call.searching", map[string]any{"output_index": index, "item_id": rs.id("ws")}),
			rs.event("response.web_search_call.completed", map[string]any{"output_index": index, "item_id": rs.id("ws")}),
			rs.event("response.output_item.done", map[string]any{"output_index": index, "item": rs.searchItem(rsCompleted)}))
		index++
	}
	status := rsStatus(rs.r)
	if rs.r.call != nil {
		id, args := rs.id("fc"), rs.callText()
		delta, done, field := "response.function_call_arguments.delta", "response.function_call_arguments.done", "arguments"
		if rs.custom {
			id, delta, done, field = rs.id("ctc"), "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done", "input"
		}
		evs = append(evs, rs.event("response.output_item.added", map[string]any{"output_index": index, "item": rs.callItem(rsInProgress, "")}))
		for _, part := range halves(args) {
			evs = append(evs, rs.event(delta, map[string]any{"item_id": id, "output_index": index, "delta": part}))
		}
		evs = append(evs,
			rs.event(done, map[string]any{"item_id": id, "output_index": index, field: args}),
			rs.event("response.output_item.done", map[string]any{"output_index": index, "item": rs.callItem(rsCompleted, args)}))
	} else {
		id := rs.id("msg")
		part := map[string]any{"item_id": id, "output_index": index, "content_index": 0}
		with := func(k string, v any) map[string]any {
			m := map[string]any{k: v}
			for pk, pv := range part {
				m[pk] = pv
			}
			return m
		}
		evs = append(evs,
			rs.event("response.output_item.added", map[string]any{"output_index": index, "item": rs.messageItem(rsInProgress, []any{})}),
			rs.event("response.content_part.added", with("part", rs.textPart(""))))
		for _, piece := range pieces(rs.r.text) {
			ev := with("delta", piece)
			ev["logprobs"] = []any{}
			evs = append(evs, rs.event("response.output_text.delta", ev))
		}
		done := with("text", rs.r.text)
		done["logprobs"] = []any{}
		evs = append(evs,
			rs.event("response.output_text.done", done),
			rs.event("response.content_part.done", with("part", rs.textPart(rs.r.text))),
			rs.event("response.output_item.done", map[string]any{"output_index": index, "item": rs.messageItem(status, []any{rs.textPart(rs.r.text)})}))
	}
	return append(evs, rs.event("response."+status, map[string]any{"response": rs.response(status, rs.output(status))}))
}

func orOne(f *float64) float64 {
	if f == nil {
		return 1
	}
	return *f
}

func rawOr(raw json.RawMessage, def string) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage(def)
	}
	return raw
}
