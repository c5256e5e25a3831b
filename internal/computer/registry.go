package computer

import (
	"context"
	"fmt"
	"sort"
	"sync"
)

// Registry holds the providers a server knows, by name.
type Registry struct {
	mu        sync.Mutex
	providers map[string]Provider
}

// NewRegistry returns a registry holding providers.
func NewRegistry(providers ...Provider) *Registry {
	r := &Registry{providers: map[string]Provider{}}
	for _, p := range providers {
		r.Register(p)
	}
	return r
}

// Register adds p, replacing a provider of the same name.
func (r *Registry) Register(p Provider) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.providers[p.Name()] = p
}

// Get returns the provider named name.
func (r *Registry) Get(name string) (Provider, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.providers[name]
	return p, ok
}

// Makes reports whether any provider, available here or not, lists kind.
func (r *Registry) Makes(kind Kind) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.providers {
		if offers(p, kind) {
			return true
		}
	}
	return false
}

// KindChecker is a provider some of whose kinds need more than the provider itself (the local
// provider's desktop needs an X server besides bubblewrap).
type KindChecker interface {
	// KindAvailable says whether the provider makes computers of kind here: Available, and
	// whatever else kind needs.
	KindAvailable(ctx context.Context, kind Kind) Availability
}

// KindAvailable says whether p makes computers of kind here: p's KindAvailable when it is a
// KindChecker, its Available otherwise.
func KindAvailable(ctx context.Context, p Provider, kind Kind) Availability {
	if kc, ok := p.(KindChecker); ok {
		return kc.KindAvailable(ctx, kind)
	}
	return p.Available(ctx)
}

// ProviderStatus is one line of `server capabilities`.
type ProviderStatus struct {
	Name  string
	Kinds []Kind
	Availability
	// KindsUnavailable are the kinds among Kinds that do not work here although the provider
	// does, with why (a KindChecker's).
	KindsUnavailable map[Kind]string
}

// Status checks every provider, sorted by name.
func (r *Registry) Status(ctx context.Context) []ProviderStatus {
	r.mu.Lock()
	ps := make([]Provider, 0, len(r.providers))
	for _, p := range r.providers {
		ps = append(ps, p)
	}
	r.mu.Unlock()
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name() < ps[j].Name() })
	out := make([]ProviderStatus, len(ps))
	for i, p := range ps {
		out[i] = ProviderStatus{Name: p.Name(), Kinds: p.Kinds(), Availability: p.Available(ctx)}
		if kc, ok := p.(KindChecker); ok && out[i].Available {
			for _, k := range out[i].Kinds {
				if a := kc.KindAvailable(ctx, k); !a.Available {
					if out[i].KindsUnavailable == nil {
						out[i].KindsUnavailable = map[Kind]string{}
					}
					out[i].KindsUnavailable[k] = a.Reason
				}
			}
		}
	}
	return out
}

// Resolve returns the provider an agent's computer setting names, checking
// that it makes kind and works here. An empty name picks the first available
// provider of kind in preference order (an agent with no computer setting
// gets the best sandbox the server has).
func (r *Registry) Resolve(ctx context.Context, kind Kind, name string, preference ...string) (Provider, error) {
	if name == "" {
		var reasons []string
		for _, n := range preference {
			p, ok := r.Get(n)
			if !ok || !offers(p, kind) {
				continue
			}
			a := KindAvailable(ctx, p, kind)
			if a.Available {
				return p, nil
			}
			reasons = append(reasons, n+": "+a.Reason)
		}
		return nil, fmt.Errorf("no %s provider available here %v", kind, reasons)
	}
	p, ok := r.Get(name)
	if !ok {
		return nil, fmt.Errorf("unknown computer provider %q", name)
	}
	if !offers(p, kind) {
		return nil, fmt.Errorf("computer provider %q does not make %s computers (it makes %v)", name, kind, p.Kinds())
	}
	if a := KindAvailable(ctx, p, kind); !a.Available {
		return nil, fmt.Errorf("computer provider %q is not available here: %s", name, a.Reason)
	}
	return p, nil
}

func offers(p Provider, kind Kind) bool {
	for _, k := range p.Kinds() {
		if k == kind {
			return true
		}
	}
	return false
}
