package gateway

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// A harness's model call may ask the vendor to act on its own: run a tool on its side (web search,
// web fetch, code execution, file search, image generation, an MCP server it connects to) or fetch
// content from a URL (an image or a document by URL). From a run's computer without network that
// is a way out through the vendor, and the vendor bills it apart from the tokens the cap counts.
// The run's own tools (web_fetch among them, under its approvals and cap) are the way, so the
// gateway refuses such a call before it reaches the run, naming the field: refused rather than
// stripped, so the harness never goes on with a conversation other than the one it sent.

// clientTools are the tool types a request may carry per wire: tools the client (the harness)
// runs, which the vendor only describes to the model. Anthropic's own typed client tools are
// matched by prefix (bash_20250124, text_editor_..., computer_..., memory_..., and its tool
// search, which searches the request's own tools). Anything else is a tool the vendor runs.
var clientTools = map[Wire][]string{
	WireAnthropic: {"", "custom", "bash_", "text_editor_", "computer_", "memory_", "tool_search_tool_"},
	WireResponses: {"function", "custom", "namespace", "local_shell", "shell", "apply_patch", "computer_use_preview"},
	WireChat:      {"function", "custom"},
}

// vendorFields are top-level request fields that have the vendor reach out on its own: Anthropic's
// MCP connector, Chat Completions' web search, OpenRouter's plugins (web search among them).
var vendorFields = map[Wire][]string{
	WireAnthropic: {"mcp_servers"},
	WireChat:      {"web_search_options", "plugins"},
	WireResponses: {},
}

// vendorSide says what in a model call of wire the vendor would do on its own side ("" when
// nothing): the field path and why.
func vendorSide(wire Wire, body []byte) string {
	var req map[string]any
	if json.Unmarshal(body, &req) != nil {
		return "" // not an object: the run refuses it as malformed
	}
	for _, f := range vendorFields[wire] {
		if v, ok := req[f]; ok && v != nil {
			return fmt.Sprintf("%s: the vendor would reach out on its own (use the run's tools instead)", f)
		}
	}
	if msg := vendorTools(wire, "tools", req["tools"]); msg != "" {
		return msg
	}
	for _, f := range []string{"messages", "input", "system"} {
		if at, why := remoteContent(req[f]); why != "" {
			return f + at + ": " + why
		}
	}
	return ""
}

// vendorTools finds a tool the vendor runs in tools (a Responses namespace's tools included).
func vendorTools(wire Wire, path string, tools any) string {
	list, _ := tools.([]any)
	for i, t := range list {
		tool, _ := t.(map[string]any)
		typ, _ := tool["type"].(string)
		at := fmt.Sprintf("%s[%d]", path, i)
		if !isClientTool(wire, typ) {
			return fmt.Sprintf("%s.type: %q is a tool the vendor runs itself, outside the run's computer, approvals and cap (use the run's tools instead)", at, typ)
		}
		if typ == "namespace" {
			if msg := vendorTools(wire, at+".tools", tool["tools"]); msg != "" {
				return msg
			}
		}
	}
	return ""
}

func isClientTool(wire Wire, typ string) bool {
	for _, c := range clientTools[wire] {
		if typ == c || (strings.HasSuffix(c, "_") && strings.HasPrefix(typ, c)) {
			return true
		}
	}
	return false
}

// remoteContent finds, anywhere under v, content the vendor would fetch from a URL: an
// Anthropic image or document source of type url, a Responses input_image or input_file by URL,
// a Chat Completions image_url or file by URL. Data URLs and base64 are content, not fetched. It
// returns where, relative to v (".content[2].source"), and why; the path is made only for a hit,
// on the way back up, since the walk covers the whole conversation on every call.
func remoteContent(v any) (at, why string) {
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			if at, why := remoteContent(e); why != "" {
				return "[" + strconv.Itoa(i) + "]" + at, why
			}
		}
	case map[string]any:
		typ, _ := x["type"].(string)
		field, url := "", ""
		switch typ {
		case "image", "document":
			if src, _ := x["source"].(map[string]any); src != nil && src["type"] == "url" {
				// Anthropic fetches a source of type url, whatever it says.
				return ".source", fmt.Sprintf("the vendor would fetch %s itself (give the content as base64 data instead)", clip(fmt.Sprint(src["url"])))
			}
		case "input_image":
			field, url = "image_url", str(x["image_url"])
		case "input_file":
			field, url = "file_url", str(x["file_url"])
		case "image_url":
			if iu, _ := x["image_url"].(map[string]any); iu != nil {
				field, url = "image_url.url", str(iu["url"])
			} else {
				field, url = "image_url", str(x["image_url"])
			}
		case "file":
			if f, _ := x["file"].(map[string]any); f != nil {
				field, url = "file.file_data", str(f["file_data"])
				if u := str(f["file_url"]); u != "" {
					field, url = "file.file_url", u
				}
			}
		}
		if field != "" && fetched(url) {
			return "." + field, fmt.Sprintf("the vendor would fetch %s itself (give the content as base64 data instead)", clip(url))
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if at, why := remoteContent(x[k]); why != "" {
				return "." + k + at, why
			}
		}
	}
	return "", ""
}

func str(v any) string { s, _ := v.(string); return s }

// fetched: a URL the vendor fetches (anything but content given inline as a data URL or base64).
func fetched(u string) bool {
	u = strings.ToLower(strings.TrimSpace(u))
	return strings.Contains(u, "://") || strings.HasPrefix(u, "//") || strings.HasPrefix(u, "www.")
}

func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}
