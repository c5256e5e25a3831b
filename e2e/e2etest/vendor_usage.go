package e2etest

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
)

// MetricValue reads one unlabelled series from the server's /metrics (0 when it is absent).
func (e *Env) MetricValue(name string) float64 {
	e.T.Helper()
	req, _ := http.NewRequest("GET", e.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+e.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		e.T.Fatalf("GET /metrics: HTTP %d %s", resp.StatusCode, b)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindSubmatch(b)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		e.T.Fatalf("metric %s = %q: %v", name, m[1], err)
	}
	return v
}
