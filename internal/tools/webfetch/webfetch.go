// Package webfetch is the web_fetch tool: one GET or HEAD of an http(s) URL from the server,
// HTML turned into markdown (links kept), text and JSON as they are, other content described.
// It reaches public addresses only: every address it dials (the page's, each redirect's, a
// proxy's) is checked in the dialer's Control function, after DNS resolution, so a name that
// resolves to a private address (DNS rebinding) or a redirect to one is refused like a literal
// one. The server's --fetch-allow list opens given addresses (a test page, an intranet).
package webfetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/catalog"
)

// Limits of one fetch.
const (
	DefaultMaxBytes = 1 << 20
	MaxMaxBytes     = 10 << 20
	MaxRedirects    = 5
	DefaultTimeout  = 30 * time.Second
)

// Allow is one --fetch-allow entry: an address (any port), an address and port, or a prefix.
type Allow struct {
	Prefix netip.Prefix
	Port   uint16 // 0: any port
}

// ParseAllow parses a --fetch-allow value: "127.0.0.1:8080", "[::1]:8080", "10.1.2.3" or
// "10.0.0.0/8".
func ParseAllow(s string) (Allow, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		a := ap.Addr().Unmap()
		return Allow{Prefix: netip.PrefixFrom(a, a.BitLen()), Port: ap.Port()}, nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		a = a.Unmap()
		return Allow{Prefix: netip.PrefixFrom(a, a.BitLen())}, nil
	}
	if p, err := netip.ParsePrefix(s); err == nil {
		return Allow{Prefix: p.Masked()}, nil
	}
	return Allow{}, fmt.Errorf("fetch-allow %q: want ADDRESS, ADDRESS:PORT or PREFIX/BITS (e.g. 127.0.0.1:8080 or 10.0.0.0/8)", s)
}

func (a Allow) permits(ap netip.AddrPort) bool {
	return a.Prefix.Contains(ap.Addr()) && (a.Port == 0 || a.Port == ap.Port())
}

// blockedPrefixes are ranges no fetch reaches unless allowed, besides what netip's predicates
// name (loopback, link-local, RFC 1918 and ULA private, unspecified, multicast).
var blockedPrefixes = []struct {
	p    netip.Prefix
	what string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "a 'this network' address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a carrier-grade NAT (shared) address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("64:ff9b::/96"), "a NAT64 address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a NAT64 address"},
	{netip.MustParsePrefix("2002::/16"), "a 6to4 address"},
}

// Blocked says why a is not reached by default ("" when it is public).
func Blocked(a netip.Addr) string {
	a = canonical(a)
	switch {
	case a == netip.MustParseAddr("169.254.169.254") || a == netip.MustParseAddr("fd00:ec2::254"):
		return "a cloud metadata address"
	case a.IsLoopback():
		return "a loopback address"
	case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast():
		return "a link-local address"
	case a.IsPrivate():
		return "a private address"
	case a.IsUnspecified():
		return "an unspecified address"
	case a.IsMulticast():
		return "a multicast address"
	}
	for _, b := range blockedPrefixes {
		if b.p.Contains(a) {
			return b.what
		}
	}
	return ""
}

// canonical is a as the address it stands for: an IPv4-mapped (::ffff:a.b.c.d), IPv4-translated
// (::ffff:0:a.b.c.d) or deprecated IPv4-compatible (::a.b.c.d) IPv6 address is its IPv4
// address, so [::127.0.0.1] and [::ffff:0:7f00:1] are loopback as 127.0.0.1 is (netip's Unmap
// knows only the first form). The zone is dropped: it does not change what the address is.
func canonical(a netip.Addr) netip.Addr {
	a = a.Unmap().WithZone("")
	if !a.Is6() {
		return a
	}
	b := a.As16()
	for _, x := range b[:8] {
		if x != 0 {
			return a
		}
	}
	v4 := netip.AddrFrom4([4]byte(b[12:16]))
	switch {
	case b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0:
		return v4 // translated
	case b[8] == 0 && b[9] == 0 && b[10] == 0 && b[11] == 0 && v4.As4()[0] != 0:
		return v4 // compatible (:: and ::1 stay themselves: their first byte is 0)
	}
	return a
}

// ownAddr reports whether a is one of this host's interface addresses: a fetch of the server's
// own public address reaches what listens on it (the API, a database) as loopback would.
func ownAddr(a netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, ia := range addrs {
		n, ok := ia.(*net.IPNet)
		if !ok {
			continue
		}
		if o, ok := netip.AddrFromSlice(n.IP); ok && canonical(o) == a {
			return true
		}
	}
	return false
}

// BlockedError is a dial refused because of the address.
type BlockedError struct {
	Addr netip.AddrPort
	Why  string
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("%s is %s, which web_fetch does not reach (the server's --fetch-allow %s would allow it)", e.Addr, e.Why, e.Addr)
}

// Fetcher makes fetches. Its zero value is usable: no addresses allowed beyond the public ones,
// the environment's HTTPS_PROXY/HTTP_PROXY/NO_PROXY, the default timeout.
type Fetcher struct {
	Allow   []Allow
	Timeout time.Duration
	// Proxy picks a request's proxy (nil: http.ProxyFromEnvironment).
	Proxy func(*http.Request) (*url.URL, error)
}

// check is the dialer's Control: it sees the address actually dialled, after DNS.
func (f *Fetcher) check(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("web_fetch: dial %s %s: not an address", network, address)
	}
	ap = netip.AddrPortFrom(canonical(ap.Addr()), ap.Port())
	if why := Refused(f.Allow, ap); why != "" {
		return &BlockedError{Addr: ap, Why: why}
	}
	return nil
}

// Refused says why an address is not dialled under the allow list ("" when it may be): the one
// rule for what the server reaches on others' behalf, web_fetch's and the webhooks' alike.
func Refused(allow []Allow, ap netip.AddrPort) string {
	ap = netip.AddrPortFrom(canonical(ap.Addr()), ap.Port())
	why := Blocked(ap.Addr())
	if why == "" && ownAddr(ap.Addr()) {
		why = "one of this server's own addresses"
	}
	if why == "" {
		return ""
	}
	for _, a := range allow {
		if a.permits(ap) {
			return ""
		}
	}
	return why
}

// checkLiteral refuses a URL whose host is a blocked address literal before anything is dialled:
// through a proxy the address dialled is the proxy's, and the proxy would reach it for us.
func (f *Fetcher) checkLiteral(u *url.URL) error {
	a, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]"))
	if err != nil {
		return nil // a name: checked where it is dialled
	}
	port := uint16(80)
	if u.Scheme == "https" {
		port = 443
	}
	if p, err := strconv.ParseUint(u.Port(), 10, 16); err == nil {
		port = uint16(p)
	}
	return f.check("tcp", netip.AddrPortFrom(canonical(a), port).String(), nil)
}

// Result is what the model reads. A refusal (and a body cut at maxBytes) has a stable Code,
// which Content names too, and Address, the URL or address it was about.
type Result struct {
	Content string
	IsError bool
	Code    api.Code
	Address string
}

// refuse is a refused fetch: the model reads the code and what was refused first.
func refuse(code api.Code, address, format string, args ...any) Result {
	return Result{Content: fmt.Sprintf("web_fetch refused %s (code %s): ", address, code) + fmt.Sprintf(format, args...), IsError: true, Code: code, Address: address}
}

// hopError stops a redirect: its code and the URL or address refused.
type hopError struct {
	code    api.Code
	address string
	msg     string
}

func (e *hopError) Error() string { return e.msg }

// CheckURL refuses what is not an absolute http(s) URL with a host and no user name or password.
func CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("url %q does not parse: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("url %q: only http:// and https:// URLs are fetched", raw)
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("url %q has no host", raw)
	}
	if u.User != nil {
		return nil, fmt.Errorf("url %q carries a user name or password; web_fetch sends no credentials", raw)
	}
	return u, nil
}

// Fetch runs one call. allowHop, when set, is asked about each redirect's URL before it is
// followed (the approvals decide on the URL, so a redirect must pass them too); its error stops
// the fetch and is told to the model. The error is for the infrastructure only (ctx ended);
// everything about the page, the address or the input is the Result.
func (f *Fetcher) Fetch(ctx context.Context, in *catalog.WebFetch, allowHop func(u string) error) (Result, error) {
	u, err := CheckURL(in.URL)
	if err != nil {
		return refuse(api.CodeFetchBadURL, in.URL, "%v; nothing was fetched", err), nil
	}
	if err := f.checkLiteral(u); err != nil {
		return refusedDial(u.String(), err, "; nothing was fetched"), nil
	}
	method, maxBytes, refused := fetchOptions(in, u)
	if refused != nil {
		return *refused, nil
	}
	client, hops := f.client(allowHop)
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return refuse(api.CodeFetchBadURL, u.String(), "%v", err), nil
	}
	req.Header.Set("User-Agent", "agentrun-web_fetch/1")
	req.Header.Set("Accept", "text/html, text/markdown, text/plain, application/json;q=0.9, */*;q=0.5")
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		via := ""
		if len(*hops) > 0 {
			via = " (after redirects to " + strings.Join(*hops, ", ") + ")"
		}
		return refusedDial(u.String(), err, via+"; nothing was read"), nil
	}
	defer resp.Body.Close()
	return page(ctx, resp, u, method, *hops, maxBytes)
}

// fetchOptions are the call's method (GET or HEAD) and body limit, or the refusal of either.
func fetchOptions(in *catalog.WebFetch, u *url.URL) (method string, maxBytes int64, refused *Result) {
	method = http.MethodGet
	if in.Method != nil {
		method = *in.Method
	}
	if method != http.MethodGet && method != http.MethodHead {
		r := refuse(api.CodeInvalid, u.String(), "method %q: use GET or HEAD", method)
		return "", 0, &r
	}
	maxBytes = int64(DefaultMaxBytes)
	if in.MaxBytes != nil {
		maxBytes = *in.MaxBytes
	}
	if maxBytes < 1 || maxBytes > MaxMaxBytes {
		r := refuse(api.CodeInvalid, u.String(), "maxBytes must be between 1 and %d, got %d", MaxMaxBytes, maxBytes)
		return "", 0, &r
	}
	return method, maxBytes, nil
}

// client is the HTTP client of one call: every address dialled is checked (f.check), and each
// redirect's URL too, by CheckURL, the literal check and allowHop, before it is followed; the
// redirects followed are appended to hops.
func (f *Fetcher) client(allowHop func(u string) error) (*http.Client, *[]string) {
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	proxy := f.Proxy
	if proxy == nil {
		proxy = http.ProxyFromEnvironment
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, Control: f.check}
	tr := &http.Transport{
		Proxy:                  proxy,
		DialContext:            dialer.DialContext,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: 256 << 10,
		DisableKeepAlives:      true,
	}
	hops := new([]string)
	client := &http.Client{Transport: tr, Timeout: timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > MaxRedirects {
				return &hopError{api.CodeFetchTooManyRedirects, req.URL.String(), fmt.Sprintf("stopped after %d redirects (the most web_fetch follows), before %s", MaxRedirects, req.URL)}
			}
			if _, err := CheckURL(req.URL.String()); err != nil {
				return &hopError{api.CodeFetchBadURL, req.URL.String(), fmt.Sprintf("redirected to %s: %v", req.URL, err)}
			}
			if err := f.checkLiteral(req.URL); err != nil {
				return err
			}
			if allowHop != nil {
				if err := allowHop(req.URL.String()); err != nil {
					return &hopError{api.CodeFetchRedirectNotAllowed, req.URL.String(), fmt.Sprintf("redirected to %s, which is not fetched: %v; call web_fetch on that URL if you need it", req.URL, err)}
				}
			}
			*hops = append(*hops, req.URL.String())
			return nil
		}}
	return client, hops
}

// page is the result of a response to u: its status and headers, then (for GET) its body read up
// to maxBytes and rendered as text.
func page(ctx context.Context, resp *http.Response, u *url.URL, method string, hops []string, maxBytes int64) (Result, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "URL: %s\nStatus: %s\n", resp.Request.URL, resp.Status)
	if len(hops) > 0 {
		fmt.Fprintf(&b, "Redirected %d times from %s\n", len(hops), u)
	}
	ctype := resp.Header.Get("Content-Type")
	if ctype != "" {
		fmt.Fprintf(&b, "Content-Type: %s\n", ctype)
	}
	isErr := resp.StatusCode >= 400
	if method == http.MethodHead {
		for _, h := range []string{"Content-Length", "Last-Modified", "ETag", "Location"} {
			if v := resp.Header.Get(h); v != "" {
				fmt.Fprintf(&b, "%s: %s\n", h, v)
			}
		}
		return Result{Content: b.String(), IsError: isErr}, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil && len(body) == 0 {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		r := refusedDial(u.String(), err, "")
		r.Content = b.String() + r.Content + " (reading the body)"
		return r, nil
	}
	cut := int64(len(body)) > maxBytes
	if cut {
		body = body[:maxBytes]
	}
	b.WriteString("\n")
	b.WriteString(stripControl(render(ctx, resp.Request.URL, ctype, body, cut)))
	if cut {
		fmt.Fprintf(&b, "\n\n[cut (code %s): only the first %d bytes of the body were read (maxBytes); the page is longer]", api.CodeFetchCut, maxBytes)
	} else if err != nil {
		fmt.Fprintf(&b, "\n\n[the body ended early after %d bytes: %s]", len(body), describeErr(err))
	}
	r := Result{Content: b.String(), IsError: isErr}
	if cut {
		r.Code, r.Address = api.CodeFetchCut, resp.Request.URL.String()
	}
	return r, nil
}

// refusedDial is the result of a fetch that failed on its way (an address refused, a redirect
// stopped, a timeout, the network): the code and the address of what failed. tail ends the text.
func refusedDial(u string, err error, tail string) Result {
	var be *BlockedError
	var he *hopError
	switch {
	case errors.As(err, &be):
		return refuse(api.CodeFetchBlocked, be.Addr.String(), "%s%s", be.Error(), tail)
	case errors.As(err, &he):
		return refuse(he.code, he.address, "%s%s", he.msg, tail)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return refuse(api.CodeFetchTimeout, u, "timed out%s", tail)
	}
	return refuse(api.CodeFetchFailed, u, "%s%s", describeErr(err), tail)
}

// render turns a body into what the model reads, by its content type (sniffed when none).
func render(ctx context.Context, u *url.URL, ctype string, body []byte, cut bool) string {
	mt, _, err := mime.ParseMediaType(ctype)
	if ctype == "" || err != nil {
		mt, _, _ = mime.ParseMediaType(http.DetectContentType(body))
	}
	textual := mt == "text/html" || mt == "application/xhtml+xml" || strings.HasPrefix(mt, "text/") || mt == "application/json" || strings.HasSuffix(mt, "+json") ||
		mt == "application/xml" || strings.HasSuffix(mt, "+xml") || mt == "application/javascript" || mt == "application/x-ndjson"
	if textual && bytes.IndexByte(body, 0) >= 0 {
		// Text holds no NUL: this is binary whatever its type says (a gzip bomb of zeros served
		// as text/plain was a mebibyte of NULs in every later model request, six bytes each
		// once JSON-escaped).
		return fmt.Sprintf("(%s content holding NUL bytes, so binary, %d bytes read, not shown)", mt, len(body))
	}
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		md, err := htmltomarkdown.ConvertString(strings.ToValidUTF8(string(body), "\uFFFD"),
			converter.WithDomain(u.Scheme+"://"+u.Host), converter.WithContext(ctx))
		if err != nil {
			return fmt.Sprintf("(the HTML could not be turned into markdown: %v; %d bytes not shown)", err, len(body))
		}
		return md
	case strings.HasPrefix(mt, "text/"), mt == "application/json", strings.HasSuffix(mt, "+json"),
		mt == "application/xml", strings.HasSuffix(mt, "+xml"), mt == "application/javascript", mt == "application/x-ndjson":
		// A cut may split the last character: drop its bytes.
		for i := 0; cut && i < utf8.UTFMax-1 && len(body) > 0 && !utf8.Valid(body); i++ {
			body = body[:len(body)-1]
		}
		if !utf8.Valid(body) {
			return fmt.Sprintf("(%s content that is not UTF-8 text, %d bytes, not shown)", mt, len(body))
		}
		return string(body)
	}
	return fmt.Sprintf("(%s content, %s bytes read, not shown: web_fetch shows HTML, text and JSON)", mt, strconv.Itoa(len(body)))
}

// stripControl is s without the control characters other than tab, newline and carriage return:
// each would reach the model's requests JSON-escaped at six bytes.
func stripControl(s string) string {
	return strings.Map(func(r rune) rune {
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

// describeErr says what went wrong without Go's wrapping noise ("Get \"...\": dial tcp: ...").
func describeErr(err error) string {
	var be *BlockedError
	if errors.As(err, &be) {
		return "refused: " + be.Error()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return "timed out"
		}
		return ue.Err.Error()
	}
	return err.Error()
}
