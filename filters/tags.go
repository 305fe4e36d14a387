package filters

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/switchyard/switchyard/apischema/jsonform"
	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
)

// Labels are what a request is accounted under besides its caller: its
// billing tags and the client session it belongs to, kept in its ledger
// row and usage event, grouped and filtered by the usage API, and held to
// the tenant's budgets per tag.
type Labels struct {
	// Tags maps a tag's key to its value; nil when the request has none.
	// The map may be the caller's key's own: it is replaced, never
	// written to.
	Tags map[string]string
	// Session names the client's session, from x-switchyard-session; ""
	// when none was given. [Exchange.Session] also reads the one Claude
	// Code sends in its Messages requests.
	Session string
	// header holds the tags of x-switchyard-tags, which win over the
	// body's metadata.
	header map[string]string
	// userID is a Messages request's metadata.user_id, which Claude Code
	// makes a JSON object holding its session's ID.
	userID string
	// metadata is set when the request's tags came from its body's
	// metadata, which DropMetadataTags keeps from the provider.
	metadata bool
}

// tagsInvalid is the refusal of a request's tags or session, naming the
// header or field.
func tagsInvalid(param, format string, args ...any) *openaiapi.Error {
	return Reject(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "invalid_tags", format, args...).WithParam(param)
}

// ParseTags reads an x-switchyard-tags value, "key=value,key=value", into
// its tags. A tag that policy.TagProblem refuses, a key given twice, more
// than policy.MaxTags tags or an entry that is not key=value is refused
// with a 400 naming the header.
func ParseTags(v string) (map[string]string, error) {
	tags := map[string]string{}
	for entry := range strings.SplitSeq(v, ",") {
		k, val, ok := strings.Cut(entry, "=")
		k, val = strings.TrimSpace(k), strings.TrimSpace(val)
		switch {
		case !ok:
			return nil, tagsInvalid(HeaderTags, "%s: %q is not key=value", HeaderTags, openaiapi.Clip(strings.TrimSpace(entry)))
		}
		if _, dup := tags[k]; dup {
			return nil, tagsInvalid(HeaderTags, "%s: tag %s is given twice", HeaderTags, k)
		}
		if why := policy.TagProblem(k, val); why != "" {
			return nil, tagsInvalid(HeaderTags, "%s: %s", HeaderTags, why)
		}
		tags[k] = val
		if len(tags) > policy.MaxTags {
			return nil, tagsInvalid(HeaderTags, "%s: at most %d tags", HeaderTags, policy.MaxTags)
		}
	}
	return tags, nil
}

// SetLabels sets the request's labels from its caller's key (nil: none)
// and the values of its x-switchyard-tags and x-switchyard-session
// headers ("" when absent): the key's tags, with the header's in their
// place where both name a key. A request with neither header of a key
// without tags costs nothing more.
func (x *Exchange) SetLabels(k *policy.Key, tagsHeader, sessionHeader string) error {
	var keyTags map[string]string
	if k != nil {
		keyTags = k.Tags
	}
	x.Labels = Labels{Tags: keyTags}
	if sessionHeader != "" {
		if why := policy.SessionProblem(sessionHeader); why != "" {
			return tagsInvalid(HeaderSession, "%s: %s", HeaderSession, why)
		}
		x.Labels.Session = sessionHeader
	}
	if tagsHeader == "" {
		return nil
	}
	header, err := ParseTags(tagsHeader)
	if err != nil {
		return err
	}
	x.Labels.header = header
	x.Labels.Tags = mergeTags(keyTags, header)
	if len(x.Labels.Tags) > policy.MaxTags {
		return tagsInvalid(HeaderTags, "%s: with your key's tags, more than %d tags", HeaderTags, policy.MaxTags)
	}
	return nil
}

// mergeTags is base with over's tags in their place: a new map, or one
// of the two when the other is empty.
func mergeTags(base, over map[string]string) map[string]string {
	switch {
	case len(over) == 0:
		return base
	case len(base) == 0:
		return over
	}
	out := make(map[string]string, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// takeMetadataTags adds the body's metadata to the request's tags, on a
// route that takes them (tags_from_metadata): over the key's, under the
// header's. A tag policy.TagProblem refuses is refused naming the field.
func (x *Exchange) takeMetadataTags(meta map[string]string) *openaiapi.Error {
	if len(meta) == 0 {
		return nil
	}
	for k, v := range meta {
		if why := policy.TagProblem(k, v); why != "" {
			return tagsInvalid("metadata", "metadata: %s", why)
		}
	}
	x.Labels.Tags = mergeTags(mergeTags(x.Labels.Tags, meta), x.Labels.header)
	x.Labels.metadata = true
	if len(x.Labels.Tags) > policy.MaxTags {
		return tagsInvalid("metadata", "metadata: with your key's and the header's tags, more than %d tags", policy.MaxTags)
	}
	return nil
}

// messagesMetadataTags are the members of a Messages request's metadata
// besides user_id (the end user's, not a tag), read from its body: the
// request type holds user_id alone, so that the routes that take no tags
// decode nothing more. Each must be a string.
func messagesMetadataTags(body []byte) (map[string]string, *openaiapi.Error) {
	raw, found, err := jsonform.Member(body, "metadata")
	if err != nil || !found {
		return nil, nil // the request parsed: no metadata
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil {
		return nil, nil // null: none; anything else the parser refused
	}
	var tags map[string]string
	for k, v := range members {
		if k == "user_id" {
			continue
		}
		var s string
		if json.Unmarshal(v, &s) != nil {
			return nil, tagsInvalid("metadata", "metadata.%s: a tag's value must be a string", openaiapi.Clip(k))
		}
		if tags == nil {
			tags = map[string]string{}
		}
		tags[k] = s
	}
	return tags, nil
}

// Session is the client session the request belongs to: the one
// x-switchyard-session named, else the session_id of the JSON object
// Claude Code sends as its Messages requests' metadata.user_id, when that
// is a valid session ID. The second is read only when asked (for the
// ledger row, once the answer is out), so a request pays nothing for it.
func (x *Exchange) Session() string {
	if x.Labels.Session != "" || !strings.HasPrefix(x.Labels.userID, "{") {
		return x.Labels.Session
	}
	var id struct {
		SessionID string `json:"session_id"`
	}
	if json.Unmarshal([]byte(x.Labels.userID), &id) != nil || policy.SessionProblem(id.SessionID) != "" {
		return ""
	}
	return id.SessionID
}

// DropMetadataTags removes from the body the metadata the request's tags
// were taken from: the tags are the gateway's, and a provider may refuse
// them (Anthropic's metadata takes only user_id, OpenAI's chat
// completions take metadata only with store). On Messages the end user's
// user_id stays. Every other member of the body is passed on as it came.
func (x *Exchange) DropMetadataTags() error {
	if !x.Labels.metadata {
		return nil
	}
	var (
		body []byte
		err  error
	)
	if x.Route.API == policy.APIMessages && x.Labels.userID != "" {
		user, _ := json.Marshal(x.Labels.userID)
		body, err = jsonform.ReplaceMember(x.Body, "metadata", `{"user_id":`+string(user)+`}`)
	} else {
		body, err = jsonform.RemoveMember(x.Body, "metadata")
	}
	if err != nil {
		return err
	}
	x.ReplaceBody(body)
	x.Chat.Metadata = nil
	return nil
}
