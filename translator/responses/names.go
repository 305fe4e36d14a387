package responses

import "github.com/switchyard/switchyard/apischema/responsesapi"

// qualified is a function tool as the Responses API names it: a function
// of a namespace tool is named by both, a top-level function by its name.
type qualified struct{ namespace, name string }

// toolNames maps the functions of a request's namespace tools to the flat
// function names a chat request offers, and back. A function keeps its
// own name, which its namespace's descriptions use, unless another tool
// of the request has that name too; then every function of that name is
// "<namespace>__<name>". The map is built from the request alone, so
// each turn of a conversation, which offers the same tools, maps a call
// the same way on its way out and on its way back.
type toolNames struct {
	flat map[qualified]string
	back map[string]qualified
}

// namesOf builds the map of a request's tools.
func namesOf(tools []responsesapi.Tool) toolNames {
	n := toolNames{flat: map[qualified]string{}, back: map[string]qualified{}}
	uses := map[string]int{}
	for _, t := range tools {
		switch t.Type {
		case responsesapi.ToolFunction:
			uses[t.Name]++
		case responsesapi.ToolNamespace:
			for _, f := range t.Tools {
				uses[f.Name]++
			}
		}
	}
	for _, t := range tools {
		if t.Type != responsesapi.ToolNamespace {
			continue
		}
		for _, f := range t.Tools {
			q := qualified{t.Name, f.Name}
			flat := f.Name
			if uses[f.Name] > 1 {
				flat = t.Name + "__" + f.Name
			}
			n.flat[q], n.back[flat] = flat, q
		}
	}
	return n
}

// chat is the chat function name of a function of namespace ns ("" for a
// top-level one). A namespace the request no longer offers is spelled
// out.
func (n toolNames) chat(ns, name string) string {
	if ns == "" {
		return name
	}
	if flat, ok := n.flat[qualified{ns, name}]; ok {
		return flat
	}
	return ns + "__" + name
}

// client is the namespace ("" for none) and name the client knows a chat
// function name by.
func (n toolNames) client(flat string) (ns, name string) {
	if q, ok := n.back[flat]; ok {
		return q.namespace, q.name
	}
	return "", flat
}
