// Package docker is the "docker" sandbox provider. So far it only checks
// whether a Docker engine is reachable (DOCKER_HOST, or the default socket)
// and says why it cannot be used; making containers through the Engine API
// comes later, so it reports itself unavailable even where an engine answers.
package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/computer"
)

// Provider is the docker provider.
type Provider struct {
	// Host is the engine's address; default DOCKER_HOST, else
	// unix:///var/run/docker.sock.
	Host string
}

// New returns the docker provider.
func New() *Provider { return &Provider{} }

func (p *Provider) Name() string           { return "docker" }
func (p *Provider) Kinds() []computer.Kind { return []computer.Kind{computer.KindSandbox} }

func (p *Provider) host() string {
	if p.Host != "" {
		return p.Host
	}
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		return h
	}
	return "unix:///var/run/docker.sock"
}

// ping asks the engine's /_ping.
func (p *Provider) ping(ctx context.Context) error {
	host := p.host()
	var dial func(ctx context.Context) (net.Conn, error)
	switch {
	case strings.HasPrefix(host, "unix://"):
		path := strings.TrimPrefix(host, "unix://")
		dial = func(ctx context.Context) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}
	case strings.HasPrefix(host, "tcp://"):
		addr := strings.TrimPrefix(host, "tcp://")
		dial = func(ctx context.Context) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		}
	default:
		return fmt.Errorf("unsupported DOCKER_HOST %q", host)
	}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) }}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://docker/_ping", nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/_ping answered %s", resp.Status)
	}
	return nil
}

func (p *Provider) Available(ctx context.Context) computer.Availability {
	if err := p.ping(ctx); err != nil {
		return computer.Availability{Reason: fmt.Sprintf("no Docker engine reachable at %s: %v", p.host(), err)}
	}
	return computer.Availability{Reason: "a Docker engine answers at " + p.host() + ", but the docker sandbox provider is not implemented yet; use local"}
}

func (p *Provider) Create(ctx context.Context, spec computer.Spec) (computer.Computer, error) {
	return nil, errors.New(p.Available(ctx).Reason)
}
