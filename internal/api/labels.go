package api

import (
	"regexp"
	"sort"
)

// MaxLabels bounds the labels of one object: labels select and group, and an object with
// thousands of them only makes every listing heavier.
const MaxLabels = 64

var (
	// labelName is a label's name, or its value when not empty: at most 63 of [a-zA-Z0-9-_.],
	// starting and ending with a letter or digit.
	labelName = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$`)
	// dnsSubdomain is a key's prefix: DNS labels joined by dots, at most 253 in all.
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// ValidLabels checks metadata.labels by Kubernetes' rules: a key is an optional DNS-subdomain
// prefix and "/", then a name; a value is empty or a name. field is the labels' path
// ("metadata.labels"); an error names the offending key (metadata.labels["../x"]).
func ValidLabels(field string, labels map[string]string) error {
	if len(labels) > MaxLabels {
		return E(CodeInvalidLabel, field, "%d labels; at most %d are allowed", len(labels), MaxLabels)
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the same error for the same object
	for _, k := range keys {
		path := NewPath(field).Key(k).String()
		if msg := labelKeyProblem(k); msg != "" {
			return E(CodeInvalidLabel, path, "label key %q: %s", k, msg)
		}
		if v := labels[k]; v != "" && (len(v) > 63 || !labelName.MatchString(v)) {
			return E(CodeInvalidLabel, path, "label value %q: empty, or at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", v)
		}
	}
	return nil
}

func labelKeyProblem(k string) string {
	if k == "" {
		return "empty"
	}
	prefix, name := "", k
	for i := 0; i < len(k); i++ {
		if k[i] == '/' {
			prefix, name = k[:i], k[i+1:]
			if prefix == "" {
				return "the prefix before '/' is empty"
			}
			break
		}
	}
	if prefix != "" && (len(prefix) > 253 || !dnsSubdomain.MatchString(prefix)) {
		return "the prefix must be a DNS subdomain (lowercase letters, digits, '-' and '.', at most 253)"
	}
	if name == "" || len(name) > 63 || !labelName.MatchString(name) {
		return "the name must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit (with an optional DNS-subdomain prefix and '/')"
	}
	return ""
}
