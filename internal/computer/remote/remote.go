// Package remote lists the remote computer vendors the product names (Daytona, Modal and E2B
// sandboxes, Browserbase and Kernel browsers, Orgo desktops). A vendor's key is configured the
// way a model key is: a sealed secret named after the vendor, written by a signed-in person
// (`agentrun secrets set daytona DAYTONA_API_KEY`), never shown again. No vendor's API client is
// built into this server yet, and a server may not reach them at all, so every vendor is listed
// as not available, saying whether its key is set and what is missing; a client would implement
// computer.Provider here and nothing else would change (agents name it in computer.provider).
package remote

import (
	"context"
	"fmt"
	"strings"

	"agentrun.dev/agentrun/internal/computer"
)

// Vendor is one remote computer vendor and the keys its secret holds.
type Vendor struct {
	Name  string
	Title string
	Kinds []computer.Kind
	// Keys are the key names the vendor's secret must hold (the vendor's own variable names).
	Keys []string
}

// Vendors are the remote vendors, by name.
var Vendors = []Vendor{
	{Name: "daytona", Title: "Daytona", Kinds: []computer.Kind{computer.KindSandbox}, Keys: []string{"DAYTONA_API_KEY"}},
	{Name: "modal", Title: "Modal", Kinds: []computer.Kind{computer.KindSandbox}, Keys: []string{"MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET"}},
	{Name: "e2b", Title: "E2B", Kinds: []computer.Kind{computer.KindSandbox}, Keys: []string{"E2B_API_KEY"}},
	{Name: "browserbase", Title: "Browserbase", Kinds: []computer.Kind{computer.KindBrowser}, Keys: []string{"BROWSERBASE_API_KEY", "BROWSERBASE_PROJECT_ID"}},
	{Name: "kernel", Title: "Kernel", Kinds: []computer.Kind{computer.KindBrowser}, Keys: []string{"KERNEL_API_KEY"}},
	{Name: "orgo", Title: "Orgo", Kinds: []computer.Kind{computer.KindDesktop}, Keys: []string{"ORGO_API_KEY"}},
}

// Secrets names the keys of the sealed secret name (found false: there is none); values stay
// sealed. A func rather than the store, which sits above the computers.
type Secrets func(ctx context.Context, name string) (keys []string, found bool, err error)

// Provider is a remote vendor as a computer provider: listed, never available here.
type Provider struct {
	Vendor Vendor
	// Secrets, when set, tells whether the vendor's key is configured.
	Secrets Secrets
}

// Providers returns one Provider per vendor.
func Providers(secrets Secrets) []computer.Provider {
	out := make([]computer.Provider, len(Vendors))
	for i, v := range Vendors {
		out[i] = &Provider{Vendor: v, Secrets: secrets}
	}
	return out
}

func (p *Provider) Name() string           { return p.Vendor.Name }
func (p *Provider) Kinds() []computer.Kind { return p.Vendor.Kinds }

// Available says whether the vendor's key is set and that no client for it is built in.
func (p *Provider) Available(ctx context.Context) computer.Availability {
	v := p.Vendor
	noClient := fmt.Sprintf("no %s client is built into this server yet, so its computers cannot be made here", v.Title)
	if p.Secrets == nil {
		return computer.Availability{Reason: noClient}
	}
	set := fmt.Sprintf("agentrun secrets set %s %s", v.Name, strings.Join(v.Keys, " "))
	keys, found, err := p.Secrets(ctx, v.Name)
	if err != nil {
		return computer.Availability{Reason: fmt.Sprintf("cannot read whether the %s key is set: %v; %s", v.Title, err, noClient)}
	}
	if found {
		var missing []string
		for _, k := range v.Keys {
			if !containsKey(keys, k) {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			return computer.Availability{Reason: fmt.Sprintf("secret %s lacks %s (%s); %s", v.Name, strings.Join(missing, ", "), set, noClient)}
		}
		return computer.Availability{Reason: fmt.Sprintf("key set (secret %s, sealed); %s", v.Name, noClient)}
	}
	return computer.Availability{Reason: fmt.Sprintf("no key: a signed-in person runs `%s`; and %s", set, noClient)}
}

// Create refuses, saying why.
func (p *Provider) Create(ctx context.Context, spec computer.Spec) (computer.Computer, error) {
	return nil, fmt.Errorf("computer provider %s: %s", p.Vendor.Name, p.Available(ctx).Reason)
}

func containsKey(keys []string, k string) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}
